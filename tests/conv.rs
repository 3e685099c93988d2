//! Convolution checks that need no GPU: every bad input is a typed error before anything is
//! allocated (the problem, the front door's lengths, bias and dtype), the output size and
//! index arithmetic, the float64 reference and its bound (a planted wrong element and NaN are
//! caught), the TMA kernel's im2col geometry and its width/split choice, and the split-K
//! fix-up kernel in the simulator. The GPU tests are `#[ignore = "needs a GPU"]`: every conv
//! kernel on small odd shapes (the sanitizers run these) and the front door on the H200.

use rustile::api::check_conv2d;
use rustile::conv::{self, tma, Inputs, Problem, Target};
use rustile::half::f16;
use rustile::sim::Simulator;
use rustile::{Backend, DType, Error};
use rustile_kernels::registry::Layout;

fn seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(7)
}

fn base() -> Problem {
    Problem::new(2, 9, 11, 16, 24, 3, 1, DType::F16)
}

#[test]
fn bad_problems_are_typed_errors() {
    let zero = |f: &dyn Fn(&mut Problem)| {
        let mut p = base();
        f(&mut p);
        p.check()
    };
    for f in [
        &(|p: &mut Problem| p.n = 0) as &dyn Fn(&mut Problem),
        &|p| p.h = 0,
        &|p| p.w = 0,
        &|p| p.c = 0,
        &|p| p.k = 0,
        &|p| p.stride = (0, 1),
        &|p| p.stride = (1, 0),
        &|p| p.dil = (0, 1),
    ] {
        assert!(
            matches!(zero(f), Err(Error::ZeroSize { .. })),
            "{:?}",
            zero(f)
        );
    }
    // Filter sizes other than 1, 3, 5, 7.
    let mut p = base();
    p.r = 2;
    assert!(matches!(p.check(), Err(Error::Unsupported { .. })));
    // Padding that leaves no output: a 7×7 filter on a 3×3 image without padding.
    let p = Problem::new(1, 3, 3, 8, 8, 7, 0, DType::F16);
    assert!(
        matches!(p.check(), Err(Error::InvalidArgument { .. })),
        "{:?}",
        p.check()
    );
    // Dilation that makes the filter larger than the padded image.
    let p = Problem::new(1, 6, 6, 8, 8, 3, 0, DType::F16).with_dilation(3);
    assert!(matches!(p.check(), Err(Error::InvalidArgument { .. })));
    // NCHW is the f32 study layout only.
    let p = base().with_layout(Layout::Nchw);
    assert!(matches!(p.check(), Err(Error::Unsupported { .. })));
    // A layout that is not a convolution's.
    let p = base().with_layout(Layout::Bn);
    assert!(matches!(p.check(), Err(Error::InvalidArgument { .. })));
    // Sizes past the kernels' index types: an error, not a wrapped index.
    let p = Problem::new(1 << 20, 1 << 12, 1 << 12, 8, 8, 1, 0, DType::F16);
    assert!(
        matches!(p.check(), Err(Error::TooLarge { .. })),
        "{:?}",
        p.check()
    );
    let p = Problem::new(usize::MAX / 2, 3, 3, 8, 8, 1, 0, DType::F16);
    assert!(matches!(p.check(), Err(Error::TooLarge { .. })));
    let p = Problem::new(1, 40000, 4, 8, 8, 1, 0, DType::F16);
    assert!(matches!(p.check(), Err(Error::TooLarge { .. })));
}

#[test]
fn front_door_checks_lengths_bias_and_dtype() {
    let p = base();
    let [lx, lw, ly] = p.lens().unwrap();
    assert!(check_conv2d::<f16>(&p, lx, lw, Some(p.k), ly).is_ok());
    let short = |r: rustile::Result<()>, name: &str| match r {
        Err(Error::BufferLength { buffer, .. }) => assert_eq!(buffer, name),
        other => panic!("{name}: {other:?}"),
    };
    short(check_conv2d::<f16>(&p, lx - 1, lw, Some(p.k), ly), "x");
    short(check_conv2d::<f16>(&p, lx, lw - 1, Some(p.k), ly), "w");
    short(check_conv2d::<f16>(&p, lx, lw, Some(p.k), ly - 1), "y");
    short(check_conv2d::<f16>(&p, lx, lw, Some(p.k + 1), ly), "bias");
    assert!(matches!(
        check_conv2d::<f16>(&p, lx, lw, None, ly),
        Err(Error::InvalidArgument { .. })
    ));
    let nb = p.with_epilogue(false, true);
    assert!(matches!(
        check_conv2d::<f16>(&nb, lx, lw, Some(p.k), ly),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(matches!(
        check_conv2d::<f32>(&p, lx, lw, Some(p.k), ly),
        Err(Error::DTypeMismatch { .. })
    ));
}

#[test]
fn output_size_and_lengths() {
    // 56² 3×3 pad 1: same size; stride 2 odd 11 → 6; dilation 2 pad 2 → same.
    assert_eq!(
        Problem::new(1, 56, 56, 8, 8, 3, 1, DType::F16)
            .out_hw()
            .unwrap(),
        (56, 56)
    );
    let p = Problem::new(2, 11, 9, 8, 8, 3, 1, DType::F16).with_stride(2);
    assert_eq!(p.out_hw().unwrap(), (6, 5));
    let p = Problem::new(1, 10, 10, 8, 8, 3, 2, DType::F16).with_dilation(2);
    assert_eq!(p.out_hw().unwrap(), (10, 10));
    let p = Problem::new(32, 224, 224, 3, 64, 7, 3, DType::F16).with_stride(2);
    assert_eq!(p.out_hw().unwrap(), (112, 112));
    assert_eq!(
        p.lens().unwrap(),
        [32 * 224 * 224 * 3, 64 * 7 * 7 * 3, 32 * 112 * 112 * 64]
    );
    assert_eq!(p.flops(), 2.0 * 32.0 * 112.0 * 112.0 * 64.0 * 147.0);
}

#[test]
fn the_comparison_catches_a_wrong_element_and_nan() {
    let p = Problem::new(1, 6, 5, 8, 4, 3, 1, DType::Bf16);
    let x = Inputs::random(&p, seed()).unwrap();
    let (pp, qq) = p.out_hw().unwrap();
    let which = conv::elements_to_check(&p, 1).unwrap();
    let mut y = vec![0f32; p.lens().unwrap()[2]];
    for &(n, k, oh, ow) in &which {
        let (r, _) = conv::reference_at(&p, &x, n, k, oh, ow);
        let b = rustile::elem::round_bits(DType::Bf16, r as f32);
        y[conv::y_index(&p, (pp, qq), n, k, oh, ow)] = rustile::elem::widen_bits(DType::Bf16, b);
    }
    let (n, worst) = conv::compare(&p, "t", &x, &y, &which).unwrap();
    assert_eq!(n, y.len());
    assert!(worst <= 1.0);
    let i = conv::y_index(&p, (pp, qq), 0, 3, 2, 1);
    let mut bad = y.clone();
    bad[i] += 0.05 + bad[i].abs() * 0.05;
    assert!(matches!(
        conv::compare(&p, "t", &x, &bad, &which),
        Err(Error::Mismatch { .. })
    ));
    bad[i] = f32::NAN;
    assert!(matches!(
        conv::compare(&p, "t", &x, &bad, &which),
        Err(Error::Mismatch { .. })
    ));
}

#[test]
fn im2col_geometry_and_tile_choice() {
    // 56² 3×3 pad 1: the box of tap (0, 0) runs from −1 to 54 inclusive (half-open upper −1).
    let p = Problem::new(32, 56, 56, 64, 64, 3, 1, DType::F16);
    let g = tma::im2col(&p).unwrap();
    assert_eq!((g.lower, g.upper, g.strides), ([-1, -1], [-1, -1], [1, 1]));
    // Stride 2: P = 28 positions at stride 2 from −1: box [−1, 54), upper 54 − 56 = −2.
    let p2 = Problem::new(32, 56, 56, 128, 128, 3, 1, DType::F16).with_stride(2);
    let g = tma::im2col(&p2).unwrap();
    assert_eq!((g.lower, g.upper, g.strides), ([-1, -1], [-2, -2], [2, 2]));
    // The stem's C = 3 is not a 16-byte pitch: the TMA kernel refuses it, typed.
    let stem = Problem::new(32, 224, 224, 3, 64, 7, 3, DType::F16).with_stride(2);
    let rec = rustile::KERNELS
        .iter()
        .copied()
        .find(|k| k.family.name == "conv" && k.name == "wgmma")
        .unwrap();
    assert!(matches!(
        tma::supports(&stem, rec),
        Err(Error::Unsupported { .. })
    ));
    // Batch 1 at 7²: 4 tiles of 128 × 64 on 132 SMs, so the estimate splits the reduction.
    let (_, r) = tma::choose(&Problem::new(1, 7, 7, 512, 512, 3, 1, DType::F16), 132).unwrap();
    match r {
        tma::Reduce::Split(s) if tma::SPLIT_K_ENABLED => assert!(s >= 2, "{s} parts"),
        r => assert_eq!(r, tma::Reduce::Split(1)),
    }
    let (w, r) = tma::choose(&p, 132).unwrap();
    assert_eq!(r, tma::Reduce::Split(1));
    // 56² with K = 64 at batch 32: 784 tiles of 128 × 64, a 9-k-tile reduction: the 64-wide
    // tile at two blocks per SM (measured 276 against 268 TFLOP/s for the 64-wide ping-pong).
    assert_eq!(w.name, "wgmma_n64x2");
    // Every ResNet-50 layer at batch 32 gets the width measured fastest on the H200
    // (2026-12-04, bench-results/2026-12-04-h200-conv-pingpong/run2: every width forced),
    // or one within 1 % of it (l2.b0.conv2: the 128-wide ping-pong 299 = the 64-wide's 299).
    let picks = [
        ("l1.b0.conv1", "wgmma_n64x2"),
        ("l1.b0.conv2", "wgmma_n64x2"),
        ("l1.b0.conv3", "wgmma_n256"),
        ("l1.b1.conv1", "wgmma_n64x2"),
        ("l2.b0.conv1", "wgmma_pp"),
        ("l2.b0.conv2", "wgmma_pp"),
        ("l2.b0.conv3", "wgmma_n256"),
        ("l2.b0.down", "wgmma_n256"),
        ("l2.b1.conv1", "wgmma_n64_pp"),
        ("l2.b1.conv2", "wgmma_pp"),
        ("l3.b0.conv1", "wgmma_pp"),
        ("l3.b0.conv2", "wgmma_pp"),
        ("l3.b0.conv3", "wgmma_pp"),
        ("l3.b0.down", "wgmma_pp"),
        ("l3.b1.conv1", "wgmma_pp"),
        ("l3.b1.conv2", "wgmma_pp"),
        ("l4.b0.conv1", "wgmma_n256"),
        ("l4.b0.conv3", "wgmma_n256"),
        ("l4.b0.down", "wgmma_n256"),
        ("l4.b1.conv1", "wgmma_n64_pp"),
    ];
    let layers = conv::shapes::resnet50(32, DType::F16);
    for (name, want) in picks {
        let (_, p) = layers.iter().find(|(n, _)| *n == name).unwrap();
        let (w, r) = tma::choose(p, 132).unwrap();
        assert_eq!((w.name, r), (want, tma::Reduce::Split(1)), "{name}");
    }
    let at = |n, hw, c, k, rs, stride| {
        let p = Problem::new(n, hw, hw, c, k, rs, rs / 2, DType::F16).with_stride(stride);
        tma::choose(&p, 132).unwrap().0.name
    };
    // Few tiles (7² × 512: 104): two blocks would share SMs while others idle (0.65×).
    assert_ne!(at(32, 7, 512, 512, 3, 1), "wgmma_n64x2");
    // There the 52 tiles of 128 × 128 cut in two (104 blocks) beat the 104 whole tiles of
    // 128 × 64 (measured 0.92× the time); no other ResNet-50 layer at batch 32 cuts.
    let p = Problem::new(32, 7, 7, 512, 512, 3, 1, DType::F16);
    let (w, r) = tma::choose(&p, 132).unwrap();
    assert_eq!((w.name, r), ("wgmma", tma::Reduce::Cut(2)));
    for (name, p) in conv::shapes::resnet50(32, DType::F16) {
        let Ok((_, r)) = tma::choose(&p, 132) else {
            continue;
        };
        let cut = matches!(r, tma::Reduce::Cut(_));
        assert_eq!(
            cut,
            name == "l4.b1.conv2" || name == "l4.b0.conv2",
            "{name}: {r:?}"
        );
    }
    // Batch 1: split-K where the reduction is long (7² × 512: 72 k-tiles, measured 2×), whole
    // tiles where it is 16 k-tiles (l4.b0.conv1, l3.b1.conv1, l4.b0.down: split measured
    // 1.08–1.16× slower).
    let split_at_b1 = |hw, c, k, rs, stride| {
        let p = Problem::new(1, hw, hw, c, k, rs, rs / 2, DType::F16).with_stride(stride);
        tma::choose(&p, 132).unwrap().1
    };
    assert!(matches!(split_at_b1(7, 512, 512, 3, 1), tma::Reduce::Split(s) if s > 1));
    assert_eq!(split_at_b1(14, 1024, 512, 1, 1), tma::Reduce::Split(1));
    assert_eq!(split_at_b1(14, 1024, 256, 1, 1), tma::Reduce::Split(1));
    assert_eq!(split_at_b1(14, 1024, 2048, 1, 2), tma::Reduce::Split(1));
    // At batch 1 the segments would be short (measured slower): no layer cuts.
    for (name, p) in conv::shapes::resnet50(1, DType::F16) {
        if let Ok((_, r)) = tma::choose(&p, 132) {
            assert!(!matches!(r, tma::Reduce::Cut(_)), "{name}: {r:?}");
        }
    }
    // Batch 1: never enough tiles for two blocks per SM.
    for (name, p) in conv::shapes::resnet50(1, DType::F16) {
        if let Ok((w, _)) = tma::choose(&p, 132) {
            assert_ne!(w.name, "wgmma_n64x2", "{name}");
        }
    }
}

#[test]
fn the_dispatcher_picks_per_target_and_refuses_with_a_reason() {
    let on = |t: Target, p: &Problem| conv::select(t, p).map(|r| r.name);
    let sm90 = Target::Gpu {
        flavour: rustile::ptx::Flavour::Sm90a,
    };
    let sm80 = Target::Gpu {
        flavour: rustile::ptx::Flavour::Sm80,
    };
    let p = Problem::new(1, 9, 9, 16, 8, 3, 1, DType::F16);
    assert_eq!(on(sm90, &p).unwrap(), "wgmma");
    assert_eq!(on(sm80, &p).unwrap(), "mma");
    assert_eq!(on(Target::Simulator, &p).unwrap(), "mma");
    // C = 3: no 16-byte pixel pitch, the element-load kernel everywhere.
    let stem = Problem::new(1, 9, 9, 3, 8, 3, 1, DType::F16);
    assert_eq!(on(sm90, &stem).unwrap(), "mma_any");
    assert_eq!(on(Target::Simulator, &stem).unwrap(), "mma_any");
    // f32: the register-blocked study kernel in NHWC, the k-major one in NCHW (any C).
    let f = Problem::new(1, 9, 9, 3, 8, 3, 1, DType::F32);
    assert_eq!(on(sm90, &f).unwrap(), "regblock");
    assert_eq!(on(sm90, &f.with_layout(Layout::Nchw)).unwrap(), "kmajor");
    assert_eq!(on(sm80, &f.with_layout(Layout::Nchw)).unwrap(), "kmajor");
    // A problem that fails its own checks is refused before any kernel is considered.
    let bad = Problem::new(1, 9, 9, 16, 8, 2, 1, DType::F16);
    assert!(matches!(
        conv::select(sm90, &bad),
        Err(Error::Unsupported { .. })
    ));
}

#[test]
#[ignore = "needs a GPU"]
fn every_conv_kernel_on_small_odd_shapes() {
    // The cases the sanitizers run: every runnable kernel × dtype on the odd shapes, split-K
    // forced for the TMA kernel.
    let backend = Backend::Gpu(rustile::Gpu::new(0).expect("a GPU"));
    let s = seed();
    let family = conv::FAMILY;
    // RUSTILE_CONV_KERNELS=a,b limits the run to those kernels (`conv/a`, `conv/b`), so a slow
    // sanitizer can take the kernels in groups.
    let only: Option<Vec<String>> = std::env::var("RUSTILE_CONV_KERNELS")
        .ok()
        .map(|v| v.split(',').map(|k| format!("conv/{k}")).collect());
    // RUSTILE_CONV_MAX_CASES=n keeps the first n cases of each kernel and layout (the smallest
    // shapes).
    let max: usize = std::env::var("RUSTILE_CONV_MAX_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(usize::MAX);
    let mut per_kernel = std::collections::HashMap::<String, usize>::new();
    let cases: Vec<_> = family
        .cases(&backend, rustile::families::Scale::Quick)
        .into_iter()
        .filter(|c| only.as_ref().is_none_or(|o| o.contains(&c.kernel)))
        .filter(|c| {
            let layout = if c.shape.contains("nchw") {
                "nchw"
            } else {
                "nhwc"
            };
            let n = per_kernel
                .entry(format!("{} {layout}", c.kernel))
                .or_default();
            *n += 1;
            *n <= max
        })
        .collect();
    assert!(!cases.is_empty());
    let failed: Vec<String> = cases
        .iter()
        .enumerate()
        .filter_map(|(i, c)| {
            family
                .run(&backend, c, s ^ i as u64)
                .error
                .map(|e| format!("{}: {e}", c.label()))
        })
        .collect();
    assert!(failed.is_empty(), "seed {s}: {failed:#?}");
    println!("{} conv cases passed on the GPU (seed {s})", cases.len());
}

#[test]
#[ignore = "needs a GPU"]
fn the_front_door_runs() {
    let gpu = rustile::Gpu::new(0).expect("a GPU");
    let p = Problem::new(2, 14, 14, 64, 72, 3, 1, DType::F16);
    let [lx, lw, ly] = p.lens().unwrap();
    let x = gpu.upload(&vec![f16::from_f32(0.25); lx], "x").unwrap();
    let w = gpu.upload(&vec![f16::from_f32(0.5); lw], "w").unwrap();
    let bias = gpu.upload(&vec![1.0f32; p.k], "bias").unwrap();
    let mut y = gpu.alloc::<f16>(ly, "y").unwrap();
    let ran = rustile::api::conv2d(&gpu, &p, &x, &w, Some(&bias), &mut y).unwrap();
    let got = gpu.download(&y, "y").unwrap();
    // The centre pixel sees all 9 taps × 64 channels: 576 · 0.125 + 1.
    let centre = ((14 + 7) * p.k) + 5;
    assert_eq!(got[centre].to_f32(), 73.0, "{ran}");
}

#[test]
fn the_split_k_fixup_sums_adds_the_bias_and_clamps() {
    use rustile::launch::{Arg, LaunchPlan};
    use rustile_kernels::conv::combine;
    let sim = Simulator::default();
    let (rows, kout, splits) = (37usize, 6usize, 3usize);
    let total = rows * kout;
    let parts: Vec<f32> = (0..splits * total)
        .map(|i| ((i * 7919) % 13) as f32 * 0.25 - 1.5)
        .collect();
    let bias: Vec<f32> = (0..kout).map(|j| j as f32 * 0.5 - 1.0).collect();
    let bp = sim.alloc::<f32>(parts.len(), "parts").unwrap();
    sim.write(&bp, &parts).unwrap();
    let bb = sim.alloc::<f32>(kout, "bias").unwrap();
    sim.write(&bb, &bias).unwrap();
    let by = sim.alloc::<u16>(total, "y").unwrap();
    let entry = combine::INFO.entry(DType::F16).unwrap();
    for relu in [0u32, 1] {
        let plan = LaunchPlan::new(
            &combine::INFO,
            entry,
            ((total as u64).div_ceil(combine::THREADS as u64), 1, 1),
            vec![
                Arg::Ptr(bp.addr()),
                Arg::Ptr(bb.addr()),
                Arg::Ptr(by.addr()),
                Arg::U32(rows as u32),
                Arg::U32(kout as u32),
                Arg::U32(splits as u32),
                Arg::U32(relu),
            ],
        );
        plan.simulate(&sim).unwrap();
        let y = sim.read(&by).unwrap();
        for i in 0..total {
            let mut want = bias[i % kout] + (0..splits).map(|s| parts[s * total + i]).sum::<f32>();
            if relu == 1 {
                want = want.max(0.0);
            }
            let got = f16::from_bits(y[i]).to_f32();
            assert_eq!(
                got,
                f16::from_f32(want).to_f32(),
                "element {i}, relu {relu}"
            );
        }
    }
}

#[test]
fn a_cut_launch_is_one_block_per_segment_and_refused_past_the_sms() {
    // `Reduce::Cut(n)`: the stream-K walk over `tiles · n` blocks. With `n` dividing the
    // k-tiles every block holds one segment of one tile, the tile's first segment on the lowest
    // of its `n` blocks (the fix-up waits on later blocks only); otherwise ranges cross tile
    // ends but still cover every iteration once.
    use rustile_kernels::gpu::sched::StreamK;
    for (tiles, k, n) in [
        (52u32, 72u32, 2u32),
        (32, 72, 3),
        (2, 9, 2),
        (2, 9, 5),
        (1, 4, 4),
    ] {
        let blocks = tma::cut_grid(tiles, n, 132).expect("fits");
        assert_eq!(blocks, tiles * n);
        let sk = StreamK::new(tiles, k, blocks);
        let mut seen = vec![0u32; (tiles * k) as usize];
        for b in 0..blocks {
            let segs: Vec<_> = sk.segments(b).collect();
            if k % n == 0 {
                assert_eq!(segs.len(), 1, "{tiles} {k} {n} block {b}");
                let s = segs[0];
                assert_eq!(
                    (s.t, s.kb, s.ke),
                    (b / n, (b % n) * k / n, (b % n + 1) * k / n)
                );
            }
            for s in segs {
                for j in s.kb..s.ke {
                    seen[(s.t * k + j) as usize] += 1;
                }
            }
        }
        assert!(seen.iter().all(|&c| c == 1), "{tiles} {k} {n}");
    }
    // The 7² × 512 layer at batch 32: 104 tiles of 128 × 64 cut in two need 208 blocks.
    let e = tma::cut_grid(104, 2, 132).unwrap_err();
    assert!(e.contains("208 blocks") && e.contains("132 SMs"), "{e}");
    assert!(tma::cut_grid(3, 0, 132).is_err());
    assert_eq!(tma::cut_grid(52, 2, 132), Ok(104));
    // With no width pinned (`--variants wgmma --cut N`), a cut runs at the widest tile that
    // fits: 7² × 512 at batch 32 is 1568 × 512, 52 tiles of 128 × 128 (cut 2: 104 blocks), 104
    // of 128 × 64.
    use rustile_kernels::conv::v05_wgmma as v05;
    let p = Problem::new(32, 7, 7, 512, 512, 3, 1, DType::F16);
    assert_eq!(tma::cut_width(&p, 2, 132).name, v05::INFO.name);
    assert_eq!(tma::cut_width(&p, 1, 132).name, v05::INFO.name);
    // Cut 3 fits no width (156 and 312 blocks): the 64-wide, whose launch reports it.
    assert_eq!(tma::cut_width(&p, 3, 132).name, v05::WIDTHS[0].name);
    // 14² × 512 at stride 2 is the same GEMM.
    let p = p.with_stride(2);
    let p = Problem { h: 14, w: 14, ..p };
    assert_eq!(tma::cut_width(&p, 2, 132).name, v05::INFO.name);
}

#[test]
fn the_f32_regblock_splits_only_the_layers_whose_last_wave_is_part_empty() {
    use rustile_kernels::conv::v03_regblock as regblock;
    let split = |h: usize, c: usize, layout| {
        let p = Problem::new(32, h, h, c, c, 3, 1, DType::F32).with_layout(layout);
        conv::direct_splits(&regblock::INFO, &p, 132).unwrap()
    };
    for layout in [Layout::Nhwc, Layout::Nchw] {
        // 784 and 392 tiles of 128 × 64: 5.9 and 3.0 waves on 132 SMs — whole tiles.
        assert_eq!(split(56, 64, layout), 1);
        assert_eq!(split(28, 128, layout), 1);
        // 196 tiles (1.48 waves) in 2 parts: 392 blocks, 2.97 waves.
        assert_eq!(split(14, 256, layout), 2);
        // 104 tiles (0.79 of a wave) in 5 parts: 520 blocks, 3.94 waves.
        assert_eq!(split(7, 512, layout), 5);
    }
    // The other steps never split; a forced split of one is a typed refusal.
    let p = Problem::new(32, 7, 7, 512, 512, 3, 1, DType::F32).with_layout(Layout::Nchw);
    let kmajor = &rustile_kernels::conv::v06_kmajor::INFO;
    assert_eq!(conv::direct_splits(kmajor, &p, 132).unwrap(), 1);
    let a = conv::Addrs::default();
    assert!(matches!(
        conv::split_plans(&p, kmajor, &a, 2, 0),
        Err(Error::Unsupported { .. })
    ));
    // A split launch is the kernel over z = parts into the workspace, then the fix-up into y.
    let a = conv::Addrs {
        x: 0x1000,
        w: 0x2000,
        bias: 0x3000,
        y: 0x4000,
    };
    let (main, fix) = conv::split_plans(&p, &regblock::INFO, &a, 5, 0x9000).unwrap();
    assert_eq!(main.grid.2, 5);
    assert_eq!(
        conv::split_workspace_len(&p, 5).unwrap(),
        5 * p.lens().unwrap()[2]
    );
    let fix = fix.expect("a fix-up plan");
    assert_eq!(fix.kernel.name, "combine_f32");
    assert!(conv::split_plans(&p, &regblock::INFO, &a, 1, 0)
        .unwrap()
        .1
        .is_none());
}
