//! GPU tests of occupancy: the driver's calculator against the offline model for every
//! registry kernel of the device's PTX flavour (with the driver's registers, and with ptxas's
//! for the same PTX), register caps through the JIT, and the padding that caps blocks per SM.
//!
//! Each test is `#[ignore = "needs a GPU"]`, as in `tests/gpu.rs`. On a GPU machine:
//! `cargo test --release --test gpu_occupancy -- --ignored --nocapture` (staged:
//! `.gpu/bin/test-gpu_occupancy --ignored --nocapture`). ptxas comes from `RUSTILE_PTXAS`,
//! `PATH` or `/usr/local/cuda/bin`, else the resource table of `RUSTILE_PTX_REPORT` (a
//! `rustile ptx-report` output, e.g. `bench-results/report/inputs/ptx-report.md`); with neither
//! the ptxas half prints SKIPPED, and fails under `RUSTILE_STRICT=1`.

use std::collections::HashMap;

use rustile::occupancy::{driver, jit::JitKernel, study};
use rustile::ptx::Flavour;
use rustile::ptxas::KernelResources;
use rustile::{DType, Error, Gpu};

fn gpu() -> Gpu {
    Gpu::new(0).expect("these tests need a GPU")
}

/// ptxas's resources of the loaded PTX for the device's architecture, by symbol, and where
/// they came from.
fn ptxas_resources(gpu: &Gpu) -> Option<(HashMap<String, KernelResources>, String)> {
    let (major, minor) = gpu.info().compute_capability;
    let mut arch = format!("sm_{major}{minor}");
    if gpu.flavour() == Flavour::Sm90a {
        arch.push('a');
    }
    let by_symbol = |v: Vec<KernelResources>| -> HashMap<String, KernelResources> {
        v.into_iter()
            .filter(|r| r.arch == arch)
            .map(|r| (r.kernel.clone(), r))
            .collect()
    };
    if let Some(ptxas) = rustile::ptxas::find().filter(|p| p.exists()) {
        let v = rustile::ptxas::assemble(&ptxas, gpu.flavour().text(), &arch)
            .expect("ptxas assembles the loaded PTX");
        return Some((by_symbol(v), format!("{} for {arch}", ptxas.display())));
    }
    let path = std::env::var_os("RUSTILE_PTX_REPORT")?;
    let dir = std::path::Path::new(&path).parent()?.to_path_buf();
    let inputs = rustile::report::load::Inputs::load(&[dir]);
    Some((
        by_symbol(inputs.ptx),
        format!("{} ({arch} rows)", path.to_string_lossy()),
    ))
}

#[test]
#[ignore = "needs a GPU"]
fn driver_occupancy_agrees_with_the_model_for_every_kernel() {
    let gpu = gpu();
    let ptxas = ptxas_resources(&gpu);
    match &ptxas {
        Some((m, from)) => println!("ptxas registers: {} kernels from {from}", m.len()),
        None => {
            assert!(
                std::env::var("RUSTILE_STRICT").as_deref() != Ok("1"),
                "no ptxas and no RUSTILE_PTX_REPORT: the ptxas comparison cannot run"
            );
            println!("SKIPPED: the ptxas half (no ptxas, no RUSTILE_PTX_REPORT)");
        }
    }
    let empty = HashMap::new();
    let map = ptxas.as_ref().map_or(&empty, |(m, _)| m);
    let rows = driver::compare(&gpu, map).expect("every kernel loads and reports");
    assert!(rows.len() > 50, "only {} kernels", rows.len());
    if !map.is_empty() {
        let missing: Vec<&str> = rows
            .iter()
            .filter(|r| r.ptxas_registers.is_none())
            .map(|r| r.symbol.as_str())
            .collect();
        assert!(missing.is_empty(), "no ptxas row for {missing:?}");
    }
    println!("{}", driver::markdown(&rows));
    let bad: Vec<String> = rows
        .iter()
        .filter(|r| !r.agrees())
        .map(|r| {
            format!(
                "{}: {} threads, {} dyn + {} static smem B, regs driver {} / ptxas {:?}: \
                 driver {} blocks/SM, model {} (ptxas regs {:?})",
                r.symbol,
                r.threads,
                r.dynamic_shared,
                r.static_shared,
                r.registers,
                r.ptxas_registers,
                r.driver_blocks,
                r.model_blocks,
                r.ptxas_model_blocks
            )
        })
        .collect();
    assert!(
        bad.is_empty(),
        "{} of {} kernels disagree:\n{}",
        bad.len(),
        rows.len(),
        bad.join("\n")
    );
}

#[test]
#[ignore = "needs a GPU"]
fn register_caps_reach_the_jit_and_padding_caps_blocks() {
    let gpu = gpu();
    let gemm = &rustile_kernels::gemm::v10_tile_128x64::INFO;
    let symbol = gemm.entry(DType::F32).unwrap().symbol;
    let own = gpu.function(symbol).unwrap().num_regs().unwrap() as u32;
    let free = JitKernel::load(&gpu, symbol, None).unwrap();
    assert_eq!(free.registers, own, "the uncapped JIT load is the Gpu's");
    for cap in [96, 64, 32] {
        let k = JitKernel::load(&gpu, symbol, Some(cap)).unwrap();
        println!(
            "max {cap}: {} registers, {} local B, spills {:?}\n{}",
            k.registers,
            k.local_bytes,
            study::spills_in_log(&k.info_log),
            k.info_log
        );
        assert!(k.registers <= cap, "cap {cap}: {} registers", k.registers);
        let b = k
            .max_active_blocks(128, gemm.shared_bytes(DType::F32))
            .unwrap();
        assert!(
            b >= free
                .max_active_blocks(128, gemm.shared_bytes(DType::F32))
                .unwrap()
        );
    }
    let k32 = JitKernel::load(&gpu, symbol, Some(32)).unwrap();
    assert!(
        k32.local_bytes > 0,
        "126 registers into 32 without spilling?"
    );
    assert!(matches!(
        JitKernel::load(&gpu, symbol, Some(8)),
        Err(Error::Usage(_))
    ));
    assert!(matches!(
        JitKernel::load(&gpu, "no_such_kernel", None),
        Err(Error::MissingKernel { .. })
    ));
    // Padding that leaves room for `t` blocks of copy/scalar gives exactly `t`.
    let copy = rustile_kernels::copy::v01_scalar::INFO
        .entry(DType::F32)
        .unwrap();
    let k = JitKernel::load(&gpu, copy.symbol, None).unwrap();
    for t in [1, 2, 4, 8] {
        let pad = study::padding_for(&gpu, t, 0, k.static_shared).unwrap();
        k.allow_dynamic_shared(&gpu, pad).unwrap();
        assert_eq!(k.max_active_blocks(256, pad).unwrap(), t, "pad {pad}");
    }
    assert!(k
        .allow_dynamic_shared(&gpu, gpu.info().shared_per_block_optin + 1)
        .is_err());
}
