//! Split-K fix-ups: `y = act(Σ_s part[s] + bias)`, the parts added in order (deterministic).
//! [`combine`] for the TMA kernel (converted to f16/bf16, NHWC), [`combine_f32`] for the f32
//! `regblock` step (NHWC or NCHW). One thread per output; reads `splits · 4` bytes and writes
//! one element: a few microseconds at the sizes split-K is used for.

use crate::gpu::{self, Elem};
use crate::tc::TcOut;

/// Threads per block.
pub const THREADS: u32 = 256;

crate::entry_points! {
    pub const SYMBOLS;
    fn combine(part: *const f32, bias: *const f32, y: *mut u16, rows: u32, kout: u32, splits: u32, relu: u32);
    conv_combine_f16 => (F16, F16, Nhwc) [O = crate::tc::OutF16];
    conv_combine_bf16 => (Bf16, Bf16, Nhwc) [O = crate::tc::OutBf16];
}

/// Registry record (a helper: launched by the TMA kernel's host side after a split launch).
pub const INFO: crate::registry::KernelInfo = crate::registry::KernelInfo {
    family: super::FAMILY,
    name: "combine",
    role: crate::registry::Role::Helper,
    block: (THREADS, 1, 1),
    launch: crate::registry::Launch::Linear,
    symbols: SYMBOLS,
    about: "split-K fix-up: sum the f32 partials, add the bias, ReLU, convert",
    ..crate::registry::KernelInfo::BASE
};

/// Grid `⌈rows · kout / THREADS⌉` blocks (≤ 2³¹ elements), one thread per element.
///
/// # Safety
/// `part` holds `splits · rows · kout` floats, `y` `rows · kout` elements, `bias` `kout`
/// floats or is null.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn combine<O: TcOut<Store = u16>>(
    part: *const f32,
    bias: *const f32,
    y: *mut u16,
    rows: u32,
    kout: u32,
    splits: u32,
    relu: u32,
) {
    let i = gpu::block_idx_x() * THREADS + gpu::thread_idx_x();
    let total = rows * kout;
    if i >= total {
        return;
    }
    let mut v = if bias.is_null() {
        0.0
    } else {
        f32::ld_global_nc(bias.add((i % kout) as usize))
    };
    let mut s = 0;
    while s < splits {
        v += f32::ld_global_nc(part.add(s as usize * total as usize + i as usize));
        s += 1;
    }
    u16::st_global(y.add(i as usize), O::pack(super::activate(v, relu)));
}

crate::entry_points! {
    pub const SYMBOLS_F32;
    fn combine_f32(part: *const f32, bias: *const f32, y: *mut f32, total: u32, kout: u32, pq: u32, splits: u32, relu: u32);
    conv_combine_f32 => (F32, F32, Any) [];
}

/// Registry record of the f32 fix-up (a helper: launched after a split `regblock` launch).
pub const INFO_F32: crate::registry::KernelInfo = crate::registry::KernelInfo {
    family: super::FAMILY,
    name: "combine_f32",
    role: crate::registry::Role::Helper,
    block: (THREADS, 1, 1),
    launch: crate::registry::Launch::Linear,
    symbols: SYMBOLS_F32,
    about: "f32 split-K fix-up: sum the partials in order, add the bias, ReLU (NHWC or NCHW)",
    ..crate::registry::KernelInfo::BASE
};

/// Grid `⌈total / THREADS⌉` blocks, one thread per element of y. Element `i`'s channel is
/// `(i / pq) % kout`: `pq` = 1 for NHWC (channels innermost), `P·Q` for NCHW.
///
/// # Safety
/// `part` holds `splits · total` floats, `y` `total`, `bias` `kout` floats or is null; `pq`,
/// `kout` ≥ 1.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn combine_f32(
    part: *const f32,
    bias: *const f32,
    y: *mut f32,
    total: u32,
    kout: u32,
    pq: u32,
    splits: u32,
    relu: u32,
) {
    let i = gpu::block_idx_x() * THREADS + gpu::thread_idx_x();
    if i >= total {
        return;
    }
    let mut v = 0.0;
    let mut s = 0;
    while s < splits {
        v += f32::ld_global_nc(part.add(s as usize * total as usize + i as usize));
        s += 1;
    }
    if !bias.is_null() {
        v += f32::ld_global_nc(bias.add(((i / pq) % kout) as usize));
    }
    f32::st_global(y.add(i as usize), super::activate(v, relu));
}
