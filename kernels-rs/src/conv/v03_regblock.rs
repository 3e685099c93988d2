//! Register-blocked implicit GEMM: the output `N·P·Q × K` matrix in 128×64 block tiles, 8×8
//! outputs per lane, the im2col rows of `x` gathered on the fly into shared memory by
//! `cp.async`, two groups of four warps splitting every k-tile (the SGEMM `kgroup_ring`'s
//! structure, `gemm/v12_kgroup_ring.rs`, on `v08`'s 8×8 lane block).
//!
//! **The reduction** runs over k-tiles of 32: one filter tap × a window of `CW` input channels
//! (`CW` = 32, or for `C < 32` the next power of two ≥ `C`, at least 4, with `32 / CW` taps per
//! k-tile). Channel blocks are the outer loop and taps the inner one, so consecutive k-tiles
//! read neighbouring input pixels of the same 32 channels (L1 hits through `cp.async.ca`).
//! Slots past the last channel or tap are zeros in both operands: `C` = 32·j computes no zero,
//! other `C` waste at most `(CW − C mod CW) / C` of the work.
//!
//! **Operands in shared memory** (a 3-stage ring, one barrier per k-tile):
//! - NHWC: A row-major `[128][32 + 4]`: a 16-byte copy is 4 channels of one pixel at one tap;
//!   a lane's 8 rows are `lr + 8i` of its warp tile and one `ld.shared.v4` gives a row's 4
//!   consecutive k (pitch 36: the 8 rows of one load fall in different bank quads);
//! - NCHW: A k-major `[32][128]`: one 4-byte copy per element, consecutive threads on
//!   consecutive pixels (consecutive input columns), and the lane's rows are `4·lr + 0..4` and
//!   `32 + 4·lr + 0..4`, two `ld.shared.v4` per k;
//! - B (weights) n-major `[64][32 + 4]`: KRSC rows are contiguous in `(r, s, c)` (16-byte
//!   copies), KCRS rows are gathered element by element (`R·S` apart). A lane's columns are
//!   `lc + 4j`, one `ld.shared.v4` per column gives 4 consecutive k.
//!
//! Per 4 k-steps a lane issues 16 `ld.shared.v4` for 256 FMAs (v08's 4 per 64). `C` not a
//! multiple of 4, or unaligned buffers, take 4-byte copies (any `C`, `K`, `N`, `H`, `W`,
//! stride, padding, dilation, filter 1–7). Each group sums 16 of each k-tile's 32; at the end
//! group 1 hands its partial tile to group 0 through the idle ring, and group 0 adds the bias,
//! applies ReLU and stores (NCHW: 16-byte stores along the pixels where `P·Q` is a multiple of
//! 4).
//!
//! **Split-K** (the grid's z, chosen by the host where the tiles leave the last wave of SMs
//! part-empty: the 14² and 7² ResNet layers): part `z` of `nz` reduces a contiguous range of
//! the k-tiles and stores raw f32 partial sums in y's layout into a workspace, and
//! `combine::combine_f32` adds the parts in order, the bias and the activation (deterministic).
//!
//! **Bound**: per k-tile 128·64·32 FMAs for (128 + 64)·32 floats from L1/L2; the FMA issue rate
//! of one 8-warp block per SM, as for the SGEMM at small sizes. Shared: 3 × 27 KiB = 81 KiB.

// The integer forms `(a + b - 1) / b` and `a % n == 0` are kept as this file was validated
// and timed on the H200 (2026-12-01): clippy's `div_ceil` / `is_multiple_of` rewrites give
// the same values but different PTX, which no GPU has run yet.
#![allow(clippy::manual_div_ceil, clippy::manual_is_multiple_of)]

use super::{activate, Geom};
use crate::gpu::{self, Elem};
use crate::registry::{KernelInfo, Launch};

/// Output tile per block, `(pixels, channels)`.
pub const TILE: (u32, u32) = (128, 64);
/// Warp tile `(pixels, channels)`: 8×8 per lane.
const WARP_TILE: (u32, u32) = (64, 32);
/// Warps per k-group.
const GROUP_WARPS: u32 = (TILE.0 / WARP_TILE.0) * (TILE.1 / WARP_TILE.1);
/// K-groups: each takes `KSTEP` of every k-tile.
pub const KG: u32 = 2;
/// K rows each group takes of every k-tile.
const KSTEP: u32 = 16;
/// K-tile depth.
pub const BK: u32 = KSTEP * KG;
/// Threads per block.
pub const THREADS: u32 = 32 * GROUP_WARPS * KG;
/// Ring depth.
pub const STAGES: u32 = 3;
/// Row pitch (floats) of the row-major A tile (NHWC) and of the B tile: a multiple of 4 whose
/// quarter is odd.
const PITCH: u32 = BK + 4;
/// Row pitch of the k-major A tile (NCHW).
const PITCH_K: u32 = TILE.0;
/// Floats of the A tile (either layout).
const A_FLOATS: u32 = if TILE.0 * PITCH > BK * PITCH_K {
    TILE.0 * PITCH
} else {
    BK * PITCH_K
};
/// Bytes of one ring stage: A, then B.
const STAGE_BYTES: u32 = (A_FLOATS + TILE.1 * PITCH) * 4;
/// A row index no input row is: `(OUTSIDE + offset) as u32` is never below `h`.
const OUTSIDE: i32 = -(1 << 30);

/// Dynamic shared bytes: the ring (group 1's partial tile, 32 KiB, reuses it).
pub const fn shared_bytes() -> usize {
    let ring = STAGES * STAGE_BYTES;
    let red = TILE.0 * TILE.1 * 4;
    (if ring > red { ring } else { red }) as usize
}

/// Registry entry.
pub const INFO: KernelInfo = KernelInfo {
    family: super::FAMILY,
    name: "regblock",
    block: (THREADS, 1, 1),
    launch: Launch::Tiles {
        tile: TILE,
        halo_rows: 0,
    },
    shared_bytes_f32: shared_bytes(),
    symbols: SYMBOLS,
    about: "implicit GEMM 128x64x32, 8x8 per lane, cp.async im2col ring, 2 k-groups",
    bounds: Some((THREADS, 1)),
    ..KernelInfo::BASE
};

/// `cp.async.ca` of 16 bytes (cached in L1: neighbouring taps re-read the same pixels).
///
/// # Safety
/// `src` 16 readable, 16-byte-aligned bytes of global memory no thread writes; `dst` 16 bytes
/// of the launch's shared memory, 16-byte aligned.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
unsafe fn cp_async_ca_16(dst: u32, src: *const f32) {
    #[cfg(target_arch = "nvptx64")]
    core::arch::asm!(
        "cp.async.ca.shared.global [{d}], [{s}], 16;",
        d = in(reg32) dst, s = in(reg64) src,
        options(nostack, preserves_flags)
    );
    #[cfg(not(target_arch = "nvptx64"))]
    gpu::host::current().cp_async(dst, src as u64, 16, core::panic::Location::caller());
}

/// `cp.async.ca` of one f32.
///
/// # Safety
/// `src` a readable f32 of global memory no thread writes; `dst` 4 bytes of the launch's shared
/// memory, 4-byte aligned.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
unsafe fn cp_async_4(dst: u32, src: *const f32) {
    #[cfg(target_arch = "nvptx64")]
    core::arch::asm!(
        "cp.async.ca.shared.global [{d}], [{s}], 4;",
        d = in(reg32) dst, s = in(reg64) src,
        options(nostack, preserves_flags)
    );
    #[cfg(not(target_arch = "nvptx64"))]
    gpu::host::current().cp_async(dst, src as u64, 4, core::panic::Location::caller());
}

/// The k-tiles' shape: a window of `cw = 1 << cwl` channels × `tpk` taps.
#[derive(Clone, Copy)]
struct KTiles {
    cw: u32,
    cwl: u32,
    tpk: u32,
    /// Tap groups per channel block.
    groups: u32,
    /// k-tiles in all.
    count: u32,
}

/// The channel window of a k-tile for `c` input channels: 32, or for `c < 32` the next power
/// of two ≥ `c`, at least 4.
pub const fn channel_window(c: u32) -> u32 {
    if c >= BK {
        BK
    } else {
        let p = c.next_power_of_two();
        if p < 4 {
            4
        } else {
            p
        }
    }
}

/// The k-tiles of the reduction for `c` channels and `taps = R·S` filter taps (what the host's
/// split-K choice counts): `⌈c / cw⌉ · ⌈taps / (32 / cw)⌉`.
pub const fn k_tiles(c: u32, taps: u32) -> u32 {
    let cw = channel_window(c);
    c.div_ceil(cw) * taps.div_ceil(BK / cw)
}

impl KTiles {
    #[inline(always)]
    fn of(g: &Geom) -> Self {
        let cw = channel_window(g.c);
        let cwl = cw.trailing_zeros();
        let tpk = BK >> cwl;
        let groups = (g.r * g.s).div_ceil(tpk);
        KTiles {
            cw,
            cwl,
            tpk,
            groups,
            count: g.c.div_ceil(cw) * groups,
        }
    }

    /// Tap and channel of slot `kk` (< 32) of the k-tile `(cb, tg)`.
    #[inline(always)]
    fn at(&self, cb: u32, tg: u32, kk: u32) -> (u32, u32) {
        (
            tg * self.tpk + (kk >> self.cwl),
            cb * self.cw + (kk & (self.cw - 1)),
        )
    }
}

/// One thread's share of the operand copies, and what it needs to form their addresses.
///
/// NHWC: A chunks at rows `t/8 + 32l` (`l` < 4), k slots `4·(t % 8) .. + 4`; B chunks at rows
/// `t/8 + 32l` (`l` < 2), the same slots. NCHW: A elements at row `t % 128`, slots
/// `t/128 + 2l` (`l` < 16); B elements at rows `t/32 + 8l` (`l` < 8), slot `t % 32`. `VEC`
/// (NHWC, `C` a multiple of 4, 16-byte-aligned x and w): each chunk is one 16-byte copy, else
/// four 4-byte ones.
struct Gather<const NCHW: bool, const VEC: bool> {
    x: *const f32,
    w: *const f32,
    g: Geom,
    /// `⌈2¹⁶ / S⌉`: `tap · s_inv >> 16` is `tap / S` for every tap index here.
    s_inv: u32,
    /// This thread's k slot: `4·(t % 8)` (NHWC), `t / 128` (NCHW A), `t % 32` (NCHW B).
    slot_a: u32,
    slot_b: u32,
    /// Byte offsets of this thread's first A and B destinations within a stage.
    dst_a: u32,
    dst_b: u32,
    /// Output channel of this thread's first B row.
    k_b: u32,
    /// Input row and column of tap (0, 0) for each A row (`OUTSIDE` past the last pixel).
    ih0: [i32; 4],
    iw0: [i32; 4],
    /// NHWC: offset of `x[n][ih0][iw0][0]` (may be negative); NCHW: of `x[n][0][0][0]`.
    pix: [i64; 4],
}

impl<const NCHW: bool, const VEC: bool> Gather<NCHW, VEC> {
    /// A rows this thread copies.
    const A_ROWS: usize = if NCHW { 1 } else { 4 };
    /// B rows this thread copies, and the distance between them.
    const B_ROWS: u32 = if NCHW { 8 } else { 2 };
    const B_STEP: u32 = THREADS / (BK / Self::B_SLOTS);
    /// k slots of one B (and NHWC A) copy.
    const B_SLOTS: u32 = if NCHW { 1 } else { 4 };

    #[inline(always)]
    fn new(x: *const f32, w: *const f32, g: &Geom, t: u32, row0: u32, col0: u32) -> Self {
        let (slot_a, row_a) = if NCHW {
            (t / TILE.0, t % TILE.0)
        } else {
            ((t % 8) * 4, t / 8)
        };
        let (slot_b, row_b) = if NCHW {
            (t % BK, t / BK)
        } else {
            ((t % 8) * 4, t / 8)
        };
        let dst_a = if NCHW {
            (slot_a * PITCH_K + row_a) * 4
        } else {
            (row_a * PITCH + slot_a) * 4
        };
        let mut s = Gather {
            x,
            w,
            g: *g,
            s_inv: (65536 + g.s - 1) / g.s,
            slot_a,
            slot_b,
            dst_a,
            dst_b: A_FLOATS * 4 + (row_b * PITCH + slot_b) * 4,
            k_b: col0 + row_b,
            ih0: [OUTSIDE; 4],
            iw0: [OUTSIDE; 4],
            pix: [0; 4],
        };
        crate::unroll!(4, l, {
            let m = row0 + row_a + 32 * l as u32;
            if l < Self::A_ROWS && m < g.rows() {
                let (b, p, q) = g.pixel(m);
                s.ih0[l] = (p * g.stride_h) as i32 - g.pad_h as i32;
                s.iw0[l] = (q * g.stride_w) as i32 - g.pad_w as i32;
                s.pix[l] = if NCHW {
                    (b as u64 * g.c as u64 * g.h as u64 * g.w as u64) as i64
                } else {
                    ((b as i64 * g.h as i64 + s.ih0[l] as i64) * g.w as i64 + s.iw0[l] as i64)
                        * g.c as i64
                };
            }
        });
        s
    }

    #[inline(always)]
    fn inside(&self, ih: i32, iw: i32) -> bool {
        (ih as u32) < self.g.h && (iw as u32) < self.g.w
    }

    /// `(r·dil_h, s·dil_w)` of tap `tap`.
    #[inline(always)]
    fn tap_offset(&self, tap: u32) -> (i32, i32) {
        let r = (tap * self.s_inv) >> 16;
        let s = tap - r * self.g.s;
        ((r * self.g.dil_h) as i32, (s * self.g.dil_w) as i32)
    }

    /// Copies (or zeroes) this thread's share of k-tile `(cb, tg)` into the stage at `stage`
    /// (A, then B).
    ///
    /// # Safety
    /// x and w hold the problem's tensors; the stage is `STAGE_BYTES` of shared memory no
    /// thread reads until the next barrier.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn issue(&self, kt: &KTiles, cb: u32, tg: u32, stage: u32) {
        let g = &self.g;
        let taps = g.r * g.s;
        let plane = g.h as i64 * g.w as i64;
        let red = g.red() as u64; // weights per output channel
        let a_s = stage + self.dst_a;
        if NCHW {
            if kt.tpk == 1 {
                // One tap for the whole k-tile: one bounds check, then 16 channels 2 apart.
                let (dr, ds) = self.tap_offset(tg);
                let (ih, iw) = (self.ih0[0] + dr, self.iw0[0] + ds);
                let ok = self.inside(ih, iw);
                let ch0 = cb * BK + self.slot_a;
                let src = self.pix[0] + ih as i64 * g.w as i64 + iw as i64 + ch0 as i64 * plane;
                crate::unroll!(16, l, {
                    let dst = a_s + (2 * l as u32 * PITCH_K) * 4;
                    if ok && ch0 + 2 * (l as u32) < g.c {
                        let at = src + (2 * l) as i64 * plane;
                        cp_async_4(dst, self.x.add(at as usize));
                    } else {
                        f32::st_shared(dst, 0.0);
                    }
                });
            } else {
                crate::unroll!(16, l, {
                    let (tap, ch) = kt.at(cb, tg, self.slot_a + 2 * l as u32);
                    let (dr, ds) = self.tap_offset(tap);
                    let (ih, iw) = (self.ih0[0] + dr, self.iw0[0] + ds);
                    let dst = a_s + (2 * l as u32 * PITCH_K) * 4;
                    if tap < taps && ch < g.c && self.inside(ih, iw) {
                        let at =
                            self.pix[0] + ch as i64 * plane + ih as i64 * g.w as i64 + iw as i64;
                        cp_async_4(dst, self.x.add(at as usize));
                    } else {
                        f32::st_shared(dst, 0.0);
                    }
                });
            }
        } else {
            // Every chunk of this thread is at slots slot_a .. + 4: one tap, 4 channels.
            let (tap, ch) = kt.at(cb, tg, self.slot_a);
            let ok = tap < taps && ch < g.c;
            let (dr, ds) = self.tap_offset(tap);
            let tap_off = (dr as i64 * g.w as i64 + ds as i64) * g.c as i64 + ch as i64;
            crate::unroll!(4, l, {
                let dst = a_s + (32 * l as u32 * PITCH) * 4;
                let live = ok && self.inside(self.ih0[l] + dr, self.iw0[l] + ds);
                let src = (self.pix[l] + tap_off) as usize;
                if VEC {
                    if live {
                        cp_async_ca_16(dst, self.x.add(src));
                    } else {
                        gpu::st_shared_f32x4(dst, [0.0; 4]);
                    }
                } else {
                    crate::unroll!(4, e, {
                        let d = dst + 4 * e as u32;
                        if live && ch + (e as u32) < g.c {
                            cp_async_4(d, self.x.add(src + e));
                        } else {
                            f32::st_shared(d, 0.0);
                        }
                    });
                }
            });
        }
        // B: one tap and channel per thread (slot_b .. + B_SLOTS), B_ROWS output channels.
        let (tap, ch) = kt.at(cb, tg, self.slot_b);
        let ok = tap < taps && ch < g.c;
        let off = if NCHW {
            ch as u64 * taps as u64 + tap as u64 // KCRS
        } else {
            tap as u64 * g.c as u64 + ch as u64 // KRSC
        };
        let b_s = stage + self.dst_b;
        let mut l = 0;
        while l < Self::B_ROWS {
            let kk = self.k_b + l * Self::B_STEP;
            let dst = b_s + l * Self::B_STEP * PITCH * 4;
            let live = ok && kk < g.k;
            let src = (kk as u64 * red + off) as usize;
            if VEC {
                if live {
                    gpu::cp_async_16(dst, self.w.add(src) as *const gpu::Vec16);
                } else {
                    gpu::st_shared_f32x4(dst, [0.0; 4]);
                }
            } else {
                let mut e = 0;
                while e < Self::B_SLOTS {
                    let d = dst + 4 * e;
                    if live && ch + e < g.c {
                        cp_async_4(d, self.w.add(src + e as usize));
                    } else {
                        f32::st_shared(d, 0.0);
                    }
                    e += 1;
                }
            }
            l += 1;
        }
    }
}

/// The body: `NCHW` picks the layouts (x NCHW, w KCRS, y NCHW; else NHWC, KRSC, NHWC).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn regblock_body<const NCHW: bool, const VEC: bool>(
    x: *const f32,
    w: *const f32,
    bias: *const f32,
    y: *mut f32,
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
    let t = gpu::thread_idx_x();
    let (warp, lane) = (t / 32, t % 32);
    let group = warp / GROUP_WARPS;
    let wi = warp % GROUP_WARPS;
    let warps_n = TILE.1 / WARP_TILE.1;
    let (wrow0, wcol0) = ((wi / warps_n) * WARP_TILE.0, (wi % warps_n) * WARP_TILE.1);
    let (lr, lc) = (lane / 4, lane % 4);
    let (row0, col0) = (gpu::block_idx_y() * TILE.0, gpu::block_idx_x() * TILE.1);
    let rows = g.rows();
    let kt = KTiles::of(&g);
    let base = gpu::dynamic_shared_base();
    // Split-K over the grid's z: block z reduces k-tiles `[count·z/nz, count·(z+1)/nz)` and,
    // when there is more than one part, stores its raw partial sums (no bias, no activation)
    // in y's layout at `y + z · rows · K` (y is then the host's f32 workspace); the
    // `combine_f32` fix-up adds the parts, the bias and the activation.
    let (z, nz) = (gpu::block_idx_z(), gpu::grid_dim_z());
    let first = (kt.count as u64 * z as u64 / nz as u64) as u32;
    let last = (kt.count as u64 * (z as u64 + 1) / nz as u64) as u32;
    let (bias, relu, y) = if nz > 1 {
        (
            core::ptr::null(),
            0,
            y.add(z as usize * rows as usize * g.k as usize),
        )
    } else {
        (bias, relu, y)
    };

    let gather = Gather::<NCHW, VEC>::new(x, w, &g, t, row0, col0);
    let issue = |cb: u32, tg: u32, slot: u32, live: bool| {
        if live {
            // SAFETY: `gather` forms addresses only inside x and w (bounds checked per element)
            // and writes the stage at `slot`, which the last barrier freed.
            unsafe { gather.issue(&kt, cb, tg, base + slot) };
        }
        gpu::cp_async_commit();
    };

    // --- Main loop: a STAGES-deep ring, one barrier per k-tile. ---
    let mut acc = [[0.0f32; 8]; 8];
    // The next k-tile to issue (one division, before the loop).
    let (mut cb, mut tg) = (first / kt.groups, first % kt.groups);
    let mut issued = first;
    let mut wr = 0u32; // byte offset of the next stage to fill
    let advance = |off: u32| {
        if off + STAGE_BYTES == STAGES * STAGE_BYTES {
            0
        } else {
            off + STAGE_BYTES
        }
    };
    let mut s = 0;
    while s < STAGES - 1 {
        issue(cb, tg, wr, issued < last);
        issued += 1;
        tg += 1;
        if tg == kt.groups {
            tg = 0;
            cb += 1;
        }
        wr = advance(wr);
        s += 1;
    }
    let kg0 = group * KSTEP; // this group's slots of every k-tile
    let mut rd = 0u32;
    let mut tile = first;
    while tile < last {
        gpu::cp_async_wait::<{ STAGES - 2 }>(); // this thread's copies of `tile` have landed
        gpu::sync_threads(); // everyone's have; everyone is done with the stage refilled next
        issue(cb, tg, wr, issued < last);
        issued += 1;
        tg += 1;
        if tg == kt.groups {
            tg = 0;
            cb += 1;
        }
        wr = advance(wr);

        let a_s = base + rd;
        let b_s = a_s + A_FLOATS * 4;
        let mut d4 = 0;
        while d4 < KSTEP {
            let kk = kg0 + d4;
            // fa[dd][i]: row i of the lane, slot kk + dd; fb[dd][j] likewise for column j.
            let mut fa = [[0.0f32; 8]; 4];
            if NCHW {
                crate::unroll!(4, dd, {
                    let row = a_s + ((kk + dd as u32) * PITCH_K + wrow0 + 4 * lr) * 4;
                    let lo = gpu::ld_shared_f32x4(row);
                    let hi = gpu::ld_shared_f32x4(row + 32 * 4);
                    fa[dd] = [lo[0], lo[1], lo[2], lo[3], hi[0], hi[1], hi[2], hi[3]];
                });
            } else {
                crate::unroll!(8, i, {
                    let v =
                        gpu::ld_shared_f32x4(a_s + ((wrow0 + lr + 8 * i as u32) * PITCH + kk) * 4);
                    crate::unroll!(4, dd, {
                        fa[dd][i] = v[dd];
                    });
                });
            }
            let mut fb = [[0.0f32; 8]; 4];
            crate::unroll!(8, j, {
                let v = gpu::ld_shared_f32x4(b_s + ((wcol0 + lc + 4 * j as u32) * PITCH + kk) * 4);
                crate::unroll!(4, dd, {
                    fb[dd][j] = v[dd];
                });
            });
            crate::unroll!(4, dd, {
                crate::unroll!(8, i, {
                    crate::unroll!(8, j, {
                        acc[i][j] = gpu::fma(fa[dd][i], fb[dd][j], acc[i][j]);
                    });
                });
            });
            d4 += 4;
        }
        rd = advance(rd);
        tile += 1;
    }
    gpu::cp_async_wait::<0>();

    // --- Group 1 hands its partial tile to group 0 over the idle ring. ---
    let tl = t % (THREADS / KG);
    gpu::sync_threads();
    if group == 1 {
        crate::unroll!(8, i, {
            crate::unroll!(8, j, {
                f32::st_shared(
                    base + ((i * 8 + j) as u32 * (THREADS / KG) + tl) * 4,
                    acc[i][j],
                );
            });
        });
    }
    gpu::sync_threads();
    if group != 0 {
        return;
    }
    crate::unroll!(8, i, {
        crate::unroll!(8, j, {
            acc[i][j] += f32::ld_shared(base + ((i * 8 + j) as u32 * (THREADS / KG) + tl) * 4);
        });
    });

    // --- Epilogue: bias, ReLU, store. Row i of the lane, column j. ---
    let lane_row = |i: u32| {
        if NCHW {
            (i / 4) * 32 + 4 * lr + i % 4
        } else {
            lr + 8 * i
        }
    };
    let mut bj = [0.0f32; 8];
    crate::unroll!(8, j, {
        let col = col0 + wcol0 + lc + 4 * j as u32;
        if !bias.is_null() && col < g.k {
            bj[j] = f32::ld_global_nc(bias.add(col as usize));
        }
    });
    let out = |i: usize, j: usize| activate(acc[i][j] + bj[j], relu);
    if NCHW {
        let pq_ = g.p * g.q;
        let vec_y = pq_ % 4 == 0 && (y as usize) % 16 == 0;
        crate::unroll!(2, hh, {
            let m0 = row0 + wrow0 + lane_row(4 * hh as u32);
            let (b0, pq0) = (m0 / pq_, m0 % pq_);
            crate::unroll!(8, j, {
                let col = col0 + wcol0 + lc + 4 * j as u32;
                if col < g.k {
                    if vec_y && m0 + 3 < rows {
                        let at = (b0 as u64 * g.k as u64 + col as u64) * pq_ as u64 + pq0 as u64;
                        let v = [
                            out(4 * hh, j).to_bits(),
                            out(4 * hh + 1, j).to_bits(),
                            out(4 * hh + 2, j).to_bits(),
                            out(4 * hh + 3, j).to_bits(),
                        ];
                        gpu::st_global_v16(y.add(at as usize) as *mut gpu::Vec16, gpu::Vec16(v));
                    } else {
                        crate::unroll!(4, e, {
                            let m = m0 + e as u32;
                            if m < rows {
                                let (b, pqm) = (m / pq_, m % pq_);
                                let at =
                                    (b as u64 * g.k as u64 + col as u64) * pq_ as u64 + pqm as u64;
                                f32::st_global(y.add(at as usize), out(4 * hh + e, j));
                            }
                        });
                    }
                }
            });
        });
    } else {
        crate::unroll!(8, i, {
            let m = row0 + wrow0 + lane_row(i as u32);
            if m < rows {
                crate::unroll!(8, j, {
                    let col = col0 + wcol0 + lc + 4 * j as u32;
                    if col < g.k {
                        f32::st_global(y.add(g.y_nhwc(m, col)), out(i, j));
                    }
                });
            }
        });
    }
}

/// The entry: NHWC with `C` a multiple of 4 and 16-byte-aligned x and w takes 16-byte copies.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn conv_regblock<const NCHW: bool>(
    x: *const f32,
    w: *const f32,
    bias: *const f32,
    y: *mut f32,
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
    if !NCHW && c % 4 == 0 && (x as usize) % 16 == 0 && (w as usize) % 16 == 0 {
        regblock_body::<NCHW, true>(
            x, w, bias, y, n, h, w_, c, k, rs, pq, stride, pad, dil, relu,
        )
    } else {
        regblock_body::<NCHW, false>(
            x, w, bias, y, n, h, w_, c, k, rs, pq, stride, pad, dil, relu,
        )
    }
}

crate::entry_points! {
    pub const SYMBOLS;
    fn conv_regblock(x: *const f32, w: *const f32, bias: *const f32, y: *mut f32, n: u32, h: u32, w_: u32, c: u32, k: u32, rs: u32, pq: u32, stride: u32, pad: u32, dil: u32, relu: u32);
    conv_regblock_f32_nhwc => (F32, F32, Nhwc) [; NCHW: bool = false];
    conv_regblock_f32_nchw => (F32, F32, Nchw) [; NCHW: bool = true];
}
