//! The SGEMM problem: shape, pitches, argument checks, grid, float64 reference, tolerance.

use rustile_kernels::gemm::v11_nt_pipeline;
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

    /// Elements A, B, C must hold: `(rows − 1)·ld + cols`.
    pub fn lens(&self) -> (usize, usize, usize) {
        let span = |rows: usize, ld: usize, cols: usize| {
            rows.saturating_sub(1)
                .saturating_mul(ld)
                .saturating_add(cols)
        };
        (
            span(self.m, self.lda, self.k),
            span(self.k, self.ldb, self.n),
            span(self.m, self.ldc, self.n),
        )
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
        // The NT pipeline reads Aᵀ: K rows of at least M.
        let a_transposed = kernel.name == v11_nt_pipeline::INFO.name;
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
                    kernel: name.clone(),
                    what: format!("{what} = {v} exceeds the kernels' 32-bit indices"),
                });
            }
        }
        check::mul(kernel, self.m, self.lda, "A elements")?;
        check::mul(kernel, self.k, self.ldb, "B elements")?;
        check::mul(kernel, self.m, self.ldc, "C elements")?;
        let (_, lb, lc) = self.lens();
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

    /// float64 reference of `α·A·B + β·C`.
    pub fn reference(&self, a: &[f32], b: &[f32], c: &[f32]) -> Vec<f64> {
        let mut out = vec![0.0f64; self.m * self.n];
        for i in 0..self.m {
            for kk in 0..self.k {
                let av = a[i * self.lda + kk] as f64;
                let brow = &b[kk * self.ldb..kk * self.ldb + self.n];
                for (o, &bv) in out[i * self.n..(i + 1) * self.n].iter_mut().zip(brow) {
                    *o += av * bv as f64;
                }
            }
            for j in 0..self.n {
                let o = &mut out[i * self.n + j];
                *o *= self.alpha as f64;
                if self.beta != 0.0 {
                    *o += self.beta as f64 * c[i * self.ldc + j] as f64;
                }
            }
        }
        out
    }

    /// Relative error tolerance for f32 accumulation over `k` terms.
    pub fn tolerance(&self) -> f64 {
        1e-6 * (self.k.max(1) as f64).sqrt()
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
    match dims[..] {
        [n] => Ok(GemmProblem::new(n, n, n)),
        [m, n, k] => Ok(GemmProblem::new(m, n, k)),
        _ => Err(bad()),
    }
}
