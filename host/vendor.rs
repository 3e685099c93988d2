//! Vendor library handles, behind [`Result`]: the cuBLAS baselines the benchmarks compare with.

use std::sync::Arc;

use cudarc::cublas::CudaBlas;
use cudarc::driver::CudaStream;

use crate::error::{Error, Result};

/// A cuBLAS handle on `stream`, or [`Error::Library`] when libcublas is not installed (or not
/// on the loader path) or the handle cannot be created.
///
/// cudarc (built with `dynamic-loading`) opens libcublas on first use and panics when no
/// candidate name opens. The probe here, `cudarc::cublas::sys::is_culib_present`, tries the
/// very list of names that cudarc's loader tries (`get_lib_name_candidates("cublas")`), so
/// when it succeeds the loader's own open succeeds too, and when it fails nothing has panicked.
/// That is sounder than `catch_unwind` around `CudaBlas::new`: a panic is not guaranteed to
/// unwind (`panic = "abort"` in a user's profile), the panic message would still be printed
/// by the hook, and a library found but missing symbols is a broken installation, which
/// cudarc's `expect` rightly reports.
pub fn cublas(stream: &Arc<CudaStream>) -> Result<CudaBlas> {
    // SAFETY: only opens and closes the shared library to see whether it can be loaded.
    if !unsafe { cudarc::cublas::sys::is_culib_present() } {
        return Err(Error::Library {
            library: "cuBLAS",
            what: format!(
                "libcublas is not installed or not on the loader path (searched {:?}); \
                 cuBLAS is only the benchmarks' baseline, rustile's own kernels do not need it",
                cudarc::get_lib_name_candidates("cublas")
            ),
        });
    }
    CudaBlas::new(stream.clone()).map_err(|e| Error::Library {
        library: "cuBLAS",
        what: format!("creating a handle: {e:?}"),
    })
}

/// Whether `blas` runs on `stream` ([`Error::Usage`] if not): a wrapper that orders its
/// buffers on `stream` must enqueue the cuBLAS call there too.
pub fn check_stream(blas: &CudaBlas, stream: &Arc<CudaStream>) -> Result<()> {
    let mut on: cudarc::cublas::sys::cudaStream_t = std::ptr::null_mut();
    // SAFETY: the handle is live (borrowed); cuBLAS writes one stream handle to `on`.
    unsafe { cudarc::cublas::sys::cublasGetStream_v2(*blas.handle(), &mut on) }
        .result()
        .map_err(|e| Error::Library {
            library: "cuBLAS",
            what: format!("reading the handle's stream: {e:?}"),
        })?;
    if !std::ptr::eq(on as *const u8, stream.cu_stream() as *const u8) {
        return Err(Error::Usage(
            "cuBLAS: the handle runs on another stream than the one the buffers are ordered on"
                .into(),
        ));
    }
    Ok(())
}
