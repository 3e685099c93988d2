//! `rustile hgemm validate | bench`: the tensor-core GEMM's validation cases and benchmark.

use crate::error::{Error, Result};
use crate::families::hgemm::peak::{self as hgemm_peak, Pipe};
use crate::families::hgemm::{self, gpu_runs, BLayout, Options, Problem, Variant};
use crate::gpu::Gpu;
use crate::harness::{L2Mode, TimingConfig};
use crate::ptx::Flavour;
use rustile_kernels::hgemm::v02_mma_pipeline::{self, Tuning};
use rustile_kernels::registry::DType;

/// Usage of the subcommand.
pub const USAGE: &str = "rustile hgemm validate [--quick]
rustile hgemm peak [--types f16,bf16]   measured mma.sync and wgmma ceilings (no memory traffic)
rustile hgemm analyze [MxNxK] [--variant mma|mma_pipeline] [--type f16|bf16] [--b bn|bt]
                      [--pipeline NAME]   (simulator, no GPU: sectors and bank conflicts)
rustile hgemm bench [--sizes LIST] [--variants LIST|auto] [--types f16,bf16] [--b bn,bt]
                    [--out same|f32] [--reps N] [--warmup N] [--pipelines LIST|all]
                    [--pipeline NAME] [--group N] [--timing sequential|interleaved]
  sizes: N or MxNxK, comma-separated (default 512,1024,2048,4096,8192)
  pipelines: mma_pipeline's tile configurations to run (default, and the tuning ones, which
             are built for f16 in and out only); --pipeline NAME runs one, for every variant
             that selects mma_pipeline too
  group: tile rows per group of wgmma_ws's persistent tile order (default 16)
  timing: sequential (default) runs each of rustile and cuBLAS alone for 1 s, then times it:
          each in its own steady state, as a loop of it would run (under the power limit the
          less power-hungry kernel clocks higher); interleaved times them rep by rep,
          alternating, at one shared clock (a per-clock comparison)";

/// Validates every variant the device runs on every case, then the selected variant.
pub fn validate(gpu: &Gpu, quick: bool, seed: u64) -> Result<usize> {
    let mut n = 0;
    for (i, p, bias, v) in gpu_runs(gpu, quick) {
        let Some(r) = hgemm::validate_run(gpu, v, &p, bias, seed + i as u64)? else {
            continue;
        };
        n += 1;
        println!(
            "ok  {:<13} {:<4} {:<4} b={:<2} out={:<4} α={} β={} bias={} relu={} ld {}/{}/{}  {} elements vs float64",
            r.variant.name(),
            p.ty.name(),
            p.shape(),
            p.b.tag(),
            p.out.name(),
            p.alpha,
            p.beta,
            bias,
            p.relu,
            p.lda,
            p.ldb,
            p.ldc,
            r.checked
        );
    }
    Ok(n)
}

/// The ceilings this device can run: `mma.sync` everywhere, `wgmma` with sm_90a.
fn pipes(gpu: &Gpu) -> Vec<Pipe> {
    let mut v = vec![Pipe::MmaSync];
    if gpu.flavour() == Flavour::Sm90a {
        v.push(Pipe::Wgmma);
    }
    v
}

/// `rustile hgemm analyze`: one simulated, validated run with the memory-access analysis.
fn analyze(args: &[String], seed: u64) -> Result<()> {
    let mut shape = (256, 256, 256);
    let mut variant = Variant::MmaPipeline;
    let mut ty = DType::F16;
    let mut b = BLayout::RowMajor;
    let mut tuning = None;
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .cloned()
                .ok_or_else(|| Error::Usage(format!("{flag} needs a value")))
        };
        match flag.as_str() {
            "--variant" => variant = Variant::parse(&value()?)?,
            "--type" => ty = parse_types(&value()?)?[0],
            "--b" => b = parse_layouts(&value()?)?[0],
            "--pipeline" => tuning = parse_pipelines(&value()?)?[0],
            s if !s.starts_with("--") => {
                shape = *parse_sizes(s)?
                    .first()
                    .ok_or_else(|| Error::Usage("no shape".into()))?
            }
            other => return Err(Error::Usage(format!("unknown flag `{other}`\n{USAGE}"))),
        }
    }
    let p = Problem::new(ty, shape.0, shape.1, shape.2).with_b(b);
    let analysis = hgemm::analyze_sim(variant, tuning, &p, seed)?;
    println!(
        "hgemm/{}{} {} {} B {} in the simulator (validated against float64):\n",
        variant.name(),
        tuning.map(|t| format!("/{}", t.name)).unwrap_or_default(),
        ty.name(),
        p.shape(),
        b.tag()
    );
    println!("{}", analysis.markdown());
    println!(
        "global efficiency = distinct bytes / (32 · sectors touched); shared: wavefronts per \
         instruction and conflict degree (1 = no bank conflict)"
    );
    Ok(())
}

fn parse_types(s: &str) -> Result<Vec<DType>> {
    s.split(',')
        .map(|t| match t {
            "f16" => Ok(DType::F16),
            "bf16" => Ok(DType::Bf16),
            _ => Err(Error::Usage(format!("unknown type `{t}`"))),
        })
        .collect()
}

fn parse_layouts(s: &str) -> Result<Vec<BLayout>> {
    s.split(',')
        .map(|t| match t {
            "bn" => Ok(BLayout::RowMajor),
            "bt" => Ok(BLayout::Transposed),
            _ => Err(Error::Usage(format!("unknown B layout `{t}` (bn, bt)"))),
        })
        .collect()
}

/// `default` and tuning names, or `all`.
fn parse_pipelines(s: &str) -> Result<Vec<Option<&'static Tuning>>> {
    if s == "all" {
        let all = v02_mma_pipeline::TUNING.iter().map(Some);
        return Ok(std::iter::once(None).chain(all).collect());
    }
    s.split(',').map(hgemm::tuning_named).collect()
}

fn parse_sizes(s: &str) -> Result<Vec<(usize, usize, usize)>> {
    s.split(',')
        .map(|t| {
            let d: Vec<usize> = t
                .split(['x', 'X'])
                .map(|x| x.trim().parse::<usize>())
                .collect::<std::result::Result<_, _>>()
                .map_err(|_| Error::Usage(format!("bad size `{t}`: want N or MxNxK")))?;
            match d[..] {
                [n] => Ok((n, n, n)),
                [m, n, k] => Ok((m, n, k)),
                _ => Err(Error::Usage(format!("bad size `{t}`: want N or MxNxK"))),
            }
        })
        .collect()
}

/// The subcommand.
pub fn main(args: &[String], seed: u64) -> Result<()> {
    if args.first().map(String::as_str) == Some("analyze") {
        return analyze(&args[1..], seed);
    }
    let gpu = Gpu::new(0)?;
    match args.first().map(String::as_str) {
        Some("validate") => {
            let quick = args.iter().any(|a| a == "--quick");
            let n = validate(&gpu, quick, seed)?;
            println!("hgemm: {n} cases pass against float64");
            Ok(())
        }
        Some("bench") => bench(&gpu, &args[1..]),
        Some("peak") => {
            let mut types = vec![DType::F16, DType::Bf16];
            let mut it = args[1..].iter();
            while let Some(flag) = it.next() {
                match (flag.as_str(), it.next()) {
                    ("--types", Some(v)) => types = parse_types(v)?,
                    _ => return Err(Error::Usage(format!("unknown flag `{flag}`\n{USAGE}"))),
                }
            }
            let timing = TimingConfig {
                warmup: 3,
                reps: 20,
                mode: L2Mode::Rotate,
            };
            println!("| pipe | type | TFLOP/s (median) | min ms | median ms |");
            println!("| --- | --- | ---: | ---: | ---: |");
            for ty in types {
                for pipe in pipes(&gpu) {
                    let c = hgemm_peak::measure(&gpu, pipe, ty, &timing)?;
                    println!(
                        "| {} | {} | {:.1} | {:.4} | {:.4} |",
                        pipe.name(),
                        c.ty,
                        c.tflops,
                        c.stats.min_ms,
                        c.stats.median_ms
                    );
                }
            }
            Ok(())
        }
        _ => Err(Error::Usage(USAGE.into())),
    }
}

fn bench(gpu: &Gpu, args: &[String]) -> Result<()> {
    let mut sizes = parse_sizes("512,1024,2048,4096,8192")?;
    let mut variants: Vec<Option<Variant>> = vec![None];
    let mut types = vec![DType::F16, DType::Bf16];
    let mut layouts = vec![BLayout::RowMajor];
    // `None`: the input type.
    let mut out: Option<DType> = None;
    let mut timing = TimingConfig {
        warmup: 5,
        reps: 30,
        mode: L2Mode::Rotate,
    };
    let mut pipelines: Vec<Option<&'static Tuning>> = vec![None];
    let mut group = None;
    let mut pairing = crate::harness::Pairing::Sequential;
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .cloned()
                .ok_or_else(|| Error::Usage(format!("{flag} needs a value")))
        };
        match flag.as_str() {
            "--sizes" => sizes = parse_sizes(&value()?)?,
            "--variants" => {
                variants = value()?
                    .split(',')
                    .map(|v| {
                        if v == "auto" {
                            Ok(None)
                        } else {
                            Variant::parse(v).map(Some)
                        }
                    })
                    .collect::<Result<_>>()?
            }
            "--types" => types = parse_types(&value()?)?,
            "--b" => layouts = parse_layouts(&value()?)?,
            "--out" => {
                out = match value()?.as_str() {
                    "same" => None,
                    "f32" => Some(DType::F32),
                    o => return Err(Error::Usage(format!("unknown output `{o}` (same, f32)"))),
                }
            }
            "--pipelines" => pipelines = parse_pipelines(&value()?)?,
            "--pipeline" => pipelines = vec![hgemm::tuning_named(&value()?)?],
            "--group" => {
                group = Some(
                    value()?
                        .parse::<u32>()
                        .ok()
                        .filter(|&g| g >= 1)
                        .ok_or_else(|| Error::Usage("--group needs a number ≥ 1".into()))?,
                )
            }
            "--timing" => pairing = crate::harness::Pairing::parse(&value()?)?,
            "--reps" => {
                timing.reps = value()?
                    .parse()
                    .map_err(|_| Error::Usage("--reps needs a number".into()))?
            }
            "--warmup" => {
                timing.warmup = value()?
                    .parse()
                    .map_err(|_| Error::Usage("--warmup needs a number".into()))?
            }
            other => return Err(Error::Usage(format!("unknown flag `{other}`\n{USAGE}"))),
        }
    }
    let blas = crate::vendor::cublas(gpu.stream())?;
    // The measured ceilings, this process: "% peak" is of the fastest pipe the device has.
    let mut peak = Vec::new();
    for &ty in &types {
        let mut line = Vec::new();
        let mut best: f64 = 0.0;
        for pipe in pipes(gpu) {
            let c = hgemm_peak::measure(gpu, pipe, ty, &timing)?;
            line.push(format!("{} {:.1}", pipe.name(), c.tflops));
            best = best.max(c.tflops);
        }
        println!(
            "measured ceiling, {}: {} TFLOP/s",
            ty.name(),
            line.join(", ")
        );
        peak.push((ty, best));
    }
    println!("timing: {} with cuBLAS", pairing.name());
    println!();
    println!(
        "| type | B | M×N×K | kernel | TFLOP/s | cuBLAS TFLOP/s | × cuBLAS | % peak | median ms | cuBLAS ms |"
    );
    println!("| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |");
    for &ty in &types {
        for &b in &layouts {
            for &(m, n, k) in &sizes {
                for (v, tuning) in variants.iter().flat_map(|&v| {
                    // Only an explicit mma_pipeline runs in every listed configuration.
                    let configs = match v {
                        Some(Variant::MmaPipeline) => pipelines.clone(),
                        _ => vec![pipelines[0]],
                    };
                    configs.into_iter().map(move |t| (v, t))
                }) {
                    let mut p = Problem::new(ty, m, n, k).with_b(b);
                    p.out = out.unwrap_or(ty);
                    if v == Some(Variant::MmaPipeline)
                        && hgemm::pipeline_geometry(&p, tuning).is_err()
                    {
                        eprintln!(
                            "skipped: mma_pipeline/{} has no {} → {} build",
                            tuning.map_or("default", |t| t.name),
                            ty.name(),
                            p.out.name()
                        );
                        continue;
                    }
                    let opts = Options {
                        variant: v,
                        tuning,
                        group,
                    };
                    let row = hgemm::bench_with(gpu, &blas, &opts, &p, &timing, pairing)?;
                    let kernel = match row.tuning {
                        Some(t) => format!("{}/{t}", row.variant.name()),
                        None => row.variant.name().to_owned(),
                    };
                    let ceiling = peak
                        .iter()
                        .find(|(t, _)| *t == ty)
                        .map_or(f64::NAN, |(_, p)| *p);
                    println!(
                        "| {} | {} | {} | {} | {:.1} | {:.1} | {:.3} | {:.1} | {:.4} | {:.4} |",
                        ty.name(),
                        match b {
                            BLayout::RowMajor => "bn",
                            BLayout::Transposed => "bt",
                        },
                        p.shape(),
                        kernel,
                        row.tflops,
                        row.cublas_tflops,
                        row.ratio,
                        100.0 * row.tflops / ceiling,
                        row.ours.median_ms,
                        row.cublas.median_ms
                    );
                }
            }
        }
    }
    Ok(())
}
