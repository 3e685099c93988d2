//! The validated run of every kernel: fresh random inputs, poisoned outputs, exact comparison
//! with the CPU reference, at shapes that are not multiples of any tile or vector width.

use rand::rngs::SmallRng;
use rand::SeedableRng;
use rustile_kernels::registry::{DType, Family, KernelInfo, Role, KERNELS};

use crate::backend::{Backend, Buf};
use crate::check;
use crate::copy::CopyProblem;
use crate::elem::{random_vec, DeviceElem};
use crate::error::Result;
use crate::problem::Problem;
use crate::strided::{StridedProblem, BENCH_STRIDES};
use crate::transpose::TransposeProblem;

/// How large the validation shapes are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    /// Every shape, up to ten million elements (the GPU).
    Device,
    /// The shapes of at most ~70 000 elements, still covering every odd case (the simulator).
    Simulator,
}

/// Shapes every variant of `family` is validated at: tiny, odd, just around tile and vector
/// multiples, and (at [`Scale::Device`]) large enough to span many waves.
pub fn validation_problems(family: Family, scale: Scale) -> Vec<Problem> {
    let all: Vec<Problem> = match family {
        // SGEMM has three operands and a tolerance: `crate::gemm::validation_problems`.
        Family::Gemm | Family::Hgemm | Family::Selftest => vec![],
        Family::Copy => [
            1,
            3,
            7,
            8,
            9,
            255,
            1000,
            4097,
            65_539,
            (1 << 20) + 3,
            10_000_019,
        ]
        .into_iter()
        .map(|n| Problem::Copy(CopyProblem { n }))
        .collect(),
        Family::Strided => [1usize, 999, 65_537]
            .into_iter()
            .flat_map(|n| {
                BENCH_STRIDES.into_iter().chain([3]).map(move |s| {
                    Problem::Strided(StridedProblem {
                        n,
                        stride: s as usize,
                    })
                })
            })
            .collect(),
        Family::Transpose => [
            (1, 1),
            (1, 37),
            (33, 1),
            (31, 33),
            (32, 32),
            (64, 96),
            (130, 67),
            (257, 129),
            (1000, 999),
            (1025, 4097),
            (2049, 4095),
        ]
        .into_iter()
        .map(|(rows, cols)| Problem::Transpose(TransposeProblem { rows, cols }))
        .collect(),
    };
    match scale {
        Scale::Device => all,
        Scale::Simulator => all
            .into_iter()
            .filter(|p| p.lens().0 <= 70_000 && p.lens().1 <= 70_000)
            .collect(),
    }
}

/// Runs `kernel` once on `problem` with fresh random input and a poisoned output, and compares
/// the result with the CPU reference bit for bit.
pub fn validate<T: DeviceElem>(
    backend: &Backend,
    kernel: &KernelInfo,
    problem: &Problem,
    rng: &mut SmallRng,
) -> Result<()> {
    let (src_len, dst_len) = problem.lens();
    let host_src: Vec<T> = random_vec(src_len, rng);
    let src = backend.upload(&host_src, "validation input")?;
    let mut dst = backend.filled(dst_len, T::POISON, "validation output")?;
    problem.launch(backend, kernel, &src, &mut dst)?;
    backend.synchronize(&check::kernel_name(kernel))?;
    let got = backend.download(&dst, "validation output")?;
    if let (Backend::Simulator(sim), Buf::Sim(s), Buf::Sim(d)) = (backend, src, dst) {
        sim.free(s);
        sim.free(d);
    }
    check::exact(
        &check::kernel_name(kernel),
        &problem.shape(),
        &got,
        &problem.reference(&host_src),
    )
}

/// One validated case.
#[derive(Debug, serde::Serialize)]
pub struct CaseOutcome {
    /// `family/variant`.
    pub kernel: String,
    /// dtype name.
    pub dtype: &'static str,
    /// Shape.
    pub shape: String,
    /// `None` if correct, else the error.
    pub error: Option<String>,
}

/// Every (kernel, dtype, problem) case of the registry at `scale`.
pub fn cases(scale: Scale) -> Vec<(&'static KernelInfo, DType, Problem)> {
    KERNELS
        .iter()
        .filter(|k| Family::MEMORY.contains(&k.family) && k.role == Role::Ladder)
        .flat_map(|k| {
            k.symbols.iter().map(|e| e.dtype).flat_map(move |dtype| {
                validation_problems(k.family, scale)
                    .into_iter()
                    .map(move |p| (*k, dtype, p))
            })
        })
        .collect()
}

/// How many cases [`validate_all`] runs at `scale`: the memory families' [`cases`] plus every
/// SGEMM variant at every [`crate::gemm::validation_problems`] shape.
pub fn case_count(scale: Scale) -> usize {
    cases(scale).len() + crate::gemm::variants().count() * crate::gemm::validation_problems().len()
}

/// Validates every variant of every family, for every dtype it is instantiated for, at every
/// shape of [`validation_problems`] (at the scale that suits the back end), then every SGEMM
/// variant at every [`crate::gemm::validation_problems`] shape. `progress` is told each case
/// before it runs.
pub fn validate_all(
    backend: &Backend,
    seed: u64,
    progress: impl FnMut(usize, usize, &str),
) -> Vec<CaseOutcome> {
    validate_families(backend, &Family::ALL, seed, progress)
}

/// [`validate_all`] for the kernels of `families` only.
pub fn validate_families(
    backend: &Backend,
    families: &[Family],
    seed: u64,
    mut progress: impl FnMut(usize, usize, &str),
) -> Vec<CaseOutcome> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let scale = match backend {
        Backend::Gpu(_) => Scale::Device,
        Backend::Simulator(_) => Scale::Simulator,
    };
    let mut cases = cases(scale);
    cases.retain(|(k, _, _)| families.contains(&k.family));
    let gemm = families.contains(&Family::Gemm);
    let gemm_count = crate::gemm::variants().count() * crate::gemm::validation_problems().len();
    let total = cases.len() + if gemm { gemm_count } else { 0 };
    let memory = cases.len();
    let mut out: Vec<CaseOutcome> = cases
        .into_iter()
        .enumerate()
        .map(|(i, (kernel, dtype, problem))| {
            let name = check::kernel_name(kernel);
            progress(
                i,
                total,
                &format!("{name} {} {}", dtype.name(), problem.shape()),
            );
            let result = match dtype {
                DType::F32 => validate::<f32>(backend, kernel, &problem, &mut rng),
                DType::F16 | DType::Bf16 => {
                    validate::<half::f16>(backend, kernel, &problem, &mut rng)
                }
            };
            CaseOutcome {
                kernel: name,
                dtype: dtype.name(),
                shape: problem.shape(),
                error: result.err().map(|e| e.to_string()),
            }
        })
        .collect();
    let gemm_cases = crate::gemm::variants().filter(|_| gemm).flat_map(|k| {
        crate::gemm::validation_problems()
            .into_iter()
            .map(move |p| (k, p))
    });
    for (j, (kernel, problem)) in gemm_cases.enumerate() {
        let name = check::kernel_name(kernel);
        progress(
            memory + j,
            total,
            &format!("{name} f32 {}", problem.shape()),
        );
        // The 16-byte-load variants get the same shape with lda, ldb padded to multiples of 4.
        let problem = if crate::gemm::GemmProblem::vectorized(kernel) {
            problem.aligned()
        } else {
            problem
        };
        let result = crate::gemm::validate(backend, kernel, &problem, seed ^ ((j as u64) << 32));
        out.push(CaseOutcome {
            kernel: name,
            dtype: "f32",
            shape: problem.shape(),
            error: result.err().map(|e| e.to_string()),
        });
    }
    out
}

/// Runs `kernel` on `problem` once in the simulator (validated against the reference) and
/// returns its memory-access analysis.
pub fn analyze(
    kernel: &KernelInfo,
    dtype: DType,
    problem: &Problem,
    seed: u64,
) -> Result<crate::sim::Analysis> {
    let sim = crate::sim::Simulator::default();
    sim.start_analysis();
    let backend = Backend::Simulator(sim);
    let mut rng = SmallRng::seed_from_u64(seed);
    match dtype {
        DType::F32 => validate::<f32>(&backend, kernel, problem, &mut rng)?,
        DType::F16 | DType::Bf16 => validate::<half::f16>(&backend, kernel, problem, &mut rng)?,
    }
    let Backend::Simulator(sim) = backend else {
        unreachable!()
    };
    Ok(sim.take_analysis().unwrap_or_default())
}

/// One check the CPU-side suite ran.
#[derive(Debug)]
pub struct CpuCheck {
    /// What was checked.
    pub what: String,
    /// `None` if it held, else why not.
    pub error: Option<String>,
}

/// The checks that need no GPU: every CPU reference against its float64 naive version at every
/// validation shape, and every registered kernel present in both PTX flavours with no aligned
/// `bar.sync` barrier.
pub fn cpu_checks(seed: u64) -> Vec<CpuCheck> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut out = Vec::new();
    for family in Family::MEMORY {
        for problem in validation_problems(family, Scale::Device) {
            let (src_len, _) = problem.lens();
            let src: Vec<f32> = random_vec(src_len, &mut rng);
            let wide: Vec<f64> = src.iter().map(|&v| v as f64).collect();
            let got: Vec<f64> = problem.reference(&src).iter().map(|&v| v as f64).collect();
            let want = problem.reference_naive_f64(&wide);
            let error = (got != want)
                .then(|| "CPU reference differs from the float64 naive version".to_string());
            out.push(CpuCheck {
                what: format!("reference {} {}", family.name(), problem.shape()),
                error,
            });
        }
    }
    for flavour in crate::ptx::Flavour::ALL {
        let text = flavour.text();
        for kernel in KERNELS {
            for symbol in kernel.symbols.iter().map(|e| e.symbol) {
                let error = (!crate::ptx::has_entry(text, symbol)).then(|| "missing".to_string());
                out.push(CpuCheck {
                    what: format!("{} has `{symbol}`", flavour.name()),
                    error,
                });
            }
        }
        let aligned_barriers = text
            .lines()
            .filter(|l| l.trim_start().starts_with("bar.sync"))
            .count();
        out.push(CpuCheck {
            what: format!("{} has no aligned bar.sync", flavour.name()),
            error: (aligned_barriers > 0).then(|| format!("{aligned_barriers} bar.sync found")),
        });
    }
    out
}
