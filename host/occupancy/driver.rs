//! The driver's occupancy calculator against the offline model
//! ([`crate::report::occupancy`]) for every registry kernel the device's PTX flavour holds, at
//! the block size and dynamic shared bytes its launch plan uses
//! ([`crate::launch::LaunchPlan::new`]: the registry's).

use std::collections::HashMap;

use cudarc::driver::sys::CUdevice_attribute_enum as DevAttr;
use cudarc::driver::sys::CUfunction_attribute_enum as Attr;

use crate::error::{DriverContext, Error, Result};
use crate::gpu::Gpu;
use crate::ptxas::KernelResources;
use crate::report::occupancy::{self, SmLimits};

/// One kernel entry on the device.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct DriverRow {
    /// Entry point.
    pub symbol: String,
    /// Threads per block.
    pub threads: u32,
    /// Dynamic shared bytes per block.
    pub dynamic_shared: usize,
    /// Static shared bytes (`CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES`).
    pub static_shared: u32,
    /// Registers per thread the driver's JIT allocated.
    pub registers: u32,
    /// Local bytes per thread (spills, stack).
    pub local_bytes: u32,
    /// ptxas's registers for the same PTX and the device's architecture, where given.
    pub ptxas_registers: Option<u32>,
    /// `cuOccupancyMaxActiveBlocksPerMultiprocessor`.
    pub driver_blocks: u32,
    /// The offline model with the driver's registers and shared bytes (0: does not fit).
    pub model_blocks: u32,
    /// The offline model with ptxas's registers and static shared bytes, where given.
    pub ptxas_model_blocks: Option<u32>,
}

impl DriverRow {
    /// Whether the driver and the model (both inputs) agree.
    pub fn agrees(&self) -> bool {
        self.model_blocks == self.driver_blocks
            && self
                .ptxas_model_blocks
                .is_none_or(|b| b == self.driver_blocks)
    }
}

/// The model's limits for `gpu`'s architecture, checked against the device's own attributes
/// (resident threads, blocks and shared memory per SM, registers per SM). Errors:
/// [`Error::Unsupported`] for an architecture the model lacks, [`Error::Mismatch`] when a limit
/// differs from the device's.
pub fn device_limits(gpu: &Gpu) -> Result<SmLimits> {
    let (major, minor) = gpu.info().compute_capability;
    let arch = format!("sm_{major}{minor}");
    let l = occupancy::limits(&arch).ok_or_else(|| Error::Unsupported {
        kernel: "occupancy model".into(),
        what: format!("no per-SM limits for {arch}"),
    })?;
    let attr = |a: DevAttr| {
        gpu.context()
            .attribute(a)
            .during(|| format!("reading {a:?}"))
            .map(|v| v.max(0) as u32)
    };
    let device = [
        (
            "warps",
            attr(DevAttr::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)? / 32,
        ),
        (
            "blocks",
            attr(DevAttr::CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR)?,
        ),
        (
            "registers",
            attr(DevAttr::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR)?,
        ),
        (
            "shared",
            attr(DevAttr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)?,
        ),
        (
            "reserved",
            attr(DevAttr::CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK)?,
        ),
    ];
    let model = [
        l.warps,
        l.blocks,
        l.registers,
        l.shared,
        l.reserved_per_block,
    ];
    for ((what, d), m) in device.iter().zip(model) {
        if *d != m {
            return Err(Error::Mismatch {
                kernel: "occupancy model".into(),
                shape: arch.clone(),
                detail: format!("{what} per SM: the model has {m}, the device {d}"),
            });
        }
    }
    Ok(l)
}

/// Every registry entry of `gpu`'s flavour: its driver occupancy and the model's, with
/// `ptxas` (resources of the same PTX for the device's architecture, by symbol) where given.
/// Loads every kernel (the driver JIT-compiles each: tens of seconds on the H200).
pub fn compare(gpu: &Gpu, ptxas: &HashMap<String, KernelResources>) -> Result<Vec<DriverRow>> {
    let l = device_limits(gpu)?;
    let text = gpu.flavour().text();
    let mut rows = Vec::new();
    for k in crate::KERNELS {
        for e in k.symbols {
            if !crate::ptx::has_entry(text, e.symbol) {
                continue;
            }
            let f = gpu.function(e.symbol)?;
            let get = |a: Attr| {
                f.get_attribute(a)
                    .during(|| format!("reading {a:?} of `{}`", e.symbol))
                    .map(|v| v.max(0) as u32)
            };
            let registers = get(Attr::CU_FUNC_ATTRIBUTE_NUM_REGS)?;
            let static_shared = get(Attr::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?;
            let local_bytes = get(Attr::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)?;
            let threads = k.block.0 * k.block.1 * k.block.2;
            let dynamic = k.shared_bytes(e.dtype);
            if dynamic + static_shared as usize > gpu.info().shared_per_block_optin {
                return Err(Error::Resource {
                    kernel: e.symbol.into(),
                    what: format!("{dynamic} dynamic + {static_shared} static shared bytes"),
                });
            }
            if dynamic > 48 * 1024 {
                f.set_attribute(
                    Attr::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    dynamic as i32,
                )
                .during(|| format!("raising the dynamic shared memory of `{}`", e.symbol))?;
            }
            let driver_blocks = f
                .occupancy_max_active_blocks_per_multiprocessor(threads, dynamic, None)
                .during(|| format!("the occupancy of `{}`", e.symbol))?;
            let model = |regs: u32, stat: u32| {
                occupancy::occupancy(&l, threads, regs, dynamic as u32 + stat)
                    .map_or(0, |o| o.blocks)
            };
            let p = ptxas.get(e.symbol);
            rows.push(DriverRow {
                symbol: e.symbol.into(),
                threads,
                dynamic_shared: dynamic,
                static_shared,
                registers,
                local_bytes,
                ptxas_registers: p.map(|r| r.registers),
                driver_blocks,
                model_blocks: model(registers, static_shared),
                ptxas_model_blocks: p.map(|r| model(r.registers, r.shared_bytes)),
            });
        }
    }
    Ok(rows)
}

/// The rows as a markdown table, disagreements marked.
pub fn markdown(rows: &[DriverRow]) -> String {
    let mut s = String::from(
        "| kernel | threads | dyn smem B | static smem B | regs (driver) | regs (ptxas) | local B | blocks/SM driver | model | model (ptxas regs) | |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n",
    );
    let opt = |v: Option<u32>| v.map_or("-".into(), |v| v.to_string());
    for r in rows {
        s += &format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            r.symbol,
            r.threads,
            r.dynamic_shared,
            r.static_shared,
            r.registers,
            opt(r.ptxas_registers),
            r.local_bytes,
            r.driver_blocks,
            r.model_blocks,
            opt(r.ptxas_model_blocks),
            if r.agrees() { "" } else { "DISAGREE" }
        );
    }
    s
}
