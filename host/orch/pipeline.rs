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

use super::kernel::{PlannedCopy, PlannedGemm, PlannedWork, ResidentWeights};
use super::mem::{DeviceBuffer, HostBuffer};
use super::timeline::{Span, Stage, Timeline};
use crate::error::{DriverContext, Error, Result};
use crate::families::copy::CopyProblem;
use crate::families::gemm::GemmProblem;
use crate::families::memory::Problem;
use crate::families::strided::StridedProblem;
use crate::families::transpose::TransposeProblem;
use crate::gpu::Gpu;

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
    /// `out = in · B`: the chunk is a block of rows of A (`len / k` rows × `k`), B (`k × n`)
    /// is resident on the device (uploaded once per [`Pipeline`], before any timing), one
    /// launch of the variant [`crate::families::gemm::dispatch`] picks; the output chunk is
    /// `rows × n`, so with `n < k` the D2H is `n / k` of the H2D.
    Gemm {
        /// Columns of A, rows of B.
        k: usize,
        /// Columns of B and of the output.
        n: usize,
    },
}

/// How long a chunk's output is: `⌈len · num / den⌉` for a chunk of `len` input elements,
/// where every chunk (and so the batch and the chunk size) is a multiple of `granule`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct OutShape {
    /// Output elements per `den` input elements.
    pub num: usize,
    /// See `num`.
    pub den: usize,
    /// Chunk lengths must be multiples of this (the row length of a GEMM's A; 1 otherwise).
    pub granule: usize,
}

impl OutShape {
    /// Output as long as the input.
    pub const SAME: OutShape = OutShape {
        num: 1,
        den: 1,
        granule: 1,
    };

    /// One output element per `stride` input elements (rounded up per chunk).
    pub fn shrink(stride: usize) -> Self {
        Self {
            num: 1,
            den: stride,
            granule: 1,
        }
    }

    /// Rows of `k` input elements, each giving `n` output elements.
    pub fn rows(k: usize, n: usize) -> Self {
        Self {
            num: n,
            den: k,
            granule: k,
        }
    }

    /// Output elements of a chunk of `len` input elements; `None` on overflow or `den = 0`.
    pub fn out_len(&self, len: usize) -> Option<usize> {
        if self.den == 0 {
            return None;
        }
        let o = (len as u128 * self.num as u128).div_ceil(self.den as u128);
        usize::try_from(o).ok()
    }
}

impl ChunkWork {
    /// The suite kernel; `None` for the SGEMM (its variant depends on the chunk's shape).
    pub fn suite_kernel(&self) -> Option<&'static KernelInfo> {
        match self {
            ChunkWork::Copy(k)
            | ChunkWork::Transpose { kernel: k, .. }
            | ChunkWork::Gather { kernel: k, .. } => Some(k),
            ChunkWork::Gemm { .. } => None,
        }
    }

    /// How a chunk's output length follows from its input length.
    pub fn out_shape(&self) -> OutShape {
        match *self {
            ChunkWork::Gather { stride, .. } => OutShape::shrink(stride.max(1)),
            ChunkWork::Gemm { k, n } => OutShape::rows(k, n),
            _ => OutShape::SAME,
        }
    }

    /// Output elements of a chunk of `len` input elements (`len` a multiple of the granule).
    pub fn out_len(&self, len: usize) -> usize {
        self.out_shape().out_len(len).unwrap_or(usize::MAX)
    }

    /// The suite problem for a chunk of `len` elements; `None` for the SGEMM.
    pub fn problem(&self, len: usize) -> Option<Problem> {
        Some(match *self {
            ChunkWork::Copy(_) => Problem::Copy(CopyProblem { n: len }),
            ChunkWork::Transpose { cols, .. } => {
                let (rows, cols) = if cols > 0 && len.is_multiple_of(cols) {
                    (len / cols, cols)
                } else {
                    (1, len)
                };
                Problem::Transpose(TransposeProblem { rows, cols })
            }
            ChunkWork::Gather { stride, .. } => Problem::Strided(StridedProblem {
                n: self.out_len(len),
                stride: stride.max(1),
            }),
            ChunkWork::Gemm { .. } => return None,
        })
    }

    /// The SGEMM of a chunk of `len` elements (`len / k` rows); `None` for suite kernels.
    pub fn gemm_problem(&self, len: usize) -> Option<GemmProblem> {
        match *self {
            ChunkWork::Gemm { k, n } if k > 0 => Some(GemmProblem::new(len / k, n, k)),
            _ => None,
        }
    }

    /// The resident weights the work needs (uploaded now), if any.
    pub fn weights(&self, gpu: &Gpu) -> Result<Option<ResidentWeights>> {
        match *self {
            ChunkWork::Gemm { k, n } => ResidentWeights::new(gpu, k, n).map(Some),
            _ => Ok(None),
        }
    }

    /// Plans the compute stage for a chunk of `len` elements between chunk buffers of
    /// `src_len` and `dst_len` elements (`weights` from [`ChunkWork::weights`]).
    pub fn plan(
        &self,
        gpu: &Gpu,
        len: usize,
        src_len: usize,
        dst_len: usize,
        weights: Option<&ResidentWeights>,
    ) -> Result<PlannedWork> {
        match (
            self.problem(len),
            self.suite_kernel(),
            self.gemm_problem(len),
        ) {
            (Some(problem), Some(kernel), _) => Ok(PlannedWork::Suite(PlannedCopy::for_problem(
                gpu, kernel, problem, src_len, dst_len,
            )?)),
            (_, _, Some(p)) => {
                let w =
                    weights
                        .filter(|w| w.shape() == (p.k, p.n))
                        .ok_or_else(|| Error::Pipeline {
                            what: format!(
                                "{} needs resident weights of {} × {}",
                                self.name(),
                                p.k,
                                p.n
                            ),
                        })?;
                Ok(PlannedWork::Gemm(PlannedGemm::new(
                    gpu,
                    p,
                    src_len,
                    w.ptr(),
                    w.host().len(),
                    dst_len,
                )?))
            }
            _ => Err(Error::Pipeline {
                what: format!("{self:?} has no problem"),
            }),
        }
    }

    /// `family/variant`, with the stride for a gather; `gemm K×N (resident B)` for the SGEMM.
    pub fn name(&self) -> String {
        match (self, self.suite_kernel()) {
            (ChunkWork::Gemm { k, n }, _) => format!("gemm ·B {k}×{n} (B resident)"),
            (ChunkWork::Gather { stride, .. }, Some(kernel)) => {
                format!("{} stride {stride}", crate::check::kernel_name(kernel))
            }
            (_, Some(kernel)) => crate::check::kernel_name(kernel),
            (_, None) => unreachable!("only the SGEMM has no suite kernel"),
        }
    }

    /// Whether the output is checked with a tolerance (the SGEMM) rather than bit for bit.
    pub fn is_gemm(&self) -> bool {
        matches!(self, ChunkWork::Gemm { .. })
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
    /// How each chunk's output length follows from its length.
    pub out_shape: OutShape,
    /// Elements of the output batch: the sum of every chunk's output.
    pub out_elems: usize,
    /// Output elements of a full chunk.
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
        Self::with_shape(input_len, output_len, cfg, OutShape::SAME, device_free)
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
        Self::with_shape(input_len, output_len, cfg, work.out_shape(), device_free)
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
        Self::with_shape(
            input_len,
            output_len,
            cfg,
            OutShape::shrink(shrink),
            device_free,
        )
    }

    /// As [`PipelinePlan::new`] where each chunk's output length is `shape`'s: also
    /// [`Error::Pipeline`] when the batch or the chunk is not a multiple of `shape.granule`
    /// (whole rows of a GEMM's A), or when a chunk sent straight back (0 compute launches)
    /// would need a longer output than its input buffer.
    pub fn with_shape(
        input_len: usize,
        output_len: usize,
        cfg: &PipelineConfig,
        shape: OutShape,
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
        if shape.den == 0 || shape.granule == 0 {
            return Err(zero("shrink (input elements per output element)"));
        }
        for (what, len) in [("batch", input_len), ("chunk", cfg.chunk_elems)] {
            if !len.is_multiple_of(shape.granule) {
                return Err(Error::Pipeline {
                    what: format!(
                        "a {what} of {len} elements is not a whole number of rows of {}",
                        shape.granule
                    ),
                });
            }
        }
        let too_large = || Error::TooLarge {
            kernel: NAME.into(),
            what: format!("the output of {input_len} elements ({shape:?}) overflows usize"),
        };
        let chunk_elems = cfg.chunk_elems.min(input_len);
        let chunks = input_len.div_ceil(chunk_elems);
        let out_chunk_elems = shape.out_len(chunk_elems).ok_or_else(too_large)?;
        let out_elems =
            Self::checked_output_len(input_len, chunk_elems, shape).ok_or_else(too_large)?;
        if cfg.compute_reps == 0 && out_chunk_elems > chunk_elems {
            return Err(Error::Pipeline {
                what: format!(
                    "0 compute launches send the input chunk back, but an output chunk of \
                     {out_chunk_elems} elements is longer than the input chunk of {chunk_elems}"
                ),
            });
        }
        if output_len != out_elems {
            return Err(Error::BufferLength {
                kernel: NAME.into(),
                buffer: "output",
                got: output_len,
                need: out_elems,
                shape: format!(
                    "batch of {input_len} elements in chunks of {chunk_elems}, {} output \
                     elements per {}",
                    shape.num, shape.den
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
            out_shape: shape,
            out_elems,
            out_chunk_elems,
            chunks,
            streams: cfg.streams,
            compute_reps: cfg.compute_reps,
            order: cfg.order,
            device_bytes,
        })
    }

    /// Output elements of a batch of `input_len` in chunks of `chunk_elems`, each chunk's
    /// output as `shape` says; 0 if any argument is 0 or the length overflows.
    pub fn output_len(input_len: usize, chunk_elems: usize, shape: OutShape) -> usize {
        Self::checked_output_len(input_len, chunk_elems, shape).unwrap_or(0)
    }

    fn checked_output_len(input_len: usize, chunk_elems: usize, shape: OutShape) -> Option<usize> {
        if input_len == 0 || chunk_elems == 0 || shape.den == 0 {
            return Some(0);
        }
        let chunk = chunk_elems.min(input_len);
        let full = input_len / chunk;
        let last = input_len % chunk;
        full.checked_mul(shape.out_len(chunk)?)?
            .checked_add(shape.out_len(last)?)
    }

    /// Element range of chunk `i`.
    pub fn chunk(&self, i: usize) -> Range<usize> {
        let start = i * self.chunk_elems;
        start..(start + self.chunk_elems).min(self.elems)
    }

    /// Output element range of chunk `i`.
    pub fn out_chunk(&self, i: usize) -> Range<usize> {
        let start = i * self.out_chunk_elems;
        let len = self.out_shape.out_len(self.chunk(i).len()).unwrap_or(0);
        start..start + len
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

/// What [`Pipeline::verify`] checked.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Verification {
    /// Bit for bit (suite kernels); otherwise within `tolerance`.
    pub exact: bool,
    /// Output elements compared with the reference.
    pub entries: usize,
    /// Largest per-chunk relative Frobenius error of the sampled entries (0 when exact).
    pub max_rel_error: f64,
    /// The bound (0 when exact).
    pub tolerance: f64,
}

impl Verification {
    /// One line for tables.
    pub fn describe(&self) -> String {
        if self.exact {
            format!(
                "bit-identical to the CPU reference ({} elements)",
                self.entries
            )
        } else {
            format!(
                "every element finite; {} sampled entries within relative error {:.2e} of a \
                 float64 reference (bound {:.2e} = 1e-6·√K)",
                self.entries, self.max_rel_error, self.tolerance
            )
        }
    }
}

/// Rows of a chunk whose every column [`gemm_sample_error`] checks: the first, the last and
/// one chosen by `seed`.
pub const GEMM_CHECK_ROWS: usize = 3;
/// Single (row, column) entries per chunk [`gemm_sample_error`] checks besides those rows.
pub const GEMM_CHECK_ENTRIES: usize = 32;

/// Relative Frobenius error `‖got − want‖ / ‖want‖` of sampled entries of `c = a · b` (`a`:
/// `rows × k`, `b`: `k × n`, `c`: `rows × n`, all row-major and tight) against a float64
/// reference: every column of [`GEMM_CHECK_ROWS`] rows and [`GEMM_CHECK_ENTRIES`] entries
/// spread by `seed`. Returns the error (∞ for NaN or a shape that does not fit) and the
/// entries compared.
pub fn gemm_sample_error(
    a: &[f32],
    b: &[f32],
    k: usize,
    n: usize,
    c: &[f32],
    seed: u64,
) -> (f64, usize) {
    if k == 0 || n == 0 || !a.len().is_multiple_of(k) || b.len() != k * n {
        return (f64::INFINITY, 0);
    }
    let rows = a.len() / k;
    if rows == 0 || c.len() != rows * n {
        return (f64::INFINITY, 0);
    }
    let mut h = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = |bound: usize| {
        // xorshift64*
        h ^= h >> 12;
        h ^= h << 25;
        h ^= h >> 27;
        (h.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as usize % bound
    };
    let (mut num, mut den, mut entries) = (0.0f64, 0.0f64, 0usize);
    let mut add = |got: f32, want: f64| {
        let g = got as f64;
        num += (g - want) * (g - want);
        den += want * want;
    };
    let mut sample_rows = vec![0, rows - 1, next(rows)];
    sample_rows.dedup();
    let mut acc = vec![0.0f64; n];
    for &i in &sample_rows {
        acc.fill(0.0);
        for (kk, &av) in a[i * k..(i + 1) * k].iter().enumerate() {
            let av = av as f64;
            for (o, &bv) in acc.iter_mut().zip(&b[kk * n..(kk + 1) * n]) {
                *o += av * bv as f64;
            }
        }
        for (j, &want) in acc.iter().enumerate() {
            add(c[i * n + j], want);
        }
        entries += n;
    }
    for _ in 0..GEMM_CHECK_ENTRIES {
        let (i, j) = (next(rows), next(n));
        let want: f64 = (0..k)
            .map(|kk| a[i * k + kk] as f64 * b[kk * n + j] as f64)
            .sum();
        add(c[i * n + j], want);
        entries += 1;
    }
    let e = num.sqrt() / den.sqrt().max(f64::MIN_POSITIVE);
    (if e.is_nan() { f64::INFINITY } else { e }, entries)
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
                max_rel_error: 0.0,
                tolerance: p.tolerance(),
            };
            for chunk in 0..self.plan.chunks {
                let (a, c) = (
                    &input[self.plan.chunk(chunk)],
                    &output[self.plan.out_chunk(chunk)],
                );
                let (err, entries) = gemm_sample_error(a, w.host(), p.k, p.n, c, chunk as u64);
                if err.is_nan() || err > v.tolerance {
                    return Err(mismatch(format!(
                        "chunk {chunk}: relative error {err:.3e} over {entries} sampled entries \
                         exceeds {:.3e}",
                        v.tolerance
                    )));
                }
                v.entries += entries;
                v.max_rel_error = v.max_rel_error.max(err);
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
            max_rel_error: 0.0,
            tolerance: 0.0,
        })
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
            kernel: crate::families::strided::BEST,
            stride: 8,
        };
        for len in [1, 7, 8, 9, 1 << 20, (1 << 20) + 3] {
            let (src, dst) = work.problem(len).unwrap().lens();
            assert!(src <= len && dst == work.out_len(len), "{len}: {src} {dst}");
        }
        let p = PipelinePlan::for_work(1 << 20, 1 << 17, &cfg(1 << 16, 4), &work, GIB).unwrap();
        assert_eq!((p.chunks, p.out_chunk_elems), (16, 1 << 13));
    }

    #[test]
    fn a_gemm_chunk_is_whole_rows_and_its_output_is_rows_times_n() {
        // K = 4096, N = 1280: 2048-row chunks of 32 MiB give 10 MiB outputs (D2H = 5/16 H2D).
        let work = ChunkWork::Gemm { k: 4096, n: 1280 };
        assert_eq!(work.out_shape(), OutShape::rows(4096, 1280));
        assert_eq!(work.out_len(2048 * 4096), 2048 * 1280);
        assert!(work.problem(4096).is_none() && work.suite_kernel().is_none());
        let g = work.gemm_problem(2048 * 4096).unwrap();
        assert_eq!(
            (g.m, g.n, g.k, g.lda, g.ldb, g.ldc),
            (2048, 1280, 4096, 4096, 1280, 1280)
        );
        let batch = 32 * 2048 * 4096;
        let c = cfg(2048 * 4096, 3);
        let out = PipelinePlan::output_len(batch, c.chunk_elems, work.out_shape());
        assert_eq!(out, 32 * 2048 * 1280);
        let p = PipelinePlan::for_work(batch, out, &c, &work, GIB << 4).unwrap();
        assert_eq!((p.chunks, p.out_chunk_elems), (32, 2048 * 1280));
        assert_eq!(p.out_chunk(31), 31 * 2048 * 1280..32 * 2048 * 1280);
        assert_eq!(p.device_bytes, 3 * (2048 * 4096 + 2048 * 1280) * 4);
        // A short last chunk of whole rows: 10 rows of K = 8 in chunks of 4 rows.
        let small = ChunkWork::Gemm { k: 8, n: 3 };
        let p = PipelinePlan::for_work(80, 30, &cfg(32, 3), &small, GIB).unwrap();
        assert_eq!((p.chunks, p.out_chunk(2)), (3, 24..30));
        // Not whole rows: the batch or the chunk.
        for (batch, chunk) in [(81, 32), (80, 30)] {
            let e = PipelinePlan::for_work(batch, 30, &cfg(chunk, 2), &small, GIB).unwrap_err();
            assert!(
                matches!(e, Error::Pipeline { ref what } if what.contains("whole number of rows")),
                "{e}"
            );
        }
        // N > K with 0 compute launches would read past the input chunk buffer.
        let wide = ChunkWork::Gemm { k: 4, n: 8 };
        let zero = PipelineConfig {
            compute_reps: 0,
            ..cfg(8, 1)
        };
        let e = PipelinePlan::for_work(16, 32, &zero, &wide, GIB).unwrap_err();
        assert!(matches!(e, Error::Pipeline { .. }), "{e}");
        assert!(PipelinePlan::for_work(16, 32, &cfg(8, 1), &wide, GIB).is_ok());
        assert_eq!(OutShape::shrink(0).out_len(5), None);
        assert!(work.name().starts_with("gemm") && work.is_gemm());
    }

    /// Naive f32 `a · b` (row-major), as a GPU SGEMM would give within rounding.
    fn sgemm_f32(a: &[f32], b: &[f32], k: usize, n: usize) -> Vec<f32> {
        let rows = a.len() / k;
        let mut c = vec![0.0f32; rows * n];
        for i in 0..rows {
            for kk in 0..k {
                for j in 0..n {
                    c[i * n + j] = a[i * k + kk].mul_add(b[kk * n + j], c[i * n + j]);
                }
            }
        }
        c
    }

    #[test]
    fn gemm_sampling_accepts_f32_rounding_and_catches_one_wrong_entry() {
        let (rows, k, n) = (37, 300, 20);
        let mut a = vec![0.0f32; rows * k];
        let mut b = vec![0.0f32; k * n];
        crate::orch::overlap::fill_pattern(&mut a, 3);
        crate::orch::overlap::fill_pattern(&mut b, 4);
        b.iter_mut().for_each(|v| *v -= 1.5);
        let c = sgemm_f32(&a, &b, k, n);
        let tol = GemmProblem::new(rows, n, k).tolerance();
        let (err, entries) = gemm_sample_error(&a, &b, k, n, &c, 9);
        assert!(err > 0.0 && err < tol / 10.0, "{err} vs {tol}");
        assert_eq!(entries, GEMM_CHECK_ROWS * n + GEMM_CHECK_ENTRIES);
        // One wrong entry in a checked row (the first and last rows are always checked).
        for at in [3, (rows - 1) * n + 7] {
            let mut bad = c.clone();
            bad[at] += 0.5;
            assert!(gemm_sample_error(&a, &b, k, n, &bad, 9).0 > tol, "{at}");
        }
        let mut nan = c.clone();
        nan[n] = f32::NAN; // row 1: maybe unsampled, but NaN anywhere sampled is infinite
        let (e, _) = gemm_sample_error(&a, &b, k, n, &nan, 9);
        assert!(e.is_infinite() || e < tol);
        // Shapes that do not fit.
        assert!(gemm_sample_error(&a, &b, k, n, &c[1..], 9).0.is_infinite());
        assert!(gemm_sample_error(&a[1..], &b, k, n, &c, 9).0.is_infinite());
        // A one-row chunk: the three rows are one.
        let (e, m) = gemm_sample_error(&a[..k], &b, k, n, &c[..n], 1);
        assert!(e < tol && m == n + GEMM_CHECK_ENTRIES, "{e} {m}");
    }

    #[test]
    fn byte_overflow_is_a_typed_error() {
        let e = PipelinePlan::new(usize::MAX, usize::MAX, &cfg(usize::MAX / 2, 2), usize::MAX)
            .unwrap_err();
        assert!(matches!(e, Error::TooLarge { .. }), "{e}");
    }
}
