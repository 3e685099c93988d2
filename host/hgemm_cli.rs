//! `rustile hgemm validate | peak | analyze | bench`: the tensor-core GEMM's validation cases,
//! ceilings, simulator analysis and benchmark. The arguments are parsed and checked by
//! [`crate::cli::hgemm`].

use cudarc::cublas::CudaBlas;

use crate::cli::hgemm::{AnalyzeArgs, BenchArgs, HgemmCommand, PeakArgs};
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::harness::{L2Mode, TimingConfig};
use crate::hgemm::{self, BLayout, InType, OutType, Problem, Variant};
use crate::hgemm_peak::{self, Pipe};
use crate::ptx::Flavour;

/// Validation cases: shapes that are not tile multiples, K = 0 and 1, pitches, β, bias, ReLU.
pub fn validation_cases(quick: bool) -> Vec<(Problem, bool)> {
    let mut v = Vec::new();
    let shapes: &[(usize, usize, usize)] = &[
        (1, 1, 1),
        (17, 33, 65),
        (127, 129, 95),
        (200, 300, 64),
        (256, 256, 256),
        (64, 520, 1),
        (300, 200, 0),
        (129, 257, 136),
        // M, N, K off every tile but pitches that TMA can describe: the wgmma path's tails.
        (129, 136, 200),
        (333, 264, 72),
        (1, 8, 8),
        (300, 520, 1000),
    ];
    for ty in [InType::F16, InType::Bf16] {
        for &b in &[BLayout::RowMajor, BLayout::Transposed] {
            for &(m, n, k) in shapes {
                for out in [OutType::Same, OutType::F32] {
                    let mut p = Problem::new(ty, m, n, k).with_b(b);
                    p.out = out;
                    v.push((p, false));
                }
            }
            // Epilogue: α, β, bias, ReLU, padded pitches (multiples of 8: the TMA path too).
            let mut p = Problem::new(ty, 133, 270, 72).with_b(b);
            p.alpha = 0.5;
            p.beta = -1.25;
            p.relu = true;
            p.lda = p.lda.next_multiple_of(8) + 8;
            p.ldb = p.ldb.next_multiple_of(8) + 16;
            p.ldc += 3;
            v.push((p, true));
            let mut p = Problem::new(ty, 96, 136, 40).with_b(b);
            p.out = OutType::F32;
            p.beta = 1.0;
            v.push((p, true));
        }
    }
    if !quick {
        for ty in [InType::F16, InType::Bf16] {
            for (m, n, k, b) in [
                (4093, 4093, 4093, BLayout::RowMajor),
                (4096, 4096, 512, BLayout::RowMajor),
                (4096, 4096, 512, BLayout::Transposed),
                (8192, 1024, 8192, BLayout::RowMajor),
                (1000, 1000, 1000, BLayout::Transposed),
                (2050, 1030, 4104, BLayout::RowMajor),
                (8192, 8192, 8192, BLayout::Transposed),
                (16384, 16384, 1024, BLayout::RowMajor),
            ] {
                v.push((Problem::new(ty, m, n, k).with_b(b), false));
            }
        }
    }
    v
}

fn variants_for(gpu: &Gpu) -> Vec<Variant> {
    Variant::ALL
        .into_iter()
        .filter(|v| !v.needs_sm90a() || gpu.flavour() == Flavour::Sm90a)
        .collect()
}

/// Validates every variant the device runs on every case, then the selected variant.
pub fn validate(gpu: &Gpu, quick: bool, seed: u64) -> Result<usize> {
    let mut n = 0;
    let cases = validation_cases(quick);
    for (i, (p, bias)) in cases.iter().enumerate() {
        let big = p.flops() > 1e10;
        let mut variants: Vec<Option<Variant>> = vec![None];
        if !big {
            variants.extend(variants_for(gpu).into_iter().map(Some));
        } else if p.tma_ok([0, 0]) && gpu.flavour() == Flavour::Sm90a {
            variants.push(Some(Variant::MmaPipeline));
        } else if !p.tma_ok([0, 0]) {
            // The unaligned fallback on a large odd shape: slow, but it must be right.
            variants = vec![Some(Variant::Mma)];
        }
        for v in variants {
            if let Some(Variant::WgmmaWs | Variant::MmaPipeline) = v {
                if !p.tma_ok([0, 0]) {
                    // Unaligned pitches: the aligned-only kernels refuse with a typed error.
                    match hgemm::validate(gpu, v, p, *bias, seed + i as u64) {
                        Err(Error::Unsupported { .. }) => continue,
                        other => {
                            return Err(Error::Usage(format!(
                                "hgemm/{} on unaligned {} should be refused, got {other:?}",
                                v.map(Variant::name).unwrap_or_default(),
                                p.shape()
                            )))
                        }
                    }
                }
            }
            let r = hgemm::validate(gpu, v, p, *bias, seed + i as u64)?;
            n += 1;
            println!(
                "ok  {:<13} {:<4} {:<4} b={:<2} out={:<4} α={} β={} bias={} relu={} ld {}/{}/{}  {} elements vs float64",
                r.variant.name(),
                p.ty.name(),
                p.shape(),
                match p.b {
                    BLayout::RowMajor => "bn",
                    BLayout::Transposed => "bt",
                },
                match p.out {
                    OutType::Same => p.ty.name(),
                    OutType::F32 => "f32",
                },
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
fn analyze(a: &AnalyzeArgs) -> Result<()> {
    let (m, n, k) = a.shape;
    let (variant, ty, b, tuning) = (a.variant, a.ty, a.b, a.pipeline.0);
    let p = Problem::new(ty, m, n, k).with_b(b);
    let analysis = hgemm::analyze_sim(variant, tuning, &p, a.seed.get())?;
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

/// Runs `rustile hgemm …`.
pub fn main(cmd: &HgemmCommand) -> Result<()> {
    match cmd {
        HgemmCommand::Analyze(a) => analyze(a),
        HgemmCommand::Validate(a) => {
            let gpu = Gpu::new(0)?;
            let n = validate(&gpu, a.quick, a.seed.get())?;
            println!("hgemm: {n} cases pass against float64");
            Ok(())
        }
        HgemmCommand::Bench(a) => bench(&Gpu::new(0)?, a),
        HgemmCommand::Peak(a) => peak(&Gpu::new(0)?, a),
    }
}

fn peak(gpu: &Gpu, a: &PeakArgs) -> Result<()> {
    let timing = TimingConfig {
        warmup: 3,
        reps: 20,
        mode: L2Mode::Rotate,
    };
    println!("| pipe | type | TFLOP/s (median) | min ms | median ms |");
    println!("| --- | --- | ---: | ---: | ---: |");
    for &ty in &a.types {
        for pipe in pipes(gpu) {
            let c = hgemm_peak::measure(gpu, pipe, ty, &timing)?;
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

fn bench(gpu: &Gpu, a: &BenchArgs) -> Result<()> {
    let BenchArgs {
        sizes,
        variants,
        types,
        b: layouts,
        out,
        group,
        timing: pairing,
        ..
    } = a;
    let (out, pairing) = (*out, *pairing);
    let timing = TimingConfig {
        warmup: a.warmup,
        reps: a.reps,
        mode: L2Mode::Rotate,
    };
    let pipelines = a.pipeline_list();
    let blas =
        CudaBlas::new(gpu.stream().clone()).map_err(|e| Error::Usage(format!("cuBLAS: {e:?}")))?;
    // The measured ceilings, this process: "% peak" is of the fastest pipe the device has.
    let mut peak = Vec::new();
    for &ty in types {
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
    for &ty in types {
        for &b in layouts {
            for &(m, n, k) in sizes {
                for (v, tuning) in variants.iter().flat_map(|&v| {
                    // Only an explicit mma_pipeline runs in every listed configuration.
                    let configs = match v {
                        Some(Variant::MmaPipeline) => pipelines.clone(),
                        _ => vec![pipelines[0]],
                    };
                    configs.into_iter().map(move |t| (v, t))
                }) {
                    let mut p = Problem::new(ty, m, n, k).with_b(b);
                    p.out = out;
                    if v == Some(Variant::MmaPipeline)
                        && hgemm::pipeline_geometry(&p, tuning).is_err()
                    {
                        eprintln!(
                            "skipped: mma_pipeline/{} has no {} → {:?} build",
                            tuning.map_or("default", |t| t.name),
                            ty.name(),
                            out
                        );
                        continue;
                    }
                    let row =
                        hgemm::bench_tuned(gpu, &blas, v, tuning, *group, &p, &timing, pairing)?;
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
