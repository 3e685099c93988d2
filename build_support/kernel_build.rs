// Shared by build.rs and the PTX tests (both `#[path]`-import it): the one definition of
// how kernels-rs becomes PTX and of the source hash that proves `ptx/` is fresh.

use std::path::{Path, PathBuf};

/// A PTX flavour: one `-C target-cpu` build of kernels-rs.
#[allow(dead_code)]
pub struct FlavourSpec {
    /// Name used in file names (`sm_80`).
    pub name: &'static str,
    /// rustc `target-cpu`.
    pub target_cpu: &'static str,
    /// Extra rustc flags: sm_90a sets `--cfg rustile_sm90a`, which gates the Hopper-only kernels
    /// (rustc has no `target_feature` cfg for nvptx architectures).
    pub extra_flags: &'static [&'static str],
}

/// Every flavour: sm_80 PTX (PTX 7.0, runs on Ampere and later through the driver's JIT) and
/// sm_90a (PTX 8.0, Hopper-only features such as wgmma and setmaxnreg).
#[allow(dead_code)]
pub const FLAVOURS: [FlavourSpec; 2] = [
    FlavourSpec {
        name: "sm_80",
        target_cpu: "sm_80",
        extra_flags: &[],
    },
    FlavourSpec {
        name: "sm_90a",
        target_cpu: "sm_90a",
        extra_flags: &["--cfg", "rustile_sm90a"],
    },
];

/// rustc flags for a flavour, besides `-C target-cpu`: panics become `trap` instead of an
/// unresolved `panic_bounds_check` call, and LLVM unrolls like nvcc's `#pragma unroll`.
#[allow(dead_code)]
pub const KERNEL_RUSTFLAGS: &[&str] = &[
    "-Zunstable-options",
    "-Cpanic=immediate-abort",
    "-Cllvm-args=-unroll-threshold=2000",
];

/// File name of a flavour's PTX in `ptx/` and in `OUT_DIR`.
#[allow(dead_code)]
pub fn ptx_file_name(flavour: &str) -> String {
    format!("rustile_kernels.{flavour}.ptx")
}

/// Every file whose contents determine the PTX, relative to `kernels_dir`, sorted.
pub fn kernel_source_files(kernels_dir: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, root: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, root, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path.strip_prefix(root).unwrap_or(&path).to_path_buf());
            }
        }
    }
    let mut files = vec![PathBuf::from("Cargo.toml")];
    walk(&kernels_dir.join("src"), kernels_dir, &mut files);
    files.sort();
    files
}

/// SHA-256 over the kernel sources (paths and contents), the build flags and the pinned
/// toolchain file: what `ptx/SOURCE_HASH` records.
pub fn kernel_source_hash(kernels_dir: &Path, toolchain_file: &Path) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for rel in kernel_source_files(kernels_dir) {
        h.update(rel.to_string_lossy().replace('\\', "/").as_bytes());
        h.update([0]);
        h.update(std::fs::read(kernels_dir.join(&rel)).unwrap_or_default());
        h.update([0]);
    }
    for flag in KERNEL_RUSTFLAGS
        .iter()
        .chain(FLAVOURS.iter().flat_map(|f| f.extra_flags.iter()))
    {
        h.update(flag.as_bytes());
        h.update([0]);
    }
    h.update(std::fs::read(toolchain_file).unwrap_or_default());
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Inserts launch bounds — CUDA's `__launch_bounds__(threads, min_blocks)`, which rustc has no
/// attribute for — as `.maxntid threads, 1, 1` and `.minnctapersm min_blocks` after each named
/// entry's parameter list, so ptxas caps registers at 65536 / (threads · min_blocks); and drops
/// LLVM's `// begin inline asm` / `// end inline asm` comment lines. `bounds` holds
/// `(symbol, threads, min_blocks)`: the registry records' `bounds`
/// (`rustile_kernels::registry::launch_bounds`).
#[allow(dead_code)]
pub fn apply_launch_bounds(ptx: &str, bounds: &[(&str, u32, u32)]) -> String {
    let mut out = String::with_capacity(ptx.len() + 256);
    let mut pending: Option<(u32, u32)> = None;
    for line in ptx.lines() {
        // LLVM brackets every inline asm with these comments: megabytes of PTX, no meaning.
        if matches!(line.trim(), "// begin inline asm" | "// end inline asm") {
            continue;
        }
        out.push_str(line);
        out.push('\n');
        if let Some(rest) = line.trim_start().strip_prefix(".visible .entry ") {
            let name = rest.split('(').next().unwrap_or_default();
            pending = bounds
                .iter()
                .find(|(n, _, _)| *n == name)
                .map(|(_, t, b)| (*t, *b));
        }
        if let Some((threads, blocks)) = pending {
            if line.trim_start().starts_with(')') {
                out.push_str(&format!(
                    ".maxntid {threads}, 1, 1\n.minnctapersm {blocks}\n"
                ));
                pending = None;
            }
        }
    }
    out
}
