//! Tensor-pipe ceilings: kernels that do nothing but tensor-core math on operands already in
//! registers (`mma.sync`) or shared memory (`wgmma`), no global traffic, so that the bench can
//! quote every GEMM against a peak measured on the same GPU in the same process, not only
//! against the datasheet.
//!
//! - [`peak_mma`]: each warp keeps [`MMA_CHAINS`] independent `m16n8k16` accumulators and
//!   issues one `mma.sync` into each per iteration: the ceiling of the sm_80 path on this GPU.
//! - `peak_wgmma` (sm_90a): two warpgroups per block, one block per SM, each issuing
//!   `wgmma.m64n256k16` over a 64 × 64 A tile and a shared 256 × 64 Bᵀ tile (K-major, 128B
//!   swizzle), four per commit group with one group in flight: the issue pattern of
//!   `wgmma_ws`'s consumers without its loads.
//!
//! The operands are small integers (−2…2, from the lane and register index, so the tensor
//! cores see varied, non-zero data: zeros would draw less power and could clock higher), so
//! every sum is exact: the host checks that `iters` iterations give `iters` times one.

use crate::gpu::{self, Elem, MmaKind};
use crate::tc::TcIn;

/// Threads per block of [`peak_mma`] (eight warps).
pub const MMA_THREADS: u32 = 256;
/// Independent `m16n8k16` accumulator chains per warp.
pub const MMA_CHAINS: usize = 16;
/// Flops of one [`peak_mma`] iteration of one warp.
pub const MMA_FLOPS_PER_WARP_ITER: u64 = MMA_CHAINS as u64 * 2 * 16 * 8 * 16;

/// The 16-bit pattern of the small integer `v − 2` (`v` in 0..5).
#[inline(always)]
fn small(kind: MmaKind, v: u32) -> u32 {
    const F16: [u32; 5] = [0xC000, 0xBC00, 0, 0x3C00, 0x4000];
    const BF16: [u32; 5] = [0xC000, 0xBF80, 0, 0x3F80, 0x4000];
    match kind {
        MmaKind::F16 => F16[(v % 5) as usize],
        MmaKind::Bf16 => BF16[(v % 5) as usize],
    }
}

/// Two packed operands for lane `lane`, register `i`.
#[inline(always)]
fn pair(kind: MmaKind, lane: u32, i: u32) -> u32 {
    small(kind, lane * 7 + 3 * i) | (small(kind, lane * 5 + 3 * i + 1) << 16)
}

/// `mma.sync` ceiling: `iters` iterations of [`MMA_CHAINS`] independent `mma.sync`s per warp;
/// each thread writes the sum of its accumulators to `out[global thread index]`.
///
/// # Safety
/// `out` holds one float per launched thread.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn peak_mma<I: TcIn>(out: *mut f32, iters: u32) {
    let t = gpu::thread_idx_x();
    let lane = t % 32;
    let a = [0, 1, 2, 3].map(|i| pair(I::KIND, lane, i));
    let b = [[4, 5], [6, 7]].map(|r| r.map(|i| pair(I::KIND, lane, i)));
    let mut acc = [[0f32; 4]; MMA_CHAINS];
    let mut it = 0;
    while it < iters {
        crate::unroll!(16, j, {
            acc[j] = gpu::mma_m16n8k16(I::KIND, a, b[j % 2], acc[j]);
        });
        it += 1;
    }
    let mut s = 0f32;
    crate::unroll!(16, j, {
        s += (acc[j][0] + acc[j][1]) + (acc[j][2] + acc[j][3]);
    });
    let id = gpu::block_idx_x() * gpu::block_dim_x() + t;
    f32::st_global(out.add(id as usize), s);
}

crate::entry_points! {
    pub const MMA_SYMBOLS;
    fn peak_mma(out: *mut f32, iters: u32);
    hgemm_peak_mma_f16 => (F16, F32, Any) [I = crate::hgemm::F16];
    hgemm_peak_mma_bf16 => (Bf16, F32, Any) [I = crate::hgemm::Bf16];
}

/// Registry record of the `mma.sync` ceiling.
pub const INFO_MMA: crate::registry::KernelInfo = crate::registry::KernelInfo {
    family: crate::registry::Family::Hgemm,
    name: "peak_mma",
    role: crate::registry::Role::Ceiling,
    block: (MMA_THREADS, 1, 1),
    symbols: MMA_SYMBOLS,
    about: "mma.sync ceiling: independent m16n8k16 chains per warp",
    ..crate::registry::KernelInfo::BASE
};

/// Threads per block of `peak_wgmma` (two warpgroups).
pub const WGMMA_THREADS: u32 = 256;
/// Dynamic shared bytes of `peak_wgmma`: two A tiles (8 KiB each), one Bᵀ tile (32 KiB), 1 KiB
/// of alignment slack.
pub const WGMMA_SHARED_BYTES: usize = 2 * 8192 + 32768 + 1024;
/// Flops of one `peak_wgmma` iteration of one warpgroup: four `m64n256k16`.
pub const WGMMA_FLOPS_PER_WG_ITER: u64 = 4 * 2 * 64 * 256 * 16;
crate::entry_points! {
    pub const WGMMA_SYMBOLS;
    sm90a fn device::peak_wgmma(out: *mut f32, iters: u32);
    hgemm_peak_wgmma_f16 => (F16, F32, Any) [; BF16: bool = false];
    hgemm_peak_wgmma_bf16 => (Bf16, F32, Any) [; BF16: bool = true];
}

/// Registry record of the `wgmma` ceiling.
pub const INFO_WGMMA: crate::registry::KernelInfo = crate::registry::KernelInfo {
    family: crate::registry::Family::Hgemm,
    name: "peak_wgmma",
    role: crate::registry::Role::Ceiling,
    needs: crate::registry::Needs::SM90A,
    block: (WGMMA_THREADS, 1, 1),
    shared_bytes_f16: WGMMA_SHARED_BYTES,
    symbols: WGMMA_SYMBOLS,
    about: "wgmma ceiling: four m64n256k16 per warpgroup iteration from fixed shared tiles",
    ..crate::registry::KernelInfo::BASE
};

#[cfg(all(target_arch = "nvptx64", rustile_sm90a))]
mod device {
    use super::*;
    use crate::gpu::{hopper, wgmma};

    /// `wgmma` ceiling: shared tiles filled with small integers, then `iters` iterations of
    /// four `wgmma.m64n256k16` per warpgroup, one commit group kept in flight; each thread
    /// writes the sum of its 128 accumulators to `out[global thread index]`.
    #[inline(always)]
    pub unsafe fn peak_wgmma<const BF16: bool>(out: *mut f32, iters: u32) {
        let kind = if BF16 { MmaKind::Bf16 } else { MmaKind::F16 };
        let t = gpu::thread_idx_x();
        let wg = t / 128;
        let base = (gpu::dynamic_shared_base() + 1023) & !1023;
        let words = (WGMMA_SHARED_BYTES as u32 - 1024) / 4;
        let mut w = t;
        while w < words {
            u32::st_shared(base + 4 * w, pair(kind, w % 32, w / 32));
            w += WGMMA_THREADS;
        }
        hopper::fence_proxy_async_shared();
        gpu::sync_threads();
        let sa = base + 8192 * wg;
        let sb = base + 2 * 8192;
        let mut acc = [0f32; 128];
        let mut it = 0;
        while it < iters {
            hopper::wgmma_fence();
            let mut kk = 0;
            while kk < 4 {
                let da = hopper::matrix_descriptor(sa + 32 * kk, 16, 1024, hopper::Swizzle::B128);
                let db = hopper::matrix_descriptor(sb + 32 * kk, 16, 1024, hopper::Swizzle::B128);
                if BF16 {
                    wgmma::wgmma_m64n256k16_bf16::<0>(&mut acc, da, db, 1);
                } else {
                    wgmma::wgmma_m64n256k16_f16::<0>(&mut acc, da, db, 1);
                }
                kk += 1;
            }
            hopper::wgmma_commit();
            wgmma::wgmma_wait_128::<1>(&mut acc);
            it += 1;
        }
        wgmma::wgmma_wait_128::<0>(&mut acc);
        let mut s = 0f32;
        crate::unroll!(32, j, {
            s += (acc[4 * j] + acc[4 * j + 1]) + (acc[4 * j + 2] + acc[4 * j + 3]);
        });
        let id = gpu::block_idx_x() * gpu::block_dim_x() + t;
        f32::st_global(out.add(id as usize), s);
    }
}
