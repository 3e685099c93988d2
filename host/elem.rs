//! Host element types and their device dtypes: [`DeviceElem`] gives each [`DType`] its Rust
//! type (`f32`, `half::f16`, `half::bf16`), and [`dispatch_dtype!`](crate::dispatch_dtype) is
//! the one `match` from a run-time `DType` to that type.

use cudarc::driver::{DeviceRepr, ValidAsZeroBits};
use rand::Rng;
use rustile_kernels::registry::DType;

use crate::error::{Error, Result};

#[doc(hidden)]
pub use half as __half;

/// Runs `$body` with the type alias `$T` bound to the Rust type of `$dtype` (a [`DType`]):
/// `f32`, `half::f16` or `half::bf16`. The one place a run-time dtype becomes a type.
///
/// ```
/// use rustile::{dispatch_dtype, elem::DeviceElem, DType};
/// let bytes = dispatch_dtype!(DType::Bf16, T => std::mem::size_of::<T>());
/// assert_eq!(bytes, 2);
/// assert_eq!(dispatch_dtype!(DType::F32, T => T::DTYPE), DType::F32);
/// ```
#[macro_export]
macro_rules! dispatch_dtype {
    ($dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            $crate::DType::F32 => {
                #[allow(dead_code)]
                type $T = f32;
                $body
            }
            $crate::DType::F16 => {
                #[allow(dead_code)]
                type $T = $crate::elem::__half::f16;
                $body
            }
            $crate::DType::Bf16 => {
                #[allow(dead_code)]
                type $T = $crate::elem::__half::bf16;
                $body
            }
        }
    };
}

/// An element type the kernels are instantiated for.
pub trait DeviceElem:
    DeviceRepr + ValidAsZeroBits + bytemuck::Pod + Copy + Default + PartialEq + Send + Sync + 'static
{
    /// The kernels' dtype.
    const DTYPE: DType;
    /// A value no kernel produces from finite inputs: written to outputs before a run so an
    /// unwritten element is caught.
    const POISON: Self;
    /// Unit roundoff (half an ulp at 1).
    const UNIT_ROUNDOFF: f64;
    /// The smallest positive subnormal (the absolute rounding floor).
    const TINY: f64;
    /// Bit pattern, for exact comparisons (NaN-safe).
    fn bits(self) -> u32;
    /// From a bit pattern (the low bits of `bits`).
    fn from_bits(bits: u32) -> Self;
    /// Rounded from f32 (round to nearest even).
    fn from_f32(v: f32) -> Self;
    /// Widened to f32 (exact).
    fn to_f32(self) -> f32;
    /// As f64, for reports.
    fn to_f64(self) -> f64;
    /// A uniformly random finite value in [-1, 1).
    fn random(rng: &mut impl Rng) -> Self {
        Self::from_f32(rng.random_range(-1.0f32..1.0))
    }
}

impl DeviceElem for f32 {
    const DTYPE: DType = DType::F32;
    const POISON: Self = f32::NAN;
    const UNIT_ROUNDOFF: f64 = pow2(-24);
    const TINY: f64 = pow2(-149);
    fn bits(self) -> u32 {
        self.to_bits()
    }
    fn from_bits(bits: u32) -> Self {
        f32::from_bits(bits)
    }
    fn from_f32(v: f32) -> Self {
        v
    }
    fn to_f32(self) -> f32 {
        self
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
}

macro_rules! half_elem {
    ($t:ty, $dtype:expr, $u:expr, $tiny:expr) => {
        impl DeviceElem for $t {
            const DTYPE: DType = $dtype;
            const POISON: Self = <$t>::NAN;
            const UNIT_ROUNDOFF: f64 = $u;
            const TINY: f64 = $tiny;
            fn bits(self) -> u32 {
                self.to_bits() as u32
            }
            fn from_bits(bits: u32) -> Self {
                <$t>::from_bits(bits as u16)
            }
            fn from_f32(v: f32) -> Self {
                <$t>::from_f32(v)
            }
            fn to_f32(self) -> f32 {
                <$t>::to_f32(self)
            }
            fn to_f64(self) -> f64 {
                <$t>::to_f64(self)
            }
        }
    };
}

half_elem!(half::f16, DType::F16, pow2(-11), pow2(-24));
half_elem!(half::bf16, DType::Bf16, pow2(-8), pow2(-133));

/// `2^e`, exactly, for a normal f64 exponent.
const fn pow2(e: i32) -> f64 {
    f64::from_bits(((1023 + e) as u64) << 52)
}

/// `n` fresh random values.
pub fn random_vec<T: DeviceElem>(n: usize, rng: &mut impl Rng) -> Vec<T> {
    (0..n).map(|_| T::random(rng)).collect()
}

/// `v` rounded to `dtype`, as bits (the low 16 for the 16-bit types).
pub fn round_bits(dtype: DType, v: f32) -> u32 {
    dispatch_dtype!(dtype, T => T::from_f32(v).bits())
}

/// Bits of `dtype` widened to f32.
pub fn widen_bits(dtype: DType, bits: u32) -> f32 {
    dispatch_dtype!(dtype, T => <T as DeviceElem>::from_bits(bits).to_f32())
}

/// [`DeviceElem::UNIT_ROUNDOFF`] of `dtype`.
pub fn unit_roundoff(dtype: DType) -> f64 {
    dispatch_dtype!(dtype, T => T::UNIT_ROUNDOFF)
}

/// [`DeviceElem::TINY`] of `dtype`.
pub fn tiny(dtype: DType) -> f64 {
    dispatch_dtype!(dtype, T => T::TINY)
}

/// `Ok` for the 16-bit floating types (tensor-core inputs), else [`Error::Unsupported`].
pub fn half_input(dtype: DType, kernel: &str) -> Result<()> {
    match dtype {
        DType::F16 | DType::Bf16 => Ok(()),
        DType::F32 => Err(Error::Unsupported {
            kernel: kernel.to_owned(),
            what: "inputs must be f16 or bf16".into(),
        }),
    }
}

/// Parses a dtype name (`f32`, `f16`, `bf16`).
pub fn parse_dtype(name: &str) -> Result<DType> {
    [DType::F32, DType::F16, DType::Bf16]
        .into_iter()
        .find(|d| d.name() == name.trim())
        .ok_or_else(|| Error::Usage(format!("unknown dtype `{name}` (f32, f16, bf16)")))
}

/// Serializes a [`DType`] as its name (for `#[serde(serialize_with)]`: the registry's type
/// has no serde).
pub fn serialize_dtype<S: serde::Serializer>(
    dtype: &DType,
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(dtype.name())
}
