//! The SGEMM problem: shape, pitches, argument checks, grid, float64 reference, tolerance.

use rustile_kernels::gemm::{v11_nt_pipeline, v17_nt_stream_k};
use rustile_kernels::registry::{DType, Entry, KernelInfo};

use crate::check::{self, BufArg};
use crate::error::{Error, Result};
use crate::launch::{Arg, LaunchPlan};

/// One SGEMM problem.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GemmProblem {
    /// Rows of A and C.
    pub m: usize,
    /// Columns of B and C.
    pub n: usize,
    /// Columns of A, rows of B.
    pub k: usize,
    /// Row pitch of A (≥ k).
    pub lda: usize,
    /// Row pitch of B (≥ n).
    pub ldb: usize,
    /// Row pitch of C (≥ n).
    pub ldc: usize,
    /// α.
    pub alpha: f32,
    /// β (0: C is not read).
    pub beta: f32,
}

impl GemmProblem {
    /// `C = A·B`, tight leading dimensions.
    pub fn new(m: usize, n: usize, k: usize) -> Self {
        Self {
            m,
            n,
            k,
            lda: k,
            ldb: n,
            ldc: n,
            alpha: 1.0,
            beta: 0.0,
        }
    }

    /// Shape, as text.
    pub fn shape(&self) -> String {
        let mut s = format!("{}x{}x{}", self.m, self.n, self.k);
        if (self.lda, self.ldb, self.ldc) != (self.k, self.n, self.n) {
            s += &format!(" ld {}/{}/{}", self.lda, self.ldb, self.ldc);
        }
        s
    }

    /// `2·M·N·K`.
    pub fn flops(&self) -> f64 {
        2.0 * self.m as f64 * self.n as f64 * self.k as f64
    }

    /// Elements A, B, C must hold: `(rows − 1)·ld + cols` (0 for no rows), or
    /// [`Error::TooLarge`] when a span overflows `usize`.
    pub fn lens(&self) -> Result<(usize, usize, usize)> {
        let span = |what: &str, rows: usize, ld: usize, cols: usize| {
            if rows == 0 {
                return Ok(0);
            }
            (rows - 1)
                .checked_mul(ld)
                .and_then(|v| v.checked_add(cols))
                .ok_or_else(|| Error::TooLarge {
                    kernel: format!("gemm {}", self.shape()),
                    what: format!("{what}: ({rows} − 1)·{ld} + {cols} elements overflow usize"),
                })
        };
        Ok((
            span("A", self.m, self.lda, self.k)?,
            span("B", self.k, self.ldb, self.n)?,
            span("C", self.m, self.ldc, self.n)?,
        ))
    }

    /// The same problem with `lda`, `ldb` rounded up to multiples of 4 (what the 16-byte-load
    /// variants need; the extra columns are padding).
    pub fn aligned(&self) -> Self {
        let up = |v: usize| v.div_ceil(4) * 4;
        Self {
            lda: up(self.lda),
            ldb: up(self.ldb),
            ..*self
        }
    }

    /// Whether `kernel` loads A and B in 16-byte vectors (needs aligned rows): its record's
    /// `needs.align`.
    pub fn vectorized(kernel: &KernelInfo) -> bool {
        kernel.needs.align >= 16
    }

    /// The shape's own checks, before any buffer or kernel: M, N ≥ 1 ([`Error::ZeroSize`]),
    /// pitches at least their rows ([`Error::Usage`]), every dimension and pitch within the
    /// kernels' 32-bit indices and spans that fit `usize` ([`Error::TooLarge`]).
    pub fn check_shape(&self) -> Result<()> {
        let kernel = || format!("gemm {}", self.shape());
        for (what, v) in [("m", self.m), ("n", self.n)] {
            if v == 0 {
                return Err(Error::ZeroSize {
                    kernel: kernel(),
                    what,
                });
            }
        }
        for (what, ld, row) in [
            ("lda", self.lda, self.k),
            ("ldb", self.ldb, self.n),
            ("ldc", self.ldc, self.n),
        ] {
            if ld < row {
                return Err(Error::Usage(format!(
                    "{}: {what} = {ld} is less than the row length {row}",
                    kernel()
                )));
            }
        }
        self.check_indices(&kernel())?;
        self.lens().map(|_| ())
    }

    /// Every dimension and pitch within the kernels' 32-bit indices (with room for a tile's
    /// offsets), else [`Error::TooLarge`] naming `kernel`.
    fn check_indices(&self, kernel: &str) -> Result<()> {
        let limit = u32::MAX as usize - 256;
        for (what, v) in [
            ("m", self.m),
            ("n", self.n),
            ("k", self.k),
            ("lda", self.lda),
            ("ldb", self.ldb),
            ("ldc", self.ldc),
        ] {
            if v > limit {
                return Err(Error::TooLarge {
                    kernel: kernel.to_string(),
                    what: format!("{what} = {v} exceeds the kernels' 32-bit indices"),
                });
            }
        }
        Ok(())
    }

    /// Checks the arguments of `kernel`.
    pub fn check(&self, kernel: &KernelInfo, a: BufArg, b: BufArg, c: BufArg) -> Result<()> {
        let name = check::kernel_name(kernel);
        check::nonzero(kernel, self.m, "m")?;
        check::nonzero(kernel, self.n, "n")?;
        let bad_ld = |what: &str, ld: usize, min: usize| {
            Error::Usage(format!(
                "{name} {}: {what} = {ld} is less than the row length {min}",
                self.shape()
            ))
        };
        // The NT pipeline (and its stream-K form) reads Aᵀ: K rows of at least M.
        let a_transposed = kernel.name == v11_nt_pipeline::INFO.name
            || kernel.name == v17_nt_stream_k::INFO.name;
        let (a_rows, a_cols) = if a_transposed {
            (self.k, self.m)
        } else {
            (self.m, self.k)
        };
        if self.lda < a_cols {
            return Err(bad_ld("lda", self.lda, a_cols));
        }
        if self.ldb < self.n {
            return Err(bad_ld("ldb", self.ldb, self.n));
        }
        if self.ldc < self.n {
            return Err(bad_ld("ldc", self.ldc, self.n));
        }
        self.check_indices(&name)?;
        check::mul(kernel, self.m, self.lda, "A elements")?;
        check::mul(kernel, self.k, self.ldb, "B elements")?;
        check::mul(kernel, self.m, self.ldc, "C elements")?;
        let (_, lb, lc) = self.lens()?;
        let la = a_rows
            .saturating_sub(1)
            .saturating_mul(self.lda)
            .saturating_add(a_cols);
        let shape = self.shape();
        if self.k > 0 {
            check::at_least(kernel, a, la, &shape)?;
            check::at_least(kernel, b, lb, &shape)?;
        }
        check::at_least(kernel, c, lc, &shape)?;
        check::naturally_aligned::<f32>(kernel, &[a, b, c])?;
        if Self::vectorized(kernel) {
            if !self.lda.is_multiple_of(4) || !self.ldb.is_multiple_of(4) {
                return Err(Error::Usage(format!(
                    "{name} {shape}: 16-byte loads need lda and ldb multiples of 4 (got {} and {}); \
                     use gemm::dispatch, which pads",
                    self.lda, self.ldb
                )));
            }
            check::aligned(kernel, a, 16)?;
            check::aligned(kernel, b, 16)?;
        }
        Ok(())
    }

    /// Grid of `kernel`.
    pub fn grid(&self, kernel: &KernelInfo) -> (u64, u64, u64) {
        kernel
            .launch
            .tile_grid(self.m as u64, self.n as u64)
            .unwrap_or((0, 0, 0))
    }

    /// float64 reference of `α·A·B + β·C` (`m × n`, pitch `n`).
    pub fn reference(&self, a: &[f32], b: &[f32], c: &[f32]) -> Vec<f64> {
        self.reference_scaled(a, b, c).0
    }

    /// [`GemmProblem::reference`] and, per element, the scale of its rounding error: the sum
    /// of the absolute values of its terms, `|α|·Σₖ|a·b| + |β·c|` (both `m × n`, pitch `n`).
    pub fn reference_scaled(&self, a: &[f32], b: &[f32], c: &[f32]) -> (Vec<f64>, Vec<f64>) {
        let (m, n) = (self.m, self.n);
        let mut out = vec![0.0f64; m * n];
        let mut scale = vec![0.0f64; m * n];
        for i in 0..m {
            let (row, srow) = (&mut out[i * n..(i + 1) * n], &mut scale[i * n..(i + 1) * n]);
            for kk in 0..self.k {
                let av = a[i * self.lda + kk] as f64;
                let brow = &b[kk * self.ldb..kk * self.ldb + n];
                for ((o, s), &bv) in row.iter_mut().zip(srow.iter_mut()).zip(brow) {
                    let t = av * bv as f64;
                    *o += t;
                    *s += t.abs();
                }
            }
            for j in 0..n {
                row[j] *= self.alpha as f64;
                srow[j] *= (self.alpha as f64).abs();
                if self.beta != 0.0 {
                    let t = self.beta as f64 * c[i * self.ldc + j] as f64;
                    row[j] += t;
                    srow[j] += t.abs();
                }
            }
        }
        (out, scale)
    }

    /// Relative Frobenius tolerance for f32 accumulation over `k` terms: what the whole-output
    /// [`relative_error`](super::relative_error) is held to where only another f32 result
    /// (cuBLAS's) is at hand. Validation against float64 checks every element instead
    /// ([`GemmProblem::element_tolerance`]).
    pub fn tolerance(&self) -> f64 {
        1e-6 * (self.k.max(1) as f64).sqrt()
    }

    /// Tolerance of one element with float64 reference `r` and term scale `s`
    /// ([`GemmProblem::reference_scaled`]), the tensor-core check's model for f32: the
    /// output's rounding (twice the unit roundoff relative to `r`, and the subnormal spacing
    /// near zero) plus accumulation error. Summing the `k` products and the α, β epilogue in
    /// f32, in any order, errs by at most `(k + 3)·u·s` (first order, `u = 2⁻²⁴`); that bound
    /// is used up to `k = 253` and capped at `2⁻¹⁶·s` above (as in the tensor-core check, the
    /// worst case grows with `k`, random rounding errors only with `√k`). Cancellation
    /// (`|r| ≪ s`) does not shrink it; a wrong element does not hide in a norm over all of C.
    pub fn element_tolerance(&self, r: f64, s: f64) -> f64 {
        let u = <f32 as crate::elem::DeviceElem>::UNIT_ROUNDOFF;
        let tiny = <f32 as crate::elem::DeviceElem>::TINY;
        let acc = ((self.k as f64 + 3.0) * u).min(2f64.powi(-16));
        2.0 * u * r.abs() + tiny + acc * s
    }

    /// The launch plan of `kernel` (its f32 entry) for this problem on operands at
    /// `[a, b, c]`: the one place the SGEMM argument list `(a, b, c, m, n, k, lda, ldb, ldc, α,
    /// β)` is built, for the GPU and the simulator.
    pub fn plan<'k>(&self, kernel: &'k KernelInfo, abc: [u64; 3]) -> Result<LaunchPlan<'k>> {
        let entry = kernel
            .entry(DType::F32)
            .ok_or_else(|| Error::Usage(format!("gemm/{} has no f32 entry", kernel.name)))?;
        Ok(self.plan_entry(kernel, entry, self.grid(kernel), abc))
    }

    /// [`GemmProblem::plan`] for a given entry and grid (the split-K parts: another entry of
    /// the same signature, `splits` blocks in z).
    pub fn plan_entry<'k>(
        &self,
        kernel: &'k KernelInfo,
        entry: &'k Entry,
        grid: (u64, u64, u64),
        [a, b, c]: [u64; 3],
    ) -> LaunchPlan<'k> {
        let (m, n, k, lda, ldb, ldc, alpha, beta) = self.scalars();
        let args = vec![
            Arg::Ptr(a),
            Arg::Ptr(b),
            Arg::Ptr(c),
            Arg::U32(m),
            Arg::U32(n),
            Arg::U32(k),
            Arg::U32(lda),
            Arg::U32(ldb),
            Arg::U32(ldc),
            Arg::F32(alpha),
            Arg::F32(beta),
        ];
        LaunchPlan::new(kernel, entry, grid, args)
    }

    pub(super) fn scalars(&self) -> (u32, u32, u32, u32, u32, u32, f32, f32) {
        (
            self.m as u32,
            self.n as u32,
            self.k as u32,
            self.lda as u32,
            self.ldb as u32,
            self.ldc as u32,
            self.alpha,
            self.beta,
        )
    }
}

/// Parses `MxNxK` (or `N` for a cube).
pub fn parse_shape(text: &str) -> Result<GemmProblem> {
    let bad = || Error::Usage(format!("bad gemm shape `{text}`: want MxNxK or N"));
    let dims: Vec<usize> = text
        .split(['x', 'X'])
        .map(|s| s.trim().parse::<usize>().map_err(|_| bad()))
        .collect::<Result<_>>()?;
    let p = match dims[..] {
        [n] => GemmProblem::new(n, n, n),
        [m, n, k] => GemmProblem::new(m, n, k),
        _ => return Err(bad()),
    };
    p.check_shape()?;
    Ok(p)
}
