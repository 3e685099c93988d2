//! Random SGEMM cases: any ladder variant (and on the GPU the dispatcher, with its padding,
//! split-K, transposed-A and skinny paths); M, N, K from 1 (K from 0) across the 16- to
//! 128-wide tiles, a quarter of them skinny (M or N ≤ 5, or K ≤ 17);
//! padded leading dimensions (multiples of 4 for the 16-byte-load variants); α and β among 1,
//! 0, −1, binary fractions and uniform values; checked element by element against float64.

use rand::{Rng, RngCore};
use rustile_kernels::registry::{DType, KernelInfo};

use crate::backend::{Backend, Buf};
use crate::check;
use crate::error::{Error, Result};
use crate::families::fuzz::{padded, pick, scalar, size, Fuzzed, Size};
use crate::families::Case;

use super::*;

/// The largest M, N (and K) drawn: in the simulator, just past two 128-wide tiles; on the GPU,
/// many waves.
const SIM_DIM: usize = 260;
const GPU_DIM: usize = 2048;
/// At most this many multiply-adds per case: the simulator's budget (ms per case) and the
/// float64 reference's (single-threaded, every element) on the GPU.
const SIM_WORK: usize = 1 << 18;
const GPU_WORK: usize = 1 << 25;

/// What runs a case.
#[derive(Clone, Copy, Debug)]
enum Runner {
    /// One ladder variant.
    Kernel(&'static KernelInfo),
    /// The dispatcher, [`run`] (GPU only).
    Auto,
}

/// A random SGEMM case for `backend`.
pub fn case(backend: &Backend, rng: &mut dyn RngCore) -> Option<Fuzzed> {
    let sz = Size::of(backend);
    let mut runners: Vec<Runner> = variants().map(Runner::Kernel).collect();
    if sz == Size::Gpu {
        runners.push(Runner::Auto);
    }
    let runner = pick(rng, &runners);
    let p = problem(rng, sz, runner);
    let name = match runner {
        Runner::Kernel(k) => check::kernel_name(k),
        Runner::Auto => "gemm/auto".to_string(),
    };
    let mut shape = p.shape();
    if (p.alpha, p.beta) != (1.0, 0.0) {
        shape += &format!(" α={} β={}", p.alpha, p.beta);
    }
    let check_name = name.clone();
    let case = Case::new(name, DType::F32, shape, move |backend: &Backend, seed| {
        check_output(&check_name, &p, &run_case(backend, runner, &p, seed)?).map(|_| ())
    });
    Some(Fuzzed::new(case, move |backend: &Backend, seed| {
        let [_, _, _, got] = run_case(backend, runner, &p, seed)?;
        Ok(bytemuck::cast_slice(&got).to_vec())
    }))
}

fn problem(rng: &mut dyn RngCore, sz: Size, runner: Runner) -> GemmProblem {
    let (dim, work) = sz.pick((SIM_DIM, SIM_WORK), (GPU_DIM, GPU_WORK));
    let tiles = [16, 32, 64, 128];
    let mut m = size(rng, dim, &tiles);
    let mut n = size(rng, dim, &tiles);
    let mut k = if rng.random_bool(0.04) {
        0
    } else {
        size(rng, dim, &[8, 16, 32])
    };
    // Skinny shapes (the dispatcher's GEMV, small-M and outer-product paths) a quarter of the
    // time: M or N from 1 to 5, or K from 1 to 17.
    if rng.random_bool(0.25) {
        match rng.random_range(0..3) {
            0 => m = rng.random_range(1..=5),
            1 => n = rng.random_range(1..=5),
            _ => k = rng.random_range(1..=17),
        }
    }
    // Shrink the largest side until the product fits the budget.
    while m * n * k.max(1) > work {
        if k >= m && k >= n {
            k = k.div_ceil(2);
        } else if m >= n {
            m = m.div_ceil(2);
        } else {
            n = n.div_ceil(2);
        }
    }
    let mut p = GemmProblem {
        lda: padded(rng, k, 1, 9),
        ldb: padded(rng, n, 1, 9),
        ldc: padded(rng, n, 1, 9),
        alpha: scalar(rng),
        beta: scalar(rng),
        ..GemmProblem::new(m, n, k)
    };
    if let Runner::Kernel(kernel) = runner {
        if GemmProblem::vectorized(kernel) {
            p = p.aligned();
        }
    }
    p
}

fn run_case(
    backend: &Backend,
    runner: Runner,
    p: &GemmProblem,
    seed: u64,
) -> Result<[Vec<f32>; 4]> {
    match (runner, backend) {
        (Runner::Kernel(kernel), _) => output(backend, kernel, p, seed),
        (Runner::Auto, Backend::Gpu(gpu)) => {
            p.check_shape()?;
            output_with(backend, "gemm/auto", p, seed, |a, b, c| match (a, b, c) {
                (Buf::Gpu(a), Buf::Gpu(b), Buf::Gpu(c)) => {
                    run(gpu, p, a, b, c, &mut Scratch::default()).map(|_| ())
                }
                _ => Err(Error::Usage(
                    "gemm/auto: buffers of the simulator on a GPU".into(),
                )),
            })
        }
        (Runner::Auto, Backend::Simulator(_)) => Err(Error::Unsupported {
            kernel: "gemm/auto".into(),
            what: "the dispatcher runs on a GPU only".into(),
        }),
    }
}
