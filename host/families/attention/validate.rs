//! Validated runs on either back end: fresh inputs, outputs poisoned with NaN, one forward
//! (on the GPU through [`prepare`](super::prepare()) — the front door's path — and in the
//! simulator through the same plans), then the float64 comparison.

use cudarc::driver::{CudaSlice, CudaView};

use crate::backend::Backend;
use crate::error::Result;
use crate::gpu::Gpu;
use crate::sim::{SimBuf, Simulator};

use super::*;

/// Result of one validated case.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Checked {
    /// The problem.
    pub problem: Problem,
    /// The record that ran (`mma_d64`, `naive`, …).
    pub kernel: &'static str,
    /// Rows compared with float64, and the worst error against its bound.
    pub comparison: Comparison,
}

/// Runs `variant` (`None`: the selected one) on `p` with fresh inputs from `seed` and compares
/// with float64. `packed`: Q, K and V are slices of one packed tensor (the problem's layout
/// must be [`Layout::packed_qkv`]).
pub fn validate(
    backend: &Backend,
    variant: Option<Variant>,
    p: &Problem,
    packed: bool,
    seed: u64,
) -> Result<Checked> {
    p.check()?;
    // Before any host data is built: the inputs (and the float64 check) scale with the device
    // buffers.
    backend.check_fits(p.bytes()?, &format!("{}: Q, K, V, O and LSE", p.label()))?;
    let x = Inputs::random(p, packed, seed)?;
    let out = outputs(backend, variant, p, &x)?;
    let rows = rows_to_check(p, seed);
    let comparison = compare(p, &x, &out.o, &out.lse, &rows)?;
    Ok(Checked {
        problem: *p,
        kernel: out.kernel,
        comparison,
    })
}

/// What one forward wrote.
#[derive(Clone, Debug)]
pub struct Outputs {
    /// O's whole buffer (its span), bits; poisoned with [`POISON`] before the launch.
    pub o: Vec<u16>,
    /// LSE, poisoned with NaN before the launch.
    pub lse: Vec<f32>,
    /// The record that ran.
    pub kernel: &'static str,
}

/// Runs one forward of `variant` (`None`: the selected one) on `backend` over the inputs `x`
/// (made for a problem with `p`'s spans) into freshly poisoned outputs, and returns them.
pub fn outputs(
    backend: &Backend,
    variant: Option<Variant>,
    p: &Problem,
    x: &Inputs,
) -> Result<Outputs> {
    let (o, lse, kernel) = match backend {
        Backend::Gpu(gpu) => run_gpu(gpu, variant, p, x)?,
        Backend::Simulator(sim) => run_sim(sim, variant, p, x)?,
    };
    Ok(Outputs { o, lse, kernel })
}

type Ran = (Vec<u16>, Vec<f32>, &'static str);

fn run_gpu(gpu: &Gpu, variant: Option<Variant>, p: &Problem, x: &Inputs) -> Result<Ran> {
    let spans = p.spans()?;
    let bufs: Vec<CudaSlice<u16>> = x
        .bufs
        .iter()
        .map(|b| gpu.upload(b, "attention input"))
        .collect::<Result<_>>()?;
    let view = |t: usize| -> CudaView<'_, u16> {
        let (buf, off) = x.at[t];
        bufs[buf].slice(off..)
    };
    let (q, k, v) = (view(0), view(1), view(2));
    let mut o = gpu.upload(&vec![POISON; spans[3]], "attention O")?;
    let mut lse = gpu.upload(&vec![f32::NAN; p.shape.lse_len()], "attention LSE")?;
    fn input<'a>(dtype: rustile_kernels::registry::DType, data: &'a CudaView<'_, u16>) -> Input<'a> {
        Input { dtype, data }
    }
    let record = run(
        gpu,
        variant,
        p,
        &mut Buffers {
            q: input(p.dtype, &q),
            k: input(p.dtype, &k),
            v: input(p.dtype, &v),
            o: Output {
                dtype: p.dtype,
                data: &mut o,
            },
            lse: &mut lse,
        },
    )?;
    Ok((
        gpu.download(&o, "attention O")?,
        gpu.download(&lse, "attention LSE")?,
        record.name,
    ))
}

fn run_sim(sim: &Simulator, variant: Option<Variant>, p: &Problem, x: &Inputs) -> Result<Ran> {
    let spans = p.spans()?;
    let mut owned: Vec<SimBuf<u16>> = Vec::new();
    for b in &x.bufs {
        let buf = sim.alloc::<u16>(b.len(), "attention input")?;
        sim.write(&buf, b)?;
        owned.push(buf);
    }
    let o = sim.alloc::<u16>(spans[3], "attention O")?;
    sim.write(&o, &vec![POISON; spans[3]])?;
    let lse = sim.alloc::<f32>(p.shape.lse_len(), "attention LSE")?;
    sim.write(&lse, &vec![f32::NAN; p.shape.lse_len()])?;
    let run = || -> Result<Ran> {
        let view = |t: usize| {
            let (buf, off) = x.at[t];
            (owned[buf].len() - off, owned[buf].addr() + 2 * off as u64)
        };
        let [(ql, qa), (kl, ka), (vl, va)] = [view(0), view(1), view(2)];
        let ops = Operands::of(
            p,
            [ql, kl, vl, o.len(), lse.len()],
            [qa, ka, va, o.addr(), lse.addr()],
        );
        let (_, record) = resolve(Target::Simulator, variant, p, &ops)?;
        let scratch = match scratch_len(p, record, 0)? {
            0 => None,
            n => Some(sim.alloc::<f32>(n, "attention score scratch")?),
        };
        let addrs = Addrs::new(ops.addrs(), scratch.as_ref().map_or(0, |s| s.addr()));
        let result = plans(p, record, &addrs)
            .and_then(|plans| plans.iter().try_for_each(|plan| plan.simulate(sim)));
        if let Some(s) = scratch {
            sim.free(s);
        }
        result?;
        Ok((sim.read(&o)?, sim.read(&lse)?, record.name))
    };
    let ran = run();
    owned.into_iter().for_each(|b| sim.free(b));
    sim.free(o);
    sim.free(lse);
    ran
}
