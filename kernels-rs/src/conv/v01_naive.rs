//! Naive direct convolution, the study floor: one thread per output element, the whole
//! `R·S·C` reduction from global memory, no reuse beyond what the caches find.
//!
//! Block `b.x` is output channel `k`, and its 256 threads are 256 consecutive output pixels
//! `m = (n, p, q)`, so the weights a thread reads are the same for the whole block (one
//! broadcast per load) and the input reads of a warp walk 32 neighbouring pixels. In NCHW those
//! are neighbouring columns of one channel plane (coalesced, `stride_w` apart) and so are the
//! stores; in NHWC they are `C` floats apart (one sector per lane) and the stores `K` apart.
//! Per FMA: two 4-byte loads (one a broadcast), so the bound is the L1/L2 load path, far
//! below the FP32 peak. Any shape; `bias` may be null.

use super::{activate, Geom};
use crate::gpu::{self, Elem};
use crate::registry::{KernelInfo, Launch};

/// Threads per block: consecutive output pixels of one output channel.
pub const THREADS: u32 = 256;
/// Output tile per block, `(pixels, channels)`.
pub const TILE: (u32, u32) = (THREADS, 1);

/// Registry entry.
pub const INFO: KernelInfo = KernelInfo {
    family: super::FAMILY,
    name: "naive",
    block: (THREADS, 1, 1),
    launch: Launch::Tiles {
        tile: TILE,
        halo_rows: 0,
    },
    symbols: SYMBOLS,
    about: "one thread per output element, 256 pixels of one output channel per block",
    ..KernelInfo::BASE
};

/// The body: `NCHW` picks the layouts (x NCHW, w KCRS, y NCHW; else NHWC, KRSC, NHWC).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn conv_naive<const NCHW: bool>(
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
    let m = gpu::block_idx_y() * TILE.0 + gpu::thread_idx_x();
    let kk = gpu::block_idx_x();
    if m >= g.rows() || kk >= g.k {
        return;
    }
    let (b, p, q) = g.pixel(m);
    let mut acc = 0.0f32;
    let mut r = 0;
    while r < g.r {
        let mut s = 0;
        while s < g.s {
            let (ih, iw) = g.input_at(p, q, r, s);
            if g.inside(ih, iw) {
                let (ih, iw) = (ih as u32, iw as u32);
                let mut ch = 0;
                while ch < g.c {
                    let (xi, wi) = if NCHW {
                        (g.x_nchw(b, ih, iw, ch), g.w_kcrs(kk, r, s, ch))
                    } else {
                        (g.x_nhwc(b, ih, iw, ch), g.w_krsc(kk, r, s, ch))
                    };
                    acc = gpu::fma(
                        f32::ld_global_nc(x.add(xi)),
                        f32::ld_global_nc(w.add(wi)),
                        acc,
                    );
                    ch += 1;
                }
            }
            s += 1;
        }
        r += 1;
    }
    if !bias.is_null() {
        acc += f32::ld_global_nc(bias.add(kk as usize));
    }
    let out = if NCHW {
        g.y_nchw(b, kk, p, q)
    } else {
        g.y_nhwc(m, kk)
    };
    f32::st_global(y.add(out), activate(acc, relu));
}

crate::entry_points! {
    pub const SYMBOLS;
    fn conv_naive(x: *const f32, w: *const f32, bias: *const f32, y: *mut f32, n: u32, h: u32, w_: u32, c: u32, k: u32, rs: u32, pq: u32, stride: u32, pad: u32, dil: u32, relu: u32);
    conv_naive_f32_nhwc => (F32, F32, Nhwc) [; NCHW: bool = false];
    conv_naive_f32_nchw => (F32, F32, Nchw) [; NCHW: bool = true];
}
