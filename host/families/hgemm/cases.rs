//! The validation cases: on the GPU (every variant the device runs, then the selected one,
//! at shapes off every tile, with pitches, β, bias and ReLU, and at [`Scale::Full`] large
//! shapes), in the simulator (the `mma.sync` kernels at small shapes), and the family's
//! [`crate::families::Family`] implementation.

use rustile_kernels::registry::DType;

use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::families::{Case, Scale};
use crate::gpu::Gpu;
use crate::ptx::Flavour;

use super::{validate_sim, validate_with, BLayout, Checked, Options, Problem, Variant, WsTile};

/// Validation cases: shapes that are not tile multiples, K = 0 and 1, pitches, β, bias, ReLU.
pub fn validation_cases(quick: bool) -> Vec<(Problem, bool)> {
    let mut v = Vec::new();
    let shapes: &[(usize, usize, usize)] = &[
        (1, 1, 1),
        (17, 33, 65),
        (127, 129, 95),
        (200, 300, 64),
        (256, 256, 256),
        (64, 520, 1),
        (300, 200, 0),
        (129, 257, 136),
        // M, N, K off every tile but pitches that TMA can describe: the wgmma path's tails.
        (129, 136, 200),
        (333, 264, 72),
        (1, 8, 8),
        (300, 520, 1000),
    ];
    for ty in [DType::F16, DType::Bf16] {
        for &b in &[BLayout::RowMajor, BLayout::Transposed] {
            for &(m, n, k) in shapes {
                for out in [ty, DType::F32] {
                    let mut p = Problem::new(ty, m, n, k).with_b(b);
                    p.out = out;
                    v.push((p, false));
                }
            }
            // Epilogue: α, β, bias, ReLU, padded pitches (multiples of 8: the TMA path too).
            let mut p = Problem::new(ty, 133, 270, 72).with_b(b);
            p.alpha = 0.5;
            p.beta = -1.25;
            p.relu = true;
            p.lda = p.lda.next_multiple_of(8) + 8;
            p.ldb = p.ldb.next_multiple_of(8) + 16;
            p.ldc += 3;
            v.push((p, true));
            let mut p = Problem::new(ty, 96, 136, 40).with_b(b);
            p.out = DType::F32;
            p.beta = 1.0;
            v.push((p, true));
            // The padded path: every pitch odd and wider than its rows, β ≠ 0 (C copied in and
            // back), bias, ReLU, both outputs; and A alone unaligned (B read in place).
            for out in [ty, DType::F32] {
                let mut p = Problem::new(ty, 301, 203, 97).with_b(b);
                p.out = out;
                (p.alpha, p.beta, p.relu) = (0.75, 0.5, true);
                (p.lda, p.ldb, p.ldc) = (p.lda + 4, p.ldb + 2, p.ldc + 4);
                v.push((p, true));
            }
            // The wide tile's TMA-store epilogue: β = 0, no bias, α and ReLU, a pitch wider
            // than N (a multiple of 8), M and N off the tile.
            let mut p = Problem::new(ty, 200, 392, 136).with_b(b);
            (p.alpha, p.relu, p.ldc) = (-0.75, true, 400);
            v.push((p, false));
            let mut p = Problem::new(ty, 140, 264, 77).with_b(b);
            p.ldb = p.ldb.next_multiple_of(8);
            v.push((p, false));
        }
    }
    if !quick {
        for ty in [DType::F16, DType::Bf16] {
            for (m, n, k, b) in [
                (4093, 4093, 4093, BLayout::RowMajor),
                (4096, 4096, 512, BLayout::RowMajor),
                (4096, 4096, 512, BLayout::Transposed),
                (8192, 1024, 8192, BLayout::RowMajor),
                (1000, 1000, 1000, BLayout::Transposed),
                (2050, 1030, 4104, BLayout::RowMajor),
                (8192, 8192, 8192, BLayout::Transposed),
                (16384, 16384, 1024, BLayout::RowMajor),
                // The padded path's bench shapes (tight pitches, all odd).
                (4095, 4095, 4095, BLayout::Transposed),
                (3001, 3003, 2999, BLayout::RowMajor),
                (3001, 3003, 2999, BLayout::Transposed),
            ] {
                v.push((Problem::new(ty, m, n, k).with_b(b), false));
            }
        }
    }
    v
}

/// The variants `gpu` can run (`wgmma_ws` needs sm_90a).
pub fn variants_for(gpu: &Gpu) -> Vec<Variant> {
    Variant::ALL
        .into_iter()
        .filter(|v| !v.needs_sm90a() || gpu.flavour() == Flavour::Sm90a)
        .collect()
}

/// One GPU validation run: `(case index, problem, bias, variant, wgmma_ws tile)`, `None`
/// being the selected variant and the model's tile.
pub type GpuRun = (usize, Problem, bool, Option<Variant>, Option<WsTile>);

/// The `wgmma_ws` tiles every small case also runs on sm_90a, where [`WsTile::check`] allows
/// them: the wide tile (the clustered pair's under `RUSTILE_HGEMM_PAIR=1`, where a pair's second
/// tile may lie below C), the narrow widths whole, and cut into segments (even and uneven cuts).
pub const TILE_CASES: [WsTile; 5] = [
    WsTile::WIDE,
    WsTile::whole(128, 128),
    WsTile { rows: 128, width: 64, cut: 3 },
    WsTile::whole(64, 256),
    WsTile { rows: 64, width: 128, cut: 2 },
];

/// Every GPU run of [`validation_cases`]. Small cases run every variant the device has (the
/// aligned-only ones through the padded path where the pitches need it) and, on sm_90a, the
/// [`TILE_CASES`] of `wgmma_ws`; large ones the selected one and, on sm_90a, `mma_pipeline`;
/// large unaligned ones also `mma` (slow, but it must be right). The quick set adds the
/// skinny, short-K and small-square shapes the model cuts or narrows: the selection, the
/// [`TILE_CASES`] and the model's own pick.
pub fn gpu_runs(gpu: &Gpu, quick: bool) -> Vec<GpuRun> {
    let mut runs = Vec::new();
    let sm90a = gpu.flavour() == Flavour::Sm90a;
    let sms = gpu.info().sm_count;
    let mut cases = validation_cases(quick);
    // The extra shapes run the selection and the tiles only.
    let first_extra = cases.len();
    for (m, n, k) in [
        (16, 2048, 4096),
        (64, 2048, 3000),
        (3000, 32, 2048),
        (512, 512, 512),
        // Two or three 128 × 128 tiles per block of the persistent grid, a short K with a tail:
        // the ping-pong tile's alternation between its consumers.
        (4100, 1100, 200),
        // 22 × 11 = 242 wide tiles: one whole wave of 132 and a partial one of 110, each
        // tile's 11 k-tiles (K = 700, a tail) — what the stream-K tail (RUSTILE_HGEMM_SK_TAIL=1)
        // cuts, its 16-bit output through the TMA-store epilogue, its f32 one with β and bias.
        (2700, 2600, 700),
    ] {
        for b in [BLayout::RowMajor, BLayout::Transposed] {
            cases.push((Problem::new(DType::F16, m, n, k).with_b(b), false));
            let mut p = Problem::new(DType::Bf16, m, n, k).with_b(b);
            (p.out, p.beta) = (DType::F32, 0.5);
            cases.push((p, true));
        }
    }
    for (i, (p, bias)) in cases.into_iter().enumerate() {
        let big = p.flops() > 1e10;
        let skinny = i >= first_extra;
        let mut variants: Vec<Option<Variant>> = vec![None];
        if !big && !skinny {
            variants.extend(variants_for(gpu).into_iter().map(Some));
        } else {
            if sm90a {
                variants.push(Some(Variant::MmaPipeline));
            }
            if !p.tma_ok([0, 0]) {
                variants.push(Some(Variant::Mma));
            }
        }
        runs.extend(variants.into_iter().map(|v| (i, p, bias, v, None)));
        if sm90a && !big {
            let mut tiles = TILE_CASES.to_vec();
            if skinny {
                tiles.push(super::ws_tile(&p, sms));
                tiles.dedup();
            }
            for t in tiles.into_iter().filter(|t| t.check(&p, sms).is_ok()) {
                runs.push((i, p, bias, Some(Variant::WgmmaWs), Some(t)));
            }
        }
    }
    runs
}

/// One GPU run of [`gpu_runs`]: [`validate_with`] (padding on; `tile` for `wgmma_ws`), which must have
/// taken the padded path where an aligned-only kernel (`mma_pipeline`, `wgmma_ws`, chosen or
/// selected) ran on pitches that are not multiples of 8 elements, and then padded C too where
/// its pitch is odd. `Ok(None)` is never returned now; the refusal without padding is checked
/// by the GPU tests.
pub fn validate_run(
    gpu: &Gpu,
    variant: Option<Variant>,
    tile: Option<WsTile>,
    p: &Problem,
    bias: bool,
    seed: u64,
) -> Result<Option<Checked>> {
    let opts = Options {
        tile,
        ..Options::variant(variant)
    };
    let r = validate_with(gpu, &opts, p, bias, seed)?;
    let aligned_only = matches!(r.variant, Variant::WgmmaWs | Variant::MmaPipeline);
    let unaligned = |ld: usize| !(ld * 2).is_multiple_of(16);
    let missed = [
        ("A", unaligned(p.lda), r.padded.a),
        ("B", unaligned(p.ldb), r.padded.b),
        ("C", !p.ldc.is_multiple_of(2), r.padded.c),
    ]
    .into_iter()
    .filter(|&(_, want, got)| want && got.is_none())
    .map(|(name, ..)| name)
    .collect::<Vec<_>>();
    if variant.is_none() && r.variant == Variant::Mma && (unaligned(p.lda) || unaligned(p.ldb)) {
        return Err(Error::Mismatch {
            kernel: "hgemm/auto".into(),
            shape: describe(p, bias),
            detail: "the selection fell back to mma: the padded path could not be prepared \
                     (run `--variant wgmma_ws` or `mma_pipeline` to see why)"
                .into(),
        });
    }
    if aligned_only && !missed.is_empty() {
        return Err(Error::Mismatch {
            kernel: format!("hgemm/{}", r.variant.name()),
            shape: describe(p, bias),
            detail: format!("ran without padding {} (padded: {:?})", missed.join(", "), r.padded),
        });
    }
    Ok(Some(r))
}

/// The simulator's cases (`mma` and `mma_pipeline`; the simulator models no `wgmma`): shapes
/// off every tile of both kernels (64×64×32 and 128×128×32), K = 0 and 1, a K that wraps the
/// `cp.async` ring, and an epilogue case with α, β, bias, ReLU and padded pitches.
pub fn sim_cases() -> Vec<(Problem, bool)> {
    let mut v = Vec::new();
    for ty in [DType::F16, DType::Bf16] {
        for b in [BLayout::RowMajor, BLayout::Transposed] {
            for (m, n, k) in [
                (1, 8, 8),
                (70, 136, 40),
                (129, 72, 96),
                (33, 8, 0),
                (17, 16, 1),
                // Eight k-tiles: the ring wraps twice.
                (40, 130, 232),
            ] {
                for out in [ty, DType::F32] {
                    let mut p = Problem::new(ty, m, n, k).with_b(b);
                    p.out = out;
                    v.push((p, false));
                }
            }
            let mut p = Problem::new(ty, 67, 144, 56).with_b(b);
            p.alpha = -0.75;
            p.beta = 0.5;
            p.relu = true;
            p.lda = 72;
            p.ldb += 8;
            p.ldc = 151;
            v.push((p, true));
        }
    }
    v
}

/// A case's shape as text: `MxNxK B→OUT`, then whatever differs from a plain product.
fn describe(p: &Problem, bias: bool) -> String {
    let mut s = format!("{} {}→{}", p.shape(), p.b.tag(), p.out.name());
    if p.alpha != 1.0 || p.beta != 0.0 {
        s += &format!(" α={} β={}", p.alpha, p.beta);
    }
    if bias {
        s += " bias";
    }
    if p.relu {
        s += " relu";
    }
    let tight = Problem::new(p.ty, p.m, p.n, p.k).with_b(p.b);
    if (p.lda, p.ldb, p.ldc) != (tight.lda, tight.ldb, tight.ldc) {
        s += &format!(" ld {}/{}/{}", p.lda, p.ldb, p.ldc);
    }
    s
}

/// The tensor-core GEMM as a [`crate::families::Family`].
pub struct Hgemm;

impl crate::families::Family for Hgemm {
    fn name(&self) -> &'static str {
        "hgemm"
    }

    fn about(&self) -> &'static str {
        "tensor-core matrix product C = act(α·A·B + β·C + bias), f16/bf16 in, f32 accumulation"
    }

    fn run_npy(
        &self,
        backend: &Backend,
        req: &crate::families::run::RunRequest,
    ) -> Result<crate::families::run::Tensor> {
        super::npy_run::run_npy(backend, req)
    }

    fn cases(&self, backend: &Backend, scale: Scale) -> Vec<Case> {
        match backend {
            Backend::Gpu(gpu) => gpu_runs(gpu, scale == Scale::Quick)
                .into_iter()
                .map(|(_, p, bias, v, tile)| {
                    let name = match tile {
                        Some(t) => t.label(),
                        None => v.map_or("auto", Variant::name).to_owned(),
                    };
                    Case::new(
                        format!("hgemm/{name}"),
                        p.ty,
                        describe(&p, bias),
                        move |backend: &Backend, seed: u64| match backend {
                            Backend::Gpu(gpu) => {
                                validate_run(gpu, v, tile, &p, bias, seed).map(|_| ())
                            }
                            Backend::Simulator(_) => Err(not_simulated(v)),
                        },
                    )
                })
                .collect(),
            Backend::Simulator(_) => sim_cases()
                .into_iter()
                .flat_map(|(p, bias)| {
                    [Variant::Mma, Variant::MmaPipeline]
                        .into_iter()
                        // mma_pipeline is aligned-only; its refusal is tested in tests/hgemm.rs.
                        .filter(move |&v| v == Variant::Mma || p.tma_ok([0, 0]))
                        .map(move |v| {
                            Case::new(
                                format!("hgemm/{}", v.name()),
                                p.ty,
                                describe(&p, bias),
                                move |backend: &Backend, seed: u64| match backend {
                                    Backend::Simulator(sim) => {
                                        validate_sim(sim, v, &p, bias, seed).map(|_| ())
                                    }
                                    Backend::Gpu(_) => {
                                        Err(Error::Usage("a simulator case given a GPU".into()))
                                    }
                                },
                            )
                        })
                })
                .collect(),
        }
    }

    fn fuzz(
        &self,
        backend: &Backend,
        rng: &mut dyn rand::RngCore,
    ) -> Option<crate::families::fuzz::Fuzzed> {
        super::fuzz::case(backend, rng)
    }
}

fn not_simulated(v: Option<Variant>) -> Error {
    Error::Unsupported {
        kernel: format!("hgemm/{}", v.map_or("auto", Variant::name)),
        what: "a GPU case given the simulator".into(),
    }
}
