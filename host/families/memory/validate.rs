//! Validation of the memory families: fresh random inputs, poisoned outputs, exact comparison
//! with the CPU reference, at shapes that are not multiples of any tile or vector width.

use rand::rngs::SmallRng;
use rand::SeedableRng;
use rustile_kernels::registry::{DType, Family, KernelInfo, Role, KERNELS};

use crate::backend::{Backend, Buf};
use crate::check;
use crate::dispatch_dtype;
use crate::elem::{random_vec, DeviceElem};
use crate::error::Result;
use crate::families::copy::CopyProblem;
use crate::families::strided::{StridedProblem, BENCH_STRIDES};
use crate::families::transpose::TransposeProblem;
use crate::families::{Case, Scale};

use super::Problem;

/// A memory family (copy, strided, transpose) as [`crate::families::Family`]: every variant
/// at every dtype it is built for, at every [`validation_problems`] shape.
pub struct Memory {
    family: Family,
    about: &'static str,
}

impl Memory {
    /// The registry family `family`, described by `about`.
    pub const fn new(family: Family, about: &'static str) -> Self {
        Self { family, about }
    }
}

impl crate::families::Family for Memory {
    fn name(&self) -> &'static str {
        self.family.name()
    }

    fn about(&self) -> &'static str {
        self.about
    }

    fn run_npy(
        &self,
        backend: &Backend,
        req: &crate::families::run::RunRequest,
    ) -> Result<crate::families::run::Tensor> {
        super::npy_run::run_npy(self.family, backend, req)
    }

    fn cases(&self, backend: &Backend, _scale: Scale) -> Vec<Case> {
        let problems: Vec<Problem> = validation_problems(self.family)
            .into_iter()
            .filter(|p| matches!(backend, Backend::Gpu(_)) || fits_simulator(p))
            .collect();
        KERNELS
            .iter()
            .filter(|k| k.family == self.family && k.role == Role::Ladder)
            .flat_map(|&kernel| {
                let problems = &problems;
                kernel.symbols.iter().flat_map(move |e| {
                    let dtype = e.dtype;
                    problems.iter().map(move |&problem| {
                        Case::new(
                            check::kernel_name(kernel),
                            dtype,
                            problem.shape(),
                            move |backend: &Backend, seed: u64| {
                                let mut rng = SmallRng::seed_from_u64(seed);
                                dispatch_dtype!(dtype, T => validate::<T>(backend, kernel, &problem, &mut rng))
                            },
                        )
                    })
                })
            })
            .collect()
    }

    fn fuzz(
        &self,
        backend: &Backend,
        rng: &mut dyn rand::RngCore,
    ) -> Option<crate::families::fuzz::Fuzzed> {
        super::fuzz::case(self.family, backend, rng)
    }
}

/// Shapes every variant of `family` is validated at: tiny, odd, just around tile and vector
/// multiples, and large enough to span many waves (the simulator runs those that
/// [`fits_simulator`]).
pub fn validation_problems(family: Family) -> Vec<Problem> {
    match family {
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
        // SGEMM has three operands and a tolerance: `crate::families::gemm::validation_problems`.
        _ => vec![],
    }
}

/// Whether `p` is small enough for the simulator (at most ~70 000 elements per buffer, still
/// covering every odd case).
pub fn fits_simulator(p: &Problem) -> bool {
    p.lens()
        .is_ok_and(|(src, dst)| src <= 70_000 && dst <= 70_000)
}

/// Runs `kernel` once on `problem` with fresh random input and a poisoned output, and compares
/// the result with the CPU reference bit for bit.
pub fn validate<T: DeviceElem>(
    backend: &Backend,
    kernel: &KernelInfo,
    problem: &Problem,
    rng: &mut SmallRng,
) -> Result<()> {
    let (host_src, got) = output::<T>(backend, kernel, problem, rng)?;
    let want = problem.reference(&host_src);
    if crate::families::run::is_capturing() {
        use crate::families::run::{capture, Data};
        let data = |v: &[T]| match T::DTYPE {
            DType::F32 => Data::F32(bytemuck::cast_slice(v).to_vec()),
            DType::F16 => Data::F16(bytemuck::cast_slice(v).to_vec()),
            DType::Bf16 => Data::Bf16(bytemuck::cast_slice(v).to_vec()),
        };
        capture("x", &[host_src.len()], || data(&host_src));
        capture("out", &[got.len()], || data(&got));
        capture("reference", &[want.len()], || data(&want));
    }
    check::exact(&check::kernel_name(kernel), &problem.shape(), &got, &want)
}

/// Runs `kernel` once on `problem` with fresh random input from `rng` into a poisoned output
/// and returns `(input, output)`.
pub fn output<T: DeviceElem>(
    backend: &Backend,
    kernel: &KernelInfo,
    problem: &Problem,
    rng: &mut SmallRng,
) -> Result<(Vec<T>, Vec<T>)> {
    let (src_len, dst_len) = problem.lens()?;
    check_before_alloc::<T>(backend, kernel, problem, "validation input and output")?;
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
    Ok((host_src, got))
}

/// The checks a case makes before it allocates anything (host or device): the shape's own
/// (zero sizes, overflow, the kernel's index limits — [`Problem::plan`] against buffers of
/// exactly the lengths it needs), then whether source and destination fit on `backend`.
pub fn check_before_alloc<T: DeviceElem>(
    backend: &Backend,
    kernel: &KernelInfo,
    problem: &Problem,
    what: &str,
) -> Result<()> {
    let (src_len, dst_len) = problem.lens()?;
    problem.plan::<T>(
        kernel,
        check::BufArg::new("src", src_len, 0),
        check::BufArg::new("dst", dst_len, 0),
        backend.sm_count(),
    )?;
    let size = std::mem::size_of::<T>();
    let name = check::kernel_name(kernel);
    let bytes = check::total_bytes(&name, &[(src_len, size), (dst_len, size)])?;
    backend.check_fits(bytes, &format!("{name} {}: {what}", problem.shape()))
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
    dispatch_dtype!(dtype, T => validate::<T>(&backend, kernel, problem, &mut rng))?;
    let Backend::Simulator(sim) = backend else {
        unreachable!()
    };
    Ok(sim.take_analysis().unwrap_or_default())
}
