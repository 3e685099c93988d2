//! Tensor-core self-test: runs `kernels-rs/src/selftest.rs` (cp.async → ldmatrix, plain and
//! transposed → mma.sync m16n8k16) on either back end and checks it against float64.

use cudarc::driver::{LaunchConfig, PushKernelArg};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rustile_kernels::gpu::MmaKind;
use rustile_kernels::selftest::{SHARED_BYTES, SYMBOLS, THREADS};

use crate::backend::{Backend, Buf};
use crate::error::{DriverContext, Error, Result};
use crate::sim::SimLaunch;

/// Inputs of one self-test run.
#[derive(Clone, Debug)]
pub struct TcInputs {
    /// A, 16×16 row-major, element bits.
    pub a: Vec<u16>,
    /// B, 16×8 row-major, element bits.
    pub b: Vec<u16>,
    /// C, 16×8 row-major.
    pub c: Vec<f32>,
}

fn to_f64(kind: MmaKind, bits: u16) -> f64 {
    match kind {
        MmaKind::F16 => half::f16::from_bits(bits).to_f64(),
        MmaKind::Bf16 => half::bf16::from_bits(bits).to_f64(),
    }
}

fn from_f32(kind: MmaKind, v: f32) -> u16 {
    match kind {
        MmaKind::F16 => half::f16::from_f32(v).to_bits(),
        MmaKind::Bf16 => half::bf16::from_f32(v).to_bits(),
    }
}

impl TcInputs {
    /// Random inputs: small integers (every product and sum exact in f32, so every back end must
    /// agree bit for bit) or uniform values in [-1, 1).
    pub fn random(kind: MmaKind, integers: bool, seed: u64) -> Self {
        let mut rng = SmallRng::seed_from_u64(seed);
        let mut v = |_| {
            if integers {
                rng.random_range(-4i32..=4) as f32
            } else {
                rng.random_range(-1.0f32..1.0)
            }
        };
        let a = (0..256).map(|i| from_f32(kind, v(i))).collect();
        let b = (0..128).map(|i| from_f32(kind, v(i))).collect();
        let c = (0..128).map(&mut v).collect();
        Self { a, b, c }
    }

    /// `A·B + C` in float64, 16×8 row-major.
    pub fn reference(&self, kind: MmaKind) -> Vec<f64> {
        (0..128)
            .map(|i| {
                let (row, col) = (i / 8, i % 8);
                (0..16)
                    .map(|k| to_f64(kind, self.a[row * 16 + k]) * to_f64(kind, self.b[k * 8 + col]))
                    .sum::<f64>()
                    + self.c[i] as f64
            })
            .collect()
    }

    fn b_transposed(&self) -> Vec<u16> {
        (0..128).map(|i| self.b[(i % 16) * 8 + i / 16]).collect()
    }
}

/// Length of the self-test's output: four routes to the same 16 × 8 product.
pub const D_LEN: usize = 512;

/// Runs the self-test kernel for `kind` and returns `d`: the product through `Bᵀ` and plain
/// `ldmatrix.x2` (elements 0..128), through `B` and `ldmatrix.x2.trans` (128..256), through `Bᵀ`
/// and two `ldmatrix.x1` (256..384), through `B` and two `ldmatrix.x1.trans` (384..512).
pub fn run(backend: &Backend, kind: MmaKind, inputs: &TcInputs) -> Result<Vec<f32>> {
    let want = match kind {
        MmaKind::F16 => rustile_kernels::registry::DType::F16,
        MmaKind::Bf16 => rustile_kernels::registry::DType::Bf16,
    };
    let (symbol, sim_entry) = SYMBOLS
        .iter()
        .find(|e| e.dtype == want)
        .map(|e| (e.symbol, e.sim))
        .ok_or_else(|| Error::Usage(format!("no self-test for {kind:?}")))?;
    let a = backend.upload(&inputs.a, "A")?;
    let bt = backend.upload(&inputs.b_transposed(), "Bᵀ")?;
    let b = backend.upload(&inputs.b, "B")?;
    let c = backend.upload(&inputs.c, "C")?;
    let d = backend.filled(D_LEN, f32::NAN, "D")?;
    match (backend, &a, &bt, &b, &c, &d) {
        (Backend::Gpu(gpu), Buf::Gpu(a), Buf::Gpu(bt), Buf::Gpu(b), Buf::Gpu(c), Buf::Gpu(d)) => {
            let f = gpu.function(symbol)?;
            let mut d = d.clone();
            let mut args = gpu.stream().launch_builder(&f);
            args.arg(a).arg(bt).arg(b).arg(c).arg(&mut d);
            let cfg = LaunchConfig {
                grid_dim: (1, 1, 1),
                block_dim: (THREADS, 1, 1),
                shared_mem_bytes: SHARED_BYTES as u32,
            };
            // SAFETY: the kernel is `(a, bt, b: *const u16, c: *const f32, d: *mut f32)` with 256,
            // 128, 128, 128 and D_LEN (512) elements, which these buffers hold; one warp; the shared bytes
            // it addresses.
            unsafe { args.launch(cfg) }.during(|| format!("launching {symbol}"))?;
            gpu.download(&d, "D")
        }
        (
            Backend::Simulator(sim),
            Buf::Sim(a),
            Buf::Sim(bt),
            Buf::Sim(b),
            Buf::Sim(c),
            Buf::Sim(d),
        ) => {
            let launch = SimLaunch {
                grid: (1, 1, 1),
                block: (THREADS, 1, 1),
                shared_bytes: SHARED_BYTES,
            };
            sim.launch(
                symbol,
                sim_entry,
                &launch,
                &[a.addr(), bt.addr(), b.addr(), c.addr(), d.addr()],
            )?;
            sim.read(d)
        }
        _ => unreachable!("every buffer came from `backend`"),
    }
}

/// Largest `|got − want| / max(1, |want|)` over every route's 128 elements of `d`; NaN counts as infinite.
pub fn max_error(d: &[f32], want: &[f64]) -> f64 {
    d.iter()
        .enumerate()
        .map(|(i, &g)| {
            let w = want[i % 128];
            let e = (g as f64 - w).abs() / w.abs().max(1.0);
            if e.is_nan() {
                f64::INFINITY
            } else {
                e
            }
        })
        .fold(0.0, f64::max)
}

/// The Hopper primitives' self-test on the GPU (`kernels-rs/src/selftest.rs`, `hopper`):
/// mbarrier init / expect-tx / parity wait, two TMA tile loads with 128B swizzle from tensor
/// maps in device memory, four `wgmma.m64n128k16` steps through matrix descriptors, commit and
/// wait; then the result stored twice, from registers and through two TMA stores of a shared
/// staging tile. Small-integer inputs, so both 64 × 128 results must equal the float64
/// reference exactly. Returns the number of elements compared.
pub fn hopper_selftest(gpu: &crate::Gpu, seed: u64) -> Result<usize> {
    use crate::tma::{tensor_map_2d, tensor_map_2d_of, upload_maps};
    use cudarc::driver::DevicePtr;
    use rustile_kernels::registry::DType;
    use rustile_kernels::selftest::hopper;
    if gpu.flavour() != crate::ptx::Flavour::Sm90a {
        return Err(Error::Unsupported {
            kernel: hopper::SYMBOL.into(),
            what: "needs compute capability 9.0 (sm_90a PTX)".into(),
        });
    }
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut small = || half::f16::from_f32(rng.random_range(-4i32..=4) as f32).to_bits();
    let a: Vec<u16> = (0..64 * 64).map(|_| small()).collect();
    let bt: Vec<u16> = (0..128 * 64).map(|_| small()).collect();
    let da = gpu.upload(&a, "A")?;
    let dbt = gpu.upload(&bt, "Bt")?;
    let stream = gpu.stream();
    let [box_a, box_b, box_d] = hopper::BOXES;
    let mut d = gpu.alloc::<f32>(64 * 128, "D")?;
    gpu.fill(&mut d, f32::NAN, "D")?;
    let mut d_tma = gpu.alloc::<f32>(64 * 128, "D (TMA)")?;
    gpu.fill(&mut d_tma, f32::NAN, "D (TMA)")?;
    let maps = upload_maps(
        gpu,
        &[
            tensor_map_2d(DType::F16, da.device_ptr(stream).0, 64, 64, 64, box_a)?,
            tensor_map_2d(DType::F16, dbt.device_ptr(stream).0, 64, 128, 64, box_b)?,
            tensor_map_2d_of(
                DType::F32,
                false,
                d_tma.device_ptr(stream).0,
                128,
                64,
                128,
                box_d,
            )?,
        ],
    )?;
    let f = gpu.function(hopper::SYMBOL)?;
    {
        use cudarc::driver::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES as MAX_DYN;
        f.set_attribute(MAX_DYN, hopper::SHARED_BYTES as i32)
            .during(|| "raising the Hopper self-test's shared memory".into())?;
    }
    let cfg = LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (hopper::THREADS, 1, 1),
        shared_mem_bytes: hopper::SHARED_BYTES as u32,
    };
    let mut args = stream.launch_builder(&f);
    args.arg(&maps).arg(&mut d).arg(&mut d_tma);
    // SAFETY: the kernel takes (maps, d, d_tma): tensor maps for the 64×64 and 128×64 inputs
    // and for `d_tma` in `maps`, and 64·128 floats in `d` and in `d_tma` (which it writes only
    // through its map); one block of THREADS threads with SHARED_BYTES.
    unsafe { args.launch(cfg) }.during(|| format!("launching {}", hopper::SYMBOL))?;
    let w = |bits: u16| half::f16::from_bits(bits).to_f64();
    let mut n = 0;
    for (name, buf) in [("D", &d), ("D through TMA stores", &d_tma)] {
        let got = gpu.download(buf, name)?;
        for i in 0..64 {
            for j in 0..128 {
                let want: f64 = (0..64).map(|k| w(a[i * 64 + k]) * w(bt[j * 64 + k])).sum();
                let g = got[i * 128 + j] as f64;
                if g != want {
                    return Err(Error::Mismatch {
                        kernel: hopper::SYMBOL.into(),
                        shape: "64x128x64".into(),
                        detail: format!("{name}[{i}][{j}] = {g}, exact {want}"),
                    });
                }
                n += 1;
            }
        }
    }
    Ok(n)
}
