//! Helper for the SGEMM dispatcher: copies a `rows × cols` matrix into one with row pitch
//! `ld_dst ≥ cols`, zero-filling the extra columns, so that the 16-byte-load variants can run
//! on any shape. Memory-bound: one read and one write of the matrix. Each thread moves [`VEC`]
//! consecutive columns of a row: four independent loads (the source's rows have any pitch, so
//! they are scalar) and one 16-byte store where the destination's rows allow it. (One column
//! per thread took 12.3 µs for 1531 × 1531, 0.76 TB/s: session 16, `run5`.)

use crate::gpu::{self, Elem};

/// Threads per block (x).
pub const BLOCK_X: u32 = 256;
/// Consecutive columns per thread: a block covers `BLOCK_X · VEC` columns of a row.
pub const VEC: u32 = 4;
/// Rows per block step (y); the grid walks further rows with a stride.
pub const MAX_GRID_Y: u32 = 65535;

#[inline(always)]
unsafe fn gemm_pad(src: *const f32, dst: *mut f32, rows: u32, cols: u32, ld_src: u32, ld_dst: u32) {
    let c = (gpu::block_idx_x() * gpu::block_dim_x() + gpu::thread_idx_x()) * VEC;
    if c >= ld_dst {
        return;
    }
    // `c` is a multiple of 4: one 16-byte store if the rows are 16-byte aligned and all four
    // columns lie inside the pitch.
    let vec = super::rows_aligned16(dst, ld_dst) && c + VEC <= ld_dst;
    let mut r = gpu::block_idx_y();
    while r < rows {
        let mut v = [0.0f32; VEC as usize];
        crate::unroll!(4, e, {
            let ce = c + e as u32;
            if ce < cols {
                v[e] = f32::ld_global_nc(src.add(r as usize * ld_src as usize + ce as usize));
            }
        });
        let d = dst.add(r as usize * ld_dst as usize + c as usize);
        if vec {
            gpu::st_global_v16(d as *mut gpu::Vec16, gpu::Vec16(v.map(f32::to_bits)));
        } else {
            crate::unroll!(4, e, {
                if c + (e as u32) < ld_dst {
                    f32::st_global(d.add(e), v[e]);
                }
            });
        }
        r += gpu::grid_dim_y();
    }
}
const _: () = assert!(VEC == 4, "the copy unrolls its columns by 4");
crate::entry_points! {
    pub const SYMBOLS;
    fn gemm_pad(src: *const f32, dst: *mut f32, rows: u32, cols: u32, ld_src: u32, ld_dst: u32);
    gemm_pad_f32 => (F32, F32, Any) [];
}

/// Registry record (a helper of the SGEMM dispatcher).
pub const INFO: crate::registry::KernelInfo = crate::registry::KernelInfo {
    family: crate::registry::Family::Gemm,
    name: "pad",
    role: crate::registry::Role::Helper,
    block: (BLOCK_X, 1, 1),
    symbols: SYMBOLS,
    about: "copies a matrix into a wider row pitch, zero-filling the extra columns",
    ..crate::registry::KernelInfo::BASE
};

/// The pitched transpose: `Aᵀ` for the NT kernels from an A of any pitch.
///
/// Writes `dst[c][r] = src[r][c]` for a `rows × cols` source of row pitch `ld_src` into a
/// destination of `cols` rows of pitch `ld_dst ≥ rows`, zero in columns `rows..ld_dst` — so
/// `ld_dst` can be the multiple of 4 the NT pipeline's 16-byte copies need whatever M is (the
/// dense transpose family writes pitch `rows` only). A 32 × 32 tile through a 32 × 33 shared
/// array (conflict-free both ways), block 32 × 8, four elements per thread per phase; grid
/// `(⌈cols/32⌉, ⌈ld_dst/32⌉)`.
pub mod transpose {
    use crate::gpu::{self, Elem};

    /// Tile side.
    pub const TILE: u32 = 32;
    /// Block shape.
    pub const BLOCK: (u32, u32, u32) = (TILE, 8, 1);
    /// Shared bytes: a 32 × 33 f32 tile.
    pub const SHARED_BYTES: usize = (TILE * (TILE + 1) * 4) as usize;

    #[inline(always)]
    unsafe fn gemm_transpose_pad(
        src: *const f32,
        dst: *mut f32,
        rows: u32,
        cols: u32,
        ld_src: u32,
        ld_dst: u32,
    ) {
        let (tx, ty) = (gpu::thread_idx_x(), gpu::thread_idx_y());
        let (c0, r0) = (gpu::block_idx_x() * TILE, gpu::block_idx_y() * TILE);
        let base = gpu::dynamic_shared_base();
        let addr = |r: u32, c: u32| base + (r * (TILE + 1) + c) * 4;
        // Phase 1: rows r0.. of the source (zero past `rows`), coalesced along its rows.
        let mut v = [0.0f32; 4];
        let mut e = 0;
        while e < 4 {
            let (r, c) = (r0 + ty + 8 * e as u32, c0 + tx);
            if r < rows && c < cols {
                v[e] = f32::ld_global_nc(src.add(r as usize * ld_src as usize + c as usize));
            }
            e += 1;
        }
        let mut e = 0;
        while e < 4 {
            f32::st_shared(addr(ty + 8 * e as u32, tx), v[e]);
            e += 1;
        }
        gpu::sync_threads();
        // Phase 2: destination row = source column, coalesced along the destination's rows.
        let mut e = 0;
        while e < 4 {
            let (dr, dc) = (c0 + ty + 8 * e as u32, r0 + tx);
            if dr < cols && dc < ld_dst {
                let x = f32::ld_shared(addr(tx, ty + 8 * e as u32));
                f32::st_global(dst.add(dr as usize * ld_dst as usize + dc as usize), x);
            }
            e += 1;
        }
    }
    crate::entry_points! {
        pub const SYMBOLS;
        fn gemm_transpose_pad(src: *const f32, dst: *mut f32, rows: u32, cols: u32, ld_src: u32, ld_dst: u32);
        gemm_transpose_pad_f32 => (F32, F32, Any) [];
    }

    /// Registry record (a helper of the SGEMM dispatcher).
    pub const INFO: crate::registry::KernelInfo = crate::registry::KernelInfo {
        family: crate::registry::Family::Gemm,
        name: "transpose_pad",
        role: crate::registry::Role::Helper,
        block: BLOCK,
        shared_bytes_f32: SHARED_BYTES,
        symbols: SYMBOLS,
        about: "writes Aᵀ at a row pitch of the caller's choice (zero past M), from A of any pitch",
        ..crate::registry::KernelInfo::BASE
    };
}
