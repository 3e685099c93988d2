//! Host orchestration: how data gets to the card and whether copies overlap compute.
//!
//! - [`mem`]: pageable / pinned / write-combined host buffers, raw device buffers.
//! - [`transfer`]: H2D and D2H bandwidth against size for each host memory kind.
//! - [`kernel`]: a suite kernel or an SGEMM with resident weights, planned for any stream.
//! - [`pipeline`]: a batch in chunks through N streams, H2D → kernel → D2H, event-ordered.
//! - [`overlap`]: the pipeline at 1, 2, 3, 4 streams against its ideal; pageable for contrast.
//! - [`launch`]: per-kernel launch cost, plain vs CUDA graph replay; the cost of a sync.
//! - [`pool`]: a stream-ordered memory pool with memory statistics, vs allocating per iteration.
//! - [`timeline`]: per-stream spans as Chrome trace JSON and an SVG Gantt chart.
//! - [`cli`]: the `rustile transfer | overlap | launch | memory | orchestration` commands.

pub mod cli;
pub mod kernel;
pub mod launch;
pub mod mem;
pub mod overlap;
pub mod pipeline;
pub mod plot;
pub mod pool;
pub mod timeline;
pub mod transfer;

pub use kernel::{PlannedGemm, PlannedWork, ResidentWeights};
pub use mem::{DeviceBuffer, HostBuffer, HostKind};
pub use pipeline::{
    ChunkWork, OutShape, Pipeline, PipelineConfig, PipelinePlan, PipelineRun, StageOrder,
    Verification,
};
pub use pool::{MemoryStats, StreamPool};

/// Two timing events (start, end) on `ctx`, for one timed repetition.
pub(crate) fn event_pair(
    ctx: &std::sync::Arc<cudarc::driver::CudaContext>,
) -> crate::error::Result<(cudarc::driver::CudaEvent, cudarc::driver::CudaEvent)> {
    use crate::error::DriverContext;
    use cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT;
    let event = || {
        ctx.new_event(Some(CU_EVENT_DEFAULT))
            .during(|| "creating an event".into())
    };
    Ok((event()?, event()?))
}
pub use timeline::{Span, Stage, Timeline};
