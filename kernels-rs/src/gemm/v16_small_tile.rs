//! Small and odd products in one launch: a 64 × 64 tile, any pitch, split-K over the grid's z.
//!
//! **Why.** Off the big squares the dispatcher's kernels lose to their own set-up: the 128-row
//! tiles need 16-byte rows (unaligned operands are first copied into padded scratch, two more
//! launches), and at 777×1234×555 the 128 × 64 tile gives 140 blocks for 132 SMs (a second
//! wave of 8); 256³ and 512³ ran as transpose + split GEMM + reduction. Here a block owns a
//! 64 × 64 tile of C with 256 threads (4 × 4 outputs each, up to four blocks per SM), reads the
//! caller's operands in place (16-byte loads where a matrix's rows are 16-byte aligned,
//! checked at run time, masked scalar loads otherwise), and stages the next k-tile in registers
//! while the current one is multiplied from shared memory (two stages, one barrier per k-tile).
//!
//! **Split-K**: block z of `nz` takes the z-th slice of K (slices rounded to the k-tile) and,
//! when `nz > 1`, writes its partial product into slice z of a workspace (`c + z·m·ldc`, the
//! host passes α = 1, β = 0); `v08_warptile::split_k::reduce` adds the slices in order
//! (deterministic). The grids 256³ (16 tiles) and 512³ (64 tiles) need it to fill the SMs.
//!
//! **Shared memory**: per stage Aᵀ `[16][64 + 4]` (k-major, so a thread's 4 rows are one
//! 16-byte load) and B `[16][64 + 4]`: 17 KiB for two stages. Per k-step a thread issues two
//! `ld.shared.v4` for 16 FMAs. A's transposing stores are 2-way conflicted (4 per thread per
//! k-tile, against 32 conflict-free 16-byte loads).

use super::{epilogue4, ld4_any, rows_aligned16};
use crate::gpu::{self, Elem};
use crate::registry::{Family, KernelInfo, Launch};

/// C tile per block, `(rows, cols)`.
pub const TILE: (u32, u32) = (64, 64);
/// K-tile depth.
pub const BK: u32 = 16;
/// Threads per block: 16 × 16, 4 × 4 outputs each.
pub const THREADS: u32 = 256;
/// Row pitch (floats) of both shared tiles: 16-byte rows, A's transposing stores at most
/// 2-way conflicted.
const PITCH: u32 = TILE.0 + 4;
/// Bytes of one stage: Aᵀ then B.
const STAGE_BYTES: u32 = 2 * BK * PITCH * 4;

/// Registry entry.
pub const INFO: KernelInfo = KernelInfo {
    family: Family::Gemm,
    name: "small_tile",
    block: (THREADS, 1, 1),
    launch: Launch::Tiles {
        tile: TILE,
        halo_rows: 0,
    },
    shared_bytes_f32: (2 * STAGE_BYTES) as usize,
    shared_bytes_f16: 0,
    symbols: SYMBOLS,
    about: "64x64 tile, 4x4 per thread, any pitch, register-staged double buffer, split-K over z",
    bounds: Some((THREADS, 4)),
    ..KernelInfo::BASE
};

#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn sgemm_small_tile(
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
    let (ty, tx) = (t / 16, t % 16);
    let (row0, col0) = (gpu::block_idx_y() * TILE.0, gpu::block_idx_x() * TILE.1);
    // Split-K: this block's slice [kb, ke) of K; slice z of the workspace when split.
    let (z, nz) = (gpu::block_idx_z(), gpu::grid_dim_z());
    let chunk = k.div_ceil(nz).div_ceil(BK) * BK;
    let kb = (z * chunk).min(k);
    let ke = (kb + chunk).min(k);
    let c = if nz > 1 {
        c.add(z as usize * m as usize * ldc as usize)
    } else {
        c
    };
    // This thread's loads: A row `t / 4`, k `4·(t % 4) .. + 4`; B row (k) `t / 16`, columns
    // `4·(t % 16) .. + 4`. Masked at the slice's end `ke`, not at K (a slice must not add its
    // neighbour's products).
    let (a_row, a_k) = (row0 + t / 4, 4 * (t % 4));
    let (b_k, b_col) = (t / 16, col0 + 4 * (t % 16));
    let a_vec = rows_aligned16(a, lda);
    let b_vec = rows_aligned16(b, ldb);
    let load = |kt: u32| {
        (
            ld4_any(a, lda, m, ke, a_row, kt + a_k, a_vec),
            ld4_any(b, ldb, ke, n, kt + b_k, b_col, b_vec),
        )
    };
    let base = gpu::dynamic_shared_base();
    let store = |stage: u32, (av, bv): ([f32; 4], [f32; 4])| {
        let s = base + stage * STAGE_BYTES;
        crate::unroll!(4, e, {
            f32::st_shared(s + ((a_k + e as u32) * PITCH + t / 4) * 4, av[e]);
        });
        gpu::st_shared_f32x4(s + (BK * PITCH + b_k * PITCH + 4 * (t % 16)) * 4, bv);
    };

    let mut acc = [[0.0f32; 4]; 4];
    let mut cur = 0u32;
    if kb < ke {
        store(0, load(kb));
    }
    gpu::sync_threads();
    let mut kt = kb;
    while kt < ke {
        let next = kt + BK;
        let staged = if next < ke {
            Some(load(next))
        } else {
            None
        };
        let s = base + cur * STAGE_BYTES;
        crate::unroll!(16, d, {
            let fa = gpu::ld_shared_f32x4(s + (d as u32 * PITCH + 4 * ty) * 4);
            let fb = gpu::ld_shared_f32x4(s + (BK * PITCH + d as u32 * PITCH + 4 * tx) * 4);
            crate::unroll!(4, i, {
                crate::unroll!(4, j, {
                    acc[i][j] = gpu::fma(fa[i], fb[j], acc[i][j]);
                });
            });
        });
        if let Some(v) = staged {
            store(cur ^ 1, v);
        }
        gpu::sync_threads();
        cur ^= 1;
        kt = next;
    }
    let c_vec = rows_aligned16(c as *const f32, ldc);
    crate::unroll!(4, i, {
        epilogue4(
            c,
            ldc,
            m,
            n,
            row0 + 4 * ty + i as u32,
            col0 + 4 * tx,
            acc[i],
            alpha,
            beta,
            c_vec,
        );
    });
}

crate::entry_points! {
    pub const SYMBOLS;
    fn sgemm_small_tile(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, lda: u32, ldb: u32, ldc: u32, alpha: f32, beta: f32);
    sgemm_small_tile_f32 => (F32, F32, Any) [];
}
