//! `rustile bench memory`: the vectorised memory kernels against their floors, interleaved
//! rep by rep in one process ([`harness::time_all`]), so every ratio compares runs at one
//! clock.
//!
//! - Copy: the dispatcher's copy ([`crate::copy::BEST`]) against `cuMemcpyDtoD` on the same
//!   buffers (the same addresses, so a view is compared with a memcpy of that view), f32 and
//!   f16, at [`COPY_LENGTHS`] (fresh allocations), plus 2²⁴ + 3 elements at a common odd offset
//!   and at different offsets.
//! - Transpose: the dispatcher's transpose ([`crate::transpose::best_for`]) and the
//!   one-element tile it replaced (f16; bf16 has none), f16 and bf16, at [`TRANSPOSE_SHAPES`], against the dispatcher's copy of
//!   the same bytes (the acceptance floor) and `cuMemcpyDtoD`.
//!
//! Every kernel's output is checked bit for bit against the host reference (outputs poisoned
//! first) before it is timed; inputs rotate through sets past 3× the L2.

use cudarc::driver::CudaSlice;
use rand::rngs::SmallRng;
use rand::SeedableRng;
use rustile_kernels::registry::{DType, KernelInfo};
use rustile_kernels::transpose::{v03_smem_padded, v05_sector_aligned};

use crate::check;
use crate::dispatch_dtype;
use crate::elem::{random_vec, DeviceElem};
use crate::error::{DriverContext, Result};
use crate::families::copy::{self, CopyProblem};
use crate::families::transpose::{self, TransposeProblem};
use crate::gpu::Gpu;
use crate::harness::{self, L2Mode, Stats, TimingConfig};

/// Copy lengths timed (elements): around 2²⁰, odd, and up to 1 GiB of f32.
pub const COPY_LENGTHS: [usize; 5] = [1 << 20, (1 << 20) + 1, (1 << 24) + 3, 100_000_007, 1 << 28];
/// Transpose shapes timed `(rows, cols)`.
pub const TRANSPOSE_SHAPES: [(usize, usize); 3] = [(4096, 4096), (8192, 8192), (8191, 8193)];
/// Length of the offset copy rows.
pub const OFFSET_LENGTH: usize = (1 << 24) + 3;

/// One timed kernel against its floors.
#[derive(Clone, Debug, serde::Serialize)]
pub struct AcceptRow {
    /// `copy` or `transpose`.
    pub what: &'static str,
    /// dtype name.
    pub dtype: &'static str,
    /// Shape, with the element offsets of `src`/`dst` for views (`n=… src+1 dst+1`).
    pub shape: String,
    /// `family/variant` timed.
    pub kernel: String,
    /// Useful bytes per launch (read + written).
    pub bytes: u64,
    /// Median µs of the kernel.
    pub kernel_us: f64,
    /// Useful GB/s of the kernel.
    pub gbps: f64,
    /// Kernel time over `cuMemcpyDtoD`'s on the same bytes (≥ 1 is faster): `memcpy_us /
    /// kernel_us`.
    pub vs_memcpy: f64,
    /// For transposes, over the dispatcher's copy of the same bytes; 0 for copies.
    pub vs_copy: f64,
    /// The kernel's event-time statistics.
    pub stats: Stats,
}

impl crate::results::ResultRow for AcceptRow {
    fn id(&self) -> crate::results::RowId {
        crate::results::RowId {
            kernel: self.kernel.clone(),
            dtype: self.dtype.into(),
            dims: vec![("bytes", self.bytes)],
            tags: vec![format!("{}={}", self.what, self.shape)],
        }
    }
    fn time(&self) -> Option<&Stats> {
        Some(&self.stats)
    }
}

/// Runs every row; `progress` hears about each before it runs.
pub fn run(
    gpu: &Gpu,
    timing: &TimingConfig,
    seed: u64,
    mut progress: impl FnMut(&str),
) -> Result<Vec<AcceptRow>> {
    let cfg = TimingConfig {
        mode: L2Mode::Rotate,
        ..*timing
    };
    cfg.check()?;
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut rows = Vec::new();
    for dtype in [DType::F32, DType::F16] {
        for n in COPY_LENGTHS {
            progress(&format!("copy {} n={n}", dtype.name()));
            dispatch_dtype!(dtype, T => copy_rows::<T>(gpu, &cfg, n, &[(0, 0)], &mut rng, &mut rows))?;
        }
        progress(&format!(
            "copy {} n={OFFSET_LENGTH} at offsets",
            dtype.name()
        ));
        let offsets = [(1, 1), (1, 0), (0, 3)];
        dispatch_dtype!(dtype, T => copy_rows::<T>(gpu, &cfg, OFFSET_LENGTH, &offsets, &mut rng, &mut rows))?;
    }
    for dtype in [DType::F16, DType::Bf16] {
        for (r, c) in TRANSPOSE_SHAPES {
            progress(&format!("transpose {} {r}x{c}", dtype.name()));
            let p = TransposeProblem { rows: r, cols: c };
            dispatch_dtype!(dtype, T => transpose_rows::<T>(gpu, &cfg, &p, &mut rng, &mut rows))?;
        }
    }
    Ok(rows)
}

/// Input sets (the same random input in each) and poisoned outputs of `n + pad` elements.
struct Sets<T> {
    src: Vec<CudaSlice<T>>,
    dst: Vec<CudaSlice<T>>,
    host: Vec<T>,
}

fn sets<T: DeviceElem>(gpu: &Gpu, n: usize, pad: usize, rng: &mut SmallRng) -> Result<Sets<T>> {
    let elem = std::mem::size_of::<T>();
    let len = n + pad;
    let set = check::total_bytes("memory bench", &[(len, elem), (len, elem)])?;
    let count = harness::rotation_sets(gpu.info().l2_bytes, set as u64);
    gpu.check_fits(
        set * count,
        &format!("memory bench: {count} sets of {set} bytes"),
    )?;
    let host: Vec<T> = random_vec(len, rng);
    let mut s = Sets {
        src: Vec::new(),
        dst: Vec::new(),
        host,
    };
    for _ in 0..count {
        s.src.push(gpu.upload(&s.host, "bench input")?);
        let mut d = gpu.alloc::<T>(len, "bench output")?;
        gpu.fill(&mut d, T::POISON, "bench output")?;
        s.dst.push(d);
    }
    Ok(s)
}

fn copy_rows<T: DeviceElem>(
    gpu: &Gpu,
    cfg: &TimingConfig,
    n: usize,
    offsets: &[(usize, usize)],
    rng: &mut SmallRng,
    rows: &mut Vec<AcceptRow>,
) -> Result<()> {
    let pad = offsets.iter().map(|&(a, b)| a.max(b)).max().unwrap_or(0);
    let mut s = sets::<T>(gpu, n, pad, rng)?;
    let kernel = copy::BEST;
    let name = check::kernel_name(kernel);
    let p = CopyProblem { n };
    let count = s.src.len();
    for &(so, d) in offsets {
        let shape = if (so, d) == (0, 0) {
            p.shape()
        } else {
            format!("{} src+{so} dst+{d}", p.shape())
        };
        gpu.fill(&mut s.dst[0], T::POISON, "bench output")?;
        copy::launch(
            gpu,
            kernel,
            &p,
            &s.src[0].slice(so..so + n),
            &mut s.dst[0].slice_mut(d..d + n),
        )?;
        let got = gpu.download(&s.dst[0], "bench output")?;
        check::exact(&name, &shape, &got[d..d + n], &s.host[so..so + n])?;
        let (src, dst) = (&s.src, &mut s.dst);
        let dst = std::cell::RefCell::new(dst);
        let mut ours = |i: usize| {
            let mut dst = dst.borrow_mut();
            copy::launch(
                gpu,
                kernel,
                &p,
                &src[i % count].slice(so..so + n),
                &mut dst[i % count].slice_mut(d..d + n),
            )
        };
        let mut memcpy = |i: usize| {
            let mut dst = dst.borrow_mut();
            let mut view = dst[i % count].slice_mut(d..d + n);
            gpu.stream()
                .memcpy_dtod(&src[i % count].slice(so..so + n), &mut view)
                .during(|| "cuMemcpyDtoD baseline".into())
        };
        let [k, m] = harness::time_all(gpu, cfg, [&mut ours, &mut memcpy])?;
        rows.push(row::<T>(
            "copy",
            shape,
            name.clone(),
            p.bytes_moved(size::<T>()),
            &k,
            &m,
            None,
        ));
    }
    Ok(())
}

fn size<T>() -> usize {
    std::mem::size_of::<T>()
}

fn row<T: DeviceElem>(
    what: &'static str,
    shape: String,
    kernel: String,
    bytes: u64,
    k: &Stats,
    memcpy: &Stats,
    copy: Option<&Stats>,
) -> AcceptRow {
    AcceptRow {
        what,
        dtype: T::DTYPE.name(),
        shape,
        kernel,
        bytes,
        kernel_us: k.median_ms * 1e3,
        gbps: bytes as f64 / (k.median_ms * 1e-3) / 1e9,
        vs_memcpy: memcpy.median_ms / k.median_ms,
        vs_copy: copy.map_or(0.0, |c| c.median_ms / k.median_ms),
        stats: *k,
    }
}

/// The one-element tile the dispatcher used for 2-byte elements before `pairs`.
fn previous_best(p: &TransposeProblem) -> &'static KernelInfo {
    if (p.rows * 2).is_multiple_of(32) {
        &v03_smem_padded::INFO
    } else {
        &v05_sector_aligned::INFO
    }
}

fn transpose_rows<T: DeviceElem>(
    gpu: &Gpu,
    cfg: &TimingConfig,
    p: &TransposeProblem,
    rng: &mut SmallRng,
    rows: &mut Vec<AcceptRow>,
) -> Result<()> {
    let (n, _) = p.lens()?;
    let best = transpose::best_for(p, T::DTYPE);
    // The one-element tile it replaced, where one is built for `T` (none for bf16).
    let old = match previous_best(p) {
        k if k.symbol(T::DTYPE).is_some() => k,
        _ => best,
    };
    let mut kernels = vec![best];
    if old.name != best.name {
        kernels.push(old);
    }
    for k in &kernels {
        p.check::<T>(
            k,
            check::BufArg::new("src", n, 0),
            check::BufArg::new("dst", n, 0),
        )?;
    }
    let mut s = sets::<T>(gpu, n, 0, rng)?;
    let want = p.reference(&s.host);
    let shape = p.shape();
    for k in &kernels {
        gpu.fill(&mut s.dst[0], T::POISON, "bench output")?;
        transpose::launch(gpu, k, p, &s.src[0], &mut s.dst[0])?;
        let got = gpu.download(&s.dst[0], "bench output")?;
        check::exact(&check::kernel_name(k), &shape, &got, &want)?;
    }
    let count = s.src.len();
    let cp = CopyProblem { n };
    let (src, dst) = (&s.src, std::cell::RefCell::new(&mut s.dst));
    let launch_t = |k: &'static KernelInfo| {
        let dst = &dst;
        move |i: usize| {
            transpose::launch(gpu, k, p, &src[i % count], &mut dst.borrow_mut()[i % count])
        }
    };
    let mut t_best = launch_t(best);
    let mut t_old = launch_t(old);
    let mut t_copy = |i: usize| {
        copy::launch(
            gpu,
            copy::BEST,
            &cp,
            &src[i % count],
            &mut dst.borrow_mut()[i % count],
        )
    };
    let mut t_memcpy = |i: usize| {
        let mut d = dst.borrow_mut();
        gpu.stream()
            .memcpy_dtod(&src[i % count], &mut d[i % count])
            .during(|| "cuMemcpyDtoD baseline".into())
    };
    let [sb, so, sc, sm] = harness::time_all(
        gpu,
        cfg,
        [&mut t_best, &mut t_old, &mut t_copy, &mut t_memcpy],
    )?;
    let bytes = p.bytes_moved(size::<T>());
    rows.push(row::<T>(
        "transpose",
        shape.clone(),
        check::kernel_name(best),
        bytes,
        &sb,
        &sm,
        Some(&sc),
    ));
    if old.name != best.name {
        rows.push(row::<T>(
            "transpose",
            shape.clone(),
            check::kernel_name(old),
            bytes,
            &so,
            &sm,
            Some(&sc),
        ));
    }
    rows.push(row::<T>(
        "copy",
        format!("n={n} (the transpose's bytes)"),
        check::kernel_name(copy::BEST),
        bytes,
        &sc,
        &sm,
        Some(&sc),
    ));
    Ok(())
}

/// Renders rows as a markdown table.
pub fn markdown(rows: &[AcceptRow]) -> String {
    let mut s = String::from(
        "| what | dtype | shape | kernel | median µs | GB/s | × cuMemcpyDtoD | × copy |\n\
         | --- | --- | --- | --- | ---: | ---: | ---: | ---: |\n",
    );
    for r in rows {
        let vs_copy = if r.vs_copy > 0.0 {
            format!("{:.3}", r.vs_copy)
        } else {
            "—".into()
        };
        s += &format!(
            "| {} | {} | {} | {} | {:.1} | {:.0} | {:.3} | {vs_copy} |\n",
            r.what, r.dtype, r.shape, r.kernel, r.kernel_us, r.gbps, r.vs_memcpy
        );
    }
    s
}
