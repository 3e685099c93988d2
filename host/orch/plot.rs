//! A hand-written SVG line plot: logarithmic x (sizes), linear y (GB/s). No plotting crate.

use std::fmt::Write as _;

use super::timeline::{nice_step, trim_float, xml};

/// One line of the plot.
#[derive(Clone, Debug)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// `(x, y)` points, x > 0.
    pub points: Vec<(f64, f64)>,
    /// Dashed line.
    pub dashed: bool,
}

const COLOURS: [&str; 6] = [
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#b07aa1",
];

/// Size in bytes as `4 KiB`, `16 MiB`, `1 GiB`.
pub fn size_label(bytes: f64) -> String {
    let units = [("GiB", 30), ("MiB", 20), ("KiB", 10)];
    for (u, shift) in units {
        let v = bytes / (1u64 << shift) as f64;
        if v >= 1.0 {
            return format!("{} {u}", trim_float(v));
        }
    }
    format!("{} B", trim_float(bytes))
}

/// The plot as an SVG document. x is drawn on a log₂ scale and labelled with [`size_label`].
pub fn line_plot(title: &str, x_label: &str, y_label: &str, series: &[Series]) -> String {
    let (width, height) = (900.0, 540.0);
    let (left, right, top, bottom) = (70.0, 220.0, 40.0, 60.0);
    let (pw, ph) = (width - left - right, height - top - bottom);
    let pts = series.iter().flat_map(|s| s.points.iter());
    let (mut x_min, mut x_max, mut y_max) = (f64::INFINITY, 0.0f64, 0.0f64);
    for &(x, y) in pts {
        if x > 0.0 {
            x_min = x_min.min(x);
            x_max = x_max.max(x);
        }
        if y.is_finite() {
            y_max = y_max.max(y);
        }
    }
    if !x_min.is_finite() {
        x_min = 1.0;
        x_max = 2.0;
    }
    let (lx0, lx1) = (x_min.log2(), x_max.log2().max(x_min.log2() + 1.0));
    let y_step = nice_step(y_max.max(1e-9) / 8.0);
    let y_top = (y_max / y_step).ceil().max(1.0) * y_step;
    let px = |x: f64| left + (x.log2() - lx0) / (lx1 - lx0) * pw;
    let py = |y: f64| top + ph - y / y_top * ph;
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(
        svg,
        r#"<rect width="{width}" height="{height}" fill="white"/><text x="{left}" y="24" font-size="15">{}</text>"#,
        xml(title)
    );
    // Grid and ticks.
    let mut y = 0.0;
    while y <= y_top + 1e-9 {
        let yy = py(y);
        let _ = writeln!(
            svg,
            r##"<line x1="{left}" y1="{yy:.1}" x2="{}" y2="{yy:.1}" stroke="#ddd"/><text x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
            left + pw,
            left - 6.0,
            yy + 4.0,
            trim_float(y)
        );
        y += y_step;
    }
    // x ticks at every power of 4 in range (every power of 2 when the range is short).
    let step = if lx1 - lx0 > 12.0 { 2 } else { 1 };
    let mut e = lx0.ceil() as i64;
    while e as f64 <= lx1 + 1e-9 {
        if e % step == 0 {
            let xx = px(2f64.powi(e as i32));
            let _ = writeln!(
                svg,
                r##"<line x1="{xx:.1}" y1="{top}" x2="{xx:.1}" y2="{}" stroke="#eee"/><text x="{xx:.1}" y="{}" text-anchor="middle">{}</text>"##,
                top + ph,
                top + ph + 16.0,
                size_label(2f64.powi(e as i32))
            );
        }
        e += 1;
    }
    let _ = writeln!(
        svg,
        r#"<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="black"/><text x="{}" y="{}" text-anchor="middle">{}</text><text transform="translate(18,{}) rotate(-90)" text-anchor="middle">{}</text>"#,
        left + pw / 2.0,
        height - 18.0,
        xml(x_label),
        top + ph / 2.0,
        xml(y_label)
    );
    for (i, s) in series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let path: Vec<String> = s
            .points
            .iter()
            .filter(|(x, y)| *x > 0.0 && y.is_finite())
            .map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y)))
            .collect();
        let dash = if s.dashed {
            r#" stroke-dasharray="6 4""#
        } else {
            ""
        };
        let _ = writeln!(
            svg,
            r#"<polyline points="{}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>"#,
            path.join(" ")
        );
        for p in &path {
            let (cx, cy) = p.split_once(',').unwrap_or(("0", "0"));
            let _ = write!(
                svg,
                r#"<circle cx="{cx}" cy="{cy}" r="2.5" fill="{colour}"/>"#
            );
        }
        let ly = top + 10.0 + i as f64 * 20.0;
        let lx = left + pw + 14.0;
        let _ = writeln!(
            svg,
            r#"<line x1="{lx}" y1="{ly}" x2="{}" y2="{ly}" stroke="{colour}" stroke-width="2"{dash}/><text x="{}" y="{}">{}</text>"#,
            lx + 24.0,
            lx + 30.0,
            ly + 4.0,
            xml(&s.name)
        );
    }
    svg.push_str("</svg>\n");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_and_plot() {
        assert_eq!(size_label(4096.0), "4 KiB");
        assert_eq!(size_label((1u64 << 30) as f64), "1 GiB");
        assert_eq!(size_label(100.0), "100 B");
        let s = Series {
            name: "pinned H2D".into(),
            points: vec![(4096.0, 2.0), (1048576.0, 40.0), (1073741824.0, 55.0)],
            dashed: false,
        };
        let svg = line_plot("t", "bytes", "GB/s", &[s]);
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
        assert_eq!(svg.matches("<circle").count(), 3);
        assert!(svg.contains("pinned H2D"));
        // Degenerate input still gives a document.
        assert!(line_plot("e", "x", "y", &[]).contains("</svg>"));
    }
}
