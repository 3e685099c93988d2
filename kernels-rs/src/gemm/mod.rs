//! f32 matrix product `C = α·A·B + β·C`, row-major, any `M, N, K` and leading dimensions: the
//! SGEMM ladder, one idea per file.
//!
//! Floors on an H200: `2·M·N·K` flops at ~67 TFLOP/s (datasheet FP32; cuBLAS reaches 51 with
//! TF32 off), and `4·(M·K + K·N + 2·M·N)` bytes at ~4.2 TB/s. At 4096³ that is 2.0 ms of
//! arithmetic against 0.06 ms of traffic: compute-bound by 30×, so the ladder is about feeding
//! the FMA units — coalescing, reuse through shared memory and registers, wide loads, no bank
//! conflicts, then latency hiding.
//!
//! Every kernel has the signature `(a, b, c, m, n, k, lda, ldb, ldc, alpha, beta)` and a grid of
//! `⌈N/BN⌉ × ⌈M/BM⌉` blocks, one `BM × BN` tile of C each. Out-of-range rows, columns and `k` are
//! masked (loads read 0). With `β = 0`, C is not read (BLAS semantics: NaN in C does not leak).
//! `v11_nt_pipeline` is the exception: it reads a pre-transposed A (the host dispatcher writes
//! it) so that both operands can be copied with `cp.async`.
//! Variants from `v06` on load A and B in 16-byte vectors and need `lda`, `ldb` multiples of 4
//! and 16-byte-aligned A and B (the launcher checks; the dispatcher pads otherwise).

pub mod pad;
pub mod v01_naive;
pub mod v02_coalesced;
pub mod v03_smem;
pub mod v04_blocktile_1d;
pub mod v05_blocktile_2d;
pub mod v06_vectorized;
pub mod v07_conflict_free;
pub mod v08_warptile;
pub mod v09_double_buffer;
pub mod v10_tile_128x64;
pub mod v11_nt_pipeline;
pub mod v12_kgroup_ring;
pub mod v13_gemv_rows;
pub mod v14_small_m;
pub mod v15_outer;
pub mod v16_small_tile;
pub mod v17_nt_stream_k;
pub mod v18_rows_any;

/// The family.
pub const FAMILY: crate::registry::Family = crate::registry::Family {
    name: "gemm",
    about: "f32 matrix product C = α·A·B + β·C",
};

/// Every entry point of the family, one registry record each.
pub const RECORDS: &[&crate::registry::KernelInfo] = &[
    &v01_naive::INFO,
    &v02_coalesced::INFO,
    &v03_smem::INFO,
    &v04_blocktile_1d::INFO,
    &v05_blocktile_2d::INFO,
    &v06_vectorized::INFO,
    &v07_conflict_free::INFO,
    &v08_warptile::INFO,
    &v09_double_buffer::INFO,
    &v10_tile_128x64::INFO,
    &v12_kgroup_ring::INFO,
    &v13_gemv_rows::INFO,
    &v14_small_m::INFO,
    &v15_outer::INFO,
    &v16_small_tile::INFO,
    &v18_rows_any::INFO,
    &pad::INFO,
    &pad::transpose::INFO,
    &v17_nt_stream_k::INFO,
    &v17_nt_stream_k::fixup::INFO,
    &v08_warptile::split_k::INFO,
    &v08_warptile::split_k::reduce::INFO,
    &v11_nt_pipeline::INFO,
    &v11_nt_pipeline::split_k::INFO,
    &v08_warptile::experiments::INFO_DB16_ASYNC,
    &v12_kgroup_ring::experiments::INFO_KG1,
    &v12_kgroup_ring::experiments::INFO_KG4,
    &v18_rows_any::experiments::INFO_KG1,
];

use crate::gpu::{self, Elem};

/// `p[r][c]` with row pitch `ld`.
#[inline(always)]
pub(crate) unsafe fn at(p: *const f32, ld: u32, r: u32, c: u32) -> *const f32 {
    p.add(r as usize * ld as usize + c as usize)
}

/// `p[r][c]`, or 0 outside `rows × cols`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub(crate) unsafe fn ld_or_zero(
    p: *const f32,
    ld: u32,
    rows: u32,
    cols: u32,
    r: u32,
    c: u32,
) -> f32 {
    if r < rows && c < cols {
        f32::ld_global_nc(at(p, ld, r, c))
    } else {
        0.0
    }
}

/// `p[r][c..c + 4]` (`c` a multiple of 4), 0 outside `rows × cols`: one 16-byte load when all
/// four are in range (needs `ld % 4 == 0` and a 16-byte-aligned `p`), else element by element.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub(crate) unsafe fn ld4_or_zero(
    p: *const f32,
    ld: u32,
    rows: u32,
    cols: u32,
    r: u32,
    c: u32,
) -> [f32; 4] {
    if r < rows && c + 3 < cols {
        gpu::ld_global_nc_f32x4(at(p, ld, r, c))
    } else {
        [
            ld_or_zero(p, ld, rows, cols, r, c),
            ld_or_zero(p, ld, rows, cols, r, c + 1),
            ld_or_zero(p, ld, rows, cols, r, c + 2),
            ld_or_zero(p, ld, rows, cols, r, c + 3),
        ]
    }
}

/// `C[r][col] = α·acc + β·C[r][col]` inside `m × n`; C is not read when `β = 0`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub(crate) unsafe fn epilogue(
    c: *mut f32,
    ldc: u32,
    m: u32,
    n: u32,
    r: u32,
    col: u32,
    acc: f32,
    alpha: f32,
    beta: f32,
) {
    if r < m && col < n {
        let p = c.add(r as usize * ldc as usize + col as usize);
        let v = if beta == 0.0 {
            alpha * acc
        } else {
            gpu::fma(beta, f32::ld_global_nc(p), alpha * acc)
        };
        f32::st_global(p, v);
    }
}

/// Shared-window address of element `i` of an f32 array starting at `base`.
#[inline(always)]
pub(crate) fn f32_addr(base: u32, i: u32) -> u32 {
    base + 4 * i
}

/// `p[r][c..c + 4]`, 0 outside `rows × cols`: [`ld4_or_zero`]'s 16-byte load when `vec` (the
/// caller proved `ld % 4 == 0`, a 16-byte-aligned `p` and `c % 4 == 0`), else four scalar loads,
/// each masked. The skinny kernels pick `vec` at run time, so they take any pitch.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub(crate) unsafe fn ld4_any(
    p: *const f32,
    ld: u32,
    rows: u32,
    cols: u32,
    r: u32,
    c: u32,
    vec: bool,
) -> [f32; 4] {
    if vec {
        ld4_or_zero(p, ld, rows, cols, r, c)
    } else {
        [
            ld_or_zero(p, ld, rows, cols, r, c),
            ld_or_zero(p, ld, rows, cols, r, c + 1),
            ld_or_zero(p, ld, rows, cols, r, c + 2),
            ld_or_zero(p, ld, rows, cols, r, c + 3),
        ]
    }
}

/// Whether a matrix at `p` with row pitch `ld` takes 16-byte accesses at column multiples of 4.
#[inline(always)]
pub(crate) fn rows_aligned16(p: *const f32, ld: u32) -> bool {
    ld.is_multiple_of(4) && (p as usize).is_multiple_of(16)
}

/// `C[r][col..col + 4] = α·acc + β·C[r][col..col + 4]` inside `m × n`: one 16-byte store (and
/// load, for β ≠ 0) when `vec` (C's rows 16-byte aligned, `col % 4 == 0`) and all four columns
/// are in range, else [`epilogue`] per element. C is not read when `β = 0`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub(crate) unsafe fn epilogue4(
    c: *mut f32,
    ldc: u32,
    m: u32,
    n: u32,
    r: u32,
    col: u32,
    acc: [f32; 4],
    alpha: f32,
    beta: f32,
    vec: bool,
) {
    if vec && r < m && col + 3 < n {
        let p = c.add(r as usize * ldc as usize + col as usize);
        let mut v = [alpha * acc[0], alpha * acc[1], alpha * acc[2], alpha * acc[3]];
        if beta != 0.0 {
            let old = gpu::ld_global_nc_f32x4(p);
            crate::unroll!(4, j, {
                v[j] = gpu::fma(beta, old[j], v[j]);
            });
        }
        gpu::st_global_v16(p as *mut gpu::Vec16, gpu::Vec16(v.map(f32::to_bits)));
    } else {
        crate::unroll!(4, j, {
            epilogue(c, ldc, m, n, r, col + j as u32, acc[j], alpha, beta);
        });
    }
}
