//! Matrix transpose `out[c][r] = in[r][c]`, `in` is `rows × cols` row-major, `out` is
//! `cols × rows` row-major.
//!
//! Bytes moved: `2 · rows · cols · size`: the floor is a copy of the same size. A naive kernel
//! reads rows (coalesced) and writes columns (one 32-byte sector per element); the tiled
//! variants stage a `TR × TC` tile in shared memory so both the read and the write are
//! coalesced, and differ in the shared-memory layout ([`TileLayout`]: plain, padded, swizzled)
//! and in where output segments start (`v05_sector_aligned`).
//!
//! Every variant uses blocks of `32 × BLOCK_ROWS` threads over tiles of the input
//! ([`Launch::Tiles`](crate::registry::Launch)). Edges that are not tile multiples are masked
//! per element.

pub mod v01_naive;
pub mod v02_smem;
pub mod v03_smem_padded;
pub mod v04_smem_swizzled;
pub mod v05_sector_aligned;
pub mod v06_pairs;

/// The family.
pub const FAMILY: crate::registry::Family = crate::registry::Family {
    name: "transpose",
    about: "matrix transpose",
};

/// Every entry point of the family, one registry record each.
pub const RECORDS: &[&crate::registry::KernelInfo] = &[
    &v01_naive::INFO,
    &v02_smem::INFO,
    &v03_smem_padded::INFO,
    &v04_smem_swizzled::INFO,
    &v05_sector_aligned::INFO,
    &v06_pairs::INFO,
];

/// Threads along x: one warp spans a tile row.
pub const WARP: u32 = 32;
/// Thread rows per block.
pub const BLOCK_ROWS: u32 = 8;
/// Block shape `(x, y, z)` of every transpose variant.
pub const BLOCK: (u32, u32, u32) = (WARP, BLOCK_ROWS, 1);

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
/// (TR / BR) · (TC / WARP)` elements per thread, blocks of `WARP × BR` threads.
///
/// Phase 1: every thread loads its `PER` elements (rows `ty + i·BLOCK_ROWS`, columns
/// `tx + k·WARP`; each warp reads contiguous row segments) into registers, all loads in flight
/// at once, then stores them to shared memory.
/// Phase 2: after a barrier, each warp writes contiguous segments of `out`'s rows, reading
/// shared memory down a tile column — the access whose bank conflicts `L` decides.
#[inline(always)]
unsafe fn transpose_tiled<T, L, const TR: u32, const TC: u32, const BR: u32, const PER: usize>(
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
    const { assert!(PER as u32 == (TR / BR) * (TC / WARP)) };

    // Phase 1: global → registers → shared. Element e is tile (r, c).
    let at = |e: u32| (ty + (e / (TC / WARP)) * BR, tx + (e % (TC / WARP)) * WARP);
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
    let out_at = |e: u32| (ty + (e / (TR / WARP)) * BR, tx + (e % (TR / WARP)) * WARP);
    let mut e = 0;
    while e < PER {
        let (oc_in_tile, or_in_tile) = out_at(e as u32); // (input col, input row) in the tile
        let (out_row, out_col) = (tile_col0 + oc_in_tile, tile_row0 + or_in_tile);
        if out_row < cols && out_col < rows {
            let x = T::ld_shared(addr(or_in_tile, oc_in_tile));
            T::st_global(
                dst.add(out_row as usize * rows as usize + out_col as usize),
                x,
            );
        }
        e += 1;
    }
}

/// Rows of halo a sector-aligned tile loads above its own rows: one 32-byte sector of the
/// narrowest element (16 f16).
pub const SECTOR_HALO: u32 = 16;

/// Transpose whose output segments start on 32-byte sector boundaries.
///
/// When `rows` (the output's row pitch) is not a multiple of a sector's elements `E`, output
/// rows start mid-sector, and every 128-byte warp store of a plain tiled kernel leaves two
/// partly written sectors, completed later by another block: measured on the H200, this costs
/// a third of the bandwidth (8191×8192 f32 at 0.57× copy, 8192×8193 at 0.86×). Here the block
/// writes, for output row `or`, output columns `[by·TR − shift, by·TR − shift + TR)` with
/// `shift = (or · rows) mod E`: every segment starts on a sector, and consecutive blocks' segments
/// still tile the row exactly (`TR` is a multiple of `E`). The block therefore loads `E` input
/// rows above its tile (a halo, mostly L2 hits: the block above loads them too), and the grid
/// has extra tile rows to cover the shifted end (`halo_rows`). `rows + SECTOR_HALO` must not
/// overflow `u32` (the host checks).
#[inline(always)]
unsafe fn transpose_sector_aligned<T, const TR: u32, const TC: u32>(
    src: *const T,
    dst: *mut T,
    rows: u32,
    cols: u32,
) where
    T: crate::gpu::Elem + Default,
{
    use crate::gpu;
    const MAX_PER: usize = 10; // (64 + 16) / 8 · (32 / 32) for f16
    let e_sector = 32 / T::BYTES as u32; // elements per sector: the halo this T needs
    let tile_rows = TR + e_sector; // rows held in shared memory
    let per = ((tile_rows / BLOCK_ROWS) * (TC / WARP)) as usize;
    let (tx, ty) = (gpu::thread_idx_x(), gpu::thread_idx_y());
    let (bx, by) = (gpu::block_idx_x(), gpu::block_idx_y());
    let tile_col0 = bx * TC;
    // Input row held in shared row 0 (may be negative: masked).
    let row0 = (by * TR) as i64 - e_sector as i64;
    let base = gpu::dynamic_shared_base();
    let pitch = TC + 1;
    let addr = |r: u32, c: u32| base + (r * pitch + c) * T::BYTES as u32;

    let at = |e: u32| {
        (
            ty + (e / (TC / WARP)) * BLOCK_ROWS,
            tx + (e % (TC / WARP)) * WARP,
        )
    };
    let mut v = [T::default(); MAX_PER];
    let mut e = 0;
    while e < per && e < MAX_PER {
        let (r, c) = at(e as u32);
        let (row, col) = (row0 + r as i64, tile_col0 + c);
        if row >= 0 && row < rows as i64 && col < cols {
            v[e] = T::ld_global_nc(src.add(row as usize * cols as usize + col as usize));
        }
        e += 1;
    }
    let mut e = 0;
    while e < per && e < MAX_PER {
        let (r, c) = at(e as u32);
        let row = row0 + r as i64;
        if row >= 0 && row < rows as i64 && tile_col0 + c < cols {
            T::st_shared(addr(r, c), v[e]);
        }
        e += 1;
    }
    gpu::sync_threads();

    let mut j = 0;
    while j < TC / BLOCK_ROWS {
        let c_in_tile = ty + j * BLOCK_ROWS;
        let out_row = tile_col0 + c_in_tile;
        if out_row < cols {
            let shift = ((out_row as u64 * rows as u64) % e_sector as u64) as i64;
            let seg0 = (by * TR) as i64 - shift;
            let mut k = 0;
            while k < TR / WARP {
                let out_col = seg0 + (tx + k * WARP) as i64;
                if out_col >= 0 && out_col < rows as i64 {
                    let r_in_tile = (out_col - row0) as u32;
                    let x = T::ld_shared(addr(r_in_tile, c_in_tile));
                    T::st_global(
                        dst.add(out_row as usize * rows as usize + out_col as usize),
                        x,
                    );
                }
                k += 1;
            }
        }
        j += 1;
    }
}
