//! One table of every kernel variant: the host's launchers, tests, benches and CLI all read it.

/// Element types the kernels are instantiated for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    /// IEEE binary32.
    F32,
    /// IEEE binary16 (moved by bit pattern as `u16` on the device).
    F16,
    /// bfloat16 (moved by bit pattern as `u16` on the device).
    Bf16,
}

impl DType {
    /// Size of one element in bytes.
    pub const fn bytes(self) -> usize {
        match self {
            DType::F32 => 4,
            DType::F16 | DType::Bf16 => 2,
        }
    }

    /// Lower-case name, as used in kernel symbols (`copy_scalar_f32`).
    pub const fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F16 => "f16",
            DType::Bf16 => "bf16",
        }
    }
}

/// The device type each [`DType`] is moved as, named like the `DType` variant (for
/// [`ptx_kernels!`](crate::ptx_kernels)).
pub mod elem {
    /// `DType::F32` on the device.
    pub type F32 = f32;
    /// `DType::F16` on the device: the bit pattern.
    pub type F16 = u16;
    /// `DType::Bf16` on the device: the bit pattern.
    pub type Bf16 = u16;
}

/// Kernel families.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    /// Contiguous copy.
    Copy,
    /// Copy that reads with a stride.
    Strided,
    /// Matrix transpose.
    Transpose,
    /// f32 matrix product `C = α·A·B + β·C`.
    Gemm,
}

impl Family {
    /// Every family, in report order.
    pub const ALL: [Family; 4] = [
        Family::Copy,
        Family::Strided,
        Family::Transpose,
        Family::Gemm,
    ];
    /// The memory-movement families (one source, one destination; `Problem` in the host).
    pub const MEMORY: [Family; 3] = [Family::Copy, Family::Strided, Family::Transpose];

    /// Lower-case name (`copy`, `strided`, `transpose`).
    pub const fn name(self) -> &'static str {
        match self {
            Family::Copy => "copy",
            Family::Strided => "strided",
            Family::Transpose => "transpose",
            Family::Gemm => "gemm",
        }
    }
}

/// How a variant's grid is shaped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Launch {
    /// 1-D grid over elements; the family computes its size from its own constants.
    Linear,
    /// A 2-D grid `(⌈cols/tile.1⌉, ⌈(rows + halo_rows)/tile.0⌉)` over tiles of a
    /// `rows × cols` matrix.
    Tiles {
        /// Input elements each block covers, `(rows, cols)`.
        tile: (u32, u32),
        /// Extra rows the grid must cover: `rows_ext = rows + halo_rows`.
        halo_rows: u32,
    },
}

impl Launch {
    /// Grid `(x, y, z)` for a `rows × cols` matrix (tiled launches only; `Linear` gives
    /// `None`).
    pub const fn tile_grid(self, rows: u64, cols: u64) -> Option<(u64, u64, u64)> {
        match self {
            Launch::Linear => None,
            Launch::Tiles { tile, halo_rows } => Some((
                cols.div_ceil(tile.1 as u64),
                (rows + halo_rows as u64).div_ceil(tile.0 as u64),
                1,
            )),
        }
    }
}

/// A kernel entry point as the simulator calls it: the launch's arguments, each widened to
/// 64 bits (pointers are simulated device addresses).
pub type SimFn = unsafe fn(&[u64]);

/// One instantiation of a variant.
#[derive(Debug)]
pub struct Entry {
    /// Element type.
    pub dtype: DType,
    /// PTX symbol.
    pub symbol: &'static str,
    /// The same kernel compiled for the host, for the simulator.
    pub sim: SimFn,
}

/// A kernel parameter type, rebuilt from its 64-bit launch argument in the simulator.
pub trait KernelArg {
    /// From the widened argument.
    fn from_arg(v: u64) -> Self;
}

impl<T> KernelArg for *const T {
    fn from_arg(v: u64) -> Self {
        v as usize as *const T
    }
}
impl<T> KernelArg for *mut T {
    fn from_arg(v: u64) -> Self {
        v as usize as *mut T
    }
}
impl KernelArg for u32 {
    fn from_arg(v: u64) -> Self {
        v as u32
    }
}
impl KernelArg for u64 {
    fn from_arg(v: u64) -> Self {
        v
    }
}
impl KernelArg for f32 {
    fn from_arg(v: u64) -> Self {
        f32::from_bits(v as u32)
    }
}

/// One kernel variant: a file of a family folder, instantiated for one or more dtypes.
#[derive(Debug)]
pub struct KernelInfo {
    /// The family the variant belongs to.
    pub family: Family,
    /// Short variant name, unique within its family (`vec16`).
    pub name: &'static str,
    /// Threads per block `(x, y, z)`.
    pub block: (u32, u32, u32),
    /// How blocks map onto the problem.
    pub launch: Launch,
    /// Dynamic shared memory per block, bytes, for a 4-byte element; scale by
    /// [`KernelInfo::shared_bytes`] for others.
    pub shared_bytes_f32: usize,
    /// Dynamic shared memory per block for 2-byte elements.
    pub shared_bytes_f16: usize,
    /// Entry points, one per dtype.
    pub symbols: &'static [Entry],
    /// One line: the technique.
    pub about: &'static str,
}

impl KernelInfo {
    /// The PTX symbol of this variant for `dtype`, if it is instantiated for it.
    pub fn symbol(&self, dtype: DType) -> Option<&'static str> {
        self.entry(dtype).map(|e| e.symbol)
    }

    /// The entry point of this variant for `dtype`.
    pub fn entry(&self, dtype: DType) -> Option<&'static Entry> {
        self.symbols.iter().find(|e| e.dtype == dtype)
    }

    /// Dynamic shared memory per block for `dtype`.
    pub fn shared_bytes(&self, dtype: DType) -> usize {
        match dtype {
            DType::F32 => self.shared_bytes_f32,
            DType::F16 | DType::Bf16 => self.shared_bytes_f16,
        }
    }

    /// `family/name`, e.g. `transpose/smem_padded`.
    pub fn id(&self) -> (&'static str, &'static str) {
        (self.family.name(), self.name)
    }
}

/// Every kernel variant of every family.
pub const KERNELS: &[&KernelInfo] = &[
    &crate::copy::v01_scalar::INFO,
    &crate::copy::v02_vec16::INFO,
    &crate::copy::v03_grid_stride::INFO,
    &crate::strided::v01_gather::INFO,
    &crate::transpose::v01_naive::INFO,
    &crate::transpose::v02_smem::INFO,
    &crate::transpose::v03_smem_padded::INFO,
    &crate::transpose::v04_smem_swizzled::INFO,
    &crate::transpose::v05_sector_aligned::INFO,
    &crate::gemm::v01_naive::INFO,
    &crate::gemm::v02_coalesced::INFO,
    &crate::gemm::v03_smem::INFO,
    &crate::gemm::v04_blocktile_1d::INFO,
    &crate::gemm::v05_blocktile_2d::INFO,
    &crate::gemm::v06_vectorized::INFO,
    &crate::gemm::v07_conflict_free::INFO,
    &crate::gemm::v08_warptile::INFO,
    &crate::gemm::v09_double_buffer::INFO,
    &crate::gemm::v10_tile_128x64::INFO,
    &crate::gemm::v12_kgroup_ring::INFO,
];

/// Kernels that are not variants of a family but helpers the host launches (the SGEMM
/// dispatcher's padding copy).
pub const HELPERS: &[&[Entry]] = &[
    crate::gemm::pad::SYMBOLS,
    crate::gemm::v08_warptile::split_k::SYMBOLS,
    crate::gemm::v08_warptile::split_k::reduce::SYMBOLS,
    crate::gemm::v11_nt_pipeline::SYMBOLS,
    crate::gemm::v11_nt_pipeline::split_k::SYMBOLS,
];

/// Tuning experiments: compiled and benchmarkable (`rustile bench gemm --variants`), not part of
/// a family's ladder, validation or dispatcher.
pub const EXPERIMENTS: &[&KernelInfo] = &[
    &crate::gemm::v08_warptile::experiments::INFO_DB16_ASYNC,
    &crate::gemm::v12_kgroup_ring::experiments::INFO_KG1,
    &crate::gemm::v12_kgroup_ring::experiments::INFO_KG4,
];

/// Looks a variant up by family and name.
pub fn find(family: Family, name: &str) -> Option<&'static KernelInfo> {
    KERNELS
        .iter()
        .copied()
        .find(|k| k.family == family && k.name == name)
}

/// Emits one `extern "ptx-kernel"` entry point per dtype for a generic kernel body, and the
/// `SYMBOLS` table the host reads. Inside the argument list, `T` is the element type.
///
/// ```ignore
/// ptx_kernels! {
///     fn copy_scalar(src: *const T, dst: *mut T, n: u64);
///     F32 => copy_scalar_f32, F16 => copy_scalar_f16
/// }
/// ```
#[macro_export]
macro_rules! ptx_kernels {
    (fn $body:ident $params:tt; $($dt:ident => $sym:ident),+ $(,)?) => {
        /// Entry points of each instantiation.
        pub const SYMBOLS: &[$crate::registry::Entry] = &[$($crate::registry::Entry {
            dtype: $crate::registry::DType::$dt,
            symbol: stringify!($sym),
            sim: $sym::sim_entry,
        }),+];
        $( $crate::ptx_kernels!(@entry $body [::<T>] $params $dt $sym); )+
    };
    (f32 fn $body:ident $params:tt => $sym:ident) => {
        /// Entry point.
        pub const SYMBOLS: &[$crate::registry::Entry] = &[$crate::registry::Entry {
            dtype: $crate::registry::DType::F32,
            symbol: stringify!($sym),
            sim: $sym::sim_entry,
        }];
        $crate::ptx_kernels!(@entry $body [] $params F32 $sym);
    };
    (@entry $body:ident [$($generics:tt)*] ($($arg:ident: $ty:ty),* $(,)?) $dt:ident $sym:ident) => {
        #[allow(non_snake_case)]
        mod $sym {
            #[allow(unused_imports)]
            use super::*;
            #[allow(dead_code)]
            type T = $crate::registry::elem::$dt;
            /// Entry point; see the generic body for the contract.
            ///
            /// # Safety
            /// The host launcher checks shapes and buffer lengths before launching.
            #[cfg(target_arch = "nvptx64")]
            #[no_mangle]
            pub unsafe extern "ptx-kernel" fn $sym($($arg: $ty),*) {
                super::$body$($generics)*($($arg),*)
            }
            /// The same entry for the simulator: arguments widened to u64, in order.
            ///
            /// # Safety
            /// Only inside a simulated launch, with the arguments the launcher checked.
            #[allow(unused_assignments, unused_mut, unused_variables)]
            pub unsafe fn sim_entry(args: &[u64]) {
                let mut i = 0;
                $(
                    let $arg = <$ty as $crate::registry::KernelArg>::from_arg(args[i]);
                    i += 1;
                )*
                super::$body$($generics)*($($arg),*)
            }
        }
    };
}
