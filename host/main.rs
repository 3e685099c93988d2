//! `rustile`: the command-line front end.
//!
//! ```text
//! rustile                 the main job: on a GPU, validate every kernel and time the headline
//!                         cases; without one, the CPU-side suite
//! rustile info            device, limits and ceilings
//! rustile validate [--sim] validate every kernel of every family (`rustile::families::all`)
//!                         at every validation shape (GPU, or the simulator where there is none
//!                         or with --sim)
//! rustile analyze KERNEL [SHAPE] [--dtype f32|f16]
//!                         run KERNEL (family/variant) in the simulator and report its global
//!                         sectors per request and shared-memory bank conflicts, per source line
//! rustile bench FAMILY    sweep a family (copy | strided | transpose | all) on the GPU
//!     [--sizes LIST] [--dtype f32|f16|all] [--l2 rotate|flush|both]
//!     [--reps N] [--warmup N] [--out DIR]
//! rustile hgemm validate|bench   tensor-core GEMM (f16/bf16): validation cases, or the
//!                         benchmark against cuBLAS (`rustile hgemm` for the flags)
//! rustile ptx-report      assemble every PTX flavour with ptxas; registers, smem, spills
//! rustile transfer | overlap | launch | memory | orchestration
//!                         host orchestration studies (see `rustile::orch::cli`)
//! ```

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use rustile::bench::{self, Sweep};
use rustile::harness::{L2Mode, TimingConfig};
use rustile::ptx::Flavour;
use rustile::sim::Simulator;
use rustile::suite::Scale;
use rustile::{ptxas, suite, Backend, DType, Error, Family, Gpu, Result, KERNELS};

const USAGE: &str =
    "usage: rustile [run | info | validate | ptx-report | bench FAMILY [--sizes LIST] \
[--dtype f32|f16|all] [--l2 rotate|flush|both] [--reps N] [--warmup N] [--out DIR]]
  FAMILY: copy | strided | transpose | gemm | all, or `crossover` (CPU gemm crate vs GPU)
  --sizes: copy `N,N` (elements); strided `N` (outputs, every stride 1..32); transpose `RxC,RxC`;
           gemm `N` or `MxNxK`";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        None | Some("run") => main_job(),
        Some("info") => info(),
        Some("validate") if args.get(1).map(String::as_str) == Some("--sim") => {
            validate(&Backend::Simulator(Simulator::default()), Scale::Full)
        }
        Some("validate") => {
            Backend::gpu_or_simulator().and_then(|(b, _)| validate(&b, Scale::Full))
        }
        Some("analyze") => analyze(&args[1..]),
        Some("bench") => bench_cmd(&args[1..]),
        Some("hgemm") => rustile::hgemm::cli::main(&args[1..], seed()),
        Some("ptx-report") => ptx_report(true),
        Some(cmd @ ("transfer" | "overlap" | "launch" | "memory" | "orchestration")) => {
            rustile::orch::cli::run(cmd, &args[1..]).unwrap_or_else(|| unreachable_command(cmd))
        }
        Some("-h" | "--help" | "help") => {
            println!("{USAGE}\n{}", rustile::orch::cli::USAGE);
            Ok(())
        }
        Some(other) => Err(Error::Usage(format!("unknown command `{other}`\n{USAGE}"))),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rustile: error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn unreachable_command(cmd: &str) -> Result<()> {
    Err(Error::Usage(format!(
        "`{cmd}` is not an orchestration command"
    )))
}

fn seed() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0x5eed)
}

/// Progress on one terminal line; nothing when stderr is not a terminal (logs stay clean).
fn progress(i: usize, total: usize, what: &str) {
    if std::io::stderr().is_terminal() {
        eprint!("\r\x1b[2K[{:>4}/{total}] {what}", i + 1);
        if i + 1 == total {
            eprintln!();
        }
    }
}

fn status(what: &str) {
    if std::io::stderr().is_terminal() {
        eprint!("\r\x1b[2K{what}");
    }
}

/// The main job: validated run of every family on the GPU, or the CPU-side suite.
fn main_job() -> Result<()> {
    println!(
        "rustile {} — kernels written in Rust, PTX {} (sources {})",
        env!("CARGO_PKG_VERSION"),
        rustile::ptx::ORIGIN,
        &rustile::ptx::SOURCE_HASH[..12]
    );
    let (backend, no_gpu) = Backend::gpu_or_simulator()?;
    match (&backend, no_gpu) {
        (Backend::Gpu(gpu), _) => gpu_job(&backend, gpu),
        (_, why) => {
            if let Some(e) = why {
                println!("\n{e}");
            }
            println!(
                "Needs a GPU: timings (`rustile bench`, `cargo bench`) and the GPU tests \
                 (`cargo test -- --ignored`). Running the CPU-side suite and every kernel in the \
                 simulator instead.\n"
            );
            cpu_job()?;
            validate(&backend, Scale::Quick)
        }
    }
}

fn cpu_job() -> Result<()> {
    let seed = seed();
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

fn gpu_job(backend: &Backend, gpu: &Gpu) -> Result<()> {
    print_info(gpu);
    validate(backend, Scale::Quick)?;
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
        rows.extend(bench::run(gpu, &sweep, &timing, seed(), status)?);
    }
    status("");
    println!("\n{}", bench::markdown(&rows));
    Ok(())
}

fn validate(backend: &Backend, scale: Scale) -> Result<()> {
    let seed = seed();
    let start = Instant::now();
    let outcomes = suite::validate_all(backend, scale, seed, progress);
    let failed: Vec<_> = outcomes.iter().filter(|o| o.error.is_some()).collect();
    println!(
        "validated {} kernel × dtype × shape cases on {} in {:.1} s (seed {seed}): {} passed, {} failed",
        outcomes.len(),
        backend.name(),
        start.elapsed().as_secs_f64(),
        outcomes.len() - failed.len(),
        failed.len()
    );
    for o in &failed {
        println!(
            "  FAILED {} {} {}: {}",
            o.kernel,
            o.dtype,
            o.shape,
            o.error.as_deref().unwrap_or("")
        );
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

fn analyze(args: &[String]) -> Result<()> {
    let id = args
        .first()
        .ok_or_else(|| Error::Usage(format!("analyze needs a kernel (family/variant)\n{USAGE}")))?;
    let (family_name, variant) = id
        .split_once('/')
        .ok_or_else(|| Error::Usage(format!("`{id}`: name a kernel as family/variant")))?;
    let family = rustile_kernels::registry::family(family_name)
        .ok_or_else(|| Error::Usage(format!("unknown family `{family_name}`")))?;
    let kernel = rustile_kernels::registry::find(family, variant).ok_or_else(|| {
        let names: Vec<_> = KERNELS
            .iter()
            .filter(|k| k.family == family)
            .map(|k| k.name)
            .collect();
        Error::Usage(format!(
            "unknown variant `{variant}`; {} has {}",
            family.name(),
            names.join(", ")
        ))
    })?;
    let mut shape = match family {
        Family::Gemm => "128x128x64".to_string(),
        Family::Copy => "4096".to_string(),
        Family::Strided => "4096:4".to_string(),
        Family::Transpose => "256x256".to_string(),
        _ => {
            return Err(Error::Usage(format!(
                "`analyze {}` is not supported here; use `rustile hgemm analyze`",
                family.name()
            )))
        }
    };
    let mut dtype = DType::F32;
    let mut it = args[1..].iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--dtype" => {
                dtype = match it.next().map(String::as_str) {
                    Some("f32") => DType::F32,
                    Some("f16") => DType::F16,
                    other => return Err(Error::Usage(format!("--dtype f32|f16, got {other:?}"))),
                }
            }
            s if !s.starts_with("--") => shape = s.to_string(),
            other => return Err(Error::Usage(format!("unknown option `{other}`\n{USAGE}"))),
        }
    }
    let (analysis, shape_text) = if family == Family::Gemm {
        let p = rustile::gemm::parse_shape(&shape)?;
        (rustile::gemm::analyze(kernel, &p, seed())?, p.shape())
    } else {
        let problem = bench::parse_shape(family, &shape)?;
        (
            rustile::memory::analyze(kernel, dtype, &problem, seed())?,
            problem.shape(),
        )
    };
    println!(
        "{}/{} {} {} in the simulator (validated against the CPU reference):\n",
        family.name(),
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

fn print_info(gpu: &Gpu) {
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

fn info() -> Result<()> {
    let gpu = Gpu::new(0)?;
    print_info(&gpu);
    // The measured ceiling: cuMemcpyDtoD at 1 GiB.
    let sweep = Sweep {
        family: Family::Copy,
        problems: bench::parse_sizes(Family::Copy, "268435456")?,
        dtypes: vec![DType::F32],
        modes: vec![L2Mode::Rotate],
    };
    let rows = bench::run(&gpu, &sweep, &TimingConfig::default(), seed(), |_| {})?;
    if let Some(base) = rows.iter().find(|r| r.variant == bench::BASELINE) {
        println!(
            "  measured ceiling: cuMemcpyDtoD 1 GiB, {:.0} GB/s (bytes read + written)",
            base.gbps
        );
    }
    Ok(())
}

fn bench_cmd(args: &[String]) -> Result<()> {
    let family_arg = args
        .first()
        .ok_or_else(|| Error::Usage(format!("bench needs a family\n{USAGE}")))?;
    if family_arg == "crossover" {
        return crossover_cmd(&args[1..]);
    }
    let families: Vec<Family> = match family_arg.as_str() {
        "all" => Family::MEMORY.to_vec(),
        name => vec![rustile_kernels::registry::family(name)
            .ok_or_else(|| Error::Usage(format!("unknown family `{name}`\n{USAGE}")))?],
    };
    let mut sizes = None;
    let mut variant_list: Option<String> = None;
    let mut dtypes = vec![DType::F32, DType::F16];
    let mut modes = L2Mode::ALL.to_vec();
    let mut timing = TimingConfig::default();
    let mut out = PathBuf::from("target/rustile-bench");
    let mut it = args[1..].iter();
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .cloned()
                .ok_or_else(|| Error::Usage(format!("{flag} needs a value")))
        };
        let number = |v: String| {
            v.parse::<usize>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| Error::Usage(format!("{flag} needs a positive number, got `{v}`")))
        };
        match flag.as_str() {
            "--sizes" => sizes = Some(value()?),
            "--variants" => variant_list = Some(value()?),
            "--dtype" => {
                dtypes = match value()?.as_str() {
                    "f32" => vec![DType::F32],
                    "f16" => vec![DType::F16],
                    "all" => vec![DType::F32, DType::F16],
                    v => return Err(Error::Usage(format!("unknown dtype `{v}`"))),
                }
            }
            "--l2" => {
                modes = match value()?.as_str() {
                    "rotate" => vec![L2Mode::Rotate],
                    "flush" => vec![L2Mode::Flush],
                    "both" => L2Mode::ALL.to_vec(),
                    v => return Err(Error::Usage(format!("unknown L2 mode `{v}`"))),
                }
            }
            "--reps" => timing.reps = number(value()?)?,
            "--warmup" => {
                timing.warmup = value()?
                    .parse()
                    .map_err(|_| Error::Usage("--warmup needs a number".into()))?
            }
            "--out" => out = PathBuf::from(value()?),
            other => return Err(Error::Usage(format!("unknown option `{other}`\n{USAGE}"))),
        }
    }
    if sizes.is_some() && families.len() > 1 {
        return Err(Error::Usage("--sizes needs a single family".into()));
    }
    let gpu = Gpu::new(0)?;
    print_info(&gpu);
    let mut all = Vec::new();
    for family in families {
        if family == Family::Gemm {
            gemm_bench(&gpu, sizes.as_deref(), variant_list.as_deref(), &out)?;
            continue;
        }
        let mut sweep = Sweep::default_for(family);
        if let Some(s) = &sizes {
            sweep.problems = bench::parse_sizes(family, s)?;
        }
        sweep.dtypes = dtypes.clone();
        sweep.modes = modes.clone();
        let rows = bench::run(&gpu, &sweep, &timing, seed(), status)?;
        status("");
        bench::write_results(&rows, &out, family.name())?;
        println!("\n{}", bench::markdown(&rows));
        all.extend(rows);
    }
    println!("results: {}/<family>.json and .csv", out.display());
    Ok(())
}

/// The CPU–GPU crossover study.
fn crossover_cmd(args: &[String]) -> Result<()> {
    let mut sizes = "32,64,128,256,512,1024,2048,4096".to_string();
    let mut out = PathBuf::from("target/rustile-bench");
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .cloned()
                .ok_or_else(|| Error::Usage(format!("{flag} needs a value")))
        };
        match flag.as_str() {
            "--sizes" => sizes = value()?,
            "--out" => out = PathBuf::from(value()?),
            other => return Err(Error::Usage(format!("unknown option `{other}`\n{USAGE}"))),
        }
    }
    let sizes: Vec<usize> = sizes
        .split(',')
        .map(|s| {
            s.trim()
                .parse()
                .map_err(|_| Error::Usage(format!("bad size `{s}`")))
        })
        .collect::<Result<_>>()?;
    let gpu = Gpu::new(0)?;
    print_info(&gpu);
    let rows = rustile::gemm::crossover::run(&gpu, &sizes, seed(), status)?;
    status("");
    println!("\n{}", rustile::gemm::crossover::markdown(&rows));
    std::fs::create_dir_all(&out).map_err(|source| Error::Io {
        path: out.display().to_string(),
        source,
    })?;
    let path = out.join("crossover.json");
    let json = serde_json::to_string_pretty(&rows).map_err(|e| Error::Usage(e.to_string()))?;
    std::fs::write(&path, json).map_err(|source| Error::Io {
        path: path.display().to_string(),
        source,
    })?;
    Ok(())
}

/// The SGEMM ladder: every variant, cuBLAS and the dispatcher at each size.
fn gemm_bench(
    gpu: &Gpu,
    sizes: Option<&str>,
    variants: Option<&str>,
    out: &std::path::Path,
) -> Result<()> {
    let sizes = sizes.unwrap_or("128,256,512,1000,1024,2048,4093,4096,8192,8192x8192x512");
    let problems: Vec<_> = sizes
        .split(',')
        .filter(|s| !s.trim().is_empty())
        .map(rustile::gemm::parse_shape)
        .collect::<Result<_>>()?;
    let all: Vec<_> = rustile::gemm::variants()
        .chain(rustile_kernels::registry::of(
            Family::Gemm,
            rustile_kernels::registry::Role::Experiment,
        ))
        .collect();
    let variants: Vec<_> = match variants {
        None => rustile::gemm::variants().collect(),
        Some(list) => list
            .split(',')
            .map(|name| {
                all.iter()
                    .copied()
                    .find(|k| k.name == name.trim())
                    .ok_or_else(|| {
                        let names: Vec<_> = all.iter().map(|k| k.name).collect();
                        Error::Usage(format!(
                            "unknown gemm variant `{name}`; there are {}",
                            names.join(", ")
                        ))
                    })
            })
            .collect::<Result<_>>()?,
    };
    let rows = rustile::gemm::bench(gpu, &problems, &variants, 0.3, seed(), status)?;
    status("");
    println!("\n{}", rustile::gemm::markdown(&rows));
    std::fs::create_dir_all(out).map_err(|source| Error::Io {
        path: out.display().to_string(),
        source,
    })?;
    let path = out.join("gemm.json");
    let json = serde_json::to_string_pretty(&rows).map_err(|e| Error::Usage(e.to_string()))?;
    std::fs::write(&path, json).map_err(|source| Error::Io {
        path: path.display().to_string(),
        source,
    })?;
    println!("results: {}", path.display());
    Ok(())
}

/// Assembles every flavour with ptxas. `required`: a missing ptxas is an error (the
/// `ptx-report` command) rather than a note (the CPU-side main job).
fn ptx_report(required: bool) -> Result<()> {
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
