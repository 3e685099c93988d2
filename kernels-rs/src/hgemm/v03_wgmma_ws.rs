//! Hopper `wgmma` + TMA, warp-specialized and persistent (sm_90a).
//!
//! - **Tile** 128 × 256 × 64 per block, three warpgroups: warpgroup 0 is the producer (one
//!   thread issues every TMA load), warpgroups 1 and 2 are consumers, each computing 64 × 256 of
//!   the tile with `wgmma.m64n256k16` (128 f32 accumulators per thread).
//! - **Ring**: `STAGES` stages of A (128 × 64) and B (256 × 64) in 128-byte-swizzled shared
//!   memory, 48 KiB each. A `full` mbarrier per stage counts the TMA bytes in; an `empty`
//!   mbarrier per stage counts the eight consumer warps out. The producer runs up to `STAGES`
//!   k-tiles ahead, also across output tiles, so loads for the next tile overlap the epilogue.
//! - **Persistent**: the grid is one block per SM; block `b` takes output tiles `b, b + grid, …`
//!   in grouped order ([`super::grouped_tile`]) for L2 reuse.
//! - **Tails**: TMA fills out-of-range rows and k-columns with zeros, and the epilogue stores
//!   only inside C, so any M, N, K works as long as the tensor maps can describe A and B
//!   (global strides multiples of 16 bytes: K and, for row-major B, N multiples of 8). The host
//!   sends other shapes to the sm_80 path.
//! - **Arithmetic intensity** per k-tile: 2·128·256·64 flops over 48 KiB = 85 flops/byte from
//!   shared memory; from L2/DRAM the grouped order brings it far above the H200's ~200
//!   flops/byte ridge. The bound is the tensor cores: ~990 TFLOP/s dense (datasheet); cuBLAS
//!   reaches 706 (f16) and 739 (bf16) at 8192³.
//!
//! Measured: see `notes/hgemm.md`.

/// Rows of A per block.
pub const BM: u32 = 128;
/// Columns of B per block.
pub const BN: u32 = 256;
/// K per stage (one 128-byte swizzle row of f16/bf16).
pub const BK: u32 = 64;
/// Ring depth.
pub const STAGES: u32 = 4;
/// Threads: three warpgroups.
pub const THREADS: u32 = 384;
/// Bytes of A per stage.
pub const A_STAGE_BYTES: u32 = BM * BK * 2;
/// Bytes of B per stage.
pub const B_STAGE_BYTES: u32 = BN * BK * 2;
/// Bytes of one stage.
pub const STAGE_BYTES: u32 = A_STAGE_BYTES + B_STAGE_BYTES;
/// Dynamic shared bytes: the ring, the barriers, and up to 1 KiB to align the ring to the
/// 1024-byte swizzle period.
pub const SHARED_BYTES: usize = (STAGES * STAGE_BYTES + 2 * STAGES * 8 + 1024) as usize;
/// Registers per producer thread after `setmaxnreg.dec`.
pub const PRODUCER_REGS: u32 = 40;
/// Registers per consumer thread after `setmaxnreg.inc`: (168 · 384 − 40 · 128) / 256, rounded
/// down to a multiple of 8. The launch allocates 168 per thread (`.maxntid 384`).
pub const CONSUMER_REGS: u32 = 232;
/// Tile rows per group of the persistent tile order (the default of the kernel's `group`
/// argument).
pub const GROUP_M: u32 = 16;
/// The tensor-map box of A: 64 k × 128 rows.
pub const A_BOX: (u32, u32) = (BK, BM);
/// The box of transposed B (`bt`, N × K): 64 k × 256 rows.
pub const BT_BOX: (u32, u32) = (BK, BN);
/// The box of row-major B (`bn`, K × N): 64 n × 64 k; four per stage.
pub const BN_BOX: (u32, u32) = (64, BK);

crate::entry_points! {
    pub const SYMBOLS;
    sm90a fn device::hgemm_wgmma_ws(maps: *const u8, c: *mut <O as crate::hgemm::TcOut>::Store, bias: *const f32, m: u32, n: u32, k: u32, ldc: u32, alpha: f32, beta: f32, relu: u32, group: u32);
    hgemm_wgmma_ws_f16_f16_bn => (F16, F16, Bn) [W = device::F16, O = crate::hgemm::OutF16; TRANS_B: u32 = 1];
    hgemm_wgmma_ws_f16_f32_bn => (F16, F32, Bn) [W = device::F16, O = crate::hgemm::OutF32; TRANS_B: u32 = 1];
    hgemm_wgmma_ws_bf16_bf16_bn => (Bf16, Bf16, Bn) [W = device::Bf16, O = crate::hgemm::OutBf16; TRANS_B: u32 = 1];
    hgemm_wgmma_ws_bf16_f32_bn => (Bf16, F32, Bn) [W = device::Bf16, O = crate::hgemm::OutF32; TRANS_B: u32 = 1];
    hgemm_wgmma_ws_f16_f16_bt => (F16, F16, Bt) [W = device::F16, O = crate::hgemm::OutF16; TRANS_B: u32 = 0];
    hgemm_wgmma_ws_f16_f32_bt => (F16, F32, Bt) [W = device::F16, O = crate::hgemm::OutF32; TRANS_B: u32 = 0];
    hgemm_wgmma_ws_bf16_bf16_bt => (Bf16, Bf16, Bt) [W = device::Bf16, O = crate::hgemm::OutBf16; TRANS_B: u32 = 0];
    hgemm_wgmma_ws_bf16_f32_bt => (Bf16, F32, Bt) [W = device::Bf16, O = crate::hgemm::OutF32; TRANS_B: u32 = 0];
}

/// Registry record.
pub const INFO: crate::registry::KernelInfo = crate::registry::KernelInfo {
    family: crate::registry::Family::Hgemm,
    name: "wgmma_ws",
    needs: crate::registry::Needs::HOPPER_TMA,
    bounds: Some((THREADS, 1)),
    block: (THREADS, 1, 1),
    launch: crate::registry::Launch::Persistent { tile: (BM, BN) },
    shared_bytes_f16: SHARED_BYTES,
    symbols: SYMBOLS,
    about: "wgmma + TMA ring, warp-specialized producer/consumers, persistent (sm_90a)",
    ..crate::registry::KernelInfo::BASE
};

#[cfg(all(target_arch = "nvptx64", rustile_sm90a))]
mod device {
    use super::*;
    use crate::gpu::{self, hopper, wgmma};
    use crate::hgemm::{grouped_tile, OutBf16, OutF16, OutF32};
    use crate::hgemm::{Epilogue, TcOut};

    /// The `wgmma` for one input type.
    pub trait Wgmma {
        /// `acc (+)= A·B` for 64 × 256 × 16.
        unsafe fn mma<const TRANS_B: u32>(acc: &mut [f32; 128], da: u64, db: u64, scale_d: u32);
    }
    pub struct F16;
    pub struct Bf16;
    impl Wgmma for F16 {
        #[inline(always)]
        unsafe fn mma<const TRANS_B: u32>(acc: &mut [f32; 128], da: u64, db: u64, sd: u32) {
            wgmma::wgmma_m64n256k16_f16::<TRANS_B>(acc, da, db, sd)
        }
    }
    impl Wgmma for Bf16 {
        #[inline(always)]
        unsafe fn mma<const TRANS_B: u32>(acc: &mut [f32; 128], da: u64, db: u64, sd: u32) {
            wgmma::wgmma_m64n256k16_bf16::<TRANS_B>(acc, da, db, sd)
        }
    }

    /// The kernel. `maps`: the A tensor map at byte 0 and B's at byte 128, in global memory;
    /// `group`: tile rows per group of the tile order (≥ 1).
    /// `TRANS_B` = 1: B row-major (K × N); 0: B transposed (N × K).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub unsafe fn hgemm_wgmma_ws<W: Wgmma, O: TcOut, const TRANS_B: u32>(
        maps: *const u8,
        c: *mut O::Store,
        bias: *const f32,
        m: u32,
        n: u32,
        k: u32,
        ldc: u32,
        alpha: f32,
        beta: f32,
        relu: u32,
        group: u32,
    ) {
        let map_a = maps;
        let map_b = maps.add(128);
        let tid = gpu::thread_idx_x();
        let base = gpu::dynamic_shared_base();
        let ring = (base + 1023) & !1023;
        let full = ring + STAGES * STAGE_BYTES;
        let empty = full + STAGES * 8;
        if tid == 0 {
            hopper::prefetch_tensormap(map_a);
            hopper::prefetch_tensormap(map_b);
            let mut s = 0;
            while s < STAGES {
                hopper::mbarrier_init(full + 8 * s, 1);
                hopper::mbarrier_init(empty + 8 * s, 8);
                s += 1;
            }
            hopper::fence_barrier_init();
        }
        gpu::sync_threads();

        let tiles_m = m.div_ceil(BM);
        let tiles_n = n.div_ceil(BN);
        let tiles = tiles_m * tiles_n;
        let k_tiles = k.div_ceil(BK);
        let wg = hopper::warpgroup_index();

        if wg == 0 {
            // Producer: one thread keeps the ring full; the warpgroup gives its registers to
            // the consumers.
            hopper::setmaxnreg_dec::<PRODUCER_REGS>();
            if tid != 0 {
                return;
            }
            let mut it = 0u32;
            let mut t = gpu::block_idx_x();
            while t < tiles {
                let (tm, tn) = grouped_tile(t, tiles_m, tiles_n, group);
                let mut kt = 0;
                while kt < k_tiles {
                    let s = it % STAGES;
                    let phase = (it / STAGES) & 1;
                    hopper::mbarrier_wait(empty + 8 * s, phase ^ 1);
                    let fb = full + 8 * s;
                    hopper::mbarrier_arrive_expect_tx(fb, STAGE_BYTES);
                    let sa = ring + s * STAGE_BYTES;
                    let sb = sa + A_STAGE_BYTES;
                    let kx = (kt * BK) as i32;
                    hopper::tma_load_2d(sa, map_a, kx, (tm * BM) as i32, fb);
                    if TRANS_B == 0 {
                        hopper::tma_load_2d(sb, map_b, kx, (tn * BN) as i32, fb);
                    } else {
                        let mut j = 0;
                        while j < BN / 64 {
                            let nx = (tn * BN + 64 * j) as i32;
                            hopper::tma_load_2d(sb + j * BN_BOX.0 * BK * 2, map_b, nx, kx, fb);
                            j += 1;
                        }
                    }
                    it += 1;
                    kt += 1;
                }
                t += gpu::grid_dim_x();
            }
            return;
        }

        // Consumers: warpgroup 1 takes rows 0..64 of the tile, warpgroup 2 rows 64..128.
        hopper::setmaxnreg_inc::<CONSUMER_REGS>();
        let half = wg - 1;
        let warp = (tid / 32) % 4;
        let lane = tid % 32;
        let (g, q) = (lane / 4, lane % 4);
        let epi = Epilogue::<O> {
            c,
            ldc,
            m,
            n,
            alpha,
            beta,
            bias,
            relu,
        };
        let mut acc = [0f32; 128];
        let mut it = 0u32;
        let mut t = gpu::block_idx_x();
        while t < tiles {
            let (tm, tn) = grouped_tile(t, tiles_m, tiles_n, group);
            let row = tm * BM + half * 64 + warp * 16 + g;
            let col0 = tn * BN + 2 * q;
            if k_tiles == 0 {
                // K = 0: C = β·C (+ bias) (ReLU).
                let mut j = 0;
                while j < BN / 8 {
                    epi.store_pair(row, col0 + 8 * j, 0.0, 0.0);
                    epi.store_pair(row + 8, col0 + 8 * j, 0.0, 0.0);
                    j += 1;
                }
                t += gpu::grid_dim_x();
                continue;
            }
            let mut kt = 0;
            while kt < k_tiles {
                let s = it % STAGES;
                let phase = (it / STAGES) & 1;
                hopper::mbarrier_wait(full + 8 * s, phase);
                let sa = ring + s * STAGE_BYTES + half * (64 * BK * 2);
                let sb = ring + s * STAGE_BYTES + A_STAGE_BYTES;
                hopper::wgmma_fence();
                let mut kk = 0;
                while kk < BK / 16 {
                    let da =
                        hopper::matrix_descriptor(sa + kk * 32, 16, 1024, hopper::Swizzle::B128);
                    let db = if TRANS_B == 0 {
                        hopper::matrix_descriptor(sb + kk * 32, 16, 1024, hopper::Swizzle::B128)
                    } else {
                        // N-major: 16 k-rows of 128 bytes per step; 64-column boxes 8 KiB apart.
                        hopper::matrix_descriptor(
                            sb + kk * 16 * 128,
                            BN_BOX.0 * BK * 2,
                            1024,
                            hopper::Swizzle::B128,
                        )
                    };
                    W::mma::<TRANS_B>(&mut acc, da, db, (kt > 0 || kk > 0) as u32);
                    kk += 1;
                }
                hopper::wgmma_commit();
                // Keep this k-tile's wgmma in flight; the previous one has finished reading
                // its stage, which goes back to the producer.
                wgmma::wgmma_wait_128::<1>(&mut acc);
                if kt > 0 && lane == 0 {
                    let prev = (it + STAGES - 1) % STAGES;
                    hopper::mbarrier_arrive(empty + 8 * prev);
                }
                it += 1;
                kt += 1;
            }
            wgmma::wgmma_wait_128::<0>(&mut acc);
            if lane == 0 {
                hopper::mbarrier_arrive(empty + 8 * ((it + STAGES - 1) % STAGES));
            }
            // Fully unrolled: an indexed accumulator would move the array to local memory.
            crate::unroll!(32, j, {
                let col = col0 + 8 * j as u32;
                epi.store_pair(row, col, acc[4 * j], acc[4 * j + 1]);
                epi.store_pair(row + 8, col, acc[4 * j + 2], acc[4 * j + 3]);
            });
            t += gpu::grid_dim_x();
        }
    }
}
