//! Random inputs, the float64 reference, tolerances and the comparison.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rayon::prelude::*;
use rustile_kernels::registry::DType;

use crate::error::{Error, Result};

use super::*;

/// Random inputs in [-1, 1), rounded to the type.
pub fn random_bits(ty: DType, len: usize, seed: u64) -> Vec<u16> {
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..len)
        .map(|_| round(ty, rng.random_range(-1.0f32..1.0)))
        .collect()
}

/// Host-side inputs of one check.
pub struct Inputs {
    /// A bits.
    pub a: Vec<u16>,
    /// B bits.
    pub b: Vec<u16>,
    /// Old C (as f32), used when β ≠ 0.
    pub c: Vec<f32>,
    /// Bias, if any.
    pub bias: Option<Vec<f32>>,
}

impl Inputs {
    /// Fresh inputs for `p`: A and B in [-1, 1) rounded to the input type, an old C in [-1, 1)
    /// representable in the output type, and a bias when `with_bias`. A shape whose spans
    /// overflow is [`Error::TooLarge`] (callers check the bytes against their back end first:
    /// [`Problem::bytes`]).
    pub fn random(p: &Problem, with_bias: bool, seed: u64) -> Result<Self> {
        let [la, lb, lc] = p.lens()?;
        let mut rng = SmallRng::seed_from_u64(seed ^ 0x51);
        let c = (0..lc)
            .map(|_| {
                let v: f32 = rng.random_range(-1.0..1.0);
                match p.out {
                    DType::F32 => v,
                    _ => widen(p.ty, round(p.ty, v)),
                }
            })
            .collect();
        Ok(Self {
            a: random_bits(p.ty, la, seed),
            b: random_bits(p.ty, lb, seed ^ 0x9E37_79B9),
            c,
            bias: with_bias.then(|| {
                let mut rng = SmallRng::seed_from_u64(seed ^ 0xB1A5);
                (0..p.n).map(|_| rng.random_range(-1.0f32..1.0)).collect()
            }),
        })
    }

    /// C before the launch as output-type bits: NaN when β = 0 (so a skipped element cannot
    /// pass), the old C otherwise.
    pub(super) fn c_before_half(&self, p: &Problem) -> Vec<u16> {
        if p.beta == 0.0 {
            vec![0x7FFF; self.c.len()]
        } else {
            self.c.iter().map(|&v| round(p.ty, v)).collect()
        }
    }

    /// As [`Inputs::c_before_half`], for f32 output.
    pub(super) fn c_before_f32(&self, p: &Problem) -> Vec<f32> {
        if p.beta == 0.0 {
            vec![f32::NAN; self.c.len()]
        } else {
            self.c.clone()
        }
    }
}

/// The float64 reference of element `(i, j)` and the sum of the absolute values of its terms
/// (the scale of its rounding error).
pub fn reference_at(p: &Problem, x: &Inputs, i: usize, j: usize) -> (f64, f64) {
    let (mut acc, mut abs) = (0f64, 0f64);
    for kk in 0..p.k {
        let av = widen(p.ty, x.a[i * p.lda + kk]) as f64;
        let bv = match p.b {
            BLayout::RowMajor => x.b[kk * p.ldb + j],
            BLayout::Transposed => x.b[j * p.ldb + kk],
        };
        let t = av * widen(p.ty, bv) as f64;
        acc += t;
        abs += t.abs();
    }
    let mut r = p.alpha as f64 * acc;
    let mut scale = (p.alpha as f64).abs() * abs;
    if p.beta != 0.0 {
        let old = x.c[i * p.ldc + j] as f64;
        r += p.beta as f64 * old;
        scale += (p.beta as f64 * old).abs();
    }
    if let Some(bias) = &x.bias {
        r += bias[j] as f64;
        scale += (bias[j] as f64).abs();
    }
    if p.relu && r < 0.0 {
        r = 0.0;
    }
    (r, scale)
}

/// Tolerance for an element with reference `r` and term scale `s`: the output's rounding (the
/// unit roundoff relative to `r`, twice, or the subnormal spacing near zero) plus f32
/// accumulation error, bounded by `k · 2⁻²⁴ · s` worst-case and allowed `2⁻¹⁶ · s`.
pub fn tolerance(p: &Problem, r: f64, s: f64) -> f64 {
    // Unit roundoff and the spacing of the subnormals (the absolute rounding floor).
    let (out_u, out_tiny) = (crate::elem::unit_roundoff(p.out), crate::elem::tiny(p.out));
    2.0 * out_u * r.abs() + out_tiny + 2f64.powi(-16) * s
}

/// Compares `got` (widened output) with the float64 reference on the elements `(i, j)` of
/// `which`. NaN never passes.
pub fn compare(p: &Problem, x: &Inputs, got: &[f32], which: &[(usize, usize)]) -> Result<usize> {
    let bad = which.par_iter().find_map_any(|&(i, j)| {
        let (r, s) = reference_at(p, x, i, j);
        let g = got[i * p.ldc + j] as f64;
        let tol = tolerance(p, r, s);
        if g.is_nan() || (g - r).abs() > tol {
            Some(format!(
                "C[{i}][{j}] = {g}, float64 reference {r} (tolerance {tol:.3e})"
            ))
        } else {
            None
        }
    });
    match bad {
        Some(detail) => Err(Error::Mismatch {
            kernel: "hgemm".into(),
            shape: p.shape(),
            detail,
        }),
        None => Ok(which.len()),
    }
}

/// Elements to check: all of C when it is small, otherwise every element of the last tile row
/// and column (the tails), the corners, and `samples` random ones.
pub fn elements_to_check(p: &Problem, samples: usize, seed: u64) -> Vec<(usize, usize)> {
    if (p.m * p.n) as f64 * p.k as f64 <= 2e9 {
        return (0..p.m)
            .flat_map(|i| (0..p.n).map(move |j| (i, j)))
            .collect();
    }
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut v: Vec<(usize, usize)> = (0..samples)
        .map(|_| (rng.random_range(0..p.m), rng.random_range(0..p.n)))
        .collect();
    for j in (0..p.n).step_by(7) {
        v.push((p.m - 1, j));
    }
    for i in (0..p.m).step_by(7) {
        v.push((i, p.n - 1));
    }
    v.extend([(0, 0), (0, p.n - 1), (p.m - 1, 0), (p.m - 1, p.n - 1)]);
    v
}
