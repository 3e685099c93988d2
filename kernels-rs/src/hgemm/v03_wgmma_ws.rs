//! Hopper `wgmma` + TMA, warp-specialized and persistent (sm_90a).
//!
//! - **Tile** 128 × 256 × 64 per block, three warpgroups: warpgroup 0 is the producer (one
//!   thread issues every TMA load), warpgroups 1 and 2 are consumers, each computing 64 × 256 of
//!   the tile with `wgmma.m64n256k16` (128 f32 accumulators per thread).
//! - **Ring**: `STAGES` stages of A (128 × 64) and B (256 × 64) in 128-byte-swizzled shared
//!   memory, 48 KiB each, a [`TmaRing`](crate::gpu::ring::TmaRing): a `full` mbarrier per stage
//!   counts the TMA bytes in; an `empty` mbarrier per stage counts the eight consumer warps out.
//!   The producer runs up to `STAGES` k-tiles ahead, also across output tiles, so loads for the
//!   next tile overlap the epilogue.
//! - **Persistent**: the grid is one block per SM; block `b` takes output tiles `b, b + grid, …`
//!   in grouped order ([`TileGrid`](crate::gpu::sched::TileGrid)) for L2 reuse.
//! - **Built from shared blocks**: the kernel is hooks (TMA loads, `wgmma`s, drain, epilogue,
//!   the K = 0 epilogue) on the warp-specialized driver `tc::ws` (sm_90a only), which owns the
//!   ring, barriers, register split and persistent loop; the epilogue is
//!   [`crate::tc::Epilogue`].
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
pub const SHARED_BYTES: usize = crate::gpu::ring::TmaRing::bytes(STAGE_BYTES, STAGES);
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
    #[allow(unused_imports)] // for the docs
    use crate::gpu::ring::TmaRing;
    use crate::gpu::sched::TileGrid;
    use crate::gpu::{self, hopper, wgmma};
    use crate::tc::ws::{self, WsKernel};
    use crate::tc::{Epilogue, TcOut};

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

    /// The GEMM as hooks on the warp-specialized driver ([`ws::run`]).
    struct WsGemm<W, O: TcOut, const TRANS_B: u32> {
        /// A's tensor map (global memory).
        map_a: *const u8,
        /// B's tensor map.
        map_b: *const u8,
        epi: Epilogue<O>,
        _w: core::marker::PhantomData<W>,
    }

    impl<W, O: TcOut, const TRANS_B: u32> WsGemm<W, O, TRANS_B> {
        /// This thread's first accumulator row and column in tile `(tm, tn)` for consumer
        /// `half` (the `wgmma` D layout: warp `w` of the warpgroup owns rows `16w..16w + 16`).
        #[inline(always)]
        fn origin(&self, (tm, tn): (u32, u32), half: u32) -> (u32, u32) {
            let tid = gpu::thread_idx_x();
            let (warp, lane) = ((tid / 32) % 4, tid % 32);
            let (g, q) = (lane / 4, lane % 4);
            (tm * BM + half * 64 + warp * 16 + g, tn * BN + 2 * q)
        }
    }

    impl<W: Wgmma, O: TcOut, const TRANS_B: u32> WsKernel for WsGemm<W, O, TRANS_B> {
        const STAGES: u32 = STAGES;
        const STAGE_BYTES: u32 = STAGE_BYTES;
        const CONSUMERS: u32 = 2;
        type Acc = [f32; 128];
        const ACC: [f32; 128] = [0f32; 128];

        #[inline(always)]
        unsafe fn prefetch(&self) {
            hopper::prefetch_tensormap(self.map_a);
            hopper::prefetch_tensormap(self.map_b);
        }

        #[inline(always)]
        unsafe fn produce(&self, stage: u32, full: u32, (tm, tn): (u32, u32), kt: u32) {
            let sa = stage; // (BM, BK), 128B-swizzled
            let sb = stage + A_STAGE_BYTES; // (BN, BK) or, row-major B, four (BK, 64) boxes
            let kx = (kt * BK) as i32;
            hopper::tma_load_2d(sa, self.map_a, kx, (tm * BM) as i32, full);
            if TRANS_B == 0 {
                hopper::tma_load_2d(sb, self.map_b, kx, (tn * BN) as i32, full);
            } else {
                let mut j = 0;
                while j < BN / 64 {
                    let nx = (tn * BN + 64 * j) as i32;
                    hopper::tma_load_2d(sb + j * BN_BOX.0 * BK * 2, self.map_b, nx, kx, full);
                    j += 1;
                }
            }
        }

        #[inline(always)]
        unsafe fn consume(&self, acc: &mut [f32; 128], stage: u32, half: u32, kt: u32) {
            // Consumer `half` takes rows 64·half .. 64·half + 64 of the tile.
            let sa = stage + half * (64 * BK * 2); // (64, BK)
            let sb = stage + A_STAGE_BYTES; // (BN, BK)
            hopper::wgmma_fence();
            let mut kk = 0;
            while kk < BK / 16 {
                // `sa` and `sb` are 1024-byte aligned ([`TmaRing::stage`]) and a k16 step moves
                // 32 bytes inside the 128-byte row: `|` says it cannot carry, so each step is one
                // `or` into the descriptor.
                let da = hopper::matrix_descriptor(sa | kk * 32, 16, 1024, hopper::Swizzle::B128);
                let db = if TRANS_B == 0 {
                    hopper::matrix_descriptor(sb | kk * 32, 16, 1024, hopper::Swizzle::B128)
                } else {
                    // N-major: 16 k-rows of 128 bytes per step; 64-column boxes 8 KiB apart.
                    hopper::matrix_descriptor(
                        sb + kk * 16 * 128,
                        BN_BOX.0 * BK * 2,
                        1024,
                        hopper::Swizzle::B128,
                    )
                };
                W::mma::<TRANS_B>(acc, da, db, (kt > 0 || kk > 0) as u32);
                kk += 1;
            }
            hopper::wgmma_commit();
            // Keep this k-tile's wgmma in flight; the previous one has finished reading its
            // stage, which the driver gives back to the producer.
            wgmma::wgmma_wait_128::<1>(acc);
        }

        #[inline(always)]
        unsafe fn drain(&self, acc: &mut [f32; 128]) {
            wgmma::wgmma_wait_128::<0>(acc);
        }

        #[inline(always)]
        unsafe fn finish(&self, acc: &mut [f32; 128], tile: (u32, u32), half: u32) {
            let (row, col0) = self.origin(tile, half);
            // Fully unrolled: an indexed accumulator would move the array to local memory.
            if self.epi.chunks_aligned() {
                // 16-bit C with 16-byte rows: quads of n8 fragments as one 16-byte store per
                // lane, rows `row` and `row + 8` (the conv epilogue's path).
                crate::store_acc_x4!(self.epi, acc, row, col0, 8);
                return;
            }
            crate::unroll!(32, j, {
                let col = col0 + 8 * j as u32;
                let d = [acc[4 * j], acc[4 * j + 1], acc[4 * j + 2], acc[4 * j + 3]];
                self.epi.store_frag(row, col, d);
            });
        }

        #[inline(always)]
        unsafe fn finish_empty(&self, tile: (u32, u32), half: u32) {
            // K = 0: C = β·C (+ bias) (ReLU). A loop, not unrolled: this path is cold.
            let (row, col0) = self.origin(tile, half);
            let mut j = 0;
            while j < BN / 8 {
                self.epi.store_frag(row, col0 + 8 * j, [0.0; 4]);
                j += 1;
            }
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
        let gemm = WsGemm::<W, O, TRANS_B> {
            map_a: maps,
            map_b: maps.add(128),
            epi: Epilogue {
                c,
                ldc,
                m,
                n,
                alpha,
                beta,
                bias,
                relu,
            },
            _w: core::marker::PhantomData,
        };
        let grid = TileGrid::new(m, n, BM, BN, group);
        ws::run::<_, PRODUCER_REGS, CONSUMER_REGS>(&gemm, grid, k.div_ceil(BK));
    }
}
