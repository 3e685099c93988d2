//! The baseline's self-check: cuDNN on fresh random inputs against the float64 reference of
//! [`super::super::reference`], with the same per-dtype bound rustile's kernels meet, for both
//! ops. It shows that the baseline computes rustile's op (stride, padding and dilation pairs,
//! layout, bias, ReLU), so a benchmark compares like with like.

use rustile_kernels::registry::DType;

use crate::elem::{round_bits, widen_bits};
use crate::error::{Error, Result};
use crate::gpu::Gpu;

use super::super::{compare, elements_to_check, Inputs, Problem};
use super::algo::{self, Op};
use super::{CudnnConv, DevBuf, NAME};

/// One op's comparison.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct OpCheck {
    /// `fused` / `conv_only`.
    pub op: &'static str,
    /// The algorithm that ran.
    pub algo: &'static str,
    /// Elements compared with float64.
    pub compared: usize,
    /// The worst `|error| / bound` (≤ 1).
    pub worst: f64,
}

/// Both ops' comparisons.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct SelfCheck {
    /// The problem (the conv-only op is its convolution without bias or activation).
    pub problem: Problem,
    /// `9.14.0`.
    pub cudnn: String,
    /// The fused op.
    pub fused: OpCheck,
    /// The convolution alone.
    pub conv_only: OpCheck,
}

/// Sets cuDNN up for `p` ([`CudnnConv::new`]) and checks both ops against float64
/// ([`CudnnConv::check`]).
pub fn check_against_reference(gpu: &Gpu, p: &Problem, seed: u64) -> Result<SelfCheck> {
    CudnnConv::new(gpu, p)?.check(gpu, seed)
}

impl CudnnConv {
    /// Runs both ops with the chosen algorithms on fresh inputs from `seed` into outputs
    /// poisoned with NaN, and compares each with the float64 reference within the per-dtype
    /// bound: the fused op against `p`, with the bias rounded to [`CudnnConv::bias_dtype`]
    /// as cuDNN reads it; the conv-only op against `p` without bias and ReLU.
    /// [`Error::Mismatch`] names the op and algorithm.
    pub fn check(&self, gpu: &Gpu, seed: u64) -> Result<SelfCheck> {
        let p = self.problem;
        let mut x = Inputs::random(&p, seed)?;
        let bd = self.bias_dtype();
        if let Some(b) = x.bias.as_mut() {
            round_to(bd, b);
        }
        let [_, _, ly] = p.lens()?;
        let bx = DevBuf::upload(gpu, p.dtype, &x.x, "cuDNN check x")?;
        let bw = DevBuf::upload(gpu, p.dtype, &x.w, "cuDNN check w")?;
        let bb = match &x.bias {
            Some(b) => Some(self.bias_from_f32(gpu, b)?),
            None => None,
        };
        let run = |op: Op, q: &Problem, inputs: &Inputs| -> Result<OpCheck> {
            let mut by = DevBuf::poisoned(gpu, p.dtype, ly, "cuDNN check y")?;
            let bias = if op == Op::Fused { bb.as_ref() } else { None };
            self.run(op, &bx, &bw, bias, &mut by)?;
            let got = by.download(gpu, p.dtype, "cuDNN check y")?;
            let c = *self.chosen(op);
            let label = format!("{NAME}/{}/{}", op.name(), c.name());
            let which = elements_to_check(q, seed)?;
            let (compared, worst) =
                compare(q, &label, inputs, &got, &which).map_err(|e| explain(e, c.algo))?;
            Ok(OpCheck {
                op: op.name(),
                algo: c.name(),
                compared,
                worst,
            })
        };
        let fused = run(Op::Fused, &p, &x)?;
        x.bias = None;
        let q = p.with_epilogue(false, false);
        let conv_only = run(Op::ConvOnly, &q, &x)?;
        let (a, b, c) = self.version;
        Ok(SelfCheck {
            problem: p,
            cudnn: format!("{a}.{b}.{c}"),
            fused,
            conv_only,
        })
    }
}

/// `v` rounded to `dtype` (kept as f32 values).
fn round_to(dtype: DType, v: &mut [f32]) {
    for x in v {
        *x = widen_bits(dtype, round_bits(dtype, *x));
    }
}

/// A mismatch of a transform algorithm (FFT, Winograd) says that its error is not bounded by
/// the sum-of-products bound.
fn explain(e: Error, a: cudarc::cudnn::sys::cudnnConvolutionFwdAlgo_t) -> Error {
    match e {
        Error::Mismatch {
            kernel,
            shape,
            detail,
        } if !algo::is_sum_of_products(a) => Error::Mismatch {
            kernel,
            shape,
            detail: format!(
                "{detail} ({} transforms the operands: its rounding is not bounded by Σ|terms|)",
                algo::name(a)
            ),
        },
        e => e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bias_is_rounded_as_cudnn_reads_it() {
        let mut v = vec![0.1f32, -1.0 / 3.0, 1.0];
        round_to(DType::F16, &mut v);
        assert_eq!(v[0], half::f16::from_f32(0.1).to_f32());
        assert_eq!(v[2], 1.0);
        let mut w = vec![0.1f32];
        round_to(DType::F32, &mut w);
        assert_eq!(w[0], 0.1);
        let mut b = vec![0.1f32];
        round_to(DType::Bf16, &mut b);
        assert_eq!(b[0], half::bf16::from_f32(0.1).to_f32());
    }

    #[test]
    fn a_transform_algorithm_s_mismatch_says_so() {
        use cudarc::cudnn::sys::cudnnConvolutionFwdAlgo_t as A;
        let m = || Error::Mismatch {
            kernel: "k".into(),
            shape: "s".into(),
            detail: "d".into(),
        };
        let e = explain(m(), A::CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD);
        assert!(e.to_string().contains("winograd transforms"), "{e}");
        let e = explain(m(), A::CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM);
        assert!(!e.to_string().contains("transforms"), "{e}");
    }
}
