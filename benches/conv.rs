//! `cargo bench --bench conv`: the ResNet-50 3×3 layers and a few 1×1 layers at batch 32,
//! f16 with bias + ReLU, rustile's dispatcher (`rustile::api::conv2d`: `conv/wgmma` on an
//! H200) against cuDNN in the same process: its fused convolution + bias + ReLU
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
use rustile::conv::{compare, elements_to_check, Addrs, Inputs, Problem};
use rustile::half::f16;
use rustile::harness::rotation_sets;
use rustile::{api, CudaSlice, DType, DevicePtr, Error, Gpu, Result};

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
            let (mut ready, mut next) = (false, 0usize);
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
                if !ready {
                    // y poisoned, one launch, sampled elements against float64.
                    gpu.fill(&mut s.y[0], f16::NAN, "conv y")?;
                    let ran =
                        api::conv2d(gpu, p, &s.x[0], &s.w[0], s.bias[0].as_ref(), &mut s.y[0])?;
                    let got: Vec<f32> = gpu
                        .download(&s.y[0], "conv y")?
                        .iter()
                        .map(|v| v.to_f32())
                        .collect();
                    let which = elements_to_check(p, SEED)?;
                    compare(p, &format!("conv/{}", ran.variant), &s.host, &got, &which)?;
                    note(&k2, ran.variant);
                    ready = true;
                }
                event_time(gpu, iters, &mut next, |j| {
                    let j = j % n;
                    api::conv2d(gpu, p, &s.x[j], &s.w[j], s.bias[j].as_ref(), &mut s.y[j])
                        .map(|_| ())
                })
            });
        }
    }
    g.finish();
    bench.finish();
}
