//! The skinny SGEMM kernels (`gemv_rows`, `small_m`, `outer`) and the dispatcher's choice of
//! them: every kernel at odd skinny shapes in the simulator (M or N = 1, K = 0, 1, 2, 3, 16,
//! 17, pitches wider than the rows and not multiples of 4, α/β with NaN-poisoned C where
//! β = 0), bit-identical reruns, and on the GPU (`#[ignore]`d) the dispatcher against float64.

use rustile::backend::Backend;
use rustile::gemm::{self, GemmProblem};
use rustile::sim::Simulator;
use rustile_kernels::gemm::{v13_gemv_rows, v14_small_m, v15_outer};
use rustile_kernels::registry::KernelInfo;

const KERNELS: [&KernelInfo; 3] = [&v13_gemv_rows::INFO, &v14_small_m::INFO, &v15_outer::INFO];

fn seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

fn with(p: GemmProblem, ld: (usize, usize, usize), alpha: f32, beta: f32) -> GemmProblem {
    GemmProblem {
        lda: ld.0,
        ldb: ld.1,
        ldc: ld.2,
        alpha,
        beta,
        ..p
    }
}

/// Odd skinny shapes: each kernel is general, so every kernel runs every shape.
fn shapes() -> Vec<GemmProblem> {
    let g = GemmProblem::new;
    vec![
        g(1, 1, 1),
        g(1, 37, 19),
        g(1, 130, 300),
        g(4, 65, 129),
        g(5, 9, 1),
        g(37, 1, 19),
        g(130, 1, 600),
        g(20, 1, 1031),
        g(9, 3, 129),
        g(33, 5, 2),
        g(33, 129, 1),
        g(65, 131, 2),
        g(70, 70, 16),
        g(37, 133, 17),
        // Every pitch a multiple of 4: the 16-byte paths of A, B and C throughout.
        g(4, 128, 256),
        g(64, 4, 512),
        with(g(64, 128, 8), (8, 128, 128), 1.0, -1.0),
        with(g(2, 8, 0), (0, 8, 8), 1.0, 0.75),
        with(g(3, 33, 17), (20, 35, 37), 0.5, -1.5),
        with(g(17, 4, 17), (19, 5, 6), -1.0, 0.25),
        with(g(40, 1, 33), (33, 1, 1), 2.0, 1.0),
        with(g(40, 130, 3), (5, 135, 134), -1.0, 0.5),
        with(g(36, 129, 3), (4, 132, 132), 1.0, 0.5),
        with(g(1, 65, 40), (40, 68, 65), 0.25, 0.0),
    ]
}

#[test]
fn skinny_kernels_match_float64_at_odd_shapes_in_the_simulator() {
    let backend = Backend::Simulator(Simulator::default());
    let base = seed();
    let mut ran = 0;
    for (i, p) in shapes().iter().enumerate() {
        for kernel in KERNELS {
            let s = base.wrapping_add(i as u64);
            gemm::validate(&backend, kernel, p, s).unwrap_or_else(|e| {
                panic!(
                    "{} {} α={} β={} (seed {s}): {e}",
                    kernel.name,
                    p.shape(),
                    p.alpha,
                    p.beta
                )
            });
            ran += 1;
        }
    }
    assert_eq!(ran, 3 * shapes().len());
}

#[test]
fn skinny_kernels_rerun_bit_identical() {
    let backend = Backend::Simulator(Simulator::default());
    let s = seed();
    for (kernel, p) in KERNELS.into_iter().zip([
        GemmProblem::new(40, 2, 700),
        GemmProblem::new(3, 70, 700),
        GemmProblem::new(40, 70, 15),
    ]) {
        let [.., first] = gemm::output(&backend, kernel, &p, s).unwrap();
        let [.., second] = gemm::output(&backend, kernel, &p, s).unwrap();
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&first), bits(&second), "{} {}", kernel.name, p.shape());
        assert!(
            first.iter().all(|x| x.is_finite()),
            "{} {}",
            kernel.name,
            p.shape()
        );
    }
}

#[test]
fn the_dispatcher_picks_the_skinny_kernels_by_shape() {
    let name = |m, n, k| gemm::skinny(&GemmProblem::new(m, n, k)).map(|k| k.name);
    assert_eq!(name(1, 16384, 8192), Some("small_m"));
    assert_eq!(name(4, 12288, 12288), Some("small_m"));
    assert_eq!(name(16384, 1, 8192), Some("gemv_rows"));
    assert_eq!(name(4093, 3, 1023), Some("gemv_rows"));
    assert_eq!(name(12288, 12288, 2), Some("outer"));
    assert_eq!(name(64, 8192, 1), Some("outer"));
    assert_eq!(name(100, 100, 16), Some("outer"));
    assert_eq!(name(100, 100, 17), None);
    assert_eq!(name(5, 5, 0), None);
    for (m, n, k) in [(777, 1234, 555), (1531, 1531, 1531), (256, 256, 256)] {
        assert_eq!(name(m, n, k), None, "{m}x{n}x{k}");
    }
}

#[test]
fn one_wave_and_a_bit_of_128x128_tiles_takes_the_4_warp_ring() {
    let pick = |m, n, k| gemm::dispatch(&GemmProblem::new(m, n, k), 132).name;
    // 144 tiles of 128×128 for 132 SMs.
    assert_eq!(pick(1531, 1531, 1531), "kgroup_ring_kg1");
    assert_eq!(pick(1536, 1536, 1536), "kgroup_ring_kg1");
    assert!(gemm::one_wave_and_a_bit(
        &GemmProblem::new(1536, 1536, 64),
        132
    ));
    // 196 tiles: still under 1.5 per SM; 256 and 576: the 128×128 warp tile as before.
    assert_eq!(pick(1792, 1792, 100), "kgroup_ring_kg1");
    assert_eq!(pick(2048, 2048, 2048), "warptile");
    assert_eq!(pick(2999, 3001, 2997), "warptile");
    // Under one tile per SM: the 8-warp ring as before.
    assert_eq!(pick(1000, 1000, 1000), "kgroup_ring");
    assert_eq!(pick(777, 1234, 555), "kgroup_ring");
}

#[test]
#[ignore = "needs a GPU"]
fn the_dispatcher_runs_skinny_shapes_within_float64_bounds_on_the_gpu() {
    use rustile::backend::Buf;
    let gpu = rustile::Gpu::new(0).expect("this test needs a GPU");
    let backend = Backend::Gpu(gpu);
    let Backend::Gpu(gpu) = &backend else {
        unreachable!()
    };
    let g = GemmProblem::new;
    let problems = [
        (g(1, 16384, 1024), "small_m"),
        (g(16384, 1, 1024), "gemv_rows"),
        (g(4, 3000, 3001), "small_m"),
        (with(g(3001, 2999, 2), (2, 2999, 2999), 1.0, 0.5), "outer"),
        (g(1, 1, 8192), "small_m"),
        (
            with(g(2, 4097, 1031), (1033, 4099, 4100), -1.0, 0.0),
            "small_m",
        ),
        (with(g(4097, 3, 1027), (1027, 5, 7), 0.5, 2.0), "gemv_rows"),
        (with(g(1500, 1001, 17), (17, 1001, 1003), 1.0, 0.0), "any"),
        (
            with(g(1531, 1531, 1531), (1531, 1531, 1533), 1.0, 0.5),
            "nt_stream_k",
        ),
        (
            with(g(777, 1234, 555), (555, 1235, 1237), 0.5, -2.0),
            "rows_any",
        ),
        (
            with(g(1000, 1000, 1000), (1001, 1000, 1000), 1.0, 0.0),
            "rows_any",
        ),
        (
            with(g(999, 640, 777), (777, 641, 643), 1.0, 0.5),
            "rows_any",
        ),
        (g(768, 768, 768), "rows_any"),
        (g(1100, 1100, 64), "small_tile"),
        (
            with(g(1200, 1300, 96), (97, 1301, 1302), 1.0, 0.5),
            "small_tile",
        ),
        (g(704, 704, 704), "small_tile_split_k"),
        (with(g(1500, 1001, 16), (17, 1001, 1003), 1.0, 0.0), "outer"),
    ];
    let s = seed();
    for (p, want) in problems {
        let mut chosen = "";
        let run = gemm::output_with(&backend, "gemm/auto", &p, s, |a, b, c| match (a, b, c) {
            (Buf::Gpu(a), Buf::Gpu(b), Buf::Gpu(c)) => {
                chosen = gemm::run(gpu, &p, a, b, c, &mut gemm::Scratch::default())?;
                Ok(())
            }
            _ => unreachable!(),
        })
        .unwrap();
        gemm::check_output("gemm/auto", &p, &run)
            .unwrap_or_else(|e| panic!("{} via {chosen} (seed {s}): {e}", p.shape()));
        if want != "any" {
            assert_eq!(chosen, want, "{}", p.shape());
        }
    }
}

#[test]
fn under_a_wave_of_128_by_128_tiles_takes_the_any_pitch_kernel() {
    let pick = |m, n, k| gemm::rows_any(&GemmProblem::new(m, n, k), 132);
    // Fewer 128 × 128 tiles than SMs, at least as many 64 × 64 tiles (the small tile would
    // not split K), and its own 64 × 128 tiles in one wave (130, 128, 72, 91, 88, 80) or
    // filling two to 80 % or more (1300²: 231 of 264, 1400²: 242).
    assert!(pick(777, 1234, 555));
    assert!(pick(1000, 1000, 1000));
    assert!(pick(768, 768, 768));
    assert!(pick(832, 832, 832));
    assert!(pick(700, 900, 600));
    assert!(pick(999, 640, 777));
    assert!(pick(1024, 1024, 64));
    assert!(pick(1300, 1300, 700));
    assert!(pick(1400, 1400, 1400));
    // A second wave of 64 × 128 tiles filled under 80 % (1100² and 1152²: 162 of 264;
    // 1200 × 1300: 209): the small tile instead.
    assert!(!pick(1100, 1100, 64));
    assert!(!pick(1100, 1100, 512));
    assert!(!pick(1152, 1152, 1152));
    assert!(!pick(1200, 1300, 96));
    // Fewer 64 × 64 tiles than SMs (the small tile's split-K: 704³ 121, 600 × 800 130), or
    // enough 128 × 128 tiles for the NT pipeline and stream-K (1531³: 144), or K = 0.
    assert!(!pick(704, 704, 704));
    assert!(!pick(600, 800, 2048));
    assert!(!pick(512, 512, 512));
    assert!(!pick(1531, 1531, 1531));
    assert!(!pick(777, 1234, 0));
}

#[test]
fn small_and_one_wave_and_a_bit_products_take_the_small_tile_in_one_launch() {
    let pick = |m, n, k| gemm::small_tile(&GemmProblem::new(m, n, k), 132);
    // Fewer 64 × 64 tiles than SMs: split over K (slices ≥ 32, at most 8).
    assert_eq!(pick(256, 256, 256), Some(8));
    assert_eq!(pick(512, 512, 512), Some(5));
    assert_eq!(pick(126, 128, 4096), Some(8));
    // One k-slice only: the small tile where A's rows need padding, else the old path.
    assert_eq!(pick(64, 64, 41), Some(1));
    assert_eq!(pick(64, 64, 40), None);
    // Enough 64 × 64 tiles: one launch, whole K, where the rows would need padding; aligned
    // rows keep the k-group ring (measured faster at 1000³).
    assert_eq!(pick(777, 1234, 555), Some(1));
    assert_eq!(pick(1531, 1531, 1531), Some(1));
    // Aligned, under a wave of 128 × 128 tiles, rows_any's second wave under 80 %: unsplit.
    assert_eq!(pick(1100, 1100, 64), Some(1));
    assert_eq!(pick(1152, 1152, 1152), Some(1));
    assert_eq!(pick(1200, 1300, 96), Some(1));
    assert_eq!(pick(1000, 1000, 1000), None);
    assert_eq!(pick(1400, 1400, 1400), None);
    assert_eq!(pick(1000, 1000, 1000), None);
    assert_eq!(pick(1024, 1024, 1024), None);
    // A full wave of 128 × 128 tiles (not one and a bit): the 128-row kernels.
    assert_eq!(pick(2048, 2048, 2048), None);
    assert_eq!(pick(2999, 3001, 2997), None);
    assert_eq!(pick(4096, 4096, 4096), None);
    assert_eq!(pick(16, 16, 0), None);
}
