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
pub const SHARED_BYTES: usize = shared_bytes(TILE.0);
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
    lane_pos_of(gpu::thread_idx_x(), i, j)
}

/// [`lane_pos`] of thread `t` (of its k-group, in [`nt_tile_with`]).
#[inline(always)]
pub(crate) fn lane_pos_of(t: u32, i: u32, j: u32) -> (u32, u32) {
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

/// Shared bytes of the ring for a tile of `tm` rows (and [`TILE`]`.1` columns); one ring per
/// k-group of `nt_tile_with`.
pub const fn shared_bytes(tm: u32) -> usize {
    (STAGES * (BK * (tm + PAD) + BK * TILE.1) * 4) as usize
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
    nt_tile_with::<{ TILE.0 }, 1, false, false>(at_, b, m, n, k_begin, k, lda, ldb, row0, col0)
}

/// [`nt_tile`] for a tile of `TM` rows (128 or 64; `2·TM` threads, the warps side by side
/// along N as [`lane_pos`] places them) and a choice of copies per operand:
/// - `ROW_A`: `a` is A itself, row-major at any pitch `lda`; each float is its own 4-byte
///   `cp.async` (zero-filled outside `m × k`), written to its transposed place in the Aᵀ stage,
///   so no transpose or padding launch runs first. A thread copies 8 floats per k-tile: 8
///   consecutive k of one row per 8 lanes (32 contiguous bytes), 4 rows per warp, landing in
///   32 distinct banks (the stage's pitch is 4 mod 32). Else `a` is Aᵀ as in [`nt_tile`].
/// - `NARROW_B`: B's rows at any pitch, one 4-byte `cp.async` per float (a warp copies 32
///   consecutive floats of a row); else 16-byte chunks (`ldb` a multiple of 4, B 16-byte
///   aligned).
///
/// `KG` k-groups (1, or 2 with `TM` = 64): the block's `KG · 2·TM` threads are `KG` groups of
/// `2·TM`, group `g` the threads `g·2·TM ..`; each takes its share of the k-tiles (group 0 the
/// first ⌈T/2⌉, group 1 the rest) in its own ring, all in step at the block barrier (group 1
/// skips the compute of a step it has no k-tile for). At the end group 1 hands its sums to
/// group 0 through shared memory: only group 0's result is the tile's (the other groups'
/// accumulators are not meaningful). Twice the warps per SM for one tile — one 64 × 128 tile per
/// SM leaves one warp per scheduler with `KG` = 1.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(crate) unsafe fn nt_tile_with<
    const TM: u32,
    const KG: u32,
    const ROW_A: bool,
    const NARROW_B: bool,
>(
    a: *const f32,
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
    const { assert!(TM == 128 || (TM == 64 && ROW_A)) };
    const { assert!(KG == 1 || (KG == 2 && TM == 64)) };
    let threads = 2 * TM;
    let pitch_a = TM + PAD;
    let stage_bytes = (BK * pitch_a + BK * TILE.1) * 4;
    let (t, g) = if KG == 1 {
        (gpu::thread_idx_x(), 0)
    } else {
        (gpu::thread_idx_x() % threads, gpu::thread_idx_x() / threads)
    };
    // This group's k-tiles, and the steps every group takes.
    let (k_begin, k, steps) = if KG == 1 {
        (k_begin, k, (k - k_begin).div_ceil(BK))
    } else {
        let half = (k - k_begin).div_ceil(BK).div_ceil(2);
        let mid = (k_begin + half * BK).min(k);
        if g == 0 {
            (k_begin, mid, half)
        } else {
            (mid, k, half)
        }
    };
    let (lr0, lc0) = lane_pos_of(t, 0, 0);
    let (lr4, lc4) = lane_pos_of(t, 4, 4);
    let base = gpu::dynamic_shared_base() + g * shared_bytes(TM) as u32;
    let a_s = |s: u32| base + s * stage_bytes; // (BK, TM + PAD)
    let b_s = |s: u32| base + s * stage_bytes + BK * pitch_a * 4; // (BK, BN)
    let tiles = (k - k_begin).div_ceil(BK);
    // 16-byte chunks per operand per k-tile per thread: BK · 128 / 4 / threads.
    let chunks = BK * TILE.1 / 4 / threads;

    // The 16-byte chunk `idx` of k-tile `kt` of Aᵀ (or of B): the bytes of the chunk inside
    // K × M (K × N), zero-filled past its edge. (A synchronous zero-padded load at the edges
    // stalled the warp — and at the next barrier the block — for a memory latency every
    // k-tile: 1531³, whose edge tiles are 23 of 144, took 268 µs against 1536³'s 213 with the
    // same tiles and k-tiles.)
    let chunk_a = |kt: u32, idx: u32, s: u32| {
        let (kk, x) = (idx / (TM / 4), (idx % (TM / 4)) * 4);
        let (row, ca) = (kt + kk, row0 + x);
        let a_bytes = chunk_bytes(row, k, ca, m);
        let src_a = if a_bytes > 0 { at(a, lda, row, ca) } else { a };
        gpu::cp_async_16_zfill(
            f32_addr(a_s(s), kk * pitch_a + x),
            src_a as *const gpu::Vec16,
            a_bytes,
        );
    };
    let chunk_b = |kt: u32, idx: u32, s: u32| {
        let (kk, x) = (idx / (TILE.1 / 4), (idx % (TILE.1 / 4)) * 4);
        let (row, cb) = (kt + kk, col0 + x);
        let b_bytes = chunk_bytes(row, k, cb, n);
        let src_b = if b_bytes > 0 { at(b, ldb, row, cb) } else { b };
        gpu::cp_async_16_zfill(
            f32_addr(b_s(s), kk * TILE.1 + x),
            src_b as *const gpu::Vec16,
            b_bytes,
        );
    };
    // Sources of the 4-byte copies of whole k-tiles: per row of A (`ROW_A`) and for B's column
    // (`NARROW_B`), the address at k = 0 clamped inside the matrix, so that a copy's address is
    // one add, and its source size (4 inside, 0 past M or N: the zero fill).
    let mut a_row = [a; 4];
    let mut a_bytes = [0u32; 4];
    if ROW_A {
        let mut j = 0;
        while j < 4 {
            let row = row0 + t / 8 + j * (threads / 8);
            // Wrapping: for K < 8 the address is past the row, and only used in whole k-tiles.
            a_row[j as usize] =
                a.wrapping_add((row.min(m.max(1) - 1) as usize) * lda as usize + (t % 8) as usize);
            a_bytes[j as usize] = 4 * (row < m) as u32;
            j += 1;
        }
    }
    let col_b = col0 + t % TILE.1;
    let b_col = if NARROW_B {
        b.wrapping_add(col_b.min(n.max(1) - 1) as usize)
    } else {
        b
    };
    let b_bytes = 4 * (col_b < n) as u32;
    // Starts copying k-tile `tile` into stage `s`.
    let issue = |tile: u32, s: u32| {
        if tile < tiles {
            let kt = k_begin + tile * BK;
            if !ROW_A && !NARROW_B {
                let mut l = 0;
                while l < chunks {
                    chunk_a(kt, t + l * threads, s);
                    chunk_b(kt, t + l * threads, s);
                    l += 1;
                }
            } else if kt + BK <= k {
                // A whole k-tile: every copy's address one add from a clamped pointer, its
                // destination a constant offset from the thread's first.
                if ROW_A {
                    // Lanes 8q..8q + 7 of a warp: k = kt + 0..7 (+ 8 for h = 1) of one row.
                    let dst0 = f32_addr(a_s(s), (t % 8) * pitch_a + t / 8);
                    let mut j = 0;
                    while j < 4 {
                        let mut h = 0;
                        while h < 2 {
                            let dst = dst0 + 4 * (8 * h * pitch_a + j * (threads / 8));
                            let src = a_row[j as usize].wrapping_add((kt + 8 * h) as usize);
                            gpu::cp_async_4_zfill(dst, src, a_bytes[j as usize]);
                            h += 1;
                        }
                        j += 1;
                    }
                } else {
                    let mut l = 0;
                    while l < chunks {
                        chunk_a(kt, t + l * threads, s);
                        l += 1;
                    }
                }
                if NARROW_B {
                    // A warp copies 32 consecutive floats of a row of B.
                    let dst0 = f32_addr(b_s(s), t);
                    let step = (threads / TILE.1) as usize * ldb as usize;
                    let mut src = b_col.wrapping_add((kt + t / TILE.1) as usize * ldb as usize);
                    let mut l = 0;
                    while l < BK * TILE.1 / threads {
                        gpu::cp_async_4_zfill(dst0 + 4 * l * threads, src, b_bytes);
                        src = src.wrapping_add(step);
                        l += 1;
                    }
                } else {
                    let mut l = 0;
                    while l < chunks {
                        chunk_b(kt, t + l * threads, s);
                        l += 1;
                    }
                }
            } else {
                // K's last, partial k-tile: every copy bounds-checked.
                if ROW_A {
                    let mut l = 0;
                    while l < BK * TM / threads {
                        let (kk, r) = (t % 8 + 8 * (l % 2), t / 8 + (l / 2) * (threads / 8));
                        let (row, col) = (row0 + r, kt + kk);
                        let inside = row < m && col < k;
                        let src = if inside { at(a, lda, row, col) } else { a };
                        let dst = f32_addr(a_s(s), kk * pitch_a + r);
                        gpu::cp_async_4_zfill(dst, src, 4 * inside as u32);
                        l += 1;
                    }
                } else {
                    let mut l = 0;
                    while l < chunks {
                        chunk_a(kt, t + l * threads, s);
                        l += 1;
                    }
                }
                if NARROW_B {
                    let mut l = 0;
                    while l < BK * TILE.1 / threads {
                        let (kk, x) = (t / TILE.1 + l * (threads / TILE.1), t % TILE.1);
                        let (row, col) = (kt + kk, col0 + x);
                        let inside = row < k && col < n;
                        let src = if inside { at(b, ldb, row, col) } else { b };
                        let dst = f32_addr(b_s(s), kk * TILE.1 + x);
                        gpu::cp_async_4_zfill(dst, src, 4 * inside as u32);
                        l += 1;
                    }
                } else {
                    let mut l = 0;
                    while l < chunks {
                        chunk_b(kt, t + l * threads, s);
                        l += 1;
                    }
                }
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
    while tile < steps {
        gpu::cp_async_wait::<{ STAGES - 2 }>(); // this thread's copies of `tile` have landed
        gpu::sync_threads(); // everyone's have; and everyone finished reading tile − 1's stage
        issue(tile + STAGES - 1, (tile + STAGES - 1) % STAGES);
        let st = tile % STAGES;
        // Group 1 has no k-tile in its last step when the k-tiles are odd.
        if KG == 1 || tile < tiles {
            let mut d = 0;
            while d < BK {
                let m_lo = gpu::ld_shared_f32x4(f32_addr(a_s(st), d * pitch_a + lr0));
                let m_hi = gpu::ld_shared_f32x4(f32_addr(a_s(st), d * pitch_a + lr4));
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
        }
        tile += 1;
    }
    gpu::cp_async_wait::<0>();
    if KG == 2 {
        // Group 1's sums through group 0's ring, 16 bytes per lane per store (conflict-free).
        let red = gpu::dynamic_shared_base();
        gpu::sync_threads(); // every group is done reading its ring
        if g == 1 {
            crate::unroll!(16, q, {
                let (i, j) = (q / 2, 4 * (q % 2));
                let v = [acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]];
                gpu::st_shared_f32x4(red + (q as u32 * threads + t) * 16, v);
            });
        }
        gpu::sync_threads();
        if g == 0 {
            crate::unroll!(16, q, {
                let (i, j) = (q / 2, 4 * (q % 2));
                let v = gpu::ld_shared_f32x4(red + (q as u32 * threads + t) * 16);
                crate::unroll!(4, e, {
                    acc[i][j + e] += v[e];
                });
            });
        }
    }
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
