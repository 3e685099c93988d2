//! Attention forward: `O = softmax(scale · Q Kᵀ + mask) V`, with the row log-sum-exp `L`.
//!
//! **Layout.** Q, K, V and O are `(batch, seq, heads, head_dim)` with any strides in elements
//! for batch, seq and head (multiples of 8, so rows are 16-byte aligned) and `head_dim`
//! contiguous; `head_dim` is 64 or 128 (a const generic of each kernel). K and V have
//! `heads_kv` heads, Q and O `heads_q = group · heads_kv` (grouped-query attention; `group` =
//! `heads_q` is multi-query): query head `h` reads key/value head `h / group`. `L` is f32,
//! `(batch, heads_q, seq_q)` contiguous, in natural-log units: `L = ln Σ_j exp(scale · q·k_j)`.
//!
//! **Masking.** Causal masking is aligned to the bottom-right corner, as in FlashAttention ≥
//! 2.1: query row `i` sees keys `j ≤ i + seq_kv − seq_q`. A row that sees no key (causal with
//! `seq_q > seq_kv`) gets `O = 0` and `L = −inf`, never NaN.
//!
//! **The ladder**, one file per step:
//! - [`v01_naive`]: three passes through memory (S = scale·QKᵀ in f32, a row softmax in place,
//!   O = P·V): the study baseline, `4·B·H·Nq·Nkv` bytes of S written and read twice;
//! - [`v02_mma`]: FlashAttention-2 on `mma.sync` (sm_80+): one pass, online softmax in
//!   registers, K/V through a `cp.async` ring, P reused from the S accumulators as the A
//!   operand of the second product;
//! - [`v03_wgmma`] (sm_90a): FlashAttention-3-class, TMA + `wgmma`, warp-specialized.
//!
//! On small grids the `wgmma` step splits the keys of each query block across blocks and
//! [`combine`] merges the splits (FlashAttention's split-KV).
//!
//! Shared blocks: the online softmax ([`softmax`]) works on accumulators in the
//! `mma.m16n8k16` / `wgmma` fragment layout (the two agree), so both tensor-core steps use it.

pub mod combine;
pub mod softmax;
pub mod v01_naive;
pub mod v02_mma;
pub mod v03_wgmma;

/// The family.
pub const FAMILY: crate::registry::Family = crate::registry::Family {
    name: "attention",
    about: "attention forward: softmax(scale·QKᵀ + mask)·V with the row log-sum-exp",
};

/// Every entry point of the family, one registry record each.
pub const RECORDS: &[&crate::registry::KernelInfo] = &[
    &v01_naive::INFO,
    &v01_naive::INFO_SOFTMAX,
    &v01_naive::INFO_PV,
    &v02_mma::INFO_D64,
    &v02_mma::INFO_D128,
    &v03_wgmma::INFO_D64,
    &v03_wgmma::INFO_D128,
    &combine::INFO,
];

/// `log2(e)`: scores are scaled by `scale · log2(e)` once, so the softmax uses `ex2`.
pub const LOG2_E: f32 = core::f32::consts::LOG2_E;

/// The element offset of `(batch b, row 0, head h)` of a tensor with these strides.
#[inline(always)]
pub fn head_offset(b: u32, h: u32, batch_stride: u64, head_stride: u64) -> usize {
    (b as u64 * batch_stride + h as u64 * head_stride) as usize
}

/// The causal/length mask of one `(batch, head)`: which keys a query row sees.
#[derive(Clone, Copy, Debug)]
pub struct Mask {
    /// Query rows.
    pub nq: u32,
    /// Key rows.
    pub nkv: u32,
    /// Causal, aligned bottom-right.
    pub causal: bool,
}

impl Mask {
    /// Keys `0 .. end` are seen by some row of `0 .. rows_end` (exclusive bound, ≤ `nkv`).
    #[inline(always)]
    pub fn kv_end(&self, rows_end: u32) -> u32 {
        if !self.causal {
            return self.nkv;
        }
        let e = rows_end as i64 + self.nkv as i64 - self.nq as i64;
        if e <= 0 {
            0
        } else if e >= self.nkv as i64 {
            self.nkv
        } else {
            e as u32
        }
    }

    /// Whether row `row` sees key `col`.
    #[inline(always)]
    pub fn sees(&self, row: u32, col: u32) -> bool {
        col < self.nkv && (!self.causal || col as i64 <= row as i64 + self.nkv as i64 - self.nq as i64)
    }

    /// Whether some key in `col0 .. col0 + cols` is hidden from some row in `row0 .. row0 +
    /// rows`: the tiles that need the element-wise mask.
    #[inline(always)]
    pub fn partial(&self, row0: u32, col0: u32, cols: u32) -> bool {
        col0 + cols > self.nkv
            || (self.causal
                && (col0 + cols - 1) as i64 > row0 as i64 + self.nkv as i64 - self.nq as i64)
    }
}
