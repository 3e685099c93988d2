//! Occupancy on the GPU: the driver's occupancy calculator against the offline model
//! ([`driver`]), kernels JIT-compiled with register caps ([`jit`]), and the experiment that
//! varies one memory-bound and one compute kernel's occupancy and times each point ([`study`];
//! `rustile occupancy`). What it shows: `notes/occupancy.md`.

pub mod driver;
pub mod jit;
pub mod study;

use std::path::PathBuf;

use crate::cli::{writable_dir, Seed};
use crate::error::Result;
use crate::gpu::Gpu;
use crate::results::meta::{RunMeta, TimingMeta};
use crate::results::ResultFile;

/// `rustile occupancy [--out DIR] [--seed N] [--driver]`.
#[derive(Clone, Debug, clap::Args)]
pub struct OccupancyArgs {
    /// Results directory (occupancy.json, .csv, .md)
    #[arg(long, value_name = "DIR", value_parser = writable_dir, default_value = "target/rustile-occupancy")]
    pub out: PathBuf,
    /// Also compare the driver's occupancy with the offline model for every kernel
    /// (occupancy-driver.md; loads every kernel, tens of seconds)
    #[arg(long)]
    pub driver: bool,
    #[command(flatten)]
    pub seed: Seed,
}

/// The `occupancy` command: the experiment on device 0, written to `--out`.
pub fn run(a: &OccupancyArgs) -> Result<()> {
    let gpu = Gpu::new(0)?;
    let seed = a.seed.get();
    let mut progress = |what: &str| crate::cli::status(what);
    let mut rows = study::memory(&gpu, seed, &mut progress)?;
    rows.extend(study::compute(&gpu, seed, &mut progress)?);
    let t = study::timing();
    let mut timing = TimingMeta::events(
        t.warmup,
        t.reps,
        "none (copy: 256 MiB moved per launch, past the L2; gemm: compute-bound)",
    );
    timing.pairing = None;
    let meta = RunMeta::new("occupancy", Some(&gpu), Some(seed), timing);
    let table = study::markdown(&rows);
    println!("{table}");
    ResultFile::save(meta, &rows, &a.out, "occupancy", &table)?;
    if a.driver {
        let rows = driver::compare(&gpu, &Default::default())?;
        let md = driver::markdown(&rows);
        let path = a.out.join("occupancy-driver.md");
        std::fs::write(&path, &md).map_err(|source| crate::Error::Io {
            path: path.display().to_string(),
            source,
        })?;
        let bad = rows.iter().filter(|r| !r.agrees()).count();
        println!(
            "driver vs model: {} kernels, {bad} disagree ({})",
            rows.len(),
            path.display()
        );
    }
    Ok(())
}
