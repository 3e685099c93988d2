//! Small N (GEMV `A·x` and a few columns): a warp per row of A, K split over its lanes.
//!
//! At `N ≤ 4` the product is memory bound on A (`M × K` floats read once: 16384×1×8192 reads
//! 537 MB). Warp `w` of a block owns row `8·by + w` and columns `4·bx + 0..4` of C; lane `l`
//! reads A's row in 16-byte chunks `4·l + 128·s` (`UK` = 4 chunks in flight per lane, 2 KiB per
//! warp), and B's matching rows of the 4 columns: scalar loads (a short B stays in L1), or one
//! 16-byte load of the column when B is a dense vector (`ldb = 1`). The 32 lane sums are
//! combined by a butterfly of shuffles, the same order every run (no atomics), and lane `j`
//! writes column `j`.
//!
//! Any `N` works (⌈N / 4⌉ columns of blocks, each re-reading A), any pitch: 16-byte loads where
//! the rows are 16-byte aligned (checked at run time), scalar loads otherwise.

use super::{epilogue, ld4_any, ld_or_zero, rows_aligned16};
use crate::gpu;
use crate::registry::{Family, KernelInfo, Launch};

/// Rows of C per block: one per warp.
pub const ROWS: u32 = 8;
/// Columns of C per block.
pub const NR: u32 = 4;
/// 16-byte chunks of A per lane per step.
pub const UK: u32 = 4;
/// Threads per block.
pub const THREADS: u32 = 32 * ROWS;

/// Registry entry.
pub const INFO: KernelInfo = KernelInfo {
    family: Family::Gemm,
    name: "gemv_rows",
    block: (THREADS, 1, 1),
    launch: Launch::Tiles {
        tile: (ROWS, NR),
        halo_rows: 0,
    },
    shared_bytes_f32: 0,
    shared_bytes_f16: 0,
    symbols: SYMBOLS,
    about: "GEMV / small N: a warp per row of A, 16-byte loads, shuffle reduction",
    ..KernelInfo::BASE
};

#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn sgemm_gemv_rows(
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
    let row = gpu::block_idx_y() * ROWS + gpu::thread_idx_x() / 32;
    let col0 = gpu::block_idx_x() * NR;
    let a_vec = rows_aligned16(a, lda);
    // B a dense column (ldb = 1 forces n = 1): its k-chunks load as 16-byte vectors.
    let b_col = ldb == 1 && (b as usize).is_multiple_of(16);
    let mut acc = [0.0f32; NR as usize];
    let mut k0 = 4 * lane;
    // Rows past M: the lanes still reach the shuffles below (warp-collective), adding zeros.
    let live = row < m;
    while live && k0 < k {
        crate::unroll!(4, s, {
            let kk = k0 + 128 * s as u32;
            if kk < k {
                let av = ld4_any(a, lda, m, k, row, kk, a_vec);
                if b_col {
                    // B as one row of k floats (ld = k): the 16-byte path.
                    let bv = ld4_any(b, k, 1, k, 0, kk, true);
                    crate::unroll!(4, u, {
                        acc[0] = gpu::fma(av[u], bv[u], acc[0]);
                    });
                } else {
                    crate::unroll!(4, u, {
                        crate::unroll!(4, j, {
                            let bv = ld_or_zero(b, ldb, k, n, kk + u as u32, col0 + j as u32);
                            acc[j] = gpu::fma(av[u], bv, acc[j]);
                        });
                    });
                }
            }
        });
        k0 += 128 * UK;
    }
    crate::unroll!(4, j, {
        let mut v = acc[j];
        let mut mask = 16;
        while mask > 0 {
            v += f32::from_bits(gpu::shfl_xor(v.to_bits(), mask));
            mask /= 2;
        }
        acc[j] = v;
    });
    if live && lane < NR {
        let mut out = acc[0];
        crate::unroll!(4, j, {
            if lane == j as u32 {
                out = acc[j];
            }
        });
        epilogue(c, ldc, m, n, row, col0 + lane, out, alpha, beta);
    }
}
crate::entry_points! {
    pub const SYMBOLS;
    fn sgemm_gemv_rows(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, lda: u32, ldb: u32, ldc: u32, alpha: f32, beta: f32);
    sgemm_gemv_rows_f32 => (F32, F32, Any) [];
}
