//! The orchestration commands of the `rustile` CLI: `transfer`, `overlap`, `launch`, `memory`
//! and `orchestration` (all four; tables, trace JSON and SVGs). Their arguments are parsed and
//! checked by [`crate::cli::orch`].

use std::path::Path;

use super::pipeline::{ChunkWork, StageOrder};
use super::{launch, overlap, pool, transfer};
use crate::cli::orch::{
    LaunchArgs, MemoryArgs, OrchCommand, OrchestrationArgs, OverlapArgs, TransferArgs,
};
use crate::error::{Error, Result};
use crate::gpu::Gpu;

const MIB: usize = 1 << 20;

/// The gather's default stride: 8 f32 = one 32-byte sector per output element, and a D2H an
/// eighth of the H2D.
pub const GATHER_STRIDE: usize = 8;

/// The SGEMM workload's default depth: A's rows are 16 KiB, a 32 MiB chunk is 2048 rows.
pub const GEMM_K: usize = 4096;

/// A `--kernel` argument: a fixed compute stage, or the SGEMM whose chunk rows and N are
/// calibrated in the run.
#[derive(Clone, Copy, Debug)]
pub enum KernelSpec {
    /// Run as given.
    Work(ChunkWork),
    /// `gemm[:K]`: rows per chunk and N chosen by [`overlap::calibrate_gemm_shape`].
    GemmCalibrated {
        /// Columns of A, rows of B.
        k: usize,
    },
}

/// Parses `--kernel`: everything [`work`] takes, plus `gemm` / `gemm:K` (shape calibrated).
pub fn kernel_spec(name: &str) -> Result<KernelSpec> {
    let bad = || {
        Error::Usage(format!(
            "--kernel copy|transpose|gather[:S]|gemm[:K[:N]], got `{name}`"
        ))
    };
    let positive = |v: &str| v.parse::<usize>().ok().filter(|&s| s > 0).ok_or_else(bad);
    let parts: Vec<&str> = name.split(':').collect();
    match parts.as_slice() {
        ["gemm"] => Ok(KernelSpec::GemmCalibrated { k: GEMM_K }),
        ["gemm", k] => Ok(KernelSpec::GemmCalibrated { k: positive(k)? }),
        ["gemm", k, n] => {
            let (k, n) = (positive(k)?, positive(n)?);
            if !k.is_multiple_of(4) || !n.is_multiple_of(4) {
                return Err(Error::Usage(format!(
                    "--kernel {name}: K and N must be multiples of 4 (16-byte rows for the \
                     vectorised SGEMM variants)"
                )));
            }
            Ok(KernelSpec::Work(ChunkWork::Gemm { k, n }))
        }
        ["gemm", ..] => Err(bad()),
        _ => work(name).map(KernelSpec::Work),
    }
}

/// Rows per chunk to probe for the SGEMM: chunks of ½, ⅝, ¾, ⅞ and all of `chunk_elems`,
/// each rounded down to whole multiples of 64 rows of `k` (at least 64 rows).
pub fn gemm_row_candidates(chunk_elems: usize, k: usize) -> Vec<usize> {
    if k == 0 {
        return Vec::new();
    }
    let mut rows: Vec<usize> = [4, 5, 6, 7, 8]
        .iter()
        .map(|eighths| (chunk_elems / k * eighths / 8 / 64 * 64).max(64))
        .collect();
    rows.dedup();
    rows
}

/// The overlap configuration of an SGEMM spec: `base`'s chunk count (batch / chunk) and
/// orders; chunks of `rows × k`, B of `k × n`. For [`KernelSpec::GemmCalibrated`] the rows and
/// N come from [`overlap::calibrate_gemm_shape`] (returned too); for a fixed `gemm:K:N` the
/// chunk is `base`'s rounded down to whole rows. Other specs: `base` with their work.
pub fn spec_config(
    gpu: &Gpu,
    spec: KernelSpec,
    base: &overlap::OverlapConfig,
    progress: impl FnMut(&str),
) -> Result<(overlap::OverlapConfig, Option<overlap::GemmShape>)> {
    let chunks = (base.batch_elems / base.chunk_elems.max(1)).max(1);
    let gemm = |k: usize, rows: usize, n: usize| overlap::OverlapConfig {
        work: ChunkWork::Gemm { k, n },
        chunk_elems: rows * k,
        batch_elems: chunks * rows * k,
        compute_reps: Some(base.compute_reps.unwrap_or(1)),
        pageable: false,
        ..base.clone()
    };
    match spec {
        KernelSpec::GemmCalibrated { k } => {
            let rows = gemm_row_candidates(base.chunk_elems, k);
            let ns = overlap::gemm_n_candidates(k, 64, 256);
            let shape = overlap::calibrate_gemm_shape(gpu, k, &rows, &ns, progress)?;
            Ok((gemm(k, shape.rows, shape.n), Some(shape)))
        }
        KernelSpec::Work(ChunkWork::Gemm { k, n }) => {
            let rows = (base.chunk_elems / k).max(1);
            Ok((gemm(k, rows, n), None))
        }
        KernelSpec::Work(work) => Ok((
            overlap::OverlapConfig {
                work,
                ..base.clone()
            },
            None,
        )),
    }
}

/// The compute stage by name: `copy` (the best copy variant, short launches), `transpose`
/// (the naive transpose of the chunk as a 2048-column matrix: few, long launches),
/// `gather[:S]` (`strided/v01_gather`, every `S`-th element, default
/// [`GATHER_STRIDE`]: the output, and so the D2H, is `S` times smaller than the input) or
/// `gemm:K:N` (one SGEMM per chunk of whole `K`-element rows against a resident `K × N` B).
pub fn work(name: &str) -> Result<ChunkWork> {
    if name == "gemm" || name.starts_with("gemm:") {
        return match kernel_spec(name)? {
            KernelSpec::Work(w) => Ok(w),
            KernelSpec::GemmCalibrated { .. } => Err(Error::Usage(format!(
                "`{name}`: a fixed SGEMM stage needs gemm:K:N (N is calibrated only by the \
                 overlap commands)"
            ))),
        };
    }
    let bad = || Error::Usage(format!("--kernel copy|transpose|gather[:S], got `{name}`"));
    match name.split_once(':') {
        Some(("gather", stride)) => {
            let stride = stride
                .parse::<usize>()
                .ok()
                .filter(|&s| s > 0)
                .ok_or_else(bad)?;
            Ok(ChunkWork::Gather {
                kernel: crate::strided::BEST,
                stride,
            })
        }
        Some(_) => Err(bad()),
        None => match name {
            "copy" => Ok(ChunkWork::Copy(crate::copy::BEST)),
            "transpose" => crate::transpose::variants()
                .find(|k| k.name == "naive")
                .map(|kernel| ChunkWork::Transpose { kernel, cols: 2048 })
                .ok_or_else(|| Error::Usage("transpose/naive is missing from the registry".into())),
            "gather" => Ok(ChunkWork::Gather {
                kernel: crate::strided::BEST,
                stride: GATHER_STRIDE,
            }),
            _ => Err(bad()),
        },
    }
}

fn write(dir: &Path, name: &str, text: &str) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|source| Error::Io {
        path: dir.display().to_string(),
        source,
    })?;
    let path = dir.join(name);
    std::fs::write(&path, text).map_err(|source| Error::Io {
        path: path.display().to_string(),
        source,
    })?;
    println!("wrote {}", path.display());
    Ok(())
}

fn json<T: serde::Serialize>(v: &T) -> Result<String> {
    serde_json::to_string_pretty(v).map_err(|e| Error::Usage(format!("serialising results: {e}")))
}

fn progress(what: &str) {
    eprintln!("… {what}");
}

/// Sizes and counts for each study.
struct Plan {
    transfer_max: usize,
    overlap: overlap::OverlapConfig,
    launch_kernels: usize,
    launch_reps: usize,
    alloc_sizes: Vec<usize>,
    alloc_iterations: usize,
    alloc_reps: usize,
}

impl Plan {
    fn new(quick: bool) -> Self {
        if quick {
            Self {
                transfer_max: 64 * MIB,
                overlap: overlap::OverlapConfig {
                    batch_elems: 128 * MIB / 4,
                    chunk_elems: 8 * MIB / 4,
                    streams: vec![1, 2, 3, 4],
                    reps: 3,
                    compute_reps: None,
                    pageable: true,
                    work: ChunkWork::Copy(crate::copy::BEST),
                    orders: StageOrder::ALL.to_vec(),
                },
                launch_kernels: 500,
                launch_reps: 3,
                alloc_sizes: vec![MIB, 16 * MIB],
                alloc_iterations: 20,
                alloc_reps: 2,
            }
        } else {
            Self {
                transfer_max: 1 << 30,
                overlap: overlap::OverlapConfig {
                    batch_elems: (1 << 30) / 4,
                    chunk_elems: 32 * MIB / 4,
                    streams: vec![1, 2, 3, 4],
                    reps: 10,
                    compute_reps: None,
                    pageable: true,
                    work: ChunkWork::Copy(crate::copy::BEST),
                    orders: StageOrder::ALL.to_vec(),
                },
                launch_kernels: 2000,
                launch_reps: 10,
                alloc_sizes: vec![MIB, 64 * MIB, 256 * MIB],
                alloc_iterations: 100,
                alloc_reps: 5,
            }
        }
    }
}

fn overlap_config(o: &OverlapArgs, base: overlap::OverlapConfig) -> overlap::OverlapConfig {
    overlap::OverlapConfig {
        batch_elems: o.batch_mib.map_or(base.batch_elems, |m| m * MIB / 4),
        chunk_elems: o.chunk_mib.map_or(base.chunk_elems, |m| m * MIB / 4),
        streams: o.streams.clone().unwrap_or(base.streams),
        reps: o.reps.unwrap_or(base.reps),
        compute_reps: o.compute_reps,
        pageable: !o.no_pageable,
        work: match o.kernel {
            Some(KernelSpec::Work(w)) => w,
            // Resolved after the calibration, by `spec_config`.
            Some(KernelSpec::GemmCalibrated { .. }) | None => base.work,
        },
        orders: o.order.clone().unwrap_or(base.orders),
    }
}

/// A stage ordering by name: `free`, `h2d`, `compute` (H2D and compute) or `all`.
pub fn order(name: &str) -> Result<StageOrder> {
    match name.trim() {
        "free" => Ok(StageOrder::Free),
        "h2d" => Ok(StageOrder::H2d),
        "compute" => Ok(StageOrder::H2dCompute),
        "all" => Ok(StageOrder::All),
        other => Err(Error::Usage(format!(
            "--order: free|h2d|compute|all (comma-separated), got `{other}`"
        ))),
    }
}

fn header(gpu: &Gpu) -> String {
    let i = gpu.info();
    format!(
        "{} (compute capability {}.{}, {} SMs, {:.1} GiB); rustile commit {}",
        i.name,
        i.compute_capability.0,
        i.compute_capability.1,
        i.sm_count,
        i.total_mem_bytes as f64 / (1u64 << 30) as f64,
        option_env!("RUSTILE_COMMIT")
            .map(String::from)
            .or_else(|| std::env::var("RUSTILE_COMMIT").ok())
            .unwrap_or_else(|| "unknown".into())
    )
}

/// Runs an orchestration study.
pub fn run(cmd: &OrchCommand) -> Result<()> {
    match cmd {
        OrchCommand::Transfer(a) => transfer_cmd(a),
        OrchCommand::Overlap(a) => overlap_cmd(a),
        OrchCommand::Launch(a) => launch_cmd(a),
        OrchCommand::Memory(a) => memory_cmd(a),
        OrchCommand::Orchestration(a) => orchestration_cmd(a),
    }
}

fn transfer_cmd(o: &TransferArgs) -> Result<()> {
    let gpu = Gpu::new(0)?;
    println!("{}\n", header(&gpu));
    let r = transfer::study(&gpu, o.max_mib * MIB, progress)?;
    println!("{}", r.markdown());
    println!(
        "pinned H2D peak / best H2D of any method: {:.3}",
        r.pinned_h2d_ratio()
    );
    write(
        &o.out,
        "transfer.svg",
        &r.svg(&format!("Host↔device bandwidth, {}", gpu.info().name)),
    )
}

fn overlap_cmd(o: &OverlapArgs) -> Result<()> {
    let cfg = overlap_config(o, Plan::new(false).overlap);
    let gpu = Gpu::new(0)?;
    println!("{}\n", header(&gpu));
    let cfg = match o.kernel {
        Some(
            spec @ (KernelSpec::GemmCalibrated { .. } | KernelSpec::Work(ChunkWork::Gemm { .. })),
        ) => {
            let (cfg, shape) = spec_config(&gpu, spec, &cfg, progress)?;
            if let Some(shape) = &shape {
                println!("{}", overlap::gemm_shape_markdown(shape));
            }
            cfg
        }
        _ => cfg,
    };
    let r = overlap::study(&gpu, &cfg, progress)?;
    println!("{}", overlap::markdown(&r));
    let out = &o.out;
    write(out, "timeline.json", &r.timeline.chrome_trace_json())?;
    write(out, "timeline.svg", &r.timeline.svg_gantt())?;
    if let Some(t) = &r.pageable_timeline {
        write(out, "timeline-pageable.svg", &t.svg_gantt())?;
    }
    Ok(())
}

fn launch_cmd(o: &LaunchArgs) -> Result<()> {
    let gpu = Gpu::new(0)?;
    println!("{}\n", header(&gpu));
    let r = launch::study(&gpu, o.kernels, o.reps)?;
    println!("{}", r.markdown());
    Ok(())
}

fn memory_cmd(o: &MemoryArgs) -> Result<()> {
    let gpu = Gpu::new(0)?;
    println!("{}\n", header(&gpu));
    let sizes: Vec<usize> = o.sizes_mib.iter().map(|m| m * MIB).collect();
    let r = pool::study(&gpu, &sizes, o.iterations, o.reps)?;
    println!("{}", r.markdown());
    Ok(())
}

/// Everything, with one results file set.
fn orchestration_cmd(o: &OrchestrationArgs) -> Result<()> {
    let plan = Plan::new(o.quick);
    let base = &plan.overlap;
    let gather_cfg = overlap::OverlapConfig {
        work: ChunkWork::Gather {
            kernel: crate::strided::BEST,
            stride: o.gather,
        },
        pageable: false,
        batch_elems: o.gather_batch_mib.map_or(base.batch_elems, |m| m * MIB / 4),
        chunk_elems: o.gather_chunk_mib.map_or(base.chunk_elems, |m| m * MIB / 4),
        ..base.clone()
    };
    let out = &o.out;
    let gpu = Gpu::new(0)?;
    let head = header(&gpu);
    println!("{head}\n");

    let t = transfer::study(&gpu, plan.transfer_max, progress)?;
    println!("{}", t.markdown());
    // Three compute stages: many short copy launches (with the pageable contrast), few long
    // transpose launches (both: output = input, so D2H is as large as H2D), and a gather whose
    // output is `stride` times smaller than its input (a short D2H).
    let ov_copy = overlap::study(&gpu, &plan.overlap, progress)?;
    println!("{}", overlap::markdown(&ov_copy));
    let transpose_cfg = overlap::OverlapConfig {
        work: work("transpose")?,
        pageable: false,
        ..plan.overlap.clone()
    };
    let ov_transpose = overlap::study(&gpu, &transpose_cfg, progress)?;
    println!("{}", overlap::markdown(&ov_transpose));
    let ov_gather = overlap::study(&gpu, &gather_cfg, progress)?;
    println!("{}", overlap::markdown(&ov_gather));
    // The inference pattern: rows of A streamed, B resident, one SGEMM launch per chunk, the
    // chunk rows and N calibrated so compute ≈ H2D with an output at most a third of the input.
    let gemm_k = o.gemm_k;
    let (gemm_cfg, gemm_shape) = spec_config(
        &gpu,
        KernelSpec::GemmCalibrated { k: gemm_k },
        base,
        progress,
    )?;
    let gemm_shape = gemm_shape.expect("calibrated");
    println!("{}", overlap::gemm_shape_markdown(&gemm_shape));
    let ov_gemm = overlap::study(&gpu, &gemm_cfg, progress)?;
    println!("{}", overlap::markdown(&ov_gemm));
    let best3 = |r: &overlap::OverlapReport| {
        r.rows
            .iter()
            .filter(|r| r.memory == super::HostKind::Pinned && r.streams >= 3)
            .map(|r| r.efficiency)
            .fold(f64::NAN, f64::max)
    };
    let studies = [&ov_copy, &ov_transpose, &ov_gather, &ov_gemm];
    let ov = studies
        .iter()
        .copied()
        .max_by(|a, b| best3(a).total_cmp(&best3(b)))
        .unwrap_or(&ov_copy);
    let others = studies
        .iter()
        .filter(|r| !std::ptr::eq(**r, ov))
        .map(|r| format!("`{}`: {:.3}", r.kernel, best3(r)))
        .collect::<Vec<_>>()
        .join("; ");
    progress("launch overhead and synchronisation");
    let la = launch::study(&gpu, plan.launch_kernels, plan.launch_reps)?;
    println!("{}", la.markdown());
    progress("allocation strategies");
    let al = pool::study(
        &gpu,
        &plan.alloc_sizes,
        plan.alloc_iterations,
        plan.alloc_reps,
    )?;
    println!("{}", al.markdown());

    let ratio = t.pinned_h2d_ratio();
    let best_eff = best3(ov);
    let (plain, graph) = (&la.launch[0], &la.launch[1]);
    let acceptance = format!(
        "| bar | measured | holds |\n| --- | --- | --- |\n\
         | pinned H2D ≥ 0.9 × best H2D of any method | {:.2} / {:.2} GB/s = {:.3} | {} |\n\
         | overlap efficiency ≥ 0.9 with ≥ 3 streams, compute ≈ transfer | best {:.3} with `{}`, {} streams, {} (serial baseline {:.3}; free order {:.3}; compute {:.3} ms vs H2D {:.3} ms per chunk; output {}); best of {} | {} |\n\
         | graph replay per kernel below plain launches | {:.3} vs {:.3} µs | {} |\n\
         | timeline files produced | timeline.json, timeline.svg | yes |\n",
        t.peak(Some(super::HostKind::Pinned), transfer::Direction::H2D),
        t.peak(None, transfer::Direction::H2D),
        ratio,
        yes(ratio >= 0.9),
        best_eff,
        ov.kernel,
        ov.rows[ov.headline].streams,
        ov.rows[ov.headline].order.name(),
        ov.rows.first().map(|r| r.efficiency).unwrap_or(f64::NAN),
        ov.rows
            .iter()
            .filter(|r| {
                r.memory == super::HostKind::Pinned && r.streams >= 3 && r.order == StageOrder::Free
            })
            .map(|r| r.efficiency)
            .fold(f64::NAN, f64::max),
        ov.calibration.compute_ms,
        ov.calibration.h2d_ms,
        ov.verified.describe(),
        others,
        yes(best_eff >= 0.9),
        graph.wall_us_per_kernel,
        plain.wall_us_per_kernel,
        yes(graph.wall_us_per_kernel < plain.wall_us_per_kernel),
    );
    println!("{acceptance}");
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    let md = format!(
        "# Host orchestration on {head}\n\nCommand: `{command}`\n\n## Acceptance\n\n{acceptance}\n\
         ## Transfers (GB/s = 10⁹ B/s, CUDA events, median)\n\n{}\n\
         ## Overlap pipeline\n\n{}\n{}\n{}\n### SGEMM with resident B\n\n{}\n{}\n\
         ## Launch overhead and synchronisation\n\n{}\n\
         ## Allocation: stream-ordered pool vs per-iteration cuMemAlloc\n\n{}",
        t.markdown(),
        overlap::markdown(&ov_copy),
        overlap::markdown(&ov_transpose),
        overlap::markdown(&ov_gather),
        overlap::gemm_shape_markdown(&gemm_shape),
        overlap::markdown(&ov_gemm),
        la.markdown(),
        al.markdown()
    );
    write(out, "results.md", &md)?;
    #[derive(serde::Serialize)]
    struct All<'a> {
        device: &'a str,
        transfer: &'a transfer::TransferReport,
        overlap_copy: &'a [overlap::OverlapRow],
        calibration_copy: &'a overlap::Calibration,
        overlap_transpose: &'a [overlap::OverlapRow],
        calibration_transpose: &'a overlap::Calibration,
        overlap_gather: &'a [overlap::OverlapRow],
        calibration_gather: &'a overlap::Calibration,
        overlap_gather_kernel: &'a str,
        overlap_gemm: &'a [overlap::OverlapRow],
        calibration_gemm: &'a overlap::Calibration,
        gemm_shape: &'a overlap::GemmShape,
        verification_gemm: &'a super::Verification,
        overlap_gemm_kernel: &'a str,
        launch: &'a launch::LaunchReport,
        allocation: &'a pool::AllocReport,
    }
    write(
        out,
        "results.json",
        &json(&All {
            device: &head,
            transfer: &t,
            overlap_copy: &ov_copy.rows,
            calibration_copy: &ov_copy.calibration,
            overlap_transpose: &ov_transpose.rows,
            calibration_transpose: &ov_transpose.calibration,
            overlap_gather: &ov_gather.rows,
            calibration_gather: &ov_gather.calibration,
            overlap_gather_kernel: &ov_gather.kernel,
            overlap_gemm: &ov_gemm.rows,
            calibration_gemm: &ov_gemm.calibration,
            gemm_shape: &gemm_shape,
            verification_gemm: &ov_gemm.verified,
            overlap_gemm_kernel: &ov_gemm.kernel,
            launch: &la,
            allocation: &al,
        })?,
    )?;
    write(
        out,
        "transfer.svg",
        &t.svg(&format!("Host↔device bandwidth, {}", gpu.info().name)),
    )?;
    write(out, "timeline.json", &ov.timeline.chrome_trace_json())?;
    write(out, "timeline.svg", &ov.timeline.svg_gantt())?;
    if let Some(p) = ov_copy
        .pageable_timeline
        .as_ref()
        .or(ov.pageable_timeline.as_ref())
    {
        write(out, "timeline-pageable.svg", &p.svg_gantt())?;
    }
    Ok(())
}

fn yes(b: bool) -> &'static str {
    if b {
        "**yes**"
    } else {
        "**no**"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Result<OrchCommand, clap::Error> {
        let cli = crate::cli::Cli::try_parse_checked(
            std::iter::once("rustile").chain(line.split_whitespace()),
        )?;
        match cli.command {
            Some(crate::cli::Command::Orch(o)) => Ok(o),
            other => panic!("{line}: {other:?}"),
        }
    }

    fn overlap_args(line: &str) -> OverlapArgs {
        match parse(&format!("overlap {line}")).unwrap() {
            OrchCommand::Overlap(o) => o,
            other => panic!("{line}: {other:?}"),
        }
    }

    #[test]
    fn options_parse_and_reject() {
        let o = overlap_args("--streams 1,3 --chunk-mib 8 --no-pageable");
        assert_eq!(o.streams, Some(vec![1, 3]));
        assert_eq!(o.chunk_mib, Some(8));
        assert!(o.no_pageable);
        for bad in [
            "overlap --bogus 1",
            "overlap --reps",
            "overlap --reps 0",
            "overlap --streams 1,x",
            "overlap --order free,sideways",
            "overlap --kernel scan",
            "launch --batch-mib 4",
            "memory --sizes-mib 0",
            "transfer --max-mib -1",
            "orchestration --quick --gather 0",
        ] {
            assert_eq!(parse(bad).unwrap_err().exit_code(), 2, "{bad}");
        }
        let OrchCommand::Memory(m) = parse("memory").unwrap() else {
            panic!()
        };
        assert_eq!(
            (m.sizes_mib, m.iterations, m.reps),
            (vec![1, 64, 256], 100, 5)
        );
        let OrchCommand::Orchestration(o) = parse("orchestration --quick --gemm-k 8192").unwrap()
        else {
            panic!()
        };
        assert!(o.quick);
        assert_eq!((o.gather, o.gemm_k), (GATHER_STRIDE, 8192));
    }

    #[test]
    fn overlap_options_map_to_elements() {
        let o = overlap_args("--batch-mib 64 --chunk-mib 4 --compute-reps 3 --order free,all");
        let c = overlap_config(&o, Plan::new(true).overlap);
        assert_eq!(
            (c.batch_elems, c.chunk_elems, c.compute_reps),
            (16 * MIB, MIB, Some(3))
        );
        assert!(c.pageable);
        assert_eq!(c.orders, vec![StageOrder::Free, StageOrder::All]);
        let c = overlap_config(&overlap_args(""), Plan::new(true).overlap);
        assert_eq!(c.streams, vec![1, 2, 3, 4]);
        assert_eq!(c.compute_reps, None);
    }

    #[test]
    fn work_names() {
        assert!(matches!(work("copy"), Ok(ChunkWork::Copy(_))));
        assert!(matches!(
            work("transpose"),
            Ok(ChunkWork::Transpose { cols: 2048, .. })
        ));
        assert!(matches!(
            work("gather"),
            Ok(ChunkWork::Gather {
                stride: GATHER_STRIDE,
                ..
            })
        ));
        assert!(matches!(
            work("gather:16"),
            Ok(ChunkWork::Gather { stride: 16, .. })
        ));
        for bad in ["gather:0", "gather:x", "copy:2", "scan"] {
            assert!(matches!(work(bad), Err(Error::Usage(_))), "{bad}");
        }
    }

    #[test]
    fn gemm_specs_and_row_candidates() {
        assert!(matches!(
            kernel_spec("gemm"),
            Ok(KernelSpec::GemmCalibrated { k: GEMM_K })
        ));
        assert!(matches!(
            kernel_spec("gemm:8192"),
            Ok(KernelSpec::GemmCalibrated { k: 8192 })
        ));
        assert!(matches!(
            kernel_spec("gemm:4096:1280"),
            Ok(KernelSpec::Work(ChunkWork::Gemm { k: 4096, n: 1280 }))
        ));
        assert!(matches!(
            work("gemm:4096:1280"),
            Ok(ChunkWork::Gemm { k: 4096, n: 1280 })
        ));
        assert!(matches!(
            kernel_spec("copy"),
            Ok(KernelSpec::Work(ChunkWork::Copy(_)))
        ));
        for bad in [
            "gemm:0",
            "gemm:4096:0",
            "gemm:4096:1281",
            "gemm:x",
            "gemm:1:2:3",
            "gemmx",
        ] {
            assert!(matches!(kernel_spec(bad), Err(Error::Usage(_))), "{bad}");
        }
        // `work` needs a fixed N.
        assert!(matches!(work("gemm"), Err(Error::Usage(_))));
        // 32 MiB chunks of 16 KiB rows: 1024 … 2048 rows.
        assert_eq!(
            gemm_row_candidates(32 * MIB / 4, 4096),
            vec![1024, 1280, 1536, 1792, 2048]
        );
        // Small chunks: at least 64 rows, no duplicates.
        assert_eq!(gemm_row_candidates(64 * 4096, 4096), vec![64]);
        assert!(gemm_row_candidates(100, 0).is_empty());
        let c = overlap_config(&overlap_args("--kernel gemm"), Plan::new(false).overlap);
        assert!(
            matches!(c.work, ChunkWork::Copy(_)),
            "resolved after the calibration"
        );
    }
}
