//! Naive transpose: each thread reads `in[r][c]` and writes `out[c][r]` directly.
//!
//! Reads are coalesced; writes are not: the 32 threads of a warp write 32 different rows of
//! `out`, one 32-byte sector each for 4 useful bytes (12.5 % store efficiency for f32). Bound:
//! far under copy; the write side is paid ~8× in sectors.

use super::BLOCK;
use super::BLOCK_ROWS;
use crate::gpu::{self, Elem};
use crate::registry::{Family, KernelInfo, Launch};

/// Input tile a block covers, `(rows, cols)`.
pub const TILE: (u32, u32) = (32, 32);

/// Registry entry.
pub const INFO: KernelInfo = KernelInfo {
    family: Family::Transpose,
    name: "naive",
    block: BLOCK,
    launch: Launch::Tiles {
        tile: TILE,
        halo_rows: 0,
    },
    shared_bytes_f32: 0,
    shared_bytes_f16: 0,
    symbols: SYMBOLS,
    about: "coalesced reads, strided writes",
    ..KernelInfo::BASE
};

#[inline(always)]
unsafe fn transpose_naive<T: Elem>(src: *const T, dst: *mut T, rows: u32, cols: u32) {
    let col = gpu::block_idx_x() * TILE.1 + gpu::thread_idx_x();
    let row0 = gpu::block_idx_y() * TILE.0 + gpu::thread_idx_y();
    let mut j = 0;
    while j < TILE.0 {
        let row = row0 + j;
        if row < rows && col < cols {
            let v = T::ld_global_nc(src.add(row as usize * cols as usize + col as usize));
            T::st_global(dst.add(col as usize * rows as usize + row as usize), v);
        }
        j += BLOCK_ROWS;
    }
}
crate::entry_points! {
    pub const SYMBOLS;
    fn transpose_naive(src: *const T, dst: *mut T, rows: u32, cols: u32);
    transpose_naive_f32 => (F32, F32, Any) [T = f32];
    transpose_naive_f16 => (F16, F16, Any) [T = u16];
}
