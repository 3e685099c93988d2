//! `rustile run FAMILY[/VARIANT] --in a.npy b.npy … --out y.npy`: one kernel on the caller's
//! `.npy` arrays ([`crate::families::run`]), on the GPU or (`--sim`) in the simulator.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use crate::error::{Error, Result};
use crate::families::run::RunRequest;
use crate::families::{self, Family};

/// How `<u2` arrays are read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum U2 {
    /// `<u2` arrays are bf16 bit patterns (`torch.bfloat16` viewed as `torch.uint16`)
    Bf16,
}

/// The arguments of `rustile run FAMILY[/VARIANT] …` (none: the main job).
#[derive(Clone, Debug, Default, Args)]
pub struct NpyArgs {
    /// Run one kernel on .npy arrays: gemm, hgemm, copy, strided, transpose (with a variant:
    /// that one; without: the dispatcher or the family's default)
    #[arg(value_name = "FAMILY[/VARIANT]", requires_all = ["inputs", "out"])]
    pub kernel: Option<String>,
    /// The input arrays, in the family's order (gemm/hgemm: A B; copy/strided/transpose: X)
    #[arg(long = "in", value_name = "NPY", num_args = 1.., requires = "kernel")]
    pub inputs: Vec<PathBuf>,
    /// Where the output goes (.npy; bf16 as <u2 bit patterns)
    #[arg(long, value_name = "NPY", requires = "kernel")]
    pub out: Option<PathBuf>,
    /// C before the product (gemm, hgemm with --beta ≠ 0)
    #[arg(long, value_name = "NPY", requires = "kernel")]
    pub c: Option<PathBuf>,
    /// f32 bias added to every row (hgemm)
    #[arg(long, value_name = "NPY", requires = "kernel")]
    pub bias: Option<PathBuf>,
    /// α (gemm, hgemm)
    #[arg(
        long,
        default_value_t = 1.0,
        requires = "kernel",
        allow_negative_numbers = true
    )]
    pub alpha: f32,
    /// β (gemm, hgemm)
    #[arg(
        long,
        default_value_t = 0.0,
        requires = "kernel",
        allow_negative_numbers = true
    )]
    pub beta: f32,
    /// ReLU after the bias (hgemm)
    #[arg(long, requires = "kernel")]
    pub relu: bool,
    /// Input stride (strided)
    #[arg(long, value_name = "S", requires = "kernel")]
    pub stride: Option<usize>,
    /// Read <u2 arrays as bf16 bit patterns
    #[arg(long, value_enum, value_name = "bf16", requires = "kernel")]
    pub dtype: Option<U2>,
    /// In the simulator even when there is a GPU
    #[arg(long = "sim", requires = "kernel")]
    pub sim: bool,
}

/// `FAMILY[/VARIANT]` split and the family found.
pub fn family_of(id: &str) -> Result<(&'static dyn Family, Option<String>)> {
    let (name, variant) = match id.split_once('/') {
        Some((f, v)) => (f, Some(v.to_string())),
        None => (id, None),
    };
    let family = families::find(name).ok_or_else(|| {
        let names: Vec<_> = families::all().iter().map(|f| f.name()).collect();
        Error::Usage(format!(
            "unknown family `{name}` (families: {})",
            names.join(", ")
        ))
    })?;
    Ok((family, variant))
}

/// Reads the arrays, runs the kernel, writes `--out`.
pub fn run(args: &NpyArgs) -> Result<()> {
    let id = args.kernel.as_deref().unwrap_or_default();
    let (family, variant) = family_of(id)?;
    let out = args
        .out
        .as_ref()
        .ok_or_else(|| Error::Usage("`rustile run FAMILY` needs --out".into()))?;
    let mut req = RunRequest::read(
        variant,
        &args.inputs,
        args.c.as_deref(),
        args.bias.as_deref(),
        args.dtype == Some(U2::Bf16),
    )?;
    req.alpha = args.alpha;
    req.beta = args.beta;
    req.relu = args.relu;
    req.stride = args.stride;
    let backend = super::suite::backend_for(args.sim, "running")?;
    let y = family.run_npy(&backend, &req)?;
    y.write(out)?;
    println!(
        "{id} on {}: {} {:?} -> {}",
        backend.name(),
        y.data.dtype().name(),
        y.shape,
        out.display()
    );
    Ok(())
}
