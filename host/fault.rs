//! Device faults on purpose, to test that they are recognised and survived.
//!
//! A kernel that traps or stores to an unmapped address leaves its context *faulted*: every
//! later call on it fails with the same error ([`crate::Error::is_device_fault`]). [`provoke`] runs
//! such a kernel — a few lines of hand-written PTX, JIT-compiled by the driver, never part
//! of rustile's kernels — so tests can check the error is reported as a fault and that the
//! process goes on after dropping its handles and opening a fresh [`Gpu`].

use cudarc::driver::{CudaContext, LaunchConfig, PushKernelArg};
use cudarc::nvrtc::Ptx;

use crate::error::{DriverContext, Result};
use crate::gpu::Gpu;

/// Which fault [`provoke`] causes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The PTX `trap` instruction (`CUDA_ERROR_LAUNCH_FAILED`).
    Trap,
    /// A store to address 16, which no allocation holds (`CUDA_ERROR_ILLEGAL_ADDRESS`).
    IllegalAddress,
}

const PTX: &str = "
.version 7.0
.target sm_80
.address_size 64
.visible .entry rustile_fault_trap()
{
    trap;
}
.visible .entry rustile_fault_store(.param .u64 addr)
{
    .reg .b64 %a;
    .reg .b32 %v;
    ld.param.u64 %a, [addr];
    mov.b32 %v, 1;
    st.global.u32 [%a], %v;
    ret;
}
";

/// Runs one block of one thread that causes `fault` on `gpu`'s context and waits for it.
/// Returns the driver's error — a device fault — as `Err`; after it every later call on this
/// `gpu` (and anything else on its context) fails. `Ok(())` would mean the fault did not
/// happen, which a test should treat as a failure.
///
/// Host memory is never touched: the context is lost, not the process. To go on, drop `gpu`
/// and everything made from it, then [`Gpu::new`] opens a fresh context.
pub fn provoke(gpu: &Gpu, fault: Fault) -> Result<()> {
    let module = gpu
        .context()
        .load_module(Ptx::from_src(PTX))
        .during(|| "loading the fault-provoking PTX".to_string())?;
    let cfg = LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (1, 1, 1),
        shared_mem_bytes: 0,
    };
    let stream = gpu.stream();
    match fault {
        Fault::Trap => {
            let f = module
                .load_function("rustile_fault_trap")
                .during(|| "looking up rustile_fault_trap".to_string())?;
            // SAFETY: the kernel takes no arguments and touches no memory; it traps.
            unsafe { stream.launch_builder(&f).launch(cfg) }
                .during(|| "launching rustile_fault_trap".to_string())?;
        }
        Fault::IllegalAddress => {
            let f = module
                .load_function("rustile_fault_store")
                .during(|| "looking up rustile_fault_store".to_string())?;
            let addr: u64 = 16;
            // SAFETY: the kernel's one argument is a u64 address, passed as one; the store
            // to it faults on the device (nothing is mapped at 16), never in host memory.
            unsafe { stream.launch_builder(&f).arg(&addr).launch(cfg) }
                .during(|| "launching rustile_fault_store".to_string())?;
        }
    }
    gpu.synchronize(match fault {
        Fault::Trap => "a kernel that traps",
        Fault::IllegalAddress => "a kernel that stores to address 16",
    })
}

/// A [`Gpu`] on device `ordinal` after a device fault, once the caller has dropped every
/// handle of the faulted context: first the device's primary context again ([`Gpu::new`],
/// which the driver re-creates when its last user is gone), and if the driver still holds
/// that one faulted, a context of rustile's own (`cuCtxCreate`), which no other user shares.
/// Errors: the last attempt's, with what the first gave in its text.
pub fn reopen(ordinal: usize) -> Result<Gpu> {
    let primary = match Gpu::new(ordinal) {
        Ok(gpu) => return Ok(gpu),
        Err(e) if e.is_device_fault() => e,
        Err(e) => return Err(e),
    };
    let ctx = CudaContext::new_non_primary(ordinal, 0).during(|| {
        format!("creating a context of rustile's own on device {ordinal} after the primary one stayed faulted ({primary})")
    })?;
    ctx.synchronize()
        .during(|| format!("a new context on device {ordinal} after a device fault"))?;
    Gpu::from_context(ctx)
}

/// Destroys device `ordinal`'s primary context with everything in it
/// (`cuDevicePrimaryCtxReset`), so the next [`Gpu::new`] gets a fresh one even if handles
/// of the faulted one are still alive.
///
/// # Safety
///
/// Nothing else in the process may use the primary context afterwards: every buffer,
/// stream, module, cuBLAS or cuDNN handle made on it is dangling, and using one (even
/// dropping it, which frees) passes a destroyed context's handle to the driver.
pub unsafe fn reset_primary(ordinal: usize) -> Result<()> {
    // SAFETY: the caller guarantees nothing uses the primary context any more; the ordinal
    // is a device index (the driver checks it).
    unsafe { cudarc::driver::sys::cuDevicePrimaryCtxReset_v2(ordinal as i32) }
        .result()
        .during(|| format!("resetting device {ordinal}'s primary context"))
}
