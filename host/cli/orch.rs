//! `rustile transfer | overlap | launch | memory | orchestration`: the host orchestration
//! studies' arguments (the commands are [`crate::orch::cli`]).

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::{positive, writable_dir};
use crate::orch::cli::{kernel_spec, order, KernelSpec, GATHER_STRIDE, GEMM_K};
use crate::orch::pipeline::StageOrder;

/// A positive count of MiB whose bytes fit `usize` (so `N << 20` cannot wrap later).
pub fn mib(s: &str) -> Result<usize, String> {
    let n = positive(s)?;
    n.checked_mul(1 << 20)
        .map(|_| n)
        .ok_or_else(|| format!("`{s}` MiB overflow the address space"))
}

/// The studies.
#[derive(Debug, Subcommand)]
pub enum OrchCommand {
    /// H2D/D2H GB/s vs size: pageable, pinned, write-combined (SVG plot)
    Transfer(TransferArgs),
    /// Chunked H2D → kernel → D2H over N streams vs the ideal (timeline)
    Overlap(OverlapArgs),
    /// µs per kernel: plain launches vs a CUDA graph; the cost of a sync
    Launch(LaunchArgs),
    /// Stream-ordered pool vs cuMemAlloc per iteration; memory statistics
    Memory(MemoryArgs),
    /// transfer, overlap, launch and memory: results.md/json, SVGs, trace
    Orchestration(OrchestrationArgs),
}

const OUT: &str = "target/rustile-orchestration";

/// `rustile transfer`.
#[derive(Clone, Debug, Args)]
pub struct TransferArgs {
    /// Largest transfer, MiB
    #[arg(long, value_name = "N", value_parser = mib, default_value_t = 1024)]
    pub max_mib: usize,
    /// Results directory
    #[arg(long, value_name = "DIR", value_parser = writable_dir, default_value = OUT)]
    pub out: PathBuf,
}

/// `rustile overlap`. Unset sizes and counts are the full plan's.
#[derive(Clone, Debug, Args)]
pub struct OverlapArgs {
    /// Batch, MiB [default: 1024]
    #[arg(long, value_name = "N", value_parser = mib)]
    pub batch_mib: Option<usize>,
    /// Chunk, MiB [default: 32]
    #[arg(long, value_name = "N", value_parser = mib)]
    pub chunk_mib: Option<usize>,
    /// Stream counts to compare [default: 1,2,3,4]
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = positive)]
    pub streams: Option<Vec<usize>>,
    /// Timed repetitions [default: 10]
    #[arg(long, value_name = "N", value_parser = crate::cli::reps)]
    pub reps: Option<usize>,
    /// Kernel launches per chunk [default: calibrated so compute ≈ H2D]
    #[arg(long, value_name = "K", value_parser = crate::cli::reps)]
    pub compute_reps: Option<usize>,
    /// The compute stage: copy, transpose, `gather[:S]` or `gemm[:K[:N]]` (rows of A streamed, B
    /// resident, one SGEMM per chunk; without N the chunk rows and N are calibrated)
    /// [default: copy]
    #[arg(long, value_name = "KERNEL", value_parser = |s: &str| kernel_spec(s).map_err(|e| e.to_string()))]
    pub kernel: Option<KernelSpec>,
    /// Stage orderings to compare: free, h2d, compute, all [default: all four]
    #[arg(long, value_name = "LIST", value_delimiter = ',',
          value_parser = |s: &str| order(s).map_err(|e| e.to_string()))]
    pub order: Option<Vec<StageOrder>>,
    /// Skip the pageable-memory contrast
    #[arg(long)]
    pub no_pageable: bool,
    /// Results directory
    #[arg(long, value_name = "DIR", value_parser = writable_dir, default_value = OUT)]
    pub out: PathBuf,
}

/// `rustile launch`.
#[derive(Clone, Copy, Debug, Args)]
pub struct LaunchArgs {
    /// Kernels per timed sequence
    #[arg(long, value_name = "N", value_parser = positive, default_value_t = 2000)]
    pub kernels: usize,
    /// Timed repetitions
    #[arg(long, value_name = "N", value_parser = crate::cli::reps, default_value_t = 10)]
    pub reps: usize,
}

/// `rustile memory`.
#[derive(Clone, Debug, Args)]
pub struct MemoryArgs {
    /// Allocation sizes, MiB
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = mib,
          default_value = "1,64,256")]
    pub sizes_mib: Vec<usize>,
    /// Allocations per repetition
    #[arg(long, value_name = "N", value_parser = positive, default_value_t = 100)]
    pub iterations: usize,
    /// Timed repetitions
    #[arg(long, value_name = "N", value_parser = crate::cli::reps, default_value_t = 5)]
    pub reps: usize,
}

/// `rustile orchestration`.
#[derive(Clone, Debug, Args)]
pub struct OrchestrationArgs {
    /// The small plan (64 MiB transfers, 128 MiB batches, fewer reps)
    #[arg(long)]
    pub quick: bool,
    /// The gather's stride
    #[arg(long, value_name = "S", value_parser = positive, default_value_t = GATHER_STRIDE)]
    pub gather: usize,
    /// The gather's batch, MiB [default: the plan's]
    #[arg(long, value_name = "N", value_parser = mib)]
    pub gather_batch_mib: Option<usize>,
    /// The gather's chunk, MiB [default: the plan's]
    #[arg(long, value_name = "N", value_parser = mib)]
    pub gather_chunk_mib: Option<usize>,
    /// The SGEMM's K (columns of A, rows of B)
    #[arg(long, value_name = "K", value_parser = positive, default_value_t = GEMM_K)]
    pub gemm_k: usize,
    /// Results directory
    #[arg(long, value_name = "DIR", value_parser = writable_dir, default_value = OUT)]
    pub out: PathBuf,
}
