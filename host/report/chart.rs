//! The one SVG plotting module: a [`Canvas`] that records every text box it draws, and a
//! [`Chart`] (line/scatter plot, linear or logarithmic axes) laid out so labels cannot collide.
//!
//! Placement rule: the title sits in its own band above the plot, the legend in a column to the
//! right of the plot area (never inside it), y tick labels in a left margin sized to the widest
//! one, x tick labels are thinned until neighbours are at least a gap apart, and the axis labels
//! sit outside the tick labels. Text width is estimated (no font metrics are available when
//! writing a file): [`text_width`] over-estimates sans-serif glyphs, so a layout that clears with
//! the estimate clears on screen. [`Canvas::overlaps`] checks the result.

use std::fmt::Write as _;

/// Escapes text for XML content and attribute values.
pub fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// 1, 2 or 5 × 10^k at or above `raw` (1 for a non-positive or NaN `raw`).
pub fn nice_step(raw: f64) -> f64 {
    if raw.is_nan() || raw <= 0.0 || !raw.is_finite() {
        return 1.0;
    }
    let p = 10f64.powf(raw.log10().floor());
    for m in [1.0, 2.0, 5.0, 10.0] {
        if m * p >= raw * (1.0 - 1e-12) {
            return m * p;
        }
    }
    10.0 * p
}

/// `v` with at most three decimals and no trailing zeros.
pub fn trim_float(v: f64) -> String {
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s.is_empty() || s == "-" || s == "-0" {
        "0".into()
    } else {
        s.to_string()
    }
}

/// Size in bytes as `4 KiB`, `16 MiB`, `1 GiB`.
pub fn size_label(bytes: f64) -> String {
    for (u, shift) in [("GiB", 30), ("MiB", 20), ("KiB", 10)] {
        let v = bytes / (1u64 << shift) as f64;
        if v >= 1.0 {
            return format!("{} {u}", trim_float(v));
        }
    }
    format!("{} B", trim_float(bytes))
}

/// A number, with an M/G suffix from 10⁶ (`16384` stays `16384`, `2e9` is `2G`).
pub fn count_label(v: f64) -> String {
    for (u, d) in [("G", 1e9), ("M", 1e6)] {
        if v.abs() >= d {
            return format!("{}{u}", trim_float(v / d));
        }
    }
    trim_float(v)
}

/// Estimated rendered width of `text` at `size` px in a sans-serif font: 0.62 em per glyph
/// (wider than the average Latin glyph of DejaVu Sans or Arial, about 0.55 em; capitals and
/// digits about 0.6), 0.35 em for a space.
pub fn text_width(text: &str, size: f64) -> f64 {
    text.chars()
        .map(|c| if c == ' ' { 0.35 } else { 0.62 })
        .sum::<f64>()
        * size
}

/// Horizontal anchor of a text element.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Anchor {
    /// `text-anchor="start"`.
    Start,
    /// `text-anchor="middle"`.
    Middle,
    /// `text-anchor="end"`.
    End,
}

/// The box a text element covers (estimated), in SVG user units.
#[derive(Clone, Debug, PartialEq)]
pub struct TextBox {
    /// The text.
    pub text: String,
    /// Left edge.
    pub x0: f64,
    /// Top edge.
    pub y0: f64,
    /// Right edge.
    pub x1: f64,
    /// Bottom edge.
    pub y1: f64,
}

impl TextBox {
    /// Whether the two boxes share any area (touching edges do not count).
    pub fn intersects(&self, o: &TextBox) -> bool {
        self.x0 < o.x1 && o.x0 < self.x1 && self.y0 < o.y1 && o.y0 < self.y1
    }
}

/// An SVG document being drawn; every [`Canvas::text`] is recorded as a [`TextBox`].
#[derive(Debug)]
pub struct Canvas {
    width: f64,
    height: f64,
    body: String,
    boxes: Vec<TextBox>,
}

impl Canvas {
    /// An empty white canvas.
    pub fn new(width: f64, height: f64) -> Self {
        Canvas {
            width,
            height,
            body: String::new(),
            boxes: Vec::new(),
        }
    }

    /// Raw SVG elements (shapes; text goes through [`Canvas::text`]).
    pub fn raw(&mut self, element: &str) {
        self.body.push_str(element);
        self.body.push('\n');
    }

    /// A text element with baseline at `y`; `rotated` turns it -90° about `(x, y)`.
    pub fn text(&mut self, x: f64, y: f64, anchor: Anchor, size: f64, rotated: bool, text: &str) {
        let w = text_width(text, size);
        let start = match anchor {
            Anchor::Start => 0.0,
            Anchor::Middle => -w / 2.0,
            Anchor::End => -w,
        };
        let (ascent, descent) = (0.8 * size, 0.25 * size);
        let b = if rotated {
            // After rotate(-90) the text runs upwards from (x, y): along -y, ascent towards -x.
            TextBox {
                text: text.into(),
                x0: x - ascent,
                x1: x + descent,
                y0: y - start - w,
                y1: y - start,
            }
        } else {
            TextBox {
                text: text.into(),
                x0: x + start,
                x1: x + start + w,
                y0: y - ascent,
                y1: y + descent,
            }
        };
        self.boxes.push(b);
        let a = match anchor {
            Anchor::Start => "start",
            Anchor::Middle => "middle",
            Anchor::End => "end",
        };
        let transform = if rotated {
            format!(r#" transform="rotate(-90 {x:.1} {y:.1})""#)
        } else {
            String::new()
        };
        let _ = writeln!(
            self.body,
            r#"<text x="{x:.1}" y="{y:.1}" text-anchor="{a}" font-size="{size}"{transform}>{}</text>"#,
            xml(text)
        );
    }

    /// The text boxes drawn so far.
    pub fn boxes(&self) -> &[TextBox] {
        &self.boxes
    }

    /// Pairs of overlapping text boxes (by index), and boxes reaching outside the canvas
    /// (paired with themselves).
    pub fn overlaps(&self) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        for (i, a) in self.boxes.iter().enumerate() {
            if a.x0 < -0.5 || a.y0 < -0.5 || a.x1 > self.width + 0.5 || a.y1 > self.height + 0.5 {
                out.push((i, i));
            }
            for (j, b) in self.boxes.iter().enumerate().skip(i + 1) {
                if a.intersects(b) {
                    out.push((i, j));
                }
            }
        }
        out
    }

    /// The finished SVG document.
    pub fn finish(&self) -> String {
        let (w, h) = (self.width, self.height);
        format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"{w}\" height=\"{h}\" fill=\"white\"/>\n{}</svg>\n",
            self.body
        )
    }
}

/// How an axis maps values.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scale {
    /// Linear from 0 (or the data minimum when it is negative).
    Linear,
    /// Logarithmic, ticks at powers of the base (2 or 10).
    Log(f64),
}

/// Tick label format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// [`trim_float`] / [`count_label`].
    Number,
    /// [`size_label`] (bytes).
    Bytes,
}

/// One axis.
#[derive(Clone, Debug)]
pub struct Axis {
    /// Axis label.
    pub label: String,
    /// Mapping.
    pub scale: Scale,
    /// Tick labels.
    pub format: Format,
}

impl Axis {
    /// A linear numeric axis.
    pub fn linear(label: &str) -> Self {
        Axis {
            label: label.into(),
            scale: Scale::Linear,
            format: Format::Number,
        }
    }

    /// A logarithmic axis with the given base and format.
    pub fn log(label: &str, base: f64, format: Format) -> Self {
        Axis {
            label: label.into(),
            scale: Scale::Log(base),
            format,
        }
    }
}

/// How a series is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// Polyline with point markers.
    Line,
    /// Dashed polyline with point markers.
    Dashed,
    /// Markers only.
    Points,
    /// A reference line (vendor, ceiling): thick grey-ish dashes, no markers.
    Reference,
}

/// One series.
#[derive(Clone, Debug)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// `(x, y)` points; on a log axis non-positive values are dropped.
    pub points: Vec<(f64, f64)>,
    /// Drawing style.
    pub style: Style,
}

impl Series {
    /// A series.
    pub fn new(name: impl Into<String>, points: Vec<(f64, f64)>, style: Style) -> Self {
        Series {
            name: name.into(),
            points,
            style,
        }
    }
}

/// Colours of the measured series, in legend order (Tableau 10, then two darker ones).
pub const COLOURS: [&str; 12] = [
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#b07aa1", "#edc948", "#ff9da7",
    "#9c755f", "#bab0ac", "#1b5e20", "#4a148c",
];

/// Colours of the [`Style::Reference`] series (vendor lines, ceilings): dark and neutral.
pub const REFERENCE_COLOURS: [&str; 4] = ["#222222", "#8c8c8c", "#a0522d", "#5e35b1"];

/// A 2-D chart.
#[derive(Clone, Debug)]
pub struct Chart {
    /// Title, above the plot.
    pub title: String,
    /// Horizontal axis.
    pub x: Axis,
    /// Vertical axis.
    pub y: Axis,
    /// The series, drawn in order.
    pub series: Vec<Series>,
    /// Plot area width in px (the canvas adds the margins and the legend).
    pub plot_width: f64,
    /// Plot area height in px.
    pub plot_height: f64,
}

const TITLE: f64 = 15.0;
const FONT: f64 = 12.0;
const GAP: f64 = 8.0;

struct Mapping {
    lo: f64,
    hi: f64,
    scale: Scale,
}

impl Mapping {
    fn new(scale: Scale, values: impl Iterator<Item = f64>) -> Self {
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        for v in values {
            if v.is_finite() && (scale == Scale::Linear || v > 0.0) {
                lo = lo.min(v);
                hi = hi.max(v);
            }
        }
        match scale {
            Scale::Linear => {
                if !lo.is_finite() {
                    (lo, hi) = (0.0, 1.0);
                }
                let lo = lo.min(0.0);
                let step = nice_step((hi - lo).max(1e-12) / 6.0);
                let hi = ((hi / step).ceil() * step).max(lo + step);
                Mapping {
                    lo: (lo / step).floor() * step,
                    hi,
                    scale,
                }
            }
            Scale::Log(b) => {
                if !lo.is_finite() {
                    (lo, hi) = (1.0, b);
                }
                let (l, h) = (lo.log(b).floor(), hi.log(b).ceil());
                Mapping {
                    lo: b.powf(l),
                    hi: b.powf(h.max(l + 1.0)),
                    scale,
                }
            }
        }
    }

    /// 0..1 along the axis.
    fn frac(&self, v: f64) -> f64 {
        match self.scale {
            Scale::Linear => (v - self.lo) / (self.hi - self.lo),
            Scale::Log(_) => (v.ln() - self.lo.ln()) / (self.hi.ln() - self.lo.ln()),
        }
    }

    fn ticks(&self) -> Vec<f64> {
        match self.scale {
            Scale::Linear => {
                let step = nice_step((self.hi - self.lo) / 6.0);
                let n = ((self.hi - self.lo) / step).round() as i64;
                (0..=n).map(|i| self.lo + i as f64 * step).collect()
            }
            Scale::Log(b) => {
                let (l, h) = (self.lo.log(b).round() as i32, self.hi.log(b).round() as i32);
                (l..=h).map(|e| b.powi(e)).collect()
            }
        }
    }

    fn label(&self, v: f64, f: Format) -> String {
        match f {
            Format::Bytes => size_label(v),
            Format::Number => count_label(v),
        }
    }
}

impl Chart {
    /// A chart with the default plot size (640 × 340).
    pub fn new(title: &str, x: Axis, y: Axis, series: Vec<Series>) -> Self {
        Chart {
            title: title.into(),
            x,
            y,
            series,
            plot_width: 640.0,
            plot_height: 340.0,
        }
    }

    fn keep(&self, (x, y): (f64, f64)) -> bool {
        let ok = |v: f64, s: Scale| v.is_finite() && (s == Scale::Linear || v > 0.0);
        ok(x, self.x.scale) && ok(y, self.y.scale)
    }

    /// Lays the chart out and draws it.
    pub fn render(&self) -> Canvas {
        let pts = || self.series.iter().flat_map(|s| s.points.iter().copied());
        let mx = Mapping::new(self.x.scale, pts().filter(|&p| self.keep(p)).map(|p| p.0));
        let my = Mapping::new(self.y.scale, pts().filter(|&p| self.keep(p)).map(|p| p.1));
        let (pw, ph) = (self.plot_width, self.plot_height);
        let y_ticks: Vec<(f64, String)> = my
            .ticks()
            .into_iter()
            .map(|v| (v, my.label(v, self.y.format)))
            .collect();
        let y_tick_w = y_ticks
            .iter()
            .map(|(_, s)| text_width(s, FONT))
            .fold(0.0, f64::max);
        // Left margin: rotated y label, gap, tick labels, gap.
        let left = GAP + FONT + GAP + y_tick_w + GAP;
        let top = GAP + TITLE + 2.0 * GAP;
        let legend_w = self
            .series
            .iter()
            .map(|s| 30.0 + text_width(&s.name, FONT))
            .fold(0.0, f64::max);
        let legend_x = left + pw + 2.0 * GAP;
        let legend_h = self.series.len() as f64 * (FONT + GAP);
        let bottom = GAP + FONT + GAP + FONT + GAP;
        let width = (legend_x + legend_w + GAP)
            .max(left + text_width(&self.title, TITLE) + GAP)
            .ceil();
        let height = (top + ph.max(legend_h) + bottom).ceil();
        let mut c = Canvas::new(width, height);
        c.text(left, GAP + TITLE, Anchor::Start, TITLE, false, &self.title);
        let px = |x: f64| left + mx.frac(x) * pw;
        let py = |y: f64| top + ph - my.frac(y) * ph;
        // y grid and tick labels: consecutive labels are at least one line apart (a plot
        // shorter than six lines keeps every other one).
        let mut last_y = f64::INFINITY;
        for (v, s) in &y_ticks {
            let yy = py(*v);
            c.raw(&format!(
                r##"<line x1="{left:.1}" y1="{yy:.1}" x2="{:.1}" y2="{yy:.1}" stroke="#e4e4e4"/>"##,
                left + pw
            ));
            if last_y - yy >= FONT + 2.0 {
                c.text(left - GAP, yy + 4.0, Anchor::End, FONT, false, s);
                last_y = yy;
            }
        }
        // x ticks, thinned: keep every k-th so neighbouring labels clear by GAP.
        let x_ticks: Vec<(f64, String)> = mx
            .ticks()
            .into_iter()
            .map(|v| (v, mx.label(v, self.x.format)))
            .collect();
        let mut k = 1;
        while k < x_ticks.len() {
            let clear = x_ticks.windows(k + 1).step_by(k).all(|w| {
                let (a, b) = (&w[0], &w[k]);
                px(b.0) - px(a.0) >= (text_width(&a.1, FONT) + text_width(&b.1, FONT)) / 2.0 + GAP
            });
            if clear {
                break;
            }
            k += 1;
        }
        for (i, (v, s)) in x_ticks.iter().enumerate() {
            let xx = px(*v);
            c.raw(&format!(
                r##"<line x1="{xx:.1}" y1="{top:.1}" x2="{xx:.1}" y2="{:.1}" stroke="#eeeeee"/>"##,
                top + ph
            ));
            if i % k == 0 {
                c.text(xx, top + ph + GAP + FONT, Anchor::Middle, FONT, false, s);
            }
        }
        c.raw(&format!(
            r#"<rect x="{left:.1}" y="{top:.1}" width="{pw}" height="{ph}" fill="none" stroke="black"/>"#
        ));
        c.text(
            left + pw / 2.0,
            top + ph + 2.0 * GAP + 2.0 * FONT,
            Anchor::Middle,
            FONT,
            false,
            &self.x.label,
        );
        c.text(
            GAP + FONT * 0.8,
            top + ph / 2.0,
            Anchor::Middle,
            FONT,
            true,
            &self.y.label,
        );
        let (mut data, mut refs) = (0, 0);
        for (i, s) in self.series.iter().enumerate() {
            let colour = if s.style == Style::Reference {
                refs += 1;
                REFERENCE_COLOURS[(refs - 1) % REFERENCE_COLOURS.len()]
            } else {
                data += 1;
                COLOURS[(data - 1) % COLOURS.len()]
            };
            let path: Vec<(f64, f64)> = s
                .points
                .iter()
                .copied()
                .filter(|&p| self.keep(p))
                .map(|(x, y)| (px(x), py(y)))
                .collect();
            let (dash, width) = match s.style {
                Style::Dashed => (r#" stroke-dasharray="6 4""#, 2.0),
                Style::Reference => (r#" stroke-dasharray="10 4""#, 2.5),
                _ => ("", 2.0),
            };
            let pts: Vec<String> = path.iter().map(|(x, y)| format!("{x:.1},{y:.1}")).collect();
            if s.style != Style::Points && pts.len() > 1 {
                c.raw(&format!(
                    r#"<polyline points="{}" fill="none" stroke="{colour}" stroke-width="{width}"{dash}/>"#,
                    pts.join(" ")
                ));
            }
            if s.style != Style::Reference {
                let marks: String = path
                    .iter()
                    .map(|(x, y)| {
                        format!(r#"<circle cx="{x:.1}" cy="{y:.1}" r="3" fill="{colour}"/>"#)
                    })
                    .collect();
                c.raw(&marks);
            }
            let ly = top + i as f64 * (FONT + GAP) + FONT / 2.0;
            c.raw(&format!(
                r#"<line x1="{legend_x:.1}" y1="{ly:.1}" x2="{:.1}" y2="{ly:.1}" stroke="{colour}" stroke-width="{width}"{dash}/>"#,
                legend_x + 22.0
            ));
            c.text(
                legend_x + 28.0,
                ly + 4.0,
                Anchor::Start,
                FONT,
                false,
                &s.name,
            );
        }
        c
    }

    /// [`Chart::render`] as an SVG document.
    pub fn svg(&self) -> String {
        self.render().finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels() {
        assert_eq!(size_label(4096.0), "4 KiB");
        assert_eq!(size_label((1u64 << 30) as f64), "1 GiB");
        assert_eq!(size_label(100.0), "100 B");
        assert_eq!(count_label(16384.0), "16384");
        assert_eq!(count_label(2e9), "2G");
        assert_eq!(count_label(0.25), "0.25");
        assert_eq!(count_label(300.0), "300");
        assert_eq!(nice_step(0.3), 0.5);
        assert_eq!(nice_step(-1.0), 1.0);
    }

    #[test]
    fn boxes_overlap_only_when_they_share_area() {
        let b = |x0, y0, x1, y1| TextBox {
            text: String::new(),
            x0,
            y0,
            x1,
            y1,
        };
        assert!(b(0.0, 0.0, 10.0, 10.0).intersects(&b(5.0, 5.0, 15.0, 15.0)));
        assert!(!b(0.0, 0.0, 10.0, 10.0).intersects(&b(10.0, 0.0, 20.0, 10.0)));
        let mut c = Canvas::new(100.0, 50.0);
        c.text(10.0, 20.0, Anchor::Start, 12.0, false, "abc");
        c.text(12.0, 22.0, Anchor::Start, 12.0, false, "abc");
        assert_eq!(c.overlaps(), vec![(0, 1)]);
        c.text(99.0, 40.0, Anchor::Start, 12.0, false, "outside");
        assert!(c.overlaps().contains(&(2, 2)));
    }

    #[test]
    fn dense_charts_have_no_overlapping_labels() {
        // 31 power-of-two sizes, long legend names, a log y axis: thinning must kick in.
        let pts: Vec<(f64, f64)> = (0..31).map(|e| (2f64.powi(e), 1.0 + e as f64)).collect();
        let series = (0..8)
            .map(|i| {
                Series::new(
                    format!("series number {i} with a long name"),
                    pts.clone(),
                    Style::Line,
                )
            })
            .collect();
        let chart = Chart::new(
            "A title that is rather long, long enough to be wider than the plot area itself at fifteen px",
            Axis::log("bytes", 2.0, Format::Bytes),
            Axis::log("GB/s", 10.0, Format::Number),
            series,
        );
        let c = chart.render();
        assert!(c.overlaps().is_empty(), "{:?}", c.overlaps());
        let svg = c.finish();
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
        assert_eq!(svg.matches("<circle").count(), 8 * 31);
        // Empty and degenerate charts still make documents without overlaps.
        let empty = Chart::new("e", Axis::linear("x"), Axis::linear("y"), vec![]).render();
        assert!(empty.overlaps().is_empty());
        let nan = Chart::new(
            "n",
            Axis::linear("x"),
            Axis::log("y", 10.0, Format::Number),
            vec![Series::new(
                "s",
                vec![(1.0, f64::NAN), (2.0, -1.0)],
                Style::Line,
            )],
        );
        assert!(nan.render().overlaps().is_empty());
    }
}
