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
    /// The matrices that went through aligned scratch (the padded path).
    pub padded: PadPlan,
    /// Elements compared with float64.
    pub checked: usize,
}

/// What ran: the kernel and the matrices it read or wrote through aligned scratch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ran {
    /// The kernel.
    pub variant: Variant,
    /// The padded matrices.
    pub padded: PadPlan,
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
    validate_with(gpu, &Options::variant(variant), p, with_bias, seed)
}

/// [`validate()`] with every launch option given (the padding policy, for one).
pub fn validate_with(
    gpu: &Gpu,
    opts: &Options,
    p: &Problem,
    with_bias: bool,
    seed: u64,
) -> Result<Checked> {
    p.check()?;
    gpu.check_fits(p.bytes()?, &format!("hgemm {}: A, B and C", p.shape()))?;
    let x = Inputs::random(p, with_bias, seed)?;
    let (got, ran) = gpu_output_with(gpu, opts, p, &x)?;
    finish(p, &x, got, ran, seed)
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
    gpu_output_with(gpu, &Options::variant(variant), p, x).map(|(got, ran)| (got, ran.variant))
}

/// [`gpu_output`] with every launch option given; returns what ran, padding included.
pub fn gpu_output_with(
    gpu: &Gpu,
    opts: &Options,
    p: &Problem,
    x: &Inputs,
) -> Result<(Vec<f32>, Ran)> {
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
            let used = run_with(gpu, opts, p, &a, &b, &mut Out::Half(&mut c), bias.as_ref())?;
            let bits = gpu.download(&c, "hgemm C")?;
            (bits.iter().map(|&h| widen(p.ty, h)).collect(), used)
        }
        DType::F32 => {
            let init = x.c_before_f32(p);
            let mut c = gpu.upload(&init, "hgemm C")?;
            let used = run_with(gpu, opts, p, &a, &b, &mut Out::F32(&mut c), bias.as_ref())?;
            (gpu.download(&c, "hgemm C")?, used)
        }
    })
}

/// One prepared launch with `opts` into `c`, returning what ran.
fn run_with(
    gpu: &Gpu,
    opts: &Options,
    p: &Problem,
    a: &impl DevicePtr<u16>,
    b: &impl DevicePtr<u16>,
    c: &mut Out<'_>,
    bias: Option<&cudarc::driver::CudaSlice<f32>>,
) -> Result<Ran> {
    let bias = bias.map(|b| b as &dyn DevicePtr<f32>);
    let prep = prepare_with(gpu, opts, p, a, b, c, bias)?;
    prep.launch(gpu.stream(), a, b, c, bias)?;
    Ok(Ran {
        variant: prep.variant(),
        padded: prep.padding(),
    })
}

pub(super) fn finish(
    p: &Problem,
    x: &Inputs,
    got: Vec<f32>,
    ran: Ran,
    seed: u64,
) -> Result<Checked> {
    let which = elements_to_check(p, 4096, seed);
    if crate::families::run::is_capturing() {
        capture_case(p, x, &got, which.len() == p.m * p.n)?;
    }
    let checked = compare(p, x, &got, &which)?;
    Ok(Checked {
        problem: *p,
        variant: ran.variant,
        padded: ran.padded,
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
    validate_sim_with(sim, variant, tuning, Padding::Never, p, with_bias, seed)
}

/// [`validate_sim_tuned`] under a padding policy: with [`Padding::Auto`] or
/// [`Padding::Inputs`], `mma_pipeline` takes any pitch through the padded path as the GPU runs
/// it (the same [`PadPlan`] and [`Copy2d`]s, done on the host), with the scratch's pad columns
/// NaN, so a kernel that read one would fail.
pub fn validate_sim_with(
    sim: &crate::sim::Simulator,
    variant: Variant,
    tuning: Option<&Tuning>,
    padding: Padding,
    p: &Problem,
    with_bias: bool,
    seed: u64,
) -> Result<Checked> {
    p.check()?;
    sim_supports_with(variant, tuning, padding, p)?;
    let scratch = PadPlan::new(p, variant, padding, [0, 0]).scratch_bytes(p)?;
    let bytes = crate::check::total_bytes("hgemm", &[(p.bytes()?, 1), (scratch, 1)])?;
    sim.check_fits(bytes, &format!("hgemm {}: A, B, C and scratch", p.shape()))?;
    let x = Inputs::random(p, with_bias, seed)?;
    let (got, padded) = sim_output_with(sim, variant, tuning, padding, p, &x)?;
    finish(p, &x, got, Ran { variant, padded }, seed)
}

/// Whether the simulator runs `variant` (at `tuning`) on `p`: a typed refusal if not.
pub fn check_sim(variant: Variant, tuning: Option<&Tuning>, p: &Problem) -> Result<()> {
    p.check()?;
    sim_supports(variant, tuning, p)
}

/// Whether the simulator can run `variant` (with `tuning`) on `p` in place: not `wgmma_ws`
/// (no model), and `mma_pipeline` only on pitches that are multiples of 8 elements and, for a
/// tuning configuration, on the types it is built for; else [`Error::Unsupported`].
pub fn sim_supports(variant: Variant, tuning: Option<&Tuning>, p: &Problem) -> Result<()> {
    sim_supports_with(variant, tuning, Padding::Never, p)
}

/// [`sim_supports`] under a padding policy: `mma_pipeline` needs aligned pitches only where
/// `padding` does not copy the operand.
pub fn sim_supports_with(
    variant: Variant,
    tuning: Option<&Tuning>,
    padding: Padding,
    p: &Problem,
) -> Result<()> {
    match variant {
        Variant::Mma => {}
        Variant::MmaPipeline => {
            if !PadPlan::new(p, variant, padding, [0, 0]).apply(p).tma_ok([0, 0]) {
                return Err(Error::Unsupported {
                    kernel: "hgemm/mma_pipeline".into(),
                    what: "pitches must be multiples of 8 elements (padding is off)".into(),
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
    sim_output_with(sim, variant, tuning, Padding::Never, p, x).map(|(got, _)| got)
}

/// `rows` copied by `copy` (if the matrix is padded) into scratch of `len` elements that holds
/// `poison` elsewhere, as the padded path stages it; the source itself otherwise.
fn staged<'a, T: Copy>(
    copy: Option<Copy2d>,
    src: &'a [T],
    len: usize,
    poison: T,
) -> Result<std::borrow::Cow<'a, [T]>> {
    Ok(match copy {
        None => std::borrow::Cow::Borrowed(src),
        Some(c) => {
            let mut v = vec![poison; len.max(1)];
            c.host(src, &mut v)?;
            std::borrow::Cow::Owned(v)
        }
    })
}

/// [`sim_output`] under a padding policy; also returns what was padded. Scratch A and B hold
/// the caller's rows and NaN in the pad columns; scratch C holds NaN, and the caller's C rows
/// when β ≠ 0 (the epilogue reads them); the result is scratch C's rows copied back over the
/// caller's C.
pub fn sim_output_with(
    sim: &crate::sim::Simulator,
    variant: Variant,
    tuning: Option<&Tuning>,
    padding: Padding,
    p: &Problem,
    x: &Inputs,
) -> Result<(Vec<f32>, PadPlan)> {
    const NAN16: u16 = 0x7FFF; // NaN in f16 and in bf16
    let pad = PadPlan::new(p, variant, padding, [0, 0]);
    let q = pad.apply(p);
    let info = variant.kernel(tuning);
    let [la, lb, lc] = q.lens()?;
    let a_in = staged(pad.copy(p, Operand::A), &x.a, la, NAN16)?;
    let b_in = staged(pad.copy(p, Operand::B), &x.b, lb, NAN16)?;
    let a = sim.alloc::<u16>(a_in.len().max(1), "A")?;
    sim.write(&a, &a_in)?;
    let b = sim.alloc::<u16>(b_in.len().max(1), "B")?;
    sim.write(&b, &b_in)?;
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
            mma_args(&q, [a.addr(), b.addr(), c, bias]),
        )
    };
    // C in: the caller's (as `Inputs` says), staged into scratch when padded (its rows only
    // when β ≠ 0, as the GPU path copies them only then); C out: scratch's rows copied back.
    let c_in = pad.copy(p, Operand::C).filter(|_| p.beta != 0.0);
    let c_out = pad.copy(p, Operand::C).map(Copy2d::reversed);
    let got = match p.out {
        DType::F16 | DType::Bf16 => {
            let init = x.c_before_half(p);
            let cq_in = match (pad.c, c_in) {
                (None, _) => init.clone(),
                (Some(_), None) => vec![NAN16; lc.max(1)],
                (Some(_), copy) => staged(copy, &init, lc, NAN16)?.into_owned(),
            };
            let c = sim.alloc::<u16>(cq_in.len().max(1), "C")?;
            sim.write(&c, &cq_in)?;
            plan(c.addr()).simulate(sim)?;
            let mut out = sim.read(&c)?;
            if let Some(copy) = c_out {
                let mut caller = init;
                copy.host(&out, &mut caller)?;
                out = caller;
            }
            out.iter().map(|&h| widen(p.ty, h)).collect()
        }
        DType::F32 => {
            let init = x.c_before_f32(p);
            let cq_in = match (pad.c, c_in) {
                (None, _) => init.clone(),
                (Some(_), None) => vec![f32::NAN; lc.max(1)],
                (Some(_), copy) => staged(copy, &init, lc, f32::NAN)?.into_owned(),
            };
            let c = sim.alloc::<f32>(cq_in.len().max(1), "C")?;
            sim.write(&c, &cq_in)?;
            plan(c.addr()).simulate(sim)?;
            let mut out = sim.read(&c)?;
            if let Some(copy) = c_out {
                let mut caller = init;
                copy.host(&out, &mut caller)?;
                out = caller;
            }
            out
        }
    };
    Ok((got, pad))
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
