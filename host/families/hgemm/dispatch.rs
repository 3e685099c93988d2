//! Which kernel runs: the variants, their selection, and `mma_pipeline`'s geometry and tunings.

use rustile_kernels::hgemm::v02_mma_pipeline::{self, Tuning};
use rustile_kernels::registry::{DType, Entry, KernelInfo, Layout, SimFn};

use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::ptx::Flavour;

use super::*;

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

    /// The best variant for this device and problem (A's and B's addresses included) under
    /// `padding`: [`Variant::choose`] for the device's PTX flavour.
    pub fn select(gpu: &Gpu, p: &Problem, addrs: [u64; 2], padding: Padding) -> Variant {
        Self::choose(gpu.flavour(), p, addrs, padding)
    }

    /// The selection for a device of PTX `flavour`: `wgmma_ws` on sm_90a, `mma_pipeline`
    /// elsewhere, when their 16-byte loads can read A and B in place or padding may copy them
    /// into aligned scratch (any [`Padding`] but `Never`); otherwise `mma`, which reads any
    /// pitch.
    pub fn choose(flavour: Flavour, p: &Problem, addrs: [u64; 2], padding: Padding) -> Variant {
        let aligned = p.tma_ok(addrs) || padding != Padding::Never;
        match (flavour, aligned) {
            (Flavour::Sm90a, true) => Variant::WgmmaWs,
            (_, true) => Variant::MmaPipeline,
            (_, false) => Variant::Mma,
        }
    }

    /// The variant's registry record.
    pub fn info(self) -> &'static KernelInfo {
        match self {
            Variant::Mma => &rustile_kernels::hgemm::v01_mma::INFO,
            Variant::MmaPipeline => &v02_mma_pipeline::INFO,
            Variant::WgmmaWs => &rustile_kernels::hgemm::v03_wgmma_ws::INFO,
        }
    }

    /// The record that runs: the variant's, or for `mma_pipeline` the tuning configuration's.
    pub fn kernel(self, tuning: Option<&Tuning>) -> &'static KernelInfo {
        match (self, tuning) {
            (Variant::MmaPipeline, Some(t)) => t.info,
            _ => self.info(),
        }
    }
}

/// The registry signature `(input, output, B layout)` of `p`.
pub fn signature(p: &Problem) -> (DType, DType, Layout) {
    let layout = match p.b {
        BLayout::RowMajor => Layout::Bn,
        BLayout::Transposed => Layout::Bt,
    };
    (p.ty, p.out, layout)
}

/// `kernel`'s entry for `p`'s signature, or [`Error::Unsupported`] naming what is missing.
pub fn entry_of(kernel: &'static KernelInfo, p: &Problem) -> Result<&'static Entry> {
    let (i, o, l) = signature(p);
    kernel.entry_for(i, o, l).ok_or_else(|| Error::Unsupported {
        kernel: format!("hgemm/{}", kernel.name),
        what: format!(
            "`{}` is not built for {} in, {} out, B {:?}",
            kernel.name,
            i.name(),
            o.name(),
            l
        ),
    })
}
