//! One SGEMM variant launched on the GPU or in the simulator.

use cudarc::driver::{DevicePtr, DevicePtrMut};
use rustile_kernels::registry::KernelInfo;

use crate::backend::{Backend, Buf};
use crate::check::BufArg;
use crate::error::{Error, Result};
use crate::gpu::Gpu;

use super::*;

/// Launches `kernel` on the GPU. Asynchronous.
pub fn launch(
    gpu: &Gpu,
    kernel: &KernelInfo,
    p: &GemmProblem,
    a: &impl DevicePtr<f32>,
    b: &impl DevicePtr<f32>,
    c: &mut impl DevicePtrMut<f32>,
) -> Result<()> {
    let stream = gpu.stream();
    let (la, lb, lc) = (a.len(), b.len(), c.len());
    let (pa, _ga) = a.device_ptr(stream);
    let (pb, _gb) = b.device_ptr(stream);
    let (pc, _gc) = c.device_ptr_mut(stream);
    p.check(
        kernel,
        BufArg::new("a", la, pa),
        BufArg::new("b", lb, pb),
        BufArg::new("c", lc, pc),
    )?;
    let plan = p.plan(kernel, [pa, pb, pc])?;
    // SAFETY: every SGEMM kernel is `(a, b, c: pointers, m, n, k, lda, ldb, ldc: u32, alpha,
    // beta: f32)` and `plan` builds exactly that list; `check` proved A, B, C hold
    // (rows − 1)·ld + cols elements with the alignment the variant needs and that every
    // dimension fits u32; the kernels mask rows, columns and k outside the shape; the grid
    // covers C; C is a distinct &mut borrow; the stream guards live until we return.
    unsafe { plan.launch_on(gpu, stream) }
}

/// Runs `kernel` on either back end.
pub fn launch_on(
    backend: &Backend,
    kernel: &KernelInfo,
    p: &GemmProblem,
    a: &Buf<f32>,
    b: &Buf<f32>,
    c: &mut Buf<f32>,
) -> Result<()> {
    match (backend, a, b, c) {
        (Backend::Gpu(gpu), Buf::Gpu(a), Buf::Gpu(b), Buf::Gpu(c)) => {
            launch(gpu, kernel, p, a, b, c)
        }
        (Backend::Simulator(sim), Buf::Sim(a), Buf::Sim(b), Buf::Sim(c)) => {
            p.check(
                kernel,
                BufArg::new("a", a.len(), a.addr()),
                BufArg::new("b", b.len(), b.addr()),
                BufArg::new("c", c.len(), c.addr()),
            )?;
            p.plan(kernel, [a.addr(), b.addr(), c.addr()])?
                .simulate(sim)
        }
        _ => Err(Error::Usage("buffers of another back end".into())),
    }
}
