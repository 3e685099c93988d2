//! Copy and transpose through rustile's front door, f32 and f16, on whole buffers and on views
//! (a view at an odd element offset takes the scalar copy). Exact comparisons on the CPU.
//!
//! `cargo run --release --example copy_transpose`. Without a GPU it prints the "no GPU" error
//! and exits with status 1.

use rustile::half::f16;
use rustile::{api, Gpu};

mod common;
use common::Lcg;

fn main() -> rustile::Result<()> {
    let gpu = Gpu::new(0).inspect_err(|e| eprintln!("copy_transpose example: {e}"))?;
    let mut rng = Lcg(3);

    // Copy, f32: the whole buffer, then a view one element in.
    let n = 1 << 20;
    let src: Vec<f32> = (0..n).map(|_| rng.uniform()).collect();
    let dsrc = gpu.upload(&src, "src")?;
    let mut ddst = gpu.alloc::<f32>(n, "dst")?;
    let ran = api::copy(&gpu, &dsrc, &mut ddst)?;
    let got = gpu.download(&ddst, "dst")?;
    same(&ran, &got, &src)?;
    let mut dview = gpu.alloc::<f32>(n - 1, "dst (view copy)")?;
    let ran_view = api::copy(&gpu, &dsrc.slice(1..), &mut dview)?;
    same(&ran_view, &gpu.download(&dview, "dst")?, &src[1..])?;
    println!("copy f32 n={n}: ran {ran}; from a view at +1 element: ran {ran_view}; exact");

    // Transpose, f32 and f16, a shape that is not a tile multiple.
    let (rows, cols) = (1000, 777);
    let m: Vec<f32> = (0..rows * cols).map(|_| rng.uniform()).collect();
    let dm = gpu.upload(&m, "matrix")?;
    let mut dt = gpu.alloc::<f32>(rows * cols, "transposed")?;
    let ran = api::transpose(&gpu, rows, cols, &dm, &mut dt)?;
    same(
        &ran,
        &gpu.download(&dt, "transposed")?,
        &cpu_transpose(&m, rows, cols),
    )?;
    println!("transpose f32 {rows}x{cols}: ran {ran}; exact");

    let h: Vec<f16> = m.iter().map(|&v| f16::from_f32(v)).collect();
    let dh = gpu.upload(&h, "matrix f16")?;
    let mut dht = gpu.alloc::<f16>(rows * cols, "transposed f16")?;
    let ran = api::transpose(&gpu, rows, cols, &dh, &mut dht)?;
    same(
        &ran,
        &gpu.download(&dht, "transposed")?,
        &cpu_transpose(&h, rows, cols),
    )?;
    println!("transpose f16 {rows}x{cols}: ran {ran}; exact");
    Ok(())
}

fn cpu_transpose<T: Copy + Default>(m: &[T], rows: usize, cols: usize) -> Vec<T> {
    let mut t = vec![T::default(); rows * cols];
    for r in 0..rows {
        for c in 0..cols {
            t[c * rows + r] = m[r * cols + c];
        }
    }
    t
}

/// Bit-exact equality (data movement must not change a bit).
fn same<T: Copy + PartialEq + std::fmt::Debug>(
    ran: &rustile::Launched,
    got: &[T],
    want: &[T],
) -> rustile::Result<()> {
    match got.iter().zip(want).position(|(g, w)| g != w) {
        None if got.len() == want.len() => Ok(()),
        at => Err(rustile::Error::Mismatch {
            kernel: ran.to_string(),
            shape: format!("{} elements", want.len()),
            detail: format!("first difference at {at:?}"),
        }),
    }
}
