//! Implicit-GEMM convolution on `mma.sync.m16n8k16` + `ldmatrix` with a `cp.async` ring: the
//! sm_80 path (f16/bf16 in and out, f32 accumulation, bias + ReLU fused).
//!
//! - **As a GEMM**: rows are output pixels `m = (n, p, q)`, columns output channels `k`, the
//!   reduction runs over the filter taps `(r, s)` and, inside each tap, the input channels
//!   `c` in chunks of [`BK`]. NHWC makes the `BK` channels of one pixel and tap 64 contiguous
//!   bytes, and KRSC the same for one output channel: both operands are k-contiguous rows,
//!   read by plain `ldmatrix` (the GEMM's transposed-B case).
//! - **Tile** [`BM`] × [`BN`] × [`BK`] per block of eight warps (2 × 4), each 64 × 32 of the
//!   output (four m16 by four n8 tiles, 64 f32 accumulators per lane), [`STAGES`] stages of
//!   16 KiB: 64 KiB of shared memory. The mainloop is the shared [`mainloop::run`]
//!   (fragments one k16 step ahead, the barrier before the last step of each stage); this file
//!   supplies the stage loads.
//! - **Per-tap address iterators** ([`TapChunks`], record `mma`): each thread copies two
//!   16-byte chunks of A and two of B per stage, always the same chunk column. Once per block
//!   it turns its two output pixels into `(n, ih0, iw0)` and the element offset of
//!   `x[n][ih0][iw0]`; per stage it only adds the tap's offset `(r·dil_h·W + s·dil_w)·C + c0`
//!   (uniform, stepped as the taps advance) and tests `0 ≤ ih0 + r·dil_h < H` and
//!   `0 ≤ iw0 + s·dil_w < W`. A tap in the padding, a pixel past `N·P·Q`, a channel chunk past
//!   `C` (the last chunk of a tap when `BK ∤ C`) or an output channel past `K` is a
//!   zero-filling `cp.async` (`src-size` 0): no branch, so a stage's copies are one basic
//!   block with the `mma`s. Needs `C` a multiple of 8 (16-byte channel rows).
//! - **Element loads** ([`Elements`], record `mma_any`): any `C` (the C = 3 stem). The
//!   reduction is the flat `R·S·C` index, `BK` at a time, so a small `C` wastes no `mma`s on
//!   zero channels; each thread fills 16 consecutive reduction columns of one A row and one B
//!   row per stage with 16-bit loads (zeros outside), stepping `(r, s, c)` by one, and stores
//!   them as two 16-byte chunks. Same mainloop, same tile.
//! - **Epilogue**: `y` is the row-major `N·P·Q × K` matrix (`ldc = K`), stored through the
//!   shared [`Epilogue`] (bias, ReLU, rounding to the output type, pairs when `K` is even).
//! - **Bound**: per warp and k16 step, six `ldmatrix.x4` (3 KiB) feed 16 `mma`s (65.5 kflop):
//!   21 flop per byte of shared-memory reads, plus the `cp.async` writes (16 KiB per stage
//!   for 2 × 4 × 16 `mma`s per warp): ~18 flop/byte in all. At 128 bytes per clock per SM
//!   that caps it near 0.9 of `mma.sync`'s ~650 TFLOP/s on the H200; the tile's input reuse
//!   (BM + BN = 256 rows per 128 × 128 outputs) keeps DRAM and L2 far from binding at the
//!   ResNet-50 shapes. `notes/conv-mma.md` has the per-layer prediction.

use super::Geom;
use crate::gpu::{self, Elem, Vec16};
use crate::tc::mainloop::{self, Stage, StageLoader};
use crate::tc::{Epilogue, TcIn, TcOut};

/// Output pixels per block.
pub const BM: u32 = 128;
/// Output channels per block.
pub const BN: u32 = 128;
/// Reduction elements (channels of one tap, for `mma`) per stage.
pub const BK: u32 = 32;
/// Warps along M and N.
pub const WARPS: (u32, u32) = (2, 4);
/// Ring depth.
pub const STAGES: u32 = 4;
/// Threads.
pub const THREADS: u32 = 32 * WARPS.0 * WARPS.1;
/// Dynamic shared bytes.
pub const SHARED_BYTES: usize = mainloop::shared_bytes(BM, BN, BK, STAGES);

/// `ih0` of a row past the output: no tap reaches the image from it (`ih0 + r·dil_h` stays
/// negative for every `r·dil_h < 2³⁰`), so every load of the row is zero-filled.
const NO_ROW: i32 = i32::MIN / 2;

/// The output pixel of row `m` as `(ih0, iw0, offset)`: the input position of tap (0, 0) and
/// the element offset of `x[n][ih0][iw0][0]`, which may lie in the padding (negative, or past
/// the row); `(NO_ROW, 0, 0)` past the output.
#[inline(always)]
fn pixel_origin(g: &Geom, m: u32) -> (i32, i32, i64) {
    if m >= g.rows() {
        return (NO_ROW, 0, 0);
    }
    let (n, p, q) = g.pixel(m);
    let ih0 = (p * g.stride_h) as i32 - g.pad_h as i32;
    let iw0 = (q * g.stride_w) as i32 - g.pad_w as i32;
    let off = ((n as i64 * g.h as i64 + ih0 as i64) * g.w as i64 + iw0 as i64) * g.c as i64;
    (ih0, iw0, off)
}

/// The reduction column after `(r, s, c)`.
#[inline(always)]
fn next_column(g: &Geom, (r, s, c): (u32, u32, u32)) -> (u32, u32, u32) {
    if c + 1 < g.c {
        (r, s, c + 1)
    } else if s + 1 < g.s {
        (r, s + 1, 0)
    } else {
        (r + 1, 0, 0)
    }
}

/// Whether input `(ih, iw)` lies inside the image (one unsigned compare per coordinate).
#[inline(always)]
fn inside(g: &Geom, ih: i32, iw: i32) -> bool {
    (ih as u32) < g.h && (iw as u32) < g.w
}

/// A stage loader of this file: built per thread for one output tile, it knows how many
/// stages the reduction takes.
pub trait ConvLoader: StageLoader {
    /// This thread's iterators for the block at output tile `(m0, n0)`.
    fn new(x: *const u16, w: *const u16, g: Geom, m0: u32, n0: u32) -> Self;
    /// Stages in the reduction.
    fn stages(g: &Geom) -> u32;
}

/// The `mma` record's stage loads: per-tap address iterators and zero-filling `cp.async`
/// (see the module docs). Each thread owns chunk column `ch` of A rows `row0 + i·(T / kc)`
/// and of B rows likewise.
pub struct TapChunks<const BM_: u32, const BN_: u32, const BK_: u32, const WM: u32, const WN: u32> {
    x: *const u16,
    w: *const u16,
    g: Geom,
    /// This thread's 16-byte chunk column (of `BK_ / 8`).
    ch: u32,
    /// This thread's first A and B row in the tile.
    row0: u32,
    /// Per A row: the pixel's `ih0`, `iw0` and the offset of `x[n][ih0][iw0][8·ch]`.
    ih0: [i32; 8],
    iw0: [i32; 8],
    a_off: [i64; 8],
    /// Per B row: the offset of `w[k][0][0][8·ch]`, and whether `k < K`.
    b_off: [u64; 8],
    b_ok: [bool; 8],
    /// The stage's first channel and tap `(r, s)`: `s`, `r·dil_h`, `s·dil_w`, and the tap's
    /// offsets in x (`(r·dil_h·W + s·dil_w)·C`) and w (`(r·S + s)·C`).
    c0: u32,
    s: u32,
    rdh: i32,
    sdw: i32,
    x_tap: i64,
    w_tap: u64,
}

impl<const BM_: u32, const BN_: u32, const BK_: u32, const WM: u32, const WN: u32>
    TapChunks<BM_, BN_, BK_, WM, WN>
{
    const KC: u32 = BK_ / 8;
    const T: u32 = 32 * WM * WN;
    /// A and B chunks per thread and stage.
    const AR: u32 = BM_ * Self::KC / Self::T;
    const BR: u32 = BN_ * Self::KC / Self::T;
    /// Rows between one thread's chunks.
    const STEP: u32 = Self::T / Self::KC;
    /// The configuration gives every thread the same number of whole chunks (at most 8) of A
    /// and of B.
    const FITS: () = assert!(
        Self::T.is_multiple_of(Self::KC)
            && (BM_ * Self::KC).is_multiple_of(Self::T)
            && (BN_ * Self::KC).is_multiple_of(Self::T)
            && Self::AR <= 8
            && Self::BR <= 8
    );
}

impl<const BM_: u32, const BN_: u32, const BK_: u32, const WM: u32, const WN: u32> ConvLoader
    for TapChunks<BM_, BN_, BK_, WM, WN>
{
    #[inline(always)]
    fn new(x: *const u16, w: *const u16, g: Geom, m0: u32, n0: u32) -> Self {
        #[allow(clippy::let_unit_value)]
        let () = Self::FITS;
        let t = gpu::thread_idx_x();
        let (row0, ch) = (t / Self::KC, t % Self::KC);
        let mut ih0 = [0i32; 8];
        let mut iw0 = [0i32; 8];
        let mut a_off = [0i64; 8];
        crate::unroll!(8, i, {
            if (i as u32) < Self::AR {
                let (h0, w0, off) = pixel_origin(&g, m0 + row0 + Self::STEP * i as u32);
                ih0[i] = h0;
                iw0[i] = w0;
                a_off[i] = off + 8 * ch as i64;
            }
        });
        let mut b_off = [0u64; 8];
        let mut b_ok = [false; 8];
        crate::unroll!(8, i, {
            if (i as u32) < Self::BR {
                let k = n0 + row0 + Self::STEP * i as u32;
                b_ok[i] = k < g.k;
                b_off[i] = k as u64 * g.red() as u64 + 8 * ch as u64;
            }
        });
        Self {
            x,
            w,
            g,
            ch,
            row0,
            ih0,
            iw0,
            a_off,
            b_off,
            b_ok,
            c0: 0,
            s: 0,
            rdh: 0,
            sdw: 0,
            x_tap: 0,
            w_tap: 0,
        }
    }

    /// Every tap, `⌈C / BK⌉` channel chunks each.
    #[inline(always)]
    fn stages(g: &Geom) -> u32 {
        g.r * g.s * g.c.div_ceil(BK_)
    }
}

impl<const BM_: u32, const BN_: u32, const BK_: u32, const WM: u32, const WN: u32> StageLoader
    for TapChunks<BM_, BN_, BK_, WM, WN>
{
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn load_next(&mut self, st: Stage) {
        let g = self.g;
        let c_ok = self.c0 + 8 * self.ch < g.c;
        crate::unroll!(8, i, {
            if (i as u32) < Self::AR {
                let ok = c_ok && inside(&g, self.ih0[i] + self.rdh, self.iw0[i] + self.sdw);
                let at = self.a_off[i] + self.x_tap + self.c0 as i64;
                // Off the image the copy reads nothing; its address is x's base all the same.
                let src = if ok {
                    self.x.wrapping_offset(at as isize)
                } else {
                    self.x
                };
                let dst = st.a.chunk(self.row0 + Self::STEP * i as u32, self.ch);
                gpu::cp_async_16_zfill(dst, src as *const Vec16, 16 * ok as u32);
            }
        });
        crate::unroll!(8, i, {
            if (i as u32) < Self::BR {
                let ok = c_ok && self.b_ok[i];
                let at = self.b_off[i] + self.w_tap + self.c0 as u64;
                let src = if ok {
                    self.w.wrapping_add(at as usize)
                } else {
                    self.w
                };
                let dst = st.b.chunk(self.row0 + Self::STEP * i as u32, self.ch);
                gpu::cp_async_16_zfill(dst, src as *const Vec16, 16 * ok as u32);
            }
        });
        // The next stage: the next channel chunk, or the first of the next tap.
        self.c0 += BK_;
        if self.c0 >= g.c {
            self.c0 = 0;
            self.w_tap += g.c as u64;
            self.s += 1;
            if self.s < g.s {
                self.sdw += g.dil_w as i32;
                self.x_tap += g.dil_w as i64 * g.c as i64;
            } else {
                self.s = 0;
                self.sdw = 0;
                self.rdh += g.dil_h as i32;
                self.x_tap = self.rdh as i64 * g.w as i64 * g.c as i64;
            }
        }
    }
}

/// The `mma_any` record's stage loads: 16-bit element loads over the flat `R·S·C` reduction
/// (see the module docs). Thread `t` fills columns `part·CPT ..` of A row `t mod BM` and of B
/// row `t mod BN`, `CPT = BK·BM / T` (16) at a time.
pub struct Elements<const BM_: u32, const BN_: u32, const BK_: u32, const WM: u32, const WN: u32> {
    x: *const u16,
    w: *const u16,
    g: Geom,
    /// The A row's pixel: `ih0`, `iw0` and the offset of `x[n][ih0][iw0][0]`.
    ih0: i32,
    iw0: i32,
    a_off: i64,
    /// The B row's offset `k·R·S·C`, and whether `k < K`.
    b_off: u64,
    b_ok: bool,
    /// The stage's first reduction index.
    kk0: u32,
}

impl<const BM_: u32, const BN_: u32, const BK_: u32, const WM: u32, const WN: u32>
    Elements<BM_, BN_, BK_, WM, WN>
{
    const T: u32 = 32 * WM * WN;
    /// Columns per thread and stage, for A and for B.
    const CPT_A: u32 = BK_ * BM_ / Self::T;
    const CPT_B: u32 = BK_ * BN_ / Self::T;
    /// The configuration gives every thread whole 16-byte chunks of one row (at most 16
    /// columns), of A and of B.
    const FITS: () = assert!(
        Self::T.is_multiple_of(BM_)
            && Self::T.is_multiple_of(BN_)
            && Self::CPT_A.is_multiple_of(8)
            && Self::CPT_B.is_multiple_of(8)
            && Self::CPT_A <= 16
            && Self::CPT_B <= 16
    );
}

impl<const BM_: u32, const BN_: u32, const BK_: u32, const WM: u32, const WN: u32> ConvLoader
    for Elements<BM_, BN_, BK_, WM, WN>
{
    #[inline(always)]
    fn new(x: *const u16, w: *const u16, g: Geom, m0: u32, n0: u32) -> Self {
        #[allow(clippy::let_unit_value)]
        let () = Self::FITS;
        let t = gpu::thread_idx_x();
        let (ih0, iw0, a_off) = pixel_origin(&g, m0 + t % BM_);
        let k = n0 + t % BN_;
        Self {
            x,
            w,
            g,
            ih0,
            iw0,
            a_off,
            b_off: k as u64 * g.red() as u64,
            b_ok: k < g.k,
            kk0: 0,
        }
    }

    /// `⌈R·S·C / BK⌉`.
    #[inline(always)]
    fn stages(g: &Geom) -> u32 {
        g.red().div_ceil(BK_)
    }
}

impl<const BM_: u32, const BN_: u32, const BK_: u32, const WM: u32, const WN: u32> StageLoader
    for Elements<BM_, BN_, BK_, WM, WN>
{
    // The last unrolled column's step is never read.
    #[allow(unused_assignments)]
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn load_next(&mut self, st: Stage) {
        let g = self.g;
        let t = gpu::thread_idx_x();
        // A: columns kk .. kk + CPT_A of the pixel's row, with (r, s, c) of kk from two
        // divisions and then stepped by one.
        let part = t / BM_;
        let kk = self.kk0 + part * Self::CPT_A;
        let tap = kk / g.c;
        let mut r = tap / g.s;
        let (mut s, mut c) = (tap - r * g.s, kk - tap * g.c);
        let mut words = [0u32; 8];
        crate::unroll!(16, e, {
            if (e as u32) < Self::CPT_A {
                let (rdh, sdw) = (r * g.dil_h, s * g.dil_w);
                if r < g.r && inside(&g, self.ih0 + rdh as i32, self.iw0 + sdw as i32) {
                    let at =
                        self.a_off + (rdh as i64 * g.w as i64 + sdw as i64) * g.c as i64 + c as i64;
                    let v = u16::ld_global_nc(self.x.wrapping_offset(at as isize));
                    words[e / 2] |= (v as u32) << (16 * (e % 2));
                }
                (r, s, c) = next_column(&g, (r, s, c));
            }
        });
        crate::unroll!(2, j, {
            if (8 * j as u32) < Self::CPT_A {
                let w4 = [
                    words[4 * j],
                    words[4 * j + 1],
                    words[4 * j + 2],
                    words[4 * j + 3],
                ];
                st.a.store_chunk(t % BM_, part * Self::CPT_A / 8 + j as u32, w4);
            }
        });
        // B: columns kk .. kk + CPT_B of output channel k's row, contiguous in KRSC.
        let part = t / BN_;
        let kk = self.kk0 + part * Self::CPT_B;
        let red = g.red();
        let mut words = [0u32; 8];
        crate::unroll!(16, e, {
            if (e as u32) < Self::CPT_B && self.b_ok && kk + (e as u32) < red {
                let at = self.b_off + (kk + e as u32) as u64;
                let v = u16::ld_global_nc(self.w.wrapping_add(at as usize));
                words[e / 2] |= (v as u32) << (16 * (e % 2));
            }
        });
        crate::unroll!(2, j, {
            if (8 * j as u32) < Self::CPT_B {
                let w4 = [
                    words[4 * j],
                    words[4 * j + 1],
                    words[4 * j + 2],
                    words[4 * j + 3],
                ];
                st.b.store_chunk(t % BN_, part * Self::CPT_B / 8 + j as u32, w4);
            }
        });
        self.kk0 += BK_;
    }
}

/// The kernel body for one tile configuration and loader `L` ([`TapChunks`] or [`Elements`]
/// of the same configuration): `BM_ × BN_ × BK_` per block, `WM × WN` warps, an `ST`-stage
/// ring.
///
/// # Safety
/// Launched with `32 · WM · WN` threads and [`mainloop::shared_bytes`] of shared memory over
/// the grid `(⌈K / BN_⌉, ⌈N·P·Q / BM_⌉)`; the arguments are the family's (checked by the
/// host's `Problem::check`), the buffers hold x (NHWC), w (KRSC), y (NHWC) and bias (`K` f32
/// or null); for [`TapChunks`], x and w are 16-byte aligned and `C` is a multiple of 8.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn conv_mma_cfg<
    I: TcIn,
    O: TcOut,
    L: ConvLoader,
    const BM_: u32,
    const BN_: u32,
    const BK_: u32,
    const WM: u32,
    const WN: u32,
    const ST: u32,
>(
    x: *const u16,
    w: *const u16,
    bias: *const f32,
    y: *mut O::Store,
    n: u32,
    h: u32,
    w_: u32,
    c: u32,
    k: u32,
    rs: u32,
    pq: u32,
    stride: u32,
    pad: u32,
    dil: u32,
    relu: u32,
) {
    let g = Geom::new(n, h, w_, c, k, rs, pq, stride, pad, dil);
    // Block (x, y) computes output tile (y, x): the K tiles of one pixel tile run together and
    // share its activations in L2.
    let (m0, n0) = (gpu::block_idx_y() * BM_, gpu::block_idx_x() * BN_);
    let mut ld = L::new(x, w, g, m0, n0);
    let acc = mainloop::run::<I, L, BM_, BN_, BK_, WM, WN, ST>(&mut ld, L::stages(&g));
    let epi = Epilogue::<O> {
        c: y,
        ldc: g.k,
        m: g.rows(),
        n: g.k,
        alpha: 1.0,
        beta: 0.0,
        bias,
        relu,
    };
    mainloop::store::<O, BM_, BN_, WM, WN>(&epi, &acc, m0, n0);
}

macro_rules! config {
    ($name:ident => $loader:ident, $bm:expr, $bn:expr, $bk:expr, $wm:expr, $wn:expr, $st:expr) => {
        /// One loader and tile configuration of [`conv_mma_cfg`].
        ///
        /// # Safety
        /// As for [`conv_mma_cfg`].
        #[allow(clippy::too_many_arguments)]
        #[inline(always)]
        #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
        pub unsafe fn $name<I: TcIn, O: TcOut>(
            x: *const u16,
            w: *const u16,
            bias: *const f32,
            y: *mut O::Store,
            n: u32,
            h: u32,
            w_: u32,
            c: u32,
            k: u32,
            rs: u32,
            pq: u32,
            stride: u32,
            pad: u32,
            dil: u32,
            relu: u32,
        ) {
            conv_mma_cfg::<
                I,
                O,
                $loader<{ $bm }, { $bn }, { $bk }, { $wm }, { $wn }>,
                { $bm },
                { $bn },
                { $bk },
                { $wm },
                { $wn },
                { $st },
            >(
                x, w, bias, y, n, h, w_, c, k, rs, pq, stride, pad, dil, relu,
            )
        }
    };
}

config!(conv_mma => TapChunks, BM, BN, BK, WARPS.0, WARPS.1, STAGES);
config!(conv_mma_any => Elements, BM, BN, BK, WARPS.0, WARPS.1, STAGES);

/// Registry record: per-tap `cp.async` iterators (C a multiple of 8).
pub const INFO: crate::registry::KernelInfo = crate::registry::KernelInfo {
    family: super::FAMILY,
    name: "mma",
    needs: crate::registry::Needs::ALIGN16,
    block: (THREADS, 1, 1),
    launch: crate::registry::Launch::Tiles {
        tile: (BM, BN),
        halo_rows: 0,
    },
    shared_bytes_f16: SHARED_BYTES,
    symbols: SYMBOLS,
    about: "implicit GEMM: mma.sync + ldmatrix, cp.async ring with per-tap zero-filling iterators (NHWC, C % 8 = 0, sm_80+)",
    ..crate::registry::KernelInfo::BASE
};

/// Registry record: element loads over the flat `R·S·C` reduction (any C).
pub const INFO_ANY: crate::registry::KernelInfo = crate::registry::KernelInfo {
    name: "mma_any",
    needs: crate::registry::Needs::NONE,
    symbols: SYMBOLS_ANY,
    about: "implicit GEMM: mma.sync + ldmatrix, element loads over the flat R·S·C reduction (NHWC, any C, sm_80+)",
    ..INFO
};

crate::entry_points! {
    pub const SYMBOLS;
    fn conv_mma(x: *const u16, w: *const u16, bias: *const f32, y: *mut <O as crate::tc::TcOut>::Store, n: u32, h: u32, w_: u32, c: u32, k: u32, rs: u32, pq: u32, stride: u32, pad: u32, dil: u32, relu: u32);
    conv_mma_f16 => (F16, F16, Nhwc) [I = crate::tc::F16, O = crate::tc::OutF16];
    conv_mma_bf16 => (Bf16, Bf16, Nhwc) [I = crate::tc::Bf16, O = crate::tc::OutBf16];
}

crate::entry_points! {
    pub const SYMBOLS_ANY;
    fn conv_mma_any(x: *const u16, w: *const u16, bias: *const f32, y: *mut <O as crate::tc::TcOut>::Store, n: u32, h: u32, w_: u32, c: u32, k: u32, rs: u32, pq: u32, stride: u32, pad: u32, dil: u32, relu: u32);
    conv_mma_any_f16 => (F16, F16, Nhwc) [I = crate::tc::F16, O = crate::tc::OutF16];
    conv_mma_any_bf16 => (Bf16, Bf16, Nhwc) [I = crate::tc::Bf16, O = crate::tc::OutBf16];
}

/// A tuning configuration of the `mma` record: 128 × 64 tiles (2 × 2 warps of 64 × 32, four
/// stages, 48 KiB), for `K ≤ 64` (the ResNet-50 stage-1 layers), where a 128-wide tile would
/// compute half zeros. Picked by an explicit option, not by the dispatcher.
pub mod n64 {
    use super::*;

    /// Output pixels per block.
    pub const BM: u32 = 128;
    /// Output channels per block.
    pub const BN: u32 = 64;
    /// Warps along M and N.
    pub const WARPS: (u32, u32) = (2, 2);
    config!(body => TapChunks, BM, BN, super::BK, WARPS.0, WARPS.1, super::STAGES);

    /// Registry record.
    pub const INFO: crate::registry::KernelInfo = crate::registry::KernelInfo {
        name: "mma_n64",
        role: crate::registry::Role::Tuning,
        block: (32 * WARPS.0 * WARPS.1, 1, 1),
        launch: crate::registry::Launch::Tiles {
            tile: (BM, BN),
            halo_rows: 0,
        },
        shared_bytes_f16: mainloop::shared_bytes(BM, BN, super::BK, super::STAGES),
        symbols: SYMBOLS,
        about: "mma tuning: 128×64 tiles, 2×2 warps (narrow K)",
        ..super::INFO
    };

    crate::entry_points! {
        pub const SYMBOLS;
        fn body(x: *const u16, w: *const u16, bias: *const f32, y: *mut <O as crate::tc::TcOut>::Store, n: u32, h: u32, w_: u32, c: u32, k: u32, rs: u32, pq: u32, stride: u32, pad: u32, dil: u32, relu: u32);
        conv_mma_n64_f16 => (F16, F16, Nhwc) [I = crate::tc::F16, O = crate::tc::OutF16];
        conv_mma_n64_bf16 => (Bf16, Bf16, Nhwc) [I = crate::tc::Bf16, O = crate::tc::OutBf16];
    }
}
