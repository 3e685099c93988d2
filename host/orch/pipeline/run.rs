//! The pipeline itself: buffers, streams, events, one run and its timeline.

use super::*;

/// One run: event-timed total and every stage's span.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PipelineRun {
    /// Start event to end event, ms.
    pub total_ms: f64,
    /// Per-chunk, per-stage spans.
    pub timeline: Timeline,
}

/// Streams, device buffers and planned kernels for one [`PipelinePlan`], reusable across runs.
pub struct Pipeline<'g> {
    gpu: &'g Gpu,
    plan: PipelinePlan,
    streams: Vec<Arc<CudaStream>>,
    buffers: Vec<(DeviceBuffer, DeviceBuffer)>,
    work: ChunkWork,
    full: PlannedWork,
    tail: Option<PlannedWork>,
    /// Declared after the planned launches that hold its address.
    weights: Option<ResidentWeights>,
}

impl<'g> Pipeline<'g> {
    /// Creates the streams and the `streams × 2` chunk buffers, and plans `work` for a full
    /// and (if any) the partial last chunk. [`Error::Pipeline`] if `plan` was made for another
    /// output length per chunk than `work` gives ([`PipelinePlan::for_work`]).
    pub fn new(gpu: &'g Gpu, plan: PipelinePlan, work: ChunkWork) -> Result<Self> {
        if plan.out_shape != work.out_shape() {
            return Err(Error::Pipeline {
                what: format!(
                    "the plan's output per chunk is {:?}, {}'s is {:?} (plan it with \
                     PipelinePlan::for_work)",
                    plan.out_shape,
                    work.name(),
                    work.out_shape()
                ),
            });
        }
        let ctx = gpu.context();
        let streams = (0..plan.streams)
            .map(|i| ctx.new_stream().during(|| format!("creating stream {i}")))
            .collect::<Result<Vec<_>>>()?;
        let buffers = (0..plan.streams)
            .map(|i| {
                Ok((
                    DeviceBuffer::new(
                        ctx,
                        plan.chunk_bytes(),
                        &format!("pipeline input, stream {i}"),
                    )?,
                    DeviceBuffer::new(
                        ctx,
                        plan.out_chunk_bytes(),
                        &format!("pipeline output, stream {i}"),
                    )?,
                ))
            })
            .collect::<Result<Vec<_>>>()?;
        let (c, oc) = (plan.chunk_elems, plan.out_chunk_elems);
        // B of an SGEMM: uploaded here, once, before any run is timed.
        let weights = work.weights(gpu)?;
        let planned = |len| work.plan(gpu, len, c, oc, weights.as_ref());
        let full = planned(c)?;
        let last = plan.chunk(plan.chunks - 1).len();
        let tail = if last != c {
            Some(planned(last)?)
        } else {
            None
        };
        Ok(Self {
            gpu,
            plan,
            streams,
            buffers,
            work,
            full,
            tail,
            weights,
        })
    }

    /// The plan.
    pub fn plan(&self) -> &PipelinePlan {
        &self.plan
    }

    /// Checks `output` against the CPU reference of the work on every chunk of `input`.
    /// Suite kernels (and 0 compute launches): bit for bit. The SGEMM: every output element
    /// finite (the caller poisons the output with NaN first), and per chunk the sampled
    /// entries of [`gemm_sample_error`] within [`GemmProblem::tolerance`] (relative Frobenius
    /// error against a float64 reference, the measure and bound of the SGEMM validation).
    /// [`Error::Mismatch`] names the first wrong chunk.
    pub fn verify(&self, input: &[f32], output: &[f32]) -> Result<Verification> {
        let mismatch = |detail: String| Error::Mismatch {
            kernel: format!("{NAME} ({})", self.work.name()),
            shape: format!(
                "{} elements, {} streams",
                self.plan.elems, self.plan.streams
            ),
            detail,
        };
        let gemm = self.work.gemm_problem(self.plan.chunk_elems);
        if let (Some(p), Some(w), true) = (gemm, &self.weights, self.plan.compute_reps > 0) {
            if let Some(i) = output.iter().position(|v| !v.is_finite()) {
                return Err(mismatch(format!(
                    "output element {i} is {} (not written?)",
                    output[i]
                )));
            }
            let mut v = Verification {
                exact: false,
                entries: 0,
                worst_over_bound: 0.0,
            };
            for chunk in 0..self.plan.chunks {
                let (a, c) = (
                    &input[self.plan.chunk(chunk)],
                    &output[self.plan.out_chunk(chunk)],
                );
                let (err, entries) = gemm_sample_error(a, w.host(), p.k, p.n, c, chunk as u64);
                if err.is_nan() || err > 1.0 {
                    return Err(mismatch(format!(
                        "chunk {chunk}: a sampled entry is {err:.3e} times its float64 bound \
                         (scaled by Σ|a·b|; {entries} entries sampled)"
                    )));
                }
                v.entries += entries;
                v.worst_over_bound = v.worst_over_bound.max(err);
            }
            return Ok(v);
        }
        for chunk in 0..self.plan.chunks {
            let r = self.plan.chunk(chunk);
            let o = self.plan.out_chunk(chunk);
            let want: Vec<f32> = match self.work.problem(r.len()) {
                Some(p) if self.plan.compute_reps > 0 => p.reference(&input[r.clone()]),
                _ => input[r.start..r.start + o.len()].to_vec(),
            };
            if let Some(i) = want
                .iter()
                .zip(&output[o.clone()])
                .position(|(w, g)| w.to_bits() != g.to_bits())
            {
                return Err(mismatch(format!(
                    "chunk {chunk}: first wrong output element at {} (got {}, expected {})",
                    o.start + i,
                    output[o.start + i],
                    want[i]
                )));
            }
        }
        Ok(Verification {
            exact: true,
            entries: self.plan.out_elems,
            worst_over_bound: 0.0,
        })
    }

    /// Runs the batch `input` → `output` (`plan.elems` and `plan.out_elems` long, any
    /// [`HostKind`]).
    /// Returns after every stream has finished. From pageable memory the copies block the host
    /// thread, so the chunks serialise: that is what the study shows.
    ///
    /// [`HostKind`]: crate::orch::HostKind
    pub fn run(
        &self,
        input: &HostBuffer<f32>,
        output: &mut HostBuffer<f32>,
    ) -> Result<PipelineRun> {
        for (name, len, need) in [
            ("input", input.len(), self.plan.elems),
            ("output", output.len(), self.plan.out_elems),
        ] {
            if len != need {
                return Err(Error::BufferLength {
                    kernel: NAME.into(),
                    buffer: name,
                    got: len,
                    need,
                    shape: format!("plan for {} elements", self.plan.elems),
                });
            }
        }
        let ctx = self.gpu.context();
        let event = || {
            ctx.new_event(Some(CU_EVENT_DEFAULT))
                .during(|| "creating a timing event".into())
        };
        let start = event()?;
        let end = event()?;
        let marks = (0..self.plan.chunks)
            .map(|_| Ok([event()?, event()?, event()?, event()?]))
            .collect::<Result<Vec<_>>>()?;
        let issued = self.issue(input, output, &start, &end, &marks);
        // Whatever happened while issuing, no copy may still be using the host buffers when
        // this function returns.
        let mut synced = Ok(());
        for (i, s) in self.streams.iter().enumerate() {
            let r = s
                .synchronize()
                .during(|| format!("synchronising pipeline stream {i}"));
            if synced.is_ok() {
                synced = r;
            }
        }
        issued?;
        synced?;
        let ms = |a: &CudaEvent, b: &CudaEvent| {
            a.elapsed_ms(b)
                .map(f64::from)
                .during(|| "reading pipeline event times".into())
        };
        let mut spans = Vec::with_capacity(3 * self.plan.chunks);
        for (chunk, m) in marks.iter().enumerate() {
            let at = [
                ms(&start, &m[0])?,
                ms(&start, &m[1])?,
                ms(&start, &m[2])?,
                ms(&start, &m[3])?,
            ];
            for (k, stage) in Stage::ALL.into_iter().enumerate() {
                spans.push(Span {
                    stream: self.plan.stream_of(chunk),
                    chunk,
                    stage,
                    start_us: at[k] * 1e3,
                    dur_us: (at[k + 1] - at[k]) * 1e3,
                });
            }
        }
        Ok(PipelineRun {
            total_ms: ms(&start, &end)?,
            timeline: Timeline {
                title: String::new(),
                streams: self.plan.streams,
                spans,
            },
        })
    }

    fn issue(
        &self,
        input: &HostBuffer<f32>,
        output: &mut HostBuffer<f32>,
        start: &CudaEvent,
        end: &CudaEvent,
        marks: &[[CudaEvent; 4]],
    ) -> Result<()> {
        let rec =
            |e: &CudaEvent, s: &CudaStream| e.record(s).during(|| "recording an event".into());
        let first = &self.streams[0];
        rec(start, first)?;
        for s in &self.streams[1..] {
            s.wait(start)
                .during(|| "ordering a stream after the start".into())?;
        }
        self.gpu
            .context()
            .bind_to_thread()
            .during(|| "binding the context".into())?;
        for (chunk, m) in marks.iter().enumerate() {
            let si = self.plan.stream_of(chunk);
            let s = &self.streams[si];
            let (din, dout) = &self.buffers[si];
            let range = self.plan.chunk(chunk);
            let out_range = self.plan.out_chunk(chunk);
            let kernel = if range.len() == self.plan.chunk_elems {
                &self.full
            } else {
                self.tail.as_ref().unwrap_or(&self.full)
            };
            // Chunk `i − 1` is on another stream when there are several.
            let prev = chunk
                .checked_sub(1)
                .filter(|_| self.plan.streams > 1)
                .map(|p| &marks[p]);
            rec(&m[0], s)?;
            if let Some(p) = prev.filter(|_| self.plan.order.h2d()) {
                s.wait(&p[1])
                    .during(|| format!("ordering the H2D of chunk {chunk}"))?;
            }
            // SAFETY: `din` holds a full chunk (≥ range.len() f32); the host slice lives until
            // `run` synchronises every stream; the previous user of `din` on this stream (the
            // kernels of chunk `chunk - streams`) is ordered before this copy by the stream.
            unsafe {
                result::memcpy_htod_async(
                    din.ptr(),
                    &input.as_slice()[range.clone()],
                    s.cu_stream(),
                )
            }
            .during(|| format!("H2D of chunk {chunk}"))?;
            rec(&m[1], s)?;
            if let Some(p) = prev.filter(|_| self.plan.order.compute()) {
                s.wait(&p[2])
                    .during(|| format!("ordering the compute of chunk {chunk}"))?;
            }
            for _ in 0..self.plan.compute_reps {
                // SAFETY: the buffers hold a full chunk and its output and belong to this
                // stream only; the launch is planned for this chunk's length (B, if any, lives
                // in `self.weights` and is only read).
                unsafe { kernel.launch(s, din.ptr(), dout.ptr()) }?;
            }
            rec(&m[2], s)?;
            if let Some(p) = prev.filter(|_| self.plan.order.d2h()) {
                s.wait(&p[3])
                    .during(|| format!("ordering the D2H of chunk {chunk}"))?;
            }
            let src = if self.plan.compute_reps > 0 {
                dout
            } else {
                din
            };
            // SAFETY: as for the H2D: the slice outlives the copy (`run` synchronises), and
            // `src` holds at least out_range.len() f32 (≤ either chunk buffer) written by this
            // stream's earlier work.
            unsafe {
                result::memcpy_dtoh_async(
                    &mut output.as_mut_slice()[out_range],
                    src.ptr(),
                    s.cu_stream(),
                )
            }
            .during(|| format!("D2H of chunk {chunk}"))?;
            rec(&m[3], s)?;
        }
        for s in &self.streams[1..] {
            first.join(s).during(|| "joining the streams".into())?;
        }
        rec(end, first)
    }
}
