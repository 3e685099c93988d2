//! 2-D block tiling (register blocking): each thread computes an 8×8 block of C.
//!
//! A 128×128 C tile per block of 256 threads, K step 8. Per K step a thread loads 8 A and 8 B
//! values from shared memory into registers and does 64 FMAs: 4 FMAs per shared load (was ~1).
//! Arithmetic intensity per block: 128·128·2 flops per (128+128)·4 bytes = 32 flops/byte from
//! global memory. Shared: 8 KiB. What it still pays: scalar 4-byte global and shared loads, and
//! bank conflicts (A reads: 2-way, B reads: 4-way; see `rustile analyze gemm/…`).

use super::{epilogue, f32_addr, ld_or_zero};
use crate::gpu::{self, Elem};
use crate::registry::{Family, KernelInfo, Launch};

/// C tile per block, `(BM, BN)`.
pub const TILE: (u32, u32) = (128, 128);
/// K step.
pub const BK: u32 = 8;
/// C block per thread, rows and columns.
pub const TM: usize = 8;
/// C block per thread, columns.
pub const TN: usize = 8;
/// Threads per block.
pub const THREADS: u32 = (TILE.0 * TILE.1) / (TM * TN) as u32;

/// Registry entry.
pub const INFO: KernelInfo = KernelInfo {
    family: Family::Gemm,
    name: "blocktile_2d",
    block: (THREADS, 1, 1),
    launch: Launch::Tiles {
        tile: TILE,
        halo_rows: 0,
    },
    shared_bytes_f32: ((TILE.0 + TILE.1) * BK * 4) as usize,
    shared_bytes_f16: 0,
    symbols: SYMBOLS,
    about: "128x128 tile, 8x8 C block per thread in registers",
    ..KernelInfo::BASE
};

#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn sgemm_blocktile_2d(
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
    const LOADS: u32 = TILE.0 * BK / THREADS; // elements of each tile per thread
    let t = gpu::thread_idx_x();
    let (row0, col0) = (gpu::block_idx_y() * TILE.0, gpu::block_idx_x() * TILE.1);
    let a_s = gpu::dynamic_shared_base(); // (BM, BK)
    let b_s = a_s + TILE.0 * BK * 4; // (BK, BN)
    let threads_n = TILE.1 / TN as u32;
    let (trow, tcol) = (t / threads_n, t % threads_n);
    let mut acc = [[0.0f32; TN]; TM];
    let mut kt = 0;
    while kt < k {
        let mut l = 0;
        while l < LOADS {
            let idx = t + l * THREADS;
            let (ar, ac) = (idx / BK, idx % BK);
            f32::st_shared(
                f32_addr(a_s, idx),
                ld_or_zero(a, lda, m, k, row0 + ar, kt + ac),
            );
            let (br, bc) = (idx / TILE.1, idx % TILE.1);
            f32::st_shared(
                f32_addr(b_s, idx),
                ld_or_zero(b, ldb, k, n, kt + br, col0 + bc),
            );
            l += 1;
        }
        gpu::sync_threads();
        let mut d = 0;
        while d < BK {
            let mut reg_m = [0.0f32; TM];
            let mut reg_n = [0.0f32; TN];
            let mut i = 0;
            while i < TM {
                reg_m[i] = f32::ld_shared(f32_addr(a_s, (trow * TM as u32 + i as u32) * BK + d));
                i += 1;
            }
            let mut j = 0;
            while j < TN {
                reg_n[j] = f32::ld_shared(f32_addr(b_s, d * TILE.1 + tcol * TN as u32 + j as u32));
                j += 1;
            }
            let mut i = 0;
            while i < TM {
                let mut j = 0;
                while j < TN {
                    acc[i][j] = gpu::fma(reg_m[i], reg_n[j], acc[i][j]);
                    j += 1;
                }
                i += 1;
            }
            d += 1;
        }
        gpu::sync_threads();
        kt += BK;
    }
    let mut i = 0;
    while i < TM {
        let mut j = 0;
        while j < TN {
            let (r, col) = (
                row0 + trow * TM as u32 + i as u32,
                col0 + tcol * TN as u32 + j as u32,
            );
            epilogue(c, ldc, m, n, r, col, acc[i][j], alpha, beta);
            j += 1;
        }
        i += 1;
    }
}
crate::entry_points! {
    pub const SYMBOLS;
    fn sgemm_blocktile_2d(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, lda: u32, ldb: u32, ldc: u32, alpha: f32, beta: f32);
    sgemm_blocktile_2d_f32 => (F32, F32, Any) [];
}
