//! The host-side SIMT simulator: runs each kernel's own Rust source on the CPU, one logical
//! thread per GPU thread, and checks and measures every memory access.
//!
//! What it models:
//! - grids of blocks (run one block at a time), blocks of up to 1024 threads in warps of 32,
//!   each thread a stackful coroutine; real barrier semantics (every live thread of the block
//!   must reach the same `sync_threads`), warp collectives (`shfl_xor`, `shfl_idx`, `ballot`)
//!   that wait for all 32 lanes;
//! - global memory as the launch's allocations, each with unmapped gaps around it; the block's
//!   dynamic shared memory as an arena of exactly the launch's shared bytes.
//!
//! What it detects, each as [`Error::Sim`] naming the kernel, block, thread and address:
//! out-of-bounds or misaligned global accesses (against each allocation), shared accesses
//! outside the arena, barrier divergence (a thread exits, or waits at another barrier, while
//! others wait), warp-collective divergence, shared-memory races between two barriers
//! (write-write and read-write by different threads), global-memory races within a launch (two
//! threads' accesses to one address, one a write, that no barrier of their block and no
//! release/acquire between blocks orders: `shadow`), reads of global memory never written
//! since [`Simulator::alloc_uninit`], a thread that runs past a step budget without reaching a
//! barrier (a spin-wait: bounded, never a hang), traps and panics.
//!
//! What it measures ([`analysis`]): for each warp-wide global access, the 32-byte sectors
//! touched against the bytes requested; for each warp-wide shared access, the bank-conflict
//! degree. Accesses are grouped into warp instructions by (warp, source line, how many times
//! this lane has executed that line), which matches the hardware's grouping for converged code.
//!
//! What it does not model: timing, caches, the memory model's weaker orderings (everything is
//! sequentially consistent here), asynchronous proxies, and the Hopper-only primitives (wgmma,
//! TMA, clusters), which have no host implementation: a kernel using them cannot be simulated.
//!
//! Why [`Simulator::launch`] is safe with any arguments: pointers are simulated addresses that
//! the kernels pass to the hooks (`ld_global`, `st_shared`, …), which check them; nothing
//! dereferences them as host memory. One caveat lies in the kernels, not here: address
//! arithmetic written as `ptr.add(i)` (e.g. `strided::v01_gather`) is, on the host, pointer
//! arithmetic outside any Rust allocation — out of contract for `add` even though the result is
//! only handed to a hook; `wrapping_add` is the form that is defined for any address.

pub mod analysis;
mod block;
mod shadow;
pub mod sync;

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;

use rustile_kernels::registry::SimFn;

use crate::error::{Error, Result};
pub use analysis::Analysis;

/// Limits the simulated device enforces (those of an H200 by default).
#[derive(Clone, Copy, Debug)]
pub struct SimLimits {
    /// Threads per block.
    pub max_threads_per_block: u32,
    /// Dynamic shared memory per block, bytes.
    pub max_shared_per_block: usize,
    /// Grid limits.
    pub max_grid: (u32, u32, u32),
    /// SMs the simulated device reports (grid-stride kernels size their grid from it).
    pub sm_count: u32,
    /// Primitive calls one thread may make between two barriers before it is declared stuck.
    pub step_budget: u64,
    /// Simulated device memory, bytes: live allocations together may hold at most this much
    /// (each is host memory; a larger request is [`Error::OutOfMemory`], refused before any
    /// host memory is taken for it).
    pub max_memory_bytes: usize,
    /// Whether launches run the global-memory race detector (on by default; it takes 16 bytes
    /// of host memory per 2 bytes of each allocation a launch touches, for that launch).
    pub global_race_check: bool,
}

impl Default for SimLimits {
    fn default() -> Self {
        Self {
            max_threads_per_block: 1024,
            max_shared_per_block: 227 * 1024,
            max_grid: (i32::MAX as u32, 65535, 65535),
            sm_count: 132,
            step_budget: 10_000_000,
            max_memory_bytes: 4 << 30,
            global_race_check: true,
        }
    }
}

/// First simulated device address; allocations are placed above it with gaps between them.
const BASE_ADDR: u64 = 0x0000_7e00_0000_0000;
/// Unmapped bytes after every allocation, so overruns fault instead of landing elsewhere.
const GAP: u64 = 1 << 20;

pub(crate) struct Allocation {
    pub(crate) what: String,
    pub(crate) data: Vec<u8>,
    /// For an allocation made without initialisation: which bytes were written since (`None`:
    /// all of them).
    init: Option<shadow::InitBits>,
    /// The race detector's shadow, one [`shadow::Granule`] per 2 bytes, valid in launch
    /// `race_launch` only.
    race: Vec<shadow::Granule>,
    race_launch: u64,
}

/// Simulated device memory.
#[derive(Default)]
pub(crate) struct Memory {
    allocs: BTreeMap<u64, Allocation>,
    next: u64,
    /// Bytes held by `allocs`.
    used: usize,
    /// The launch in progress (from 1), whose race shadows are valid.
    launch: u64,
}

impl Memory {
    /// The allocation holding `[addr, addr + len)`, as (base, allocation), or why not.
    pub(crate) fn find(
        &self,
        addr: u64,
        len: usize,
    ) -> std::result::Result<(u64, &Allocation), String> {
        match self.allocs.range(..=addr).next_back() {
            Some((&base, a)) if addr + len as u64 <= base + a.data.len() as u64 => Ok((base, a)),
            Some((&base, a)) if addr < base + a.data.len() as u64 + GAP => Err(format!(
                "{len} bytes at {addr:#x} run past the end of `{}` ({} bytes at {base:#x}, by {} bytes)",
                a.what,
                a.data.len(),
                addr + len as u64 - (base + a.data.len() as u64)
            )),
            _ => Err(format!("{len} bytes at {addr:#x} are outside every allocation")),
        }
    }
}

/// A buffer in simulated device memory.
#[derive(Debug)]
pub struct SimBuf<T> {
    addr: u64,
    len: usize,
    _elem: std::marker::PhantomData<T>,
}

impl<T> SimBuf<T> {
    /// Elements.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether it holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Simulated device address.
    pub fn addr(&self) -> u64 {
        self.addr
    }
    /// A view of elements `[start, start + len)` (what a sub-slice of a device buffer is on the
    /// GPU: same memory, another address).
    pub fn view(&self, start: usize, len: usize) -> Option<SimBuf<T>> {
        (start.checked_add(len)? <= self.len).then(|| SimBuf {
            addr: self.addr + (start * std::mem::size_of::<T>()) as u64,
            len,
            _elem: std::marker::PhantomData,
        })
    }
}

/// A launch's shape.
#[derive(Clone, Copy, Debug)]
pub struct SimLaunch {
    /// Blocks.
    pub grid: (u32, u32, u32),
    /// Threads per block.
    pub block: (u32, u32, u32),
    /// Dynamic shared bytes per block.
    pub shared_bytes: usize,
}

/// The simulated GPU.
pub struct Simulator {
    limits: SimLimits,
    memory: RefCell<Memory>,
    analysis: RefCell<Option<Analysis>>,
    launches: Cell<u64>,
}

impl Default for Simulator {
    fn default() -> Self {
        Self::new(SimLimits::default())
    }
}

impl Simulator {
    /// A simulator with `limits`.
    pub fn new(limits: SimLimits) -> Self {
        Self {
            limits,
            memory: RefCell::new(Memory {
                allocs: BTreeMap::new(),
                next: BASE_ADDR,
                used: 0,
                launch: 0,
            }),
            analysis: RefCell::new(None),
            launches: Cell::new(0),
        }
    }

    /// The limits it enforces.
    pub fn limits(&self) -> &SimLimits {
        &self.limits
    }

    /// Kernel launches run so far.
    pub fn launches(&self) -> u64 {
        self.launches.get()
    }

    /// Bytes of simulated device memory the live allocations hold.
    pub fn used_bytes(&self) -> usize {
        self.memory.borrow().used
    }

    /// Whether `bytes` more fit in the simulated device memory
    /// ([`SimLimits::max_memory_bytes`] less what is allocated): [`Error::OutOfMemory`] if not.
    /// What a caller checks before it builds host data for buffers it will allocate here.
    pub fn check_fits(&self, bytes: usize, what: &str) -> Result<()> {
        let used = self.used_bytes();
        let limit = self.limits.max_memory_bytes;
        if bytes > limit.saturating_sub(used) {
            return Err(Error::OutOfMemory {
                bytes,
                what: format!(
                    "{what} (the simulator holds at most {limit} bytes, {used} of them in use)"
                ),
            });
        }
        Ok(())
    }

    /// Allocates `n` elements, zero-filled (what [`Gpu::alloc`](crate::gpu::Gpu::alloc) does).
    /// More than the simulated memory holds ([`Simulator::check_fits`]) is
    /// [`Error::OutOfMemory`].
    pub fn alloc<T>(&self, n: usize, what: &str) -> Result<SimBuf<T>> {
        self.alloc_filled(n, what, 0)
    }

    /// Allocates `n` elements without initialising them (what
    /// [`Gpu::alloc_uninit`](crate::gpu::Gpu::alloc_uninit) does, but defined here): every
    /// byte is `0xff` (NaN as f32, f16 and bf16), and a kernel that reads a byte of it before
    /// the host ([`Simulator::write`]) or a kernel wrote it fails with [`Error::Sim`] naming
    /// the buffer and offset. Safe, unlike the GPU's: nothing here is undefined.
    pub fn alloc_uninit<T>(&self, n: usize, what: &str) -> Result<SimBuf<T>> {
        self.alloc_filled(n, what, shadow::POISON)
    }

    fn alloc_filled<T>(&self, n: usize, what: &str, fill: u8) -> Result<SimBuf<T>> {
        let bytes = n
            .checked_mul(std::mem::size_of::<T>())
            .ok_or_else(|| Error::TooLarge {
                kernel: what.to_string(),
                what: format!("{n} elements overflow usize"),
            })?;
        self.check_fits(bytes, what)?;
        let host_oom = || Error::OutOfMemory {
            bytes,
            what: format!("{what} (simulator, host memory)"),
        };
        let init = match (fill, bytes) {
            (0, _) | (_, 0) => None,
            _ => Some(shadow::InitBits::new(bytes).ok_or_else(host_oom)?),
        };
        let mut mem = self.memory.borrow_mut();
        let addr = mem.next;
        let mut data = Vec::new();
        data.try_reserve_exact(bytes).map_err(|_| host_oom())?;
        data.resize(bytes, fill);
        mem.next = (addr + bytes as u64 + GAP).div_ceil(256) * 256;
        mem.used += bytes;
        mem.allocs.insert(
            addr,
            Allocation {
                what: what.to_string(),
                data,
                init,
                race: Vec::new(),
                race_launch: 0,
            },
        );
        Ok(SimBuf {
            addr,
            len: n,
            _elem: std::marker::PhantomData,
        })
    }

    /// Frees a buffer (and every view of it).
    pub fn free<T>(&self, buf: SimBuf<T>) {
        let mut mem = self.memory.borrow_mut();
        if let Some(a) = mem.allocs.remove(&buf.addr) {
            mem.used -= a.data.len();
        }
    }

    /// Copies `host` into `buf` (at most `buf`'s elements; more is [`Error::Usage`]). `T` is
    /// plain data ([`bytemuck::Pod`]: every byte pattern is a value, no padding), so its bytes
    /// can be copied as they are.
    pub fn write<T: bytemuck::Pod>(&self, buf: &SimBuf<T>, host: &[T]) -> Result<()> {
        if std::mem::size_of::<T>() == 0 {
            return Ok(());
        }
        if host.len() > buf.len {
            return Err(Error::Usage(format!(
                "simulator write: {} elements into a buffer of {}",
                host.len(),
                buf.len
            )));
        }
        let src: &[u8] = bytemuck::cast_slice(host);
        let mut mem = self.memory.borrow_mut();
        let (base, _) = mem
            .find(buf.addr, src.len())
            .map_err(|e| Error::Usage(format!("simulator write: {e}")))?;
        let a = mem.allocs.get_mut(&base).expect("found above");
        let off = (buf.addr - base) as usize;
        a.data[off..off + src.len()].copy_from_slice(src);
        a.mark_init(off, src.len());
        Ok(())
    }

    /// Copies `buf` out. `T` is plain data ([`bytemuck::Pod`]), so any bytes the kernel left
    /// there are a value of it.
    pub fn read<T: bytemuck::Pod>(&self, buf: &SimBuf<T>) -> Result<Vec<T>> {
        let mut out = vec![T::zeroed(); buf.len];
        if std::mem::size_of::<T>() == 0 {
            return Ok(out);
        }
        let dst: &mut [u8] = bytemuck::cast_slice_mut(out.as_mut_slice());
        let bytes = dst.len();
        let mem = self.memory.borrow();
        let (base, a) = mem
            .find(buf.addr, bytes)
            .map_err(|e| Error::Usage(format!("simulator read: {e}")))?;
        let off = (buf.addr - base) as usize;
        dst.copy_from_slice(&a.data[off..off + bytes]);
        crate::digest::note(dst);
        Ok(out)
    }

    /// Starts recording memory-access statistics for the following launches.
    pub fn start_analysis(&self) {
        *self.analysis.borrow_mut() = Some(Analysis::default());
    }

    /// Stops recording and returns what was recorded.
    pub fn take_analysis(&self) -> Option<Analysis> {
        self.analysis.borrow_mut().take()
    }

    /// Runs `entry` over `launch` with `args` (pointers as simulated addresses), one block at a
    /// time. The first error stops the launch and is returned.
    pub fn launch(
        &self,
        kernel: &str,
        entry: Option<SimFn>,
        launch: &SimLaunch,
        args: &[u64],
    ) -> Result<()> {
        let fail = |what: String| {
            Err(Error::Resource {
                kernel: kernel.to_string(),
                what,
            })
        };
        let Some(entry) = entry else {
            return Err(Error::Unsupported {
                kernel: kernel.to_string(),
                what: "this kernel exists only in the sm_90a flavour (wgmma, TMA); the simulator \
                       cannot run it"
                    .into(),
            });
        };
        let (bx, by, bz) = launch.block;
        let threads = bx as u64 * by as u64 * bz as u64;
        if threads == 0 || threads > self.limits.max_threads_per_block as u64 {
            return fail(format!(
                "{threads} threads per block: the simulated device takes 1..={}",
                self.limits.max_threads_per_block
            ));
        }
        if launch.shared_bytes > self.limits.max_shared_per_block {
            return fail(format!(
                "{} bytes of shared memory per block exceed the simulated device's {}",
                launch.shared_bytes, self.limits.max_shared_per_block
            ));
        }
        let (gx, gy, gz) = launch.grid;
        let (mx, my, mz) = self.limits.max_grid;
        if gx == 0 || gy == 0 || gz == 0 || gx > mx || gy > my || gz > mz {
            return fail(format!(
                "grid {:?} outside 1..={:?}",
                launch.grid, self.limits.max_grid
            ));
        }
        self.launches.set(self.launches.get() + 1);
        self.memory.borrow_mut().launch += 1;
        let mut runner = block::BlockRunner::new(kernel, entry, launch, args, &self.limits);
        let mut analysis = self.analysis.borrow_mut();
        let result = (|| -> Result<()> {
            for z in 0..gz {
                for y in 0..gy {
                    for x in 0..gx {
                        runner.run((x, y, z), &self.memory, analysis.as_mut())?;
                    }
                }
            }
            Ok(())
        })();
        self.memory.borrow_mut().end_launch();
        result
    }
}
