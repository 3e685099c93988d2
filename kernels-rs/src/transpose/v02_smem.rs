//! Tiled transpose through shared memory, plain 32 × 32 layout.
//!
//! Both global accesses are coalesced. Reading a tile column from shared memory hits addresses
//! `32 · 4` bytes apart: for f32 all 32 lanes fall in one bank, a 32-way conflict that
//! serialises each column read into 32 wavefronts. Bound: shared-memory wavefronts, not DRAM.

use super::BLOCK_ROWS;
use super::{tile_bytes, TileLayout, BLOCK};
use crate::registry::{Family, KernelInfo, Launch};

/// Input tile a block covers, `(rows, cols)`.
pub const TILE: (u32, u32) = (32, 32);

/// Plain row-major tile.
pub struct Plain;
impl TileLayout for Plain {
    #[inline(always)]
    fn pitch(cols: u32) -> u32 {
        cols
    }
    #[inline(always)]
    fn col(_row: u32, col: u32) -> u32 {
        col
    }
}

/// Registry entry.
pub const INFO: KernelInfo = KernelInfo {
    family: Family::Transpose,
    name: "smem",
    block: BLOCK,
    launch: Launch::Tiles {
        tile: TILE,
        halo_rows: 0,
    },
    shared_bytes_f32: tile_bytes(TILE.0, TILE.1, 4),
    shared_bytes_f16: tile_bytes(TILE.0, TILE.1, 2),
    symbols: SYMBOLS,
    about: "32x32 shared tile, 32-way bank conflicts on column reads (f32)",
    ..KernelInfo::BASE
};

#[inline(always)]
unsafe fn transpose_smem<T: crate::gpu::Elem + Default>(
    src: *const T,
    dst: *mut T,
    rows: u32,
    cols: u32,
) {
    super::transpose_tiled::<T, Plain, { TILE.0 }, { TILE.1 }, BLOCK_ROWS, 4>(src, dst, rows, cols)
}
crate::entry_points! {
    pub const SYMBOLS;
    fn transpose_smem(src: *const T, dst: *mut T, rows: u32, cols: u32);
    transpose_smem_f32 => (F32, F32, Any) [T = f32];
    transpose_smem_f16 => (F16, F16, Any) [T = u16];
}
