//! `rustile attention validate | bench | dump`: the family's own command line. It is attached
//! to `rustile` by [`crate::families::Family::command`] (the CLI has no line for it), parsed
//! and checked with the rest of the grammar before anything runs (bad values exit 2), and run
//! by [`main`].

use std::path::PathBuf;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, FromArgMatches, Parser, Subcommand, ValueEnum};
use rustile_kernels::registry::DType;

use crate::backend::Backend;
use crate::cli::suite::validate_family;
use crate::cli::{positive, progress, writable_dir, Seed};
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::harness::TimingConfig;
use crate::sim::Simulator;

use super::bench::{self, parse_shapes, plan, shapes_arg, BenchShape, Sweep, NAIVE_MAX_N};
use super::dump::{dump_case, parse_cases};
use super::report::{self, sdpa_command, skip_notes};
use super::{head_dims, Problem, Shape, Target, Variant, FAMILY};

/// `rustile attention`.
#[derive(Debug, Parser)]
#[command(
    name = "attention",
    about = "Attention forward (f16/bf16, GQA, causal): validate, bench, dump for PyTorch",
    long_about = None
)]
pub struct AttentionCli {
    /// The subcommand.
    #[command(subcommand)]
    pub command: AttentionCommand,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum AttentionCommand {
    /// Every attention kernel × dtype × shape against float64 (GPU, else the simulator)
    Validate(ValidateArgs),
    /// TFLOP/s of every kernel the device runs on the baselines' shapes (L2 flushed, median)
    ///
    /// Default sweep: N = 512 … 16384 with B·N = 16384 tokens of H = 16 heads, d 64 and 128,
    /// causal and not; then B·H = 1 … 256 at N = 4096, d = 128. Each kernel's first output is
    /// checked against float64 on sampled rows before it is timed. `--out DIR` writes
    /// attention.md and attention.jsonl (for scripts/attention_report.py); the shapes, as
    /// scripts/sdpa_bench.py --shapes takes them, are printed first (--print-shapes: only
    /// them, no GPU).
    Bench(BenchArgs),
    /// Run a kernel on fresh inputs; write them and its outputs as .npy for sdpa_check.py
    ///
    /// One directory per case under --out with meta.json, q.npy, k.npy, v.npy (float32 of the
    /// exact f16/bf16 inputs, (batch, seq, heads, head_dim)), o.npy and lse.npy ((batch,
    /// heads_q, seq_q)). Then: scripts/sdpa_check.py DIR.
    Dump(DumpArgs),
}

/// `rustile attention validate`.
#[derive(Clone, Copy, Debug, Args)]
pub struct ValidateArgs {
    /// Add the long sequences (2048 … 8192) to the GPU's cases
    #[arg(long)]
    pub full: bool,
    /// In the simulator even when there is a GPU (its own tiny cases)
    #[arg(long)]
    pub sim: bool,
    #[command(flatten)]
    pub seed: Seed,
}

/// `--mask`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum MaskChoice {
    /// No mask
    None,
    /// Causal (bottom-right aligned)
    Causal,
    /// Both
    Both,
}

impl MaskChoice {
    /// The masks it names (`true`: causal).
    pub fn masks(self) -> Vec<bool> {
        match self {
            Self::None => vec![false],
            Self::Causal => vec![true],
            Self::Both => vec![false, true],
        }
    }
}

/// Shapes given as `B,H,N,D,causal;…`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shapes(pub Vec<BenchShape>);

/// `B·H` values of the second sweep (empty: none).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BhList(pub Vec<usize>);

/// `rustile attention bench`.
#[derive(Clone, Debug, Args)]
pub struct BenchArgs {
    /// Kernels [default: every one the device runs; naive only at N ≤ 4096]
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = variant())]
    pub variants: Option<Vec<Variant>>,
    /// Element type
    #[arg(long, value_parser = half_type(), default_value = "f16")]
    pub dtype: DType,
    /// Sequence lengths of the anchor sweep (B = 16384 / N, H = 16)
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = positive,
          default_value = "512,1024,2048,4096,8192,16384")]
    pub n: Vec<usize>,
    /// Head dimensions of the anchor sweep
    #[arg(long = "head-dim", value_name = "LIST", value_delimiter = ',', value_parser = head_dim,
          default_value = "64,128")]
    pub head_dim: Vec<usize>,
    /// Masks of both sweeps
    #[arg(long, value_enum, default_value_t = MaskChoice::Both)]
    pub mask: MaskChoice,
    /// B·H values at N = 4096, d = 128 (H = 16 where B·H is a multiple of 16, else 1), or none
    #[arg(long, value_name = "LIST|none", value_parser = bh_list, default_value = "1,4,16,64,132,256")]
    pub bh: BhList,
    /// Exactly these shapes instead, as scripts/sdpa_bench.py --shapes takes them
    #[arg(long, value_name = "B,H,N,D,causal;…", value_parser = shapes,
          conflicts_with_all = ["n", "head_dim", "mask", "bh"])]
    pub shapes: Option<Shapes>,
    /// Print the shapes as scripts/sdpa_bench.py --shapes takes them, and exit (no GPU)
    #[arg(long)]
    pub print_shapes: bool,
    /// Timed repetitions per case (≥ 1)
    #[arg(long, value_name = "N", value_parser = crate::cli::reps, default_value_t = 30)]
    pub reps: usize,
    /// Untimed repetitions first
    #[arg(long, value_name = "N", value_parser = crate::cli::warmup, default_value_t = 5)]
    pub warmup: usize,
    /// Time without first checking sampled rows against float64
    #[arg(long)]
    pub no_check: bool,
    /// Write attention.md and attention.jsonl here
    #[arg(long, value_name = "DIR", value_parser = writable_dir)]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub seed: Seed,
}

impl BenchArgs {
    /// The shapes to run: `--shapes`, else the sweep the other options describe.
    pub fn shapes(&self) -> Vec<BenchShape> {
        match &self.shapes {
            Some(Shapes(v)) => v.clone(),
            None => Sweep {
                n: self.n.clone(),
                dims: self.head_dim.clone(),
                masks: self.mask.masks(),
                bh: self.bh.0.clone(),
            }
            .shapes(),
        }
    }
}

/// Cases parsed from `--cases`.
#[derive(Clone, Debug, PartialEq)]
pub struct Cases(pub Vec<Shape>);

/// `rustile attention dump`.
#[derive(Clone, Debug, Args)]
pub struct DumpArgs {
    /// Results directory: one subdirectory per case
    #[arg(long, value_name = "DIR", value_parser = writable_dir)]
    pub out: PathBuf,
    /// `default` (odd lengths, primes, Nq ≠ Nkv causal both ways, GQA, MQA, d 64 and 128) or
    /// `B,NQ,NKV,HQ,HKV,D[,causal];…`
    #[arg(long, value_name = "default|LIST", value_parser = cases, default_value = "default")]
    pub cases: Cases,
    /// Element types
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = half_type(),
          default_value = "f16,bf16")]
    pub dtypes: Vec<DType>,
    /// Kernel [default: the dispatcher's choice]
    #[arg(long, value_parser = variant())]
    pub variant: Option<Variant>,
    /// In the simulator instead of on the GPU (small cases only: it runs every thread)
    #[arg(long)]
    pub sim: bool,
    #[command(flatten)]
    pub seed: Seed,
}

/// A variant of the registry ([`Variant::all`]), by name.
fn variant() -> impl TypedValueParser<Value = Variant> {
    let names: Vec<&'static str> = Variant::all().into_iter().map(Variant::name).collect();
    PossibleValuesParser::new(names).map(|s| Variant::parse(&s).expect("a possible value"))
}

/// f16 or bf16.
fn half_type() -> impl TypedValueParser<Value = DType> {
    PossibleValuesParser::new(["f16", "bf16"]).map(|s| match s.as_str() {
        "bf16" => DType::Bf16,
        _ => DType::F16,
    })
}

/// A head dimension the kernels are built for.
fn head_dim(s: &str) -> std::result::Result<usize, String> {
    let dims = head_dims();
    s.trim()
        .parse::<usize>()
        .ok()
        .filter(|d| dims.contains(d))
        .ok_or_else(|| format!("`{s}` is not a head dimension the kernels are built for {dims:?}"))
}

fn bh_list(s: &str) -> std::result::Result<BhList, String> {
    if s.trim() == "none" {
        return Ok(BhList(Vec::new()));
    }
    s.split(',')
        .map(positive)
        .collect::<std::result::Result<_, _>>()
        .map(BhList)
}

fn shapes(s: &str) -> std::result::Result<Shapes, String> {
    parse_shapes(s).map(Shapes).map_err(|e| e.to_string())
}

fn cases(s: &str) -> std::result::Result<Cases, String> {
    parse_cases(s).map(Cases).map_err(|e| e.to_string())
}

/// Runs `rustile attention …` (its matches).
pub fn main(matches: &clap::ArgMatches) -> Result<()> {
    let cli = AttentionCli::from_arg_matches(matches).map_err(|e| Error::Usage(e.to_string()))?;
    match &cli.command {
        AttentionCommand::Validate(a) => validate(a),
        AttentionCommand::Bench(a) => bench_cmd(a),
        AttentionCommand::Dump(a) => dump(a),
    }
}

fn validate(a: &ValidateArgs) -> Result<()> {
    validate_family(FAMILY, a.sim, a.full, a.seed.get())
}

fn bench_cmd(a: &BenchArgs) -> Result<()> {
    let shapes = a.shapes();
    if a.print_shapes {
        println!("{}", shapes_arg(&shapes));
        return Ok(());
    }
    let gpu = Gpu::new(0)?;
    let (runs, skips) = plan(
        Target::Gpu(gpu.flavour()),
        a.dtype,
        &shapes,
        a.variants.as_deref(),
    );
    for note in skip_notes(&skips) {
        eprintln!("skipped: {note}");
    }
    if runs.is_empty() {
        return Err(Error::Unsupported {
            kernel: "attention bench".into(),
            what: format!(
                "no kernel runs any of the shapes on this device \
                 (naive by default only at N ≤ {NAIVE_MAX_N})"
            ),
        });
    }
    let cfg = bench::Config {
        dtype: a.dtype,
        timing: TimingConfig {
            warmup: a.warmup,
            reps: a.reps,
            ..TimingConfig::default()
        },
        check: !a.no_check,
        seed: a.seed.get(),
    };
    let header = format!(
        "attention forward on {} ({}), {}: median of {} repetitions, L2 flushed before each; \
         TFLOP/s = 4·B·H·Nq·Nkv·d over the pairs the mask keeps; seed {}",
        gpu.info().name,
        gpu.flavour().name(),
        a.dtype.name(),
        a.reps,
        cfg.seed
    );
    let sdpa = sdpa_command(&shapes, a.dtype, a.reps);
    println!("{header}\nPyTorch on the same shapes: {sdpa}\n");
    let meta = crate::results::RunMeta::new(
        "attention bench",
        Some(&gpu),
        Some(cfg.seed),
        crate::results::TimingMeta::events(cfg.timing.warmup, cfg.timing.reps, "flush"),
    );
    // bench::run reports each shape's inputs, then each run's check (if on) and timing.
    let shapes = 1 + runs.windows(2).filter(|w| w[0].shape != w[1].shape).count();
    let steps = shapes.min(runs.len()) + runs.len() * (1 + usize::from(cfg.check));
    let mut progress = crate::results::Progress::new(steps);
    let rows = bench::run(&gpu, &cfg, &runs, |s| progress.step(s))?;
    progress.finish();
    println!("{}", report::markdown(&rows, &skips));
    if let Some(dir) = &a.out {
        let [md, jl] = report::write(dir, &header, &rows, &skips, &sdpa)?;
        println!("results: {} and {}", md.display(), jl.display());
        // attention.json/.csv with the run's metadata; attention.md again, the meta on top.
        let text = report::md_text(&header, &rows, &skips, &sdpa);
        crate::results::ResultFile::save(meta, &rows, dir, "attention", &text)?;
    }
    Ok(())
}

fn dump(a: &DumpArgs) -> Result<()> {
    let backend = if a.sim {
        Backend::Simulator(Simulator::default())
    } else {
        Backend::Gpu(Gpu::new(0)?)
    };
    let target = match &backend {
        Backend::Gpu(g) => Target::Gpu(g.flavour()),
        Backend::Simulator(_) => Target::Simulator,
    };
    let seed = a.seed.get();
    let cases: Vec<(usize, DType, Shape)> = a
        .dtypes
        .iter()
        .flat_map(|&t| a.cases.0.iter().map(move |&s| (t, s)))
        .enumerate()
        .map(|(i, (t, s))| (i, t, s))
        .collect();
    let (mut written, mut failed) = (0, 0);
    for &(i, dtype, shape) in &cases {
        progress(
            i,
            cases.len(),
            &format!("{} {}", dtype.name(), shape.describe()),
        );
        if let Some(v) = a.variant {
            if let Err(e) = v.supports(target, &Problem::new(dtype, shape), None) {
                println!("skipped  {} {}: {e}", dtype.name(), shape.describe());
                continue;
            }
        }
        let d = dump_case(
            &backend,
            a.variant,
            (i, dtype, shape),
            seed.wrapping_add(i as u64),
            &a.out,
        )?;
        written += 1;
        match &d.check {
            Ok(c) => println!(
                "ok       {} {}: {} rows vs float64, worst O error {:.2} of its bound",
                d.dir.display(),
                d.kernel,
                c.rows,
                c.worst_o
            ),
            Err(e) => {
                failed += 1;
                println!("FAILED   {} {}: {e}", d.dir.display(), d.kernel);
            }
        }
    }
    println!(
        "dumped {written} cases on {} (seed {seed}) under {}; \
         cross-check with PyTorch: scripts/sdpa_check.py {}",
        backend.name(),
        a.out.display(),
        a.out.display()
    );
    match (written, failed) {
        (0, _) => Err(Error::Usage(
            "no case was dumped: the kernel runs none of them".into(),
        )),
        (_, 0) => Ok(()),
        (_, n) => Err(Error::Usage(format!(
            "{n} cases failed rustile's own float64 check (written anyway, for the cross-check)"
        ))),
    }
}
