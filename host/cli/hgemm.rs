//! `rustile hgemm validate | peak | analyze | bench`: the tensor-core GEMM's arguments (the
//! commands are [`crate::hgemm::cli`]).

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, Subcommand, ValueEnum};

use super::Seed;
use crate::harness::Pairing;
use crate::hgemm::{self, BLayout, Variant};
use crate::DType;
use rustile_kernels::hgemm::v02_mma_pipeline::{self, Tuning};

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum HgemmCommand {
    /// Every variant the device runs at odd and large shapes, against float64
    Validate(ValidateArgs),
    /// Measured mma.sync and wgmma ceilings (no memory traffic)
    Peak(PeakArgs),
    /// The mma.sync kernels in the simulator (no GPU): sectors and bank conflicts per line
    Analyze(AnalyzeArgs),
    /// TFLOP/s against cuBLAS in the same process, and % of the measured ceiling
    Bench(BenchArgs),
}

/// `rustile hgemm validate`.
#[derive(Clone, Copy, Debug, Args)]
pub struct ValidateArgs {
    /// Only the small shapes (skip 4093³ … 16384²×1024)
    #[arg(long)]
    pub quick: bool,
    /// Instead of the validation cases: this one problem (N or MxNxK), f16 and bf16, B
    /// row-major and transposed, f16/bf16 and f32 out, every variant the device runs (the
    /// sanitizer sweep's racecheck job for wgmma_ws's persistent multi-tile walk)
    #[arg(long, value_name = "MxNxK", value_parser = size, conflicts_with = "quick")]
    pub shape: Option<(usize, usize, usize)>,
    /// With --shape: only this kernel [default: every variant the device runs and auto]
    #[arg(long, requires = "shape",
          value_parser = PossibleValuesParser::new(["mma", "mma_pipeline", "wgmma_ws"])
          .map(|s| Variant::parse(&s).expect("a possible value")))]
    pub variant: Option<Variant>,
    #[command(flatten)]
    pub seed: Seed,
}

/// `rustile hgemm peak`.
#[derive(Clone, Debug, Args)]
pub struct PeakArgs {
    /// Input types
    #[arg(long, value_name = "T,T", value_delimiter = ',', value_parser = in_type(),
          default_value = "f16,bf16")]
    pub types: Vec<DType>,
}

/// `rustile hgemm analyze`.
#[derive(Clone, Debug, Args)]
pub struct AnalyzeArgs {
    /// Problem MxNxK or N
    #[arg(value_name = "MxNxK", value_parser = size, default_value = "256")]
    pub shape: (usize, usize, usize),
    /// Kernel (the simulator runs the mma.sync ones)
    #[arg(long, value_parser = PossibleValuesParser::new(["mma", "mma_pipeline"])
          .map(|s| Variant::parse(&s).expect("a possible value")),
          default_value = "mma_pipeline")]
    pub variant: Variant,
    /// Input type
    #[arg(long = "type", value_name = "TYPE", value_parser = in_type(), default_value = "f16")]
    pub ty: DType,
    /// B layout: bn = K×N row-major, bt = N×K (Bᵀ)
    #[arg(long, value_parser = layout(), default_value = "bn")]
    pub b: BLayout,
    /// mma_pipeline's tile configuration (`default` or a tuning name)
    #[arg(long, value_name = "NAME", value_parser = pipeline(), default_value = "default")]
    pub pipeline: Pipeline,
    #[command(flatten)]
    pub seed: Seed,
}

/// `rustile hgemm bench`.
#[derive(Clone, Debug, Args)]
pub struct BenchArgs {
    /// Problems N or MxNxK, comma-separated
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = size,
          default_value = "512,1024,2048,4096,8192")]
    pub sizes: Vec<(usize, usize, usize)>,
    /// Kernels; auto = the one the selection picks for the device and problem
    #[arg(long, value_name = "LIST", value_delimiter = ',',
          value_parser = PossibleValuesParser::new(["auto", "mma", "mma_pipeline", "wgmma_ws"])
          .map(|s| (s != "auto").then(|| Variant::parse(&s).expect("a possible value"))),
          default_value = "auto")]
    pub variants: Vec<Option<Variant>>,
    /// Input types
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = in_type(),
          default_value = "f16,bf16")]
    pub types: Vec<DType>,
    /// B layouts: bn = K×N row-major, bt = N×K (Bᵀ)
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = layout(),
          default_value = "bn")]
    pub b: Vec<BLayout>,
    /// Output type
    #[arg(long, value_enum, default_value_t = OutChoice::Same)]
    pub out: OutChoice,
    /// Timed repetitions per case (≥ 1)
    #[arg(long, value_name = "N", value_parser = crate::cli::reps, default_value_t = 30)]
    pub reps: usize,
    /// Untimed repetitions first
    #[arg(long, value_name = "N", value_parser = crate::cli::warmup, default_value_t = 5)]
    pub warmup: usize,
    /// mma_pipeline's tile configuration for every kernel that runs it (`default` or a
    /// tuning name)
    #[arg(long, value_name = "NAME", value_parser = pipeline(), conflicts_with = "pipelines")]
    pub pipeline: Option<Pipeline>,
    /// mma_pipeline's configurations to run with --variants mma_pipeline (names or `all`;
    /// the tuning ones are built for f16 in and out only)
    #[arg(long, value_name = "LIST|all", value_parser = pipelines)]
    pub pipelines: Option<Pipelines>,
    /// wgmma_ws's tile-row band of its block order (≥ 1) [default: the kernel's GROUP_M]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub group: Option<u32>,
    /// wgmma_ws's tile rows: 128 (the consumers split the rows) or 64 (they split the columns;
    /// widths 128 and 256) [default: 128]
    #[arg(long, value_name = "N", value_parser = clap::builder::PossibleValuesParser::new(["64", "128"])
          .map(|s| s.parse::<u32>().expect("a possible value")))]
    pub rows: Option<u32>,
    /// wgmma_ws's tile width (columns of C per tile) [default: 256, or 128 with --cut or
    /// --rows 64]
    #[arg(long, value_name = "N", value_parser = clap::builder::PossibleValuesParser::new(["64", "128", "256"])
          .map(|s| s.parse::<u32>().expect("a possible value")))]
    pub width: Option<u32>,
    /// wgmma_ws: cut each tile's k-tiles into N segments, one block each (widths 64 and 128,
    /// tiles · N ≤ SMs) [default: 1 = whole tiles]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=8))]
    pub cut: Option<u32>,
    /// wgmma_ws: the tile the model picks per shape (`hgemm::ws_tile`); the default since
    /// session 13 (kept for scripts); --rows/--width/--cut force a tile instead
    #[arg(long, conflicts_with_all = ["rows", "width", "cut"])]
    pub tile_model: bool,
    /// Operands mma_pipeline and wgmma_ws cannot read in place (rows not 16-byte aligned):
    /// auto = copy A and B into aligned scratch, and C when its pitch is odd; inputs = A and
    /// B only (C stored in place); never = no copies (auto then selects mma for them)
    #[arg(long, value_parser = PossibleValuesParser::new(["auto", "inputs", "never"])
          .map(|s| hgemm::Padding::parse(&s).expect("a possible value")),
          default_value = "auto")]
    pub pad: hgemm::Padding,
    /// sequential: each of rustile and cuBLAS settled alone for 1 s, then timed (each at the
    /// clock its own power draw allows); interleaved: rep by rep at one shared clock
    #[arg(long, value_parser = PossibleValuesParser::new(["sequential", "interleaved"])
          .map(|s| Pairing::parse(&s).expect("a possible value")),
          default_value = "sequential")]
    pub timing: Pairing,
    /// Results directory (hgemm.json, .csv, .md)
    #[arg(long, value_name = "DIR", value_parser = super::writable_dir,
          default_value = "target/rustile-bench")]
    pub results: std::path::PathBuf,
    #[command(flatten)]
    pub noise: super::bench::NoiseArgs,
}

impl BenchArgs {
    /// The configurations to run: `--pipelines`, else `--pipeline`, else the default one.
    pub fn pipeline_list(&self) -> Vec<Option<&'static Tuning>> {
        match (&self.pipelines, self.pipeline) {
            (Some(Pipelines(list)), _) => list.clone(),
            (None, Some(Pipeline(t))) => vec![t],
            (None, None) => vec![None],
        }
    }
}

/// `hgemm bench --out`: C's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OutChoice {
    /// The input type
    Same,
    /// 32-bit float
    F32,
}

impl OutChoice {
    /// C's type for inputs of type `input`.
    pub fn dtype(self, input: DType) -> DType {
        match self {
            Self::Same => input,
            Self::F32 => DType::F32,
        }
    }
}

/// An `mma_pipeline` configuration: `None` is the default one.
#[derive(Clone, Copy)]
pub struct Pipeline(pub Option<&'static Tuning>);

impl std::fmt::Debug for Pipeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0.map_or("default", |t| t.name))
    }
}

/// Several `mma_pipeline` configurations.
#[derive(Clone)]
pub struct Pipelines(pub Vec<Option<&'static Tuning>>);

impl std::fmt::Debug for Pipelines {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|&t| Pipeline(t)))
            .finish()
    }
}

/// `default` or a tuning name.
fn pipeline() -> impl TypedValueParser<Value = Pipeline> {
    let names = v02_mma_pipeline::TUNING.iter().map(|t| t.name);
    PossibleValuesParser::new(std::iter::once("default").chain(names))
        .map(|s| Pipeline(hgemm::tuning_named(&s).expect("a possible value")))
}

/// `default` and tuning names, comma-separated, or `all`.
fn pipelines(s: &str) -> Result<Pipelines, String> {
    if s == "all" {
        let all = v02_mma_pipeline::TUNING.iter().map(Some);
        return Ok(Pipelines(std::iter::once(None).chain(all).collect()));
    }
    s.split(',')
        .map(hgemm::tuning_named)
        .collect::<crate::Result<_>>()
        .map_err(|e| e.to_string())
        .map(Pipelines)
}

/// A tensor-core input type: f16 or bf16.
fn in_type() -> impl TypedValueParser<Value = DType> {
    PossibleValuesParser::new(["f16", "bf16"]).map(|s| match s.as_str() {
        "bf16" => DType::Bf16,
        _ => DType::F16,
    })
}

fn layout() -> impl TypedValueParser<Value = BLayout> {
    PossibleValuesParser::new(["bn", "bt"]).map(|s| match s.as_str() {
        "bt" => BLayout::Transposed,
        _ => BLayout::RowMajor,
    })
}

/// `N` (a cube) or `MxNxK`.
pub fn size(t: &str) -> Result<(usize, usize, usize), String> {
    let bad = || format!("bad size `{t}`: want N or MxNxK");
    let d: Vec<usize> = t
        .split(['x', 'X'])
        .map(|x| x.trim().parse::<usize>())
        .collect::<Result<_, _>>()
        .map_err(|_| bad())?;
    let (m, n, k) = match d[..] {
        [n] => (n, n, n),
        [m, n, k] => (m, n, k),
        _ => return Err(bad()),
    };
    // The shape's own checks (M, N ≥ 1, every dimension below 2³¹), before any work.
    hgemm::Problem::new(DType::F16, m, n, k)
        .check()
        .map_err(|e| format!("bad size `{t}`: {e}"))?;
    Ok((m, n, k))
}

#[cfg(test)]
mod tests {
    use super::super::{Cli, Command};
    use super::*;

    fn parse(line: &str) -> Result<Cli, clap::Error> {
        Cli::try_parse_checked(std::iter::once("rustile").chain(line.split_whitespace()))
    }

    fn hgemm(line: &str) -> HgemmCommand {
        match parse(line).unwrap().command {
            Some(Command::Hgemm(h)) => h,
            other => panic!("{line}: {other:?}"),
        }
    }

    #[test]
    fn bench_options_parse_to_typed_values() {
        let HgemmCommand::Bench(b) = hgemm(
            "hgemm bench --types f16,bf16 --b bn,bt --sizes 8192,4096x4096x512 \
             --variants mma_pipeline,auto --reps 100 --timing interleaved --out f32 --group 8",
        ) else {
            panic!()
        };
        assert_eq!(b.types, vec![DType::F16, DType::Bf16]);
        assert_eq!(b.b, vec![BLayout::RowMajor, BLayout::Transposed]);
        assert_eq!(b.sizes, vec![(8192, 8192, 8192), (4096, 4096, 512)]);
        assert_eq!(b.variants, vec![Some(Variant::MmaPipeline), None]);
        assert_eq!((b.reps, b.warmup), (100, 5));
        assert_eq!(b.timing, Pairing::Interleaved);
        assert_eq!(b.out, OutChoice::F32);
        assert_eq!(b.group, Some(8));
        assert_eq!(b.pipeline_list().len(), 1);
        assert_eq!(
            (b.rows, b.width, b.cut, b.tile_model),
            (None, None, None, false)
        );
        let HgemmCommand::Bench(b) = hgemm("hgemm bench --rows 64 --width 256 --cut 2") else {
            panic!()
        };
        assert_eq!((b.rows, b.width, b.cut), (Some(64), Some(256), Some(2)));
        let HgemmCommand::Bench(b) = hgemm("hgemm bench --tile-model") else {
            panic!()
        };
        assert!(b.tile_model);
        let HgemmCommand::Bench(b) = hgemm("hgemm bench --pipelines all") else {
            panic!()
        };
        assert_eq!(b.pipeline_list().len(), 1 + v02_mma_pipeline::TUNING.len());
        assert!(b.pipeline_list()[0].is_none());
        let HgemmCommand::Bench(b) = hgemm("hgemm bench") else {
            panic!()
        };
        assert_eq!(b.timing, Pairing::Sequential);
        assert_eq!(b.variants, vec![None]);
        assert_eq!(b.types.len(), 2);
        if let Some(t) = v02_mma_pipeline::TUNING.first() {
            let HgemmCommand::Bench(b) = hgemm(&format!("hgemm bench --pipeline {}", t.name))
            else {
                panic!()
            };
            assert_eq!(b.pipeline_list()[0].map(|t| t.name), Some(t.name));
        }
    }

    #[test]
    fn analyze_validate_and_peak() {
        let HgemmCommand::Analyze(a) = hgemm("hgemm analyze 128x256x64 --type bf16 --b bt") else {
            panic!()
        };
        assert_eq!(a.shape, (128, 256, 64));
        assert_eq!(
            (a.ty, a.b, a.variant),
            (DType::Bf16, BLayout::Transposed, Variant::MmaPipeline)
        );
        assert!(a.pipeline.0.is_none());
        let HgemmCommand::Validate(v) = hgemm("hgemm validate --quick --seed 1") else {
            panic!()
        };
        assert!(v.quick);
        let HgemmCommand::Peak(p) = hgemm("hgemm peak --types bf16") else {
            panic!()
        };
        assert_eq!(p.types, vec![DType::Bf16]);
    }

    #[test]
    fn bad_values_are_usage_errors() {
        for bad in [
            "hgemm",
            "hgemm tune",
            "hgemm bench --types f8",
            "hgemm bench --b bx",
            "hgemm bench --sizes 1x2",
            "hgemm bench --variants fast",
            "hgemm bench --reps 0",
            "hgemm bench --group 0",
            "hgemm bench --width 96",
            "hgemm bench --rows 32",
            "hgemm bench --cut 0",
            "hgemm bench --cut 9",
            "hgemm bench --tile-model --cut 2",
            "hgemm bench --timing paired",
            "hgemm bench --out f16",
            "hgemm bench --pipelines nope",
            "hgemm bench --pipeline default --pipelines all",
            "hgemm analyze --variant wgmma_ws",
            "hgemm analyze 12x",
            "hgemm validate --slow",
            "hgemm validate --quick --shape 64",
            "hgemm validate --variant mma",
            "hgemm validate --shape 64 --variant fast",
            "hgemm peak --types f32",
        ] {
            let e = parse(bad).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad}: {e}");
        }
    }
}
