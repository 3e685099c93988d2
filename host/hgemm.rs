//! Tensor-core GEMM (f16 / bf16 in, f32 accumulation): `C = act(α·A·B + β·C + bias)`.
//!
//! A is row-major M × K; B is row-major K × N ([`BLayout::RowMajor`]) or its transpose stored
//! row-major N × K ([`BLayout::Transposed`]); C is row-major M × N in the input type or f32.
//! Three kernels (`kernels-rs/src/hgemm/`):
//! - [`Variant::Mma`]: `mma.sync`, one shared k-tile at a time (sm_80+, any alignment);
//! - [`Variant::MmaPipeline`]: `mma.sync` + `ldmatrix` + a `cp.async` ring (sm_80+);
//! - [`Variant::WgmmaWs`]: `wgmma` + TMA, warp-specialized, persistent (sm_90a only).
//!
//! [`Variant::select`] picks `WgmmaWs` on compute capability 9.0 when TMA can describe the
//! operands (16-byte-aligned base addresses and row pitches), `MmaPipeline` on other devices
//! with such operands, and `Mma` for any other pitch. Asking for `WgmmaWs` elsewhere, or for an
//! aligned-only kernel with unaligned operands, is [`Error::Unsupported`], not a launch failure.

use std::sync::Arc;

use cudarc::cublas::CudaBlas;
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut, LaunchConfig, PushKernelArg};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rayon::prelude::*;
use rustile_kernels::hgemm::v02_mma_pipeline::Tuning;
use rustile_kernels::hgemm::{v01_mma, v02_mma_pipeline, v03_wgmma_ws};
use rustile_kernels::registry::{DType, Entry, KernelInfo, Layout, SimFn};

use crate::error::{DriverContext, Error, Result};
use crate::gpu::Gpu;
use crate::harness::{self, Stats, TimingConfig};
use crate::ptx::Flavour;

/// Input element type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub enum InType {
    /// IEEE half.
    F16,
    /// bfloat16.
    Bf16,
}

impl InType {
    /// Name in symbols and reports.
    pub fn name(self) -> &'static str {
        match self {
            InType::F16 => "f16",
            InType::Bf16 => "bf16",
        }
    }
    /// Rounds an f32 to this type, as bits.
    pub fn round(self, v: f32) -> u16 {
        match self {
            InType::F16 => half::f16::from_f32(v).to_bits(),
            InType::Bf16 => half::bf16::from_f32(v).to_bits(),
        }
    }
    /// Widens bits of this type.
    pub fn widen(self, bits: u16) -> f32 {
        match self {
            InType::F16 => half::f16::from_bits(bits).to_f32(),
            InType::Bf16 => half::bf16::from_bits(bits).to_f32(),
        }
    }
    /// Unit roundoff of the type (half an ulp at 1).
    pub fn unit_roundoff(self) -> f64 {
        match self {
            InType::F16 => 2f64.powi(-11),
            InType::Bf16 => 2f64.powi(-8),
        }
    }
}

/// Output element type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub enum OutType {
    /// The input type.
    Same,
    /// f32.
    F32,
}

/// How B is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub enum BLayout {
    /// K × N row-major (N contiguous), pitch `ldb ≥ n`.
    RowMajor,
    /// N × K row-major (K contiguous: Bᵀ), pitch `ldb ≥ k`.
    Transposed,
}

impl BLayout {
    /// `bn` (row-major) or `bt` (transposed), as in symbols and reports.
    pub fn tag(self) -> &'static str {
        match self {
            BLayout::RowMajor => "bn",
            BLayout::Transposed => "bt",
        }
    }
}

/// The launch geometry of an `mma_pipeline` build: the default configuration or a tuning one.
#[derive(Clone, Copy, Debug)]
pub struct PipelineGeometry {
    /// Entry point.
    pub symbol: &'static str,
    /// Its simulator entry.
    pub sim: Option<SimFn>,
    /// Threads per block.
    pub threads: u32,
    /// Dynamic shared bytes.
    pub shared: usize,
    /// Block tile `(rows, columns)` of C.
    pub tile: (u32, u32),
}

impl PipelineGeometry {
    /// The grid over C: `(column tiles, row tiles)`.
    pub fn grid(&self, p: &Problem) -> (u32, u32) {
        (
            p.n.div_ceil(self.tile.1 as usize) as u32,
            p.m.div_ceil(self.tile.0 as usize) as u32,
        )
    }
}

/// The `mma_pipeline` configuration called `name`: `default` (or empty) is the default one,
/// `None`; an unknown name is a usage error listing the known ones.
pub fn tuning_named(name: &str) -> Result<Option<&'static Tuning>> {
    if name.is_empty() || name == "default" {
        return Ok(None);
    }
    let all = v02_mma_pipeline::TUNING;
    all.iter()
        .find(|t| t.name == name)
        .map(Some)
        .ok_or_else(|| {
            let known: Vec<&str> = all.iter().map(|t| t.name).collect();
            Error::Usage(format!(
                "no mma_pipeline configuration `{name}` (default, {})",
                known.join(", ")
            ))
        })
}

/// The `mma_pipeline` entry for `p`: the default configuration's, or `tuning`'s, which exist
/// for f16 in and out only.
pub fn pipeline_geometry(p: &Problem, tuning: Option<&Tuning>) -> Result<PipelineGeometry> {
    let kernel = tuning.map_or(&v02_mma_pipeline::INFO, |t| t.info);
    let entry = entry_of(kernel, p)?;
    let rustile_kernels::registry::Launch::Tiles { tile, .. } = kernel.launch else {
        unreachable!("mma_pipeline records are tiled launches")
    };
    Ok(PipelineGeometry {
        symbol: entry.symbol,
        sim: entry.sim,
        threads: kernel.threads(),
        shared: kernel.shared_bytes_f16,
        tile,
    })
}

/// A kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub enum Variant {
    /// `mma.sync`, single-buffered.
    Mma,
    /// `mma.sync` + `ldmatrix` + `cp.async` ring.
    MmaPipeline,
    /// `wgmma` + TMA, warp-specialized, persistent.
    WgmmaWs,
}

impl Variant {
    /// Every variant, in ladder order.
    pub const ALL: [Variant; 3] = [Variant::Mma, Variant::MmaPipeline, Variant::WgmmaWs];

    /// Name in reports and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Variant::Mma => "mma",
            Variant::MmaPipeline => "mma_pipeline",
            Variant::WgmmaWs => "wgmma_ws",
        }
    }

    /// Parses a name.
    pub fn parse(s: &str) -> Result<Self> {
        Self::ALL
            .into_iter()
            .find(|v| v.name() == s)
            .ok_or_else(|| {
                Error::Usage(format!(
                    "unknown hgemm variant `{s}` (mma, mma_pipeline, wgmma_ws)"
                ))
            })
    }

    /// The flavour the variant needs.
    pub fn needs_sm90a(self) -> bool {
        self == Variant::WgmmaWs
    }

    /// The best variant for this device and problem (addresses included).
    pub fn select(gpu: &Gpu, p: &Problem, addrs: [u64; 2]) -> Variant {
        match (gpu.flavour(), p.tma_ok(addrs)) {
            (Flavour::Sm90a, true) => Variant::WgmmaWs,
            (_, true) => Variant::MmaPipeline,
            (_, false) => Variant::Mma,
        }
    }

    /// The variant's registry record.
    pub fn info(self) -> &'static KernelInfo {
        match self {
            Variant::Mma => &v01_mma::INFO,
            Variant::MmaPipeline => &v02_mma_pipeline::INFO,
            Variant::WgmmaWs => &v03_wgmma_ws::INFO,
        }
    }

    fn symbol(self, p: &Problem) -> String {
        entry_of(self.info(), p).map_or_else(|_| String::new(), |e| e.symbol.to_string())
    }
}

/// The registry signature `(input, output, B layout)` of `p`.
pub fn signature(p: &Problem) -> (DType, DType, Layout) {
    let input = match p.ty {
        InType::F16 => DType::F16,
        InType::Bf16 => DType::Bf16,
    };
    let out = match p.out {
        OutType::Same => input,
        OutType::F32 => DType::F32,
    };
    let layout = match p.b {
        BLayout::RowMajor => Layout::Bn,
        BLayout::Transposed => Layout::Bt,
    };
    (input, out, layout)
}

/// `kernel`'s entry for `p`'s signature, or [`Error::Unsupported`] naming what is missing.
pub fn entry_of(kernel: &'static KernelInfo, p: &Problem) -> Result<&'static Entry> {
    let (i, o, l) = signature(p);
    kernel.entry_for(i, o, l).ok_or_else(|| Error::Unsupported {
        kernel: format!("hgemm/{}", kernel.name),
        what: format!("not built for {} in, {} out, B {:?}", i.name(), o.name(), l),
    })
}

/// One problem: shape, layouts, types and the epilogue's scalars.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Problem {
    /// Rows of A and C.
    pub m: usize,
    /// Columns of B and C.
    pub n: usize,
    /// Columns of A, rows of B.
    pub k: usize,
    /// Row pitch of A (≥ k).
    pub lda: usize,
    /// Row pitch of B (≥ n for row-major B, ≥ k for transposed B).
    pub ldb: usize,
    /// Row pitch of C (≥ n).
    pub ldc: usize,
    /// B's layout.
    pub b: BLayout,
    /// Input type.
    pub ty: InType,
    /// Output type.
    pub out: OutType,
    /// α.
    pub alpha: f32,
    /// β (0: C is not read).
    pub beta: f32,
    /// ReLU after the bias.
    pub relu: bool,
}

impl Problem {
    /// `C = A·B`, tight pitches, row-major B, output in the input type.
    pub fn new(ty: InType, m: usize, n: usize, k: usize) -> Self {
        Self {
            m,
            n,
            k,
            lda: k,
            ldb: n,
            ldc: n,
            b: BLayout::RowMajor,
            ty,
            out: OutType::Same,
            alpha: 1.0,
            beta: 0.0,
            relu: false,
        }
    }

    /// The same problem with B transposed (tight pitch).
    pub fn with_b(mut self, b: BLayout) -> Self {
        self.b = b;
        self.ldb = match b {
            BLayout::RowMajor => self.n,
            BLayout::Transposed => self.k,
        };
        self
    }

    /// Shape as text.
    pub fn shape(&self) -> String {
        format!("{}x{}x{}", self.m, self.n, self.k)
    }

    /// Elements each buffer must hold: `[a, b, c]`.
    pub fn lens(&self) -> [usize; 3] {
        let span = |rows: usize, cols: usize, ld: usize| {
            if rows == 0 || cols == 0 {
                0
            } else {
                (rows - 1) * ld + cols
            }
        };
        let b = match self.b {
            BLayout::RowMajor => span(self.k, self.n, self.ldb),
            BLayout::Transposed => span(self.n, self.k, self.ldb),
        };
        [
            span(self.m, self.k, self.lda),
            b,
            span(self.m, self.n, self.ldc),
        ]
    }

    /// Floating-point operations, `2·M·N·K`.
    pub fn flops(&self) -> f64 {
        2.0 * self.m as f64 * self.n as f64 * self.k as f64
    }

    /// Checks shapes and pitches (not buffers).
    pub fn check(&self) -> Result<()> {
        let kernel = || format!("hgemm {}", self.shape());
        if self.m == 0 || self.n == 0 {
            return Err(Error::ZeroSize {
                kernel: kernel(),
                what: if self.m == 0 { "m" } else { "n" },
            });
        }
        let b_cols = match self.b {
            BLayout::RowMajor => self.n,
            BLayout::Transposed => self.k,
        };
        for (name, ld, need) in [
            ("lda", self.lda, self.k),
            ("ldb", self.ldb, b_cols),
            ("ldc", self.ldc, self.n),
        ] {
            if ld < need {
                return Err(Error::Usage(format!(
                    "{}: {name} = {ld} is smaller than the row length {need}",
                    kernel()
                )));
            }
        }
        // The kernels index with 32-bit dimensions and 64-bit offsets.
        let limit = u32::MAX as usize;
        for (name, v) in [
            ("m", self.m),
            ("n", self.n),
            ("k", self.k),
            ("lda", self.lda),
            ("ldb", self.ldb),
            ("ldc", self.ldc),
        ] {
            if v > limit / 2 {
                return Err(Error::TooLarge {
                    kernel: kernel(),
                    what: format!("{name} = {v} exceeds 2^31"),
                });
            }
        }
        if !self.alpha.is_finite() || !self.beta.is_finite() {
            return Err(Error::Usage(format!(
                "{}: α = {} and β = {} must be finite",
                kernel(),
                self.alpha,
                self.beta
            )));
        }
        Ok(())
    }

    /// Whether TMA can describe A and B (base addresses and pitches 16-byte aligned).
    pub fn tma_ok(&self, addrs: [u64; 2]) -> bool {
        addrs.iter().all(|a| a.is_multiple_of(16))
            && (self.lda * 2).is_multiple_of(16)
            && (self.ldb * 2).is_multiple_of(16)
    }

    fn out_bytes(&self) -> usize {
        match self.out {
            OutType::Same => 2,
            OutType::F32 => 4,
        }
    }
}

/// The output buffer: bits of the input type, or f32.
pub enum Out<'a> {
    /// f16/bf16 bits.
    Half(&'a mut CudaSlice<u16>),
    /// f32.
    F32(&'a mut CudaSlice<f32>),
}

impl Out<'_> {
    fn len(&self) -> usize {
        match self {
            Out::Half(c) => c.len(),
            Out::F32(c) => c.len(),
        }
    }
    fn kind(&self) -> OutType {
        match self {
            Out::Half(_) => OutType::Same,
            Out::F32(_) => OutType::F32,
        }
    }
}

/// A 2-D tiled TMA tensor map (`cuTensorMapEncodeTiled`) over a row-major matrix of `rows`
/// rows of `cols` elements of `ty`, pitch `ld` elements, at device address `addr`; the box is
/// `(cols, rows)` = `bx`, 128-byte swizzle, zero fill out of range. The 128 bytes go to device
/// memory, where TMA reads them (a by-value kernel parameter cannot carry them from Rust).
pub fn tensor_map_2d(
    ty: InType,
    addr: u64,
    cols: usize,
    rows: usize,
    ld: usize,
    bx: (u32, u32),
) -> Result<[u64; 16]> {
    let elem = match ty {
        InType::F16 => TmaElem::F16,
        InType::Bf16 => TmaElem::Bf16,
    };
    tensor_map_2d_of(elem, true, addr, cols, rows, ld, bx)
}

/// Element types of [`tensor_map_2d_of`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TmaElem {
    /// f16.
    F16,
    /// bf16.
    Bf16,
    /// f32.
    F32,
}

impl TmaElem {
    fn bytes(self) -> usize {
        match self {
            TmaElem::F16 | TmaElem::Bf16 => 2,
            TmaElem::F32 => 4,
        }
    }
}

/// [`tensor_map_2d`] for any [`TmaElem`], with 128-byte swizzle (`swizzle128`) or none (for
/// plain row-major staging tiles, e.g. a TMA store's source).
pub fn tensor_map_2d_of(
    elem: TmaElem,
    swizzle128: bool,
    addr: u64,
    cols: usize,
    rows: usize,
    ld: usize,
    bx: (u32, u32),
) -> Result<[u64; 16]> {
    use cudarc::driver::sys::{
        self, CUtensorMap, CUtensorMapDataType, CUtensorMapFloatOOBfill, CUtensorMapInterleave,
        CUtensorMapL2promotion, CUtensorMapSwizzle,
    };
    let dtype = match elem {
        TmaElem::F16 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
        TmaElem::Bf16 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
        TmaElem::F32 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
    };
    let swizzle = if swizzle128 {
        CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B
    } else {
        CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_NONE
    };
    let mut map = CUtensorMap { opaque: [0; 16] };
    // K = 0: the kernel loads nothing, but the driver wants non-empty dimensions and a non-zero
    // pitch.
    let dims = [cols.max(1) as u64, rows.max(1) as u64];
    let strides = [(ld * elem.bytes()).max(16) as u64];
    let boxes = [bx.0, bx.1];
    let unit = [1u32, 1];
    // SAFETY: every pointer argument points to a live local of the documented length (rank 2:
    // two dims, one stride, two box sizes, two element strides); the driver only writes `map`.
    let r = unsafe {
        sys::cuTensorMapEncodeTiled(
            &mut map,
            dtype,
            2,
            addr as *mut _,
            dims.as_ptr(),
            strides.as_ptr(),
            boxes.as_ptr(),
            unit.as_ptr(),
            CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
            swizzle,
            CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
    };
    r.result()
        .during(|| format!("encoding a tensor map ({cols} × {rows}, pitch {ld}, box {bx:?})"))?;
    Ok(map.opaque)
}

/// Uploads tensor maps back to back (128 bytes each) into one device buffer.
pub fn upload_maps(gpu: &Gpu, maps: &[[u64; 16]]) -> Result<CudaSlice<u8>> {
    let mut bytes = Vec::with_capacity(128 * maps.len());
    for word in maps.iter().flatten() {
        bytes.extend_from_slice(&word.to_le_bytes());
    }
    gpu.upload(&bytes, "tensor maps")
}

/// An owned output buffer of either type (what [`Out`] borrows).
enum OutBuf {
    Half(CudaSlice<u16>),
    F32(CudaSlice<f32>),
}

impl OutBuf {
    fn alloc(gpu: &Gpu, ty: OutType, len: usize) -> Result<Self> {
        Ok(match ty {
            OutType::Same => OutBuf::Half(gpu.alloc(len, "hgemm C")?),
            OutType::F32 => OutBuf::F32(gpu.alloc(len, "hgemm C")?),
        })
    }

    fn out(&mut self) -> Out<'_> {
        match self {
            OutBuf::Half(c) => Out::Half(c),
            OutBuf::F32(c) => Out::F32(c),
        }
    }
}

/// Tensor maps for the `wgmma` kernel, in device memory (A at byte 0, B at byte 128).
fn tensor_maps(gpu: &Gpu, p: &Problem, a: u64, b: u64) -> Result<CudaSlice<u8>> {
    let map_a = tensor_map_2d(p.ty, a, p.k, p.m, p.lda, v03_wgmma_ws::A_BOX)?;
    let map_b = match p.b {
        BLayout::Transposed => tensor_map_2d(p.ty, b, p.k, p.n, p.ldb, v03_wgmma_ws::BT_BOX)?,
        BLayout::RowMajor => tensor_map_2d(p.ty, b, p.n, p.k, p.ldb, v03_wgmma_ws::BN_BOX)?,
    };
    upload_maps(gpu, &[map_a, map_b])
}

/// A problem bound to its buffers and kernel, ready to launch repeatedly (the tensor maps are
/// built once).
pub struct Prepared {
    variant: Variant,
    problem: Problem,
    func: cudarc::driver::CudaFunction,
    cfg: LaunchConfig,
    maps: Option<CudaSlice<u8>>,
    group: u32,
}

/// Checks `p` against the buffers and the device, and prepares `variant` (or the selected one);
/// `mma_pipeline` in its default configuration.
pub fn prepare(
    gpu: &Gpu,
    variant: Option<Variant>,
    p: &Problem,
    a: &impl DevicePtr<u16>,
    b: &impl DevicePtr<u16>,
    c: &Out<'_>,
    bias: Option<&CudaSlice<f32>>,
) -> Result<Prepared> {
    prepare_tuned(gpu, variant, None, p, a, b, c, bias)
}

/// [`prepare`] with `mma_pipeline`'s configuration given (`None`: the default one).
#[allow(clippy::too_many_arguments)]
pub fn prepare_tuned(
    gpu: &Gpu,
    variant: Option<Variant>,
    tuning: Option<&Tuning>,
    p: &Problem,
    a: &impl DevicePtr<u16>,
    b: &impl DevicePtr<u16>,
    c: &Out<'_>,
    bias: Option<&CudaSlice<f32>>,
) -> Result<Prepared> {
    p.check()?;
    let kernel = format!("hgemm {}", p.shape());
    if c.kind() != p.out {
        return Err(Error::Usage(format!(
            "{kernel}: the output buffer is {:?} but the problem asks for {:?}",
            c.kind(),
            p.out
        )));
    }
    let [la, lb, lc] = p.lens();
    for (name, got, need) in [("a", a.len(), la), ("b", b.len(), lb), ("c", c.len(), lc)] {
        if got < need {
            return Err(Error::BufferLength {
                kernel: kernel.clone(),
                buffer: name,
                got,
                need,
                shape: p.shape(),
            });
        }
    }
    if let Some(bias) = bias {
        if bias.len() < p.n {
            return Err(Error::BufferLength {
                kernel: kernel.clone(),
                buffer: "bias",
                got: bias.len(),
                need: p.n,
                shape: p.shape(),
            });
        }
    }
    let stream = gpu.stream();
    let addrs = [a.device_ptr(stream).0, b.device_ptr(stream).0];
    let variant = variant.unwrap_or_else(|| Variant::select(gpu, p, addrs));
    if variant.needs_sm90a() {
        if gpu.flavour() != Flavour::Sm90a {
            let (major, minor) = gpu.info().compute_capability;
            return Err(Error::Unsupported {
                kernel: format!("hgemm/{}", variant.name()),
                what: format!(
                    "needs the sm_90a PTX (compute capability 9.0); `{}` is {major}.{minor}",
                    gpu.info().name
                ),
            });
        }
        if !p.tma_ok(addrs) {
            return Err(Error::Unsupported {
                kernel: format!("hgemm/{}", variant.name()),
                what: format!(
                    "TMA needs 16-byte-aligned A and B and pitches lda = {}, ldb = {} that are multiples of 8 elements",
                    p.lda, p.ldb
                ),
            });
        }
    }
    if variant == Variant::MmaPipeline && !p.tma_ok(addrs) {
        return Err(Error::Unsupported {
            kernel: "hgemm/mma_pipeline".into(),
            what: format!(
                "cp.async needs 16-byte-aligned A and B and pitches lda = {}, ldb = {} that are multiples of 8 elements (hgemm/mma takes any)",
                p.lda, p.ldb
            ),
        });
    }
    let (symbol, threads, shared, grid) = match variant {
        Variant::WgmmaWs => {
            let tiles =
                p.m.div_ceil(v03_wgmma_ws::BM as usize) * p.n.div_ceil(v03_wgmma_ws::BN as usize);
            let grid = tiles.min(gpu.info().sm_count as usize).max(1) as u32;
            (
                variant.symbol(p),
                v03_wgmma_ws::THREADS,
                v03_wgmma_ws::SHARED_BYTES,
                (grid, 1),
            )
        }
        Variant::Mma => (
            variant.symbol(p),
            v01_mma::THREADS,
            v01_mma::SHARED_BYTES,
            (
                p.n.div_ceil(v01_mma::BN as usize) as u32,
                p.m.div_ceil(v01_mma::BM as usize) as u32,
            ),
        ),
        Variant::MmaPipeline => {
            let g = pipeline_geometry(p, tuning)?;
            (g.symbol.to_owned(), g.threads, g.shared, g.grid(p))
        }
    };
    let func = gpu.function(&symbol)?;
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
    let maps = match variant {
        Variant::WgmmaWs => Some(tensor_maps(gpu, p, addrs[0], addrs[1])?),
        _ => None,
    };
    Ok(Prepared {
        variant,
        problem: *p,
        func,
        cfg: LaunchConfig {
            grid_dim: (grid.0, grid.1, 1),
            block_dim: (threads, 1, 1),
            shared_mem_bytes: shared as u32,
        },
        maps,
        group: v03_wgmma_ws::GROUP_M,
    })
}

impl Prepared {
    /// `wgmma_ws` walks its tiles in bands of `group` tile rows (≥ 1; default
    /// [`v03_wgmma_ws::GROUP_M`]); the other kernels ignore it.
    pub fn with_group(mut self, group: u32) -> Self {
        self.group = group.max(1);
        self
    }

    /// The kernel it launches.
    pub fn variant(&self) -> Variant {
        self.variant
    }

    /// Launches on `stream`. The buffers must be the ones `prepare` checked (same lengths and,
    /// for `wgmma`, the same A and B: the tensor maps hold their addresses).
    pub fn launch(
        &self,
        stream: &Arc<CudaStream>,
        a: &impl DevicePtr<u16>,
        b: &impl DevicePtr<u16>,
        c: &mut Out<'_>,
        bias: Option<&CudaSlice<f32>>,
    ) -> Result<()> {
        let p = &self.problem;
        let (m, n, k) = (p.m as u32, p.n as u32, p.k as u32);
        let (lda, ldb, ldc) = (p.lda as u32, p.ldb as u32, p.ldc as u32);
        let relu = p.relu as u32;
        let bias_ptr = bias.map(|x| x.device_ptr(stream).0).unwrap_or(0);
        let c_ptr = match c {
            Out::Half(c) => c.device_ptr_mut(stream).0,
            Out::F32(c) => c.device_ptr_mut(stream).0,
        };
        let mut args = stream.launch_builder(&self.func);
        match &self.maps {
            Some(maps) => {
                let maps_ptr = maps.device_ptr(stream).0;
                args.arg(&maps_ptr)
                    .arg(&c_ptr)
                    .arg(&bias_ptr)
                    .arg(&m)
                    .arg(&n)
                    .arg(&k)
                    .arg(&ldc)
                    .arg(&p.alpha)
                    .arg(&p.beta)
                    .arg(&relu)
                    .arg(&self.group);
                // SAFETY: the signature is v03's `(maps, c, bias, m, n, k, ldc, α, β, relu,
                // group)`;
                // `prepare` checked the buffers against the shape and built the maps for A and
                // B's addresses, and the grid and shared memory for this kernel.
                unsafe { args.launch(self.cfg) }
            }
            None => {
                let a_ptr = a.device_ptr(stream).0;
                let b_ptr = b.device_ptr(stream).0;
                args.arg(&a_ptr)
                    .arg(&b_ptr)
                    .arg(&c_ptr)
                    .arg(&bias_ptr)
                    .arg(&m)
                    .arg(&n)
                    .arg(&k)
                    .arg(&lda)
                    .arg(&ldb)
                    .arg(&ldc)
                    .arg(&p.alpha)
                    .arg(&p.beta)
                    .arg(&relu);
                // SAFETY: the signature is the mma kernels' `(a, b, c, bias, m, n, k, lda, ldb,
                // ldc, α, β, relu)`; `prepare` checked every buffer against the shape.
                unsafe { args.launch(self.cfg) }
            }
        }
        .during(|| format!("launching hgemm/{} {}", self.variant.name(), p.shape()))?;
        Ok(())
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
    bias: Option<&CudaSlice<f32>>,
) -> Result<Variant> {
    let prep = prepare(gpu, variant, p, a, b, c, bias)?;
    prep.launch(gpu.stream(), a, b, c, bias)?;
    Ok(prep.variant)
}

/// cuBLAS (`cublasGemmEx`, f32 compute) on the same problem: the baseline. No bias or ReLU.
pub fn cublas(
    blas: &CudaBlas,
    stream: &Arc<CudaStream>,
    p: &Problem,
    a: &impl DevicePtr<u16>,
    b: &impl DevicePtr<u16>,
    c: &mut Out<'_>,
) -> Result<()> {
    use cudarc::cublas::result::gemm_ex;
    use cudarc::cublas::sys::cublasOperation_t::{CUBLAS_OP_N, CUBLAS_OP_T};
    use cudarc::cublas::sys::{cublasComputeType_t, cublasGemmAlgo_t, cudaDataType_t};
    let in_ty = match p.ty {
        InType::F16 => cudaDataType_t::CUDA_R_16F,
        InType::Bf16 => cudaDataType_t::CUDA_R_16BF,
    };
    let (c_ptr, c_ty) = match c {
        Out::Half(c) => (c.device_ptr_mut(stream).0, in_ty),
        Out::F32(c) => (c.device_ptr_mut(stream).0, cudaDataType_t::CUDA_R_32F),
    };
    // Row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ: B's buffer first.
    let op_b = match p.b {
        BLayout::RowMajor => CUBLAS_OP_N,
        BLayout::Transposed => CUBLAS_OP_T,
    };
    let a_ptr = a.device_ptr(stream).0;
    let b_ptr = b.device_ptr(stream).0;
    // SAFETY: the column-major views of the row-major buffers (B: n × k or its transpose, A:
    // k × m, C: n × m) with the problem's pitches; the caller sized the buffers from `lens`.
    unsafe {
        gemm_ex(
            *blas.handle(),
            op_b,
            CUBLAS_OP_N,
            p.n as i32,
            p.m as i32,
            p.k as i32,
            (&p.alpha) as *const f32 as *const _,
            b_ptr as *const _,
            in_ty,
            p.ldb as i32,
            a_ptr as *const _,
            in_ty,
            p.lda as i32,
            (&p.beta) as *const f32 as *const _,
            c_ptr as *mut _,
            c_ty,
            p.ldc as i32,
            cublasComputeType_t::CUBLAS_COMPUTE_32F,
            cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
        )
    }
    .map_err(|e| Error::Usage(format!("cuBLAS GemmEx {}: {e:?}", p.shape())))
}

/// Random inputs in [-1, 1), rounded to the type.
pub fn random_bits(ty: InType, len: usize, seed: u64) -> Vec<u16> {
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..len)
        .map(|_| ty.round(rng.random_range(-1.0f32..1.0)))
        .collect()
}

/// Host-side inputs of one check.
pub struct Inputs {
    /// A bits.
    pub a: Vec<u16>,
    /// B bits.
    pub b: Vec<u16>,
    /// Old C (as f32), used when β ≠ 0.
    pub c: Vec<f32>,
    /// Bias, if any.
    pub bias: Option<Vec<f32>>,
}

impl Inputs {
    /// Fresh inputs for `p`: A and B in [-1, 1) rounded to the input type, an old C in [-1, 1)
    /// representable in the output type, and a bias when `with_bias`.
    pub fn random(p: &Problem, with_bias: bool, seed: u64) -> Self {
        let [la, lb, lc] = p.lens();
        let mut rng = SmallRng::seed_from_u64(seed ^ 0x51);
        let c = (0..lc)
            .map(|_| {
                let v: f32 = rng.random_range(-1.0..1.0);
                match p.out {
                    OutType::Same => p.ty.widen(p.ty.round(v)),
                    OutType::F32 => v,
                }
            })
            .collect();
        Self {
            a: random_bits(p.ty, la, seed),
            b: random_bits(p.ty, lb, seed ^ 0x9E37_79B9),
            c,
            bias: with_bias.then(|| {
                let mut rng = SmallRng::seed_from_u64(seed ^ 0xB1A5);
                (0..p.n).map(|_| rng.random_range(-1.0f32..1.0)).collect()
            }),
        }
    }

    /// C before the launch as output-type bits: NaN when β = 0 (so a skipped element cannot
    /// pass), the old C otherwise.
    fn c_before_half(&self, p: &Problem) -> Vec<u16> {
        if p.beta == 0.0 {
            vec![0x7FFF; self.c.len()]
        } else {
            self.c.iter().map(|&v| p.ty.round(v)).collect()
        }
    }

    /// As [`Inputs::c_before_half`], for f32 output.
    fn c_before_f32(&self, p: &Problem) -> Vec<f32> {
        if p.beta == 0.0 {
            vec![f32::NAN; self.c.len()]
        } else {
            self.c.clone()
        }
    }
}

/// The float64 reference of element `(i, j)` and the sum of the absolute values of its terms
/// (the scale of its rounding error).
pub fn reference_at(p: &Problem, x: &Inputs, i: usize, j: usize) -> (f64, f64) {
    let (mut acc, mut abs) = (0f64, 0f64);
    for kk in 0..p.k {
        let av = p.ty.widen(x.a[i * p.lda + kk]) as f64;
        let bv = match p.b {
            BLayout::RowMajor => x.b[kk * p.ldb + j],
            BLayout::Transposed => x.b[j * p.ldb + kk],
        };
        let t = av * p.ty.widen(bv) as f64;
        acc += t;
        abs += t.abs();
    }
    let mut r = p.alpha as f64 * acc;
    let mut scale = (p.alpha as f64).abs() * abs;
    if p.beta != 0.0 {
        let old = x.c[i * p.ldc + j] as f64;
        r += p.beta as f64 * old;
        scale += (p.beta as f64 * old).abs();
    }
    if let Some(bias) = &x.bias {
        r += bias[j] as f64;
        scale += (bias[j] as f64).abs();
    }
    if p.relu && r < 0.0 {
        r = 0.0;
    }
    (r, scale)
}

/// Tolerance for an element with reference `r` and term scale `s`: the output's rounding (the
/// unit roundoff relative to `r`, twice, or the subnormal spacing near zero) plus f32
/// accumulation error, bounded by `k · 2⁻²⁴ · s` worst-case and allowed `2⁻¹⁶ · s`.
pub fn tolerance(p: &Problem, r: f64, s: f64) -> f64 {
    // Unit roundoff and the spacing of the subnormals (the absolute rounding floor).
    let (out_u, out_tiny) = match (p.out, p.ty) {
        (OutType::Same, InType::F16) => (p.ty.unit_roundoff(), 2f64.powi(-24)),
        (OutType::Same, InType::Bf16) => (p.ty.unit_roundoff(), 2f64.powi(-133)),
        (OutType::F32, _) => (2f64.powi(-24), 2f64.powi(-149)),
    };
    2.0 * out_u * r.abs() + out_tiny + 2f64.powi(-16) * s
}

/// Compares `got` (widened output) with the float64 reference on the elements `(i, j)` of
/// `which`. NaN never passes.
pub fn compare(p: &Problem, x: &Inputs, got: &[f32], which: &[(usize, usize)]) -> Result<usize> {
    let bad = which.par_iter().find_map_any(|&(i, j)| {
        let (r, s) = reference_at(p, x, i, j);
        let g = got[i * p.ldc + j] as f64;
        let tol = tolerance(p, r, s);
        if g.is_nan() || (g - r).abs() > tol {
            Some(format!(
                "C[{i}][{j}] = {g}, float64 reference {r} (tolerance {tol:.3e})"
            ))
        } else {
            None
        }
    });
    match bad {
        Some(detail) => Err(Error::Mismatch {
            kernel: "hgemm".into(),
            shape: p.shape(),
            detail,
        }),
        None => Ok(which.len()),
    }
}

/// Elements to check: all of C when it is small, otherwise every element of the last tile row
/// and column (the tails), the corners, and `samples` random ones.
pub fn elements_to_check(p: &Problem, samples: usize, seed: u64) -> Vec<(usize, usize)> {
    if (p.m * p.n) as f64 * p.k as f64 <= 2e9 {
        return (0..p.m)
            .flat_map(|i| (0..p.n).map(move |j| (i, j)))
            .collect();
    }
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut v: Vec<(usize, usize)> = (0..samples)
        .map(|_| (rng.random_range(0..p.m), rng.random_range(0..p.n)))
        .collect();
    for j in (0..p.n).step_by(7) {
        v.push((p.m - 1, j));
    }
    for i in (0..p.m).step_by(7) {
        v.push((i, p.n - 1));
    }
    v.extend([(0, 0), (0, p.n - 1), (p.m - 1, 0), (p.m - 1, p.n - 1)]);
    v
}

/// Result of one validated case.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Checked {
    /// The problem.
    pub problem: Problem,
    /// The kernel.
    pub variant: Variant,
    /// Elements compared with float64.
    pub checked: usize,
}

/// Runs `variant` on fresh random inputs (poisoned output when β = 0, bias when `with_bias`)
/// and compares with float64. The inputs' seed changes every call.
pub fn validate(
    gpu: &Gpu,
    variant: Option<Variant>,
    p: &Problem,
    with_bias: bool,
    seed: u64,
) -> Result<Checked> {
    let x = Inputs::random(p, with_bias, seed);
    let a = gpu.upload(&x.a, "hgemm A")?;
    let b = gpu.upload(&x.b, "hgemm B")?;
    let bias = match &x.bias {
        Some(v) => Some(gpu.upload(v, "hgemm bias")?),
        None => None,
    };
    // β = 0: C starts as NaN, so an element the kernel skips cannot pass.
    let (got, used) = match p.out {
        OutType::Same => {
            let init = x.c_before_half(p);
            let mut c = gpu.upload(&init, "hgemm C")?;
            let used = run(
                gpu,
                variant,
                p,
                &a,
                &b,
                &mut Out::Half(&mut c),
                bias.as_ref(),
            )?;
            let bits = gpu.download(&c, "hgemm C")?;
            (bits.iter().map(|&h| p.ty.widen(h)).collect(), used)
        }
        OutType::F32 => {
            let init = x.c_before_f32(p);
            let mut c = gpu.upload(&init, "hgemm C")?;
            let used = run(
                gpu,
                variant,
                p,
                &a,
                &b,
                &mut Out::F32(&mut c),
                bias.as_ref(),
            )?;
            (gpu.download(&c, "hgemm C")?, used)
        }
    };
    finish(p, &x, got, used, seed)
}

fn finish(p: &Problem, x: &Inputs, got: Vec<f32>, variant: Variant, seed: u64) -> Result<Checked> {
    let which = elements_to_check(p, 4096, seed);
    let checked = compare(p, x, &got, &which)?;
    Ok(Checked {
        problem: *p,
        variant,
        checked,
    })
}

/// One benchmark row.
#[derive(Clone, Debug, serde::Serialize)]
pub struct BenchRow {
    /// The problem.
    pub problem: Problem,
    /// The kernel.
    pub variant: Variant,
    /// `mma_pipeline`'s tuning configuration, if not the default.
    pub tuning: Option<&'static str>,
    /// rustile, event-timed.
    pub ours: Stats,
    /// cuBLAS, same process, same inputs.
    pub cublas: Stats,
    /// rustile TFLOP/s (median).
    pub tflops: f64,
    /// cuBLAS TFLOP/s (median).
    pub cublas_tflops: f64,
    /// `cublas / ours` time: ≥ 1 means rustile is faster.
    pub ratio: f64,
}

/// Times `variant` and cuBLAS on `p` (output poisoning off, β = 0 unless `p` says otherwise),
/// rotating input sets past the L2.
pub fn bench(
    gpu: &Gpu,
    blas: &CudaBlas,
    variant: Option<Variant>,
    p: &Problem,
    timing: &TimingConfig,
) -> Result<BenchRow> {
    bench_tuned(
        gpu,
        blas,
        variant,
        None,
        None,
        p,
        timing,
        harness::Pairing::Sequential,
    )
}

/// [`bench`] with `mma_pipeline`'s configuration given (`None`: the default one) and
/// `wgmma_ws`'s tile-row band ([`Prepared::with_group`]; `None`: the default one).
#[allow(clippy::too_many_arguments)]
pub fn bench_tuned(
    gpu: &Gpu,
    blas: &CudaBlas,
    variant: Option<Variant>,
    tuning: Option<&'static Tuning>,
    group: Option<u32>,
    p: &Problem,
    timing: &TimingConfig,
    pairing: harness::Pairing,
) -> Result<BenchRow> {
    let [la, lb, lc] = p.lens();
    let set_bytes = ((la + lb) * 2 + lc * p.out_bytes()) as u64;
    let sets = harness::rotation_sets(gpu.info().l2_bytes, set_bytes).min(8);
    let mut ins = Vec::new();
    for s in 0..sets {
        let a = gpu.upload(&random_bits(p.ty, la, 11 + s as u64), "hgemm A")?;
        let b = gpu.upload(&random_bits(p.ty, lb, 97 + s as u64), "hgemm B")?;
        ins.push((a, b));
    }
    let stream = gpu.stream().clone();
    let mut outs = (0..sets)
        .map(|_| OutBuf::alloc(gpu, p.out, lc))
        .collect::<Result<Vec<_>>>()?;
    let preps = (0..sets)
        .map(|s| {
            let (a, b) = &ins[s];
            let prep = prepare_tuned(gpu, variant, tuning, p, a, b, &outs[s].out(), None)?;
            Ok(match group {
                Some(g) => prep.with_group(g),
                None => prep,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let used = preps[0].variant;
    // `pairing`: each settled alone, or interleaved rep by rep (`harness::Pairing`).
    let outs = std::cell::RefCell::new(outs);
    let (ours, theirs) = pairing.time(
        gpu,
        timing,
        |i| {
            let s = i % sets;
            preps[s].launch(
                &stream,
                &ins[s].0,
                &ins[s].1,
                &mut outs.borrow_mut()[s].out(),
                None,
            )
        },
        |i| {
            let s = (i + sets / 2) % sets;
            cublas(
                blas,
                &stream,
                p,
                &ins[s].0,
                &ins[s].1,
                &mut outs.borrow_mut()[s].out(),
            )
        },
    )?;
    let tf = |st: &Stats| p.flops() / (st.median_ms * 1e-3) / 1e12;
    Ok(BenchRow {
        problem: *p,
        variant: used,
        tuning: tuning
            .filter(|_| used == Variant::MmaPipeline)
            .map(|t| t.name),
        tflops: tf(&ours),
        cublas_tflops: tf(&theirs),
        ratio: theirs.median_ms / ours.median_ms,
        ours,
        cublas: theirs,
    })
}

/// Runs an `mma.sync` variant in rustile's simulator on fresh random inputs and compares every
/// element with float64 (the CPU-side check of the sm_80 kernels; `wgmma` has no simulator
/// model). β ≠ 0 reads C's random old values; otherwise C starts as NaN.
pub fn validate_sim(
    sim: &crate::sim::Simulator,
    variant: Variant,
    p: &Problem,
    with_bias: bool,
    seed: u64,
) -> Result<Checked> {
    validate_sim_tuned(sim, variant, None, p, with_bias, seed)
}

/// Runs an `mma.sync` variant once in the simulator, validated against float64 like
/// [`validate_sim`], and returns what its memory accesses would cost: global sectors per
/// request and shared-memory wavefronts (bank conflicts) per instruction, by source line.
pub fn analyze_sim(
    variant: Variant,
    tuning: Option<&Tuning>,
    p: &Problem,
    seed: u64,
) -> Result<crate::sim::Analysis> {
    let sim = crate::sim::Simulator::default();
    sim.start_analysis();
    validate_sim_tuned(&sim, variant, tuning, p, false, seed)?;
    Ok(sim.take_analysis().unwrap_or_default())
}

/// [`validate_sim`] of a tuning configuration of `mma_pipeline` (`None`: the default one).
pub fn validate_sim_tuned(
    sim: &crate::sim::Simulator,
    variant: Variant,
    tuning: Option<&Tuning>,
    p: &Problem,
    with_bias: bool,
    seed: u64,
) -> Result<Checked> {
    p.check()?;
    let (symbol, entry, threads, shared, (bm, bn)) = match variant {
        Variant::Mma => {
            let e = entry_of(&v01_mma::INFO, p)?;
            (
                e.symbol.to_string(),
                e.sim,
                v01_mma::THREADS,
                v01_mma::SHARED_BYTES,
                (v01_mma::BM, v01_mma::BN),
            )
        }
        Variant::MmaPipeline => {
            if !p.tma_ok([0, 0]) {
                return Err(Error::Unsupported {
                    kernel: "hgemm/mma_pipeline".into(),
                    what: "pitches must be multiples of 8 elements".into(),
                });
            }
            let g = pipeline_geometry(p, tuning)?;
            (g.symbol.to_owned(), g.sim, g.threads, g.shared, g.tile)
        }
        Variant::WgmmaWs => {
            return Err(Error::Unsupported {
                kernel: "hgemm/wgmma_ws".into(),
                what: "wgmma, TMA and mbarrier are not modelled by the simulator".into(),
            })
        }
    };
    let [la, lb, lc] = p.lens();
    let x = Inputs::random(p, with_bias, seed);
    let a = sim.alloc::<u16>(la.max(1), "A")?;
    sim.write(&a, &x.a)?;
    let b = sim.alloc::<u16>(lb.max(1), "B")?;
    sim.write(&b, &x.b)?;
    let bias = match &x.bias {
        Some(v) => {
            let buf = sim.alloc::<f32>(v.len(), "bias")?;
            sim.write(&buf, v)?;
            buf.addr()
        }
        None => 0,
    };
    let launch = crate::sim::SimLaunch {
        grid: (
            p.n.div_ceil(bn as usize) as u32,
            p.m.div_ceil(bm as usize) as u32,
            1,
        ),
        block: (threads, 1, 1),
        shared_bytes: shared,
    };
    let scalars = [
        p.m as u64,
        p.n as u64,
        p.k as u64,
        p.lda as u64,
        p.ldb as u64,
        p.ldc as u64,
        p.alpha.to_bits() as u64,
        p.beta.to_bits() as u64,
        p.relu as u64,
    ];
    let got: Vec<f32> = match p.out {
        OutType::Same => {
            let c = sim.alloc::<u16>(lc, "C")?;
            let init = x.c_before_half(p);
            sim.write(&c, &init)?;
            let mut args = vec![a.addr(), b.addr(), c.addr(), bias];
            args.extend(scalars);
            sim.launch(&symbol, entry, &launch, &args)?;
            sim.read(&c)?.iter().map(|&h| p.ty.widen(h)).collect()
        }
        OutType::F32 => {
            let c = sim.alloc::<f32>(lc, "C")?;
            let init = x.c_before_f32(p);
            sim.write(&c, &init)?;
            let mut args = vec![a.addr(), b.addr(), c.addr(), bias];
            args.extend(scalars);
            sim.launch(&symbol, entry, &launch, &args)?;
            sim.read(&c)?
        }
    };
    finish(p, &x, got, variant, seed)
}
