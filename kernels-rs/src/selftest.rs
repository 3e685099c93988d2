//! Self-test kernels for the tensor-core primitives: one warp moves A and B into shared memory
//! with `cp.async`, loads fragments with `ldmatrix` (plain and `.trans`) and multiplies with
//! `mma.sync.m16n8k16`. The host runs them on the GPU and in the simulator and compares both
//! with a float64 reference, which proves the simulator's fragment layouts are the hardware's.

use crate::gpu::{self, Elem, MmaKind, Vec16};

/// Shared bytes: A (16×16 b16), Bᵀ (8×16 b16), B (16×8 b16).
pub const SHARED_BYTES: usize = 512 + 256 + 256;
/// Threads: one warp.
pub const THREADS: u32 = 32;

/// `d[0..128] = A·B + C` through `Bᵀ` and plain `ldmatrix.x2`, `d[128..256]` through `B` and
/// `ldmatrix.x2.trans`, `d[256..384]` through `Bᵀ` and two plain `ldmatrix.x1`, `d[384..512]`
/// through `B` and two `ldmatrix.x1.trans`: four routes to the same product. `a`: 16×16 row-major; `bt`: 8×16 row-major (B column-major); `b`:
/// 16×8 row-major; `c`: 16×8 f32 row-major; all 16-byte aligned.
#[inline(always)]
unsafe fn tensor_core_selftest(
    kind: MmaKind,
    a: *const u16,
    bt: *const u16,
    b: *const u16,
    c: *const f32,
    d: *mut f32,
) {
    let lane = gpu::thread_idx_x();
    let smem = gpu::dynamic_shared_base();
    let (sa, sbt, sb) = (smem, smem + 512, smem + 768);
    // 32 chunks of A, 16 of Bᵀ, 16 of B: 16 bytes each.
    gpu::cp_async_16(sa + 16 * lane, (a as *const Vec16).add(lane as usize));
    if lane < 16 {
        gpu::cp_async_16(sbt + 16 * lane, (bt as *const Vec16).add(lane as usize));
    } else {
        gpu::cp_async_16(
            sb + 16 * (lane - 16),
            (b as *const Vec16).add((lane - 16) as usize),
        );
    }
    gpu::cp_async_commit();
    gpu::cp_async_wait::<0>();
    gpu::sync_threads();

    let (j, r) = (lane / 8, lane % 8);
    // A: matrix j = rows 8·(j % 2).., columns 8·(j / 2)..
    let a_frag = gpu::ldmatrix::<4, false>(sa + ((r + 8 * (j % 2)) * 16 + 8 * (j / 2)) * 2);
    // Bᵀ rows are B's columns: matrix j = Bᵀ[0..8][8j..8j+8].
    let bt_frag = gpu::ldmatrix::<2, false>(sbt + (r * 16 + 8 * (j % 2)) * 2);
    // B row-major, transposed on load: matrix j = B[8j..8j+8][0..8].
    let b_frag = gpu::ldmatrix::<2, true>(sb + ((8 * (j % 2) + r) * 8) * 2);
    // The same two 8 × 8 matrices one at a time (`.x1` reads the addresses of lanes 0..8).
    let bt_x1 = [0, 1].map(|h| gpu::ldmatrix::<1, false>(sbt + (r * 16 + 8 * h) * 2)[0]);
    let b_x1 = [0, 1].map(|h| gpu::ldmatrix::<1, true>(sb + ((8 * h + r) * 8) * 2)[0]);

    let (g, t) = (lane / 4, lane % 4);
    let c_at = |row: u32, col: u32| f32::ld_global_nc(c.add((row * 8 + col) as usize));
    let c_frag = [
        c_at(g, 2 * t),
        c_at(g, 2 * t + 1),
        c_at(g + 8, 2 * t),
        c_at(g + 8, 2 * t + 1),
    ];
    let d1 = gpu::mma_m16n8k16(kind, a_frag, [bt_frag[0], bt_frag[1]], c_frag);
    let d2 = gpu::mma_m16n8k16(kind, a_frag, [b_frag[0], b_frag[1]], c_frag);
    let d3 = gpu::mma_m16n8k16(kind, a_frag, bt_x1, c_frag);
    let d4 = gpu::mma_m16n8k16(kind, a_frag, b_x1, c_frag);
    for (half, dd) in [(0u32, d1), (128, d2), (256, d3), (384, d4)] {
        let at = |row: u32, col: u32| d.add((half + row * 8 + col) as usize);
        f32::st_global(at(g, 2 * t), dd[0]);
        f32::st_global(at(g, 2 * t + 1), dd[1]);
        f32::st_global(at(g + 8, 2 * t), dd[2]);
        f32::st_global(at(g + 8, 2 * t + 1), dd[3]);
    }
}

/// [`tensor_core_selftest`] for input type `I`.
///
/// # Safety
/// As for [`tensor_core_selftest`].
#[inline(always)]
unsafe fn selftest_tc<I: crate::hgemm::TcIn>(
    a: *const u16,
    bt: *const u16,
    b: *const u16,
    c: *const f32,
    d: *mut f32,
) {
    tensor_core_selftest(I::KIND, a, bt, b, c, d)
}

crate::entry_points! {
    pub const SYMBOLS;
    fn selftest_tc(a: *const u16, bt: *const u16, b: *const u16, c: *const f32, d: *mut f32);
    selftest_tc_f16 => (F16, F32, Any) [I = crate::hgemm::F16];
    selftest_tc_bf16 => (Bf16, F32, Any) [I = crate::hgemm::Bf16];
}

/// Registry record.
pub const INFO: crate::registry::KernelInfo = crate::registry::KernelInfo {
    family: crate::registry::Family::Selftest,
    name: "tc",
    role: crate::registry::Role::SelfTest,
    block: (THREADS, 1, 1),
    shared_bytes_f16: SHARED_BYTES,
    symbols: SYMBOLS,
    about: "cp.async, ldmatrix (plain, .trans, x1, x2) and mma.sync against float64",
    ..crate::registry::KernelInfo::BASE
};

/// The Hopper primitives' self-test (sm_90a only): one warpgroup; thread 0 initializes an
/// `mbarrier`, announces the bytes and issues two TMA tile loads (A: 64 × 64, Bᵀ: 128 × 64,
/// f16, 128B swizzle); every thread waits on the barrier's phase 0; the warpgroup runs four
/// `wgmma.m64n128k16` steps through shared-memory descriptors (K-major A and B) and stores the
/// 64 × 128 f32 result row-major to `d` from registers, and again to `d_tma` through shared
/// memory and two TMA stores of 64 × 64 (the staging tile reused after
/// `cp.async.bulk.wait_group.read`). On small-integer inputs the host checks both exactly.
pub mod hopper {
    /// Threads: one warpgroup.
    pub const THREADS: u32 = 128;
    /// Dynamic shared bytes: A (8 KiB), Bᵀ (16 KiB), the barrier, 1 KiB of alignment slack.
    pub const SHARED_BYTES: usize = 8192 + 16384 + 8 + 1024;
    /// The TMA boxes `(columns, rows)`: A and Bᵀ (f16, 128B swizzle), D (f32, no swizzle).
    pub const BOXES: [(u32, u32); 3] = [(64, 64), (64, 128), (64, 64)];
    /// Entry point (sm_90a PTX only).
    pub const SYMBOL: &str = "selftest_hopper_wgmma_f16";

    crate::entry_points! {
        pub const SYMBOLS;
        sm90a fn hopper_body(maps: *const u8, d: *mut f32, _d_tma: *mut f32);
        selftest_hopper_wgmma_f16 => (F16, F32, Any) [];
    }

    /// Registry record.
    pub const INFO: crate::registry::KernelInfo = crate::registry::KernelInfo {
        family: crate::registry::Family::Selftest,
        name: "hopper",
        role: crate::registry::Role::SelfTest,
        needs: crate::registry::Needs::HOPPER_TMA,
        block: (THREADS, 1, 1),
        shared_bytes_f16: SHARED_BYTES,
        symbols: SYMBOLS,
        about: "mbarrier, TMA loads and stores, wgmma m64n128k16 against exact small integers",
        ..crate::registry::KernelInfo::BASE
    };

    /// Entry point: `maps` holds A's tensor map at byte 0, Bᵀ's at byte 128 and `d_tma`'s at
    /// byte 256 (global memory).
    ///
    /// # Safety
    /// One block of `THREADS` threads with `SHARED_BYTES` of shared memory; `d` holds 64 × 128
    /// floats; the third map describes 64 × 128 row-major floats.
    #[cfg(all(target_arch = "nvptx64", rustile_sm90a))]
    #[inline(always)]
    pub unsafe fn hopper_body(maps: *const u8, d: *mut f32, _d_tma: *mut f32) {
        use crate::gpu::{self, hopper, wgmma, Elem};
        let tid = gpu::thread_idx_x();
        let base = (gpu::dynamic_shared_base() + 1023) & !1023;
        let (sa, sb, bar) = (base, base + 8192, base + 8192 + 16384);
        if tid == 0 {
            hopper::mbarrier_init(bar, 1);
            hopper::fence_barrier_init();
        }
        gpu::sync_threads();
        if tid == 0 {
            hopper::mbarrier_arrive_expect_tx(bar, 8192 + 16384);
            hopper::tma_load_2d(sa, maps, 0, 0, bar);
            hopper::tma_load_2d(sb, maps.add(128), 0, 0, bar);
        }
        hopper::mbarrier_wait(bar, 0);
        let mut acc = [0f32; 64];
        hopper::wgmma_fence();
        let mut kk = 0;
        while kk < 4 {
            let da = hopper::matrix_descriptor(sa + 32 * kk, 16, 1024, hopper::Swizzle::B128);
            let db = hopper::matrix_descriptor(sb + 32 * kk, 16, 1024, hopper::Swizzle::B128);
            wgmma::wgmma_m64n128k16_f16::<0>(&mut acc, da, db, (kk > 0) as u32);
            kk += 1;
        }
        hopper::wgmma_commit();
        wgmma::wgmma_wait_64::<0>(&mut acc);
        let (warp, lane) = (tid / 32, tid % 32);
        let row = 16 * warp + lane / 4;
        let col0 = 2 * (lane % 4);
        crate::unroll!(16, j, {
            let col = col0 + 8 * j as u32;
            let at = |r: u32, c: u32| d.add((r * 128 + c) as usize);
            f32::st_global(at(row, col), acc[4 * j]);
            f32::st_global(at(row, col + 1), acc[4 * j + 1]);
            f32::st_global(at(row + 8, col), acc[4 * j + 2]);
            f32::st_global(at(row + 8, col + 1), acc[4 * j + 3]);
        });
        // The same result through TMA stores, in two 64 × 64 halves staged in the A/B tiles
        // (the wgmma reads of them are complete: `wgmma_wait` above).
        let stage = sa;
        crate::unroll!(2, h, {
            crate::unroll!(8, jj, {
                let c = col0 + 8 * jj as u32;
                let at = |r: u32, cc: u32| stage + 4 * (r * 64 + cc);
                f32::st_shared(at(row, c), acc[4 * (8 * h + jj)]);
                f32::st_shared(at(row, c + 1), acc[4 * (8 * h + jj) + 1]);
                f32::st_shared(at(row + 8, c), acc[4 * (8 * h + jj) + 2]);
                f32::st_shared(at(row + 8, c + 1), acc[4 * (8 * h + jj) + 3]);
            });
            hopper::fence_proxy_async_shared();
            gpu::sync_threads();
            if tid == 0 {
                hopper::tma_store_2d(maps.add(256), 64 * h as i32, 0, stage);
                hopper::bulk_commit_group();
                hopper::bulk_wait_group_read::<0>();
            }
            // Nobody rewrites the staging tile before the store has read it.
            gpu::sync_threads();
        });
        if tid == 0 {
            hopper::bulk_wait_group::<0>();
        }
    }
}

/// The family.
pub const FAMILY: crate::registry::Family = crate::registry::Family {
    name: "selftest",
    about: "self-tests of the tensor-core primitives",
};

/// Every entry point of the family, one registry record each.
pub const RECORDS: &[&crate::registry::KernelInfo] = &[
    &INFO,
    &hopper::INFO,
];
