//! Small-problem SGEMM: a `cp.async` ring on row-major A (no transpose launch) and `KG` groups
//! of warps that split each k-tile between them inside the block (intra-block split-K).
//!
//! Why: at 1000³ the 128×128 tile gives 64 blocks for 132 SMs, and `v10`'s 128×64 tile (128
//! blocks, one per SM) leaves each SM with 4 warps and no overlap of loads with compute (single
//! stage, register staging): 0.556× cuBLAS. Here the block tile is still 128×64 (128 blocks at
//! 1000³: one per SM, no second wave), but
//! - the operands are copied global → shared by `cp.async` in a `STAGES`-deep ring, one barrier
//!   per k-tile, so loads run two k-tiles ahead of the FMAs;
//! - the k-tile is `16·KG` deep and `KG` groups of 4 warps each take 16 of it, so an SM holds
//!   `4·KG` warps on one tile (latency hiding) without shrinking the per-lane 8×8 block (4 shared
//!   loads per 64 FMAs). After the last k-tile the groups add their partial tiles through
//!   shared memory (over the idle ring) and the block writes C with coalesced stores;
//! - A is read row-major: a lane's 8 rows are `lr + 8·i` of its 64×32 warp tile, and one
//!   16-byte shared load gives one row's 4 consecutive k, so 8 loads feed 4 k-steps (the same
//!   2 A loads per k as a k-major Aᵀ tile). The A tile's row pitch is `16·KG + 4` floats (a
//!   multiple of 4 whose quarter is odd), so the 8 rows of one load fall in 8 different bank
//!   quads: conflict-free. No transposed copy of A is needed, so there is no extra launch.
//!
//! Ladder entry: `KG` = 2 (8 warps, 256 threads, k-tile 32), 168 registers, no spills. Shared:
//! 3 stages × (128·36 + 32·64)·4 B = 78 KiB (one block per SM; the 2 × 128 × 68 floats of
//! partial tiles, 68 KiB, reuse it). Arithmetic intensity per k-tile: 128·64·32 FMAs per
//! (128 + 64)·32 floats = 42.7 FMAs per float loaded; the ~8 MB a 1000³ product reads from DRAM
//! take 2 µs, so the bound is the FMA issue rate of one 128×64 tile per SM: 128·64·1000 FMAs /
//! 128 lanes / 1.98 GHz = 32 µs, against cuBLAS's 62 µs.
//!
//! Measured (H200, `bench-results/2026-11-30-h200-sgemm-1000/`): 1000³ 27.5 TFLOP/s = 0.86×
//! cuBLAS (73 µs; v10: 0.55×), 1024³ 0.92×, 768³ 0.70×, 512³ 0.45× (the dispatcher keeps NT
//! split-K there, 0.51×). One k-group (`kgroup_ring_kg1`, 4 warps): 0.77× at 1000³; four
//! (`kgroup_ring_kg4`, 16 warps; needs 2-k A loads and contiguous copies to fit 128 registers):
//! 0.81×. Same contract as the ladder (row-major A, `lda`, `ldb` multiples of 4, A and B 16-byte
//! aligned).

use super::{at, epilogue, f32_addr, ld4_or_zero};
use crate::gpu::{self, Elem};
use crate::registry::{Family, KernelInfo, Launch, Role};

/// C tile per block, `(BM, BN)`.
pub const TILE: (u32, u32) = (128, 64);
/// Warp tile `(WM, WN)`: 8×8 per lane.
const WARP_TILE: (u32, u32) = (64, 32);
/// Warps per k-group.
const GROUP_WARPS: u32 = (TILE.0 / WARP_TILE.0) * (TILE.1 / WARP_TILE.1);
/// K rows each group takes of every k-tile.
const KSTEP: u32 = 16;
/// Ring depth.
pub const STAGES: u32 = 3;
/// Threads per block for `kg` groups.
pub const fn threads(kg: u32) -> u32 {
    32 * GROUP_WARPS * kg
}
/// K-tile depth for `kg` groups.
const fn bk(kg: u32) -> u32 {
    KSTEP * kg
}
/// A tile row pitch, floats: a multiple of 4 with an odd quarter (conflict-free row loads).
const fn pitch_a(kg: u32) -> u32 {
    bk(kg) + 4
}
/// Row pitch of the partial tiles the groups add, floats.
const PITCH_RED: u32 = TILE.1 + 4;
/// Bytes of one ring stage.
const fn stage_bytes(kg: u32) -> u32 {
    (TILE.0 * pitch_a(kg) + bk(kg) * TILE.1) * 4
}
/// Dynamic shared bytes: the ring, or the groups' partial tiles if larger (they reuse it).
pub const fn shared_bytes(kg: u32) -> usize {
    let ring = STAGES * stage_bytes(kg);
    let red = if kg > 1 {
        kg * TILE.0 * PITCH_RED * 4
    } else {
        0
    };
    (if ring > red { ring } else { red }) as usize
}

/// Loads two f32 from 8-byte-aligned shared memory (`ld.shared.v2.f32`).
///
/// # Safety
/// `addr .. addr + 8` inside the launch's shared memory, 8-byte aligned.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
unsafe fn ld_shared_f32x2(addr: u32) -> [f32; 2] {
    #[cfg(target_arch = "nvptx64")]
    {
        let (x, y): (f32, f32);
        core::arch::asm!(
            "ld.shared.v2.f32 {{{x}, {y}}}, [{p}];",
            x = out(reg32) x, y = out(reg32) y,
            p = in(reg32) addr,
            options(readonly, nostack, preserves_flags)
        );
        [x, y]
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let b = gpu::host::current().load(
            gpu::host::Space::Shared,
            addr as u64,
            8,
            core::panic::Location::caller(),
        );
        [
            f32::from_le_bytes([b[0], b[1], b[2], b[3]]),
            f32::from_le_bytes([b[4], b[5], b[6], b[7]]),
        ]
    }
}

/// The body for `KG` k-groups; each A fragment load covers `AV` (4 or 2) consecutive k: 4
/// halves the A load instructions, 2 keeps 16 fewer registers live (what 16 warps need to stay
/// within 128 registers).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn kgroup_ring<const KG: u32, const AV: u32, const CONTIG: bool>(
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
    let nthreads = threads(KG);
    let bk = bk(KG);
    let pa = pitch_a(KG);
    let sb = stage_bytes(KG);
    let t = gpu::thread_idx_x();
    let (warp, lane) = (t / 32, t % 32);
    let group = warp / GROUP_WARPS;
    let wi = warp % GROUP_WARPS;
    let warps_n = TILE.1 / WARP_TILE.1;
    let (wrow0, wcol0) = ((wi / warps_n) * WARP_TILE.0, (wi % warps_n) * WARP_TILE.1);
    let (row0, col0) = (gpu::block_idx_y() * TILE.0, gpu::block_idx_x() * TILE.1);
    let (lr, lc) = (lane / 4, lane % 4);
    // Row i / column j of the lane's 8×8 block within its warp tile.
    let lane_row = |i: u32| lr + 8 * i;
    let lane_col = |j: u32| (j / 4) * (WARP_TILE.1 / 2) + lc * 4 + j % 4;
    let base = gpu::dynamic_shared_base();
    let a_s = |s: u32| base + s * sb; // (BM, BK + 4), row-major
    let b_s = |s: u32| base + s * sb + TILE.0 * pa * 4; // (BK, BN)
    let tiles = k.div_ceil(bk);
    // 16-byte chunks per thread per k-tile: A 128·BK/4, B BK·64/4.
    let chunks_a = TILE.0 * bk / 4 / nthreads;
    let chunks_b = bk * TILE.1 / 4 / nthreads;

    // Starts the copies of k-tile `tile` into stage `s` (cp.async where all 16 bytes are in
    // range, zero-padded synchronous stores at the edges) and commits one group, always.
    let issue = |tile: u32, s: u32| {
        if tile < tiles {
            let kt = tile * bk;
            // CONTIG: a thread's chunks are consecutive in one row (one pointer and immediate
            // offsets: fewer registers); else consecutive threads take consecutive chunks (each
            // copy instruction of a warp covers whole 32-byte sectors: faster, measured).
            let mut l = 0;
            while l < chunks_a {
                let idx = if CONTIG {
                    t * chunks_a + l
                } else {
                    t + l * nthreads
                };
                let (r, x) = (idx / (bk / 4), (idx % (bk / 4)) * 4);
                let (row, col) = (row0 + r, kt + x);
                let dst = f32_addr(a_s(s), r * pa + x);
                if row < m && col + 3 < k {
                    gpu::cp_async_16(dst, at(a, lda, row, col) as *const gpu::Vec16);
                } else {
                    gpu::st_shared_f32x4(dst, ld4_or_zero(a, lda, m, k, row, col));
                }
                l += 1;
            }
            let mut l = 0;
            while l < chunks_b {
                let idx = if CONTIG {
                    t * chunks_b + l
                } else {
                    t + l * nthreads
                };
                let (kk, x) = (idx / (TILE.1 / 4), (idx % (TILE.1 / 4)) * 4);
                let (row, col) = (kt + kk, col0 + x);
                let dst = f32_addr(b_s(s), kk * TILE.1 + x);
                if row < k && col + 3 < n {
                    gpu::cp_async_16(dst, at(b, ldb, row, col) as *const gpu::Vec16);
                } else {
                    gpu::st_shared_f32x4(dst, ld4_or_zero(b, ldb, k, n, row, col));
                }
                l += 1;
            }
        }
        gpu::cp_async_commit();
    };

    let mut acc = [[0.0f32; 8]; 8];
    let mut s = 0;
    while s < STAGES - 1 {
        issue(s, s);
        s += 1;
    }
    let kg0 = group * KSTEP; // this group's rows of every k-tile
    let mut tile = 0;
    while tile < tiles {
        gpu::cp_async_wait::<{ STAGES - 2 }>(); // this thread's copies of `tile` have landed
        gpu::sync_threads(); // everyone's have; everyone is done with tile − 1's stage
        issue(tile + STAGES - 1, (tile + STAGES - 1) % STAGES);
        let st = tile % STAGES;
        let mut d4 = 0;
        while d4 < KSTEP {
            // Rows lr + 8i, k = kg0 + d4 .. + AV: 8 conflict-free loads.
            let mut fa = [[0.0f32; 4]; 8];
            let mut i = 0;
            while i < 8 {
                let addr = f32_addr(a_s(st), (wrow0 + lane_row(i as u32)) * pa + kg0 + d4);
                fa[i] = if AV == 4 {
                    gpu::ld_shared_f32x4(addr)
                } else if AV == 2 {
                    let [x, y] = ld_shared_f32x2(addr);
                    [x, y, 0.0, 0.0]
                } else {
                    [f32::ld_shared(addr), 0.0, 0.0, 0.0]
                };
                i += 1;
            }
            let mut dd = 0;
            while dd < AV as usize {
                let kr = kg0 + d4 + dd as u32;
                let n_lo =
                    gpu::ld_shared_f32x4(f32_addr(b_s(st), kr * TILE.1 + wcol0 + lane_col(0)));
                let n_hi =
                    gpu::ld_shared_f32x4(f32_addr(b_s(st), kr * TILE.1 + wcol0 + lane_col(4)));
                let fb = [
                    n_lo[0], n_lo[1], n_lo[2], n_lo[3], n_hi[0], n_hi[1], n_hi[2], n_hi[3],
                ];
                let mut i = 0;
                while i < 8 {
                    let mut j = 0;
                    while j < 8 {
                        acc[i][j] = gpu::fma(fa[i][dd], fb[j], acc[i][j]);
                        j += 1;
                    }
                    i += 1;
                }
                dd += 1;
            }
            d4 += AV;
        }
        tile += 1;
    }
    gpu::cp_async_wait::<0>();

    if KG == 1 {
        let mut i = 0;
        while i < 8 {
            let r = row0 + wrow0 + lane_row(i as u32);
            let mut j = 0;
            while j < 8 {
                let col = col0 + wcol0 + lane_col(j as u32);
                epilogue(c, ldc, m, n, r, col, acc[i][j], alpha, beta);
                j += 1;
            }
            i += 1;
        }
        return;
    }

    // The groups' partial tiles, (KG, BM, BN + 4), over the (now idle) ring.
    gpu::sync_threads();
    let red = |g: u32, r: u32, col: u32| f32_addr(base, (g * TILE.0 + r) * PITCH_RED + col);
    let mut i = 0;
    while i < 8 {
        let r = wrow0 + lane_row(i as u32);
        let row = &acc[i];
        gpu::st_shared_f32x4(
            red(group, r, wcol0 + lane_col(0)),
            [row[0], row[1], row[2], row[3]],
        );
        gpu::st_shared_f32x4(
            red(group, r, wcol0 + lane_col(4)),
            [row[4], row[5], row[6], row[7]],
        );
        i += 1;
    }
    gpu::sync_threads();
    // Every thread adds 4-float chunks of the tile over the groups: consecutive threads take
    // consecutive chunks of a row, so the stores to C are coalesced.
    let chunks = TILE.0 * TILE.1 / 4 / nthreads;
    let mut l = 0;
    while l < chunks {
        let idx = t + l * nthreads;
        let (r, x) = (idx / (TILE.1 / 4), (idx % (TILE.1 / 4)) * 4);
        let mut sum = gpu::ld_shared_f32x4(red(0, r, x));
        let mut g = 1;
        while g < KG {
            let p = gpu::ld_shared_f32x4(red(g, r, x));
            let mut q = 0;
            while q < 4 {
                sum[q] += p[q];
                q += 1;
            }
            g += 1;
        }
        let mut q = 0;
        while q < 4 {
            epilogue(
                c,
                ldc,
                m,
                n,
                row0 + r,
                col0 + x + q as u32,
                sum[q],
                alpha,
                beta,
            );
            q += 1;
        }
        l += 1;
    }
}

/// Two k-groups (8 warps, k-tile 32): the ladder's entry.
pub const KG: u32 = 2;

/// Registry entry.
pub const INFO: KernelInfo = KernelInfo {
    family: Family::Gemm,
    name: "kgroup_ring",
    block: (threads(KG), 1, 1),
    launch: Launch::Tiles {
        tile: TILE,
        halo_rows: 0,
    },
    shared_bytes_f32: shared_bytes(KG),
    shared_bytes_f16: 0,
    symbols: SYMBOLS,
    about: "128x64 tile, 3-stage cp.async ring on row-major A, 2 k-groups of 4 warps",
    bounds: Some((256, 1)),
    needs: crate::registry::Needs::ALIGN16,
    ..KernelInfo::BASE
};

#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn sgemm_kgroup_ring(
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
    kgroup_ring::<KG, 4, false>(a, b, c, m, n, k, lda, ldb, ldc, alpha, beta)
}
crate::entry_points! {
    pub const SYMBOLS;
    fn sgemm_kgroup_ring(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, lda: u32, ldb: u32, ldc: u32, alpha: f32, beta: f32);
    sgemm_kgroup_ring_f32 => (F32, F32, Any) [];
}

/// The same body with one and with four k-groups (`rustile bench gemm --variants`).
pub mod experiments {
    use super::*;

    /// One group: 4 warps, k-tile 16.
    pub const INFO_KG1: KernelInfo = KernelInfo {
        name: "kgroup_ring_kg1",
        block: (threads(1), 1, 1),
        shared_bytes_f32: shared_bytes(1),
        symbols: kg1::SYMBOLS,
        role: Role::Experiment,
        bounds: Some((128, 1)),
        about: "kgroup_ring with one k-group (4 warps)",
        ..INFO
    };
    /// Four groups: 16 warps, k-tile 64. 512 threads leave 128 registers each: A is loaded 2 k
    /// at a time and each thread's copies are contiguous, or ptxas spills.
    pub const INFO_KG4: KernelInfo = KernelInfo {
        name: "kgroup_ring_kg4",
        block: (threads(4), 1, 1),
        shared_bytes_f32: shared_bytes(4),
        symbols: kg4::SYMBOLS,
        role: Role::Experiment,
        bounds: Some((512, 1)),
        about: "kgroup_ring with four k-groups (16 warps)",
        ..INFO
    };

    /// One k-group.
    pub mod kg1 {
        #[allow(clippy::too_many_arguments)]
        #[inline(always)]
        unsafe fn sgemm_kgroup_ring_kg1(
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
            super::super::kgroup_ring::<1, 4, false>(a, b, c, m, n, k, lda, ldb, ldc, alpha, beta)
        }
        crate::entry_points! {
            pub const SYMBOLS;
            fn sgemm_kgroup_ring_kg1(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, lda: u32, ldb: u32, ldc: u32, alpha: f32, beta: f32);
            sgemm_kgroup_ring_kg1_f32 => (F32, F32, Any) [];
        }
    }

    /// Four k-groups.
    pub mod kg4 {
        #[allow(clippy::too_many_arguments)]
        #[inline(always)]
        unsafe fn sgemm_kgroup_ring_kg4(
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
            super::super::kgroup_ring::<4, 2, true>(a, b, c, m, n, k, lda, ldb, ldc, alpha, beta)
        }
        crate::entry_points! {
            pub const SYMBOLS;
            fn sgemm_kgroup_ring_kg4(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, lda: u32, ldb: u32, ldc: u32, alpha: f32, beta: f32);
            sgemm_kgroup_ring_kg4_f32 => (F32, F32, Any) [];
        }
    }
}
