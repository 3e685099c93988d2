//! Argument checks shared by the launchers, and exact result comparison.
//!
//! The checks are pure functions of lengths, addresses and shapes, so they are tested without
//! a GPU; the launchers call them before touching the device.

use cudarc::driver::{CudaFunction, DevicePtr, DevicePtrMut, LaunchConfig};
use rustile_kernels::registry::{DType, KernelInfo};

use crate::elem::DeviceElem;
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::launch::{Arg, LaunchPlan};
use crate::sim::{SimBuf, Simulator};

/// A buffer argument, as the checks see it.
#[derive(Clone, Copy, Debug)]
pub struct BufArg {
    /// Argument name (`src`).
    pub name: &'static str,
    /// Elements.
    pub len: usize,
    /// Device address.
    pub addr: u64,
}

impl BufArg {
    /// The buffer `name` of `len` elements at `addr`.
    pub const fn new(name: &'static str, len: usize, addr: u64) -> Self {
        BufArg { name, len, addr }
    }
}

/// `family/variant`.
pub fn kernel_name(kernel: &KernelInfo) -> String {
    format!("{}/{}", kernel.family.name(), kernel.name)
}

/// The buffer must hold at least `need` elements.
pub fn at_least(kernel: &KernelInfo, buf: BufArg, need: usize, shape: &str) -> Result<()> {
    if buf.len < need {
        return Err(Error::BufferLength {
            kernel: kernel_name(kernel),
            buffer: buf.name,
            got: buf.len,
            need,
            shape: shape.to_string(),
        });
    }
    Ok(())
}

/// The buffer must be `align`-byte aligned.
pub fn aligned(kernel: &KernelInfo, buf: BufArg, align: usize) -> Result<()> {
    if !buf.addr.is_multiple_of(align as u64) {
        return Err(Error::Misaligned {
            kernel: kernel_name(kernel),
            buffer: buf.name,
            addr: buf.addr,
            align,
        });
    }
    Ok(())
}

/// Every element type must be naturally aligned (cudarc allocations always are; a transmuted
/// view may not be).
pub fn naturally_aligned<T>(kernel: &KernelInfo, bufs: &[BufArg]) -> Result<()> {
    bufs.iter()
        .try_for_each(|b| aligned(kernel, *b, std::mem::align_of::<T>()))
}

/// `a · b` or [`Error::TooLarge`].
pub fn mul(kernel: &KernelInfo, a: usize, b: usize, what: &str) -> Result<usize> {
    a.checked_mul(b).ok_or_else(|| Error::TooLarge {
        kernel: kernel_name(kernel),
        what: format!("{what}: {a} × {b} overflows"),
    })
}

/// Bytes of several buffers together, each `(elements, bytes per element)`, or
/// [`Error::TooLarge`] naming `what` when the sum overflows `usize`.
pub fn total_bytes(what: &str, bufs: &[(usize, usize)]) -> Result<usize> {
    bufs.iter()
        .try_fold(0usize, |sum, &(n, size)| {
            n.checked_mul(size).and_then(|b| sum.checked_add(b))
        })
        .ok_or_else(|| Error::TooLarge {
            kernel: what.to_string(),
            what: format!("buffers of {bufs:?} (elements, bytes each) overflow usize bytes"),
        })
}

/// A nonzero dimension, or [`Error::ZeroSize`].
pub fn nonzero(kernel: &KernelInfo, v: usize, what: &'static str) -> Result<()> {
    if v == 0 {
        return Err(Error::ZeroSize {
            kernel: kernel_name(kernel),
            what,
        });
    }
    Ok(())
}

/// Looks up the kernel's function for `dtype` and checks the launch against the device limits.
pub fn prepare(
    gpu: &Gpu,
    kernel: &KernelInfo,
    dtype: DType,
    grid: (u64, u64, u64),
) -> Result<(CudaFunction, LaunchConfig)> {
    let symbol = kernel.symbol(dtype).ok_or_else(|| Error::UnknownKernel {
        family: kernel.family.name().into(),
        variant: kernel.name.into(),
        dtype: dtype.name(),
    })?;
    prepare_symbol(gpu, kernel, symbol, grid, kernel.shared_bytes(dtype))
}

/// [`prepare`] for one entry `symbol` of `kernel` with `shared` bytes of dynamic shared memory.
pub fn prepare_symbol(
    gpu: &Gpu,
    kernel: &KernelInfo,
    symbol: &str,
    grid: (u64, u64, u64),
    shared: usize,
) -> Result<(CudaFunction, LaunchConfig)> {
    let name = kernel_name(kernel);
    let info = gpu.info();
    let limits = info.max_grid;
    if grid.0 > limits.0 as u64 || grid.1 > limits.1 as u64 || grid.2 > limits.2 as u64 {
        return Err(Error::TooLarge {
            kernel: name,
            what: format!("grid {grid:?} exceeds the device's limit {limits:?}"),
        });
    }
    let (bx, by, bz) = kernel.block;
    if bx * by * bz > info.max_threads_per_block {
        return Err(Error::Resource {
            kernel: name,
            what: format!(
                "{} threads per block exceed the device's {}",
                bx * by * bz,
                info.max_threads_per_block
            ),
        });
    }
    if shared > info.shared_per_block_optin {
        return Err(Error::Resource {
            kernel: name,
            what: format!(
                "{shared} bytes of shared memory exceed the device's {} per block",
                info.shared_per_block_optin
            ),
        });
    }
    let f = gpu.function(symbol)?;
    if shared > info.shared_per_block {
        use cudarc::driver::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES as MAX_DYN;
        f.set_attribute(MAX_DYN, shared as i32)
            .map_err(|source| Error::Driver {
                during: format!("raising {symbol}'s dynamic shared memory to {shared} bytes"),
                source,
            })?;
    }
    Ok((
        f,
        LaunchConfig {
            grid_dim: (grid.0 as u32, grid.1 as u32, grid.2 as u32),
            block_dim: kernel.block,
            shared_mem_bytes: shared as u32,
        },
    ))
}

/// Compares `got` with `want` bit for bit (data movement must be exact; NaN never matches a
/// finite reference, and the poison value is NaN).
pub fn exact<T: DeviceElem>(kernel: &str, shape: &str, got: &[T], want: &[T]) -> Result<()> {
    if got.len() != want.len() {
        return Err(Error::Mismatch {
            kernel: kernel.into(),
            shape: shape.into(),
            detail: format!("{} elements, expected {}", got.len(), want.len()),
        });
    }
    let mut wrong = 0usize;
    let mut first = None;
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        if g.bits() != w.bits() || g.to_f64().is_nan() {
            wrong += 1;
            first.get_or_insert((i, *g, *w));
        }
    }
    match first {
        None => Ok(()),
        Some((i, g, w)) => Err(Error::Mismatch {
            kernel: kernel.into(),
            shape: shape.into(),
            detail: format!(
                "{wrong} of {} elements differ; first at {i}: got {} expected {}",
                got.len(),
                g.to_f64(),
                w.to_f64()
            ),
        }),
    }
}

/// A scalar kernel argument (after the two pointers every rustile kernel starts with).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scalar {
    /// `u32` parameter.
    U32(u32),
    /// `u64` parameter.
    U64(u64),
}

/// What a family's planner computed from checked arguments: the grid and the scalar arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Blocks `(x, y, z)`.
    pub grid: (u64, u64, u64),
    /// Arguments after `(src, dst)`.
    pub scalars: Vec<Scalar>,
}

/// Launches `kernel` on the GPU: every rustile kernel takes `(src: *const T, dst: *mut T,
/// scalars…)`; `plan` checks the buffers and computes the grid and scalars. Asynchronous.
pub(crate) fn launch_on_gpu<T: DeviceElem>(
    gpu: &Gpu,
    kernel: &KernelInfo,
    src: &impl DevicePtr<T>,
    dst: &mut impl DevicePtrMut<T>,
    plan: impl FnOnce(BufArg, BufArg) -> Result<Plan>,
) -> Result<()> {
    let stream = gpu.stream();
    let (src_len, dst_len) = (src.len(), dst.len());
    let (src_ptr, _src_guard) = src.device_ptr(stream);
    let (dst_ptr, _dst_guard) = dst.device_ptr_mut(stream);
    let plan = plan(
        BufArg::new("src", src_len, src_ptr),
        BufArg::new("dst", dst_len, dst_ptr),
    )?;
    let launch = memory_plan::<T>(kernel, src_ptr, dst_ptr, plan)?;
    // SAFETY: every memory kernel's signature is `(src: *const T, dst: *mut T, scalars…)` with
    // the scalars in `plan.scalars`' order and types (each family's `plan` builds them from its
    // kernel's signature); `plan` proved, from these very lengths and addresses, that both
    // buffers hold what the shape needs with the alignment the variant needs, and computed a
    // grid covering the shape; `launch_on` checks grid, block and shared memory against the
    // device; dst is a `&mut` borrow (src cannot be a view of it), and both stream guards live
    // until this function returns.
    unsafe { launch.launch_on(gpu, stream) }
}

/// The [`LaunchPlan`] of a memory-family kernel `(src, dst, scalars…)`.
pub(crate) fn memory_plan<T: DeviceElem>(
    kernel: &KernelInfo,
    src: u64,
    dst: u64,
    plan: Plan,
) -> Result<LaunchPlan<'_>> {
    let entry = kernel.entry(T::DTYPE).ok_or_else(|| Error::UnknownKernel {
        family: kernel.family.name().into(),
        variant: kernel.name.into(),
        dtype: T::DTYPE.name(),
    })?;
    let mut args = vec![Arg::Ptr(src), Arg::Ptr(dst)];
    args.extend(plan.scalars.iter().map(|s| match *s {
        Scalar::U32(v) => Arg::U32(v),
        Scalar::U64(v) => Arg::U64(v),
    }));
    Ok(LaunchPlan::new(kernel, entry, plan.grid, args))
}

/// Runs `kernel` in the simulator, with the same checks and plan as on the GPU. Synchronous.
pub(crate) fn launch_on_sim<T: DeviceElem>(
    sim: &Simulator,
    kernel: &KernelInfo,
    src: &SimBuf<T>,
    dst: &SimBuf<T>,
    plan: impl FnOnce(BufArg, BufArg) -> Result<Plan>,
) -> Result<()> {
    let plan = plan(
        BufArg::new("src", src.len(), src.addr()),
        BufArg::new("dst", dst.len(), dst.addr()),
    )?;
    memory_plan::<T>(kernel, src.addr(), dst.addr(), plan)?.simulate(sim)
}
