//! Tiled transpose, tile rows padded to `TILE + 1` elements.
//!
//! With a pitch of 33 f32 words, column element `r` sits in bank `(33 · r + c) mod 32 =
//! (r + c) mod 32`: the 32 lanes of a column read hit 32 different banks, no conflict, at the
//! price of 128 bytes of shared memory per tile. Bound: DRAM, like a copy.

use super::{TileLayout, BLOCK, TILE};
use crate::registry::{Family, KernelInfo};

/// Row pitch `TILE + 1`.
pub struct Padded;
impl TileLayout for Padded {
    const PITCH: u32 = TILE + 1;
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
    shared_bytes_f32: super::tile_bytes(<Padded as TileLayout>::PITCH, 4),
    shared_bytes_f16: super::tile_bytes(<Padded as TileLayout>::PITCH, 2),
    symbols: SYMBOLS,
    about: "32x33 shared tile: padding removes bank conflicts",
};

#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn transpose_smem_padded<T: crate::gpu::Elem>(
    src: *const T,
    dst: *mut T,
    rows: u32,
    cols: u32,
) {
    super::transpose_tiled::<T, Padded>(src, dst, rows, cols)
}

crate::ptx_kernels! {
    fn transpose_smem_padded(src: *const T, dst: *mut T, rows: u32, cols: u32);
    F32 => transpose_smem_padded_f32, F16 => transpose_smem_padded_f16
}
