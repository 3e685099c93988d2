//! The validated run of every family ([`super::all`]): each family's cases at a scale, on the
//! GPU or in the simulator; and the checks that need no GPU at all.

use rand::rngs::SmallRng;
use rand::SeedableRng;
use rustile_kernels::registry::{Family, KERNELS};

use crate::backend::Backend;
use crate::elem::random_vec;
use crate::families::memory::validation_problems;

pub use super::{Case, Outcome as CaseOutcome, Scale};

/// Every family's validation cases at `scale` on `backend`, in [`super::all`]'s order.
pub fn cases(backend: &Backend, scale: Scale) -> Vec<Case> {
    super::all()
        .into_iter()
        .flat_map(|f| f.cases(backend, scale))
        .collect()
}

/// How many cases [`validate_all`] runs.
pub fn case_count(backend: &Backend, scale: Scale) -> usize {
    super::all()
        .into_iter()
        .map(|f| f.cases(backend, scale).len())
        .sum()
}

/// Validates every family's cases at `scale` on `backend`: every variant of every family, for
/// every dtype it is built for, at every validation shape the back end can run. `progress` is
/// told each case before it runs. Case `i` draws its inputs from `seed` and `i`.
pub fn validate_all(
    backend: &Backend,
    scale: Scale,
    seed: u64,
    progress: impl FnMut(usize, usize, &str),
) -> Vec<CaseOutcome> {
    validate_families(backend, &super::all(), scale, seed, progress)
}

/// [`validate_all`] for `families` only (`rustile validate FAMILY`).
pub fn validate_families(
    backend: &Backend,
    families: &[&'static dyn super::Family],
    scale: Scale,
    seed: u64,
    mut progress: impl FnMut(usize, usize, &str),
) -> Vec<CaseOutcome> {
    let families: Vec<_> = families
        .iter()
        .map(|&f| (f, f.cases(backend, scale)))
        .collect();
    let total = families.iter().map(|(_, c)| c.len()).sum();
    let mut out = Vec::with_capacity(total);
    for (family, cases) in &families {
        for case in cases {
            let i = out.len();
            progress(i, total, &case.label());
            out.push(family.run(backend, case, seed ^ ((i as u64) << 32)));
        }
    }
    out
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
        for problem in validation_problems(family) {
            let src_len = match problem.lens() {
                Ok((src_len, _)) => src_len,
                Err(e) => {
                    out.push(CpuCheck {
                        what: format!("reference {} {}", family.name(), problem.shape()),
                        error: Some(e.to_string()),
                    });
                    continue;
                }
            };
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
        let sm90a = flavour == crate::ptx::Flavour::Sm90a;
        for kernel in KERNELS.iter().filter(|k| k.in_flavour(sm90a)) {
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
