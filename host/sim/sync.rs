//! Inter-block synchronisation primitives of the simulator, for kernels run in it: the
//! release/acquire flag protocol of stream-K (`hopper::st_release_gpu`, `ld_acquire_gpu`,
//! `st_relaxed_gpu` on the GPU) and a relaxed atomic add. The global-memory race detector takes
//! their order into account: an acquire load that reads what a release store wrote orders the
//! releasing thread's earlier accesses (and, release being cumulative, everything its block's
//! barriers ordered before them) before the acquiring thread's later ones; atomics and other
//! strong accesses to one address never race with each other.
//!
//! `kernels-rs` has no host implementation of its Hopper flag primitives yet (they are sm_90a
//! inline PTX, and the kernels using them cannot run here); these are the simulator side such
//! an implementation would call. Each takes the simulated address as a pointer, checks it like
//! every other access (bounds, alignment, initialisation) and attributes errors to the caller's
//! source line.
//!
//! # Panics
//! Each panics when called outside a simulated launch (as the `gpu::` primitives do).

use std::panic::Location;

use super::block::{current, Strong};

/// `ld.acquire.gpu.global.u32`.
#[track_caller]
pub fn ld_acquire_gpu(p: *const u32) -> u32 {
    current(Strong::Acquire, p as u64, Location::caller())
}

/// `st.release.gpu.global.u32`.
#[track_caller]
pub fn st_release_gpu(p: *mut u32, v: u32) {
    current(Strong::Release(v), p as u64, Location::caller());
}

/// `st.relaxed.gpu.global.u32`: strong, but orders nothing.
#[track_caller]
pub fn st_relaxed_gpu(p: *mut u32, v: u32) {
    current(Strong::Relaxed(v), p as u64, Location::caller());
}

/// `atom.add.relaxed.gpu.global.u32`: returns the old value; orders nothing.
#[track_caller]
pub fn atom_add_gpu(p: *mut u32, v: u32) -> u32 {
    current(Strong::Add(v), p as u64, Location::caller())
}
