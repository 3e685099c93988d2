//! Warp tiling: the block's 128×128 C tile is split into 8 warp tiles of 64×32, and each lane
//! owns a 16×4 block: rows `g·16 + 4·(lane / 8) + 0..4` for `g` in 0..4, columns
//! `4·(lane % 8) + 0..4` of its warp tile.
//!
//! Per `k` a lane loads 4 A chunks and 1 B chunk of 16 bytes (5 `ld.shared.v4` for 64 FMAs);
//! the 8 lanes of a quarter warp read either one broadcast chunk of A or 8 consecutive chunks
//! of B, so every shared read is one wavefront. K step 16: the A tile is loaded with consecutive
//! lanes on consecutive rows, so its transposed store into `Aᵀ` is conflict-free too. The warp
//! tile keeps a warp's shared reads on 64 + 32 values per `k`, where `v07`'s per-thread layout
//! spread a warp over 2 × 8 groups of the whole tile. Needs `lda`, `ldb` multiples of 4 and
//! 16-byte-aligned A, B. Shared: 16.3 KiB per stage.

use super::{epilogue, f32_addr, ld4_or_zero};
use crate::gpu::{self, Elem};
use crate::registry::{Family, KernelInfo, Launch};

/// C tile per block, `(BM, BN)`.
pub const TILE: (u32, u32) = (128, 128);
/// K step.
pub const BK: u32 = 16;
/// Warp tile, `(WM, WN)`.
pub const WARP_TILE: (u32, u32) = (64, 32);
/// Threads per block: one warp per warp tile.
pub const THREADS: u32 = 32 * (TILE.0 / WARP_TILE.0) * (TILE.1 / WARP_TILE.1);
/// Floats of padding per Aᵀ row (keeps rows 16-byte aligned).
pub const PAD: u32 = 4;

/// Shared bytes for `stages` buffers.
pub const fn shared_bytes(stages: u32) -> usize {
    (stages * (BK * (TILE.0 + PAD) + BK * TILE.1) * 4) as usize
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
    shared_bytes_f32: shared_bytes(1),
    shared_bytes_f16: 0,
    symbols: SYMBOLS,
    about: "128x128x16 block, 64x32 warp tiles, 16x4 per lane",
};

/// A k-tile of A and B in registers: 2 vectors of each per thread.
struct Staged {
    a: [[f32; 4]; 2],
    b: [[f32; 4]; 2],
}

/// The warp-tiled body with `STAGES` (1 or 2) shared-memory buffers. With 2, the next k-tile
/// is fetched into registers before the current one is computed, and stored to the other
/// buffer after: the global loads' latency hides behind 64·16 FMAs, and one barrier per k-tile
/// suffices.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(super) unsafe fn sgemm_warp_tile<const STAGES: u32>(
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
    const STAGE_BYTES: u32 = (BK * PITCH_A + BK * TILE.1) * 4;
    let t = gpu::thread_idx_x();
    let (warp, lane) = (t / 32, t % 32);
    let (row0, col0) = (gpu::block_idx_y() * TILE.0, gpu::block_idx_x() * TILE.1);
    let warps_n = TILE.1 / WARP_TILE.1;
    let (wrow0, wcol0) = (
        (warp / warps_n) * WARP_TILE.0,
        (warp % warps_n) * WARP_TILE.1,
    );
    let (lr, lc) = (lane / 8, lane % 8);
    let base = gpu::dynamic_shared_base();
    // (Aᵀ, B) of stage s: Aᵀ (BK, BM + PAD), then B (BK, BN).
    let a_s = |s: u32| base + s * STAGE_BYTES;
    let b_s = |s: u32| base + s * STAGE_BYTES + BK * PITCH_A * 4;

    let fetch = |kt: u32| -> Staged {
        let mut st = Staged {
            a: [[0.0; 4]; 2],
            b: [[0.0; 4]; 2],
        };
        let mut l = 0;
        while l < 2 {
            let idx = t + l * THREADS;
            let (ar, ak) = (idx % TILE.0, (idx / TILE.0) * 4);
            st.a[l as usize] = ld4_or_zero(a, lda, m, k, row0 + ar, kt + ak);
            let (bk, bn) = (idx / (TILE.1 / 4), (idx % (TILE.1 / 4)) * 4);
            st.b[l as usize] = ld4_or_zero(b, ldb, k, n, kt + bk, col0 + bn);
            l += 1;
        }
        st
    };
    let store = |st: &Staged, s: u32| {
        let mut l = 0;
        while l < 2 {
            let idx = t + l * THREADS;
            let (ar, ak) = (idx % TILE.0, (idx / TILE.0) * 4);
            let mut q = 0;
            while q < 4 {
                f32::st_shared(
                    f32_addr(a_s(s), (ak + q) * PITCH_A + ar),
                    st.a[l as usize][q as usize],
                );
                q += 1;
            }
            let (bk, bn) = (idx / (TILE.1 / 4), (idx % (TILE.1 / 4)) * 4);
            gpu::st_shared_f32x4(f32_addr(b_s(s), bk * TILE.1 + bn), st.b[l as usize]);
            l += 1;
        }
    };

    let mut acc = [[0.0f32; 4]; 16];
    let compute = |acc: &mut [[f32; 4]; 16], s: u32| {
        let mut d = 0;
        while d < BK {
            let mut reg_m = [0.0f32; 16];
            let mut g = 0;
            while g < 4 {
                let v =
                    gpu::ld_shared_f32x4(f32_addr(a_s(s), d * PITCH_A + wrow0 + g * 16 + lr * 4));
                reg_m[4 * g as usize..4 * g as usize + 4].copy_from_slice(&v);
                g += 1;
            }
            let reg_n = gpu::ld_shared_f32x4(f32_addr(b_s(s), d * TILE.1 + wcol0 + lc * 4));
            let mut i = 0;
            while i < 16 {
                let mut j = 0;
                while j < 4 {
                    acc[i][j] = gpu::fma(reg_m[i], reg_n[j], acc[i][j]);
                    j += 1;
                }
                i += 1;
            }
            d += 1;
        }
    };

    if STAGES == 1 {
        let mut kt = 0;
        while kt < k {
            let st = fetch(kt);
            store(&st, 0);
            gpu::sync_threads();
            compute(&mut acc, 0);
            gpu::sync_threads();
            kt += BK;
        }
    } else {
        let st = fetch(0);
        store(&st, 0);
        gpu::sync_threads();
        let mut stage = 0;
        let mut kt = 0;
        while kt < k {
            let has_next = kt + BK < k;
            let next = if has_next { Some(fetch(kt + BK)) } else { None };
            compute(&mut acc, stage);
            if let Some(st) = next {
                store(&st, stage ^ 1);
            }
            gpu::sync_threads();
            stage ^= 1;
            kt += BK;
        }
    }

    let mut i = 0;
    while i < 16 {
        let r = row0 + wrow0 + (i as u32 / 4) * 16 + lr * 4 + i as u32 % 4;
        let mut j = 0;
        while j < 4 {
            epilogue(
                c,
                ldc,
                m,
                n,
                r,
                col0 + wcol0 + lc * 4 + j as u32,
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
    sgemm_warp_tile::<1>(a, b, c, m, n, k, lda, ldb, ldc, alpha, beta)
}

crate::ptx_kernels! {
    f32 fn sgemm_warptile(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, lda: u32, ldb: u32, ldc: u32, alpha: f32, beta: f32)
        => sgemm_warptile_f32
}
