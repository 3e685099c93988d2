//! The pipeline's configuration and its plan: stage order, chunking, streams, buffer sizes.

use super::*;

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

    pub(super) fn h2d(self) -> bool {
        self != StageOrder::Free
    }

    pub(super) fn compute(self) -> bool {
        matches!(self, StageOrder::H2dCompute | StageOrder::All)
    }

    pub(super) fn d2h(self) -> bool {
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
