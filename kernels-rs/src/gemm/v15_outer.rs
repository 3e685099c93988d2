//! Short K (outer products, `K ≤ 16`): store bound, B kept in registers.
//!
//! At `K = 2`, 12288×12288×2 writes 604 MB of C and reads almost nothing: the floor is the
//! store bandwidth (and C's read where `β ≠ 0`). A block owns a `32 × 128` tile of C: lane `l`
//! of each warp holds 4 columns `4·l + 0..4` of B for a chunk of `KC` = 4 rows of K in
//! registers, and warp `w` walks rows `w + 8·i` (`i` = 0..4), reading each row's `KC` values of
//! A (one broadcast address per warp) and writing 4 columns with one 16-byte store. A warp's
//! stores are 512 contiguous bytes. K longer than 4 loops over chunks, so any shape is right.
//!
//! The chunk was 16 rows (64 registers of B, 122 in all): 25 % occupancy, and each block's
//! life is two dependent load latencies before its stores, so a store-bound kernel ran at
//! 1.37 TB/s (0.52× cuBLAS at 12288×12288×2, H200). Four rows leave room for more blocks per
//! SM to overlap those latencies.
//!
//! Any pitch: 16-byte accesses where the rows are 16-byte aligned (checked at run time),
//! scalar ones otherwise.

use super::{epilogue4, ld4_any, ld_or_zero, rows_aligned16};
use crate::gpu;
use crate::registry::{Family, KernelInfo, Launch};

/// C tile per block, `(rows, cols)`.
pub const TILE: (u32, u32) = (32, 128);
/// Rows of K held in registers at a time.
pub const KC: u32 = 4;
/// The longest reduction the dispatcher sends here (the kernel itself loops over any K).
pub const MAX_K: u32 = 16;
/// Warps per block.
pub const WARPS: u32 = 8;
/// Threads per block.
pub const THREADS: u32 = 32 * WARPS;
/// Rows of C per warp.
const ROWS_PER_WARP: usize = (TILE.0 / WARPS) as usize;

/// Registry entry.
pub const INFO: KernelInfo = KernelInfo {
    family: Family::Gemm,
    name: "outer",
    block: (THREADS, 1, 1),
    launch: Launch::Tiles {
        tile: TILE,
        halo_rows: 0,
    },
    shared_bytes_f32: 0,
    shared_bytes_f16: 0,
    symbols: SYMBOLS,
    about: "short K / outer product: B chunk in registers, 16-byte stores of C",
    ..KernelInfo::BASE
};

#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn sgemm_outer(
    a: *const f32,
    b: *const f32,
    c: *mut f32,
    m: u32,
    n: u32,
    k: u32,
    lda: u32,
    ldb: u32,
    ldc: u32,
    alpha: f32,
    beta: f32,
) {
    let lane = gpu::thread_idx_x() % 32;
    let w = gpu::thread_idx_x() / 32;
    let col = gpu::block_idx_x() * TILE.1 + 4 * lane;
    let row0 = gpu::block_idx_y() * TILE.0 + w;
    let b_vec = rows_aligned16(b, ldb);
    let mut acc = [[0.0f32; 4]; ROWS_PER_WARP];
    let mut k0 = 0;
    while k0 < k {
        let mut bv = [[0.0f32; 4]; KC as usize];
        crate::unroll!(4, q, {
            if k0 + (q as u32) < k {
                bv[q] = ld4_any(b, ldb, k, n, k0 + q as u32, col, b_vec);
            }
        });
        crate::unroll!(4, i, {
            let r = row0 + WARPS * i as u32;
            crate::unroll!(4, q, {
                if k0 + (q as u32) < k {
                    let av = ld_or_zero(a, lda, m, k, r, k0 + q as u32);
                    crate::unroll!(4, j, {
                        acc[i][j] = gpu::fma(av, bv[q][j], acc[i][j]);
                    });
                }
            });
        });
        k0 += KC;
    }
    let c_vec = rows_aligned16(c, ldc);
    crate::unroll!(4, i, {
        let r = row0 + WARPS * i as u32;
        epilogue4(c, ldc, m, n, r, col, acc[i], alpha, beta, c_vec);
    });
}
crate::entry_points! {
    pub const SYMBOLS;
    fn sgemm_outer(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, lda: u32, ldb: u32, ldc: u32, alpha: f32, beta: f32);
    sgemm_outer_f32 => (F32, F32, Any) [];
}
