//! `rustile run copy|strided|transpose[/VARIANT] --in x.npy [--stride S] --out y.npy`: a
//! memory family's kernel on the caller's array (f32, f16 or bf16, as the kernel is built).
//! copy keeps the shape; transpose takes a 2-D `R × C` array and returns `C × R`; strided takes
//! a 1-D array and returns every `S`-th element from the first, `(len − 1)/S + 1` of them.

use rustile_kernels::registry::{DType, Family, KernelInfo};

use crate::backend::Backend;
use crate::check;
use crate::dispatch_dtype;
use crate::elem::DeviceElem;
use crate::error::{Error, Result};
use crate::families::copy::CopyProblem;
use crate::families::run::{bad, dims, Data, RunRequest, Tensor};
use crate::families::strided::StridedProblem;
use crate::families::transpose::TransposeProblem;

use super::Problem;

/// Runs `family`'s kernel (the one `req` names, else the family's best) on `req`'s one input.
pub fn run_npy(family: Family, backend: &Backend, req: &RunRequest) -> Result<Tensor> {
    let name = family.name();
    let [x] = req.inputs(name, &["x"])? else {
        unreachable!("inputs() checked the count")
    };
    let (problem, out_shape) = match family {
        Family::Copy => (
            Problem::Copy(CopyProblem { n: x.data.len() }),
            x.shape.clone(),
        ),
        Family::Transpose => {
            let &[rows, cols] = dims(name, "X", x, 2)? else {
                unreachable!("dims() checked the rank")
            };
            (
                Problem::Transpose(TransposeProblem { rows, cols }),
                vec![cols, rows],
            )
        }
        Family::Strided => {
            let &[len] = dims(name, "X", x, 1)? else {
                unreachable!("dims() checked the rank")
            };
            let stride = req
                .stride
                .ok_or_else(|| bad(name, "needs --stride S (≥ 1)".into()))?;
            if stride == 0 || len == 0 {
                return Err(bad(name, format!("stride {stride} over {len} elements")));
            }
            let n = (len - 1) / stride + 1;
            (Problem::Strided(StridedProblem { n, stride }), vec![n])
        }
        _ => return Err(bad(name, "not a memory family".into())),
    };
    problem.check_shape()?;
    let kernel = req.kernel(family, default_kernel(&problem, x.data.dtype()))?;
    let dtype = x.data.dtype();
    if kernel.symbol(dtype).is_none() {
        return Err(Error::UnknownKernel {
            family: name.into(),
            variant: kernel.name.into(),
            dtype: dtype.name(),
        });
    }
    let out = dispatch_dtype!(dtype, T => launch::<T>(backend, kernel, &problem, &x.data))?;
    Ok(Tensor::new("y", out_shape, out))
}

/// The family's default for `problem`: copy's and strided's best, transpose's best for the
/// shape and dtype.
fn default_kernel(problem: &Problem, dtype: DType) -> &'static KernelInfo {
    match problem {
        Problem::Copy(_) => crate::families::copy::BEST,
        Problem::Strided(_) => crate::families::strided::BEST,
        Problem::Transpose(t) => crate::families::transpose::best_for(t, dtype),
    }
}

fn launch<T: DeviceElem>(
    backend: &Backend,
    kernel: &KernelInfo,
    problem: &Problem,
    x: &Data,
) -> Result<Data> {
    super::validate::check_before_alloc::<T>(backend, kernel, problem, "run input and output")?;
    let (src_len, dst_len) = problem.lens()?;
    let host: &[T] = match x {
        Data::F32(v) => bytemuck::cast_slice(v),
        Data::F16(v) => bytemuck::cast_slice(v),
        Data::Bf16(v) => bytemuck::cast_slice(v),
    };
    if host.len() < src_len {
        return Err(bad(
            kernel.name,
            format!("{} elements, the shape reads {src_len}", host.len()),
        ));
    }
    let src = backend.upload(host, "run input")?;
    let mut dst = backend.filled(dst_len, T::POISON, "run output")?;
    problem.launch(backend, kernel, &src, &mut dst)?;
    backend.synchronize(&check::kernel_name(kernel))?;
    let got = backend.download(&dst, "run output")?;
    Ok(match T::DTYPE {
        DType::F32 => Data::F32(bytemuck::cast_slice(&got).to_vec()),
        DType::F16 => Data::F16(bytemuck::cast_slice(&got).to_vec()),
        DType::Bf16 => Data::Bf16(bytemuck::cast_slice(&got).to_vec()),
    })
}
