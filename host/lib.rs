//! rustile: hand-written GPU kernels written in Rust, compiled to PTX by rustc's nvptx backend,
//! and launched, validated and benchmarked from this host crate.
//!
//! - [`Gpu`]: the device handle (context, stream, the PTX flavour loaded for its compute
//!   capability, device limits).
//! - [`families`]: one folder per kernel family, mirroring `kernels-rs/src/<family>/`
//!   ([`copy`], [`strided`], [`transpose`], [`gemm`], [`hgemm`], [`selftest`]): a problem type
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
//!
//! The kernels' own constants (block shapes, tile sizes, shared bytes, symbols) come from
//! [`rustile_kernels`], compiled for the host, so a launch cannot drift from its kernel.

pub mod backend;
pub mod check;
pub mod cli;
pub mod elem;
pub mod error;
pub mod families;
pub mod gpu;
pub mod harness;
pub mod launch;
pub mod orch;
pub mod ptx;
pub mod ptxas;
pub mod sim;
pub mod tma;

pub use families::memory::{self, bench, Problem};
pub use families::{copy, gemm, hgemm, selftest, strided, suite, transpose};

pub use backend::{Backend, Buf};
pub use elem::DeviceElem;
pub use error::{Error, Result};
pub use gpu::{DeviceInfo, Gpu};
pub use rustile_kernels::registry::{DType, Family, KernelInfo, KERNELS};
