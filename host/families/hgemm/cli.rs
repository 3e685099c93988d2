//! `rustile hgemm validate | peak | analyze | bench`: the tensor-core GEMM's validation cases,
//! ceilings, simulator analysis and benchmark. The arguments are parsed and checked by
//! [`crate::cli::hgemm`].

use crate::cli::hgemm::{AnalyzeArgs, BenchArgs, HgemmCommand, PeakArgs};
use crate::error::Result;
use crate::families::hgemm::peak::{self as hgemm_peak, Pipe};
use crate::families::hgemm::{self, gpu_runs, BLayout, Options, Problem, Variant};
use crate::gpu::Gpu;
use crate::harness::{L2Mode, TimingConfig};
use crate::ptx::Flavour;
use crate::results::{Progress, ResultFile, RunMeta, TimingMeta};
use crate::DType;

/// Validates every variant the device runs on every case, then the selected variant.
pub fn validate(gpu: &Gpu, quick: bool, seed: u64) -> Result<usize> {
    validate_runs(gpu, gpu_runs(gpu, quick), seed)
}

/// Validates `only` (default: the selected variant and every variant the device runs) on
/// one problem of `(m, n, k)`: f16 and bf16 in, B row-major and transposed, the input type
/// and f32 out.
pub fn validate_shape(
    gpu: &Gpu,
    (m, n, k): (usize, usize, usize),
    only: Option<Variant>,
    seed: u64,
) -> Result<usize> {
    let mut runs = Vec::new();
    for ty in [DType::F16, DType::Bf16] {
        for b in [BLayout::RowMajor, BLayout::Transposed] {
            for out in [ty, DType::F32] {
                let mut p = Problem::new(ty, m, n, k).with_b(b);
                p.out = out;
                let i = runs.len();
                match only {
                    Some(v) => runs.push((i, p, false, Some(v), None)),
                    None => {
                        runs.push((i, p, false, None, None));
                        for v in hgemm::variants_for(gpu) {
                            runs.push((i, p, false, Some(v), None));
                        }
                    }
                }
            }
        }
    }
    validate_runs(gpu, runs, seed)
}

/// Validates `runs` ([`gpu_runs`]' form), printing each; the count that ran (refusals of
/// aligned-only kernels on unaligned problems are checked, not counted).
fn validate_runs(
    gpu: &Gpu,
    runs: Vec<hgemm::GpuRun>,
    seed: u64,
) -> Result<usize> {
    let mut n = 0;
    for (i, p, bias, v, tile) in runs {
        let Some(r) = hgemm::validate_run(gpu, v, tile, &p, bias, seed + i as u64)? else {
            continue;
        };
        n += 1;
        let name = tile.map_or_else(|| r.variant.name().to_owned(), |t| t.label());
        let kernel = match r.padded.is_empty() {
            true => name,
            false => format!("{name}+pad({})", r.padded.tag()),
        };
        println!(
            "ok  {:<13} {:<4} {:<4} b={:<2} out={:<4} α={} β={} bias={} relu={} ld {}/{}/{}  {} elements vs float64",
            kernel,
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
            let n = match a.shape {
                Some(shape) => validate_shape(&gpu, shape, a.variant, a.seed.get())?,
                None => validate(&gpu, a.quick, a.seed.get())?,
            };
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

/// `wgmma_ws`'s tile from `--width` / `--cut` (for an explicit or selected `wgmma_ws`; `None`:
/// the model's). A cut without a width runs on the 128-wide tile.
fn tile_opt(
    v: Option<Variant>,
    rows: Option<u32>,
    width: Option<u32>,
    cut: Option<u32>,
) -> Option<hgemm::WsTile> {
    if matches!(v, Some(Variant::Mma | Variant::MmaPipeline))
        || (rows.is_none() && width.is_none() && cut.is_none())
    {
        return None;
    }
    let cut = cut.unwrap_or(1);
    let rows = rows.unwrap_or(128);
    let width = width.unwrap_or(if cut > 1 || rows == 64 { 128 } else { 256 });
    Some(hgemm::WsTile { rows, width, cut })
}

fn bench(gpu: &Gpu, a: &BenchArgs) -> Result<()> {
    let BenchArgs {
        sizes,
        variants,
        types,
        b: layouts,
        out,
        group,
        rows: tile_rows,
        width,
        cut,
        tile_model,
        timing: pairing,
        pad: padding,
        ..
    } = a;
    let (out, pairing) = (*out, *pairing);
    let timing = TimingConfig {
        warmup: a.warmup,
        reps: a.reps,
        mode: L2Mode::Rotate,
    };
    let pipelines = a.pipeline_list();
    let mut t = TimingMeta::events(timing.warmup, timing.reps, "rotate");
    (t.pairing, t.max_noise_pct) = (Some(pairing.name().into()), a.noise.max_noise);
    // hgemm::bench_with draws its inputs from fixed seeds (11 + set, 97 + set): no --seed.
    let meta = RunMeta::new("hgemm bench", Some(gpu), None, t);
    let blas = crate::vendor::cublas(gpu.stream())?;
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
    println!(
        "timing: {} with cuBLAS (same pitches); padding: {}",
        pairing.name(),
        padding.name()
    );
    println!();
    let mut table = String::from(
        "| type | B | M×N×K | kernel | TFLOP/s | cuBLAS TFLOP/s | × cuBLAS | % peak | median ms | cuBLAS ms | noise % | cuBLAS noise % |\n\
         | --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n",
    );
    print!("{table}");
    let mut rows = Vec::new();
    let configs = |v: Option<Variant>| match v {
        Some(Variant::MmaPipeline) => pipelines.len(),
        _ => 1,
    };
    let total = types.len()
        * layouts.len()
        * sizes.len()
        * variants.iter().map(|&v| configs(v)).sum::<usize>();
    let mut progress = Progress::new(total);
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
                    p.out = out.dtype(ty);
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
                        group: *group,
                        tile: if *tile_model
                            && gpu.flavour() == Flavour::Sm90a
                            && matches!(v, None | Some(Variant::WgmmaWs))
                        {
                            Some(hgemm::ws_tile(&p, gpu.info().sm_count))
                        } else {
                            tile_opt(v, *tile_rows, *width, *cut)
                        },
                        padding: *padding,
                        // The environment's (`RUSTILE_HGEMM_SK_TAIL`), as the other experiments.
                        stream_k_tail: None,
                    };
                    progress.step(&format!(
                        "hgemm {} {} {} {}",
                        ty.name(),
                        b.tag(),
                        p.shape(),
                        v.map_or("auto", |v| v.name())
                    ));
                    let row = hgemm::bench_with(gpu, &blas, &opts, &p, &timing, pairing)?;
                    progress.finish();
                    let mut kernel = match (row.tuning, row.tile) {
                        (Some(t), _) => format!("{}/{t}", row.variant.name()),
                        (None, Some(t)) => t.label(),
                        (None, None) => row.variant.name().to_owned(),
                    };
                    if row.stream_k_tail {
                        kernel += " sk-tail";
                    }
                    if !row.padded.is_empty() {
                        kernel += &format!("+pad({})", row.padded.tag());
                    }
                    let ceiling = peak
                        .iter()
                        .find(|(t, _)| *t == ty)
                        .map_or(f64::NAN, |(_, p)| *p);
                    let flag = |st: &crate::harness::Stats| {
                        if st.warnings(crate::results::NOISY_PCT).is_empty() {
                            ""
                        } else {
                            " ⚠"
                        }
                    };
                    let line = format!(
                        "| {} | {} | {} | {} | {:.1} | {:.1} | {:.3} | {:.1} | {:.4} | {:.4} | {:.1}{} | {:.1}{} |",
                        ty.name(),
                        b.tag(),
                        p.shape(),
                        kernel,
                        row.tflops,
                        row.cublas_tflops,
                        row.ratio,
                        100.0 * row.tflops / ceiling,
                        row.ours.median_ms,
                        row.cublas.median_ms,
                        row.ours.noise_pct,
                        flag(&row.ours),
                        row.cublas.noise_pct,
                        flag(&row.cublas),
                    );
                    println!("{line}");
                    table += &line;
                    table.push('\n');
                    rows.push(row);
                }
            }
        }
    }
    progress.finish();
    ResultFile::save(meta, &rows, &a.results, "hgemm", &table)
}
