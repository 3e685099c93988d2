//! Device ranges the front door hands to the launchers: a caller's buffer seen as the element
//! type a kernel takes (f16/bf16 as bits), and a pointer range whose stream-order guard is held
//! by the caller of the launcher.

use std::marker::PhantomData;
use std::sync::Arc;

use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::{CudaStream, DevicePtr, DevicePtrMut, DeviceSlice, SyncOnDrop};

/// A caller's `T` buffer seen as `u16` (the tensor-core launchers take f16/bf16 as bits). The
/// pointer, length and stream-order events are the buffer's own: `device_ptr` forwards.
pub(crate) struct Bits<'a, T, P: ?Sized> {
    inner: &'a P,
    _t: PhantomData<T>,
}

impl<'a, T, P: DevicePtr<T> + ?Sized> Bits<'a, T, P> {
    /// `T` must be two bytes (checked by the front door's `TcElem` bound; asserted here).
    pub(crate) fn new(inner: &'a P) -> Self {
        const { assert!(std::mem::size_of::<T>() == 2) };
        Self {
            inner,
            _t: PhantomData,
        }
    }
}

impl<T, P: DevicePtr<T> + ?Sized> DeviceSlice<u16> for Bits<'_, T, P> {
    fn len(&self) -> usize {
        self.inner.len()
    }
    fn stream(&self) -> &Arc<CudaStream> {
        self.inner.stream()
    }
}

impl<T, P: DevicePtr<T> + ?Sized> DevicePtr<u16> for Bits<'_, T, P> {
    fn device_ptr<'b>(&'b self, stream: &'b CudaStream) -> (CUdeviceptr, SyncOnDrop<'b>) {
        self.inner.device_ptr(stream)
    }
}

/// [`Bits`] for an output.
pub(crate) struct BitsMut<'a, T, P: ?Sized> {
    inner: &'a mut P,
    _t: PhantomData<T>,
}

impl<'a, T, P: DevicePtrMut<T> + ?Sized> BitsMut<'a, T, P> {
    /// `T` must be two bytes.
    pub(crate) fn new(inner: &'a mut P) -> Self {
        const { assert!(std::mem::size_of::<T>() == 2) };
        Self {
            inner,
            _t: PhantomData,
        }
    }
}

impl<T, P: DevicePtrMut<T> + ?Sized> DeviceSlice<u16> for BitsMut<'_, T, P> {
    fn len(&self) -> usize {
        self.inner.len()
    }
    fn stream(&self) -> &Arc<CudaStream> {
        self.inner.stream()
    }
}

impl<T, P: DevicePtrMut<T> + ?Sized> DevicePtrMut<u16> for BitsMut<'_, T, P> {
    fn device_ptr_mut<'b>(&'b mut self, stream: &'b CudaStream) -> (CUdeviceptr, SyncOnDrop<'b>) {
        self.inner.device_ptr_mut(stream)
    }
}

/// `len` elements at `ptr` on `stream`, borrowed for `'a` from a buffer whose [`SyncOnDrop`]
/// guard the creator holds for as long as this range is used: its own `device_ptr` records
/// nothing (the creator's guard records the accesses when it drops, after every launch that
/// used the range is enqueued). Crate-private: a dispatcher that runs several kernels over one
/// caller buffer takes the buffer's pointer once and passes ranges to its steps.
#[derive(Clone, Copy)]
pub(crate) struct Range<'a, T> {
    ptr: CUdeviceptr,
    len: usize,
    stream: &'a Arc<CudaStream>,
    _t: PhantomData<&'a T>,
}

impl<'a, T> Range<'a, T> {
    /// The range of `ptr`, `len` elements, on `stream`. `ptr` must come from a `device_ptr`
    /// (or `device_ptr_mut`) call whose guard outlives every use of the range.
    pub(crate) fn new(ptr: CUdeviceptr, len: usize, stream: &'a Arc<CudaStream>) -> Self {
        Self {
            ptr,
            len,
            stream,
            _t: PhantomData,
        }
    }

    /// Device address.
    pub(crate) fn ptr(&self) -> CUdeviceptr {
        self.ptr
    }
}

impl<T> DeviceSlice<T> for Range<'_, T> {
    fn len(&self) -> usize {
        self.len
    }
    fn stream(&self) -> &Arc<CudaStream> {
        self.stream
    }
}

impl<T> DevicePtr<T> for Range<'_, T> {
    fn device_ptr<'b>(&'b self, _stream: &'b CudaStream) -> (CUdeviceptr, SyncOnDrop<'b>) {
        (self.ptr, SyncOnDrop::Record(None))
    }
}

impl<T> DevicePtrMut<T> for Range<'_, T> {
    fn device_ptr_mut<'b>(&'b mut self, _stream: &'b CudaStream) -> (CUdeviceptr, SyncOnDrop<'b>) {
        (self.ptr, SyncOnDrop::Record(None))
    }
}
