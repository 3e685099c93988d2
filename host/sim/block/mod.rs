//! One block at a time: its threads as coroutines, the scheduler that runs them between
//! barriers and warp collectives, and the checks every memory access passes through.

mod strong;
mod thread;

pub(crate) use strong::{current, Strong};

use thread::wide;

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap};
use std::panic::AssertUnwindSafe;

use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};
use rustile_kernels::gpu::host::{self as hooks, SimThread, Site, Space, WarpOp, WideOp};
use rustile_kernels::gpu::{MmaKind, Special};
use rustile_kernels::registry::SimFn;

use super::analysis::{Access, Analysis};
use super::shadow::{self, Know, MAX_INTERVAL};
use super::{Memory, SimLaunch, SimLimits};
use crate::error::{Error, Result};

/// Stack per simulated thread. Kernel bodies are small; debug builds need more than release.
const STACK_BYTES: usize = 256 * 1024;

/// A warp-collective call of one lane.
#[derive(Clone, Copy, Debug)]
enum Collective {
    Simple(WarpOp, u32),
    Wide(WideOp, [u32; 10]),
}

impl Collective {
    fn same_kind(&self, other: &Collective) -> bool {
        match (self, other) {
            (Collective::Simple(a, _), Collective::Simple(b, _)) => a.same_kind(*b),
            (Collective::Wide(a, _), Collective::Wide(b, _)) => a == b,
            _ => false,
        }
    }
}

/// Why a thread stopped running.
#[derive(Clone, Copy, Debug)]
enum Event {
    Barrier(Site),
    Warp(Collective, Site),
}

/// Payload of the unwinding that ends a thread after an error was recorded.
struct SimTrap;

type ThreadCoroutine = Coroutine<[u32; 4], Event, (), DefaultStack>;

#[derive(Clone, Copy, Debug)]
enum State {
    Runnable([u32; 4]),
    Barrier(Site),
    Warp(Collective, Site),
    Done,
}

/// An asynchronous copy not yet completed.
#[derive(Clone, Copy)]
struct PendingCopy {
    dst: u32,
    src: u64,
    bytes: usize,
    /// Bytes read from `src` (the rest of `bytes` are zeros: `cp.async` with a source size).
    src_bytes: usize,
    /// Commit group, once committed.
    group: Option<u32>,
    site: Site,
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

/// A block index.
type Dim3 = (u32, u32, u32);

/// The launch's happens-before bookkeeping (see [`shadow`]): intervals, which block each
/// started, and the knowledge each release store published.
struct Order {
    /// Whether the race detector runs.
    enabled: bool,
    /// The next interval to hand out.
    next: Cell<u32>,
    /// (first interval, block index) of every block started, in order.
    blocks: RefCell<Vec<(u32, Dim3)>>,
    /// Per flag address: what the release store that last wrote it published.
    released: RefCell<BTreeMap<u64, Vec<Know>>>,
    block_dim: Dim3,
}

impl Order {
    /// A new interval, or why there is none.
    fn fresh(&self) -> std::result::Result<u32, String> {
        let iv = self.next.get();
        if iv >= MAX_INTERVAL {
            return Err(format!(
                "more than {MAX_INTERVAL} barrier intervals in one launch: the race detector's \
                 clock ran out (SimLimits::global_race_check = false runs without it)"
            ));
        }
        self.next.set(iv + 1);
        Ok(iv)
    }

    /// Names thread `tid` (linear) of the block that ran interval `iv`.
    fn describe(&self, iv: u32, tid: Option<u32>) -> String {
        let blocks = self.blocks.borrow();
        let i = blocks.partition_point(|(start, _)| *start <= iv);
        let block = blocks[i.saturating_sub(1)].1;
        let (bx, by, _) = self.block_dim;
        match tid {
            Some(t) => format!(
                "block {block:?} thread {:?}",
                (t % bx, (t / bx) % by, t / (bx * by))
            ),
            None => format!("in block {block:?}"),
        }
    }
}

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
    order: *const Order,
    /// The block's first interval, its barrier interval's first, and the current one.
    start: u32,
    epoch_start: Cell<u32>,
    now: Cell<u32>,
    /// Knowledge of other blocks every thread of this block has (joined at barriers).
    know: RefCell<Vec<Know>>,
}

impl Block {
    fn order(&self) -> &Order {
        // SAFETY: the BlockRunner that owns the order outlives the blocks it runs.
        unsafe { &*self.order }
    }
}

/// One simulated thread.
struct Thread {
    block: *const Block,
    tid: (u32, u32, u32),
    linear: u32,
    yielder: Cell<*const Yielder<[u32; 4], Event>>,
    steps: Cell<u64>,
    pending: RefCell<Vec<PendingCopy>>,
    committed: Cell<u32>,
    /// Per source line: how many times this thread executed it (groups warp instructions).
    occurrences: RefCell<HashMap<usize, u32>>,
    /// Knowledge this thread acquired since its block's last barrier.
    know: RefCell<Vec<Know>>,
}

/// Runs the blocks of one launch, reusing thread stacks across blocks.
pub(super) struct BlockRunner<'a> {
    kernel: &'a str,
    entry: SimFn,
    launch: SimLaunch,
    args: Vec<u64>,
    step_budget: u64,
    stacks: Vec<DefaultStack>,
    order: Order,
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
            order: Order {
                enabled: limits.global_race_check,
                next: Cell::new(1),
                blocks: RefCell::new(Vec::new()),
                released: RefCell::new(BTreeMap::new()),
                block_dim: launch.block,
            },
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
        let kernel = self.kernel;
        let sim_error = |what: String| Error::Sim {
            kernel: kernel.to_string(),
            at: format!("block {block_idx:?}"),
            what,
        };
        let start = if self.order.enabled {
            let iv = self.order.fresh().map_err(sim_error)?;
            self.order.blocks.borrow_mut().push((iv, block_idx));
            iv
        } else {
            0
        };
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
            order: &self.order,
            start,
            epoch_start: Cell::new(start),
            now: Cell::new(start),
            know: RefCell::new(Vec::new()),
        };
        let threads: Vec<Thread> = (0..n as u32)
            .map(|linear| Thread {
                block: &block,
                tid: (linear % bx, (linear / bx) % by, linear / (bx * by)),
                linear,
                yielder: Cell::new(std::ptr::null()),
                steps: Cell::new(0),
                pending: RefCell::new(Vec::new()),
                committed: Cell::new(0),
                occurrences: RefCell::new(HashMap::new()),
                know: RefCell::new(Vec::new()),
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
                move |yielder: &Yielder<[u32; 4], Event>, _: [u32; 4]| {
                    // SAFETY: `thread` outlives the coroutine (both live in `run`).
                    unsafe { (*thread).yielder.set(yielder) };
                    // SAFETY: `Simulator::launch` is safe with any arguments: on the host a
                    // simulated kernel touches memory only through the simulator's hooks, which
                    // check every address against the allocations and the shared arena (a bad
                    // one ends the launch as `Error::Sim`; a pointer argument is never
                    // dereferenced as host memory), and an argument the entry reads but was not
                    // given is an index panic, caught and reported by `schedule`. (Kernels keep
                    // address arithmetic non-dereferencing: see `sim`'s module docs.)
                    unsafe { entry(&args) }
                },
            )));
        }
        let mut states = vec![State::Runnable([0; 4]); n];
        let result = schedule(&block, &threads, &mut coroutines, &mut states);
        hooks::leave();
        strong::leave();
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
            State::Warp(op, site) => format!("at warp collective {op:?} at {site}"),
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
            strong::enter(t);
            let co = coroutines[i]
                .as_mut()
                .expect("runnable threads have coroutines");
            let r = std::panic::catch_unwind(AssertUnwindSafe(|| co.resume(input)));
            states[i] = match r {
                Ok(CoroutineResult::Yield(Event::Barrier(site))) => State::Barrier(site),
                Ok(CoroutineResult::Yield(Event::Warp(op, site))) => State::Warp(op, site),
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
            let waiting: Vec<(Collective, Site)> = states[lanes.clone()]
                .iter()
                .filter_map(|s| match s {
                    State::Warp(op, site) => Some((*op, *site)),
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
            let (op0, site0) = waiting[0];
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
                .any(|(op, site)| !op.same_kind(&op0) || !std::ptr::eq(*site, site0))
            {
                return Err(sim_error(format!(
                    "warp {w}: lanes wait at different warp collectives: {}",
                    describe(&states[lanes.clone()], &threads[lanes.clone()])
                )));
            }
            let results: [[u32; 4]; 32] = match op0 {
                Collective::Simple(op, _) => {
                    let values: [u32; 32] = std::array::from_fn(|l| match waiting[l].0 {
                        Collective::Simple(_, v) => v,
                        Collective::Wide(..) => unreachable!("same kind"),
                    });
                    std::array::from_fn(|l| match waiting[l].0 {
                        Collective::Simple(op_l, _) => [op_l.result(l as u32, &values), 0, 0, 0],
                        Collective::Wide(..) => [op.result(l as u32, &values), 0, 0, 0],
                    })
                }
                Collective::Wide(op, _) => {
                    let inputs: [[u32; 10]; 32] = std::array::from_fn(|l| match waiting[l].0 {
                        Collective::Wide(_, v) => v,
                        Collective::Simple(..) => unreachable!("same kind"),
                    });
                    wide(op, &inputs, &threads[lanes.clone()], site0).map_err(|(lane, what)| {
                        Error::Sim {
                            kernel: block.kernel.clone(),
                            at: format!("{} at {site0}", threads[lanes.start + lane].who()),
                            what,
                        }
                    })?
                }
            };
            for (l, s) in states[lanes].iter_mut().enumerate() {
                *s = State::Runnable(results[l]);
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
            if block.order().enabled {
                // Everything before the barrier happens before everything after it, in this
                // block: a new barrier interval, and every thread knows what any one acquired.
                let iv = block.order().fresh().map_err(sim_error)?;
                block.epoch_start.set(iv);
                block.now.set(iv);
                let mut know = block.know.borrow_mut();
                for t in threads {
                    let mine = t.know.take();
                    if !mine.is_empty() {
                        shadow::join(&mut know, &mine);
                    }
                }
            }
            states.iter_mut().for_each(|s| *s = State::Runnable([0; 4]));
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
