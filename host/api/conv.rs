//! The convolution front door: [`conv2d`] and its pure check [`check_conv2d`].

use cudarc::driver::{DevicePtr, DevicePtrMut};
use rustile_kernels::registry::KernelInfo;

use crate::conv::{self as cv, Addrs, Problem, Target};
use crate::elem::DeviceElem;
use crate::error::{Error, Result};
use crate::gpu::Gpu;

use super::Launched;

const OP: &str = "conv2d";

/// Checks of [`conv2d`] on lengths and the element type alone (no GPU): the problem
/// ([`Problem::check`]), `T` against its dtype, x and w at least as long as the shape needs,
/// y at least as long, the bias given exactly when the problem has one, with `k` entries.
pub fn check_conv2d<T: DeviceElem>(
    p: &Problem,
    x: usize,
    w: usize,
    bias: Option<usize>,
    y: usize,
) -> Result<()> {
    p.check()?;
    if T::DTYPE != p.dtype {
        return Err(Error::DTypeMismatch {
            kernel: OP.into(),
            buffer: "x, w, y",
            got: T::DTYPE.name(),
            want: p.dtype.name(),
        });
    }
    let [lx, lw, ly] = p.lens()?;
    for (buffer, got, need) in [("x", x, lx), ("w", w, lw), ("y", y, ly)] {
        if got < need {
            return Err(Error::BufferLength {
                kernel: OP.into(),
                buffer,
                got,
                need,
                shape: p.label(),
            });
        }
    }
    match (p.bias, bias) {
        (true, None) => Err(Error::InvalidArgument {
            kernel: OP.into(),
            what: format!("{} has a bias but none was given", p.label()),
        }),
        (false, Some(_)) => Err(Error::InvalidArgument {
            kernel: OP.into(),
            what: format!("{} has no bias but one was given", p.label()),
        }),
        (true, Some(n)) if n != p.k => Err(Error::BufferLength {
            kernel: OP.into(),
            buffer: "bias",
            got: n,
            need: p.k,
            shape: p.label(),
        }),
        _ => Ok(()),
    }
}

fn span<T>(addr: u64, len: usize) -> (u64, u64) {
    (addr, addr + (len * std::mem::size_of::<T>()) as u64)
}

/// The kernel the dispatcher runs `p` with on `gpu` for buffers at `a`: as [`cv::select`],
/// also skipping kernels whose alignment the buffers lack.
pub fn select_for(gpu: &Gpu, p: &Problem, a: &Addrs) -> Result<&'static KernelInfo> {
    let target = Target::gpu(gpu);
    let mut first_err = None;
    for record in cv::ladder().collect::<Vec<_>>().into_iter().rev() {
        let align = record.needs.align as u64;
        let aligned = [a.x, a.w, a.y].iter().all(|v| v.is_multiple_of(align));
        match cv::runnable(target, record, p) {
            Ok(()) if aligned => return Ok(record),
            Ok(()) => {}
            Err(e) => {
                if first_err.is_none() && cv::entry(record, p).is_ok() {
                    first_err = Some(e);
                }
            }
        }
    }
    Err(first_err.unwrap_or_else(|| Error::Unsupported {
        kernel: "conv".into(),
        what: format!("no kernel runs {}", p.label()),
    }))
}

/// The fused convolution on the GPU: `y = ReLU(conv2d(x, w) + bias)` (ReLU and bias as the
/// problem says), with the problem's stride, padding and dilation.
///
/// Layouts ([`Problem::layout`]): NHWC x, KRSC w, NHWC y (every dtype), or NCHW x, KCRS w,
/// NCHW y (f32 only). `T` is the problem's dtype (`f32`, [`half::f16`], [`half::bf16`]); the
/// bias is f32, `k` entries. Every argument is checked before anything is allocated or
/// launched ([`check_conv2d`], and y overlapping an input is [`Error::Overlap`]). Runs the
/// dispatcher's kernel: on an H200 the TMA + `wgmma` implicit GEMM (`conv/wgmma`, C a multiple
/// of 8, 16-byte-aligned buffers), else `mma.sync`, else the f32 register-blocked kernel.
/// Asynchronous on the `Gpu`'s stream.
///
/// ```no_run
/// use rustile::conv::Problem;
/// use rustile::half::f16;
/// use rustile::{api, DType, Gpu};
///
/// # fn main() -> rustile::Result<()> {
/// let gpu = Gpu::new(0)?;
/// // ResNet-50's 3×3 layer at 28²: batch 32, 128 → 128 channels, padding 1.
/// let p = Problem::new(32, 28, 28, 128, 128, 3, 1, DType::F16);
/// let [lx, lw, ly] = p.lens()?;
/// let x = gpu.upload(&vec![f16::ONE; lx], "x")?;
/// let w = gpu.upload(&vec![f16::ONE; lw], "w")?;
/// let bias = gpu.upload(&vec![0.5f32; 128], "bias")?;
/// let mut y = gpu.alloc::<f16>(ly, "y")?;
/// let ran = api::conv2d(&gpu, &p, &x, &w, Some(&bias), &mut y)?; // conv/wgmma on an H200
/// # let _ = ran; Ok(()) }
/// ```
pub fn conv2d<T: DeviceElem>(
    gpu: &Gpu,
    p: &Problem,
    x: &impl DevicePtr<T>,
    w: &impl DevicePtr<T>,
    bias: Option<&cudarc::driver::CudaSlice<f32>>,
    y: &mut impl DevicePtrMut<T>,
) -> Result<Launched> {
    check_conv2d::<T>(p, x.len(), w.len(), bias.map(|b| b.len()), y.len())?;
    let stream = gpu.stream();
    let (px, _gx) = x.device_ptr(stream);
    let (pw, _gw) = w.device_ptr(stream);
    let (pb, _gb) = match bias {
        Some(b) => {
            let (p, g) = b.device_ptr(stream);
            (p, Some(g))
        }
        None => (0, None),
    };
    let ly = y.len();
    let (py, _gy) = y.device_ptr_mut(stream);
    let sy = span::<T>(py, ly);
    let ins = [
        ("x", span::<T>(px, x.len())),
        ("w", span::<T>(pw, w.len())),
        ("bias", span::<f32>(pb, bias.map_or(0, |b| b.len()))),
    ];
    for (name, (lo, hi)) in ins {
        if lo < hi && lo < sy.1 && sy.0 < hi {
            return Err(Error::Overlap {
                kernel: OP.into(),
                buffer: "y",
                with: Some(name),
                what: format!("y spans {:#x}..{:#x}, {name} {lo:#x}..{hi:#x}", sy.0, sy.1),
            });
        }
    }
    let a = Addrs {
        x: px,
        w: pw,
        bias: pb,
        y: py,
    };
    let record = select_for(gpu, p, &a)?;
    if record.needs.tma {
        // SAFETY: every buffer was checked to hold the problem's lengths above; the guards
        // keep them ordered on this stream until the launch is enqueued.
        unsafe { cv::tma::launch(gpu, stream, p, record, &a, cv::tma::Reduce::Auto)? };
    } else {
        // The f32 `regblock` step splits its reduction where its estimate says (the 14² and
        // 7² ResNet-50 layers): the partial sums go to a workspace this call allocates (freed
        // in stream order when it returns), then the fix-up writes y.
        let splits = cv::direct_splits(record, p, gpu.info().sm_count)?;
        let ws = cv::gpu_split_workspace(gpu, p, splits)?;
        let ws_addr = ws.as_ref().map_or(0, |w| w.device_ptr(stream).0);
        let (main, fix) = cv::split_plans(p, record, &a, splits, ws_addr)?;
        // SAFETY: as above; the workspace holds `splits` copies of y's f32 length and lives
        // until the fix-up is enqueued (its free is ordered after it on this stream).
        unsafe { main.launch_on(gpu, stream)? };
        if let Some(fix) = fix {
            // SAFETY: the workspace, bias and y hold what the fix-up reads and writes.
            unsafe { fix.launch_on(gpu, stream)? };
        }
    }
    Ok(Launched {
        family: rustile_kernels::conv::FAMILY,
        variant: record.name,
    })
}
