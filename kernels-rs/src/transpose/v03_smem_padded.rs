//! Tiled transpose, 32 × 32 tile with rows padded to 33 elements.
//!
//! With a pitch of 33 f32 words, column element `r` sits in bank `(33 · r + c) mod 32 =
//! (r + c) mod 32`: the 32 lanes of a column read hit 32 different banks, no conflict, at the
//! price of 128 bytes of shared memory per tile. Bound: DRAM, like a copy.

use super::BLOCK_ROWS;
use super::{tile_bytes, TileLayout, BLOCK};
use crate::registry::{Family, KernelInfo, Launch};

/// Input tile a block covers, `(rows, cols)`.
pub const TILE: (u32, u32) = (32, 32);

/// Row pitch `cols + 1`.
pub struct Padded;
impl TileLayout for Padded {
    #[inline(always)]
    fn pitch(cols: u32) -> u32 {
        cols + 1
    }
    #[inline(always)]
    fn col(_row: u32, col: u32) -> u32 {
        col
    }
}

/// Registry entry.
pub const INFO: KernelInfo = KernelInfo {
    family: Family::Transpose,
    name: "smem_padded",
    block: BLOCK,
    launch: Launch::Tiles {
        tile: TILE,
        halo_rows: 0,
    },
    shared_bytes_f32: tile_bytes(TILE.0, TILE.1 + 1, 4),
    shared_bytes_f16: tile_bytes(TILE.0, TILE.1 + 1, 2),
    symbols: SYMBOLS,
    about: "32x33 shared tile: padding removes bank conflicts",
    ..KernelInfo::BASE
};

#[inline(always)]
unsafe fn transpose_smem_padded<T: crate::gpu::Elem + Default>(
    src: *const T,
    dst: *mut T,
    rows: u32,
    cols: u32,
) {
    super::transpose_tiled::<T, Padded, { TILE.0 }, { TILE.1 }, BLOCK_ROWS, 4>(src, dst, rows, cols)
}
crate::entry_points! {
    pub const SYMBOLS;
    fn transpose_smem_padded(src: *const T, dst: *mut T, rows: u32, cols: u32);
    transpose_smem_padded_f32 => (F32, F32, Any) [T = f32];
    transpose_smem_padded_f16 => (F16, F16, Any) [T = u16];
}
