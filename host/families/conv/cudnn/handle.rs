//! Loading cuDNN without panicking, and owned handles and descriptors (each destroyed on drop).
//!
//! cudarc (built with `dynamic-loading`) opens libcudnn on first use and panics when no
//! candidate name opens, and resolves each function on its first call, panicking when the
//! symbol is missing. [`probe`] therefore checks, before any cuDNN call: that the library
//! opens (`is_culib_present` tries the very names cudarc's loader tries), that every symbol
//! this module calls resolves ([`SYMBOLS`]), and the version. After a successful probe no call
//! here can hit either panic. (As in cudarc, a status is read as the bindings' `cudnnStatus_t`,
//! which lists every code of cuDNN 9.21, a superset of the 9.x codes.)

use cudarc::cudnn::result::CudnnError;
use cudarc::cudnn::sys;
use cudarc::driver::CudaStream;

use crate::error::{Error, Result};

use super::desc::{parse_version, Geometry, Tensor4};

/// Every cuDNN function this module calls.
pub const SYMBOLS: [&str; 22] = [
    "cudnnGetVersion",
    "cudnnGetErrorString",
    "cudnnCreate",
    "cudnnDestroy",
    "cudnnSetStream",
    "cudnnCreateTensorDescriptor",
    "cudnnSetTensor4dDescriptorEx",
    "cudnnDestroyTensorDescriptor",
    "cudnnCreateFilterDescriptor",
    "cudnnSetFilter4dDescriptor",
    "cudnnDestroyFilterDescriptor",
    "cudnnCreateConvolutionDescriptor",
    "cudnnSetConvolution2dDescriptor",
    "cudnnSetConvolutionMathType",
    "cudnnDestroyConvolutionDescriptor",
    "cudnnGetConvolution2dForwardOutputDim",
    "cudnnCreateActivationDescriptor",
    "cudnnSetActivationDescriptor",
    "cudnnDestroyActivationDescriptor",
    "cudnnGetConvolutionForwardWorkspaceSize",
    "cudnnConvolutionForward",
    "cudnnConvolutionBiasActivationForward",
];

/// The oldest cuDNN the legacy calls here are used with (`cudnnSetConvolutionMathType`'s
/// `CUDNN_FMA_MATH` arrived in 8.0).
pub const MIN_VERSION: (usize, usize) = (8, 0);

fn library(what: String) -> Error {
    Error::Library {
        library: "cuDNN",
        what,
    }
}

/// Whether cuDNN can be used here: the library opens, has every function in [`SYMBOLS`] and
/// is at least [`MIN_VERSION`]. Returns `(major, minor, patch)`; [`Error::Library`] otherwise.
/// Needs no GPU.
pub fn probe() -> Result<(usize, usize, usize)> {
    // SAFETY: only opens and closes the shared library to see whether it can be loaded.
    if !unsafe { sys::is_culib_present() } {
        return Err(library(format!(
            "libcudnn is not installed or not on the loader path (searched {:?}); cuDNN is \
             only the conv benchmarks' baseline, rustile's own kernels do not need it",
            cudarc::get_lib_name_candidates("cudnn")
        )));
    }
    // SAFETY: the library opens (checked above), so `culib` returns it rather than panicking;
    // looking a symbol up calls nothing.
    let lib = unsafe { sys::culib() };
    let missing: Vec<&str> = SYMBOLS
        .iter()
        .copied()
        .filter(|name| unsafe { lib.get::<*const std::ffi::c_void>(name.as_bytes()) }.is_err())
        .collect();
    if !missing.is_empty() {
        return Err(library(format!(
            "the loaded libcudnn lacks {missing:?} (a broken or too old installation)"
        )));
    }
    // SAFETY: the symbol resolves (checked above); the call takes no argument.
    let v = parse_version(unsafe { sys::cudnnGetVersion() });
    if (v.0, v.1) < MIN_VERSION {
        return Err(library(format!(
            "cuDNN {}.{}.{} is older than {}.{}",
            v.0, v.1, v.2, MIN_VERSION.0, MIN_VERSION.1
        )));
    }
    Ok(v)
}

/// `during` failed with status `e`, as [`Error::Library`] with cuDNN's own message.
/// Call only after [`probe`] succeeded.
pub fn status(during: &str, e: CudnnError) -> Error {
    // SAFETY: after `probe`, the symbol resolves; cuDNN returns a static NUL-terminated
    // string (or null, handled).
    let text = unsafe {
        let s = sys::cudnnGetErrorString(e.0);
        if s.is_null() {
            String::new()
        } else {
            std::ffi::CStr::from_ptr(s).to_string_lossy().into_owned()
        }
    };
    library(format!("{during}: {:?} ({text})", e.0))
}

fn check(during: &str, s: sys::cudnnStatus_t) -> Result<()> {
    s.result().map_err(|e| status(during, e))
}

/// A cuDNN handle bound to one stream. Not `Send`/`Sync` (raw pointer), as cuDNN requires.
#[derive(Debug)]
pub struct Handle(pub(super) sys::cudnnHandle_t);

impl Handle {
    /// A handle whose work goes to `stream`. Call after [`probe`], with the stream's context
    /// current on this thread.
    pub fn new(stream: &CudaStream) -> Result<Self> {
        let mut h: sys::cudnnHandle_t = std::ptr::null_mut();
        // SAFETY: probed; `h` is a valid out-pointer.
        check("creating a handle", unsafe { sys::cudnnCreate(&mut h) })?;
        let handle = Handle(h);
        // SAFETY: `h` is a live handle; the stream outlives the handle (the caller holds it).
        check("setting the stream", unsafe {
            sys::cudnnSetStream(h, stream.cu_stream() as sys::cudaStream_t)
        })?;
        Ok(handle)
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: created by `cudnnCreate` and destroyed once; a failure cannot be reported
        // from `drop` and leaks at worst.
        let _ = unsafe { sys::cudnnDestroy(self.0) };
    }
}

macro_rules! descriptor {
    ($name:ident, $raw:ty, $create:ident, $destroy:ident, $what:literal) => {
        #[doc = concat!("An owned ", $what, " descriptor.")]
        #[derive(Debug)]
        pub struct $name(pub(super) $raw);

        impl $name {
            fn create() -> Result<Self> {
                let mut d: $raw = std::ptr::null_mut();
                // SAFETY: probed (every constructor runs after `probe`); valid out-pointer.
                check(concat!("creating a ", $what, " descriptor"), unsafe {
                    sys::$create(&mut d)
                })?;
                Ok($name(d))
            }
        }

        impl Drop for $name {
            fn drop(&mut self) {
                // SAFETY: created once, destroyed once.
                let _ = unsafe { sys::$destroy(self.0) };
            }
        }
    };
}

descriptor!(
    TensorDesc,
    sys::cudnnTensorDescriptor_t,
    cudnnCreateTensorDescriptor,
    cudnnDestroyTensorDescriptor,
    "tensor"
);
descriptor!(
    FilterDesc,
    sys::cudnnFilterDescriptor_t,
    cudnnCreateFilterDescriptor,
    cudnnDestroyFilterDescriptor,
    "filter"
);
descriptor!(
    ConvDesc,
    sys::cudnnConvolutionDescriptor_t,
    cudnnCreateConvolutionDescriptor,
    cudnnDestroyConvolutionDescriptor,
    "convolution"
);
descriptor!(
    ActDesc,
    sys::cudnnActivationDescriptor_t,
    cudnnCreateActivationDescriptor,
    cudnnDestroyActivationDescriptor,
    "activation"
);

impl TensorDesc {
    /// A 4-d tensor of `data` with `t`'s dims and strides.
    pub fn new(data: sys::cudnnDataType_t, t: &Tensor4) -> Result<Self> {
        let d = Self::create()?;
        let [n, c, h, w] = t.dims;
        let [sn, sc, sh, sw] = t.strides;
        // SAFETY: live descriptor; plain integers.
        check("setting a tensor descriptor", unsafe {
            sys::cudnnSetTensor4dDescriptorEx(d.0, data, n, c, h, w, sn, sc, sh, sw)
        })?;
        Ok(d)
    }
}

/// The descriptors of one problem.
#[derive(Debug)]
pub struct Descriptors {
    /// x.
    pub x: TensorDesc,
    /// w.
    pub w: FilterDesc,
    /// y (also z, which the fused op gets with `alpha2 = 0`).
    pub y: TensorDesc,
    /// The bias, `(1, k, 1, 1)`, in the type being tried or chosen.
    pub bias: TensorDesc,
    /// The convolution (cross-correlation, f32 compute, the math type).
    pub conv: ConvDesc,
    /// ReLU (NaN-propagating) or identity.
    pub act: ActDesc,
}

impl Descriptors {
    /// Builds them from `g`, and checks that cuDNN's output size is the problem's.
    pub fn new(g: &Geometry, relu: bool) -> Result<Self> {
        let x = TensorDesc::new(g.data, &g.x)?;
        let y = TensorDesc::new(g.data, &g.y)?;
        let bias = TensorDesc::new(g.bias_type, &g.bias)?;
        let w = FilterDesc::create()?;
        let [k, c, r, s] = g.w;
        // SAFETY: live descriptor; plain values.
        check("setting the filter descriptor", unsafe {
            sys::cudnnSetFilter4dDescriptor(w.0, g.data, g.filter_format, k, c, r, s)
        })?;
        let conv = ConvDesc::create()?;
        // SAFETY: live descriptor; plain values.
        check("setting the convolution descriptor", unsafe {
            sys::cudnnSetConvolution2dDescriptor(
                conv.0,
                g.pad[0],
                g.pad[1],
                g.stride[0],
                g.stride[1],
                g.dil[0],
                g.dil[1],
                sys::cudnnConvolutionMode_t::CUDNN_CROSS_CORRELATION,
                g.compute,
            )
        })?;
        // SAFETY: live descriptor.
        check("setting the math type", unsafe {
            sys::cudnnSetConvolutionMathType(conv.0, g.math)
        })?;
        let act = ActDesc::create()?;
        let mode = if relu {
            sys::cudnnActivationMode_t::CUDNN_ACTIVATION_RELU
        } else {
            sys::cudnnActivationMode_t::CUDNN_ACTIVATION_IDENTITY
        };
        // `coef` is ReLU's upper clip: the largest double leaves it unclipped (as PyTorch).
        // SAFETY: live descriptor.
        check("setting the activation descriptor", unsafe {
            sys::cudnnSetActivationDescriptor(
                act.0,
                mode,
                sys::cudnnNanPropagation_t::CUDNN_PROPAGATE_NAN,
                f64::MAX,
            )
        })?;
        let mut out = [0i32; 4];
        // SAFETY: live descriptors; four valid out-pointers.
        check("querying the output size", unsafe {
            let [a, b, c_, d] = &mut out;
            sys::cudnnGetConvolution2dForwardOutputDim(conv.0, x.0, w.0, a, b, c_, d)
        })?;
        if out != g.y.dims {
            return Err(library(format!(
                "cuDNN's output (n, c, h, w) = {out:?} differs from the problem's {:?}",
                g.y.dims
            )));
        }
        Ok(Self {
            x,
            w,
            y,
            bias,
            conv,
            act,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_symbol_list_names_each_function_once() {
        let set: std::collections::HashSet<_> = SYMBOLS.iter().collect();
        assert_eq!(set.len(), SYMBOLS.len());
        assert!(SYMBOLS.iter().all(|s| s.starts_with("cudnn")));
    }

    #[test]
    fn the_probe_is_an_error_or_a_version_never_a_panic() {
        // Without libcudnn (the CI machines): a typed error naming the search. With it: a
        // version of at least the minimum.
        match probe() {
            Ok(v) => assert!((v.0, v.1) >= MIN_VERSION),
            Err(Error::Library { library, what }) => {
                assert_eq!(library, "cuDNN");
                assert!(!what.is_empty());
            }
            Err(e) => panic!("{e}"),
        }
    }
}
