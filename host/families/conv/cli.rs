//! `rustile conv validate | bench`: the family's own command line, attached to `rustile` by
//! [`crate::families::Family::command`], parsed (bad values exit 2) before anything runs.

use super::tma::Reduce;
use std::path::PathBuf;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, FromArgMatches, Parser, Subcommand};
use rustile_kernels::registry::{self, DType, KernelInfo, Role};

use crate::backend::Backend;
use crate::cli::suite::validate_family;
use crate::cli::{positive, writable_dir, Seed};
use crate::error::{Error, Result};
use crate::families::Scale;
use crate::gpu::Gpu;
use crate::harness::{L2Mode, TimingConfig};
use crate::results::{ResultFile, RunMeta, TimingMeta};
use crate::sim::Simulator;

use super::bench::{bench_one, markdown, Row};
use super::shapes::resnet50;
use super::{select, Target, FAMILY};

/// `rustile conv`.
#[derive(Debug, Parser)]
#[command(
    name = "conv",
    about = "Fused conv2d + bias + ReLU (f32 study ladder, f16/bf16 tensor cores): validate, bench",
    long_about = None
)]
pub struct ConvCli {
    /// The subcommand.
    #[command(subcommand)]
    pub command: ConvCommand,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum ConvCommand {
    /// Every conv kernel × dtype × shape against float64 (GPU, else the simulator)
    Validate(ValidateArgs),
    /// TFLOP/s on the ResNet-50 convolutions, interleaved with cuDNN (L2 flushed, median)
    ///
    /// Each kernel's output is first checked against float64 on sampled elements. `--out DIR`
    /// writes conv.md and conv.json.
    Bench(BenchArgs),
    /// Run the dispatcher's kernel on the validation shapes; write inputs and output as .npy
    ///
    /// One directory per case under --out (meta.json, x.npy, w.npy, bias.npy, y.npy); then
    /// `python3 scripts/conv_torch.py check DIR` recomputes each in float64 with PyTorch.
    Dump(DumpArgs),
}

/// `rustile conv dump`.
#[derive(Clone, Debug, Args)]
pub struct DumpArgs {
    /// Results directory: one subdirectory per case
    #[arg(long, value_name = "DIR", value_parser = writable_dir)]
    pub out: PathBuf,
    /// Element types (f32 dumps NHWC and NCHW)
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = dtype(),
          default_value = "f16,bf16,f32")]
    pub types: Vec<DType>,
    /// In the simulator instead of on the GPU
    #[arg(long)]
    pub sim: bool,
    #[command(flatten)]
    pub seed: Seed,
}

/// `rustile conv validate`.
#[derive(Clone, Copy, Debug, Args)]
pub struct ValidateArgs {
    /// Add the large shapes to the GPU's cases
    #[arg(long)]
    pub full: bool,
    /// In the simulator even when there is a GPU
    #[arg(long)]
    pub sim: bool,
    #[command(flatten)]
    pub seed: Seed,
}

/// `rustile conv bench`.
#[derive(Clone, Debug, Args)]
pub struct BenchArgs {
    /// Kernels [default: the dispatcher's choice]
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = variant())]
    pub variants: Option<Vec<&'static KernelInfo>>,
    /// Element types (f32 runs NCHW on the f32 kernels, or NHWC with `--f32-nhwc`)
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = dtype(),
          default_value = "f16,bf16")]
    pub types: Vec<DType>,
    /// f32 in NHWC (x NHWC, w KRSC; cuDNN in NHWC too) instead of NCHW
    #[arg(long)]
    pub f32_nhwc: bool,
    /// Batch sizes
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = positive,
          default_value = "32")]
    pub batch: Vec<usize>,
    /// Only the layers whose name or shape contains one of these (e.g. `l4.b1,3x3`)
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub layers: Option<Vec<String>>,
    /// Timed repetitions per case (≥ 1)
    #[arg(long, value_name = "N", value_parser = crate::cli::reps, default_value_t = 20)]
    pub reps: usize,
    /// Untimed repetitions first
    #[arg(long, value_name = "N", value_parser = crate::cli::warmup, default_value_t = 3)]
    pub warmup: usize,
    /// Without the cuDNN baseline
    #[arg(long)]
    pub no_baseline: bool,
    /// The TMA kernel's epilogue stores y through a staging tile and TMA stores (the default
    /// stores it directly from the accumulators)
    #[arg(long)]
    pub tma_stores: bool,
    /// Split the reduction of the TMA kernel or of the f32 regblock step into N parts (f32
    /// partial sums, then a fix-up) instead of the estimate's choice
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=64), conflicts_with = "stream_k")]
    pub splits: Option<u32>,
    /// Stream-K for the TMA kernel (64- and 128-wide tiles), instead of the estimate's choice
    /// (`--splits 1`: whole tiles)
    #[arg(long)]
    pub stream_k: bool,
    /// Cut every tile of the TMA kernel into N k-segments, one block each, finished in the
    /// kernel (64- and 128-wide tiles; tiles · N must not exceed the SMs)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=64), conflicts_with_all = ["stream_k", "splits"])]
    pub cut: Option<u32>,
    /// Write conv.json, conv.csv and conv.md here
    #[arg(long, value_name = "DIR", value_parser = writable_dir)]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub seed: Seed,
}

fn variant() -> impl TypedValueParser<Value = &'static KernelInfo> {
    let names: Vec<&'static str> = registry::KERNELS
        .iter()
        .copied()
        .filter(|k| {
            k.family == rustile_kernels::conv::FAMILY
                && matches!(k.role, Role::Ladder | Role::Tuning)
        })
        .map(|k| k.name)
        .collect();
    PossibleValuesParser::new(names)
        .map(|s| registry::find(rustile_kernels::conv::FAMILY, &s).expect("a possible value"))
}

fn dtype() -> impl TypedValueParser<Value = DType> {
    PossibleValuesParser::new(["f32", "f16", "bf16"])
        .map(|s| crate::elem::parse_dtype(&s).expect("a possible value"))
}

/// Runs `rustile conv …`.
pub fn main(matches: &clap::ArgMatches) -> Result<()> {
    let cli = ConvCli::from_arg_matches(matches).map_err(|e| Error::Usage(e.to_string()))?;
    match &cli.command {
        ConvCommand::Validate(a) => validate(a),
        ConvCommand::Bench(a) => bench_cmd(a),
        ConvCommand::Dump(a) => dump_cmd(a),
    }
}

fn dump_cmd(a: &DumpArgs) -> Result<()> {
    let backend = if a.sim {
        Backend::Simulator(Simulator::default())
    } else {
        Backend::Gpu(Gpu::new(0)?)
    };
    let target = Target::of(&backend);
    let seed = a.seed.get();
    let mut i = 0;
    let (mut ok, mut bad) = (0, 0);
    for &dtype in &a.types {
        let layouts: &[rustile_kernels::registry::Layout] = if dtype == DType::F32 {
            &super::LAYOUTS
        } else {
            &super::LAYOUTS[..1]
        };
        for &layout in layouts {
            for base in super::cases::shapes(&backend, Scale::Quick, dtype) {
                let p = base.with_layout(layout);
                let Ok(record) = select(target, &p) else {
                    continue;
                };
                let dir = a.out.join(super::dump::case_name(i, &p));
                i += 1;
                let d = super::dump::dump(&backend, record, &p, seed, &dir)?;
                if d.check.ok {
                    ok += 1;
                } else {
                    bad += 1;
                    eprintln!(
                        "{}: rustile's own check failed: {:?}",
                        dir.display(),
                        d.check
                    );
                }
            }
        }
    }
    println!(
        "dumped {i} cases into {} (seed {seed}; rustile's float64 check: {ok} passed, {bad} failed); next: python3 scripts/conv_torch.py check {}",
        a.out.display(),
        a.out.display()
    );
    if bad > 0 {
        return Err(Error::Usage(format!(
            "{bad} dumped cases failed rustile's own check"
        )));
    }
    Ok(())
}

fn validate(a: &ValidateArgs) -> Result<()> {
    validate_family(FAMILY, a.sim, a.full, a.seed.get())
}

fn bench_cmd(a: &BenchArgs) -> Result<()> {
    let gpu = Gpu::new(0)?;
    let cfg = TimingConfig {
        warmup: a.warmup,
        reps: a.reps,
        mode: L2Mode::Flush,
    };
    let seed = a.seed.get();
    let reduce = match (a.stream_k, a.splits, a.cut) {
        (true, _, _) => Reduce::StreamK,
        (false, Some(s), _) => Reduce::Split(s),
        (false, None, Some(n)) => Reduce::Cut(n),
        (false, None, None) => Reduce::Auto,
    };
    let mut rows: Vec<Row> = Vec::new();
    for &batch in &a.batch {
        for &dtype in &a.types {
            for (name, mut p) in resnet50(batch, dtype) {
                if let Some(f) = &a.layers {
                    let label = p.label();
                    if !f.iter().any(|s| name.contains(s.as_str()) || label.contains(s.as_str())) {
                        continue;
                    }
                }
                if dtype == DType::F32 && a.f32_nhwc {
                    p = p.with_layout(rustile_kernels::registry::Layout::Nhwc);
                }
                let records: Vec<&'static KernelInfo> = match &a.variants {
                    Some(v) => v.clone(),
                    None => match select(Target::gpu(&gpu), &p) {
                        Ok(r) => vec![r],
                        Err(e) => {
                            eprintln!("skipped {name} {}: {e}", p.label());
                            continue;
                        }
                    },
                };
                for record in records {
                    match bench_one(
                        &gpu,
                        name,
                        record,
                        &p,
                        &cfg,
                        seed,
                        !a.no_baseline,
                        a.tma_stores,
                        reduce,
                    ) {
                        Ok(r) => {
                            eprintln!(
                                "{}",
                                markdown(std::slice::from_ref(&r))
                                    .lines()
                                    .last()
                                    .unwrap_or("")
                            );
                            rows.push(r);
                        }
                        Err(e @ Error::Unsupported { .. }) => eprintln!("skipped {name}: {e}"),
                        Err(e) => return Err(e),
                    }
                }
            }
        }
    }
    let md = format!(
        "conv bench on {} (seed {seed}, median of {} reps after {} warm-up, L2 flushed, interleaved with the baselines)\n\n{}",
        gpu.info().name,
        a.reps,
        a.warmup,
        markdown(&rows)
    );
    println!("{md}");
    if let Some(dir) = &a.out {
        let mut t = TimingMeta::events(a.warmup, a.reps, "flush");
        t.pairing = Some("interleaved".into());
        let meta = RunMeta::new("conv bench", Some(&gpu), Some(seed), t);
        ResultFile::save(meta, &rows, dir, "conv", &md)?;
    }
    Ok(())
}
