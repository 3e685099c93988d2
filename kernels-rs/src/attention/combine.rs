//! Split-KV combine, the second pass of [`super::v03_wgmma`] on small grids: when the query
//! blocks alone cannot fill the GPU (B·H = 1 at N = 4096 is 32 blocks for 132 SMs), the keys of
//! each block are split `splits` ways, each split writes its O normalized by its own sum and its
//! log-sum-exp `Lₛ` (f32), and this kernel merges them row by row:
//! `L = ln Σₛ e^{Lₛ}`, `O = Σₛ e^{Lₛ − L} Oₛ`. A split that saw no key has `Lₛ = −inf` and
//! weight 0; a row no split saw gets `O = 0`, `L = −inf`.
//!
//! One warp per row, lanes over column pairs: it reads `splits · d` floats per row and writes
//! the row once — a few microseconds beside the attention it completes.

use super::head_offset;
use crate::gpu::{self, Elem};
use crate::tc::TcOut;

/// Rows (warps) per block.
pub const ROWS: u32 = 4;

/// The weight of split `s` of a row: `e^{Lₛ − m}` (0 for a split that saw nothing).
#[inline(always)]
fn weight(l: f32, m: f32) -> f32 {
    if l == f32::NEG_INFINITY {
        0.0
    } else {
        gpu::ex2((l - m) * super::LOG2_E)
    }
}

/// Merges the splits of rows `0 .. nq` of head `(block_idx_z, block_idx_y)`: grid
/// `(⌈nq/ROWS⌉, heads_q, batch)`, block `32 · ROWS`. `part_o` holds `splits · bh_total · nq · d`
/// floats (`((s · bh_total + b · heads_q + h) · nq + row) · d + col`), `part_lse`
/// `splits · bh_total · nq`; `d ≤ 128` and even.
///
/// # Safety
/// The buffers hold those spans; O (with its strides, even, and a 4-byte-aligned base) and L
/// hold the spans the shape implies.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn combine<O: TcOut<Store = u16>>(
    part_o: *const f32,
    part_lse: *const f32,
    o: *mut u16,
    lse: *mut f32,
    nq: u32,
    heads_q: u32,
    bh_total: u32,
    splits: u32,
    d: u32,
    o_sb: u64,
    o_ss: u64,
    o_sh: u64,
) {
    let t = gpu::thread_idx_x();
    let row = gpu::block_idx_x() * ROWS + t / 32;
    let lane = t % 32;
    let (h, b) = (gpu::block_idx_y(), gpu::block_idx_z());
    // Warp-uniform: the whole warp leaves together.
    if row >= nq {
        return;
    }
    let bh = b * heads_q + h;
    let slab = |s: u32| (s as u64 * bh_total as u64 + bh as u64) * nq as u64 + row as u64;
    let mut m = f32::NEG_INFINITY;
    let mut s = 0;
    while s < splits {
        m = m.max(f32::ld_global_nc(part_lse.add(slab(s) as usize)));
        s += 1;
    }
    let mut sum = 0f32;
    s = 0;
    while s < splits {
        sum += weight(f32::ld_global_nc(part_lse.add(slab(s) as usize)), m);
        s += 1;
    }
    let inv = if sum > 0.0 { 1.0 / sum } else { 0.0 };
    // Columns 2·lane and 2·lane + 64 (d ≤ 128).
    let mut acc = [0f32; 4];
    s = 0;
    while s < splits {
        let w = weight(f32::ld_global_nc(part_lse.add(slab(s) as usize)), m) * inv;
        let src = part_o.add((slab(s) * d as u64) as usize);
        crate::unroll!(2, k, {
            let c = 2 * lane + 64 * k as u32;
            if c < d {
                acc[2 * k] = gpu::fma(w, f32::ld_global_nc(src.add(c as usize)), acc[2 * k]);
                acc[2 * k + 1] =
                    gpu::fma(w, f32::ld_global_nc(src.add(c as usize + 1)), acc[2 * k + 1]);
            }
        });
        s += 1;
    }
    let orow = o.add(head_offset(b, h, o_sb, o_sh) + (row as u64 * o_ss) as usize);
    crate::unroll!(2, k, {
        let c = 2 * lane + 64 * k as u32;
        if c < d {
            O::store2(orow.add(c as usize), O::pack(acc[2 * k]), O::pack(acc[2 * k + 1]));
        }
    });
    if lane == 0 {
        let l = if sum > 0.0 {
            m + gpu::lg2(sum) * core::f32::consts::LN_2
        } else {
            f32::NEG_INFINITY
        };
        f32::st_global(lse.add((bh as u64 * nq as u64 + row as u64) as usize), l);
    }
}

/// Registry record (a helper of the `wgmma` step).
pub const INFO: crate::registry::KernelInfo = crate::registry::KernelInfo {
    family: super::FAMILY,
    name: "combine",
    role: crate::registry::Role::Helper,
    block: (32 * ROWS, 1, 1),
    launch: crate::registry::Launch::Linear,
    symbols: SYMBOLS,
    about: "split-KV combine: merges per-split normalized O and LSE (f32) into O and L",
    ..crate::registry::KernelInfo::BASE
};

crate::entry_points! {
    pub const SYMBOLS;
    fn combine(part_o: *const f32, part_lse: *const f32, o: *mut u16, lse: *mut f32, nq: u32, heads_q: u32, bh_total: u32, splits: u32, d: u32, o_sb: u64, o_ss: u64, o_sh: u64);
    attention_combine_f16 => (F16, F16, Any) [O = crate::tc::OutF16];
    attention_combine_bf16 => (Bf16, Bf16, Any) [O = crate::tc::OutBf16];
}
