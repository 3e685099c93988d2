//! NaN and ±Inf through every family, as IEEE 754 arithmetic gives them: each operation is
//! run on inputs holding NaN and infinities, and every output element must be of the class
//! (NaN, +Inf, −Inf, finite) that a float64 evaluation of the same formula gives — a NaN
//! input poisons exactly the outputs whose formula reads it, `Inf · 0` is NaN, `Inf − Inf`
//! is NaN, ReLU keeps NaN (and maps −Inf to 0) — with the finite ones within a per-dtype
//! bound. The memory family moves NaN payloads, infinities, −0 and subnormals bit for bit.
//!
//! GPU tests (`#[ignore = "needs a GPU"]`), through `rustile::api`, i.e. the path each
//! dispatcher picks: `cargo test --release --test ieee -- --ignored`.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rustile::half::{bf16, f16};
use rustile::{api, attention, conv, DType, DeviceElem, Gpu, HgemmOptions, TcElem, TcOut};

fn gpu() -> Gpu {
    Gpu::new(0).expect("these tests need a GPU")
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    Nan,
    PosInf,
    NegInf,
    Finite,
}

fn class(v: f64) -> Class {
    if v.is_nan() {
        Class::Nan
    } else if v == f64::INFINITY {
        Class::PosInf
    } else if v == f64::NEG_INFINITY {
        Class::NegInf
    } else {
        Class::Finite
    }
}

/// Every element of `got` has `want`'s class, finite ones within `bound`; and `want` holds
/// every class (so the case exercised each) — but −Inf where a ReLU maps it to 0.
fn check(what: &str, got: &[f64], want: &[f64], bound: &[f64]) {
    check_classes(what, got, want, bound, true)
}

fn check_classes(what: &str, got: &[f64], want: &[f64], bound: &[f64], neg_inf: bool) {
    assert_eq!(got.len(), want.len(), "{what}");
    let mut seen = [0usize; 4];
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let c = class(w);
        seen[c as usize] += 1;
        assert_eq!(
            class(g),
            c,
            "{what}: element {i}: got {g}, float64 gives {w}"
        );
        if c == Class::Finite {
            assert!(
                (g - w).abs() <= bound[i],
                "{what}: element {i}: got {g}, want {w} ± {}",
                bound[i]
            );
        }
    }
    println!(
        "{what}: {} NaN, {} +Inf, {} -Inf, {} finite outputs, all of the float64 class",
        seen[0], seen[1], seen[2], seen[3]
    );
    let need = [true, true, neg_inf, true];
    assert!(
        seen.iter().zip(need).all(|(&n, need)| n > 0 || !need),
        "{what}: classes seen (NaN, +Inf, -Inf, finite) {seen:?}"
    );
}

/// `u = 2^-24` (f32 accumulation), and the output's half ulp.
const U32: f64 = 1.0 / 16_777_216.0;

fn out_ulp(dtype: DType) -> f64 {
    match dtype {
        DType::F16 => 1.0 / 2048.0,
        DType::Bf16 => 1.0 / 256.0,
        _ => U32,
    }
}

// --- GEMM -------------------------------------------------------------------------------

/// Row-major A (m×k) and B (k×n) with NaN and infinities placed so that C has every class.
fn special_gemm_inputs(m: usize, n: usize, k: usize, rng: &mut SmallRng) -> (Vec<f64>, Vec<f64>) {
    let mut a: Vec<f64> = (0..m * k).map(|_| rng.random_range(-1.0..1.0)).collect();
    let mut b: Vec<f64> = (0..k * n).map(|_| rng.random_range(-1.0..1.0)).collect();
    a[3 * k + 5] = f64::NAN; // row 3 of C: NaN
    a[10 * k + 7] = f64::INFINITY; // row 10: +Inf where B[7][j] > 0, −Inf where < 0 ...
    for j in 0..n {
        b[7 * n + j] = if j % 3 == 0 { -0.5 } else { 0.75 };
    }
    b[7 * n + 2] = 0.0; // ... and Inf · 0 = NaN at (10, 2)
    b[4 * n + 20] = f64::NEG_INFINITY; // column 20: ∓Inf by A[i][4]'s sign (NaN at row 10)
    (a, b)
}

fn gemm_reference(a: &[f64], b: &[f64], m: usize, n: usize, k: usize) -> (Vec<f64>, Vec<f64>) {
    let mut c = vec![0.0; m * n];
    let mut mag = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            for p in 0..k {
                c[i * n + j] += a[i * k + p] * b[p * n + j];
                mag[i * n + j] += (a[i * k + p] * b[p * n + j]).abs();
            }
        }
    }
    (c, mag)
}

#[test]
#[ignore = "needs a GPU"]
fn sgemm_propagates_nan_and_inf() {
    let gpu = gpu();
    let mut rng = SmallRng::seed_from_u64(1);
    for (m, n, k) in [(67, 45, 33), (300, 257, 129), (1024, 1024, 1024)] {
        let (a, b) = special_gemm_inputs(m, n, k, &mut rng);
        let (want, mag) = gemm_reference(&a, &b, m, n, k);
        let a32: Vec<f32> = a.iter().map(|&v| v as f32).collect();
        let b32: Vec<f32> = b.iter().map(|&v| v as f32).collect();
        let (da, db) = (
            gpu.upload(&a32, "A").unwrap(),
            gpu.upload(&b32, "B").unwrap(),
        );
        let mut dc = gpu.upload(&vec![f32::NAN; m * n], "C").unwrap();
        let ran = api::sgemm(&gpu, m, n, k, 1.0, &da, &db, 0.0, &mut dc).unwrap();
        let got: Vec<f64> = gpu
            .download(&dc, "C")
            .unwrap()
            .iter()
            .map(|&v| v as f64)
            .collect();
        // The inputs are exact in f32; the sum is rounded k times (2·k·u·Σ|a||b|).
        let bound: Vec<f64> = mag
            .iter()
            .map(|&s| 2.0 * k as f64 * U32 * s + 1e-30)
            .collect();
        check(&format!("sgemm {m}×{n}×{k} ({ran:?})"), &got, &want, &bound);
    }
}

fn hgemm_case<T: TcElem + TcOut<T> + bytemuck::Pod + Default>(
    gpu: &Gpu,
    dtype: DType,
    to: fn(f64) -> T,
    from: fn(T) -> f64,
) {
    let mut rng = SmallRng::seed_from_u64(2);
    for (m, n, k) in [(67, 45, 40), (256, 264, 136), (2048, 2048, 1024)] {
        let (a, b) = special_gemm_inputs(m, n, k, &mut rng);
        // The inputs as the dtype holds them, so the float64 formula sees what the kernel does.
        let at: Vec<T> = a.iter().map(|&v| to(v)).collect();
        let bt: Vec<T> = b.iter().map(|&v| to(v)).collect();
        let a: Vec<f64> = at.iter().map(|&v| from(v)).collect();
        let b: Vec<f64> = bt.iter().map(|&v| from(v)).collect();
        let (acc, mag) = gemm_reference(&a, &b, m, n, k);
        let bias: Vec<f32> = (0..n)
            .map(|j| if j == 30 { f32::NEG_INFINITY } else { 0.25 })
            .collect();
        let (da, db) = (gpu.upload(&at, "A").unwrap(), gpu.upload(&bt, "B").unwrap());
        let dbias = gpu.upload(&bias, "bias").unwrap();
        for relu in [false, true] {
            // y = relu(acc + bias), NaN kept by ReLU (max(NaN, 0) is NaN here, as in PyTorch).
            let want: Vec<f64> = acc
                .iter()
                .enumerate()
                .map(|(i, &v)| {
                    let y = v + bias[i % n] as f64;
                    if relu && y < 0.0 {
                        0.0
                    } else {
                        y
                    }
                })
                .collect();
            let opts = HgemmOptions {
                bias: Some(&dbias),
                relu,
                ..Default::default()
            };
            // f32 output.
            let mut c = gpu.upload(&vec![f32::NAN; m * n], "C").unwrap();
            let ran = api::hgemm(gpu, m, n, k, &da, &db, &mut c, &opts).unwrap();
            let got: Vec<f64> = gpu
                .download(&c, "C")
                .unwrap()
                .iter()
                .map(|&v| v as f64)
                .collect();
            let bound: Vec<f64> = mag
                .iter()
                .map(|&s| 2.0 * k as f64 * U32 * s + 1e-30)
                .collect();
            let what = format!(
                "hgemm {} {m}×{n}×{k} relu={relu} → f32 ({ran:?})",
                dtype.name()
            );
            check_classes(&what, &got, &want, &bound, !relu);
            // Output in the input dtype: one more rounding (the half ulp of the result).
            let mut c = gpu.upload(&vec![to(f64::NAN); m * n], "C").unwrap();
            let ran = api::hgemm(gpu, m, n, k, &da, &db, &mut c, &opts).unwrap();
            let got: Vec<f64> = gpu
                .download(&c, "C")
                .unwrap()
                .iter()
                .map(|&v| from(v))
                .collect();
            let bound: Vec<f64> = mag
                .iter()
                .zip(&want)
                .map(|(&s, &w)| 2.0 * (k as f64 * U32 * s + out_ulp(dtype) * w.abs()) + 1e-30)
                .collect();
            let what = format!(
                "hgemm {} {m}×{n}×{k} relu={relu} → {} ({ran:?})",
                dtype.name(),
                dtype.name()
            );
            check_classes(&what, &got, &want, &bound, !relu);
        }
    }
}

#[test]
#[ignore = "needs a GPU"]
fn hgemm_propagates_nan_and_inf() {
    let gpu = gpu();
    hgemm_case::<f16>(&gpu, DType::F16, f16::from_f64, f16::to_f64);
    hgemm_case::<bf16>(&gpu, DType::Bf16, bf16::from_f64, bf16::to_f64);
}

// --- Attention --------------------------------------------------------------------------

/// Naive attention over `(seq, d)` matrices (one batch, one head): `softmax(q kᵀ · scale) v`
/// with the row maximum subtracted, as the kernels' formula does. Also Σ p|v| per output, for
/// the bound.
fn attention_reference(
    q: &[f64],
    k: &[f64],
    v: &[f64],
    nq: usize,
    nkv: usize,
    d: usize,
) -> (Vec<f64>, Vec<f64>) {
    let scale = 1.0 / (d as f64).sqrt();
    let mut o = vec![0.0; nq * d];
    let mut mag = vec![0.0; nq * d];
    for i in 0..nq {
        let s: Vec<f64> = (0..nkv)
            .map(|j| (0..d).map(|c| q[i * d + c] * k[j * d + c]).sum::<f64>() * scale)
            .collect();
        // max over the row; NaN scores make it (and the row) NaN.
        let m = s.iter().fold(f64::NEG_INFINITY, |m, &x| {
            if x.is_nan() || m.is_nan() {
                f64::NAN
            } else {
                m.max(x)
            }
        });
        let p: Vec<f64> = s.iter().map(|&x| (x - m).exp()).collect();
        let l: f64 = p.iter().sum();
        for c in 0..d {
            let mut acc = 0.0;
            let mut a = 0.0;
            for j in 0..nkv {
                acc += p[j] * v[j * d + c];
                a += (p[j] * v[j * d + c]).abs();
            }
            o[i * d + c] = acc / l;
            mag[i * d + c] = a / l;
        }
    }
    (o, mag)
}

fn attention_case<T: TcElem + bytemuck::Pod + Default>(
    gpu: &Gpu,
    dtype: DType,
    to: fn(f64) -> T,
    from: fn(T) -> f64,
) {
    let mut rng = SmallRng::seed_from_u64(3);
    let d = 64;
    for (nq, nkv) in [(77, 91), (300, 513)] {
        let mut q: Vec<f64> = (0..nq * d).map(|_| rng.random_range(-1.0..1.0)).collect();
        let mut k: Vec<f64> = (0..nkv * d).map(|_| rng.random_range(-1.0..1.0)).collect();
        let mut v: Vec<f64> = (0..nkv * d).map(|_| rng.random_range(-1.0..1.0)).collect();
        q[2 * d + 9] = f64::NAN; // O row 2: NaN
        v[5 * d + 3] = f64::INFINITY; // O column 3: +Inf (every p > 0)
        v[6 * d + 4] = f64::NEG_INFINITY; // O column 4: −Inf
                                          // A key with an infinite component: rows whose score for it is +Inf get NaN
                                          // (exp(Inf − Inf)); rows where it is −Inf ignore that key.
        k[11 * d + 1] = f64::INFINITY;
        q[40 * d + 1] = -0.5; // row 40: −Inf score for key 11, finite row
        q[41 * d + 1] = 0.5; // row 41: +Inf score, NaN row
        let qt: Vec<T> = q.iter().map(|&x| to(x)).collect();
        let kt: Vec<T> = k.iter().map(|&x| to(x)).collect();
        let vt: Vec<T> = v.iter().map(|&x| to(x)).collect();
        let q: Vec<f64> = qt.iter().map(|&x| from(x)).collect();
        let k: Vec<f64> = kt.iter().map(|&x| from(x)).collect();
        let v: Vec<f64> = vt.iter().map(|&x| from(x)).collect();
        let (want, mag) = attention_reference(&q, &k, &v, nq, nkv, d);
        let shape = attention::Shape::new(1, nq, nkv, 1, 1, d);
        let (dq, dk, dv) = (
            gpu.upload(&qt, "Q").unwrap(),
            gpu.upload(&kt, "K").unwrap(),
            gpu.upload(&vt, "V").unwrap(),
        );
        let mut o = gpu.upload(&vec![to(f64::NAN); nq * d], "O").unwrap();
        let ran = api::attention(gpu, &shape, &dq, &dk, &dv, &mut o, Default::default()).unwrap();
        let got: Vec<f64> = gpu
            .download(&o, "O")
            .unwrap()
            .iter()
            .map(|&x| from(x))
            .collect();
        // P is rounded to the input dtype before P·V on the tensor cores: the input's ulp
        // relative to Σ p|v|, plus the output's rounding.
        let bound: Vec<f64> = mag
            .iter()
            .zip(&want)
            .map(|(&s, &w)| 4.0 * out_ulp(dtype) * (s + w.abs()) + 1e-6)
            .collect();
        check(
            &format!("attention {} {nq}×{nkv}×{d} ({ran:?})", dtype.name()),
            &got,
            &want,
            &bound,
        );
    }
}

#[test]
#[ignore = "needs a GPU"]
fn attention_propagates_nan_and_inf() {
    let gpu = gpu();
    attention_case::<f16>(&gpu, DType::F16, f16::from_f64, f16::to_f64);
    attention_case::<bf16>(&gpu, DType::Bf16, bf16::from_f64, bf16::to_f64);
}

// --- Conv -------------------------------------------------------------------------------

fn conv_case<T: DeviceElem + bytemuck::Pod + Default>(
    gpu: &Gpu,
    dtype: DType,
    to: fn(f64) -> T,
    from: fn(T) -> f64,
) {
    let mut rng = SmallRng::seed_from_u64(4);
    let (n, h, w, c, kk) = (2, 13, 11, 32, 40);
    let p = conv::Problem::new(n, h, w, c, kk, 3, 1, dtype);
    let mut x: Vec<f64> = (0..n * h * w * c)
        .map(|_| rng.random_range(-1.0..1.0))
        .collect();
    let mut wt: Vec<f64> = (0..kk * 9 * c)
        .map(|_| rng.random_range(-1.0..1.0))
        .collect();
    x[(3 * w + 4) * c + 2] = f64::NAN; // image 0: a 3×3 patch of every channel is NaN
    wt[(7 * 9 + 4) * c + 5] = f64::INFINITY; // output channel 7: ±Inf by x's sign
    x[((h + 6) * w + 6) * c + 9] = f64::NEG_INFINITY; // image 1: a patch of ∓Inf by w's sign
    let xt: Vec<T> = x.iter().map(|&v| to(v)).collect();
    let wtt: Vec<T> = wt.iter().map(|&v| to(v)).collect();
    let x: Vec<f64> = xt.iter().map(|&b| from(b)).collect();
    let wt: Vec<f64> = wtt.iter().map(|&b| from(b)).collect();
    let bias: Vec<f32> = (0..kk).map(|j| 0.125 * j as f32 - 2.0).collect();
    // y[n, p, q, k] = relu(Σ x · w + bias), padding 1 (zeros outside), ReLU keeping NaN.
    let mut want = vec![0.0; n * h * w * kk];
    let mut mag = vec![0.0; n * h * w * kk];
    for b in 0..n {
        for oy in 0..h {
            for ox in 0..w {
                for k in 0..kk {
                    let (mut acc, mut m) = (0.0f64, 0.0f64);
                    for r in 0..3 {
                        for s in 0..3 {
                            let (iy, ix) = (oy + r, ox + s); // padded coordinates
                            if iy < 1 || ix < 1 || iy > h || ix > w {
                                continue;
                            }
                            for ch in 0..c {
                                let xv = x[((b * h + iy - 1) * w + ix - 1) * c + ch];
                                let wv = wt[((k * 3 + r) * 3 + s) * c + ch];
                                acc += xv * wv;
                                m += (xv * wv).abs();
                            }
                        }
                    }
                    let y = acc + bias[k] as f64;
                    let i = ((b * h + oy) * w + ox) * kk + k;
                    want[i] = if y < 0.0 { 0.0 } else { y };
                    mag[i] = m;
                }
            }
        }
    }
    let dx = gpu.upload(&xt, "x").unwrap();
    let dw = gpu.upload(&wtt, "w").unwrap();
    let db = gpu.upload(&bias, "bias").unwrap();
    let mut dy = gpu.upload(&vec![to(f64::NAN); want.len()], "y").unwrap();
    let ran = api::conv2d(gpu, &p, &dx, &dw, Some(&db), &mut dy).unwrap();
    let got: Vec<f64> = gpu
        .download(&dy, "y")
        .unwrap()
        .iter()
        .map(|&b| from(b))
        .collect();
    let kred = 9 * c;
    let bound: Vec<f64> = mag
        .iter()
        .zip(&want)
        .map(|(&s, &w)| 2.0 * (kred as f64 * U32 * s + out_ulp(dtype) * w.abs()) + 1e-30)
        .collect();
    let what = format!("conv2d {} {n}×{h}×{w}×{c}→{kk} 3×3 ({ran:?})", dtype.name());
    check_classes(&what, &got, &want, &bound, false); // ReLU: −Inf becomes 0
}

#[test]
#[ignore = "needs a GPU"]
fn conv_propagates_nan_and_inf() {
    let gpu = gpu();
    conv_case::<f16>(&gpu, DType::F16, f16::from_f64, f16::to_f64);
    conv_case::<bf16>(&gpu, DType::Bf16, bf16::from_f64, bf16::to_f64);
}

// --- Memory family ----------------------------------------------------------------------

#[test]
#[ignore = "needs a GPU"]
fn copy_and_transpose_move_special_values_bit_for_bit() {
    let gpu = gpu();
    let specials: [u32; 8] = [
        0x7fc0_0001, // quiet NaN with a payload
        0xffbf_ffff, // signalling NaN, sign set
        0x7f80_0000, // +Inf
        0xff80_0000, // −Inf
        0x8000_0000, // −0
        0x0000_0001, // smallest subnormal
        0x807f_ffff, // largest negative subnormal
        0x7f7f_ffff, // largest finite
    ];
    let (rows, cols) = (1001, 515);
    let src: Vec<f32> = (0..rows * cols)
        .map(|i| {
            // The NaN's payload varies too.
            let payload = if i % 8 == 0 { (i as u32 / 8) & 0xff } else { 0 };
            f32::from_bits(specials[i % 8] ^ payload)
        })
        .collect();
    let d = gpu.upload(&src, "src").unwrap();
    let mut out = gpu.alloc::<f32>(src.len(), "dst").unwrap();
    api::copy(&gpu, &d, &mut out).unwrap();
    let got = gpu.download(&out, "dst").unwrap();
    assert!(
        got.iter()
            .zip(&src)
            .all(|(a, b)| a.to_bits() == b.to_bits()),
        "copy changed bits"
    );
    api::transpose(&gpu, rows, cols, &d, &mut out).unwrap();
    let got = gpu.download(&out, "dst").unwrap();
    for r in 0..rows {
        for c in 0..cols {
            assert_eq!(
                got[c * rows + r].to_bits(),
                src[r * cols + c].to_bits(),
                "transpose ({r}, {c})"
            );
        }
    }
    // f16: NaN payloads, infinities, −0, subnormals.
    let h: Vec<f16> = (0..rows * cols)
        .map(|i| {
            f16::from_bits(
                [
                    0x7e01u16, 0xfc00, 0x7c00, 0x8000, 0x0001, 0x83ff, 0x7bff, 0xfd55,
                ][i % 8],
            )
        })
        .collect();
    let d = gpu.upload(&h, "src").unwrap();
    let mut out = gpu.alloc::<f16>(h.len(), "dst").unwrap();
    api::transpose(&gpu, rows, cols, &d, &mut out).unwrap();
    let got = gpu.download(&out, "dst").unwrap();
    for r in 0..rows {
        for c in 0..cols {
            assert_eq!(
                got[c * rows + r].to_bits(),
                h[r * cols + c].to_bits(),
                "f16 transpose ({r}, {c})"
            );
        }
    }
    println!("copy and transpose moved NaN payloads, ±Inf, −0 and subnormals bit for bit");
}
