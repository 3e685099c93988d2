//! Random inputs, the float64 reference, the error bounds and the comparison.
//!
//! # Error bounds
//!
//! The reference is exact arithmetic (float64) on the same f16/bf16-rounded inputs, so the
//! bounds cover only what the kernels round. Notation: `u` the unit roundoff of the input
//! type (f16 2⁻¹¹, bf16 2⁻⁸; the output is the same type), `t` its smallest subnormal,
//! `u₃₂ = 2⁻²⁴`, `γ(k) = k·u₃₂/(1 − k·u₃₂)` (the relative bound of an f32 sum of `k` terms
//! of one sign, or of `k` successive roundings), `n` the keys the row sees, `d` the head
//! dimension, and per row `A = scale · maxⱼ Σ_c |q_c k_jc|` and `V = maxⱼ,c |v_jc|` over
//! the keys it sees.
//!
//! - **Scores.** `q·k` is accumulated in f32 (a product of two 16-bit values is exact in
//!   f32): `|Δ(q·k)| ≤ γ(d)·Σ|q k|`. Scaling (the scale rounded to f32, the product) and
//!   subtracting the running maximum (itself a rounded scaled score) are at most eight more
//!   roundings of quantities ≤ 2A (`naive`: scale, subtract, × log2 e, the constant; the
//!   fused kernels: `scale·log2 e`, the maximum's product, one `fma`): in natural units
//!   `E_s = (γ(d) + 8u₃₂)·A`.
//! - **Weights** `pⱼ = exp(sⱼ − m)`: a score error `E_s` and `ex2.approx` (≤ 2 ulp, 2⁻²²)
//!   perturb a weight by a relative `δ = e^{E_s}·(1 + 2⁻²²) − 1`; `ex2.approx.ftz` flushes
//!   results below 2⁻¹²⁶ (absolute). The running-maximum rescale factors multiply numerator
//!   and denominator alike, so their approximation cancels; their f32 roundings, at most one
//!   per key per accumulator, are within `γ(n)`.
//! - **Output** `O = N / D`, `N = Σ pⱼ vⱼ`, `D = Σ pⱼ`. The fused kernels round P to the input
//!   type before the second product (relative `u`; an f16 subnormal is an absolute `t/2` on a
//!   term of a sum whose largest term is 1); N is summed in f32 and rescaled: every term of N
//!   carries a relative `ε_N = (1 + u)(1 + δ)(1 + γ(n))² − 1`, plus the absolute
//!   `n·(t/2 + 2⁻¹²⁶)·V` in all. D is the f32 sum of the unrounded weights, rescaled,
//!   inverted (`rcp.approx`, 1 ulp) and applied (one rounding): `ε_D = (1 + δ)(1 + γ(n))²(1 +
//!   u₃₂)² − 1`. Since `|N| ≤ V·D`, `|N'/D' − N/D| ≤ (|N' − N| + |O|·|D' − D|)/D' ≤
//!   `B = (V·(ε_N + ε_D) + n·(t/2 + 2⁻¹²⁶)·V)/(1 − ε_D)`, and the output's rounding adds
//!   `u·(|O| + B) + t`: [`o_tolerance`]. (The three-pass kernel keeps P in f32 and meets the
//!   same bound with room to spare.)
//! - **LSE** `= m + ln l`: the maximum carries `E_s`; `l` a relative `ε_l = (1 + δ)(1 +
//!   γ(n))² − 1` (all terms positive), so `ln l` an absolute `ε_l/(1 − ε_l)`; `lg2.approx` ≤
//!   2⁻²² absolute in log2 units (less in natural ones); the final add, the `× ln 2` and its
//!   constant round relative to `|LSE|`, the maximum's own roundings to `|m| ≤ A`:
//!   [`lse_tolerance`] `= E_s + ε_l/(1 − ε_l) + 2⁻²² + u₃₂·(3|LSE| + 2A)`.
//!
//! NaN or ±inf where the reference is finite never passes. A row that sees no key must be
//! exactly `O = 0` and `LSE = −inf`. Outputs are poisoned with NaN before the launch, so a
//! skipped element fails; when every row is checked, every element of O's buffer outside the
//! tensor's rows (padding between strided rows) must still hold the poison.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rayon::prelude::*;

use crate::elem::{round_bits, tiny, unit_roundoff, widen_bits};
use crate::error::{Error, Result};

use super::{Layout, Problem};

/// The poison written to O before a launch (a NaN in f16 and in bf16).
pub const POISON: u16 = 0x7FFF;

/// Bound on the relative error of `ex2.approx.ftz.f32` (2 ulp) and on the absolute error of
/// `lg2.approx.ftz.f32` (log2 units).
pub const APPROX: f64 = 1.0 / (1u64 << 22) as f64;

const U32: f64 = 1.0 / (1u64 << 24) as f64;

fn gamma(n: usize) -> f64 {
    let x = n as f64 * U32;
    x / (1.0 - x)
}

/// Q, K and V on the host: the buffers that hold them (one for a packed QKV tensor, three
/// otherwise) and where each tensor starts.
pub struct Inputs {
    /// Buffers of bits.
    pub bufs: Vec<Vec<u16>>,
    /// `(buffer, element offset)` of Q, K and V.
    pub at: [(usize, usize); 3],
}

impl Inputs {
    /// Fresh inputs for `p`: Q and K uniform in [−2, 2) (scores with a spread of about
    /// `1.3·√d·scale`, so the softmax is neither flat nor one-hot), V in [−1, 1), all rounded
    /// to the type. `packed`: one buffer laid out as [`Layout::packed_qkv`] (the problem must
    /// use that layout). Elements between strided rows are random too.
    pub fn random(p: &Problem, packed: bool, seed: u64) -> Result<Self> {
        let spans = p.spans()?;
        let ty = p.dtype;
        let fill = |len: usize, r: f32, seed: u64| -> Vec<u16> {
            let mut rng = SmallRng::seed_from_u64(seed);
            (0..len)
                .map(|_| round_bits(ty, rng.random_range(-r..r)) as u16)
                .collect()
        };
        if packed {
            let (offs, len) = Layout::packed_qkv_offsets(&p.shape);
            // Long enough for every tensor's span from its offset, whatever the strides.
            let len = (0..3).map(|t| offs[t] + spans[t]).fold(len, usize::max);
            let mut buf = fill(len, 2.0, seed);
            // V's heads in [−1, 1): halve them.
            let g = p.tensors()[2];
            for b in 0..p.shape.batch {
                for s in 0..p.shape.seq_kv {
                    for h in 0..p.shape.heads_kv {
                        let at = offs[2] + g.offset(b, s, h);
                        for x in &mut buf[at..at + p.shape.head_dim] {
                            *x = round_bits(ty, widen_bits(ty, *x as u32) / 2.0) as u16;
                        }
                    }
                }
            }
            return Ok(Self {
                bufs: vec![buf],
                at: [(0, offs[0]), (0, offs[1]), (0, offs[2])],
            });
        }
        Ok(Self {
            bufs: vec![
                fill(spans[0], 2.0, seed),
                fill(spans[1], 2.0, seed ^ 0x9E37_79B9),
                fill(spans[2], 1.0, seed ^ 0x5151_5151),
            ],
            at: [(0, 0), (1, 0), (2, 0)],
        })
    }

    /// Row `(b, s, h)` of tensor `t` (0 = Q, 1 = K, 2 = V), widened.
    fn row(&self, p: &Problem, t: usize, (b, s, h): (usize, usize, usize)) -> Vec<f64> {
        let g = p.tensors()[t];
        let (buf, off) = self.at[t];
        let at = off + g.offset(b, s, h);
        self.bufs[buf][at..at + p.shape.head_dim]
            .iter()
            .map(|&x| widen_bits(p.dtype, x as u32) as f64)
            .collect()
    }
}

/// The float64 reference of one query row and the scales of its rounding error.
#[derive(Clone, Debug)]
pub struct RowRef {
    /// `O[b, i, h, :]`.
    pub o: Vec<f64>,
    /// Natural-log log-sum-exp (−inf when no key is seen).
    pub lse: f64,
    /// Keys the row sees.
    pub seen: usize,
    /// `scale · maxⱼ Σ_c |q_c k_jc|`.
    pub a: f64,
    /// `max |v|` over the keys seen.
    pub vmax: f64,
}

/// The reference of query row `i` of batch `b`, head `h`.
pub fn reference_row(p: &Problem, x: &Inputs, b: usize, h: usize, i: usize) -> RowRef {
    let s = &p.shape;
    let d = s.head_dim;
    let hk = h / s.group();
    let scale = s.softmax_scale() as f64;
    let seen = s.visible_keys(i);
    let q = x.row(p, 0, (b, i, h));
    let mut scores = Vec::with_capacity(seen);
    let mut a = 0f64;
    for j in 0..seen {
        let k = x.row(p, 1, (b, j, hk));
        let (mut dot, mut abs) = (0f64, 0f64);
        for (qc, kc) in q.iter().zip(&k) {
            let t = qc * kc;
            dot += t;
            abs += t.abs();
        }
        scores.push(scale * dot);
        a = a.max(scale * abs);
    }
    if seen == 0 {
        return RowRef {
            o: vec![0.0; d],
            lse: f64::NEG_INFINITY,
            seen,
            a,
            vmax: 0.0,
        };
    }
    let m = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut o = vec![0f64; d];
    let (mut l, mut vmax) = (0f64, 0f64);
    for (j, sj) in scores.iter().enumerate() {
        let pj = (sj - m).exp();
        l += pj;
        for (oc, v) in o.iter_mut().zip(x.row(p, 2, (b, j, hk))) {
            vmax = vmax.max(v.abs());
            *oc += pj * v;
        }
    }
    o.iter_mut().for_each(|v| *v /= l);
    RowRef {
        o,
        lse: m + l.ln(),
        seen,
        a,
        vmax,
    }
}

/// `E_s`: the bound on a score's error, natural units.
fn score_error(p: &Problem, r: &RowRef) -> f64 {
    (gamma(p.shape.head_dim) + 8.0 * U32) * r.a
}

/// `δ`: the bound on a weight's relative error.
fn weight_error(p: &Problem, r: &RowRef) -> f64 {
    score_error(p, r).exp() * (1.0 + APPROX) - 1.0
}

/// `2⁻¹²⁶`: what `ex2.approx.ftz` flushes to zero.
const FTZ: f64 = 1.0 / (1u128 << 126) as f64;

/// The bound on `|O − reference|` for an element with reference `want` in row `r` (derived in
/// the module documentation).
pub fn o_tolerance(p: &Problem, r: &RowRef, want: f64) -> f64 {
    let (u, t) = (unit_roundoff(p.dtype), tiny(p.dtype));
    let (delta, g) = (weight_error(p, r), gamma(r.seen));
    let e_n = (1.0 + u) * (1.0 + delta) * (1.0 + g).powi(2) - 1.0;
    let e_d = (1.0 + delta) * (1.0 + g).powi(2) * (1.0 + U32).powi(2) - 1.0;
    let b = (r.vmax * (e_n + e_d) + r.seen as f64 * (t / 2.0 + FTZ) * r.vmax) / (1.0 - e_d);
    b + u * (want.abs() + b) + t
}

/// The bound on `|LSE − reference|` for row `r` (derived in the module documentation).
pub fn lse_tolerance(p: &Problem, r: &RowRef) -> f64 {
    let e_l = (1.0 + weight_error(p, r)) * (1.0 + gamma(r.seen)).powi(2) - 1.0;
    score_error(p, r) + e_l / (1.0 - e_l) + APPROX + U32 * (3.0 * r.lse.abs() + 2.0 * r.a)
}

/// Query rows `(b, h, i)` to check: all of them when the reference is cheap (≤ 2²⁷
/// multiply-adds), otherwise, for the first and last heads of the first and last batches,
/// one head inside a group and two random heads: the first and last rows, the rows around
/// the tile edges 16, 64, 128, 256 (and from the end), the rows where the causal diagonal
/// crosses those edges, the last row that sees no key, and 48 random rows.
pub fn rows_to_check(p: &Problem, seed: u64) -> Vec<(usize, usize, usize)> {
    let s = &p.shape;
    if p.check().is_err() {
        return Vec::new();
    }
    let work = (s.batch * s.heads_q * s.seq_q) as f64 * (s.seq_kv * s.head_dim) as f64;
    if work <= (1u64 << 27) as f64 {
        return (0..s.batch)
            .flat_map(|b| (0..s.heads_q).flat_map(move |h| (0..s.seq_q).map(move |i| (b, h, i))))
            .collect();
    }
    let mut rng = SmallRng::seed_from_u64(seed ^ 0xA77E);
    let (bl, hl) = (s.batch - 1, s.heads_q - 1);
    let mut heads = vec![(0, 0), (bl, hl), (0, hl), (bl, 0), (bl / 2, s.group() - 1)];
    for _ in 0..2 {
        heads.push((rng.random_range(0..s.batch), rng.random_range(0..s.heads_q)));
    }
    heads.sort_unstable();
    heads.dedup();
    let n = s.seq_q as i64;
    let diag = s.seq_kv as i64 - n; // row i sees keys ≤ i + diag
    let mut rows: Vec<i64> = Vec::new();
    for e in [0i64, 1, 2, 15, 16, 17, 63, 64, 65, 127, 128, 129, 255, 256, 257] {
        rows.extend([e, n - 1 - e]);
        if s.causal {
            // Rows that see e + 1 keys, and the last row that sees none.
            rows.extend([e - diag, -1 - diag]);
        }
    }
    let mut out = Vec::new();
    for (b, h) in heads {
        let mut r: Vec<i64> = rows.clone();
        r.extend((0..48).map(|_| rng.random_range(0..n)));
        r.retain(|&i| (0..n).contains(&i));
        r.sort_unstable();
        r.dedup();
        out.extend(r.into_iter().map(|i| (b, h, i as usize)));
    }
    out
}

/// What [`compare`] found: rows compared and how close the worst element came to its bound.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct Comparison {
    /// Query rows compared.
    pub rows: usize,
    /// Largest `|O − reference| / tolerance` (< 1 when the check passes).
    pub worst_o: f64,
    /// Largest `|LSE − reference| / tolerance`.
    pub worst_lse: f64,
}

/// Compares O (the whole output buffer, bits) and LSE with the reference on `rows`, and, when
/// `rows` is every row, checks that O's elements outside the tensor still hold [`POISON`].
/// `p` must pass [`Problem::check`], `x` be its inputs, and `rows` lie inside the shape; O
/// and LSE shorter than the shape needs are an error.
pub fn compare(
    p: &Problem,
    x: &Inputs,
    o: &[u16],
    lse: &[f32],
    rows: &[(usize, usize, usize)],
) -> Result<Comparison> {
    p.check()?;
    let s = &p.shape;
    let g = p.tensors()[3];
    let mismatch = |detail: String| Error::Mismatch {
        kernel: "attention".into(),
        shape: s.describe(),
        detail,
    };
    let spans = p.spans()?;
    let short = (o.len() < spans[3])
        .then_some(("o", o.len(), spans[3]))
        .or((lse.len() < s.lse_len()).then_some(("lse", lse.len(), s.lse_len())))
        .or(x.at.iter().zip(&spans).zip(["q", "k", "v"]).find_map(|((&(buf, off), &span), name)| {
            let len = x.bufs.get(buf).map_or(0, |b| b.len().saturating_sub(off));
            (len < span).then_some((name, len, span))
        }));
    if let Some((buffer, got, need)) = short {
        return Err(Error::BufferLength {
            kernel: "attention (comparison)".into(),
            buffer,
            got,
            need,
            shape: s.describe(),
        });
    }
    if let Some(r) = rows
        .iter()
        .find(|&&(b, h, i)| b >= s.batch || h >= s.heads_q || i >= s.seq_q)
    {
        return Err(mismatch(format!("row {r:?} is outside the shape")));
    }
    let row_check = |&(b, h, i): &(usize, usize, usize)| -> std::result::Result<(f64, f64), String> {
        let r = reference_row(p, x, b, h, i);
        let at = g.offset(b, i, h);
        let got_lse = lse[(b * s.heads_q + h) * s.seq_q + i] as f64;
        let here = format!("batch {b} head {h} row {i} ({} keys seen)", r.seen);
        if r.seen == 0 {
            if got_lse != f64::NEG_INFINITY {
                return Err(format!("{here}: LSE = {got_lse}, a fully masked row needs −inf"));
            }
            return match (0..s.head_dim).find(|&c| widen_bits(p.dtype, o[at + c] as u32) != 0.0) {
                Some(c) => Err(format!(
                    "{here}: O[{c}] = {}, a fully masked row needs 0",
                    widen_bits(p.dtype, o[at + c] as u32)
                )),
                None => Ok((0.0, 0.0)),
            };
        }
        let tol = lse_tolerance(p, &r);
        let err = (got_lse - r.lse).abs();
        if !got_lse.is_finite() || err > tol {
            return Err(format!(
                "{here}: LSE = {got_lse}, float64 reference {} (tolerance {tol:.3e})",
                r.lse
            ));
        }
        let mut worst = 0f64;
        for (c, &want) in r.o.iter().enumerate() {
            let v = widen_bits(p.dtype, o[at + c] as u32) as f64;
            let tol = o_tolerance(p, &r, want);
            if !v.is_finite() || (v - want).abs() > tol {
                return Err(format!(
                    "{here}: O[{c}] = {v}, float64 reference {want} (tolerance {tol:.3e})"
                ));
            }
            worst = worst.max((v - want).abs() / tol);
        }
        Ok((worst, err / tol))
    };
    let worst = rows
        .par_iter()
        .map(row_check)
        .try_reduce(|| (0.0, 0.0), |a, b| Ok((a.0.max(b.0), a.1.max(b.1))))
        .map_err(mismatch)?;
    if rows.len() == s.lse_len() {
        let mut inside = vec![false; o.len()];
        for b in 0..s.batch {
            for i in 0..s.seq_q {
                for h in 0..s.heads_q {
                    let at = g.offset(b, i, h);
                    inside[at..at + s.head_dim].iter_mut().for_each(|x| *x = true);
                }
            }
        }
        if let Some(e) = (0..o.len()).find(|&e| !inside[e] && o[e] != POISON) {
            return Err(mismatch(format!(
                "O[{e}] lies between the tensor's rows but was overwritten with {:#06x}",
                o[e]
            )));
        }
    }
    Ok(Comparison {
        rows: rows.len(),
        worst_o: worst.0,
        worst_lse: worst.1,
    })
}
