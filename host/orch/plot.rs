//! The orchestration plots, drawn with the report's chart module ([`crate::report::chart`]):
//! logarithmic x (sizes), linear y (GB/s).

use crate::report::chart::{Axis, Chart, Format, Style};

pub use crate::report::chart::size_label;

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

/// The plot as an SVG document. x is drawn on a log₂ scale and labelled with [`size_label`].
pub fn line_plot(title: &str, x_label: &str, y_label: &str, series: &[Series]) -> String {
    chart(title, x_label, y_label, series).svg()
}

/// [`line_plot`] before rendering.
pub fn chart(title: &str, x_label: &str, y_label: &str, series: &[Series]) -> Chart {
    let series = series
        .iter()
        .map(|s| {
            let style = if s.dashed { Style::Dashed } else { Style::Line };
            crate::report::chart::Series::new(s.name.clone(), s.points.clone(), style)
        })
        .collect();
    Chart::new(
        title,
        Axis::log(x_label, 2.0, Format::Bytes),
        Axis::linear(y_label),
        series,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_and_plot() {
        assert_eq!(size_label(4096.0), "4 KiB");
        let s = Series {
            name: "pinned H2D".into(),
            points: vec![(4096.0, 2.0), (1048576.0, 40.0), (1073741824.0, 55.0)],
            dashed: false,
        };
        let svg = line_plot("t", "bytes", "GB/s", std::slice::from_ref(&s));
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
        assert_eq!(svg.matches("<circle").count(), 3);
        assert!(svg.contains("pinned H2D"));
        assert!(chart("t", "bytes", "GB/s", &[s])
            .render()
            .overlaps()
            .is_empty());
        // Degenerate input still gives a document.
        assert!(line_plot("e", "x", "y", &[]).contains("</svg>"));
    }
}
