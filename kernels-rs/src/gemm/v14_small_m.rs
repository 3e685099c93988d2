//! Small M (GEMV `x·B` and a few rows): streams B once, keeps `MR` rows of A.
//!
//! At `M ≤ 4` the product is memory bound on B (`K × N` floats read once: 1×16384×8192 reads
//! 537 MB, ~125 µs at 4.3 TB/s), so what matters is B's bytes in flight, not reuse. A block
//! owns a `MR × TN` strip of C (`TN` = 32 columns, one 128-byte line of a B row) and splits K
//! over its `KG` = 32 thread groups of 8 lanes: group `g` reads B rows `UK·g + UK·KG·s + 0..UK`
//! (`UK` = 4 rows in flight per thread, 16-byte loads), and `MR` rows of A at the same `k`
//! (broadcast within the group). The 32 partial sums per element are added in shared memory in
//! group order: fixed, so reruns are bit-identical (no atomics). 256 threads keep 16 KiB of B
//! in flight per block, several blocks per SM.
//!
//! Any `M` works (⌈M / MR⌉ rows of blocks, each re-reading B), any pitch: 16-byte loads where
//! the operand's rows are 16-byte aligned (checked at run time), scalar loads otherwise.

use super::{epilogue, f32_addr, ld4_any, rows_aligned16};
use crate::gpu::{self, Elem};
use crate::registry::{Family, KernelInfo, Launch};

/// Rows of C per block.
pub const MR: u32 = 4;
/// Columns of C per block: 8 lanes × 4.
pub const TN: u32 = 32;
/// K groups per block (threads / 8).
pub const KG: u32 = 32;
/// B rows per thread per step.
pub const UK: u32 = 4;
/// Threads per block.
pub const THREADS: u32 = KG * (TN / 4);
/// Shared bytes: one `MR × TN` partial per K group.
pub const SHARED_BYTES: usize = (KG * MR * TN * 4) as usize;

/// Registry entry.
pub const INFO: KernelInfo = KernelInfo {
    family: Family::Gemm,
    name: "small_m",
    block: (THREADS, 1, 1),
    launch: Launch::Tiles {
        tile: (MR, TN),
        halo_rows: 0,
    },
    shared_bytes_f32: SHARED_BYTES,
    shared_bytes_f16: 0,
    symbols: SYMBOLS,
    about: "GEMV / small M: 4 x 32 strip, K split over 32 groups, B streamed once",
    ..KernelInfo::BASE
};

#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn sgemm_small_m(
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
    let (cg, g) = (t % (TN / 4), t / (TN / 4));
    let col = gpu::block_idx_x() * TN + 4 * cg;
    let row0 = gpu::block_idx_y() * MR;
    let (a_vec, b_vec) = (rows_aligned16(a, lda), rows_aligned16(b, ldb));
    let mut acc = [[0.0f32; 4]; MR as usize];
    let mut k0 = UK * g;
    while k0 < k {
        let mut bv = [[0.0f32; 4]; UK as usize];
        crate::unroll!(4, u, {
            bv[u] = ld4_any(b, ldb, k, n, k0 + u as u32, col, b_vec);
        });
        crate::unroll!(4, i, {
            // A[row0 + i][k0 .. k0 + 4]: UK = 4 consecutive k.
            let av = ld4_any(a, lda, m, k, row0 + i as u32, k0, a_vec);
            crate::unroll!(4, u, {
                crate::unroll!(4, j, {
                    acc[i][j] = gpu::fma(av[u], bv[u][j], acc[i][j]);
                });
            });
        });
        k0 += UK * KG;
    }
    // Partials: [g][i][TN], then one thread per C element sums the KG groups in order.
    let s = gpu::dynamic_shared_base();
    crate::unroll!(4, i, {
        gpu::st_shared_f32x4(f32_addr(s, (g * MR + i as u32) * TN + 4 * cg), acc[i]);
    });
    gpu::sync_threads();
    if t < MR * TN {
        let (i, cl) = (t / TN, t % TN);
        let mut sum = 0.0f32;
        let mut q = 0;
        while q < KG {
            sum += f32::ld_shared(f32_addr(s, (q * MR + i) * TN + cl));
            q += 1;
        }
        epilogue(
            c,
            ldc,
            m,
            n,
            row0 + i,
            gpu::block_idx_x() * TN + cl,
            sum,
            alpha,
            beta,
        );
    }
}
crate::entry_points! {
    pub const SYMBOLS;
    fn sgemm_small_m(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, lda: u32, ldb: u32, ldc: u32, alpha: f32, beta: f32);
    sgemm_small_m_f32 => (F32, F32, Any) [];
}
