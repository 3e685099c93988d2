//! `rustile run gemm[/VARIANT] --in a.npy b.npy [--c c.npy --alpha α --beta β] --out c.npy`:
//! `C = α·A·B + β·C` in f32 on the caller's arrays (A: M × K, B: K × N, C: M × N).

use rustile_kernels::gemm::v05_blocktile_2d;
use rustile_kernels::registry::{DType, Family};

use crate::backend::{Backend, Buf};
use crate::check::{self, BufArg};
use crate::error::Result;
use crate::families::run::{bad, dims, matmul_dims, same_dtype, Data, RunRequest, Tensor};

use super::*;

/// Runs the variant `req` names (none: the dispatcher on the GPU, `blocktile_2d` in the
/// simulator) on `req`'s A and B (and C when β ≠ 0).
pub fn run_npy(backend: &Backend, req: &RunRequest) -> Result<Tensor> {
    let name = "gemm";
    let (a, b, [m, n, ka]) = matmul_dims(name, req)?;
    same_dtype(name, DType::F32, &[a, b])?;
    let c0 = match (&req.c, req.beta) {
        (Some(c), _) => {
            same_dtype(name, DType::F32, &[c])?;
            if dims(name, "C", c, 2)? != [m, n] {
                return Err(bad(
                    name,
                    format!("C has shape {:?}, wants [{m}, {n}]", c.shape),
                ));
            }
            Some(c)
        }
        (None, beta) if beta != 0.0 => {
            return Err(bad(name, format!("β = {beta} reads C: pass --c")));
        }
        (None, _) => None,
    };
    let p = GemmProblem {
        alpha: req.alpha,
        beta: req.beta,
        ..GemmProblem::new(m, n, ka)
    };
    let kernel = req.kernel(Family::Gemm, &v05_blocktile_2d::INFO)?;
    // A variant that loads 16-byte vectors gets A and B with pitches padded to multiples of 4
    // elements, as validation gives it (the dispatcher pads for itself).
    let p = if req.variant.is_some() && GemmProblem::vectorized(kernel) {
        p.aligned()
    } else {
        p
    };
    let (la, lb, lc) = p.lens()?;
    let f32s = |t: &Tensor| match &t.data {
        Data::F32(v) => v.clone(),
        _ => unreachable!("same_dtype() checked f32"),
    };
    let ha = pitch(&f32s(a), ka, p.lda, la);
    let hb = pitch(&f32s(b), n, p.ldb, lb);
    let hc = c0.map_or_else(|| vec![0.0f32; lc], f32s);
    p.check(
        kernel,
        BufArg::new("a", ha.len(), 0),
        BufArg::new("b", hb.len(), 0),
        BufArg::new("c", lc, 0),
    )?;
    let label = check::kernel_name(kernel);
    let bytes = check::total_bytes(&label, &[(ha.len(), 4), (hb.len(), 4), (lc, 4)])?;
    backend.check_fits(bytes, &format!("{label} {}: A, B and C", p.shape()))?;
    let da = backend.upload(&ha, "A")?;
    let db = backend.upload(&hb, "B")?;
    let mut dc = backend.upload(&hc, "C")?;
    match (&req.variant, backend, &da, &db, &mut dc) {
        (None, Backend::Gpu(gpu), Buf::Gpu(a), Buf::Gpu(b), Buf::Gpu(c)) => {
            run(gpu, &p, a, b, c, &mut Scratch::default()).map(|_| ())?
        }
        _ => launch_on(backend, kernel, &p, &da, &db, &mut dc)?,
    }
    backend.synchronize("gemm")?;
    let got = backend.download(&dc, "C")?;
    Ok(Tensor::new("c", vec![m, n], Data::F32(got)))
}

/// The rows of `cols` elements of `tight` laid out at `pitch` in `len` elements (at least one:
/// a buffer of zero elements cannot be allocated, as validation has it for K = 0).
fn pitch(tight: &[f32], cols: usize, pitch: usize, len: usize) -> Vec<f32> {
    let mut out = vec![0.0f32; len.max(1)];
    if cols > 0 {
        for (r, row) in tight.chunks_exact(cols).enumerate() {
            out[r * pitch..r * pitch + cols].copy_from_slice(row);
        }
    }
    out
}
