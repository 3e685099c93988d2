//! Fused convolution: `y = act(conv2d(x, w) + bias)`, 2-D, with stride, padding and dilation.
//!
//! **Layouts.** The tensor-core steps take NHWC activations `x[n][h][w][c]`, KRSC weights
//! `w[k][r][s][c]` and write NHWC `y[n][p][q][k]`; the f32 study steps also take NCHW
//! (`x[n][c][h][w]`, `w[k][c][r][s]`, `y[n][k][p][q]`). `bias` is f32, `k` entries, or null;
//! `relu` non-zero clamps at 0 after the bias (NaN stays NaN). Output size:
//! `p = (h + 2·pad_h − dil_h·(r − 1) − 1) / stride_h + 1` (and `q` alike).
//!
//! **As a GEMM** (implicit: im2col is never materialized): rows are the output pixels
//! `m = (n, p, q)` (`N·P·Q` of them), columns the output channels `k`, and the reduction runs
//! over `(r, s, c)` (`R·S·C`). Every kernel's grid is over that `N·P·Q × K` matrix
//! ([`Launch::Tiles`](crate::registry::Launch) with the record's tile).
//!
//! **Arguments** (every kernel but the TMA one), in this order:
//! `x, w, bias, y, n, h, w, c, k, rs, pq, stride, pad, dil, relu`, where the pairs are packed
//! as `lo | hi << 16`: `rs = r | s << 16`, `pq = p | q << 16`, `stride = stride_h | stride_w
//! << 16`, and so on ([`Geom::new`] unpacks them; the host checks every field fits 16 bits).
//!
//! **The ladder**, one file per step (see each file for its technique and bound).

pub mod v01_naive;
pub mod v02_smem;
pub mod v03_regblock;
pub mod v04_mma;
pub mod v06_kmajor;

/// The family.
pub const FAMILY: crate::registry::Family = crate::registry::Family {
    name: "conv",
    about: "fused conv2d + bias + ReLU: direct f32 (NCHW/NHWC) and implicit GEMM on tensor cores",
};

/// Every entry point of the family, one registry record each.
pub const RECORDS: &[&crate::registry::KernelInfo] = &[
    &v01_naive::INFO,
    &v02_smem::INFO,
    &v03_regblock::INFO,
    &v06_kmajor::INFO,
    &v04_mma::INFO_ANY,
    &v04_mma::INFO,
    &v04_mma::n64::INFO,
    &v05_wgmma::INFO_N64,
    &v05_wgmma::INFO,
    &v05_wgmma::INFO_N256,
    &v05_wgmma::INFO_N64X2,
    &v05_wgmma::INFO_N64_PP,
    &v05_wgmma::INFO_PP,
    &combine::INFO,
    &combine::INFO_F32,
];

pub mod combine;
pub mod v05_wgmma;

/// A convolution's geometry, as every kernel sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geom {
    /// Batch.
    pub n: u32,
    /// Input height.
    pub h: u32,
    /// Input width.
    pub w: u32,
    /// Input channels.
    pub c: u32,
    /// Output channels.
    pub k: u32,
    /// Filter height.
    pub r: u32,
    /// Filter width.
    pub s: u32,
    /// Output height.
    pub p: u32,
    /// Output width.
    pub q: u32,
    /// Vertical stride.
    pub stride_h: u32,
    /// Horizontal stride.
    pub stride_w: u32,
    /// Zero rows above (and below) the input.
    pub pad_h: u32,
    /// Zero columns left (and right) of the input.
    pub pad_w: u32,
    /// Vertical dilation.
    pub dil_h: u32,
    /// Horizontal dilation.
    pub dil_w: u32,
}

/// Packs two 16-bit fields as the kernels take them: `lo | hi << 16`.
pub const fn pack(lo: u32, hi: u32) -> u32 {
    lo | hi << 16
}

/// The two 16-bit fields of a packed argument.
#[inline(always)]
pub const fn unpack(v: u32) -> (u32, u32) {
    (v & 0xffff, v >> 16)
}

impl Geom {
    /// From the kernels' packed arguments (see the module docs).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub const fn new(
        n: u32,
        h: u32,
        w: u32,
        c: u32,
        k: u32,
        rs: u32,
        pq: u32,
        stride: u32,
        pad: u32,
        dil: u32,
    ) -> Geom {
        let (r, s) = unpack(rs);
        let (p, q) = unpack(pq);
        let (stride_h, stride_w) = unpack(stride);
        let (pad_h, pad_w) = unpack(pad);
        let (dil_h, dil_w) = unpack(dil);
        Geom {
            n,
            h,
            w,
            c,
            k,
            r,
            s,
            p,
            q,
            stride_h,
            stride_w,
            pad_h,
            pad_w,
            dil_h,
            dil_w,
        }
    }

    /// Rows of the implicit GEMM: output pixels `N·P·Q`.
    #[inline(always)]
    pub const fn rows(&self) -> u32 {
        self.n * self.p * self.q
    }

    /// The reduction length `R·S·C`.
    #[inline(always)]
    pub const fn red(&self) -> u32 {
        self.r * self.s * self.c
    }

    /// Output pixel `m` (row of the implicit GEMM) as `(n, p, q)`.
    #[inline(always)]
    pub const fn pixel(&self, m: u32) -> (u32, u32, u32) {
        let pq = self.p * self.q;
        let n = m / pq;
        let rem = m - n * pq;
        let p = rem / self.q;
        (n, p, rem - p * self.q)
    }

    /// The input row and column tap `(r, s)` of output `(p, q)` reads, which may lie in the
    /// padding (negative or past the edge).
    #[inline(always)]
    pub const fn input_at(&self, p: u32, q: u32, r: u32, s: u32) -> (i32, i32) {
        (
            (p * self.stride_h + r * self.dil_h) as i32 - self.pad_h as i32,
            (q * self.stride_w + s * self.dil_w) as i32 - self.pad_w as i32,
        )
    }

    /// Whether input `(ih, iw)` lies inside the image (not in the padding).
    #[inline(always)]
    pub const fn inside(&self, ih: i32, iw: i32) -> bool {
        ih >= 0 && iw >= 0 && (ih as u32) < self.h && (iw as u32) < self.w
    }

    /// NHWC offset of `x[n][ih][iw][c]` (inside the image).
    #[inline(always)]
    pub const fn x_nhwc(&self, n: u32, ih: u32, iw: u32, c: u32) -> usize {
        (((n as u64 * self.h as u64 + ih as u64) * self.w as u64 + iw as u64) * self.c as u64
            + c as u64) as usize
    }

    /// NCHW offset of `x[n][c][ih][iw]`.
    #[inline(always)]
    pub const fn x_nchw(&self, n: u32, ih: u32, iw: u32, c: u32) -> usize {
        (((n as u64 * self.c as u64 + c as u64) * self.h as u64 + ih as u64) * self.w as u64
            + iw as u64) as usize
    }

    /// KRSC offset of `w[k][r][s][c]`.
    #[inline(always)]
    pub const fn w_krsc(&self, k: u32, r: u32, s: u32, c: u32) -> usize {
        (((k as u64 * self.r as u64 + r as u64) * self.s as u64 + s as u64) * self.c as u64
            + c as u64) as usize
    }

    /// KCRS offset of `w[k][c][r][s]`.
    #[inline(always)]
    pub const fn w_kcrs(&self, k: u32, r: u32, s: u32, c: u32) -> usize {
        (((k as u64 * self.c as u64 + c as u64) * self.r as u64 + r as u64) * self.s as u64
            + s as u64) as usize
    }

    /// NHWC offset of `y[m][k]` (`m` the output pixel).
    #[inline(always)]
    pub const fn y_nhwc(&self, m: u32, k: u32) -> usize {
        (m as u64 * self.k as u64 + k as u64) as usize
    }

    /// NCHW offset of `y[n][k][p][q]`.
    #[inline(always)]
    pub const fn y_nchw(&self, n: u32, k: u32, p: u32, q: u32) -> usize {
        (((n as u64 * self.k as u64 + k as u64) * self.p as u64 + p as u64) * self.q as u64
            + q as u64) as usize
    }
}

/// The activation after the bias: `relu` non-zero clamps negatives to 0 (NaN stays NaN).
#[inline(always)]
pub fn activate(v: f32, relu: u32) -> f32 {
    if relu != 0 && v < 0.0 {
        0.0
    } else {
        v
    }
}
