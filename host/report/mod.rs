//! `rustile report RESULTS_DIR`: one self-contained HTML page (inline CSS and SVG, no script,
//! no network) from the result files the bench commands wrote: per family the ladder against
//! the vendor line and a roofline, strided GB/s vs stride, the transfer curves and stream
//! timeline, the simulator's per-line sectors and bank conflicts for the headline kernels (run
//! here, on the CPU), a theoretical-occupancy table from the ptxas resource report, and the
//! occupancy experiment's throughput-vs-occupancy charts (`occupancy.json`).
//!
//! What is missing is said on the page; a file that does not parse is listed and skipped.

mod bench;
pub mod chart;
pub mod load;
pub mod occ_study;
pub mod occupancy;
mod sections;

use std::path::PathBuf;

use chart::{xml, Canvas};
use load::Inputs;

use crate::error::{Error, Result};

/// A section of the page.
#[derive(Debug)]
pub struct Section {
    /// Anchor id.
    pub id: String,
    /// Heading.
    pub title: String,
    /// Body HTML (charts inline).
    pub html: String,
    /// `(name, svg, overlapping text-box pairs)` of the section's charts.
    pub charts: Vec<(String, String, usize)>,
}

impl Section {
    fn push_chart(&mut self, name: &str, chart: chart::Chart, note: Option<String>) {
        self.svgs_checked(name, chart.render(), &note.unwrap_or_default());
    }

    fn svgs_checked(&mut self, name: &str, canvas: Canvas, note: &str) {
        let svg = canvas.finish();
        self.html += &format!("<figure id=\"{name}\">\n{svg}");
        if !note.is_empty() {
            self.html += &format!("<figcaption>{note}</figcaption>\n");
        }
        self.html += "</figure>\n";
        self.charts
            .push((name.to_string(), svg, canvas.overlaps().len()));
    }
}

/// What to build the report from.
#[derive(Clone, Debug)]
pub struct Options {
    /// Result directories, searched recursively.
    pub dirs: Vec<PathBuf>,
    /// Run the simulator analysis of the headline kernels (CPU, about a second).
    pub simulate: bool,
    /// Assemble the PTX with ptxas for the occupancy table when the directories hold no
    /// `ptx-report.md` (about a minute).
    pub ptxas: bool,
}

/// The built page.
#[derive(Debug)]
pub struct Report {
    /// The HTML document.
    pub html: String,
    /// The sections, in page order.
    pub sections: Vec<Section>,
    /// What was read and skipped.
    pub inputs: Inputs,
}

impl Report {
    /// Every chart `(name, svg, overlapping text-box pairs)`.
    pub fn charts(&self) -> impl Iterator<Item = &(String, String, usize)> {
        self.sections.iter().flat_map(|s| s.charts.iter())
    }
}

/// The headline kernels the simulator analyses, with their shapes.
pub const HEADLINE: [(&str, &str); 9] = [
    ("copy/scalar", "4096"),
    ("copy/vec16", "16384"),
    ("strided/gather", "4096:8"),
    ("transpose/naive", "256x256"),
    ("transpose/smem", "256x256"),
    ("transpose/smem_swizzled", "256x256"),
    ("gemm/naive", "128x128x64"),
    ("gemm/smem", "128x128x64"),
    ("gemm/warptile", "128x128x64"),
];

fn simulator() -> Section {
    let mut html = String::from(
        "<p>Each kernel's own Rust source run in the SIMT simulator (validated against the CPU reference), per source line: global sectors per warp request and efficiency (distinct bytes / 32·sectors), shared-memory wavefronts and conflict degree (1 = conflict-free). Seed 1.</p>\n",
    );
    for (id, shape) in HEADLINE {
        let result = crate::cli::suite::kernel_id(id)
            .map_err(Error::Usage)
            .and_then(|k| {
                if k.family == crate::Family::Gemm {
                    crate::gemm::analyze(k, &crate::gemm::parse_shape(shape)?, 1)
                } else {
                    let p = crate::bench::parse_shape(k.family, shape)?;
                    crate::memory::analyze(k, crate::DType::F32, &p, 1)
                }
            });
        html += &format!("<h3>{} {}</h3>\n", xml(id), xml(shape));
        match result {
            Ok(a) => html += &md_table(&a.markdown()),
            Err(e) => {
                html += &format!(
                    "<p class=\"missing\">not analysed: {}</p>\n",
                    xml(&e.to_string())
                )
            }
        }
    }
    Section {
        id: "simulator".into(),
        title: "Simulator: sectors and bank conflicts per line".into(),
        html,
        charts: Vec::new(),
    }
}

/// A markdown table (`| a | b |` lines) as an HTML table; other lines as paragraphs.
pub fn md_table(md: &str) -> String {
    let mut out = String::new();
    let mut open = false;
    for line in md.lines().map(str::trim) {
        if line.starts_with('|') {
            let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
            if cells.iter().all(|c| c.chars().all(|ch| "-: ".contains(ch))) {
                continue;
            }
            let tag = if open { "td" } else { "th" };
            if !open {
                out += "<table>\n";
                open = true;
            }
            out += "<tr>";
            for c in cells {
                out += &format!("<{tag}>{}</{tag}>", xml(c));
            }
            out += "</tr>\n";
        } else {
            if open {
                out += "</table>\n";
                open = false;
            }
            if !line.is_empty() {
                out += &format!("<p>{}</p>\n", xml(line));
            }
        }
    }
    if open {
        out += "</table>\n";
    }
    out
}

fn occupancy_section(inp: &Inputs) -> Section {
    let mut html = String::from(
        "<p>Theoretical occupancy (resident warps / maximum) from ptxas registers, the registry's block size and shared memory (dynamic + static), per architecture: sm_80 64 warps, 32 blocks, 164 KiB; sm_86 48, 16, 100 KiB; sm_89 48, 24, 100 KiB; sm_90 64, 32, 228 KiB; 65536 registers (256 per warp granule, from four 16384-register sub-partitions), 1 KiB shared memory reserved per block. sm_86/sm_89 run the sm_80 cubin; sm_90a-only kernels use their sm_90a build. The limiter is in brackets.</p>\n",
    );
    if inp.ptx.is_empty() {
        html += "<p class=\"missing\">No ptxas resource report: put the output of <code>rustile ptx-report</code> in the results directory as <code>ptx-report.md</code>, or pass <code>--ptxas</code>.</p>\n";
    }
    let mut rows = String::new();
    let mut n = 0;
    for k in crate::KERNELS {
        for e in k
            .symbols
            .iter()
            .filter(|e| e.dtype == e.out || k.family == crate::Family::Gemm)
        {
            let find = |arch: &str| {
                inp.ptx
                    .iter()
                    .find(|r| r.kernel == e.symbol && r.arch == arch)
            };
            let (Some(a80), a90) = (
                find("sm_80").or_else(|| find("sm_90a")),
                find("sm_90").or_else(|| find("sm_90a")),
            ) else {
                continue;
            };
            let threads = k.block.0 * k.block.1 * k.block.2;
            let dynamic = k.shared_bytes(e.dtype) as u32;
            let cell = |arch: &str, r: Option<&crate::ptxas::KernelResources>| -> String {
                let (Some(l), Some(r)) = (occupancy::limits(arch), r) else {
                    return "-".into();
                };
                if arch != "sm_90" && r.arch == "sm_90a" {
                    return "-".into();
                }
                match occupancy::occupancy(&l, threads, r.registers, dynamic + r.shared_bytes) {
                    Some(o) => format!("{:.0} % ({})", 100.0 * o.fraction, o.limiter.name()),
                    None => "does not fit".into(),
                }
            };
            rows += &format!(
                "<tr><td>{}</td><td>{threads}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                xml(e.symbol),
                dynamic + a80.shared_bytes,
                a80.registers,
                a90.map_or("-".into(), |r| r.registers.to_string()),
                cell("sm_80", Some(a80)),
                cell("sm_86", Some(a80)),
                cell("sm_89", Some(a80)),
                cell("sm_90", a90)
            );
            n += 1;
        }
    }
    if n > 0 {
        html += "<table><tr><th>kernel</th><th>threads</th><th>smem B</th><th>regs sm_80</th><th>regs sm_90</th><th>sm_80</th><th>sm_86</th><th>sm_89</th><th>sm_90</th></tr>\n";
        html += &rows;
        html += "</table>\n";
    }
    let mut sec = Section {
        id: "occupancy".into(),
        title: "Occupancy".into(),
        html,
        charts: Vec::new(),
    };
    occ_study::render(&mut sec, &inp.occupancy);
    sec
}

fn inputs_section(inp: &Inputs) -> Section {
    let mut html = String::new();
    if !inp.meta.is_empty() {
        html += "<h3>Run metadata</h3>\n<table><tr><th>file</th><th>meta</th></tr>\n";
        for (path, m) in &inp.meta {
            let text = serde_json::to_string_pretty(m).unwrap_or_default();
            html += &format!(
                "<tr><td>{}</td><td><pre>{}</pre></td></tr>\n",
                xml(path),
                xml(&text)
            );
        }
        html += "</table>\n";
    } else {
        html +=
            "<p class=\"missing\">No run metadata (<code>meta</code> blocks) in these files.</p>\n";
    }
    html += "<h3>Files read</h3>\n<ul>\n";
    for (p, what) in &inp.read {
        html += &format!("<li><code>{}</code>: {}</li>\n", xml(p), xml(what));
    }
    html += "</ul>\n";
    if !inp.skipped.is_empty() {
        html += "<h3>Skipped</h3>\n<ul>\n";
        for (p, why) in &inp.skipped {
            html += &format!("<li><code>{}</code>: {}</li>\n", xml(p), xml(why));
        }
        html += "</ul>\n";
    }
    Section {
        id: "inputs".into(),
        title: "Inputs".into(),
        html,
        charts: Vec::new(),
    }
}

const CSS: &str =
    "body{font-family:sans-serif;max-width:1280px;margin:1em auto;padding:0 1em;color:#222}\
h2{border-bottom:1px solid #ccc;margin-top:2em}figure{margin:1em 0;overflow-x:auto}\
figcaption{font-size:90%;color:#555}table{border-collapse:collapse;font-size:85%;margin:.5em 0}\
td,th{border:1px solid #ddd;padding:2px 6px;text-align:left}th{background:#f4f4f4}\
pre{margin:0;font-size:85%;white-space:pre-wrap}.missing{color:#a33}nav a{margin-right:1em}";

/// `rustile report RESULTS_DIR... [--out FILE] [--svg-dir DIR] [--no-sim] [--ptxas]`.
#[derive(Clone, Debug, clap::Args)]
pub struct ReportArgs {
    /// Result directories (searched recursively for the files the bench commands write)
    #[arg(value_name = "RESULTS_DIR", required = true, num_args = 1..)]
    pub dirs: Vec<PathBuf>,
    /// Where the page goes [default: RESULTS_DIR/report.html, the first directory]
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Also write every chart as DIR/NAME.svg
    #[arg(long, value_name = "DIR")]
    pub svg_dir: Option<PathBuf>,
    /// Skip the simulator analysis of the headline kernels
    #[arg(long)]
    pub no_sim: bool,
    /// Run ptxas for the occupancy table when no ptx-report.md is found (about a minute)
    #[arg(long)]
    pub ptxas: bool,
}

/// The `report` command: builds the page and writes it (and the SVGs).
pub fn run(a: &ReportArgs) -> Result<()> {
    let report = build(&Options {
        dirs: a.dirs.clone(),
        simulate: !a.no_sim,
        ptxas: a.ptxas,
    })?;
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| a.dirs[0].join("report.html"));
    let io = |what: &std::path::Path, e: std::io::Error| {
        Error::Usage(format!("report: cannot write `{}`: {e}", what.display()))
    };
    std::fs::write(&out, &report.html).map_err(|e| io(&out, e))?;
    if let Some(dir) = &a.svg_dir {
        std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
        for (name, svg, _) in report.charts() {
            let p = dir.join(format!("{name}.svg"));
            std::fs::write(&p, svg).map_err(|e| io(&p, e))?;
        }
    }
    let charts = report.charts().count();
    let overlapping: usize = report.charts().map(|c| c.2).sum();
    println!(
        "report: {} ({} KiB, {charts} charts, {} files read, {} skipped, {overlapping} overlapping labels)",
        out.display(),
        report.html.len() / 1024,
        report.inputs.read.len(),
        report.inputs.skipped.len()
    );
    Ok(())
}

/// Builds the page. Errors only for a directory that does not exist.
pub fn build(opts: &Options) -> Result<Report> {
    if opts.dirs.is_empty() {
        return Err(Error::Usage(
            "report: name at least one results directory".into(),
        ));
    }
    for d in &opts.dirs {
        if !d.is_dir() {
            return Err(Error::Usage(format!(
                "report: `{}` is not a directory",
                d.display()
            )));
        }
    }
    let mut inp = Inputs::load(&opts.dirs);
    if inp.ptx.is_empty() && opts.ptxas {
        let ptxas = crate::ptxas::find().ok_or_else(|| {
            Error::Usage("report --ptxas: ptxas not found (set RUSTILE_PTXAS)".into())
        })?;
        for flavour in crate::ptx::Flavour::ALL {
            for arch in crate::ptxas::archs(flavour) {
                inp.ptx
                    .extend(crate::ptxas::assemble(&ptxas, flavour.text(), arch)?);
            }
        }
        inp.read.push((
            "ptxas".into(),
            format!("{} kernel × arch builds", inp.ptx.len()),
        ));
    }
    let mut sections = vec![
        sections::memory(&inp),
        sections::gemm(&inp),
        sections::hgemm(&inp),
        sections::attention(&inp),
        sections::conv(&inp),
        sections::orchestration(&inp),
    ];
    if opts.simulate {
        sections.push(simulator());
    }
    sections.push(bench::section(&inp.bench));
    sections.push(occupancy_section(&inp));
    sections.push(inputs_section(&inp));
    let dirs: Vec<String> = opts.dirs.iter().map(|d| d.display().to_string()).collect();
    let mut html = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n<title>rustile report</title>\n<style>{CSS}</style>\n</head>\n<body>\n<h1>rustile report</h1>\n<p>From {}. Self-contained: inline SVG, no scripts, no network.</p>\n<nav>",
        dirs.iter().map(|d| format!("<code>{}</code>", xml(d))).collect::<Vec<_>>().join(", ")
    );
    for s in &sections {
        html += &format!("<a href=\"#{}\">{}</a>", s.id, xml(&s.title));
    }
    html += "</nav>\n";
    for s in &sections {
        html += &format!(
            "<section id=\"{}\">\n<h2>{}</h2>\n{}</section>\n",
            s.id,
            xml(&s.title),
            s.html
        );
    }
    html += "</body>\n</html>\n";
    Ok(Report {
        html,
        sections,
        inputs: inp,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn md_tables_become_html() {
        let h = md_table("| a | b |\n| --- | ---: |\n| 1 | <2> |\n\nnote");
        assert_eq!(
            h,
            "<table>\n<tr><th>a</th><th>b</th></tr>\n<tr><td>1</td><td>&lt;2&gt;</td></tr>\n</table>\n<p>note</p>\n"
        );
    }

    #[test]
    fn empty_directory_says_what_is_missing() {
        let dir = std::env::temp_dir().join(format!("rustile-report-empty-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let r = build(&Options {
            dirs: vec![dir.clone()],
            simulate: false,
            ptxas: false,
        })
        .unwrap();
        assert!(r.html.contains("No SGEMM results"));
        assert!(r.html.contains("No ptxas resource report"));
        assert!(r.charts().all(|c| c.2 == 0));
        let _ = std::fs::remove_dir_all(&dir);
        assert!(build(&Options {
            dirs: vec![dir],
            simulate: false,
            ptxas: false
        })
        .is_err());
    }
}
