//! The dispatcher: which variant runs, padding scratch, split-K, the NT pipeline.

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut, DeviceSlice};
use rustile_kernels::gemm::{
    v05_blocktile_2d, v08_warptile, v11_nt_pipeline, v12_kgroup_ring, v13_gemv_rows, v14_small_m,
    v15_outer, v16_small_tile, v18_rows_any,
};
use rustile_kernels::registry::KernelInfo;

use crate::api::range::Range;
use crate::check::BufArg;
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::launch::{Arg, LaunchPlan};

use super::*;

/// The variant the dispatcher runs for `problem` on a GPU of `sm_count` SMs (measurements in
/// `bench-results/`): operands whose rows are not 16-byte multiples are padded first by
/// [`run`], so only the grid matters here. When the 128×128 tiles are fewer than the SMs, the
/// 128×64 k-group ring (twice the blocks, loads overlapped with the FMAs, 8 warps per tile);
/// otherwise the 128×128 warp tile.
///
/// Between one and 1.5 tiles of 128×128 per SM ([`one_wave_and_a_bit`]: 1531³ has 144 for
/// 132 SMs, so 12 SMs would run two tiles while the rest idle) the 4-warp k-group ring
/// (`kgroup_ring_kg1`, twice the tiles, 4 warps each): measured at 1536³ on the H200 0.746×
/// cuBLAS against 0.662× for the 8-warp ring and 0.635× for the NT pipeline
/// (`bench-results/2026-11-30-h200-sgemm-1000`, run 1).
pub fn dispatch(problem: &GemmProblem, sm_count: u32) -> &'static KernelInfo {
    let tiles = problem.m.div_ceil(128) * problem.n.div_ceil(128);
    if tiles < sm_count as usize {
        &v12_kgroup_ring::INFO
    } else if one_wave_and_a_bit(problem, sm_count) {
        &v12_kgroup_ring::experiments::INFO_KG1
    } else {
        &v08_warptile::INFO
    }
}

/// Whether `p` has between one and 1.5 tiles of 128×128 per SM (a second wave under half
/// full), where [`dispatch()`] takes the 4-warp k-group ring over the 128×128 kernels.
pub fn one_wave_and_a_bit(p: &GemmProblem, sm_count: u32) -> bool {
    let tiles = p.m.div_ceil(128) * p.n.div_ceil(128);
    let sms = sm_count as usize;
    tiles >= sms && 2 * tiles < 3 * sms
}

/// The skinny-product kernel for `p`, if its shape is one (they take any pitch, so they run on
/// the caller's operands, unpadded): M ≤ 4 streams B once ([`v14_small_m`]), N ≤ 4 a warp per
/// row of A ([`v13_gemv_rows`]), 1 ≤ K ≤ 16 the store-bound outer product ([`v15_outer`]).
pub fn skinny(p: &GemmProblem) -> Option<&'static KernelInfo> {
    if p.k == 0 {
        None
    } else if p.m <= SKINNY {
        Some(&v14_small_m::INFO)
    } else if p.n <= SKINNY {
        Some(&v13_gemv_rows::INFO)
    } else if p.k <= v15_outer::MAX_K as usize {
        Some(&v15_outer::INFO)
    } else {
        None
    }
}

/// Split-K parts of the one-launch small-tile kernel ([`v16_small_tile`]: 64 × 64 tiles, any
/// pitch, no padding pass) for `p` on `sm_count` SMs, or `None` where the 128-row kernels take
/// `p`. Among products with fewer 128 × 128 tiles than SMs or one wave and a bit of them
/// ([`one_wave_and_a_bit`]: 1531³) it takes those where the alternative pays extra launches:
/// - even its 64 × 64 tiles are fewer than the SMs (256³: 16, 512³: 64): K is split into
///   enough slices of at least 32 for two blocks per SM (at most 8), summed by the split-K
///   reduction — measured on an H100 (session 13) 11 µs at 256³ and 20 µs at 512³ against 31
///   and 35 for transpose + NT split-K + reduction;
/// - rows that are not 16-byte multiples, which the 128-row kernels copy into padded scratch
///   first: 777×1234×555 56 µs against 98, 1531³ 310 against 321.
///
/// Aligned products with enough 64 × 64 tiles keep the 128 × 64 k-group ring, which is faster
/// per FLOP (1000³: 74 µs against the small tile's 81) — or [`rows_any`] — except those under a
/// wave of 128 × 128 tiles whose rows_any tiles fill a second wave under 80 % (1100², 1152²,
/// 1200 × 1300), which take the small tile unsplit (session 18). [`run`] takes [`stream_k::plan`]
/// before the unsplit case here, so that one runs where stream-K does not (fewer 128 × 128
/// tiles than SMs: 777 × 1234 × 555; or stream-K turned off).
pub fn small_tile(p: &GemmProblem, sm_count: u32) -> Option<u32> {
    let sms = sm_count.max(1) as usize;
    let tiles128 = p.m.div_ceil(128) * p.n.div_ceil(128);
    if p.k == 0 || (tiles128 >= sms && !one_wave_and_a_bit(p, sm_count)) {
        return None;
    }
    let (tm, tn) = v16_small_tile::TILE;
    let tiles = p.m.div_ceil(tm as usize) * p.n.div_ceil(tn as usize);
    let splits = if tiles < sms {
        (2 * sms).div_ceil(tiles).min(p.k / 32).clamp(1, 8)
    } else {
        1
    };
    let q = p.aligned();
    let padded = q.lda != p.lda || q.ldb != p.ldb;
    // Under a wave of 128 × 128 tiles, where rows_any's 64 × 128 tiles leave most of a second
    // wave idle ([`rows_any`]).
    let past_rows_any = tiles128 < sms && !rows_any_fills(p, sms);
    (splits > 1 || padded || past_rows_any).then_some(splits as u32)
}

/// Whether [`run`] gives `p` to the 64 × 128 kernel on the caller's operands at any pitch
/// ([`v18_rows_any`]: no padding or transpose launch): where the 128 × 128 tiles are fewer than
/// the SMs (so no stream-K plan) and the 64 × 64 tiles are not (so [`small_tile`] would not split
/// K). Measured (session 17, `bench-results/2026-12-06-h100-s17/run3`, H200; run2, H100) it
/// beats the 128 × 64 k-group ring — the same number of tiles — everywhere there: 768³ 0.75×
/// cuBLAS against 0.69, 832³ 0.80 / 0.73, 700 × 900 × 600 0.75 / 0.66, 384 × 1536 × 1024 0.67 /
/// 0.62, 1000³ 1.00 / 0.84, and the small tile on unaligned rows (999 × 640 × 777: 0.72 / 0.52;
/// 777 × 1234 × 555: 0.82 / 0.63). Where the 64 × 64 tiles are fewer than the SMs the small
/// tile's split-K wins (704³ 0.83 against 0.62, 600 × 800 × 2048 0.89 against 0.57).
///
/// Only while its own 64 × 128 tiles fill their waves to at least 80 %:
/// where the second wave is mostly idle (1100², 162 tiles on 132 SMs: 61 %) the small tile's
/// 64 × 64 tiles, unsplit, are faster at every K measured (session 18,
/// `bench-results/2026-12-06-h200-s18/`: 1100² × 64 0.96–0.98× cuBLAS against 0.71, × 512 0.78
/// / 0.68, × 2048 0.71 / 0.63, 1152³ 0.69 / 0.62, 1200 × 1300 × 96 (79 %) 0.87–0.88 / 0.80) —
/// [`small_tile`] takes those; with fuller waves rows_any stays ahead (1300² × 700, 88 %: 0.79
/// against 0.66; 1400³, 92 %: 0.86 / 0.70; in one wave 1000² × 128–384 0.91–0.97 against
/// 0.78–0.86, 768² × 128/256 0.93–0.94 / 0.79–0.85).
pub fn rows_any(p: &GemmProblem, sm_count: u32) -> bool {
    let sms = sm_count.max(1) as usize;
    let tiles128 = p.m.div_ceil(128) * p.n.div_ceil(128);
    let (tm, tn) = v16_small_tile::TILE;
    let tiles64 = p.m.div_ceil(tm as usize) * p.n.div_ceil(tn as usize);
    p.k > 0 && tiles128 < sms && tiles64 >= sms && rows_any_fills(p, sms)
}

/// Whether [`v18_rows_any`]'s 64 × 128 tiles of `p` fit one wave of `sms`, or fill their waves
/// to at least 80 % (the small tile's per-FLOP rate against rows_any's: 0.78–0.81 at long K).
fn rows_any_fills(p: &GemmProblem, sms: usize) -> bool {
    let tiles = p.m.div_ceil(64) * p.n.div_ceil(128);
    tiles <= sms || 5 * tiles >= 4 * tiles.div_ceil(sms) * sms
}

/// M or N at most this is a [`skinny`] product.
pub const SKINNY: usize = 4;

/// Padded copies of A and B the dispatcher reuses across calls.
#[derive(Default)]
pub struct Scratch {
    a: Option<CudaSlice<f32>>,
    b: Option<CudaSlice<f32>>,
    workspace: Option<CudaSlice<f32>>,
    a_t: Option<CudaSlice<f32>>,
}

fn pad_into(
    gpu: &Gpu,
    src: Range<'_, f32>,
    rows: usize,
    cols: usize,
    ld_src: usize,
    ld_dst: usize,
    slot: &mut Option<CudaSlice<f32>>,
) -> Result<()> {
    use rustile_kernels::gemm::pad;
    let dst = reserve(gpu, slot, (rows * ld_dst).max(1), "padded SGEMM operand")?;
    let grid = (
        (ld_dst as u32).div_ceil(pad::BLOCK_X * pad::VEC) as u64,
        (rows as u32).clamp(1, pad::MAX_GRID_Y) as u64,
        1,
    );
    let args = vec![
        Arg::Ptr(src.ptr()),
        Arg::Ptr(dst.device_ptr(gpu.stream()).0),
        Arg::U32(rows as u32),
        Arg::U32(cols as u32),
        Arg::U32(ld_src as u32),
        Arg::U32(ld_dst as u32),
    ];
    let plan = LaunchPlan::new(&pad::INFO, &pad::SYMBOLS[0], grid, args);
    // SAFETY: `gemm_pad_f32(src, dst, rows, cols, ld_src, ld_dst)`; src holds (rows−1)·ld_src +
    // cols elements (checked by the caller's problem check), dst rows·ld_dst (allocated above);
    // the kernel masks c ≥ ld_dst and walks rows with a stride.
    unsafe { plan.launch_on(gpu, gpu.stream()) }
}

/// Split-K slices the dispatcher uses for `p` on `sm_count` SMs: when even the 128×64 tiles
/// would fill under half of the SMs, enough slices of K for two 128×128 blocks per SM (each
/// slice keeping ≥ 128 of K); else 1. Measured on the H200: 512³ 0.49× cuBLAS with split-K
/// against 0.28× with the 128×64 tile; at 768³ (72 tiles of 128×64) the k-group ring (0.73×)
/// beats NT split-K (0.63×).
pub fn split_k_slices(p: &GemmProblem, sm_count: u32) -> u32 {
    let tiles = (p.m.div_ceil(128) * p.n.div_ceil(128)) as u32;
    let narrow_tiles = (p.m.div_ceil(128) * p.n.div_ceil(64)) as u32;
    if tiles >= sm_count || 2 * narrow_tiles >= sm_count {
        return 1;
    }
    let want = (2 * sm_count).div_ceil(tiles.max(1));
    want.min((p.k / 128) as u32).clamp(1, 8)
}

/// Launches the split-K warp tile (`splits` slices of K into `ws`) and the reduction into C.
#[allow(clippy::too_many_arguments)]
fn launch_split_k(
    gpu: &Gpu,
    kernel: &KernelInfo,
    symbol: &str,
    p: &GemmProblem,
    a: Range<'_, f32>,
    b: Range<'_, f32>,
    c: Range<'_, f32>,
    splits: u32,
    ws: &mut Option<CudaSlice<f32>>,
) -> Result<()> {
    use rustile_kernels::gemm::v08_warptile::split_k;
    let w = reserve(gpu, ws, splits as usize * p.m * p.n, "split-K workspace")?;
    // The partial products: C' = A·B over each K slice, into w (ldw = n).
    let part = GemmProblem {
        ldc: p.n,
        alpha: 1.0,
        beta: 0.0,
        ..*p
    };
    // The real addresses: the warp tile's 16-byte loads need A and B aligned (a caller's view
    // may start anywhere), which `check` proves only from the pointers themselves.
    let w_ptr = w.device_ptr(gpu.stream()).0;
    part.check(
        kernel,
        BufArg::new("a", a.len(), a.ptr()),
        BufArg::new("b", b.len(), b.ptr()),
        BufArg::new("workspace", w.len(), w_ptr),
    )?;
    let (_, entry) = rustile_kernels::registry::by_symbol(symbol)
        .ok_or_else(|| Error::Usage(format!("no registered entry `{symbol}`")))?;
    let (gx, gy, _) = part.grid(kernel);
    let plan = part.plan_entry(
        kernel,
        entry,
        (gx, gy, splits as u64),
        [a.ptr(), b.ptr(), w_ptr],
    );
    // SAFETY: the warp tile's signature with C = the workspace; `check` proved A and B spans
    // and the alignment the 16-byte loads need; the workspace holds splits · m · n elements and
    // slice z is written at z · m · n; the grid's z is `splits`.
    unsafe { plan.launch_on(gpu, gpu.stream()) }?;
    let reduce = &split_k::reduce::INFO;
    let grid = (
        (p.n as u32).div_ceil(split_k::reduce::BLOCK_X) as u64,
        (p.m as u32).min(65535) as u64,
        1,
    );
    let args = vec![
        Arg::Ptr(w_ptr),
        Arg::Ptr(c.ptr()),
        Arg::U32(p.m as u32),
        Arg::U32(p.n as u32),
        Arg::U32(p.ldc as u32),
        Arg::U32(splits),
        Arg::F32(p.alpha),
        Arg::F32(p.beta),
    ];
    let plan = LaunchPlan::new(reduce, &reduce.symbols[0], grid, args);
    // SAFETY: `(ws, c, m, n, ldc, splits, alpha, beta)`; ws holds splits · m · n, C was checked
    // by the caller for (m − 1)·ldc + n; the kernel masks columns ≥ n and strides over rows.
    unsafe { plan.launch_on(gpu, gpu.stream()) }
}

/// The dispatcher. A [`skinny`] shape (M or N ≤ 4, K ≤ 16) runs its memory-bound kernel on
/// the caller's operands; a small one split over K the small tile ([`small_tile`]). Where the
/// NT pipeline's 128 × 128 tiles are at least the SMs but fill their last wave under 90 %
/// ([`stream_k::plan`]: 1531³, 2999 × 3001 × 2997, 2176³), at any pitch: Aᵀ written at a
/// padded pitch, B padded if it must be, the plain NT pipeline on whole waves and stream-K on
/// the rows below. For a dense A with M a multiple of 4 on a grid that fills the GPU it
/// transposes A with rustile's transpose and runs the `cp.async` NT pipeline (v11: 0.90–0.92×
/// cuBLAS at 4096³–8192³, transpose included). Otherwise it pads A and/or B into scratch
/// buffers when their rows are not 16-byte multiples (two memory-bound passes), then runs
/// [`dispatch()`]'s variant — or, when even 128×64 tiles cannot fill the GPU, the warp tile split
/// over K ([`split_k_slices`]) plus a reduction. Takes slices or views; returns the name of
/// what ran. Asynchronous.
pub fn run(
    gpu: &Gpu,
    p: &GemmProblem,
    a: &impl DevicePtr<f32>,
    b: &impl DevicePtr<f32>,
    c: &mut impl DevicePtrMut<f32>,
    scratch: &mut Scratch,
) -> Result<&'static str> {
    let sm_count = gpu.info().sm_count;
    let stream = gpu.stream();
    // K = 0 (C = β·C) reads neither A nor B, and is not padded: a variant without 16-byte
    // loads, which accepts any pitch (the fuzzer found `40x3x0 ld 2/4/3` refused by the
    // k-group ring's alignment check).
    let kernel = if p.k == 0 {
        &v05_blocktile_2d::INFO
    } else {
        dispatch(p, sm_count)
    };
    // Check the caller's buffers against the caller's problem before reading them.
    p.check(
        &v05_blocktile_2d::INFO,
        BufArg::new("a", a.len(), 0),
        BufArg::new("b", b.len(), 0),
        BufArg::new("c", c.len(), 0),
    )?;
    // One pointer per caller buffer, its stream-order guard held until every step below is
    // enqueued; the steps take `Range`s of it.
    if let Some(kernel) = skinny(p) {
        launch(gpu, kernel, p, a, b, c)?;
        return Ok(kernel.name);
    }
    let (lens_a, lens_b, lens_c) = (a.len(), b.len(), c.len());
    let (pa, _guard_a) = a.device_ptr(stream);
    let (pb, _guard_b) = b.device_ptr(stream);
    let (pc, _guard_c) = c.device_ptr_mut(stream);
    let (a, b) = (
        Range::new(pa, lens_a, stream),
        Range::new(pb, lens_b, stream),
    );
    let mut c = Range::new(pc, lens_c, stream);
    // Under a wave of 128 × 128 tiles but enough 64 × 64 ones: 64 × 128 tiles on the caller's
    // operands (any pitch).
    if rows_any(p, sm_count) {
        let kernel = &v18_rows_any::INFO;
        launch(gpu, kernel, p, &a, &b, &mut c)?;
        return Ok(kernel.name);
    }
    // Small products: one launch on the caller's operands (any pitch), split over K where even
    // 64 × 64 tiles leave SMs idle.
    let small = small_tile(p, sm_count);
    if let Some(splits) = small.filter(|&s| s > 1) {
        launch_split_k(
            gpu,
            &v16_small_tile::INFO,
            v16_small_tile::SYMBOLS[0].symbol,
            p,
            a,
            b,
            c,
            splits,
            &mut scratch.workspace,
        )?;
        return Ok("small_tile_split_k");
    }
    // Part-empty last waves, at any pitch: Aᵀ at a padded pitch, B padded if it must be, the
    // plain NT pipeline on whole waves and stream-K on the rest.
    if let Some(plan) = stream_k::plan(p, sm_count) {
        // B's rows are copied 16 bytes at a time: padded unless its pitch and address allow.
        let b_src = if p.ldb.is_multiple_of(4) && b.ptr().is_multiple_of(16) {
            b
        } else {
            let ldb = p.ldb.next_multiple_of(4);
            pad_into(gpu, b, p.k, p.n, p.ldb, ldb, &mut scratch.b)?;
            range_of(scratch.b.as_ref().expect("padded"), stream)
        };
        let ld_t = stream_k::transpose_pad(gpu, p, a, &mut scratch.a_t)?;
        let a_t = range_of(scratch.a_t.as_ref().expect("transposed"), stream);
        let nt = GemmProblem {
            lda: ld_t,
            ldb: p.ldb.next_multiple_of(4),
            ..*p
        };
        stream_k::run(gpu, &nt, plan, a_t, b_src, c, &mut scratch.workspace)?;
        return Ok(if plan.dp_rows > 0 {
            "nt_pipeline+stream_k"
        } else {
            "nt_stream_k"
        });
    }
    // With stream-K off: one-wave-and-a-bit products whose rows need padding.
    if let Some(splits) = small {
        let kernel = &v16_small_tile::INFO;
        if splits > 1 {
            launch_split_k(
                gpu,
                kernel,
                v16_small_tile::SYMBOLS[0].symbol,
                p,
                a,
                b,
                c,
                splits,
                &mut scratch.workspace,
            )?;
            return Ok("small_tile_split_k");
        }
        launch(gpu, kernel, p, &a, &b, &mut c)?;
        return Ok(kernel.name);
    }
    let q = if p.k == 0 { *p } else { p.aligned() };
    let a_src = if q.lda != p.lda {
        pad_into(gpu, a, p.m, p.k, p.lda, q.lda, &mut scratch.a)?;
        range_of(scratch.a.as_ref().expect("padded"), stream)
    } else {
        a
    };
    let b_src = if q.ldb != p.ldb {
        pad_into(gpu, b, p.k, p.n, p.ldb, q.ldb, &mut scratch.b)?;
        range_of(scratch.b.as_ref().expect("padded"), stream)
    } else {
        b
    };
    // Dense A with M a multiple of 4 on a grid that fills the GPU: transpose A with rustile's own
    // transpose and run the cp.async pipeline (measured faster than the warp tile; see notes).
    let tiles = p.m.div_ceil(128) * p.n.div_ceil(128);
    let nt_eligible = p.k > 0 && p.lda == p.k && p.m.is_multiple_of(4) && q.ldb == p.ldb;
    // Grids too small even for the 128×64 tile (under half the SMs): the NT pipeline split over
    // K into enough slices for two 128×128 blocks per SM (each slice keeping ≥ 128 of K), then
    // the reduction. Measured on the H200 (bench-results/2026-11-30-h200-sgemm-1000): 512³
    // 0.51× cuBLAS (k-group ring 0.48×); at 768³ and 1000³ the k-group ring wins (0.73× / 0.91×
    // against 0.63× / 0.54×), so there the split is not used.
    let narrow_tiles = p.m.div_ceil(128) * p.n.div_ceil(64);
    let nt_splits = if tiles < sm_count as usize && 2 * narrow_tiles < sm_count as usize {
        (2 * sm_count as usize)
            .div_ceil(tiles.max(1))
            .min(p.k / 128)
            .clamp(1, 8) as u32
    } else {
        1
    };
    if nt_eligible && nt_splits > 1 {
        let a_t = range_of(transpose_a(gpu, p, a, &mut scratch.a_t)?, stream);
        let nt = GemmProblem { lda: p.m, ..*p };
        let symbol = v11_nt_pipeline::split_k::SYMBOLS[0].symbol;
        launch_split_k(
            gpu,
            &v11_nt_pipeline::INFO,
            symbol,
            &nt,
            a_t,
            b,
            c,
            nt_splits,
            &mut scratch.workspace,
        )?;
        return Ok("nt_split_k");
    }
    if nt_eligible && tiles >= sm_count as usize && !one_wave_and_a_bit(p, sm_count) {
        let a_t = range_of(transpose_a(gpu, p, a, &mut scratch.a_t)?, stream);
        let nt = GemmProblem { lda: p.m, ..*p };
        launch(gpu, &v11_nt_pipeline::INFO, &nt, &a_t, &b, &mut c)?;
        return Ok(v11_nt_pipeline::INFO.name);
    }
    let splits = split_k_slices(&q, sm_count);
    if splits > 1 {
        let symbol = v08_warptile::split_k::SYMBOLS[0].symbol;
        launch_split_k(
            gpu,
            &v08_warptile::INFO,
            symbol,
            &q,
            a_src,
            b_src,
            c,
            splits,
            &mut scratch.workspace,
        )?;
        return Ok("split_k");
    }
    launch(gpu, kernel, &q, &a_src, &b_src, &mut c)?;
    Ok(kernel.name)
}

/// A range over rustile's own scratch buffer (allocated and used on `gpu`'s stream only, so
/// stream order alone orders its accesses).
fn range_of<'a>(s: &CudaSlice<f32>, stream: &'a std::sync::Arc<CudaStream>) -> Range<'a, f32> {
    Range::new(s.device_ptr(stream).0, s.len(), stream)
}

/// The scratch buffer in `slot`, (re)allocated to hold at least `need` elements.
pub(crate) fn reserve<'a>(
    gpu: &Gpu,
    slot: &'a mut Option<CudaSlice<f32>>,
    need: usize,
    what: &str,
) -> Result<&'a mut CudaSlice<f32>> {
    if slot.as_ref().is_none_or(|s| s.len() < need) {
        *slot = Some(gpu.alloc::<f32>(need, what)?);
    }
    Ok(slot.as_mut().expect("allocated above"))
}

/// Writes Aᵀ (K × M, dense) into `slot` with rustile's transpose, for the NT pipeline.
fn transpose_a<'a>(
    gpu: &Gpu,
    p: &GemmProblem,
    a: Range<'_, f32>,
    slot: &'a mut Option<CudaSlice<f32>>,
) -> Result<&'a CudaSlice<f32>> {
    let a_t = reserve(gpu, slot, p.k * p.m, "Aᵀ for the NT pipeline")?;
    let tp = crate::families::transpose::TransposeProblem {
        rows: p.m,
        cols: p.k,
    };
    crate::families::transpose::launch(
        gpu,
        crate::families::transpose::best(&tp, 4),
        &tp,
        &a,
        a_t,
    )?;
    Ok(a_t)
}
