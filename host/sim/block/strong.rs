//! Strong global accesses of a simulated thread — atomics, release stores, acquire loads — and
//! the thread-local through which [`crate::sim::sync`] reaches the thread that is running.

use super::*;
use crate::sim::shadow::{How, Know};

std::thread_local! {
    static CURRENT: Cell<*const Thread> = const { Cell::new(std::ptr::null()) };
}

pub(super) fn enter(t: *const Thread) {
    CURRENT.with(|c| c.set(t));
}

pub(super) fn leave() {
    CURRENT.with(|c| c.set(std::ptr::null()));
}

/// A strong 32-bit global access.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Strong {
    /// `ld.acquire.gpu`: returns the value.
    Acquire,
    /// `st.release.gpu` of the value.
    Release(u32),
    /// `st.relaxed.gpu` of the value.
    Relaxed(u32),
    /// `atom.add.relaxed.gpu`: returns the old value.
    Add(u32),
}

/// Performs `op` on the `u32` at `addr` as the simulated thread running on this OS thread.
///
/// # Panics
/// Outside a simulated launch (as every `gpu::` primitive does).
pub(crate) fn current(op: Strong, addr: u64, site: Site) -> u32 {
    let t = CURRENT.with(|c| c.get());
    assert!(
        !t.is_null(),
        "a rustile::sim::sync primitive ran outside a simulated launch"
    );
    // SAFETY: set by `schedule` to the thread it resumes, which outlives the resume.
    unsafe { &*t }.strong(op, addr, site)
}

impl Thread {
    fn strong(&self, op: Strong, addr: u64, site: Site) -> u32 {
        self.step(site);
        self.check_aligned(Space::Global, addr, 4, site);
        let (how, value) = match op {
            Strong::Acquire => (
                How {
                    write: false,
                    strong: true,
                    rmw: false,
                },
                None,
            ),
            Strong::Release(v) | Strong::Relaxed(v) => (
                How {
                    write: true,
                    strong: true,
                    rmw: false,
                },
                Some(v),
            ),
            Strong::Add(v) => (
                How {
                    write: true,
                    strong: true,
                    rmw: true,
                },
                Some(v),
            ),
        };
        let old = self
            .global(addr, 4, how, |d| {
                let old = u32::from_le_bytes([d[0], d[1], d[2], d[3]]);
                let new = match op {
                    Strong::Add(v) => Some(old.wrapping_add(v)),
                    _ => value,
                };
                if let Some(v) = new {
                    d.copy_from_slice(&v.to_le_bytes());
                }
                old
            })
            .unwrap_or_else(|e| self.fail(e, site));
        self.record(Space::Global, addr, 4, how.write, site);
        let b = self.block();
        let order = b.order();
        if !order.enabled {
            return old;
        }
        match op {
            Strong::Acquire => {
                if let Some(published) = order.released.borrow().get(&addr) {
                    shadow::join(&mut self.know.borrow_mut(), published);
                }
            }
            Strong::Release(_) => {
                // What this thread knows, its block's barrier intervals before this one, and its
                // own accesses up to this store.
                let mut published = b.know.borrow().clone();
                shadow::join(&mut published, &self.know.borrow());
                let mine = Know {
                    start: b.start,
                    full: b.epoch_start.get(),
                    tid: self.linear,
                    upto: b.now.get() + 1,
                };
                shadow::join(&mut published, &[mine]);
                order.released.borrow_mut().insert(addr, published);
                // The block's later accesses are not released by this store.
                let iv = order.fresh().unwrap_or_else(|e| self.fail(e, site));
                b.now.set(iv);
            }
            Strong::Relaxed(_) | Strong::Add(_) => {}
        }
        old
    }
}
