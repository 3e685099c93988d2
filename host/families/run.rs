//! `rustile run FAMILY[/VARIANT] --in a.npy b.npy … --out y.npy`: one kernel on the caller's
//! own `.npy` arrays, on the GPU or in the simulator; and the tensors a validation case
//! captures for its dump ([`capture`], [`capturing`]).
//!
//! Element types as NumPy stores them: `<f4` (f32), `<f2` (f16), and bf16 either as `<u2`
//! bit patterns (what `torch.Tensor.view(torch.uint16).numpy()` gives: NumPy has no bf16, so
//! the caller says `--dtype bf16`) or as ml_dtypes' `bfloat16` (descr `<V2`). Anything else,
//! Fortran order, or a shape the family refuses is a typed error before anything is allocated
//! on the device. Each family reads its own operands in its folder's `npy_run.rs`
//! ([`super::Family::run_npy`]).

use std::cell::RefCell;
use std::path::{Path, PathBuf};

use rustile_kernels::registry::{DType, Family as Fam, KernelInfo, KERNELS};

use crate::error::{Error, Result};

/// A tensor's elements, in the type the kernel reads or writes.
#[derive(Clone, Debug, PartialEq)]
pub enum Data {
    /// f32.
    F32(Vec<f32>),
    /// f16.
    F16(Vec<half::f16>),
    /// bf16 bit patterns.
    Bf16(Vec<u16>),
}

impl Data {
    /// The element type.
    pub fn dtype(&self) -> DType {
        match self {
            Data::F32(_) => DType::F32,
            Data::F16(_) => DType::F16,
            Data::Bf16(_) => DType::Bf16,
        }
    }

    /// Elements.
    pub fn len(&self) -> usize {
        match self {
            Data::F32(v) => v.len(),
            Data::F16(v) => v.len(),
            Data::Bf16(v) => v.len(),
        }
    }

    /// Whether it holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// 16-bit elements as their bit patterns (f16 or bf16), `None` for f32.
    pub fn bits16(&self) -> Option<Vec<u16>> {
        match self {
            Data::F32(_) => None,
            Data::F16(v) => Some(v.iter().map(|x| x.to_bits()).collect()),
            Data::Bf16(v) => Some(v.clone()),
        }
    }

    /// 16-bit bit patterns of type `ty` (f16 or bf16) as [`Data`].
    pub fn from_bits16(ty: DType, bits: Vec<u16>) -> Data {
        match ty {
            DType::Bf16 => Data::Bf16(bits),
            _ => Data::F16(bits.into_iter().map(half::f16::from_bits).collect()),
        }
    }
}

/// A named array: shape (C order) and elements.
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    /// What it is (`a`, `out`, the file it came from).
    pub name: String,
    /// Dimensions.
    pub shape: Vec<usize>,
    /// Elements.
    pub data: Data,
}

impl Tensor {
    /// A tensor; `data` must hold `shape`'s product of elements (checked when written).
    pub fn new(name: impl Into<String>, shape: Vec<usize>, data: Data) -> Self {
        Self {
            name: name.into(),
            shape,
            data,
        }
    }

    /// Writes it as `.npy` (bf16 as `<u2` bit patterns).
    pub fn write(&self, path: &Path) -> Result<()> {
        match &self.data {
            Data::F32(v) => crate::npy::write(path, &self.shape, v),
            Data::F16(v) => crate::npy::write(path, &self.shape, v),
            Data::Bf16(v) => crate::npy::write(path, &self.shape, v),
        }
    }

    /// Reads an `.npy` file: `<f4`, `<f2`, `<V2` (ml_dtypes bf16) or `<u2` (bf16 bits when
    /// `u2_is_bf16`, else refused, naming `--dtype bf16`).
    pub fn read(path: &Path, u2_is_bf16: bool) -> Result<Self> {
        let bytes = crate::npy::read_file(path)?;
        let named = |e: Error| match e {
            Error::InvalidArgument { what, .. } => Error::InvalidArgument {
                kernel: format!("npy {}", path.display()),
                what,
            },
            e => e,
        };
        let descr = crate::npy::descr(&bytes).map_err(named)?;
        let with = |d: &str| bytes_with_descr(&bytes, &descr, d);
        let (shape, data) = match descr.as_str() {
            "<f4" => crate::npy::from_bytes_as::<f32>(&bytes).map(|(s, v)| (s, Data::F32(v))),
            "<f2" => crate::npy::from_bytes_as(&bytes).map(|(s, v)| (s, Data::F16(v))),
            "<u2" if u2_is_bf16 => {
                crate::npy::from_bytes_as::<u16>(&bytes).map(|(s, v)| (s, Data::Bf16(v)))
            }
            "<V2" | "|V2" => {
                crate::npy::from_bytes_as::<u16>(&with("<u2")).map(|(s, v)| (s, Data::Bf16(v)))
            }
            "<u2" => Err(Error::InvalidArgument {
                kernel: String::new(),
                what: "uint16 data ('<u2'): pass `--dtype bf16` if these are bf16 bit patterns"
                    .into(),
            }),
            d => Err(Error::InvalidArgument {
                kernel: String::new(),
                what: format!(
                    "dtype '{d}' is not supported: f32 ('<f4'), f16 ('<f2'), bf16 ('<u2' with \
                     `--dtype bf16`, or ml_dtypes bfloat16 '<V2')"
                ),
            }),
        }
        .map_err(named)?;
        Ok(Self::new(path.display().to_string(), shape, data))
    }
}

/// `bytes` with its header's type string `from` replaced by `to` (same length), so the reader
/// of `to` accepts it.
fn bytes_with_descr(bytes: &[u8], from: &str, to: &str) -> Vec<u8> {
    let mut out = bytes.to_vec();
    let needle = format!("'{from}'");
    if let Some(at) = out
        .windows(needle.len())
        .position(|w| w == needle.as_bytes())
    {
        out[at + 1..at + 1 + to.len()].copy_from_slice(to.as_bytes());
    }
    out
}

/// What `rustile run` hands a family: the variant named (if any), the arrays read, and the
/// operation's options.
#[derive(Clone, Debug, Default)]
pub struct RunRequest {
    /// `VARIANT` of `FAMILY/VARIANT`; `None`: the family's dispatcher (or default variant).
    pub variant: Option<String>,
    /// The `--in` arrays, in order.
    pub inputs: Vec<Tensor>,
    /// `--c`: C before the product (GEMM with β ≠ 0).
    pub c: Option<Tensor>,
    /// `--bias`.
    pub bias: Option<Tensor>,
    /// `--alpha` (GEMM).
    pub alpha: f32,
    /// `--beta` (GEMM).
    pub beta: f32,
    /// `--relu` (hgemm).
    pub relu: bool,
    /// `--causal` (attention).
    pub causal: bool,
    /// `--stride` (strided gather, conv).
    pub stride: Option<usize>,
    /// `--pad` (conv).
    pub pad: Option<usize>,
}

impl RunRequest {
    /// Reads every named file ([`Tensor::read`]).
    #[allow(clippy::too_many_arguments)]
    pub fn read(
        variant: Option<String>,
        inputs: &[PathBuf],
        c: Option<&Path>,
        bias: Option<&Path>,
        u2_is_bf16: bool,
    ) -> Result<Self> {
        Ok(Self {
            variant,
            inputs: inputs
                .iter()
                .map(|p| Tensor::read(p, u2_is_bf16))
                .collect::<Result<_>>()?,
            c: c.map(|p| Tensor::read(p, u2_is_bf16)).transpose()?,
            bias: bias.map(|p| Tensor::read(p, u2_is_bf16)).transpose()?,
            alpha: 1.0,
            beta: 0.0,
            ..Self::default()
        })
    }

    /// Exactly `n` `--in` arrays, named `names` in errors, or [`Error::InvalidArgument`].
    pub fn inputs(&self, kernel: &str, names: &[&str]) -> Result<&[Tensor]> {
        if self.inputs.len() != names.len() {
            return Err(bad(
                kernel,
                format!(
                    "takes {} --in arrays ({}), got {}",
                    names.len(),
                    names.join(", "),
                    self.inputs.len()
                ),
            ));
        }
        Ok(&self.inputs)
    }

    /// The registry's kernel `family/VARIANT`, or `default` when no variant is named.
    pub fn kernel(&self, family: Fam, default: &'static KernelInfo) -> Result<&'static KernelInfo> {
        let Some(v) = &self.variant else {
            return Ok(default);
        };
        rustile_kernels::registry::find(family, v).ok_or_else(|| {
            let names: Vec<_> = KERNELS
                .iter()
                .filter(|k| k.family == family)
                .map(|k| k.name)
                .collect();
            Error::UnknownKernel {
                family: format!("{} (variants: {})", family.name(), names.join(", ")),
                variant: v.clone(),
                dtype: "any",
            }
        })
    }
}

/// [`Error::InvalidArgument`] of `kernel`.
pub fn bad(kernel: &str, what: String) -> Error {
    Error::InvalidArgument {
        kernel: kernel.to_string(),
        what,
    }
}

/// `t`'s dimensions when it has `ndim` of them, else [`Error::InvalidArgument`] naming `role`.
pub fn dims<'a>(kernel: &str, role: &str, t: &'a Tensor, ndim: usize) -> Result<&'a [usize]> {
    if t.shape.len() != ndim {
        return Err(bad(
            kernel,
            format!(
                "{role} ({}) has shape {:?}: wants {ndim} dimensions",
                t.name, t.shape
            ),
        ));
    }
    Ok(&t.shape)
}

/// `(m, n, k)` of a product of `a` (M × K) and `b` (K × N), the two `--in` arrays of `req`,
/// or [`Error::InvalidArgument`] (count, rank, K).
pub fn matmul_dims<'a>(
    kernel: &str,
    req: &'a RunRequest,
) -> Result<(&'a Tensor, &'a Tensor, [usize; 3])> {
    let [a, b] = req.inputs(kernel, &["a", "b"])? else {
        unreachable!("inputs() checked the count")
    };
    let (&[m, ka], &[kb, n]) = (dims(kernel, "A", a, 2)?, dims(kernel, "B", b, 2)?) else {
        unreachable!("dims() checked the rank")
    };
    if ka != kb {
        return Err(bad(
            kernel,
            format!("A is {m}×{ka} but B is {kb}×{n}: K differs"),
        ));
    }
    Ok((a, b, [m, n, ka]))
}

/// Every tensor must hold `dtype`, else [`Error::InvalidArgument`].
pub fn same_dtype(kernel: &str, dtype: DType, ts: &[&Tensor]) -> Result<()> {
    match ts.iter().find(|t| t.data.dtype() != dtype) {
        Some(t) => Err(bad(
            kernel,
            format!(
                "{} holds {}, the others {}: one element type for all",
                t.name,
                t.data.dtype().name(),
                dtype.name()
            ),
        )),
        None => Ok(()),
    }
}

thread_local! {
    static CAPTURED: RefCell<Option<Vec<Tensor>>> = const { RefCell::new(None) };
}

/// Whether a validation case is being captured on this thread ([`capturing`]): a check calls
/// [`capture`] only then, so an uncaptured run copies nothing.
pub fn is_capturing() -> bool {
    CAPTURED.with(|c| c.borrow().is_some())
}

/// Records `name` (an input, the output, the reference) for the dump of the case running on
/// this thread, if one is being captured; `data` is built only then.
pub fn capture(name: &str, shape: &[usize], data: impl FnOnce() -> Data) {
    CAPTURED.with(|c| {
        if let Some(v) = c.borrow_mut().as_mut() {
            v.push(Tensor::new(name, shape.to_vec(), data()));
        }
    });
}

/// Runs `f` with capture on, and returns what it returned and the tensors it captured.
pub fn capturing<R>(f: impl FnOnce() -> R) -> (R, Vec<Tensor>) {
    let before = CAPTURED.with(|c| c.replace(Some(Vec::new())));
    let r = f();
    let got = CAPTURED.with(|c| c.replace(before)).unwrap_or_default();
    (r, got)
}

/// Writes captured tensors as `DIR/<name>.npy` and a `meta.txt` (label, seed, error).
pub fn write_dump(
    dir: &Path,
    label: &str,
    seed: u64,
    error: Option<&str>,
    ts: &[Tensor],
) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|source| Error::Io {
        path: dir.display().to_string(),
        source,
    })?;
    for t in ts {
        t.write(&dir.join(format!("{}.npy", t.name)))?;
    }
    let names: Vec<_> = ts.iter().map(|t| t.name.as_str()).collect();
    let meta = format!(
        "case: {label}\nseed: {seed}\nresult: {}\nfiles: {}\n",
        error.unwrap_or("passed"),
        names.join(", ")
    );
    let path = dir.join("meta.txt");
    std::fs::write(&path, meta).map_err(|source| Error::Io {
        path: path.display().to_string(),
        source,
    })
}

/// The shape to dump a pitched `rows × pitch` buffer of `len` elements as: `[rows, pitch]`
/// when it holds exactly that, else flat `[len]` (the last row is cut at its last column).
pub fn pitched(rows: usize, pitch: usize, len: usize) -> Vec<usize> {
    if rows.checked_mul(pitch) == Some(len) {
        vec![rows, pitch]
    } else {
        vec![len]
    }
}

/// A directory name for a case label: letters, digits, `-`, `_`, `.`, the rest `_`.
pub fn dir_name(label: &str, seed: u64) -> String {
    let clean: String = label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{clean}-seed{seed}")
}
