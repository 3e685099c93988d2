//! The sm_80 implicit-GEMM convolution (`conv/mma`, `conv/mma_any`, the `mma_n64` tuning) in
//! the simulator, no GPU needed: each record against float64 at small odd shapes in f16 and
//! bf16 (the simulator's race, bounds and barrier detectors watching every launch), the
//! dispatcher's choice between them, their shared-memory bank behaviour, and the zero-filling
//! `cp.async` primitive they are built on.

use rustile::backend::Backend;
use rustile::families::conv::{self, Problem};
use rustile::sim::{SimLaunch, Simulator};
use rustile::{DType, Error};
use rustile_kernels::conv::v04_mma;
use rustile_kernels::gpu;
use rustile_kernels::registry::KernelInfo;

fn seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(7)
}

/// `n × h × w`, `c → k`, `rs × rs` filter, `pad` each side; bias and ReLU.
fn p(n: usize, h: usize, w: usize, c: usize, k: usize, rs: usize, pad: usize) -> Problem {
    Problem {
        w,
        ..Problem::new(n, h, h, c, k, rs, pad, DType::F16)
    }
}

/// Shapes for the 16-byte-chunk kernel (C a multiple of 8), each off the tiles somewhere.
fn chunk_shapes() -> Vec<Problem> {
    vec![
        p(1, 5, 7, 8, 8, 3, 1),                               // tiny, batch 1, odd H/W
        p(2, 7, 9, 24, 40, 3, 1),                             // K = 40, C not a BK multiple
        p(1, 9, 9, 16, 17, 3, 0),                             // padding 0, odd K
        p(2, 9, 7, 32, 24, 3, 1).with_stride(2),              // stride 2, odd H
        p(1, 12, 11, 16, 16, 1, 0),                           // 1×1, two row tiles
        p(1, 9, 9, 16, 8, 5, 2),                              // 5×5 same
        p(1, 11, 9, 8, 16, 7, 3).with_stride(2),              // 7×7/2
        p(1, 10, 9, 16, 16, 3, 2).with_dilation(2),           // dilation 2
        p(1, 6, 5, 136, 24, 3, 1),                            // C = 136: a partial chunk
        p(1, 5, 5, 8, 136, 3, 1).with_epilogue(false, false), // two K tiles, no bias/ReLU
        p(1, 7, 6, 8, 17, 3, 1).with_epilogue(true, false),   // bias, no ReLU
    ]
}

/// Shapes only the element-load kernel runs (C not a multiple of 8), and a few it shares.
fn element_shapes() -> Vec<Problem> {
    vec![
        p(2, 9, 11, 3, 16, 7, 3).with_stride(2), // the stem: C = 3, 7×7/2
        p(1, 7, 5, 5, 17, 3, 1),                 // C = 5, odd K
        p(1, 9, 8, 12, 40, 5, 2),                // C = 12, 5×5
        p(1, 8, 9, 3, 8, 3, 2).with_dilation(2), // dilation 2
        p(1, 11, 13, 1, 8, 1, 0).with_stride(2), // C = 1, 1×1/2, two row tiles
        p(1, 6, 5, 136, 24, 3, 1),               // C = 136
        p(1, 5, 6, 6, 130, 3, 0).with_epilogue(false, false), // two K tiles
    ]
}

fn record(name: &str) -> &'static KernelInfo {
    rustile_kernels::registry::find(rustile_kernels::conv::FAMILY, name).unwrap()
}

/// Validates `record` on every shape in both dtypes; returns how many cases ran.
fn check_all(backend: &Backend, record: &'static KernelInfo, shapes: &[Problem]) -> usize {
    let s = seed();
    let mut n = 0;
    for (i, base) in shapes.iter().enumerate() {
        for dtype in [DType::F16, DType::Bf16] {
            let p = Problem { dtype, ..*base };
            let r = conv::validate(backend, record, &p, s + i as u64)
                .unwrap_or_else(|e| panic!("conv/{} {} (seed {s}): {e}", record.name, p.label()));
            assert!(r.worst <= 1.0 && r.compared > 0, "{}: {r:?}", p.label());
            n += 1;
        }
    }
    n
}

#[test]
fn the_chunk_kernel_matches_float64_in_the_simulator() {
    let backend = Backend::Simulator(Simulator::default());
    let n = check_all(&backend, record("mma"), &chunk_shapes());
    println!("conv/mma: {n} simulated cases pass against float64");
}

#[test]
fn the_element_kernel_matches_float64_in_the_simulator() {
    let backend = Backend::Simulator(Simulator::default());
    let mut shapes = element_shapes();
    // And a few of the chunk kernel's shapes: any C means these too.
    shapes.extend([chunk_shapes()[1], chunk_shapes()[3], chunk_shapes()[7]]);
    let n = check_all(&backend, record("mma_any"), &shapes);
    println!("conv/mma_any: {n} simulated cases pass against float64");
}

#[test]
fn the_narrow_tuning_matches_float64_in_the_simulator() {
    let backend = Backend::Simulator(Simulator::default());
    let t = &v04_mma::n64::INFO;
    assert_eq!(t.role, rustile_kernels::registry::Role::Tuning);
    let shapes = [
        p(1, 7, 9, 24, 72, 3, 1),                  // two K tiles of 64
        p(1, 9, 7, 16, 17, 3, 1).with_stride(2),   // odd K, stride 2
        p(1, 12, 11, 8, 64, 1, 0),                 // 1×1, two row tiles
        p(1, 6, 6, 136, 8, 3, 1).with_dilation(2), // C = 136, dilation 2
    ];
    let n = check_all(&backend, t, &shapes);
    println!("conv/mma_n64: {n} simulated cases pass against float64");
}

#[test]
fn the_dispatcher_prefers_the_chunk_kernel_and_falls_back_for_any_c() {
    let backend = Backend::Simulator(Simulator::default());
    // The ladder lists mma_any before mma, so mma is preferred wherever it can run.
    let ladder: Vec<_> = conv::ladder().map(|r| r.name).collect();
    let (any, mma) = (
        ladder.iter().position(|n| *n == "mma_any").unwrap(),
        ladder.iter().position(|n| *n == "mma").unwrap(),
    );
    assert!(any < mma, "{ladder:?}");
    for dtype in [DType::F16, DType::Bf16] {
        let aligned = Problem {
            dtype,
            ..p(1, 8, 8, 64, 64, 3, 1)
        };
        let stem = Problem {
            dtype,
            ..p(1, 16, 16, 3, 64, 7, 3)
        };
        let chosen = conv::select(conv::Target::of(&backend), &aligned)
            .unwrap()
            .name;
        assert!(chosen == "mma" || ladder.iter().position(|n| *n == chosen) > Some(mma));
        assert_eq!(
            conv::select(conv::Target::of(&backend), &stem)
                .unwrap()
                .name,
            "mma_any"
        );
        // C = 3: 6-byte channel rows, which the 16-byte copies cannot take: a typed refusal.
        match conv::runnable(conv::Target::of(&backend), record("mma"), &stem) {
            Err(Error::Unsupported { what, .. }) => assert!(what.contains("16-byte"), "{what}"),
            other => panic!("mma on C = 3: {other:?}"),
        }
        // f32 is no tensor-core dtype: no instantiation.
        let f32_problem = Problem {
            dtype: DType::F32,
            ..aligned
        };
        assert!(matches!(
            conv::runnable(conv::Target::of(&backend), record("mma"), &f32_problem),
            Err(Error::Unsupported { .. })
        ));
    }
}

#[test]
fn shared_accesses_are_conflict_free() {
    // The swizzle's promise holds for both loaders: every cp.async or st.shared store to a
    // stage tile and every ldmatrix phase is one wavefront per 128 bytes.
    for (name, c) in [("mma", 64), ("mma_any", 12)] {
        let sim = Simulator::default();
        sim.start_analysis();
        let backend = Backend::Simulator(sim);
        let p = p(1, 10, 13, c, 136, 3, 1);
        conv::validate(&backend, record(name), &p, seed()).unwrap();
        let Backend::Simulator(sim) = &backend else {
            unreachable!()
        };
        let a = sim.take_analysis().unwrap();
        let sites = a.sites();
        assert!(sites
            .iter()
            .any(|s| s.space == "shared" && s.kind == "load"));
        for s in sites.iter().filter(|s| s.space == "shared") {
            assert_eq!(s.worst_degree, 1, "{name}: {s:?}");
        }
    }
}

/// Each lane copies 16 bytes with a source size of `lane % 17` (0..=16) into shared memory,
/// then writes the 16 shared bytes out.
unsafe fn zfill_kernel(args: &[u64]) {
    let (src, dst) = (
        args[0] as usize as *const gpu::Vec16,
        args[1] as usize as *mut gpu::Vec16,
    );
    let lane = gpu::thread_idx_x();
    gpu::cp_async_16_zfill(16 * lane, src.wrapping_add(lane as usize), lane % 17);
    gpu::cp_async_commit();
    gpu::cp_async_wait::<0>();
    let v = gpu::ld_shared_f32x4(16 * lane).map(f32::to_bits);
    gpu::st_global_v16(dst.wrapping_add(lane as usize), gpu::Vec16(v));
}

/// A zero-size copy whose address lies outside every allocation (the kernels' contract is to
/// pass a valid base even then).
unsafe fn zfill_wild_kernel(args: &[u64]) {
    let src = args[0] as usize as *const gpu::Vec16;
    gpu::cp_async_16_zfill(0, src.wrapping_add(1 << 20), 0);
    gpu::cp_async_commit();
    gpu::cp_async_wait::<0>();
}

#[test]
fn zero_filling_copies_read_their_source_size_and_zero_the_rest() {
    let sim = Simulator::default();
    let src = sim.alloc::<u8>(32 * 16, "src").unwrap();
    let bytes: Vec<u8> = (0..32 * 16).map(|i| (i % 251 + 1) as u8).collect();
    sim.write(&src, &bytes).unwrap();
    let dst = sim.alloc::<u8>(32 * 16, "dst").unwrap();
    let launch = SimLaunch {
        grid: (1, 1, 1),
        block: (32, 1, 1),
        shared_bytes: 512,
    };
    sim.launch(
        "zfill",
        Some(zfill_kernel),
        &launch,
        &[src.addr(), dst.addr()],
    )
    .unwrap();
    let got = sim.read(&dst).unwrap();
    for lane in 0..32 {
        let n = lane % 17;
        for b in 0..16 {
            let want = if b < n { bytes[16 * lane + b] } else { 0 };
            assert_eq!(got[16 * lane + b], want, "lane {lane} byte {b}");
        }
    }
    let err = sim
        .launch(
            "zfill_wild",
            Some(zfill_wild_kernel),
            &launch,
            &[src.addr()],
        )
        .unwrap_err();
    assert!(matches!(err, Error::Sim { .. }), "{err:?}");
}
