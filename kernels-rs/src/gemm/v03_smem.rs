//! Shared-memory tiling: each block stages 32×32 tiles of A and B in shared memory.
//!
//! Each element loaded from global memory is used 32 times from shared memory: global traffic
//! drops 32×. The inner loop still does one shared load of A (broadcast) and one of B per FMA,
//! so shared-memory bandwidth bounds it. Shared: 8 KiB.

use super::{epilogue, f32_addr, ld_or_zero};
use crate::gpu::{self, Elem};
use crate::registry::{Family, KernelInfo, Launch};

/// C tile per block, `(rows, cols)`; also the K step.
pub const TILE: (u32, u32) = (32, 32);
/// K step.
pub const BK: u32 = 32;

/// Registry entry.
pub const INFO: KernelInfo = KernelInfo {
    family: Family::Gemm,
    name: "smem",
    block: (32, 32, 1),
    launch: Launch::Tiles {
        tile: TILE,
        halo_rows: 0,
    },
    shared_bytes_f32: (2 * 32 * 32 * 4) as usize,
    shared_bytes_f16: 0,
    symbols: SYMBOLS,
    about: "32x32 tiles of A and B in shared memory",
    ..KernelInfo::BASE
};

#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn sgemm_smem(
    a: *const f32,
    b: *const f32,
    c: *mut f32,
    m: u32,
    n: u32,
    k: u32,
    lda: u32,
    ldb: u32,
    ldc: u32,
    alpha: f32,
    beta: f32,
) {
    let (tx, ty) = (gpu::thread_idx_x(), gpu::thread_idx_y());
    let (row0, col0) = (gpu::block_idx_y() * TILE.0, gpu::block_idx_x() * TILE.1);
    let a_s = gpu::dynamic_shared_base(); // (32, BK)
    let b_s = a_s + 32 * BK * 4; // (BK, 32)
    let mut acc = 0.0f32;
    let mut kt = 0;
    while kt < k {
        f32::st_shared(
            f32_addr(a_s, ty * BK + tx),
            ld_or_zero(a, lda, m, k, row0 + ty, kt + tx),
        );
        f32::st_shared(
            f32_addr(b_s, ty * 32 + tx),
            ld_or_zero(b, ldb, k, n, kt + ty, col0 + tx),
        );
        gpu::sync_threads();
        let mut d = 0;
        while d < BK {
            acc = gpu::fma(
                f32::ld_shared(f32_addr(a_s, ty * BK + d)),
                f32::ld_shared(f32_addr(b_s, d * 32 + tx)),
                acc,
            );
            d += 1;
        }
        gpu::sync_threads();
        kt += BK;
    }
    epilogue(c, ldc, m, n, row0 + ty, col0 + tx, acc, alpha, beta);
}
crate::entry_points! {
    pub const SYMBOLS;
    fn sgemm_smem(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, lda: u32, ldb: u32, ldc: u32, alpha: f32, beta: f32);
    sgemm_smem_f32 => (F32, F32, Any) [];
}
