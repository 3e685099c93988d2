//! Launch plans of the kernels that take the family's common arguments (every step but the
//! TMA one): `x, w, bias, y` and the packed geometry, over a grid of the record's tiles of the
//! implicit GEMM's `N·P·Q × K` output.

use rustile_kernels::conv::{combine, v03_regblock as regblock};
use rustile_kernels::registry::{Entry, KernelInfo, Launch, Layout};

use crate::error::{Error, Result};
use crate::launch::{Arg, LaunchPlan};

use super::Problem;

/// The grid limits every CUDA device has: `x < 2³¹`, `y, z ≤ 65535`.
pub const GRID_LIMITS: (u64, u64, u64) = (i32::MAX as u64, 65535, 65535);

/// Device addresses of one launch's buffers (`bias` 0: none).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Addrs {
    /// Activations.
    pub x: u64,
    /// Weights.
    pub w: u64,
    /// Bias (f32), or 0.
    pub bias: u64,
    /// Output.
    pub y: u64,
}

/// `conv/<variant>`.
pub fn kernel_label(record: &KernelInfo) -> String {
    format!("conv/{}", record.name)
}

/// The entry of `record` for `p`'s dtype and layout.
pub fn entry(record: &'static KernelInfo, p: &Problem) -> Result<&'static Entry> {
    record
        .entry_for(p.dtype, p.dtype, p.layout)
        .ok_or_else(|| Error::Unsupported {
            kernel: kernel_label(record),
            what: format!(
                "no {} {} instantiation",
                p.dtype.name(),
                super::layout_name(p.layout)
            ),
        })
}

/// The grid of `record` over `p`'s output.
pub fn grid(record: &'static KernelInfo, p: &Problem) -> Result<(u64, u64, u64)> {
    let (m, n, _) = p.gemm_dims()?;
    let grid = match record.launch {
        Launch::Tiles { .. } => record
            .launch
            .tile_grid(m as u64, n as u64)
            .unwrap_or((1, 1, 1)),
        other => {
            return Err(Error::Unsupported {
                kernel: kernel_label(record),
                what: format!("launch shape {other:?} is not the family's common tiled launch"),
            })
        }
    };
    let (lx, ly, lz) = GRID_LIMITS;
    if grid.0 > lx || grid.1 > ly || grid.2 > lz {
        return Err(Error::TooLarge {
            kernel: kernel_label(record),
            what: format!(
                "{}: grid {grid:?} exceeds the limits {GRID_LIMITS:?}",
                p.label()
            ),
        });
    }
    Ok(grid)
}

/// The one launch of a common-argument kernel `record` on `p` with buffers at `a`.
pub fn plan(p: &Problem, record: &'static KernelInfo, a: &Addrs) -> Result<LaunchPlan<'static>> {
    let entry = entry(record, p)?;
    let grid = grid(record, p)?;
    let mut args = vec![
        Arg::Ptr(a.x),
        Arg::Ptr(a.w),
        Arg::Ptr(a.bias),
        Arg::Ptr(a.y),
    ];
    args.extend(p.scalar_args()?.into_iter().map(Arg::U32));
    Ok(LaunchPlan::new(record, entry, grid, args))
}

/// Whether `record` takes split-K over its grid's z (the f32 `regblock` step: block z reduces
/// a contiguous range of the k-tiles, and with more than one part writes raw partial sums for
/// the `combine_f32` fix-up).
pub fn splits_k(record: &'static KernelInfo) -> bool {
    // By name: a `const` record has no single address across crates.
    record.family == regblock::INFO.family && record.name == regblock::INFO.name
}

/// µs per k-tile of one `regblock` block (128 × 64 × 32): 1.83 measured on the ResNet-50 14²
/// and 7² 3×3 layers in NHWC at batch 32 (H100, session 13: 263.6 µs for two waves of 72
/// k-tiles, 257.9 µs for one wave of 144).
pub const REGBLOCK_KT_US: f64 = 1.83;
/// The split-K fix-up's fixed cost, µs: the `combine_f32` launch and its tail.
pub const SPLIT_FIXUP_US: f64 = 6.0;
/// The rate at which the partial sums make their round trip (written by the parts, read by
/// the fix-up), bytes per µs: they are a few MB, held in L2.
pub const SPLIT_BYTES_PER_US: f64 = 5.0e6;
/// At most this many parts.
pub const MAX_DIRECT_SPLITS: u32 = 16;
/// A part reduces at least this many k-tiles.
pub const MIN_PART_K_TILES: u32 = 4;
/// A split must be estimated this much faster than whole tiles to be chosen.
pub const SPLIT_MARGIN: f64 = 0.95;

/// The `regblock` estimate of `p` in `splits` parts on `sms` SMs, µs: the busiest SM's waves
/// of blocks times each part's k-tiles, plus the fix-up (its launch and the partial sums'
/// round trip) when split.
pub fn direct_estimate(p: &Problem, sms: u32, splits: u32) -> Result<f64> {
    let (m, n, _) = p.gemm_dims()?;
    let (tm, tn) = regblock::TILE;
    let tiles = (m.div_ceil(tm as usize) * n.div_ceil(tn as usize)) as u64;
    let count = regblock::k_tiles(p.c as u32, (p.r * p.s) as u32) as u64;
    let s = splits.max(1) as u64;
    let waves = (tiles * s).div_ceil(sms.max(1) as u64);
    let mut us = (waves * count.div_ceil(s)) as f64 * REGBLOCK_KT_US;
    if s > 1 {
        us += SPLIT_FIXUP_US + (2 * s * (m * n) as u64 * 4) as f64 / SPLIT_BYTES_PER_US;
    }
    Ok(us)
}

/// Split-K parts for `record` on `p` with `sms` SMs: 1 unless `record` [`splits_k`], else the
/// part count (≤ [`MAX_DIRECT_SPLITS`], each ≥ [`MIN_PART_K_TILES`] k-tiles) with the lowest
/// [`direct_estimate`], taken only when it beats whole tiles by [`SPLIT_MARGIN`]. On the
/// ResNet-50 layers at batch 32 it splits the 14² (2 parts) and 7² (5 parts) 3×3 layers, whose
/// 196 and 104 tiles leave the last wave of 132 SMs part-empty.
pub fn direct_splits(record: &'static KernelInfo, p: &Problem, sms: u32) -> Result<u32> {
    if !splits_k(record) {
        return Ok(1);
    }
    let count = regblock::k_tiles(p.c as u32, (p.r * p.s) as u32);
    let whole = direct_estimate(p, sms, 1)?;
    let mut best = (1, whole);
    for s in 2..=MAX_DIRECT_SPLITS {
        if count / s < MIN_PART_K_TILES {
            break;
        }
        let e = direct_estimate(p, sms, s)?;
        if e < best.1 {
            best = (s, e);
        }
    }
    Ok(if best.1 < whole * SPLIT_MARGIN {
        best.0
    } else {
        1
    })
}

/// The parts `record` runs `p` in on `sms` SMs under `reduce`: a forced
/// [`Reduce::Split`](super::tma::Reduce) where the kernel [`splits_k`], [`direct_splits`]'
/// estimate for `Reduce::Auto`, else 1 (the other kernels, and the TMA kernel's own modes,
/// which its launcher handles).
pub fn direct_parts(
    record: &'static KernelInfo,
    p: &Problem,
    sms: u32,
    reduce: super::tma::Reduce,
) -> Result<u32> {
    use super::tma::Reduce;
    Ok(match reduce {
        Reduce::Split(n) if splits_k(record) => n,
        Reduce::Auto => direct_splits(record, p, sms)?,
        _ => 1,
    })
}

/// The split-K workspace of `splits` parts of `p` on `gpu` (`None` for one part), checked to
/// fit the device before it is allocated.
pub fn gpu_split_workspace(
    gpu: &crate::gpu::Gpu,
    p: &Problem,
    splits: u32,
) -> Result<Option<cudarc::driver::CudaSlice<f32>>> {
    let len = split_workspace_len(p, splits)?;
    if len == 0 {
        return Ok(None);
    }
    gpu.check_fits(len.saturating_mul(4), "the split-K workspace")?;
    gpu.alloc::<f32>(len, "conv split-K workspace").map(Some)
}

/// f32 words of the split-K workspace for `splits` parts of `p` (0 for one part).
pub fn split_workspace_len(p: &Problem, splits: u32) -> Result<usize> {
    let [_, _, ly] = p.lens()?;
    if splits <= 1 {
        return Ok(0);
    }
    ly.checked_mul(splits as usize).ok_or_else(|| Error::TooLarge {
        kernel: kernel_label(&regblock::INFO),
        what: format!("{}: {splits} parts of y overflow usize", p.label()),
    })
}

/// The launches of `record` on `p` in `splits` parts: the kernel over a grid whose z is the
/// part (writing partial sums into the workspace at `ws`, [`split_workspace_len`] floats),
/// then `combine_f32` into y. With one part, the plain [`plan`] and no fix-up. A split of a
/// kernel that does not [`splits_k`], or past the grid's z limit, is [`Error::Unsupported`].
pub fn split_plans(
    p: &Problem,
    record: &'static KernelInfo,
    a: &Addrs,
    splits: u32,
    ws: u64,
) -> Result<(LaunchPlan<'static>, Option<LaunchPlan<'static>>)> {
    if splits <= 1 {
        return Ok((plan(p, record, a)?, None));
    }
    let unsupported = |what: String| Error::Unsupported {
        kernel: kernel_label(record),
        what,
    };
    if !splits_k(record) {
        return Err(unsupported(format!(
            "split-K ({splits} parts) is a regblock option"
        )));
    }
    if splits as u64 > GRID_LIMITS.2 {
        return Err(unsupported(format!(
            "{splits} parts exceed the grid's z limit {}",
            GRID_LIMITS.2
        )));
    }
    let main = plan(
        p,
        record,
        &Addrs {
            y: ws,
            ..*a
        },
    )?;
    let main = LaunchPlan {
        grid: (main.grid.0, main.grid.1, splits as u64),
        ..main
    };
    let [_, _, ly] = p.lens()?;
    let total = u32::try_from(ly).map_err(|_| Error::TooLarge {
        kernel: kernel_label(&combine::INFO_F32),
        what: format!("{}: y has {ly} elements (the fix-up indexes 32 bits)", p.label()),
    })?;
    let (pp, q) = p.out_hw()?;
    let pq = match p.layout {
        Layout::Nchw => (pp * q) as u32,
        _ => 1,
    };
    let e = &combine::SYMBOLS_F32[0];
    let fix = LaunchPlan::new(
        &combine::INFO_F32,
        e,
        ((total as u64).div_ceil(combine::THREADS as u64).max(1), 1, 1),
        vec![
            Arg::Ptr(ws),
            Arg::Ptr(a.bias),
            Arg::Ptr(a.y),
            Arg::U32(total),
            Arg::U32(p.k as u32),
            Arg::U32(pq.max(1)),
            Arg::U32(splits),
            Arg::U32(p.relu as u32),
        ],
    );
    Ok((main, Some(fix)))
}
