//! The front door's argument checks, without a GPU: every length the one-call functions check
//! before launching, as typed errors, and the typed "no GPU" error of `Gpu::new`.

use rustile::api::{self, BLayout};
use rustile::half::{bf16, f16};
use rustile::{Error, Gpu, HgemmOptions};

fn short(e: Error) -> (&'static str, usize, usize) {
    match e {
        Error::BufferLength {
            buffer, got, need, ..
        } => (buffer, got, need),
        other => panic!("expected a buffer-length error, got {other}"),
    }
}

#[test]
fn sgemm_accepts_exact_lengths_and_names_the_short_buffer() {
    let (m, n, k) = (3, 5, 7);
    api::check_sgemm(m, n, k, m * k, k * n, m * n).unwrap();
    let e = api::check_sgemm(m, n, k, m * k - 1, k * n, m * n).unwrap_err();
    assert_eq!(short(e), ("a", m * k - 1, m * k));
    let e = api::check_sgemm(m, n, k, m * k, k * n - 1, m * n).unwrap_err();
    assert_eq!(short(e), ("b", k * n - 1, k * n));
    let e = api::check_sgemm(m, n, k, m * k, k * n, 0).unwrap_err();
    assert_eq!(short(e), ("c", 0, m * n));
}

#[test]
fn sgemm_rejects_empty_and_oversized_shapes() {
    assert!(matches!(
        api::check_sgemm(0, 4, 4, 0, 16, 0),
        Err(Error::ZeroSize { what: "m", .. })
    ));
    let huge = u32::MAX as usize;
    assert!(matches!(
        api::check_sgemm(huge, 1, 1, huge, 1, huge),
        Err(Error::TooLarge { .. })
    ));
}

#[test]
fn hgemm_checks_b_against_its_layout_and_c_against_the_output_type() {
    let (m, n, k) = (64, 48, 40);
    let row_major = HgemmOptions::default();
    api::check_hgemm::<f16, f16>(m, n, k, &row_major, m * k, k * n, m * n).unwrap();
    api::check_hgemm::<bf16, f32>(m, n, k, &row_major, m * k, k * n, m * n).unwrap();
    // Bᵀ is N × K: the same element count, so the lengths pass either way...
    let transposed = HgemmOptions {
        b: BLayout::Transposed,
        ..Default::default()
    };
    api::check_hgemm::<bf16, bf16>(m, n, k, &transposed, m * k, n * k, m * n).unwrap();
    // ...and a short one is named.
    let e =
        api::check_hgemm::<bf16, bf16>(m, n, k, &transposed, m * k, n * k - 1, m * n).unwrap_err();
    assert_eq!(short(e), ("b", n * k - 1, n * k));
    let e = api::check_hgemm::<f16, f32>(m, n, k, &row_major, m * k, k * n, m * n - 1).unwrap_err();
    assert_eq!(short(e), ("c", m * n - 1, m * n));
}

#[test]
fn hgemm_rejects_a_non_finite_alpha_and_an_empty_shape() {
    let nan_alpha = HgemmOptions {
        alpha: f32::NAN,
        ..Default::default()
    };
    assert!(matches!(
        api::check_hgemm::<f16, f16>(8, 8, 8, &nan_alpha, 64, 64, 64),
        Err(Error::Usage(_))
    ));
    assert!(matches!(
        api::check_hgemm::<f16, f16>(8, 0, 8, &HgemmOptions::default(), 64, 0, 0),
        Err(Error::ZeroSize { what: "n", .. })
    ));
}

#[test]
fn hgemm_bias_shorter_than_n_is_named() {
    // The front door checks the bias's length with the same function (the bias itself needs a
    // device buffer, so the pure check is exercised directly).
    let p = rustile::hgemm::Problem::new(rustile::DType::F16, 4, 32, 8);
    p.check_lens(32, 256, 128, Some(32)).unwrap();
    let e = p.check_lens(32, 256, 128, Some(31)).unwrap_err();
    assert_eq!(short(e), ("bias", 31, 32));
}

#[test]
fn copy_needs_a_destination_as_long_as_the_source() {
    api::check_copy::<f32>(1000, 1000).unwrap();
    api::check_copy::<f16>(1000, 1001).unwrap();
    let e = api::check_copy::<f32>(1000, 999).unwrap_err();
    assert_eq!(short(e), ("dst", 999, 1000));
    assert!(matches!(
        api::check_copy::<f16>(0, 0),
        Err(Error::ZeroSize { what: "n", .. })
    ));
}

#[test]
fn transpose_checks_both_buffers_against_rows_times_cols() {
    api::check_transpose::<f32>(100, 37, 3700, 3700).unwrap();
    api::check_transpose::<f16>(64, 64, 4096, 4096).unwrap();
    let e = api::check_transpose::<f32>(100, 37, 3699, 3700).unwrap_err();
    assert_eq!(short(e), ("src", 3699, 3700));
    let e = api::check_transpose::<f16>(100, 37, 3700, 10).unwrap_err();
    assert_eq!(short(e), ("dst", 10, 3700));
    assert!(matches!(
        api::check_transpose::<f32>(usize::MAX, 2, 0, 0),
        Err(Error::TooLarge { .. })
    ));
}

#[test]
fn launched_reports_print_as_family_slash_variant() {
    let l = rustile::Launched {
        family: rustile::Family::Copy,
        variant: "grid_stride",
    };
    assert_eq!(l.to_string(), "copy/grid_stride");
}

#[test]
fn errors_are_constructible_outside_the_crate() {
    let e = Error::driver(
        "my own cuMemAlloc",
        rustile::DriverError(
            rustile::cudarc::driver::sys::cudaError_enum::CUDA_ERROR_OUT_OF_MEMORY,
        ),
    );
    // (Not printed: DriverError's Display asks the driver for the message, and there is none
    // on a GPU-less machine.)
    assert!(matches!(&e, Error::Driver { during, .. } if during == "my own cuMemAlloc"));
    assert!(Error::NoDriver.is_no_gpu());
    assert!(!e.is_no_gpu());
}

#[test]
fn gpu_new_without_a_driver_is_the_typed_no_gpu_error() {
    // Only on a machine declared GPU-less (CI sets RUSTILE_EXPECT_NO_GPU=1, as for tests/cpu.rs):
    // elsewhere a driver may well be there.
    if std::env::var("RUSTILE_EXPECT_NO_GPU").is_err() {
        return;
    }
    match Gpu::new(0) {
        Err(e @ Error::NoDriver) => assert!(e.is_no_gpu() && e.to_string().starts_with("no GPU")),
        Err(e) => panic!("expected Error::NoDriver, got {e}"),
        Ok(_) => panic!("a GPU opened on a machine declared GPU-less"),
    }
}
