//! The warp-specialized driver for a **pair of clustered blocks** (sm_90a): two blocks of a
//! 2-block cluster compute vertically neighbouring output tiles, `(2i, j)` and `(2i + 1, j)`,
//! which read the same B. Each block loads its own A and **half of the shared B** per stage and
//! multicasts that half into both blocks' rings (`cp.async.bulk.tensor … .multicast::cluster`),
//! so B crosses L2 once per pair instead of once per block (CUTLASS's and cuBLAS's 2-CTA
//! clusters at 4096³; `notes/hgemm.md`, session 16).
//!
//! The ring protocol of [`ws::run`](super::ws::run), stretched over the pair:
//! - a stage's `full` barrier (in each block) expects the whole stage — its own A, its own half
//!   of B, and the half the partner multicasts — and completes when all of it has landed in
//!   this block; the partner's bytes may arrive before this block's producer announces them
//!   (the transaction count goes negative for a while; the phase cannot complete before the
//!   producer's arrival);
//! - a stage's `empty` barrier (in each block) counts the consumer warps of **both** blocks
//!   ([`TmaRing::release_prev_pair`]), since either producer writes into both blocks' slots;
//! - the barriers are initialized in both blocks before either's loads or arrivals reach them,
//!   and neither block exits while the other may still touch its shared memory: a cluster
//!   barrier after the set-up and one at the end, which every thread of both blocks reaches
//!   (no early return, unlike [`ws::run`](super::ws::run)'s producer warps).
//!
//! Both blocks walk the same persistent schedule over **pairs of tiles** (`grid` has tiles of
//! twice the kernel's rows; the cluster's rank picks the half), so their producers fill the same
//! stages in the same order. A pair whose second tile lies below C (an odd count of tile rows)
//! still runs it: its A box is all out of range (TMA fills zeros), and the epilogue stores
//! nothing outside C.
//!
//! A kernel for this driver is a [`WsKernel`] whose `produce` issues its A and its half of B
//! (multicast) and no per-tile operand; `consume`, `drain`, `finish` are [`ws::run`]'s.
//!
//! [`TmaRing::release_prev_pair`]: crate::gpu::ring::TmaRing::release_prev_pair

use super::ws::WsKernel;
use crate::gpu::ring::{RingCursor, TmaRing};
use crate::gpu::sched::TileGrid;
use crate::gpu::{self, hopper};

/// Runs kernel `k` over `grid`'s tile pairs (tiles of `2 · rows` rows), `k_tiles` k-tiles each,
/// persistent over the launch's clusters of two blocks along x. The hooks see the block's own
/// tile, `(2 · pair_row + rank, pair_col)`.
///
/// # Safety
/// As for [`ws::run`](super::ws::run), launched with clusters of `(2, 1, 1)` blocks; `K` has no
/// per-tile operand, and its `produce` fills both blocks' slots with the partner (its own half
/// of the shared operand multicast to both ranks).
#[inline(always)]
pub unsafe fn run_pair<K: WsKernel, const PRODUCER_REGS: u32, const CONSUMER_REGS: u32>(
    k: &K,
    grid: TileGrid,
    k_tiles: u32,
) {
    const { assert!(K::TILE_BYTES == 0) };
    let tid = gpu::thread_idx_x();
    let ring = TmaRing::carve(gpu::dynamic_shared_base(), K::STAGE_BYTES, K::STAGES);
    let rank = hopper::cluster_ctarank();
    if tid == 0 {
        k.prefetch();
        // Both blocks' consumer warps give each stage back.
        ring.init(2 * 4 * K::CONSUMERS);
    }
    // The partner's loads and arrivals may reach this block's barriers only once they exist.
    hopper::cluster_sync();

    let (pair0, pairs) = (hopper::cluster_id_x(), hopper::cluster_count_x());
    let own = |t: u32| {
        let (pm, pn) = grid.tile(t);
        (2 * pm + rank, pn)
    };
    let wg = hopper::warpgroup_index();
    if wg == 0 {
        hopper::setmaxnreg_dec::<PRODUCER_REGS>();
        if tid == 0 {
            let mut c = RingCursor::default();
            for t in grid.persistent(pair0, pairs) {
                let tile = own(t);
                let mut kt = 0;
                while kt < k_tiles {
                    let full = ring.produce(c, K::STAGE_BYTES);
                    k.produce(ring.stage(c), full, tile, kt);
                    c.advance();
                    kt += 1;
                }
            }
        }
    } else {
        hopper::setmaxnreg_inc::<CONSUMER_REGS>();
        let consumer = wg - 1;
        let lane = tid % 32;
        let mut acc = K::ACC;
        let mut c = RingCursor::default();
        for t in grid.persistent(pair0, pairs) {
            let tile = own(t);
            if k_tiles == 0 {
                k.finish_empty(tile, consumer);
                continue;
            }
            k.begin(&mut acc, 0, tile, consumer, 0);
            let mut kt = 0;
            while kt < k_tiles {
                ring.wait_full(c);
                k.consume(&mut acc, ring.stage(c), consumer, kt);
                if kt > 0 && lane == 0 {
                    ring.release_prev_pair(c);
                }
                c.advance();
                kt += 1;
            }
            k.drain(&mut acc);
            if lane == 0 {
                ring.release_prev_pair(c);
            }
            k.finish(&mut acc, tile, consumer);
        }
        k.consumer_done(&mut acc, consumer);
    }
    // Neither block leaves while the other may still multicast into it or arrive on its
    // barriers.
    hopper::cluster_sync();
}
