//! Checking a run's output against the CPU reference.

use crate::families::gemm::GemmProblem;

#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
/// What [`Pipeline::verify`](super::Pipeline::verify) checked.
pub struct Verification {
    /// Bit for bit (suite kernels); otherwise every sampled entry within its own bound.
    pub exact: bool,
    /// Output elements compared with the reference.
    pub entries: usize,
    /// Largest `|got − want| / bound` of the sampled entries, each entry's bound scaled by the
    /// sum of its terms' magnitudes ([`GemmProblem::element_tolerance`]); ≤ 1 passes (0 when
    /// exact).
    pub worst_over_bound: f64,
}

impl Verification {
    /// One line for tables.
    pub fn describe(&self) -> String {
        if self.exact {
            format!(
                "bit-identical to the CPU reference ({} elements)",
                self.entries
            )
        } else {
            format!(
                "every element finite; {} sampled entries each within its float64 bound \
                 (scaled by Σ|a·b|; worst at {:.2} of it)",
                self.entries, self.worst_over_bound
            )
        }
    }
}

/// Rows of a chunk whose every column [`gemm_sample_error`] checks: the first, the last and
/// one chosen by `seed`.
pub const GEMM_CHECK_ROWS: usize = 3;
/// Single (row, column) entries per chunk [`gemm_sample_error`] checks besides those rows.
pub const GEMM_CHECK_ENTRIES: usize = 32;

/// Sampled entries of `c = a · b` (`a`: `rows × k`, `b`: `k × n`, `c`: `rows × n`, all
/// row-major and tight) against a float64 reference, each held to its own bound
/// ([`GemmProblem::element_tolerance`], scaled by the sum of its terms' magnitudes): every
/// column of [`GEMM_CHECK_ROWS`] rows and [`GEMM_CHECK_ENTRIES`] entries spread by `seed`.
/// Returns the largest `|got − want| / bound` (≤ 1 passes; ∞ for NaN or a shape that does not
/// fit) and the entries compared.
pub fn gemm_sample_error(
    a: &[f32],
    b: &[f32],
    k: usize,
    n: usize,
    c: &[f32],
    seed: u64,
) -> (f64, usize) {
    if k == 0 || n == 0 || !a.len().is_multiple_of(k) || b.len() != k * n {
        return (f64::INFINITY, 0);
    }
    let rows = a.len() / k;
    if rows == 0 || c.len() != rows * n {
        return (f64::INFINITY, 0);
    }
    let mut h = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = |bound: usize| {
        // xorshift64*
        h ^= h >> 12;
        h ^= h << 25;
        h ^= h >> 27;
        (h.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as usize % bound
    };
    let p = GemmProblem::new(rows, n, k);
    let (mut worst, mut entries) = (0.0f64, 0usize);
    let mut add = |got: f32, want: f64, scale: f64| {
        let e = (got as f64 - want).abs() / p.element_tolerance(want, scale);
        worst = if e.is_nan() {
            f64::INFINITY
        } else {
            worst.max(e)
        };
    };
    let mut sample_rows = vec![0, rows - 1, next(rows)];
    sample_rows.dedup();
    let (mut acc, mut abs) = (vec![0.0f64; n], vec![0.0f64; n]);
    for &i in &sample_rows {
        acc.fill(0.0);
        abs.fill(0.0);
        for (kk, &av) in a[i * k..(i + 1) * k].iter().enumerate() {
            let av = av as f64;
            for ((o, s), &bv) in acc
                .iter_mut()
                .zip(abs.iter_mut())
                .zip(&b[kk * n..(kk + 1) * n])
            {
                let t = av * bv as f64;
                *o += t;
                *s += t.abs();
            }
        }
        for j in 0..n {
            add(c[i * n + j], acc[j], abs[j]);
        }
        entries += n;
    }
    for _ in 0..GEMM_CHECK_ENTRIES {
        let (i, j) = (next(rows), next(n));
        let terms = (0..k).map(|kk| a[i * k + kk] as f64 * b[kk * n + j] as f64);
        let (want, scale) = terms.fold((0.0, 0.0), |(w, s), t| (w + t, s + f64::abs(t)));
        add(c[i * n + j], want, scale);
        entries += 1;
    }
    (worst, entries)
}
