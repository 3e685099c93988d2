//! The charts and tables of each family's section, from [`Inputs`].

use std::collections::BTreeMap;

use super::chart::{xml, Axis, Chart, Format, Series, Style};
use super::load::{Inputs, MemRow};
use super::Section;

/// H200 SXM datasheet numbers, used when the results hold no measurement.
pub mod datasheet {
    /// HBM3e bandwidth, GB/s.
    pub const DRAM_GBPS: f64 = 4800.0;
    /// FP32 (CUDA cores), TFLOP/s: 132 SMs × 128 lanes × 2 × 1.98 GHz.
    pub const FP32_TFLOPS: f64 = 66.9;
    /// FP16/BF16 tensor cores, dense, TFLOP/s.
    pub const TENSOR_TFLOPS: f64 = 989.5;
}

/// Vendor SDPA on the H200 (PyTorch 2.11, cuDNN 9.19; /work/shared/anchors, 2026-12-01):
/// `(head dim, n, flash TFLOP/s, cuDNN TFLOP/s)`, non-causal f16, b·n = 16384.
const SDPA_ANCHOR: [(f64, f64, f64, f64); 12] = [
    (64.0, 512.0, 248.2, 364.2),
    (64.0, 1024.0, 276.6, 418.7),
    (64.0, 2048.0, 291.3, 454.0),
    (64.0, 4096.0, 300.0, 475.8),
    (64.0, 8192.0, 304.8, 489.2),
    (64.0, 16384.0, 306.1, 466.0),
    (128.0, 512.0, 297.6, 508.5),
    (128.0, 1024.0, 331.7, 589.0),
    (128.0, 2048.0, 347.8, 631.8),
    (128.0, 4096.0, 349.9, 646.8),
    (128.0, 8192.0, 341.6, 650.1),
    (128.0, 16384.0, 343.5, 599.9),
];

/// The source directory with the most rows (results of one run stay together); the others are
/// named in a note.
fn primary<T>(rows: &[T], src: impl Fn(&T) -> &str) -> (Vec<&T>, Option<String>) {
    let mut count: BTreeMap<&str, usize> = BTreeMap::new();
    for r in rows {
        *count.entry(src(r)).or_default() += 1;
    }
    let Some((best, _)) = count.iter().max_by_key(|(_, &n)| n).map(|(s, n)| (*s, *n)) else {
        return (Vec::new(), None);
    };
    let others: Vec<&str> = count.keys().filter(|&&s| s != best).copied().collect();
    let note = (!others.is_empty()).then(|| {
        format!(
            "Charted from <code>{}</code>; also found (not charted): {}.",
            xml(if best.is_empty() { "." } else { best }),
            others
                .iter()
                .map(|s| format!("<code>{}</code>", xml(s)))
                .collect::<Vec<_>>()
                .join(", ")
        )
    });
    (rows.iter().filter(|r| src(r) == best).collect(), note)
}

fn series_by<T>(
    rows: &[&T],
    key: impl Fn(&T) -> Option<String>,
    point: impl Fn(&T) -> (f64, f64),
    style: impl Fn(&str) -> Style,
) -> Vec<Series> {
    let mut order: Vec<String> = Vec::new();
    let mut map: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for r in rows {
        if let Some(k) = key(r) {
            if !map.contains_key(&k) {
                order.push(k.clone());
            }
            map.entry(k).or_default().push(point(r));
        }
    }
    order
        .into_iter()
        .map(|k| {
            let mut pts = map.remove(&k).unwrap_or_default();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            let st = style(&k);
            Series::new(k, pts, st)
        })
        .collect()
}

fn missing(what: &str, files: &str) -> String {
    format!("<p class=\"missing\">No {what} in the results directory (looked for {files}).</p>\n")
}

/// The roofline: measured points, DRAM slope and compute ceilings.
fn roofline(
    title: &str,
    points: Vec<Series>,
    dram: (f64, &str),
    ceilings: &[(f64, String)],
) -> Chart {
    let ais: Vec<f64> = points
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .filter(|x| *x > 0.0 && x.is_finite())
        .collect();
    let lo = ais.iter().copied().fold(f64::INFINITY, f64::min).min(1.0);
    let hi = ais.iter().copied().fold(0.0, f64::max).max(1000.0);
    let top = ceilings.iter().map(|c| c.0).fold(0.0, f64::max);
    let mut series = points;
    let mut slope = Vec::new();
    let mut x = lo;
    while x <= hi * 1.0001 {
        let y = dram.0 * x / 1000.0;
        if y <= top {
            slope.push((x, y));
        }
        x *= 2.0;
    }
    slope.push((top * 1000.0 / dram.0, top));
    series.push(Series::new(
        format!("DRAM {:.0} GB/s ({})", dram.0, dram.1),
        slope,
        Style::Reference,
    ));
    for (c, name) in ceilings {
        series.push(Series::new(
            name.clone(),
            vec![(*c * 1000.0 / dram.0, *c), (hi, *c)],
            Style::Reference,
        ));
    }
    Chart::new(
        title,
        Axis::log(
            "arithmetic intensity (FLOP / byte, compulsory traffic)",
            10.0,
            Format::Number,
        ),
        Axis::log("TFLOP/s", 10.0, Format::Number),
        series,
    )
}

/// Measured DRAM ceiling: the best cuMemcpyDtoD, else the datasheet.
fn dram(inp: &Inputs) -> (f64, &'static str) {
    inp.memory
        .iter()
        .filter(|r| r.variant == "cuMemcpyDtoD")
        .map(|r| r.gbps)
        .fold(None, |a: Option<f64>, x| Some(a.map_or(x, |a| a.max(x))))
        .map(|g| (g, "measured cuMemcpyDtoD"))
        .unwrap_or((datasheet::DRAM_GBPS, "datasheet"))
}

fn chart_section(id: &str, title: &str, intro: &str) -> Section {
    Section {
        id: id.into(),
        title: title.into(),
        html: format!("<p>{intro}</p>\n"),
        charts: Vec::new(),
    }
}

/// Memory families: copy GB/s vs size, strided GB/s vs stride, transpose.
pub fn memory(inp: &Inputs) -> Section {
    let mut sec = chart_section(
        "memory",
        "Memory: copy, strided, transpose",
        "GB/s counts bytes read plus bytes written. The vendor line is <code>cuMemcpyDtoD</code> on the same buffers.",
    );
    for (fam, x_of, x_axis) in [
        (
            "copy",
            (|r: &MemRow| r.bytes) as fn(&MemRow) -> f64,
            Axis::log("bytes moved (read + write)", 2.0, Format::Bytes),
        ),
        (
            "strided",
            |r: &MemRow| r.stride,
            Axis::log("stride (elements)", 2.0, Format::Number),
        ),
        (
            "transpose",
            |r: &MemRow| r.bytes,
            Axis::log("bytes moved (read + write)", 2.0, Format::Bytes),
        ),
    ] {
        let rows: Vec<MemRow> = inp
            .memory
            .iter()
            .filter(|r| r.family == fam)
            .cloned()
            .collect();
        if rows.is_empty() {
            sec.html += &missing(
                &format!("{fam} results"),
                &format!("<code>{fam}.json</code>, <code>{fam}.csv</code>"),
            );
            continue;
        }
        let (rows, note) = primary(&rows, |r| &r.src);
        // One L2 policy: flush where it was measured.
        let l2 = if rows.iter().any(|r| r.l2 == "flush") {
            "flush"
        } else {
            "rotate"
        };
        let rows: Vec<&MemRow> = rows
            .into_iter()
            .filter(|r| r.l2 == l2 || r.l2.is_empty())
            .collect();
        let series = series_by(
            &rows,
            |r| Some(format!("{} {}", r.variant, r.dtype)),
            |r| (x_of(r), r.gbps),
            |k| {
                if k.starts_with("cuMemcpyDtoD") {
                    Style::Reference
                } else {
                    Style::Line
                }
            },
        );
        let chart = Chart::new(
            &format!("{fam}: GB/s (L2 {l2})"),
            x_axis,
            Axis::linear("GB/s"),
            series,
        );
        sec.push_chart(&format!("{fam}-ladder"), chart, note);
    }
    sec
}

/// SGEMM: ladder vs cuBLAS, CPU/GPU crossover, roofline.
pub fn gemm(inp: &Inputs) -> Section {
    let mut sec = chart_section(
        "gemm",
        "SGEMM ladder",
        "TFLOP/s = 2·M·N·K / median time; the ladder at square power-of-two shapes (odd and skinny shapes are in the roofline). The vendor line is cuBLAS SGEMM (FP32, no TF32).",
    );
    if inp.gemm.is_empty() {
        sec.html += &missing("SGEMM results", "<code>gemm.json</code>");
    } else {
        let (rows, note) = primary(&inp.gemm, |r| &r.src);
        let square: Vec<_> = rows
            .iter()
            .copied()
            .filter(|r| {
                r.mnk.0 == r.mnk.1 && r.mnk.1 == r.mnk.2 && (r.mnk.0 as u64).is_power_of_two()
            })
            .collect();
        let series = series_by(
            &square,
            |r| {
                Some(if r.variant.starts_with("dispatch") {
                    "dispatch".into()
                } else {
                    r.variant.clone()
                })
            },
            |r| (r.mnk.0, r.tflops),
            |k| {
                if k == "cuBLAS" {
                    Style::Reference
                } else {
                    Style::Line
                }
            },
        );
        let chart = Chart::new(
            "SGEMM: TFLOP/s vs N (N×N×N)",
            Axis::log("N", 2.0, Format::Number),
            Axis::linear("TFLOP/s"),
            series,
        );
        sec.push_chart("sgemm-ladder", chart, note);
        let pts = series_by(
            &rows,
            |r| (!r.variant.starts_with("dispatch")).then(|| r.variant.clone()),
            |r| {
                let (m, n, k) = r.mnk;
                (2.0 * m * n * k / (4.0 * (m * k + k * n + m * n)), r.tflops)
            },
            |_| Style::Points,
        );
        let best = rows
            .iter()
            .filter(|r| r.variant == "cuBLAS")
            .map(|r| r.tflops)
            .fold(0.0, f64::max);
        let mut ceil = vec![(
            datasheet::FP32_TFLOPS,
            format!("FP32 {} TFLOP/s (datasheet)", datasheet::FP32_TFLOPS),
        )];
        if best > 0.0 {
            ceil.push((best, format!("cuBLAS best {best:.1} TFLOP/s (measured)")));
        }
        sec.push_chart(
            "sgemm-roofline",
            roofline("SGEMM roofline (every shape)", pts, dram(inp), &ceil),
            None,
        );
    }
    if !inp.crossover.is_empty() {
        let rows: Vec<_> = inp.crossover.iter().collect();
        let mut series = Vec::new();
        for (name, i) in [
            ("CPU (gemm crate)", 1),
            ("GPU kernel", 2),
            ("GPU with transfers", 3),
        ] {
            let pts = rows
                .iter()
                .map(|r| (r.0, [r.0, r.1, r.2, r.3][i]))
                .collect();
            series.push(Series::new(name, pts, Style::Line));
        }
        let chart = Chart::new(
            "SGEMM: CPU vs GPU time (N×N×N)",
            Axis::log("N", 2.0, Format::Number),
            Axis::log("ms", 10.0, Format::Number),
            series,
        );
        sec.push_chart("sgemm-crossover", chart, None);
    }
    sec
}

/// Tensor-core GEMM: ours vs cuBLAS, roofline.
pub fn hgemm(inp: &Inputs) -> Section {
    let mut sec = chart_section(
        "hgemm",
        "Tensor-core GEMM (f16 / bf16)",
        "Square shapes, per input type and B layout; dashed: cuBLAS on the same problem.",
    );
    if inp.hgemm.is_empty() {
        sec.html += &missing(
            "HGEMM results",
            "<code>hgemm.json</code>, <code>hgemm-bench.md</code>",
        );
        return sec;
    }
    let (rows, note) = primary(&inp.hgemm, |r| &r.src);
    let square: Vec<_> = rows
        .iter()
        .copied()
        .filter(|r| r.mnk.0 == r.mnk.1 && r.mnk.1 == r.mnk.2 && (r.mnk.0 as u64).is_power_of_two())
        .collect();
    let mut series = series_by(
        &square,
        |r| Some(format!("ours {} {}", r.dtype, r.layout)),
        |r| (r.mnk.0, r.tflops),
        |_| Style::Line,
    );
    series.extend(series_by(
        &square,
        |r| Some(format!("cuBLAS {} {}", r.dtype, r.layout)),
        |r| (r.mnk.0, r.cublas),
        |_| Style::Dashed,
    ));
    let chart = Chart::new(
        "HGEMM: TFLOP/s vs N (N×N×N)",
        Axis::log("N", 2.0, Format::Number),
        Axis::linear("TFLOP/s"),
        series,
    );
    sec.push_chart("hgemm-ladder", chart, note);
    let pts = series_by(
        &rows,
        |r| Some(format!("ours {}", r.dtype)),
        |r| {
            let (m, n, k) = r.mnk;
            (2.0 * m * n * k / (2.0 * (m * k + k * n + m * n)), r.tflops)
        },
        |_| Style::Points,
    );
    let best = rows.iter().map(|r| r.cublas).fold(0.0, f64::max);
    let ceil = vec![
        (
            datasheet::TENSOR_TFLOPS,
            format!(
                "tensor f16 dense {} TFLOP/s (datasheet)",
                datasheet::TENSOR_TFLOPS
            ),
        ),
        (best, format!("cuBLAS best {best:.0} TFLOP/s (measured)")),
    ];
    sec.push_chart(
        "hgemm-roofline",
        roofline("HGEMM roofline (2-byte C assumed)", pts, dram(inp), &ceil),
        None,
    );
    sec
}

/// Attention: TFLOP/s vs sequence length, vendor SDPA lines, roofline.
pub fn attention(inp: &Inputs) -> Section {
    let mut sec = chart_section(
        "attention",
        "Attention (FlashAttention-2 mma.sync, FA3-style wgmma)",
        "Non-causal f16, b·n fixed. Vendor lines: PyTorch SDPA on the H200 (anchor measured 2026-12-01, not this run).",
    );
    if inp.attention.is_empty() {
        sec.html += &missing("attention results", "<code>attention.jsonl</code>");
        return sec;
    }
    let (rows, note) = primary(&inp.attention, |r| &r.src);
    let non_causal: Vec<_> = rows.iter().copied().filter(|r| !r.causal).collect();
    let mut series = series_by(
        &non_causal,
        |r| Some(format!("{} d={}", r.variant, r.bhnd.3)),
        |r| (r.bhnd.2, r.tflops),
        |_| Style::Line,
    );
    for d in [64.0, 128.0] {
        if non_causal.iter().any(|r| r.bhnd.3 == d) {
            let a: Vec<_> = SDPA_ANCHOR.iter().filter(|a| a.0 == d).collect();
            series.push(Series::new(
                format!("cuDNN SDPA d={d} (anchor)"),
                a.iter().map(|a| (a.1, a.3)).collect(),
                Style::Reference,
            ));
            series.push(Series::new(
                format!("flash SDPA d={d} (anchor)"),
                a.iter().map(|a| (a.1, a.2)).collect(),
                Style::Dashed,
            ));
        }
    }
    let chart = Chart::new(
        "Attention: TFLOP/s vs sequence length",
        Axis::log("sequence length n", 2.0, Format::Number),
        Axis::linear("TFLOP/s"),
        series,
    );
    sec.push_chart("attention-ladder", chart, note);
    let pts = series_by(
        &rows,
        |r| Some(r.variant.clone()),
        |r| {
            let (b, h, n, d) = r.bhnd;
            (r.flops / (2.0 * 4.0 * b * h * n * d), r.tflops)
        },
        |_| Style::Points,
    );
    let ceil = vec![(
        datasheet::TENSOR_TFLOPS,
        format!(
            "tensor f16 dense {} TFLOP/s (datasheet)",
            datasheet::TENSOR_TFLOPS
        ),
    )];
    sec.push_chart(
        "attention-roofline",
        roofline(
            "Attention roofline (Q, K, V, O once)",
            pts,
            dram(inp),
            &ceil,
        ),
        None,
    );
    sec
}

/// Convolution: best kernel per layer vs cuDNN, roofline.
pub fn conv(inp: &Inputs) -> Section {
    let mut sec = chart_section(
        "conv",
        "Convolution (direct f32 ladder, implicit GEMM mma.sync / wgmma)",
        "Per configuration (result directory) and layer: the best kernel and the best cuDNN algorithm, against the layer's FLOPs.",
    );
    if inp.conv.is_empty() {
        sec.html += &missing("convolution results", "<code>conv.json</code>");
        return sec;
    }
    let mut best: BTreeMap<(String, String), (f64, f64, Option<f64>)> = BTreeMap::new();
    for r in &inp.conv {
        let e = best
            .entry((r.src.clone(), r.layer.clone()))
            .or_insert((r.flops, 0.0, None));
        e.1 = e.1.max(r.tflops);
        e.2 = match (e.2, r.vendor) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
    }
    struct Cell {
        src: String,
        gflop: f64,
        ours: f64,
        vendor: Option<f64>,
    }
    let cells: Vec<Cell> = best
        .into_iter()
        .map(|((src, _), (flops, ours, vendor))| Cell {
            src: if src.is_empty() { ".".into() } else { src },
            gflop: flops / 1e9,
            ours,
            vendor,
        })
        .collect();
    let cells: Vec<&Cell> = cells.iter().collect();
    let mut series = series_by(
        &cells,
        |c| Some(format!("ours {}", c.src)),
        |c| (c.gflop, c.ours),
        |_| Style::Line,
    );
    series.extend(series_by(
        &cells,
        |c| c.vendor.map(|_| format!("cuDNN {}", c.src)),
        |c| (c.gflop, c.vendor.unwrap_or(0.0)),
        |_| Style::Dashed,
    ));
    let chart = Chart::new(
        "Convolution: best TFLOP/s per layer",
        Axis::log("layer GFLOP", 10.0, Format::Number),
        Axis::linear("TFLOP/s"),
        series,
    );
    sec.push_chart("conv-ladder", chart, None);
    let rows: Vec<_> = inp.conv.iter().collect();
    let pts = series_by(
        &rows,
        |r| Some(r.dtype.clone()),
        |r| (r.flops / r.bytes, r.tflops),
        |_| Style::Points,
    );
    let ceil = vec![
        (
            datasheet::TENSOR_TFLOPS,
            format!(
                "tensor f16 dense {} TFLOP/s (datasheet)",
                datasheet::TENSOR_TFLOPS
            ),
        ),
        (
            datasheet::FP32_TFLOPS,
            format!("FP32 {} TFLOP/s (datasheet)", datasheet::FP32_TFLOPS),
        ),
    ];
    sec.push_chart(
        "conv-roofline",
        roofline(
            "Convolution roofline (every kernel and layer)",
            pts,
            dram(inp),
            &ceil,
        ),
        None,
    );
    sec
}

/// Orchestration: transfer curves, stream timeline, overlap table.
pub fn orchestration(inp: &Inputs) -> Section {
    let mut sec = chart_section(
        "orchestration",
        "Host orchestration: transfers and streams",
        "Host↔device bandwidth per host memory kind and direction; the stream pipeline's timeline (CUDA events per stage).",
    );
    match inp
        .orch
        .as_ref()
        .and_then(|v| v["transfer"]["rows"].as_array())
    {
        None => sec.html += &missing("transfer results", "<code>results.json</code>"),
        Some(rows) => {
            let rows: Vec<_> = rows.iter().collect();
            let series = series_by(
                &rows,
                |r| {
                    Some(format!(
                        "{} {}",
                        r["memory"].as_str().unwrap_or("?").to_lowercase(),
                        r["direction"].as_str().unwrap_or("?")
                    ))
                },
                |r| {
                    (
                        r["bytes"].as_f64().unwrap_or(0.0),
                        r["gbps"].as_f64().unwrap_or(f64::NAN),
                    )
                },
                |k| {
                    if k.ends_with("D2H") {
                        Style::Dashed
                    } else {
                        Style::Line
                    }
                },
            );
            let chart = Chart::new(
                "Host↔device bandwidth vs copy size",
                Axis::log("copy size", 2.0, Format::Bytes),
                Axis::linear("GB/s"),
                series,
            );
            sec.push_chart("transfer", chart, None);
        }
    }
    if let Some(ov) = inp.orch.as_ref().and_then(|v| v["overlap_copy"].as_array()) {
        sec.html += "<h3>Copy pipeline: streams vs time</h3>\n<table><tr><th>memory</th><th>streams</th><th>order</th><th>median ms</th><th>ideal ms</th><th>efficiency</th><th>speed-up</th></tr>\n";
        for r in ov {
            let n = |k: &str| r[k].as_f64().map_or("-".into(), |x| format!("{x:.3}"));
            sec.html += &format!(
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                xml(r["memory"].as_str().unwrap_or("")),
                r["streams"],
                xml(r["order"].as_str().unwrap_or("")),
                n("median_ms"),
                n("ideal_ms"),
                n("efficiency"),
                n("speedup")
            );
        }
        sec.html += "</table>\n";
    }
    if inp.timelines.is_empty() {
        sec.html += &missing("stream timeline", "<code>timeline.json</code>");
    }
    for (i, (name, t)) in inp.timelines.iter().enumerate().take(2) {
        let c = t.gantt();
        sec.svgs_checked(
            &format!("timeline-{i}"),
            c,
            &format!("From <code>{}</code>.", xml(name)),
        );
    }
    sec
}
