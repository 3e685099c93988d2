//! The orchestration commands of the `rustile` CLI:
//!
//! ```text
//! rustile transfer       [--max-mib N] [--out DIR]
//! rustile overlap        [--batch-mib N] [--chunk-mib N] [--streams 1,2,3,4] [--reps N]
//!                        [--compute-reps K] [--kernel copy|transpose|gather[:S]|gemm[:K[:N]]]
//!                        [--order free,h2d,compute,all] [--no-pageable] [--out DIR]
//! rustile launch         [--kernels N] [--reps N]
//! rustile memory         [--sizes-mib 1,64,256] [--iterations N] [--reps N]
//! rustile orchestration  [--quick] [--gather S] [--gather-batch-mib N] [--gather-chunk-mib N]
//!                        [--gemm-k K] [--out DIR]  all four; tables, trace JSON and SVGs
//! ```

mod commands;
mod spec;
pub use spec::*;

#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::pipeline::{ChunkWork, StageOrder};
use super::{launch, overlap, pool, transfer};
use crate::error::{Error, Result};
use crate::gpu::Gpu;

/// Usage text.
pub const USAGE: &str = "  transfer      [--max-mib N] [--out DIR]            H2D/D2H GB/s vs size: pageable, pinned, write-combined
  overlap       [--batch-mib N] [--chunk-mib N] [--streams 1,2,3,4] [--reps N] [--compute-reps K]
                [--kernel copy|transpose|gather[:S]|gemm[:K[:N]]] [--order free,h2d,compute,all] [--no-pageable] [--out DIR]
                                                     chunked H2D → kernel → D2H over N streams vs ideal
                                                     (gemm: rows of A streamed, B resident, one SGEMM per
                                                     chunk; without N the chunk rows and N are calibrated)
  launch        [--kernels N] [--reps N]             µs per kernel: plain vs CUDA graph; cost of a sync
  memory        [--sizes-mib LIST] [--iterations N] [--reps N]   stream-ordered pool vs cuMemAlloc; stats
  orchestration [--quick] [--gather S] [--gather-batch-mib N] [--gather-chunk-mib N] [--gemm-k K] [--out DIR]
                                                     all of the above (overlap with copy, transpose, a
                                                     stride-S gather and the SGEMM with resident B);
                                                     writes results.md/json, SVGs, trace";

const SWITCHES: [&str; 2] = ["--quick", "--no-pageable"];

struct Opts {
    values: HashMap<String, String>,
}

impl Opts {
    fn parse(args: &[String], allowed: &[&str]) -> Result<Self> {
        let mut values = HashMap::new();
        let mut it = args.iter();
        while let Some(flag) = it.next() {
            if !allowed.contains(&flag.as_str()) {
                return Err(Error::Usage(format!(
                    "unknown option `{flag}` (this command takes {})",
                    allowed.join(", ")
                )));
            }
            let value = if SWITCHES.contains(&flag.as_str()) {
                String::new()
            } else {
                it.next()
                    .cloned()
                    .ok_or_else(|| Error::Usage(format!("{flag} needs a value")))?
            };
            values.insert(flag.clone(), value);
        }
        Ok(Self { values })
    }

    fn has(&self, flag: &str) -> bool {
        self.values.contains_key(flag)
    }

    fn num(&self, flag: &str, default: usize) -> Result<usize> {
        match self.values.get(flag) {
            None => Ok(default),
            Some(v) => {
                v.parse::<usize>().ok().filter(|&n| n > 0).ok_or_else(|| {
                    Error::Usage(format!("{flag} needs a positive number, got `{v}`"))
                })
            }
        }
    }

    fn list(&self, flag: &str, default: &[usize]) -> Result<Vec<usize>> {
        match self.values.get(flag) {
            None => Ok(default.to_vec()),
            Some(v) => v
                .split(',')
                .map(|s| {
                    s.trim()
                        .parse::<usize>()
                        .ok()
                        .filter(|&n| n > 0)
                        .ok_or_else(|| {
                            Error::Usage(format!("{flag}: `{s}` is not a positive number"))
                        })
                })
                .collect(),
        }
    }

    fn out(&self) -> PathBuf {
        self.values
            .get("--out")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("target/rustile-orchestration"))
    }
}

const MIB: usize = 1 << 20;

fn write(dir: &Path, name: &str, text: &str) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|source| Error::Io {
        path: dir.display().to_string(),
        source,
    })?;
    let path = dir.join(name);
    std::fs::write(&path, text).map_err(|source| Error::Io {
        path: path.display().to_string(),
        source,
    })?;
    println!("wrote {}", path.display());
    Ok(())
}

fn json<T: serde::Serialize>(v: &T) -> Result<String> {
    serde_json::to_string_pretty(v).map_err(|e| Error::Usage(format!("serialising results: {e}")))
}

fn progress(what: &str) {
    eprintln!("… {what}");
}

/// Sizes and counts for each study.
struct Plan {
    transfer_max: usize,
    overlap: overlap::OverlapConfig,
    launch_kernels: usize,
    launch_reps: usize,
    alloc_sizes: Vec<usize>,
    alloc_iterations: usize,
    alloc_reps: usize,
}

impl Plan {
    fn new(quick: bool) -> Self {
        if quick {
            Self {
                transfer_max: 64 * MIB,
                overlap: overlap::OverlapConfig {
                    batch_elems: 128 * MIB / 4,
                    chunk_elems: 8 * MIB / 4,
                    streams: vec![1, 2, 3, 4],
                    reps: 3,
                    compute_reps: None,
                    pageable: true,
                    work: ChunkWork::Copy(crate::families::copy::BEST),
                    orders: StageOrder::ALL.to_vec(),
                },
                launch_kernels: 500,
                launch_reps: 3,
                alloc_sizes: vec![MIB, 16 * MIB],
                alloc_iterations: 20,
                alloc_reps: 2,
            }
        } else {
            Self {
                transfer_max: 1 << 30,
                overlap: overlap::OverlapConfig {
                    batch_elems: (1 << 30) / 4,
                    chunk_elems: 32 * MIB / 4,
                    streams: vec![1, 2, 3, 4],
                    reps: 10,
                    compute_reps: None,
                    pageable: true,
                    work: ChunkWork::Copy(crate::families::copy::BEST),
                    orders: StageOrder::ALL.to_vec(),
                },
                launch_kernels: 2000,
                launch_reps: 10,
                alloc_sizes: vec![MIB, 64 * MIB, 256 * MIB],
                alloc_iterations: 100,
                alloc_reps: 5,
            }
        }
    }
}

fn overlap_config(o: &Opts, base: overlap::OverlapConfig) -> Result<overlap::OverlapConfig> {
    Ok(overlap::OverlapConfig {
        batch_elems: o.num("--batch-mib", base.batch_elems * 4 / MIB)? * MIB / 4,
        chunk_elems: o.num("--chunk-mib", base.chunk_elems * 4 / MIB)? * MIB / 4,
        streams: o.list("--streams", &base.streams)?,
        reps: o.num("--reps", base.reps)?,
        compute_reps: match o.values.get("--compute-reps") {
            None => None,
            Some(_) => Some(o.num("--compute-reps", 1)?),
        },
        pageable: !o.has("--no-pageable"),
        work: match o
            .values
            .get("--kernel")
            .map(|n| kernel_spec(n))
            .transpose()?
        {
            Some(KernelSpec::Work(w)) => w,
            // Resolved after the calibration, by `spec_config`.
            Some(KernelSpec::GemmCalibrated { .. }) | None => base.work,
        },
        orders: match o.values.get("--order") {
            None => base.orders,
            Some(list) => list.split(',').map(order).collect::<Result<_>>()?,
        },
    })
}

/// A stage ordering by name: `free`, `h2d`, `compute` (H2D and compute) or `all`.
fn order(name: &str) -> Result<StageOrder> {
    match name.trim() {
        "free" => Ok(StageOrder::Free),
        "h2d" => Ok(StageOrder::H2d),
        "compute" => Ok(StageOrder::H2dCompute),
        "all" => Ok(StageOrder::All),
        other => Err(Error::Usage(format!(
            "--order: free|h2d|compute|all (comma-separated), got `{other}`"
        ))),
    }
}

fn header(gpu: &Gpu) -> String {
    let i = gpu.info();
    format!(
        "{} (compute capability {}.{}, {} SMs, {:.1} GiB); rustile commit {}",
        i.name,
        i.compute_capability.0,
        i.compute_capability.1,
        i.sm_count,
        i.total_mem_bytes as f64 / (1u64 << 30) as f64,
        option_env!("RUSTILE_COMMIT")
            .map(String::from)
            .or_else(|| std::env::var("RUSTILE_COMMIT").ok())
            .unwrap_or_else(|| "unknown".into())
    )
}

/// Runs `command` (`transfer`, `overlap`, `launch`, `memory`, `orchestration`) with `args`.
/// Returns `None` if `command` is not one of them.
pub fn run(command: &str, args: &[String]) -> Option<Result<()>> {
    let r = match command {
        "transfer" => commands::transfer_cmd(args),
        "overlap" => commands::overlap_cmd(args),
        "launch" => commands::launch_cmd(args),
        "memory" => commands::memory_cmd(args),
        "orchestration" => commands::orchestration_cmd(args),
        _ => return None,
    };
    Some(r)
}
