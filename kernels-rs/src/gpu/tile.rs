//! Shared-memory tiles that carry their layout.
//!
//! A [`Tile`] is a 32-bit shared-window base address plus a [`Layout`], which maps
//! `(row, 16-byte chunk)` to a byte offset. Kernels address tiles only through the layout, so a
//! tile's padding or swizzle is stated once, where the tile is declared:
//! - [`Padded`]: row-major rows `pitch` bytes apart (`pitch == row bytes`: plain row-major);
//! - [`Swizzled`]: unpadded rows with their 16-byte chunks XOR-permuted by the row, so the eight
//!   row addresses of an `ldmatrix` phase (or the eight rows a `wgmma` reads) fall in distinct
//!   bank groups. With 128-byte rows and a 1024-byte-aligned base it is TMA's and `wgmma`'s
//!   128-byte swizzle.
//!
//! Layouts are values, not const generics: a generic kernel can then build one from its own
//! const parameters (`Swizzled::new(BM, BK / 8)` needs no `generic_const_exprs`), and after
//! inlining every field is a constant, so an address costs what the hand-written formula did.
//! The accessors are thin wrappers over [`Elem::ld_shared`],
//! [`ldmatrix`](super::ldmatrix) and [`cp_async_16`](super::cp_async_16).

use super::{Elem, Vec16};

/// How a tile's elements lie in shared memory.
pub trait Layout: Copy {
    /// Bytes the tile occupies (a multiple of 16, so the next tile stays vector-aligned).
    fn bytes(&self) -> u32;
    /// Byte offset of 16-byte chunk `ch` of row `row`.
    fn chunk(&self, row: u32, ch: u32) -> u32;
    /// Byte offset of byte `byte` of row `row` (bytes keep their order inside a chunk).
    #[inline(always)]
    fn offset(&self, row: u32, byte: u32) -> u32 {
        self.chunk(row, byte / 16) + byte % 16
    }
}

/// Row-major rows of `row_bytes`, `pitch` bytes apart: padding (`pitch > row_bytes`) shifts
/// consecutive rows across banks, e.g. a column read of an f32 tile with one padding word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Padded {
    /// Rows.
    pub rows: u32,
    /// Bytes of data per row.
    pub row_bytes: u32,
    /// Bytes from one row to the next (≥ `row_bytes`).
    pub pitch: u32,
}

impl Padded {
    /// `rows` rows of `row_bytes`, `pitch` apart.
    pub const fn new(rows: u32, row_bytes: u32, pitch: u32) -> Self {
        assert!(pitch >= row_bytes);
        Self {
            rows,
            row_bytes,
            pitch,
        }
    }

    /// Plain row-major: no padding.
    pub const fn plain(rows: u32, row_bytes: u32) -> Self {
        Self::new(rows, row_bytes, row_bytes)
    }
}

impl Layout for Padded {
    #[inline(always)]
    fn bytes(&self) -> u32 {
        (self.rows * self.pitch).div_ceil(16) * 16
    }
    #[inline(always)]
    fn chunk(&self, row: u32, ch: u32) -> u32 {
        row * self.pitch + 16 * ch
    }
    #[inline(always)]
    fn offset(&self, row: u32, byte: u32) -> u32 {
        row * self.pitch + byte
    }
}

/// Unpadded rows of `chunks` 16-byte chunks, chunk `ch` of row `r` stored at chunk position
/// `ch ^ f(r)`: `f(r) = (r / 2) % 4` for 64-byte rows (two rows share a 128-byte bank line),
/// `f(r) = r % 8` for rows of 128 bytes or more. Either way the eight rows an `ldmatrix` phase
/// addresses at one chunk column hit eight different bank groups.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Swizzled {
    /// Rows.
    pub rows: u32,
    /// 16-byte chunks per row: 4, 8, 16 or 32.
    pub chunks: u32,
}

impl Swizzled {
    /// `rows` rows of `chunks` 16-byte chunks.
    pub const fn new(rows: u32, chunks: u32) -> Self {
        assert!(chunks >= 4 && chunks.is_power_of_two());
        Self { rows, chunks }
    }
}

impl Layout for Swizzled {
    #[inline(always)]
    fn bytes(&self) -> u32 {
        self.rows * self.chunks * 16
    }
    #[inline(always)]
    fn chunk(&self, row: u32, ch: u32) -> u32 {
        let x = if self.chunks == 4 {
            ch ^ ((row >> 1) & 3)
        } else {
            ch ^ (row & 7)
        };
        row * self.chunks * 16 + (x << 4)
    }
}

/// A tile of shared memory: a 32-bit shared-window base and its [`Layout`].
#[derive(Clone, Copy, Debug)]
pub struct Tile<L: Layout> {
    /// Shared-window address of the tile's first byte.
    pub base: u32,
    /// Where `(row, chunk)` lies.
    pub layout: L,
}

impl<L: Layout> Tile<L> {
    /// The tile at shared-window address `base`.
    #[inline(always)]
    pub const fn at(base: u32, layout: L) -> Self {
        Self { base, layout }
    }

    /// Shared-window address of 16-byte chunk `ch` of row `row`.
    #[inline(always)]
    pub fn chunk(&self, row: u32, ch: u32) -> u32 {
        self.base + self.layout.chunk(row, ch)
    }

    /// Shared-window address of element `col` (of `T`) of row `row`.
    #[inline(always)]
    pub fn addr<T: Elem>(&self, row: u32, col: u32) -> u32 {
        self.base + self.layout.offset(row, col * T::BYTES as u32)
    }

    /// Reads element `(row, col)` (`ld.shared`).
    ///
    /// # Safety
    /// The element lies inside the tile, and the tile inside the launch's shared memory.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn load<T: Elem>(&self, row: u32, col: u32) -> T {
        T::ld_shared(self.addr::<T>(row, col))
    }

    /// Writes element `(row, col)` (`st.shared`).
    ///
    /// # Safety
    /// As for [`Tile::load`].
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn store<T: Elem>(&self, row: u32, col: u32, v: T) {
        T::st_shared(self.addr::<T>(row, col), v)
    }

    /// Writes chunk `(row, ch)` as four words (`st.shared.v4`).
    ///
    /// # Safety
    /// As for [`Tile::load`].
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn store_chunk(&self, row: u32, ch: u32, w: [u32; 4]) {
        super::st_shared_f32x4(self.chunk(row, ch), w.map(f32::from_bits))
    }

    /// Starts a 16-byte `cp.async` from global `src` into chunk `(row, ch)`.
    ///
    /// # Safety
    /// As for [`cp_async_16`](super::cp_async_16), with the chunk inside the tile.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn cp_async_16(&self, row: u32, ch: u32, src: *const Vec16) {
        super::cp_async_16(self.chunk(row, ch), src)
    }

    /// `ldmatrix` of `N` 8×8 matrices whose row addresses (this lane's) are chunk `(row, ch)`.
    /// Warp-collective.
    ///
    /// # Safety
    /// As for [`ldmatrix`](super::ldmatrix), with every addressed chunk inside the tile.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn ldmatrix<const N: usize, const TRANS: bool>(
        &self,
        row: u32,
        ch: u32,
    ) -> [u32; 4] {
        super::ldmatrix::<N, TRANS>(self.chunk(row, ch))
    }
}

/// Carves the launch's dynamic shared memory into tiles, in declaration order.
pub struct SharedArena {
    next: u32,
}

impl Default for SharedArena {
    fn default() -> Self {
        Self::new()
    }
}

impl SharedArena {
    /// The arena over this launch's dynamic shared memory.
    #[inline(always)]
    pub fn new() -> Self {
        Self {
            next: super::dynamic_shared_base(),
        }
    }

    /// Takes the next tile. The host must launch with at least the sum of the layouts' `bytes()`.
    #[inline(always)]
    pub fn tile<L: Layout>(&mut self, layout: L) -> Tile<L> {
        let base = self.next;
        self.next += layout.bytes();
        Tile::at(base, layout)
    }
}
