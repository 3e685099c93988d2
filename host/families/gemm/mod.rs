//! SGEMM family: `C = α·A·B + β·C`, f32, row-major with leading dimensions.

use rustile_kernels::registry::{Family, KernelInfo};

pub mod bench;
pub mod crossover;
pub mod dispatch;
pub mod fuzz;
pub mod launch;
pub mod problem;
pub mod stream_k;
pub mod npy_run;
pub mod validate;

pub use bench::*;
pub use dispatch::*;
pub use launch::*;
pub use problem::*;
pub use validate::*;

/// The SGEMM family, for validation ([`crate::families::all`]).
pub const FAMILY: &dyn crate::families::Family = &Sgemm;

/// The variants of this family.
pub fn variants() -> impl Iterator<Item = &'static KernelInfo> {
    rustile_kernels::registry::of(Family::Gemm, rustile_kernels::registry::Role::Ladder)
}
