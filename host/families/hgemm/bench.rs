//! Benchmark rows: a variant and cuBLAS (`cublasGemmEx`) on the same inputs, same process.

use std::sync::Arc;

use cudarc::cublas::CudaBlas;
use cudarc::driver::{CudaStream, DevicePtr};
use rustile_kernels::registry::DType;

use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::harness::{self, Stats, TimingConfig};

use super::prepare::OutBuf;
use super::*;

/// cuBLAS (`cublasGemmEx`, f32 compute) on the same problem: the baseline. No bias or ReLU.
pub fn cublas(
    blas: &CudaBlas,
    stream: &Arc<CudaStream>,
    p: &Problem,
    a: &impl DevicePtr<u16>,
    b: &impl DevicePtr<u16>,
    c: &mut Out<'_>,
) -> Result<()> {
    use cudarc::cublas::result::gemm_ex;
    use cudarc::cublas::sys::cublasOperation_t::{CUBLAS_OP_N, CUBLAS_OP_T};
    use cudarc::cublas::sys::{cublasComputeType_t, cublasGemmAlgo_t, cudaDataType_t};
    let in_ty = match p.ty {
        DType::F16 => cudaDataType_t::CUDA_R_16F,
        DType::Bf16 => cudaDataType_t::CUDA_R_16BF,
        DType::F32 => {
            return Err(Error::Unsupported {
                kernel: "cuBLAS GemmEx".into(),
                what: "inputs must be f16 or bf16".into(),
            })
        }
    };
    let (c_ptr, c_ty) = match c {
        Out::Half(c) => (c.device_ptr_mut(stream).0, in_ty),
        Out::F32(c) => (c.device_ptr_mut(stream).0, cudaDataType_t::CUDA_R_32F),
    };
    // Row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ: B's buffer first.
    let op_b = match p.b {
        BLayout::RowMajor => CUBLAS_OP_N,
        BLayout::Transposed => CUBLAS_OP_T,
    };
    let a_ptr = a.device_ptr(stream).0;
    let b_ptr = b.device_ptr(stream).0;
    // SAFETY: the column-major views of the row-major buffers (B: n × k or its transpose, A:
    // k × m, C: n × m) with the problem's pitches; the caller sized the buffers from `lens`.
    unsafe {
        gemm_ex(
            *blas.handle(),
            op_b,
            CUBLAS_OP_N,
            p.n as i32,
            p.m as i32,
            p.k as i32,
            (&p.alpha) as *const f32 as *const _,
            b_ptr as *const _,
            in_ty,
            p.ldb as i32,
            a_ptr as *const _,
            in_ty,
            p.lda as i32,
            (&p.beta) as *const f32 as *const _,
            c_ptr as *mut _,
            c_ty,
            p.ldc as i32,
            cublasComputeType_t::CUBLAS_COMPUTE_32F,
            cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
        )
    }
    .map_err(|e| Error::Usage(format!("cuBLAS GemmEx {}: {e:?}", p.shape())))
}

/// One benchmark row.
#[derive(Clone, Debug, serde::Serialize)]
pub struct BenchRow {
    /// The problem.
    pub problem: Problem,
    /// The kernel.
    pub variant: Variant,
    /// `mma_pipeline`'s tuning configuration, if not the default.
    pub tuning: Option<&'static str>,
    /// rustile, event-timed.
    pub ours: Stats,
    /// cuBLAS, same process, same inputs.
    pub cublas: Stats,
    /// rustile TFLOP/s (median).
    pub tflops: f64,
    /// cuBLAS TFLOP/s (median).
    pub cublas_tflops: f64,
    /// `cublas / ours` time: ≥ 1 means rustile is faster.
    pub ratio: f64,
}

/// Times `variant` and cuBLAS on `p` (output poisoning off, β = 0 unless `p` says otherwise),
/// rotating input sets past the L2.
pub fn bench(
    gpu: &Gpu,
    blas: &CudaBlas,
    variant: Option<Variant>,
    p: &Problem,
    timing: &TimingConfig,
) -> Result<BenchRow> {
    bench_with(
        gpu,
        blas,
        &Options::variant(variant),
        p,
        timing,
        harness::Pairing::Sequential,
    )
}

/// [`bench()`] with every launch option and the timing pairing given.
pub fn bench_with(
    gpu: &Gpu,
    blas: &CudaBlas,
    opts: &Options,
    p: &Problem,
    timing: &TimingConfig,
    pairing: harness::Pairing,
) -> Result<BenchRow> {
    let [la, lb, lc] = p.lens();
    let set_bytes = ((la + lb) * 2 + lc * p.out_bytes()) as u64;
    let sets = harness::rotation_sets(gpu.info().l2_bytes, set_bytes).min(8);
    let mut ins = Vec::new();
    for s in 0..sets {
        let a = gpu.upload(&random_bits(p.ty, la, 11 + s as u64), "hgemm A")?;
        let b = gpu.upload(&random_bits(p.ty, lb, 97 + s as u64), "hgemm B")?;
        ins.push((a, b));
    }
    let stream = gpu.stream().clone();
    let mut outs = (0..sets)
        .map(|_| OutBuf::alloc(gpu, p.out, lc))
        .collect::<Result<Vec<_>>>()?;
    let preps = (0..sets)
        .map(|s| {
            let (a, b) = &ins[s];
            prepare_with(gpu, opts, p, a, b, &outs[s].out(), None)
        })
        .collect::<Result<Vec<_>>>()?;
    let used = preps[0].variant();
    // `pairing`: each settled alone, or interleaved rep by rep (`harness::Pairing`).
    let outs = std::cell::RefCell::new(outs);
    let (ours, theirs) = pairing.time(
        gpu,
        timing,
        |i| {
            let s = i % sets;
            preps[s].launch(
                &stream,
                &ins[s].0,
                &ins[s].1,
                &mut outs.borrow_mut()[s].out(),
                None,
            )
        },
        |i| {
            let s = (i + sets / 2) % sets;
            cublas(
                blas,
                &stream,
                p,
                &ins[s].0,
                &ins[s].1,
                &mut outs.borrow_mut()[s].out(),
            )
        },
    )?;
    let tf = |st: &Stats| p.flops() / (st.median_ms * 1e-3) / 1e12;
    Ok(BenchRow {
        problem: *p,
        variant: used,
        tuning: opts
            .tuning
            .filter(|_| used == Variant::MmaPipeline)
            .map(|t| t.name),
        tflops: tf(&ours),
        cublas_tflops: tf(&theirs),
        ratio: theirs.median_ms / ours.median_ms,
        ours,
        cublas: theirs,
    })
}
