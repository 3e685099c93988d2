//! The attention command line through the whole grammar (`Cli`, which attaches the family's
//! command): typed values, defaults, usage errors, and the runs that need no GPU.

use clap::FromArgMatches;
use rustile_kernels::registry::DType;

use crate::cli::{Cli, Command};

use super::bench::{BenchShape, Sweep};
use super::cli::*;
use super::{Shape, Variant};

fn parse(line: &str) -> Result<Cli, clap::Error> {
    Cli::try_parse_checked(std::iter::once("rustile").chain(line.split_whitespace()))
}

fn attention(line: &str) -> AttentionCommand {
    match parse(line).unwrap().command {
        Some(Command::Family(f)) => {
            assert_eq!(f.family.name(), "attention");
            AttentionCli::from_arg_matches(&f.matches).unwrap().command
        }
        other => panic!("{line}: {other:?}"),
    }
}

#[test]
fn the_family_command_is_attached_and_dispatched() {
    let cmd = <Cli as clap::CommandFactory>::command();
    let sub = cmd
        .find_subcommand("attention")
        .expect("attention is a subcommand");
    let names: Vec<&str> = sub.get_subcommands().map(|s| s.get_name()).collect();
    assert_eq!(names, ["validate", "bench", "dump"]);
    // The built-in commands still parse to their derived variants.
    assert!(matches!(
        parse("validate attention --sim").unwrap().command,
        Some(Command::Validate(_))
    ));
    let AttentionCommand::Validate(v) = attention("attention validate --full --sim --seed 3")
    else {
        panic!()
    };
    assert!(v.full && v.sim && v.seed.seed == Some(3));
    let AttentionCommand::Validate(v) = attention("attention validate") else {
        panic!()
    };
    assert!(!v.full && !v.sim && v.seed.seed.is_none());
}

#[test]
fn bench_defaults_are_the_anchor_and_bh_sweeps() {
    let AttentionCommand::Bench(b) = attention("attention bench") else {
        panic!()
    };
    assert_eq!(b.shapes(), Sweep::default().shapes());
    assert_eq!(
        (b.dtype, b.reps, b.warmup, b.no_check, b.print_shapes),
        (DType::F16, 30, 5, false, false)
    );
    assert!(b.variants.is_none() && b.out.is_none());
}

#[test]
fn bench_options_parse_to_typed_values() {
    let names: Vec<&str> = Variant::all().into_iter().map(Variant::name).collect();
    let line = format!(
        "attention bench --variants {} --dtype bf16 --n 1024,4096 --head-dim 128 --mask causal \
         --bh none --reps 7 --warmup 0 --no-check --seed 5",
        names.join(",")
    );
    let AttentionCommand::Bench(b) = attention(&line) else {
        panic!()
    };
    assert_eq!(b.variants, Some(Variant::all()));
    assert_eq!(
        (b.dtype, b.reps, b.warmup, b.no_check),
        (DType::Bf16, 7, 0, true)
    );
    assert_eq!(
        b.shapes(),
        vec![
            BenchShape::anchor(1024, 128, true),
            BenchShape::anchor(4096, 128, true)
        ]
    );
    let line = "attention bench --mask none --n 512 --head-dim 64 --bh 4,132";
    let AttentionCommand::Bench(b) = attention(line) else {
        panic!()
    };
    let s = b.shapes();
    assert_eq!(s.len(), 3);
    assert_eq!((s[1].b, s[1].h, s[2].b, s[2].h), (4, 1, 132, 1));
    let line = "attention bench --shapes 2,8,300,64,1;1,1,7,128,0 --print-shapes";
    let AttentionCommand::Bench(b) = attention(line) else {
        panic!()
    };
    assert!(b.print_shapes);
    assert_eq!(b.shapes().len(), 2);
    assert_eq!(
        b.shapes()[0],
        BenchShape {
            b: 2,
            h: 8,
            n: 300,
            d: 64,
            causal: true
        }
    );
}

#[test]
fn dump_options_parse_to_typed_values() {
    let dir = std::env::temp_dir().join(format!("rustile-attn-cli-{}", std::process::id()));
    let out = dir.display().to_string();
    let AttentionCommand::Dump(d) = attention(&format!("attention dump --out {out}")) else {
        panic!()
    };
    assert_eq!(d.out, dir);
    assert_eq!(d.cases.0, super::dump::default_cases());
    assert_eq!(d.dtypes, vec![DType::F16, DType::Bf16]);
    assert!(d.variant.is_none() && !d.sim);
    let AttentionCommand::Dump(d) = attention(&format!(
        "attention dump --out {out} --cases 1,3,5,2,1,64,causal --dtypes bf16 --variant mma --sim --seed 2"
    )) else {
        panic!()
    };
    assert_eq!(
        d.cases.0,
        vec![Shape::new(1, 3, 5, 2, 1, 64).with_causal(true)]
    );
    assert_eq!(
        (d.dtypes, d.variant, d.sim),
        (vec![DType::Bf16], Some(Variant::mma()), true)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_values_are_usage_errors() {
    // Each line and a piece of the error it must give (the argument clap blames).
    for (bad, says) in [
        ("attention", "Usage: rustile attention <COMMAND>"),
        ("attention frobnicate", "frobnicate"),
        ("attention validate --quick", "--quick"),
        ("attention bench --variants fastest", "--variants"),
        ("attention bench --dtype f32", "--dtype"),
        ("attention bench --n 0", "--n"),
        ("attention bench --n abc", "--n"),
        ("attention bench --head-dim 96", "--head-dim"),
        ("attention bench --mask sometimes", "--mask"),
        ("attention bench --bh 0", "--bh"),
        ("attention bench --reps 0", "--reps"),
        ("attention bench --shapes 1,1,1", "--shapes"),
        (
            "attention bench --shapes 1,16,512,64,0 --n 1024",
            "cannot be used with",
        ),
        ("attention bench --out /proc/rustile", "--out"),
        ("attention dump", "--out <DIR>"),
        ("attention dump --out /proc/rustile", "--out"),
        ("attention dump --cases 1,1,1,3,2,64", "not a multiple"),
        ("attention dump --dtypes f32", "--dtypes"),
        ("attention dump --variant fastest", "--variant"),
    ] {
        let e = parse(bad).unwrap_err();
        assert_eq!(e.exit_code(), 2, "{bad}: {e}");
        assert!(e.to_string().contains(says), "{bad}: {e}");
    }
}

#[test]
fn print_shapes_the_simulator_dump_and_validation_run_without_a_gpu() {
    let Some(Command::Family(f)) =
        parse("attention bench --n 512 --head-dim 64 --mask none --bh none --print-shapes")
            .unwrap()
            .command
    else {
        panic!()
    };
    f.run().unwrap();
    let dir = std::env::temp_dir().join(format!("rustile-attn-dump-cli-{}", std::process::id()));
    let line = format!(
        "attention dump --out {} --cases 1,2,3,1,1,64 --dtypes bf16 --sim --seed 1",
        dir.display()
    );
    let Some(Command::Family(f)) = parse(&line).unwrap().command else {
        panic!()
    };
    f.run().unwrap();
    let Some(Command::Family(f)) = parse("attention validate --sim --seed 4").unwrap().command
    else {
        panic!()
    };
    f.run().unwrap(); // every simulator case of the family, against float64
    let case = dir.join("00-bf16-b1-q2-kv3-h1x1-d64");
    for file in ["meta.json", "q.npy", "k.npy", "v.npy", "o.npy", "lse.npy"] {
        assert!(case.join(file).is_file(), "{file}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
