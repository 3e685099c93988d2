//! GPU tests: every kernel validated on the device at odd sizes, and every bad input that needs
//! a device to express (views at odd addresses, out of memory, missing kernels).
//!
//! Each test is `#[ignore = "needs a GPU"]`: `cargo test` on a machine without one reports them
//! as ignored, never as passed. On a GPU machine: `cargo test --test gpu -- --ignored`, or the
//! staged `.gpu/run.sh tests`.

use rand::rngs::SmallRng;
use rand::SeedableRng;
use rustile::copy::CopyProblem;
use rustile::strided::StridedProblem;
use rustile::transpose::TransposeProblem;
use rustile::{copy, strided, suite, transpose, Backend, Error, Gpu, Problem};

fn gpu() -> Gpu {
    Gpu::new(0).expect("these tests need a GPU")
}

fn fresh_seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

#[test]
#[ignore = "needs a GPU"]
fn every_kernel_matches_its_reference_at_odd_shapes() {
    let backend = Backend::Gpu(gpu());
    let seed = fresh_seed();
    // RUSTILE_FAMILIES=copy,gemm: those families only (the sanitizer sweep runs one process
    // per family side by side).
    let families: Vec<_> = match std::env::var("RUSTILE_FAMILIES") {
        Ok(list) => list
            .split(',')
            .map(|f| rustile::families::find(f).unwrap_or_else(|| panic!("no family `{f}`")))
            .collect(),
        Err(_) => rustile::families::all(),
    };
    let outcomes =
        suite::validate_families(&backend, &families, suite::Scale::Quick, seed, |_, _, _| {});
    let failed: Vec<_> = outcomes.iter().filter(|o| o.error.is_some()).collect();
    let expected: usize = families
        .iter()
        .map(|f| f.cases(&backend, suite::Scale::Quick).len())
        .sum();
    println!(
        "{} kernel × dtype × shape cases ran (seed {seed})",
        outcomes.len()
    );
    assert_eq!(
        outcomes.len(),
        expected,
        "every kernel × dtype × shape must run"
    );
    assert!(failed.is_empty(), "failures (seed {seed}): {failed:#?}");
}

#[test]
#[ignore = "needs a GPU"]
fn headline_transpose_shapes_are_exact() {
    let backend = Backend::Gpu(gpu());
    let mut rng = SmallRng::seed_from_u64(fresh_seed());
    for (rows, cols) in [(8192, 8192), (8191, 8193)] {
        let p = Problem::Transpose(TransposeProblem { rows, cols });
        for k in transpose::variants() {
            // Every dtype it is built for (f32 and f16; pairs: f16 and bf16).
            for e in k.symbols {
                rustile::dispatch_dtype!(e.dtype, T => rustile::memory::validate::<T>(
                    &backend, k, &p, &mut rng
                ))
                .unwrap_or_else(|err| panic!("{} {}: {err}", k.name, e.dtype.name()));
            }
        }
    }
}

/// `copy::BEST` (`vec16_any`) on views: a million and one elements at a common odd offset and
/// at different offsets, f32 and f16, every byte outside the view left alone.
#[test]
#[ignore = "needs a GPU"]
fn dispatcher_copy_is_exact_on_views_at_any_offsets() {
    fn at<T: rustile::DeviceElem>(gpu: &Gpu, n: usize, so: usize, d: usize, rng: &mut SmallRng) {
        let host: Vec<T> = rustile::elem::random_vec(n + 8, rng);
        let src = gpu.upload(&host, "src").unwrap();
        let mut dst = gpu.upload(&vec![T::POISON; n + 8], "dst").unwrap();
        copy::launch(
            gpu,
            copy::BEST,
            &CopyProblem { n },
            &src.slice(so..so + n),
            &mut dst.slice_mut(d..d + n),
        )
        .unwrap();
        let got = gpu.download(&dst, "dst").unwrap();
        let bits = |v: &[T]| bytemuck::cast_slice::<T, u8>(v).to_vec();
        assert!(
            bits(&got[d..d + n]) == bits(&host[so..so + n]),
            "src+{so} dst+{d}"
        );
        let poison = bits(&[T::POISON]);
        for (i, g) in got.iter().enumerate() {
            let outside = i < d || i >= d + n;
            assert!(
                !outside || bits(std::slice::from_ref(g)) == poison,
                "wrote element {i}"
            );
        }
    }
    let gpu = gpu();
    let mut rng = SmallRng::seed_from_u64(fresh_seed());
    for (so, d) in [(0, 0), (1, 1), (1, 0), (0, 3), (3, 2)] {
        at::<f32>(&gpu, 1_000_001, so, d, &mut rng);
        at::<rustile::half::f16>(&gpu, 1_000_001, so, d, &mut rng);
        at::<rustile::half::f16>(&gpu, 1_000_001, 2 * so + 1, 2 * d + 1, &mut rng);
    }
}

#[test]
#[ignore = "needs a GPU"]
fn short_and_misaligned_buffers_are_typed_errors() {
    let gpu = gpu();
    let src = gpu.alloc::<f32>(1024, "src").unwrap();
    let mut dst = gpu.alloc::<f32>(1000, "dst").unwrap();
    let p = CopyProblem { n: 1024 };
    let e = copy::launch(&gpu, copy::BEST, &p, &src, &mut dst).unwrap_err();
    assert!(
        matches!(
            e,
            Error::BufferLength {
                buffer: "dst",
                got: 1000,
                need: 1024,
                ..
            }
        ),
        "{e}"
    );
    // A view starting one f32 in is 4-byte aligned but not 16-byte aligned: the 16-byte-only
    // vector copies (vec16, grid_stride) refuse it, the scalar copy and vec16_any take it.
    let mut big = gpu.alloc::<f32>(1025, "dst").unwrap();
    let mut view = big.slice_mut(1..);
    let vec16 = copy::variants().find(|k| k.name == "vec16").unwrap();
    let e = copy::launch(&gpu, vec16, &p, &src, &mut view).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Misaligned {
                buffer: "dst",
                align: 16,
                ..
            }
        ),
        "{e}"
    );
    let scalar = copy::variants().find(|k| k.name == "scalar").unwrap();
    copy::launch(&gpu, scalar, &p, &src, &mut view).unwrap();
    gpu.synchronize("scalar copy into a view").unwrap();
    // The dispatcher's copy takes the view too (element loads, 16-byte stores).
    copy::launch(&gpu, copy::BEST, &p, &src, &mut view).unwrap();
    gpu.synchronize("vec16_any copy into a view").unwrap();

    let e = strided::launch(
        &gpu,
        strided::BEST,
        &StridedProblem { n: 100, stride: 32 },
        &src,
        &mut dst,
    )
    .unwrap_err();
    assert!(
        matches!(
            e,
            Error::BufferLength {
                buffer: "src",
                need: 3169,
                ..
            }
        ),
        "{e}"
    );

    let e = transpose::launch(
        &gpu,
        transpose::best(&TransposeProblem { rows: 8, cols: 8 }, 4),
        &TransposeProblem { rows: 0, cols: 5 },
        &src,
        &mut dst,
    )
    .unwrap_err();
    assert!(matches!(e, Error::ZeroSize { what: "rows", .. }), "{e}");
    let e = transpose::launch(
        &gpu,
        transpose::best(&TransposeProblem { rows: 8, cols: 8 }, 4),
        &TransposeProblem {
            rows: 1 << 40,
            cols: 1 << 40,
        },
        &src,
        &mut dst,
    )
    .unwrap_err();
    assert!(matches!(e, Error::TooLarge { .. }), "{e}");
}

#[test]
#[ignore = "needs a GPU"]
fn out_of_memory_is_a_typed_error() {
    let gpu = gpu();
    let too_much = gpu.info().total_mem_bytes * 2;
    let e = gpu
        .alloc::<u8>(too_much, "a buffer twice the device")
        .unwrap_err();
    assert!(matches!(e, Error::OutOfMemory { .. }), "{e}");
}

#[test]
#[ignore = "needs a GPU"]
fn a_kernel_missing_from_the_ptx_is_a_typed_error() {
    // A module holding only copy_scalar_f32: asking for any other kernel must say which.
    let full = rustile::ptx::Flavour::Sm80.text();
    let start = full.find(".visible .entry copy_scalar_f32(").unwrap();
    let end = start + full[start..].find("\n}\n").unwrap() + 3;
    let header_end = full.find(".visible .entry").unwrap();
    let only_scalar: &'static str =
        Box::leak(format!("{}{}", &full[..header_end], &full[start..end]).into_boxed_str());
    let gpu = Gpu::with_ptx(0, only_scalar).unwrap();
    let src = gpu.alloc::<f32>(64, "src").unwrap();
    let mut dst = gpu.alloc::<f32>(64, "dst").unwrap();
    let p = CopyProblem { n: 64 };
    let e = copy::launch(&gpu, copy::BEST, &p, &src, &mut dst).unwrap_err();
    assert!(
        matches!(&e, Error::MissingKernel { symbol, .. } if symbol == "copy_vec16_any_f32"),
        "{e}"
    );
    let scalar = copy::variants().find(|k| k.name == "scalar").unwrap();
    copy::launch(&gpu, scalar, &p, &src, &mut dst).unwrap();
    gpu.synchronize("copy_scalar_f32 from a reduced module")
        .unwrap();
}

#[test]
#[ignore = "needs a GPU"]
fn tensor_core_primitives_match_the_simulator_bit_for_bit() {
    use rustile::selftest::{self, TcInputs};
    use rustile_kernels::gpu::MmaKind;
    let gpu = Backend::Gpu(gpu());
    let sim = Backend::Simulator(rustile::sim::Simulator::default());
    for kind in [MmaKind::F16, MmaKind::Bf16] {
        for integers in [true, false] {
            let inputs = TcInputs::random(kind, integers, fresh_seed());
            let on_gpu = selftest::run(&gpu, kind, &inputs).unwrap();
            let on_sim = selftest::run(&sim, kind, &inputs).unwrap();
            let want = inputs.reference(kind);
            let e = selftest::max_error(&on_gpu, &want);
            assert!(e < 1e-6, "{kind:?} integers={integers}: GPU error {e}");
            if integers {
                // Exact arithmetic: the simulator's fragment layouts must reproduce the hardware.
                assert_eq!(on_gpu, on_sim, "{kind:?}: GPU and simulator differ");
            } else {
                for (i, (s, g)) in on_sim.iter().zip(&on_gpu).enumerate() {
                    let e = (s - g).abs() / g.abs().max(1.0);
                    assert!(e < 1e-6, "{kind:?} element {i}: simulator {s} vs GPU {g}");
                }
            }
        }
    }
}

#[test]
#[ignore = "needs a GPU"]
fn gemm_dispatcher_matches_cublas_on_odd_padded_and_skinny_shapes() {
    use rustile::gemm::{self, GemmProblem, Scratch};
    let gpu = gpu();
    let blas = rustile::vendor::cublas(gpu.stream()).unwrap();
    let mut rng = SmallRng::seed_from_u64(fresh_seed());
    let shapes = [
        GemmProblem::new(1000, 1000, 1000),
        GemmProblem::new(333, 517, 2049),
        GemmProblem::new(2048, 2052, 300),
        GemmProblem {
            alpha: 2.0,
            beta: -1.0,
            ..GemmProblem::new(2048, 2052, 77)
        },
        GemmProblem {
            beta: 0.5,
            ..GemmProblem::new(130, 70, 999)
        },
        GemmProblem::new(333, 517, 2049),
        GemmProblem::new(2048, 2052, 300),
        GemmProblem {
            alpha: 2.0,
            beta: -1.0,
            ..GemmProblem::new(2048, 2052, 77)
        },
        GemmProblem {
            beta: 0.5,
            ..GemmProblem::new(130, 70, 999)
        },
        GemmProblem::new(257, 4093, 129),
        GemmProblem::new(4093, 33, 1023),
        // Stream-K: all of it (1531³, 777 × 1234 × 555) and below two plain waves (2999 × 3001).
        GemmProblem {
            beta: 0.5,
            ..GemmProblem::new(1531, 1531, 1531)
        },
        GemmProblem::new(777, 1234, 555),
        GemmProblem::new(2999, 3001, 2997),
        GemmProblem::new(64, 8192, 1),
        GemmProblem {
            alpha: -0.5,
            beta: 2.0,
            lda: 301,
            ldb: 403,
            ldc: 405,
            ..GemmProblem::new(300, 400, 299)
        },
    ];
    for p in shapes {
        let (la, lb, lc) = p.lens().unwrap();
        let a = gpu
            .upload(&rustile::elem::random_vec::<f32>(la, &mut rng), "A")
            .unwrap();
        let b = gpu
            .upload(&rustile::elem::random_vec::<f32>(lb, &mut rng), "B")
            .unwrap();
        let c0 = rustile::elem::random_vec::<f32>(lc, &mut rng);
        let mut c = gpu.upload(&c0, "C").unwrap();
        let mut c_ref = gpu.upload(&c0, "C ref").unwrap();
        gemm::cublas_sgemm(&blas, &p, &a, &b, &mut c_ref).unwrap();
        let chosen = gemm::run(&gpu, &p, &a, &b, &mut c, &mut Scratch::default()).unwrap();
        let got = gpu.download(&c, "C").unwrap();
        let want = gpu.download(&c_ref, "C ref").unwrap();
        let want_mn: Vec<f64> = (0..p.m * p.n)
            .map(|i| want[(i / p.n) * p.ldc + i % p.n] as f64)
            .collect();
        let e = gemm::relative_error(&p, &got, &want_mn);
        assert!(
            e < 4.0 * p.tolerance(),
            "{} via {}: error {e:.2e}",
            p.shape(),
            chosen
        );
    }
    // Bad input: ld shorter than a row, buffers too short, 16-byte variant on odd ld.
    let a = gpu.alloc::<f32>(100, "A").unwrap();
    let b = gpu.alloc::<f32>(100, "B").unwrap();
    let mut c = gpu.alloc::<f32>(100, "C").unwrap();
    let bad_ld = GemmProblem {
        lda: 5,
        ..GemmProblem::new(10, 10, 10)
    };
    let e = gemm::launch(&gpu, gemm::dispatch(&bad_ld, 132), &bad_ld, &a, &b, &mut c).unwrap_err();
    assert!(e.to_string().contains("lda = 5"), "{e}");
    let big = GemmProblem::new(10, 10, 11);
    let e = gemm::launch(
        &gpu,
        &rustile_kernels::gemm::v05_blocktile_2d::INFO,
        &big,
        &a,
        &b,
        &mut c,
    )
    .unwrap_err();
    assert!(
        matches!(
            e,
            Error::BufferLength {
                buffer: "a",
                need: 110,
                ..
            }
        ),
        "{e}"
    );
    let odd = GemmProblem::new(10, 10, 9);
    let e = gemm::launch(
        &gpu,
        &rustile_kernels::gemm::v09_double_buffer::INFO,
        &odd,
        &a,
        &b,
        &mut c,
    )
    .unwrap_err();
    assert!(e.to_string().contains("multiples of 4"), "{e}");
}

#[test]
#[ignore = "needs a GPU"]
fn hgemm_every_variant_matches_float64_at_odd_shapes() {
    // Small and odd shapes for every variant the device runs (wgmma on Hopper), K = 0 and 1,
    // α/β/bias/ReLU, padded pitches; fresh inputs, NaN-poisoned outputs.
    let gpu = gpu();
    let n = rustile::hgemm::cli::validate(&gpu, true, fresh_seed()).unwrap();
    println!("hgemm: {n} cases pass against float64");
    assert!(n >= 100, "only {n} cases ran");
}

#[test]
#[ignore = "needs a GPU"]
fn hgemm_bad_input_is_a_typed_error() {
    use rustile::hgemm::{self, Out, Problem, Variant};
    use rustile::DType;
    let gpu = gpu();
    let p = Problem::new(DType::F16, 64, 64, 64);
    let a = gpu.alloc::<u16>(64 * 64, "a").unwrap();
    let short = gpu.alloc::<u16>(64 * 63, "b").unwrap();
    let mut c = gpu.alloc::<u16>(64 * 64, "c").unwrap();
    // B too short.
    let r = hgemm::run(&gpu, None, &p, &a, &short, &mut Out::Half(&mut c), None);
    assert!(matches!(r, Err(Error::BufferLength { .. })), "{r:?}");
    // Output type differs from the problem's.
    let b = gpu.alloc::<u16>(64 * 64, "b").unwrap();
    let mut cf = gpu.alloc::<f32>(64 * 64, "c").unwrap();
    let r = hgemm::run(&gpu, None, &p, &a, &b, &mut Out::F32(&mut cf), None);
    assert!(matches!(r, Err(Error::Usage(_))), "{r:?}");
    // An unaligned pitch with an aligned-only kernel and padding off: refused; with padding
    // (the default) it runs on an aligned copy of A.
    let mut q = Problem::new(DType::F16, 64, 64, 60);
    q.lda = 61;
    let a2 = gpu.alloc::<u16>(64 * 61, "a").unwrap();
    let never = |v| hgemm::Options {
        variant: Some(v),
        padding: hgemm::Padding::Never,
        ..Default::default()
    };
    let sm90a = gpu.flavour() == rustile::ptx::Flavour::Sm90a;
    for v in [Variant::MmaPipeline, Variant::WgmmaWs] {
        let r = hgemm::prepare_with(&gpu, &never(v), &q, &a2, &b, &mut Out::Half(&mut c), None);
        assert!(
            matches!(r, Err(Error::Unsupported { .. })),
            "{}: {:?}",
            v.name(),
            r.err()
        );
        if v.needs_sm90a() && !sm90a {
            continue;
        }
        let prep =
            hgemm::prepare(&gpu, Some(v), &q, &a2, &b, &mut Out::Half(&mut c), None).unwrap();
        assert_eq!(prep.padding().tag(), "A", "{}", v.name());
    }
    // A view at an odd address: TMA and cp.async need 16 bytes; without padding refused, with
    // it A is copied.
    let view = a.slice(1..);
    let p1 = Problem::new(DType::F16, 63, 64, 64);
    let v = if sm90a {
        Variant::WgmmaWs
    } else {
        Variant::MmaPipeline
    };
    let r = hgemm::prepare_with(
        &gpu,
        &never(v),
        &p1,
        &view,
        &b,
        &mut Out::Half(&mut c),
        None,
    );
    assert!(matches!(r, Err(Error::Unsupported { .. })), "{:?}", r.err());
    let r = hgemm::run(&gpu, Some(v), &p1, &view, &b, &mut Out::Half(&mut c), None);
    assert_eq!(r.unwrap(), v);
    // Padding off, the selection takes the element-load kernel for the unaligned pitch.
    let opts = hgemm::Options {
        padding: hgemm::Padding::Never,
        ..Default::default()
    };
    let prep = hgemm::prepare_with(&gpu, &opts, &q, &a2, &b, &mut Out::Half(&mut c), None).unwrap();
    assert_eq!(prep.variant(), Variant::Mma);
    gpu.synchronize("padded launches").unwrap();
}

#[test]
#[ignore = "needs a GPU"]
fn hgemm_padded_path_is_the_aligned_kernel_bit_for_bit() {
    // Odd pitches wider than the rows, β ≠ 0, bias, ReLU: the padded launch must equal the
    // same kernel run in place on the operands laid out at the scratch pitches (only the
    // pitch changes), bit for bit, and reruns must be bit-identical.
    use rustile::hgemm::{self, BLayout, Out, Padding, Problem};
    use rustile::DType;
    let gpu = gpu();
    for b_layout in [BLayout::RowMajor, BLayout::Transposed] {
        let mut p = Problem::new(DType::Bf16, 301, 203, 97).with_b(b_layout);
        (p.alpha, p.beta, p.relu) = (0.75, 0.5, true);
        (p.lda, p.ldb, p.ldc) = (p.lda + 4, p.ldb + 2, p.ldc + 4);
        let x = hgemm::Inputs::random(&p, true, fresh_seed()).unwrap();
        let bias = gpu.upload(x.bias.as_ref().unwrap(), "bias").unwrap();
        let c0: Vec<u16> = x.c.iter().map(|&v| hgemm::round(p.ty, v)).collect();
        let (a, b) = (
            gpu.upload(&x.a, "a").unwrap(),
            gpu.upload(&x.b, "b").unwrap(),
        );
        let padded = |gpu: &rustile::Gpu| {
            let mut c = gpu.upload(&c0, "c").unwrap();
            let prep =
                hgemm::prepare(gpu, None, &p, &a, &b, &mut Out::Half(&mut c), Some(&bias)).unwrap();
            assert_eq!(prep.padding().tag(), "A,B,C");
            prep.launch(gpu.stream(), &a, &b, &mut Out::Half(&mut c), Some(&bias))
                .unwrap();
            gpu.download(&c, "c").unwrap()
        };
        let got = padded(&gpu);
        assert_eq!(got, padded(&gpu), "reruns are bit-identical");
        // The same operands at the scratch pitches, run in place (nothing to pad).
        let plan = hgemm::PadPlan::new(
            &p,
            hgemm::Variant::select(&gpu, &p, [0, 0], Padding::Auto),
            Padding::Auto,
            [0, 0],
        );
        let q = plan.apply(&p);
        let [la, lb, lc] = q.lens().unwrap();
        let relaid = |op, src: &[u16], len| {
            let mut v = vec![0u16; len];
            plan.copy(&p, op).unwrap().host(src, &mut v).unwrap();
            v
        };
        use hgemm::Operand;
        let qa = gpu.upload(&relaid(Operand::A, &x.a, la), "qa").unwrap();
        let qb = gpu.upload(&relaid(Operand::B, &x.b, lb), "qb").unwrap();
        let mut qc = gpu.upload(&relaid(Operand::C, &c0, lc), "qc").unwrap();
        let prep = hgemm::prepare(
            &gpu,
            None,
            &q,
            &qa,
            &qb,
            &mut Out::Half(&mut qc),
            Some(&bias),
        )
        .unwrap();
        assert!(prep.padding().is_empty());
        prep.launch(gpu.stream(), &qa, &qb, &mut Out::Half(&mut qc), Some(&bias))
            .unwrap();
        let in_place = gpu.download(&qc, "qc").unwrap();
        for i in 0..p.m {
            assert_eq!(
                &got[i * p.ldc..i * p.ldc + p.n],
                &in_place[i * q.ldc..i * q.ldc + p.n],
                "row {i}, B {b_layout:?}"
            );
            // Between rows the caller's C is untouched.
            if i + 1 < p.m {
                assert_eq!(
                    &got[i * p.ldc + p.n..(i + 1) * p.ldc],
                    &c0[i * p.ldc + p.n..(i + 1) * p.ldc]
                );
            }
        }
    }
}

#[test]
#[ignore = "needs a GPU"]
fn hopper_primitives_tma_mbarrier_wgmma_are_exact() {
    let gpu = gpu();
    let r = rustile::selftest::hopper_selftest(&gpu, fresh_seed());
    if gpu.flavour() == rustile::ptx::Flavour::Sm90a {
        let n = r.unwrap();
        assert_eq!(n, 2 * 64 * 128, "both outputs compared");
        println!(
            "TMA (128B swizzle) → mbarrier → wgmma.m64n128k16 → registers and TMA stores: {n} elements exact"
        );
    } else {
        // Elsewhere the sm_90a kernel must be refused by name, not launched.
        assert!(matches!(r, Err(Error::Unsupported { .. })), "{r:?}");
    }
}

#[test]
#[ignore = "needs a GPU"]
fn tensor_ceiling_kernels_do_exactly_their_iterations() {
    use rustile::hgemm::peak::{self as hgemm_peak, Pipe};
    use rustile::DType;
    let gpu = gpu();
    let sim = rustile::sim::Simulator::default();
    for ty in [DType::F16, DType::Bf16] {
        for pipe in [Pipe::MmaSync, Pipe::Wgmma] {
            if pipe == Pipe::Wgmma && gpu.flavour() != rustile::ptx::Flavour::Sm90a {
                assert!(matches!(
                    hgemm_peak::outputs(&gpu, pipe, ty, 1),
                    Err(Error::Unsupported { .. })
                ));
                continue;
            }
            let one = hgemm_peak::outputs(&gpu, pipe, ty, 1).unwrap();
            let three = hgemm_peak::outputs(&gpu, pipe, ty, 3).unwrap();
            hgemm_peak::check_linear(pipe.name(), &one, &three).unwrap();
            if pipe == Pipe::MmaSync {
                // Every block computes the same sums; the first must match the simulator.
                let on_sim = hgemm_peak::outputs_sim(&sim, ty, 3).unwrap();
                assert_eq!(
                    three[..on_sim.len()],
                    on_sim[..],
                    "{ty:?}: GPU vs simulator"
                );
            }
        }
    }
}

#[test]
#[ignore = "needs a GPU"]
fn alloc_is_zero_filled() {
    let gpu = gpu();
    // Dirty some memory first, free it, then allocate the same size again.
    let dirty = gpu.upload(&vec![f32::NAN; 1 << 20], "dirty").unwrap();
    drop(dirty);
    let z = gpu.alloc::<f32>(1 << 20, "zeroed").unwrap();
    assert!(gpu
        .download(&z, "zeroed")
        .unwrap()
        .iter()
        .all(|&v| v == 0.0));
    let z = gpu.alloc::<u16>(12_345, "zeroed").unwrap();
    assert!(gpu.download(&z, "zeroed").unwrap().iter().all(|&v| v == 0));
}

#[test]
#[ignore = "needs a GPU"]
fn cublas_baselines_work_at_k_0_and_check_lengths() {
    use rustile::gemm::{self, GemmProblem};
    use rustile::hgemm::{self, Out};
    let gpu = gpu();
    let blas = rustile::vendor::cublas(gpu.stream()).unwrap();
    let mut rng = SmallRng::seed_from_u64(fresh_seed());
    // SGEMM at K = 0 is C = β·C (cuBLAS got lda = 0 before and answered Err(Usage)).
    let p = GemmProblem {
        beta: 0.5,
        ..GemmProblem::new(16, 24, 0)
    };
    let a = gpu.alloc::<f32>(1, "A").unwrap();
    let b = gpu.alloc::<f32>(1, "B").unwrap();
    let c0 = rustile::elem::random_vec::<f32>(16 * 24, &mut rng);
    let mut c = gpu.upload(&c0, "C").unwrap();
    gemm::cublas_sgemm(&blas, &p, &a, &b, &mut c).unwrap();
    let got = gpu.download(&c, "C").unwrap();
    assert!(got.iter().zip(&c0).all(|(g, o)| *g == 0.5 * o));
    gemm::check_elements("cuBLAS K = 0", &p, &[0.0], &[0.0], &c0, &got).unwrap();
    // A C shorter than the shape is a typed error, not a read past it.
    let mut short = gpu.alloc::<f32>(16 * 24 - 1, "C").unwrap();
    let r = gemm::cublas_sgemm(&blas, &p, &a, &b, &mut short);
    assert!(
        matches!(r, Err(Error::BufferLength { buffer: "c", .. })),
        "{r:?}"
    );
    // The tensor-core baseline at K = 0, B transposed (ldb = k = 0 before), and short inputs.
    let h = hgemm::Problem {
        beta: 2.0,
        ..hgemm::Problem::new(rustile::DType::F16, 32, 16, 0).with_b(hgemm::BLayout::Transposed)
    };
    let ones: Vec<u16> = vec![hgemm::round(h.ty, 1.0); 32 * 16];
    let mut hc = gpu.upload(&ones, "C").unwrap();
    let (ha, hb) = (
        gpu.alloc::<u16>(1, "A").unwrap(),
        gpu.alloc::<u16>(1, "B").unwrap(),
    );
    hgemm::cublas(&blas, gpu.stream(), &h, &ha, &hb, &mut Out::Half(&mut hc)).unwrap();
    let got = gpu.download(&hc, "C").unwrap();
    assert!(got.iter().all(|&v| hgemm::widen(h.ty, v) == 2.0));
    // Another stream than the handle's is refused (the buffers would be ordered on the wrong
    // one), with buffers that pass every other check.
    let other = gpu.context().new_stream().unwrap();
    let r = hgemm::cublas(&blas, &other, &h, &ha, &hb, &mut Out::Half(&mut hc));
    assert!(matches!(r, Err(Error::Usage(_))), "{r:?}");
    let h = hgemm::Problem::new(rustile::DType::F16, 32, 16, 8);
    let r = hgemm::cublas(&blas, gpu.stream(), &h, &ha, &hb, &mut Out::Half(&mut hc));
    assert!(matches!(r, Err(Error::BufferLength { .. })), "{r:?}");
}

#[test]
#[ignore = "needs a GPU"]
fn dispatcher_runs_a_misaligned_view_of_a_small_product_split_over_k() {
    use rustile::gemm::{self, GemmProblem, Scratch};
    let gpu = gpu();
    // One 128 × 128 tile: the dispatcher runs the small-tile kernel (any pitch, no padding)
    // split over K, on the caller's A even where it starts 4 bytes past an allocation.
    let p = GemmProblem::new(126, 128, 4096);
    assert!(gemm::small_tile(&p, gpu.info().sm_count).is_some_and(|s| s > 1));
    let (la, lb, lc) = p.lens().unwrap();
    let a = gpu.upload(&vec![1.0f32; la + 1], "A").unwrap();
    let b = gpu.upload(&vec![1.0f32; lb], "B").unwrap();
    for a in [a.slice(1..), a.slice(..la)] {
        let mut c = gpu.upload(&vec![f32::NAN; lc], "C").unwrap();
        let ran = gemm::run(&gpu, &p, &a, &b, &mut c, &mut Scratch::default()).unwrap();
        assert_eq!(ran, "small_tile_split_k");
        let got = gpu.download(&c, "C").unwrap();
        assert!(got.iter().all(|&v| v == 4096.0));
    }
}

#[test]
#[ignore = "needs a GPU"]
fn hgemm_prepared_launch_rechecks_the_buffers_it_is_given() {
    use rustile::hgemm::{self, Out, Problem, Variant};
    use rustile::DType;
    let gpu = gpu();
    let p = Problem::new(DType::F16, 128, 128, 64);
    let [la, lb, lc] = p.lens().unwrap();
    let a = gpu.alloc::<u16>(la, "a").unwrap();
    let b = gpu.alloc::<u16>(lb, "b").unwrap();
    let mut c = gpu.alloc::<u16>(lc, "c").unwrap();
    let variants: &[Variant] = if gpu.flavour() == rustile::ptx::Flavour::Sm90a {
        &[Variant::Mma, Variant::MmaPipeline, Variant::WgmmaWs]
    } else {
        &[Variant::Mma, Variant::MmaPipeline]
    };
    for &v in variants {
        let prep = hgemm::prepare(&gpu, Some(v), &p, &a, &b, &mut Out::Half(&mut c), None).unwrap();
        prep.launch(gpu.stream(), &a, &b, &mut Out::Half(&mut c), None)
            .unwrap();
        // Short buffers at launch are refused, whatever `prepare` saw.
        let short = gpu.alloc::<u16>(lb - 1, "short b").unwrap();
        let r = prep.launch(gpu.stream(), &a, &short, &mut Out::Half(&mut c), None);
        assert!(
            matches!(r, Err(Error::BufferLength { .. })),
            "{}: {r:?}",
            v.name()
        );
        let mut short_c = gpu.alloc::<u16>(lc - 1, "short c").unwrap();
        let r = prep.launch(gpu.stream(), &a, &b, &mut Out::Half(&mut short_c), None);
        assert!(
            matches!(r, Err(Error::BufferLength { .. })),
            "{}: {r:?}",
            v.name()
        );
        // C of another type than the problem's.
        let mut cf = gpu.alloc::<f32>(lc, "c f32").unwrap();
        let r = prep.launch(gpu.stream(), &a, &b, &mut Out::F32(&mut cf), None);
        assert!(matches!(r, Err(Error::Usage(_))), "{}: {r:?}", v.name());
        // Other A/B buffers of the right size: fine for the mma kernels; wgmma_ws's tensor
        // maps hold the prepared addresses, so it refuses them.
        let a2 = gpu.alloc::<u16>(la, "a2").unwrap();
        let r = prep.launch(gpu.stream(), &a2, &b, &mut Out::Half(&mut c), None);
        match v {
            Variant::WgmmaWs => assert!(matches!(r, Err(Error::Usage(_))), "{r:?}"),
            _ => r.unwrap(),
        }
    }
    // Padded A (odd lda): its tensor map holds the scratch, so another A of the problem's
    // length is fine, a short one is not; B, read in place, must still be the prepared one.
    let mut q = Problem::new(DType::F16, 128, 128, 63);
    q.lda = 63;
    let [la, lb, lc] = q.lens().unwrap();
    let (a, b) = (
        gpu.alloc::<u16>(la, "a").unwrap(),
        gpu.alloc::<u16>(lb, "b").unwrap(),
    );
    let mut c = gpu.alloc::<u16>(lc, "c").unwrap();
    for &v in &variants[1..] {
        let prep = hgemm::prepare(&gpu, Some(v), &q, &a, &b, &mut Out::Half(&mut c), None).unwrap();
        assert_eq!(prep.padding().tag(), "A");
        let a2 = gpu.alloc::<u16>(la, "a2").unwrap();
        prep.launch(gpu.stream(), &a2, &b, &mut Out::Half(&mut c), None)
            .unwrap();
        let short = gpu.alloc::<u16>(la - 1, "short a").unwrap();
        let r = prep.launch(gpu.stream(), &short, &b, &mut Out::Half(&mut c), None);
        assert!(matches!(r, Err(Error::BufferLength { .. })), "{r:?}");
        let b2 = gpu.alloc::<u16>(lb, "b2").unwrap();
        let r = prep.launch(gpu.stream(), &a, &b2, &mut Out::Half(&mut c), None);
        match v {
            Variant::WgmmaWs => assert!(matches!(r, Err(Error::Usage(_))), "{r:?}"),
            _ => r.unwrap(),
        }
    }
    gpu.synchronize("prepared launches").unwrap();
}

/// The wide tile's TMA-store epilogue (α, ReLU, rows and columns off the tile) against the
/// same kernel's direct stores: a launch into another C buffer than the prepared one stores
/// directly, with the same arithmetic, so the two outputs must agree bit for bit.
#[test]
#[ignore = "needs a GPU"]
fn hgemm_tma_store_epilogue_matches_direct_stores() {
    use rustile::hgemm::{self, BLayout, Out, Problem, Variant};
    use rustile::DType;
    let gpu = gpu();
    if gpu.flavour() != rustile::ptx::Flavour::Sm90a || !hgemm::tma_store() {
        println!("SKIPPED: needs sm_90a and the TMA-store epilogue on (RUSTILE_HGEMM_TMA_STORE is not 0)");
        return;
    }
    for (ty, b) in [
        (DType::F16, BLayout::RowMajor),
        (DType::Bf16, BLayout::Transposed),
    ] {
        let mut p = Problem::new(ty, 1000, 1096, 520).with_b(b);
        (p.alpha, p.relu, p.ldc) = (-0.75, true, 1104);
        let [la, lb, lc] = p.lens().unwrap();
        let mut seed = 0x9e37_79b9_u32;
        let mut bits = |n: usize| -> Vec<u16> {
            (0..n)
                .map(|_| {
                    seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                    let v = ((seed >> 16) % 9) as f32 - 4.0;
                    match ty {
                        DType::F16 => half::f16::from_f32(v).to_bits(),
                        _ => half::bf16::from_f32(v).to_bits(),
                    }
                })
                .collect()
        };
        let a = gpu.upload(&bits(la), "a").unwrap();
        let bm = gpu.upload(&bits(lb), "b").unwrap();
        let mut c1 = gpu.upload(&vec![0x7e00u16; lc], "c1").unwrap();
        let mut c2 = gpu.upload(&vec![0x7e00u16; lc], "c2").unwrap();
        let opts = hgemm::Options {
            variant: Some(Variant::WgmmaWs),
            tile: Some(hgemm::WsTile::WIDE),
            ..Default::default()
        };
        let prep =
            hgemm::prepare_with(&gpu, &opts, &p, &a, &bm, &mut Out::Half(&mut c1), None).unwrap();
        assert!(prep.tma_store(), "{}: the staged epilogue", p.shape());
        prep.launch(gpu.stream(), &a, &bm, &mut Out::Half(&mut c1), None)
            .unwrap();
        prep.launch(gpu.stream(), &a, &bm, &mut Out::Half(&mut c2), None)
            .unwrap();
        let (g1, g2) = (
            gpu.download(&c1, "c1").unwrap(),
            gpu.download(&c2, "c2").unwrap(),
        );
        // Inside C the two agree; the pitch's gap columns keep the poison in both.
        assert_eq!(g1, g2, "{}", p.shape());
        let row = &g1[..p.ldc];
        assert!(
            row[..p.n].iter().all(|&v| v != 0x7e00),
            "a column of row 0 not written"
        );
        assert!(row[p.n..].iter().all(|&v| v == 0x7e00), "TMA wrote past N");
        assert!(g1.iter().any(|&v| v != 0 && v != 0x8000), "all zero");
    }
}

/// The wide tile with the stream-K tail (`wgmma_sk`) against float64 on a product it cuts
/// (22 × 11 tiles: one whole wave of 132, then 110 tiles' k-iterations shared by every block):
/// a 16-bit C through its TMA-store epilogue, an f32 C with β and a bias through its direct
/// stores; and a launch its 16-bit kernel cannot stage (another C) refused, not run.
#[test]
#[ignore = "needs a GPU"]
fn hgemm_stream_k_tail_validates_where_it_cuts_tiles() {
    use rustile::hgemm::{self, BLayout, Out, Problem, Variant};
    use rustile::{DType, Error};
    let gpu = gpu();
    if gpu.flavour() != rustile::ptx::Flavour::Sm90a || gpu.info().sm_count != 132 {
        println!("SKIPPED: needs sm_90a with 132 SMs (the case is sized for its waves)");
        return;
    }
    let opts = hgemm::Options {
        variant: Some(Variant::WgmmaWs),
        tile: Some(hgemm::WsTile::WIDE),
        stream_k_tail: Some(true),
        ..Default::default()
    };
    for (ty, out, beta, bias, b) in [
        (DType::F16, DType::F16, 0.0, false, BLayout::RowMajor),
        (DType::Bf16, DType::Bf16, 0.0, false, BLayout::Transposed),
        (DType::Bf16, DType::F32, 0.5, true, BLayout::RowMajor),
        (DType::F16, DType::F32, 0.0, false, BLayout::Transposed),
    ] {
        let mut p = Problem::new(ty, 2700, 2600, 700).with_b(b);
        (p.out, p.beta) = (out, beta);
        let r = hgemm::validate_with(&gpu, &opts, &p, bias, 21)
            .unwrap_or_else(|e| panic!("{} {}: {e}", p.shape(), out.name()));
        assert!(
            r.checked > 0,
            "{} {}: nothing compared",
            p.shape(),
            out.name()
        );
    }
    // The tail was taken, and its 16-bit kernel refuses a C it has no tensor map for.
    let p = Problem::new(DType::F16, 2700, 2600, 700);
    let [la, lb, lc] = p.lens().unwrap();
    let a = gpu.upload(&vec![0x3c00u16; la], "a").unwrap();
    let bm = gpu.upload(&vec![0x3c00u16; lb], "b").unwrap();
    let mut c1 = gpu.upload(&vec![0u16; lc], "c1").unwrap();
    let mut c2 = gpu.upload(&vec![0u16; lc], "c2").unwrap();
    let prep =
        hgemm::prepare_with(&gpu, &opts, &p, &a, &bm, &mut Out::Half(&mut c1), None).unwrap();
    assert!(prep.stream_k_tail() && prep.tma_store());
    let e = prep
        .launch(gpu.stream(), &a, &bm, &mut Out::Half(&mut c2), None)
        .unwrap_err();
    assert!(matches!(e, Error::Usage(_)), "{e}");
    // All ones: every element of C is K.
    prep.launch(gpu.stream(), &a, &bm, &mut Out::Half(&mut c1), None)
        .unwrap();
    let got = gpu.download(&c1, "c1").unwrap();
    assert!(got
        .iter()
        .all(|&v| half::f16::from_bits(v).to_f32() == 700.0));
}

#[test]
#[ignore = "needs a GPU"]
fn dispatcher_runs_the_one_wave_tile_on_unaligned_views() {
    use rustile::gemm::{self, GemmProblem, Scratch};
    let gpu = gpu();
    // 130 tiles of 64 × 128 for 132 SMs at pitches that are not 16-byte multiples (A 555, B
    // 1235, C 1237): the any-pitch kernel on the caller's operands, views starting 4 bytes into
    // their allocations too. Small integers, so every sum is exact in f32; α, β ≠ 1.
    let p = GemmProblem {
        ldb: 1235,
        ldc: 1237,
        alpha: 0.5,
        beta: -2.0,
        ..GemmProblem::new(777, 1234, 555)
    };
    assert!(gemm::rows_any(&p, 132));
    let (la, lb, lc) = p.lens().unwrap();
    let ha: Vec<f32> = (0..la + 1).map(|i| ((i * 7) % 11) as f32 - 5.0).collect();
    let hb: Vec<f32> = (0..lb + 1).map(|i| ((i * 5) % 9) as f32 - 4.0).collect();
    let hc: Vec<f32> = (0..lc + 1).map(|i| (i % 13) as f32).collect();
    let a = gpu.upload(&ha, "A").unwrap();
    let b = gpu.upload(&hb, "B").unwrap();
    for off in [1usize, 0] {
        let mut c = gpu.upload(&hc, "C").unwrap();
        let (av, bv) = (a.slice(off..off + la), b.slice(off..off + lb));
        let mut cv = c.slice_mut(off..off + lc);
        let ran = gemm::run(&gpu, &p, &av, &bv, &mut cv, &mut Scratch::default()).unwrap();
        if gpu.info().sm_count == 132 {
            assert_eq!(ran, "rows_any");
        }
        let got = gpu.download(&c, "C").unwrap();
        for i in 0..p.m {
            for j in 0..p.n {
                let mut s = 0.0f64;
                for q in 0..p.k {
                    s += ha[off + i * p.lda + q] as f64 * hb[off + q * p.ldb + j] as f64;
                }
                let want = 0.5 * s - 2.0 * hc[off + i * p.ldc + j] as f64;
                let g = got[off + i * p.ldc + j];
                assert!(g as f64 == want, "off {off} ({i}, {j}): {g} != {want}");
            }
        }
        // Nothing outside the view's m × n written (the pitch's gap columns and the ends).
        for (idx, (&g, &h)) in got.iter().zip(&hc).enumerate() {
            let inside = idx >= off && (idx - off) % p.ldc < p.n && idx - off < lc;
            assert!(inside || g == h, "off {off}: wrote element {idx}");
        }
    }
}

#[test]
#[ignore = "needs a GPU"]
fn dispatcher_runs_stream_k_on_views_at_any_offset() {
    use rustile::gemm::{self, stream_k, GemmProblem, Scratch};
    let gpu = gpu();
    // 144 tiles of 128 × 128, one part-full wave: stream-K, whose Aᵀ is rewritten and whose B
    // is copied 16 bytes at a time — padded here, as the view starts 4 bytes past its allocation.
    let p = GemmProblem {
        ldb: 1532,
        ..GemmProblem::new(1531, 1531, 555)
    };
    assert!(stream_k::plan(&p, gpu.info().sm_count).is_some());
    let (la, lb, lc) = p.lens().unwrap();
    let a = gpu.upload(&vec![1.0f32; la + 1], "A").unwrap();
    let b = gpu.upload(&vec![0.5f32; lb + 1], "B").unwrap();
    for (a, b) in [(a.slice(1..), b.slice(1..)), (a.slice(..la), b.slice(..lb))] {
        let mut c = gpu.upload(&vec![f32::NAN; lc], "C").unwrap();
        let ran = gemm::run(&gpu, &p, &a, &b, &mut c, &mut Scratch::default()).unwrap();
        assert!(ran.contains("stream_k"), "{ran}");
        let got = gpu.download(&c, "C").unwrap();
        assert!(got.iter().all(|&v| v == 277.5), "{:?}", &got[..4]);
    }
}
