//! Benchmark sweeps: every variant of a family over a list of problems, both dtypes, both L2
//! modes, each validated before it is timed, beside `cuMemcpyDtoD` moving the same bytes in the
//! same process. Results are rows (JSON/CSV) first; the markdown table is rendered from them.

use cudarc::driver::CudaSlice;
use rand::rngs::SmallRng;
use rand::SeedableRng;
use rustile_kernels::registry::{DType, Family, KernelInfo};

use crate::check;
use crate::dispatch_dtype;
use crate::elem::{random_vec, DeviceElem};
use crate::error::{DriverContext, Error, Result};
use crate::families::copy::CopyProblem;
use crate::families::memory::Problem;
use crate::families::strided::{StridedProblem, BENCH_STRIDES};
use crate::families::transpose::TransposeProblem;
use crate::gpu::Gpu;
use crate::harness::{self, L2Mode, Stats, TimingConfig};

/// Name of the baseline rows.
pub const BASELINE: &str = "cuMemcpyDtoD";

/// One measured case.
#[derive(Clone, Debug, serde::Serialize)]
pub struct BenchRow {
    /// Family name.
    pub family: &'static str,
    /// Variant name, or [`BASELINE`].
    pub variant: String,
    /// dtype name.
    pub dtype: &'static str,
    /// Shape.
    pub shape: String,
    /// The shape as named numbers ([`Problem::dims`]; the result file's `dims`).
    #[serde(skip)]
    pub dims: Vec<(&'static str, u64)>,
    /// L2 mode.
    pub l2: &'static str,
    /// Useful bytes moved per launch.
    pub bytes: u64,
    /// Event-time statistics.
    pub stats: Stats,
    /// Useful bytes / median time, GB/s.
    pub gbps: f64,
    /// `gbps` over the baseline's at the same bytes, same mode.
    pub vs_memcpy: f64,
    /// `gbps` over the best baseline bandwidth of the run (the measured ceiling).
    pub vs_ceiling: f64,
}

/// A sweep: problems × dtypes × L2 modes × the family's variants.
#[derive(Clone, Debug)]
pub struct Sweep {
    /// Family swept.
    pub family: Family,
    /// Problems.
    pub problems: Vec<Problem>,
    /// dtypes.
    pub dtypes: Vec<DType>,
    /// L2 modes.
    pub modes: Vec<L2Mode>,
}

impl Sweep {
    /// The cases [`run`] reports to its `progress` (each validation and each timing).
    pub fn cases(&self) -> usize {
        let modes = self.modes.len();
        let mut n = 0;
        for dtype in &self.dtypes {
            let kernels =
                rustile_kernels::registry::of(self.family, rustile_kernels::registry::Role::Ladder)
                    .filter(|k| k.symbol(*dtype).is_some())
                    .count();
            n += kernels * (1 + modes) + modes;
        }
        n * self.problems.len()
    }

    /// The default sweep of a family (the sizes the acceptance bars name).
    pub fn default_for(family: Family) -> Sweep {
        let problems = match family {
            Family::Copy => parse_sizes(
                family,
                "1048576,1048577,16777219,100000007,268435456,268435459",
            )
            .ok(),
            Family::Strided => parse_sizes(family, "33554432").ok(),
            Family::Transpose => parse_sizes(family, "4096x4096,8192x8192,8191x8193").ok(),
            _ => None,
        };
        Sweep {
            family,
            problems: problems.unwrap_or_default(),
            dtypes: vec![DType::F32, DType::F16],
            modes: L2Mode::ALL.to_vec(),
        }
    }
}

/// Parses `--sizes`: element counts for copy (`1048576,4097`), output element counts for
/// strided (each run at every stride of [`BENCH_STRIDES`]), `ROWSxCOLS` for transpose.
pub fn parse_sizes(family: Family, text: &str) -> Result<Vec<Problem>> {
    let bad = |s: &str| Error::Usage(format!("bad size `{s}` for {}", family.name()));
    let num = |s: &str| s.trim().parse::<usize>().map_err(|_| bad(s));
    if family == Family::Gemm {
        return Err(Error::Usage(
            "gemm sizes are parsed by rustile::gemm_bench".into(),
        ));
    }
    let mut out = Vec::new();
    for item in text.split(',').filter(|s| !s.trim().is_empty()) {
        match family {
            Family::Copy => out.push(Problem::Copy(CopyProblem { n: num(item)? })),
            Family::Strided => {
                let n = num(item)?;
                out.extend(BENCH_STRIDES.iter().map(|&s| {
                    Problem::Strided(StridedProblem {
                        n,
                        stride: s as usize,
                    })
                }));
            }
            Family::Transpose => {
                let (r, c) = item.split_once(['x', 'X']).ok_or_else(|| bad(item))?;
                out.push(Problem::Transpose(TransposeProblem {
                    rows: num(r)?,
                    cols: num(c)?,
                }));
            }
            _ => {
                return Err(Error::Usage(format!(
                    "{} is not a memory family",
                    family.name()
                )))
            }
        }
    }
    if out.is_empty() {
        return Err(bad(text));
    }
    for p in &out {
        p.check_shape()?;
    }
    Ok(out)
}

/// Parses one shape: copy `N`; strided `N:S` (`N` alone is stride 1); transpose `RxC`.
pub fn parse_shape(family: Family, text: &str) -> Result<Problem> {
    let bad = || Error::Usage(format!("bad shape `{text}` for {}", family.name()));
    let num = |s: &str| s.trim().parse::<usize>().map_err(|_| bad());
    Ok(match family {
        Family::Copy => Problem::Copy(CopyProblem { n: num(text)? }),
        Family::Strided => {
            let (n, s) = text.split_once(':').unwrap_or((text, "1"));
            Problem::Strided(StridedProblem {
                n: num(n)?,
                stride: num(s)?,
            })
        }
        Family::Transpose => {
            let (r, c) = text.split_once(['x', 'X']).ok_or_else(bad)?;
            Problem::Transpose(TransposeProblem {
                rows: num(r)?,
                cols: num(c)?,
            })
        }
        _ => return Err(bad()),
    })
    .and_then(|p: Problem| p.check_shape().map(|()| p))
}

/// Runs a sweep. `progress` hears about each case before it runs.
pub fn run(
    gpu: &Gpu,
    sweep: &Sweep,
    timing: &TimingConfig,
    seed: u64,
    mut progress: impl FnMut(&str),
) -> Result<Vec<BenchRow>> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let kernels: Vec<&KernelInfo> =
        rustile_kernels::registry::of(sweep.family, rustile_kernels::registry::Role::Ladder)
            .collect();
    let mut rows = Vec::new();
    for problem in &sweep.problems {
        for &dtype in &sweep.dtypes {
            dispatch_dtype!(dtype, T => bench_problem::<T>(
                gpu,
                &kernels,
                problem,
                sweep,
                timing,
                &mut rng,
                &mut progress,
                &mut rows,
            ))?;
        }
    }
    let ceiling = rows
        .iter()
        .filter(|r| r.variant == BASELINE)
        .map(|r| r.gbps)
        .fold(0.0, f64::max);
    for r in &mut rows {
        r.vs_ceiling = if ceiling > 0.0 { r.gbps / ceiling } else { 0.0 };
    }
    Ok(rows)
}

#[allow(clippy::too_many_arguments)]
fn bench_problem<T: DeviceElem>(
    gpu: &Gpu,
    kernels: &[&KernelInfo],
    problem: &Problem,
    sweep: &Sweep,
    timing: &TimingConfig,
    rng: &mut SmallRng,
    progress: &mut impl FnMut(&str),
    rows: &mut Vec<BenchRow>,
) -> Result<()> {
    let elem = std::mem::size_of::<T>();
    let bytes = problem.bytes_moved(elem);
    let (src_len, dst_len) = problem.lens()?;
    // Every check before anything is allocated: the shape against each kernel that runs,
    // and one input/output set against the device's memory.
    for &kernel in kernels.iter().filter(|k| k.symbol(T::DTYPE).is_some()) {
        problem.plan::<T>(
            kernel,
            check::BufArg::new("src", src_len, 0),
            check::BufArg::new("dst", dst_len, 0),
            gpu.info().sm_count,
        )?;
    }
    let set_bytes = check::total_bytes("bench", &[(src_len, elem), (dst_len, elem)])?;
    gpu.check_fits(
        set_bytes,
        &format!("bench {} input and output", problem.shape()),
    )?;
    let set_bytes = set_bytes as u64;
    let sets = harness::rotation_sets(gpu.info().l2_bytes, set_bytes);
    let shape = problem.shape();
    let dims = problem.dims();
    let first_row = rows.len();

    {
        // Fresh random inputs per set; outputs poisoned before validation.
        let mut srcs = Vec::with_capacity(sets);
        let mut host_src0 = Vec::new();
        for s in 0..sets {
            let host: Vec<T> = random_vec(src_len, rng);
            srcs.push(gpu.upload(&host, "bench input")?);
            if s == 0 {
                host_src0 = host;
            }
        }
        let mut dsts: Vec<CudaSlice<T>> = (0..sets)
            .map(|_| gpu.alloc::<T>(dst_len, "bench output"))
            .collect::<Result<_>>()?;
        let reference = problem.reference(&host_src0);
        drop(host_src0);
        for &kernel in kernels.iter().filter(|k| k.symbol(T::DTYPE).is_some()) {
            let name = check::kernel_name(kernel);
            progress(&format!("validate {name} {} {shape}", T::DTYPE.name()));
            gpu.fill(&mut dsts[0], T::POISON, "bench output")?;
            problem.launch_gpu(gpu, kernel, &srcs[0], &mut dsts[0])?;
            let got = gpu.download(&dsts[0], "bench output")?;
            check::exact(&name, &shape, &got, &reference)?;
            for &mode in &sweep.modes {
                progress(&format!(
                    "time {name} {} {shape} L2 {}",
                    T::DTYPE.name(),
                    mode.name()
                ));
                let cfg = TimingConfig { mode, ..*timing };
                let stats = harness::time(gpu, &cfg, |i| {
                    let s = i % sets;
                    problem.launch_gpu(gpu, kernel, &srcs[s], &mut dsts[s])
                })?;
                rows.push(row(
                    sweep.family,
                    kernel.name.to_string(),
                    T::DTYPE,
                    (&shape, &dims),
                    mode,
                    bytes,
                    stats,
                ));
            }
        }
    }

    // Baseline: cuMemcpyDtoD moving the same useful bytes (bytes/2 read, bytes/2 written).
    let half = (bytes / 2) as usize;
    let base_sets = harness::rotation_sets(gpu.info().l2_bytes, bytes);
    let mut srcs = Vec::with_capacity(base_sets);
    let mut dsts = Vec::with_capacity(base_sets);
    for _ in 0..base_sets {
        let mut s = gpu.alloc::<u8>(half, "baseline input")?;
        gpu.stream()
            .memset_zeros(&mut s)
            .during(|| "initialising baseline input".into())?;
        srcs.push(s);
        dsts.push(gpu.alloc::<u8>(half, "baseline output")?);
    }
    let kernel_rows = first_row..rows.len();
    for &mode in &sweep.modes {
        progress(&format!(
            "time {BASELINE} {} bytes L2 {}",
            half,
            mode.name()
        ));
        let cfg = TimingConfig { mode, ..*timing };
        let stats = harness::time(gpu, &cfg, |i| {
            let s = i % base_sets;
            gpu.stream()
                .memcpy_dtod(&srcs[s], &mut dsts[s])
                .during(|| "cuMemcpyDtoD baseline".into())
        })?;
        let mut base = row(
            sweep.family,
            BASELINE.to_string(),
            T::DTYPE,
            (&shape, &dims),
            mode,
            bytes,
            stats,
        );
        base.vs_memcpy = 1.0;
        for r in &mut rows[kernel_rows.clone()] {
            if r.l2 == mode.name() {
                r.vs_memcpy = r.gbps / base.gbps;
            }
        }
        rows.push(base);
    }
    Ok(())
}

fn row(
    family: Family,
    variant: String,
    dtype: DType,
    (shape, dims): (&str, &[(&'static str, u64)]),
    mode: L2Mode,
    bytes: u64,
    stats: Stats,
) -> BenchRow {
    BenchRow {
        family: family.name(),
        variant,
        dtype: dtype.name(),
        shape: shape.to_string(),
        dims: dims.to_vec(),
        l2: mode.name(),
        bytes,
        gbps: bytes as f64 / (stats.median_ms * 1e-3) / 1e9,
        stats,
        vs_memcpy: 0.0,
        vs_ceiling: 0.0,
    }
}

/// Renders rows as a markdown table.
pub fn markdown(rows: &[BenchRow]) -> String {
    let mut s = String::from(
        "| family | variant | dtype | shape | L2 | median µs | min µs | max µs | GB/s | × memcpy | × ceiling |\n\
         | --- | --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n",
    );
    for r in rows {
        s += &format!(
            "| {} | {} | {} | {} | {} | {:.1} | {:.1} | {:.1} | {:.0} | {:.3} | {:.3} |\n",
            r.family,
            r.variant,
            r.dtype,
            r.shape,
            r.l2,
            r.stats.median_ms * 1e3,
            r.stats.min_ms * 1e3,
            r.stats.max_ms * 1e3,
            r.gbps,
            r.vs_memcpy,
            r.vs_ceiling
        );
    }
    s
}

impl crate::results::ResultRow for BenchRow {
    fn id(&self) -> crate::results::RowId {
        crate::results::RowId {
            kernel: format!("{}/{}", self.family, self.variant),
            dtype: self.dtype.into(),
            dims: self.dims.clone(),
            tags: vec![format!("l2={}", self.l2)],
        }
    }
    fn time(&self) -> Option<&Stats> {
        Some(&self.stats)
    }
}
