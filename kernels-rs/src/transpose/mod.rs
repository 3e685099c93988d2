//! Matrix transpose `out[c][r] = in[r][c]`, `in` is `rows × cols` row-major, `out` is
//! `cols × rows` row-major.
//!
//! Bytes moved: `2 · rows · cols · size`: the floor is a copy of the same size. A naive kernel
//! reads rows (coalesced) and writes columns (one 32-byte sector per element); the tiled
//! variants stage a `TR × TC` tile in shared memory so both the read and the write are
//! coalesced, and differ in the shared-memory layout ([`TileLayout`]: plain, padded, swizzled)
//! and the tile size (32 × 32, or 64 × 64 with 16 elements per thread).
//!
//! Every variant uses blocks of `32 × BLOCK_ROWS` threads over a grid of
//! `⌈cols / TC⌉ × ⌈rows / TR⌉` blocks ([`grid`]). Edges that are not tile multiples are masked
//! per element.

pub mod v01_naive;
pub mod v02_smem;
pub mod v03_smem_padded;
pub mod v04_smem_swizzled;
pub mod v05_tile64;

/// Threads along x: one warp spans a tile row.
pub const WARP: u32 = 32;
/// Thread rows per block.
pub const BLOCK_ROWS: u32 = 8;
/// Block shape `(x, y, z)` of every transpose variant.
pub const BLOCK: (u32, u32, u32) = (WARP, BLOCK_ROWS, 1);

/// Grid shape for a `rows × cols` input and a `(TR, TC)` tile: `(⌈cols/TC⌉, ⌈rows/TR⌉, 1)`.
pub const fn grid(rows: u32, cols: u32, tile: (u32, u32)) -> (u32, u32, u32) {
    (cols.div_ceil(tile.1), rows.div_ceil(tile.0), 1)
}

/// Largest grid y (tile rows) the hardware accepts.
pub const MAX_GRID_Y: u32 = 65535;

/// Where element `(row, col)` of a logical tile lives in shared memory.
pub trait TileLayout {
    /// Row pitch in elements for a tile `cols` wide.
    fn pitch(cols: u32) -> u32;
    /// Physical column of logical `(row, col)`.
    fn col(row: u32, col: u32) -> u32;
}

/// Shared bytes of a `rows`-row tile with row pitch `pitch` of `elem_bytes`-byte elements,
/// rounded up to 16.
pub const fn tile_bytes(rows: u32, pitch: u32, elem_bytes: usize) -> usize {
    (rows as usize * pitch as usize * elem_bytes).div_ceil(16) * 16
}

/// Tiled transpose through shared memory: a `TR × TC` input tile per block, layout `L`, `PER =
/// (TR / BLOCK_ROWS) · (TC / WARP)` elements per thread.
///
/// Phase 1: every thread loads its `PER` elements (rows `ty + i·BLOCK_ROWS`, columns
/// `tx + k·WARP`; each warp reads contiguous row segments) into registers, all loads in flight
/// at once, then stores them to shared memory.
/// Phase 2: after a barrier, each warp writes contiguous segments of `out`'s rows, reading
/// shared memory down a tile column — the access whose bank conflicts `L` decides.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn transpose_tiled<T, L, const TR: u32, const TC: u32, const PER: usize>(
    src: *const T,
    dst: *mut T,
    rows: u32,
    cols: u32,
) where
    T: crate::gpu::Elem + Default,
    L: TileLayout,
{
    use crate::gpu;
    let (tx, ty) = (gpu::thread_idx_x(), gpu::thread_idx_y());
    let tile_row0 = gpu::block_idx_y() * TR; // first input row of this tile
    let tile_col0 = gpu::block_idx_x() * TC; // first input column of this tile
    let base = gpu::dynamic_shared_base();
    let pitch = L::pitch(TC);
    let addr = |r: u32, c: u32| base + (r * pitch + L::col(r, c)) * T::BYTES as u32;
    const { assert!(PER as u32 == (TR / BLOCK_ROWS) * (TC / WARP)) };

    // Phase 1: global → registers → shared. Element e is tile (r, c).
    let at = |e: u32| (ty + (e / (TC / WARP)) * BLOCK_ROWS, tx + (e % (TC / WARP)) * WARP);
    let mut v = [T::default(); PER];
    let mut e = 0;
    while e < PER {
        let (r, c) = at(e as u32);
        let (row, col) = (tile_row0 + r, tile_col0 + c);
        if row < rows && col < cols {
            v[e] = T::ld_global_nc(src.add(row as usize * cols as usize + col as usize));
        }
        e += 1;
    }
    let mut e = 0;
    while e < PER {
        let (r, c) = at(e as u32);
        if tile_row0 + r < rows && tile_col0 + c < cols {
            T::st_shared(addr(r, c), v[e]);
        }
        e += 1;
    }
    gpu::sync_threads();

    // Phase 2: output row = input column (TC of them), output column = input row (TR).
    let out_at = |e: u32| (ty + (e / (TR / WARP)) * BLOCK_ROWS, tx + (e % (TR / WARP)) * WARP);
    let mut e = 0;
    while e < PER {
        let (oc_in_tile, or_in_tile) = out_at(e as u32); // (input col, input row) in the tile
        let (out_row, out_col) = (tile_col0 + oc_in_tile, tile_row0 + or_in_tile);
        if out_row < cols && out_col < rows {
            let x = T::ld_shared(addr(or_in_tile, oc_in_tile));
            T::st_global(dst.add(out_row as usize * rows as usize + out_col as usize), x);
        }
        e += 1;
    }
}
