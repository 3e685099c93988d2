//! The overlap study: the pipeline with 1, 2, 3, 4 … streams against its ideal, from pinned
//! and from pageable memory.
//!
//! The compute stage is a suite kernel (the best copy, a transpose, or a strided gather whose
//! output is `stride` times smaller than its input) run `k` times on the chunk; `k` is measured so that the compute time of a chunk ≈ its pinned H2D time (the
//! hardest case for overlap: three equal stages). The ideal time of `n` chunks with per-chunk stage times
//! `h, c, d` (means from the 1-stream run, the serial baseline, measured in the same process)
//! is `n · max(h, c, d) + (h + c + d − max)`: the longest stage's sum plus filling and draining
//! the other two. Overlap efficiency = ideal / measured.

mod calibrate;
mod study;
pub use calibrate::*;
pub use study::*;

#[cfg(test)]
mod tests;

use cudarc::driver::result;
use cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT;

use super::kernel::PlannedGemm;
use super::mem::{DeviceBuffer, HostBuffer, HostKind};
use super::pipeline::{
    ChunkWork, Pipeline, PipelineConfig, PipelinePlan, PipelineRun, StageOrder, Verification,
};
use super::timeline::Timeline;
use crate::error::{DriverContext, Result};
use crate::families::gemm::GemmProblem;
use crate::gpu::Gpu;
use crate::harness::Stats;

/// What to run.
#[derive(Clone, Debug)]
pub struct OverlapConfig {
    /// f32 elements in the batch.
    pub batch_elems: usize,
    /// f32 elements per chunk.
    pub chunk_elems: usize,
    /// Stream counts to measure with pinned memory (1 is the serial baseline and always runs).
    pub streams: Vec<usize>,
    /// Timed runs per configuration (after one warm-up run).
    pub reps: usize,
    /// Copy-kernel launches per chunk; `None`: calibrate so compute ≈ H2D.
    pub compute_reps: Option<usize>,
    /// Also run from pageable memory (1 stream and the largest count).
    pub pageable: bool,
    /// The compute stage's kernel and problem.
    pub work: ChunkWork,
    /// Stage orderings to measure at each stream count ≥ 2 (1 stream has one order).
    pub orders: Vec<StageOrder>,
}

/// Per-chunk stage times measured alone on one stream, and the chosen `k`.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct Calibration {
    /// Bytes per chunk.
    pub chunk_bytes: usize,
    /// Bytes of a chunk's output (the D2H), `chunk_bytes` unless the work shrinks it.
    pub out_bytes: usize,
    /// Pinned H2D of one chunk, median ms.
    pub h2d_ms: f64,
    /// One kernel on one chunk, median ms per launch over 16 back-to-back launches (a lone
    /// launch timed by events also counts the launch latency, several µs); with a fixed
    /// repeat count, per launch of those `compute_reps` launches.
    pub kernel_ms: f64,
    /// The compute stage: `compute_reps` launches back to back, median ms.
    pub compute_ms: f64,
    /// Pinned D2H of one chunk's output, median ms.
    pub d2h_ms: f64,
    /// H2D of one chunk and D2H of one output chunk issued together on two streams, median
    /// ms: the transfer cost per chunk once both link directions are busy (PCIe is not fully
    /// duplex at full rate, so this exceeds `max(h2d_ms, d2h_ms)` when both are large).
    pub pair_ms: f64,
    /// Kernel launches per chunk.
    pub compute_reps: usize,
}

/// One configuration's result.
#[derive(Clone, Debug, serde::Serialize)]
pub struct OverlapRow {
    /// Host memory of the batch.
    pub memory: HostKind,
    /// Streams.
    pub streams: usize,
    /// Ordering of the stages across streams.
    pub order: StageOrder,
    /// Median of the runs, ms (CUDA events).
    pub median_ms: f64,
    /// Fastest run, ms.
    pub min_ms: f64,
    /// Ideal for this memory kind, ms.
    pub ideal_ms: f64,
    /// The 1-stream run of the same memory kind, ms.
    pub serial_ms: f64,
    /// `ideal_ms / median_ms`.
    pub efficiency: f64,
    /// The ideal with the transfer stage of a chunk at least the calibrated H2D ‖ D2H pair
    /// time (`ideal_ms` of `[max(h, pair), c, d]`): a floor that knows the link's duplex limit.
    pub duplex_ideal_ms: f64,
    /// `serial_ms / median_ms`.
    pub speedup: f64,
    /// Sum over chunks of each stage's span (H2D, compute, D2H) in the median run, ms.
    pub stage_sums_ms: [f64; 3],
}

/// The study's results.
#[derive(Clone, Debug, serde::Serialize)]
pub struct OverlapReport {
    /// Batch bytes.
    pub batch_bytes: usize,
    /// Chunks.
    pub chunks: usize,
    /// Stage times alone and `k`.
    pub calibration: Calibration,
    /// Every configuration.
    pub rows: Vec<OverlapRow>,
    /// The median run of the headline row: the most efficient pinned row with ≥ 3 streams
    /// (fewest streams on a tie), or with the most streams if fewer were measured.
    pub timeline: Timeline,
    /// Index in `rows` of the headline row.
    pub headline: usize,
    /// The pageable run with the most streams, if measured.
    pub pageable_timeline: Option<Timeline>,
    /// How the output of the headline configuration (poisoned before the run) matched the CPU
    /// reference.
    pub verified: Verification,
    /// The compute stage's kernel, `family/variant`.
    pub kernel: String,
}

/// Markdown table of the rows.
pub fn markdown(r: &OverlapReport) -> String {
    let c = &r.calibration;
    let mib = |b: usize| b as f64 / (1 << 20) as f64;
    let mut s = format!(
        "Compute stage: `{}`. Batch {} MiB in {} chunks of {} MiB (output {} MiB per chunk). One \
         chunk alone: H2D {:.3} ms, D2H {:.3} ms, one kernel {:.4} ms (back to back) → compute \
         stage = kernel × {}, measured {:.3} ms; H2D ‖ D2H of one chunk together {:.3} ms.\n\n",
        r.kernel,
        r.batch_bytes >> 20,
        r.chunks,
        mib(c.chunk_bytes),
        mib(c.out_bytes),
        c.h2d_ms,
        c.d2h_ms,
        c.kernel_ms,
        c.compute_reps,
        c.compute_ms,
        c.pair_ms
    );
    s += "| memory | streams | stages across streams | median ms | min ms | ideal ms | serial ms | speedup vs serial | overlap efficiency | duplex-aware ideal ms (efficiency) | stage sums H2D / compute / D2H ms |\n\
          | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n";
    for (i, row) in r.rows.iter().enumerate() {
        let duplex = if row.duplex_ideal_ms.is_finite() {
            format!(
                "{:.2} ({:.3})",
                row.duplex_ideal_ms,
                row.duplex_ideal_ms / row.median_ms
            )
        } else {
            "—".into()
        };
        s += &format!(
            "| {} | {}{} | {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2}× | **{:.3}**{} | {duplex} | {:.1} / {:.1} / {:.1} |\n",
            row.memory.name(),
            row.streams,
            if row.streams == 1 { " (serial baseline)" } else { "" },
            if row.streams == 1 { "—" } else { row.order.name() },
            row.median_ms,
            row.min_ms,
            row.ideal_ms,
            row.serial_ms,
            row.speedup,
            row.efficiency,
            if i == r.headline { " ←" } else { "" },
            row.stage_sums_ms[0],
            row.stage_sums_ms[1],
            row.stage_sums_ms[2]
        );
    }
    let h = &r.rows[r.headline];
    s += &format!(
        "\n← headline row (best with ≥ 3 streams). Its output ({} streams, {}): {}.\n",
        h.streams,
        h.order.name(),
        r.verified.describe()
    );
    s
}
