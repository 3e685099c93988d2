//! Validation: fresh random inputs, poisoned C, float64 reference, relative error.

use rand::rngs::SmallRng;
use rand::SeedableRng;
use rustile_kernels::registry::{DType, Family, KernelInfo};

use crate::backend::Backend;
use crate::check;
use crate::elem::random_vec;
use crate::error::{Error, Result};
use crate::families::{Case, Scale};

use super::*;

/// Relative Frobenius error `‖got − want‖ / ‖want‖` over C's `m × n` (NaN → infinite).
pub fn relative_error(p: &GemmProblem, got: &[f32], want: &[f64]) -> f64 {
    let (mut num, mut den) = (0.0f64, 0.0f64);
    for i in 0..p.m {
        for j in 0..p.n {
            let g = got[i * p.ldc + j] as f64;
            let w = want[i * p.n + j];
            num += (g - w) * (g - w);
            den += w * w;
        }
    }
    let e = num.sqrt() / den.sqrt().max(f64::MIN_POSITIVE);
    if e.is_nan() {
        f64::INFINITY
    } else {
        e
    }
}

/// Runs `kernel` once on fresh random A, B, C (C poisoned with NaN where β = 0 and between rows
/// where `ldc > n`) and checks it against the float64 reference. Returns the relative error.
pub fn validate(backend: &Backend, kernel: &KernelInfo, p: &GemmProblem, seed: u64) -> Result<f64> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let (la, lb, lc) = p.lens();
    let a: Vec<f32> = random_vec(la.max(1), &mut rng);
    let b: Vec<f32> = random_vec(lb.max(1), &mut rng);
    let c0: Vec<f32> = if p.beta == 0.0 {
        vec![f32::NAN; lc]
    } else {
        random_vec(lc, &mut rng)
    };
    let da = backend.upload(&a, "A")?;
    let db = backend.upload(&b, "B")?;
    let mut dc = backend.upload(&c0, "C")?;
    launch_on(backend, kernel, p, &da, &db, &mut dc)?;
    backend.synchronize("gemm")?;
    let got = backend.download(&dc, "C")?;
    let want = p.reference(&a, &b, &c0);
    let e = relative_error(p, &got, &want);
    // Elements between rows (ldc > n) must be untouched.
    for i in 0..p.m.saturating_sub(1) {
        for j in p.n..p.ldc {
            let idx = i * p.ldc + j;
            if got[idx].to_bits() != c0[idx].to_bits() {
                return Err(Error::Mismatch {
                    kernel: check::kernel_name(kernel),
                    shape: p.shape(),
                    detail: format!("wrote C[{i}][{j}], outside the n = {} columns", p.n),
                });
            }
        }
    }
    if e > p.tolerance() {
        return Err(Error::Mismatch {
            kernel: check::kernel_name(kernel),
            shape: p.shape(),
            detail: format!("relative error {e:.3e} > tolerance {:.3e}", p.tolerance()),
        });
    }
    Ok(e)
}

/// Shapes every SGEMM variant is validated at: not multiples of any tile, K = 1 and K = 0,
/// skinny, padded leading dimensions, β ≠ 0.
pub fn validation_problems() -> Vec<GemmProblem> {
    let mut v = vec![
        GemmProblem::new(1, 1, 1),
        GemmProblem::new(7, 5, 3),
        GemmProblem::new(33, 65, 17),
        GemmProblem::new(128, 128, 24),
        GemmProblem::new(130, 67, 45),
        GemmProblem::new(67, 260, 1),
        GemmProblem::new(200, 8, 64),
        GemmProblem::new(16, 16, 0),
    ];
    v.push(GemmProblem {
        alpha: 0.5,
        beta: -1.5,
        ..GemmProblem::new(129, 131, 36)
    });
    v.push(GemmProblem {
        lda: 52,
        ldb: 76,
        ldc: 75,
        alpha: 2.0,
        beta: 0.25,
        ..GemmProblem::new(70, 71, 50)
    });
    v
}

/// Runs `kernel` once in the simulator (validated) and returns its memory-access analysis.
pub fn analyze(kernel: &KernelInfo, p: &GemmProblem, seed: u64) -> Result<crate::sim::Analysis> {
    let sim = crate::sim::Simulator::default();
    sim.start_analysis();
    let backend = Backend::Simulator(sim);
    validate(&backend, kernel, p, seed)?;
    let Backend::Simulator(sim) = backend else {
        unreachable!()
    };
    Ok(sim.take_analysis().unwrap_or_default())
}

/// SGEMM as a [`crate::families::Family`]: every variant at every [`validation_problems`]
/// shape, on the GPU or in the simulator.
pub struct Sgemm;

impl crate::families::Family for Sgemm {
    fn name(&self) -> &'static str {
        Family::Gemm.name()
    }

    fn about(&self) -> &'static str {
        "f32 matrix product C = α·A·B + β·C on the CUDA cores"
    }

    fn cases(&self, _backend: &Backend, _scale: Scale) -> Vec<Case> {
        variants()
            .flat_map(|kernel| {
                validation_problems().into_iter().map(move |problem| {
                    // The 16-byte-load variants get the same shape with lda, ldb padded to
                    // multiples of 4.
                    let problem = if GemmProblem::vectorized(kernel) {
                        problem.aligned()
                    } else {
                        problem
                    };
                    Case::new(
                        check::kernel_name(kernel),
                        DType::F32,
                        problem.shape(),
                        move |backend: &Backend, seed: u64| {
                            validate(backend, kernel, &problem, seed).map(|_| ())
                        },
                    )
                })
            })
            .collect()
    }
}
