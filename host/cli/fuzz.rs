//! `rustile fuzz`: random cases of every family (or one) against the float64/CPU references,
//! on the GPU or in the simulator ([`crate::families::fuzz`]).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use clap::Args;

use super::suite::{family_arg, FamilyArg};
use crate::error::{Error, Result};
use crate::families::{self, fuzz};
use crate::sim::Simulator;
use crate::Backend;

/// `rustile fuzz [--family F] [--cases N] [--seed S] [--replay SEED] [--sim]`.
#[derive(Clone, Copy, Debug, Args)]
pub struct FuzzArgs {
    /// Only this family [default: every family]
    #[arg(long, value_name = "FAMILY", value_parser = family_arg())]
    pub family: Option<FamilyArg>,
    /// Random cases in all, shared evenly among the families
    #[arg(long, value_name = "N", default_value_t = 700, value_parser = cases)]
    pub cases: usize,
    /// Seed of the run: case i of a family has a seed derived from it, the family and i
    /// (decimal or 0x-hex) [default: the time]
    #[arg(long, value_name = "S", value_parser = seed, conflicts_with = "replay")]
    pub seed: Option<u64>,
    /// Replays the one case with this case seed (as a failure prints it; needs --family)
    #[arg(long, value_name = "SEED", value_parser = seed, requires = "family")]
    pub replay: Option<u64>,
    /// In the simulator even when there is a GPU
    #[arg(long)]
    pub sim: bool,
}

/// A seed: decimal or `0x` hexadecimal.
pub fn seed(s: &str) -> std::result::Result<u64, String> {
    let t = s.trim();
    let parsed = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(&hex.replace('_', ""), 16),
        None => t.replace('_', "").parse::<u64>(),
    };
    parsed.map_err(|_| format!("`{s}` is not a 64-bit seed (decimal or 0x-hex)"))
}

/// Runs `rustile fuzz`: prints each family's count, failures and time, and each failure's
/// seed and replay command; fails if any case did.
pub fn run(args: &FuzzArgs) -> Result<()> {
    let backend = if args.sim {
        Backend::Simulator(Simulator::default())
    } else {
        let (backend, no_gpu) = Backend::gpu_or_simulator()?;
        if let Some(e) = no_gpu {
            eprintln!("{e}: fuzzing in the simulator");
        }
        backend
    };
    let sim = matches!(backend, Backend::Simulator(_));
    let families = args
        .family
        .map_or_else(families::all, |FamilyArg(f)| vec![f]);
    if let Some(case_seed) = args.replay {
        let f = families[0];
        let o = fuzz::run_one(f, &backend, case_seed);
        println!("{} case {case_seed:#018x}: {}", f.name(), o.label);
        return match o.error {
            None => {
                println!("passed");
                Ok(())
            }
            Some(e) => Err(Error::Usage(format!("FAILED {}: {e}", o.label))),
        };
    }
    let seed = args.seed.unwrap_or_else(|| {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0x5eed)
    });
    println!(
        "fuzzing {} on {} (seed {seed:#018x}, {} cases)",
        families
            .iter()
            .map(|f| f.name())
            .collect::<Vec<_>>()
            .join(", "),
        backend.name(),
        args.cases
    );
    let start = Instant::now();
    let (mut total, mut failed) = (0usize, 0usize);
    let n = families.len();
    for (i, &family) in families.iter().enumerate() {
        let cases = args.cases / n + usize::from(i < args.cases % n);
        if cases == 0 {
            continue;
        }
        let done = AtomicUsize::new(0);
        let tick = |_: usize| {
            let k = done.fetch_add(1, Ordering::Relaxed);
            super::progress(k, cases, family.name());
        };
        let place = if sim {
            fuzz::Where::Simulator
        } else {
            fuzz::Where::On(&backend)
        };
        let report = fuzz::run(family, &place, cases, seed, &tick)?;
        let failures: Vec<_> = report.failures().collect();
        println!(
            "{:<10} {:>6} cases, {:>3} failed, {:>7.1} s",
            report.family,
            report.outcomes.len(),
            failures.len(),
            report.secs
        );
        for o in &failures {
            println!(
                "  FAILED seed {:#018x} {}: {}\n    replay: {}",
                o.seed,
                o.label,
                o.error.as_deref().unwrap_or(""),
                fuzz::replay_command(o.family, o.seed, sim)
            );
        }
        total += report.outcomes.len();
        failed += failures.len();
    }
    println!(
        "fuzzed {total} cases in {:.1} s: {} passed, {failed} failed",
        start.elapsed().as_secs_f64(),
        total - failed
    );
    if failed == 0 {
        Ok(())
    } else {
        Err(Error::Usage(format!("{failed} fuzz cases failed")))
    }
}

/// `--cases`: positive and at most [`fuzz::MAX_CASES`].
fn cases(s: &str) -> std::result::Result<usize, String> {
    let n = super::positive(s)?;
    if n > fuzz::MAX_CASES {
        return Err(format!("`{s}` cases: at most {} per run", fuzz::MAX_CASES));
    }
    Ok(n)
}
