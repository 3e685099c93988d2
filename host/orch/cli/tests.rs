//! Unit tests.

use super::*;

fn args(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

#[test]
fn options_parse_and_reject() {
    let o = Opts::parse(
        &args("--streams 1,3 --chunk-mib 8 --no-pageable"),
        &["--streams", "--chunk-mib", "--no-pageable"],
    )
    .unwrap();
    assert_eq!(o.list("--streams", &[]).unwrap(), vec![1, 3]);
    assert_eq!(o.num("--chunk-mib", 1).unwrap(), 8);
    assert!(o.has("--no-pageable"));
    assert!(matches!(
        Opts::parse(&args("--bogus 1"), &["--reps"]),
        Err(Error::Usage(_))
    ));
    assert!(matches!(
        Opts::parse(&args("--reps"), &["--reps"]),
        Err(Error::Usage(_))
    ));
    let o = Opts::parse(&args("--reps 0 --streams 1,x"), &["--reps", "--streams"]).unwrap();
    assert!(o.num("--reps", 1).is_err());
    assert!(o.list("--streams", &[]).is_err());
}

#[test]
fn overlap_options_map_to_elements() {
    let o = Opts::parse(
        &args("--batch-mib 64 --chunk-mib 4 --compute-reps 3"),
        &["--batch-mib", "--chunk-mib", "--compute-reps"],
    )
    .unwrap();
    let c = overlap_config(&o, Plan::new(true).overlap).unwrap();
    assert_eq!(
        (c.batch_elems, c.chunk_elems, c.compute_reps),
        (16 * MIB, MIB, Some(3))
    );
    assert!(c.pageable);
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
    let o = Opts::parse(&args("--kernel gemm"), &["--kernel"]).unwrap();
    let c = overlap_config(&o, Plan::new(false).overlap).unwrap();
    assert!(
        matches!(c.work, ChunkWork::Copy(_)),
        "resolved after the calibration"
    );
}

#[test]
fn unknown_commands_fall_through() {
    assert!(run("bench", &[]).is_none());
}
