//! One block at a time: its threads as coroutines, the scheduler that runs them between
//! barriers and warp collectives, and the checks every memory access passes through.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::panic::AssertUnwindSafe;

use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};
use rustile_kernels::gpu::host::{self as hooks, SimThread, Site, Space, WarpOp};
use rustile_kernels::gpu::Special;
use rustile_kernels::registry::SimFn;

use super::analysis::{Access, Analysis};
use super::{Memory, SimLaunch, SimLimits};
use crate::error::{Error, Result};

/// Stack per simulated thread. Kernel bodies are small; debug builds need more than release.
const STACK_BYTES: usize = 256 * 1024;

/// Why a thread stopped running.
#[derive(Clone, Copy, Debug)]
enum Event {
    Barrier(Site),
    Warp(WarpOp, u32, Site),
}

/// Payload of the unwinding that ends a thread after an error was recorded.
struct SimTrap;

type ThreadCoroutine = Coroutine<u32, Event, (), DefaultStack>;

#[derive(Clone, Copy, Debug)]
enum State {
    Runnable(u32),
    Barrier(Site),
    Warp(WarpOp, u32, Site),
    Done,
}

/// Who last wrote and read a shared byte, in which barrier interval (epoch).
#[derive(Clone, Copy, Default)]
struct Shadow {
    write_epoch: u32,
    writer: u32,
    read_epoch: u32,
    /// Reader thread, or `MANY`.
    reader: u32,
}
const MANY: u32 = u32::MAX;

/// State shared by the threads of the block being run.
struct Block {
    kernel: String,
    block_idx: (u32, u32, u32),
    grid: (u32, u32, u32),
    block_dim: (u32, u32, u32),
    shared: RefCell<Vec<u8>>,
    shadow: RefCell<Vec<Shadow>>,
    /// Barrier interval, from 1 (0 in a shadow means "never").
    epoch: Cell<u32>,
    memory: *const RefCell<Memory>,
    error: RefCell<Option<Error>>,
    record: bool,
    accesses: RefCell<Vec<Access>>,
    step_budget: u64,
}

/// One simulated thread.
struct Thread {
    block: *const Block,
    tid: (u32, u32, u32),
    linear: u32,
    yielder: Cell<*const Yielder<u32, Event>>,
    steps: Cell<u64>,
    /// Per source line: how many times this thread executed it (groups warp instructions).
    occurrences: RefCell<HashMap<usize, u32>>,
}

impl Thread {
    fn block(&self) -> &Block {
        // SAFETY: the block outlives every thread of it (BlockRunner::run).
        unsafe { &*self.block }
    }

    fn who(&self) -> String {
        let b = self.block();
        format!("block {:?} thread {:?}", b.block_idx, self.tid)
    }

    /// Records `what` as the launch's error (the first one wins) and ends this thread.
    fn fail(&self, what: String, site: Site) -> ! {
        let b = self.block();
        b.error.borrow_mut().get_or_insert_with(|| Error::Sim {
            kernel: b.kernel.clone(),
            at: format!("{} at {site}", self.who()),
            what,
        });
        std::panic::resume_unwind(Box::new(SimTrap))
    }

    fn step(&self, site: Site) {
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

    fn suspend(&self, e: Event) -> u32 {
        self.steps.set(0);
        // SAFETY: set when the coroutine started; valid while it runs.
        unsafe { (*self.yielder.get()).suspend(e) }
    }

    fn record(&self, space: Space, addr: u64, bytes: usize, store: bool, site: Site) {
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

    fn check_aligned(&self, space: Space, addr: u64, bytes: usize, site: Site) {
        if !addr.is_multiple_of(bytes as u64) {
            self.fail(
                format!("misaligned {space:?} access: {bytes} bytes at {addr:#x}"),
                site,
            );
        }
    }

    /// Race check on shared bytes `[addr, addr + len)`.
    fn shadow(&self, addr: usize, len: usize, store: bool, site: Site) {
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
                let other = s.writer;
                drop(shadow);
                self.fail(race(kind, other), site);
            }
            if store {
                if s.read_epoch == epoch && s.reader != me {
                    let other = s.reader;
                    drop(shadow);
                    self.fail(race("write after read", other), site);
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
        let mut out = [0u8; 16];
        let b = self.block();
        match space {
            Space::Global => {
                // SAFETY: the simulator outlives the launch.
                let mem = unsafe { &*b.memory }.borrow();
                match mem.find(addr, bytes) {
                    Ok((base, a)) => {
                        let off = (addr - base) as usize;
                        out[..bytes].copy_from_slice(&a.data[off..off + bytes]);
                    }
                    Err(e) => {
                        drop(mem);
                        self.fail(format!("out-of-bounds global load: {e}"), site)
                    }
                }
            }
            Space::Shared => {
                let a = addr as usize;
                let len = b.shared.borrow().len();
                if addr + bytes as u64 > len as u64 {
                    self.fail(
                        format!(
                            "shared load of {bytes} bytes at {addr:#x} outside the {len}-byte arena"
                        ),
                        site,
                    );
                }
                self.shadow(a, bytes, false, site);
                out[..bytes].copy_from_slice(&b.shared.borrow()[a..a + bytes]);
            }
        }
        self.record(space, addr, bytes, false, site);
        out
    }

    fn store(&self, space: Space, addr: u64, data: &[u8], site: Site) {
        self.step(site);
        let bytes = data.len();
        self.check_aligned(space, addr, bytes, site);
        let b = self.block();
        match space {
            Space::Global => {
                // SAFETY: the simulator outlives the launch.
                let mut mem = unsafe { &*b.memory }.borrow_mut();
                match mem.find_mut(addr, bytes) {
                    Ok(dst) => dst.copy_from_slice(data),
                    Err(e) => {
                        drop(mem);
                        self.fail(format!("out-of-bounds global store: {e}"), site)
                    }
                }
            }
            Space::Shared => {
                let a = addr as usize;
                let len = b.shared.borrow().len();
                if addr + bytes as u64 > len as u64 {
                    self.fail(
                        format!(
                            "shared store of {bytes} bytes at {addr:#x} outside the {len}-byte arena"
                        ),
                        site,
                    );
                }
                self.shadow(a, bytes, true, site);
                b.shared.borrow_mut()[a..a + bytes].copy_from_slice(data);
            }
        }
        self.record(space, addr, bytes, true, site);
    }

    fn barrier(&self, site: Site) {
        self.suspend(Event::Barrier(site));
    }

    fn warp(&self, op: WarpOp, value: u32, site: Site) -> u32 {
        self.suspend(Event::Warp(op, value, site))
    }

    fn trap(&self, site: Site) -> ! {
        self.fail("the kernel executed `trap`".into(), site)
    }
}

/// Runs the blocks of one launch, reusing thread stacks across blocks.
pub(super) struct BlockRunner<'a> {
    kernel: &'a str,
    entry: SimFn,
    launch: SimLaunch,
    args: Vec<u64>,
    step_budget: u64,
    stacks: Vec<DefaultStack>,
}

impl<'a> BlockRunner<'a> {
    pub(super) fn new(
        kernel: &'a str,
        entry: SimFn,
        launch: &SimLaunch,
        args: &[u64],
        limits: &SimLimits,
    ) -> Self {
        Self {
            kernel,
            entry,
            launch: *launch,
            args: args.to_vec(),
            step_budget: limits.step_budget,
            stacks: Vec::new(),
        }
    }

    /// Runs block `block_idx` to completion or to its first error.
    pub(super) fn run(
        &mut self,
        block_idx: (u32, u32, u32),
        memory: &RefCell<Memory>,
        analysis: Option<&mut Analysis>,
    ) -> Result<()> {
        let (bx, by, bz) = self.launch.block;
        let n = (bx * by * bz) as usize;
        let block = Block {
            kernel: self.kernel.to_string(),
            block_idx,
            grid: self.launch.grid,
            block_dim: self.launch.block,
            shared: RefCell::new(vec![0xa5; self.launch.shared_bytes]),
            shadow: RefCell::new(vec![Shadow::default(); self.launch.shared_bytes]),
            epoch: Cell::new(1),
            memory,
            error: RefCell::new(None),
            record: analysis.is_some(),
            accesses: RefCell::new(Vec::new()),
            step_budget: self.step_budget,
        };
        let threads: Vec<Thread> = (0..n as u32)
            .map(|linear| Thread {
                block: &block,
                tid: (linear % bx, (linear / bx) % by, linear / (bx * by)),
                linear,
                yielder: Cell::new(std::ptr::null()),
                steps: Cell::new(0),
                occurrences: RefCell::new(HashMap::new()),
            })
            .collect();
        let mut coroutines: Vec<Option<ThreadCoroutine>> = Vec::with_capacity(n);
        for t in &threads {
            let stack = match self.stacks.pop() {
                Some(s) => s,
                None => DefaultStack::new(STACK_BYTES).map_err(|e| Error::OutOfMemory {
                    bytes: STACK_BYTES,
                    what: format!("a simulated thread's stack ({e})"),
                })?,
            };
            let thread: *const Thread = t;
            let entry = self.entry;
            let args = self.args.clone();
            coroutines.push(Some(Coroutine::with_stack(
                stack,
                move |yielder: &Yielder<u32, Event>, _: u32| {
                    // SAFETY: `thread` outlives the coroutine (both live in `run`).
                    unsafe { (*thread).yielder.set(yielder) };
                    // SAFETY: the launcher checked the arguments against the kernel's contract.
                    unsafe { entry(&args) }
                },
            )));
        }
        let mut states = vec![State::Runnable(0); n];
        let result = schedule(&block, &threads, &mut coroutines, &mut states);
        hooks::leave();
        // Unfinished threads (after an error) are unwound here; their stacks are reused.
        for c in coroutines.into_iter().flatten() {
            if c.done() {
                self.stacks.push(c.into_stack());
            }
        }
        result?;
        if let Some(a) = analysis {
            a.add_block(&block.accesses.borrow());
        }
        Ok(())
    }
}

fn describe(states: &[State], threads: &[Thread]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut groups: HashMap<String, Vec<u32>> = HashMap::new();
    for (s, t) in states.iter().zip(threads) {
        let key = match s {
            State::Runnable(_) => "running".to_string(),
            State::Barrier(site) => format!("at the barrier at {site}"),
            State::Warp(op, _, site) => format!("at warp collective {op:?} at {site}"),
            State::Done => "exited".to_string(),
        };
        groups.entry(key).or_default().push(t.linear);
    }
    for (k, v) in groups {
        let first = v
            .iter()
            .take(4)
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join(", ");
        parts.push(format!("{} thread(s) {k} (e.g. {first})", v.len()));
    }
    parts.sort();
    parts.join("; ")
}

fn schedule(
    block: &Block,
    threads: &[Thread],
    coroutines: &mut [Option<ThreadCoroutine>],
    states: &mut [State],
) -> Result<()> {
    let n = threads.len();
    let sim_error = |what: String| Error::Sim {
        kernel: block.kernel.clone(),
        at: format!("block {:?}", block.block_idx),
        what,
    };
    loop {
        // Run every runnable thread until it waits or exits.
        for i in 0..n {
            let State::Runnable(input) = states[i] else {
                continue;
            };
            let t: *const Thread = &threads[i];
            // SAFETY: `threads[i]` outlives this resume.
            unsafe { hooks::enter(t as *const (dyn SimThread + 'static)) };
            let co = coroutines[i]
                .as_mut()
                .expect("runnable threads have coroutines");
            let r = std::panic::catch_unwind(AssertUnwindSafe(|| co.resume(input)));
            states[i] = match r {
                Ok(CoroutineResult::Yield(Event::Barrier(site))) => State::Barrier(site),
                Ok(CoroutineResult::Yield(Event::Warp(op, v, site))) => State::Warp(op, v, site),
                Ok(CoroutineResult::Return(())) => State::Done,
                Err(payload) => {
                    if let Some(e) = block.error.borrow_mut().take() {
                        return Err(e);
                    }
                    let msg = payload
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_else(|| "(no message)".into());
                    return Err(Error::Sim {
                        kernel: block.kernel.clone(),
                        at: threads[i].who(),
                        what: format!("the kernel panicked: {msg}"),
                    });
                }
            };
        }
        if states.iter().all(|s| matches!(s, State::Done)) {
            return Ok(());
        }
        let mut progressed = false;
        // Warp collectives: all 32 lanes of a warp waiting at the same one.
        for w in 0..n.div_ceil(32) {
            let lanes = w * 32..((w + 1) * 32).min(n);
            let waiting: Vec<(WarpOp, u32, Site)> = states[lanes.clone()]
                .iter()
                .filter_map(|s| match s {
                    State::Warp(op, v, site) => Some((*op, *v, *site)),
                    _ => None,
                })
                .collect();
            if waiting.is_empty() {
                continue;
            }
            let runnable = states[lanes.clone()]
                .iter()
                .any(|s| matches!(s, State::Runnable(_)));
            if runnable {
                continue;
            }
            let (op0, _, site0) = waiting[0];
            if waiting.len() != 32 {
                return Err(sim_error(format!(
                    "warp {w}: {} of 32 lanes wait at warp collective {op0:?} at {site0}, the others \
                     exited or wait elsewhere (full-warp collectives need every lane): {}",
                    waiting.len(),
                    describe(&states[lanes.clone()], &threads[lanes.clone()])
                )));
            }
            if waiting
                .iter()
                .any(|(op, _, site)| !op.same_kind(op0) || !std::ptr::eq(*site, site0))
            {
                return Err(sim_error(format!(
                    "warp {w}: lanes wait at different warp collectives: {}",
                    describe(&states[lanes.clone()], &threads[lanes.clone()])
                )));
            }
            let values: [u32; 32] = std::array::from_fn(|l| waiting[l].1);
            for (l, s) in states[lanes].iter_mut().enumerate() {
                *s = State::Runnable(waiting[l].0.result(l as u32, &values));
            }
            progressed = true;
        }
        if progressed {
            continue;
        }
        // The block barrier: every thread must be there, at the same barrier.
        let at_barrier: Vec<Site> = states
            .iter()
            .filter_map(|s| match s {
                State::Barrier(site) => Some(*site),
                _ => None,
            })
            .collect();
        if at_barrier.len() == n && at_barrier.iter().all(|s| std::ptr::eq(*s, at_barrier[0])) {
            block.epoch.set(block.epoch.get() + 1);
            states.iter_mut().for_each(|s| *s = State::Runnable(0));
            continue;
        }
        let what = if at_barrier.is_empty() {
            "deadlock: no thread can run".to_string()
        } else {
            "barrier divergence: not every thread of the block reached the same barrier".to_string()
        };
        return Err(sim_error(format!("{what}: {}", describe(states, threads))));
    }
}
