//! Builds `kernels-rs` to PTX for every flavour and embeds it in the host crate.
//!
//! - With the nvptx toolchain present (rust-src, llvm-bitcode-linker; `rust-toolchain.toml` asks
//!   rustup for them), each flavour is built by a nested `cargo rustc` into `target/nvptx/`.
//! - Without it, the committed `ptx/` (gzip-compressed PTX) is used and a cargo warning says so. `RUSTILE_STRICT=1`
//!   (CI) turns that fallback into a build failure.
//! - `RUSTILE_REGEN_PTX=1` also writes the built PTX (compressed) and its source hash to `ptx/`
//!   (`scripts/regen-ptx` does this).

use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "build_support/kernel_build.rs"]
mod kernel_build;
use kernel_build::{
    apply_launch_bounds, committed_ptx_file_name, gunzip, gzip, kernel_source_hash, ptx_file_name,
    FlavourSpec, FLAVOURS, KERNEL_RUSTFLAGS,
};

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let kernels_dir = root.join("kernels-rs");
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    println!("cargo:rerun-if-changed=kernels-rs");
    println!("cargo:rerun-if-changed=ptx");
    println!("cargo:rerun-if-changed=rust-toolchain.toml");
    println!("cargo:rerun-if-changed=build_support/kernel_build.rs");
    println!("cargo:rerun-if-env-changed=RUSTILE_STRICT");
    println!("cargo:rerun-if-env-changed=RUSTILE_REGEN_PTX");
    println!("cargo:rerun-if-env-changed=RUSTILE_USE_COMMITTED_PTX");
    let strict = std::env::var("RUSTILE_STRICT").is_ok_and(|v| v == "1");
    let regen = std::env::var("RUSTILE_REGEN_PTX").is_ok_and(|v| v == "1");
    let force_committed = std::env::var("RUSTILE_USE_COMMITTED_PTX").is_ok_and(|v| v == "1");

    let hash = kernel_source_hash(&kernels_dir, &root.join("rust-toolchain.toml"));
    let nvptx_dir = target_dir(&out_dir).join("nvptx");

    let mut origin = "built";
    for flavour in &FLAVOURS {
        let dest = out_dir.join(ptx_file_name(flavour.name));
        let built = if force_committed {
            Err("RUSTILE_USE_COMMITTED_PTX=1".to_string())
        } else {
            build_flavour(&kernels_dir, &nvptx_dir, flavour)
        };
        match built {
            Ok(ptx) => {
                std::fs::write(&dest, &ptx).expect("write PTX to OUT_DIR");
                if regen {
                    std::fs::create_dir_all(root.join("ptx")).expect("create ptx/");
                    let file = root.join("ptx").join(committed_ptx_file_name(flavour.name));
                    // Rewritten only when the text changed: no churn in git for equal PTX.
                    let same = std::fs::read(&file)
                        .ok()
                        .and_then(|gz| gunzip(&gz).ok())
                        .is_some_and(|old| old == ptx);
                    if !same {
                        std::fs::write(&file, gzip(&ptx)).expect("write ptx/");
                    }
                }
            }
            Err(why) => {
                if strict || regen {
                    panic!(
                        "building kernels-rs for nvptx64 ({}) failed and RUSTILE_STRICT/\
                         RUSTILE_REGEN_PTX forbid the committed fallback:\n{why}",
                        flavour.name
                    );
                }
                let committed = root.join("ptx").join(committed_ptx_file_name(flavour.name));
                let ptx = std::fs::read(&committed)
                    .map_err(|e| e.to_string())
                    .and_then(|gz| gunzip(&gz))
                    .unwrap_or_else(|e| {
                        panic!(
                            "no nvptx toolchain and no readable committed {}: {e}",
                            committed.display()
                        )
                    });
                println!(
                    "cargo:warning=rustile: nvptx build of kernels-rs unavailable ({}); using \
                     committed ptx/{} (install the toolchain in rust-toolchain.toml to rebuild)",
                    first_line(&why),
                    committed_ptx_file_name(flavour.name)
                );
                std::fs::write(&dest, ptx).expect("write PTX to OUT_DIR");
                origin = "committed";
            }
        }
    }
    if regen {
        std::fs::write(root.join("ptx").join("SOURCE_HASH"), format!("{hash}\n"))
            .expect("write ptx/SOURCE_HASH");
    }
    println!("cargo:rustc-env=RUSTILE_PTX_ORIGIN={origin}");
    println!("cargo:rustc-env=RUSTILE_PTX_SOURCE_HASH={hash}");
    println!("cargo:rustc-env=RUSTILE_GIT_COMMIT={}", git_commit(&root));
}

/// `git rev-parse HEAD` of the checkout, for result files (`unknown` without git); the build
/// script reruns when HEAD or the branch it names moves.
fn git_commit(root: &Path) -> String {
    let git = |args: &[&str]| {
        Command::new("git")
            .current_dir(root)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .filter(|s| !s.is_empty())
    };
    let Some(commit) = git(&["rev-parse", "HEAD"]) else {
        return "unknown".into();
    };
    let branch = git(&["symbolic-ref", "-q", "HEAD"]);
    for what in ["HEAD", "packed-refs"]
        .into_iter()
        .map(String::from)
        .chain(branch)
    {
        // Only paths that exist: cargo reruns a build script on every build for a missing one.
        if let Some(path) = git(&["rev-parse", "--git-path", &what]).map(|p| root.join(p)) {
            if path.exists() {
                println!("cargo:rerun-if-changed={}", path.display());
            }
        }
    }
    commit
}

fn first_line(s: &str) -> &str {
    s.lines().find(|l| !l.trim().is_empty()).unwrap_or(s)
}

/// `target/` of the outer build: `OUT_DIR` is `target/<profile>/build/<pkg>/out` (or one level
/// deeper with `--target`). The nested build needs its own directory below it, because the
/// outer build holds the lock on its own.
fn target_dir(out_dir: &Path) -> PathBuf {
    out_dir
        .ancestors()
        .find(|p| p.file_name().is_some_and(|n| n == "build"))
        .and_then(|build| build.parent())
        .and_then(|profile| profile.parent())
        .map(Path::to_path_buf)
        .unwrap_or_else(|| out_dir.join("nvptx-target"))
}

fn build_flavour(
    kernels_dir: &Path,
    nvptx_dir: &Path,
    flavour: &FlavourSpec,
) -> Result<Vec<u8>, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let target_dir = nvptx_dir.join(flavour.name);
    let mut flags = vec![format!("-Ctarget-cpu={}", flavour.target_cpu)];
    flags.extend(KERNEL_RUSTFLAGS.iter().map(|s| s.to_string()));
    flags.extend(flavour.extra_flags.iter().map(|s| s.to_string()));
    let mut cmd = Command::new(cargo);
    // Keep the outer build's settings (clippy's wrapper, host RUSTFLAGS, jobserver, profile
    // variables) out of the nested nvptx build.
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy().into_owned();
        let keep = matches!(
            key.as_str(),
            "CARGO_HOME" | "RUSTUP_HOME" | "RUSTUP_TOOLCHAIN"
        );
        if !keep && (key.starts_with("CARGO") || key.starts_with("RUST") || key == "MAKEFLAGS") {
            cmd.env_remove(&key);
        }
    }
    cmd.current_dir(kernels_dir)
        .env("RUSTC_BOOTSTRAP", "1")
        .env("CARGO_ENCODED_RUSTFLAGS", flags.join("\x1f"))
        .args([
            "rustc",
            "--release",
            "--target",
            "nvptx64-nvidia-cuda",
            "-Zbuild-std=core",
        ])
        .args(["--crate-type", "cdylib", "--target-dir"])
        .arg(&target_dir);
    let output = cmd.output().map_err(|e| format!("cannot run cargo: {e}"))?;
    if !output.status.success() {
        return Err(String::from_utf8_lossy(&output.stderr).into_owned());
    }
    let ptx = target_dir.join("nvptx64-nvidia-cuda/release/rustile_kernels.ptx");
    let text = std::fs::read_to_string(&ptx).map_err(|e| format!("{}: {e}", ptx.display()))?;
    let bounds: Vec<_> = rustile_kernels::registry::launch_bounds().collect();
    Ok(apply_launch_bounds(&text, &bounds).into_bytes())
}
