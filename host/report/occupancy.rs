//! Theoretical occupancy from a kernel's registers, block size and shared memory, per
//! architecture, the way CUDA's occupancy calculator computes it.
//!
//! Per-SM limits (CUDA C++ Programming Guide, "Technical Specifications per Compute
//! Capability"): 65536 32-bit registers on all four; resident warps 64 (sm_80, sm_90) or 48
//! (sm_86, sm_89); resident blocks 32 (sm_80, sm_90), 16 (sm_86) or 24 (sm_89); shared memory
//! per SM 164 KiB (sm_80), 100 KiB (sm_86, sm_89), 228 KiB (sm_90), of which the driver
//! reserves 1 KiB per resident block. Registers are allocated per warp in units of 256, from one
//! of the SM's four register-file sub-partitions (so a warp count that does not split evenly
//! wastes the remainder of each); shared memory in units of 128 bytes. The driver's own
//! calculator (`cuOccupancyMaxActiveBlocksPerMultiprocessor`) is compared with this model for
//! every kernel on the GPU (`tests/gpu_occupancy.rs`).

/// Per-SM limits of one architecture.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SmLimits {
    /// `sm_80` …
    pub arch: &'static str,
    /// Resident warps.
    pub warps: u32,
    /// Resident blocks.
    pub blocks: u32,
    /// 32-bit registers.
    pub registers: u32,
    /// Shared memory, bytes (including the per-block reservation).
    pub shared: u32,
    /// Bytes reserved per resident block.
    pub reserved_per_block: u32,
}

/// The architectures the crate builds for.
pub const ARCHS: [SmLimits; 4] = [
    SmLimits {
        arch: "sm_80",
        warps: 64,
        blocks: 32,
        registers: 65536,
        shared: 164 * 1024,
        reserved_per_block: 1024,
    },
    SmLimits {
        arch: "sm_86",
        warps: 48,
        blocks: 16,
        registers: 65536,
        shared: 100 * 1024,
        reserved_per_block: 1024,
    },
    SmLimits {
        arch: "sm_89",
        warps: 48,
        blocks: 24,
        registers: 65536,
        shared: 100 * 1024,
        reserved_per_block: 1024,
    },
    SmLimits {
        arch: "sm_90",
        warps: 64,
        blocks: 32,
        registers: 65536,
        shared: 228 * 1024,
        reserved_per_block: 1024,
    },
];

/// Register-file sub-partitions per SM (one per warp scheduler) on every architecture here.
pub const SUB_PARTITIONS: u32 = 4;

/// The limits of `arch` (`sm_90a` reads as `sm_90`).
pub fn limits(arch: &str) -> Option<SmLimits> {
    let base = arch.trim_end_matches('a');
    ARCHS.iter().copied().find(|l| l.arch == base)
}

/// What bounds the resident blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limiter {
    /// Resident warps.
    Warps,
    /// Resident blocks.
    Blocks,
    /// Registers.
    Registers,
    /// Shared memory.
    Shared,
}

impl Limiter {
    /// Name in the table.
    pub fn name(self) -> &'static str {
        match self {
            Limiter::Warps => "warps",
            Limiter::Blocks => "blocks",
            Limiter::Registers => "registers",
            Limiter::Shared => "shared memory",
        }
    }
}

/// Theoretical occupancy of one kernel on one architecture.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Occupancy {
    /// Resident blocks per SM.
    pub blocks: u32,
    /// Resident warps per SM.
    pub warps: u32,
    /// `warps / max warps`.
    pub fraction: f64,
    /// The tightest limit.
    pub limiter: Limiter,
}

/// Occupancy of a block of `threads` threads using `regs` registers per thread and `shared`
/// bytes of shared memory (static + dynamic). `None` when one block does not fit at all.
pub fn occupancy(l: &SmLimits, threads: u32, regs: u32, shared: u32) -> Option<Occupancy> {
    if threads == 0 || threads > 1024 || regs > 255 {
        return None;
    }
    let warps_per_block = threads.div_ceil(32);
    let by_warps = l.warps / warps_per_block;
    let by_regs = if regs == 0 {
        u32::MAX
    } else {
        // Registers live in the SM's four sub-partitions (one per scheduler): a warp's
        // registers come from one of them, so the warps that fit are counted per sub-partition
        // (CUDA's `cuda_occupancy.h` does the same). The hardware's per-block check assumes the
        // block's warps round up to a multiple of the sub-partitions.
        let per_warp = (regs * 32).div_ceil(256) * 256;
        if per_warp * warps_per_block.div_ceil(SUB_PARTITIONS) * SUB_PARTITIONS > l.registers {
            return None;
        }
        (l.registers / SUB_PARTITIONS / per_warp) * SUB_PARTITIONS / warps_per_block
    };
    let per_block_smem = shared.div_ceil(128) * 128 + l.reserved_per_block;
    let by_smem = l.shared / per_block_smem;
    let candidates = [
        (by_warps, Limiter::Warps),
        (l.blocks, Limiter::Blocks),
        (by_regs, Limiter::Registers),
        (by_smem, Limiter::Shared),
    ];
    let (blocks, limiter) = candidates
        .into_iter()
        .min_by_key(|&(b, _)| b)
        .unwrap_or((0, Limiter::Warps));
    (blocks > 0).then(|| Occupancy {
        blocks,
        warps: blocks * warps_per_block,
        fraction: f64::from(blocks * warps_per_block) / f64::from(l.warps),
        limiter,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calculator_cases() {
        let a100 = limits("sm_80").unwrap();
        let h100 = limits("sm_90a").unwrap();
        let ada = limits("sm_89").unwrap();
        // 256 threads × 32 regs: 8 warps × 1024 regs; 64 warps by registers, 8 blocks by warps.
        let o = occupancy(&a100, 256, 32, 0).unwrap();
        assert_eq!((o.blocks, o.warps, o.fraction), (8, 64, 1.0));
        // 128 regs: 4096 regs per warp → 16 warps → 2 blocks of 8 warps.
        let o = occupancy(&a100, 256, 128, 0).unwrap();
        assert_eq!((o.blocks, o.limiter), (2, Limiter::Registers));
        assert_eq!(o.fraction, 0.25);
        // 33 regs round up to 1280 per warp: 12 warps per 16384-register sub-partition, 48
        // warps → 6 blocks of 8.
        assert_eq!(occupancy(&a100, 256, 33, 0).unwrap().blocks, 6);
        // 96 regs: 3072 per warp, 5 per sub-partition (not 65536 / 3072 = 21 per SM): 20 warps,
        // 20 blocks of one warp, 5 of four.
        let o = occupancy(&h100, 32, 96, 0).unwrap();
        assert_eq!((o.blocks, o.warps, o.limiter), (20, 20, Limiter::Registers));
        assert_eq!(occupancy(&h100, 128, 96, 0).unwrap().blocks, 5);
        // 255 regs (8192 per warp, 2 per sub-partition): 1024 threads need 32 × 8192 registers,
        // more than the SM has: does not fit; 256 threads → 1 block.
        assert!(occupancy(&h100, 1024, 255, 0).is_none());
        assert_eq!(occupancy(&h100, 256, 255, 0).unwrap().blocks, 1);
        // Shared memory: 48 KiB + 1 KiB reserved per block: 3 on sm_80 (164 KiB), 4 on sm_90,
        // 2 on sm_89.
        let s = 48 * 1024;
        assert_eq!(occupancy(&a100, 128, 32, s).unwrap().blocks, 3);
        assert_eq!(occupancy(&h100, 128, 32, s).unwrap().blocks, 4);
        let o = occupancy(&ada, 128, 32, s).unwrap();
        assert_eq!((o.blocks, o.limiter), (2, Limiter::Shared));
        // Small blocks hit the block limit: 32 threads, 32 blocks on sm_90, 24 on sm_89.
        let o = occupancy(&h100, 32, 16, 0).unwrap();
        assert_eq!(
            (o.blocks, o.limiter, o.fraction),
            (32, Limiter::Blocks, 0.5)
        );
        assert_eq!(occupancy(&ada, 32, 16, 0).unwrap().blocks, 24);
        // 1024 threads on sm_86: 48 warps / 32 → one block, 32 of 48 warps.
        let o = occupancy(&limits("sm_86").unwrap(), 1024, 32, 0).unwrap();
        assert_eq!((o.blocks, o.warps), (1, 32));
        // Does not fit.
        assert!(occupancy(&ada, 128, 32, 100 * 1024).is_none());
        assert!(occupancy(&a100, 2048, 32, 0).is_none());
        assert!(limits("sm_70").is_none());
    }
}
