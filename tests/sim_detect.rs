//! The simulator's global-memory detectors, each with planted bugs: races between threads of a
//! launch (across blocks, and inside a block without a barrier), with the release/acquire and
//! atomic orderings that make the same accesses correct; reads of never-written memory from
//! `alloc_uninit`, and its NaN poison.

use rustile::sim::sync::{atom_add_gpu, ld_acquire_gpu, st_relaxed_gpu, st_release_gpu};
use rustile::sim::{SimLaunch, SimLimits, Simulator};
use rustile::Error;
use rustile_kernels::gpu::{self, Elem};

fn launch(grid: u32, block: u32) -> SimLaunch {
    SimLaunch {
        grid: (grid, 1, 1),
        block: (block, 1, 1),
        shared_bytes: 0,
    }
}

fn expect_sim_error(r: Result<(), Error>, needles: &[&str]) -> String {
    match r {
        Err(e @ Error::Sim { .. }) => {
            let text = e.to_string();
            for n in needles {
                assert!(text.contains(n), "expected `{n}` in: {text}");
            }
            text
        }
        other => panic!("expected a simulator error containing {needles:?}, got {other:?}"),
    }
}

fn ptr<T>(a: u64) -> *mut T {
    a as usize as *mut T
}

// --- Races ---

/// A grid-stride loop with the wrong stride (the block's size, not the grid's): blocks write
/// each other's elements.
unsafe fn wrong_stride_kernel(args: &[u64]) {
    let (out, n) = (ptr::<f32>(args[0]), args[1] as u32);
    let mut i = gpu::block_idx_x() * gpu::block_dim_x() + gpu::thread_idx_x();
    while i < n {
        f32::st_global(out.wrapping_add(i as usize), 1.0);
        i += gpu::block_dim_x();
    }
}

/// The right stride: every element written once.
unsafe fn grid_stride_kernel(args: &[u64]) {
    let (out, n) = (ptr::<f32>(args[0]), args[1] as u32);
    let stride = gpu::block_dim_x() * gpu::grid_dim_x();
    let mut i = gpu::block_idx_x() * gpu::block_dim_x() + gpu::thread_idx_x();
    while i < n {
        f32::st_global(out.wrapping_add(i as usize), 1.0);
        i += stride;
    }
}

#[test]
fn planted_write_write_race_across_blocks_is_caught() {
    let sim = Simulator::default();
    let out = sim.alloc::<f32>(256, "out").unwrap();
    let text = expect_sim_error(
        sim.launch(
            "planted",
            Some(wrong_stride_kernel),
            &launch(2, 64),
            &[out.addr(), 256],
        ),
        &[
            "global-memory race: write after write",
            "`out`",
            "offset 256 of",
        ],
    );
    // Block 0's thread 0 wrote element 64 on its second trip; block 1's thread 0 writes it first
    // thing.
    assert!(
        text.contains("block (1, 0, 0) thread (0, 0, 0)")
            && text.contains("by block (0, 0, 0) thread (0, 0, 0)"),
        "{text}"
    );
    sim.launch(
        "fixed",
        Some(grid_stride_kernel),
        &launch(2, 64),
        &[out.addr(), 256],
    )
    .unwrap();
    assert!(sim.read(&out).unwrap().iter().all(|&v| v == 1.0));
}

/// Split-K without atomics: every block adds its partial into `out` with a plain
/// read-modify-write.
unsafe fn lost_update_kernel(args: &[u64]) {
    let out = ptr::<f32>(args[0]);
    let p = out.wrapping_add(gpu::thread_idx_x() as usize);
    f32::st_global(p, f32::ld_global_nc(p) + 1.0);
}

#[test]
fn planted_read_write_race_across_blocks_is_caught() {
    let sim = Simulator::default();
    let out = sim.alloc::<f32>(32, "accumulator").unwrap();
    let text = expect_sim_error(
        sim.launch(
            "planted",
            Some(lost_update_kernel),
            &launch(3, 32),
            &[out.addr()],
        ),
        &[
            "global-memory race: read after write",
            "`accumulator`",
            "offset 0 of",
        ],
    );
    assert!(
        text.contains("block (1, 0, 0) thread (0, 0, 0)")
            && text.contains("by block (0, 0, 0) thread (0, 0, 0)"),
        "{text}"
    );
    // One block: each thread updates its own element, no race.
    sim.launch(
        "one block",
        Some(lost_update_kernel),
        &launch(1, 32),
        &[out.addr()],
    )
    .unwrap();
}

/// A shift in place, `x[i] = x[i + 1]`: reads its right neighbour, then overwrites its own
/// element; `args[2] != 0` puts a barrier between the two.
unsafe fn in_place_shift_kernel(args: &[u64]) {
    let (x, n) = (ptr::<f32>(args[0]), args[1] as u32);
    let i = gpu::block_idx_x() * gpu::block_dim_x() + gpu::thread_idx_x();
    let right = if i + 1 < n {
        f32::ld_global_nc(x.wrapping_add(i as usize + 1))
    } else {
        0.0
    };
    if args[2] != 0 {
        gpu::sync_threads();
    }
    f32::st_global(x.wrapping_add(i as usize), right);
}

#[test]
fn planted_write_after_read_is_caught_in_a_block_and_across_blocks() {
    let sim = Simulator::default();
    let x = sim.alloc::<f32>(64, "x").unwrap();
    let run = |grid, block, barrier| {
        sim.launch(
            "shift",
            Some(in_place_shift_kernel),
            &launch(grid, block),
            &[x.addr(), 64, barrier],
        )
    };
    // No barrier: thread 1 overwrites element 1, which thread 0 read before.
    expect_sim_error(
        run(1, 64, 0),
        &[
            "global-memory race: write after read",
            "offset 4 of `x`",
            "block (0, 0, 0) thread (1, 0, 0) at",
            "by block (0, 0, 0) thread (0, 0, 0)",
        ],
    );
    // The barrier orders it inside one block ...
    run(1, 64, 1).unwrap();
    // ... but not across blocks: block 0's thread 31 read element 32, block 1's thread 0
    // overwrites it.
    expect_sim_error(
        run(2, 32, 1),
        &[
            "global-memory race: write after read",
            "offset 128 of `x`",
            "block (1, 0, 0) thread (0, 0, 0) at",
            "by block (0, 0, 0) thread (31, 0, 0)",
        ],
    );
}

/// Stream-K's fix-up: block 0 writes its partial tile and releases a flag; block 1 acquires
/// it and adds the partial. `args[2]` picks a planted bug: 1, no barrier before the release (only
/// thread 0's writes are released); 2, no barrier after the acquire (only thread 0 acquired); 3,
/// a relaxed store instead of the release.
unsafe fn flag_kernel(args: &[u64]) {
    let (part, flag, bug) = (ptr::<f32>(args[0]), ptr::<u32>(args[1]), args[2]);
    let out = ptr::<f32>(args[3]);
    let t = gpu::thread_idx_x() as usize;
    if gpu::block_idx_x() == 0 {
        f32::st_global(part.wrapping_add(t), 10.0 + t as f32);
        if bug != 1 {
            gpu::sync_threads();
        }
        if t == 0 {
            if bug == 3 {
                st_relaxed_gpu(flag, 1);
            } else {
                st_release_gpu(flag, 1);
            }
        }
    } else {
        if t == 0 {
            while ld_acquire_gpu(flag) == 0 {}
            // Consumed: zero again for the next launch.
            st_relaxed_gpu(flag, 0);
        }
        if bug != 2 {
            gpu::sync_threads();
        }
        let v = f32::ld_global_nc(part.wrapping_add(t));
        f32::st_global(out.wrapping_add(t), v + 1.0);
    }
}

#[test]
fn release_acquire_orders_blocks_and_each_missing_link_is_a_race() {
    let sim = Simulator::default();
    let part = sim.alloc_uninit::<f32>(64, "partials").unwrap();
    let flag = sim.alloc::<u32>(1, "flags").unwrap();
    let out = sim.alloc::<f32>(64, "out").unwrap();
    let args = |bug: u64| [part.addr(), flag.addr(), bug, out.addr()];
    sim.launch("ordered", Some(flag_kernel), &launch(2, 64), &args(0))
        .unwrap();
    let got = sim.read(&out).unwrap();
    assert!(
        got.iter().enumerate().all(|(t, &v)| v == 11.0 + t as f32),
        "{got:?}"
    );
    assert_eq!(sim.read(&flag).unwrap(), [0]);
    for (bug, why) in [
        (1, "no barrier before the release"),
        (2, "no barrier after the acquire"),
    ] {
        let text = expect_sim_error(
            sim.launch("planted", Some(flag_kernel), &launch(2, 64), &args(bug)),
            &["global-memory race: read after write", "`partials`"],
        );
        // Thread 0's own partial is ordered either way; thread 1's is the first that is not.
        assert!(
            text.contains("block (1, 0, 0) thread (1, 0, 0)")
                && text.contains("by block (0, 0, 0) thread (1, 0, 0)"),
            "{why}: {text}"
        );
        sim.write(&flag, &[0]).unwrap();
    }
    // A relaxed flag orders nothing: block 1's thread 0 already races on its own element.
    let text = expect_sim_error(
        sim.launch("planted", Some(flag_kernel), &launch(2, 64), &args(3)),
        &["global-memory race: read after write", "`partials`"],
    );
    assert!(text.contains("block (1, 0, 0) thread (0, 0, 0)"), "{text}");
}

/// Every thread of every block counts itself into `counter` atomically; `args[1] != 0` plants a
/// plain store of the counter by block 1's thread 5.
unsafe fn count_kernel(args: &[u64]) {
    let counter = ptr::<u32>(args[0]);
    if args[1] != 0 && gpu::block_idx_x() == 1 && gpu::thread_idx_x() == 5 {
        u32::st_global(counter, 0);
    }
    atom_add_gpu(counter, 1);
}

#[test]
fn atomics_never_race_each_other_but_a_plain_store_races_them() {
    let sim = Simulator::default();
    let counter = sim.alloc::<u32>(1, "counter").unwrap();
    sim.launch(
        "atomics",
        Some(count_kernel),
        &launch(4, 96),
        &[counter.addr(), 0],
    )
    .unwrap();
    assert_eq!(sim.read(&counter).unwrap(), [4 * 96]);
    expect_sim_error(
        sim.launch(
            "planted",
            Some(count_kernel),
            &launch(4, 96),
            &[counter.addr(), 1],
        ),
        &[
            "global-memory race: write after write",
            "block (1, 0, 0) thread (5, 0, 0)",
            "by block (1, 0, 0) thread (4, 0, 0)",
        ],
    );
}

/// Threads of different blocks write neighbouring f16 elements, and a later launch reads them
/// from other blocks: neither is a race.
unsafe fn halves_kernel(args: &[u64]) {
    let (h, read) = (ptr::<u16>(args[0]), args[1] != 0);
    let i = (gpu::block_idx_x() * gpu::block_dim_x() + gpu::thread_idx_x()) as usize;
    if read {
        let n = (gpu::grid_dim_x() * gpu::block_dim_x()) as usize;
        let v = u16::ld_global_nc(h.wrapping_add(n - 1 - i));
        assert_eq!(v as usize, n - 1 - i);
    } else {
        u16::st_global(h.wrapping_add(i), i as u16);
    }
}

#[test]
fn neighbouring_halves_and_accesses_of_earlier_launches_do_not_race() {
    let sim = Simulator::default();
    let h = sim.alloc_uninit::<u16>(64, "halves").unwrap();
    sim.launch("write", Some(halves_kernel), &launch(64, 1), &[h.addr(), 0])
        .unwrap();
    sim.launch("read", Some(halves_kernel), &launch(2, 32), &[h.addr(), 1])
        .unwrap();
}

#[test]
fn the_race_detector_can_be_turned_off() {
    let sim = Simulator::new(SimLimits {
        global_race_check: false,
        ..SimLimits::default()
    });
    let out = sim.alloc::<f32>(256, "out").unwrap();
    sim.launch(
        "unchecked",
        Some(wrong_stride_kernel),
        &launch(2, 64),
        &[out.addr(), 256],
    )
    .unwrap();
}

// --- Uninitialised memory ---

/// Sums `n` elements of `src` into `dst[0]` (one thread).
unsafe fn sum_kernel(args: &[u64]) {
    let (src, dst, n) = (ptr::<f32>(args[0]), ptr::<f32>(args[1]), args[2] as usize);
    let mut s = 0.0;
    for i in 0..n {
        s += f32::ld_global_nc(src.wrapping_add(i));
    }
    f32::st_global(dst, s);
}

#[test]
fn planted_uninitialised_read_is_caught_and_poison_is_nan() {
    let sim = Simulator::default();
    let src = sim.alloc_uninit::<f32>(10, "src").unwrap();
    let dst = sim.alloc_uninit::<f32>(1, "dst").unwrap();
    // Fresh memory reads back as NaN in every float type.
    let poison = sim.read(&src).unwrap();
    assert!(poison.iter().all(|v| v.is_nan()), "{poison:?}");
    let bits = sim.read(&sim.alloc_uninit::<u16>(3, "h").unwrap()).unwrap();
    assert!(bits
        .iter()
        .all(|&b| half::f16::from_bits(b).is_nan() && half::bf16::from_bits(b).is_nan()));
    // The host wrote 9 of the 10 elements; the kernel reads all 10.
    sim.write(&src.view(0, 9).unwrap(), &[1.0; 9]).unwrap();
    expect_sim_error(
        sim.launch(
            "planted",
            Some(sum_kernel),
            &launch(1, 1),
            &[src.addr(), dst.addr(), 10],
        ),
        &[
            "read of uninitialised global memory",
            "offset 36 of `src`",
            "block (0, 0, 0) thread (0, 0, 0)",
        ],
    );
    sim.launch(
        "nine",
        Some(sum_kernel),
        &launch(1, 1),
        &[src.addr(), dst.addr(), 9],
    )
    .unwrap();
    assert_eq!(sim.read(&dst).unwrap(), [9.0]);
    // What a kernel wrote counts as written; zeroing `alloc` is initialised.
    sim.launch(
        "again",
        Some(sum_kernel),
        &launch(1, 1),
        &[dst.addr(), src.addr(), 1],
    )
    .unwrap();
    let zeros = sim.alloc::<f32>(10, "zeros").unwrap();
    sim.launch(
        "zeros",
        Some(sum_kernel),
        &launch(1, 1),
        &[zeros.addr(), dst.addr(), 10],
    )
    .unwrap();
    assert_eq!(sim.read(&dst).unwrap(), [0.0]);
}

/// `cp.async` of 16 bytes per thread from global `src` into shared memory.
unsafe fn cp_async_kernel(args: &[u64]) {
    let src = args[0];
    let t = gpu::thread_idx_x();
    gpu::cp_async_16(16 * t, ptr::<gpu::Vec16>(src + 16 * t as u64));
    gpu::cp_async_commit();
    gpu::cp_async_wait::<0>();
}

#[test]
fn uninitialised_cp_async_source_is_caught() {
    let sim = Simulator::default();
    let src = sim.alloc_uninit::<u32>(4 * 32, "tile").unwrap();
    sim.write(&src.view(0, 4 * 31).unwrap(), &[7; 4 * 31])
        .unwrap();
    let l = SimLaunch {
        shared_bytes: 512,
        ..launch(1, 32)
    };
    expect_sim_error(
        sim.launch("planted", Some(cp_async_kernel), &l, &[src.addr()]),
        &[
            "cp.async source: read of uninitialised",
            "offset 496 of `tile`",
            "thread (31, 0, 0)",
        ],
    );
    sim.write(&src, &[7; 4 * 32]).unwrap();
    sim.launch("written", Some(cp_async_kernel), &l, &[src.addr()])
        .unwrap();
}
