//! Host-side tests, no GPU needed: CPU references against float64 naive versions, every
//! argument check a launcher makes, device selection, and the harness's arithmetic.

use rand::rngs::SmallRng;
use rand::SeedableRng;
use rustile::bench;
use rustile::check::BufArg;
use rustile::copy::{self, CopyProblem};
use rustile::elem::random_vec;
use rustile::harness::{rotation_sets, Stats};
use rustile::ptx::Flavour;
use rustile::strided::{self, StridedProblem};
use rustile::transpose::{self, TransposeProblem};
use rustile::{suite, Error, Family, Gpu, KernelInfo, Problem};

fn seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

fn buf(name: &'static str, len: usize) -> BufArg {
    BufArg {
        name,
        len,
        addr: 0x7f00_0000_0000,
    }
}

fn kernel(family: Family, name: &str) -> &'static KernelInfo {
    rustile_kernels::registry::find(family, name).unwrap()
}

#[test]
fn references_match_float64_naive_versions_at_every_validation_shape() {
    let seed = seed();
    let checks = suite::cpu_checks(seed);
    let failed: Vec<_> = checks.iter().filter(|c| c.error.is_some()).collect();
    assert!(failed.is_empty(), "seed {seed}: {failed:#?}");
    let references = checks
        .iter()
        .filter(|c| c.what.starts_with("reference"))
        .count();
    let shapes: usize = Family::MEMORY
        .iter()
        .map(|f| rustile::memory::validation_problems(*f).len())
        .sum();
    assert_eq!(references, shapes);
}

#[test]
fn references_are_real_permutations_of_random_data() {
    // Not the identity by accident: the transpose of a non-square random matrix differs from
    // its input, and transposing twice gives it back.
    let mut rng = SmallRng::seed_from_u64(seed());
    let p = TransposeProblem { rows: 37, cols: 91 };
    let a: Vec<f32> = random_vec(37 * 91, &mut rng);
    let t = p.reference(&a);
    assert_ne!(a, t);
    assert_eq!(TransposeProblem { rows: 91, cols: 37 }.reference(&t), a);
    let s = StridedProblem { n: 10, stride: 3 }.reference(&a);
    assert_eq!(s, (0..10).map(|i| a[3 * i]).collect::<Vec<_>>());
}

#[test]
fn copy_checks_lengths_alignment_zero_and_overflow() {
    let vec16 = kernel(Family::Copy, "vec16");
    let scalar = kernel(Family::Copy, "scalar");
    let p = CopyProblem { n: 1000 };
    p.check::<f32>(vec16, buf("src", 1000), buf("dst", 1000))
        .unwrap();
    let e = p
        .check::<f32>(vec16, buf("src", 1000), buf("dst", 999))
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::BufferLength {
                buffer: "dst",
                got: 999,
                need: 1000,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("copy/vec16"), "{e}");
    let odd = BufArg {
        addr: 0x7f00_0000_0004,
        ..buf("src", 1000)
    };
    let e = p.check::<f32>(vec16, odd, buf("dst", 1000)).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Misaligned {
                buffer: "src",
                align: 16,
                addr: 0x7f00_0000_0004,
                ..
            }
        ),
        "{e}"
    );
    p.check::<f32>(scalar, odd, buf("dst", 1000)).unwrap();
    let e = p
        .check::<f32>(
            scalar,
            BufArg {
                addr: 0x7f00_0000_0002,
                ..odd
            },
            buf("dst", 1000),
        )
        .unwrap_err();
    assert!(matches!(e, Error::Misaligned { align: 4, .. }), "{e}");
    let e = CopyProblem { n: 0 }
        .check::<f32>(vec16, buf("src", 0), buf("dst", 0))
        .unwrap_err();
    assert!(matches!(e, Error::ZeroSize { what: "n", .. }), "{e}");
    let e = CopyProblem { n: usize::MAX / 2 }
        .check::<f32>(vec16, buf("src", usize::MAX), buf("dst", usize::MAX))
        .unwrap_err();
    assert!(matches!(e, Error::TooLarge { .. }), "{e}");
}

#[test]
fn strided_checks_source_span_and_overflow() {
    let k = strided::BEST;
    let p = StridedProblem { n: 100, stride: 32 };
    p.check::<f32>(k, buf("src", 3169), buf("dst", 100))
        .unwrap();
    let e = p
        .check::<f32>(k, buf("src", 3168), buf("dst", 100))
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::BufferLength {
                buffer: "src",
                got: 3168,
                need: 3169,
                ..
            }
        ),
        "{e}"
    );
    let e = StridedProblem { n: 100, stride: 0 }
        .check::<f32>(k, buf("src", 100), buf("dst", 100))
        .unwrap_err();
    assert!(matches!(e, Error::ZeroSize { what: "stride", .. }), "{e}");
    let e = StridedProblem {
        n: 1 << 40,
        stride: 1 << 40,
    }
    .check::<f32>(k, buf("src", usize::MAX), buf("dst", usize::MAX))
    .unwrap_err();
    assert!(matches!(e, Error::TooLarge { .. }), "{e}");
}

#[test]
fn transpose_checks_shape_grid_and_index_limits() {
    for k in transpose::variants() {
        let p = TransposeProblem { rows: 33, cols: 65 };
        p.check::<f32>(k, buf("src", 33 * 65), buf("dst", 33 * 65))
            .unwrap();
        let e = p
            .check::<f32>(k, buf("src", 33 * 65), buf("dst", 33 * 64))
            .unwrap_err();
        assert!(
            matches!(e, Error::BufferLength { buffer: "dst", .. }),
            "{e}"
        );
        let e = TransposeProblem { rows: 5, cols: 0 }
            .check::<f32>(k, buf("src", 5), buf("dst", 5))
            .unwrap_err();
        assert!(matches!(e, Error::ZeroSize { what: "cols", .. }), "{e}");
        // rows · cols overflows.
        let e = TransposeProblem {
            rows: 1 << 33,
            cols: 1 << 33,
        }
        .check::<f32>(k, buf("src", usize::MAX), buf("dst", usize::MAX))
        .unwrap_err();
        assert!(matches!(e, Error::TooLarge { .. }), "{e}");
        // Fits in memory arithmetic, but not in the grid's y dimension (65535 tile rows).
        let e = TransposeProblem {
            rows: 65536 * 64,
            cols: 1,
        }
        .check::<f32>(k, buf("src", usize::MAX), buf("dst", usize::MAX))
        .unwrap_err();
        assert!(matches!(e, Error::TooLarge { .. }), "{}: {e}", k.name);
    }
}

#[test]
fn every_variant_has_a_grid_covering_odd_shapes() {
    for k in transpose::variants() {
        let (rows, cols) = (8191usize, 8193usize);
        let (gx, gy, gz) = TransposeProblem { rows, cols }.grid(k);
        let rustile_kernels::registry::Launch::Tiles { tile, .. } = k.launch else {
            panic!("{} is not tiled", k.name)
        };
        assert!(gx * tile.1 as u64 >= cols as u64 && gy * tile.0 as u64 >= rows as u64 && gz == 1);
    }
    for k in copy::variants() {
        let (gx, _, _) = CopyProblem { n: 1_000_003 }.grid(k, 4, 132);
        assert!(gx >= 1);
    }
}

#[test]
fn flavour_follows_compute_capability() {
    assert_eq!(Flavour::for_compute_capability(7, 5), None);
    assert_eq!(Flavour::for_compute_capability(8, 0), Some(Flavour::Sm80));
    assert_eq!(Flavour::for_compute_capability(8, 9), Some(Flavour::Sm80));
    assert_eq!(Flavour::for_compute_capability(9, 0), Some(Flavour::Sm90a));
    assert_eq!(Flavour::for_compute_capability(10, 0), Some(Flavour::Sm80));
    let e = Error::UnsupportedComputeCapability {
        device: "T4".into(),
        major: 7,
        minor: 5,
    };
    assert!(
        e.to_string().contains("7.5") && e.to_string().contains("8.0"),
        "{e}"
    );
}

#[test]
fn missing_gpu_is_a_typed_error() {
    // A device ordinal no machine has: without a driver NoDriver, with one NoDevice.
    match Gpu::new(usize::MAX) {
        Err(Error::NoDriver) => {}
        Err(Error::NoDevice(why)) => {
            assert!(
                std::env::var("RUSTILE_EXPECT_NO_GPU").is_err(),
                "a CUDA driver was found on a machine declared GPU-less"
            );
            assert!(why.contains("asked for"), "{why}");
        }
        Err(e) => panic!("unexpected error: {e}"),
        Ok(_) => panic!("device usize::MAX opened"),
    }
    if std::env::var("RUSTILE_EXPECT_NO_GPU").is_ok() {
        assert!(matches!(Gpu::new(0), Err(Error::NoDriver)));
    }
}

#[test]
fn missing_kernel_is_detected_in_ptx_text() {
    let text = Flavour::Sm80.text();
    assert!(rustile::ptx::has_entry(text, "copy_vec16_f32"));
    assert!(!rustile::ptx::has_entry(text, "copy_vec16"));
    assert!(!rustile::ptx::has_entry(text, "copy_vec16_f64"));
}

#[test]
fn problem_dispatch_and_size_parsing() {
    let p = bench::parse_sizes(Family::Transpose, "8191x8193, 4X5").unwrap();
    assert_eq!(
        p,
        vec![
            Problem::Transpose(TransposeProblem {
                rows: 8191,
                cols: 8193
            }),
            Problem::Transpose(TransposeProblem { rows: 4, cols: 5 })
        ]
    );
    assert_eq!(bench::parse_sizes(Family::Strided, "64").unwrap().len(), 6);
    assert!(matches!(
        bench::parse_sizes(Family::Copy, "12,abc"),
        Err(Error::Usage(_))
    ));
    assert!(matches!(
        bench::parse_sizes(Family::Transpose, "12"),
        Err(Error::Usage(_))
    ));
    assert_eq!(Problem::Copy(CopyProblem { n: 10 }).bytes_moved(4), 80);
}

#[test]
fn timing_statistics_and_rotation() {
    let s = Stats::from_samples(vec![3.0, 1.0, 2.0, 10.0]);
    assert_eq!(
        (s.median_ms, s.min_ms, s.max_ms, s.reps),
        (2.5, 1.0, 10.0, 4)
    );
    assert_eq!(Stats::from_samples(vec![5.0, 1.0, 3.0]).median_ms, 3.0);
    let l2 = 60 << 20;
    assert_eq!(rotation_sets(l2, 1 << 30), 1);
    assert_eq!(rotation_sets(l2, 64 << 20), 3);
    assert_eq!(rotation_sets(l2, 1 << 20), 180);
}

#[test]
fn cpu_baseline_of_the_crossover_study_is_correct() {
    use rustile::gemm::{relative_error, GemmProblem};
    let mut rng = SmallRng::seed_from_u64(seed());
    let n = 37;
    let p = GemmProblem::new(n, n, n);
    let a: Vec<f32> = random_vec(n * n, &mut rng);
    let b: Vec<f32> = random_vec(n * n, &mut rng);
    let mut c = vec![f32::NAN; n * n];
    rustile::gemm::crossover::cpu_sgemm(n, &a, &b, &mut c);
    let e = relative_error(&p, &c, &p.reference(&a, &b, &c));
    assert!(e < p.tolerance(), "error {e:.2e}");
}
