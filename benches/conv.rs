//! `cargo bench --bench conv`: the ResNet-50 3×3 layers and a few 1×1 layers at batch 32
//! through the code of `rustile conv bench`: f16 on the dispatcher's kernel, checked against
//! float64 on sampled outputs, then timed interleaved with cuDNN's fused conv + bias + ReLU
//! and its convolution alone in the same process (warm-up, CUDA events per repetition, L2
//! flushed before each, median of 10); TFLOP/s = 2·N·K·P·Q·C·R·S / time. Prints the table and
//! writes `conv.json`, `.csv` and `.md` (notes/results.md) to `$RUSTILE_BENCH_OUT` (default `target/rustile-bench`).
//!
//! Without a GPU the bench prints why and exits successfully: there is nothing to time. The
//! full set (every layer, bf16, f32, batch 1) is `rustile conv bench`.

use std::path::PathBuf;

use rustile::conv::bench::{bench_one, markdown};
use rustile::conv::shapes::resnet50;
use rustile::conv::{select, Target};
use rustile::harness::{L2Mode, TimingConfig};
use rustile::results::{ResultFile, RunMeta, TimingMeta};
use rustile::{DType, Gpu};

const LAYERS: [&str; 7] = [
    "l1.b0.conv2",
    "l2.b1.conv2",
    "l3.b1.conv2",
    "l4.b1.conv2",
    "l1.b0.conv3",
    "l2.b1.conv1",
    "l4.b0.conv3",
];

fn main() {
    let gpu = match Gpu::new(0) {
        Ok(gpu) => gpu,
        Err(e) => {
            println!("rustile conv bench: {e}; nothing to time (benchmarks need a GPU)");
            return;
        }
    };
    let cfg = TimingConfig {
        warmup: 3,
        reps: 10,
        mode: L2Mode::Flush,
    };
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mut rows = Vec::new();
    for (name, p) in resnet50(32, DType::F16) {
        if !LAYERS.contains(&name) {
            continue;
        }
        let record = match select(Target::gpu(&gpu), &p) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("skipped {name}: {e}");
                continue;
            }
        };
        match bench_one(
            &gpu,
            name,
            record,
            &p,
            &cfg,
            seed,
            true,
            rustile::families::conv::tma::TMA_STORES,
            rustile::families::conv::tma::Reduce::Auto,
        ) {
            Ok(r) => rows.push(r),
            Err(e) => {
                eprintln!("rustile conv bench failed on {name}: {e}");
                std::process::exit(1);
            }
        }
    }
    let md = format!(
        "## conv (cargo bench) on {}, f16, batch 32: median of {} repetitions, L2 flushed, interleaved with cuDNN; seed {seed}\n\n{}",
        gpu.info().name,
        cfg.reps,
        markdown(&rows)
    );
    println!("\n{md}");
    let out = PathBuf::from(
        std::env::var("RUSTILE_BENCH_OUT").unwrap_or_else(|_| "target/rustile-bench".into()),
    );
    let mut t = TimingMeta::events(cfg.warmup, cfg.reps, "flush");
    t.pairing = Some("interleaved".into());
    let meta = RunMeta::new(
        "conv bench (cargo bench --bench conv)",
        Some(&gpu),
        Some(seed),
        t,
    );
    if let Err(e) = ResultFile::save(meta, &rows, &out, "conv", &md) {
        eprintln!("rustile conv bench: writing {}: {e}", out.display());
        std::process::exit(1);
    }
}
