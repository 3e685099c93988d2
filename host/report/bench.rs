//! The `cargo bench` section: every group of the `criterion-<bench>.json` summaries the benches
//! write (`RUSTILE_BENCH_OUT`), as a chart of throughput against the work of each benchmark
//! (FLOPs or bytes, log scale) with one series per implementation and the vendor baseline as a
//! reference line, and a table of the ratios.

use serde_json::Value;

use super::chart::{xml, Axis, Chart, Format, Series, Style};
use super::Section;

/// One benchmark of a `criterion-<bench>.json`.
#[derive(Clone, Debug)]
pub struct BenchRow {
    /// Directory it came from.
    pub src: String,
    /// Group (`sgemm`, `hgemm_f16`, `copy`, `conv_f16`, …).
    pub group: String,
    /// Shape text.
    pub shape: String,
    /// Implementation (`dispatch`, `warptile`, `cublas`, …).
    pub imp: String,
    /// The group's baseline implementation, if any.
    pub baseline: Option<String>,
    /// FLOPs (0 for memory benchmarks).
    pub flops: f64,
    /// Bytes moved (0 for compute benchmarks).
    pub bytes: f64,
    /// Throughput in `unit`.
    pub throughput: f64,
    /// `TFLOP/s` or `GB/s`.
    pub unit: String,
    /// Ratio to the baseline (`None` without one).
    pub vs_baseline: Option<f64>,
}

/// The rows of one summary file (`{"bench", "device", "rows": [...]}`), or why not.
pub fn parse(v: &Value, src: &str) -> Result<Vec<BenchRow>, String> {
    let rows = v.get("rows").and_then(Value::as_array).ok_or("no rows")?;
    let s = |r: &Value, k: &str| r.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let f = |r: &Value, k: &str| r.get(k).and_then(Value::as_f64);
    Ok(rows
        .iter()
        .filter_map(|r| {
            Some(BenchRow {
                src: src.into(),
                group: s(r, "group"),
                shape: s(r, "shape"),
                imp: s(r, "imp"),
                baseline: r.get("baseline").and_then(Value::as_str).map(String::from),
                flops: f(r, "flops").unwrap_or(0.0),
                bytes: f(r, "bytes").unwrap_or(0.0),
                throughput: f(r, "throughput")?,
                unit: s(r, "unit"),
                vs_baseline: f(r, "vs_baseline"),
            })
        })
        .collect())
}

/// The section.
pub fn section(rows: &[BenchRow]) -> Section {
    let mut sec = Section {
        id: "cargo-bench".into(),
        title: "cargo bench".into(),
        html: String::new(),
        charts: Vec::new(),
    };
    if rows.is_empty() {
        sec.html += "<p class=\"missing\">No <code>criterion-&lt;bench&gt;.json</code> (the summaries <code>cargo bench</code> writes into <code>$RUSTILE_BENCH_OUT</code>).</p>\n";
        return sec;
    }
    sec.html += "<p>What <code>cargo bench</code> measured (criterion, CUDA events, inputs rotated past the L2; median of the samples): throughput against each benchmark's work, one series per implementation, the vendor baseline dashed.</p>\n";
    let mut groups: Vec<&str> = rows.iter().map(|r| r.group.as_str()).collect();
    groups.dedup();
    groups.sort_unstable();
    groups.dedup();
    for g in groups {
        let rs: Vec<&BenchRow> = rows.iter().filter(|r| r.group == g).collect();
        let memory = rs.iter().all(|r| r.flops == 0.0);
        let work = |r: &BenchRow| if memory { r.bytes } else { r.flops };
        let mut imps: Vec<&str> = rs.iter().map(|r| r.imp.as_str()).collect();
        imps.sort_unstable();
        imps.dedup();
        let baseline = rs.iter().find_map(|r| r.baseline.clone());
        let series: Vec<Series> = imps
            .iter()
            .map(|&imp| {
                let mut pts: Vec<(f64, f64)> = rs
                    .iter()
                    .filter(|r| r.imp == imp && work(r) > 0.0)
                    .map(|r| (work(r), r.throughput))
                    .collect();
                pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                let style = if baseline.as_deref() == Some(imp) {
                    Style::Reference
                } else {
                    Style::Line
                };
                Series::new(imp, pts, style)
            })
            .collect();
        let unit = rs.first().map_or("", |r| r.unit.as_str());
        let x = if memory {
            Axis::log("bytes moved", 2.0, Format::Bytes)
        } else {
            Axis::log("FLOPs", 10.0, Format::Number)
        };
        let chart = Chart::new(&format!("{g}: {unit}"), x, Axis::linear(unit), series);
        // The conv bench's cuDNN timings are far below what PyTorch gets from cuDNN on the
        // same layers (bench-results/2026-12-02-h200-reliability/README.md): say so here.
        let note = g.starts_with("conv").then(|| {
            "cuDNN here is 2–3× below PyTorch→cuDNN on the same layers (the anchors): this \
             baseline is suspect, so its ratios are not results."
                .to_string()
        });
        sec.push_chart(&format!("bench-{g}"), chart, note);
        sec.html += "<table><tr><th>shape</th><th>implementation</th><th>throughput</th><th>× baseline</th></tr>\n";
        for r in &rs {
            sec.html += &format!(
                "<tr><td>{}</td><td>{}</td><td>{:.2} {}</td><td>{}</td></tr>\n",
                xml(&r.shape),
                xml(&r.imp),
                r.throughput,
                xml(&r.unit),
                r.vs_baseline.map_or("—".into(), |v| format!("{v:.3}"))
            );
        }
        sec.html += "</table>\n";
    }
    sec
}
