//! Hopper `wgmma` + TMA, warp-specialized and persistent (sm_90a).
//!
//! - **Tile** 128 × BN × 64 per block, BN = 256 (`wgmma_ws`), 128 (`wgmma_ws_n128`) or 64
//!   (`wgmma_ws_n64`): a [`Width`](crate::tc) of the shared `tc::width` block. Three warpgroups:
//!   warpgroup 0 is the producer (one thread issues every TMA load), warpgroups 1 and 2 are
//!   consumers, each computing 64 × BN of the tile with `wgmma.m64nBNk16` (BN/2 f32 accumulators
//!   per thread). The narrow tiles are for products with few 128 × 256 tiles (small squares,
//!   skinny M or N), where the wide tile leaves SMs idle or computes mostly padding.
//! - **Skinny M** (`wgmma_ws_m64`, `wgmma_ws_m64_n128`): tiles of 64 × 2·BN, the two consumers
//!   splitting the columns (each 64 × BN, BN = 128 or 64) instead of the rows, so a product with
//!   M ≤ 64 computes half the padding rows of the 128-row tile and streams B with half as many
//!   blocks per column tile.
//! - **Cut** (`cut` > 1, BN ≤ 128): each tile's k-tiles are cut into `cut` segments, one block
//!   each, `tiles · cut` blocks all resident at once; the block holding a tile's first segment
//!   adds the others' f32 partial sums and finishes the tile (the stream-K walk and fix-up of
//!   `tc::ws::run_stream_k` on a grid of whole segments) — split-K without a second kernel.
//! - **Stream-K tail** (`wgmma_sk`, an experiment: the 128 × 256 tile): the whole waves of
//!   tiles go as the persistent walk, and only the last, partial wave's k-iterations are shared
//!   evenly over the persistent grid (`StreamK::tail`), the same fix-up finishing the tiles it
//!   cuts. At 4096³ (512 tiles on 132 SMs) the busiest block then computes 3 · 64 + 57
//!   k-tiles instead of 4 · 64 — but 7 % slower than the whole-tile walk on an H100 (session
//!   22: neighbouring blocks work 8 k-tiles apart, and DRAM reads rise 148 → 196 MB).
//! - **Ring**: [`stages`] stages of A (128 × 64) and B (BN × 64) in 128-byte-swizzled shared
//!   memory, a [`TmaRing`](crate::gpu::ring::TmaRing): a `full` mbarrier per stage
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
/// Columns of B per block of the widest tile (`wgmma_ws`).
pub const BN: u32 = 256;
/// K per stage (one 128-byte swizzle row of f16/bf16).
pub const BK: u32 = 64;
/// Ring depth of the widest tile.
pub const STAGES: u32 = stages(BM, BN);
/// Threads: three warpgroups.
pub const THREADS: u32 = 384;
/// Bytes of A per stage of the 128-row tile.
pub const A_STAGE_BYTES: u32 = BM * BK * 2;
/// Bytes of one stage of a `rows × cols` tile (A's rows and B's columns, 64 k each).
pub const fn stage_bytes(rows: u32, cols: u32) -> u32 {
    (rows + cols) * BK * 2
}
/// Ring depth of a `rows × cols` tile: as many stages as fit in 225 KiB (the block's 227 KiB
/// less the alignment and barriers), at most 8 — 4 (128 × 256), 7 (128 × 128, 64 × 256),
/// 8 (128 × 64, 64 × 128).
pub const fn stages(rows: u32, cols: u32) -> u32 {
    let s = (225 * 1024) / stage_bytes(rows, cols);
    if s > 8 {
        8
    } else {
        s
    }
}
/// Dynamic shared bytes of a `rows × cols` tile: the ring, the barriers, and up to 1 KiB to
/// align the ring to the 1024-byte swizzle period.
pub const fn shared_bytes(rows: u32, cols: u32) -> usize {
    crate::gpu::ring::TmaRing::bytes(stage_bytes(rows, cols), stages(rows, cols))
}
/// Bytes of the widest tile's output staging (TMA-store epilogue): two 64 × 64 boxes of 16-bit
/// values per consumer warpgroup, 128-byte swizzled, written in turn (double-buffered).
pub const STAGING_BYTES: u32 = 2 * 2 * 64 * 64 * 2;
/// Byte offset of the staging from the ring's 1024-aligned start: past the stages, their
/// barriers (at most 1 KiB, rounded up) and the driver's unused per-tile ring (1 KiB).
pub const fn staging_offset(rows: u32, cols: u32) -> u32 {
    stages(rows, cols) * stage_bytes(rows, cols) + 2048
}
/// Dynamic shared bytes of the widest tile with its staging: up to 1 KiB of alignment, then
/// [`staging_offset`] and [`STAGING_BYTES`] — 232 448 bytes, the whole of an H100's/H200's
/// opt-in shared memory per block.
pub const SHARED_BYTES_STAGED: usize = (1024 + staging_offset(BM, BN) + STAGING_BYTES) as usize;
/// Dynamic shared bytes of the widest tile.
pub const SHARED_BYTES: usize = SHARED_BYTES_STAGED;
/// The widths that can cut tiles into k-segments (the 256-wide tile's 128 accumulators leave
/// no registers for the fix-up).
pub const fn can_cut(bn: u32) -> bool {
    bn <= 128
}
/// f32 words of the cut workspace for a grid of `blocks` with consumers `bn` wide: the
/// partial-sum slots (a 64 × `bn` slot per block and consumer), then `2 · blocks` `u32` flags, zero at launch and left zero.
pub const fn cut_words(bn: u32, blocks: u32) -> usize {
    blocks as usize * 2 * (64 * bn as usize + 1)
}
/// Registers per producer thread after `setmaxnreg.dec`.
pub const PRODUCER_REGS: u32 = 40;
/// Registers per consumer thread after `setmaxnreg.inc`: (168 · 384 − 40 · 128) / 256, rounded
/// down to a multiple of 8. The launch allocates 168 per thread (`.maxntid 384`).
pub const CONSUMER_REGS: u32 = 232;
/// Tile rows per group of the persistent tile order (the default of the kernel's `group`
/// argument).
pub const GROUP_M: u32 = 16;
/// The tensor-map box of A for tiles of `rows` (128 or 64): 64 k × `rows`.
pub const fn a_box(rows: u32) -> (u32, u32) {
    (BK, rows)
}
/// The box of transposed B (`bt`, N × K) for tile width `bn`: 64 k × `bn` rows.
pub const fn bt_box(bn: u32) -> (u32, u32) {
    (BK, bn)
}
/// The box of row-major B (`bn`, K × N): 64 n × 64 k; four per stage.
pub const BN_BOX: (u32, u32) = (64, BK);

macro_rules! ws_record {
    ($info:ident, $syms:ident, $name:literal, $role:ident, $needs:ident, $rows:literal, $cols:literal, $split:literal, $shared:expr,
     [$($sym:ident => ($i:ident, $o:ident, $l:ident, $w:ident, $out:ident, $tb:literal);)+]) => {
        crate::entry_points! {
            pub const $syms;
            sm90a fn device::hgemm_wgmma_ws(maps: *const u8, c: *mut <O as crate::hgemm::TcOut>::Store, bias: *const f32, ws: *mut f32, m: u32, n: u32, k: u32, ldc: u32, alpha: f32, beta: f32, relu: u32, group: u32, cut: u32, store: u32);
            $($sym => ($i, $o, $l) [T = crate::tc::width::$w, O = crate::hgemm::$out; TRANS_B: u32 = $tb, SPLIT: u32 = $split];)+
        }

        #[doc = concat!("Registry record of the ", stringify!($rows), " × ", stringify!($cols), " tile.")]
        pub const $info: crate::registry::KernelInfo = crate::registry::KernelInfo {
            family: crate::registry::Family::Hgemm,
            name: $name,
            role: crate::registry::Role::$role,
            needs: crate::registry::Needs::$needs,
            bounds: Some((THREADS, 1)),
            block: (THREADS, 1, 1),
            launch: crate::registry::Launch::Persistent { tile: ($rows, $cols) },
            shared_bytes_f16: $shared,
            symbols: $syms,
            about: concat!(
                "wgmma + TMA ring, warp-specialized producer/consumers, persistent, ",
                stringify!($rows),
                "x",
                stringify!($cols),
                " tiles (sm_90a)"
            ),
            ..crate::registry::KernelInfo::BASE
        };
    };
}

ws_record!(INFO, SYMBOLS, "wgmma_ws", Ladder, HOPPER_TMA, 128, 256, 0, SHARED_BYTES_STAGED, [
    hgemm_wgmma_ws_f16_f16_bn => (F16, F16, Bn, N256F16, OutF16, 1);
    hgemm_wgmma_ws_f16_f32_bn => (F16, F32, Bn, N256F16, OutF32, 1);
    hgemm_wgmma_ws_bf16_bf16_bn => (Bf16, Bf16, Bn, N256Bf16, OutBf16, 1);
    hgemm_wgmma_ws_bf16_f32_bn => (Bf16, F32, Bn, N256Bf16, OutF32, 1);
    hgemm_wgmma_ws_f16_f16_bt => (F16, F16, Bt, N256F16, OutF16, 0);
    hgemm_wgmma_ws_f16_f32_bt => (F16, F32, Bt, N256F16, OutF32, 0);
    hgemm_wgmma_ws_bf16_bf16_bt => (Bf16, Bf16, Bt, N256Bf16, OutBf16, 0);
    hgemm_wgmma_ws_bf16_f32_bt => (Bf16, F32, Bt, N256Bf16, OutF32, 0);
]);
ws_record!(INFO_N128, SYMBOLS_N128, "wgmma_ws_n128", Tuning, HOPPER_TMA, 128, 128, 0, shared_bytes(128, 128), [
    hgemm_wgmma_ws_n128_f16_f16_bn => (F16, F16, Bn, N128F16, OutF16, 1);
    hgemm_wgmma_ws_n128_f16_f32_bn => (F16, F32, Bn, N128F16, OutF32, 1);
    hgemm_wgmma_ws_n128_bf16_bf16_bn => (Bf16, Bf16, Bn, N128Bf16, OutBf16, 1);
    hgemm_wgmma_ws_n128_bf16_f32_bn => (Bf16, F32, Bn, N128Bf16, OutF32, 1);
    hgemm_wgmma_ws_n128_f16_f16_bt => (F16, F16, Bt, N128F16, OutF16, 0);
    hgemm_wgmma_ws_n128_f16_f32_bt => (F16, F32, Bt, N128F16, OutF32, 0);
    hgemm_wgmma_ws_n128_bf16_bf16_bt => (Bf16, Bf16, Bt, N128Bf16, OutBf16, 0);
    hgemm_wgmma_ws_n128_bf16_f32_bt => (Bf16, F32, Bt, N128Bf16, OutF32, 0);
]);
ws_record!(INFO_N64, SYMBOLS_N64, "wgmma_ws_n64", Tuning, HOPPER_TMA, 128, 64, 0, shared_bytes(128, 64), [
    hgemm_wgmma_ws_n64_f16_f16_bn => (F16, F16, Bn, N64F16, OutF16, 1);
    hgemm_wgmma_ws_n64_f16_f32_bn => (F16, F32, Bn, N64F16, OutF32, 1);
    hgemm_wgmma_ws_n64_bf16_bf16_bn => (Bf16, Bf16, Bn, N64Bf16, OutBf16, 1);
    hgemm_wgmma_ws_n64_bf16_f32_bn => (Bf16, F32, Bn, N64Bf16, OutF32, 1);
    hgemm_wgmma_ws_n64_f16_f16_bt => (F16, F16, Bt, N64F16, OutF16, 0);
    hgemm_wgmma_ws_n64_f16_f32_bt => (F16, F32, Bt, N64F16, OutF32, 0);
    hgemm_wgmma_ws_n64_bf16_bf16_bt => (Bf16, Bf16, Bt, N64Bf16, OutBf16, 0);
    hgemm_wgmma_ws_n64_bf16_f32_bt => (Bf16, F32, Bt, N64Bf16, OutF32, 0);
]);

ws_record!(INFO_M64, SYMBOLS_M64, "wgmma_ws_m64", Tuning, HOPPER_TMA, 64, 256, 1, shared_bytes(64, 256), [
    hgemm_wgmma_ws_m64_f16_f16_bn => (F16, F16, Bn, N128F16, OutF16, 1);
    hgemm_wgmma_ws_m64_f16_f32_bn => (F16, F32, Bn, N128F16, OutF32, 1);
    hgemm_wgmma_ws_m64_bf16_bf16_bn => (Bf16, Bf16, Bn, N128Bf16, OutBf16, 1);
    hgemm_wgmma_ws_m64_bf16_f32_bn => (Bf16, F32, Bn, N128Bf16, OutF32, 1);
    hgemm_wgmma_ws_m64_f16_f16_bt => (F16, F16, Bt, N128F16, OutF16, 0);
    hgemm_wgmma_ws_m64_f16_f32_bt => (F16, F32, Bt, N128F16, OutF32, 0);
    hgemm_wgmma_ws_m64_bf16_bf16_bt => (Bf16, Bf16, Bt, N128Bf16, OutBf16, 0);
    hgemm_wgmma_ws_m64_bf16_f32_bt => (Bf16, F32, Bt, N128Bf16, OutF32, 0);
]);
ws_record!(INFO_M64_N128, SYMBOLS_M64_N128, "wgmma_ws_m64_n128", Tuning, HOPPER_TMA, 64, 128, 1, shared_bytes(64, 128), [
    hgemm_wgmma_ws_m64_n128_f16_f16_bn => (F16, F16, Bn, N64F16, OutF16, 1);
    hgemm_wgmma_ws_m64_n128_f16_f32_bn => (F16, F32, Bn, N64F16, OutF32, 1);
    hgemm_wgmma_ws_m64_n128_bf16_bf16_bn => (Bf16, Bf16, Bn, N64Bf16, OutBf16, 1);
    hgemm_wgmma_ws_m64_n128_bf16_f32_bn => (Bf16, F32, Bn, N64Bf16, OutF32, 1);
    hgemm_wgmma_ws_m64_n128_f16_f16_bt => (F16, F16, Bt, N64F16, OutF16, 0);
    hgemm_wgmma_ws_m64_n128_f16_f32_bt => (F16, F32, Bt, N64F16, OutF32, 0);
    hgemm_wgmma_ws_m64_n128_bf16_bf16_bt => (Bf16, Bf16, Bt, N64Bf16, OutBf16, 0);
    hgemm_wgmma_ws_m64_n128_bf16_f32_bt => (Bf16, F32, Bt, N64Bf16, OutF32, 0);
]);

ws_record!(INFO_PP, SYMBOLS_PP, "wgmma_pp", Tuning, HOPPER_TMA, 128, 128, 2, shared_bytes(128, 128), [
    hgemm_wgmma_pp_f16_f16_bn => (F16, F16, Bn, N128F16, OutF16, 1);
    hgemm_wgmma_pp_f16_f32_bn => (F16, F32, Bn, N128F16, OutF32, 1);
    hgemm_wgmma_pp_bf16_bf16_bn => (Bf16, Bf16, Bn, N128Bf16, OutBf16, 1);
    hgemm_wgmma_pp_bf16_f32_bn => (Bf16, F32, Bn, N128Bf16, OutF32, 1);
    hgemm_wgmma_pp_f16_f16_bt => (F16, F16, Bt, N128F16, OutF16, 0);
    hgemm_wgmma_pp_f16_f32_bt => (F16, F32, Bt, N128F16, OutF32, 0);
    hgemm_wgmma_pp_bf16_bf16_bt => (Bf16, Bf16, Bt, N128Bf16, OutBf16, 0);
    hgemm_wgmma_pp_bf16_f32_bt => (Bf16, F32, Bt, N128Bf16, OutF32, 0);
]);

ws_record!(INFO_SK, SYMBOLS_SK, "wgmma_sk", Tuning, HOPPER_TMA, 128, 256, 4, SHARED_BYTES_STAGED, [
    hgemm_wgmma_sk_f16_f16_bn => (F16, F16, Bn, N256F16, OutF16, 1);
    hgemm_wgmma_sk_f16_f32_bn => (F16, F32, Bn, N256F16, OutF32, 1);
    hgemm_wgmma_sk_bf16_bf16_bn => (Bf16, Bf16, Bn, N256Bf16, OutBf16, 1);
    hgemm_wgmma_sk_bf16_f32_bn => (Bf16, F32, Bn, N256Bf16, OutF32, 1);
    hgemm_wgmma_sk_f16_f16_bt => (F16, F16, Bt, N256F16, OutF16, 0);
    hgemm_wgmma_sk_f16_f32_bt => (F16, F32, Bt, N256F16, OutF32, 0);
    hgemm_wgmma_sk_bf16_bf16_bt => (Bf16, Bf16, Bt, N256Bf16, OutBf16, 0);
    hgemm_wgmma_sk_bf16_f32_bt => (Bf16, F32, Bt, N256Bf16, OutF32, 0);
]);

ws_record!(INFO_PAIR, SYMBOLS_PAIR, "wgmma_pair", Tuning, HOPPER_TMA_PAIR, 128, 256, 3, SHARED_BYTES_STAGED, [
    hgemm_wgmma_pair_f16_f16_bn => (F16, F16, Bn, N256F16, OutF16, 1);
    hgemm_wgmma_pair_f16_f32_bn => (F16, F32, Bn, N256F16, OutF32, 1);
    hgemm_wgmma_pair_bf16_bf16_bn => (Bf16, Bf16, Bn, N256Bf16, OutBf16, 1);
    hgemm_wgmma_pair_bf16_f32_bn => (Bf16, F32, Bn, N256Bf16, OutF32, 1);
    hgemm_wgmma_pair_f16_f16_bt => (F16, F16, Bt, N256F16, OutF16, 0);
    hgemm_wgmma_pair_f16_f32_bt => (F16, F32, Bt, N256F16, OutF32, 0);
    hgemm_wgmma_pair_bf16_bf16_bt => (Bf16, Bf16, Bt, N256Bf16, OutBf16, 0);
    hgemm_wgmma_pair_bf16_f32_bt => (Bf16, F32, Bt, N256Bf16, OutF32, 0);
]);

/// The box of transposed B for the clustered tile of width `bn` ([`INFO_PAIR`]): each block of
/// the pair loads half of the stage's B rows, 64 k × `bn / 2`.
pub const fn bt_box_pair(bn: u32) -> (u32, u32) {
    (BK, bn / 2)
}

/// The tiles: 128 rows, narrowest first, then 64 rows (consumers splitting the columns).
pub const TILES: [&crate::registry::KernelInfo; 5] =
    [&INFO_N64, &INFO_N128, &INFO, &INFO_M64_N128, &INFO_M64];

#[cfg(all(target_arch = "nvptx64", rustile_sm90a))]
mod device {
    use super::*;
    #[allow(unused_imports)] // for the docs
    use crate::gpu::ring::TmaRing;
    use crate::gpu::sched::TileGrid;
    use crate::gpu::{self, hopper};
    use crate::tc::width::Width;
    use crate::tc::pair;
    use crate::tc::ws::{self, WsKernel};
    use crate::tc::{Epilogue, TcOut};

    /// The GEMM as hooks on the warp-specialized driver ([`ws::run`], [`ws::run_stream_k`]).
    struct WsGemm<T, O: TcOut, const TRANS_B: u32, const SPLIT: u32> {
        /// A's tensor map (global memory).
        map_a: *const u8,
        /// B's tensor map.
        map_b: *const u8,
        epi: Epilogue<O>,
        /// The first k-tile of the segment this consumer is on (0 for whole tiles): the
        /// `wgmma`s of that k-tile overwrite the accumulators instead of adding to them.
        kb: core::cell::Cell<u32>,
        /// Cut tiles: block `b`'s consumer `c` leaves its partial sums at `slots + (2b + c) ·
        /// 64 · BN`; the flags follow the slots (null: whole tiles).
        slots: *mut f32,
        flags: *mut u32,
        /// `SPLIT` = 3: this block's rank in its pair (which half of B it loads).
        rank: u32,
        /// The TMA-store epilogue ([`Self::STAGED`] kernels): C's tensor map (16-bit, 64 × 64
        /// boxes, 128-byte swizzle), null for direct stores; the staging's shared address.
        map_c: *const u8,
        staging: u32,
        _t: core::marker::PhantomData<T>,
    }

    impl<T: Width, O: TcOut, const TRANS_B: u32, const SPLIT: u32> WsGemm<T, O, TRANS_B, SPLIT> {
        /// Tile rows: 128 (consumers split the rows) or 64 (they split the columns).
        const ROWS: u32 = if SPLIT == 1 { 64 } else { BM };
        /// Tile columns: BN, or 2·BN when the consumers split them.
        const COLS: u32 = if SPLIT == 1 { 2 * T::BN } else { T::BN };
        /// Bytes of A per stage.
        const A_BYTES: u32 = Self::ROWS * BK * 2;
        /// Whether the kernel has the staging for the TMA-store epilogue: the whole 128 × 256
        /// tile (alone or in clustered pairs) with a 16-bit output.
        const STAGED: bool = (SPLIT == 0 || SPLIT == 3 || SPLIT == 4)
            && T::BN == BN
            && core::mem::size_of::<O::Store>() == 2;

        /// The epilogue through shared memory and TMA stores (C = α·acc, ReLU; the host sends
        /// only β = 0 without bias here): consumer `half`'s 64 × 256 leaves as four 64 × 64
        /// boxes through two staging buffers in turn. Before writing a buffer its leader waits
        /// until the store that last read it has (at most one group still reading), the
        /// warpgroup meets; every thread writes its fragments, fences them to the async proxy,
        /// the warpgroup meets again and the leader stores the box (TMA clips rows and columns
        /// past C). The consumer goes on to its next tile while the stores run.
        #[inline(always)]
        unsafe fn finish_staged(&self, acc: &T::Acc, tile: (u32, u32), half: u32) {
            // α = 1 without ReLU (the common case) only rounds: a third of the instructions.
            if self.epi.alpha == 1.0 && self.epi.relu == 0 {
                self.stage_and_store::<true>(acc, tile, half);
            } else {
                self.stage_and_store::<false>(acc, tile, half);
            }
        }

        /// [`Self::finish_staged`]'s boxes; `PLAIN`: α = 1 and no ReLU.
        #[inline(always)]
        unsafe fn stage_and_store<const PLAIN: bool>(
            &self,
            acc: &T::Acc,
            (tm, tn): (u32, u32),
            half: u32,
        ) {
            let tid = gpu::thread_idx_x();
            let (warp, lane) = ((tid / 32) % 4, tid % 32);
            let (rr, q) = (warp * 16 + lane / 4, lane % 4);
            let leader = tid % 128 == 0;
            let staging = self.staging + half * (STAGING_BYTES / 2);
            let (x0, y) = (tn * T::BN, (tm * BM + half * 64) as i32);
            macro_rules! one_box {
                ($bx:literal) => {
                    if $bx * 64 < T::BN {
                        let at = staging + ($bx % 2) * 8192;
                        // The leader's bulk-group operations are predicated, not branched
                        // around: see `hopper::tma_store_2d_commit_if`.
                        hopper::bulk_wait_group_read_if::<1>(leader);
                        hopper::named_barrier_sync(1 + half, 128);
                        let (alpha, relu) = (self.epi.alpha, self.epi.relu);
                        T::stage_box::<O, $bx, PLAIN>(acc, at, alpha, relu, rr, q);
                        hopper::fence_proxy_async_shared();
                        hopper::named_barrier_sync(1 + half, 128);
                        let x = (x0 + 64 * $bx) as i32;
                        hopper::tma_store_2d_commit_if(leader, self.map_c, x, y, at);
                    }
                };
            }
            one_box!(0);
            one_box!(1);
            one_box!(2);
            one_box!(3);
        }

        /// This thread's first accumulator row and column in tile `(tm, tn)` for consumer
        /// `half` (the `wgmma` D layout: warp `w` of the warpgroup owns rows `16w..16w + 16`).
        #[inline(always)]
        fn origin(&self, (tm, tn): (u32, u32), half: u32) -> (u32, u32) {
            let tid = gpu::thread_idx_x();
            let (warp, lane) = ((tid / 32) % 4, tid % 32);
            let (g, q) = (lane / 4, lane % 4);
            if SPLIT == 1 {
                (tm * 64 + warp * 16 + g, tn * Self::COLS + half * T::BN + 2 * q)
            } else {
                (tm * BM + half * 64 + warp * 16 + g, tn * T::BN + 2 * q)
            }
        }

        /// The `wgmma` descriptor of k16 step `kk` of the stage's B at `sb`: K-major rows of
        /// 128 bytes, or (row-major B) N-major 64-column boxes 8 KiB apart, 16 k-rows of 128
        /// bytes per step.
        #[inline(always)]
        fn b_desc(sb: u32, kk: u32) -> u64 {
            if TRANS_B == 0 {
                hopper::matrix_descriptor(sb | kk * 32, 16, 1024, hopper::Swizzle::B128)
            } else {
                hopper::matrix_descriptor(sb + kk * 16 * 128, BN_BOX.0 * BK * 2, 1024, hopper::Swizzle::B128)
            }
        }

        /// Consumer `half`'s partial-sum slot of block `block`.
        #[inline(always)]
        unsafe fn slot(&self, block: u32, half: u32) -> *mut f32 {
            self.slots.add(((2 * block + half) * 64 * T::BN) as usize)
        }
    }

    impl<T: Width, O: TcOut, const TRANS_B: u32, const SPLIT: u32> WsKernel
        for WsGemm<T, O, TRANS_B, SPLIT>
    {
        const STAGES: u32 = stages(Self::ROWS, Self::COLS);
        const STAGE_BYTES: u32 = stage_bytes(Self::ROWS, Self::COLS);
        const CONSUMERS: u32 = 2;
        type Acc = T::Acc;
        const ACC: T::Acc = T::ZERO;

        #[inline(always)]
        unsafe fn prefetch(&self) {
            hopper::prefetch_tensormap(self.map_a);
            hopper::prefetch_tensormap(self.map_b);
        }

        #[inline(always)]
        unsafe fn begin(&self, _acc: &mut T::Acc, _at: u32, _tile: (u32, u32), _half: u32, kb: u32) {
            self.kb.set(kb);
        }

        #[inline(always)]
        unsafe fn produce(&self, stage: u32, full: u32, (tm, tn): (u32, u32), kt: u32) {
            let sa = stage; // (ROWS, BK), 128B-swizzled
            let sb = stage + Self::A_BYTES; // (COLS, BK) or, row-major B, COLS/64 (BK, 64) boxes
            let kx = (kt * BK) as i32;
            hopper::tma_load_2d(sa, self.map_a, kx, (tm * Self::ROWS) as i32, full);
            if SPLIT == 3 {
                // The pair shares B: this block loads half of it (rows of Bᵀ, or 64-column
                // boxes of row-major B) into both blocks' slots.
                let half = Self::COLS / 2;
                let (off, n0) = (self.rank * half * BK * 2, tn * Self::COLS + self.rank * half);
                if TRANS_B == 0 {
                    hopper::tma_load_2d_multicast(sb + off, self.map_b, kx, n0 as i32, full, 0b11);
                } else {
                    let mut j = 0;
                    while j < half / 64 {
                        let at = sb + off + j * BN_BOX.0 * BK * 2;
                        let nx = (n0 + 64 * j) as i32;
                        hopper::tma_load_2d_multicast(at, self.map_b, nx, kx, full, 0b11);
                        j += 1;
                    }
                }
            } else if TRANS_B == 0 {
                hopper::tma_load_2d(sb, self.map_b, kx, (tn * Self::COLS) as i32, full);
            } else {
                let mut j = 0;
                while j < Self::COLS / 64 {
                    let nx = (tn * Self::COLS + 64 * j) as i32;
                    hopper::tma_load_2d(sb + j * BN_BOX.0 * BK * 2, self.map_b, nx, kx, full);
                    j += 1;
                }
            }
        }

        #[inline(always)]
        unsafe fn consume(&self, acc: &mut T::Acc, stage: u32, half: u32, kt: u32) {
            // Consumer `half` takes rows 64·half .. 64·half + 64 of the tile, or (SPLIT) its
            // columns BN·half .. BN·half + BN: BN K-major rows of 128 bytes, or BN/64 N-major
            // boxes of 8 KiB — BN·128 bytes into the stage's B either way.
            let (sa, sb) = if SPLIT == 1 {
                (stage, stage + Self::A_BYTES + half * (T::BN * BK * 2))
            } else {
                (stage + half * (64 * BK * 2), stage + Self::A_BYTES)
            };
            let first = kt == self.kb.get();
            hopper::wgmma_fence();
            let mut kk = 0;
            while kk < BK / 16 {
                // `sa` and `sb` are 1024-byte aligned ([`TmaRing::stage`]) and a k16 step moves
                // 32 bytes inside the 128-byte row: `|` says it cannot carry, so each step is one
                // `or` into the descriptor.
                let da = hopper::matrix_descriptor(sa | kk * 32, 16, 1024, hopper::Swizzle::B128);
                T::mma::<TRANS_B>(acc, da, Self::b_desc(sb, kk), (!first || kk > 0) as u32);
                kk += 1;
            }
            hopper::wgmma_commit();
            // Keep this k-tile's wgmma in flight; the previous one has finished reading its
            // stage, which the driver gives back to the producer.
            T::wait::<1>(acc);
        }

        #[inline(always)]
        unsafe fn drain(&self, acc: &mut T::Acc) {
            T::wait::<0>(acc);
        }

        #[inline(always)]
        unsafe fn finish(&self, acc: &mut T::Acc, tile: (u32, u32), half: u32) {
            // The stream-K tail's 16-bit kernels have only the staged epilogue (the host sends
            // them nothing else): with the direct stores beside it, its fix-up's live state
            // made ptxas spill.
            if Self::STAGED && (SPLIT == 4 || !self.map_c.is_null()) {
                self.finish_staged(acc, tile, half);
                return;
            }
            let (row, col0) = self.origin(tile, half);
            T::store(acc, &self.epi, row, col0);
        }

        #[inline(always)]
        unsafe fn consumer_done(&self, _acc: &mut T::Acc, _half: u32) {
            if Self::STAGED && !self.map_c.is_null() && gpu::thread_idx_x() % 128 == 0 {
                // Every TMA store has finished before the block (and its shared memory) ends.
                hopper::bulk_wait_group::<0>();
            }
        }

        #[inline(always)]
        fn flags(&self) -> *mut u32 {
            self.flags
        }

        #[inline(always)]
        unsafe fn store_partial(&self, acc: &T::Acc, block: u32, half: u32) {
            T::store_partial(acc, self.slot(block, half), gpu::thread_idx_x() % 128);
        }

        #[inline(always)]
        unsafe fn add_partial(&self, acc: &mut T::Acc, block: u32, half: u32) {
            T::add_partial(acc, self.slot(block, half), gpu::thread_idx_x() % 128);
        }

        #[inline(always)]
        unsafe fn finish_empty(&self, tile: (u32, u32), half: u32) {
            // K = 0: C = β·C (+ bias) (ReLU). A loop, not unrolled: this path is cold.
            let (row, col0) = self.origin(tile, half);
            let mut j = 0;
            while j < T::BN / 8 {
                self.epi.store_frag(row, col0 + 8 * j, [0.0; 4]);
                j += 1;
            }
        }
    }

    /// The GEMM with **ping-pong consumers** ([`ws::run_pingpong`]): each consumer warpgroup
    /// computes whole 128 × BN tiles, as two 64-row accumulator sets sharing each k-step's B
    /// descriptor, so one consumer's epilogue runs under the other's `wgmma`s. The loads and
    /// the epilogue are [`WsGemm`]'s (rows split, `SPLIT` = 0).
    struct PpGemm<T, O: TcOut, const TRANS_B: u32>(WsGemm<T, O, TRANS_B, 0>);

    impl<T: Width, O: TcOut, const TRANS_B: u32> WsKernel for PpGemm<T, O, TRANS_B> {
        const STAGES: u32 = stages(BM, T::BN);
        const STAGE_BYTES: u32 = stage_bytes(BM, T::BN);
        const CONSUMERS: u32 = 2;
        type Acc = [T::Acc; 2];
        const ACC: [T::Acc; 2] = [T::ZERO; 2];

        #[inline(always)]
        unsafe fn prefetch(&self) {
            self.0.prefetch()
        }

        #[inline(always)]
        unsafe fn begin(&self, _acc: &mut [T::Acc; 2], _at: u32, _tile: (u32, u32), _c: u32, kb: u32) {
            self.0.kb.set(kb);
        }

        #[inline(always)]
        unsafe fn produce(&self, stage: u32, full: u32, tile: (u32, u32), kt: u32) {
            self.0.produce(stage, full, tile, kt)
        }

        #[inline(always)]
        unsafe fn consume(&self, acc: &mut [T::Acc; 2], stage: u32, _c: u32, kt: u32) {
            let sa1 = stage + 64 * BK * 2; // the tile's second 64 rows of A
            let sb = stage + BM * BK * 2;
            let first = kt == self.0.kb.get();
            hopper::wgmma_fence();
            let mut kk = 0;
            while kk < BK / 16 {
                let db = WsGemm::<T, O, TRANS_B, 0>::b_desc(sb, kk);
                let da0 = hopper::matrix_descriptor(stage | kk * 32, 16, 1024, hopper::Swizzle::B128);
                let da1 = hopper::matrix_descriptor(sa1 | kk * 32, 16, 1024, hopper::Swizzle::B128);
                T::mma_pair::<TRANS_B>(acc, [da0, da1], db, (!first || kk > 0) as u32);
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
        unsafe fn finish_empty(&self, tile: (u32, u32), _c: u32) {
            self.0.finish_empty(tile, 0);
            self.0.finish_empty(tile, 1);
        }
    }

    /// The kernel. `maps`: the A tensor map at byte 0 and B's at byte 128, in global memory;
    /// `group`: tile rows per group of the tile order (≥ 1); `cut` ≤ 1: whole tiles, persistent
    /// over the launch's blocks; `cut` > 1 (BN ≤ 128 only): the launch has `tiles · cut` blocks,
    /// all resident, each a k-segment of one tile, and `ws` holds [`cut_words`] words (the
    /// flags zero). `TRANS_B` = 1: B row-major (K × N); 0: B transposed (N × K). `SPLIT` = 1:
    /// 64 × 2·BN tiles, the consumers splitting the columns (A's map has 64-row boxes); 2: 128 ×
    /// BN tiles, each computed by one consumer ([`PpGemm`], ping-pong; `cut` ignored); 3: 128 × BN
    /// tiles in vertical pairs, one per cluster of two blocks sharing B by multicast
    /// ([`pair::run_pair`]; `cut` ignored); 4: 128 × BN tiles with the stream-K tail
    /// ([`ws::run_stream_k`] with `tail`: a persistent grid of at most one block per SM, `ws`
    /// holding [`cut_words`] words for it, the flags zero; `cut` ignored). `store` non-zero
    /// (the whole 128 × 256 tile, alone, paired or with the stream-K tail, with a 16-bit output
    /// only; the host passes it with β = 0 and no bias): C's
    /// tensor map is at byte 256 of `maps` and the epilogue goes through shared memory and TMA
    /// stores.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub unsafe fn hgemm_wgmma_ws<T: Width, O: TcOut, const TRANS_B: u32, const SPLIT: u32>(
        maps: *const u8,
        c: *mut O::Store,
        bias: *const f32,
        ws: *mut f32,
        m: u32,
        n: u32,
        k: u32,
        ldc: u32,
        alpha: f32,
        beta: f32,
        relu: u32,
        group: u32,
        cut: u32,
        store: u32,
    ) {
        // `SPLIT` = 4: `cut` carries the tiles done whole before the stream-K range.
        let dp_tiles = cut;
        let cut = SPLIT < 2 && can_cut(T::BN) && cut > 1;
        // Partial sums and flags: a cut, or the stream-K tail.
        let partials = cut || SPLIT == 4;
        let epi = Epilogue {
            c,
            ldc,
            m,
            n,
            alpha,
            beta,
            bias,
            relu,
        };
        let k_tiles = k.div_ceil(BK);
        if SPLIT == 2 {
            let pp = PpGemm::<T, O, TRANS_B>(WsGemm {
                map_a: maps,
                map_b: maps.add(128),
                epi,
                kb: core::cell::Cell::new(0),
                slots: core::ptr::null_mut(),
                flags: core::ptr::null_mut(),
                rank: 0,
                map_c: core::ptr::null(),
                staging: 0,
                _t: core::marker::PhantomData,
            });
            let grid = TileGrid::new(m, n, BM, T::BN, group);
            ws::run_pingpong::<_, PRODUCER_REGS, CONSUMER_REGS>(&pp, grid, k_tiles);
            return;
        }
        let gemm = WsGemm::<T, O, TRANS_B, SPLIT> {
            map_a: maps,
            map_b: maps.add(128),
            epi,
            kb: core::cell::Cell::new(0),
            slots: ws,
            flags: if partials {
                ws.add((gpu::grid_dim_x() * 2 * 64 * T::BN) as usize) as *mut u32
            } else {
                core::ptr::null_mut()
            },
            rank: if SPLIT == 3 { hopper::cluster_ctarank() } else { 0 },
            map_c: if WsGemm::<T, O, TRANS_B, SPLIT>::STAGED && store != 0 {
                maps.add(256)
            } else {
                core::ptr::null()
            },
            staging: ((gpu::dynamic_shared_base() + 1023) & !1023) + staging_offset(BM, BN),
            _t: core::marker::PhantomData,
        };
        if SPLIT == 3 {
            // Pairs of 128-row tiles, one per cluster of two blocks.
            let grid = TileGrid::new(m, n, 2 * BM, T::BN, group);
            pair::run_pair::<_, PRODUCER_REGS, CONSUMER_REGS>(&gemm, grid, k_tiles);
            return;
        }
        let grid = TileGrid::new(
            m,
            n,
            WsGemm::<T, O, TRANS_B, SPLIT>::ROWS,
            WsGemm::<T, O, TRANS_B, SPLIT>::COLS,
            group,
        );
        if SPLIT == 4 {
            ws::run_stream_k::<_, PRODUCER_REGS, CONSUMER_REGS>(&gemm, grid, k_tiles, dp_tiles);
        } else if cut {
            ws::run_stream_k::<_, PRODUCER_REGS, CONSUMER_REGS>(&gemm, grid, k_tiles, 0);
        } else {
            ws::run::<_, PRODUCER_REGS, CONSUMER_REGS>(&gemm, grid, k_tiles);
        }
    }
}
