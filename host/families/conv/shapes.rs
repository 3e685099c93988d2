//! The benchmark shapes: every distinct convolution of ResNet-50 (torchvision v1.5: the
//! stride sits on the 3×3), at any batch, and a size sweep.

use rustile_kernels::registry::DType;

use super::Problem;

/// `(name, H = W, C, K, filter, stride, pad)` of each distinct ResNet-50 convolution.
pub const RESNET50: [(&str, usize, usize, usize, usize, usize, usize); 23] = [
    ("conv1 7x7/2", 224, 3, 64, 7, 2, 3),
    ("res2 1x1 64-64", 56, 64, 64, 1, 1, 0),
    ("res2 3x3 64", 56, 64, 64, 3, 1, 1),
    ("res2 1x1 64-256", 56, 64, 256, 1, 1, 0),
    ("res2 1x1 256-64", 56, 256, 64, 1, 1, 0),
    ("res3 1x1 256-128", 56, 256, 128, 1, 1, 0),
    ("res3 3x3/2 128", 56, 128, 128, 3, 2, 1),
    ("res3 1x1 128-512", 28, 128, 512, 1, 1, 0),
    ("res3 1x1/2 256-512", 56, 256, 512, 1, 2, 0),
    ("res3 1x1 512-128", 28, 512, 128, 1, 1, 0),
    ("res3 3x3 128", 28, 128, 128, 3, 1, 1),
    ("res4 1x1 512-256", 28, 512, 256, 1, 1, 0),
    ("res4 3x3/2 256", 28, 256, 256, 3, 2, 1),
    ("res4 1x1 256-1024", 14, 256, 1024, 1, 1, 0),
    ("res4 1x1/2 512-1024", 28, 512, 1024, 1, 2, 0),
    ("res4 1x1 1024-256", 14, 1024, 256, 1, 1, 0),
    ("res4 3x3 256", 14, 256, 256, 3, 1, 1),
    ("res5 1x1 1024-512", 14, 1024, 512, 1, 1, 0),
    ("res5 3x3/2 512", 14, 512, 512, 3, 2, 1),
    ("res5 1x1 512-2048", 7, 512, 2048, 1, 1, 0),
    ("res5 1x1/2 1024-2048", 14, 1024, 2048, 1, 2, 0),
    ("res5 1x1 2048-512", 7, 2048, 512, 1, 1, 0),
    ("res5 3x3 512", 7, 512, 512, 3, 1, 1),
];

/// The ResNet-50 convolutions at `batch` in `dtype` (NHWC, bias + ReLU).
pub fn resnet50(batch: usize, dtype: DType) -> Vec<(&'static str, Problem)> {
    RESNET50
        .iter()
        .map(|&(name, hw, c, k, f, stride, pad)| {
            (name, Problem::new(batch, hw, hw, c, k, f, pad, dtype).with_stride(stride))
        })
        .collect()
}

/// Whether a ResNet-50 layer is one of the four stride-1 3×3 layers the acceptance bar names.
pub fn is_3x3_s1(p: &Problem) -> bool {
    p.r == 3 && p.stride == (1, 1)
}
