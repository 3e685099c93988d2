//! The vectorised memory kernels in the simulator: `copy/vec16_any` at lengths that are not
//! vector multiples and at every src/dst element offset (same and different misalignment),
//! `transpose/pairs` (f16, bf16) at odd shapes and odd base offsets, each with fresh random
//! input, poisoned output (and poisoned guard elements around it), bit-exact comparison; their
//! coalescing and bank conflicts; and the dispatchers' choices.

use rand::rngs::SmallRng;
use rand::SeedableRng;
use rustile::backend::{Backend, Buf};
use rustile::copy::CopyProblem;
use rustile::elem::random_vec;
use rustile::half::{bf16, f16};
use rustile::sim::Simulator;
use rustile::transpose::TransposeProblem;
use rustile::{DType, DeviceElem, KernelInfo, Problem};
use rustile_kernels::registry::{find, Family};

/// Guard elements poisoned before and after the output view.
const GUARD: usize = 9;

fn seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

fn bits<T: DeviceElem>(v: &[T]) -> &[u8] {
    bytemuck::cast_slice(v)
}

/// Runs `kernel` on `problem` with `src` at element offset `src_off` of its allocation and
/// `dst` at `dst_off` (after `GUARD` poisoned elements), then checks the output bit for bit
/// against the reference and the guards (and the allocation's slack) still poisoned.
fn run_at_offsets<T: DeviceElem>(
    kernel: &KernelInfo,
    problem: &Problem,
    src_off: usize,
    dst_off: usize,
    rng: &mut SmallRng,
) {
    let sim = Simulator::default();
    let (src_len, dst_len) = problem.lens().unwrap();
    let mut host_src: Vec<T> = random_vec(src_off + src_len, rng);
    host_src[..src_off].fill(T::POISON);
    let src_all = sim.alloc_uninit::<T>(src_off + src_len, "src").unwrap();
    sim.write(&src_all, &host_src).unwrap();
    let dst_total = GUARD + dst_off + dst_len + GUARD;
    let dst_all = sim.alloc_uninit::<T>(dst_total, "dst").unwrap();
    sim.write(&dst_all, &vec![T::POISON; dst_total]).unwrap();
    let src = Buf::Sim(src_all.view(src_off, src_len).unwrap());
    let mut dst = Buf::Sim(dst_all.view(GUARD + dst_off, dst_len).unwrap());
    let backend = Backend::Simulator(sim);
    let what = format!(
        "{}/{} {} {} src+{src_off} dst+{dst_off}",
        kernel.family.name(),
        kernel.name,
        T::DTYPE.name(),
        problem.shape()
    );
    problem
        .launch(&backend, kernel, &src, &mut dst)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let got = backend.download(&Buf::Sim(dst_all), "dst").unwrap();
    let want = problem.reference(&host_src[src_off..]);
    let out = &got[GUARD + dst_off..GUARD + dst_off + dst_len];
    if bits(out) != bits(&want) {
        let first = (0..dst_len)
            .find(|&i| bits(&out[i..=i]) != bits(&want[i..=i]))
            .unwrap();
        panic!(
            "{what}: element {first} has bits {:?}, expected {:?}",
            bits(&out[first..=first]),
            bits(&want[first..=first])
        );
    }
    let poison = [T::POISON];
    for (i, g) in got.iter().enumerate() {
        let inside = (GUARD + dst_off..GUARD + dst_off + dst_len).contains(&i);
        assert!(
            inside || bits(std::slice::from_ref(g)) == bits(&poison),
            "{what}: wrote element {i} of the allocation, outside the output"
        );
    }
}

fn kernel(family: Family, name: &str) -> &'static KernelInfo {
    find(family, name).unwrap()
}

#[test]
fn vec16_any_copies_any_length_at_any_offsets() {
    let k = kernel(Family::Copy, "vec16_any");
    let seed = seed();
    let mut rng = SmallRng::seed_from_u64(seed);
    let lengths = [
        1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 31, 33, 255, 1000, 4097, 65_539,
    ];
    for n in lengths {
        let p = Problem::Copy(CopyProblem { n });
        // f32: offsets 0..4 elements (every misalignment mod 16); f16: 0..8.
        for (so, d) in [(0, 0), (1, 1), (3, 3), (0, 1), (1, 0), (2, 3), (3, 1)] {
            run_at_offsets::<f32>(k, &p, so, d, &mut rng);
        }
        for (so, d) in [(0, 0), (1, 1), (5, 5), (7, 7), (0, 3), (6, 1), (2, 4)] {
            run_at_offsets::<f16>(k, &p, so, d, &mut rng);
        }
    }
    eprintln!("vec16_any: seed {seed}");
}

#[test]
fn vec16_any_copies_a_million_and_one_elements_at_odd_offsets() {
    let k = kernel(Family::Copy, "vec16_any");
    let mut rng = SmallRng::seed_from_u64(seed());
    let p = Problem::Copy(CopyProblem { n: 1_000_001 });
    run_at_offsets::<f32>(k, &p, 1, 1, &mut rng);
    run_at_offsets::<f16>(k, &p, 3, 6, &mut rng);
}

#[test]
fn pairs_transposes_odd_shapes_and_offsets_f16_and_bf16() {
    let k = kernel(Family::Transpose, "pairs");
    let seed = seed();
    let mut rng = SmallRng::seed_from_u64(seed);
    let shapes = [
        (1, 1),
        (1, 2),
        (2, 1),
        (2, 2),
        (1, 4099),
        (4099, 1),
        (2, 4098),
        (63, 65),
        (64, 64),
        (65, 63),
        (128, 130),
        (127, 129),
        (9, 8193),
        (8191, 9),
    ];
    for (rows, cols) in shapes {
        let p = Problem::Transpose(TransposeProblem { rows, cols });
        for (so, d) in [(0, 0), (1, 0), (0, 1), (1, 1)] {
            run_at_offsets::<f16>(k, &p, so, d, &mut rng);
        }
        run_at_offsets::<bf16>(k, &p, 0, 0, &mut rng);
        run_at_offsets::<bf16>(k, &p, 1, 1, &mut rng);
    }
    eprintln!("pairs: seed {seed}");
}

fn analyze(k: &KernelInfo, dtype: DType, p: &Problem) -> rustile::sim::Analysis {
    rustile::memory::analyze(k, dtype, p, seed()).unwrap()
}

#[test]
fn pairs_is_coalesced_and_conflict_free() {
    let k = kernel(Family::Transpose, "pairs");
    let p = Problem::Transpose(TransposeProblem {
        rows: 256,
        cols: 256,
    });
    for dtype in [DType::F16, DType::Bf16] {
        let a = analyze(k, dtype, &p);
        for kind in ["load", "store"] {
            let s = a.totals("shared", kind).unwrap();
            assert_eq!(s.worst_degree, 1, "pairs shared {kind}");
            let g = a.totals("global", kind).unwrap();
            assert_eq!(g.efficiency(), 1.0, "pairs global {kind}");
            // Every global access moves a 4-byte pair: half the lane accesses of the
            // one-element tiles.
            assert_eq!(g.bytes, 256 * 256 * 2, "pairs global {kind} bytes");
            assert_eq!(
                g.lane_accesses,
                256 * 256 / 2,
                "pairs global {kind} accesses"
            );
        }
    }
}

#[test]
fn vec16_any_is_coalesced_with_16_byte_accesses() {
    let k = kernel(Family::Copy, "vec16_any");
    let n = 65_536;
    let a = analyze(k, DType::F32, &Problem::Copy(CopyProblem { n }));
    for kind in ["load", "store"] {
        let g = a.totals("global", kind).unwrap();
        assert_eq!(g.efficiency(), 1.0, "vec16_any {kind}");
        assert_eq!(
            g.lane_accesses,
            n as u64 / 4,
            "vec16_any {kind}: one per vector"
        );
    }
}

#[test]
fn dispatchers_pick_the_vector_kernels() {
    assert_eq!(rustile::copy::BEST.name, "vec16_any");
    let even = TransposeProblem {
        rows: 8192,
        cols: 8192,
    };
    assert_eq!(rustile::transpose::best(&even, 2).name, "pairs");
    assert_eq!(rustile::transpose::best(&even, 4).name, "sector_aligned");
    let odd = TransposeProblem {
        rows: 8191,
        cols: 8193,
    };
    assert_ne!(rustile::transpose::best(&odd, 2).name, "pairs");
    // bf16 has no one-element tile: pairs at every shape.
    assert_eq!(
        rustile::transpose::best_for(&odd, DType::Bf16).name,
        "pairs"
    );
    assert_eq!(
        rustile::transpose::best_for(&odd, DType::F16).name,
        "sector_aligned"
    );
    assert_eq!(
        rustile::transpose::best_for(&even, DType::F32).name,
        "sector_aligned"
    );
    // vec16_any takes views at any naturally aligned address; the other vector copies refuse
    // 16-byte misalignment with a typed error naming the buffer.
    let p = Problem::Copy(CopyProblem { n: 1000 });
    let arg = |name, addr| rustile::check::BufArg::new(name, 1000, addr);
    p.plan::<f32>(rustile::copy::BEST, arg("src", 4), arg("dst", 8), 132)
        .unwrap();
    let e = p
        .plan::<f32>(rustile::copy::BEST, arg("src", 2), arg("dst", 0), 132)
        .unwrap_err();
    assert!(
        matches!(
            e,
            rustile::Error::Misaligned {
                buffer: "src",
                align: 4,
                ..
            }
        ),
        "{e}"
    );
    let vec16 = kernel(Family::Copy, "vec16");
    let e = p
        .plan::<f32>(vec16, arg("src", 0), arg("dst", 4), 132)
        .unwrap_err();
    assert!(
        matches!(
            e,
            rustile::Error::Misaligned {
                buffer: "dst",
                align: 16,
                ..
            }
        ),
        "{e}"
    );
    // pairs is built for the 2-byte dtypes only.
    let pairs = kernel(Family::Transpose, "pairs");
    assert!(pairs.symbol(DType::F32).is_none());
}
