//! The sm_80 tensor-core mainloop, with the stage loads as a hook: `mma.sync.m16n8k16` on
//! fragments read by `ldmatrix` from a [`CpAsyncRing`] of swizzled A and Bᵀ stage tiles, the
//! fragments one k16 step ahead of the `mma`s. A kernel supplies a [`StageLoader`] (how this
//! thread fills its share of the next stage: `cp.async`, zero-filling `cp.async`, or element
//! loads and `st.shared`) and the number of stages; [`run`] returns the warp's accumulators and
//! [`store`] hands them to the [`Epilogue`].
//!
//! The schedule is `hgemm/v02_mma_pipeline`'s for a transposed B (both operands k-contiguous
//! rows, plain `ldmatrix`): stage `kt + ST − 1` is loaded while stage `kt` is computed; the
//! wait and the barrier for stage `kt + 1` come before the last k16 step of stage `kt`, whose
//! fragments are already in registers, so the `ldmatrix` latency after each barrier hides
//! behind that step's `mma`s, and the barrier also frees the slot the next iteration fills
//! first. The loop is split in two: while stages remain to load the loads are unconditional
//! (one basic block with the `mma`s, so ptxas can interleave them), then the last `ST − 1`
//! stages compute without loads. Implicit-GEMM convolution is its first user; the GEMM keeps
//! its own copy (with row-major B and its interior/edge stage split) until an A/B run on the
//! GPU shows moving it costs nothing.

use crate::gpu::ring::CpAsyncRing;
use crate::gpu::{self, Swizzled, Tile};
use crate::tc::{Epilogue, TcIn, TcOut};

/// The shared tiles of one stage: A (`BM × BK`: rows of the output tile, k in 16-byte chunks
/// along each row) and Bᵀ (`BN × BK`: one row per output column), unpadded and XOR-swizzled
/// ([`Swizzled`]) so the eight rows of every `ldmatrix` phase hit eight bank groups.
#[derive(Clone, Copy, Debug)]
pub struct Stage {
    /// A, `BM × BK`.
    pub a: Tile<Swizzled>,
    /// Bᵀ, `BN × BK`.
    pub b: Tile<Swizzled>,
}

impl Stage {
    /// The stage tiles at shared-window address `at`.
    #[inline(always)]
    pub fn at(at: u32, bm: u32, bn: u32, bk: u32) -> Self {
        let a = Tile::at(at, Swizzled::new(bm, bk / 8)); // (BM, BK)
        let b = Tile::at(at + bm * bk * 2, Swizzled::new(bn, bk / 8)); // (BN, BK)
        Stage { a, b }
    }
}

/// Bytes of one stage of 16-bit operands.
pub const fn stage_bytes(bm: u32, bn: u32, bk: u32) -> u32 {
    (bm + bn) * bk * 2
}

/// Dynamic shared bytes of an `stages`-deep ring.
pub const fn shared_bytes(bm: u32, bn: u32, bk: u32, stages: u32) -> usize {
    CpAsyncRing::bytes(stage_bytes(bm, bn, bk), stages)
}

/// How one thread fills its share of the stages, in order.
pub trait StageLoader {
    /// Issues this thread's loads (or stores) of the next stage into `s`, then moves on to the
    /// stage after. Called once per stage, in stage order, by every thread of the block;
    /// [`run`] commits the `cp.async` group after it.
    ///
    /// # Safety
    /// The loader's own contract (its buffers hold what its geometry implies); `s` lies in the
    /// launch's shared memory.
    unsafe fn load_next(&mut self, s: Stage);
}

/// The mainloop of one block: `k_tiles` stages of `BK_` through an `ST`-deep ring, `WM × WN`
/// warps each computing `BM_/WM × BN_/WN` of the output tile (at most 64 × 64: four m16 by
/// eight n8 tiles). Returns this lane's accumulators: m16 tile `i`, n8 tile `j` at
/// `acc[32 i + 4 j ..]` in the `mma` C layout (entries of tiles the warp does not have stay 0
/// and fold away).
///
/// # Safety
/// Launched with `32 · WM · WN` threads and [`shared_bytes`] of dynamic shared memory; the
/// loader's contract holds. Every thread of the block calls it (it has block barriers).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn run<
    I: TcIn,
    L: StageLoader,
    const BM_: u32,
    const BN_: u32,
    const BK_: u32,
    const WM: u32,
    const WN: u32,
    const ST: u32,
>(
    loader: &mut L,
    k_tiles: u32,
) -> [f32; 128] {
    let (wtm, wtn) = (BM_ / WM, BN_ / WN);
    let (mi, nj) = (wtm / 16, wtn / 8);
    let t = gpu::thread_idx_x();
    let (warp, lane) = (t / 32, t % 32);
    let (wm, wn) = (warp / WN, warp % WN);
    let ring = CpAsyncRing::new(gpu::dynamic_shared_base(), stage_bytes(BM_, BN_, BK_), ST);
    let stage = |so: u32| Stage::at(ring.addr(so), BM_, BN_, BK_);

    let mut acc = [0f32; 128];
    let mut s = 0;
    while s < ST - 1 {
        if s < k_tiles {
            loader.load_next(stage(ring.slot(s)));
        }
        ring.commit();
        s += 1;
    }
    let (q, r) = (lane / 8, lane % 8);
    // The fragments of k16 step `ks` of the stage at byte offset `so`: A's m16 tiles (up to
    // four), B's n8 tiles (up to eight, two per `ldmatrix.x4`).
    let fragments = |so: u32, ks: u32| {
        let st = stage(so);
        let mut af = [[0u32; 4]; 4];
        crate::unroll!(4, i, {
            if (i as u32) < mi {
                let row = wm * wtm + 16 * i as u32 + lane % 16;
                af[i] = st.a.ldmatrix::<4, false>(row, 2 * ks + lane / 16);
            }
        });
        let mut bf = [[0u32; 2]; 8];
        crate::unroll!(4, jp, {
            if (2 * jp as u32) < nj {
                let row = wn * wtn + 16 * jp as u32 + 8 * (q / 2) + r;
                let x = st.b.ldmatrix::<4, false>(row, 2 * ks + q % 2);
                bf[2 * jp] = [x[0], x[1]];
                bf[2 * jp + 1] = [x[2], x[3]];
            }
        });
        (af, bf)
    };
    ring.wait_oldest();
    let mut cur = fragments(0, 0);
    // `rd`: the slot of stage kt (read now); `wr`: the slot of stage kt + ST − 1 (loaded now),
    // which stage kt − 1 used.
    let mut rd = 0;
    let mut wr = ring.slot(ST - 1);
    let mut kt = 0;
    // One iteration: `$load` (the loads of stage kt + ST − 1, or nothing), then the `mma`s of
    // stage kt with the fragments one step ahead. A macro, so both loops below get their own
    // straight-line copy.
    macro_rules! iteration {
        ($($load:expr)?) => {{
            $($load;)?
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
    let loaded_until = k_tiles.saturating_sub(ST - 1);
    while kt < loaded_until {
        iteration!(loader.load_next(stage(wr)));
    }
    while kt < k_tiles {
        iteration!();
    }
    ring.wait_all();
    acc
}

/// Stores the accumulators [`run`] returned for the output tile at `(m0, n0)` through `epi`
/// (which drops rows and columns outside the output).
///
/// # Safety
/// As for [`Epilogue::store_frag`].
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn store<O: TcOut, const BM_: u32, const BN_: u32, const WM: u32, const WN: u32>(
    epi: &Epilogue<O>,
    acc: &[f32; 128],
    m0: u32,
    n0: u32,
) {
    let (wtm, wtn) = (BM_ / WM, BN_ / WN);
    let (mi, nj) = (wtm / 16, wtn / 8);
    let t = gpu::thread_idx_x();
    let (warp, lane) = (t / 32, t % 32);
    let (wm, wn) = (warp / WN, warp % WN);
    let (g, tq) = (lane / 4, lane % 4);
    if nj.is_multiple_of(4) && epi.chunks_aligned() {
        // 16-byte chunks: quads of n8 fragments, rows `row` and `row + 8`.
        crate::unroll!(4, i, {
            crate::unroll!(2, j4, {
                if (i as u32) < mi && (j4 as u32) < nj / 4 {
                    crate::unroll!(2, h, {
                        let o = 32 * i + 16 * j4 + 2 * h;
                        let row = m0 + wm * wtm + 16 * i as u32 + 8 * h as u32 + g;
                        let col8 = n0 + wn * wtn + 32 * j4 as u32;
                        let d = [
                            [acc[o], acc[o + 1]],
                            [acc[o + 4], acc[o + 5]],
                            [acc[o + 8], acc[o + 9]],
                            [acc[o + 12], acc[o + 13]],
                        ];
                        epi.store_row_x4(row, col8, tq, d);
                    });
                }
            });
        });
        return;
    }
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
