//! Tensor-core GEMM through rustile's front door: bf16 inputs, B transposed, f32 output with a
//! bias and ReLU; then f16 in and out. Checked against float64 on the CPU.
//!
//! `cargo run --release --example hgemm`. Without a GPU it prints the "no GPU" error and exits
//! with status 1.

use rustile::half::{bf16, f16};
use rustile::{api, Gpu, HgemmOptions};

mod common;
use common::Lcg;

fn main() -> rustile::Result<()> {
    let gpu = Gpu::new(0).inspect_err(|e| eprintln!("hgemm example: {e}"))?;
    let (m, n, k) = (256, 384, 200);
    let mut rng = Lcg(7);

    // bf16 in, Bᵀ stored (N × K row-major), f32 out, bias + ReLU.
    let a: Vec<bf16> = (0..m * k).map(|_| bf16::from_f32(rng.uniform())).collect();
    let bt: Vec<bf16> = (0..n * k).map(|_| bf16::from_f32(rng.uniform())).collect();
    let bias: Vec<f32> = (0..n).map(|_| rng.uniform()).collect();
    let (da, db, dbias) = (
        gpu.upload(&a, "A")?,
        gpu.upload(&bt, "Bt")?,
        gpu.upload(&bias, "bias")?,
    );
    let mut dc = gpu.alloc::<f32>(m * n, "C")?;
    let opts = HgemmOptions {
        b: api::BLayout::Transposed,
        bias: Some(&dbias),
        relu: true,
        ..Default::default()
    };
    let ran = api::hgemm(&gpu, m, n, k, &da, &db, &mut dc, &opts)?;
    let c = gpu.download(&dc, "C")?;
    for (i, j) in [(0, 0), (m - 1, n - 1), (100, 7), (5, 300)] {
        let terms = (0..k).map(|p| a[i * k + p].to_f64() * bt[j * k + p].to_f64());
        let (dot, scale) = terms.fold((0.0, 0.0), |(s, t), x| (s + x, t + x.abs()));
        let want = (dot + bias[j] as f64).max(0.0);
        // rustile's bound: f32 output rounding plus 2⁻¹⁶ of Σ|a||b| for the accumulation.
        let bound = 2.0 * 2f64.powi(-24) * want.abs() + 2f64.powi(-16) * scale;
        check(&ran, i, j, c[i * n + j] as f64, want, bound)?;
    }
    println!("hgemm bf16·bf16ᵀ → f32 + bias, ReLU {m}x{n}x{k}: ran {ran}, 4 elements match");

    // f16 in and out, row-major B, α = 0.5.
    let a: Vec<f16> = (0..m * k).map(|_| f16::from_f32(rng.uniform())).collect();
    let b: Vec<f16> = (0..k * n).map(|_| f16::from_f32(rng.uniform())).collect();
    let (da, db) = (gpu.upload(&a, "A")?, gpu.upload(&b, "B")?);
    let mut dc = gpu.alloc::<f16>(m * n, "C")?;
    let opts = HgemmOptions {
        alpha: 0.5,
        ..Default::default()
    };
    let ran = api::hgemm(&gpu, m, n, k, &da, &db, &mut dc, &opts)?;
    let c = gpu.download(&dc, "C")?;
    for (i, j) in [(0, 0), (m - 1, n - 1), (31, 33)] {
        let terms = (0..k).map(|p| a[i * k + p].to_f64() * b[p * n + j].to_f64());
        let (dot, scale) = terms.fold((0.0, 0.0), |(s, t), x| (s + x, t + x.abs()));
        // The f16 result is rounded once (unit roundoff 2⁻¹¹, subnormal spacing 2⁻²⁴).
        let want = 0.5 * dot;
        let bound = 2.0 * 2f64.powi(-11) * want.abs() + 2f64.powi(-24) + 2f64.powi(-16) * scale;
        check(&ran, i, j, c[i * n + j].to_f64(), want, bound)?;
    }
    println!("hgemm f16·f16 → f16, α = 0.5 {m}x{n}x{k}: ran {ran}, 3 elements match");
    Ok(())
}

fn check(
    ran: &rustile::Launched,
    i: usize,
    j: usize,
    got: f64,
    want: f64,
    bound: f64,
) -> rustile::Result<()> {
    if (got - want).abs() > bound || got.is_nan() {
        return Err(rustile::Error::Mismatch {
            kernel: ran.to_string(),
            shape: String::new(),
            detail: format!("C[{i}][{j}] = {got}, expected {want} ± {bound:.2e}"),
        });
    }
    Ok(())
}
