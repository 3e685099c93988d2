//! Hopper (sm_90a) primitives: `mbarrier`, TMA tile loads, `wgmma` and register reallocation.
//!
//! These exist only in the sm_90a PTX flavour (`--cfg rustile_sm90a`) and have no simulator
//! model: the kernels that use them are validated on the GPU against cuBLAS and a float64
//! reference (`tests/gpu.rs`). Every shared-memory operand is a 32-bit shared-window address,
//! as in the rest of [`gpu`](super).
//!
//! Facts these rely on (PTX ISA 8.0, verified on the H200, `notes/architecture.md`):
//! - a TMA load reads its tensor map from global memory (a by-value `.param` tensor map cannot
//!   be passed from Rust today), and signals completion as transaction bytes on an `mbarrier`;
//! - `wgmma` reads A and B from shared memory through 64-bit matrix descriptors; after ordinary
//!   shared stores that `wgmma` or TMA will read, a `fence.proxy.async` is needed;
//! - `wgmma` is asynchronous: its accumulator registers must not be touched between the issue
//!   and the `wgmma.wait_group` that retires it. The generated `wgmma` functions
//!   ([`super::wgmma`]) pass the accumulators as `inout` operands to both, so the compiler keeps
//!   them in place (ptxas otherwise serializes the `wgmma`s and warns).

// --- mbarrier ---

/// `mbarrier.init.shared::cta.b64`: a barrier at `bar` (8-byte aligned) expecting `count`
/// arrivals per phase.
///
/// # Safety
/// `bar` is 8 bytes of this block's shared memory that nothing else uses; one thread initializes
/// it, and a [`fence_barrier_init`] plus a block barrier precede its first use.
#[inline(always)]
pub unsafe fn mbarrier_init(bar: u32, count: u32) {
    core::arch::asm!(
        "mbarrier.init.shared::cta.b64 [{b}], {c};",
        b = in(reg32) bar, c = in(reg32) count,
        options(nostack, preserves_flags)
    );
}

/// Makes initialized barriers visible to the async proxy (TMA) and the rest of the cluster.
#[inline(always)]
pub fn fence_barrier_init() {
    // SAFETY: a fence; no operands.
    unsafe {
        core::arch::asm!(
            "fence.mbarrier_init.release.cluster;",
            options(nostack, preserves_flags)
        )
    }
}

/// `mbarrier.arrive.expect_tx`: one arrival that also announces `bytes` of transactions (TMA
/// loads) the current phase must see before it completes.
///
/// # Safety
/// `bar` is an initialized barrier.
#[inline(always)]
pub unsafe fn mbarrier_arrive_expect_tx(bar: u32, bytes: u32) {
    core::arch::asm!(
        "mbarrier.arrive.expect_tx.shared::cta.b64 _, [{b}], {n};",
        b = in(reg32) bar, n = in(reg32) bytes,
        options(nostack, preserves_flags)
    );
}

/// `mbarrier.arrive`: one arrival.
///
/// # Safety
/// `bar` is an initialized barrier.
#[inline(always)]
pub unsafe fn mbarrier_arrive(bar: u32) {
    core::arch::asm!(
        "mbarrier.arrive.shared::cta.b64 _, [{b}];",
        b = in(reg32) bar,
        options(nostack, preserves_flags)
    );
}

/// Waits until the phase of parity `parity` of `bar` has completed (`mbarrier.try_wait.parity`
/// in a loop). A fresh barrier is in phase 0, so waiting for parity 1 returns at once: the
/// producer's first pass over an "empty" ring does not block.
///
/// # Safety
/// `bar` is an initialized barrier.
#[inline(always)]
pub unsafe fn mbarrier_wait(bar: u32, parity: u32) {
    loop {
        let done: u32;
        core::arch::asm!(
            "{{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [{b}], {ph}; selp.u32 {d}, 1, 0, p; }}",
            b = in(reg32) bar, ph = in(reg32) parity, d = out(reg32) done,
            options(nostack, preserves_flags)
        );
        if done != 0 {
            break;
        }
    }
}

// --- Clusters (a pair of blocks sharing operands through TMA multicast) ---

/// `%cluster_ctarank`: this block's rank in its cluster (0 without a cluster launch).
#[inline(always)]
pub fn cluster_ctarank() -> u32 {
    let r: u32;
    // SAFETY: reads a special register.
    unsafe {
        core::arch::asm!("mov.u32 {r}, %cluster_ctarank;", r = out(reg32) r,
            options(pure, nomem, nostack, preserves_flags))
    }
    r
}

/// `%clusterid.x`: this block's cluster along x.
#[inline(always)]
pub fn cluster_id_x() -> u32 {
    let r: u32;
    // SAFETY: reads a special register.
    unsafe {
        core::arch::asm!("mov.u32 {r}, %clusterid.x;", r = out(reg32) r,
            options(pure, nomem, nostack, preserves_flags))
    }
    r
}

/// `%nclusterid.x`: clusters in the launch along x.
#[inline(always)]
pub fn cluster_count_x() -> u32 {
    let r: u32;
    // SAFETY: reads a special register.
    unsafe {
        core::arch::asm!("mov.u32 {r}, %nclusterid.x;", r = out(reg32) r,
            options(pure, nomem, nostack, preserves_flags))
    }
    r
}

/// Every thread of the cluster arrives (release) and waits (acquire): `barrier.cluster`, the
/// non-`.aligned` form (threads may reach it from different branches). Every non-exited
/// thread of every block of the cluster must call it the same number of times.
#[inline(always)]
pub fn cluster_sync() {
    // SAFETY: a barrier; not `nomem`, it orders memory.
    unsafe {
        core::arch::asm!(
            "barrier.cluster.arrive.release;",
            "barrier.cluster.wait.acquire;",
            options(nostack, preserves_flags)
        )
    }
}

/// `mapa.shared::cluster`: the address of this block's shared-window address `addr` in the
/// shared memory of block `rank` of the cluster (a `shared::cluster` address).
#[inline(always)]
pub fn map_shared_rank(addr: u32, rank: u32) -> u32 {
    let r: u32;
    // SAFETY: address arithmetic, no access.
    unsafe {
        core::arch::asm!("mapa.shared::cluster.u32 {r}, {a}, {k};",
            r = out(reg32) r, a = in(reg32) addr, k = in(reg32) rank,
            options(pure, nomem, nostack, preserves_flags))
    }
    r
}

/// One arrival on the barrier at `shared::cluster` address `bar` (this block's or another
/// block's of the cluster, from [`map_shared_rank`]), with the default `.release.cta`
/// semantics, as CUTLASS's cluster barriers arrive: a consumer giving a stage back to the other
/// block's producer has retired its `wgmma` reads of the stage (`wgmma.wait_group`), and the
/// producer's writes are TMA's; `.release.cluster` would cost a `MEMBAR.ALL.GPU` per arrival
/// (it waits for the epilogue's stores) and the producer's `.acquire.cluster` an L1
/// invalidation per wait (ptxas 13.0, sm_90a).
///
/// # Safety
/// `bar` is an initialized barrier of a block of the cluster that has not exited.
#[inline(always)]
pub unsafe fn mbarrier_arrive_cluster(bar: u32) {
    core::arch::asm!(
        "mbarrier.arrive.shared::cluster.b64 _, [{b}];",
        b = in(reg32) bar,
        options(nostack, preserves_flags)
    );
}

/// [`tma_load_2d`] multicast: the box lands at `dst` in the shared memory of every block of the
/// cluster whose rank is set in `mask`, and completes the transaction bytes of the barrier at
/// `bar`'s offset in each of them.
///
/// # Safety
/// As for [`tma_load_2d`], in every destination block: the slot free, the barrier initialized
/// (and made visible to the cluster) and its phase expecting the bytes.
#[inline(always)]
pub unsafe fn tma_load_2d_multicast(dst: u32, map: *const u8, x: i32, y: i32, bar: u32, mask: u16) {
    core::arch::asm!(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [{d}], [{m}, {{{x}, {y}}}], [{b}], {k};",
        d = in(reg32) dst, m = in(reg64) map, x = in(reg32) x, y = in(reg32) y, b = in(reg32) bar,
        k = in(reg16) mask,
        options(nostack, preserves_flags)
    );
}

// --- Named barriers ---

/// `barrier.sync id, threads`: waits at named barrier `id` (1..16; 0 is the block barrier)
/// until `threads` (a multiple of 32) have arrived, counting this warp. With
/// [`named_barrier_arrive`] it orders two warpgroups without stalling the arriving one
/// (FlashAttention-3's ping-pong of the consumer warpgroups).
#[inline(always)]
pub fn named_barrier_sync(id: u32, threads: u32) {
    // SAFETY: a barrier has no memory-safety preconditions; not `nomem`, it orders memory.
    unsafe {
        core::arch::asm!("barrier.sync {i}, {n};", i = in(reg32) id, n = in(reg32) threads,
            options(nostack, preserves_flags))
    }
}

/// `barrier.arrive id, threads`: counts this warp at named barrier `id` without waiting.
#[inline(always)]
pub fn named_barrier_arrive(id: u32, threads: u32) {
    // SAFETY: as for [`named_barrier_sync`].
    unsafe {
        core::arch::asm!("barrier.arrive {i}, {n};", i = in(reg32) id, n = in(reg32) threads,
            options(nostack, preserves_flags))
    }
}

// --- TMA ---

/// `cp.async.bulk.tensor.2d` global → shared: loads the box at coordinates `(x, y)` (x the
/// innermost dimension, in elements) of the tensor map at `map` into `dst`, completing `bar`'s
/// transaction bytes. Out-of-range elements are filled with zeros.
///
/// # Safety
/// `map` points to a valid 64-byte-aligned `CUtensorMap` in global memory; `dst` is shared
/// memory of the box's size, aligned as the map's swizzle requires (1024 bytes for 128B); `bar`
/// an initialized barrier whose phase expects these bytes.
#[inline(always)]
pub unsafe fn tma_load_2d(dst: u32, map: *const u8, x: i32, y: i32, bar: u32) {
    core::arch::asm!(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{d}], [{m}, {{{x}, {y}}}], [{b}];",
        d = in(reg32) dst, m = in(reg64) map, x = in(reg32) x, y = in(reg32) y, b = in(reg32) bar,
        options(nostack, preserves_flags)
    );
}

/// `cp.async.bulk.tensor.4d` global → shared: as [`tma_load_2d`] for a rank-4 tensor map, box
/// at coordinates `(x, y, z, w)` (x innermost). Attention reads `(head_dim, seq, heads, batch)`
/// tensors with arbitrary strides this way; rows past the sequence are zeros.
///
/// # Safety
/// As for [`tma_load_2d`].
#[inline(always)]
pub unsafe fn tma_load_4d(dst: u32, map: *const u8, [x, y, z, w]: [i32; 4], bar: u32) {
    core::arch::asm!(
        "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{d}], [{m}, {{{x}, {y}, {z}, {w}}}], [{b}];",
        d = in(reg32) dst, m = in(reg64) map, x = in(reg32) x, y = in(reg32) y, z = in(reg32) z,
        w = in(reg32) w, b = in(reg32) bar,
        options(nostack, preserves_flags)
    );
}

/// `cp.async.bulk.tensor.3d` global → shared: as [`tma_load_2d`] for a rank-3 tensor map, box
/// at coordinates `(x, y, z)` (x innermost). The convolution reads its `(C, R·S, K)` weights
/// this way: one box is 64 channels of one filter tap for a block of output channels, with the
/// channel and output-channel tails zero-filled.
///
/// # Safety
/// As for [`tma_load_2d`].
#[inline(always)]
pub unsafe fn tma_load_3d(dst: u32, map: *const u8, [x, y, z]: [i32; 3], bar: u32) {
    core::arch::asm!(
        "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{d}], [{m}, {{{x}, {y}, {z}}}], [{b}];",
        d = in(reg32) dst, m = in(reg64) map, x = in(reg32) x, y = in(reg32) y, z = in(reg32) z,
        b = in(reg32) bar,
        options(nostack, preserves_flags)
    );
}

/// `cp.async.bulk.tensor.4d` global → shared in **im2col** mode: from an NHWC tensor map made
/// by `cuTensorMapEncodeIm2col`, loads the map's pixels-per-column consecutive pixels (walking
/// its bounding box along W, then H, then N, with its element strides) starting at input
/// coordinates `(c, w, h, n)`, each shifted by the filter-tap offsets `(off_w, off_h)`, with
/// the map's channels per pixel from channel `c` on. Pixels in the padding and channels past
/// C arrive as zeros.
///
/// # Safety
/// As for [`tma_load_2d`], with an im2col tensor map.
#[inline(always)]
pub unsafe fn tma_load_im2col_4d(
    dst: u32,
    map: *const u8,
    [c, w, h, n]: [i32; 4],
    [off_w, off_h]: [u16; 2],
    bar: u32,
) {
    core::arch::asm!(
        "cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes [{d}], [{m}, {{{c}, {w}, {h}, {n}}}], [{b}], {{{ow}, {oh}}};",
        d = in(reg32) dst, m = in(reg64) map, c = in(reg32) c, w = in(reg32) w, h = in(reg32) h,
        n = in(reg32) n, b = in(reg32) bar, ow = in(reg16) off_w, oh = in(reg16) off_h,
        options(nostack, preserves_flags)
    );
}

/// `cp.async.bulk.tensor.2d` shared → global: stores `src` as the box at coordinates `(x, y)`
/// of the tensor map at `map`; elements of the box outside the tensor are not written. Part of
/// the thread's current bulk group: [`bulk_commit_group`], then [`bulk_wait_group_read`] before
/// `src` is written again.
///
/// # Safety
/// `map` points to a valid 64-byte-aligned `CUtensorMap` in global memory; `src` is shared
/// memory of the box's size, 128-byte aligned, whose ordinary writes every writer has fenced
/// with [`fence_proxy_async_shared`] and a barrier since.
#[inline(always)]
pub unsafe fn tma_store_2d(map: *const u8, x: i32, y: i32, src: u32) {
    core::arch::asm!(
        "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [{m}, {{{x}, {y}}}], [{s}];",
        m = in(reg64) map, x = in(reg32) x, y = in(reg32) y, s = in(reg32) src,
        options(nostack, preserves_flags)
    );
}

/// [`tma_store_2d`] and [`bulk_commit_group`] issued only where `issue` is true, as one asm
/// block whose instructions are predicated. The warp stays on one path: written as
/// `if leader { store; commit }`, LLVM may jump-thread that branch into the next
/// `if leader { wait }`, duplicating the code between them for the leader and for the rest of
/// its warp — which then runs it twice, diverged (the hang of session 20's first run).
///
/// # Safety
/// As [`tma_store_2d`] for the threads where `issue` is true.
#[inline(always)]
pub unsafe fn tma_store_2d_commit_if(issue: bool, map: *const u8, x: i32, y: i32, src: u32) {
    core::arch::asm!(
        "{{ .reg .pred p; setp.ne.u32 p, {i}, 0;",
        "@p cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [{m}, {{{x}, {y}}}], [{s}];",
        "@p cp.async.bulk.commit_group; }}",
        i = in(reg32) issue as u32, m = in(reg64) map, x = in(reg32) x, y = in(reg32) y,
        s = in(reg32) src,
        options(nostack, preserves_flags)
    );
}

/// [`bulk_wait_group_read`] where `wait` is true, predicated in one asm block (see
/// [`tma_store_2d_commit_if`]).
#[inline(always)]
pub fn bulk_wait_group_read_if<const N: u32>(wait: bool) {
    // SAFETY: waits only.
    unsafe {
        core::arch::asm!(
            "{{ .reg .pred p; setp.ne.u32 p, {w}, 0; @p cp.async.bulk.wait_group.read {n}; }}",
            w = in(reg32) wait as u32,
            n = const N,
            options(nostack, preserves_flags)
        )
    }
}

/// `cp.async.bulk.commit_group`: closes this thread's bulk group (its TMA stores so far).
#[inline(always)]
pub fn bulk_commit_group() {
    // SAFETY: no operands; groups only this thread's bulk operations.
    unsafe {
        core::arch::asm!(
            "cp.async.bulk.commit_group;",
            options(nostack, preserves_flags)
        )
    }
}

/// `cp.async.bulk.wait_group.read N`: waits until at most `N` of this thread's bulk groups
/// still read their shared source (the source may then be overwritten).
#[inline(always)]
pub fn bulk_wait_group_read<const N: u32>() {
    // SAFETY: waits only; orders this thread's later shared-memory writes after the reads.
    unsafe {
        core::arch::asm!(
            "cp.async.bulk.wait_group.read {n};",
            n = const N,
            options(nostack, preserves_flags)
        )
    }
}

/// `cp.async.bulk.wait_group N`: waits until at most `N` of this thread's bulk groups are
/// pending at all (their global writes done).
#[inline(always)]
pub fn bulk_wait_group<const N: u32>() {
    // SAFETY: waits only.
    unsafe {
        core::arch::asm!(
            "cp.async.bulk.wait_group {n};",
            n = const N,
            options(nostack, preserves_flags)
        )
    }
}

/// `prefetch.tensormap`: brings a tensor map into the cache before its first use.
///
/// # Safety
/// `map` points to a tensor map in global memory.
#[inline(always)]
pub unsafe fn prefetch_tensormap(map: *const u8) {
    core::arch::asm!(
        "prefetch.tensormap [{m}];",
        m = in(reg64) map,
        options(nostack, preserves_flags)
    );
}

// --- wgmma ---

/// Layout of a `wgmma` shared-memory operand (the descriptor's bits 62–63).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Swizzle {
    /// 128-byte swizzle: rows of 128 bytes, the pattern repeats every 8 rows (1024 bytes).
    B128 = 1,
}

/// A `wgmma` matrix descriptor (PTX ISA "Matrix Descriptor Format"): start address, leading and
/// stride byte offsets (all in units of 16 bytes) and the swizzle. For a K-major tile with
/// 128-byte rows and 128B swizzle, `sbo` is 1024 (eight rows) and `lbo` is unused (16).
/// Stepping along K inside the 128-byte row adds `bytes >> 4` to the start address: the
/// hardware applies the swizzle to the absolute address, so the tile must be 1024-byte aligned.
#[inline(always)]
pub fn matrix_descriptor(addr: u32, lbo: u32, sbo: u32, swizzle: Swizzle) -> u64 {
    (((addr & 0x3_FFFF) >> 4) as u64)
        | ((((lbo & 0x3_FFFF) >> 4) as u64) << 16)
        | ((((sbo & 0x3_FFFF) >> 4) as u64) << 32)
        | ((swizzle as u64) << 62)
}

/// `wgmma.fence`: orders register accesses before the next `wgmma` of this warpgroup.
#[inline(always)]
pub fn wgmma_fence() {
    // SAFETY: a fence; warpgroup-collective, no operands.
    unsafe {
        core::arch::asm!(
            "wgmma.fence.sync.aligned;",
            options(nostack, preserves_flags)
        )
    }
}

/// `wgmma.commit_group`: closes the group of `wgmma`s issued since the last commit.
#[inline(always)]
pub fn wgmma_commit() {
    // SAFETY: warpgroup-collective, no operands.
    unsafe {
        core::arch::asm!(
            "wgmma.commit_group.sync.aligned;",
            options(nostack, preserves_flags)
        )
    }
}

/// `fence.proxy.async.shared::cta`: makes this thread's ordinary shared-memory writes visible
/// to the async proxy (TMA stores, `wgmma` operand reads).
#[inline(always)]
pub fn fence_proxy_async_shared() {
    // SAFETY: a fence; no operands.
    unsafe {
        core::arch::asm!(
            "fence.proxy.async.shared::cta;",
            options(nostack, preserves_flags)
        )
    }
}

// --- Register reallocation ---

/// `setmaxnreg.dec`: this warpgroup gives registers back, down to `N` per thread.
#[inline(always)]
pub fn setmaxnreg_dec<const N: u32>() {
    // SAFETY: warpgroup-collective; the kernel's register use after this point fits in N.
    unsafe {
        core::arch::asm!(
            "setmaxnreg.dec.sync.aligned.u32 {n};",
            n = const N,
            options(nostack, preserves_flags)
        )
    }
}

/// `setmaxnreg.inc`: this warpgroup takes registers, up to `N` per thread (blocks until the
/// pool has them).
#[inline(always)]
pub fn setmaxnreg_inc<const N: u32>() {
    // SAFETY: warpgroup-collective.
    unsafe {
        core::arch::asm!(
            "setmaxnreg.inc.sync.aligned.u32 {n};",
            n = const N,
            options(nostack, preserves_flags)
        )
    }
}

/// Index of this thread's warpgroup (`%tid.x / 128`) made warp-uniform for the compiler.
#[inline(always)]
pub fn warpgroup_index() -> u32 {
    let tid = super::thread_idx_x();
    let w: u32;
    // SAFETY: a register shuffle of a value every lane of the warp shares; makes the result
    // provably uniform, so branches on it do not split warps.
    unsafe {
        core::arch::asm!(
            "shfl.sync.idx.b32 {w}, {v}, 0, 31, -1;",
            w = out(reg32) w, v = in(reg32) tid / 128,
            options(pure, nomem, nostack, preserves_flags)
        );
    }
    w
}

// --- Flags between blocks (stream-K) ---

/// `ld.acquire.gpu.global.u32`: reads a flag another block releases; the reads after it see
/// what that block wrote before its release.
///
/// # Safety
/// `p` is a valid, aligned `u32` in global memory.
#[inline(always)]
pub unsafe fn ld_acquire_gpu(p: *const u32) -> u32 {
    let v: u32;
    core::arch::asm!(
        "ld.acquire.gpu.global.u32 {v}, [{p}];",
        v = out(reg32) v, p = in(reg64) p,
        options(nostack, preserves_flags)
    );
    v
}

/// `st.release.gpu.global.u32`: publishes a flag; every write this thread made (and, after a
/// barrier, its block's: release is cumulative) is visible to a block that acquires it.
///
/// # Safety
/// `p` is a valid, aligned `u32` in global memory.
#[inline(always)]
pub unsafe fn st_release_gpu(p: *mut u32, v: u32) {
    core::arch::asm!(
        "st.release.gpu.global.u32 [{p}], {v};",
        p = in(reg64) p, v = in(reg32) v,
        options(nostack, preserves_flags)
    );
}

/// `st.relaxed.gpu.global.u32`: resets a flag that no other thread reads until the next launch.
///
/// # Safety
/// `p` is a valid, aligned `u32` in global memory.
#[inline(always)]
pub unsafe fn st_relaxed_gpu(p: *mut u32, v: u32) {
    core::arch::asm!(
        "st.relaxed.gpu.global.u32 [{p}], {v};",
        p = in(reg64) p, v = in(reg32) v,
        options(nostack, preserves_flags)
    );
}

/// `fence.acq_rel.gpu`: orders this thread's earlier memory operations (and, cumulatively, those
/// its block barrier made visible to it) before its later ones, at GPU scope.
#[inline(always)]
pub fn fence_acq_rel_gpu() {
    // SAFETY: a fence; no operands.
    unsafe { core::arch::asm!("fence.acq_rel.gpu;", options(nostack, preserves_flags)) }
}

/// Stores four f32 at L2 (`st.global.cg.v4.f32`, bypassing L1): a partial sum another block
/// reads in this launch.
///
/// # Safety
/// `p` 16-byte aligned, 16 writable bytes of global memory.
#[inline(always)]
pub unsafe fn st_global_cg_f32x4(p: *mut f32, v: [f32; 4]) {
    core::arch::asm!(
        "st.global.cg.v4.f32 [{p}], {{{a}, {b}, {c}, {d}}};",
        p = in(reg64) p, a = in(reg32) v[0], b = in(reg32) v[1], c = in(reg32) v[2], d = in(reg32) v[3],
        options(nostack, preserves_flags)
    );
}

/// Loads four f32 from L2 (`ld.global.cg.v4.f32`, not L1, which is not coherent): a partial
/// sum another block wrote in this launch (after [`ld_acquire_gpu`] of its flag).
///
/// # Safety
/// `p` 16-byte aligned, 16 readable bytes of global memory.
#[inline(always)]
pub unsafe fn ld_global_cg_f32x4(p: *const f32) -> [f32; 4] {
    let (a, b, c, d): (f32, f32, f32, f32);
    core::arch::asm!(
        "ld.global.cg.v4.f32 {{{a}, {b}, {c}, {d}}}, [{p}];",
        a = out(reg32) a, b = out(reg32) b, c = out(reg32) c, d = out(reg32) d,
        p = in(reg64) p,
        options(nostack, preserves_flags)
    );
    [a, b, c, d]
}
