//! NVML, loaded at run time (`libnvidia-ml.so.1`): the driver version, clocks, power,
//! temperature and clocks-event ("throttle") reasons. Without the library, or where a call
//! fails, everything here answers `None`/an explanation instead of an error: a result file
//! then records `"nvml": "unavailable: …"`.
//!
//! [`sample_during`] runs a closure while a background thread reads the device every
//! [`SAMPLE_EVERY`]; the harness wraps each case's timed repetitions in it.

use std::ffi::{c_char, c_uint, c_ulonglong, c_void, CStr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use super::stats::{ClockSample, Clocks};

/// How often [`sample_during`] reads the device.
pub const SAMPLE_EVERY: Duration = Duration::from_millis(2);

/// The library's name; `RUSTILE_NVML_LIB` overrides it.
pub const LIBRARY: &str = "libnvidia-ml.so.1";

type Ret = c_uint; // nvmlReturn_t; 0 = NVML_SUCCESS
type Dev = *mut c_void; // nvmlDevice_t

const CLOCK_SM: c_uint = 1;
const CLOCK_MEM: c_uint = 2;
const TEMPERATURE_GPU: c_uint = 0;

/// The entry points rustile uses.
struct Api {
    _lib: libloading::Library,
    by_pci: unsafe extern "C" fn(*const c_char, *mut Dev) -> Ret,
    by_index: unsafe extern "C" fn(c_uint, *mut Dev) -> Ret,
    clock: unsafe extern "C" fn(Dev, c_uint, *mut c_uint) -> Ret,
    max_clock: unsafe extern "C" fn(Dev, c_uint, *mut c_uint) -> Ret,
    power: unsafe extern "C" fn(Dev, *mut c_uint) -> Ret,
    power_limit: unsafe extern "C" fn(Dev, *mut c_uint) -> Ret,
    temperature: unsafe extern "C" fn(Dev, c_uint, *mut c_uint) -> Ret,
    reasons: unsafe extern "C" fn(Dev, *mut c_ulonglong) -> Ret,
    driver_version: unsafe extern "C" fn(*mut c_char, c_uint) -> Ret,
}

/// A loaded, initialised NVML.
pub struct Nvml {
    api: Api,
}

/// One device's NVML handle.
#[derive(Clone, Copy)]
pub struct Device {
    nvml: &'static Nvml,
    handle: Dev,
}

// SAFETY: NVML is thread-safe (its documentation: "all NVML functions are thread-safe"), and a
// device handle is an opaque token valid until nvmlShutdown, which rustile never calls.
unsafe impl Send for Device {}
// SAFETY: as for `Send`: the handle is only passed to NVML.
unsafe impl Sync for Device {}

impl Nvml {
    /// Loads `library` and initialises NVML; the error says what was missing or failed.
    pub fn load(library: &str) -> Result<Self, String> {
        // SAFETY: loading NVML runs only its (side-effect free) initialisers.
        let lib = unsafe { libloading::Library::new(library) }
            .map_err(|e| format!("cannot load {library}: {e}"))?;
        // SAFETY (each `sym`): the signatures are NVML's (nvml.h, API version 11+).
        unsafe fn sym<T: Copy>(lib: &libloading::Library, names: &[&str]) -> Result<T, String> {
            for name in names {
                let c = format!("{name}\0");
                // SAFETY: the caller names the symbol's true type `T`.
                if let Ok(s) = unsafe { lib.get::<T>(c.as_bytes()) } {
                    return Ok(*s);
                }
            }
            Err(format!("NVML lacks {}", names.join(" / ")))
        }
        // SAFETY: as documented on `sym`.
        let api = unsafe {
            let init: unsafe extern "C" fn() -> Ret = sym(&lib, &["nvmlInit_v2"])?;
            let rc = init();
            if rc != 0 {
                return Err(format!("nvmlInit_v2 returned {rc}"));
            }
            Api {
                by_pci: sym(&lib, &["nvmlDeviceGetHandleByPciBusId_v2"])?,
                by_index: sym(&lib, &["nvmlDeviceGetHandleByIndex_v2"])?,
                clock: sym(&lib, &["nvmlDeviceGetClockInfo"])?,
                max_clock: sym(&lib, &["nvmlDeviceGetMaxClockInfo"])?,
                power: sym(&lib, &["nvmlDeviceGetPowerUsage"])?,
                power_limit: sym(&lib, &["nvmlDeviceGetEnforcedPowerLimit"])?,
                temperature: sym(&lib, &["nvmlDeviceGetTemperature"])?,
                reasons: sym(
                    &lib,
                    &[
                        "nvmlDeviceGetCurrentClocksEventReasons",
                        "nvmlDeviceGetCurrentClocksThrottleReasons",
                    ],
                )?,
                driver_version: sym(&lib, &["nvmlSystemGetDriverVersion"])?,
                _lib: lib,
            }
        };
        Ok(Self { api })
    }

    /// The driver version (`"580.65.06"`).
    pub fn driver_version(&self) -> Option<String> {
        let mut buf = [0 as c_char; 96];
        // SAFETY: the buffer and its length agree; NVML NUL-terminates within it.
        let rc = unsafe { (self.api.driver_version)(buf.as_mut_ptr(), buf.len() as c_uint) };
        // SAFETY: success leaves a NUL-terminated string in `buf`.
        (rc == 0).then(|| {
            unsafe { CStr::from_ptr(buf.as_ptr()) }
                .to_string_lossy()
                .into_owned()
        })
    }
}

/// The process's NVML: loaded on first use; the error is why it is unavailable.
pub fn get() -> Result<&'static Nvml, &'static str> {
    static NVML: OnceLock<Result<Nvml, String>> = OnceLock::new();
    NVML.get_or_init(|| {
        let lib = std::env::var("RUSTILE_NVML_LIB").unwrap_or_else(|_| LIBRARY.to_string());
        Nvml::load(&lib)
    })
    .as_ref()
    .map_err(String::as_str)
}

/// The NVML device of CUDA device `ordinal`, found by its PCI bus id (`pci`, from
/// `cuDeviceGetPCIBusId`; NVML's indices need not follow CUDA's), else by index. Cached.
pub fn device(ordinal: usize, pci: Option<&str>) -> Result<Device, String> {
    static CACHE: Mutex<Vec<(usize, Device)>> = Mutex::new(Vec::new());
    let nvml = get().map_err(str::to_string)?;
    let mut cache = CACHE.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(&(_, d)) = cache.iter().find(|(o, _)| *o == ordinal) {
        return Ok(d);
    }
    let mut handle: Dev = std::ptr::null_mut();
    let rc = match pci.and_then(|p| std::ffi::CString::new(p).ok()) {
        // SAFETY: a NUL-terminated id and a place for the handle.
        Some(id) => unsafe { (nvml.api.by_pci)(id.as_ptr(), &mut handle) },
        // SAFETY: a place for the handle; a bad index is an error code.
        None => unsafe { (nvml.api.by_index)(ordinal as c_uint, &mut handle) },
    };
    if rc != 0 || handle.is_null() {
        return Err(format!(
            "NVML has no handle for device {ordinal} ({pci:?}): code {rc}"
        ));
    }
    let d = Device { nvml, handle };
    cache.push((ordinal, d));
    Ok(d)
}

impl Device {
    fn read(&self, f: impl FnOnce(*mut c_uint) -> Ret) -> Option<u32> {
        let mut v: c_uint = 0;
        (f(&mut v) == 0).then_some(v)
    }

    /// Current SM clock, MHz.
    pub fn sm_mhz(&self) -> Option<u32> {
        // SAFETY: a valid handle and a place for the value.
        self.read(|p| unsafe { (self.nvml.api.clock)(self.handle, CLOCK_SM, p) })
    }

    /// Current memory clock, MHz.
    pub fn mem_mhz(&self) -> Option<u32> {
        // SAFETY: as `sm_mhz`.
        self.read(|p| unsafe { (self.nvml.api.clock)(self.handle, CLOCK_MEM, p) })
    }

    /// Maximum SM clock, MHz.
    pub fn max_sm_mhz(&self) -> Option<u32> {
        // SAFETY: as `sm_mhz`.
        self.read(|p| unsafe { (self.nvml.api.max_clock)(self.handle, CLOCK_SM, p) })
    }

    /// Maximum memory clock, MHz.
    pub fn max_mem_mhz(&self) -> Option<u32> {
        // SAFETY: as `sm_mhz`.
        self.read(|p| unsafe { (self.nvml.api.max_clock)(self.handle, CLOCK_MEM, p) })
    }

    /// Board power, W.
    pub fn power_w(&self) -> Option<f64> {
        // SAFETY: as `sm_mhz`.
        self.read(|p| unsafe { (self.nvml.api.power)(self.handle, p) })
            .map(|mw| mw as f64 / 1e3)
    }

    /// Enforced power limit, W.
    pub fn power_limit_w(&self) -> Option<f64> {
        // SAFETY: as `sm_mhz`.
        self.read(|p| unsafe { (self.nvml.api.power_limit)(self.handle, p) })
            .map(|mw| mw as f64 / 1e3)
    }

    /// GPU temperature, °C.
    pub fn temp_c(&self) -> Option<u32> {
        // SAFETY: as `sm_mhz`.
        self.read(|p| unsafe { (self.nvml.api.temperature)(self.handle, TEMPERATURE_GPU, p) })
    }

    /// Clocks-event reason mask.
    pub fn reasons(&self) -> Option<u64> {
        let mut v: c_ulonglong = 0;
        // SAFETY: a valid handle and a place for the mask.
        let rc = unsafe { (self.nvml.api.reasons)(self.handle, &mut v) };
        (rc == 0).then_some(v)
    }

    /// One reading; `None` if the SM clock cannot be read (the other fields default to 0).
    pub fn sample(&self) -> Option<ClockSample> {
        Some(ClockSample {
            sm_mhz: self.sm_mhz()?,
            mem_mhz: self.mem_mhz().unwrap_or(0),
            power_w: self.power_w().unwrap_or(0.0),
            temp_c: self.temp_c().unwrap_or(0),
            reasons: self.reasons().unwrap_or(0),
        })
    }
}

/// Runs `f`; with a device, a scoped thread reads it every [`SAMPLE_EVERY`] (once at least,
/// and once more after `f`) and the readings come back summarised. Without one, `f` alone.
pub fn sample_during<T>(dev: Option<Device>, f: impl FnOnce() -> T) -> (T, Option<Clocks>) {
    let Some(dev) = dev else {
        return (f(), None);
    };
    let stop = AtomicBool::new(false);
    let (out, mut samples) = std::thread::scope(|s| {
        let sampler = s.spawn(|| {
            let mut v = Vec::new();
            loop {
                v.extend(dev.sample());
                if stop.load(Ordering::Relaxed) {
                    break v;
                }
                std::thread::sleep(SAMPLE_EVERY);
            }
        });
        let out = f();
        stop.store(true, Ordering::Relaxed);
        (out, sampler.join().unwrap_or_default())
    });
    samples.extend(dev.sample());
    let limit = dev.max_sm_mhz().unwrap_or(0);
    (out, Clocks::summarise(&samples, limit))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_library_is_an_explanation_not_a_failure() {
        let e = Nvml::load("/nonexistent/libnvidia-ml.so.1").err().unwrap();
        assert!(
            e.contains("cannot load /nonexistent/libnvidia-ml.so.1"),
            "{e}"
        );
        let (v, clocks) = sample_during(None, || 41 + 1);
        assert_eq!((v, clocks), (42, None));
    }
}
