//! Fused convolution `y = act(conv2d(x, w) + bias)` (`kernels-rs/src/conv/`).
//!
//! Tensor-core steps: NHWC activations, KRSC weights, NHWC output, f16 or bf16 in and out, f32
//! accumulation, f32 bias. f32 study steps: NHWC or NCHW. Any batch, image size, channels,
//! stride, padding and dilation; filters 1, 3, 5, 7 ([`FILTER_SIZES`]).
//!
//! Layers: [`Problem::check`] is pure and runs before any allocation; [`plan`] turns a checked
//! problem and buffer addresses into the one [`LaunchPlan`](crate::launch::LaunchPlan) of a
//! common-argument kernel (GPU or simulator); [`tma`] builds the TMA kernel's tensor maps;
//! [`select`] picks the kernel; [`validate()`] checks one against float64.
//!
//! Kernel needs (the records' [`Needs`](rustile_kernels::registry::Needs)): `align = 16`
//! means 16-byte-aligned buffers and channel rows (`C · size` a multiple of 16), for 16-byte
//! `cp.async` or TMA loads.

pub mod baseline;
pub mod bench;
pub mod buf;
pub mod cases;
pub mod cli;
pub mod cudnn;
pub mod dispatch;
pub mod dump;
pub mod fuzz;
pub mod launch;
pub mod problem;
pub mod reference;
pub mod shapes;
pub mod tma;
pub mod validate;

pub use cases::*;
pub use dispatch::*;
pub use launch::*;
pub use problem::*;
pub use reference::*;
pub use validate::*;

/// The conv family, for validation ([`crate::families::all`]).
pub const FAMILY: &dyn crate::families::Family = &Conv;

/// The family.
pub struct Conv;
