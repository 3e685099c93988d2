//! Assembling the embedded PTX with `ptxas` (no GPU needed): proves every flavour assembles for
//! its architectures and reports registers, shared memory, stack and spills per kernel.

use std::path::PathBuf;
use std::process::Command;

use crate::error::{Error, Result};
use crate::ptx::Flavour;

/// Resources of one kernel as `ptxas -v` reports them.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct KernelResources {
    /// Entry point.
    pub kernel: String,
    /// Architecture assembled for (`sm_90`).
    pub arch: String,
    /// Registers per thread.
    pub registers: u32,
    /// Static shared memory, bytes.
    pub shared_bytes: u32,
    /// Stack frame, bytes.
    pub stack_bytes: u32,
    /// Spill stores, bytes.
    pub spill_stores: u32,
    /// Spill loads, bytes.
    pub spill_loads: u32,
}

/// The architectures each flavour is assembled for: sm_80 PTX runs on every 8.0+ device, so it
/// is checked for sm_80 and sm_90; sm_90a PTX only for sm_90a.
pub fn archs(flavour: Flavour) -> &'static [&'static str] {
    match flavour {
        Flavour::Sm80 => &["sm_80", "sm_90"],
        Flavour::Sm90a => &["sm_90a"],
    }
}

/// Finds `ptxas`: `$RUSTILE_PTXAS`, then `PATH`, then `/usr/local/cuda/bin`, then the
/// `nvidia-cuda-nvcc` wheel in any `python3`'s site-packages (`pip install
/// "nvidia-cuda-nvcc==13.0.*"`).
pub fn find() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("RUSTILE_PTXAS") {
        return Some(PathBuf::from(p));
    }
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("ptxas"))
            .find(|p| p.is_file())
    });
    if on_path.is_some() {
        return on_path;
    }
    let cuda = PathBuf::from("/usr/local/cuda/bin/ptxas");
    if cuda.is_file() {
        return Some(cuda);
    }
    let out = Command::new("python3")
        .args([
            "-c",
            "import nvidia, os; print(os.path.join(list(nvidia.__path__)[0], 'cu13', 'bin', 'ptxas'))",
        ])
        .output()
        .ok()?;
    let p = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    p.is_file().then_some(p)
}

/// `ptxas --version`'s last line.
pub fn version(ptxas: &std::path::Path) -> Option<String> {
    let out = Command::new(ptxas).arg("--version").output().ok()?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .rfind(|l| !l.trim().is_empty())
        .map(str::to_string)
}

/// A fresh temporary directory per call: tests assemble concurrently in one process.
fn scratch_dir(what: &str, arch: &str) -> PathBuf {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    std::env::temp_dir().join(format!("rustile-{what}-{}-{n}-{arch}", std::process::id()))
}

/// Assembles `ptx` for `arch` and parses the per-kernel resource lines.
pub fn assemble(ptxas: &std::path::Path, ptx: &str, arch: &str) -> Result<Vec<KernelResources>> {
    let dir = scratch_dir("ptxas", arch);
    let io = |source| Error::Io {
        path: dir.display().to_string(),
        source,
    };
    std::fs::create_dir_all(&dir).map_err(io)?;
    let input = dir.join("kernels.ptx");
    std::fs::write(&input, ptx).map_err(io)?;
    let out = Command::new(ptxas)
        .arg(format!("-arch={arch}"))
        .arg("-v")
        .arg(&input)
        .arg("-o")
        .arg(dir.join("kernels.cubin"))
        .output()
        .map_err(|source| Error::Io {
            path: ptxas.display().to_string(),
            source,
        })?;
    let _ = std::fs::remove_dir_all(&dir);
    let log = String::from_utf8_lossy(&out.stderr).into_owned();
    if !out.status.success() {
        return Err(Error::Usage(format!("ptxas -arch={arch} failed:\n{log}")));
    }
    Ok(parse(&log, arch))
}

/// Assembles `ptx` for `arch` and disassembles the cubin with `cuobjdump -sass`
/// (`$RUSTILE_CUOBJDUMP`, else next to `ptxas` as in CUDA installs). Returns ptxas's log and
/// the SASS.
pub fn assemble_sass(ptxas: &std::path::Path, ptx: &str, arch: &str) -> Result<(String, String)> {
    let dir = scratch_dir("sass", arch);
    let io = |source| Error::Io {
        path: dir.display().to_string(),
        source,
    };
    std::fs::create_dir_all(&dir).map_err(io)?;
    let input = dir.join("kernels.ptx");
    let cubin = dir.join("kernels.cubin");
    std::fs::write(&input, ptx).map_err(io)?;
    let run = |cmd: &mut Command, what: &str| {
        let out = cmd.output().map_err(|source| Error::Io {
            path: what.to_string(),
            source,
        })?;
        if !out.status.success() {
            return Err(Error::Usage(format!(
                "{what} failed:\n{}",
                String::from_utf8_lossy(&out.stderr)
            )));
        }
        Ok(out)
    };
    let result = (|| {
        let asm = run(
            Command::new(ptxas)
                .arg(format!("-arch={arch}"))
                .arg("-v")
                .arg(&input)
                .arg("-o")
                .arg(&cubin),
            "ptxas",
        )?;
        let cuobjdump = std::env::var_os("RUSTILE_CUOBJDUMP")
            .map(PathBuf::from)
            .unwrap_or_else(|| ptxas.with_file_name("cuobjdump"));
        let dis = run(
            Command::new(&cuobjdump).arg("-sass").arg(&cubin),
            "cuobjdump",
        )?;
        Ok((
            String::from_utf8_lossy(&asm.stderr).into_owned(),
            String::from_utf8_lossy(&dis.stdout).into_owned(),
        ))
    })();
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// The SASS of one function from `cuobjdump -sass` output.
pub fn sass_function<'a>(sass: &'a str, symbol: &str) -> Option<&'a str> {
    let header = format!("Function : {symbol}\n");
    let start = sass.find(&header)? + header.len();
    let rest = &sass[start..];
    let end = rest.find("Function : ").unwrap_or(rest.len());
    Some(&rest[..end])
}

/// Parses `ptxas -v` output.
pub fn parse(log: &str, arch: &str) -> Vec<KernelResources> {
    let number_before = |line: &str, unit: &str| -> u32 {
        line.split(',')
            .find(|part| part.contains(unit))
            .and_then(|part| part.split_whitespace().find_map(|w| w.parse().ok()))
            .unwrap_or(0)
    };
    let mut rows: Vec<KernelResources> = Vec::new();
    for line in log.lines() {
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            let name = rest.split('\'').next().unwrap_or_default();
            rows.push(KernelResources {
                kernel: name.to_string(),
                arch: arch.to_string(),
                ..Default::default()
            });
        } else if let Some(row) = rows.last_mut() {
            if line.contains("bytes stack frame") {
                row.stack_bytes = number_before(line, "stack frame");
                row.spill_stores = number_before(line, "spill stores");
                row.spill_loads = number_before(line, "spill loads");
            } else if line.contains("Used") && line.contains("registers") {
                row.registers = number_before(line, "registers");
                row.shared_bytes = number_before(line, "smem");
            }
        }
    }
    rows
}

/// Renders resources as a markdown table.
pub fn markdown(rows: &[KernelResources]) -> String {
    let mut s = String::from(
        "| kernel | arch | registers | static smem B | stack B | spill st/ld B |\n| --- | --- | ---: | ---: | ---: | ---: |\n",
    );
    for r in rows {
        s += &format!(
            "| {} | {} | {} | {} | {} | {}/{} |\n",
            r.kernel,
            r.arch,
            r.registers,
            r.shared_bytes,
            r.stack_bytes,
            r.spill_stores,
            r.spill_loads
        );
    }
    s
}
