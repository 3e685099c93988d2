//! The host side of the primitive layer: every `gpu::` primitive, compiled for a CPU, calls the
//! simulated GPU thread that is current on this OS thread. rustile's simulator (the host crate's
//! `sim` module) implements [`SimThread`] and makes a thread current while it runs it.
//!
//! Addresses passed to kernels in the simulator are simulated device addresses: the kernel
//! computes with them like with real pointers, but never dereferences them; every access goes
//! through [`SimThread::load`] / [`SimThread::store`], which check it against the launch's
//! allocations (or the block's shared arena) before performing it.

extern crate std;

use core::cell::Cell;
use core::panic::Location;

use super::Special;

/// The kernel source location of a primitive call.
pub type Site = &'static Location<'static>;

/// Memory spaces a kernel addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Space {
    /// Device memory.
    Global,
    /// The block's shared memory (32-bit shared-window addresses).
    Shared,
}

/// Warp-collective operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WarpOp {
    /// `shfl.sync.bfly`: the value of lane `lane ^ mask`.
    ShflXor(u32),
    /// `shfl.sync.idx`: the value of lane `src`.
    ShflIdx(u32),
    /// `vote.sync.ballot`: bit `i` set iff lane `i`'s value is nonzero.
    Ballot,
}

impl WarpOp {
    /// The result for `lane`, given every lane's input value.
    pub fn result(self, lane: u32, values: &[u32; 32]) -> u32 {
        match self {
            WarpOp::ShflXor(mask) => values[((lane ^ mask) & 31) as usize],
            WarpOp::ShflIdx(src) => values[(src & 31) as usize],
            WarpOp::Ballot => values
                .iter()
                .enumerate()
                .filter(|(_, v)| **v != 0)
                .fold(0, |acc, (i, _)| acc | (1 << i)),
        }
    }

    /// Whether two lanes' calls are the same collective (the shuffle argument may differ per
    /// lane; the kind may not).
    pub fn same_kind(self, other: WarpOp) -> bool {
        core::mem::discriminant(&self) == core::mem::discriminant(&other)
    }
}

/// Warp-collective operations on several registers per lane.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WideOp {
    /// `mma.sync.m16n8k16`: inputs `a[4], b[2], c[4]` (f32 bits), outputs `d[4]` (f32 bits).
    Mma(super::MmaKind),
    /// `ldmatrix.x{count}{.trans}`: input 0 is this lane's row address; outputs `count` registers.
    Ldmatrix {
        /// Matrices (1, 2, 4).
        count: u32,
        /// Transposed.
        trans: bool,
    },
}

/// One simulated GPU thread, as the primitives see it.
pub trait SimThread {
    /// A special register.
    fn special(&self, reg: Special) -> u32;
    /// Loads `bytes` (1..=16) bytes at `addr`, little-endian into the returned buffer.
    fn load(&self, space: Space, addr: u64, bytes: usize, site: Site) -> [u8; 16];
    /// Stores `data` at `addr`.
    fn store(&self, space: Space, addr: u64, data: &[u8], site: Site);
    /// Waits at the block barrier.
    fn barrier(&self, site: Site);
    /// A warp-collective operation: waits for the warp, returns this lane's result.
    fn warp(&self, op: WarpOp, value: u32, site: Site) -> u32;
    /// A warp-collective operation on several registers per lane.
    fn warp_wide(&self, op: WideOp, inputs: [u32; 10], site: Site) -> [u32; 4];
    /// Starts an asynchronous copy of `bytes` from global `src` to shared `dst`.
    fn cp_async(&self, dst: u32, src: u64, bytes: usize, site: Site);
    /// Starts an asynchronous copy of `bytes` to shared `dst` of which the first `src_bytes`
    /// come from global `src` and the rest are zeros (`cp.async` with a source size).
    fn cp_async_zfill(&self, dst: u32, src: u64, bytes: usize, src_bytes: usize, site: Site);
    /// Closes this thread's current group of asynchronous copies.
    fn cp_async_commit(&self, site: Site);
    /// Completes this thread's committed groups but the newest `pending`.
    fn cp_async_wait(&self, pending: u32, site: Site);
    /// Ends this thread and fails the launch.
    fn trap(&self, site: Site) -> !;
}

std::thread_local! {
    static CURRENT: Cell<Option<*const (dyn SimThread + 'static)>> = const { Cell::new(None) };
}

/// Makes `thread` the simulated thread the primitives on this OS thread talk to, until
/// [`leave`].
///
/// # Safety
/// `thread` must stay valid until [`leave`] is called (or another `enter`).
pub unsafe fn enter(thread: *const (dyn SimThread + 'static)) {
    CURRENT.with(|c| c.set(Some(thread)));
}

/// No simulated thread is current any more.
pub fn leave() {
    CURRENT.with(|c| c.set(None));
}

/// The current simulated thread.
///
/// # Panics
/// If a `gpu::` primitive runs outside a simulated launch.
pub fn current() -> &'static dyn SimThread {
    let ptr = CURRENT
        .with(|c| c.get())
        .unwrap_or_else(|| panic!("a gpu:: primitive ran on the host outside a simulated launch"));
    // SAFETY: `enter`'s contract keeps the pointee alive while it is current.
    unsafe { &*ptr }
}

#[track_caller]
pub(super) fn load(space: Space, addr: u64, bytes: usize) -> u64 {
    let b = current().load(space, addr, bytes, Location::caller());
    let mut v = [0u8; 8];
    v[..bytes].copy_from_slice(&b[..bytes]);
    u64::from_le_bytes(v)
}

#[track_caller]
pub(super) fn store(space: Space, addr: u64, bits: u64, bytes: usize) {
    current().store(
        space,
        addr,
        &bits.to_le_bytes()[..bytes],
        Location::caller(),
    );
}

#[track_caller]
pub(super) fn load16(addr: u64) -> [u32; 4] {
    let b = current().load(Space::Global, addr, 16, Location::caller());
    core::array::from_fn(|i| {
        u32::from_le_bytes([b[4 * i], b[4 * i + 1], b[4 * i + 2], b[4 * i + 3]])
    })
}

#[track_caller]
pub(super) fn store16(addr: u64, v: [u32; 4]) {
    let mut b = [0u8; 16];
    for (i, w) in v.iter().enumerate() {
        b[4 * i..4 * i + 4].copy_from_slice(&w.to_le_bytes());
    }
    current().store(Space::Global, addr, &b, Location::caller());
}

/// `fma.rn.f32` on the host: one rounding, as on the GPU.
pub(super) fn fma(a: f32, b: f32, c: f32) -> f32 {
    a.mul_add(b, c)
}

/// `ex2.approx` in software (no libm in `no_std`): `2^x = 2^n · 2^f`, `|f| ≤ 1/2`, with a
/// degree-8 Taylor polynomial of `e^(f·ln 2)` (relative error < 1e-8 before rounding).
pub(super) fn ex2(x: f32) -> f32 {
    if x.is_nan() {
        return x;
    }
    if x >= 128.0 {
        return f32::INFINITY;
    }
    if x < -126.0 {
        return 0.0; // ftz, and 2^-inf
    }
    let xd = x as f64;
    let n = (xd + 0.5) as i64 - if xd + 0.5 < 0.0 { 1 } else { 0 }; // floor(x + 1/2)
    let f = (xd - n as f64) * core::f64::consts::LN_2;
    let mut p = 1.0f64;
    let mut term = 1.0f64;
    let mut k = 1.0f64;
    while k <= 8.0 {
        term *= f / k;
        p += term;
        k += 1.0;
    }
    let scale = f64::from_bits(((n + 1023) as u64) << 52);
    (p * scale) as f32
}

/// `lg2.approx` in software: exponent plus `ln(m)/ln 2` by the `atanh` series, `m` in
/// `[√½, √2)`.
pub(super) fn lg2(x: f32) -> f32 {
    if x.is_nan() || x < 0.0 {
        return f32::NAN;
    }
    if x == 0.0 || x < f32::MIN_POSITIVE {
        return f32::NEG_INFINITY; // ftz
    }
    if x == f32::INFINITY {
        return x;
    }
    let b = (x as f64).to_bits();
    let mut e = ((b >> 52) & 0x7FF) as i64 - 1023;
    let mut m = f64::from_bits((b & ((1u64 << 52) - 1)) | (1023u64 << 52));
    if m > core::f64::consts::SQRT_2 {
        m /= 2.0;
        e += 1;
    }
    let u = (m - 1.0) / (m + 1.0);
    let u2 = u * u;
    let mut s = 0.0f64;
    let mut pow = u;
    let mut k = 1.0f64;
    while k < 24.0 {
        s += pow / k;
        pow *= u2;
        k += 2.0;
    }
    (e as f64 + 2.0 * s / core::f64::consts::LN_2) as f32
}
