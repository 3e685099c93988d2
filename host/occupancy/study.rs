//! The occupancy experiment: one memory-bound kernel pair and one compute kernel, each loaded
//! and launched at several occupancies, timed and validated at every point.
//!
//! - Memory: `copy/scalar` (one 4-byte load in flight per thread) and `copy/vec16` (one
//!   16-byte load), f32, 32 Mi elements (128 MiB each way, 4× the L2 in all), at several block
//!   sizes, with an unused dynamic shared allocation ("padding") that caps the resident blocks
//!   per SM at 1, 2, 4, … Both kernels read their block size, so any block covers the array.
//! - Compute: `gemm/tile_128x64` (128 threads, a 8×8-per-thread register tile), 4096³, loaded
//!   with `CU_JIT_MAX_REGISTERS` caps (the same PTX; the JIT spills what does not fit), and at
//!   its own register count with padding that caps the blocks per SM.
//!
//! Every point: the driver's occupancy for the function as loaded, CUDA-event timing (warm-up,
//! median of the repetitions), the output poisoned with NaN before the validated launch and
//! checked (the copy bit for bit against its input; the GEMM bit for bit against the uncapped
//! load's output and, on sampled elements, against a float64 reference within the f32 bound).

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rustile_kernels::copy::{v01_scalar, v02_vec16};
use rustile_kernels::gemm::v10_tile_128x64;

use super::jit::JitKernel;
use crate::check::kernel_name;
use crate::error::{Error, Result};
use crate::gemm::GemmProblem;
use crate::gpu::Gpu;
use crate::harness::{self, L2Mode, TimingConfig};
use crate::launch::{Arg, LaunchPlan};
use crate::results::{ResultRow, RowId, Stats};
use crate::DType;
use cudarc::driver::{DevicePtr, DevicePtrMut};

/// Elements of the copy experiment (f32): 128 MiB each way.
pub const COPY_N: usize = 32 << 20;
/// The GEMM experiment's M = N = K.
pub const GEMM_N: usize = 4096;
/// Register caps of the GEMM sweep (`None`: the JIT's own choice).
pub const REG_CAPS: [Option<u32>; 7] = [
    None,
    Some(96),
    Some(80),
    Some(64),
    Some(48),
    Some(40),
    Some(32),
];
/// Block sizes of `copy/scalar` (`copy/vec16` runs at its registry block, 256).
pub const COPY_BLOCKS: [u32; 4] = [32, 128, 256, 1024];
/// Resident blocks per SM the padding aims at (the driver's count is what is recorded).
pub const TARGET_BLOCKS: [u32; 6] = [1, 2, 4, 8, 16, 32];
/// Sampled elements of C checked against the float64 reference at each GEMM point.
const GEMM_SAMPLES: usize = 2048;

/// One point of the experiment.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct OccRow {
    /// `memory` or `compute`.
    pub experiment: String,
    /// `family/variant`.
    pub kernel: String,
    /// Entry point.
    pub symbol: String,
    /// Shape, as text.
    pub shape: String,
    /// `CU_JIT_MAX_REGISTERS` (`None`: not capped).
    pub reg_cap: Option<u32>,
    /// Registers per thread the JIT allocated.
    pub registers: u32,
    /// Local bytes per thread (spills): `CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES`.
    pub local_bytes: u32,
    /// Spill stores + loads, bytes, from the JIT's info log (`None` where it did not say).
    pub spill_bytes: Option<u32>,
    /// Threads per block.
    pub threads: u32,
    /// Dynamic shared bytes per block (the kernel's own + padding).
    pub dynamic_shared: usize,
    /// Of which padding the kernel does not touch.
    pub padding: usize,
    /// Resident blocks per SM (`cuOccupancyMaxActiveBlocksPerMultiprocessor`).
    pub blocks_per_sm: u32,
    /// Resident warps per SM.
    pub warps_per_sm: u32,
    /// Resident warps over the SM's maximum.
    pub occupancy: f64,
    /// GB/s (memory) or GFLOP/s (compute), from the median.
    pub throughput: f64,
    /// `GB/s` or `GFLOP/s`.
    pub unit: String,
    /// Timing.
    pub time: Stats,
    /// What the output was checked against.
    pub validated: String,
}

impl ResultRow for OccRow {
    fn id(&self) -> RowId {
        let mut tags = vec![
            format!("threads={}", self.threads),
            format!("pad={}", self.padding),
        ];
        if let Some(c) = self.reg_cap {
            tags.push(format!("maxreg={c}"));
        }
        RowId {
            kernel: self.kernel.clone(),
            dtype: "f32".into(),
            dims: Vec::new(),
            tags: [vec![self.shape.replace(' ', "")], tags].concat(),
        }
    }

    fn time(&self) -> Option<&Stats> {
        Some(&self.time)
    }
}

/// Spill stores + loads (bytes) in a JIT info log: the sum of every `N bytes spill stores` and
/// `N bytes spill loads`; `None` when the log names neither.
pub fn spills_in_log(log: &str) -> Option<u32> {
    let mut total = None;
    for kind in ["bytes spill stores", "bytes spill loads"] {
        let mut rest = log;
        while let Some(i) = rest.find(kind) {
            let n = rest[..i]
                .split(|c: char| !c.is_ascii_digit())
                .rfind(|w| !w.is_empty())
                .and_then(|w| w.parse::<u32>().ok());
            if let Some(n) = n {
                total = Some(total.unwrap_or(0) + n);
            }
            rest = &rest[i + kind.len()..];
        }
    }
    total
}

/// Padding (bytes, a multiple of 128) that leaves room for at most `target` blocks of `own`
/// dynamic + `static_shared` static shared bytes in `per_sm` bytes of shared memory per SM (1
/// KiB reserved per block): `None` when one such block would exceed `optin` bytes per block.
pub fn padding(
    per_sm: usize,
    optin: usize,
    target: u32,
    own: usize,
    static_shared: u32,
) -> Option<usize> {
    let per_block = per_sm / target.max(1) as usize;
    let used = own + static_shared as usize + 1024;
    let pad = per_block.checked_sub(used)? / 128 * 128;
    (own + pad + static_shared as usize <= optin).then_some(pad)
}

/// [`padding`] with `gpu`'s shared memory per SM and per-block opt-in limit.
pub fn padding_for(gpu: &Gpu, target: u32, own: usize, static_shared: u32) -> Option<usize> {
    let info = gpu.info();
    padding(
        info.shared_per_sm,
        info.shared_per_block_optin,
        target,
        own,
        static_shared,
    )
}

struct Point<'a> {
    jit: &'a JitKernel,
    threads: u32,
    own: usize,
    padding: usize,
}

impl Point<'_> {
    fn occupancy(&self, gpu: &Gpu) -> Result<(u32, u32, f64)> {
        let dynamic = self.own + self.padding;
        self.jit.allow_dynamic_shared(gpu, dynamic)?;
        let blocks = self.jit.max_active_blocks(self.threads, dynamic)?;
        if blocks == 0 {
            return Err(Error::Resource {
                kernel: self.jit.symbol.clone(),
                what: format!(
                    "no block of {} threads fits ({dynamic} dynamic shared bytes)",
                    self.threads
                ),
            });
        }
        let max_warps = (gpu.info().max_threads_per_sm / 32).max(1);
        let warps = blocks * self.threads.div_ceil(32);
        Ok((blocks, warps, warps as f64 / max_warps as f64))
    }
}

/// Timing of every point.
pub fn timing() -> TimingConfig {
    TimingConfig {
        warmup: 3,
        reps: 20,
        mode: L2Mode::Rotate,
    }
}

/// The row of point `p`: occupancy `occ`, timing `time` of `work` bytes or flops.
fn row(p: &Point<'_>, occ: (u32, u32, f64), time: Stats, work: f64) -> OccRow {
    OccRow {
        experiment: String::new(),
        kernel: String::new(),
        symbol: p.jit.symbol.clone(),
        shape: String::new(),
        reg_cap: p.jit.max_registers,
        registers: p.jit.registers,
        local_bytes: p.jit.local_bytes,
        spill_bytes: spills_in_log(&p.jit.info_log),
        threads: p.threads,
        dynamic_shared: p.own + p.padding,
        padding: p.padding,
        blocks_per_sm: occ.0,
        warps_per_sm: occ.1,
        occupancy: occ.2,
        throughput: work / (time.median_ms * 1e-3) / 1e9,
        unit: String::new(),
        time,
        validated: String::new(),
    }
}

/// The memory experiment (`copy/scalar` over [`COPY_BLOCKS`], `copy/vec16` at 256 threads,
/// each over [`TARGET_BLOCKS`]).
pub fn memory(gpu: &Gpu, seed: u64, progress: &mut dyn FnMut(&str)) -> Result<Vec<OccRow>> {
    let n = COPY_N;
    gpu.check_fits(2 * n * 4, "occupancy copy: src and dst")?;
    let mut rng = SmallRng::seed_from_u64(seed);
    let host = crate::elem::random_vec::<f32>(n, &mut rng);
    let src = gpu.upload(&host, "src")?;
    let mut dst = gpu.alloc::<f32>(n, "dst")?;
    let stream = gpu.stream().clone();
    let mut rows = Vec::new();
    for (kernel, blocks) in [
        (&v01_scalar::INFO, &COPY_BLOCKS[..]),
        (&v02_vec16::INFO, &[v02_vec16::INFO.block.0][..]),
    ] {
        let entry = kernel
            .entry(DType::F32)
            .ok_or_else(|| Error::UnknownKernel {
                family: "copy".into(),
                variant: kernel.name.into(),
                dtype: "f32",
            })?;
        let jit = JitKernel::load(gpu, entry.symbol, None)?;
        for &threads in blocks {
            let items = if kernel.name == v01_scalar::INFO.name {
                n as u64
            } else {
                v02_vec16::work_items(n as u64, 4)
            };
            let unpadded = Point {
                jit: &jit,
                threads,
                own: 0,
                padding: 0,
            }
            .occupancy(gpu)?;
            let mut seen = Vec::new();
            for &target in &TARGET_BLOCKS {
                if target > unpadded.0 {
                    continue;
                }
                let padding = if target == unpadded.0 {
                    0
                } else {
                    match padding_for(gpu, target, 0, jit.static_shared) {
                        Some(p) => p,
                        None => continue,
                    }
                };
                let p = Point {
                    jit: &jit,
                    threads,
                    own: 0,
                    padding,
                };
                let occ = p.occupancy(gpu)?;
                if seen.contains(&occ.0) {
                    continue;
                }
                seen.push(occ.0);
                progress(&format!(
                    "occupancy {} {threads} threads, {} blocks/SM",
                    kernel_name(kernel),
                    occ.0
                ));
                let grid = (items.div_ceil(threads as u64), 1, 1);
                let plan = |ps: u64, pd: u64| {
                    let mut plan = LaunchPlan::new(
                        kernel,
                        entry,
                        grid,
                        vec![Arg::Ptr(ps), Arg::Ptr(pd), Arg::U64(n as u64)],
                    );
                    plan.block = (threads, 1, 1);
                    plan.shared_bytes = padding;
                    plan
                };
                // SAFETY (both launches): both copy kernels are `(src, dst, n: u64)`; src and
                // dst hold n f32 (allocated above, 16-byte aligned as every cudarc allocation);
                // each reads its block size and the grid covers n elements (scalar) or its
                // work items (vec16); `occupancy` above allowed the padding; the stream guards
                // live until the launches are enqueued.
                let time = {
                    let (ps, _gs) = src.device_ptr(&stream);
                    let (pd, _gd) = dst.device_ptr_mut(&stream);
                    let plan = plan(ps, pd);
                    harness::time(gpu, &timing(), |_| unsafe { jit.launch(&plan, &stream) })?
                };
                gpu.fill(&mut dst, f32::NAN, "dst")?;
                {
                    let (ps, _gs) = src.device_ptr(&stream);
                    let (pd, _gd) = dst.device_ptr_mut(&stream);
                    unsafe { jit.launch(&plan(ps, pd), &stream) }?;
                }
                let got = gpu.download(&dst, "dst")?;
                if let Some(i) = (0..n).find(|&i| got[i].to_bits() != host[i].to_bits()) {
                    return Err(Error::Mismatch {
                        kernel: kernel_name(kernel),
                        shape: format!("n={n} threads={threads} pad={padding}"),
                        detail: format!("dst[{i}] = {} != src {}", got[i], host[i]),
                    });
                }
                rows.push(OccRow {
                    experiment: "memory".into(),
                    kernel: kernel_name(kernel),
                    shape: format!("n={n}"),
                    unit: "GB/s".into(),
                    validated: "bitwise = src".into(),
                    ..row(&p, occ, time, (2 * n * 4) as f64)
                });
            }
        }
    }
    Ok(rows)
}

/// The compute experiment: `gemm/tile_128x64` at 4096³ over [`REG_CAPS`], then at its own
/// registers with padding for 3, 2 and 1 blocks per SM, then capped at 64 registers and padded
/// back to the uncapped load's blocks per SM (fewer registers, same occupancy).
pub fn compute(gpu: &Gpu, seed: u64, progress: &mut dyn FnMut(&str)) -> Result<Vec<OccRow>> {
    let kernel = &v10_tile_128x64::INFO;
    let entry = kernel
        .entry(DType::F32)
        .ok_or_else(|| Error::UnknownKernel {
            family: "gemm".into(),
            variant: kernel.name.into(),
            dtype: "f32",
        })?;
    let p = GemmProblem::new(GEMM_N, GEMM_N, GEMM_N);
    p.check_shape()?;
    let (la, lb, lc) = p.lens()?;
    gpu.check_fits((la + lb + lc) * 4, "occupancy gemm: A, B, C")?;
    let mut rng = SmallRng::seed_from_u64(seed ^ 0x6765_6d6d);
    let ha = crate::elem::random_vec::<f32>(la, &mut rng);
    let hb = crate::elem::random_vec::<f32>(lb, &mut rng);
    // Sampled elements of C (the four corners included) and their float64 references.
    let mut samples: Vec<(usize, usize)> =
        vec![(0, 0), (0, p.n - 1), (p.m - 1, 0), (p.m - 1, p.n - 1)];
    samples.extend((4..GEMM_SAMPLES).map(|_| (rng.random_range(0..p.m), rng.random_range(0..p.n))));
    let want: Vec<(f64, f64)> = samples
        .iter()
        .map(|&(i, j)| {
            (0..p.k).fold((0.0, 0.0), |(r, s), l| {
                let t = ha[i * p.lda + l] as f64 * hb[l * p.ldb + j] as f64;
                (r + t, s + t.abs())
            })
        })
        .collect();
    let a = gpu.upload(&ha, "A")?;
    let b = gpu.upload(&hb, "B")?;
    let mut c = gpu.alloc::<f32>(lc, "C")?;
    let stream = gpu.stream().clone();
    let own = kernel.shared_bytes(DType::F32);
    let threads = kernel.block.0 * kernel.block.1 * kernel.block.2;
    let mut first: Option<Vec<f32>> = None;
    let mut rows = Vec::new();
    let mut points: Vec<(Option<u32>, Option<u32>)> = REG_CAPS.iter().map(|&c| (c, None)).collect();
    points.extend([
        (None, Some(3)),
        (None, Some(2)),
        (None, Some(1)),
        (Some(64), Some(0)),
    ]);
    let mut uncapped_blocks = 0;
    for (cap, target) in points {
        let jit = JitKernel::load(gpu, entry.symbol, cap)?;
        let padding = match target {
            None => 0,
            // Some(0): pad to the uncapped load's blocks per SM.
            Some(t) => {
                let t = if t == 0 { uncapped_blocks } else { t };
                match padding_for(gpu, t, own, jit.static_shared) {
                    Some(p) => p,
                    None => continue,
                }
            }
        };
        let pt = Point {
            jit: &jit,
            threads,
            own,
            padding,
        };
        let occ = pt.occupancy(gpu)?;
        if cap.is_none() && target.is_none() {
            uncapped_blocks = occ.0;
        }
        progress(&format!(
            "occupancy {} max registers {cap:?}: {} registers, {} blocks/SM",
            kernel_name(kernel),
            jit.registers,
            occ.0
        ));
        let plan = |abc: [u64; 3]| -> Result<LaunchPlan<'static>> {
            let mut plan = p.plan(kernel, abc)?;
            plan.shared_bytes = own + padding;
            Ok(plan)
        };
        let shape = p.shape();
        let check_args = |pa, pb, pc| {
            p.check(
                kernel,
                crate::check::BufArg::new("a", la, pa),
                crate::check::BufArg::new("b", lb, pb),
                crate::check::BufArg::new("c", lc, pc),
            )
        };
        // SAFETY (both launches): `check` proved A, B, C hold the shape's spans with the
        // alignment the kernel needs; `plan` is the kernel's own argument list and grid at its
        // registry block; `occupancy` allowed the dynamic shared bytes (the kernel's own
        // first, the padding after it, untouched); the guards live until the launches are
        // enqueued.
        let time = {
            let (pa, _ga) = a.device_ptr(&stream);
            let (pb, _gb) = b.device_ptr(&stream);
            let (pc, _gc) = c.device_ptr_mut(&stream);
            check_args(pa, pb, pc)?;
            let plan = plan([pa, pb, pc])?;
            harness::time(gpu, &timing(), |_| unsafe { jit.launch(&plan, &stream) })?
        };
        gpu.fill(&mut c, f32::NAN, "C")?;
        {
            let (pa, _ga) = a.device_ptr(&stream);
            let (pb, _gb) = b.device_ptr(&stream);
            let (pc, _gc) = c.device_ptr_mut(&stream);
            check_args(pa, pb, pc)?;
            unsafe { jit.launch(&plan([pa, pb, pc])?, &stream) }?;
        }
        let got = gpu.download(&c, "C")?;
        let mismatch = |detail: String| Error::Mismatch {
            kernel: format!(
                "{} (max registers {cap:?}, pad {padding})",
                kernel_name(kernel)
            ),
            shape: shape.clone(),
            detail,
        };
        if let Some(i) = got.iter().position(|v| !v.is_finite()) {
            return Err(mismatch(format!(
                "C[{i}] = {} (not written, or overflowed)",
                got[i]
            )));
        }
        for (&(i, j), &(r, s)) in samples.iter().zip(&want) {
            let g = got[i * p.ldc + j] as f64;
            let tol = p.element_tolerance(r, s);
            if (g - r).abs() > tol {
                return Err(mismatch(format!(
                    "C[{i}][{j}] = {g}, float64 {r}, bound {tol:.3e}"
                )));
            }
        }
        let validated = match &first {
            None => {
                first = Some(got);
                format!("{GEMM_SAMPLES} sampled elements vs float64")
            }
            Some(f) => {
                if let Some(i) = (0..lc).find(|&i| f[i].to_bits() != got[i].to_bits()) {
                    return Err(mismatch(format!(
                        "C[{i}] = {} differs from the uncapped load's {}",
                        got[i], f[i]
                    )));
                }
                format!("bitwise = uncapped; {GEMM_SAMPLES} sampled vs float64")
            }
        };
        rows.push(OccRow {
            experiment: "compute".into(),
            kernel: kernel_name(kernel),
            shape,
            unit: "GFLOP/s".into(),
            validated,
            ..row(&pt, occ, time, p.flops())
        });
    }
    Ok(rows)
}

/// The rows as a markdown table.
pub fn markdown(rows: &[OccRow]) -> String {
    let mut s = String::from(
        "| experiment | kernel | threads | max regs | regs | local B | spill B | dyn smem B | pad B | blocks/SM | warps/SM | occupancy | median ms | throughput | validated |\n| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n",
    );
    for r in rows {
        s += &format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.0} % | {:.4} | {:.0} {} | {} |\n",
            r.experiment,
            r.kernel,
            r.threads,
            r.reg_cap.map_or("-".into(), |c| c.to_string()),
            r.registers,
            r.local_bytes,
            r.spill_bytes.map_or("-".into(), |c| c.to_string()),
            r.dynamic_shared,
            r.padding,
            r.blocks_per_sm,
            r.warps_per_sm,
            100.0 * r.occupancy,
            r.time.median_ms,
            r.throughput,
            r.unit,
            r.validated
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padding_leaves_room_for_the_target_blocks() {
        use crate::report::occupancy::{limits, occupancy};
        let h100 = limits("sm_90").unwrap();
        let (per_sm, optin) = (h100.shared as usize, 227 * 1024);
        for (own, stat) in [(0usize, 0u32), (12 * 1024, 0), (0, 4096), (8000, 100)] {
            for target in [1u32, 2, 3, 4, 8, 16] {
                let pad = padding(per_sm, optin, target, own, stat).unwrap();
                assert_eq!(pad % 128, 0);
                let o = occupancy(&h100, 256, 8, (own + pad) as u32 + stat).unwrap();
                assert_eq!(
                    o.blocks,
                    target.min(8),
                    "own {own} static {stat} target {target}"
                );
            }
        }
        // One block of 200 KiB own shared memory: room for one, not for two.
        assert!(padding(per_sm, optin, 2, 200 * 1024, 0).is_none());
        assert_eq!(padding(per_sm, optin, 1, 200 * 1024, 0), Some(27 * 1024));
    }

    #[test]
    fn spills_are_read_from_the_jit_log() {
        let log = "ptxas info    : Compiling entry function 'k' for 'sm_90a'\n\
                   ptxas info    : Function properties for k\n    \
                   40 bytes stack frame, 36 bytes spill stores, 52 bytes spill loads\n\
                   ptxas info    : Used 32 registers";
        assert_eq!(spills_in_log(log), Some(88));
        assert_eq!(
            spills_in_log("0 bytes spill stores, 0 bytes spill loads"),
            Some(0)
        );
        assert_eq!(spills_in_log("ptxas info    : Used 8 registers"), None);
    }
}
