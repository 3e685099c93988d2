//! Finding and reading the result files under a directory. Each known file name is read with its
//! writer's layout (old flat files and the `rustile-results/1` `{meta, rows}` files alike); a
//! file that does not parse is noted and skipped, never fatal.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::orch::Timeline;
use crate::ptxas::KernelResources;

/// One SGEMM timing (ladder variant or cuBLAS).
#[derive(Clone, Debug)]
pub struct GemmRow {
    /// Directory the file was in, relative to the results directory.
    pub src: String,
    /// Variant (`cuBLAS`, `warptile`, `dispatch (…)`).
    pub variant: String,
    /// `(m, n, k)`.
    pub mnk: (f64, f64, f64),
    /// Achieved TFLOP/s.
    pub tflops: f64,
    /// Registers per thread from the driver, when recorded (0 = not).
    pub registers: Option<u64>,
    /// Occupancy from the driver's occupancy API, when recorded.
    pub occupancy: Option<f64>,
}

/// One memory-family timing (copy, strided, transpose).
#[derive(Clone, Debug)]
pub struct MemRow {
    /// Source directory.
    pub src: String,
    /// Family.
    pub family: String,
    /// Variant or `cuMemcpyDtoD`.
    pub variant: String,
    /// Element type.
    pub dtype: String,
    /// L2 policy (`rotate`, `flush`).
    pub l2: String,
    /// Bytes moved (read + written).
    pub bytes: f64,
    /// Achieved GB/s.
    pub gbps: f64,
    /// Elements (copy, strided) or rows × cols (transpose).
    pub n: f64,
    /// Stride (strided), 0 otherwise.
    pub stride: f64,
}

/// One tensor-core GEMM timing against cuBLAS.
#[derive(Clone, Debug)]
pub struct HgemmRow {
    /// Source directory.
    pub src: String,
    /// `f16` / `bf16`.
    pub dtype: String,
    /// B layout (`bn`, `bt`).
    pub layout: String,
    /// `(m, n, k)`.
    pub mnk: (f64, f64, f64),
    /// Kernel.
    pub kernel: String,
    /// Ours, TFLOP/s.
    pub tflops: f64,
    /// cuBLAS, TFLOP/s.
    pub cublas: f64,
}

/// One attention timing (`attention.jsonl`).
#[derive(Clone, Debug)]
pub struct AttnRow {
    /// Source directory.
    pub src: String,
    /// Batch, heads, sequence length, head dim.
    pub bhnd: (f64, f64, f64, f64),
    /// Causal mask.
    pub causal: bool,
    /// Variant (`naive`, `mma`, `wgmma`).
    pub variant: String,
    /// Achieved TFLOP/s.
    pub tflops: f64,
    /// FLOPs of the problem.
    pub flops: f64,
}

/// One convolution timing (`conv.json`).
#[derive(Clone, Debug)]
pub struct ConvRow {
    /// Source directory (the configuration, e.g. `final/b32`).
    pub src: String,
    /// Layer name.
    pub layer: String,
    /// Kernel.
    pub kernel: String,
    /// Element type.
    pub dtype: String,
    /// FLOPs.
    pub flops: f64,
    /// Compulsory bytes (input + filter + output).
    pub bytes: f64,
    /// Ours, TFLOP/s.
    pub tflops: f64,
    /// Best cuDNN baseline, TFLOP/s.
    pub vendor: Option<f64>,
}

/// Everything found under the results directories.
#[derive(Debug, Default)]
pub struct Inputs {
    /// `(path, what was read from it)` for every file used.
    pub read: Vec<(String, String)>,
    /// Files that looked like results but were skipped, with why.
    pub skipped: Vec<(String, String)>,
    /// `meta` blocks (path, block), and device lines of older files.
    pub meta: Vec<(String, Value)>,
    /// SGEMM rows.
    pub gemm: Vec<GemmRow>,
    /// `crossover.json` rows `(n, cpu ms, gpu kernel ms, gpu with transfers ms)`.
    pub crossover: Vec<(f64, f64, f64, f64)>,
    /// Memory-family rows.
    pub memory: Vec<MemRow>,
    /// HGEMM rows.
    pub hgemm: Vec<HgemmRow>,
    /// Attention rows.
    pub attention: Vec<AttnRow>,
    /// Convolution rows.
    pub conv: Vec<ConvRow>,
    /// Orchestration `results.json` (the first one found).
    pub orch: Option<Value>,
    /// Stream timelines (`timeline.json`; pageable ones after pinned).
    pub timelines: Vec<(String, Timeline)>,
    /// ptxas resources (`ptx-report.md`, the output of `rustile ptx-report`).
    pub ptx: Vec<KernelResources>,
    /// `cargo bench` summaries (`criterion-<bench>.json`).
    pub bench: Vec<super::bench::BenchRow>,
    /// The occupancy experiment's points (`occupancy.json`).
    pub occupancy: Vec<super::occ_study::OccPoint>,
}

fn files(dir: &Path, out: &mut Vec<PathBuf>, depth: usize) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() && depth < 6 {
            files(&p, out, depth + 1);
        } else if p.is_file() {
            out.push(p);
        }
    }
}

fn f(v: &Value, key: &str) -> Option<f64> {
    key.split('.')
        .try_fold(v, |v, k| v.get(k))
        .and_then(Value::as_f64)
}

fn s(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// `{"rows": [...], "meta": {...}}` or a bare array.
fn rows_of(v: &Value) -> Option<&Vec<Value>> {
    v.get("rows").unwrap_or(v).as_array()
}

/// `key=value` pairs of a shape string (`n=33554432 stride=4`), and `AxBxC` dimensions.
fn shape_kv(shape: &str, key: &str) -> Option<f64> {
    shape
        .split_whitespace()
        .find_map(|w| w.strip_prefix(key)?.strip_prefix('=')?.parse().ok())
}

fn dims(shape: &str) -> Vec<f64> {
    shape
        .split(['x', '×'])
        .map(|d| d.trim().parse::<f64>())
        .collect::<Result<_, _>>()
        .unwrap_or_default()
}

fn mnk(row: &Value, shape_key: &str) -> Option<(f64, f64, f64)> {
    if let (Some(m), Some(n), Some(k)) = (f(row, "dims.m"), f(row, "dims.n"), f(row, "dims.k")) {
        return Some((m, n, k));
    }
    match dims(&s(row, shape_key))[..] {
        [m, n, k] => Some((m, n, k)),
        _ => None,
    }
}

fn median(row: &Value, key: &str) -> Option<f64> {
    f(row, &format!("{key}.median_ms"))
}

impl Inputs {
    /// Reads every known result file under each directory (recursively). Never fails: what
    /// cannot be read is listed in [`Inputs::skipped`].
    pub fn load(dirs: &[PathBuf]) -> Inputs {
        let mut inp = Inputs::default();
        for dir in dirs {
            let mut all = Vec::new();
            files(dir, &mut all, 0);
            for path in &all {
                let rel = path.strip_prefix(dir).unwrap_or(path);
                let src = rel
                    .parent()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default();
                let shown = path.display().to_string();
                let name = rel.file_name().and_then(|n| n.to_str()).unwrap_or_default();
                // A flat CSV next to its JSON carries the same rows.
                if name.ends_with(".csv") && path.with_extension("json").exists() {
                    continue;
                }
                match inp.read_one(path, name, &src) {
                    Ok(Some(what)) => inp.read.push((shown, what)),
                    Ok(None) => {}
                    Err(why) => inp.skipped.push((shown, why)),
                }
            }
        }
        inp
    }

    fn read_one(&mut self, path: &Path, name: &str, src: &str) -> Result<Option<String>, String> {
        let known = [
            "gemm.json",
            "crossover.json",
            "copy.json",
            "strided.json",
            "transpose.json",
            "copy.csv",
            "strided.csv",
            "transpose.csv",
            "hgemm.json",
            "hgemm-bench.md",
            "attention.jsonl",
            "conv.json",
            "results.json",
            "timeline.json",
            "timeline-pageable.json",
            "ptx-report.md",
            "occupancy.json",
        ];
        if name.starts_with("criterion-") && name.ends_with(".json") {
            let text =
                crate::results::read_text_capped(path).map_err(|e| format!("unreadable: {e}"))?;
            let v: Value = serde_json::from_str(&text).map_err(|e| format!("bad JSON: {e}"))?;
            if let Some(d) = v.get("device") {
                self.meta.push((
                    path.display().to_string(),
                    serde_json::json!({"device": d, "timing": v.get("timing")}),
                ));
            }
            let rows = super::bench::parse(&v, src)?;
            let n = rows.len();
            self.bench.extend(rows);
            return Ok(Some(format!("{n} cargo bench rows")));
        }
        if !known.contains(&name) {
            return if name.ends_with(".json") || name.ends_with(".jsonl") {
                Err("not a result file the report knows (skipped)".into())
            } else {
                Ok(None)
            };
        }
        let text =
            crate::results::read_text_capped(path).map_err(|e| format!("unreadable: {e}"))?;
        if name.ends_with(".csv") {
            let n = self.memory_csv(&text, src)?;
            return Ok(Some(format!("{n} memory rows")));
        }
        if name.ends_with(".md") {
            return if name == "ptx-report.md" {
                let before = self.ptx.len();
                self.ptx_md(&text);
                Ok(Some(format!("{} ptxas rows", self.ptx.len() - before)))
            } else {
                let n = self.hgemm_md(&text, src);
                Ok(Some(format!("{n} hgemm rows")))
            };
        }
        if name == "attention.jsonl" {
            let mut n = 0;
            for line in text.lines().filter(|l| !l.trim().is_empty()) {
                let r: Value =
                    serde_json::from_str(line).map_err(|e| format!("bad JSON line: {e}"))?;
                let (Some(b), Some(h), Some(sq), Some(d), Some(t)) = (
                    f(&r, "b"),
                    f(&r, "h"),
                    f(&r, "n"),
                    f(&r, "d"),
                    f(&r, "tflops"),
                ) else {
                    continue;
                };
                if n == 0 && r.get("device").is_some() {
                    self.meta.push((
                        path.display().to_string(),
                        serde_json::json!({"device": r["device"]}),
                    ));
                }
                self.attention.push(AttnRow {
                    src: src.into(),
                    bhnd: (b, h, sq, d),
                    causal: r["causal"].as_bool().unwrap_or(false),
                    variant: s(&r, "variant"),
                    tflops: t,
                    flops: f(&r, "flops").unwrap_or(0.0),
                });
                n += 1;
            }
            return Ok(Some(format!("{n} attention rows")));
        }
        let v: Value = serde_json::from_str(&text).map_err(|e| format!("bad JSON: {e}"))?;
        if let Some(m) = v.get("meta") {
            self.meta.push((path.display().to_string(), m.clone()));
        }
        let n = match name {
            "gemm.json" => self.gemm_json(&v, src),
            "crossover.json" => {
                let rows = rows_of(&v).ok_or("no rows")?;
                for r in rows {
                    if let (Some(n), Some(c), Some(g), Some(t)) = (
                        f(r, "n"),
                        f(r, "cpu_ms"),
                        f(r, "gpu_kernel_ms"),
                        f(r, "gpu_with_transfers_ms"),
                    ) {
                        self.crossover.push((n, c, g, t));
                    }
                }
                rows.len()
            }
            "copy.json" | "strided.json" | "transpose.json" => {
                let fam = name.trim_end_matches(".json");
                let rows = rows_of(&v).ok_or("no rows")?;
                for r in rows {
                    self.memory_row(r, fam, src);
                }
                rows.len()
            }
            "hgemm.json" => self.hgemm_json(&v, src),
            "conv.json" => self.conv_json(&v, src),
            "occupancy.json" => {
                let pts = super::occ_study::parse(&v, src)?;
                let n = pts.len();
                self.occupancy.extend(pts);
                n
            }
            "results.json" => {
                if v.get("transfer").is_none() && v.get("overlap_copy").is_none() {
                    return Err("results.json without orchestration results (skipped)".into());
                }
                if let Some(d) = v.get("device") {
                    self.meta
                        .push((path.display().to_string(), serde_json::json!({"device": d})));
                }
                if self.orch.is_none() {
                    self.orch = Some(v);
                }
                1
            }
            _ => {
                let t = Timeline::from_chrome_trace(&text).ok_or("not a Chrome trace")?;
                let n = t.spans.len();
                self.timelines.push((format!("{src}/{name}"), t));
                n
            }
        };
        Ok(Some(format!("{n} rows")))
    }

    fn gemm_json(&mut self, v: &Value, src: &str) -> usize {
        let mut n = 0;
        for r in rows_of(v).into_iter().flatten() {
            let (Some(mnk), Some(t)) = (mnk(r, "shape"), f(r, "tflops")) else {
                continue;
            };
            let variant = match s(r, "variant") {
                v if v.is_empty() => s(r, "kernel"),
                v => v,
            };
            self.gemm.push(GemmRow {
                src: src.into(),
                variant,
                mnk,
                tflops: t,
                registers: r
                    .get("registers")
                    .and_then(Value::as_u64)
                    .filter(|&x| x > 0),
                occupancy: f(r, "occupancy").filter(|&x| x > 0.0),
            });
            n += 1;
        }
        n
    }

    fn memory_row(&mut self, r: &Value, fam: &str, src: &str) {
        let shape = s(r, "shape");
        let family = match s(r, "family") {
            x if x.is_empty() => fam.to_string(),
            x => x,
        };
        let (Some(bytes), Some(gbps)) = (f(r, "bytes"), f(r, "gbps")) else {
            return;
        };
        let d = dims(&shape);
        let n = f(r, "dims.n")
            .or_else(|| shape_kv(&shape, "n"))
            .or_else(|| match (f(r, "dims.rows"), f(r, "dims.cols")) {
                (Some(a), Some(b)) => Some(a * b),
                _ => None,
            })
            .or((d.len() == 2).then(|| d[0] * d[1]))
            .unwrap_or(0.0);
        let variant = match s(r, "variant") {
            v if v.is_empty() => s(r, "kernel"),
            v => v,
        };
        self.memory.push(MemRow {
            src: src.into(),
            family,
            variant,
            dtype: s(r, "dtype"),
            l2: s(r, "l2"),
            bytes,
            gbps,
            n,
            stride: f(r, "dims.stride")
                .or_else(|| shape_kv(&shape, "stride"))
                .unwrap_or(0.0),
        });
    }

    fn memory_csv(&mut self, text: &str, src: &str) -> Result<usize, String> {
        let mut lines = text.lines().filter(|l| !l.starts_with('#'));
        let header: Vec<&str> = lines.next().ok_or("empty CSV")?.split(',').collect();
        let mut n = 0;
        for line in lines.filter(|l| !l.trim().is_empty()) {
            let mut obj = serde_json::Map::new();
            for (k, val) in header.iter().zip(line.split(',')) {
                let val = val
                    .parse::<f64>()
                    .ok()
                    .and_then(serde_json::Number::from_f64)
                    .map(Value::Number)
                    .unwrap_or_else(|| Value::String(val.into()));
                // Flattened `dims.n` back into nested objects.
                match k.split_once('.') {
                    Some((a, b)) => {
                        let e = obj
                            .entry(a.to_string())
                            .or_insert_with(|| Value::Object(Default::default()));
                        if let Value::Object(m) = e {
                            m.insert(b.to_string(), val);
                        }
                    }
                    None => {
                        obj.insert(k.to_string(), val);
                    }
                }
            }
            self.memory_row(&Value::Object(obj), "", src);
            n += 1;
        }
        Ok(n)
    }

    fn hgemm_md(&mut self, text: &str, src: &str) -> usize {
        let mut n = 0;
        let mut cols: Vec<String> = Vec::new();
        for line in text.lines().map(str::trim).filter(|l| l.starts_with('|')) {
            let cells: Vec<String> = line
                .trim_matches('|')
                .split('|')
                .map(|c| c.trim().to_string())
                .collect();
            if cells.iter().any(|c| c == "kernel") {
                cols = cells;
                continue;
            }
            let get = |name: &str| {
                cols.iter()
                    .position(|c| c == name)
                    .and_then(|i| cells.get(i))
            };
            let num = |name: &str| get(name).and_then(|c| c.parse::<f64>().ok());
            let (Some(shape), Some(t), Some(cb)) =
                (get("M×N×K"), num("TFLOP/s"), num("cuBLAS TFLOP/s"))
            else {
                continue;
            };
            let [m, nn, k] = dims(shape)[..] else {
                continue;
            };
            self.hgemm.push(HgemmRow {
                src: src.into(),
                dtype: get("type").cloned().unwrap_or_default(),
                layout: get("B").cloned().unwrap_or_default(),
                mnk: (m, nn, k),
                kernel: get("kernel").cloned().unwrap_or_default(),
                tflops: t,
                cublas: cb,
            });
            n += 1;
        }
        n
    }

    fn hgemm_json(&mut self, v: &Value, src: &str) -> usize {
        let mut n = 0;
        for r in rows_of(v).into_iter().flatten() {
            let p = r.get("problem").unwrap_or(r);
            let Some((m, nn, k)) = mnk(r, "shape").or_else(|| mnk(p, "shape")) else {
                continue;
            };
            let flops = 2.0 * m * nn * k;
            let tf = |ms: Option<f64>| ms.filter(|&x| x > 0.0).map(|ms| flops / ms / 1e9);
            let (Some(t), Some(cb)) = (
                tf(median(r, "ours").or_else(|| median(r, "time"))),
                tf(median(r, "cublas")),
            ) else {
                continue;
            };
            let pick = |keys: &[&str]| {
                keys.iter()
                    .map(|k| s(p, k))
                    .chain(keys.iter().map(|k| s(r, k)))
                    .find(|x| !x.is_empty())
                    .unwrap_or_default()
            };
            self.hgemm.push(HgemmRow {
                src: src.into(),
                dtype: pick(&["dtype", "input"]),
                layout: pick(&["layout", "b"]),
                mnk: (m, nn, k),
                kernel: pick(&["kernel"]),
                tflops: t,
                cublas: cb,
            });
            n += 1;
        }
        n
    }

    fn conv_json(&mut self, v: &Value, src: &str) -> usize {
        let mut n = 0;
        for r in rows_of(v).into_iter().flatten() {
            let p = &r["problem"];
            let (Some(t), Some(ms)) = (f(r, "tflops"), median(r, "stats")) else {
                continue;
            };
            let flops = t * 1e12 * ms * 1e-3;
            let g = |k: &str| f(p, k).unwrap_or(0.0);
            let elem = if s(p, "dtype") == "f32" { 4.0 } else { 2.0 };
            let sd = |k: &str, i| p[k][i].as_f64().unwrap_or(1.0);
            let ho = (g("h") + 2.0 * sd("pad", 0) - sd("dil", 0) * (g("r") - 1.0) - 1.0)
                / sd("stride", 0)
                + 1.0;
            let wo = (g("w") + 2.0 * sd("pad", 1) - sd("dil", 1) * (g("s") - 1.0) - 1.0)
                / sd("stride", 1)
                + 1.0;
            let bytes = elem
                * (g("n") * g("c") * g("h") * g("w")
                    + g("k") * g("c") * g("r") * g("s")
                    + g("n") * g("k") * ho.floor() * wo.floor());
            let vendor = r["baselines"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|b| f(&b[1], "median_ms"))
                .filter(|&x| x > 0.0)
                .fold(None, |a: Option<f64>, x| Some(a.map_or(x, |a| a.min(x))))
                .map(|ms| flops / ms / 1e9);
            self.conv.push(ConvRow {
                src: src.into(),
                layer: s(r, "layer"),
                kernel: s(r, "kernel"),
                dtype: s(p, "dtype"),
                flops,
                bytes,
                tflops: t,
                vendor,
            });
            n += 1;
        }
        n
    }

    fn ptx_md(&mut self, text: &str) {
        for line in text.lines().map(str::trim).filter(|l| l.starts_with('|')) {
            let c: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
            let (Some(kernel), Some(arch), Some(Ok(regs)), Some(Ok(smem))) = (
                c.first(),
                c.get(1),
                c.get(2).map(|x| x.parse::<u32>()),
                c.get(3).map(|x| x.parse::<u32>()),
            ) else {
                continue;
            };
            self.ptx.push(KernelResources {
                kernel: kernel.to_string(),
                arch: arch.to_string(),
                registers: regs,
                shared_bytes: smem,
                stack_bytes: c.get(4).and_then(|x| x.parse().ok()).unwrap_or(0),
                spill_stores: 0,
                spill_loads: 0,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        assert_eq!(shape_kv("n=33554432 stride=4", "stride"), Some(4.0));
        assert_eq!(shape_kv("n=3", "stride"), None);
        assert_eq!(dims("4096x4096x512"), vec![4096.0, 4096.0, 512.0]);
        assert!(dims("n=3").is_empty());
    }

    #[test]
    fn new_and_old_layouts_and_bad_files() {
        let dir = std::env::temp_dir().join(format!("rustile-report-load-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("a")).unwrap();
        std::fs::write(
            dir.join("a/gemm.json"),
            r#"{"schema":"rustile-results/1","meta":{"seed":7},"rows":[
                {"variant":"warptile","dims":{"m":64,"n":64,"k":64},"tflops":1.5}]}"#,
        )
        .unwrap();
        std::fs::write(
            dir.join("strided.csv"),
            "# seed: 1\nfamily,variant,dtype,dims.n,dims.stride,l2,bytes,gbps\nstrided,gather,f32,1024,8,rotate,8192,12.5\n",
        )
        .unwrap();
        std::fs::write(dir.join("conv.json"), "{ not json").unwrap();
        std::fs::write(dir.join("other.json"), "{}").unwrap();
        let inp = Inputs::load(std::slice::from_ref(&dir));
        assert_eq!(inp.gemm.len(), 1);
        assert_eq!(inp.gemm[0].mnk, (64.0, 64.0, 64.0));
        assert_eq!(inp.gemm[0].src, "a");
        assert_eq!(inp.memory.len(), 1);
        assert_eq!((inp.memory[0].n, inp.memory[0].stride), (1024.0, 8.0));
        assert_eq!(inp.meta.len(), 1);
        assert_eq!(inp.skipped.len(), 2, "{:?}", inp.skipped);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
