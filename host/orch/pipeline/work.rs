//! What each chunk runs: a memory kernel or an SGEMM against resident weights, and its output shape.

use super::*;

/// What the compute stage runs on each chunk (f32), `compute_reps` times, input → output.
#[derive(Clone, Copy, Debug)]
pub enum ChunkWork {
    /// `out = in` with a copy variant: short launches (a few µs each on a chunk).
    Copy(&'static KernelInfo),
    /// `out = inᵀ`, the chunk read as a `(len / cols) × cols` row-major matrix (as `1 × len`
    /// when `cols` does not divide it): fewer, longer launches with a slow variant.
    Transpose {
        /// A transpose variant.
        kernel: &'static KernelInfo,
        /// Matrix columns.
        cols: usize,
    },
    /// `out[j] = in[j · stride]` with a strided variant: the output chunk is `stride` times
    /// smaller than the input chunk, so the D2H stage is short.
    Gather {
        /// A strided variant.
        kernel: &'static KernelInfo,
        /// Input elements per output element (≥ 1).
        stride: usize,
    },
    /// `out = in · B`: the chunk is a block of rows of A (`len / k` rows × `k`), B (`k × n`)
    /// is resident on the device (uploaded once per [`Pipeline`], before any timing), one
    /// launch of the variant [`crate::families::gemm::dispatch()`] picks; the output chunk is
    /// `rows × n`, so with `n < k` the D2H is `n / k` of the H2D.
    Gemm {
        /// Columns of A, rows of B.
        k: usize,
        /// Columns of B and of the output.
        n: usize,
    },
}

/// How long a chunk's output is: `⌈len · num / den⌉` for a chunk of `len` input elements,
/// where every chunk (and so the batch and the chunk size) is a multiple of `granule`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct OutShape {
    /// Output elements per `den` input elements.
    pub num: usize,
    /// See `num`.
    pub den: usize,
    /// Chunk lengths must be multiples of this (the row length of a GEMM's A; 1 otherwise).
    pub granule: usize,
}

impl OutShape {
    /// Output as long as the input.
    pub const SAME: OutShape = OutShape {
        num: 1,
        den: 1,
        granule: 1,
    };

    /// One output element per `stride` input elements (rounded up per chunk).
    pub fn shrink(stride: usize) -> Self {
        Self {
            num: 1,
            den: stride,
            granule: 1,
        }
    }

    /// Rows of `k` input elements, each giving `n` output elements.
    pub fn rows(k: usize, n: usize) -> Self {
        Self {
            num: n,
            den: k,
            granule: k,
        }
    }

    /// Output elements of a chunk of `len` input elements; `None` on overflow or `den = 0`.
    pub fn out_len(&self, len: usize) -> Option<usize> {
        if self.den == 0 {
            return None;
        }
        let o = (len as u128 * self.num as u128).div_ceil(self.den as u128);
        usize::try_from(o).ok()
    }
}

impl ChunkWork {
    /// The suite kernel; `None` for the SGEMM (its variant depends on the chunk's shape).
    pub fn suite_kernel(&self) -> Option<&'static KernelInfo> {
        match self {
            ChunkWork::Copy(k)
            | ChunkWork::Transpose { kernel: k, .. }
            | ChunkWork::Gather { kernel: k, .. } => Some(k),
            ChunkWork::Gemm { .. } => None,
        }
    }

    /// How a chunk's output length follows from its input length.
    pub fn out_shape(&self) -> OutShape {
        match *self {
            ChunkWork::Gather { stride, .. } => OutShape::shrink(stride.max(1)),
            ChunkWork::Gemm { k, n } => OutShape::rows(k, n),
            _ => OutShape::SAME,
        }
    }

    /// Output elements of a chunk of `len` input elements (`len` a multiple of the granule).
    pub fn out_len(&self, len: usize) -> usize {
        self.out_shape().out_len(len).unwrap_or(usize::MAX)
    }

    /// The suite problem for a chunk of `len` elements; `None` for the SGEMM.
    pub fn problem(&self, len: usize) -> Option<Problem> {
        Some(match *self {
            ChunkWork::Copy(_) => Problem::Copy(CopyProblem { n: len }),
            ChunkWork::Transpose { cols, .. } => {
                let (rows, cols) = if cols > 0 && len.is_multiple_of(cols) {
                    (len / cols, cols)
                } else {
                    (1, len)
                };
                Problem::Transpose(TransposeProblem { rows, cols })
            }
            ChunkWork::Gather { stride, .. } => Problem::Strided(StridedProblem {
                n: self.out_len(len),
                stride: stride.max(1),
            }),
            ChunkWork::Gemm { .. } => return None,
        })
    }

    /// The SGEMM of a chunk of `len` elements (`len / k` rows); `None` for suite kernels.
    pub fn gemm_problem(&self, len: usize) -> Option<GemmProblem> {
        match *self {
            ChunkWork::Gemm { k, n } if k > 0 => Some(GemmProblem::new(len / k, n, k)),
            _ => None,
        }
    }

    /// The resident weights the work needs (uploaded now), if any.
    pub fn weights(&self, gpu: &Gpu) -> Result<Option<ResidentWeights>> {
        match *self {
            ChunkWork::Gemm { k, n } => ResidentWeights::new(gpu, k, n).map(Some),
            _ => Ok(None),
        }
    }

    /// Plans the compute stage for a chunk of `len` elements between chunk buffers of
    /// `src_len` and `dst_len` elements (`weights` from [`ChunkWork::weights`]).
    pub fn plan(
        &self,
        gpu: &Gpu,
        len: usize,
        src_len: usize,
        dst_len: usize,
        weights: Option<&ResidentWeights>,
    ) -> Result<PlannedWork> {
        match (
            self.problem(len),
            self.suite_kernel(),
            self.gemm_problem(len),
        ) {
            (Some(problem), Some(kernel), _) => Ok(PlannedWork::Suite(PlannedCopy::for_problem(
                gpu, kernel, problem, src_len, dst_len,
            )?)),
            (_, _, Some(p)) => {
                let w =
                    weights
                        .filter(|w| w.shape() == (p.k, p.n))
                        .ok_or_else(|| Error::Pipeline {
                            what: format!(
                                "{} needs resident weights of {} × {}",
                                self.name(),
                                p.k,
                                p.n
                            ),
                        })?;
                Ok(PlannedWork::Gemm(PlannedGemm::new(
                    gpu,
                    p,
                    src_len,
                    w.ptr(),
                    w.host().len(),
                    dst_len,
                )?))
            }
            _ => Err(Error::Pipeline {
                what: format!("{self:?} has no problem"),
            }),
        }
    }

    /// `family/variant`, with the stride for a gather; `gemm K×N (resident B)` for the SGEMM.
    pub fn name(&self) -> String {
        match (self, self.suite_kernel()) {
            (ChunkWork::Gemm { k, n }, _) => format!("gemm ·B {k}×{n} (B resident)"),
            (ChunkWork::Gather { stride, .. }, Some(kernel)) => {
                format!("{} stride {stride}", crate::check::kernel_name(kernel))
            }
            (_, Some(kernel)) => crate::check::kernel_name(kernel),
            (_, None) => unreachable!("only the SGEMM has no suite kernel"),
        }
    }

    /// Whether the output is checked with a tolerance (the SGEMM) rather than bit for bit.
    pub fn is_gemm(&self) -> bool {
        matches!(self, ChunkWork::Gemm { .. })
    }
}
