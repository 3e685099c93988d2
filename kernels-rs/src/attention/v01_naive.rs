//! Three passes through memory, the study baseline (and the ladder's floor):
//! 1. `scores`: `S = scale · Q Kᵀ` in f32, −inf where masked, one thread per element, to a
//!    scratch `(batch, heads_q, seq_q, seq_kv)`;
//! 2. `softmax`: one warp per row, in place: `P = exp(S − max) / Σ`, and the row's log-sum-exp;
//! 3. `pv`: `O = P · V`, one thread per output element.
//!
//! Memory traffic: S is written once and read twice, P written once and read by every output
//! column block — `≥ 16·B·H·Nq·Nkv` bytes against FlashAttention's `O(B·H·N·d)`. At N = 4096,
//! d = 128 that is 64× the bytes of Q, K, V and O together, which is the point of the next step.

use super::{head_offset, Mask};
use crate::gpu::{self, Elem};
use crate::tc::TcOut;

/// Threads per block of the `scores` and `pv` kernels: 16 × 16.
pub const TILE: u32 = 16;
/// Rows (warps) per block of the `softmax` kernel.
pub const SOFTMAX_ROWS: u32 = 4;

/// `S[b, h, i, j] = scale · Σ_c Q[b, i, h, c] K[b, j, h / group, c]`, −inf where the mask hides
/// `(i, j)`. Grid `(⌈nkv/16⌉, ⌈nq/16⌉, batch · heads_q)`, block (16, 16).
///
/// # Safety
/// The buffers hold the spans the shape and strides imply; `s` holds `batch · heads_q · nq ·
/// nkv` floats.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn scores<I: TcOut<Store = u16>>(
    q: *const u16,
    k: *const u16,
    s: *mut f32,
    nq: u32,
    nkv: u32,
    heads_q: u32,
    group: u32,
    d: u32,
    q_sb: u64,
    q_ss: u64,
    q_sh: u64,
    k_sb: u64,
    k_ss: u64,
    k_sh: u64,
    scale: f32,
    causal: u32,
) {
    let j = gpu::block_idx_x() * TILE + gpu::thread_idx_x();
    let i = gpu::block_idx_y() * TILE + gpu::thread_idx_y();
    let z = gpu::block_idx_z();
    let (b, h) = (z / heads_q, z % heads_q);
    if i >= nq || j >= nkv {
        return;
    }
    let mask = Mask {
        nq,
        nkv,
        causal: causal != 0,
    };
    let out = s.add(((z as u64 * nq as u64 + i as u64) * nkv as u64 + j as u64) as usize);
    if !mask.sees(i, j) {
        f32::st_global(out, f32::NEG_INFINITY);
        return;
    }
    let qr = q.add(head_offset(b, h, q_sb, q_sh) + (i as u64 * q_ss) as usize);
    let kr = k.add(head_offset(b, h / group, k_sb, k_sh) + (j as u64 * k_ss) as usize);
    let mut acc = 0f32;
    let mut c = 0;
    while c < d {
        let (x, y) = (
            I::unpack(u16::ld_global_nc(qr.add(c as usize))),
            I::unpack(u16::ld_global_nc(kr.add(c as usize))),
        );
        acc = gpu::fma(x, y, acc);
        c += 1;
    }
    f32::st_global(out, acc * scale);
}

/// Row softmax in place over `rows` rows of `nkv` floats, one warp per row, and the row's
/// log-sum-exp to `lse[row]` (a row of −inf gives zeros and −inf). Grid `⌈rows/4⌉`, block 128.
///
/// # Safety
/// `s` holds `rows · nkv` floats, `lse` `rows`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn softmax(s: *mut f32, lse: *mut f32, rows: u32, nkv: u32) {
    let t = gpu::thread_idx_x();
    let row = gpu::block_idx_x() * SOFTMAX_ROWS + t / 32;
    let lane = t % 32;
    // Warp-uniform: the whole warp leaves together.
    if row >= rows {
        return;
    }
    let r = s.add(row as usize * nkv as usize);
    let mut m = f32::NEG_INFINITY;
    let mut j = lane;
    while j < nkv {
        m = m.max(f32::ld_global_nc(r.add(j as usize)));
        j += 32;
    }
    let mut x = 16;
    while x > 0 {
        m = m.max(f32::from_bits(gpu::shfl_xor(m.to_bits(), x)));
        x /= 2;
    }
    let base = if m == f32::NEG_INFINITY { 0.0 } else { m };
    let mut l = 0f32;
    j = lane;
    while j < nkv {
        let v = f32::ld_global_nc(r.add(j as usize));
        l += gpu::ex2((v - base) * super::LOG2_E);
        j += 32;
    }
    x = 16;
    while x > 0 {
        l += f32::from_bits(gpu::shfl_xor(l.to_bits(), x));
        x /= 2;
    }
    let inv = if l > 0.0 { 1.0 / l } else { 0.0 };
    j = lane;
    while j < nkv {
        let v = f32::ld_global_nc(r.add(j as usize));
        f32::st_global(r.add(j as usize), gpu::ex2((v - base) * super::LOG2_E) * inv);
        j += 32;
    }
    if lane == 0 {
        let v = if l > 0.0 {
            m + gpu::lg2(l) * core::f32::consts::LN_2
        } else {
            f32::NEG_INFINITY
        };
        f32::st_global(lse.add(row as usize), v);
    }
}

/// `O[b, i, h, c] = Σ_j P[b, h, i, j] V[b, j, h / group, c]`. Grid `(⌈d/16⌉, ⌈nq/16⌉, batch ·
/// heads_q)`, block (16, 16).
///
/// # Safety
/// As for [`scores`]; `p` holds `batch · heads_q · nq · nkv` floats.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn pv<O: TcOut<Store = u16>>(
    p: *const f32,
    v: *const u16,
    o: *mut u16,
    nq: u32,
    nkv: u32,
    heads_q: u32,
    group: u32,
    d: u32,
    v_sb: u64,
    v_ss: u64,
    v_sh: u64,
    o_sb: u64,
    o_ss: u64,
    o_sh: u64,
) {
    let c = gpu::block_idx_x() * TILE + gpu::thread_idx_x();
    let i = gpu::block_idx_y() * TILE + gpu::thread_idx_y();
    let z = gpu::block_idx_z();
    let (b, h) = (z / heads_q, z % heads_q);
    if i >= nq || c >= d {
        return;
    }
    let pr = p.add(((z as u64 * nq as u64 + i as u64) * nkv as u64) as usize);
    let vc = v.add(head_offset(b, h / group, v_sb, v_sh) + c as usize);
    let mut acc = 0f32;
    let mut j = 0;
    while j < nkv {
        let x = f32::ld_global_nc(pr.add(j as usize));
        let y = O::unpack(u16::ld_global_nc(vc.add((j as u64 * v_ss) as usize)));
        acc = gpu::fma(x, y, acc);
        j += 1;
    }
    let at = o.add(head_offset(b, h, o_sb, o_sh) + (i as u64 * o_ss) as usize + c as usize);
    u16::st_global(at, O::pack(acc));
}

/// Registry record of the first pass (the step's name); the other two are helpers.
pub const INFO: crate::registry::KernelInfo = crate::registry::KernelInfo {
    family: super::FAMILY,
    name: "naive",
    block: (TILE, TILE, 1),
    launch: crate::registry::Launch::Tiles {
        tile: (TILE, TILE),
        halo_rows: 0,
    },
    symbols: SYMBOLS,
    about: "three passes through memory: S = scale·QKᵀ (f32), row softmax, O = P·V",
    ..crate::registry::KernelInfo::BASE
};

/// Registry record of the softmax pass.
pub const INFO_SOFTMAX: crate::registry::KernelInfo = crate::registry::KernelInfo {
    name: "naive_softmax",
    role: crate::registry::Role::Helper,
    block: (32 * SOFTMAX_ROWS, 1, 1),
    launch: crate::registry::Launch::Linear,
    symbols: SYMBOLS_SOFTMAX,
    about: "naive attention, pass 2: row softmax in place and the log-sum-exp",
    ..INFO
};

/// Registry record of the P·V pass.
pub const INFO_PV: crate::registry::KernelInfo = crate::registry::KernelInfo {
    name: "naive_pv",
    role: crate::registry::Role::Helper,
    symbols: SYMBOLS_PV,
    about: "naive attention, pass 3: O = P·V",
    ..INFO
};

crate::entry_points! {
    pub const SYMBOLS;
    fn scores(q: *const u16, k: *const u16, s: *mut f32, nq: u32, nkv: u32, heads_q: u32, group: u32, d: u32, q_sb: u64, q_ss: u64, q_sh: u64, k_sb: u64, k_ss: u64, k_sh: u64, scale: f32, causal: u32);
    attention_naive_scores_f16 => (F16, F32, Any) [I = crate::tc::OutF16];
    attention_naive_scores_bf16 => (Bf16, F32, Any) [I = crate::tc::OutBf16];
}

crate::entry_points! {
    pub const SYMBOLS_SOFTMAX;
    fn softmax(s: *mut f32, lse: *mut f32, rows: u32, nkv: u32);
    attention_naive_softmax => (F32, F32, Any) [];
}

crate::entry_points! {
    pub const SYMBOLS_PV;
    fn pv(p: *const f32, v: *const u16, o: *mut u16, nq: u32, nkv: u32, heads_q: u32, group: u32, d: u32, v_sb: u64, v_ss: u64, v_sh: u64, o_sb: u64, o_ss: u64, o_sh: u64);
    attention_naive_pv_f16 => (F16, F16, Any) [O = crate::tc::OutF16];
    attention_naive_pv_bf16 => (Bf16, Bf16, Any) [O = crate::tc::OutBf16];
}
