//! Host buffers of the three kinds a copy can start from (pageable, page-locked, page-locked
//! write-combined) and a raw device buffer that the multi-stream code owns outright.
//!
//! Why raw buffers: cudarc's `CudaSlice` records read/write events on every use so that
//! streams order themselves around it. That is the right default, but a pipeline that orders
//! its streams with its own events wants no hidden cross-stream waits, so these buffers hand
//! out plain device addresses and the pipeline proves its ordering itself.

use std::sync::Arc;

use cudarc::driver::sys::{self, CU_MEMHOSTALLOC_WRITECOMBINED};
use cudarc::driver::{result, CudaContext};

use crate::error::{DriverContext, Error, Result};

/// Where a host buffer's pages live.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum HostKind {
    /// Ordinary `Vec` memory: the driver copies it through a pinned staging buffer, and an
    /// "asynchronous" copy from it blocks the host.
    Pageable,
    /// Page-locked (`cuMemHostAlloc`, flags 0): the copy engines read it directly.
    Pinned,
    /// Page-locked and write-combined (`CU_MEMHOSTALLOC_WRITECOMBINED`): not cached by the CPU,
    /// so host writes stream out and host reads are very slow; DMA reads it like pinned memory.
    WriteCombined,
}

impl HostKind {
    /// All three kinds.
    pub const ALL: [HostKind; 3] = [
        HostKind::Pageable,
        HostKind::Pinned,
        HostKind::WriteCombined,
    ];

    /// Name in reports.
    pub fn name(self) -> &'static str {
        match self {
            HostKind::Pageable => "pageable",
            HostKind::Pinned => "pinned",
            HostKind::WriteCombined => "pinned write-combined",
        }
    }

    /// Whether a copy from or to this memory can overlap other work.
    pub fn is_page_locked(self) -> bool {
        !matches!(self, HostKind::Pageable)
    }
}

enum Storage<T> {
    Vec(Vec<T>),
    Locked {
        ptr: *mut T,
        len: usize,
        ctx: Arc<CudaContext>,
    },
}

/// A host buffer of `len` elements of `T`, of one [`HostKind`].
pub struct HostBuffer<T: Copy + Default> {
    kind: HostKind,
    storage: Storage<T>,
}

impl<T: Copy + Default> HostBuffer<T> {
    /// Allocates `len` elements, every one `T::default()` (the pages are written, so the first
    /// copy does not pay for page faults).
    ///
    /// Errors: [`Error::ZeroSize`] for `len == 0`, [`Error::TooLarge`] if the bytes overflow,
    /// [`Error::Driver`] if the driver cannot page-lock that much.
    pub fn new(ctx: &Arc<CudaContext>, kind: HostKind, len: usize) -> Result<Self> {
        let what = format!("{} host buffer", kind.name());
        if len == 0 {
            return Err(Error::ZeroSize {
                kernel: what,
                what: "elements",
            });
        }
        let bytes = len
            .checked_mul(std::mem::size_of::<T>())
            .ok_or_else(|| Error::TooLarge {
                kernel: what.clone(),
                what: format!("{len} elements overflow usize bytes"),
            })?;
        let storage = match kind {
            HostKind::Pageable => Storage::Vec(vec![T::default(); len]),
            HostKind::Pinned | HostKind::WriteCombined => {
                let flags = if kind == HostKind::WriteCombined {
                    CU_MEMHOSTALLOC_WRITECOMBINED
                } else {
                    0
                };
                ctx.bind_to_thread()
                    .during(|| "binding the context".into())?;
                // SAFETY: a plain allocation; the pointer is freed exactly once, in Drop.
                let ptr = unsafe { result::malloc_host(bytes, flags) }
                    .during(|| format!("page-locking {bytes} bytes ({what})"))?
                    as *mut T;
                Storage::Locked {
                    ptr,
                    len,
                    ctx: ctx.clone(),
                }
            }
        };
        let mut buf = Self { kind, storage };
        buf.as_mut_slice().fill(T::default());
        Ok(buf)
    }

    /// The kind.
    pub fn kind(&self) -> HostKind {
        self.kind
    }

    /// Elements.
    pub fn len(&self) -> usize {
        match &self.storage {
            Storage::Vec(v) => v.len(),
            Storage::Locked { len, .. } => *len,
        }
    }

    /// Whether it holds no elements (never: construction refuses 0).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes.
    pub fn bytes(&self) -> usize {
        self.len() * std::mem::size_of::<T>()
    }

    /// The elements.
    pub fn as_slice(&self) -> &[T] {
        match &self.storage {
            Storage::Vec(v) => v,
            // SAFETY: `ptr` came from cuMemHostAlloc for `len` elements, was initialised in
            // `new`, and lives until Drop.
            Storage::Locked { ptr, len, .. } => unsafe { std::slice::from_raw_parts(*ptr, *len) },
        }
    }

    /// The elements, mutable.
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        match &mut self.storage {
            Storage::Vec(v) => v,
            // SAFETY: as in `as_slice`; `&mut self` makes this the only reference.
            Storage::Locked { ptr, len, .. } => unsafe {
                std::slice::from_raw_parts_mut(*ptr, *len)
            },
        }
    }
}

impl<T: Copy + Default> Drop for HostBuffer<T> {
    fn drop(&mut self) {
        if let Storage::Locked { ptr, ctx, .. } = &self.storage {
            // A failed free cannot be reported from Drop; cudarc keeps the error on the
            // context (`record_err`).
            ctx.record_err(ctx.bind_to_thread());
            // SAFETY: `ptr` came from cuMemHostAlloc and is freed once. Every copy that used it
            // was synchronised by the code that issued it before the buffer could be dropped
            // (the pipeline and the studies synchronise before returning).
            ctx.record_err(unsafe { result::free_host(*ptr as *mut std::ffi::c_void) });
        }
    }
}

/// A device allocation made with `cuMemAlloc`, freed with `cuMemFree` on drop, addressed by
/// its raw device pointer.
pub struct DeviceBuffer {
    ptr: sys::CUdeviceptr,
    bytes: usize,
    ctx: Arc<CudaContext>,
}

impl DeviceBuffer {
    /// Allocates `bytes`, zero-filled (so a study that times a copy out of a buffer nothing
    /// wrote reads defined bytes: compute-sanitizer's initcheck found the bidirectional
    /// study's D2H source read uninitialised). Out of memory is [`Error::OutOfMemory`].
    pub fn new(ctx: &Arc<CudaContext>, bytes: usize, what: &str) -> Result<Self> {
        if bytes == 0 {
            return Err(Error::ZeroSize {
                kernel: what.to_string(),
                what: "bytes",
            });
        }
        ctx.bind_to_thread()
            .during(|| "binding the context".into())?;
        // SAFETY: a plain allocation, freed once in Drop (as `buf` below owns it from here);
        // it is zero-filled before anything else can see it.
        let ptr =
            unsafe { result::malloc_sync(bytes) }.map_err(|e| oom_or_driver(e, bytes, what))?;
        let buf = Self {
            ptr,
            bytes,
            ctx: ctx.clone(),
        };
        // SAFETY: `ptr` holds `bytes` (just allocated, owned by `buf`, freed in its Drop).
        unsafe { result::memset_d8_sync(buf.ptr, 0, bytes) }
            .during(|| format!("zero-filling {bytes} bytes for {what}"))?;
        // `cuMemsetD8` is asynchronous with respect to the host for device memory and runs on
        // the legacy default stream, which the pipeline's non-blocking streams do not wait
        // for: without this the zeros could land after a later copy into the buffer (racecheck
        // on the H200 caught a pipeline chunk read back as zeros).
        ctx.synchronize()
            .during(|| format!("waiting for the zero-fill of {what}"))?;
        Ok(buf)
    }

    /// The device address.
    pub fn ptr(&self) -> u64 {
        self.ptr
    }

    /// Bytes.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        self.ctx.record_err(self.ctx.bind_to_thread());
        // SAFETY: allocated by cuMemAlloc and freed once; cuMemFree waits for work using it.
        self.ctx.record_err(unsafe { result::free_sync(self.ptr) });
    }
}

/// `CUDA_ERROR_OUT_OF_MEMORY` as [`Error::OutOfMemory`], anything else as [`Error::Driver`].
pub(crate) fn oom_or_driver(e: cudarc::driver::DriverError, bytes: usize, what: &str) -> Error {
    if e.0 == sys::cudaError_enum::CUDA_ERROR_OUT_OF_MEMORY {
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
