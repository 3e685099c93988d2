//! The validated run of every family ([`super::all`]): each family's cases at a scale, on the
//! GPU or in the simulator; and the checks that need no GPU at all.

use rand::rngs::SmallRng;
use rand::SeedableRng;
use rustile_kernels::registry::{Family, KERNELS};

use crate::backend::Backend;
use crate::elem::random_vec;
use crate::families::memory::validation_problems;

pub use super::{Case, Outcome as CaseOutcome, Scale};

pub mod isolate;

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

/// [`validate_all`] for `families` only (`rustile validate FAMILY`). After a case faults the
/// device ([`crate::Error::is_device_fault`]) the rest are reported as not run;
/// [`validate_families_recovering`] reopens the device instead.
pub fn validate_families(
    backend: &Backend,
    families: &[&'static dyn super::Family],
    scale: Scale,
    seed: u64,
    progress: impl FnMut(usize, usize, &str),
) -> Vec<CaseOutcome> {
    validate_with(
        backend,
        families,
        scale,
        seed,
        &Selection::default(),
        progress,
    )
}

/// Which cases [`validate_with`] runs and what it dumps.
#[derive(Clone, Debug, Default)]
pub struct Selection {
    /// Only the cases whose label ([`Case::label`]) contains this text.
    pub case: Option<String>,
    /// Dump every case's inputs, output and reference here (one directory a case), passed or
    /// not.
    pub dump: Option<std::path::PathBuf>,
    /// Where a failing case's dump goes when `dump` is `None` [default:
    /// [`failure_dir`]].
    pub failures: Option<std::path::PathBuf>,
}

/// Where failing cases are dumped unless told otherwise: `$TMPDIR/rustile-failures`.
pub fn failure_dir() -> std::path::PathBuf {
    std::env::temp_dir().join("rustile-failures")
}

/// The seed of the case labelled `label` in a run seeded `seed`: `seed` mixed with the
/// label's FNV-1a hash, so it depends on the case alone, not on which others run with it
/// (`--case` picks one and replays it with the run's printed seed).
pub fn case_seed(seed: u64, label: &str) -> u64 {
    let hash = label.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    });
    seed ^ hash
}

/// [`validate_families`] with a [`Selection`]: only the cases it picks; each case's inputs,
/// output and reference (what its check [`super::run::capture`]s) are written as `.npy`
/// when it fails (or always, with [`Selection::dump`]). Case `label` draws its inputs from
/// [`case_seed`]`(seed, label)`.
pub fn validate_with(
    backend: &Backend,
    families: &[&'static dyn super::Family],
    scale: Scale,
    seed: u64,
    selection: &Selection,
    mut progress: impl FnMut(usize, usize, &str),
) -> Vec<CaseOutcome> {
    let planned = plan(backend, families, scale, seed, |label| {
        selection.case.as_deref().is_none_or(|f| label.contains(f))
    });
    let mut out: Vec<CaseOutcome> = Vec::with_capacity(planned.len());
    // After a device fault every later call on the context fails with it: report the cases
    // after it as not run, naming the fault, instead of as that error again and again.
    let mut fault: Option<String> = None;
    for (i, p) in planned.iter().enumerate() {
        let (label, s) = (&p.label, p.seed);
        progress(i, planned.len(), label);
        if let Some(f) = &fault {
            out.push(not_run(
                &p.case,
                s,
                format!("not run: the context was lost to a device fault in {f}"),
            ));
            continue;
        }
        let outcome = run_planned(backend, p, selection);
        if outcome.fault {
            fault = Some(label.clone());
        }
        out.push(outcome);
    }
    out
}

/// Runs one planned case on `backend`, dumping its tensors where `selection` says (always
/// with [`Selection::dump`], else when it fails).
fn run_planned(backend: &Backend, p: &Planned, selection: &Selection) -> CaseOutcome {
    let (label, s) = (&p.label, p.seed);
    let (mut outcome, tensors) = super::run::capturing(|| p.family.run(backend, &p.case, s));
    let dir = match (&selection.dump, &outcome.error) {
        (Some(d), _) => Some(d.clone()),
        (None, Some(_)) => Some(selection.failures.clone().unwrap_or_else(failure_dir)),
        (None, None) => None,
    };
    if let Some(dir) = dir {
        let dir = dir.join(super::run::dir_name(label, s));
        let error = outcome.error.clone();
        outcome.dump = Some(
            match super::run::write_dump(&dir, label, s, error.as_deref(), &tensors) {
                Ok(()) => dir.display().to_string(),
                Err(e) => format!("(dump failed: {e})"),
            },
        );
    }
    outcome
}

/// One case a run will make: its family, the case, its label and the seed its inputs come
/// from ([`case_seed`]).
struct Planned {
    family: &'static dyn super::Family,
    case: Case,
    label: String,
    seed: u64,
}

/// Every case of `families` at `scale` on `backend` that `keep` picks, in order, seeded
/// from `seed`.
fn plan(
    backend: &Backend,
    families: &[&'static dyn super::Family],
    scale: Scale,
    seed: u64,
    keep: impl Fn(&str) -> bool,
) -> Vec<Planned> {
    families
        .iter()
        .flat_map(|&family| {
            family.cases(backend, scale).into_iter().map(move |case| {
                let label = case.label();
                let seed = case_seed(seed, &label);
                Planned {
                    family,
                    case,
                    label,
                    seed,
                }
            })
        })
        .filter(|p| keep(&p.label))
        .collect()
}

/// The outcome of a case that was not run, and why.
fn not_run(case: &Case, seed: u64, why: String) -> CaseOutcome {
    CaseOutcome {
        kernel: case.kernel.clone(),
        dtype: case.dtype.name(),
        shape: case.shape.clone(),
        seed,
        error: Some(why),
        fault: false,
        dump: None,
    }
}

/// [`validate_families`] that survives device faults. When a case faults the context
/// ([`crate::Error::is_device_fault`]: a trap, an illegal address), its outcome says so
/// (`fault`), `backend` is dropped with everything on its context, and `reopen` opens a
/// fresh one for the cases after it; if that fails, the rest are reported as not run, with
/// why. Returns the outcomes and the back end in use at the end. Case `label` draws its
/// inputs from [`case_seed`]`(seed, label)`, as in [`validate_with`].
pub fn validate_families_recovering(
    backend: Backend,
    reopen: &dyn Fn() -> crate::Result<Backend>,
    families: &[&'static dyn super::Family],
    scale: Scale,
    seed: u64,
    mut progress: impl FnMut(usize, usize, &str),
) -> (Vec<CaseOutcome>, Option<Backend>) {
    let planned = plan(&backend, families, scale, seed, |_| true);
    let mut out: Vec<CaseOutcome> = Vec::with_capacity(planned.len());
    let mut backend = Some(backend);
    let mut lost = String::new();
    for (i, p) in planned.iter().enumerate() {
        progress(i, planned.len(), &p.label);
        let Some(b) = backend.as_ref() else {
            out.push(not_run(&p.case, p.seed, lost.clone()));
            continue;
        };
        let outcome = p.family.run(b, &p.case, p.seed);
        if outcome.fault {
            backend = None; // every handle on the faulted context goes with it
            match reopen() {
                Ok(b) => backend = Some(b),
                Err(e) => {
                    lost = format!(
                        "not run: the device could not be reopened after the fault in {}: {e}",
                        p.label
                    )
                }
            }
        }
        out.push(outcome);
    }
    (out, backend)
}

/// Runs every case of `families` at `scale` twice with the same seed and checks that the two
/// runs downloaded bit-identical buffers ([`crate::digest`]): the kernels are deterministic
/// (split-K and stream-K reductions included, which add their partials in a fixed order).
/// A case's outcome is its first failing run, or a mismatch naming the first buffer that
/// differs. Returns each outcome with how many buffers its first run downloaded: 0 for the
/// refusal cases (a typed error expected), which have no output to compare.
pub fn check_determinism(
    backend: &Backend,
    families: &[&'static dyn super::Family],
    scale: Scale,
    seed: u64,
    mut progress: impl FnMut(usize, usize, &str),
) -> Vec<(CaseOutcome, usize)> {
    let planned = plan(backend, families, scale, seed, |_| true);
    let mut out = Vec::with_capacity(planned.len());
    for (i, p) in planned.iter().enumerate() {
        progress(i, planned.len(), &p.label);
        let run = || p.family.run(backend, &p.case, p.seed);
        let (first, a) = crate::digest::recording(run);
        if first.error.is_some() {
            out.push((first, a.len()));
            continue;
        }
        let (mut second, b) = crate::digest::recording(run);
        if second.error.is_none() {
            second.error = digest_mismatch(&a, &b);
        }
        out.push((second, a.len()));
    }
    out
}

/// Why two runs' digests show different output, if they do.
fn digest_mismatch(a: &[crate::digest::Digest], b: &[crate::digest::Digest]) -> Option<String> {
    if a.is_empty() && b.is_empty() {
        // A refusal case (a typed error expected, checked by the case): no output to compare.
        return None;
    }
    if a.len() != b.len() {
        return Some(format!(
            "not deterministic: the first run downloaded {} buffers, the second {}",
            a.len(),
            b.len()
        ));
    }
    let (k, (x, y)) = a.iter().zip(b).enumerate().find(|(_, (x, y))| x != y)?;
    Some(format!(
        "not deterministic: download {} of {} ({} bytes) hashed {:#018x} in the first run, \
         {:#018x} ({} bytes) in the second, with the same seed",
        k + 1,
        a.len(),
        x.bytes,
        x.hash,
        y.hash,
        y.bytes
    ))
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
