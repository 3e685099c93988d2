//! Which width, reduction split and cut the TMA kernel runs a problem with: the cost model
//! ([`choose`]) and the switches and calibration constants it reads.

use super::*;

/// Whether launches store y through the staging tile and TMA by default. Off: on the H200
/// (2026-12-01, run 5 against run 4) the TMA-store epilogue was 5–10 % slower on the 3×3 layers
/// (e.g. 7² × 512: 246.5 against 272.3 TFLOP/s) and mixed on the 1×1 ones; `rustile conv bench
/// --tma-stores` measures it.
pub const TMA_STORES: bool = false;

/// The most parts split-K cuts a reduction into.
pub const MAX_SPLITS: u32 = 8;

/// Whether the launcher splits the reduction (split-K). It was off from the first H200 run,
/// where every split launch gave wrong sums: the kernel's epilogue wrote split launches'
/// partial sums to y instead of the f32 workspace (`conv::v05_wgmma`'s `finish`, fixed in the
/// second session). With it off, a forced split is an [`Error::Unsupported`].
pub const SPLIT_K_ENABLED: bool = true;

/// Whether [`choose`] may pick stream-K (`Reduce::StreamK`: one contiguous range of the
/// launch's k-iterations per SM, cut tiles finished in the kernel; see `tc::ws::run_stream_k`).
/// Off: on the H200 (2026-12-01, `bench-results/2026-12-01-h200-conv-3`) forced stream-K was
/// slower than whole tiles on every 3×3 layer at batch 32 (e.g. 7² × 512: 222.9 against 272.5
/// TFLOP/s), so only `--stream-k` (and the validation cases) run it.
pub const STREAM_K_ENABLED: bool = false;

/// How the TMA kernel's reduction over C·R·S is shared out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Reduce {
    /// The estimate's choice ([`choose`]).
    #[default]
    Auto,
    /// Split-K into this many parts (1: whole tiles), f32 partial sums and a fix-up kernel.
    Split(u32),
    /// Stream-K over one persistent wave (the 64- and 128-wide tiles; with no width pinned,
    /// the 128-wide one).
    StreamK,
    /// Every tile cut into this many near-equal k-segments, one block each (`tiles · n`
    /// blocks, all resident: at most one per SM), the first segment adding the others'
    /// partial sums in the kernel — split-K without the f32 round trip and the fix-up kernel
    /// (the stream-K walk and fix-up of `tc::ws::run_stream_k` on a grid of `tiles · n`).
    /// 64- and 128-wide tiles; `Cut(1)` is whole tiles.
    Cut(u32),
}

/// The split-K fix-up kernel's launch and the wait for it, in the estimate's units (k-tile
/// columns). Was 400; measured on the H200 at batch 1 (2026-12-03,
/// `bench-results/2026-12-03-h200-conv-cut/run7/`, split against whole 64-wide tiles in one
/// process): split won on reductions of 32–72 k-tiles (1.3–2.1×), tied at 18 and lost at 16
/// (1.08–1.16× slower on l3.b1.conv1, l4.b0.conv1, l4.b0.down), where 400 still split. 900 keeps
/// the wins and drops the losses.
pub const SPLIT_LAUNCH_COST: f64 = 900.0;

/// The k-tiles of `p`'s reduction: `R·S` taps × `⌈C/64⌉` channel chunks.
pub(super) fn k_tiles(p: &Problem) -> u32 {
    (p.r * p.s * p.c.div_ceil(v05::BK as usize)) as u32
}

/// The output tiles of `p` at the persistent record `rec`'s tile, and the tile's width;
/// `None` for another launch or a shape with no output.
fn tiles_of(p: &Problem, rec: &KernelInfo) -> Option<(u64, u32)> {
    let Launch::Persistent { tile: (bm, bn) } = rec.launch else {
        return None;
    };
    let (m, n, _) = p.gemm_dims().ok()?;
    Some(((m as u64).div_ceil(bm as u64) * (n as u64).div_ceil(bn as u64), bn))
}

/// Estimated time of `p` at tile width `rec` and `splits` parts on `sms` SMs, in units of one
/// column of one k-tile: whole waves of tiles, each `k-tiles / splits` k-tiles of
/// `BN / efficiency` plus its epilogue (the output tile's stores, ~3 k-tile columns per column
/// at the H200's bandwidth per SM, and with split-K the f32 partials and their fix-up).
fn estimate(p: &Problem, rec: &KernelInfo, eff: f64, splits: u32, sms: u64) -> Option<f64> {
    let (tiles, bn) = tiles_of(p, rec)?;
    let (m, n, _) = p.gemm_dims().ok()?;
    let kt = k_tiles(p) as f64;
    let tiles = tiles * splits as u64;
    let waves = tiles.div_ceil(sms) as f64;
    let store = if splits == 1 { 3.0 } else { 6.0 };
    let fixup = if splits == 1 {
        0.0
    } else {
        // The combine kernel reads splits · 4 and writes 2 bytes per output, spread over the
        // whole GPU, plus its launch (SPLIT_LAUNCH_COST).
        (m * n) as f64 * (4.0 * splits as f64 + 2.0) / (sms as f64 * 128.0 * 2.0 / 3.0)
            + SPLIT_LAUNCH_COST
    };
    Some(waves * bn as f64 * (kt / splits as f64 / eff + store) + fixup)
}

/// `estimate` for stream-K: every SM computes `tiles · k-tiles / sms` k-tiles, stores about
/// `tiles / sms + 1` tiles, and a cut tile's finishing block reads the later segments' f32
/// partial sums one after another (`sms / tiles` of them, each about as costly as storing a
/// tile twice). `None` where the kernel has no stream-K (the 256-wide tile) or the iterations
/// overflow its 32-bit walk.
fn estimate_stream_k(p: &Problem, rec: &KernelInfo, eff: f64, sms: u64) -> Option<f64> {
    let (tiles, bn) = tiles_of(p, rec)?;
    if bn > 128 {
        return None;
    }
    let kt = k_tiles(p) as f64;
    if tiles as f64 * kt >= u32::MAX as f64 {
        return None;
    }
    let per_sm = tiles as f64 * kt / sms as f64;
    let stores = tiles as f64 / sms as f64 + 1.0;
    let readers = (sms as f64 / tiles as f64).ceil();
    Some(bn as f64 * (per_sm / eff + 3.0 * stores + 6.0 * readers))
}

/// The cost of each k-segment past the first of a [`Reduce::Cut`] tile, in k-tile columns: the
/// later segments' f32 partial sums stored, flagged and read back by the first (through L2,
/// one after another). Calibrated on the H200 (2026-12-03,
/// `bench-results/2026-12-03-h200-conv-cut/`): the 7² × 512 layers' 52 tiles of 128 × 128 cut in
/// two ran in 0.92× the time of their 104 whole tiles of 128 × 64 (24.9–25.5 against
/// 27.0–27.3 µs), where the estimate's efficiencies alone would say 0.83×.
pub const CUT_SEGMENT_COST: f64 = 4.4;

/// The most k-segments [`choose`] cuts a tile into (`--cut N` may ask for more).
pub const MAX_CUT: u32 = 4;

/// The fewest k-tiles per segment [`choose`] cuts into. Measured on the H200 (2026-12-03,
/// `bench-results/2026-12-03-h200-conv-cut/run3/b1.log`): at batch 1, segments of 4–8 k-tiles
/// (64-wide tiles cut in two) ran 1.02–1.3× slower than whole tiles on 6 of 7 layers (the
/// partial sums' store, flag and read are latency the short reduction does not hide), while
/// the 7² × 512 layers' segments of 36 gained 1.08×.
pub const MIN_CUT_SEGMENT: u32 = 16;

/// `estimate` for [`Reduce::Cut`]`(n)` at width `rec`: one wave of `tiles · n` blocks (so
/// `None` past `sms`, for segments shorter than [`MIN_CUT_SEGMENT`], and for the 256-wide
/// tile, which has no stream-K), each
/// `k-tiles / n` k-tiles plus the epilogue and [`CUT_SEGMENT_COST`] per later segment.
fn estimate_cut(p: &Problem, rec: &KernelInfo, eff: f64, n: u32, sms: u64) -> Option<f64> {
    let (tiles, bn) = tiles_of(p, rec)?;
    if bn > 128 || n < 2 {
        return None;
    }
    let kt = k_tiles(p);
    if n > kt
        || kt / n < MIN_CUT_SEGMENT
        || tiles * n as u64 > sms
        || tiles * kt as u64 >= u32::MAX as u64
    {
        return None;
    }
    let seg = (kt as f64 / n as f64).ceil();
    Some(bn as f64 * (seg / eff + 3.0 + CUT_SEGMENT_COST * (n - 1) as f64))
}

/// The ping-pong widths' efficiency ([`WIDTHS_PP`]: 64, 128 wide) in `estimate_whole`.
pub const PP_EFF: [f64; 2] = [0.6, 0.85];

/// `estimate_whole`'s epilogue costs, in k-tile columns: per ping-pong tile (its epilogue runs
/// under the other consumer's main loop: only its issue shows), the last ping-pong tile's
/// (exposed), and the 256-wide tile's per wave.
pub const PP_TILE_STORE: f64 = 0.5;
/// See [`PP_TILE_STORE`].
pub const PP_LAST_STORE: f64 = 4.0;
/// See [`PP_TILE_STORE`].
pub const N256_STORE: f64 = 1.0;

/// The estimated time of `p` in whole tiles at `rec` (a ping-pong width or the 256-wide tile)
/// on `sms` SMs, in `estimate`'s units. A ping-pong block runs its tiles' main loops one
/// after another, each epilogue under the next main loop, so it costs `⌈tiles/sms⌉` main loops
/// and one exposed epilogue; the 256-wide tile (two consumers on one tile) costs whole waves
/// of main loop and epilogue. Fitted on the H200 (2026-12-04,
/// `bench-results/2026-12-04-h200-conv-pingpong/run2/`, every width forced on the ResNet-50
/// layers at batch 32): with these constants the least estimate is the fastest of the
/// 64-wide ping-pong, 128-wide ping-pong and 256-wide tiles on 18 of the 19 layers with K > 64,
/// and within 0.4 % on the last.
fn estimate_whole(p: &Problem, rec: &KernelInfo, sms: u64) -> Option<f64> {
    let (tiles, bn) = tiles_of(p, rec)?;
    let kt = k_tiles(p) as f64;
    let rounds = tiles.div_ceil(sms) as f64;
    let bnf = bn as f64;
    if pingpong(rec) {
        let eff = if bn <= 64 { PP_EFF[0] } else { PP_EFF[1] };
        Some(rounds * bnf * (kt / eff + PP_TILE_STORE) + bnf * PP_LAST_STORE)
    } else {
        Some(rounds * bnf * (kt + N256_STORE))
    }
}

/// The tile width and the sharing-out of the reduction for `p` on `sms` SMs:
/// - [`WIDTHS_X2`] where [`two_blocks_pay`];
/// - with more 128 × 64 tiles than SMs (every SM busy on whole tiles: split-K and cut tiles
///   have not paid there): the least `estimate_whole` of the ping-pong widths
///   ([`WIDTHS_PP`]) and the 256-wide tile, whole tiles;
/// - else (few tiles) the width, split-K parts or cut with the least `estimate` /
///   `estimate_cut` (wider tiles reuse each A load over more output channels; splitting
///   fills the SMs), a whole-tile pick of the 64- or 128-wide tile going to its ping-pong form
///   ([`PP_FEW_TILES`]).
pub fn choose(p: &Problem, sms: u32) -> Result<(&'static KernelInfo, Reduce)> {
    let sms = sms.max(1) as u64;
    let kt = k_tiles(p);
    let (m, n, _) = p.gemm_dims()?;
    if two_blocks_pay(p, sms) {
        return Ok((WIDTHS_X2[0], Reduce::Split(1)));
    }
    if tiles_of(p, WIDTHS[0]).is_some_and(|(tiles, _)| tiles > sms) {
        let mut best: Option<(f64, &'static KernelInfo)> = None;
        for rec in [WIDTHS_PP[0], WIDTHS_PP[1], WIDTHS[2]] {
            if let Some(t) = estimate_whole(p, rec, sms) {
                if best.is_none_or(|(bt, _)| t < bt) {
                    best = Some((t, rec));
                }
            }
        }
        if let Some((_, rec)) = best {
            return Ok((rec, Reduce::Split(1)));
        }
    }
    let mut best: Option<(f64, &'static KernelInfo, Reduce)> = None;
    for (rec, eff) in WIDTHS.iter().zip([0.72, 0.9, 1.0]) {
        let max_splits = if SPLIT_K_ENABLED {
            MAX_SPLITS.min(kt.max(1))
        } else {
            1
        };
        for splits in 1..=max_splits {
            // The fix-up indexes 32-bit elements.
            if splits > 1 && (m as u64 * n as u64) * splits as u64 > i32::MAX as u64 {
                break;
            }
            let Some(t) = estimate(p, rec, eff, splits, sms) else {
                continue;
            };
            if best.is_none_or(|(bt, _, _)| t < bt * 0.97) {
                best = Some((t, rec, Reduce::Split(splits)));
            }
        }
        for n in 2..=MAX_CUT {
            if let Some(t) = estimate_cut(p, rec, eff, n, sms) {
                if best.is_none_or(|(bt, _, _)| t < bt * 0.97) {
                    best = Some((t, rec, Reduce::Cut(n)));
                }
            }
        }
        if STREAM_K_ENABLED {
            if let Some(t) = estimate_stream_k(p, rec, eff, sms) {
                if best.is_none_or(|(bt, _, _)| t < bt * 0.9) {
                    best = Some((t, rec, Reduce::StreamK));
                }
            }
        }
    }
    Ok(match best {
        Some((_, rec, Reduce::Split(1))) if PP_FEW_TILES && !std::ptr::eq(rec, WIDTHS[2]) => {
            let pp = if std::ptr::eq(rec, WIDTHS[0]) { 0 } else { 1 };
            (WIDTHS_PP[pp], Reduce::Split(1))
        }
        Some((_, rec, r)) => (rec, r),
        None => (&v05::INFO, Reduce::Split(1)),
    })
}

/// Whether [`choose`]'s few-tile branch runs a whole-tile 64- or 128-wide pick with ping-pong
/// consumers ([`WIDTHS_PP`]). Measured on the H200 at batch 32 with at most one tile per SM
/// (2026-12-04, `bench-results/2026-12-04-h200-conv-pingpong/run2/`): the 64-wide ping-pong
/// 1.05–1.13× the 64-wide tile on the four 7² layers (104 tiles), the 128-wide 1.07–1.08× the
/// 128-wide tile on the 14² 3×3 layers (98 tiles): one warpgroup per tile issues the same
/// `wgmma`s with its epilogue off the other's path.
pub const PP_FEW_TILES: bool = true;

/// Whether the 64-wide tile at two blocks per SM (`wgmma_n64x2`) beats every one-block width:
/// short, stride-1 reductions over many tiles with K ≤ 64 output channels, where a tile's
/// chain of TMA load → few k-tiles of `wgmma` → epilogue is latency-bound and a second block
/// per SM hides it. First measured on the H200 on 2026-12-02
/// (`bench-results/2026-12-02-h200-conv-x2/`: 1.05–1.5× the one-block widths then, also at
/// K = 128 and at ≤ 4 k-tiles); since the ping-pong widths and the branch-free epilogue
/// (2026-12-04, `bench-results/2026-12-04-h200-conv-pingpong/run2/`) it wins only at K = 64
/// (l1.b0.conv1 60 against 55, l1.b1.conv1 132 / 128, l1.b0.conv2 276 / 268 TFLOP/s) and loses
/// at K ≥ 128 (l2.b0.conv1 209 against the 128-wide ping-pong's 226, l1.b0.conv3 105 against the
/// 256-wide tile's 121). Fewer than 5 tiles per SM put two blocks on some SMs while others idle.
pub fn two_blocks_pay(p: &Problem, sms: u64) -> bool {
    let Ok((m, n, _)) = p.gemm_dims() else {
        return false;
    };
    let tiles = (m as u64).div_ceil(BM as u64) * (n as u64).div_ceil(64);
    tiles >= 5 * sms && p.stride == (1, 1) && p.k <= 64
}

/// The blocks of a [`Reduce::Cut`] launch: `tiles · n`, every one resident at once (the first
/// segment of a tile waits for the others' partial sums), so at most one per SM; the reason
/// otherwise.
pub fn cut_grid(tiles: u32, n: u32, sms: u32) -> std::result::Result<u32, String> {
    let blocks = tiles as u64 * n as u64;
    if n == 0 || blocks > sms as u64 {
        return Err(format!(
            "{tiles} tiles cut into {n} k-segments need {blocks} blocks resident at once (one per SM); the device has {sms} SMs"
        ));
    }
    Ok(blocks as u32)
}

/// The width the ladder record (`wgmma`, no width pinned) runs a [`Reduce::Cut`]`(n)` at: the
/// widest of the 64- and 128-wide tiles whose `tiles · n` blocks fit one per SM (the 7² × 512
/// layers: 52 tiles of 128 × 128, cut in two on 104 SMs), else the 64-wide one (whose launch
/// then reports that it does not fit).
pub fn cut_width(p: &Problem, n: u32, sms: u32) -> &'static KernelInfo {
    WIDTHS[..2]
        .iter()
        .rev()
        .find(|rec| {
            tiles_of(p, rec)
                .is_some_and(|(tiles, _)| tiles.saturating_mul(n.max(1) as u64) <= sms as u64)
        })
        .copied()
        .unwrap_or(WIDTHS[0])
}
