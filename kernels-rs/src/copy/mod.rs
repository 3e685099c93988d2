//! Contiguous copy `dst[i] = src[i]`: the memory-bound floor every other kernel is measured
//! against. Bytes moved: `2 · n · size_of::<T>()` (each element read once, written once); on an
//! H200 `cuMemcpyDtoD` moves about 4.2 TB/s counting both.

pub mod v01_scalar;
pub mod v02_vec16;
pub mod v03_grid_stride;
pub mod v04_vec16_any;

/// The family.
pub const FAMILY: crate::registry::Family = crate::registry::Family {
    name: "copy",
    about: "contiguous copy dst[i] = src[i]",
};

/// Every entry point of the family, one registry record each.
pub const RECORDS: &[&crate::registry::KernelInfo] = &[
    &v01_scalar::INFO,
    &v02_vec16::INFO,
    &v03_grid_stride::INFO,
    &v04_vec16_any::INFO,
];

/// Threads per block for every copy variant.
pub const BLOCK_THREADS: u32 = 256;
