//! What cuDNN is told about a [`Problem`], computed without cuDNN: the tensor and filter
//! descriptors' dims and strides, the data, bias, compute and math types, and the convolution's
//! padding, stride and dilation. Pure, so it is tested on machines without a GPU.

use cudarc::cudnn::sys::{
    cudnnDataType_t as Data, cudnnMathType_t as Math, cudnnTensorFormat_t as Format,
};
use rustile_kernels::registry::{DType, Layout};

use crate::error::{Error, Result};

use super::super::Problem;
use super::NAME;

/// A 4-d tensor descriptor: dims in cuDNN's `(n, c, h, w)` order and each dim's element
/// stride (`cudnnSetTensor4dDescriptorEx`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tensor4 {
    /// `[n, c, h, w]`.
    pub dims: [i32; 4],
    /// Element strides of `n`, `c`, `h`, `w`.
    pub strides: [i32; 4],
}

/// Everything the descriptors of one problem hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// x, `(n, c, h, w)`.
    pub x: Tensor4,
    /// The filter's `[k, c, r, s]`, in [`Geometry::filter_format`] (NHWC: KRSC in memory,
    /// NCHW: KCRS).
    pub w: [i32; 4],
    /// y, `(n, k, p, q)`.
    pub y: Tensor4,
    /// The bias, `(1, k, 1, 1)` packed.
    pub bias: Tensor4,
    /// `(vertical, horizontal)` zero padding.
    pub pad: [i32; 2],
    /// `(vertical, horizontal)` stride.
    pub stride: [i32; 2],
    /// `(vertical, horizontal)` dilation.
    pub dil: [i32; 2],
    /// Type of x, w, y (and z).
    pub data: Data,
    /// Type of the bias tensor of the fused op ([`bias_dtype`]).
    pub bias_type: Data,
    /// The convolution's compute type: always f32.
    pub compute: Data,
    /// The convolution's math type ([`math_type`]).
    pub math: Math,
    /// The filter layout.
    pub filter_format: Format,
}

/// The cuDNN data type of `d`.
pub fn data_type(d: DType) -> Data {
    match d {
        DType::F32 => Data::CUDNN_DATA_FLOAT,
        DType::F16 => Data::CUDNN_DATA_HALF,
        DType::Bf16 => Data::CUDNN_DATA_BFLOAT16,
    }
}

/// The bias type `cudnnConvolutionBiasActivationForward` takes with x/w/y of `d`: its table
/// of supported configurations gives the bias the output's type for every floating-point
/// configuration (`PSEUDO_HALF_CONFIG`: half x, w, y, z and bias with f32 compute;
/// `PSEUDO_BFLOAT16_CONFIG` likewise; `FLOAT_CONFIG` all f32); only the int8 configurations
/// take an f32 bias. So rustile's f32 bias is rounded to f16/bf16 for the 16-bit problems
/// ([`super::CudnnConv::bias_from_f32`]), and the self-check feeds the float64 reference that
/// rounded bias.
pub fn bias_dtype(d: DType) -> DType {
    d
}

/// The bias types tried, in order: the documented one ([`bias_dtype`]), then f32 (in case a
/// cuDNN version accepts only that for some configuration: the search falls back to it when
/// no algorithm runs the fused op with the first).
pub fn bias_candidates(d: DType) -> Vec<DType> {
    let mut v = vec![bias_dtype(d)];
    if !v.contains(&DType::F32) {
        v.push(DType::F32);
    }
    v
}

/// The math type: f16/bf16 use tensor cores (`CUDNN_TENSOR_OP_MATH`, as PyTorch sets);
/// f32 is restricted to FMA kernels (`CUDNN_FMA_MATH`: no TF32, so the f32 ladder is compared
/// against true f32 — `CUDNN_DEFAULT_MATH` would allow TF32 tensor cores on Ampere and later).
pub fn math_type(d: DType) -> Math {
    match d {
        DType::F32 => Math::CUDNN_FMA_MATH,
        _ => Math::CUDNN_TENSOR_OP_MATH,
    }
}

/// Dims and strides of a `(n, c, h, w)` tensor stored in `layout`: NCHW packs `w` fastest,
/// NHWC packs `c` fastest. [`Error::TooLarge`] when a stride or the element count leaves
/// `i32` (the legacy API's `int`).
pub fn tensor4(n: usize, c: usize, h: usize, w: usize, layout: Layout) -> Result<Tensor4> {
    let fits = [n, c, h, w]
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .is_some_and(|t| t <= i32::MAX as usize);
    if !fits {
        return Err(too_large(format!(
            "a {n}×{c}×{h}×{w} tensor reaches 2³¹ elements"
        )));
    }
    let strides = match layout {
        Layout::Nchw => [c * h * w, h * w, w, 1],
        _ => [h * w * c, 1, w * c, c],
    };
    Ok(Tensor4 {
        dims: [int(n)?, int(c)?, int(h)?, int(w)?],
        strides: [
            int(strides[0])?,
            int(strides[1])?,
            int(strides[2])?,
            int(strides[3])?,
        ],
    })
}

/// The descriptors' contents for `p` (after [`Problem::check`]).
pub fn geometry(p: &Problem) -> Result<Geometry> {
    p.check()?;
    let (pp, qq) = p.out_hw()?;
    // The filter holds K·R·S·C elements: the same 2³¹ limit as the tensors.
    let _ = tensor4(p.k, p.c, p.r, p.s, p.layout)?;
    Ok(Geometry {
        x: tensor4(p.n, p.c, p.h, p.w, p.layout)?,
        w: [int(p.k)?, int(p.c)?, int(p.r)?, int(p.s)?],
        y: tensor4(p.n, p.k, pp, qq, p.layout)?,
        bias: tensor4(1, p.k, 1, 1, Layout::Nchw)?,
        pad: [int(p.pad.0)?, int(p.pad.1)?],
        stride: [int(p.stride.0)?, int(p.stride.1)?],
        dil: [int(p.dil.0)?, int(p.dil.1)?],
        data: data_type(p.dtype),
        bias_type: data_type(bias_dtype(p.dtype)),
        compute: Data::CUDNN_DATA_FLOAT,
        math: math_type(p.dtype),
        filter_format: match p.layout {
            Layout::Nchw => Format::CUDNN_TENSOR_NCHW,
            _ => Format::CUDNN_TENSOR_NHWC,
        },
    })
}

/// `(major, minor, patch)` of `cudnnGetVersion()`: `MMmmpp` from 9.0 on (91400 = 9.14.0),
/// `Mmpp` before (8906 = 8.9.6).
pub fn parse_version(v: usize) -> (usize, usize, usize) {
    if v >= 10_000 {
        (v / 10_000, (v / 100) % 100, v % 100)
    } else {
        (v / 1000, (v / 100) % 10, v % 100)
    }
}

fn int(v: usize) -> Result<i32> {
    i32::try_from(v).map_err(|_| too_large(format!("{v} exceeds cuDNN's int")))
}

fn too_large(what: String) -> Error {
    Error::TooLarge {
        kernel: NAME.into(),
        what,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nhwc_and_nchw_strides_pack_the_right_dimension_fastest() {
        let t = tensor4(2, 3, 5, 7, Layout::Nhwc).unwrap();
        assert_eq!(t.dims, [2, 3, 5, 7]);
        assert_eq!(t.strides, [5 * 7 * 3, 1, 7 * 3, 3]);
        let t = tensor4(2, 3, 5, 7, Layout::Nchw).unwrap();
        assert_eq!(t.strides, [3 * 5 * 7, 5 * 7, 7, 1]);
        // The offset of (n, c, h, w) through the strides is the reference's index.
        let p = Problem::new(2, 5, 7, 3, 4, 3, 1, DType::F16);
        let t = tensor4(2, 3, 5, 7, Layout::Nhwc).unwrap();
        let at = |n: i32, c: i32, h: i32, w: i32| {
            (n * t.strides[0] + c * t.strides[1] + h * t.strides[2] + w * t.strides[3]) as usize
        };
        assert_eq!(at(1, 2, 4, 6), ((p.h + 4) * p.w + 6) * p.c + 2);
    }

    #[test]
    fn the_geometry_follows_the_problem() {
        let p = Problem::new(3, 17, 19, 24, 40, 3, 2, DType::Bf16)
            .with_stride(2)
            .with_dilation(2);
        let g = geometry(&p).unwrap();
        let (pp, qq) = p.out_hw().unwrap();
        assert_eq!((pp, qq), (9, 10)); // (17 + 4 − 5) / 2 + 1, (19 + 4 − 5) / 2 + 1
        assert_eq!(g.x.dims, [3, 24, 17, 19]);
        assert_eq!(g.y.dims, [3, 40, 9, 10]);
        assert_eq!(g.y.strides, [9 * 10 * 40, 1, 10 * 40, 40]);
        assert_eq!(g.w, [40, 24, 3, 3]);
        assert_eq!(
            g.bias,
            Tensor4 {
                dims: [1, 40, 1, 1],
                strides: [40, 1, 1, 1]
            }
        );
        assert_eq!((g.pad, g.stride, g.dil), ([2, 2], [2, 2], [2, 2]));
        assert_eq!(g.data, Data::CUDNN_DATA_BFLOAT16);
        assert_eq!(g.bias_type, Data::CUDNN_DATA_BFLOAT16);
        assert_eq!(g.compute, Data::CUDNN_DATA_FLOAT);
        assert_eq!(g.math, Math::CUDNN_TENSOR_OP_MATH);
        assert_eq!(g.filter_format, Format::CUDNN_TENSOR_NHWC);
        let mut q = p;
        q.stride = (1, 3);
        q.pad = (0, 1);
        q.dil = (2, 1);
        let g = geometry(&q).unwrap();
        assert_eq!((g.pad, g.stride, g.dil), ([0, 1], [1, 3], [2, 1]));
    }

    #[test]
    fn f32_is_nchw_with_fma_math_and_an_f32_bias() {
        let p = Problem::new(1, 8, 8, 4, 4, 3, 1, DType::F32).with_layout(Layout::Nchw);
        let g = geometry(&p).unwrap();
        assert_eq!(g.x.strides, [4 * 64, 64, 8, 1]);
        assert_eq!(g.filter_format, Format::CUDNN_TENSOR_NCHW);
        assert_eq!(g.math, Math::CUDNN_FMA_MATH);
        assert_eq!(
            (g.data, g.bias_type),
            (Data::CUDNN_DATA_FLOAT, Data::CUDNN_DATA_FLOAT)
        );
        assert_eq!(bias_dtype(DType::F16), DType::F16);
        assert_eq!(bias_candidates(DType::Bf16), [DType::Bf16, DType::F32]);
        assert_eq!(bias_candidates(DType::F32), [DType::F32]);
    }

    #[test]
    fn problems_cudnn_cannot_address_are_typed_errors() {
        // 2³¹ elements: past cuDNN's int (the problem itself is fine).
        let p = Problem::new(1, 1024, 1024, 2048, 1, 1, 0, DType::F16);
        assert!(p.check().is_ok());
        assert!(matches!(geometry(&p), Err(Error::TooLarge { .. })));
        assert!(matches!(
            tensor4(1 << 16, 1 << 16, 1, 1, Layout::Nhwc),
            Err(Error::TooLarge { .. })
        ));
        let bad = Problem::new(1, 4, 4, 4, 4, 3, 0, DType::F16).with_layout(Layout::Nchw);
        assert!(matches!(geometry(&bad), Err(Error::Unsupported { .. })));
    }

    #[test]
    fn versions_parse_in_both_numberings() {
        assert_eq!(parse_version(91400), (9, 14, 0));
        assert_eq!(parse_version(91900), (9, 19, 0));
        assert_eq!(parse_version(90102), (9, 1, 2));
        assert_eq!(parse_version(8906), (8, 9, 6));
    }
}
