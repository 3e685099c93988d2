//! Reliability: device faults recognised and survived, out-of-memory mid-sweep, bit-identical
//! reruns of every family's cases.
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

/// In a process of its own (the fault poisons the primary context): `f` faults a fresh
/// context, the error says so, later calls fail with it, [`Gpu::new`] refuses the context
/// while a handle is alive; after dropping everything [`fault::reopen`] gives a context that
/// validates — twice in a row.
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
    let gpu = fault::reopen(0).expect("a context after the fault");
    validate_copy(gpu, &format!("after {f:?}"));
    // And once more, from whatever context reopen gave.
    let gpu = fault::reopen(0).unwrap();
    assert!(fault::provoke(&gpu, f).unwrap_err().is_device_fault());
    drop(gpu);
    validate_copy(fault::reopen(0).unwrap(), &format!("after a second {f:?}"));
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

#[test]
#[ignore = "needs a GPU"]
fn the_validation_runner_reopens_the_device_after_a_fault() {
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
    let faults: Vec<_> = outcomes.iter().filter(|o| o.fault).collect();
    assert_eq!(faults.len(), 1, "{outcomes:#?}");
    assert_eq!(faults[0].kernel, "faulty/trap");
    let failed: Vec<_> = outcomes
        .iter()
        .filter(|o| o.error.is_some() && !o.fault)
        .collect();
    assert!(failed.is_empty(), "cases after the fault: {failed:#?}");
    assert!(left.is_some(), "the runner ends on a live device");
    // Without reopening, the cases after the fault are reported as not run, naming it.
    drop(left);
    let backend = Backend::Gpu(fault::reopen(0).unwrap());
    let outcomes = suite::validate_families(&backend, &list, Scale::Quick, seed(), |_, _, _| {});
    drop(backend);
    let n_copy = outcomes
        .iter()
        .filter(|o| o.kernel.starts_with("copy/"))
        .count()
        / 2;
    assert!(outcomes[..n_copy].iter().all(|o| o.error.is_none()));
    assert!(outcomes[n_copy].fault);
    assert!(outcomes[n_copy + 1..].iter().all(|o| o
        .error
        .as_deref()
        .is_some_and(|e| e.contains("not run") && e.contains("faulty/trap"))));
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
    let failed: Vec<_> = outcomes.iter().filter(|o| o.error.is_some()).collect();
    println!(
        "{} cases on {} each ran twice with seed {s}: {} bit-identical",
        outcomes.len(),
        backend.name(),
        outcomes.len() - failed.len()
    );
    assert!(failed.is_empty(), "seed {s}: {failed:#?}");
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
    let e = out[0].error.as_deref().expect("must be caught");
    assert!(e.contains("not deterministic"), "{e}");
}
