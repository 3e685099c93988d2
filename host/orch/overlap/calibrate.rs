//! Calibration: the compute repetitions that match a chunk's H2D time, and the SGEMM shape
//! whose compute matches it.

use super::*;

fn timed_ms(
    gpu: &Gpu,
    stream: &cudarc::driver::CudaStream,
    reps: usize,
    mut f: impl FnMut() -> Result<()>,
) -> Result<f64> {
    let ctx = gpu.context();
    let mut timed = || -> Result<f64> {
        for _ in 0..2 {
            f()?;
        }
        let mut samples = Vec::with_capacity(reps);
        for _ in 0..reps {
            let (a, b) = crate::orch::event_pair(ctx)?;
            a.record(stream).during(|| "recording an event".into())?;
            f()?;
            b.record(stream).during(|| "recording an event".into())?;
            stream.synchronize().during(|| "calibration".into())?;
            samples.push(a.elapsed_ms(&b).during(|| "reading event times".into())? as f64);
        }
        Ok(Stats::from_samples(samples).median_ms)
    };
    let ms = timed();
    // On every path out, errors included: what `f` enqueued (copies from and to the callers'
    // host slices) has finished before those slices can be freed.
    let synced = stream.synchronize().during(|| "calibration".into());
    let ms = ms?;
    synced?;
    Ok(ms)
}

/// Measures one chunk's H2D, kernel and D2H alone, and picks `k` launches per chunk so that
/// the compute stage ≈ the H2D: `k = round(H2D / kernel)`, then corrected once with the
/// measured time of `k` launches. `fixed_reps` skips the choice (and the 16-launch probe: the
/// kernel time is then that of the fixed launches).
pub fn calibrate(
    gpu: &Gpu,
    work: ChunkWork,
    chunk_elems: usize,
    input: &HostBuffer<f32>,
    output: &mut HostBuffer<f32>,
    fixed_reps: Option<usize>,
) -> Result<Calibration> {
    let ctx = gpu.context();
    let n = chunk_elems.min(input.len());
    let out_n = work.out_len(n).min(output.len());
    let bytes = n * 4;
    let stream = ctx.new_stream().during(|| "creating a stream".into())?;
    let din = DeviceBuffer::new(ctx, bytes, "calibration input")?;
    let dout = DeviceBuffer::new(ctx, out_n * 4, "calibration output")?;
    let weights = work.weights(gpu)?;
    let copy = work.plan(gpu, n, n, out_n, weights.as_ref())?;
    ctx.bind_to_thread()
        .during(|| "binding the context".into())?;
    let src = &input.as_slice()[..n];
    // SAFETY (four closures): the device buffers hold n and out_n f32; the host slices outlive
    // the copies (`timed_ms` synchronises its stream on every path out, errors included, and
    // the paired D2H's stream is synchronised after it); the paired copies touch different
    // buffers.
    let h2d_ms = timed_ms(gpu, &stream, 10, || {
        unsafe { result::memcpy_htod_async(din.ptr(), src, stream.cu_stream()) }
            .during(|| "calibration H2D".into())
    })?;
    let launches = |k: usize| {
        timed_ms(gpu, &stream, 10, || {
            (0..k).try_for_each(|_| unsafe { copy.launch(&stream, din.ptr(), dout.ptr()) })
        })
    };
    let (kernel_ms, compute_reps, compute_ms) = match fixed_reps {
        // A fixed count needs no probe: its own launches give the per-launch time (an SGEMM
        // chunk is one long launch; probing it 16 × 12 more times made the GEMM study crawl
        // under racecheck).
        Some(reps) => {
            let reps = reps.max(1);
            let ms = launches(reps)?;
            (ms / reps as f64, reps, ms)
        }
        None => {
            const PROBE: usize = 16;
            let kernel_ms = launches(PROBE)? / PROBE as f64;
            let reps_for =
                |ms_per_launch: f64| ((h2d_ms / ms_per_launch.max(1e-6)).round() as usize).max(1);
            let mut compute_reps = reps_for(kernel_ms);
            let mut compute_ms = launches(compute_reps)?;
            let better = reps_for(compute_ms / compute_reps as f64);
            if better != compute_reps {
                compute_reps = better;
                compute_ms = launches(compute_reps)?;
            }
            (kernel_ms, compute_reps, compute_ms)
        }
    };
    let dst = &mut output.as_mut_slice()[..out_n];
    let d2h_ms = timed_ms(gpu, &stream, 10, || {
        unsafe { result::memcpy_dtoh_async(&mut *dst, dout.ptr(), stream.cu_stream()) }
            .during(|| "calibration D2H".into())
    })?;
    // H2D of a chunk and D2H of an output chunk started together on two streams: what the
    // transfers cost per chunk when both directions of the link are busy.
    let other = ctx.new_stream().during(|| "creating a stream".into())?;
    let fork = ctx
        .new_event(Some(CU_EVENT_DEFAULT))
        .during(|| "creating an event".into())?;
    let pair_ms = timed_ms(gpu, &stream, 10, || {
        fork.record(&stream)
            .during(|| "recording an event".into())?;
        other.wait(&fork).during(|| "forking a stream".into())?;
        unsafe { result::memcpy_htod_async(din.ptr(), src, stream.cu_stream()) }
            .during(|| "calibration H2D ‖ D2H".into())?;
        unsafe { result::memcpy_dtoh_async(&mut *dst, dout.ptr(), other.cu_stream()) }
            .during(|| "calibration H2D ‖ D2H".into())?;
        stream.join(&other).during(|| "joining a stream".into())
    });
    // The D2H runs on `other`: finished too before `dst` can be freed, errors included.
    let other_synced = other.synchronize().during(|| "calibration".into());
    let pair_ms = pair_ms?;
    other_synced?;
    Ok(Calibration {
        chunk_bytes: bytes,
        out_bytes: out_n * 4,
        h2d_ms,
        kernel_ms,
        compute_ms,
        d2h_ms,
        pair_ms,
        compute_reps,
    })
}

/// One probe of [`calibrate_gemm_shape`]: a chunk of `rows × k` f32 against one SGEMM launch.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct GemmProbe {
    /// Rows of A in the chunk.
    pub rows: usize,
    /// Columns of B and of the output.
    pub n: usize,
    /// The variant `gemm::dispatch` picks for `rows × n × k`.
    pub kernel: &'static str,
    /// Pinned H2D of the chunk, median ms.
    pub h2d_ms: f64,
    /// One launch, median ms per launch over back-to-back launches.
    pub gemm_ms: f64,
}

impl GemmProbe {
    /// Compute / H2D.
    pub fn ratio(&self) -> f64 {
        self.gemm_ms / self.h2d_ms
    }
}

/// The chunk shape of the SGEMM workload and every probe that chose it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct GemmShape {
    /// Columns of A, rows of B.
    pub k: usize,
    /// Rows of A per chunk.
    pub rows: usize,
    /// Columns of B.
    pub n: usize,
    /// Every probe, in measuring order.
    pub probes: Vec<GemmProbe>,
}

/// Widths `n` of B to probe for a `k`-deep SGEMM: multiples of `step` from `min_n` up to `k / 3`,
/// so that the output (and the D2H) is at most a third of the input.
pub fn gemm_n_candidates(k: usize, step: usize, min_n: usize) -> Vec<usize> {
    if step == 0 {
        return Vec::new();
    }
    let top = k / 3 / step * step;
    (min_n.div_ceil(step).max(1)..=top / step)
        .map(|i| i * step)
        .collect()
}

/// The probe whose compute time is closest to its H2D (smallest `|gemm / h2d − 1|`); on a tie
/// the larger chunk, then the wider B. `None` without a finite probe.
pub fn pick_gemm_probe(probes: &[GemmProbe]) -> Option<&GemmProbe> {
    probes
        .iter()
        .filter(|p| p.ratio().is_finite() && p.ratio() > 0.0)
        .min_by(|a, b| {
            let d = |p: &GemmProbe| (p.ratio() - 1.0).abs();
            d(a).total_cmp(&d(b))
                .then(b.rows.cmp(&a.rows))
                .then(b.n.cmp(&a.n))
        })
}

/// Measures, for chunks of each of `rows` rows of a `k`-column A, the chunk's pinned H2D and
/// one SGEMM launch against a resident `k × n` B for each `n` (the dispatcher's variant,
/// [`PlannedGemm`], timed over `BACK_TO_BACK` launches), and picks the shape whose compute ≈ H2D
/// ([`pick_gemm_probe`]).
pub fn calibrate_gemm_shape(
    gpu: &Gpu,
    k: usize,
    rows: &[usize],
    ns: &[usize],
    mut progress: impl FnMut(&str),
) -> Result<GemmShape> {
    const BACK_TO_BACK: usize = 4;
    let (max_rows, max_n) = match (rows.iter().max(), ns.iter().max()) {
        (Some(&r), Some(&n)) if r > 0 && n > 0 && k > 0 => (r, n),
        _ => {
            return Err(crate::error::Error::Usage(format!(
                "SGEMM shape calibration needs rows, n and k > 0 (k = {k}, rows {rows:?}, n {ns:?})"
            )))
        }
    };
    progress(&format!(
        "SGEMM chunk shape: {} row counts × {} widths, K = {k}",
        rows.len(),
        ns.len()
    ));
    let ctx = gpu.context();
    let mut host = HostBuffer::<f32>::new(ctx, HostKind::Pinned, max_rows * k)?;
    fill_pattern(host.as_mut_slice(), 0xa11);
    let mut b = vec![0.0f32; k * max_n];
    fill_pattern(&mut b, 0xb0b);
    let stream = ctx.new_stream().during(|| "creating a stream".into())?;
    let da = DeviceBuffer::new(ctx, max_rows * k * 4, "SGEMM probe A")?;
    let db = DeviceBuffer::new(ctx, k * max_n * 4, "SGEMM probe B")?;
    let dc = DeviceBuffer::new(ctx, max_rows * max_n * 4, "SGEMM probe C")?;
    ctx.bind_to_thread()
        .during(|| "binding the context".into())?;
    // SAFETY: `db` holds k · max_n f32; synchronous.
    unsafe { result::memcpy_htod_sync(db.ptr(), &b) }.during(|| "uploading probe B".into())?;
    let mut probes = Vec::with_capacity(rows.len() * ns.len());
    for &r in rows {
        let src = &host.as_slice()[..r * k];
        // SAFETY: `da` holds max_rows · k ≥ r · k f32; the host slice outlives the synchronised
        // copies.
        let h2d_ms = timed_ms(gpu, &stream, 10, || {
            unsafe { result::memcpy_htod_async(da.ptr(), src, stream.cu_stream()) }
                .during(|| "SGEMM probe H2D".into())
        })?;
        for &n in ns {
            let p = GemmProblem::new(r, n, k);
            let g = PlannedGemm::new(gpu, p, r * k, db.ptr(), k * n, r * n)?;
            // SAFETY: A, C are allocation starts holding ≥ r·k and r·n f32; B k·n.
            let ms = timed_ms(gpu, &stream, 5, || {
                (0..BACK_TO_BACK).try_for_each(|_| unsafe { g.launch(&stream, da.ptr(), dc.ptr()) })
            })?;
            probes.push(GemmProbe {
                rows: r,
                n,
                kernel: g.kernel_name(),
                h2d_ms,
                gemm_ms: ms / BACK_TO_BACK as f64,
            });
        }
    }
    let best = *pick_gemm_probe(&probes)
        .ok_or_else(|| crate::error::Error::Usage("no SGEMM probe gave a finite time".into()))?;
    Ok(GemmShape {
        k,
        rows: best.rows,
        n: best.n,
        probes,
    })
}

/// Markdown: the chosen shape and every probe (rows × n: compute / H2D).
pub fn gemm_shape_markdown(s: &GemmShape) -> String {
    let mut ns: Vec<usize> = s.probes.iter().map(|p| p.n).collect();
    ns.sort_unstable();
    ns.dedup();
    let mut rows: Vec<usize> = s.probes.iter().map(|p| p.rows).collect();
    rows.sort_unstable();
    rows.dedup();
    let mut md = format!(
        "SGEMM chunk shape (K = {}): chosen **{} rows × N = {}** (chunk {:.1} MiB, output {:.1} MiB). \
         Each cell: one launch, ms (compute / H2D of the chunk); the variant is `gemm::dispatch`'s.\n\n\
         | rows (chunk MiB, H2D ms) |",
        s.k,
        s.rows,
        s.n,
        (s.rows * s.k * 4) as f64 / (1 << 20) as f64,
        (s.rows * s.n * 4) as f64 / (1 << 20) as f64,
    );
    for n in &ns {
        md += &format!(" N = {n} |");
    }
    md += "\n| --- |";
    md += &" ---: |".repeat(ns.len());
    md += "\n";
    for r in &rows {
        let h = s
            .probes
            .iter()
            .find(|p| p.rows == *r)
            .map(|p| p.h2d_ms)
            .unwrap_or(f64::NAN);
        md += &format!(
            "| {r} ({:.0}, {h:.3}) |",
            (r * s.k * 4) as f64 / (1 << 20) as f64
        );
        for n in &ns {
            match s.probes.iter().find(|p| p.rows == *r && p.n == *n) {
                Some(p) => {
                    let bold = if p.rows == s.rows && p.n == s.n {
                        "**"
                    } else {
                        ""
                    };
                    let tag = if p.kernel.contains("128x64") {
                        "ᵃ"
                    } else {
                        ""
                    };
                    md += &format!(" {bold}{:.3} ({:.2}){bold}{tag} |", p.gemm_ms, p.ratio());
                }
                None => md += " — |",
            }
        }
        md += "\n";
    }
    md += "\nᵃ the 128×64 tile (`tile_128x64`: fewer 128×128 tiles than SMs); otherwise the 128×128 warp tile.\n";
    md
}
