//! The in-process cuDNN baseline: the same fused op as rustile's kernels,
//! `y = act(conv2d(x, w) + bias)`, through `cudnnConvolutionBiasActivationForward`, and the
//! convolution alone through `cudnnConvolutionForward`, for the conv benchmarks to time next to
//! rustile's kernels on the same stream and buffers.
//!
//! Set-up ([`CudnnConv::new`]), following the [`Problem`]:
//! - f16 / bf16: NHWC x and y, KRSC filter (`CUDNN_TENSOR_NHWC`), f32 compute,
//!   `CUDNN_TENSOR_OP_MATH`; the fused op's bias is in the data type (cuDNN's
//!   `PSEUDO_HALF_CONFIG` / `PSEUDO_BFLOAT16_CONFIG`, [`desc::bias_dtype`]), so rustile's f32
//!   bias is rounded to it ([`CudnnConv::bias_from_f32`]);
//! - f32: the problem's layout (the f32 baselines are NCHW, KCRS filter), f32 compute,
//!   `CUDNN_FMA_MATH` (no TF32);
//! - the fused op with `alpha1 = 1`, `alpha2 = 0` and `z = y` (as PyTorch passes it: with
//!   `alpha2 = 0` z does not contribute), ReLU (NaN-propagating, unclipped) or the identity;
//!   without a bias in the problem, a zero bias (cuDNN's fused op always adds one);
//! - algorithms: each of the eight is tried for each op, those cuDNN accepts with a
//!   workspace up to [`Options::workspace_cap`] (1 GiB) are timed, and the fastest is kept
//!   ([`algo`]); the workspace is then sized for the two chosen.
//!
//! Loading: [`available`] and every constructor first run [`handle::probe`] (the library, its
//! symbols and version), so a machine without libcudnn gets [`Error::Library`], never a
//! panic. [`check_against_reference`] checks that the baseline computes rustile's op.

pub mod algo;
mod check;
pub mod desc;
pub mod handle;
mod run;

pub use algo::Op;
pub use check::*;
pub use run::*;

use std::sync::Arc;

use cudarc::cudnn::sys::cudnnConvolutionFwdAlgo_t as Algo;
use cudarc::driver::{CudaSlice, CudaStream};

use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::harness::{L2Mode, TimingConfig};

use super::Problem;
use algo::Trial;
use handle::{Descriptors, Handle};

/// The name errors carry.
pub const NAME: &str = "cudnn";

/// How the algorithms are chosen.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// The largest workspace an algorithm may use, bytes (default 1 GiB).
    pub workspace_cap: usize,
    /// How each candidate is timed (default: 1 warm-up, median of 5, L2 flushed before
    /// each).
    pub timing: TimingConfig,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            workspace_cap: 1 << 30,
            timing: TimingConfig {
                warmup: 1,
                reps: 5,
                mode: L2Mode::Flush,
            },
        }
    }
}

/// The algorithm chosen for one op.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Chosen {
    /// The algorithm.
    pub algo: Algo,
    /// Its workspace, bytes.
    pub workspace: usize,
    /// Its median time in the search, milliseconds (the benchmark times it again).
    pub search_ms: f64,
}

impl Chosen {
    /// The algorithm's short name ([`algo::name`]).
    pub fn name(&self) -> &'static str {
        algo::name(self.algo)
    }
}

/// The cuDNN version, `(major, minor, patch)`, or [`Error::Library`] when cuDNN cannot be
/// loaded ([`handle::probe`]). Needs no GPU.
pub fn version() -> Result<(usize, usize, usize)> {
    handle::probe()
}

/// `Ok` when cuDNN loads ([`handle::probe`]) and a handle can be created on `gpu`'s stream;
/// [`Error::Library`] otherwise.
pub fn available(gpu: &Gpu) -> Result<()> {
    handle::probe()?;
    bind(gpu.stream())?;
    Handle::new(gpu.stream()).map(drop)
}

fn bind(stream: &CudaStream) -> Result<()> {
    stream
        .context()
        .bind_to_thread()
        .map_err(|e| Error::driver("making the context current for cuDNN", e))
}

/// cuDNN set up for one problem on one stream: handle, descriptors, the chosen algorithms
/// and their workspace. Runs on the stream of the [`Gpu`] it was built with. Not `Send`
/// (cuDNN handles are per thread).
pub struct CudnnConv {
    problem: Problem,
    version: (usize, usize, usize),
    geometry: desc::Geometry,
    desc: Descriptors,
    handle: Handle,
    bias_dtype: rustile_kernels::registry::DType,
    fused: Chosen,
    conv_only: Chosen,
    trials: Vec<Trial>,
    workspace: Option<CudaSlice<u8>>,
    zero_bias: Option<DevBuf>,
    stream: Arc<CudaStream>,
}

impl CudnnConv {
    /// Sets cuDNN up for `p` on `gpu`'s stream with the default [`Options`] (this times every
    /// algorithm on scratch buffers: a fraction of a second).
    pub fn new(gpu: &Gpu, p: &Problem) -> Result<Self> {
        Self::with_options(gpu, p, &Options::default())
    }

    /// As [`CudnnConv::new`], with `opts`.
    pub fn with_options(gpu: &Gpu, p: &Problem, opts: &Options) -> Result<Self> {
        let version = handle::probe()?;
        let g = desc::geometry(p)?;
        let stream = gpu.stream().clone();
        bind(&stream)?;
        let handle = Handle::new(&stream)?;
        let desc = Descriptors::new(&g, p.relu)?;
        let mut conv = Self {
            problem: *p,
            version,
            geometry: g,
            desc,
            handle,
            bias_dtype: desc::bias_dtype(p.dtype),
            fused: placeholder(),
            conv_only: placeholder(),
            trials: Vec::new(),
            workspace: None,
            zero_bias: None,
            stream,
        };
        conv.search(gpu, opts)?;
        Ok(conv)
    }

    /// The problem.
    pub fn problem(&self) -> &Problem {
        &self.problem
    }

    /// The cuDNN version that runs, `(major, minor, patch)`.
    pub fn version(&self) -> (usize, usize, usize) {
        self.version
    }

    /// The fused op's algorithm.
    pub fn fused(&self) -> &Chosen {
        &self.fused
    }

    /// The convolution-only op's algorithm.
    pub fn conv_only(&self) -> &Chosen {
        &self.conv_only
    }

    /// Every algorithm tried, with what happened.
    pub fn trials(&self) -> &[Trial] {
        &self.trials
    }

    /// The workspace held, bytes.
    pub fn workspace_bytes(&self) -> usize {
        self.workspace.as_ref().map_or(0, |w| w.len())
    }

    /// The dtype of the bias the fused op reads: [`desc::bias_dtype`], unless the search had
    /// to fall back to f32 ([`desc::bias_candidates`]).
    pub fn bias_dtype(&self) -> rustile_kernels::registry::DType {
        self.bias_dtype
    }

    /// `cuDNN 9.14.0: fused implicit_precomp_gemm (0.1234 ms, workspace 0 B) (f16 bias),
    /// conv-only …`.
    pub fn describe(&self) -> String {
        let (a, b, c) = self.version;
        let one = |c: &Chosen| {
            format!(
                "{} ({:.4} ms, workspace {} B)",
                c.name(),
                c.search_ms,
                c.workspace
            )
        };
        format!(
            "cuDNN {a}.{b}.{c}: fused {} ({} bias), conv-only {}",
            one(&self.fused),
            self.bias_dtype.name(),
            one(&self.conv_only)
        )
    }

    fn chosen(&self, op: Op) -> &Chosen {
        match op {
            Op::Fused => &self.fused,
            Op::ConvOnly => &self.conv_only,
        }
    }
}

fn placeholder() -> Chosen {
    Chosen {
        algo: Algo::CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM,
        workspace: 0,
        search_ms: f64::NAN,
    }
}
