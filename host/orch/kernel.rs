//! A suite kernel (copy, transpose, strided) or an SGEMM with resident weights, planned once
//! and launched on any stream by raw device address.
//!
//! The family launchers (`copy::launch`, …) run on the [`Gpu`]'s own stream; the orchestration
//! code needs many streams, so it plans a launch with the same checks (`Problem::plan`,
//! `check::prepare`) and then only pushes addresses per launch.

use cudarc::driver::{result, CudaFunction, CudaStream};
use rustile_kernels::registry::{DType, KernelInfo};

use super::mem::DeviceBuffer;
use crate::check::{self, BufArg};
use crate::error::{DriverContext, Result};
use crate::families::gemm::{self, GemmProblem};
use crate::families::memory::Problem;
use crate::gpu::Gpu;
use crate::launch::{Arg, LaunchPlan};

/// A checked, planned f32 launch of one suite kernel on one problem, between buffers of
/// `src_len` and `dst_len` elements.
pub struct PlannedCopy {
    kernel: &'static KernelInfo,
    problem: Problem,
    f: CudaFunction,
    /// The checked plan; its two pointer arguments are replaced per launch.
    plan: LaunchPlan<'static>,
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
        let problem = Problem::Copy(crate::families::copy::CopyProblem { n });
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
        let (f, _) = check::prepare(gpu, kernel, DType::F32, plan.grid)?;
        let plan = check::memory_plan::<f32>(kernel, 0, 0, plan)?;
        Ok(Self {
            kernel,
            problem,
            f,
            plan,
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
        let mut plan = self.plan.clone();
        plan.args[0] = Arg::Ptr(src);
        plan.args[1] = Arg::Ptr(dst);
        // SAFETY: every suite kernel takes `(src: *const T, dst: *mut T, scalars…)` with the
        // scalars in the plan's order and types; `for_problem` checked the shape against both
        // lengths and the grid against the device; the caller vouches for the addresses (this
        // function's contract).
        unsafe { plan.enqueue(&self.f, stream) }.map_err(|e| {
            e.context(|| {
                format!(
                    "launching {} ({}, buffers {} / {})",
                    check::kernel_name(self.kernel),
                    self.problem.shape(),
                    self.src_len,
                    self.dst_len
                )
            })
        })
    }
}

/// B of an SGEMM chunk workload (`K × N` f32, row-major), uploaded once and kept on the device:
/// the weights of the inference pattern, where only the activations (rows of A) stream.
pub struct ResidentWeights {
    k: usize,
    n: usize,
    host: Vec<f32>,
    dev: DeviceBuffer,
}

impl ResidentWeights {
    /// A deterministic pattern in [−0.5, 0.5) (`fill_pattern` minus 1.5, exact in f32), so the
    /// dot products cancel partly, as real weights do; uploaded synchronously (before any timing).
    pub fn new(gpu: &Gpu, k: usize, n: usize) -> Result<Self> {
        let len = k
            .checked_mul(n)
            .filter(|&l| l > 0)
            .ok_or_else(|| crate::error::Error::Usage(format!("weights of {k} × {n}")))?;
        let mut host = vec![0.0f32; len];
        super::overlap::fill_pattern(&mut host, 0xB0B);
        for v in &mut host {
            *v -= 1.5;
        }
        let ctx = gpu.context();
        let dev = DeviceBuffer::new(ctx, len * 4, "resident SGEMM weights")?;
        ctx.bind_to_thread()
            .during(|| "binding the context".into())?;
        // SAFETY: `dev` holds `len` f32; the copy is synchronous.
        unsafe { result::memcpy_htod_sync(dev.ptr(), &host) }
            .during(|| "uploading the resident weights".into())?;
        Ok(Self { k, n, host, dev })
    }

    /// `(K, N)`.
    pub fn shape(&self) -> (usize, usize) {
        (self.k, self.n)
    }

    /// The host copy (row-major `K × N`), for the reference.
    pub fn host(&self) -> &[f32] {
        &self.host
    }

    /// Device address.
    pub fn ptr(&self) -> u64 {
        self.dev.ptr()
    }
}

/// A checked, planned SGEMM `C = A·B` (f32, row-major, α = 1, β = 0) of the variant that
/// [`gemm::dispatch()`] picks, launched on any stream: A and C by address per launch, B fixed.
///
/// One launch per call. (`gemm::run` would, for a grid that fills the GPU, transpose A first
/// and run the NT pipeline: two launches, on the [`Gpu`]'s own stream.)
pub struct PlannedGemm {
    kernel: &'static KernelInfo,
    problem: GemmProblem,
    f: CudaFunction,
    b: u64,
}

impl PlannedGemm {
    /// Plans `problem` (A of `a_len`, C of `c_len` elements, B the `b_len` elements at `b`).
    /// A and C are allocation starts at launch (256-byte aligned), checked here as such.
    pub fn new(
        gpu: &Gpu,
        problem: GemmProblem,
        a_len: usize,
        b: u64,
        b_len: usize,
        c_len: usize,
    ) -> Result<Self> {
        let kernel = gemm::dispatch(&problem, gpu.info().sm_count);
        let arg = |name, len, addr| BufArg { name, len, addr };
        problem.check(
            kernel,
            arg("a", a_len, 256),
            arg("b", b_len, b),
            arg("c", c_len, 256),
        )?;
        let (f, _) = check::prepare(gpu, kernel, DType::F32, problem.grid(kernel))?;
        Ok(Self {
            kernel,
            problem,
            f,
            b,
        })
    }

    /// The variant's name.
    pub fn kernel_name(&self) -> &'static str {
        self.kernel.name
    }

    /// The problem.
    pub fn problem(&self) -> &GemmProblem {
        &self.problem
    }

    /// Enqueues `C = A·B` on `stream`.
    ///
    /// # Safety
    /// `a` and `c` must be 256-byte-aligned device allocations of at least the lengths given to
    /// [`PlannedGemm::new`], not overlapping, alive until the launch completes; B (given at
    /// planning) must still be alive and unwritten.
    pub unsafe fn launch(&self, stream: &CudaStream, a: u64, c: u64) -> Result<()> {
        let p = &self.problem;
        let plan = p.plan(self.kernel, [a, self.b, c])?;
        // SAFETY: `plan` is the SGEMM argument list `(a, b, c, m, n, k, lda, ldb, ldc, alpha,
        // beta)`; `new` checked the shape, the 32-bit limits, the lengths and alignments against
        // the variant and the grid against the device; the caller vouches for the addresses.
        unsafe { plan.enqueue(&self.f, stream) }
            .map_err(|e| e.context(|| format!("launching gemm/{} {}", self.kernel.name, p.shape())))
    }
}

/// A planned compute stage: a suite kernel or an SGEMM with resident B.
pub enum PlannedWork {
    /// A suite kernel, `src → dst`.
    Suite(PlannedCopy),
    /// `dst = src · B`.
    Gemm(PlannedGemm),
}

impl PlannedWork {
    /// Enqueues one launch `src → dst` on `stream`.
    ///
    /// # Safety
    /// As [`PlannedCopy::launch`] / [`PlannedGemm::launch`] (`src` is A, `dst` is C).
    pub unsafe fn launch(&self, stream: &CudaStream, src: u64, dst: u64) -> Result<()> {
        match self {
            // SAFETY: forwarded contract.
            PlannedWork::Suite(p) => unsafe { p.launch(stream, src, dst) },
            // SAFETY: forwarded contract.
            PlannedWork::Gemm(p) => unsafe { p.launch(stream, src, dst) },
        }
    }
}
