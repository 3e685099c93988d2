//! The simulator, no GPU needed: every kernel of the registry runs on the CPU against its
//! reference at shapes that are not tile multiples; `rustile analyze`'s numbers for the
//! memory-movement family are pinned; and one planted bug per detector is caught.

use std::io::Write;

use rustile::backend::Backend;
use rustile::bench::parse_shape;
use rustile::sim::{SimLaunch, SimLimits, Simulator};
use rustile::suite::{self, Scale};
use rustile::{DType, Error, Family, KERNELS};
use rustile_kernels::gpu::{self, Elem};
use rustile_kernels::registry::find;

fn seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

#[test]
fn every_kernel_matches_its_reference_in_the_simulator() {
    let backend = Backend::Simulator(Simulator::default());
    let seed = seed();
    let start = std::time::Instant::now();
    let outcomes = suite::validate_all(&backend, Scale::Quick, seed, |_, _, _| {});
    let failed: Vec<_> = outcomes.iter().filter(|o| o.error.is_some()).collect();
    assert_eq!(outcomes.len(), suite::case_count(&backend, Scale::Quick));
    // Every registered kernel and dtype ran at least at one shape that is not a tile multiple.
    // (Every ladder step the simulator can run: not the sm_90a-only ones.)
    for k in KERNELS
        .iter()
        .filter(|k| k.role == rustile_kernels::registry::Role::Ladder && !k.needs.sm90a)
    {
        for e in k.symbols {
            let name = format!("{}/{}", k.family.name(), k.name);
            assert!(
                outcomes
                    .iter()
                    .any(|o| o.kernel == name && o.dtype == e.dtype.name()),
                "{name} {} never ran",
                e.dtype.name()
            );
        }
    }
    // Written past the test harness's capture, so `cargo test` always shows it.
    writeln!(
        std::io::stdout(),
        "simulator: {} kernel × dtype × shape cases ran in {:.1} s (seed {seed}), {} failed",
        outcomes.len(),
        start.elapsed().as_secs_f64(),
        failed.len()
    )
    .unwrap();
    assert!(failed.is_empty(), "seed {seed}: {failed:#?}");
}

fn analyze(kernel: &str, shape: &str, dtype: DType) -> rustile::sim::Analysis {
    let (family, variant) = kernel.split_once('/').unwrap();
    let family = Family::MEMORY
        .into_iter()
        .find(|f| f.name() == family)
        .unwrap();
    let k = find(family, variant).unwrap();
    rustile::memory::analyze(k, dtype, &parse_shape(family, shape).unwrap(), seed()).unwrap()
}

fn global_efficiency(a: &rustile::sim::Analysis, kind: &str) -> f64 {
    a.totals("global", kind).unwrap().efficiency()
}

#[test]
fn analysis_of_strided_copy_is_one_over_stride_until_one_eighth() {
    for (stride, want) in [
        (1, 1.0),
        (2, 0.5),
        (4, 0.25),
        (8, 0.125),
        (16, 0.125),
        (32, 0.125),
    ] {
        let a = analyze("strided/gather", &format!("4096:{stride}"), DType::F32);
        let got = global_efficiency(&a, "load");
        assert!(
            (got - want).abs() < 1e-9,
            "stride {stride}: load efficiency {got}, expected {want}"
        );
        assert_eq!(global_efficiency(&a, "store"), 1.0);
    }
}

#[test]
fn analysis_of_transposes_pins_coalescing_and_bank_conflicts() {
    let naive = analyze("transpose/naive", "256x256", DType::F32);
    assert_eq!(global_efficiency(&naive, "load"), 1.0);
    assert_eq!(global_efficiency(&naive, "store"), 0.125);

    let plain = analyze("transpose/smem", "256x256", DType::F32);
    let loads = plain.totals("shared", "load").unwrap();
    assert_eq!(
        (loads.conflict_degree(), loads.worst_degree),
        (32.0, 32),
        "unpadded column reads"
    );
    assert_eq!(
        plain.totals("shared", "store").unwrap().conflict_degree(),
        1.0
    );
    assert_eq!(global_efficiency(&plain, "store"), 1.0);

    for conflict_free in [
        "transpose/smem_padded",
        "transpose/smem_swizzled",
        "transpose/sector_aligned",
    ] {
        let a = analyze(conflict_free, "256x256", DType::F32);
        for kind in ["load", "store"] {
            let s = a.totals("shared", kind).unwrap();
            assert_eq!(s.worst_degree, 1, "{conflict_free} shared {kind}");
        }
        assert_eq!(global_efficiency(&a, "load"), 1.0, "{conflict_free}");
        assert_eq!(global_efficiency(&a, "store"), 1.0, "{conflict_free}");
    }

    // 8191-element rows start mid-sector: the padded tile's stores touch a fifth sector,
    // the sector-aligned tile's do not (the effect measured on the H200).
    let padded = analyze("transpose/smem_padded", "255x130", DType::F32);
    let aligned = analyze("transpose/sector_aligned", "255x130", DType::F32);
    let (p, s) = (
        global_efficiency(&padded, "store"),
        global_efficiency(&aligned, "store"),
    );
    assert!(
        p < 0.85 && s > p + 0.1,
        "store efficiency padded {p:.3}, sector-aligned {s:.3}"
    );
}

#[test]
fn analysis_of_copies() {
    for k in ["copy/scalar", "copy/vec16", "copy/grid_stride"] {
        let a = analyze(k, "65536", DType::F32);
        assert_eq!(global_efficiency(&a, "load"), 1.0, "{k}");
        assert_eq!(global_efficiency(&a, "store"), 1.0, "{k}");
    }
}

// --- Planted bugs: each kernel below is wrong in one way, and the simulator must say how. ---

fn run(
    kernel: unsafe fn(&[u64]),
    block: u32,
    shared: usize,
    args: &[u64],
    limits: SimLimits,
) -> Result<(), Error> {
    let sim = Simulator::new(limits);
    let launch = SimLaunch {
        grid: (1, 1, 1),
        block: (block, 1, 1),
        shared_bytes: shared,
    };
    sim.launch("planted", Some(kernel), &launch, args)
}

fn expect_sim_error(r: Result<(), Error>, needle: &str) -> String {
    match r {
        Err(e @ Error::Sim { .. }) => {
            let text = e.to_string();
            assert!(text.contains(needle), "expected `{needle}` in: {text}");
            text
        }
        other => panic!("expected a simulator error containing `{needle}`, got {other:?}"),
    }
}

/// Each thread writes its shared word, then reads its neighbour's without a barrier.
unsafe fn race_kernel(_: &[u64]) {
    let t = gpu::thread_idx_x();
    u32::st_shared(4 * t, t);
    let _ = u32::ld_shared(4 * ((t + 1) % gpu::block_dim_x()));
}

#[test]
fn planted_race_is_caught() {
    let text = expect_sim_error(run(race_kernel, 64, 256, &[], SimLimits::default()), "race");
    // Threads run one after another between barriers, so the pair is seen as thread 0's read
    // followed by thread 1's write to the same word.
    assert!(
        text.contains("write after read") && text.contains("thread 0"),
        "{text}"
    );
}

/// The same with the barrier it needs: no error.
unsafe fn race_fixed_kernel(_: &[u64]) {
    let t = gpu::thread_idx_x();
    u32::st_shared(4 * t, t);
    gpu::sync_threads();
    let _ = u32::ld_shared(4 * ((t + 1) % gpu::block_dim_x()));
}

#[test]
fn the_same_kernel_with_its_barrier_is_clean() {
    run(race_fixed_kernel, 64, 256, &[], SimLimits::default()).unwrap();
}

/// `i <= n` instead of `i < n`: one store past the end.
unsafe fn off_by_one_kernel(args: &[u64]) {
    let (dst, n) = (args[0] as usize as *mut f32, args[1]);
    let i = gpu::thread_idx_x() as u64;
    if i <= n {
        f32::st_global(dst.wrapping_add(i as usize), 1.0);
    }
}

#[test]
fn planted_out_of_bounds_write_is_caught() {
    let sim = Simulator::default();
    let buf = sim.alloc::<f32>(100, "dst").unwrap();
    let launch = SimLaunch {
        grid: (1, 1, 1),
        block: (128, 1, 1),
        shared_bytes: 0,
    };
    let text = expect_sim_error(
        sim.launch(
            "planted",
            Some(off_by_one_kernel),
            &launch,
            &[buf.addr(), 100],
        ),
        "out-of-bounds global store",
    );
    assert!(
        text.contains("thread (100, 0, 0)") && text.contains("`dst`"),
        "{text}"
    );
}

/// A tiled transpose that forgot its barrier between the shared store and the shared load.
unsafe fn missing_barrier_kernel(_: &[u64]) {
    let (tx, ty) = (gpu::thread_idx_x() % 32, gpu::thread_idx_x() / 32);
    u32::st_shared(4 * (ty * 32 + tx), tx);
    let _ = u32::ld_shared(4 * (tx * 32 + ty));
}

#[test]
fn planted_missing_barrier_is_caught() {
    expect_sim_error(
        run(
            missing_barrier_kernel,
            1024,
            4096,
            &[],
            SimLimits::default(),
        ),
        "race",
    );
}

/// Only half the block reaches the barrier.
unsafe fn divergent_barrier_kernel(_: &[u64]) {
    if gpu::thread_idx_x() < 16 {
        gpu::sync_threads();
    }
}

#[test]
fn planted_divergent_barrier_is_caught_not_hung() {
    let text = expect_sim_error(
        run(divergent_barrier_kernel, 64, 0, &[], SimLimits::default()),
        "barrier divergence",
    );
    assert!(
        text.contains("exited") && text.contains("16 thread(s) at the barrier"),
        "{text}"
    );
}

/// Both halves call a barrier, but different ones.
#[allow(clippy::if_same_then_else)]
unsafe fn two_barriers_kernel(_: &[u64]) {
    if gpu::thread_idx_x().is_multiple_of(2) {
        gpu::sync_threads();
    } else {
        gpu::sync_threads();
    }
}

#[test]
fn threads_at_different_barriers_are_caught() {
    expect_sim_error(
        run(two_barriers_kernel, 64, 0, &[], SimLimits::default()),
        "barrier divergence",
    );
}

/// Thread 0 spins until thread 1 sets a flag, but thread 1 only sets it after a barrier that
/// thread 0 never reaches: a hang on a GPU, a bounded error here.
unsafe fn spin_kernel(_: &[u64]) {
    if gpu::thread_idx_x() == 0 {
        while u32::ld_shared(0) != 7 {}
    } else {
        gpu::sync_threads();
        u32::st_shared(0, 7);
    }
}

#[test]
fn planted_spin_wait_is_bounded() {
    let limits = SimLimits {
        step_budget: 100_000,
        ..SimLimits::default()
    };
    expect_sim_error(
        run(spin_kernel, 32, 16, &[], limits),
        "without reaching a barrier",
    );
}

/// Shared access past the launch's shared bytes.
unsafe fn shared_oob_kernel(_: &[u64]) {
    u32::st_shared(4 * gpu::thread_idx_x(), 0);
}

#[test]
fn planted_shared_out_of_bounds_is_caught() {
    let text = expect_sim_error(
        run(shared_oob_kernel, 64, 128, &[], SimLimits::default()),
        "outside the 128-byte arena",
    );
    assert!(text.contains("thread (32, 0, 0)"), "{text}");
}

unsafe fn misaligned_kernel(args: &[u64]) {
    let p = (args[0] + 2) as usize as *const f32;
    let _ = f32::ld_global_nc(p);
}

#[test]
fn misaligned_global_access_is_caught() {
    let sim = Simulator::default();
    let buf = sim.alloc::<f32>(8, "src").unwrap();
    let launch = SimLaunch {
        grid: (1, 1, 1),
        block: (1, 1, 1),
        shared_bytes: 0,
    };
    expect_sim_error(
        sim.launch("planted", Some(misaligned_kernel), &launch, &[buf.addr()]),
        "misaligned",
    );
}

unsafe fn trap_kernel(_: &[u64]) {
    if gpu::thread_idx_x() == 5 {
        gpu::trap();
    }
}

unsafe fn panic_kernel(_: &[u64]) {
    let v: [u32; 4] = [0; 4];
    let i = gpu::thread_idx_x() as usize;
    let _ = std::hint::black_box(v)[i];
}

#[test]
fn traps_and_panics_are_errors() {
    let text = expect_sim_error(run(trap_kernel, 32, 0, &[], SimLimits::default()), "trap");
    assert!(text.contains("thread (5, 0, 0)"), "{text}");
    expect_sim_error(
        run(panic_kernel, 32, 0, &[], SimLimits::default()),
        "panicked",
    );
}

#[test]
fn launches_beyond_the_device_limits_are_errors() {
    let e = run(race_fixed_kernel, 1025, 0, &[], SimLimits::default()).unwrap_err();
    assert!(
        matches!(e, Error::Resource { .. }) && e.to_string().contains("1025 threads"),
        "{e}"
    );
    let e = run(race_fixed_kernel, 32, 300 * 1024, &[], SimLimits::default()).unwrap_err();
    assert!(
        matches!(e, Error::Resource { .. }) && e.to_string().contains("shared memory"),
        "{e}"
    );
}

/// Warp reduction with butterfly shuffles; lane 0 of each warp writes the sum, and a ballot.
unsafe fn warp_sum_kernel(args: &[u64]) {
    let out = args[0] as usize as *mut u32;
    let t = gpu::thread_idx_x();
    let mut v = t;
    let mut m = 16;
    while m > 0 {
        v += gpu::shfl_xor(v, m);
        m /= 2;
    }
    let from_lane_3 = gpu::shfl_idx(t, 3);
    let odd = gpu::ballot(t % 2 == 1);
    if gpu::lane_id() == 0 {
        let w = (t / 32) as usize;
        u32::st_global(out.wrapping_add(3 * w), v);
        u32::st_global(out.wrapping_add(3 * w + 1), from_lane_3);
        u32::st_global(out.wrapping_add(3 * w + 2), odd);
    }
}

#[test]
fn warp_collectives_compute_what_ptx_defines() {
    let sim = Simulator::default();
    let buf = sim.alloc::<u32>(6, "out").unwrap();
    let launch = SimLaunch {
        grid: (1, 1, 1),
        block: (64, 1, 1),
        shared_bytes: 0,
    };
    sim.launch("warp_sum", Some(warp_sum_kernel), &launch, &[buf.addr()])
        .unwrap();
    let got = sim.read(&buf).unwrap();
    let sum = |w: u32| (32 * w..32 * w + 32).sum::<u32>();
    assert_eq!(got, vec![sum(0), 3, 0xaaaa_aaaa, sum(1), 35, 0xaaaa_aaaa]);
}

/// Only half a warp calls the shuffle.
unsafe fn divergent_shuffle_kernel(_: &[u64]) {
    if gpu::lane_id() < 16 {
        let _ = gpu::shfl_xor(1, 1);
    }
}

#[test]
fn divergent_warp_collective_is_caught() {
    expect_sim_error(
        run(divergent_shuffle_kernel, 32, 0, &[], SimLimits::default()),
        "16 of 32 lanes",
    );
}

// --- Tensor-core primitives: cp.async, ldmatrix (plain and .trans), mma.sync m16n8k16. ---

#[test]
fn tensor_core_primitives_compute_a_b_plus_c() {
    use rustile::selftest::{self, TcInputs};
    use rustile_kernels::gpu::MmaKind;
    let backend = Backend::Simulator(Simulator::default());
    for kind in [MmaKind::F16, MmaKind::Bf16] {
        // Small integers: exact, so the result must equal the float64 reference exactly.
        let exact = TcInputs::random(kind, true, seed());
        let d = selftest::run(&backend, kind, &exact).unwrap();
        assert_eq!(
            selftest::max_error(&d, &exact.reference(kind)),
            0.0,
            "{kind:?} integers"
        );
        // Random values: f32 accumulation of 16 products.
        let real = TcInputs::random(kind, false, seed());
        let d = selftest::run(&backend, kind, &real).unwrap();
        let e = selftest::max_error(&d, &real.reference(kind));
        assert!(e < 1e-6, "{kind:?}: error {e}");
        // Plain and transposed, x2 and x1: four routes to the same product.
        assert_eq!(d.len(), selftest::D_LEN);
        for route in 1..4 {
            assert_eq!(
                d[..128],
                d[128 * route..128 * (route + 1)],
                "{kind:?}: route {route} differs from ldmatrix.x2"
            );
        }
    }
}

/// A pipeline that reads its shared tile before waiting for the asynchronous copy.
unsafe fn early_read_kernel(args: &[u64]) {
    let (src, dst) = (
        args[0] as usize as *const gpu::Vec16,
        args[1] as usize as *mut u32,
    );
    let lane = gpu::thread_idx_x();
    gpu::cp_async_16(16 * lane, src.wrapping_add(lane as usize));
    gpu::cp_async_commit();
    let early = u32::ld_shared(16 * lane); // bug: no cp_async_wait before this
    gpu::cp_async_wait::<0>();
    let late = u32::ld_shared(16 * lane);
    u32::st_global(dst.wrapping_add(2 * lane as usize), early);
    u32::st_global(dst.wrapping_add(2 * lane as usize + 1), late);
}

#[test]
fn cp_async_data_arrives_only_at_the_wait() {
    let sim = Simulator::default();
    let src = sim.alloc::<u32>(128, "src").unwrap();
    sim.write(&src, &(0..128).map(|i| 1000 + i).collect::<Vec<u32>>())
        .unwrap();
    let dst = sim.alloc::<u32>(64, "dst").unwrap();
    let launch = SimLaunch {
        grid: (1, 1, 1),
        block: (32, 1, 1),
        shared_bytes: 512,
    };
    sim.launch(
        "early_read",
        Some(early_read_kernel),
        &launch,
        &[src.addr(), dst.addr()],
    )
    .unwrap();
    let got = sim.read(&dst).unwrap();
    for lane in 0..32 {
        // Shared memory starts as 0xa5 bytes: the early read sees that, the late one the data.
        assert_eq!(
            got[2 * lane],
            0xa5a5_a5a5,
            "lane {lane} read the copy before waiting"
        );
        assert_eq!(got[2 * lane + 1], 1000 + 4 * lane as u32);
    }
}

#[test]
fn tuning_experiments_are_correct_too() {
    let backend = Backend::Simulator(Simulator::default());
    for k in rustile_kernels::registry::KERNELS
        .iter()
        .filter(|k| k.role == rustile_kernels::registry::Role::Experiment)
    {
        for p in rustile::gemm::validation_problems() {
            let p = if rustile::gemm::GemmProblem::vectorized(k) {
                p.aligned()
            } else {
                p
            };
            rustile::gemm::validate(&backend, k, &p, seed())
                .unwrap_or_else(|e| panic!("{}: {e}", k.name));
        }
    }
}

/// Random A, B and C for `p`, and simulator copies of them.
#[allow(clippy::type_complexity)]
fn random_abc(
    sim: &Simulator,
    p: &rustile::gemm::GemmProblem,
    rng: &mut rand::rngs::SmallRng,
) -> ([Vec<f32>; 3], [rustile::sim::SimBuf<f32>; 3]) {
    let (la, lb, lc) = p.lens().unwrap();
    let host = [
        rustile::elem::random_vec(la, rng),
        rustile::elem::random_vec(lb, rng),
        rustile::elem::random_vec(lc, rng),
    ];
    let dev = [
        sim.alloc::<f32>(la, "a").unwrap(),
        sim.alloc::<f32>(lb, "b").unwrap(),
        sim.alloc::<f32>(lc, "c").unwrap(),
    ];
    for (d, h) in dev.iter().zip(&host) {
        sim.write(d, h).unwrap();
    }
    (host, dev)
}

/// Launches the split-K reduction `C = α·Σ ws + β·C` of `splits` slices of `p.m × p.n` in the
/// simulator (the SGEMM dispatcher's second launch after a split product).
fn reduce_split_k(sim: &Simulator, ws: u64, c: u64, p: &rustile::gemm::GemmProblem, splits: u32) {
    use rustile_kernels::gemm::v08_warptile::split_k::reduce;
    let red = SimLaunch {
        grid: ((p.n as u32).div_ceil(reduce::BLOCK_X), p.m as u32, 1),
        block: (reduce::BLOCK_X, 1, 1),
        shared_bytes: 0,
    };
    let args = [
        ws,
        c,
        p.m as u64,
        p.n as u64,
        p.ldc as u64,
        splits as u64,
        p.alpha.to_bits() as u64,
        p.beta.to_bits() as u64,
    ];
    sim.launch("reduce", reduce::SYMBOLS[0].sim, &red, &args)
        .unwrap();
}

/// The arguments of a split-K part launch: A, B, the workspace (pitch n), α = 1, β = 0.
fn split_part_args(a: u64, b: u64, ws: u64, p: &rustile::gemm::GemmProblem) -> [u64; 11] {
    [
        a,
        b,
        ws,
        p.m as u64,
        p.n as u64,
        p.k as u64,
        p.lda as u64,
        p.ldb as u64,
        p.n as u64,
        1.0f32.to_bits() as u64,
        0.0f32.to_bits() as u64,
    ]
}

#[test]
fn split_k_partials_and_reduction_match_the_reference() {
    use rustile::gemm::{check_elements, GemmProblem};
    use rustile_kernels::gemm::v08_warptile::{split_k, INFO, THREADS};
    let sim = Simulator::default();
    let p = GemmProblem {
        alpha: 1.5,
        beta: -0.5,
        ldc: 93,
        ..GemmProblem::new(70, 90, 300)
    }
    .aligned();
    let splits = 3u32;
    let mut rng = <rand::rngs::SmallRng as rand::SeedableRng>::seed_from_u64(seed());
    let ([a, b, c0], [da, db, dc]) = random_abc(&sim, &p, &mut rng);
    let ws = sim
        .alloc::<f32>(splits as usize * p.m * p.n, "workspace")
        .unwrap();
    let (gx, gy, _) = p.grid(&INFO);
    let part = SimLaunch {
        grid: (gx as u32, gy as u32, splits),
        block: (THREADS, 1, 1),
        shared_bytes: INFO.shared_bytes_f32,
    };
    let args = split_part_args(da.addr(), db.addr(), ws.addr(), &p);
    sim.launch("splitk", split_k::SYMBOLS[0].sim, &part, &args)
        .unwrap();
    reduce_split_k(&sim, ws.addr(), dc.addr(), &p, splits);
    let got = sim.read(&dc).unwrap();
    check_elements("split-K", &p, &a, &b, &c0, &got).unwrap();
}

#[test]
fn nt_pipeline_on_a_transposed_a_matches_the_reference() {
    use rustile::backend::Buf;
    use rustile::gemm::{check_elements, launch_on, GemmProblem};
    use rustile_kernels::gemm::v11_nt_pipeline::INFO;
    let backend = Backend::Simulator(Simulator::default());
    let mut rng = <rand::rngs::SmallRng as rand::SeedableRng>::seed_from_u64(seed());
    // M a multiple of 4 (Aᵀ rows 16-byte aligned); N, K not multiples of anything; K > 3 stages.
    for (m, n, k) in [(132usize, 90usize, 70usize), (8, 7, 1), (256, 129, 49)] {
        let p = GemmProblem {
            alpha: 0.75,
            beta: 0.5,
            ..GemmProblem::new(m, n, k)
        }
        .aligned();
        let (la, lb, lc) = p.lens().unwrap();
        let a: Vec<f32> = rustile::elem::random_vec(la, &mut rng);
        let b: Vec<f32> = rustile::elem::random_vec(lb, &mut rng);
        let c0: Vec<f32> = rustile::elem::random_vec(lc, &mut rng);
        let a_t: Vec<f32> = (0..k * m).map(|i| a[(i % m) * p.lda + i / m]).collect();
        let nt = GemmProblem { lda: m, ..p };
        let (da, db) = (
            backend.upload(&a_t, "Aᵀ").unwrap(),
            backend.upload(&b, "B").unwrap(),
        );
        let mut dc = backend.upload(&c0, "C").unwrap();
        launch_on(&backend, &INFO, &nt, &da, &db, &mut dc).unwrap();
        let Buf::Sim(_) = &dc else { unreachable!() };
        let got = backend.download(&dc, "C").unwrap();
        check_elements("nt_pipeline", &p, &a, &b, &c0, &got).unwrap();
    }
}

#[test]
fn nt_split_k_matches_the_reference() {
    use rustile::gemm::{check_elements, GemmProblem};
    use rustile_kernels::gemm::v11_nt_pipeline::{split_k, INFO};
    let sim = Simulator::default();
    let mut rng = <rand::rngs::SmallRng as rand::SeedableRng>::seed_from_u64(seed());
    let p = GemmProblem {
        alpha: -1.0,
        beta: 0.25,
        ..GemmProblem::new(68, 90, 333)
    }
    .aligned();
    let (m, n, k, splits) = (p.m, p.n, p.k, 4u32);
    let (la, lb, lc) = p.lens().unwrap();
    let a: Vec<f32> = rustile::elem::random_vec(la, &mut rng);
    let b: Vec<f32> = rustile::elem::random_vec(lb, &mut rng);
    let c0: Vec<f32> = rustile::elem::random_vec(lc, &mut rng);
    let a_t: Vec<f32> = (0..k * m).map(|i| a[(i % m) * p.lda + i / m]).collect();
    let (da, db, dc) = (
        sim.alloc::<f32>(k * m, "Aᵀ").unwrap(),
        sim.alloc::<f32>(lb, "b").unwrap(),
        sim.alloc::<f32>(lc, "c").unwrap(),
    );
    sim.write(&da, &a_t).unwrap();
    sim.write(&db, &b).unwrap();
    sim.write(&dc, &c0).unwrap();
    let ws = sim
        .alloc::<f32>(splits as usize * m * n, "workspace")
        .unwrap();
    let (gx, gy, _) = p.grid(&INFO);
    let part = SimLaunch {
        grid: (gx as u32, gy as u32, splits),
        block: INFO.block,
        shared_bytes: INFO.shared_bytes_f32,
    };
    // Aᵀ's pitch is M.
    let args = split_part_args(
        da.addr(),
        db.addr(),
        ws.addr(),
        &GemmProblem { lda: m, ..p },
    );
    sim.launch("nt_splitk", split_k::SYMBOLS[0].sim, &part, &args)
        .unwrap();
    reduce_split_k(&sim, ws.addr(), dc.addr(), &p, splits);
    let got = sim.read(&dc).unwrap();
    check_elements("NT split-K", &p, &a, &b, &c0, &got).unwrap();
}

#[test]
fn kgroup_ring_wraps_its_ring_at_odd_shapes() {
    // The validation shapes have K ≤ 64: one or two k-tiles of 32 or 64. These run the ring
    // several times around, with partial last k-tiles, edge tiles in M and N, and β ≠ 0.
    use rustile::gemm::{validate, GemmProblem};
    use rustile_kernels::gemm::v12_kgroup_ring::{experiments, INFO};
    let backend = Backend::Simulator(Simulator::default());
    for k in [&INFO, &experiments::INFO_KG1, &experiments::INFO_KG4] {
        for (m, n, kk) in [(130usize, 70usize, 333usize), (5, 129, 260), (128, 64, 256)] {
            let p = GemmProblem {
                alpha: 0.75,
                beta: -0.5,
                ..GemmProblem::new(m, n, kk)
            }
            .aligned();
            validate(&backend, k, &p, seed()).unwrap_or_else(|e| panic!("{}: {e}", k.name));
        }
    }
}

/// The naive kernel at 1×1×K, where C is a single dot product and often nearly cancels: every
/// element is held to its own bound scaled by Σ|a·b|, so no seed fails from cancellation (the
/// relative Frobenius check it replaced failed some: counted and printed).
#[test]
fn naive_sgemm_at_1x1xk_passes_on_every_seed() {
    use rustile::gemm::GemmProblem;
    let backend = Backend::Simulator(Simulator::default());
    let naive = find(Family::Gemm, "naive").unwrap();
    let p = GemmProblem::new(1, 1, 512);
    let base = seed();
    let mut norm_would_fail = 0;
    for s in 0..500u64 {
        let e = rustile::gemm::validate(&backend, naive, &p, base.wrapping_add(s))
            .unwrap_or_else(|e| panic!("seed {}: {e}", base.wrapping_add(s)));
        norm_would_fail += (e > p.tolerance()) as usize;
    }
    println!(
        "1x1x512, seeds {base}..+500: the relative-norm check would have failed {norm_would_fail}"
    );
}

#[test]
fn rows_any_at_odd_pitches_and_edges_matches_the_reference() {
    use rustile::gemm::{check_elements, launch_on, GemmProblem};
    use rustile_kernels::gemm::v18_rows_any::INFO;
    let backend = Backend::Simulator(Simulator::default());
    let mut rng = <rand::rngs::SmallRng as rand::SeedableRng>::seed_from_u64(seed());
    // Pitches that are not multiples of 4 (every copy a 4-byte one at odd addresses), M, N, K
    // off the 64 × 128 × 16 tile (partial rows, columns and k-tile; K under one k-tile; more
    // k-tiles than the ring's stages), aligned pitches too, β = 0 with C poisoned.
    for (m, n, k, lda, ldb, ldc, beta) in [
        (
            70usize, 133usize, 53usize, 55usize, 135usize, 137usize, -0.5f32,
        ),
        (64, 128, 48, 48, 128, 128, 0.25),
        (1, 1, 1, 1, 1, 1, 2.0),
        (129, 5, 7, 9, 6, 5, 0.0),
        (65, 250, 100, 101, 251, 250, 0.0),
    ] {
        let p = GemmProblem {
            alpha: 1.5,
            beta,
            lda,
            ldb,
            ldc,
            ..GemmProblem::new(m, n, k)
        };
        let (la, lb, lc) = p.lens().unwrap();
        let a: Vec<f32> = rustile::elem::random_vec(la, &mut rng);
        let b: Vec<f32> = rustile::elem::random_vec(lb, &mut rng);
        let c0: Vec<f32> = if beta == 0.0 {
            vec![f32::NAN; lc]
        } else {
            rustile::elem::random_vec(lc, &mut rng)
        };
        let (da, db) = (
            backend.upload(&a, "A").unwrap(),
            backend.upload(&b, "B").unwrap(),
        );
        let mut dc = backend.upload(&c0, "C").unwrap();
        launch_on(&backend, &INFO, &p, &da, &db, &mut dc).unwrap();
        let got = backend.download(&dc, "C").unwrap();
        check_elements("rows_any", &p, &a, &b, &c0, &got)
            .unwrap_or_else(|e| panic!("{}: {e}", p.shape()));
    }
}

#[test]
fn small_tile_split_over_k_at_odd_pitches_matches_the_reference() {
    use rustile::gemm::{check_elements, GemmProblem};
    use rustile_kernels::gemm::v16_small_tile::{INFO, SYMBOLS, THREADS};
    let mut rng = <rand::rngs::SmallRng as rand::SeedableRng>::seed_from_u64(seed());
    // Odd pitches (scalar loads), K not a multiple of the k-tile, slices that end mid-tile, and
    // more slices than k-tiles (empty slices write zeros); aligned pitches (16-byte loads) too.
    for (m, n, k, lda, ldb, ldc, splits) in [
        (70usize, 90usize, 300usize, 301usize, 93usize, 91usize, 3u32),
        (65, 64, 40, 41, 65, 64, 5),
        (64, 128, 96, 96, 128, 128, 2),
        (33, 17, 8, 9, 17, 19, 4),
    ] {
        let sim = Simulator::default();
        let p = GemmProblem {
            alpha: 1.25,
            beta: -0.5,
            lda,
            ldb,
            ldc,
            ..GemmProblem::new(m, n, k)
        };
        let ([a, b, c0], [da, db, dc]) = random_abc(&sim, &p, &mut rng);
        let ws = sim.alloc::<f32>(splits as usize * m * n, "ws").unwrap();
        sim.write(&ws, &vec![f32::NAN; splits as usize * m * n])
            .unwrap();
        let (gx, gy, _) = p.grid(&INFO);
        let part = SimLaunch {
            grid: (gx as u32, gy as u32, splits),
            block: (THREADS, 1, 1),
            shared_bytes: INFO.shared_bytes_f32,
        };
        let args = split_part_args(da.addr(), db.addr(), ws.addr(), &p);
        sim.launch("small_tile", SYMBOLS[0].sim, &part, &args)
            .unwrap();
        reduce_split_k(&sim, ws.addr(), dc.addr(), &p, splits);
        let got = sim.read(&dc).unwrap();
        check_elements("small_tile split-K", &p, &a, &b, &c0, &got).unwrap();
    }
}

/// The padding copy (`gemm::pad`) at odd widths and pitches, aligned and unaligned destination
/// pitches, a grid shorter than the rows (the row stride): every element copied exactly, the
/// extra columns zero, nothing read from a destination that starts poisoned.
#[test]
fn pad_copies_every_row_and_zero_fills_the_pitch() {
    use rustile_kernels::gemm::pad::{BLOCK_X, INFO, SYMBOLS, VEC};
    let sim = Simulator::default();
    let mut rng = <rand::rngs::SmallRng as rand::SeedableRng>::seed_from_u64(seed());
    // (rows, cols, ld_src, ld_dst, grid_y)
    let cases = [
        (7, 1531, 1531, 1532, 7),
        (5, 1021, 1023, 1024, 2),
        (3, 1025, 1030, 1028, 3),
        (4, 13, 13, 15, 4), // an odd destination pitch: per-element stores
        (1, 1, 1, 4, 1),
    ];
    for (rows, cols, ld_src, ld_dst, gy) in cases {
        let src: Vec<f32> = rustile::elem::random_vec((rows - 1) * ld_src + cols, &mut rng);
        let ds = sim.alloc::<f32>(src.len(), "src").unwrap();
        sim.write(&ds, &src).unwrap();
        let dd = sim.alloc_uninit::<f32>(rows * ld_dst, "dst").unwrap();
        let launch = SimLaunch {
            grid: ((ld_dst as u32).div_ceil(BLOCK_X * VEC), gy, 1),
            block: INFO.block,
            shared_bytes: 0,
        };
        let args = [
            ds.addr(),
            dd.addr(),
            rows as u64,
            cols as u64,
            ld_src as u64,
            ld_dst as u64,
        ];
        sim.launch("pad", SYMBOLS[0].sim, &launch, &args).unwrap();
        let got = sim.read(&dd).unwrap();
        for r in 0..rows {
            for c in 0..ld_dst {
                let want = if c < cols { src[r * ld_src + c] } else { 0.0 };
                assert_eq!(
                    got[r * ld_dst + c].to_bits(),
                    want.to_bits(),
                    "[{r}][{c}] of {rows}×{cols} (ld {ld_src} → {ld_dst})"
                );
            }
        }
    }
}

/// The dispatcher's stream-K path, launch by launch in the simulator: A of any pitch written
/// as Aᵀ at a pitch of a multiple of 4 (`gemm::pad::transpose`), the plain NT pipeline on the
/// plan's top rows of tiles, the stream-K kernel on the rows below (its Aᵀ and C offset to the
/// band) and the fix-up. Grids of one block, of every k-tile its own block, and in between —
/// tiles split over several blocks, blocks spanning several tiles — at odd shapes with β ≠ 0.
#[test]
fn stream_k_bands_and_fixup_match_the_reference() {
    use rustile::gemm::stream_k::Plan;
    use rustile::gemm::{check_elements, GemmProblem};
    use rustile_kernels::gemm::v17_nt_stream_k::{fixup, workspace_len, FIXUP_SPLIT, INFO};
    use rustile_kernels::gemm::{pad::transpose, v11_nt_pipeline};
    let sim = Simulator::default();
    let mut rng = <rand::rngs::SmallRng as rand::SeedableRng>::seed_from_u64(seed());
    let cases = [
        // (m, n, k, lda, ldb, ldc, dp_rows, ctas)
        (301, 250, 83, 85, 252, 251, 1, 7),
        (301, 250, 83, 83, 252, 250, 0, 6), // a block per tile, each whole
        (130, 129, 40, 41, 132, 133, 0, 12), // 4 tiles × 3 k-tiles: one k-tile per block
        (257, 131, 200, 203, 132, 131, 2, 3), // the band is one partial row of tiles
        (129, 260, 333, 333, 260, 260, 0, 9),
    ];
    for (m, n, k, lda, ldb, ldc, dp_rows, ctas) in cases {
        let p = GemmProblem {
            alpha: 0.75,
            beta: -0.5,
            lda,
            ldb,
            ldc,
            ..GemmProblem::new(m, n, k)
        };
        let plan = Plan { dp_rows, ctas };
        let (la, lb, lc) = p.lens().unwrap();
        let a: Vec<f32> = rustile::elem::random_vec(la, &mut rng);
        let b: Vec<f32> = rustile::elem::random_vec(lb, &mut rng);
        let c0: Vec<f32> = rustile::elem::random_vec(lc, &mut rng);
        let ld_t = m.next_multiple_of(4);
        let (da, db, dc, dt) = (
            sim.alloc::<f32>(la, "A").unwrap(),
            sim.alloc::<f32>(lb, "B").unwrap(),
            sim.alloc::<f32>(lc, "C").unwrap(),
            sim.alloc::<f32>(k * ld_t, "Aᵀ").unwrap(),
        );
        sim.write(&da, &a).unwrap();
        sim.write(&db, &b).unwrap();
        sim.write(&dc, &c0).unwrap();
        let tp = SimLaunch {
            grid: (
                k.div_ceil(transpose::TILE as usize) as u32,
                ld_t.div_ceil(transpose::TILE as usize) as u32,
                1,
            ),
            block: transpose::BLOCK,
            shared_bytes: transpose::SHARED_BYTES,
        };
        let args = [
            da.addr(),
            dt.addr(),
            m as u64,
            k as u64,
            lda as u64,
            ld_t as u64,
        ];
        sim.launch("transpose_pad", transpose::SYMBOLS[0].sim, &tp, &args)
            .unwrap();
        // Aᵀ, zero in the padding columns.
        let at = sim.read(&dt).unwrap();
        for kk in 0..k {
            for r in 0..ld_t {
                let want = if r < m { a[r * lda + kk] } else { 0.0 };
                assert_eq!(at[kk * ld_t + r], want, "Aᵀ[{kk}][{r}] of {}", p.shape());
            }
        }
        let f = |x: f32| x.to_bits() as u64;
        let r0 = (plan.split_row()).min(m);
        let scalars = |rows: usize| {
            [
                rows as u64,
                n as u64,
                k as u64,
                ld_t as u64,
                ldb as u64,
                ldc as u64,
                f(p.alpha),
                f(p.beta),
            ]
        };
        if r0 > 0 {
            let top = SimLaunch {
                grid: (n.div_ceil(128) as u32, r0.div_ceil(128) as u32, 1),
                block: v11_nt_pipeline::INFO.block,
                shared_bytes: v11_nt_pipeline::INFO.shared_bytes_f32,
            };
            let mut args = vec![dt.addr(), db.addr(), dc.addr()];
            args.extend(scalars(r0));
            sim.launch("nt", v11_nt_pipeline::SYMBOLS[0].sim, &top, &args)
                .unwrap();
        }
        let ws = sim
            .alloc::<f32>(workspace_len(ctas), "stream-K workspace")
            .unwrap();
        let (a_low, c_low) = (dt.addr() + 4 * r0 as u64, dc.addr() + 4 * (r0 * ldc) as u64);
        let sk = SimLaunch {
            grid: (ctas, 1, 1),
            block: INFO.block,
            shared_bytes: INFO.shared_bytes_f32,
        };
        let args = [
            a_low,
            db.addr(),
            ws.addr(),
            (m - r0) as u64,
            n as u64,
            k as u64,
            ld_t as u64,
            ldb as u64,
        ];
        sim.launch("stream_k", INFO.symbols[0].sim, &sk, &args)
            .unwrap();
        let fx = SimLaunch {
            grid: (
                ((m - r0).div_ceil(128) * n.div_ceil(128)) as u32,
                FIXUP_SPLIT,
                1,
            ),
            block: fixup::INFO.block,
            shared_bytes: 0,
        };
        let args = [
            ws.addr(),
            c_low,
            (m - r0) as u64,
            n as u64,
            k as u64,
            ldc as u64,
            ctas as u64,
            f(p.alpha),
            f(p.beta),
        ];
        sim.launch("fixup", fixup::SYMBOLS[0].sim, &fx, &args)
            .unwrap();
        let got = sim.read(&dc).unwrap();
        check_elements("stream-K", &p, &a, &b, &c0, &got)
            .unwrap_or_else(|e| panic!("{} {plan:?}: {e}", p.shape()));
    }
}

/// The stream-K plan on 132 SMs: the odd shapes take it, full waves do not.
#[test]
fn stream_k_plans_the_part_empty_waves() {
    use rustile::gemm::stream_k::{plan_with, Plan};
    use rustile::gemm::GemmProblem;
    let plan = |m, n, k| plan_with(&GemmProblem::new(m, n, k), 132, None);
    assert_eq!(
        plan(1531, 1531, 1531),
        Some(Plan {
            dp_rows: 0,
            ctas: 264
        })
    );
    assert_eq!(
        plan(2999, 3001, 2997),
        Some(Plan {
            dp_rows: 22,
            ctas: 264
        })
    );
    assert_eq!(plan(4096, 4096, 4096), None);
    assert_eq!(plan(8192, 8192, 8192), None);
    // Fewer tiles than SMs keep the earlier paths; forced, at most one block per k-tile.
    assert_eq!(plan(777, 1234, 555), None);
    assert_eq!(
        plan_with(&GemmProblem::new(100, 100, 64), 132, Some(Some(264))),
        Some(Plan {
            dp_rows: 0,
            ctas: 4
        })
    );
    // Few k-tiles: at least 4 per block.
    assert_eq!(
        plan(1531, 1531, 64),
        Some(Plan {
            dp_rows: 0,
            ctas: 144
        })
    );
    // The override: off, or a forced grid (at least the band's tiles, at most its k-tiles).
    let p = GemmProblem::new(4096, 4096, 4096);
    assert_eq!(plan_with(&p, 132, Some(None)), None);
    assert_eq!(
        plan_with(&p, 132, Some(Some(100))),
        Some(Plan {
            dp_rows: 24,
            ctas: 256 // at least one block per tile of the band (8 rows × 32)
        })
    );
}
