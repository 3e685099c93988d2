//! The SGEMM ladder bench: every variant, the dispatcher and cuBLAS in the same process.

use cudarc::cublas::{CudaBlas, Gemm, GemmConfig};
use cudarc::driver::CudaSlice;
use rand::rngs::SmallRng;
use rand::SeedableRng;
use rustile_kernels::registry::{DType, KernelInfo};

use crate::check::{self};
use crate::elem::random_vec;
use crate::error::{Error, Result};
use crate::gpu::Gpu;

use super::*;

/// cuBLAS SGEMM (TF32 off: cuBLAS's default math mode) on row-major data: computes
/// `Cᵀ = Bᵀ·Aᵀ` in cuBLAS's column-major view. The shape and the buffers' lengths are checked
/// first ([`cublas_sgemm_config`]); at K = 0 it is `C = β·C`.
pub fn cublas_sgemm(
    blas: &CudaBlas,
    p: &GemmProblem,
    a: &CudaSlice<f32>,
    b: &CudaSlice<f32>,
    c: &mut CudaSlice<f32>,
) -> Result<()> {
    let cfg = cublas_sgemm_config(p, a.len(), b.len(), c.len())?;
    // SAFETY: cuBLAS reads B (n × k column-major, ld `cfg.lda`) and A (k × m, ld `cfg.ldb`)
    // and writes C (n × m, ld `ldc`); `cublas_sgemm_config` checked that the buffers hold
    // those spans and that every dimension fits its i32; cudarc orders the call on the
    // handle's stream after the buffers' earlier work and keeps their guards until it is
    // enqueued.
    unsafe { blas.gemm(cfg, b, a, c) }
        .map_err(|e| Error::Usage(format!("cuBLAS SGEMM {}: {e:?}", p.shape())))
}

/// The checked cuBLAS configuration of [`cublas_sgemm`] for buffers of `a`, `b`, `c` elements:
/// M, N ≥ 1 ([`Error::ZeroSize`]), pitches at least their rows ([`Error::Usage`]), every
/// dimension within cuBLAS's i32 ([`Error::TooLarge`]), buffers at least the shape's spans
/// ([`Error::BufferLength`]; A and B are not read at K = 0). cuBLAS wants every leading
/// dimension ≥ 1 even where K = 0 leaves A and B empty, so those are at least 1.
pub fn cublas_sgemm_config(
    p: &GemmProblem,
    a: usize,
    b: usize,
    c: usize,
) -> Result<GemmConfig<f32>> {
    use cudarc::cublas::sys::cublasOperation_t::CUBLAS_OP_N;
    let kernel = || "cuBLAS SGEMM".to_string();
    let shape = p.shape();
    for (what, v) in [("m", p.m), ("n", p.n)] {
        if v == 0 {
            return Err(Error::ZeroSize {
                kernel: kernel(),
                what,
            });
        }
    }
    for (what, ld, row) in [
        ("lda", p.lda, p.k),
        ("ldb", p.ldb, p.n),
        ("ldc", p.ldc, p.n),
    ] {
        if ld < row {
            return Err(Error::Usage(format!(
                "{} {shape}: {what} = {ld} is less than the row length {row}",
                kernel()
            )));
        }
    }
    let int = |what: &str, v: usize| {
        i32::try_from(v).map_err(|_| Error::TooLarge {
            kernel: kernel(),
            what: format!("{what} = {v} exceeds cuBLAS's i32"),
        })
    };
    let (la, lb, lc) = p.lens()?;
    let need = [("a", a, la), ("b", b, lb), ("c", c, lc)];
    for (buffer, got, need) in need
        .into_iter()
        .filter(|&(name, ..)| p.k > 0 || name == "c")
    {
        if got < need {
            return Err(Error::BufferLength {
                kernel: kernel(),
                buffer,
                got,
                need,
                shape: shape.clone(),
            });
        }
    }
    Ok(GemmConfig {
        transa: CUBLAS_OP_N,
        transb: CUBLAS_OP_N,
        m: int("n", p.n)?,
        n: int("m", p.m)?,
        k: int("k", p.k)?,
        alpha: p.alpha,
        lda: int("ldb", p.ldb.max(1))?,
        ldb: int("lda", p.lda.max(1))?,
        beta: p.beta,
        ldc: int("ldc", p.ldc.max(1))?,
    })
}

/// FP32 lanes per SM by compute capability (A100's sm_80 has 64; sm_86 and later 128).
pub fn fp32_lanes_per_sm(cc: (i32, i32)) -> u32 {
    if cc == (8, 0) {
        64
    } else {
        128
    }
}

/// One measured SGEMM case.
#[derive(Clone, Debug, serde::Serialize)]
pub struct GemmRow {
    /// Variant, `cuBLAS`, or `dispatch(variant)`.
    pub variant: String,
    /// Shape.
    pub shape: String,
    /// Rows of A and C.
    pub m: usize,
    /// Columns of B and C.
    pub n: usize,
    /// The reduction length.
    pub k: usize,
    /// Event-time statistics (L2 flushed before every repetition).
    pub stats: crate::harness::Stats,
    /// TFLOP/s at the median.
    pub tflops: f64,
    /// Over cuBLAS's TFLOP/s at the same shape.
    pub vs_cublas: f64,
    /// Over the FP32 peak (SMs × lanes × 2 × clock).
    pub vs_peak: f64,
    /// Registers per thread (driver's report; 0 for cuBLAS).
    pub registers: i32,
    /// Theoretical occupancy: resident warps per SM over the device's maximum resident warps
    /// per SM (64 on sm_80/sm_90, 48 on sm_86/sm_89), from the occupancy API.
    pub occupancy: f64,
    /// Relative error against cuBLAS's result.
    pub error_vs_cublas: f64,
}

impl crate::results::ResultRow for GemmRow {
    fn id(&self) -> crate::results::RowId {
        crate::results::RowId {
            kernel: self.variant.clone(),
            dtype: "f32".into(),
            dims: vec![
                ("m", self.m as u64),
                ("n", self.n as u64),
                ("k", self.k as u64),
            ],
            // Leading dimensions other than the packed ones are part of the shape's name.
            tags: match self.shape.split_once(" ld ") {
                Some((_, ld)) => vec![format!("ld={ld}")],
                None => vec![],
            },
        }
    }
    fn time(&self) -> Option<&crate::harness::Stats> {
        Some(&self.stats)
    }
}

/// Renders rows as a markdown table (⚠ after a noisy or low-clock row's noise figure).
pub fn markdown(rows: &[GemmRow]) -> String {
    let mut s = String::from(
        "| variant | shape | median ms | noise % | TFLOP/s | × cuBLAS | × FP32 peak | regs | occupancy | rel. err vs cuBLAS |\n\
         | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n",
    );
    for r in rows {
        let flag = if r.stats.warnings(crate::results::NOISY_PCT).is_empty() {
            ""
        } else {
            " ⚠"
        };
        s += &format!(
            "| {} | {} | {:.3} | {:.1}{flag} | {:.2} | {:.3} | {:.3} | {} | {:.2} | {:.1e} |\n",
            r.variant,
            r.shape,
            r.stats.median_ms,
            r.stats.noise_pct,
            r.tflops,
            r.vs_cublas,
            r.vs_peak,
            r.registers,
            r.occupancy,
            r.error_vs_cublas
        );
    }
    s
}

/// Times every variant in `variants` (each validated against cuBLAS's result first), cuBLAS,
/// and the dispatcher, on every problem. Repetitions adapt to about `budget_s` per case (3 to
/// 20); the L2 is flushed before each. The dispatcher is timed interleaved with cuBLAS, launch
/// by launch, and its `× cuBLAS` is against that paired timing.
pub fn bench(
    gpu: &Gpu,
    problems: &[GemmProblem],
    variants: &[&'static KernelInfo],
    budget_s: f64,
    seed: u64,
    mut progress: impl FnMut(&str),
) -> Result<Vec<GemmRow>> {
    use crate::harness::{self, L2Mode, TimingConfig};
    let info = gpu.info();
    let peak = info.sm_count as f64
        * fp32_lanes_per_sm(info.compute_capability) as f64
        * 2.0
        * info.sm_clock_khz as f64
        * 1e3;
    let blas = crate::vendor::cublas(gpu.stream())?;
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut rows = Vec::new();
    // Every problem checked before anything is allocated: the shape (with buffers of exactly
    // its spans), and A, B, C and cuBLAS's C against the device's memory.
    let spans = |p: &GemmProblem| -> Result<(usize, usize, usize)> {
        let (la, lb, lc) = p.lens()?;
        Ok((la.max(1), lb.max(1), lc))
    };
    for p in problems {
        let (la, lb, lc) = spans(p)?;
        cublas_sgemm_config(p, la, lb, lc)?;
        let bytes = check::total_bytes("gemm bench", &[(la, 4), (lb, 4), (lc, 8)])?;
        gpu.check_fits(
            bytes,
            &format!("gemm bench {}: A, B, C, C reference", p.shape()),
        )?;
    }
    for p in problems {
        let (la, lb, lc) = spans(p)?;
        let a = gpu.upload(&random_vec::<f32>(la, &mut rng), "A")?;
        let b = gpu.upload(&random_vec::<f32>(lb, &mut rng), "B")?;
        let mut c = gpu.alloc::<f32>(lc, "C")?;
        gpu.fill(&mut c, 0.0, "C")?;
        let mut c_ref = gpu.alloc::<f32>(lc, "C reference")?;
        gpu.fill(&mut c_ref, 0.0, "C reference")?;
        cublas_sgemm(&blas, p, &a, &b, &mut c_ref)?;
        let want: Vec<f64> = gpu
            .download(&c_ref, "C reference")?
            .iter()
            .map(|&v| v as f64)
            .collect();
        let want_mn: Vec<f64> = (0..p.m * p.n)
            .map(|i| want[(i / p.n) * p.ldc + i % p.n])
            .collect();
        let reps_for = |one_ms: f64| ((budget_s * 1e3 / one_ms.max(1e-3)) as usize).clamp(3, 20);
        let time = |launch: &mut dyn FnMut() -> Result<()>| -> Result<crate::harness::Stats> {
            let probe = harness::time(
                gpu,
                &TimingConfig {
                    warmup: 1,
                    reps: 1,
                    mode: L2Mode::Flush,
                },
                |_| launch(),
            )?;
            let cfg = TimingConfig {
                warmup: 1,
                reps: reps_for(probe.median_ms),
                mode: L2Mode::Flush,
            };
            harness::time(gpu, &cfg, |_| launch())
        };
        let row = |variant: String,
                   stats: crate::harness::Stats,
                   registers: i32,
                   occupancy: f64,
                   err: f64| GemmRow {
            variant,
            shape: p.shape(),
            m: p.m,
            n: p.n,
            k: p.k,
            tflops: p.flops() / (stats.median_ms * 1e-3) / 1e12,
            vs_cublas: 0.0,
            vs_peak: p.flops() / (stats.median_ms * 1e-3) / peak,
            stats,
            registers,
            occupancy,
            error_vs_cublas: err,
        };
        progress(&format!("gemm {} cuBLAS", p.shape()));
        let cublas_stats = time(&mut || cublas_sgemm(&blas, p, &a, &b, &mut c_ref))?;
        let first = rows.len();
        rows.push(row("cuBLAS".into(), cublas_stats, 0, 0.0, 0.0));
        for &kernel in variants {
            let aligned_ok = !GemmProblem::vectorized(kernel)
                || (p.lda.is_multiple_of(4) && p.ldb.is_multiple_of(4));
            if !aligned_ok {
                continue;
            }
            progress(&format!("gemm {} {}", p.shape(), kernel.name));
            gpu.fill(&mut c, f32::NAN, "C")?;
            launch(gpu, kernel, p, &a, &b, &mut c)?;
            let got = gpu.download(&c, "C")?;
            let err = relative_error(p, &got, &want_mn);
            if err > 4.0 * p.tolerance() {
                return Err(Error::Mismatch {
                    kernel: check::kernel_name(kernel),
                    shape: p.shape(),
                    detail: format!(
                        "relative error {err:.3e} against cuBLAS > {:.3e}",
                        4.0 * p.tolerance()
                    ),
                });
            }
            let stats = time(&mut || launch(gpu, kernel, p, &a, &b, &mut c))?;
            let f = gpu.function(kernel.symbol(DType::F32).unwrap_or_default())?;
            let regs = f.num_regs().unwrap_or(0);
            let (bx, by, bz) = kernel.block;
            let threads = bx * by * bz;
            let blocks = f
                .occupancy_max_active_blocks_per_multiprocessor(
                    threads,
                    kernel.shared_bytes_f32,
                    None,
                )
                .unwrap_or(0);
            // Resident warps over the device's own maximum (64 on sm_80/sm_90, 48 on
            // sm_86/sm_89), not a fixed 64.
            let max_warps = (gpu.info().max_threads_per_sm / 32).max(1);
            let occupancy = (blocks * threads.div_ceil(32)) as f64 / max_warps as f64;
            rows.push(row(kernel.name.to_string(), stats, regs, occupancy, err));
        }
        // The dispatcher, padding included.
        progress(&format!("gemm {} dispatch", p.shape()));
        let mut scratch = Scratch::default();
        gpu.fill(&mut c, f32::NAN, "C")?;
        let chosen = run(gpu, p, &a, &b, &mut c, &mut scratch)?;
        let got = gpu.download(&c, "C")?;
        let err = relative_error(p, &got, &want_mn);
        if err > 4.0 * p.tolerance() {
            return Err(Error::Mismatch {
                kernel: "gemm/dispatch".into(),
                shape: p.shape(),
                detail: format!("relative error {err:.3e}"),
            });
        }
        // Timed interleaved with cuBLAS, launch by launch (`harness::time_pair`): both at one
        // clock, and the dispatcher's ratio is against that cuBLAS timing.
        let probe = time(&mut || run(gpu, p, &a, &b, &mut c, &mut scratch).map(|_| ()))?;
        let cfg = TimingConfig {
            warmup: 2,
            reps: reps_for(probe.median_ms.max(cublas_stats.median_ms)),
            mode: L2Mode::Flush,
        };
        let (stats, paired) = harness::time_pair(
            gpu,
            &cfg,
            |_| run(gpu, p, &a, &b, &mut c, &mut scratch).map(|_| ()),
            |_| cublas_sgemm(&blas, p, &a, &b, &mut c_ref),
        )?;
        rows.push(row(format!("dispatch ({chosen})"), stats, 0, 0.0, err));
        let cublas_tflops = rows[first].tflops;
        for r in &mut rows[first..] {
            r.vs_cublas = r.tflops / cublas_tflops;
        }
        let dispatch = rows.last_mut().expect("pushed above");
        dispatch.vs_cublas = paired.median_ms / dispatch.stats.median_ms;
    }
    Ok(rows)
}
