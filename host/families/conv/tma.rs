//! The TMA kernel's host side: tensor maps (im2col activations, tiled weights), the tile and
//! split choice and the launch. (Filled in with the `wgmma` step.)

use cudarc::driver::CudaStream;
use rustile_kernels::registry::KernelInfo;

use crate::error::{Error, Result};
use crate::gpu::Gpu;

use super::{kernel_label, Addrs, Problem};

/// Whether the TMA kernel `record` can describe `p` with its tensor maps.
pub fn supports(_p: &Problem, record: &'static KernelInfo) -> Result<()> {
    Err(Error::Unsupported {
        kernel: kernel_label(record),
        what: "not built yet".into(),
    })
}

/// Launches the TMA kernel `record` on `p`.
///
/// # Safety
/// The addresses are live allocations of `gpu`'s context holding `p`'s lengths.
pub unsafe fn launch(
    _gpu: &Gpu,
    _stream: &CudaStream,
    p: &Problem,
    record: &'static KernelInfo,
    _a: &Addrs,
    _opts: Option<()>,
) -> Result<()> {
    supports(p, record)
}
