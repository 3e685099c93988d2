//! One simulated thread: its memory accesses, warp collectives and tensor-core operations
//! (the hooks `rustile_kernels::gpu` calls on the host), each checked.

use super::*;
use crate::sim::shadow::{How, Who};

impl Thread {
    pub(super) fn block(&self) -> &Block {
        // SAFETY: the block outlives every thread of it (BlockRunner::run).
        unsafe { &*self.block }
    }

    pub(super) fn who(&self) -> String {
        let b = self.block();
        format!("block {:?} thread {:?}", b.block_idx, self.tid)
    }

    /// Records `what` as the launch's error (the first one wins) and ends this thread.
    pub(super) fn fail(&self, what: String, site: Site) -> ! {
        let b = self.block();
        b.error.borrow_mut().get_or_insert_with(|| Error::Sim {
            kernel: b.kernel.clone(),
            at: format!("{} at {site}", self.who()),
            what,
        });
        std::panic::resume_unwind(Box::new(SimTrap))
    }

    pub(super) fn step(&self, site: Site) {
        let n = self.steps.get() + 1;
        self.steps.set(n);
        if n > self.block().step_budget {
            self.fail(
                format!(
                    "ran {} primitive calls without reaching a barrier: a spin-wait or an endless loop",
                    self.block().step_budget
                ),
                site,
            );
        }
    }

    fn suspend(&self, e: Event) -> [u32; 4] {
        self.steps.set(0);
        // SAFETY: set when the coroutine started; valid while it runs.
        unsafe { (*self.yielder.get()).suspend(e) }
    }

    pub(super) fn record(&self, space: Space, addr: u64, bytes: usize, store: bool, site: Site) {
        let b = self.block();
        if !b.record {
            return;
        }
        let key = site as *const _ as usize;
        let mut occ = self.occurrences.borrow_mut();
        let n = occ.entry(key).or_insert(0);
        let occurrence = *n;
        *n += 1;
        b.accesses.borrow_mut().push(Access {
            warp: self.linear / 32,
            lane: self.linear % 32,
            site,
            occurrence,
            space,
            addr,
            bytes: bytes as u32,
            store,
        });
    }

    pub(super) fn check_aligned(&self, space: Space, addr: u64, bytes: usize, site: Site) {
        if !addr.is_multiple_of(bytes as u64) {
            self.fail(
                format!("misaligned {space:?} access: {bytes} bytes at {addr:#x}"),
                site,
            );
        }
    }

    /// Race check on shared bytes `[addr, addr + len)`, then records this access.
    fn shadow(&self, addr: usize, len: usize, store: bool) -> std::result::Result<(), String> {
        let b = self.block();
        let epoch = b.epoch.get();
        let me = self.linear;
        let mut shadow = b.shadow.borrow_mut();
        for (i, s) in shadow[addr..addr + len].iter_mut().enumerate() {
            let race = |kind: &str, other: u32| {
                format!(
                    "shared-memory race: {kind} at shared address {:#x} with thread {} (linear) \
                     since the last barrier",
                    addr + i,
                    other
                )
            };
            if s.write_epoch == epoch && s.writer != me {
                let kind = if store {
                    "write after write"
                } else {
                    "read after write"
                };
                return Err(race(kind, s.writer));
            }
            if store {
                if s.read_epoch == epoch && s.reader != me {
                    return Err(race("write after read", s.reader));
                }
                s.write_epoch = epoch;
                s.writer = me;
            } else if s.read_epoch == epoch {
                if s.reader != me {
                    s.reader = MANY;
                }
            } else {
                s.read_epoch = epoch;
                s.reader = me;
            }
        }
        Ok(())
    }

    fn shared_access(
        &self,
        addr: u64,
        bytes: usize,
        store: bool,
    ) -> std::result::Result<(), String> {
        let len = self.block().shared.borrow().len();
        if addr + bytes as u64 > len as u64 {
            let kind = if store { "store" } else { "load" };
            return Err(format!(
                "shared {kind} of {bytes} bytes at {addr:#x} outside the {len}-byte arena"
            ));
        }
        self.shadow(addr as usize, bytes, store)
    }

    fn shared_read(&self, addr: u64, bytes: usize) -> std::result::Result<[u8; 16], String> {
        self.shared_access(addr, bytes, false)?;
        let mut out = [0u8; 16];
        let a = addr as usize;
        out[..bytes].copy_from_slice(&self.block().shared.borrow()[a..a + bytes]);
        Ok(out)
    }

    fn shared_write(&self, addr: u64, data: &[u8]) -> std::result::Result<(), String> {
        self.shared_access(addr, data.len(), true)?;
        let a = addr as usize;
        self.block().shared.borrow_mut()[a..a + data.len()].copy_from_slice(data);
        Ok(())
    }

    /// Access `how` to global `[addr, addr + len)` through the allocation checks and, when it
    /// runs, the race detector; `f` gets the bytes.
    pub(super) fn global<R>(
        &self,
        addr: u64,
        len: usize,
        how: How,
        f: impl FnOnce(&mut [u8]) -> R,
    ) -> std::result::Result<R, String> {
        let b = self.block();
        let order = b.order();
        // SAFETY: the simulator outlives the launch.
        let mut mem = unsafe { &*b.memory }.borrow_mut();
        if !order.enabled {
            return mem.access(addr, len, how, None).map(f);
        }
        let (block_know, my_know) = (b.know.borrow(), self.know.borrow());
        let describe = |iv: u32, tid: Option<u32>| order.describe(iv, tid);
        let who = Who {
            tid: self.linear,
            block_start: b.start,
            epoch_start: b.epoch_start.get(),
            now: b.now.get(),
            know: [&block_know[..], &my_know[..]],
            describe: &describe,
        };
        let bytes = mem.access(addr, len, how, Some(&who))?;
        if how.write && !how.rmw && !order.released.borrow().is_empty() {
            // A plain or relaxed store over a flag ends what its release published.
            let mut released = order.released.borrow_mut();
            let stale: Vec<u64> = released
                .range(addr.saturating_sub(3)..addr + len as u64)
                .map(|(&a, _)| a)
                .collect();
            stale.iter().for_each(|a| {
                released.remove(a);
            });
        }
        Ok(f(bytes))
    }

    fn global_read(&self, addr: u64, bytes: usize) -> std::result::Result<[u8; 16], String> {
        let mut out = [0u8; 16];
        self.global(addr, bytes, How::LOAD, |d| out[..bytes].copy_from_slice(d))?;
        Ok(out)
    }

    fn global_write(&self, addr: u64, data: &[u8]) -> std::result::Result<(), String> {
        self.global(addr, data.len(), How::STORE, |d| d.copy_from_slice(data))
    }

    /// Completes this thread's copies of groups older than the newest `keep` committed ones.
    fn complete_copies(&self, keep: u32) -> std::result::Result<(), (String, Site)> {
        let committed = self.committed.get();
        let due = |c: &PendingCopy| c.group.is_some_and(|g| g + keep < committed);
        let ready: Vec<PendingCopy> = self.pending.borrow().iter().copied().filter(due).collect();
        self.pending.borrow_mut().retain(|c| !due(c));
        for c in ready {
            let mut data = [0u8; 16];
            if c.src_bytes > 0 {
                let d = self
                    .global_read(c.src, c.src_bytes)
                    .map_err(|e| (e, c.site))?;
                data[..c.src_bytes].copy_from_slice(&d[..c.src_bytes]);
            }
            self.shared_write(c.dst as u64, &data[..c.bytes])
                .map_err(|e| (e, c.site))?;
            self.record(Space::Shared, c.dst as u64, c.bytes, true, c.site);
        }
        Ok(())
    }
}

impl SimThread for Thread {
    fn special(&self, reg: Special) -> u32 {
        let b = self.block();
        match reg {
            Special::TidX => self.tid.0,
            Special::TidY => self.tid.1,
            Special::TidZ => self.tid.2,
            Special::CtaidX => b.block_idx.0,
            Special::CtaidY => b.block_idx.1,
            Special::CtaidZ => b.block_idx.2,
            Special::NtidX => b.block_dim.0,
            Special::NtidY => b.block_dim.1,
            Special::NtidZ => b.block_dim.2,
            Special::NctaidX => b.grid.0,
            Special::NctaidY => b.grid.1,
            Special::NctaidZ => b.grid.2,
            Special::LaneId => self.linear % 32,
        }
    }

    fn load(&self, space: Space, addr: u64, bytes: usize, site: Site) -> [u8; 16] {
        self.step(site);
        self.check_aligned(space, addr, bytes, site);
        let out = match space {
            Space::Global => self.global_read(addr, bytes),
            Space::Shared => self.shared_read(addr, bytes),
        }
        .unwrap_or_else(|e| self.fail(e, site));
        self.record(space, addr, bytes, false, site);
        out
    }

    fn store(&self, space: Space, addr: u64, data: &[u8], site: Site) {
        self.step(site);
        self.check_aligned(space, addr, data.len(), site);
        match space {
            Space::Global => self.global_write(addr, data),
            Space::Shared => self.shared_write(addr, data),
        }
        .unwrap_or_else(|e| self.fail(e, site));
        self.record(space, addr, data.len(), true, site);
    }

    fn barrier(&self, site: Site) {
        self.suspend(Event::Barrier(site));
    }

    fn warp(&self, op: WarpOp, value: u32, site: Site) -> u32 {
        self.suspend(Event::Warp(Collective::Simple(op, value), site))[0]
    }

    fn warp_wide(&self, op: WideOp, inputs: [u32; 10], site: Site) -> [u32; 4] {
        self.suspend(Event::Warp(Collective::Wide(op, inputs), site))
    }

    fn cp_async(&self, dst: u32, src: u64, bytes: usize, site: Site) {
        self.cp_async_zfill(dst, src, bytes, bytes, site)
    }

    fn cp_async_zfill(&self, dst: u32, src: u64, bytes: usize, src_bytes: usize, site: Site) {
        self.step(site);
        self.check_aligned(Space::Global, src, bytes, site);
        self.check_aligned(Space::Shared, dst as u64, bytes, site);
        if src_bytes > bytes {
            self.fail(
                format!("cp.async source size {src_bytes} exceeds the copy size {bytes}"),
                site,
            );
        }
        // With a source size of 0 nothing is read (the hardware ignores the source operand),
        // so only a copy that reads has its source checked.
        if src_bytes > 0 {
            if let Err(e) = self.global_read(src, src_bytes) {
                self.fail(format!("cp.async source: {e}"), site);
            }
        }
        let len = self.block().shared.borrow().len();
        if dst as usize + bytes > len {
            self.fail(
                format!("cp.async destination {dst:#x} (+{bytes}) outside the {len}-byte arena"),
                site,
            );
        }
        if src_bytes > 0 {
            self.record(Space::Global, src, src_bytes, false, site);
        }
        self.pending.borrow_mut().push(PendingCopy {
            dst,
            src,
            bytes,
            src_bytes,
            group: None,
            site,
        });
    }

    fn cp_async_commit(&self, site: Site) {
        self.step(site);
        // Every commit makes a group, an empty one too (as `cp.async.commit_group` does).
        let g = self.committed.get();
        for c in self
            .pending
            .borrow_mut()
            .iter_mut()
            .filter(|c| c.group.is_none())
        {
            c.group = Some(g);
        }
        self.committed.set(g + 1);
    }

    fn cp_async_wait(&self, pending: u32, site: Site) {
        self.step(site);
        if let Err((e, copy_site)) = self.complete_copies(pending) {
            self.fail(
                format!("asynchronous copy issued at {copy_site}: {e}"),
                site,
            );
        }
    }

    fn trap(&self, site: Site) -> ! {
        self.fail("the kernel executed `trap`".into(), site)
    }
}

fn to_f32(kind: MmaKind, bits: u16) -> f64 {
    match kind {
        MmaKind::F16 => half::f16::from_bits(bits).to_f64(),
        MmaKind::Bf16 => half::bf16::from_bits(bits).to_f64(),
    }
}

fn lo(v: u32) -> u16 {
    v as u16
}

fn hi(v: u32) -> u16 {
    (v >> 16) as u16
}

fn pack(lo: u16, hi: u16) -> u32 {
    lo as u32 | (hi as u32) << 16
}

/// Computes a wide warp collective for the 32 `lanes`; an error names the lane at fault.
#[allow(clippy::needless_range_loop)] // the indices are the PTX ISA's layout formulas
pub(super) fn wide(
    op: WideOp,
    inputs: &[[u32; 10]; 32],
    lanes: &[Thread],
    site: Site,
) -> std::result::Result<[[u32; 4]; 32], (usize, String)> {
    match op {
        WideOp::Mma(kind) => {
            // Assemble A (16×16), B (16×8), C (16×8) from the fragments (PTX ISA layouts).
            let mut a = [[0f64; 16]; 16];
            let mut b = [[0f64; 8]; 16];
            let mut c = [[0f64; 8]; 16];
            for (l, inp) in inputs.iter().enumerate() {
                let (g, t) = (l / 4, l % 4);
                for (i, (row, col)) in [
                    (g, 2 * t),
                    (g + 8, 2 * t),
                    (g, 2 * t + 8),
                    (g + 8, 2 * t + 8),
                ]
                .into_iter()
                .enumerate()
                {
                    a[row][col] = to_f32(kind, lo(inp[i]));
                    a[row][col + 1] = to_f32(kind, hi(inp[i]));
                }
                for (i, k) in [2 * t, 2 * t + 8].into_iter().enumerate() {
                    b[k][g] = to_f32(kind, lo(inp[4 + i]));
                    b[k + 1][g] = to_f32(kind, hi(inp[4 + i]));
                }
                for (i, (row, col)) in [
                    (g, 2 * t),
                    (g, 2 * t + 1),
                    (g + 8, 2 * t),
                    (g + 8, 2 * t + 1),
                ]
                .into_iter()
                .enumerate()
                {
                    c[row][col] = f32::from_bits(inp[6 + i]) as f64;
                }
            }
            let d = |row: usize, col: usize| {
                let acc: f64 = (0..16).map(|k| a[row][k] * b[k][col]).sum();
                ((acc + c[row][col]) as f32).to_bits()
            };
            Ok(std::array::from_fn(|l| {
                let (g, t) = (l / 4, l % 4);
                [
                    d(g, 2 * t),
                    d(g, 2 * t + 1),
                    d(g + 8, 2 * t),
                    d(g + 8, 2 * t + 1),
                ]
            }))
        }
        WideOp::Ldmatrix { count, trans } => {
            if !matches!(count, 1 | 2 | 4) {
                return Err((0, format!("ldmatrix .x{count}: only x1, x2, x4 exist")));
            }
            // Matrix j, row r comes from the 16 bytes at lane 8j + r's address.
            let mut m = [[[0u16; 8]; 8]; 4];
            for j in 0..count as usize {
                for r in 0..8 {
                    let lane = 8 * j + r;
                    let addr = inputs[lane][0] as u64;
                    if !addr.is_multiple_of(16) {
                        return Err((
                            lane,
                            format!("ldmatrix row address {addr:#x} is not 16-byte aligned"),
                        ));
                    }
                    let row = lanes[lane].shared_read(addr, 16).map_err(|e| (lane, e))?;
                    lanes[lane].record(Space::Shared, addr, 16, false, site);
                    for (c, e) in m[j][r].iter_mut().enumerate() {
                        *e = u16::from_le_bytes([row[2 * c], row[2 * c + 1]]);
                    }
                }
            }
            Ok(std::array::from_fn(|l| {
                let (row, col) = (l / 4, 2 * (l % 4));
                std::array::from_fn(|j| {
                    if j >= count as usize {
                        0
                    } else if trans {
                        pack(m[j][col][row], m[j][col + 1][row])
                    } else {
                        pack(m[j][row][col], m[j][row][col + 1])
                    }
                })
            }))
        }
    }
}
