//! Copy, grid-stride loop over 16-byte vectors, four loads in flight per thread.
//!
//! Technique: a grid sized to fill the GPU once (`BLOCKS_PER_SM` blocks per SM) walks the buffer
//! in block-sized chunks with a stride of the whole grid. Each iteration issues four independent
//! 16-byte loads before
//! their four stores, so every thread keeps 64 bytes in flight: Little's law at ~4.2 TB/s and
//! ~600 ns latency asks for ~2.5 MB in flight across the chip, ~19 KB per SM, which 2048
//! threads × 64 B covers 6×. Fewer blocks also means less launch/tail overhead. The
//! `n mod (16 / size)` tail is copied by the first threads. Needs 16-byte-aligned pointers.
//! Bound: DRAM bandwidth, ≈ `cuMemcpyDtoD`.

use super::BLOCK_THREADS;
use crate::gpu::{self, Elem, Vec16};
use crate::registry::{Family, KernelInfo, Launch};

/// Resident blocks per SM the grid is sized for (2048 threads / 256).
pub const BLOCKS_PER_SM: u32 = 8;
/// Independent vector loads per thread per iteration.
pub const UNROLL: u64 = 4;

/// Registry entry.
pub const INFO: KernelInfo = KernelInfo {
    family: Family::Copy,
    name: "grid_stride",
    block: (BLOCK_THREADS, 1, 1),
    launch: Launch::Linear,
    shared_bytes_f32: 0,
    shared_bytes_f16: 0,
    symbols: SYMBOLS,
    about: "grid-stride over 16-byte vectors, 4 loads in flight per thread",
    ..KernelInfo::BASE
};

/// Grid size: one full wave (`sm_count · BLOCKS_PER_SM`), fewer if `n` is small.
pub const fn grid_blocks(n: u64, elem_bytes: u64, sm_count: u32) -> u64 {
    let needed = super::v02_vec16::grid_blocks(n, elem_bytes);
    let wave = sm_count as u64 * BLOCKS_PER_SM as u64;
    if needed < wave {
        needed
    } else {
        wave
    }
}

/// `dst[i] = src[i]` for `i < n`; `src`, `dst` 16-byte aligned. Grid: any size ≥ 1.
///
/// Each block owns chunks of `UNROLL · blockDim` consecutive vectors (16 KiB), thread `t`
/// taking vectors `t, t + blockDim, …` of the chunk; chunks advance by the whole grid.
#[inline(always)]
unsafe fn copy_grid_stride<T: Elem>(src: *const T, dst: *mut T, n: u64) {
    let per_vec = (16 / T::BYTES) as u64;
    let n_vec = n / per_vec;
    let bd = gpu::block_dim_x() as u64;
    let chunk = UNROLL * bd;
    let stride = gpu::grid_dim_x() as u64 * chunk;
    let src_v = src as *const Vec16;
    let dst_v = dst as *mut Vec16;
    let mut i = gpu::block_idx_x() as u64 * chunk + gpu::thread_idx_x() as u64;
    while i + (UNROLL - 1) * bd < n_vec {
        let a = gpu::ld_global_nc_v16(src_v.add(i as usize));
        let b = gpu::ld_global_nc_v16(src_v.add((i + bd) as usize));
        let c = gpu::ld_global_nc_v16(src_v.add((i + 2 * bd) as usize));
        let d = gpu::ld_global_nc_v16(src_v.add((i + 3 * bd) as usize));
        gpu::st_global_v16(dst_v.add(i as usize), a);
        gpu::st_global_v16(dst_v.add((i + bd) as usize), b);
        gpu::st_global_v16(dst_v.add((i + 2 * bd) as usize), c);
        gpu::st_global_v16(dst_v.add((i + 3 * bd) as usize), d);
        i += stride;
    }
    // The one partial chunk: the next one starts past n_vec, since stride ≥ chunk.
    let mut u = 0;
    while u < UNROLL {
        let j = i + u * bd;
        if j < n_vec {
            gpu::st_global_v16(
                dst_v.add(j as usize),
                gpu::ld_global_nc_v16(src_v.add(j as usize)),
            );
        }
        u += 1;
    }
    let tid = gpu::block_idx_x() as u64 * bd + gpu::thread_idx_x() as u64;
    if tid < n % per_vec {
        let j = (n_vec * per_vec + tid) as usize;
        T::st_global(dst.add(j), T::ld_global_nc(src.add(j)));
    }
}
crate::entry_points! {
    pub const SYMBOLS;
    fn copy_grid_stride(src: *const T, dst: *mut T, n: u64);
    copy_grid_stride_f32 => (F32, F32, Any) [T = f32];
    copy_grid_stride_f16 => (F16, F16, Any) [T = u16];
}
