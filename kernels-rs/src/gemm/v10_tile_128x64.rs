//! Small-problem tile: the warp-tiled body on a 128×64 block tile (4 warps, 128 threads).
//!
//! A 1000³ product has only 8 × 8 = 64 tiles of 128×128 for 132 SMs: half the GPU idles and
//! the warp tile reached 0.43× cuBLAS there. Halving the tile width doubles the blocks (128 at
//! 1000³, ~1 wave) at the price of more A traffic per flop. The dispatcher picks it when the
//! 128×128 grid has fewer blocks than the SMs can run at once.

use super::v08_warptile::{sgemm_warp_tile, shared_bytes, threads, BK};
use crate::registry::{Family, KernelInfo, Launch};

/// C tile per block, `(BM, BN)`.
pub const TILE: (u32, u32) = (128, 64);

/// Registry entry.
pub const INFO: KernelInfo = KernelInfo {
    family: Family::Gemm,
    name: "tile_128x64",
    block: (threads(TILE.1), 1, 1),
    launch: Launch::Tiles {
        tile: TILE,
        halo_rows: 0,
    },
    shared_bytes_f32: shared_bytes(1, BK, TILE.1),
    shared_bytes_f16: 0,
    symbols: SYMBOLS,
    about: "warp tile body on a 128x64 block (more blocks for small problems)",
    needs: crate::registry::Needs::ALIGN16,
    ..KernelInfo::BASE
};

#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn sgemm_tile_128x64(
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
    sgemm_warp_tile::<1, BK, { TILE.1 }, false, false>(a, b, c, m, n, k, lda, ldb, ldc, alpha, beta)
}
crate::entry_points! {
    pub const SYMBOLS;
    fn sgemm_tile_128x64(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, lda: u32, ldb: u32, ldc: u32, alpha: f32, beta: f32);
    sgemm_tile_128x64_f32 => (F32, F32, Any) [];
}
