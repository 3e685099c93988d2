//! The padded path: the tensor-core kernels at any pitch.
//!
//! `wgmma_ws` (TMA) and `mma_pipeline` (`cp.async`) read A and B in 16-byte pieces from
//! 16-byte-aligned rows. An operand that is not so stored (a pitch that is not a multiple of 8
//! elements, or a view that starts off a 16-byte boundary) is first copied, on the launch
//! stream, into a scratch buffer whose pitch is its row length rounded up to 8 elements
//! (`cuMemcpy2DAsync`, device to device), and the kernel runs on the copy. Only the pitch
//! changes: the shape is the caller's, so the kernels' M/N/K tails still do the work at the
//! edges (TMA fills coordinates past the tensor map's `cols` with zeros; `mma_pipeline`
//! assembles edge chunks from element loads predicated on `cols`), and the pad columns between
//! `cols` and the scratch pitch are never read. They are zeros anyway: the scratch is allocated
//! zeroed and each copy writes only the first `cols` elements of a row.
//!
//! C's alignment matters less: every pitch is correct, but an odd one defeats the epilogue's
//! pair stores (one 4- or 8-byte store per two columns becomes two). With
//! [`Padding::Auto`] the kernel then writes an aligned scratch C, copied back after it (and
//! copied in first when β ≠ 0, since the epilogue reads it). [`Padding::Inputs`] stores into
//! the caller's C whatever its pitch (the A/B measurement of the two), [`Padding::Never`] pads
//! nothing, so the aligned-only kernels refuse unaligned operands.
//!
//! Cost: each padded operand is read and written once more, `2·rows·cols·bytes` of DRAM
//! traffic; see `notes/hgemm.md` for what it adds to a product.

use std::sync::Arc;

use cudarc::driver::{sys, CudaSlice, CudaStream, SyncOnDrop};

use crate::error::{DriverContext, Error, Result};

use super::prepare::OutBuf;
use super::*;

/// Whether [`prepare_with`] may copy operands into aligned scratch ([`Options::padding`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize)]
pub enum Padding {
    /// Pad A and B where the kernel cannot read them in place, and C where its pitch is odd.
    #[default]
    Auto,
    /// Pad A and B as [`Padding::Auto`] does; C is always written in place.
    Inputs,
    /// Pad nothing: `mma_pipeline` and `wgmma_ws` refuse unaligned A and B
    /// ([`Error::Unsupported`]), and the selection takes `mma` for them.
    Never,
}

impl Padding {
    /// Every policy.
    pub const ALL: [Padding; 3] = [Padding::Auto, Padding::Inputs, Padding::Never];

    /// Name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Padding::Auto => "auto",
            Padding::Inputs => "inputs",
            Padding::Never => "never",
        }
    }

    /// Parses a name.
    pub fn parse(s: &str) -> Result<Self> {
        Self::ALL
            .into_iter()
            .find(|v| v.name() == s)
            .ok_or_else(|| Error::Usage(format!("unknown padding `{s}` (auto, inputs, never)")))
    }
}

/// One matrix of the product.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operand {
    /// A, M × K.
    A,
    /// B, K × N or (transposed) N × K.
    B,
    /// C, M × N.
    C,
}

impl Operand {
    /// `(rows, columns, pitch)` of this matrix in `p`, elements.
    pub fn dims(self, p: &Problem) -> (usize, usize, usize) {
        match (self, p.b) {
            (Operand::A, _) => (p.m, p.k, p.lda),
            (Operand::B, BLayout::RowMajor) => (p.k, p.n, p.ldb),
            (Operand::B, BLayout::Transposed) => (p.n, p.k, p.ldb),
            (Operand::C, _) => (p.m, p.n, p.ldc),
        }
    }

    /// Bytes per element: 2 for A and B, the output type's for C.
    pub fn elem_bytes(self, p: &Problem) -> usize {
        match self {
            Operand::C => p.out.bytes(),
            _ => 2,
        }
    }
}

/// A row pitch for rows of `cols` elements of `bytes` each that is a multiple of 16 bytes
/// (saturating: [`PadPlan::scratch_lens`] refuses what the kernels cannot index).
pub fn aligned_pitch(cols: usize, bytes: usize) -> usize {
    let per = (16 / bytes.clamp(1, 16)).max(1);
    cols.checked_next_multiple_of(per).unwrap_or(usize::MAX)
}

/// Which matrices run through scratch, and the scratch pitches (elements); `None`: in place.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize)]
pub struct PadPlan {
    /// A's scratch pitch.
    pub a: Option<usize>,
    /// B's scratch pitch.
    pub b: Option<usize>,
    /// C's scratch pitch.
    pub c: Option<usize>,
}

impl PadPlan {
    /// What `variant` needs padded for `p` (checked by [`Problem::check`]) with A and B at
    /// `addrs`, under `padding`: A or B when its base or pitch is not 16-byte aligned, C (with
    /// [`Padding::Auto`]) when its pitch is odd. `mma` reads any pitch: nothing.
    pub fn new(p: &Problem, variant: Variant, padding: Padding, addrs: [u64; 2]) -> Self {
        if variant == Variant::Mma || padding == Padding::Never {
            return Self::default();
        }
        let pad = |op: Operand, addr: u64| {
            let (_, cols, ld) = op.dims(p);
            let aligned = addr.is_multiple_of(16) && (ld * 2).is_multiple_of(16);
            (!aligned).then(|| aligned_pitch(cols, 2))
        };
        let c = (padding == Padding::Auto && !p.ldc.is_multiple_of(2))
            .then(|| aligned_pitch(p.n, p.out.bytes()));
        Self {
            a: pad(Operand::A, addrs[0]),
            b: pad(Operand::B, addrs[1]),
            c,
        }
    }

    /// Whether nothing is padded.
    pub fn is_empty(&self) -> bool {
        self.a.is_none() && self.b.is_none() && self.c.is_none()
    }

    /// The scratch pitch of `op`, if it is padded.
    pub fn pitch(&self, op: Operand) -> Option<usize> {
        match op {
            Operand::A => self.a,
            Operand::B => self.b,
            Operand::C => self.c,
        }
    }

    /// The padded matrices as text, `A,B,C` (empty when none).
    pub fn tag(&self) -> String {
        [Operand::A, Operand::B, Operand::C]
            .into_iter()
            .filter(|&op| self.pitch(op).is_some())
            .map(|op| format!("{op:?}"))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The problem the kernel runs: `p` with the scratch pitches.
    pub fn apply(&self, p: &Problem) -> Problem {
        Problem {
            lda: self.a.unwrap_or(p.lda),
            ldb: self.b.unwrap_or(p.ldb),
            ldc: self.c.unwrap_or(p.ldc),
            ..*p
        }
    }

    /// Elements of each scratch buffer `[a, b, c]` (0 where not padded): whole rows,
    /// `rows · pitch` (so the last row is as wide as the others), at least 1 (so an empty
    /// matrix still has an address), after checking that the kernel can index the padded
    /// problem: [`Error::TooLarge`] when a pitch passes 2³¹ or a size overflows.
    pub fn scratch_lens(&self, p: &Problem) -> Result<[usize; 3]> {
        let q = self.apply(p);
        q.check()?;
        let spans = q.lens()?;
        let mut out = [0; 3];
        for (i, op) in [Operand::A, Operand::B, Operand::C].into_iter().enumerate() {
            let Some(ld) = self.pitch(op) else {
                continue;
            };
            let (rows, _, _) = op.dims(&q);
            let whole = rows.checked_mul(ld).ok_or_else(|| Error::TooLarge {
                kernel: format!("hgemm {} padding", p.shape()),
                what: format!("{op:?}'s scratch of {rows} rows × {ld} elements overflows usize"),
            })?;
            out[i] = whole.max(spans[i]).max(1);
        }
        Ok(out)
    }

    /// Bytes of scratch, checked ([`PadPlan::scratch_lens`], then their sum).
    pub fn scratch_bytes(&self, p: &Problem) -> Result<usize> {
        let [a, b, c] = self.scratch_lens(p)?;
        crate::check::total_bytes(
            &format!("hgemm {} padding scratch", p.shape()),
            &[(a, 2), (b, 2), (c, p.out.bytes())],
        )
    }

    /// The copy of `op` from the caller's buffer into scratch, if `op` is padded (C's copy
    /// back is its [`Copy2d::reversed`]).
    pub fn copy(&self, p: &Problem, op: Operand) -> Option<Copy2d> {
        let ld = self.pitch(op)?;
        let (rows, cols, src_ld) = op.dims(p);
        let bytes = op.elem_bytes(p);
        Some(Copy2d {
            rows,
            width: cols * bytes,
            src_pitch: src_ld * bytes,
            dst_pitch: ld * bytes,
        })
    }

    /// Checks every copy's pitches against the driver's limit (`CU_DEVICE_ATTRIBUTE_MAX_PITCH`,
    /// bytes): [`Error::TooLarge`] naming the matrix otherwise. Empty copies are not made.
    pub fn check_pitches(&self, p: &Problem, max_pitch: usize) -> Result<()> {
        for op in [Operand::A, Operand::B, Operand::C] {
            let Some(c) = self.copy(p, op).filter(|c| !c.is_empty()) else {
                continue;
            };
            if c.src_pitch.max(c.dst_pitch) > max_pitch {
                return Err(Error::TooLarge {
                    kernel: format!("hgemm {} padding", p.shape()),
                    what: format!(
                        "{op:?}'s pitch of {} bytes (scratch {}) exceeds the device's 2-D copy \
                         limit of {max_pitch} bytes",
                        c.src_pitch, c.dst_pitch
                    ),
                });
            }
        }
        Ok(())
    }
}

/// One pitched copy: `rows` rows of `width` bytes, rows `src_pitch` bytes apart in the source
/// and `dst_pitch` in the destination.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Copy2d {
    /// Rows.
    pub rows: usize,
    /// Bytes per row.
    pub width: usize,
    /// Source row pitch, bytes.
    pub src_pitch: usize,
    /// Destination row pitch, bytes.
    pub dst_pitch: usize,
}

impl Copy2d {
    /// The copy the other way (scratch C back into the caller's).
    pub fn reversed(self) -> Self {
        Self {
            src_pitch: self.dst_pitch,
            dst_pitch: self.src_pitch,
            ..self
        }
    }

    /// Whether it copies nothing.
    pub fn is_empty(&self) -> bool {
        self.rows == 0 || self.width == 0
    }

    /// Bytes from the first byte touched to one past the last, `(rows − 1)·pitch + width`, for
    /// a side of `pitch` (`None`: overflow).
    fn extent(&self, pitch: usize) -> Option<usize> {
        if self.is_empty() {
            return Some(0);
        }
        (self.rows - 1).checked_mul(pitch)?.checked_add(self.width)
    }

    /// Checks both sides against buffers of `src` and `dst` bytes.
    fn check(&self, src: usize, dst: usize) -> Result<()> {
        let (s, d) = (self.extent(self.src_pitch), self.extent(self.dst_pitch));
        if self.width > self.src_pitch.min(self.dst_pitch) || s.is_none_or(|s| s > src) {
            return Err(Error::Usage(format!(
                "hgemm padding: a copy of {self:?} does not fit its source of {src} bytes"
            )));
        }
        if d.is_none_or(|d| d > dst) {
            return Err(Error::Usage(format!(
                "hgemm padding: a copy of {self:?} does not fit its destination of {dst} bytes"
            )));
        }
        Ok(())
    }

    /// The same copy on the host over slices of `T` (the simulator's padded path, and tests):
    /// whole elements only; both sides checked.
    pub fn host<T: Copy>(&self, src: &[T], dst: &mut [T]) -> Result<()> {
        let e = std::mem::size_of::<T>();
        self.check(std::mem::size_of_val(src), std::mem::size_of_val(dst))?;
        if !(self.width | self.src_pitch | self.dst_pitch).is_multiple_of(e) {
            return Err(Error::Usage(format!(
                "hgemm padding: {self:?} is not in whole {e}-byte elements"
            )));
        }
        let (w, sp, dp) = (self.width / e, self.src_pitch / e, self.dst_pitch / e);
        for r in 0..if self.is_empty() { 0 } else { self.rows } {
            dst[r * dp..r * dp + w].copy_from_slice(&src[r * sp..r * sp + w]);
        }
        Ok(())
    }

    /// Enqueues the copy on `stream` (`cuMemcpy2DAsync`, device to device) from `src` to `dst`,
    /// each `(address, bytes the buffer holds)`, after checking both extents. The caller holds
    /// the buffers' stream guards until it is enqueued.
    fn enqueue(&self, stream: &Arc<CudaStream>, src: (u64, usize), dst: (u64, usize)) -> Result<()> {
        self.check(src.1, dst.1)?;
        if self.is_empty() {
            return Ok(());
        }
        let what = || format!("padding copy {self:?}");
        stream.context().bind_to_thread().during(what)?;
        let desc = sys::CUDA_MEMCPY2D {
            srcXInBytes: 0,
            srcY: 0,
            srcMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_DEVICE,
            srcHost: std::ptr::null(),
            srcDevice: src.0,
            srcArray: std::ptr::null_mut(),
            srcPitch: self.src_pitch,
            dstXInBytes: 0,
            dstY: 0,
            dstMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_DEVICE,
            dstHost: std::ptr::null_mut(),
            dstDevice: dst.0,
            dstArray: std::ptr::null_mut(),
            dstPitch: self.dst_pitch,
            WidthInBytes: self.width,
            Height: self.rows,
        };
        // SAFETY: both sides are device memory of the given sizes, which `check` proved hold
        // `(rows − 1)·pitch + width` bytes each with `width ≤ pitch`; the descriptor is a local
        // the driver reads during the call; the copy is ordered on `stream`, whose guards the
        // caller holds for both buffers.
        unsafe { sys::cuMemcpy2DAsync_v2(&desc, stream.cu_stream()) }
            .result()
            .during(what)
    }
}

/// The scratch buffers of a padded [`Prepared`]: allocated once, never moved (a `wgmma_ws`
/// tensor map holds their addresses).
#[derive(Default)]
pub(super) struct Scratch {
    a: Option<CudaSlice<u16>>,
    b: Option<CudaSlice<u16>>,
    c: Option<OutBuf>,
}

impl Scratch {
    /// Zeroed scratch for `plan` over `p` (sizes checked by [`PadPlan::scratch_lens`] first).
    pub(super) fn alloc(gpu: &crate::gpu::Gpu, p: &Problem, plan: &PadPlan) -> Result<Self> {
        let [la, lb, lc] = plan.scratch_lens(p)?;
        let half = |len: usize, what: &str| -> Result<Option<CudaSlice<u16>>> {
            (len > 0).then(|| gpu.alloc::<u16>(len, what)).transpose()
        };
        Ok(Self {
            a: half(la, "hgemm padded A")?,
            b: half(lb, "hgemm padded B")?,
            c: (lc > 0).then(|| OutBuf::alloc(gpu, p.out, lc)).transpose()?,
        })
    }

    /// The device address of padded A (`Operand::A`) or B, if allocated.
    pub(super) fn addr(&self, op: Operand, stream: &CudaStream) -> Option<u64> {
        use cudarc::driver::DevicePtr;
        let s = match op {
            Operand::A => self.a.as_ref(),
            Operand::B => self.b.as_ref(),
            Operand::C => None,
        }?;
        Some(s.device_ptr(stream).0)
    }

    /// Enqueues the first (at most two) rows of each padded input's copy from the caller's
    /// `(address, elements)` `[a, b]`, so that a driver that refuses the pitches (the CUDA
    /// documentation allows device-to-device 2-D copies to fail for pitches that
    /// `cuMemAllocPitch` did not choose) does so at `prepare`, where the selection can still
    /// take `mma`. The rows are copied again by every launch.
    pub(super) fn probe(
        &mut self,
        stream: &Arc<CudaStream>,
        p: &Problem,
        plan: &PadPlan,
        caller: [(u64, usize); 2],
    ) -> Result<()> {
        use cudarc::driver::DevicePtrMut;
        let Scratch { a, b, .. } = self;
        for (i, op, slot) in [(0, Operand::A, a), (1, Operand::B, b)] {
            let (Some(copy), Some(s)) = (plan.copy(p, op), slot.as_mut()) else {
                continue;
            };
            let copy = Copy2d {
                rows: copy.rows.min(2),
                ..copy
            };
            let len = s.len() * 2;
            let (ptr, _g) = s.device_ptr_mut(stream);
            copy.enqueue(stream, (caller[i].0, caller[i].1.saturating_mul(2)), (ptr, len))?;
        }
        Ok(())
    }

    /// Enqueues what a launch does before the kernel: the padded inputs copied into scratch
    /// (from the caller's `(address, elements)` `[a, b, c]`), and C when it is padded and
    /// β ≠ 0. Returns the addresses the kernel takes (the caller's where not padded) and the
    /// scratch guards, which the caller holds until the kernel and [`finish`] are enqueued.
    pub(super) fn start<'s>(
        &'s mut self,
        stream: &'s Arc<CudaStream>,
        p: &Problem,
        plan: &PadPlan,
        caller: [(u64, usize); 3],
    ) -> Result<Started<'s>> {
        use cudarc::driver::DevicePtrMut;
        let mut addrs = caller.map(|(a, _)| a);
        let mut guards = Vec::new();
        let Scratch { a, b, c } = self;
        for (i, op, slot) in [(0, Operand::A, a), (1, Operand::B, b)] {
            let (Some(copy), Some(s)) = (plan.copy(p, op), slot.as_mut()) else {
                continue;
            };
            let len = s.len() * 2;
            let (ptr, g) = s.device_ptr_mut(stream);
            copy.enqueue(stream, (caller[i].0, caller[i].1.saturating_mul(2)), (ptr, len))?;
            addrs[i] = ptr;
            guards.push(g);
        }
        let mut c_len = 0;
        if let (Some(copy), Some(s)) = (plan.copy(p, Operand::C), c.as_mut()) {
            let (ptr, len, g) = s.ptr_mut(stream);
            if p.beta != 0.0 {
                let bytes = p.out.bytes();
                copy.enqueue(stream, (caller[2].0, caller[2].1.saturating_mul(bytes)), (ptr, len * bytes))?;
            }
            (addrs[2], c_len) = (ptr, len);
            guards.push(g);
        }
        Ok(Started {
            addrs,
            c_len,
            _guards: guards,
        })
    }
}

/// What [`Scratch::start`] enqueued: the kernel's operand addresses and the guards that order
/// the scratch on the launch stream.
pub(super) struct Started<'s> {
    /// `[a, b, c]` for the kernel: scratch where padded, the caller's elsewhere.
    pub(super) addrs: [u64; 3],
    /// Elements of scratch C (0: C is not padded).
    pub(super) c_len: usize,
    _guards: Vec<SyncOnDrop<'s>>,
}

/// Enqueues what a launch does after the kernel: padded C (`started`'s scratch) copied back
/// into the caller's C at `(address, elements)`.
pub(super) fn finish(
    stream: &Arc<CudaStream>,
    p: &Problem,
    plan: &PadPlan,
    started: &Started<'_>,
    caller_c: (u64, usize),
) -> Result<()> {
    let Some(copy) = plan.copy(p, Operand::C).filter(|_| started.c_len > 0) else {
        return Ok(());
    };
    let bytes = p.out.bytes();
    copy.reversed().enqueue(
        stream,
        (started.addrs[2], started.c_len * bytes),
        (caller_c.0, caller_c.1.saturating_mul(bytes)),
    )
}
