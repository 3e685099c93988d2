//! A problem bound to a kernel on a GPU ([`Prepared`]): checked once, its functions looked up
//! and their shared-memory limits raised once, `naive`'s scratch allocated once; then
//! [`Prepared::launch`] re-checks the buffers it is given (cheap) and enqueues the plans —
//! what a benchmark repeats.

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, DevicePtr, DevicePtrMut};
use rustile_kernels::registry::{DType, KernelInfo};

use crate::check;
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::tma::{tensor_map_4d, upload_maps};

use super::{kind_of, plans, scratch_len, Addrs, Kind, Operand, Operands, Problem, Target, Variant};

/// The TMA kernel's tensor maps of Q, K and V at `[q, k, v]`, in device memory (128 bytes
/// each): 4-D `(head_dim, seq, heads, batch)` with the problem's strides, so a box of rows
/// never crosses into another head, and rows past the sequence read as zeros.
fn tensor_maps(gpu: &Gpu, p: &Problem, [q, k, v]: [u64; 3]) -> Result<CudaSlice<u8>> {
    use rustile_kernels::attention::v03_wgmma::BOX;
    let s = &p.shape;
    let l = &p.layout;
    let e = p.dtype.bytes() as u64;
    let map = |addr: u64, st: super::Strides, seq: usize, heads: usize| {
        tensor_map_4d(
            p.dtype,
            addr,
            [s.head_dim as u64, seq as u64, heads as u64, s.batch as u64],
            [st.seq as u64 * e, st.head as u64 * e, st.batch as u64 * e],
            [BOX.0, BOX.1, 1, 1],
        )
    };
    upload_maps(
        gpu,
        &[
            map(q, l.q, s.seq_q, s.heads_q)?,
            map(k, l.k, s.seq_kv, s.heads_kv)?,
            map(v, l.v, s.seq_kv, s.heads_kv)?,
        ],
    )
}

/// An input tensor on the device: its element type and its elements (f16/bf16 as bits).
#[derive(Clone, Copy)]
pub struct Input<'a> {
    /// What the bits are.
    pub dtype: DType,
    /// The buffer.
    pub data: &'a dyn DevicePtr<u16>,
}

/// The output tensor on the device.
pub struct Output<'a> {
    /// What the bits are to be.
    pub dtype: DType,
    /// The buffer.
    pub data: &'a mut dyn DevicePtrMut<u16>,
}

/// The five buffers of a forward: Q, K, V in, O and the f32 row log-sum-exp out.
pub struct Buffers<'a> {
    /// Queries, `(batch, seq_q, heads_q, head_dim)` by the problem's strides.
    pub q: Input<'a>,
    /// Keys, `(batch, seq_kv, heads_kv, head_dim)`.
    pub k: Input<'a>,
    /// Values, `(batch, seq_kv, heads_kv, head_dim)`.
    pub v: Input<'a>,
    /// Output, `(batch, seq_q, heads_q, head_dim)`.
    pub o: Output<'a>,
    /// Log-sum-exp, `(batch, heads_q, seq_q)` contiguous, natural log.
    pub lse: &'a mut dyn DevicePtrMut<f32>,
}

impl Buffers<'_> {
    /// The buffers as the checks see them, with their addresses on `stream` (the guards are
    /// dropped: for checks only).
    pub fn operands(&mut self, stream: &CudaStream) -> Operands {
        let (q, k, v) = (self.q, self.k, self.v);
        let op = |name, x: Input<'_>| {
            Operand::new(name, x.dtype, x.data.len(), x.data.device_ptr(stream).0)
        };
        let (o_len, lse_len) = (self.o.data.len(), self.lse.len());
        Operands {
            q: op("q", q),
            k: op("k", k),
            v: op("v", v),
            o: Operand::new("o", self.o.dtype, o_len, self.o.data.device_ptr_mut(stream).0),
            lse: Operand::new("lse", DType::F32, lse_len, self.lse.device_ptr_mut(stream).0),
        }
    }
}

/// A problem bound to its kernel on one GPU, ready to launch repeatedly.
pub struct Prepared {
    problem: Problem,
    variant: Variant,
    record: &'static KernelInfo,
    target: Target,
    /// One function per plan, in launch order, each with its shared-memory limit raised.
    funcs: Vec<CudaFunction>,
    scratch: Option<CudaSlice<f32>>,
    /// The TMA kernel's tensor maps and the Q, K, V addresses they hold.
    maps: Option<(CudaSlice<u8>, [u64; 3])>,
    /// The device's SM count (persistent grids).
    sms: u32,
}

/// Every check of a launch that needs no device work — the problem ([`Problem::check`]), the
/// buffers ([`Problem::check_operands`]), and the kernel ([`Variant::supports`]: head
/// dimension, target, grid, scratch, alignment) — and the kernel that runs: `variant`, or
/// [`Variant::select`]'s. Returns the variant and the record that runs.
pub fn resolve(
    target: Target,
    variant: Option<Variant>,
    p: &Problem,
    ops: &Operands,
) -> Result<(Variant, &'static KernelInfo)> {
    p.check()?;
    p.check_operands(ops)?;
    let variant = match variant {
        Some(v) => v,
        None => Variant::select(target, p, ops)?,
    };
    let record = variant.supports(target, p, Some(ops))?;
    Ok((variant, record))
}

/// Checks `p` against `bufs` and the device, picks `variant` (or [`Variant::select`]'s), looks
/// its functions up and allocates its scratch. Nothing is launched.
pub fn prepare(
    gpu: &Gpu,
    variant: Option<Variant>,
    p: &Problem,
    bufs: &mut Buffers<'_>,
) -> Result<Prepared> {
    let ops = bufs.operands(gpu.stream());
    let target = Target::Gpu(gpu.flavour());
    let (variant, record) = resolve(target, variant, p, &ops)?;
    let mut funcs = Vec::new();
    // The plans as `launch` will build them (the SM count decides the TMA kernel's key splits,
    // and with them whether a combine pass follows).
    let probe = Addrs {
        sms: gpu.info().sm_count,
        ..Addrs::default()
    };
    for plan in plans(p, record, &probe)? {
        // Device limits (grid, threads, opt-in shared memory) and the shared-memory attribute.
        let (f, _) = check::prepare_symbol(
            gpu,
            plan.kernel,
            plan.entry.symbol,
            plan.grid,
            plan.shared_bytes,
        )?;
        funcs.push(f);
    }
    let scratch = match scratch_len(p, record, gpu.info().sm_count)? {
        0 => None,
        n => Some(gpu.alloc::<f32>(n, "attention score scratch")?),
    };
    let maps = if kind_of(record) == Some(Kind::Tma) {
        let [q, k, v, ..] = ops.addrs();
        Some((tensor_maps(gpu, p, [q, k, v])?, [q, k, v]))
    } else {
        None
    };
    Ok(Prepared {
        problem: *p,
        variant,
        record,
        target,
        funcs,
        scratch,
        maps,
        sms: gpu.info().sm_count,
    })
}

impl Prepared {
    /// The kernel it launches.
    pub fn variant(&self) -> Variant {
        self.variant
    }

    /// The registry record that runs (`mma_d64`, …).
    pub fn record(&self) -> &'static KernelInfo {
        self.record
    }

    /// The problem.
    pub fn problem(&self) -> &Problem {
        &self.problem
    }

    /// Enqueues one forward on `stream` (of the context the problem was prepared on). The
    /// buffers are checked again — types, lengths, overlap, the kernel's alignment — so any
    /// buffers that fit the problem may be passed; for the TMA kernel Q, K and V must be the
    /// buffers `prepare` saw (its tensor maps hold their addresses), O and LSE may change.
    pub fn launch(&mut self, stream: &Arc<CudaStream>, bufs: &mut Buffers<'_>) -> Result<()> {
        let p = &self.problem;
        // Each pointer is taken once; its guard keeps the buffer in stream order until the
        // launches below are enqueued, and the checks see the addresses that are launched.
        let (q, k, v) = (bufs.q, bufs.k, bufs.v);
        let (o_len, lse_len) = (bufs.o.data.len(), bufs.lse.len());
        let (qp, _gq) = q.data.device_ptr(stream);
        let (kp, _gk) = k.data.device_ptr(stream);
        let (vp, _gv) = v.data.device_ptr(stream);
        let (op, _go) = bufs.o.data.device_ptr_mut(stream);
        let (lp, _gl) = bufs.lse.device_ptr_mut(stream);
        let ops = Operands {
            q: Operand::new("q", q.dtype, q.data.len(), qp),
            k: Operand::new("k", k.dtype, k.data.len(), kp),
            v: Operand::new("v", v.dtype, v.data.len(), vp),
            o: Operand::new("o", bufs.o.dtype, o_len, op),
            lse: Operand::new("lse", DType::F32, lse_len, lp),
        };
        p.check_operands(&ops)?;
        self.variant.supports(self.target, p, Some(&ops))?;
        let scratch = self.scratch.as_mut().map(|s| s.device_ptr_mut(stream));
        let sp = scratch.as_ref().map_or(0, |(ptr, _guard)| *ptr);
        let mut addrs = Addrs::new(ops.addrs(), sp);
        addrs.sms = self.sms;
        let maps = self.maps.as_ref().map(|(m, at)| (m.device_ptr(stream), *at));
        if let Some(((mp, _guard), at)) = &maps {
            if *at != [qp, kp, vp] {
                return Err(Error::Unsupported {
                    kernel: format!("attention/{}", self.record.name),
                    what: "Q, K and V must be the buffers `prepare` saw (the tensor maps hold \
                           their addresses); prepare again for other buffers"
                        .into(),
                });
            }
            addrs.maps = *mp;
        }
        let plans = plans(p, self.record, &addrs)?;
        if plans.len() != self.funcs.len() {
            return Err(Error::Unsupported {
                kernel: format!("attention/{}", self.record.name),
                what: format!(
                    "{} launches planned, {} prepared: prepare again",
                    plans.len(),
                    self.funcs.len()
                ),
            });
        }
        for (plan, f) in plans.iter().zip(&self.funcs) {
            // SAFETY: the plans are the argument lists of the kernels' signatures (built by
            // `plans` from the same records); every buffer was checked just above against the
            // spans the shape and strides imply, its type and the kernel's alignment; O and LSE
            // share no memory with anything else; the scratch holds `scratch_len` floats (for
            // the same SM count, so the same splits); the
            // grids and shared memory were checked against the device by `prepare`; the
            // guards keep the buffers in stream order until the launches are enqueued.
            unsafe { plan.enqueue(f, stream) }.map_err(|e| {
                e.context(|| {
                    format!(
                        "launching attention/{} {}",
                        plan.kernel.name,
                        p.shape.describe()
                    )
                })
            })?;
        }
        Ok(())
    }
}

/// Checks and runs one forward on `gpu`'s stream (`variant` None: the selected one); returns
/// the record that ran.
pub fn run(
    gpu: &Gpu,
    variant: Option<Variant>,
    p: &Problem,
    bufs: &mut Buffers<'_>,
) -> Result<&'static KernelInfo> {
    let mut prep = prepare(gpu, variant, p, bufs)?;
    prep.launch(gpu.stream(), bufs)?;
    Ok(prep.record)
}
