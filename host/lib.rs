//! rustile: hand-written GPU kernels written in Rust, compiled to PTX by rustc's nvptx backend,
//! and launched, validated and benchmarked from this host crate.
//!
//! - [`Gpu`]: the device handle (context, stream, the PTX flavour loaded for its compute
//!   capability, device limits).
//! - One module per kernel family ([`copy`], [`strided`], [`transpose`]): a problem type that
//!   owns its arithmetic (bytes moved, CPU reference, shape checks) and a launcher that checks
//!   every argument and returns [`Result`].
//! - [`harness`]: CUDA-event timing with warm-up, medians and L2 rotation or flushing.
//! - [`bench`]: the sweeps that `cargo bench` and `rustile bench` run.
//! - [`cli`]: the `rustile` command line (clap), every argument checked before a GPU opens.
//! - [`orch`]: host orchestration — pinned/pageable transfers, the multi-stream overlap
//!   pipeline, CUDA graphs, a stream-ordered memory pool and timelines.
//!
//! The kernels' own constants (block shapes, tile sizes, shared bytes, symbols) come from
//! [`rustile_kernels`], compiled for the host, so a launch cannot drift from its kernel.

pub mod backend;
pub mod bench;
pub mod check;
pub mod cli;
pub mod copy;
pub mod crossover;
pub mod elem;
pub mod error;
pub mod gemm;
pub mod gpu;
pub mod harness;
pub mod hgemm;
pub mod hgemm_cli;
pub mod hgemm_peak;
pub mod orch;

pub mod problem;
pub mod ptx;
pub mod ptxas;
pub mod selftest;
pub mod sim;
pub mod strided;
pub mod suite;
pub mod transpose;

pub use backend::{Backend, Buf};
pub use elem::DeviceElem;
pub use error::{Error, Result};
pub use gpu::{DeviceInfo, Gpu};
pub use problem::Problem;
pub use rustile_kernels::registry::{DType, Family, KernelInfo, KERNELS};
