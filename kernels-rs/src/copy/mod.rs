//! Contiguous copy `dst[i] = src[i]`: the memory-bound floor every other kernel is measured
//! against. Bytes moved: `2 · n · size_of::<T>()` (each element read once, written once); on an
//! H200 `cuMemcpyDtoD` moves about 4.2 TB/s counting both.

pub mod v01_scalar;
pub mod v02_vec16;
pub mod v03_grid_stride;

/// Threads per block for every copy variant.
pub const BLOCK_THREADS: u32 = 256;
