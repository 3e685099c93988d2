//! Validated runs on the GPU and in the simulator.

use cudarc::driver::DevicePtr;
use rustile_kernels::hgemm::v02_mma_pipeline::Tuning;
use rustile_kernels::registry::DType;

use crate::error::{Error, Result};
use crate::gpu::Gpu;

use super::*;

/// Result of one validated case.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Checked {
    /// The problem.
    pub problem: Problem,
    /// The kernel.
    pub variant: Variant,
    /// Elements compared with float64.
    pub checked: usize,
}

/// Runs `variant` on fresh random inputs (poisoned output when β = 0, bias when `with_bias`)
/// and compares with float64. The inputs' seed changes every call.
pub fn validate(
    gpu: &Gpu,
    variant: Option<Variant>,
    p: &Problem,
    with_bias: bool,
    seed: u64,
) -> Result<Checked> {
    p.check()?;
    gpu.check_fits(p.bytes()?, &format!("hgemm {}: A, B and C", p.shape()))?;
    let x = Inputs::random(p, with_bias, seed)?;
    let (got, used) = gpu_output(gpu, variant, p, &x)?;
    finish(p, &x, got, used, seed)
}

/// Runs `variant` (`None`: the selected one) once on the GPU over the inputs `x` (made for
/// `p`) into C as [`Inputs`] says (NaN when β = 0) and returns C widened to f32 and the
/// variant that ran. The caller checked `p` and its bytes.
pub fn gpu_output(
    gpu: &Gpu,
    variant: Option<Variant>,
    p: &Problem,
    x: &Inputs,
) -> Result<(Vec<f32>, Variant)> {
    let a = gpu.upload(&x.a, "hgemm A")?;
    let b = gpu.upload(&x.b, "hgemm B")?;
    let bias = match &x.bias {
        Some(v) => Some(gpu.upload(v, "hgemm bias")?),
        None => None,
    };
    // β = 0: C starts as NaN, so an element the kernel skips cannot pass.
    Ok(match p.out {
        DType::F16 | DType::Bf16 => {
            let init = x.c_before_half(p);
            let mut c = gpu.upload(&init, "hgemm C")?;
            let used = run(
                gpu,
                variant,
                p,
                &a,
                &b,
                &mut Out::Half(&mut c),
                bias.as_ref().map(|b| b as &dyn DevicePtr<f32>),
            )?;
            let bits = gpu.download(&c, "hgemm C")?;
            (bits.iter().map(|&h| widen(p.ty, h)).collect(), used)
        }
        DType::F32 => {
            let init = x.c_before_f32(p);
            let mut c = gpu.upload(&init, "hgemm C")?;
            let used = run(
                gpu,
                variant,
                p,
                &a,
                &b,
                &mut Out::F32(&mut c),
                bias.as_ref().map(|b| b as &dyn DevicePtr<f32>),
            )?;
            (gpu.download(&c, "hgemm C")?, used)
        }
    })
}

pub(super) fn finish(
    p: &Problem,
    x: &Inputs,
    got: Vec<f32>,
    variant: Variant,
    seed: u64,
) -> Result<Checked> {
    let which = elements_to_check(p, 4096, seed);
    if crate::families::run::is_capturing() {
        capture_case(p, x, &got, which.len() == p.m * p.n)?;
    }
    let checked = compare(p, x, &got, &which)?;
    Ok(Checked {
        problem: *p,
        variant,
        checked,
    })
}

/// Runs an `mma.sync` variant in rustile's simulator on fresh random inputs and compares every
/// element with float64 (the CPU-side check of the sm_80 kernels; `wgmma` has no simulator
/// model). β ≠ 0 reads C's random old values; otherwise C starts as NaN.
pub fn validate_sim(
    sim: &crate::sim::Simulator,
    variant: Variant,
    p: &Problem,
    with_bias: bool,
    seed: u64,
) -> Result<Checked> {
    validate_sim_tuned(sim, variant, None, p, with_bias, seed)
}

/// Runs an `mma.sync` variant once in the simulator, validated against float64 like
/// [`validate_sim`], and returns what its memory accesses would cost: global sectors per
/// request and shared-memory wavefronts (bank conflicts) per instruction, by source line.
pub fn analyze_sim(
    variant: Variant,
    tuning: Option<&Tuning>,
    p: &Problem,
    seed: u64,
) -> Result<crate::sim::Analysis> {
    let sim = crate::sim::Simulator::default();
    sim.start_analysis();
    validate_sim_tuned(&sim, variant, tuning, p, false, seed)?;
    Ok(sim.take_analysis().unwrap_or_default())
}

/// [`validate_sim`] of a tuning configuration of `mma_pipeline` (`None`: the default one).
pub fn validate_sim_tuned(
    sim: &crate::sim::Simulator,
    variant: Variant,
    tuning: Option<&Tuning>,
    p: &Problem,
    with_bias: bool,
    seed: u64,
) -> Result<Checked> {
    check_sim(variant, tuning, p)?;
    sim.check_fits(p.bytes()?, &format!("hgemm {}: A, B and C", p.shape()))?;
    let x = Inputs::random(p, with_bias, seed)?;
    let got = sim_output(sim, variant, tuning, p, &x)?;
    finish(p, &x, got, variant, seed)
}

/// Whether the simulator runs `variant` (at `tuning`) on `p`: a typed refusal if not.
pub fn check_sim(variant: Variant, tuning: Option<&Tuning>, p: &Problem) -> Result<()> {
    p.check()?;
    sim_supports(variant, tuning, p)
}

/// Whether the simulator can run `variant` (with `tuning`) on `p`: not `wgmma_ws` (no model),
/// and `mma_pipeline` only on pitches that are multiples of 8 elements and, for a tuning
/// configuration, on the types it is built for; else [`Error::Unsupported`].
pub fn sim_supports(variant: Variant, tuning: Option<&Tuning>, p: &Problem) -> Result<()> {
    match variant {
        Variant::Mma => {}
        Variant::MmaPipeline => {
            if !p.tma_ok([0, 0]) {
                return Err(Error::Unsupported {
                    kernel: "hgemm/mma_pipeline".into(),
                    what: "pitches must be multiples of 8 elements".into(),
                });
            }
            // A tuning configuration exists for f16 in and out only: a typed refusal naming it.
            pipeline_geometry(p, tuning)?;
        }
        Variant::WgmmaWs => {
            return Err(Error::Unsupported {
                kernel: "hgemm/wgmma_ws".into(),
                what: "wgmma, TMA and mbarrier are not modelled by the simulator".into(),
            })
        }
    }
    Ok(())
}

/// Runs `variant` (an `mma.sync` one; `tuning`: an `mma_pipeline` configuration) once in the
/// simulator over the inputs `x` (made for `p`) into C as [`Inputs`] says (NaN when β = 0)
/// and returns C widened to f32. The caller checked `p`, the variant and the bytes
/// ([`validate_sim_tuned`]).
pub fn sim_output(
    sim: &crate::sim::Simulator,
    variant: Variant,
    tuning: Option<&Tuning>,
    p: &Problem,
    x: &Inputs,
) -> Result<Vec<f32>> {
    let info = variant.kernel(tuning);
    let [la, lb, lc] = p.lens()?;
    let a = sim.alloc::<u16>(la.max(1), "A")?;
    sim.write(&a, &x.a)?;
    let b = sim.alloc::<u16>(lb.max(1), "B")?;
    sim.write(&b, &x.b)?;
    let bias = match &x.bias {
        Some(v) => {
            let buf = sim.alloc::<f32>(v.len(), "bias")?;
            sim.write(&buf, v)?;
            buf.addr()
        }
        None => 0,
    };
    let entry = entry_of(info, p)?;
    // Block, shared bytes and grid from the record (both `mma` kernels are tiled launches).
    let grid = info
        .launch
        .tile_grid(p.m as u64, p.n as u64)
        .unwrap_or((1, 1, 1));
    let plan = |c: u64| {
        crate::launch::LaunchPlan::new(
            info,
            entry,
            grid,
            mma_args(p, [a.addr(), b.addr(), c, bias]),
        )
    };
    Ok(match p.out {
        DType::F16 | DType::Bf16 => {
            let c = sim.alloc::<u16>(lc, "C")?;
            let init = x.c_before_half(p);
            sim.write(&c, &init)?;
            plan(c.addr()).simulate(sim)?;
            sim.read(&c)?.iter().map(|&h| widen(p.ty, h)).collect()
        }
        DType::F32 => {
            let c = sim.alloc::<f32>(lc, "C")?;
            let init = x.c_before_f32(p);
            sim.write(&c, &init)?;
            plan(c.addr()).simulate(sim)?;
            sim.read(&c)?
        }
    })
}

/// Captures a case's inputs, C before and after, and (when every element is checked) the
/// float64 reference rounded to f32, for the validation dump ([`crate::families::run`]).
fn capture_case(p: &Problem, x: &Inputs, got: &[f32], all: bool) -> Result<()> {
    use crate::families::run::{capture, pitched, Data};
    let [la, lb, lc] = p.lens()?;
    let b_rows = match p.b {
        BLayout::RowMajor => p.k,
        BLayout::Transposed => p.n,
    };
    capture("a", &pitched(p.m, p.lda, la), || {
        Data::from_bits16(p.ty, x.a.clone())
    });
    capture("b", &pitched(b_rows, p.ldb, lb), || {
        Data::from_bits16(p.ty, x.b.clone())
    });
    if let Some(bias) = &x.bias {
        capture("bias", &[bias.len()], || Data::F32(bias.clone()));
    }
    capture("c_before", &pitched(p.m, p.ldc, lc), || {
        Data::F32(x.c_before_f32(p))
    });
    capture("out", &pitched(p.m, p.ldc, lc), || Data::F32(got.to_vec()));
    if all {
        capture("reference", &[p.m, p.n], || {
            let r = (0..p.m)
                .flat_map(|i| (0..p.n).map(move |j| reference_at(p, x, i, j).0 as f32))
                .collect();
            Data::F32(r)
        });
    }
    Ok(())
}
