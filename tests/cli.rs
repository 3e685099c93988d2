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
