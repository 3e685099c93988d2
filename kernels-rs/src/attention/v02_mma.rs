//! FlashAttention-2 on `mma.sync.m16n8k16` (sm_80+): one pass, nothing but Q, K, V and O
//! through DRAM.
//!
//! - **Block** 128 query rows of one `(batch, head)`, eight warps of 16 rows. Q is loaded once
//!   (`cp.async`), then each warp keeps its Q fragments in registers (`D/16` × 4).
//! - **K/V ring**: `BN` = 64 keys per tile, K and V of tile `j + 1` loading (`cp.async`, one
//!   group per tile) while tile `j` is computed; both are XOR-swizzled [`Tile`]s, so every
//!   `ldmatrix` phase hits eight distinct bank groups. K is read as `Bᵀ` (`ldmatrix`), V as
//!   row-major B (`ldmatrix.trans`) — the two layouts of the tensor-core GEMM.
//! - **Softmax in registers** ([`Softmax`]): the S accumulators of a warp's 16 rows are
//!   exponentiated in place; the m16n8 C fragments of two adjacent key tiles are exactly the
//!   m16n8k16 A fragment, so P goes to the second product as packed f16/bf16 registers
//!   without touching shared memory.
//! - **Masking** only on the tiles that need it ([`Mask::partial`]): the last key tile, and
//!   for causal the diagonal ones; causal blocks skip the tiles above the diagonal and are
//!   launched heaviest first.
//! - **Bound**: per warp and key tile, `(D/16)·(BN/8)` `mma`s for S and as many for O, each
//!   fed one 256-byte B fragment from shared memory (A is in registers): 16 flop per byte of
//!   shared traffic, so the shared port (128 B/clock) caps it near ~0.7 of `mma.sync` peak
//!   (~650 TFLOP/s on the H200), before the softmax's `ex2` and shuffles.

use super::softmax::Softmax;
use super::{head_offset, Mask};
use crate::gpu::{self, Elem, Swizzled, Tile};
use crate::tc::{pack2, TcIn, TcOut};

/// Query rows per block.
pub const BM: u32 = 128;
/// Keys per tile.
pub const BN: u32 = 64;
/// Warps (16 query rows each).
pub const WARPS: u32 = BM / 16;
/// Threads per block.
pub const THREADS: u32 = 32 * WARPS;
/// K/V ring depth.
pub const STAGES: u32 = 2;

/// Dynamic shared bytes for head dimension `d`: Q, then `STAGES` × (K, V).
pub const fn shared_bytes(d: u32) -> usize {
    (BM * d * 2 + STAGES * 2 * BN * d * 2) as usize
}

/// Loads rows `row0 ..` (`ROWS` of them, `D/8` 16-byte chunks each) of a `(seq, D)` slice with
/// row pitch `ld` into `tile`, zeros for rows at or past `limit`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
unsafe fn load_rows<const ROWS: u32, const D: u32>(
    tile: Tile<Swizzled>,
    src: *const u16,
    ld: u64,
    row0: u32,
    limit: u32,
) {
    let dc = D / 8;
    let t = gpu::thread_idx_x();
    crate::unroll!(8, i, {
        if (i as u32) < ROWS * dc / THREADS {
            let id = t + THREADS * i as u32;
            let (row, ch) = (id / dc, id % dc);
            let r = row0 + row;
            if r < limit {
                let p = src.add((r as u64 * ld) as usize + 8 * ch as usize);
                tile.cp_async_16(row, ch, p as *const gpu::Vec16);
            } else {
                tile.store_chunk(row, ch, [0; 4]);
            }
        }
    });
}

/// Two `mma.m16n8k16`s sharing the A fragment `a`: `acc[o..o + 4]` += A·(`x[0]`, `x[1]`) and
/// `acc[o + 4..o + 8]` += A·(`x[2]`, `x[3]`) — the two n8 tiles one `ldmatrix.x4` of B gives.
/// `o` is a constant after unrolling, so `acc` stays in registers.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
fn mma_pair<const N: usize>(kind: gpu::MmaKind, a: [u32; 4], x: [u32; 4], acc: &mut [f32; N], o: usize) {
    crate::unroll!(2, h, {
        let at = o + 4 * h;
        let d = gpu::mma_m16n8k16(
            kind,
            a,
            [x[2 * h], x[2 * h + 1]],
            [acc[at], acc[at + 1], acc[at + 2], acc[at + 3]],
        );
        acc[at..at + 4].copy_from_slice(&d);
    });
}

/// The kernel body for head dimension `D` (64 or 128). Grid `(⌈nq/BM⌉, heads_q, batch)`,
/// [`THREADS`] threads, [`shared_bytes`]`(D)` of shared memory.
///
/// # Safety
/// The buffers hold the spans the shape and strides imply; Q, K, V base addresses are 16-byte
/// aligned and their strides multiples of 8; `scale_log2 > 0` (the host checks all of it).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub unsafe fn fa2<I: TcIn, O: TcOut<Store = u16>, const D: u32>(
    q: *const u16,
    k: *const u16,
    v: *const u16,
    o: *mut u16,
    lse: *mut f32,
    nq: u32,
    nkv: u32,
    heads_q: u32,
    group: u32,
    q_sb: u64,
    q_ss: u64,
    q_sh: u64,
    k_sb: u64,
    k_ss: u64,
    k_sh: u64,
    v_sb: u64,
    v_ss: u64,
    v_sh: u64,
    o_sb: u64,
    o_ss: u64,
    o_sh: u64,
    scale_log2: f32,
    causal: u32,
) {
    let mask = Mask {
        nq,
        nkv,
        causal: causal != 0,
    };
    // Causal: the blocks with the most key tiles (the last query rows) go first.
    let qb = if mask.causal {
        gpu::grid_dim_x() - 1 - gpu::block_idx_x()
    } else {
        gpu::block_idx_x()
    };
    let (h, b) = (gpu::block_idx_y(), gpu::block_idx_z());
    let q0 = qb * BM;
    let qp = q.add(head_offset(b, h, q_sb, q_sh));
    let kp = k.add(head_offset(b, h / group, k_sb, k_sh));
    let vp = v.add(head_offset(b, h / group, v_sb, v_sh));

    let t = gpu::thread_idx_x();
    let (warp, lane) = (t / 32, t % 32);
    let (g, tq) = (lane / 4, lane % 4);
    let (qd, r8) = (lane / 8, lane % 8);

    let base = gpu::dynamic_shared_base();
    let qt = Tile::at(base, Swizzled::new(BM, D / 8));
    let ring = base + BM * D * 2;
    let kv_bytes = BN * D * 2;
    let kt_at = |slot: u32| Tile::at(ring + slot * 2 * kv_bytes, Swizzled::new(BN, D / 8));
    let vt_at = |slot: u32| Tile::at(ring + slot * 2 * kv_bytes + kv_bytes, Swizzled::new(BN, D / 8));

    let kv_end = mask.kv_end(q0 + BM);
    let n_tiles = kv_end.div_ceil(BN);

    load_rows::<BM, D>(qt, qp, q_ss, q0, nq);
    if n_tiles > 0 {
        load_rows::<BN, D>(kt_at(0), kp, k_ss, 0, nkv);
        load_rows::<BN, D>(vt_at(0), vp, v_ss, 0, nkv);
    }
    gpu::cp_async_commit();

    let mut acc = [0f32; 64]; // O: D/8 n8 tiles × 4
    let mut qf = [[0u32; 4]; 8]; // Q: D/16 k16 steps
    let mut sm = Softmax::NEW;
    let row0 = q0 + warp * 16; // this warp's first row
    let mut j = 0;
    while j < n_tiles {
        let slot = j % STAGES;
        gpu::cp_async_wait::<0>();
        gpu::sync_threads();
        if j == 0 {
            crate::unroll!(8, ks, {
                if (ks as u32) < D / 16 {
                    qf[ks] = qt.ldmatrix::<4, false>(warp * 16 + lane % 16, 2 * ks as u32 + lane / 16);
                }
            });
        }
        // The other slot was last read in iteration j − 1, before the barrier above.
        if j + 1 < n_tiles {
            let next = (j + 1) % STAGES;
            load_rows::<BN, D>(kt_at(next), kp, k_ss, (j + 1) * BN, nkv);
            load_rows::<BN, D>(vt_at(next), vp, v_ss, (j + 1) * BN, nkv);
        }
        gpu::cp_async_commit();
        let (kt, vt) = (kt_at(slot), vt_at(slot));

        // S = Q Kᵀ for this warp's 16 rows × BN keys.
        let mut s = [0f32; 32];
        crate::unroll!(8, ks, {
            if (ks as u32) < D / 16 {
                crate::unroll!(4, jp, {
                    let x = kt.ldmatrix::<4, false>(16 * jp as u32 + 8 * (qd / 2) + r8, 2 * ks as u32 + qd % 2);
                    mma_pair(I::KIND, qf[ks], x, &mut s, 8 * jp);
                });
            }
        });
        let col0 = j * BN;
        if mask.partial(row0, col0, BN) {
            crate::unroll!(32, e, {
                let row = row0 + g + 8 * ((e as u32 / 2) % 2);
                let col = col0 + 8 * (e as u32 / 4) + 2 * tq + e as u32 % 2;
                if !mask.sees(row, col) {
                    s[e] = f32::NEG_INFINITY;
                }
            });
        }
        let alpha = sm.update(&mut s, scale_log2);
        Softmax::rescale(&mut acc, alpha);

        // O += P V: P's k16 step kk is S's n8 tiles 2kk and 2kk + 1.
        crate::unroll!(4, kk, {
            let a = [
                pack2(I::KIND, s[8 * kk], s[8 * kk + 1]),
                pack2(I::KIND, s[8 * kk + 2], s[8 * kk + 3]),
                pack2(I::KIND, s[8 * kk + 4], s[8 * kk + 5]),
                pack2(I::KIND, s[8 * kk + 6], s[8 * kk + 7]),
            ];
            crate::unroll!(8, jp, {
                if (jp as u32) < D / 16 {
                    let x = vt.ldmatrix::<4, true>(16 * kk as u32 + 8 * (qd % 2) + r8, 2 * jp as u32 + qd / 2);
                    mma_pair(I::KIND, a, x, &mut acc, 8 * jp);
                }
            });
        });
        j += 1;
    }
    gpu::cp_async_wait::<0>();

    // O / l, and L.
    let (inv, l) = sm.finish();
    let op = o.add(head_offset(b, h, o_sb, o_sh));
    crate::unroll!(2, r, {
        let row = row0 + g + 8 * r as u32;
        if row < nq {
            let orow = op.add((row as u64 * o_ss) as usize);
            crate::unroll!(16, jn, {
                if (jn as u32) < D / 8 {
                    let col = 8 * jn + 2 * tq as usize;
                    let (x0, x1) = (acc[4 * jn + 2 * r] * inv[r], acc[4 * jn + 2 * r + 1] * inv[r]);
                    O::store2(orow.add(col), O::pack(x0), O::pack(x1));
                }
            });
            if tq == 0 {
                let at = (b as u64 * heads_q as u64 + h as u64) * nq as u64 + row as u64;
                f32::st_global(lse.add(at as usize), l[r]);
            }
        }
    });
}

/// Registry record, head dimension 64.
pub const INFO_D64: crate::registry::KernelInfo = crate::registry::KernelInfo {
    family: super::FAMILY,
    name: "mma_d64",
    needs: crate::registry::Needs::ALIGN16,
    bounds: Some((THREADS, 1)),
    block: (THREADS, 1, 1),
    launch: crate::registry::Launch::Tiles {
        tile: (BM, 64),
        halo_rows: 0,
    },
    shared_bytes_f16: shared_bytes(64),
    symbols: SYMBOLS_D64,
    about: "FlashAttention-2: mma.sync + ldmatrix, cp.async K/V ring, online softmax in registers (sm_80+), d = 64",
    ..crate::registry::KernelInfo::BASE
};

/// Registry record, head dimension 128.
pub const INFO_D128: crate::registry::KernelInfo = crate::registry::KernelInfo {
    name: "mma_d128",
    launch: crate::registry::Launch::Tiles {
        tile: (BM, 128),
        halo_rows: 0,
    },
    shared_bytes_f16: shared_bytes(128),
    symbols: SYMBOLS_D128,
    about: "FlashAttention-2: mma.sync + ldmatrix, cp.async K/V ring, online softmax in registers (sm_80+), d = 128",
    ..INFO_D64
};

crate::entry_points! {
    pub const SYMBOLS_D64;
    fn fa2(q: *const u16, k: *const u16, v: *const u16, o: *mut u16, lse: *mut f32, nq: u32, nkv: u32, heads_q: u32, group: u32, q_sb: u64, q_ss: u64, q_sh: u64, k_sb: u64, k_ss: u64, k_sh: u64, v_sb: u64, v_ss: u64, v_sh: u64, o_sb: u64, o_ss: u64, o_sh: u64, scale_log2: f32, causal: u32);
    attention_mma_d64_f16 => (F16, F16, Any) [I = crate::tc::F16, O = crate::tc::OutF16; D: u32 = 64];
    attention_mma_d64_bf16 => (Bf16, Bf16, Any) [I = crate::tc::Bf16, O = crate::tc::OutBf16; D: u32 = 64];
}

crate::entry_points! {
    pub const SYMBOLS_D128;
    fn fa2(q: *const u16, k: *const u16, v: *const u16, o: *mut u16, lse: *mut f32, nq: u32, nkv: u32, heads_q: u32, group: u32, q_sb: u64, q_ss: u64, q_sh: u64, k_sb: u64, k_ss: u64, k_sh: u64, v_sb: u64, v_ss: u64, v_sh: u64, o_sb: u64, o_ss: u64, o_sh: u64, scale_log2: f32, causal: u32);
    attention_mma_d128_f16 => (F16, F16, Any) [I = crate::tc::F16, O = crate::tc::OutF16; D: u32 = 128];
    attention_mma_d128_bf16 => (Bf16, Bf16, Any) [I = crate::tc::Bf16, O = crate::tc::OutBf16; D: u32 = 128];
}
