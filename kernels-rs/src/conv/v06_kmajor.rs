//! Both operands k-major, one k per fragment load, at most 128 registers: two to four blocks
//! per SM instead of `regblock`'s one (the SGEMM `nt_pipeline`'s lesson, `gemm/v11`, applied to
//! the convolution). NCHW only (x NCHW, w KCRS, y NCHW: the layout cuDNN's fastest f32
//! algorithms take).
//!
//! **Why.** `regblock` holds four k-steps of fragments (a row-major A tile gives 4 consecutive
//! k per `ld.shared.v4`), 254 registers, one 8-warp block per SM, and issues FMAs ~40 % of the
//! time. Here A (the im2col rows) is stored `[k][pixel]` (consecutive pixels are consecutive
//! input columns: coalesced 4-byte copies) and B (the weights) `[k][channel]`: KCRS rows are
//! contiguous along the reduction, so the copies read 8 consecutive reduction slots of 4 output
//! channels per warp instruction (one sector per channel) and write them transposed into shared
//! memory (bank `4·slot + channel`: conflict-free). A k-step is then 4 `ld.shared.v4` for 64
//! FMAs, as in `v08`/`v11`.
//!
//! **The reduction** runs over the KCRS order `j = (c·R + r)·S + s` in k-tiles of 32. Each
//! thread keeps `(c, r·S + s)` of its slots and steps them by 32 per k-tile (no division in the
//! loop); padding, slots past `C·R·S`, rows past `N·P·Q` and channels past `K` are zero-filling
//! copies (`src-size 0`, branch-free).
//!
//! **Configuration**: the body is generic over the block tile `BM × 64` (`BM` 64 or 128, warp
//! tiles 64×32, 8×8 per lane) and `KG` k-groups of warps splitting every k-tile (their partial
//! tiles are added through shared memory at the end). The registered kernel is `BM` = 64,
//! `KG` = 4 (256 threads, 2 blocks/SM): of the four configurations measured on the H200
//! (notes/conv-direct.md) it is the one that does not spill at 128 registers, and within 6 %
//! of the fastest on each of the four 3×3 layers.
//!
//! **Bound**: FMA issue. Per k-step and warp 64 FFMA + 4 LDS.128; per k-tile and thread
//! `BM·BK/THREADS` A copies and `64·BK/THREADS` B copies (one per 64 and per `BM` FMAs).

use super::{activate, Geom};
use crate::gpu::{self, Elem};
use crate::registry::{KernelInfo, Launch};

/// Output channels per block tile.
pub const BN: u32 = 64;
/// K-tile depth.
pub const BK: u32 = 32;
/// Ring depth.
pub const STAGES: u32 = 3;
/// Pitch (floats) of the B tile's k rows: 64 + 4 (16-byte rows, and `4·slot + channel` banks
/// for the transposing copies).
const PB: u32 = BN + 4;
/// Warp tile `(pixels, channels)`: 8×8 per lane.
const WARP_TILE: (u32, u32) = (64, 32);

/// Warps per k-group.
pub const fn group_warps(bm: u32) -> u32 {
    (bm / WARP_TILE.0) * (BN / WARP_TILE.1)
}

/// Threads per block.
pub const fn threads(bm: u32, kg: u32) -> u32 {
    32 * group_warps(bm) * kg
}

/// Bytes of one ring stage (A `[BK][BM]`, then B `[BK][PB]`).
pub const fn stage_bytes(bm: u32) -> u32 {
    BK * (bm + PB) * 4
}

/// Dynamic shared bytes: the ring (or the partial tiles of half the k-groups if larger), then
/// the slot tables.
pub const fn shared_bytes(bm: u32, kg: u32) -> usize {
    let ring = STAGES * stage_bytes(bm);
    let red = (kg / 2) * bm * BN * 4;
    (if ring > red { ring } else { red }) as usize + TABLE_BYTES as usize
}

/// Blocks per SM the launch bounds ask for: 65536 registers at 128 per thread.
pub const fn blocks_per_sm(bm: u32, kg: u32) -> u32 {
    65536 / (threads(bm, kg) * 128)
}

/// Block tile rows of the registered kernel.
pub const TILE_ROWS: u32 = 64;
/// K-groups of the registered kernel.
pub const K_GROUPS: u32 = 4;

/// Registry entry.
pub const INFO: KernelInfo = KernelInfo {
    family: super::FAMILY,
    name: "kmajor",
    block: (threads(TILE_ROWS, K_GROUPS), 1, 1),
    launch: Launch::Tiles {
        tile: (TILE_ROWS, BN),
        halo_rows: 0,
    },
    shared_bytes_f32: shared_bytes(TILE_ROWS, K_GROUPS),
    symbols: SYMBOLS,
    about: "k-major A and B, 64x64x32 tiles, 8x8 per lane, 4 k-groups, <= 128 registers: 2 blocks/SM",
    bounds: Some((
        threads(TILE_ROWS, K_GROUPS),
        blocks_per_sm(TILE_ROWS, K_GROUPS),
    )),
    ..KernelInfo::BASE
};

crate::entry_points! {
    pub const SYMBOLS;
    fn body(x: *const f32, w: *const f32, bias: *const f32, y: *mut f32, n: u32, h: u32, w_: u32, c: u32, k: u32, rs: u32, pq: u32, stride: u32, pad: u32, dil: u32, relu: u32);
    conv_kmajor_f32_nchw => (F32, F32, Nchw) [; BM: u32 = TILE_ROWS, KG: u32 = K_GROUPS];
}

/// Slot tables in flight (written 3 k-tiles ahead, read 2 ahead).
const TABLES: u32 = 3;
/// Bytes of the slot tables.
const TABLE_BYTES: u32 = TABLES * BK * 16;

/// A row index no input row is: `(OUTSIDE + offset) as u32` is never below `h`.
const OUTSIDE: i32 = -(1 << 30);

/// `cp.async.ca` of one f32, with the source ignored (a zero written, nothing read) unless
/// `a < a_end` and `b < b_end` (unsigned): the bounds test becomes the copy's `ignore-src`
/// source size (0 or 4) from one predicate: two compares and the copy.
///
/// # Safety
/// `dst` 4 bytes of the launch's shared memory, 4-byte aligned; when both tests pass, `src` an
/// f32 of global memory no thread writes (otherwise it may be any 4-byte-aligned address).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
unsafe fn cp_async_4_if(dst: u32, src: *const f32, a: u32, a_end: u32, b: u32, b_end: u32) {
    #[cfg(target_arch = "nvptx64")]
    core::arch::asm!(
        "{{ .reg .pred ign; .reg .b32 n;",
        "setp.ge.u32 ign, {a}, {ae};",
        "setp.ge.or.u32 ign, {b}, {be}, ign;",
        "selp.b32 n, 0, 4, ign;",
        "cp.async.ca.shared.global [{d}], [{s}], 4, n; }}",
        d = in(reg32) dst, s = in(reg64) src,
        a = in(reg32) a, ae = in(reg32) a_end, b = in(reg32) b, be = in(reg32) b_end,
        options(nostack, preserves_flags)
    );
    #[cfg(not(target_arch = "nvptx64"))]
    gpu::host::current().cp_async_zfill(
        dst,
        src as u64,
        4,
        if a < a_end && b < b_end { 4 } else { 0 },
        core::panic::Location::caller(),
    );
}

/// One thread's share of the operand copies and the state that forms their addresses.
///
/// A: pixels `pl + 32e` (`e < BM/32`), slots `sg + NSG·l` (`l < BK/NSG`, `NSG` = warps per
/// block). B: elements `e = t + THREADS·l`, slot `(e / 512)·8 + e % 8`, channel `(e / 8) % 64`.
struct Gather<const BM: u32, const KG: u32> {
    g: Geom,
    t: u32,
    /// k-tiles in all.
    tiles: u32,
    /// Shared address of the slot tables (`TABLES` × 32 entries of 16 bytes).
    table: u32,
    /// `⌈2¹⁶ / S⌉`: `(v · s_inv) >> 16 = v / S` for every `v < R·S` here.
    s_inv: u32,
    /// Input row and column of tap (0, 0) per A pixel (`OUTSIDE` past the last pixel).
    ih0: [i32; 4],
    iw0: [i32; 4],
    /// `x + (offset of x[n][0][ih0][iw0])` per A pixel (outside x for pixels in the padding:
    /// formed with wrapping arithmetic, only dereferenced at in-image taps).
    px: [*const f32; 4],
    /// The B rows this thread copies: output channels `col0 + t/8 + (THREADS/8)·r`, clamped
    /// to `K − 1` (columns past `K` compute values the epilogue never stores).
    wrow: [*const f32; 4],
    /// Warp 0: `(c, r·S + s)` of slot `lane` in the next table to write.
    sc: u32,
    srs: u32,
}

impl<const BM: u32, const KG: u32> Gather<BM, KG> {
    const THREADS: u32 = threads(BM, KG);
    const NSG: u32 = Self::THREADS / 32;
    const LA: u32 = BK / Self::NSG;
    const EA: u32 = BM / 32;
    const EB: u32 = BK * BN / Self::THREADS;
    /// Distinct B rows per thread.
    const RB: u32 = 512 / Self::THREADS;

    #[inline(always)]
    fn new(
        x: *const f32,
        w: *const f32,
        g: &Geom,
        t: u32,
        row0: u32,
        col0: u32,
        table: u32,
    ) -> Self {
        let taps = g.r * g.s;
        let plane = g.h as i64 * g.w as i64;
        let pl = t % 32;
        let mut s = Gather {
            g: *g,
            t,
            tiles: g.red().div_ceil(BK),
            table,
            // As measured on the H200 (`div_ceil` gives the same value, different PTX).
            #[allow(clippy::manual_div_ceil)]
            s_inv: (65536 + g.s - 1) / g.s,
            ih0: [OUTSIDE; 4],
            iw0: [OUTSIDE; 4],
            px: [x; 4],
            wrow: [w; 4],
            sc: (t % 32) / taps,
            srs: (t % 32) % taps,
        };
        crate::unroll!(4, e, {
            let m = row0 + pl + 32 * e as u32;
            if (e as u32) < Self::EA && m < g.rows() {
                let (b, p, q) = g.pixel(m);
                s.ih0[e] = (p * g.stride_h) as i32 - g.pad_h as i32;
                s.iw0[e] = (q * g.stride_w) as i32 - g.pad_w as i32;
                let pix = b as i64 * g.c as i64 * plane
                    + s.ih0[e] as i64 * g.w as i64
                    + s.iw0[e] as i64;
                s.px[e] = x.wrapping_offset(pix as isize);
            }
        });
        crate::unroll!(4, r, {
            if (r as u32) < Self::RB {
                let kk = (col0 + t / 8 + (Self::THREADS / 8) * r as u32).min(g.k - 1);
                s.wrow[r] = w.wrapping_add(kk as usize * g.red() as usize);
            }
        });
        s
    }

    /// Warp 0 writes the slot table of k-tile `tile` (the next one: tables are written in
    /// order) into table `tile % TABLES`: per slot `[c·H·W + dr·W + ds, dr, ds, 0]` with
    /// `(dr, ds) = (r·dil_h, s·dil_w)`, and `dr = OUTSIDE` for slots past `C·R·S`.
    ///
    /// # Safety
    /// No thread reads that table until the next barrier.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn write_table(&mut self, tile: u32) {
        if self.t < 32 {
            let g = &self.g;
            let taps = g.r * g.s;
            let rr = (self.srs * self.s_inv) >> 16; // srs / S (srs < R·S ≤ 49)
            let ss = self.srs - rr * g.s;
            let (dr, ds) = (rr * g.dil_h, ss * g.dil_w);
            let v = if self.sc < g.c {
                [
                    self.sc * g.h * g.w + dr * g.w + ds,
                    dr,
                    ds,
                    0,
                ]
            } else {
                [0, OUTSIDE as u32, 0, 0]
            };
            let at = self.table + ((tile % TABLES) * BK + self.t) * 16;
            gpu::st_shared_f32x4(at, v.map(f32::from_bits));
            // The next k-tile: slot + BK.
            self.srs += BK % taps;
            self.sc += BK / taps;
            if self.srs >= taps {
                self.srs -= taps;
                self.sc += 1;
            }
        }
    }

    /// Copies (or zero-fills) this thread's A elements of slot `l` (< `LA`) of k-tile `tile`
    /// into the stage at shared address `stage`: one slot-table read, `EA` pixels.
    ///
    /// # Safety
    /// x holds the problem's activations; the stage is `stage_bytes(BM)` of shared memory no
    /// thread reads until the next barrier; the table of `tile` is written and visible.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn issue_a(&self, tile: u32, stage: u32, l: u32) {
        let g = &self.g;
        let (pl, sg) = (self.t % 32, self.t / 32);
        let tab = self.table + (tile % TABLES) * BK * 16;
        let slot = sg + Self::NSG * l;
        let [off, dr, ds, _] = gpu::ld_shared_f32x4(tab + slot * 16).map(f32::to_bits);
        let (dr, ds) = (dr as i32, ds as i32);
        crate::unroll!(4, e, {
            if (e as u32) < Self::EA {
                let (ih, iw) = (self.ih0[e] + dr, self.iw0[e] + ds);
                let src = self.px[e].wrapping_offset(off as i32 as isize);
                let dst = stage + (slot * BM + pl + 32 * e as u32) * 4;
                // SAFETY: `src` is inside x when `ih < H` and `iw < W` (pixel and tap in the
                // image; a slot past C·R·S has `dr = OUTSIDE`, which fails it); otherwise the
                // copy reads nothing; `dst` is in the stage.
                cp_async_4_if(dst, src, ih as u32, g.h, iw as u32, g.w);
            }
        });
    }

    /// Copies (or zero-fills) this thread's B element `l` (< `EB`) of k-tile `tile` into the
    /// stage at `stage`.
    ///
    /// # Safety
    /// w holds the problem's weights; the stage as for [`Self::issue_a`].
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn issue_b(&self, tile: u32, stage: u32, l: u32) {
        let r = (l % Self::RB) as usize;
        let slot = (l / Self::RB) * 8 + self.t % 8;
        let ch = self.t / 8 + (Self::THREADS / 8) * r as u32;
        let j = tile * BK + slot;
        let src = self.wrow[r].wrapping_add(j as usize);
        let dst = stage + BK * BM * 4 + (slot * PB + ch) * 4;
        // SAFETY: inside w when `j < C·R·S` (the row is clamped below K); otherwise the copy
        // reads nothing.
        cp_async_4_if(dst, src, j, self.g.red(), 0, 1);
    }

    /// All of this thread's copies of k-tile `tile` (none past the last), then one commit.
    ///
    /// # Safety
    /// As for [`Self::issue_a`] and [`Self::issue_b`].
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn issue(&self, tile: u32, stage: u32) {
        if tile < self.tiles {
            crate::unroll!(8, l, {
                if (l as u32) < Self::LA {
                    self.issue_a(tile, stage, l as u32);
                }
            });
            crate::unroll!(16, l, {
                if (l as u32) < Self::EB {
                    self.issue_b(tile, stage, l as u32);
                }
            });
        }
        gpu::cp_async_commit();
    }
}

/// The body for block tile `BM × 64` and `KG` k-groups.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn body<const BM: u32, const KG: u32>(
    x: *const f32,
    w: *const f32,
    bias: *const f32,
    y: *mut f32,
    n: u32,
    h: u32,
    w_: u32,
    c: u32,
    k: u32,
    rs: u32,
    pq: u32,
    stride: u32,
    pad: u32,
    dil: u32,
    relu: u32,
) {
    let g = Geom::new(n, h, w_, c, k, rs, pq, stride, pad, dil);
    let tg_threads: u32 = 32 * group_warps(BM); // threads per k-group
    let kstep: u32 = BK / KG;
    let stage: u32 = stage_bytes(BM);
    let a_bytes: u32 = BK * BM * 4;

    let t = gpu::thread_idx_x();
    let (warp, lane) = (t / 32, t % 32);
    let group = warp / group_warps(BM);
    let wi = warp % group_warps(BM);
    let (wrow0, wcol0) = ((wi / 2) * WARP_TILE.0, (wi % 2) * WARP_TILE.1);
    let (lr, lc) = (lane / 4, lane % 4);
    let (row0, col0) = (gpu::block_idx_y() * BM, gpu::block_idx_x() * BN);
    let rows = g.rows();
    let base = gpu::dynamic_shared_base();

    let table = base + (shared_bytes(BM, KG) as u32 - TABLE_BYTES);
    let mut gather = Gather::<BM, KG>::new(x, w, &g, t, row0, col0, table);
    let tiles = gather.tiles;
    let advance = |off: u32| {
        if off + stage == STAGES * stage {
            0
        } else {
            off + stage
        }
    };

    // --- Main loop: a STAGES-deep ring, one barrier per k-tile. ---
    let mut acc = [[0.0f32; 8]; 8];
    let mut wr = 0u32;
    let mut s = 0;
    while s < TABLES {
        // SAFETY: nothing reads the tables before the barrier below.
        unsafe { gather.write_table(s) };
        s += 1;
    }
    gpu::sync_threads();
    s = 0;
    while s < STAGES - 1 {
        // SAFETY: the stage at `wr` is free (nothing has been read yet).
        unsafe { gather.issue(s, base + wr) };
        wr = advance(wr);
        s += 1;
    }
    let kg0 = group * kstep;
    let mut rd = 0u32;
    let mut tile = 0;
    while tile < tiles {
        gpu::cp_async_wait::<{ STAGES - 2 }>(); // this thread's copies of `tile` have landed
        gpu::sync_threads(); // everyone's have; everyone is done with the stage refilled next
        // SAFETY: the barrier above freed the stage at `wr` (read in iteration tile − 1) and
        // made table `tile + 2` visible (written in iteration tile − 1 or the prologue).
        unsafe { gather.issue(tile + STAGES - 1, base + wr) };
        let a_s = base + rd;
        let b_s = a_s + a_bytes;
        let mut d = 0;
        while d < kstep {
            let kk = kg0 + d;
            let arow = a_s + (kk * BM + wrow0 + 4 * lr) * 4;
            let brow = b_s + (kk * PB + wcol0 + 4 * lc) * 4;
            let a_lo = gpu::ld_shared_f32x4(arow);
            let a_hi = gpu::ld_shared_f32x4(arow + 32 * 4);
            let b_lo = gpu::ld_shared_f32x4(brow);
            let b_hi = gpu::ld_shared_f32x4(brow + 16 * 4);
            let fa = [
                a_lo[0], a_lo[1], a_lo[2], a_lo[3], a_hi[0], a_hi[1], a_hi[2], a_hi[3],
            ];
            let fb = [
                b_lo[0], b_lo[1], b_lo[2], b_lo[3], b_hi[0], b_hi[1], b_hi[2], b_hi[3],
            ];
            crate::unroll!(8, i, {
                crate::unroll!(8, jj, {
                    acc[i][jj] = gpu::fma(fa[i], fb[jj], acc[i][jj]);
                });
            });
            d += 1;
        }
        // SAFETY: table (tile + 3) % 3 was last read for k-tile `tile`'s copies, in iteration
        // tile − 2 (or the prologue), before this iteration's barrier; it is next read after
        // the barrier of iteration tile + 1.
        unsafe { gather.write_table(tile + TABLES) };
        wr = advance(wr);
        rd = advance(rd);
        tile += 1;
    }
    gpu::cp_async_wait::<0>();

    // --- The k-groups' partial tiles, added pairwise through the idle ring. ---
    let tl = t % tg_threads;
    let area = BM * BN * 4;
    let mut half = KG / 2;
    while half >= 1 {
        gpu::sync_threads(); // the ring (or the last round's areas) is free
        if group >= half && group < 2 * half {
            let at = base + (group - half) * area;
            crate::unroll!(8, i, {
                crate::unroll!(8, jj, {
                    f32::st_shared(at + ((i * 8 + jj) as u32 * tg_threads + tl) * 4, acc[i][jj]);
                });
            });
        }
        gpu::sync_threads();
        if group < half {
            let at = base + group * area;
            crate::unroll!(8, i, {
                crate::unroll!(8, jj, {
                    acc[i][jj] += f32::ld_shared(at + ((i * 8 + jj) as u32 * tg_threads + tl) * 4);
                });
            });
        }
        half /= 2;
    }
    if group != 0 {
        return;
    }

    // --- Epilogue (group 0): bias, ReLU, NCHW stores. Lane row i, column j. ---
    let lane_row = |i: u32| (i / 4) * 32 + 4 * lr + i % 4;
    let lane_col = |j: u32| (j / 4) * 16 + 4 * lc + j % 4;
    let mut bj = [0.0f32; 8];
    crate::unroll!(8, jj, {
        let col = col0 + wcol0 + lane_col(jj as u32);
        if !bias.is_null() && col < g.k {
            bj[jj] = f32::ld_global_nc(bias.add(col as usize));
        }
    });
    let out = |i: usize, jj: usize| activate(acc[i][jj] + bj[jj], relu);
    let pq_ = g.p * g.q;
    let vec_y = pq_.is_multiple_of(4) && (y as usize).is_multiple_of(16);
    crate::unroll!(2, hh, {
        let m0 = row0 + wrow0 + lane_row(4 * hh as u32);
        let (b0, pq0) = (m0 / pq_, m0 % pq_);
        crate::unroll!(8, jj, {
            let col = col0 + wcol0 + lane_col(jj as u32);
            if col < g.k {
                if vec_y && m0 + 3 < rows {
                    // m0 is a multiple of 4 and P·Q too: the 4 pixels are in one image.
                    let at = (b0 as u64 * g.k as u64 + col as u64) * pq_ as u64 + pq0 as u64;
                    let v = [
                        out(4 * hh, jj).to_bits(),
                        out(4 * hh + 1, jj).to_bits(),
                        out(4 * hh + 2, jj).to_bits(),
                        out(4 * hh + 3, jj).to_bits(),
                    ];
                    gpu::st_global_v16(y.add(at as usize) as *mut gpu::Vec16, gpu::Vec16(v));
                } else {
                    crate::unroll!(4, e, {
                        let m = m0 + e as u32;
                        if m < rows {
                            let (b, pqm) = (m / pq_, m % pq_);
                            let at = (b as u64 * g.k as u64 + col as u64) * pq_ as u64 + pqm as u64;
                            f32::st_global(y.add(at as usize), out(4 * hh + e, jj));
                        }
                    });
                }
            }
        });
    });
}
