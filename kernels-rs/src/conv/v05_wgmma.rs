//! Implicit-GEMM convolution on Hopper: TMA im2col + `wgmma`, warp-specialized, persistent
//! (sm_90a). The conv is hooks on the GEMM's warp-specialized driver `tc::ws`, with the shared
//! epilogue.
//!
//! - **A (activations)** comes through an **im2col tensor map**: one TMA instruction loads the
//!   128 output pixels of a tile × 64 channels of one filter tap `(r, s)` into a 128-byte-swizzled
//!   stage, walking the output pixels across rows and images with the stride, and filling the
//!   padding (and channels past C, and pixels past the last image) with zeros. No index
//!   arithmetic runs on the SMs: the producer issues one instruction per k-tile.
//! - **B (weights)**: KRSC seen as a `(C, R·S, K)` tensor; a box is 64 channels of one tap for
//!   `BN` output channels (K-major for `wgmma`, like the GEMM's transposed B).
//! - **k-tiles** run tap-major: `kt = tap · ⌈C/64⌉ + chunk`, `R·S·⌈C/64⌉` of them per tile.
//! - **Tiles** 128 × `BN` (64, 128 or 256, a `Width`): two consumer warpgroups of 64 rows
//!   each, `BN/2` f32 accumulators per thread; the ring holds as many stages as fit in ~192 KiB.
//! - **Persistent**, grouped tile order ([`TileGrid`](crate::gpu::sched::TileGrid)), producer
//!   running ahead across tiles, so the next tile's loads overlap this tile's epilogue.
//! - **Epilogue**: [`tc::Epilogue`](crate::tc::Epilogue) with the f32 bias and ReLU, stores in
//!   pairs into the NHWC output (the row-major `N·P·Q × K` matrix).
//!
//! Needs: C a multiple of 8 (16-byte pixel pitch for TMA), filters and padding within the
//! im2col corner range (checked by the host). Bound: like the GEMM, the tensor cores
//! (~990 TFLOP/s dense) for the 3×3 layers; the 1×1 layers with few k-tiles are bound by
//! writing the output (`2·N·P·Q·K` bytes at ~4 TB/s).

/// Output pixels per tile (two consumer warpgroups × 64).
pub const BM: u32 = 128;
/// Channels per k-tile (one 128-byte swizzle row of f16/bf16).
pub const BK: u32 = 64;
/// Threads: the producer warpgroup and two consumers.
pub const THREADS: u32 = 384;
/// Bytes of A per stage.
pub const A_STAGE_BYTES: u32 = BM * BK * 2;
/// Registers per producer thread after `setmaxnreg.dec`.
pub const PRODUCER_REGS: u32 = 40;
/// Registers per consumer thread after `setmaxnreg.inc` (as the GEMM: 168 allocated).
pub const CONSUMER_REGS: u32 = 232;
/// Tile rows per group of the persistent order.
pub const GROUP_M: u32 = 8;
/// The im2col box: 64 channels × 128 pixels.
pub const A_BOX: (u32, u32) = (BK, BM);
/// Dynamic shared memory a block may use on the H200 (227 KiB).
pub const SHARED_LIMIT: u32 = 227 * 1024;

/// Dynamic shared memory each of two co-resident blocks may use on the H200 (the SM's 228 KiB
/// less 1 KiB the driver reserves per block, halved).
pub const SHARED_LIMIT_X2: u32 = 113 * 1024;

/// Whether tile width `bn` has the TMA-store epilogue's staging tile: all but the 256-wide
/// one, whose 64 KiB staging tile would cut its ring from 4 stages of 48 KiB to 3 (the
/// 256-wide tile stores directly; TMA stores are off by default, `conv::tma::TMA_STORES`).
pub const fn has_staging(bn: u32) -> bool {
    bn < 256
}

/// Bytes of the output staging tile for tile width `bn`: both consumers' 64 rows × `bn`
/// columns of 16-bit values, in 128-byte-swizzled boxes of 64 columns (TMA stores); 0 without
/// one ([`has_staging`]).
pub const fn staging_bytes(bn: u32) -> u32 {
    if has_staging(bn) {
        2 * 64 * bn * 2
    } else {
        0
    }
}

/// Bytes of one stage for tile width `bn`.
pub const fn stage_bytes(bn: u32) -> u32 {
    A_STAGE_BYTES + bn * BK * 2
}

/// Ring depth for tile width `bn` with `ctas` blocks per SM (1 or 2): as many stages as fit
/// beside the staging tile (and 3 KiB for alignment and barriers), at most 8.
pub const fn stages(bn: u32, ctas: u32) -> u32 {
    let limit = if ctas > 1 { SHARED_LIMIT_X2 } else { SHARED_LIMIT };
    let s = (limit - staging_bytes(bn) - 3 * 1024) / stage_bytes(bn);
    if s > 8 {
        8
    } else {
        s
    }
}

/// Byte offset of the staging tile from the 1024-aligned start of the ring.
pub const fn staging_offset(bn: u32, ctas: u32) -> u32 {
    let s = stages(bn, ctas);
    (s * stage_bytes(bn) + 16 * s).next_multiple_of(1024)
}

/// Dynamic shared bytes for tile width `bn` with `ctas` blocks per SM: up to 1 KiB of
/// alignment, the ring and its barriers, the staging tile.
pub const fn shared_bytes(bn: u32, ctas: u32) -> usize {
    (1024 + staging_offset(bn, ctas) + staging_bytes(bn)) as usize
}

/// Registers per producer thread after `setmaxnreg.dec` with two blocks per SM.
pub const PRODUCER_REGS_X2: u32 = 24;
/// Registers per consumer thread after `setmaxnreg.inc` with two blocks per SM: the launch
/// bound (384 threads, 2 blocks) allocates 80 per thread; the producer's 56 × 128 given back
/// leave `(384·80 − 128·24) / 256 = 108`, rounded down to a multiple of 8 (ptxas still
/// compiles the consumers within 80: the increase only avoids a smaller pool).
pub const CONSUMER_REGS_X2: u32 = 104;

macro_rules! wgmma_record {
    ($info:ident, $syms:ident, $name:literal, $role:ident, $bn:literal, $ctas:literal, $w16:ident,
     $wb16:ident, $f16:ident, $bf16:ident) => {
        crate::entry_points! {
            pub const $syms;
            sm90a fn device::conv_wgmma(maps: *const u8, y: *mut u16, bias: *const f32, ws: *mut f32, rows: u32, kout: u32, pq: u32, stride: u32, pad: u32, dil: u32, rs: u32, c_chunks: u32, relu: u32, group: u32, splits: u32, tma_store: u32, stream_k: u32);
            $f16 => (F16, F16, Nhwc) [T = crate::tc::width::$w16, O = crate::tc::OutF16];
            $bf16 => (Bf16, Bf16, Nhwc) [T = crate::tc::width::$wb16, O = crate::tc::OutBf16];
        }

        #[doc = concat!("Registry record of the ", stringify!($bn), "-channel-wide tile.")]
        pub const $info: crate::registry::KernelInfo = crate::registry::KernelInfo {
            family: super::FAMILY,
            name: $name,
            role: crate::registry::Role::$role,
            needs: crate::registry::Needs::HOPPER_TMA,
            bounds: Some((THREADS, $ctas)),
            block: (THREADS, 1, 1),
            launch: crate::registry::Launch::Persistent { tile: (BM, $bn) },
            shared_bytes_f16: shared_bytes($bn, $ctas),
            symbols: $syms,
            about: concat!(
                "implicit GEMM: TMA im2col + wgmma, warp-specialized, persistent, 128x",
                stringify!($bn),
                " tiles, ",
                stringify!($ctas),
                " block(s) per SM (sm_90a)"
            ),
            ..crate::registry::KernelInfo::BASE
        };
    };
}

wgmma_record!(
    INFO,
    SYMBOLS,
    "wgmma",
    Ladder,
    128,
    1,
    N128F16,
    N128Bf16,
    conv_wgmma_n128_f16,
    conv_wgmma_n128_bf16
);
wgmma_record!(
    INFO_N64,
    SYMBOLS_N64,
    "wgmma_n64",
    Tuning,
    64,
    1,
    N64F16,
    N64Bf16,
    conv_wgmma_n64_f16,
    conv_wgmma_n64_bf16
);
wgmma_record!(
    INFO_N256,
    SYMBOLS_N256,
    "wgmma_n256",
    Tuning,
    256,
    1,
    N256F16,
    N256Bf16,
    conv_wgmma_n256_f16,
    conv_wgmma_n256_bf16
);

wgmma_record!(
    INFO_N64X2,
    SYMBOLS_N64X2,
    "wgmma_n64x2",
    Tuning,
    64,
    2,
    N64X2F16,
    N64X2Bf16,
    conv_wgmma_n64x2_f16,
    conv_wgmma_n64x2_bf16
);
wgmma_record!(
    INFO_PP,
    SYMBOLS_PP,
    "wgmma_pp",
    Tuning,
    128,
    1,
    N128PpF16,
    N128PpBf16,
    conv_wgmma_pp_f16,
    conv_wgmma_pp_bf16
);
wgmma_record!(
    INFO_N64_PP,
    SYMBOLS_N64_PP,
    "wgmma_n64_pp",
    Tuning,
    64,
    1,
    N64PpF16,
    N64PpBf16,
    conv_wgmma_n64_pp_f16,
    conv_wgmma_n64_pp_bf16
);
/// The tile widths with ping-pong consumers (each warpgroup a whole 128 × BN tile, one's
/// epilogue under the other's `wgmma`s: `tc::ws::run_pingpong`), narrowest first. No
/// 256-wide one: a warpgroup would hold 256 accumulators per thread. Whole reductions and
/// split-K with direct stores only (no stream-K, no TMA-store epilogue).
pub const WIDTHS_PP: [&crate::registry::KernelInfo; 2] = [&INFO_N64_PP, &INFO_PP];

/// The tile widths at two blocks per SM (more tiles in flight: one block's epilogue and
/// loads under the other's `wgmma`s). Only the 64-wide one: ptxas compiles the whole kernel
/// within the launch bound's 80 registers (`setmaxnreg` moves registers at run time, it does
/// not raise ptxas's budget), and the 128-wide tile's `wgmma` alone needs 64 accumulators
/// plus its operands (ptxas C7602 at 80).
pub const WIDTHS_X2: [&crate::registry::KernelInfo; 1] = [&INFO_N64X2];

/// The three tile widths, narrowest first.
pub const WIDTHS: [&crate::registry::KernelInfo; 3] = [&INFO_N64, &INFO, &INFO_N256];

#[cfg(all(target_arch = "nvptx64", rustile_sm90a))]
mod device {
    use super::*;
    use crate::conv::unpack;
    use crate::gpu::sched::TileGrid;
    use crate::gpu::{self, hopper};
    use crate::tc::ws::{self, WsKernel};
    use crate::tc::{Epilogue, TcOut};

    use crate::tc::width::*;

    /// The producer's position: grid tile row `tv`, the k-tile `kt` it loads next (from the
    /// tile's first), that k-tile's channel chunk, tap `(r, s)`, and the tile's first output
    /// pixel as input coordinates `(n0, h0, w0)` of tap (0, 0).
    #[derive(Clone, Copy, Default)]
    struct ProducerAt {
        tv: u32,
        kt: u32,
        chunk: u32,
        tap: u32,
        r: u32,
        s: u32,
        n0: i32,
        h0: i32,
        w0: i32,
    }

    /// The convolution as hooks on the warp-specialized driver.
    struct WsConv<T, O: TcOut> {
        map_x: *const u8,
        map_w: *const u8,
        /// Output width and the output pixels per image.
        q: u32,
        pq: u32,
        stride_h: u32,
        stride_w: u32,
        pad_h: u32,
        pad_w: u32,
        dil_h: u32,
        dil_w: u32,
        /// Filter width.
        s: u32,
        /// 64-channel chunks per tap.
        c_chunks: u32,
        /// k-tiles of the whole reduction, and the splits it is cut into.
        k_total: u32,
        splits: u32,
        /// Row tiles of the output (the grid's rows are `m_tiles · splits`: split-major).
        m_tiles: u32,
        /// The bias (f32), started in the accumulators (the whole reduction only).
        bias: *const f32,
        /// y's tensor map (64 × 64 boxes, 128-byte swizzle) when the epilogue stores through
        /// TMA from the staging tile; null: direct stores.
        map_y: *const u8,
        /// ReLU (the TMA epilogue applies it itself).
        relu: u32,
        /// The output, with ReLU; its bias is null (the accumulators start at it).
        epi: Epilogue<O>,
        /// The staging tile (shared-window address).
        staging: u32,
        /// Split `s` stores its f32 partial sums at `ws + s · rows · kout` (split-K only).
        part: Epilogue<crate::tc::OutF32>,
        /// Stream-K: block `b`'s consumer `c` leaves its partial sums at `ws + (2b + c) ·
        /// 128 · BN/2`; the flags follow the slots (null: no stream-K).
        slots: *mut f32,
        flags: *mut u32,
        /// Where the producer is: its next k-tile's coordinates, advanced without division
        /// (the single producer thread issues every load; a k-loop of divisions made it the
        /// bottleneck of the 64-wide tile).
        at: core::cell::Cell<ProducerAt>,
        _t: core::marker::PhantomData<T>,
    }

    impl<T: Width, O: TcOut> WsConv<T, O> {
        /// The split and the output row tile of grid tile row `tv`.
        #[inline(always)]
        fn split_of(&self, tv: u32) -> (u32, u32) {
            let split = tv / self.m_tiles;
            (split, tv - split * self.m_tiles)
        }

        /// The first k-tile of split `split` (the reduction cut into near-equal parts).
        #[inline(always)]
        fn k_start(&self, split: u32) -> u32 {
            ((split as u64 * self.k_total as u64) / self.splits as u64) as u32
        }

        /// This thread's first accumulator row and column in output tile `(tm, tn)`.
        #[inline(always)]
        fn origin(&self, tm: u32, tn: u32, half: u32) -> (u32, u32) {
            let tid = gpu::thread_idx_x();
            let (warp, lane) = ((tid / 32) % 4, tid % 32);
            let (g, q) = (lane / 4, lane % 4);
            (tm * BM + half * 64 + warp * 16 + g, tn * T::BN + 2 * q)
        }
    }

    impl<T: Width, O: TcOut<Store = u16>> WsKernel for WsConv<T, O> {
        const STAGES: u32 = stages(T::BN, T::CTAS);
        const STAGE_BYTES: u32 = stage_bytes(T::BN);
        const CONSUMERS: u32 = 2;
        type Acc = T::Acc;
        const ACC: T::Acc = T::ZERO;

        #[inline(always)]
        unsafe fn prefetch(&self) {
            hopper::prefetch_tensormap(self.map_x);
            hopper::prefetch_tensormap(self.map_w);
        }

        #[inline(always)]
        fn k_tiles_of(&self, (tv, _): (u32, u32), _k_tiles: u32) -> u32 {
            let (split, _) = self.split_of(tv);
            self.k_start(split + 1) - self.k_start(split)
        }

        #[inline(always)]
        unsafe fn begin(
            &self,
            acc: &mut T::Acc,
            _at: u32,
            (tv, tn): (u32, u32),
            half: u32,
            kb: u32,
        ) {
            let (split, tm) = self.split_of(tv);
            let (_, col0) = self.origin(tm, tn, half);
            // Split-K: the fix-up adds the bias once, after the partial sums; stream-K: the
            // tile's first segment (which finishes it) starts at the bias.
            let bias = if self.splits == 1 && kb == 0 {
                self.bias
            } else {
                core::ptr::null()
            };
            let _ = split;
            T::init(acc, bias, col0, self.epi.n);
        }

        #[inline(always)]
        unsafe fn produce(&self, stage: u32, full: u32, (tv, tn): (u32, u32), kt: u32) {
            let mut at = self.at.get();
            if at.tv != tv || at.kt != kt {
                // A new tile (or a jump): the divisions, once.
                let (split, tm) = self.split_of(tv);
                // The tile's first output pixel, as input coordinates of tap (0, 0).
                let m0 = tm * BM;
                let n0 = m0 / self.pq;
                let rem = m0 - n0 * self.pq;
                let p0 = rem / self.q;
                let q0 = rem - p0 * self.q;
                let k = self.k_start(split) + kt;
                let tap = k / self.c_chunks;
                let r = tap / self.s;
                at = ProducerAt {
                    tv,
                    kt,
                    chunk: k - tap * self.c_chunks,
                    tap,
                    r,
                    s: tap - r * self.s,
                    n0: n0 as i32,
                    h0: (p0 * self.stride_h) as i32 - self.pad_h as i32,
                    w0: (q0 * self.stride_w) as i32 - self.pad_w as i32,
                };
            }
            let ProducerAt { n0, h0, w0, chunk, tap, r, s, .. } = at;
            let c0 = (chunk * BK) as i32;
            // The next k-tile of this tile: the next channel chunk, then the next tap.
            at.kt = kt + 1;
            at.chunk += 1;
            if at.chunk == self.c_chunks {
                at.chunk = 0;
                at.tap += 1;
                at.s += 1;
                if at.s == self.s {
                    at.s = 0;
                    at.r += 1;
                }
            }
            self.at.set(at);
            hopper::tma_load_im2col_4d(
                stage,
                self.map_x,
                [c0, w0, h0, n0],
                [(s * self.dil_w) as u16, (r * self.dil_h) as u16],
                full,
            );
            hopper::tma_load_3d(
                stage + A_STAGE_BYTES,
                self.map_w,
                [c0, tap as i32, (tn * T::BN) as i32],
                full,
            );
        }

        #[inline(always)]
        unsafe fn consume(&self, acc: &mut T::Acc, stage: u32, half: u32, _kt: u32) {
            let sa = stage + half * (64 * BK * 2); // this consumer's 64 pixels
            let sb = stage + A_STAGE_BYTES; // (BN, BK), K-major
            hopper::wgmma_fence();
            let mut kk = 0;
            while kk < BK / 16 {
                let da = hopper::matrix_descriptor(sa | kk * 32, 16, 1024, hopper::Swizzle::B128);
                let db = hopper::matrix_descriptor(sb | kk * 32, 16, 1024, hopper::Swizzle::B128);
                // The accumulators started at the bias (`begin`): always accumulate.
                T::mma::<0>(acc, da, db, 1);
                kk += 1;
            }
            hopper::wgmma_commit();
            T::wait::<1>(acc);
        }

        #[inline(always)]
        unsafe fn drain(&self, acc: &mut T::Acc) {
            T::wait::<0>(acc);
        }

        #[inline(always)]
        unsafe fn finish(&self, acc: &mut T::Acc, (tv, tn): (u32, u32), half: u32) {
            let (split, tm) = self.split_of(tv);
            let tid = gpu::thread_idx_x();
            let (warp, lane) = ((tid / 32) % 4, tid % 32);
            let (g, q) = (lane / 4, lane % 4);
            let (row, col) = (tm * BM + half * 64 + warp * 16 + g, tn * T::BN + 2 * q);
            if self.splits > 1 {
                // Split `split`'s f32 partial sums, at `ws + split · rows · kout`.
                let part = Epilogue {
                    c: self
                        .part
                        .c
                        .add(split as usize * self.part.m as usize * self.part.n as usize),
                    ..self.part
                };
                T::store(acc, &part, row, col);
            } else if !self.map_y.is_null() {
                // Through this consumer's staging tile and TMA stores: once its previous
                // store has read the tile, every thread writes its fragments (ReLU, rounded,
                // 128-byte swizzle), the warpgroup syncs, and one thread stores the 64 × BN
                // tile as 64 × 64 boxes (TMA clips rows and columns past the output).
                let staging = self.staging + half * (64 * T::BN * 2);
                let leader = tid % 128 == 0;
                if leader {
                    hopper::bulk_wait_group_read::<0>();
                }
                hopper::named_barrier_sync(1 + half, 128);
                T::stage::<O>(acc, staging, self.relu, warp * 16 + g, q);
                hopper::fence_proxy_async_shared();
                hopper::named_barrier_sync(1 + half, 128);
                if leader {
                    let mut bx = 0;
                    while bx < T::BN / 64 {
                        hopper::tma_store_2d(
                            self.map_y,
                            (tn * T::BN + 64 * bx) as i32,
                            (tm * BM + half * 64) as i32,
                            staging + bx * 8192,
                        );
                        bx += 1;
                    }
                    hopper::bulk_commit_group();
                }
            } else {
                T::store(acc, &self.epi, row, col);
            }
        }

        #[inline(always)]
        fn flags(&self) -> *mut u32 {
            self.flags
        }

        #[inline(always)]
        unsafe fn store_partial(&self, acc: &T::Acc, block: u32, half: u32) {
            let slot = self.slots.add(((2 * block + half) * 64 * T::BN) as usize);
            T::store_partial(acc, slot, gpu::thread_idx_x() % 128);
        }

        #[inline(always)]
        unsafe fn add_partial(&self, acc: &mut T::Acc, block: u32, half: u32) {
            let slot = self.slots.add(((2 * block + half) * 64 * T::BN) as usize);
            T::add_partial(acc, slot, gpu::thread_idx_x() % 128);
        }

        #[inline(always)]
        unsafe fn consumer_done(&self, _acc: &mut T::Acc, _half: u32) {
            if !self.map_y.is_null() && gpu::thread_idx_x() % 128 == 0 {
                // Every TMA store has finished before the block (and its shared memory) ends.
                hopper::bulk_wait_group::<0>();
            }
        }

        #[inline(always)]
        unsafe fn finish_empty(&self, _tile: (u32, u32), _half: u32) {
            // Every split has at least one k-tile (the host keeps splits ≤ k-tiles).
        }
    }

    /// The convolution with ping-pong consumers ([`ws::run_pingpong`]): each consumer
    /// warpgroup computes whole 128 × BN tiles, as two 64-row accumulator sets sharing each
    /// k-step's B descriptor; the rest is [`WsConv`]'s hooks (its TMA-store staging is off).
    struct PpConv<T, O: TcOut>(WsConv<T, O>);

    impl<T: Width, O: TcOut<Store = u16>> WsKernel for PpConv<T, O> {
        const STAGES: u32 = stages(T::BN, T::CTAS);
        const STAGE_BYTES: u32 = stage_bytes(T::BN);
        const CONSUMERS: u32 = 2;
        type Acc = [T::Acc; 2];
        const ACC: [T::Acc; 2] = [T::ZERO; 2];

        #[inline(always)]
        unsafe fn prefetch(&self) {
            self.0.prefetch()
        }

        #[inline(always)]
        fn k_tiles_of(&self, tile: (u32, u32), k_tiles: u32) -> u32 {
            self.0.k_tiles_of(tile, k_tiles)
        }

        #[inline(always)]
        unsafe fn begin(&self, acc: &mut [T::Acc; 2], at: u32, tile: (u32, u32), _c: u32, kb: u32) {
            // Both halves start at the bias of the same columns.
            self.0.begin(&mut acc[0], at, tile, 0, kb);
            self.0.begin(&mut acc[1], at, tile, 1, kb);
        }

        #[inline(always)]
        unsafe fn produce(&self, stage: u32, full: u32, tile: (u32, u32), kt: u32) {
            self.0.produce(stage, full, tile, kt)
        }

        #[inline(always)]
        unsafe fn consume(&self, acc: &mut [T::Acc; 2], stage: u32, _c: u32, _kt: u32) {
            let sb = stage + A_STAGE_BYTES; // (BN, BK), K-major
            let sa1 = stage + 64 * BK * 2; // the tile's second 64 pixels
            hopper::wgmma_fence();
            let mut kk = 0;
            while kk < BK / 16 {
                let db = hopper::matrix_descriptor(sb | kk * 32, 16, 1024, hopper::Swizzle::B128);
                let da0 = hopper::matrix_descriptor(stage | kk * 32, 16, 1024, hopper::Swizzle::B128);
                let da1 = hopper::matrix_descriptor(sa1 | kk * 32, 16, 1024, hopper::Swizzle::B128);
                T::mma_pair::<0>(acc, [da0, da1], db, 1);
                kk += 1;
            }
            hopper::wgmma_commit();
            T::wait_pair::<1>(acc);
        }

        #[inline(always)]
        unsafe fn drain(&self, acc: &mut [T::Acc; 2]) {
            T::wait_pair::<0>(acc);
        }

        #[inline(always)]
        unsafe fn finish(&self, acc: &mut [T::Acc; 2], tile: (u32, u32), _c: u32) {
            self.0.finish(&mut acc[0], tile, 0);
            self.0.finish(&mut acc[1], tile, 1);
        }

        #[inline(always)]
        unsafe fn finish_empty(&self, _tile: (u32, u32), _c: u32) {
            // Every split has at least one k-tile.
        }
    }

    /// The kernel. `maps`: the im2col map of x at byte 0, the `(C, R·S, K)` map of w at 128
    /// (global memory); `rows` = N·P·Q, `kout` = K; `pq`, `stride`, `pad`, `dil`, `rs` packed
    /// as in the module docs of [`crate::conv`]; `c_chunks` = ⌈C/64⌉; `group` ≥ 1; `splits`
    /// ≥ 1 parts of the reduction (≤ its k-tiles): with more than one, each part writes f32
    /// partial sums to `ws` (`splits · rows · kout` floats) and [`super::combine`] finishes y;
    /// `tma_store` non-zero (whole reductions only): y's tensor map is at byte 256 of `maps`
    /// and the epilogue stores through it; `stream_k` non-zero (with `splits` = 1): stream-K
    /// over the launch's blocks ([`ws::run_stream_k`]), `ws` holding `grid · 2 · 64 · BN` floats
    /// of partial-sum slots and then `grid · 2` zeroed `u32` flags (left zero).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub unsafe fn conv_wgmma<T: Width, O: TcOut<Store = u16>>(
        maps: *const u8,
        y: *mut u16,
        bias: *const f32,
        ws: *mut f32,
        rows: u32,
        kout: u32,
        pq: u32,
        stride: u32,
        pad: u32,
        dil: u32,
        rs: u32,
        c_chunks: u32,
        relu: u32,
        group: u32,
        splits: u32,
        tma_store: u32,
        stream_k: u32,
    ) {
        let (p, q) = unpack(pq);
        let (stride_h, stride_w) = unpack(stride);
        let (pad_h, pad_w) = unpack(pad);
        let (dil_h, dil_w) = unpack(dil);
        let (r, s) = unpack(rs);
        let conv = WsConv::<T, O> {
            map_x: maps,
            map_w: maps.add(128),
            q,
            pq: p * q,
            stride_h,
            stride_w,
            pad_h,
            pad_w,
            dil_h,
            dil_w,
            s,
            c_chunks,
            k_total: r * s * c_chunks,
            splits,
            m_tiles: rows.div_ceil(BM),
            bias,
            // Ping-pong consumers would share the staging tile, and the 256-wide tile has none:
            // direct stores only.
            map_y: if tma_store != 0 && splits == 1 && !T::PP && has_staging(T::BN) {
                maps.add(256)
            } else {
                core::ptr::null()
            },
            relu,
            staging: ((gpu::dynamic_shared_base() + 1023) & !1023)
                + staging_offset(T::BN, T::CTAS),
            epi: Epilogue {
                c: y,
                ldc: kout,
                m: rows,
                n: kout,
                alpha: 1.0,
                beta: 0.0,
                bias: core::ptr::null(),
                relu,
            },
            part: Epilogue {
                c: ws,
                ldc: kout,
                m: rows,
                n: kout,
                alpha: 1.0,
                beta: 0.0,
                bias: core::ptr::null(),
                relu: 0,
            },
            at: core::cell::Cell::new(ProducerAt {
                tv: u32::MAX,
                ..ProducerAt::default()
            }),
            slots: if stream_k != 0 { ws } else { core::ptr::null_mut() },
            flags: if stream_k != 0 {
                ws.add((gpu::grid_dim_x() * 64 * T::BN) as usize * 2) as *mut u32
            } else {
                core::ptr::null_mut()
            },
            _t: core::marker::PhantomData,
        };
        // Split-major rows: grid tile row `s · m_tiles + tm` is split `s` of row tile `tm`.
        let grid = TileGrid::new(rows.div_ceil(BM) * splits * BM, kout, BM, T::BN, group);
        // Stream-K for the 64- and 128-wide tiles (the 256-wide one's 128 accumulators leave
        // no registers for the fix-up).
        // Two blocks per SM: the smaller register split, whole tiles only (stream-K needs every
        // block resident at once, which the host only promises for one block per SM).
        if T::PP {
            // Ping-pong: whole reductions or split-K (the host sends no stream-K here).
            ws::run_pingpong::<_, PRODUCER_REGS, CONSUMER_REGS>(&PpConv(conv), grid, r * s * c_chunks);
        } else if T::CTAS > 1 {
            ws::run::<_, PRODUCER_REGS_X2, CONSUMER_REGS_X2>(&conv, grid, r * s * c_chunks);
        } else if T::BN <= 128 && stream_k != 0 {
            ws::run_stream_k::<_, PRODUCER_REGS, CONSUMER_REGS>(&conv, grid, r * s * c_chunks, 0);
        } else {
            ws::run::<_, PRODUCER_REGS, CONSUMER_REGS>(&conv, grid, r * s * c_chunks);
        }
    }
}
