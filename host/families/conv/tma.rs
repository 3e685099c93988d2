//! The TMA kernel's host side (`conv/wgmma*`, sm_90a): which problems its tensor maps can
//! describe, the tile width, the tensor maps (im2col activations, `(C, R·S, K)` weights) and
//! the persistent launch.

use cudarc::driver::{CudaSlice, CudaStream, PushKernelArg};
use rustile_kernels::conv::v05_wgmma::{self as v05, BM, GROUP_M, WIDTHS, WIDTHS_PP, WIDTHS_X2};
use rustile_kernels::conv::{combine, pack};
use rustile_kernels::gpu::sched::{StreamK, TileGrid};
use rustile_kernels::registry::{DType, KernelInfo, Launch, Layout};

use crate::check::prepare_symbol;
use crate::error::{DriverContext, Error, Result};
use crate::gpu::Gpu;
use crate::launch::{Arg, LaunchPlan};
use crate::tma::{tensor_map_3d, tensor_map_im2col, upload_maps, Im2col};

use super::{entry, kernel_label, Addrs, Problem};

mod choose;
pub use choose::*;

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

/// A prepared TMA launch: the tensor maps in device memory, the split-K scratch and the
/// kernel arguments.
pub struct TmaLaunch {
    /// The width record that runs.
    pub record: &'static KernelInfo,
    /// Split-K parts (1: none).
    pub splits: u32,
    /// Stream-K (then `splits` is 1).
    pub stream_k: bool,
    /// k-segments per tile of a [`Reduce::Cut`] launch (a stream-K walk over `tiles · cut`
    /// blocks); 0 otherwise.
    pub cut: u32,
    /// Whether the epilogue stores through TMA.
    pub tma_store: bool,
    maps: CudaSlice<u8>,
    scratch: Option<CudaSlice<f32>>,
    grid: u32,
    args: [u32; 13],
}

impl TmaLaunch {
    /// Builds the maps for `p` with buffers at `a` (`width`: a record of [`WIDTHS`], or
    /// `None` for [`choose`]; `reduce`: forced split-K parts or stream-K, or [`Reduce::Auto`]
    /// for [`choose`]).
    pub fn new(
        gpu: &Gpu,
        p: &Problem,
        a: &Addrs,
        width: Option<&'static KernelInfo>,
        reduce: Reduce,
    ) -> Result<Self> {
        Self::with_stores(gpu, p, a, width, reduce, TMA_STORES)
    }

    /// [`TmaLaunch::new`], with the epilogue's TMA stores allowed (`tma_stores`; they need K
    /// a multiple of 8 and y 16-byte aligned) or not (direct stores from the accumulators, for
    /// comparison).
    pub fn with_stores(
        gpu: &Gpu,
        p: &Problem,
        a: &Addrs,
        width: Option<&'static KernelInfo>,
        reduce: Reduce,
        tma_stores: bool,
    ) -> Result<Self> {
        let (auto_rec, auto_reduce) = choose(p, gpu.info().sm_count)?;
        let record = match (width, reduce) {
            (Some(w), _) => w,
            (None, Reduce::Cut(n)) => cut_width(p, n, gpu.info().sm_count),
            // Forced stream-K on the ladder record runs its own 128-wide tile (`wgmma_n64`
            // pins the 64-wide one).
            (None, Reduce::StreamK) => &v05::INFO,
            (None, _) => auto_rec,
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
        let kt = k_tiles(p);
        // The estimate's reduction is for its own width; a pinned width gets whole tiles.
        let reduce = match reduce {
            Reduce::Auto if width.is_none() => auto_reduce,
            Reduce::Auto => Reduce::Split(1),
            r => r,
        };
        let stream_k = matches!(reduce, Reduce::StreamK | Reduce::Cut(2..));
        let ctas = blocks_per_sm(record);
        if stream_k && pingpong(record) {
            return Err(Error::Unsupported {
                kernel: kernel_label(record),
                what: "stream-K (and cut tiles) with ping-pong consumers: each warpgroup owns whole tiles".into(),
            });
        }
        if stream_k && ctas > 1 {
            return Err(Error::Unsupported {
                kernel: kernel_label(record),
                what: "stream-K needs one block per SM (every block resident at once)".into(),
            });
        }
        if stream_k && bn > 128 {
            return Err(Error::Unsupported {
                kernel: kernel_label(record),
                what: "stream-K needs a tile at most 128 wide (the 256-wide tile's accumulators leave no registers for it)".into(),
            });
        }
        let splits = match reduce {
            Reduce::Split(s) if s == 0 || s > kt || s > MAX_SPLITS => {
                return Err(Error::InvalidArgument {
                    kernel: kernel_label(record),
                    what: format!("split-K parts {s}: the reduction has {kt} k-tiles (at most {MAX_SPLITS} parts)"),
                })
            }
            Reduce::Split(s) if s > 1 && !SPLIT_K_ENABLED => {
                return Err(Error::Unsupported {
                    kernel: kernel_label(record),
                    what: format!(
                        "split-K ({s} parts) is disabled: its partial sums failed GPU validation (see conv::tma::SPLIT_K_ENABLED)"
                    ),
                })
            }
            Reduce::Split(s) => s,
            Reduce::Cut(n) if n == 0 || n > kt => {
                return Err(Error::InvalidArgument {
                    kernel: kernel_label(record),
                    what: format!("k-segments per tile {n}: the reduction has {kt} k-tiles"),
                })
            }
            Reduce::StreamK | Reduce::Auto | Reduce::Cut(_) => 1,
        };
        let scratch_len = if splits > 1 {
            let n = (m as u64 * p.k as u64 * splits as u64) as usize;
            if n > i32::MAX as usize {
                return Err(Error::TooLarge {
                    kernel: kernel_label(record),
                    what: format!("split-K scratch of {n} floats"),
                });
            }
            n
        } else {
            0
        };
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
        // The epilogue stores y through TMA from a staging tile when y's rows are 16-byte
        // multiples (K a multiple of 8) and y is 16-byte aligned; split-K writes partials.
        // Ping-pong consumers store directly (they would share the staging tile), and so does
        // the 256-wide tile (no staging tile beside its 4-stage ring).
        let tma_store = tma_stores
            && splits == 1
            && !pingpong(record)
            && v05::has_staging(bn)
            && p.k.is_multiple_of(8)
            && a.y.is_multiple_of(16);
        let mut list = vec![xmap, wmap];
        if tma_store {
            list.push(crate::tma::tensor_map_2d(
                p.dtype,
                a.y,
                p.k,
                m,
                p.k,
                (64, 64),
            )?);
        }
        let tiles = TileGrid::new(
            m.div_ceil(BM as usize) as u32 * splits * BM,
            p.k as u32,
            BM,
            bn,
            GROUP_M,
        );
        let sms = gpu.info().sm_count;
        let grid = if stream_k {
            if tiles.tiles() as u64 * kt as u64 >= u32::MAX as u64 {
                return Err(Error::TooLarge {
                    kernel: kernel_label(record),
                    what: format!(
                        "stream-K over {} tiles of {kt} k-tiles (the walk counts in 32 bits)",
                        tiles.tiles()
                    ),
                });
            }
            match reduce {
                Reduce::Cut(n) => cut_grid(tiles.tiles(), n, sms)
                    .map_err(|what| Error::Unsupported { kernel: kernel_label(record), what })?,
                _ => StreamK::grid(tiles.tiles(), kt, sms),
            }
        } else {
            tiles.persistent_grid(sms.saturating_mul(ctas))
        };
        let maps = upload_maps(gpu, &list)?;
        let scratch = if stream_k {
            // A slot of 2 · 64 · BN floats per block, then 2 flags per block, zeroed (the
            // kernel leaves them zero).
            let n = grid as usize * 2 * (64 * bn as usize + 1);
            // `alloc` zero-fills on the device's stream; the launch may go to another stream:
            // the zeros land first.
            let z = gpu.alloc::<f32>(n, "conv stream-K partials and flags")?;
            gpu.stream()
                .synchronize()
                .during(|| "zeroing the stream-K flags".to_string())?;
            Some(z)
        } else {
            match scratch_len {
                0 => None,
                n => Some(gpu.alloc::<f32>(n, "conv split-K partials")?),
            }
        };
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
            splits,
            tma_store as u32,
            stream_k as u32,
        ];
        Ok(Self {
            record,
            splits,
            stream_k,
            cut: match reduce {
                Reduce::Cut(n) if stream_k => n,
                _ => 0,
            },
            tma_store,
            maps,
            scratch,
            grid,
            args,
        })
    }

    /// Enqueues the launch (and the split-K fix-up) on `stream`.
    ///
    /// # Safety
    /// `a` (the buffers the maps were built over, and y and bias) are live allocations of
    /// `gpu`'s context holding `p`'s lengths until the kernels have run.
    pub unsafe fn enqueue(
        &self,
        gpu: &Gpu,
        stream: &CudaStream,
        p: &Problem,
        a: &Addrs,
    ) -> Result<()> {
        let e = entry(self.record, p)?;
        let shared = self.record.shared_bytes(p.dtype);
        let (f, mut cfg) =
            prepare_symbol(gpu, self.record, e.symbol, (self.grid as u64, 1, 1), shared)?;
        cfg.block_dim = self.record.block;
        let (maps, _g) = cudarc::driver::DevicePtr::device_ptr(&self.maps, stream);
        let ws = match &self.scratch {
            Some(s) => cudarc::driver::DevicePtr::device_ptr(s, stream).0,
            None => 0,
        };
        let [rows, kout, _, _, _, _, _, _, relu, _, splits, _, _] = self.args;
        let mut b = stream.launch_builder(&f);
        b.arg(&maps).arg(&a.y).arg(&a.bias).arg(&ws);
        for v in &self.args {
            b.arg(v);
        }
        // SAFETY: the caller's contract; the argument list matches `conv_wgmma`'s declaration.
        unsafe { b.launch(cfg) }.during(|| format!("launching {}", e.symbol))?;
        if self.splits > 1 {
            let rec = &combine::INFO;
            let ce = entry(rec, p)?;
            let total = rows as u64 * kout as u64;
            let plan = LaunchPlan::new(
                rec,
                ce,
                (total.div_ceil(combine::THREADS as u64), 1, 1),
                vec![
                    Arg::Ptr(ws),
                    Arg::Ptr(a.bias),
                    Arg::Ptr(a.y),
                    Arg::U32(rows),
                    Arg::U32(kout),
                    Arg::U32(splits),
                    Arg::U32(relu),
                ],
            );
            // SAFETY: the scratch holds splits · rows · kout floats, y rows · kout elements.
            unsafe { plan.launch_on(gpu, stream)? };
        }
        Ok(())
    }
}

/// The width a TMA record pins: a tuning record (`wgmma_n64`, `wgmma_n256`) runs at its own
/// width, the ladder record (`wgmma`) at the one [`choose`] picks (`None`).
pub fn tuning_width(record: &'static KernelInfo) -> Option<&'static KernelInfo> {
    (record.role == rustile_kernels::registry::Role::Tuning).then_some(record)
}

/// Whether `record` is a width with ping-pong consumers ([`WIDTHS_PP`]: each warpgroup
/// computes whole tiles, `tc::ws::run_pingpong`).
pub fn pingpong(record: &KernelInfo) -> bool {
    WIDTHS_PP.iter().any(|r| std::ptr::eq(*r, record))
}

/// Whether `record` runs stream-K (and [`Reduce::Cut`]): tiles at most 128 wide, one block per
/// SM, consumers that share a tile (not [`pingpong`]). The launcher refuses it elsewhere with
/// [`Error::Unsupported`].
pub fn stream_k_capable(record: &KernelInfo) -> bool {
    let bn = match record.launch {
        Launch::Persistent { tile: (_, bn) } => bn,
        _ => return false,
    };
    record.needs.tma && bn <= 128 && blocks_per_sm(record) == 1 && !pingpong(record)
}

/// Blocks per SM the record's launch bounds and ring are sized for (`wgmma_n64x2`: 2, the
/// other widths 1).
pub fn blocks_per_sm(record: &KernelInfo) -> u32 {
    record.bounds.map_or(1, |(_, b)| b.max(1))
}

/// Builds the maps and launches the TMA kernel `record` on `p` (a tuning width record runs at
/// that width; the ladder record at the chosen one), its reduction shared out as `reduce`.
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
    reduce: Reduce,
) -> Result<()> {
    let width = tuning_width(record);
    let l = TmaLaunch::new(gpu, p, a, width, reduce)?;
    // SAFETY: the caller's contract.
    unsafe { l.enqueue(gpu, stream, p, a) }
}
