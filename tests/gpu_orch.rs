//! GPU tests of host orchestration: the pipeline's output at odd sizes from pinned and pageable
//! memory, bad host buffers, a batch larger than the device budget, the pool's statistics and
//! the studies at small sizes.
//!
//! Each test is `#[ignore = "needs a GPU"]`, as in `tests/gpu.rs`. On a GPU machine:
//! `cargo test --release --test gpu_orch -- --ignored`, or the staged `run.sh orch`.

use rustile::orch::overlap::fill_pattern;
use rustile::orch::{
    launch, pool, transfer, ChunkWork, HostBuffer, HostKind, Pipeline, PipelineConfig,
    PipelinePlan, StageOrder, StreamPool,
};
use rustile::{copy, Error, Gpu};

fn gpu() -> Gpu {
    Gpu::new(0).expect("these tests need a GPU")
}

fn free_bytes(gpu: &Gpu) -> usize {
    gpu.context().mem_get_info().unwrap().0
}

fn run_and_check(
    gpu: &Gpu,
    work: ChunkWork,
    kind: HostKind,
    elems: usize,
    cfg: PipelineConfig,
    budget: usize,
) {
    let ctx = gpu.context();
    let out_elems = PipelinePlan::output_len(elems, cfg.chunk_elems, work.out_shape());
    let mut input = HostBuffer::<f32>::new(ctx, kind, elems).unwrap();
    let mut output = HostBuffer::<f32>::new(ctx, kind, out_elems).unwrap();
    fill_pattern(input.as_mut_slice(), elems as u32);
    output.as_mut_slice().fill(f32::NAN);
    let plan = PipelinePlan::for_work(elems, out_elems, &cfg, &work, budget).unwrap();
    let pipe = Pipeline::new(gpu, plan, work).unwrap();
    let run = pipe.run(&input, &mut output).unwrap();
    let v = pipe
        .verify(input.as_slice(), output.as_slice())
        .unwrap_or_else(|e| panic!("{kind:?} {cfg:?} {}: {e}", work.name()));
    assert_eq!(v.exact, !work.is_gemm() || cfg.compute_reps == 0, "{v:?}");
    assert_eq!(run.timeline.spans.len(), 3 * plan.chunks);
    assert!(run.total_ms > 0.0);
    assert!(run.timeline.end_us() <= run.total_ms * 1e3 + 1.0);
}

#[test]
#[ignore = "needs a GPU"]
fn pipeline_output_is_exact_at_odd_sizes_pinned_and_pageable() {
    let gpu = gpu();
    let free = free_bytes(&gpu);
    // Every stage ordering once: the output must not depend on it.
    for (kind, streams, order) in [
        (HostKind::Pinned, 3, StageOrder::All),
        (HostKind::Pinned, 4, StageOrder::H2dCompute),
        (HostKind::Pageable, 2, StageOrder::H2d),
        (HostKind::WriteCombined, 4, StageOrder::Free),
    ] {
        for reps in [0, 2] {
            let cfg = PipelineConfig {
                chunk_elems: 1_000_003,
                streams,
                compute_reps: reps,
                order,
            };
            run_and_check(
                &gpu,
                ChunkWork::Copy(copy::BEST),
                kind,
                10_000_019,
                cfg,
                free,
            );
            // A transpose of each chunk as a 1000-column matrix; the odd tail as 1 × len.
            let t = rustile::orch::cli::work("transpose").unwrap();
            let t = match t {
                ChunkWork::Transpose { kernel, .. } => ChunkWork::Transpose { kernel, cols: 1000 },
                other => other,
            };
            // A gather of every 8th / 7th element: output chunks of ⌈len / stride⌉, the odd
            // tail too.
            for stride in [8, 7] {
                let g = rustile::orch::cli::work(&format!("gather:{stride}")).unwrap();
                run_and_check(&gpu, g, kind, 10_000_019, cfg, free);
            }
            run_and_check(
                &gpu,
                t,
                kind,
                10_000_019,
                PipelineConfig {
                    chunk_elems: 1_000_000,
                    ..cfg
                },
                free,
            );
        }
    }
}

#[test]
#[ignore = "needs a GPU"]
fn a_batch_larger_than_the_device_budget_streams_through() {
    // A budget of 8 MiB of device memory and a 64 MiB batch: 4 streams × 2 × 1 MiB chunks.
    let gpu = gpu();
    let cfg = PipelineConfig {
        chunk_elems: 1 << 18,
        streams: 4,
        compute_reps: 1,
        order: StageOrder::Free,
    };
    run_and_check(
        &gpu,
        ChunkWork::Copy(copy::BEST),
        HostKind::Pinned,
        1 << 24,
        cfg,
        8 << 20,
    );
    let e = PipelinePlan::new(
        1 << 24,
        1 << 24,
        &PipelineConfig {
            chunk_elems: 1 << 20,
            ..cfg
        },
        8 << 20,
    )
    .unwrap_err();
    assert!(matches!(e, Error::Pipeline { .. }), "{e}");
}

#[test]
#[ignore = "needs a GPU"]
fn host_buffers_of_the_wrong_length_are_typed_errors() {
    let gpu = gpu();
    let ctx = gpu.context();
    let cfg = PipelineConfig {
        chunk_elems: 100,
        streams: 2,
        compute_reps: 1,
        order: StageOrder::Free,
    };
    let plan = PipelinePlan::new(1000, 1000, &cfg, free_bytes(&gpu)).unwrap();
    let pipe = Pipeline::new(&gpu, plan, ChunkWork::Copy(copy::BEST)).unwrap();
    let good = HostBuffer::<f32>::new(ctx, HostKind::Pinned, 1000).unwrap();
    let short = HostBuffer::<f32>::new(ctx, HostKind::Pinned, 999).unwrap();
    let mut out = HostBuffer::<f32>::new(ctx, HostKind::Pinned, 1000).unwrap();
    let e = pipe.run(&short, &mut out).unwrap_err();
    assert!(
        matches!(
            e,
            Error::BufferLength {
                buffer: "input",
                got: 999,
                need: 1000,
                ..
            }
        ),
        "{e}"
    );
    let mut long = HostBuffer::<f32>::new(ctx, HostKind::Pageable, 1001).unwrap();
    let e = pipe.run(&good, &mut long).unwrap_err();
    assert!(
        matches!(
            e,
            Error::BufferLength {
                buffer: "output",
                got: 1001,
                ..
            }
        ),
        "{e}"
    );
    let e = HostBuffer::<f32>::new(ctx, HostKind::Pinned, 0)
        .err()
        .unwrap();
    assert!(matches!(e, Error::ZeroSize { .. }), "{e}");
    // A plan made for a copy does not run a gather (its output chunks are shorter).
    let gather = rustile::orch::cli::work("gather").unwrap();
    let e = Pipeline::new(&gpu, plan, gather).err().unwrap();
    assert!(matches!(e, Error::Pipeline { .. }), "{e}");
}

#[test]
#[ignore = "needs a GPU"]
fn pool_statistics_follow_allocations() {
    let gpu = gpu();
    let s = gpu.context().new_stream().unwrap();
    let mut p = StreamPool::new(&gpu).unwrap();
    let bufs: Vec<_> = (0..3).map(|_| p.alloc(1 << 20, &s).unwrap()).collect();
    s.synchronize().unwrap();
    let live = p.stats().unwrap();
    assert_eq!(live.accounting.allocated, 3 << 20);
    assert!(
        live.reserved >= 3 << 20 && live.peak_reserved >= live.reserved,
        "{live:?}"
    );
    assert!(live.used >= 3 << 20, "{live:?}");
    for b in bufs {
        p.free(b, &s).unwrap();
    }
    s.synchronize().unwrap();
    let after = p.stats().unwrap();
    assert_eq!(after.accounting.allocated, 0);
    assert_eq!(after.accounting.peak_allocated, 3 << 20);
    assert_eq!(after.used, 0);
    assert!(
        after.reserved >= 3 << 20,
        "the pool keeps its reservation: {after:?}"
    );
    assert!(matches!(p.alloc(0, &s), Err(Error::ZeroSize { .. })));
}

#[test]
#[ignore = "needs a GPU"]
fn studies_run_at_small_sizes() {
    let gpu = gpu();
    let t = transfer::study(&gpu, 1 << 20, |_| {}).unwrap();
    assert_eq!(t.rows.len(), 5 * 3 * 2);
    assert!(t.rows.iter().all(|r| r.gbps > 0.0));
    let l = launch::study(&gpu, 50, 2).unwrap();
    assert_eq!((l.launch.len(), l.sync.len()), (2, 3));
    let a = pool::study(&gpu, &[1 << 20], 5, 2).unwrap();
    assert_eq!(a.rows.len(), 2);
    // The overlap study with a gather: 8 MiB in 1 MiB chunks, output an eighth.
    let cfg = rustile::orch::overlap::OverlapConfig {
        batch_elems: 1 << 21,
        chunk_elems: 1 << 18,
        streams: vec![1, 3],
        reps: 1,
        compute_reps: Some(2),
        pageable: true,
        work: rustile::orch::cli::work("gather").unwrap(),
        orders: rustile::orch::StageOrder::ALL.to_vec(),
    };
    let o = rustile::orch::overlap::study(&gpu, &cfg, |_| {}).unwrap();
    assert!(o.verified.exact);
    assert_eq!(o.rows.len(), 1 + 4 + 2);
    assert_eq!(o.calibration.out_bytes * 8, o.calibration.chunk_bytes);
    assert!(o
        .rows
        .iter()
        .all(|r| r.efficiency > 0.0 && r.median_ms > 0.0));
}

#[test]
#[ignore = "needs a GPU"]
fn gemm_pipeline_matches_a_float64_reference_and_catches_corruption() {
    // Rows of A (K = 520) streamed, B (520 × 132) resident; 1003 rows in chunks of 96 rows:
    // the last chunk has 43 rows. Every order, 1–4 streams; each output checked with the SGEMM
    // tolerance over sampled entries, every element finite.
    let gpu = gpu();
    let free = free_bytes(&gpu);
    let work = ChunkWork::Gemm { k: 520, n: 132 };
    for (kind, streams, order) in [
        (HostKind::Pinned, 1, StageOrder::Free),
        (HostKind::Pinned, 3, StageOrder::H2dCompute),
        (HostKind::Pinned, 4, StageOrder::All),
        (HostKind::Pageable, 2, StageOrder::H2d),
    ] {
        for reps in [1, 2] {
            let cfg = PipelineConfig {
                chunk_elems: 96 * 520,
                streams,
                compute_reps: reps,
                order,
            };
            run_and_check(&gpu, work, kind, 1003 * 520, cfg, free);
        }
    }
    // A wrong B width in the plan, or a chunk that is not whole rows, is refused.
    let cfg = PipelineConfig {
        chunk_elems: 96 * 520 + 1,
        streams: 2,
        compute_reps: 1,
        order: StageOrder::Free,
    };
    let out = PipelinePlan::output_len(1003 * 520, cfg.chunk_elems, work.out_shape());
    let e = PipelinePlan::for_work(1003 * 520, out, &cfg, &work, free).unwrap_err();
    assert!(matches!(e, Error::Pipeline { .. }), "{e}");
    // Corrupting one sampled output entry (row 0 of chunk 1) is caught.
    let ctx = gpu.context();
    let cfg = PipelineConfig {
        chunk_elems: 96 * 520,
        ..cfg
    };
    let elems = 1003 * 520;
    let out_elems = PipelinePlan::output_len(elems, cfg.chunk_elems, work.out_shape());
    let mut input = HostBuffer::<f32>::new(ctx, HostKind::Pinned, elems).unwrap();
    let mut output = HostBuffer::<f32>::new(ctx, HostKind::Pinned, out_elems).unwrap();
    fill_pattern(input.as_mut_slice(), 7);
    let plan = PipelinePlan::for_work(elems, out_elems, &cfg, &work, free).unwrap();
    let pipe = Pipeline::new(&gpu, plan, work).unwrap();
    pipe.run(&input, &mut output).unwrap();
    let v = pipe.verify(input.as_slice(), output.as_slice()).unwrap();
    assert!(!v.exact && v.worst_over_bound <= 1.0, "{v:?}");
    let at = plan.out_chunk(1).start + 5;
    output.as_mut_slice()[at] += 1.0;
    let e = pipe
        .verify(input.as_slice(), output.as_slice())
        .unwrap_err();
    assert!(matches!(e, Error::Mismatch { .. }), "{e}");
    // A gather's plan does not run the SGEMM.
    let g = rustile::orch::cli::work("gather").unwrap();
    let gp = PipelinePlan::for_work(
        elems,
        PipelinePlan::output_len(elems, cfg.chunk_elems, g.out_shape()),
        &cfg,
        &g,
        free,
    )
    .unwrap();
    assert!(matches!(
        Pipeline::new(&gpu, gp, work).err().unwrap(),
        Error::Pipeline { .. }
    ));
}

#[test]
#[ignore = "needs a GPU"]
fn gemm_study_calibrates_its_shape_at_small_sizes() {
    // Small enough for racecheck to finish (the first version, K = 1024 with 1 Mi-element chunks,
    // probed 10 shapes of up to 1024 × 320 × 1024 and timed out under racecheck at 170–370 s):
    // K = 768 and 128 Ki-element chunks give 2 row counts (64, 128) × 1 width (256), still a real
    // calibration (rows and N from measured probes) and a real study over 4 chunks.
    const K: usize = 768;
    let gpu = gpu();
    let base = rustile::orch::overlap::OverlapConfig {
        batch_elems: 1 << 19,
        chunk_elems: 1 << 17,
        streams: vec![1, 3],
        reps: 1,
        compute_reps: None,
        pageable: false,
        work: ChunkWork::Copy(copy::BEST),
        orders: vec![StageOrder::Free, StageOrder::H2dCompute],
    };
    let spec = rustile::orch::cli::KernelSpec::GemmCalibrated { k: K };
    let (cfg, shape) = rustile::orch::cli::spec_config(&gpu, spec, &base, |_| {}).unwrap();
    let shape = shape.unwrap();
    assert_eq!(shape.probes.len(), 2, "{:?}", shape.probes);
    assert!(matches!(cfg.work, ChunkWork::Gemm { k: K, n } if n == shape.n && 3 * n <= K));
    assert_eq!(cfg.chunk_elems, shape.rows * K);
    assert_eq!(cfg.batch_elems, 4 * cfg.chunk_elems);
    assert!(shape
        .probes
        .iter()
        .all(|p| p.gemm_ms > 0.0 && p.h2d_ms > 0.0));
    let o = rustile::orch::overlap::study(&gpu, &cfg, |_| {}).unwrap();
    assert!(!o.verified.exact && o.verified.worst_over_bound <= 1.0);
    assert_eq!(o.calibration.compute_reps, 1);
    assert_eq!(o.rows.len(), 1 + 2);
    assert_eq!(
        o.calibration.out_bytes * K,
        o.calibration.chunk_bytes * shape.n
    );
}
