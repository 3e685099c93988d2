//! Which kernels can run a problem on a back end, and which one the dispatcher picks.

use rustile_kernels::conv::v06_kmajor as kmajor;
use rustile_kernels::registry::{self, KernelInfo, Role};

use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::ptx::Flavour;

use super::{entry, kernel_label, Problem};

/// Where a kernel would run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// The simulator (no sm_90a kernel).
    Simulator,
    /// A GPU that loaded the PTX flavour `flavour`.
    Gpu {
        /// Its PTX flavour.
        flavour: Flavour,
    },
}

impl Target {
    /// The target `backend` is.
    pub fn of(backend: &Backend) -> Self {
        match backend {
            Backend::Simulator(_) => Target::Simulator,
            Backend::Gpu(g) => Target::gpu(g),
        }
    }

    /// The target `gpu` is.
    pub fn gpu(gpu: &crate::gpu::Gpu) -> Self {
        Target::Gpu {
            flavour: gpu.flavour(),
        }
    }
}

/// Whether `record` can run `p` on `target`: an instantiation for the dtype and layout, the
/// back end (the simulator runs no TMA kernel; sm_90a kernels need compute capability 9.0),
/// the channel alignment its loads need, and the kernel's own limits.
pub fn runnable(target: Target, record: &'static KernelInfo, p: &Problem) -> Result<()> {
    let e = entry(record, p)?;
    let unsupported = |what: String| Error::Unsupported {
        kernel: kernel_label(record),
        what,
    };
    match target {
        Target::Simulator if e.sim.is_none() => {
            return Err(unsupported(
                "the simulator runs no sm_90a (wgmma/TMA) kernel".into(),
            ))
        }
        Target::Gpu { flavour } if !record.in_flavour(flavour == Flavour::Sm90a) => {
            return Err(unsupported(format!(
                "needs the sm_90a PTX flavour (compute capability 9.0); this GPU loads {}",
                flavour.name()
            )))
        }
        _ => {}
    }
    let row_bytes = p.c * p.dtype.bytes();
    if record.needs.align > 1 && !row_bytes.is_multiple_of(record.needs.align as usize) {
        return Err(unsupported(format!(
            "needs {}-byte channel rows: C = {} × {} bytes",
            record.needs.align,
            p.c,
            p.dtype.bytes()
        )));
    }
    if record.needs.tma {
        super::tma::supports(p, record)?;
    }
    if is_kmajor(record) {
        // The kernel's per-slot offsets `c·H·W + r·dil_h·W + s·dil_w` are 32-bit.
        let span = (p.c as u64) * (p.h as u64) * (p.w as u64);
        if span >= 1 << 31 {
            return Err(unsupported(format!(
                "C·H·W = {span} per image: the k-major kernels index an image with 32 bits"
            )));
        }
    }
    Ok(())
}

/// Whether `record` is the `kmajor` step.
pub fn is_kmajor(record: &'static KernelInfo) -> bool {
    // By name: a `const` record has no single address across crates.
    record.family == kmajor::INFO.family && record.name == kmajor::INFO.name
}

/// The family's ladder steps, most preferred last (registry order).
pub fn ladder() -> impl Iterator<Item = &'static KernelInfo> {
    registry::of(rustile_kernels::conv::FAMILY, Role::Ladder)
}

/// The kernel the dispatcher runs `p` with on `target`: the last ladder step (the registry
/// lists them slowest first) that can run it. [`Error::Unsupported`] naming the most preferred
/// kernel's reason when none can.
pub fn select(target: Target, p: &Problem) -> Result<&'static KernelInfo> {
    p.check()?;
    let mut first_err = None;
    for record in ladder().collect::<Vec<_>>().into_iter().rev() {
        match runnable(target, record, p) {
            Ok(()) => return Ok(record),
            Err(e) => {
                if first_err.is_none() && entry(record, p).is_ok() {
                    first_err = Some(e);
                }
            }
        }
    }
    Err(first_err.unwrap_or_else(|| Error::Unsupported {
        kernel: "conv".into(),
        what: format!("no kernel runs {}", p.label()),
    }))
}
