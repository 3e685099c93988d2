//! Tiled transpose whose output segments start on 32-byte sectors, for output row pitches that
//! are not a whole number of sectors.
//!
//! See [`transpose_sector_aligned`](super) for the technique: a block writes, in each output
//! row, the `TR` columns starting at the sector boundary at or before its tile, loading a halo
//! of one sector's worth of input rows above the tile to have them. On aligned shapes it only
//! adds the halo loads (L2 hits).
//!
//! The tile is 64 input rows × 32 columns (`TR × TC`): the halo (`E` = 8 f32 / 16 f16 rows, one
//! sector) is then 1/8 (f32) of the tile instead of 1/4, and each thread has 9 loads in flight
//! instead of 5. Measured on the H200 (f32, × cuMemcpyDtoD at the same bytes): a 32-row tile
//! reached 0.81 / 0.83 at 8192² / 8191×8193, this one 0.90 / 0.89, the plain padded tile
//! 0.86 / 0.57. Shared memory: `(TR + E) × (TC + 1)` elements. Bound: DRAM, like a copy.

use super::{tile_bytes, BLOCK, SECTOR_HALO};
use crate::registry::{Family, KernelInfo, Launch};

/// Input tile a block covers, `(rows, cols)`.
pub const TILE: (u32, u32) = (64, 32);

/// Registry entry.
pub const INFO: KernelInfo = KernelInfo {
    family: Family::Transpose,
    name: "sector_aligned",
    block: BLOCK,
    launch: Launch::Tiles {
        tile: TILE,
        halo_rows: SECTOR_HALO,
    },
    shared_bytes_f32: tile_bytes(TILE.0 + 8, TILE.1 + 1, 4),
    shared_bytes_f16: tile_bytes(TILE.0 + 16, TILE.1 + 1, 2),
    symbols: SYMBOLS,
    about: "64x32 tile, output segments start on 32-byte sectors (halo rows)",
    ..KernelInfo::BASE
};

#[inline(always)]
unsafe fn transpose_sector_aligned<T: crate::gpu::Elem + Default>(
    src: *const T,
    dst: *mut T,
    rows: u32,
    cols: u32,
) {
    super::transpose_sector_aligned::<T, { TILE.0 }, { TILE.1 }>(src, dst, rows, cols)
}
crate::entry_points! {
    pub const SYMBOLS;
    fn transpose_sector_aligned(src: *const T, dst: *mut T, rows: u32, cols: u32);
    transpose_sector_aligned_f32 => (F32, F32, Any) [T = f32];
    transpose_sector_aligned_f16 => (F16, F16, Any) [T = u16];
}
