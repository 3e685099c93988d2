//! The convolution problem: sizes, stride, padding, dilation, element type and layout, and the
//! checks that need no buffer (zero sizes, stride or dilation 0, padding that leaves no
//! output, filter sizes, dtype and layout, index limits). Every check runs before anything is
//! allocated.

use rustile_kernels::conv::{pack, Geom};
use rustile_kernels::registry::{DType, Layout};

use crate::error::{Error, Result};

/// Filter sizes (`R` and `S`) the family is built and validated for.
pub const FILTER_SIZES: [usize; 4] = [1, 3, 5, 7];

/// One fused convolution `y = act(conv2d(x, w) + bias)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Problem {
    /// Batch.
    pub n: usize,
    /// Input height.
    pub h: usize,
    /// Input width.
    pub w: usize,
    /// Input channels.
    pub c: usize,
    /// Output channels.
    pub k: usize,
    /// Filter height.
    pub r: usize,
    /// Filter width.
    pub s: usize,
    /// `(vertical, horizontal)` stride.
    pub stride: (usize, usize),
    /// `(vertical, horizontal)` zero padding, each side.
    pub pad: (usize, usize),
    /// `(vertical, horizontal)` dilation.
    pub dil: (usize, usize),
    /// Element type of x, w and y (bias is f32).
    #[serde(serialize_with = "crate::elem::serialize_dtype")]
    pub dtype: DType,
    /// [`Layout::Nhwc`] (x NHWC, w KRSC, y NHWC) or [`Layout::Nchw`] (x NCHW, w KCRS, y NCHW).
    #[serde(serialize_with = "serialize_layout")]
    pub layout: Layout,
    /// Whether a bias (f32, `k` entries) is added.
    pub bias: bool,
    /// Whether ReLU follows the bias.
    pub relu: bool,
}

fn serialize_layout<S: serde::Serializer>(
    l: &Layout,
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(layout_name(*l))
}

/// `nhwc` / `nchw`.
pub fn layout_name(l: Layout) -> &'static str {
    match l {
        Layout::Nchw => "nchw",
        _ => "nhwc",
    }
}

const OP: &str = "conv";

impl Problem {
    /// An NHWC problem with bias and ReLU: stride 1, dilation 1, `pad` each side.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        n: usize,
        h: usize,
        w: usize,
        c: usize,
        k: usize,
        rs: usize,
        pad: usize,
        dtype: DType,
    ) -> Self {
        Self {
            n,
            h,
            w,
            c,
            k,
            r: rs,
            s: rs,
            stride: (1, 1),
            pad: (pad, pad),
            dil: (1, 1),
            dtype,
            layout: Layout::Nhwc,
            bias: true,
            relu: true,
        }
    }

    /// The same problem with stride `s` in both directions.
    pub fn with_stride(mut self, s: usize) -> Self {
        self.stride = (s, s);
        self
    }

    /// The same problem with dilation `d` in both directions.
    pub fn with_dilation(mut self, d: usize) -> Self {
        self.dil = (d, d);
        self
    }

    /// The same problem in `layout`.
    pub fn with_layout(mut self, layout: Layout) -> Self {
        self.layout = layout;
        self
    }

    /// The same problem with or without bias and ReLU.
    pub fn with_epilogue(mut self, bias: bool, relu: bool) -> Self {
        self.bias = bias;
        self.relu = relu;
        self
    }

    /// `n32 56x56 c64 k64 3x3 s1 p1 d1 f16 nhwc +bias+relu`.
    pub fn label(&self) -> String {
        let mut s = format!(
            "n{} {}x{} c{} k{} {}x{}",
            self.n, self.h, self.w, self.c, self.k, self.r, self.s
        );
        let pair = |(a, b): (usize, usize)| {
            if a == b {
                format!("{a}")
            } else {
                format!("{a},{b}")
            }
        };
        s += &format!(
            " s{} p{} d{} {} {}",
            pair(self.stride),
            pair(self.pad),
            pair(self.dil),
            self.dtype.name(),
            layout_name(self.layout)
        );
        if self.bias {
            s += " +bias";
        }
        if self.relu {
            s += " +relu";
        }
        s
    }

    /// The output size `(p, q)`; [`Error::InvalidArgument`] when the padded input is smaller
    /// than the dilated filter (no output), [`Error::ZeroSize`] for a zero stride or dilation.
    pub fn out_hw(&self) -> Result<(usize, usize)> {
        let dim = |what: &str, len: usize, f: usize, stride: usize, pad: usize, dil: usize| {
            let span = dil
                .checked_mul(f - 1)
                .and_then(|v| v.checked_add(1))
                .ok_or_else(|| too_large(format!("the dilated filter {what} overflows")))?;
            let padded = pad
                .checked_mul(2)
                .and_then(|v| v.checked_add(len))
                .ok_or_else(|| too_large(format!("the padded input {what} overflows")))?;
            if padded < span {
                return Err(invalid(format!(
                    "the padded input {what} {len} + 2·{pad} is smaller than the dilated filter {span}: no output"
                )));
            }
            Ok((padded - span) / stride + 1)
        };
        self.check_nonzero()?;
        Ok((
            dim(
                "height",
                self.h,
                self.r,
                self.stride.0,
                self.pad.0,
                self.dil.0,
            )?,
            dim(
                "width",
                self.w,
                self.s,
                self.stride.1,
                self.pad.1,
                self.dil.1,
            )?,
        ))
    }

    fn check_nonzero(&self) -> Result<()> {
        for (v, what) in [
            (self.n, "the batch n"),
            (self.h, "the input height h"),
            (self.w, "the input width w"),
            (self.c, "the input channels c"),
            (self.k, "the output channels k"),
            (self.r, "the filter height r"),
            (self.s, "the filter width s"),
            (self.stride.0, "the vertical stride"),
            (self.stride.1, "the horizontal stride"),
            (self.dil.0, "the vertical dilation"),
            (self.dil.1, "the horizontal dilation"),
        ] {
            if v == 0 {
                return Err(Error::ZeroSize {
                    kernel: OP.into(),
                    what,
                });
            }
        }
        Ok(())
    }

    /// Every check that needs no buffer: sizes, filter sizes, output size, dtype/layout, and
    /// that every index the kernels form fits their 32-bit (and 16-bit packed) arguments.
    pub fn check(&self) -> Result<()> {
        self.check_nonzero()?;
        for (f, what) in [(self.r, "filter height r"), (self.s, "filter width s")] {
            if !FILTER_SIZES.contains(&f) {
                return Err(Error::Unsupported {
                    kernel: OP.into(),
                    what: format!(
                        "{what} = {f}: the kernels are built for filters {FILTER_SIZES:?}"
                    ),
                });
            }
        }
        match (self.layout, self.dtype) {
            (Layout::Nhwc, _) | (Layout::Nchw, DType::F32) => {}
            (Layout::Nchw, d) => {
                return Err(Error::Unsupported {
                    kernel: OP.into(),
                    what: format!(
                        "NCHW is the f32 study layout; {} convolutions take NHWC activations and KRSC weights",
                        d.name()
                    ),
                })
            }
            (l, _) => {
                return Err(Error::InvalidArgument {
                    kernel: OP.into(),
                    what: format!("layout {l:?} is not a convolution layout (Nhwc or Nchw)"),
                })
            }
        }
        let (p, q) = self.out_hw()?;
        // Packed 16-bit fields.
        for (v, what) in [
            (self.r, "r"),
            (self.s, "s"),
            (p, "the output height p"),
            (q, "the output width q"),
            (self.stride.0, "stride"),
            (self.stride.1, "stride"),
            (self.pad.0, "padding"),
            (self.pad.1, "padding"),
            (self.dil.0, "dilation"),
            (self.dil.1, "dilation"),
            (self.h, "the input height h"),
            (self.w, "the input width w"),
        ] {
            if v > 0x7fff {
                return Err(too_large(format!("{what} = {v} exceeds 32767")));
            }
        }
        // Every element offset and the implicit GEMM's sizes fit 32 bits (the kernels form
        // 32-bit pixel indices and 64-bit element offsets).
        let lens = self.lens()?;
        let rows = mul3(self.n, p, q)?;
        for (v, what) in [
            (rows, "N·P·Q output pixels"),
            (self.c, "c"),
            (self.k, "k"),
            (self.n, "n"),
            (mul3(self.r, self.s, self.c)?, "R·S·C"),
        ] {
            if v > u32::MAX as usize / 2 {
                return Err(too_large(format!("{what} = {v} exceeds 2³¹")));
            }
        }
        let _ = lens;
        Ok(())
    }

    /// Elements of `[x, w, y]`, overflow-checked.
    pub fn lens(&self) -> Result<[usize; 3]> {
        let (p, q) = self.out_hw()?;
        Ok([
            mul3(self.n, self.h, self.w).and_then(|v| mul2(v, self.c))?,
            mul3(self.k, self.r, self.s).and_then(|v| mul2(v, self.c))?,
            mul3(self.n, p, q).and_then(|v| mul2(v, self.k))?,
        ])
    }

    /// Bytes of x, w and y in the problem's dtype and the f32 bias, overflow-checked: what a
    /// validation or bench run allocates on its back end.
    pub fn bytes(&self) -> Result<usize> {
        let [lx, lw, ly] = self.lens()?;
        lx.checked_add(lw)
            .and_then(|v| v.checked_add(ly))
            .and_then(|v| v.checked_mul(self.dtype.bytes()))
            .and_then(|v| v.checked_add(self.k.checked_mul(4)?))
            .ok_or_else(|| too_large("the bytes of x, w, y and the bias overflow usize".into()))
    }

    /// The implicit GEMM's `(rows = N·P·Q, cols = K, reduction = R·S·C)`.
    pub fn gemm_dims(&self) -> Result<(usize, usize, usize)> {
        let (p, q) = self.out_hw()?;
        Ok((mul3(self.n, p, q)?, self.k, mul3(self.r, self.s, self.c)?))
    }

    /// `2·N·K·P·Q·C·R·S` (the bias and ReLU are not counted).
    pub fn flops(&self) -> f64 {
        match self.gemm_dims() {
            Ok((m, n, k)) => 2.0 * m as f64 * n as f64 * k as f64,
            Err(_) => 0.0,
        }
    }

    /// The device-side geometry (after [`Problem::check`]).
    pub fn geom(&self) -> Result<Geom> {
        self.check()?;
        let (p, q) = self.out_hw()?;
        let u = |v: usize| v as u32;
        Ok(Geom::new(
            u(self.n),
            u(self.h),
            u(self.w),
            u(self.c),
            u(self.k),
            pack(u(self.r), u(self.s)),
            pack(u(p), u(q)),
            pack(u(self.stride.0), u(self.stride.1)),
            pack(u(self.pad.0), u(self.pad.1)),
            pack(u(self.dil.0), u(self.dil.1)),
        ))
    }

    /// The packed scalar arguments every non-TMA kernel takes after its four pointers:
    /// `n, h, w, c, k, rs, pq, stride, pad, dil, relu` (after [`Problem::check`]).
    pub fn scalar_args(&self) -> Result<[u32; 11]> {
        let g = self.geom()?;
        Ok([
            g.n,
            g.h,
            g.w,
            g.c,
            g.k,
            pack(g.r, g.s),
            pack(g.p, g.q),
            pack(g.stride_h, g.stride_w),
            pack(g.pad_h, g.pad_w),
            pack(g.dil_h, g.dil_w),
            self.relu as u32,
        ])
    }
}

fn mul2(a: usize, b: usize) -> Result<usize> {
    a.checked_mul(b)
        .ok_or_else(|| too_large(format!("{a}·{b} overflows")))
}

fn mul3(a: usize, b: usize, c: usize) -> Result<usize> {
    mul2(a, b).and_then(|v| mul2(v, c))
}

fn too_large(what: String) -> Error {
    Error::TooLarge {
        kernel: OP.into(),
        what,
    }
}

fn invalid(what: String) -> Error {
    Error::InvalidArgument {
        kernel: OP.into(),
        what,
    }
}
