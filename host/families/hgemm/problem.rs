//! The tensor-core GEMM problem: shape, pitches, B's layout, types, epilogue scalars, checks.

use cudarc::driver::DevicePtrMut;
use rustile_kernels::registry::DType;

use crate::error::{Error, Result};

/// `v` rounded to the 16-bit type `ty`, as bits.
pub fn round(ty: DType, v: f32) -> u16 {
    crate::elem::round_bits(ty, v) as u16
}

/// Bits of the 16-bit type `ty` widened to f32.
pub fn widen(ty: DType, bits: u16) -> f32 {
    crate::elem::widen_bits(ty, bits as u32)
}

/// How B is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub enum BLayout {
    /// K × N row-major (N contiguous), pitch `ldb ≥ n`.
    RowMajor,
    /// N × K row-major (K contiguous: Bᵀ), pitch `ldb ≥ k`.
    Transposed,
}

impl BLayout {
    /// `bn` (row-major) or `bt` (transposed), as in symbols and reports.
    pub fn tag(self) -> &'static str {
        match self {
            BLayout::RowMajor => "bn",
            BLayout::Transposed => "bt",
        }
    }
}

/// One problem: shape, layouts, types and the epilogue's scalars.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Problem {
    /// Rows of A and C.
    pub m: usize,
    /// Columns of B and C.
    pub n: usize,
    /// Columns of A, rows of B.
    pub k: usize,
    /// Row pitch of A (≥ k).
    pub lda: usize,
    /// Row pitch of B (≥ n for row-major B, ≥ k for transposed B).
    pub ldb: usize,
    /// Row pitch of C (≥ n).
    pub ldc: usize,
    /// B's layout.
    pub b: BLayout,
    /// Input type: [`DType::F16`] or [`DType::Bf16`].
    #[serde(serialize_with = "crate::elem::serialize_dtype")]
    pub ty: DType,
    /// Output type: [`DType::F32`] or the input type.
    #[serde(serialize_with = "crate::elem::serialize_dtype")]
    pub out: DType,
    /// α.
    pub alpha: f32,
    /// β (0: C is not read).
    pub beta: f32,
    /// ReLU after the bias.
    pub relu: bool,
}

impl Problem {
    /// `C = A·B`, tight pitches, row-major B, output in the input type.
    pub fn new(ty: DType, m: usize, n: usize, k: usize) -> Self {
        Self {
            m,
            n,
            k,
            lda: k,
            ldb: n,
            ldc: n,
            b: BLayout::RowMajor,
            ty,
            out: ty,
            alpha: 1.0,
            beta: 0.0,
            relu: false,
        }
    }

    /// The same problem with B transposed (tight pitch).
    pub fn with_b(mut self, b: BLayout) -> Self {
        self.b = b;
        self.ldb = match b {
            BLayout::RowMajor => self.n,
            BLayout::Transposed => self.k,
        };
        self
    }

    /// Shape as text.
    pub fn shape(&self) -> String {
        format!("{}x{}x{}", self.m, self.n, self.k)
    }

    /// Elements each buffer must hold, `[a, b, c]`, or [`Error::TooLarge`] when a span
    /// `(rows − 1)·ld + cols` overflows `usize`.
    pub fn lens(&self) -> Result<[usize; 3]> {
        let span = |what: &str, rows: usize, cols: usize, ld: usize| {
            if rows == 0 || cols == 0 {
                return Ok(0);
            }
            (rows - 1)
                .checked_mul(ld)
                .and_then(|v| v.checked_add(cols))
                .ok_or_else(|| Error::TooLarge {
                    kernel: format!("hgemm {}", self.shape()),
                    what: format!("{what}: ({rows} − 1)·{ld} + {cols} elements overflow usize"),
                })
        };
        let b = match self.b {
            BLayout::RowMajor => span("B", self.k, self.n, self.ldb)?,
            BLayout::Transposed => span("B", self.n, self.k, self.ldb)?,
        };
        Ok([
            span("A", self.m, self.k, self.lda)?,
            b,
            span("C", self.m, self.n, self.ldc)?,
        ])
    }

    /// Bytes of A, B and C together (inputs 2 bytes, C [`Problem::out`]'s), or
    /// [`Error::TooLarge`]: what a caller checks against the back end before it allocates.
    pub fn bytes(&self) -> Result<usize> {
        let [la, lb, lc] = self.lens()?;
        crate::check::total_bytes(
            &format!("hgemm {}", self.shape()),
            &[(la, 2), (lb, 2), (lc, self.out.bytes())],
        )
    }

    /// Floating-point operations, `2·M·N·K`.
    pub fn flops(&self) -> f64 {
        2.0 * self.m as f64 * self.n as f64 * self.k as f64
    }

    /// Checks shapes and pitches (not buffers).
    pub fn check(&self) -> Result<()> {
        let kernel = || format!("hgemm {}", self.shape());
        crate::elem::half_input(self.ty, &kernel())?;
        if self.out != DType::F32 && self.out != self.ty {
            return Err(Error::Usage(format!(
                "{}: the output must be f32 or the input type {}, not {}",
                kernel(),
                self.ty.name(),
                self.out.name()
            )));
        }
        if self.m == 0 || self.n == 0 {
            return Err(Error::ZeroSize {
                kernel: kernel(),
                what: if self.m == 0 { "m" } else { "n" },
            });
        }
        let b_cols = match self.b {
            BLayout::RowMajor => self.n,
            BLayout::Transposed => self.k,
        };
        for (name, ld, need) in [
            ("lda", self.lda, self.k),
            ("ldb", self.ldb, b_cols),
            ("ldc", self.ldc, self.n),
        ] {
            if ld < need {
                return Err(Error::Usage(format!(
                    "{}: {name} = {ld} is smaller than the row length {need}",
                    kernel()
                )));
            }
        }
        // The kernels index with 32-bit dimensions and 64-bit offsets.
        let limit = u32::MAX as usize;
        for (name, v) in [
            ("m", self.m),
            ("n", self.n),
            ("k", self.k),
            ("lda", self.lda),
            ("ldb", self.ldb),
            ("ldc", self.ldc),
        ] {
            if v > limit / 2 {
                return Err(Error::TooLarge {
                    kernel: kernel(),
                    what: format!("{name} = {v} exceeds 2^31"),
                });
            }
        }
        if !self.alpha.is_finite() || !self.beta.is_finite() {
            return Err(Error::Usage(format!(
                "{}: α = {} and β = {} must be finite",
                kernel(),
                self.alpha,
                self.beta
            )));
        }
        Ok(())
    }

    /// Checks buffer lengths (elements) against the shape and pitches: A, B, C hold
    /// [`Problem::lens`], the bias (if any) `n` floats. The front door's length check
    /// ([`crate::api::check_hgemm`]) and every [`Prepared::launch`](super::Prepared::launch)'s.
    pub fn check_lens(&self, a: usize, b: usize, c: usize, bias: Option<usize>) -> Result<()> {
        let [la, lb, lc] = self.lens()?;
        let bias = bias.map(|got| ("bias", got, self.n));
        for (name, got, need) in [("a", a, la), ("b", b, lb), ("c", c, lc)]
            .into_iter()
            .chain(bias)
        {
            if got < need {
                return Err(Error::BufferLength {
                    kernel: format!("hgemm {}", self.shape()),
                    buffer: name,
                    got,
                    need,
                    shape: self.shape(),
                });
            }
        }
        Ok(())
    }

    /// Whether TMA can describe A and B (base addresses and pitches 16-byte aligned).
    pub fn tma_ok(&self, addrs: [u64; 2]) -> bool {
        addrs.iter().all(|a| a.is_multiple_of(16))
            && (self.lda * 2).is_multiple_of(16)
            && (self.ldb * 2).is_multiple_of(16)
    }
}

/// The output buffer: bits of the input type, or f32 (a slice or a view: `Out::Half(&mut c)`).
pub enum Out<'a> {
    /// f16/bf16 bits.
    Half(&'a mut dyn DevicePtrMut<u16>),
    /// f32.
    F32(&'a mut dyn DevicePtrMut<f32>),
}

impl Out<'_> {
    pub(super) fn len(&self) -> usize {
        match self {
            Out::Half(c) => c.len(),
            Out::F32(c) => c.len(),
        }
    }
    /// The buffer's device address on `stream`.
    pub(super) fn addr(&mut self, stream: &cudarc::driver::CudaStream) -> u64 {
        match self {
            Out::Half(c) => c.device_ptr_mut(stream).0,
            Out::F32(c) => c.device_ptr_mut(stream).0,
        }
    }

    /// The output type this buffer holds for inputs of `ty`.
    pub(super) fn dtype(&self, ty: DType) -> DType {
        match self {
            Out::Half(_) => ty,
            Out::F32(_) => DType::F32,
        }
    }
}
