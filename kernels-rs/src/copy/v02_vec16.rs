//! Copy, one 16-byte vector per thread.
//!
//! Technique: `ld.global.nc.v4.b32` / `st.global.v4.b32` move 16 bytes per instruction (4 f32 or
//! 8 f16), a quarter (an eighth) of the instructions of the scalar copy and 4× (8×) the bytes in
//! flight per thread. The last `n mod (16 / size)` elements are copied one per thread by the
//! threads after the vector part. Needs 16-byte-aligned `src` and `dst` (the launcher checks).
//! Bound: DRAM bandwidth, ≈ `cuMemcpyDtoD`.

use super::BLOCK_THREADS;
use crate::gpu::{self, Elem, Vec16};
use crate::registry::{Family, KernelInfo, Launch, Needs};

/// Registry entry.
pub const INFO: KernelInfo = KernelInfo {
    family: Family::Copy,
    name: "vec16",
    block: (BLOCK_THREADS, 1, 1),
    launch: Launch::Linear,
    shared_bytes_f32: 0,
    shared_bytes_f16: 0,
    symbols: SYMBOLS,
    about: "one 16-byte vector per thread, scalar tail",
    needs: Needs::ALIGN16,
    ..KernelInfo::BASE
};

/// Work items (vectors plus tail elements) for `n` elements of `elem_bytes` bytes.
pub const fn work_items(n: u64, elem_bytes: u64) -> u64 {
    let per_vec = 16 / elem_bytes;
    n / per_vec + n % per_vec
}

/// Grid size (blocks) for `n` elements of `elem_bytes` bytes.
pub const fn grid_blocks(n: u64, elem_bytes: u64) -> u64 {
    work_items(n, elem_bytes).div_ceil(BLOCK_THREADS as u64)
}

/// `dst[i] = src[i]` for `i < n`; `src`, `dst` 16-byte aligned. Grid: [`grid_blocks`].
#[inline(always)]
unsafe fn copy_vec16<T: Elem>(src: *const T, dst: *mut T, n: u64) {
    let per_vec = (16 / T::BYTES) as u64;
    let n_vec = n / per_vec;
    let i = gpu::block_idx_x() as u64 * gpu::block_dim_x() as u64 + gpu::thread_idx_x() as u64;
    if i < n_vec {
        let v = gpu::ld_global_nc_v16((src as *const Vec16).add(i as usize));
        gpu::st_global_v16((dst as *mut Vec16).add(i as usize), v);
    } else if i < n_vec + n % per_vec {
        let j = (n_vec * per_vec + (i - n_vec)) as usize;
        T::st_global(dst.add(j), T::ld_global_nc(src.add(j)));
    }
}
crate::entry_points! {
    pub const SYMBOLS;
    fn copy_vec16(src: *const T, dst: *mut T, n: u64);
    copy_vec16_f32 => (F32, F32, Any) [T = f32];
    copy_vec16_f16 => (F16, F16, Any) [T = u16];
}
