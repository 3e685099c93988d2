//! The `rustile` binary's command line, no GPU needed: `--help` works on every command of the
//! grammar (enumerated from clap's tree, so new ones are covered — the families' own commands
//! too), bad arguments are usage errors (exit code 2) found before any GPU is opened, and the
//! README's CLI block is the top-level help. The attention scripts agree with the binary: the
//! bench's default shapes are `sdpa_bench.py`'s, and `attention_report.py` reads the bars.

use std::process::{Command, Output};

use clap::CommandFactory;
use rustile::cli::Cli;

fn rustile(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rustile"))
        .args(args)
        .output()
        .expect("the rustile binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Every subcommand path of the grammar (`["bench", "copy"]`, …), clap's `help` left out.
fn command_paths(cmd: &clap::Command, prefix: &[String], out: &mut Vec<Vec<String>>) {
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        let mut path = prefix.to_vec();
        path.push(sub.get_name().to_owned());
        command_paths(sub, &path, out);
        out.push(path);
    }
}

#[test]
fn help_succeeds_on_the_top_level_and_every_subcommand() {
    let mut paths = vec![vec![]];
    command_paths(&Cli::command(), &[], &mut paths);
    assert!(paths.len() > 20, "{paths:?}");
    for path in &paths {
        for flag in ["--help", "-h"] {
            let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
            args.push(flag);
            let out = rustile(&args);
            let usage = format!("Usage: rustile {}", path.join(" "));
            assert!(
                out.status.success() && text(&out.stdout).contains(usage.trim_end()),
                "`rustile {}`: {:?}\n{}{}",
                args.join(" "),
                out.status,
                text(&out.stdout),
                text(&out.stderr)
            );
        }
    }
    let out = rustile(&["--version"]);
    assert!(out.status.success());
    assert_eq!(
        text(&out.stdout).trim(),
        format!("rustile {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn bad_arguments_are_usage_errors_before_any_gpu_is_opened() {
    for line in [
        "frobnicate",
        "validate --bogus",
        "validate selftest",
        "info --sim",
        "analyze copy/nope",
        "analyze nope/scalar",
        "analyze transpose/smem 12",
        "analyze copy/scalar --dtype f8",
        "bench copy --reps 0",
        "bench copy --sizes abc",
        "bench copy --dtype f64",
        "bench transpose --l2 sometimes",
        "bench strided --warmup many",
        "bench gemm --sizes abc",
        "bench gemm --variants fastest",
        "bench crossover --sizes 0",
        "bench copy --seed x",
        "hgemm bench --types f8",
        "hgemm bench --timing paired",
        "hgemm bench --pipeline nope",
        "hgemm bench --group 0",
        "hgemm validate --slow",
        "hgemm peak --types f32",
        "overlap --kernel scan",
        "overlap --streams 1,0",
        "memory --sizes-mib x",
        "orchestration --quick --gemm-k 0",
        "ptx-report --all",
        "attention validate --quick",
        "attention bench --reps 0",
        "conv bench --cut 0",
        "conv bench --reps 1000001",
        "conv bench --warmup 18446744073709551615",
        "bench copy --reps 18446744073709551615",
        "hgemm bench --warmup 1000001",
        "attention bench --reps 99999999999",
        "overlap --reps 1000001",
        "overlap --compute-reps 1000001",
        "launch --reps 1000001",
        "fuzz --sim --cases 18446744073709551615",
        "fuzz --cases 100000001",
        "conv bench --cut 2 --stream-k",
        "conv bench --cut 2 --splits 2",
        "attention bench --variants fastest",
        "attention bench --head-dim 96",
        "attention bench --shapes 1,16,512,64",
        "attention dump",
        "attention dump --cases 1,1,1,3,2,64",
    ] {
        let args: Vec<&str> = line.split_whitespace().collect();
        let out = rustile(&args);
        let err = text(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(2),
            "`rustile {line}`: {:?}\n{err}",
            out.status
        );
        assert!(err.starts_with("error:"), "`rustile {line}`:\n{err}");
        for gpu_words in ["GPU", "driver", "libcuda", "CUDA"] {
            assert!(
                !err.contains(gpu_words),
                "`rustile {line}` mentions {gpu_words}:\n{err}"
            );
        }
        assert!(out.stdout.is_empty(), "`rustile {line}` printed to stdout");
    }
}

#[test]
fn the_readme_cli_block_is_the_top_level_help() {
    let readme = include_str!("../README.md");
    let (start, end) = ("<!-- cli-help:start -->", "<!-- cli-help:end -->");
    let block = readme
        .split_once(start)
        .and_then(|(_, rest)| rest.split_once(end))
        .map(|(block, _)| block.trim())
        .expect("README.md has a <!-- cli-help:start --> … <!-- cli-help:end --> block");
    let documented = block
        .strip_prefix("```text")
        .and_then(|b| b.strip_suffix("```"))
        .expect("the block is one ```text fence")
        .trim_matches('\n');
    let out = rustile(&["--help"]);
    assert!(out.status.success());
    let help = text(&out.stdout);
    let help = help.trim_end();
    assert!(
        documented == help,
        "README.md's CLI block differs from `rustile --help`; paste this between the markers:\n\n\
         {start}\n```text\n{help}\n```\n{end}\n"
    );
}

/// The `rustile …` invocations of `scripts/stage-gpu` (its `run.sh`), shell words substituted
/// (`$out` by `out`).
fn script_invocations(out: &std::path::Path) -> Vec<String> {
    let script = include_str!("../scripts/stage-gpu").replace("\\\n", " ");
    script
        .lines()
        .filter_map(|l| l.split_once("/bin/rustile\"").map(|(_, rest)| rest))
        .map(|rest| {
            let args = rest.split(" 2>&1").next().unwrap_or(rest);
            let args = args.split(" >").next().unwrap_or(args);
            args.replace("\"$out/quant\"", &out.join("quant").display().to_string())
                .replace("\"$out\"", &out.display().to_string())
                .replace("\"$t\"", "interleaved")
                .replace("\"$@\"", "--quick")
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

#[test]
fn every_invocation_in_the_scripts_and_the_readme_parses() {
    let out = std::env::temp_dir().join(format!("rustile-cli-test-{}", std::process::id()));
    let scripts = script_invocations(&out);
    assert!(scripts.len() >= 8, "{scripts:?}");
    let readme = include_str!("../README.md");
    let examples = readme
        .lines()
        .filter_map(|l| l.strip_prefix("cargo run --release -- "))
        .map(|l| l.split('#').next().unwrap_or(l).trim().to_owned());
    for line in scripts.iter().cloned().chain(examples) {
        let args = std::iter::once("rustile").chain(line.split_whitespace());
        if let Err(e) = Cli::try_parse_checked(args) {
            panic!("`rustile {line}` no longer parses:\n{e}");
        }
    }
    // The `--out` checks created it.
    let _ = std::fs::remove_dir_all(&out);
}

/// `python3`, if there is one (with `RUSTILE_STRICT=1` there must be).
fn python() -> Option<&'static str> {
    let ok = Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        let strict = std::env::var("RUSTILE_STRICT").is_ok_and(|v| v == "1");
        assert!(!strict, "RUSTILE_STRICT=1 but python3 was not found");
        eprintln!("SKIPPED: python3 not found");
    }
    ok.then_some("python3")
}

fn script(name: &str) -> String {
    format!("{}/scripts/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn the_attention_bench_sweeps_the_shapes_sdpa_bench_sweeps() {
    use rustile::attention::bench::{shapes_arg, Sweep};
    let out = rustile(&["attention", "bench", "--print-shapes"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let ours = text(&out.stdout);
    assert_eq!(ours.trim(), shapes_arg(&Sweep::default().shapes()));
    let Some(py) = python() else { return };
    let theirs = Command::new(py)
        .args([script("sdpa_bench.py").as_str(), "--print-shapes"])
        .output()
        .expect("python3 runs");
    assert!(theirs.status.success(), "{}", text(&theirs.stderr));
    assert_eq!(
        text(&theirs.stdout).trim(),
        ours.trim(),
        "sdpa_bench.py's default shapes"
    );
    // And the explicit list round-trips through both.
    let list = "2,8,300,64,1;1,1,4096,128,0";
    let ours = rustile(&["attention", "bench", "--shapes", list, "--print-shapes"]);
    let theirs = Command::new(py)
        .args([
            script("sdpa_bench.py").as_str(),
            "--shapes",
            list,
            "--print-shapes",
        ])
        .output()
        .expect("python3 runs");
    assert_eq!(text(&ours.stdout).trim(), list);
    assert_eq!(text(&theirs.stdout).trim(), list);
}

#[test]
fn attention_commands_that_need_a_gpu_say_so_without_one() {
    if std::env::var("RUSTILE_EXPECT_NO_GPU").is_err() {
        return; // a GPU may be here: the commands would run
    }
    let dir = std::env::temp_dir().join(format!("rustile-cli-nogpu-{}", std::process::id()));
    let dump = format!("attention dump --out {}", dir.display());
    for line in [
        "attention bench --n 512 --head-dim 64 --bh none",
        dump.as_str(),
    ] {
        let args: Vec<&str> = line.split_whitespace().collect();
        let out = rustile(&args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "`rustile {line}`: {err}");
        assert!(
            err.contains("no GPU") && err.contains("Without a GPU"),
            "`rustile {line}`:\n{err}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn attention_report_merges_the_lines_and_reads_the_bars() {
    let Some(py) = python() else { return };
    let dir = std::env::temp_dir().join(format!("rustile-cli-report-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let flops = 4.0 * 4.0 * 16.0 * 4096.0 * 4096.0 * 128.0;
    let row = |variant: &str, kernel: &str, sm90a: bool, ms: f64| {
        format!(
            r#"{{"b":4,"h":16,"n":4096,"d":128,"causal":false,"dtype":"f16","variant":"{variant}","kernel":"{kernel}","sm90a":{sm90a},"anchor":true,"flops":{flops},"tflops":{},"median_ms":{ms},"min_ms":{ms},"max_ms":{ms},"reps":30,"checked_rows":1,"worst_o":0.1,"device":"Test GPU"}}"#,
            flops / ms / 1e9
        )
    };
    let ours = [
        row("wgmma", "wgmma_d128", true, 1.0),
        row("mma", "mma_d128", false, 1.6),
    ]
    .join("\n");
    let theirs = r#"{"b":4,"h":16,"n":4096,"d":128,"causal":false,"dtype":"f16","flash_ms":1.2,"flash_tflops":1,"cudnn_ms":0.9,"cudnn_tflops":1}"#;
    let (a, b) = (dir.join("attention.jsonl"), dir.join("sdpa.jsonl"));
    std::fs::write(&a, ours + "\n").unwrap();
    std::fs::write(&b, format!("{theirs}\n")).unwrap();
    let (md, svg) = (dir.join("report.md"), dir.join("report.svg"));
    let out = Command::new(py)
        .arg(script("attention_report.py"))
        .args([&a, &b])
        .args([
            "--md".as_ref(),
            md.as_os_str(),
            "--svg".as_ref(),
            svg.as_os_str(),
            "--strict".as_ref(),
        ])
        .output()
        .expect("python3 runs");
    let report = text(&out.stdout);
    // mma at 0.75× flash misses its 0.8× bar: --strict exits 1.
    assert_eq!(out.status.code(), Some(1), "{report}{}", text(&out.stderr));
    assert!(
        report.contains("| wgmma_d128 | 549.8 | 458.1 | 610.8 | 1.200 | 0.900 |"),
        "{report}"
    );
    assert!(
        report.contains("| mma_d128 | 343.6 | 458.1 | 610.8 | 0.750 | 0.562 |"),
        "{report}"
    );
    assert!(
        report.contains("- **PASS** sm_90a kernel ≥ 1.0× flash"),
        "{report}"
    );
    assert!(
        report.contains("- **PASS** sm_90a kernel ≥ 0.85× cuDNN"),
        "{report}"
    );
    assert!(
        report.contains("- **FAIL** mma (sm_80) ≥ 0.8× flash at d = 128, N = 4096: worst 0.750×"),
        "{report}"
    );
    assert_eq!(std::fs::read_to_string(&md).unwrap(), report);
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(
        svg.starts_with("<svg") && svg.contains("wgmma 549.8") && svg.contains("flash 458.1"),
        "{svg}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Shapes that are empty, overflow, exceed the kernels' indices or cannot fit the simulator
/// are typed errors found before anything is allocated — never a panic or an allocation
/// abort. Those the parser can judge are usage errors (exit 2, naming what is wrong); those
/// that depend on the back end (the simulator's memory) are the run's typed error (exit 1).
#[test]
fn oversized_and_empty_shapes_are_typed_errors_before_any_allocation() {
    let huge = format!("1{}", "0".repeat(83)); // 10⁸³
    let usage: &[(&str, &str)] = &[
        ("analyze strided/gather 0:4", "n is 0"),
        ("analyze strided/gather 4096:99999999999999999", "overflows"),
        ("analyze strided/gather 4096:0", "stride is 0"),
        ("analyze copy/scalar 1e11", "bad shape"),
        ("analyze copy/scalar 0", "n is 0"),
        ("analyze transpose/naive 0x5", "rows is 0"),
        ("analyze transpose/naive 4294967296x4294967296", "overflows"),
        ("analyze gemm/naive 4294967296x1x1", "32-bit indices"),
        ("analyze gemm/naive 1x1x4294967296", "32-bit indices"),
        ("analyze gemm/naive 0x5x5", "m is 0"),
        ("hgemm analyze 0", "m is 0"),
        ("hgemm analyze 4294967296x1x1", "exceeds 2^31"),
        ("hgemm bench --sizes 8x0x8", "n is 0"),
        ("hgemm bench --reps 0", "not a positive number"),
        ("bench copy --sizes 0", "n is 0"),
        ("bench strided --sizes 0", "n is 0"),
        ("bench transpose --sizes 4294967296x4294967296", "overflows"),
        ("bench gemm --sizes 0x4x4", "m is 0"),
        ("bench gemm --sizes 4294967296x1x1", "32-bit indices"),
        (
            "transfer --max-mib 99999999999999999",
            "overflow the address space",
        ),
        (
            "memory --sizes-mib 1,99999999999999999",
            "overflow the address space",
        ),
        (
            "overlap --batch-mib 99999999999999999",
            "overflow the address space",
        ),
        (
            "overlap --chunk-mib 99999999999999999",
            "overflow the address space",
        ),
        (
            "orchestration --gather-batch-mib 99999999999999999",
            "overflow the address space",
        ),
        (
            "orchestration --gather-chunk-mib 99999999999999999",
            "overflow the address space",
        ),
    ];
    let gemm_huge = format!("analyze gemm/naive {huge}");
    let usage = usage
        .iter()
        .map(|&(l, w)| (l.to_string(), w))
        .chain([(gemm_huge, "bad gemm shape")]);
    for (line, want) in usage {
        let out = rustile(&line.split_whitespace().collect::<Vec<_>>());
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "`rustile {line}`:\n{err}");
        assert!(
            err.starts_with("error:") && err.contains(want),
            "`rustile {line}`: want `{want}` in\n{err}"
        );
    }
    // Parsed, then refused by the simulator before any host or simulated memory is taken.
    for (line, want) in [
        (
            "analyze copy/scalar 100000000000",
            "the simulator holds at most",
        ),
        (
            "analyze transpose/naive 100000x100000",
            "the simulator holds at most",
        ),
        (
            "analyze strided/gather 100000000:1000",
            "the simulator holds at most",
        ),
        ("analyze gemm/naive 100000", "the simulator holds at most"),
        (
            "hgemm analyze 100000 --variant mma",
            "the simulator holds at most",
        ),
        (
            "hgemm analyze 100000 --variant mma_pipeline",
            "the simulator holds at most",
        ),
    ] {
        let start = std::time::Instant::now();
        let out = rustile(&line.split_whitespace().collect::<Vec<_>>());
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "`rustile {line}`:\n{err}");
        assert!(
            err.starts_with("rustile: error: out of device memory") && err.contains(want),
            "`rustile {line}`: want `{want}` in\n{err}"
        );
        assert!(!err.contains("panicked"), "`rustile {line}`:\n{err}");
        // Refused up front: nothing was built (filling even 1 GB of random input takes longer).
        assert!(
            start.elapsed().as_secs() < 5,
            "`rustile {line}` took {:?}",
            start.elapsed()
        );
    }
    // A dump of a shape the simulator cannot hold is refused before its inputs are built (it
    // aborted allocating 2.5 TB of host memory).
    let dir = std::env::temp_dir().join(format!("rustile-cli-dump-{}", std::process::id()));
    let dir_s = dir.display().to_string();
    let args = [
        "attention",
        "dump",
        "--sim",
        "--out",
        &dir_s,
        "--cases",
        "99999,99999,99999,1,1,128",
    ];
    let out = rustile(&args);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.starts_with("rustile: error: out of device memory")
            && err.contains("the simulator holds at most"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
    // An endless input file is refused after the cap, not read forever.
    if std::path::Path::new("/dev/zero").exists() {
        let start = std::time::Instant::now();
        let out = rustile(&["compare", "/dev/zero", "/dev/zero"]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(
            err.contains("/dev/zero") && err.contains("larger than 256 MiB"),
            "{err}"
        );
        assert!(start.elapsed().as_secs() < 20, "{:?}", start.elapsed());
        // An .npy input is read no further than its header says: /dev/zero is not .npy.
        let out_npy =
            std::env::temp_dir().join(format!("rustile-cli-zero-{}.npy", std::process::id()));
        let out = rustile(&[
            "run",
            "copy",
            "--sim",
            "--in",
            "/dev/zero",
            "--out",
            &out_npy.display().to_string(),
        ]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains("not an .npy file"), "{err}");
        assert!(start.elapsed().as_secs() < 20, "{:?}", start.elapsed());
    }
}

/// Every command of the grammar that takes `--out` or `--reps` refuses an unwritable
/// directory and zero repetitions while parsing (exit 2, naming the option), before any work.
#[test]
fn every_out_is_checked_writable_and_every_reps_positive_while_parsing() {
    fn find<'a>(cmd: &'a clap::Command, path: &[String]) -> &'a clap::Command {
        path.iter().fold(cmd, |c, name| {
            c.find_subcommand(name).expect("a path of the grammar")
        })
    }
    let root = Cli::command();
    let mut paths = Vec::new();
    command_paths(&root, &[], &mut paths);
    let mut checked = Vec::new();
    for path in &paths {
        let cmd = find(&root, path);
        for (opt, bad) in [("out", "/proc/rustile-not-writable"), ("reps", "0")] {
            if !cmd.get_arguments().any(|a| a.get_long() == Some(opt)) {
                continue;
            }
            let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
            let flag = format!("--{opt}");
            args.extend([flag.as_str(), bad]);
            let out = rustile(&args);
            let err = text(&out.stderr);
            assert_eq!(
                out.status.code(),
                Some(2),
                "`rustile {}`:\n{err}",
                args.join(" ")
            );
            assert!(
                err.contains(&flag) && !err.contains("GPU"),
                "`rustile {}` does not name {flag}:\n{err}",
                args.join(" ")
            );
            checked.push(args.join(" "));
        }
    }
    // bench copy/strided/transpose/all/gemm/crossover, hgemm bench, attention bench and dump,
    // conv, transfer, overlap, orchestration, launch, memory …
    assert!(checked.len() >= 15, "{checked:#?}");
}

#[test]
fn fuzz_runs_in_the_simulator_prints_a_summary_and_replays_a_seed() {
    let out = rustile(&["fuzz", "--sim", "--cases", "20", "--seed", "1"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    for family in rustile::families::all() {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(&format!("{} ", family.name())))
            .unwrap_or_else(|| panic!("no line for {}:\n{stdout}", family.name()));
        assert!(
            line.contains(" cases,") && line.contains(" 0 failed"),
            "{line}"
        );
    }
    assert!(
        stdout.contains("fuzzed 20 cases") && stdout.contains("20 passed, 0 failed"),
        "{stdout}"
    );
    // The first copy case of that run, by its case seed.
    let seed = format!("{:#x}", rustile::families::fuzz::case_seed(1, "copy", 0));
    let out = rustile(&["fuzz", "--family", "copy", "--replay", &seed, "--sim"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("copy/") && stdout.ends_with("passed\n"),
        "{stdout}"
    );
    for bad in [
        "fuzz --replay 7",
        "fuzz --cases 0",
        "fuzz --seed x",
        "fuzz --family nope",
        "fuzz --family copy --replay 1 --seed 2",
    ] {
        let out = rustile(&bad.split_whitespace().collect::<Vec<_>>());
        assert_eq!(out.status.code(), Some(2), "`rustile {bad}`");
    }
}

/// A result file of `rows` (key, median ms, noise %) as `rustile bench` writes it.
fn result_file(path: &std::path::Path, rows: &[(&str, f64, f64)]) {
    let rows: Vec<serde_json::Value> = rows
        .iter()
        .map(|&(key, median, noise)| {
            serde_json::json!({
                "key": key, "kernel": key.split(' ').next().unwrap(), "dtype": "f32",
                "dims": {"m": 256, "n": 256, "k": 256}, "warnings": [],
                "time": {
                    "median_ms": median, "min_ms": median * 0.9, "max_ms": median * 1.1,
                    "mean_ms": median, "reps": 10, "clocks": null,
                    "p20_ms": median * (1.0 - noise / 200.0),
                    "p80_ms": median * (1.0 + noise / 200.0), "noise_pct": noise
                }
            })
        })
        .collect();
    let file = serde_json::json!({
        "schema": "rustile-results/1",
        "meta": {
            "tool": "bench gemm", "command_line": ["rustile", "bench", "gemm"],
            "timestamp_utc": "2026-12-02T01:00:00Z", "rustile_version": "0.1.0",
            "git_commit": "0123456789abcdef0123456789abcdef01234567", "seed": 1,
            "timing": {"warmup": 1, "reps": 3, "reps_max": 20, "l2": "flush",
                       "timer": "cuda-events", "pairing": null, "noisy_pct": 5.0,
                       "max_noise_pct": null},
            "device": null
        },
        "rows": rows
    });
    std::fs::write(path, serde_json::to_string_pretty(&file).unwrap()).unwrap();
}

#[test]
fn compare_calls_rows_faster_slower_or_same_beyond_their_noise() {
    let dir = std::env::temp_dir().join(format!("rustile-compare-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (a, b) = (dir.join("a.json"), dir.join("b.json"));
    result_file(
        &a,
        &[
            ("quiet-faster f32", 1.0, 0.5),
            ("quiet-slower f32", 1.0, 0.5),
            ("quiet-same f32", 1.0, 0.5),
            ("noisy f32", 1.0, 12.0),
            ("gone f32", 1.0, 1.0),
        ],
    );
    result_file(
        &b,
        &[
            ("quiet-faster f32", 0.95, 0.5), // 5% faster, threshold 2%
            ("quiet-slower f32", 1.03, 0.5), // 3% slower, threshold 2%
            ("quiet-same f32", 1.015, 0.5),  // 1.5%: within 2%
            ("noisy f32", 0.92, 1.0),        // 8% faster, but A's noise is 12%
            ("new f32", 1.0, 1.0),
        ],
    );
    let out = rustile(&["compare", a.to_str().unwrap(), b.to_str().unwrap()]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    let verdict = |key: &str| {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(&format!("| {key} |")))
            .unwrap_or_else(|| panic!("no row {key}:\n{stdout}"));
        line.trim_end_matches(" |")
            .rsplit("| ")
            .next()
            .unwrap()
            .to_string()
    };
    assert_eq!(verdict("quiet-faster f32"), "faster");
    assert_eq!(verdict("quiet-slower f32"), "slower");
    assert_eq!(verdict("quiet-same f32"), "same");
    assert_eq!(verdict("noisy f32"), "same");
    assert_eq!(verdict("gone f32"), "only in A");
    assert_eq!(verdict("new f32"), "only in B");
    assert!(
        stdout.contains("1 faster, 1 slower, 2 same, 1 only in A, 1 only in B"),
        "{stdout}"
    );
    assert!(
        stdout.contains("±12.0%"),
        "the noisy row's threshold:\n{stdout}"
    );
    // A file that is not a result file: an error naming it, exit code 1.
    let old = dir.join("old.json");
    std::fs::write(&old, "[]").unwrap();
    let out = rustile(&["compare", old.to_str().unwrap(), b.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("not a rustile result file"));
    let out = rustile(&["compare", a.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "B.json is required");
    std::fs::remove_dir_all(&dir).unwrap();
}
