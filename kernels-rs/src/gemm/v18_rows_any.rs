//! One wave of 64 × 128 tiles on the caller's operands, at any pitch: no padding or transpose
//! launch.
//!
//! **Why.** Products with fewer 128 × 128 tiles than SMs (777 × 1234 × 555: 70 tiles on 132
//! SMs) leave half the machine idle under the NT pipeline; stream-K fills it but pays three
//! extra launches (Aᵀ, B padded, the fix-up: 16 µs of 58 there, session 16) and the 64 × 64
//! small tile runs at a third of the FMA rate (4 × 4 per thread). Here a block owns a 64 × 128
//! tile (777 × 1234 has 13 × 10 = 130: one wave on 132 SMs) with the NT pipeline's per-thread
//! 8 × 8 block, 64 × 32 warp tiles and 3-stage `cp.async` ring
//! (`v11_nt_pipeline::nt_tile_with`), and copies A row-major and B at any pitch float
//! by float: each 4-byte `cp.async` writes its float to its transposed place in the Aᵀ stage, so
//! A is never transposed in memory, and unaligned rows need no padded copy. 24 copies per
//! thread per k-tile against 1024 FMAs, their addresses one add each from pointers clamped
//! inside the operands (only K's last, partial k-tile checks every copy).
//!
//! **Two k-groups.** With one tile per SM, 4 warps would leave one warp per scheduler, every
//! shared-load latency exposed. The block has 256 threads: two groups of four warps, each
//! taking half the k-tiles in its own ring, adding their sums through shared memory at the end
//! (`experiments::INFO_KG1` is the one-group form, for comparison).
//!
//! Signature and contract as the ladder's (`a` is A, any `lda ≥ k`, `ldb ≥ n`, `ldc ≥ n`, no
//! alignment): grid `⌈N/128⌉ × ⌈M/64⌉`. Shared: two rings of 3 stages × 12.25 KiB.

use super::v11_nt_pipeline::{lane_pos_of, nt_tile_with, shared_bytes};
use super::{epilogue4, rows_aligned16};
use crate::gpu;
use crate::registry::{Family, KernelInfo, Launch, Role};

/// C tile per block, `(rows, cols)`.
pub const TILE: (u32, u32) = (64, 128);
/// K-groups per block.
pub const KG: u32 = 2;
/// Threads per block: `KG` groups of four warps side by side along N, 8 × 8 outputs each.
pub const THREADS: u32 = KG * 2 * TILE.0;

/// Registry entry.
pub const INFO: KernelInfo = KernelInfo {
    family: Family::Gemm,
    name: "rows_any",
    block: (THREADS, 1, 1),
    launch: Launch::Tiles {
        tile: TILE,
        halo_rows: 0,
    },
    shared_bytes_f32: KG as usize * shared_bytes(TILE.0),
    shared_bytes_f16: 0,
    symbols: SYMBOLS,
    about: "64x128 tile, 8x8 per thread, two k-groups, A row-major and B any pitch by 4-byte cp.async",
    bounds: Some((THREADS, 1)),
    ..KernelInfo::BASE
};

/// The body for `G` k-groups.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn rows_any<const G: u32>(
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
    let (row0, col0) = (gpu::block_idx_y() * TILE.0, gpu::block_idx_x() * TILE.1);
    let acc = nt_tile_with::<{ TILE.0 }, G, true, true>(a, b, m, n, 0, k, lda, ldb, row0, col0);
    let t = gpu::thread_idx_x();
    if t >= 2 * TILE.0 {
        return; // group 0 holds the sums
    }
    let c_vec = rows_aligned16(c as *const f32, ldc);
    crate::unroll!(8, i, {
        crate::unroll!(2, h, {
            let (r, col) = lane_pos_of(t, i as u32, 4 * h as u32);
            let j = 4 * h;
            let v = [acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]];
            epilogue4(
                c,
                ldc,
                m,
                n,
                row0 + r,
                col0 + col,
                v,
                alpha,
                beta,
                c_vec,
            );
        });
    });
}

#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn sgemm_rows_any(
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
    rows_any::<KG>(a, b, c, m, n, k, lda, ldb, ldc, alpha, beta)
}

crate::entry_points! {
    pub const SYMBOLS;
    fn sgemm_rows_any(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, lda: u32, ldb: u32, ldc: u32, alpha: f32, beta: f32);
    sgemm_rows_any_f32 => (F32, F32, Any) [];
}

/// Variants kept for measurement.
pub mod experiments {
    use super::*;

    /// One k-group: 4 warps per block.
    pub const INFO_KG1: KernelInfo = KernelInfo {
        name: "rows_any_kg1",
        block: (2 * TILE.0, 1, 1),
        shared_bytes_f32: shared_bytes(TILE.0),
        symbols: kg1::SYMBOLS,
        role: Role::Experiment,
        bounds: Some((2 * TILE.0, 2)),
        about: "rows_any with one k-group (4 warps)",
        ..INFO
    };

    /// One k-group.
    pub mod kg1 {
        #[allow(clippy::too_many_arguments)]
        #[inline(always)]
        unsafe fn sgemm_rows_any_kg1(
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
            super::super::rows_any::<1>(a, b, c, m, n, k, lda, ldb, ldc, alpha, beta)
        }
        crate::entry_points! {
            pub const SYMBOLS;
            fn sgemm_rows_any_kg1(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, lda: u32, ldb: u32, ldc: u32, alpha: f32, beta: f32);
            sgemm_rows_any_kg1_f32 => (F32, F32, Any) [];
        }
    }
}
