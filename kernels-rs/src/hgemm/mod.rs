//! Tensor-core GEMM in f16 and bf16: `C = α·A·B + β·C (+ bias) (ReLU)`, f32 accumulation,
//! output in the input type or f32.
//!
//! Layouts: A row-major (M × K, K contiguous). B either row-major (K × N, "`bn`": N contiguous,
//! the BLAS-natural layout) or transposed (N × K row-major, "`bt`": K contiguous, the layout
//! tensor cores read directly). C row-major with leading dimension `ldc`.
//!
//! Variants, one file each:
//! - [`v01_mma`]: `mma.sync.m16n8k16`, one k-tile in shared memory at a time (sm_80+);
//! - [`v02_mma_pipeline`]: `mma.sync` + `ldmatrix` + a multi-stage `cp.async` ring with swizzled
//!   shared tiles (the sm_80 path);
//! - [`v03_wgmma_ws`]: Hopper `wgmma` + TMA, warp-specialized (one producer warpgroup, two
//!   consumer warpgroups), persistent over output tiles (the sm_90a path).
//!
//! The [`Epilogue`] is shared by every variant (and by the conv kernels to come): it takes
//! accumulator pairs in the `mma`/`wgmma` fragment layout (two adjacent columns of one row) and
//! applies α, β·C, bias and ReLU before converting and storing.

pub mod peak;
pub mod v01_mma;
pub mod v02_mma_pipeline;
pub mod v03_wgmma_ws;

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
    fn unpack(s: u16) -> f32 {
        f32::from_bits((s as u32) << 16)
    }
}

/// Software conversions for the simulator (the GPU uses `cvt`): round to nearest even, NaN
/// stays NaN, overflow goes to infinity.
#[cfg(not(target_arch = "nvptx64"))]
pub mod soft {
    /// f32 → bf16 bits.
    pub fn f32_to_bf16(v: f32) -> u16 {
        let b = v.to_bits();
        if v.is_nan() {
            return ((b >> 16) | 0x40) as u16;
        }
        let round = 0x7FFF + ((b >> 16) & 1);
        (b.wrapping_add(round) >> 16) as u16
    }

    /// f32 → f16 bits.
    pub fn f32_to_f16(v: f32) -> u16 {
        let b = v.to_bits();
        let sign = ((b >> 16) & 0x8000) as u16;
        let exp = ((b >> 23) & 0xFF) as i32;
        let man = b & 0x7F_FFFF;
        if exp == 0xFF {
            return sign | 0x7C00 | if man != 0 { 0x200 } else { 0 };
        }
        let e = exp - 127 + 15;
        if e >= 31 {
            return sign | 0x7C00;
        }
        if e <= 0 {
            // Subnormal (or zero): shift the full significand into place, round to nearest even.
            if e < -10 {
                return sign;
            }
            let full = man | 0x80_0000;
            let shift = (14 - e) as u32;
            let half = 1u32 << (shift - 1);
            let mut h = full >> shift;
            let rest = full & ((1 << shift) - 1);
            if rest > half || (rest == half && h & 1 == 1) {
                h += 1;
            }
            return sign | h as u16;
        }
        let mut h = ((e as u32) << 10) | (man >> 13);
        let rest = man & 0x1FFF;
        if rest > 0x1000 || (rest == 0x1000 && h & 1 == 1) {
            h += 1; // may carry into the exponent, up to infinity: correct
        }
        sign | h as u16
    }

    /// f16 bits → f32.
    pub fn f16_to_f32(h: u16) -> f32 {
        let sign = ((h & 0x8000) as u32) << 16;
        let exp = ((h >> 10) & 0x1F) as u32;
        let man = (h & 0x3FF) as u32;
        let bits = match (exp, man) {
            (0, 0) => sign,
            (0, _) => {
                // Subnormal: value = man · 2^-24.
                let v = man as f32 * (1.0 / 16_777_216.0);
                return if sign != 0 { -v } else { v };
            }
            (31, 0) => sign | 0x7F80_0000,
            (31, _) => sign | 0x7FC0_0000 | (man << 13),
            _ => sign | ((exp + 127 - 15) << 23) | (man << 13),
        };
        f32::from_bits(bits)
    }
}

/// What happens to an accumulator on its way out: `out = act(α·acc + β·C + bias[col])`.
#[derive(Clone, Copy)]
pub struct Epilogue<O: TcOut> {
    /// C, row-major.
    pub c: *mut O::Store,
    /// Leading dimension of C, elements.
    pub ldc: u32,
    /// Rows of C.
    pub m: u32,
    /// Columns of C.
    pub n: u32,
    /// α.
    pub alpha: f32,
    /// β (0: C is not read).
    pub beta: f32,
    /// Per-column bias (f32, `n` entries), or null.
    pub bias: *const f32,
    /// Non-zero: ReLU after the bias.
    pub relu: u32,
}

/// Whether pairs `C[r][2j], C[r][2j + 1]` can be stored with one access: even `ldc` and a
/// base aligned to two elements.
#[inline(always)]
pub fn pairs_aligned<O: TcOut>(c: *mut O::Store, ldc: u32) -> bool {
    ldc.is_multiple_of(2) && (c as usize).is_multiple_of(2 * core::mem::size_of::<O::Store>())
}

impl<O: TcOut> Epilogue<O> {
    #[inline(always)]
    unsafe fn finish(&self, at: *mut O::Store, col: u32, v: f32) -> O::Store {
        let mut r = self.alpha * v;
        if self.beta != 0.0 {
            r = gpu::fma(self.beta, O::unpack(O::Store::ld_global_nc(at)), r);
        }
        if !self.bias.is_null() {
            r += f32::ld_global_nc(self.bias.add(col as usize));
        }
        if self.relu != 0 && r < 0.0 {
            // NaN stays NaN: `r < 0.0` is false for it.
            r = 0.0;
        }
        O::pack(r)
    }

    /// Stores `C[row][col] ← v0` and `C[row][col + 1] ← v1`, each only if inside C; `col` is
    /// even (the fragment layouts' pairs), so with [`pairs_aligned`] both go in one access.
    ///
    /// # Safety
    /// `c` covers `m` rows of `ldc` elements; `bias` (if not null) `n` floats.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn store_pair(&self, row: u32, col: u32, v0: f32, v1: f32) {
        if row >= self.m {
            return;
        }
        let at = self.c.add(row as usize * self.ldc as usize + col as usize);
        if col + 1 < self.n && pairs_aligned::<O>(self.c, self.ldc) {
            let (r0, r1) = (
                self.finish(at, col, v0),
                self.finish(at.add(1), col + 1, v1),
            );
            O::store2(at, r0, r1);
            return;
        }
        if col < self.n {
            O::Store::st_global(at, self.finish(at, col, v0));
        }
        if col + 1 < self.n {
            O::Store::st_global(at.add(1), self.finish(at.add(1), col + 1, v1));
        }
    }
}

/// Output tile `t` (of `tiles_m × tiles_n`) in grouped order: consecutive tiles walk down a
/// band of `group` tile rows before moving right, so the blocks in flight share A rows and
/// B columns in L2. Returns `(tile_row, tile_col)`.
#[inline(always)]
pub fn grouped_tile(t: u32, tiles_m: u32, tiles_n: u32, group: u32) -> (u32, u32) {
    let per_group = group * tiles_n;
    let first = (t / per_group) * group;
    let rows = (tiles_m - first).min(group);
    let r = t % per_group;
    (first + r % rows, r / rows)
}

/// The family.
pub const FAMILY: crate::registry::Family = crate::registry::Family {
    name: "hgemm",
    about: "tensor-core matrix product, f16/bf16 in, f32 accumulation",
};

/// Every entry point of the family, one registry record each.
pub const RECORDS: &[&crate::registry::KernelInfo] = &[
    &v01_mma::INFO,
    &v02_mma_pipeline::INFO,
    &v02_mma_pipeline::m256::INFO,
    &v02_mma_pipeline::t128::INFO,
    &v03_wgmma_ws::INFO,
    &peak::INFO_MMA,
    &peak::INFO_WGMMA,
];
