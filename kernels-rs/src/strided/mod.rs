//! Strided copy `dst[i] = src[i · stride]`: the cost of uncoalesced reads.
//!
//! Useful bytes: `2 · n · size` (n elements read, n written). A warp's 32 reads at stride `s`
//! span `32 · s · size` bytes; the memory system moves whole 32-byte sectors, so for f32 the
//! sectors fetched per useful byte grow as `s` until `s = 8` (one element per sector), after
//! which every read costs its own sector and the effective bandwidth floors near 1/8 of the
//! read side. DRAM also fetches in larger bursts, so the floor is lower still in practice;
//! `bench-results/` has the measured table.

pub mod v01_gather;

/// The family.
pub const FAMILY: crate::registry::Family = crate::registry::Family {
    name: "strided",
    about: "copy that reads with a stride",
};

/// Every entry point of the family, one registry record each.
pub const RECORDS: &[&crate::registry::KernelInfo] = &[
    &v01_gather::INFO,
];

/// Threads per block.
pub const BLOCK_THREADS: u32 = 256;
/// The strides the benchmark sweeps.
pub const BENCH_STRIDES: [u32; 6] = [1, 2, 4, 8, 16, 32];
