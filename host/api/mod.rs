//! The front door: one call per operation, each checking every argument before anything is
//! launched, picking the variant the measurements favour, owning whatever scratch memory it
//! needs, and returning [`Result`] with a [`Launched`] report of what ran.
//!
//! Every call is asynchronous on the [`Gpu`]'s stream (the caller's, with
//! [`Gpu::from_stream`]): download the output (or synchronise) to wait for it. Inputs are
//! anything that implements [`DevicePtr`] (a [`CudaSlice`](cudarc::driver::CudaSlice), a
//! [`CudaView`](cudarc::driver::CudaView)); outputs anything that implements [`DevicePtrMut`].
//! Matrices are row-major and tightly packed: a `rows × cols` matrix is `rows · cols`
//! consecutive elements (attention's tensors take strides: [`AttentionOptions::layout`]). For
//! leading dimensions, pre-tuned scratch reuse or a chosen variant, use the family modules
//! ([`crate::gemm::run`], [`crate::hgemm::run`], [`crate::attention::prepare()`],
//! [`crate::copy::launch`], [`crate::transpose::launch`]).
//!
//! The `check_*` functions are the front door's argument checks on lengths alone: they need no
//! GPU, and the calls run them (or stricter ones) before launching.

mod attn;
mod conv;
pub(crate) mod range;

use cudarc::driver::{DevicePtr, DevicePtrMut, DeviceRepr};
use rustile_kernels::copy::v01_scalar;
use rustile_kernels::gemm::v05_blocktile_2d;
use rustile_kernels::registry::{DType, Family};

use crate::check::BufArg;
use crate::copy::CopyProblem;
use crate::elem::DeviceElem;
use crate::error::Result;
use crate::gemm::{GemmProblem, Scratch};
use crate::gpu::Gpu;
use crate::hgemm::{self as hg, Out};
use crate::transpose::TransposeProblem;
use range::{Bits, BitsMut, Range};

pub use crate::hgemm::BLayout;
pub use attn::{attention, check_attention, AttentionOptions};
pub use conv::{check_conv2d, conv2d, select_for};

/// What a front-door call ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Launched {
    /// The kernel family.
    pub family: Family,
    /// The variant (or dispatcher path: `split_k`, `nt_split_k`) that ran.
    pub variant: &'static str,
}

impl std::fmt::Display for Launched {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.family.name(), self.variant)
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for half::f16 {}
    impl Sealed for half::bf16 {}
    impl Sealed for f32 {}
}

/// An input element type of the tensor-core GEMM: [`half::f16`] or [`half::bf16`]. Sealed: the
/// type, not a runtime flag, says which the data is, so bf16 data cannot be read as f16.
pub trait TcElem: sealed::Sealed + DeviceRepr + Copy + Send + Sync + 'static {
    /// The kernels' input type ([`DType::F16`] or [`DType::Bf16`]).
    const IN: DType;
}

impl TcElem for half::f16 {
    const IN: DType = DType::F16;
}

impl TcElem for half::bf16 {
    const IN: DType = DType::Bf16;
}

/// An output element type of the tensor-core GEMM with inputs `T`: `T` itself or `f32`.
/// Sealed.
pub trait TcOut<T: TcElem>: sealed::Sealed + DeviceRepr + Copy + Send + Sync + 'static {
    /// The kernels' output type: `T`'s own ([`TcElem::IN`]) or [`DType::F32`].
    const OUT: DType;
    /// Runs `f` on `c` as the launcher's output argument.
    #[doc(hidden)]
    fn with_out<P: DevicePtrMut<Self>, R>(c: &mut P, f: impl FnOnce(&mut Out<'_>) -> R) -> R;
}

impl TcOut<half::f16> for half::f16 {
    const OUT: DType = DType::F16;
    fn with_out<P: DevicePtrMut<Self>, R>(c: &mut P, f: impl FnOnce(&mut Out<'_>) -> R) -> R {
        f(&mut Out::Half(&mut BitsMut::<Self, P>::new(c)))
    }
}

impl TcOut<half::bf16> for half::bf16 {
    const OUT: DType = DType::Bf16;
    fn with_out<P: DevicePtrMut<Self>, R>(c: &mut P, f: impl FnOnce(&mut Out<'_>) -> R) -> R {
        f(&mut Out::Half(&mut BitsMut::<Self, P>::new(c)))
    }
}

impl<T: TcElem> TcOut<T> for f32 {
    const OUT: DType = DType::F32;
    fn with_out<P: DevicePtrMut<Self>, R>(c: &mut P, f: impl FnOnce(&mut Out<'_>) -> R) -> R {
        f(&mut Out::F32(c))
    }
}

/// The tensor-core GEMM's options: B's layout and the epilogue
/// `C = relu?(α·A·B + β·C + bias)`. [`Default`]: row-major B, α = 1, β = 0 (C is not read),
/// no bias, no ReLU.
#[derive(Clone, Copy)]
pub struct HgemmOptions<'a> {
    /// How B is stored: K × N row-major, or its transpose N × K row-major.
    pub b: BLayout,
    /// α.
    pub alpha: f32,
    /// β (0: C is not read, so it may be uninitialised).
    pub beta: f32,
    /// f32 bias added to every row of C (`n` elements), after α and β.
    pub bias: Option<&'a dyn DevicePtr<f32>>,
    /// ReLU after the bias.
    pub relu: bool,
}

impl Default for HgemmOptions<'_> {
    fn default() -> Self {
        Self {
            b: BLayout::RowMajor,
            alpha: 1.0,
            beta: 0.0,
            bias: None,
            relu: false,
        }
    }
}

impl std::fmt::Debug for HgemmOptions<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HgemmOptions")
            .field("b", &self.b)
            .field("alpha", &self.alpha)
            .field("beta", &self.beta)
            .field("bias", &self.bias.map(|x| x.len()))
            .field("relu", &self.relu)
            .finish()
    }
}

fn arg(name: &'static str, len: usize) -> BufArg {
    BufArg { name, len, addr: 0 }
}

/// SGEMM's argument checks (shape, index limits, buffer lengths) on lengths alone.
pub fn check_sgemm(m: usize, n: usize, k: usize, a: usize, b: usize, c: usize) -> Result<()> {
    // The dispatcher's own entry check (the blocktile rules: no alignment demands, it pads).
    GemmProblem::new(m, n, k).check(
        &v05_blocktile_2d::INFO,
        arg("a", a),
        arg("b", b),
        arg("c", c),
    )
}

/// `C = α·A·B + β·C` in f32: A is M × K, B K × N, C M × N, all row-major. Runs SGEMM's
/// dispatcher ([`crate::gemm::run`]), which pads rows that are not 16-byte multiples, transposes
/// A for the `cp.async` NT pipeline or splits K as the shape calls for; the scratch memory it
/// needs is allocated here and freed in stream order on return (use [`crate::gemm::run`] with
/// a kept [`Scratch`] to reuse it across calls).
#[allow(clippy::too_many_arguments)]
pub fn sgemm(
    gpu: &Gpu,
    m: usize,
    n: usize,
    k: usize,
    alpha: f32,
    a: &impl DevicePtr<f32>,
    b: &impl DevicePtr<f32>,
    beta: f32,
    c: &mut impl DevicePtrMut<f32>,
) -> Result<Launched> {
    check_sgemm(m, n, k, a.len(), b.len(), c.len())?;
    let p = GemmProblem {
        alpha,
        beta,
        ..GemmProblem::new(m, n, k)
    };
    let variant = crate::gemm::run(gpu, &p, a, b, c, &mut Scratch::default())?;
    Ok(Launched {
        family: Family::Gemm,
        variant,
    })
}

fn hgemm_problem<T: TcElem, O: TcOut<T>>(
    m: usize,
    n: usize,
    k: usize,
    opts: &HgemmOptions<'_>,
) -> hg::Problem {
    hg::Problem {
        out: O::OUT,
        alpha: opts.alpha,
        beta: opts.beta,
        relu: opts.relu,
        ..hg::Problem::new(T::IN, m, n, k).with_b(opts.b)
    }
}

/// The tensor-core GEMM's argument checks (shape, index limits, finite α and β, buffer
/// lengths) on lengths alone; `bias` is the bias's length, if there is one.
#[allow(clippy::too_many_arguments)]
pub fn check_hgemm<T: TcElem, O: TcOut<T>>(
    m: usize,
    n: usize,
    k: usize,
    opts: &HgemmOptions<'_>,
    a: usize,
    b: usize,
    c: usize,
) -> Result<()> {
    let p = hgemm_problem::<T, O>(m, n, k, opts);
    p.check()?;
    p.check_lens(a, b, c, opts.bias.map(|x| x.len()))
}

/// `C = relu?(α·A·B + β·C + bias)` on the tensor cores, f32 accumulation: A is M × K
/// row-major, B K × N row-major or N × K row-major ([`HgemmOptions::b`]), C M × N row-major in
/// `T` or f32. Inputs are [`half::f16`] or [`half::bf16`] ([`TcElem`]). Picks `wgmma` + TMA on
/// compute capability 9.0 and the `cp.async` pipeline elsewhere; operands those kernels cannot
/// read in place (rows or bases that are not 16-byte aligned) are first copied into aligned
/// scratch on the stream, and C with an odd pitch is written to scratch and copied back
/// ([`crate::hgemm::pad`]).
#[allow(clippy::too_many_arguments)]
pub fn hgemm<T: TcElem, O: TcOut<T>>(
    gpu: &Gpu,
    m: usize,
    n: usize,
    k: usize,
    a: &impl DevicePtr<T>,
    b: &impl DevicePtr<T>,
    c: &mut impl DevicePtrMut<O>,
    opts: &HgemmOptions<'_>,
) -> Result<Launched> {
    check_hgemm::<T, O>(m, n, k, opts, a.len(), b.len(), c.len())?;
    let p = hgemm_problem::<T, O>(m, n, k, opts);
    let (a, b) = (Bits::<T, _>::new(a), Bits::<T, _>::new(b));
    // Main's launch options, defaults throughout: the selected kernel in its default
    // configuration (no environment variables).
    let launch = hg::Options::default();
    let variant = O::with_out(c, |out| -> Result<hg::Variant> {
        let prep = hg::prepare_with(gpu, &launch, &p, &a, &b, out, opts.bias)?;
        prep.launch(gpu.stream(), &a, &b, out, opts.bias)?;
        Ok(prep.variant())
    })?;
    Ok(Launched {
        family: Family::Hgemm,
        variant: variant.name(),
    })
}

/// The copy's argument checks on lengths alone: `src` not empty, `dst` at least as long.
pub fn check_copy<T: DeviceElem>(src: usize, dst: usize) -> Result<()> {
    CopyProblem { n: src }.check::<T>(&v01_scalar::INFO, arg("src", src), arg("dst", dst))
}

/// `dst[..n] = src` with `n = src.len()`, for f32 and f16 ([`DeviceElem`]). Runs
/// [`crate::copy::BEST`], `copy/vec16_any`: 16-byte vector stores for any length and any
/// naturally aligned views (a scalar head up to `dst`'s first 16-byte boundary, a scalar tail;
/// 16-byte loads when `src` has `dst`'s misalignment mod 16, element loads otherwise).
pub fn copy<T: DeviceElem>(
    gpu: &Gpu,
    src: &impl DevicePtr<T>,
    dst: &mut impl DevicePtrMut<T>,
) -> Result<Launched> {
    let (n, dst_len) = (src.len(), dst.len());
    check_copy::<T>(n, dst_len)?;
    let stream = gpu.stream();
    // The guards are held until the launch is enqueued.
    let (ps, _guard_src) = src.device_ptr(stream);
    let (pd, _guard_dst) = dst.device_ptr_mut(stream);
    let src = Range::<T>::new(ps, n, stream);
    let mut dst = Range::<T>::new(pd, dst_len, stream);
    let kernel = crate::copy::BEST;
    crate::copy::launch(gpu, kernel, &CopyProblem { n }, &src, &mut dst)?;
    Ok(Launched {
        family: Family::Copy,
        variant: kernel.name,
    })
}

/// The transpose's argument checks on lengths alone.
pub fn check_transpose<T: DeviceElem>(
    rows: usize,
    cols: usize,
    src: usize,
    dst: usize,
) -> Result<()> {
    let p = TransposeProblem { rows, cols };
    let kernel = crate::transpose::best_for(&p, T::DTYPE);
    p.check::<T>(kernel, arg("src", src), arg("dst", dst))
}

/// `dst = srcᵀ`: `src` is `rows × cols` row-major, `dst` `cols × rows` row-major; f32, f16
/// and bf16 ([`DeviceElem`]). Runs [`crate::transpose::best_for`]'s variant (the sector-aligned
/// tile for f32; for 2-byte elements `pairs` at even shapes, and for bf16 at every shape).
pub fn transpose<T: DeviceElem>(
    gpu: &Gpu,
    rows: usize,
    cols: usize,
    src: &impl DevicePtr<T>,
    dst: &mut impl DevicePtrMut<T>,
) -> Result<Launched> {
    check_transpose::<T>(rows, cols, src.len(), dst.len())?;
    let p = TransposeProblem { rows, cols };
    let kernel = crate::transpose::best_for(&p, T::DTYPE);
    crate::transpose::launch(gpu, kernel, &p, src, dst)?;
    Ok(Launched {
        family: Family::Transpose,
        variant: kernel.name,
    })
}
