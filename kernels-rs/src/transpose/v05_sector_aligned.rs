//! Tiled transpose whose output segments start on 32-byte sectors, for output row pitches that
//! are not a whole number of sectors.
//!
//! See [`transpose_sector_aligned`](super) for the technique: a block writes, in each output
//! row, the `TR` columns starting at the sector boundary at or before its tile, loading a halo
//! of one sector's worth of input rows above the tile to have them. On aligned shapes it only
//! adds the halo loads (L2 hits); the dispatcher uses it when `rows · size` is not a multiple of
//! 32 bytes. Shared memory: `(TR + E) × 33` elements, `E` = elements per sector (8 f32, 16 f16).
//! Bound: DRAM, like a copy.

use super::{tile_bytes, BLOCK, SECTOR_HALO};
use crate::registry::{Family, KernelInfo, Launch};

/// Input tile a block covers, `(rows, cols)`.
pub const TILE: (u32, u32) = (32, 32);

/// Registry entry.
pub const INFO: KernelInfo = KernelInfo {
    family: Family::Transpose,
    name: "sector_aligned",
    block: BLOCK,
    launch: Launch::Tiles { tile: TILE, halo_rows: SECTOR_HALO },
    shared_bytes_f32: tile_bytes(TILE.0 + 8, TILE.1 + 1, 4),
    shared_bytes_f16: tile_bytes(TILE.0 + 16, TILE.1 + 1, 2),
    symbols: SYMBOLS,
    about: "output segments start on 32-byte sectors (halo rows)",
};

#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn transpose_sector_aligned<T: crate::gpu::Elem + Default>(
    src: *const T,
    dst: *mut T,
    rows: u32,
    cols: u32,
) {
    super::transpose_sector_aligned::<T, { TILE.0 }, { TILE.1 }>(src, dst, rows, cols)
}

crate::ptx_kernels! {
    fn transpose_sector_aligned(src: *const T, dst: *mut T, rows: u32, cols: u32);
    F32 => transpose_sector_aligned_f32, F16 => transpose_sector_aligned_f16
}

/// Experiment: 64-row tiles, halving the halo's share.
pub mod experiments {
    use super::*;
    /// 64 × 32 tile.
    pub const TILE64: (u32, u32) = (64, 32);
    /// Registry entry.
    pub const INFO_64: KernelInfo = KernelInfo {
        name: "sector_aligned64",
        launch: Launch::Tiles { tile: TILE64, halo_rows: SECTOR_HALO },
        shared_bytes_f32: tile_bytes(TILE64.0 + 8, TILE64.1 + 1, 4),
        shared_bytes_f16: tile_bytes(TILE64.0 + 16, TILE64.1 + 1, 2),
        symbols: SYMBOLS,
        ..INFO
    };
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    unsafe fn transpose_sector_aligned64<T: crate::gpu::Elem + Default>(
        src: *const T,
        dst: *mut T,
        rows: u32,
        cols: u32,
    ) {
        super::super::transpose_sector_aligned::<T, { TILE64.0 }, { TILE64.1 }>(src, dst, rows, cols)
    }
    crate::ptx_kernels! {
        fn transpose_sector_aligned64(src: *const T, dst: *mut T, rows: u32, cols: u32);
        F32 => transpose_sector_aligned64_f32, F16 => transpose_sector_aligned64_f16
    }
}
