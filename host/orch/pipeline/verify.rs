//! Checking a run's output against the CPU reference.

#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
/// What [`Pipeline::verify`](super::Pipeline::verify) checked.
pub struct Verification {
    /// Bit for bit (suite kernels); otherwise within `tolerance`.
    pub exact: bool,
    /// Output elements compared with the reference.
    pub entries: usize,
    /// Largest per-chunk relative Frobenius error of the sampled entries (0 when exact).
    pub max_rel_error: f64,
    /// The bound (0 when exact).
    pub tolerance: f64,
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
                "every element finite; {} sampled entries within relative error {:.2e} of a \
                 float64 reference (bound {:.2e} = 1e-6·√K)",
                self.entries, self.max_rel_error, self.tolerance
            )
        }
    }
}

/// Rows of a chunk whose every column [`gemm_sample_error`] checks: the first, the last and
/// one chosen by `seed`.
pub const GEMM_CHECK_ROWS: usize = 3;
/// Single (row, column) entries per chunk [`gemm_sample_error`] checks besides those rows.
pub const GEMM_CHECK_ENTRIES: usize = 32;

/// Relative Frobenius error `‖got − want‖ / ‖want‖` of sampled entries of `c = a · b` (`a`:
/// `rows × k`, `b`: `k × n`, `c`: `rows × n`, all row-major and tight) against a float64
/// reference: every column of [`GEMM_CHECK_ROWS`] rows and [`GEMM_CHECK_ENTRIES`] entries
/// spread by `seed`. Returns the error (∞ for NaN or a shape that does not fit) and the
/// entries compared.
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
    let (mut num, mut den, mut entries) = (0.0f64, 0.0f64, 0usize);
    let mut add = |got: f32, want: f64| {
        let g = got as f64;
        num += (g - want) * (g - want);
        den += want * want;
    };
    let mut sample_rows = vec![0, rows - 1, next(rows)];
    sample_rows.dedup();
    let mut acc = vec![0.0f64; n];
    for &i in &sample_rows {
        acc.fill(0.0);
        for (kk, &av) in a[i * k..(i + 1) * k].iter().enumerate() {
            let av = av as f64;
            for (o, &bv) in acc.iter_mut().zip(&b[kk * n..(kk + 1) * n]) {
                *o += av * bv as f64;
            }
        }
        for (j, &want) in acc.iter().enumerate() {
            add(c[i * n + j], want);
        }
        entries += n;
    }
    for _ in 0..GEMM_CHECK_ENTRIES {
        let (i, j) = (next(rows), next(n));
        let want: f64 = (0..k)
            .map(|kk| a[i * k + kk] as f64 * b[kk * n + j] as f64)
            .sum();
        add(c[i * n + j], want);
        entries += 1;
    }
    let e = num.sqrt() / den.sqrt().max(f64::MIN_POSITIVE);
    (if e.is_nan() { f64::INFINITY } else { e }, entries)
}
