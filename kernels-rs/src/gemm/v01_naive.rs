//! Naive SGEMM: one thread per element of C, `threadIdx.x` walking down a column of C.
//!
//! Consecutive threads of a warp own consecutive *rows*: each reads its own row of A (32
//! different rows: 32 sectors per warp load) and writes C down a column (one sector per lane).
//! Every operand is re-read from L2/DRAM `N` (A) or `M` (B) times. Bound: memory, far under the
//! FP32 peak — the lesson is how much the next step gains by swapping two indices.

use super::{at, epilogue};
use crate::gpu::{self, Elem};
use crate::registry::{Family, KernelInfo, Launch};

/// C tile per block, `(rows, cols)`.
pub const TILE: (u32, u32) = (32, 32);

/// Registry entry.
pub const INFO: KernelInfo = KernelInfo {
    family: Family::Gemm,
    name: "naive",
    block: (32, 32, 1),
    launch: Launch::Tiles {
        tile: TILE,
        halo_rows: 0,
    },
    shared_bytes_f32: 0,
    shared_bytes_f16: 0,
    symbols: SYMBOLS,
    about: "one thread per C element, threadIdx.x along M (uncoalesced)",
    ..KernelInfo::BASE
};

#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn sgemm_naive(
    a: *const f32,
    b: *const f32,
    c: *mut f32,
    m: u32,
    n: u32,
    k: u32,
    lda: u32,
    ldb: u32,
    ldc: u32,
    alpha: f32,
    beta: f32,
) {
    let row = gpu::block_idx_y() * TILE.0 + gpu::thread_idx_x();
    let col = gpu::block_idx_x() * TILE.1 + gpu::thread_idx_y();
    if row < m && col < n {
        let mut acc = 0.0f32;
        let mut i = 0;
        while i < k {
            acc = gpu::fma(
                f32::ld_global_nc(at(a, lda, row, i)),
                f32::ld_global_nc(at(b, ldb, i, col)),
                acc,
            );
            i += 1;
        }
        epilogue(c, ldc, m, n, row, col, acc, alpha, beta);
    }
}
crate::entry_points! {
    pub const SYMBOLS;
    fn sgemm_naive(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, lda: u32, ldb: u32, ldc: u32, alpha: f32, beta: f32);
    sgemm_naive_f32 => (F32, F32, Any) [];
}
