//! FlashAttention-3-class forward for Hopper (sm_90a): TMA + `wgmma`, warp-specialized,
//! persistent.
//!
//! - **Warp specialization** on the shared driver `tc::ws` (the one the tensor-core GEMM runs
//!   on): warpgroup 0 is the producer — one thread issues every TMA load and the warpgroup
//!   gives its registers away (`setmaxnreg`, 24 left) — and warpgroups 1 and 2 are consumers,
//!   64 query rows each (240 registers). The Q block (128 rows) is the driver's per-tile
//!   operand (a depth-1 TMA ring); K and V tiles of `BN` = 128 keys stream through the k-tile
//!   ring (3 stages at d = 128, 4 at d = 64), 128-byte swizzled, one `full`/`empty` mbarrier
//!   pair per stage.
//! - **Both products on `wgmma`**: S = Q Kᵀ with both operands in shared memory
//!   (`m64n128k16`, K-major), O += P V with P from registers (`m64n{d}k16`, A from registers,
//!   V N-major): the S accumulators become P in place (f32 → packed f16/bf16; the `wgmma` D
//!   fragment of two adjacent key octets is the A fragment).
//! - **Softmax overlapped with the second product** (FlashAttention-3's intra-warpgroup
//!   pipelining): each k-tile issues S = Q K_jᵀ, then O += P_{j−1} V_{j−1}, waits only for S,
//!   runs the softmax of tile j while the P·V `wgmma` is still on the tensor cores, and only
//!   then waits for it and rescales O. That is exactly the driver's release protocol: consuming
//!   stage j retires the reads of stage j − 1 (V_{j−1}).
//! - **exp2 with the scale folded into one FMA**, the running sum kept per thread
//!   ([`super::softmax`]).
//! - **Persistent**, one block per SM, tiles `(query block, batch·head)`; causal launches walk
//!   the query blocks from the longest (the last rows) to the shortest, so the static
//!   round-robin hands every block about the same work, and skip key tiles above the diagonal.
//!   Non-causal launches walk head by head, so the blocks in flight share K and V in L2.
//! - **Tails**: TMA zero-fills rows past the sequence (the tensor maps are 4-D, `(d, seq,
//!   heads, batch)`, so a box never reads the next head), the last key tile is masked to
//!   −inf, and the epilogue stores only rows inside the sequence.

use crate::gpu::ring::TmaRing;

/// Query rows per tile (two consumer warpgroups of 64).
pub const BM: u32 = 128;
/// Keys per k-tile.
pub const BN: u32 = 128;
/// Threads: a producer warpgroup and two consumers.
pub const THREADS: u32 = 384;
/// Registers per producer thread after `setmaxnreg.dec`.
pub const PRODUCER_REGS: u32 = 24;
/// Registers per consumer thread after `setmaxnreg.inc`: (168 · 384 − 24 · 128) / 256.
pub const CONSUMER_REGS: u32 = 240;
/// Named barriers of the consumers' ping-pong: consumer `c` waits at `PINGPONG + c` before it
/// issues its `wgmma`s and then lets the other one go.
pub const PINGPONG: u32 = 1;
/// Whether the consumers ping-pong (see [`PINGPONG`]). Off: on the H200 it changed nothing
/// measurable (4 shapes, A/B twice in one device call: 620–629 vs 628–629 TFLOP/s at d = 128,
/// N = 4096; 437 vs 440 at d = 64), where FlashAttention-3 reports +9–12 % on the H100 — the
/// softmax already overlaps the other warpgroup's GEMMs without forcing the order. Kept as a
/// switch for the study.
pub const PING_PONG: bool = false;
/// The TMA box of Q, K and V: 64 head-dim elements (one 128-byte swizzle row) × 128 rows.
pub const BOX: (u32, u32) = (64, 128);

/// K/V ring depth for head dimension `d`. The V of stage j is read until stage j + 1 has been
/// consumed (P·V runs one tile behind), so a ring of depth s lets the producer run s − 2 tiles
/// ahead: 3 stages of 64 KiB at d = 128 (what fits beside Q in 227 KiB), 4 of 32 KiB at d = 64.
pub const fn stages(d: u32) -> u32 {
    if d <= 64 {
        4
    } else {
        3
    }
}

/// Bytes of one k-tile stage (K then V).
pub const fn stage_bytes(d: u32) -> u32 {
    2 * BN * d * 2
}

/// Bytes of the Q block.
pub const fn q_bytes(d: u32) -> u32 {
    BM * d * 2
}

/// Dynamic shared bytes for head dimension `d`: the K/V ring and the Q block's ring.
pub const fn shared_bytes(d: u32) -> usize {
    TmaRing::bytes(stage_bytes(d), stages(d)) + TmaRing::bytes(q_bytes(d), 1)
}

/// Registry record, head dimension 64.
pub const INFO_D64: crate::registry::KernelInfo = crate::registry::KernelInfo {
    family: super::FAMILY,
    name: "wgmma_d64",
    needs: crate::registry::Needs::HOPPER_TMA,
    bounds: Some((THREADS, 1)),
    block: (THREADS, 1, 1),
    launch: crate::registry::Launch::Persistent { tile: (BM, 1) },
    shared_bytes_f16: shared_bytes(64),
    symbols: SYMBOLS_D64,
    about: "FlashAttention-3-class: TMA + wgmma, warp-specialized, softmax overlapped with P·V, persistent (sm_90a), d = 64",
    ..crate::registry::KernelInfo::BASE
};

/// Registry record, head dimension 128.
pub const INFO_D128: crate::registry::KernelInfo = crate::registry::KernelInfo {
    name: "wgmma_d128",
    shared_bytes_f16: shared_bytes(128),
    symbols: SYMBOLS_D128,
    about: "FlashAttention-3-class: TMA + wgmma, warp-specialized, softmax overlapped with P·V, persistent (sm_90a), d = 128",
    ..INFO_D64
};

crate::entry_points! {
    pub const SYMBOLS_D64;
    sm90a fn device::fa3(maps: *const u8, o: *mut u16, lse: *mut f32, nq: u32, nkv: u32, batch: u32, heads_q: u32, group: u32, o_sb: u64, o_ss: u64, o_sh: u64, scale_log2: f32, causal: u32, tile_group: u32, splits: u32, part_o: *mut f32, part_lse: *mut f32);
    attention_wgmma_d64_f16 => (F16, F16, Any) [W = device::F16, O = crate::tc::OutF16; D: u32 = 64, ON: usize = 32];
    attention_wgmma_d64_bf16 => (Bf16, Bf16, Any) [W = device::Bf16, O = crate::tc::OutBf16; D: u32 = 64, ON: usize = 32];
}

crate::entry_points! {
    pub const SYMBOLS_D128;
    sm90a fn device::fa3(maps: *const u8, o: *mut u16, lse: *mut f32, nq: u32, nkv: u32, batch: u32, heads_q: u32, group: u32, o_sb: u64, o_ss: u64, o_sh: u64, scale_log2: f32, causal: u32, tile_group: u32, splits: u32, part_o: *mut f32, part_lse: *mut f32);
    attention_wgmma_d128_f16 => (F16, F16, Any) [W = device::F16, O = crate::tc::OutF16; D: u32 = 128, ON: usize = 64];
    attention_wgmma_d128_bf16 => (Bf16, Bf16, Any) [W = device::Bf16, O = crate::tc::OutBf16; D: u32 = 128, ON: usize = 64];
}

#[cfg(all(target_arch = "nvptx64", rustile_sm90a))]
mod device {
    use super::*;
    use crate::attention::softmax::Softmax;
    use crate::attention::{head_offset, Mask};
    use crate::gpu::sched::TileGrid;
    use crate::gpu::{self, hopper, wgmma, Elem};
    use crate::tc::ws::{self, WsKernel};
    use crate::tc::{pack2, Epilogue, TcOut};

    /// The input type: its `mma` kind and S = Q Kᵀ's `wgmma`.
    pub trait Wg {
        /// For [`pack2`].
        const KIND: gpu::MmaKind;
        /// `s (+)= Q·Kᵀ` for 64 × 128 × 16, both from shared memory (K-major).
        unsafe fn qk(s: &mut [f32; 64], da: u64, db: u64, scale_d: u32);
    }

    /// O += P·V for an output of `ON` accumulators per thread (`d / 2`).
    pub trait Pv<const ON: usize> {
        /// One 64 × d × 16 step, P from registers, V N-major.
        unsafe fn pv(o: &mut [f32; ON], a: [u32; 4], db: u64);
        /// Keeps `o` in place up to here (after a `wgmma.wait_group`).
        fn fence(o: &mut [f32; ON]);
    }

    pub struct F16;
    pub struct Bf16;

    macro_rules! input {
        ($t:ident, $kind:ident, $ss:ident, $rs64:ident, $rs128:ident) => {
            impl Wg for $t {
                const KIND: gpu::MmaKind = gpu::MmaKind::$kind;
                #[inline(always)]
                unsafe fn qk(s: &mut [f32; 64], da: u64, db: u64, sd: u32) {
                    wgmma::$ss::<0>(s, da, db, sd)
                }
            }
            impl Pv<32> for $t {
                #[inline(always)]
                unsafe fn pv(o: &mut [f32; 32], a: [u32; 4], db: u64) {
                    wgmma::$rs64::<1>(o, a, db, 1)
                }
                #[inline(always)]
                fn fence(o: &mut [f32; 32]) {
                    wgmma::fence_operand_f32_32(o)
                }
            }
            impl Pv<64> for $t {
                #[inline(always)]
                unsafe fn pv(o: &mut [f32; 64], a: [u32; 4], db: u64) {
                    wgmma::$rs128::<1>(o, a, db, 1)
                }
                #[inline(always)]
                fn fence(o: &mut [f32; 64]) {
                    wgmma::fence_operand_f32_64(o)
                }
            }
        };
    }
    input!(F16, F16, wgmma_m64n128k16_f16, wgmma_m64n64k16_rs_f16, wgmma_m64n128k16_rs_f16);
    input!(Bf16, Bf16, wgmma_m64n128k16_bf16, wgmma_m64n64k16_rs_bf16, wgmma_m64n128k16_rs_bf16);

    /// A consumer thread's state: S (then P in f32), O, P packed, the softmax rows, and where
    /// this consumer's Q rows and the previous stage's V are.
    #[derive(Clone, Copy)]
    pub struct Acc<const ON: usize> {
        s: [f32; 64],
        o: [f32; ON],
        p: [u32; 32],
        sm: Softmax,
        q: u32,
        v_prev: u32,
        /// The consumer's first row, and this thread's.
        rows: u32,
        row: u32,
        /// Tiles begun by this consumer.
        tiles: u32,
        /// The first key tile of the current tile's split.
        kt0: u32,
    }

    /// Attention as hooks on the warp-specialized driver.
    struct Fa3<W, O: TcOut, const D: u32, const ON: usize> {
        maps: *const u8,
        o: *mut u16,
        lse: *mut f32,
        mask: Mask,
        heads_q: u32,
        group: u32,
        o_strides: [u64; 3],
        scale_log2: f32,
        tiles_m: u32,
        /// Key splits per query block (1: none); with more, each split writes its normalized
        /// partial O and LSE (f32) to `part_o` / `part_lse` for the combine kernel.
        splits: u32,
        part_o: *mut f32,
        part_lse: *mut f32,
        /// `batch · heads_q`.
        bh_total: u32,
        _t: core::marker::PhantomData<(W, O)>,
    }

    impl<W, O: TcOut, const D: u32, const ON: usize> Fa3<W, O, D, ON> {
        /// First query row of tile `(r, bh)`.
        #[inline(always)]
        fn q0(&self, (r, _): (u32, u32)) -> u32 {
            let qb = if self.mask.causal {
                self.tiles_m - 1 - r
            } else {
                r
            };
            qb * BM
        }

        /// `(batch, head)` of tile `(r, bh·splits + split)`.
        #[inline(always)]
        fn bh(&self, (_, c): (u32, u32)) -> (u32, u32) {
            let bh = c / self.splits;
            (bh / self.heads_q, bh % self.heads_q)
        }

        /// The key tiles of tile `tile`: `(first, count)` — its split's share of the query
        /// block's key tiles (all of them without splits).
        #[inline(always)]
        fn k_range(&self, tile: (u32, u32)) -> (u32, u32) {
            let total = self.mask.kv_end(self.q0(tile) + BM).div_ceil(BN);
            if self.splits == 1 {
                return (0, total);
            }
            let per = total.div_ceil(self.splits);
            let first = (tile.1 % self.splits) * per;
            (first, if first >= total { 0 } else { (total - first).min(per) })
        }

        /// This thread's first row (of two: `+ 8`) in tile `tile` as consumer `c`.
        #[inline(always)]
        fn row(&self, tile: (u32, u32), c: u32) -> u32 {
            let tid = gpu::thread_idx_x();
            self.q0(tile) + 64 * c + 16 * ((tid / 32) % 4) + (tid % 32) / 4
        }

        /// Writes O (`acc` × `inv` per row) and the log-sum-exps of this thread's rows: to O and
        /// L, or — for a key split — the split's f32 partials at
        /// `part_o[((split·B·H + b·H + h)·nq + row)·D + col]`, `part_lse[(split·B·H + …)·nq + row]`.
        #[inline(always)]
        unsafe fn store(&self, o: &[f32; ON], inv: [f32; 2], lse: [f32; 2], tile: (u32, u32), c: u32)
        where
            O: TcOut<Store = u16>,
        {
            let row = self.row(tile, c);
            if self.splits > 1 {
                let bh = (tile.1 / self.splits) as u64;
                let slab = ((tile.1 % self.splits) as u64 * self.bh_total as u64 + bh) * self.mask.nq as u64;
                let epi = self.epilogue::<crate::tc::OutF32>(self.part_o.add((slab * D as u64) as usize), D);
                self.write_rows(epi, self.part_lse.add(slab as usize), o, inv, lse, row);
            } else {
                let (b, h) = self.bh(tile);
                let [sb, ss, sh] = self.o_strides;
                let epi = self.epilogue::<O>(self.o.add(head_offset(b, h, sb, sh)), ss as u32);
                let slab = (b as u64 * self.heads_q as u64 + h as u64) * self.mask.nq as u64;
                self.write_rows(epi, self.lse.add(slab as usize), o, inv, lse, row);
            }
        }

        /// The plain store of `nq × D` rows at `at`, pitch `ld`.
        #[inline(always)]
        fn epilogue<E: TcOut>(&self, at: *mut E::Store, ld: u32) -> Epilogue<E> {
            Epilogue {
                c: at,
                ldc: ld,
                m: self.mask.nq,
                n: D,
                alpha: 1.0,
                beta: 0.0,
                bias: core::ptr::null(),
                relu: 0,
            }
        }

        /// This thread's two rows (from `row`) through `epi`, and their log-sum-exps at
        /// `lse_rows[row]`.
        #[inline(always)]
        unsafe fn write_rows<E: TcOut>(
            &self,
            epi: Epilogue<E>,
            lse_rows: *mut f32,
            o: &[f32; ON],
            inv: [f32; 2],
            lse: [f32; 2],
            row: u32,
        ) {
            let tq = gpu::thread_idx_x() % 4;
            crate::unroll!(16, j, {
                if (j as u32) < D / 8 {
                    let d = [o[4 * j] * inv[0], o[4 * j + 1] * inv[0], o[4 * j + 2] * inv[1], o[4 * j + 3] * inv[1]];
                    epi.store_frag(row, 8 * j as u32 + 2 * tq, d);
                }
            });
            if tq == 0 {
                crate::unroll!(2, r, {
                    let rr = row + 8 * r as u32;
                    if rr < self.mask.nq {
                        f32::st_global(lse_rows.add(rr as usize), lse[r]);
                    }
                });
            }
        }
    }

    impl<W: Wg + Pv<ON>, O: TcOut<Store = u16>, const D: u32, const ON: usize> Fa3<W, O, D, ON> {
        /// Issues O += P·V for the P in registers and the V of the previous stage, and commits.
        #[inline(always)]
        unsafe fn pv(&self, acc: &mut Acc<ON>) {
            crate::unroll!(8, kk, {
                // 16 keys per step; V's 64-column boxes (of the head dimension) 16 KiB apart.
                let db = hopper::matrix_descriptor(acc.v_prev + kk as u32 * 16 * 128, BN * 128, 1024, hopper::Swizzle::B128);
                let a = [acc.p[4 * kk], acc.p[4 * kk + 1], acc.p[4 * kk + 2], acc.p[4 * kk + 3]];
                W::pv(&mut acc.o, a, db);
            });
            hopper::wgmma_commit();
        }

        /// −inf on the scores this thread's rows may not see, on the tiles that need it.
        #[inline(always)]
        fn mask_tile(&self, acc: &mut Acc<ON>, kv0: u32) {
            if self.mask.partial(acc.rows, kv0, BN) {
                let tq = gpu::thread_idx_x() % 4;
                crate::unroll!(64, e, {
                    let row = acc.row + 8 * ((e as u32 / 2) % 2);
                    let col = kv0 + 8 * (e as u32 / 4) + 2 * tq + e as u32 % 2;
                    if !self.mask.sees(row, col) {
                        acc.s[e] = f32::NEG_INFINITY;
                    }
                });
            }
        }
    }

    impl<W: Wg + Pv<ON>, O: TcOut<Store = u16>, const D: u32, const ON: usize> WsKernel
        for Fa3<W, O, D, ON>
    {
        const STAGES: u32 = stages(D);
        const STAGE_BYTES: u32 = stage_bytes(D);
        const CONSUMERS: u32 = 2;
        const TILE_BYTES: u32 = q_bytes(D);
        type Acc = Acc<ON>;
        const ACC: Acc<ON> = Acc {
            s: [0.0; 64],
            o: [0.0; ON],
            p: [0; 32],
            sm: Softmax::NEW,
            q: 0,
            v_prev: 0,
            rows: 0,
            row: 0,
            tiles: 0,
            kt0: 0,
        };

        #[inline(always)]
        fn k_tiles_of(&self, tile: (u32, u32), _: u32) -> u32 {
            self.k_range(tile).1
        }

        #[inline(always)]
        unsafe fn prefetch(&self) {
            hopper::prefetch_tensormap(self.maps);
            hopper::prefetch_tensormap(self.maps.add(128));
            hopper::prefetch_tensormap(self.maps.add(256));
        }

        #[inline(always)]
        unsafe fn produce_tile(&self, at: u32, full: u32, tile: (u32, u32)) {
            let (b, h) = self.bh(tile);
            let q0 = self.q0(tile) as i32;
            crate::unroll!(2, x, {
                if (x as u32) < D / 64 {
                    let dst = at + x as u32 * BM * 128;
                    hopper::tma_load_4d(dst, self.maps, [64 * x as i32, q0, h as i32, b as i32], full);
                }
            });
        }

        #[inline(always)]
        unsafe fn produce(&self, stage: u32, full: u32, tile: (u32, u32), kt: u32) {
            let (b, h) = self.bh(tile);
            let hk = (h / self.group) as i32;
            let kv0 = ((self.k_range(tile).0 + kt) * BN) as i32;
            crate::unroll!(2, x, {
                if (x as u32) < D / 64 {
                    let at = [64 * x as i32, kv0, hk, b as i32];
                    let off = x as u32 * BN * 128;
                    hopper::tma_load_4d(stage + off, self.maps.add(128), at, full);
                    hopper::tma_load_4d(stage + BN * D * 2 + off, self.maps.add(256), at, full);
                }
            });
        }

        #[inline(always)]
        unsafe fn begin(&self, acc: &mut Acc<ON>, at: u32, tile: (u32, u32), c: u32, _kb: u32) {
            acc.q = at + c * 64 * 128;
            acc.rows = self.q0(tile) + 64 * c;
            acc.kt0 = self.k_range(tile).0;
            acc.row = self.row(tile, c);
            acc.o = [0.0; ON];
            acc.sm = Softmax::NEW;
            if PING_PONG && acc.tiles == 0 && c == 1 {
                // Ping-pong: consumer 0 issues first.
                hopper::named_barrier_arrive(PINGPONG, 256);
            }
            acc.tiles += 1;
        }

        #[inline(always)]
        unsafe fn consumer_done(&self, acc: &mut Acc<ON>, c: u32) {
            // Consumer 1's last arrival on consumer 0's barrier (one more than consumer 0's
            // waits): wait it off, so no barrier is left half-arrived.
            if PING_PONG && acc.tiles > 0 && c == 0 {
                hopper::named_barrier_sync(PINGPONG, 256);
            }
        }

        #[inline(always)]
        unsafe fn consume(&self, acc: &mut Acc<ON>, stage: u32, c: u32, kt: u32) {
            hopper::wgmma_fence();
            if PING_PONG {
                hopper::named_barrier_sync(PINGPONG + c, 256);
            }
            // S = Q K_ktᵀ: D/16 steps over the head dimension, 64-column boxes 16 KiB apart.
            crate::unroll!(8, kk, {
                if (kk as u32) < D / 16 {
                    let (x, k4) = (kk as u32 / 4, kk as u32 % 4);
                    let da = hopper::matrix_descriptor(acc.q + x * BM * 128 + k4 * 32, 16, 1024, hopper::Swizzle::B128);
                    let db = hopper::matrix_descriptor(stage + x * BN * 128 + k4 * 32, 16, 1024, hopper::Swizzle::B128);
                    W::qk(&mut acc.s, da, db, (kk > 0) as u32);
                }
            });
            hopper::wgmma_commit();
            // O += P_{kt−1} V_{kt−1}, in flight during this tile's softmax.
            if kt > 0 {
                self.pv(acc);
            }
            // The other consumer's turn to issue: its GEMMs run while this one's softmax does.
            if PING_PONG {
                hopper::named_barrier_arrive(PINGPONG + 1 - c, 256);
            }
            if kt > 0 {
                wgmma::wgmma_wait_64::<1>(&mut acc.s);
            } else {
                wgmma::wgmma_wait_64::<0>(&mut acc.s);
            }
            self.mask_tile(acc, (acc.kt0 + kt) * BN);
            let alpha = acc.sm.update(&mut acc.s, self.scale_log2);
            // P·V of the previous tile done: stage kt − 1 is free, O and P may change.
            wgmma::wgmma_wait_64::<0>(&mut acc.s);
            W::fence(&mut acc.o);
            wgmma::fence_operand_u32_32(&mut acc.p);
            Softmax::rescale(&mut acc.o, alpha);
            crate::unroll!(8, kk, {
                acc.p[4 * kk] = pack2(W::KIND, acc.s[8 * kk], acc.s[8 * kk + 1]);
                acc.p[4 * kk + 1] = pack2(W::KIND, acc.s[8 * kk + 2], acc.s[8 * kk + 3]);
                acc.p[4 * kk + 2] = pack2(W::KIND, acc.s[8 * kk + 4], acc.s[8 * kk + 5]);
                acc.p[4 * kk + 3] = pack2(W::KIND, acc.s[8 * kk + 6], acc.s[8 * kk + 7]);
            });
            acc.v_prev = stage + BN * D * 2;
        }

        #[inline(always)]
        unsafe fn drain(&self, acc: &mut Acc<ON>) {
            hopper::wgmma_fence();
            let c = hopper::warpgroup_index() - 1;
            if PING_PONG {
                hopper::named_barrier_sync(PINGPONG + c, 256);
            }
            self.pv(acc);
            if PING_PONG {
                hopper::named_barrier_arrive(PINGPONG + 1 - c, 256);
            }
            wgmma::wgmma_wait_64::<0>(&mut acc.s);
            W::fence(&mut acc.o);
            wgmma::fence_operand_u32_32(&mut acc.p);
        }

        #[inline(always)]
        unsafe fn finish(&self, acc: &mut Acc<ON>, tile: (u32, u32), c: u32) {
            let (inv, lse) = acc.sm.finish();
            self.store(&acc.o, inv, lse, tile, c);
        }

        #[inline(always)]
        unsafe fn finish_empty(&self, tile: (u32, u32), c: u32) {
            self.store(&[0.0; ON], [0.0; 2], [f32::NEG_INFINITY; 2], tile, c);
        }
    }

    /// The kernel. `maps`: the tensor maps of Q (byte 0), K (128) and V (256), each 4-D `(d,
    /// seq, heads, batch)` with a [`BOX`] box and 128-byte swizzle; `tile_group`: query-block
    /// rows per band of the tile order (1: query-block-major, for causal; the number of query
    /// blocks: head by head); `splits` > 1: the keys of each query block are split that many
    /// ways (small grids), each split writing a normalized partial O and its LSE in f32 to
    /// `part_o` (`splits · batch · heads_q · nq · D`) and `part_lse` (`splits · batch · heads_q ·
    /// nq`) for [`super::combine`](crate::attention::combine) instead of O and L.
    ///
    /// # Safety
    /// The maps describe Q, K, V as the shape says; O and L hold the spans the shape and
    /// strides imply; the grid is at most the tile count; `scale_log2 > 0`.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub unsafe fn fa3<W: Wg + Pv<ON>, O: TcOut<Store = u16>, const D: u32, const ON: usize>(
        maps: *const u8,
        o: *mut u16,
        lse: *mut f32,
        nq: u32,
        nkv: u32,
        batch: u32,
        heads_q: u32,
        group: u32,
        o_sb: u64,
        o_ss: u64,
        o_sh: u64,
        scale_log2: f32,
        causal: u32,
        tile_group: u32,
        splits: u32,
        part_o: *mut f32,
        part_lse: *mut f32,
    ) {
        let mask = Mask {
            nq,
            nkv,
            causal: causal != 0,
        };
        let grid = TileGrid::new(nq, batch * heads_q * splits, BM, 1, tile_group);
        let fa = Fa3::<W, O, D, ON> {
            maps,
            o,
            lse,
            mask,
            heads_q,
            group,
            o_strides: [o_sb, o_ss, o_sh],
            scale_log2,
            tiles_m: grid.tiles_m,
            splits,
            part_o,
            part_lse,
            bh_total: batch * heads_q,
            _t: core::marker::PhantomData,
        };
        ws::run::<_, PRODUCER_REGS, CONSUMER_REGS>(&fa, grid, 0);
    }
}
