//! `rustile report`: the page built from the committed H200 results (sections, well-formed SVG,
//! no external references, no overlapping labels), the command line, and the page rendered in
//! headless Chromium (non-blank screenshot, empty console).

use std::path::{Path, PathBuf};
use std::process::Command;

use rustile::report::{build, Options, Report};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The committed runs the report in bench-results/report/ is built from.
const RUNS: [&str; 8] = [
    "bench-results/2026-11-30-h200-final",
    "bench-results/2026-11-30-h200-memory",
    "bench-results/2026-11-30-h200-small-and-crossover",
    "bench-results/2026-11-30-h200-hgemm",
    "bench-results/2026-12-01-h200-attention",
    "bench-results/2026-12-01-h200-conv-3/final",
    "bench-results/2026-11-30-h200-orchestration",
    "bench-results/report/inputs",
];

fn committed(simulate: bool) -> Report {
    build(&Options {
        dirs: RUNS.iter().map(|r| root().join(r)).collect(),
        simulate,
        ptxas: false,
    })
    .expect("report from the committed results")
}

/// A strict-enough XML check: every tag closes in order, attributes are `name="value"`, text
/// holds no raw `<` and only the five predefined entities or numeric references.
fn well_formed(doc: &str) -> Result<usize, String> {
    let mut stack: Vec<String> = Vec::new();
    let mut elements = 0;
    let mut rest = doc;
    while let Some(i) = rest.find('<') {
        check_text(&rest[..i])?;
        rest = &rest[i..];
        let end = rest.find('>').ok_or("unterminated tag")?;
        let tag = &rest[1..end];
        rest = &rest[end + 1..];
        if let Some(name) = tag.strip_prefix('/') {
            let open = stack.pop().ok_or(format!("stray </{name}>"))?;
            if open != name.trim() {
                return Err(format!("<{open}> closed by </{name}>"));
            }
            continue;
        }
        let self_closing = tag.ends_with('/');
        let body = tag.trim_end_matches('/');
        let (name, attrs) = body.split_once(char::is_whitespace).unwrap_or((body, ""));
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == ':') {
            return Err(format!("bad tag name in <{tag}>"));
        }
        let mut a = attrs.trim();
        while !a.is_empty() {
            let eq = a
                .find("=\"")
                .ok_or(format!("attribute without =\"…\" in <{tag}>"))?;
            let key = a[..eq].trim();
            if key.is_empty() || key.contains(char::is_whitespace) {
                return Err(format!("bad attribute name in <{tag}>"));
            }
            let close = a[eq + 2..].find('"').ok_or("unterminated attribute")?;
            check_text(&a[eq + 2..eq + 2 + close])?;
            a = a[eq + 2 + close + 1..].trim_start();
        }
        elements += 1;
        if !self_closing {
            stack.push(name.to_string());
        }
    }
    check_text(rest)?;
    if let Some(open) = stack.pop() {
        return Err(format!("<{open}> never closed"));
    }
    Ok(elements)
}

fn check_text(t: &str) -> Result<(), String> {
    let mut rest = t;
    while let Some(i) = rest.find('&') {
        let after = &rest[i + 1..];
        let semi = after.find(';').ok_or("bare &")?;
        let ent = &after[..semi];
        let ok = ["amp", "lt", "gt", "quot", "apos"].contains(&ent)
            || (ent.starts_with('#') && ent.len() > 1);
        if !ok {
            return Err(format!("unknown entity &{ent};"));
        }
        rest = &after[semi..];
    }
    Ok(())
}

fn svgs(html: &str) -> Vec<&str> {
    html.match_indices("<svg")
        .map(|(i, _)| {
            let end = html[i..].find("</svg>").expect("closed svg") + i + "</svg>".len();
            &html[i..end]
        })
        .collect()
}

#[test]
fn xml_checker_rejects_broken_documents() {
    assert_eq!(
        well_formed(r#"<svg a="1"><g><text>x &amp; y</text></g><rect/></svg>"#),
        Ok(4)
    );
    for bad in [
        "<svg><g></svg></g>",
        "<svg>",
        r#"<svg a=1></svg>"#,
        "<svg>a & b</svg>",
        "<svg>&nbsp;</svg>",
        r#"<svg a="x"y></svg>"#,
    ] {
        assert!(well_formed(bad).is_err(), "{bad}");
    }
}

#[test]
fn report_from_the_committed_results() {
    let r = committed(true);
    let html = &r.html;
    assert!(html.starts_with("<!DOCTYPE html>") && html.ends_with("</html>\n"));
    // One section per family, each with its charts.
    for (id, charts) in [
        ("memory", &["copy-ladder", "strided-ladder"][..]),
        (
            "gemm",
            &["sgemm-ladder", "sgemm-roofline", "sgemm-crossover"],
        ),
        ("hgemm", &["hgemm-ladder", "hgemm-roofline"]),
        ("attention", &["attention-ladder", "attention-roofline"]),
        ("conv", &["conv-ladder", "conv-roofline"]),
        ("orchestration", &["transfer", "timeline-0"]),
    ] {
        let s = r
            .sections
            .iter()
            .find(|s| s.id == id)
            .unwrap_or_else(|| panic!("no {id}"));
        for c in charts {
            assert!(
                s.charts.iter().any(|(n, _, _)| n == c),
                "{id}: no chart {c}"
            );
        }
        assert!(html.contains(&format!("<section id=\"{id}\">")));
    }
    // No transpose bench among the committed runs: said, not failed.
    assert!(html.contains("No transpose results"));
    // Every chart: well-formed, its labels clear of each other and of the edges.
    let all = svgs(html);
    assert_eq!(all.len(), r.charts().count());
    for svg in &all {
        well_formed(svg).unwrap_or_else(|e| panic!("{e}: {}", &svg[..200.min(svg.len())]));
    }
    for (name, _, overlaps) in r.charts() {
        assert_eq!(*overlaps, 0, "{name}: {overlaps} overlapping text boxes");
    }
    // The page as a whole parses too (after the doctype), and names nothing outside itself.
    well_formed(&html["<!DOCTYPE html>\n".len()..]).unwrap();
    let svg_ns = "http://www.w3.org/2000/svg";
    assert_eq!(html.matches("http").count(), html.matches(svg_ns).count());
    for external in [
        "<script", "<link", "src=", "url(", "@import", "<img", "<iframe",
    ] {
        assert!(!html.contains(external), "page contains {external}");
    }
    // Vendor lines and measured ceilings are drawn.
    for needle in [
        "cuBLAS",
        "cuMemcpyDtoD",
        "cuDNN",
        "DRAM",
        "measured cuMemcpyDtoD",
        "FP32 66.9 TFLOP/s (datasheet)",
    ] {
        assert!(html.contains(needle), "no {needle}");
    }
    // The simulator: transpose/smem's 32-way conflicts, gone in the swizzled one; the
    // strided gather at stride 8 reads 8× the sectors it needs (12.5 %).
    let sim = &r
        .sections
        .iter()
        .find(|s| s.id == "simulator")
        .unwrap()
        .html;
    let part = |from: &str, to: &str| {
        let a = sim.find(from).unwrap_or_else(|| panic!("no {from}"));
        let b = sim[a..].find(to).map_or(sim.len(), |b| a + b);
        sim[a..b].to_string()
    };
    assert!(part("transpose/smem 256x256", "transpose/smem_swizzled").contains("32.00 / 32"));
    let swz = part("transpose/smem_swizzled", "gemm/naive");
    assert!(swz.contains("1.00 / 1") && !swz.contains("32.00 / 32"));
    assert!(part("strided/gather", "transpose/naive").contains("12.5 %"));
    assert!(!sim.contains("not analysed"), "{sim}");
    // Occupancy from the committed ptxas report: the 32-register copy kernels fill sm_80.
    let occ = &r
        .sections
        .iter()
        .find(|s| s.id == "occupancy")
        .unwrap()
        .html;
    assert!(occ.contains("<td>copy_scalar_f32</td>"), "{occ}");
    assert!(occ.matches("100 % (").count() > 3);
    // Files that are not results are listed as skipped, not fatal.
    assert!(r.inputs.read.len() >= 8, "{:?}", r.inputs.read);
}

#[test]
fn committed_report_is_small_and_well_formed() {
    let page = std::fs::read_to_string(root().join("bench-results/report/report.html")).unwrap();
    assert!(page.len() < 500 * 1024, "{} bytes", page.len());
    well_formed(&page["<!DOCTYPE html>\n".len()..]).unwrap();
    for svg in std::fs::read_dir(root().join("bench-results/report")).unwrap() {
        let p = svg.unwrap().path();
        if p.extension().is_some_and(|e| e == "svg") {
            well_formed(&std::fs::read_to_string(&p).unwrap()).unwrap();
        }
    }
}

#[test]
fn command_line() {
    let exe = env!("CARGO_BIN_EXE_rustile");
    let dir = std::env::temp_dir().join(format!("rustile-report-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("r.html");
    let o = Command::new(exe)
        .args(["report", "--no-sim", "--out"])
        .arg(&out)
        .arg(root().join(RUNS[1]))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("0 overlapping labels"), "{stdout}");
    assert!(std::fs::read_to_string(&out)
        .unwrap()
        .contains("strided-ladder"));
    // A directory that is not there: an error naming it, no page.
    let o = Command::new(exe)
        .args(["report", "/nonexistent/rustile-results"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("/nonexistent/rustile-results"));
    // No directory at all: a usage error.
    let o = Command::new(exe).arg("report").output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&dir);
}

fn chromium() -> Option<PathBuf> {
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|name| {
            std::env::var_os("PATH")?
                .to_str()?
                .split(':')
                .map(|d| Path::new(d).join(name))
                .find(|p| p.is_file())
        })
}

/// Renders `page` headless; returns (PNG bytes, console lines). Console output reaches stderr
/// with `--enable-logging=stderr --v=0` as `…:CONSOLE(…)` / `…:CONSOLE:…` lines (uncaught
/// exceptions as `"Uncaught …"`, failed loads too); the page has no script, so any such line
/// is a fault.
fn render(browser: &Path, page: &Path, dir: &Path) -> (Vec<u8>, Vec<String>) {
    let png = dir.join(format!(
        "{}.png",
        page.file_stem().unwrap().to_string_lossy()
    ));
    let o = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
            "--window-size=1280,2000",
        ])
        .arg(format!("--user-data-dir={}", dir.join("profile").display()))
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("run chromium");
    let stderr = String::from_utf8_lossy(&o.stderr);
    let console = stderr
        .lines()
        .filter(|l| l.contains(":CONSOLE") || l.contains("Uncaught"))
        .map(str::to_string)
        .collect();
    let bytes = std::fs::read(&png).unwrap_or_else(|e| panic!("no screenshot ({e}): {stderr}"));
    (bytes, console)
}

/// Decodes an 8-bit RGB/RGBA PNG (what Chromium writes): `(width, height, channels, pixels)`.
fn decode_png(png: &[u8]) -> (usize, usize, usize, Vec<u8>) {
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    let (mut w, mut h, mut ch, mut idat) = (0, 0, 0, Vec::new());
    let mut at = 8;
    while at + 8 <= png.len() {
        let len = u32::from_be_bytes(png[at..at + 4].try_into().unwrap()) as usize;
        let kind = &png[at + 4..at + 8];
        let data = &png[at + 8..at + 8 + len];
        match kind {
            b"IHDR" => {
                w = u32::from_be_bytes(data[0..4].try_into().unwrap()) as usize;
                h = u32::from_be_bytes(data[4..8].try_into().unwrap()) as usize;
                assert_eq!(data[8], 8, "bit depth");
                assert_eq!(data[12], 0, "interlaced");
                ch = match data[9] {
                    2 => 3,
                    6 => 4,
                    t => panic!("colour type {t}"),
                };
            }
            b"IDAT" => idat.extend_from_slice(data),
            _ => {}
        }
        at += 12 + len;
    }
    let raw = miniz_oxide::inflate::decompress_to_vec_zlib(&idat).expect("inflate");
    let stride = w * ch;
    assert_eq!(raw.len(), h * (stride + 1));
    let mut px = vec![0u8; h * stride];
    for y in 0..h {
        let f = raw[y * (stride + 1)];
        let line = &raw[y * (stride + 1) + 1..(y + 1) * (stride + 1)];
        for x in 0..stride {
            let a = if x >= ch {
                px[y * stride + x - ch] as i32
            } else {
                0
            };
            let b = if y > 0 {
                px[(y - 1) * stride + x] as i32
            } else {
                0
            };
            let c = if x >= ch && y > 0 {
                px[(y - 1) * stride + x - ch] as i32
            } else {
                0
            };
            let pred = match f {
                0 => 0,
                1 => a,
                2 => b,
                3 => (a + b) / 2,
                4 => {
                    let p = a + b - c;
                    let (pa, pb, pc) = ((p - a).abs(), (p - b).abs(), (p - c).abs());
                    if pa <= pb && pa <= pc {
                        a
                    } else if pb <= pc {
                        b
                    } else {
                        c
                    }
                }
                _ => panic!("filter {f}"),
            };
            px[y * stride + x] = (line[x] as i32 + pred) as u8;
        }
    }
    (w, h, ch, px)
}

#[test]
fn renders_in_headless_chromium() {
    let Some(browser) = chromium() else {
        assert!(
            std::env::var_os("RUSTILE_STRICT").is_none(),
            "RUSTILE_STRICT=1: chromium not found on PATH (apt-get install chromium)"
        );
        println!("SKIPPED: chromium not found on PATH (apt-get install chromium)");
        return;
    };
    let dir = std::env::temp_dir().join(format!("rustile-report-chromium-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // The detector first: a page with a script error must be caught.
    let bad = dir.join("bad.html");
    std::fs::write(&bad, "<!DOCTYPE html><p>x</p><script>nope();</script>").unwrap();
    let (_, console) = render(&browser, &bad, &dir);
    assert!(
        console
            .iter()
            .any(|l| l.contains("Uncaught ReferenceError")),
        "the console check saw nothing: {console:?}"
    );
    let page = dir.join("report.html");
    std::fs::write(&page, committed(false).html).unwrap();
    let (png, console) = render(&browser, &page, &dir);
    assert!(console.is_empty(), "console: {console:?}");
    let (w, h, ch, px) = decode_png(&png);
    assert_eq!((w, h), (1280, 2000));
    // Non-blank: a good share of the pixels are not the background, in many colours.
    let bg = &px[..ch];
    let pixels: Vec<&[u8]> = px.chunks(ch).collect();
    let ink = pixels.iter().filter(|p| p[..3] != bg[..3]).count();
    let colours: std::collections::HashSet<&[u8]> = pixels.iter().copied().collect();
    assert!(
        ink * 100 > pixels.len(),
        "{ink} of {} pixels drawn",
        pixels.len()
    );
    assert!(colours.len() > 50, "{} colours", colours.len());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn cargo_bench_summaries_get_a_section_with_one_chart_per_group() {
    let r = build(&Options {
        dirs: vec![root().join("bench-results/2026-12-02-h200-reliability")],
        simulate: false,
        ptxas: false,
    })
    .expect("report from the cargo bench run");
    assert!(r.inputs.bench.len() > 100, "{} rows", r.inputs.bench.len());
    let sec = r
        .sections
        .iter()
        .find(|s| s.id == "cargo-bench")
        .expect("a cargo bench section");
    for g in [
        "sgemm",
        "hgemm_f16",
        "hgemm_bf16",
        "copy",
        "transpose",
        "attention_f16",
        "conv_f16",
    ] {
        let (_, svg, overlaps) = sec
            .charts
            .iter()
            .find(|(name, _, _)| name == &format!("bench-{g}"))
            .unwrap_or_else(|| panic!("no chart for {g}"));
        assert_eq!(*overlaps, 0, "{g}: overlapping labels");
        well_formed(svg).unwrap_or_else(|e| panic!("{g}: {e}"));
    }
    // The suspect conv baseline is flagged on the page.
    assert!(sec.html.contains("baseline is suspect"));
}

/// A point of the occupancy experiment as `rustile occupancy` records it.
fn occ_row(
    experiment: &str,
    kernel: &str,
    threads: u32,
    cap: Option<u32>,
    pad: usize,
    blocks: u32,
    ms: f64,
) -> rustile::occupancy::study::OccRow {
    let warps = blocks * threads.div_ceil(32);
    rustile::occupancy::study::OccRow {
        experiment: experiment.into(),
        kernel: kernel.into(),
        symbol: format!("{}_f32", kernel.replace('/', "_")),
        shape: "n=33554432".into(),
        reg_cap: cap,
        registers: cap.unwrap_or(126).min(126),
        local_bytes: if cap == Some(32) { 184 } else { 0 },
        spill_bytes: Some(0),
        threads,
        dynamic_shared: pad,
        padding: pad,
        blocks_per_sm: blocks,
        warps_per_sm: warps,
        occupancy: warps as f64 / 64.0,
        throughput: 268.4 / ms,
        unit: if experiment == "memory" {
            "GB/s"
        } else {
            "GFLOP/s"
        }
        .into(),
        time: rustile::results::Stats::from_samples(vec![ms, ms * 1.01, ms * 0.99]),
        validated: "bitwise = src".into(),
    }
}

#[test]
fn occupancy_experiment_fixture() {
    use rustile::occupancy::study;
    use rustile::results::{meta, ResultFile};
    let dir = std::env::temp_dir().join(format!("rustile-report-occ-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut rows = Vec::new();
    for (threads, top) in [(32u32, 32u32), (256, 8), (1024, 2)] {
        let mut b = 1;
        while b <= top {
            rows.push(occ_row(
                "memory",
                "copy/scalar",
                threads,
                None,
                if b == top { 0 } else { 4096 },
                b,
                0.5 / b as f64,
            ));
            b *= 2;
        }
    }
    for (cap, blocks, ms) in [(None, 4, 7.0), (Some(64), 8, 6.5), (Some(32), 16, 21.0)] {
        rows.push(occ_row(
            "compute",
            "gemm/tile_128x64",
            128,
            cap,
            0,
            blocks,
            ms,
        ));
    }
    rows.push(occ_row(
        "compute",
        "gemm/tile_128x64",
        128,
        None,
        70000,
        2,
        9.0,
    ));
    rows.push(occ_row(
        "compute",
        "gemm/tile_128x64",
        128,
        Some(64),
        50000,
        4,
        7.5,
    ));
    let m = meta::RunMeta::new(
        "occupancy",
        None,
        Some(1),
        meta::TimingMeta::events(3, 20, "none"),
    );
    let f = ResultFile::new(m, &rows).unwrap();
    f.write(&dir, "occupancy", &study::markdown(&rows)).unwrap();
    assert!(std::fs::read_to_string(dir.join("occupancy.csv"))
        .unwrap()
        .contains("blocks_per_sm"));
    let r = build(&Options {
        dirs: vec![dir.clone()],
        simulate: false,
        ptxas: false,
    })
    .unwrap();
    let occ = r.sections.iter().find(|s| s.id == "occupancy").unwrap();
    let names: Vec<&str> = occ.charts.iter().map(|c| c.0.as_str()).collect();
    assert_eq!(names, ["occupancy-memory", "occupancy-compute"]);
    for (name, svg, overlaps) in &occ.charts {
        assert_eq!(*overlaps, 0, "{name}: overlapping labels");
        well_formed(svg).unwrap();
    }
    // One memory series per block size, the compute sweeps apart; every row in the table.
    for legend in [
        "copy/scalar 32 threads",
        "copy/scalar 1024 threads",
        "gemm/tile_128x64 register caps",
        "gemm/tile_128x64 smem padding",
        "gemm/tile_128x64 max 64 regs + padding",
    ] {
        assert!(occ.html.contains(legend), "no {legend}");
    }
    assert_eq!(occ.html.matches("<tr><td>memory</td>").count(), 6 + 4 + 2);
    assert_eq!(occ.html.matches("<tr><td>compute</td>").count(), 5);
    assert!(
        occ.html.contains("<td>32</td><td>32</td><td>50 %</td>"),
        "{}",
        occ.html
    );
    assert!(
        r.inputs
            .read
            .iter()
            .any(|(p, w)| p.ends_with("occupancy.json") && w == "17 rows"),
        "{:?}",
        r.inputs.read
    );
    // A file without its numbers is skipped, named, not fatal.
    std::fs::write(dir.join("occupancy.json"), r#"{"rows": [{"threads": 1}]}"#).unwrap();
    let r = build(&Options {
        dirs: vec![dir.clone()],
        simulate: false,
        ptxas: false,
    })
    .unwrap();
    assert!(
        r.inputs
            .skipped
            .iter()
            .any(|(p, why)| p.ends_with("occupancy.json") && why.contains("registers")),
        "{:?}",
        r.inputs.skipped
    );
    assert!(r.html.contains("No occupancy experiment"));
    let _ = std::fs::remove_dir_all(&dir);
}
