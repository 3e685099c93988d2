//! `rustile attention dump`: a kernel's inputs and outputs as `.npy` files, one directory per
//! case, for the PyTorch cross-check (`scripts/sdpa_check.py DIR`).
//!
//! Each case directory holds `meta.json` (dtype, causal, scale, kernel, shape, seed, back end,
//! rustile's own float64 check) and `q.npy`, `k.npy`, `v.npy` (float32 holding exactly the
//! f16/bf16 inputs, `(batch, seq, heads, head_dim)`), `o.npy` (float32 of the output, same
//! form) and `lse.npy` (`(batch, heads_q, seq_q)`, natural log, `−inf` where a row sees no
//! key).

use std::path::{Path, PathBuf};

use rustile_kernels::registry::DType;

use crate::backend::Backend;
use crate::elem::widen_bits;
use crate::error::{Error, Result};

use super::*;

type Row = (usize, usize, usize, usize, usize, bool);

/// `(batch, seq_q, seq_kv, heads_q, heads_kv, causal)` of the default cases, each run at every
/// head dimension and dtype: lengths 1, 127, 129, 1000 and primes; `seq_q ≠ seq_kv` causal both
/// ways (`seq_q > seq_kv` leaves rows that see no key: 871 of 1000, 130 of 131); GQA 8/2 and
/// MQA; decode rows (one query, many keys).
pub const DEFAULT_CASES: &[Row] = &[
    (1, 1, 1, 1, 1, false),
    (1, 1, 1, 1, 1, true),
    (2, 127, 127, 4, 4, true),
    (1, 129, 129, 4, 4, false),
    (1, 1000, 1000, 2, 2, true),
    (3, 97, 211, 2, 2, false),
    (1, 127, 1000, 8, 2, true),
    (1, 1000, 129, 4, 1, true),
    (2, 257, 257, 8, 2, false),
    (1, 313, 313, 8, 1, true),
    (4, 1, 1000, 8, 2, true),
    (1, 131, 1, 2, 1, true),
];

/// The default cases' shapes: [`DEFAULT_CASES`] at every head dimension the kernels have.
pub fn default_cases() -> Vec<Shape> {
    let mut v = Vec::new();
    for d in head_dims() {
        for &(b, nq, nkv, hq, hkv, causal) in DEFAULT_CASES {
            v.push(Shape::new(b, nq, nkv, hq, hkv, d).with_causal(causal));
        }
    }
    v
}

/// `default`, or `B,NQ,NKV,HQ,HKV,D[,causal];…` (causal: `1`/`causal`/`true`); every shape is
/// checked ([`Problem::check`]).
pub fn parse_cases(s: &str) -> Result<Vec<Shape>> {
    if s.trim() == "default" {
        return Ok(default_cases());
    }
    let mut out = Vec::new();
    for item in s.split(';').filter(|x| !x.trim().is_empty()) {
        let bad = |why: &str| Error::Usage(format!("bad case `{item}`: {why}"));
        let parts: Vec<&str> = item.split(',').map(str::trim).collect();
        if !(6..=7).contains(&parts.len()) {
            return Err(bad("want B,NQ,NKV,HQ,HKV,D[,causal]"));
        }
        let n: Vec<usize> = parts[..6]
            .iter()
            .map(|x| x.parse::<usize>())
            .collect::<std::result::Result<_, _>>()
            .map_err(|_| bad("sizes must be numbers"))?;
        let causal = match parts.get(6).map(|c| c.to_ascii_lowercase()) {
            None => false,
            Some(c) => match c.as_str() {
                "1" | "true" | "causal" => true,
                "0" | "false" | "none" => false,
                _ => return Err(bad("causal must be 0/1, true/false or causal/none")),
            },
        };
        let shape = Shape::new(n[0], n[1], n[2], n[3], n[4], n[5]).with_causal(causal);
        Problem::new(DType::F16, shape)
            .check()
            .map_err(|e| bad(&e.to_string()))?;
        out.push(shape);
    }
    if out.is_empty() {
        return Err(Error::Usage("no case given".into()));
    }
    Ok(out)
}

/// The directory name of case `i`: `03-bf16-b2-q127-kv127-h4x4-d64-causal`.
pub fn case_name(i: usize, dtype: DType, s: &Shape) -> String {
    format!(
        "{i:02}-{}-b{}-q{}-kv{}-h{}x{}-d{}{}",
        dtype.name(),
        s.batch,
        s.seq_q,
        s.seq_kv,
        s.heads_q,
        s.heads_kv,
        s.head_dim,
        if s.causal { "-causal" } else { "" }
    )
}

/// Tensor `t` (0 = Q, 1 = K, 2 = V, 3 = O) of `p` gathered from `bits` (its buffer, the tensor
/// starting at `offset`) into a packed `(batch, seq, heads, head_dim)` f32 array, and its shape.
pub fn gather(
    p: &Problem,
    t: usize,
    bits: &[u16],
    offset: usize,
) -> Result<(Vec<usize>, Vec<f32>)> {
    let g = p.tensors()[t];
    let [b, n, h] = g.extents;
    let d = g.row;
    let span = g.span().ok_or_else(|| Error::TooLarge {
        kernel: p.label(),
        what: format!("the span of `{}` overflows", g.name),
    })?;
    if bits.len().saturating_sub(offset) < span {
        return Err(Error::BufferLength {
            kernel: format!("{} (dump)", p.label()),
            buffer: g.name,
            got: bits.len().saturating_sub(offset),
            need: span,
            shape: p.shape.describe(),
        });
    }
    let mut out = Vec::with_capacity(b * n * h * d);
    for bi in 0..b {
        for si in 0..n {
            for hi in 0..h {
                let at = offset + g.offset(bi, si, hi);
                out.extend(
                    bits[at..at + d]
                        .iter()
                        .map(|&x| widen_bits(p.dtype, x as u32)),
                );
            }
        }
    }
    Ok((vec![b, n, h, d], out))
}

/// What one dumped case holds besides the arrays.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Meta {
    /// `f16` or `bf16`.
    pub dtype: &'static str,
    /// Causal mask (bottom-right aligned).
    pub causal: bool,
    /// The softmax scale used.
    pub scale: f32,
    /// `attention/<record>` that ran.
    pub kernel: String,
    /// The shape.
    pub shape: Shape,
    /// Seed of the inputs.
    pub seed: u64,
    /// Where it ran (`simulator` or the device's name).
    pub backend: String,
    /// rustile's own comparison with float64.
    pub check: CheckSummary,
}

/// rustile's own check of a dumped case, as `meta.json` holds it.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct CheckSummary {
    /// Whether every compared row is within its bound.
    pub ok: bool,
    /// Query rows compared with float64 (0 when the check failed).
    pub rows: usize,
    /// Worst `|O − reference| / bound` (< 1 when `ok`).
    pub worst_o: f64,
    /// Worst `|LSE − reference| / bound`.
    pub worst_lse: f64,
    /// The failure, if any.
    pub error: Option<String>,
}

impl CheckSummary {
    /// From [`compare`]'s result.
    pub fn of(r: &std::result::Result<Comparison, String>) -> Self {
        let c = r.as_ref().copied().unwrap_or_default();
        Self {
            ok: r.is_ok(),
            rows: c.rows,
            worst_o: c.worst_o,
            worst_lse: c.worst_lse,
            error: r.as_ref().err().cloned(),
        }
    }
}

/// Writes one case into `dir` (created): `meta.json` and the five arrays.
pub fn write_case(dir: &Path, p: &Problem, x: &Inputs, out: &Outputs, meta: &Meta) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|source| Error::Io {
        path: dir.display().to_string(),
        source,
    })?;
    for (t, name) in ["q", "k", "v"].into_iter().enumerate() {
        let (buf, off) = x.at[t];
        let (shape, data) = gather(p, t, &x.bufs[buf], off)?;
        npy::write(&dir.join(format!("{name}.npy")), &shape, &data)?;
    }
    let (shape, data) = gather(p, 3, &out.o, 0)?;
    npy::write(&dir.join("o.npy"), &shape, &data)?;
    let s = &p.shape;
    let lse = out
        .lse
        .get(..s.lse_len())
        .ok_or_else(|| Error::BufferLength {
            kernel: format!("{} (dump)", p.label()),
            buffer: "lse",
            got: out.lse.len(),
            need: s.lse_len(),
            shape: s.describe(),
        })?;
    npy::write(&dir.join("lse.npy"), &[s.batch, s.heads_q, s.seq_q], lse)?;
    let path = dir.join("meta.json");
    let json =
        serde_json::to_string_pretty(meta).map_err(|e| Error::Usage(format!("JSON: {e}")))?;
    std::fs::write(&path, json + "\n").map_err(|source| Error::Io {
        path: path.display().to_string(),
        source,
    })
}

/// One dumped case: where, what ran, and whether rustile's own check passed.
#[derive(Clone, Debug)]
pub struct Dumped {
    /// Its directory.
    pub dir: PathBuf,
    /// The record that ran.
    pub kernel: String,
    /// rustile's comparison with float64, or its error.
    pub check: std::result::Result<Comparison, String>,
}

/// Runs `variant` (`None`: the dispatcher's choice) on `shape` in `dtype` on `backend` with
/// fresh inputs from `seed`, checks it against float64 and writes case `i` under `root`. A
/// wrong output is still written (that is what the cross-check is for) and reported in
/// [`Dumped::check`]; a case the kernel cannot run is an error.
pub fn dump_case(
    backend: &Backend,
    variant: Option<Variant>,
    (i, dtype, shape): (usize, DType, Shape),
    seed: u64,
    root: &Path,
) -> Result<Dumped> {
    let p = Problem::new(dtype, shape);
    p.check()?;
    backend.check_fits(p.bytes()?, &format!("{}: Q, K, V, O and LSE", p.label()))?;
    let x = Inputs::random(&p, false, seed)?;
    let out = outputs(backend, variant, &p, &x)?;
    let check =
        compare(&p, &x, &out.o, &out.lse, &rows_to_check(&p, seed)).map_err(|e| e.to_string());
    let meta = Meta {
        dtype: dtype.name(),
        causal: shape.causal,
        scale: shape.softmax_scale(),
        kernel: format!("attention/{}", out.kernel),
        shape,
        seed,
        backend: backend.name(),
        check: CheckSummary::of(&check),
    };
    let dir = root.join(case_name(i, dtype, &shape));
    write_case(&dir, &p, &x, &out, &meta)?;
    Ok(Dumped {
        dir,
        kernel: meta.kernel,
        check,
    })
}
