//! A stream-ordered device memory pool (`cuMemPoolCreate` + `cuMemAllocFromPoolAsync` /
//! `cuMemFreeAsync`) with PyTorch-style memory statistics, and the study that times it
//! against allocating with `cuMemAlloc` / `cuMemFree` every iteration.
//!
//! The pool keeps freed memory reserved (release threshold = ∞), so an allocation after a
//! free of the same size on the same stream is a bookkeeping operation, not a driver call
//! that maps memory — and `cuMemFree`, which waits for the device, is never called.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use cudarc::driver::sys::{self, CUmemPool_attribute as Attr};
use cudarc::driver::{result, CudaContext, CudaStream};

use super::kernel::PlannedCopy;
use super::mem::{oom_or_driver, DeviceBuffer};
use crate::error::{DriverContext, Error, Result};
use crate::gpu::Gpu;
use crate::harness::Stats;

/// Allocation counters kept by the pool (pure bookkeeping, testable without a GPU).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Accounting {
    /// Bytes handed out and not yet freed.
    pub allocated: usize,
    /// Highest `allocated` seen.
    pub peak_allocated: usize,
    /// Allocations made.
    pub allocs: u64,
    /// Frees made.
    pub frees: u64,
}

impl Accounting {
    /// Records an allocation of `bytes`.
    pub fn on_alloc(&mut self, bytes: usize) {
        self.allocated += bytes;
        self.peak_allocated = self.peak_allocated.max(self.allocated);
        self.allocs += 1;
    }

    /// Records a free of `bytes`.
    pub fn on_free(&mut self, bytes: usize) {
        self.allocated = self.allocated.saturating_sub(bytes);
        self.frees += 1;
    }
}

/// A snapshot of the pool and the device, like PyTorch's `torch.cuda.memory_stats()`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct MemoryStats {
    /// Bytes allocated through the pool and not freed, current and peak; alloc/free counts.
    pub accounting: Accounting,
    /// Bytes the pool holds from the device (`CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT`).
    pub reserved: u64,
    /// Peak of `reserved` (`CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH`).
    pub peak_reserved: u64,
    /// Bytes of the reservation in use by allocations, as the driver counts it
    /// (`CU_MEMPOOL_ATTR_USED_MEM_CURRENT`; allocations are rounded up).
    pub used: u64,
    /// Free device memory (`cuMemGetInfo`).
    pub device_free: usize,
    /// Total device memory.
    pub device_total: usize,
}

fn mib(b: u64) -> String {
    format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64)
}

impl MemoryStats {
    /// A summary table in the spirit of `torch.cuda.memory_summary()`.
    pub fn summary(&self) -> String {
        let a = &self.accounting;
        format!(
            "| metric | current | peak |\n| --- | ---: | ---: |\n\
             | allocated (live pool allocations) | {} | {} |\n\
             | reserved (held by the pool) | {} | {} |\n\
             | used by the driver's count | {} | |\n\
             | allocations / frees | {} / {} | |\n\
             | device free / total | {} / {} | |\n",
            mib(a.allocated as u64),
            mib(a.peak_allocated as u64),
            mib(self.reserved),
            mib(self.peak_reserved),
            mib(self.used),
            a.allocs,
            a.frees,
            mib(self.device_free as u64),
            mib(self.device_total as u64)
        )
    }
}

/// A pool allocation: a device address and its size. Free it with [`StreamPool::free`];
/// dropping the pool releases whatever is left.
#[derive(Debug)]
pub struct PoolBuffer {
    ptr: u64,
    bytes: usize,
}

impl PoolBuffer {
    /// Device address (valid in stream order after the allocating call).
    pub fn ptr(&self) -> u64 {
        self.ptr
    }

    /// Bytes asked for.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

/// A device memory pool of its own (not the device's default pool, so its statistics count
/// only what goes through it).
pub struct StreamPool {
    ctx: Arc<CudaContext>,
    pool: sys::CUmemoryPool,
    live: HashMap<u64, usize>,
    acct: Accounting,
}

impl StreamPool {
    /// Creates a pool on `gpu`'s device that keeps freed memory reserved.
    pub fn new(gpu: &Gpu) -> Result<Self> {
        let ctx = gpu.context().clone();
        ctx.bind_to_thread()
            .during(|| "binding the context".into())?;
        // SAFETY: an all-zero CUmemPoolProps is the documented default; the fields set below
        // are the required ones (pinned device memory on this device).
        let mut props: sys::CUmemPoolProps = unsafe { std::mem::zeroed() };
        props.allocType = sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED;
        props.location.type_ = sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE;
        props.location.id = gpu.info().ordinal as i32;
        // SAFETY: props is valid for the call.
        let pool = unsafe { result::mem_pool::create(&props) }
            .during(|| "creating a memory pool".into())?;
        let this = Self {
            ctx,
            pool,
            live: HashMap::new(),
            acct: Accounting::default(),
        };
        let mut threshold = u64::MAX;
        // SAFETY: the release threshold is a u64 attribute.
        unsafe {
            result::mem_pool::set_attribute(
                pool,
                Attr::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                &mut threshold as *mut u64 as *mut _,
            )
        }
        .during(|| "setting the pool's release threshold".into())?;
        Ok(this)
    }

    /// Allocates `bytes` in stream order on `stream`.
    pub fn alloc(&mut self, bytes: usize, stream: &CudaStream) -> Result<PoolBuffer> {
        if bytes == 0 {
            return Err(Error::ZeroSize {
                kernel: "pool".into(),
                what: "bytes",
            });
        }
        self.ctx
            .bind_to_thread()
            .during(|| "binding the context".into())?;
        // SAFETY: pool and stream are valid (owned / borrowed). The memory is uninitialised;
        // it is reachable only through its raw address, i.e. through unsafe launches and
        // copies whose contracts cover what they read.
        let ptr = unsafe { result::mem_pool::alloc_async(self.pool, bytes, stream.cu_stream()) }
            .map_err(|e| oom_or_driver(e, bytes, "pool allocation"))?;
        self.live.insert(ptr, bytes);
        self.acct.on_alloc(bytes);
        Ok(PoolBuffer { ptr, bytes })
    }

    /// Frees in stream order on `stream`: the memory is reusable by later work on it.
    pub fn free(&mut self, buf: PoolBuffer, stream: &CudaStream) -> Result<()> {
        if self.live.remove(&buf.ptr).is_none() {
            return Err(Error::Usage(format!(
                "pool: {:#x} was not allocated by this pool (or was freed twice)",
                buf.ptr
            )));
        }
        self.ctx
            .bind_to_thread()
            .during(|| "binding the context".into())?;
        // SAFETY: `buf` came from this pool (in `live`) and is freed once (it is consumed).
        // Work using it could only be enqueued through unsafe launches and copies whose
        // contracts keep it alive until that work completes; the free is ordered after
        // everything already on `stream`.
        unsafe { result::free_async(buf.ptr, stream.cu_stream()) }
            .during(|| format!("freeing {} pool bytes", buf.bytes))?;
        self.acct.on_free(buf.bytes);
        Ok(())
    }

    /// Gives reserved memory back to the device until the pool holds at most `keep` bytes
    /// (memory of live allocations stays). Frees are stream-ordered: synchronise first for
    /// their memory to count as free.
    pub fn trim(&mut self, keep: usize) -> Result<()> {
        self.ctx
            .bind_to_thread()
            .during(|| "binding the context".into())?;
        // SAFETY: the pool is valid (owned); trimming only releases unused reservations.
        unsafe { result::mem_pool::trim_to(self.pool, keep) }
            .during(|| format!("trimming the pool to {keep} bytes"))
    }

    fn attr(&self, a: Attr) -> Result<u64> {
        let mut v = 0u64;
        // SAFETY: the reserved/used attributes are u64 (cuuint64_t).
        unsafe { result::mem_pool::get_attribute(self.pool, a, &mut v as *mut u64 as *mut _) }
            .during(|| format!("reading pool attribute {a:?}"))?;
        Ok(v)
    }

    /// The current statistics.
    pub fn stats(&self) -> Result<MemoryStats> {
        let (device_free, device_total) = self
            .ctx
            .mem_get_info()
            .during(|| "reading device memory".into())?;
        Ok(MemoryStats {
            accounting: self.acct,
            reserved: self.attr(Attr::CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)?,
            peak_reserved: self.attr(Attr::CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH)?,
            used: self.attr(Attr::CU_MEMPOOL_ATTR_USED_MEM_CURRENT)?,
            device_free,
            device_total,
        })
    }
}

impl Drop for StreamPool {
    fn drop(&mut self) {
        self.ctx.record_err(self.ctx.bind_to_thread());
        // SAFETY: created in `new`, destroyed once; outstanding allocations are released by
        // the driver when their frees complete.
        self.ctx
            .record_err(unsafe { result::mem_pool::destroy(self.pool) });
    }
}

/// One allocation strategy at one size.
#[derive(Clone, Debug, serde::Serialize)]
pub struct AllocRow {
    /// Strategy.
    pub method: String,
    /// Bytes per allocation.
    pub bytes: usize,
    /// Iterations (allocate, one small kernel writing the buffer, free) per repetition.
    pub iterations: usize,
    /// Wall time per iteration, median of repetitions, µs.
    pub us_per_iteration: f64,
}

/// The allocation study and the pool's statistics afterwards.
#[derive(Clone, Debug, serde::Serialize)]
pub struct AllocReport {
    /// Both strategies at every size.
    pub rows: Vec<AllocRow>,
    /// Pool statistics while three buffers of the largest size were live.
    pub stats_live: MemoryStats,
    /// Pool statistics after everything was freed.
    pub stats_after: MemoryStats,
}

/// Times, at each size, `iterations` × (allocate, launch the copy kernel into the buffer,
/// free), per iteration: `cuMemAlloc`/`cuMemFree` against the stream-ordered pool.
pub fn study(gpu: &Gpu, sizes: &[usize], iterations: usize, reps: usize) -> Result<AllocReport> {
    let ctx = gpu.context();
    let s = ctx.new_stream().during(|| "creating a stream".into())?;
    let n = 1024usize;
    let src = DeviceBuffer::new(ctx, n * 4, "allocation study source")?;
    let copy = PlannedCopy::new(gpu, crate::families::copy::BEST, n, n, n)?;
    let mut pool = StreamPool::new(gpu)?;
    let mut rows = Vec::new();
    let median_wall = |mut body: Box<dyn FnMut() -> Result<()> + '_>| -> Result<f64> {
        body()?;
        let mut samples = Vec::new();
        for _ in 0..reps.max(1) {
            let t = Instant::now();
            body()?;
            samples.push(t.elapsed().as_secs_f64() * 1e6 / iterations as f64);
        }
        Ok(Stats::from_samples(samples).median_ms)
    };
    for &bytes in sizes {
        if bytes < n * 4 {
            return Err(Error::Usage(format!(
                "allocation study: sizes must be at least {} bytes, got {bytes}",
                n * 4
            )));
        }
        let plain = median_wall(Box::new(|| {
            for _ in 0..iterations {
                let buf = DeviceBuffer::new(ctx, bytes, "per-iteration allocation")?;
                // SAFETY: both buffers hold ≥ n f32; `buf` is freed (Drop → cuMemFree, which
                // waits for the kernel) only after the launch.
                unsafe { copy.launch(&s, src.ptr(), buf.ptr()) }?;
                drop(buf);
            }
            s.synchronize().during(|| "allocation study".into())
        }))?;
        rows.push(AllocRow {
            method: "cuMemAlloc + cuMemFree every iteration".into(),
            bytes,
            iterations,
            us_per_iteration: plain,
        });
        let pooled = median_wall(Box::new(|| {
            for _ in 0..iterations {
                let buf = pool.alloc(bytes, &s)?;
                // SAFETY: the pool buffer holds ≥ n f32 and is freed after the kernel in
                // stream order.
                unsafe { copy.launch(&s, src.ptr(), buf.ptr()) }?;
                pool.free(buf, &s)?;
            }
            s.synchronize().during(|| "allocation study".into())
        }))?;
        rows.push(AllocRow {
            method: "stream-ordered pool (cuMemAllocFromPoolAsync + cuMemFreeAsync)".into(),
            bytes,
            iterations,
            us_per_iteration: pooled,
        });
    }
    let largest = sizes.iter().copied().max().unwrap_or(n * 4);
    let bufs = (0..3)
        .map(|_| pool.alloc(largest, &s))
        .collect::<Result<Vec<_>>>()?;
    s.synchronize().during(|| "pool statistics".into())?;
    let stats_live = pool.stats()?;
    for b in bufs {
        pool.free(b, &s)?;
    }
    s.synchronize().during(|| "pool statistics".into())?;
    let stats_after = pool.stats()?;
    Ok(AllocReport {
        rows,
        stats_live,
        stats_after,
    })
}

impl AllocReport {
    /// Markdown: the timing table and both statistics snapshots.
    pub fn markdown(&self) -> String {
        let mut s = String::from(
            "| allocation strategy | bytes | iterations | µs / iteration |\n| --- | ---: | ---: | ---: |\n",
        );
        for r in &self.rows {
            s += &format!(
                "| {} | {} | {} | **{:.2}** |\n",
                r.method,
                super::plot::size_label(r.bytes as f64),
                r.iterations,
                r.us_per_iteration
            );
        }
        s += "\nPool statistics with three of the largest buffers live:\n\n";
        s += &self.stats_live.summary();
        s += "\nAfter freeing them (the pool keeps its reservation for reuse):\n\n";
        s += &self.stats_after.summary();
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accounting_tracks_current_and_peak() {
        let mut a = Accounting::default();
        a.on_alloc(100);
        a.on_alloc(50);
        a.on_free(100);
        a.on_alloc(20);
        assert_eq!(a.allocated, 70);
        assert_eq!(a.peak_allocated, 150);
        assert_eq!((a.allocs, a.frees), (3, 1));
        a.on_free(1000); // never below zero
        assert_eq!(a.allocated, 0);
    }

    #[test]
    fn summary_names_every_metric() {
        let s = MemoryStats {
            accounting: Accounting {
                allocated: 1 << 20,
                peak_allocated: 3 << 20,
                allocs: 3,
                frees: 2,
            },
            reserved: 4 << 20,
            peak_reserved: 4 << 20,
            used: 1 << 20,
            device_free: 1 << 30,
            device_total: 2 << 30,
        }
        .summary();
        for want in [
            "allocated",
            "reserved",
            "peak",
            "1.0 MiB",
            "3.0 MiB",
            "3 / 2",
            "1024.0 MiB",
        ] {
            assert!(s.contains(want), "{want} missing from\n{s}");
        }
    }
}
