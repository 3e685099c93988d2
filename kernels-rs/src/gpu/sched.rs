//! Output-tile schedules, compiled for the host and the device alike: the host sizes the grid
//! with the same `const fn`s the kernel walks its tiles with, so the two cannot drift
//! (FlashAttention-3's `tile_scheduler.hpp` pairs `grid()` with `first()/next()` the same way).
//!
//! - [`TileGrid`]: `tiles_m × tiles_n` output tiles in grouped order ([`grouped_tile`]);
//! - persistent launch: [`persistent_grid`] blocks (at most one per SM), block `b` takes tiles
//!   `b, b + grid, …` ([`TileGrid::persistent`]);
//! - one block per tile: a `(tiles_n, tiles_m)` grid ([`TileGrid::grid_2d`]), each block's tile
//!   from its indices ([`block_tile`]).
//!
//! Plain integer arithmetic only (no inline asm): the caller passes block and grid indices.

/// Output tile `t` (of `tiles_m × tiles_n`) in grouped order: consecutive tiles walk down a
/// band of `group` (≥ 1) tile rows before moving right, so the blocks in flight share A rows and
/// B columns in L2; `group` = 1 is row-major order. Returns `(tile_row, tile_col)`.
#[inline(always)]
pub const fn grouped_tile(t: u32, tiles_m: u32, tiles_n: u32, group: u32) -> (u32, u32) {
    let per_group = group * tiles_n;
    let first = (t / per_group) * group;
    let left = tiles_m - first;
    let rows = if left < group { left } else { group };
    let r = t % per_group;
    (first + r % rows, r / rows)
}

/// Blocks of a persistent launch over `tiles` tiles: one per SM, fewer if there are fewer
/// tiles, never zero.
#[inline(always)]
pub const fn persistent_grid(tiles: u32, sm_count: u32) -> u32 {
    let g = if tiles < sm_count { tiles } else { sm_count };
    if g == 0 {
        1
    } else {
        g
    }
}

/// The tile of block `(bx, by)` in a one-block-per-tile launch of `(gx, gy)` = `(tiles_n,
/// tiles_m)` blocks: `group` = 0 maps block `(x, y)` to tile `(y, x)`; otherwise the blocks in
/// launch order take the tiles in grouped order ([`grouped_tile`]). Returns `(tile_row,
/// tile_col)`.
#[inline(always)]
pub const fn block_tile(bx: u32, by: u32, gx: u32, gy: u32, group: u32) -> (u32, u32) {
    if group == 0 {
        (by, bx)
    } else {
        grouped_tile(by * gx + bx, gy, gx, group)
    }
}

/// `tiles_m × tiles_n` output tiles, walked in grouped order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TileGrid {
    /// Tile rows.
    pub tiles_m: u32,
    /// Tile columns.
    pub tiles_n: u32,
    /// Tile rows per band of the grouped order (≥ 1).
    pub group: u32,
}

impl TileGrid {
    /// The tiles of an `m × n` output in `bm × bn` tiles (partial edge tiles count).
    #[inline(always)]
    pub const fn new(m: u32, n: u32, bm: u32, bn: u32, group: u32) -> Self {
        Self {
            tiles_m: m.div_ceil(bm),
            tiles_n: n.div_ceil(bn),
            group,
        }
    }

    /// Number of tiles.
    #[inline(always)]
    pub const fn tiles(&self) -> u32 {
        self.tiles_m * self.tiles_n
    }

    /// `(tile_row, tile_col)` of the `t`-th tile.
    #[inline(always)]
    pub const fn tile(&self, t: u32) -> (u32, u32) {
        grouped_tile(t, self.tiles_m, self.tiles_n, self.group)
    }

    /// Blocks of the persistent launch on `sm_count` SMs.
    #[inline(always)]
    pub const fn persistent_grid(&self, sm_count: u32) -> u32 {
        persistent_grid(self.tiles(), sm_count)
    }

    /// The grid of the one-block-per-tile launch: `(tiles_n, tiles_m)`.
    #[inline(always)]
    pub const fn grid_2d(&self) -> (u32, u32) {
        (self.tiles_n, self.tiles_m)
    }

    /// The tiles (linear indices, for [`TileGrid::tile`]) that block `block` of a persistent
    /// launch of `grid` blocks takes: `block, block + grid, …`.
    #[inline(always)]
    pub const fn persistent(&self, block: u32, grid: u32) -> Persistent {
        Persistent {
            next: block,
            stride: grid,
            end: self.tiles(),
        }
    }
}

/// A block's walk over the tiles of a persistent launch ([`TileGrid::persistent`]).
#[derive(Clone, Copy, Debug)]
pub struct Persistent {
    next: u32,
    stride: u32,
    end: u32,
}

impl Iterator for Persistent {
    type Item = u32;
    #[inline(always)]
    fn next(&mut self) -> Option<u32> {
        if self.next < self.end {
            let t = self.next;
            self.next += self.stride;
            Some(t)
        } else {
            None
        }
    }
}

/// Stream-K: the `tiles × k_tiles` k-iterations of a launch, cut into `blocks` near-equal
/// contiguous ranges, one per block (Osama et al., "Stream-K", PPoPP 2023). A block's range
/// crosses tile boundaries: it ends part-way into a tile (whose first k-iterations it computes,
/// last in its walk), may hold whole tiles, and starts part-way into another (whose last
/// k-iterations it computes first). A tile's first segment's block finishes the tile; the later
/// segments' blocks, whose segment comes first in their walks, leave partial sums for it. So
/// every wait is for work its producer did first, and no block waits on a block that waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamK {
    /// Output tiles.
    pub tiles: u32,
    /// k-iterations per tile (≥ 1).
    pub k_tiles: u32,
    /// Blocks (≥ 1, at most `tiles · k_tiles`).
    pub blocks: u32,
    /// Tiles done whole before the stream-K range, as the persistent walk does them (block `b`
    /// takes tiles `b, b + blocks, …` below `dp_tiles`): a multiple of `blocks`, 0 for stream-K
    /// throughout. See [`StreamK::tail`].
    pub dp_tiles: u32,
}

/// A block's share of one tile in a [`StreamK`] walk: k-iterations `kb..ke` of tile `t`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// The tile (linear index, for [`TileGrid::tile`]).
    pub t: u32,
    /// First k-iteration.
    pub kb: u32,
    /// One past the last.
    pub ke: u32,
}

impl StreamK {
    /// The launch's blocks for `tiles × k_tiles` iterations on `sm_count` SMs: one per SM, fewer
    /// if there are fewer iterations, never zero.
    #[inline(always)]
    pub const fn grid(tiles: u32, k_tiles: u32, sm_count: u32) -> u32 {
        let total = tiles as u64 * k_tiles as u64;
        let g = if total < sm_count as u64 {
            total as u32
        } else {
            sm_count
        };
        if g == 0 {
            1
        } else {
            g
        }
    }

    /// Stream-K over the launch's blocks throughout.
    #[inline(always)]
    pub const fn new(tiles: u32, k_tiles: u32, blocks: u32) -> Self {
        StreamK {
            tiles,
            k_tiles,
            blocks,
            dp_tiles: 0,
        }
    }

    /// Data-parallel + stream-K (the hybrid of the Stream-K paper, §5): the whole waves of
    /// tiles go as the persistent walk (one tile per block per wave), and only the tiles of the
    /// last, partial wave are shared out as k-iterations. Each block's share of that tail is
    /// under one tile, so it cuts at most two tiles; the tiles in flight at any time stay a
    /// band of consecutive tiles of the grouped order (L2 reuse), which stream-K over every
    /// tile would scatter across the whole product. With no partial wave it is the persistent
    /// walk exactly.
    #[inline(always)]
    pub const fn tail(tiles: u32, k_tiles: u32, blocks: u32) -> Self {
        StreamK {
            tiles,
            k_tiles,
            blocks,
            dp_tiles: tiles / blocks * blocks,
        }
    }

    /// The first k-iteration (over the whole launch, `dp_tiles · k_tiles` onwards) of block
    /// `b`'s stream-K range; `start(blocks)` is the total. The first `rest % blocks` ranges are
    /// one longer. 32-bit arithmetic: the launcher keeps `tiles · k_tiles` below 2³² (one
    /// division, no 64-bit one in the producer's 40 registers).
    #[inline(always)]
    pub const fn start(&self, b: u32) -> u32 {
        let rest = (self.tiles - self.dp_tiles) * self.k_tiles;
        let (q, r) = (rest / self.blocks, rest % self.blocks);
        self.dp_tiles * self.k_tiles + b * q + if b < r { b } else { r }
    }

    /// Block `b`'s segments, in walk order: its whole tiles below `dp_tiles`, then its
    /// stream-K range.
    #[inline(always)]
    pub const fn segments(&self, b: u32) -> Segments {
        Segments {
            whole: Persistent {
                next: b,
                stride: self.blocks,
                end: self.dp_tiles,
            },
            next: self.start(b),
            end: self.start(b + 1),
            k_tiles: self.k_tiles,
        }
    }
}

/// A block's walk over its [`StreamK`] range ([`StreamK::segments`]).
#[derive(Clone, Copy, Debug)]
pub struct Segments {
    /// The whole tiles below `dp_tiles`: the persistent walk's.
    whole: Persistent,
    next: u32,
    end: u32,
    k_tiles: u32,
}

impl Iterator for Segments {
    type Item = Segment;
    #[inline(always)]
    fn next(&mut self) -> Option<Segment> {
        if let Some(t) = self.whole.next() {
            return Some(Segment {
                t,
                kb: 0,
                ke: self.k_tiles,
            });
        }
        if self.next >= self.end {
            return None;
        }
        let k = self.k_tiles;
        let t = self.next / k;
        let first = t * k;
        let stop = if self.end - first < k {
            self.end
        } else {
            first + k
        };
        let s = Segment {
            t,
            kb: self.next - first,
            ke: stop - first,
        };
        self.next = stop;
        Some(s)
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;

    #[test]
    fn grouped_order_visits_every_tile_once() {
        for (tm, tn, g) in [(1, 1, 1), (5, 3, 2), (7, 9, 4), (16, 16, 16), (3, 17, 8)] {
            let grid = TileGrid {
                tiles_m: tm,
                tiles_n: tn,
                group: g,
            };
            let mut seen = [[false; 32]; 32];
            for t in grid.persistent(0, 1) {
                let (r, c) = grid.tile(t);
                assert!(r < tm && c < tn && !seen[r as usize][c as usize]);
                seen[r as usize][c as usize] = true;
            }
        }
    }

    #[test]
    fn persistent_blocks_split_the_tiles() {
        let grid = TileGrid::new(1000, 1000, 128, 256, 16);
        let blocks = grid.persistent_grid(132);
        assert_eq!(blocks, 132.min(grid.tiles()));
        let total: usize = (0..blocks)
            .map(|b| grid.persistent(b, blocks).count())
            .sum();
        assert_eq!(total as u32, grid.tiles());
        assert_eq!(persistent_grid(0, 132), 1);
    }

    #[test]
    fn stream_k_covers_every_iteration_once_and_finishers_wait_on_earlier_work() {
        for (tiles, k, blocks) in [
            (104, 72, 132),
            (1, 1, 1),
            (5, 3, 7),
            (7, 9, 4),
            (3, 1, 3),
            (13, 64, 132),
        ] {
            check_stream_k(StreamK::new(tiles, k, blocks));
        }
    }

    /// Every k-iteration once; only a walk's first segment starts inside a tile and only its
    /// last ends inside one; a tile's later segments belong to the blocks after its first
    /// segment's, in order, each segment starting where the one before it ended (what the
    /// fix-up's flag walk assumes); whole tiles below `dp_tiles`, the persistent walk's.
    fn check_stream_k(sk: StreamK) {
        let (tiles, k, blocks) = (sk.tiles, sk.k_tiles, sk.blocks);
        let mut seen = std::vec![0u32; (tiles * k) as usize];
        let mut owners = std::vec![std::vec::Vec::new(); tiles as usize];
        for b in 0..blocks {
            let segs: std::vec::Vec<Segment> = sk.segments(b).collect();
            let whole = segs.iter().take_while(|s| s.t < sk.dp_tiles).count();
            let persistent = TileGrid {
                tiles_m: 1,
                tiles_n: sk.dp_tiles,
                group: 1,
            }
            .persistent(b, blocks);
            assert!(segs[..whole].iter().map(|s| s.t).eq(persistent));
            for (i, s) in segs.iter().enumerate() {
                assert!(s.kb < s.ke && s.ke <= k && s.t < tiles);
                assert!(s.kb == 0 || i == whole, "{sk:?} block {b}");
                assert!(s.ke == k || i + 1 == segs.len(), "{sk:?} block {b}");
                for j in s.kb..s.ke {
                    seen[(s.t * k + j) as usize] += 1;
                }
                owners[s.t as usize].push((b, s.kb, s.ke));
            }
        }
        assert!(seen.iter().all(|&c| c == 1), "{sk:?}");
        for segs in owners {
            for w in segs.windows(2) {
                assert_eq!(
                    w[1].0,
                    w[0].0 + 1,
                    "{sk:?}: a tile's segments on consecutive blocks"
                );
                assert_eq!(w[1].1, w[0].2, "{sk:?}: contiguous");
            }
        }
    }

    #[test]
    fn stream_k_tail_runs_whole_waves_persistent_and_shares_the_last_one() {
        // 4096³ on the 128 × 256 tile: 512 tiles of 64 k-tiles on 132 SMs — 396 whole tiles,
        // then 116 tiles' 7424 k-iterations, 56–57 per block, each block cutting at most two.
        let sk = StreamK::tail(512, 64, 132);
        assert_eq!(sk.dp_tiles, 396);
        assert_eq!(sk.start(132), 512 * 64);
        assert!((0..132).all(|b| {
            let n = sk.start(b + 1) - sk.start(b);
            (56..=57).contains(&n)
        }));
        let busiest = (0..132)
            .map(|b| sk.segments(b).map(|s| s.ke - s.kb).sum::<u32>())
            .max();
        assert_eq!(busiest, Some(3 * 64 + 57), "against 4 · 64 for whole tiles");
        for (tiles, k, blocks) in [
            (512, 64, 132),
            (2048, 128, 132),
            (264, 16, 132),
            (100, 7, 132),
            (1, 1, 1),
            (5, 3, 2),
            (9, 4, 4),
            (133, 1, 132),
        ] {
            check_stream_k(StreamK::tail(tiles, k, blocks));
        }
        // No partial wave: the persistent walk exactly, nothing cut.
        let whole = StreamK::tail(264, 16, 132);
        assert_eq!(whole.start(0), whole.start(132));
        // Fewer tiles than blocks: stream-K throughout.
        assert_eq!(StreamK::tail(100, 7, 132), StreamK::new(100, 7, 132));
    }
}
