//! Transpose family: `out[c][r] = in[r][c]`, `in` is `rows × cols` row-major.

use cudarc::driver::{DevicePtr, DevicePtrMut};
use rustile_kernels::registry::{DType, KernelInfo, Launch};
use rustile_kernels::transpose::{self as tk, v03_smem_padded, v05_sector_aligned, v06_pairs};

use crate::check::{self, BufArg, Plan, Scalar};
use crate::elem::DeviceElem;
use crate::error::{Error, Result};
use crate::gpu::Gpu;

/// The transpose family, for validation ([`crate::families::all`]).
pub const FAMILY: &dyn crate::families::Family = &crate::families::memory::Memory::new(
    rustile_kernels::registry::Family::Transpose,
    "matrix transpose: dst[c][r] = src[r][c]",
);

/// A transpose of a `rows × cols` matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TransposeProblem {
    /// Input rows.
    pub rows: usize,
    /// Input columns.
    pub cols: usize,
}

impl TransposeProblem {
    /// Shape, as text.
    pub fn shape(&self) -> String {
        format!("{}x{}", self.rows, self.cols)
    }

    /// Bytes that must cross DRAM: every element read once and written once.
    pub fn bytes_moved(&self, elem_bytes: usize) -> u64 {
        2 * self.rows as u64 * self.cols as u64 * elem_bytes as u64
    }

    /// Elements `src` and `dst` must hold, or [`Error::TooLarge`] when `rows · cols` overflows.
    pub fn lens(&self) -> Result<(usize, usize)> {
        let n = self
            .rows
            .checked_mul(self.cols)
            .ok_or_else(|| Error::TooLarge {
                kernel: "transpose".into(),
                what: format!("rows · cols = {} × {} overflows", self.rows, self.cols),
            })?;
        Ok((n, n))
    }

    /// Checks the arguments of `kernel` for this problem.
    pub fn check<T: DeviceElem>(
        &self,
        kernel: &KernelInfo,
        src: BufArg,
        dst: BufArg,
    ) -> Result<()> {
        check::nonzero(kernel, self.rows, "rows")?;
        check::nonzero(kernel, self.cols, "cols")?;
        let n = check::mul(kernel, self.rows, self.cols, "rows · cols")?;
        check::mul(kernel, n, std::mem::size_of::<T>(), "matrix bytes")?;
        let too_large = |what: String| Error::TooLarge {
            kernel: check::kernel_name(kernel),
            what,
        };
        // Indices are u32 row/column numbers in the kernel (linear offsets are 64-bit), and
        // tile · (grid x or y) must fit in u32.
        let Launch::Tiles {
            tile, halo_rows, ..
        } = kernel.launch
        else {
            return Err(Error::Usage(format!(
                "{} is not a tiled kernel",
                check::kernel_name(kernel)
            )));
        };
        let (tile_rows, tile_cols) = (tile.0 as usize, tile.1 as usize);
        let max_dim = u32::MAX as usize - tile_rows.max(tile_cols) - halo_rows as usize;
        if self.rows > max_dim || self.cols > max_dim {
            return Err(too_large(format!(
                "{} exceeds the kernel's 32-bit row/column index (max {max_dim})",
                self.shape()
            )));
        }
        let (gx, gy, _) = self.grid(kernel);
        if gy > tk::MAX_GRID_Y as u64 || gx > i32::MAX as u64 {
            return Err(too_large(format!(
                "{} needs a grid of {gx} × {gy} blocks; the device takes up to {} × {}",
                self.shape(),
                i32::MAX,
                tk::MAX_GRID_Y
            )));
        }
        let shape = self.shape();
        check::at_least(kernel, src, n, &shape)?;
        check::at_least(kernel, dst, n, &shape)?;
        check::naturally_aligned::<T>(kernel, &[src, dst])
    }

    /// Checks the arguments and plans the launch: `(src, dst, rows: u32, cols: u32)`; the kernel
    /// masks every element outside `rows × cols`.
    pub fn plan<T: DeviceElem>(
        &self,
        kernel: &KernelInfo,
        src: BufArg,
        dst: BufArg,
    ) -> Result<Plan> {
        self.check::<T>(kernel, src, dst)?;
        Ok(Plan {
            grid: self.grid(kernel),
            scalars: vec![Scalar::U32(self.rows as u32), Scalar::U32(self.cols as u32)],
        })
    }

    /// Grid for `kernel` (zero for a kernel that is not tiled).
    pub fn grid(&self, kernel: &KernelInfo) -> (u64, u64, u64) {
        kernel
            .launch
            .tile_grid(self.rows as u64, self.cols as u64)
            .unwrap_or((0, 0, 0))
    }

    /// CPU reference (blocked, so large shapes stay quick).
    pub fn reference<T: Copy + Default>(&self, src: &[T]) -> Vec<T> {
        let (rows, cols) = (self.rows, self.cols);
        let mut out = vec![T::default(); rows * cols];
        const B: usize = 64;
        for r0 in (0..rows).step_by(B) {
            for c0 in (0..cols).step_by(B) {
                for r in r0..(r0 + B).min(rows) {
                    for c in c0..(c0 + B).min(cols) {
                        out[c * rows + r] = src[r * cols + c];
                    }
                }
            }
        }
        out
    }
}

/// The variants of this family.
pub fn variants() -> impl Iterator<Item = &'static KernelInfo> {
    crate::families::copy::family_variants(rustile_kernels::registry::Family::Transpose)
}

/// The variant the dispatcher uses for `problem` with `elem_bytes`-byte elements, from the
/// H200 measurements in `bench-results/`: the sector-aligned 64×32 tile for f32 at every shape
/// (0.90× cuMemcpyDtoD at 8192², 0.89× at 8191×8193). For 2-byte elements (f16, bf16) with
/// even `rows` and `cols`, `pairs` (every access a 4-byte pair; the one-element tiles reached
/// 0.70× at best). At odd shapes half of `pairs`' rows fall back to 2-byte accesses, not yet
/// measured: there the padded 32×32 tile when the output row pitch is a whole number of
/// 32-byte sectors (0.70× against 0.60×), else the sector-aligned one (0.62× against 0.49×).
pub fn best(problem: &TransposeProblem, elem_bytes: usize) -> &'static KernelInfo {
    let aligned_rows = problem
        .rows
        .checked_mul(elem_bytes)
        .is_some_and(|b| b.is_multiple_of(32));
    let even = problem.rows.is_multiple_of(2) && problem.cols.is_multiple_of(2);
    match elem_bytes {
        2 if even => &v06_pairs::INFO,
        2 if aligned_rows => &v03_smem_padded::INFO,
        _ => &v05_sector_aligned::INFO,
    }
}

/// [`best`] for `dtype`: its choice when that variant is built for `dtype`, else `pairs`, the
/// one 2-byte variant with a bf16 build (any shape). For a dtype no transpose is built for,
/// [`best`]'s choice (launching it is then [`Error::MissingKernel`]).
pub fn best_for(problem: &TransposeProblem, dtype: DType) -> &'static KernelInfo {
    let k = best(problem, dtype.bytes());
    if k.symbol(dtype).is_none() && v06_pairs::INFO.symbol(dtype).is_some() {
        &v06_pairs::INFO
    } else {
        k
    }
}

/// Launches `kernel`: `dst = srcᵀ`. Asynchronous.
pub fn launch<T: DeviceElem>(
    gpu: &Gpu,
    kernel: &KernelInfo,
    problem: &TransposeProblem,
    src: &impl DevicePtr<T>,
    dst: &mut impl DevicePtrMut<T>,
) -> Result<()> {
    check::launch_on_gpu(gpu, kernel, src, dst, |s, d| {
        problem.plan::<T>(kernel, s, d)
    })
}
