//! The bench's baselines: cuDNN's fused convolution + bias + activation and its convolution
//! alone, in the same process (filled in with `cudnn`).

use crate::error::Result;
use crate::gpu::Gpu;

use super::bench::BaselineFn;
use super::Problem;

/// The baselines for `p` on `gpu`, each a launch on the bench's buffers.
pub fn baselines<'a>(_gpu: &'a Gpu, _p: &Problem) -> Result<Vec<(String, BaselineFn<'a>)>> {
    Ok(Vec::new())
}
