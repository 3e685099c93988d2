//! Random inputs, the float64 reference with a per-dtype error bound, and the comparison.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rayon::prelude::*;
use rustile_kernels::registry::{DType, Layout};

use crate::elem::{round_bits, tiny, unit_roundoff, widen_bits};
use crate::error::{Error, Result};

use super::Problem;

/// Host-side inputs of one check, as values already rounded to the problem's dtype (so the
/// float64 reference sees exactly what the device does).
#[derive(Clone, Debug)]
pub struct Inputs {
    /// x in the problem's layout.
    pub x: Vec<f32>,
    /// w in the problem's layout (KRSC or KCRS).
    pub w: Vec<f32>,
    /// Bias (`k` floats), if the problem has one.
    pub bias: Option<Vec<f32>>,
}

fn rounded(dtype: DType, n: usize, seed: u64) -> Vec<f32> {
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..n)
        .map(|_| widen_bits(dtype, round_bits(dtype, rng.random_range(-1.0f32..1.0))))
        .collect()
}

impl Inputs {
    /// Fresh inputs in [-1, 1) rounded to the dtype, from `seed` (after [`Problem::check`]).
    pub fn random(p: &Problem, seed: u64) -> Result<Self> {
        p.check()?;
        let [lx, lw, _] = p.lens()?;
        Ok(Self {
            x: rounded(p.dtype, lx, seed),
            w: rounded(p.dtype, lw, seed ^ 0x9E37_79B9_7F4A_7C15),
            bias: p.bias.then(|| {
                let mut rng = SmallRng::seed_from_u64(seed ^ 0xB1A5);
                (0..p.k).map(|_| rng.random_range(-1.0f32..1.0)).collect()
            }),
        })
    }

    /// x as the device holds it: f32 values, or 16-bit bits.
    pub fn x_bits(&self, dtype: DType) -> Vec<u16> {
        to_bits(dtype, &self.x)
    }

    /// w as 16-bit bits.
    pub fn w_bits(&self, dtype: DType) -> Vec<u16> {
        to_bits(dtype, &self.w)
    }
}

/// Values (representable in `dtype`) as 16-bit bit patterns.
pub fn to_bits(dtype: DType, v: &[f32]) -> Vec<u16> {
    v.iter().map(|&x| round_bits(dtype, x) as u16).collect()
}

/// Element offset of `y[n][k][p][q]` in the problem's layout.
pub fn y_index(
    p: &Problem,
    (pp, qq): (usize, usize),
    n: usize,
    k: usize,
    oh: usize,
    ow: usize,
) -> usize {
    match p.layout {
        Layout::Nchw => ((n * p.k + k) * pp + oh) * qq + ow,
        _ => ((n * pp + oh) * qq + ow) * p.k + k,
    }
}

/// The float64 reference of output `(n, k, oh, ow)` and the sum of the absolute values of its
/// terms (the scale of its rounding error).
pub fn reference_at(
    p: &Problem,
    x: &Inputs,
    n: usize,
    k: usize,
    oh: usize,
    ow: usize,
) -> (f64, f64) {
    let (mut acc, mut abs) = (0f64, 0f64);
    let nchw = p.layout == Layout::Nchw;
    for r in 0..p.r {
        let ih = (oh * p.stride.0 + r * p.dil.0) as isize - p.pad.0 as isize;
        if ih < 0 || ih as usize >= p.h {
            continue;
        }
        for s in 0..p.s {
            let iw = (ow * p.stride.1 + s * p.dil.1) as isize - p.pad.1 as isize;
            if iw < 0 || iw as usize >= p.w {
                continue;
            }
            let (ih, iw) = (ih as usize, iw as usize);
            for c in 0..p.c {
                let (xi, wi) = if nchw {
                    (
                        ((n * p.c + c) * p.h + ih) * p.w + iw,
                        ((k * p.c + c) * p.r + r) * p.s + s,
                    )
                } else {
                    (
                        ((n * p.h + ih) * p.w + iw) * p.c + c,
                        ((k * p.r + r) * p.s + s) * p.c + c,
                    )
                };
                let t = x.x[xi] as f64 * x.w[wi] as f64;
                acc += t;
                abs += t.abs();
            }
        }
    }
    if let Some(b) = &x.bias {
        acc += b[k] as f64;
        abs += (b[k] as f64).abs();
    }
    if p.relu && acc < 0.0 {
        acc = 0.0;
    }
    (acc, abs)
}

/// The bound on `|got − r|` for an element with reference `r` and term scale `s`: the output's
/// rounding (twice the unit roundoff relative to `r`, plus the subnormal spacing), plus the
/// accumulation error. f32 kernels accumulate in f32 in any order: at most `γ_L · s` with
/// `L = R·S·C + 1` terms (Higham's bound, `γ_L = L·u / (1 − L·u)`). Tensor-core kernels:
/// `2⁻¹⁶ · s`, the GEMM family's bound (their f32 accumulation truncates products).
pub fn tolerance(p: &Problem, r: f64, s: f64) -> f64 {
    let out = 2.0 * unit_roundoff(p.dtype) * r.abs() + tiny(p.dtype);
    match p.dtype {
        DType::F32 => {
            let l = (p.r * p.s * p.c + 1) as f64;
            let u = 2f64.powi(-24);
            out + l * u / (1.0 - l * u) * s
        }
        _ => out + 2f64.powi(-16) * s,
    }
}

/// An output element `(n, k, oh, ow)`.
pub type At = (usize, usize, usize, usize);

/// Outputs to check: all when the problem is small, otherwise the first and last output rows
/// and columns of the first and last images for every channel, every channel of a random set
/// of pixels, and random elements.
pub fn elements_to_check(p: &Problem, seed: u64) -> Result<Vec<At>> {
    let (pp, qq) = p.out_hw()?;
    let (m, n, red) = p.gemm_dims()?;
    let all = |n_: usize| {
        (0..n_).flat_map(move |b| {
            (0..p.k).flat_map(move |k| {
                (0..pp).flat_map(move |oh| (0..qq).map(move |ow| (b, k, oh, ow)))
            })
        })
    };
    if (m * n) as f64 * red as f64 <= 1.5e9 {
        return Ok(all(p.n).collect());
    }
    let mut rng = SmallRng::seed_from_u64(seed ^ 0xC0DE);
    let mut v = Vec::new();
    for b in [0, p.n - 1] {
        for k in 0..p.k {
            for oh in [0, pp - 1] {
                for ow in (0..qq).step_by(3) {
                    v.push((b, k, oh, ow));
                }
            }
            for ow in [0, qq - 1] {
                for oh in (0..pp).step_by(3) {
                    v.push((b, k, oh, ow));
                }
            }
        }
    }
    for _ in 0..64 {
        let (b, oh, ow) = (
            rng.random_range(0..p.n),
            rng.random_range(0..pp),
            rng.random_range(0..qq),
        );
        v.extend((0..p.k).map(|k| (b, k, oh, ow)));
    }
    for _ in 0..4096 {
        v.push((
            rng.random_range(0..p.n),
            rng.random_range(0..p.k),
            rng.random_range(0..pp),
            rng.random_range(0..qq),
        ));
    }
    Ok(v)
}

/// Compares `got` (the output widened to f32, in the problem's layout) with the float64
/// reference on `which`; NaN never passes. Returns the elements compared and the worst
/// `|error| / bound`.
pub fn compare(
    p: &Problem,
    kernel: &str,
    x: &Inputs,
    got: &[f32],
    which: &[At],
) -> Result<(usize, f64)> {
    let (pp, qq) = p.out_hw()?;
    let worst = which
        .par_iter()
        .map(|&(n, k, oh, ow)| {
            let (r, s) = reference_at(p, x, n, k, oh, ow);
            let g = got[y_index(p, (pp, qq), n, k, oh, ow)] as f64;
            let tol = tolerance(p, r, s);
            if g.is_nan() || (g - r).abs() > tol {
                Err(format!(
                    "y[n={n}][k={k}][p={oh}][q={ow}] = {g}, float64 reference {r} (bound {tol:.3e})"
                ))
            } else {
                Ok((g - r).abs() / tol)
            }
        })
        .try_reduce(|| 0.0, |a, b| Ok(a.max(b)));
    match worst {
        Ok(w) => Ok((which.len(), w)),
        Err(detail) => Err(Error::Mismatch {
            kernel: kernel.into(),
            shape: p.label(),
            detail,
        }),
    }
}
