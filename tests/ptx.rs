//! PTX checks, no GPU needed: `ptx/` is fresh, every registered kernel is in both flavours and
//! nothing else is, no aligned barrier or unresolved call survived, and ptxas assembles every
//! flavour for its architectures without spills.
//!
//! With `RUSTILE_STRICT=1` (CI), a check that cannot run fails: the build must have compiled
//! kernels-rs itself (not fallen back to `ptx/`), and ptxas must be found.

#[path = "../build_support/kernel_build.rs"]
#[allow(dead_code)]
mod kernel_build;

use std::path::Path;

use rustile::ptx::{self, Flavour};
use rustile::{ptxas, KERNELS};

fn strict() -> bool {
    std::env::var("RUSTILE_STRICT").is_ok_and(|v| v == "1")
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn committed_ptx_matches_the_kernel_sources() {
    let hash = kernel_build::kernel_source_hash(
        &root().join("kernels-rs"),
        &root().join("rust-toolchain.toml"),
    );
    let recorded =
        std::fs::read_to_string(root().join("ptx/SOURCE_HASH")).expect("ptx/SOURCE_HASH");
    assert_eq!(
        recorded.trim(),
        hash,
        "ptx/ is stale: kernels-rs changed since it was generated; run scripts/regen-ptx and commit ptx/"
    );
    assert_eq!(
        ptx::SOURCE_HASH,
        hash,
        "the build embedded PTX from other sources"
    );
    match ptx::ORIGIN {
        "built" => {
            // This build compiled kernels-rs: the committed PTX must be exactly what it made.
            for flavour in Flavour::ALL {
                let file = root()
                    .join("ptx")
                    .join(kernel_build::committed_ptx_file_name(flavour.name()));
                let gz = std::fs::read(&file).expect("committed PTX");
                let committed =
                    kernel_build::gunzip(&gz).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
                assert!(
                    committed == flavour.text().as_bytes(),
                    "{} differs from the PTX this build compiled; run scripts/regen-ptx",
                    file.display()
                );
            }
        }
        origin => {
            assert!(
                !strict(),
                "RUSTILE_STRICT=1 but the build used the {origin} PTX: the nvptx toolchain is missing"
            );
            println!("NOTE: PTX came from ptx/ (no nvptx toolchain): byte comparison not run");
        }
    }
}

#[test]
fn committed_ptx_gzip_round_trips_and_checks_its_trailer() {
    // The CRC-32 check value of "123456789" is 0xCBF43926 (gzip's CRC), stored little-endian.
    let gz = kernel_build::gzip(b"123456789");
    assert_eq!(gz[gz.len() - 8..gz.len() - 4], 0xCBF4_3926u32.to_le_bytes());
    assert_eq!(kernel_build::gunzip(&gz).unwrap(), b"123456789");
    let text = ".version 8.0\n.target sm_90a\n".repeat(1000);
    let gz = kernel_build::gzip(text.as_bytes());
    assert!(gz.len() < text.len() / 20, "compresses: {} bytes", gz.len());
    assert_eq!(kernel_build::gunzip(&gz).unwrap(), text.as_bytes());
    // A flipped byte in the stream or the trailer is an error, never other PTX.
    let mut bad = gz.clone();
    let at = bad.len() - 6;
    bad[at] ^= 1;
    assert!(kernel_build::gunzip(&bad).is_err());
    assert!(kernel_build::gunzip(b"not gzip at all, just text").is_err());
    // A header with a file name (what `gzip` without `-n` writes) is read too.
    let mut named = gz[..10].to_vec();
    named[3] = 8;
    named.extend(b"kernels.ptx\0");
    named.extend(&gz[10..]);
    assert_eq!(kernel_build::gunzip(&named).unwrap(), text.as_bytes());
}

#[test]
fn every_registered_kernel_is_in_both_flavours_and_nothing_else() {
    // The registry is the one list: every record's entries, each in the flavours it needs.
    for flavour in Flavour::ALL {
        let mut want: Vec<&str> = KERNELS
            .iter()
            .filter(|k| k.in_flavour(flavour == Flavour::Sm90a))
            .flat_map(|k| k.symbols.iter().map(|e| e.symbol))
            .collect();
        want.sort_unstable();
        let mut entries = ptx::entries(flavour.text());
        entries.sort_unstable();
        assert_eq!(
            entries,
            want,
            "{}: entry points differ from the registry",
            flavour.name()
        );
    }
}

#[test]
fn flavours_target_their_architectures() {
    assert!(Flavour::Sm80.text().contains("\n.target sm_80\n"));
    assert!(Flavour::Sm90a.text().contains("\n.target sm_90a\n"));
}

#[test]
fn no_aligned_barriers_and_no_unresolved_calls() {
    for flavour in Flavour::ALL {
        for (i, line) in flavour.text().lines().enumerate() {
            let l = line.trim_start();
            // `bar.sync` (and `barrier.sync.aligned`) are undefined if LLVM duplicates them into
            // divergent branches; rustile's barrier is `barrier.sync` (notes/architecture.md).
            assert!(
                !l.starts_with("bar.sync") && !l.starts_with("barrier.sync.aligned"),
                "{} line {}: aligned barrier `{l}`",
                flavour.name(),
                i + 1
            );
            // A surviving panic path becomes an unresolved extern function.
            assert!(
                !l.starts_with(".extern .func"),
                "{} line {}: `{l}`",
                flavour.name(),
                i + 1
            );
        }
    }
}

#[test]
fn ptxas_assembles_every_flavour_without_spills() {
    let Some(ptxas) = ptxas::find() else {
        assert!(
            !strict(),
            "RUSTILE_STRICT=1 but ptxas was not found (pip install \"nvidia-cuda-nvcc==13.0.*\")"
        );
        println!("SKIPPED: ptxas not found; this check did not run");
        return;
    };
    println!(
        "{} ({})",
        ptxas.display(),
        ptxas::version(&ptxas).unwrap_or_default()
    );
    let mut rows = Vec::new();
    for flavour in Flavour::ALL {
        for arch in ptxas::archs(flavour) {
            let got = ptxas::assemble(&ptxas, flavour.text(), arch).unwrap();
            assert_eq!(
                got.len(),
                ptx::entries(flavour.text()).len(),
                "{arch}: ptxas reported a different number of kernels"
            );
            rows.extend(got);
        }
    }
    println!("{}", ptxas::markdown(&rows));
    let spilling: Vec<_> = rows
        .iter()
        .filter(|r| r.spill_stores + r.spill_loads + r.stack_bytes > 0)
        .collect();
    assert!(
        spilling.is_empty(),
        "kernels spill or use a stack frame: {spilling:#?}"
    );
}

#[test]
fn ptxas_log_parses() {
    let log = "ptxas info    : Compiling entry function 'k_f32' for 'sm_90'\n\
               ptxas info    : Function properties for k_f32\n    \
               8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\n\
               ptxas info    : Used 26 registers, used 1 barriers, 4224 bytes smem\n";
    let rows = ptxas::parse(log, "sm_90");
    assert_eq!(
        rows,
        vec![ptxas::KernelResources {
            kernel: "k_f32".into(),
            arch: "sm_90".into(),
            registers: 26,
            shared_bytes: 4224,
            stack_bytes: 8,
            spill_stores: 4,
            spill_loads: 12,
        }]
    );
}

#[test]
fn wgmma_kernels_are_hgmma_in_sass_and_never_serialized() {
    let Some(ptxas) = ptxas::find() else {
        assert!(!strict(), "RUSTILE_STRICT=1 but ptxas was not found");
        println!("SKIPPED: ptxas not found; this check did not run");
        return;
    };
    let (log, sass) = match ptxas::assemble_sass(&ptxas, Flavour::Sm90a.text(), "sm_90a") {
        Ok(x) => x,
        Err(e) => {
            assert!(
                !strict(),
                "RUSTILE_STRICT=1 but SASS could not be produced: {e}"
            );
            println!("SKIPPED: {e}");
            return;
        }
    };
    // ptxas serializes wgmma (and says so) when other instructions touch the accumulators
    // between issue and wait: the generated wrappers exist to prevent exactly that.
    assert!(
        !log.contains("C7514") && !log.contains("C7517") && !log.contains("serialized"),
        "ptxas serialized wgmma:\n{log}"
    );
    // Every wgmma entry of the registry (the GEMM and its ceiling).
    let wgmma = KERNELS
        .iter()
        .filter(|k| k.needs.sm90a && k.role != rustile_kernels::registry::Role::SelfTest)
        .flat_map(|k| k.symbols.iter().map(|e| e.symbol));
    for symbol in wgmma {
        let body = ptxas::sass_function(&sass, symbol)
            .unwrap_or_else(|| panic!("{symbol} missing from the SASS"));
        let hgmma = body.matches("HGMMA").count();
        assert!(hgmma >= 4, "{symbol}: {hgmma} HGMMA instructions");
        println!("{symbol}: {hgmma} HGMMA");
    }
    // The Hopper self-test: TMA loads, HGMMA, and the two TMA stores of its staging tile.
    let symbol = rustile_kernels::selftest::hopper::SYMBOL;
    let body = ptxas::sass_function(&sass, symbol)
        .unwrap_or_else(|| panic!("{symbol} missing from the SASS"));
    for (op, want) in [("UTMALDG", 2), ("HGMMA", 4), ("UTMASTG", 2)] {
        let got = body.matches(op).count();
        assert_eq!(got, want, "{symbol}: {got} {op}, want {want}");
    }
}

#[test]
fn each_entry_loads_as_its_own_module() {
    // The GPU handle loads one module per kernel on first use (`ptx::entry_module`): each must
    // hold the prelude and exactly its entry, and together they must cover the whole file.
    for flavour in Flavour::ALL {
        let text = flavour.text();
        let entries = ptx::entries(text);
        let mut bodies = 0;
        for e in &entries {
            let m = ptx::entry_module(text, e).unwrap();
            assert!(m.starts_with("//") && m.contains("\n.version ") && m.contains("\n.target "));
            assert!(m.contains(".extern .shared .align 16 .b8 SMEM[];"));
            assert_eq!(ptx::entries(&m), vec![*e], "{e}");
            assert!(m.ends_with("\n}\n"), "{e}");
            bodies += m.len();
        }
        let body_of = |e: &str| {
            let at = text.find(&format!(".visible .entry {e}(")).unwrap();
            text[at..].find("\n}\n").unwrap() + 3
        };
        let prelude = ptx::entry_module(text, entries[0]).unwrap().len() - body_of(entries[0]);
        // Every byte of the file is in the prelude (with the file-scope data) or in exactly one
        // entry (comments between entries aside).
        let covered = bodies - prelude * (entries.len() - 1);
        assert!(covered <= text.len() + prelude && covered + 200 * entries.len() >= text.len());
        assert!(ptx::entry_module(text, "no_such_kernel").is_none());
    }
    // File-scope data (constant tables LLVM hoists out of a kernel) is declared in every
    // module whose entry names it: the table sits next to the *first* function using it, and a
    // module missing it fails the driver's JIT ("unknown symbol"), which ptxas on the whole
    // file never shows.
    let mut data_users = Vec::new();
    for flavour in Flavour::ALL {
        let text = flavour.text();
        let names: Vec<&str> = ptx::file_scope_data(text)
            .filter_map(|d| d.split(['[', ';', '=']).next()?.split_whitespace().last())
            .collect();
        for e in ptx::entries(text) {
            let m = ptx::entry_module(text, e).unwrap();
            let body = &m[m.find(&format!(".visible .entry {e}(")).unwrap()..];
            for n in names.iter().filter(|n| body.contains(*n)) {
                assert!(
                    m[..m.len() - body.len()].contains(&format!("{n}[")),
                    "{e} ({}) uses {n} but its module does not declare it",
                    flavour.name()
                );
                data_users.push((flavour, e));
            }
        }
    }
    assert!(
        data_users.iter().any(|(_, e)| e.starts_with("hgemm_peak_")),
        "the ceiling kernels' operand tables are file-scope data; the check above must see them"
    );
    // And ptxas takes them: one memory kernel, one mma.sync kernel, the wgmma kernel.
    let Some(ptxas) = ptxas::find() else {
        assert!(!strict(), "RUSTILE_STRICT=1 but ptxas was not found");
        println!("SKIPPED: ptxas not found; the assembly half of this check did not run");
        return;
    };
    for (flavour, arch, symbol) in [
        (Flavour::Sm80, "sm_80", "copy_vec16_f32"),
        (Flavour::Sm80, "sm_80", "hgemm_mma_pipeline_f16_f16_bn"),
        (Flavour::Sm90a, "sm_90a", "hgemm_wgmma_ws_bf16_bf16_bt"),
    ]
    .into_iter()
    .chain(data_users.iter().map(|&(f, e)| (f, f.name(), e)))
    {
        let m = ptx::entry_module(flavour.text(), symbol).unwrap();
        let got = ptxas::assemble(&ptxas, &m, arch).unwrap();
        assert_eq!(got.len(), 1, "{symbol}");
        assert_eq!(got[0].kernel, symbol);
    }
}
