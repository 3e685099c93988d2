//! The kernel families, one folder each, mirroring `kernels-rs/src/<family>/`, and the
//! [`Family`] trait that validation (and later the bench and the report) iterate.
//!
//! A new family is its folder here (with `pub const FAMILY: &dyn Family`) plus its name in the
//! `families!` line below — and, in kernels-rs, its folder plus its name in that crate's
//! `families!` line: two one-line registrations in all. (The trait is not the registry's
//! [`crate::Family`] struct, which names a family in the kernel table; the memory families and
//! SGEMM implement the trait from their registry entries.)

use rustile_kernels::registry::DType;

use crate::backend::Backend;
use crate::error::Result;

pub mod fuzz;
pub mod memory;
pub mod run;
pub mod selftest;
pub mod suite;

/// Declares the family folders and [`all`]: a new family is its folder plus one name here.
macro_rules! families {
    ($($family:ident),+ $(,)?) => {
        $(pub mod $family;)+
        /// Every family, in report order.
        pub fn all() -> Vec<&'static dyn Family> {
            vec![$($family::FAMILY),+]
        }
    };
}

families!(copy, strided, transpose, gemm, hgemm, attention, conv);

/// The family called `name`, if any.
pub fn find(name: &str) -> Option<&'static dyn Family> {
    all().into_iter().find(|f| f.name() == name)
}

/// A kernel family as validation sees it: its cases at a scale on a back end, and how one
/// case runs.
pub trait Family: Sync {
    /// Lower-case name, as in `kernels-rs/src/<name>/` and on the command line.
    fn name(&self) -> &'static str;

    /// One line: what the family computes.
    fn about(&self) -> &'static str;

    /// The validation cases at `scale` that `backend` can run. The family leaves out what the
    /// back end cannot run (the simulator models no `wgmma` or TMA; a GPU without sm_90a has no
    /// `wgmma` either) and sizes the shapes to it.
    fn cases(&self, backend: &Backend, scale: Scale) -> Vec<Case>;

    /// Runs one of this family's cases with inputs drawn from `seed`.
    fn run(&self, backend: &Backend, case: &Case, seed: u64) -> Outcome {
        case.run(backend, seed)
    }

    /// A random case for `backend` drawn from `rng` (every choice the case makes: variant,
    /// dtype, shape, strides, scalars, options), sized to the back end ([`fuzz::Size`]), and
    /// its output function; `None` if the family has no generator. The same `rng` state gives
    /// the same case. [`fuzz::run`] runs them.
    fn fuzz(&self, backend: &Backend, rng: &mut dyn rand::RngCore) -> Option<fuzz::Fuzzed> {
        let _ = (backend, rng);
        None
    }

    /// `rustile run <name>[/variant] --in … --out …`: runs the kernel (the variant
    /// [`run::RunRequest::variant`] names, else the family's dispatcher or default) on the
    /// arrays of `req` on `backend` and returns the output. Shapes and types are checked before
    /// anything is allocated. Default: [`crate::error::Error::Unsupported`].
    fn run_npy(&self, backend: &Backend, req: &run::RunRequest) -> Result<run::Tensor> {
        let _ = (backend, req);
        Err(crate::error::Error::Unsupported {
            kernel: self.name().into(),
            what: "no `rustile run` support for this family".into(),
        })
    }

    /// The family's own command line, `rustile <name> …`, if it has one: [`crate::cli`]
    /// attaches it to the top-level grammar under the family's name (whatever name the
    /// command was built with), so its arguments are parsed, and bad ones refused with exit
    /// code 2, before anything runs.
    fn command(&self) -> Option<clap::Command> {
        None
    }

    /// Checks what clap's per-argument parsers cannot on `matches` (of [`Family::command`]):
    /// values that span several arguments, or that the family's typed arguments refuse. A
    /// usage error (exit code 2), before any GPU is opened; [`crate::cli`] formats the error
    /// (a raw one, as `FromArgMatches` gives) with the family's subcommand.
    fn check_command(&self, matches: &clap::ArgMatches) -> std::result::Result<(), clap::Error> {
        let _ = matches;
        Ok(())
    }

    /// Runs `rustile <name> …` on the arguments `matches` (of [`Family::command`]).
    fn run_command(&self, matches: &clap::ArgMatches) -> Result<()> {
        let _ = matches;
        Err(crate::error::Error::Usage(format!(
            "the {} family has no command of its own",
            self.name()
        )))
    }
}

/// Every family with its own command line ([`Family::command`]), and that command, named after
/// the family.
pub fn commands() -> Vec<(&'static dyn Family, clap::Command)> {
    all()
        .into_iter()
        .filter_map(|f| f.command().map(|c| (f, c.name(f.name()))))
        .collect()
}

/// How thorough a validation run is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    /// Every odd case, at shapes that take seconds in all (the main job, the GPU tests).
    Quick,
    /// Quick plus the large shapes (`rustile validate`).
    Full,
}

/// The check a [`Case`] runs: inputs from the seed, a launch on the back end, the comparison.
pub type CheckFn = Box<dyn Fn(&Backend, u64) -> Result<()> + Send + Sync>;

/// One validation case: a kernel at a dtype and a shape, and the check that runs it.
pub struct Case {
    /// `family/variant`.
    pub kernel: String,
    /// Input dtype.
    pub dtype: DType,
    /// Shape (and whatever else distinguishes the case).
    pub shape: String,
    check: CheckFn,
}

impl Case {
    /// A case that runs `check`.
    pub fn new(
        kernel: impl Into<String>,
        dtype: DType,
        shape: impl Into<String>,
        check: impl Fn(&Backend, u64) -> Result<()> + Send + Sync + 'static,
    ) -> Self {
        Self {
            kernel: kernel.into(),
            dtype,
            shape: shape.into(),
            check: Box::new(check),
        }
    }

    /// `kernel dtype shape`, for progress lines.
    pub fn label(&self) -> String {
        format!("{} {} {}", self.kernel, self.dtype.name(), self.shape)
    }

    /// Runs the check.
    pub fn run(&self, backend: &Backend, seed: u64) -> Outcome {
        let error = (self.check)(backend, seed).err();
        Outcome {
            kernel: self.kernel.clone(),
            dtype: self.dtype.name(),
            shape: self.shape.clone(),
            seed,
            fault: error.as_ref().is_some_and(|e| e.is_device_fault()),
            error: error.map(|e| e.to_string()),
            dump: None,
        }
    }
}

impl std::fmt::Debug for Case {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.label())
    }
}

/// One validated case.
#[derive(Debug, serde::Serialize)]
pub struct Outcome {
    /// `family/variant`.
    pub kernel: String,
    /// dtype name.
    pub dtype: &'static str,
    /// Shape.
    pub shape: String,
    /// The seed its inputs were drawn from (`rustile validate --case LABEL --seed SEED`
    /// replays it).
    pub seed: u64,
    /// `None` if correct, else the error.
    pub error: Option<String>,
    /// Whether the error was a device fault ([`crate::Error::is_device_fault`]): the
    /// context is lost, and later cases on it cannot run.
    pub fault: bool,
    /// Where its inputs, output and reference were dumped as `.npy`, if they were.
    pub dump: Option<String>,
}

impl Outcome {
    /// `kernel dtype shape`, as [`Case::label`].
    pub fn label(&self) -> String {
        format!("{} {} {}", self.kernel, self.dtype, self.shape)
    }
}
