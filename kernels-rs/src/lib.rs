//! rustile's device kernels, written in Rust and compiled to PTX by rustc's `nvptx64-nvidia-cuda`
//! backend.
//!
//! The crate builds for two targets:
//! - **nvptx64**: every `extern "ptx-kernel"` item, the [`gpu`] primitive layer and all inline PTX
//!   exist only here (`cfg(target_arch = "nvptx64")`);
//! - **the host**: the constants and launch descriptions (tile sizes, block shapes, shared
//!   bytes, kernel symbols), so the host launches each kernel with the very numbers it was
//!   compiled with, and the same kernel bodies, whose `gpu::` primitives then call rustile's
//!   simulator ([`gpu::host`]).
//!
//! Shared blocks: [`gpu`] holds the device primitives and the blocks built on them (shared tiles
//! with layouts, `cp.async`/TMA rings, the tile scheduler); [`tc`] the tensor-core blocks
//! (input/output types, the epilogue, the warp-specialized driver).
//!
//! A family is a folder and a variant is a file: `copy/v02_vec16.rs` is one kernel, its constants
//! and a doc comment with its technique and the bound it should approach.
#![no_std]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(abi_ptx, stdarch_nvptx, asm_experimental_arch)
)]

pub mod gpu;
pub mod registry;
pub mod tc;

/// Declares the family modules and [`FAMILIES`]: a new family is its folder plus one name here.
macro_rules! families {
    ($($family:ident),+ $(,)?) => {
        $(pub mod $family;)+
        /// Every family and its registry records, in report order.
        pub const FAMILIES: &[(registry::Family, &[&registry::KernelInfo])] =
            &[$(($family::FAMILY, $family::RECORDS)),+];
    };
}

families!(copy, strided, transpose, gemm, hgemm, attention, conv, selftest);

pub use registry::{DType, Entry, Family, KernelInfo, KERNELS};

#[cfg(target_arch = "nvptx64")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // Built with `-Cpanic=immediate-abort`, so this is reached only if a panic path survives
    // optimisation; `trap` aborts the kernel with a launch error the host reports.
    gpu::trap()
}
