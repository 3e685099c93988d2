//! The benchmark: a kernel on a problem on the GPU, checked against float64 on sampled outputs
//! first, then timed with CUDA events (warm-up, L2 flushed before every repetition, median),
//! interleaved with the cuDNN baseline in the same process when one is given.

use cudarc::driver::{CudaSlice, DevicePtr};
use rustile_kernels::registry::{DType, KernelInfo};

use crate::error::Result;
use crate::gpu::Gpu;
use crate::harness::{time_all, Stats, TimingConfig};

use super::buf::DevBuf;
use super::tma::TmaLaunch;
use super::*;

/// One measured row.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Row {
    /// Layer name (or the problem's label).
    pub layer: String,
    /// The problem.
    pub problem: Problem,
    /// `conv/<variant>` that ran (the tile width the launcher chose, for the TMA kernel).
    pub kernel: String,
    /// rustile's time.
    pub stats: Stats,
    /// TFLOP/s at the median.
    pub tflops: f64,
    /// The baselines' names and times, measured interleaved with rustile's.
    pub baselines: Vec<(String, Stats)>,
    /// Worst |error| / bound over the sampled outputs.
    pub worst: f64,
}

impl Row {
    /// rustile's speed relative to baseline `i` (time ratio: > 1 is faster).
    pub fn ratio(&self, i: usize) -> Option<f64> {
        self.baselines
            .get(i)
            .map(|(_, s)| s.median_ms / self.stats.median_ms)
    }
}

impl crate::results::ResultRow for Row {
    fn id(&self) -> crate::results::RowId {
        let p = &self.problem;
        let dims = [
            ("n", p.n),
            ("h", p.h),
            ("w", p.w),
            ("c", p.c),
            ("k", p.k),
            ("r", p.r),
            ("s", p.s),
            ("stride_h", p.stride.0),
            ("stride_w", p.stride.1),
            ("pad_h", p.pad.0),
            ("pad_w", p.pad.1),
            ("dil_h", p.dil.0),
            ("dil_w", p.dil.1),
        ];
        crate::results::RowId {
            kernel: self.kernel.clone(),
            dtype: p.dtype.name().into(),
            dims: dims.iter().map(|&(k, v)| (k, v as u64)).collect(),
            tags: vec![
                format!("layer={}", self.layer),
                format!("layout={:?}", p.layout).to_lowercase(),
                format!("bias={}", p.bias),
                format!("relu={}", p.relu),
            ],
        }
    }
    fn time(&self) -> Option<&Stats> {
        Some(&self.stats)
    }
}

/// A baseline launch on the bench's buffers.
pub type BaselineFn<'a> = Box<dyn FnMut(&Addrs) -> Result<()> + 'a>;

/// The problem's buffers on the GPU, filled from seeded inputs.
pub struct GpuBufs {
    x: DevBuf,
    w: DevBuf,
    /// Bias, if the problem has one.
    pub bias: Option<CudaSlice<f32>>,
    y: DevBuf,
}

impl GpuBufs {
    /// Uploads `x` (and a NaN-poisoned y) for `p`.
    pub fn new(gpu: &Gpu, p: &Problem, x: &Inputs) -> Result<Self> {
        let [_, _, ly] = p.lens()?;
        Ok(Self {
            x: DevBuf::upload(gpu, p.dtype, &x.x, "conv x")?,
            w: DevBuf::upload(gpu, p.dtype, &x.w, "conv w")?,
            bias: match &x.bias {
                Some(b) => Some(gpu.upload(b, "conv bias")?),
                None => None,
            },
            y: DevBuf::poisoned(gpu, p.dtype, ly, "conv y")?,
        })
    }

    /// Their device addresses.
    pub fn addrs(&self, gpu: &Gpu) -> Addrs {
        let stream = gpu.stream();
        Addrs {
            x: self.x.addr(stream),
            w: self.w.addr(stream),
            bias: self.bias.as_ref().map_or(0, |b| b.device_ptr(stream).0),
            y: self.y.addr(stream),
        }
    }

    /// y, widened to f32.
    pub fn y(&self, gpu: &Gpu, dtype: DType) -> Result<Vec<f32>> {
        self.y.download(gpu, dtype, "conv y")
    }
}

/// A repeatable launch of `record` (the TMA kernel with its maps built once).
enum Prepared {
    /// A common-argument kernel, split-K parts (the f32 `regblock`: the fix-up plan and its
    /// workspace) or not.
    Plan(
        crate::launch::LaunchPlan<'static>,
        Option<(crate::launch::LaunchPlan<'static>, cudarc::driver::CudaSlice<f32>)>,
    ),
    Tma(TmaLaunch),
}

/// Measures `record` on `p` (inputs from `seed`): one checked launch, then `cfg.reps` timed
/// repetitions interleaved with each of `baselines` (which run on the same buffers, writing
/// the same y).
#[allow(clippy::too_many_arguments)]
pub fn bench_one(
    gpu: &Gpu,
    layer: &str,
    record: &'static KernelInfo,
    p: &Problem,
    cfg: &TimingConfig,
    seed: u64,
    with_baselines: bool,
    tma_stores: bool,
    reduce: super::tma::Reduce,
) -> Result<Row> {
    p.check()?;
    runnable(Target::gpu(gpu), record, p)?;
    gpu.check_fits(p.bytes()?, &format!("{}: x, w, y and bias", p.label()))?;
    let x = Inputs::random(p, seed)?;
    let bufs = GpuBufs::new(gpu, p, &x)?;
    let mut baselines: Vec<(String, BaselineFn<'_>)> = if with_baselines {
        super::baseline::baselines(gpu, p, x.bias.as_deref())?
    } else {
        Vec::new()
    };
    let a = bufs.addrs(gpu);
    let prepared = if record.needs.tma {
        let width = super::tma::tuning_width(record);
        Prepared::Tma(TmaLaunch::with_stores(
            gpu, p, &a, width, reduce, tma_stores,
        )?)
    } else {
        let splits = direct_parts(record, p, gpu.info().sm_count, reduce)?;
        match gpu_split_workspace(gpu, p, splits)? {
            Some(ws) => {
                let ws_addr = cudarc::driver::DevicePtr::device_ptr(&ws, gpu.stream()).0;
                let (main, fix) = split_plans(p, record, &a, splits, ws_addr)?;
                Prepared::Plan(main, fix.map(|f| (f, ws)))
            }
            None => Prepared::Plan(plan(p, record, &a)?, None),
        }
    };
    let kernel = match &prepared {
        Prepared::Tma(t) if t.cut > 0 => format!("{} cut {}", kernel_label(t.record), t.cut),
        Prepared::Tma(t) if t.stream_k => format!("{} stream-K", kernel_label(t.record)),
        Prepared::Tma(t) if t.splits > 1 => {
            format!("{} split {}", kernel_label(t.record), t.splits)
        }
        Prepared::Tma(t) if t.tma_store => format!("{} tma-store", kernel_label(t.record)),
        Prepared::Tma(t) => kernel_label(t.record),
        Prepared::Plan(pl, Some(_)) => format!("{} split {}", kernel_label(pl.kernel), pl.grid.2),
        Prepared::Plan(pl, None) => kernel_label(pl.kernel),
    };
    let stream = gpu.stream().clone();
    let mut ours = |_: usize| -> Result<()> {
        // SAFETY: `bufs` holds p's lengths and outlives every launch (synchronized below).
        unsafe {
            match &prepared {
                Prepared::Tma(t) => t.enqueue(gpu, &stream, p, &a),
                Prepared::Plan(pl, fix) => {
                    pl.launch_on(gpu, &stream)?;
                    // The fix-up reads the workspace `prepared` owns and writes y.
                    match fix {
                        Some((f, _ws)) => f.launch_on(gpu, &stream),
                        None => Ok(()),
                    }
                }
            }
        }
    };
    ours(0)?;
    let got = bufs.y(gpu, p.dtype)?;
    let which = elements_to_check(p, seed)?;
    let (_, worst) = compare(p, &kernel, &x, &got, &which)?;
    let names: Vec<String> = baselines.iter().map(|(n, _)| n.clone()).collect();
    let mut fns: Vec<Box<dyn FnMut(usize) -> Result<()> + '_>> = Vec::new();
    fns.push(Box::new(&mut ours));
    for (_, f) in baselines.iter_mut() {
        fns.push(Box::new(move |_| f(&a)));
    }
    let stats = match fns.as_mut_slice() {
        [o] => time_all(gpu, cfg, [o.as_mut()])?.to_vec(),
        [o, b] => time_all(gpu, cfg, [o.as_mut(), b.as_mut()])?.to_vec(),
        [o, b, c] => time_all(gpu, cfg, [o.as_mut(), b.as_mut(), c.as_mut()])?.to_vec(),
        _ => {
            return Err(crate::error::Error::Usage(
                "at most two baselines per bench row".into(),
            ))
        }
    };
    gpu.synchronize("conv bench")?;
    let tflops = p.flops() / (stats[0].median_ms * 1e-3) / 1e12;
    Ok(Row {
        layer: layer.into(),
        problem: *p,
        kernel,
        stats: stats[0],
        tflops,
        baselines: names.into_iter().zip(stats[1..].iter().copied()).collect(),
        worst,
    })
}

/// The markdown table of `rows`.
pub fn markdown(rows: &[Row]) -> String {
    let mut s = String::from(
        "| layer | problem | kernel | ms | TFLOP/s | baseline | base TFLOP/s | × base | baseline 2 | × base 2 |\n|---|---|---|---:|---:|---|---:|---:|---|---:|\n",
    );
    for r in rows {
        let base = |i: usize| match r.baselines.get(i) {
            Some((n, st)) => format!(
                "{n} | {:.1} | {:.3}",
                r.problem.flops() / (st.median_ms * 1e-3) / 1e12,
                r.ratio(i).unwrap_or(0.0)
            ),
            None => "— | — | —".into(),
        };
        let b2 = match r.baselines.get(1) {
            Some((n, _)) => format!("{n} | {:.3}", r.ratio(1).unwrap_or(0.0)),
            None => "— | —".into(),
        };
        let b1 = base(0);
        s += &format!(
            "| {} | {} | {} | {:.4} | {:.1} | {} | {} |\n",
            r.layer,
            r.problem.label(),
            r.kernel,
            r.stats.median_ms,
            r.tflops,
            b1,
            b2
        );
    }
    s
}
