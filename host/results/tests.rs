use super::*;

#[derive(serde::Serialize)]
struct Row {
    variant: String,
    shape: String,
    stats: Stats,
    tflops: f64,
}

impl ResultRow for Row {
    fn id(&self) -> RowId {
        RowId {
            kernel: self.variant.clone(),
            dtype: "f32".into(),
            dims: vec![("m", 64), ("n", 32), ("k", 16)],
            tags: vec!["l2=flush".into()],
        }
    }
    fn time(&self) -> Option<&Stats> {
        Some(&self.stats)
    }
}

fn file(samples: &[Vec<f64>], max_noise: Option<f64>) -> ResultFile {
    let rows: Vec<Row> = samples
        .iter()
        .enumerate()
        .map(|(i, s)| Row {
            variant: format!("v{i}"),
            shape: "64x32x16".into(),
            stats: Stats::from_samples(s.clone()),
            tflops: 1.5,
        })
        .collect();
    let mut timing = TimingMeta::events(2, 5, "flush");
    timing.max_noise_pct = max_noise;
    ResultFile::new(RunMeta::new("bench test", None, Some(3), timing), &rows).unwrap()
}

#[test]
fn rows_carry_key_numeric_dims_time_and_warnings() {
    let f = file(&[vec![1.0, 1.0, 1.0], vec![1.0, 2.0, 3.0]], None);
    let r = &f.rows[0];
    assert_eq!(r["key"], "v0 f32 m=64 n=32 k=16 l2=flush");
    assert_eq!(r["dims"]["m"], 64);
    assert!(r["dims"]["k"].is_u64());
    assert_eq!(r["time"]["median_ms"], 1.0);
    assert_eq!(r["stats"]["reps"], 3);
    assert_eq!(r["shape"], "64x32x16", "the family's own fields stay");
    assert_eq!(r["warnings"].as_array().unwrap().len(), 0);
    let w = f.warnings();
    assert_eq!(w.len(), 1);
    assert!(
        w[0].0.starts_with("v1 ") && w[0].1.starts_with("noisy: "),
        "{w:?}"
    );
}

#[test]
fn json_csv_and_markdown_agree() {
    let f = file(&[vec![1.0, 1.1, 0.9], vec![2.0, 2.0, 2.0]], None);
    let dir = std::env::temp_dir().join(format!("rustile-results-{}", std::process::id()));
    let json = f.write(&dir, "test", "| table |\n").unwrap();
    let back = ResultFile::read(&json).unwrap();
    // serde_json parses floats to within an ulp, not always bit for bit: compare the rest exactly.
    assert_eq!(
        (&back.schema, &back.meta, back.rows.len()),
        (&f.schema, &f.meta, 2)
    );
    for (b, r) in back.rows.iter().zip(&f.rows) {
        assert_eq!(
            (&b["key"], &b["dims"], &b["warnings"]),
            (&r["key"], &r["dims"], &r["warnings"])
        );
        let (x, y) = (
            b["time"]["p20_ms"].as_f64().unwrap(),
            r["time"]["p20_ms"].as_f64().unwrap(),
        );
        assert!((x - y).abs() <= 1e-15 * y.abs(), "{x} vs {y}");
    }
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["schema"], SCHEMA);
    assert_eq!(v["meta"]["seed"], 3);
    assert_eq!(v["meta"]["timing"]["warmup"], 2);
    let csv = std::fs::read_to_string(dir.join("test.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(lines.len(), 3, "header and two rows:\n{csv}");
    let header: Vec<&str> = lines[0].split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let cells: Vec<&str> = lines[2].split(',').collect();
    assert_eq!(cells[col("dims.m")], "64");
    assert_eq!(cells[col("time.median_ms")], "2.0");
    assert_eq!(cells[col("key")], "v1 f32 m=64 n=32 k=16 l2=flush");
    assert!(csv.contains("# seed: 3\n") && csv.contains("# tool: bench test\n"));
    let md = std::fs::read_to_string(dir.join("test.md")).unwrap();
    assert!(md.starts_with("# rustile bench test\n") && md.contains("| table |"));
    assert!(
        md.contains("## Warnings (1)") && md.contains("`v0 f32"),
        "{md}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn max_noise_fails_naming_the_noisy_rows() {
    let samples = [vec![1.0, 1.0, 1.0], vec![1.0, 2.0, 3.0]];
    assert!(file(&samples, None).check_noise().is_ok());
    assert!(file(&samples[..1], Some(1.0)).check_noise().is_ok());
    let e = file(&samples, Some(10.0))
        .check_noise()
        .unwrap_err()
        .to_string();
    assert!(e.contains("1 row(s)") && e.contains("v1 f32"), "{e}");
    assert!(!e.contains("v0 f32"), "{e}");
}

#[test]
fn files_without_the_schema_are_refused() {
    let dir = std::env::temp_dir().join(format!("rustile-results-old-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let old = dir.join("gemm.json");
    std::fs::write(&old, "[{\"variant\": \"naive\"}]").unwrap();
    let e = ResultFile::read(&old).unwrap_err().to_string();
    assert!(e.contains("not a rustile result file"), "{e}");
    std::fs::write(&old, "{").unwrap();
    assert!(ResultFile::read(&old)
        .unwrap_err()
        .to_string()
        .contains("not JSON"));
    let missing = ResultFile::read(&dir.join("missing.json")).unwrap_err();
    assert!(matches!(missing, Error::Io { .. }), "{missing}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn csv_cells_are_quoted_when_needed() {
    assert_eq!(csv_cell("a,b"), "\"a,b\"");
    assert_eq!(csv_cell("say \"x\""), "\"say \"\"x\"\"\"");
    assert_eq!(csv_cell("plain"), "plain");
}
