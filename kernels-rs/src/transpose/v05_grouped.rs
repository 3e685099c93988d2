//! Tiled transpose, 32 × 33 padded tile, blocks scheduled in bands of `GROUP` tile rows.
//!
//! `v03_smem_padded` launches a row-major 2-D grid: the ~1000 blocks resident at once cover
//! about 4 tile rows of the input, so reads stream along whole input rows, but each output row
//! receives only ~4 scattered 128-byte pieces at a time, each in a different DRAM page. Here the
//! grid is 1-D and walks down `GROUP` tile rows before moving right: the resident blocks cover
//! a band `GROUP` tiles tall, so every output row gets `GROUP · 128` contiguous bytes and every
//! input row `~1000 / GROUP · 128`. Same data, same instructions, better DRAM page locality on
//! the write side. Bound: DRAM, like a copy.

#[cfg(target_arch = "nvptx64")]
use super::v03_smem_padded::Padded;
use super::{tile_bytes, BLOCK};
use crate::registry::{Family, KernelInfo, Launch};

/// Input tile a block covers, `(rows, cols)`.
pub const TILE: (u32, u32) = (32, 32);
/// Tile rows per band.
pub const GROUP: u32 = 16;

/// Registry entry.
pub const INFO: KernelInfo = KernelInfo {
    family: Family::Transpose,
    name: "grouped",
    block: BLOCK,
    launch: Launch::Tiles { tile: TILE, group: GROUP, halo_rows: 0 },
    shared_bytes_f32: tile_bytes(TILE.0, TILE.1 + 1, 4),
    shared_bytes_f16: tile_bytes(TILE.0, TILE.1 + 1, 2),
    symbols: SYMBOLS,
    about: "32x33 padded tile, blocks walked in bands of 16 tile rows",
};

#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn transpose_grouped<T: crate::gpu::Elem + Default>(src: *const T, dst: *mut T, rows: u32, cols: u32) {
    super::transpose_tiled::<T, Padded, { TILE.0 }, { TILE.1 }, 4, GROUP>(src, dst, rows, cols)
}

crate::ptx_kernels! {
    fn transpose_grouped(src: *const T, dst: *mut T, rows: u32, cols: u32);
    F32 => transpose_grouped_f32, F16 => transpose_grouped_f16
}

/// Experiment (not in the registry): the same kernel in bands of 8 and 32 tile rows.
pub mod experiments {
    use super::*;
    /// Band of 8.
    pub const INFO_G8: KernelInfo = KernelInfo {
        name: "grouped8",
        launch: Launch::Tiles { tile: TILE, group: 8, halo_rows: 0 },
        symbols: SYMBOLS_G8,
        ..INFO
    };
    /// Band of 32.
    pub const INFO_G32: KernelInfo = KernelInfo {
        name: "grouped32",
        launch: Launch::Tiles { tile: TILE, group: 32, halo_rows: 0 },
        symbols: SYMBOLS_G32,
        ..INFO
    };
    /// PTX symbols of the band-of-8 variant.
    pub const SYMBOLS_G8: &[(crate::registry::DType, &str)] =
        &[(crate::registry::DType::F32, "transpose_grouped8_f32")];
    /// PTX symbols of the band-of-32 variant.
    pub const SYMBOLS_G32: &[(crate::registry::DType, &str)] =
        &[(crate::registry::DType::F32, "transpose_grouped32_f32")];
    /// Band of 8, f32.
    ///
    /// # Safety
    /// As for the registered entry points.
    #[cfg(target_arch = "nvptx64")]
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn transpose_grouped8_f32(src: *const f32, dst: *mut f32, rows: u32, cols: u32) {
        super::super::transpose_tiled::<f32, Padded, 32, 32, 4, 8>(src, dst, rows, cols)
    }
    /// Band of 32, f32.
    ///
    /// # Safety
    /// As for the registered entry points.
    #[cfg(target_arch = "nvptx64")]
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn transpose_grouped32_f32(src: *const f32, dst: *mut f32, rows: u32, cols: u32) {
        super::super::transpose_tiled::<f32, Padded, 32, 32, 4, 32>(src, dst, rows, cols)
    }
}
