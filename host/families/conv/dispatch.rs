//! Which kernels can run a problem on a back end, and which one the dispatcher picks.

use rustile_kernels::registry::{self, KernelInfo, Role};

use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::ptx::Flavour;

use super::{entry, kernel_label, Problem};

/// Whether `record` can run `p` on `backend`: an instantiation for the dtype and layout, the
/// back end (the simulator runs no TMA kernel; sm_90a kernels need compute capability 9.0),
/// the channel alignment its loads need, and the kernel's own limits.
pub fn runnable(backend: &Backend, record: &'static KernelInfo, p: &Problem) -> Result<()> {
    let e = entry(record, p)?;
    let unsupported = |what: String| Error::Unsupported {
        kernel: kernel_label(record),
        what,
    };
    match backend {
        Backend::Simulator(_) if e.sim.is_none() => {
            return Err(unsupported(
                "the simulator runs no sm_90a (wgmma/TMA) kernel".into(),
            ))
        }
        Backend::Gpu(g) if !record.in_flavour(g.flavour() == Flavour::Sm90a) => {
            return Err(unsupported(format!(
                "needs the sm_90a PTX flavour (compute capability 9.0); {} loads {}",
                g.info().name,
                g.flavour().name()
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
    Ok(())
}

/// The family's ladder steps, most preferred last (registry order).
pub fn ladder() -> impl Iterator<Item = &'static KernelInfo> {
    registry::of(rustile_kernels::conv::FAMILY, Role::Ladder)
}

/// The kernel the dispatcher runs `p` with on `backend`: the last ladder step (the registry
/// lists them slowest first) that can run it, never the naive study steps when a faster one
/// can. [`Error::Unsupported`] naming the most preferred kernel's reason when none can.
pub fn select(backend: &Backend, p: &Problem) -> Result<&'static KernelInfo> {
    p.check()?;
    let mut first_err = None;
    for record in ladder().collect::<Vec<_>>().into_iter().rev() {
        match runnable(backend, record, p) {
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
