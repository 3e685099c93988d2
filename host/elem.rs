//! Host element types and their device dtypes.

use cudarc::driver::{DeviceRepr, ValidAsZeroBits};
use rand::Rng;
use rustile_kernels::registry::DType;

/// An element type the kernels are instantiated for.
pub trait DeviceElem:
    DeviceRepr + ValidAsZeroBits + Copy + Default + PartialEq + Send + Sync + 'static
{
    /// The kernels' dtype.
    const DTYPE: DType;
    /// A value no kernel produces from finite inputs: written to outputs before a run so an
    /// unwritten element is caught.
    const POISON: Self;
    /// Bit pattern, for exact comparisons (NaN-safe).
    fn bits(self) -> u32;
    /// As f64, for reports.
    fn to_f64(self) -> f64;
    /// A uniformly random finite value in [-1, 1).
    fn random(rng: &mut impl Rng) -> Self;
}

impl DeviceElem for f32 {
    const DTYPE: DType = DType::F32;
    const POISON: Self = f32::NAN;
    fn bits(self) -> u32 {
        self.to_bits()
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn random(rng: &mut impl Rng) -> Self {
        rng.random_range(-1.0f32..1.0)
    }
}

impl DeviceElem for half::f16 {
    const DTYPE: DType = DType::F16;
    const POISON: Self = half::f16::NAN;
    fn bits(self) -> u32 {
        self.to_bits() as u32
    }
    fn to_f64(self) -> f64 {
        self.to_f64()
    }
    fn random(rng: &mut impl Rng) -> Self {
        half::f16::from_f32(rng.random_range(-1.0f32..1.0))
    }
}

/// `n` fresh random values.
pub fn random_vec<T: DeviceElem>(n: usize, rng: &mut impl Rng) -> Vec<T> {
    (0..n).map(|_| T::random(rng)).collect()
}
