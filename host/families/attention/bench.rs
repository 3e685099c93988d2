//! `rustile attention bench`: TFLOP/s of every kernel the device runs, on the shapes the
//! PyTorch baselines (`scripts/sdpa_bench.py`) run, timed the way the other benches are
//! ([`crate::harness::time`]: warm-up, CUDA events around each repetition, the L2 flushed
//! before each, the median).
//!
//! The default sweep is the anchors' ([`Sweep::default`]): N = 512 … 16384 at a constant
//! `B·N = 16384` tokens of `H = 16` heads, d 64 and 128, causal and not; then `B·H` from one
//! head to a full machine and beyond at N = 4096, d = 128 ([`bh_shape`]). FLOPs are
//! [`Shape::flops`]: `4·B·H·Nq·Nkv·d`, about half of it causal (the pairs the mask lets through).
//! Rows and tables: [`super::report`].

use cudarc::driver::CudaSlice;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rayon::prelude::*;
use rustile_kernels::registry::DType;

use crate::elem::round_bits;
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::harness::{self, L2Mode, TimingConfig};

use super::report::BenchRow;
pub use super::sweep::*;
use super::*;

/// One timing to take: a shape and the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    /// The shape.
    pub shape: BenchShape,
    /// The kernel.
    pub variant: Variant,
}

/// A kernel left out of a shape, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skip {
    /// The shape.
    pub shape: BenchShape,
    /// The kernel.
    pub variant: Variant,
    /// Why ([`Variant::supports`]'s error, or the default's `naive` rule).
    pub why: String,
}

/// Which kernels run which shapes on `target` in `dtype`: `chosen`, or by default every
/// variant of the registry ([`Variant::all`]) that [`Variant::supports`] the shape there —
/// `naive` only up to [`NAIVE_MAX_N`]. Pure: no GPU needed.
pub fn plan(
    target: Target,
    dtype: DType,
    shapes: &[BenchShape],
    chosen: Option<&[Variant]>,
) -> (Vec<Run>, Vec<Skip>) {
    let variants = chosen.map_or_else(Variant::all, <[Variant]>::to_vec);
    let (mut runs, mut skips) = (Vec::new(), Vec::new());
    for &shape in shapes {
        let p = Problem::new(dtype, shape.shape());
        for &variant in &variants {
            let why = if chosen.is_none() && variant == Variant::naive() && shape.n > NAIVE_MAX_N {
                Some(format!(
                    "runs by default only at N ≤ {NAIVE_MAX_N} (ask for it with --variants)"
                ))
            } else {
                p.check()
                    .and_then(|()| variant.supports(target, &p, None))
                    .err()
                    .map(|e| e.to_string())
            };
            match why {
                None => runs.push(Run { shape, variant }),
                Some(why) => skips.push(Skip {
                    shape,
                    variant,
                    why,
                }),
            }
        }
    }
    (runs, skips)
}

/// How [`run`] times.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// Element type of Q, K, V and O.
    pub dtype: DType,
    /// Warm-up and repetitions; the L2 mode is always [`L2Mode::Flush`].
    pub timing: TimingConfig,
    /// Compare sampled rows of the first launch's output with float64 before timing.
    pub check: bool,
    /// Seed of the inputs.
    pub seed: u64,
}

/// `len` random elements of `dtype` in `[−r, r)`, generated in parallel chunks (a 256-head
/// tensor is 10⁸ elements).
fn random_bits(dtype: DType, len: usize, r: f32, seed: u64) -> Vec<u16> {
    let mut v = vec![0u16; len];
    v.par_chunks_mut(1 << 20)
        .enumerate()
        .for_each(|(i, chunk)| {
            let mut rng =
                SmallRng::seed_from_u64(seed ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
            for x in chunk {
                *x = round_bits(dtype, rng.random_range(-r..r)) as u16;
            }
        });
    v
}

/// Times each of `runs` on `gpu` (runs of one shape share its inputs), after checking sampled
/// rows of its first output against float64 when `cfg.check`. `progress` hears about each
/// step before it runs.
pub fn run(
    gpu: &Gpu,
    cfg: &Config,
    runs: &[Run],
    mut progress: impl FnMut(&str),
) -> Result<Vec<BenchRow>> {
    let mut rows = Vec::new();
    let mut i = 0;
    while i < runs.len() {
        let shape = runs[i].shape;
        let end = runs[i..]
            .iter()
            .position(|r| r.shape != shape)
            .map_or(runs.len(), |k| i + k);
        progress(&format!("inputs {}", shape.shape().describe()));
        rows.extend(run_shape(gpu, cfg, shape, &runs[i..end], &mut progress)?);
        i = end;
    }
    Ok(rows)
}

/// The five buffers of one forward, as [`prepare`] and [`Prepared::launch`] take them.
fn buffers<'a>(
    dtype: DType,
    [q, k, v]: [&'a CudaSlice<u16>; 3],
    o: &'a mut CudaSlice<u16>,
    lse: &'a mut CudaSlice<f32>,
) -> Buffers<'a> {
    Buffers {
        q: Input { dtype, data: q },
        k: Input { dtype, data: k },
        v: Input { dtype, data: v },
        o: Output { dtype, data: o },
        lse,
    }
}

fn run_shape(
    gpu: &Gpu,
    cfg: &Config,
    shape: BenchShape,
    runs: &[Run],
    progress: &mut impl FnMut(&str),
) -> Result<Vec<BenchRow>> {
    let p = Problem::new(cfg.dtype, shape.shape());
    p.check()?;
    let (spans, dtype) = (p.spans()?, p.dtype);
    let seed = cfg.seed ^ ((shape.n as u64) << 20) ^ (shape.b * shape.h) as u64;
    // Q and K in [−2, 2), V in [−1, 1), as `Inputs::random` draws them.
    let x = Inputs {
        bufs: vec![
            random_bits(dtype, spans[0], 2.0, seed),
            random_bits(dtype, spans[1], 2.0, seed ^ 0x9E37_79B9),
            random_bits(dtype, spans[2], 1.0, seed ^ 0x5151_5151),
        ],
        at: [(0, 0), (1, 0), (2, 0)],
    };
    let qkv = x
        .bufs
        .iter()
        .map(|b| gpu.upload(b, "attention input"))
        .collect::<Result<Vec<CudaSlice<u16>>>>()?;
    let qkv = [&qkv[0], &qkv[1], &qkv[2]];
    let mut o = gpu.alloc::<u16>(spans[3], "attention O")?;
    let mut lse = gpu.alloc::<f32>(p.shape.lse_len(), "attention LSE")?;
    let check_rows = if cfg.check {
        rows_to_check(&p, seed)
    } else {
        Vec::new()
    };
    let timing = TimingConfig {
        mode: L2Mode::Flush,
        ..cfg.timing
    };
    let mut out = Vec::new();
    for r in runs {
        let name = r.variant.kernel_name(p.shape.head_dim);
        let what = format!("{name} {}", p.shape.describe());
        let mut prep = prepare(
            gpu,
            Some(r.variant),
            &p,
            &mut buffers(dtype, qkv, &mut o, &mut lse),
        )?;
        let mut comparison = Comparison::default();
        if cfg.check {
            progress(&format!("check {what}"));
            gpu.fill(&mut o, POISON, "attention O")?;
            gpu.fill(&mut lse, f32::NAN, "attention LSE")?;
            prep.launch(gpu.stream(), &mut buffers(dtype, qkv, &mut o, &mut lse))?;
            let got_o = gpu.download(&o, "attention O")?;
            let got_lse = gpu.download(&lse, "attention LSE")?;
            comparison = compare(&p, &x, &got_o, &got_lse, &check_rows).map_err(|e| match e {
                Error::Mismatch { shape, detail, .. } => Error::Mismatch {
                    kernel: name.clone(),
                    shape,
                    detail,
                },
                e => e,
            })?;
        }
        progress(&format!("time {what}"));
        let stream = gpu.stream().clone();
        let mut bufs = buffers(dtype, qkv, &mut o, &mut lse);
        let stats = harness::time(gpu, &timing, |_| prep.launch(&stream, &mut bufs))?;
        out.push(BenchRow::new(
            &gpu.info().name,
            shape,
            dtype,
            r.variant,
            prep.record(),
            stats,
            comparison,
        ));
    }
    Ok(out)
}
