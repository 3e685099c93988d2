//! Strided gather: thread `i` reads `src[i · stride]` and writes `dst[i]`.
//!
//! Stores stay coalesced; loads are coalesced only at `stride = 1`. Bound: see the family docs.

use super::BLOCK_THREADS;
use crate::gpu::{self, Elem};
use crate::registry::{Family, KernelInfo, Launch};

/// Registry entry.
pub const INFO: KernelInfo = KernelInfo {
    family: Family::Strided,
    name: "gather",
    block: (BLOCK_THREADS, 1, 1),
    launch: Launch::Linear,
    shared_bytes_f32: 0,
    shared_bytes_f16: 0,
    symbols: SYMBOLS,
    about: "dst[i] = src[i*stride], coalesced stores",
    ..KernelInfo::BASE
};

/// Grid size (blocks) for `n` output elements.
pub const fn grid_blocks(n: u64) -> u64 {
    n.div_ceil(BLOCK_THREADS as u64)
}

/// `dst[i] = src[i · stride]` for `i < n`; `src` holds at least `(n - 1) · stride + 1` elements.
#[inline(always)]
unsafe fn strided_gather<T: Elem>(src: *const T, dst: *mut T, n: u64, stride: u64) {
    let i = gpu::block_idx_x() as u64 * gpu::block_dim_x() as u64 + gpu::thread_idx_x() as u64;
    if i < n {
        T::st_global(
            dst.add(i as usize),
            T::ld_global_nc(src.add((i * stride) as usize)),
        );
    }
}
crate::entry_points! {
    pub const SYMBOLS;
    fn strided_gather(src: *const T, dst: *mut T, n: u64, stride: u64);
    strided_gather_f32 => (F32, F32, Any) [T = f32];
    strided_gather_f16 => (F16, F16, Any) [T = u16];
}
