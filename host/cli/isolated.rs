//! `rustile validate --isolate`: the validation sweep in child processes
//! ([`crate::suite::isolate`]), and the sweep's printed summary that `validate` shares.

use std::time::Instant;

use super::progress;
use super::suite::{FamilyArg, ValidateArgs};
use crate::suite::{self, isolate};
use crate::{Error, Result};

/// `rustile validate --isolate`: the sweep in child processes ([`isolate::run`]), each a
/// `rustile validate … --isolate-child FROM` of this executable.
pub fn validate(args: &ValidateArgs) -> Result<()> {
    let start = Instant::now();
    let seed = args.seed.get();
    let exe = std::env::current_exe().map_err(|source| Error::Io {
        path: "this executable (std::env::current_exe)".into(),
        source,
    })?;
    let child = isolate::ChildArgs {
        family: args.family.map(|FamilyArg(f)| f.name().to_string()),
        sim: args.sim,
        quick: args.quick,
        case: args.case.clone(),
        dump: args.dump.clone(),
        failures: args.failures.clone(),
        seed,
    };
    let options = isolate::Options {
        case_timeout: args
            .case_timeout
            .map(|s| std::time::Duration::from_secs(s as u64)),
    };
    let report = isolate::run(|from| child.command(&exe, from), &options, progress)?;
    let faults = report.outcomes.iter().filter(|o| o.fault).count();
    println!(
        "isolated: {} cases in {} child processes, {faults} device faults",
        report.total, report.children
    );
    let result = print_outcomes(
        &report.outcomes,
        &report.backend,
        args.sim,
        seed,
        start,
        args.case.as_deref(),
        args.dump.as_deref(),
    );
    if let Some(why) = &report.unfinished {
        println!("  UNFINISHED: {why}");
        return Err(Error::Usage(format!(
            "the isolated sweep stopped early: {why}"
        )));
    }
    result
}

/// Prints a sweep's count line and each failure (FAULT for a device fault) with the command
/// that replays it and where its dump is; fails if any case did.
pub fn print_outcomes(
    outcomes: &[suite::CaseOutcome],
    backend: &str,
    sim: bool,
    seed: u64,
    start: Instant,
    case: Option<&str>,
    dump: Option<&std::path::Path>,
) -> Result<()> {
    if outcomes.is_empty() && case.is_some() {
        return Err(Error::Usage(format!(
            "no case label contains `{}` on {backend}",
            case.unwrap_or_default()
        )));
    }
    let failed: Vec<_> = outcomes.iter().filter(|o| o.error.is_some()).collect();
    println!(
        "validated {} kernel × dtype × shape cases on {} in {:.1} s (seed {seed}): {} passed, {} failed",
        outcomes.len(),
        backend,
        start.elapsed().as_secs_f64(),
        outcomes.len() - failed.len(),
        failed.len()
    );
    for o in &failed {
        println!(
            "  {} {} {} {}: {}",
            if o.fault { "FAULT" } else { "FAILED" },
            o.kernel,
            o.dtype,
            o.shape,
            o.error.as_deref().unwrap_or("")
        );
        let family = o.kernel.split('/').next().unwrap_or_default();
        println!(
            "    replay: rustile validate {family}{} --case '{}' --seed {seed}",
            if sim { " --sim" } else { "" },
            o.label()
        );
        if let Some(dir) = &o.dump {
            println!("    inputs, output and reference: {dir}");
        }
    }
    if let Some(dir) = dump {
        println!("every case dumped under {}", dir.display());
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(Error::Usage(format!(
            "{} validation cases failed",
            failed.len()
        )))
    }
}
