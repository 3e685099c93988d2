//! What the memory families (copy, strided, transpose) share: one problem type over all three,
//! so validation, the benches and the CLI iterate the registry without a match per family;
//! their validation (`validate.rs`) and their bench sweep ([`bench`](mod@bench)).

pub mod accept;
pub mod bench;
pub mod fuzz;
pub mod npy_run;
pub mod validate;

pub use validate::{
    analyze, check_before_alloc, fits_simulator, validate, validation_problems, Memory,
};

use cudarc::driver::CudaSlice;
use rustile_kernels::registry::{Family, KernelInfo};

use crate::backend::{Backend, Buf, Pair};
use crate::check::{self, BufArg, Plan};
use crate::elem::DeviceElem;
use crate::error::{Error, Result};
use crate::families::copy::CopyProblem;
use crate::families::strided::StridedProblem;
use crate::families::transpose::TransposeProblem;
use crate::gpu::Gpu;

/// A problem of any family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Problem {
    /// Contiguous copy.
    Copy(CopyProblem),
    /// Strided gather.
    Strided(StridedProblem),
    /// Transpose.
    Transpose(TransposeProblem),
}

impl Problem {
    /// The family the problem belongs to.
    pub fn family(&self) -> Family {
        match self {
            Problem::Copy(_) => Family::Copy,
            Problem::Strided(_) => Family::Strided,
            Problem::Transpose(_) => Family::Transpose,
        }
    }

    /// Shape, as text.
    pub fn shape(&self) -> String {
        match self {
            Problem::Copy(p) => p.shape(),
            Problem::Strided(p) => p.shape(),
            Problem::Transpose(p) => p.shape(),
        }
    }

    /// The shape as named numbers (copy `n`; strided `n`, `stride`; transpose `rows`,
    /// `cols`), for result files.
    pub fn dims(&self) -> Vec<(&'static str, u64)> {
        match self {
            Problem::Copy(p) => vec![("n", p.n as u64)],
            Problem::Strided(p) => vec![("n", p.n as u64), ("stride", p.stride as u64)],
            Problem::Transpose(p) => vec![("rows", p.rows as u64), ("cols", p.cols as u64)],
        }
    }

    /// Bytes the problem must move through DRAM (useful bytes).
    pub fn bytes_moved(&self, elem_bytes: usize) -> u64 {
        match self {
            Problem::Copy(p) => p.bytes_moved(elem_bytes),
            Problem::Strided(p) => p.bytes_moved(elem_bytes),
            Problem::Transpose(p) => p.bytes_moved(elem_bytes),
        }
    }

    /// Elements of `(src, dst)`, or [`Error::TooLarge`] when a span overflows `usize`.
    pub fn lens(&self) -> Result<(usize, usize)> {
        match self {
            Problem::Copy(p) => p.lens(),
            Problem::Strided(p) => p.lens(),
            Problem::Transpose(p) => p.lens(),
        }
    }

    /// The shape's own checks, before any buffer exists: no zero dimension
    /// ([`Error::ZeroSize`]) and spans that fit `usize` ([`Error::TooLarge`]). A kernel's own
    /// limits are [`Problem::plan`]'s.
    pub fn check_shape(&self) -> Result<()> {
        let zero = match self {
            Problem::Copy(p) => [(p.n, "n"), (1, "")],
            Problem::Strided(p) => [(p.n, "n"), (p.stride, "stride")],
            Problem::Transpose(p) => [(p.rows, "rows"), (p.cols, "cols")],
        };
        if let Some(&(_, what)) = zero.iter().find(|(v, _)| *v == 0) {
            return Err(Error::ZeroSize {
                kernel: self.family().name().into(),
                what,
            });
        }
        self.lens().map(|_| ())
    }

    /// CPU reference output for `src`.
    pub fn reference<T: DeviceElem>(&self, src: &[T]) -> Vec<T> {
        match self {
            Problem::Copy(p) => p.reference(src),
            Problem::Strided(p) => p.reference(src),
            Problem::Transpose(p) => p.reference(src),
        }
    }

    /// Checks the arguments of `kernel` and plans its launch (grid and scalar arguments).
    pub fn plan<T: DeviceElem>(
        &self,
        kernel: &KernelInfo,
        src: BufArg,
        dst: BufArg,
        sm_count: u32,
    ) -> Result<Plan> {
        if kernel.family != self.family() {
            return Err(Error::Usage(format!(
                "kernel {}/{} cannot run a {} problem",
                kernel.family.name(),
                kernel.name,
                self.family().name()
            )));
        }
        match self {
            Problem::Copy(p) => p.plan::<T>(kernel, src, dst, sm_count),
            Problem::Strided(p) => p.plan::<T>(kernel, src, dst),
            Problem::Transpose(p) => p.plan::<T>(kernel, src, dst),
        }
    }

    /// Launches `kernel` (which must belong to this problem's family) on either back end.
    /// Asynchronous on the GPU.
    pub fn launch<T: DeviceElem>(
        &self,
        backend: &Backend,
        kernel: &KernelInfo,
        src: &Buf<T>,
        dst: &mut Buf<T>,
    ) -> Result<()> {
        let sm_count = backend.sm_count();
        match backend.pair(src, dst)? {
            Pair::Gpu(s, d) => match backend {
                Backend::Gpu(gpu) => self.launch_gpu(gpu, kernel, s, d),
                Backend::Simulator(_) => unreachable!("pair() matched the back end"),
            },
            Pair::Sim(s, d) => match backend {
                Backend::Simulator(sim) => check::launch_on_sim(sim, kernel, s, d, |sa, da| {
                    self.plan::<T>(kernel, sa, da, sm_count)
                }),
                Backend::Gpu(_) => unreachable!("pair() matched the back end"),
            },
        }
    }

    /// Launches `kernel` on the GPU. Asynchronous.
    pub fn launch_gpu<T: DeviceElem>(
        &self,
        gpu: &Gpu,
        kernel: &KernelInfo,
        src: &CudaSlice<T>,
        dst: &mut CudaSlice<T>,
    ) -> Result<()> {
        let sm_count = gpu.info().sm_count;
        check::launch_on_gpu(gpu, kernel, src, dst, |s, d| {
            self.plan::<T>(kernel, s, d, sm_count)
        })
    }
}

impl Problem {
    /// The reference computed the slow, obvious way in float64, index by index: what
    /// [`Problem::reference`] is tested against.
    pub fn reference_naive_f64(&self, src: &[f64]) -> Vec<f64> {
        match self {
            Problem::Copy(p) => (0..p.n).map(|i| src[i]).collect(),
            Problem::Strided(p) => (0..p.n).map(|i| src[i * p.stride]).collect(),
            Problem::Transpose(p) => {
                let mut out = vec![f64::NAN; p.rows * p.cols];
                for (i, o) in out.iter_mut().enumerate() {
                    // out is cols × rows: element (c, r) = in (r, c).
                    let (c, r) = (i / p.rows, i % p.rows);
                    *o = src[r * p.cols + c];
                }
                out
            }
        }
    }
}
