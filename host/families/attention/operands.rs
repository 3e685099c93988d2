//! The buffers of one launch as the checks see them — element type, length, address — and the
//! checks on them that every kernel needs: lengths against the spans the shape and strides
//! imply, one element type, natural alignment, and an output that shares no memory with an
//! input. (What a particular kernel needs beyond that, such as 16-byte alignment, is checked
//! by [`super::Variant::supports`].)

use rustile_kernels::registry::DType;

use crate::error::{Error, Result};

use super::Problem;

/// One buffer argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Operand {
    /// `q`, `k`, `v`, `o` or `lse`.
    pub name: &'static str,
    /// Its element type.
    pub dtype: DType,
    /// Elements it holds.
    pub len: usize,
    /// Device address (simulated address in the simulator); 0 for a buffer not allocated yet
    /// (its length is checked, its alignment and overlap are not: CUDA never places an
    /// allocation at 0).
    pub addr: u64,
}

impl Operand {
    /// The buffer `name` of `len` elements of `dtype` at `addr`.
    pub const fn new(name: &'static str, dtype: DType, len: usize, addr: u64) -> Self {
        Self {
            name,
            dtype,
            len,
            addr,
        }
    }

    /// Bytes `[addr, addr + bytes)` that the tensor may touch, for `span` elements.
    fn bytes(&self, span: usize) -> (u64, u64) {
        let end = self
            .addr
            .saturating_add((span as u64).saturating_mul(self.dtype.bytes() as u64));
        (self.addr, end)
    }
}

/// The five buffers of a launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Operands {
    /// Queries.
    pub q: Operand,
    /// Keys.
    pub k: Operand,
    /// Values.
    pub v: Operand,
    /// Output.
    pub o: Operand,
    /// Row log-sum-exp, f32.
    pub lse: Operand,
}

impl Operands {
    /// Operands of `p`'s dtype with these lengths and addresses (`[q, k, v, o, lse]`): what a
    /// caller with untyped buffers (the simulator) checks.
    pub fn of(p: &Problem, lens: [usize; 5], addrs: [u64; 5]) -> Self {
        let t = p.dtype;
        Self {
            q: Operand::new("q", t, lens[0], addrs[0]),
            k: Operand::new("k", t, lens[1], addrs[1]),
            v: Operand::new("v", t, lens[2], addrs[2]),
            o: Operand::new("o", t, lens[3], addrs[3]),
            lse: Operand::new("lse", DType::F32, lens[4], addrs[4]),
        }
    }

    /// Q, K, V, O.
    pub fn tensors(&self) -> [Operand; 4] {
        [self.q, self.k, self.v, self.o]
    }

    /// The addresses `[q, k, v, o, lse]`.
    pub fn addrs(&self) -> [u64; 5] {
        [self.q.addr, self.k.addr, self.v.addr, self.o.addr, self.lse.addr]
    }
}

impl Problem {
    /// Checks the buffers against the problem (after [`Problem::check`]): each tensor is of
    /// the problem's dtype and LSE f32 ([`Error::DTypeMismatch`]); each holds the span its
    /// strides imply and LSE `batch · heads_q · seq_q` floats ([`Error::BufferLength`]); every
    /// address is aligned to its element ([`Error::Misaligned`]); O and LSE share no byte
    /// with each other or with Q, K, V ([`Error::Overlap`]; inputs may share memory, as the
    /// slices of a packed QKV tensor do). The check is on address ranges, so an output
    /// interleaved with an input (rows of one allocation) is refused too.
    pub fn check_operands(&self, ops: &Operands) -> Result<()> {
        let label = self.label();
        for (op, want) in ops
            .tensors()
            .into_iter()
            .map(|op| (op, self.dtype))
            .chain([(ops.lse, DType::F32)])
        {
            if op.dtype != want {
                return Err(Error::DTypeMismatch {
                    kernel: label,
                    buffer: op.name,
                    got: op.dtype.name(),
                    want: want.name(),
                });
            }
        }
        let spans = self.spans()?;
        let lse_len = self.shape.lse_len();
        let needs = [spans[0], spans[1], spans[2], spans[3], lse_len];
        let all = [ops.q, ops.k, ops.v, ops.o, ops.lse];
        for (op, need) in all.iter().zip(needs) {
            if op.len < need {
                return Err(Error::BufferLength {
                    kernel: label,
                    buffer: op.name,
                    got: op.len,
                    need,
                    shape: self.shape.describe(),
                });
            }
            let align = op.dtype.bytes() as u64;
            if !op.addr.is_multiple_of(align) {
                return Err(Error::Misaligned {
                    kernel: label,
                    buffer: op.name,
                    addr: op.addr,
                    align: align as usize,
                });
            }
        }
        let ranges: Vec<(u64, u64)> = all
            .iter()
            .zip(needs)
            .map(|(op, span)| op.bytes(span))
            .collect();
        // Outputs (o = 3, lse = 4) against everything before them.
        for out in [3, 4] {
            for other in 0..out {
                let ((a0, a1), (b0, b1)) = (ranges[out], ranges[other]);
                if a0 != 0 && b0 != 0 && a0 < b1 && b0 < a1 {
                    return Err(Error::Overlap {
                        kernel: self.label(),
                        buffer: all[out].name,
                        with: Some(all[other].name),
                        what: format!(
                            "bytes {a0:#x}..{a1:#x} and {b0:#x}..{b1:#x} intersect; an output must not share memory with another operand"
                        ),
                    });
                }
            }
        }
        Ok(())
    }
}
