//! Which kernel runs. The variants are read from the registry: every ladder record of the
//! family is a variant, or one head dimension of one (`mma_d64` and `mma_d128` are the
//! variant `mma` at 64 and 128). [`Variant::select`] picks the last ladder step (the registry
//! lists the ladder in order) that can run the problem on the target, never `naive`, which
//! runs only when asked for (its scratch is `4·B·H·Nq·Nkv` bytes).

use rustile_kernels::attention::{v01_naive, v02_mma, v03_wgmma, FAMILY};
use rustile_kernels::registry::{self, KernelInfo, Role};

use crate::error::{Error, Result};
use crate::ptx::Flavour;

use super::{Operands, Problem};

/// Where a plan runs: a GPU with its PTX flavour, or the simulator (which runs the sm_80
/// flavour's kernels and no `wgmma` or TMA).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// A GPU running this flavour.
    Gpu(Flavour),
    /// rustile's simulator.
    Simulator,
}

/// The argument list (and pass structure) a record takes: the host half of a kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `naive`: scores, row softmax, P·V through an f32 scratch.
    ThreePass,
    /// One fused kernel `(q, k, v, o, lse, nq, nkv, heads_q, group, strides…, scale·log2 e,
    /// causal)` on a grid `(⌈nq/BM⌉, heads_q, batch)`: FlashAttention-2 on `mma.sync`.
    Fused,
    /// One persistent kernel reading Q, K, V through TMA tensor maps `(maps, o, lse, nq, nkv,
    /// batch, heads_q, group, o strides…, scale·log2 e, causal, tile_group)`: the sm_90a
    /// FlashAttention-3-class kernel.
    Tma,
}

/// The host launcher of `record`, if there is one. A new kernel with a new argument list is a
/// new [`Kind`] and one line here; one with an existing list is one name in that line.
pub fn kind_of(record: &KernelInfo) -> Option<Kind> {
    let is = |r: &KernelInfo| r.family == record.family && r.name == record.name;
    if is(&v01_naive::INFO) {
        Some(Kind::ThreePass)
    } else if is(&v02_mma::INFO_D64) || is(&v02_mma::INFO_D128) {
        Some(Kind::Fused)
    } else if is(&v03_wgmma::INFO_D64) || is(&v03_wgmma::INFO_D128) {
        Some(Kind::Tma)
    } else {
        None
    }
}

/// `mma_d64` → `("mma", Some(64))`; `naive` → `("naive", None)`.
pub fn split_head_dim(name: &'static str) -> (&'static str, Option<usize>) {
    match name.rsplit_once("_d") {
        Some((base, d)) if !d.is_empty() && d.bytes().all(|c| c.is_ascii_digit()) => {
            (base, d.parse().ok())
        }
        _ => (name, None),
    }
}

/// The family's ladder records, in registry (ladder) order.
pub fn ladder() -> impl Iterator<Item = &'static KernelInfo> {
    registry::of(FAMILY, Role::Ladder)
}

/// Every head dimension some ladder record is built for, ascending.
pub fn head_dims() -> Vec<usize> {
    let mut v: Vec<usize> = ladder().filter_map(|k| split_head_dim(k.name).1).collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// A kernel of the family: a ladder record, or the records of one kernel at each head
/// dimension (`mma` = `mma_d64` + `mma_d128`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub struct Variant {
    name: &'static str,
}

impl Variant {
    /// Every variant, in ladder order (from the registry).
    pub fn all() -> Vec<Variant> {
        let mut v: Vec<Variant> = Vec::new();
        for k in ladder() {
            let name = split_head_dim(k.name).0;
            if !v.iter().any(|x| x.name == name) {
                v.push(Variant { name });
            }
        }
        v
    }

    /// The three-pass baseline (runs only when asked for).
    pub fn naive() -> Variant {
        Variant {
            name: v01_naive::INFO.name,
        }
    }

    /// FlashAttention-2 on `mma.sync` (sm_80+).
    pub fn mma() -> Variant {
        Variant {
            name: split_head_dim(v02_mma::INFO_D64.name).0,
        }
    }

    /// Its name: the record's, less any `_d<head_dim>`.
    pub fn name(self) -> &'static str {
        self.name
    }

    /// The variant called `name` (`naive`, `mma`).
    pub fn parse(name: &str) -> Result<Variant> {
        let all = Self::all();
        all.iter()
            .copied()
            .find(|v| v.name == name)
            .ok_or_else(|| {
                let known: Vec<&str> = all.iter().map(|v| v.name).collect();
                Error::Usage(format!(
                    "unknown attention variant `{name}` ({})",
                    known.join(", ")
                ))
            })
    }

    /// The record that runs at `head_dim`: `<name>_d<head_dim>`, or the record `<name>` if it
    /// takes any head dimension.
    pub fn record(self, head_dim: usize) -> Option<&'static KernelInfo> {
        ladder().find(|k| {
            let (base, d) = split_head_dim(k.name);
            base == self.name && d.is_none_or(|d| d == head_dim)
        })
    }

    /// `attention/<record>` at `head_dim` (`attention/<name>` if it has no such record).
    pub fn kernel_name(self, head_dim: usize) -> String {
        let name = self.record(head_dim).map_or(self.name, |k| k.name);
        format!("{}/{name}", FAMILY.name)
    }

    /// Checks that this variant can run `p` on `target` — a record for its head dimension, a
    /// host launcher, the PTX flavour (or a simulator entry), the grid and scratch limits, and,
    /// given the buffers, the alignment the kernel needs — and returns the record that runs.
    pub fn supports(
        self,
        target: Target,
        p: &Problem,
        ops: Option<&Operands>,
    ) -> Result<&'static KernelInfo> {
        let d = p.shape.head_dim;
        let unsupported = |what: String| Error::Unsupported {
            kernel: self.kernel_name(d),
            what,
        };
        let record = self.record(d).ok_or_else(|| {
            unsupported(format!("`{}` is not built for head_dim = {d}", self.name))
        })?;
        let kind = kind_of(record).ok_or_else(|| {
            unsupported("the host has no launcher for this kernel yet".to_string())
        })?;
        if let Target::Gpu(f) = target {
            if !record.in_flavour(f == Flavour::Sm90a) {
                return Err(unsupported(format!(
                    "needs the sm_90a PTX (compute capability 9.0); this device runs {}",
                    f.name()
                )));
            }
        }
        // Entries, grids, 32-bit arguments and scratch: building the plans checks them all.
        let plans = super::plans(p, record, &super::Addrs::default())?;
        if target == Target::Simulator && plans.iter().any(|x| x.entry.sim.is_none()) {
            return Err(unsupported(
                "exists only in the sm_90a flavour; the simulator cannot run it".into(),
            ));
        }
        if let Some(ops) = ops {
            check_alignment(self.kernel_name(d), record, kind, p, ops)?;
        }
        Ok(record)
    }

    /// The kernel for `p` on `target` with these buffers: the last ladder step (other than
    /// `naive`) that [`Variant::supports`] them. If none does, the reason of the most
    /// preferred kernel that could run the problem on this target with other buffers (say,
    /// buffers it needs aligned), or else of the most preferred kernel.
    pub fn select(target: Target, p: &Problem, ops: &Operands) -> Result<Variant> {
        let (mut buffers_err, mut problem_err) = (None, None);
        for v in Self::all().into_iter().rev().filter(|v| *v != Self::naive()) {
            match v.supports(target, p, None) {
                Err(e) => {
                    problem_err.get_or_insert(e);
                }
                Ok(_) => match v.supports(target, p, Some(ops)) {
                    Ok(_) => return Ok(v),
                    Err(e) => {
                        buffers_err.get_or_insert(e);
                    }
                },
            }
        }
        Err(buffers_err.or(problem_err).unwrap_or_else(|| Error::Unsupported {
            kernel: p.label(),
            what: "no attention kernel besides `naive` is registered".into(),
        }))
    }
}

impl std::fmt::Display for Variant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// The alignment `record` needs: with `needs.align = A` (16 for the `cp.async` loads and the
/// TMA tensor maps), Q, K and V start on `A`-byte boundaries and every stride is a multiple of
/// `A` bytes; the fused
/// kernels store O two elements (4 bytes) at a time, so O starts on a 4-byte boundary and its
/// strides are even.
fn check_alignment(
    kernel: String,
    record: &KernelInfo,
    kind: Kind,
    p: &Problem,
    ops: &Operands,
) -> Result<()> {
    let elem = p.dtype.bytes();
    let mut rules: Vec<(super::Operand, super::Strides, usize)> = Vec::new();
    let align = record.needs.align as usize;
    if align > elem {
        let l = &p.layout;
        rules.extend([(ops.q, l.q, align), (ops.k, l.k, align), (ops.v, l.v, align)]);
    }
    if matches!(kind, Kind::Fused | Kind::Tma) {
        rules.push((ops.o, p.layout.o, 2 * elem));
    }
    for (op, s, align) in rules {
        if !op.addr.is_multiple_of(align as u64) {
            return Err(Error::Misaligned {
                kernel,
                buffer: op.name,
                addr: op.addr,
                align,
            });
        }
        let step = align / elem;
        for (dim, stride) in [("batch", s.batch), ("seq", s.seq), ("head", s.head)] {
            if !stride.is_multiple_of(step) {
                return Err(Error::Unsupported {
                    kernel,
                    what: format!(
                        "`{}`'s {dim} stride {stride} is not a multiple of {step} elements ({align} bytes), which this kernel's vector accesses need",
                        op.name
                    ),
                });
            }
        }
    }
    Ok(())
}
