//! Split-K fix-up of the TMA kernel: `y = act(Σ_s part[s] + bias)`, converted to the output
//! type. One thread per output pair; reads `splits · 4` bytes and writes 4 per pair: a few
//! microseconds at the sizes split-K is used for (small grids).

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
