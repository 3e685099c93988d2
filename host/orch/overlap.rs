//! The overlap study: the pipeline with 1, 2, 3, 4 … streams against its ideal, from pinned
//! and from pageable memory.
//!
//! The compute stage is a suite kernel (the best copy, a transpose, or a strided gather whose
//! output is `stride` times smaller than its input) run `k` times on the chunk; `k` is measured so that the compute time of a chunk ≈ its pinned H2D time (the
//! hardest case for overlap: three equal stages). The ideal time of `n` chunks with per-chunk stage times
//! `h, c, d` (means from the 1-stream run, the serial baseline, measured in the same process)
//! is `n · max(h, c, d) + (h + c + d − max)`: the longest stage's sum plus filling and draining
//! the other two. Overlap efficiency = ideal / measured.

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
    /// launch timed by events also counts the launch latency, several µs).
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

fn timed_ms(
    gpu: &Gpu,
    stream: &cudarc::driver::CudaStream,
    reps: usize,
    mut f: impl FnMut() -> Result<()>,
) -> Result<f64> {
    let ctx = gpu.context();
    for _ in 0..2 {
        f()?;
    }
    let mut samples = Vec::with_capacity(reps);
    for _ in 0..reps {
        let a = ctx
            .new_event(Some(CU_EVENT_DEFAULT))
            .during(|| "creating an event".into())?;
        let b = ctx
            .new_event(Some(CU_EVENT_DEFAULT))
            .during(|| "creating an event".into())?;
        a.record(stream).during(|| "recording an event".into())?;
        f()?;
        b.record(stream).during(|| "recording an event".into())?;
        stream.synchronize().during(|| "calibration".into())?;
        samples.push(a.elapsed_ms(&b).during(|| "reading event times".into())? as f64);
    }
    Ok(Stats::from_samples(samples).median_ms)
}

/// Measures one chunk's H2D, kernel and D2H alone, and picks `k` launches per chunk so that
/// the compute stage ≈ the H2D: `k = round(H2D / kernel)`, then corrected once with the
/// measured time of `k` launches. `fixed_reps` skips the choice.
pub fn calibrate(
    gpu: &Gpu,
    work: ChunkWork,
    chunk_elems: usize,
    input: &HostBuffer<f32>,
    output: &mut HostBuffer<f32>,
    fixed_reps: Option<usize>,
) -> Result<Calibration> {
    let ctx = gpu.context();
    let n = chunk_elems.min(input.len());
    let out_n = work.out_len(n).min(output.len());
    let bytes = n * 4;
    let stream = ctx.new_stream().during(|| "creating a stream".into())?;
    let din = DeviceBuffer::new(ctx, bytes, "calibration input")?;
    let dout = DeviceBuffer::new(ctx, out_n * 4, "calibration output")?;
    let weights = work.weights(gpu)?;
    let copy = work.plan(gpu, n, n, out_n, weights.as_ref())?;
    ctx.bind_to_thread()
        .during(|| "binding the context".into())?;
    let src = &input.as_slice()[..n];
    // SAFETY (four closures): the device buffers hold n and out_n f32, the host slices outlive
    // the synchronised copies, and the paired copies touch different buffers.
    let h2d_ms = timed_ms(gpu, &stream, 10, || {
        unsafe { result::memcpy_htod_async(din.ptr(), src, stream.cu_stream()) }
            .during(|| "calibration H2D".into())
    })?;
    let launches = |k: usize| {
        timed_ms(gpu, &stream, 10, || {
            (0..k).try_for_each(|_| unsafe { copy.launch(&stream, din.ptr(), dout.ptr()) })
        })
    };
    const PROBE: usize = 16;
    let kernel_ms = launches(PROBE)? / PROBE as f64;
    let reps_for =
        |ms_per_launch: f64| ((h2d_ms / ms_per_launch.max(1e-6)).round() as usize).max(1);
    let mut compute_reps = fixed_reps.unwrap_or_else(|| reps_for(kernel_ms));
    let mut compute_ms = launches(compute_reps)?;
    if fixed_reps.is_none() {
        let better = reps_for(compute_ms / compute_reps as f64);
        if better != compute_reps {
            compute_reps = better;
            compute_ms = launches(compute_reps)?;
        }
    }
    let dst = &mut output.as_mut_slice()[..out_n];
    let d2h_ms = timed_ms(gpu, &stream, 10, || {
        unsafe { result::memcpy_dtoh_async(&mut *dst, dout.ptr(), stream.cu_stream()) }
            .during(|| "calibration D2H".into())
    })?;
    // H2D of a chunk and D2H of an output chunk started together on two streams: what the
    // transfers cost per chunk when both directions of the link are busy.
    let other = ctx.new_stream().during(|| "creating a stream".into())?;
    let fork = ctx
        .new_event(Some(CU_EVENT_DEFAULT))
        .during(|| "creating an event".into())?;
    let pair_ms = timed_ms(gpu, &stream, 10, || {
        fork.record(&stream)
            .during(|| "recording an event".into())?;
        other.wait(&fork).during(|| "forking a stream".into())?;
        unsafe { result::memcpy_htod_async(din.ptr(), src, stream.cu_stream()) }
            .during(|| "calibration H2D ‖ D2H".into())?;
        unsafe { result::memcpy_dtoh_async(&mut *dst, dout.ptr(), other.cu_stream()) }
            .during(|| "calibration H2D ‖ D2H".into())?;
        stream.join(&other).during(|| "joining a stream".into())
    })?;
    Ok(Calibration {
        chunk_bytes: bytes,
        out_bytes: out_n * 4,
        h2d_ms,
        kernel_ms,
        compute_ms,
        d2h_ms,
        pair_ms,
        compute_reps,
    })
}

/// One probe of [`calibrate_gemm_shape`]: a chunk of `rows × k` f32 against one SGEMM launch.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct GemmProbe {
    /// Rows of A in the chunk.
    pub rows: usize,
    /// Columns of B and of the output.
    pub n: usize,
    /// The variant `gemm::dispatch` picks for `rows × n × k`.
    pub kernel: &'static str,
    /// Pinned H2D of the chunk, median ms.
    pub h2d_ms: f64,
    /// One launch, median ms per launch over back-to-back launches.
    pub gemm_ms: f64,
}

impl GemmProbe {
    /// Compute / H2D.
    pub fn ratio(&self) -> f64 {
        self.gemm_ms / self.h2d_ms
    }
}

/// The chunk shape of the SGEMM workload and every probe that chose it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct GemmShape {
    /// Columns of A, rows of B.
    pub k: usize,
    /// Rows of A per chunk.
    pub rows: usize,
    /// Columns of B.
    pub n: usize,
    /// Every probe, in measuring order.
    pub probes: Vec<GemmProbe>,
}

/// Widths `n` of B to probe for a `k`-deep SGEMM: multiples of `step` from `min_n` up to `k / 3`,
/// so that the output (and the D2H) is at most a third of the input.
pub fn gemm_n_candidates(k: usize, step: usize, min_n: usize) -> Vec<usize> {
    if step == 0 {
        return Vec::new();
    }
    let top = k / 3 / step * step;
    (min_n.div_ceil(step).max(1)..=top / step)
        .map(|i| i * step)
        .collect()
}

/// The probe whose compute time is closest to its H2D (smallest `|gemm / h2d − 1|`); on a tie
/// the larger chunk, then the wider B. `None` without a finite probe.
pub fn pick_gemm_probe(probes: &[GemmProbe]) -> Option<&GemmProbe> {
    probes
        .iter()
        .filter(|p| p.ratio().is_finite() && p.ratio() > 0.0)
        .min_by(|a, b| {
            let d = |p: &GemmProbe| (p.ratio() - 1.0).abs();
            d(a).total_cmp(&d(b))
                .then(b.rows.cmp(&a.rows))
                .then(b.n.cmp(&a.n))
        })
}

/// Measures, for chunks of each of `rows` rows of a `k`-column A, the chunk's pinned H2D and
/// one SGEMM launch against a resident `k × n` B for each `n` (the dispatcher's variant,
/// [`PlannedGemm`], timed over `BACK_TO_BACK` launches), and picks the shape whose compute ≈ H2D
/// ([`pick_gemm_probe`]).
pub fn calibrate_gemm_shape(
    gpu: &Gpu,
    k: usize,
    rows: &[usize],
    ns: &[usize],
    mut progress: impl FnMut(&str),
) -> Result<GemmShape> {
    const BACK_TO_BACK: usize = 4;
    let (max_rows, max_n) = match (rows.iter().max(), ns.iter().max()) {
        (Some(&r), Some(&n)) if r > 0 && n > 0 && k > 0 => (r, n),
        _ => {
            return Err(crate::error::Error::Usage(format!(
                "SGEMM shape calibration needs rows, n and k > 0 (k = {k}, rows {rows:?}, n {ns:?})"
            )))
        }
    };
    progress(&format!(
        "SGEMM chunk shape: {} row counts × {} widths, K = {k}",
        rows.len(),
        ns.len()
    ));
    let ctx = gpu.context();
    let mut host = HostBuffer::<f32>::new(ctx, HostKind::Pinned, max_rows * k)?;
    fill_pattern(host.as_mut_slice(), 0xa11);
    let mut b = vec![0.0f32; k * max_n];
    fill_pattern(&mut b, 0xb0b);
    let stream = ctx.new_stream().during(|| "creating a stream".into())?;
    let da = DeviceBuffer::new(ctx, max_rows * k * 4, "SGEMM probe A")?;
    let db = DeviceBuffer::new(ctx, k * max_n * 4, "SGEMM probe B")?;
    let dc = DeviceBuffer::new(ctx, max_rows * max_n * 4, "SGEMM probe C")?;
    ctx.bind_to_thread()
        .during(|| "binding the context".into())?;
    // SAFETY: `db` holds k · max_n f32; synchronous.
    unsafe { result::memcpy_htod_sync(db.ptr(), &b) }.during(|| "uploading probe B".into())?;
    let mut probes = Vec::with_capacity(rows.len() * ns.len());
    for &r in rows {
        let src = &host.as_slice()[..r * k];
        // SAFETY: `da` holds max_rows · k ≥ r · k f32; the host slice outlives the synchronised
        // copies.
        let h2d_ms = timed_ms(gpu, &stream, 10, || {
            unsafe { result::memcpy_htod_async(da.ptr(), src, stream.cu_stream()) }
                .during(|| "SGEMM probe H2D".into())
        })?;
        for &n in ns {
            let p = GemmProblem::new(r, n, k);
            let g = PlannedGemm::new(gpu, p, r * k, db.ptr(), k * n, r * n)?;
            // SAFETY: A, C are allocation starts holding ≥ r·k and r·n f32; B k·n.
            let ms = timed_ms(gpu, &stream, 5, || {
                (0..BACK_TO_BACK).try_for_each(|_| unsafe { g.launch(&stream, da.ptr(), dc.ptr()) })
            })?;
            probes.push(GemmProbe {
                rows: r,
                n,
                kernel: g.kernel_name(),
                h2d_ms,
                gemm_ms: ms / BACK_TO_BACK as f64,
            });
        }
    }
    let best = *pick_gemm_probe(&probes)
        .ok_or_else(|| crate::error::Error::Usage("no SGEMM probe gave a finite time".into()))?;
    Ok(GemmShape {
        k,
        rows: best.rows,
        n: best.n,
        probes,
    })
}

/// Markdown: the chosen shape and every probe (rows × n: compute / H2D).
pub fn gemm_shape_markdown(s: &GemmShape) -> String {
    let mut ns: Vec<usize> = s.probes.iter().map(|p| p.n).collect();
    ns.sort_unstable();
    ns.dedup();
    let mut rows: Vec<usize> = s.probes.iter().map(|p| p.rows).collect();
    rows.sort_unstable();
    rows.dedup();
    let mut md = format!(
        "SGEMM chunk shape (K = {}): chosen **{} rows × N = {}** (chunk {:.1} MiB, output {:.1} MiB). \
         Each cell: one launch, ms (compute / H2D of the chunk); the variant is `gemm::dispatch`'s.\n\n\
         | rows (chunk MiB, H2D ms) |",
        s.k,
        s.rows,
        s.n,
        (s.rows * s.k * 4) as f64 / (1 << 20) as f64,
        (s.rows * s.n * 4) as f64 / (1 << 20) as f64,
    );
    for n in &ns {
        md += &format!(" N = {n} |");
    }
    md += "\n| --- |";
    md += &" ---: |".repeat(ns.len());
    md += "\n";
    for r in &rows {
        let h = s
            .probes
            .iter()
            .find(|p| p.rows == *r)
            .map(|p| p.h2d_ms)
            .unwrap_or(f64::NAN);
        md += &format!(
            "| {r} ({:.0}, {h:.3}) |",
            (r * s.k * 4) as f64 / (1 << 20) as f64
        );
        for n in &ns {
            match s.probes.iter().find(|p| p.rows == *r && p.n == *n) {
                Some(p) => {
                    let bold = if p.rows == s.rows && p.n == s.n {
                        "**"
                    } else {
                        ""
                    };
                    let tag = if p.kernel.contains("128x64") {
                        "ᵃ"
                    } else {
                        ""
                    };
                    md += &format!(" {bold}{:.3} ({:.2}){bold}{tag} |", p.gemm_ms, p.ratio());
                }
                None => md += " — |",
            }
        }
        md += "\n";
    }
    md += "\nᵃ the 128×64 tile (`tile_128x64`: fewer 128×128 tiles than SMs); otherwise the 128×128 warp tile.\n";
    md
}

/// The ideal time of `chunks` chunks from per-chunk stage means `[h, c, d]`.
pub fn ideal_ms(chunks: usize, stage_means_ms: [f64; 3]) -> f64 {
    let max = stage_means_ms.iter().copied().fold(0.0, f64::max);
    let sum: f64 = stage_means_ms.iter().sum();
    chunks as f64 * max + (sum - max)
}

struct Measured {
    stats: Stats,
    median_run: PipelineRun,
}

fn measure(
    pipe: &Pipeline,
    input: &HostBuffer<f32>,
    output: &mut HostBuffer<f32>,
    reps: usize,
) -> Result<Measured> {
    pipe.run(input, output)?; // warm-up
    let mut runs = Vec::with_capacity(reps);
    for _ in 0..reps.max(1) {
        runs.push(pipe.run(input, output)?);
    }
    let stats = Stats::from_samples(runs.iter().map(|r| r.total_ms).collect());
    runs.sort_by(|a, b| a.total_ms.total_cmp(&b.total_ms));
    let median_run = runs.swap_remove(runs.len() / 2);
    Ok(Measured { stats, median_run })
}

/// A pattern no kernel could produce by accident: floats in [1, 2) from a hash of the index.
pub fn fill_pattern(buf: &mut [f32], salt: u32) {
    for (i, v) in buf.iter_mut().enumerate() {
        let h = (i as u32 ^ salt).wrapping_mul(0x9E37_79B1) >> 9;
        *v = f32::from_bits(0x3F80_0000 | h);
    }
}

/// Runs the study. `progress` gets one line per configuration.
pub fn study(
    gpu: &Gpu,
    cfg: &OverlapConfig,
    mut progress: impl FnMut(&str),
) -> Result<OverlapReport> {
    let ctx = gpu.context();
    let (free, _) = ctx
        .mem_get_info()
        .during(|| "reading free device memory".into())?;
    let mut counts: Vec<usize> = cfg.streams.clone();
    if !counts.contains(&1) {
        counts.insert(0, 1);
    }
    counts.sort_unstable();
    counts.dedup();
    let max_streams = *counts.last().unwrap_or(&1);
    // Check every configuration before allocating gigabytes of pinned memory.
    let out_elems =
        PipelinePlan::output_len(cfg.batch_elems, cfg.chunk_elems, cfg.work.out_shape());
    for &s in &counts {
        let c = PipelineConfig {
            chunk_elems: cfg.chunk_elems,
            streams: s,
            compute_reps: 1,
            order: StageOrder::Free,
        };
        PipelinePlan::for_work(cfg.batch_elems, out_elems, &c, &cfg.work, free)?;
    }
    progress("allocating pinned batch");
    let mut input = HostBuffer::<f32>::new(ctx, HostKind::Pinned, cfg.batch_elems)?;
    let mut output = HostBuffer::<f32>::new(ctx, HostKind::Pinned, out_elems)?;
    fill_pattern(input.as_mut_slice(), 0x5eed);
    // The SGEMM stage is one launch per chunk (its size, not a repeat count, sets its time).
    let fixed_reps = match cfg.compute_reps {
        None if cfg.work.is_gemm() => Some(1),
        r => r,
    };
    let calibration = calibrate(
        gpu,
        cfg.work,
        cfg.chunk_elems,
        &input,
        &mut output,
        fixed_reps,
    )?;
    let k = calibration.compute_reps;
    let mut rows = Vec::new();
    let mut timelines = Vec::new();
    let mut chunks = 0;
    let mut serial: Option<(f64, f64, f64)> = None; // (ideal, duplex ideal, serial median)
    let mut orders = cfg.orders.clone();
    if orders.is_empty() {
        orders.push(StageOrder::Free);
    }
    let runs = counts.iter().flat_map(|&s| {
        let os: &[StageOrder] = if s == 1 { &[StageOrder::Free] } else { &orders };
        os.iter().map(move |&o| (s, o))
    });
    let config = |streams, order| PipelineConfig {
        chunk_elems: cfg.chunk_elems,
        streams,
        compute_reps: k,
        order,
    };
    for (s, order) in runs.collect::<Vec<_>>() {
        progress(&format!(
            "pipeline, pinned, {s} stream(s), {}",
            order.name()
        ));
        let pc = config(s, order);
        let plan = PipelinePlan::for_work(input.len(), output.len(), &pc, &cfg.work, free)?;
        chunks = plan.chunks;
        let pipe = Pipeline::new(gpu, plan, cfg.work)?;
        let m = measure(&pipe, &input, &mut output, cfg.reps)?;
        let sums = m.median_run.timeline.stage_sums_us().map(|us| us / 1e3);
        if s == 1 {
            let [h, c, d] = sums.map(|t| t / plan.chunks as f64);
            serial = Some((
                ideal_ms(plan.chunks, [h, c, d]),
                ideal_ms(plan.chunks, [h.max(calibration.pair_ms), c, d]),
                m.stats.median_ms,
            ));
        }
        let (ideal, duplex, serial_ms) = serial.unwrap_or((f64::NAN, f64::NAN, f64::NAN));
        rows.push(OverlapRow {
            memory: HostKind::Pinned,
            streams: s,
            order,
            median_ms: m.stats.median_ms,
            min_ms: m.stats.min_ms,
            ideal_ms: ideal,
            serial_ms,
            efficiency: ideal / m.stats.median_ms,
            duplex_ideal_ms: duplex,
            speedup: serial_ms / m.stats.median_ms,
            stage_sums_ms: sums,
        });
        timelines.push(m.median_run.timeline);
    }
    let headline = headline_row(&rows);
    let (s, order) = (rows[headline].streams, rows[headline].order);
    let mut timeline = timelines.swap_remove(headline);
    let plan = PipelinePlan::for_work(
        input.len(),
        output.len(),
        &config(s, order),
        &cfg.work,
        free,
    )?;
    timeline.title = format!(
        "{} — {} MiB batch, {} chunks of {} MiB → {} KiB, {s} streams ({}), pinned, {} ×{k}",
        gpu.info().name,
        input.bytes() >> 20,
        plan.chunks,
        plan.chunk_bytes() >> 20,
        plan.out_chunk_bytes() >> 10,
        order.name(),
        cfg.work.name()
    );
    // Correctness of the headline configuration: poison the output, run once more, compare
    // with the CPU reference.
    let pipe = Pipeline::new(gpu, plan, cfg.work)?;
    output.as_mut_slice().fill(f32::NAN);
    pipe.run(&input, &mut output)?;
    let verified = pipe.verify(input.as_slice(), output.as_slice())?;
    drop(pipe);
    drop(input);
    drop(output);
    let mut pageable_timeline = None;
    if cfg.pageable {
        let mut input = HostBuffer::<f32>::new(ctx, HostKind::Pageable, cfg.batch_elems)?;
        let mut output = HostBuffer::<f32>::new(ctx, HostKind::Pageable, out_elems)?;
        fill_pattern(input.as_mut_slice(), 0xbeef);
        let mut serial: Option<(f64, f64)> = None;
        for s in [1, max_streams] {
            if s == 1 && serial.is_some() {
                continue;
            }
            progress(&format!("pipeline, pageable, {s} stream(s)"));
            let pc = config(s, StageOrder::Free);
            let plan = PipelinePlan::for_work(input.len(), output.len(), &pc, &cfg.work, free)?;
            let pipe = Pipeline::new(gpu, plan, cfg.work)?;
            let m = measure(&pipe, &input, &mut output, cfg.reps.div_ceil(3))?;
            let sums = m.median_run.timeline.stage_sums_us().map(|us| us / 1e3);
            if s == 1 {
                let means = sums.map(|t| t / plan.chunks as f64);
                serial = Some((ideal_ms(plan.chunks, means), m.stats.median_ms));
            }
            let (ideal, serial_ms) = serial.unwrap_or((f64::NAN, f64::NAN));
            rows.push(OverlapRow {
                memory: HostKind::Pageable,
                streams: s,
                order: StageOrder::Free,
                median_ms: m.stats.median_ms,
                min_ms: m.stats.min_ms,
                ideal_ms: ideal,
                serial_ms,
                efficiency: ideal / m.stats.median_ms,
                duplex_ideal_ms: f64::NAN,
                speedup: serial_ms / m.stats.median_ms,
                stage_sums_ms: sums,
            });
            if s == max_streams && s > 1 {
                let mut t = m.median_run.timeline;
                t.title = format!(
                    "{} — same pipeline from PAGEABLE memory, {s} streams: no overlap",
                    gpu.info().name
                );
                pageable_timeline = Some(t);
            }
        }
    }
    Ok(OverlapReport {
        batch_bytes: cfg.batch_elems * 4,
        chunks,
        calibration,
        rows,
        timeline,
        headline,
        pageable_timeline,
        verified,
        kernel: cfg.work.name(),
    })
}

/// The headline row: the most efficient pinned row with ≥ 3 streams (fewest streams, then
/// first, on a tie); the pinned row with the most streams if none has 3; 0 if none is pinned.
pub fn headline_row(rows: &[OverlapRow]) -> usize {
    let pinned = || {
        rows.iter()
            .enumerate()
            .filter(|(_, r)| r.memory == HostKind::Pinned)
    };
    let best = pinned().filter(|(_, r)| r.streams >= 3).fold(
        None::<(usize, &OverlapRow)>,
        |best, (i, r)| match best {
            Some((_, b)) if b.efficiency >= r.efficiency => best,
            _ => Some((i, r)),
        },
    );
    best.map(|(i, _)| i)
        .or_else(|| pinned().max_by_key(|(_, r)| r.streams).map(|(i, _)| i))
        .unwrap_or(0)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ideal_is_longest_stage_plus_fill_and_drain() {
        // Three equal stages of 1 ms, 10 chunks: 10 + 2.
        assert_eq!(ideal_ms(10, [1.0, 1.0, 1.0]), 12.0);
        // One chunk: no overlap possible, the ideal is the serial time.
        assert_eq!(ideal_ms(1, [1.0, 2.0, 3.0]), 6.0);
        // Compute-bound: 4 × 2 + 1 + 0.5.
        assert_eq!(ideal_ms(4, [1.0, 2.0, 0.5]), 9.5);
    }

    fn row(streams: usize, order: StageOrder, efficiency: f64) -> OverlapRow {
        OverlapRow {
            memory: HostKind::Pinned,
            streams,
            order,
            median_ms: 1.0,
            min_ms: 1.0,
            ideal_ms: efficiency,
            serial_ms: 1.0,
            efficiency,
            duplex_ideal_ms: 1.0,
            speedup: 1.0,
            stage_sums_ms: [0.0; 3],
        }
    }

    #[test]
    fn headline_is_the_best_row_with_three_streams() {
        let rows = vec![
            row(1, StageOrder::Free, 0.4),
            row(2, StageOrder::Free, 0.99),
            row(3, StageOrder::Free, 0.9),
            row(3, StageOrder::H2d, 0.95),
            row(4, StageOrder::H2d, 0.95),
        ];
        assert_eq!(headline_row(&rows), 3);
        assert_eq!(headline_row(&rows[..3]), 2);
        // Fewer than 3 streams measured: the most streams.
        assert_eq!(headline_row(&rows[..2]), 1);
        assert_eq!(headline_row(&[]), 0);
    }

    #[test]
    fn gemm_widths_keep_the_output_at_most_a_third() {
        let ns = gemm_n_candidates(4096, 64, 256);
        assert_eq!(ns.first(), Some(&256));
        assert_eq!(ns.last(), Some(&1344)); // 4096 / 3 = 1365.3
        assert_eq!(ns.len(), 18);
        assert!(ns.iter().all(|n| n % 64 == 0 && 3 * n <= 4096));
        assert_eq!(gemm_n_candidates(1024, 64, 256), vec![256, 320]);
        assert!(gemm_n_candidates(100, 64, 0).is_empty());
        assert!(gemm_n_candidates(4096, 0, 0).is_empty());
    }

    fn probe(rows: usize, n: usize, h2d_ms: f64, gemm_ms: f64) -> GemmProbe {
        GemmProbe {
            rows,
            n,
            kernel: "warptile",
            h2d_ms,
            gemm_ms,
        }
    }

    #[test]
    fn the_gemm_shape_is_the_probe_closest_to_its_h2d() {
        let probes = [
            probe(2048, 1024, 0.61, 0.49),  // 0.80
            probe(2048, 1088, 0.61, 0.84),  // 1.38
            probe(1536, 1280, 0.46, 0.47),  // 1.02
            probe(1536, 1344, 0.46, 0.455), // 0.99: the closest
            probe(1024, 512, 0.31, f64::NAN),
        ];
        let best = pick_gemm_probe(&probes).unwrap();
        assert_eq!((best.rows, best.n), (1536, 1344));
        // A tie across chunk sizes goes to the larger chunk.
        let tie = [probe(1024, 640, 0.5, 0.55), probe(2048, 640, 1.0, 1.1)];
        assert_eq!(pick_gemm_probe(&tie).unwrap().rows, 2048);
        assert!(pick_gemm_probe(&[probe(1, 1, 0.0, 1.0)]).is_none());
        assert!(pick_gemm_probe(&[]).is_none());
        let md = gemm_shape_markdown(&GemmShape {
            k: 4096,
            rows: 1536,
            n: 1344,
            probes: probes.to_vec(),
        });
        assert!(
            md.contains("**0.455 (0.99)**") && md.contains("| 1536 (24, 0.460) |"),
            "{md}"
        );
    }

    #[test]
    fn pattern_is_finite_and_varied() {
        let mut v = vec![0.0f32; 1000];
        fill_pattern(&mut v, 1);
        assert!(v.iter().all(|x| x.is_finite() && (1.0..2.0).contains(x)));
        let distinct: std::collections::HashSet<u32> = v.iter().map(|x| x.to_bits()).collect();
        assert!(distinct.len() > 990);
    }
}
