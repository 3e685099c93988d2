//! The kernel families, one folder each, mirroring `kernels-rs/src/<family>/`.

pub mod copy;
pub mod gemm;
pub mod hgemm;
pub mod memory;
pub mod selftest;
pub mod strided;
pub mod suite;
pub mod transpose;
