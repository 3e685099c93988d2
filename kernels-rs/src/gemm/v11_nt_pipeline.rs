//! Multi-stage `cp.async` pipeline on a pre-transposed A ("NT" layout).
//!
//! `v08`–`v09` must pass A through registers to transpose it into `Aᵀ` in shared memory, so a
//! deeper pipeline costs registers (BK 16 with two stages: 137, one block per SM). Here the
//! dispatcher first writes `Aᵀ` (K × M) with rustile's own sector-aligned transpose (two memory
//! passes: ~1 % of a 4096³ product), and then both operands are k-major rows: every 16-byte chunk
//! of a tile goes global → shared with `cp.async`, no registers, in a `STAGES`-deep ring with
//! one barrier per k-tile. The compute is `v08`'s: 64×32 warp tiles, 8×8 per lane, conflict-free
//! 16-byte fragment loads.
//!
//! Contract (differs from the ladder's): `a` is **Aᵀ**, K rows of `lda ≥ M` floats, `lda` and
//! `ldb` multiples of 4, both 16-byte aligned. Not in the registry's ladder (its validation
//! passes A untransposed); `tests/sim.rs` validates it and the dispatcher launches it.
//! Shared: 3 stages × 16.6 KiB.

use super::v08_warptile::{PAD, THREADS, TILE, WARP_TILE};
use super::{at, epilogue, f32_addr};
use crate::gpu;

/// K step.
pub const BK: u32 = 16;
/// Ring depth.
pub const STAGES: u32 = 3;
/// Aᵀ tile row pitch, floats.
pub const PITCH_A: u32 = TILE.0 + PAD;
/// Shared bytes of the ring.
pub const SHARED_BYTES: usize = (STAGES * (BK * PITCH_A + BK * TILE.1) * 4) as usize;
/// Block shape.
pub const BLOCK: (u32, u32, u32) = (THREADS, 1, 1);

#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn sgemm_nt_pipeline(
    at_: *const f32,
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
    nt_pipeline::<false>(at_, b, c, m, n, k, lda, ldb, ldc, alpha, beta)
}

/// The body. `SPLIT_K`: block z sums its slice of K and writes a partial product to slice z of
/// the workspace `c` (`z · m · ldc` onwards); `split_k::reduce` adds the slices.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn nt_pipeline<const SPLIT_K: bool>(
    at_: *const f32,
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
    let (k_begin, k, c) = if SPLIT_K {
        let (z, nz) = (gpu::block_idx_z(), gpu::grid_dim_z());
        let chunk = k.div_ceil(nz).div_ceil(BK) * BK;
        let begin = (z * chunk).min(k);
        (
            begin,
            (begin + chunk).min(k),
            c.add(z as usize * m as usize * ldc as usize),
        )
    } else {
        (0, k, c)
    };
    let (row0, col0) = (gpu::block_idx_y() * TILE.0, gpu::block_idx_x() * TILE.1);
    let acc = nt_tile(at_, b, m, n, k_begin, k, lda, ldb, row0, col0);
    let mut i = 0;
    while i < 8 {
        let mut j = 0;
        while j < 8 {
            let (r, col) = lane_pos(i as u32, j as u32);
            epilogue(
                c,
                ldc,
                m,
                n,
                row0 + r,
                col0 + col,
                acc[i][j],
                alpha,
                beta,
            );
            j += 1;
        }
        i += 1;
    }
}

/// Where this thread's accumulator `(i, j)` (0..8 each) sits in the 128 × 128 tile: 64 × 32
/// warp tiles, each lane two 4 × 4 blocks per direction, half a warp tile apart.
#[inline(always)]
pub(crate) fn lane_pos(i: u32, j: u32) -> (u32, u32) {
    let t = gpu::thread_idx_x();
    let (warp, lane) = (t / 32, t % 32);
    let warps_n = TILE.1 / WARP_TILE.1;
    let (wrow0, wcol0) = (
        (warp / warps_n) * WARP_TILE.0,
        (warp % warps_n) * WARP_TILE.1,
    );
    let (lr, lc) = (lane / 4, lane % 4);
    (
        wrow0 + (i / 4) * (WARP_TILE.0 / 2) + lr * 4 + i % 4,
        wcol0 + (j / 4) * (WARP_TILE.1 / 2) + lc * 4 + j % 4,
    )
}

/// The 128 × 128 tile of `Aᵀᵀ·B` at `(row0, col0)` over `k_begin..k_end` (a multiple of [`BK`]
/// apart except at K's end), this thread's 8 × 8 share ([`lane_pos`]): the `STAGES`-deep
/// `cp.async` ring, one barrier per k-tile. Starts with a barrier, so a block may run it for
/// several tiles in a row (the stream-K kernel) without one tile's copies landing in a stage
/// another warp is still reading; ends with this thread's copies drained.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(crate) unsafe fn nt_tile(
    at_: *const f32,
    b: *const f32,
    m: u32,
    n: u32,
    k_begin: u32,
    k: u32,
    lda: u32,
    ldb: u32,
    row0: u32,
    col0: u32,
) -> [[f32; 8]; 8] {
    let stage_bytes = (BK * PITCH_A + BK * TILE.1) * 4;
    let t = gpu::thread_idx_x();
    let (lr0, lc0) = lane_pos(0, 0);
    let (lr4, lc4) = lane_pos(4, 4);
    let base = gpu::dynamic_shared_base();
    let a_s = |s: u32| base + s * stage_bytes; // (BK, BM + PAD)
    let b_s = |s: u32| base + s * stage_bytes + BK * PITCH_A * 4; // (BK, BN)
    let tiles = (k - k_begin).div_ceil(BK);
    // Chunks per operand per k-tile: BK · 128 / 4 = 512, two per thread.
    const CHUNKS: u32 = BK * TILE.0 / 4 / THREADS;

    // Starts copying k-tile `tile` into stage `s`, every chunk with `cp.async`: the bytes of a
    // chunk inside K × M (or K × N), zero-filled past its edge. (A synchronous zero-padded
    // load at the edges stalled the warp — and at the next barrier the block — for a memory
    // latency every k-tile: 1531³, whose edge tiles are 23 of 144, took 268 µs against 1536³'s
    // 213 with the same tiles and k-tiles.)
    let issue = |tile: u32, s: u32| {
        if tile < tiles {
            let kt = k_begin + tile * BK;
            let mut l = 0;
            while l < CHUNKS {
                let idx = t + l * THREADS;
                let (kk, x) = (idx / (TILE.0 / 4), (idx % (TILE.0 / 4)) * 4);
                let (row, ca, cb) = (kt + kk, row0 + x, col0 + x);
                let a_bytes = chunk_bytes(row, k, ca, m);
                let src_a = if a_bytes > 0 { at(at_, lda, row, ca) } else { at_ };
                gpu::cp_async_16_zfill(
                    f32_addr(a_s(s), kk * PITCH_A + x),
                    src_a as *const gpu::Vec16,
                    a_bytes,
                );
                let b_bytes = chunk_bytes(row, k, cb, n);
                let src_b = if b_bytes > 0 { at(b, ldb, row, cb) } else { b };
                gpu::cp_async_16_zfill(
                    f32_addr(b_s(s), kk * TILE.1 + x),
                    src_b as *const gpu::Vec16,
                    b_bytes,
                );
                l += 1;
            }
        }
        // Always commit, so that group counting stays one group per k-tile.
        gpu::cp_async_commit();
    };

    // Every warp is done reading the stages of a previous tile before any copy lands.
    gpu::sync_threads();
    let mut acc = [[0.0f32; 8]; 8];
    let mut s = 0;
    while s < STAGES - 1 {
        issue(s, s);
        s += 1;
    }
    let mut tile = 0;
    while tile < tiles {
        gpu::cp_async_wait::<{ STAGES - 2 }>(); // this thread's copies of `tile` have landed
        gpu::sync_threads(); // everyone's have; and everyone finished reading tile − 1's stage
        issue(tile + STAGES - 1, (tile + STAGES - 1) % STAGES);
        let st = tile % STAGES;
        let mut d = 0;
        while d < BK {
            let m_lo = gpu::ld_shared_f32x4(f32_addr(a_s(st), d * PITCH_A + lr0));
            let m_hi = gpu::ld_shared_f32x4(f32_addr(a_s(st), d * PITCH_A + lr4));
            let n_lo = gpu::ld_shared_f32x4(f32_addr(b_s(st), d * TILE.1 + lc0));
            let n_hi = gpu::ld_shared_f32x4(f32_addr(b_s(st), d * TILE.1 + lc4));
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
        tile += 1;
    }
    gpu::cp_async_wait::<0>();
    acc
}

/// Bytes of the four floats at `(row, col)` that lie inside `rows × cols`: 16, fewer at the
/// right edge, 0 past either edge.
#[inline(always)]
fn chunk_bytes(row: u32, rows: u32, col: u32, cols: u32) -> u32 {
    if row < rows && col < cols {
        (cols - col).min(4) * 4
    } else {
        0
    }
}

/// Split-K entry (the `nt_pipeline` body with `SPLIT_K = true`).
pub mod split_k {
    /// Registry record (a helper of the SGEMM dispatcher): the NT pipeline over one K slice.
    pub const INFO: crate::registry::KernelInfo = crate::registry::KernelInfo {
        name: "nt_pipeline_splitk",
        symbols: SYMBOLS,
        about: "v11's NT pipeline over one K slice per blockIdx.z, partials to a workspace",
        ..super::INFO
    };

    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    unsafe fn sgemm_nt_pipeline_splitk(
        at_: *const f32,
        b: *const f32,
        ws: *mut f32,
        m: u32,
        n: u32,
        k: u32,
        lda: u32,
        ldb: u32,
        ldw: u32,
        alpha: f32,
        beta: f32,
    ) {
        super::nt_pipeline::<true>(at_, b, ws, m, n, k, lda, ldb, ldw, alpha, beta)
    }
    crate::entry_points! {
        pub const SYMBOLS;
        fn sgemm_nt_pipeline_splitk(at_: *const f32, b: *const f32, ws: *mut f32, m: u32, n: u32, k: u32, lda: u32, ldb: u32, ldw: u32, alpha: f32, beta: f32);
        sgemm_nt_pipeline_splitk_f32 => (F32, F32, Any) [];
    }
}
crate::entry_points! {
    pub const SYMBOLS;
    fn sgemm_nt_pipeline(at_: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, lda: u32, ldb: u32, ldc: u32, alpha: f32, beta: f32);
    sgemm_nt_pipeline_f32 => (F32, F32, Any) [];
}

/// Launch description (not part of the registry's ladder: its `a` is Aᵀ).
pub const INFO: crate::registry::KernelInfo = crate::registry::KernelInfo {
    family: crate::registry::Family::Gemm,
    name: "nt_pipeline",
    block: BLOCK,
    launch: crate::registry::Launch::Tiles {
        tile: TILE,
        halo_rows: 0,
    },
    shared_bytes_f32: SHARED_BYTES,
    shared_bytes_f16: 0,
    symbols: SYMBOLS,
    about: "3-stage cp.async ring on a pre-transposed A, v08's warp tile",
    role: crate::registry::Role::Helper,
    needs: crate::registry::Needs::ALIGN16,
    ..crate::registry::KernelInfo::BASE
};
