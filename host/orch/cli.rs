//! The orchestration commands of the `rustile` CLI:
//!
//! ```text
//! rustile transfer       [--max-mib N] [--out DIR]
//! rustile overlap        [--batch-mib N] [--chunk-mib N] [--streams 1,2,3,4] [--reps N]
//!                        [--compute-reps K] [--kernel copy|transpose|gather[:S]|gemm[:K[:N]]]
//!                        [--order free,h2d,compute,all] [--no-pageable] [--out DIR]
//! rustile launch         [--kernels N] [--reps N]
//! rustile memory         [--sizes-mib 1,64,256] [--iterations N] [--reps N]
//! rustile orchestration  [--quick] [--gather S] [--gather-batch-mib N] [--gather-chunk-mib N]
//!                        [--gemm-k K] [--out DIR]  all four; tables, trace JSON and SVGs
//! ```

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::pipeline::{ChunkWork, StageOrder};
use super::{launch, overlap, pool, transfer};
use crate::error::{Error, Result};
use crate::gpu::Gpu;

/// Usage text.
pub const USAGE: &str = "  transfer      [--max-mib N] [--out DIR]            H2D/D2H GB/s vs size: pageable, pinned, write-combined
  overlap       [--batch-mib N] [--chunk-mib N] [--streams 1,2,3,4] [--reps N] [--compute-reps K]
                [--kernel copy|transpose|gather[:S]|gemm[:K[:N]]] [--order free,h2d,compute,all] [--no-pageable] [--out DIR]
                                                     chunked H2D → kernel → D2H over N streams vs ideal
                                                     (gemm: rows of A streamed, B resident, one SGEMM per
                                                     chunk; without N the chunk rows and N are calibrated)
  launch        [--kernels N] [--reps N]             µs per kernel: plain vs CUDA graph; cost of a sync
  memory        [--sizes-mib LIST] [--iterations N] [--reps N]   stream-ordered pool vs cuMemAlloc; stats
  orchestration [--quick] [--gather S] [--gather-batch-mib N] [--gather-chunk-mib N] [--gemm-k K] [--out DIR]
                                                     all of the above (overlap with copy, transpose, a
                                                     stride-S gather and the SGEMM with resident B);
                                                     writes results.md/json, SVGs, trace";

const SWITCHES: [&str; 2] = ["--quick", "--no-pageable"];

struct Opts {
    values: HashMap<String, String>,
}

impl Opts {
    fn parse(args: &[String], allowed: &[&str]) -> Result<Self> {
        let mut values = HashMap::new();
        let mut it = args.iter();
        while let Some(flag) = it.next() {
            if !allowed.contains(&flag.as_str()) {
                return Err(Error::Usage(format!(
                    "unknown option `{flag}` (this command takes {})",
                    allowed.join(", ")
                )));
            }
            let value = if SWITCHES.contains(&flag.as_str()) {
                String::new()
            } else {
                it.next()
                    .cloned()
                    .ok_or_else(|| Error::Usage(format!("{flag} needs a value")))?
            };
            values.insert(flag.clone(), value);
        }
        Ok(Self { values })
    }

    fn has(&self, flag: &str) -> bool {
        self.values.contains_key(flag)
    }

    fn num(&self, flag: &str, default: usize) -> Result<usize> {
        match self.values.get(flag) {
            None => Ok(default),
            Some(v) => {
                v.parse::<usize>().ok().filter(|&n| n > 0).ok_or_else(|| {
                    Error::Usage(format!("{flag} needs a positive number, got `{v}`"))
                })
            }
        }
    }

    fn list(&self, flag: &str, default: &[usize]) -> Result<Vec<usize>> {
        match self.values.get(flag) {
            None => Ok(default.to_vec()),
            Some(v) => v
                .split(',')
                .map(|s| {
                    s.trim()
                        .parse::<usize>()
                        .ok()
                        .filter(|&n| n > 0)
                        .ok_or_else(|| {
                            Error::Usage(format!("{flag}: `{s}` is not a positive number"))
                        })
                })
                .collect(),
        }
    }

    fn out(&self) -> PathBuf {
        self.values
            .get("--out")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("target/rustile-orchestration"))
    }
}

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
                kernel: crate::families::strided::BEST,
                stride,
            })
        }
        Some(_) => Err(bad()),
        None => match name {
            "copy" => Ok(ChunkWork::Copy(crate::families::copy::BEST)),
            "transpose" => crate::families::transpose::variants()
                .find(|k| k.name == "naive")
                .map(|kernel| ChunkWork::Transpose { kernel, cols: 2048 })
                .ok_or_else(|| Error::Usage("transpose/naive is missing from the registry".into())),
            "gather" => Ok(ChunkWork::Gather {
                kernel: crate::families::strided::BEST,
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
                    work: ChunkWork::Copy(crate::families::copy::BEST),
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
                    work: ChunkWork::Copy(crate::families::copy::BEST),
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

fn overlap_config(o: &Opts, base: overlap::OverlapConfig) -> Result<overlap::OverlapConfig> {
    Ok(overlap::OverlapConfig {
        batch_elems: o.num("--batch-mib", base.batch_elems * 4 / MIB)? * MIB / 4,
        chunk_elems: o.num("--chunk-mib", base.chunk_elems * 4 / MIB)? * MIB / 4,
        streams: o.list("--streams", &base.streams)?,
        reps: o.num("--reps", base.reps)?,
        compute_reps: match o.values.get("--compute-reps") {
            None => None,
            Some(_) => Some(o.num("--compute-reps", 1)?),
        },
        pageable: !o.has("--no-pageable"),
        work: match o
            .values
            .get("--kernel")
            .map(|n| kernel_spec(n))
            .transpose()?
        {
            Some(KernelSpec::Work(w)) => w,
            // Resolved after the calibration, by `spec_config`.
            Some(KernelSpec::GemmCalibrated { .. }) | None => base.work,
        },
        orders: match o.values.get("--order") {
            None => base.orders,
            Some(list) => list.split(',').map(order).collect::<Result<_>>()?,
        },
    })
}

/// A stage ordering by name: `free`, `h2d`, `compute` (H2D and compute) or `all`.
fn order(name: &str) -> Result<StageOrder> {
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

/// Runs `command` (`transfer`, `overlap`, `launch`, `memory`, `orchestration`) with `args`.
/// Returns `None` if `command` is not one of them.
pub fn run(command: &str, args: &[String]) -> Option<Result<()>> {
    let r = match command {
        "transfer" => transfer_cmd(args),
        "overlap" => overlap_cmd(args),
        "launch" => launch_cmd(args),
        "memory" => memory_cmd(args),
        "orchestration" => orchestration_cmd(args),
        _ => return None,
    };
    Some(r)
}

fn transfer_cmd(args: &[String]) -> Result<()> {
    let o = Opts::parse(args, &["--max-mib", "--out"])?;
    let gpu = Gpu::new(0)?;
    println!("{}\n", header(&gpu));
    let max = o.num("--max-mib", 1024)? * MIB;
    let r = transfer::study(&gpu, max, progress)?;
    println!("{}", r.markdown());
    println!(
        "pinned H2D peak / best H2D of any method: {:.3}",
        r.pinned_h2d_ratio()
    );
    write(
        &o.out(),
        "transfer.svg",
        &r.svg(&format!("Host↔device bandwidth, {}", gpu.info().name)),
    )
}

fn overlap_cmd(args: &[String]) -> Result<()> {
    let o = Opts::parse(
        args,
        &[
            "--batch-mib",
            "--chunk-mib",
            "--streams",
            "--reps",
            "--compute-reps",
            "--kernel",
            "--order",
            "--no-pageable",
            "--out",
        ],
    )?;
    let cfg = overlap_config(&o, Plan::new(false).overlap)?;
    let gpu = Gpu::new(0)?;
    println!("{}\n", header(&gpu));
    let cfg = match o
        .values
        .get("--kernel")
        .map(|n| kernel_spec(n))
        .transpose()?
    {
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
    let out = o.out();
    write(&out, "timeline.json", &r.timeline.chrome_trace_json())?;
    write(&out, "timeline.svg", &r.timeline.svg_gantt())?;
    if let Some(t) = &r.pageable_timeline {
        write(&out, "timeline-pageable.svg", &t.svg_gantt())?;
    }
    Ok(())
}

fn launch_cmd(args: &[String]) -> Result<()> {
    let o = Opts::parse(args, &["--kernels", "--reps"])?;
    let gpu = Gpu::new(0)?;
    println!("{}\n", header(&gpu));
    let r = launch::study(&gpu, o.num("--kernels", 2000)?, o.num("--reps", 10)?)?;
    println!("{}", r.markdown());
    Ok(())
}

fn memory_cmd(args: &[String]) -> Result<()> {
    let o = Opts::parse(args, &["--sizes-mib", "--iterations", "--reps"])?;
    let gpu = Gpu::new(0)?;
    println!("{}\n", header(&gpu));
    let sizes: Vec<usize> = o
        .list("--sizes-mib", &[1, 64, 256])?
        .iter()
        .map(|m| m * MIB)
        .collect();
    let r = pool::study(
        &gpu,
        &sizes,
        o.num("--iterations", 100)?,
        o.num("--reps", 5)?,
    )?;
    println!("{}", r.markdown());
    Ok(())
}

/// Everything, with one results file set.
fn orchestration_cmd(args: &[String]) -> Result<()> {
    let o = Opts::parse(
        args,
        &[
            "--quick",
            "--gather",
            "--gather-batch-mib",
            "--gather-chunk-mib",
            "--gemm-k",
            "--out",
        ],
    )?;
    let plan = Plan::new(o.has("--quick"));
    let base = &plan.overlap;
    let gather_cfg = overlap::OverlapConfig {
        work: ChunkWork::Gather {
            kernel: crate::families::strided::BEST,
            stride: o.num("--gather", GATHER_STRIDE)?,
        },
        pageable: false,
        batch_elems: o.num("--gather-batch-mib", base.batch_elems * 4 / MIB)? * MIB / 4,
        chunk_elems: o.num("--gather-chunk-mib", base.chunk_elems * 4 / MIB)? * MIB / 4,
        ..base.clone()
    };
    let out = o.out();
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
    let gemm_k = o.num("--gemm-k", GEMM_K)?;
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
    write(&out, "results.md", &md)?;
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
        &out,
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
        &out,
        "transfer.svg",
        &t.svg(&format!("Host↔device bandwidth, {}", gpu.info().name)),
    )?;
    write(&out, "timeline.json", &ov.timeline.chrome_trace_json())?;
    write(&out, "timeline.svg", &ov.timeline.svg_gantt())?;
    if let Some(p) = ov_copy
        .pageable_timeline
        .as_ref()
        .or(ov.pageable_timeline.as_ref())
    {
        write(&out, "timeline-pageable.svg", &p.svg_gantt())?;
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

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn options_parse_and_reject() {
        let o = Opts::parse(
            &args("--streams 1,3 --chunk-mib 8 --no-pageable"),
            &["--streams", "--chunk-mib", "--no-pageable"],
        )
        .unwrap();
        assert_eq!(o.list("--streams", &[]).unwrap(), vec![1, 3]);
        assert_eq!(o.num("--chunk-mib", 1).unwrap(), 8);
        assert!(o.has("--no-pageable"));
        assert!(matches!(
            Opts::parse(&args("--bogus 1"), &["--reps"]),
            Err(Error::Usage(_))
        ));
        assert!(matches!(
            Opts::parse(&args("--reps"), &["--reps"]),
            Err(Error::Usage(_))
        ));
        let o = Opts::parse(&args("--reps 0 --streams 1,x"), &["--reps", "--streams"]).unwrap();
        assert!(o.num("--reps", 1).is_err());
        assert!(o.list("--streams", &[]).is_err());
    }

    #[test]
    fn overlap_options_map_to_elements() {
        let o = Opts::parse(
            &args("--batch-mib 64 --chunk-mib 4 --compute-reps 3"),
            &["--batch-mib", "--chunk-mib", "--compute-reps"],
        )
        .unwrap();
        let c = overlap_config(&o, Plan::new(true).overlap).unwrap();
        assert_eq!(
            (c.batch_elems, c.chunk_elems, c.compute_reps),
            (16 * MIB, MIB, Some(3))
        );
        assert!(c.pageable);
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
        let o = Opts::parse(&args("--kernel gemm"), &["--kernel"]).unwrap();
        let c = overlap_config(&o, Plan::new(false).overlap).unwrap();
        assert!(
            matches!(c.work, ChunkWork::Copy(_)),
            "resolved after the calibration"
        );
    }

    #[test]
    fn unknown_commands_fall_through() {
        assert!(run("bench", &[]).is_none());
    }
}
