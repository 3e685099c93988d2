//! What a result file says about the run: the device, its clocks, the driver, rustile's
//! version and commit, the seed, the timing settings and the command line.

use std::time::{SystemTime, UNIX_EPOCH};

use super::nvml;
use crate::gpu::Gpu;

/// The commit rustile was built from (`build.rs`: `git rev-parse HEAD`, else `unknown`).
pub const GIT_COMMIT: &str = env!("RUSTILE_GIT_COMMIT");

/// How the cases were timed.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TimingMeta {
    /// Untimed launches before the timed ones.
    pub warmup: usize,
    /// Timed repetitions per case (the least, where they adapt to the case's length).
    pub reps: usize,
    /// The most repetitions, where they adapt; else `None`.
    pub reps_max: Option<usize>,
    /// `rotate`, `flush` or `both` ([`crate::harness::L2Mode`]).
    pub l2: String,
    /// `cuda-events` (one event pair per repetition), or what else timed the cases.
    pub timer: String,
    /// How rustile and its baseline shared the GPU (`sequential`, `interleaved`), if paired.
    pub pairing: Option<String>,
    /// Noise above which a row is flagged (percent).
    pub noisy_pct: f64,
    /// `--max-noise`, if given.
    pub max_noise_pct: Option<f64>,
}

impl TimingMeta {
    /// CUDA-event timing with `warmup` and `reps`, the L2 policy `l2`, the default noise flag.
    pub fn events(warmup: usize, reps: usize, l2: &str) -> Self {
        Self {
            warmup,
            reps,
            reps_max: None,
            l2: l2.to_string(),
            timer: "cuda-events".into(),
            pairing: None,
            noisy_pct: super::NOISY_PCT,
            max_noise_pct: None,
        }
    }
}

/// The device and its driver.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DeviceMeta {
    /// CUDA ordinal.
    pub ordinal: usize,
    /// Name.
    pub name: String,
    /// `"9.0"`.
    pub compute_capability: String,
    /// Major compute capability.
    pub cc_major: i32,
    /// Minor compute capability.
    pub cc_minor: i32,
    /// Streaming multiprocessors.
    pub sm_count: u32,
    /// Maximum SM clock (CUDA's CLOCK_RATE), MHz.
    pub sm_clock_max_mhz: u32,
    /// Maximum memory clock (CUDA's MEMORY_CLOCK_RATE), MHz.
    pub mem_clock_max_mhz: u32,
    /// L2, bytes.
    pub l2_bytes: usize,
    /// Device memory, bytes.
    pub memory_bytes: usize,
    /// PCI bus id (`cuDeviceGetPCIBusId`).
    pub pci_bus_id: Option<String>,
    /// `cuDriverGetVersion` as `"13.0"`.
    pub cuda_driver_version: Option<String>,
    /// NVML's driver version (`"580.65.06"`).
    pub driver_version: Option<String>,
    /// `ok`, or `unavailable: <why>`.
    pub nvml: String,
    /// SM clock when the file was started (NVML), MHz.
    pub sm_clock_mhz: Option<u32>,
    /// Memory clock then (NVML), MHz.
    pub mem_clock_mhz: Option<u32>,
    /// Enforced power limit (NVML), W.
    pub power_limit_w: Option<f64>,
}

/// The `meta` object of a result file.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RunMeta {
    /// The command, e.g. `bench gemm`.
    pub tool: String,
    /// The process's arguments.
    pub command_line: Vec<String>,
    /// When the run started, RFC 3339 UTC.
    pub timestamp_utc: String,
    /// `CARGO_PKG_VERSION`.
    pub rustile_version: String,
    /// [`GIT_COMMIT`].
    pub git_commit: String,
    /// Seed of the random inputs.
    pub seed: Option<u64>,
    /// How the cases were timed.
    pub timing: TimingMeta,
    /// The device; `None` where none was opened.
    pub device: Option<DeviceMeta>,
}

impl RunMeta {
    /// The meta of a run of `tool` on `gpu` (if any), now, with this process's command line.
    pub fn new(tool: &str, gpu: Option<&Gpu>, seed: Option<u64>, timing: TimingMeta) -> Self {
        Self {
            tool: tool.to_string(),
            command_line: std::env::args().collect(),
            timestamp_utc: rfc3339(SystemTime::now()),
            rustile_version: env!("CARGO_PKG_VERSION").to_string(),
            git_commit: GIT_COMMIT.to_string(),
            seed,
            timing,
            device: gpu.map(device_meta),
        }
    }
}

/// `cuDeviceGetPCIBusId` of `gpu`'s device.
pub fn pci_bus_id(gpu: &Gpu) -> Option<String> {
    let mut buf = [0 as std::ffi::c_char; 32];
    // SAFETY: the buffer and its length agree; the device is the open context's.
    let rc = unsafe {
        cudarc::driver::sys::cuDeviceGetPCIBusId(
            buf.as_mut_ptr(),
            buf.len() as i32,
            gpu.context().cu_device(),
        )
    };
    (rc == cudarc::driver::sys::CUresult::CUDA_SUCCESS)
        // SAFETY: success leaves a NUL-terminated string in `buf`.
        .then(|| unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) })
        .map(|s| s.to_string_lossy().into_owned())
}

/// `cuDriverGetVersion` as `"major.minor"`.
pub fn cuda_driver_version() -> Option<String> {
    let mut v = 0;
    // SAFETY: a place for the version; the driver is loaded wherever a `Gpu` exists.
    let rc = unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut v) };
    (rc == cudarc::driver::sys::CUresult::CUDA_SUCCESS)
        .then(|| format!("{}.{}", v / 1000, (v % 1000) / 10))
}

/// The NVML device of `gpu`, or why there is none.
pub fn nvml_device(gpu: &Gpu) -> Result<nvml::Device, String> {
    nvml::device(gpu.info().ordinal, pci_bus_id(gpu).as_deref())
}

/// The device part of the meta.
pub fn device_meta(gpu: &Gpu) -> DeviceMeta {
    let info = gpu.info();
    let dev = nvml_device(gpu);
    let (cc_major, cc_minor) = info.compute_capability;
    let ok = dev.as_ref().ok();
    DeviceMeta {
        ordinal: info.ordinal,
        name: info.name.clone(),
        compute_capability: format!("{cc_major}.{cc_minor}"),
        cc_major,
        cc_minor,
        sm_count: info.sm_count,
        sm_clock_max_mhz: info.sm_clock_khz / 1000,
        mem_clock_max_mhz: info.mem_clock_khz / 1000,
        l2_bytes: info.l2_bytes,
        memory_bytes: info.total_mem_bytes,
        pci_bus_id: pci_bus_id(gpu),
        cuda_driver_version: cuda_driver_version(),
        driver_version: nvml::get().ok().and_then(|n| n.driver_version()),
        nvml: match &dev {
            Ok(_) => "ok".into(),
            Err(why) => format!("unavailable: {why}"),
        },
        sm_clock_mhz: ok.and_then(|d| d.sm_mhz()),
        mem_clock_mhz: ok.and_then(|d| d.mem_mhz()),
        power_limit_w: ok.and_then(|d| d.power_limit_w()),
    }
}

/// `t` as RFC 3339 UTC, seconds (`2026-12-02T01:40:00Z`).
pub fn rfc3339(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn timestamps_are_rfc3339_utc() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        // 2000-02-29T12:34:56Z (a leap day) and 2026-12-02T01:40:00Z.
        let at = |s| rfc3339(UNIX_EPOCH + Duration::from_secs(s));
        assert_eq!(at(951_827_696), "2000-02-29T12:34:56Z");
        assert_eq!(at(1_796_175_600), "2026-12-02T01:40:00Z");
    }

    #[test]
    fn meta_without_a_gpu_has_the_build_and_the_settings() {
        let m = RunMeta::new(
            "bench gemm",
            None,
            Some(7),
            TimingMeta::events(1, 3, "flush"),
        );
        assert_eq!(m.rustile_version, env!("CARGO_PKG_VERSION"));
        assert!(
            m.git_commit == "unknown" || m.git_commit.len() == 40,
            "{}",
            m.git_commit
        );
        assert_eq!((m.seed, m.device.as_ref()), (Some(7), None));
        let v = serde_json::to_value(&m).unwrap();
        assert_eq!(v["timing"]["reps"], 3);
        assert_eq!(v["timing"]["timer"], "cuda-events");
        assert!(v["device"].is_null());
    }
}
