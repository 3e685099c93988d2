//! The suite's copy kernel, planned once and launched on any stream by raw device address.
//!
//! The family launchers (`copy::launch`) run on the [`Gpu`]'s own stream; the orchestration
//! code needs many streams, so it plans a launch with the same checks (`CopyProblem::plan`,
//! `check::prepare`) and then only pushes addresses per launch.

use cudarc::driver::{CudaFunction, CudaStream, LaunchConfig, PushKernelArg};
use rustile_kernels::registry::{DType, KernelInfo};

use crate::check::{self, BufArg, Scalar};
use crate::copy::CopyProblem;
use crate::error::{DriverContext, Result};
use crate::gpu::Gpu;

/// A checked, planned `copy` launch of `n` f32 elements between buffers of at least `n`.
pub struct PlannedCopy {
    kernel: &'static KernelInfo,
    f: CudaFunction,
    cfg: LaunchConfig,
    n: u64,
    src_len: usize,
    dst_len: usize,
}

impl PlannedCopy {
    /// Plans `kernel` for `n` elements from a buffer of `src_len` to one of `dst_len` elements.
    /// Device allocations are 256-byte aligned, so the addresses used at launch (allocation
    /// starts) satisfy every variant's alignment; the lengths are checked here.
    pub fn new(
        gpu: &Gpu,
        kernel: &'static KernelInfo,
        n: usize,
        src_len: usize,
        dst_len: usize,
    ) -> Result<Self> {
        let problem = CopyProblem { n };
        let arg = |name, len| BufArg {
            name,
            len,
            addr: 256,
        };
        let plan = problem.plan::<f32>(
            kernel,
            arg("src", src_len),
            arg("dst", dst_len),
            gpu.info().sm_count,
        )?;
        let (f, cfg) = check::prepare(gpu, kernel, DType::F32, plan.grid)?;
        debug_assert_eq!(plan.scalars, vec![Scalar::U64(n as u64)]);
        Ok(Self {
            kernel,
            f,
            cfg,
            n: n as u64,
            src_len,
            dst_len,
        })
    }

    /// Elements copied per launch.
    pub fn n(&self) -> usize {
        self.n as usize
    }

    /// Enqueues `dst[..n] = src[..n]` on `stream`.
    ///
    /// # Safety
    /// `src` and `dst` must be device allocations of at least `src_len` / `dst_len` f32
    /// elements (as given to [`PlannedCopy::new`]), 16-byte aligned, not overlapping, alive
    /// until the launch completes, and not written by other work while it runs.
    pub unsafe fn launch(&self, stream: &CudaStream, src: u64, dst: u64) -> Result<()> {
        let mut args = stream.launch_builder(&self.f);
        args.arg(&src).arg(&dst).arg(&self.n);
        // SAFETY: the copy kernels take `(src: *const f32, dst: *mut f32, n: u64)`; `new`
        // checked n against both lengths and the grid against the device; the caller vouches
        // for the addresses (this function's contract).
        unsafe { args.launch(self.cfg) }.during(|| {
            format!(
                "launching {} (n = {}, buffers {} / {})",
                check::kernel_name(self.kernel),
                self.n,
                self.src_len,
                self.dst_len
            )
        })?;
        Ok(())
    }
}
