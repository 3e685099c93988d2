//! The conv family's cuDNN baseline and PyTorch scripts.
//!
//! CPU tests: cuDNN's absence is a typed error; `scripts/conv_torch.py` lists the same
//! ResNet-50 layers as `shapes.rs` and runs `--help` without PyTorch. GPU tests are
//! `#[ignore = "needs a GPU"]` (on the H200: `test-conv_cudnn --ignored --test-threads=1`):
//! the baseline against float64 on the validation shapes and every ResNet-50 layer, the
//! checked run's errors, and `conv_torch.py check` on a dump of cuDNN's output.

use std::path::PathBuf;
use std::process::Command;

use rustile::families::conv::cudnn::{self, CudnnConv, DevBuf, Op};
use rustile::families::conv::{dump, shapes, Addrs, Inputs, Problem};
use rustile::families::Scale;
use rustile::{Backend, DType, Error, Gpu};
use rustile_kernels::registry::Layout;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn strict() -> bool {
    std::env::var("RUSTILE_STRICT").is_ok_and(|v| v == "1")
}

/// `python3`, if there is one (with `RUSTILE_STRICT=1` there must be).
fn python() -> Option<&'static str> {
    let ok = Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(!strict(), "RUSTILE_STRICT=1 but python3 was not found");
        eprintln!("SKIPPED: python3 not found");
    }
    ok.then_some("python3")
}

/// `scripts/conv_torch.py`: in the source tree, or beside a staged binary (`bin/../scripts`),
/// or under the working directory.
fn script() -> PathBuf {
    let mut candidates = vec![PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts")];
    if let Some(dir) = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(|p| p.join("../scripts")))
    {
        candidates.push(dir);
    }
    candidates.push(PathBuf::from("scripts"));
    candidates
        .into_iter()
        .map(|d| d.join("conv_torch.py"))
        .find(|p| p.exists())
        .expect("scripts/conv_torch.py is in the tree or beside the binary")
}

#[test]
fn without_libcudnn_the_version_is_a_library_error_not_a_panic() {
    match cudnn::version() {
        Ok((major, _, _)) => assert!(major >= 8),
        Err(Error::Library { library, what }) => {
            assert_eq!(library, "cuDNN");
            assert!(what.contains("libcudnn"), "{what}");
        }
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn conv_torch_lists_the_same_resnet50_layers_as_shapes_rs() {
    let Some(py) = python() else { return };
    let out = Command::new(py)
        .arg(script())
        .arg("--print-shapes")
        .output()
        .expect("python3 runs");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let theirs: serde_json::Value = serde_json::from_str(text(&out.stdout).trim()).unwrap();
    let ours: serde_json::Value = serde_json::from_str(&shapes::resnet50_json()).unwrap();
    assert_eq!(theirs, ours, "conv_torch.py's RESNET50 and shapes.rs's");
}

#[test]
fn conv_torch_help_and_an_empty_check_need_neither_torch_nor_numpy() {
    let Some(py) = python() else { return };
    let out = Command::new(py)
        .arg(script())
        .arg("--help")
        .output()
        .expect("python3 runs");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let help = text(&out.stdout);
    assert!(help.contains("bench") && help.contains("check"), "{help}");
    let dir = std::env::temp_dir().join(format!("rustile-conv-empty-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = Command::new(py)
        .arg(script())
        .arg("check")
        .arg(&dir)
        .output()
        .expect("python3 runs");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("no case directory"));
    let _ = std::fs::remove_dir_all(&dir);
}

// ------------------------------------------------------------------------------ GPU tests

fn gpu() -> Gpu {
    Gpu::new(0).expect("these tests need a GPU")
}

fn fresh_seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

/// Checks each problem; prints one line per problem; returns the failures. With
/// `may_refuse`, a problem cuDNN has no algorithm for ([`Error::Unsupported`]) is listed as
/// refused instead of failed (the odd validation shapes: f32 NHWC, C = 3, K = 17 …).
fn check_all(
    gpu: &Gpu,
    problems: &[(String, Problem)],
    seed: u64,
    may_refuse: bool,
) -> Vec<String> {
    let mut failed = Vec::new();
    let mut refused = 0;
    for (name, p) in problems {
        let t = std::time::Instant::now();
        match CudnnConv::new(gpu, p).and_then(|c| {
            let s = c.check(gpu, seed)?;
            Ok((c.describe(), s))
        }) {
            Ok((what, s)) => println!(
                "ok   {name} {}: {what}; worst fused {:.3} conv {:.3} ({:.1} s)",
                p.label(),
                s.fused.worst,
                s.conv_only.worst,
                t.elapsed().as_secs_f64()
            ),
            Err(e @ Error::Unsupported { .. }) if may_refuse => {
                refused += 1;
                println!("REFUSED {name} {}: {e}", p.label());
            }
            Err(e) => {
                println!("FAIL {name} {}: {e}", p.label());
                failed.push(format!("{name} {}: {e}", p.label()));
            }
        }
    }
    println!(
        "{} problems: {} ok, {refused} refused by cuDNN, {} failed",
        problems.len(),
        problems.len() - refused - failed.len(),
        failed.len()
    );
    failed
}

#[test]
#[ignore = "needs a GPU"]
fn cudnn_computes_rustiles_op_on_the_validation_shapes() {
    let gpu = gpu();
    let seed = fresh_seed();
    println!(
        "{} (seed {seed})",
        cudnn::version().map_or_else(|e| e.to_string(), |v| format!("cuDNN {v:?}"))
    );
    let backend = Backend::Gpu(gpu);
    let mut problems = Vec::new();
    for dtype in [DType::F16, DType::Bf16, DType::F32] {
        for p in rustile::families::conv::shapes(&backend, Scale::Quick, dtype) {
            problems.push((String::new(), p));
            if dtype == DType::F32 {
                problems.push((String::new(), p.with_layout(Layout::Nchw)));
            }
        }
    }
    let Backend::Gpu(gpu) = backend else {
        unreachable!()
    };
    let failed = check_all(&gpu, &problems, seed, true);
    assert!(
        failed.is_empty(),
        "{} of {} failed:\n{}",
        failed.len(),
        problems.len(),
        failed.join("\n")
    );
}

#[test]
#[ignore = "needs a GPU"]
fn cudnn_runs_and_matches_float64_on_every_resnet50_layer() {
    let gpu = gpu();
    let seed = fresh_seed();
    let named = |v: Vec<(&'static str, Problem)>| -> Vec<(String, Problem)> {
        v.into_iter().map(|(n, p)| (n.to_string(), p)).collect()
    };
    let mut problems = named(shapes::resnet50(32, DType::F16));
    problems.extend(named(shapes::resnet50(32, DType::Bf16)));
    problems.extend(named(shapes::f32_study(32)));
    problems.extend(named(shapes::resnet50(1, DType::F16)));
    problems.extend(named(shapes::f32_study(1)));
    let failed = check_all(&gpu, &problems, seed, false);
    assert!(
        failed.is_empty(),
        "{} of {} failed:\n{}",
        failed.len(),
        problems.len(),
        failed.join("\n")
    );
}

#[test]
#[ignore = "needs a GPU"]
fn the_checked_run_rejects_wrong_buffers_with_typed_errors() {
    let gpu = gpu();
    let p = Problem::new(1, 9, 9, 16, 24, 3, 1, DType::F16);
    let conv = CudnnConv::new(&gpu, &p).unwrap();
    let [lx, lw, ly] = p.lens().unwrap();
    let x = DevBuf::zeros(&gpu, DType::F16, lx, "x").unwrap();
    let w = DevBuf::zeros(&gpu, DType::F16, lw, "w").unwrap();
    let b = conv.bias_from_f32(&gpu, &[0.5; 24]).unwrap();
    let mut y = DevBuf::zeros(&gpu, DType::F16, ly, "y").unwrap();
    conv.run(Op::Fused, &x, &w, Some(&b), &mut y).unwrap();
    conv.run(Op::ConvOnly, &x, &w, None, &mut y).unwrap();
    let got = y.download(&gpu, DType::F16, "y").unwrap();
    assert!(got.iter().all(|&v| v == 0.0));
    let mut short = DevBuf::zeros(&gpu, DType::F16, ly - 1, "y").unwrap();
    assert!(matches!(
        conv.run(Op::Fused, &x, &w, Some(&b), &mut short),
        Err(Error::BufferLength { buffer: "y", .. })
    ));
    let mut f32y = DevBuf::zeros(&gpu, DType::F32, ly, "y").unwrap();
    assert!(matches!(
        conv.run(Op::Fused, &x, &w, Some(&b), &mut f32y),
        Err(Error::DTypeMismatch { buffer: "y", .. })
    ));
    assert!(matches!(
        conv.run(Op::Fused, &x, &w, None, &mut y),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(matches!(
        conv.run(Op::ConvOnly, &x, &w, Some(&b), &mut y),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(matches!(
        conv.bias_from_f32(&gpu, &[0.0; 23]),
        Err(Error::BufferLength { .. })
    ));
    let a = Addrs {
        x: x.addr(gpu.stream()),
        w: w.addr(gpu.stream()),
        bias: 0,
        y: y.addr(gpu.stream()),
    };
    // SAFETY: the buffers hold the problem's lengths and outlive the synchronisation below.
    let r = unsafe { conv.run_fused(&a) };
    assert!(matches!(r, Err(Error::InvalidArgument { .. })), "{r:?}");
    // SAFETY: as above.
    unsafe { conv.run_conv_only(&a) }.unwrap();
    gpu.synchronize("cuDNN").unwrap();
    for t in conv.trials() {
        println!("{}", t.describe());
    }
    println!("{}", conv.describe());
}

#[test]
#[ignore = "needs a GPU"]
fn conv_torch_check_passes_cudnn_output_and_fails_a_corrupted_one() {
    let gpu = gpu();
    let Some(py) = python() else { return };
    let has_torch = Command::new(py)
        .args(["-c", "import torch, numpy"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_torch {
        assert!(!strict(), "RUSTILE_STRICT=1 but python3 has no torch/numpy");
        eprintln!("SKIPPED: python3 has no torch/numpy");
        return;
    }
    let root = std::env::temp_dir().join(format!("rustile-conv-torch-{}", std::process::id()));
    let mut p3 = Problem::new(2, 11, 9, 24, 40, 3, 1, DType::F16).with_stride(2);
    p3.pad = (1, 0);
    let cases = [
        p3,
        Problem::new(1, 9, 9, 16, 8, 5, 2, DType::Bf16).with_dilation(2),
        Problem::new(2, 8, 8, 8, 16, 3, 1, DType::F32)
            .with_layout(Layout::Nchw)
            .with_epilogue(false, true),
        Problem::new(1, 7, 7, 16, 16, 1, 0, DType::Bf16).with_epilogue(true, false),
    ];
    let mut dirs = Vec::new();
    for (i, p) in cases.iter().enumerate() {
        let conv = CudnnConv::new(&gpu, p).unwrap();
        let mut x = Inputs::random(p, 11 + i as u64).unwrap();
        // The bias as cuDNN reads it (rounded to its bias type), so the dump is its op.
        if let Some(b) = x.bias.as_mut() {
            let rounded = conv.bias_from_f32(&gpu, b).unwrap();
            *b = rounded.download(&gpu, conv.bias_dtype(), "bias").unwrap();
        }
        let [_, _, ly] = p.lens().unwrap();
        let bx = DevBuf::upload(&gpu, p.dtype, &x.x, "x").unwrap();
        let bw = DevBuf::upload(&gpu, p.dtype, &x.w, "w").unwrap();
        let bb = x
            .bias
            .as_ref()
            .map(|b| conv.bias_from_f32(&gpu, b).unwrap());
        let mut by = DevBuf::poisoned(&gpu, p.dtype, ly, "y").unwrap();
        conv.run(Op::Fused, &bx, &bw, bb.as_ref(), &mut by).unwrap();
        let y = by.download(&gpu, p.dtype, "y").unwrap();
        let check = dump::CheckSummary::of(&Ok((0, 0.0)));
        let meta = dump::meta(
            p,
            format!("cudnn/{}", conv.fused().name()),
            11,
            "gpu".into(),
            check,
        )
        .unwrap();
        let dir = root.join(dump::case_name(i, p));
        dump::write_case(&dir, p, &x, &y, &meta).unwrap();
        dirs.push((dir, *p, x, y));
    }
    let run = || {
        Command::new(py)
            .arg(script())
            .arg("check")
            .arg(&root)
            .output()
            .expect("python3 runs")
    };
    let out = run();
    let report = text(&out.stdout);
    println!("{report}{}", text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{report}");
    assert!(report.contains("ALL OK (4 cases)"), "{report}");
    // One element off by far more than the bound: that case fails, and the script says which.
    let (dir, p, x, mut y) = dirs.swap_remove(1);
    y[5] += 1.0;
    let meta = dump::meta(
        &p,
        "cudnn/corrupted".into(),
        11,
        "gpu".into(),
        dump::CheckSummary::of(&Ok((0, 0.0))),
    )
    .unwrap();
    dump::write_case(&dir, &p, &x, &y, &meta).unwrap();
    let out = run();
    let report = text(&out.stdout);
    println!("{report}");
    assert_eq!(out.status.code(), Some(1), "{report}");
    assert!(
        report.contains("1 of 4 cases FAILED") && report.contains("1 elements outside"),
        "{report}"
    );
    let _ = std::fs::remove_dir_all(&root);
}
