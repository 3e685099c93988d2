//! `cargo bench --bench conv`: the ResNet-50 3×3 layers and a few 1×1 layers at batch 32,
//! f16 with bias + ReLU, the kernel rustile's dispatcher picks (`conv::select`, what
//! `rustile::api::conv2d` runs: `conv/wgmma` on an H200, its TMA maps built once per input set
//! as `rustile conv bench` does) against cuDNN in the same process: its fused convolution + bias + ReLU
//! (`cudnn_fused`, the baseline) and its convolution alone (`cudnn_conv`), each with its
//! fastest algorithm found by timing.
//!
//! Group `conv_f16`, ids `conv_f16/{layer}/{impl}`; throughput in FLOP/s (2·N·K·P·Q·C·R·S).
//! rustile's first output is checked against float64 on sampled elements before it is timed;
//! input sets rotate past 3× the L2. The full set (every layer, bf16, f32, batch 1) is
//! `rustile conv bench`.

mod common;

use std::cell::RefCell;

use common::{event_time, note, register, Bench, Key, Work};
use rustile::conv::baseline::baselines;
use rustile::conv::shapes::resnet50;
use rustile::conv::tma::{tuning_width, Reduce, TmaLaunch};
use rustile::conv::{
    compare, elements_to_check, kernel_label, plan, select, Addrs, Inputs, Problem, Target,
};
use rustile::half::f16;
use rustile::harness::rotation_sets;
use rustile::launch::LaunchPlan;
use rustile::{CudaSlice, DType, DevicePtr, Error, Gpu, Result};

const LAYERS: [&str; 7] = [
    "l1.b0.conv2",
    "l2.b1.conv2",
    "l3.b1.conv2",
    "l4.b1.conv2",
    "l1.b0.conv3",
    "l2.b1.conv1",
    "l4.b0.conv3",
];
const IMPS: [&str; 3] = ["dispatch", "cudnn_fused", "cudnn_conv"];

const SEED: u64 = 0xc0de;

/// x, w, bias, y per set (the same inputs in each), and the host inputs.
struct Sets {
    x: Vec<CudaSlice<f16>>,
    w: Vec<CudaSlice<f16>>,
    bias: Vec<Option<CudaSlice<f32>>>,
    y: Vec<CudaSlice<f16>>,
    host: Inputs,
}

impl Sets {
    fn addrs(&self, gpu: &Gpu, j: usize) -> Addrs {
        let s = gpu.stream();
        Addrs {
            x: self.x[j].device_ptr(s).0,
            w: self.w[j].device_ptr(s).0,
            bias: self.bias[j].as_ref().map_or(0, |b| b.device_ptr(s).0),
            y: self.y[j].device_ptr(s).0,
        }
    }
}

/// One set's launch of the dispatcher's kernel, prepared once.
enum Launch {
    /// The TMA + wgmma kernel, its tensor maps (and any split-K / stream-K scratch) built.
    Tma(TmaLaunch, Addrs),
    /// A plain launch.
    Plan(LaunchPlan<'static>),
}

fn prepare(gpu: &Gpu, p: &Problem, a: &Addrs) -> Result<(Launch, String)> {
    let record = select(Target::gpu(gpu), p)?;
    Ok(if record.needs.tma {
        let t = TmaLaunch::new(gpu, p, a, tuning_width(record), Reduce::Auto)?;
        let mut label = kernel_label(t.record);
        if t.stream_k {
            label += " stream-K";
        } else if t.splits > 1 {
            label += &format!(" split {}", t.splits);
        }
        (Launch::Tma(t, *a), label)
    } else {
        (Launch::Plan(plan(p, record, a)?), kernel_label(record))
    })
}

fn enqueue(gpu: &Gpu, p: &Problem, l: &Launch) -> Result<()> {
    let stream = gpu.stream();
    // SAFETY: the set's buffers were allocated at the problem's lengths (`sets`), live in
    // `Sets` for the whole benchmark, and every timed call synchronizes before returning.
    unsafe {
        match l {
            Launch::Tma(t, a) => t.enqueue(gpu, stream, p, a),
            Launch::Plan(pl) => pl.launch_on(gpu, stream),
        }
    }
}

fn halves(bits: Vec<u16>) -> Vec<f16> {
    bits.into_iter().map(f16::from_bits).collect()
}

fn sets(gpu: &Gpu, p: &Problem) -> Result<Sets> {
    p.check()?;
    let [lx, lw, ly] = p.lens()?;
    let set = 2 * (lx + lw + ly) + 4 * p.k;
    let n = rotation_sets(gpu.info().l2_bytes, set as u64);
    gpu.check_fits(set * n, &format!("conv bench {}: {n} sets", p.label()))?;
    let host = Inputs::random(p, SEED)?;
    let (hx, hw) = (halves(host.x_bits(p.dtype)), halves(host.w_bits(p.dtype)));
    let mut s = Sets {
        x: Vec::new(),
        w: Vec::new(),
        bias: Vec::new(),
        y: Vec::new(),
        host,
    };
    for _ in 0..n {
        s.x.push(gpu.upload(&hx, "conv x")?);
        s.w.push(gpu.upload(&hw, "conv w")?);
        s.bias.push(match &s.host.bias {
            Some(b) => Some(gpu.upload(b, "conv bias")?),
            None => None,
        });
        s.y.push(gpu.alloc::<f16>(ly, "conv y")?);
    }
    Ok(s)
}

fn main() {
    let (mut bench, gpu) = Bench::new("conv");
    let gpu = gpu.as_ref();
    let layers: Vec<(&str, Problem)> = resnet50(32, DType::F16)
        .into_iter()
        .filter(|(name, _)| LAYERS.contains(name))
        .collect();
    bench.estimate(layers.len() * IMPS.len());
    let mut g = bench.group("conv_f16");
    for (layer, p) in &layers {
        let state: RefCell<Option<Sets>> = RefCell::new(None);
        for (i, imp) in IMPS.into_iter().enumerate() {
            let key = Key {
                group: "conv_f16".into(),
                shape: layer.to_string(),
                imp: imp.into(),
                work: Work::Flops(p.flops()),
                baseline: imp == "cudnn_fused",
            };
            let k2 = key.clone();
            let (mut launches, mut next): (Vec<Launch>, usize) = (Vec::new(), 0);
            let mut base = None;
            register(&mut g, key, |iters| {
                let gpu = gpu.ok_or_else(|| Error::Usage("no GPU".into()))?;
                let mut st = state.borrow_mut();
                if st.is_none() {
                    *st = Some(sets(gpu, p)?);
                }
                let s = st.as_mut().expect("filled above");
                let n = s.x.len();
                if i > 0 {
                    if base.is_none() {
                        // [fused, conv alone], each on the bench's buffers.
                        let mut b = baselines(gpu, p, s.host.bias.as_deref())?;
                        let (name, f) = b.swap_remove(i - 1);
                        note(&k2, &name);
                        base = Some(f);
                    }
                    let f = base.as_mut().expect("set above");
                    let addrs: Vec<Addrs> = (0..n).map(|j| s.addrs(gpu, j)).collect();
                    return event_time(gpu, iters, &mut next, |j| f(&addrs[j % n]));
                }
                if launches.is_empty() {
                    for j in 0..n {
                        let (l, label) = prepare(gpu, p, &s.addrs(gpu, j))?;
                        if j == 0 {
                            note(&k2, &label);
                        }
                        launches.push(l);
                    }
                    // y poisoned, one launch, sampled elements against float64.
                    gpu.fill(&mut s.y[0], f16::NAN, "conv y")?;
                    enqueue(gpu, p, &launches[0])?;
                    let got: Vec<f32> = gpu
                        .download(&s.y[0], "conv y")?
                        .iter()
                        .map(|v| v.to_f32())
                        .collect();
                    let which = elements_to_check(p, SEED)?;
                    compare(p, "conv/dispatch", &s.host, &got, &which)?;
                }
                event_time(gpu, iters, &mut next, |j| enqueue(gpu, p, &launches[j % n]))
            });
        }
    }
    g.finish();
    bench.finish();
}
