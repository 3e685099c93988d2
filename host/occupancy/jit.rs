//! One kernel entry JIT-compiled by the driver with a register cap: `cuModuleLoadDataEx` on the
//! entry's own PTX module (the text [`crate::Gpu::function`] loads) with
//! `CU_JIT_MAX_REGISTERS`, the JIT's info log captured, and what the driver made of it
//! (`cuFuncGetAttribute`: registers, local bytes per thread, static shared bytes) and its
//! occupancy (`cuOccupancyMaxActiveBlocksPerMultiprocessor`).
//!
//! cudarc 0.19's safe module loader takes no JIT options, so this holds the raw module and
//! function and unloads the module on drop.

use std::ffi::{c_uint, c_void, CString};

use cudarc::driver::sys::{self, CUfunction_attribute_enum as Attr, CUjit_option};
use cudarc::driver::CudaStream;

use crate::error::{DriverContext, Error, Result};
use crate::gpu::Gpu;
use crate::launch::LaunchPlan;

/// Bytes of the JIT's info and error logs.
const LOG_BYTES: usize = 16 * 1024;

/// A kernel entry loaded with a register cap.
pub struct JitKernel {
    module: sys::CUmodule,
    function: sys::CUfunction,
    ctx: std::sync::Arc<cudarc::driver::CudaContext>,
    /// The entry point.
    pub symbol: String,
    /// The cap asked for (`None`: the JIT's default, at most 255).
    pub max_registers: Option<u32>,
    /// Registers per thread the JIT allocated (`CU_FUNC_ATTRIBUTE_NUM_REGS`).
    pub registers: u32,
    /// Local memory per thread, bytes (`CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES`): spills and stack.
    pub local_bytes: u32,
    /// Static shared memory, bytes.
    pub static_shared: u32,
    /// The JIT's info log (ptxas's resource lines, spill stores and loads).
    pub info_log: String,
}

// SAFETY: the module and function handles are plain driver handles, usable from any thread
// once the context is bound (every method binds it).
unsafe impl Send for JitKernel {}

impl std::fmt::Debug for JitKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JitKernel")
            .field("symbol", &self.symbol)
            .field("max_registers", &self.max_registers)
            .field("registers", &self.registers)
            .field("local_bytes", &self.local_bytes)
            .finish()
    }
}

fn cstr_log(buf: &[u8]) -> String {
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).trim().to_string()
}

impl JitKernel {
    /// JIT-compiles `symbol` of `gpu`'s PTX flavour with at most `max_registers` registers per
    /// thread. Errors: [`Error::Usage`] for a cap outside 16..=255, [`Error::MissingKernel`]
    /// for an entry the flavour lacks, [`Error::Driver`] (with the JIT's error log) when the
    /// driver rejects it.
    pub fn load(gpu: &Gpu, symbol: &str, max_registers: Option<u32>) -> Result<Self> {
        if let Some(cap) = max_registers {
            if !(16..=255).contains(&cap) {
                return Err(Error::Usage(format!(
                    "register cap {cap} for `{symbol}`: must be 16..=255"
                )));
            }
        }
        let missing = || Error::MissingKernel {
            symbol: symbol.to_string(),
            flavour: gpu.flavour().name(),
        };
        let text = crate::ptx::entry_module(gpu.flavour().text(), symbol).ok_or_else(missing)?;
        let image = CString::new(text).map_err(|_| missing())?;
        let ctx = gpu.context().clone();
        ctx.bind_to_thread()
            .during(|| "binding the context".into())?;
        let mut info = vec![0u8; LOG_BYTES];
        let mut error = vec![0u8; LOG_BYTES];
        let mut options = vec![
            CUjit_option::CU_JIT_INFO_LOG_BUFFER,
            CUjit_option::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
            CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
            CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
            CUjit_option::CU_JIT_LOG_VERBOSE,
        ];
        // Option values are passed as pointer-sized words: buffers as pointers, integers
        // cast to pointers (the driver API's convention).
        let mut values: Vec<*mut c_void> = vec![
            info.as_mut_ptr().cast(),
            std::ptr::without_provenance_mut(LOG_BYTES),
            error.as_mut_ptr().cast(),
            std::ptr::without_provenance_mut(LOG_BYTES),
            std::ptr::without_provenance_mut(1),
        ];
        if let Some(cap) = max_registers {
            options.push(CUjit_option::CU_JIT_MAX_REGISTERS);
            values.push(std::ptr::without_provenance_mut(cap as usize));
        }
        let mut module: sys::CUmodule = std::ptr::null_mut();
        // SAFETY: `image` is a NUL-terminated PTX text alive for the call; `options` and
        // `values` have the same length; the log buffers are LOG_BYTES long and outlive the
        // call; `module` is a valid out-pointer.
        let r = unsafe {
            sys::cuModuleLoadDataEx(
                &mut module,
                image.as_ptr().cast(),
                options.len() as c_uint,
                options.as_mut_ptr(),
                values.as_mut_ptr(),
            )
        };
        r.result().during(|| {
            format!(
                "JIT-compiling `{symbol}` (max registers {max_registers:?}): {}",
                cstr_log(&error)
            )
        })?;
        let name = CString::new(symbol).map_err(|_| missing())?;
        let mut function: sys::CUfunction = std::ptr::null_mut();
        // SAFETY: `module` was just loaded; `name` is NUL-terminated.
        let found = unsafe { sys::cuModuleGetFunction(&mut function, module, name.as_ptr()) };
        let mut k = JitKernel {
            module,
            function,
            ctx,
            symbol: symbol.to_string(),
            max_registers,
            registers: 0,
            local_bytes: 0,
            static_shared: 0,
            info_log: cstr_log(&info),
        };
        // On error `k` drops here and unloads the module.
        found
            .result()
            .during(|| format!("looking up `{symbol}` in its JIT module"))?;
        k.registers = k.attribute(Attr::CU_FUNC_ATTRIBUTE_NUM_REGS)?;
        k.local_bytes = k.attribute(Attr::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)?;
        k.static_shared = k.attribute(Attr::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?;
        Ok(k)
    }

    fn attribute(&self, a: Attr) -> Result<u32> {
        let mut v: i32 = 0;
        // SAFETY: a live function of a loaded module; `v` is a valid out-pointer.
        unsafe { sys::cuFuncGetAttribute(&mut v, a, self.function) }
            .result()
            .during(|| format!("reading {a:?} of `{}`", self.symbol))?;
        Ok(v.max(0) as u32)
    }

    /// Allows `dynamic` bytes of dynamic shared memory per block (needed above 48 KiB).
    /// Errors: [`Error::Resource`] past the device's opt-in limit.
    pub fn allow_dynamic_shared(&self, gpu: &Gpu, dynamic: usize) -> Result<()> {
        let optin = gpu.info().shared_per_block_optin;
        if dynamic + self.static_shared as usize > optin {
            return Err(Error::Resource {
                kernel: self.symbol.clone(),
                what: format!(
                    "{dynamic} dynamic + {} static shared bytes exceed the device's {optin}",
                    self.static_shared
                ),
            });
        }
        self.ctx
            .bind_to_thread()
            .during(|| "binding the context".into())?;
        // SAFETY: a live function; the value is within the device's opt-in limit.
        unsafe {
            sys::cuFuncSetAttribute(
                self.function,
                Attr::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                dynamic as i32,
            )
        }
        .result()
        .during(|| format!("raising the dynamic shared memory of `{}`", self.symbol))
    }

    /// Resident blocks per SM the driver computes for `threads` threads and `dynamic` dynamic
    /// shared bytes per block.
    pub fn max_active_blocks(&self, threads: u32, dynamic: usize) -> Result<u32> {
        self.ctx
            .bind_to_thread()
            .during(|| "binding the context".into())?;
        let mut blocks: i32 = 0;
        // SAFETY: a live function; `blocks` is a valid out-pointer.
        unsafe {
            sys::cuOccupancyMaxActiveBlocksPerMultiprocessor(
                &mut blocks,
                self.function,
                threads as i32,
                dynamic,
            )
        }
        .result()
        .during(|| format!("the occupancy of `{}`", self.symbol))?;
        Ok(blocks.max(0) as u32)
    }

    /// Enqueues `plan` (its grid, block, dynamic shared bytes and arguments) with this
    /// function on `stream`.
    ///
    /// # Safety
    /// As for [`LaunchPlan::launch_on`]: every [`Arg::Ptr`](crate::launch::Arg::Ptr) a live allocation of `stream`'s
    /// context holding what the kernel touches for the plan's shape, its block the one the
    /// kernel is written for (or any, for a kernel that reads its block size), `plan.entry`
    /// this kernel's entry, and the dynamic shared bytes allowed ([`Self::allow_dynamic_shared`]).
    pub unsafe fn launch(&self, plan: &LaunchPlan<'_>, stream: &CudaStream) -> Result<()> {
        let (gx, gy, gz) = plan.grid;
        let (bx, by, bz) = plan.block;
        let too_big = |v: u64| v > u32::MAX as u64;
        let bad = too_big(gx) || too_big(gy) || too_big(gz) || too_big(plan.shared_bytes as u64);
        if bad || plan.entry.symbol != self.symbol {
            return Err(Error::Usage(format!(
                "launch of `{}`: plan for `{}` with grid {:?}",
                self.symbol, plan.entry.symbol, plan.grid
            )));
        }
        let mut values = crate::launch::RawParams::new(&plan.args);
        let mut params = values.pointers();
        self.ctx
            .bind_to_thread()
            .during(|| "binding the context".into())?;
        // SAFETY: the caller's contract; `params` points at values alive for the call, one per
        // kernel parameter, in the order and widths the entry declares.
        unsafe {
            sys::cuLaunchKernel(
                self.function,
                gx as u32,
                gy as u32,
                gz as u32,
                bx,
                by,
                bz,
                plan.shared_bytes as u32,
                stream.cu_stream(),
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        }
        .result()
        .during(|| format!("launching `{}` (JIT module)", self.symbol))
    }
}

impl Drop for JitKernel {
    fn drop(&mut self) {
        // Whatever was enqueued with the function finishes first.
        if self.ctx.bind_to_thread().is_ok() && self.ctx.synchronize().is_ok() {
            // SAFETY: the module this value loaded, unloaded once, with no work of it pending;
            // its function is not used after this.
            let _ = unsafe { sys::cuModuleUnload(self.module) };
        }
    }
}
