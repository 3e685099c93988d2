//! Copy family: `dst[i] = src[i]`, `n` elements.

use cudarc::driver::{DevicePtr, DevicePtrMut};
use rustile_kernels::copy::{v01_scalar, v02_vec16, v03_grid_stride, v04_vec16_any};
use rustile_kernels::registry::KernelInfo;

use crate::check::{self, BufArg, Plan, Scalar};
use crate::elem::DeviceElem;
use crate::error::Result;
use crate::gpu::Gpu;

/// The copy family, for validation ([`crate::families::all`]).
pub const FAMILY: &dyn crate::families::Family = &crate::families::memory::Memory::new(
    rustile_kernels::registry::Family::Copy,
    "contiguous copy: dst[i] = src[i]",
);

/// A copy of `n` elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CopyProblem {
    /// Elements.
    pub n: usize,
}

impl CopyProblem {
    /// Shape, as text.
    pub fn shape(&self) -> String {
        format!("n={}", self.n)
    }

    /// Bytes that must cross DRAM: `n` elements read and `n` written.
    pub fn bytes_moved(&self, elem_bytes: usize) -> u64 {
        2 * self.n as u64 * elem_bytes as u64
    }

    /// Elements `src` and `dst` must hold.
    pub fn lens(&self) -> Result<(usize, usize)> {
        Ok((self.n, self.n))
    }

    /// Checks the arguments of `kernel` for this problem.
    pub fn check<T: DeviceElem>(
        &self,
        kernel: &KernelInfo,
        src: BufArg,
        dst: BufArg,
    ) -> Result<()> {
        check::nonzero(kernel, self.n, "n")?;
        check::mul(
            kernel,
            self.n,
            2 * std::mem::size_of::<T>(),
            "bytes of src and dst",
        )?;
        let shape = self.shape();
        check::at_least(kernel, src, self.n, &shape)?;
        check::at_least(kernel, dst, self.n, &shape)?;
        check::naturally_aligned::<T>(kernel, &[src, dst])?;
        // The scalar copy and `vec16_any` take any naturally aligned pointers; the other
        // vector copies need both 16-byte aligned.
        if kernel.name != v01_scalar::INFO.name && kernel.name != v04_vec16_any::INFO.name {
            check::aligned(kernel, src, 16)?;
            check::aligned(kernel, dst, 16)?;
        }
        Ok(())
    }

    /// Checks the arguments and plans the launch: `(src, dst, n: u64)`.
    pub fn plan<T: DeviceElem>(
        &self,
        kernel: &KernelInfo,
        src: BufArg,
        dst: BufArg,
        sm_count: u32,
    ) -> Result<Plan> {
        self.check::<T>(kernel, src, dst)?;
        Ok(Plan {
            grid: self.grid(kernel, std::mem::size_of::<T>(), sm_count),
            scalars: vec![Scalar::U64(self.n as u64)],
        })
    }

    /// Grid (blocks) for `kernel`.
    pub fn grid(&self, kernel: &KernelInfo, elem_bytes: usize, sm_count: u32) -> (u64, u64, u64) {
        let (n, b) = (self.n as u64, elem_bytes as u64);
        let x = match kernel.name {
            name if name == v01_scalar::INFO.name => v01_scalar::grid_blocks(n),
            name if name == v02_vec16::INFO.name => v02_vec16::grid_blocks(n, b),
            name if name == v04_vec16_any::INFO.name => v04_vec16_any::grid_blocks(n, b),
            _ => v03_grid_stride::grid_blocks(n, b, sm_count),
        };
        (x, 1, 1)
    }

    /// CPU reference.
    pub fn reference<T: Copy>(&self, src: &[T]) -> Vec<T> {
        src[..self.n].to_vec()
    }
}

/// The variants of this family.
pub fn variants() -> impl Iterator<Item = &'static KernelInfo> {
    family_variants(rustile_kernels::registry::Family::Copy)
}

pub(crate) fn family_variants(
    family: rustile_kernels::registry::Family,
) -> impl Iterator<Item = &'static KernelInfo> {
    rustile_kernels::registry::of(family, rustile_kernels::registry::Role::Ladder)
}

/// The variant the dispatcher uses: `vec16_any`, the one-vector-per-thread copy (`vec16`,
/// 1.006× `cuMemcpyDtoD` at 2²⁸ + 3 f32 on the H200, where `grid_stride` reaches 0.909×:
/// `bench-results/2026-11-30-h200-memory/`) for any length and any naturally aligned
/// `src`/`dst` (a scalar head up to `dst`'s first 16-byte boundary; 16-byte loads too when
/// `src` has `dst`'s misalignment, element loads gathered into 16-byte stores when not).
pub const BEST: &KernelInfo = &v04_vec16_any::INFO;

/// Launches `kernel` on `gpu`'s stream: `dst[..n] = src[..n]`. Asynchronous; errors in the
/// arguments are returned before anything is launched.
pub fn launch<T: DeviceElem>(
    gpu: &Gpu,
    kernel: &KernelInfo,
    problem: &CopyProblem,
    src: &impl DevicePtr<T>,
    dst: &mut impl DevicePtrMut<T>,
) -> Result<()> {
    let sm_count = gpu.info().sm_count;
    check::launch_on_gpu(gpu, kernel, src, dst, |s, d| {
        problem.plan::<T>(kernel, s, d, sm_count)
    })
}
