//! The attention front door: [`attention`] and its pure check [`check_attention`].

use cudarc::driver::{CudaSlice, DevicePtr, DevicePtrMut, DeviceSlice};

use crate::attention::{self as at, Buffers, Input, Layout, Operands, Output, Problem, Shape};
use crate::error::Result;
use crate::gpu::Gpu;

use super::range::{Bits, BitsMut};
use super::{Launched, TcElem};

/// The options of [`attention`]. [`Default`]: every tensor packed `(batch, seq, heads,
/// head_dim)`, the log-sum-exp not returned.
#[derive(Default)]
pub struct AttentionOptions<'a> {
    /// Element strides of Q, K, V and O (`None`: [`Layout::contiguous`]); e.g.
    /// [`Layout::packed_qkv`] for Q, K, V sliced from one packed tensor.
    pub layout: Option<Layout>,
    /// Where to write the row log-sum-exp (f32, natural log, `(batch, heads_q, seq_q)`
    /// contiguous: `batch · heads_q · seq_q` floats). `None`: the call keeps it in scratch
    /// memory of its own, freed in stream order on return.
    pub lse: Option<&'a mut dyn DevicePtrMut<f32>>,
}

impl std::fmt::Debug for AttentionOptions<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AttentionOptions")
            .field("layout", &self.layout)
            .field("lse", &self.lse.as_ref().map(|x| x.len()))
            .finish()
    }
}

fn problem<T: TcElem>(shape: &Shape, layout: Option<&Layout>) -> Problem {
    Problem {
        shape: *shape,
        layout: layout.copied().unwrap_or_else(|| Layout::contiguous(shape)),
        dtype: T::IN,
    }
}

/// The attention front door's checks on lengths alone (no GPU): the shape (sizes, head
/// dimension, heads, scale), the strides (no two rows of a tensor overlap), and each buffer's
/// length against the span the shape and strides imply (`lse`: its length, if one is given).
#[allow(clippy::too_many_arguments)]
pub fn check_attention<T: TcElem>(
    shape: &Shape,
    layout: Option<&Layout>,
    q: usize,
    k: usize,
    v: usize,
    o: usize,
    lse: Option<usize>,
) -> Result<()> {
    let p = problem::<T>(shape, layout);
    p.check()?;
    let lse = lse.unwrap_or(p.shape.lse_len());
    p.check_operands(&Operands::of(&p, [q, k, v, o, lse], [0; 5]))
}

/// Attention forward on the GPU, `O = softmax(scale · Q Kᵀ + mask) V`, f16 or bf16 in and out
/// ([`TcElem`]), f32 accumulation.
///
/// Q and O are `(batch, seq_q, heads_q, head_dim)`, K and V `(batch, seq_kv, heads_kv,
/// head_dim)`, packed unless [`AttentionOptions::layout`] gives strides; query head `h` reads
/// key/value head `h / (heads_q / heads_kv)`. [`Shape::causal`] masks key `j` from query row
/// `i` unless `j ≤ i + seq_kv − seq_q` (bottom-right aligned); a row that sees no key gets
/// zeros (and a log-sum-exp of −inf). [`Shape::scale`] defaults to `1/√head_dim`.
///
/// Every argument is checked before anything is allocated or launched — typed errors for a
/// head dimension the kernels are not built for, heads that do not divide, a bad scale,
/// short buffers, overlapping strides or outputs, and (for the FlashAttention kernel) Q, K, V
/// not 16-byte aligned with strides that are multiples of 8 elements, or O not 4-byte
/// aligned with even strides. Runs [`at::Variant::select`]'s kernel: FlashAttention-2 on
/// `mma.sync` (`attention/mma_d64`, `attention/mma_d128`) on every supported GPU. Asynchronous
/// on the `Gpu`'s stream. For a chosen kernel or repeated launches on the same buffers, use
/// [`at::prepare()`] and [`at::Prepared::launch`].
///
/// ```no_run
/// use rustile::attention::Shape;
/// use rustile::half::bf16;
/// use rustile::{api, AttentionOptions, Gpu};
///
/// # fn main() -> rustile::Result<()> {
/// let gpu = Gpu::new(0)?;
/// // Grouped-query attention: 32 query heads share 8 key/value heads.
/// let shape = Shape::new(2, 1024, 1024, 32, 8, 128).with_causal(true);
/// let q = gpu.upload(&vec![bf16::ONE; 2 * 1024 * 32 * 128], "Q")?;
/// let k = gpu.upload(&vec![bf16::ONE; 2 * 1024 * 8 * 128], "K")?;
/// let v = gpu.upload(&vec![bf16::ONE; 2 * 1024 * 8 * 128], "V")?;
/// let mut o = gpu.alloc::<bf16>(2 * 1024 * 32 * 128, "O")?;
/// let mut lse = gpu.alloc::<f32>(2 * 32 * 1024, "LSE")?;
/// let opts = AttentionOptions { lse: Some(&mut lse), ..Default::default() };
/// let ran = api::attention(&gpu, &shape, &q, &k, &v, &mut o, opts)?; // attention/mma_d128
/// let o = gpu.download(&o, "O")?;
/// # let _ = (ran, o); Ok(()) }
/// ```
#[allow(clippy::too_many_arguments)]
pub fn attention<T: TcElem>(
    gpu: &Gpu,
    shape: &Shape,
    q: &impl DevicePtr<T>,
    k: &impl DevicePtr<T>,
    v: &impl DevicePtr<T>,
    o: &mut impl DevicePtrMut<T>,
    opts: AttentionOptions<'_>,
) -> Result<Launched> {
    let p = problem::<T>(shape, opts.layout.as_ref());
    let (q, k, v) = (
        Bits::<T, _>::new(q),
        Bits::<T, _>::new(k),
        Bits::<T, _>::new(v),
    );
    let mut o = BitsMut::<T, _>::new(o);
    let input = |data| Input { dtype: T::IN, data };
    let mut lse = opts.lse;
    // Everything is checked (an LSE of our own counts as not yet allocated: address 0)
    // before the LSE scratch is allocated and the kernel prepared.
    {
        let stream = gpu.stream();
        let lse_op = lse.as_mut().map_or((p.shape.lse_len(), 0), |l| {
            (l.len(), l.device_ptr_mut(stream).0)
        });
        let addr = |x: &dyn DevicePtr<u16>| x.device_ptr(stream).0;
        let ops = Operands::of(
            &p,
            [q.len(), k.len(), v.len(), o.len(), lse_op.0],
            [
                addr(&q),
                addr(&k),
                addr(&v),
                o.device_ptr_mut(stream).0,
                lse_op.1,
            ],
        );
        at::resolve(at::Target::Gpu(gpu.flavour()), None, &p, &ops)?;
    }
    let mut own: Option<CudaSlice<f32>> = None;
    let lse: &mut dyn DevicePtrMut<f32> = match lse {
        Some(l) => l,
        None => own.insert(gpu.alloc::<f32>(p.shape.lse_len(), "attention LSE")?),
    };
    let mut bufs = Buffers {
        q: input(&q),
        k: input(&k),
        v: input(&v),
        o: Output {
            dtype: T::IN,
            data: &mut o,
        },
        lse,
    };
    let record = at::run(gpu, None, &p, &mut bufs)?;
    Ok(Launched {
        family: rustile_kernels::attention::FAMILY,
        variant: record.name,
    })
}
