//! Fuzzing: random cases for every family, each drawn from one 64-bit seed that fixes both the
//! case (variant, dtype, shape, strides, scalars, options) and its inputs, so a failure is
//! replayed exactly from the seed it prints.
//!
//! A family draws its cases in [`Family::fuzz`] (its own `fuzz.rs`),
//! sized to the back end: small shapes that still cross every tile edge in the simulator, and
//! shapes up to a few thousand rows (every variant the device runs, `wgmma`/TMA included) on
//! the GPU. [`run`] runs `cases` of them, in parallel in the simulator (a fresh simulator per
//! case, so a case's output does not depend on what ran before it), one after another on the
//! GPU; `rustile fuzz` and `tests/fuzz.rs` are its front ends.

use std::time::Instant;

use rand::rngs::StdRng;
use rand::{Rng, RngCore, SeedableRng};
use rayon::prelude::*;

use crate::backend::Backend;
use crate::error::Result;
use crate::families::{Case, Family};
use crate::sim::Simulator;

/// A case's output, as bytes: what the replay test compares bit for bit.
pub type OutputFn = Box<dyn Fn(&Backend, u64) -> Result<Vec<u8>> + Send + Sync>;

/// One random case: the validation [`Case`] (its check against the float64 reference) and how
/// to get its raw output for the same input seed.
pub struct Fuzzed {
    /// The case; [`Case::run`] with the case's seed validates it.
    pub case: Case,
    /// The kernel's output for an input seed (the same inputs [`Fuzzed::case`] checks).
    pub output: OutputFn,
}

impl Fuzzed {
    /// A case and its output function.
    pub fn new(
        case: Case,
        output: impl Fn(&Backend, u64) -> Result<Vec<u8>> + Send + Sync + 'static,
    ) -> Self {
        Self {
            case,
            output: Box::new(output),
        }
    }
}

/// The size of shapes drawn for a back end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Size {
    /// The simulator: it runs every thread of every block on the CPU.
    Sim,
    /// A GPU.
    Gpu,
}

impl Size {
    /// The size for `backend`.
    pub fn of(backend: &Backend) -> Self {
        match backend {
            Backend::Simulator(_) => Size::Sim,
            Backend::Gpu(_) => Size::Gpu,
        }
    }

    /// `sim` in the simulator, `gpu` on a GPU.
    pub fn pick<T>(self, sim: T, gpu: T) -> T {
        match self {
            Size::Sim => sim,
            Size::Gpu => gpu,
        }
    }
}

/// A random size in `1..=max` (`max ≥ 1`): a quarter tiny (1 to 4), a quarter one off, on or
/// one past a multiple of one of `tiles`, the rest log-uniform (small and large alike).
pub fn size(rng: &mut dyn RngCore, max: usize, tiles: &[usize]) -> usize {
    let max = max.max(1);
    let v = match rng.random_range(0..4u32) {
        0 => rng.random_range(1..=4usize),
        1 if !tiles.is_empty() => {
            let t = tiles[rng.random_range(0..tiles.len())].max(1);
            let m = rng.random_range(1..=(max / t).max(1));
            (m * t + rng.random_range(0..3usize)).saturating_sub(1)
        }
        _ => {
            let hi = ((max + 1) as f64).ln();
            rng.random_range(0.0..hi).exp() as usize
        }
    };
    v.clamp(1, max)
}

/// `v` drawn uniformly from `items` (not empty).
pub fn pick<T: Copy>(rng: &mut dyn RngCore, items: &[T]) -> T {
    items[rng.random_range(0..items.len())]
}

/// A random α or β: 1, 0, −1 and small binary fractions most of the time (exact in every
/// type), otherwise uniform in [−2, 2).
pub fn scalar(rng: &mut dyn RngCore) -> f32 {
    match rng.random_range(0..6u32) {
        0 => 1.0,
        1 => 0.0,
        2 => -1.0,
        3 => pick(rng, &[0.5, -0.75, 2.0, 0.25, -1.5]),
        _ => rng.random_range(-2.0f32..2.0),
    }
}

/// `base` plus a random padding of 0 to `max_pad` multiples of `step` (half the time none).
pub fn padded(rng: &mut dyn RngCore, base: usize, step: usize, max_pad: usize) -> usize {
    if rng.random_bool(0.5) {
        base
    } else {
        base + step * rng.random_range(0..=max_pad)
    }
}

/// Case `i`'s seed in a run of `family` from `seed`: distinct families and indices give
/// unrelated seeds (SplitMix64 over the three).
pub fn case_seed(seed: u64, family: &str, i: u64) -> u64 {
    let name = family.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    });
    splitmix(splitmix(seed ^ name) ^ i)
}

fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The case `family` draws from `case_seed` for `backend` (`None`: the family has no
/// generator, or nothing it can run there).
pub fn generate(family: &dyn Family, backend: &Backend, case_seed: u64) -> Option<Fuzzed> {
    let mut rng = StdRng::seed_from_u64(case_seed);
    family.fuzz(backend, &mut rng)
}

/// One case that ran.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Outcome {
    /// The family.
    pub family: &'static str,
    /// The case's seed (case and inputs).
    pub seed: u64,
    /// `family/variant` (empty if no case was drawn).
    pub kernel: String,
    /// Input dtype name.
    pub dtype: &'static str,
    /// `kernel dtype shape`.
    pub label: String,
    /// `None` if it passed, else why not.
    pub error: Option<String>,
}

/// The command line that replays case `seed` of `family` on the same kind of back end.
pub fn replay_command(family: &str, seed: u64, sim: bool) -> String {
    format!(
        "rustile fuzz --family {family} --replay {seed:#018x}{}",
        if sim { " --sim" } else { "" }
    )
}

/// Runs case seed `seed` of `family` on `backend`: draws it, validates it.
pub fn run_one(family: &'static dyn Family, backend: &Backend, seed: u64) -> Outcome {
    match generate(family, backend, seed) {
        Some(f) => {
            let o = f.case.run(backend, seed);
            Outcome {
                family: family.name(),
                seed,
                kernel: o.kernel,
                dtype: o.dtype,
                label: f.case.label(),
                error: o.error,
            }
        }
        None => Outcome {
            family: family.name(),
            seed,
            kernel: String::new(),
            dtype: "",
            label: String::new(),
            error: Some(format!("the {} family drew no case", family.name())),
        },
    }
}

/// What [`run`] did for one family.
#[derive(Debug)]
pub struct Report {
    /// The family.
    pub family: &'static str,
    /// Every case, in index order.
    pub outcomes: Vec<Outcome>,
    /// Wall time, seconds.
    pub secs: f64,
}

impl Report {
    /// The cases that failed.
    pub fn failures(&self) -> impl Iterator<Item = &Outcome> {
        self.outcomes.iter().filter(|o| o.error.is_some())
    }
}

/// Where [`run`] runs the cases.
pub enum Where<'a> {
    /// The simulator: the cases in parallel on rayon's threads, each in a fresh simulator.
    Simulator,
    /// This back end, one case after another.
    On(&'a Backend),
}

/// The most cases one [`run`] takes (its outcomes are kept in memory: ~100 bytes each).
pub const MAX_CASES: usize = 100_000_000;

/// Runs `cases` random cases of `family` from `seed` (case `i` has seed
/// [`case_seed`]`(seed, family, i)`); `progress` is told each case's index as it finishes.
/// More than [`MAX_CASES`] is an [`Error::Usage`](crate::Error::Usage), before anything runs.
pub fn run(
    family: &'static dyn Family,
    place: &Where,
    cases: usize,
    seed: u64,
    progress: &(dyn Fn(usize) + Sync),
) -> crate::Result<Report> {
    if cases > MAX_CASES {
        return Err(crate::Error::Usage(format!(
            "fuzz: at most {MAX_CASES} cases per run (got {cases})"
        )));
    }
    let start = Instant::now();
    let name = family.name();
    let outcomes = match place {
        Where::Simulator => (0..cases)
            .into_par_iter()
            .map(|i| {
                let backend = Backend::Simulator(Simulator::default());
                let o = run_one(family, &backend, case_seed(seed, name, i as u64));
                progress(i);
                o
            })
            .collect(),
        Where::On(backend) => (0..cases)
            .map(|i| {
                let o = run_one(family, backend, case_seed(seed, name, i as u64));
                progress(i);
                o
            })
            .collect(),
    };
    Ok(Report {
        family: name,
        outcomes,
        secs: start.elapsed().as_secs_f64(),
    })
}
