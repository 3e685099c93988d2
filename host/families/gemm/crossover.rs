//! Where the GPU starts to win: a multi-threaded CPU SGEMM (the `gemm` crate, rayon over every
//! core) against the GPU dispatcher, kernel only and with the transfers a caller holding host
//! data pays (A and B up, C down, from ordinary pageable `Vec`s).

use std::time::Instant;

use rand::rngs::SmallRng;
use rand::SeedableRng;

use crate::elem::random_vec;
use crate::error::{DriverContext, Error, Result};
use crate::families::gemm::{self, GemmProblem, Scratch};
use crate::gpu::Gpu;
use crate::harness::{self, L2Mode, Stats, TimingConfig};

/// One size of the crossover study.
#[derive(Clone, Debug, serde::Serialize)]
pub struct CrossoverRow {
    /// `n` of the `n³` product.
    pub n: usize,
    /// CPU threads the `gemm` crate used.
    pub cpu_threads: usize,
    /// CPU wall time, median, ms.
    pub cpu_ms: f64,
    /// GPU dispatcher, CUDA events, L2 flushed, median, ms.
    pub gpu_kernel_ms: f64,
    /// GPU wall time including upload of A and B and download of C (pageable), median, ms.
    pub gpu_with_transfers_ms: f64,
    /// `cpu_ms / gpu_kernel_ms`.
    pub speedup_kernel: f64,
    /// `cpu_ms / gpu_with_transfers_ms`.
    pub speedup_with_transfers: f64,
}

impl crate::results::ResultRow for CrossoverRow {
    fn id(&self) -> crate::results::RowId {
        crate::results::RowId {
            kernel: "crossover".into(),
            dtype: "f32".into(),
            dims: vec![("n", self.n as u64)],
            tags: vec![],
        }
    }
    /// Medians only: no samples are kept.
    fn time(&self) -> Option<&Stats> {
        None
    }
}

fn median_wall(budget_s: f64, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    f()?; // warm-up
    let mut samples = Vec::new();
    let start = Instant::now();
    while samples.len() < 3 || (samples.len() < 15 && start.elapsed().as_secs_f64() < budget_s) {
        let t = Instant::now();
        f()?;
        samples.push(t.elapsed().as_secs_f64() * 1e3);
    }
    Ok(Stats::from_samples(samples).median_ms)
}

/// CPU `C = A·B` (row-major, n × n) with the `gemm` crate on every core. Each slice must hold
/// at least `n·n` elements ([`Error::BufferLength`]; [`Error::TooLarge`] when `n·n` overflows).
pub fn cpu_sgemm(n: usize, a: &[f32], b: &[f32], c: &mut [f32]) -> Result<()> {
    let kernel = || "crossover CPU SGEMM".to_string();
    let need = n.checked_mul(n).ok_or_else(|| Error::TooLarge {
        kernel: kernel(),
        what: format!("{n} × {n} elements overflow usize"),
    })?;
    let isize_ok = isize::try_from(n).is_ok();
    for (buffer, got) in [("a", a.len()), ("b", b.len()), ("c", c.len())] {
        if got < need || !isize_ok {
            return Err(Error::BufferLength {
                kernel: kernel(),
                buffer,
                got,
                need,
                shape: format!("{n}x{n}x{n}"),
            });
        }
    }
    // SAFETY: the three slices hold at least n·n elements (checked above) and `c` is the only
    // one written; row stride n, column stride 1, so every access is inside them.
    unsafe {
        ::gemm::gemm(
            n,
            n,
            n,
            c.as_mut_ptr(),
            1,
            n as isize,
            false,
            a.as_ptr(),
            1,
            n as isize,
            b.as_ptr(),
            1,
            n as isize,
            0.0,
            1.0,
            false,
            false,
            false,
            ::gemm::Parallelism::Rayon(0),
        )
    }
    Ok(())
}

/// Runs the study at each `n`.
pub fn run(
    gpu: &Gpu,
    sizes: &[usize],
    seed: u64,
    mut progress: impl FnMut(&str),
) -> Result<Vec<CrossoverRow>> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let threads = rayon::current_num_threads();
    let mut rows = Vec::new();
    for &n in sizes {
        progress(&format!("crossover n = {n}"));
        let p = GemmProblem::new(n, n, n);
        let a: Vec<f32> = random_vec(n * n, &mut rng);
        let b: Vec<f32> = random_vec(n * n, &mut rng);
        let mut c = vec![0.0f32; n * n];
        let cpu_ms = median_wall(0.5, || cpu_sgemm(n, &a, &b, &mut c))?;
        // Check the CPU result against the GPU's: the two must agree.
        let da = gpu.upload(&a, "A")?;
        let db = gpu.upload(&b, "B")?;
        let mut dc = gpu.alloc::<f32>(n * n, "C")?;
        let mut scratch = Scratch::default();
        gemm::run(gpu, &p, &da, &db, &mut dc, &mut scratch)?;
        let got = gpu.download(&dc, "C")?;
        let want: Vec<f64> = c.iter().map(|&v| v as f64).collect();
        let e = gemm::relative_error(&p, &got, &want);
        if e > 4.0 * p.tolerance() {
            return Err(crate::error::Error::Mismatch {
                kernel: "gemm/dispatch vs CPU gemm crate".into(),
                shape: p.shape(),
                detail: format!("relative error {e:.2e}"),
            });
        }
        let cfg = TimingConfig {
            warmup: 2,
            reps: 20,
            mode: L2Mode::Flush,
        };
        let kernel = harness::time(gpu, &cfg, |_| {
            gemm::run(gpu, &p, &da, &db, &mut dc, &mut scratch).map(|_| ())
        })?;
        let mut host_c = vec![0.0f32; n * n];
        let mut da = da;
        let mut db = db;
        let with_transfers = median_wall(0.5, || {
            gpu.stream()
                .memcpy_htod(&a, &mut da)
                .during(|| "uploading A".into())?;
            gpu.stream()
                .memcpy_htod(&b, &mut db)
                .during(|| "uploading B".into())?;
            gemm::run(gpu, &p, &da, &db, &mut dc, &mut scratch)?;
            gpu.stream()
                .memcpy_dtoh(&dc, &mut host_c)
                .during(|| "downloading C".into())?;
            gpu.synchronize("crossover")
        })?;
        rows.push(CrossoverRow {
            n,
            cpu_threads: threads,
            cpu_ms,
            gpu_kernel_ms: kernel.median_ms,
            gpu_with_transfers_ms: with_transfers,
            speedup_kernel: cpu_ms / kernel.median_ms,
            speedup_with_transfers: cpu_ms / with_transfers,
        });
    }
    Ok(rows)
}

/// Markdown table.
pub fn markdown(rows: &[CrossoverRow]) -> String {
    let mut s = String::from(
        "| n | CPU threads | CPU ms | GPU kernel ms | GPU + transfers ms | CPU / GPU kernel | CPU / GPU + transfers |\n\
         | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n",
    );
    for r in rows {
        s += &format!(
            "| {} | {} | {:.4} | {:.4} | {:.4} | {:.2} | {:.2} |\n",
            r.n,
            r.cpu_threads,
            r.cpu_ms,
            r.gpu_kernel_ms,
            r.gpu_with_transfers_ms,
            r.speedup_kernel,
            r.speedup_with_transfers
        );
    }
    s
}
