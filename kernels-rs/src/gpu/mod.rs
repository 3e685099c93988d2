//! The device primitive layer. Kernels use only these functions, never raw intrinsics, so the
//! same kernel source runs on the GPU (inline PTX, `nvptx64`) and in rustile's host-side
//! simulator (every other target: each primitive calls the simulated thread of
//! [`host::SimThread`], which checks, records and performs it).
//!
//! Three codegen facts, measured on an H200 (`notes/architecture.md`), shape the PTX side:
//! - shared memory is addressed with explicit `ld.shared`/`st.shared` on 32-bit shared-window
//!   addresses ([`Tile`], [`Elem::ld_shared`]); generic pointers into shared memory cost
//!   up to 2×;
//! - the block barrier is the non-aligned `barrier.sync 0`, not `bar.sync` (`_syncthreads()`):
//!   LLVM may duplicate a barrier into both arms of a thread-dependent branch, which is undefined
//!   for the `.aligned` form and hung a kernel;
//! - rustc never contracts `a * b + c`: [`fma`] is explicit.
//!
//! Building blocks on these primitives, shared by the kernels: [`tile`] (shared tiles that carry
//! a padded or swizzled layout), [`ring`] (the `cp.async` and TMA/mbarrier stage rings) and
//! [`sched`] (output-tile order and the persistent grid, one `const fn` for host and device).
//!
//! On the host, memory primitives are `#[track_caller]`: the simulator attributes every access
//! to the kernel source line that made it (`rustile analyze`).

#[cfg(all(target_arch = "nvptx64", rustile_sm90a))]
pub mod hopper;
#[cfg(not(target_arch = "nvptx64"))]
pub mod host;
pub mod ring;
pub mod sched;
pub mod tile;
#[cfg(all(target_arch = "nvptx64", rustile_sm90a))]
#[allow(clippy::too_many_arguments)]
pub mod wgmma;

pub use tile::{Layout, Padded, SharedArena, Swizzled, Tile};

/// `unroll!(N, j, { body })` repeats `body` with `j: usize` = 0, 1, …, N − 1 (N = 2, 4, 8, 16, 32
/// or 64), so arrays indexed by `j` stay in registers however large the body is.
#[macro_export]
macro_rules! unroll {
    (2, $j:ident, $body:block) => { $crate::unroll!(@at 0, $j, $body); $crate::unroll!(@at 1, $j, $body); };
    (4, $j:ident, $body:block) => { $crate::unroll!(@at 0, $j, $body); $crate::unroll!(@at 1, $j, $body); $crate::unroll!(@at 2, $j, $body); $crate::unroll!(@at 3, $j, $body); };
    (8, $j:ident, $body:block) => { $crate::unroll!(@4 0, $j, $body); $crate::unroll!(@4 4, $j, $body); };
    (16, $j:ident, $body:block) => { $crate::unroll!(@8 0, $j, $body); $crate::unroll!(@8 8, $j, $body); };
    (32, $j:ident, $body:block) => { $crate::unroll!(@16 0, $j, $body); $crate::unroll!(@16 16, $j, $body); };
    (64, $j:ident, $body:block) => { $crate::unroll!(@16 0, $j, $body); $crate::unroll!(@16 16, $j, $body); $crate::unroll!(@16 32, $j, $body); $crate::unroll!(@16 48, $j, $body); };
    (@16 $o:expr, $j:ident, $body:block) => { $crate::unroll!(@8 $o, $j, $body); $crate::unroll!(@8 $o + 8, $j, $body); };
    (@8 $o:expr, $j:ident, $body:block) => { $crate::unroll!(@4 $o, $j, $body); $crate::unroll!(@4 $o + 4, $j, $body); };
    (@4 $o:expr, $j:ident, $body:block) => { $crate::unroll!(@at $o, $j, $body); $crate::unroll!(@at $o + 1, $j, $body); $crate::unroll!(@at $o + 2, $j, $body); $crate::unroll!(@at $o + 3, $j, $body); };
    (@at $o:expr, $j:ident, $body:block) => {{ #[allow(clippy::identity_op, clippy::erasing_op)] let $j: usize = $o; $body }};
}

/// Special registers a kernel can read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Special {
    /// `%tid.x`
    TidX,
    /// `%tid.y`
    TidY,
    /// `%tid.z`
    TidZ,
    /// `%ctaid.x`
    CtaidX,
    /// `%ctaid.y`
    CtaidY,
    /// `%ctaid.z`
    CtaidZ,
    /// `%ntid.x`
    NtidX,
    /// `%ntid.y`
    NtidY,
    /// `%ntid.z`
    NtidZ,
    /// `%nctaid.x`
    NctaidX,
    /// `%nctaid.y`
    NctaidY,
    /// `%nctaid.z`
    NctaidZ,
    /// `%laneid`
    LaneId,
}

macro_rules! special_register {
    ($($(#[$doc:meta])* $name:ident => $reg:literal, $which:ident;)*) => {$(
        $(#[$doc])*
        #[inline(always)]
        pub fn $name() -> u32 {
            #[cfg(target_arch = "nvptx64")]
            {
                let v: u32;
                // SAFETY: reading a special register has no side effects.
                unsafe {
                    core::arch::asm!(
                        concat!("mov.u32 {v}, ", $reg, ";"),
                        v = out(reg32) v,
                        options(pure, nomem, nostack, preserves_flags)
                    );
                }
                v
            }
            #[cfg(not(target_arch = "nvptx64"))]
            {
                host::current().special(Special::$which)
            }
        }
    )*};
}

special_register! {
    /// `threadIdx.x`
    thread_idx_x => "%tid.x", TidX;
    /// `threadIdx.y`
    thread_idx_y => "%tid.y", TidY;
    /// `threadIdx.z`
    thread_idx_z => "%tid.z", TidZ;
    /// `blockIdx.x`
    block_idx_x => "%ctaid.x", CtaidX;
    /// `blockIdx.y`
    block_idx_y => "%ctaid.y", CtaidY;
    /// `blockIdx.z`
    block_idx_z => "%ctaid.z", CtaidZ;
    /// `blockDim.x`
    block_dim_x => "%ntid.x", NtidX;
    /// `blockDim.y`
    block_dim_y => "%ntid.y", NtidY;
    /// `blockDim.z`
    block_dim_z => "%ntid.z", NtidZ;
    /// `gridDim.x`
    grid_dim_x => "%nctaid.x", NctaidX;
    /// `gridDim.y`
    grid_dim_y => "%nctaid.y", NctaidY;
    /// `gridDim.z`
    grid_dim_z => "%nctaid.z", NctaidZ;
    /// Lane index within the warp, 0..32.
    lane_id => "%laneid", LaneId;
}

/// `blockIdx.x`, read anew at every call: the `asm` is not `pure`, so the compiler may neither
/// merge two reads nor hoist one out of a loop. A kernel that recomputes a value from it after a
/// register-hungry stretch (a tile's main loop) keeps that value out of the registers in
/// between, instead of holding it live.
#[inline(always)]
pub fn block_idx_x_fresh() -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let v: u32;
        // SAFETY: reading a special register has no side effects (the asm is merely not
        // declared pure, to keep each read where it is written).
        unsafe {
            core::arch::asm!(
                "mov.u32 {v}, %ctaid.x;",
                v = out(reg32) v,
                options(nomem, nostack, preserves_flags)
            );
        }
        v
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        host::current().special(Special::CtaidX)
    }
}

/// An element that kernels move: stored and loaded by bit pattern, so `f16` kernels use `u16`.
pub trait Elem: Copy + Default {
    /// Size in bytes.
    const BYTES: usize;
    /// The bit pattern, zero-extended.
    fn to_bits64(self) -> u64;
    /// From a bit pattern (low `BYTES` bytes).
    fn from_bits64(bits: u64) -> Self;
    /// Load from global memory through the read-only (non-coherent) path, `ld.global.nc`.
    ///
    /// # Safety
    /// `p` must point to a valid, aligned element in global memory that no thread of this
    /// launch writes.
    unsafe fn ld_global_nc(p: *const Self) -> Self;
    /// Store to global memory, `st.global`.
    ///
    /// # Safety
    /// `p` must point to a valid, aligned element in global memory.
    unsafe fn st_global(p: *mut Self, v: Self);
    /// Load from shared memory at a 32-bit shared-window address, `ld.shared`.
    ///
    /// # Safety
    /// `addr` must lie inside the launch's dynamic shared memory and be aligned.
    unsafe fn ld_shared(addr: u32) -> Self;
    /// Store to shared memory at a 32-bit shared-window address, `st.shared`.
    ///
    /// # Safety
    /// `addr` must lie inside the launch's dynamic shared memory and be aligned.
    unsafe fn st_shared(addr: u32, v: Self);
}

macro_rules! impl_elem {
    ($t:ty, $bytes:expr, $ptx:literal, $reg:ident, $to:expr, $from:expr) => {
        impl Elem for $t {
            const BYTES: usize = $bytes;
            #[inline(always)]
            fn to_bits64(self) -> u64 {
                #[allow(clippy::redundant_closure_call)]
                ($to)(self)
            }
            #[inline(always)]
            fn from_bits64(bits: u64) -> Self {
                #[allow(clippy::redundant_closure_call)]
                ($from)(bits)
            }
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            unsafe fn ld_global_nc(p: *const Self) -> Self {
                #[cfg(target_arch = "nvptx64")]
                {
                    let v: $t;
                    core::arch::asm!(
                        concat!("ld.global.nc.", $ptx, " {v}, [{p}];"),
                        v = out($reg) v, p = in(reg64) p,
                        options(pure, readonly, nostack, preserves_flags)
                    );
                    v
                }
                #[cfg(not(target_arch = "nvptx64"))]
                {
                    Self::from_bits64(host::load(host::Space::Global, p as u64, $bytes))
                }
            }
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            unsafe fn st_global(p: *mut Self, v: Self) {
                #[cfg(target_arch = "nvptx64")]
                core::arch::asm!(
                    concat!("st.global.", $ptx, " [{p}], {v};"),
                    p = in(reg64) p, v = in($reg) v,
                    options(nostack, preserves_flags)
                );
                #[cfg(not(target_arch = "nvptx64"))]
                host::store(host::Space::Global, p as u64, v.to_bits64(), $bytes);
            }
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            unsafe fn ld_shared(addr: u32) -> Self {
                #[cfg(target_arch = "nvptx64")]
                {
                    let v: $t;
                    core::arch::asm!(
                        concat!("ld.shared.", $ptx, " {v}, [{a}];"),
                        v = out($reg) v, a = in(reg32) addr,
                        options(readonly, nostack, preserves_flags)
                    );
                    v
                }
                #[cfg(not(target_arch = "nvptx64"))]
                {
                    Self::from_bits64(host::load(host::Space::Shared, addr as u64, $bytes))
                }
            }
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            unsafe fn st_shared(addr: u32, v: Self) {
                #[cfg(target_arch = "nvptx64")]
                core::arch::asm!(
                    concat!("st.shared.", $ptx, " [{a}], {v};"),
                    a = in(reg32) addr, v = in($reg) v,
                    options(nostack, preserves_flags)
                );
                #[cfg(not(target_arch = "nvptx64"))]
                host::store(host::Space::Shared, addr as u64, v.to_bits64(), $bytes);
            }
        }
    };
}

impl_elem!(
    f32,
    4,
    "f32",
    reg32,
    |v: f32| v.to_bits() as u64,
    |b: u64| f32::from_bits(b as u32)
);
impl_elem!(u32, 4, "b32", reg32, |v: u32| v as u64, |b: u64| b as u32);
impl_elem!(u16, 2, "b16", reg16, |v: u16| v as u64, |b: u64| b as u16);

/// Sixteen bytes moved as one `v4.b32` access: the widest global load/store per thread.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C, align(16))]
pub struct Vec16(pub [u32; 4]);

/// Loads 16 bytes through the read-only path, `ld.global.nc.v4.b32`.
///
/// # Safety
/// `p` must be 16-byte aligned and point to 16 readable bytes of global memory that no thread of
/// this launch writes.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn ld_global_nc_v16(p: *const Vec16) -> Vec16 {
    #[cfg(target_arch = "nvptx64")]
    {
        let (a, b, c, d): (u32, u32, u32, u32);
        core::arch::asm!(
            "ld.global.nc.v4.b32 {{{a}, {b}, {c}, {d}}}, [{p}];",
            a = out(reg32) a, b = out(reg32) b, c = out(reg32) c, d = out(reg32) d,
            p = in(reg64) p,
            options(pure, readonly, nostack, preserves_flags)
        );
        Vec16([a, b, c, d])
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        Vec16(host::load16(p as u64))
    }
}

/// Stores 16 bytes, `st.global.v4.b32`.
///
/// # Safety
/// `p` must be 16-byte aligned and point to 16 writable bytes of global memory.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn st_global_v16(p: *mut Vec16, v: Vec16) {
    #[cfg(target_arch = "nvptx64")]
    {
        let [a, b, c, d] = v.0;
        core::arch::asm!(
            "st.global.v4.b32 [{p}], {{{a}, {b}, {c}, {d}}};",
            p = in(reg64) p,
            a = in(reg32) a, b = in(reg32) b, c = in(reg32) c, d = in(reg32) d,
            options(nostack, preserves_flags)
        );
    }
    #[cfg(not(target_arch = "nvptx64"))]
    host::store16(p as u64, v.0);
}

/// Block-wide barrier: `barrier.sync 0`, the non-aligned form, which stays correct if the
/// compiler duplicates it into divergent branches (see the module docs). In the simulator, every
/// live thread of the block must reach the same barrier, or the launch fails with an error.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn sync_threads() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: a barrier has no memory-safety preconditions; it orders shared-memory accesses,
    // which is why the asm is not marked `nomem`.
    unsafe {
        core::arch::asm!("barrier.sync 0;", options(nostack, preserves_flags))
    }
    #[cfg(not(target_arch = "nvptx64"))]
    host::current().barrier(core::panic::Location::caller());
}

/// Aborts the kernel (`trap`): the launch fails with an error the host reports.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn trap() -> ! {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: `trap` ends the kernel; nothing follows.
    unsafe {
        core::arch::asm!("trap;", options(noreturn, nostack))
    }
    #[cfg(not(target_arch = "nvptx64"))]
    host::current().trap(core::panic::Location::caller())
}

/// Fused multiply-add `a * b + c` with a single rounding (`fma.rn.f32`).
#[inline(always)]
pub fn fma(a: f32, b: f32, c: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let d: f32;
        // SAFETY: pure arithmetic.
        unsafe {
            core::arch::asm!(
                "fma.rn.f32 {d}, {a}, {b}, {c};",
                d = out(reg32) d, a = in(reg32) a, b = in(reg32) b, c = in(reg32) c,
                options(pure, nomem, nostack, preserves_flags)
            );
        }
        d
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        host::fma(a, b, c)
    }
}

/// `max(a, b)` with NaN propagated (`max.NaN.f32`, sm_80+): a NaN operand gives NaN, where the
/// IEEE `max` would return the other operand. `max_nan(x, 0.0)` is a ReLU that keeps NaN;
/// `max_nan(x, −∞)` is `x`.
#[inline(always)]
pub fn max_nan(a: f32, b: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let d: f32;
        // SAFETY: pure arithmetic.
        unsafe {
            core::arch::asm!(
                "max.NaN.f32 {d}, {a}, {b};",
                d = out(reg32) d, a = in(reg32) a, b = in(reg32) b,
                options(pure, nomem, nostack, preserves_flags)
            );
        }
        d
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        if a.is_nan() || b.is_nan() {
            f32::NAN
        } else {
            a.max(b)
        }
    }
}

macro_rules! warp_collective {
    ($(#[$doc:meta])* $name:ident($v:ident: u32, $arg:ident: u32) -> u32 = $ptx:literal, $op:ident) => {
        $(#[$doc])*
        #[inline(always)]
        #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
        pub fn $name($v: u32, $arg: u32) -> u32 {
            #[cfg(target_arch = "nvptx64")]
            {
                let d: u32;
                // SAFETY: register-only; every lane of the full mask participates.
                unsafe {
                    core::arch::asm!(
                        $ptx,
                        d = out(reg32) d, v = in(reg32) $v, a = in(reg32) $arg,
                        options(nomem, nostack, preserves_flags)
                    );
                }
                d
            }
            #[cfg(not(target_arch = "nvptx64"))]
            {
                host::current().warp(host::WarpOp::$op($arg), $v, core::panic::Location::caller())
            }
        }
    };
}

warp_collective! {
    /// Warp shuffle, butterfly: the value of lane `lane ^ mask` (`shfl.sync.bfly.b32`, full
    /// warp). Warp-collective: every lane of the warp must call it together.
    shfl_xor(v: u32, mask: u32) -> u32 = "shfl.sync.bfly.b32 {d}, {v}, {a}, 0x1f, 0xffffffff;", ShflXor
}

warp_collective! {
    /// Warp shuffle, indexed: the value of lane `src` (`shfl.sync.idx.b32`, full warp).
    /// Warp-collective: every lane of the warp must call it together.
    shfl_idx(v: u32, src: u32) -> u32 = "shfl.sync.idx.b32 {d}, {v}, {a}, 0x1f, 0xffffffff;", ShflIdx
}

/// Bit `i` set iff lane `i`'s `pred` is true (`vote.sync.ballot.b32`, full warp).
/// Warp-collective: every lane of the warp must call it together.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn ballot(pred: bool) -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let d: u32;
        // SAFETY: register-only; every lane of the full mask participates.
        unsafe {
            core::arch::asm!(
                "{{ .reg .pred p; setp.ne.u32 p, {v}, 0; vote.sync.ballot.b32 {d}, p, 0xffffffff; }}",
                d = out(reg32) d, v = in(reg32) pred as u32,
                options(nomem, nostack, preserves_flags)
            );
        }
        d
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        host::current().warp(
            host::WarpOp::Ballot,
            pred as u32,
            core::panic::Location::caller(),
        )
    }
}

/// True iff `pred` is true on every lane of the warp. Warp-collective.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn vote_all(pred: bool) -> bool {
    ballot(pred) == u32::MAX
}

/// True iff `pred` is true on some lane of the warp. Warp-collective.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn vote_any(pred: bool) -> bool {
    ballot(pred) != 0
}

#[cfg(target_arch = "nvptx64")]
core::arch::global_asm!(".extern .shared .align 16 .b8 SMEM[];");

/// 32-bit shared-window address of the start of the launch's dynamic shared memory (0 in the
/// simulator, whose shared arena is its own address space).
#[inline(always)]
pub fn dynamic_shared_base() -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let s: u32;
        // SAFETY: takes the address of the module's dynamic shared-memory symbol.
        unsafe {
            core::arch::asm!(
                "mov.u32 {s}, SMEM;",
                s = out(reg32) s,
                options(pure, nomem, nostack, preserves_flags)
            );
        }
        s
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        0
    }
}

// --- Tensor-core primitives (sm_80+): the fragment layouts are the PTX ISA's. ---

/// Tensor-core operand element types for [`mma_m16n8k16`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MmaKind {
    /// IEEE half.
    F16,
    /// bfloat16.
    Bf16,
}

/// `D = A·B + C` on a 16×8×16 tile by one warp (`mma.sync.aligned.m16n8k16.row.col.f32`),
/// `A` and `B` in f16 or bf16 (two per `u32`), `C`/`D` in f32.
///
/// Fragments, with `g = lane / 4` and `t = lane % 4` (PTX ISA, "Matrix fragments for
/// mma.m16n8k16"): `a[0]` = `A[g][2t..2t+2]`, `a[1]` = `A[g+8][2t..]`, `a[2]` =
/// `A[g][2t+8..]`, `a[3]` = `A[g+8][2t+8..]`; `b[0]` = `B[2t..2t+2][g]`, `b[1]` =
/// `B[2t+8..2t+10][g]`; `c[0..2]` = `C[g][2t..2t+2]`, `c[2..4]` = `C[g+8][2t..2t+2]`.
/// Warp-collective.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn mma_m16n8k16(kind: MmaKind, a: [u32; 4], b: [u32; 2], c: [f32; 4]) -> [f32; 4] {
    #[cfg(target_arch = "nvptx64")]
    {
        let d: [f32; 4];
        macro_rules! mma {
            ($ty:literal) => {{
                let (d0, d1, d2, d3): (f32, f32, f32, f32);
                // SAFETY: register-only; every lane of the warp executes it (warp-collective).
                unsafe {
                    core::arch::asm!(
                        concat!("mma.sync.aligned.m16n8k16.row.col.f32.", $ty, ".", $ty, ".f32 ",
                            "{{{d0}, {d1}, {d2}, {d3}}}, {{{a0}, {a1}, {a2}, {a3}}}, {{{b0}, {b1}}}, ",
                            "{{{c0}, {c1}, {c2}, {c3}}};"),
                        d0 = out(reg32) d0, d1 = out(reg32) d1, d2 = out(reg32) d2, d3 = out(reg32) d3,
                        a0 = in(reg32) a[0], a1 = in(reg32) a[1], a2 = in(reg32) a[2], a3 = in(reg32) a[3],
                        b0 = in(reg32) b[0], b1 = in(reg32) b[1],
                        c0 = in(reg32) c[0], c1 = in(reg32) c[1], c2 = in(reg32) c[2], c3 = in(reg32) c[3],
                        options(pure, nomem, nostack, preserves_flags)
                    );
                }
                [d0, d1, d2, d3]
            }};
        }
        d = match kind {
            MmaKind::F16 => mma!("f16"),
            MmaKind::Bf16 => mma!("bf16"),
        };
        d
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let mut inputs = [0u32; 10];
        inputs[..4].copy_from_slice(&a);
        inputs[4..6].copy_from_slice(&b);
        for (i, v) in c.iter().enumerate() {
            inputs[6 + i] = v.to_bits();
        }
        let d = host::current().warp_wide(
            host::WideOp::Mma(kind),
            inputs,
            core::panic::Location::caller(),
        );
        d.map(f32::from_bits)
    }
}

/// `ldmatrix.sync.aligned.m8n8.x{N}{.trans}.shared.b16`: loads `N` (1, 2 or 4) 8×8 matrices of
/// 16-bit elements from shared memory; lanes `8j..8j+8` give the row addresses (16 bytes each,
/// 16-byte aligned) of matrix `j`. Result `r[j]` of lane `l` holds matrix `j`'s row `l / 4`,
/// columns `2(l % 4)` and `2(l % 4) + 1` — or with `TRANS`, the transposed matrix's. Lanes whose
/// addresses the instruction does not use still pass one. Warp-collective.
///
/// # Safety
/// Every used address must lie in the launch's dynamic shared memory, 16-byte aligned.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn ldmatrix<const N: usize, const TRANS: bool>(addr: u32) -> [u32; 4] {
    #[cfg(target_arch = "nvptx64")]
    {
        let mut r = [0u32; 4];
        macro_rules! ld {
            ($x:literal, $t:literal, { $($o:ident),+ }) => {{
                $(let $o: u32;)+
                core::arch::asm!(
                    concat!("ldmatrix.sync.aligned.m8n8.", $x, $t, ".shared.b16 {{", ld!(@list $($o),+), "}}, [{addr}];"),
                    $($o = out(reg32) $o,)+
                    addr = in(reg32) addr,
                    options(readonly, nostack, preserves_flags)
                );
                let v = [$($o),+];
                r[..v.len()].copy_from_slice(&v);
            }};
            (@list $a:ident) => { concat!("{", stringify!($a), "}") };
            (@list $a:ident, $($rest:ident),+) => { concat!("{", stringify!($a), "}, ", ld!(@list $($rest),+)) };
        }
        match (N, TRANS) {
            (1, false) => ld!("x1", "", { r0 }),
            (2, false) => ld!("x2", "", { r0, r1 }),
            (4, false) => ld!("x4", "", { r0, r1, r2, r3 }),
            (1, true) => ld!("x1", ".trans", { r0 }),
            (2, true) => ld!("x2", ".trans", { r0, r1 }),
            (4, true) => ld!("x4", ".trans", { r0, r1, r2, r3 }),
            _ => trap(),
        }
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let mut inputs = [0u32; 10];
        inputs[0] = addr;
        host::current().warp_wide(
            host::WideOp::Ldmatrix {
                count: N as u32,
                trans: TRANS,
            },
            inputs,
            core::panic::Location::caller(),
        )
    }
}

/// `cp.async.cg.shared.global`: starts a 16-byte copy from global `src` to shared `dst`,
/// bypassing registers; the data is in shared memory only after a [`cp_async_wait`] that covers
/// its group ([`cp_async_commit`]).
///
/// # Safety
/// `src` must be 16 readable, 16-byte-aligned bytes of global memory; `dst` 16 bytes of the
/// launch's shared memory, 16-byte aligned.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn cp_async_16(dst: u32, src: *const Vec16) {
    #[cfg(target_arch = "nvptx64")]
    core::arch::asm!(
        "cp.async.cg.shared.global [{d}], [{s}], 16;",
        d = in(reg32) dst, s = in(reg64) src,
        options(nostack, preserves_flags)
    );
    #[cfg(not(target_arch = "nvptx64"))]
    host::current().cp_async(dst, src as u64, 16, core::panic::Location::caller());
}

/// `cp.async.cg.shared.global` with a source size: copies the first `src_bytes` (0..=16) of
/// the 16 bytes at global `src` to shared `dst` and zero-fills the rest, so a predicated load
/// (an out-of-image tap, a row or channel tail) is one branch-free instruction: `src_bytes` = 0
/// writes 16 zero bytes. Completes like [`cp_async_16`] (a [`cp_async_wait`] covering its
/// group).
///
/// # Safety
/// `dst` as for [`cp_async_16`]; `src` 16-byte aligned, its first `src_bytes` bytes readable
/// global memory that no thread of this launch writes, and `src` an address inside a global
/// allocation even when `src_bytes` is 0 (kernels pass the tensor's base; the simulator checks
/// it).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn cp_async_16_zfill(dst: u32, src: *const Vec16, src_bytes: u32) {
    #[cfg(target_arch = "nvptx64")]
    core::arch::asm!(
        "cp.async.cg.shared.global [{d}], [{s}], 16, {n};",
        d = in(reg32) dst, s = in(reg64) src, n = in(reg32) src_bytes,
        options(nostack, preserves_flags)
    );
    #[cfg(not(target_arch = "nvptx64"))]
    host::current().cp_async_zfill(
        dst,
        src as u64,
        16,
        src_bytes as usize,
        core::panic::Location::caller(),
    );
}

/// `cp.async.ca.shared.global` of one 4-byte element with a source size: copies the float at
/// global `src` to shared `dst` when `src_bytes` is 4, writes a zero when it is 0. The copy for
/// operands of any pitch (a row-major A transposed into shared memory as it lands, rows that
/// are not 16-byte multiples); 4-byte copies go through L1 (`.ca`: `.cg` takes only 16).
/// Completes like [`cp_async_16`].
///
/// # Safety
/// `dst` 4 bytes of the launch's shared memory, 4-byte aligned; `src` 4-byte aligned, readable
/// global memory that no thread of this launch writes when `src_bytes` is 4, and an address
/// inside a global allocation even when it is 0 (kernels pass the tensor's base).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn cp_async_4_zfill(dst: u32, src: *const f32, src_bytes: u32) {
    #[cfg(target_arch = "nvptx64")]
    core::arch::asm!(
        "cp.async.ca.shared.global [{d}], [{s}], 4, {n};",
        d = in(reg32) dst, s = in(reg64) src, n = in(reg32) src_bytes,
        options(nostack, preserves_flags)
    );
    #[cfg(not(target_arch = "nvptx64"))]
    host::current().cp_async_zfill(
        dst,
        src as u64,
        4,
        src_bytes as usize,
        core::panic::Location::caller(),
    );
}

/// `cp.async.commit_group`: closes the group of this thread's copies started since the last
/// commit.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn cp_async_commit() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: no operands.
    unsafe {
        core::arch::asm!("cp.async.commit_group;", options(nostack, preserves_flags))
    }
    #[cfg(not(target_arch = "nvptx64"))]
    host::current().cp_async_commit(core::panic::Location::caller());
}

/// `cp.async.wait_group N`: waits until at most `N` of this thread's committed groups are still
/// in flight. Other threads' copies need a barrier after their own wait.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn cp_async_wait<const N: u32>() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: orders this thread's shared-memory view; no operands besides the immediate.
    unsafe {
        core::arch::asm!("cp.async.wait_group {n};", n = const N, options(nostack, preserves_flags))
    }
    #[cfg(not(target_arch = "nvptx64"))]
    host::current().cp_async_wait(N, core::panic::Location::caller());
}

// --- Four-float vectors (SGEMM). ---

/// Loads four f32 from 16-byte-aligned global memory through the read-only path.
///
/// # Safety
/// As for [`ld_global_nc_v16`].
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn ld_global_nc_f32x4(p: *const f32) -> [f32; 4] {
    ld_global_nc_v16(p as *const Vec16).0.map(f32::from_bits)
}

/// Loads four f32 from shared memory (`ld.shared.v4.f32`), 16-byte aligned.
///
/// # Safety
/// `addr .. addr + 16` inside the launch's shared memory, 16-byte aligned.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn ld_shared_f32x4(addr: u32) -> [f32; 4] {
    #[cfg(target_arch = "nvptx64")]
    {
        let (a, b, c, d): (f32, f32, f32, f32);
        core::arch::asm!(
            "ld.shared.v4.f32 {{{a}, {b}, {c}, {d}}}, [{p}];",
            a = out(reg32) a, b = out(reg32) b, c = out(reg32) c, d = out(reg32) d,
            p = in(reg32) addr,
            options(readonly, nostack, preserves_flags)
        );
        [a, b, c, d]
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let b = host::current().load(
            host::Space::Shared,
            addr as u64,
            16,
            core::panic::Location::caller(),
        );
        core::array::from_fn(|i| {
            f32::from_le_bytes([b[4 * i], b[4 * i + 1], b[4 * i + 2], b[4 * i + 3]])
        })
    }
}

/// Stores four f32 to shared memory (`st.shared.v4.f32`), 16-byte aligned.
///
/// # Safety
/// As for [`ld_shared_f32x4`].
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn st_shared_f32x4(addr: u32, v: [f32; 4]) {
    #[cfg(target_arch = "nvptx64")]
    core::arch::asm!(
        "st.shared.v4.f32 [{p}], {{{a}, {b}, {c}, {d}}};",
        p = in(reg32) addr,
        a = in(reg32) v[0], b = in(reg32) v[1], c = in(reg32) v[2], d = in(reg32) v[3],
        options(nostack, preserves_flags)
    );
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let mut b = [0u8; 16];
        for (i, x) in v.iter().enumerate() {
            b[4 * i..4 * i + 4].copy_from_slice(&x.to_le_bytes());
        }
        host::current().store(
            host::Space::Shared,
            addr as u64,
            &b,
            core::panic::Location::caller(),
        );
    }
}

// --- Fast transcendental functions (the softmax of attention). ---

/// `2^x`, `ex2.approx.ftz.f32` (≤ 2 ulp; subnormal results flush to zero; `2^-inf` = 0). The
/// simulator computes it in software to about 1e-7 relative.
#[inline(always)]
pub fn ex2(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let d: f32;
        // SAFETY: pure arithmetic.
        unsafe {
            core::arch::asm!(
                "ex2.approx.ftz.f32 {d}, {x};",
                d = out(reg32) d, x = in(reg32) x,
                options(pure, nomem, nostack, preserves_flags)
            );
        }
        d
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        host::ex2(x)
    }
}

/// `log2(x)`, `lg2.approx.ftz.f32` (`log2(0)` = −inf). Software in the simulator.
#[inline(always)]
pub fn lg2(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let d: f32;
        // SAFETY: pure arithmetic.
        unsafe {
            core::arch::asm!(
                "lg2.approx.ftz.f32 {d}, {x};",
                d = out(reg32) d, x = in(reg32) x,
                options(pure, nomem, nostack, preserves_flags)
            );
        }
        d
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        host::lg2(x)
    }
}

/// `1/x`, `rcp.approx.ftz.f32`. Exact division in the simulator.
#[inline(always)]
pub fn rcp(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let d: f32;
        // SAFETY: pure arithmetic.
        unsafe {
            core::arch::asm!(
                "rcp.approx.ftz.f32 {d}, {x};",
                d = out(reg32) d, x = in(reg32) x,
                options(pure, nomem, nostack, preserves_flags)
            );
        }
        d
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        1.0 / x
    }
}
