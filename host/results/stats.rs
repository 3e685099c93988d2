//! Timing statistics of one case: percentiles, a noise figure, and the clocks NVML saw while the
//! repetitions ran. Definitions in `notes/results.md`.

/// Rows whose [`Stats::noise_pct`] exceeds this are flagged `noisy` (percent).
pub const NOISY_PCT: f64 = 5.0;

/// A sampled minimum SM clock below this fraction of the device's maximum flags `low clock`.
pub const LOW_CLOCK_FRACTION: f64 = 0.75;

/// Event-time statistics of one case, milliseconds.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Stats {
    /// Median (the 50th percentile).
    pub median_ms: f64,
    /// Fastest repetition.
    pub min_ms: f64,
    /// Slowest repetition.
    pub max_ms: f64,
    /// Repetitions.
    pub reps: usize,
    /// Mean.
    #[serde(default)]
    pub mean_ms: f64,
    /// 20th percentile (linear interpolation at position 0.2·(n−1) of the sorted samples).
    #[serde(default)]
    pub p20_ms: f64,
    /// 80th percentile (as `p20_ms`, at 0.8·(n−1)).
    #[serde(default)]
    pub p80_ms: f64,
    /// 100 · (p80 − p20) / median; 0 for fewer than two samples or a zero median.
    #[serde(default)]
    pub noise_pct: f64,
    /// What NVML sampled while the timed repetitions ran; `None` where nothing was sampled.
    #[serde(default)]
    pub clocks: Option<Clocks>,
}

/// The `q`-quantile (0 ≤ q ≤ 1) of sorted, non-empty `v`: linear interpolation between the
/// order statistics around position q·(n−1) (numpy's default method).
pub fn quantile(v: &[f64], q: f64) -> f64 {
    debug_assert!(!v.is_empty());
    let pos = q.clamp(0.0, 1.0) * (v.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    v[lo] + (v[hi] - v[lo]) * (pos - lo as f64)
}

impl Stats {
    /// Summarises samples (ms). Empty input gives zeros. NaN samples sort last (they never
    /// make a case look faster).
    pub fn from_samples(mut samples: Vec<f64>) -> Self {
        samples.sort_by(f64::total_cmp);
        let n = samples.len();
        if n == 0 {
            return Self {
                median_ms: 0.0,
                min_ms: 0.0,
                max_ms: 0.0,
                reps: 0,
                mean_ms: 0.0,
                p20_ms: 0.0,
                p80_ms: 0.0,
                noise_pct: 0.0,
                clocks: None,
            };
        }
        let median = quantile(&samples, 0.5);
        let (p20, p80) = (quantile(&samples, 0.2), quantile(&samples, 0.8));
        let noise_pct = if n > 1 && median > 0.0 {
            100.0 * (p80 - p20) / median
        } else {
            0.0
        };
        Self {
            median_ms: median,
            min_ms: samples[0],
            max_ms: samples[n - 1],
            reps: n,
            mean_ms: samples.iter().sum::<f64>() / n as f64,
            p20_ms: p20,
            p80_ms: p80,
            noise_pct,
            clocks: None,
        }
    }

    /// These statistics with `clocks` attached.
    pub fn with_clocks(mut self, clocks: Option<Clocks>) -> Self {
        self.clocks = clocks;
        self
    }

    /// The warnings this case earns: `noisy` over `noisy_pct`, `low clock` from [`Clocks`].
    pub fn warnings(&self, noisy_pct: f64) -> Vec<String> {
        let mut w = Vec::new();
        if self.noise_pct > noisy_pct {
            w.push(format!(
                "noisy: {:.1}% > {noisy_pct:.1}% (p20 {:.4} ms, p80 {:.4} ms, {} reps)",
                self.noise_pct, self.p20_ms, self.p80_ms, self.reps
            ));
        }
        if let Some(c) = &self.clocks {
            if c.low_clock {
                w.push(format!(
                    "low clock: min {} MHz < {:.0}% of {} MHz ({})",
                    c.sm_mhz_min,
                    100.0 * LOW_CLOCK_FRACTION,
                    c.sm_mhz_limit,
                    match throttle_names(c.throttle_reasons) {
                        n if n.is_empty() => "no reason reported".to_string(),
                        n => n.join(", "),
                    }
                ));
            }
        }
        w
    }
}

/// NVML's clocks-event ("throttle") reason bits and their names.
pub const THROTTLE_REASONS: [(u64, &str); 9] = [
    (0x1, "gpu_idle"),
    (0x2, "applications_clocks"),
    (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"),
    (0x10, "sync_boost"),
    (0x20, "sw_thermal"),
    (0x40, "hw_thermal"),
    (0x80, "hw_power_brake"),
    (0x100, "display_clocks"),
];

/// The names of the set bits of an NVML reason mask (unknown bits as `0x…`).
pub fn throttle_names(mask: u64) -> Vec<&'static str> {
    let mut names: Vec<&'static str> = THROTTLE_REASONS
        .iter()
        .filter(|(bit, _)| mask & bit != 0)
        .map(|&(_, n)| n)
        .collect();
    let known: u64 = THROTTLE_REASONS.iter().map(|(b, _)| b).sum();
    if mask & !known != 0 {
        names.push("other");
    }
    names
}

/// One NVML reading.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClockSample {
    /// SM clock, MHz.
    pub sm_mhz: u32,
    /// Memory clock, MHz.
    pub mem_mhz: u32,
    /// Board power, watts.
    pub power_w: f64,
    /// GPU temperature, °C.
    pub temp_c: u32,
    /// Clocks-event reason mask.
    pub reasons: u64,
}

/// NVML readings over one case, summarised. Serialised with `throttle`, the names of the
/// bits of `throttle_reasons`, after the fields ([`throttle_names`]).
#[derive(Clone, Copy, Debug, PartialEq, serde::Deserialize)]
pub struct Clocks {
    /// Readings taken.
    pub samples: usize,
    /// Lowest SM clock seen, MHz.
    pub sm_mhz_min: u32,
    /// Highest SM clock seen, MHz.
    pub sm_mhz_max: u32,
    /// The device's maximum SM clock (NVML), MHz.
    pub sm_mhz_limit: u32,
    /// Lowest memory clock seen, MHz.
    pub mem_mhz_min: u32,
    /// Highest board power seen, W.
    pub power_w_max: f64,
    /// Highest temperature seen, °C.
    pub temp_c_max: u32,
    /// Reason bits OR-ed over the readings.
    pub throttle_reasons: u64,
    /// `sm_mhz_min` < [`LOW_CLOCK_FRACTION`] · `sm_mhz_limit`.
    pub low_clock: bool,
}

impl Clocks {
    /// Summarises readings against the device's maximum SM clock; `None` for no readings.
    /// The SM clock range leaves out readings NVML marks `gpu_idle` (the clock drops between
    /// kernels; that is not the kernel's clock), unless every reading is one.
    pub fn summarise(samples: &[ClockSample], sm_mhz_limit: u32) -> Option<Self> {
        let first = samples.first()?;
        let busy: Vec<&ClockSample> = samples.iter().filter(|s| s.reasons & 0x1 == 0).collect();
        let clocked: Vec<&ClockSample> = if busy.is_empty() {
            samples.iter().collect()
        } else {
            busy
        };
        let mut c = Clocks {
            samples: samples.len(),
            sm_mhz_min: first.sm_mhz,
            sm_mhz_max: first.sm_mhz,
            sm_mhz_limit,
            mem_mhz_min: first.mem_mhz,
            power_w_max: first.power_w,
            temp_c_max: first.temp_c,
            throttle_reasons: 0,
            low_clock: false,
        };
        c.sm_mhz_min = clocked.iter().map(|s| s.sm_mhz).min().unwrap_or(0);
        c.sm_mhz_max = clocked.iter().map(|s| s.sm_mhz).max().unwrap_or(0);
        for s in samples {
            c.mem_mhz_min = c.mem_mhz_min.min(s.mem_mhz);
            c.power_w_max = c.power_w_max.max(s.power_w);
            c.temp_c_max = c.temp_c_max.max(s.temp_c);
            c.throttle_reasons |= s.reasons;
        }
        c.low_clock = (c.sm_mhz_min as f64) < LOW_CLOCK_FRACTION * sm_mhz_limit as f64;
        Some(c)
    }
}

impl serde::Serialize for Clocks {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("Clocks", 10)?;
        st.serialize_field("samples", &self.samples)?;
        st.serialize_field("sm_mhz_min", &self.sm_mhz_min)?;
        st.serialize_field("sm_mhz_max", &self.sm_mhz_max)?;
        st.serialize_field("sm_mhz_limit", &self.sm_mhz_limit)?;
        st.serialize_field("mem_mhz_min", &self.mem_mhz_min)?;
        st.serialize_field("power_w_max", &self.power_w_max)?;
        st.serialize_field("temp_c_max", &self.temp_c_max)?;
        st.serialize_field("throttle_reasons", &self.throttle_reasons)?;
        st.serialize_field("throttle", &throttle_names(self.throttle_reasons))?;
        st.serialize_field("low_clock", &self.low_clock)?;
        st.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_interpolate_like_numpy() {
        // numpy.percentile([1..=10], [20, 50, 80]) = 2.8, 5.5, 8.2
        let s = Stats::from_samples((1..=10).rev().map(f64::from).collect());
        assert!((s.p20_ms - 2.8).abs() < 1e-12, "{s:?}");
        assert!((s.median_ms - 5.5).abs() < 1e-12);
        assert!((s.p80_ms - 8.2).abs() < 1e-12);
        assert_eq!((s.min_ms, s.max_ms, s.reps), (1.0, 10.0, 10));
        assert!((s.mean_ms - 5.5).abs() < 1e-12);
        assert!((s.noise_pct - 100.0 * 5.4 / 5.5).abs() < 1e-9);
        let one = Stats::from_samples(vec![2.0]);
        assert_eq!((one.p20_ms, one.p80_ms, one.noise_pct), (2.0, 2.0, 0.0));
        assert_eq!(Stats::from_samples(vec![]).reps, 0);
    }

    #[test]
    fn quiet_and_noisy_cases_are_told_apart() {
        let quiet = Stats::from_samples(vec![1.0, 1.001, 0.999, 1.0, 1.002]);
        assert!(quiet.noise_pct < 1.0 && quiet.warnings(NOISY_PCT).is_empty());
        let noisy = Stats::from_samples(vec![1.0, 1.3, 0.8, 1.1, 1.5]);
        let w = noisy.warnings(NOISY_PCT);
        assert_eq!(w.len(), 1);
        assert!(w[0].starts_with("noisy: "), "{w:?}");
    }

    #[test]
    fn clocks_summarise_and_flag_a_low_clock() {
        let s = |sm, reasons| ClockSample {
            sm_mhz: sm,
            mem_mhz: 3201,
            power_w: 650.0 + sm as f64 / 100.0,
            temp_c: 60,
            reasons,
        };
        let c = Clocks::summarise(&[s(1980, 0), s(1290, 0x4), s(1500, 0x20)], 1980).unwrap();
        assert_eq!((c.sm_mhz_min, c.sm_mhz_max, c.samples), (1290, 1980, 3));
        assert_eq!(c.throttle_reasons, 0x24);
        assert_eq!(
            throttle_names(c.throttle_reasons),
            ["sw_power_cap", "sw_thermal"]
        );
        let json = serde_json::to_value(c).unwrap();
        assert_eq!(
            json["throttle"],
            serde_json::json!(["sw_power_cap", "sw_thermal"])
        );
        assert_eq!(serde_json::from_value::<Clocks>(json).unwrap(), c);
        assert!(c.low_clock, "1290 < 0.75 * 1980 = 1485");
        let st = Stats::from_samples(vec![1.0, 1.0]).with_clocks(Some(c));
        let w = st.warnings(NOISY_PCT);
        assert!(w.len() == 1 && w[0].contains("low clock") && w[0].contains("sw_power_cap"));
        let fine = Clocks::summarise(&[s(1600, 0x4)], 1980).unwrap();
        assert!(!fine.low_clock, "1600 ≥ 1485");
        assert!(Clocks::summarise(&[], 1980).is_none());
        // An idle reading (between kernels) does not count as the kernel's clock.
        let idle = Clocks::summarise(&[s(1980, 0), s(345, 0x1)], 1980).unwrap();
        assert_eq!(
            (idle.sm_mhz_min, idle.low_clock, idle.throttle_reasons),
            (1980, false, 0x1)
        );
        let all_idle = Clocks::summarise(&[s(345, 0x1)], 1980).unwrap();
        assert!(all_idle.low_clock && all_idle.sm_mhz_min == 345);
        assert_eq!(throttle_names(0x1000), vec!["other"]);
    }
}
