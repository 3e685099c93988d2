//! `rustile run hgemm[/VARIANT] --in a.npy b.npy [--bias bias.npy] [--relu] [--c c.npy --beta β]
//! [--alpha α] --out c.npy`: the tensor-core GEMM on the caller's f16 or bf16 arrays (A: M × K,
//! B: K × N row-major, bias: N f32, C: M × N in the input type), C returned in the input type.

use rustile_kernels::registry::DType;

use crate::backend::Backend;
use crate::error::Result;
use crate::families::run::{bad, dims, matmul_dims, same_dtype, Data, RunRequest, Tensor};

use super::*;

/// Runs the variant `req` names (none: the dispatcher on the GPU, `mma` in the simulator).
pub fn run_npy(backend: &Backend, req: &RunRequest) -> Result<Tensor> {
    let name = "hgemm";
    // The element type first: an f32 pair is the wrong family, whatever its shapes.
    let ty = req.inputs.first().map_or(DType::F16, |t| t.data.dtype());
    if ty == DType::F32 {
        return Err(bad(
            name,
            format!("{} is f32: hgemm takes f16 or bf16", req.inputs[0].name),
        ));
    }
    let (a, b, [m, n, ka]) = matmul_dims(name, req)?;
    same_dtype(name, ty, &[a, b])?;
    let bias = match &req.bias {
        Some(t) => {
            same_dtype(name, DType::F32, &[t])?;
            if dims(name, "bias", t, 1)? != [n] {
                return Err(bad(
                    name,
                    format!("bias has shape {:?}, wants [{n}]", t.shape),
                ));
            }
            match &t.data {
                Data::F32(v) => Some(v.clone()),
                _ => unreachable!("same_dtype() checked f32"),
            }
        }
        None => None,
    };
    let p = Problem {
        alpha: req.alpha,
        beta: req.beta,
        relu: req.relu,
        ..Problem::new(ty, m, n, ka)
    };
    p.check()?;
    let [_, _, lc] = p.lens()?;
    let c = match (&req.c, p.beta) {
        (Some(t), _) => {
            same_dtype(name, ty, &[t])?;
            if dims(name, "C", t, 2)? != [m, n] {
                return Err(bad(
                    name,
                    format!("C has shape {:?}, wants [{m}, {n}]", t.shape),
                ));
            }
            let bits = t.data.bits16().unwrap_or_default();
            bits.into_iter().map(|h| widen(ty, h)).collect()
        }
        (None, beta) if beta != 0.0 => {
            return Err(bad(name, format!("β = {beta} reads C: pass --c")));
        }
        (None, _) => vec![0.0; lc],
    };
    let variant = req.variant.as_deref().map(Variant::parse).transpose()?;
    let x = Inputs {
        a: a.data.bits16().unwrap_or_default(),
        b: b.data.bits16().unwrap_or_default(),
        c,
        bias,
    };
    let got = match backend {
        Backend::Gpu(gpu) => {
            gpu.check_fits(p.bytes()?, &format!("hgemm {}: A, B and C", p.shape()))?;
            gpu_output(gpu, variant, &p, &x)?.0
        }
        Backend::Simulator(sim) => {
            let v = variant.unwrap_or(Variant::Mma);
            check_sim(v, None, &p)?;
            sim.check_fits(p.bytes()?, &format!("hgemm {}: A, B and C", p.shape()))?;
            sim_output(sim, v, None, &p, &x)?
        }
    };
    let bits = got.iter().map(|&v| round(ty, v)).collect();
    Ok(Tensor::new("c", vec![m, n], Data::from_bits16(ty, bits)))
}
