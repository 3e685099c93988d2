//! The attention bench's rows and their forms: a markdown table, JSON lines (one object per
//! row, the keys `b h n d causal dtype` shared with `scripts/sdpa_bench.py`'s lines so
//! `scripts/attention_report.py` can join them), and the files `--out DIR` writes.

use std::path::{Path, PathBuf};

use rustile_kernels::registry::{DType, KernelInfo};

use crate::error::{Error, Result};
use crate::harness::Stats;

use super::bench::{shapes_arg, BenchShape, Skip};
use super::{Comparison, Variant};

/// One timed kernel at one shape.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BenchRow {
    /// Batch.
    pub b: usize,
    /// Heads (query and key/value).
    pub h: usize,
    /// Sequence length.
    pub n: usize,
    /// Head dimension.
    pub d: usize,
    /// Causal mask.
    pub causal: bool,
    /// `f16` or `bf16`.
    pub dtype: String,
    /// The variant (`naive`, `mma`, …).
    pub variant: String,
    /// The registry record that ran (`mma_d128`, …).
    pub kernel: String,
    /// Whether that record needs the sm_90a flavour (`wgmma`, TMA): "the sm_90a kernel" of the
    /// acceptance bars.
    pub sm90a: bool,
    /// An anchor shape ([`BenchShape::is_anchor`]).
    pub anchor: bool,
    /// [`super::Shape::flops`].
    pub flops: f64,
    /// TFLOP/s at the median.
    pub tflops: f64,
    /// Median repetition, ms.
    pub median_ms: f64,
    /// Fastest repetition, ms.
    pub min_ms: f64,
    /// Slowest repetition, ms.
    pub max_ms: f64,
    /// Timed repetitions.
    pub reps: usize,
    /// Query rows of the first launch compared with float64 (0: not checked).
    pub checked_rows: usize,
    /// Worst `|O − reference| / bound` of those rows (< 1).
    pub worst_o: f64,
    /// The device.
    pub device: String,
    /// The full statistics (percentiles, noise, NVML clocks): in `attention.json`'s `time`,
    /// not in the JSON lines (whose keys the scripts share); `None` when read back from them.
    #[serde(skip)]
    pub stats: Option<Stats>,
}

impl crate::results::ResultRow for BenchRow {
    fn id(&self) -> crate::results::RowId {
        crate::results::RowId {
            kernel: format!("attention/{}", self.kernel),
            dtype: self.dtype.clone(),
            dims: vec![
                ("b", self.b as u64),
                ("h", self.h as u64),
                ("n", self.n as u64),
                ("d", self.d as u64),
            ],
            tags: vec![format!("causal={}", self.causal)],
        }
    }
    fn time(&self) -> Option<&Stats> {
        self.stats.as_ref()
    }
}

impl BenchRow {
    /// The row of `variant` (running `record`) at `shape` in `dtype` on `device`.
    pub fn new(
        device: &str,
        shape: BenchShape,
        dtype: DType,
        variant: Variant,
        record: &KernelInfo,
        stats: Stats,
        checked: Comparison,
    ) -> Self {
        let flops = shape.shape().flops();
        Self {
            b: shape.b,
            h: shape.h,
            n: shape.n,
            d: shape.d,
            causal: shape.causal,
            dtype: dtype.name().into(),
            variant: variant.name().into(),
            kernel: record.name.into(),
            sm90a: record.needs.sm90a,
            anchor: shape.is_anchor(),
            flops,
            tflops: if stats.median_ms > 0.0 {
                flops / (stats.median_ms * 1e-3) / 1e12
            } else {
                0.0
            },
            median_ms: stats.median_ms,
            min_ms: stats.min_ms,
            max_ms: stats.max_ms,
            reps: stats.reps,
            checked_rows: checked.rows,
            worst_o: checked.worst_o,
            device: device.into(),
            stats: Some(stats),
        }
    }

    /// Its shape.
    pub fn shape(&self) -> BenchShape {
        BenchShape {
            b: self.b,
            h: self.h,
            n: self.n,
            d: self.d,
            causal: self.causal,
        }
    }
}

/// The rows as a markdown table, with a line per kernel that was left out of some shapes.
pub fn markdown(rows: &[BenchRow], skips: &[Skip]) -> String {
    let mut s = String::from(
        "| dtype | B | H | N | d | mask | kernel | TFLOP/s | median ms | min ms | checked rows |\n\
         | --- | ---: | ---: | ---: | ---: | --- | --- | ---: | ---: | ---: | ---: |\n",
    );
    for r in rows {
        s += &format!(
            "| {} | {} | {} | {} | {} | {} | {} | {:.1} | {:.4} | {:.4} | {} |\n",
            r.dtype,
            r.b,
            r.h,
            r.n,
            r.d,
            if r.causal { "causal" } else { "none" },
            r.kernel,
            r.tflops,
            r.median_ms,
            r.min_ms,
            r.checked_rows
        );
    }
    let notes = skip_notes(skips);
    if !notes.is_empty() {
        s += "\n";
        for n in notes {
            s += &format!("- {n}\n");
        }
    }
    s
}

/// One line per (kernel, reason) of `skips`: `mma left out of 3 shapes: …`.
pub fn skip_notes(skips: &[Skip]) -> Vec<String> {
    let mut groups: Vec<(Variant, &str, usize)> = Vec::new();
    for s in skips {
        match groups.iter_mut().find(|g| g.0 == s.variant && g.1 == s.why) {
            Some(g) => g.2 += 1,
            None => groups.push((s.variant, &s.why, 1)),
        }
    }
    groups
        .into_iter()
        .map(|(v, why, n)| {
            let shapes = if n == 1 { "shape" } else { "shapes" };
            format!("{v} left out of {n} {shapes}: {why}")
        })
        .collect()
}

/// The rows as JSON lines, one object per row.
pub fn jsonl(rows: &[BenchRow]) -> Result<String> {
    let mut s = String::new();
    for r in rows {
        s += &serde_json::to_string(r).map_err(|e| Error::Usage(format!("JSON: {e}")))?;
        s.push('\n');
    }
    Ok(s)
}

/// Rows read back from [`jsonl`]'s form (blank lines skipped).
pub fn parse_jsonl(text: &str) -> Result<Vec<BenchRow>> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l)
                .map_err(|e| Error::Usage(format!("line {} of the JSON lines: {e}", i + 1)))
        })
        .collect()
}

/// The command that times the same shapes with PyTorch (`scripts/sdpa_bench.py`).
pub fn sdpa_command(shapes: &[BenchShape], dtype: DType, reps: usize) -> String {
    format!(
        "scripts/sdpa_bench.py --dtype {} --reps {reps} --shapes '{}'",
        dtype.name(),
        shapes_arg(shapes)
    )
}

/// `attention.md`'s text: `header`, the table, the PyTorch command for the same shapes.
pub fn md_text(header: &str, rows: &[BenchRow], skips: &[Skip], sdpa: &str) -> String {
    format!(
        "{header}\n\n{}\nPyTorch on the same shapes:\n\n```sh\n{sdpa}\n```\n",
        markdown(rows, skips)
    )
}

/// Writes `attention.md` (`header`, the table, the PyTorch command for the same shapes) and
/// `attention.jsonl` into `dir`; returns their paths.
pub fn write(
    dir: &Path,
    header: &str,
    rows: &[BenchRow],
    skips: &[Skip],
    sdpa: &str,
) -> Result<[PathBuf; 2]> {
    let io = |path: &Path| {
        let path = path.display().to_string();
        move |source| Error::Io { path, source }
    };
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let md = dir.join("attention.md");
    std::fs::write(&md, md_text(header, rows, skips, sdpa)).map_err(io(&md))?;
    let jl = dir.join("attention.jsonl");
    std::fs::write(&jl, jsonl(rows)?).map_err(io(&jl))?;
    Ok([md, jl])
}
