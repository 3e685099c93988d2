//! The online softmax of one thread's two query rows, on accumulators in the `mma.m16n8k16` /
//! `wgmma` D layout: value `4j + e` of a thread is row `g + 8·(e / 2)` (`g = lane / 4`), column
//! `8j + 2·(lane % 4) + e % 2`. The four lanes of a quad hold one row between them, so row
//! reductions are two butterfly shuffles.
//!
//! Everything is in the log2 domain: scores are multiplied by `scale · log2 e` inside one
//! `fma` with the running maximum subtracted (FlashAttention-3's folding), and exponentials are
//! `ex2.approx`. The running sum stays per thread until [`Softmax::finish`] (FlashAttention-2:
//! one quad reduction per tile saved).

use crate::gpu;

/// Running maximum (log2 domain, scaled) and this thread's partial sum, for rows `g`, `g + 8`.
#[derive(Clone, Copy, Debug)]
pub struct Softmax {
    /// Row maxima of `scale · log2(e) · s` so far (−inf: nothing seen).
    pub m: [f32; 2],
    /// This thread's share of `Σ 2^(s' − m)`.
    pub l: [f32; 2],
}

#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
fn quad_max(v: f32) -> f32 {
    let v = v.max(f32::from_bits(gpu::shfl_xor(v.to_bits(), 1)));
    v.max(f32::from_bits(gpu::shfl_xor(v.to_bits(), 2)))
}

#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
fn quad_sum(v: f32) -> f32 {
    let v = v + f32::from_bits(gpu::shfl_xor(v.to_bits(), 1));
    v + f32::from_bits(gpu::shfl_xor(v.to_bits(), 2))
}

impl Softmax {
    /// Nothing seen.
    pub const NEW: Softmax = Softmax {
        m: [f32::NEG_INFINITY; 2],
        l: [0.0; 2],
    };

    /// Folds one tile of raw scores `s` (`q·k`, −inf where masked; `N` = 4 × n8 tiles) into
    /// the state and replaces them by `P = 2^(scale·log2e·s − m)`. Returns the factor by which
    /// the output rows must be rescaled (`2^(m_old − m_new)`). `scale_log2 > 0`.
    /// Warp-collective (quad shuffles).
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn update<const N: usize>(&mut self, s: &mut [f32; N], scale_log2: f32) -> [f32; 2] {
        let mut mx = [f32::NEG_INFINITY; 2];
        crate::unroll!(64, i, {
            if i < N {
                mx[(i / 2) % 2] = mx[(i / 2) % 2].max(s[i]);
            }
        });
        let mut alpha = [0f32; 2];
        let mut use_m = [0f32; 2];
        crate::unroll!(2, r, {
            let m_new = self.m[r].max(quad_max(mx[r]) * scale_log2);
            // A row that has seen only masked keys keeps m = −inf; subtract 0 then, so that
            // −inf − (−inf) never makes a NaN (its P is 2^−inf = 0).
            use_m[r] = if m_new == f32::NEG_INFINITY {
                0.0
            } else {
                m_new
            };
            alpha[r] = gpu::ex2(self.m[r] - use_m[r]);
            self.m[r] = m_new;
        });
        let mut sum = [0f32; 2];
        crate::unroll!(64, i, {
            if i < N {
                let r = (i / 2) % 2;
                s[i] = gpu::ex2(gpu::fma(s[i], scale_log2, -use_m[r]));
                sum[r] += s[i];
            }
        });
        crate::unroll!(2, r, {
            self.l[r] = gpu::fma(self.l[r], alpha[r], sum[r]);
        });
        alpha
    }

    /// Rescales output accumulators `o` (same layout) by `alpha` per row.
    #[inline(always)]
    pub fn rescale<const N: usize>(o: &mut [f32; N], alpha: [f32; 2]) {
        crate::unroll!(64, i, {
            if i < N {
                o[i] *= alpha[(i / 2) % 2];
            }
        });
    }

    /// The rows' final factors `1 / l` (0 for a row that saw nothing) and log-sum-exps
    /// (natural log; −inf for a row that saw nothing). Warp-collective.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn finish(&self) -> ([f32; 2], [f32; 2]) {
        let mut inv = [0f32; 2];
        let mut lse = [f32::NEG_INFINITY; 2];
        crate::unroll!(2, r, {
            let l = quad_sum(self.l[r]);
            if l > 0.0 {
                inv[r] = gpu::rcp(l);
                lse[r] = (self.m[r] + gpu::lg2(l)) * core::f32::consts::LN_2;
            }
        });
        (inv, lse)
    }
}
