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

mod config;
mod run;
mod verify;
mod work;
pub use config::*;
pub use run::*;
pub use verify::*;
pub use work::*;

const NAME: &str = "pipeline";

#[cfg(test)]
mod tests;

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
