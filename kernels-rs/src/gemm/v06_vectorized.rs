//! Vectorized SGEMM: 16-byte global loads, A stored transposed in shared memory, 16-byte
//! shared loads in the inner loop.
//!
//! Same 128×128×8 tiling and 8×8 per thread as `v05`, but each thread fetches its share of A and
//! B with one `ld.global.nc.v4` each, stores A transposed (`Aᵀ[k][m]`) so that a thread's 8 A
//! values for one `k` are contiguous, and reads A and B fragments with `ld.shared.v4`: 4 shared
//! instructions per 64 FMAs instead of 16. Bank conflicts remain: the transposed store (2-way)
//! and the B reads (lanes 32 bytes apart: 2-way per quarter warp). Needs `lda`, `ldb` multiples
//! of 4 and 16-byte-aligned A, B. Shared: 8 KiB.

use super::{epilogue, f32_addr, ld4_or_zero};
use crate::gpu::{self, Elem};
use crate::registry::{Family, KernelInfo, Launch};

/// C tile per block, `(BM, BN)`.
pub const TILE: (u32, u32) = (128, 128);
/// K step.
pub const BK: u32 = 8;
/// Threads per block (8×8 C elements each).
pub const THREADS: u32 = 256;

/// Registry entry.
pub const INFO: KernelInfo = KernelInfo {
    family: Family::Gemm,
    name: "vectorized",
    block: (THREADS, 1, 1),
    launch: Launch::Tiles {
        tile: TILE,
        halo_rows: 0,
    },
    shared_bytes_f32: shared_bytes(0),
    shared_bytes_f16: 0,
    symbols: SYMBOLS,
    about: "16-byte global and shared loads, A transposed in shared memory",
    needs: crate::registry::Needs::ALIGN16,
    ..KernelInfo::BASE
};

/// Shared bytes with the Aᵀ rows padded by `pad` floats.
pub const fn shared_bytes(pad: u32) -> usize {
    ((BK * (TILE.0 + pad) + BK * TILE.1) * 4) as usize
}

/// The 128×128×8, 8×8-per-thread vectorized body. `PAD`: floats of padding per Aᵀ row.
/// `SPLIT`: a thread's 8 rows (and 8 columns) are two groups of 4, 64 apart, instead of 8
/// consecutive, so that the 16-byte fragment loads of a quarter warp hit consecutive chunks.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(super) unsafe fn sgemm_vector_tile<const PAD: u32, const SPLIT: bool>(
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
    let pitch_a = TILE.0 + PAD;
    let a_s = gpu::dynamic_shared_base(); // Aᵀ: (BK, BM + PAD)
    let b_s = a_s + BK * pitch_a * 4; // (BK, BN)
    let (trow, tcol) = (t / 16, t % 16);
    // The i-th of a thread's 8 rows (columns) within the tile.
    let owned = |base: u32, i: u32| {
        if SPLIT {
            (i / 4) * 64 + base * 4 + i % 4
        } else {
            base * 8 + i
        }
    };
    let (ar, ak) = (t / 2, (t % 2) * 4); // this thread's A vector: row, first k
    let (bk, bn) = (t / 32, (t % 32) * 4); // this thread's B vector: k, first column
    let mut acc = [[0.0f32; 8]; 8];
    let mut kt = 0;
    while kt < k {
        let va = ld4_or_zero(a, lda, m, k, row0 + ar, kt + ak);
        let mut q = 0;
        while q < 4 {
            f32::st_shared(f32_addr(a_s, (ak + q) * pitch_a + ar), va[q as usize]);
            q += 1;
        }
        let vb = ld4_or_zero(b, ldb, k, n, kt + bk, col0 + bn);
        gpu::st_shared_f32x4(f32_addr(b_s, bk * TILE.1 + bn), vb);
        gpu::sync_threads();
        let mut d = 0;
        while d < BK {
            let m_lo = gpu::ld_shared_f32x4(f32_addr(a_s, d * pitch_a + owned(trow, 0)));
            let m_hi = gpu::ld_shared_f32x4(f32_addr(a_s, d * pitch_a + owned(trow, 4)));
            let n_lo = gpu::ld_shared_f32x4(f32_addr(b_s, d * TILE.1 + owned(tcol, 0)));
            let n_hi = gpu::ld_shared_f32x4(f32_addr(b_s, d * TILE.1 + owned(tcol, 4)));
            let reg_m = [
                m_lo[0], m_lo[1], m_lo[2], m_lo[3], m_hi[0], m_hi[1], m_hi[2], m_hi[3],
            ];
            let reg_n = [
                n_lo[0], n_lo[1], n_lo[2], n_lo[3], n_hi[0], n_hi[1], n_hi[2], n_hi[3],
            ];
            let mut i = 0;
            while i < 8 {
                let mut j = 0;
                while j < 8 {
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
    while i < 8 {
        let mut j = 0;
        while j < 8 {
            let (r, col) = (row0 + owned(trow, i as u32), col0 + owned(tcol, j as u32));
            epilogue(c, ldc, m, n, r, col, acc[i][j], alpha, beta);
            j += 1;
        }
        i += 1;
    }
}

#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn sgemm_vectorized(
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
    sgemm_vector_tile::<0, false>(a, b, c, m, n, k, lda, ldb, ldc, alpha, beta)
}
crate::entry_points! {
    pub const SYMBOLS;
    fn sgemm_vectorized(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, lda: u32, ldb: u32, ldc: u32, alpha: f32, beta: f32);
    sgemm_vectorized_f32 => (F32, F32, Any) [];
}
