//! The overlap pipeline: a host-resident batch processed in chunks through N streams,
//! each chunk H2D → a suite kernel (repeated `compute_reps` times) → D2H, chunk `i` on
//! stream `i % N`, every stage bracketed by CUDA events.
//!
//! Only `N × 2` chunk-sized device buffers exist (an input chunk and its output, which is
//! smaller for a gather), whatever the batch size: a batch larger than device memory streams
//! through them. Within a stream the order H2D → kernels → D2H → next
//! chunk's H2D is stream order; the streams start together behind one start event and the
//! first stream joins the others before the end event.
//!
//! [`StageOrder`] optionally orders stages across streams: with [`StageOrder::H2d`] the H2D of
//! chunk `i` waits (an event) for the H2D of chunk `i − 1`, so only one host-to-device copy
//! runs at a time and each arrives at full link rate, instead of two streams' copies sharing
//! the link and both arriving late; [`StageOrder::H2dCompute`] does the same for the compute
//! stage, so the kernels of several streams do not share the SMs (each stream's compute
//! finishing late delays that stream's next H2D); [`StageOrder::All`] for every stage.

use std::ops::Range;
use std::sync::Arc;

use cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT;
use cudarc::driver::{result, CudaEvent, CudaStream};
use rustile_kernels::registry::KernelInfo;

use super::kernel::PlannedCopy;
use super::mem::{DeviceBuffer, HostBuffer};
use super::timeline::{Span, Stage, Timeline};
use crate::copy::CopyProblem;
use crate::error::{DriverContext, Error, Result};
use crate::gpu::Gpu;
use crate::problem::Problem;
use crate::strided::StridedProblem;
use crate::transpose::TransposeProblem;

/// What the compute stage runs on each chunk (f32), `compute_reps` times, input → output.
#[derive(Clone, Copy, Debug)]
pub enum ChunkWork {
    /// `out = in` with a copy variant: short launches (a few µs each on a chunk).
    Copy(&'static KernelInfo),
    /// `out = inᵀ`, the chunk read as a `(len / cols) × cols` row-major matrix (as `1 × len`
    /// when `cols` does not divide it): fewer, longer launches with a slow variant.
    Transpose {
        /// A transpose variant.
        kernel: &'static KernelInfo,
        /// Matrix columns.
        cols: usize,
    },
    /// `out[j] = in[j · stride]` with a strided variant: the output chunk is `stride` times
    /// smaller than the input chunk, so the D2H stage is short.
    Gather {
        /// A strided variant.
        kernel: &'static KernelInfo,
        /// Input elements per output element (≥ 1).
        stride: usize,
    },
}

impl ChunkWork {
    /// The kernel.
    pub fn kernel(&self) -> &'static KernelInfo {
        match self {
            ChunkWork::Copy(k)
            | ChunkWork::Transpose { kernel: k, .. }
            | ChunkWork::Gather { kernel: k, .. } => k,
        }
    }

    /// Input elements per output element: the gather's stride, 1 otherwise.
    pub fn shrink(&self) -> usize {
        match *self {
            ChunkWork::Gather { stride, .. } => stride.max(1),
            _ => 1,
        }
    }

    /// Output elements of a chunk of `len` input elements: `⌈len / shrink⌉`.
    pub fn out_len(&self, len: usize) -> usize {
        len.div_ceil(self.shrink())
    }

    /// The problem for a chunk of `len` elements.
    pub fn problem(&self, len: usize) -> Problem {
        match *self {
            ChunkWork::Copy(_) => Problem::Copy(CopyProblem { n: len }),
            ChunkWork::Transpose { cols, .. } => {
                let (rows, cols) = if cols > 0 && len.is_multiple_of(cols) {
                    (len / cols, cols)
                } else {
                    (1, len)
                };
                Problem::Transpose(TransposeProblem { rows, cols })
            }
            ChunkWork::Gather { .. } => Problem::Strided(StridedProblem {
                n: self.out_len(len),
                stride: self.shrink(),
            }),
        }
    }

    /// `family/variant`, with the stride for a gather.
    pub fn name(&self) -> String {
        let name = crate::check::kernel_name(self.kernel());
        match self {
            ChunkWork::Gather { stride, .. } => format!("{name} stride {stride}"),
            _ => name,
        }
    }
}

/// Which stages of different streams are ordered: stage `s` of chunk `i` waits (an event) for
/// stage `s` of chunk `i − 1`, so that engine takes the chunks one at a time, in order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub enum StageOrder {
    /// Stream order only: ready work of different streams may run at the same time.
    #[default]
    Free,
    /// H2D copies one at a time, in chunk order (one event wait per chunk).
    H2d,
    /// H2D copies and compute stages each one at a time, in chunk order.
    H2dCompute,
    /// Every stage (H2D, compute, D2H) one at a time, in chunk order.
    All,
}

impl StageOrder {
    /// Every order.
    pub const ALL: [StageOrder; 4] = [
        StageOrder::Free,
        StageOrder::H2d,
        StageOrder::H2dCompute,
        StageOrder::All,
    ];

    /// Short name for tables.
    pub fn name(self) -> &'static str {
        match self {
            StageOrder::Free => "free",
            StageOrder::H2d => "H2D in order",
            StageOrder::H2dCompute => "H2D, compute in order",
            StageOrder::All => "all stages in order",
        }
    }

    fn h2d(self) -> bool {
        self != StageOrder::Free
    }

    fn compute(self) -> bool {
        matches!(self, StageOrder::H2dCompute | StageOrder::All)
    }

    fn d2h(self) -> bool {
        self == StageOrder::All
    }
}

/// How to cut and run a batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PipelineConfig {
    /// Elements (f32) per chunk; the last chunk may be shorter.
    pub chunk_elems: usize,
    /// Streams the chunks are spread over, round robin.
    pub streams: usize,
    /// Copy-kernel launches per chunk (the compute stage); 0 sends the input straight back.
    pub compute_reps: usize,
    /// Ordering of stages across streams.
    pub order: StageOrder,
}

/// A checked plan: how many chunks, which stream, how much device memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PipelinePlan {
    /// Elements in the batch.
    pub elems: usize,
    /// Elements per chunk.
    pub chunk_elems: usize,
    /// Input elements per output element (1 unless the work is a gather).
    pub shrink: usize,
    /// Elements of the output batch: `Σ ⌈chunk / shrink⌉`.
    pub out_elems: usize,
    /// Output elements of a full chunk: `⌈chunk_elems / shrink⌉`.
    pub out_chunk_elems: usize,
    /// Chunks (the last may be partial).
    pub chunks: usize,
    /// Streams.
    pub streams: usize,
    /// Copy-kernel launches per chunk.
    pub compute_reps: usize,
    /// Ordering of stages across streams.
    pub order: StageOrder,
    /// Device bytes the pipeline allocates: `streams × (chunk + output chunk)` f32,
    /// independent of the batch.
    pub device_bytes: usize,
}

const NAME: &str = "pipeline";

impl PipelinePlan {
    /// Checks a batch of `input_len` elements into an output of `output_len` against `cfg`
    /// and `device_free` bytes of device memory, for work whose output is as long as its
    /// input (copy, transpose). Pure: no GPU needed.
    ///
    /// Errors: [`Error::ZeroSize`] for an empty batch or chunk, [`Error::BufferLength`] when
    /// the output is not as long as the input, [`Error::Pipeline`] for 0 streams, more streams
    /// than chunks, or chunk buffers that do not fit `device_free`; [`Error::TooLarge`] if the
    /// byte counts overflow.
    pub fn new(
        input_len: usize,
        output_len: usize,
        cfg: &PipelineConfig,
        device_free: usize,
    ) -> Result<Self> {
        Self::with_shrink(input_len, output_len, cfg, 1, device_free)
    }

    /// As [`PipelinePlan::new`] for `work`: the output batch must hold
    /// [`ChunkWork::out_len`] of every chunk.
    pub fn for_work(
        input_len: usize,
        output_len: usize,
        cfg: &PipelineConfig,
        work: &ChunkWork,
        device_free: usize,
    ) -> Result<Self> {
        Self::with_shrink(input_len, output_len, cfg, work.shrink(), device_free)
    }

    /// As [`PipelinePlan::new`] where each chunk of `len` input elements gives
    /// `⌈len / shrink⌉` output elements (`shrink` ≥ 1).
    pub fn with_shrink(
        input_len: usize,
        output_len: usize,
        cfg: &PipelineConfig,
        shrink: usize,
        device_free: usize,
    ) -> Result<Self> {
        let zero = |what| Error::ZeroSize {
            kernel: NAME.into(),
            what,
        };
        if input_len == 0 {
            return Err(zero("batch elements"));
        }
        if cfg.chunk_elems == 0 {
            return Err(zero("chunk elements"));
        }
        if shrink == 0 {
            return Err(zero("shrink (input elements per output element)"));
        }
        let chunk_elems = cfg.chunk_elems.min(input_len);
        let chunks = input_len.div_ceil(chunk_elems);
        let out_chunk_elems = chunk_elems.div_ceil(shrink);
        let out_elems = Self::output_len(input_len, chunk_elems, shrink);
        if output_len != out_elems {
            return Err(Error::BufferLength {
                kernel: NAME.into(),
                buffer: "output",
                got: output_len,
                need: out_elems,
                shape: format!(
                    "batch of {input_len} elements in chunks of {chunk_elems}, one output \
                     element per {shrink}"
                ),
            });
        }
        if cfg.streams == 0 {
            return Err(Error::Pipeline {
                what: "0 streams: at least one is needed".into(),
            });
        }
        if cfg.streams > chunks {
            return Err(Error::Pipeline {
                what: format!(
                    "{} streams but only {chunks} chunk(s) of {chunk_elems} elements in a batch of \
                     {input_len}: streams without a chunk would idle (use smaller chunks or fewer \
                     streams)",
                    cfg.streams
                ),
            });
        }
        let device_bytes = cfg
            .streams
            .checked_mul(chunk_elems + out_chunk_elems)
            .and_then(|e| e.checked_mul(std::mem::size_of::<f32>()))
            .ok_or_else(|| Error::TooLarge {
                kernel: NAME.into(),
                what: format!(
                    "{} streams × ({chunk_elems} + {out_chunk_elems}) f32 overflow usize",
                    cfg.streams
                ),
            })?;
        if device_bytes > device_free {
            return Err(Error::Pipeline {
                what: format!(
                    "{} streams × ({chunk_elems} + {out_chunk_elems}) f32 need {device_bytes} bytes of device \
                     memory, {device_free} are free: use smaller chunks or fewer streams (the batch \
                     itself never has to fit)",
                    cfg.streams
                ),
            });
        }
        Ok(Self {
            elems: input_len,
            chunk_elems,
            shrink,
            out_elems,
            out_chunk_elems,
            chunks,
            streams: cfg.streams,
            compute_reps: cfg.compute_reps,
            order: cfg.order,
            device_bytes,
        })
    }

    /// Output elements of a batch of `input_len` in chunks of `chunk_elems`, one output
    /// element per `shrink` input elements of each chunk (rounded up per chunk); 0 if any
    /// argument is 0.
    pub fn output_len(input_len: usize, chunk_elems: usize, shrink: usize) -> usize {
        if input_len == 0 || chunk_elems == 0 || shrink == 0 {
            return 0;
        }
        let chunk = chunk_elems.min(input_len);
        let full = input_len / chunk;
        let last = input_len % chunk;
        full * chunk.div_ceil(shrink) + last.div_ceil(shrink)
    }

    /// Element range of chunk `i`.
    pub fn chunk(&self, i: usize) -> Range<usize> {
        let start = i * self.chunk_elems;
        start..(start + self.chunk_elems).min(self.elems)
    }

    /// Output element range of chunk `i`.
    pub fn out_chunk(&self, i: usize) -> Range<usize> {
        let start = i * self.out_chunk_elems;
        start..start + self.chunk(i).len().div_ceil(self.shrink)
    }

    /// The stream chunk `i` runs on.
    pub fn stream_of(&self, i: usize) -> usize {
        i % self.streams
    }

    /// Bytes of one full chunk.
    pub fn chunk_bytes(&self) -> usize {
        self.chunk_elems * std::mem::size_of::<f32>()
    }

    /// Bytes of one full chunk's output.
    pub fn out_chunk_bytes(&self) -> usize {
        self.out_chunk_elems * std::mem::size_of::<f32>()
    }
}

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
    full: PlannedCopy,
    tail: Option<PlannedCopy>,
}

impl<'g> Pipeline<'g> {
    /// Creates the streams and the `streams × 2` chunk buffers, and plans `work` for a full
    /// and (if any) the partial last chunk. [`Error::Pipeline`] if `plan` was made for another
    /// output length per chunk than `work` gives ([`PipelinePlan::for_work`]).
    pub fn new(gpu: &'g Gpu, plan: PipelinePlan, work: ChunkWork) -> Result<Self> {
        if plan.shrink != work.shrink() {
            return Err(Error::Pipeline {
                what: format!(
                    "the plan has one output element per {} input elements, {} has one per {} \
                     (plan it with PipelinePlan::for_work)",
                    plan.shrink,
                    work.name(),
                    work.shrink()
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
        let planned = |len| PlannedCopy::for_problem(gpu, work.kernel(), work.problem(len), c, oc);
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
        })
    }

    /// The plan.
    pub fn plan(&self) -> &PipelinePlan {
        &self.plan
    }

    /// Checks `output` against the CPU reference of the work on every chunk of `input`, bit
    /// for bit ([`Error::Mismatch`] names the first wrong chunk and element).
    pub fn verify(&self, input: &[f32], output: &[f32]) -> Result<()> {
        for chunk in 0..self.plan.chunks {
            let r = self.plan.chunk(chunk);
            let o = self.plan.out_chunk(chunk);
            let want: Vec<f32> = if self.plan.compute_reps == 0 {
                input[r.start..r.start + o.len()].to_vec()
            } else {
                self.work.problem(r.len()).reference(&input[r.clone()])
            };
            if let Some(i) = want
                .iter()
                .zip(&output[o.clone()])
                .position(|(w, g)| w.to_bits() != g.to_bits())
            {
                return Err(Error::Mismatch {
                    kernel: format!("{NAME} ({})", self.work.name()),
                    shape: format!(
                        "{} elements, {} streams",
                        self.plan.elems, self.plan.streams
                    ),
                    detail: format!(
                        "chunk {chunk}: first wrong output element at {} (got {}, expected {})",
                        o.start + i,
                        output[o.start + i],
                        want[i]
                    ),
                });
            }
        }
        Ok(())
    }

    /// Runs the batch `input` → `output` (`plan.elems` and `plan.out_elems` long, any
    /// [`HostKind`]).
    /// Returns after every stream has finished. From pageable memory the copies block the host
    /// thread, so the chunks serialise: that is what the study shows.
    ///
    /// [`HostKind`]: super::mem::HostKind
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
                // stream only; the launch is planned for this chunk's length.
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

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: usize = 1 << 30;

    fn cfg(chunk_elems: usize, streams: usize) -> PipelineConfig {
        PipelineConfig {
            chunk_elems,
            streams,
            compute_reps: 1,
            order: StageOrder::Free,
        }
    }

    #[test]
    fn chunks_cover_the_batch_with_a_short_tail() {
        let p = PipelinePlan::new(10, 10, &cfg(4, 3), GIB).unwrap();
        assert_eq!(p.chunks, 3);
        assert_eq!(p.chunk(0), 0..4);
        assert_eq!(p.chunk(2), 8..10);
        assert_eq!(p.stream_of(2), 2);
        assert_eq!(p.device_bytes, 3 * 2 * 4 * 4);
        // A chunk larger than the batch shrinks to it.
        let p = PipelinePlan::new(10, 10, &cfg(100, 1), GIB).unwrap();
        assert_eq!((p.chunks, p.chunk_elems), (1, 10));
    }

    #[test]
    fn zero_chunk_and_empty_batch_are_typed_errors() {
        let e = PipelinePlan::new(10, 10, &cfg(0, 1), GIB).unwrap_err();
        assert!(
            matches!(
                e,
                Error::ZeroSize {
                    what: "chunk elements",
                    ..
                }
            ),
            "{e}"
        );
        let e = PipelinePlan::new(0, 0, &cfg(4, 1), GIB).unwrap_err();
        assert!(
            matches!(
                e,
                Error::ZeroSize {
                    what: "batch elements",
                    ..
                }
            ),
            "{e}"
        );
        let e = PipelinePlan::new(10, 10, &cfg(4, 0), GIB).unwrap_err();
        assert!(matches!(e, Error::Pipeline { .. }), "{e}");
    }

    #[test]
    fn more_streams_than_chunks_is_a_typed_error() {
        let e = PipelinePlan::new(10, 10, &cfg(4, 4), GIB).unwrap_err();
        assert!(
            matches!(e, Error::Pipeline { ref what } if what.contains("4 streams but only 3 chunk")),
            "{e}"
        );
        assert!(PipelinePlan::new(12, 12, &cfg(4, 3), GIB).is_ok());
    }

    #[test]
    fn wrong_output_length_is_a_typed_error() {
        let e = PipelinePlan::new(10, 9, &cfg(4, 1), GIB).unwrap_err();
        assert!(
            matches!(
                e,
                Error::BufferLength {
                    buffer: "output",
                    got: 9,
                    need: 10,
                    ..
                }
            ),
            "{e}"
        );
    }

    #[test]
    fn a_batch_larger_than_device_memory_streams() {
        // 4 TiB of f32 through an "H200" with 141 GB free: the plan needs only the chunk
        // buffers, 4 streams × 2 × 32 MiB.
        let device_free = 141_000_000_000;
        let elems = 1usize << 40;
        let p = PipelinePlan::new(elems, elems, &cfg(1 << 23, 4), device_free).unwrap();
        assert_eq!(p.device_bytes, 256 << 20);
        assert_eq!(p.chunks, 1 << 17);
        assert!(p.elems * 4 > device_free);
        // Chunk buffers that cannot fit are refused with the numbers, not an allocation failure.
        let e = PipelinePlan::new(elems, elems, &cfg(1 << 34, 4), device_free).unwrap_err();
        assert!(
            matches!(e, Error::Pipeline { ref what } if what.contains("are free")),
            "{e}"
        );
    }

    #[test]
    fn a_shrinking_chunk_has_a_shorter_output() {
        // 10 elements in chunks of 4, one output per 3: ⌈4/3⌉ + ⌈4/3⌉ + ⌈2/3⌉ = 2 + 2 + 1.
        let p = PipelinePlan::with_shrink(10, 5, &cfg(4, 3), 3, GIB).unwrap();
        assert_eq!((p.out_chunk_elems, p.out_elems), (2, 5));
        assert_eq!(p.out_chunk(0), 0..2);
        assert_eq!(p.out_chunk(2), 4..5);
        assert_eq!(p.device_bytes, 3 * (4 + 2) * 4);
        let e = PipelinePlan::with_shrink(10, 10, &cfg(4, 3), 3, GIB).unwrap_err();
        assert!(
            matches!(
                e,
                Error::BufferLength {
                    buffer: "output",
                    got: 10,
                    need: 5,
                    ..
                }
            ),
            "{e}"
        );
        let e = PipelinePlan::with_shrink(10, 5, &cfg(4, 3), 0, GIB).unwrap_err();
        assert!(matches!(e, Error::ZeroSize { .. }), "{e}");
        // The gather's problem reads exactly the chunk: (n − 1) · stride + 1 ≤ len.
        let work = ChunkWork::Gather {
            kernel: crate::strided::BEST,
            stride: 8,
        };
        for len in [1, 7, 8, 9, 1 << 20, (1 << 20) + 3] {
            let (src, dst) = work.problem(len).lens();
            assert!(src <= len && dst == work.out_len(len), "{len}: {src} {dst}");
        }
        let p = PipelinePlan::for_work(1 << 20, 1 << 17, &cfg(1 << 16, 4), &work, GIB).unwrap();
        assert_eq!((p.chunks, p.out_chunk_elems), (16, 1 << 13));
    }

    #[test]
    fn byte_overflow_is_a_typed_error() {
        let e = PipelinePlan::new(usize::MAX, usize::MAX, &cfg(usize::MAX / 2, 2), usize::MAX)
            .unwrap_err();
        assert!(matches!(e, Error::TooLarge { .. }), "{e}");
    }
}
