//! The attention problem: its shape, each tensor's strides, the element type, and the checks
//! that need no buffer (sizes, heads, scale, head dimension, strides that overlap, index
//! limits).

use rustile_kernels::registry::DType;

use crate::error::{Error, Result};

/// The sizes of one attention forward, the mask and the softmax scale.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Shape {
    /// Batch size.
    pub batch: usize,
    /// Query rows (per batch and head).
    pub seq_q: usize,
    /// Key / value rows.
    pub seq_kv: usize,
    /// Query (and output) heads.
    pub heads_q: usize,
    /// Key / value heads; `heads_q` must be a multiple (grouped-query attention; 1 is
    /// multi-query).
    pub heads_kv: usize,
    /// Head dimension (64 or 128: the dimensions the kernels are built for).
    pub head_dim: usize,
    /// Causal mask aligned to the bottom-right corner: query row `i` sees keys
    /// `j ≤ i + seq_kv − seq_q` (rows that see none give `O = 0`, `LSE = −inf`).
    pub causal: bool,
    /// Softmax scale (`None`: `1/√head_dim`); must be finite and positive.
    pub scale: Option<f32>,
}

impl Shape {
    /// A non-causal shape with the default scale.
    pub fn new(
        batch: usize,
        seq_q: usize,
        seq_kv: usize,
        heads_q: usize,
        heads_kv: usize,
        head_dim: usize,
    ) -> Self {
        Self {
            batch,
            seq_q,
            seq_kv,
            heads_q,
            heads_kv,
            head_dim,
            causal: false,
            scale: None,
        }
    }

    /// The same shape with the causal mask on or off.
    pub fn with_causal(mut self, causal: bool) -> Self {
        self.causal = causal;
        self
    }

    /// The same shape with the softmax scale `scale`.
    pub fn with_scale(mut self, scale: f32) -> Self {
        self.scale = Some(scale);
        self
    }

    /// The softmax scale in use: the given one, or `1/√head_dim`.
    pub fn softmax_scale(&self) -> f32 {
        self.scale
            .unwrap_or_else(|| (1.0 / (self.head_dim.max(1) as f64).sqrt()) as f32)
    }

    /// Query heads per key/value head.
    pub fn group(&self) -> usize {
        self.heads_q / self.heads_kv.max(1)
    }

    /// The keys query row `i` sees: `0 .. visible_keys(i)`.
    pub fn visible_keys(&self, i: usize) -> usize {
        if !self.causal {
            return self.seq_kv;
        }
        let end = i as i64 + 1 + self.seq_kv as i64 - self.seq_q as i64;
        end.clamp(0, self.seq_kv as i64) as usize
    }

    /// Rows of the log-sum-exp, `batch · heads_q · seq_q` (its length in f32).
    pub fn lse_len(&self) -> usize {
        self.batch
            .saturating_mul(self.heads_q)
            .saturating_mul(self.seq_q)
    }

    /// Floating-point operations of the two products over the (query, key) pairs the mask
    /// lets through: `4 · head_dim` per pair.
    pub fn flops(&self) -> f64 {
        let pairs: f64 = if self.causal {
            (0..self.seq_q).map(|i| self.visible_keys(i) as f64).sum()
        } else {
            self.seq_q as f64 * self.seq_kv as f64
        };
        4.0 * self.head_dim as f64 * pairs * (self.batch * self.heads_q) as f64
    }

    /// `b2 q17 kv65 h8/2 d64 causal`, for reports.
    pub fn describe(&self) -> String {
        let mut s = format!(
            "b{} q{} kv{} h{}/{} d{}",
            self.batch, self.seq_q, self.seq_kv, self.heads_q, self.heads_kv, self.head_dim
        );
        if self.causal {
            s += " causal";
        }
        if let Some(x) = self.scale {
            s += &format!(" scale={x}");
        }
        s
    }
}

/// Element strides of one `(batch, seq, heads, head_dim)` tensor; `head_dim` is contiguous.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Strides {
    /// Between batches.
    pub batch: usize,
    /// Between sequence rows.
    pub seq: usize,
    /// Between heads.
    pub head: usize,
}

impl Strides {
    /// The packed `(batch, seq, heads, head_dim)` layout.
    pub fn contiguous(seq: usize, heads: usize, head_dim: usize) -> Self {
        Self {
            head: head_dim,
            seq: heads.saturating_mul(head_dim),
            batch: seq.saturating_mul(heads).saturating_mul(head_dim),
        }
    }
}

/// The strides of Q, K, V and O.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Layout {
    /// Q: `(batch, seq_q, heads_q, head_dim)`.
    pub q: Strides,
    /// K: `(batch, seq_kv, heads_kv, head_dim)`.
    pub k: Strides,
    /// V: `(batch, seq_kv, heads_kv, head_dim)`.
    pub v: Strides,
    /// O: `(batch, seq_q, heads_q, head_dim)`.
    pub o: Strides,
}

impl Layout {
    /// Every tensor packed.
    pub fn contiguous(s: &Shape) -> Self {
        let q = Strides::contiguous(s.seq_q, s.heads_q, s.head_dim);
        let kv = Strides::contiguous(s.seq_kv, s.heads_kv, s.head_dim);
        Self {
            q,
            k: kv,
            v: kv,
            o: q,
        }
    }

    /// Q, K and V as three slices of one packed `(batch, seq, heads_q + 2·heads_kv, head_dim)`
    /// tensor (Q's heads, then K's, then V's, in every row), O packed. Q starts at element
    /// 0 of that tensor, K and V at [`Layout::packed_qkv_offsets`]. Needs `seq_q = seq_kv`.
    pub fn packed_qkv(s: &Shape) -> Self {
        let heads = s.heads_q.saturating_add(s.heads_kv.saturating_mul(2));
        let packed = Strides::contiguous(s.seq_q, heads, s.head_dim);
        Self {
            q: packed,
            k: packed,
            v: packed,
            o: Strides::contiguous(s.seq_q, s.heads_q, s.head_dim),
        }
    }

    /// Element offsets of Q, K and V in the packed tensor of [`Layout::packed_qkv`], and its
    /// length.
    pub fn packed_qkv_offsets(s: &Shape) -> ([usize; 3], usize) {
        let d = s.head_dim;
        let heads = s.heads_q.saturating_add(s.heads_kv.saturating_mul(2));
        let k = s.heads_q.saturating_mul(d);
        (
            [0, k, k.saturating_add(s.heads_kv.saturating_mul(d))],
            Strides::contiguous(s.seq_q, heads, d)
                .batch
                .saturating_mul(s.batch),
        )
    }
}

/// The names of the four tensors, in `[q, k, v, o]` order.
pub const TENSORS: [&str; 4] = ["q", "k", "v", "o"];

/// One tensor's extents and strides, as the span and overlap checks see it.
#[derive(Clone, Copy, Debug)]
pub struct Geometry {
    /// `q`, `k`, `v` or `o`.
    pub name: &'static str,
    /// `(batch, seq, heads)` extents.
    pub extents: [usize; 3],
    /// Their strides.
    pub strides: Strides,
    /// Contiguous elements per row (`head_dim`).
    pub row: usize,
}

impl Geometry {
    /// Elements from the tensor's first to one past its last: `Σ (extent − 1)·stride + row`,
    /// or `None` on overflow. (Every extent is ≥ 1 after [`Problem::check`].)
    pub fn span(&self) -> Option<usize> {
        let s = self.strides;
        [s.batch, s.seq, s.head]
            .into_iter()
            .zip(self.extents)
            .try_fold(self.row, |acc, (st, e)| {
                acc.checked_add(st.checked_mul(e.saturating_sub(1))?)
            })
    }

    /// Element offset of row `(b, s, h)`.
    pub fn offset(&self, b: usize, s: usize, h: usize) -> usize {
        b * self.strides.batch + s * self.strides.seq + h * self.strides.head
    }

    /// Whether distinct `(b, s, h)` rows are disjoint, by the nesting rule: sorted by stride,
    /// each dimension that has more than one index must step past everything the dimensions
    /// inside it span (`head_dim` innermost). Returns why not.
    pub fn rows_disjoint(&self) -> std::result::Result<(), String> {
        let s = self.strides;
        let mut dims: Vec<(&str, usize, usize)> = [
            ("batch", s.batch, self.extents[0]),
            ("seq", s.seq, self.extents[1]),
            ("head", s.head, self.extents[2]),
        ]
        .into_iter()
        .filter(|d| d.2 > 1)
        .collect();
        dims.sort_by_key(|d| d.1);
        let mut span = self.row;
        for (dim, stride, extent) in dims {
            if stride < span {
                return Err(format!(
                    "its {dim} stride {stride} is smaller than the {span} elements the dimensions inside it span"
                ));
            }
            span = stride
                .checked_mul(extent - 1)
                .and_then(|x| x.checked_add(span))
                .ok_or_else(|| format!("its {dim} stride {stride} × {extent} overflows"))?;
        }
        Ok(())
    }
}

/// One attention forward: shape, strides, element type.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Problem {
    /// Sizes, mask and scale.
    pub shape: Shape,
    /// Strides of Q, K, V and O.
    pub layout: Layout,
    /// Element type of Q, K, V and O: [`DType::F16`] or [`DType::Bf16`] (LSE is f32).
    #[serde(serialize_with = "crate::elem::serialize_dtype")]
    pub dtype: DType,
}

/// The largest sequence length, head count or batch the kernels index (32-bit indices with
/// room for a tile past the end).
pub const MAX_DIM: usize = (i32::MAX as usize) / 2;

impl Problem {
    /// `shape` in `dtype`, every tensor packed.
    pub fn new(dtype: DType, shape: Shape) -> Self {
        Self {
            shape,
            layout: Layout::contiguous(&shape),
            dtype,
        }
    }

    /// The same problem with `layout`.
    pub fn with_layout(mut self, layout: Layout) -> Self {
        self.layout = layout;
        self
    }

    /// `attention <shape>`: the kernel name the errors of the family-level checks carry.
    pub fn label(&self) -> String {
        format!("attention {}", self.shape.describe())
    }

    /// The geometry of Q, K, V and O, in that order.
    pub fn tensors(&self) -> [Geometry; 4] {
        let s = &self.shape;
        let l = &self.layout;
        let g = |name, seq, heads, strides| Geometry {
            name,
            extents: [s.batch, seq, heads],
            strides,
            row: s.head_dim,
        };
        [
            g("q", s.seq_q, s.heads_q, l.q),
            g("k", s.seq_kv, s.heads_kv, l.k),
            g("v", s.seq_kv, s.heads_kv, l.v),
            g("o", s.seq_q, s.heads_q, l.o),
        ]
    }

    /// Elements each of Q, K, V and O must hold (their spans), or [`Error::TooLarge`].
    pub fn spans(&self) -> Result<[usize; 4]> {
        let t = self.tensors();
        let mut out = [0; 4];
        for (o, g) in out.iter_mut().zip(&t) {
            *o = g.span().ok_or_else(|| Error::TooLarge {
                kernel: self.label(),
                what: format!("the span of `{}` overflows usize", g.name),
            })?;
        }
        Ok(out)
    }

    /// Bytes a validation run allocates on its back end: Q, K, V and O over their spans (2
    /// bytes an element) and the f32 log-sum-exp, overflow-checked ([`Error::TooLarge`]).
    pub fn bytes(&self) -> Result<usize> {
        let too_large = || Error::TooLarge {
            kernel: self.label(),
            what: "the bytes of Q, K, V, O and the LSE overflow usize".into(),
        };
        let elems = self
            .spans()?
            .iter()
            .try_fold(0usize, |a, &s| a.checked_add(s))
            .ok_or_else(too_large)?;
        elems
            .checked_mul(2)
            .and_then(|b| b.checked_add(self.shape.lse_len().checked_mul(4)?))
            .ok_or_else(too_large)
    }

    /// Checks everything that needs no buffer: dtype, nonzero sizes, head dimension (one the
    /// kernels are built for: [`super::head_dims`]), heads, scale, index limits, and strides
    /// under which distinct rows of a tensor would overlap.
    pub fn check(&self) -> Result<()> {
        let label = self.label();
        crate::elem::half_input(self.dtype, &label)?;
        let s = &self.shape;
        for (what, v) in [
            ("batch", s.batch),
            ("seq_q", s.seq_q),
            ("seq_kv", s.seq_kv),
            ("heads_q", s.heads_q),
            ("heads_kv", s.heads_kv),
            ("head_dim", s.head_dim),
        ] {
            if v == 0 {
                return Err(Error::ZeroSize {
                    kernel: label,
                    what,
                });
            }
            if v > MAX_DIM {
                return Err(Error::TooLarge {
                    kernel: label,
                    what: format!("{what} = {v} exceeds {MAX_DIM}"),
                });
            }
        }
        let dims = super::head_dims();
        if !dims.contains(&s.head_dim) {
            return Err(Error::Unsupported {
                kernel: label,
                what: format!(
                    "head_dim = {}: the attention kernels are built for head_dim {dims:?}",
                    s.head_dim
                ),
            });
        }
        if !s.heads_q.is_multiple_of(s.heads_kv) {
            return Err(Error::InvalidArgument {
                kernel: label,
                what: format!(
                    "heads_q = {} is not a multiple of heads_kv = {}",
                    s.heads_q, s.heads_kv
                ),
            });
        }
        let scale = s.softmax_scale();
        let scale_log2 = scale * rustile_kernels::attention::LOG2_E;
        if !scale.is_finite() || scale <= 0.0 || !scale_log2.is_finite() || scale_log2 <= 0.0 {
            return Err(Error::InvalidArgument {
                kernel: label,
                what: format!("the softmax scale {scale} must be finite and positive"),
            });
        }
        self.spans()?;
        for g in self.tensors() {
            g.rows_disjoint().map_err(|why| Error::Overlap {
                kernel: self.label(),
                buffer: g.name,
                with: None,
                what: format!("distinct (batch, seq, head) rows share elements: {why}"),
            })?;
        }
        Ok(())
    }
}
