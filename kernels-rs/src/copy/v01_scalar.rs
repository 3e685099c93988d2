//! Copy, one element per thread.
//!
//! Technique: thread `i` copies element `i`; consecutive threads touch consecutive addresses, so
//! each warp's access is fully coalesced (a warp of f32 reads four 32-byte sectors). Each thread
//! has one 4-byte (or 2-byte) load in flight, so the memory system sees few bytes in flight per
//! SM: expect well under the copy ceiling for f16, closer for f32.

use super::BLOCK_THREADS;
use crate::gpu::{self, Elem};
use crate::registry::{Family, KernelInfo, Launch};

/// Registry entry.
pub const INFO: KernelInfo = KernelInfo {
    family: Family::Copy,
    name: "scalar",
    block: (BLOCK_THREADS, 1, 1),
    launch: Launch::Linear,
    shared_bytes_f32: 0,
    shared_bytes_f16: 0,
    symbols: SYMBOLS,
    about: "one element per thread, coalesced",
    ..KernelInfo::BASE
};

/// Grid size (blocks) for `n` elements.
pub const fn grid_blocks(n: u64) -> u64 {
    n.div_ceil(BLOCK_THREADS as u64)
}

/// `dst[i] = src[i]` for `i < n`. Grid: [`grid_blocks`]`(n)` blocks of `BLOCK_THREADS`.
#[inline(always)]
unsafe fn copy_scalar<T: Elem>(src: *const T, dst: *mut T, n: u64) {
    let i = gpu::block_idx_x() as u64 * gpu::block_dim_x() as u64 + gpu::thread_idx_x() as u64;
    if i < n {
        let i = i as usize;
        T::st_global(dst.add(i), T::ld_global_nc(src.add(i)));
    }
}
crate::entry_points! {
    pub const SYMBOLS;
    fn copy_scalar(src: *const T, dst: *mut T, n: u64);
    copy_scalar_f32 => (F32, F32, Any) [T = f32];
    copy_scalar_f16 => (F16, F16, Any) [T = u16];
}
