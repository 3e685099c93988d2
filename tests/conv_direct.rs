//! The f32 direct-convolution ladder (`naive`, `smem`, `regblock`) in the simulator against
//! float64, in both layouts, on shapes chosen to reach every path of the kernels: odd H and W,
//! stride 2 with odd H, padding 0 and "same", dilation 2, C = 3 (4-byte copies, 8 taps per
//! k-tile), C past one channel block and off it, K and N·P·Q off the tiles, batch 1, 1×1 to 7×7,
//! no bias and no ReLU, and a stride/dilation whose dense patch does not fit `smem`'s stage.
//! Plus: a planted wrong element, and a kernel run on the wrong geometry, fail the comparison.

use rustile::families::conv::{self, compare, elements_to_check, output, Inputs, Problem};
use rustile::sim::Simulator;
use rustile::{Backend, DType, Error};
use rustile_kernels::registry::{self, KernelInfo, Layout};

fn seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(7)
}

fn sim() -> Backend {
    Backend::Simulator(Simulator::default())
}

fn record(name: &str) -> &'static KernelInfo {
    registry::find(rustile_kernels::conv::FAMILY, name).expect("conv record")
}

/// NHWC problem: batch, h, w, c, k, filter, pad.
#[allow(clippy::too_many_arguments)]
fn p(n: usize, h: usize, w: usize, c: usize, k: usize, rs: usize, pad: usize) -> Problem {
    Problem {
        w,
        ..Problem::new(n, h, h, c, k, rs, pad, DType::F32)
    }
}

fn check(name: &str, shapes: &[Problem]) {
    check_in(name, shapes, &[Layout::Nhwc, Layout::Nchw]);
}

fn check_in(name: &str, shapes: &[Problem], layouts: &[Layout]) {
    let backend = sim();
    let r = record(name);
    let s = seed();
    for base in shapes {
        for &layout in layouts {
            let pr = base.with_layout(layout);
            let got = conv::validate(&backend, r, &pr, s);
            assert!(
                got.is_ok(),
                "{name} {} (seed {s}): {:?}",
                pr.label(),
                got.err()
            );
        }
    }
}

#[test]
fn naive_matches_float64_in_both_layouts() {
    check(
        "naive",
        &[
            p(1, 5, 7, 3, 5, 3, 1),                             // C = 3, batch 1
            p(2, 9, 7, 4, 3, 3, 0).with_stride(2),              // stride 2, odd H, pad 0
            p(1, 9, 8, 2, 3, 3, 2).with_dilation(2),            // dilation 2
            p(1, 11, 9, 3, 2, 7, 3).with_stride(2),             // 7×7/2
            p(1, 6, 5, 5, 3, 5, 2).with_epilogue(false, false), // no bias, no ReLU
            p(1, 4, 4, 3, 2, 1, 0).with_epilogue(true, false),  // 1×1
        ],
    );
}

#[test]
fn smem_matches_float64_in_both_layouts() {
    check(
        "smem",
        &[
            p(1, 5, 7, 3, 5, 3, 1),                                   // C = 3, K < 32
            p(2, 11, 19, 9, 33, 3, 1), // 2 tiles wide, C off CC, K off 32
            p(1, 11, 9, 8, 16, 3, 0).with_stride(2), // stride 2, odd H, pad 0
            p(1, 10, 10, 4, 8, 3, 2).with_dilation(2), // dilation 2
            p(1, 13, 11, 3, 8, 7, 3).with_stride(2), // 7×7/2 (dense patch 21×37)
            p(1, 21, 22, 2, 4, 7, 1).with_stride(2).with_dilation(3), // per-tap staging
            p(1, 6, 6, 12, 8, 5, 2).with_epilogue(false, false), // no bias, no ReLU
            p(3, 4, 3, 8, 8, 1, 0).with_epilogue(true, false), // 1×1, tiles past the image
        ],
    );
}

#[test]
fn regblock_matches_float64_in_both_layouts() {
    check(
        "regblock",
        &[
            p(1, 5, 7, 3, 5, 3, 1),    // C = 3: 4-byte copies, 8 taps a tile
            p(2, 9, 11, 40, 70, 3, 1), // 2 channel blocks, 2 column tiles
            p(1, 13, 11, 32, 8, 3, 0).with_stride(2), // one channel block, pad 0
            p(1, 10, 9, 8, 16, 5, 4).with_dilation(2), // C = 8: 4 taps a tile, dilation 2
            p(1, 15, 13, 3, 16, 7, 3).with_stride(2), // the stem's 7×7/2 on C = 3
            p(1, 9, 9, 16, 24, 1, 0).with_stride(2), // 1×1/2, C = 16: 2 taps a tile
            p(1, 7, 7, 36, 12, 3, 1).with_epilogue(false, false), // no bias, no ReLU, C % 32 = 4
            p(1, 8, 8, 6, 9, 3, 1).with_epilogue(true, false), // C = 6 (not a multiple of 4)
        ],
    );
}

/// Shapes for the k-major kernel: several k-tiles (the slot-table ring wraps), the
/// reduction and K off the tiles, rows off the 64/128-row tiles, padding taps at every edge.
fn kmajor_shapes() -> Vec<Problem> {
    vec![
        p(1, 5, 7, 3, 5, 3, 1),                    // C·R·S = 27 < one k-tile
        p(2, 9, 11, 16, 70, 3, 1),                 // 144 = 4.5 k-tiles, K = 70
        p(1, 13, 11, 32, 8, 3, 0).with_stride(2),  // pad 0, stride 2
        p(1, 10, 9, 8, 16, 5, 4).with_dilation(2), // 5×5, dilation 2
        p(1, 15, 13, 3, 16, 7, 3).with_stride(2),  // the stem's 7×7/2
        p(1, 9, 9, 40, 24, 1, 0).with_stride(2),   // 1×1/2
        p(1, 7, 7, 36, 12, 3, 1).with_epilogue(false, false), // no bias, no ReLU, P·Q odd
        p(1, 8, 8, 6, 65, 3, 1).with_epilogue(true, false), // K = 65: two column tiles
        p(3, 6, 6, 20, 64, 3, 1),                  // 108 rows, P·Q % 4 = 0
    ]
}

#[test]
fn kmajor_matches_float64() {
    check_in("kmajor", &kmajor_shapes(), &[Layout::Nchw]);
}

#[test]
fn kmajor_has_no_nhwc_instantiation() {
    let pr = p(1, 5, 5, 8, 8, 3, 1);
    let got = conv::validate(&sim(), record("kmajor"), &pr, seed());
    assert!(
        matches!(got, Err(rustile::error::Error::Unsupported { .. })),
        "{got:?}"
    );
}

#[test]
fn a_planted_wrong_result_fails_the_comparison() {
    let backend = sim();
    let r = record("regblock");
    let s = seed();
    for layout in [Layout::Nhwc, Layout::Nchw] {
        let pr = p(1, 7, 9, 8, 12, 3, 1).with_layout(layout);
        let x = Inputs::random(&pr, s).unwrap();
        let which = elements_to_check(&pr, s).unwrap();
        let good = output(&backend, r, &pr, &x).unwrap();
        compare(&pr, "regblock", &x, &good, &which).unwrap();
        // One element off by a little more than its bound, one NaN.
        for planted in [1e-3f32, f32::NAN] {
            let mut bad = good.clone();
            let i = bad.len() / 2 + 1;
            bad[i] = if planted.is_nan() {
                planted
            } else {
                bad[i] + planted
            };
            assert!(
                matches!(
                    compare(&pr, "regblock", &x, &bad, &which),
                    Err(Error::Mismatch { .. })
                ),
                "{} with y[{i}] planted passed",
                pr.label()
            );
        }
        // The kernel run with dilation 2 and padding 2 (same output size, other taps).
        let wrong = Problem {
            pad: (2, 2),
            ..pr.with_dilation(2)
        };
        assert_eq!(wrong.out_hw().unwrap(), pr.out_hw().unwrap());
        let out = output(&backend, r, &wrong, &x).unwrap();
        assert!(matches!(
            compare(&pr, "regblock", &x, &out, &which),
            Err(Error::Mismatch { .. })
        ));
    }
}
