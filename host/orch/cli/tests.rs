//! Unit tests.

use super::*;
use crate::cli::orch::OrchCommand;

fn parse(line: &str) -> Result<OrchCommand, clap::Error> {
    let cli = crate::cli::Cli::try_parse_checked(
        std::iter::once("rustile").chain(line.split_whitespace()),
    )?;
    match cli.command {
        Some(crate::cli::Command::Orch(o)) => Ok(o),
        other => panic!("{line}: {other:?}"),
    }
}

fn overlap_args(line: &str) -> OverlapArgs {
    match parse(&format!("overlap {line}")).unwrap() {
        OrchCommand::Overlap(o) => o,
        other => panic!("{line}: {other:?}"),
    }
}

#[test]
fn options_parse_and_reject() {
    let o = overlap_args("--streams 1,3 --chunk-mib 8 --no-pageable");
    assert_eq!(o.streams, Some(vec![1, 3]));
    assert_eq!(o.chunk_mib, Some(8));
    assert!(o.no_pageable);
    for bad in [
        "overlap --bogus 1",
        "overlap --reps",
        "overlap --reps 0",
        "overlap --streams 1,x",
        "overlap --order free,sideways",
        "overlap --kernel scan",
        "launch --batch-mib 4",
        "memory --sizes-mib 0",
        "transfer --max-mib -1",
        "orchestration --quick --gather 0",
    ] {
        assert_eq!(parse(bad).unwrap_err().exit_code(), 2, "{bad}");
    }
    let OrchCommand::Memory(m) = parse("memory").unwrap() else {
        panic!()
    };
    assert_eq!(
        (m.sizes_mib, m.iterations, m.reps),
        (vec![1, 64, 256], 100, 5)
    );
    let OrchCommand::Orchestration(o) = parse("orchestration --quick --gemm-k 8192").unwrap()
    else {
        panic!()
    };
    assert!(o.quick);
    assert_eq!((o.gather, o.gemm_k), (GATHER_STRIDE, 8192));
}

#[test]
fn overlap_options_map_to_elements() {
    let o = overlap_args("--batch-mib 64 --chunk-mib 4 --compute-reps 3 --order free,all");
    let c = overlap_config(&o, Plan::new(true).overlap);
    assert_eq!(
        (c.batch_elems, c.chunk_elems, c.compute_reps),
        (16 * MIB, MIB, Some(3))
    );
    assert!(c.pageable);
    assert_eq!(c.orders, vec![StageOrder::Free, StageOrder::All]);
    let c = overlap_config(&overlap_args(""), Plan::new(true).overlap);
    assert_eq!(c.streams, vec![1, 2, 3, 4]);
    assert_eq!(c.compute_reps, None);
}

#[test]
fn work_names() {
    assert!(matches!(work("copy"), Ok(ChunkWork::Copy(_))));
    assert!(matches!(
        work("transpose"),
        Ok(ChunkWork::Transpose { cols: 2048, .. })
    ));
    assert!(matches!(
        work("gather"),
        Ok(ChunkWork::Gather {
            stride: GATHER_STRIDE,
            ..
        })
    ));
    assert!(matches!(
        work("gather:16"),
        Ok(ChunkWork::Gather { stride: 16, .. })
    ));
    for bad in ["gather:0", "gather:x", "copy:2", "scan"] {
        assert!(matches!(work(bad), Err(Error::Usage(_))), "{bad}");
    }
}

#[test]
fn gemm_specs_and_row_candidates() {
    assert!(matches!(
        kernel_spec("gemm"),
        Ok(KernelSpec::GemmCalibrated { k: GEMM_K })
    ));
    assert!(matches!(
        kernel_spec("gemm:8192"),
        Ok(KernelSpec::GemmCalibrated { k: 8192 })
    ));
    assert!(matches!(
        kernel_spec("gemm:4096:1280"),
        Ok(KernelSpec::Work(ChunkWork::Gemm { k: 4096, n: 1280 }))
    ));
    assert!(matches!(
        work("gemm:4096:1280"),
        Ok(ChunkWork::Gemm { k: 4096, n: 1280 })
    ));
    assert!(matches!(
        kernel_spec("copy"),
        Ok(KernelSpec::Work(ChunkWork::Copy(_)))
    ));
    for bad in [
        "gemm:0",
        "gemm:4096:0",
        "gemm:4096:1281",
        "gemm:x",
        "gemm:1:2:3",
        "gemmx",
    ] {
        assert!(matches!(kernel_spec(bad), Err(Error::Usage(_))), "{bad}");
    }
    // `work` needs a fixed N.
    assert!(matches!(work("gemm"), Err(Error::Usage(_))));
    // 32 MiB chunks of 16 KiB rows: 1024 … 2048 rows.
    assert_eq!(
        gemm_row_candidates(32 * MIB / 4, 4096),
        vec![1024, 1280, 1536, 1792, 2048]
    );
    // Small chunks: at least 64 rows, no duplicates.
    assert_eq!(gemm_row_candidates(64 * 4096, 4096), vec![64]);
    assert!(gemm_row_candidates(100, 0).is_empty());
    let c = overlap_config(&overlap_args("--kernel gemm"), Plan::new(false).overlap);
    assert!(
        matches!(c.work, ChunkWork::Copy(_)),
        "resolved after the calibration"
    );
}
