//! Reliability: device faults recognised and reported (and what the driver allows after
//! one), out-of-memory mid-sweep, bit-identical reruns of every family's cases.
//!
//! The simulator tests run in `cargo test`; the GPU ones are `#[ignore = "needs a GPU"]` and
//! run on a GPU machine with `cargo test --release --test reliability -- --ignored
//! --test-threads=1` (or the staged `.gpu/bin/test-reliability`). They provoke device faults,
//! which poison the process's primary context until every handle on it is dropped, so they
//! need a binary of their own, run one test at a time.

use cudarc::driver::sys::CUresult;
use rustile::families::{self, Case, Family, Scale};
use rustile::fault::{self, Fault};
use rustile::orch::StreamPool;
use rustile::sim::Simulator;
use rustile::{suite, Backend, DType, DriverError, Error, Gpu};

fn seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

// --- Device faults ----------------------------------------------------------------------

#[test]
fn sticky_driver_errors_are_device_faults_and_say_so() {
    for code in [
        CUresult::CUDA_ERROR_ILLEGAL_ADDRESS,
        CUresult::CUDA_ERROR_LAUNCH_FAILED,
        CUresult::CUDA_ERROR_ILLEGAL_INSTRUCTION,
        CUresult::CUDA_ERROR_MISALIGNED_ADDRESS,
    ] {
        // (Not formatted here: a DriverError's text comes from the driver library, which a
        // machine without a GPU lacks; the GPU test below checks the message.)
        let e = Error::driver("a launch", DriverError(code));
        assert!(e.is_device_fault(), "{code:?}");
    }
    for code in [
        CUresult::CUDA_ERROR_OUT_OF_MEMORY,
        CUresult::CUDA_ERROR_INVALID_VALUE,
        CUresult::CUDA_ERROR_NOT_FOUND,
    ] {
        let e = Error::driver("a call", DriverError(code));
        assert!(!e.is_device_fault(), "{code:?}");
    }
}

fn validate_copy(gpu: Gpu, what: &str) {
    let backend = Backend::Gpu(gpu);
    let copy = families::find("copy").unwrap();
    let outcomes = suite::validate_families(&backend, &[copy], Scale::Quick, seed(), |_, _, _| {});
    assert!(!outcomes.is_empty());
    let failed: Vec<_> = outcomes.iter().filter(|o| o.error.is_some()).collect();
    assert!(failed.is_empty(), "{what}: {failed:#?}");
    println!("{what}: {} copy cases validated", outcomes.len());
}

/// In a process of its own: `f` faults a fresh context, the error says so, later calls fail
/// with it, [`Gpu::new`] refuses the context while a handle is alive, naming it. After every
/// handle is dropped, [`fault::reopen`] tries the primary context again and a context of
/// rustile's own: on the H200's driver (580) both fail with the fault — a sticky error
/// poisons every context of the process (measured by `probe_the_driver_after_a_fault`:
/// retain after the last release, `cuCtxCreate`, and retain after `cuDevicePrimaryCtxReset`
/// all return it). So the process survives (typed errors, no panic, no hang) but the GPU is
/// usable again only from a new process; the test asserts exactly that, and fails the day a
/// driver lets the process go on, so that the recovery path is then tested for real.
fn fault_then_recover(f: Fault) {
    let gpu = Gpu::new(0).expect("a GPU");
    let buf = gpu
        .alloc::<f32>(1 << 20, "a buffer alive across the fault")
        .unwrap();
    let e = fault::provoke(&gpu, f).expect_err("the kernel must fault");
    println!("{f:?}: {e}");
    assert!(e.is_device_fault(), "{f:?}: {e}");
    assert!(e.to_string().contains("device fault"), "{e}");
    // The context is lost: any later call says so, as a fault.
    let later = gpu.download(&buf, "after the fault").unwrap_err();
    assert!(later.is_device_fault(), "{later}");
    // While a handle is alive a new Gpu gets the same faulted primary context, and says so.
    let again = Gpu::new(0).err().expect("the context is still faulted");
    println!("Gpu::new with a handle alive: {again}");
    assert!(again.is_device_fault(), "{again}");
    assert!(again.to_string().contains("still faulted"), "{again}");
    drop(buf);
    drop(gpu);
    match fault::reopen(0) {
        Ok(gpu) => panic!(
            "the driver now gives a working context after a fault ({}): make this test \
             validate on it (validate_copy) and update notes/reliability.md",
            gpu.info().name
        ),
        Err(e) => {
            println!("reopen after dropping every handle: {e}");
            assert!(e.is_device_fault(), "{e}");
        }
    }
}

#[test]
#[ignore = "needs a GPU"]
fn a_trap_is_a_device_fault_and_the_process_goes_on() {
    fault_then_recover(Fault::Trap);
}

#[test]
#[ignore = "needs a GPU"]
fn an_illegal_address_is_a_device_fault_and_the_process_goes_on() {
    fault_then_recover(Fault::IllegalAddress);
}

/// What the driver does after a fault, printed (not asserted): the primary context's state
/// once its last user is gone, whether retaining it again works, whether a new context of
/// our own works, and whether a reset brings the primary one back.
#[test]
#[ignore = "needs a GPU"]
fn probe_the_driver_after_a_fault() {
    use rustile::cudarc::driver::sys;
    use rustile::CudaContext;
    let gpu = Gpu::new(0).unwrap();
    fault::provoke(&gpu, Fault::Trap).unwrap_err();
    drop(gpu);
    let (mut flags, mut active) = (0u32, 0i32);
    // SAFETY: out-pointers to locals; device 0 exists.
    let r = unsafe { sys::cuDevicePrimaryCtxGetState(0, &mut flags, &mut active) };
    println!("primary context after the last handle went: {r:?}, active = {active}");
    println!(
        "retain again: {:?}",
        CudaContext::new(0).map(|c| c.synchronize())
    );
    println!(
        "a new context of our own: {:?}",
        CudaContext::new_non_primary(0, 0).map(|c| c.synchronize())
    );
    // SAFETY: nothing of the primary context is alive in this test.
    println!("reset: {:?}", unsafe { fault::reset_primary(0) });
    println!(
        "retain after the reset: {:?}",
        CudaContext::new(0).map(|c| c.synchronize())
    );
}

/// A family of one case that faults the device (and, in the simulator, passes).
struct Faulty;

impl Family for Faulty {
    fn name(&self) -> &'static str {
        "faulty"
    }
    fn about(&self) -> &'static str {
        "one case that traps"
    }
    fn cases(&self, _: &Backend, _: Scale) -> Vec<Case> {
        vec![Case::new("faulty/trap", DType::F32, "1", |b, _| match b {
            Backend::Gpu(g) => fault::provoke(g, Fault::Trap),
            Backend::Simulator(_) => Ok(()),
        })]
    }
}

static FAULTY: Faulty = Faulty;

/// The validation runner after a fault: the faulting case is reported as a fault, the
/// cases before it pass, and the cases after it are reported as not run, naming the fault
/// and why the device could not be reopened (on this driver it cannot: see
/// [`fault_then_recover`]) — not as the same driver error again and again.
#[test]
#[ignore = "needs a GPU"]
fn the_validation_runner_reports_the_cases_after_a_fault_as_not_run() {
    let copy = families::find("copy").unwrap();
    let list: [&'static dyn Family; 3] = [copy, &FAULTY, copy];
    let reopen = || fault::reopen(0).map(Backend::Gpu);
    let (outcomes, left) = suite::validate_families_recovering(
        Backend::Gpu(Gpu::new(0).unwrap()),
        &reopen,
        &list,
        Scale::Quick,
        seed(),
        |_, _, _| {},
    );
    let n_copy = outcomes
        .iter()
        .filter(|o| o.kernel.starts_with("copy/"))
        .count()
        / 2;
    assert!(n_copy > 0);
    let before: Vec<_> = outcomes[..n_copy]
        .iter()
        .filter(|o| o.error.is_some())
        .collect();
    assert!(before.is_empty(), "cases before the fault: {before:#?}");
    assert!(outcomes[n_copy].fault, "{:?}", outcomes[n_copy]);
    assert_eq!(outcomes[n_copy].kernel, "faulty/trap");
    let after = &outcomes[n_copy + 1..];
    match left {
        // A driver that lets the process go on: the cases after the fault must pass.
        Some(_) => assert!(after.iter().all(|o| o.error.is_none()), "{after:#?}"),
        None => {
            println!(
                "after the fault: {}",
                after[0].error.as_deref().unwrap_or("")
            );
            assert!(after.iter().all(|o| o
                .error
                .as_deref()
                .is_some_and(|e| e.contains("not run") && e.contains("faulty/trap"))));
        }
    }
}

#[test]
#[ignore = "needs a GPU"]
fn out_of_memory_mid_sweep_leaves_the_pool_at_baseline() {
    let gpu = Gpu::new(0).unwrap();
    let stream = gpu.stream().clone();
    let mut pool = StreamPool::new(&gpu).unwrap();
    let base = pool.stats().unwrap();
    let chunk = 8usize << 30;
    let mut held = Vec::new();
    let e = loop {
        match pool.alloc(chunk, &stream) {
            Ok(b) => held.push(b),
            Err(e) => break e,
        }
        assert!(held.len() < 64, "no OOM after {} GiB", held.len() * 8);
    };
    assert!(matches!(e, Error::OutOfMemory { .. }), "{e}");
    println!("out of memory after {} × 8 GiB: {e}", held.len());
    for b in held {
        pool.free(b, &stream).unwrap();
    }
    gpu.synchronize("the frees").unwrap();
    pool.trim(0).unwrap();
    let after = pool.stats().unwrap();
    println!("before:\n{}after:\n{}", base.summary(), after.summary());
    assert_eq!(after.accounting.allocated, base.accounting.allocated);
    assert_eq!(after.used, base.used);
    assert_eq!(after.reserved, base.reserved);
    // The device gets its memory back (within 64 MiB of what other work may hold).
    assert!(
        after.device_free + (64 << 20) >= base.device_free,
        "free {} before, {} after",
        base.device_free,
        after.device_free
    );
    // And the device still works: a sweep goes on after the OOM.
    drop(pool);
    validate_copy(gpu, "after the out-of-memory");
}

// --- Determinism ------------------------------------------------------------------------

fn deterministic(backend: &Backend) {
    let s = seed();
    let outcomes =
        suite::check_determinism(backend, &families::all(), Scale::Quick, s, |_, _, _| {});
    let expected = suite::case_count(backend, Scale::Quick);
    assert_eq!(outcomes.len(), expected);
    let failed: Vec<_> = outcomes.iter().filter(|(o, _)| o.error.is_some()).collect();
    let compared = outcomes.iter().filter(|(_, n)| *n > 0).count();
    println!(
        "{} cases on {} each ran twice with seed {s}: {} failed; {compared} compared bit for bit, \
         {} refusal cases without output",
        outcomes.len(),
        backend.name(),
        failed.len(),
        outcomes.len() - compared
    );
    assert!(failed.is_empty(), "seed {s}: {failed:#?}");
    // Refusal cases are the exception: most cases produce output.
    assert!(
        compared * 10 >= outcomes.len() * 9,
        "{compared} of {} compared",
        outcomes.len()
    );
}

#[test]
fn every_kernel_is_bit_identical_across_runs_in_the_simulator() {
    deterministic(&Backend::Simulator(Simulator::default()));
}

#[test]
#[ignore = "needs a GPU"]
fn every_kernel_is_bit_identical_across_runs_on_the_gpu() {
    deterministic(&Backend::Gpu(Gpu::new(0).unwrap()));
}

#[test]
fn the_determinism_check_catches_a_case_that_differs_between_runs() {
    use std::sync::atomic::{AtomicU32, Ordering};
    static RUNS: AtomicU32 = AtomicU32::new(0);
    struct Flaky;
    impl Family for Flaky {
        fn name(&self) -> &'static str {
            "flaky"
        }
        fn about(&self) -> &'static str {
            "a case whose output changes from run to run"
        }
        fn cases(&self, _: &Backend, _: Scale) -> Vec<Case> {
            vec![Case::new("flaky/counter", DType::F32, "4", |b, _| {
                let v = RUNS.fetch_add(1, Ordering::Relaxed) as f32;
                let buf = b.upload(&[1.0f32, 2.0, 3.0, v], "flaky")?;
                b.download(&buf, "flaky").map(|_| ())
            })]
        }
    }
    static FLAKY: Flaky = Flaky;
    let backend = Backend::Simulator(Simulator::default());
    let out = suite::check_determinism(&backend, &[&FLAKY], Scale::Quick, 1, |_, _, _| {});
    let e = out[0].0.error.as_deref().expect("must be caught");
    assert!(e.contains("not deterministic"), "{e}");
}
