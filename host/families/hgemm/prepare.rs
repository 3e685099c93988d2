//! A problem bound to its buffers and kernel (`Prepared`), checked once and launched repeatedly.

use std::sync::{Arc, Mutex, PoisonError};

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, SyncOnDrop};
use rustile_kernels::gpu::sched::TileGrid;
use rustile_kernels::hgemm::v02_mma_pipeline::Tuning;
use rustile_kernels::hgemm::v03_wgmma_ws;
use rustile_kernels::registry::{DType, Launch};

use crate::error::{DriverContext, Error, Result};
use crate::gpu::Gpu;
use crate::launch::{Arg, LaunchPlan};
use crate::ptx::Flavour;

use super::pad::{self, Scratch};
use super::paths::{staged_epilogue, stream_k_tail_fits};
use super::*;

/// An owned output buffer of either type (what [`Out`] borrows).
pub(super) enum OutBuf {
    Half(CudaSlice<u16>),
    F32(CudaSlice<f32>),
}

impl OutBuf {
    pub(super) fn alloc(gpu: &Gpu, out: DType, len: usize) -> Result<Self> {
        Ok(match out {
            DType::F32 => OutBuf::F32(gpu.alloc(len, "hgemm C")?),
            DType::F16 | DType::Bf16 => OutBuf::Half(gpu.alloc(len, "hgemm C")?),
        })
    }

    pub(super) fn out(&mut self) -> Out<'_> {
        match self {
            OutBuf::Half(c) => Out::Half(c),
            OutBuf::F32(c) => Out::F32(c),
        }
    }

    /// The address for writing on `stream`, the elements held, and the stream guard.
    pub(super) fn ptr_mut<'a>(&'a mut self, stream: &'a CudaStream) -> (u64, usize, SyncOnDrop<'a>) {
        use cudarc::driver::DevicePtrMut;
        match self {
            OutBuf::Half(c) => {
                let len = c.len();
                let (p, g) = c.device_ptr_mut(stream);
                (p, len, g)
            }
            OutBuf::F32(c) => {
                let len = c.len();
                let (p, g) = c.device_ptr_mut(stream);
                (p, len, g)
            }
        }
    }
}

/// Tensor maps for the `wgmma` kernel with `tile`'s rows and width, in device memory (A at
/// byte 0, B at byte 128, and C at byte 256 for the TMA-store epilogue when `c` is given).
fn tensor_maps(
    gpu: &Gpu,
    p: &Problem,
    a: u64,
    b: u64,
    c: Option<u64>,
    tile: WsTile,
) -> Result<CudaSlice<u8>> {
    let (rows, width) = (tile.rows, tile.width);
    let map_a = tensor_map_2d(p.ty, a, p.k, p.m, p.lda, v03_wgmma_ws::a_box(rows))?;
    let map_b = match p.b {
        // The clustered tile's blocks load half of B's rows each.
        BLayout::Transposed if tile.info()?.needs.cluster > 1 => {
            tensor_map_2d(p.ty, b, p.k, p.n, p.ldb, v03_wgmma_ws::bt_box_pair(width))?
        }
        BLayout::Transposed => {
            tensor_map_2d(p.ty, b, p.k, p.n, p.ldb, v03_wgmma_ws::bt_box(width))?
        }
        BLayout::RowMajor => tensor_map_2d(p.ty, b, p.n, p.k, p.ldb, v03_wgmma_ws::BN_BOX)?,
    };
    match c {
        Some(c) => {
            let map_c = tensor_map_2d(p.out, c, p.n, p.m, p.ldc, (64, 64))?;
            upload_maps(gpu, &[map_a, map_b, map_c])
        }
        None => upload_maps(gpu, &[map_a, map_b]),
    }
}

/// A problem bound to its buffers and kernel, ready to launch repeatedly (the tensor maps are
/// built once). On the padded path it owns the scratch copies of the operands that are not
/// aligned for the kernel ([`PadPlan`]); each launch copies into them first.
pub struct Prepared {
    variant: Variant,
    /// The caller's problem (its buffers are checked against it).
    problem: Problem,
    func: cudarc::driver::CudaFunction,
    /// Kernel, entry, grid, block and shared bytes; the arguments are filled per launch.
    plan: LaunchPlan<'static>,
    maps: Option<CudaSlice<u8>>,
    /// For `wgmma_ws`: A's and B's addresses at `prepare` where the tensor maps hold them
    /// (`None` for a padded operand, whose map holds its scratch).
    addrs: [Option<u64>; 2],
    group: u32,
    /// `wgmma_ws`'s tile width and cut (`None` for the other kernels).
    tile: Option<WsTile>,
    /// The TMA-store epilogue: the address of C its tensor map holds (`None`: direct stores).
    /// A launch into another buffer stores directly.
    c_map: Option<u64>,
    /// The stream-K tail (`wgmma_sk`): the tiles its launch runs whole before the tail.
    sk_dp: Option<u32>,
    /// A cut's workspace (partial-sum slots, then flags the kernel leaves zero), behind a lock
    /// like the scratch: launches on several streams use it in turn, ordered by its guard.
    ws: Option<Mutex<CudaSlice<f32>>>,
    /// What runs through scratch, and at which pitches.
    pad: PadPlan,
    /// The scratch, behind a lock: launches on several streams or threads write it in turn,
    /// each ordered on its stream by the buffers' guards.
    scratch: Mutex<Scratch>,
}

/// How a product is launched: the kernel, `mma_pipeline`'s configuration and `wgmma_ws`'s
/// tile group. `Options::default()` is the selected kernel in its default configuration.
#[derive(Clone, Copy, Default)]
pub struct Options {
    /// The kernel (`None`: [`Variant::select`]'s).
    pub variant: Option<Variant>,
    /// `mma_pipeline`'s tuning configuration (`None`: the default one; see [`tuning_named`]).
    pub tuning: Option<&'static Tuning>,
    /// Tile rows per group of `wgmma_ws`'s persistent tile order, ≥ 1 (`None`:
    /// `v03_wgmma_ws::GROUP_M`).
    pub group: Option<u32>,
    /// `wgmma_ws`'s tile rows, width and cut (`None`: [`ws_tile`], the model's pick for the
    /// problem: the wide 128 × 256 tile on big products, the narrow, 64-row and cut tiles where
    /// it has few tiles; all validated on the GPU in session 13, `notes/hgemm.md`).
    pub tile: Option<WsTile>,
    /// Whether operands the aligned-only kernels cannot read in place are copied into aligned
    /// scratch ([`Padding::Auto`], the default) or refused.
    pub padding: Padding,
    /// Whether the wide tile may take the stream-K tail where it applies (`wgmma_sk`, an
    /// experiment; `None`: [`sk_tail`], the environment's `RUSTILE_HGEMM_SK_TAIL`).
    pub stream_k_tail: Option<bool>,
}

impl Options {
    /// The default options with the kernel `variant` (`None`: the selected one).
    pub fn variant(variant: Option<Variant>) -> Self {
        Self {
            variant,
            ..Self::default()
        }
    }

    /// `wgmma_ws`'s group: the given one (checked ≥ 1) or the kernel's default.
    fn group(&self) -> Result<u32> {
        match self.group {
            None => Ok(v03_wgmma_ws::GROUP_M),
            Some(0) => Err(Error::Usage("hgemm: the tile group must be ≥ 1".into())),
            Some(g) => Ok(g),
        }
    }
}

/// The `mma.sync` kernels' argument list `(a, b, c, bias, m, n, k, lda, ldb, ldc, α, β, relu)`
/// for `p` on operands at `[a, b, c, bias]` (bias 0: none) — built here once for the GPU and
/// the simulator.
pub fn mma_args(p: &Problem, [a, b, c, bias]: [u64; 4]) -> Vec<Arg> {
    vec![
        Arg::Ptr(a),
        Arg::Ptr(b),
        Arg::Ptr(c),
        Arg::Ptr(bias),
        Arg::U32(p.m as u32),
        Arg::U32(p.n as u32),
        Arg::U32(p.k as u32),
        Arg::U32(p.lda as u32),
        Arg::U32(p.ldb as u32),
        Arg::U32(p.ldc as u32),
        Arg::F32(p.alpha),
        Arg::F32(p.beta),
        Arg::U32(p.relu as u32),
    ]
}

/// Checks `p` against the buffers and the device, and prepares `variant` (or the selected one)
/// in its default configuration.
pub fn prepare(
    gpu: &Gpu,
    variant: Option<Variant>,
    p: &Problem,
    a: &impl DevicePtr<u16>,
    b: &impl DevicePtr<u16>,
    c: &mut Out<'_>,
    bias: Option<&dyn DevicePtr<f32>>,
) -> Result<Prepared> {
    prepare_with(gpu, &Options::variant(variant), p, a, b, c, bias)
}

/// [`prepare()`] with every launch option given.
pub fn prepare_with(
    gpu: &Gpu,
    opts: &Options,
    p: &Problem,
    a: &impl DevicePtr<u16>,
    b: &impl DevicePtr<u16>,
    c: &mut Out<'_>,
    bias: Option<&dyn DevicePtr<f32>>,
) -> Result<Prepared> {
    let tuning = opts.tuning;
    let group = opts.group()?;
    p.check()?;
    let kernel = format!("hgemm {}", p.shape());
    if c.dtype(p.ty) != p.out {
        return Err(Error::Usage(format!(
            "{kernel}: the output buffer is {} but the problem asks for {}",
            c.dtype(p.ty).name(),
            p.out.name()
        )));
    }
    p.check_lens(a.len(), b.len(), c.len(), bias.map(|b| b.len()))?;
    let stream = gpu.stream();
    let addrs = [a.device_ptr(stream).0, b.device_ptr(stream).0];
    let variant = opts
        .variant
        .unwrap_or_else(|| Variant::select(gpu, p, addrs, opts.padding));
    if variant.needs_sm90a() && gpu.flavour() != Flavour::Sm90a {
        let (major, minor) = gpu.info().compute_capability;
        return Err(Error::Unsupported {
            kernel: format!("hgemm/{}", variant.name()),
            what: format!(
                "needs the sm_90a PTX (compute capability 9.0); `{}` is {major}.{minor}",
                gpu.info().name
            ),
        });
    }
    // wgmma_ws's tile: given (checked against the problem and the device before anything is
    // allocated) or the model's pick (which passes the same check by construction).
    let sms = gpu.info().sm_count;
    let tile = match (variant, opts.tile) {
        (Variant::WgmmaWs, Some(t)) => {
            t.check(p, sms)?;
            Some(t)
        }
        (Variant::WgmmaWs, None) => Some(ws_tile(p, sms)),
        (v, Some(t)) => {
            return Err(Error::Usage(format!(
                "hgemm/{}: a tile ({}) is a wgmma_ws option",
                v.name(),
                t.label()
            )))
        }
        (_, None) => None,
    };
    // The padded path: sizes and pitches checked before anything is allocated, then the
    // scratch and a probe of the copies. A selected kernel falls back to `mma` (any pitch, no
    // scratch) where the copies cannot be made (but a device fault is returned).
    let (variant, pad, scratch) = match padded_scratch(gpu, p, variant, opts.padding, a, b) {
        Ok((pad, scratch)) => (variant, pad, scratch),
        Err(e) if opts.variant.is_none() && !e.is_device_fault() => {
            (Variant::Mma, PadPlan::default(), Scratch::default())
        }
        Err(e) => return Err(e),
    };
    // What the kernel reads: scratch (allocated with 256-byte alignment) where padded.
    let q = pad.apply(p);
    let aligned = |op: Operand, addr: u64| pad.pitch(op).is_some() || addr.is_multiple_of(16);
    let kernel_aligned = aligned(Operand::A, addrs[0])
        && aligned(Operand::B, addrs[1])
        && q.tma_ok([0, 0]);
    let refused = |what: &str| Error::Unsupported {
        kernel: format!("hgemm/{}", variant.name()),
        what: format!(
            "{what} needs 16-byte-aligned A and B and pitches lda = {}, ldb = {} that are \
             multiples of 8 elements ({}; hgemm/mma takes any)",
            p.lda,
            p.ldb,
            match opts.padding {
                Padding::Never => "padding is off",
                _ => "they were not padded",
            }
        ),
    };
    match variant {
        Variant::WgmmaWs if !kernel_aligned => return Err(refused("TMA")),
        Variant::MmaPipeline if !kernel_aligned => return Err(refused("cp.async")),
        // A tuning configuration exists for f16 in and out only: a typed refusal naming it.
        Variant::MmaPipeline => {
            pipeline_geometry(p, tuning)?;
        }
        _ => {}
    }
    // A selected kernel may have fallen back to `mma`.
    let tile = tile.filter(|_| variant == Variant::WgmmaWs);
    // The TMA-store epilogue writes C in place (not through C's scratch).
    let c_addr = c.addr(stream);
    let c_staged = |t: WsTile| {
        pad.pitch(Operand::C).is_none() && staged_epilogue(&q, t, c_addr, bias.is_some())
    };
    // The stream-K tail (an experiment): the wide tile's record becomes `wgmma_sk` where it
    // applies, with the tiles it runs whole before the tail.
    let sk_dp = tile
        .filter(|_| opts.stream_k_tail.unwrap_or_else(sk_tail))
        .and_then(|t| stream_k_tail_fits(&q, t, sms, c_staged(t)));
    // Block, shared bytes and grid come from the record that runs.
    let info = match tile {
        Some(_) if sk_dp.is_some() => &v03_wgmma_ws::INFO_SK,
        Some(t) => t.info()?,
        None => variant.kernel(tuning),
    };
    let (threads, shared) = (info.threads(), info.shared_bytes(p.ty));
    let mut grid = match info.launch {
        Launch::Persistent { .. } if tile.is_some_and(|t| t.cut > 1) => {
            (tile.map_or(1, |t| t.grid(p, sms, group)), 1)
        }
        Launch::Persistent { tile } => {
            // The device's tile scheduler, compiled for the host: the grid and the tile walk
            // are one definition. (`p.check` keeps M and N within u32.)
            let tiles = TileGrid::new(p.m as u32, p.n as u32, tile.0, tile.1, group);
            (tiles.persistent_grid(gpu.info().sm_count), 1)
        }
        launch => {
            let (x, y, _) = launch
                .tile_grid(p.m as u64, p.n as u64)
                .unwrap_or((1, 1, 1));
            (x as u32, y as u32)
        }
    };
    let entry = entry_of(info, p)?;
    let symbol = entry.symbol;
    let func = gpu.function(symbol)?;
    if grid.1 > gpu.info().max_grid.1 {
        return Err(Error::TooLarge {
            kernel,
            what: format!("{} tile rows exceed the grid's y limit", grid.1),
        });
    }
    if shared > gpu.info().shared_per_block_optin {
        return Err(Error::Resource {
            kernel,
            what: format!(
                "{shared} bytes of shared memory exceed the device's {}",
                gpu.info().shared_per_block_optin
            ),
        });
    }
    {
        use cudarc::driver::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES as MAX_DYN;
        func.set_attribute(MAX_DYN, shared as i32)
            .during(|| format!("raising {symbol}'s dynamic shared memory to {shared} bytes"))?;
    }
    // A clustered tile: one cluster per pair of tiles (tiles of twice the rows), as many as
    // the device holds at once.
    let cluster = info.needs.cluster;
    if let (Launch::Persistent { tile }, true) = (info.launch, cluster > 1) {
        let fits = crate::launch::cluster::max_active_clusters(
            &func,
            stream,
            (threads, 1, 1),
            shared as u32,
            cluster,
        )?;
        if fits == 0 {
            return Err(Error::Resource {
                kernel,
                what: format!("no cluster of {cluster} blocks of {symbol} fits on the device"),
            });
        }
        let pairs = TileGrid::new(p.m as u32, p.n as u32, cluster * tile.0, tile.1, group);
        grid = (cluster * pairs.persistent_grid(fits.min(sms / cluster)), 1);
    }
    let at = |op: Operand, i: usize| scratch.addr(op, stream).unwrap_or(addrs[i]);
    // The stream-K tail's 16-bit kernels store only through C's map.
    let c_map = tile
        .is_some_and(|t| (tma_store() || sk_dp.is_some()) && c_staged(t))
        .then_some(c_addr);
    let maps = match tile {
        Some(t) => Some(tensor_maps(
            gpu,
            &q,
            at(Operand::A, 0),
            at(Operand::B, 1),
            c_map,
            t,
        )?),
        None => None,
    };
    // A cut's or the stream-K tail's workspace, zeroed (the flags must start at zero; the
    // kernel leaves them so).
    let words = match (tile, sk_dp) {
        (Some(_), Some(_)) => v03_wgmma_ws::cut_words(v03_wgmma_ws::BN, grid.0),
        (Some(t), None) => t.workspace_words(p, sms),
        (None, _) => 0,
    };
    let ws = match words {
        0 => None,
        words => Some(Mutex::new(gpu.alloc::<f32>(words, "hgemm cut workspace")?)),
    };
    Ok(Prepared {
        variant,
        problem: *p,
        func,
        plan: LaunchPlan {
            kernel: info,
            entry,
            grid: (grid.0 as u64, grid.1 as u64, 1),
            block: (threads, 1, 1),
            shared_bytes: shared,
            args: Vec::new(),
        },
        maps,
        addrs: [
            pad.a.is_none().then_some(addrs[0]),
            pad.b.is_none().then_some(addrs[1]),
        ],
        group,
        tile,
        c_map,
        sk_dp,
        ws,
        pad,
        scratch: Mutex::new(scratch),
    })
}

/// The padding `variant` needs for `p` (checked) with A and B, under `padding`, and its
/// scratch. Before anything is allocated the copies' pitches are checked against the driver's
/// 2-D copy limit and the scratch bytes against the device ([`Error::TooLarge`],
/// [`Error::OutOfMemory`]); after, the first rows of A's and B's copies are enqueued
/// ([`Scratch::probe`]: a driver error if the driver refuses their pitches).
fn padded_scratch(
    gpu: &Gpu,
    p: &Problem,
    variant: Variant,
    padding: Padding,
    a: &impl DevicePtr<u16>,
    b: &impl DevicePtr<u16>,
) -> Result<(PadPlan, Scratch)> {
    use cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_PITCH;
    let stream = gpu.stream();
    // The caller's A and B, read by the probe: their guards order it on the stream.
    let (pa, _ga) = a.device_ptr(stream);
    let (pb, _gb) = b.device_ptr(stream);
    let pad = PadPlan::new(p, variant, padding, [pa, pb]);
    if pad.is_empty() {
        return Ok((pad, Scratch::default()));
    }
    let max_pitch = gpu
        .context()
        .attribute(CU_DEVICE_ATTRIBUTE_MAX_PITCH)
        .during(|| "reading the device's 2-D copy pitch limit".into())?;
    pad.check_pitches(p, max_pitch.max(0) as usize)?;
    let bytes = pad.scratch_bytes(p)?;
    gpu.check_fits(bytes, &format!("hgemm {}: padded {}", p.shape(), pad.tag()))?;
    let mut scratch = Scratch::alloc(gpu, p, &pad)?;
    scratch.probe(stream, p, &pad, [(pa, a.len()), (pb, b.len())])?;
    Ok((pad, scratch))
}

impl Prepared {
    /// The kernel it launches.
    pub fn variant(&self) -> Variant {
        self.variant
    }

    /// Whether a launch into the C buffer `prepare` saw leaves through the TMA-store epilogue
    /// (the whole 128 × 256 tile, a 16-bit output, β = 0, no bias, C in place with a pitch of
    /// a multiple of 16 bytes, and [`tma_store`] on). A launch into another C buffer, or with
    /// a bias, stores directly.
    pub fn tma_store(&self) -> bool {
        self.c_map.is_some()
    }

    /// `wgmma_ws`'s tile width and cut (`None` for the other kernels).
    pub fn tile(&self) -> Option<WsTile> {
        self.tile
    }

    /// Whether it runs the 128 × 256 tile with the stream-K tail (`wgmma_sk`, [`sk_tail`]).
    pub fn stream_k_tail(&self) -> bool {
        self.sk_dp.is_some()
    }

    /// The matrices each launch copies through aligned scratch (empty: none).
    pub fn padding(&self) -> PadPlan {
        self.pad
    }

    /// Launches on `stream`: the padded operands' copies into scratch, the kernel, and padded
    /// C's copy back. The buffers are checked again against the problem (lengths, C's type, the
    /// alignment `mma_pipeline` needs of operands read in place); for `wgmma_ws` an operand read
    /// in place must be the buffer `prepare` saw, whose address its tensor map holds (a padded
    /// one may be any buffer of the problem's length).
    pub fn launch(
        &self,
        stream: &Arc<CudaStream>,
        a: &impl DevicePtr<u16>,
        b: &impl DevicePtr<u16>,
        c: &mut Out<'_>,
        bias: Option<&dyn DevicePtr<f32>>,
    ) -> Result<()> {
        let p = &self.problem;
        p.check_lens(a.len(), b.len(), c.len(), bias.map(|b| b.len()))?;
        if c.dtype(p.ty) != p.out {
            return Err(Error::Usage(format!(
                "hgemm {}: the output buffer is {} but the problem asks for {}",
                p.shape(),
                c.dtype(p.ty).name(),
                p.out.name()
            )));
        }
        // The problem the kernel runs: the scratch pitches where padded.
        let q = self.pad.apply(p);
        let (lens_a, lens_b, lens_c) = (a.len(), b.len(), c.len());
        let (a_ptr, _ga) = a.device_ptr(stream);
        let (b_ptr, _gb) = b.device_ptr(stream);
        let bias_ptr = bias.map(|x| x.device_ptr(stream));
        let bias_ptr = bias_ptr.as_ref().map_or(0, |(ptr, _guard)| *ptr);
        let (c_ptr, _gc) = match c {
            Out::Half(c) => c.device_ptr_mut(stream),
            Out::F32(c) => c.device_ptr_mut(stream),
        };
        // Operands read in place, checked before anything is enqueued.
        for (i, op, ptr) in [(0, Operand::A, a_ptr), (1, Operand::B, b_ptr)] {
            if self.pad.pitch(op).is_some() {
                continue;
            }
            match (self.variant, self.addrs[i]) {
                (Variant::WgmmaWs, Some(at)) if at != ptr => {
                    return Err(Error::Usage(format!(
                        "hgemm/wgmma_ws: {op:?} must be the buffer it was prepared with (its \
                         tensor map holds the address); prepare again for other buffers"
                    )))
                }
                (Variant::MmaPipeline, _) if !ptr.is_multiple_of(16) => {
                    return Err(Error::Unsupported {
                        kernel: "hgemm/mma_pipeline".into(),
                        what: format!("cp.async needs a 16-byte-aligned {op:?}"),
                    })
                }
                _ => {}
            }
        }
        let mut scratch = self.scratch.lock().unwrap_or_else(PoisonError::into_inner);
        let started = scratch.start(
            stream,
            p,
            &self.pad,
            [(a_ptr, lens_a), (b_ptr, lens_b), (c_ptr, lens_c)],
        )?;
        let [ka, kb, kc] = started.addrs;
        let (m, n, k, ldc) = (q.m as u32, q.n as u32, q.k as u32, q.ldc as u32);
        let relu = q.relu as u32;
        // The tensor maps' guard, like the buffers', lives until the launch is enqueued.
        let maps = self.maps.as_ref().map(|m| m.device_ptr(stream));
        let mut ws = self
            .ws
            .as_ref()
            .map(|w| w.lock().unwrap_or_else(PoisonError::into_inner));
        let ws = ws.as_mut().map(|w| {
            use cudarc::driver::DevicePtrMut;
            w.device_ptr_mut(stream)
        });
        let ws_ptr = ws.as_ref().map_or(0, |(ptr, _guard)| *ptr);
        // The stream-K tail's kernel takes its whole tiles in `cut`.
        let cut = self.sk_dp.unwrap_or(self.tile.map_or(1, |t| t.cut));
        // The TMA-store epilogue where C is the buffer its map holds and nothing is read.
        let store = self.c_map == Some(kc) && bias_ptr == 0 && q.beta == 0.0;
        if self.sk_dp.is_some() && q.out != DType::F32 && !store {
            return Err(Error::Usage(format!(
                "hgemm {} with the stream-K tail (RUSTILE_HGEMM_SK_TAIL=1): its 16-bit kernel \
                 stores only through the TMA-store epilogue, into the C buffer `prepare` saw, \
                 without bias or β; prepare again for this launch",
                p.shape()
            )));
        }
        let args = match &maps {
            Some((maps_ptr, _guard)) => vec![
                Arg::Ptr(*maps_ptr),
                Arg::Ptr(kc),
                Arg::Ptr(bias_ptr),
                Arg::Ptr(ws_ptr),
                Arg::U32(m),
                Arg::U32(n),
                Arg::U32(k),
                Arg::U32(ldc),
                Arg::F32(q.alpha),
                Arg::F32(q.beta),
                Arg::U32(relu),
                Arg::U32(self.group),
                Arg::U32(cut),
                Arg::U32(store as u32),
            ],
            None => mma_args(&q, [ka, kb, kc, bias_ptr]),
        };
        let plan = LaunchPlan {
            args,
            ..self.plan.clone()
        };
        // SAFETY: the argument lists are v03's `(maps, c, bias, ws, m, n, k, ldc, α, β, relu,
        // group, cut, store)` and the mma kernels' `(a, b, c, bias, m, n, k, lda, ldb, ldc, α, β, relu)`,
        // over `q`, the caller's problem with the scratch pitches where padded. Each operand
        // the kernel touches holds `q`'s span: a caller's buffer was checked above against `p`
        // (lengths, C's type, the bias's n floats), whose pitch it keeps in `q`; a scratch
        // buffer is owned by `self`, was allocated by `prepare` for `q`'s span
        // (`PadPlan::scratch_lens`) and is never reallocated. mma_pipeline's alignment holds
        // for in-place operands (checked above) and scratch (256-byte-aligned allocations,
        // pitches multiples of 8). For `wgmma_ws` the tensor maps describe `q`'s A and B at
        // the scratch's addresses or at the in-place operands' checked above to be the ones
        // the maps hold, so they address memory inside these (checked) buffers, whatever
        // became of the ones `prepare` saw; `store` is set only when C is the buffer C's map
        // (built by `prepare` for `q`'s C in place, when the record has the staging) holds,
        // checked above against `p`; the maps buffer is owned by `self`. Grid and
        // shared memory were checked by `prepare`, and for a cut the tile (`WsTile::check`: at
        // most one block per SM, so all are resident) and its workspace of `cut_words` for that
        // grid, owned by `self`, its flags zero (allocated zeroed, left zero by every launch);
        // for the stream-K tail (`wgmma_sk`) the persistent grid of at most one block per SM
        // (all resident), `cut` its whole tiles (`StreamK::tail`: a multiple of the grid, at
        // most the tiles), its workspace `cut_words(256, grid)` likewise, and its 16-bit
        // kernels, which store only through C's map, launched only with `store` (checked
        // above); every stream guard (the maps', the
        // scratch's in `started`) lives until the launch is enqueued.
        unsafe { plan.enqueue(&self.func, stream) }.map_err(|e| {
            e.context(|| format!("launching hgemm/{} {}", self.variant.name(), p.shape()))
        })?;
        pad::finish(stream, p, &self.pad, &started, (c_ptr, lens_c))
    }
}

/// Checks and runs one product (`variant` None: the selected one).
pub fn run(
    gpu: &Gpu,
    variant: Option<Variant>,
    p: &Problem,
    a: &impl DevicePtr<u16>,
    b: &impl DevicePtr<u16>,
    c: &mut Out<'_>,
    bias: Option<&dyn DevicePtr<f32>>,
) -> Result<Variant> {
    let prep = prepare(gpu, variant, p, a, b, c, bias)?;
    prep.launch(gpu.stream(), a, b, c, bias)?;
    Ok(prep.variant)
}
