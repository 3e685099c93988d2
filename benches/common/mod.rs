//! What every criterion bench shares: the CUDA-event measurement ([`GpuTime`]) and its
//! throughput formatter (FLOP/s, GB/s), criterion's settings, the timing loop, the no-GPU exit
//! and the machine-readable summary (`$RUSTILE_BENCH_OUT/criterion-<bench>.{json,csv}`).
//!
//! Timing: criterion's `iter_custom` hands a routine `iters`; [`event_time`] records a CUDA
//! event, enqueues `iters` launches (each bench rotates input sets past 3× the L2), records a
//! second event and returns the time between the two. Criterion's warm-up and its samples all
//! go through it, so what criterion analyses is device time, not the host's wall clock.
//!
//! Throughput: `Throughput::Elements(n)` means n FLOPs here (the formatter prints FLOP/s) and
//! `Throughput::BytesDecimal(n)` n bytes moved (GB/s, decimal, as the CLI's tables).

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use criterion::measurement::{Measurement, ValueFormatter};
use criterion::{BenchmarkGroup, BenchmarkId, Criterion, SamplingMode, Throughput};
use cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT;
use rustile::{Gpu, Result};

/// Samples per benchmark (criterion's minimum), unless `--sample-size` says otherwise.
pub const SAMPLE_SIZE: usize = 10;
/// Criterion's warm-up per benchmark.
pub const WARM_UP: Duration = Duration::from_millis(250);
/// Criterion's measurement time per benchmark (flat sampling: `SAMPLE_SIZE` samples of equal
/// iteration counts that together take about this long).
pub const MEASUREMENT: Duration = Duration::from_millis(600);
/// Bootstrap resamples (criterion's default is 100 000, ~0.2 s of CPU per benchmark).
pub const RESAMPLES: usize = 10_000;
/// Per-benchmark overhead beyond warm-up and measurement (set-up, check, analysis), seconds:
/// the estimate [`Bench::new`] prints.
pub const OVERHEAD_S: f64 = 0.35;

/// CUDA-event time as criterion's measurement: the value is a [`Duration`] that the routine
/// returns from `iter_custom` (criterion's own `start`/`end` are wall time, used only if a
/// routine calls `iter`, which none here does).
pub struct GpuTime;

impl Measurement for GpuTime {
    type Intermediate = Instant;
    type Value = Duration;
    fn start(&self) -> Instant {
        Instant::now()
    }
    fn end(&self, i: Instant) -> Duration {
        i.elapsed()
    }
    fn add(&self, a: &Duration, b: &Duration) -> Duration {
        *a + *b
    }
    fn zero(&self) -> Duration {
        Duration::ZERO
    }
    fn to_f64(&self, v: &Duration) -> f64 {
        v.as_nanos() as f64
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        &Units
    }
}

/// Times in s/ms/µs/ns; throughput in FLOP/s (elements are FLOPs) or decimal bytes per second.
pub struct Units;

/// `(divisor, unit)` for a rate of `per_s` in `base` units per second.
fn rate_unit(per_s: f64, units: [&'static str; 5]) -> (f64, &'static str) {
    let mut scale = 1.0;
    for (i, u) in units.iter().enumerate() {
        if per_s < scale * 1e3 || i == units.len() - 1 {
            return (scale, u);
        }
        scale *= 1e3;
    }
    (1.0, units[0])
}

impl ValueFormatter for Units {
    fn scale_values(&self, ns: f64, values: &mut [f64]) -> &'static str {
        let (factor, unit) = if ns < 1e3 {
            (1.0, "ns")
        } else if ns < 1e6 {
            (1e-3, "µs")
        } else if ns < 1e9 {
            (1e-6, "ms")
        } else {
            (1e-9, "s")
        };
        for v in values {
            *v *= factor;
        }
        unit
    }

    fn scale_throughputs(&self, typical: f64, t: &Throughput, values: &mut [f64]) -> &'static str {
        let (amount, units) = match *t {
            Throughput::Elements(n) => (
                n as f64,
                ["FLOP/s", "kFLOP/s", "MFLOP/s", "GFLOP/s", "TFLOP/s"],
            ),
            Throughput::Bytes(n) | Throughput::BytesDecimal(n) => {
                (n as f64, ["B/s", "kB/s", "MB/s", "GB/s", "TB/s"])
            }
            Throughput::Bits(n) => (n as f64, ["b/s", "kb/s", "Mb/s", "Gb/s", "Tb/s"]),
        };
        let (div, unit) = rate_unit(amount * 1e9 / typical.max(1e-9), units);
        for v in values {
            *v = amount * 1e9 / v.max(1e-9) / div;
        }
        unit
    }

    fn scale_for_machines(&self, _values: &mut [f64]) -> &'static str {
        "ns"
    }
}

/// Whether criterion was asked to measure (`--bench`, not `--list`, `--test` or profiling):
/// the summary is written only then.
fn measuring() -> bool {
    let args: Vec<String> = std::env::args().collect();
    let has = |f: &str| args.iter().any(|a| a == f);
    has("--bench") && !has("--list") && !has("--test") && !has("--profile-time")
}

/// `--sample-size N` (or `--sample-size=N`) from the command line, else [`SAMPLE_SIZE`].
fn sample_size() -> usize {
    let args: Vec<String> = std::env::args().collect();
    let value = args
        .iter()
        .enumerate()
        .find_map(|(i, a)| match a.strip_prefix("--sample-size") {
            Some("") => args.get(i + 1).cloned(),
            Some(rest) => rest.strip_prefix('=').map(str::to_string),
            None => None,
        });
    value.and_then(|v| v.parse().ok()).unwrap_or(SAMPLE_SIZE)
}

/// One benchmark's identity and throughput, as the summary records it.
#[derive(Clone, Debug)]
pub struct Key {
    /// Criterion's group (`sgemm`, `hgemm_f16`, `copy`, …).
    pub group: String,
    /// The problem (`4096x4096x4096`, `f32/16777216`, …).
    pub shape: String,
    /// What runs: a rustile kernel, `dispatch`, or a baseline (`cublas`, `cudnn_fused`, …).
    pub imp: String,
    /// FLOPs (`flop`) or bytes moved (`bytes`) per launch.
    pub work: Work,
    /// Whether `imp` is the vendor baseline the others are compared with.
    pub baseline: bool,
}

/// What one launch does, for throughput.
#[derive(Clone, Copy, Debug)]
pub enum Work {
    /// Floating-point operations.
    Flops(f64),
    /// Bytes read + written.
    Bytes(u64),
}

impl Key {
    /// Criterion's id: `group/shape/imp`.
    pub fn id(&self) -> String {
        format!("{}/{}/{}", self.group, self.shape, self.imp)
    }
}

#[derive(Default)]
struct Rec {
    key: Option<Key>,
    /// Per-launch ns of each `iter_custom` call, in order (warm-up calls first).
    per_iter_ns: Vec<f64>,
    /// What ran, when the bench knows more than `imp` (the dispatcher's choice).
    note: String,
}

static RECORDS: Mutex<BTreeMap<String, Rec>> = Mutex::new(BTreeMap::new());

/// Adds a note to `key`'s summary row (e.g. the kernel the dispatcher chose).
pub fn note(key: &Key, text: &str) {
    let mut r = RECORDS.lock().unwrap_or_else(|e| e.into_inner());
    r.entry(key.id()).or_default().note = text.to_string();
}

/// The bench binary's state: criterion, configured from the command line, and the device.
pub struct Bench {
    /// Criterion.
    pub c: Criterion<GpuTime>,
    device: String,
    name: &'static str,
    started: Instant,
}

impl Bench {
    /// Opens device 0 and configures criterion. Without a GPU: with `--list`, no device (the
    /// bench registers names only; no routine runs in list mode); otherwise prints one line
    /// `no GPU: …` and exits 0, so `cargo bench` passes on machines without one.
    pub fn new(name: &'static str) -> (Self, Option<Gpu>) {
        let gpu = match Gpu::new(0) {
            Ok(g) => Some(g),
            Err(e) => {
                if std::env::args().any(|a| a == "--list") {
                    None
                } else {
                    let why = e.to_string();
                    let why = why.strip_prefix("no GPU: ").unwrap_or(&why);
                    println!("no GPU: {why}; rustile {name} bench: nothing to time");
                    std::process::exit(0);
                }
            }
        };
        let c = Criterion::default()
            .with_measurement(GpuTime)
            .sample_size(SAMPLE_SIZE)
            .warm_up_time(WARM_UP)
            .measurement_time(MEASUREMENT)
            .nresamples(RESAMPLES)
            .configure_from_args();
        let device = gpu
            .as_ref()
            .map_or("none".into(), |g| g.info().name.clone());
        let bench = Self {
            c,
            device,
            name,
            started: Instant::now(),
        };
        (bench, gpu)
    }

    /// A group with flat sampling (equal iteration counts per sample: kernels of milliseconds
    /// would otherwise need 55 × their time for criterion's linear ramp).
    pub fn group(&mut self, name: &str) -> BenchmarkGroup<'_, GpuTime> {
        let mut g = self.c.benchmark_group(name);
        g.sampling_mode(SamplingMode::Flat);
        g
    }

    /// Prints the estimate for `n` benchmarks (before filtering).
    pub fn estimate(&self, n: usize) {
        let each = WARM_UP.as_secs_f64() + MEASUREMENT.as_secs_f64() + OVERHEAD_S;
        eprintln!(
            "rustile {} bench: {n} benchmarks × ~{each:.1} s ≈ {:.0} s unfiltered \
             (warm-up {:?}, measurement {:?}, {} samples)",
            self.name,
            n as f64 * each,
            WARM_UP,
            MEASUREMENT,
            sample_size()
        );
    }

    /// Criterion's summary; then, when measuring, the summary table on stdout and its JSON and
    /// CSV under `$RUSTILE_BENCH_OUT` (default `target/rustile-bench`).
    pub fn finish(self) {
        self.c.final_summary();
        if !measuring() {
            return;
        }
        let rows = summary_rows();
        let out =
            std::env::var("RUSTILE_BENCH_OUT").unwrap_or_else(|_| "target/rustile-bench".into());
        let device = &self.device;
        println!(
            "\n## {} (cargo bench, criterion medians of CUDA-event time, {} samples) on {device}\n\n{}",
            self.name,
            sample_size(),
            markdown(&rows)
        );
        match write_summary(std::path::Path::new(&out), self.name, device, &rows) {
            Ok(paths) => println!("summary: {paths}"),
            Err(e) => {
                eprintln!(
                    "rustile {} bench: writing the summary to {out}: {e}",
                    self.name
                );
                std::process::exit(1);
            }
        }
        eprintln!(
            "rustile {} bench: {} benchmarks measured in {:.0} s",
            self.name,
            rows.len(),
            self.started.elapsed().as_secs_f64()
        );
    }
}

/// Registers `key` in `g` with its throughput; `run(iters)` returns the device time of
/// `iters` launches. An error ends the bench (exit 1) with the benchmark's id: a failed check
/// or launch is not a number to report.
pub fn register(
    g: &mut BenchmarkGroup<'_, GpuTime>,
    key: Key,
    mut run: impl FnMut(u64) -> Result<Duration>,
) {
    g.throughput(match key.work {
        Work::Flops(f) => Throughput::Elements(f as u64),
        Work::Bytes(b) => Throughput::BytesDecimal(b),
    });
    let id = key.id();
    g.bench_function(BenchmarkId::new(&key.shape, &key.imp), |b| {
        b.iter_custom(|iters| match run(iters) {
            Ok(d) => {
                let mut r = RECORDS.lock().unwrap_or_else(|e| e.into_inner());
                let rec = r.entry(id.clone()).or_default();
                rec.key.get_or_insert_with(|| key.clone());
                rec.per_iter_ns
                    .push(d.as_nanos() as f64 / iters.max(1) as f64);
                d
            }
            Err(e) => {
                eprintln!("\nbenchmark {id} failed: {e}");
                std::process::exit(1);
            }
        })
    });
}

/// Device time of `iters` calls of `launch(i)` (`i` counts on from `*next`, so successive
/// calls keep rotating through input sets): an event before, an event after, one sync.
pub fn event_time(
    gpu: &Gpu,
    iters: u64,
    next: &mut usize,
    mut launch: impl FnMut(usize) -> Result<()>,
) -> Result<Duration> {
    let ctx = gpu.context();
    let event = || {
        ctx.new_event(Some(CU_EVENT_DEFAULT))
            .map_err(|e| rustile::Error::driver("creating an event", e))
    };
    let (start, end) = (event()?, event()?);
    let stream = gpu.stream();
    start
        .record(stream)
        .map_err(|e| rustile::Error::driver("recording an event", e))?;
    for _ in 0..iters {
        launch(*next)?;
        *next += 1;
    }
    end.record(stream)
        .map_err(|e| rustile::Error::driver("recording an event", e))?;
    end.synchronize()
        .map_err(|e| rustile::Error::driver("waiting for the timed launches", e))?;
    let ms = start
        .elapsed_ms(&end)
        .map_err(|e| rustile::Error::driver("reading event times", e))?;
    Ok(Duration::from_secs_f64(f64::from(ms).max(0.0) * 1e-3))
}

/// One summary row.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Row {
    /// Criterion's id.
    pub id: String,
    /// Group.
    pub group: String,
    /// Problem.
    pub shape: String,
    /// Kernel or baseline.
    pub imp: String,
    /// What ran, when known (the dispatcher's kernel).
    pub note: String,
    /// Median ns per launch over the measurement samples.
    pub median_ns: f64,
    /// Samples the median is over.
    pub samples: usize,
    /// FLOPs per launch (0 for memory benches).
    pub flops: f64,
    /// Bytes per launch (0 for FLOP benches).
    pub bytes: u64,
    /// TFLOP/s or GB/s at the median.
    pub throughput: f64,
    /// `TFLOP/s` or `GB/s`.
    pub unit: &'static str,
    /// The baseline of this group and shape, if measured.
    pub baseline: String,
    /// Baseline time / this time (> 1: faster than the baseline).
    pub vs_baseline: Option<f64>,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => f64::NAN,
        _ if n % 2 == 1 => v[n / 2],
        _ => 0.5 * (v[n / 2 - 1] + v[n / 2]),
    }
}

/// Rows of every benchmark that ran: the median of its last `--sample-size` calls (criterion's
/// samples; the warm-up calls come before them), throughput, and the ratio to the group's
/// baseline at the same shape.
fn summary_rows() -> Vec<Row> {
    let recs = RECORDS.lock().unwrap_or_else(|e| e.into_inner());
    let keep = sample_size();
    let mut rows: Vec<(Row, bool)> = recs
        .iter()
        .filter_map(|(id, r)| {
            let key = r.key.clone()?;
            let tail = r.per_iter_ns[r.per_iter_ns.len().saturating_sub(keep)..].to_vec();
            let samples = tail.len();
            let med = median(tail);
            let (flops, bytes, throughput, unit) = match key.work {
                Work::Flops(f) => (f, 0, f / med * 1e9 / 1e12, "TFLOP/s"),
                Work::Bytes(b) => (0.0, b, b as f64 / med, "GB/s"),
            };
            Some((
                Row {
                    id: id.clone(),
                    group: key.group.clone(),
                    shape: key.shape.clone(),
                    imp: key.imp.clone(),
                    note: r.note.clone(),
                    median_ns: med,
                    samples,
                    flops,
                    bytes,
                    throughput,
                    unit,
                    baseline: String::new(),
                    vs_baseline: None,
                },
                key.baseline,
            ))
        })
        .collect();
    let bases: Vec<(String, String, String, f64)> = rows
        .iter()
        .filter(|(_, b)| *b)
        .map(|(r, _)| (r.group.clone(), r.shape.clone(), r.imp.clone(), r.median_ns))
        .collect();
    for (r, _) in &mut rows {
        // The first baseline registered for the group and shape (BTreeMap order: by name).
        if let Some((_, _, name, t)) = bases
            .iter()
            .find(|(g, s, ..)| *g == r.group && *s == r.shape)
        {
            r.baseline = name.clone();
            r.vs_baseline = Some(t / r.median_ns);
        }
    }
    rows.into_iter().map(|(r, _)| r).collect()
}

/// The rows as a markdown table.
pub fn markdown(rows: &[Row]) -> String {
    let mut s = String::from(
        "| group | shape | kernel | median µs | throughput | × baseline |\n| --- | --- | --- | ---: | ---: | ---: |\n",
    );
    for r in rows {
        let imp = if r.note.is_empty() {
            r.imp.clone()
        } else {
            format!("{} ({})", r.imp, r.note)
        };
        let ratio = match r.vs_baseline {
            Some(x) => format!("{x:.3} × {}", r.baseline),
            None => "—".into(),
        };
        s += &format!(
            "| {} | {} | {imp} | {:.2} | {:.2} {} | {ratio} |\n",
            r.group,
            r.shape,
            r.median_ns * 1e-3,
            r.throughput,
            r.unit
        );
    }
    s
}

/// Writes `criterion-<bench>.json` (device, commit, rows) and `.csv` under `dir`.
fn write_summary(
    dir: &std::path::Path,
    bench: &str,
    device: &str,
    rows: &[Row],
) -> std::io::Result<String> {
    std::fs::create_dir_all(dir)?;
    let json = dir.join(format!("criterion-{bench}.json"));
    let csv = dir.join(format!("criterion-{bench}.csv"));
    let doc = serde_json::json!({
        "bench": bench,
        "device": device,
        "commit": std::env::var("RUSTILE_COMMIT").unwrap_or_default(),
        "timing": "criterion iter_custom, CUDA events around the iterations of each sample, \
                   input sets rotated past 3x the L2; median of the samples",
        "rows": rows,
    });
    std::fs::write(
        &json,
        serde_json::to_string_pretty(&doc).unwrap_or_default(),
    )?;
    let mut text = String::from(
        "id,group,shape,imp,note,median_ns,samples,flops,bytes,throughput,unit,baseline,vs_baseline\n",
    );
    for r in rows {
        text += &format!(
            "{},{},{},{},{},{:.1},{},{},{},{:.4},{},{},{}\n",
            r.id,
            r.group,
            r.shape,
            r.imp,
            r.note.replace(',', ";"),
            r.median_ns,
            r.samples,
            r.flops,
            r.bytes,
            r.throughput,
            r.unit,
            r.baseline,
            r.vs_baseline.map_or(String::new(), |x| format!("{x:.4}"))
        );
    }
    std::fs::write(&csv, text)?;
    Ok(format!("{} and {}", json.display(), csv.display()))
}
