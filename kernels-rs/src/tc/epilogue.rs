//! The tensor-core epilogue: `out = act(α·acc + β·C + bias[col])`, converted to the output type
//! and stored in pairs (two adjacent columns of one row: the `mma`/`wgmma` fragment layout).

use super::TcOut;
use crate::gpu::{self, Elem};

/// What happens to an accumulator on its way out: `out = act(α·acc + β·C + bias[col])`.
#[derive(Clone, Copy)]
pub struct Epilogue<O: TcOut> {
    /// C, row-major.
    pub c: *mut O::Store,
    /// Leading dimension of C, elements.
    pub ldc: u32,
    /// Rows of C.
    pub m: u32,
    /// Columns of C.
    pub n: u32,
    /// α.
    pub alpha: f32,
    /// β (0: C is not read).
    pub beta: f32,
    /// Per-column bias (f32, `n` entries), or null.
    pub bias: *const f32,
    /// Non-zero: ReLU after the bias.
    pub relu: u32,
}

/// Whether pairs `C[r][2j], C[r][2j + 1]` can be stored with one access: even `ldc` and a
/// base aligned to two elements.
#[inline(always)]
pub fn pairs_aligned<O: TcOut>(c: *mut O::Store, ldc: u32) -> bool {
    ldc.is_multiple_of(2) && (c as usize).is_multiple_of(2 * core::mem::size_of::<O::Store>())
}

impl<O: TcOut> Epilogue<O> {
    #[inline(always)]
    unsafe fn finish(&self, at: *mut O::Store, col: u32, v: f32) -> O::Store {
        let mut r = self.alpha * v;
        if self.beta != 0.0 {
            r = gpu::fma(self.beta, O::unpack(O::Store::ld_global_nc(at)), r);
        }
        if !self.bias.is_null() {
            r += f32::ld_global_nc(self.bias.add(col as usize));
        }
        if self.relu != 0 && r < 0.0 {
            // NaN stays NaN: `r < 0.0` is false for it.
            r = 0.0;
        }
        O::pack(r)
    }

    /// Stores `C[row][col] ← v0` and `C[row][col + 1] ← v1`, each only if inside C; `col` is
    /// even (the fragment layouts' pairs), so with [`pairs_aligned`] both go in one access.
    ///
    /// # Safety
    /// `c` covers `m` rows of `ldc` elements; `bias` (if not null) `n` floats.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn store_pair(&self, row: u32, col: u32, v0: f32, v1: f32) {
        if row >= self.m {
            return;
        }
        let at = self.c.add(row as usize * self.ldc as usize + col as usize);
        if col + 1 < self.n && pairs_aligned::<O>(self.c, self.ldc) {
            let (r0, r1) = (
                self.finish(at, col, v0),
                self.finish(at.add(1), col + 1, v1),
            );
            O::store2(at, r0, r1);
            return;
        }
        if col < self.n {
            O::Store::st_global(at, self.finish(at, col, v0));
        }
        if col + 1 < self.n {
            O::Store::st_global(at.add(1), self.finish(at.add(1), col + 1, v1));
        }
    }

    /// Stores one `m16n8` accumulator fragment quarter of a lane: `d[0], d[1]` at
    /// `(row, col)`, `(row, col + 1)` and `d[2], d[3]` eight rows below (the `mma.m16n8k16` and
    /// `wgmma` D layouts: `row = 16·w + lane / 4`, `col = 8·j + 2·(lane % 4)`).
    ///
    /// # Safety
    /// As for [`Epilogue::store_pair`].
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn store_frag(&self, row: u32, col: u32, d: [f32; 4]) {
        self.store_pair(row, col, d[0], d[1]);
        self.store_pair(row + 8, col, d[2], d[3]);
    }
}
