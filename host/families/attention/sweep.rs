//! The attention bench's shapes: the anchors' sweep (N = 512 … 16384 at a constant `B·N =
//! 16384` tokens of `H = 16` heads, d 64 and 128, causal and not), the `B·H` sweep at N = 4096,
//! d = 128, and the `B,H,N,D,causal;…` form `scripts/sdpa_bench.py --shapes` takes. Pure: no
//! GPU. Re-exported by [`super::bench`](mod@super::bench).

use crate::error::{Error, Result};

use super::{head_dims, Shape};

/// Tokens per anchor shape: `B·N = 16384` (`B = 16384 / N`, at least 1).
pub const ANCHOR_TOKENS: usize = 16384;
/// Heads of the anchor shapes (query and key/value heads alike).
pub const ANCHOR_HEADS: usize = 16;
/// The anchors' sequence lengths.
pub const DEFAULT_N: [usize; 6] = [512, 1024, 2048, 4096, 8192, 16384];
/// The `B·H` values of the second sweep: one head, a few, the anchors' 64, the H200's SM count
/// (132) and more heads than SMs.
pub const DEFAULT_BH: [usize; 6] = [1, 4, 16, 64, 132, 256];
/// Sequence length and head dimension of the `B·H` sweep.
pub const BH_AT: (usize, usize) = (4096, 128);
/// `naive` runs by default only up to this sequence length (its scratch is
/// `4·B·H·N²` bytes and it is slow); `--variants naive` runs it wherever its scratch fits.
pub const NAIVE_MAX_N: usize = 4096;

/// One benchmarked shape: `b` batches of `h` heads (multi-head: as many key/value heads) of
/// `n × n` attention at head dimension `d`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub struct BenchShape {
    /// Batch.
    pub b: usize,
    /// Heads.
    pub h: usize,
    /// Sequence length (queries and keys).
    pub n: usize,
    /// Head dimension.
    pub d: usize,
    /// Causal mask.
    pub causal: bool,
}

impl BenchShape {
    /// The anchor shape at `n`: `B = 16384 / n` (at least 1), `H = 16`.
    pub fn anchor(n: usize, d: usize, causal: bool) -> Self {
        Self {
            b: (ANCHOR_TOKENS / n.max(1)).max(1),
            h: ANCHOR_HEADS,
            n,
            d,
            causal,
        }
    }

    /// Whether this is an anchor shape ([`BenchShape::anchor`] at its `n`): the shapes the
    /// acceptance bars are read on.
    pub fn is_anchor(&self) -> bool {
        *self == Self::anchor(self.n, self.d, self.causal)
    }

    /// The attention shape (default scale).
    pub fn shape(&self) -> Shape {
        Shape::new(self.b, self.n, self.n, self.h, self.h, self.d).with_causal(self.causal)
    }

    /// `B,H,N,D,causal` (causal `0` or `1`): one item of `sdpa_bench.py --shapes`.
    pub fn sdpa(&self) -> String {
        let (b, h, n, d) = (self.b, self.h, self.n, self.d);
        format!("{b},{h},{n},{d},{}", u8::from(self.causal))
    }

    /// Parses one `B,H,N,D,causal` item (causal: `0`/`1`, `true`/`false`, `causal`/`none`);
    /// the head dimension must be one the kernels are built for.
    pub fn parse(item: &str) -> Result<Self> {
        let bad = |why: String| Error::Usage(format!("bad shape `{item}`: {why}"));
        let parts: Vec<&str> = item.split(',').map(str::trim).collect();
        let [b, h, n, d, c] = parts[..] else {
            return Err(bad("want B,H,N,D,causal".into()));
        };
        let num = |what: &str, s: &str| -> Result<usize> {
            s.parse::<usize>()
                .ok()
                .filter(|&x| x > 0)
                .ok_or_else(|| bad(format!("{what} `{s}` is not a positive number")))
        };
        let causal = match c.to_ascii_lowercase().as_str() {
            "1" | "true" | "causal" => true,
            "0" | "false" | "none" => false,
            _ => {
                return Err(bad(format!(
                    "causal `{c}` is not 0/1, true/false or causal/none"
                )))
            }
        };
        let s = Self {
            b: num("B", b)?,
            h: num("H", h)?,
            n: num("N", n)?,
            d: num("D", d)?,
            causal,
        };
        let dims = head_dims();
        if !dims.contains(&s.d) {
            return Err(bad(format!("the kernels are built for head_dim {dims:?}")));
        }
        Ok(s)
    }
}

/// The `B·H` sweep's shape: `H = 16` where `bh` is a multiple of 16, else `H = 1`; `B = bh / H`.
pub fn bh_shape(bh: usize, causal: bool) -> BenchShape {
    let h = if bh.is_multiple_of(ANCHOR_HEADS) {
        ANCHOR_HEADS
    } else {
        1
    };
    BenchShape {
        b: bh / h,
        h,
        n: BH_AT.0,
        d: BH_AT.1,
        causal,
    }
}

/// Parses `B,H,N,D,causal;…` (what `sdpa_bench.py --shapes` takes).
pub fn parse_shapes(s: &str) -> Result<Vec<BenchShape>> {
    let shapes: Vec<BenchShape> = s
        .split(';')
        .filter(|x| !x.trim().is_empty())
        .map(BenchShape::parse)
        .collect::<Result<_>>()?;
    if shapes.is_empty() {
        return Err(Error::Usage("no shape given".into()));
    }
    Ok(shapes)
}

/// The shapes as `sdpa_bench.py --shapes` takes them: `B,H,N,D,causal;…`.
pub fn shapes_arg(shapes: &[BenchShape]) -> String {
    shapes
        .iter()
        .map(BenchShape::sdpa)
        .collect::<Vec<_>>()
        .join(";")
}

/// What a sweep covers: anchors at each `n × d × mask`, then the `B·H` sweep at each mask.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sweep {
    /// Anchor sequence lengths.
    pub n: Vec<usize>,
    /// Head dimensions of the anchors.
    pub dims: Vec<usize>,
    /// Masks (`false`: none, `true`: causal), anchors and `B·H` sweep alike.
    pub masks: Vec<bool>,
    /// `B·H` values at [`BH_AT`] (empty: no second sweep).
    pub bh: Vec<usize>,
}

impl Default for Sweep {
    fn default() -> Self {
        Self {
            n: DEFAULT_N.to_vec(),
            dims: vec![64, 128],
            masks: vec![false, true],
            bh: DEFAULT_BH.to_vec(),
        }
    }
}

impl Sweep {
    /// Its shapes in order (d, then N, then mask; then `B·H`, then mask), each once.
    pub fn shapes(&self) -> Vec<BenchShape> {
        let mut out: Vec<BenchShape> = Vec::new();
        for &d in &self.dims {
            for &n in &self.n {
                for &c in &self.masks {
                    out.push(BenchShape::anchor(n, d, c));
                }
            }
        }
        for &bh in &self.bh {
            for &c in &self.masks {
                out.push(bh_shape(bh, c));
            }
        }
        let mut seen = std::collections::HashSet::new();
        out.retain(|s| seen.insert(*s));
        out
    }
}
