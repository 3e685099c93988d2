//! The one error type of rustile. Every variant names what was wrong and the values involved.

use cudarc::driver::DriverError;

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong, as values.
///
/// `#[non_exhaustive]`: new variants are not breaking changes, so a `match` outside rustile
/// needs a `_` arm. Every variant can still be built outside the crate (its fields are public);
/// [`Error::driver`] wraps a [`DriverError`] from the caller's own CUDA calls.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The CUDA driver library (`libcuda.so.1`) could not be opened.
    #[error(
        "no GPU: the CUDA driver library (libcuda.so.1) is not installed or not on the loader path"
    )]
    NoDriver,
    /// The driver loaded but reports no usable device.
    #[error("no GPU: {0}")]
    NoDevice(String),
    /// The device is older than any PTX flavour rustile ships.
    #[error(
        "unsupported compute capability {major}.{minor} on `{device}`: rustile's PTX needs 8.0 or newer"
    )]
    UnsupportedComputeCapability {
        /// Device name.
        device: String,
        /// Major version.
        major: i32,
        /// Minor version.
        minor: i32,
    },
    /// The kernel cannot run on this device or with these operands (e.g. an sm_90a kernel on
    /// another architecture, or TMA with unaligned pitches).
    #[error("{kernel}: unsupported here: {what}")]
    Unsupported {
        /// Kernel (family/variant).
        kernel: String,
        /// Why.
        what: String,
    },
    /// The loaded PTX has no entry point of that name.
    #[error("kernel `{symbol}` is missing from the loaded PTX (flavour {flavour})")]
    MissingKernel {
        /// PTX symbol asked for.
        symbol: String,
        /// Flavour that was loaded.
        flavour: &'static str,
    },
    /// No variant of that name, or not instantiated for that dtype.
    #[error("unknown kernel `{family}/{variant}` for {dtype}")]
    UnknownKernel {
        /// Family name.
        family: String,
        /// Variant name.
        variant: String,
        /// dtype name.
        dtype: &'static str,
    },
    /// A dimension is zero.
    #[error("{kernel}: empty problem: {what} is 0")]
    ZeroSize {
        /// Kernel (family/variant).
        kernel: String,
        /// Which dimension.
        what: &'static str,
    },
    /// A size computation overflows, or exceeds what the kernel's index types or the grid can
    /// address.
    #[error("{kernel}: shape too large: {what}")]
    TooLarge {
        /// Kernel (family/variant).
        kernel: String,
        /// What overflowed, with the values.
        what: String,
    },
    /// A buffer holds fewer (or, for outputs, a different number of) elements than the shape
    /// needs.
    #[error("{kernel}: buffer `{buffer}` holds {got} elements but shape {shape} needs {need}")]
    BufferLength {
        /// Kernel (family/variant).
        kernel: String,
        /// Buffer (argument) name.
        buffer: &'static str,
        /// Elements in the buffer.
        got: usize,
        /// Elements the shape needs.
        need: usize,
        /// The shape, as text.
        shape: String,
    },
    /// An argument's value is outside what the operation accepts (a shape that is not
    /// consistent, such as query heads that are not a multiple of the key/value heads, or a
    /// scale that is not finite and positive).
    #[error("{kernel}: invalid argument: {what}")]
    InvalidArgument {
        /// Kernel or operation.
        kernel: String,
        /// What was wrong, with the values.
        what: String,
    },
    /// Two buffers (or two rows of one strided tensor) share memory where the operation needs
    /// them distinct: an output that overlaps an input, or strides that map two different
    /// rows of a tensor onto the same elements.
    #[error("{kernel}: buffer `{buffer}` overlaps {}: {what}", .with.map_or_else(|| "itself".to_string(), |w| format!("`{w}`")))]
    Overlap {
        /// Kernel or operation.
        kernel: String,
        /// The buffer (tensor) named first.
        buffer: &'static str,
        /// The other buffer; `None` when distinct rows of `buffer` itself overlap.
        with: Option<&'static str>,
        /// The addresses, spans or strides involved.
        what: String,
    },
    /// A buffer's element type differs from the one the operation was given for the others.
    #[error("{kernel}: buffer `{buffer}` holds {got} but the operation is {want}")]
    DTypeMismatch {
        /// Kernel or operation.
        kernel: String,
        /// Buffer name.
        buffer: &'static str,
        /// The buffer's dtype name.
        got: &'static str,
        /// The operation's dtype name.
        want: &'static str,
    },
    /// A buffer's device address is not aligned as the kernel needs.
    #[error("{kernel}: buffer `{buffer}` at {addr:#x} is not {align}-byte aligned")]
    Misaligned {
        /// Kernel (family/variant).
        kernel: String,
        /// Buffer name.
        buffer: &'static str,
        /// Device address.
        addr: u64,
        /// Alignment needed, bytes.
        align: usize,
    },
    /// A launch needs more of a device resource than the device has.
    #[error("{kernel}: {what}")]
    Resource {
        /// Kernel.
        kernel: String,
        /// What exceeded which limit.
        what: String,
    },
    /// Device memory ran out.
    #[error("out of device memory allocating {bytes} bytes for {what}")]
    OutOfMemory {
        /// Bytes asked for.
        bytes: usize,
        /// What the allocation was for.
        what: String,
    },
    /// A result did not match its reference.
    #[error("{kernel} {shape}: wrong result: {detail}")]
    Mismatch {
        /// Kernel.
        kernel: String,
        /// Shape, as text.
        shape: String,
        /// First wrong element and counts.
        detail: String,
    },
    /// A CUDA driver call failed. When the error is a device fault (see
    /// [`Error::is_device_fault`]) the message says so and what to do.
    #[error("CUDA driver error during {during}: {source}{}", fault_hint(source))]
    Driver {
        /// What rustile was doing.
        during: String,
        /// The driver's error.
        #[source]
        source: DriverError,
    },
    /// The simulator caught the kernel doing something wrong (out-of-bounds access, race,
    /// barrier divergence, deadlock, trap, panic).
    #[error("{kernel}: {at}: {what}")]
    Sim {
        /// Kernel.
        kernel: String,
        /// Block, thread and source location.
        at: String,
        /// What happened, with addresses.
        what: String,
    },
    /// A vendor library (cuBLAS) could not be loaded or failed to create its handle.
    #[error("{library}: {what}")]
    Library {
        /// Library name (`cuBLAS`).
        library: &'static str,
        /// What went wrong, with the names searched or the library's error.
        what: String,
    },
    /// A transfer pipeline's configuration cannot work (no streams, more streams than chunks,
    /// a chunk that does not fit the device).
    #[error("pipeline: {what}")]
    Pipeline {
        /// What was wrong, with the values.
        what: String,
    },
    /// Bad command-line or configuration input.
    #[error("{0}")]
    Usage(String),
    /// File output.
    #[error("I/O error on {path}: {source}")]
    Io {
        /// Path.
        path: String,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    /// [`Error::Driver`]: a CUDA driver call failed `during` what the caller names (for a
    /// caller's own cudarc calls next to rustile's, so one error type covers both).
    pub fn driver(during: impl Into<String>, source: DriverError) -> Self {
        Error::Driver {
            during: during.into(),
            source,
        }
    }

    /// A driver error relabelled with what was being done (`during`); other errors unchanged.
    pub fn context(self, during: impl FnOnce() -> String) -> Self {
        match self {
            Error::Driver { source, .. } => Error::Driver {
                during: during(),
                source,
            },
            e => e,
        }
    }

    /// Whether this is a *device fault*: a kernel trapped or touched memory it must not
    /// (`CUDA_ERROR_ILLEGAL_ADDRESS`, `LAUNCH_FAILED`, `ILLEGAL_INSTRUCTION`,
    /// `MISALIGNED_ADDRESS`, …). Such an error is sticky: every later call on that context
    /// returns it. To continue, drop every handle of the context (the [`crate::Gpu`], its
    /// buffers, streams and events) and open a new [`crate::Gpu`], which then gets a fresh
    /// primary context; [`crate::Gpu::new`] refuses a context that is still faulted.
    pub fn is_device_fault(&self) -> bool {
        matches!(self, Error::Driver { source, .. } if is_sticky(source))
    }

    /// Whether this is a "no GPU here" error ([`Error::NoDriver`] or [`Error::NoDevice`]): what
    /// a program that can fall back to the CPU checks for.
    pub fn is_no_gpu(&self) -> bool {
        matches!(self, Error::NoDriver | Error::NoDevice(_))
    }
}

/// Whether the driver error leaves its context unusable (the CUDA documentation's "sticky"
/// errors: the context must be destroyed).
pub(crate) fn is_sticky(e: &DriverError) -> bool {
    use cudarc::driver::sys::CUresult::*;
    matches!(
        e.0,
        CUDA_ERROR_ILLEGAL_ADDRESS
            | CUDA_ERROR_LAUNCH_TIMEOUT
            | CUDA_ERROR_ASSERT
            | CUDA_ERROR_HARDWARE_STACK_ERROR
            | CUDA_ERROR_ILLEGAL_INSTRUCTION
            | CUDA_ERROR_MISALIGNED_ADDRESS
            | CUDA_ERROR_INVALID_ADDRESS_SPACE
            | CUDA_ERROR_INVALID_PC
            | CUDA_ERROR_LAUNCH_FAILED
            | CUDA_ERROR_ECC_UNCORRECTABLE
    )
}

fn fault_hint(e: &DriverError) -> &'static str {
    if is_sticky(e) {
        " (a device fault: this context is lost; drop every handle of it and open a new Gpu)"
    } else {
        ""
    }
}

/// Attaches context to a driver error.
pub(crate) trait DriverContext<T> {
    fn during(self, what: impl FnOnce() -> String) -> Result<T>;
}

impl<T> DriverContext<T> for std::result::Result<T, DriverError> {
    fn during(self, what: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|source| Error::Driver {
            during: what(),
            source,
        })
    }
}
