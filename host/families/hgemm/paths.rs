//! Which way the wide tile's launch goes: its epilogue through TMA stores
//! (`staged_epilogue`) and its last wave as a stream-K tail (`stream_k_tail_fits`) — the
//! conditions `prepare` checks before it builds C's tensor map and the workspace.

use rustile_kernels::gpu::sched::{persistent_grid, StreamK, TileGrid};
use rustile_kernels::hgemm::v03_wgmma_ws;
use rustile_kernels::registry::DType;

use super::{Problem, WsTile};

/// Whether the TMA-store epilogue may run: on by default since session 22, which ran its
/// predicated form on a GPU (bit-identical to the direct stores, 0.994–1.003× cuBLAS at 4096³
/// against 0.979–0.990 for the direct stores on an H100, `notes/hgemm.md`);
/// `RUSTILE_HGEMM_TMA_STORE=0` turns it off (the direct stores, for comparison).
pub fn tma_store() -> bool {
    std::env::var("RUSTILE_HGEMM_TMA_STORE").map_or(true, |v| v != "0")
}

/// Whether `p` on `tile` can leave through the TMA-store epilogue (where [`tma_store`] is on),
/// C in place at `c`: the whole 128 × 256 tile (the records with the staging: alone or in
/// clustered pairs), a 16-bit output, β = 0 and no bias (the epilogue reads nothing), C 16-byte
/// aligned with a pitch of a multiple of 16 bytes (a tensor map's rule).
pub(super) fn staged_epilogue(p: &Problem, tile: WsTile, c: u64, bias: bool) -> bool {
    tile.cut == 1
        && tile
            .info()
            .is_ok_and(|k| [v03_wgmma_ws::INFO.name, v03_wgmma_ws::INFO_PAIR.name].contains(&k.name))
        && p.out != DType::F32
        && p.beta == 0.0
        && !bias
        && c.is_multiple_of(16)
        && (p.ldc * p.out.bytes()).is_multiple_of(16)
}

/// Whether `p` (as the kernel reads it) on `tile` takes the stream-K tail ([`sk_tail`](super::sk_tail) on):
/// the whole 128 × 256 tile, K > 0, more tiles than the persistent grid's blocks with a partial
/// last wave whose k-iterations give every block at least four, and `tiles · k_tiles` below
/// 2³² (the kernel's 32-bit walk). A 16-bit output must also leave through the TMA-store
/// epilogue (`c_staged`: [`staged_epilogue`] for C in place), the only one those kernels have.
/// Returns the tiles done whole before the tail (`StreamK::tail`'s `dp_tiles`).
pub(super) fn stream_k_tail_fits(p: &Problem, tile: WsTile, sms: u32, c_staged: bool) -> Option<u32> {
    let wide = tile == WsTile::WIDE && tile.info().is_ok_and(|k| k.name == v03_wgmma_ws::INFO.name);
    if !wide || p.k == 0 || (p.out != DType::F32 && !c_staged) {
        return None;
    }
    let tiles = TileGrid::new(p.m as u32, p.n as u32, 128, 256, 1).tiles();
    let k_tiles = p.k.div_ceil(v03_wgmma_ws::BK as usize) as u64;
    let blocks = persistent_grid(tiles, sms);
    let rest = u64::from(tiles % blocks);
    let fits = tiles > blocks
        && rest * k_tiles >= 4 * u64::from(blocks)
        && u64::from(tiles) * k_tiles < 1 << 32;
    fits.then(|| StreamK::tail(tiles, k_tiles as u32, blocks).dp_tiles)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_k_tail_takes_the_wide_tile_past_whole_waves_with_a_long_enough_tail() {
        let f16 = |m, n, k| Problem::new(DType::F16, m, n, k);
        let wide = WsTile::WIDE;
        // 4096³: 512 tiles, 3 whole waves of 132, then 116 tiles' 64 k-tiles shared out.
        assert_eq!(stream_k_tail_fits(&f16(4096, 4096, 4096), wide, 132, true), Some(396));
        // 8192³: 2048 tiles, 15 whole waves.
        assert_eq!(stream_k_tail_fits(&f16(8192, 8192, 8192), wide, 132, true), Some(1980));
        // The validation case: 22 × 11 tiles, one whole wave.
        assert_eq!(stream_k_tail_fits(&f16(2700, 2600, 700), wide, 132, true), Some(132));
        // An f32 output needs no staging (its direct stores read β·C and the bias).
        let mut f32_out = f16(4096, 4096, 4096);
        f32_out.out = DType::F32;
        assert_eq!(stream_k_tail_fits(&f32_out, wide, 132, false), Some(396));
        // Not: a 16-bit output that cannot leave through the TMA stores, K = 0, one wave or
        // less, whole waves only, a tail under four k-tiles per block, another tile.
        assert_eq!(stream_k_tail_fits(&f16(4096, 4096, 4096), wide, 132, false), None);
        assert_eq!(stream_k_tail_fits(&f16(4096, 4096, 0), wide, 132, true), None);
        assert_eq!(stream_k_tail_fits(&f16(1024, 1024, 1024), wide, 132, true), None);
        assert_eq!(stream_k_tail_fits(&f16(3072, 2816, 4096), wide, 132, true), None);
        assert_eq!(stream_k_tail_fits(&f16(133 * 128, 256, 64), wide, 132, true), None);
        assert_eq!(stream_k_tail_fits(&f16(133 * 128, 256, 4 * 64 * 132), wide, 132, true), Some(132));
        let n128 = WsTile::whole(128, 128);
        assert_eq!(stream_k_tail_fits(&f16(4096, 4096, 4096), n128, 132, true), None);
        // The kernel's walk is 32-bit: tiles · k_tiles below 2³².
        assert_eq!(stream_k_tail_fits(&f16(1 << 16, 1 << 16, 1 << 21), wide, 132, true), None);
    }

    /// Which products the TMA-store epilogue takes (a check by record address missed every
    /// one once: each use of a `const` record is its own value).
    #[test]
    fn staged_epilogue_takes_the_wide_tile_with_a_16_bit_output_and_nothing_to_read() {
        let p = Problem::new(DType::F16, 1000, 1096, 520);
        let wide = WsTile::WIDE;
        assert!(staged_epilogue(&p, wide, 0x1000, false));
        let mut relu = p;
        (relu.alpha, relu.relu, relu.ldc) = (-0.75, true, 1104);
        assert!(staged_epilogue(&relu, wide, 0x1000, false));
        // Not: a bias, β, an f32 output, a pitch or address TMA cannot take, other tiles.
        assert!(!staged_epilogue(&p, wide, 0x1000, true));
        let mut beta = p;
        beta.beta = 0.5;
        assert!(!staged_epilogue(&beta, wide, 0x1000, false));
        let mut f32_out = p;
        f32_out.out = DType::F32;
        assert!(!staged_epilogue(&f32_out, wide, 0x1000, false));
        let mut odd = p;
        odd.ldc = 1100;
        assert!(!staged_epilogue(&odd, wide, 0x1000, false));
        assert!(!staged_epilogue(&p, wide, 0x1008, false));
        assert!(!staged_epilogue(&p, WsTile::whole(128, 128), 0x1000, false));
        assert!(!staged_epilogue(&p, WsTile::whole(64, 256), 0x1000, false));
    }
}
