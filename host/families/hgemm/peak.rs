//! Measured tensor-pipe ceilings (`kernels-rs/src/hgemm/peak.rs`): what `mma.sync` and `wgmma`
//! reach on this GPU with no memory traffic at all, so that the bench quotes each GEMM as a
//! fraction of a peak measured in the same process. Every timed ceiling is validated first:
//! three iterations must give exactly three times one (small-integer operands, exact sums).

use cudarc::driver::{CudaFunction, CudaSlice, LaunchConfig, PushKernelArg};
use rustile_kernels::hgemm::peak;
use rustile_kernels::registry::DType;

use crate::error::{DriverContext, Error, Result};
use crate::gpu::Gpu;
use crate::harness::{self, L2Mode, Stats, TimingConfig};
use crate::ptx::Flavour;

/// The tensor-core instruction family a ceiling measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Pipe {
    /// `mma.sync.m16n8k16` (the sm_80 path).
    MmaSync,
    /// `wgmma.mma_async.m64n256k16` (sm_90a).
    Wgmma,
}

impl Pipe {
    /// Name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Pipe::MmaSync => "mma.sync",
            Pipe::Wgmma => "wgmma",
        }
    }
}

/// A measured ceiling.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Ceiling {
    /// Instruction family.
    pub pipe: Pipe,
    /// Input type.
    pub ty: &'static str,
    /// Median TFLOP/s.
    pub tflops: f64,
    /// Event-timed launches.
    pub stats: Stats,
}

/// `(symbol, launch configuration, flops per iteration of the whole grid)`.
fn plan(gpu: &Gpu, pipe: Pipe, ty: DType) -> Result<(&'static str, LaunchConfig, f64)> {
    let sms = gpu.info().sm_count;
    match pipe {
        Pipe::MmaSync => {
            let symbol = peak::MMA_SYMBOLS
                .iter()
                .find(|e| e.dtype == ty)
                .map(|e| e.symbol)
                .ok_or_else(|| Error::Usage(format!("no mma.sync ceiling for {}", ty.name())))?;
            // Two blocks of eight warps per SM: 256 independent accumulators in flight.
            let blocks = 2 * sms;
            let warps = blocks * (peak::MMA_THREADS / 32);
            let cfg = LaunchConfig {
                grid_dim: (blocks, 1, 1),
                block_dim: (peak::MMA_THREADS, 1, 1),
                shared_mem_bytes: 0,
            };
            Ok((
                symbol,
                cfg,
                warps as f64 * peak::MMA_FLOPS_PER_WARP_ITER as f64,
            ))
        }
        Pipe::Wgmma => {
            if gpu.flavour() != Flavour::Sm90a {
                return Err(Error::Unsupported {
                    kernel: "hgemm/peak_wgmma".into(),
                    what: "needs compute capability 9.0 (sm_90a PTX)".into(),
                });
            }
            let symbol = peak::WGMMA_SYMBOLS
                .iter()
                .find(|e| e.dtype == ty)
                .map(|e| e.symbol)
                .ok_or_else(|| Error::Usage(format!("no wgmma ceiling for {}", ty.name())))?;
            let cfg = LaunchConfig {
                grid_dim: (sms, 1, 1),
                block_dim: (peak::WGMMA_THREADS, 1, 1),
                shared_mem_bytes: peak::WGMMA_SHARED_BYTES as u32,
            };
            let warpgroups = sms * (peak::WGMMA_THREADS / 128);
            Ok((
                symbol,
                cfg,
                warpgroups as f64 * peak::WGMMA_FLOPS_PER_WG_ITER as f64,
            ))
        }
    }
}

/// The kernel, with its dynamic shared memory raised to what `cfg` asks.
fn function(gpu: &Gpu, symbol: &str, cfg: &LaunchConfig) -> Result<CudaFunction> {
    let f = gpu.function(symbol)?;
    if cfg.shared_mem_bytes > 0 {
        use cudarc::driver::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES as MAX_DYN;
        f.set_attribute(MAX_DYN, cfg.shared_mem_bytes as i32)
            .during(|| format!("raising {symbol}'s dynamic shared memory"))?;
    }
    Ok(f)
}

fn launch(
    gpu: &Gpu,
    f: &CudaFunction,
    cfg: LaunchConfig,
    out: &mut CudaSlice<f32>,
    iters: u32,
) -> Result<()> {
    let stream = gpu.stream();
    let mut args = stream.launch_builder(f);
    args.arg(out).arg(&iters);
    // SAFETY: the kernel takes (out: *mut f32, iters: u32) and writes one float per launched
    // thread, which `out` holds (allocated for exactly this grid); shared memory as planned
    // and raised by `function`.
    unsafe { args.launch(cfg) }.during(|| "launching a tensor ceiling kernel".into())?;
    Ok(())
}

/// One launch with `iters` iterations: every thread's sum of accumulators.
pub fn outputs(gpu: &Gpu, pipe: Pipe, ty: DType, iters: u32) -> Result<Vec<f32>> {
    let (symbol, cfg, _) = plan(gpu, pipe, ty)?;
    let f = function(gpu, symbol, &cfg)?;
    let n = (cfg.grid_dim.0 * cfg.block_dim.0) as usize;
    let mut out = gpu.alloc::<f32>(n, "ceiling output")?;
    gpu.fill(&mut out, f32::NAN, "ceiling output")?;
    launch(gpu, &f, cfg, &mut out, iters)?;
    gpu.download(&out, "ceiling output")
}

/// Checks that `three` is exactly three times `one`, everything finite and something non-zero.
pub fn check_linear(what: &str, one: &[f32], three: &[f32]) -> Result<()> {
    let bad = |detail: String| Error::Mismatch {
        kernel: what.to_owned(),
        shape: format!("{} threads", one.len()),
        detail,
    };
    if one.len() != three.len() {
        return Err(bad(format!("{} vs {} outputs", one.len(), three.len())));
    }
    if !one.iter().any(|&v| v != 0.0) {
        return Err(bad("every output is zero: the kernel did no math".into()));
    }
    for (i, (&a, &b)) in one.iter().zip(three).enumerate() {
        if !a.is_finite() || b != 3.0 * a {
            return Err(bad(format!(
                "thread {i}: one iteration gives {a}, three give {b}"
            )));
        }
    }
    Ok(())
}

/// Validates, then times the ceiling of `pipe` for `ty`.
pub fn measure(gpu: &Gpu, pipe: Pipe, ty: DType, timing: &TimingConfig) -> Result<Ceiling> {
    let what = format!("hgemm/peak {} {}", pipe.name(), ty.name());
    check_linear(
        &what,
        &outputs(gpu, pipe, ty, 1)?,
        &outputs(gpu, pipe, ty, 3)?,
    )?;
    let (symbol, cfg, flops_per_iter) = plan(gpu, pipe, ty)?;
    let f = function(gpu, symbol, &cfg)?;
    // A few milliseconds per launch at the expected rates.
    let iters = match pipe {
        Pipe::MmaSync => 8192,
        Pipe::Wgmma => 4096,
    };
    let n = (cfg.grid_dim.0 * cfg.block_dim.0) as usize;
    let mut out = gpu.alloc::<f32>(n, "ceiling output")?;
    let timing = TimingConfig {
        mode: L2Mode::Rotate,
        ..*timing
    };
    let stats = harness::time(gpu, &timing, |_| launch(gpu, &f, cfg, &mut out, iters))?;
    Ok(Ceiling {
        pipe,
        ty: ty.name(),
        tflops: flops_per_iter * iters as f64 / (stats.median_ms * 1e-3) / 1e12,
        stats,
    })
}

/// The `mma.sync` ceiling in the simulator: one block, every thread's sum.
pub fn outputs_sim(sim: &crate::sim::Simulator, ty: DType, iters: u32) -> Result<Vec<f32>> {
    let (symbol, entry) = peak::MMA_SYMBOLS
        .iter()
        .find(|e| e.dtype == ty)
        .map(|e| (e.symbol, e.sim))
        .ok_or_else(|| Error::Usage(format!("no mma.sync ceiling for {}", ty.name())))?;
    let n = peak::MMA_THREADS as usize;
    let out = sim.alloc::<f32>(n, "ceiling output")?;
    sim.write(&out, &vec![f32::NAN; n])?;
    let launch = crate::sim::SimLaunch {
        grid: (1, 1, 1),
        block: (peak::MMA_THREADS, 1, 1),
        shared_bytes: 0,
    };
    sim.launch(symbol, entry, &launch, &[out.addr(), iters as u64])?;
    sim.read(&out)
}
