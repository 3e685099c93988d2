//! Random tensor-core GEMM cases: f16 or bf16 in, the input type or f32 out, B row-major or
//! transposed; any variant the back end runs (in the simulator `mma`, `mma_pipeline` and its
//! tuning configurations; on the GPU also `wgmma_ws` on sm_90a and the selected kernel);
//! M, N, K from 1 (K from 0) around the 64- and 128-wide tiles and the 32-deep k-tiles;
//! padded pitches, half of them multiples of 8 elements (what the aligned-only kernels read in
//! place) and half any (the padded path, in the simulator too); one case in five with padding
//! off, where the aligned-only kernels must refuse other pitches with a typed error; α, β,
//! bias, ReLU. Checked against float64, and C's elements between rows (`ldc > n`) must be
//! untouched.

use rand::{Rng, RngCore};
use rustile_kernels::hgemm::v02_mma_pipeline::{Tuning, TUNING};
use rustile_kernels::registry::DType;

use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::families::fuzz::{padded, pick, scalar, size, Fuzzed, Size};
use crate::families::Case;
use crate::ptx::Flavour;

use super::*;

/// Largest M, N and K, and the most multiply-adds per case, by back end: the simulator's
/// budget (it runs every thread), the GPU's (the float64 reference checks every element up to
/// 2·10⁹ of them).
const SIM_DIM: usize = 260;
const SIM_WORK: usize = 1 << 19;
const GPU_DIM: usize = 2048;
const GPU_WORK: usize = 1 << 28;

/// What runs a case: a variant (`None`: the selected one, GPU only) and, for `mma_pipeline`
/// in the simulator, a tuning configuration.
#[derive(Clone, Copy)]
struct Runner {
    variant: Option<Variant>,
    tuning: Option<&'static Tuning>,
    padding: Padding,
}

impl Runner {
    fn name(&self) -> String {
        match (self.variant, self.tuning) {
            (_, Some(t)) => format!("hgemm/mma_pipeline_{}", t.name),
            (Some(v), None) => format!("hgemm/{}", v.name()),
            (None, None) => "hgemm/auto".into(),
        }
    }

    /// Whether it reads A and B only in place with pitches that are multiples of 8 elements.
    fn aligned_only(&self) -> bool {
        matches!(self.variant, Some(Variant::MmaPipeline | Variant::WgmmaWs))
            && self.padding == Padding::Never
    }
}

/// A random tensor-core GEMM case for `backend`.
pub fn case(backend: &Backend, rng: &mut dyn RngCore) -> Option<Fuzzed> {
    let sz = Size::of(backend);
    let ty = pick(rng, &[DType::F16, DType::Bf16]);
    let out = pick(rng, &[ty, DType::F32]);
    let mut runners: Vec<Runner> = match backend {
        Backend::Simulator(_) => [Variant::Mma, Variant::MmaPipeline]
            .map(|v| Runner {
                variant: Some(v),
                tuning: None,
                padding: Padding::Auto,
            })
            .to_vec(),
        Backend::Gpu(gpu) => Variant::ALL
            .into_iter()
            .filter(|v| !v.needs_sm90a() || gpu.flavour() == Flavour::Sm90a)
            .map(Some)
            .chain([None])
            .map(|variant| Runner {
                variant,
                tuning: None,
                padding: Padding::Auto,
            })
            .collect(),
    };
    // The tuning configurations are built for f16 in and out.
    if sz == Size::Sim && ty == DType::F16 && out == DType::F16 {
        runners.extend(TUNING.iter().map(|t| Runner {
            variant: Some(Variant::MmaPipeline),
            tuning: Some(t),
            padding: Padding::Auto,
        }));
    }
    let mut runner = pick(rng, &runners);
    runner.padding = pick(
        rng,
        &[Padding::Never, Padding::Auto, Padding::Auto, Padding::Auto, Padding::Inputs],
    );
    let b = pick(rng, &[BLayout::RowMajor, BLayout::Transposed]);
    let (dim, work) = sz.pick((SIM_DIM, SIM_WORK), (GPU_DIM, GPU_WORK));
    let (m, n, k) = dims(rng, dim, work);
    let mut p = Problem::new(ty, m, n, k).with_b(b);
    p.out = out;
    p.alpha = scalar(rng);
    p.beta = scalar(rng);
    p.relu = rng.random_bool(0.5);
    let bias = rng.random_bool(0.5);
    // Pitches: multiples of 8 elements (what TMA and the 16-byte loads need) in half the cases,
    // any in the rest (the padded path, or with padding off a refusal from the aligned-only
    // kernels).
    let aligned = rng.random_bool(0.5);
    let pitch = |rng: &mut dyn RngCore, row: usize| {
        if aligned {
            padded(rng, row.next_multiple_of(8), 8, 3)
        } else {
            padded(rng, row, 1, 9)
        }
    };
    p.lda = pitch(rng, p.lda);
    p.ldb = pitch(rng, p.ldb);
    p.ldc = padded(rng, p.ldc, 1, 9);
    let mut shape = format!("{} {}→{}", p.shape(), p.b.tag(), p.out.name());
    if (p.alpha, p.beta) != (1.0, 0.0) {
        shape += &format!(" α={} β={}", p.alpha, p.beta);
    }
    if bias {
        shape += " bias";
    }
    if p.relu {
        shape += " relu";
    }
    shape += &format!(" ld {}/{}/{}", p.lda, p.ldb, p.ldc);
    if runner.padding != Padding::Auto {
        shape += &format!(" pad={}", runner.padding.name());
    }
    let case = Case::new(runner.name(), ty, shape, move |backend: &Backend, seed| {
        check(backend, runner, &p, bias, seed)
    });
    Some(Fuzzed::new(case, move |backend: &Backend, seed| {
        let (_, got, _) = run_case(backend, runner, &p, bias, seed)?;
        Ok(bytemuck::cast_slice(&got).to_vec())
    }))
}

/// `(m, n, k)` with at most `work` multiply-adds.
fn dims(rng: &mut dyn RngCore, dim: usize, work: usize) -> (usize, usize, usize) {
    let mut m = size(rng, dim, &[16, 64, 128]);
    let mut n = size(rng, dim, &[8, 64, 128]);
    let mut k = if rng.random_bool(0.04) {
        0
    } else {
        size(rng, dim, &[16, 32, 64])
    };
    while m * n * k.max(1) > work {
        if k >= m && k >= n {
            k = k.div_ceil(2);
        } else if m >= n {
            m = m.div_ceil(2);
        } else {
            n = n.div_ceil(2);
        }
    }
    (m, n, k)
}

/// One run: the inputs, C after it (widened) and the variant that ran.
fn run_case(
    backend: &Backend,
    runner: Runner,
    p: &Problem,
    bias: bool,
    seed: u64,
) -> Result<(Inputs, Vec<f32>, Ran)> {
    p.check()?;
    let what = format!("hgemm {}: A, B and C", p.shape());
    match backend {
        Backend::Simulator(sim) => {
            let variant = runner.variant.ok_or_else(|| Error::Unsupported {
                kernel: runner.name(),
                what: "the selected kernel runs on a GPU only".into(),
            })?;
            sim_supports_with(variant, runner.tuning, runner.padding, p)?;
            sim.check_fits(p.bytes()?, &what)?;
            let x = Inputs::random(p, bias, seed)?;
            let (got, padded) =
                sim_output_with(sim, variant, runner.tuning, runner.padding, p, &x)?;
            Ok((x, got, Ran { variant, padded }))
        }
        Backend::Gpu(gpu) => {
            gpu.check_fits(p.bytes()?, &what)?;
            let x = Inputs::random(p, bias, seed)?;
            let opts = Options {
                variant: runner.variant,
                padding: runner.padding,
                ..Options::default()
            };
            let (got, ran) = gpu_output_with(gpu, &opts, p, &x)?;
            Ok((x, got, ran))
        }
    }
}

/// The case's check: a refusal ([`Error::Unsupported`]) where an aligned-only kernel was
/// given other pitches, else the float64 comparison and untouched padding in C.
fn check(backend: &Backend, runner: Runner, p: &Problem, bias: bool, seed: u64) -> Result<()> {
    let ran = run_case(backend, runner, p, bias, seed);
    if runner.aligned_only() && !p.tma_ok([0, 0]) {
        return match ran {
            Err(Error::Unsupported { .. }) => Ok(()),
            other => Err(Error::Mismatch {
                kernel: runner.name(),
                shape: p.shape(),
                detail: format!(
                    "pitches {}/{} are not multiples of 8 elements: expected a refusal, got {:?}",
                    p.lda,
                    p.ldb,
                    other.map(|(_, _, ran)| ran.variant)
                ),
            }),
        };
    }
    let (x, got, used) = ran?;
    let in_place = matches!(used.variant, Variant::MmaPipeline | Variant::WgmmaWs);
    if in_place && !p.tma_ok([0, 0]) && used.padded.a.is_none() && used.padded.b.is_none() {
        return Err(Error::Mismatch {
            kernel: runner.name(),
            shape: p.shape(),
            detail: format!(
                "hgemm/{} ran on pitches {}/{} without padding A or B",
                used.variant.name(),
                p.lda,
                p.ldb
            ),
        });
    }
    let init: Vec<u32> = match p.out {
        DType::F32 => x.c_before_f32(p).iter().map(|v| v.to_bits()).collect(),
        _ => x
            .c_before_half(p)
            .iter()
            .map(|&h| widen(p.ty, h).to_bits())
            .collect(),
    };
    for i in 0..p.m.saturating_sub(1) {
        for j in p.n..p.ldc {
            let at = i * p.ldc + j;
            if got[at].to_bits() != init[at] {
                return Err(Error::Mismatch {
                    kernel: runner.name(),
                    shape: p.shape(),
                    detail: format!("wrote C[{i}][{j}], outside the n = {} columns", p.n),
                });
            }
        }
    }
    super::validate::finish(p, &x, got, used, seed).map(|_| ())
}
