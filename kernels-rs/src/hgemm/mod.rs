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
pub use crate::tc::{Bf16, OutBf16, OutF16, OutF32, TcOut, F16};

/// Every `mma.sync` entry point (both PTX flavours).
pub fn mma_symbols() -> impl Iterator<Item = &'static str> {
    [v01_mma::ENTRIES, v02_mma_pipeline::ENTRIES]
        .into_iter()
        .chain(v02_mma_pipeline::TUNING.iter().map(|t| t.entries))
        .flat_map(|e| e.iter().map(|(s, _)| *s))
}

/// Entry points of an `mma.sync` variant: one `extern "ptx-kernel"` per instantiation (both
/// flavours) and its simulator entry, plus `ENTRIES`, the `(symbol, simulator entry)` table the
/// host looks symbols up in. Every `mma` kernel takes `(a, b, c, bias, m, n, k, lda, ldb, ldc,
/// α, β, relu)`.
#[macro_export]
macro_rules! hgemm_mma_entries {
    ($body:ident; $($sym:ident => $i:ident, $o:ident, $tb:literal, $al:literal;)+) => {
        /// `(symbol, simulator entry)` of every instantiation.
        pub const ENTRIES: &[(&str, $crate::registry::SimFn)] = &[$((stringify!($sym), $sym::sim_entry)),+];
        $(
            #[allow(non_snake_case)]
            #[doc = concat!("Entry `", stringify!($sym), "`.")]
            pub mod $sym {
                #[allow(unused_imports)]
                use super::*;
                #[allow(unused_imports)]
                use $crate::hgemm::{Bf16, OutBf16, OutF16, OutF32, F16};
                /// Entry point; see the generic body.
                ///
                /// # Safety
                /// The host checked the shapes and buffers before launching.
                #[cfg(target_arch = "nvptx64")]
                #[no_mangle]
                #[allow(clippy::too_many_arguments)]
                pub unsafe extern "ptx-kernel" fn $sym(
                    a: *const u16, b: *const u16, c: *mut <$o as $crate::hgemm::TcOut>::Store,
                    bias: *const f32, m: u32, n: u32, k: u32, lda: u32, ldb: u32, ldc: u32,
                    alpha: f32, beta: f32, relu: u32,
                ) {
                    super::$body::<$i, $o, $tb, $al>(a, b, c, bias, m, n, k, lda, ldb, ldc, alpha, beta, relu)
                }
                /// The same entry for the simulator (arguments widened to u64, in order).
                ///
                /// # Safety
                /// Only inside a simulated launch with checked arguments.
                pub unsafe fn sim_entry(args: &[u64]) {
                    use $crate::registry::KernelArg as K;
                    super::$body::<$i, $o, $tb, $al>(
                        K::from_arg(args[0]), K::from_arg(args[1]), K::from_arg(args[2]),
                        K::from_arg(args[3]), K::from_arg(args[4]), K::from_arg(args[5]),
                        K::from_arg(args[6]), K::from_arg(args[7]), K::from_arg(args[8]),
                        K::from_arg(args[9]), K::from_arg(args[10]), K::from_arg(args[11]),
                        K::from_arg(args[12]),
                    )
                }
            }
        )+
    };
}
