//! The main job, `info`, `validate`, `analyze` and `ptx-report`.

use std::time::Instant;

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::{Args, ValueEnum};

use super::{progress, status, Seed};
use crate::bench::{self, Sweep};
use crate::families;
use crate::gemm::GemmProblem;
use crate::harness::{L2Mode, TimingConfig};
use crate::ptx::Flavour;
use crate::sim::Simulator;
use crate::suite::{self, isolate, Scale};
use crate::{ptxas, Backend, DType, Error, Family, Gpu, KernelInfo, Problem, Result};
use rustile_kernels::registry::KERNELS;

/// `rustile [run]`, and `rustile run FAMILY[/VARIANT] --in … --out …` ([`super::npyrun`]).
#[derive(Clone, Debug, Default, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub seed: Seed,
    #[command(flatten)]
    pub npy: super::npyrun::NpyArgs,
}

/// `rustile info`.
#[derive(Clone, Copy, Debug, Args)]
pub struct InfoArgs {
    #[command(flatten)]
    pub seed: Seed,
}

/// A family of [`families::all`], named on the command line.
#[derive(Clone, Copy)]
pub struct FamilyArg(pub &'static dyn families::Family);

impl std::fmt::Debug for FamilyArg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0.name())
    }
}

/// Any family in [`families::all`], its possible values read from that list at run time (a new
/// family is on the command line without touching it).
pub fn family_arg() -> impl TypedValueParser<Value = FamilyArg> {
    let names = families::all()
        .into_iter()
        .map(|f| PossibleValue::new(f.name()).help(f.about()));
    PossibleValuesParser::new(names)
        .map(|name| FamilyArg(families::find(&name).expect("a possible value")))
}

/// `rustile validate [FAMILY] [--sim] [--case TEXT] [--dump DIR] [--failures DIR]`.
#[derive(Clone, Debug, Args)]
pub struct ValidateArgs {
    /// Only this family [default: every family]
    #[arg(value_name = "FAMILY", value_parser = family_arg())]
    pub family: Option<FamilyArg>,
    /// In the simulator even when there is a GPU
    #[arg(long)]
    pub sim: bool,
    /// Only the cases whose label (`family/variant dtype shape`, as printed) contains TEXT;
    /// with the run's printed --seed, replays a case bit for bit
    #[arg(long, value_name = "TEXT")]
    pub case: Option<String>,
    /// Dump every case's inputs, output and reference as .npy under DIR, passed or not
    #[arg(long, value_name = "DIR", value_parser = super::writable_dir)]
    pub dump: Option<std::path::PathBuf>,
    /// Where failing cases are dumped [default: $TMPDIR/rustile-failures]
    #[arg(long, value_name = "DIR")]
    pub failures: Option<std::path::PathBuf>,
    /// Only the quick shapes (those of the main job and the GPU tests), not the large ones
    #[arg(long)]
    pub quick: bool,
    /// Run the cases in child processes: a case that faults the device (or kills or hangs its
    /// process) is reported as FAULT and a fresh process goes on with the next case
    #[arg(long)]
    pub isolate: bool,
    /// With --isolate: a case that gives no result in SECS is killed and reported as FAULT
    #[arg(long, value_name = "SECS", requires = "isolate", value_parser = super::positive)]
    pub case_timeout: Option<usize>,
    /// (internal) the child of an isolated sweep: run the cases from index FROM and report
    /// them as JSON lines on stdout
    #[arg(long, value_name = "FROM", hide = true, conflicts_with = "isolate")]
    pub isolate_child: Option<usize>,
    #[command(flatten)]
    pub seed: Seed,
}

/// Element type of the memory families.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Scalar {
    /// 32-bit float
    F32,
    /// 16-bit float
    F16,
}

impl Scalar {
    /// The registry's dtype.
    pub fn dtype(self) -> DType {
        match self {
            Self::F32 => DType::F32,
            Self::F16 => DType::F16,
        }
    }
}

/// `rustile analyze FAMILY/VARIANT [SHAPE] [--dtype f32|f16]`.
#[derive(Clone, Debug, Args)]
pub struct AnalyzeArgs {
    /// The kernel: copy/…, strided/…, transpose/… or gemm/… (hgemm: `rustile hgemm analyze`)
    #[arg(value_name = "FAMILY/VARIANT", value_parser = kernel_id)]
    pub kernel: &'static KernelInfo,
    /// copy N, strided N:S, transpose RxC, gemm MxNxK or N [default: 4096, 4096:4, 256x256,
    /// 128x128x64]
    pub shape: Option<String>,
    /// Element type (the memory families; gemm is f32)
    #[arg(long, value_enum, default_value_t = Scalar::F32)]
    pub dtype: Scalar,
    #[command(flatten)]
    pub seed: Seed,
}

/// What `analyze` runs.
#[derive(Clone, Copy, Debug)]
pub enum AnalyzeProblem {
    /// A memory family's problem.
    Memory(Problem),
    /// An SGEMM problem.
    Gemm(GemmProblem),
}

impl AnalyzeArgs {
    /// The shape, parsed for the kernel's family (its default when none is given).
    pub fn problem(&self) -> Result<AnalyzeProblem, String> {
        let family = self.kernel.family;
        let shape = self.shape.as_deref().unwrap_or(match family {
            Family::Gemm => "128x128x64",
            Family::Strided => "4096:4",
            Family::Transpose => "256x256",
            _ => "4096",
        });
        match family {
            Family::Gemm => crate::gemm::parse_shape(shape).map(AnalyzeProblem::Gemm),
            _ => bench::parse_shape(family, shape).map(AnalyzeProblem::Memory),
        }
        .map_err(|e| e.to_string())
    }
}

/// `family/variant` of a kernel `analyze` runs (the memory families and gemm).
pub fn kernel_id(id: &str) -> Result<&'static KernelInfo, String> {
    let (family_name, variant) = id
        .split_once('/')
        .ok_or_else(|| format!("`{id}`: name a kernel as family/variant"))?;
    let family = [
        Family::Copy,
        Family::Strided,
        Family::Transpose,
        Family::Gemm,
    ]
    .into_iter()
    .find(|f| f.name() == family_name)
    .ok_or_else(|| match family_name {
        "hgemm" => "hgemm kernels: `rustile hgemm analyze`".to_string(),
        _ => format!("unknown family `{family_name}` (copy, strided, transpose, gemm)"),
    })?;
    rustile_kernels::registry::find(family, variant).ok_or_else(|| {
        let names: Vec<_> = KERNELS
            .iter()
            .filter(|k| k.family == family)
            .map(|k| k.name)
            .collect();
        format!(
            "unknown variant `{variant}`; {} has {}",
            family.name(),
            names.join(", ")
        )
    })
}

/// The main job: validated run of every family on the GPU, or the CPU-side suite.
pub fn main_job(args: &RunArgs) -> Result<()> {
    if args.npy.kernel.is_some() {
        return super::npyrun::run(&args.npy);
    }
    println!(
        "rustile {} — kernels written in Rust, PTX {} (sources {})",
        env!("CARGO_PKG_VERSION"),
        crate::ptx::ORIGIN,
        &crate::ptx::SOURCE_HASH[..12]
    );
    let seed = args.seed.get();
    let (backend, no_gpu) = Backend::gpu_or_simulator()?;
    match (&backend, no_gpu) {
        (Backend::Gpu(gpu), _) => gpu_job(&backend, gpu, seed),
        (_, why) => {
            if let Some(e) = why {
                println!("\n{e}");
            }
            println!(
                "Needs a GPU: timings (`rustile bench`, `cargo bench`) and the GPU tests \
                 (`cargo test -- --ignored`). Running the CPU-side suite and every kernel in the \
                 simulator instead.\n"
            );
            cpu_job(seed)?;
            validate_on(&backend, None, Scale::Quick, seed)
        }
    }
}

fn cpu_job(seed: u64) -> Result<()> {
    let checks = suite::cpu_checks(seed);
    let failed: Vec<_> = checks.iter().filter(|c| c.error.is_some()).collect();
    println!(
        "CPU references and PTX checks (seed {seed}): {} of {} passed",
        checks.len() - failed.len(),
        checks.len()
    );
    for c in &failed {
        println!("  FAILED {}: {}", c.what, c.error.as_deref().unwrap_or(""));
    }
    ptx_report(false)?;
    if failed.is_empty() {
        Ok(())
    } else {
        Err(Error::Usage(format!(
            "{} CPU-side checks failed",
            failed.len()
        )))
    }
}

fn gpu_job(backend: &Backend, gpu: &Gpu, seed: u64) -> Result<()> {
    print_info(gpu);
    validate_on(backend, None, Scale::Quick, seed)?;
    // Headline cases: best copy vs cuMemcpyDtoD at 1 GiB, transpose at 8192² and 8191×8193.
    let timing = TimingConfig {
        warmup: 3,
        reps: 20,
        mode: L2Mode::Rotate,
    };
    let mut rows = Vec::new();
    for (family, sizes) in [
        (Family::Copy, "268435456"),
        (Family::Transpose, "8192x8192,8191x8193"),
    ] {
        let sweep = Sweep {
            family,
            problems: bench::parse_sizes(family, sizes)?,
            dtypes: vec![DType::F32],
            modes: vec![L2Mode::Rotate],
        };
        rows.extend(bench::run(gpu, &sweep, &timing, seed, status)?);
    }
    status("");
    println!("\n{}", bench::markdown(&rows));
    Ok(())
}

/// `rustile validate`: on the GPU (the simulator where there is none, or with `--sim`).
pub fn validate(args: &ValidateArgs) -> Result<()> {
    let scale = if args.quick {
        Scale::Quick
    } else {
        Scale::Full
    };
    let selection = suite::Selection {
        case: args.case.clone(),
        dump: args.dump.clone(),
        failures: args.failures.clone(),
    };
    if args.isolate {
        // The parent never opens the GPU: its children do.
        return super::isolated::validate(args);
    }
    let backend = if args.sim {
        Backend::Simulator(Simulator::default())
    } else {
        Backend::gpu_or_simulator()?.0
    };
    if let Some(from) = args.isolate_child {
        let families = args
            .family
            .map_or_else(families::all, |FamilyArg(f)| vec![f]);
        // The parent gave the run's seed; a child without one would plan other inputs.
        let seed = args
            .seed
            .seed
            .ok_or_else(|| Error::Usage("--isolate-child needs the run's --seed".to_string()))?;
        let mut out = std::io::stdout().lock();
        return isolate::child(&backend, &families, scale, seed, &selection, from, &mut out);
    }
    validate_on_with(&backend, args.family, scale, args.seed.get(), &selection)
}

/// The simulator (`sim`), else the GPU if there is one, else the simulator, saying on stderr
/// why ("no GPU: `doing` in the simulator").
pub fn backend_for(sim: bool, doing: &str) -> Result<Backend> {
    if sim {
        return Ok(Backend::Simulator(Simulator::default()));
    }
    let (backend, no_gpu) = Backend::gpu_or_simulator()?;
    if let Some(e) = no_gpu {
        eprintln!("{e}: {doing} in the simulator");
    }
    Ok(backend)
}

/// `rustile <family> validate`: `family`'s cases in the simulator (`sim`), else on the GPU if
/// there is one (saying so when there is none), at [`Scale::Full`] with `full`.
pub fn validate_family(
    family: &'static dyn families::Family,
    sim: bool,
    full: bool,
    seed: u64,
) -> Result<()> {
    let backend = backend_for(sim, "validating")?;
    let scale = if full { Scale::Full } else { Scale::Quick };
    validate_on(&backend, Some(FamilyArg(family)), scale, seed)
}

/// Validates `family` (`None`: every family in [`families::all`]) at `scale` on `backend`,
/// prints the failures, and fails if any case did.
pub fn validate_on(
    backend: &Backend,
    family: Option<FamilyArg>,
    scale: Scale,
    seed: u64,
) -> Result<()> {
    validate_on_with(backend, family, scale, seed, &suite::Selection::default())
}

/// [`validate_on`] of the cases `selection` picks, dumping as it says; each failure prints the
/// command that replays it and where its `.npy` dump is.
pub fn validate_on_with(
    backend: &Backend,
    family: Option<FamilyArg>,
    scale: Scale,
    seed: u64,
    selection: &suite::Selection,
) -> Result<()> {
    let start = Instant::now();
    let families = family.map_or_else(families::all, |FamilyArg(f)| vec![f]);
    let outcomes = suite::validate_with(backend, &families, scale, seed, selection, progress);
    super::isolated::print_outcomes(
        &outcomes,
        &backend.name(),
        matches!(backend, Backend::Simulator(_)),
        seed,
        start,
        selection.case.as_deref(),
        selection.dump.as_deref(),
    )
}

/// `rustile analyze`: one simulated, validated run with the memory-access analysis.
pub fn analyze(args: &AnalyzeArgs) -> Result<()> {
    let kernel = args.kernel;
    let dtype = args.dtype.dtype();
    let seed = args.seed.get();
    let (analysis, shape_text) = match args.problem().map_err(Error::Usage)? {
        AnalyzeProblem::Gemm(p) => (crate::gemm::analyze(kernel, &p, seed)?, p.shape()),
        AnalyzeProblem::Memory(p) => (crate::memory::analyze(kernel, dtype, &p, seed)?, p.shape()),
    };
    println!(
        "{}/{} {} {} in the simulator (validated against the CPU reference):\n",
        kernel.family.name(),
        kernel.name,
        dtype.name(),
        shape_text
    );
    println!("{}", analysis.markdown());
    println!(
        "global efficiency = distinct bytes / (32 · sectors touched); shared: wavefronts per \
         instruction and conflict degree (1 = no bank conflict)"
    );
    Ok(())
}

/// The device line and its limits.
pub fn print_info(gpu: &Gpu) {
    let i = gpu.info();
    println!(
        "device {}: {} (compute capability {}.{}, PTX flavour {})",
        i.ordinal,
        i.name,
        i.compute_capability.0,
        i.compute_capability.1,
        gpu.flavour().name()
    );
    println!(
        "  {} SMs, L2 {} MiB, memory {:.1} GiB, shared/block {} KiB (opt-in {} KiB), shared/SM {} KiB",
        i.sm_count,
        i.l2_bytes >> 20,
        i.total_mem_bytes as f64 / (1u64 << 30) as f64,
        i.shared_per_block >> 10,
        i.shared_per_block_optin >> 10,
        i.shared_per_sm >> 10
    );
    println!(
        "  SM clock {} MHz, memory clock {} MHz × {}-bit bus: theoretical DRAM {:.0} GB/s",
        i.sm_clock_khz / 1000,
        i.mem_clock_khz / 1000,
        i.mem_bus_bits,
        i.theoretical_dram_bytes_per_s() / 1e9
    );
}

/// `rustile info`: the device and the measured ceiling (cuMemcpyDtoD at 1 GiB).
pub fn info(args: &InfoArgs) -> Result<()> {
    let gpu = Gpu::new(0)?;
    print_info(&gpu);
    let sweep = Sweep {
        family: Family::Copy,
        problems: bench::parse_sizes(Family::Copy, "268435456")?,
        dtypes: vec![DType::F32],
        modes: vec![L2Mode::Rotate],
    };
    let rows = bench::run(
        &gpu,
        &sweep,
        &TimingConfig::default(),
        args.seed.get(),
        |_| {},
    )?;
    if let Some(base) = rows.iter().find(|r| r.variant == bench::BASELINE) {
        println!(
            "  measured ceiling: cuMemcpyDtoD 1 GiB, {:.0} GB/s (bytes read + written)",
            base.gbps
        );
    }
    Ok(())
}

/// Assembles every flavour with ptxas. `required`: a missing ptxas is an error (the
/// `ptx-report` command) rather than a note (the CPU-side main job).
pub fn ptx_report(required: bool) -> Result<()> {
    let Some(ptxas) = ptxas::find() else {
        let msg = "ptxas not found (set RUSTILE_PTXAS, or `pip install \"nvidia-cuda-nvcc==13.0.*\"`): no PTX resource report";
        return if required {
            Err(Error::Usage(msg.into()))
        } else {
            println!("{msg}");
            Ok(())
        };
    };
    println!(
        "\nPTX resource report ({}, {}):\n",
        ptxas.display(),
        ptxas::version(&ptxas).unwrap_or_default()
    );
    let mut rows = Vec::new();
    for flavour in Flavour::ALL {
        for arch in ptxas::archs(flavour) {
            rows.extend(ptxas::assemble(&ptxas, flavour.text(), arch)?);
        }
    }
    println!("{}", ptxas::markdown(&rows));
    println!("{}", occupancy_markdown(&rows));
    let spilling: Vec<_> = rows
        .iter()
        .filter(|r| r.spill_stores + r.spill_loads + r.stack_bytes > 0)
        .collect();
    if spilling.is_empty() {
        println!(
            "{} kernel × arch builds, none spills or uses a stack frame",
            rows.len()
        );
        Ok(())
    } else {
        Err(Error::Usage(format!(
            "{} kernel builds spill or use a stack frame",
            spilling.len()
        )))
    }
}

/// Theoretical occupancy of every kernel build in `rows` (ptxas registers and static shared
/// memory, the registry's block size and dynamic shared bytes for the symbol's dtype), on the
/// architecture it was built for; the sm_80 build also on sm_86 and sm_89, which run it (48
/// warps per SM there, not 64). Limits: [`crate::report::occupancy::ARCHS`].
fn occupancy_markdown(rows: &[ptxas::KernelResources]) -> String {
    use crate::report::occupancy::{limits, occupancy};
    let mut out = String::from(
        "Theoretical occupancy (resident warps / the SM's maximum; limiter in brackets):\n\n\
         | kernel | threads | shared B | arch | regs | occupancy |\n|---|---:|---:|---|---:|---|\n",
    );
    for r in rows {
        let Some((k, e)) = crate::KERNELS.iter().find_map(|k| {
            k.symbols
                .iter()
                .find(|e| e.symbol == r.kernel)
                .map(|e| (k, e))
        }) else {
            continue;
        };
        let threads = k.block.0 * k.block.1 * k.block.2;
        let shared = k.shared_bytes(e.dtype) as u32 + r.shared_bytes;
        let archs: &[&str] = if r.arch == "sm_80" {
            &["sm_80", "sm_86", "sm_89"]
        } else {
            &[r.arch.as_str()]
        };
        for &arch in archs {
            let cell = match limits(arch).and_then(|l| occupancy(&l, threads, r.registers, shared))
            {
                Some(o) => format!(
                    "{:.0} % ({} warps, {})",
                    100.0 * o.fraction,
                    o.warps,
                    o.limiter.name()
                ),
                None => "does not fit".into(),
            };
            out += &format!(
                "| {} | {threads} | {shared} | {arch} | {} | {cell} |\n",
                r.kernel, r.registers
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::{Cli, Command};

    #[test]
    fn ptx_report_occupancy_uses_each_architectures_warp_limit() {
        // A copy kernel built for sm_80 at 16 registers: nothing but warps limits it, so it
        // fills all 64 warps of an sm_80 SM and all 48 of an sm_86 / sm_89 one.
        let k = crate::copy::variants()
            .find(|k| k.name == "scalar")
            .unwrap();
        let row = crate::ptxas::KernelResources {
            kernel: k.symbols[0].symbol.to_string(),
            arch: "sm_80".into(),
            registers: 16,
            shared_bytes: 0,
            stack_bytes: 0,
            spill_stores: 0,
            spill_loads: 0,
        };
        let md = super::occupancy_markdown(&[row]);
        let line = |arch: &str| {
            md.lines()
                .find(|l| l.contains(&format!("| {arch} |")))
                .unwrap_or_else(|| panic!("no {arch} row in\n{md}"))
                .to_string()
        };
        assert!(line("sm_80").contains("100 % (64 warps"), "{md}");
        assert!(line("sm_86").contains("100 % (48 warps"), "{md}");
        assert!(line("sm_89").contains("100 % (48 warps"), "{md}");
    }

    fn parse(line: &str) -> Result<Cli, clap::Error> {
        Cli::try_parse_checked(std::iter::once("rustile").chain(line.split_whitespace()))
    }

    #[test]
    fn validate_takes_a_family_and_sim() {
        let Some(Command::Validate(v)) =
            parse("validate transpose --sim --seed 3").unwrap().command
        else {
            panic!()
        };
        assert_eq!(v.family.map(|f| f.0.name()), Some("transpose"));
        assert!(v.sim);
        assert_eq!(v.seed.seed, Some(3));
        // Every family in `families::all`, hgemm included, and nothing else.
        for f in crate::families::all() {
            let Some(Command::Validate(v)) =
                parse(&format!("validate {}", f.name())).unwrap().command
            else {
                panic!()
            };
            assert_eq!(v.family.map(|f| f.0.name()), Some(f.name()));
        }
        for bad in [
            "validate selftest",
            "validate nope",
            "validate --bogus",
            "validate --seed x",
        ] {
            assert_eq!(parse(bad).unwrap_err().exit_code(), 2, "{bad}");
        }
    }

    #[test]
    fn analyze_checks_kernel_shape_and_dtype() {
        let Some(Command::Analyze(a)) = parse("analyze transpose/smem 128x64 --dtype f16")
            .unwrap()
            .command
        else {
            panic!()
        };
        assert_eq!(a.kernel.name, "smem");
        assert!(matches!(
            a.problem(),
            Ok(super::AnalyzeProblem::Memory(crate::Problem::Transpose(t))) if (t.rows, t.cols) == (128, 64)
        ));
        assert!(parse("analyze gemm/naive").is_ok());
        for bad in [
            "analyze",
            "analyze copy",
            "analyze copy/nope",
            "analyze hgemm/mma",
            "analyze transpose/smem 12",
            "analyze strided/gather 4096:x",
            "analyze gemm/naive 1x2",
            "analyze copy/naive --dtype f8",
        ] {
            assert_eq!(parse(bad).unwrap_err().exit_code(), 2, "{bad}");
        }
    }
}
