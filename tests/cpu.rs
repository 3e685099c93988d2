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
    use rustile::gemm::{check_elements, GemmProblem};
    let mut rng = SmallRng::seed_from_u64(seed());
    let n = 37;
    let p = GemmProblem::new(n, n, n);
    let a: Vec<f32> = random_vec(n * n, &mut rng);
    let b: Vec<f32> = random_vec(n * n, &mut rng);
    let mut c = vec![f32::NAN; n * n];
    rustile::gemm::crossover::cpu_sgemm(n, &a, &b, &mut c).unwrap();
    check_elements("cpu_sgemm", &p, &a, &b, &c, &c).unwrap();
    // A short buffer is refused, not read past.
    let e = rustile::gemm::crossover::cpu_sgemm(n, &a[..n * n - 1], &b, &mut c).unwrap_err();
    assert!(matches!(e, Error::BufferLength { buffer: "a", .. }), "{e}");
}

#[test]
fn lens_are_checked_for_overflow_and_zero() {
    use rustile::gemm::GemmProblem;
    use rustile::hgemm;
    // Strided: n = 0 holds nothing (and `check_shape` refuses it); an overflowing span is an
    // error, never usize::MAX.
    let s = |n, stride| Problem::Strided(StridedProblem { n, stride });
    assert_eq!(s(0, 4).lens().unwrap(), (0, 0));
    assert_eq!(s(3, 4).lens().unwrap(), (9, 3));
    assert!(matches!(
        s(0, 4).check_shape(),
        Err(Error::ZeroSize { what: "n", .. })
    ));
    for p in [s(4096, 99_999_999_999_999_999), s(usize::MAX, 2)] {
        assert!(matches!(p.lens(), Err(Error::TooLarge { .. })), "{p:?}");
    }
    let t = Problem::Transpose(TransposeProblem {
        rows: 1 << 33,
        cols: 1 << 33,
    });
    assert!(matches!(t.lens(), Err(Error::TooLarge { .. })));
    // SGEMM and the tensor-core problem: spans wrap nowhere.
    let g = GemmProblem {
        lda: usize::MAX / 2,
        ..GemmProblem::new(4, 4, 4)
    };
    assert!(matches!(g.lens(), Err(Error::TooLarge { .. })));
    assert_eq!(GemmProblem::new(3, 5, 0).lens().unwrap(), (0, 0, 15));
    assert!(matches!(
        GemmProblem::new(1 << 32, 1, 1).check_shape(),
        Err(Error::TooLarge { .. })
    ));
    let h = hgemm::Problem {
        ldc: usize::MAX / 2,
        ..hgemm::Problem::new(rustile::DType::F16, 4, 4, 4)
    };
    assert!(matches!(h.lens(), Err(Error::TooLarge { .. })));
    assert!(matches!(h.bytes(), Err(Error::TooLarge { .. })));
    let h = hgemm::Problem::new(rustile::DType::F16, 3, 5, 7);
    assert_eq!(h.lens().unwrap(), [21, 35, 15]);
    assert_eq!(h.bytes().unwrap(), 2 * (21 + 35 + 15));
    assert!(matches!(
        rustile::check::total_bytes("x", &[(usize::MAX / 2, 4)]),
        Err(Error::TooLarge { .. })
    ));
}

#[test]
fn the_simulator_refuses_what_it_cannot_hold_before_taking_memory() {
    use rustile::backend::Backend;
    use rustile::sim::{SimLimits, Simulator};
    let sim = Simulator::new(SimLimits {
        max_memory_bytes: 1000,
        ..SimLimits::default()
    });
    let a = sim.alloc::<f32>(200, "a").unwrap();
    assert_eq!(sim.used_bytes(), 800);
    sim.check_fits(200, "b").unwrap();
    let e = sim.alloc::<f32>(51, "b").unwrap_err();
    assert!(matches!(e, Error::OutOfMemory { bytes: 204, .. }), "{e}");
    sim.free(a);
    assert_eq!(sim.used_bytes(), 0);
    let full = sim.alloc::<f32>(250, "b").unwrap();
    assert!(matches!(
        sim.alloc::<u8>(1, "c"),
        Err(Error::OutOfMemory { .. })
    ));
    sim.free(full);
    // A validation case asks before it builds its inputs: 10¹¹ elements are refused at once.
    let backend = Backend::Simulator(Simulator::default());
    let p = Problem::Copy(CopyProblem { n: 100_000_000_000 });
    let e =
        rustile::memory::check_before_alloc::<f32>(&backend, copy::BEST, &p, "case").unwrap_err();
    assert!(matches!(e, Error::OutOfMemory { .. }), "{e}");
    // Writes past a buffer are refused (not written into the rest of its allocation).
    let b = sim.alloc::<u16>(4, "small").unwrap();
    let e = sim.write(&b, &[1u16; 5]).unwrap_err();
    assert!(matches!(e, Error::Usage(_)), "{e}");
    sim.write(&b, &[7u16; 4]).unwrap();
    assert_eq!(sim.read(&b).unwrap(), vec![7u16; 4]);
}

#[test]
fn cublas_configs_are_checked_and_valid_at_k_0() {
    use rustile::gemm::{cublas_sgemm_config, GemmProblem};
    use rustile::hgemm::{self, cublas_dims, BLayout};
    // K = 0: C = β·C. cuBLAS refuses a leading dimension below max(1, rows) (its `Err(Usage)`
    // on the H200 from lda = 0); every one is at least 1 here.
    let p = GemmProblem {
        beta: 0.5,
        ..GemmProblem::new(16, 16, 0)
    };
    let cfg = cublas_sgemm_config(&p, 1, 1, 256).unwrap();
    assert_eq!((cfg.m, cfg.n, cfg.k), (16, 16, 0));
    assert_eq!((cfg.lda, cfg.ldb, cfg.ldc), (16, 1, 16));
    // cuBLAS's A is our B (n × k column-major, ld ≥ max(1, n)), its B our A (k × m, ld ≥
    // max(1, k)), its C our C (n × m, ld ≥ max(1, n)).
    let p = GemmProblem::new(30, 20, 10);
    let cfg = cublas_sgemm_config(&p, 300, 200, 600).unwrap();
    assert_eq!(
        (cfg.m, cfg.n, cfg.k, cfg.lda, cfg.ldb, cfg.ldc),
        (20, 30, 10, 20, 10, 20)
    );
    for (a, b, c, buffer) in [
        (299, 200, 600, "a"),
        (300, 199, 600, "b"),
        (300, 200, 599, "c"),
    ] {
        let e = cublas_sgemm_config(&p, a, b, c).unwrap_err();
        assert!(
            matches!(e, Error::BufferLength { buffer: got, .. } if got == buffer),
            "{e}"
        );
    }
    let e = cublas_sgemm_config(&GemmProblem::new(1 << 31, 1, 1), 1 << 31, 1, 1 << 31);
    assert!(matches!(e, Err(Error::TooLarge { .. })), "{e:?}");
    let e = cublas_sgemm_config(&GemmProblem::new(0, 1, 1), 1, 1, 1);
    assert!(matches!(e, Err(Error::ZeroSize { what: "m", .. })), "{e:?}");
    let bad_ld = GemmProblem {
        lda: 3,
        ..GemmProblem::new(4, 4, 4)
    };
    assert!(matches!(
        cublas_sgemm_config(&bad_ld, 64, 64, 64),
        Err(Error::Usage(_))
    ));
    // The tensor-core baseline: B transposed for cuBLAS exactly when it is stored Nᵀ, every
    // leading dimension at least 1 (K = 0 with Bᵀ has ldb = k = 0).
    let h = hgemm::Problem::new(rustile::DType::F16, 8, 8, 0).with_b(BLayout::Transposed);
    assert_eq!(cublas_dims(&h), (true, [1, 1, 8]));
    let h = hgemm::Problem::new(rustile::DType::F16, 8, 24, 16);
    assert_eq!(cublas_dims(&h), (false, [24, 16, 24]));
}

/// What an f32 kernel computes for element (i, j): one FMA per k in order, then α, β.
fn sgemm_f32(p: &rustile::gemm::GemmProblem, a: &[f32], b: &[f32], c0: &[f32]) -> Vec<f32> {
    let mut c = c0.to_vec();
    for i in 0..p.m {
        for j in 0..p.n {
            let acc = (0..p.k).fold(0f32, |acc, kk| {
                a[i * p.lda + kk].mul_add(b[kk * p.ldb + j], acc)
            });
            let old = if p.beta == 0.0 {
                0.0
            } else {
                p.beta * c0[i * p.ldc + j]
            };
            c[i * p.ldc + j] = p.alpha * acc + old;
        }
    }
    c
}

#[test]
fn sgemm_check_catches_one_wrong_element_the_norm_hides() {
    use rustile::gemm::{check_elements, relative_error, GemmProblem};
    let p = GemmProblem::new(200, 300, 1000);
    let mut rng = SmallRng::seed_from_u64(0x5eed);
    let (la, lb, lc) = p.lens().unwrap();
    let a: Vec<f32> = random_vec(la, &mut rng);
    let b: Vec<f32> = random_vec(lb, &mut rng);
    let c0 = vec![f32::NAN; lc];
    let mut got = sgemm_f32(&p, &a, &b, &c0);
    // An f32 kernel's own rounding passes the per-element bound …
    assert_eq!(
        check_elements("f32", &p, &a, &b, &c0, &got).unwrap(),
        60_000
    );
    // … one element off by 0.05 does not, and is named.
    got[123 * p.ldc + 234] += 0.05;
    let e = check_elements("planted", &p, &a, &b, &c0, &got).unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, Error::Mismatch { .. }), "{text}");
    assert!(
        text.contains("C[123][234]") && text.contains("1 of 60000 elements wrong"),
        "{text}"
    );
    // The relative Frobenius norm this check replaces lets it through.
    let want = p.reference(&a, &b, &c0);
    assert!(relative_error(&p, &got, &want) < p.tolerance());
    // So does NaN: never within any bound.
    got[123 * p.ldc + 234] = f32::NAN;
    assert!(check_elements("nan", &p, &a, &b, &c0, &got).is_err());
}

#[test]
fn sgemm_check_tolerates_cancellation_at_1x1xk() {
    use rustile::gemm::{check_elements, relative_error, GemmProblem};
    let k = 4096;
    let p = GemmProblem::new(1, 1, k);
    let mut rng = SmallRng::seed_from_u64(7);
    let a: Vec<f32> = random_vec(k, &mut rng);
    let mut b: Vec<f32> = random_vec(k, &mut rng);
    // The last term cancels the sum of the others (to f32 precision): C ≈ 0, Σ|a·b| ≈ k/4.
    let rest: f64 = (0..k - 1).map(|i| a[i] as f64 * b[i] as f64).sum();
    b[k - 1] = (-rest / a[k - 1] as f64) as f32;
    let c0 = vec![f32::NAN; 1];
    let got = sgemm_f32(&p, &a, &b, &c0);
    let want = p.reference(&a, &b, &c0);
    assert!(want[0].abs() < 1e-3, "{}", want[0]);
    // Relative to a result near 0 the f32 rounding looks huge; relative to the terms it is not.
    assert!(relative_error(&p, &got, &want) > p.tolerance());
    check_elements("cancelling", &p, &a, &b, &c0, &got).unwrap();
}
