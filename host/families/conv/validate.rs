//! Validated runs on either back end: fresh inputs, the output poisoned with NaN, one launch,
//! then the float64 comparison with the per-dtype bound.

use cudarc::driver::DevicePtr;
use rustile_kernels::registry::{DType, KernelInfo};

use crate::backend::{Backend, Buf};
use crate::error::Result;

use super::tma::Reduce;
use super::*;

/// Result of one validated case.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Checked {
    /// The problem.
    pub problem: Problem,
    /// The record that ran.
    pub kernel: &'static str,
    /// Elements compared with float64.
    pub compared: usize,
    /// The worst `|error| / bound` over them (≤ 1 when correct).
    pub worst: f64,
}

/// 16-bit NaN (f16 and bf16 alike): what the output holds before the launch.
pub const POISON: u16 = 0x7FFF;

fn addr<T>(backend: &Backend, b: &Buf<T>) -> u64 {
    match (backend, b) {
        (Backend::Gpu(g), Buf::Gpu(s)) => s.device_ptr(g.stream()).0,
        (_, Buf::Sim(s)) => s.addr(),
        _ => 0,
    }
}

/// One device buffer of either element width.
enum AnyBuf {
    F32(Buf<f32>),
    B16(Buf<u16>),
}

impl AnyBuf {
    fn upload(backend: &Backend, dtype: DType, v: &[f32], what: &str) -> Result<Self> {
        Ok(match dtype {
            DType::F32 => AnyBuf::F32(backend.upload(v, what)?),
            d => AnyBuf::B16(backend.upload(&to_bits(d, v), what)?),
        })
    }
    fn poisoned(backend: &Backend, dtype: DType, n: usize, what: &str) -> Result<Self> {
        Ok(match dtype {
            DType::F32 => AnyBuf::F32(backend.filled(n, f32::NAN, what)?),
            _ => AnyBuf::B16(backend.filled(n, POISON, what)?),
        })
    }
    fn addr(&self, backend: &Backend) -> u64 {
        match self {
            AnyBuf::F32(b) => addr(backend, b),
            AnyBuf::B16(b) => addr(backend, b),
        }
    }
    fn download(&self, backend: &Backend, dtype: DType, what: &str) -> Result<Vec<f32>> {
        Ok(match self {
            AnyBuf::F32(b) => backend.download(b, what)?,
            AnyBuf::B16(b) => backend
                .download(b, what)?
                .into_iter()
                .map(|v| crate::elem::widen_bits(dtype, v as u32))
                .collect(),
        })
    }
}

/// Runs `record` on `p` over the inputs `x` into a freshly poisoned output, on `backend`, and
/// returns the output widened to f32.
pub fn output(
    backend: &Backend,
    record: &'static KernelInfo,
    p: &Problem,
    x: &Inputs,
) -> Result<Vec<f32>> {
    output_split(backend, record, p, x, Reduce::Auto)
}

/// [`output`] with the reduction shared out as `reduce` (the TMA kernel: split-K parts,
/// stream-K or a cut forced; the f32 `regblock` step: split-K parts forced; [`Reduce::Auto`]:
/// the kernel's estimate; other kernels ignore it).
pub fn output_split(
    backend: &Backend,
    record: &'static KernelInfo,
    p: &Problem,
    x: &Inputs,
    reduce: Reduce,
) -> Result<Vec<f32>> {
    p.check()?;
    runnable(Target::of(backend), record, p)?;
    let [_, _, ly] = p.lens()?;
    let bx = AnyBuf::upload(backend, p.dtype, &x.x, "conv x")?;
    let bw = AnyBuf::upload(backend, p.dtype, &x.w, "conv w")?;
    let bb = match &x.bias {
        Some(b) => Some(backend.upload(b, "conv bias")?),
        None => None,
    };
    let by = AnyBuf::poisoned(backend, p.dtype, ly, "conv y")?;
    let a = Addrs {
        x: bx.addr(backend),
        w: bw.addr(backend),
        bias: bb.as_ref().map_or(0, |b| addr(backend, b)),
        y: by.addr(backend),
    };
    match backend {
        Backend::Gpu(gpu) if record.needs.tma => {
            // SAFETY: the buffers hold the problem's lengths (uploaded above from `p.lens()`)
            // and live until the download below, which waits for the kernel.
            unsafe { super::tma::launch(gpu, gpu.stream(), p, record, &a, reduce)? }
        }
        _ => {
            // The f32 `regblock` step splits its reduction where its estimate says (or as
            // forced); the other kernels ignore `reduce`.
            let splits = direct_parts(record, p, backend.sm_count(), reduce)?;
            let ws_len = split_workspace_len(p, splits)?;
            backend.check_fits(ws_len.saturating_mul(4), "the split-K workspace")?;
            let ws = if ws_len > 0 {
                Some(backend.filled(ws_len, f32::NAN, "conv split-K workspace")?)
            } else {
                None
            };
            let ws_addr = ws.as_ref().map_or(0, |b| addr(backend, b));
            let (main, fix) = split_plans(p, record, &a, splits, ws_addr)?;
            // SAFETY: as above; the workspace holds `splits` copies of y's f32 length.
            unsafe { main.run(backend)? };
            if let Some(fix) = fix {
                // SAFETY: the workspace, bias and y hold what the fix-up reads and writes.
                unsafe { fix.run(backend)? };
            }
        }
    }
    by.download(backend, p.dtype, "conv y")
}

/// Runs `record` on `p` with fresh inputs from `seed` and compares with float64.
pub fn validate(
    backend: &Backend,
    record: &'static KernelInfo,
    p: &Problem,
    seed: u64,
) -> Result<Checked> {
    validate_split(backend, record, p, seed, Reduce::Auto)
}

/// [`validate()`] with the TMA kernel's reduction forced (see [`output_split`]).
pub fn validate_split(
    backend: &Backend,
    record: &'static KernelInfo,
    p: &Problem,
    seed: u64,
    reduce: Reduce,
) -> Result<Checked> {
    p.check()?;
    // Before any host data is built (the inputs and the float64 check scale with the buffers).
    backend.check_fits(p.bytes()?, &format!("{}: x, w, y and bias", p.label()))?;
    let x = Inputs::random(p, seed)?;
    let got = output_split(backend, record, p, &x, reduce)?;
    let which = elements_to_check(p, seed)?;
    let (compared, worst) = compare(p, &kernel_label(record), &x, &got, &which)?;
    Ok(Checked {
        problem: *p,
        kernel: record.name,
        compared,
        worst,
    })
}
