//! Matrix transpose `out[c][r] = in[r][c]`, `in` is `rows × cols` row-major, `out` is
//! `cols × rows` row-major.
//!
//! Bytes moved: `2 · rows · cols · size`: the floor is a copy of the same size. A naive kernel
//! reads rows (coalesced) and writes columns (one 32-byte sector per element); the tiled
//! variants stage a `TILE × TILE` tile in shared memory so both the read and the write are
//! coalesced, and differ only in the shared-memory layout ([`TileLayout`]):
//! plain (column reads hit one bank 32 times for f32), padded (one extra column), swizzled
//! (column index XOR row).
//!
//! Every variant uses blocks of `TILE × BLOCK_ROWS` threads, each thread moving `TILE /
//! BLOCK_ROWS` elements, over a grid of `⌈cols / TILE⌉ × ⌈rows / TILE⌉` blocks. Edges that are
//! not tile multiples are masked per element.

pub mod v01_naive;
pub mod v02_smem;
pub mod v03_smem_padded;
pub mod v04_smem_swizzled;

/// Tile edge, elements.
pub const TILE: u32 = 32;
/// Thread rows per block; each thread moves `TILE / BLOCK_ROWS` elements.
pub const BLOCK_ROWS: u32 = 8;
/// Block shape `(x, y, z)`.
pub const BLOCK: (u32, u32, u32) = (TILE, BLOCK_ROWS, 1);

/// Grid shape for a `rows × cols` input: `(⌈cols/TILE⌉, ⌈rows/TILE⌉, 1)`.
pub const fn grid(rows: u32, cols: u32) -> (u32, u32, u32) {
    (cols.div_ceil(TILE), rows.div_ceil(TILE), 1)
}

/// Largest grid y (tile rows) the hardware accepts: limits `rows` to `65535 · TILE`.
pub const MAX_GRID_Y: u32 = 65535;

/// Where element `(row, col)` of the logical `TILE × TILE` tile lives in shared memory.
pub trait TileLayout {
    /// Row pitch in elements.
    const PITCH: u32;
    /// Physical column of logical `(row, col)`.
    fn col(row: u32, col: u32) -> u32;
}

/// Shared bytes of a `TILE`-row tile with row pitch `pitch` of `elem_bytes`-byte elements,
/// rounded up to 16.
pub const fn tile_bytes(pitch: u32, elem_bytes: usize) -> usize {
    (TILE as usize * pitch as usize * elem_bytes).div_ceil(16) * 16
}

/// Tiled transpose through shared memory with layout `L`.
///
/// Phase 1: the block reads its input tile row by row (coalesced) into shared memory.
/// Phase 2: after a barrier, it writes the tile's columns as rows of `out` (coalesced), reading
/// shared memory down a column — the access whose bank conflicts `L` decides.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn transpose_tiled<T: crate::gpu::Elem, L: TileLayout>(
    src: *const T,
    dst: *mut T,
    rows: u32,
    cols: u32,
) {
    use crate::gpu;
    let (tx, ty) = (gpu::thread_idx_x(), gpu::thread_idx_y());
    let tile_row0 = gpu::block_idx_y() * TILE; // first input row of this tile
    let tile_col0 = gpu::block_idx_x() * TILE; // first input column of this tile
    let base = gpu::dynamic_shared_base();
    let addr = |r: u32, c: u32| base + (r * L::PITCH + L::col(r, c)) * T::BYTES as u32;

    let col = tile_col0 + tx;
    let mut j = 0;
    while j < TILE {
        let row = tile_row0 + ty + j;
        if row < rows && col < cols {
            let v = T::ld_global_nc(src.add(row as usize * cols as usize + col as usize));
            T::st_shared(addr(ty + j, tx), v);
        }
        j += BLOCK_ROWS;
    }
    gpu::sync_threads();
    // Output row = input column, output column = input row.
    let out_col = tile_row0 + tx;
    let mut j = 0;
    while j < TILE {
        let out_row = tile_col0 + ty + j;
        if out_row < cols && out_col < rows {
            let v = T::ld_shared(addr(tx, ty + j));
            T::st_global(dst.add(out_row as usize * rows as usize + out_col as usize), v);
        }
        j += BLOCK_ROWS;
    }
}
