//! The TMA kernel's host side (`conv/wgmma*`, sm_90a): which problems its tensor maps can
//! describe, the tile width, the tensor maps (im2col activations, `(C, R·S, K)` weights) and
//! the persistent launch.

use cudarc::driver::{CudaSlice, CudaStream, PushKernelArg};
use rustile_kernels::conv::v05_wgmma::{self as v05, BM, GROUP_M, WIDTHS};
use rustile_kernels::conv::pack;
use rustile_kernels::gpu::sched::TileGrid;
use rustile_kernels::registry::{DType, KernelInfo, Launch, Layout};

use crate::check::prepare_symbol;
use crate::error::{DriverContext, Error, Result};
use crate::gpu::Gpu;
use crate::tma::{tensor_map_3d, tensor_map_im2col, upload_maps, Im2col};

use super::{entry, kernel_label, Addrs, Problem};

/// The im2col bounding-box corners and filter-tap offsets a rank-4 map can hold (8 bits each).
pub const CORNER_RANGE: (i32, i32) = (-128, 127);

/// The im2col geometry of `p` (after [`Problem::check`]).
pub fn im2col(p: &Problem) -> Result<Im2col> {
    let (pp, qq) = p.out_hw()?;
    // The box of tap (0, 0) spans (P − 1)·stride + 1 rows from −pad: the upper corner is
    // relative to H (half-open).
    let upper = |out: usize, stride: usize, len: usize, pad: usize| {
        ((out - 1) * stride + 1) as i64 - len as i64 - pad as i64
    };
    let uh = upper(pp, p.stride.0, p.h, p.pad.0);
    let uw = upper(qq, p.stride.1, p.w, p.pad.1);
    Ok(Im2col {
        dims: [p.c as u64, p.w as u64, p.h as u64, p.n as u64],
        lower: [-(p.pad.1 as i32), -(p.pad.0 as i32)],
        upper: [uw as i32, uh as i32],
        strides: [p.stride.1 as u32, p.stride.0 as u32],
        channels: v05::BK,
        pixels: BM,
    })
}

/// Whether the TMA kernel `record` can run `p`: f16/bf16 NHWC, C a multiple of 8 (16-byte
/// pixel pitch), the im2col corners and tap offsets within the map's 8-bit ranges, and
/// strides within the map's traversal-stride limit (8).
pub fn supports(p: &Problem, record: &'static KernelInfo) -> Result<()> {
    let unsupported = |what: String| Error::Unsupported {
        kernel: kernel_label(record),
        what,
    };
    if p.dtype == DType::F32 || p.layout != Layout::Nhwc {
        return Err(unsupported("takes f16/bf16 NHWC only".into()));
    }
    p.check()?;
    if !p.c.is_multiple_of(8) {
        return Err(unsupported(format!(
            "C = {} is not a multiple of 8 (TMA needs a 16-byte pixel pitch)",
            p.c
        )));
    }
    if p.stride.0 > 8 || p.stride.1 > 8 {
        return Err(unsupported(format!(
            "stride {:?} exceeds TMA's traversal-stride limit 8",
            p.stride
        )));
    }
    let g = im2col(p)?;
    let (lo, hi) = CORNER_RANGE;
    let corners = g.lower.iter().chain(g.upper.iter());
    if corners.clone().any(|&c| c < lo || c > hi) {
        return Err(unsupported(format!(
            "im2col corners {:?}/{:?} outside {CORNER_RANGE:?} (padding or filter too large)",
            g.lower, g.upper
        )));
    }
    let max_off = ((p.r - 1) * p.dil.0).max((p.s - 1) * p.dil.1);
    if max_off > 255 {
        return Err(unsupported(format!(
            "filter tap offset {max_off} exceeds im2col's 255"
        )));
    }
    Ok(())
}

/// The tile width (a record of [`WIDTHS`]) for `p` on `sms` SMs: the one with the least
/// estimated time, counting whole waves of tiles and a per-width efficiency (wider tiles
/// reuse each A load over more output channels).
pub fn choose_width(p: &Problem, sms: u32) -> Result<&'static KernelInfo> {
    let (m, n, _) = p.gemm_dims()?;
    let sms = sms.max(1) as u64;
    let mut best: Option<(f64, &'static KernelInfo)> = None;
    for (rec, eff) in WIDTHS.iter().zip([0.72, 0.9, 1.0]) {
        let Launch::Persistent { tile: (bm, bn) } = rec.launch else {
            continue;
        };
        let tiles = (m as u64).div_ceil(bm as u64) * (n as u64).div_ceil(bn as u64);
        let waves = tiles.div_ceil(sms) as f64;
        // Wasted output channels in the last column of tiles count as work.
        let t = waves * bn as f64 / eff;
        if best.is_none_or(|(bt, _)| t < bt * 0.999) {
            best = Some((t, rec));
        }
    }
    Ok(best.map(|(_, r)| r).unwrap_or(&v05::INFO))
}

/// A prepared TMA launch: the tensor maps in device memory and the kernel arguments.
pub struct TmaLaunch {
    /// The width record that runs.
    pub record: &'static KernelInfo,
    maps: CudaSlice<u8>,
    grid: u32,
    args: [u32; 10],
}

impl TmaLaunch {
    /// Builds the maps for `p` with buffers at `a` (`width`: a record of [`WIDTHS`], or
    /// `None` for [`choose_width`]).
    pub fn new(gpu: &Gpu, p: &Problem, a: &Addrs, width: Option<&'static KernelInfo>) -> Result<Self> {
        let record = match width {
            Some(r) => r,
            None => choose_width(p, gpu.info().sm_count)?,
        };
        supports(p, record)?;
        let Launch::Persistent { tile: (_, bn) } = record.launch else {
            return Err(Error::Unsupported {
                kernel: kernel_label(record),
                what: "not a persistent TMA kernel".into(),
            });
        };
        let (pp, qq) = p.out_hw()?;
        let (m, _, _) = p.gemm_dims()?;
        let e = p.dtype.bytes() as u64;
        let xmap = tensor_map_im2col(p.dtype, a.x, &im2col(p)?)?;
        let rs = (p.r * p.s) as u64;
        let wmap = tensor_map_3d(
            p.dtype,
            a.w,
            [p.c as u64, rs, p.k as u64],
            [p.c as u64 * e, rs * p.c as u64 * e],
            [v05::BK, 1, bn],
        )?;
        let maps = upload_maps(gpu, &[xmap, wmap])?;
        let tiles = TileGrid::new(m as u32, p.k as u32, BM, bn, GROUP_M);
        let grid = tiles.persistent_grid(gpu.info().sm_count);
        let u = |v: usize| v as u32;
        let args = [
            u(m),
            u(p.k),
            pack(u(pp), u(qq)),
            pack(u(p.stride.0), u(p.stride.1)),
            pack(u(p.pad.0), u(p.pad.1)),
            pack(u(p.dil.0), u(p.dil.1)),
            pack(u(p.r), u(p.s)),
            u(p.c.div_ceil(v05::BK as usize)),
            p.relu as u32,
            GROUP_M,
        ];
        Ok(Self {
            record,
            maps,
            grid,
            args,
        })
    }

    /// Enqueues the launch on `stream`.
    ///
    /// # Safety
    /// `a` (the buffers the maps were built over, and y and bias) are live allocations of
    /// `gpu`'s context holding `p`'s lengths until the kernel has run.
    pub unsafe fn enqueue(&self, gpu: &Gpu, stream: &CudaStream, p: &Problem, a: &Addrs) -> Result<()> {
        let e = entry(self.record, p)?;
        let shared = self.record.shared_bytes(p.dtype);
        let (f, mut cfg) = prepare_symbol(gpu, self.record, e.symbol, (self.grid as u64, 1, 1), shared)?;
        cfg.block_dim = self.record.block;
        let (maps, _g) = cudarc::driver::DevicePtr::device_ptr(&self.maps, stream);
        let mut b = stream.launch_builder(&f);
        b.arg(&maps).arg(&a.y).arg(&a.bias);
        for v in &self.args {
            b.arg(v);
        }
        // SAFETY: the caller's contract; the argument list matches `conv_wgmma`'s declaration.
        unsafe { b.launch(cfg) }.during(|| format!("launching {}", e.symbol))?;
        Ok(())
    }
}

/// Builds the maps and launches the TMA kernel on `p` (`width`: as for [`TmaLaunch::new`]).
/// The maps' buffer is freed after the launch in stream order.
///
/// # Safety
/// As for [`TmaLaunch::enqueue`].
pub unsafe fn launch(
    gpu: &Gpu,
    stream: &CudaStream,
    p: &Problem,
    record: &'static KernelInfo,
    a: &Addrs,
    width: Option<&'static KernelInfo>,
) -> Result<()> {
    let width = width.or(WIDTHS.iter().copied().find(|w| w.name == record.name && record.name != v05::INFO.name));
    let l = TmaLaunch::new(gpu, p, a, width)?;
    // SAFETY: the caller's contract.
    unsafe { l.enqueue(gpu, stream, p, a) }
}
