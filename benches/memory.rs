//! `cargo bench --bench memory`: the copy, strided-copy and transpose ladders against
//! `cuMemcpyDtoD` in one process: copy f32 and f16, strided f32, transpose f32, f16 and bf16
//! (each dtype's ladder steps: `transpose/pairs` is 2-byte only).
//!
//! Groups `copy`, `strided`, `transpose`; ids `group/dtype/shape/impl` where shape is `N`
//! (copy), `N:S` (strided: N outputs at stride S) or `RxC` (transpose), impl a ladder step or
//! `memcpy` (`cuMemcpyDtoD` moving the same useful bytes: half read, half written). Throughput
//! in GB/s of useful bytes (each element read once and written once). Every kernel's output is
//! checked exactly against the host reference once before it is timed; input sets rotate past
//! 3× the L2. `RUSTILE_BENCH_FAMILY=copy|strided|transpose` restricts the sweep (criterion's
//! filter does too). The two-L2-mode, f32 + f16 tables are `rustile bench <family>`.

mod common;

use std::cell::RefCell;

use common::{event_time, register, Bench, GpuTime, Key, Work};
use criterion::BenchmarkGroup;
use rand::rngs::SmallRng;
use rand::SeedableRng;
use rustile::bench::Sweep;
use rustile::elem::random_vec;
use rustile::harness::rotation_sets;
use rustile::{CudaSlice, DType, DeviceElem, Family, Gpu, KernelInfo, Problem, Result};

/// Strides timed (of `rustile bench strided`'s 1 … 32).
const STRIDES: [usize; 3] = [1, 4, 32];

fn families() -> Vec<Family> {
    match std::env::var("RUSTILE_BENCH_FAMILY") {
        Ok(name) => Family::MEMORY
            .into_iter()
            .filter(|f| f.name() == name)
            .collect(),
        Err(_) => Family::MEMORY.to_vec(),
    }
}

fn problems(family: Family) -> Vec<Problem> {
    Sweep::default_for(family)
        .problems
        .into_iter()
        .filter(|p| match p {
            Problem::Strided(s) => STRIDES.contains(&s.stride),
            _ => true,
        })
        .collect()
}

/// `N`, `N:S`, `RxC`: filter-friendly shapes.
fn shape(p: &Problem) -> String {
    match p {
        Problem::Copy(c) => c.n.to_string(),
        Problem::Strided(s) => format!("{}:{}", s.n, s.stride),
        Problem::Transpose(t) => format!("{}x{}", t.rows, t.cols),
    }
}

fn kernels(family: Family, dtype: DType) -> Vec<&'static KernelInfo> {
    rustile::KERNELS
        .iter()
        .copied()
        .filter(|k| {
            k.family == family
                && k.role == rustile_kernels::registry::Role::Ladder
                && k.symbol(dtype).is_some()
        })
        .collect()
}

/// The dtypes each family is timed at.
fn dtypes(family: Family) -> &'static [DType] {
    match family {
        Family::Copy => &[DType::F32, DType::F16],
        Family::Transpose => &[DType::F32, DType::F16, DType::Bf16],
        _ => &[DType::F32],
    }
}

/// Input sets of one problem (the same random input in each) and their outputs, plus the
/// host reference of the output.
struct Sets<T> {
    src: Vec<CudaSlice<T>>,
    dst: Vec<CudaSlice<T>>,
    want: Vec<T>,
}

fn sets<T: DeviceElem>(gpu: &Gpu, p: &Problem) -> Result<Sets<T>> {
    p.check_shape()?;
    let (ls, ld) = p.lens()?;
    let size = std::mem::size_of::<T>();
    let set = rustile::check::total_bytes("memory bench", &[(ls, size), (ld, size)])?;
    let n = rotation_sets(gpu.info().l2_bytes, set as u64);
    gpu.check_fits(set * n, &format!("memory bench {}: {n} sets", shape(p)))?;
    let host: Vec<T> = random_vec(ls, &mut SmallRng::seed_from_u64(0xc0ffee));
    let want = p.reference(&host);
    let mut s = Sets {
        src: Vec::new(),
        dst: Vec::new(),
        want,
    };
    for _ in 0..n {
        s.src.push(gpu.upload(&host, "bench input")?);
        s.dst.push(gpu.alloc::<T>(ld, "bench output")?);
    }
    Ok(s)
}

/// Sources and destinations of the `cuMemcpyDtoD` baseline.
type ByteSets = (Vec<CudaSlice<u8>>, Vec<CudaSlice<u8>>);

/// `cuMemcpyDtoD` sets moving `bytes` (half read, half written).
fn memcpy_sets(gpu: &Gpu, bytes: u64) -> Result<ByteSets> {
    let half = (bytes / 2) as usize;
    let n = rotation_sets(gpu.info().l2_bytes, bytes);
    gpu.check_fits(half * 2 * n, "memcpy baseline sets")?;
    let mut v = (Vec::new(), Vec::new());
    for _ in 0..n {
        v.0.push(gpu.alloc::<u8>(half, "baseline input")?);
        v.1.push(gpu.alloc::<u8>(half, "baseline output")?);
    }
    Ok(v)
}

fn family_group(bench: &mut Bench, gpu: Option<&Gpu>, family: Family) {
    let mut g = bench.group(family.name());
    for p in problems(family) {
        for &dtype in dtypes(family) {
            rustile::dispatch_dtype!(dtype, T => problem_group::<T>(&mut g, gpu, family, &p));
        }
    }
    g.finish();
}

/// Every ladder step built for `T` on `p`, then the `cuMemcpyDtoD` baseline.
fn problem_group<T: DeviceElem>(
    g: &mut BenchmarkGroup<'_, GpuTime>,
    gpu: Option<&Gpu>,
    family: Family,
    p: &Problem,
) {
    let p = *p;
    {
        let bytes = p.bytes_moved(std::mem::size_of::<T>());
        let sh = format!("{}/{}", T::DTYPE.name(), shape(&p));
        let state: RefCell<Option<Sets<T>>> = RefCell::new(None);
        for kernel in kernels(family, T::DTYPE) {
            let key = Key {
                group: family.name().into(),
                shape: sh.clone(),
                imp: kernel.name.into(),
                work: Work::Bytes(bytes),
                baseline: false,
            };
            let (mut checked, mut next) = (false, 0usize);
            register(g, key, |iters| {
                let gpu = gpu.ok_or_else(|| rustile::Error::Usage("no GPU".into()))?;
                let mut st = state.borrow_mut();
                if st.is_none() {
                    *st = Some(sets::<T>(gpu, &p)?);
                }
                let s = st.as_mut().expect("filled above");
                if !checked {
                    gpu.fill(&mut s.dst[0], T::POISON, "bench output")?;
                    p.launch_gpu(gpu, kernel, &s.src[0], &mut s.dst[0])?;
                    let got = gpu.download(&s.dst[0], "bench output")?;
                    let name = rustile::check::kernel_name(kernel);
                    rustile::check::exact(&name, &shape(&p), &got, &s.want)?;
                    checked = true;
                }
                let n = s.src.len();
                event_time(gpu, iters, &mut next, |i| {
                    p.launch_gpu(gpu, kernel, &s.src[i % n], &mut s.dst[i % n])
                })
            });
        }
        let key = Key {
            group: family.name().into(),
            shape: sh.clone(),
            imp: "memcpy".into(),
            work: Work::Bytes(bytes),
            baseline: true,
        };
        let (mut bufs, mut next) = (None, 0usize);
        register(g, key, |iters| {
            let gpu = gpu.ok_or_else(|| rustile::Error::Usage("no GPU".into()))?;
            if bufs.is_none() {
                bufs = Some(memcpy_sets(gpu, bytes)?);
            }
            let (src, dst) = bufs.as_mut().expect("filled above");
            let n = src.len();
            event_time(gpu, iters, &mut next, |i| {
                gpu.stream()
                    .memcpy_dtod(&src[i % n], &mut dst[i % n])
                    .map_err(|e| rustile::Error::driver("cuMemcpyDtoD baseline", e))
            })
        });
    }
}

fn main() {
    let (mut bench, gpu) = Bench::new("memory");
    let n: usize = families()
        .into_iter()
        .map(|f| {
            let per_problem: usize = dtypes(f).iter().map(|&d| kernels(f, d).len() + 1).sum();
            problems(f).len() * per_problem
        })
        .sum();
    bench.estimate(n);
    for family in families() {
        family_group(&mut bench, gpu.as_ref(), family);
    }
    bench.finish();
}
