//! Tiled transpose, XOR-swizzled 32 × 32 tile: logical `(r, c)` is stored at column `c ^ r`.
//!
//! Row writes (`r` fixed, `c` = lane) land on columns `lane ^ r`, a permutation of the 32 banks;
//! column reads (`c` fixed, `r` = lane) land on banks `c ^ lane`, again a permutation. No
//! conflict for f32 and no padding: the tile stays 4 KiB, a power of two, the layout the
//! tensor-core paths will need (ldmatrix/wgmma swizzles are the same idea on 16-byte chunks).
//! Bound: DRAM, like a copy.

use super::BLOCK_ROWS;
use super::{tile_bytes, TileLayout, BLOCK};
use crate::registry::{Family, KernelInfo, Launch};

/// Input tile a block covers, `(rows, cols)`.
pub const TILE: (u32, u32) = (32, 32);

/// Column XOR row (for tiles 32 wide).
pub struct Swizzled;
impl TileLayout for Swizzled {
    #[inline(always)]
    fn pitch(cols: u32) -> u32 {
        cols
    }
    #[inline(always)]
    fn col(row: u32, col: u32) -> u32 {
        col ^ (row % 32)
    }
}

/// Registry entry.
pub const INFO: KernelInfo = KernelInfo {
    family: Family::Transpose,
    name: "smem_swizzled",
    block: BLOCK,
    launch: Launch::Tiles {
        tile: TILE,
        halo_rows: 0,
    },
    shared_bytes_f32: tile_bytes(TILE.0, TILE.1, 4),
    shared_bytes_f16: tile_bytes(TILE.0, TILE.1, 2),
    symbols: SYMBOLS,
    about: "32x32 shared tile, column XOR row swizzle: conflict-free without padding",
    ..KernelInfo::BASE
};

#[inline(always)]
unsafe fn transpose_smem_swizzled<T: crate::gpu::Elem + Default>(
    src: *const T,
    dst: *mut T,
    rows: u32,
    cols: u32,
) {
    super::transpose_tiled::<T, Swizzled, { TILE.0 }, { TILE.1 }, BLOCK_ROWS, 4>(
        src, dst, rows, cols,
    )
}
crate::entry_points! {
    pub const SYMBOLS;
    fn transpose_smem_swizzled(src: *const T, dst: *mut T, rows: u32, cols: u32);
    transpose_smem_swizzled_f32 => (F32, F32, Any) [T = f32];
    transpose_smem_swizzled_f16 => (F16, F16, Any) [T = u16];
}
