//! SGEMM family: `C = α·A·B + β·C`, f32, row-major with leading dimensions.

use cudarc::cublas::{CudaBlas, Gemm, GemmConfig};
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut, DeviceSlice, PushKernelArg};
use rand::rngs::SmallRng;
use rand::SeedableRng;
use rustile_kernels::gemm::{v05_blocktile_2d, v08_warptile, v11_nt_pipeline, v12_kgroup_ring};
use rustile_kernels::registry::{DType, Family, KernelInfo};

use crate::api::range::Range;
use crate::backend::{Backend, Buf};
use crate::check::{self, BufArg};
use crate::elem::random_vec;
use crate::error::{DriverContext, Error, Result};
use crate::gpu::Gpu;
use crate::sim::SimLaunch;

/// One SGEMM problem.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GemmProblem {
    /// Rows of A and C.
    pub m: usize,
    /// Columns of B and C.
    pub n: usize,
    /// Columns of A, rows of B.
    pub k: usize,
    /// Row pitch of A (≥ k).
    pub lda: usize,
    /// Row pitch of B (≥ n).
    pub ldb: usize,
    /// Row pitch of C (≥ n).
    pub ldc: usize,
    /// α.
    pub alpha: f32,
    /// β (0: C is not read).
    pub beta: f32,
}

impl GemmProblem {
    /// `C = A·B`, tight leading dimensions.
    pub fn new(m: usize, n: usize, k: usize) -> Self {
        Self {
            m,
            n,
            k,
            lda: k,
            ldb: n,
            ldc: n,
            alpha: 1.0,
            beta: 0.0,
        }
    }

    /// Shape, as text.
    pub fn shape(&self) -> String {
        let mut s = format!("{}x{}x{}", self.m, self.n, self.k);
        if (self.lda, self.ldb, self.ldc) != (self.k, self.n, self.n) {
            s += &format!(" ld {}/{}/{}", self.lda, self.ldb, self.ldc);
        }
        s
    }

    /// `2·M·N·K`.
    pub fn flops(&self) -> f64 {
        2.0 * self.m as f64 * self.n as f64 * self.k as f64
    }

    /// Elements A, B, C must hold: `(rows − 1)·ld + cols`.
    pub fn lens(&self) -> (usize, usize, usize) {
        let span = |rows: usize, ld: usize, cols: usize| {
            rows.saturating_sub(1)
                .saturating_mul(ld)
                .saturating_add(cols)
        };
        (
            span(self.m, self.lda, self.k),
            span(self.k, self.ldb, self.n),
            span(self.m, self.ldc, self.n),
        )
    }

    /// The same problem with `lda`, `ldb` rounded up to multiples of 4 (what the 16-byte-load
    /// variants need; the extra columns are padding).
    pub fn aligned(&self) -> Self {
        let up = |v: usize| v.div_ceil(4) * 4;
        Self {
            lda: up(self.lda),
            ldb: up(self.ldb),
            ..*self
        }
    }

    /// Whether `kernel` loads A and B in 16-byte vectors (needs aligned rows).
    pub fn vectorized(kernel: &KernelInfo) -> bool {
        kernel.shared_bytes_f32 > 0
            && !matches!(kernel.name, "smem" | "blocktile_1d" | "blocktile_2d")
    }

    /// Checks the arguments of `kernel`.
    pub fn check(&self, kernel: &KernelInfo, a: BufArg, b: BufArg, c: BufArg) -> Result<()> {
        let name = check::kernel_name(kernel);
        check::nonzero(kernel, self.m, "m")?;
        check::nonzero(kernel, self.n, "n")?;
        let bad_ld = |what: &str, ld: usize, min: usize| {
            Error::Usage(format!(
                "{name} {}: {what} = {ld} is less than the row length {min}",
                self.shape()
            ))
        };
        // The NT pipeline reads Aᵀ: K rows of at least M.
        let a_transposed = kernel.name == v11_nt_pipeline::INFO.name;
        let (a_rows, a_cols) = if a_transposed {
            (self.k, self.m)
        } else {
            (self.m, self.k)
        };
        if self.lda < a_cols {
            return Err(bad_ld("lda", self.lda, a_cols));
        }
        if self.ldb < self.n {
            return Err(bad_ld("ldb", self.ldb, self.n));
        }
        if self.ldc < self.n {
            return Err(bad_ld("ldc", self.ldc, self.n));
        }
        let limit = u32::MAX as usize - 256;
        for (what, v) in [
            ("m", self.m),
            ("n", self.n),
            ("k", self.k),
            ("lda", self.lda),
            ("ldb", self.ldb),
            ("ldc", self.ldc),
        ] {
            if v > limit {
                return Err(Error::TooLarge {
                    kernel: name.clone(),
                    what: format!("{what} = {v} exceeds the kernels' 32-bit indices"),
                });
            }
        }
        check::mul(kernel, self.m, self.lda, "A elements")?;
        check::mul(kernel, self.k, self.ldb, "B elements")?;
        check::mul(kernel, self.m, self.ldc, "C elements")?;
        let (_, lb, lc) = self.lens();
        let la = a_rows
            .saturating_sub(1)
            .saturating_mul(self.lda)
            .saturating_add(a_cols);
        let shape = self.shape();
        if self.k > 0 {
            check::at_least(kernel, a, la, &shape)?;
            check::at_least(kernel, b, lb, &shape)?;
        }
        check::at_least(kernel, c, lc, &shape)?;
        check::naturally_aligned::<f32>(kernel, &[a, b, c])?;
        if Self::vectorized(kernel) {
            if !self.lda.is_multiple_of(4) || !self.ldb.is_multiple_of(4) {
                return Err(Error::Usage(format!(
                    "{name} {shape}: 16-byte loads need lda and ldb multiples of 4 (got {} and {}); \
                     use gemm::dispatch, which pads",
                    self.lda, self.ldb
                )));
            }
            check::aligned(kernel, a, 16)?;
            check::aligned(kernel, b, 16)?;
        }
        Ok(())
    }

    /// Grid of `kernel`.
    pub fn grid(&self, kernel: &KernelInfo) -> (u64, u64, u64) {
        kernel
            .launch
            .tile_grid(self.m as u64, self.n as u64)
            .unwrap_or((0, 0, 0))
    }

    /// float64 reference of `α·A·B + β·C`.
    pub fn reference(&self, a: &[f32], b: &[f32], c: &[f32]) -> Vec<f64> {
        let mut out = vec![0.0f64; self.m * self.n];
        for i in 0..self.m {
            for kk in 0..self.k {
                let av = a[i * self.lda + kk] as f64;
                let brow = &b[kk * self.ldb..kk * self.ldb + self.n];
                for (o, &bv) in out[i * self.n..(i + 1) * self.n].iter_mut().zip(brow) {
                    *o += av * bv as f64;
                }
            }
            for j in 0..self.n {
                let o = &mut out[i * self.n + j];
                *o *= self.alpha as f64;
                if self.beta != 0.0 {
                    *o += self.beta as f64 * c[i * self.ldc + j] as f64;
                }
            }
        }
        out
    }

    /// Relative error tolerance for f32 accumulation over `k` terms.
    pub fn tolerance(&self) -> f64 {
        1e-6 * (self.k.max(1) as f64).sqrt()
    }

    fn scalars(&self) -> (u32, u32, u32, u32, u32, u32, f32, f32) {
        (
            self.m as u32,
            self.n as u32,
            self.k as u32,
            self.lda as u32,
            self.ldb as u32,
            self.ldc as u32,
            self.alpha,
            self.beta,
        )
    }
}

/// The variants of this family.
pub fn variants() -> impl Iterator<Item = &'static KernelInfo> {
    rustile_kernels::registry::of(Family::Gemm, rustile_kernels::registry::Role::Ladder)
}

/// The variant the dispatcher runs for `problem` on a GPU of `sm_count` SMs (measurements in
/// `bench-results/`): operands whose rows are not 16-byte multiples are padded first by
/// [`run`], so only the grid matters here. When the 128×128 tiles are fewer than the SMs, the
/// 128×64 k-group ring (twice the blocks, loads overlapped with the FMAs, 8 warps per tile);
/// otherwise the 128×128 warp tile.
pub fn dispatch(problem: &GemmProblem, sm_count: u32) -> &'static KernelInfo {
    let tiles = problem.m.div_ceil(128) * problem.n.div_ceil(128);
    if tiles < sm_count as usize {
        &v12_kgroup_ring::INFO
    } else {
        &v08_warptile::INFO
    }
}

/// Launches `kernel` on the GPU. Asynchronous.
pub fn launch(
    gpu: &Gpu,
    kernel: &KernelInfo,
    p: &GemmProblem,
    a: &impl DevicePtr<f32>,
    b: &impl DevicePtr<f32>,
    c: &mut impl DevicePtrMut<f32>,
) -> Result<()> {
    let stream = gpu.stream();
    let (la, lb, lc) = (a.len(), b.len(), c.len());
    let (pa, _ga) = a.device_ptr(stream);
    let (pb, _gb) = b.device_ptr(stream);
    let (pc, _gc) = c.device_ptr_mut(stream);
    p.check(
        kernel,
        BufArg {
            name: "a",
            len: la,
            addr: pa,
        },
        BufArg {
            name: "b",
            len: lb,
            addr: pb,
        },
        BufArg {
            name: "c",
            len: lc,
            addr: pc,
        },
    )?;
    let (f, cfg) = check::prepare(gpu, kernel, DType::F32, p.grid(kernel))?;
    let (m, n, k, lda, ldb, ldc, alpha, beta) = p.scalars();
    let mut args = stream.launch_builder(&f);
    args.arg(&pa)
        .arg(&pb)
        .arg(&pc)
        .arg(&m)
        .arg(&n)
        .arg(&k)
        .arg(&lda)
        .arg(&ldb)
        .arg(&ldc)
        .arg(&alpha)
        .arg(&beta);
    // SAFETY: every SGEMM kernel is `(a, b, c: pointers, m, n, k, lda, ldb, ldc: u32, alpha,
    // beta: f32)`; `check` proved A, B, C hold (rows − 1)·ld + cols elements with the alignment
    // the variant needs and that every dimension fits u32; the kernels mask rows, columns and k
    // outside the shape; the grid covers C; C is a distinct &mut borrow.
    unsafe { args.launch(cfg) }
        .during(|| format!("launching gemm/{} {}", kernel.name, p.shape()))?;
    Ok(())
}

/// Runs `kernel` on either back end.
pub fn launch_on(
    backend: &Backend,
    kernel: &KernelInfo,
    p: &GemmProblem,
    a: &Buf<f32>,
    b: &Buf<f32>,
    c: &mut Buf<f32>,
) -> Result<()> {
    match (backend, a, b, c) {
        (Backend::Gpu(gpu), Buf::Gpu(a), Buf::Gpu(b), Buf::Gpu(c)) => {
            launch(gpu, kernel, p, a, b, c)
        }
        (Backend::Simulator(sim), Buf::Sim(a), Buf::Sim(b), Buf::Sim(c)) => {
            p.check(
                kernel,
                BufArg {
                    name: "a",
                    len: a.len(),
                    addr: a.addr(),
                },
                BufArg {
                    name: "b",
                    len: b.len(),
                    addr: b.addr(),
                },
                BufArg {
                    name: "c",
                    len: c.len(),
                    addr: c.addr(),
                },
            )?;
            let entry = kernel
                .entry(DType::F32)
                .ok_or_else(|| Error::Usage(format!("gemm/{} has no f32 entry", kernel.name)))?;
            let (gx, gy, gz) = p.grid(kernel);
            let (m, n, k, lda, ldb, ldc, alpha, beta) = p.scalars();
            let args = [
                a.addr(),
                b.addr(),
                c.addr(),
                m as u64,
                n as u64,
                k as u64,
                lda as u64,
                ldb as u64,
                ldc as u64,
                alpha.to_bits() as u64,
                beta.to_bits() as u64,
            ];
            let launch = SimLaunch {
                grid: (gx as u32, gy as u32, gz as u32),
                block: kernel.block,
                shared_bytes: kernel.shared_bytes_f32,
            };
            sim.launch(&check::kernel_name(kernel), entry.sim, &launch, &args)
        }
        _ => Err(Error::Usage("buffers of another back end".into())),
    }
}

/// Relative Frobenius error `‖got − want‖ / ‖want‖` over C's `m × n` (NaN → infinite).
pub fn relative_error(p: &GemmProblem, got: &[f32], want: &[f64]) -> f64 {
    let (mut num, mut den) = (0.0f64, 0.0f64);
    for i in 0..p.m {
        for j in 0..p.n {
            let g = got[i * p.ldc + j] as f64;
            let w = want[i * p.n + j];
            num += (g - w) * (g - w);
            den += w * w;
        }
    }
    let e = num.sqrt() / den.sqrt().max(f64::MIN_POSITIVE);
    if e.is_nan() {
        f64::INFINITY
    } else {
        e
    }
}

/// Runs `kernel` once on fresh random A, B, C (C poisoned with NaN where β = 0 and between rows
/// where `ldc > n`) and checks it against the float64 reference. Returns the relative error.
pub fn validate(backend: &Backend, kernel: &KernelInfo, p: &GemmProblem, seed: u64) -> Result<f64> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let (la, lb, lc) = p.lens();
    let a: Vec<f32> = random_vec(la.max(1), &mut rng);
    let b: Vec<f32> = random_vec(lb.max(1), &mut rng);
    let c0: Vec<f32> = if p.beta == 0.0 {
        vec![f32::NAN; lc]
    } else {
        random_vec(lc, &mut rng)
    };
    let da = backend.upload(&a, "A")?;
    let db = backend.upload(&b, "B")?;
    let mut dc = backend.upload(&c0, "C")?;
    launch_on(backend, kernel, p, &da, &db, &mut dc)?;
    backend.synchronize("gemm")?;
    let got = backend.download(&dc, "C")?;
    let want = p.reference(&a, &b, &c0);
    let e = relative_error(p, &got, &want);
    // Elements between rows (ldc > n) must be untouched.
    for i in 0..p.m.saturating_sub(1) {
        for j in p.n..p.ldc {
            let idx = i * p.ldc + j;
            if got[idx].to_bits() != c0[idx].to_bits() {
                return Err(Error::Mismatch {
                    kernel: check::kernel_name(kernel),
                    shape: p.shape(),
                    detail: format!("wrote C[{i}][{j}], outside the n = {} columns", p.n),
                });
            }
        }
    }
    if e > p.tolerance() {
        return Err(Error::Mismatch {
            kernel: check::kernel_name(kernel),
            shape: p.shape(),
            detail: format!("relative error {e:.3e} > tolerance {:.3e}", p.tolerance()),
        });
    }
    Ok(e)
}

/// Shapes every SGEMM variant is validated at: not multiples of any tile, K = 1 and K = 0,
/// skinny, padded leading dimensions, β ≠ 0.
pub fn validation_problems() -> Vec<GemmProblem> {
    let mut v = vec![
        GemmProblem::new(1, 1, 1),
        GemmProblem::new(7, 5, 3),
        GemmProblem::new(33, 65, 17),
        GemmProblem::new(128, 128, 24),
        GemmProblem::new(130, 67, 45),
        GemmProblem::new(67, 260, 1),
        GemmProblem::new(200, 8, 64),
        GemmProblem::new(16, 16, 0),
    ];
    v.push(GemmProblem {
        alpha: 0.5,
        beta: -1.5,
        ..GemmProblem::new(129, 131, 36)
    });
    v.push(GemmProblem {
        lda: 52,
        ldb: 76,
        ldc: 75,
        alpha: 2.0,
        beta: 0.25,
        ..GemmProblem::new(70, 71, 50)
    });
    v
}

/// cuBLAS SGEMM (TF32 off: cuBLAS's default math mode) on row-major data: computes
/// `Cᵀ = Bᵀ·Aᵀ` in cuBLAS's column-major view.
pub fn cublas_sgemm(
    blas: &CudaBlas,
    p: &GemmProblem,
    a: &CudaSlice<f32>,
    b: &CudaSlice<f32>,
    c: &mut CudaSlice<f32>,
) -> Result<()> {
    use cudarc::cublas::sys::cublasOperation_t::CUBLAS_OP_N;
    let cfg = GemmConfig {
        transa: CUBLAS_OP_N,
        transb: CUBLAS_OP_N,
        m: p.n as i32,
        n: p.m as i32,
        k: p.k as i32,
        alpha: p.alpha,
        lda: p.ldb as i32,
        ldb: p.lda as i32,
        beta: p.beta,
        ldc: p.ldc as i32,
    };
    // SAFETY: the column-major view of row-major B (n × k, ld ldb), A (k × m, ld lda) and C
    // (n × m, ld ldc); the buffers hold those spans (the caller allocated them from `lens`).
    unsafe { blas.gemm(cfg, b, a, c) }
        .map_err(|e| Error::Usage(format!("cuBLAS SGEMM {}: {e:?}", p.shape())))
}

/// Parses `MxNxK` (or `N` for a cube).
pub fn parse_shape(text: &str) -> Result<GemmProblem> {
    let bad = || Error::Usage(format!("bad gemm shape `{text}`: want MxNxK or N"));
    let dims: Vec<usize> = text
        .split(['x', 'X'])
        .map(|s| s.trim().parse::<usize>().map_err(|_| bad()))
        .collect::<Result<_>>()?;
    match dims[..] {
        [n] => Ok(GemmProblem::new(n, n, n)),
        [m, n, k] => Ok(GemmProblem::new(m, n, k)),
        _ => Err(bad()),
    }
}

/// Runs `kernel` once in the simulator (validated) and returns its memory-access analysis.
pub fn analyze(kernel: &KernelInfo, p: &GemmProblem, seed: u64) -> Result<crate::sim::Analysis> {
    let sim = crate::sim::Simulator::default();
    sim.start_analysis();
    let backend = Backend::Simulator(sim);
    validate(&backend, kernel, p, seed)?;
    let Backend::Simulator(sim) = backend else {
        unreachable!()
    };
    Ok(sim.take_analysis().unwrap_or_default())
}

/// Padded copies of A and B the dispatcher reuses across calls.
#[derive(Default)]
pub struct Scratch {
    a: Option<CudaSlice<f32>>,
    b: Option<CudaSlice<f32>>,
    workspace: Option<CudaSlice<f32>>,
    a_t: Option<CudaSlice<f32>>,
}

fn pad_into(
    gpu: &Gpu,
    src: Range<'_, f32>,
    rows: usize,
    cols: usize,
    ld_src: usize,
    ld_dst: usize,
    slot: &mut Option<CudaSlice<f32>>,
) -> Result<()> {
    use rustile_kernels::gemm::pad;
    let dst = reserve(gpu, slot, (rows * ld_dst).max(1), "padded SGEMM operand")?;
    let f = gpu.function(pad::SYMBOLS[0].symbol)?;
    let cfg = cudarc::driver::LaunchConfig {
        grid_dim: (
            (ld_dst as u32).div_ceil(pad::BLOCK_X),
            (rows as u32).clamp(1, pad::MAX_GRID_Y),
            1,
        ),
        block_dim: (pad::BLOCK_X, 1, 1),
        shared_mem_bytes: 0,
    };
    let (rows32, cols32, lds, ldd) = (rows as u32, cols as u32, ld_src as u32, ld_dst as u32);
    let src = src.ptr();
    let mut args = gpu.stream().launch_builder(&f);
    args.arg(&src)
        .arg(dst)
        .arg(&rows32)
        .arg(&cols32)
        .arg(&lds)
        .arg(&ldd);
    // SAFETY: `gemm_pad_f32(src, dst, rows, cols, ld_src, ld_dst)`; src holds (rows−1)·ld_src +
    // cols elements (checked by the caller's problem check), dst rows·ld_dst (allocated above);
    // the kernel masks c ≥ ld_dst and walks rows with a stride.
    unsafe { args.launch(cfg) }.during(|| "launching gemm_pad_f32".into())?;
    Ok(())
}

/// Split-K slices the dispatcher uses for `p` on `sm_count` SMs: when even the 128×64 tiles
/// would fill under half of the SMs, enough slices of K for two 128×128 blocks per SM (each
/// slice keeping ≥ 128 of K); else 1. Measured on the H200: 512³ 0.49× cuBLAS with split-K
/// against 0.28× with the 128×64 tile; at 768³ (72 tiles of 128×64) the k-group ring (0.73×)
/// beats NT split-K (0.63×).
pub fn split_k_slices(p: &GemmProblem, sm_count: u32) -> u32 {
    let tiles = (p.m.div_ceil(128) * p.n.div_ceil(128)) as u32;
    let narrow_tiles = (p.m.div_ceil(128) * p.n.div_ceil(64)) as u32;
    if tiles >= sm_count || 2 * narrow_tiles >= sm_count {
        return 1;
    }
    let want = (2 * sm_count).div_ceil(tiles.max(1));
    want.min((p.k / 128) as u32).clamp(1, 8)
}

/// Launches the split-K warp tile (`splits` slices of K into `ws`) and the reduction into C.
#[allow(clippy::too_many_arguments)]
fn launch_split_k(
    gpu: &Gpu,
    kernel: &KernelInfo,
    symbol: &str,
    p: &GemmProblem,
    a: Range<'_, f32>,
    b: Range<'_, f32>,
    c: Range<'_, f32>,
    splits: u32,
    ws: &mut Option<CudaSlice<f32>>,
) -> Result<()> {
    use rustile_kernels::gemm::v08_warptile::split_k;
    let w = reserve(gpu, ws, splits as usize * p.m * p.n, "split-K workspace")?;
    // The partial products: C' = A·B over each K slice, into w (ldw = n).
    let part = GemmProblem {
        ldc: p.n,
        alpha: 1.0,
        beta: 0.0,
        ..*p
    };
    part.check(
        kernel,
        BufArg {
            name: "a",
            len: a.len(),
            addr: 0,
        },
        BufArg {
            name: "b",
            len: b.len(),
            addr: 0,
        },
        BufArg {
            name: "workspace",
            len: w.len(),
            addr: 0,
        },
    )?;
    let (f, mut cfg) = check::prepare(gpu, kernel, DType::F32, part.grid(kernel))?;
    let f = if symbol == kernel.symbol(DType::F32).unwrap_or_default() {
        f
    } else {
        gpu.function(symbol)?
    };
    if kernel.shared_bytes_f32 > gpu.info().shared_per_block {
        use cudarc::driver::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES as MAX_DYN;
        f.set_attribute(MAX_DYN, kernel.shared_bytes_f32 as i32)
            .map_err(|source| Error::Driver {
                during: format!("raising {symbol}'s shared memory"),
                source,
            })?;
    }
    cfg.grid_dim.2 = splits;
    let (m, n, k, lda, ldb, ldw, one, zero) = part.scalars();
    let (pa, pb) = (a.ptr(), b.ptr());
    let mut args = gpu.stream().launch_builder(&f);
    args.arg(&pa)
        .arg(&pb)
        .arg(&mut *w)
        .arg(&m)
        .arg(&n)
        .arg(&k)
        .arg(&lda)
        .arg(&ldb)
        .arg(&ldw)
        .arg(&one)
        .arg(&zero);
    // SAFETY: the warp tile's signature with C = the workspace; `check` proved A and B spans
    // and the alignment the 16-byte loads need; the workspace holds splits · m · n elements and
    // slice z is written at z · m · n; the grid's z is `splits`.
    unsafe { args.launch(cfg) }.during(|| format!("launching {symbol}"))?;
    let r = gpu.function(split_k::reduce::SYMBOLS[0].symbol)?;
    let cfg = cudarc::driver::LaunchConfig {
        grid_dim: (
            (p.n as u32).div_ceil(split_k::reduce::BLOCK_X),
            (p.m as u32).min(65535),
            1,
        ),
        block_dim: (split_k::reduce::BLOCK_X, 1, 1),
        shared_mem_bytes: 0,
    };
    let (ldc, alpha, beta) = (p.ldc as u32, p.alpha, p.beta);
    let pc = c.ptr();
    let mut args = gpu.stream().launch_builder(&r);
    args.arg(&*w)
        .arg(&pc)
        .arg(&m)
        .arg(&n)
        .arg(&ldc)
        .arg(&splits)
        .arg(&alpha)
        .arg(&beta);
    // SAFETY: `(ws, c, m, n, ldc, splits, alpha, beta)`; ws holds splits · m · n, C was checked
    // by the caller for (m − 1)·ldc + n; the kernel masks columns ≥ n and strides over rows.
    unsafe { args.launch(cfg) }.during(|| "launching gemm_splitk_reduce_f32".into())?;
    Ok(())
}

/// The dispatcher. For a dense A with M a multiple of 4 on a grid that fills the GPU it
/// transposes A with rustile's transpose and runs the `cp.async` NT pipeline (v11: 0.90–0.92×
/// cuBLAS at 4096³–8192³, transpose included). Otherwise it pads A and/or B into scratch
/// buffers when their rows are not 16-byte multiples (two memory-bound passes), then runs
/// [`dispatch`]'s variant — or, when even 128×64 tiles cannot fill the GPU, the warp tile split
/// over K ([`split_k_slices`]) plus a reduction. Takes slices or views; returns the name of
/// what ran. Asynchronous.
pub fn run(
    gpu: &Gpu,
    p: &GemmProblem,
    a: &impl DevicePtr<f32>,
    b: &impl DevicePtr<f32>,
    c: &mut impl DevicePtrMut<f32>,
    scratch: &mut Scratch,
) -> Result<&'static str> {
    let sm_count = gpu.info().sm_count;
    let stream = gpu.stream();
    let kernel = dispatch(p, sm_count);
    // Check the caller's buffers against the caller's problem before reading them.
    p.check(
        &v05_blocktile_2d::INFO,
        BufArg {
            name: "a",
            len: a.len(),
            addr: 0,
        },
        BufArg {
            name: "b",
            len: b.len(),
            addr: 0,
        },
        BufArg {
            name: "c",
            len: c.len(),
            addr: 0,
        },
    )?;
    // One pointer per caller buffer, its stream-order guard held until every step below is
    // enqueued; the steps take `Range`s of it.
    let (lens_a, lens_b, lens_c) = (a.len(), b.len(), c.len());
    let (pa, _guard_a) = a.device_ptr(stream);
    let (pb, _guard_b) = b.device_ptr(stream);
    let (pc, _guard_c) = c.device_ptr_mut(stream);
    let (a, b) = (
        Range::new(pa, lens_a, stream),
        Range::new(pb, lens_b, stream),
    );
    let mut c = Range::new(pc, lens_c, stream);
    let q = if p.k == 0 { *p } else { p.aligned() };
    let a_src = if q.lda != p.lda {
        pad_into(gpu, a, p.m, p.k, p.lda, q.lda, &mut scratch.a)?;
        range_of(scratch.a.as_ref().expect("padded"), stream)
    } else {
        a
    };
    let b_src = if q.ldb != p.ldb {
        pad_into(gpu, b, p.k, p.n, p.ldb, q.ldb, &mut scratch.b)?;
        range_of(scratch.b.as_ref().expect("padded"), stream)
    } else {
        b
    };
    // Dense A with M a multiple of 4 on a grid that fills the GPU: transpose A with rustile's own
    // transpose and run the cp.async pipeline (measured faster than the warp tile; see notes).
    let tiles = p.m.div_ceil(128) * p.n.div_ceil(128);
    let nt_eligible = p.k > 0 && p.lda == p.k && p.m.is_multiple_of(4) && q.ldb == p.ldb;
    // Grids too small even for the 128×64 tile (under half the SMs): the NT pipeline split over
    // K into enough slices for two 128×128 blocks per SM (each slice keeping ≥ 128 of K), then
    // the reduction. Measured on the H200 (bench-results/2026-11-30-h200-sgemm-1000): 512³
    // 0.51× cuBLAS (k-group ring 0.48×); at 768³ and 1000³ the k-group ring wins (0.73× / 0.91×
    // against 0.63× / 0.54×), so there the split is not used.
    let narrow_tiles = p.m.div_ceil(128) * p.n.div_ceil(64);
    let nt_splits = if tiles < sm_count as usize && 2 * narrow_tiles < sm_count as usize {
        (2 * sm_count as usize)
            .div_ceil(tiles.max(1))
            .min(p.k / 128)
            .clamp(1, 8) as u32
    } else {
        1
    };
    if nt_eligible && nt_splits > 1 {
        let a_t = range_of(transpose_a(gpu, p, a, &mut scratch.a_t)?, stream);
        let nt = GemmProblem { lda: p.m, ..*p };
        let symbol = v11_nt_pipeline::split_k::SYMBOLS[0].symbol;
        launch_split_k(
            gpu,
            &v11_nt_pipeline::INFO,
            symbol,
            &nt,
            a_t,
            b,
            c,
            nt_splits,
            &mut scratch.workspace,
        )?;
        return Ok("nt_split_k");
    }
    if nt_eligible && tiles >= sm_count as usize {
        let a_t = range_of(transpose_a(gpu, p, a, &mut scratch.a_t)?, stream);
        let nt = GemmProblem { lda: p.m, ..*p };
        launch(gpu, &v11_nt_pipeline::INFO, &nt, &a_t, &b, &mut c)?;
        return Ok(v11_nt_pipeline::INFO.name);
    }
    let splits = split_k_slices(&q, sm_count);
    if splits > 1 {
        let symbol = v08_warptile::split_k::SYMBOLS[0].symbol;
        launch_split_k(
            gpu,
            &v08_warptile::INFO,
            symbol,
            &q,
            a_src,
            b_src,
            c,
            splits,
            &mut scratch.workspace,
        )?;
        return Ok("split_k");
    }
    launch(gpu, kernel, &q, &a_src, &b_src, &mut c)?;
    Ok(kernel.name)
}

/// A range over rustile's own scratch buffer (allocated and used on `gpu`'s stream only, so
/// stream order alone orders its accesses).
fn range_of<'a>(s: &CudaSlice<f32>, stream: &'a std::sync::Arc<CudaStream>) -> Range<'a, f32> {
    Range::new(s.device_ptr(stream).0, s.len(), stream)
}

/// The scratch buffer in `slot`, (re)allocated to hold at least `need` elements.
fn reserve<'a>(
    gpu: &Gpu,
    slot: &'a mut Option<CudaSlice<f32>>,
    need: usize,
    what: &str,
) -> Result<&'a mut CudaSlice<f32>> {
    if slot.as_ref().is_none_or(|s| s.len() < need) {
        *slot = Some(gpu.alloc::<f32>(need, what)?);
    }
    Ok(slot.as_mut().expect("allocated above"))
}

/// Writes Aᵀ (K × M, dense) into `slot` with rustile's transpose, for the NT pipeline.
fn transpose_a<'a>(
    gpu: &Gpu,
    p: &GemmProblem,
    a: Range<'_, f32>,
    slot: &'a mut Option<CudaSlice<f32>>,
) -> Result<&'a CudaSlice<f32>> {
    let a_t = reserve(gpu, slot, p.k * p.m, "Aᵀ for the NT pipeline")?;
    let tp = crate::transpose::TransposeProblem {
        rows: p.m,
        cols: p.k,
    };
    crate::transpose::launch(gpu, crate::transpose::best(&tp, 4), &tp, &a, a_t)?;
    Ok(a_t)
}

/// FP32 lanes per SM by compute capability (A100's sm_80 has 64; sm_86 and later 128).
pub fn fp32_lanes_per_sm(cc: (i32, i32)) -> u32 {
    if cc == (8, 0) {
        64
    } else {
        128
    }
}

/// One measured SGEMM case.
#[derive(Clone, Debug, serde::Serialize)]
pub struct GemmRow {
    /// Variant, `cuBLAS`, or `dispatch(variant)`.
    pub variant: String,
    /// Shape.
    pub shape: String,
    /// Event-time statistics (L2 flushed before every repetition).
    pub stats: crate::harness::Stats,
    /// TFLOP/s at the median.
    pub tflops: f64,
    /// Over cuBLAS's TFLOP/s at the same shape.
    pub vs_cublas: f64,
    /// Over the FP32 peak (SMs × lanes × 2 × clock).
    pub vs_peak: f64,
    /// Registers per thread (driver's report; 0 for cuBLAS).
    pub registers: i32,
    /// Theoretical occupancy: resident warps per SM / 64, from the occupancy API.
    pub occupancy: f64,
    /// Relative error against cuBLAS's result.
    pub error_vs_cublas: f64,
}

/// Renders rows as a markdown table.
pub fn markdown(rows: &[GemmRow]) -> String {
    let mut s = String::from(
        "| variant | shape | median ms | TFLOP/s | × cuBLAS | × FP32 peak | regs | occupancy | rel. err vs cuBLAS |\n\
         | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n",
    );
    for r in rows {
        s += &format!(
            "| {} | {} | {:.3} | {:.2} | {:.3} | {:.3} | {} | {:.2} | {:.1e} |\n",
            r.variant,
            r.shape,
            r.stats.median_ms,
            r.tflops,
            r.vs_cublas,
            r.vs_peak,
            r.registers,
            r.occupancy,
            r.error_vs_cublas
        );
    }
    s
}

/// Times every variant in `variants` (each validated against cuBLAS's result first), cuBLAS,
/// and the dispatcher, on every problem. Repetitions adapt to about `budget_s` per case (3 to
/// 20); the L2 is flushed before each.
pub fn bench(
    gpu: &Gpu,
    problems: &[GemmProblem],
    variants: &[&'static KernelInfo],
    budget_s: f64,
    seed: u64,
    mut progress: impl FnMut(&str),
) -> Result<Vec<GemmRow>> {
    use crate::harness::{self, L2Mode, TimingConfig};
    let info = gpu.info();
    let peak = info.sm_count as f64
        * fp32_lanes_per_sm(info.compute_capability) as f64
        * 2.0
        * info.sm_clock_khz as f64
        * 1e3;
    let blas = crate::vendor::cublas(gpu.stream())?;
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut rows = Vec::new();
    for p in problems {
        let (la, lb, lc) = p.lens();
        let a = gpu.upload(&random_vec::<f32>(la.max(1), &mut rng), "A")?;
        let b = gpu.upload(&random_vec::<f32>(lb.max(1), &mut rng), "B")?;
        let mut c = gpu.alloc::<f32>(lc, "C")?;
        gpu.fill(&mut c, 0.0, "C")?;
        let mut c_ref = gpu.alloc::<f32>(lc, "C reference")?;
        gpu.fill(&mut c_ref, 0.0, "C reference")?;
        cublas_sgemm(&blas, p, &a, &b, &mut c_ref)?;
        let want: Vec<f64> = gpu
            .download(&c_ref, "C reference")?
            .iter()
            .map(|&v| v as f64)
            .collect();
        let want_mn: Vec<f64> = (0..p.m * p.n)
            .map(|i| want[(i / p.n) * p.ldc + i % p.n])
            .collect();
        let reps_for = |one_ms: f64| ((budget_s * 1e3 / one_ms.max(1e-3)) as usize).clamp(3, 20);
        let time = |launch: &mut dyn FnMut() -> Result<()>| -> Result<crate::harness::Stats> {
            let probe = harness::time(
                gpu,
                &TimingConfig {
                    warmup: 1,
                    reps: 1,
                    mode: L2Mode::Flush,
                },
                |_| launch(),
            )?;
            let cfg = TimingConfig {
                warmup: 1,
                reps: reps_for(probe.median_ms),
                mode: L2Mode::Flush,
            };
            harness::time(gpu, &cfg, |_| launch())
        };
        let row = |variant: String,
                   stats: crate::harness::Stats,
                   registers: i32,
                   occupancy: f64,
                   err: f64| GemmRow {
            variant,
            shape: p.shape(),
            tflops: p.flops() / (stats.median_ms * 1e-3) / 1e12,
            vs_cublas: 0.0,
            vs_peak: p.flops() / (stats.median_ms * 1e-3) / peak,
            stats,
            registers,
            occupancy,
            error_vs_cublas: err,
        };
        progress(&format!("gemm {} cuBLAS", p.shape()));
        let cublas_stats = time(&mut || cublas_sgemm(&blas, p, &a, &b, &mut c_ref))?;
        let first = rows.len();
        rows.push(row("cuBLAS".into(), cublas_stats, 0, 0.0, 0.0));
        for &kernel in variants {
            let aligned_ok = !GemmProblem::vectorized(kernel)
                || (p.lda.is_multiple_of(4) && p.ldb.is_multiple_of(4));
            if !aligned_ok {
                continue;
            }
            progress(&format!("gemm {} {}", p.shape(), kernel.name));
            gpu.fill(&mut c, f32::NAN, "C")?;
            launch(gpu, kernel, p, &a, &b, &mut c)?;
            let got = gpu.download(&c, "C")?;
            let err = relative_error(p, &got, &want_mn);
            if err > 4.0 * p.tolerance() {
                return Err(Error::Mismatch {
                    kernel: check::kernel_name(kernel),
                    shape: p.shape(),
                    detail: format!(
                        "relative error {err:.3e} against cuBLAS > {:.3e}",
                        4.0 * p.tolerance()
                    ),
                });
            }
            let stats = time(&mut || launch(gpu, kernel, p, &a, &b, &mut c))?;
            let f = gpu.function(kernel.symbol(DType::F32).unwrap_or_default())?;
            let regs = f.num_regs().unwrap_or(0);
            let (bx, by, bz) = kernel.block;
            let threads = bx * by * bz;
            let blocks = f
                .occupancy_max_active_blocks_per_multiprocessor(
                    threads,
                    kernel.shared_bytes_f32,
                    None,
                )
                .unwrap_or(0);
            let occupancy = (blocks * threads.div_ceil(32)) as f64 / 64.0;
            rows.push(row(kernel.name.to_string(), stats, regs, occupancy, err));
        }
        // The dispatcher, padding included.
        progress(&format!("gemm {} dispatch", p.shape()));
        let mut scratch = Scratch::default();
        gpu.fill(&mut c, f32::NAN, "C")?;
        let chosen = run(gpu, p, &a, &b, &mut c, &mut scratch)?;
        let got = gpu.download(&c, "C")?;
        let err = relative_error(p, &got, &want_mn);
        if err > 4.0 * p.tolerance() {
            return Err(Error::Mismatch {
                kernel: "gemm/dispatch".into(),
                shape: p.shape(),
                detail: format!("relative error {err:.3e}"),
            });
        }
        let stats = time(&mut || run(gpu, p, &a, &b, &mut c, &mut scratch).map(|_| ()))?;
        rows.push(row(format!("dispatch ({chosen})"), stats, 0, 0.0, err));
        let cublas_tflops = rows[first].tflops;
        for r in &mut rows[first..] {
            r.vs_cublas = r.tflops / cublas_tflops;
        }
    }
    Ok(rows)
}
