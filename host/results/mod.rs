//! Self-describing result files: one writer ([`ResultFile`]) for every bench command's JSON,
//! CSV and markdown, the run's metadata ([`RunMeta`]), the statistics ([`Stats`]), NVML clock
//! sampling ([`nvml`]), `rustile compare` ([`compare`]) and the sweeps' status line
//! ([`progress`]). The schema is in `notes/results.md`.

pub mod compare;
pub mod meta;
pub mod nvml;
pub mod progress;
pub mod stats;

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::error::{Error, Result};
pub use meta::{RunMeta, TimingMeta};
pub use progress::Progress;
pub use stats::{Clocks, Stats, NOISY_PCT};

/// The `schema` of the files this version writes.
pub const SCHEMA: &str = "rustile-results/1";

/// What identifies a row across runs: kernel, dtype, numeric shape and any qualifiers.
#[derive(Clone, Debug, PartialEq)]
pub struct RowId {
    /// Kernel or baseline name.
    pub kernel: String,
    /// Element type(s).
    pub dtype: String,
    /// The shape as named numbers (`m`, `n`, `k`; `rows`, `cols`; …).
    pub dims: Vec<(&'static str, u64)>,
    /// Further qualifiers (`l2=flush`, `b=bt`), part of the key.
    pub tags: Vec<String>,
}

impl RowId {
    /// `kernel dtype m=… n=… tag…`: the row's `key`.
    pub fn key(&self) -> String {
        let mut parts = vec![self.kernel.clone(), self.dtype.clone()];
        parts.extend(self.dims.iter().map(|(k, v)| format!("{k}={v}")));
        parts.extend(self.tags.iter().cloned());
        parts.join(" ")
    }
}

/// A row a result file can hold.
pub trait ResultRow: serde::Serialize {
    /// Its identity.
    fn id(&self) -> RowId;
    /// Its primary timing (what `compare` and the warnings look at); `None` for a row of
    /// wall-clock medians without samples (crossover).
    fn time(&self) -> Option<&Stats>;
}

/// A result file: the meta and the rows, each the family's row plus `key`, `kernel`, `dtype`,
/// `dims`, `time` and `warnings`.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ResultFile {
    /// [`SCHEMA`].
    pub schema: String,
    /// The run.
    pub meta: RunMeta,
    /// The rows, as JSON objects.
    pub rows: Vec<Value>,
}

fn json_err(e: serde_json::Error) -> Error {
    Error::Usage(format!("result file JSON: {e}"))
}

/// The largest result or report input file read (result files are kilobytes to a few MB).
pub const MAX_TEXT_BYTES: u64 = 256 << 20;

/// Reads `path` as UTF-8 text of at most [`MAX_TEXT_BYTES`]: a larger file, or an endless one
/// (`/dev/zero`, a FIFO that keeps writing), is an `InvalidData` error after reading one byte
/// past the cap, instead of a read that never ends or fills memory.
pub fn read_text_capped(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut text = String::new();
    std::fs::File::open(path)?
        .take(MAX_TEXT_BYTES + 1)
        .read_to_string(&mut text)?;
    if text.len() as u64 > MAX_TEXT_BYTES {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("larger than {} MiB", MAX_TEXT_BYTES >> 20),
        ));
    }
    Ok(text)
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> Error {
    let path = path.display().to_string();
    move |source| Error::Io { path, source }
}

impl ResultFile {
    /// The file of `rows` under `meta`.
    pub fn new<R: ResultRow>(meta: RunMeta, rows: &[R]) -> Result<Self> {
        let noisy = meta.timing.noisy_pct;
        let rows = rows
            .iter()
            .map(|r| {
                let Value::Object(fields) = serde_json::to_value(r).map_err(json_err)? else {
                    return Err(Error::Usage("result row: not a JSON object".into()));
                };
                let id = r.id();
                let mut o = Map::new();
                o.insert("key".into(), id.key().into());
                o.insert("kernel".into(), id.kernel.clone().into());
                o.insert("dtype".into(), id.dtype.clone().into());
                let dims: Map<String, Value> = id
                    .dims
                    .iter()
                    .map(|&(k, v)| (k.to_string(), v.into()))
                    .collect();
                o.insert("dims".into(), dims.into());
                o.insert(
                    "time".into(),
                    serde_json::to_value(r.time()).map_err(json_err)?,
                );
                let warnings = r.time().map(|t| t.warnings(noisy)).unwrap_or_default();
                o.insert("warnings".into(), warnings.into());
                for (k, v) in fields {
                    o.entry(k).or_insert(v);
                }
                Ok(Value::Object(o))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            schema: SCHEMA.into(),
            meta,
            rows,
        })
    }

    /// Reads a file [`ResultFile::write`] wrote.
    pub fn read(path: &Path) -> Result<Self> {
        let text = read_text_capped(path).map_err(io(path))?;
        let v: Value = serde_json::from_str(&text)
            .map_err(|e| Error::Usage(format!("{}: not JSON: {e}", path.display())))?;
        if v.get("schema").and_then(Value::as_str) != Some(SCHEMA) {
            return Err(Error::Usage(format!(
                "{}: not a rustile result file (no \"schema\": \"{SCHEMA}\"; files from before \
                 results carried metadata cannot be compared)",
                path.display()
            )));
        }
        serde_json::from_value(v).map_err(|e| Error::Usage(format!("{}: {e}", path.display())))
    }

    /// `(key, warning)` for every warning of every row.
    pub fn warnings(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for r in &self.rows {
            let key = r["key"].as_str().unwrap_or("?").to_string();
            for w in r["warnings"].as_array().into_iter().flatten() {
                out.push((key.clone(), w.as_str().unwrap_or("?").to_string()));
            }
        }
        out
    }

    /// With `--max-noise PCT`: an error naming every row whose noise exceeds it.
    pub fn check_noise(&self) -> Result<()> {
        let Some(max) = self.meta.timing.max_noise_pct else {
            return Ok(());
        };
        let bad: Vec<String> = self
            .rows
            .iter()
            .filter_map(|r| {
                let n = r["time"]["noise_pct"].as_f64()?;
                (n > max).then(|| format!("{} ({n:.1}%)", r["key"].as_str().unwrap_or("?")))
            })
            .collect();
        if bad.is_empty() {
            return Ok(());
        }
        Err(Error::Usage(format!(
            "--max-noise {max}: {} row(s) noisier (results written; rerun them): {}",
            bad.len(),
            bad.join(", ")
        )))
    }

    /// The rows as CSV: `# key: value` meta lines, a header of every leaf field (dotted
    /// paths, first-seen order), one line per row.
    pub fn csv(&self) -> String {
        let flat: Vec<Vec<(String, String)>> = self
            .rows
            .iter()
            .map(|r| {
                let mut v = Vec::new();
                flatten("", r, &mut v);
                v
            })
            .collect();
        let mut columns: Vec<String> = Vec::new();
        for row in &flat {
            for (k, _) in row {
                if !columns.contains(k) {
                    columns.push(k.clone());
                }
            }
        }
        let mut s = String::new();
        for (k, v) in self.meta_lines() {
            s += &format!("# {k}: {v}\n");
        }
        s += &columns
            .iter()
            .map(|c| csv_cell(c))
            .collect::<Vec<_>>()
            .join(",");
        s.push('\n');
        for row in &flat {
            let cells: Vec<String> = columns
                .iter()
                .map(|c| {
                    row.iter()
                        .find(|(k, _)| k == c)
                        .map_or(String::new(), |(_, v)| csv_cell(v))
                })
                .collect();
            s += &cells.join(",");
            s.push('\n');
        }
        s
    }

    fn meta_lines(&self) -> Vec<(&'static str, String)> {
        let m = &self.meta;
        let t = &m.timing;
        let mut v = vec![
            ("tool", m.tool.clone()),
            ("command", m.command_line.join(" ")),
            ("time", m.timestamp_utc.clone()),
            (
                "rustile",
                format!("{} ({})", m.rustile_version, m.git_commit),
            ),
            ("seed", m.seed.map_or("none".into(), |s| s.to_string())),
            (
                "timing",
                format!(
                    "{}, warm-up {}, reps {}{}, L2 {}{}, noisy > {}%{}",
                    t.timer,
                    t.warmup,
                    t.reps,
                    t.reps_max.map_or(String::new(), |x| format!("–{x}")),
                    t.l2,
                    t.pairing
                        .as_ref()
                        .map_or(String::new(), |p| format!(", pairing {p}")),
                    t.noisy_pct,
                    t.max_noise_pct
                        .map_or(String::new(), |x| format!(", --max-noise {x}%")),
                ),
            ),
        ];
        match &m.device {
            None => v.push(("device", "none".into())),
            Some(d) => {
                let opt = |x: Option<u32>| x.map_or("?".into(), |x| x.to_string());
                v.push((
                    "device",
                    format!(
                        "{} (sm_{}{}, {} SMs), SM clock max {} MHz (now {}), memory clock max \
                         {} MHz (now {}), power limit {}",
                        d.name,
                        d.cc_major,
                        d.cc_minor,
                        d.sm_count,
                        d.sm_clock_max_mhz,
                        opt(d.sm_clock_mhz),
                        d.mem_clock_max_mhz,
                        opt(d.mem_clock_mhz),
                        d.power_limit_w.map_or("?".into(), |w| format!("{w:.0} W")),
                    ),
                ));
                v.push((
                    "driver",
                    format!(
                        "{} (CUDA {}), NVML {}",
                        d.driver_version.as_deref().unwrap_or("?"),
                        d.cuda_driver_version.as_deref().unwrap_or("?"),
                        d.nvml
                    ),
                ));
            }
        }
        v
    }

    /// The markdown: the meta as a list, `table` (the family's), then the warnings.
    pub fn markdown(&self, table: &str) -> String {
        let mut s = format!("# rustile {}\n\n", self.meta.tool);
        for (k, v) in self.meta_lines() {
            s += &format!("- {k}: {v}\n");
        }
        s += "\n";
        s += table;
        let w = self.warnings();
        if !w.is_empty() {
            s += &format!("\n## Warnings ({})\n\n", w.len());
            for (k, w) in w {
                s += &format!("- ⚠ `{k}`: {w}\n");
            }
        }
        s
    }

    /// The file of `rows` under `meta`, written ([`ResultFile::write`]), its path printed, then
    /// [`ResultFile::check_noise`].
    pub fn save<R: ResultRow>(
        meta: RunMeta,
        rows: &[R],
        dir: &Path,
        stem: &str,
        table: &str,
    ) -> Result<()> {
        let f = Self::new(meta, rows)?;
        let path = f.write(dir, stem, table)?;
        println!("results: {} (and .csv, .md)", path.display());
        f.check_noise()
    }

    /// Writes `STEM.json`, `STEM.csv` and `STEM.md` into `dir` (created); prints each warning
    /// to stderr; returns the JSON's path.
    pub fn write(&self, dir: &Path, stem: &str, table: &str) -> Result<PathBuf> {
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let json = dir.join(format!("{stem}.json"));
        let text = serde_json::to_string_pretty(self).map_err(json_err)?;
        std::fs::write(&json, text).map_err(io(&json))?;
        let csv = dir.join(format!("{stem}.csv"));
        std::fs::write(&csv, self.csv()).map_err(io(&csv))?;
        let md = dir.join(format!("{stem}.md"));
        std::fs::write(&md, self.markdown(table)).map_err(io(&md))?;
        for (k, w) in self.warnings() {
            eprintln!("warning: {k}: {w}");
        }
        Ok(json)
    }
}

fn flatten(prefix: &str, v: &Value, out: &mut Vec<(String, String)>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&key, x, out);
            }
        }
        Value::Array(a) => {
            let cells: Vec<String> = a.iter().map(scalar).collect();
            out.push((prefix.to_string(), cells.join(";")));
        }
        x => out.push((prefix.to_string(), scalar(x))),
    }
}

fn scalar(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        x => x.to_string(),
    }
}

fn csv_cell(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests;
