//! The tensor-core epilogue: `out = act(α·acc + β·C + bias[col])`, converted to the output type
//! and stored in pairs (two adjacent columns of one row: the `mma`/`wgmma` fragment layout), or,
//! for 16-bit outputs whose rows are 16-byte aligned, as 16-byte chunks: the four lanes of a quad
//! exchange four pairs each ([`Epilogue::store_row_x4`]) so that every lane stores eight
//! consecutive columns. A pair store writes half a 32-byte sector per row and lane quad, so an
//! output-heavy tile costs twice the L2 sector writes (and eight requests per warp store); the
//! chunk store writes whole sectors.

use super::TcOut;
use crate::gpu::{self, Elem};

/// Stores a `wgmma` m64 accumulator's rows `row` and `row + 8` (this lane's) through
/// [`Epilogue::store_row_x4`]: `$groups` groups of 32 columns from `col0` (the lane's first
/// column, `col0 % 8 = 2q`), each the quads of four `n8` fragments. A macro so that the
/// accumulator indices stay constants (an indexed accumulator moves to local memory).
///
/// Usage: `store_acc_x4!(epi, acc, row, col0, 8)` in an `unsafe` context, with
/// [`Epilogue::chunks_aligned`] true; `$groups` is 2, 4 or 8 (`acc` holds `16 · $groups`).
#[macro_export]
macro_rules! store_acc_x4 {
    ($epi:expr, $acc:expr, $row:expr, $col0:expr, $groups:tt) => {{
        let (row, col0): (u32, u32) = ($row, $col0);
        let q = (col0 % 8) / 2;
        let base = col0 - 2 * q;
        $crate::unroll!($groups, g4, {
            $crate::unroll!(2, h, {
                let o = 16 * g4 + 2 * h;
                let d = [
                    [$acc[o], $acc[o + 1]],
                    [$acc[o + 4], $acc[o + 5]],
                    [$acc[o + 8], $acc[o + 9]],
                    [$acc[o + 12], $acc[o + 13]],
                ];
                $epi.store_row_x4(row + 8 * h as u32, base + 32 * g4 as u32, q, d);
            });
        });
    }};
}

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

    /// Whether rows can be stored in 16-byte chunks of eight columns ([`Epilogue::store_row_x4`]):
    /// 16-bit outputs, `n` and `ldc` multiples of 8, the base 16-byte aligned.
    #[inline(always)]
    pub fn chunks_aligned(&self) -> bool {
        O::Store::BYTES == 2
            && self.n.is_multiple_of(8)
            && self.ldc.is_multiple_of(8)
            && (self.c as usize).is_multiple_of(16)
    }

    /// Stores row `row` of four consecutive `n8` fragments of a lane quad as one 16-byte chunk
    /// per lane. `d[k]` is this lane's pair at columns `col8 + 8k + 2q, +1` (`q` = lane % 4, the
    /// fragment layout); after a 4 × 4 transpose across the quad (two butterfly rounds of two
    /// shuffles) lane `q` holds columns `col8 + 8q .. col8 + 8q + 8` and stores them if inside
    /// C. Warp-collective: every lane of the warp calls it together (rows past `m` included).
    ///
    /// # Safety
    /// [`Epilogue::chunks_aligned`]; `c` covers `m` rows of `ldc` elements, `bias` (if not
    /// null) `n` floats; `col8` a multiple of 8.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn store_row_x4(&self, row: u32, col8: u32, q: u32, d: [[f32; 2]; 4]) {
        let inside = row < self.m;
        let mut w = [0u32; 4];
        if self.beta == 0.0 && self.bias.is_null() {
            // Nothing to load: every value is computed, branch-free (`α·v`, a NaN-keeping max
            // against 0 or −∞ for the ReLU, one paired conversion), and only the store below
            // is masked. Measured (ncu, 2026-12-04): the per-element masked path was most of
            // the consumers' instructions on the memory-bound 1×1 convolutions.
            let floor = if self.relu != 0 {
                0.0
            } else {
                f32::NEG_INFINITY
            };
            crate::unroll!(4, k, {
                let lo = gpu::max_nan(self.alpha * d[k][0], floor);
                let hi = gpu::max_nan(self.alpha * d[k][1], floor);
                w[k] = O::pack2(lo, hi);
            });
        } else {
            crate::unroll!(4, k, {
                let col = col8 + 8 * k as u32 + 2 * q;
                if inside && col < self.n {
                    let at = self.c.add(row as usize * self.ldc as usize + col as usize);
                    let lo = self.finish(at, col, d[k][0]).to_bits64() as u32;
                    let hi = self.finish(at.add(1), col + 1, d[k][1]).to_bits64() as u32;
                    w[k] = lo | hi << 16;
                }
            });
        }
        // Round 1 (lanes q, q ^ 2): swap the off-diagonal 2 × 2 blocks.
        let upper = q & 2 != 0;
        let (s0, s1) = if upper { (w[0], w[1]) } else { (w[2], w[3]) };
        let (r0, r1) = (gpu::shfl_xor(s0, 2), gpu::shfl_xor(s1, 2));
        if upper {
            (w[0], w[1]) = (r0, r1);
        } else {
            (w[2], w[3]) = (r0, r1);
        }
        // Round 2 (lanes q, q ^ 1): transpose inside each 2 × 2 block.
        let odd = q & 1 != 0;
        let (s0, s1) = if odd { (w[0], w[2]) } else { (w[1], w[3]) };
        let (r0, r1) = (gpu::shfl_xor(s0, 1), gpu::shfl_xor(s1, 1));
        if odd {
            (w[0], w[2]) = (r0, r1);
        } else {
            (w[1], w[3]) = (r0, r1);
        }
        let col = col8 + 8 * q;
        if inside && col < self.n {
            let at = self.c.add(row as usize * self.ldc as usize + col as usize);
            gpu::st_global_v16(at as *mut gpu::Vec16, gpu::Vec16(w));
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
