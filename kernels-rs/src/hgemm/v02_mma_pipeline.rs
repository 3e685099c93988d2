//! `mma.sync.m16n8k16` + `ldmatrix` + a `STAGES`-deep `cp.async` ring: the sm_80 path.
//!
//! - **Tile** 128 × 256 × 32 per block of eight warps (2 × 4); each warp owns 64 × 64 of C
//!   (4 × 8 `m16n8` tiles, 128 f32 accumulators per lane) and per k16 step loads its fragments
//!   with four `ldmatrix.x4` for A and four for B (`.trans` when B is row-major), then issues
//!   32 `mma`s. One block per SM (252–254 registers × 256 threads).
//! - **Block order** grouped in bands of 16 tile rows ([`GROUP_M`]): a wave of blocks shares
//!   fewer A rows and B columns, so less comes from DRAM — and at 8192³ the H200 runs at its
//!   power limit, where DRAM traffic costs clock.
//! - **Fragments one step ahead**: the `ldmatrix`es of step s + 1 are issued before the `mma`s
//!   of step s, across stage boundaries too (the wait and the barrier for the next stage come
//!   before the last step of the current one), so no `ldmatrix` latency sits between a barrier
//!   and the tensor pipe.
//! - **Shared**: per stage A 128 × 32 (8 KiB) and B 32 × 256 (or Bᵀ 256 × 32, 16 KiB), unpadded
//!   and XOR-swizzled in 16-byte chunks so that the eight row addresses of every `ldmatrix`
//!   phase fall in distinct bank groups. Four stages: 96 KiB.
//! - **Loads**: every 16-byte chunk that lies inside the matrix goes global → shared with
//!   `cp.async`; chunks that cross an edge are assembled from element loads with zeros
//!   outside. So any M, N, K works, and the tails cost only at the edges: a stage wholly
//!   inside the matrices takes one branch-free run of `cp.async`s. For a block inside M and N
//!   the steady-state loop has no edge test at all: its loads and `mma`s are one basic block
//!   (122 SASS instructions per 64 `HMMA` for Bᵀ, 129 for row-major B, whose chunk addresses
//!   add one uniform `k0 · ldb` per stage), and the ring ([`CpAsyncRing`]) is addressed by
//!   wrapping byte offsets. The entry points are instantiated with `ALIGNED` only
//!   (16-byte-aligned bases, pitches multiples of 8: the host checks); other pitches go to
//!   [`super::v01_mma`], which keeps the binary's PTX smaller.
//! - **Shared blocks**: the stage tiles are [`Swizzled`] [`Tile`]s, the ring a [`CpAsyncRing`],
//!   the block order [`sched::block_tile`], the epilogue [`Epilogue`].
//! - **Bound**: `mma.sync` issues from the SM's warp schedulers. On the H200 it peaks at
//!   ~650 TFLOP/s with register operands and no memory traffic (`hgemm_peak_mma_*`), about two
//!   thirds of `wgmma` (850–980); this kernel reaches 58–62 % of that ceiling at 8192³. Per
//!   warp and k16 step, eight `ldmatrix.x4` (4 KiB) feed 32 `mma`s (131 kflop): 32 flop/byte
//!   against shared memory's 128 bytes/clock. With the `cp.async` writes, the shared-memory
//!   port alone would cap it near 0.7 of the tensor peak. At 8192³ the H200 also runs at its
//!   power limit, where every instruction and every DRAM byte costs clock (`notes/hgemm.md`).

use crate::gpu::ring::CpAsyncRing;
use crate::gpu::{self, sched, Elem, Swizzled, Tile, Vec16};
use crate::tc::{Epilogue, TcIn, TcOut};

/// Rows of A per block.
pub const BM: u32 = 128;
/// Columns of B per block.
pub const BN: u32 = 256;
/// K per stage.
pub const BK: u32 = 32;
/// Ring depth.
pub const STAGES: u32 = 4;
/// Warps along M and N.
pub const WARPS: (u32, u32) = (2, 4);
/// Tile rows per band of the grouped block order ([`sched::grouped_tile`]): a wave of 132
/// blocks then covers ~16 × 8 tiles, about the fewest distinct A rows plus B columns.
pub const GROUP_M: u32 = 16;
/// Threads.
pub const THREADS: u32 = 32 * WARPS.0 * WARPS.1;
/// Dynamic shared bytes.
pub const SHARED_BYTES: usize = shared_bytes(BM, BN, BK, STAGES);

/// Shared bytes of a configuration.
pub const fn shared_bytes(bm: u32, bn: u32, bk: u32, stages: u32) -> usize {
    CpAsyncRing::bytes((bm + bn) * bk * 2, stages)
}

/// The default configuration, and what it beat on the H200 (8192³ f16, × cuBLAS in the same
/// process, B row-major / B transposed, rustile and cuBLAS timed interleaved at the same
/// clock; `notes/hgemm.md` has every run, sequential timings too):
/// 128×256×32, 2×4 warps, 4 stages, grouped by 16 (this one): 0.477 / 0.511, and 0.504 /
/// 0.511 once B row-major's chunk addresses lost their wide multiply;
/// the same in row-major block order: 0.458 / 0.505;
/// 256×128×32, 4×2 warps, 4 stages, grouped by 8: 0.462 / 0.496 (row-major 0.448 / 0.498);
/// 128×128×32, 2×2 warps, 4 stages (the earlier default): 0.454 / 0.506, grouped by 8:
/// 0.437 / 0.510. Configurations dropped after one run (interleaved, row-major): 3 stages
/// 0.452 / 0.501, 5 stages 0.439 / 0.508, 256×128 with 3 or 5 stages 0.452–0.455 /
/// 0.499–0.534, 128×64 (three blocks per SM) 0.444 / 0.433; 256×128×64 spilled.
pub const TUNED: &str = "128x256x32, 2x4 warps, 4 stages, grouped by 16";

/// The shared tiles of one stage: A (`BM_ × BK_`, k-chunks along rows) and B (`BK_ × BN_`
/// row-major, or Bᵀ `BN_ × BK_`), unpadded and XOR-swizzled ([`Swizzled`]) so the eight rows of
/// every `ldmatrix` phase hit eight different bank groups.
#[inline(always)]
fn stage_tiles<const TRANS_B: u32, const BM_: u32, const BN_: u32, const BK_: u32>(
    at: u32,
) -> (Tile<Swizzled>, Tile<Swizzled>) {
    let a = Tile::at(at, Swizzled::new(BM_, BK_ / 8)); // (BM, BK)
    let b = if TRANS_B == 1 {
        Tile::at(at + a.layout.rows * BK_ * 2, Swizzled::new(BK_, BN_ / 8)) // (BK, BN)
    } else {
        Tile::at(at + a.layout.rows * BK_ * 2, Swizzled::new(BN_, BK_ / 8)) // (BN, BK)
    };
    (a, b)
}

/// Eight elements of row `r` from column `c` of a `rows × cols` matrix with pitch `ld`, zeros
/// outside, into shared `dst`: `cp.async` when the chunk is inside and `ALIGNED`. `INTERIOR`:
/// the caller knows the whole stage is inside (and aligned), so no test is made.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
#[allow(clippy::too_many_arguments)]
unsafe fn load_chunk<const ALIGNED: bool, const INTERIOR: bool>(
    dst: u32,
    src: *const u16,
    r: u32,
    c: u32,
    rows: u32,
    cols: u32,
    ld: u32,
) {
    let row_ptr = src.add(r as usize * ld as usize);
    if INTERIOR || (ALIGNED && r < rows && c + 8 <= cols) {
        gpu::cp_async_16(dst, row_ptr.add(c as usize) as *const Vec16);
        return;
    }
    let mut w = [0u32; 4];
    if r < rows {
        crate::unroll!(8, e, {
            if c + (e as u32) < cols {
                let v = u16::ld_global_nc(row_ptr.add(c as usize + e)) as u32;
                w[e / 2] |= v << (16 * (e % 2));
            }
        });
    }
    gpu::st_shared_f32x4(dst, w.map(f32::from_bits));
}

/// Issues the loads of one stage: A rows `m0..m0 + BM`, B columns `n0..n0 + BN`, k from `k0`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
unsafe fn load_stage<
    const TRANS_B: u32,
    const ALIGNED: bool,
    const BM_: u32,
    const BN_: u32,
    const BK_: u32,
    const WM: u32,
    const WN: u32,
>(
    (ta, tb): (Tile<Swizzled>, Tile<Swizzled>),
    a: *const u16,
    b: *const u16,
    [m, n, k]: [u32; 3],
    [lda, ldb]: [u32; 2],
    [m0, n0, k0]: [u32; 3],
) {
    // A stage wholly inside the matrices (all but the edge tiles) takes one branch-free run of
    // `cp.async`s, which ptxas can schedule as one block.
    if ALIGNED && m0 + BM_ <= m && n0 + BN_ <= n && k0 + BK_ <= k {
        stage_chunks::<TRANS_B, ALIGNED, true, BM_, BN_, BK_, WM, WN>(
            (ta, tb),
            a,
            b,
            [m, n, k],
            [lda, ldb],
            [m0, n0, k0],
        );
    } else {
        stage_chunks::<TRANS_B, ALIGNED, false, BM_, BN_, BK_, WM, WN>(
            (ta, tb),
            a,
            b,
            [m, n, k],
            [lda, ldb],
            [m0, n0, k0],
        );
    }
}

/// The chunks of one stage, each through [`load_chunk`].
#[inline(always)]
#[allow(clippy::too_many_arguments)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
unsafe fn stage_chunks<
    const TRANS_B: u32,
    const ALIGNED: bool,
    const INTERIOR: bool,
    const BM_: u32,
    const BN_: u32,
    const BK_: u32,
    const WM: u32,
    const WN: u32,
>(
    (ta, tb): (Tile<Swizzled>, Tile<Swizzled>),
    a: *const u16,
    b: *const u16,
    [m, n, k]: [u32; 3],
    [lda, ldb]: [u32; 2],
    [m0, n0, k0]: [u32; 3],
) {
    let kc = BK_ / 8;
    let nc = BN_ / 8;
    let threads = 32 * WM * WN;
    let t = gpu::thread_idx_x();
    // A: BM rows × kc chunks; every configuration divides evenly by the thread count, and the
    // fixed trip counts let the loops unroll (a thread-dependent bound would not).
    crate::unroll!(16, i, {
        if (i as u32) < BM_ * kc / threads {
            let id = t + threads * i as u32;
            let (row, ch) = (id / kc, id % kc);
            let dst = ta.chunk(row, ch);
            load_chunk::<ALIGNED, INTERIOR>(dst, a, m0 + row, k0 + 8 * ch, m, k, lda);
        }
    });
    crate::unroll!(16, i, {
        if (i as u32) < BN_ * kc / threads {
            let id = t + threads * i as u32;
            if TRANS_B == 1 {
                // B: BK k-rows × nc chunks of n.
                let (row, ch) = (id / nc, id % nc);
                if INTERIOR {
                    // k0 · ldb apart from the stage-invariant row · ldb + column: the loop then
                    // adds one uniform 64-bit offset per stage instead of a wide multiply per
                    // chunk ((k0 + row) · ldb in u32 cannot be strength-reduced).
                    let at = row as usize * ldb as usize + (n0 + 8 * ch) as usize;
                    let src = b.add(k0 as usize * ldb as usize).add(at);
                    tb.cp_async_16(row, ch, src as *const Vec16);
                } else {
                    let dst = tb.chunk(row, ch);
                    load_chunk::<ALIGNED, INTERIOR>(dst, b, k0 + row, n0 + 8 * ch, k, n, ldb);
                }
            } else {
                // Bᵀ: BN n-rows × kc chunks of k.
                let (row, ch) = (id / kc, id % kc);
                let dst = tb.chunk(row, ch);
                load_chunk::<ALIGNED, INTERIOR>(dst, b, n0 + row, k0 + 8 * ch, n, k, ldb);
            }
        }
    });
}

/// The kernel body for one tile configuration: `BM_ × BN_ × BK_` per block, `WM × WN` warps
/// (each `BM_/WM × BN_/WN` of C, at most 64 × 64), an `ST`-stage ring. `TRANS_B` = 1: B is
/// row-major K × N; 0: B is Bᵀ, N × K row-major.
///
/// # Safety
/// Launched with `32 · WM · WN` threads and [`shared_bytes`] of shared memory over a grid
/// covering C in `BN_ × BM_` tiles; the buffers hold the spans the shape and pitches imply, and
/// with `ALIGNED` A and B are 16-byte aligned with pitches that are multiples of 8 (the host
/// checks).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub unsafe fn mma_pipeline_cfg<
    I: TcIn,
    O: TcOut,
    const TRANS_B: u32,
    const ALIGNED: bool,
    const BM_: u32,
    const BN_: u32,
    const BK_: u32,
    const WM: u32,
    const WN: u32,
    const ST: u32,
    const GM: u32,
>(
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
    let (wtm, wtn) = (BM_ / WM, BN_ / WN);
    let (mi, nj) = (wtm / 16, wtn / 8);
    let t = gpu::thread_idx_x();
    let (warp, lane) = (t / 32, t % 32);
    let (wm, wn) = (warp / WN, warp % WN);
    // Block order: `GM` = 0, row-major (block (x, y) computes tile (y, x)); otherwise grouped
    // ([`sched::block_tile`]), bands of `GM` tile rows, so a wave of blocks shares fewer
    // distinct A rows and B columns and reads less from DRAM.
    let (tm, tn) = if GM == 0 {
        (gpu::block_idx_y(), gpu::block_idx_x())
    } else {
        let (bx, by) = (gpu::block_idx_x(), gpu::block_idx_y());
        sched::block_tile(bx, by, gpu::grid_dim_x(), gpu::grid_dim_y(), GM)
    };
    let (m0, n0) = (tm * BM_, tn * BN_);
    // A stage: A then B, `(BM + BN) · BK` f16/bf16 ([`stage_tiles`]); the ring's slots are
    // byte offsets that advance one stage at a time and wrap.
    let ring = CpAsyncRing::new(gpu::dynamic_shared_base(), (BM_ + BN_) * BK_ * 2, ST);
    let tiles = |so: u32| stage_tiles::<TRANS_B, BM_, BN_, BK_>(ring.addr(so));
    let k_tiles = k.div_ceil(BK_);
    let dims = [m, n, k];
    let lds = [lda, ldb];

    // Accumulator of m16 tile i, n8 tile j: acc[32 i + 4 j ..]; unused entries fold away.
    let mut acc = [0f32; 128];
    let mut s = 0;
    while s < ST - 1 {
        if s < k_tiles {
            load_stage::<TRANS_B, ALIGNED, BM_, BN_, BK_, WM, WN>(
                tiles(ring.slot(s)),
                a,
                b,
                dims,
                lds,
                [m0, n0, s * BK_],
            );
        }
        ring.commit();
        s += 1;
    }
    let (q, r) = (lane / 8, lane % 8);
    // The fragments of k16 step `ks` of the stage at byte offset `so`: A's four m16 tiles, B's
    // eight n8 tiles.
    let fragments = |so: u32, ks: u32| {
        let (ta, tb) = tiles(so);
        let mut af = [[0u32; 4]; 4];
        crate::unroll!(4, i, {
            if (i as u32) < mi {
                let row = wm * wtm + 16 * i as u32 + lane % 16;
                af[i] = ta.ldmatrix::<4, false>(row, 2 * ks + lane / 16);
            }
        });
        let mut bf = [[0u32; 2]; 8];
        crate::unroll!(4, jp, {
            if (2 * jp as u32) < nj {
                let x = if TRANS_B == 1 {
                    let row = 16 * ks + 8 * (q % 2) + r;
                    let ch = wn * (wtn / 8) + 2 * jp as u32 + q / 2;
                    tb.ldmatrix::<4, true>(row, ch)
                } else {
                    let row = wn * wtn + 16 * jp as u32 + 8 * (q / 2) + r;
                    tb.ldmatrix::<4, false>(row, 2 * ks + q % 2)
                };
                bf[2 * jp] = [x[0], x[1]];
                bf[2 * jp + 1] = [x[2], x[3]];
            }
        });
        (af, bf)
    };
    // Fragments one k16 step ahead of the `mma`s, across stage boundaries too: the wait and
    // the barrier for stage kt + 1 come before the last step of stage kt, whose fragments are
    // already in registers, so the `ldmatrix` latency after each barrier hides behind that
    // step's `mma`s. The barrier also frees the slot of stage kt (its last `ldmatrix` is
    // behind it), which the next iteration refills first.
    ring.wait_oldest();
    let mut cur = fragments(0, 0);
    // `rd`: the slot of stage kt (read now); `wr`: the slot of stage kt + ST - 1 (loaded now),
    // which is the slot stage kt - 1 used.
    let mut rd = 0;
    let mut wr = ring.slot(ST - 1);
    let mut kt = 0;
    // One iteration: issue the loads of stage kt + ST - 1 (`$load`), then the `mma`s of stage
    // kt with the fragments one step ahead. A macro, not a closure, so that both loops below
    // get their own straight-line copy.
    macro_rules! iteration {
        ($load:expr) => {{
            $load;
            ring.commit();
            let rd_next = ring.next(rd);
            crate::unroll!(4, ksi, {
                let ks = ksi as u32;
                if ks < BK_ / 16 {
                    let ahead = if ks + 1 < BK_ / 16 {
                        fragments(rd, ks + 1)
                    } else {
                        // After the last stage this reads a slot no copy is writing: unused.
                        ring.wait_oldest();
                        fragments(rd_next, 0)
                    };
                    let (af, bf) = cur;
                    crate::unroll!(4, i, {
                        crate::unroll!(8, j, {
                            if (i as u32) < mi && (j as u32) < nj {
                                let o = 32 * i + 4 * j;
                                let d = gpu::mma_m16n8k16(
                                    I::KIND,
                                    af[i],
                                    bf[j],
                                    [acc[o], acc[o + 1], acc[o + 2], acc[o + 3]],
                                );
                                acc[o] = d[0];
                                acc[o + 1] = d[1];
                                acc[o + 2] = d[2];
                                acc[o + 3] = d[3];
                            }
                        });
                    });
                    cur = ahead;
                }
            });
            rd = rd_next;
            wr = ring.next(wr);
            kt += 1;
        }};
    }
    // Steady state: while the stage being loaded lies wholly inside the matrices (a block
    // inside M and N, k-tiles before the last partial one), the loads are one branch-free run
    // of `cp.async`s in the same basic block as the `mma`s, so ptxas can interleave their
    // address arithmetic with the tensor instructions.
    let interior_mn = ALIGNED && m0 + BM_ <= m && n0 + BN_ <= n;
    let k_full = k / BK_;
    let steady_end = if interior_mn && k_full >= ST - 1 {
        k_full - (ST - 1)
    } else {
        0
    };
    while kt < steady_end {
        iteration!(
            stage_chunks::<TRANS_B, ALIGNED, true, BM_, BN_, BK_, WM, WN>(
                tiles(wr),
                a,
                b,
                dims,
                lds,
                [m0, n0, (kt + ST - 1) * BK_],
            )
        );
    }
    // The rest: edge stages (tested chunk by chunk), and no loads past the last stage.
    while kt < k_tiles {
        iteration!(if kt + ST - 1 < k_tiles {
            load_stage::<TRANS_B, ALIGNED, BM_, BN_, BK_, WM, WN>(
                tiles(wr),
                a,
                b,
                dims,
                lds,
                [m0, n0, (kt + ST - 1) * BK_],
            );
        });
    }
    ring.wait_all();

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
    let (g, tq) = (lane / 4, lane % 4);
    crate::unroll!(4, i, {
        crate::unroll!(8, j, {
            if (i as u32) < mi && (j as u32) < nj {
                let o = 32 * i + 4 * j;
                let row = m0 + wm * wtm + 16 * i as u32 + g;
                let col = n0 + wn * wtn + 8 * j as u32 + 2 * tq;
                epi.store_frag(row, col, [acc[o], acc[o + 1], acc[o + 2], acc[o + 3]]);
            }
        });
    });
}

macro_rules! config {
    ($name:ident => $bm:expr, $bn:expr, $bk:expr, $wm:expr, $wn:expr, $st:expr, $gm:expr) => {
        /// One tile configuration of [`mma_pipeline_cfg`].
        ///
        /// # Safety
        /// As for the entry points.
        #[allow(clippy::too_many_arguments)]
        #[inline(always)]
        pub unsafe fn $name<I: TcIn, O: TcOut, const TRANS_B: u32, const ALIGNED: bool>(
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
            mma_pipeline_cfg::<
                I,
                O,
                TRANS_B,
                ALIGNED,
                { $bm },
                { $bn },
                { $bk },
                { $wm },
                { $wn },
                { $st },
                { $gm },
            >(a, b, c, bias, m, n, k, lda, ldb, ldc, alpha, beta, relu)
        }
    };
}

config!(hgemm_mma_pipeline => BM, BN, BK, WARPS.0, WARPS.1, STAGES, GROUP_M);

/// Registry record.
pub const INFO: crate::registry::KernelInfo = crate::registry::KernelInfo {
    family: crate::registry::Family::Hgemm,
    name: "mma_pipeline",
    needs: crate::registry::Needs::ALIGN16,
    block: (THREADS, 1, 1),
    launch: crate::registry::Launch::Tiles {
        tile: (BM, BN),
        halo_rows: 0,
    },
    shared_bytes_f16: SHARED_BYTES,
    symbols: SYMBOLS,
    about: "mma.sync + ldmatrix + a cp.async ring, swizzled shared tiles (sm_80+)",
    ..crate::registry::KernelInfo::BASE
};

crate::entry_points! {
    pub const SYMBOLS;
    fn hgemm_mma_pipeline(a: *const u16, b: *const u16, c: *mut <O as crate::hgemm::TcOut>::Store, bias: *const f32, m: u32, n: u32, k: u32, lda: u32, ldb: u32, ldc: u32, alpha: f32, beta: f32, relu: u32);
    hgemm_mma_pipeline_f16_f16_bn => (F16, F16, Bn) [I = crate::hgemm::F16, O = crate::hgemm::OutF16; TB: u32 = 1, AL: bool = true];
    hgemm_mma_pipeline_f16_f32_bn => (F16, F32, Bn) [I = crate::hgemm::F16, O = crate::hgemm::OutF32; TB: u32 = 1, AL: bool = true];
    hgemm_mma_pipeline_bf16_bf16_bn => (Bf16, Bf16, Bn) [I = crate::hgemm::Bf16, O = crate::hgemm::OutBf16; TB: u32 = 1, AL: bool = true];
    hgemm_mma_pipeline_bf16_f32_bn => (Bf16, F32, Bn) [I = crate::hgemm::Bf16, O = crate::hgemm::OutF32; TB: u32 = 1, AL: bool = true];
    hgemm_mma_pipeline_f16_f16_bt => (F16, F16, Bt) [I = crate::hgemm::F16, O = crate::hgemm::OutF16; TB: u32 = 0, AL: bool = true];
    hgemm_mma_pipeline_f16_f32_bt => (F16, F32, Bt) [I = crate::hgemm::F16, O = crate::hgemm::OutF32; TB: u32 = 0, AL: bool = true];
    hgemm_mma_pipeline_bf16_bf16_bt => (Bf16, Bf16, Bt) [I = crate::hgemm::Bf16, O = crate::hgemm::OutBf16; TB: u32 = 0, AL: bool = true];
    hgemm_mma_pipeline_bf16_f32_bt => (Bf16, F32, Bt) [I = crate::hgemm::Bf16, O = crate::hgemm::OutF32; TB: u32 = 0, AL: bool = true];
}

/// A tuning configuration of [`mma_pipeline_cfg`], instantiated for f16 in and out only (both B
/// layouts): the host runs it in place of the default when `rustile hgemm bench --pipeline NAME`
/// (or `hgemm::Options::tuning`) names it, so one GPU session can compare several against
/// cuBLAS without rebuilding.
pub struct Tuning {
    /// Name (`--pipeline NAME`), also the symbols' infix.
    pub name: &'static str,
    /// Rows of A per block.
    pub bm: u32,
    /// Columns of B per block.
    pub bn: u32,
    /// Threads per block.
    pub threads: u32,
    /// Dynamic shared bytes.
    pub shared: usize,
    /// Its registry record.
    pub info: &'static crate::registry::KernelInfo,
}

macro_rules! tunings {
    ($($name:ident: $bm:literal, $bn:literal, $bk:literal, $wm:literal, $wn:literal, $st:literal,
        $gm:literal => $bn_sym:ident, $bt_sym:ident;)+) => {
        $(
            /// A tuning configuration's entries.
            pub mod $name {
                use super::*;
                config!(body => $bm, $bn, $bk, $wm, $wn, $st, $gm);

                /// Registry record.
                pub const INFO: crate::registry::KernelInfo = crate::registry::KernelInfo {
                    name: concat!("mma_pipeline_", stringify!($name)),
                    role: crate::registry::Role::Tuning,
                    block: (32 * $wm * $wn, 1, 1),
                    launch: crate::registry::Launch::Tiles { tile: ($bm, $bn), halo_rows: 0 },
                    shared_bytes_f16: shared_bytes($bm, $bn, $bk, $st),
                    symbols: SYMBOLS,
                    about: concat!("mma_pipeline tuning ", stringify!($name)),
                    ..super::INFO
                };
                crate::entry_points! {
                    pub const SYMBOLS;
                    fn body(a: *const u16, b: *const u16, c: *mut <O as crate::hgemm::TcOut>::Store, bias: *const f32, m: u32, n: u32, k: u32, lda: u32, ldb: u32, ldc: u32, alpha: f32, beta: f32, relu: u32);
                    $bn_sym => (F16, F16, Bn) [I = crate::hgemm::F16, O = crate::hgemm::OutF16; TB: u32 = 1, AL: bool = true];
                    $bt_sym => (F16, F16, Bt) [I = crate::hgemm::F16, O = crate::hgemm::OutF16; TB: u32 = 0, AL: bool = true];
                }
            }
        )+
        /// Every tuning configuration.
        pub const TUNING: &[Tuning] = &[$(Tuning {
            name: stringify!($name),
            bm: $bm,
            bn: $bn,
            threads: 32 * $wm * $wn,
            shared: shared_bytes($bm, $bn, $bk, $st),
            info: &$name::INFO,
        }),+];
    };
}

tunings! {
    m256: 256, 128, 32, 4, 2, 4, 8 => hgemm_mma_pipeline_m256_f16_f16_bn, hgemm_mma_pipeline_m256_f16_f16_bt;
    t128: 128, 128, 32, 2, 2, 4, 8 => hgemm_mma_pipeline_t128_f16_f16_bn, hgemm_mma_pipeline_t128_f16_f16_bt;
}
