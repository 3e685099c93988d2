//! A problem bound to its buffers and kernel (`Prepared`), checked once and launched repeatedly.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut, LaunchConfig, PushKernelArg};
use rustile_kernels::hgemm::v02_mma_pipeline::Tuning;
use rustile_kernels::hgemm::{v01_mma, v03_wgmma_ws};
use rustile_kernels::registry::DType;

use crate::error::{DriverContext, Error, Result};
use crate::gpu::Gpu;
use crate::ptx::Flavour;

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

/// Checks `p` against the buffers and the device, and prepares `variant` (or the selected one)
/// in its default configuration.
pub fn prepare(
    gpu: &Gpu,
    variant: Option<Variant>,
    p: &Problem,
    a: &impl DevicePtr<u16>,
    b: &impl DevicePtr<u16>,
    c: &Out<'_>,
    bias: Option<&CudaSlice<f32>>,
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
    c: &Out<'_>,
    bias: Option<&CudaSlice<f32>>,
) -> Result<Prepared> {
    let (variant, tuning) = (opts.variant, opts.tuning);
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
        group,
    })
}

impl Prepared {
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
