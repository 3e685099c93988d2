//! What the host costs per kernel: launching many tiny kernels one by one against capturing
//! them once into a CUDA graph and replaying it; and synchronising after every kernel (the
//! "read a scalar back every step" pattern) against once at the end.
//!
//! The tiny kernel is the suite's `copy/scalar` on 256 f32 (one block). Wall-clock time from
//! the first launch to the end of the synchronisation, divided by the kernel count, is the
//! cost a caller sees; the CUDA-event span on the device is reported beside it.

use std::time::Instant;

use cudarc::driver::sys::{CUgraphInstantiate_flags, CUstreamCaptureMode};
use cudarc::driver::{result, CudaStream};

use super::kernel::PlannedCopy;
use super::mem::DeviceBuffer;
use crate::error::{DriverContext, Error, Result};
use crate::gpu::Gpu;
use crate::harness::Stats;

/// Elements the tiny kernel copies.
pub const TINY_ELEMS: usize = 256;

/// One way of issuing `kernels` tiny kernels.
#[derive(Clone, Debug, serde::Serialize)]
pub struct LaunchRow {
    /// Method.
    pub method: String,
    /// Kernels per repetition.
    pub kernels: usize,
    /// Wall time per kernel (launch to completion, median of repetitions), µs.
    pub wall_us_per_kernel: f64,
    /// Device time (CUDA events around the whole batch) per kernel, µs.
    pub device_us_per_kernel: f64,
    /// Repetitions.
    pub reps: usize,
}

/// The launch-overhead and synchronisation study.
#[derive(Clone, Debug, serde::Serialize)]
pub struct LaunchReport {
    /// Plain launches vs graph replay.
    pub launch: Vec<LaunchRow>,
    /// Capturing and instantiating the graph, once, µs.
    pub graph_build_us: f64,
    /// One sync at the end vs a sync (or a scalar read-back) after every kernel.
    pub sync: Vec<LaunchRow>,
}

struct Tiny {
    copy: PlannedCopy,
    src: DeviceBuffer,
    dst: DeviceBuffer,
}

impl Tiny {
    fn new(gpu: &Gpu) -> Result<Self> {
        let scalar = &rustile_kernels::copy::v01_scalar::INFO;
        let ctx = gpu.context();
        let bytes = TINY_ELEMS * 4;
        let src = DeviceBuffer::new(ctx, bytes, "tiny kernel src")?;
        let dst = DeviceBuffer::new(ctx, bytes, "tiny kernel dst")?;
        // SAFETY: `src` is a live allocation of `bytes` bytes (just made); the memset
        // initialises it so the kernels read defined values.
        unsafe { cudarc::driver::sys::cuMemsetD8_v2(src.ptr(), 0x3f, bytes) }
            .result()
            .during(|| "initialising the tiny kernel's input".into())?;
        Ok(Self {
            copy: PlannedCopy::new(gpu, scalar, TINY_ELEMS, TINY_ELEMS, TINY_ELEMS)?,
            src,
            dst,
        })
    }

    fn launch(&self, s: &CudaStream) -> Result<()> {
        // SAFETY: both buffers hold TINY_ELEMS f32 and are used by this study only.
        unsafe { self.copy.launch(s, self.src.ptr(), self.dst.ptr()) }
    }
}

/// Times `body` (which issues `kernels` kernels on `s` and may synchronise inside) `reps`
/// times after one warm-up: wall clock to completion and the event span.
fn time_batches(
    gpu: &Gpu,
    s: &CudaStream,
    method: &str,
    kernels: usize,
    reps: usize,
    mut body: impl FnMut() -> Result<()>,
) -> Result<LaunchRow> {
    let ctx = gpu.context();
    body()?;
    s.synchronize().during(|| format!("{method}: warm-up"))?;
    let (mut wall, mut device) = (Vec::new(), Vec::new());
    for _ in 0..reps {
        let (a, b) = crate::orch::event_pair(ctx)?;
        let t = Instant::now();
        a.record(s).during(|| "recording an event".into())?;
        body()?;
        b.record(s).during(|| "recording an event".into())?;
        s.synchronize()
            .during(|| format!("{method}: synchronising"))?;
        wall.push(t.elapsed().as_secs_f64() * 1e6 / kernels as f64);
        device.push(
            a.elapsed_ms(&b).during(|| "reading event times".into())? as f64 * 1e3 / kernels as f64,
        );
    }
    Ok(LaunchRow {
        method: method.to_string(),
        kernels,
        wall_us_per_kernel: Stats::from_samples(wall).median_ms,
        device_us_per_kernel: Stats::from_samples(device).median_ms,
        reps,
    })
}

/// Runs both studies with `kernels` kernels per batch, `reps` batches each.
pub fn study(gpu: &Gpu, kernels: usize, reps: usize) -> Result<LaunchReport> {
    if kernels == 0 || reps == 0 {
        return Err(Error::Usage(
            "launch study: kernels and reps must be positive".into(),
        ));
    }
    let ctx = gpu.context();
    let tiny = Tiny::new(gpu)?;
    let s = ctx.new_stream().during(|| "creating a stream".into())?;

    let plain = time_batches(gpu, &s, "plain launches, one by one", kernels, reps, || {
        (0..kernels).try_for_each(|_| tiny.launch(&s))
    })?;

    // Capture the same launches once. Capture needs a non-default stream (this one).
    let t = Instant::now();
    s.begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
        .during(|| "beginning stream capture".into())?;
    let captured = (0..kernels).try_for_each(|_| tiny.launch(&s));
    let graph = s.end_capture(CUgraphInstantiate_flags(0));
    captured?;
    let graph = graph
        .during(|| "ending capture and instantiating the graph".into())?
        .ok_or_else(|| Error::Usage("stream capture produced an empty graph".into()))?;
    graph.upload().during(|| "uploading the graph".into())?;
    s.synchronize().during(|| "graph upload".into())?;
    let graph_build_us = t.elapsed().as_secs_f64() * 1e6;
    let replay = time_batches(
        gpu,
        &s,
        "CUDA graph replay (captured once)",
        kernels,
        reps,
        || graph.launch().during(|| "launching the graph".into()),
    )?;

    let sync_end = time_batches(gpu, &s, "one sync at the end", kernels, reps, || {
        (0..kernels).try_for_each(|_| tiny.launch(&s))
    })?;
    let sync_each = time_batches(gpu, &s, "sync after every kernel", kernels, reps, || {
        for _ in 0..kernels {
            tiny.launch(&s)?;
            s.synchronize().during(|| "after a kernel".into())?;
        }
        Ok(())
    })?;
    let mut scalar = [0f32; 1];
    let read_each = time_batches(
        gpu,
        &s,
        "read a scalar back after every kernel",
        kernels,
        reps,
        || {
            for _ in 0..kernels {
                tiny.launch(&s)?;
                ctx.bind_to_thread()
                    .during(|| "binding the context".into())?;
                // SAFETY: dst holds TINY_ELEMS ≥ 1 f32; `scalar` outlives the copy, which
                // completes before the synchronisation returns.
                unsafe {
                    result::memcpy_dtoh_async(&mut scalar[..], tiny.dst.ptr(), s.cu_stream())
                }
                .during(|| "reading a scalar back".into())?;
                s.synchronize()
                    .during(|| "after a scalar read-back".into())?;
            }
            Ok(())
        },
    )?;
    Ok(LaunchReport {
        launch: vec![plain, replay],
        graph_build_us,
        sync: vec![sync_end, sync_each, read_each],
    })
}

impl LaunchReport {
    /// Markdown tables.
    pub fn markdown(&self) -> String {
        let mut s = String::from(
            "| launch method | kernels | wall µs / kernel | device µs / kernel |\n| --- | ---: | ---: | ---: |\n",
        );
        for r in &self.launch {
            s += &format!(
                "| {} | {} | **{:.3}** | {:.3} |\n",
                r.method, r.kernels, r.wall_us_per_kernel, r.device_us_per_kernel
            );
        }
        if let [plain, graph] = &self.launch[..] {
            s += &format!(
                "\nGraph replay: {:.2}× the plain per-kernel wall cost ({:.3} µs saved per kernel); \
                 capture + instantiate + upload once: {:.0} µs.\n",
                graph.wall_us_per_kernel / plain.wall_us_per_kernel,
                plain.wall_us_per_kernel - graph.wall_us_per_kernel,
                self.graph_build_us
            );
        }
        s += "\n| synchronisation | kernels | wall µs / kernel | µs lost per sync |\n| --- | ---: | ---: | ---: |\n";
        let base = self
            .sync
            .first()
            .map(|r| r.wall_us_per_kernel)
            .unwrap_or(0.0);
        for (i, r) in self.sync.iter().enumerate() {
            let lost = if i == 0 {
                "— (baseline)".to_string()
            } else {
                format!("**{:.3}**", r.wall_us_per_kernel - base)
            };
            s += &format!(
                "| {} | {} | {:.3} | {} |\n",
                r.method, r.kernels, r.wall_us_per_kernel, lost
            );
        }
        s
    }
}
