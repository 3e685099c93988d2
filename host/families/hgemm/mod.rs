//! Tensor-core GEMM (f16 / bf16 in, f32 accumulation): `C = act(α·A·B + β·C + bias)`.
//!
//! A is row-major M × K; B is row-major K × N ([`BLayout::RowMajor`]) or its transpose stored
//! row-major N × K ([`BLayout::Transposed`]); C is row-major M × N in the input type or f32.
//! Three kernels (`kernels-rs/src/hgemm/`):
//! - [`Variant::Mma`]: `mma.sync`, one shared k-tile at a time (sm_80+, any alignment);
//! - [`Variant::MmaPipeline`]: `mma.sync` + `ldmatrix` + a `cp.async` ring (sm_80+);
//! - [`Variant::WgmmaWs`]: `wgmma` + TMA, warp-specialized, persistent (sm_90a only).
//!
//! [`Variant::select`] picks `WgmmaWs` on compute capability 9.0 when TMA can describe the
//! operands (16-byte-aligned base addresses and row pitches), `MmaPipeline` on other devices
//! with such operands, and `Mma` for any other pitch. Asking for `WgmmaWs` elsewhere, or for an
//! aligned-only kernel with unaligned operands, is [`Error::Unsupported`](crate::Error::Unsupported), not a launch failure.

pub mod bench;
pub mod cases;
pub mod cli;
pub mod dispatch;
pub mod fuzz;
pub mod peak;
pub mod prepare;
pub mod problem;
pub mod reference;
pub mod npy_run;
pub mod validate;

pub use crate::tma::{tensor_map_2d, tensor_map_2d_of, upload_maps};
pub use bench::*;
pub use cases::*;
pub use dispatch::*;
pub use prepare::*;
pub use problem::*;
pub use reference::*;
pub use validate::*;

/// The tensor-core GEMM family, for validation ([`crate::families::all`]).
pub const FAMILY: &dyn crate::families::Family = &Hgemm;
