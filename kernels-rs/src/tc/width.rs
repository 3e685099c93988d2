//! Tile widths of the warp-specialized `wgmma` kernels (sm_90a): for each `wgmma` N (64, 128,
//! 256) and input type, the accumulators one consumer thread holds for a 64-row slab and how they
//! are stored — through the [`Epilogue`], as f32 partial sums for split-K / stream-K, or into a
//! TMA-store staging tile. The GEMM (`hgemm::v03_wgmma_ws`) and the convolution
//! (`conv::v05_wgmma`) are generic over [`Width`]; the records (`CTAS`, `PP`) say how a kernel
//! built on a width is launched.

use crate::gpu::{hopper, wgmma};
use crate::tc::{Epilogue, TcOut};

/// A tile width and input type: the `wgmma` shape, its accumulators and their store.
pub trait Width {
    /// Output channels per tile.
    const BN: u32;
    /// Blocks per SM the launch bounds and the ring are sized for (1 or 2).
    const CTAS: u32;
    /// Ping-pong consumers (`tc::ws::run_pingpong`): each warpgroup computes whole tiles.
    const PP: bool;
    /// One consumer thread's accumulators (`BN / 2` floats).
    type Acc: Copy;
    /// Zeros.
    const ZERO: Self::Acc;
    /// `acc (+)= A·B` for 64 × BN × 16; B K-major (`TRANS_B` = 0) or N-major (1).
    unsafe fn mma<const TRANS_B: u32>(acc: &mut Self::Acc, da: u64, db: u64, scale_d: u32);
    /// `wgmma.wait_group PENDING` over the accumulators.
    fn wait<const PENDING: u32>(acc: &mut Self::Acc);
    /// Ping-pong consumers' k16 step on a 128-row tile: the two 64-row slabs (A at `da[0]`,
    /// `da[1]`) against the same B.
    #[inline(always)]
    unsafe fn mma_pair<const TRANS_B: u32>(
        acc: &mut [Self::Acc; 2],
        da: [u64; 2],
        db: u64,
        scale_d: u32,
    ) {
        Self::mma::<TRANS_B>(&mut acc[0], da[0], db, scale_d);
        Self::mma::<TRANS_B>(&mut acc[1], da[1], db, scale_d);
    }
    /// [`Width::wait`] over both slabs of [`Width::mma_pair`].
    #[inline(always)]
    fn wait_pair<const PENDING: u32>(acc: &mut [Self::Acc; 2]) {
        Self::wait::<PENDING>(&mut acc[0]);
        Self::wait::<PENDING>(&mut acc[1]);
    }
    /// Stores the accumulators of the rows at `row` (and `row + 8`) from column `col0`.
    unsafe fn store<O: TcOut>(acc: &Self::Acc, epi: &Epilogue<O>, row: u32, col0: u32);
    /// Writes the accumulators, after ReLU (`relu` non-zero) and rounding to `O`, into this
    /// warpgroup's staging tile at `staging` (64 rows, boxes of 64 columns, 128-byte
    /// swizzle): rows `rr` and `rr + 8`, column `2q + 8j` — [`Width::stage_box`] per box.
    #[inline(always)]
    unsafe fn stage<O: TcOut<Store = u16>>(
        acc: &Self::Acc,
        staging: u32,
        relu: u32,
        rr: u32,
        q: u32,
    ) {
        Self::stage_box::<O, 0, false>(acc, staging, 1.0, relu, rr, q);
        Self::stage_box::<O, 1, false>(acc, staging + 8192, 1.0, relu, rr, q);
        Self::stage_box::<O, 2, false>(acc, staging + 2 * 8192, 1.0, relu, rr, q);
        Self::stage_box::<O, 3, false>(acc, staging + 3 * 8192, 1.0, relu, rr, q);
    }
    /// Writes the accumulators' columns `64·BX .. 64·BX + 64` (a box of 64 × 64), scaled by
    /// `alpha`, after ReLU (`relu` non-zero; NaN kept) and rounded to the 16-bit `O`, into the
    /// 8 KiB box at `at` (64 rows of 128 bytes, 128-byte swizzle, 1024-aligned): rows `rr` and
    /// `rr + 8`, column `2q + 8j`. Nothing for a box past `BN`. `PLAIN`: the caller knows
    /// α = 1 and no ReLU (the values are only rounded).
    unsafe fn stage_box<O: TcOut, const BX: usize, const PLAIN: bool>(
        acc: &Self::Acc,
        at: u32,
        alpha: f32,
        relu: u32,
        rr: u32,
        q: u32,
    );
    /// Stores the accumulators as f32 partial sums at `slot` (a consumer's slot: element
    /// `i` of thread `t` of the warpgroup at `4·(128·(i/4) + t) + i % 4`, 16-byte stores
    /// the warp writes contiguously), bypassing L1.
    unsafe fn store_partial(acc: &Self::Acc, slot: *mut f32, t: u32);
    /// Adds the partial sums [`Width::store_partial`] left at `slot` (read from L2).
    unsafe fn add_partial(acc: &mut Self::Acc, slot: *const f32, t: u32);
    /// Starts the accumulators at the bias of their columns (`col0 + 8j + {0, 1}`; 0 past
    /// `n` or when `bias` is null), so the epilogue adds nothing.
    unsafe fn init(acc: &mut Self::Acc, bias: *const f32, col0: u32, n: u32);
}

macro_rules! width {
    ($t:ident, $bn:literal, $ctas:literal, $pp:literal, $regs:literal, $mma:ident, $wait:ident, $n8:tt, $n32:tt) => {
        pub struct $t;
        impl Width for $t {
            const BN: u32 = $bn;
            const CTAS: u32 = $ctas;
            const PP: bool = $pp;
            type Acc = [f32; $regs];
            const ZERO: [f32; $regs] = [0f32; $regs];
            #[inline(always)]
            unsafe fn mma<const TRANS_B: u32>(acc: &mut [f32; $regs], da: u64, db: u64, sd: u32) {
                wgmma::$mma::<TRANS_B>(acc, da, db, sd)
            }
            #[inline(always)]
            fn wait<const PENDING: u32>(acc: &mut [f32; $regs]) {
                wgmma::$wait::<PENDING>(acc)
            }
            #[inline(always)]
            unsafe fn store<O: TcOut>(acc: &[f32; $regs], epi: &Epilogue<O>, row: u32, col0: u32) {
                // Fully unrolled: an indexed accumulator would move the array to local memory.
                if epi.chunks_aligned() {
                    // 16-byte chunks: quads of n8 fragments, rows `row` and `row + 8`.
                    crate::store_acc_x4!(epi, acc, row, col0, $n32);
                    return;
                }
                crate::unroll!($n8, j, {
                    let d = [acc[4 * j], acc[4 * j + 1], acc[4 * j + 2], acc[4 * j + 3]];
                    epi.store_frag(row, col0 + 8 * j as u32, d);
                });
            }
            #[inline(always)]
            unsafe fn stage_box<O: TcOut, const BX: usize, const PLAIN: bool>(
                acc: &[f32; $regs],
                at: u32,
                alpha: f32,
                relu: u32,
                rr: u32,
                q: u32,
            ) {
                use crate::gpu::Elem;
                let act = |v: f32| {
                    if PLAIN {
                        return v;
                    }
                    // The direct stores' NaN-keeping max: the same bits, −0 included
                    // (α < 0 makes −0 of +0; `max.NaN` returns +0 there).
                    let v = alpha * v;
                    if relu != 0 {
                        crate::gpu::max_nan(v, 0.0)
                    } else {
                        v
                    }
                };
                // One 16-byte chunk per n8 fragment: chunk `c` of row `r` sits at chunk
                // `c ^ (r % 8)` (TMA's 128-byte swizzle). A quad's four lanes fill one chunk,
                // the warp's eight rows eight distinct chunks: no bank conflict.
                let addr = |r: u32, c: u32| at + r * 128 + ((c ^ (r % 8)) * 16) + 4 * q;
                crate::unroll!(8, c, {
                    let j = 8 * BX + c;
                    if j < $n8 {
                        let lo = O::pack2(act(acc[4 * j]), act(acc[4 * j + 1]));
                        let hi = O::pack2(act(acc[4 * j + 2]), act(acc[4 * j + 3]));
                        u32::st_shared(addr(rr, c as u32), lo);
                        u32::st_shared(addr(rr + 8, c as u32), hi);
                    }
                });
            }
            #[inline(always)]
            unsafe fn store_partial(acc: &[f32; $regs], slot: *mut f32, t: u32) {
                crate::unroll!($n8, j, {
                    let v = [acc[4 * j], acc[4 * j + 1], acc[4 * j + 2], acc[4 * j + 3]];
                    hopper::st_global_cg_f32x4(slot.add(4 * (128 * j + t as usize)), v);
                });
            }
            #[inline(always)]
            unsafe fn add_partial(acc: &mut [f32; $regs], slot: *const f32, t: u32) {
                crate::unroll!($n8, j, {
                    let v = hopper::ld_global_cg_f32x4(slot.add(4 * (128 * j + t as usize)));
                    acc[4 * j] += v[0];
                    acc[4 * j + 1] += v[1];
                    acc[4 * j + 2] += v[2];
                    acc[4 * j + 3] += v[3];
                });
            }
            #[inline(always)]
            unsafe fn init(acc: &mut [f32; $regs], bias: *const f32, col0: u32, n: u32) {
                use crate::gpu::Elem;
                crate::unroll!($n8, j, {
                    let c = col0 + 8 * j as u32;
                    let b0 = if !bias.is_null() && c < n {
                        f32::ld_global_nc(bias.add(c as usize))
                    } else {
                        0.0
                    };
                    let b1 = if !bias.is_null() && c + 1 < n {
                        f32::ld_global_nc(bias.add(c as usize + 1))
                    } else {
                        0.0
                    };
                    acc[4 * j] = b0;
                    acc[4 * j + 1] = b1;
                    acc[4 * j + 2] = b0;
                    acc[4 * j + 3] = b1;
                });
            }
        }
    };
}
width!(
    N64F16,
    64,
    1,
    false,
    32,
    wgmma_m64n64k16_f16,
    wgmma_wait_32,
    8,
    2
);
width!(
    N64Bf16,
    64,
    1,
    false,
    32,
    wgmma_m64n64k16_bf16,
    wgmma_wait_32,
    8,
    2
);
width!(
    N128F16,
    128,
    1,
    false,
    64,
    wgmma_m64n128k16_f16,
    wgmma_wait_64,
    16,
    4
);
width!(
    N128Bf16,
    128,
    1,
    false,
    64,
    wgmma_m64n128k16_bf16,
    wgmma_wait_64,
    16,
    4
);
width!(
    N256F16,
    256,
    1,
    false,
    128,
    wgmma_m64n256k16_f16,
    wgmma_wait_128,
    32,
    8
);
width!(
    N256Bf16,
    256,
    1,
    false,
    128,
    wgmma_m64n256k16_bf16,
    wgmma_wait_128,
    32,
    8
);
width!(
    N64X2F16,
    64,
    2,
    false,
    32,
    wgmma_m64n64k16_f16,
    wgmma_wait_32,
    8,
    2
);
width!(
    N64X2Bf16,
    64,
    2,
    false,
    32,
    wgmma_m64n64k16_bf16,
    wgmma_wait_32,
    8,
    2
);
width!(
    N64PpF16,
    64,
    1,
    true,
    32,
    wgmma_m64n64k16_f16,
    wgmma_wait_32,
    8,
    2
);
width!(
    N64PpBf16,
    64,
    1,
    true,
    32,
    wgmma_m64n64k16_bf16,
    wgmma_wait_32,
    8,
    2
);
width!(
    N128PpF16,
    128,
    1,
    true,
    64,
    wgmma_m64n128k16_f16,
    wgmma_wait_64,
    16,
    4
);
width!(
    N128PpBf16,
    128,
    1,
    true,
    64,
    wgmma_m64n128k16_bf16,
    wgmma_wait_64,
    16,
    4
);
