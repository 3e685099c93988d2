//! One launch path: a family turns checked arguments into a [`LaunchPlan`] — kernel record,
//! entry, grid, block, dynamic shared bytes and typed arguments — and one call runs it on a
//! GPU stream ([`LaunchPlan::launch_on`]), in the simulator ([`LaunchPlan::simulate`]), or on
//! whichever [`Backend`] holds the buffers ([`LaunchPlan::run`]).
//!
//! The plan holds device addresses, not buffers: whoever builds it keeps the buffers (and, on
//! the GPU, cudarc's stream-ordering guards from `device_ptr`) alive until the launch is
//! enqueued. That is why the GPU launch is `unsafe`.

pub mod cluster;

use cudarc::driver::{CudaFunction, CudaStream, LaunchConfig, PushKernelArg};
use rustile_kernels::registry::{Entry, KernelInfo};

use crate::backend::Backend;
use crate::check::{self, kernel_name};
use crate::error::{DriverContext, Error, Result};
use crate::gpu::Gpu;
use crate::sim::{SimLaunch, Simulator};

/// One kernel parameter, typed as the kernel declares it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Arg {
    /// A pointer parameter: a device address (simulated address in the simulator).
    Ptr(u64),
    /// A `u32` parameter.
    U32(u32),
    /// A `u64` parameter.
    U64(u64),
    /// An `f32` parameter.
    F32(f32),
}

impl Arg {
    /// The argument widened to 64 bits, as the simulator's entries take it.
    pub fn widened(self) -> u64 {
        match self {
            Arg::Ptr(v) | Arg::U64(v) => v,
            Arg::U32(v) => v as u64,
            Arg::F32(v) => v.to_bits() as u64,
        }
    }
}

/// Kernel parameters laid out for a raw driver launch (`cuLaunchKernel`, `cuLaunchKernelEx`):
/// each argument's value at its declared width, and one pointer per parameter to it.
pub(crate) struct RawParams {
    wide: Vec<u64>,
    narrow: Vec<u32>,
    kinds: Vec<bool>,
}

impl RawParams {
    /// The values of `args` (8-byte pointers and `u64`s, 4-byte `u32`s and `f32`s).
    pub(crate) fn new(args: &[Arg]) -> Self {
        Self {
            wide: args.iter().map(|a| a.widened()).collect(),
            narrow: args.iter().map(|a| a.widened() as u32).collect(),
            kinds: args
                .iter()
                .map(|a| matches!(a, Arg::Ptr(_) | Arg::U64(_)))
                .collect(),
        }
    }

    /// One pointer per parameter, into `self` (valid while `self` is neither moved nor
    /// dropped): the driver's `kernelParams`.
    pub(crate) fn pointers(&mut self) -> Vec<*mut std::ffi::c_void> {
        let (wide, narrow) = (self.wide.as_mut_ptr(), self.narrow.as_mut_ptr());
        (0..self.kinds.len())
            // SAFETY: `i` is within both vectors (one entry per argument).
            .map(|i| unsafe {
                if self.kinds[i] {
                    wide.add(i).cast()
                } else {
                    narrow.add(i).cast()
                }
            })
            .collect()
    }
}

/// Everything one launch needs, built once by a family and run by any back end.
#[derive(Clone, Debug)]
pub struct LaunchPlan<'k> {
    /// The registry record.
    pub kernel: &'k KernelInfo,
    /// The instantiation (symbol, simulator entry).
    pub entry: &'k Entry,
    /// Blocks `(x, y, z)`.
    pub grid: (u64, u64, u64),
    /// Threads per block.
    pub block: (u32, u32, u32),
    /// Dynamic shared memory per block, bytes.
    pub shared_bytes: usize,
    /// The kernel's parameters, in order.
    pub args: Vec<Arg>,
}

impl<'k> LaunchPlan<'k> {
    /// A plan for `entry` of `kernel` with the record's block and shared bytes (for the entry's
    /// input type).
    pub fn new(
        kernel: &'k KernelInfo,
        entry: &'k Entry,
        grid: (u64, u64, u64),
        args: Vec<Arg>,
    ) -> Self {
        LaunchPlan {
            kernel,
            entry,
            grid,
            block: kernel.block,
            shared_bytes: kernel.shared_bytes(entry.dtype),
            args,
        }
    }

    /// `family/variant` of the plan's kernel.
    pub fn name(&self) -> String {
        kernel_name(self.kernel)
    }

    /// Enqueues the plan on `stream` of `gpu`'s context, after checking the grid, block and
    /// shared memory against the device's limits (and raising the kernel's dynamic shared
    /// memory limit when the plan needs more than the default).
    ///
    /// # Safety
    /// Every [`Arg::Ptr`] must be a live device allocation of `gpu`'s context holding what the
    /// kernel reads or writes for this plan's shape (the family's checks prove it), kept alive
    /// and not used conflictingly until the kernel has run on `stream`.
    pub unsafe fn launch_on(&self, gpu: &Gpu, stream: &CudaStream) -> Result<()> {
        let (f, mut cfg) = check::prepare_symbol(
            gpu,
            self.kernel,
            self.entry.symbol,
            self.grid,
            self.shared_bytes,
        )?;
        cfg.block_dim = self.block;
        // SAFETY: the caller's contract.
        unsafe { self.enqueue_with(&f, cfg, stream) }
    }

    /// Enqueues the plan with a function the caller already prepared for it (a `Prepared`
    /// product): no lookup, no attribute call per launch.
    ///
    /// # Safety
    /// As for [`LaunchPlan::launch_on`]; `f` is this plan's entry, with its dynamic shared
    /// memory limit already raised to `shared_bytes`, and the grid within the device's limits.
    pub unsafe fn enqueue(&self, f: &CudaFunction, stream: &CudaStream) -> Result<()> {
        let (gx, gy, gz) = self.grid;
        let cfg = LaunchConfig {
            grid_dim: (gx as u32, gy as u32, gz as u32),
            block_dim: self.block,
            shared_mem_bytes: self.shared_bytes as u32,
        };
        // SAFETY: the caller's contract.
        unsafe { self.enqueue_with(f, cfg, stream) }
    }

    unsafe fn enqueue_with(
        &self,
        f: &CudaFunction,
        cfg: LaunchConfig,
        stream: &CudaStream,
    ) -> Result<()> {
        let clustered = self.kernel.needs.cluster;
        if clustered > 1 {
            if !cfg.grid_dim.0.is_multiple_of(clustered) {
                return Err(Error::Usage(format!(
                    "launch of {}: a grid of {} blocks is not a whole number of clusters of {clustered}",
                    self.entry.symbol, cfg.grid_dim.0
                )));
            }
            // SAFETY: the caller's contract; the grid is whole clusters (checked).
            return unsafe { cluster::launch(f, stream, cfg, clustered, &self.args) }
                .map_err(|e| e.context(|| format!("launching {}", self.entry.symbol)));
        }
        let mut b = stream.launch_builder(f);
        for a in &self.args {
            match a {
                Arg::Ptr(v) | Arg::U64(v) => b.arg(v),
                Arg::U32(v) => b.arg(v),
                Arg::F32(v) => b.arg(v),
            };
        }
        // SAFETY: the caller's contract covers the pointers; the parameter list matches the
        // entry's signature because the family built it from the same kernel's declaration.
        unsafe { b.launch(cfg) }.during(|| format!("launching {}", self.entry.symbol))?;
        Ok(())
    }

    /// Runs the plan in the simulator (synchronously), with the same grid check as the GPU.
    pub fn simulate(&self, sim: &Simulator) -> Result<()> {
        let limit = sim.limits().max_grid;
        let (gx, gy, gz) = self.grid;
        if gx > limit.0 as u64 || gy > limit.1 as u64 || gz > limit.2 as u64 {
            return Err(Error::TooLarge {
                kernel: self.name(),
                what: format!("grid {:?} exceeds the device's limit {limit:?}", self.grid),
            });
        }
        let args: Vec<u64> = self.args.iter().map(|a| a.widened()).collect();
        let launch = SimLaunch {
            grid: (gx as u32, gy as u32, gz as u32),
            block: self.block,
            shared_bytes: self.shared_bytes,
        };
        sim.launch(&self.name(), self.entry.sim, &launch, &args)
    }

    /// Runs the plan on `backend`: enqueued on the GPU's default stream, or simulated.
    ///
    /// # Safety
    /// On the GPU, as for [`LaunchPlan::launch_on`]; in the simulator the addresses are checked
    /// by the simulator itself, so this is safe to call with any plan there.
    pub unsafe fn run(&self, backend: &Backend) -> Result<()> {
        match backend {
            // SAFETY: the caller's contract.
            Backend::Gpu(gpu) => unsafe { self.launch_on(gpu, gpu.stream()) },
            Backend::Simulator(sim) => self.simulate(sim),
        }
    }
}

#[cfg(test)]
mod raw_params_tests {
    use super::{Arg, RawParams};

    #[test]
    fn each_parameter_points_at_its_value_at_its_width() {
        let args = [
            Arg::Ptr(0x1234_5678_9abc),
            Arg::U32(7),
            Arg::F32(-1.5),
            Arg::U64(u64::MAX - 1),
        ];
        let mut raw = RawParams::new(&args);
        let p = raw.pointers();
        assert_eq!(p.len(), 4);
        // SAFETY: each pointer points into `raw`, alive and unmoved, at the argument's width.
        unsafe {
            assert_eq!(*(p[0] as *const u64), 0x1234_5678_9abc);
            assert_eq!(*(p[1] as *const u32), 7);
            assert_eq!(*(p[2] as *const f32), -1.5);
            assert_eq!(*(p[3] as *const u64), u64::MAX - 1);
        }
    }
}
