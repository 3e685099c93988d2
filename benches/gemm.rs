//! `cargo bench --bench gemm`: SGEMM and tensor-core GEMM against cuBLAS, in one process.
//!
//! Groups (criterion ids `group/shape/impl`, throughput in FLOP/s = 2·M·N·K per launch):
//! - `sgemm`: the dispatcher (`dispatch`, what `rustile::api::sgemm` runs), three ladder steps
//!   (`naive` up to 1024³, `warptile` v08, `kgroup_ring` v12, the `cp.async` ring) and cuBLAS
//!   SGEMM (`cublas`, TF32 off);
//! - `hgemm_f16`, `hgemm_bf16`: the dispatcher (`wgmma_ws` on sm_90a), in f16 `mma_pipeline`
//!   (the `mma.sync` + `cp.async` kernel, where it is not already the dispatcher's choice) and
//!   cuBLAS `GemmEx` (`cublas`, f32 accumulation); B row-major, C in the input type.
//!
//! Shapes: 256³ … 8192³ and 1000³, 4096×1024×4096, 8192×256×8192 (M×N×K).
//!
//! Every rustile benchmark checks its kernel once before timing (SGEMM: relative error against
//! cuBLAS's C within 4× the family's bound, as `rustile bench gemm`; tensor-core GEMM: sampled
//! elements against float64, as `rustile hgemm validate`). Input sets rotate past 3× the L2.
//! Timing, summary and the no-GPU exit: `common`.

mod common;

use std::cell::RefCell;

use common::{event_time, note, register, Bench, Key, Work};
use rand::rngs::SmallRng;
use rand::SeedableRng;
use rustile::cudarc::cublas::CudaBlas;
use rustile::elem::random_vec;
use rustile::gemm::{self, GemmProblem, Scratch};
use rustile::harness::rotation_sets;
use rustile::hgemm::{self, Out, Problem as HProblem, Variant};
use rustile::{CudaSlice, DType, Error, Gpu, KernelInfo, Result};
use rustile_kernels::gemm::{v01_naive, v08_warptile, v12_kgroup_ring};

/// M×N×K (or N for N³).
const SIZES: [&str; 9] = [
    "256",
    "512",
    "1024",
    "2048",
    "4096",
    "8192",
    "1000x1000x1000",
    "4096x1024x4096",
    "8192x256x8192",
];

/// `naive` runs only up to this many FLOPs (1024³: ~10 ms a launch; 8192³ would be seconds).
const NAIVE_MAX_FLOPS: f64 = 2.0 * 1024.0 * 1024.0 * 1024.0;

#[derive(Clone, Copy)]
enum SImp {
    Dispatch,
    Kernel(&'static KernelInfo),
    Cublas,
}

impl SImp {
    fn name(self) -> &'static str {
        match self {
            SImp::Dispatch => "dispatch",
            SImp::Kernel(k) => k.name,
            SImp::Cublas => "cublas",
        }
    }
}

#[derive(Clone, Copy)]
enum HImp {
    Dispatch,
    Variant(Variant),
    Cublas,
}

impl HImp {
    fn name(self) -> &'static str {
        match self {
            HImp::Dispatch => "dispatch",
            HImp::Variant(v) => v.name(),
            HImp::Cublas => "cublas",
        }
    }
}

fn shapes() -> Vec<GemmProblem> {
    SIZES
        .iter()
        .map(|s| gemm::parse_shape(s).expect("the bench's shapes parse"))
        .collect()
}

/// What runs at `p`: the dispatcher, the ladder steps that take it, cuBLAS.
fn sgemm_imps(p: &GemmProblem) -> Vec<SImp> {
    let mut v = vec![SImp::Dispatch];
    if p.flops() <= NAIVE_MAX_FLOPS {
        v.push(SImp::Kernel(&v01_naive::INFO));
    }
    for k in [&v08_warptile::INFO, &v12_kgroup_ring::INFO] {
        if !GemmProblem::vectorized(k) || (p.lda.is_multiple_of(4) && p.ldb.is_multiple_of(4)) {
            v.push(SImp::Kernel(k));
        }
    }
    v.push(SImp::Cublas);
    v
}

/// What runs in the tensor-core groups: the dispatcher, `mma_pipeline` in f16 where the
/// dispatcher picks `wgmma_ws` (sm_90a; assumed when listing without a GPU), cuBLAS.
fn hgemm_imps(gpu: Option<&Gpu>, ty: DType) -> Vec<HImp> {
    let sm90a = gpu.is_none_or(|g| g.flavour() == rustile::ptx::Flavour::Sm90a);
    let mut v = vec![HImp::Dispatch];
    if sm90a && ty == DType::F16 {
        v.push(HImp::Variant(Variant::MmaPipeline));
    }
    v.push(HImp::Cublas);
    v
}

/// A, B, C sets of one SGEMM shape and cuBLAS's C on set 0 (the check's reference).
struct SSets {
    a: Vec<CudaSlice<f32>>,
    b: Vec<CudaSlice<f32>>,
    c: Vec<CudaSlice<f32>>,
    want: Vec<f64>,
}

fn sgemm_sets(gpu: &Gpu, blas: Option<&CudaBlas>, p: &GemmProblem) -> Result<SSets> {
    let blas =
        blas.ok_or_else(|| Error::Usage("the SGEMM bench needs cuBLAS (its reference)".into()))?;
    let (la, lb, lc) = p.lens()?;
    gemm::cublas_sgemm_config(p, la, lb, lc)?;
    let set = rustile::check::total_bytes("sgemm bench", &[(la, 4), (lb, 4), (lc, 4)])?;
    let sets = rotation_sets(gpu.info().l2_bytes, set as u64);
    gpu.check_fits(
        set * sets,
        &format!("sgemm bench {}: {sets} sets of A, B, C", p.shape()),
    )?;
    let mut rng = SmallRng::seed_from_u64(0x5eed ^ p.flops() as u64);
    let (ha, hb) = (
        random_vec::<f32>(la, &mut rng),
        random_vec::<f32>(lb, &mut rng),
    );
    let mut s = SSets {
        a: Vec::new(),
        b: Vec::new(),
        c: Vec::new(),
        want: Vec::new(),
    };
    for _ in 0..sets {
        s.a.push(gpu.upload(&ha, "sgemm A")?);
        s.b.push(gpu.upload(&hb, "sgemm B")?);
        s.c.push(gpu.alloc::<f32>(lc, "sgemm C")?);
    }
    gemm::cublas_sgemm(blas, p, &s.a[0], &s.b[0], &mut s.c[0])?;
    s.want = gpu
        .download(&s.c[0], "cuBLAS C")?
        .iter()
        .map(|&v| v as f64)
        .collect();
    Ok(s)
}

/// One launch of `imp` on set `j`; the dispatcher's choice is returned.
fn sgemm_launch(
    gpu: &Gpu,
    blas: Option<&CudaBlas>,
    imp: SImp,
    p: &GemmProblem,
    s: &mut SSets,
    j: usize,
    scratch: &mut Scratch,
) -> Result<&'static str> {
    let (a, b, c) = (&s.a[j], &s.b[j], &mut s.c[j]);
    match imp {
        SImp::Dispatch => gemm::run(gpu, p, a, b, c, scratch),
        SImp::Kernel(k) => gemm::launch(gpu, k, p, a, b, c).map(|()| k.name),
        SImp::Cublas => {
            let blas = blas.ok_or_else(|| Error::Usage("no cuBLAS handle".into()))?;
            gemm::cublas_sgemm(blas, p, a, b, c).map(|()| "cublas")
        }
    }
}

fn sgemm(bench: &mut Bench, gpu: Option<&Gpu>, blas: Option<&CudaBlas>) {
    let mut g = bench.group("sgemm");
    for p in shapes() {
        let state: RefCell<Option<SSets>> = RefCell::new(None);
        for imp in sgemm_imps(&p) {
            let key = Key {
                group: "sgemm".into(),
                shape: p.shape(),
                imp: imp.name().into(),
                work: Work::Flops(p.flops()),
                baseline: matches!(imp, SImp::Cublas),
            };
            let (mut checked, mut next, mut scratch) = (false, 0usize, Scratch::default());
            let k2 = key.clone();
            register(&mut g, key, |iters| {
                let gpu = gpu.ok_or_else(|| Error::Usage("no GPU".into()))?;
                let mut st = state.borrow_mut();
                if st.is_none() {
                    *st = Some(sgemm_sets(gpu, blas, &p)?);
                }
                let s = st.as_mut().expect("filled above");
                if !checked {
                    gpu.fill(&mut s.c[0], f32::NAN, "sgemm C")?;
                    let ran = sgemm_launch(gpu, blas, imp, &p, s, 0, &mut scratch)?;
                    let got = gpu.download(&s.c[0], "sgemm C")?;
                    let err = gemm::relative_error(&p, &got, &s.want);
                    // NaN reads as infinite (`relative_error`), so it fails here too.
                    if err > 4.0 * p.tolerance() {
                        return Err(Error::Mismatch {
                            kernel: format!("gemm/{ran}"),
                            shape: p.shape(),
                            detail: format!(
                                "relative error {err:.3e} against cuBLAS > {:.3e}",
                                4.0 * p.tolerance()
                            ),
                        });
                    }
                    if matches!(imp, SImp::Dispatch) {
                        note(&k2, ran);
                    }
                    checked = true;
                }
                let sets = s.a.len();
                event_time(gpu, iters, &mut next, |i| {
                    sgemm_launch(gpu, blas, imp, &p, s, i % sets, &mut scratch).map(|_| ())
                })
            });
        }
    }
    g.finish();
}

/// A and B sets of one tensor-core shape, and their outputs.
struct HSets {
    a: Vec<CudaSlice<u16>>,
    b: Vec<CudaSlice<u16>>,
    c: Vec<CudaSlice<u16>>,
}

fn hgemm_sets(gpu: &Gpu, p: &HProblem) -> Result<HSets> {
    p.check()?;
    let [la, lb, lc] = p.lens()?;
    let set = p.bytes()?;
    let sets = rotation_sets(gpu.info().l2_bytes, set as u64);
    gpu.check_fits(
        set * sets,
        &format!("hgemm bench {}: {sets} sets", p.shape()),
    )?;
    let ha = hgemm::random_bits(p.ty, la, 11);
    let hb = hgemm::random_bits(p.ty, lb, 97);
    let mut s = HSets {
        a: Vec::new(),
        b: Vec::new(),
        c: Vec::new(),
    };
    for _ in 0..sets {
        s.a.push(gpu.upload(&ha, "hgemm A")?);
        s.b.push(gpu.upload(&hb, "hgemm B")?);
        s.c.push(gpu.alloc::<u16>(lc, "hgemm C")?);
    }
    Ok(s)
}

fn hgemm_group(bench: &mut Bench, gpu: Option<&Gpu>, blas: Option<&CudaBlas>, ty: DType) {
    let group = format!("hgemm_{}", ty.name());
    let mut g = bench.group(&group);
    for sp in shapes() {
        let p = HProblem::new(ty, sp.m, sp.n, sp.k);
        let state: RefCell<Option<HSets>> = RefCell::new(None);
        for imp in hgemm_imps(gpu, ty) {
            let key = Key {
                group: group.clone(),
                shape: p.shape(),
                imp: imp.name().into(),
                work: Work::Flops(p.flops()),
                baseline: matches!(imp, HImp::Cublas),
            };
            let k2 = key.clone();
            let (mut preps, mut next) = (Vec::new(), 0usize);
            register(&mut g, key, |iters| {
                let gpu = gpu.ok_or_else(|| Error::Usage("no GPU".into()))?;
                let mut st = state.borrow_mut();
                if st.is_none() {
                    *st = Some(hgemm_sets(gpu, &p)?);
                }
                let s = st.as_mut().expect("filled above");
                let sets = s.a.len();
                let stream = gpu.stream().clone();
                if let HImp::Cublas = imp {
                    let blas = blas.ok_or_else(|| Error::Usage("no cuBLAS handle".into()))?;
                    return event_time(gpu, iters, &mut next, |i| {
                        let j = i % sets;
                        hgemm::cublas(
                            blas,
                            &stream,
                            &p,
                            &s.a[j],
                            &s.b[j],
                            &mut Out::Half(&mut s.c[j]),
                        )
                    });
                }
                if preps.is_empty() {
                    let variant = match imp {
                        HImp::Variant(v) => Some(v),
                        _ => None,
                    };
                    // Checked once against float64 (fresh inputs, poisoned C), then prepared
                    // on every set (the wgmma kernel's tensor maps hold the addresses).
                    let checked = hgemm::validate(gpu, variant, &p, false, 0xbe7c4)?;
                    let opts = hgemm::Options::variant(variant);
                    for j in 0..sets {
                        let mut c = Out::Half(&mut s.c[j]);
                        preps.push(hgemm::prepare_with(
                            gpu, &opts, &p, &s.a[j], &s.b[j], &mut c, None,
                        )?);
                    }
                    if matches!(imp, HImp::Dispatch) {
                        note(&k2, checked.variant.name());
                    }
                }
                event_time(gpu, iters, &mut next, |i| {
                    let j = i % sets;
                    preps[j].launch(&stream, &s.a[j], &s.b[j], &mut Out::Half(&mut s.c[j]), None)
                })
            });
        }
    }
    g.finish();
}

fn main() {
    let (mut bench, gpu) = Bench::new("gemm");
    let gpu = gpu.as_ref();
    let blas = match gpu.map(|g| rustile::vendor::cublas(g.stream())) {
        Some(Ok(b)) => Some(b),
        Some(Err(e)) => {
            eprintln!("rustile gemm bench: {e}; the cuBLAS rows (and SGEMM's reference) fail");
            None
        }
        None => None,
    };
    let sgemm_n: usize = shapes().iter().map(|p| sgemm_imps(p).len()).sum();
    let hgemm_n =
        SIZES.len() * (hgemm_imps(gpu, DType::F16).len() + hgemm_imps(gpu, DType::Bf16).len());
    bench.estimate(sgemm_n + hgemm_n);
    sgemm(&mut bench, gpu, blas.as_ref());
    for ty in [DType::F16, DType::Bf16] {
        hgemm_group(&mut bench, gpu, blas.as_ref(), ty);
    }
    bench.finish();
}
