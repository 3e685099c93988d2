//! The criterion benches on a machine without a GPU: each bench binary, built by
//! `cargo build --release --benches` (the release library `cargo test --release` already
//! built; `cargo bench`'s own profile would rebuild it and the PTX), lists the benchmarks it would run on an H200 (`--list`: every
//! family, throughput groups, vendor baselines as ids of their own), and a plain
//! `--bench` run prints one `no GPU:` line and exits 0 (what `cargo bench` does on CI).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

/// `(bench name, executable)` of every bench target, built in the release profile.
fn bench_binaries() -> BTreeMap<String, PathBuf> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["build", "--release", "--benches", "--message-format=json"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("running cargo build --release --benches");
    assert!(
        out.status.success(),
        "cargo build --release --benches failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut bins = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Ok(m) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if m["reason"] == "compiler-artifact" && m["target"]["kind"][0] == "bench" {
            if let Some(exe) = m["executable"].as_str() {
                let name = m["target"]["name"].as_str().unwrap_or_default().to_string();
                bins.insert(name, PathBuf::from(exe));
            }
        }
    }
    bins
}

/// The ids `exe --bench --list` prints (`<id>: benchmark` lines).
fn listed(exe: &PathBuf) -> Vec<String> {
    let out = Command::new(exe)
        .args(["--bench", "--list"])
        .output()
        .expect("running a bench binary");
    assert!(
        out.status.success(),
        "{} --list failed: {}",
        exe.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.strip_suffix(": benchmark").map(str::to_string))
        .collect()
}

fn count(ids: &[String], prefix: &str) -> usize {
    ids.iter().filter(|i| i.starts_with(prefix)).count()
}

fn has(ids: &[String], id: &str) -> bool {
    ids.iter().any(|i| i == id)
}

#[test]
fn benches_list_every_family_and_exit_cleanly_without_a_gpu() {
    let bins = bench_binaries();
    let names: Vec<&str> = bins.keys().map(String::as_str).collect();
    assert_eq!(names, ["attention", "conv", "gemm", "memory"]);

    let gemm = listed(&bins["gemm"]);
    // 9 shapes × (dispatch, warptile, kgroup_ring, cublas) + naive at the four ≤ 1024³.
    assert_eq!(count(&gemm, "sgemm/"), 40, "{gemm:#?}");
    assert_eq!(count(&gemm, "hgemm_f16/"), 27, "{gemm:#?}");
    assert_eq!(count(&gemm, "hgemm_bf16/"), 18, "{gemm:#?}");
    let shapes = [
        "256x256x256",
        "512x512x512",
        "1024x1024x1024",
        "2048x2048x2048",
        "4096x4096x4096",
        "8192x8192x8192",
        "1000x1000x1000",
        "4096x1024x4096",
        "8192x256x8192",
    ];
    for s in shapes {
        for imp in ["dispatch", "warptile", "kgroup_ring", "cublas"] {
            assert!(has(&gemm, &format!("sgemm/{s}/{imp}")), "sgemm/{s}/{imp}");
        }
        for imp in ["dispatch", "mma_pipeline", "cublas"] {
            assert!(
                has(&gemm, &format!("hgemm_f16/{s}/{imp}")),
                "hgemm_f16/{s}/{imp}"
            );
        }
        assert!(has(&gemm, &format!("hgemm_bf16/{s}/cublas")));
    }
    assert!(has(&gemm, "sgemm/1024x1024x1024/naive"));
    assert!(!has(&gemm, "sgemm/2048x2048x2048/naive"));

    let memory = listed(&bins["memory"]);
    assert_eq!(count(&memory, "copy/f32/"), 30, "{memory:#?}");
    assert_eq!(count(&memory, "strided/f32/"), 6, "{memory:#?}");
    assert_eq!(count(&memory, "transpose/f32/"), 18, "{memory:#?}");
    assert!(has(&memory, "copy/f32/268435459/memcpy"));
    assert!(has(&memory, "transpose/f32/8191x8193/memcpy"));
    assert!(has(&memory, "strided/f32/33554432:32/gather"));

    let attention = listed(&bins["attention"]);
    let attn_shapes: std::collections::BTreeSet<&str> = attention
        .iter()
        .filter_map(|i| i.split('/').nth(1))
        .collect();
    assert_eq!(attn_shapes.len(), 12, "{attention:#?}");
    assert!(has(&attention, "attention_f16/b16_h16_n1024_d64/naive"));
    assert!(!attention
        .iter()
        .any(|i| i.contains("_n16384_") && i.ends_with("/naive")));
    assert!(attention.len() >= 12 * 2, "{attention:#?}");

    let conv = listed(&bins["conv"]);
    assert_eq!(conv.len(), 21, "{conv:#?}");
    for imp in ["dispatch", "cudnn_fused", "cudnn_conv"] {
        assert!(
            has(&conv, &format!("conv_f16/l3.b1.conv2/{imp}")),
            "{conv:#?}"
        );
    }

    // A plain run: one `no GPU:` line, exit 0 — only where there is known to be no GPU (on a
    // GPU machine it would run the whole bench).
    if std::env::var_os("RUSTILE_EXPECT_NO_GPU").is_none() {
        assert!(
            std::env::var_os("RUSTILE_STRICT").is_none(),
            "RUSTILE_STRICT=1 without RUSTILE_EXPECT_NO_GPU: the no-GPU exit cannot be checked"
        );
        println!("SKIPPED the no-GPU run: RUSTILE_EXPECT_NO_GPU is not set");
        return;
    }
    for (name, exe) in &bins {
        let out = Command::new(exe)
            .arg("--bench")
            .output()
            .expect("running a bench");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{name}: {stdout}");
        let lines: Vec<&str> = stdout.lines().collect();
        assert_eq!(lines.len(), 1, "{name}: {stdout}");
        assert!(lines[0].starts_with("no GPU: "), "{name}: {stdout}");
    }
}
