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
/// `stream` must be the stream `blas` runs on ([`Error::Usage`] otherwise: the buffers are
/// ordered on it); the problem and the buffers' lengths and C's type are checked first.
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
    p.check()?;
    let kernel = format!("cuBLAS GemmEx {}", p.shape());
    if c.dtype(p.ty) != p.out {
        return Err(Error::Usage(format!(
            "{kernel}: the output buffer is {} but the problem asks for {}",
            c.dtype(p.ty).name(),
            p.out.name()
        )));
    }
    p.check_lens(a.len(), b.len(), c.len(), None)?;
    crate::vendor::check_stream(blas, stream)?;
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
    let (op_b, [ld_b, ld_a, ld_c]) = cublas_dims(p);
    let op_b = if op_b { CUBLAS_OP_T } else { CUBLAS_OP_N };
    // The guards order the call after the buffers' earlier work and live until it is enqueued.
    let (a_ptr, _ga) = a.device_ptr(stream);
    let (b_ptr, _gb) = b.device_ptr(stream);
    let ((c_ptr, _gc), c_ty) = match c {
        Out::Half(c) => (c.device_ptr_mut(stream), in_ty),
        Out::F32(c) => (c.device_ptr_mut(stream), cudaDataType_t::CUDA_R_32F),
    };
    // SAFETY: row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ, B's buffer first: cuBLAS reads B
    // (n × k, or k × n transposed), A (k × m) and writes C (n × m) with the problem's pitches
    // (at least 1, `cublas_dims`); `check` kept every dimension below 2³¹ and `check_lens`
    // proved the buffers hold those spans and C is of the output type; the call runs on
    // `stream` (checked to be the handle's), where the guards above order it.
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
            ld_b,
            a_ptr as *const _,
            in_ty,
            ld_a,
            (&p.beta) as *const f32 as *const _,
            c_ptr as *mut _,
            c_ty,
            ld_c,
            cublasComputeType_t::CUBLAS_COMPUTE_32F,
            cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
        )
    }
    .map_err(|e| Error::Usage(format!("{kernel}: {e:?}")))
}

/// cuBLAS's view of `p` (checked by [`Problem::check`]): whether B is transposed for it, and
/// the leading dimensions of its A (our B), B (our A) and C. cuBLAS refuses a leading dimension
/// of 0 even where K = 0 leaves a matrix empty, so each is at least 1.
pub fn cublas_dims(p: &Problem) -> (bool, [i32; 3]) {
    let ld = |v: usize| v.max(1) as i32;
    (
        p.b == BLayout::Transposed,
        [ld(p.ldb), ld(p.lda), ld(p.ldc)],
    )
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
    /// `wgmma_ws`'s tile width and cut.
    pub tile: Option<WsTile>,
    /// Whether the tile ran with the stream-K tail (`wgmma_sk`, `RUSTILE_HGEMM_SK_TAIL=1`).
    pub stream_k_tail: bool,
    /// The matrices each launch copied through aligned scratch (inside the timed interval).
    pub padded: PadPlan,
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

impl crate::results::ResultRow for BenchRow {
    fn id(&self) -> crate::results::RowId {
        let p = &self.problem;
        let mut tags = vec![format!("b={}", p.b.tag())];
        let tight = Problem::new(p.ty, p.m, p.n, p.k).with_b(p.b);
        if (p.lda, p.ldb, p.ldc) != (tight.lda, tight.ldb, tight.ldc) {
            tags.push(format!("ld={}/{}/{}", p.lda, p.ldb, p.ldc));
        }
        if !self.padded.is_empty() {
            tags.push(format!("pad={}", self.padded.tag()));
        }
        if let Some(t) = self.tile.filter(|t| t.cut > 1) {
            tags.push(format!("cut={}", t.cut));
        }
        if self.stream_k_tail {
            tags.push("sk-tail".into());
        }
        crate::results::RowId {
            kernel: match (self.tuning, self.tile) {
                (Some(t), _) => format!("hgemm/{}/{t}", self.variant.name()),
                (None, Some(t)) => format!("hgemm/{}", t.info().map_or("wgmma_ws", |k| k.name)),
                (None, None) => format!("hgemm/{}", self.variant.name()),
            },
            dtype: format!("{}->{}", p.ty.name(), p.out.name()),
            dims: vec![("m", p.m as u64), ("n", p.n as u64), ("k", p.k as u64)],
            tags,
        }
    }
    fn time(&self) -> Option<&Stats> {
        Some(&self.ours)
    }
}

/// Times `variant` and cuBLAS on `p` (output poisoning off, β = 0 unless `p` says otherwise),
/// rotating input sets past the L2. On the padded path the copies into and out of scratch are
/// inside rustile's timed launch, and cuBLAS gets the caller's pitches.
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
    // Checked before anything is allocated: the shape, and one input/output set against the
    // device's memory.
    p.check()?;
    let [la, lb, lc] = p.lens()?;
    let set_bytes = p.bytes()?;
    gpu.check_fits(set_bytes, &format!("hgemm bench {}: A, B and C", p.shape()))?;
    let set_bytes = set_bytes as u64;
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
            prepare_with(gpu, opts, p, a, b, &mut outs[s].out(), None)
        })
        .collect::<Result<Vec<_>>>()?;
    let (used, padded, tile) = (preps[0].variant(), preps[0].padding(), preps[0].tile());
    let stream_k_tail = preps[0].stream_k_tail();
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
        tile,
        stream_k_tail,
        padded,
        tflops: tf(&ours),
        cublas_tflops: tf(&theirs),
        ratio: theirs.median_ms / ours.median_ms,
        ours,
        cublas: theirs,
    })
}
