//! Launch plans of the kernels that take the family's common arguments (every step but the
//! TMA one): `x, w, bias, y` and the packed geometry, over a grid of the record's tiles of the
//! implicit GEMM's `N·P·Q × K` output.

use rustile_kernels::registry::{Entry, KernelInfo, Launch};

use crate::error::{Error, Result};
use crate::launch::{Arg, LaunchPlan};

use super::Problem;

/// The grid limits every CUDA device has: `x < 2³¹`, `y, z ≤ 65535`.
pub const GRID_LIMITS: (u64, u64, u64) = (i32::MAX as u64, 65535, 65535);

/// Device addresses of one launch's buffers (`bias` 0: none).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Addrs {
    /// Activations.
    pub x: u64,
    /// Weights.
    pub w: u64,
    /// Bias (f32), or 0.
    pub bias: u64,
    /// Output.
    pub y: u64,
}

/// `conv/<variant>`.
pub fn kernel_label(record: &KernelInfo) -> String {
    format!("conv/{}", record.name)
}

/// The entry of `record` for `p`'s dtype and layout.
pub fn entry(record: &'static KernelInfo, p: &Problem) -> Result<&'static Entry> {
    record
        .entry_for(p.dtype, p.dtype, p.layout)
        .ok_or_else(|| Error::Unsupported {
            kernel: kernel_label(record),
            what: format!(
                "no {} {} instantiation",
                p.dtype.name(),
                super::layout_name(p.layout)
            ),
        })
}

/// The grid of `record` over `p`'s output.
pub fn grid(record: &'static KernelInfo, p: &Problem) -> Result<(u64, u64, u64)> {
    let (m, n, _) = p.gemm_dims()?;
    let grid = match record.launch {
        Launch::Tiles { .. } => record
            .launch
            .tile_grid(m as u64, n as u64)
            .unwrap_or((1, 1, 1)),
        other => {
            return Err(Error::Unsupported {
                kernel: kernel_label(record),
                what: format!("launch shape {other:?} is not the family's common tiled launch"),
            })
        }
    };
    let (lx, ly, lz) = GRID_LIMITS;
    if grid.0 > lx || grid.1 > ly || grid.2 > lz {
        return Err(Error::TooLarge {
            kernel: kernel_label(record),
            what: format!(
                "{}: grid {grid:?} exceeds the limits {GRID_LIMITS:?}",
                p.label()
            ),
        });
    }
    Ok(grid)
}

/// The one launch of a common-argument kernel `record` on `p` with buffers at `a`.
pub fn plan(p: &Problem, record: &'static KernelInfo, a: &Addrs) -> Result<LaunchPlan<'static>> {
    let entry = entry(record, p)?;
    let grid = grid(record, p)?;
    let mut args = vec![
        Arg::Ptr(a.x),
        Arg::Ptr(a.w),
        Arg::Ptr(a.bias),
        Arg::Ptr(a.y),
    ];
    args.extend(p.scalar_args()?.into_iter().map(Arg::U32));
    Ok(LaunchPlan::new(record, entry, grid, args))
}
