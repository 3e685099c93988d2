//! Transpose of 2-byte elements (f16, bf16) moving pairs: every global access is a 4-byte
//! `u32` holding two elements.
//!
//! A block of `32 × 8` threads covers a 64 × 64 input tile. In phase 1, lane `tx` loads the
//! column pair `(c, c + 1)`, `c = 2·tx`, of two consecutive input rows `2p` and `2p + 1` (four
//! such row pairs per thread, eight `u32` loads in flight; each warp load reads 128 contiguous
//! bytes of one row). The 2 × 2 block `[a₀ a₁; b₀ b₁]` is transposed in registers (`lo = a₀ |
//! b₀ << 16`, `hi = a₁ | b₁ << 16`, a byte permute) into two output-row pairs, stored to shared
//! memory as words `(2·tx, p)` and `(2·tx + 1, p)` of a 64-row × 32-word transposed tile. In
//! phase 2 a warp reads a whole shared row (32 words) and stores it as 128 contiguous bytes of
//! one output row.
//!
//! Shared layout: word `(o, p)` (output row `o` of the tile, element pair `p`) lives at
//! column `p ^ (o >> 1)` of row `o` (32 words a row, 8 KiB, no padding). Phase-1 stores of a
//! warp have `p` fixed and `o >> 1 = tx`: banks `p ^ tx`, all 32 different; phase-2 loads
//! have `o` fixed and `p = tx`: banks `tx ^ (o >> 1)`, again all different. Conflict-free
//! both ways.
//!
//! Tails: rows and columns outside the matrix are masked per element. A pair whose first
//! element is not 4-byte aligned (an odd row pitch puts every other row's pairs at odd
//! element offsets) or which straddles the matrix edge is moved as two 2-byte accesses, so
//! any shape and any 2-byte-aligned base is handled; even shapes never take that path.
//! Bound: DRAM, like a copy (4 bytes per access instead of the other tiles' 2).

use super::BLOCK;
use crate::gpu::{self, Elem};
use crate::registry::{Family, KernelInfo, Launch};

/// Input tile a block covers, `(rows, cols)`.
pub const TILE: (u32, u32) = (64, 64);
/// Words (element pairs) per shared-memory row.
const WORDS: u32 = TILE.0 / 2;
/// Row pairs each thread loads in phase 1 (`32` pairs over 8 thread rows).
const ROW_PAIRS_PER_THREAD: u32 = WORDS / super::BLOCK_ROWS;
/// Output rows each thread stores in phase 2.
const OUT_ROWS_PER_THREAD: u32 = TILE.1 / super::BLOCK_ROWS;

/// Registry entry.
pub const INFO: KernelInfo = KernelInfo {
    family: Family::Transpose,
    name: "pairs",
    block: BLOCK,
    launch: Launch::Tiles {
        tile: TILE,
        halo_rows: 0,
    },
    shared_bytes_f32: 0,
    shared_bytes_f16: (TILE.1 * WORDS * 4) as usize,
    symbols: SYMBOLS,
    about: "2-byte elements moved as u32 pairs, 2x2 register transpose, swizzled 64x64 tile",
    ..KernelInfo::BASE
};

/// Loads elements `idx` and `idx + 1` of `src` as `lo | hi << 16`; `hi_ok` says whether
/// `idx + 1` is inside the row. One `u32` load when both exist and `idx` is 4-byte aligned.
#[inline(always)]
unsafe fn load_pair(src: *const u16, idx: usize, hi_ok: bool) -> u32 {
    let p = src.add(idx);
    if hi_ok && (p as u64).is_multiple_of(4) {
        u32::ld_global_nc(p as *const u32)
    } else {
        let lo = u16::ld_global_nc(p) as u32;
        let hi = if hi_ok {
            u16::ld_global_nc(p.add(1)) as u32
        } else {
            0
        };
        lo | hi << 16
    }
}

/// Stores `v` as elements `idx` (low half) and, if `hi_ok`, `idx + 1` (high half) of `dst`.
#[inline(always)]
unsafe fn store_pair(dst: *mut u16, idx: usize, hi_ok: bool, v: u32) {
    let p = dst.add(idx);
    if hi_ok && (p as u64).is_multiple_of(4) {
        u32::st_global(p as *mut u32, v);
    } else {
        u16::st_global(p, v as u16);
        if hi_ok {
            u16::st_global(p.add(1), (v >> 16) as u16);
        }
    }
}

/// `dst = srcᵀ` for 2-byte elements; see the module docs. Grid: one block per 64 × 64 tile.
#[inline(always)]
unsafe fn transpose_pairs<T: Elem>(src: *const T, dst: *mut T, rows: u32, cols: u32) {
    const { assert!(T::BYTES == 2) };
    let (src, dst) = (src as *const u16, dst as *mut u16);
    let (tx, ty) = (gpu::thread_idx_x(), gpu::thread_idx_y());
    let row0 = gpu::block_idx_y() * TILE.0;
    let col0 = gpu::block_idx_x() * TILE.1;
    let base = gpu::dynamic_shared_base();
    // Byte address of word (o, p) of the transposed tile.
    let word = |o: u32, p: u32| base + (o * WORDS + (p ^ (o >> 1))) * 4;

    // Phase 1: two rows × one column pair per step, all loads first.
    let c = col0 + 2 * tx;
    let (c_ok, c1_ok) = (c < cols, c + 1 < cols);
    let mut a = [0u32; ROW_PAIRS_PER_THREAD as usize];
    let mut b = [0u32; ROW_PAIRS_PER_THREAD as usize];
    let mut j = 0;
    while j < ROW_PAIRS_PER_THREAD as usize {
        let r = row0 + 2 * (ty + j as u32 * super::BLOCK_ROWS);
        if c_ok && r < rows {
            a[j] = load_pair(src, r as usize * cols as usize + c as usize, c1_ok);
        }
        if c_ok && r + 1 < rows {
            b[j] = load_pair(src, (r + 1) as usize * cols as usize + c as usize, c1_ok);
        }
        j += 1;
    }
    let mut j = 0;
    while j < ROW_PAIRS_PER_THREAD as usize {
        let p = ty + j as u32 * super::BLOCK_ROWS;
        // [a0 a1; b0 b1] → output rows c: (a0, b0), c + 1: (a1, b1).
        let lo = (a[j] & 0xffff) | (b[j] << 16);
        let hi = (a[j] >> 16) | (b[j] & 0xffff_0000);
        u32::st_shared(word(2 * tx, p), lo);
        u32::st_shared(word(2 * tx + 1, p), hi);
        j += 1;
    }
    gpu::sync_threads();

    // Phase 2: output row col0 + o, columns row0 + 2·tx and + 1.
    let q = row0 + 2 * tx;
    let (q_ok, q1_ok) = (q < rows, q + 1 < rows);
    let mut j = 0;
    while j < OUT_ROWS_PER_THREAD {
        let o = ty + j * super::BLOCK_ROWS;
        let out_row = col0 + o;
        if q_ok && out_row < cols {
            let v = u32::ld_shared(word(o, tx));
            store_pair(dst, out_row as usize * rows as usize + q as usize, q1_ok, v);
        }
        j += 1;
    }
}
crate::entry_points! {
    pub const SYMBOLS;
    fn transpose_pairs(src: *const T, dst: *mut T, rows: u32, cols: u32);
    transpose_pairs_f16 => (F16, F16, Any) [T = u16];
    transpose_pairs_bf16 => (Bf16, Bf16, Any) [T = u16];
}
