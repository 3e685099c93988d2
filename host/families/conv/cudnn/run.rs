//! Running the two ops: device buffers of either width ([`DevBuf`]), the algorithm search,
//! the raw calls on device addresses, and the checked call on buffers.

use std::ffi::c_void;

use cudarc::cudnn::result::CudnnError;
use cudarc::cudnn::sys;
use cudarc::cudnn::sys::cudnnConvolutionFwdAlgo_t as Algo;
use cudarc::driver::{CudaSlice, DevicePtr};
use rustile_kernels::registry::DType;

use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::harness;

use super::super::{Addrs, Inputs};
use super::algo::{self, Op, Outcome, Trial};
use super::handle::{status, TensorDesc};
use super::{bind, desc, Chosen, CudnnConv, Options, NAME};

pub use super::super::buf::DevBuf;

impl CudnnConv {
    /// rustile's f32 bias (`k` values) as the fused op reads it: rounded to
    /// [`CudnnConv::bias_dtype`] and uploaded.
    pub fn bias_from_f32(&self, gpu: &Gpu, bias: &[f32]) -> Result<DevBuf> {
        if bias.len() != self.problem.k {
            return Err(Error::BufferLength {
                kernel: NAME.into(),
                buffer: "bias",
                got: bias.len(),
                need: self.problem.k,
                shape: self.problem.label(),
            });
        }
        DevBuf::upload(gpu, self.bias_dtype(), bias, "cuDNN bias")
    }

    fn workspace_size(&self, algo: Algo) -> std::result::Result<usize, CudnnError> {
        let d = &self.desc;
        let mut bytes = 0usize;
        // SAFETY: probed; live handle and descriptors; valid out-pointer.
        unsafe {
            sys::cudnnGetConvolutionForwardWorkspaceSize(
                self.handle.0,
                d.x.0,
                d.w.0,
                d.conv.0,
                d.y.0,
                algo,
                &mut bytes,
            )
        }
        .result()?;
        Ok(bytes)
    }

    /// One call of `op` with `algo` on the buffers at `a` (bias: the caller's, or the zero
    /// bias when the problem has none), with the workspace held.
    ///
    /// # Safety
    /// As [`CudnnConv::run_fused`]; the workspace holds what `algo` needs.
    unsafe fn call(&self, op: Op, algo: Algo, a: &Addrs) -> std::result::Result<(), CudnnError> {
        let d = &self.desc;
        let (ws, ws_len) = match &self.workspace {
            Some(b) => (b.device_ptr(&self.stream).0, b.len()),
            None => (0, 0),
        };
        let (one, zero) = (1f32, 0f32);
        let scale = |v: &f32| v as *const f32 as *const c_void;
        let ptr = |v: u64| v as *const c_void;
        match op {
            Op::Fused => {
                let bias = match &self.zero_bias {
                    Some(z) => z.addr(&self.stream),
                    None => a.bias,
                };
                sys::cudnnConvolutionBiasActivationForward(
                    self.handle.0,
                    scale(&one),
                    d.x.0,
                    ptr(a.x),
                    d.w.0,
                    ptr(a.w),
                    d.conv.0,
                    algo,
                    ws as *mut c_void,
                    ws_len,
                    scale(&zero),
                    d.y.0,
                    ptr(a.y),
                    d.bias.0,
                    ptr(bias),
                    d.act.0,
                    d.y.0,
                    a.y as *mut c_void,
                )
            }
            Op::ConvOnly => sys::cudnnConvolutionForward(
                self.handle.0,
                scale(&one),
                d.x.0,
                ptr(a.x),
                d.w.0,
                ptr(a.w),
                d.conv.0,
                algo,
                ws as *mut c_void,
                ws_len,
                scale(&zero),
                d.y.0,
                a.y as *mut c_void,
            ),
        }
        .result()
    }

    /// Tries every algorithm for both ops on scratch buffers and keeps the fastest of each.
    /// The fused op is tried with each bias type of [`desc::bias_candidates`] in turn until
    /// one runs it.
    pub(super) fn search(&mut self, gpu: &Gpu, opts: &Options) -> Result<()> {
        let p = self.problem;
        // Random operands, so the timed runs see the data a benchmark does.
        let inputs = Inputs::random(&p, 0x00C0_FFEE)?;
        let [_, _, ly] = p.lens()?;
        let x = DevBuf::upload(gpu, p.dtype, &inputs.x, "cuDNN search x")?;
        let w = DevBuf::upload(gpu, p.dtype, &inputs.w, "cuDNN search w")?;
        let y = DevBuf::zeros(gpu, p.dtype, ly, "cuDNN search y")?;
        let sizes: Vec<(Algo, std::result::Result<usize, CudnnError>)> = algo::ALL
            .iter()
            .map(|&al| (al, self.workspace_size(al)))
            .collect();
        let most = sizes
            .iter()
            .filter_map(|(_, s)| s.as_ref().ok().copied())
            .filter(|&s| s <= opts.workspace_cap)
            .max()
            .unwrap_or(0);
        self.workspace = self.alloc_workspace(gpu, most)?;
        let mut a = Addrs {
            x: x.addr(&self.stream),
            w: w.addr(&self.stream),
            bias: 0,
            y: y.addr(&self.stream),
        };
        let mut trials = self.try_all(gpu, opts, Op::ConvOnly, &sizes, &a)?;
        for bias_dtype in desc::bias_candidates(p.dtype) {
            self.use_bias_dtype(gpu, bias_dtype)?;
            let bias = match &inputs.bias {
                Some(b) => Some(self.bias_from_f32(gpu, b)?),
                None => None,
            };
            a.bias = bias.as_ref().map_or(0, |b| b.addr(&self.stream));
            let fused = self.try_all(gpu, opts, Op::Fused, &sizes, &a)?;
            let ran = algo::fastest(&fused, Op::Fused).is_some();
            trials.extend(fused);
            gpu.synchronize("the cuDNN algorithm search")?;
            if ran {
                break;
            }
        }
        self.trials = trials;
        let pick = |op: Op| -> Result<Chosen> {
            let t = algo::fastest(&self.trials, op).ok_or_else(|| Error::Unsupported {
                kernel: format!("{NAME}/{}", op.name()),
                what: format!(
                    "{}: no algorithm runs it: {}",
                    p.label(),
                    self.trials
                        .iter()
                        .filter(|t| t.op == op)
                        .map(Trial::describe)
                        .collect::<Vec<_>>()
                        .join("; ")
                ),
            })?;
            Ok(Chosen {
                algo: t.algo,
                workspace: t.workspace,
                search_ms: match t.outcome {
                    Outcome::Ran(ms) => ms,
                    _ => f64::NAN,
                },
            })
        };
        self.fused = pick(Op::Fused)?;
        self.conv_only = pick(Op::ConvOnly)?;
        // The timed calls get the workspace the search ran with: cuDNN may pick a different
        // kernel for the same algorithm when it is given less. RUSTILE_CUDNN_SHRINK_WS=1 keeps
        // only what the two chosen algorithms report needing (the first session's behaviour).
        if std::env::var_os("RUSTILE_CUDNN_SHRINK_WS").is_some_and(|v| v == "1") {
            let need = self.fused.workspace.max(self.conv_only.workspace);
            if need < most {
                self.workspace = None;
                self.workspace = self.alloc_workspace(gpu, need)?;
            }
        }
        Ok(())
    }

    /// Sets the bias descriptor (and the zero bias of a problem without one) to `dtype`.
    fn use_bias_dtype(&mut self, gpu: &Gpu, dtype: DType) -> Result<()> {
        self.desc.bias = TensorDesc::new(desc::data_type(dtype), &self.geometry.bias)?;
        self.bias_dtype = dtype;
        self.zero_bias = if self.problem.bias {
            None
        } else {
            Some(DevBuf::zeros(
                gpu,
                dtype,
                self.problem.k,
                "cuDNN zero bias",
            )?)
        };
        Ok(())
    }

    /// Every algorithm of `sizes` for `op` on the scratch buffers at `a`: refused, over the
    /// cap, or timed.
    fn try_all(
        &self,
        gpu: &Gpu,
        opts: &Options,
        op: Op,
        sizes: &[(Algo, std::result::Result<usize, CudnnError>)],
        a: &Addrs,
    ) -> Result<Vec<Trial>> {
        let mut trials = Vec::with_capacity(sizes.len());
        for (al, size) in sizes {
            let (al, workspace) = (*al, *size.as_ref().unwrap_or(&0));
            let outcome = match size {
                Err(e) => Outcome::Refused(format!("workspace query: {:?}", e.0)),
                Ok(s) if *s > opts.workspace_cap => Outcome::OverCap,
                // SAFETY: `a` holds `search`'s scratch buffers of the problem's lengths,
                // dtypes and layout (alive until `search` returns, after it synchronises);
                // the workspace holds every size up to the cap that was queried.
                Ok(_) => match unsafe { self.call(op, al, a) } {
                    Err(e) => Outcome::Refused(format!("{:?}", e.0)),
                    Ok(()) => {
                        let label = format!("{} {}", op.name(), algo::name(al));
                        let stats = harness::time(gpu, &opts.timing, |_| {
                            // SAFETY: as above.
                            unsafe { self.call(op, al, a) }.map_err(|e| status(&label, e))
                        })?;
                        Outcome::Ran(stats.median_ms)
                    }
                },
            };
            trials.push(Trial {
                op,
                algo: al,
                workspace,
                outcome,
            });
        }
        Ok(trials)
    }

    fn alloc_workspace(&self, gpu: &Gpu, bytes: usize) -> Result<Option<CudaSlice<u8>>> {
        if bytes == 0 {
            return Ok(None);
        }
        gpu.alloc::<u8>(bytes, "cuDNN workspace").map(Some)
    }

    fn run_raw(&self, op: Op, a: &Addrs) -> Result<()> {
        let c = self.chosen(op);
        bind(&self.stream)?;
        // SAFETY: the caller's contract (`run_fused` / `run_conv_only`, or `run`'s checks).
        unsafe { self.call(op, c.algo, a) }
            .map_err(|e| status(&format!("{} {}", op.name(), c.name()), e))
    }

    /// The fused op, `y = act(conv(x, w) + bias)`, with the chosen algorithm, on the stream
    /// this was built with. Without a bias in the problem `a.bias` is ignored (a zero bias is
    /// added); with one, `a.bias` 0 is [`Error::InvalidArgument`].
    ///
    /// # Safety
    /// `a.x`, `a.w`, `a.y` are device addresses, in this stream's context, of buffers of at
    /// least [`Problem::lens`](super::super::Problem::lens) elements of the problem's dtype in its layout; with a bias,
    /// `a.bias` of `k` elements of [`CudnnConv::bias_dtype`]. They stay allocated until the
    /// stream has run the call, and y overlaps none of the others.
    pub unsafe fn run_fused(&self, a: &Addrs) -> Result<()> {
        if self.problem.bias && a.bias == 0 {
            return Err(Error::InvalidArgument {
                kernel: format!("{NAME}/fused"),
                what: format!("{} has a bias but its address is 0", self.problem.label()),
            });
        }
        self.run_raw(Op::Fused, a)
    }

    /// The convolution alone, `y = conv(x, w)` (no bias, no activation), with the chosen
    /// algorithm; `a.bias` is ignored.
    ///
    /// # Safety
    /// As [`CudnnConv::run_fused`], for x, w and y.
    pub unsafe fn run_conv_only(&self, a: &Addrs) -> Result<()> {
        self.run_raw(Op::ConvOnly, a)
    }

    /// `op` on buffers, checked: each holds the problem's dtype and exact length, lives in
    /// this stream's context, and the bias is given exactly when the fused op has one (the
    /// conv-only op takes none).
    pub fn run(
        &self,
        op: Op,
        x: &DevBuf,
        w: &DevBuf,
        bias: Option<&DevBuf>,
        y: &mut DevBuf,
    ) -> Result<()> {
        let p = &self.problem;
        let [lx, lw, ly] = p.lens()?;
        let kernel = format!("{NAME}/{}", op.name());
        let want_bias = op == Op::Fused && p.bias;
        if bias.is_some() != want_bias {
            return Err(Error::InvalidArgument {
                kernel,
                what: format!(
                    "{}: a bias is {} for the {} op",
                    p.label(),
                    if want_bias { "needed" } else { "not taken" },
                    op.name()
                ),
            });
        }
        let bias_need = bias.map(|b| ("bias", b, self.bias_dtype(), p.k));
        let bufs = [
            ("x", x, p.dtype, lx),
            ("w", w, p.dtype, lw),
            ("y", &*y, p.dtype, ly),
        ];
        for (name, b, dtype, need) in bufs.into_iter().chain(bias_need) {
            if !b.holds(dtype) {
                return Err(Error::DTypeMismatch {
                    kernel,
                    buffer: name,
                    got: if b.holds(DType::F32) { "f32" } else { "16-bit" },
                    want: dtype.name(),
                });
            }
            if b.len() != need {
                return Err(Error::BufferLength {
                    kernel,
                    buffer: name,
                    got: b.len(),
                    need,
                    shape: p.label(),
                });
            }
            if b.context() != self.stream.context() {
                return Err(Error::InvalidArgument {
                    kernel,
                    what: format!("buffer `{name}` lives in another context than cuDNN's stream"),
                });
            }
        }
        let s = &self.stream;
        let (xa, _x) = x.ptr(s);
        let (wa, _w) = w.ptr(s);
        let (ba, _b) = match bias {
            Some(b) => {
                let (a, g) = b.ptr(s);
                (a, Some(g))
            }
            None => (0, None),
        };
        let (ya, _y) = y.ptr_mut(s);
        let a = Addrs {
            x: xa,
            w: wa,
            bias: ba,
            y: ya,
        };
        // `y` is borrowed mutably, so it is none of the inputs; every length, dtype and
        // context is checked above; the guards, dropped after the call is enqueued, order any
        // later free or write of these buffers on another stream after it.
        self.run_raw(op, &a)
    }
}
