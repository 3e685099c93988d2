//! Multi-stage shared-memory rings: the loads of stage `s + STAGES − 1` are in flight while
//! stage `s` is computed on.
//!
//! - [`CpAsyncRing`] (sm_80+, and the simulator): every thread copies its share of a stage with
//!   `cp.async`, one commit group per stage; a stage is ready once this thread's group has landed
//!   ([`CpAsyncRing::wait_oldest`]) and a block barrier has passed. Slots are addressed by byte
//!   offsets that advance one stage at a time and wrap ([`CpAsyncRing::next`]), never by
//!   `slot % stages` (a multiply-high chain per address when the depth is not a power of two).
//! - [`TmaRing`] (sm_90a): one producer thread fills a stage with TMA loads; a `full` mbarrier
//!   per stage counts the bytes in, an `empty` mbarrier per stage counts the consumer warps out.
//!   A [`RingCursor`] (one register: the number of stages passed) gives the slot and the phase
//!   bit: a mask and a shift when the depth is a power of two, a multiply-high otherwise (once per
//!   stage, on scalar registers; attention's d = 128 ring is 3 deep, the most 64 KiB stages that
//!   fit beside its Q block).
//!
//! The depth and stage size are values, not const generics, so a generic kernel can pass its own
//! parameters; after inlining they are constants.

use super::sync_threads;

/// A `stages`-deep ring of `stage_bytes` slots at shared-window address `base`, filled with
/// `cp.async` by every thread of the block.
#[derive(Clone, Copy, Debug)]
pub struct CpAsyncRing {
    /// Shared-window address of slot 0.
    pub base: u32,
    /// Bytes per stage.
    pub stage_bytes: u32,
    /// Depth.
    pub stages: u32,
}

impl CpAsyncRing {
    /// The ring at `base`.
    #[inline(always)]
    pub const fn new(base: u32, stage_bytes: u32, stages: u32) -> Self {
        Self {
            base,
            stage_bytes,
            stages,
        }
    }

    /// Shared bytes of a ring.
    pub const fn bytes(stage_bytes: u32, stages: u32) -> usize {
        (stage_bytes * stages) as usize
    }

    /// Byte offset of slot `s` (< `stages`), for the prologue.
    #[inline(always)]
    pub fn slot(&self, s: u32) -> u32 {
        s * self.stage_bytes
    }

    /// Shared-window address of the slot at byte offset `off`.
    #[inline(always)]
    pub fn addr(&self, off: u32) -> u32 {
        self.base + off
    }

    /// The slot after the one at byte offset `off`, wrapping after the last.
    #[inline(always)]
    pub fn next(&self, off: u32) -> u32 {
        if off + self.stage_bytes == self.stages * self.stage_bytes {
            0
        } else {
            off + self.stage_bytes
        }
    }

    /// Closes this thread's copies of one stage into a group (empty groups too: one group per
    /// stage keeps [`CpAsyncRing::wait_oldest`]'s count right).
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn commit(&self) {
        super::cp_async_commit()
    }

    /// Waits until the oldest stage in flight has landed for every thread: at most `stages − 2`
    /// of this thread's groups pending, then a block barrier. (Deeper rings than 6 wait for
    /// more than they must: correct, but no deeper in effect.)
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn wait_oldest(&self) {
        match self.stages {
            0..=2 => super::cp_async_wait::<0>(),
            3 => super::cp_async_wait::<1>(),
            4 => super::cp_async_wait::<2>(),
            5 => super::cp_async_wait::<3>(),
            _ => super::cp_async_wait::<4>(),
        }
        sync_threads();
    }

    /// Waits for all of this thread's copies (before the ring's memory is reused).
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn wait_all(&self) {
        super::cp_async_wait::<0>()
    }
}

/// Position in a [`TmaRing`]: how many stages this thread has passed. The producer and every
/// consumer keep their own, advancing in the same order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RingCursor(pub u32);

impl RingCursor {
    /// The next stage.
    #[inline(always)]
    pub fn advance(&mut self) {
        self.0 += 1;
    }

    /// `n` stages on (a ping-pong consumer passing over the other consumer's tile).
    #[inline(always)]
    pub fn advance_by(&mut self, n: u32) {
        self.0 += n;
    }
}

/// A `stages`-deep ring of `stage_bytes` slots filled by TMA, with a `full` and an `empty`
/// mbarrier per slot. Layout from the carved base: the slots, 1024-byte aligned (the 128-byte
/// swizzle period), then `stages` full barriers, then `stages` empty barriers.
#[derive(Clone, Copy, Debug)]
pub struct TmaRing {
    /// Shared-window address of slot 0 (1024-byte aligned).
    pub data: u32,
    /// Address of the first `full` barrier.
    pub full: u32,
    /// Address of the first `empty` barrier.
    pub empty: u32,
    /// Bytes per stage.
    pub stage_bytes: u32,
    /// Depth (≥ 1).
    pub stages: u32,
}

impl TmaRing {
    /// Shared bytes of a ring: the slots, the barriers, and up to 1 KiB of alignment.
    pub const fn bytes(stage_bytes: u32, stages: u32) -> usize {
        (stages * stage_bytes + 2 * stages * 8 + 1024) as usize
    }

    /// The ring carved from shared-window address `base`.
    #[inline(always)]
    pub const fn carve(base: u32, stage_bytes: u32, stages: u32) -> Self {
        assert!(stages >= 1 && stage_bytes.is_multiple_of(1024));
        let data = (base + 1023) & !1023;
        let full = data + stages * stage_bytes;
        Self {
            data,
            full,
            empty: full + stages * 8,
            stage_bytes,
            stages,
        }
    }

    /// Slot index of cursor `c`.
    #[inline(always)]
    pub fn slot(&self, c: RingCursor) -> u32 {
        c.0 % self.stages
    }

    /// Phase parity of the slot's current use.
    #[inline(always)]
    pub fn phase(&self, c: RingCursor) -> u32 {
        (c.0 / self.stages) & 1
    }

    /// Shared-window address of cursor `c`'s slot (1024-byte aligned).
    #[inline(always)]
    pub fn stage(&self, c: RingCursor) -> u32 {
        let at = self.data + self.slot(c) * self.stage_bytes;
        // SAFETY: `carve` aligned `data` to 1024 and checked that `stage_bytes` is a multiple of
        // 1024. Telling LLVM lets `stage + offset` inside a swizzle period fold into the
        // descriptor bits as an `or` (the hand-written loop got this from its own arithmetic).
        unsafe { core::hint::assert_unchecked(at.is_multiple_of(1024)) };
        at
    }
}

#[cfg(all(target_arch = "nvptx64", rustile_sm90a))]
impl TmaRing {
    /// Initializes the barriers: each `full` expects one (producer) arrival plus the TMA bytes,
    /// each `empty` `consumers` arrivals. One thread calls it; a block barrier must follow
    /// before any other use.
    ///
    /// # Safety
    /// The launch's shared memory holds [`TmaRing::bytes`] from the carved base.
    #[inline(always)]
    pub unsafe fn init(&self, consumers: u32) {
        use super::hopper;
        let mut s = 0;
        while s < self.stages {
            hopper::mbarrier_init(self.full + 8 * s, 1);
            hopper::mbarrier_init(self.empty + 8 * s, consumers);
            s += 1;
        }
        hopper::fence_barrier_init();
    }

    /// Producer: waits until the consumers have released cursor `c`'s slot (the first pass over
    /// the ring does not wait), then announces `bytes` of TMA loads on its `full` barrier.
    /// Returns that barrier, for the loads to complete.
    ///
    /// # Safety
    /// [`TmaRing::init`] and a block barrier came first; the loads issued then total `bytes`.
    #[inline(always)]
    pub unsafe fn produce(&self, c: RingCursor, bytes: u32) -> u32 {
        let s = self.slot(c);
        super::hopper::mbarrier_wait(self.empty + 8 * s, self.phase(c) ^ 1);
        let full = self.full + 8 * s;
        super::hopper::mbarrier_arrive_expect_tx(full, bytes);
        full
    }

    /// Consumer: waits until cursor `c`'s slot is full.
    ///
    /// # Safety
    /// [`TmaRing::init`] and a block barrier came first.
    #[inline(always)]
    pub unsafe fn wait_full(&self, c: RingCursor) {
        super::hopper::mbarrier_wait(self.full + 8 * self.slot(c), self.phase(c));
    }

    /// Consumer: gives the slot of stage `c − 1` back to the producer (one arrival; the ring was
    /// initialized for one per consumer warp).
    ///
    /// # Safety
    /// Nothing of this consumer still reads that slot.
    #[inline(always)]
    pub unsafe fn release_prev(&self, c: RingCursor) {
        let prev = (c.0 + self.stages - 1) % self.stages;
        super::hopper::mbarrier_arrive(self.empty + 8 * prev);
    }

    /// [`TmaRing::release_prev`] for a pair of clustered blocks: the slot of stage `c − 1` is
    /// given back to both blocks' producers (one arrival on each block's `empty` barrier), since
    /// either may multicast into this block's copy of the slot.
    ///
    /// # Safety
    /// Nothing of this consumer still reads that slot; both blocks of the cluster are running.
    #[inline(always)]
    pub unsafe fn release_prev_pair(&self, c: RingCursor) {
        use super::hopper;
        let prev = (c.0 + self.stages - 1) % self.stages;
        let bar = self.empty + 8 * prev;
        hopper::mbarrier_arrive_cluster(hopper::map_shared_rank(bar, 0));
        hopper::mbarrier_arrive_cluster(hopper::map_shared_rank(bar, 1));
    }
}
