//! Which kernel runs: the variants, their selection, and `mma_pipeline`'s geometry and tunings.

use rustile_kernels::hgemm::v02_mma_pipeline::{self, Tuning};
use rustile_kernels::gpu::sched::TileGrid;
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

/// How `wgmma_ws` runs a product: its tile width and how many k-segments each tile is cut into.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub struct WsTile {
    /// Rows of C per tile: 128 (the consumers split the rows) or 64 (they split the columns).
    pub rows: u32,
    /// Columns of C per tile: 256, 128 or 64 at 128 rows; 256 or 128 at 64 rows
    /// (`v03_wgmma_ws::TILES`).
    pub width: u32,
    /// k-segments per tile, one block each (1: whole tiles, persistent over one block per SM;
    /// more: widths ≤ 128 only, `tiles · cut` blocks, at most one per SM).
    pub cut: u32,
}

/// Whether the 128 × 128 tile runs with ping-pong consumers (`wgmma_pp`: each consumer warpgroup
/// computes whole tiles, one's epilogue under the other's `wgmma`s): `RUSTILE_HGEMM_PINGPONG=1`,
/// an experiment, off by default: measured on an H200 (session 17) 0.93× cuBLAS at 4096³ against
/// 0.985× for the default 128 × 256 cooperative tile (`notes/hgemm.md`).
pub fn pingpong() -> bool {
    std::env::var("RUSTILE_HGEMM_PINGPONG").is_ok_and(|v| v == "1")
}

/// Whether the 128 × 256 tile runs as clustered pairs (`wgmma_pair`: two blocks of a cluster on
/// vertically neighbouring tiles, each loading half of their shared B and multicasting it):
/// `RUSTILE_HGEMM_PAIR=1`, an experiment (session 18, `notes/hgemm.md`).
pub fn pair() -> bool {
    std::env::var("RUSTILE_HGEMM_PAIR").is_ok_and(|v| v == "1")
}

/// Whether the 128 × 256 tile runs with the stream-K tail where it applies (`wgmma_sk`: the
/// whole waves of tiles persistent, the last partial wave's k-iterations shared evenly over the
/// blocks; the conditions: `stream_k_tail_fits` in `paths.rs`): `RUSTILE_HGEMM_SK_TAIL=1`,
/// an experiment (session 21): correct, but 7 % slower than the default at 4096³ on an H100
/// (session 22: its staggered k reads 48 MB more from DRAM, `notes/hgemm.md`).
pub fn sk_tail() -> bool {
    std::env::var("RUSTILE_HGEMM_SK_TAIL").is_ok_and(|v| v == "1")
}

/// Most segments a tile is cut into (the fix-up reads the others' partial sums in order).
pub const MAX_CUT: u32 = 8;

impl WsTile {
    /// The widest tile, whole: the kernel as it ran before the narrow tiles existed.
    pub const WIDE: WsTile = WsTile {
        rows: 128,
        width: 256,
        cut: 1,
    };

    /// A whole (uncut) tile of `rows × width`.
    pub const fn whole(rows: u32, width: u32) -> WsTile {
        WsTile {
            rows,
            width,
            cut: 1,
        }
    }

    /// The registry record of the tile ([`Error::Usage`] for a tile that is not built).
    pub fn info(self) -> Result<&'static KernelInfo> {
        use rustile_kernels::hgemm::v03_wgmma_ws::TILES;
        if (self.rows, self.width) == (128, 128) && pingpong() {
            return Ok(&rustile_kernels::hgemm::v03_wgmma_ws::INFO_PP);
        }
        if (self.rows, self.width) == (128, 256) && pair() {
            return Ok(&rustile_kernels::hgemm::v03_wgmma_ws::INFO_PAIR);
        }
        TILES
            .into_iter()
            .find(|k| matches!(k.launch, rustile_kernels::registry::Launch::Persistent { tile } if tile == (self.rows, self.width)))
            .ok_or_else(|| {
                Error::Usage(format!(
                    "hgemm/wgmma_ws: no {} × {} tile (128 × 64, 128, 256; 64 × 128, 256)",
                    self.rows, self.width
                ))
            })
    }

    /// Columns of C per consumer warpgroup (the `wgmma` N).
    pub fn consumer_width(self) -> u32 {
        if self.rows == 64 {
            self.width / 2
        } else {
            self.width
        }
    }

    /// Name in reports: the record's, with the cut (`wgmma_ws_n64 cut 4`).
    pub fn label(self) -> String {
        let name = self.info().map_or("wgmma_ws?", |k| k.name);
        match self.cut {
            1 => name.to_owned(),
            c => format!("{name} cut {c}"),
        }
    }

    /// Output tiles of `p` at this width.
    pub fn tiles(self, p: &Problem) -> u64 {
        p.m.div_ceil(self.rows as usize) as u64 * p.n.div_ceil(self.width as usize) as u64
    }

    /// k-tiles per output tile.
    pub fn k_tiles(p: &Problem) -> u64 {
        p.k.div_ceil(64) as u64
    }

    /// Checks the tile against `p` on a device of `sms` SMs, before anything is allocated: a
    /// built width; a cut of 1..=[`MAX_CUT`], only on widths ≤ 128, no more segments than
    /// k-tiles, and `tiles · cut` blocks within one per SM (a tile's first segment waits for
    /// the others, so all must be resident).
    pub fn check(self, p: &Problem, sms: u32) -> Result<()> {
        let unsupported = |what: String| Error::Unsupported {
            kernel: format!("hgemm/{}", self.label()),
            what,
        };
        self.info()?;
        if self.cut == 0 || self.cut > MAX_CUT {
            return Err(Error::Usage(format!(
                "hgemm/wgmma_ws: cut {} is outside 1..={MAX_CUT}",
                self.cut
            )));
        }
        if self.cut == 1 {
            return Ok(());
        }
        // By name: each use of a `const` record is its own value, so addresses do not compare.
        if self.info()?.name == rustile_kernels::hgemm::v03_wgmma_ws::INFO_PP.name {
            return Err(unsupported(
                "the ping-pong tile cannot cut tiles (RUSTILE_HGEMM_PINGPONG=1)".to_owned(),
            ));
        }
        if !rustile_kernels::hgemm::v03_wgmma_ws::can_cut(self.consumer_width()) {
            return Err(unsupported(format!(
                "the 128 × {} tile cannot cut tiles (its accumulators leave no registers for \
                 the fix-up); use width 64 or 128, or 64 rows",
                self.width
            )));
        }
        if (self.cut as u64) > Self::k_tiles(p) {
            return Err(unsupported(format!(
                "{} segments for {} k-tiles (K = {})",
                self.cut,
                Self::k_tiles(p),
                p.k
            )));
        }
        let blocks = self.tiles(p) * self.cut as u64;
        if blocks > sms as u64 {
            return Err(unsupported(format!(
                "{} tiles cut in {} need {blocks} blocks resident at once; the device has {sms} SMs",
                self.tiles(p),
                self.cut
            )));
        }
        Ok(())
    }

    /// The launch's blocks on `sms` SMs: one per segment when cut, else the persistent grid.
    pub fn grid(self, p: &Problem, sms: u32, group: u32) -> u32 {
        if self.cut > 1 {
            (self.tiles(p) * self.cut as u64) as u32
        } else {
            TileGrid::new(p.m as u32, p.n as u32, self.rows, self.width, group).persistent_grid(sms)
        }
    }

    /// f32 words of the cut's workspace (partial-sum slots and flags); 0 for whole tiles.
    pub fn workspace_words(self, p: &Problem, sms: u32) -> usize {
        match self.cut {
            1 => 0,
            _ => rustile_kernels::hgemm::v03_wgmma_ws::cut_words(
                self.consumer_width(),
                self.grid(p, sms, 1),
            ),
        }
    }

    /// The model's time for `p` on `sms` SMs, in µs at the nominal clock: the busiest SM's
    /// k-tiles at the width's per-k-tile time, a fill and epilogue per tile it holds, the
    /// fix-up per extra segment, and no less than the operands' bytes at the DRAM rate.
    /// Calibrated on the H200 (`notes/hgemm.md`, session 12).
    ///
    /// A cut's fix-up (`CUT_US` per extra segment) is added after the floor: where the operands'
    /// stream bounds the time, the partial sums' store → flag → read comes on top of it
    /// (session 13, H100: 64 × 8192² cut 4 at 0.90× cuBLAS against 0.98× for the whole 64 × 128
    /// tile that the floor made equal).
    pub fn estimate(self, p: &Problem, sms: u32) -> f64 {
        let bytes = ((p.m * p.k + p.k * p.n) * 2) as f64;
        let fix_up = self.fix_up();
        (self.compute(p, sms) - fix_up).max(bytes / DRAM_BYTES_PER_US) + fix_up
    }

    /// The cut's fix-up time in µs: `CUT_US` per extra segment (0 for whole tiles).
    fn fix_up(self) -> f64 {
        (self.cut - 1) as f64 * CUT_US
    }

    /// [`WsTile::estimate`] without the DRAM floor: the SMs' side alone (what breaks ties
    /// between tiles the floor makes equal).
    pub fn compute(self, p: &Problem, sms: u32) -> f64 {
        // The work per k-tile is rows · width: 128 × 256; 128 × 128 and 64 × 256; the rest.
        let per_k = match self.rows * self.width {
            32768 => KT_US_256,
            16384 => KT_US_128,
            _ => KT_US_64,
        };
        let tiles = self.tiles(p);
        let kt = Self::k_tiles(p) as f64;
        let (per_block_tiles, kt_block) = if self.cut > 1 {
            (1.0, (kt / self.cut as f64).ceil())
        } else {
            let waves = tiles.div_ceil(sms as u64) as f64;
            (waves, waves * kt)
        };
        kt_block * per_k + per_block_tiles * TILE_US + self.fix_up()
    }
}

/// µs per k-tile (rows × width × 64) on one SM, measured on the H200 (session 12 sweep): the
/// 128 × 256 tile (2048³–4096³: 0.74–0.88).
pub const KT_US_256: f64 = 0.74;
/// 128 × 128 and 64 × 256 (4096³ 0.42, 2048³ 0.47).
pub const KT_US_128: f64 = 0.42;
/// 128 × 64 and 64 × 128 (2048³: 0.33).
pub const KT_US_64: f64 = 0.33;
/// µs per tile a block holds beyond its k-tiles (first loads, epilogue).
pub const TILE_US: f64 = 1.5;
/// µs per extra segment of a cut tile (partial sums stored, flagged, read back): 1.0–3.3
/// measured at 512³ and 1024³.
pub const CUT_US: f64 = 2.5;
/// The DRAM rate our TMA streams reach on the skinny products, bytes per µs (2.5–3.1 TB/s
/// measured at 16 × 16384² and 64 × 8192²; cuBLAS reaches 4.3).
pub const DRAM_BYTES_PER_US: f64 = 3.0e6;

/// The tile `wgmma_ws` takes for `p` on `sms` SMs: the lowest [`WsTile::estimate`] over the
/// tiles and cuts that [`WsTile::check`] allows, then the lowest [`WsTile::compute`] among
/// those the DRAM floor makes equal; a candidate must be 3 % better to displace one earlier in
/// the order (the wide tile first). With M ≤ 64 only the 64-row tiles are candidates: a
/// 128-row tile is half padding or more, and streamed B slower there than the 64-row tiles
/// (session 13, H100: 128 × 64 at 0.67× cuBLAS on 16 × 16384², 0.79–0.82× on 64 × 8192², where
/// 64 × 128 reached 0.98–1.01×).
pub fn ws_tile(p: &Problem, sms: u32) -> WsTile {
    let score = |t: WsTile| (t.estimate(p, sms), t.compute(p, sms));
    let mut best = (WsTile::WIDE, score(WsTile::WIDE));
    for (rows, width) in [(128, 256), (128, 128), (128, 64), (64, 256), (64, 128)] {
        if rows == 128 && p.m <= 64 {
            continue;
        }
        for cut in [1, 2, 3, 4, 6, 8] {
            let t = WsTile { rows, width, cut };
            if t.check(p, sms).is_err() {
                continue;
            }
            let (e, c) = score(t);
            let (be, bc) = best.1;
            if e < be * 0.97 || (e <= be && c < bc * 0.97) {
                best = (t, (e, c));
            }
        }
    }
    best.0
}
