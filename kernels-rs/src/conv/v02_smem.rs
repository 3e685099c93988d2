//! Shared-memory direct convolution: a block stages the input patch its output tile needs — the
//! tile plus its halo — once per chunk of input channels, and reuses it across every filter tap
//! and all its output channels.
//!
//! **Tiles.** A block computes an 8×16 spatial tile of output pixels of one image (`TP × TQ`)
//! for 32 output channels. Thread `t` owns pixel `t % 128` and 16 channels (`t / 128` picks
//! which half): 16 accumulators. The launch grid is the family's (`⌈N·P·Q / 128⌉ × ⌈K / 32⌉`);
//! there can be more spatial tiles than blocks (a tile does not straddle rows or images), so a
//! block walks the tiles `b.y, b.y + g.y, …`.
//!
//! **Staging**, per chunk of 8 input channels: the patch `[8][HP][WP]` with
//! `HP = (TP − 1)·stride_h + (R − 1)·dil_h + 1` (and `WP` alike), zeros in the padding; then per
//! filter row `r` the weights `[S][8][32]` (output channels contiguous). Each `(tap, channel)`
//! is then one `ld.shared` of the patch (consecutive pixels on consecutive words, `stride_w`
//! apart) and four broadcast `ld.shared.v4` of weights for 16 FMAs. When the dense patch would
//! not fit (`HP·WP > 1024`: large stride or dilation), the block stages per tap instead: the
//! 8×16 input points that tap reads (no reuse across taps, still across output channels).
//!
//! **Bound.** Per 16 FMAs a thread issues 5 shared loads and a few address operations: about
//! 30 % of the issue slots are not FMAs and the weight broadcasts keep the shared pipe busy, so
//! expect roughly a quarter to a third of the FP32 peak where the patch fits. Shared:
//! 8·1024 + 7·8·32 floats = 39 KiB. Any shape; `bias` may be null.

use super::{activate, Geom};
use crate::gpu::{self, Elem};
use crate::registry::{KernelInfo, Launch};

/// Output pixels per spatial tile, `(rows, columns)`.
pub const PIX: (u32, u32) = (8, 16);
/// Output channels per block.
pub const KB: u32 = 32;
/// Threads per block.
pub const THREADS: u32 = 256;
/// Output channels per thread.
const KT: u32 = KB * PIX.0 * PIX.1 / THREADS;
/// Input channels per stage.
pub const CC: u32 = 8;
/// Floats of one channel plane of the staged patch.
pub const PATCH_CAP: u32 = 1024;
/// The widest filter the weight stage holds.
pub const S_MAX: u32 = 7;
/// Output tile per block as the grid sees it, `(pixels, channels)`.
pub const TILE: (u32, u32) = (PIX.0 * PIX.1, KB);

/// Shared bytes: the patch, then one filter row of weights.
pub const fn shared_bytes() -> usize {
    ((CC * PATCH_CAP + S_MAX * CC * KB) * 4) as usize
}

/// Registry entry.
pub const INFO: KernelInfo = KernelInfo {
    family: super::FAMILY,
    name: "smem",
    block: (THREADS, 1, 1),
    launch: Launch::Tiles {
        tile: TILE,
        halo_rows: 0,
    },
    shared_bytes_f32: shared_bytes(),
    symbols: SYMBOLS,
    about: "8x16-pixel x 32-channel tile, input patch + halo and weights in shared memory",
    ..KernelInfo::BASE
};

/// How a stage maps its patch onto the input: staged point `(u, v)` is input
/// `(oh + u·ah, ow + v·aw)`, and output `(pi, qi)` at tap `(r, s)` reads point
/// `(pi·bh + r·dh, qi·bw + s·dw)` (`dh = dw = 0` when staging per tap).
#[derive(Clone, Copy)]
struct Patch {
    rows: u32,
    cols: u32,
    oh: i32,
    ow: i32,
    ah: u32,
    aw: u32,
}

/// The body: `NCHW` picks the layouts (x NCHW, w KCRS, y NCHW; else NHWC, KRSC, NHWC).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn conv_smem<const NCHW: bool>(
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
    let base = gpu::dynamic_shared_base();
    let patch_s = base; // (CC, rows, cols)
    let wt_s = base + CC * PATCH_CAP * 4; // (S, CC, KB)
    let (tp, tq) = PIX;
    let px = t % (tp * tq);
    let (pi, qi) = (px / tq, px % tq);
    let kg = t / (tp * tq) * KT; // this thread's first channel within the block's KB
    let k0 = gpu::block_idx_x() * KB;

    // The dense patch's size, and whether it fits (else: one stage per tap).
    let span = |tile: u32, st: u32, f: u32, d: u32| (tile - 1) * st + (f - 1) * d + 1;
    let hp = span(tp, g.stride_h, g.r, g.dil_h);
    let wp = span(tq, g.stride_w, g.s, g.dil_w);
    let dense = hp <= PATCH_CAP && wp <= PATCH_CAP && hp * wp <= PATCH_CAP;
    let (bh, bw, dh, dw) = if dense {
        (g.stride_h, g.stride_w, g.dil_h, g.dil_w)
    } else {
        (1, 1, 0, 0)
    };

    let tiles_p = g.p.div_ceil(tp);
    let tiles_q = g.q.div_ceil(tq);
    let tiles = g.n * tiles_p * tiles_q;
    let mut tile = gpu::block_idx_y();
    while tile < tiles {
        let b = tile / (tiles_p * tiles_q);
        let rem = tile - b * tiles_p * tiles_q;
        let (p0, q0) = ((rem / tiles_q) * tp, (rem % tiles_q) * tq);
        let mut acc = [0.0f32; KT as usize];
        let mut c0 = 0;
        while c0 < g.c {
            let mut r = 0;
            while r < g.r {
                let mut s = 0;
                while s < g.s {
                    let stage_patch = !dense || (r == 0 && s == 0);
                    let stage_w = s == 0;
                    if stage_patch || stage_w {
                        gpu::sync_threads(); // everyone is done reading the previous stage
                        if stage_patch {
                            let at = if dense {
                                Patch {
                                    rows: hp,
                                    cols: wp,
                                    oh: (p0 * g.stride_h) as i32 - g.pad_h as i32,
                                    ow: (q0 * g.stride_w) as i32 - g.pad_w as i32,
                                    ah: 1,
                                    aw: 1,
                                }
                            } else {
                                let (oh, ow) = g.input_at(p0, q0, r, s);
                                Patch {
                                    rows: tp,
                                    cols: tq,
                                    oh,
                                    ow,
                                    ah: g.stride_h,
                                    aw: g.stride_w,
                                }
                            };
                            stage_patch_of::<NCHW>(x, &g, patch_s, at, b, c0, t);
                        }
                        if stage_w {
                            stage_weights::<NCHW>(w, &g, wt_s, k0, c0, r, t);
                        }
                        gpu::sync_threads();
                    }
                    let (prow, pcol) = if dense { (hp, wp) } else { (tp, tq) };
                    let (row, col) = (pi * bh + r * dh, qi * bw + s * dw);
                    let mut cc = 0;
                    while cc < CC {
                        let xv = f32::ld_shared(patch_s + ((cc * prow + row) * pcol + col) * 4);
                        let wrow = wt_s + ((s * CC + cc) * KB + kg) * 4;
                        let mut j = 0;
                        while j < KT {
                            let wv = gpu::ld_shared_f32x4(wrow + j * 4);
                            let mut e = 0;
                            while e < 4 {
                                let i = (j + e) as usize;
                                acc[i] = gpu::fma(xv, wv[e as usize], acc[i]);
                                e += 1;
                            }
                            j += 4;
                        }
                        cc += 1;
                    }
                    s += 1;
                }
                r += 1;
            }
            c0 += CC;
        }

        let (p, q) = (p0 + pi, q0 + qi);
        if p < g.p && q < g.q {
            let m = (b * g.p + p) * g.q + q;
            let mut j = 0;
            while j < KT {
                let kk = k0 + kg + j;
                if kk < g.k {
                    let mut v = acc[j as usize];
                    if !bias.is_null() {
                        v += f32::ld_global_nc(bias.add(kk as usize));
                    }
                    let out = if NCHW {
                        g.y_nchw(b, kk, p, q)
                    } else {
                        g.y_nhwc(m, kk)
                    };
                    f32::st_global(y.add(out), activate(v, relu));
                }
                j += 1;
            }
        }
        tile += gpu::grid_dim_y();
    }
}

/// Stages channels `c0 .. c0 + CC` of image `b` at the points of `at` into `[CC][rows][cols]`
/// (zeros in the padding and past the last channel). Consecutive threads take consecutive
/// input addresses: columns in NCHW, channels in NHWC.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn stage_patch_of<const NCHW: bool>(
    x: *const f32,
    g: &Geom,
    patch_s: u32,
    at: Patch,
    b: u32,
    c0: u32,
    t: u32,
) {
    let plane = at.rows * at.cols;
    let mut e = t;
    while e < CC * plane {
        let (cc, u, v) = if NCHW {
            let rem = e % plane;
            (e / plane, rem / at.cols, rem % at.cols)
        } else {
            let pix = e / CC;
            (e % CC, pix / at.cols, pix % at.cols)
        };
        let ih = at.oh + (u * at.ah) as i32;
        let iw = at.ow + (v * at.aw) as i32;
        let ch = c0 + cc;
        let val = if ch < g.c && g.inside(ih, iw) {
            let (ih, iw) = (ih as u32, iw as u32);
            let i = if NCHW {
                g.x_nchw(b, ih, iw, ch)
            } else {
                g.x_nhwc(b, ih, iw, ch)
            };
            f32::ld_global_nc(x.add(i))
        } else {
            0.0
        };
        f32::st_shared(patch_s + ((cc * at.rows + u) * at.cols + v) * 4, val);
        e += THREADS;
    }
}

/// Stages the weights of filter row `r`, input channels `c0 .. c0 + CC` and output channels
/// `k0 .. k0 + KB` into `[S][CC][KB]` (zeros past the last channel of either kind).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn stage_weights<const NCHW: bool>(
    w: *const f32,
    g: &Geom,
    wt_s: u32,
    k0: u32,
    c0: u32,
    r: u32,
    t: u32,
) {
    let mut e = t;
    while e < g.s * CC * KB {
        // Consecutive threads along the weights' contiguous index: c in KRSC, s in KCRS.
        let (s, cc, kq) = if NCHW {
            (e % g.s, (e / g.s) % CC, e / (g.s * CC))
        } else {
            ((e / CC) % g.s, e % CC, e / (g.s * CC))
        };
        let (kk, ch) = (k0 + kq, c0 + cc);
        let val = if kk < g.k && ch < g.c {
            let i = if NCHW {
                g.w_kcrs(kk, r, s, ch)
            } else {
                g.w_krsc(kk, r, s, ch)
            };
            f32::ld_global_nc(w.add(i))
        } else {
            0.0
        };
        f32::st_shared(wt_s + ((s * CC + cc) * KB + kq) * 4, val);
        e += THREADS;
    }
}

crate::entry_points! {
    pub const SYMBOLS;
    fn conv_smem(x: *const f32, w: *const f32, bias: *const f32, y: *mut f32, n: u32, h: u32, w_: u32, c: u32, k: u32, rs: u32, pq: u32, stride: u32, pad: u32, dil: u32, relu: u32);
    conv_smem_f32_nhwc => (F32, F32, Nhwc) [; NCHW: bool = false];
    conv_smem_f32_nchw => (F32, F32, Nchw) [; NCHW: bool = true];
}
