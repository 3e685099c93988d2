//! What the examples share: a small deterministic generator, so they need no other crate.
//! (`examples/common/mod.rs` has no `main.rs`, so cargo does not build it as an example.)

/// A 64-bit linear congruential generator (Knuth's MMIX constants).
pub struct Lcg(pub u64);

impl Lcg {
    /// Uniform in [-1, 1), 24 bits.
    pub fn uniform(&mut self) -> f32 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }
}
