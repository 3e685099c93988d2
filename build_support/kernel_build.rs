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

/// File name of a flavour's PTX in `OUT_DIR`.
#[allow(dead_code)]
pub fn ptx_file_name(flavour: &str) -> String {
    format!("rustile_kernels.{flavour}.ptx")
}

/// File name of a flavour's committed PTX in `ptx/`: gzip-compressed (`zcat` reads it). Every
/// kernel change rewrites most of the ~50 MB of PTX text (LLVM renumbers registers and
/// labels), so committing it as text made each regeneration an ~80 MB diff; compressed it is
/// ~5 MB of binary.
#[allow(dead_code)]
pub fn committed_ptx_file_name(flavour: &str) -> String {
    format!("{}.gz", ptx_file_name(flavour))
}

/// CRC-32 (IEEE 802.3, reflected, as gzip's trailer).
fn crc32(data: &[u8]) -> u32 {
    let mut table = [0u32; 256];
    for (i, t) in table.iter_mut().enumerate() {
        let mut c = i as u32;
        for _ in 0..8 {
            c = if c & 1 != 0 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
        }
        *t = c;
    }
    !data.iter().fold(!0u32, |c, &b| {
        table[((c ^ u32::from(b)) & 0xFF) as usize] ^ (c >> 8)
    })
}

/// `data` as a gzip member (RFC 1952) with no name and no time stamp, so the same PTX always
/// gives the same bytes.
#[allow(dead_code)]
pub fn gzip(data: &[u8]) -> Vec<u8> {
    let mut out = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255];
    out.extend(miniz_oxide::deflate::compress_to_vec(data, 9));
    out.extend(crc32(data).to_le_bytes());
    out.extend((data.len() as u32).to_le_bytes());
    out
}

/// The contents of a one-member gzip file: its header (optional extra field, name, comment and
/// header CRC skipped), the deflate stream, and the trailer's CRC and length checked.
#[allow(dead_code)]
pub fn gunzip(gz: &[u8]) -> Result<Vec<u8>, String> {
    if gz.len() < 18 || gz[0..3] != [0x1f, 0x8b, 8] {
        return Err("not a gzip (deflate) file".into());
    }
    let flags = gz[3];
    let mut at = 10usize;
    let skip_zero_terminated = |at: usize| -> Option<usize> {
        gz.get(at..)?
            .iter()
            .position(|&b| b == 0)
            .map(|p| at + p + 1)
    };
    if flags & 4 != 0 {
        let extra = gz.get(at..at + 2).ok_or("truncated gzip header")?;
        at += 2 + usize::from(u16::from_le_bytes([extra[0], extra[1]]));
    }
    if flags & 8 != 0 {
        at = skip_zero_terminated(at).ok_or("truncated gzip name")?;
    }
    if flags & 16 != 0 {
        at = skip_zero_terminated(at).ok_or("truncated gzip comment")?;
    }
    if flags & 2 != 0 {
        at += 2;
    }
    let body = gz.get(at..gz.len() - 8).ok_or("truncated gzip file")?;
    let data = miniz_oxide::inflate::decompress_to_vec(body)
        .map_err(|e| format!("corrupt deflate stream: {e:?}"))?;
    let trailer = &gz[gz.len() - 8..];
    let crc = u32::from_le_bytes([trailer[0], trailer[1], trailer[2], trailer[3]]);
    let len = u32::from_le_bytes([trailer[4], trailer[5], trailer[6], trailer[7]]);
    if crc != crc32(&data) || len != data.len() as u32 {
        return Err("gzip trailer does not match the contents (CRC or length)".into());
    }
    Ok(data)
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
