//! Random convolution cases: any ladder or tuning record the back end runs (the f32 direct
//! steps in NHWC and NCHW, the `mma.sync` implicit GEMMs, `kmajor`; on the GPU also the
//! TMA + `wgmma` kernels on sm_90a, with the estimate's reduction, forced stream-K or a forced
//! split-K) and the dispatcher's pick; batch, image, channels and output channels from 1
//! across the tiles; square and non-square filters of every built size; stride, padding and
//! dilation 1 to 3 (independently per direction); bias and ReLU on or off. Channel counts the
//! 16-byte-load kernels cannot take (one case in ten for them) must be refused with a typed
//! error. Checked against float64 with the per-dtype bound.

use rand::{Rng, RngCore};
use rustile_kernels::registry::{KernelInfo, Launch, Role};

use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::families::fuzz::{pick, size, Fuzzed, Size};
use crate::families::Case;
use crate::ptx::Flavour;

use super::tma::{Reduce, MAX_SPLITS};
use super::*;

/// Most multiply-adds (`N·P·Q · K · R·S·C`) per case: the simulator's budget, and on the GPU
/// the float64 reference's (every output element, on every core).
const SIM_WORK: usize = 1 << 18;
const GPU_WORK: usize = 1 << 27;

/// What runs a case: a record (`None`: the dispatcher's pick) and the TMA kernel's reduction.
#[derive(Clone, Copy, Debug)]
struct Runner {
    record: Option<&'static KernelInfo>,
    reduce: Reduce,
}

impl Runner {
    fn name(&self) -> String {
        let base = self.record.map_or_else(|| "conv/auto".into(), kernel_label);
        match self.reduce {
            Reduce::Auto => base,
            Reduce::StreamK => format!("{base} stream-K"),
            Reduce::Split(s) => format!("{base} split {s}"),
            Reduce::Cut(n) => format!("{base} cut {n}"),
        }
    }
}

/// A random convolution case for `backend`.
pub fn case(backend: &Backend, rng: &mut dyn RngCore) -> Option<Fuzzed> {
    let sz = Size::of(backend);
    let target = Target::of(backend);
    // (record, entry index) pairs the back end has code for, plus the dispatcher's pick.
    let mut choices: Vec<(Option<&'static KernelInfo>, usize)> = ladder()
        .chain(rustile_kernels::registry::of(
            rustile_kernels::conv::FAMILY,
            Role::Tuning,
        ))
        .flat_map(|r| {
            r.symbols
                .iter()
                .enumerate()
                .filter(move |(_, e)| e.dtype == e.out)
                .filter(move |(_, e)| match target {
                    Target::Simulator => e.sim.is_some(),
                    Target::Gpu { flavour } => r.in_flavour(flavour == Flavour::Sm90a),
                })
                .map(move |(i, _)| (Some(r), i))
        })
        .collect();
    if choices.is_empty() {
        return None;
    }
    choices.push((None, 0));
    let (record, entry) = pick(rng, &choices);
    let (dtype, layout) = match record {
        Some(r) => (r.symbols[entry].dtype, r.symbols[entry].layout),
        None => {
            let (r, i) = pick(rng, &choices[..choices.len() - 1]);
            let e = &r?.symbols[i];
            (e.dtype, e.layout)
        }
    };
    // Channel rows in whole 16-byte chunks for the kernels that load them so, except one case
    // in ten.
    let align = record.map_or(1, |r| r.needs.align as usize) > 1 && rng.random_bool(0.9);
    let step = if align { 16 / dtype.bytes() } else { 1 };
    let p = problem(rng, sz, dtype, layout, step)?;
    let reduce = match record {
        Some(r) if r.needs.tma => reduction(rng, r, &p),
        _ => Reduce::Auto,
    };
    let runner = Runner { record, reduce };
    let refusal = match record {
        Some(r) => runnable(target, r, &p).err(),
        None => select(target, &p).err(),
    }
    .map(|e| e.to_string());
    let name = runner.name();
    let check_name = name.clone();
    let case = Case::new(name, dtype, p.label(), move |backend: &Backend, seed| {
        let ran = run_case(backend, runner, &p, seed, |b, r, x| {
            let which = elements_to_check(&p, seed)?;
            compare(&p, &kernel_label(r), x, b, &which).map(|_| ())
        });
        match (&refusal, ran) {
            (None, ran) => ran,
            (Some(_), Err(Error::Unsupported { .. })) => Ok(()),
            (Some(why), other) => Err(Error::Mismatch {
                kernel: check_name.clone(),
                shape: p.label(),
                detail: format!("expected a refusal ({why}), got {other:?}"),
            }),
        }
    });
    Some(Fuzzed::new(case, move |backend: &Backend, seed| {
        let mut bytes = Vec::new();
        run_case(backend, runner, &p, seed, |got, _, _| {
            bytes = bytemuck::cast_slice(got).to_vec();
            Ok(())
        })?;
        Ok(bytes)
    }))
}

/// Runs the case once on fresh inputs from `seed` and hands the output, the record that ran
/// and the inputs to `then`.
fn run_case(
    backend: &Backend,
    runner: Runner,
    p: &Problem,
    seed: u64,
    mut then: impl FnMut(&[f32], &'static KernelInfo, &Inputs) -> Result<()>,
) -> Result<()> {
    p.check()?;
    let record = match runner.record {
        Some(r) => r,
        None => select(Target::of(backend), p)?,
    };
    let x = Inputs::random(p, seed)?;
    let got = output_split(backend, record, p, &x, runner.reduce)?;
    then(&got, record, &x)
}

/// The TMA kernel's reduction: the estimate's choice about half the time, else stream-K
/// (tiles up to 128 wide), split-K into 2 to 8 parts (at most one per k-tile), or tiles cut
/// into 2 to 4 k-segments (tiles up to 128 wide, one block per SM, at most 64 blocks: every
/// sm_90 part has more SMs).
fn reduction(rng: &mut dyn RngCore, record: &'static KernelInfo, p: &Problem) -> Reduce {
    let bn = match record.launch {
        Launch::Persistent { tile: (_, bn) } => bn,
        _ => 0,
    };
    let kt = (p.r * p.s * p.c.div_ceil(rustile_kernels::conv::v05_wgmma::BK as usize)) as u32;
    // Stream-K needs one block per SM and consumers sharing a tile (the launcher refuses it
    // for the two-block and ping-pong widths).
    let one_block = super::tma::stream_k_capable(record);
    let tiles = p.gemm_dims().map_or(u64::MAX, |(m, n, _)| {
        (m as u64).div_ceil(rustile_kernels::conv::v05_wgmma::BM as u64) * (n as u64).div_ceil(bn.max(1) as u64)
    });
    match rng.random_range(0..5u32) {
        0 if bn <= 128 && one_block => Reduce::StreamK,
        1 if kt >= 2 => Reduce::Split(rng.random_range(2..=kt.min(MAX_SPLITS))),
        2 if bn <= 128 && one_block && kt >= 2 => {
            let n = rng.random_range(2..=kt.min(4));
            if tiles * n as u64 <= 64 {
                Reduce::Cut(n)
            } else {
                Reduce::Auto
            }
        }
        _ => Reduce::Auto,
    }
}

/// A random problem in `dtype` and `layout` with `C` a multiple of `step`, within the back
/// end's budget; `None` if no draw gives an output.
fn problem(
    rng: &mut dyn RngCore,
    sz: Size,
    dtype: rustile_kernels::registry::DType,
    layout: rustile_kernels::registry::Layout,
    step: usize,
) -> Option<Problem> {
    let (img, chans, batch, work) = sz.pick((20, 72, 2, SIM_WORK), (64, 320, 8, GPU_WORK));
    for _ in 0..16 {
        let rs = pick(rng, &FILTER_SIZES);
        let s = if rng.random_bool(0.2) {
            pick(rng, &FILTER_SIZES)
        } else {
            rs
        };
        let pair = |rng: &mut dyn RngCore, max: usize, lo: usize| {
            let a = rng.random_range(lo..=max);
            if rng.random_bool(0.2) {
                (a, rng.random_range(lo..=max))
            } else {
                (a, a)
            }
        };
        let stride = if rng.random_bool(0.5) {
            (1, 1)
        } else {
            pair(rng, 3, 1)
        };
        let dil = if rng.random_bool(0.7) {
            (1, 1)
        } else {
            pair(rng, 3, 1)
        };
        let pad = pair(rng, rs.max(s) / 2 + 1, 0);
        let c = size(rng, chans, &[8, 16, 32, 64]).next_multiple_of(step);
        let mut p = Problem {
            n: size(rng, batch, &[]),
            h: size(rng, img, &[7, 8]),
            w: size(rng, img, &[7, 8]),
            c,
            k: size(rng, chans, &[16, 32, 64, 128]),
            r: rs,
            s,
            stride,
            pad,
            dil,
            dtype,
            layout,
            bias: rng.random_bool(0.5),
            relu: rng.random_bool(0.5),
        };
        // Odd filters always fit with "same" padding and no dilation.
        if p.out_hw().is_err() {
            p.dil = (1, 1);
            p.pad = (p.r / 2, p.s / 2);
        }
        // Shrink batch, then output channels, then the image, to the budget.
        while let Ok((m, n, red)) = p.gemm_dims() {
            if m * n * red <= work {
                break;
            }
            if p.n > 1 {
                p.n -= 1;
            } else if p.k > 16 {
                p.k = p.k.div_ceil(2);
            } else if p.h.max(p.w) > 1 {
                if p.h >= p.w {
                    p.h = p.h.div_ceil(2);
                } else {
                    p.w = p.w.div_ceil(2);
                }
            } else if p.c > step {
                p.c = (p.c / 2).next_multiple_of(step);
            } else {
                break;
            }
        }
        if p.check().is_ok() && p.gemm_dims().is_ok_and(|(m, n, r)| m * n * r <= work) {
            return Some(p);
        }
    }
    None
}
