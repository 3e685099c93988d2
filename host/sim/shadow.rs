//! Global-memory shadow state: which bytes of an allocation were ever written (so a read of
//! never-written memory is an error, like `compute-sanitizer --tool initcheck`), and, within one
//! launch, who last wrote and who read each 2-byte granule since (the race detector).
//!
//! The order the race detector checks against is the launch's happens-before relation, built
//! from *intervals*: numbers handed out in execution order, one when a block starts, one at each
//! of its barriers, one after each release store. Blocks run one at a time, so a block's
//! intervals are contiguous and every interval at or above the running block's first one is its
//! own. An access X (interval `iv`, thread `tid`) happens before thread U's access now iff
//! - X is U's block's and (same thread, or an earlier barrier interval: `iv < epoch_start`); or
//! - U knows it through release/acquire: an acquire that read a release store carries the
//!   releasing thread's knowledge (what it acquired itself, what its block's barriers joined)
//!   plus its own block's intervals before its barrier interval and its own accesses up to the
//!   release ([`Know`]); a barrier joins the knowledge of every thread of the block.
//!
//! Accesses from an earlier launch are ordered (a launch boundary orders everything): the race
//! shadow lives for one launch only.

use super::{Allocation, Memory};

/// Bytes per race-shadow granule: the narrowest global access of the kernels (f16/bf16/u16),
/// so distinct 2-byte stores by different threads never share a granule.
pub(crate) const GRANULE: usize = 2;

/// Intervals are numbered `1..MAX_INTERVAL` (0: none; the first reader's interval of a
/// many-reader granule packs into 30 bits).
pub(crate) const MAX_INTERVAL: u32 = 1 << 30;

/// The fill of [`Simulator::alloc_uninit`](super::Simulator::alloc_uninit): `0xffff_ffff` is a
/// NaN as f32, `0xffff` as f16 and as bf16.
pub(crate) const POISON: u8 = 0xff;

const TID: u32 = 0xffff;
/// Accessor flag: an atomic, release or acquire access (strong accesses never race each other).
const STRONG: u32 = 1 << 16;
/// Reader word: several unordered readers; the low 30 bits are the first one's interval.
const MANY: u32 = 1 << 31;
/// Reader word with [`MANY`]: at least one of the readers was a plain (weak) read.
const WEAK: u32 = 1 << 30;

/// One granule: `[writer interval, writer tid | STRONG, latest reader interval, reader word]`;
/// the reader word is `tid | STRONG` for one reader, or `MANY | WEAK | first interval`.
/// All zeros: never accessed in this launch.
pub(crate) type Granule = [u32; 4];

/// What a thread knows of a block's accesses through release/acquire: every access in
/// intervals `start..full` (the block's barrier intervals before the release), and thread
/// `tid`'s accesses in `full..upto` (its own up to the release).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Know {
    pub(crate) start: u32,
    pub(crate) full: u32,
    pub(crate) tid: u32,
    pub(crate) upto: u32,
}

impl Know {
    fn covers(&self, iv: u32, tid: u32) -> bool {
        (self.start..self.full).contains(&iv)
            || (tid == self.tid && (self.full..self.upto).contains(&iv))
    }

    /// Whether `self` covers everything `k` covers.
    fn dominates(&self, k: &Know) -> bool {
        self.start == k.start
            && self.full >= k.full
            && (k.upto <= self.full || (self.tid == k.tid && self.upto >= k.upto))
    }
}

/// Adds the entries of `new` to `into`, keeping no entry another one covers.
pub(crate) fn join(into: &mut Vec<Know>, new: &[Know]) {
    for k in new {
        if into.iter().any(|o| o.dominates(k)) {
            continue;
        }
        into.retain(|o| !k.dominates(o));
        into.push(*k);
    }
}

/// The thread making an access, as the race detector sees it.
pub(crate) struct Who<'a> {
    /// Linear thread index in its block.
    pub(crate) tid: u32,
    /// Its block's first interval.
    pub(crate) block_start: u32,
    /// Its block's current barrier interval's first interval.
    pub(crate) epoch_start: u32,
    /// The current interval.
    pub(crate) now: u32,
    /// Its block's knowledge (joined at barriers) and its own since.
    pub(crate) know: [&'a [Know]; 2],
    /// Names the thread of interval `iv` and linear index `tid` (`None`: several readers).
    pub(crate) describe: &'a dyn Fn(u32, Option<u32>) -> String,
}

impl Who<'_> {
    /// Whether the access of thread `tid` in interval `iv` happens before this one.
    fn ordered(&self, iv: u32, tid: u32) -> bool {
        if iv >= self.block_start && (tid == self.tid || iv < self.epoch_start) {
            return true;
        }
        self.know
            .iter()
            .flat_map(|k| k.iter())
            .any(|k| k.covers(iv, tid))
    }

    /// Whether every access of every thread in intervals `lo..=hi` happens before this one.
    fn ordered_all(&self, lo: u32, hi: u32) -> bool {
        let mut at = lo;
        while at <= hi {
            if at >= self.block_start {
                return hi < self.epoch_start;
            }
            match self
                .know
                .iter()
                .flat_map(|k| k.iter())
                .find(|k| (k.start..k.full).contains(&at))
            {
                Some(k) => at = k.full,
                None => return false,
            }
        }
        true
    }
}

/// How an access touches memory.
#[derive(Clone, Copy, Debug)]
pub(crate) struct How {
    pub(crate) write: bool,
    /// Atomic, release or acquire.
    pub(crate) strong: bool,
    /// A read-modify-write (an atomic): it continues a release sequence instead of ending it.
    pub(crate) rmw: bool,
}

impl How {
    pub(crate) const LOAD: How = How {
        write: false,
        strong: false,
        rmw: false,
    };
    pub(crate) const STORE: How = How {
        write: true,
        strong: false,
        rmw: false,
    };
}

/// Checks one granule against access `how` by `who` and records it; on a race, what kind and
/// with whom (`(interval, Some(tid))`, or `(first interval, None)` for several readers).
fn check(
    g: &mut Granule,
    who: &Who,
    how: How,
) -> std::result::Result<(), (&'static str, u32, Option<u32>)> {
    let [w_iv, w_meta, r_iv, r_meta] = *g;
    let strong = how.strong;
    if w_iv != 0 {
        let w_tid = w_meta & TID;
        let both_strong = strong && w_meta & STRONG != 0;
        if !both_strong && !who.ordered(w_iv, w_tid) {
            let kind = if how.write {
                "write after write"
            } else {
                "read after write"
            };
            return Err((kind, w_iv, Some(w_tid)));
        }
    }
    let mine = who.tid | (if strong { STRONG } else { 0 });
    if how.write {
        if r_iv != 0 {
            if r_meta & MANY != 0 {
                let first = r_meta & (MAX_INTERVAL - 1);
                let all_strong = strong && r_meta & WEAK == 0;
                if !all_strong && !who.ordered_all(first, r_iv) {
                    return Err(("write after read", first, None));
                }
            } else {
                let r_tid = r_meta & TID;
                let both_strong = strong && r_meta & STRONG != 0;
                if !both_strong && !who.ordered(r_iv, r_tid) {
                    return Err(("write after read", r_iv, Some(r_tid)));
                }
            }
        }
        *g = [who.now, mine, 0, 0];
        return Ok(());
    }
    // A read: it replaces the readers it is ordered after (a later write ordered after it is
    // ordered after them too); otherwise the granule has several concurrent readers.
    if r_iv == 0 {
        g[2] = who.now;
        g[3] = mine;
    } else if r_meta & MANY != 0 {
        let first = r_meta & (MAX_INTERVAL - 1);
        let weak = r_meta & WEAK != 0 || !strong;
        if who.ordered_all(first, r_iv) {
            g[3] = who.tid | if weak { 0 } else { STRONG };
        } else if weak {
            g[3] |= WEAK;
        }
        g[2] = who.now;
    } else {
        let weak = r_meta & STRONG == 0 || !strong;
        if who.ordered(r_iv, r_meta & TID) {
            g[3] = who.tid | if weak { 0 } else { STRONG };
        } else {
            g[3] = MANY | (if weak { WEAK } else { 0 }) | r_iv;
        }
        g[2] = who.now;
    }
    Ok(())
}

/// Which bytes of an allocation made without initialisation were written since.
pub(crate) struct InitBits {
    /// Bit `i`: byte `i` was written.
    bits: Vec<u64>,
    /// Bytes not written yet.
    missing: usize,
}

impl InitBits {
    /// `bytes` bytes, none written; `None` if the host has no memory for the bitmap.
    pub(crate) fn new(bytes: usize) -> Option<InitBits> {
        let mut bits = Vec::new();
        bits.try_reserve_exact(bytes.div_ceil(64)).ok()?;
        bits.resize(bytes.div_ceil(64), 0);
        Some(InitBits {
            bits,
            missing: bytes,
        })
    }
}

impl Allocation {
    /// The first byte of `[off, off + len)` never written (by the host or a kernel), if any.
    fn first_uninit(&self, off: usize, len: usize) -> Option<usize> {
        let init = self.init.as_ref()?;
        (off..off + len).find(|&i| init.bits[i / 64] & (1 << (i % 64)) == 0)
    }

    /// Marks bytes `[off, off + len)` written; forgets the bitmap once every byte is.
    pub(crate) fn mark_init(&mut self, off: usize, len: usize) {
        let Some(init) = self.init.as_mut() else {
            return;
        };
        let mut i = off;
        while i < off + len {
            let (w, b) = (i / 64, i % 64);
            let n = (64 - b).min(off + len - i);
            let mask = if n == 64 {
                u64::MAX
            } else {
                ((1u64 << n) - 1) << b
            };
            init.missing -= (mask & !init.bits[w]).count_ones() as usize;
            init.bits[w] |= mask;
            i += n;
        }
        if init.missing == 0 {
            self.init = None;
        }
    }
}

impl Memory {
    /// The bytes of access `how` to `[addr, addr + len)`, after its checks: bounds, and for a
    /// read that every byte was written; with `who` (race detection on), the race check of every
    /// granule it touches, recorded for the launch in progress.
    pub(crate) fn access(
        &mut self,
        addr: u64,
        len: usize,
        how: How,
        who: Option<&Who>,
    ) -> std::result::Result<&mut [u8], String> {
        let kind = if how.write { "store" } else { "load" };
        let (base, _) = self
            .find(addr, len)
            .map_err(|e| format!("out-of-bounds global {kind}: {e}"))?;
        let launch = self.launch;
        let a = self.allocs.get_mut(&base).expect("found above");
        let off = (addr - base) as usize;
        if how.write {
            a.mark_init(off, len);
        } else if let Some(first) = a.first_uninit(off, len) {
            return Err(format!(
                "read of uninitialised global memory: {len} bytes at {addr:#x} (offset {off} of \
                 `{}`, {} bytes, allocated without initialisation): byte {first} was never \
                 written, neither by the host nor by a kernel",
                a.what,
                a.data.len()
            ));
        }
        if let Some(who) = who {
            if a.race_launch != launch {
                let granules = a.data.len().div_ceil(GRANULE);
                let mut shadow = Vec::new();
                shadow.try_reserve_exact(granules).map_err(|_| {
                    format!(
                        "no host memory for the race detector's shadow of `{}` ({} bytes)",
                        a.what,
                        granules * std::mem::size_of::<Granule>()
                    )
                })?;
                shadow.resize(granules, [0; 4]);
                a.race = shadow;
                a.race_launch = launch;
            }
            for gi in off / GRANULE..(off + len).div_ceil(GRANULE) {
                if let Err((race, iv, tid)) = check(&mut a.race[gi], who, how) {
                    let other = match tid {
                        Some(_) => (who.describe)(iv, tid),
                        None => format!(
                            "several reading threads (the first {})",
                            (who.describe)(iv, None)
                        ),
                    };
                    return Err(format!(
                        "global-memory race: {race} on {len} bytes at {addr:#x} (offset {} of `{}`): \
                         the earlier access, by {other} in this launch, is not ordered before this one \
                         (a barrier orders the threads of one block; threads of different blocks need \
                         a release/acquire)",
                        gi * GRANULE,
                        a.what
                    ));
                }
            }
        }
        Ok(&mut a.data[off..off + len])
    }

    /// Drops the race shadows of the launch that ended (they only hold within one launch).
    pub(crate) fn end_launch(&mut self) {
        let launch = self.launch;
        for a in self.allocs.values_mut().filter(|a| a.race_launch == launch) {
            a.race = Vec::new();
            a.race_launch = 0;
        }
    }
}
