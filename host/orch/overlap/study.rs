//! The study: the pipeline at each stream count against its ideal, pinned and pageable.

use super::*;

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
