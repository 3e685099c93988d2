//! Fused convolution through rustile's front door: `y = ReLU(conv2d(x, w) + bias)`, f16 NHWC
//! activations and KRSC weights, a 3×3 filter with stride 2 on an odd image; checked against
//! rustile's float64 reference on every output.
//!
//! `cargo run --release --example conv`. Without a GPU it prints the "no GPU" error and exits
//! with status 1.

use rustile::conv::{self, Inputs, Problem};
use rustile::half::f16;
use rustile::{api, DType, Gpu};

fn main() -> rustile::Result<()> {
    let gpu = Gpu::new(0).inspect_err(|e| eprintln!("conv example: {e}"))?;
    // Batch 2, 29×31 images, 64 → 96 channels, 3×3, stride 2, padding 1.
    let p = Problem::new(2, 29, 31, 64, 96, 3, 1, DType::F16).with_stride(2);
    let (pp, qq) = p.out_hw()?;
    let x = Inputs::random(&p, 7)?; // values in [-1, 1), already rounded to f16
    let half = |v: &[f32]| v.iter().map(|&f| f16::from_f32(f)).collect::<Vec<_>>();
    let dx = gpu.upload(&half(&x.x), "x")?;
    let dw = gpu.upload(&half(&x.w), "w")?;
    let bias = x.bias.clone().unwrap_or_default();
    let db = gpu.upload(&bias, "bias")?;
    let mut dy = gpu.alloc::<f16>(p.lens()?[2], "y")?;
    let ran = api::conv2d(&gpu, &p, &dx, &dw, Some(&db), &mut dy)?;
    let y: Vec<f32> = gpu.download(&dy, "y")?.iter().map(|v| v.to_f32()).collect();
    let which = conv::elements_to_check(&p, 7)?;
    let (n, worst) = conv::compare(&p, &ran.to_string(), &x, &y, &which)?;
    println!(
        "conv {}: {pp}x{qq} output, ran {ran}, {n} outputs within the f16 bound (worst {worst:.2} of it)",
        p.label()
    );
    Ok(())
}
