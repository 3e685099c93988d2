//! One launch API, two back ends: the same registry, launch plans and arguments run on the GPU
//! or in the simulator.

use cudarc::driver::{CudaSlice, DeviceRepr};

use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::sim::{SimBuf, Simulator};

/// Where kernels run.
pub enum Backend {
    /// An NVIDIA GPU through the CUDA driver.
    Gpu(Gpu),
    /// rustile's host-side SIMT simulator.
    Simulator(Simulator),
}

/// A device buffer of either back end.
pub enum Buf<T> {
    /// GPU memory.
    Gpu(CudaSlice<T>),
    /// Simulated device memory.
    Sim(SimBuf<T>),
}

impl<T> Buf<T> {
    /// Elements.
    pub fn len(&self) -> usize {
        match self {
            Buf::Gpu(b) => b.len(),
            Buf::Sim(b) => b.len(),
        }
    }

    /// Whether it holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn mixed() -> Error {
    Error::Usage("a buffer of one back end was passed to the other".into())
}

impl Backend {
    /// The GPU if there is one, else the simulator; the second value says why there is no GPU.
    pub fn gpu_or_simulator() -> Result<(Backend, Option<Error>)> {
        match Gpu::new(0) {
            Ok(gpu) => Ok((Backend::Gpu(gpu), None)),
            Err(e @ (Error::NoDriver | Error::NoDevice(_))) => {
                Ok((Backend::Simulator(Simulator::default()), Some(e)))
            }
            Err(e) => Err(e),
        }
    }

    /// What runs the kernels, in words.
    pub fn name(&self) -> String {
        match self {
            Backend::Gpu(g) => g.info().name.clone(),
            Backend::Simulator(_) => "the simulator".into(),
        }
    }

    /// SMs (grid-stride kernels size their grid from it).
    pub fn sm_count(&self) -> u32 {
        match self {
            Backend::Gpu(g) => g.info().sm_count,
            Backend::Simulator(s) => s.limits().sm_count,
        }
    }

    /// Whether `bytes` (what a case will allocate, all buffers together) can fit: the device's
    /// total memory, or the simulator's [`SimLimits::max_memory_bytes`](crate::sim::SimLimits)
    /// less what it holds. [`Error::OutOfMemory`] if not — checked before any host data is
    /// built for the buffers.
    pub fn check_fits(&self, bytes: usize, what: &str) -> Result<()> {
        match self {
            Backend::Gpu(g) => g.check_fits(bytes, what),
            Backend::Simulator(s) => s.check_fits(bytes, what),
        }
    }

    /// A new buffer holding `host` (allocated without initialisation, then written: every byte
    /// is, on either back end).
    pub fn upload<T: DeviceRepr + bytemuck::Pod + Default>(
        &self,
        host: &[T],
        what: &str,
    ) -> Result<Buf<T>> {
        match self {
            Backend::Gpu(g) => g.upload(host, what).map(Buf::Gpu),
            Backend::Simulator(s) => {
                let b = s.alloc_uninit::<T>(host.len(), what)?;
                s.write(&b, host)?;
                Ok(Buf::Sim(b))
            }
        }
    }

    /// A new buffer of `n` elements, each `value`.
    pub fn filled<T: DeviceRepr + bytemuck::Pod + Default>(
        &self,
        n: usize,
        value: T,
        what: &str,
    ) -> Result<Buf<T>> {
        self.upload(&vec![value; n], what)
    }

    /// The buffer's contents (waits for the work before it).
    pub fn download<T: DeviceRepr + bytemuck::Pod + Default>(
        &self,
        buf: &Buf<T>,
        what: &str,
    ) -> Result<Vec<T>> {
        match (self, buf) {
            (Backend::Gpu(g), Buf::Gpu(b)) => g.download(b, what),
            (Backend::Simulator(s), Buf::Sim(b)) => s.read(b),
            _ => Err(mixed()),
        }
    }

    /// Waits for all launched work.
    pub fn synchronize(&self, during: &str) -> Result<()> {
        match self {
            Backend::Gpu(g) => g.synchronize(during),
            Backend::Simulator(_) => Ok(()),
        }
    }

    pub(crate) fn pair<'a, T>(&self, src: &'a Buf<T>, dst: &'a mut Buf<T>) -> Result<Pair<'a, T>> {
        match (src, dst) {
            (Buf::Gpu(s), Buf::Gpu(d)) => Ok(Pair::Gpu(s, d)),
            (Buf::Sim(s), Buf::Sim(d)) => Ok(Pair::Sim(s, d)),
            _ => Err(mixed()),
        }
    }
}

pub(crate) enum Pair<'a, T> {
    Gpu(&'a CudaSlice<T>, &'a mut CudaSlice<T>),
    Sim(&'a SimBuf<T>, &'a SimBuf<T>),
}
