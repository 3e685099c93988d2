//! CPU-side tests of the bench's shapes, plan and reports, and of the dump's cases and files.

use rustile_kernels::registry::DType;

use crate::backend::Backend;
use crate::error::Error;
use crate::harness::Stats;
use crate::ptx::Flavour;
use crate::sim::Simulator;

use super::bench::*;
use super::dump::*;
use super::report::*;
use super::*;

#[test]
fn the_default_sweep_is_the_anchors_then_the_bh_sweep() {
    let shapes = Sweep::default().shapes();
    // 6 N × 2 d × 2 masks, then B·H ∈ {1, 4, 16, 132, 256} × 2 masks (64 is an anchor).
    assert_eq!(shapes.len(), 24 + 10);
    for s in &shapes[..24] {
        assert!(s.is_anchor(), "{s:?}");
        assert_eq!((s.b * s.n, s.h), (ANCHOR_TOKENS, ANCHOR_HEADS), "{s:?}");
    }
    assert_eq!(
        shapes[0],
        BenchShape {
            b: 32,
            h: 16,
            n: 512,
            d: 64,
            causal: false
        }
    );
    assert_eq!(
        shapes[23],
        BenchShape {
            b: 1,
            h: 16,
            n: 16384,
            d: 128,
            causal: true
        }
    );
    let bh: Vec<(usize, usize)> = shapes[24..].iter().step_by(2).map(|s| (s.b, s.h)).collect();
    assert_eq!(bh, vec![(1, 1), (4, 1), (1, 16), (132, 1), (16, 16)]);
    assert!(shapes[24..]
        .iter()
        .all(|s| (s.n, s.d) == BH_AT && !s.is_anchor()));
    assert_eq!(bh_shape(64, false), BenchShape::anchor(4096, 128, false));
    // Longer than the anchors' token count: one batch.
    assert_eq!(BenchShape::anchor(32768, 64, false).b, 1);
    let mut unique = shapes.clone();
    unique.sort_by_key(|s| (s.b, s.h, s.n, s.d, s.causal));
    unique.dedup();
    assert_eq!(unique.len(), shapes.len());
}

#[test]
fn shapes_round_trip_through_the_sdpa_string() {
    let shapes = Sweep::default().shapes();
    let text = shapes_arg(&shapes);
    assert!(
        text.starts_with("32,16,512,64,0;32,16,512,64,1;16,16,1024,64,0"),
        "{text}"
    );
    assert_eq!(parse_shapes(&text).unwrap(), shapes);
    assert_eq!(
        parse_shapes(" 2,8,300,128,causal ; 1,1,7,64,false;").unwrap(),
        vec![
            BenchShape {
                b: 2,
                h: 8,
                n: 300,
                d: 128,
                causal: true
            },
            BenchShape {
                b: 1,
                h: 1,
                n: 7,
                d: 64,
                causal: false
            },
        ]
    );
    for bad in [
        "",
        ";",
        "1,2,3,64",
        "1,2,3,64,0,9",
        "0,1,1,64,0",
        "1,1,1,96,0",
        "1,1,x,64,0",
        "1,1,8,64,maybe",
    ] {
        assert!(matches!(parse_shapes(bad), Err(Error::Usage(_))), "{bad:?}");
    }
}

#[test]
fn the_plan_takes_the_kernels_from_the_registry() {
    let shapes = Sweep::default().shapes();
    for flavour in [Flavour::Sm80, Flavour::Sm90a] {
        let target = Target::Gpu(flavour);
        let (runs, skips) = plan(target, DType::F16, &shapes, None);
        // Every (shape, variant of the registry) is either run or skipped with a reason.
        assert_eq!(
            runs.len() + skips.len(),
            shapes.len() * Variant::all().len()
        );
        for r in &runs {
            let p = Problem::new(DType::F16, r.shape.shape());
            assert!(r.variant.supports(target, &p, None).is_ok(), "{r:?}");
            assert!(
                r.variant != Variant::naive() || r.shape.n <= NAIVE_MAX_N,
                "{r:?}"
            );
        }
        for s in &skips {
            let p = Problem::new(DType::F16, s.shape.shape());
            let naive_rule = s.variant == Variant::naive() && s.shape.n > NAIVE_MAX_N;
            assert!(
                naive_rule || s.variant.supports(target, &p, None).is_err(),
                "{s:?}"
            );
            assert!(!s.why.is_empty());
        }
        // The sm_80 FlashAttention-2 kernel runs every shape; naive the anchors up to 4096.
        let runs_of = |v: Variant| runs.iter().filter(|r| r.variant == v).count();
        assert_eq!(runs_of(Variant::mma()), shapes.len(), "{flavour:?}");
        assert!(runs_of(Variant::naive()) >= 16, "{flavour:?}");
        // Nothing that needs sm_90a is planned on the sm_80 flavour.
        if flavour == Flavour::Sm80 {
            assert!(runs
                .iter()
                .all(|r| !r.variant.record(r.shape.d).unwrap().needs.sm90a));
        }
    }
    // Asked for explicitly, naive is tried at every N (and left out where its scratch does not fit).
    let big = [
        BenchShape {
            b: 1,
            h: 1,
            n: 8192,
            d: 64,
            causal: false,
        },
        bh_shape(256, false),
    ];
    let (runs, skips) = plan(
        Target::Gpu(Flavour::Sm80),
        DType::Bf16,
        &big,
        Some(&[Variant::naive()]),
    );
    assert_eq!(
        runs.len(),
        1,
        "one head at 8192 fits the 4 GiB scratch: {skips:?}"
    );
    assert!(skips[0].why.contains("scratch"), "{skips:?}");
    let notes = skip_notes(&skips);
    assert_eq!(notes.len(), 1);
    assert!(
        notes[0].starts_with("naive left out of 1 shape: "),
        "{notes:?}"
    );
}

fn row(variant: Variant, shape: BenchShape, ms: f64) -> BenchRow {
    let record = variant.record(shape.d).unwrap();
    let stats = Stats::from_samples(vec![ms, ms * 1.5, ms * 0.9]);
    let c = Comparison {
        rows: 12,
        worst_o: 0.25,
        worst_lse: 0.1,
    };
    BenchRow::new("Test GPU", shape, DType::F16, variant, record, stats, c)
}

#[test]
fn rows_count_flops_and_format_as_markdown_and_json_lines() {
    let s = BenchShape::anchor(4096, 128, false);
    let r = row(Variant::mma(), s, 1.0);
    assert_eq!(r.flops, 4.0 * 4.0 * 16.0 * 4096.0 * 4096.0 * 128.0);
    assert!(
        (r.tflops - r.flops / 1e-3 / 1e12).abs() < 1e-9,
        "{}",
        r.tflops
    );
    assert_eq!(
        (r.kernel.as_str(), r.variant.as_str(), r.sm90a, r.anchor),
        ("mma_d128", "mma", false, true)
    );
    assert_eq!(
        (r.checked_rows, r.reps, r.median_ms, r.min_ms),
        (12, 3, 1.0, 0.9)
    );
    let c = row(Variant::mma(), BenchShape { causal: true, ..s }, 1.0);
    let half = 4096.0 * 4097.0 / 2.0 / (4096.0 * 4096.0);
    assert!(
        (c.flops / r.flops - half).abs() < 1e-12,
        "causal counts the pairs the mask keeps"
    );
    let md = markdown(&[r.clone(), c.clone()], &[]);
    let lines: Vec<&str> = md.lines().collect();
    assert_eq!(lines.len(), 4, "{md}");
    assert_eq!(
        lines[2],
        format!(
            "| f16 | 4 | 16 | 4096 | 128 | none | mma_d128 | {:.1} | 1.0000 | 0.9000 | 12 |",
            r.tflops
        )
    );
    assert!(lines[3].contains("| causal | mma_d128 |"));
    let skip = Skip {
        shape: s,
        variant: Variant::naive(),
        why: "too big".into(),
    };
    assert!(markdown(std::slice::from_ref(&r), &[skip])
        .ends_with("\n- naive left out of 1 shape: too big\n"));
    let text = jsonl(&[r.clone(), c.clone()]).unwrap();
    assert_eq!(text.lines().count(), 2);
    let v: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    for (k, want) in [("b", 4), ("h", 16), ("n", 4096), ("d", 128)] {
        assert_eq!(v[k], want, "{k}");
    }
    assert_eq!(
        (v["causal"].as_bool(), v["dtype"].as_str()),
        (Some(false), Some("f16"))
    );
    // The JSON lines keep the medians; the full statistics go to attention.json's `time`.
    let lines = |rows: &[BenchRow]| -> Vec<BenchRow> {
        rows.iter()
            .map(|r| BenchRow {
                stats: None,
                ..r.clone()
            })
            .collect()
    };
    assert_eq!(parse_jsonl(&text).unwrap(), lines(&[r.clone(), c]));
    assert!(matches!(parse_jsonl("{\"b\": 1}\n"), Err(Error::Usage(_))));
    assert_eq!(r.shape(), s);
    let cmd = sdpa_command(&[s], DType::Bf16, 7);
    assert_eq!(
        cmd,
        "scripts/sdpa_bench.py --dtype bf16 --reps 7 --shapes '4,16,4096,128,0'"
    );
}

fn temp(name: &str) -> std::path::PathBuf {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    std::env::temp_dir().join(format!("rustile-{name}-{}-{t}", std::process::id()))
}

#[test]
fn the_report_files_are_the_table_and_the_json_lines() {
    let dir = temp("attn-report");
    let r = row(Variant::mma(), BenchShape::anchor(1024, 64, true), 0.5);
    let [md, jl] = write(&dir, "# header", std::slice::from_ref(&r), &[], "sdpa cmd").unwrap();
    let md = std::fs::read_to_string(md).unwrap();
    assert!(
        md.starts_with("# header\n\n| dtype |") && md.contains("```sh\nsdpa cmd\n```"),
        "{md}"
    );
    assert_eq!(
        parse_jsonl(&std::fs::read_to_string(jl).unwrap()).unwrap(),
        vec![BenchRow {
            stats: None,
            ..r.clone()
        }]
    );
    // A file where the directory should be is an I/O error, not a panic.
    let file = dir.join("attention.md");
    assert!(matches!(
        write(&file, "", &[r], &[], ""),
        Err(Error::Io { .. })
    ));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn dump_cases_parse_and_cover_the_odd_shapes() {
    let cases = default_cases();
    assert_eq!(cases.len(), DEFAULT_CASES.len() * head_dims().len());
    let has = |f: &dyn Fn(&Shape) -> bool| cases.iter().any(f);
    for n in [1, 127, 129, 1000, 97, 211, 257, 313] {
        assert!(has(&|s| s.seq_q == n || s.seq_kv == n), "length {n}");
    }
    assert!(
        has(&|s| s.causal && s.seq_q > s.seq_kv && s.visible_keys(0) == 0),
        "fully masked rows"
    );
    assert!(has(&|s| s.causal && s.seq_q < s.seq_kv));
    assert!(
        has(&|s| (s.heads_q, s.heads_kv) == (8, 2)) && has(&|s| s.heads_kv == 1 && s.heads_q > 1)
    );
    assert!(has(&|s| s.head_dim == 64) && has(&|s| s.head_dim == 128));
    assert_eq!(parse_cases("default").unwrap(), cases);
    let two = parse_cases("2,17,33,4,2,64,causal;1,5,5,1,1,128").unwrap();
    assert_eq!(
        two,
        vec![
            Shape::new(2, 17, 33, 4, 2, 64).with_causal(true),
            Shape::new(1, 5, 5, 1, 1, 128),
        ]
    );
    for bad in [
        "",
        "1,2,3",
        "1,1,1,1,1,64,x",
        "1,1,1,3,2,64",
        "1,1,1,1,1,96",
        "0,1,1,1,1,64",
        "a,1,1,1,1,64",
    ] {
        assert!(matches!(parse_cases(bad), Err(Error::Usage(_))), "{bad:?}");
    }
    assert_eq!(
        case_name(3, DType::Bf16, &two[0]),
        "03-bf16-b2-q17-kv33-h4x2-d64-causal"
    );
    assert_eq!(
        case_name(12, DType::F16, &two[1]),
        "12-f16-b1-q5-kv5-h1x1-d128"
    );
}

#[test]
fn gather_unpacks_any_layout_into_bnhd() {
    // V stored (batch, heads, seq, d) with padding: gathered back to (batch, seq, heads, d).
    let shape = Shape::new(2, 3, 5, 4, 2, 64);
    let p = Problem::new(DType::Bf16, shape).with_layout(Arrangement::Strided.layout(&shape));
    let x = Inputs::random(&p, false, 5).unwrap();
    for t in 0..3 {
        let g = p.tensors()[t];
        let (dims, data) = gather(&p, t, &x.bufs[t], 0).unwrap();
        let [b, n, h] = g.extents;
        assert_eq!(dims, vec![b, n, h, 64]);
        let (bi, si, hi, c) = (b - 1, n - 1, h - 1, 63);
        let want = crate::elem::widen_bits(p.dtype, x.bufs[t][g.offset(bi, si, hi) + c] as u32);
        assert_eq!(
            data[((bi * n + si) * h + hi) * 64 + c].to_bits(),
            want.to_bits()
        );
    }
    assert!(matches!(
        gather(&p, 0, &x.bufs[0][..10], 0),
        Err(Error::BufferLength { .. })
    ));
}

#[test]
fn a_dump_in_the_simulator_writes_what_sdpa_check_reads() {
    let root = temp("attn-dump");
    let backend = Backend::Simulator(Simulator::default());
    // Causal with seq_q > seq_kv: the first 3 rows see no key.
    let shape = Shape::new(1, 5, 2, 2, 1, 64).with_causal(true);
    let d = dump_case(&backend, None, (0, DType::F16, shape), 11, &root).unwrap();
    assert!(d.check.is_ok(), "{:?}", d.check);
    assert!(d.kernel.starts_with("attention/"), "{}", d.kernel);
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.dir.join("meta.json")).unwrap()).unwrap();
    assert_eq!(meta["dtype"], "f16");
    assert_eq!(meta["causal"], true);
    assert_eq!(
        meta["scale"].as_f64().unwrap() as f32,
        shape.softmax_scale()
    );
    assert_eq!(meta["kernel"], d.kernel.as_str());
    assert_eq!(meta["shape"]["seq_kv"], 2);
    assert_eq!(meta["check"]["ok"], true);
    assert_eq!(meta["check"]["rows"], 10);
    assert!(meta["check"]["error"].is_null());
    let read = |name: &str| npy::read(&d.dir.join(format!("{name}.npy"))).unwrap();
    let ((qs, q), (ks, _), (vs, _)) = (read("q"), read("k"), read("v"));
    assert_eq!(
        (qs, ks, vs),
        (vec![1, 5, 2, 64], vec![1, 2, 1, 64], vec![1, 2, 1, 64])
    );
    assert!(q
        .iter()
        .all(|&x| (-2.0..=2.0).contains(&x) && half::f16::from_f32(x).to_f32() == x));
    let ((os, o), (ls, lse)) = (read("o"), read("lse"));
    assert_eq!((os, ls), (vec![1, 5, 2, 64], vec![1, 2, 5]));
    // Rows 0..3 see nothing: O = 0, LSE = −inf; rows 3, 4 are finite.
    for h in 0..2 {
        for i in 0..5 {
            let l = lse[h * 5 + i];
            let row = &o[(i * 2 + h) * 64..][..64];
            if i < 3 {
                assert!(
                    l == f32::NEG_INFINITY && row.iter().all(|&x| x == 0.0),
                    "h{h} i{i}"
                );
            } else {
                assert!(
                    l.is_finite() && row.iter().all(|x| x.is_finite()),
                    "h{h} i{i}"
                );
            }
        }
    }
    let _ = std::fs::remove_dir_all(&root);
}
