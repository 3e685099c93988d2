//! Tiled transpose through shared memory, plain `TILE × TILE` layout.
//!
//! Both global accesses are coalesced. Reading a tile column from shared memory hits addresses
//! `TILE · 4` bytes apart: for f32 all 32 lanes fall in one bank, a 32-way conflict that
//! serialises each column read into 32 wavefronts. Bound: limited by shared-memory wavefronts,
//! not DRAM.

use super::{TileLayout, BLOCK, TILE};
use crate::registry::{Family, KernelInfo};

/// Plain row-major tile.
pub struct Plain;
impl TileLayout for Plain {
    const PITCH: u32 = TILE;
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
    shared_bytes_f32: super::tile_bytes(<Plain as TileLayout>::PITCH, 4),
    shared_bytes_f16: super::tile_bytes(<Plain as TileLayout>::PITCH, 2),
    symbols: SYMBOLS,
    about: "32x32 shared tile, 32-way bank conflicts on column reads (f32)",
};

#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn transpose_smem<T: crate::gpu::Elem>(src: *const T, dst: *mut T, rows: u32, cols: u32) {
    super::transpose_tiled::<T, Plain>(src, dst, rows, cols)
}

crate::ptx_kernels! {
    fn transpose_smem(src: *const T, dst: *mut T, rows: u32, cols: u32);
    F32 => transpose_smem_f32, F16 => transpose_smem_f16
}
