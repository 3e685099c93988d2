//! Coalesced SGEMM: the naive kernel with `threadIdx.x` along a *row* of C.
//!
//! Now a warp's 32 lanes read the same element of A (one broadcast sector) and 32 consecutive
//! elements of B (4 sectors), and write 128 contiguous bytes of C. Same arithmetic, same
//! re-reads from L2, but every access is coalesced. Bound: L2 bandwidth (each FMA still loads
//! 8 bytes).

use super::{at, epilogue};
use crate::gpu::{self, Elem};
use crate::registry::{Family, KernelInfo, Launch};

/// C tile per block, `(rows, cols)`.
pub const TILE: (u32, u32) = (32, 32);

/// Registry entry.
pub const INFO: KernelInfo = KernelInfo {
    family: Family::Gemm,
    name: "coalesced",
    block: (32, 32, 1),
    launch: Launch::Tiles {
        tile: TILE,
        halo_rows: 0,
    },
    shared_bytes_f32: 0,
    shared_bytes_f16: 0,
    symbols: SYMBOLS,
    about: "one thread per C element, threadIdx.x along N (coalesced)",
    ..KernelInfo::BASE
};

#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn sgemm_coalesced(
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
    let row = gpu::block_idx_y() * TILE.0 + gpu::thread_idx_y();
    let col = gpu::block_idx_x() * TILE.1 + gpu::thread_idx_x();
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
    fn sgemm_coalesced(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, lda: u32, ldb: u32, ldc: u32, alpha: f32, beta: f32);
    sgemm_coalesced_f32 => (F32, F32, Any) [];
}
