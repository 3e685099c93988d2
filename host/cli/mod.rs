//! The `rustile` command line: one clap grammar, `rustile <verb> <family>[/<variant>] [options]`.
//!
//! Every argument is parsed and checked here — sizes, dtypes, L2 modes, timing, counts, output
//! directories (created and probed for writing) — before a command opens the GPU, so a typo is a
//! usage error (exit code 2) and never reads as "no GPU". [`Cli::parse_checked`] adds the checks
//! that span several arguments (an `analyze` shape against its kernel's family).
//!
//! One file per verb group: [`suite`] (the main job, `info`, `validate`, `analyze`,
//! `ptx-report`), [`bench`](mod@bench), [`hgemm`] and [`orch`] (the host orchestration studies).
//! A family with a command line of its own ([`Family::command`], e.g. `rustile attention …`)
//! needs no line here: [`Cli`] attaches every such command to the derived grammar as a
//! subcommand named after the family and hands its matches back to the family
//! ([`Command::Family`]).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::error::{Error, Result as RustileResult};
use crate::families::{self, Family};

pub mod bench;
pub mod fuzz;
pub mod hgemm;
pub mod isolated;
pub mod npyrun;
pub mod orch;
pub mod suite;

/// The commands that need no GPU, for the top-level help and the "no GPU" error.
pub const WITHOUT_GPU: &str = "Without a GPU: `rustile` (the CPU-side suite and every kernel in the
simulator), `rustile validate --sim`, `rustile analyze`, `rustile hgemm analyze`,
`rustile ptx-report`.";

/// The built-in commands' grammar, derived; [`Cli`] adds the families' own commands to it.
#[derive(Debug, Parser)]
#[command(
    name = "rustile",
    version,
    about = "Hand-written GPU kernels in Rust: validate, analyze and benchmark them",
    long_about = None,
    after_help = WITHOUT_GPU,
    subcommand_required = false
)]
struct Grammar {
    #[command(subcommand)]
    command: Option<Command>,
}

/// `rustile`: hand-written GPU kernels in Rust, launched, validated and benchmarked. The
/// derived grammar of the built-in commands plus every family's own command
/// ([`Family::command`]): [`CommandFactory::command`] is the whole tree, and
/// [`FromArgMatches`] hands a family's subcommand to [`Command::Family`].
#[derive(Debug)]
pub struct Cli {
    /// The command; none runs the main job (`run`).
    pub command: Option<Command>,
}

impl CommandFactory for Cli {
    fn command() -> clap::Command {
        with_families(Grammar::command())
    }

    fn command_for_update() -> clap::Command {
        with_families(Grammar::command_for_update())
    }
}

/// `root` with every family's own command attached as a subcommand.
fn with_families(root: clap::Command) -> clap::Command {
    families::commands()
        .into_iter()
        .fold(root, |root, (_, cmd)| root.subcommand(cmd))
}

impl FromArgMatches for Cli {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        if let Some((name, sub)) = matches.subcommand() {
            let family = families::all()
                .into_iter()
                .find(|f| f.name() == name && f.command().is_some());
            if let Some(family) = family {
                return Ok(Self {
                    command: Some(Command::Family(FamilyCommand {
                        family,
                        matches: sub.clone(),
                    })),
                });
            }
        }
        Grammar::from_arg_matches(matches).map(|g| Self { command: g.command })
    }

    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

impl Parser for Cli {}

/// A family's own command as parsed: the family and the matches of its subcommand.
#[derive(Clone)]
pub struct FamilyCommand {
    /// The family ([`families::all`]).
    pub family: &'static dyn Family,
    /// The arguments after `rustile <family>`, as matched by [`Family::command`].
    pub matches: clap::ArgMatches,
}

impl FamilyCommand {
    /// Runs it ([`Family::run_command`]).
    pub fn run(&self) -> RustileResult<()> {
        self.family.run_command(&self.matches)
    }
}

impl std::fmt::Debug for FamilyCommand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FamilyCommand")
            .field("family", &self.family.name())
            .field("matches", &self.matches)
            .finish()
    }
}

/// The verbs.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// The main job (the default): validate and time on a GPU, else the CPU-side suite
    ///
    /// On a GPU: the device, every kernel × dtype × shape validated, then the headline cases
    /// timed (the best copy vs cuMemcpyDtoD at 1 GiB, transpose at 8192² and 8191×8193).
    /// Without one: the CPU references, the PTX checks, the ptxas report and every kernel in
    /// the simulator.
    ///
    /// `rustile run FAMILY[/VARIANT] --in a.npy b.npy … --out y.npy [--sim]` instead runs one
    /// kernel on the given .npy arrays (f32 '<f4', f16 '<f2', bf16 as '<u2' with
    /// `--dtype bf16`) and writes its output.
    Run(suite::RunArgs),
    /// Device, limits, theoretical and measured DRAM ceiling
    Info(suite::InfoArgs),
    /// Validate every kernel × dtype × shape, on the GPU or in the simulator
    ///
    /// On the GPU where there is one, else (or with --sim) in the simulator, at the shapes
    /// that suit it.
    Validate(suite::ValidateArgs),
    /// Random cases of every family against the references (GPU or simulator)
    ///
    /// Each case (variant, dtype, shape, strides, scalars, options and inputs) is drawn from
    /// its own seed; a failure prints it and the command that replays exactly that case.
    /// Exit code 1 if any case fails.
    Fuzz(fuzz::FuzzArgs),
    /// One kernel in the simulator: sectors and bank conflicts per line (no GPU)
    ///
    /// Runs FAMILY/VARIANT once in the simulator, validated against the CPU reference, and
    /// reports per source line the warp instructions, global sectors per request and
    /// efficiency, and shared-memory wavefronts and conflict degree.
    Analyze(suite::AnalyzeArgs),
    /// Time a family's variants on the GPU against the vendor baseline
    #[command(subcommand)]
    Bench(bench::BenchCommand),
    /// Compare two result files row by row: faster, slower or the same, beyond the rows' noise
    ///
    /// Rows are matched by `key` (kernel, dtype, shape); B is faster or slower only when
    /// B/A differs from 1 by more than max(A's noise, B's noise, 2%). Exit code 0.
    Compare(bench::CompareArgs),
    /// Tensor-core GEMM (f16/bf16): validate, peak, analyze, bench vs cuBLAS
    #[command(subcommand)]
    Hgemm(hgemm::HgemmCommand),
    /// Assemble every PTX flavour with ptxas: registers, shared memory, spills (no GPU)
    PtxReport,
    /// One self-contained HTML report (inline SVG) from result directories (no GPU)
    Report(crate::report::ReportArgs),
    /// Occupancy vs throughput: a copy and an SGEMM over block sizes, smem padding, register caps
    ///
    /// Each point: the driver's occupancy for the function as loaded (register caps through
    /// `CU_JIT_MAX_REGISTERS` on the same PTX), registers, spills, median time, validated
    /// output. Writes occupancy.json, .csv, .md (`rustile report` charts them). See
    /// notes/occupancy.md.
    Occupancy(crate::occupancy::OccupancyArgs),
    /// Host orchestration studies.
    #[command(flatten)]
    Orch(orch::OrchCommand),
    /// A family's own command, `rustile <family> …` ([`Family::command`]; not derived: the
    /// families attach their commands to [`Cli::command`]).
    #[command(skip)]
    Family(FamilyCommand),
}

impl Cli {
    /// Parses `args` (the program name first) and checks what spans several arguments. Errors
    /// are clap's usage errors (exit code 2).
    pub fn try_parse_checked<I, T>(args: I) -> Result<Self, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        let mut cmd = Self::command();
        let matches = cmd.try_get_matches_from_mut(args)?;
        let cli = Self::from_arg_matches(&matches).map_err(|e| e.format(&mut cmd))?;
        cli.check(&mut cmd)?;
        Ok(cli)
    }

    /// [`Cli::try_parse_checked`] on the process's arguments; prints the error and exits on one.
    pub fn parse_checked() -> Self {
        Self::try_parse_checked(std::env::args_os()).unwrap_or_else(|e| e.exit())
    }

    /// The checks clap's per-argument parsers cannot make, as errors of the subcommand.
    fn check(&self, cmd: &mut clap::Command) -> Result<(), clap::Error> {
        if let Some(Command::Family(f)) = &self.command {
            return f.family.check_command(&f.matches).map_err(|e| {
                match cmd.find_subcommand_mut(f.family.name()) {
                    Some(sub) => e.format(sub),
                    None => e.format(cmd),
                }
            });
        }
        let (name, what, result) = match &self.command {
            Some(Command::Analyze(a)) => (
                "analyze",
                a.shape.as_deref().unwrap_or_default(),
                a.problem().map(|_| ()),
            ),
            _ => return Ok(()),
        };
        result.map_err(|msg| {
            let sub = cmd
                .find_subcommand_mut(name)
                .expect("a subcommand of the grammar");
            sub.error(
                clap::error::ErrorKind::ValueValidation,
                format!("invalid value '{what}' for '[SHAPE]': {msg}"),
            )
        })
    }
}

/// `--seed N`: the seed of the random inputs (default: the time, printed where it matters).
#[derive(Clone, Copy, Debug, Default, Args)]
pub struct Seed {
    /// Seed of the random inputs [default: the time]
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
}

impl Seed {
    /// The given seed, else one from the time.
    pub fn get(self) -> u64 {
        self.seed.unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(0x5eed)
        })
    }
}

/// Whether `e` says there is no GPU (then [`WITHOUT_GPU`] is worth printing).
pub fn is_no_gpu(e: &Error) -> bool {
    matches!(e, Error::NoDriver | Error::NoDevice(_))
}

/// A positive count.
pub fn positive(s: &str) -> Result<usize, String> {
    s.trim()
        .parse::<usize>()
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| format!("`{s}` is not a positive number"))
}

/// A repetition count: positive and at most [`crate::harness::MAX_REPS`].
pub fn reps(s: &str) -> Result<usize, String> {
    positive(s).and_then(|n| at_most_max_reps(s, n, "repetitions"))
}

/// A warm-up count: at most [`crate::harness::MAX_REPS`] (0 is allowed).
pub fn warmup(s: &str) -> Result<usize, String> {
    let n = s
        .trim()
        .parse::<usize>()
        .map_err(|_| format!("`{s}` is not a number"))?;
    at_most_max_reps(s, n, "warm-up launches")
}

fn at_most_max_reps(s: &str, n: usize, what: &str) -> Result<usize, String> {
    if n > crate::harness::MAX_REPS {
        return Err(format!(
            "`{s}` {what}: at most {} are taken",
            crate::harness::MAX_REPS
        ));
    }
    Ok(n)
}

/// A directory results can be written to: created if missing, then probed with a file.
pub fn writable_dir(s: &str) -> Result<PathBuf, String> {
    let dir = PathBuf::from(s);
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create `{s}`: {e}"))?;
    let probe = dir.join(format!(".rustile-write-probe-{}", std::process::id()));
    std::fs::write(&probe, b"").map_err(|e| format!("cannot write in `{s}`: {e}"))?;
    // The probe is ours; failing to remove it leaves an empty file, nothing worse.
    let _ = std::fs::remove_file(&probe);
    Ok(dir)
}

/// Progress on one terminal line, with the elapsed time and an ETA (from when step 0 began);
/// nothing when stderr is not a terminal (logs stay clean).
pub fn progress(i: usize, total: usize, what: &str) {
    static START: std::sync::Mutex<Option<std::time::Instant>> = std::sync::Mutex::new(None);
    if std::io::stderr().is_terminal() {
        let mut start = START.lock().unwrap_or_else(|p| p.into_inner());
        if i == 0 || start.is_none() {
            *start = Some(std::time::Instant::now());
        }
        let elapsed = start.map(|s| s.elapsed()).unwrap_or_default();
        let line = crate::results::progress::status_line(i, total, what, elapsed);
        eprint!("\r\x1b[2K{line}");
        if i + 1 == total {
            eprintln!();
        }
    }
}

/// A status line on the terminal, overwritten by the next one.
pub fn status(what: &str) {
    if std::io::stderr().is_terminal() {
        eprint!("\r\x1b[2K{what}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Result<Cli, clap::Error> {
        Cli::try_parse_checked(std::iter::once("rustile").chain(line.split_whitespace()))
    }

    #[test]
    fn the_grammar_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn no_command_is_the_main_job() {
        assert!(parse("").unwrap().command.is_none());
        assert!(matches!(
            parse("run --seed 7").unwrap().command,
            Some(Command::Run(suite::RunArgs {
                seed: Seed { seed: Some(7) },
                ..
            }))
        ));
    }

    #[test]
    fn unknown_commands_and_options_are_usage_errors() {
        for bad in [
            "frobnicate",
            "validate --bogus",
            "info extra",
            "ptx-report --x",
        ] {
            let e = parse(bad).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad}: {e}");
        }
    }

    #[test]
    fn positive_and_writable() {
        assert_eq!(positive("3"), Ok(3));
        assert!(positive("0").is_err());
        assert!(positive("x").is_err());
        let dir = std::env::temp_dir().join(format!("rustile-cli-{}", std::process::id()));
        assert_eq!(writable_dir(dir.to_str().unwrap()), Ok(dir.clone()));
        let _ = std::fs::remove_dir(&dir);
    }
}
