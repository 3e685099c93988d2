//! Tensor-core GEMM in f16 and bf16: `C = α·A·B + β·C (+ bias) (ReLU)`, f32 accumulation,
//! output in the input type or f32.
//!
//! Layouts: A row-major (M × K, K contiguous). B either row-major (K × N, "`bn`": N contiguous,
//! the BLAS-natural layout) or transposed (N × K row-major, "`bt`": K contiguous, the layout
//! tensor cores read directly). C row-major with leading dimension `ldc`.
//!
//! Variants, one file each:
//! - [`v01_mma`]: `mma.sync.m16n8k16`, one k-tile in shared memory at a time (sm_80+);
//! - [`v02_mma_pipeline`]: `mma.sync` + `ldmatrix` + a multi-stage `cp.async` ring with swizzled
//!   shared tiles (the sm_80 path);
//! - [`v03_wgmma_ws`]: Hopper `wgmma` + TMA, warp-specialized (one producer warpgroup, two
//!   consumer warpgroups), persistent over output tiles (the sm_90a path).
//!
//! The variants are built from the shared blocks: [`crate::tc`] (input/output types, the
//! [`Epilogue`](crate::tc::Epilogue) with α, β·C, bias and ReLU, the warp-specialized driver) and [`crate::gpu`]
//! (swizzled shared tiles, the `cp.async` and TMA rings, the tile scheduler). The type names are
//! re-exported here under their old paths, which the entry macro and the host use.

pub mod peak;
pub mod v01_mma;
pub mod v02_mma_pipeline;
pub mod v03_wgmma_ws;

// The old paths, for the entry macro and the host (`hgemm::soft`, `hgemm::TcOut`, …).
#[cfg(not(target_arch = "nvptx64"))]
pub use crate::tc::soft;
pub use crate::tc::{Bf16, OutBf16, OutF16, OutF32, TcIn, TcOut, F16};

/// The family.
pub const FAMILY: crate::registry::Family = crate::registry::Family {
    name: "hgemm",
    about: "tensor-core matrix product, f16/bf16 in, f32 accumulation",
};

/// Every entry point of the family, one registry record each.
pub const RECORDS: &[&crate::registry::KernelInfo] = &[
    &v01_mma::INFO,
    &v02_mma_pipeline::INFO,
    &v02_mma_pipeline::m256::INFO,
    &v02_mma_pipeline::t128::INFO,
    &v03_wgmma_ws::INFO,
    &v03_wgmma_ws::INFO_N128,
    &v03_wgmma_ws::INFO_N64,
    &v03_wgmma_ws::INFO_M64,
    &v03_wgmma_ws::INFO_M64_N128,
    &v03_wgmma_ws::INFO_PP,
    &v03_wgmma_ws::INFO_PAIR,
    &v03_wgmma_ws::INFO_SK,
    &peak::INFO_MMA,
    &peak::INFO_WGMMA,
];
