//! `rustile run FAMILY[/VARIANT] --in … --out … --sim` on `.npy` files written here, against
//! float64 (or exact) CPU references; bad files are typed errors that write nothing;
//! `rustile validate --case … --seed S` replays a case bit for bit; a failing case is dumped
//! as `.npy` through the real dump path. No GPU needed (the simulator).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rustile::families::run::{self, Data, Tensor};
use rustile::families::{suite, Case, Family, Scale};
use rustile::{npy, Backend, DType};

fn rustile(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rustile"))
        .args(args)
        .output()
        .expect("the rustile binary runs")
}

fn ok(args: &[&str]) -> String {
    let out = rustile(args);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "rustile {args:?}: {text}");
    text
}

/// A fresh directory for one test.
fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rustile-npy-run-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn random(rng: &mut SmallRng, n: usize) -> Vec<f32> {
    (0..n).map(|_| rng.random_range(-1.0f32..1.0)).collect()
}

/// `α·A·B + β·C` in float64 and each element's term scale `Σ|a·b|·|α| + |β·c|`.
fn gemm_ref(
    m: usize,
    n: usize,
    k: usize,
    a: &[f64],
    b: &[f64],
    ab: (f64, f64),
    c: &[f64],
) -> Vec<(f64, f64)> {
    (0..m * n)
        .map(|ij| {
            let (i, j) = (ij / n, ij % n);
            let (mut v, mut sc) = (0.0, 0.0);
            for p in 0..k {
                v += a[i * k + p] * b[p * n + j];
                sc += (a[i * k + p] * b[p * n + j]).abs();
            }
            (
                ab.0 * v + ab.1 * c[ij],
                ab.0.abs() * sc + (ab.1 * c[ij]).abs(),
            )
        })
        .collect()
}

fn assert_close(what: &str, got: &[f32], want: &[(f64, f64)], u: f64, k: usize) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (&g, &(r, sc))) in got.iter().zip(want).enumerate() {
        // γ_k-style bound: (k + 2)·u of the terms' magnitude, plus the output rounding.
        let tol = (k as f64 + 2.0) * u * sc + u * r.abs() + 1e-30;
        assert!(
            (g as f64 - r).abs() <= tol,
            "{what}[{i}] = {g}, float64 {r}, tolerance {tol:e}"
        );
    }
}

#[test]
fn gemm_runs_on_npy_files_in_the_simulator() {
    let d = dir("gemm");
    let mut rng = SmallRng::seed_from_u64(11);
    let (m, n, k) = (33, 29, 17);
    let (a, b, c) = (
        random(&mut rng, m * k),
        random(&mut rng, k * n),
        random(&mut rng, m * n),
    );
    npy::write(&d.join("a.npy"), &[m, k], &a).unwrap();
    npy::write(&d.join("b.npy"), &[k, n], &b).unwrap();
    npy::write(&d.join("c.npy"), &[m, n], &c).unwrap();
    let wide = |v: &[f32]| v.iter().map(|&x| x as f64).collect::<Vec<_>>();
    for (id, ab) in [
        ("gemm", (1.0, 0.0)),
        ("gemm/naive", (0.5, -1.5)),
        ("gemm/warptile", (1.0, 0.0)),
    ] {
        let out = d.join("out.npy");
        let (alpha, beta) = (ab.0.to_string(), ab.1.to_string());
        let (pa, pb) = (d.join("a.npy"), d.join("b.npy"));
        let mut args = vec!["run", id, "--sim", "--in", s(&pa), s(&pb)];
        args.extend(["--alpha", &alpha, "--beta", &beta, "--out", s(&out)]);
        let cpath = d.join("c.npy");
        if ab.1 != 0.0 {
            args.extend(["--c", s(&cpath)]);
        }
        ok(&args);
        let (shape, got) = npy::read(&out).unwrap();
        assert_eq!(shape, vec![m, n], "{id}");
        let want = gemm_ref(m, n, k, &wide(&a), &wide(&b), ab, &wide(&c));
        assert_close(id, &got, &want, f32::EPSILON as f64 / 2.0, k);
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn hgemm_runs_f16_and_bf16_with_bias_and_relu() {
    let d = dir("hgemm");
    let mut rng = SmallRng::seed_from_u64(12);
    let (m, n, k) = (37, 24, 40);
    let (a, b, bias) = (
        random(&mut rng, m * k),
        random(&mut rng, k * n),
        random(&mut rng, n),
    );
    npy::write(&d.join("bias.npy"), &[n], &bias).unwrap();
    for ty in [DType::F16, DType::Bf16] {
        let round = |v: &[f32]| -> (Vec<u16>, Vec<f64>) {
            let bits: Vec<u16> = v.iter().map(|&x| rustile::hgemm::round(ty, x)).collect();
            let wide = bits
                .iter()
                .map(|&h| rustile::hgemm::widen(ty, h) as f64)
                .collect();
            (bits, wide)
        };
        let ((ab, aw), (bb, bw)) = (round(&a), round(&b));
        let write = |name: &str, shape: &[usize], bits: &[u16]| {
            let path = d.join(name);
            match ty {
                DType::F16 => {
                    let h: Vec<_> = bits.iter().map(|&x| half::f16::from_bits(x)).collect();
                    npy::write(&path, shape, &h).unwrap()
                }
                _ => npy::write(&path, shape, bits).unwrap(),
            }
            path
        };
        let (pa, pb) = (write("a.npy", &[m, k], &ab), write("b.npy", &[k, n], &bb));
        let out = d.join("c.npy");
        let mut args = vec!["run", "hgemm/mma", "--sim", "--in", s(&pa), s(&pb)];
        let bias_path = d.join("bias.npy");
        args.extend(["--bias", s(&bias_path), "--relu", "--out", s(&out)]);
        if ty == DType::Bf16 {
            // bf16 travels as <u2 bit patterns: refused unless the caller says bf16.
            let refused = rustile(&args);
            assert!(!refused.status.success());
            assert!(String::from_utf8_lossy(&refused.stderr).contains("--dtype bf16"));
            assert!(!out.exists(), "a refused run writes nothing");
            args.extend(["--dtype", "bf16"]);
        }
        ok(&args);
        let got: Vec<f32> = match ty {
            DType::F16 => npy::read_as::<half::f16>(&out)
                .unwrap()
                .1
                .iter()
                .map(|x| x.to_f32())
                .collect(),
            _ => npy::read_as::<u16>(&out)
                .unwrap()
                .1
                .iter()
                .map(|&x| rustile::hgemm::widen(ty, x))
                .collect(),
        };
        let mut want = gemm_ref(m, n, k, &aw, &bw, (1.0, 0.0), &vec![0.0; m * n]);
        for (ij, w) in want.iter_mut().enumerate() {
            let v = w.0 + bias[ij % n] as f64;
            *w = (v.max(0.0), w.1 + (bias[ij % n] as f64).abs());
        }
        // f32 accumulation, then one rounding to the output type.
        let u_out = rustile::elem::unit_roundoff(ty);
        for (i, (&g, &(r, sc))) in got.iter().zip(&want).enumerate() {
            let tol =
                (k as f64 + 2.0) * (f32::EPSILON as f64 / 2.0) * sc + 2.0 * u_out * r.abs() + 1e-6;
            assert!(
                (g as f64 - r).abs() <= tol,
                "{} [{i}] = {g}, float64 {r}",
                ty.name()
            );
        }
        std::fs::remove_file(&out).unwrap();
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn memory_families_run_exactly() {
    let d = dir("memory");
    let mut rng = SmallRng::seed_from_u64(13);
    let x: Vec<f32> = random(&mut rng, 31 * 45);
    npy::write(&d.join("x2.npy"), &[31, 45], &x).unwrap();
    let h: Vec<half::f16> = x.iter().map(|&v| half::f16::from_f32(v)).collect();
    npy::write(&d.join("h.npy"), &[3, 5, 93], &h).unwrap();
    npy::write(&d.join("x1.npy"), &[x.len()], &x).unwrap();
    let out = d.join("y.npy");
    ok(&[
        "run",
        "transpose",
        "--sim",
        "--in",
        s(&d.join("x2.npy")),
        "--out",
        s(&out),
    ]);
    let (shape, y) = npy::read(&out).unwrap();
    assert_eq!(shape, vec![45, 31]);
    for i in 0..31 {
        for j in 0..45 {
            assert_eq!(y[j * 31 + i].to_bits(), x[i * 45 + j].to_bits());
        }
    }
    ok(&[
        "run",
        "copy/vec16",
        "--sim",
        "--in",
        s(&d.join("h.npy")),
        "--out",
        s(&out),
    ]);
    let (shape, y) = npy::read_as::<half::f16>(&out).unwrap();
    assert_eq!(shape, vec![3, 5, 93]);
    assert!(y.iter().zip(&h).all(|(a, b)| a.to_bits() == b.to_bits()));
    ok(&[
        "run",
        "strided",
        "--sim",
        "--stride",
        "7",
        "--in",
        s(&d.join("x1.npy")),
        "--out",
        s(&out),
    ]);
    let (shape, y) = npy::read(&out).unwrap();
    assert_eq!(shape, vec![(x.len() - 1) / 7 + 1]);
    assert!(y
        .iter()
        .enumerate()
        .all(|(i, v)| v.to_bits() == x[7 * i].to_bits()));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn bad_files_are_typed_errors_that_write_nothing() {
    let d = dir("bad");
    npy::write(&d.join("a.npy"), &[4, 3], &[0.5f32; 12]).unwrap();
    npy::write(&d.join("b.npy"), &[5, 2], &[0.5f32; 10]).unwrap();
    npy::write(&d.join("v.npy"), &[12], &[0.5f32; 12]).unwrap();
    npy::write(&d.join("b3.npy"), &[3, 2], &[0.5f32; 6]).unwrap();
    let h: Vec<half::f16> = vec![half::f16::ONE; 6];
    npy::write(&d.join("h.npy"), &[3, 2], &h).unwrap();
    // A float64 file and a Fortran-order one, by editing a header of the same length.
    let edit = |name: &str, from: &str, to: &str| {
        let mut bytes = std::fs::read(d.join("a.npy")).unwrap();
        let at = bytes
            .windows(from.len())
            .position(|w| w == from.as_bytes())
            .unwrap();
        bytes[at..at + from.len()].copy_from_slice(to.as_bytes());
        std::fs::write(d.join(name), bytes).unwrap();
    };
    edit("f8.npy", "'<f4'", "'<i4'");
    edit("fortran.npy", "False", "True ");
    let out = d.join("y.npy");
    let p = |n: &str| d.join(n).to_str().unwrap().to_string();
    for (args, says) in [
        (&["gemm", "a.npy", "b.npy"][..], "K differs"),
        (&["gemm", "a.npy", "v.npy"][..], "wants 2 dimensions"),
        (&["gemm", "a.npy"][..], "takes 2 --in arrays"),
        (&["gemm", "a.npy", "h.npy"][..], "one element type"),
        (&["gemm", "f8.npy", "b.npy"][..], "'<i4' is not supported"),
        (&["gemm", "fortran.npy", "b.npy"][..], "Fortran order"),
        (&["hgemm", "a.npy", "a.npy"][..], "hgemm takes f16 or bf16"),
        (&["gemm/nonesuch", "a.npy", "b3.npy"][..], "nonesuch"),
        (&["strided", "v.npy"][..], "--stride"),
        (&["transpose", "v.npy"][..], "wants 2 dimensions"),
        (&["nosuchfamily", "v.npy"][..], "unknown family"),
    ] {
        let mut line = vec![
            "run".to_string(),
            args[0].to_string(),
            "--sim".into(),
            "--in".into(),
        ];
        line.extend(args[1..].iter().map(|n| p(n)));
        line.extend(["--out".into(), p("y.npy")]);
        let line: Vec<&str> = line.iter().map(String::as_str).collect();
        let r = rustile(&line);
        let err = String::from_utf8_lossy(&r.stderr);
        assert_eq!(r.status.code(), Some(1), "{line:?}: {err}");
        assert!(err.contains(says), "{line:?}: wanted `{says}` in {err}");
        assert!(!out.exists(), "{line:?} wrote {}", out.display());
    }
    // Usage errors (exit 2): a kernel without --in/--out, --in without a kernel.
    assert_eq!(rustile(&["run", "gemm", "--sim"]).status.code(), Some(2));
    assert_eq!(
        rustile(&["run", "--in", &p("a.npy")]).status.code(),
        Some(2)
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// The files of a dump directory, name → bytes.
fn dump_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "npy"))
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&p).unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

/// The one case directory under `root`.
fn only_case(root: &Path) -> PathBuf {
    let dirs: Vec<_> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs[0].clone()
}

#[test]
fn a_printed_seed_replays_a_case_bit_for_bit() {
    for (family, case) in [
        ("gemm", "gemm/warptile f32 129x131x36"),
        ("copy", "copy/vec16 f16 n=1000"),
        ("hgemm", "hgemm/mma f16"),
    ] {
        let (d1, d2, d3) = (dir("seed1"), dir("seed2"), dir("seed3"));
        for (d, seed) in [(&d1, "977"), (&d2, "977"), (&d3, "978")] {
            let text = ok(&[
                "validate",
                family,
                "--sim",
                "--case",
                case,
                "--seed",
                seed,
                "--dump",
                s(d),
            ]);
            assert!(
                text.contains("1 passed, 0 failed") || case.starts_with("hgemm"),
                "{text}"
            );
        }
        // hgemm's label prefix picks several cases: compare each.
        let names = |d: &Path| {
            let mut v: Vec<_> = std::fs::read_dir(d)
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
            v.sort();
            v
        };
        assert_eq!(names(&d1), names(&d2));
        assert!(!names(&d1).is_empty());
        for case_dir in names(&d1) {
            let (f1, f2) = (
                dump_files(&d1.join(&case_dir)),
                dump_files(&d2.join(&case_dir)),
            );
            let listed: Vec<_> = f1.iter().map(|f| f.0.as_str()).collect();
            for want in ["out.npy", "reference.npy"] {
                assert!(listed.contains(&want), "{case_dir:?}: {listed:?}");
            }
            assert_eq!(f1, f2, "{case_dir:?}: same seed, same bits");
        }
        // Another seed draws other inputs.
        let other = dump_files(&only_or_first(&d3));
        let first = dump_files(&only_or_first(&d1));
        assert_ne!(other, first, "{case}: seed 978 drew the inputs of 977");
        for d in [d1, d2, d3] {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

fn only_or_first(root: &Path) -> PathBuf {
    let mut dirs: Vec<_> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs[0].clone()
}

#[test]
fn the_seed_of_a_case_does_not_depend_on_the_others() {
    let sim = Backend::Simulator(rustile::sim::Simulator::default());
    let family = rustile::families::find("copy").unwrap();
    let all = family.cases(&sim, Scale::Quick);
    let label = all[3].label();
    let picked = suite::Selection {
        case: Some(label.clone()),
        ..Default::default()
    };
    let one = suite::validate_with(&sim, &[family], Scale::Quick, 5, &picked, |_, _, _| {});
    assert_eq!(one.len(), 1);
    assert_eq!(one[0].seed, suite::case_seed(5, &label));
    assert!(one[0].error.is_none(), "{:?}", one[0].error);
    assert_ne!(
        suite::case_seed(5, &label),
        suite::case_seed(5, &all[4].label())
    );
}

/// A family with one case whose check captures its tensors and then fails: the failure is
/// dumped through [`suite::validate_with`]'s own path.
struct Planted;

impl Family for Planted {
    fn name(&self) -> &'static str {
        "planted"
    }
    fn about(&self) -> &'static str {
        "a case that fails on purpose"
    }
    fn cases(&self, _: &Backend, _: Scale) -> Vec<Case> {
        vec![Case::new(
            "planted/v",
            DType::F32,
            "n=3",
            |_: &Backend, seed: u64| {
                let x = vec![seed as f32, 1.0, 2.0];
                run::capture("x", &[3], || Data::F32(x.clone()));
                run::capture("out", &[3], || Data::F32(vec![0.0, 1.0, 2.0]));
                run::capture("reference", &[3], || Data::F32(x.clone()));
                Err(rustile::Error::Usage("planted mismatch".into()))
            },
        )]
    }
}

#[test]
fn a_failing_case_is_dumped_as_npy() {
    let d = dir("fail");
    let sim = Backend::Simulator(rustile::sim::Simulator::default());
    let sel = suite::Selection {
        failures: Some(d.clone()),
        ..Default::default()
    };
    let out = suite::validate_with(&sim, &[&Planted], Scale::Quick, 1, &sel, |_, _, _| {});
    assert_eq!(out.len(), 1);
    assert!(out[0]
        .error
        .as_deref()
        .unwrap()
        .contains("planted mismatch"));
    let case_dir = PathBuf::from(out[0].dump.as_deref().unwrap());
    assert_eq!(case_dir, only_case(&d));
    let seed = suite::case_seed(1, "planted/v f32 n=3");
    let t = Tensor::read(&case_dir.join("x.npy"), false).unwrap();
    assert_eq!(t.data, Data::F32(vec![seed as f32, 1.0, 2.0]));
    let meta = std::fs::read_to_string(case_dir.join("meta.txt")).unwrap();
    assert!(
        meta.contains("planted mismatch") && meta.contains(&format!("seed: {seed}")),
        "{meta}"
    );
    assert_eq!(dump_files(&case_dir).len(), 3);
    // A passing case is not dumped unless asked.
    let sim_copy = rustile::families::find("copy").unwrap();
    let pass_dir = dir("pass");
    let sel = suite::Selection {
        case: Some("copy/scalar f32 n=7".into()),
        failures: Some(pass_dir.clone()),
        ..Default::default()
    };
    let out = suite::validate_with(&sim, &[sim_copy], Scale::Quick, 1, &sel, |_, _, _| {});
    assert_eq!((out.len(), out[0].dump.is_none()), (1, true));
    assert_eq!(std::fs::read_dir(&pass_dir).unwrap().count(), 0);
    let _ = std::fs::remove_dir_all(&d);
    let _ = std::fs::remove_dir_all(&pass_dir);
}

#[test]
fn bf16_is_read_from_u2_only_when_asked_and_from_ml_dtypes_v2() {
    let d = dir("bf16");
    let bits: Vec<u16> = vec![0x3F80, 0xBF80, 0x7FC0, 0x0001];
    let path = d.join("u2.npy");
    npy::write(&path, &[2, 2], &bits).unwrap();
    assert!(matches!(
        Tensor::read(&path, false),
        Err(rustile::Error::InvalidArgument { .. })
    ));
    let t = Tensor::read(&path, true).unwrap();
    assert_eq!(
        (t.shape.clone(), t.data.clone()),
        (vec![2, 2], Data::Bf16(bits.clone()))
    );
    // ml_dtypes' bfloat16 saves as '<V2': read as bf16 without the flag.
    let mut bytes = std::fs::read(&path).unwrap();
    let at = bytes.windows(5).position(|w| w == b"'<u2'").unwrap();
    bytes[at + 1..at + 4].copy_from_slice(b"<V2");
    let v2 = d.join("v2.npy");
    std::fs::write(&v2, &bytes).unwrap();
    assert_eq!(npy::descr(&bytes).unwrap(), "<V2");
    assert_eq!(Tensor::read(&v2, false).unwrap().data, Data::Bf16(bits));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn npy_files_are_read_no_further_than_their_header_says() {
    use rustile::npy;
    let dir = std::env::temp_dir().join(format!("rustile-npy-bounds-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let write = |name: &str, bytes: &[u8]| {
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    };
    let header = |h: &str| {
        let mut h = h.as_bytes().to_vec();
        while !(10 + h.len() + 1).is_multiple_of(64) {
            h.push(b' ');
        }
        h.push(b'\n');
        let mut b = b"\x93NUMPY\x01\x00".to_vec();
        b.extend((h.len() as u16).to_le_bytes());
        b.extend(h);
        b
    };
    // A shape of 10^12 elements over 16 bytes of data: only those are read, then refused.
    let mut big = header("{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000000,), }");
    big.extend([0u8; 16]);
    let p = write("big.npy", &big);
    assert_eq!(npy::read_file(&p).unwrap().len(), big.len());
    let e = npy::read(&p).unwrap_err().to_string();
    assert!(e.contains("16 bytes follow the header"), "{e}");
    // More data than the shape needs: one byte past it is read, and the length is refused.
    let mut long = header("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }");
    let head = long.len();
    long.extend([0u8; 4096]);
    let p = write("long.npy", &long);
    assert_eq!(npy::read_file(&p).unwrap().len(), head + 9);
    assert!(npy::read(&p).is_err());
    // A version-2 header of 4 GiB is refused after its 12 bytes.
    let mut v2 = b"\x93NUMPY\x02\x00".to_vec();
    v2.extend(u32::MAX.to_le_bytes());
    v2.extend([b' '; 64]);
    let p = write("v2.npy", &v2);
    let e = npy::read(&p).unwrap_err().to_string();
    assert!(e.contains("at most 1048576"), "{e}");
    // Not .npy at all: the first bytes say so.
    if std::path::Path::new("/dev/zero").exists() {
        let e = npy::read(std::path::Path::new("/dev/zero"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("not an .npy file"), "{e}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
