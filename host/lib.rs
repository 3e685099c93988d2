//! rustile: hand-written GPU kernels written in Rust, compiled to PTX by rustc's nvptx backend,
//! and launched, validated and benchmarked from this host crate.
//!
//! # Quick start
//!
//! Open a device (or wrap your own stream with [`Gpu::from_stream`]), upload, call the front
//! door ([`api`]), download. Every call checks its arguments before launching, picks the variant
//! the measurements favour, and returns a [`Result`] with a [`Launched`] report of what ran.
//! [`cudarc`] and [`half`] are re-exported: depend on rustile alone.
//!
//! SGEMM, `C = α·A·B + β·C` (f32, row-major, A M × K, B K × N, C M × N):
//!
//! ```no_run
//! use rustile::{api, Gpu};
//!
//! # fn main() -> rustile::Result<()> {
//! let gpu = Gpu::new(0)?; // Error::NoDriver / Error::NoDevice without a GPU
//! let (m, n, k) = (512, 256, 128);
//! let a = gpu.upload(&vec![1.0f32; m * k], "A")?;
//! let b = gpu.upload(&vec![0.5f32; k * n], "B")?;
//! let mut c = gpu.alloc::<f32>(m * n, "C")?;
//! let ran = api::sgemm(&gpu, m, n, k, 1.0, &a, &b, 0.0, &mut c)?;
//! let c = gpu.download(&c, "C")?; // waits for the product
//! println!("{ran}: C[0] = {}", c[0]);
//! # Ok(()) }
//! ```
//!
//! Tensor-core GEMM, f16 or bf16 in (the Rust type says which), output in the input type or
//! f32, B row-major or transposed, α, β, bias and ReLU in [`HgemmOptions`]:
//!
//! ```no_run
//! use rustile::half::bf16;
//! use rustile::{api, Gpu, HgemmOptions};
//!
//! # fn main() -> rustile::Result<()> {
//! let gpu = Gpu::new(0)?;
//! let (m, n, k) = (1024, 1024, 512);
//! let a = gpu.upload(&vec![bf16::ONE; m * k], "A")?;
//! let bt = gpu.upload(&vec![bf16::ONE; n * k], "Bᵀ")?; // N × K row-major
//! let bias = gpu.upload(&vec![0.25f32; n], "bias")?;
//! let mut c = gpu.alloc::<f32>(m * n, "C")?;
//! let opts = HgemmOptions {
//!     b: api::BLayout::Transposed,
//!     bias: Some(&bias),
//!     relu: true,
//!     ..Default::default()
//! };
//! let ran = api::hgemm(&gpu, m, n, k, &a, &bt, &mut c, &opts)?;
//! # let _ = ran; Ok(()) }
//! ```
//!
//! Copy and transpose, f32 or f16, on slices or views:
//!
//! ```no_run
//! use rustile::{api, Gpu};
//!
//! # fn main() -> rustile::Result<()> {
//! let gpu = Gpu::new(0)?;
//! let (rows, cols) = (1000, 777);
//! let src = gpu.upload(&vec![1.0f32; rows * cols], "src")?;
//! let mut dst = gpu.alloc::<f32>(rows * cols, "dst")?;
//! api::copy(&gpu, &src, &mut dst)?;
//! api::copy(&gpu, &src.slice(..cols), &mut dst.slice_mut(..cols))?; // views too
//! api::transpose(&gpu, rows, cols, &src, &mut dst)?; // dst is cols × rows
//! # Ok(()) }
//! ```
//!
//! Attention forward, `O = softmax(scale·QKᵀ + mask)·V` with the row log-sum-exp, f16 or bf16,
//! `(batch, seq, heads, head_dim)` tensors (any strides), grouped-query heads, causal mask:
//!
//! ```no_run
//! use rustile::attention::Shape;
//! use rustile::half::f16;
//! use rustile::{api, Gpu};
//!
//! # fn main() -> rustile::Result<()> {
//! let gpu = Gpu::new(0)?;
//! let shape = Shape::new(1, 512, 512, 8, 8, 64).with_causal(true);
//! let q = gpu.upload(&vec![f16::ONE; 512 * 8 * 64], "Q")?;
//! let (k, v) = (q.clone(), q.clone());
//! let mut o = gpu.alloc::<f16>(512 * 8 * 64, "O")?;
//! let ran = api::attention(&gpu, &shape, &q, &k, &v, &mut o, Default::default())?;
//! # let _ = ran; Ok(()) }
//! ```
//!
//! On the caller's stream (rustile's work is then ordered with the caller's own):
//!
//! ```no_run
//! use rustile::{CudaContext, Error, Gpu};
//!
//! # fn main() -> rustile::Result<()> {
//! let ctx = CudaContext::new(0).map_err(|e| Error::driver("opening device 0", e))?;
//! let stream = ctx.new_stream().map_err(|e| Error::driver("creating a stream", e))?;
//! let gpu = Gpu::from_stream(stream)?;
//! # let _ = gpu; Ok(()) }
//! ```
//!
//! # Soundness
//!
//! Every safe function checks what the kernel it launches relies on (lengths, pitches,
//! alignment, overlap, device limits) against the buffers it is given, before anything is
//! allocated or launched, and returns a typed [`Error`] otherwise. [`Gpu::alloc`] zero-fills
//! ([`Gpu::alloc_uninit`] is `unsafe`); the simulator copies only plain data
//! ([`bytemuck::Pod`]). What rustile trusts, as cudarc's own safe copies do: a buffer's
//! [`DevicePtr`] / [`DevicePtrMut`] implementation reports its real address and length
//! (cudarc's slices and views do; a hand-written implementation that lies is outside this
//! guarantee).
//!
//! # Layout of the crate
//!
//! - [`Gpu`]: the device handle (context, stream, the PTX flavour loaded for its compute
//!   capability, device limits).
//! - [`api`]: the front door above.
//! - [`families`]: one folder per kernel family, mirroring `kernels-rs/src/<family>/`
//!   ([`copy`], [`strided`], [`transpose`], [`gemm`], [`hgemm`], [`attention`], [`selftest`]):
//!   a problem type
//!   that owns its arithmetic (bytes or flops, CPU reference, shape checks), a launcher that
//!   checks every argument and returns [`Result`], validation cases and bench rows; the
//!   [`families::Family`] trait that `rustile validate` iterates over [`families::all`].
//! - [`elem`]: each [`DType`]'s Rust type, and [`dispatch_dtype!`], the one `match` from a
//!   run-time dtype to it.
//! - [`harness`]: CUDA-event timing with warm-up, medians and L2 rotation or flushing.
//! - [`bench`](mod@bench): the memory families' sweeps that `cargo bench` and `rustile bench` run.
//! - [`tma`]: TMA tensor maps built on the host.
//! - [`cli`]: the `rustile` command line (clap), every argument checked before a GPU opens.
//! - [`orch`]: host orchestration — pinned/pageable transfers, the multi-stream overlap
//!   pipeline, CUDA graphs, a stream-ordered memory pool and timelines.
//! - [`vendor`]: the cuBLAS baseline's handle, behind [`Result`].
//! - [`npy`]: `.npy` files for the PyTorch cross-checks.
//!
//! The kernels' own constants (block shapes, tile sizes, shared bytes, symbols) come from
//! [`rustile_kernels`], compiled for the host, so a launch cannot drift from its kernel.

pub mod api;
pub mod backend;
pub mod check;
pub mod cli;
pub mod digest;
pub mod elem;
pub mod error;
pub mod families;
pub mod fault;
pub mod gpu;
pub mod harness;
pub mod launch;
pub mod npy;
pub mod occupancy;
pub mod orch;
pub mod ptx;
pub mod ptxas;
pub mod report;
pub mod results;
pub mod sim;
pub mod tma;
pub mod vendor;

pub use families::memory::{self, bench, Problem};
pub use families::{attention, conv, copy, gemm, hgemm, selftest, strided, suite, transpose};

pub use backend::{Backend, Buf};
pub use elem::DeviceElem;
pub use error::{Error, Result};
pub use gpu::{DeviceInfo, Gpu};
pub use rustile_kernels::registry::{DType, Family, KernelInfo, KERNELS};

pub use api::{AttentionOptions, HgemmOptions, Launched, TcElem, TcOut};
/// The cudarc rustile is built on (0.19, driver + cuBLAS): use it through this re-export, so
/// there is no second copy of it to keep at the same version and features.
pub use cudarc;
pub use cudarc::driver::{
    CudaContext, CudaSlice, CudaStream, CudaView, CudaViewMut, DevicePtr, DevicePtrMut,
    DeviceSlice, DriverError,
};
/// The `half` crate whose `f16` / `bf16` rustile's kernels take.
pub use half;
