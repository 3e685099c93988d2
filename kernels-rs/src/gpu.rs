//! The device primitive layer. Kernels use only these functions, never raw intrinsics, so that a
//! host-side simulator can later implement the same layer.
//!
//! Three codegen facts, measured on an H200 (see `DESIGN.md`), shape this module:
//! - shared memory is addressed with explicit `ld.shared`/`st.shared` on 32-bit shared-window
//!   addresses ([`SharedTile`]); generic pointers into shared memory cost up to 2×;
//! - the block barrier is the non-aligned `barrier.sync 0`, not `bar.sync` (`_syncthreads()`):
//!   LLVM may duplicate a barrier into both arms of a thread-dependent branch, which is undefined
//!   for the `.aligned` form and hung a kernel;
//! - rustc never contracts `a * b + c`: [`fma`] is explicit.
//!
//! Everything that executes PTX exists only on `nvptx64`; the sizes ([`SharedTile::BYTES`],
//! [`Elem::BYTES`]) also exist on the host so the launcher can read them.

use core::marker::PhantomData;

/// An element that kernels move: stored and loaded by bit pattern, so `f16` kernels use `u16`.
pub trait Elem: Copy {
    /// Size in bytes.
    const BYTES: usize;
    /// Load from global memory through the read-only (non-coherent) path, `ld.global.nc`.
    ///
    /// # Safety
    /// `p` must point to a valid, aligned element in global memory that no thread of this
    /// launch writes.
    #[cfg(target_arch = "nvptx64")]
    unsafe fn ld_global_nc(p: *const Self) -> Self;
    /// Store to global memory, `st.global`.
    ///
    /// # Safety
    /// `p` must point to a valid, aligned element in global memory.
    #[cfg(target_arch = "nvptx64")]
    unsafe fn st_global(p: *mut Self, v: Self);
    /// Load from shared memory at a 32-bit shared-window address, `ld.shared`.
    ///
    /// # Safety
    /// `addr` must lie inside the launch's dynamic shared memory and be aligned.
    #[cfg(target_arch = "nvptx64")]
    unsafe fn ld_shared(addr: u32) -> Self;
    /// Store to shared memory at a 32-bit shared-window address, `st.shared`.
    ///
    /// # Safety
    /// `addr` must lie inside the launch's dynamic shared memory and be aligned.
    #[cfg(target_arch = "nvptx64")]
    unsafe fn st_shared(addr: u32, v: Self);
}

macro_rules! impl_elem {
    ($t:ty, $bytes:expr, $ptx:literal, $reg:ident) => {
        impl Elem for $t {
            const BYTES: usize = $bytes;
            #[cfg(target_arch = "nvptx64")]
            #[inline(always)]
            unsafe fn ld_global_nc(p: *const Self) -> Self {
                let v: $t;
                core::arch::asm!(
                    concat!("ld.global.nc.", $ptx, " {v}, [{p}];"),
                    v = out($reg) v, p = in(reg64) p,
                    options(pure, readonly, nostack, preserves_flags)
                );
                v
            }
            #[cfg(target_arch = "nvptx64")]
            #[inline(always)]
            unsafe fn st_global(p: *mut Self, v: Self) {
                core::arch::asm!(
                    concat!("st.global.", $ptx, " [{p}], {v};"),
                    p = in(reg64) p, v = in($reg) v,
                    options(nostack, preserves_flags)
                );
            }
            #[cfg(target_arch = "nvptx64")]
            #[inline(always)]
            unsafe fn ld_shared(addr: u32) -> Self {
                let v: $t;
                core::arch::asm!(
                    concat!("ld.shared.", $ptx, " {v}, [{a}];"),
                    v = out($reg) v, a = in(reg32) addr,
                    options(readonly, nostack, preserves_flags)
                );
                v
            }
            #[cfg(target_arch = "nvptx64")]
            #[inline(always)]
            unsafe fn st_shared(addr: u32, v: Self) {
                core::arch::asm!(
                    concat!("st.shared.", $ptx, " [{a}], {v};"),
                    a = in(reg32) addr, v = in($reg) v,
                    options(nostack, preserves_flags)
                );
            }
        }
    };
}

impl_elem!(f32, 4, "f32", reg32);
impl_elem!(u32, 4, "b32", reg32);
impl_elem!(u16, 2, "b16", reg16);

/// Sixteen bytes moved as one `v4.b32` access: the widest global load/store per thread.
#[derive(Clone, Copy)]
#[repr(C, align(16))]
pub struct Vec16(pub [u32; 4]);

/// Loads 16 bytes through the read-only path, `ld.global.nc.v4.b32`.
///
/// # Safety
/// `p` must be 16-byte aligned and point to 16 readable bytes of global memory that no thread of
/// this launch writes.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn ld_global_nc_v16(p: *const Vec16) -> Vec16 {
    let (a, b, c, d): (u32, u32, u32, u32);
    core::arch::asm!(
        "ld.global.nc.v4.b32 {{{a}, {b}, {c}, {d}}}, [{p}];",
        a = out(reg32) a, b = out(reg32) b, c = out(reg32) c, d = out(reg32) d,
        p = in(reg64) p,
        options(pure, readonly, nostack, preserves_flags)
    );
    Vec16([a, b, c, d])
}

/// Stores 16 bytes, `st.global.v4.b32`.
///
/// # Safety
/// `p` must be 16-byte aligned and point to 16 writable bytes of global memory.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn st_global_v16(p: *mut Vec16, v: Vec16) {
    let [a, b, c, d] = v.0;
    core::arch::asm!(
        "st.global.v4.b32 [{p}], {{{a}, {b}, {c}, {d}}};",
        p = in(reg64) p,
        a = in(reg32) a, b = in(reg32) b, c = in(reg32) c, d = in(reg32) d,
        options(nostack, preserves_flags)
    );
}

macro_rules! special_register {
    ($(#[$doc:meta] $name:ident => $reg:literal;)*) => {$(
        #[$doc]
        #[cfg(target_arch = "nvptx64")]
        #[inline(always)]
        pub fn $name() -> u32 {
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
    )*};
}

special_register! {
    /// `threadIdx.x`
    thread_idx_x => "%tid.x";
    /// `threadIdx.y`
    thread_idx_y => "%tid.y";
    /// `blockIdx.x`
    block_idx_x => "%ctaid.x";
    /// `blockIdx.y`
    block_idx_y => "%ctaid.y";
    /// `blockDim.x`
    block_dim_x => "%ntid.x";
    /// `blockDim.y`
    block_dim_y => "%ntid.y";
    /// `gridDim.x`
    grid_dim_x => "%nctaid.x";
    /// `gridDim.y`
    grid_dim_y => "%nctaid.y";
    /// Lane index within the warp, 0..32.
    lane_id => "%laneid";
}

/// Block-wide barrier: `barrier.sync 0`, the non-aligned form, which stays correct if the
/// compiler duplicates it into divergent branches (see the module docs).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn sync_threads() {
    // SAFETY: a barrier has no memory-safety preconditions; it orders shared-memory accesses,
    // which is why the asm is not marked `nomem`.
    unsafe { core::arch::asm!("barrier.sync 0;", options(nostack, preserves_flags)) }
}

/// Aborts the kernel (`trap`): the launch fails with an error the host reports.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn trap() -> ! {
    // SAFETY: `trap` ends the kernel; nothing follows.
    unsafe { core::arch::asm!("trap;", options(noreturn, nostack)) }
}

/// Fused multiply-add `a * b + c` with a single rounding (`fma.rn.f32`).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn fma(a: f32, b: f32, c: f32) -> f32 {
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

/// Warp shuffle, butterfly: the value of lane `lane ^ mask` (`shfl.sync.bfly.b32`, full warp).
/// Warp-collective: call it from converged code only.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn shfl_xor(v: u32, mask: u32) -> u32 {
    let d: u32;
    // SAFETY: register-only; every lane of the full mask participates.
    unsafe {
        core::arch::asm!(
            "shfl.sync.bfly.b32 {d}, {v}, {m}, 0x1f, 0xffffffff;",
            d = out(reg32) d, v = in(reg32) v, m = in(reg32) mask,
            options(nomem, nostack, preserves_flags)
        );
    }
    d
}

/// Warp shuffle, indexed: the value of lane `src` (`shfl.sync.idx.b32`, full warp).
/// Warp-collective: call it from converged code only.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn shfl_idx(v: u32, src: u32) -> u32 {
    let d: u32;
    // SAFETY: register-only; every lane of the full mask participates.
    unsafe {
        core::arch::asm!(
            "shfl.sync.idx.b32 {d}, {v}, {s}, 0x1f, 0xffffffff;",
            d = out(reg32) d, v = in(reg32) v, s = in(reg32) src,
            options(nomem, nostack, preserves_flags)
        );
    }
    d
}

#[cfg(target_arch = "nvptx64")]
core::arch::global_asm!(".extern .shared .align 16 .b8 SMEM[];");

/// 32-bit shared-window address of the start of the launch's dynamic shared memory.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn dynamic_shared_base() -> u32 {
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

/// A `ROWS × COLS` tile of `T` in dynamic shared memory, row-major, addressed by 32-bit
/// shared-window addresses. `PITCH ≥ COLS` is the row pitch in elements (padding).
///
/// Tiles are carved from the dynamic shared memory in order by [`SharedArena`]; the host sizes
/// the launch's shared bytes from [`SharedTile::BYTES`].
pub struct SharedTile<T, const ROWS: usize, const COLS: usize, const PITCH: usize> {
    #[cfg_attr(not(target_arch = "nvptx64"), allow(dead_code))]
    base: u32,
    _elem: PhantomData<T>,
}

impl<T: Elem, const ROWS: usize, const COLS: usize, const PITCH: usize>
    SharedTile<T, ROWS, COLS, PITCH>
{
    /// Bytes this tile occupies, rounded up to 16 so the next tile stays vector-aligned.
    pub const BYTES: usize = (ROWS * PITCH * T::BYTES).div_ceil(16) * 16;

    /// Shared-window address of element `(row, col)`.
    #[inline(always)]
    pub fn addr(&self, row: u32, col: u32) -> u32 {
        self.base + (row * PITCH as u32 + col) * T::BYTES as u32
    }

    /// Reads element `(row, col)`.
    ///
    /// # Safety
    /// `row < ROWS`, `col < PITCH`, and the launch provided the shared bytes of its arena.
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    pub unsafe fn load(&self, row: u32, col: u32) -> T {
        T::ld_shared(self.addr(row, col))
    }

    /// Writes element `(row, col)`.
    ///
    /// # Safety
    /// As for [`SharedTile::load`].
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    pub unsafe fn store(&self, row: u32, col: u32, v: T) {
        T::st_shared(self.addr(row, col), v)
    }
}

/// Carves the launch's dynamic shared memory into tiles, in declaration order.
pub struct SharedArena {
    #[cfg_attr(not(target_arch = "nvptx64"), allow(dead_code))]
    next: u32,
}

impl SharedArena {
    /// The arena over this launch's dynamic shared memory.
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    pub fn new() -> Self {
        Self {
            next: dynamic_shared_base(),
        }
    }

    /// Takes the next tile. The host must launch with at least the sum of the tiles' `BYTES`.
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    pub fn tile<T: Elem, const ROWS: usize, const COLS: usize, const PITCH: usize>(
        &mut self,
    ) -> SharedTile<T, ROWS, COLS, PITCH> {
        let base = self.next;
        self.next += SharedTile::<T, ROWS, COLS, PITCH>::BYTES as u32;
        SharedTile {
            base,
            _elem: PhantomData,
        }
    }
}
