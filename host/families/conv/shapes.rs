//! The benchmark shapes: the distinct convolution layers of ResNet-50 (torchvision v1.5, the
//! stride on the 3×3 of each stage's first block), in one place. `scripts/conv_torch.py`
//! carries the same table (`--print-shapes` prints it; `tests/conv_cudnn.rs` checks that the
//! two agree).

use rustile_kernels::registry::{DType, Layout};

use super::Problem;

/// One distinct conv layer of ResNet-50: input `hw × hw × c`, `k` filters of `rs × rs`,
/// stride `stride`, padding `rs / 2`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Layer {
    /// `stem`, `l2.b0.conv2`, …: stage (`l1`…`l4`), block (`b0` the first, `b1` the others,
    /// which share one shape), and the layer within the block (`conv1` 1×1, `conv2` 3×3,
    /// `conv3` 1×1, `down` the 1×1 projection shortcut).
    pub name: &'static str,
    /// Input height and width.
    pub hw: usize,
    /// Input channels.
    pub c: usize,
    /// Output channels.
    pub k: usize,
    /// Filter height and width.
    pub rs: usize,
    /// Stride (both directions).
    pub stride: usize,
    /// How many times the shape runs in one forward pass of the network.
    pub count: usize,
}

const fn layer(
    name: &'static str,
    hw: usize,
    c: usize,
    k: usize,
    rs: usize,
    stride: usize,
    count: usize,
) -> Layer {
    Layer {
        name,
        hw,
        c,
        k,
        rs,
        stride,
        count,
    }
}

/// The 23 distinct conv layers of ResNet-50 (v1.5), in network order. `l1.b0.conv3` is also
/// stage 1's projection shortcut (64→256 1×1, stride 1: the same shape), hence its count 4.
pub const RESNET50: [Layer; 23] = [
    layer("stem", 224, 3, 64, 7, 2, 1),
    layer("l1.b0.conv1", 56, 64, 64, 1, 1, 1),
    layer("l1.b0.conv2", 56, 64, 64, 3, 1, 3),
    layer("l1.b0.conv3", 56, 64, 256, 1, 1, 4),
    layer("l1.b1.conv1", 56, 256, 64, 1, 1, 2),
    layer("l2.b0.conv1", 56, 256, 128, 1, 1, 1),
    layer("l2.b0.conv2", 56, 128, 128, 3, 2, 1),
    layer("l2.b0.conv3", 28, 128, 512, 1, 1, 4),
    layer("l2.b0.down", 56, 256, 512, 1, 2, 1),
    layer("l2.b1.conv1", 28, 512, 128, 1, 1, 3),
    layer("l2.b1.conv2", 28, 128, 128, 3, 1, 3),
    layer("l3.b0.conv1", 28, 512, 256, 1, 1, 1),
    layer("l3.b0.conv2", 28, 256, 256, 3, 2, 1),
    layer("l3.b0.conv3", 14, 256, 1024, 1, 1, 6),
    layer("l3.b0.down", 28, 512, 1024, 1, 2, 1),
    layer("l3.b1.conv1", 14, 1024, 256, 1, 1, 5),
    layer("l3.b1.conv2", 14, 256, 256, 3, 1, 5),
    layer("l4.b0.conv1", 14, 1024, 512, 1, 1, 1),
    layer("l4.b0.conv2", 14, 512, 512, 3, 2, 1),
    layer("l4.b0.conv3", 7, 512, 2048, 1, 1, 3),
    layer("l4.b0.down", 14, 1024, 2048, 1, 2, 1),
    layer("l4.b1.conv1", 7, 2048, 512, 1, 1, 2),
    layer("l4.b1.conv2", 7, 512, 512, 3, 1, 2),
];

/// The f32 study set: the four stride-1 3×3 layers (56², 28², 14², 7²), the PyTorch anchors'
/// `conv3x3` cases.
pub const F32_STUDY: [&str; 4] = ["l1.b0.conv2", "l2.b1.conv2", "l3.b1.conv2", "l4.b1.conv2"];

impl Layer {
    /// The layer at batch `batch` in `dtype`, with bias and ReLU: NHWC (KRSC weights) for
    /// f16/bf16, NCHW (KCRS) for f32, the layout of the f32 baselines.
    pub fn problem(&self, batch: usize, dtype: DType) -> Problem {
        let layout = match dtype {
            DType::F32 => Layout::Nchw,
            _ => Layout::Nhwc,
        };
        Problem::new(
            batch,
            self.hw,
            self.hw,
            self.c,
            self.k,
            self.rs,
            self.rs / 2,
            dtype,
        )
        .with_stride(self.stride)
        .with_layout(layout)
    }
}

/// Every ResNet-50 layer ([`RESNET50`]) at batch `batch` in `dtype` ([`Layer::problem`]).
pub fn resnet50(batch: usize, dtype: DType) -> Vec<(&'static str, Problem)> {
    RESNET50
        .iter()
        .map(|l| (l.name, l.problem(batch, dtype)))
        .collect()
}

/// The f32 study layers ([`F32_STUDY`]) at batch `batch`, NCHW f32.
pub fn f32_study(batch: usize) -> Vec<(&'static str, Problem)> {
    RESNET50
        .iter()
        .filter(|l| F32_STUDY.contains(&l.name))
        .map(|l| (l.name, l.problem(batch, DType::F32)))
        .collect()
}

/// The table as JSON (`[{"name", "hw", "c", "k", "rs", "stride", "count"}, …]`), the form
/// `scripts/conv_torch.py --print-shapes` prints.
pub fn resnet50_json() -> String {
    serde_json::to_string(&RESNET50[..]).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_layer_checks_and_chains_into_the_next_stage() {
        for batch in [1, 32] {
            for dtype in [DType::F16, DType::Bf16, DType::F32] {
                for (name, p) in resnet50(batch, dtype) {
                    p.check().unwrap_or_else(|e| panic!("{name}: {e}"));
                    assert!(p.bias && p.relu, "{name}");
                }
            }
        }
        // Output sizes: the stem halves 224 to 112 (the max-pool then gives stage 1 its 56²);
        // every strided layer halves its input; every other layer keeps it.
        let out = |name: &str| {
            let l = RESNET50.iter().find(|l| l.name == name).unwrap();
            l.problem(1, DType::F16).out_hw().unwrap()
        };
        assert_eq!(out("stem"), (112, 112));
        for l in &RESNET50[1..] {
            let (p, q) = out(l.name);
            assert_eq!((p, q), (l.hw / l.stride, l.hw / l.stride), "{}", l.name);
        }
        assert_eq!(out("l2.b0.conv2"), (28, 28));
        assert_eq!(out("l4.b0.down"), (7, 7));
        let names: std::collections::HashSet<_> = RESNET50.iter().map(|l| l.name).collect();
        assert_eq!(names.len(), RESNET50.len());
        // 53 convolutions in ResNet-50: the stem, 16 blocks × 3, 4 projection shortcuts.
        assert_eq!(RESNET50.iter().map(|l| l.count).sum::<usize>(), 53);
    }

    #[test]
    fn the_f32_study_set_is_the_four_stride_one_3x3_layers_in_nchw() {
        let v = f32_study(32);
        assert_eq!(v.len(), 4);
        for (name, p) in &v {
            assert_eq!((p.r, p.stride, p.pad), (3, (1, 1), (1, 1)), "{name}");
            assert_eq!((p.dtype, p.layout), (DType::F32, Layout::Nchw));
        }
        let hw: Vec<_> = v.iter().map(|(_, p)| (p.h, p.c)).collect();
        assert_eq!(hw, [(56, 64), (28, 128), (14, 256), (7, 512)]);
        assert_eq!(resnet50(1, DType::Bf16)[0].1.layout, Layout::Nhwc);
    }

    #[test]
    fn the_json_table_names_every_field() {
        let j: serde_json::Value = serde_json::from_str(&resnet50_json()).unwrap();
        let rows = j.as_array().unwrap();
        assert_eq!(rows.len(), 23);
        assert_eq!(
            rows[0],
            serde_json::json!({"name": "stem", "hw": 224, "c": 3, "k": 64, "rs": 7, "stride": 2, "count": 1})
        );
    }
}
