//! Data-parallel + stream-K for the NT pipeline: the dispatcher's path for products whose
//! 128 × 128 tiles leave the last wave part-empty, at any pitch.
//!
//! The plan ([`plan`]) splits C into a band of whole waves, run by the plain NT pipeline
//! (`v11`, one tile per block), and the rows below it, run by the stream-K kernel (`v17`: a
//! grid of at most two blocks per SM sharing the band's k-tiles evenly) and its fix-up. A of
//! any pitch is first written as Aᵀ at a pitch that is a multiple of 4 (`gemm::pad::transpose`),
//! B padded when its rows are not 16-byte multiples.

use cudarc::driver::CudaSlice;
use rustile_kernels::gemm::{pad, v11_nt_pipeline, v17_nt_stream_k};

use crate::api::range::Range;
use crate::check::BufArg;
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::launch::{Arg, LaunchPlan};

use super::GemmProblem;

/// Blocks of the NT pipeline (and of the stream-K kernel) resident per SM: 128 registers ×
/// 256 threads and 50 KiB of ring each.
pub const BLOCKS_PER_SM: u32 = 2;

/// The plain NT pipeline's wave efficiency (tiles over the slots of the waves they need) at or
/// above which the dispatcher does not use stream-K: 4096³ (1024 tiles on 264 slots, 0.97) and
/// 8192³ (0.97) stay plain.
pub const PLAIN_EFFICIENCY: f64 = 0.9;

/// Fewest k-tiles of [`v11_nt_pipeline::BK`] a stream-K block should get: under this the
/// ring's fill is most of the block's time, so the grid shrinks instead.
pub const MIN_ITERS_PER_CTA: u64 = 4;

/// Environment variable for measurements: `off` turns stream-K off (the dispatcher's earlier
/// paths), a number forces stream-K with that many blocks wherever the dispatcher reaches it.
pub const ENV: &str = "RUSTILE_SGEMM_STREAM_K";

/// How a product is split between the plain NT pipeline and stream-K.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Rows of 128-row tiles run plainly, from the top (0: all stream-K).
    pub dp_rows: usize,
    /// Blocks of the stream-K launch over the rows below.
    pub ctas: u32,
}

impl Plan {
    /// First row of C the stream-K launch covers.
    pub fn split_row(&self) -> usize {
        self.dp_rows * v11_nt_pipeline_tile().0
    }
}

fn v11_nt_pipeline_tile() -> (usize, usize) {
    let (tm, tn) = rustile_kernels::gemm::v08_warptile::TILE;
    (tm as usize, tn as usize)
}

/// What [`ENV`] asks for: `None` (the model), `Some(None)` (off), `Some(Some(ctas))`.
fn env_override() -> Option<Option<u32>> {
    let v = std::env::var(ENV).ok()?;
    if v == "off" {
        Some(None)
    } else {
        v.parse::<u32>().ok().filter(|&c| c > 0).map(Some)
    }
}

/// The stream-K plan for `p` on `sm_count` SMs, or `None` where the plain NT pipeline's waves
/// are full enough ([`PLAIN_EFFICIENCY`]), where its tiles are fewer than the SMs, or K is 0.
/// Fewer tiles than SMs (777 × 1234 × 555: 70; 1000³: 64; 768³: 36) measured slower with
/// stream-K than with the small tile or the k-group ring (session 14, run 1: 97 / 111 / 96 µs
/// against 56 / 73 / 54), so those keep the earlier paths. Whole waves of tiles, rounded down to
/// whole rows of tiles, run plainly; the rest is shared by `min(2·SMs, k-tiles / 4)` blocks.
/// Examples on 132 SMs: 1531³ (144 tiles, 0.55 of one wave) all stream-K on 264 blocks;
/// 2999 × 3001 × 2997 (576 tiles: two full waves and 18 %) 22 rows plain, 2 rows stream-K.
pub fn plan(p: &GemmProblem, sm_count: u32) -> Option<Plan> {
    plan_with(p, sm_count, env_override())
}

/// [`plan`] with the environment's override given.
pub fn plan_with(p: &GemmProblem, sm_count: u32, force: Option<Option<u32>>) -> Option<Plan> {
    if p.k == 0 || p.m == 0 || p.n == 0 {
        return None;
    }
    let forced = match force {
        Some(None) => return None,
        Some(Some(c)) => Some(c),
        None => None,
    };
    let (tm, tn) = v11_nt_pipeline_tile();
    let (rows, cols) = (p.m.div_ceil(tm), p.n.div_ceil(tn));
    let tiles = rows * cols;
    let slots = (BLOCKS_PER_SM * sm_count.max(1)) as usize;
    let waves = tiles.div_ceil(slots);
    let efficiency = tiles as f64 / (waves * slots) as f64;
    if forced.is_none() && (efficiency >= PLAIN_EFFICIENCY || tiles < sm_count.max(1) as usize) {
        return None;
    }
    let kt = p.k.div_ceil(v11_nt_pipeline::BK as usize) as u64;
    if (tiles as u64).saturating_mul(kt) > u32::MAX as u64 {
        return None; // the kernel counts k-tiles in 32 bits
    }
    let dp_rows = (tiles / slots * slots) / cols;
    // The kernel's blocks span at most two tiles: at least one block per tile of the band.
    let band_tiles = ((rows - dp_rows) * cols) as u64;
    let iters = band_tiles * kt;
    let ctas = match forced {
        Some(c) => (c as u64).clamp(band_tiles, iters),
        None => (slots as u64).min(iters / MIN_ITERS_PER_CTA),
    };
    if ctas < band_tiles {
        return None;
    }
    Some(Plan {
        dp_rows,
        ctas: ctas as u32,
    })
}

/// Writes Aᵀ (K rows of pitch `⌈M/4⌉·4`, zero past M) into `slot` from A of any pitch; returns
/// the pitch.
pub(crate) fn transpose_pad(
    gpu: &Gpu,
    p: &GemmProblem,
    a: Range<'_, f32>,
    slot: &mut Option<CudaSlice<f32>>,
) -> Result<usize> {
    use cudarc::driver::DevicePtr;
    use pad::transpose as tp;
    let ld = p.m.next_multiple_of(4);
    let grid_y = ld.div_ceil(tp::TILE as usize);
    if grid_y > u16::MAX as usize {
        return Err(Error::TooLarge {
            kernel: "gemm/transpose_pad".into(),
            what: format!(
                "{}: grid y = {grid_y} tiles of 32 rows (at most 65535)",
                p.shape()
            ),
        });
    }
    let dst = super::dispatch::reserve(gpu, slot, (p.k * ld).max(1), "Aᵀ for the NT pipeline")?;
    let grid = (p.k.div_ceil(tp::TILE as usize) as u64, grid_y as u64, 1);
    let args = vec![
        Arg::Ptr(a.ptr()),
        Arg::Ptr(dst.device_ptr(gpu.stream()).0),
        Arg::U32(p.m as u32),
        Arg::U32(p.k as u32),
        Arg::U32(p.lda as u32),
        Arg::U32(ld as u32),
    ];
    let plan = LaunchPlan::new(&tp::INFO, &tp::SYMBOLS[0], grid, args);
    // SAFETY: `gemm_transpose_pad(src, dst, rows = m, cols = k, ld_src = lda, ld_dst)`: A was
    // checked by the caller for (m − 1)·lda + k elements; dst holds k · ld (reserved above); the
    // kernel reads only r < m, c < k and writes only rows < k, columns < ld; grid y ≤ 65535.
    unsafe { plan.launch_on(gpu, gpu.stream()) }?;
    Ok(ld)
}

/// Runs `nt` (whose `a` is Aᵀ at pitch `nt.lda`, `ldb` a multiple of 4) as `plan` says: the
/// plain NT pipeline on the top `plan.dp_rows` rows of tiles, stream-K and its fix-up on the
/// rest, with `ws` as the stream-K workspace.
pub(crate) fn run(
    gpu: &Gpu,
    nt: &GemmProblem,
    plan: Plan,
    a_t: Range<'_, f32>,
    b: Range<'_, f32>,
    c: Range<'_, f32>,
    ws: &mut Option<CudaSlice<f32>>,
) -> Result<()> {
    use cudarc::driver::DevicePtr;
    let stream = gpu.stream();
    let r0 = plan.split_row().min(nt.m);
    if r0 > 0 {
        let top = GemmProblem { m: r0, ..*nt };
        let mut c_top = c;
        super::launch(gpu, &v11_nt_pipeline::INFO, &top, &a_t, &b, &mut c_top)?;
    }
    if r0 == nt.m {
        return Ok(());
    }
    // The band below: Aᵀ's columns from r0 (16-byte aligned: r0 is a multiple of 128) and C's
    // rows from r0.
    let low = GemmProblem { m: nt.m - r0, ..*nt };
    let a_low = Range::<f32>::new(a_t.ptr() + 4 * r0 as u64, a_t_len(&a_t, r0), stream);
    let c_low = Range::<f32>::new(
        c.ptr() + 4 * (r0 * nt.ldc) as u64,
        cudarc::driver::DeviceSlice::len(&c).saturating_sub(r0 * nt.ldc),
        stream,
    );
    let kernel = &v17_nt_stream_k::INFO;
    let w = super::dispatch::reserve(
        gpu,
        ws,
        v17_nt_stream_k::workspace_len(plan.ctas),
        "stream-K workspace",
    )?;
    let w_ptr = w.device_ptr(stream).0;
    low.check(
        kernel,
        BufArg::new("a", cudarc::driver::DeviceSlice::len(&a_low), a_low.ptr()),
        BufArg::new("b", cudarc::driver::DeviceSlice::len(&b), b.ptr()),
        BufArg::new("c", cudarc::driver::DeviceSlice::len(&c_low), c_low.ptr()),
    )?;
    let (m, n, k, lda, ldb, ldc, alpha, beta) = low.scalars();
    let args = vec![
        Arg::Ptr(a_low.ptr()),
        Arg::Ptr(b.ptr()),
        Arg::Ptr(w_ptr),
        Arg::U32(m),
        Arg::U32(n),
        Arg::U32(k),
        Arg::U32(lda),
        Arg::U32(ldb),
    ];
    let sk = LaunchPlan::new(kernel, &kernel.symbols[0], (plan.ctas as u64, 1, 1), args);
    // SAFETY: `sgemm_nt_stream_k(at, b, ws, m, n, k, lda, ldb)`: `check` proved the Aᵀ band
    // (k rows of pitch lda from column r0) and B, their alignment and pitches (multiples of 4);
    // the workspace holds 2 · ctas tiles; the band's tiles ≤ ctas ≤ its k-tiles (the plan), so
    // every block has work, spans at most two tiles, and its two slots are its own.
    unsafe { sk.launch_on(gpu, stream) }?;
    let tiles = low.m.div_ceil(128) * low.n.div_ceil(128);
    let fix = &v17_nt_stream_k::fixup::INFO;
    let args = vec![
        Arg::Ptr(w_ptr),
        Arg::Ptr(c_low.ptr()),
        Arg::U32(m),
        Arg::U32(n),
        Arg::U32(k),
        Arg::U32(ldc),
        Arg::U32(plan.ctas),
        Arg::F32(alpha),
        Arg::F32(beta),
    ];
    let grid = (tiles as u64, v17_nt_stream_k::FIXUP_SPLIT as u64, 1);
    let fx = LaunchPlan::new(fix, &fix.symbols[0], grid, args);
    // SAFETY: `sgemm_stream_k_fixup(ws, c, m, n, k, ldc, ctas, α, β)`: the same band, workspace
    // and `ctas` as the launch before it on this stream; one block per tile of the band; the
    // kernel writes only inside m × n at pitch ldc; grid y = FIXUP_SPLIT runs of each tile.
    unsafe { fx.launch_on(gpu, stream) }
}

/// Elements of Aᵀ (pitch `lda`) from column `r0` on.
fn a_t_len(a_t: &Range<'_, f32>, r0: usize) -> usize {
    cudarc::driver::DeviceSlice::len(a_t).saturating_sub(r0)
}
