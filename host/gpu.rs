//! The device handle: context, stream, the PTX flavour (each kernel loaded on first use) and the
//! device's limits.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use cudarc::driver::sys::CUdevice_attribute as Attr;
use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, DeviceRepr, ValidAsZeroBits,
};
use cudarc::nvrtc::Ptx;

use crate::error::{DriverContext, Error, Result};
use crate::ptx::{self, Flavour};

/// What rustile knows about a device.
#[derive(Clone, Debug, serde::Serialize)]
pub struct DeviceInfo {
    /// Ordinal.
    pub ordinal: usize,
    /// Marketing name.
    pub name: String,
    /// Compute capability `(major, minor)`.
    pub compute_capability: (i32, i32),
    /// Streaming multiprocessors.
    pub sm_count: u32,
    /// L2 cache, bytes.
    pub l2_bytes: usize,
    /// Device memory, bytes.
    pub total_mem_bytes: usize,
    /// Shared memory per block without opt-in, bytes.
    pub shared_per_block: usize,
    /// Shared memory per block with opt-in, bytes.
    pub shared_per_block_optin: usize,
    /// Shared memory per SM, bytes.
    pub shared_per_sm: usize,
    /// Threads per block, maximum.
    pub max_threads_per_block: u32,
    /// Resident threads per SM, maximum (2048 on sm_80 and sm_90, 1536 on sm_86 and sm_89):
    /// `/ 32` is the warps that theoretical occupancy is a fraction of.
    pub max_threads_per_sm: u32,
    /// Grid size limits `(x, y, z)`.
    pub max_grid: (u32, u32, u32),
    /// Peak SM clock, kHz.
    pub sm_clock_khz: u32,
    /// Peak memory clock, kHz.
    pub mem_clock_khz: u32,
    /// Memory bus width, bits.
    pub mem_bus_bits: u32,
}

impl DeviceInfo {
    /// Theoretical DRAM bandwidth from the memory clock and bus width (double data rate),
    /// bytes/s. A lead, not a measurement: rustile reports ratios to `cuMemcpyDtoD` measured
    /// in the same process.
    pub fn theoretical_dram_bytes_per_s(&self) -> f64 {
        2.0 * self.mem_clock_khz as f64 * 1e3 * self.mem_bus_bits as f64 / 8.0
    }
}

/// A device with rustile's kernels loaded, and one stream everything is ordered on.
pub struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    flavour: Flavour,
    ptx_text: &'static str,
    info: DeviceInfo,
    functions: Mutex<HashMap<String, CudaFunction>>,
}

impl Gpu {
    /// Opens device `ordinal` and loads the PTX flavour for its compute capability.
    ///
    /// Errors: [`Error::NoDriver`] without a CUDA driver, [`Error::NoDevice`] without such a
    /// device, [`Error::UnsupportedComputeCapability`] below 8.0.
    pub fn new(ordinal: usize) -> Result<Self> {
        Self::open(ordinal, None)
    }

    /// Like [`Gpu::new`], but loads `ptx` (for testing how missing kernels are reported).
    pub fn with_ptx(ordinal: usize, ptx: &'static str) -> Result<Self> {
        Self::open(ordinal, Some(ptx))
    }

    /// rustile on the caller's stream (and so its context and device): every launch, upload
    /// and synchronisation of this handle is ordered on `stream`, after the caller's earlier
    /// work there. The PTX flavour is the one for the stream's device (sm_90a PTX on compute
    /// capability 9.0, sm_80 PTX elsewhere from 8.0), loaded kernel by kernel on first use
    /// into the stream's context.
    ///
    /// Errors: [`Error::UnsupportedComputeCapability`] below 8.0, [`Error::Driver`] when the
    /// device cannot be queried.
    ///
    /// ```no_run
    /// # fn main() -> rustile::Result<()> {
    /// use rustile::{CudaContext, Gpu};
    /// let ctx = CudaContext::new(0).map_err(|e| rustile::Error::driver("opening device 0", e))?;
    /// let stream = ctx.new_stream().map_err(|e| rustile::Error::driver("a stream", e))?;
    /// let gpu = Gpu::from_stream(stream.clone())?; // rustile's work now runs on `stream`
    /// # Ok(()) }
    /// ```
    pub fn from_stream(stream: Arc<CudaStream>) -> Result<Self> {
        let ctx = stream.context().clone();
        Self::on(ctx, stream, None)
    }

    /// rustile on the caller's context, ordered on its default stream: as
    /// [`Gpu::from_stream`]`(ctx.default_stream())`.
    pub fn from_context(ctx: Arc<CudaContext>) -> Result<Self> {
        let stream = ctx.default_stream();
        Self::on(ctx, stream, None)
    }

    fn open(ordinal: usize, ptx_override: Option<&'static str>) -> Result<Self> {
        // SAFETY: only probes whether the shared library can be opened.
        if !unsafe { cudarc::driver::sys::is_culib_present() } {
            return Err(Error::NoDriver);
        }
        cudarc::driver::result::init()
            .map_err(|e| Error::NoDevice(format!("the CUDA driver failed to initialise: {e}")))?;
        let count = CudaContext::device_count()
            .map_err(|e| Error::NoDevice(format!("cannot count devices: {e}")))?;
        if ordinal >= count.max(0) as usize {
            return Err(Error::NoDevice(format!(
                "device {ordinal} asked for, the driver reports {count} device(s)"
            )));
        }
        let ctx = CudaContext::new(ordinal)
            .during(|| format!("creating a context on device {ordinal}"))?;
        // The primary context is shared: after a device fault it stays faulted until every
        // handle on it is gone. Say so here rather than at the first launch.
        ctx.synchronize().during(|| {
            format!(
                "opening device {ordinal}: its primary context is still faulted from an \
                 earlier device fault (a handle from before it — a Gpu, buffer, stream, \
                 cuBLAS or cuDNN handle — is still alive)"
            )
        })?;
        let stream = ctx.default_stream();
        Self::on(ctx, stream, ptx_override)
    }

    /// The handle over `ctx` and `stream` (a stream of `ctx`), with the PTX flavour for the
    /// context's device.
    fn on(
        ctx: Arc<CudaContext>,
        stream: Arc<CudaStream>,
        ptx_override: Option<&'static str>,
    ) -> Result<Self> {
        let info = query_info(&ctx, ctx.ordinal())?;
        let (major, minor) = info.compute_capability;
        let flavour = Flavour::for_compute_capability(major, minor).ok_or_else(|| {
            Error::UnsupportedComputeCapability {
                device: info.name.clone(),
                major,
                minor,
            }
        })?;
        let ptx_text = ptx_override.unwrap_or(flavour.text());
        Ok(Self {
            ctx,
            stream,
            flavour,
            ptx_text,
            info,
            functions: Mutex::new(HashMap::new()),
        })
    }

    /// Device limits and identity.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// The PTX flavour loaded.
    pub fn flavour(&self) -> Flavour {
        self.flavour
    }

    /// The stream all of rustile's work on this handle is ordered on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// The context.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The kernel entry point `symbol`, or [`Error::MissingKernel`].
    pub fn function(&self, symbol: &str) -> Result<CudaFunction> {
        let mut cache = self.functions.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(f) = cache.get(symbol) {
            return Ok(f.clone());
        }
        if !ptx::has_entry(self.ptx_text, symbol) {
            return Err(Error::MissingKernel {
                symbol: symbol.to_string(),
                flavour: self.flavour.name(),
            });
        }
        // One module per kernel, loaded on first use: the driver JIT-compiles a module whole,
        // and the full PTX (every family, every instantiation) took ~25 s to load on the H200.
        let text =
            ptx::entry_module(self.ptx_text, symbol).ok_or_else(|| Error::MissingKernel {
                symbol: symbol.to_string(),
                flavour: self.flavour.name(),
            })?;
        let module = self
            .ctx
            .load_module(Ptx::from_src(text))
            .during(|| format!("loading kernel `{symbol}` ({} PTX)", self.flavour.name()))?;
        let f = module
            .load_function(symbol)
            .during(|| format!("looking up kernel `{symbol}`"))?;
        cache.insert(symbol.to_string(), f.clone());
        Ok(f)
    }

    /// Allocates `n` elements, zero-filled (the fill is ordered on the stream, before any
    /// later work there). Out of memory is [`Error::OutOfMemory`].
    pub fn alloc<T: DeviceRepr + ValidAsZeroBits>(
        &self,
        n: usize,
        what: &str,
    ) -> Result<CudaSlice<T>> {
        let bytes = alloc_bytes::<T>(n, what)?;
        self.stream
            .alloc_zeros::<T>(n)
            .map_err(|e| map_alloc_error(e, bytes, what))
    }

    /// Allocates `n` elements without initialising them (what [`Gpu::upload`] does before it
    /// overwrites every element). Out of memory is [`Error::OutOfMemory`].
    ///
    /// # Safety
    ///
    /// The memory holds whatever bytes were there before. The caller must write every element
    /// (an upload, a fill, a kernel that writes all of it) before anything reads it: a kernel,
    /// a download, a copy. For an element type with invalid bit patterns (`bool`) such a read
    /// is undefined behaviour; for any type it reads another allocation's leftovers.
    pub unsafe fn alloc_uninit<T: DeviceRepr>(&self, n: usize, what: &str) -> Result<CudaSlice<T>> {
        let bytes = alloc_bytes::<T>(n, what)?;
        // SAFETY: the caller's contract (every element written before it is read).
        unsafe { self.stream.alloc::<T>(n) }.map_err(|e| map_alloc_error(e, bytes, what))
    }

    /// Whether `bytes` could fit in the device's memory at all ([`Error::OutOfMemory`] when they
    /// exceed its total): what callers check before they build host data for device buffers.
    pub fn check_fits(&self, bytes: usize, what: &str) -> Result<()> {
        let total = self.info.total_mem_bytes;
        if bytes > total {
            return Err(Error::OutOfMemory {
                bytes,
                what: format!("{what} (the device has {total} bytes)"),
            });
        }
        Ok(())
    }

    /// Copies `host` to a new device buffer.
    pub fn upload<T: DeviceRepr>(&self, host: &[T], what: &str) -> Result<CudaSlice<T>> {
        // SAFETY: the copy below writes all `host.len()` elements before anything can read
        // them (it is ordered first on the stream; on error the buffer is dropped unread).
        let mut d = unsafe { self.alloc_uninit::<T>(host.len(), what)? };
        self.stream
            .memcpy_htod(host, &mut d)
            .during(|| format!("uploading {what}"))?;
        Ok(d)
    }

    /// Copies a device buffer back (and notes its digest in a [`crate::digest::recording`]).
    pub fn download<T: DeviceRepr + bytemuck::Pod + Default>(
        &self,
        d: &CudaSlice<T>,
        what: &str,
    ) -> Result<Vec<T>> {
        let mut host = vec![T::default(); d.len()];
        self.stream
            .memcpy_dtoh(d, &mut host)
            .during(|| format!("downloading {what}"))?;
        self.synchronize(what)?;
        crate::digest::note(bytemuck::cast_slice(&host));
        Ok(host)
    }

    /// Fills a device buffer with `value`.
    pub fn fill<T: DeviceRepr + Clone>(
        &self,
        d: &mut CudaSlice<T>,
        value: T,
        what: &str,
    ) -> Result<()> {
        let host = vec![value; d.len()];
        self.stream
            .memcpy_htod(&host, d)
            .during(|| format!("filling {what}"))?;
        self.synchronize(what)
    }

    /// Waits for all work on the stream; reports any asynchronous error (a trapped kernel).
    pub fn synchronize(&self, during: &str) -> Result<()> {
        self.stream
            .synchronize()
            .during(|| format!("synchronising after {during}"))
    }
}

/// Bytes of `n` elements of `T`, or [`Error::TooLarge`].
fn alloc_bytes<T>(n: usize, what: &str) -> Result<usize> {
    n.checked_mul(std::mem::size_of::<T>())
        .ok_or_else(|| Error::TooLarge {
            kernel: what.to_string(),
            what: format!(
                "{n} elements of {} bytes overflow usize",
                std::mem::size_of::<T>()
            ),
        })
}

fn map_alloc_error(e: cudarc::driver::DriverError, bytes: usize, what: &str) -> Error {
    use cudarc::driver::sys::cudaError_enum::CUDA_ERROR_OUT_OF_MEMORY;
    if e.0 == CUDA_ERROR_OUT_OF_MEMORY {
        Error::OutOfMemory {
            bytes,
            what: what.to_string(),
        }
    } else {
        Error::Driver {
            during: format!("allocating {bytes} bytes for {what}"),
            source: e,
        }
    }
}

fn query_info(ctx: &Arc<CudaContext>, ordinal: usize) -> Result<DeviceInfo> {
    let attr = |a: Attr| {
        ctx.attribute(a)
            .during(|| format!("reading device attribute {a:?}"))
    };
    let (major, minor) = ctx
        .compute_capability()
        .during(|| "reading the compute capability".into())?;
    Ok(DeviceInfo {
        ordinal,
        name: ctx.name().during(|| "reading the device name".into())?,
        compute_capability: (major, minor),
        sm_count: attr(Attr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32,
        l2_bytes: attr(Attr::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)? as usize,
        total_mem_bytes: ctx.total_mem().during(|| "reading total memory".into())?,
        shared_per_block: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)? as usize,
        shared_per_block_optin: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?
            as usize,
        shared_per_sm: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)?
            as usize,
        max_threads_per_block: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)? as u32,
        max_threads_per_sm: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)? as u32,
        max_grid: (
            attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)? as u32,
            attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)? as u32,
            attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)? as u32,
        ),
        sm_clock_khz: attr(Attr::CU_DEVICE_ATTRIBUTE_CLOCK_RATE)? as u32,
        mem_clock_khz: attr(Attr::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE)? as u32,
        mem_bus_bits: attr(Attr::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)? as u32,
    })
}
