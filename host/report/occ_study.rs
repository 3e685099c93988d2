//! The occupancy experiment's page part (`occupancy.json`, written by `rustile occupancy`):
//! throughput against the driver's occupancy, one chart per experiment, and the table.

use serde_json::Value;

use super::chart::{xml, Axis, Chart, Series, Style};
use super::Section;

/// One point of `occupancy.json`.
#[derive(Clone, Debug, PartialEq)]
pub struct OccPoint {
    /// Directory it came from.
    pub src: String,
    /// `memory` or `compute`.
    pub experiment: String,
    /// `family/variant`.
    pub kernel: String,
    /// Threads per block.
    pub threads: u32,
    /// Register cap (`None`: none).
    pub reg_cap: Option<u32>,
    /// Registers allocated.
    pub registers: u32,
    /// Local bytes per thread.
    pub local_bytes: u32,
    /// Dynamic shared bytes (with padding).
    pub dynamic_shared: u64,
    /// Padding bytes.
    pub padding: u64,
    /// Resident blocks per SM.
    pub blocks_per_sm: u32,
    /// Resident warps per SM.
    pub warps_per_sm: u32,
    /// Occupancy fraction.
    pub occupancy: f64,
    /// GB/s or GFLOP/s.
    pub throughput: f64,
    /// The unit.
    pub unit: String,
    /// Median, ms.
    pub median_ms: f64,
    /// What the output was checked against.
    pub validated: String,
}

/// The points of one `occupancy.json` (`{"rows": [...]}`); a row without its numbers is an
/// error naming the field.
pub fn parse(v: &Value, src: &str) -> Result<Vec<OccPoint>, String> {
    let rows = v
        .get("rows")
        .and_then(Value::as_array)
        .ok_or("occupancy.json without rows")?;
    rows.iter()
        .enumerate()
        .map(|(i, r)| {
            let num = |k: &str| -> Result<f64, String> {
                k.split('.')
                    .try_fold(r, |v, k| v.get(k))
                    .and_then(Value::as_f64)
                    .filter(|x| x.is_finite())
                    .ok_or_else(|| format!("occupancy row {i}: no number `{k}`"))
            };
            let text = |k: &str| {
                r.get(k)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            };
            Ok(OccPoint {
                src: src.into(),
                experiment: text("experiment"),
                kernel: text("kernel"),
                threads: num("threads")? as u32,
                reg_cap: r.get("reg_cap").and_then(Value::as_u64).map(|c| c as u32),
                registers: num("registers")? as u32,
                local_bytes: num("local_bytes")? as u32,
                dynamic_shared: num("dynamic_shared")? as u64,
                padding: num("padding")? as u64,
                blocks_per_sm: num("blocks_per_sm")? as u32,
                warps_per_sm: num("warps_per_sm")? as u32,
                occupancy: num("occupancy")?,
                throughput: num("throughput")?,
                unit: text("unit"),
                median_ms: num("time.median_ms")?,
                validated: text("validated"),
            })
        })
        .collect()
}

/// Series of `pts` keyed by `key`, each sorted by occupancy (x in percent).
fn series(pts: &[&OccPoint], key: impl Fn(&OccPoint) -> String) -> Vec<Series> {
    let mut names: Vec<String> = Vec::new();
    for p in pts {
        let k = key(p);
        if !names.contains(&k) {
            names.push(k);
        }
    }
    names
        .into_iter()
        .map(|name| {
            let mut xy: Vec<(f64, f64)> = pts
                .iter()
                .filter(|p| key(p) == name)
                .map(|p| (100.0 * p.occupancy, p.throughput))
                .collect();
            xy.sort_by(|a, b| a.0.total_cmp(&b.0));
            Series::new(name, xy, Style::Line)
        })
        .collect()
}

/// Appends the experiment's charts and table to `sec` (a note when there are no points).
pub fn render(sec: &mut Section, pts: &[OccPoint]) {
    sec.html += "<h3>Occupancy against throughput (rustile occupancy)</h3>\n";
    if pts.is_empty() {
        sec.html += "<p class=\"missing\">No occupancy experiment: put the <code>occupancy.json</code> that <code>rustile occupancy --out DIR</code> writes in the results directory.</p>\n";
        return;
    }
    sec.html += "<p>Occupancy is the driver's (<code>cuOccupancyMaxActiveBlocksPerMultiprocessor</code>) for the function as loaded; it is varied by the block size, an unused dynamic shared-memory allocation (padding) and, for the SGEMM, <code>CU_JIT_MAX_REGISTERS</code> on the same PTX. Every point's output was validated. Method and predictions: <code>notes/occupancy.md</code>.</p>\n";
    let memory: Vec<&OccPoint> = pts.iter().filter(|p| p.experiment == "memory").collect();
    let compute: Vec<&OccPoint> = pts.iter().filter(|p| p.experiment == "compute").collect();
    if !memory.is_empty() {
        let s = series(&memory, |p| format!("{} {} threads", p.kernel, p.threads));
        let chart = Chart::new(
            "Copy: GB/s vs occupancy",
            Axis::linear("occupancy (% of resident warps)"),
            Axis::linear("GB/s"),
            s,
        );
        sec.push_chart("occupancy-memory", chart, None);
    }
    if !compute.is_empty() {
        let s = series(&compute, |p| match (p.padding > 0, p.reg_cap) {
            (false, _) => format!("{} register caps", p.kernel),
            (true, None) => format!("{} smem padding", p.kernel),
            (true, Some(c)) => format!("{} max {c} regs + padding", p.kernel),
        });
        let chart = Chart::new(
            "SGEMM: GFLOP/s vs occupancy",
            Axis::linear("occupancy (% of resident warps)"),
            Axis::linear("GFLOP/s"),
            s,
        );
        sec.push_chart("occupancy-compute", chart, None);
    }
    sec.html += "<table><tr><th>experiment</th><th>kernel</th><th>threads</th><th>max regs</th><th>regs</th><th>local B</th><th>dyn smem B</th><th>pad B</th><th>blocks/SM</th><th>warps/SM</th><th>occupancy</th><th>median ms</th><th>throughput</th><th>validated</th></tr>\n";
    for p in pts {
        sec.html += &format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.0} %</td><td>{:.4}</td><td>{:.0} {}</td><td>{}</td></tr>\n",
            xml(&p.experiment),
            xml(&p.kernel),
            p.threads,
            p.reg_cap.map_or("-".into(), |c| c.to_string()),
            p.registers,
            p.local_bytes,
            p.dynamic_shared,
            p.padding,
            p.blocks_per_sm,
            p.warps_per_sm,
            100.0 * p.occupancy,
            p.median_ms,
            p.throughput,
            xml(&p.unit),
            xml(&p.validated)
        );
    }
    sec.html += "</table>\n";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_without_its_numbers_is_named() {
        let v = serde_json::json!({"rows": [{"experiment": "memory", "threads": 256}]});
        let e = parse(&v, "d").unwrap_err();
        assert!(e.contains("registers"), "{e}");
        assert!(parse(&serde_json::json!({}), "d").is_err());
    }
}
