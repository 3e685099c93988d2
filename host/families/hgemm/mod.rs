//! Tensor-core GEMM (f16 / bf16 in, f32 accumulation): `C = act(α·A·B + β·C + bias)`.
//!
//! A is row-major M × K; B is row-major K × N ([`BLayout::RowMajor`]) or its transpose stored
//! row-major N × K ([`BLayout::Transposed`]); C is row-major M × N in the input type or f32.
//! Three kernels (`kernels-rs/src/hgemm/`):
//! - [`Variant::Mma`]: `mma.sync`, one shared k-tile at a time (sm_80+, any alignment);
//! - [`Variant::MmaPipeline`]: `mma.sync` + `ldmatrix` + a `cp.async` ring (sm_80+);
//! - [`Variant::WgmmaWs`]: `wgmma` + TMA, warp-specialized, persistent (sm_90a only).
//!
//! [`Variant::select`] picks `WgmmaWs` on compute capability 9.0 and `MmaPipeline` on other
//! devices, at any pitch: operands those kernels cannot read in place (a base address or row
//! pitch that is not 16-byte aligned) take the padded path ([`pad`]): copied into aligned
//! scratch on the launch stream, the kernel run on the copies, and C (when its pitch is odd)
//! written to scratch and copied back. `Mma` reads any pitch in place and stays reachable by
//! name; with [`Padding::Never`] the selection takes it for unaligned operands, and asking for
//! `WgmmaWs` off sm_90a, or for an aligned-only kernel on unaligned operands without padding, is
//! [`Error::Unsupported`](crate::Error::Unsupported), not a launch failure.

pub mod bench;
pub mod cases;
pub mod cli;
pub mod dispatch;
pub mod fuzz;
pub mod pad;
pub mod paths;
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
pub use pad::{Copy2d, Operand, PadPlan, Padding};
pub use paths::tma_store;
pub use prepare::*;
pub use problem::*;
pub use reference::*;
pub use validate::*;

/// The tensor-core GEMM family, for validation ([`crate::families::all`]).
pub const FAMILY: &dyn crate::families::Family = &Hgemm;
