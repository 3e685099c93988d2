//! `cargo bench --bench memory`: the copy, strided-copy and transpose sweeps.
//!
//! Criterion drives each case with CUDA-event time as the measurement (`iter_custom`: the time
//! between two events around `iters` launches, L2 kept cold by rotating input sets). At the
//! end, rustile's own harness measures every case again as a median over single launches, in
//! both L2 modes, beside `cuMemcpyDtoD` in the same process, prints the table and writes
//! JSON/CSV to `$RUSTILE_BENCH_OUT` (default `target/rustile-bench`).
//!
//! Without a GPU the bench prints why and exits successfully: there is nothing to time.
//! `RUSTILE_BENCH_FAMILY=copy|strided|transpose` restricts the sweep.

use std::time::Duration;

use criterion::Criterion;
use cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT;
use rand::rngs::SmallRng;
use rand::SeedableRng;
use rustile::bench::{self, Sweep};
use rustile::elem::random_vec;
use rustile::harness::{self, TimingConfig};
use rustile::results::{Progress, ResultFile, RunMeta, TimingMeta};
use rustile::{DType, Family, Gpu, Problem, KERNELS};

fn families() -> Vec<Family> {
    match std::env::var("RUSTILE_BENCH_FAMILY") {
        Ok(name) => Family::MEMORY
            .into_iter()
            .filter(|f| f.name() == name)
            .collect(),
        Err(_) => Family::MEMORY.to_vec(),
    }
}

/// Criterion's view: f32, rotate mode, one group per family, event time per launch.
fn criterion_sweeps(c: &mut Criterion, gpu: &Gpu) {
    let mut rng = SmallRng::seed_from_u64(0xc0ffee);
    for family in families() {
        let mut group = c.benchmark_group(family.name());
        for problem in Sweep::default_for(family).problems {
            let (src_len, dst_len) = problem.lens().unwrap();
            let sets =
                harness::rotation_sets(gpu.info().l2_bytes, ((src_len + dst_len) * 4) as u64);
            let srcs: Vec<_> = (0..sets)
                .map(|_| {
                    gpu.upload(&random_vec::<f32>(src_len, &mut rng), "bench input")
                        .unwrap()
                })
                .collect();
            let mut dsts: Vec<_> = (0..sets)
                .map(|_| gpu.alloc::<f32>(dst_len, "bench output").unwrap())
                .collect();
            for kernel in KERNELS
                .iter()
                .filter(|k| k.family == family && k.role == rustile_kernels::registry::Role::Ladder)
            {
                let id = format!("{}/f32/{}", kernel.name, problem.shape());
                group.bench_function(id, |b| {
                    b.iter_custom(|iters| {
                        event_time(gpu, &problem, kernel, &srcs, &mut dsts, iters)
                    })
                });
            }
        }
        group.finish();
    }
}

fn event_time(
    gpu: &Gpu,
    problem: &Problem,
    kernel: &rustile::KernelInfo,
    srcs: &[cudarc::driver::CudaSlice<f32>],
    dsts: &mut [cudarc::driver::CudaSlice<f32>],
    iters: u64,
) -> Duration {
    let ctx = gpu.context();
    let start = ctx.new_event(Some(CU_EVENT_DEFAULT)).unwrap();
    let end = ctx.new_event(Some(CU_EVENT_DEFAULT)).unwrap();
    start.record(gpu.stream()).unwrap();
    for i in 0..iters as usize {
        let s = i % srcs.len();
        problem
            .launch_gpu(gpu, kernel, &srcs[s], &mut dsts[s])
            .unwrap();
    }
    end.record(gpu.stream()).unwrap();
    end.synchronize().unwrap();
    Duration::from_secs_f64(start.elapsed_ms(&end).unwrap() as f64 * 1e-3)
}

fn main() {
    let gpu = match Gpu::new(0) {
        Ok(gpu) => gpu,
        Err(e) => {
            println!("rustile memory bench: {e}; nothing to time (benchmarks need a GPU)");
            return;
        }
    };
    let mut c = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
        .configure_from_args();
    criterion_sweeps(&mut c, &gpu);
    c.final_summary();

    let out = std::env::var("RUSTILE_BENCH_OUT").unwrap_or_else(|_| "target/rustile-bench".into());
    let timing = TimingConfig::default();
    for family in families() {
        let mut sweep = Sweep::default_for(family);
        sweep.dtypes = vec![DType::F32, DType::F16];
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let l2 = if sweep.modes.len() == 2 {
            "both"
        } else {
            sweep.modes[0].name()
        };
        let meta = RunMeta::new(
            &format!("bench {} (cargo bench --bench memory)", family.name()),
            Some(&gpu),
            Some(seed),
            TimingMeta::events(timing.warmup, timing.reps, l2),
        );
        let mut progress = Progress::new(sweep.cases());
        let rows = bench::run(&gpu, &sweep, &timing, seed, |what| progress.step(what))
            .unwrap_or_else(|e| panic!("{} sweep failed: {e}", family.name()));
        progress.finish();
        let table = bench::markdown(&rows);
        ResultFile::save(
            meta,
            &rows,
            std::path::Path::new(&out),
            family.name(),
            &table,
        )
        .unwrap();
        println!("\n## {}\n\n{table}", family.name());
    }
}
