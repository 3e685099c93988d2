//! Which kernels can run a problem on a back end, and which one the dispatcher picks.

use rustile_kernels::conv::v06_kmajor as kmajor;
use rustile_kernels::registry::{self, KernelInfo, Launch, Role};

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

/// Whether `record` is one of the `kmajor` configurations.
pub fn is_kmajor(record: &'static KernelInfo) -> bool {
    // By name: a `const` record has no single address across crates.
    record.family == kmajor::INFO.family && kmajor::CONFIGS.iter().any(|c| c.name == record.name)
}

/// Relative FMA issue rate of an SM running `warps` warps of a `kmajor` kernel (1 at 16).
/// A model (predictions in notes/conv-direct.md): the 8×8-per-lane loop needs ~4 warps per
/// scheduler to hide shared-memory latency and the barriers.
fn issue_rate(warps: u32) -> f64 {
    match warps {
        0 => 0.0,
        1..=4 => 0.35 * warps as f64 / 4.0,
        5..=8 => 0.35 + 0.30 * (warps - 4) as f64 / 4.0,
        9..=16 => 0.65 + 0.35 * (warps - 8) as f64 / 8.0,
        _ => 1.0,
    }
}

/// Estimated time of `p` with `kmajor` configuration `rec` on `sms` SMs (units: one 64-row
/// block tile at the full rate): the busiest SM's blocks, in rounds of as many as fit.
fn kmajor_estimate(p: &Problem, rec: &'static KernelInfo, sms: u32) -> Option<f64> {
    let Launch::Tiles { tile: (bm, bn), .. } = rec.launch else {
        return None;
    };
    let (m, n, _) = p.gemm_dims().ok()?;
    let tiles = (m as u64).div_ceil(bm as u64) * (n as u64).div_ceil(bn as u64);
    let per_sm = tiles.div_ceil(sms.max(1) as u64);
    let kg = rec.block.0 / (32 * kmajor::group_warps(bm));
    let cap = kmajor::blocks_per_sm(bm, kg).max(1) as u64;
    let warps = rec.block.0 / 32;
    let size = bm as f64 / 64.0;
    let (full, rem) = (per_sm / cap, per_sm % cap);
    let mut t = full as f64 * cap as f64 * size / issue_rate(cap as u32 * warps);
    if rem > 0 {
        t += rem as f64 * size / issue_rate(rem as u32 * warps);
    }
    Some(t)
}

/// The `kmajor` configuration that runs `p` on `sms` SMs: the least estimated time (ties to
/// the earlier of [`kmajor::CONFIGS`]).
pub fn kmajor_config(p: &Problem, sms: u32) -> &'static KernelInfo {
    let mut best: Option<(f64, &'static KernelInfo)> = None;
    for &rec in kmajor::CONFIGS.iter() {
        if let Some(t) = kmajor_estimate(p, rec, sms) {
            if best.is_none_or(|(bt, _)| t < bt * 0.97) {
                best = Some((t, rec));
            }
        }
    }
    best.map_or(&kmajor::INFO, |(_, r)| r)
}

/// The record that runs when `record` is asked for on `sms` SMs: the ladder's `kmajor` step
/// picks its configuration ([`kmajor_config`]); every other record (the named `kmajor_*`
/// configurations too) runs as itself.
pub fn resolve(record: &'static KernelInfo, p: &Problem, sms: u32) -> &'static KernelInfo {
    if record.family == kmajor::INFO.family && record.name == kmajor::INFO.name {
        kmajor_config(p, sms)
    } else {
        record
    }
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
