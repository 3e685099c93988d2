//! Validation: fresh random inputs, poisoned C, float64 reference, every element within its
//! own error bound (scaled by the sum of the absolute values of its terms).

use rand::rngs::SmallRng;
use rand::SeedableRng;
use rustile_kernels::registry::{DType, Family, KernelInfo};

use crate::backend::{Backend, Buf};
use crate::check::{self, BufArg};
use crate::elem::random_vec;
use crate::error::{Error, Result};
use crate::families::{Case, Scale};

use super::*;

/// Relative Frobenius error `‖got − want‖ / ‖want‖` over C's `m × n` (NaN → infinite): a
/// summary for reports and for comparisons with another f32 result (cuBLAS's), not the
/// validation check ([`check_elements`] is).
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

/// Compares every element of `got` (C after the kernel, pitch `ldc`) with the float64
/// reference `want` within [`GemmProblem::element_tolerance`] of its term scale `scale` (both
/// `m × n`, pitch `n`, from [`GemmProblem::reference_scaled`]). NaN never passes. Returns the
/// elements compared, or [`Error::Mismatch`] naming the worst element and how many are wrong.
pub fn compare_elements(
    kernel: &str,
    p: &GemmProblem,
    got: &[f32],
    want: &[f64],
    scale: &[f64],
) -> Result<usize> {
    let need = p.lens()?.2;
    if got.len() < need || want.len() < p.m * p.n || scale.len() < p.m * p.n {
        return Err(Error::Usage(format!(
            "{kernel} {}: comparing {} results with {} references (C needs {need})",
            p.shape(),
            got.len(),
            want.len()
        )));
    }
    // (excess over the tolerance, i, j, got, want, tolerance) of the worst element.
    let mut worst: Option<(f64, usize, usize, f32, f64, f64)> = None;
    let mut wrong = 0usize;
    for i in 0..p.m {
        for j in 0..p.n {
            let (g, r, s) = (got[i * p.ldc + j], want[i * p.n + j], scale[i * p.n + j]);
            let tol = p.element_tolerance(r, s);
            let err = (g as f64 - r).abs();
            let bad = if r.is_finite() {
                err.is_nan() || err > tol
            } else {
                !(g as f64 == r || (g.is_nan() && r.is_nan()))
            };
            if bad {
                wrong += 1;
                let excess = if err.is_nan() {
                    f64::INFINITY
                } else {
                    err / tol
                };
                if worst.is_none_or(|w| excess > w.0) {
                    worst = Some((excess, i, j, g, r, tol));
                }
            }
        }
    }
    match worst {
        None => Ok(p.m * p.n),
        Some((_, i, j, g, r, tol)) => Err(Error::Mismatch {
            kernel: kernel.to_string(),
            shape: p.shape(),
            detail: format!(
                "C[{i}][{j}] = {g}, float64 reference {r} (tolerance {tol:.3e}, scaled by the \
                 sum of its terms' magnitudes); {wrong} of {} elements wrong",
                p.m * p.n
            ),
        }),
    }
}

/// [`compare_elements`] against the float64 reference of `α·A·B + β·C` on the inputs
/// `a`, `b`, `c0` (C before the kernel).
pub fn check_elements(
    kernel: &str,
    p: &GemmProblem,
    a: &[f32],
    b: &[f32],
    c0: &[f32],
    got: &[f32],
) -> Result<usize> {
    let (la, lb, lc) = p.lens()?;
    if a.len() < la || b.len() < lb || c0.len() < lc {
        return Err(Error::Usage(format!(
            "{kernel} {}: reference inputs of {}, {}, {} elements; the shape needs {la}, {lb}, {lc}",
            p.shape(),
            a.len(),
            b.len(),
            c0.len()
        )));
    }
    let (want, scale) = p.reference_scaled(a, b, c0);
    compare_elements(kernel, p, got, &want, &scale)
}

/// Runs `kernel` once on fresh random A, B, C (C poisoned with NaN where β = 0 and between rows
/// where `ldc > n`) and checks every element against the float64 reference
/// ([`check_elements`]). Returns the relative Frobenius error (a summary). The shape and the
/// buffers' sizes are checked before anything is allocated.
pub fn validate(backend: &Backend, kernel: &KernelInfo, p: &GemmProblem, seed: u64) -> Result<f64> {
    let run = output(backend, kernel, p, seed)?;
    check_output(&check::kernel_name(kernel), p, &run)
}

/// The checks of [`validate()`] on one run's `[A, B, C before, C after]` (from [`output`]):
/// C's elements between rows (`ldc > n`) untouched, every element within its bound
/// ([`compare_elements`]). Returns the relative Frobenius error.
pub fn check_output(name: &str, p: &GemmProblem, run: &[Vec<f32>; 4]) -> Result<f64> {
    let [a, b, c0, got] = run;
    if got.len() < c0.len() {
        return Err(Error::Usage(format!(
            "{name} {}: {} results for a C of {}",
            p.shape(),
            got.len(),
            c0.len()
        )));
    }
    for i in 0..p.m.saturating_sub(1) {
        for j in p.n..p.ldc {
            let idx = i * p.ldc + j;
            if got[idx].to_bits() != c0[idx].to_bits() {
                return Err(Error::Mismatch {
                    kernel: name.to_string(),
                    shape: p.shape(),
                    detail: format!("wrote C[{i}][{j}], outside the n = {} columns", p.n),
                });
            }
        }
    }
    let (want, scale) = p.reference_scaled(a, b, c0);
    if crate::families::run::is_capturing() {
        use crate::families::run::{capture, pitched, Data};
        capture("a", &pitched(p.m, p.lda, a.len()), || Data::F32(a.clone()));
        capture("b", &pitched(p.k, p.ldb, b.len()), || Data::F32(b.clone()));
        capture("c_before", &pitched(p.m, p.ldc, c0.len()), || {
            Data::F32(c0.clone())
        });
        capture("out", &pitched(p.m, p.ldc, c0.len()), || Data::F32(got.clone()));
        capture("reference", &[p.m, p.n], || {
            Data::F32(want.iter().map(|&v| v as f32).collect())
        });
    }
    compare_elements(name, p, got, &want, &scale)?;
    Ok(relative_error(p, got, &want))
}

/// Runs `kernel` once on fresh random A, B, C from `seed` (C NaN where β = 0, so an element
/// the kernel skips cannot pass), as [`validate()`] does, and returns `[A, B, C before, C
/// after]`. The shape and the buffers' sizes are checked before anything is allocated.
pub fn output(
    backend: &Backend,
    kernel: &KernelInfo,
    p: &GemmProblem,
    seed: u64,
) -> Result<[Vec<f32>; 4]> {
    let (la, lb, lc) = p.lens()?;
    p.check(
        kernel,
        BufArg::new("a", la.max(1), 0),
        BufArg::new("b", lb.max(1), 0),
        BufArg::new("c", lc, 0),
    )?;
    output_with(
        backend,
        &check::kernel_name(kernel),
        p,
        seed,
        |da, db, dc| launch_on(backend, kernel, p, da, db, dc),
    )
}

/// [`output`] with `launch` running the product on the uploaded A, B, C (the caller checked
/// the shape).
pub fn output_with(
    backend: &Backend,
    name: &str,
    p: &GemmProblem,
    seed: u64,
    launch: impl FnOnce(&Buf<f32>, &Buf<f32>, &mut Buf<f32>) -> Result<()>,
) -> Result<[Vec<f32>; 4]> {
    let (la, lb, lc) = p.lens()?;
    let (la, lb) = (la.max(1), lb.max(1));
    let bytes = check::total_bytes(name, &[(la, 4), (lb, 4), (lc, 4)])?;
    backend.check_fits(bytes, &format!("{name} {}: A, B and C", p.shape()))?;
    let mut rng = SmallRng::seed_from_u64(seed);
    let a: Vec<f32> = random_vec(la, &mut rng);
    let b: Vec<f32> = random_vec(lb, &mut rng);
    let c0: Vec<f32> = if p.beta == 0.0 {
        vec![f32::NAN; lc]
    } else {
        random_vec(lc, &mut rng)
    };
    let da = backend.upload(&a, "A")?;
    let db = backend.upload(&b, "B")?;
    let mut dc = backend.upload(&c0, "C")?;
    launch(&da, &db, &mut dc)?;
    backend.synchronize("gemm")?;
    let got = backend.download(&dc, "C")?;
    if let (Backend::Simulator(sim), Buf::Sim(a), Buf::Sim(b), Buf::Sim(c)) = (backend, da, db, dc)
    {
        sim.free(a);
        sim.free(b);
        sim.free(c);
    }
    Ok([a, b, c0, got])
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

    fn run_npy(
        &self,
        backend: &Backend,
        req: &crate::families::run::RunRequest,
    ) -> Result<crate::families::run::Tensor> {
        super::npy_run::run_npy(backend, req)
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

    fn fuzz(
        &self,
        backend: &Backend,
        rng: &mut dyn rand::RngCore,
    ) -> Option<crate::families::fuzz::Fuzzed> {
        super::fuzz::case(backend, rng)
    }
}
