//! The `rustile` binary's command line, no GPU needed: `--help` works on every command of the
//! grammar (enumerated from clap's tree, so new ones are covered), bad arguments are usage
//! errors (exit code 2) found before any GPU is opened, and the README's CLI block is the
//! top-level help.

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
