//! Random attention cases: f16 or bf16; any variant the back end runs (`naive` and `mma` in
//! the simulator; on the GPU also `wgmma` on sm_90a and the selected kernel); batch, query
//! and key lengths from 1 across the 64- and 128-row tiles, causal or not (including
//! `seq_q > seq_kv`, rows that see no key), grouped-query and multi-query heads, head
//! dimension 64 or 128, the default or a random softmax scale; Q, K, V, O packed, as slices
//! of one packed QKV tensor, or with random strides (any nesting of sequence and head, padded
//! rows, heads and batches: multiples of 8 elements for the vector-loading kernels, which
//! must refuse anything else with a typed error — one case in ten asks them to). Checked
//! against float64, and O's elements between rows must keep their poison.

use rand::{Rng, RngCore};
use rustile_kernels::registry::DType;

use crate::backend::Backend;
use crate::error::Error;
use crate::families::fuzz::{pick, size, Fuzzed, Size};
use crate::families::Case;

use super::*;

/// Largest sequence length; most "work units" (blocks of 128 query rows × tiles of 64 keys ×
/// head_dim / 64) per case in the simulator; most elements per tensor on the GPU.
const SIM_SEQ: usize = 270;
const SIM_UNITS: usize = 8;
const GPU_SEQ: usize = 2048;
const GPU_ELEMS: usize = 1 << 22;

/// A random attention case for `backend`.
pub fn case(backend: &Backend, rng: &mut dyn RngCore) -> Option<Fuzzed> {
    let sz = Size::of(backend);
    let target = match backend {
        Backend::Simulator(_) => Target::Simulator,
        Backend::Gpu(g) => Target::Gpu(g.flavour()),
    };
    let dtype = pick(rng, &[DType::F16, DType::Bf16]);
    let dims = head_dims();
    let d = if dims.len() > 1 && rng.random_bool(0.3) {
        dims[rng.random_range(1..dims.len())]
    } else {
        dims[0]
    };
    let shape = shape(rng, sz, d);
    // Every variant that can run the shape (with some buffers) on this target; on a GPU also
    // the selected one (`None`). `naive` only where its f32 scratch stays small.
    let plain = Problem::new(dtype, shape);
    let mut variants: Vec<Option<Variant>> = Variant::all()
        .into_iter()
        .filter(|v| v.supports(target, &plain, None).is_ok())
        .filter(|v| *v != Variant::naive() || naive_fits(&plain, sz))
        .map(Some)
        .collect();
    if sz == Size::Gpu {
        variants.push(None);
    }
    if variants.is_empty() {
        return None;
    }
    let variant = pick(rng, &variants);
    // Vector-loading kernels need strides in multiples of 8 elements; `naive` takes any.
    let step = match variant {
        Some(v) if v == Variant::naive() => 1,
        _ if rng.random_bool(0.9) => 8,
        _ => 1,
    };
    let (layout, packed) = layout(rng, &shape, step);
    let p = plain.with_layout(layout);
    let name = variant.map_or_else(|| "attention/auto".to_string(), |v| v.kernel_name(d));
    let mut label = shape.describe();
    if packed {
        label += " packed-qkv";
    } else if layout != Layout::contiguous(&shape) {
        let t = |s: Strides| format!("{},{},{}", s.batch, s.seq, s.head);
        label += &format!(
            " strides q={} k={} v={} o={}",
            t(layout.q),
            t(layout.k),
            t(layout.v),
            t(layout.o)
        );
    }
    let refusal = expected_refusal(target, variant, &p, packed);
    let check_name = name.clone();
    let case = Case::new(name, dtype, label, move |backend: &Backend, seed| {
        let ran = validate(backend, variant, &p, packed, seed);
        match (&refusal, ran) {
            (None, ran) => ran.map(|_| ()),
            (Some(_), Err(Error::Unsupported { .. } | Error::Misaligned { .. })) => Ok(()),
            (Some(why), other) => Err(Error::Mismatch {
                kernel: check_name.clone(),
                shape: p.shape.describe(),
                detail: format!(
                    "expected a refusal ({why}), got {:?}",
                    other.map(|c| c.kernel)
                ),
            }),
        }
    });
    Some(Fuzzed::new(case, move |backend: &Backend, seed| {
        p.check()?;
        let x = Inputs::random(&p, packed, seed)?;
        let out = outputs(backend, variant, &p, &x)?;
        let mut bytes: Vec<u8> = bytemuck::cast_slice(&out.o).to_vec();
        bytes.extend_from_slice(bytemuck::cast_slice(&out.lse));
        Ok(bytes)
    }))
}

/// Whether `naive` runs `p`: its scratch is `4·B·H·Nq·Nkv` bytes and it is slow.
fn naive_fits(p: &Problem, sz: Size) -> bool {
    let s = &p.shape;
    let scores = (s.lse_len() as f64) * (s.seq_kv as f64);
    scores <= sz.pick(40_000.0, (1u64 << 26) as f64)
}

/// A random shape at head dimension `d`.
fn shape(rng: &mut dyn RngCore, sz: Size, d: usize) -> Shape {
    let seq = sz.pick(SIM_SEQ, GPU_SEQ);
    let tiles = [16, 64, 128];
    let heads_kv = size(rng, sz.pick(2, 8), &[]);
    let group = size(rng, sz.pick(3, 8), &[]);
    let mut s = Shape::new(
        size(rng, sz.pick(2, 4), &[]),
        size(rng, seq, &tiles),
        if rng.random_bool(0.2) {
            0 // seq_kv = seq_q below
        } else {
            size(rng, seq, &tiles)
        },
        heads_kv * group,
        heads_kv,
        d,
    );
    if s.seq_kv == 0 {
        s.seq_kv = s.seq_q;
    }
    s.causal = rng.random_bool(0.5);
    if rng.random_bool(0.25) {
        s.scale = Some(rng.random_range(0.05f32..1.0));
    }
    // Shrink to the budget: batch, then heads, then the sequences.
    loop {
        let over = match sz {
            Size::Sim => {
                s.batch * s.heads_q * s.seq_q.div_ceil(128) * s.seq_kv.div_ceil(64) * (d / 64)
                    > SIM_UNITS
            }
            Size::Gpu => {
                let heads = s.heads_q.max(s.heads_kv);
                s.batch * heads * s.seq_q.max(s.seq_kv) * d > GPU_ELEMS
            }
        };
        if !over {
            return s;
        }
        if s.batch > 1 {
            s.batch -= 1;
        } else if s.heads_q > s.heads_kv {
            s.heads_q -= s.heads_kv;
        } else if s.heads_kv > 1 {
            s.heads_kv -= 1;
            s.heads_q = s.heads_kv;
        } else if s.seq_kv >= s.seq_q && s.seq_kv > 1 {
            s.seq_kv = s.seq_kv.div_ceil(2);
        } else {
            s.seq_q = s.seq_q.div_ceil(2);
        }
    }
}

/// A random layout for `s` (strides padded in multiples of `step` elements) and whether Q, K
/// and V are slices of one packed tensor.
fn layout(rng: &mut dyn RngCore, s: &Shape, step: usize) -> (Layout, bool) {
    match rng.random_range(0..4u32) {
        0 => (Layout::contiguous(s), false),
        1 if s.seq_q == s.seq_kv => (Layout::packed_qkv(s), true),
        _ => {
            let mut t =
                |seq: usize, heads: usize| strides(rng, s.head_dim, [s.batch, seq, heads], step);
            let layout = Layout {
                q: t(s.seq_q, s.heads_q),
                k: t(s.seq_kv, s.heads_kv),
                v: t(s.seq_kv, s.heads_kv),
                o: t(s.seq_q, s.heads_q),
            };
            (layout, false)
        }
    }
}

/// Strides of one `(batch, seq, heads, d)` tensor: sequence inside head or head inside
/// sequence, batch outside both (or, one time in five, anywhere), each level padded by up to
/// three `step`s past what the levels inside it span.
fn strides(rng: &mut dyn RngCore, d: usize, extents: [usize; 3], step: usize) -> Strides {
    // Dimensions (index into `extents`: batch, seq, head) from the innermost.
    let mut order = if rng.random_bool(0.5) {
        [2, 1, 0]
    } else {
        [1, 2, 0]
    };
    if rng.random_bool(0.2) {
        order.swap(rng.random_range(0..3), 2);
    }
    let mut out = [0usize; 3];
    let mut span = d.next_multiple_of(step);
    for dim in order {
        let pad = if rng.random_bool(0.5) {
            0
        } else {
            step * rng.random_range(1..=3usize)
        };
        out[dim] = span + pad;
        span = out[dim] * extents[dim];
    }
    Strides {
        batch: out[0],
        seq: out[1],
        head: out[2],
    }
}

/// Why `variant` should refuse `p` on `target` with freshly allocated buffers (aligned
/// addresses; K and V inside one buffer when `packed`), or `None` if it should run.
fn expected_refusal(
    target: Target,
    variant: Option<Variant>,
    p: &Problem,
    packed: bool,
) -> Option<String> {
    let spans = p.spans().ok()?;
    let base = 1u64 << 32;
    let (offs, _) = Layout::packed_qkv_offsets(&p.shape);
    let addrs: [u64; 5] = if packed {
        let b = p.dtype.bytes() as u64;
        [
            base,
            base + b * offs[1] as u64,
            base + b * offs[2] as u64,
            base << 1,
            base << 2,
        ]
    } else {
        [base, base << 1, base << 2, base << 3, base << 4]
    };
    let ops = Operands::of(
        p,
        [spans[0], spans[1], spans[2], spans[3], p.shape.lse_len()],
        addrs,
    );
    let ok = match variant {
        Some(v) => v.supports(target, p, Some(&ops)).map(|_| ()),
        None => Variant::select(target, p, &ops).map(|_| ()),
    };
    ok.err().map(|e| e.to_string())
}
