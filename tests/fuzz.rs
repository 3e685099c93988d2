//! Fuzzing in the simulator (`rustile::families::fuzz`): 1000 random cases per family (every
//! variant the simulator runs, every dtype, random shapes, strides, scalars and options),
//! each drawn from its own seed and checked against the float64/CPU reference; no case may
//! fail, and between them they must reach every kernel × dtype the family's validation cases
//! cover. The replay test proves a case seed gives back the same case and the same output bit
//! for bit.
//!
//! `RUSTILE_FUZZ_SEED=S` (decimal or 0x-hex) runs another seed than the default,
//! `RUSTILE_FUZZ_CASES=N` another count; `RUSTILE_FUZZ_REPLAY=SEED cargo test --release --test
//! fuzz -- FAMILY` replays the one case a failure printed (as does
//! `rustile fuzz --family FAMILY --replay SEED --sim`).

use std::collections::BTreeSet;
use std::time::Instant;

use rustile::backend::Backend;
use rustile::families::{self, fuzz, Family, Scale};
use rustile::sim::Simulator;

/// The run's seed unless `RUSTILE_FUZZ_SEED` says otherwise.
const SEED: u64 = 0x5eed_f022;
/// Cases per family unless `RUSTILE_FUZZ_CASES` says otherwise.
const CASES: usize = 1000;

fn env_u64(name: &str) -> Option<u64> {
    let v = std::env::var(name).ok()?;
    Some(rustile::cli::fuzz::seed(&v).unwrap_or_else(|e| panic!("{name}: {e}")))
}

fn family(name: &str) -> &'static dyn Family {
    families::find(name).unwrap_or_else(|| panic!("no family {name}"))
}

/// Runs the family's fuzz cases (or the one `RUSTILE_FUZZ_REPLAY` names) and fails, naming
/// every failing case's seed and how to replay it, if any fails; checks that the cases reach
/// every kernel × dtype of the family's simulator validation cases.
fn fuzz_family(name: &str) {
    let f = family(name);
    if let Some(case_seed) = env_u64("RUSTILE_FUZZ_REPLAY") {
        let backend = Backend::Simulator(Simulator::default());
        let o = fuzz::run_one(f, &backend, case_seed);
        println!("replayed {name} case {case_seed:#018x}: {}", o.label);
        assert!(o.error.is_none(), "{}: {}", o.label, o.error.unwrap());
        return;
    }
    let seed = env_u64("RUSTILE_FUZZ_SEED").unwrap_or(SEED);
    let cases = env_u64("RUSTILE_FUZZ_CASES").map_or(CASES, |n| n as usize);
    let start = Instant::now();
    let report =
        fuzz::run(f, &fuzz::Where::Simulator, cases, seed, &|_| {}).expect("within MAX_CASES");
    let failures: Vec<String> = report
        .failures()
        .map(|o| {
            format!(
                "FAILED seed {:#018x} {}: {}\n  replay: RUSTILE_FUZZ_REPLAY={:#018x} cargo test --release --test fuzz -- {name}\n      or: {}",
                o.seed,
                o.label,
                o.error.as_deref().unwrap_or(""),
                o.seed,
                fuzz::replay_command(name, o.seed, true)
            )
        })
        .collect();
    println!(
        "{name}: {} cases from seed {seed:#018x} in {:.1} s, {} failed",
        report.outcomes.len(),
        start.elapsed().as_secs_f64(),
        failures.len()
    );
    assert_eq!(report.outcomes.len(), cases);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // Every kernel × dtype that validation runs in the simulator, the fuzzer reached.
    let reached: BTreeSet<(String, &str)> = report
        .outcomes
        .iter()
        .map(|o| (o.kernel.clone(), o.dtype))
        .collect();
    let sim = Backend::Simulator(Simulator::default());
    let validated: BTreeSet<(String, &str)> = f
        .cases(&sim, Scale::Quick)
        .iter()
        .map(|c| (c.kernel.clone(), c.dtype.name()))
        .collect();
    let missed: Vec<_> = validated.difference(&reached).collect();
    if cases >= CASES {
        assert!(missed.is_empty(), "{name}: no fuzz case ran {missed:?}");
    }
}

#[test]
fn copy() {
    fuzz_family("copy");
}

#[test]
fn strided() {
    fuzz_family("strided");
}

#[test]
fn transpose() {
    fuzz_family("transpose");
}

#[test]
fn gemm() {
    fuzz_family("gemm");
}

#[test]
fn hgemm() {
    fuzz_family("hgemm");
}

#[test]
fn attention() {
    fuzz_family("attention");
}

#[test]
fn conv() {
    fuzz_family("conv");
}

/// A case seed gives back the same case (label) and, in fresh simulators, the same output bit
/// for bit, for the first cases of every family; the replay path (`run_one`, what `--replay`
/// runs) draws the case the run drew.
#[test]
fn a_seed_replays_the_same_case_and_output() {
    for f in families::all() {
        let name = f.name();
        let run =
            fuzz::run(f, &fuzz::Where::Simulator, 6, SEED, &|_| {}).expect("within MAX_CASES");
        for (i, o) in run.outcomes.iter().enumerate() {
            let seed = fuzz::case_seed(SEED, name, i as u64);
            assert_eq!(o.seed, seed, "{name} case {i}");
            let backend = || Backend::Simulator(Simulator::default());
            let replay = fuzz::run_one(f, &backend(), seed);
            assert_eq!(replay.label, o.label, "{name} case {i}");
            assert_eq!(replay.error, o.error, "{name} case {i}");
            let [a, b] = [0, 1].map(|_| {
                let case = fuzz::generate(f, &backend(), seed).expect("a case");
                assert_eq!(case.case.label(), o.label, "{name} case {i}");
                (case.output)(&backend(), seed).unwrap_or_else(|e| panic!("{}: {e}", o.label))
            });
            assert!(!a.is_empty(), "{}: no output", o.label);
            assert!(a == b, "{}: two runs of seed {seed:#x} differ", o.label);
        }
        // Different seeds draw different cases.
        let labels: BTreeSet<&str> = run.outcomes.iter().map(|o| o.label.as_str()).collect();
        assert!(labels.len() > 1, "{name}: {labels:?}");
    }
}
