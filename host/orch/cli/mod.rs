//! The orchestration commands of the `rustile` CLI: `transfer`, `overlap`, `launch`, `memory`
//! and `orchestration` (all four; tables, trace JSON and SVGs). Their arguments are parsed and
//! checked by [`crate::cli::orch`].

mod commands;
mod spec;
pub use spec::*;

#[cfg(test)]
mod tests;

use std::path::Path;

use super::pipeline::{ChunkWork, StageOrder};
use super::{launch, overlap, pool, transfer};
use crate::cli::orch::{OrchCommand, OverlapArgs};
use crate::error::{Error, Result};
use crate::gpu::Gpu;

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

fn overlap_config(o: &OverlapArgs, base: overlap::OverlapConfig) -> overlap::OverlapConfig {
    overlap::OverlapConfig {
        batch_elems: o.batch_mib.map_or(base.batch_elems, |m| m * MIB / 4),
        chunk_elems: o.chunk_mib.map_or(base.chunk_elems, |m| m * MIB / 4),
        streams: o.streams.clone().unwrap_or(base.streams),
        reps: o.reps.unwrap_or(base.reps),
        compute_reps: o.compute_reps,
        pageable: !o.no_pageable,
        work: match o.kernel {
            Some(KernelSpec::Work(w)) => w,
            // Resolved after the calibration, by `spec_config`.
            Some(KernelSpec::GemmCalibrated { .. }) | None => base.work,
        },
        orders: o.order.clone().unwrap_or(base.orders),
    }
}

/// A stage ordering by name: `free`, `h2d`, `compute` (H2D and compute) or `all`.
pub fn order(name: &str) -> Result<StageOrder> {
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

/// Runs an orchestration study.
pub fn run(cmd: &OrchCommand) -> Result<()> {
    match cmd {
        OrchCommand::Transfer(a) => commands::transfer_cmd(a),
        OrchCommand::Overlap(a) => commands::overlap_cmd(a),
        OrchCommand::Launch(a) => commands::launch_cmd(a),
        OrchCommand::Memory(a) => commands::memory_cmd(a),
        OrchCommand::Orchestration(a) => commands::orchestration_cmd(a),
    }
}
