//! `rustile bench FAMILY`: the sweeps on the GPU.

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};

use super::suite::print_info;
use super::{positive, writable_dir, Seed};
use crate::bench::{self, Sweep};
use crate::gemm::GemmProblem;
use crate::harness::{L2Mode, TimingConfig};
use crate::results::{Progress, ResultFile, RunMeta, TimingMeta};
use crate::{DType, Family, Gpu, KernelInfo, Problem, Result};

/// The families `bench` sweeps.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Contiguous copy variants vs cuMemcpyDtoD
    Copy(CopyArgs),
    /// Strided gather at every stride 1..32
    Strided(StridedArgs),
    /// Transpose variants
    Transpose(TransposeArgs),
    /// The SGEMM ladder vs cuBLAS: TFLOP/s, × cuBLAS, × FP32 peak, registers, occupancy
    Gemm(GemmArgs),
    /// copy, strided, transpose and gemm at their default sizes
    All(SweepArgs),
    /// CPU (gemm crate, all cores) vs GPU SGEMM, kernel alone and with transfers
    Crossover(CrossoverArgs),
    /// The dispatchers' copy (odd lengths and offsets) vs cuMemcpyDtoD and f16/bf16
    /// transposes vs that copy of the same bytes, interleaved rep by rep
    Memory(MemoryArgs),
}

/// `rustile bench memory`.
#[derive(Clone, Debug, Args)]
pub struct MemoryArgs {
    /// Timed repetitions per row (≥ 1)
    #[arg(long, value_name = "N", value_parser = crate::cli::reps, default_value_t = TimingConfig::default().reps)]
    pub reps: usize,
    /// Untimed repetitions first
    #[arg(long, value_name = "N", value_parser = crate::cli::warmup, default_value_t = TimingConfig::default().warmup)]
    pub warmup: usize,
    /// Results directory (`memory.json`, `.csv`, `.md`)
    #[arg(long, value_name = "DIR", value_parser = writable_dir, default_value = "target/rustile-bench")]
    pub out: PathBuf,
    #[command(flatten)]
    pub seed: Seed,
    #[command(flatten)]
    pub noise: NoiseArgs,
}

/// `rustile bench memory`: [`crate::memory::accept`].
fn memory(a: &MemoryArgs) -> Result<()> {
    let gpu = Gpu::new(0)?;
    print_info(&gpu);
    let seed = a.seed.get();
    let timing = TimingConfig {
        warmup: a.warmup,
        reps: a.reps,
        ..TimingConfig::default()
    };
    let mut t = TimingMeta::events(timing.warmup, timing.reps, "rotate");
    (t.max_noise_pct, t.pairing) = (a.noise.max_noise, Some("interleaved".into()));
    let meta = RunMeta::new("bench memory", Some(&gpu), Some(seed), t);
    let steps = 2 * (crate::memory::accept::COPY_LENGTHS.len() + 1)
        + 2 * crate::memory::accept::TRANSPOSE_SHAPES.len();
    let mut progress = Progress::new(steps);
    let rows = crate::memory::accept::run(&gpu, &timing, seed, |s| progress.step(s))?;
    progress.finish();
    let table = crate::memory::accept::markdown(&rows);
    println!("\n{table}");
    ResultFile::save(meta, &rows, &a.out, "memory", &table)
}

/// `--dtype`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum DtypeChoice {
    /// 32-bit float
    F32,
    /// 16-bit float
    F16,
    /// f32 and f16
    All,
}

impl DtypeChoice {
    /// The dtypes it names.
    pub fn dtypes(self) -> Vec<DType> {
        match self {
            Self::F32 => vec![DType::F32],
            Self::F16 => vec![DType::F16],
            Self::All => vec![DType::F32, DType::F16],
        }
    }
}

/// `--l2`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum L2Choice {
    /// Rotate through input sets larger than 3× the L2
    Rotate,
    /// Flush the L2 before every repetition
    Flush,
    /// Both
    Both,
}

impl L2Choice {
    /// `rotate`, `flush` or `both`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Rotate => "rotate",
            Self::Flush => "flush",
            Self::Both => "both",
        }
    }

    /// The modes it names.
    pub fn modes(self) -> Vec<L2Mode> {
        match self {
            Self::Rotate => vec![L2Mode::Rotate],
            Self::Flush => vec![L2Mode::Flush],
            Self::Both => L2Mode::ALL.to_vec(),
        }
    }
}

/// `--max-noise PCT`, for every sweep that writes a result file.
#[derive(Clone, Copy, Debug, Default, Args)]
pub struct NoiseArgs {
    /// Fail (exit 1, after writing the results) if a row's noise, 100·(p80−p20)/median, is
    /// over PCT percent
    #[arg(long, value_name = "PCT", value_parser = noise_pct)]
    pub max_noise: Option<f64>,
}

fn noise_pct(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("`{s}` is not a percentage > 0")),
    }
}

/// The options of a memory-family sweep.
#[derive(Clone, Debug, Args)]
pub struct SweepArgs {
    /// Element types
    #[arg(long, value_enum, default_value_t = DtypeChoice::All)]
    pub dtype: DtypeChoice,
    /// How repetitions are kept from hitting in the L2
    #[arg(long, value_enum, default_value_t = L2Choice::Both)]
    pub l2: L2Choice,
    /// Timed repetitions per case (≥ 1)
    #[arg(long, value_name = "N", value_parser = crate::cli::reps, default_value_t = TimingConfig::default().reps)]
    pub reps: usize,
    /// Untimed repetitions first
    #[arg(long, value_name = "N", value_parser = crate::cli::warmup, default_value_t = TimingConfig::default().warmup)]
    pub warmup: usize,
    /// Results directory (`<family>.json` and `.csv`)
    #[arg(long, value_name = "DIR", value_parser = writable_dir, default_value = "target/rustile-bench")]
    pub out: PathBuf,
    #[command(flatten)]
    pub seed: Seed,
    #[command(flatten)]
    pub noise: NoiseArgs,
}

/// Problems parsed from `--sizes` for one family.
#[derive(Clone, Debug)]
pub struct Sizes(pub Vec<Problem>);

fn sizes_of(family: Family, s: &str) -> Result<Sizes, String> {
    bench::parse_sizes(family, s)
        .map(Sizes)
        .map_err(|e| e.to_string())
}

/// `rustile bench copy`.
#[derive(Clone, Debug, Args)]
pub struct CopyArgs {
    /// Element counts, comma-separated [default: 1048576,1048577,16777219,100000007,268435456,268435459]
    #[arg(long, value_name = "N,N,…", value_parser = |s: &str| sizes_of(Family::Copy, s))]
    pub sizes: Option<Sizes>,
    #[command(flatten)]
    pub sweep: SweepArgs,
}

/// `rustile bench strided`.
#[derive(Clone, Debug, Args)]
pub struct StridedArgs {
    /// Output element counts, each run at every stride 1..32 [default: 33554432]
    #[arg(long, value_name = "N,N,…", value_parser = |s: &str| sizes_of(Family::Strided, s))]
    pub sizes: Option<Sizes>,
    #[command(flatten)]
    pub sweep: SweepArgs,
}

/// `rustile bench transpose`.
#[derive(Clone, Debug, Args)]
pub struct TransposeArgs {
    /// Matrices ROWSxCOLS, comma-separated [default: 4096x4096,8192x8192,8191x8193]
    #[arg(long, value_name = "RxC,…", value_parser = |s: &str| sizes_of(Family::Transpose, s))]
    pub sizes: Option<Sizes>,
    #[command(flatten)]
    pub sweep: SweepArgs,
}

/// The SGEMM ladder's default sizes.
pub const GEMM_SIZES: &str = "128,256,512,1000,1024,2048,4093,4096,8192,8192x8192x512";

/// `rustile bench gemm`.
#[derive(Clone, Debug, Args)]
pub struct GemmArgs {
    /// Problems N or MxNxK, comma-separated
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = gemm_shape,
          default_value = GEMM_SIZES)]
    pub sizes: Vec<GemmProblem>,
    /// Variants (ladder steps and experiments) [default: the ladder]
    #[arg(long, value_name = "A,B,…", value_delimiter = ',', value_parser = gemm_variant)]
    pub variants: Option<Vec<&'static KernelInfo>>,
    /// Results directory (gemm.json, .csv, .md)
    #[arg(long, value_name = "DIR", value_parser = writable_dir, default_value = "target/rustile-bench")]
    pub out: PathBuf,
    #[command(flatten)]
    pub seed: Seed,
    #[command(flatten)]
    pub noise: NoiseArgs,
}

fn gemm_shape(s: &str) -> Result<GemmProblem, String> {
    crate::gemm::parse_shape(s).map_err(|e| e.to_string())
}

fn gemm_variant(name: &str) -> Result<&'static KernelInfo, String> {
    let all = || {
        crate::gemm::variants().chain(rustile_kernels::registry::of(
            Family::Gemm,
            rustile_kernels::registry::Role::Experiment,
        ))
    };
    all().find(|k| k.name == name.trim()).ok_or_else(|| {
        let names: Vec<_> = all().map(|k| k.name).collect();
        format!(
            "unknown gemm variant `{name}`; there are {}",
            names.join(", ")
        )
    })
}

/// `rustile bench crossover`.
#[derive(Clone, Debug, Args)]
pub struct CrossoverArgs {
    /// Square sizes N, comma-separated
    #[arg(long, value_name = "N,N,…", value_delimiter = ',', value_parser = positive,
          default_value = "32,64,128,256,512,1024,2048,4096")]
    pub sizes: Vec<usize>,
    /// Results directory (crossover.json, .csv, .md)
    #[arg(long, value_name = "DIR", value_parser = writable_dir, default_value = "target/rustile-bench")]
    pub out: PathBuf,
    #[command(flatten)]
    pub seed: Seed,
}

/// `rustile compare A.json B.json`.
#[derive(Clone, Debug, Args)]
pub struct CompareArgs {
    /// The reference run's result file
    #[arg(value_name = "A.json")]
    pub a: PathBuf,
    /// The run compared with it
    #[arg(value_name = "B.json")]
    pub b: PathBuf,
}

/// Runs `rustile compare`: both files read and checked first, then the table and summary.
pub fn compare(args: &CompareArgs) -> Result<()> {
    let a = ResultFile::read(&args.a)?;
    let b = ResultFile::read(&args.b)?;
    let c = crate::results::compare::compare(&a, &b);
    print!("{}", c.render(&a, &b));
    Ok(())
}

/// Runs `rustile bench …`.
pub fn run(cmd: &BenchCommand) -> Result<()> {
    let (families, sizes, sweep_args) = match cmd {
        BenchCommand::Crossover(a) => return crossover(a),
        BenchCommand::Memory(a) => return memory(a),
        BenchCommand::Gemm(a) => {
            let gpu = Gpu::new(0)?;
            print_info(&gpu);
            return gemm(&gpu, a);
        }
        BenchCommand::Copy(a) => (vec![Family::Copy], a.sizes.clone(), &a.sweep),
        BenchCommand::Strided(a) => (vec![Family::Strided], a.sizes.clone(), &a.sweep),
        BenchCommand::Transpose(a) => (vec![Family::Transpose], a.sizes.clone(), &a.sweep),
        BenchCommand::All(a) => (
            vec![
                Family::Copy,
                Family::Strided,
                Family::Transpose,
                Family::Gemm,
            ],
            None,
            a,
        ),
    };
    let timing = TimingConfig {
        warmup: sweep_args.warmup,
        reps: sweep_args.reps,
        ..TimingConfig::default()
    };
    let out = &sweep_args.out;
    let seed = sweep_args.seed.get();
    let gpu = Gpu::new(0)?;
    print_info(&gpu);
    for family in families {
        if family == Family::Gemm {
            gemm(
                &gpu,
                &GemmArgs {
                    sizes: gemm_default_sizes()?,
                    variants: None,
                    out: out.clone(),
                    seed: Seed { seed: Some(seed) },
                    noise: sweep_args.noise,
                },
            )?;
            continue;
        }
        let mut sweep = Sweep::default_for(family);
        if let Some(Sizes(problems)) = &sizes {
            sweep.problems = problems.clone();
        }
        sweep.dtypes = sweep_args.dtype.dtypes();
        sweep.modes = sweep_args.l2.modes();
        let mut t = TimingMeta::events(timing.warmup, timing.reps, sweep_args.l2.name());
        t.max_noise_pct = sweep_args.noise.max_noise;
        let meta = RunMeta::new(
            &format!("bench {}", family.name()),
            Some(&gpu),
            Some(seed),
            t,
        );
        let mut progress = Progress::new(sweep.cases());
        let rows = bench::run(&gpu, &sweep, &timing, seed, |s| progress.step(s))?;
        progress.finish();
        let table = bench::markdown(&rows);
        println!("\n{table}");
        ResultFile::save(meta, &rows, out, family.name(), &table)?;
    }
    Ok(())
}

fn gemm_default_sizes() -> Result<Vec<GemmProblem>> {
    GEMM_SIZES
        .split(',')
        .map(crate::gemm::parse_shape)
        .collect()
}

/// The CPU–GPU crossover study.
fn crossover(a: &CrossoverArgs) -> Result<()> {
    let gpu = Gpu::new(0)?;
    print_info(&gpu);
    let seed = a.seed.get();
    let mut t = TimingMeta::events(1, 3, "flush");
    (t.reps_max, t.timer) = (
        Some(15),
        "wall clock (CPU, with transfers), cuda-events (kernel)".into(),
    );
    let meta = RunMeta::new("bench crossover", Some(&gpu), Some(seed), t);
    let mut progress = Progress::new(a.sizes.len());
    let rows = crate::gemm::crossover::run(&gpu, &a.sizes, seed, |s| progress.step(s))?;
    progress.finish();
    let table = crate::gemm::crossover::markdown(&rows);
    println!("\n{table}");
    ResultFile::save(meta, &rows, &a.out, "crossover", &table)
}

/// The SGEMM ladder: every variant, cuBLAS and the dispatcher at each size.
fn gemm(gpu: &Gpu, a: &GemmArgs) -> Result<()> {
    let variants: Vec<_> = match &a.variants {
        None => crate::gemm::variants().collect(),
        Some(v) => v.clone(),
    };
    let seed = a.seed.get();
    // crate::gemm::bench: one warm-up, repetitions adapted to ~0.3 s per case (3 to 20), the
    // L2 flushed before each.
    let mut t = TimingMeta::events(1, 3, "flush");
    (t.reps_max, t.max_noise_pct) = (Some(20), a.noise.max_noise);
    let meta = RunMeta::new("bench gemm", Some(gpu), Some(seed), t);
    let mut progress = Progress::new(a.sizes.len() * (variants.len() + 2));
    let rows = crate::gemm::bench(gpu, &a.sizes, &variants, 0.3, seed, |s| progress.step(s))?;
    progress.finish();
    let table = crate::gemm::markdown(&rows);
    println!("\n{table}");
    ResultFile::save(meta, &rows, &a.out, "gemm", &table)
}

#[cfg(test)]
mod tests {
    use super::super::{Cli, Command};
    use super::*;

    fn parse(line: &str) -> Result<Cli, clap::Error> {
        Cli::try_parse_checked(std::iter::once("rustile").chain(line.split_whitespace()))
    }

    fn bench(line: &str) -> BenchCommand {
        match parse(line).unwrap().command {
            Some(Command::Bench(b)) => b,
            other => panic!("{line}: {other:?}"),
        }
    }

    #[test]
    fn sweep_options_parse_to_typed_values() {
        let BenchCommand::Transpose(t) = bench(
            "bench transpose --sizes 64x32,8x8 --dtype f16 --l2 flush --reps 3 --warmup 0 \
             --seed 9 --out target/rustile-bench",
        ) else {
            panic!()
        };
        assert_eq!(t.sizes.unwrap().0.len(), 2);
        assert_eq!(t.sweep.dtype.dtypes(), vec![DType::F16]);
        assert_eq!(t.sweep.l2.modes(), vec![L2Mode::Flush]);
        assert_eq!((t.sweep.reps, t.sweep.warmup), (3, 0));
        assert_eq!(t.sweep.seed.seed, Some(9));
        let BenchCommand::Copy(c) = bench("bench copy") else {
            panic!()
        };
        assert!(c.sizes.is_none());
        assert_eq!(c.sweep.dtype.dtypes(), vec![DType::F32, DType::F16]);
        assert_eq!(c.sweep.l2.modes(), L2Mode::ALL.to_vec());
        assert_eq!(c.sweep.reps, TimingConfig::default().reps);
    }

    #[test]
    fn gemm_and_crossover_options() {
        let BenchCommand::Gemm(g) =
            bench("bench gemm --sizes 4096,8192x8192x512 --variants warptile")
        else {
            panic!()
        };
        assert_eq!(g.sizes.len(), 2);
        assert_eq!(g.sizes[1], GemmProblem::new(8192, 8192, 512));
        assert_eq!(g.variants.unwrap()[0].name, "warptile");
        let BenchCommand::Gemm(g) = bench("bench gemm") else {
            panic!()
        };
        assert_eq!(g.sizes, gemm_default_sizes().unwrap());
        let BenchCommand::Crossover(c) = bench("bench crossover --sizes 32,64") else {
            panic!()
        };
        assert_eq!(c.sizes, vec![32, 64]);
    }

    #[test]
    fn bad_values_are_usage_errors() {
        for bad in [
            "bench",
            "bench hgemm",
            "bench copy --sizes abc",
            "bench copy --reps 0",
            "bench copy --dtype bf8",
            "bench copy --l2 sometimes",
            "bench copy --warmup -1",
            "bench transpose --sizes 64",
            "bench all --sizes 4096",
            "bench gemm --sizes abc",
            "bench gemm --sizes 1x2",
            "bench gemm --variants nope",
            "bench gemm --dtype f16",
            "bench crossover --sizes 0",
            "bench copy --out /proc/rustile",
        ] {
            let e = parse(bad).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad}: {e}");
        }
    }
}
