//! The transfer study: H2D and D2H bandwidth against size for pageable, pinned and
//! write-combined pinned host memory, plus pinned H2D and D2H at once (both copy engines).
//!
//! Every copy is `cuMemcpy{HtoD,DtoH}Async` on a non-blocking stream between CUDA events;
//! median of many after warm-up. GB/s = bytes / time (10⁹ bytes per second).

use cudarc::driver::{result, CudaStream};

use super::mem::{DeviceBuffer, HostBuffer, HostKind};
use super::plot::{line_plot, size_label, Series};
use crate::error::{DriverContext, Error, Result};
use crate::gpu::Gpu;
use crate::harness::Stats;

/// Copy direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Direction {
    /// Host to device.
    H2D,
    /// Device to host.
    D2H,
}

impl Direction {
    /// Name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Direction::H2D => "H2D",
            Direction::D2H => "D2H",
        }
    }
}

/// One measurement.
#[derive(Clone, Debug, serde::Serialize)]
pub struct TransferRow {
    /// Host memory kind.
    pub memory: HostKind,
    /// Direction.
    pub direction: Direction,
    /// Bytes per copy.
    pub bytes: usize,
    /// Median, ms.
    pub median_ms: f64,
    /// bytes / median, GB/s.
    pub gbps: f64,
    /// Timed copies.
    pub reps: usize,
}

/// Pinned H2D and D2H running at the same time on two streams.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Bidirectional {
    /// Bytes each way.
    pub bytes: usize,
    /// Median time for both to finish, ms.
    pub median_ms: f64,
    /// Bytes each way / time, GB/s.
    pub gbps_each_way: f64,
}

/// The study's results.
#[derive(Clone, Debug, serde::Serialize)]
pub struct TransferReport {
    /// Every (memory, direction, size).
    pub rows: Vec<TransferRow>,
    /// Both directions at once.
    pub bidirectional: Option<Bidirectional>,
}

/// 4 KiB, 16 KiB, … (×4) up to `max_bytes`.
pub fn sizes(max_bytes: usize) -> Vec<usize> {
    std::iter::successors(Some(4096usize), |&b| b.checked_mul(4))
        .take_while(|&b| b <= max_bytes)
        .collect()
}

/// Timed copies at `bytes`: many for small copies (their time is mostly latency and noisy),
/// a few for large ones.
pub fn reps_for(bytes: usize) -> usize {
    ((1usize << 31) / bytes.max(1)).clamp(5, 100)
}

fn time_copies(
    gpu: &Gpu,
    stream: &CudaStream,
    warmup: usize,
    reps: usize,
    mut copy: impl FnMut() -> Result<()>,
) -> Result<f64> {
    let ctx = gpu.context();
    let mut enqueue = || -> Result<Vec<_>> {
        for _ in 0..warmup {
            copy()?;
        }
        stream.synchronize().during(|| "transfer warm-up".into())?;
        let mut pairs = Vec::with_capacity(reps);
        for _ in 0..reps {
            let (a, b) = crate::orch::event_pair(ctx)?;
            a.record(stream).during(|| "recording an event".into())?;
            copy()?;
            b.record(stream).during(|| "recording an event".into())?;
            pairs.push((a, b));
        }
        Ok(pairs)
    };
    let pairs = enqueue();
    // On every path out, errors included: the copies are finished before the callers' host
    // slices can be freed.
    let synced = stream.synchronize().during(|| "timed transfers".into());
    let pairs = pairs?;
    synced?;
    let samples = pairs
        .iter()
        .map(|(a, b)| a.elapsed_ms(b).map(f64::from))
        .collect::<std::result::Result<Vec<_>, _>>()
        .during(|| "reading event times".into())?;
    Ok(Stats::from_samples(samples).median_ms)
}

/// Runs the study up to `max_bytes` (≥ 4 KiB).
pub fn study(
    gpu: &Gpu,
    max_bytes: usize,
    mut progress: impl FnMut(&str),
) -> Result<TransferReport> {
    let sizes = sizes(max_bytes);
    let Some(&largest) = sizes.last() else {
        return Err(Error::Usage(format!(
            "transfer study: the largest size must be at least 4096 bytes, got {max_bytes}"
        )));
    };
    let ctx = gpu.context();
    let stream = ctx.new_stream().during(|| "creating a stream".into())?;
    let dev = DeviceBuffer::new(ctx, largest, "transfer study device buffer")?;
    let mut rows = Vec::new();
    for kind in HostKind::ALL {
        progress(&format!("transfers from {} memory", kind.name()));
        let mut host = HostBuffer::<u8>::new(ctx, kind, largest)?;
        for (i, b) in host.as_mut_slice().iter_mut().enumerate() {
            *b = (i * 31 + 7) as u8;
        }
        ctx.bind_to_thread()
            .during(|| "binding the context".into())?;
        for &bytes in &sizes {
            let reps = reps_for(bytes);
            let warmup = if bytes >= 1 << 28 { 1 } else { 3 };
            let src = &host.as_slice()[..bytes];
            // SAFETY: `dev` holds `largest` ≥ bytes; the host slice outlives the synchronised
            // copies.
            let h2d = time_copies(gpu, &stream, warmup, reps, || {
                unsafe { result::memcpy_htod_async(dev.ptr(), src, stream.cu_stream()) }
                    .during(|| format!("H2D of {bytes} bytes"))
            })?;
            let dst = &mut host.as_mut_slice()[..bytes];
            // SAFETY: as above.
            let d2h = time_copies(gpu, &stream, warmup, reps, || {
                unsafe { result::memcpy_dtoh_async(&mut *dst, dev.ptr(), stream.cu_stream()) }
                    .during(|| format!("D2H of {bytes} bytes"))
            })?;
            for (direction, ms) in [(Direction::H2D, h2d), (Direction::D2H, d2h)] {
                rows.push(TransferRow {
                    memory: kind,
                    direction,
                    bytes,
                    median_ms: ms,
                    gbps: bytes as f64 / (ms * 1e-3) / 1e9,
                    reps,
                });
            }
        }
    }
    progress("pinned H2D and D2H at once");
    let bidirectional = Some(bidirectional(gpu, (largest / 4).max(4096))?);
    Ok(TransferReport {
        rows,
        bidirectional,
    })
}

fn bidirectional(gpu: &Gpu, bytes: usize) -> Result<Bidirectional> {
    let ctx = gpu.context();
    let up = ctx.new_stream().during(|| "creating a stream".into())?;
    let down = ctx.new_stream().during(|| "creating a stream".into())?;
    let src = HostBuffer::<u8>::new(ctx, HostKind::Pinned, bytes)?;
    let mut dst = HostBuffer::<u8>::new(ctx, HostKind::Pinned, bytes)?;
    let d_up = DeviceBuffer::new(ctx, bytes, "bidirectional H2D target")?;
    let d_down = DeviceBuffer::new(ctx, bytes, "bidirectional D2H source")?;
    ctx.bind_to_thread()
        .during(|| "binding the context".into())?;
    let mut samples = Vec::new();
    let mut run = || -> Result<()> {
        for rep in 0..8 {
            let (a, b) = crate::orch::event_pair(ctx)?;
            a.record(&up).during(|| "recording an event".into())?;
            down.wait(&a).during(|| "ordering streams".into())?;
            // SAFETY: both device buffers hold `bytes`; the host buffers outlive the copies (both
            // streams are synchronised before the next iteration, and after the loop on every
            // path out of it).
            unsafe { result::memcpy_htod_async(d_up.ptr(), src.as_slice(), up.cu_stream()) }
                .during(|| "bidirectional H2D".into())?;
            unsafe {
                result::memcpy_dtoh_async(dst.as_mut_slice(), d_down.ptr(), down.cu_stream())
            }
            .during(|| "bidirectional D2H".into())?;
            up.join(&down).during(|| "joining streams".into())?;
            b.record(&up).during(|| "recording an event".into())?;
            up.synchronize().during(|| "bidirectional copies".into())?;
            if rep >= 2 {
                samples.push(a.elapsed_ms(&b).during(|| "reading event times".into())? as f64);
            }
        }
        Ok(())
    };
    let ran = run();
    // Both streams finished on every path out, errors included, before `src` and `dst` (pinned,
    // dropped at return) are freed.
    let synced = up
        .synchronize()
        .and_then(|()| down.synchronize())
        .during(|| "bidirectional copies".into());
    ran?;
    synced?;
    let median_ms = Stats::from_samples(samples).median_ms;
    Ok(Bidirectional {
        bytes,
        median_ms,
        gbps_each_way: bytes as f64 / (median_ms * 1e-3) / 1e9,
    })
}

impl TransferReport {
    /// Highest GB/s of `memory` in `direction` over all sizes.
    pub fn peak(&self, memory: Option<HostKind>, direction: Direction) -> f64 {
        self.rows
            .iter()
            .filter(|r| r.direction == direction && memory.is_none_or(|m| r.memory == m))
            .map(|r| r.gbps)
            .fold(0.0, f64::max)
    }

    /// Pinned H2D peak / best H2D peak of any method in the run.
    pub fn pinned_h2d_ratio(&self) -> f64 {
        self.peak(Some(HostKind::Pinned), Direction::H2D) / self.peak(None, Direction::H2D)
    }

    /// Markdown: one row per size, one column per memory × direction (GB/s).
    pub fn markdown(&self) -> String {
        let cols: Vec<(HostKind, Direction)> = [Direction::H2D, Direction::D2H]
            .into_iter()
            .flat_map(|d| HostKind::ALL.into_iter().map(move |k| (k, d)))
            .collect();
        let mut s = String::from("| size |");
        for (k, d) in &cols {
            s += &format!(" {} {} GB/s |", k.name(), d.name());
        }
        s += "\n| ---: |";
        s += &" ---: |".repeat(cols.len());
        s.push('\n');
        let mut sizes: Vec<usize> = self.rows.iter().map(|r| r.bytes).collect();
        sizes.sort_unstable();
        sizes.dedup();
        for b in sizes {
            s += &format!("| {} |", size_label(b as f64));
            for (k, d) in &cols {
                match self
                    .rows
                    .iter()
                    .find(|r| r.bytes == b && r.memory == *k && r.direction == *d)
                {
                    Some(r) => s += &format!(" {:.2} |", r.gbps),
                    None => s += " — |",
                }
            }
            s.push('\n');
        }
        s += "| **peak** |";
        for (k, d) in &cols {
            s += &format!(" **{:.2}** |", self.peak(Some(*k), *d));
        }
        s.push('\n');
        if let Some(b) = &self.bidirectional {
            s += &format!(
                "\nPinned H2D and D2H at once ({} each way, two streams): {:.3} ms, {:.2} GB/s each way ({:.2} GB/s total).\n",
                size_label(b.bytes as f64),
                b.median_ms,
                b.gbps_each_way,
                2.0 * b.gbps_each_way
            );
        }
        s
    }

    /// The bandwidth-vs-size plot.
    pub fn svg(&self, title: &str) -> String {
        let mut series = Vec::new();
        for d in [Direction::H2D, Direction::D2H] {
            for k in HostKind::ALL {
                series.push(Series {
                    name: format!("{} {}", k.name(), d.name()),
                    points: self
                        .rows
                        .iter()
                        .filter(|r| r.memory == k && r.direction == d)
                        .map(|r| (r.bytes as f64, r.gbps))
                        .collect(),
                    dashed: d == Direction::D2H,
                });
            }
        }
        line_plot(title, "copy size", "GB/s (10⁹ bytes/s)", &series)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_from_4k_to_1g() {
        let s = sizes(1 << 30);
        assert_eq!(s.first(), Some(&4096));
        assert_eq!(s.last(), Some(&(1 << 30)));
        assert_eq!(s.len(), 10);
        assert!(sizes(4095).is_empty());
        assert_eq!(reps_for(4096), 100);
        assert_eq!(reps_for(1 << 30), 5);
    }

    #[test]
    fn peaks_and_ratio() {
        let row = |memory, direction, gbps| TransferRow {
            memory,
            direction,
            bytes: 4096,
            median_ms: 1.0,
            gbps,
            reps: 1,
        };
        let r = TransferReport {
            rows: vec![
                row(HostKind::Pinned, Direction::H2D, 50.0),
                row(HostKind::WriteCombined, Direction::H2D, 55.0),
                row(HostKind::Pageable, Direction::H2D, 9.0),
                row(HostKind::Pinned, Direction::D2H, 60.0),
            ],
            bidirectional: None,
        };
        assert_eq!(r.peak(None, Direction::H2D), 55.0);
        assert!((r.pinned_h2d_ratio() - 50.0 / 55.0).abs() < 1e-12);
        let md = r.markdown();
        assert!(md.contains("| 4 KiB |") && md.contains("**55.00**"));
        assert!(r.svg("t").contains("pinned write-combined H2D"));
    }
}
