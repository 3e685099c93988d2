//! Unit tests.

use super::*;

const GIB: usize = 1 << 30;

fn cfg(chunk_elems: usize, streams: usize) -> PipelineConfig {
    PipelineConfig {
        chunk_elems,
        streams,
        compute_reps: 1,
        order: StageOrder::Free,
    }
}

#[test]
fn chunks_cover_the_batch_with_a_short_tail() {
    let p = PipelinePlan::new(10, 10, &cfg(4, 3), GIB).unwrap();
    assert_eq!(p.chunks, 3);
    assert_eq!(p.chunk(0), 0..4);
    assert_eq!(p.chunk(2), 8..10);
    assert_eq!(p.stream_of(2), 2);
    assert_eq!(p.device_bytes, 3 * 2 * 4 * 4);
    // A chunk larger than the batch shrinks to it.
    let p = PipelinePlan::new(10, 10, &cfg(100, 1), GIB).unwrap();
    assert_eq!((p.chunks, p.chunk_elems), (1, 10));
}

#[test]
fn zero_chunk_and_empty_batch_are_typed_errors() {
    let e = PipelinePlan::new(10, 10, &cfg(0, 1), GIB).unwrap_err();
    assert!(
        matches!(
            e,
            Error::ZeroSize {
                what: "chunk elements",
                ..
            }
        ),
        "{e}"
    );
    let e = PipelinePlan::new(0, 0, &cfg(4, 1), GIB).unwrap_err();
    assert!(
        matches!(
            e,
            Error::ZeroSize {
                what: "batch elements",
                ..
            }
        ),
        "{e}"
    );
    let e = PipelinePlan::new(10, 10, &cfg(4, 0), GIB).unwrap_err();
    assert!(matches!(e, Error::Pipeline { .. }), "{e}");
}

#[test]
fn more_streams_than_chunks_is_a_typed_error() {
    let e = PipelinePlan::new(10, 10, &cfg(4, 4), GIB).unwrap_err();
    assert!(
        matches!(e, Error::Pipeline { ref what } if what.contains("4 streams but only 3 chunk")),
        "{e}"
    );
    assert!(PipelinePlan::new(12, 12, &cfg(4, 3), GIB).is_ok());
}

#[test]
fn wrong_output_length_is_a_typed_error() {
    let e = PipelinePlan::new(10, 9, &cfg(4, 1), GIB).unwrap_err();
    assert!(
        matches!(
            e,
            Error::BufferLength {
                buffer: "output",
                got: 9,
                need: 10,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn a_batch_larger_than_device_memory_streams() {
    // 4 TiB of f32 through an "H200" with 141 GB free: the plan needs only the chunk
    // buffers, 4 streams × 2 × 32 MiB.
    let device_free = 141_000_000_000;
    let elems = 1usize << 40;
    let p = PipelinePlan::new(elems, elems, &cfg(1 << 23, 4), device_free).unwrap();
    assert_eq!(p.device_bytes, 256 << 20);
    assert_eq!(p.chunks, 1 << 17);
    assert!(p.elems * 4 > device_free);
    // Chunk buffers that cannot fit are refused with the numbers, not an allocation failure.
    let e = PipelinePlan::new(elems, elems, &cfg(1 << 34, 4), device_free).unwrap_err();
    assert!(
        matches!(e, Error::Pipeline { ref what } if what.contains("are free")),
        "{e}"
    );
}

#[test]
fn a_shrinking_chunk_has_a_shorter_output() {
    // 10 elements in chunks of 4, one output per 3: ⌈4/3⌉ + ⌈4/3⌉ + ⌈2/3⌉ = 2 + 2 + 1.
    let p = PipelinePlan::with_shrink(10, 5, &cfg(4, 3), 3, GIB).unwrap();
    assert_eq!((p.out_chunk_elems, p.out_elems), (2, 5));
    assert_eq!(p.out_chunk(0), 0..2);
    assert_eq!(p.out_chunk(2), 4..5);
    assert_eq!(p.device_bytes, 3 * (4 + 2) * 4);
    let e = PipelinePlan::with_shrink(10, 10, &cfg(4, 3), 3, GIB).unwrap_err();
    assert!(
        matches!(
            e,
            Error::BufferLength {
                buffer: "output",
                got: 10,
                need: 5,
                ..
            }
        ),
        "{e}"
    );
    let e = PipelinePlan::with_shrink(10, 5, &cfg(4, 3), 0, GIB).unwrap_err();
    assert!(matches!(e, Error::ZeroSize { .. }), "{e}");
    // The gather's problem reads exactly the chunk: (n − 1) · stride + 1 ≤ len.
    let work = ChunkWork::Gather {
        kernel: crate::families::strided::BEST,
        stride: 8,
    };
    for len in [1, 7, 8, 9, 1 << 20, (1 << 20) + 3] {
        let (src, dst) = work.problem(len).unwrap().lens().unwrap();
        assert!(src <= len && dst == work.out_len(len), "{len}: {src} {dst}");
    }
    let p = PipelinePlan::for_work(1 << 20, 1 << 17, &cfg(1 << 16, 4), &work, GIB).unwrap();
    assert_eq!((p.chunks, p.out_chunk_elems), (16, 1 << 13));
}

#[test]
fn a_gemm_chunk_is_whole_rows_and_its_output_is_rows_times_n() {
    // K = 4096, N = 1280: 2048-row chunks of 32 MiB give 10 MiB outputs (D2H = 5/16 H2D).
    let work = ChunkWork::Gemm { k: 4096, n: 1280 };
    assert_eq!(work.out_shape(), OutShape::rows(4096, 1280));
    assert_eq!(work.out_len(2048 * 4096), 2048 * 1280);
    assert!(work.problem(4096).is_none() && work.suite_kernel().is_none());
    let g = work.gemm_problem(2048 * 4096).unwrap();
    assert_eq!(
        (g.m, g.n, g.k, g.lda, g.ldb, g.ldc),
        (2048, 1280, 4096, 4096, 1280, 1280)
    );
    let batch = 32 * 2048 * 4096;
    let c = cfg(2048 * 4096, 3);
    let out = PipelinePlan::output_len(batch, c.chunk_elems, work.out_shape());
    assert_eq!(out, 32 * 2048 * 1280);
    let p = PipelinePlan::for_work(batch, out, &c, &work, GIB << 4).unwrap();
    assert_eq!((p.chunks, p.out_chunk_elems), (32, 2048 * 1280));
    assert_eq!(p.out_chunk(31), 31 * 2048 * 1280..32 * 2048 * 1280);
    assert_eq!(p.device_bytes, 3 * (2048 * 4096 + 2048 * 1280) * 4);
    // A short last chunk of whole rows: 10 rows of K = 8 in chunks of 4 rows.
    let small = ChunkWork::Gemm { k: 8, n: 3 };
    let p = PipelinePlan::for_work(80, 30, &cfg(32, 3), &small, GIB).unwrap();
    assert_eq!((p.chunks, p.out_chunk(2)), (3, 24..30));
    // Not whole rows: the batch or the chunk.
    for (batch, chunk) in [(81, 32), (80, 30)] {
        let e = PipelinePlan::for_work(batch, 30, &cfg(chunk, 2), &small, GIB).unwrap_err();
        assert!(
            matches!(e, Error::Pipeline { ref what } if what.contains("whole number of rows")),
            "{e}"
        );
    }
    // N > K with 0 compute launches would read past the input chunk buffer.
    let wide = ChunkWork::Gemm { k: 4, n: 8 };
    let zero = PipelineConfig {
        compute_reps: 0,
        ..cfg(8, 1)
    };
    let e = PipelinePlan::for_work(16, 32, &zero, &wide, GIB).unwrap_err();
    assert!(matches!(e, Error::Pipeline { .. }), "{e}");
    assert!(PipelinePlan::for_work(16, 32, &cfg(8, 1), &wide, GIB).is_ok());
    assert_eq!(OutShape::shrink(0).out_len(5), None);
    assert!(work.name().starts_with("gemm") && work.is_gemm());
}

/// Naive f32 `a · b` (row-major), as a GPU SGEMM would give within rounding.
fn sgemm_f32(a: &[f32], b: &[f32], k: usize, n: usize) -> Vec<f32> {
    let rows = a.len() / k;
    let mut c = vec![0.0f32; rows * n];
    for i in 0..rows {
        for kk in 0..k {
            for j in 0..n {
                c[i * n + j] = a[i * k + kk].mul_add(b[kk * n + j], c[i * n + j]);
            }
        }
    }
    c
}

#[test]
fn gemm_sampling_accepts_f32_rounding_and_catches_one_wrong_entry() {
    let (rows, k, n) = (37, 300, 20);
    let mut a = vec![0.0f32; rows * k];
    let mut b = vec![0.0f32; k * n];
    crate::orch::overlap::fill_pattern(&mut a, 3);
    crate::orch::overlap::fill_pattern(&mut b, 4);
    b.iter_mut().for_each(|v| *v -= 1.5);
    let c = sgemm_f32(&a, &b, k, n);
    // The error is in units of each entry's own bound: ≤ 1 passes.
    let tol = 1.0;
    let (err, entries) = gemm_sample_error(&a, &b, k, n, &c, 9);
    assert!(err > 0.0 && err < tol, "{err} vs {tol}");
    assert_eq!(entries, GEMM_CHECK_ROWS * n + GEMM_CHECK_ENTRIES);
    // One wrong entry in a checked row (the first and last rows are always checked).
    for at in [3, (rows - 1) * n + 7] {
        let mut bad = c.clone();
        bad[at] += 0.5;
        assert!(gemm_sample_error(&a, &b, k, n, &bad, 9).0 > tol, "{at}");
    }
    let mut nan = c.clone();
    nan[n] = f32::NAN; // row 1: maybe unsampled, but NaN anywhere sampled is infinite
    let (e, _) = gemm_sample_error(&a, &b, k, n, &nan, 9);
    assert!(e.is_infinite() || e < tol);
    // Shapes that do not fit.
    assert!(gemm_sample_error(&a, &b, k, n, &c[1..], 9).0.is_infinite());
    assert!(gemm_sample_error(&a[1..], &b, k, n, &c, 9).0.is_infinite());
    // A one-row chunk: the three rows are one.
    let (e, m) = gemm_sample_error(&a[..k], &b, k, n, &c[..n], 1);
    assert!(e < tol && m == n + GEMM_CHECK_ENTRIES, "{e} {m}");
}

#[test]
fn byte_overflow_is_a_typed_error() {
    let e =
        PipelinePlan::new(usize::MAX, usize::MAX, &cfg(usize::MAX / 2, 2), usize::MAX).unwrap_err();
    assert!(matches!(e, Error::TooLarge { .. }), "{e}");
}
