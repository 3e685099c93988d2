//! `cargo bench --bench attention`: attention forward, f16, every kernel the device runs on the
//! anchor shapes of `rustile attention bench` at N = 1024, 4096, 16384 (B·N = 16384 tokens,
//! H = 16), d 64 and 128, causal and not (`naive` only up to N = 4096).
//!
//! Group `attention_f16`, ids `attention_f16/b{B}_h{H}_n{N}_d{D}[_causal]/{kernel}`; throughput
//! in FLOP/s of the pairs the mask lets through (`4·B·H·Nq·Nkv·d`, about half of it causal).
//! Each kernel's first output is checked on sampled rows against float64 (O and the LSE, NaN
//! poisoned) before it is timed; input sets rotate past 3× the L2 (at most 4 sets). No
//! baseline runs in this process (PyTorch SDPA is `run.sh attention`'s `sdpa_bench.py`).

mod common;

use std::cell::RefCell;

use common::{event_time, register, Bench, Key, Work};
use rustile::attention::bench::{plan, BenchShape, Sweep};
use rustile::attention::{
    compare, prepare, rows_to_check, Buffers, Input, Inputs, Output, Prepared, Problem, Target,
    POISON,
};
use rustile::harness::rotation_sets;
use rustile::ptx::Flavour;
use rustile::{CudaSlice, DType, Error, Gpu, Result};

const DTYPE: DType = DType::F16;

fn shapes() -> Vec<BenchShape> {
    Sweep {
        n: vec![1024, 4096, 16384],
        bh: Vec::new(),
        ..Sweep::default()
    }
    .shapes()
}

fn name(s: &BenchShape) -> String {
    let c = if s.causal { "_causal" } else { "" };
    format!("b{}_h{}_n{}_d{}{c}", s.b, s.h, s.n, s.d)
}

/// Q, K, V (the same inputs in each set), O and LSE per set, and the host inputs.
struct Sets {
    qkv: Vec<[CudaSlice<u16>; 3]>,
    o: Vec<CudaSlice<u16>>,
    lse: Vec<CudaSlice<f32>>,
    x: Inputs,
}

fn sets(gpu: &Gpu, p: &Problem, seed: u64) -> Result<Sets> {
    p.check()?;
    let spans = p.spans()?;
    let set = 2 * (spans[0] + spans[1] + spans[2] + spans[3]) + 4 * p.shape.lse_len();
    let n = rotation_sets(gpu.info().l2_bytes, set as u64).min(4);
    gpu.check_fits(
        set * n,
        &format!("attention bench {}: {n} sets", p.shape.describe()),
    )?;
    let x = Inputs::random(p, false, seed)?;
    let mut s = Sets {
        qkv: Vec::new(),
        o: Vec::new(),
        lse: Vec::new(),
        x,
    };
    for _ in 0..n {
        let up = |i: usize| gpu.upload(&s.x.bufs[i], "attention input");
        s.qkv.push([up(0)?, up(1)?, up(2)?]);
        s.o.push(gpu.alloc::<u16>(spans[3], "attention O")?);
        s.lse
            .push(gpu.alloc::<f32>(p.shape.lse_len(), "attention LSE")?);
    }
    Ok(s)
}

fn buffers<'a>(
    [q, k, v]: &'a [CudaSlice<u16>; 3],
    o: &'a mut CudaSlice<u16>,
    lse: &'a mut CudaSlice<f32>,
) -> Buffers<'a> {
    Buffers {
        q: Input {
            dtype: DTYPE,
            data: q,
        },
        k: Input {
            dtype: DTYPE,
            data: k,
        },
        v: Input {
            dtype: DTYPE,
            data: v,
        },
        o: Output {
            dtype: DTYPE,
            data: o,
        },
        lse,
    }
}

fn main() {
    let (mut bench, gpu) = Bench::new("attention");
    let gpu = gpu.as_ref();
    // Listing without a GPU: the H200's plan.
    let target = Target::Gpu(gpu.map_or(Flavour::Sm90a, |g| g.flavour()));
    let (runs, skips) = plan(target, DTYPE, &shapes(), None);
    if gpu.is_some() {
        for s in &skips {
            eprintln!("skipped {} {}: {}", s.variant.name(), name(&s.shape), s.why);
        }
    }
    bench.estimate(runs.len());
    let group = format!("attention_{}", DTYPE.name());
    let mut g = bench.group(&group);
    for shape in shapes() {
        let p = Problem::new(DTYPE, shape.shape());
        let state: RefCell<Option<Sets>> = RefCell::new(None);
        let seed = 0xa77e ^ ((shape.n as u64) << 8) ^ (shape.d as u64);
        for run in runs.iter().filter(|r| r.shape == shape) {
            let variant = run.variant;
            let key = Key {
                group: group.clone(),
                shape: name(&shape),
                imp: variant.name().into(),
                work: Work::Flops(p.shape.flops()),
                baseline: false,
            };
            let (mut preps, mut next): (Vec<Prepared>, usize) = (Vec::new(), 0);
            register(&mut g, key, |iters| {
                let gpu = gpu.ok_or_else(|| Error::Usage("no GPU".into()))?;
                let mut st = state.borrow_mut();
                if st.is_none() {
                    *st = Some(sets(gpu, &p, seed)?);
                }
                let s = st.as_mut().expect("filled above");
                let n = s.qkv.len();
                let stream = gpu.stream().clone();
                if preps.is_empty() {
                    for j in 0..n {
                        let mut b = buffers(&s.qkv[j], &mut s.o[j], &mut s.lse[j]);
                        preps.push(prepare(gpu, Some(variant), &p, &mut b)?);
                    }
                    // The first output, O and LSE poisoned, on sampled rows against float64.
                    gpu.fill(&mut s.o[0], POISON, "attention O")?;
                    gpu.fill(&mut s.lse[0], f32::NAN, "attention LSE")?;
                    preps[0]
                        .launch(&stream, &mut buffers(&s.qkv[0], &mut s.o[0], &mut s.lse[0]))?;
                    let o = gpu.download(&s.o[0], "attention O")?;
                    let lse = gpu.download(&s.lse[0], "attention LSE")?;
                    compare(&p, &s.x, &o, &lse, &rows_to_check(&p, seed)).map_err(|e| match e {
                        Error::Mismatch { shape, detail, .. } => Error::Mismatch {
                            kernel: variant.kernel_name(p.shape.head_dim),
                            shape,
                            detail,
                        },
                        e => e,
                    })?;
                }
                event_time(gpu, iters, &mut next, |i| {
                    let j = i % n;
                    preps[j].launch(&stream, &mut buffers(&s.qkv[j], &mut s.o[j], &mut s.lse[j]))
                })
            });
        }
    }
    g.finish();
    bench.finish();
}
