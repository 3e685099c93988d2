//! Unit tests.

use super::*;

#[test]
fn ideal_is_longest_stage_plus_fill_and_drain() {
    // Three equal stages of 1 ms, 10 chunks: 10 + 2.
    assert_eq!(ideal_ms(10, [1.0, 1.0, 1.0]), 12.0);
    // One chunk: no overlap possible, the ideal is the serial time.
    assert_eq!(ideal_ms(1, [1.0, 2.0, 3.0]), 6.0);
    // Compute-bound: 4 × 2 + 1 + 0.5.
    assert_eq!(ideal_ms(4, [1.0, 2.0, 0.5]), 9.5);
}

fn row(streams: usize, order: StageOrder, efficiency: f64) -> OverlapRow {
    OverlapRow {
        memory: HostKind::Pinned,
        streams,
        order,
        median_ms: 1.0,
        min_ms: 1.0,
        ideal_ms: efficiency,
        serial_ms: 1.0,
        efficiency,
        duplex_ideal_ms: 1.0,
        speedup: 1.0,
        stage_sums_ms: [0.0; 3],
    }
}

#[test]
fn headline_is_the_best_row_with_three_streams() {
    let rows = vec![
        row(1, StageOrder::Free, 0.4),
        row(2, StageOrder::Free, 0.99),
        row(3, StageOrder::Free, 0.9),
        row(3, StageOrder::H2d, 0.95),
        row(4, StageOrder::H2d, 0.95),
    ];
    assert_eq!(headline_row(&rows), 3);
    assert_eq!(headline_row(&rows[..3]), 2);
    // Fewer than 3 streams measured: the most streams.
    assert_eq!(headline_row(&rows[..2]), 1);
    assert_eq!(headline_row(&[]), 0);
}

#[test]
fn gemm_widths_keep_the_output_at_most_a_third() {
    let ns = gemm_n_candidates(4096, 64, 256);
    assert_eq!(ns.first(), Some(&256));
    assert_eq!(ns.last(), Some(&1344)); // 4096 / 3 = 1365.3
    assert_eq!(ns.len(), 18);
    assert!(ns.iter().all(|n| n % 64 == 0 && 3 * n <= 4096));
    assert_eq!(gemm_n_candidates(1024, 64, 256), vec![256, 320]);
    assert!(gemm_n_candidates(100, 64, 0).is_empty());
    assert!(gemm_n_candidates(4096, 0, 0).is_empty());
}

fn probe(rows: usize, n: usize, h2d_ms: f64, gemm_ms: f64) -> GemmProbe {
    GemmProbe {
        rows,
        n,
        kernel: "warptile",
        h2d_ms,
        gemm_ms,
    }
}

#[test]
fn the_gemm_shape_is_the_probe_closest_to_its_h2d() {
    let probes = [
        probe(2048, 1024, 0.61, 0.49),  // 0.80
        probe(2048, 1088, 0.61, 0.84),  // 1.38
        probe(1536, 1280, 0.46, 0.47),  // 1.02
        probe(1536, 1344, 0.46, 0.455), // 0.99: the closest
        probe(1024, 512, 0.31, f64::NAN),
    ];
    let best = pick_gemm_probe(&probes).unwrap();
    assert_eq!((best.rows, best.n), (1536, 1344));
    // A tie across chunk sizes goes to the larger chunk.
    let tie = [probe(1024, 640, 0.5, 0.55), probe(2048, 640, 1.0, 1.1)];
    assert_eq!(pick_gemm_probe(&tie).unwrap().rows, 2048);
    assert!(pick_gemm_probe(&[probe(1, 1, 0.0, 1.0)]).is_none());
    assert!(pick_gemm_probe(&[]).is_none());
    let md = gemm_shape_markdown(&GemmShape {
        k: 4096,
        rows: 1536,
        n: 1344,
        probes: probes.to_vec(),
    });
    assert!(
        md.contains("**0.455 (0.99)**") && md.contains("| 1536 (24, 0.460) |"),
        "{md}"
    );
}

#[test]
fn pattern_is_finite_and_varied() {
    let mut v = vec![0.0f32; 1000];
    fill_pattern(&mut v, 1);
    assert!(v.iter().all(|x| x.is_finite() && (1.0..2.0).contains(x)));
    let distinct: std::collections::HashSet<u32> = v.iter().map(|x| x.to_bits()).collect();
    assert!(distinct.len() > 990);
}
