//! Copy of any length at any element offset, 16-byte stores throughout.
//!
//! Technique: the destination decides the vector grid. `head` elements (`(16 − dst mod 16) /
//! size`, fewer than one vector) bring `dst` to a 16-byte boundary; then `n_vec` whole vectors
//! are stored with `st.global.v4.b32`; the last `tail` elements (fewer than one vector) are
//! stored one by one. The head and tail are copied by the threads after the vector threads, so
//! every warp of the vector part stores 512 contiguous, aligned bytes.
//!
//! When `src` has the same misalignment as `dst` (`src ≡ dst (mod 16)`: both fresh
//! allocations, or sub-slices at the same offset) each vector is also loaded as one
//! `ld.global.nc.v4.b32`: the `vec16` copy, but for any length and any common offset. When the
//! two differ, each vector is gathered from `16 / size` element loads (still coalesced across
//! the warp: lane `i` reads the 16 bytes after lane `i − 1`'s, the L1 merges the sectors) and
//! stored as one vector. The branch is uniform over the whole grid.
//!
//! Needs only natural alignment of `src` and `dst`. Bound: DRAM bandwidth, ≈ `cuMemcpyDtoD`
//! on the matched path.

use super::BLOCK_THREADS;
use crate::gpu::{self, Elem, Vec16};
use crate::registry::{Family, KernelInfo, Launch};

/// Registry entry.
pub const INFO: KernelInfo = KernelInfo {
    family: Family::Copy,
    name: "vec16_any",
    block: (BLOCK_THREADS, 1, 1),
    launch: Launch::Linear,
    shared_bytes_f32: 0,
    shared_bytes_f16: 0,
    symbols: SYMBOLS,
    about: "16-byte stores at any length and offset: scalar head and tail",
    ..KernelInfo::BASE
};

/// Work items for `n` elements of `elem_bytes` bytes at any offset: at most `n / per_vec`
/// vectors plus fewer than `per_vec` head and fewer than `per_vec` tail elements.
pub const fn work_items(n: u64, elem_bytes: u64) -> u64 {
    let per_vec = 16 / elem_bytes;
    n / per_vec + 2 * per_vec
}

/// Grid size (blocks) for `n` elements of `elem_bytes` bytes (independent of the offsets).
pub const fn grid_blocks(n: u64, elem_bytes: u64) -> u64 {
    work_items(n, elem_bytes).div_ceil(BLOCK_THREADS as u64)
}

/// Splits `n` elements whose destination starts at byte address `dst_addr` into `(head, n_vec,
/// tail)`: `head` scalar elements up to the first 16-byte boundary, `n_vec` vectors, `tail`
/// scalar elements. `dst_addr` must be a multiple of `elem_bytes`.
pub const fn split(dst_addr: u64, n: u64, elem_bytes: u64) -> (u64, u64, u64) {
    let per_vec = 16 / elem_bytes;
    let mis = dst_addr % 16;
    let head = if mis == 0 { 0 } else { (16 - mis) / elem_bytes };
    let head = if head < n { head } else { n };
    let body = n - head;
    (head, body / per_vec, body % per_vec)
}

/// `dst[i] = src[i]` for `i < n`; `src`, `dst` naturally aligned. Grid: [`grid_blocks`].
#[inline(always)]
unsafe fn copy_vec16_any<T: Elem>(src: *const T, dst: *mut T, n: u64) {
    let per_vec = (16 / T::BYTES) as u64;
    let (head, n_vec, tail) = split(dst as u64, n, T::BYTES as u64);
    let matched = (src as u64) % 16 == (dst as u64) % 16;
    let i = gpu::block_idx_x() as u64 * gpu::block_dim_x() as u64 + gpu::thread_idx_x() as u64;
    if i < n_vec {
        let off = (head + i * per_vec) as usize;
        let d = dst.add(off) as *mut Vec16;
        if matched {
            gpu::st_global_v16(d, gpu::ld_global_nc_v16(src.add(off) as *const Vec16));
        } else {
            let mut w = [0u32; 4];
            let mut k = 0;
            while k < per_vec as usize {
                let bits = T::ld_global_nc(src.add(off + k)).to_bits64() as u32;
                let byte = k * T::BYTES;
                w[byte / 4] |= bits << ((byte % 4) * 8);
                k += 1;
            }
            gpu::st_global_v16(d, Vec16(w));
        }
    } else {
        let j = i - n_vec;
        if j < head + tail {
            let e = if j < head {
                j
            } else {
                head + n_vec * per_vec + (j - head)
            } as usize;
            T::st_global(dst.add(e), T::ld_global_nc(src.add(e)));
        }
    }
}
crate::entry_points! {
    pub const SYMBOLS;
    fn copy_vec16_any(src: *const T, dst: *mut T, n: u64);
    copy_vec16_any_f32 => (F32, F32, Any) [T = f32];
    copy_vec16_any_f16 => (F16, F16, Any) [T = u16];
    copy_vec16_any_bf16 => (Bf16, Bf16, Any) [T = u16];
}
