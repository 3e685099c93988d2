//! 1-D block tiling: each thread computes `TM = 8` elements of a column of C.
//!
//! A 64×64 C tile per block of 512 threads, K step 8. For every B element read from shared
//! memory the thread does 8 FMAs with 8 A elements, so shared loads per FMA fall from 2 to
//! ~1.1 and the accumulators live in registers. Shared: 4 KiB.

use super::{epilogue, f32_addr, ld_or_zero};
use crate::gpu::{self, Elem};
use crate::registry::{Family, KernelInfo, Launch};

/// C tile per block, `(BM, BN)`.
pub const TILE: (u32, u32) = (64, 64);
/// K step.
pub const BK: u32 = 8;
/// C rows per thread.
pub const TM: usize = 8;
/// Threads per block.
pub const THREADS: u32 = TILE.0 * TILE.1 / TM as u32;

/// Registry entry.
pub const INFO: KernelInfo = KernelInfo {
    family: Family::Gemm,
    name: "blocktile_1d",
    block: (THREADS, 1, 1),
    launch: Launch::Tiles {
        tile: TILE,
        halo_rows: 0,
    },
    shared_bytes_f32: ((TILE.0 + TILE.1) * BK * 4) as usize,
    shared_bytes_f16: 0,
    symbols: SYMBOLS,
    about: "64x64 tile, 8 C rows per thread",
    ..KernelInfo::BASE
};

#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn sgemm_blocktile_1d(
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
    let t = gpu::thread_idx_x();
    let (row0, col0) = (gpu::block_idx_y() * TILE.0, gpu::block_idx_x() * TILE.1);
    let a_s = gpu::dynamic_shared_base(); // (BM, BK)
    let b_s = a_s + TILE.0 * BK * 4; // (BK, BN)
    let (tcol, trow) = (t % TILE.1, t / TILE.1); // trow: which group of TM rows
    let (ar, ac) = (t / BK, t % BK); // the A element this thread loads
    let (br, bc) = (t / TILE.1, t % TILE.1); // the B element this thread loads
    let mut acc = [0.0f32; TM];
    let mut kt = 0;
    while kt < k {
        f32::st_shared(
            f32_addr(a_s, ar * BK + ac),
            ld_or_zero(a, lda, m, k, row0 + ar, kt + ac),
        );
        f32::st_shared(
            f32_addr(b_s, br * TILE.1 + bc),
            ld_or_zero(b, ldb, k, n, kt + br, col0 + bc),
        );
        gpu::sync_threads();
        let mut d = 0;
        while d < BK {
            let bv = f32::ld_shared(f32_addr(b_s, d * TILE.1 + tcol));
            let mut i = 0;
            while i < TM {
                let av = f32::ld_shared(f32_addr(a_s, (trow * TM as u32 + i as u32) * BK + d));
                acc[i] = gpu::fma(av, bv, acc[i]);
                i += 1;
            }
            d += 1;
        }
        gpu::sync_threads();
        kt += BK;
    }
    let mut i = 0;
    while i < TM {
        epilogue(
            c,
            ldc,
            m,
            n,
            row0 + trow * TM as u32 + i as u32,
            col0 + tcol,
            acc[i],
            alpha,
            beta,
        );
        i += 1;
    }
}
crate::entry_points! {
    pub const SYMBOLS;
    fn sgemm_blocktile_1d(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, lda: u32, ldb: u32, ldc: u32, alpha: f32, beta: f32);
    sgemm_blocktile_1d_f32 => (F32, F32, Any) [];
}
