//! Validation cases: every ladder step × its dtypes and layouts × odd shapes (odd H and W,
//! stride 2 with odd H, padding 0 and "same", dilation 2, C and K off every tile, 1×1 to 7×7
//! filters, batch 1, no bias, no ReLU), sized to the back end.

use super::tma::Reduce;
use rustile_kernels::registry::{DType, KernelInfo, Layout};

use crate::backend::Backend;
use crate::error::Error;
use crate::families::{Case, Family, Scale};

use super::*;

/// The shapes every kernel is validated on with `backend` at `scale` (NHWC; the NCHW cases are
/// the same shapes in NCHW).
pub fn shapes(backend: &Backend, scale: Scale, dtype: DType) -> Vec<Problem> {
    let p = |n, h, w, c, k, rs, pad| Problem {
        w,
        ..Problem::new(n, h, h, c, k, rs, pad, dtype)
    };
    let mut v = vec![
        p(1, 5, 7, 8, 8, 3, 1),                               // tiny, batch 1
        p(2, 9, 11, 24, 40, 3, 1),                            // odd H/W, K off the tiles
        p(1, 13, 13, 16, 17, 3, 0),                           // padding 0, odd K
        p(2, 11, 9, 32, 24, 3, 1).with_stride(2),             // stride 2, odd H
        p(1, 12, 10, 16, 16, 1, 0),                           // 1×1
        p(2, 9, 9, 16, 8, 1, 0).with_stride(2),               // 1×1 stride 2
        p(1, 11, 12, 8, 24, 5, 2),                            // 5×5 same
        p(1, 15, 13, 8, 16, 7, 3).with_stride(2),             // 7×7/2 (the stem's filter)
        p(1, 10, 10, 16, 16, 3, 2).with_dilation(2),          // dilation 2
        p(1, 9, 9, 16, 24, 3, 1).with_epilogue(false, false), // no bias, no ReLU
        p(1, 8, 8, 24, 16, 3, 1).with_epilogue(true, false),  // bias, no ReLU
        p(2, 7, 9, 3, 16, 7, 3).with_stride(2),               // C = 3 (the stem)
        p(1, 6, 6, 136, 72, 3, 1),                            // C past one 128 chunk
    ];
    if matches!(backend, Backend::Gpu(_)) {
        v.extend([
            p(4, 28, 28, 64, 64, 3, 1),
            p(3, 29, 31, 128, 72, 3, 1),
            p(2, 15, 15, 256, 300, 3, 1).with_stride(2),
            p(2, 14, 14, 64, 256, 1, 0),
            p(1, 56, 56, 64, 1, 3, 1), // K = 1
            p(1, 7, 7, 512, 512, 3, 1),
        ]);
        if scale == Scale::Full {
            v.extend([
                p(8, 56, 56, 64, 64, 3, 1),
                p(8, 28, 28, 128, 128, 3, 1),
                p(8, 14, 14, 256, 256, 3, 1),
                p(8, 7, 7, 512, 512, 3, 1),
                p(8, 56, 56, 256, 128, 1, 0),
                p(8, 224, 224, 3, 64, 7, 3).with_stride(2),
            ]);
        }
    }
    v
}

/// A case validating `record` on `p` with its reduction forced to `reduce`, labelled
/// `<problem> <what>`.
fn forced_case(record: &'static KernelInfo, p: Problem, what: &str, reduce: Reduce) -> Case {
    Case::new(
        kernel_label(record),
        p.dtype,
        format!("{} {what}", p.label()),
        move |b: &Backend, seed| validate_split(b, record, &p, seed, reduce).map(|_| ()),
    )
}

/// The cases of `record` that `backend` can run at `scale`.
pub fn cases_of(backend: &Backend, record: &'static KernelInfo, scale: Scale) -> Vec<Case> {
    let mut out = Vec::new();
    for e in record.symbols {
        if e.dtype != e.out {
            continue;
        }
        for base in shapes(backend, scale, e.dtype) {
            let p = base.with_layout(e.layout);
            if p.check().is_err() || runnable(Target::of(backend), record, &p).is_err() {
                continue;
            }
            let kernel = kernel_label(record);
            out.push(Case::new(
                kernel,
                e.dtype,
                p.label(),
                move |b: &Backend, seed| validate(b, record, &p, seed).map(|_| ()),
            ));
        }
    }
    // The f32 `regblock` step's split-K, forced: uneven parts, more parts than k-tiles (empty
    // parts), no bias / no ReLU, C = 3 and C past a 32-channel window, both layouts.
    if splits_k(record) {
        for e in record.symbols {
            for (base, splits) in [
                (Problem::new(2, 9, 11, 24, 40, 3, 1, e.dtype), 2),
                (Problem::new(2, 9, 11, 24, 40, 3, 1, e.dtype), 5),
                (Problem::new(2, 9, 11, 24, 40, 3, 1, e.dtype), 16),
                (
                    Problem::new(1, 6, 6, 136, 72, 3, 1, e.dtype).with_epilogue(false, false),
                    7,
                ),
                (
                    Problem::new(2, 7, 9, 3, 16, 7, 3, e.dtype).with_stride(2),
                    3,
                ),
                (Problem::new(1, 7, 7, 512, 512, 3, 1, e.dtype), 5),
            ] {
                let p = base.with_layout(e.layout);
                if p.check().is_err() || runnable(Target::of(backend), record, &p).is_err() {
                    continue;
                }
                if matches!(backend, Backend::Simulator(_)) && p.c == 512 {
                    continue; // the 7² × 512 layer: GPU only (minutes in the simulator)
                }
                out.push(forced_case(record, p, &format!("split {splits}"), Reduce::Split(splits)));
            }
        }
    }
    // Split-K is disabled (`tma::SPLIT_K_ENABLED`): when it is on, validate it forced 2, 3, 4
    // and 7 ways, with and without bias and ReLU, C and K on and off the tiles.
    if super::tma::SPLIT_K_ENABLED && record.needs.tma && matches!(backend, Backend::Gpu(_)) {
        for e in record.symbols {
            for (splits, bias, c, k) in [
                (2, true, 24, 40),
                (3, false, 24, 40),
                (7, true, 24, 40),
                (2, false, 64, 64),
                (4, true, 128, 128),
            ] {
                let p = Problem::new(2, 9, 11, c, k, 3, 1, e.dtype).with_epilogue(bias, bias);
                if runnable(Target::of(backend), record, &p).is_err() {
                    continue;
                }
                out.push(forced_case(record, p, &format!("split {splits}"), Reduce::Split(splits)));
            }
        }
    }
    // Stream-K, forced (the 64- and 128-wide tiles): tiles cut across two or more blocks, a
    // block holding several tiles' segments, one k-tile per tile, bias on and off, K off the
    // tile width, and shapes with fewer k-iterations than SMs (fewer blocks).
    let tile_bn = match record.launch {
        rustile_kernels::registry::Launch::Persistent { tile: (_, bn) } => bn,
        _ => 0,
    };
    let stream_k = super::tma::stream_k_capable(record);
    if record.needs.tma && matches!(backend, Backend::Gpu(_)) && tile_bn <= 128 && !stream_k {
        // Two blocks per SM: stream-K needs every block resident at once (one per SM); ping-pong
        // consumers own whole tiles. The launcher refuses it with a typed error.
        for e in record.symbols {
            let p = Problem::new(8, 7, 7, 512, 512, 3, 1, e.dtype).with_epilogue(true, true);
            out.push(Case::new(
                kernel_label(record),
                e.dtype,
                format!("{} stream-K refused", p.label()),
                move |b: &Backend, seed| match validate_split(b, record, &p, seed, Reduce::StreamK)
                {
                    Err(Error::Unsupported { .. }) => Ok(()),
                    Err(e) => Err(e),
                    Ok(_) => Err(Error::Mismatch {
                        kernel: kernel_label(record),
                        shape: p.label(),
                        detail: "stream-K on a width without it (two blocks per SM or ping-pong) ran instead of being refused".into(),
                    }),
                },
            ));
        }
    }
    if matches!(backend, Backend::Gpu(_)) && stream_k {
        for e in record.symbols {
            for (n, hw, c, k, rs, bias) in [
                (2, 9, 24, 40, 3, true),
                (1, 7, 512, 200, 3, true),
                (4, 14, 256, 256, 3, false),
                (8, 7, 512, 512, 3, true),
                (3, 11, 64, 72, 1, true),
                (32, 7, 512, 512, 3, true),
            ] {
                let p =
                    Problem::new(n, hw, hw, c, k, rs, rs / 2, e.dtype).with_epilogue(bias, bias);
                if runnable(Target::of(backend), record, &p).is_err() {
                    continue;
                }
                out.push(forced_case(record, p, "stream-K", Reduce::StreamK));
            }
            // Tiles cut into k-segments, one block each: even cuts (72 k-tiles in 2 or 3),
            // uneven ones (9 k-tiles in 2 or 5: a block's range crosses into the next tile), one
            // tile and many, and the 7² × 512 layer at batch 32 on the 128-wide tile (52 tiles
            // in 104 blocks; the 64-wide tile's 208 blocks would not all be resident).
            for (n, hw, c, k, bias, cut) in [
                (2, 9, 24, 40, true, 2),
                (2, 9, 24, 40, false, 5),
                (8, 7, 512, 512, true, 2),
                (8, 7, 512, 512, false, 3),
                (32, 7, 512, 512, true, 2),
            ] {
                if n == 32 && tile_bn != 128 {
                    continue;
                }
                let p = Problem::new(n, hw, hw, c, k, 3, 1, e.dtype).with_epilogue(bias, bias);
                if runnable(Target::of(backend), record, &p).is_err() {
                    continue;
                }
                out.push(forced_case(record, p, &format!("cut {cut}"), Reduce::Cut(cut)));
            }
        }
    }
    out
}

impl Family for Conv {
    fn name(&self) -> &'static str {
        rustile_kernels::conv::FAMILY.name
    }

    fn about(&self) -> &'static str {
        rustile_kernels::conv::FAMILY.about
    }

    fn cases(&self, backend: &Backend, scale: Scale) -> Vec<Case> {
        ladder()
            .chain(rustile_kernels::registry::of(
                rustile_kernels::conv::FAMILY,
                rustile_kernels::registry::Role::Tuning,
            ))
            .flat_map(|r| cases_of(backend, r, scale))
            .collect()
    }

    fn command(&self) -> Option<clap::Command> {
        Some(<super::cli::ConvCli as clap::CommandFactory>::command())
    }

    fn check_command(&self, matches: &clap::ArgMatches) -> std::result::Result<(), clap::Error> {
        <super::cli::ConvCli as clap::FromArgMatches>::from_arg_matches(matches).map(|_| ())
    }

    fn run_command(&self, matches: &clap::ArgMatches) -> crate::error::Result<()> {
        super::cli::main(matches)
    }

    fn fuzz(
        &self,
        backend: &Backend,
        rng: &mut dyn rand::RngCore,
    ) -> Option<crate::families::fuzz::Fuzzed> {
        super::fuzz::case(backend, rng)
    }
}

/// Layouts a problem can take, for the CLI.
pub const LAYOUTS: [Layout; 2] = [Layout::Nhwc, Layout::Nchw];
