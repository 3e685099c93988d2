//! Stream-K over the NT pipeline: a fixed number of blocks share a product's k-tiles evenly,
//! across tile boundaries, so that no wave is left part-full.
//!
//! `v11` gives each 128 × 128 tile of C to one block. When the tiles are not a multiple of the
//! blocks the GPU holds at once (264 on 132 SMs, two per SM), the last wave runs part-empty:
//! 1531³ has 144 tiles — one wave in which 12 SMs run two tiles and 120 run one; 2999 × 3001
//! has 576 — two full waves and one 18 % full. Here the host launches `ctas` blocks (at most
//! what fits at once, and at least the tiles) and block `c` takes k-tiles
//! `⌊c·T/ctas⌋ .. ⌊(c+1)·T/ctas⌋` of the product's `T = tiles · ⌈K/BK⌉`, tile-major: at most
//! one tile's worth, so the end of one tile and the start of the next. Each part goes, raw, to
//! the block's workspace slot — slot 0 for the tile it starts in, 1 for the next — and
//! [`fixup`] (a second launch) adds each tile's parts in block order (deterministic), then
//! applies α and β. (A whole-tile epilogue in this kernel left sm_80's ptxas 4 bytes of spill
//! under the 128-register cap that two blocks per SM need; the fix-up does every tile instead.)
//!
//! The host runs the stream-K launch on the rows that do not fill whole waves (a row band of
//! C, A and C offset) after a plain `v11` launch on the rest: "data-parallel + stream-K".
//! Contract: as `v11` (`a` is Aᵀ, `lda`, `ldb` multiples of 4, 16-byte aligned), plus a
//! workspace of `2 · ctas · 128 · 128` floats and `tiles ≤ ctas ≤ T < 2³²`. This launch writes
//! only the workspace; C, its pitch, α and β are the fix-up's arguments.

use super::v08_warptile::{THREADS, TILE};
use super::v11_nt_pipeline::{lane_pos, nt_tile, BK, SHARED_BYTES};
use super::epilogue4;
use crate::gpu;

/// Floats of one workspace slot (a 128 × 128 tile, row-major).
pub const SLOT: u32 = TILE.0 * TILE.1;

/// Workspace floats for `ctas` blocks: two slots each.
pub const fn workspace_len(ctas: u32) -> usize {
    2 * ctas as usize * SLOT as usize
}

/// First k-tile of block `c` of `ctas` over `total` k-tiles (the host keeps `total` under
/// 2³²: 32-bit iteration state leaves the registers for two blocks per SM without spills).
#[inline(always)]
pub fn start(c: u32, ctas: u32, total: u32) -> u32 {
    (c as u64 * total as u64 / ctas as u64) as u32
}

/// The block of `ctas` whose k-tiles hold k-tile `i` of `total` (the largest `c` with
/// `start(c) ≤ i`).
#[inline(always)]
pub fn owner(i: u32, ctas: u32, total: u32) -> u32 {
    (((i as u64 + 1) * ctas as u64 - 1) / total as u64) as u32
}

#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn sgemm_nt_stream_k(
    at_: *const f32,
    b: *const f32,
    ws: *mut f32,
    m: u32,
    n: u32,
    k: u32,
    lda: u32,
    ldb: u32,
) {
    let tiles_n = n.div_ceil(TILE.1);
    let kt = k.div_ceil(BK);
    let total = m.div_ceil(TILE.0) * tiles_n * kt;
    // A block's k-tiles span at most two tiles (`ctas ≥ tiles`): segment 0 in the tile it
    // starts in, segment 1 in the next. Everything but `seg` is recomputed from a fresh block
    // index per segment, so that nothing else stays live across `nt_tile`'s 64 accumulators
    // (two blocks per SM cap a thread at 128 registers).
    let mut seg = 0;
    while seg < 2 {
        let (cta, ctas) = (gpu::block_idx_x_fresh(), gpu::grid_dim_x());
        let (first, end) = (start(cta, ctas, total), start(cta + 1, ctas, total));
        let tile = first / kt + seg;
        let k0 = first.max(tile * kt) - tile * kt;
        let k1 = end.saturating_sub(tile * kt).min(kt);
        if k0 < k1 {
            let (row0, col0) = ((tile / tiles_n) * TILE.0, (tile % tiles_n) * TILE.1);
            let acc = nt_tile(at_, b, m, n, k0 * BK, (k1 * BK).min(k), lda, ldb, row0, col0);
            // The raw sums to the segment's slot, four floats at a time.
            let w = ws.add((2 * gpu::block_idx_x_fresh() + seg) as usize * SLOT as usize);
            let mut i = 0;
            while i < 8 {
                let mut j = 0;
                while j < 8 {
                    let (r, col) = lane_pos(i as u32, j as u32);
                    let v = [acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]];
                    gpu::st_global_v16(
                        w.add((r * TILE.1 + col) as usize) as *mut gpu::Vec16,
                        gpu::Vec16(v.map(f32::to_bits)),
                    );
                    j += 4;
                }
                i += 1;
            }
        }
        seg += 1;
    }
}

/// Threads of a [`fixup`] block.
pub const FIXUP_THREADS: u32 = 256;
/// Blocks of [`fixup`] per tile (grid y): each thread adds one run of four floats, so the
/// parts' loads come from many warps at once (one block per tile, each thread looping over 16
/// runs, was latency-bound: ~30 µs for 1531³'s 144 tiles).
pub const FIXUP_SPLIT: u32 = SLOT / (4 * FIXUP_THREADS);

/// The second launch: grid `(tiles, FIXUP_SPLIT)`. Each tile is the sum, in block order, of its
/// parts in the workspace slots, then `C = α·sum + β·C` inside `m × n` (C not read when β = 0).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn sgemm_stream_k_fixup(
    ws: *const f32,
    c: *mut f32,
    m: u32,
    n: u32,
    k: u32,
    ldc: u32,
    ctas: u32,
    alpha: f32,
    beta: f32,
) {
    let tile = gpu::block_idx_x();
    let tiles_n = n.div_ceil(TILE.1);
    let kt = k.div_ceil(BK);
    let total = m.div_ceil(TILE.0) * tiles_n * kt;
    let (lo, hi) = (owner(tile * kt, ctas, total), owner((tile + 1) * kt - 1, ctas, total));
    let (row0, col0) = ((tile / tiles_n) * TILE.0, (tile % tiles_n) * TILE.1);
    let idx = (gpu::block_idx_y() * FIXUP_THREADS + gpu::thread_idx_x()) * 4;
    let (r, col) = (idx / TILE.1, idx % TILE.1);
    if row0 + r >= m || col0 + col >= n {
        return;
    }
    let mut sum = [0.0f32; 4];
    let mut blk = lo;
    while blk <= hi {
        // Slot 0 if the tile is the one block `blk` starts in, else slot 1 (see the kernel).
        let slot = 2 * blk + (start(blk, ctas, total) / kt != tile) as u32;
        let v = gpu::ld_global_nc_f32x4(ws.add(slot as usize * SLOT as usize + idx as usize));
        crate::unroll!(4, q, {
            sum[q] += v[q];
        });
        blk += 1;
    }
    epilogue4(c, ldc, m, n, row0 + r, col0 + col, sum, alpha, beta, false);
}

crate::entry_points! {
    pub const SYMBOLS;
    fn sgemm_nt_stream_k(at_: *const f32, b: *const f32, ws: *mut f32, m: u32, n: u32, k: u32, lda: u32, ldb: u32);
    sgemm_nt_stream_k_f32 => (F32, F32, Any) [];
}

/// Registry record (a helper of the SGEMM dispatcher, which sizes its grid).
pub const INFO: crate::registry::KernelInfo = crate::registry::KernelInfo {
    family: crate::registry::Family::Gemm,
    name: "nt_stream_k",
    block: (THREADS, 1, 1),
    launch: crate::registry::Launch::Tiles {
        tile: TILE,
        halo_rows: 0,
    },
    shared_bytes_f32: SHARED_BYTES,
    shared_bytes_f16: 0,
    symbols: SYMBOLS,
    about: "v11's NT pipeline, k-tiles shared evenly by a fixed grid (stream-K), parts to a workspace",
    role: crate::registry::Role::Helper,
    needs: crate::registry::Needs::ALIGN16,
    bounds: Some((THREADS, 2)),
};

/// The fix-up launch of [`INFO`]'s product.
pub mod fixup {
    crate::entry_points! {
        pub const SYMBOLS;
        fn sgemm_stream_k_fixup(ws: *const f32, c: *mut f32, m: u32, n: u32, k: u32, ldc: u32, ctas: u32, alpha: f32, beta: f32);
        sgemm_stream_k_fixup_f32 => (F32, F32, Any) [];
    }
    use super::*;

    /// Registry record (the dispatcher's second launch after [`super::INFO`]).
    pub const INFO: crate::registry::KernelInfo = crate::registry::KernelInfo {
        family: crate::registry::Family::Gemm,
        name: "stream_k_fixup",
        block: (FIXUP_THREADS, 1, 1),
        symbols: SYMBOLS,
        about: "adds a stream-K product's split tiles in block order, then alpha and beta",
        role: crate::registry::Role::Helper,
        ..crate::registry::KernelInfo::BASE
    };
}
