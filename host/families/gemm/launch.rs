//! One SGEMM variant launched on the GPU or in the simulator.

use cudarc::driver::{DevicePtr, DevicePtrMut, PushKernelArg};
use rustile_kernels::registry::{DType, KernelInfo};

use crate::backend::{Backend, Buf};
use crate::check::{self, BufArg};
use crate::error::{DriverContext, Error, Result};
use crate::gpu::Gpu;
use crate::sim::SimLaunch;

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
        BufArg {
            name: "a",
            len: la,
            addr: pa,
        },
        BufArg {
            name: "b",
            len: lb,
            addr: pb,
        },
        BufArg {
            name: "c",
            len: lc,
            addr: pc,
        },
    )?;
    let (f, cfg) = check::prepare(gpu, kernel, DType::F32, p.grid(kernel))?;
    let (m, n, k, lda, ldb, ldc, alpha, beta) = p.scalars();
    let mut args = stream.launch_builder(&f);
    args.arg(&pa)
        .arg(&pb)
        .arg(&pc)
        .arg(&m)
        .arg(&n)
        .arg(&k)
        .arg(&lda)
        .arg(&ldb)
        .arg(&ldc)
        .arg(&alpha)
        .arg(&beta);
    // SAFETY: every SGEMM kernel is `(a, b, c: pointers, m, n, k, lda, ldb, ldc: u32, alpha,
    // beta: f32)`; `check` proved A, B, C hold (rows − 1)·ld + cols elements with the alignment
    // the variant needs and that every dimension fits u32; the kernels mask rows, columns and k
    // outside the shape; the grid covers C; C is a distinct &mut borrow.
    unsafe { args.launch(cfg) }
        .during(|| format!("launching gemm/{} {}", kernel.name, p.shape()))?;
    Ok(())
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
                BufArg {
                    name: "a",
                    len: a.len(),
                    addr: a.addr(),
                },
                BufArg {
                    name: "b",
                    len: b.len(),
                    addr: b.addr(),
                },
                BufArg {
                    name: "c",
                    len: c.len(),
                    addr: c.addr(),
                },
            )?;
            let entry = kernel
                .entry(DType::F32)
                .ok_or_else(|| Error::Usage(format!("gemm/{} has no f32 entry", kernel.name)))?;
            let (gx, gy, gz) = p.grid(kernel);
            let (m, n, k, lda, ldb, ldc, alpha, beta) = p.scalars();
            let args = [
                a.addr(),
                b.addr(),
                c.addr(),
                m as u64,
                n as u64,
                k as u64,
                lda as u64,
                ldb as u64,
                ldc as u64,
                alpha.to_bits() as u64,
                beta.to_bits() as u64,
            ];
            let launch = SimLaunch {
                grid: (gx as u32, gy as u32, gz as u32),
                block: kernel.block,
                shared_bytes: kernel.shared_bytes_f32,
            };
            sim.launch(&check::kernel_name(kernel), entry.sim, &launch, &args)
        }
        _ => Err(Error::Usage("buffers of another back end".into())),
    }
}
