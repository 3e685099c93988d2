//! Random cases of the memory families (copy, strided, transpose): any ladder variant at any
//! dtype it is built for; lengths, strides and matrix sides from 1 up, tiny, log-uniform and
//! around the vector widths and tiles; checked bit for bit against the CPU reference.

use rand::rngs::SmallRng;
use rand::{Rng, RngCore, SeedableRng};
use rustile_kernels::registry::{Family, Role, KERNELS};

use crate::backend::Backend;
use crate::check;
use crate::dispatch_dtype;
use crate::families::copy::CopyProblem;
use crate::families::fuzz::{pick, size, Fuzzed, Size};
use crate::families::strided::StridedProblem;
use crate::families::transpose::TransposeProblem;
use crate::families::Case;

use super::validate::{fits_simulator, output, validate};
use super::Problem;

/// Elements per buffer in the simulator: a few blocks' worth, so a case takes milliseconds.
const SIM_ELEMS: usize = 40_000;
/// Elements per buffer on the GPU (16 MiB of f32).
const GPU_ELEMS: usize = 1 << 22;

/// A random case of the memory family `family` on `backend`.
pub fn case(family: Family, backend: &Backend, rng: &mut dyn RngCore) -> Option<Fuzzed> {
    let kernels: Vec<_> = KERNELS
        .iter()
        .filter(|k| k.family == family && k.role == Role::Ladder)
        .collect();
    if kernels.is_empty() {
        return None;
    }
    let kernel = pick(rng, &kernels);
    let dtype = kernel.symbols[rng.random_range(0..kernel.symbols.len())].dtype;
    let sz = Size::of(backend);
    let cap = sz.pick(SIM_ELEMS, GPU_ELEMS);
    let problem = problem(family, rng, cap)?;
    if sz == Size::Sim && !fits_simulator(&problem) {
        return None;
    }
    let name = check::kernel_name(kernel);
    let case = Case::new(
        name,
        dtype,
        problem.shape(),
        move |backend: &Backend, seed: u64| {
            let mut rng = SmallRng::seed_from_u64(seed);
            dispatch_dtype!(dtype, T => validate::<T>(backend, kernel, &problem, &mut rng))
        },
    );
    Some(Fuzzed::new(case, move |backend: &Backend, seed: u64| {
        let mut rng = SmallRng::seed_from_u64(seed);
        dispatch_dtype!(dtype, T => output::<T>(backend, kernel, &problem, &mut rng)
            .map(|(_, got): (Vec<T>, Vec<T>)| bytemuck::cast_slice::<T, u8>(&got).to_vec()))
    }))
}

/// A random problem of `family` whose buffers hold at most `cap` elements.
fn problem(family: Family, rng: &mut dyn RngCore, cap: usize) -> Option<Problem> {
    Some(match family {
        Family::Copy => Problem::Copy(CopyProblem {
            n: size(rng, cap, &[4, 8, 16, 256, 1024, 4096]),
        }),
        Family::Strided => {
            let stride = match rng.random_range(0..3u32) {
                0 => pick(rng, &crate::families::strided::BENCH_STRIDES) as usize,
                _ => size(rng, 300, &[2, 4, 8, 32]),
            };
            let n_max = ((cap - 1) / stride + 1).max(1);
            let n = size(rng, n_max, &[32, 256, 1024]);
            Problem::Strided(StridedProblem { n, stride })
        }
        Family::Transpose => {
            let side = (cap as f64).sqrt() as usize * 2;
            let rows = size(rng, side.min(cap), &[16, 32, 64]);
            let cols = size(rng, (cap / rows).max(1), &[16, 32, 64]);
            Problem::Transpose(TransposeProblem { rows, cols })
        }
        _ => return None,
    })
}
