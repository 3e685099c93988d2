//! `mma.sync.m16n8k16`, the first tensor-core step: one k-tile in shared memory at a time.
//!
//! - **Tile** 64 × 64 × 32 per block of four warps (2 × 2); each warp owns 32 × 32 of C (2 × 4
//!   `m16n8` tiles, 32 accumulators per lane).
//! - **Loads**: every thread reads its share of the A and B tiles element by element (zeros
//!   outside the matrix, so any shape and pitch works), stores them to padded shared tiles,
//!   and after a barrier each lane gathers its fragments with 32-bit shared loads: no
//!   `ldmatrix`, no overlap of loads with math.
//! - **Shared**: A 64 × (32 + 8) and B (as Bᵀ) 64 × (32 + 8) halves, 10 KiB; the 8-element pad
//!   spreads the fragment gathers over the banks.
//! - **Bound**: latency. A block waits for its loads, then computes; with 10 KiB per block
//!   many blocks fit per SM, but each warp issues only 8 `mma`s per barrier pair.

use crate::gpu::{self, Elem};
use crate::tc::{Epilogue, TcIn, TcOut};

/// Rows of A per block.
pub const BM: u32 = 64;
/// Columns of B per block.
pub const BN: u32 = 64;
/// K per step.
pub const BK: u32 = 32;
/// Threads: four warps.
pub const THREADS: u32 = 128;
/// Row pitch of both shared tiles, elements (k-contiguous rows).
pub const PITCH: u32 = BK + 8;
/// Dynamic shared bytes: A (BM rows) and Bᵀ (BN rows).
pub const SHARED_BYTES: usize = ((BM + BN) * PITCH * 2) as usize;

/// The kernel body. `TRANS_B` = 1: B is row-major K × N; 0: B is Bᵀ, N × K. `_ALIGNED` is
/// unused (element loads work for any alignment).
///
/// # Safety
/// Launched with `THREADS` threads and `SHARED_BYTES` of shared memory over a grid covering
/// C in `BN × BM` tiles; `a`, `b`, `c` (and `bias` unless null) hold the spans the pitches
/// and shape imply (the host checks).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub unsafe fn hgemm_mma<I: TcIn, O: TcOut, const TRANS_B: u32, const _ALIGNED: bool>(
    a: *const u16,
    b: *const u16,
    c: *mut O::Store,
    bias: *const f32,
    m: u32,
    n: u32,
    k: u32,
    lda: u32,
    ldb: u32,
    ldc: u32,
    alpha: f32,
    beta: f32,
    relu: u32,
) {
    let t = gpu::thread_idx_x();
    let (warp, lane) = (t / 32, t % 32);
    let (wm, wn) = (warp / 2, warp % 2);
    let (g, tq) = (lane / 4, lane % 4);
    let m0 = gpu::block_idx_y() * BM;
    let n0 = gpu::block_idx_x() * BN;
    let sa = gpu::dynamic_shared_base();
    let sb = sa + BM * PITCH * 2;
    let at = |base: u32, row: u32, col: u32| base + (row * PITCH + col) * 2;
    let mut acc = [0f32; 32];
    let mut k0 = 0;
    while k0 < k {
        // 64 × 32 elements of each operand, 16 per thread; B lands k-contiguous (as Bᵀ).
        let mut e = t;
        while e < BM * BK {
            let (row, col) = (e / BK, e % BK);
            let (gr, gk) = (m0 + row, k0 + col);
            let va = if gr < m && gk < k {
                u16::ld_global_nc(a.add(gr as usize * lda as usize + gk as usize))
            } else {
                0
            };
            u16::st_shared(at(sa, row, col), va);
            let gn = n0 + row;
            let vb = if gn < n && gk < k {
                let idx = if TRANS_B == 1 {
                    gk as usize * ldb as usize + gn as usize
                } else {
                    gn as usize * ldb as usize + gk as usize
                };
                u16::ld_global_nc(b.add(idx))
            } else {
                0
            };
            u16::st_shared(at(sb, row, col), vb);
            e += THREADS;
        }
        gpu::sync_threads();
        let mut ks = 0;
        while ks < BK {
            crate::unroll!(4, j, {
                // B fragment of n8 tile j: Bᵀ[n][2tq..], Bᵀ[n][2tq + 8..].
                let nrow = wn * 32 + 8 * j as u32 + g;
                let b0 = u32::ld_shared(at(sb, nrow, ks + 2 * tq));
                let b1 = u32::ld_shared(at(sb, nrow, ks + 2 * tq + 8));
                let mut i = 0;
                while i < 2 {
                    let row = wm * 32 + 16 * i + g;
                    let af = [
                        u32::ld_shared(at(sa, row, ks + 2 * tq)),
                        u32::ld_shared(at(sa, row + 8, ks + 2 * tq)),
                        u32::ld_shared(at(sa, row, ks + 2 * tq + 8)),
                        u32::ld_shared(at(sa, row + 8, ks + 2 * tq + 8)),
                    ];
                    let o = (16 * i) as usize + 4 * j;
                    let d = gpu::mma_m16n8k16(
                        I::KIND,
                        af,
                        [b0, b1],
                        [acc[o], acc[o + 1], acc[o + 2], acc[o + 3]],
                    );
                    acc[o] = d[0];
                    acc[o + 1] = d[1];
                    acc[o + 2] = d[2];
                    acc[o + 3] = d[3];
                    i += 1;
                }
            });
            ks += 16;
        }
        gpu::sync_threads();
        k0 += BK;
    }
    let epi = Epilogue::<O> {
        c,
        ldc,
        m,
        n,
        alpha,
        beta,
        bias,
        relu,
    };
    crate::unroll!(8, f, {
        let (i, j) = (f / 4, f % 4);
        let o = 16 * i + 4 * j;
        let row = m0 + wm * 32 + 16 * i as u32 + g;
        let col = n0 + wn * 32 + 8 * j as u32 + 2 * tq;
        epi.store_pair(row, col, acc[o], acc[o + 1]);
        epi.store_pair(row + 8, col, acc[o + 2], acc[o + 3]);
    });
}

crate::entry_points! {
    pub const SYMBOLS;
    fn hgemm_mma(a: *const u16, b: *const u16, c: *mut <O as crate::hgemm::TcOut>::Store, bias: *const f32, m: u32, n: u32, k: u32, lda: u32, ldb: u32, ldc: u32, alpha: f32, beta: f32, relu: u32);
    hgemm_mma_f16_f16_bn => (F16, F16, Bn) [I = crate::hgemm::F16, O = crate::hgemm::OutF16; TB: u32 = 1, AL: bool = false];
    hgemm_mma_f16_f32_bn => (F16, F32, Bn) [I = crate::hgemm::F16, O = crate::hgemm::OutF32; TB: u32 = 1, AL: bool = false];
    hgemm_mma_bf16_bf16_bn => (Bf16, Bf16, Bn) [I = crate::hgemm::Bf16, O = crate::hgemm::OutBf16; TB: u32 = 1, AL: bool = false];
    hgemm_mma_bf16_f32_bn => (Bf16, F32, Bn) [I = crate::hgemm::Bf16, O = crate::hgemm::OutF32; TB: u32 = 1, AL: bool = false];
    hgemm_mma_f16_f16_bt => (F16, F16, Bt) [I = crate::hgemm::F16, O = crate::hgemm::OutF16; TB: u32 = 0, AL: bool = false];
    hgemm_mma_f16_f32_bt => (F16, F32, Bt) [I = crate::hgemm::F16, O = crate::hgemm::OutF32; TB: u32 = 0, AL: bool = false];
    hgemm_mma_bf16_bf16_bt => (Bf16, Bf16, Bt) [I = crate::hgemm::Bf16, O = crate::hgemm::OutBf16; TB: u32 = 0, AL: bool = false];
    hgemm_mma_bf16_f32_bt => (Bf16, F32, Bt) [I = crate::hgemm::Bf16, O = crate::hgemm::OutF32; TB: u32 = 0, AL: bool = false];
}

/// Registry record.
pub const INFO: crate::registry::KernelInfo = crate::registry::KernelInfo {
    family: crate::registry::Family::Hgemm,
    name: "mma",
    block: (THREADS, 1, 1),
    launch: crate::registry::Launch::Tiles {
        tile: (BM, BN),
        halo_rows: 0,
    },
    shared_bytes_f16: SHARED_BYTES,
    symbols: SYMBOLS,
    about: "mma.sync m16n8k16, one k-tile in shared memory, element loads (any pitch)",
    ..crate::registry::KernelInfo::BASE
};
