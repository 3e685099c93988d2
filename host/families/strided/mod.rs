//! Strided copy family: `dst[i] = src[i · stride]`, `n` output elements.

use cudarc::driver::{DevicePtr, DevicePtrMut};
use rustile_kernels::registry::KernelInfo;
use rustile_kernels::strided::v01_gather;

use crate::check::{self, BufArg, Plan, Scalar};
use crate::elem::DeviceElem;
use crate::error::{Error, Result};
use crate::gpu::Gpu;

/// The strided family, for validation ([`crate::families::all`]).
pub const FAMILY: &dyn crate::families::Family = &crate::families::memory::Memory::new(
    rustile_kernels::registry::Family::Strided,
    "strided gather: dst[i] = src[i·stride]",
);

pub use rustile_kernels::strided::BENCH_STRIDES;

/// A strided gather of `n` elements at `stride`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StridedProblem {
    /// Output elements.
    pub n: usize,
    /// Input stride, elements (≥ 1).
    pub stride: usize,
}

impl StridedProblem {
    /// Shape, as text.
    pub fn shape(&self) -> String {
        format!("n={} stride={}", self.n, self.stride)
    }

    /// Useful bytes: `n` elements read, `n` written (the sectors actually fetched are more; see
    /// the family docs).
    pub fn bytes_moved(&self, elem_bytes: usize) -> u64 {
        2 * self.n as u64 * elem_bytes as u64
    }

    /// Elements `src` must hold: `(n - 1) · stride + 1`; `None` if that overflows.
    pub fn src_len(&self) -> Option<usize> {
        self.n
            .checked_sub(1)?
            .checked_mul(self.stride)?
            .checked_add(1)
    }

    /// Elements `src` and `dst` must hold (`(0, 0)` for `n = 0`, which `check` refuses), or
    /// [`Error::TooLarge`] when the source span overflows.
    pub fn lens(&self) -> Result<(usize, usize)> {
        if self.n == 0 {
            return Ok((0, 0));
        }
        let src = self.src_len().ok_or_else(|| Error::TooLarge {
            kernel: "strided".into(),
            what: format!(
                "source span (n − 1)·stride + 1 with n = {}, stride = {} overflows",
                self.n, self.stride
            ),
        })?;
        Ok((src, self.n))
    }

    /// Checks the arguments of `kernel` for this problem.
    pub fn check<T: DeviceElem>(
        &self,
        kernel: &KernelInfo,
        src: BufArg,
        dst: BufArg,
    ) -> Result<()> {
        check::nonzero(kernel, self.n, "n")?;
        check::nonzero(kernel, self.stride, "stride")?;
        let src_len = check::mul(kernel, self.n - 1, self.stride, "source span (n-1)·stride")? + 1;
        check::mul(kernel, src_len, std::mem::size_of::<T>(), "source bytes")?;
        let shape = self.shape();
        check::at_least(kernel, src, src_len, &shape)?;
        check::at_least(kernel, dst, self.n, &shape)?;
        check::naturally_aligned::<T>(kernel, &[src, dst])
    }

    /// Checks the arguments and plans the launch: `(src, dst, n: u64, stride: u64)`.
    pub fn plan<T: DeviceElem>(
        &self,
        kernel: &KernelInfo,
        src: BufArg,
        dst: BufArg,
    ) -> Result<Plan> {
        self.check::<T>(kernel, src, dst)?;
        Ok(Plan {
            grid: (v01_gather::grid_blocks(self.n as u64), 1, 1),
            scalars: vec![Scalar::U64(self.n as u64), Scalar::U64(self.stride as u64)],
        })
    }

    /// CPU reference.
    pub fn reference<T: Copy>(&self, src: &[T]) -> Vec<T> {
        (0..self.n).map(|i| src[i * self.stride]).collect()
    }
}

/// The variants of this family.
pub fn variants() -> impl Iterator<Item = &'static KernelInfo> {
    crate::families::copy::family_variants(rustile_kernels::registry::Family::Strided)
}

/// The one variant.
pub const BEST: &KernelInfo = &v01_gather::INFO;

/// Launches `kernel`: `dst[i] = src[i · stride]` for `i < n`. Asynchronous.
pub fn launch<T: DeviceElem>(
    gpu: &Gpu,
    kernel: &KernelInfo,
    problem: &StridedProblem,
    src: &impl DevicePtr<T>,
    dst: &mut impl DevicePtrMut<T>,
) -> Result<()> {
    check::launch_on_gpu(gpu, kernel, src, dst, |s, d| {
        problem.plan::<T>(kernel, s, d)
    })
}
