//! The warp-specialized producer/consumer driver (sm_90a), ThunderKittens' `lcf` in Rust.
//!
//! Warpgroup 0 is the producer: it gives registers away (`setmaxnreg.dec`) and one of its threads
//! keeps a [`TmaRing`] full, running up to `STAGES` k-tiles ahead, across output tiles too, so the
//! next tile's loads overlap this tile's epilogue. Warpgroups `1..=CONSUMERS` are the consumers:
//! they take the registers (`setmaxnreg.inc`), wait for each stage, compute on it and give it
//! back. Both walk the same persistent tile schedule ([`TileGrid::persistent`]).
//!
//! The driver owns the ring, the barrier set-up, the register split and the loops; a kernel is a
//! [`WsKernel`]: what a stage holds (`produce`), what is computed on it (`consume`), how the
//! in-flight work retires (`drain`) and how a tile leaves (`finish`, `finish_empty`).
//!
//! Per-tile operands (attention's Q block): a kernel with `TILE_BYTES > 0` gets a second TMA ring
//! of depth 1 beside the k-tile ring; the producer fills it once per output tile
//! (`produce_tile`), the consumers wait for it and receive its address in `begin`, and give it
//! back after the tile's `drain`. The number of k-tiles may differ per tile (`k_tiles_of`:
//! causal attention skips the key tiles above the diagonal); a tile with none goes to
//! `finish_empty`.
//!
//! Stream-K ([`run_stream_k`]): instead of whole tiles, each block walks one contiguous range of
//! the launch's `tiles × k_tiles` k-iterations ([`StreamK`]). A segment that does not start at
//! a tile's first k-tile leaves its accumulators as partial sums (`store_partial`) and
//! releases a flag; the block holding the tile's first segment, which reaches it last in its
//! walk, acquires the later segments' flags in order, adds their sums (`add_partial`) and
//! finishes the tile. Every block must be resident at once (a persistent grid of at most one
//! block per SM): a finishing block waits for blocks after it.
//!
//! Release protocol: `consume(kt)` may leave its reads of stage `kt` in flight (asynchronous
//! `wgmma`), but must have retired those of stage `kt − 1`; the driver then releases stage
//! `kt − 1`. After a tile's last k-tile, `drain` retires everything and the driver releases the
//! last stage before `finish`, so the producer can refill it during the epilogue.

use crate::gpu::ring::{RingCursor, TmaRing};
use crate::gpu::sched::{StreamK, TileGrid};
use crate::gpu::{self, hopper};

/// A warp-specialized kernel's hooks. Hooks run on every thread of a consumer warpgroup (the
/// consumer hooks) or on the producer's one thread (`produce`, `prefetch`).
pub trait WsKernel {
    /// Ring depth.
    const STAGES: u32;
    /// Bytes one stage holds (all of it arrives by TMA: the `full` barrier counts them).
    const STAGE_BYTES: u32;
    /// Consumer warpgroups.
    const CONSUMERS: u32;
    /// A consumer thread's state across k-tiles (its accumulators).
    type Acc;
    /// The state before the first tile.
    const ACC: Self::Acc;

    /// Bytes of the per-tile operand, loaded once per output tile into its own depth-1 ring
    /// (a multiple of 1024); 0: none (the GEMM).
    const TILE_BYTES: u32 = 0;

    /// The k-tiles of output tile `tile`; the launch's `k_tiles` unless the kernel says
    /// otherwise (causal attention).
    #[inline(always)]
    fn k_tiles_of(&self, _tile: (u32, u32), k_tiles: u32) -> u32 {
        k_tiles
    }

    /// Producer thread: issue the TMA loads of `tile`'s per-tile operand into `at`, completing
    /// `full` with exactly `TILE_BYTES` (only when `TILE_BYTES > 0`).
    ///
    /// # Safety
    /// The slot is free; `full` expects the bytes.
    #[inline(always)]
    unsafe fn produce_tile(&self, _at: u32, _full: u32, _tile: (u32, u32)) {}

    /// Consumer: a tile with k-tiles starts at k-tile `kb` (0 unless stream-K cut the tile); its
    /// per-tile operand (if any) has landed at `at`. Reset the per-tile state here.
    ///
    /// # Safety
    /// Before the tile's first `consume`.
    #[inline(always)]
    unsafe fn begin(
        &self,
        _acc: &mut Self::Acc,
        _at: u32,
        _tile: (u32, u32),
        _consumer: u32,
        _kb: u32,
    ) {
    }

    /// Stream-K: the flags, one per block and consumer (`block · CONSUMERS + consumer`), zero
    /// at launch and left zero.
    #[inline(always)]
    fn flags(&self) -> *mut u32 {
        core::ptr::null_mut()
    }

    /// Stream-K consumer: store this thread's accumulators as block `block`'s partial sums (in
    /// register order: the finishing block's same thread adds them back).
    ///
    /// # Safety
    /// After `drain`; only [`run_stream_k`] calls it.
    #[inline(always)]
    unsafe fn store_partial(&self, _acc: &Self::Acc, _block: u32, _consumer: u32) {}

    /// Stream-K consumer: add block `block`'s partial sums (stored by [`WsKernel::store_partial`]
    /// and released) to this thread's accumulators.
    ///
    /// # Safety
    /// After the flag's acquire; only [`run_stream_k`] calls it.
    #[inline(always)]
    unsafe fn add_partial(&self, _acc: &mut Self::Acc, _block: u32, _consumer: u32) {}

    /// Consumer: after its last tile (e.g. to balance named-barrier arrivals).
    ///
    /// # Safety
    /// Once, after every `finish`.
    #[inline(always)]
    unsafe fn consumer_done(&self, _acc: &mut Self::Acc, _consumer: u32) {}

    /// Producer thread, once before the ring exists (e.g. prefetch tensor maps).
    ///
    /// # Safety
    /// Called by thread 0 only.
    unsafe fn prefetch(&self) {}

    /// Producer thread: issue the TMA loads of k-tile `kt` (counted from the tile's first) of
    /// output tile `tile` into the slot
    /// at `stage`, completing `full` with exactly `STAGE_BYTES`.
    ///
    /// # Safety
    /// The slot is free; `full` expects the bytes.
    unsafe fn produce(&self, stage: u32, full: u32, tile: (u32, u32), kt: u32);

    /// Consumer `consumer` (0-based): compute k-tile `kt` (counted from the tile's first) of
    /// the current tile from the slot at `stage`; retire the reads of the previous stage before
    /// returning.
    ///
    /// # Safety
    /// The slot is full.
    unsafe fn consume(&self, acc: &mut Self::Acc, stage: u32, consumer: u32, kt: u32);

    /// Consumer: retire every read still in flight (the tile's last stage).
    ///
    /// # Safety
    /// After the tile's last `consume`.
    unsafe fn drain(&self, acc: &mut Self::Acc);

    /// Consumer: write the tile out.
    ///
    /// # Safety
    /// After `drain`.
    unsafe fn finish(&self, acc: &mut Self::Acc, tile: (u32, u32), consumer: u32);

    /// Consumer: write out a tile with no k-tiles (K = 0).
    ///
    /// # Safety
    /// Called instead of the k-loop when K = 0.
    unsafe fn finish_empty(&self, tile: (u32, u32), consumer: u32);
}

/// Runs kernel `k` over `grid`'s tiles, `k_tiles` k-tiles each, persistent over the launch's
/// blocks. The launch has `128 · (1 + CONSUMERS)` threads and [`TmaRing::bytes`] of dynamic
/// shared memory; `PRODUCER_REGS`/`CONSUMER_REGS` are the per-thread registers after the split
/// (multiples of 8, within the launch's allocation).
///
/// # Safety
/// As the hooks require; the grid is at most [`TileGrid::tiles`] blocks.
#[inline(always)]
pub unsafe fn run<K: WsKernel, const PRODUCER_REGS: u32, const CONSUMER_REGS: u32>(
    k: &K,
    grid: TileGrid,
    k_tiles: u32,
) {
    let tid = gpu::thread_idx_x();
    let ring = TmaRing::carve(gpu::dynamic_shared_base(), K::STAGE_BYTES, K::STAGES);
    // The per-tile operand's ring (depth 1) after the k-tile ring's barriers.
    let tiles = TmaRing::carve(ring.empty + 8 * K::STAGES, K::TILE_BYTES, 1);
    if tid == 0 {
        k.prefetch();
        ring.init(4 * K::CONSUMERS);
        if K::TILE_BYTES > 0 {
            tiles.init(4 * K::CONSUMERS);
        }
    }
    gpu::sync_threads();

    let wg = hopper::warpgroup_index();
    if wg == 0 {
        // Producer: one thread keeps the ring full; the warpgroup gives its registers away.
        hopper::setmaxnreg_dec::<PRODUCER_REGS>();
        if tid != 0 {
            return;
        }
        let mut c = RingCursor::default();
        let mut tc = RingCursor::default();
        for t in grid.persistent(gpu::block_idx_x(), gpu::grid_dim_x()) {
            let tile = grid.tile(t);
            let k_tiles = k.k_tiles_of(tile, k_tiles);
            if K::TILE_BYTES > 0 && k_tiles > 0 {
                let full = tiles.produce(tc, K::TILE_BYTES);
                k.produce_tile(tiles.stage(tc), full, tile);
                tc.advance();
            }
            produce_stages(k, &ring, &mut c, tile, 0, k_tiles);
        }
        return;
    }

    hopper::setmaxnreg_inc::<CONSUMER_REGS>();
    let consumer = wg - 1;
    let lane = tid % 32;
    let mut acc = K::ACC;
    let mut c = RingCursor::default();
    let mut tc = RingCursor::default();
    for t in grid.persistent(gpu::block_idx_x(), gpu::grid_dim_x()) {
        let tile = grid.tile(t);
        let k_tiles = k.k_tiles_of(tile, k_tiles);
        if k_tiles == 0 {
            k.finish_empty(tile, consumer);
            continue;
        }
        let at = if K::TILE_BYTES > 0 {
            tiles.wait_full(tc);
            tiles.stage(tc)
        } else {
            0
        };
        k.begin(&mut acc, at, tile, consumer, 0);
        consume_stages(k, &mut acc, &ring, &mut c, consumer, 0, k_tiles);
        k.drain(&mut acc);
        if lane == 0 {
            ring.release_prev(c);
        }
        if K::TILE_BYTES > 0 {
            tc.advance();
            if lane == 0 {
                tiles.release_prev(tc);
            }
        }
        k.finish(&mut acc, tile, consumer);
    }
    k.consumer_done(&mut acc, consumer);
}

/// The producer's loop over one tile's k-tiles `kb..ke`: each into the next ring stage.
#[inline(always)]
unsafe fn produce_stages<K: WsKernel>(
    k: &K,
    ring: &TmaRing,
    c: &mut RingCursor,
    tile: (u32, u32),
    kb: u32,
    ke: u32,
) {
    let mut kt = kb;
    while kt < ke {
        let full = ring.produce(*c, K::STAGE_BYTES);
        k.produce(ring.stage(*c), full, tile, kt);
        c.advance();
        kt += 1;
    }
}

/// A consumer's loop over one tile's k-tiles `kb..ke`: wait for each stage, compute on it, and
/// give back the one before (`consume` retired it: one arrival per warp, from lane 0). The
/// last stage stays held until the caller's `drain`.
#[inline(always)]
unsafe fn consume_stages<K: WsKernel>(
    k: &K,
    acc: &mut K::Acc,
    ring: &TmaRing,
    c: &mut RingCursor,
    consumer: u32,
    kb: u32,
    ke: u32,
) {
    let lane = gpu::thread_idx_x() % 32;
    let mut kt = kb;
    while kt < ke {
        ring.wait_full(*c);
        k.consume(acc, ring.stage(*c), consumer, kt);
        if kt > kb && lane == 0 {
            ring.release_prev(*c);
        }
        c.advance();
        kt += 1;
    }
}

/// Named barriers of [`run_pingpong`]'s turn order: consumer `c` waits at `TURN + c` for its
/// turn to wait on the ring (ids 1 and 2 are the consumers' own, [`stream_k_fixup`]'s and the
/// conv's TMA-store staging).
pub const TURN: u32 = 3;

/// [`run`] with **ping-pong consumers** (CUTLASS's ping-pong schedule): each consumer warpgroup
/// computes whole output tiles on its own, the block's tiles going to consumers `0, 1, 0, 1, …`
/// in its persistent order, so one consumer's epilogue (and its `drain`) runs under the other's
/// `wgmma`s instead of every warpgroup of the block storing at once. The producer is [`run`]'s:
/// it fills the ring in tile order, whoever consumes; each stage is released by the four warps
/// of the consumer that owns it (the `empty` barriers count 4), and a consumer passes over the
/// other's stages without touching them ([`RingCursor::advance_by`]).
///
/// The turn: consumer `c` waits on its tile's stages only after the previous tile's owner has
/// waited on all of that tile's stages (named barrier [`TURN`]` + c`, arrived at by the other
/// consumer after its k-loop). Besides ordering the two main loops, the turn is what makes
/// skipping safe: a `full` barrier's wait tests a phase *parity*, so a consumer that ran a
/// whole ring ahead of a stage that has not landed yet would pass on a stale phase. With the
/// turn, every stage before the one a consumer waits on has completed its `full` phase.
///
/// What the hooks see: `consumer` is the warpgroup (0 or 1), and each consumer's hooks cover
/// the whole tile (a kernel written for [`run`] splits a tile between consumers; one for this
/// driver does not). No per-tile operand (`TILE_BYTES` = 0) and no stream-K.
///
/// # Safety
/// As for [`run`], with `CONSUMERS` = 2 and hooks that compute whole tiles.
#[inline(always)]
pub unsafe fn run_pingpong<K: WsKernel, const PRODUCER_REGS: u32, const CONSUMER_REGS: u32>(
    k: &K,
    grid: TileGrid,
    k_tiles: u32,
) {
    const { assert!(K::CONSUMERS == 2 && K::TILE_BYTES == 0) };
    let tid = gpu::thread_idx_x();
    let ring = TmaRing::carve(gpu::dynamic_shared_base(), K::STAGE_BYTES, K::STAGES);
    if tid == 0 {
        k.prefetch();
        // A stage's owner is one warpgroup: four warps give it back.
        ring.init(4);
    }
    gpu::sync_threads();

    let wg = hopper::warpgroup_index();
    let (block, blocks) = (gpu::block_idx_x(), gpu::grid_dim_x());
    if wg == 0 {
        hopper::setmaxnreg_dec::<PRODUCER_REGS>();
        if tid != 0 {
            return;
        }
        let mut c = RingCursor::default();
        for t in grid.persistent(block, blocks) {
            let tile = grid.tile(t);
            let k_tiles = k.k_tiles_of(tile, k_tiles);
            produce_stages(k, &ring, &mut c, tile, 0, k_tiles);
        }
        return;
    }

    hopper::setmaxnreg_inc::<CONSUMER_REGS>();
    let consumer = wg - 1;
    let lane = tid % 32;
    let mut acc = K::ACC;
    let mut c = RingCursor::default();
    // The block's tiles alternate: the `i`-th goes to consumer `i % 2`.
    let mut owner = 0;
    let mut first = true;
    for t in grid.persistent(block, blocks) {
        let tile = grid.tile(t);
        let k_tiles = k.k_tiles_of(tile, k_tiles);
        let mine = owner == consumer;
        owner ^= 1;
        if !mine {
            c.advance_by(k_tiles);
            continue;
        }
        // The turn: the previous tile's owner has waited on all of its stages. Consumer 0's
        // first tile is the block's first: nothing before it.
        if !(first && consumer == 0) {
            hopper::named_barrier_sync(TURN + consumer, 256);
        }
        first = false;
        // The next tile's owner may wait once this consumer has waited on its stages; the
        // block's last tile hands the turn to no one (every arrival is waited off).
        let hand_on = t + blocks < grid.tiles();
        if k_tiles == 0 {
            if hand_on {
                hopper::named_barrier_arrive(TURN + 1 - consumer, 256);
            }
            k.finish_empty(tile, consumer);
            continue;
        }
        k.begin(&mut acc, 0, tile, consumer, 0);
        consume_stages(k, &mut acc, &ring, &mut c, consumer, 0, k_tiles);
        if hand_on {
            hopper::named_barrier_arrive(TURN + 1 - consumer, 256);
        }
        k.drain(&mut acc);
        if lane == 0 {
            ring.release_prev(c);
        }
        k.finish(&mut acc, tile, consumer);
    }
    k.consumer_done(&mut acc, consumer);
}

/// [`run`] with stream-K: the launch's `grid.tiles() · k_tiles` k-iterations in one contiguous
/// range per block ([`StreamK::new`]: `dp_tiles` = 0), or only those of the tiles from
/// `dp_tiles` on, the tiles before going whole as [`run`]'s persistent walk (the stream-K tail,
/// [`StreamK::tail`]'s `dp_tiles`, which the launcher computes: no division here);
/// `k_tiles_of` is not consulted (every tile has `k_tiles`). The
/// same loops as [`run`] over segments instead of tiles (kept apart so that `run`'s kernels
/// compile exactly as before), plus [`stream_k_fixup`] before each `finish`.
///
/// # Safety
/// As for [`run`]; the grid is at most [`StreamK::grid`] blocks and at most one per SM (all
/// resident at once); [`WsKernel::flags`] holds `grid · CONSUMERS` zeros and the partial-sum
/// hooks address a slot per block and consumer.
#[inline(always)]
pub unsafe fn run_stream_k<K: WsKernel, const PRODUCER_REGS: u32, const CONSUMER_REGS: u32>(
    k: &K,
    grid: TileGrid,
    k_tiles: u32,
    dp_tiles: u32,
) {
    let sk = StreamK {
        tiles: grid.tiles(),
        k_tiles,
        blocks: gpu::grid_dim_x(),
        dp_tiles,
    };
    let tid = gpu::thread_idx_x();
    let ring = TmaRing::carve(gpu::dynamic_shared_base(), K::STAGE_BYTES, K::STAGES);
    let tiles = TmaRing::carve(ring.empty + 8 * K::STAGES, K::TILE_BYTES, 1);
    if tid == 0 {
        k.prefetch();
        ring.init(4 * K::CONSUMERS);
        if K::TILE_BYTES > 0 {
            tiles.init(4 * K::CONSUMERS);
        }
    }
    gpu::sync_threads();

    let wg = hopper::warpgroup_index();
    if wg == 0 {
        hopper::setmaxnreg_dec::<PRODUCER_REGS>();
        if tid != 0 {
            return;
        }
        let mut c = RingCursor::default();
        let mut tc = RingCursor::default();
        for seg in sk.segments(gpu::block_idx_x()) {
            let tile = grid.tile(seg.t);
            if K::TILE_BYTES > 0 {
                let full = tiles.produce(tc, K::TILE_BYTES);
                k.produce_tile(tiles.stage(tc), full, tile);
                tc.advance();
            }
            produce_stages(k, &ring, &mut c, tile, seg.kb, seg.ke);
        }
        return;
    }

    hopper::setmaxnreg_inc::<CONSUMER_REGS>();
    let consumer = wg - 1;
    let lane = tid % 32;
    let mut acc = K::ACC;
    let mut c = RingCursor::default();
    let mut tc = RingCursor::default();
    for seg in sk.segments(gpu::block_idx_x()) {
        let tile = grid.tile(seg.t);
        if seg.ke <= seg.kb {
            // Never (segments are not empty), but said (`<=`, not `==`): a k-loop that may run
            // zero times lets the accumulators' initial values reach `drain`'s wait, and ptxas
            // then serializes every `wgmma` of the kernel (C7515).
            continue;
        }
        let at = if K::TILE_BYTES > 0 {
            tiles.wait_full(tc);
            tiles.stage(tc)
        } else {
            0
        };
        k.begin(&mut acc, at, tile, consumer, seg.kb);
        consume_stages(k, &mut acc, &ring, &mut c, consumer, seg.kb, seg.ke);
        k.drain(&mut acc);
        if lane == 0 {
            ring.release_prev(c);
        }
        if K::TILE_BYTES > 0 {
            tc.advance();
            if lane == 0 {
                tiles.release_prev(tc);
            }
        }
        if stream_k_fixup(k, &mut acc, &sk, seg.t, seg.kb, seg.ke, consumer) {
            k.finish(&mut acc, tile, consumer);
        }
    }
    k.consumer_done(&mut acc, consumer);
}

/// Stream-K, after a segment `kb..ke` of tile `t`: a later segment leaves its partial sums and
/// releases its flag (returns false: the tile is not this block's to finish); the first
/// segment of a cut tile acquires the later segments' flags, blocks `b + 1, b + 2, …` in
/// order, and adds their sums (returns true: finish the tile). Named barrier `1 + consumer`
/// orders each consumer warpgroup's 128 threads around the flag.
#[inline(always)]
unsafe fn stream_k_fixup<K: WsKernel>(
    k: &K,
    acc: &mut K::Acc,
    sk: &StreamK,
    t: u32,
    kb: u32,
    ke: u32,
    consumer: u32,
) -> bool {
    let block = gpu::block_idx_x();
    let leader = gpu::thread_idx_x() % 128 == 0;
    let flag = |b: u32| k.flags().add((b * K::CONSUMERS + consumer) as usize);
    if kb > 0 {
        k.store_partial(acc, block, consumer);
        // Every thread's partial sums are written before the leader's release (the barrier
        // orders them in the block, the release is cumulative).
        hopper::named_barrier_sync(1 + consumer, 128);
        if leader {
            hopper::fence_acq_rel_gpu();
            hopper::st_release_gpu(flag(block), 1);
        }
        return false;
    }
    let tile_end = (t + 1) * sk.k_tiles;
    let mut covered = t * sk.k_tiles + ke;
    let mut b = block + 1;
    while covered < tile_end {
        if leader {
            while hopper::ld_acquire_gpu(flag(b)) == 0 {}
            // Consumed: zero again for the next launch (nothing else reads it in this one).
            hopper::st_relaxed_gpu(flag(b), 0);
        }
        hopper::named_barrier_sync(1 + consumer, 128);
        k.add_partial(acc, b, consumer);
        let end = sk.start(b + 1);
        covered = if end < tile_end { end } else { tile_end };
        b += 1;
    }
    true
}
