//! A device buffer of either element width: f32, or the 16-bit bit patterns of f16/bf16 (the
//! problem says which). The bench's and the cuDNN baseline's buffers.

use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaSlice, CudaStream, DevicePtr, DevicePtrMut, SyncOnDrop};
use rustile_kernels::registry::DType;

use crate::elem::widen_bits;
use crate::error::Result;
use crate::gpu::Gpu;

use super::{to_bits, POISON};

/// A device buffer of f32, or of 16-bit bit patterns (f16 or bf16: the problem says which).
#[derive(Debug)]
pub enum DevBuf {
    /// f32 elements.
    F32(CudaSlice<f32>),
    /// f16 or bf16 bits.
    B16(CudaSlice<u16>),
}

impl DevBuf {
    /// `values` (representable in `dtype`, or rounded to it) uploaded as `dtype`.
    pub fn upload(gpu: &Gpu, dtype: DType, values: &[f32], what: &str) -> Result<Self> {
        Ok(match dtype {
            DType::F32 => DevBuf::F32(gpu.upload(values, what)?),
            d => DevBuf::B16(gpu.upload(&to_bits(d, values), what)?),
        })
    }

    /// `n` zeros of `dtype`.
    pub fn zeros(gpu: &Gpu, dtype: DType, n: usize, what: &str) -> Result<Self> {
        Ok(match dtype {
            DType::F32 => DevBuf::F32(gpu.upload(&vec![0f32; n], what)?),
            _ => DevBuf::B16(gpu.upload(&vec![0u16; n], what)?),
        })
    }

    /// `n` NaNs of `dtype` (an output before a checked run).
    pub fn poisoned(gpu: &Gpu, dtype: DType, n: usize, what: &str) -> Result<Self> {
        Ok(match dtype {
            DType::F32 => DevBuf::F32(gpu.upload(&vec![f32::NAN; n], what)?),
            _ => DevBuf::B16(gpu.upload(&vec![POISON; n], what)?),
        })
    }

    /// Elements.
    pub fn len(&self) -> usize {
        match self {
            DevBuf::F32(s) => s.len(),
            DevBuf::B16(s) => s.len(),
        }
    }

    /// Whether it holds no element.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether it can hold `dtype` (f32 ↔ f32, 16-bit ↔ f16 / bf16).
    pub fn holds(&self, dtype: DType) -> bool {
        matches!(
            (self, dtype),
            (DevBuf::F32(_), DType::F32) | (DevBuf::B16(_), DType::F16 | DType::Bf16)
        )
    }

    /// The context it lives in.
    pub fn context(&self) -> &Arc<CudaContext> {
        match self {
            DevBuf::F32(s) => s.context(),
            DevBuf::B16(s) => s.context(),
        }
    }

    /// Its device address for reading on `stream`, and the guard that, dropped after the
    /// work is enqueued, orders a free or write on another stream after it.
    pub fn ptr<'a>(&'a self, stream: &'a CudaStream) -> (u64, SyncOnDrop<'a>) {
        match self {
            DevBuf::F32(s) => s.device_ptr(stream),
            DevBuf::B16(s) => s.device_ptr(stream),
        }
    }

    /// As [`DevBuf::ptr`], for writing.
    pub fn ptr_mut<'a>(&'a mut self, stream: &'a CudaStream) -> (u64, SyncOnDrop<'a>) {
        match self {
            DevBuf::F32(s) => s.device_ptr_mut(stream),
            DevBuf::B16(s) => s.device_ptr_mut(stream),
        }
    }

    /// Its device address (for work on `stream`, the stream it was allocated on: no guard
    /// is needed there).
    pub fn addr(&self, stream: &CudaStream) -> u64 {
        self.ptr(stream).0
    }

    /// Its elements, as `dtype`, widened to f32 (waits for the stream).
    pub fn download(&self, gpu: &Gpu, dtype: DType, what: &str) -> Result<Vec<f32>> {
        Ok(match self {
            DevBuf::F32(s) => gpu.download(s, what)?,
            DevBuf::B16(s) => gpu
                .download(s, what)?
                .into_iter()
                .map(|b| widen_bits(dtype, b as u32))
                .collect(),
        })
    }
}
