//! Launch plans: a checked problem, the record that runs and the buffers' addresses become the
//! [`LaunchPlan`]s one forward takes (three for `naive`, one for a fused kernel), with every
//! argument in the kernel's order. One definition for the GPU, the simulator and a prepared
//! launch.

use rustile_kernels::attention::{combine, v01_naive, v03_wgmma, LOG2_E};
use rustile_kernels::gpu::sched::TileGrid;
use rustile_kernels::registry::{DType, Entry, KernelInfo, Launch, Layout};

use crate::error::{Error, Result};
use crate::launch::{Arg, LaunchPlan};

use super::{kind_of, Kind, Problem};

/// The most scratch `naive` may ask for: S (and P, in place) of `batch · heads_q · seq_q ·
/// seq_kv` floats, 4 GiB.
pub const SCRATCH_CAP_BYTES: usize = 4 << 30;

/// The grid limits every CUDA device has: `x < 2³¹`, `y, z ≤ 65535`.
pub const GRID_LIMITS: (u64, u64, u64) = (i32::MAX as u64, 65535, 65535);

/// Device addresses of one launch's buffers (0: not yet known, for a plan that is only
/// checked).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Addrs {
    /// Q.
    pub q: u64,
    /// K.
    pub k: u64,
    /// V.
    pub v: u64,
    /// O.
    pub o: u64,
    /// LSE.
    pub lse: u64,
    /// The f32 scratch ([`scratch_len`] floats): `naive`'s scores, or the TMA kernel's
    /// per-split partial O then partial LSE.
    pub scratch: u64,
    /// The tensor maps of Q, K and V (the TMA kernel; 384 bytes).
    pub maps: u64,
    /// The device's SM count (the TMA kernel's persistent grid; 0 when only checking).
    pub sms: u32,
}

impl Addrs {
    /// From `[q, k, v, o, lse]` and the scratch.
    pub fn new([q, k, v, o, lse]: [u64; 5], scratch: u64) -> Self {
        Self {
            q,
            k,
            v,
            o,
            lse,
            scratch,
            maps: 0,
            sms: 0,
        }
    }
}

/// Key splits of the TMA kernel on a device of `sms` SMs (0: unknown, no split): when the
/// query tiles fill at most half of the SMs, split each block's keys so that about one wave of
/// tiles fills the device — at most 16 ways, and at most one key tile per split.
pub fn splits(p: &Problem, record: &KernelInfo, sms: u32) -> u32 {
    if kind_of(record) != Some(Kind::Tma) || sms == 0 {
        return 1;
    }
    let s = &p.shape;
    let tiles = (s.seq_q as u64).div_ceil(v03_wgmma::BM as u64) * (s.batch * s.heads_q) as u64;
    let key_tiles = (s.seq_kv as u64).div_ceil(v03_wgmma::BN as u64);
    if tiles * 2 > sms as u64 {
        return 1;
    }
    (sms as u64 / tiles).min(key_tiles).clamp(1, 16) as u32
}

/// f32 elements of scratch `record` needs for `p` on a device of `sms` SMs (0: unknown) — 0
/// for the fused kernels, `naive`'s scores, the TMA kernel's partial O and LSE when it splits
/// the keys — or [`Error::TooLarge`] past [`SCRATCH_CAP_BYTES`].
pub fn scratch_len(p: &Problem, record: &KernelInfo, sms: u32) -> Result<usize> {
    let n_split = splits(p, record, sms);
    if n_split > 1 {
        let s = &p.shape;
        // At most 16 splits of a grid under one wave: small.
        return Ok(n_split as usize * s.lse_len() * (s.head_dim + 1));
    }
    if kind_of(record) != Some(Kind::ThreePass) {
        return Ok(0);
    }
    let s = &p.shape;
    let n = [s.heads_q, s.seq_q, s.seq_kv]
        .into_iter()
        .try_fold(s.batch, usize::checked_mul);
    match n {
        Some(n) if n <= SCRATCH_CAP_BYTES / 4 => Ok(n),
        _ => Err(Error::TooLarge {
            kernel: format!("attention/{}", record.name),
            what: format!(
                "the score scratch of batch·heads_q·seq_q·seq_kv = {}·{}·{}·{} floats exceeds {} GiB",
                s.batch,
                s.heads_q,
                s.seq_q,
                s.seq_kv,
                SCRATCH_CAP_BYTES >> 30
            ),
        }),
    }
}

fn entry(record: &'static KernelInfo, i: DType, o: DType) -> Result<&'static Entry> {
    record
        .entry_for(i, o, Layout::Any)
        .ok_or_else(|| Error::UnknownKernel {
            family: record.family.name().into(),
            variant: record.name.into(),
            dtype: i.name(),
        })
}

fn u32_arg(p: &Problem, what: &str, v: usize) -> Result<Arg> {
    u32::try_from(v).map(Arg::U32).map_err(|_| Error::TooLarge {
        kernel: p.label(),
        what: format!("{what} = {v} does not fit the kernel's 32-bit argument"),
    })
}

fn plan(
    p: &Problem,
    record: &'static KernelInfo,
    entry: &'static Entry,
    grid: (u64, u64, u64),
    args: Vec<Arg>,
) -> Result<LaunchPlan<'static>> {
    let (lx, ly, lz) = GRID_LIMITS;
    if grid.0 > lx || grid.1 > ly || grid.2 > lz {
        return Err(Error::TooLarge {
            kernel: format!("attention/{}", record.name),
            what: format!(
                "{}: grid {grid:?} exceeds the limits {GRID_LIMITS:?}",
                p.shape.describe()
            ),
        });
    }
    Ok(LaunchPlan::new(record, entry, grid, args))
}

/// The plans of one forward of `p` by `record` on buffers at `a`, in launch order. Checks the
/// grids and 32-bit arguments (and the scratch, for `naive`); `p` itself must have passed
/// [`Problem::check`].
pub fn plans(p: &Problem, record: &'static KernelInfo, a: &Addrs) -> Result<Vec<LaunchPlan<'static>>> {
    let s = &p.shape;
    let l = &p.layout;
    let kind = kind_of(record).ok_or_else(|| Error::Unsupported {
        kernel: format!("attention/{}", record.name),
        what: "the host has no launcher for this kernel yet".into(),
    })?;
    let nq = u32_arg(p, "seq_q", s.seq_q)?;
    let nkv = u32_arg(p, "seq_kv", s.seq_kv)?;
    let heads_q = u32_arg(p, "heads_q", s.heads_q)?;
    let group = u32_arg(p, "heads_q / heads_kv", s.group())?;
    let strides = |x: super::Strides| [Arg::U64(x.batch as u64), Arg::U64(x.seq as u64), Arg::U64(x.head as u64)];
    let causal = Arg::U32(s.causal as u32);
    let scale = s.softmax_scale();
    let bh = s.batch as u64 * s.heads_q as u64;
    let (nq64, nkv64, d64) = (s.seq_q as u64, s.seq_kv as u64, s.head_dim as u64);
    match kind {
        Kind::ThreePass => {
            scratch_len(p, record, a.sms)?;
            let tile = v01_naive::TILE as u64;
            let d = u32_arg(p, "head_dim", s.head_dim)?;
            let rows = u32_arg(p, "batch·heads_q·seq_q", s.lse_len())?;
            let mut args = vec![Arg::Ptr(a.q), Arg::Ptr(a.k), Arg::Ptr(a.scratch), nq, nkv, heads_q, group, d];
            args.extend(strides(l.q));
            args.extend(strides(l.k));
            args.extend([Arg::F32(scale), causal]);
            let scores = plan(
                p,
                record,
                entry(record, p.dtype, DType::F32)?,
                (nkv64.div_ceil(tile), nq64.div_ceil(tile), bh),
                args,
            )?;
            let sm = &v01_naive::INFO_SOFTMAX;
            let softmax = plan(
                p,
                sm,
                entry(sm, DType::F32, DType::F32)?,
                ((s.lse_len() as u64).div_ceil(v01_naive::SOFTMAX_ROWS as u64), 1, 1),
                vec![Arg::Ptr(a.scratch), Arg::Ptr(a.lse), rows, nkv],
            )?;
            let pv_info = &v01_naive::INFO_PV;
            let mut args = vec![Arg::Ptr(a.scratch), Arg::Ptr(a.v), Arg::Ptr(a.o), nq, nkv, heads_q, group, d];
            args.extend(strides(l.v));
            args.extend(strides(l.o));
            let pv = plan(
                p,
                pv_info,
                entry(pv_info, p.dtype, p.dtype)?,
                (d64.div_ceil(tile), nq64.div_ceil(tile), bh),
                args,
            )?;
            Ok(vec![scores, softmax, pv])
        }
        Kind::Fused => {
            let Launch::Tiles { tile: (bm, _), .. } = record.launch else {
                return Err(Error::Unsupported {
                    kernel: format!("attention/{}", record.name),
                    what: format!("expected a tiled launch, the record says {:?}", record.launch),
                });
            };
            let mut args = vec![
                Arg::Ptr(a.q),
                Arg::Ptr(a.k),
                Arg::Ptr(a.v),
                Arg::Ptr(a.o),
                Arg::Ptr(a.lse),
                nq,
                nkv,
                heads_q,
                group,
            ];
            for x in [l.q, l.k, l.v, l.o] {
                args.extend(strides(x));
            }
            args.extend([Arg::F32(scale * LOG2_E), causal]);
            let grid = (nq64.div_ceil(bm as u64), s.heads_q as u64, s.batch as u64);
            Ok(vec![plan(p, record, entry(record, p.dtype, p.dtype)?, grid, args)?])
        }
        Kind::Tma => {
            let batch = u32_arg(p, "batch", s.batch)?;
            u32_arg(p, "batch·heads_q", bh as usize)?;
            let n_split = splits(p, record, a.sms);
            let tiles = TileGrid::new(s.seq_q as u32, bh as u32 * n_split, v03_wgmma::BM, 1, 1);
            u32_arg(p, "query tiles", tiles.tiles_m as usize * bh as usize)?;
            // Causal: query-block-major, the longest blocks first (the kernel reverses the
            // rows), so the static round-robin balances; otherwise head by head, so the blocks
            // in flight share K and V in L2.
            let tile_group = if s.causal { 1 } else { tiles.tiles_m };
            let grid = tiles.persistent_grid(if a.sms == 0 { u32::MAX } else { a.sms });
            let mut args = vec![Arg::Ptr(a.maps), Arg::Ptr(a.o), Arg::Ptr(a.lse), nq, nkv, batch, heads_q, group];
            args.extend(strides(l.o));
            let part_lse = a.scratch + 4 * (n_split as u64 * s.lse_len() as u64 * d64);
            let (part_o, part_lse) = if n_split > 1 { (a.scratch, part_lse) } else { (0, 0) };
            args.extend([
                Arg::F32(scale * LOG2_E),
                causal,
                Arg::U32(tile_group),
                Arg::U32(n_split),
                Arg::Ptr(part_o),
                Arg::Ptr(part_lse),
            ]);
            let main = plan(p, record, entry(record, p.dtype, p.dtype)?, (grid as u64, 1, 1), args)?;
            if n_split == 1 {
                return Ok(vec![main]);
            }
            let c = &combine::INFO;
            let d = u32_arg(p, "head_dim", s.head_dim)?;
            let mut args = vec![
                Arg::Ptr(part_o),
                Arg::Ptr(part_lse),
                Arg::Ptr(a.o),
                Arg::Ptr(a.lse),
                nq,
                heads_q,
                Arg::U32(bh as u32),
                Arg::U32(n_split),
                d,
            ];
            args.extend(strides(l.o));
            let grid = (nq64.div_ceil(combine::ROWS as u64), s.heads_q as u64, s.batch as u64);
            let merge = plan(p, c, entry(c, p.dtype, p.dtype)?, grid, args)?;
            Ok(vec![main, merge])
        }
    }
}
