//! Tiled transpose, 64 × 64 padded tile, 16 elements per thread.
//!
//! Same layout idea as `v03_smem_padded` (pitch 65: lane `r` of a column read is in bank
//! `(65 · r + c) mod 32 = (r + c) mod 32`), but each block moves 4× the data: every thread has
//! 16 loads in flight instead of 4, and each warp's row segments are 256 bytes instead of 128,
//! so when rows are not 32-byte aligned (odd widths) the partly used sectors at segment ends
//! are a smaller share of the traffic. Shared memory: 16.25 KiB (f32) per block.
//! Bound: DRAM, like a copy.

#[cfg(target_arch = "nvptx64")]
use super::v03_smem_padded::Padded;
use super::{tile_bytes, BLOCK};
use crate::registry::{Family, KernelInfo};

/// Input tile a block covers, `(rows, cols)`.
pub const TILE: (u32, u32) = (64, 64);

/// Registry entry.
pub const INFO: KernelInfo = KernelInfo {
    family: Family::Transpose,
    name: "tile64",
    block: BLOCK,
    tile: TILE,
    shared_bytes_f32: tile_bytes(TILE.0, TILE.1 + 1, 4),
    shared_bytes_f16: tile_bytes(TILE.0, TILE.1 + 1, 2),
    symbols: SYMBOLS,
    about: "64x65 padded shared tile, 16 elements per thread",
};

#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn transpose_tile64<T: crate::gpu::Elem + Default>(src: *const T, dst: *mut T, rows: u32, cols: u32) {
    super::transpose_tiled::<T, Padded, { TILE.0 }, { TILE.1 }, 16>(src, dst, rows, cols)
}

crate::ptx_kernels! {
    fn transpose_tile64(src: *const T, dst: *mut T, rows: u32, cols: u32);
    F32 => transpose_tile64_f32, F16 => transpose_tile64_f16
}
