//! One problem type over every family, so the suite, the benches and the CLI iterate the
//! registry without a match per family.

use cudarc::driver::CudaSlice;
use rustile_kernels::registry::{Family, KernelInfo};

use crate::copy::CopyProblem;
use crate::elem::DeviceElem;
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::strided::StridedProblem;
use crate::transpose::TransposeProblem;

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

    /// Bytes the problem must move through DRAM (useful bytes).
    pub fn bytes_moved(&self, elem_bytes: usize) -> u64 {
        match self {
            Problem::Copy(p) => p.bytes_moved(elem_bytes),
            Problem::Strided(p) => p.bytes_moved(elem_bytes),
            Problem::Transpose(p) => p.bytes_moved(elem_bytes),
        }
    }

    /// Elements of `(src, dst)`.
    pub fn lens(&self) -> (usize, usize) {
        match self {
            Problem::Copy(p) => p.lens(),
            Problem::Strided(p) => p.lens(),
            Problem::Transpose(p) => p.lens(),
        }
    }

    /// CPU reference output for `src`.
    pub fn reference<T: DeviceElem>(&self, src: &[T]) -> Vec<T> {
        match self {
            Problem::Copy(p) => p.reference(src),
            Problem::Strided(p) => p.reference(src),
            Problem::Transpose(p) => p.reference(src),
        }
    }

    /// Launches `kernel` (which must belong to this problem's family). Asynchronous.
    pub fn launch<T: DeviceElem>(
        &self,
        gpu: &Gpu,
        kernel: &KernelInfo,
        src: &CudaSlice<T>,
        dst: &mut CudaSlice<T>,
    ) -> Result<()> {
        if kernel.family != self.family() {
            return Err(Error::Usage(format!(
                "kernel {}/{} cannot run a {} problem",
                kernel.family.name(),
                kernel.name,
                self.family().name()
            )));
        }
        match self {
            Problem::Copy(p) => crate::copy::launch(gpu, kernel, p, src, dst),
            Problem::Strided(p) => crate::strided::launch(gpu, kernel, p, src, dst),
            Problem::Transpose(p) => crate::transpose::launch(gpu, kernel, p, src, dst),
        }
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
