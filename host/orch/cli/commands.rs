//! The commands: `transfer`, `overlap`, `launch`, `memory` and `orchestration`.

use super::*;
use crate::cli::orch::{LaunchArgs, MemoryArgs, OrchestrationArgs, OverlapArgs, TransferArgs};

pub(super) fn transfer_cmd(o: &TransferArgs) -> Result<()> {
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

pub(super) fn overlap_cmd(o: &OverlapArgs) -> Result<()> {
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

pub(super) fn launch_cmd(o: &LaunchArgs) -> Result<()> {
    let gpu = Gpu::new(0)?;
    println!("{}\n", header(&gpu));
    let r = launch::study(&gpu, o.kernels, o.reps)?;
    println!("{}", r.markdown());
    Ok(())
}

pub(super) fn memory_cmd(o: &MemoryArgs) -> Result<()> {
    let gpu = Gpu::new(0)?;
    println!("{}\n", header(&gpu));
    let sizes: Vec<usize> = o.sizes_mib.iter().map(|m| m * MIB).collect();
    let r = pool::study(&gpu, &sizes, o.iterations, o.reps)?;
    println!("{}", r.markdown());
    Ok(())
}

/// Everything, with one results file set.
pub(super) fn orchestration_cmd(o: &OrchestrationArgs) -> Result<()> {
    let plan = Plan::new(o.quick);
    let base = &plan.overlap;
    let gather_cfg = overlap::OverlapConfig {
        work: ChunkWork::Gather {
            kernel: crate::families::strided::BEST,
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
            .filter(|r| r.memory == crate::orch::HostKind::Pinned && r.streams >= 3)
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
        t.peak(Some(crate::orch::HostKind::Pinned), transfer::Direction::H2D),
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
                r.memory == crate::orch::HostKind::Pinned && r.streams >= 3 && r.order == StageOrder::Free
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
        /// The run's metadata (notes/results.md).
        meta: crate::results::RunMeta,
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
        verification_gemm: &'a crate::orch::Verification,
        overlap_gemm_kernel: &'a str,
        launch: &'a launch::LaunchReport,
        allocation: &'a pool::AllocReport,
    }
    write(
        out,
        "results.json",
        &json(&All {
            meta: crate::results::RunMeta::new("orchestration", Some(&gpu), None, {
                let mut t = crate::results::TimingMeta::events(0, 0, "n/a");
                t.timer = "cuda-events and host wall clock, medians per study".into();
                t
            }),
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

pub(super) fn yes(b: bool) -> &'static str {
    if b {
        "**yes**"
    } else {
        "**no**"
    }
}
