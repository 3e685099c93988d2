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
/// [`entry_points!`](crate::entry_points)).
pub mod elem {
    /// `DType::F32` on the device.
    pub type F32 = f32;
    /// `DType::F16` on the device: the bit pattern.
    pub type F16 = u16;
    /// `DType::Bf16` on the device: the bit pattern.
    pub type Bf16 = u16;
}

/// A kernel family: declared once in its folder's `mod.rs` as `pub const FAMILY`, listed by
/// the `families!` line in `lib.rs`. The associated constants name the families the host
/// refers to directly.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Family {
    /// Lower-case name (`copy`, `transpose`), as in `family/variant` and on the command line.
    pub name: &'static str,
    /// One line: what the family computes.
    pub about: &'static str,
}

#[allow(non_upper_case_globals)]
impl Family {
    /// Contiguous copy.
    pub const Copy: Family = crate::copy::FAMILY;
    /// Copy that reads with a stride.
    pub const Strided: Family = crate::strided::FAMILY;
    /// Matrix transpose.
    pub const Transpose: Family = crate::transpose::FAMILY;
    /// f32 matrix product `C = α·A·B + β·C`.
    pub const Gemm: Family = crate::gemm::FAMILY;
    /// Tensor-core matrix product, f16/bf16 in, f32 accumulation.
    pub const Hgemm: Family = crate::hgemm::FAMILY;
    /// Self-tests of the tensor-core primitives (not a family a user runs).
    pub const Selftest: Family = crate::selftest::FAMILY;

    /// The memory-movement families (one source, one destination; `Problem` in the host).
    pub const MEMORY: [Family; 3] = [Family::Copy, Family::Strided, Family::Transpose];

    /// Lower-case name (`copy`, `strided`, `transpose`).
    pub const fn name(self) -> &'static str {
        self.name
    }
}

/// Every family, in `families!` order.
pub fn families() -> impl Iterator<Item = Family> + Clone {
    crate::FAMILIES.iter().map(|(f, _)| *f)
}

/// The family called `name`.
pub fn family(name: &str) -> Option<Family> {
    families().find(|f| f.name == name)
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
    /// Persistent: about one block per SM, each walking output tiles of `tile` (rows, cols)
    /// through the tile scheduler.
    Persistent {
        /// Output elements each tile covers, `(rows, cols)`.
        tile: (u32, u32),
    },
}

impl Launch {
    /// Grid `(x, y, z)` for a `rows × cols` matrix (tiled launches only; `Linear` gives
    /// `None`).
    pub const fn tile_grid(self, rows: u64, cols: u64) -> Option<(u64, u64, u64)> {
        match self {
            Launch::Linear | Launch::Persistent { .. } => None,
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

/// The layout of a matrix product's B operand an entry is compiled for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Layout {
    /// Not a matrix product, or the kernel takes one layout only.
    Any,
    /// B row-major, K × N (N contiguous).
    Bn,
    /// B transposed, stored N × K (K contiguous).
    Bt,
    /// Convolution, channels last: activations NHWC, weights KRSC, output NHWC.
    Nhwc,
    /// Convolution, channels first: activations NCHW, weights KCRS, output NCHW.
    Nchw,
}

/// One instantiation of a variant: its signature, PTX symbol and simulator entry.
#[derive(Debug)]
pub struct Entry {
    /// Input element type.
    pub dtype: DType,
    /// Output element type (the input type for the memory families).
    pub out: DType,
    /// B layout (matrix products).
    pub layout: Layout,
    /// PTX symbol.
    pub symbol: &'static str,
    /// The same kernel compiled for the host, for the simulator; `None` for kernels that exist
    /// only in the sm_90a flavour (`wgmma`, TMA), which the simulator cannot run.
    pub sim: Option<SimFn>,
}

/// What a variant is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    /// A step of its family's ladder: validated, benchmarked, possibly dispatched to.
    Ladder,
    /// Launched by a dispatcher as part of another kernel's work (padding, split-K reduce,
    /// the pre-transposed-A pipeline).
    Helper,
    /// A tuning experiment: compiled and benchmarkable, not validated by default.
    Experiment,
    /// An alternative tile configuration of a ladder step (picked by an explicit option).
    Tuning,
    /// A self-test of device primitives.
    SelfTest,
    /// A ceiling kernel: measures a unit's peak, computes nothing useful.
    Ceiling,
}

/// What a variant needs from the device and its operands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Needs {
    /// Byte alignment every operand base address (and row pitch, for matrices) must have.
    pub align: u32,
    /// Operands described by TMA tensor maps (built by the host, in global memory).
    pub tma: bool,
    /// Compiled only in the sm_90a flavour (`wgmma`, `setmaxnreg`, TMA): compute capability 9.0.
    pub sm90a: bool,
    /// Blocks per cluster along x (1: no cluster). A clustered kernel is launched with
    /// `cuLaunchKernelEx` and a cluster dimension of `(cluster, 1, 1)`; its grid is a multiple
    /// of it.
    pub cluster: u32,
}

impl Needs {
    /// Natural alignment only, any device of the sm_80 flavour.
    pub const NONE: Needs = Needs {
        align: 1,
        tma: false,
        sm90a: false,
        cluster: 1,
    };
    /// Hopper: `wgmma` and TMA, 16-byte-aligned operands and pitches.
    pub const HOPPER_TMA: Needs = Needs {
        align: 16,
        tma: true,
        sm90a: true,
        cluster: 1,
    };
    /// The sm_90a flavour only, no operand requirement beyond natural alignment.
    pub const SM90A: Needs = Needs {
        align: 1,
        tma: false,
        sm90a: true,
        cluster: 1,
    };
    /// [`Needs::HOPPER_TMA`], launched as clusters of two blocks (TMA multicast between them).
    pub const HOPPER_TMA_PAIR: Needs = Needs {
        align: 16,
        tma: true,
        sm90a: true,
        cluster: 2,
    };
    /// 16-byte-aligned operands (vector or `cp.async` loads).
    pub const ALIGN16: Needs = Needs {
        align: 16,
        tma: false,
        sm90a: false,
        cluster: 1,
    };
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
impl KernelArg for bool {
    fn from_arg(v: u64) -> Self {
        v != 0
    }
}
impl KernelArg for f32 {
    fn from_arg(v: u64) -> Self {
        f32::from_bits(v as u32)
    }
}

/// One registry record: a kernel variant (a file of a family folder, or a helper, experiment,
/// tuning, self-test or ceiling kernel), instantiated for one or more signatures.
#[derive(Debug)]
pub struct KernelInfo {
    /// The family the variant belongs to.
    pub family: Family,
    /// Short variant name, unique within its family (`vec16`).
    pub name: &'static str,
    /// What the variant is for.
    pub role: Role,
    /// Launch bounds `(max threads per block, min blocks per SM)`, CUDA's
    /// `__launch_bounds__`: the build writes them into the PTX as `.maxntid` / `.minnctapersm`.
    pub bounds: Option<(u32, u32)>,
    /// Device and operand requirements.
    pub needs: Needs,
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
    /// A ladder step of the sm_80 flavour with no launch bounds and no shared memory: the
    /// defaults a record's `..KernelInfo::BASE` fills in.
    pub const BASE: KernelInfo = KernelInfo {
        family: Family::Copy,
        name: "",
        role: Role::Ladder,
        bounds: None,
        needs: Needs::NONE,
        block: (1, 1, 1),
        launch: Launch::Linear,
        shared_bytes_f32: 0,
        shared_bytes_f16: 0,
        symbols: &[],
        about: "",
    };

    /// The entry for input `dtype`, output `out` and B layout `layout`.
    pub fn entry_for(&self, dtype: DType, out: DType, layout: Layout) -> Option<&'static Entry> {
        self.symbols
            .iter()
            .find(|e| e.dtype == dtype && e.out == out && e.layout == layout)
    }

    /// Whether the PTX flavour (`sm90a`: the sm_90a one) holds this variant's entries.
    pub const fn in_flavour(&self, sm90a: bool) -> bool {
        sm90a || !self.needs.sm90a
    }

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

    /// Threads per block.
    pub const fn threads(&self) -> u32 {
        self.block.0 * self.block.1 * self.block.2
    }

    /// `family/name`, e.g. `transpose/smem_padded`.
    pub fn id(&self) -> (&'static str, &'static str) {
        (self.family.name(), self.name)
    }
}

/// The registry: every entry point of every family, one record each — ladder steps, helpers,
/// experiments, tunings, self-tests and ceiling kernels — gathered from each family folder's
/// `RECORDS` through the `families!` list in `lib.rs`. Tests, the build (launch bounds), the
/// host's launchers, the simulator and the CLI read this table and nothing else. Iterate it like
/// a slice of `&KernelInfo`: `KERNELS.iter()`, `for k in KERNELS`.
pub const KERNELS: Registry = Registry;

/// The type of [`KERNELS`].
#[derive(Clone, Copy, Debug)]
pub struct Registry;

/// Iterator over [`KERNELS`].
pub type RegistryIter = core::iter::FlatMap<
    core::slice::Iter<'static, (Family, &'static [&'static KernelInfo])>,
    core::slice::Iter<'static, &'static KernelInfo>,
    fn(
        &'static (Family, &'static [&'static KernelInfo]),
    ) -> core::slice::Iter<'static, &'static KernelInfo>,
>;

impl Registry {
    /// Every record, family by family.
    pub fn iter(self) -> RegistryIter {
        fn records(
            f: &'static (Family, &'static [&'static KernelInfo]),
        ) -> core::slice::Iter<'static, &'static KernelInfo> {
            f.1.iter()
        }
        crate::FAMILIES
            .iter()
            .flat_map(records as fn(&'static (Family, &'static [&'static KernelInfo])) -> _)
    }
}

impl IntoIterator for Registry {
    type Item = &'static &'static KernelInfo;
    type IntoIter = RegistryIter;
    fn into_iter(self) -> RegistryIter {
        self.iter()
    }
}

/// Looks a record up by family and name.
pub fn find(family: Family, name: &str) -> Option<&'static KernelInfo> {
    KERNELS
        .iter()
        .copied()
        .find(|k| k.family == family && k.name == name)
}

/// The records of `family` with `role`, in registry order.
pub fn of(family: Family, role: Role) -> impl Iterator<Item = &'static KernelInfo> {
    KERNELS
        .iter()
        .copied()
        .filter(move |k| k.family == family && k.role == role)
}

/// The record and entry that own PTX symbol `symbol`.
pub fn by_symbol(symbol: &str) -> Option<(&'static KernelInfo, &'static Entry)> {
    KERNELS.iter().copied().find_map(|k| {
        k.symbols
            .iter()
            .find(|e| e.symbol == symbol)
            .map(|e| (k, e))
    })
}

/// Every `(symbol, threads, min blocks per SM)` with launch bounds, for the build.
pub fn launch_bounds() -> impl Iterator<Item = (&'static str, u32, u32)> {
    KERNELS.iter().flat_map(|k| {
        k.bounds
            .into_iter()
            .flat_map(move |(t, b)| k.symbols.iter().map(move |e| (e.symbol, t, b)))
    })
}

/// Declares a kernel's entry points — the one macro every kernel file uses: for each
/// instantiation an `extern "ptx-kernel"` function (its symbol), the same entry for the
/// simulator (arguments widened to `u64`, in order), and the `Entry` table the record lists.
///
/// ```ignore
/// entry_points! {
///     pub const SYMBOLS;
///     fn copy_scalar(src: *const T, dst: *mut T, n: u64);
///     copy_scalar_f32 => (F32, F32, Any) [T = f32];
///     copy_scalar_f16 => (F16, F16, Any) [T = u16];
/// }
/// ```
///
/// Each instantiation names its input type, output type and B layout (`Any`, `Bn`, `Bt`) and
/// binds the body's generic parameters: types first (`[T = f32]`), then constants after a `;`
/// (`[I = F16, O = OutF16; TB: u32 = 1, AL: bool = true]`); the parameter list may use those
/// names. `sm90a fn path::to::body(...)` declares entries that exist only in the sm_90a
/// flavour (no simulator entry).
#[macro_export]
macro_rules! entry_points {
    (
        $vis:vis const $table:ident;
        fn $body:ident $params:tt;
        $($sym:ident => ($i:ident, $o:ident, $l:ident) $gen:tt;)+
    ) => {
        #[doc = "Entry points of each instantiation."]
        $vis const $table: &[$crate::registry::Entry] = &[$($crate::registry::Entry {
            dtype: $crate::registry::DType::$i,
            out: $crate::registry::DType::$o,
            layout: $crate::registry::Layout::$l,
            symbol: stringify!($sym),
            sim: Some($sym::sim_entry),
        }),+];
        $( $crate::entry_points!(@entry any ($body) $params $sym $gen); )+
    };
    (
        $vis:vis const $table:ident;
        sm90a fn $module:ident :: $body:ident $params:tt;
        $($sym:ident => ($i:ident, $o:ident, $l:ident) $gen:tt;)+
    ) => {
        $crate::entry_points!(@sm90a $vis $table ($module::$body) $params $($sym ($i, $o, $l) $gen)+);
    };
    (
        $vis:vis const $table:ident;
        sm90a fn $body:ident $params:tt;
        $($sym:ident => ($i:ident, $o:ident, $l:ident) $gen:tt;)+
    ) => {
        $crate::entry_points!(@sm90a $vis $table ($body) $params $($sym ($i, $o, $l) $gen)+);
    };
    (@sm90a $vis:vis $table:ident $body:tt $params:tt
        $($sym:ident ($i:ident, $o:ident, $l:ident) $gen:tt)+) => {
        #[doc = "Entry points of each instantiation (sm_90a flavour only)."]
        $vis const $table: &[$crate::registry::Entry] = &[$($crate::registry::Entry {
            dtype: $crate::registry::DType::$i,
            out: $crate::registry::DType::$o,
            layout: $crate::registry::Layout::$l,
            symbol: stringify!($sym),
            sim: None,
        }),+];
        $( $crate::entry_points!(@entry sm90a $body $params $sym $gen); )+
    };
    (@entry any ($($body:tt)*) ($($arg:ident: $ty:ty),* $(,)?) $sym:ident
        [$($tn:ident = $tv:ty),* $(; $($cn:ident: $ct:ty = $cv:expr),*)?]) => {
        #[allow(non_snake_case, dead_code)]
        #[doc = concat!("Entry `", stringify!($sym), "`.")]
        pub mod $sym {
            #[allow(unused_imports)]
            use super::*;
            $( #[allow(dead_code)] type $tn = $tv; )*
            $($( #[allow(dead_code)] const $cn: $ct = $cv; )*)?
            /// Entry point; see the generic body for the contract.
            ///
            /// # Safety
            /// The host launcher checks shapes and buffer lengths before launching.
            #[cfg(target_arch = "nvptx64")]
            #[no_mangle]
            #[allow(clippy::too_many_arguments)]
            pub unsafe extern "ptx-kernel" fn $sym($($arg: $ty),*) {
                super::$($body)*::<$($tn,)* $($({ $cn },)*)?>($($arg),*)
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
                super::$($body)*::<$($tn,)* $($({ $cn },)*)?>($($arg),*)
            }
        }
    };
    (@entry sm90a ($($body:tt)*) ($($arg:ident: $ty:ty),* $(,)?) $sym:ident
        [$($tn:ident = $tv:ty),* $(; $($cn:ident: $ct:ty = $cv:expr),*)?]) => {
        #[cfg(all(target_arch = "nvptx64", rustile_sm90a))]
        #[allow(non_snake_case, dead_code)]
        #[doc = concat!("Entry `", stringify!($sym), "` (sm_90a only).")]
        pub mod $sym {
            #[allow(unused_imports)]
            use super::*;
            $( #[allow(dead_code)] type $tn = $tv; )*
            $($( #[allow(dead_code)] const $cn: $ct = $cv; )*)?
            /// Entry point; see the generic body for the contract.
            ///
            /// # Safety
            /// The host launcher checks shapes, buffers and tensor maps before launching.
            #[no_mangle]
            #[allow(clippy::too_many_arguments)]
            pub unsafe extern "ptx-kernel" fn $sym($($arg: $ty),*) {
                super::$($body)*::<$($tn,)* $($({ $cn },)*)?>($($arg),*)
            }
        }
    };
}
