//! Attention forward, `O = softmax(scale · Q Kᵀ + mask) V`, with the row log-sum-exp (f32,
//! natural log, `(batch, heads_q, seq_q)` contiguous).
//!
//! Q, K, V and O are `(batch, seq, heads, head_dim)` with any element strides for batch, seq
//! and head ([`Strides`], [`Layout`]) and `head_dim` contiguous; K and V have `heads_kv` heads,
//! query head `h` reads key/value head `h / (heads_q / heads_kv)` (grouped-query and
//! multi-query attention). The causal mask is aligned to the bottom-right corner; a row that
//! sees no key gets `O = 0` and `LSE = −inf`. f16 and bf16 in and out (as bits on the device).
//!
//! The kernels (`kernels-rs/src/attention/`), as [`Variant`]s read from the registry:
//! - `naive`: three passes (scores, row softmax, P·V) through an f32 scratch of
//!   `4·B·H·Nq·Nkv` bytes that the host allocates (up to [`SCRATCH_CAP_BYTES`]); any
//!   alignment; runs only when asked for;
//! - `mma` (`mma_d64`, `mma_d128`): FlashAttention-2 on `mma.sync` (sm_80+): Q, K, V 16-byte
//!   aligned with strides that are multiples of 8 elements, O 4-byte aligned with even
//!   strides.
//!
//! [`Variant::select`] picks the last ladder step that can run the problem on the device with
//! those buffers. Layers: [`Problem::check`] (shape and strides) and
//! [`Problem::check_operands`] (buffers) are pure; [`plans`] turns a checked problem into
//! [`LaunchPlan`](crate::launch::LaunchPlan)s for the GPU or the simulator; [`prepare()`]
//! binds a problem to a GPU kernel for repeated [`Prepared::launch`]es; [`crate::api::attention`]
//! is the front door.
//!
//! Its command line, `rustile attention validate | bench | dump` ([`cli`], attached through
//! [`crate::families::Family::command`]): the validation cases, the benchmark ([`bench`](mod@bench),
//! [`report`]: TFLOP/s on the PyTorch baselines' shapes), and `.npy` dumps ([`dump`],
//! [`npy`]) for the PyTorch cross-check `scripts/sdpa_check.py`.

pub mod bench;
pub mod cases;
pub mod cli;
pub mod dump;
pub mod fuzz;
pub mod launch;
pub mod operands;
pub mod prepare;
pub mod problem;
pub mod reference;
pub mod report;
pub mod sweep;
pub mod validate;
pub mod variant;

/// The `.npy` writer and reader, shared with the conv family's dumps ([`crate::npy`]).
pub use crate::npy;
pub use cases::*;
pub use launch::*;
pub use operands::*;
pub use prepare::*;
pub use problem::*;
pub use reference::*;
pub use validate::*;
pub use variant::*;

#[cfg(test)]
mod bench_tests;
#[cfg(test)]
mod cli_tests;

/// The attention family, for validation ([`crate::families::all`]).
pub const FAMILY: &dyn crate::families::Family = &Attention;
