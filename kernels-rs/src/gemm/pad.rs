//! Helper for the SGEMM dispatcher: copies a `rows × cols` matrix into one with row pitch
//! `ld_dst ≥ cols`, zero-filling the extra columns, so that the 16-byte-load variants can run
//! on any shape. Memory-bound: one read and one write of the matrix.

use crate::gpu::{self, Elem};

/// Threads per block (x).
pub const BLOCK_X: u32 = 256;
/// Rows per block step (y); the grid walks further rows with a stride.
pub const MAX_GRID_Y: u32 = 65535;

#[inline(always)]
unsafe fn gemm_pad(src: *const f32, dst: *mut f32, rows: u32, cols: u32, ld_src: u32, ld_dst: u32) {
    let c = gpu::block_idx_x() * gpu::block_dim_x() + gpu::thread_idx_x();
    if c >= ld_dst {
        return;
    }
    let mut r = gpu::block_idx_y();
    while r < rows {
        let v = if c < cols {
            f32::ld_global_nc(src.add(r as usize * ld_src as usize + c as usize))
        } else {
            0.0
        };
        f32::st_global(dst.add(r as usize * ld_dst as usize + c as usize), v);
        r += gpu::grid_dim_y();
    }
}
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
