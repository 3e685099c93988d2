//! A suite kernel (copy, transpose, strided), planned once and launched on any stream by raw
//! device address.
//!
//! The family launchers (`copy::launch`, …) run on the [`Gpu`]'s own stream; the orchestration
//! code needs many streams, so it plans a launch with the same checks (`Problem::plan`,
//! `check::prepare`) and then only pushes addresses per launch.

use cudarc::driver::{CudaFunction, CudaStream, LaunchConfig, PushKernelArg};
use rustile_kernels::registry::{DType, KernelInfo};

use crate::check::{self, BufArg, Scalar};
use crate::error::{DriverContext, Result};
use crate::gpu::Gpu;
use crate::problem::Problem;

/// A checked, planned f32 launch of one suite kernel on one problem, between buffers of
/// `src_len` and `dst_len` elements.
pub struct PlannedCopy {
    kernel: &'static KernelInfo,
    problem: Problem,
    f: CudaFunction,
    cfg: LaunchConfig,
    scalars: Vec<Scalar>,
    src_len: usize,
    dst_len: usize,
}

impl PlannedCopy {
    /// Plans `kernel` for `dst[..n] = src[..n]` (a copy of `n` f32) between buffers of
    /// `src_len` and `dst_len` elements.
    pub fn new(
        gpu: &Gpu,
        kernel: &'static KernelInfo,
        n: usize,
        src_len: usize,
        dst_len: usize,
    ) -> Result<Self> {
        let problem = Problem::Copy(crate::copy::CopyProblem { n });
        Self::for_problem(gpu, kernel, problem, src_len, dst_len)
    }

    /// Plans `kernel` for `problem`. Device allocations are 256-byte aligned, so the addresses
    /// used at launch (allocation starts) satisfy every variant's alignment; the lengths, the
    /// grid and the family are checked here.
    pub fn for_problem(
        gpu: &Gpu,
        kernel: &'static KernelInfo,
        problem: Problem,
        src_len: usize,
        dst_len: usize,
    ) -> Result<Self> {
        let arg = |name, len| BufArg {
            name,
            len,
            addr: 256,
        };
        let sm_count = gpu.info().sm_count;
        let plan =
            problem.plan::<f32>(kernel, arg("src", src_len), arg("dst", dst_len), sm_count)?;
        let (f, cfg) = check::prepare(gpu, kernel, DType::F32, plan.grid)?;
        Ok(Self {
            kernel,
            problem,
            f,
            cfg,
            scalars: plan.scalars,
            src_len,
            dst_len,
        })
    }

    /// The problem each launch solves.
    pub fn problem(&self) -> &Problem {
        &self.problem
    }

    /// Enqueues the planned kernel on `stream`.
    ///
    /// # Safety
    /// `src` and `dst` must be device allocations of at least `src_len` / `dst_len` f32
    /// elements (as given to [`PlannedCopy::new`]), 16-byte aligned, not overlapping, alive
    /// until the launch completes, and not written by other work while it runs.
    pub unsafe fn launch(&self, stream: &CudaStream, src: u64, dst: u64) -> Result<()> {
        let mut args = stream.launch_builder(&self.f);
        args.arg(&src).arg(&dst);
        for s in &self.scalars {
            match s {
                Scalar::U32(v) => args.arg(v),
                Scalar::U64(v) => args.arg(v),
            };
        }
        // SAFETY: every suite kernel takes `(src: *const T, dst: *mut T, scalars…)` with the
        // scalars in the plan's order and types; `for_problem` checked the shape against both
        // lengths and the grid against the device; the caller vouches for the addresses (this
        // function's contract).
        unsafe { args.launch(self.cfg) }.during(|| {
            format!(
                "launching {} ({}, buffers {} / {})",
                check::kernel_name(self.kernel),
                self.problem.shape(),
                self.src_len,
                self.dst_len
            )
        })?;
        Ok(())
    }
}
