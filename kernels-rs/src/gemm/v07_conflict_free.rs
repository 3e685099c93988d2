//! Bank-conflict-free vectorized SGEMM: `v06` with the Aᵀ rows padded by 4 floats and each
//! thread's 8 rows and 8 columns split into two groups of 4, 64 apart.
//!
//! Padding shifts Aᵀ row `k + 4` by 16 banks, so the two threads that store the same row of A
//! (k = 0..4 and 4..8) hit different banks; the split makes the 8 lanes of a quarter warp read
//! 8 consecutive 16-byte chunks of a B row (one wavefront) instead of chunks 32 bytes apart
//! (two). `rustile analyze gemm/conflict_free` shows degree 1 on every shared access.
//! Shared: 8.1 KiB.

use super::v06_vectorized::{sgemm_vector_tile, shared_bytes, BK, THREADS, TILE};
use crate::registry::{Family, KernelInfo, Launch};

/// Floats of padding per Aᵀ row.
pub const PAD: u32 = 4;

/// Registry entry.
pub const INFO: KernelInfo = KernelInfo {
    family: Family::Gemm,
    name: "conflict_free",
    block: (THREADS, 1, 1),
    launch: Launch::Tiles {
        tile: TILE,
        halo_rows: 0,
    },
    shared_bytes_f32: shared_bytes(PAD),
    shared_bytes_f16: 0,
    symbols: SYMBOLS,
    about: "v06 + padded A^T and split 4+4 fragments: no bank conflicts",
    needs: crate::registry::Needs::ALIGN16,
    ..KernelInfo::BASE
};

const _: () = assert!(BK == 8);

#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn sgemm_conflict_free(
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
    sgemm_vector_tile::<PAD, true>(a, b, c, m, n, k, lda, ldb, ldc, alpha, beta)
}
crate::entry_points! {
    pub const SYMBOLS;
    fn sgemm_conflict_free(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, lda: u32, ldb: u32, ldc: u32, alpha: f32, beta: f32);
    sgemm_conflict_free_f32 => (F32, F32, Any) [];
}
