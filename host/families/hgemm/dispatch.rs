//! Which kernel runs: the variants, their selection, and `mma_pipeline`'s geometry and tunings.

use rustile_kernels::hgemm::v02_mma_pipeline::{self, Tuning};
use rustile_kernels::registry::SimFn;

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
    pub sim: SimFn,
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
    let symbol = Variant::MmaPipeline.symbol(p);
    let (entries, threads, shared, tile) = match tuning {
        None => (
            v02_mma_pipeline::ENTRIES,
            v02_mma_pipeline::THREADS,
            v02_mma_pipeline::SHARED_BYTES,
            (v02_mma_pipeline::BM, v02_mma_pipeline::BN),
        ),
        Some(t) => (t.entries, t.threads, t.shared, (t.bm, t.bn)),
    };
    let want = match tuning {
        None => symbol,
        Some(t) => symbol.replacen(
            "hgemm_mma_pipeline_",
            &format!("hgemm_mma_pipeline_{}_", t.name),
            1,
        ),
    };
    let (symbol, sim) = entries
        .iter()
        .copied()
        .find(|(s, _)| *s == want)
        .ok_or_else(|| Error::Unsupported {
            kernel: "hgemm/mma_pipeline".into(),
            what: format!(
                "configuration `{}` is built for f16 in and out only (no `{want}`)",
                tuning.map_or("default", |t| t.name)
            ),
        })?;
    Ok(PipelineGeometry {
        symbol,
        sim,
        threads,
        shared,
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

    pub(super) fn symbol(self, p: &Problem) -> String {
        let out = p.out.name();
        let prefix = match self {
            Variant::Mma => "hgemm_mma",
            Variant::MmaPipeline => "hgemm_mma_pipeline",
            Variant::WgmmaWs => "hgemm_wgmma_ws",
        };
        format!("{prefix}_{}_{out}_{}", p.ty.name(), p.b.tag())
    }
}
