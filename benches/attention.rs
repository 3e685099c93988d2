//! `cargo bench --bench attention`: a short attention sweep through the code of `rustile
//! attention bench` — N = 1024, 4096, 16384 of the anchor shapes (B·N = 16384 tokens, H = 16),
//! d 64 and 128, causal and not, f16, every kernel the device runs (`naive` up to N = 4096),
//! each checked against float64 on sampled rows, then timed (warm-up, CUDA events per
//! repetition, L2 flushed before each, median of 10). Prints the table and writes
//! `attention.md` and `attention.jsonl` to `$RUSTILE_BENCH_OUT` (default `target/rustile-bench`).
//!
//! Without a GPU the bench prints why and exits successfully: there is nothing to time. The
//! full sweep is `rustile attention bench`.

use std::io::IsTerminal;
use std::path::PathBuf;

use rustile::attention::bench::{self, plan, Sweep};
use rustile::attention::report::{self, sdpa_command, skip_notes};
use rustile::attention::Target;
use rustile::harness::TimingConfig;
use rustile::{DType, Gpu};

fn main() {
    let gpu = match Gpu::new(0) {
        Ok(gpu) => gpu,
        Err(e) => {
            println!("rustile attention bench: {e}; nothing to time (benchmarks need a GPU)");
            return;
        }
    };
    let shapes = Sweep {
        n: vec![1024, 4096, 16384],
        bh: Vec::new(),
        ..Sweep::default()
    }
    .shapes();
    let dtype = DType::F16;
    let (runs, skips) = plan(Target::Gpu(gpu.flavour()), dtype, &shapes, None);
    for note in skip_notes(&skips) {
        eprintln!("skipped: {note}");
    }
    let cfg = bench::Config {
        dtype,
        timing: TimingConfig {
            warmup: 3,
            reps: 10,
            ..TimingConfig::default()
        },
        check: true,
        seed: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64),
    };
    let rows = bench::run(&gpu, &cfg, &runs, |what| {
        if std::io::stderr().is_terminal() {
            eprint!("\r\x1b[2K{what}")
        }
    });
    let rows = match rows {
        Ok(rows) => rows,
        Err(e) => {
            eprintln!("\nrustile attention bench failed: {e}");
            std::process::exit(1);
        }
    };
    eprintln!();
    let header = format!(
        "attention forward (cargo bench) on {} ({}), f16: median of {} repetitions, L2 flushed; seed {}",
        gpu.info().name,
        gpu.flavour().name(),
        cfg.timing.reps,
        cfg.seed
    );
    let sdpa = sdpa_command(&shapes, dtype, cfg.timing.reps);
    println!(
        "\n## attention\n\n{header}\n\n{}",
        report::markdown(&rows, &skips)
    );
    let out = PathBuf::from(
        std::env::var("RUSTILE_BENCH_OUT").unwrap_or_else(|_| "target/rustile-bench".into()),
    );
    match report::write(&out, &header, &rows, &skips, &sdpa) {
        Ok([md, jl]) => println!("results: {} and {}", md.display(), jl.display()),
        Err(e) => {
            eprintln!("rustile attention bench: {e}");
            std::process::exit(1);
        }
    }
}
