//! `C = α·A·B + β·C` in f32 through rustile's front door, checked against a CPU product.
//!
//! `cargo run --release --example sgemm`. Without a GPU it prints the "no GPU" error and exits
//! with status 1.

use rustile::{api, Gpu};

mod common;
use common::Lcg;

fn main() -> rustile::Result<()> {
    let gpu = Gpu::new(0).inspect_err(|e| eprintln!("sgemm example: {e}"))?;
    let (m, n, k) = (300, 200, 129);
    let (alpha, beta) = (1.5f32, 0.5f32);
    let mut rng = Lcg(1);
    let a: Vec<f32> = (0..m * k).map(|_| rng.uniform()).collect();
    let b: Vec<f32> = (0..k * n).map(|_| rng.uniform()).collect();
    let c0: Vec<f32> = (0..m * n).map(|_| rng.uniform()).collect();

    let da = gpu.upload(&a, "A")?;
    let db = gpu.upload(&b, "B")?;
    let mut dc = gpu.upload(&c0, "C")?;
    let ran = api::sgemm(&gpu, m, n, k, alpha, &da, &db, beta, &mut dc)?;
    let c = gpu.download(&dc, "C")?;

    // A few elements against float64, within f32 rounding plus 2⁻¹⁶ of Σ|α·a·b| + |β·c|.
    for (i, j) in [(0, 0), (m - 1, n - 1), (m / 2, 17), (123, n - 5)] {
        let dot: f64 = (0..k)
            .map(|p| a[i * k + p] as f64 * b[p * n + j] as f64)
            .sum();
        let want = alpha as f64 * dot + beta as f64 * c0[i * n + j] as f64;
        let scale: f64 = alpha.abs() as f64
            * (0..k)
                .map(|p| (a[i * k + p] as f64 * b[p * n + j] as f64).abs())
                .sum::<f64>()
            + (beta * c0[i * n + j]).abs() as f64;
        let bound = 2.0 * 2f64.powi(-24) * want.abs() + 2f64.powi(-16) * scale;
        let got = c[i * n + j] as f64;
        if (got - want).abs() > bound || got.is_nan() {
            return Err(rustile::Error::Mismatch {
                kernel: ran.to_string(),
                shape: format!("{m}x{n}x{k}"),
                detail: format!("C[{i}][{j}] = {got}, expected {want}"),
            });
        }
    }
    println!(
        "sgemm {m}x{n}x{k} on {}: ran {ran}, 4 elements match float64",
        gpu.info().name
    );
    Ok(())
}
