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
