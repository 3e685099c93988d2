//! Tensor-core building blocks shared by every tensor-core kernel (GEMM now, attention and
//! convolution next):
//! - input and output types ([`TcIn`]: f16/bf16 operands; [`TcOut`]: how f32 accumulators are
//!   rounded and stored) and the simulator's software conversions ([`soft`]);
//! - the [`Epilogue`] (`out = act(α·acc + β·C + bias)`), fed accumulator pairs in the
//!   `mma`/`wgmma` fragment layout;
//! - [`mainloop`]: the sm_80 `mma.sync` + `ldmatrix` mainloop over a `cp.async` ring, with the
//!   stage loads as a hook (implicit-GEMM convolution);
//! - `ws` (sm_90a only): the warp-specialized producer/consumer driver. It owns the TMA ring, the
//!   barrier set-up, the register split and the persistent tile loop; a kernel supplies hooks;
//! - `pair` (sm_90a only): the same driver over a 2-block cluster sharing B by TMA multicast;
//! - `width` (sm_90a only): the `wgmma` tile widths (64, 128, 256) and their accumulator
//!   stores, shared by the GEMM and the convolution.

pub mod epilogue;
pub mod mainloop;
#[cfg(all(target_arch = "nvptx64", rustile_sm90a))]
pub mod pair;
#[cfg(not(target_arch = "nvptx64"))]
pub mod soft;
#[cfg(all(target_arch = "nvptx64", rustile_sm90a))]
pub mod width;
#[cfg(all(target_arch = "nvptx64", rustile_sm90a))]
pub mod ws;

pub use epilogue::{pairs_aligned, Epilogue};

use crate::gpu::{self, Elem};

/// A tensor-core input type.
pub trait TcIn: Copy {
    /// The `mma.sync` kind.
    const KIND: gpu::MmaKind;
}

/// f16 inputs.
#[derive(Clone, Copy)]
pub struct F16;
/// bf16 inputs.
#[derive(Clone, Copy)]
pub struct Bf16;
impl TcIn for F16 {
    const KIND: gpu::MmaKind = gpu::MmaKind::F16;
}
impl TcIn for Bf16 {
    const KIND: gpu::MmaKind = gpu::MmaKind::Bf16;
}

/// Rounds `lo` and `hi` to the operand type of `kind` and packs them into one register, `lo`
/// in the low half: an `mma`/`wgmma` A-fragment pair built from f32 accumulators (attention's
/// P). One `cvt.rn.{f16,bf16}x2.f32` on the GPU.
#[inline(always)]
pub fn pack2(kind: gpu::MmaKind, lo: f32, hi: f32) -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        macro_rules! cvt_x2 {
            ($cvt:literal) => {{
                let d: u32;
                // SAFETY: pure conversion. The first source goes to the upper half.
                unsafe {
                    core::arch::asm!(concat!($cvt, " {d}, {hi}, {lo};"),
                        d = out(reg32) d, hi = in(reg32) hi, lo = in(reg32) lo,
                        options(pure, nomem, nostack, preserves_flags));
                }
                d
            }};
        }
        let d = match kind {
            gpu::MmaKind::F16 => cvt_x2!("cvt.rn.f16x2.f32"),
            gpu::MmaKind::Bf16 => cvt_x2!("cvt.rn.bf16x2.f32"),
        };
        d
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let (l, h) = match kind {
            gpu::MmaKind::F16 => (soft::f32_to_f16(lo), soft::f32_to_f16(hi)),
            gpu::MmaKind::Bf16 => (soft::f32_to_bf16(lo), soft::f32_to_bf16(hi)),
        };
        l as u32 | (h as u32) << 16
    }
}

/// An output type: how f32 results are rounded and stored.
pub trait TcOut: Copy {
    /// What is stored.
    type Store: Elem;
    /// Rounds one value (round to nearest even).
    fn pack(v: f32) -> Self::Store;
    /// Widens a stored value (for β·C).
    fn unpack(s: Self::Store) -> f32;
    /// Stores `v0` at `p` and `v1` at `p + 1` with one access.
    ///
    /// # Safety
    /// `p` points to two elements of global memory, aligned to twice the element size.
    unsafe fn store2(p: *mut Self::Store, v0: Self::Store, v1: Self::Store);
    /// Rounds two values and packs their bits into one word, `lo` in the low half (16-bit
    /// outputs; one `cvt.rn.{f16,bf16}x2.f32` on the GPU instead of two conversions).
    #[inline(always)]
    fn pack2(lo: f32, hi: f32) -> u32 {
        Self::pack(lo).to_bits64() as u32 | (Self::pack(hi).to_bits64() as u32) << 16
    }
}

/// Two 16-bit values as one 32-bit store.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
unsafe fn store2_b16(p: *mut u16, v0: u16, v1: u16) {
    u32::st_global(p as *mut u32, v0 as u32 | (v1 as u32) << 16)
}

/// f16 output.
#[derive(Clone, Copy)]
pub struct OutF16;
/// bf16 output.
#[derive(Clone, Copy)]
pub struct OutBf16;
/// f32 output.
#[derive(Clone, Copy)]
pub struct OutF32;

impl TcOut for OutF32 {
    type Store = f32;
    #[inline(always)]
    fn pack(v: f32) -> f32 {
        v
    }
    #[inline(always)]
    fn unpack(s: f32) -> f32 {
        s
    }
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn store2(p: *mut f32, v0: f32, v1: f32) {
        #[cfg(target_arch = "nvptx64")]
        core::arch::asm!(
            "st.global.v2.f32 [{p}], {{{a}, {b}}};",
            p = in(reg64) p, a = in(reg32) v0, b = in(reg32) v1,
            options(nostack, preserves_flags)
        );
        #[cfg(not(target_arch = "nvptx64"))]
        host_store2_f32(p, v0, v1);
    }
}

#[cfg(not(target_arch = "nvptx64"))]
#[track_caller]
unsafe fn host_store2_f32(p: *mut f32, v0: f32, v1: f32) {
    let bits = v0.to_bits() as u64 | (v1.to_bits() as u64) << 32;
    gpu::host::current().store(
        gpu::host::Space::Global,
        p as u64,
        &bits.to_le_bytes(),
        core::panic::Location::caller(),
    );
}

/// f32 → 16-bit float bits: the PTX `cvt` on the GPU, the software rounding in the simulator.
macro_rules! round_to_b16 {
    ($cvt:literal, $soft:path, $v:expr) => {{
        #[cfg(target_arch = "nvptx64")]
        {
            let h: u16;
            // SAFETY: pure conversion.
            unsafe {
                core::arch::asm!(concat!($cvt, " {h}, {v};"), h = out(reg16) h, v = in(reg32) $v,
                    options(pure, nomem, nostack, preserves_flags));
            }
            h
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            $soft($v)
        }
    }};
}

impl TcOut for OutF16 {
    type Store = u16;
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn store2(p: *mut u16, v0: u16, v1: u16) {
        store2_b16(p, v0, v1)
    }
    #[inline(always)]
    fn pack(v: f32) -> u16 {
        round_to_b16!("cvt.rn.f16.f32", soft::f32_to_f16, v)
    }
    #[inline(always)]
    fn pack2(lo: f32, hi: f32) -> u32 {
        pack2(gpu::MmaKind::F16, lo, hi)
    }
    #[inline(always)]
    fn unpack(s: u16) -> f32 {
        #[cfg(target_arch = "nvptx64")]
        {
            let v: f32;
            // SAFETY: pure conversion.
            unsafe {
                core::arch::asm!("cvt.f32.f16 {v}, {h};", v = out(reg32) v, h = in(reg16) s,
                    options(pure, nomem, nostack, preserves_flags));
            }
            v
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            soft::f16_to_f32(s)
        }
    }
}

impl TcOut for OutBf16 {
    type Store = u16;
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn store2(p: *mut u16, v0: u16, v1: u16) {
        store2_b16(p, v0, v1)
    }
    #[inline(always)]
    fn pack(v: f32) -> u16 {
        round_to_b16!("cvt.rn.bf16.f32", soft::f32_to_bf16, v)
    }
    #[inline(always)]
    fn pack2(lo: f32, hi: f32) -> u32 {
        pack2(gpu::MmaKind::Bf16, lo, hi)
    }
    #[inline(always)]
    fn unpack(s: u16) -> f32 {
        f32::from_bits((s as u32) << 16)
    }
}
