//! The PTX embedded at build time, one text per flavour, and the choice between them.

/// A PTX flavour of `kernels-rs`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavour {
    /// `-C target-cpu=sm_80`, PTX 7.0: any device of compute capability 8.0 or newer.
    Sm80,
    /// `-C target-cpu=sm_90a`, PTX 8.0 with Hopper-only features: compute capability 9.0 only.
    Sm90a,
}

impl Flavour {
    /// Both flavours.
    pub const ALL: [Flavour; 2] = [Flavour::Sm80, Flavour::Sm90a];

    /// Name, as in file names.
    pub const fn name(self) -> &'static str {
        match self {
            Flavour::Sm80 => "sm_80",
            Flavour::Sm90a => "sm_90a",
        }
    }

    /// The PTX text.
    pub fn text(self) -> &'static str {
        match self {
            Flavour::Sm80 => PTX_SM80,
            Flavour::Sm90a => PTX_SM90A,
        }
    }

    /// The flavour for a compute capability: sm_90a on 9.0 (its arch-specific features run
    /// nowhere else), sm_80 on every other 8.0+ device; `None` below 8.0.
    pub const fn for_compute_capability(major: i32, minor: i32) -> Option<Flavour> {
        match (major, minor) {
            (9, 0) => Some(Flavour::Sm90a),
            (m, _) if m >= 8 => Some(Flavour::Sm80),
            _ => None,
        }
    }
}

// `static`, not `const`: one copy in the binary however many call sites read it (a `const`
// string is duplicated into every codegen unit that uses it; the PTX is megabytes).
static PTX_SM80: &str = include_str!(concat!(env!("OUT_DIR"), "/rustile_kernels.sm_80.ptx"));
static PTX_SM90A: &str = include_str!(concat!(env!("OUT_DIR"), "/rustile_kernels.sm_90a.ptx"));

/// Where the embedded PTX came from: `"built"` (this build compiled kernels-rs) or
/// `"committed"` (the nvptx toolchain was missing and `ptx/` was used).
pub const ORIGIN: &str = env!("RUSTILE_PTX_ORIGIN");

/// Hash of the kernel sources at build time (as recorded in `ptx/SOURCE_HASH` when fresh).
pub const SOURCE_HASH: &str = env!("RUSTILE_PTX_SOURCE_HASH");

/// Whether `ptx` declares a kernel entry point named `symbol`.
pub fn has_entry(ptx: &str, symbol: &str) -> bool {
    ptx.lines().any(|line| {
        line.trim_start()
            .strip_prefix(".visible .entry ")
            .and_then(|rest| rest.strip_prefix(symbol))
            .is_some_and(|rest| rest.starts_with('('))
    })
}

/// Every kernel entry point declared in `ptx`.
pub fn entries(ptx: &str) -> Vec<&str> {
    ptx.lines()
        .filter_map(|line| line.trim_start().strip_prefix(".visible .entry "))
        .filter_map(|rest| rest.split('(').next())
        .collect()
}

/// A PTX module holding only `symbol`: the file's prelude (version, target, address size and
/// the file-scope declarations before the first function), every other file-scope data
/// declaration (`.global` / `.const` lines at column 0: LLVM places constant tables it hoists
/// out of a kernel, such as a small lookup array, next to the first function that uses them,
/// which need not be `symbol`), then that entry's text, up to and including its closing brace.
/// `None` if `ptx` has no such entry. rustile's kernels call no other functions (everything is
/// inlined; panics are `trap`), so each entry stands alone once its data is declared.
pub fn entry_module(ptx: &str, symbol: &str) -> Option<String> {
    let head = format!(".visible .entry {symbol}(");
    let start = ptx.find(&head)?;
    let prelude_end = [
        ".visible .entry ",
        "\t// .globl",
        ".visible .func",
        ".func ",
    ]
    .iter()
    .filter_map(|m| ptx.find(m))
    .min()
    .unwrap_or(start);
    let body = &ptx[start..];
    let end = body.find("\n}\n").map(|i| i + 3).unwrap_or(body.len());
    let mut out = String::with_capacity(prelude_end + end + 1);
    out.push_str(&ptx[..prelude_end]);
    for decl in file_scope_data(&ptx[prelude_end..]) {
        out.push_str(decl);
        out.push('\n');
    }
    out.push_str(&body[..end]);
    Some(out)
}

/// The file-scope data declarations (`.global` or `.const`, at column 0) in `ptx`. Inside a
/// function body every line is indented, so a column-0 declaration is file scope.
pub fn file_scope_data(ptx: &str) -> impl Iterator<Item = &str> {
    ptx.lines()
        .filter(|line| line.starts_with(".global ") || line.starts_with(".const "))
}
