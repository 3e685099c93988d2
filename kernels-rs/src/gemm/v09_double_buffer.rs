//! Double buffering: `v08` with two shared-memory stages and the next k-tile prefetched into
//! registers while the current one is computed.
//!
//! In `v08` every k-tile pays a global-load latency (~600 ns) with the SM's warps waiting at the
//! barrier; here the loads for tile `k + 1` are issued before the 16 × 64 FMAs of tile `k`, and
//! stored to the other buffer after them, so only one barrier per k-tile remains and the load
//! latency overlaps arithmetic. Shared: 16.3 KiB.

use super::v08_warptile::{sgemm_warp_tile, shared_bytes, THREADS, TILE};

/// K step: 8, half of `v08`'s, so the prefetched k-tile costs 8 registers per thread instead of
/// 16 and the kernel stays at two blocks per SM (a K step of 16 with two stages needed 137
/// registers: one block per SM, 0.65× cuBLAS).
pub const BK: u32 = 8;
use crate::registry::{Family, KernelInfo, Launch};

/// Registry entry.
pub const INFO: KernelInfo = KernelInfo {
    family: Family::Gemm,
    name: "double_buffer",
    block: (THREADS, 1, 1),
    launch: Launch::Tiles {
        tile: TILE,
        halo_rows: 0,
    },
    shared_bytes_f32: shared_bytes(2, BK, TILE.1),
    shared_bytes_f16: 0,
    symbols: SYMBOLS,
    about: "v08 + two shared stages (BK 8), register prefetch of the next k-tile",
    bounds: Some((256, 2)),
    needs: crate::registry::Needs::ALIGN16,
    ..KernelInfo::BASE
};

#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn sgemm_double_buffer(
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
    sgemm_warp_tile::<2, BK, { TILE.1 }, false, false>(a, b, c, m, n, k, lda, ldb, ldc, alpha, beta)
}
crate::entry_points! {
    pub const SYMBOLS;
    fn sgemm_double_buffer(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, lda: u32, ldb: u32, ldc: u32, alpha: f32, beta: f32);
    sgemm_double_buffer_f32 => (F32, F32, Any) [];
}
