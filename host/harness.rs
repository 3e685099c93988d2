//! Timing: CUDA events around each repetition, warm-up first, [`Stats`] (percentiles, noise, the
//! NVML clocks sampled meanwhile: [`crate::results`]), and the L2 kept cold either by rotating
//! input sets past 3× its size or by flushing it.

use crate::error::{DriverContext, Error, Result};
use crate::gpu::Gpu;
use cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT;
use cudarc::driver::{CudaEvent, CudaSlice};

/// How the L2 cache is kept from serving repeated inputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum L2Mode {
    /// Cycle through enough input/output sets that their bytes exceed 3× the L2.
    Rotate,
    /// Overwrite a buffer of 2× the L2 before every repetition (outside the timed region).
    Flush,
}

impl L2Mode {
    /// Both modes.
    pub const ALL: [L2Mode; 2] = [L2Mode::Rotate, L2Mode::Flush];

    /// Name in reports.
    pub fn name(self) -> &'static str {
        match self {
            L2Mode::Rotate => "rotate",
            L2Mode::Flush => "flush",
        }
    }
}

/// Timing parameters.
#[derive(Clone, Copy, Debug)]
pub struct TimingConfig {
    /// Untimed launches first.
    pub warmup: usize,
    /// Timed repetitions.
    pub reps: usize,
    /// L2 policy.
    pub mode: L2Mode,
}

impl Default for TimingConfig {
    fn default() -> Self {
        Self {
            warmup: 5,
            reps: 50,
            mode: L2Mode::Rotate,
        }
    }
}

/// The most timed (or warm-up) repetitions a timing loop takes: a million launches of the
/// shortest kernel is seconds, of a large one hours; more is a typo (and its event list would
/// not fit in memory).
pub const MAX_REPS: usize = 1_000_000;

impl TimingConfig {
    /// At least one timed repetition (there would be nothing to take a median of) and at most
    /// [`MAX_REPS`] of each kind ([`Error::Usage`] otherwise). Every timing loop checks it
    /// before it allocates or launches.
    pub fn check(&self) -> Result<()> {
        if self.reps == 0 {
            return Err(Error::Usage(
                "timing: the repetitions must be ≥ 1 (got 0)".into(),
            ));
        }
        if self.reps > MAX_REPS || self.warmup > MAX_REPS {
            return Err(Error::Usage(format!(
                "timing: at most {MAX_REPS} repetitions and warm-up launches (got {} and {})",
                self.reps, self.warmup
            )));
        }
        Ok(())
    }
}

pub use crate::results::Stats;

/// How many input/output sets of `set_bytes` rotate past 3× the L2.
pub fn rotation_sets(l2_bytes: usize, set_bytes: u64) -> usize {
    let want = 3 * l2_bytes as u64;
    want.div_ceil(set_bytes.max(1)).max(1) as usize
}

/// Times `launch(i)` (`i` = repetition index; pick input set `i % sets`): warm-up launches,
/// then one event pair per repetition, flushing the L2 before each if `mode` is
/// [`L2Mode::Flush`].
pub fn time(
    gpu: &Gpu,
    cfg: &TimingConfig,
    mut launch: impl FnMut(usize) -> Result<()>,
) -> Result<Stats> {
    let [s] = time_each(gpu, cfg, [&mut launch])?;
    Ok(s)
}

/// The timing loop of [`time`] and [`time_pair`] over `N` launch sequences: the warm-up runs
/// each in turn; each repetition times one launch of each, forwards on even repetitions and
/// backwards on odd ones, each behind its own L2 flush (with [`L2Mode::Flush`]) and between its
/// own pair of events.
fn time_each<const N: usize>(
    gpu: &Gpu,
    cfg: &TimingConfig,
    mut launches: [&mut dyn FnMut(usize) -> Result<()>; N],
) -> Result<[Stats; N]> {
    let stream = gpu.stream();
    cfg.check()?;
    let mut flush: Option<CudaSlice<u8>> = match cfg.mode {
        L2Mode::Flush => Some(gpu.alloc::<u8>(2 * gpu.info().l2_bytes, "L2 flush buffer")?),
        L2Mode::Rotate => None,
    };
    for i in 0..cfg.warmup {
        for launch in launches.iter_mut() {
            launch(i)?;
        }
    }
    let ctx = gpu.context();
    let event = || {
        ctx.new_event(Some(CU_EVENT_DEFAULT))
            .during(|| "creating an event".into())
    };
    let mut pairs: [Vec<(CudaEvent, CudaEvent)>; N] =
        std::array::from_fn(|_| Vec::with_capacity(cfg.reps));
    // NVML reads the clocks, power and throttle reasons in the background while the timed
    // repetitions run (nothing where NVML is unavailable).
    let nvml = crate::results::meta::nvml_device(gpu).ok();
    let (timed, clocks) = crate::results::nvml::sample_during(nvml, || -> Result<()> {
        for i in 0..cfg.reps {
            for j in 0..N {
                let which = if i % 2 == 0 { j } else { N - 1 - j };
                if let Some(buf) = flush.as_mut() {
                    stream
                        .memset_zeros(buf)
                        .during(|| "flushing the L2".into())?;
                }
                let (start, end) = (event()?, event()?);
                start
                    .record(stream)
                    .during(|| "recording an event".into())?;
                launches[which](cfg.warmup + i)?;
                end.record(stream).during(|| "recording an event".into())?;
                pairs[which].push((start, end));
            }
        }
        gpu.synchronize("timed repetitions")
    });
    timed?;
    let mut stats = Vec::with_capacity(N);
    for v in &pairs {
        let samples = v
            .iter()
            .map(|(s, e)| s.elapsed_ms(e).map(f64::from))
            .collect::<std::result::Result<Vec<_>, _>>()
            .during(|| "reading event times".into())?;
        stats.push(Stats::from_samples(samples).with_clocks(clocks));
    }
    // One `Stats` per launch sequence: `stats` has exactly N entries.
    Ok(std::array::from_fn(|k| stats[k]))
}

/// How a kernel and its baseline share the timed interval.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pairing {
    /// Rep by rep, alternating ([`time_pair`]): both run at one clock, which the power
    /// controller sets from the mix of the two (so above what the more power-hungry one
    /// sustains alone, below what the other does): a per-clock comparison.
    Interleaved,
    /// Each in its own steady state: the kernel runs alone for [`SETTLE_MS`] (untimed, so the
    /// power controller settles on its clock), then its reps are timed; then the same for the
    /// baseline. What a user's loop of either kernel gets: under the power limit a kernel
    /// that draws less power than the baseline runs at a higher clock. The default.
    Sequential,
}

impl Pairing {
    /// `interleaved` or `sequential`.
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "interleaved" => Ok(Self::Interleaved),
            "sequential" => Ok(Self::Sequential),
            o => Err(crate::error::Error::Usage(format!(
                "unknown timing `{o}` (interleaved, sequential)"
            ))),
        }
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Interleaved => "interleaved",
            Self::Sequential => "sequential",
        }
    }

    /// Times `a` and `b` so.
    pub fn time(
        self,
        gpu: &Gpu,
        cfg: &TimingConfig,
        mut a: impl FnMut(usize) -> Result<()>,
        mut b: impl FnMut(usize) -> Result<()>,
    ) -> Result<(Stats, Stats)> {
        cfg.check()?;
        match self {
            Self::Interleaved => time_pair(gpu, cfg, a, b),
            Self::Sequential => {
                settle(gpu, &mut a)?;
                let ta = time(gpu, cfg, &mut a)?;
                settle(gpu, &mut b)?;
                Ok((ta, time(gpu, cfg, &mut b)?))
            }
        }
    }
}

/// How long [`Pairing::Sequential`] runs each side untimed before timing it. The H200's power
/// controller moves the clock over a few hundred milliseconds (seen with `nvidia-smi -lms`).
pub const SETTLE_MS: u128 = 1000;

/// Launches `launch` (untimed, batches of 8) until [`SETTLE_MS`] of wall time have passed.
fn settle(gpu: &Gpu, launch: &mut impl FnMut(usize) -> Result<()>) -> Result<()> {
    let start = std::time::Instant::now();
    let mut i = 0;
    while start.elapsed().as_millis() < SETTLE_MS {
        for _ in 0..8 {
            launch(i)?;
            i += 1;
        }
        gpu.synchronize("settling launches")?;
    }
    Ok(())
}

/// Times `N` launch sequences against each other, interleaved as [`time_pair`] does two (the
/// convolution bench: rustile, cuDNN's fused call and cuDNN's convolution alone at one clock).
pub fn time_all<const N: usize>(
    gpu: &Gpu,
    cfg: &TimingConfig,
    launches: [&mut dyn FnMut(usize) -> Result<()>; N],
) -> Result<[Stats; N]> {
    time_each(gpu, cfg, launches)
}

/// Times two launch sequences against each other, interleaved: each repetition times one
/// launch of `a` and one of `b` back to back, in alternating order, so both see the same
/// clock. Under a sustained tensor-core load the H200 runs at its power limit and its clock
/// moves by ±15 % within a second (`nvidia-smi -lms`); timing `a` wholly before `b` without
/// settling each first folds that drift into their ratio (rows of one run moved
/// 0.46 ↔ 0.56 × cuBLAS with no code change). Warm-up launches alternate too.
pub fn time_pair(
    gpu: &Gpu,
    cfg: &TimingConfig,
    mut a: impl FnMut(usize) -> Result<()>,
    mut b: impl FnMut(usize) -> Result<()>,
) -> Result<(Stats, Stats)> {
    let [sa, sb] = time_each(gpu, cfg, [&mut a, &mut b])?;
    Ok((sa, sb))
}
