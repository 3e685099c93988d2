//! `--kernel` specifications: the compute stage each command runs, and its configuration.

use super::*;

/// The gather's default stride: 8 f32 = one 32-byte sector per output element, and a D2H an
/// eighth of the H2D.
pub const GATHER_STRIDE: usize = 8;

/// The SGEMM workload's default depth: A's rows are 16 KiB, a 32 MiB chunk is 2048 rows.
pub const GEMM_K: usize = 4096;

/// A `--kernel` argument: a fixed compute stage, or the SGEMM whose chunk rows and N are
/// calibrated in the run.
#[derive(Clone, Copy, Debug)]
pub enum KernelSpec {
    /// Run as given.
    Work(ChunkWork),
    /// `gemm[:K]`: rows per chunk and N chosen by [`overlap::calibrate_gemm_shape`].
    GemmCalibrated {
        /// Columns of A, rows of B.
        k: usize,
    },
}

/// Parses `--kernel`: everything [`work`] takes, plus `gemm` / `gemm:K` (shape calibrated).
pub fn kernel_spec(name: &str) -> Result<KernelSpec> {
    let bad = || {
        Error::Usage(format!(
            "--kernel copy|transpose|gather[:S]|gemm[:K[:N]], got `{name}`"
        ))
    };
    let positive = |v: &str| v.parse::<usize>().ok().filter(|&s| s > 0).ok_or_else(bad);
    let parts: Vec<&str> = name.split(':').collect();
    match parts.as_slice() {
        ["gemm"] => Ok(KernelSpec::GemmCalibrated { k: GEMM_K }),
        ["gemm", k] => Ok(KernelSpec::GemmCalibrated { k: positive(k)? }),
        ["gemm", k, n] => {
            let (k, n) = (positive(k)?, positive(n)?);
            if !k.is_multiple_of(4) || !n.is_multiple_of(4) {
                return Err(Error::Usage(format!(
                    "--kernel {name}: K and N must be multiples of 4 (16-byte rows for the \
                     vectorised SGEMM variants)"
                )));
            }
            Ok(KernelSpec::Work(ChunkWork::Gemm { k, n }))
        }
        ["gemm", ..] => Err(bad()),
        _ => work(name).map(KernelSpec::Work),
    }
}

/// Rows per chunk to probe for the SGEMM: chunks of ½, ⅝, ¾, ⅞ and all of `chunk_elems`,
/// each rounded down to whole multiples of 64 rows of `k` (at least 64 rows).
pub fn gemm_row_candidates(chunk_elems: usize, k: usize) -> Vec<usize> {
    if k == 0 {
        return Vec::new();
    }
    let mut rows: Vec<usize> = [4, 5, 6, 7, 8]
        .iter()
        .map(|eighths| (chunk_elems / k * eighths / 8 / 64 * 64).max(64))
        .collect();
    rows.dedup();
    rows
}

/// The overlap configuration of an SGEMM spec: `base`'s chunk count (batch / chunk) and
/// orders; chunks of `rows × k`, B of `k × n`. For [`KernelSpec::GemmCalibrated`] the rows and
/// N come from [`overlap::calibrate_gemm_shape`] (returned too); for a fixed `gemm:K:N` the
/// chunk is `base`'s rounded down to whole rows. Other specs: `base` with their work.
pub fn spec_config(
    gpu: &Gpu,
    spec: KernelSpec,
    base: &overlap::OverlapConfig,
    progress: impl FnMut(&str),
) -> Result<(overlap::OverlapConfig, Option<overlap::GemmShape>)> {
    let chunks = (base.batch_elems / base.chunk_elems.max(1)).max(1);
    let gemm = |k: usize, rows: usize, n: usize| overlap::OverlapConfig {
        work: ChunkWork::Gemm { k, n },
        chunk_elems: rows * k,
        batch_elems: chunks * rows * k,
        compute_reps: Some(base.compute_reps.unwrap_or(1)),
        pageable: false,
        ..base.clone()
    };
    match spec {
        KernelSpec::GemmCalibrated { k } => {
            let rows = gemm_row_candidates(base.chunk_elems, k);
            let ns = overlap::gemm_n_candidates(k, 64, 256);
            let shape = overlap::calibrate_gemm_shape(gpu, k, &rows, &ns, progress)?;
            Ok((gemm(k, shape.rows, shape.n), Some(shape)))
        }
        KernelSpec::Work(ChunkWork::Gemm { k, n }) => {
            let rows = (base.chunk_elems / k).max(1);
            Ok((gemm(k, rows, n), None))
        }
        KernelSpec::Work(work) => Ok((
            overlap::OverlapConfig {
                work,
                ..base.clone()
            },
            None,
        )),
    }
}

/// The compute stage by name: `copy` (the best copy variant, short launches), `transpose`
/// (the naive transpose of the chunk as a 2048-column matrix: few, long launches),
/// `gather[:S]` (`strided/v01_gather`, every `S`-th element, default
/// [`GATHER_STRIDE`]: the output, and so the D2H, is `S` times smaller than the input) or
/// `gemm:K:N` (one SGEMM per chunk of whole `K`-element rows against a resident `K × N` B).
pub fn work(name: &str) -> Result<ChunkWork> {
    if name == "gemm" || name.starts_with("gemm:") {
        return match kernel_spec(name)? {
            KernelSpec::Work(w) => Ok(w),
            KernelSpec::GemmCalibrated { .. } => Err(Error::Usage(format!(
                "`{name}`: a fixed SGEMM stage needs gemm:K:N (N is calibrated only by the \
                 overlap commands)"
            ))),
        };
    }
    let bad = || Error::Usage(format!("--kernel copy|transpose|gather[:S], got `{name}`"));
    match name.split_once(':') {
        Some(("gather", stride)) => {
            let stride = stride
                .parse::<usize>()
                .ok()
                .filter(|&s| s > 0)
                .ok_or_else(bad)?;
            Ok(ChunkWork::Gather {
                kernel: crate::families::strided::BEST,
                stride,
            })
        }
        Some(_) => Err(bad()),
        None => match name {
            "copy" => Ok(ChunkWork::Copy(crate::families::copy::BEST)),
            "transpose" => Ok(ChunkWork::Transpose {
                kernel: &rustile_kernels::transpose::v01_naive::INFO,
                cols: 2048,
            }),
            "gather" => Ok(ChunkWork::Gather {
                kernel: crate::families::strided::BEST,
                stride: GATHER_STRIDE,
            }),
            _ => Err(bad()),
        },
    }
}
