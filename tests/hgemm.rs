//! Tensor-core GEMM checks that need no GPU: the `mma.sync` kernels run in the simulator at odd
//! shapes against float64, the software conversions the simulator uses match the `half` crate,
//! and bad problems are typed errors. The `wgmma` kernel is checked on the GPU (`tests/gpu.rs`)
//! and in its SASS (`tests/ptx.rs`).

use rustile::hgemm::{self, BLayout, Problem, Variant};
use rustile::sim::Simulator;
use rustile::DType;
use rustile::Error;
use rustile_kernels::hgemm::soft;

fn seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(7)
}

#[test]
fn mma_kernels_match_float64_in_the_simulator() {
    let sim = Simulator::default();
    let s = seed();
    let mut n = 0;
    for (i, (p, bias)) in hgemm::sim_cases().iter().enumerate() {
        for v in [Variant::Mma, Variant::MmaPipeline] {
            if v == Variant::MmaPipeline && !p.tma_ok([0, 0]) {
                // Aligned-only kernel; the refusal is tested below.
                continue;
            }
            let r = hgemm::validate_sim(&sim, v, p, *bias, s + i as u64)
                .unwrap_or_else(|e| panic!("{} {:?}: {e}", v.name(), p));
            assert!(r.checked == p.m * p.n, "every element compared");
            n += 1;
        }
    }
    println!("hgemm: {n} simulated cases pass against float64 (seed {s})");
}

#[test]
fn pipeline_tunings_match_float64_in_the_simulator() {
    // Each tuning configuration (f16 in and out) at shapes off its tile, with K = 0, 1 and a K
    // that wraps its ring; and the epilogue.
    let sim = Simulator::default();
    let s = seed();
    let tunings = rustile_kernels::hgemm::v02_mma_pipeline::TUNING;
    assert!(!tunings.is_empty());
    let mut n = 0;
    for t in tunings {
        for b in [BLayout::RowMajor, BLayout::Transposed] {
            for (i, (m, nn, k)) in [(1, 8, 8), (260, 72, 232), (33, 136, 0), (17, 16, 1)]
                .into_iter()
                .enumerate()
            {
                let mut p = Problem::new(DType::F16, m, nn, k).with_b(b);
                // cp.async needs pitches that are multiples of 8 elements.
                p.lda = p.lda.next_multiple_of(8);
                p.ldb = p.ldb.next_multiple_of(8);
                let r = hgemm::validate_sim_tuned(
                    &sim,
                    Variant::MmaPipeline,
                    Some(t),
                    &p,
                    false,
                    s + i as u64,
                )
                .unwrap_or_else(|e| panic!("{} {:?}: {e}", t.name, p));
                assert_eq!(r.checked, p.m * p.n);
                n += 1;
            }
            let mut p = Problem::new(DType::F16, 67, 144, 56).with_b(b);
            p.alpha = 2.0;
            p.beta = -0.5;
            p.relu = true;
            p.ldc = 150;
            hgemm::validate_sim_tuned(&sim, Variant::MmaPipeline, Some(t), &p, true, s)
                .unwrap_or_else(|e| panic!("{} {:?}: {e}", t.name, p));
            n += 1;
        }
        // Built for f16 → f16 only: anything else is a typed refusal naming the configuration.
        let p = Problem::new(DType::Bf16, 64, 64, 64);
        match hgemm::pipeline_geometry(&p, Some(t)) {
            Err(Error::Unsupported { what, .. }) => assert!(what.contains(t.name), "{what}"),
            other => panic!("{}: bf16 gave {other:?}", t.name),
        }
    }
    println!("hgemm: {n} simulated tuning cases pass against float64 (seed {s})");
}

#[test]
fn pipeline_shared_accesses_are_conflict_free_and_loads_coalesced() {
    // The swizzle's promise, for both B layouts and f16/bf16: every `cp.async` store and every
    // `ldmatrix` phase is one wavefront per 128 bytes (no bank conflict), and every global load
    // uses all the bytes of the sectors it touches.
    for ty in [DType::F16, DType::Bf16] {
        for b in [BLayout::RowMajor, BLayout::Transposed] {
            let p = Problem::new(ty, 256, 256, 256).with_b(b);
            let a = hgemm::analyze_sim(Variant::MmaPipeline, None, &p, seed()).unwrap();
            let sites = a.sites();
            assert!(sites
                .iter()
                .any(|s| s.space == "shared" && s.kind == "load"));
            for s in sites {
                if s.space == "shared" {
                    assert_eq!(s.worst_degree, 1, "{ty:?} {b:?}: {s:?}");
                } else if s.kind == "load" {
                    assert_eq!(s.efficiency(), 1.0, "{ty:?} {b:?}: {s:?}");
                }
            }
        }
    }
}

#[test]
fn the_mma_ceiling_kernel_does_exactly_its_iterations_in_the_simulator() {
    // The ceiling kernel is timed, not compared: what it must prove is that it does the math
    // it is credited with. Three iterations give exactly three times one (integer operands).
    let sim = Simulator::default();
    for ty in [DType::F16, DType::Bf16] {
        let one = rustile::hgemm::peak::outputs_sim(&sim, ty, 1).unwrap();
        let three = rustile::hgemm::peak::outputs_sim(&sim, ty, 3).unwrap();
        rustile::hgemm::peak::check_linear("peak_mma", &one, &three).unwrap();
        // And the check catches a kernel that skipped an iteration.
        let two = rustile::hgemm::peak::outputs_sim(&sim, ty, 2).unwrap();
        assert!(rustile::hgemm::peak::check_linear("peak_mma", &one, &two).is_err());
    }
}

#[test]
fn unaligned_pitches_go_to_the_element_load_kernel() {
    let sim = Simulator::default();
    // lda = 37: no 16-byte rows. The pipelined kernel refuses; the basic one is right.
    let p = Problem::new(DType::F16, 45, 24, 37);
    assert!(matches!(
        hgemm::validate_sim(&sim, Variant::MmaPipeline, &p, false, seed()),
        Err(Error::Unsupported { .. })
    ));
    hgemm::validate_sim(&sim, Variant::Mma, &p, false, seed()).unwrap();
    // wgmma has no simulator model: a typed refusal, not a crash.
    assert!(matches!(
        hgemm::validate_sim(
            &sim,
            Variant::WgmmaWs,
            &Problem::new(DType::F16, 64, 64, 64),
            false,
            1
        ),
        Err(Error::Unsupported { .. })
    ));
}

#[test]
fn a_wrong_element_is_caught() {
    // The comparison must fail on a single wrong element and on NaN.
    let p = Problem::new(DType::Bf16, 3, 4, 5);
    let x = hgemm::Inputs {
        a: hgemm::random_bits(p.ty, 15, 1),
        b: hgemm::random_bits(p.ty, 20, 2),
        c: vec![0.0; 12],
        bias: None,
    };
    let all: Vec<(usize, usize)> = (0..3).flat_map(|i| (0..4).map(move |j| (i, j))).collect();
    let mut good: Vec<f32> = all
        .iter()
        .map(|&(i, j)| {
            let r = hgemm::reference_at(&p, &x, i, j).0 as f32;
            hgemm::widen(p.ty, hgemm::round(p.ty, r))
        })
        .collect();
    hgemm::compare(&p, &x, &good, &all).unwrap();
    good[5] += 0.05;
    assert!(hgemm::compare(&p, &x, &good, &all).is_err());
    good[5] = f32::NAN;
    assert!(hgemm::compare(&p, &x, &good, &all).is_err());
}

#[test]
fn bad_problems_are_typed_errors() {
    let mut p = Problem::new(DType::F16, 10, 10, 10);
    p.lda = 9;
    assert!(matches!(p.check(), Err(Error::Usage(_))));
    let p = Problem::new(DType::F16, 0, 10, 10);
    assert!(matches!(p.check(), Err(Error::ZeroSize { .. })));
    let p = Problem::new(DType::F16, 10, 1 << 31, 10);
    assert!(matches!(p.check(), Err(Error::TooLarge { .. })));
    let mut p = Problem::new(DType::F16, 10, 10, 10);
    p.alpha = f32::NAN;
    assert!(matches!(p.check(), Err(Error::Usage(_))));
    // K = 0 is legal: C = β·C.
    Problem::new(DType::F16, 10, 10, 0).check().unwrap();
    // Transposed B needs ldb ≥ k.
    let mut p = Problem::new(DType::Bf16, 8, 8, 16).with_b(BLayout::Transposed);
    p.ldb = 8;
    assert!(p.check().is_err());
    // Inputs are f16 or bf16; the output is f32 or the input type.
    let p = Problem::new(DType::F32, 8, 8, 8);
    assert!(matches!(p.check(), Err(Error::Unsupported { .. })));
    let mut p = Problem::new(DType::F16, 8, 8, 8);
    p.out = DType::Bf16;
    assert!(matches!(p.check(), Err(Error::Usage(_))));
}

#[test]
fn simulator_conversions_match_the_half_crate() {
    // Every f16 bit pattern widens exactly (NaN to NaN).
    for h in 0..=u16::MAX {
        let want = half::f16::from_bits(h).to_f32();
        let got = soft::f16_to_f32(h);
        assert!(
            got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
            "f16 {h:#06x}: {got} vs {want}"
        );
    }
    // Rounding f32 → f16 / bf16: random values over many binades, plus the edges.
    let mut x = 0x1234_5678u32;
    let mut vals: Vec<f32> = vec![
        0.0,
        -0.0,
        65504.0,
        65520.0,
        1e-8,
        5.96e-8,
        2.98e-8,
        6.1e-5,
        f32::INFINITY,
        f32::MAX,
        f32::MIN_POSITIVE,
    ];
    for _ in 0..200_000 {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        let v = f32::from_bits(x);
        if !v.is_nan() {
            vals.push(v);
        }
    }
    for v in vals {
        assert_eq!(
            soft::f32_to_f16(v),
            half::f16::from_f32(v).to_bits(),
            "f16 of {v:e}"
        );
        assert_eq!(
            soft::f32_to_bf16(v),
            half::bf16::from_f32(v).to_bits(),
            "bf16 of {v:e}"
        );
    }
    assert!(half::f16::from_bits(soft::f32_to_f16(f32::NAN)).is_nan());
    assert!(half::bf16::from_bits(soft::f32_to_bf16(f32::NAN)).is_nan());
}

#[test]
fn the_selection_pads_unaligned_operands_instead_of_falling_back() {
    use rustile::hgemm::Padding;
    use rustile::ptx::Flavour;
    // 4095³ at tight pitches: every row odd. Aligned problem for comparison.
    let odd = Problem::new(DType::F16, 4095, 4095, 4095);
    let even = Problem::new(DType::F16, 4096, 4096, 4096);
    for (flavour, fast) in [
        (Flavour::Sm90a, Variant::WgmmaWs),
        (Flavour::Sm80, Variant::MmaPipeline),
    ] {
        for padding in [Padding::Auto, Padding::Inputs] {
            assert_eq!(Variant::choose(flavour, &odd, [0, 0], padding), fast);
            // A view off a 16-byte boundary is padded too.
            assert_eq!(Variant::choose(flavour, &even, [2, 0], padding), fast);
        }
        assert_eq!(
            Variant::choose(flavour, &even, [0, 0], Padding::Never),
            fast
        );
        assert_eq!(
            Variant::choose(flavour, &odd, [0, 0], Padding::Never),
            Variant::Mma
        );
        assert_eq!(
            Variant::choose(flavour, &even, [0, 8], Padding::Never),
            Variant::Mma
        );
    }
}

#[test]
fn the_pad_plan_copies_only_what_the_kernel_cannot_read_in_place() {
    use rustile::hgemm::{Copy2d, Operand, PadPlan, Padding};
    let ws = Variant::WgmmaWs;
    // 3001×3003×2999, tight: A (3001 × 2999), B (2999 × 3003) and C (3001 × 3003) all odd.
    let p = Problem::new(DType::Bf16, 3001, 3003, 2999);
    let plan = PadPlan::new(&p, ws, Padding::Auto, [0, 0]);
    assert_eq!(
        (plan.a, plan.b, plan.c),
        (Some(3000), Some(3008), Some(3008))
    );
    assert_eq!(plan.tag(), "A,B,C");
    let q = plan.apply(&p);
    assert_eq!((q.m, q.n, q.k), (p.m, p.n, p.k), "only the pitches change");
    assert_eq!((q.lda, q.ldb, q.ldc), (3000, 3008, 3008));
    assert!(q.tma_ok([0, 0]));
    // The copies: whole rows of the caller's columns, 2 bytes each (C in the output type).
    assert_eq!(
        plan.copy(&p, Operand::A),
        Some(Copy2d {
            rows: 3001,
            width: 2999 * 2,
            src_pitch: 2999 * 2,
            dst_pitch: 3000 * 2
        })
    );
    let mut f32_out = p.with_b(BLayout::Transposed);
    f32_out.out = DType::F32;
    let plan_t = PadPlan::new(&f32_out, ws, Padding::Auto, [0, 0]);
    // Bᵀ is N × K: rows of 2999, pitch 3000; f32 C rows pad to a multiple of 4 elements.
    assert_eq!((plan_t.b, plan_t.c), (Some(3000), Some(3004)));
    assert_eq!(
        plan_t.copy(&f32_out, Operand::C).map(Copy2d::reversed),
        Some(Copy2d {
            rows: 3001,
            width: 3003 * 4,
            src_pitch: 3004 * 4,
            dst_pitch: 3003 * 4
        })
    );
    // Inputs only: C in place whatever its pitch. Never, or the element-load kernel: nothing.
    let inputs = PadPlan::new(&p, ws, Padding::Inputs, [0, 0]);
    assert_eq!(
        (inputs.a.is_some(), inputs.b.is_some(), inputs.c),
        (true, true, None)
    );
    assert!(PadPlan::new(&p, ws, Padding::Never, [0, 0]).is_empty());
    assert!(PadPlan::new(&p, Variant::Mma, Padding::Auto, [0, 0]).is_empty());
    // Aligned rows: only a misaligned base is copied; an even ldc keeps the pair stores.
    let mut even = Problem::new(DType::F16, 64, 72, 80);
    even.ldc = 74;
    assert!(PadPlan::new(&even, ws, Padding::Auto, [0, 0]).is_empty());
    let view = PadPlan::new(&even, Variant::MmaPipeline, Padding::Auto, [0, 2]);
    assert_eq!((view.a, view.b, view.c), (None, Some(72), None));
    assert_eq!(view.tag(), "B");
}

#[test]
fn padding_sizes_and_pitches_are_typed_errors_before_anything_is_allocated() {
    use rustile::hgemm::{PadPlan, Padding};
    let ws = Variant::WgmmaWs;
    // K = 2³¹ − 1 passes the problem's check, but its aligned pitch does not.
    let mut p = Problem::new(DType::F16, 2, 8, (1 << 31) - 1);
    p.check().unwrap();
    let plan = PadPlan::new(&p, ws, Padding::Auto, [0, 0]);
    assert!(matches!(plan.scratch_lens(&p), Err(Error::TooLarge { .. })));
    // Scratch bytes that overflow usize: three ~2⁶² spans, C in f32.
    p = Problem::new(DType::F16, (1 << 31) - 1, (1 << 31) - 9, (1 << 31) - 9);
    p.out = DType::F32;
    p.check().unwrap();
    let plan = PadPlan::new(&p, ws, Padding::Auto, [0, 0]);
    plan.scratch_lens(&p).unwrap();
    assert!(matches!(
        plan.scratch_bytes(&p),
        Err(Error::TooLarge { .. })
    ));
    // The driver's 2-D copy pitch limit, named; copies of nothing are not made.
    let p = Problem::new(DType::F16, 100, 64, 3001);
    let plan = PadPlan::new(&p, ws, Padding::Auto, [0, 0]);
    plan.check_pitches(&p, 1 << 20).unwrap();
    let e = plan.check_pitches(&p, 4096).unwrap_err();
    assert!(
        matches!(e, Error::TooLarge { .. }) && e.to_string().contains("A's pitch"),
        "{e}"
    );
    let mut empty = Problem::new(DType::F16, 100, 64, 0);
    empty.lda = 3001;
    let plan = PadPlan::new(&empty, ws, Padding::Auto, [0, 0]);
    assert!(plan.a.is_some());
    plan.check_pitches(&empty, 16).unwrap();
}

#[test]
fn a_pitched_copy_moves_its_rows_and_nothing_else() {
    use rustile::hgemm::Copy2d;
    // 3 rows of 3 elements (6 bytes), source pitch 5, destination pitch 8.
    let c = Copy2d {
        rows: 3,
        width: 6,
        src_pitch: 10,
        dst_pitch: 16,
    };
    let src: Vec<u16> = (0..13).collect();
    let mut dst = vec![u16::MAX; 19];
    c.host(&src, &mut dst).unwrap();
    let m = u16::MAX;
    assert_eq!(
        dst,
        [0, 1, 2, m, m, m, m, m, 5, 6, 7, m, m, m, m, m, 10, 11, 12]
    );
    // And back, into a fresh buffer of the source's layout.
    let mut back = vec![u16::MAX; 13];
    c.reversed().host(&dst, &mut back).unwrap();
    assert_eq!(back, [0, 1, 2, m, m, 5, 6, 7, m, m, 10, 11, 12]);
    // One element short on either side, or a row wider than a pitch: errors, not panics.
    assert!(c.host(&src[..12], &mut dst).is_err());
    assert!(c.host(&src, &mut dst[..18]).is_err());
    let wide = Copy2d { width: 12, ..c };
    assert!(wide.host(&src, &mut [0u16; 64]).is_err());
    // Nothing to copy: nothing touched, any buffers.
    Copy2d { rows: 0, ..c }
        .host(&src[..0], &mut dst[..0])
        .unwrap();
}

#[test]
fn the_padded_pipeline_matches_float64_in_the_simulator_at_any_pitch() {
    use rustile::hgemm::Padding;
    // The padded path as the GPU runs it (same plan and copies, done on the host; the
    // scratch's pad columns NaN, so reading one fails): odd pitches, pitches wider than the
    // rows, β ≠ 0 (C copied in and back), bias, ReLU, f16/bf16, both B layouts, both outputs.
    let sim = Simulator::default();
    let s = seed();
    let mut n = 0;
    for ty in [DType::F16, DType::Bf16] {
        for b in [BLayout::RowMajor, BLayout::Transposed] {
            for (i, out) in [ty, DType::F32].into_iter().enumerate() {
                let mut p = Problem::new(ty, 45, 136, 37).with_b(b);
                p.out = out;
                let r = hgemm::validate_sim_with(
                    &sim,
                    Variant::MmaPipeline,
                    None,
                    Padding::Auto,
                    &p,
                    false,
                    s + i as u64,
                )
                .unwrap_or_else(|e| panic!("{p:?}: {e}"));
                assert_eq!(r.checked, p.m * p.n);
                // lda = 37 and, for Bᵀ, ldb = 37: padded; row-major B (136 wide) is not.
                let b_odd = b == BLayout::Transposed;
                assert_eq!((r.padded.a.is_some(), r.padded.b.is_some()), (true, b_odd));
                n += 1;
            }
            let mut p = Problem::new(ty, 67, 129, 41).with_b(b);
            (p.alpha, p.beta, p.relu) = (-0.75, 0.5, true);
            (p.lda, p.ldb, p.ldc) = (p.lda + 2, p.ldb + 4, p.ldc + 2);
            for padding in [Padding::Auto, Padding::Inputs] {
                let r = hgemm::validate_sim_with(
                    &sim,
                    Variant::MmaPipeline,
                    None,
                    padding,
                    &p,
                    true,
                    s,
                )
                .unwrap_or_else(|e| panic!("{p:?} {padding:?}: {e}"));
                assert_eq!(r.padded.c.is_some(), padding == Padding::Auto, "C: ldc 131");
                n += 1;
            }
        }
    }
    // Without padding the pipelined kernel refuses the same operands.
    let p = Problem::new(DType::F16, 45, 24, 37);
    assert!(matches!(
        hgemm::validate_sim_with(
            &sim,
            Variant::MmaPipeline,
            None,
            Padding::Never,
            &p,
            false,
            s
        ),
        Err(Error::Unsupported { .. })
    ));
    println!("hgemm: {n} padded simulated cases pass against float64 (seed {s})");
}

#[test]
fn the_quick_validation_cases_reach_every_corner_of_the_padded_path() {
    use rustile::hgemm::{PadPlan, Padding};
    use rustile::ptx::Flavour;
    // On the H200 the selection takes wgmma_ws for every quick case; what it pads there must
    // cover A, B and C, β ≠ 0 with C padded (copied in), bias, ReLU, both types, both B
    // layouts, both outputs, and an A-only plan (B read in place).
    let mut seen = std::collections::BTreeSet::new();
    for (p, bias) in hgemm::validation_cases(true) {
        let v = Variant::choose(Flavour::Sm90a, &p, [0, 0], Padding::Auto);
        assert_eq!(v, Variant::WgmmaWs, "{p:?}");
        let plan = PadPlan::new(&p, v, Padding::Auto, [0, 0]);
        if plan.is_empty() {
            continue;
        }
        seen.insert(format!("pad {}", plan.tag()));
        seen.insert(format!(
            "{:?} {:?} out {:?}",
            p.ty,
            p.b,
            p.out == DType::F32
        ));
        if plan.c.is_some() && p.beta != 0.0 && bias && p.relu {
            seen.insert("C in and out, bias, relu".into());
        }
    }
    for want in [
        "pad A",
        "pad A,B",
        "pad A,B,C",
        "C in and out, bias, relu",
        "F16 RowMajor out false",
        "F16 Transposed out true",
        "Bf16 RowMajor out true",
        "Bf16 Transposed out false",
    ] {
        assert!(seen.contains(want), "no quick case with {want}: {seen:?}");
    }
}

/// The `wgmma_ws` tile the model picks for `(m, n, k)` on the H200's 132 SMs.
fn pick(m: usize, n: usize, k: usize) -> hgemm::WsTile {
    hgemm::ws_tile(&Problem::new(DType::F16, m, n, k), 132)
}

#[test]
fn the_tile_model_keeps_the_wide_tile_on_big_products_and_narrows_or_cuts_the_rest() {
    use hgemm::WsTile;
    for (m, n, k) in [
        (8192, 8192, 8192),
        (4096, 4096, 4096),
        (16384, 16384, 16384),
        (2048, 2048, 2048),
    ] {
        assert_eq!(pick(m, n, k), WsTile::WIDE, "{m}x{n}x{k}");
    }
    // Few 128 × 256 tiles: a narrower or cut tile fills more SMs.
    for (m, n, k) in [
        (512, 512, 512),
        (1024, 1024, 1024),
        (64, 8192, 8192),
        (16, 16384, 16384),
        (12288, 32, 12288),
    ] {
        let t = pick(m, n, k);
        assert_ne!(t, WsTile::WIDE, "{m}x{n}x{k}");
        let p = Problem::new(DType::F16, m, n, k);
        t.check(&p, 132)
            .unwrap_or_else(|e| panic!("{m}x{n}x{k}: {t:?} refused: {e}"));
        assert!(t.estimate(&p, 132) < WsTile::WIDE.estimate(&p, 132));
    }
    // N = 32: a tile wider than 64 computes mostly padding.
    assert_eq!(pick(12288, 32, 12288).width, 64);
    // Skinny M, bound by streaming B: the whole 64 × 128 tile (measured best on the H100 in
    // session 13), not a cut (its fix-up comes on top of the stream) nor a 128-row tile.
    for (m, n, k) in [(64, 8192, 8192), (16, 16384, 16384)] {
        assert_eq!(pick(m, n, k), WsTile::whole(64, 128), "{m}x{n}x{k}");
    }
}

#[test]
fn bad_tiles_are_typed_errors_before_anything_runs() {
    use hgemm::WsTile;
    let p = Problem::new(DType::F16, 512, 512, 512); // 8 k-tiles
    let check = |width, cut, sms| {
        WsTile {
            rows: 128,
            width,
            cut,
        }
        .check(&p, sms)
    };
    assert!(check(128, 1, 132).is_ok());
    assert!(check(64, 4, 132).is_ok(), "32 tiles × 4 = 128 blocks");
    assert!(
        matches!(check(96, 1, 132), Err(Error::Usage(_))),
        "no 96-wide tile"
    );
    assert!(matches!(check(128, 0, 132), Err(Error::Usage(_))));
    assert!(matches!(check(128, 9, 132), Err(Error::Usage(_))));
    assert!(
        matches!(check(256, 2, 132), Err(Error::Unsupported { .. })),
        "256 cannot cut"
    );
    assert!(
        matches!(check(64, 8, 132), Err(Error::Unsupported { .. })),
        "256 blocks > 132 SMs"
    );
    let short = Problem::new(DType::F16, 512, 512, 64); // 1 k-tile
    assert!(matches!(
        WsTile {
            rows: 128,
            width: 128,
            cut: 2
        }
        .check(&short, 132),
        Err(Error::Unsupported { .. })
    ));
    // The cut's grid is one block per segment, its workspace a slot per block and consumer
    // plus the flags.
    let t = WsTile {
        rows: 128,
        width: 64,
        cut: 4,
    };
    assert_eq!(t.grid(&p, 132, 16), 128);
    assert_eq!(t.workspace_words(&p, 132), 128 * 2 * (64 * 64 + 1));
    assert_eq!(WsTile::whole(128, 128).workspace_words(&p, 132), 0);
    assert_eq!(t.label(), "wgmma_ws_n64 cut 4");
    // 64-row tiles: the consumers split 256 or 128 columns; no 64 × 64 tile.
    assert!(WsTile::whole(64, 256).check(&p, 132).is_ok());
    assert!(matches!(
        WsTile::whole(64, 64).check(&p, 132),
        Err(Error::Usage(_))
    ));
    assert_eq!(WsTile::whole(64, 256).label(), "wgmma_ws_m64");
    // Its consumers are 128 wide: it cuts (its slots are 64 × 128 per consumer).
    let m64 = WsTile {
        rows: 64,
        width: 256,
        cut: 2,
    };
    assert!(m64.check(&p, 132).is_ok(), "8 × 2 tiles × 2");
    assert_eq!(m64.workspace_words(&p, 132), 32 * 2 * (64 * 128 + 1));
    assert_eq!(WsTile::WIDE.label(), "wgmma_ws");
}
