//! Attention checks. Without a GPU: `naive`, `mma_d64` and `mma_d128` in the simulator against
//! float64 (both dtypes, tiny shapes: sequence length 1, causal with `seq_q ≠ seq_kv` both
//! ways, GQA and MQA, strided and packed layouts), the dispatcher, the comparison's power to
//! catch a wrong output and a planted kernel bug, and every bad input as a typed error. The
//! GPU tests are `#[ignore = "needs a GPU"]` (run them with `-- --ignored` on a GPU machine).

use rustile::attention::{
    self, compare, reference_row, rows_to_check, Arrangement, Inputs, Layout, Operand, Operands,
    Problem, Shape, Spec, Strides, Target, Variant, POISON,
};
use rustile::families::Scale;
use rustile::ptx::Flavour;
use rustile::sim::Simulator;
use rustile::{Backend, DType, Error};

fn seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(7)
}

fn sim() -> Backend {
    Backend::Simulator(Simulator::default())
}

/// Operands of `p` at distinct, 256-byte-aligned addresses, each as long as the problem needs.
fn operands(p: &Problem) -> Operands {
    let spans = p.spans().unwrap();
    let lens = [spans[0], spans[1], spans[2], spans[3], p.shape.lse_len()];
    let mut addrs = [0u64; 5];
    let mut next = 1u64 << 40;
    for (a, len) in addrs.iter_mut().zip(lens) {
        *a = next;
        next += (len as u64 * 4).next_multiple_of(256) + 256;
    }
    Operands::of(p, lens, addrs)
}

#[test]
fn every_kernel_matches_float64_in_the_simulator() {
    // Beyond the suite's cases (tests/sim.rs runs `attention::sim_cases` too): decode rows,
    // one key, MQA with a group of 8, rows that see nothing, and the selected kernel.
    let backend = sim();
    let s = seed();
    let extra: &[(usize, usize, usize, usize, usize, bool, Arrangement)] = &[
        (1, 1, 130, 8, 2, true, Arrangement::Contiguous),
        (1, 130, 1, 2, 1, true, Arrangement::Contiguous),
        (2, 65, 17, 8, 1, true, Arrangement::Strided),
        (2, 64, 64, 3, 3, true, Arrangement::PackedQkv),
    ];
    let mut specs = attention::sim_cases();
    for ty in [DType::F16, DType::Bf16] {
        for d in attention::head_dims() {
            for &(b, nq, nkv, hq, hkv, causal, arr) in extra {
                let shape = Shape::new(b, nq, nkv, hq, hkv, d).with_causal(causal);
                specs.push(Spec::new(ty, shape, arr));
            }
        }
    }
    let start = std::time::Instant::now();
    let (mut runs, mut worst) = (0, 0f64);
    let mut ran = std::collections::BTreeSet::new();
    for (i, spec) in specs.iter().enumerate() {
        for v in [Some(Variant::naive()), Some(Variant::mma()), None] {
            let c = spec
                .validate(&backend, v, s + i as u64)
                .unwrap_or_else(|e| panic!("{:?} {} (seed {s}): {e}", v, spec.describe()));
            // Every row compared: the shapes are small.
            assert_eq!(c.comparison.rows, spec.problem.shape.lse_len());
            assert!(c.comparison.worst_o < 1.0 && c.comparison.worst_lse < 1.0);
            if v.is_none() {
                assert!(c.kernel.starts_with("mma_d"), "selected {}", c.kernel);
            }
            worst = worst.max(c.comparison.worst_o);
            ran.insert((c.kernel, spec.problem.dtype.name()));
            runs += 1;
        }
    }
    for k in ["naive", "mma_d64", "mma_d128"] {
        for t in ["f16", "bf16"] {
            assert!(ran.contains(&(k, t)), "{k} {t} never ran");
        }
    }
    println!(
        "attention: {runs} simulated runs pass against float64 in {:.1} s (seed {s}; worst O error {:.2} of its bound)",
        start.elapsed().as_secs_f64(),
        worst
    );
}

#[test]
fn variants_come_from_the_registry_and_the_dispatcher_never_picks_naive() {
    let all: Vec<&str> = Variant::all().iter().map(|v| v.name()).collect();
    assert_eq!(&all[..2], ["naive", "mma"]);
    assert_eq!(attention::head_dims(), vec![64, 128]);
    assert_eq!(Variant::mma().record(64).unwrap().name, "mma_d64");
    assert_eq!(Variant::mma().record(128).unwrap().name, "mma_d128");
    assert!(Variant::mma().record(96).is_none());
    assert_eq!(Variant::naive().record(128).unwrap().name, "naive");
    assert_eq!(Variant::parse("mma").unwrap(), Variant::mma());
    assert!(matches!(Variant::parse("flash9"), Err(Error::Usage(_))));
    assert_eq!(attention::split_head_dim("mma_d128"), ("mma", Some(128)));
    assert_eq!(attention::split_head_dim("naive"), ("naive", None));
    for target in [
        Target::Simulator,
        Target::Gpu(Flavour::Sm80),
        Target::Gpu(Flavour::Sm90a),
    ] {
        for d in [64, 128] {
            let p = Problem::new(DType::Bf16, Shape::new(2, 300, 200, 8, 2, d));
            let v = Variant::select(target, &p, &operands(&p)).unwrap();
            assert_ne!(v, Variant::naive());
            assert_eq!(
                v.supports(target, &p, None).unwrap().name,
                format!("{v}_d{d}")
            );
        }
    }
    // Every registered kernel (an sm_90a one without a host launcher yet too) either runs a
    // plain problem on a target or refuses with a typed Unsupported, and the selection is
    // never one that cannot run.
    let p = Problem::new(DType::F16, Shape::new(1, 256, 256, 2, 2, 128));
    for v in Variant::all() {
        for target in [
            Target::Simulator,
            Target::Gpu(Flavour::Sm80),
            Target::Gpu(Flavour::Sm90a),
        ] {
            match v.supports(target, &p, Some(&operands(&p))) {
                Ok(_) | Err(Error::Unsupported { .. }) => {}
                Err(e) => panic!("{v} on {target:?}: {e}"),
            }
            let chosen = Variant::select(target, &p, &operands(&p)).unwrap();
            chosen.supports(target, &p, Some(&operands(&p))).unwrap();
        }
    }
    // Unaligned Q: the dispatcher does not fall back to naive; it says why mma cannot run.
    let p = Problem::new(DType::F16, Shape::new(1, 16, 16, 1, 1, 64));
    let mut ops = operands(&p);
    ops.q.addr += 2;
    assert!(matches!(
        Variant::select(Target::Simulator, &p, &ops),
        Err(Error::Misaligned {
            buffer: "q",
            align: 16,
            ..
        })
    ));
    Variant::naive()
        .supports(Target::Simulator, &p, Some(&ops))
        .unwrap();
}

#[test]
fn shapes_know_their_mask_and_work() {
    let s = Shape::new(2, 5, 3, 4, 2, 64).with_causal(true);
    // Row i sees keys j ≤ i + 3 − 5: rows 0 and 1 see none, row 4 all three.
    let seen: Vec<usize> = (0..5).map(|i| s.visible_keys(i)).collect();
    assert_eq!(seen, [0, 0, 1, 2, 3]);
    assert_eq!(s.flops(), 4.0 * 64.0 * 6.0 * 8.0);
    assert_eq!(s.group(), 2);
    assert_eq!(s.lse_len(), 2 * 4 * 5);
    assert_eq!(s.softmax_scale(), 0.125);
    assert_eq!(s.with_scale(0.5).softmax_scale(), 0.5);
    assert_eq!(Shape::new(1, 4, 6, 1, 1, 64).flops(), 4.0 * 64.0 * 24.0);
}

fn err(p: &Problem) -> Error {
    p.check().expect_err("should be refused")
}

#[test]
fn bad_shapes_and_strides_are_typed_errors() {
    let ok = Problem::new(DType::F16, Shape::new(2, 33, 47, 8, 2, 128));
    ok.check().unwrap();
    let with = |f: &dyn Fn(&mut Problem)| {
        let mut p = ok;
        f(&mut p);
        p
    };
    // Head dimension the kernels are not built for: named.
    match err(&Problem::new(DType::F16, Shape::new(1, 8, 8, 1, 1, 96))) {
        Error::Unsupported { what, .. } => assert!(what.contains("head_dim = 96"), "{what}"),
        e => panic!("{e}"),
    }
    assert!(matches!(
        err(&Problem::new(DType::F32, ok.shape)),
        Error::Unsupported { .. }
    ));
    match err(&Problem::new(DType::F16, Shape::new(1, 8, 8, 6, 4, 64))) {
        Error::InvalidArgument { what, .. } => assert!(what.contains("heads_q = 6"), "{what}"),
        e => panic!("{e}"),
    }
    for (what, s) in [
        ("batch", Shape::new(0, 8, 8, 1, 1, 64)),
        ("seq_q", Shape::new(1, 0, 8, 1, 1, 64)),
        ("seq_kv", Shape::new(1, 8, 0, 1, 1, 64)),
        ("heads_q", Shape::new(1, 8, 8, 0, 1, 64)),
        ("heads_kv", Shape::new(1, 8, 8, 1, 0, 64)),
        ("head_dim", Shape::new(1, 8, 8, 1, 1, 0)),
    ] {
        match err(&Problem::new(DType::Bf16, s)) {
            Error::ZeroSize { what: w, .. } => assert_eq!(w, what),
            e => panic!("{what}: {e}"),
        }
    }
    for scale in [0.0, -1.0, f32::NAN, f32::INFINITY, 3e38] {
        let p = Problem::new(DType::F16, ok.shape.with_scale(scale));
        assert!(
            matches!(err(&p), Error::InvalidArgument { .. }),
            "scale {scale}"
        );
    }
    assert!(matches!(
        err(&Problem::new(
            DType::F16,
            Shape::new(1, 1 << 31, 8, 1, 1, 64)
        )),
        Error::TooLarge { .. }
    ));
    // Rows that overlap: Q's seq stride smaller than its heads span; K broadcast over batch
    // (stride 0 with batch 2); O's heads on top of each other.
    for (name, p) in [
        ("q", with(&|p| p.layout.q.seq = 8 * 128 - 8)),
        ("k", with(&|p| p.layout.k.batch = 0)),
        ("o", with(&|p| p.layout.o.head = 64)),
        (
            "v",
            with(&|p| {
                p.layout.v = Strides {
                    batch: 47 * 2 * 128,
                    seq: 128,
                    head: 128,
                }
            }),
        ),
    ] {
        match err(&p) {
            Error::Overlap {
                buffer, with: None, ..
            } => assert_eq!(buffer, name),
            e => panic!("{name}: {e}"),
        }
    }
    // A dimension of extent 1 may have any stride; other nestings than the default are fine.
    let mut p = Problem::new(DType::F16, Shape::new(1, 16, 16, 2, 1, 64));
    p.layout.q.batch = 0;
    p.layout.k = Strides {
        batch: 7,
        seq: 64,
        head: 0,
    };
    p.layout.v = Strides {
        batch: 0,
        seq: 64,
        head: 1 << 20,
    };
    p.check().unwrap();
    // Strides whose span overflows.
    assert!(matches!(
        err(&with(&|p| p.layout.o.batch = usize::MAX)),
        Error::TooLarge { .. }
    ));
}

#[test]
fn bad_buffers_are_typed_errors() {
    let p = Problem::new(DType::F16, Shape::new(2, 33, 47, 8, 2, 64));
    let good = operands(&p);
    p.check_operands(&good).unwrap();
    let spans = p.spans().unwrap();
    let lens = [spans[0], spans[1], spans[2], spans[3], p.shape.lse_len()];
    let names = ["q", "k", "v", "o", "lse"];
    for (i, name) in names.into_iter().enumerate() {
        let mut l = lens;
        l[i] -= 1;
        let ops = Operands::of(&p, l, good.addrs());
        match p.check_operands(&ops) {
            Err(Error::BufferLength {
                buffer, got, need, ..
            }) => assert_eq!((buffer, got, need), (name, lens[i] - 1, lens[i])),
            other => panic!("{name}: {other:?}"),
        }
    }
    // The element types must agree, and LSE is f32.
    let mut ops = good;
    ops.k.dtype = DType::Bf16;
    assert!(matches!(
        p.check_operands(&ops),
        Err(Error::DTypeMismatch {
            buffer: "k",
            got: "bf16",
            want: "f16",
            ..
        })
    ));
    let mut ops = good;
    ops.lse = Operand::new("lse", DType::F16, 2 * good.lse.len, good.lse.addr);
    assert!(matches!(
        p.check_operands(&ops),
        Err(Error::DTypeMismatch { buffer: "lse", .. })
    ));
    // Outputs may not share memory with anything; inputs may share with each other.
    let mut ops = good;
    ops.o.addr = ops.q.addr + 64;
    assert!(matches!(
        p.check_operands(&ops),
        Err(Error::Overlap {
            buffer: "o",
            with: Some("q"),
            ..
        })
    ));
    let mut ops = good;
    ops.lse.addr = ops.v.addr + 64;
    assert!(matches!(
        p.check_operands(&ops),
        Err(Error::Overlap {
            buffer: "lse",
            with: Some("v"),
            ..
        })
    ));
    let mut ops = good;
    ops.lse.addr = ops.o.addr;
    assert!(matches!(
        p.check_operands(&ops),
        Err(Error::Overlap {
            buffer: "lse",
            with: Some("o"),
            ..
        })
    ));
    let mut ops = good;
    ops.k.addr = ops.q.addr;
    p.check_operands(&ops).unwrap();
    // An address that is not a multiple of the element.
    let mut ops = good;
    ops.v.addr += 1;
    assert!(matches!(
        p.check_operands(&ops),
        Err(Error::Misaligned {
            buffer: "v",
            align: 2,
            ..
        })
    ));
}

#[test]
fn the_fused_kernels_alignment_needs_are_typed_errors() {
    let p = Problem::new(DType::Bf16, Shape::new(1, 40, 40, 2, 2, 64));
    let t = Target::Gpu(Flavour::Sm80);
    let (mma, naive) = (Variant::mma(), Variant::naive());
    let refuse = |p: &Problem, ops: &Operands| mma.supports(t, p, Some(ops)).unwrap_err();
    for (buf, shift, align) in [("q", 8, 16), ("k", 2, 16), ("v", 4, 16), ("o", 2, 4)] {
        let mut ops = operands(&p);
        match buf {
            "q" => ops.q.addr += shift,
            "k" => ops.k.addr += shift,
            "v" => ops.v.addr += shift,
            _ => ops.o.addr += shift,
        }
        match refuse(&p, &ops) {
            Error::Misaligned {
                buffer, align: a, ..
            } => assert_eq!((buffer, a), (buf, align)),
            e => panic!("{buf}: {e}"),
        }
        naive.supports(t, &p, Some(&ops)).unwrap();
    }
    // Strides: inputs in multiples of 8 elements, O's even.
    let mut q = p;
    q.layout.q.seq += 2;
    q.layout.q.batch = q.layout.q.seq * 40;
    match refuse(&q, &operands(&q)) {
        Error::Unsupported { what, .. } => assert!(what.contains("`q`'s seq stride"), "{what}"),
        e => panic!("{e}"),
    }
    let mut o = p;
    o.layout.o.seq += 1;
    o.layout.o.batch = o.layout.o.seq * 40;
    match refuse(&o, &operands(&o)) {
        Error::Unsupported { what, .. } => assert!(what.contains("`o`'s seq stride"), "{what}"),
        e => panic!("{e}"),
    }
    let mut o2 = p;
    o2.layout.o.seq += 2;
    o2.layout.o.batch = o2.layout.o.seq * 40;
    mma.supports(t, &o2, Some(&operands(&o2))).unwrap();
    naive.supports(t, &q, Some(&operands(&q))).unwrap();
    naive.supports(t, &o, Some(&operands(&o))).unwrap();
}

#[test]
fn grid_and_scratch_limits_are_typed_errors() {
    let t = Target::Gpu(Flavour::Sm80);
    // The fused grid is (⌈nq/128⌉, heads_q, batch): batch ≤ 65535.
    let p = Problem::new(DType::F16, Shape::new(70_000, 4, 4, 1, 1, 64));
    p.check().unwrap();
    assert!(matches!(
        Variant::mma().supports(t, &p, None),
        Err(Error::TooLarge { .. })
    ));
    // naive's grid z is batch · heads_q.
    let p = Problem::new(DType::F16, Shape::new(1024, 4, 4, 128, 128, 64));
    Variant::mma().supports(t, &p, None).unwrap();
    assert!(matches!(
        Variant::naive().supports(t, &p, None),
        Err(Error::TooLarge { .. })
    ));
    // naive's scratch: 4 · 65536² bytes = 16 GiB > 4 GiB.
    let p = Problem::new(DType::F16, Shape::new(1, 65536, 65536, 1, 1, 64));
    match Variant::naive().supports(t, &p, None) {
        Err(Error::TooLarge { what, .. }) => assert!(what.contains("scratch"), "{what}"),
        other => panic!("{other:?}"),
    }
    Variant::mma().supports(t, &p, None).unwrap();
}

#[test]
fn the_front_doors_pure_check_names_each_buffer() {
    use rustile::api::check_attention;
    use rustile::half::{bf16, f16};
    let s = Shape::new(2, 17, 30, 4, 2, 64).with_causal(true);
    let (q, kv, lse) = (2 * 17 * 4 * 64, 2 * 30 * 2 * 64, 2 * 4 * 17);
    check_attention::<f16>(&s, None, q, kv, kv, q, Some(lse)).unwrap();
    check_attention::<bf16>(&s, None, q, kv, kv, q, None).unwrap();
    let short = |e: Error| match e {
        Error::BufferLength { buffer, .. } => buffer,
        e => panic!("{e}"),
    };
    assert_eq!(
        short(check_attention::<f16>(&s, None, q - 1, kv, kv, q, None).unwrap_err()),
        "q"
    );
    assert_eq!(
        short(check_attention::<f16>(&s, None, q, kv, kv - 1, q, None).unwrap_err()),
        "v"
    );
    assert_eq!(
        short(check_attention::<f16>(&s, None, q, kv, kv, q, Some(lse - 1)).unwrap_err()),
        "lse"
    );
    // Packed QKV: Q, K, V are views of one (b, n, hq + 2hkv, d) tensor; each view runs from its
    // offset to the end.
    let s = Shape::new(2, 30, 30, 4, 2, 64);
    let l = Layout::packed_qkv(&s);
    let ([_, ko, vo], len) = Layout::packed_qkv_offsets(&s);
    check_attention::<f16>(&s, Some(&l), len, len - ko, len - vo, 2 * 30 * 4 * 64, None).unwrap();
    assert!(matches!(
        check_attention::<f16>(
            &s,
            Some(&l),
            len,
            len - ko,
            len - vo - 1,
            2 * 30 * 4 * 64,
            None
        ),
        Err(Error::BufferLength { buffer: "v", .. })
    ));
    assert!(matches!(
        check_attention::<f16>(
            &Shape::new(1, 4, 4, 1, 1, 80),
            None,
            320,
            320,
            320,
            320,
            None
        ),
        Err(Error::Unsupported { .. })
    ));
}

/// O and LSE as a correct kernel would write them: the float64 reference rounded.
fn rounded_reference(p: &Problem, x: &Inputs) -> (Vec<u16>, Vec<f32>) {
    let s = p.shape;
    let g = p.tensors()[3];
    let mut o = vec![POISON; p.spans().unwrap()[3]];
    let mut lse = vec![f32::NAN; s.lse_len()];
    for b in 0..s.batch {
        for h in 0..s.heads_q {
            for i in 0..s.seq_q {
                let r = reference_row(p, x, b, h, i);
                for (c, v) in r.o.iter().enumerate() {
                    o[g.offset(b, i, h) + c] = rustile::elem::round_bits(p.dtype, *v as f32) as u16;
                }
                lse[(b * s.heads_q + h) * s.seq_q + i] = r.lse as f32;
            }
        }
    }
    (o, lse)
}

#[test]
fn the_comparison_catches_every_kind_of_wrong_output() {
    // Causal with seq_q > seq_kv (rows 0..4 see nothing) and a padded O (poison between rows).
    let s = Shape::new(1, 9, 5, 2, 1, 64).with_causal(true);
    for ty in [DType::F16, DType::Bf16] {
        let p = Problem::new(ty, s).with_layout(Arrangement::Strided.layout(&s));
        let x = Inputs::random(&p, false, seed()).unwrap();
        let rows = rows_to_check(&p, 1);
        assert_eq!(rows.len(), s.lse_len());
        let (o, lse) = rounded_reference(&p, &x);
        compare(&p, &x, &o, &lse, &rows).unwrap();
        let g = p.tensors()[3];
        let at = g.offset(0, 7, 1) + 5; // row 7 (sees keys 0..=3), head 1, element 5
        let r = reference_row(&p, &x, 0, 1, 7);
        let tol = attention::o_tolerance(&p, &r, r.o[5]);
        let bad_o = |v: f64| {
            let mut o = o.clone();
            o[at] = rustile::elem::round_bits(ty, v as f32) as u16;
            compare(&p, &x, &o, &lse, &rows)
        };
        assert!(bad_o(r.o[5] + 3.0 * tol).is_err());
        assert!(bad_o(f64::NAN).is_err());
        assert!(bad_o(f64::INFINITY).is_err());
        let mut l = lse.clone();
        l[7] += 1e-2;
        assert!(compare(&p, &x, &o, &l, &rows).is_err());
        l[7] = f32::NAN;
        assert!(compare(&p, &x, &o, &l, &rows).is_err());
        // A fully masked row: O exactly 0, LSE exactly −inf.
        assert_eq!(reference_row(&p, &x, 0, 0, 2).seen, 0);
        let mut m = o.clone();
        m[g.offset(0, 2, 0) + 3] = rustile::elem::round_bits(ty, 1e-3) as u16;
        assert!(compare(&p, &x, &m, &lse, &rows).is_err());
        let mut l = lse.clone();
        l[2] = -1e30;
        assert!(compare(&p, &x, &o, &l, &rows).is_err());
        // An element between O's rows overwritten, and one never written (still poison).
        let mut pad = o.clone();
        pad[g.offset(0, 0, 1) + 64] = 0;
        assert!(compare(&p, &x, &pad, &lse, &rows).is_err());
        let mut skipped = o.clone();
        skipped[at] = POISON;
        assert!(compare(&p, &x, &skipped, &lse, &rows).is_err());
    }
}

#[test]
fn a_planted_kernel_bug_is_caught_in_the_simulator() {
    // The kernel runs with a mask or a scale other than the reference's: the comparison fails.
    let backend = sim();
    for ty in [DType::F16, DType::Bf16] {
        let s = Shape::new(1, 70, 70, 2, 1, 64).with_causal(true);
        let p = Problem::new(ty, s);
        let x = Inputs::random(&p, false, seed()).unwrap();
        let rows = rows_to_check(&p, 1);
        let good = attention::outputs(&backend, Some(Variant::mma()), &p, &x).unwrap();
        compare(&p, &x, &good.o, &good.lse, &rows).unwrap();
        for wrong in [s.with_causal(false), s.with_scale(s.softmax_scale() * 1.1)] {
            let bad = Problem::new(ty, wrong);
            for v in [Variant::mma(), Variant::naive()] {
                let out = attention::outputs(&backend, Some(v), &bad, &x).unwrap();
                assert!(
                    matches!(
                        compare(&p, &x, &out.o, &out.lse, &rows),
                        Err(Error::Mismatch { .. })
                    ),
                    "{v} with {} passed against {}",
                    wrong.describe(),
                    s.describe()
                );
            }
        }
    }
}

#[test]
fn large_shapes_check_sampled_rows_at_the_tile_edges() {
    let s = Shape::new(3, 4000, 5000, 16, 4, 128).with_causal(true);
    let p = Problem::new(DType::F16, s);
    let rows = rows_to_check(&p, 9);
    assert!(rows.len() < 2000 && rows.len() > 300, "{}", rows.len());
    assert!(rows.iter().all(|&(b, h, i)| b < 3 && h < 16 && i < 4000));
    for (b, h) in [(0, 0), (2, 15), (0, 15), (2, 0)] {
        for i in [0, 63, 64, 65, 127, 128, 129, 3999, 3936, 3872] {
            assert!(rows.contains(&(b, h, i)), "({b}, {h}, {i}) missing");
        }
    }
    // seq_q > seq_kv: row i sees keys ≤ i − 2000, so the rows where the diagonal crosses the
    // key tiles' edges are 2000 + 64, 2000 + 128, ….
    let p = Problem::new(
        DType::Bf16,
        Shape::new(1, 3000, 1000, 2, 2, 128).with_causal(true),
    );
    let rows = rows_to_check(&p, 2);
    for i in [1999, 2000, 2001, 2063, 2064, 2065, 2127, 2128, 2129] {
        assert!(rows.contains(&(0, 0, i)), "row {i} missing");
    }
    // Small shapes: every row.
    let p = Problem::new(DType::F16, Shape::new(2, 100, 100, 4, 4, 64));
    assert_eq!(rows_to_check(&p, 1).len(), 800);
}

// --- GPU -------------------------------------------------------------------------------------

fn gpu() -> rustile::Gpu {
    rustile::Gpu::new(0).expect("these tests need a GPU")
}

#[test]
#[ignore = "needs a GPU"]
fn every_gpu_case_matches_float64() {
    let backend = Backend::Gpu(gpu());
    let s = seed();
    let family = attention::FAMILY;
    let cases = family.cases(&backend, Scale::Quick);
    assert!(cases.iter().any(|c| c.kernel == "attention/naive"));
    assert!(cases.iter().any(|c| c.kernel == "attention/mma_d128"));
    let failed: Vec<_> = cases
        .iter()
        .enumerate()
        .map(|(i, c)| family.run(&backend, c, s ^ i as u64))
        .filter(|o| o.error.is_some())
        .collect();
    println!("attention: {} GPU cases (seed {s})", cases.len());
    assert!(failed.is_empty(), "seed {s}: {failed:#?}");
}

#[test]
#[ignore = "needs a GPU"]
fn the_front_door_runs_packed_qkv_views_and_refuses_misaligned_ones() {
    use rustile::half::f16;
    use rustile::{api, AttentionOptions};
    let gpu = gpu();
    let s = Shape::new(2, 200, 200, 8, 2, 64).with_causal(true);
    let p = Problem::new(DType::F16, s).with_layout(Layout::packed_qkv(&s));
    let x = Inputs::random(&p, true, seed()).unwrap();
    let bits: Vec<f16> = x.bufs[0].iter().map(|&b| f16::from_bits(b)).collect();
    let qkv = gpu.upload(&bits, "qkv").unwrap();
    let ([_, ko, vo], _) = Layout::packed_qkv_offsets(&s);
    let (q, k, v) = (qkv.slice(..), qkv.slice(ko..), qkv.slice(vo..));
    let n_o = p.spans().unwrap()[3];
    let mut o = gpu.upload(&vec![f16::from_bits(POISON); n_o], "O").unwrap();
    let mut lse = gpu.upload(&vec![f32::NAN; s.lse_len()], "LSE").unwrap();
    let opts = AttentionOptions {
        layout: Some(p.layout),
        lse: Some(&mut lse),
    };
    let ran = api::attention(&gpu, &s, &q, &k, &v, &mut o, opts).unwrap();
    // The selected kernel (FlashAttention, not the three-pass baseline).
    assert!(
        ran.to_string().starts_with("attention/") && ran.variant != "naive",
        "{ran}"
    );
    let o_bits: Vec<u16> = gpu
        .download(&o, "O")
        .unwrap()
        .iter()
        .map(|h| h.to_bits())
        .collect();
    let lse = gpu.download(&lse, "LSE").unwrap();
    compare(&p, &x, &o_bits, &lse, &rows_to_check(&p, 3)).unwrap();
    // Without an LSE buffer the call keeps its own.
    let opts = AttentionOptions {
        layout: Some(p.layout),
        lse: None,
    };
    api::attention(&gpu, &s, &q, &k, &v, &mut o, opts).unwrap();
    // K one element in: not 16-byte aligned; and a short V.
    let opts = || AttentionOptions {
        layout: Some(p.layout),
        lse: None,
    };
    let k1 = qkv.slice(ko + 1..);
    assert!(matches!(
        api::attention(&gpu, &s, &q, &k1, &v, &mut o, opts()),
        Err(Error::Misaligned { buffer: "k", .. })
    ));
    let v_short = qkv.slice(vo..vo + 64);
    assert!(matches!(
        api::attention(&gpu, &s, &q, &k, &v_short, &mut o, opts()),
        Err(Error::BufferLength { buffer: "v", .. })
    ));
}

#[test]
#[ignore = "needs a GPU"]
fn a_prepared_launch_reruns_on_the_same_buffers() {
    use attention::{Buffers, Input, Output};
    let gpu = gpu();
    let s = Shape::new(1, 333, 555, 4, 4, 128).with_causal(true);
    for ty in [DType::F16, DType::Bf16] {
        let p = Problem::new(ty, s);
        let x = Inputs::random(&p, false, seed()).unwrap();
        let (q, k, v) = (
            gpu.upload(&x.bufs[0], "q").unwrap(),
            gpu.upload(&x.bufs[1], "k").unwrap(),
            gpu.upload(&x.bufs[2], "v").unwrap(),
        );
        let mut o = gpu
            .upload(&vec![POISON; p.spans().unwrap()[3]], "o")
            .unwrap();
        let mut lse = gpu.upload(&vec![f32::NAN; s.lse_len()], "lse").unwrap();
        for variant in [Variant::mma(), Variant::naive()] {
            let mut bufs = Buffers {
                q: Input {
                    dtype: ty,
                    data: &q,
                },
                k: Input {
                    dtype: ty,
                    data: &k,
                },
                v: Input {
                    dtype: ty,
                    data: &v,
                },
                o: Output {
                    dtype: ty,
                    data: &mut o,
                },
                lse: &mut lse,
            };
            let mut prep = attention::prepare(&gpu, Some(variant), &p, &mut bufs).unwrap();
            for _ in 0..3 {
                prep.launch(gpu.stream(), &mut bufs).unwrap();
            }
            let got = gpu.download(&o, "o").unwrap();
            let l = gpu.download(&lse, "lse").unwrap();
            compare(&p, &x, &got, &l, &rows_to_check(&p, 5)).unwrap();
        }
        // The wrong dtype for the buffers is refused at prepare.
        let other = if ty == DType::F16 {
            DType::Bf16
        } else {
            DType::F16
        };
        let mut bufs = Buffers {
            q: Input {
                dtype: ty,
                data: &q,
            },
            k: Input {
                dtype: other,
                data: &k,
            },
            v: Input {
                dtype: ty,
                data: &v,
            },
            o: Output {
                dtype: ty,
                data: &mut o,
            },
            lse: &mut lse,
        };
        assert!(matches!(
            attention::prepare(&gpu, None, &p, &mut bufs),
            Err(Error::DTypeMismatch { buffer: "k", .. })
        ));
    }
}

/// The split-KV combine kernel in the simulator against float64: random per-split partial O
/// and LSE, a split that saw nothing (−inf), and a row no split saw (O = 0, LSE = −inf).
#[test]
fn the_split_kv_combine_matches_float64_in_the_simulator() {
    use rustile::launch::{Arg, LaunchPlan};
    use rustile_kernels::attention::combine;
    let sim = Simulator::default();
    let (nq, heads_q, batch, splits, d) = (5usize, 2usize, 1usize, 3usize, 128usize);
    let bh = batch * heads_q;
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        (rng >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    };
    let part_o: Vec<f32> = (0..splits * bh * nq * d).map(|_| next() as f32).collect();
    let mut part_lse: Vec<f32> = (0..splits * bh * nq)
        .map(|_| (4.0 * next()) as f32)
        .collect();
    let at = |s: usize, h: usize, r: usize| (s * bh + h) * nq + r;
    part_lse[at(1, 0, 2)] = f32::NEG_INFINITY; // a split that saw no key of row 2
    for s in 0..splits {
        part_lse[at(s, 1, 4)] = f32::NEG_INFINITY; // head 1, row 4: no split saw a key
    }
    let bo = sim.alloc::<f32>(part_o.len(), "part_o").unwrap();
    let bl = sim.alloc::<f32>(part_lse.len(), "part_lse").unwrap();
    let o = sim.alloc::<u16>(bh * nq * d, "o").unwrap();
    let lse = sim.alloc::<f32>(bh * nq, "lse").unwrap();
    sim.write(&bo, &part_o).unwrap();
    sim.write(&bl, &part_lse).unwrap();
    sim.write(&o, &vec![0x7e00u16; bh * nq * d]).unwrap();
    sim.write(&lse, &vec![f32::NAN; bh * nq]).unwrap();
    let info = &combine::INFO;
    let entry = info.entry(DType::F16).unwrap();
    // O contiguous (batch, seq, heads, d).
    let (sb, ss, sh) = ((nq * heads_q * d) as u64, (heads_q * d) as u64, d as u64);
    let args = vec![
        Arg::Ptr(bo.addr()),
        Arg::Ptr(bl.addr()),
        Arg::Ptr(o.addr()),
        Arg::Ptr(lse.addr()),
        Arg::U32(nq as u32),
        Arg::U32(heads_q as u32),
        Arg::U32(bh as u32),
        Arg::U32(splits as u32),
        Arg::U32(d as u32),
        Arg::U64(sb),
        Arg::U64(ss),
        Arg::U64(sh),
    ];
    let grid = (
        (nq as u64).div_ceil(combine::ROWS as u64),
        heads_q as u64,
        batch as u64,
    );
    LaunchPlan::new(info, entry, grid, args)
        .simulate(&sim)
        .unwrap();
    let got_o = sim.read(&o).unwrap();
    let got_l = sim.read(&lse).unwrap();
    for h in 0..heads_q {
        for r in 0..nq {
            let ls: Vec<f64> = (0..splits).map(|s| part_lse[at(s, h, r)] as f64).collect();
            let m = ls.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let l = got_l[h * nq + r] as f64;
            let orow = &got_o[r * heads_q * d + h * d..][..d];
            if m == f64::NEG_INFINITY {
                assert_eq!(
                    l,
                    f64::NEG_INFINITY,
                    "head {h} row {r}: LSE of a row no split saw"
                );
                assert!(
                    orow.iter().all(|&x| x == 0),
                    "head {h} row {r}: O must be 0"
                );
                continue;
            }
            let sum: f64 = ls.iter().map(|x| (x - m).exp()).sum();
            let want_l = m + sum.ln();
            assert!(
                (l - want_l).abs() <= 1e-5 * want_l.abs().max(1.0),
                "head {h} row {r}: LSE {l} vs {want_l}"
            );
            for c in 0..d {
                let want: f64 = (0..splits)
                    .map(|s| (ls[s] - want_l).exp() * part_o[at(s, h, r) * d + c] as f64)
                    .sum();
                let x = rustile::half::f16::from_bits(orow[c]).to_f64();
                // f16 rounding of the result (2⁻¹¹ relative, 2⁻²⁴ absolute) plus f32 sums.
                let tol = 2f64.powi(-11) * want.abs() + 2f64.powi(-24) + 1e-6;
                assert!(
                    (x - want).abs() <= tol,
                    "head {h} row {r} col {c}: {x} vs {want}"
                );
            }
        }
    }
}
