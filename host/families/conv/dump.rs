//! A kernel's inputs and output as `.npy` files, one directory per case, for the PyTorch
//! cross-check (`scripts/conv_torch.py check ROOT`).
//!
//! A case directory holds `meta.json` (the [`Problem`]'s fields, the stride / padding /
//! dilation pairs as `[vertical, horizontal]`, the output size, the kernel, seed, back end,
//! the arrays' layouts and encoding, and rustile's own float64 check) and:
//! - `x.npy`: the activations, NHWC `(n, h, w, c)` (NCHW `(n, c, h, w)` for an NCHW f32
//!   problem);
//! - `w.npy`: the weights, KRSC `(k, r, s, c)` (KCRS `(k, c, r, s)` for NCHW);
//! - `bias.npy`: the bias, f32 `(k,)` (absent without a bias);
//! - `y.npy`: the kernel's output, NHWC `(n, p, q, k)` (NCHW `(n, k, p, q)`).
//!
//! x, w and y are in the problem's dtype: `<f4` for f32, `<f2` for f16, and for bf16 (NumPy
//! has none) `<u2` bit patterns, which widen to f32 exactly as `bits << 16`.

use std::path::{Path, PathBuf};

use rustile_kernels::registry::{DType, KernelInfo, Layout};

use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::npy;

use super::*;

/// What `meta.json` says about the arrays' encoding.
pub const BF16_NOTE: &str = "bf16 is stored as uint16 bit patterns ('<u2'): \
    widen with (bits.astype(uint32) << 16).view(float32)";

/// rustile's own check of a dumped case.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct CheckSummary {
    /// Whether every compared element is within its bound.
    pub ok: bool,
    /// Elements compared with float64 (0 when the check failed).
    pub compared: usize,
    /// The worst `|error| / bound` (≤ 1 when `ok`).
    pub worst: f64,
    /// The failure, if any.
    pub error: Option<String>,
}

impl CheckSummary {
    /// From [`compare`]'s result.
    pub fn of(r: &Result<(usize, f64)>) -> Self {
        match r {
            Ok((compared, worst)) => Self {
                ok: true,
                compared: *compared,
                worst: *worst,
                error: None,
            },
            Err(e) => Self {
                ok: false,
                compared: 0,
                worst: f64::NAN,
                error: Some(e.to_string()),
            },
        }
    }
}

/// `meta.json`.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Meta {
    /// The problem's fields (`n, h, w, c, k, r, s, stride, pad, dil, dtype, layout, bias,
    /// relu`).
    #[serde(flatten)]
    pub problem: Problem,
    /// Output height.
    pub p: usize,
    /// Output width.
    pub q: usize,
    /// `nhwc` / `nchw`: x's and y's layout.
    pub x_layout: &'static str,
    /// `krsc` / `kcrs`.
    pub w_layout: &'static str,
    /// `<f4`, `<f2`, or `<u2` (bf16 bits) for x, w and y; the bias is always `<f4`.
    pub encoding: &'static str,
    /// How to read bf16 (empty for the other dtypes).
    pub note: &'static str,
    /// `conv/<record>` that ran.
    pub kernel: String,
    /// Seed of the inputs.
    pub seed: u64,
    /// Where it ran (`simulator` or the device's name).
    pub backend: String,
    /// rustile's own comparison with float64.
    pub check: CheckSummary,
}

/// One dumped case.
#[derive(Clone, Debug)]
pub struct Dumped {
    /// Its directory.
    pub dir: PathBuf,
    /// rustile's check of the output (the output is written either way).
    pub check: CheckSummary,
}

/// The directory name of case `i`: `03-f16-n2-9x11-c24-k40-3x3-s2-p1-d1-nhwc-bias-relu`.
pub fn case_name(i: usize, p: &Problem) -> String {
    let pair = |(a, b): (usize, usize)| {
        if a == b {
            format!("{a}")
        } else {
            format!("{a},{b}")
        }
    };
    format!(
        "{i:02}-{}-n{}-{}x{}-c{}-k{}-{}x{}-s{}-p{}-d{}-{}{}{}",
        p.dtype.name(),
        p.n,
        p.h,
        p.w,
        p.c,
        p.k,
        p.r,
        p.s,
        pair(p.stride),
        pair(p.pad),
        pair(p.dil),
        layout_name(p.layout),
        if p.bias { "-bias" } else { "" },
        if p.relu { "-relu" } else { "" }
    )
}

/// The arrays' shapes `[x, w, y]` in the problem's layout.
pub fn array_shapes(p: &Problem) -> Result<[Vec<usize>; 3]> {
    let (pp, qq) = p.out_hw()?;
    Ok(match p.layout {
        Layout::Nchw => [
            vec![p.n, p.c, p.h, p.w],
            vec![p.k, p.c, p.r, p.s],
            vec![p.n, p.k, pp, qq],
        ],
        _ => [
            vec![p.n, p.h, p.w, p.c],
            vec![p.k, p.r, p.s, p.c],
            vec![p.n, pp, qq, p.k],
        ],
    })
}

/// The `.npy` type string of `dtype`'s arrays.
pub fn encoding(dtype: DType) -> &'static str {
    match dtype {
        DType::F32 => "<f4",
        DType::F16 => "<f2",
        DType::Bf16 => "<u2",
    }
}

/// Writes `values` (representable in `dtype`, NaN allowed) as `dtype`'s encoding.
fn write_array(path: &Path, dtype: DType, shape: &[usize], values: &[f32]) -> Result<()> {
    match dtype {
        DType::F32 => npy::write(path, shape, values),
        DType::F16 => {
            let h: Vec<half::f16> = values.iter().map(|&v| half::f16::from_f32(v)).collect();
            npy::write(path, shape, &h)
        }
        DType::Bf16 => npy::write(path, shape, &to_bits(DType::Bf16, values)),
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.display().to_string(),
        source,
    }
}

/// Writes one case into `dir` (created): the inputs `x`, the output `y` (widened to f32, in
/// the problem's layout) and `meta`.
pub fn write_case(dir: &Path, p: &Problem, x: &Inputs, y: &[f32], meta: &Meta) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let [sx, sw, sy] = array_shapes(p)?;
    write_array(&dir.join("x.npy"), p.dtype, &sx, &x.x)?;
    write_array(&dir.join("w.npy"), p.dtype, &sw, &x.w)?;
    if let Some(b) = &x.bias {
        npy::write(&dir.join("bias.npy"), &[p.k], b)?;
    }
    write_array(&dir.join("y.npy"), p.dtype, &sy, y)?;
    let path = dir.join("meta.json");
    let json =
        serde_json::to_string_pretty(meta).map_err(|e| Error::Usage(format!("JSON: {e}")))?;
    std::fs::write(&path, json + "\n").map_err(io(&path))
}

/// The metadata of `p` run by `kernel` on `backend` from `seed`, with rustile's `check`.
pub fn meta(
    p: &Problem,
    kernel: String,
    seed: u64,
    backend: String,
    check: CheckSummary,
) -> Result<Meta> {
    let (pp, qq) = p.out_hw()?;
    Ok(Meta {
        problem: *p,
        p: pp,
        q: qq,
        x_layout: layout_name(p.layout),
        w_layout: match p.layout {
            Layout::Nchw => "kcrs",
            _ => "krsc",
        },
        encoding: encoding(p.dtype),
        note: if p.dtype == DType::Bf16 {
            BF16_NOTE
        } else {
            ""
        },
        kernel,
        seed,
        backend,
        check,
    })
}

/// Runs `record` on `problem` on `backend` with fresh inputs from `seed`, checks the output
/// against float64 and writes the case into `dir`. A wrong output is still written (the
/// cross-check is there to look at it) and reported in [`Dumped::check`]; a problem the
/// kernel cannot run is an error.
pub fn dump(
    backend: &Backend,
    record: &'static KernelInfo,
    problem: &Problem,
    seed: u64,
    dir: &Path,
) -> Result<Dumped> {
    let p = problem;
    p.check()?;
    backend.check_fits(p.bytes()?, &format!("{}: x, w, y and bias", p.label()))?;
    let x = Inputs::random(p, seed)?;
    let y = output(backend, record, p, &x)?;
    let which = elements_to_check(p, seed)?;
    let check = CheckSummary::of(&compare(p, &kernel_label(record), &x, &y, &which));
    let m = meta(p, kernel_label(record), seed, backend.name(), check.clone())?;
    write_case(dir, p, &x, &y, &m)?;
    Ok(Dumped {
        dir: dir.to_path_buf(),
        check,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::elem::round_bits;

    /// The float64 reference of every output, rounded to the dtype: what a correct kernel
    /// writes.
    fn reference_output(p: &Problem, x: &Inputs) -> Vec<f32> {
        let (pp, qq) = p.out_hw().unwrap();
        let mut y = vec![f32::NAN; p.lens().unwrap()[2]];
        for (n, k, oh, ow) in elements_to_check(p, 0).unwrap() {
            let r = reference_at(p, x, n, k, oh, ow).0 as f32;
            y[y_index(p, (pp, qq), n, k, oh, ow)] =
                crate::elem::widen_bits(p.dtype, round_bits(p.dtype, r));
        }
        y
    }

    fn temp(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("rustile-conv-dump-{name}-{}", std::process::id()))
    }

    #[test]
    fn a_case_round_trips_through_its_files_in_every_dtype_and_layout() {
        for (dtype, layout) in [
            (DType::F16, Layout::Nhwc),
            (DType::Bf16, Layout::Nhwc),
            (DType::F32, Layout::Nchw),
            (DType::F32, Layout::Nhwc),
        ] {
            let mut p = Problem::new(2, 5, 7, 3, 4, 3, 1, dtype)
                .with_stride(2)
                .with_layout(layout);
            p.pad = (1, 0);
            let x = Inputs::random(&p, 7).unwrap();
            let y = reference_output(&p, &x);
            let dir = temp(&format!("{}-{}", dtype.name(), layout_name(layout)));
            let check = CheckSummary::of(&compare(
                &p,
                "ref",
                &x,
                &y,
                &elements_to_check(&p, 7).unwrap(),
            ));
            assert!(check.ok, "{check:?}");
            let m = meta(&p, "conv/test".into(), 7, "cpu".into(), check).unwrap();
            write_case(&dir, &p, &x, &y, &m).unwrap();
            let [sx, sw, sy] = array_shapes(&p).unwrap();
            // Each array reads back bit for bit, in its encoding.
            let back = |name: &str| -> (Vec<usize>, Vec<f32>) {
                let path = dir.join(name);
                match dtype {
                    DType::F32 => npy::read(&path).unwrap(),
                    DType::F16 => {
                        let (s, v) = npy::read_as::<half::f16>(&path).unwrap();
                        (s, v.into_iter().map(|h| h.to_f32()).collect())
                    }
                    DType::Bf16 => {
                        let (s, v) = npy::read_as::<u16>(&path).unwrap();
                        (
                            s,
                            v.into_iter()
                                .map(|b| f32::from_bits((b as u32) << 16))
                                .collect(),
                        )
                    }
                }
            };
            assert_eq!(back("x.npy"), (sx, x.x.clone()));
            assert_eq!(back("w.npy"), (sw, x.w.clone()));
            assert_eq!(back("y.npy"), (sy, y.clone()));
            assert_eq!(
                npy::read(&dir.join("bias.npy")).unwrap(),
                (vec![4], x.bias.clone().unwrap())
            );
            let j: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(dir.join("meta.json")).unwrap())
                    .unwrap();
            assert_eq!(j["stride"], serde_json::json!([2, 2]));
            assert_eq!(j["pad"], serde_json::json!([1, 0]));
            assert_eq!(j["dil"], serde_json::json!([1, 1]));
            assert_eq!((j["p"].as_u64(), j["q"].as_u64()), (Some(3), Some(3)));
            assert_eq!(j["dtype"], dtype.name());
            assert_eq!(j["layout"], layout_name(layout));
            assert_eq!(j["encoding"], encoding(dtype));
            assert_eq!(
                j["w_layout"],
                if layout == Layout::Nchw {
                    "kcrs"
                } else {
                    "krsc"
                }
            );
            assert_eq!(
                (j["bias"].as_bool(), j["relu"].as_bool()),
                (Some(true), Some(true))
            );
            assert_eq!(j["check"]["ok"], true);
            assert_eq!(j["note"].as_str().unwrap().is_empty(), dtype != DType::Bf16);
            let _ = std::fs::remove_dir_all(&dir);
        }
    }

    #[test]
    fn without_a_bias_there_is_no_bias_file_and_names_say_what_ran() {
        let p = Problem::new(1, 4, 4, 2, 2, 1, 0, DType::F16).with_epilogue(false, false);
        let x = Inputs::random(&p, 1).unwrap();
        let y = reference_output(&p, &x);
        let dir = temp("nobias");
        let m = meta(
            &p,
            "conv/test".into(),
            1,
            "cpu".into(),
            CheckSummary::of(&Ok((16, 0.0))),
        )
        .unwrap();
        write_case(&dir, &p, &x, &y, &m).unwrap();
        assert!(!dir.join("bias.npy").exists());
        assert!(dir.join("y.npy").exists());
        let _ = std::fs::remove_dir_all(&dir);
        let mut q = Problem::new(2, 9, 11, 24, 40, 3, 1, DType::F16).with_stride(2);
        assert_eq!(
            case_name(3, &q),
            "03-f16-n2-9x11-c24-k40-3x3-s2-p1-d1-nhwc-bias-relu"
        );
        q.pad = (1, 0);
        q.bias = false;
        assert_eq!(
            case_name(12, &q),
            "12-f16-n2-9x11-c24-k40-3x3-s2-p1,0-d1-nhwc-relu"
        );
        let failed = CheckSummary::of(&Err(Error::Usage("wrong".into())));
        assert!(!failed.ok && failed.error.as_deref() == Some("wrong"));
    }
}
