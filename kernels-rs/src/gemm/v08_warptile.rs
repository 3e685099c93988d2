//! Warp tiling: the block's 128×128 C tile is split into 8 warp tiles of 64×32, and each lane
//! owns an 8×8 block: rows `32·h + 4·(lane / 4) + 0..4` and columns `16·h + 4·(lane % 4) + 0..4`
//! (`h` = 0, 1) of its warp tile.
//!
//! Per `k` a lane loads 2 A and 2 B chunks of 16 bytes (4 `ld.shared.v4` for 64 FMAs); the 8
//! lanes of a quarter warp read 2 consecutive A chunks and 4 consecutive B chunks, one wavefront
//! each. 4 instructions × 4 wavefronts per 64 FMA-cycles on each of the 4 SM sub-partitions is
//! exactly the shared memory's one wavefront per clock: a 16×4 lane block (5 loads) measured
//! 0.76× cuBLAS, bound by those wavefronts. K step 16: the A tile is loaded with consecutive
//! lanes on consecutive rows, so its transposed store into `Aᵀ` is conflict-free too. The warp
//! tile keeps a warp's shared reads on 64 + 32 values per `k`, where `v07`'s per-thread layout
//! spread a warp over 2 × 8 groups of the whole tile. Needs `lda`, `ldb` multiples of 4 and
//! 16-byte-aligned A, B. Shared: 16.3 KiB per stage.

use super::{at, epilogue, f32_addr, ld4_or_zero};
use crate::gpu::{self, Elem};
use crate::registry::{Family, KernelInfo, Launch, Role};

/// C tile per block, `(BM, BN)`.
pub const TILE: (u32, u32) = (128, 128);
/// K step.
pub const BK: u32 = 16;
/// Warp tile, `(WM, WN)`.
pub const WARP_TILE: (u32, u32) = (64, 32);
/// Threads per block for a block tile `BN` wide: one warp per warp tile.
pub const fn threads(bn: u32) -> u32 {
    32 * (TILE.0 / WARP_TILE.0) * (bn / WARP_TILE.1)
}
/// Threads per block.
pub const THREADS: u32 = threads(TILE.1);
/// Floats of padding per Aᵀ row (keeps rows 16-byte aligned).
pub const PAD: u32 = 4;

/// Shared bytes for `stages` buffers of a `bk` K step and a `bn`-wide tile.
pub const fn shared_bytes(stages: u32, bk: u32, bn: u32) -> usize {
    (stages * (bk * (TILE.0 + PAD) + bk * bn) * 4) as usize
}

/// Registry entry.
pub const INFO: KernelInfo = KernelInfo {
    family: Family::Gemm,
    name: "warptile",
    block: (THREADS, 1, 1),
    launch: Launch::Tiles {
        tile: TILE,
        halo_rows: 0,
    },
    shared_bytes_f32: shared_bytes(1, BK, TILE.1),
    shared_bytes_f16: 0,
    symbols: SYMBOLS,
    about: "128x128x16 block, 64x32 warp tiles, 8x8 per lane",
    needs: crate::registry::Needs::ALIGN16,
    ..KernelInfo::BASE
};

/// Registers a k-tile is staged in: up to 4 vectors of A and of B per thread.
struct Staged {
    a: [[f32; 4]; 4],
    b: [[f32; 4]; 4],
}

/// The warp-tiled body: a `128 × BN` block tile, K step `BK`, `STAGES` (1 or 2) shared
/// buffers. With 2 stages the next k-tile's A is fetched into registers before the current
/// tile is computed and stored to the other buffer after; B goes through registers too, or with
/// `ASYNC_B` straight to the other buffer with `cp.async` (no registers: B rows are not
/// transposed). One barrier per k-tile.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(super) unsafe fn sgemm_warp_tile<
    const STAGES: u32,
    const BK: u32,
    const BN: u32,
    const ASYNC_B: bool,
    const SPLIT_K: bool,
>(
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
    const PITCH_A: u32 = TILE.0 + PAD;
    let nthreads = threads(BN);
    // 16-byte vectors per thread per k-tile.
    let loads_a: u32 = TILE.0 * BK / (4 * nthreads);
    let loads_b: u32 = BK * BN / (4 * nthreads);
    let stage_bytes: u32 = (BK * PITCH_A + BK * BN) * 4;
    let t = gpu::thread_idx_x();
    let (warp, lane) = (t / 32, t % 32);
    let (row0, col0) = (gpu::block_idx_y() * TILE.0, gpu::block_idx_x() * BN);
    // Split-K: block z sums k in [k_begin, k_end) and writes its partial C to slice z of the
    // workspace `c` (z · m · ldc onwards); a reduction kernel adds the slices.
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
    let warps_n = BN / WARP_TILE.1;
    let (wrow0, wcol0) = (
        (warp / warps_n) * WARP_TILE.0,
        (warp % warps_n) * WARP_TILE.1,
    );
    let (lr, lc) = (lane / 4, lane % 4);
    // Row i (column j) of the lane's 8×8 block within the warp tile.
    let lane_row = |i: u32| (i / 4) * (WARP_TILE.0 / 2) + lr * 4 + i % 4;
    let lane_col = |j: u32| (j / 4) * (WARP_TILE.1 / 2) + lc * 4 + j % 4;
    let base = gpu::dynamic_shared_base();
    // (Aᵀ, B) of stage s: Aᵀ (BK, BM + PAD), then B (BK, BN).
    let a_s = |s: u32| base + s * stage_bytes;
    let b_s = |s: u32| base + s * stage_bytes + BK * PITCH_A * 4;
    // This thread's l-th vector of A (row, first k) and of B (k, first column).
    let a_at = |l: u32| {
        let idx = t + l * nthreads;
        (idx % TILE.0, (idx / TILE.0) * 4)
    };
    let b_at = |l: u32| {
        let idx = t + l * nthreads;
        (idx / (BN / 4), (idx % (BN / 4)) * 4)
    };

    let fetch = |kt: u32, s: u32| -> Staged {
        let mut st = Staged {
            a: [[0.0; 4]; 4],
            b: [[0.0; 4]; 4],
        };
        let mut l = 0;
        while l < loads_a {
            let (ar, ak) = a_at(l);
            st.a[l as usize] = ld4_or_zero(a, lda, m, k, row0 + ar, kt + ak);
            l += 1;
        }
        let mut l = 0;
        while l < loads_b {
            let (bk, bn) = b_at(l);
            let (row, col) = (kt + bk, col0 + bn);
            if ASYNC_B && row < k && col + 3 < n {
                gpu::cp_async_16(
                    f32_addr(b_s(s), bk * BN + bn),
                    at(b, ldb, row, col) as *const gpu::Vec16,
                );
            } else {
                st.b[l as usize] = ld4_or_zero(b, ldb, k, n, row, col);
            }
            l += 1;
        }
        if ASYNC_B {
            gpu::cp_async_commit();
        }
        st
    };
    let store = |st: &Staged, kt: u32, s: u32| {
        let mut l = 0;
        while l < loads_a {
            let (ar, ak) = a_at(l);
            let mut q = 0;
            while q < 4 {
                f32::st_shared(
                    f32_addr(a_s(s), (ak + q) * PITCH_A + ar),
                    st.a[l as usize][q as usize],
                );
                q += 1;
            }
            l += 1;
        }
        let mut l = 0;
        while l < loads_b {
            let (bk, bn) = b_at(l);
            // With ASYNC_B, in-range vectors were copied by cp.async; the edges land here.
            if !(ASYNC_B && kt + bk < k && col0 + bn + 3 < n) {
                gpu::st_shared_f32x4(f32_addr(b_s(s), bk * BN + bn), st.b[l as usize]);
            }
            l += 1;
        }
    };

    let mut acc = [[0.0f32; 8]; 8];
    let compute = |acc: &mut [[f32; 8]; 8], s: u32| {
        let mut d = 0;
        while d < BK {
            let m_lo = gpu::ld_shared_f32x4(f32_addr(a_s(s), d * PITCH_A + wrow0 + lane_row(0)));
            let m_hi = gpu::ld_shared_f32x4(f32_addr(a_s(s), d * PITCH_A + wrow0 + lane_row(4)));
            let n_lo = gpu::ld_shared_f32x4(f32_addr(b_s(s), d * BN + wcol0 + lane_col(0)));
            let n_hi = gpu::ld_shared_f32x4(f32_addr(b_s(s), d * BN + wcol0 + lane_col(4)));
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
    };

    if STAGES == 1 {
        let mut kt = k_begin;
        while kt < k {
            let st = fetch(kt, 0);
            store(&st, kt, 0);
            if ASYNC_B {
                gpu::cp_async_wait::<0>();
            }
            gpu::sync_threads();
            compute(&mut acc, 0);
            gpu::sync_threads();
            kt += BK;
        }
    } else {
        let st = fetch(k_begin, 0);
        store(&st, k_begin, 0);
        if ASYNC_B {
            gpu::cp_async_wait::<0>();
        }
        gpu::sync_threads();
        let mut stage = 0;
        let mut kt = k_begin;
        while kt < k {
            let has_next = kt + BK < k;
            let next = if has_next {
                Some(fetch(kt + BK, stage ^ 1))
            } else {
                None
            };
            compute(&mut acc, stage);
            if let Some(st) = next {
                store(&st, kt + BK, stage ^ 1);
            }
            if ASYNC_B {
                gpu::cp_async_wait::<0>();
            }
            gpu::sync_threads();
            stage ^= 1;
            kt += BK;
        }
    }

    let mut i = 0;
    while i < 8 {
        let r = row0 + wrow0 + lane_row(i as u32);
        let mut j = 0;
        while j < 8 {
            epilogue(
                c,
                ldc,
                m,
                n,
                r,
                col0 + wcol0 + lane_col(j as u32),
                acc[i][j],
                alpha,
                beta,
            );
            j += 1;
        }
        i += 1;
    }
}

#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn sgemm_warptile(
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
    sgemm_warp_tile::<1, BK, { TILE.1 }, false, false>(a, b, c, m, n, k, lda, ldb, ldc, alpha, beta)
}
crate::entry_points! {
    pub const SYMBOLS;
    fn sgemm_warptile(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, lda: u32, ldb: u32, ldc: u32, alpha: f32, beta: f32);
    sgemm_warptile_f32 => (F32, F32, Any) [];
}

/// Split-K: the warp tile over one K slice per `blockIdx.z`, partial products to a workspace of
/// `gridDim.z` slices of `m × ldc` (α = 1, β = 0), summed by [`reduce`](split_k::reduce) (`gemm_splitk_reduce`). For small
/// `M·N` with enough `K`: 1000³ has 64 tiles of 128×128 for 132 SMs; 3 slices make 192 blocks.
pub mod split_k {
    use super::*;

    /// Registry record (a helper of the SGEMM dispatcher): the warp tile over one K slice.
    pub const INFO: KernelInfo = KernelInfo {
        name: "warptile_splitk",
        role: Role::Helper,
        symbols: SYMBOLS,
        about: "v08's warp tile over one K slice per blockIdx.z, partials to a workspace",
        ..super::INFO
    };

    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    unsafe fn sgemm_warptile_splitk(
        a: *const f32,
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
        sgemm_warp_tile::<1, BK, { TILE.1 }, false, true>(
            a, b, ws, m, n, k, lda, ldb, ldw, alpha, beta,
        )
    }
    crate::entry_points! {
        pub const SYMBOLS;
        fn sgemm_warptile_splitk(a: *const f32, b: *const f32, ws: *mut f32, m: u32, n: u32, k: u32, lda: u32, ldb: u32, ldw: u32, alpha: f32, beta: f32);
        sgemm_warptile_splitk_f32 => (F32, F32, Any) [];
    }

    /// The reduction: `C[r][col] = α · Σ_z ws[z][r][col] + β · C[r][col]`, one thread per
    /// element of C (grid `⌈n / 256⌉ × m`... walked with a stride over rows).
    pub mod reduce {
        use crate::gemm::epilogue;
        use crate::gpu::{self, Elem};
        /// Threads per block.
        pub const BLOCK_X: u32 = 256;

        /// Registry record (a helper of the SGEMM dispatcher).
        pub const INFO: crate::registry::KernelInfo = crate::registry::KernelInfo {
            family: crate::registry::Family::Gemm,
            name: "splitk_reduce",
            role: crate::registry::Role::Helper,
            block: (BLOCK_X, 1, 1),
            symbols: SYMBOLS,
            about: "sums the split-K partial products and applies α, β",
            ..crate::registry::KernelInfo::BASE
        };
        #[allow(clippy::too_many_arguments)]
        #[inline(always)]
        unsafe fn gemm_splitk_reduce(
            ws: *const f32,
            c: *mut f32,
            m: u32,
            n: u32,
            ldc: u32,
            splits: u32,
            alpha: f32,
            beta: f32,
        ) {
            let col = gpu::block_idx_x() * gpu::block_dim_x() + gpu::thread_idx_x();
            let mut r = gpu::block_idx_y();
            while r < m {
                let mut acc = 0.0f32;
                let mut z = 0;
                while z < splits {
                    if col < n {
                        acc += f32::ld_global_nc(ws.add(
                            (z as usize * m as usize + r as usize) * n as usize + col as usize,
                        ));
                    }
                    z += 1;
                }
                epilogue(c, ldc, m, n, r, col, acc, alpha, beta);
                r += gpu::grid_dim_y();
            }
        }
        crate::entry_points! {
            pub const SYMBOLS;
            fn gemm_splitk_reduce(ws: *const f32, c: *mut f32, m: u32, n: u32, ldc: u32, splits: u32, alpha: f32, beta: f32);
            gemm_splitk_reduce_f32 => (F32, F32, Any) [];
        }
    }
}

/// Tuning experiments (not in the ladder; `rustile bench gemm --variants` runs them).
pub mod experiments {
    use super::*;
    /// Two stages, BK 16, B through `cp.async`.
    pub const INFO_DB16_ASYNC: KernelInfo = KernelInfo {
        name: "double_buffer_async",
        shared_bytes_f32: shared_bytes(2, 16, TILE.1),
        symbols: SYMBOLS,
        role: Role::Experiment,
        ..INFO
    };
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    unsafe fn sgemm_double_buffer_async(
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
        sgemm_warp_tile::<2, 16, { TILE.1 }, true, false>(
            a, b, c, m, n, k, lda, ldb, ldc, alpha, beta,
        )
    }
    crate::entry_points! {
        pub const SYMBOLS;
        fn sgemm_double_buffer_async(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, lda: u32, ldb: u32, ldc: u32, alpha: f32, beta: f32);
        sgemm_double_buffer_async_f32 => (F32, F32, Any) [];
    }
}
