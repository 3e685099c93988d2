//! A pipeline run as spans (stream, chunk, stage, start, duration), exported as Chrome trace
//! JSON (opens in Perfetto or `chrome://tracing`) and as a hand-written SVG Gantt chart.
//!
//! Times come from CUDA events recorded on each stream before and after every stage, read
//! with `cuEventElapsedTime` against one start event. A span therefore runs from the moment its
//! stream reached the stage to the moment the stage finished: for a kernel queued behind
//! another stream's kernel that includes the wait.

use crate::report::chart::{nice_step, text_width, trim_float, Anchor, Canvas};

/// The three stages of the pipeline, each on its own engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Stage {
    /// Host → device copy (copy engine).
    H2D,
    /// The kernel(s) on the chunk (SMs).
    Compute,
    /// Device → host copy (the other copy engine).
    D2H,
}

impl Stage {
    /// The three stages in pipeline order.
    pub const ALL: [Stage; 3] = [Stage::H2D, Stage::Compute, Stage::D2H];

    /// Name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Stage::H2D => "H2D",
            Stage::Compute => "compute",
            Stage::D2H => "D2H",
        }
    }

    /// Index in [`Stage::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    fn colour(self) -> &'static str {
        match self {
            Stage::H2D => "#4e79a7",
            Stage::Compute => "#59a14f",
            Stage::D2H => "#e15759",
        }
    }
}

/// One stage of one chunk.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Span {
    /// Stream index.
    pub stream: usize,
    /// Chunk index.
    pub chunk: usize,
    /// Stage.
    pub stage: Stage,
    /// Start, µs after the run's start event.
    pub start_us: f64,
    /// Duration, µs.
    pub dur_us: f64,
}

/// The spans of one run, with a title.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Timeline {
    /// What ran (configuration, device).
    pub title: String,
    /// Streams used.
    pub streams: usize,
    /// Every stage of every chunk.
    pub spans: Vec<Span>,
}

fn json_str(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

impl Timeline {
    /// End of the last span, µs.
    pub fn end_us(&self) -> f64 {
        self.spans
            .iter()
            .map(|s| s.start_us + s.dur_us)
            .fold(0.0, f64::max)
    }

    /// Sum of each stage's durations, µs, in [`Stage::ALL`] order.
    pub fn stage_sums_us(&self) -> [f64; 3] {
        let mut sums = [0.0; 3];
        for s in &self.spans {
            sums[s.stage.index()] += s.dur_us;
        }
        sums
    }

    /// Chrome trace event format: `ph: "X"` complete events with `ts`/`dur` in µs. Process 1
    /// has one thread per stream; process 2 one thread per engine (H2D, compute, D2H), so the
    /// overlap of the engines reads straight off the second group.
    pub fn chrome_trace_json(&self) -> String {
        let mut events = Vec::new();
        let meta = |pid: usize, tid: Option<usize>, value: &str| {
            let (kind, tid) = match tid {
                Some(t) => ("thread_name", t),
                None => ("process_name", 0),
            };
            format!(
                r#"{{"ph":"M","pid":{pid},"tid":{tid},"name":"{kind}","args":{{"name":{}}}}}"#,
                json_str(value)
            )
        };
        events.push(meta(1, None, &format!("streams — {}", self.title)));
        events.push(meta(2, None, "engines"));
        for s in 0..self.streams {
            events.push(meta(1, Some(s), &format!("stream {s}")));
        }
        for st in Stage::ALL {
            events.push(meta(2, Some(st.index()), st.name()));
        }
        for sp in &self.spans {
            for (pid, tid) in [(1, sp.stream), (2, sp.stage.index())] {
                events.push(format!(
                    r#"{{"ph":"X","pid":{pid},"tid":{tid},"name":{},"cat":{},"ts":{:.3},"dur":{:.3},"args":{{"chunk":{},"stream":{}}}}}"#,
                    json_str(&format!("{} chunk {}", sp.stage.name(), sp.chunk)),
                    json_str(sp.stage.name()),
                    sp.start_us,
                    sp.dur_us,
                    sp.chunk,
                    sp.stream
                ));
            }
        }
        format!(
            "{{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n{}\n]}}\n",
            events.join(",\n")
        )
    }

    /// Reads back what [`Timeline::chrome_trace_json`] wrote (the stream rows, process 1):
    /// `None` when `json` is not such a trace.
    pub fn from_chrome_trace(json: &str) -> Option<Timeline> {
        let v: serde_json::Value = serde_json::from_str(json).ok()?;
        let events = v.get("traceEvents")?.as_array()?;
        let mut t = Timeline::default();
        for e in events {
            let pid = e.get("pid").and_then(|p| p.as_u64());
            match e.get("ph").and_then(|p| p.as_str()) {
                Some("M") if pid == Some(1) && e["name"] == "process_name" => {
                    let name = e["args"]["name"].as_str().unwrap_or_default();
                    t.title = name.strip_prefix("streams — ").unwrap_or(name).to_string();
                }
                Some("X") if pid == Some(1) => {
                    let stage = Stage::ALL
                        .into_iter()
                        .find(|s| e.get("cat").and_then(|c| c.as_str()) == Some(s.name()))?;
                    let span = Span {
                        stream: e["args"]["stream"].as_u64()? as usize,
                        chunk: e["args"]["chunk"].as_u64()? as usize,
                        stage,
                        start_us: e["ts"].as_f64()?,
                        dur_us: e["dur"].as_f64()?,
                    };
                    t.streams = t.streams.max(span.stream + 1);
                    t.spans.push(span);
                }
                _ => {}
            }
        }
        Some(t)
    }

    /// A Gantt chart: one row per engine, then one row per stream; colour = stage. Drawn on
    /// the report's [`Canvas`], so its labels follow the same no-overlap rule (title band on
    /// top, legend under the time axis, chunk numbers only where they fit).
    pub fn svg_gantt(&self) -> String {
        self.gantt().finish()
    }

    /// [`Timeline::svg_gantt`] before it is turned into text (its text boxes can be checked).
    pub fn gantt(&self) -> Canvas {
        let rows: Vec<String> = Stage::ALL
            .iter()
            .map(|s| format!("engine: {}", s.name()))
            .chain((0..self.streams).map(|s| format!("stream {s}")))
            .collect();
        let label_w = rows.iter().map(|r| text_width(r, 12.0)).fold(0.0, f64::max);
        let (left, right, top, row_h, gap) = (label_w + 20.0, 30.0, 44.0, 26.0, 6.0);
        let width = 1200f64.max((left + text_width(&self.title, 15.0) + right).ceil());
        let plot_w = width - left - right;
        let axis_y = top + rows.len() as f64 * (row_h + gap) + 4.0;
        let height = axis_y + 80.0;
        let end = self.end_us().max(1.0);
        let x = |us: f64| left + us / end * plot_w;
        let mut c = Canvas::new(width, height);
        c.text(left, 24.0, Anchor::Start, 15.0, false, &self.title);
        for (i, name) in rows.iter().enumerate() {
            let y = top + i as f64 * (row_h + gap);
            c.raw(&format!(
                r##"<rect x="{left:.1}" y="{y}" width="{plot_w:.1}" height="{row_h}" fill="#f3f3f3"/>"##
            ));
            c.text(left - 8.0, y + row_h * 0.65, Anchor::End, 12.0, false, name);
        }
        // Time axis: about ten round ticks, thinned like the charts' x axis.
        let step_ms = nice_step(end / 1000.0 / 10.0);
        let mut t = 0.0;
        let mut last_end = f64::NEG_INFINITY;
        while t * 1000.0 <= end + 1e-9 {
            let tx = x(t * 1000.0);
            c.raw(&format!(
                r##"<line x1="{tx:.1}" y1="{top}" x2="{tx:.1}" y2="{axis_y}" stroke="#ccc" stroke-width="0.5"/>"##
            ));
            let label = trim_float(t);
            let w = text_width(&label, 12.0);
            if tx - w / 2.0 > last_end + 8.0 {
                c.text(tx, axis_y + 16.0, Anchor::Middle, 12.0, false, &label);
                last_end = tx + w / 2.0;
            }
            t += step_ms;
        }
        c.text(
            left + plot_w / 2.0,
            axis_y + 36.0,
            Anchor::Middle,
            12.0,
            false,
            "time since start (ms)",
        );
        let mut label_end = vec![f64::NEG_INFINITY; rows.len()];
        for sp in &self.spans {
            for row in [sp.stage.index(), Stage::ALL.len() + sp.stream] {
                let y = top + row as f64 * (row_h + gap);
                let (x0, w) = (x(sp.start_us), (sp.dur_us / end * plot_w).max(0.5));
                c.raw(&format!(
                    r#"<rect x="{x0:.2}" y="{}" width="{w:.2}" height="{}" fill="{}" stroke="white" stroke-width="0.4"><title>{} chunk {} (stream {}): {:.1} µs at {:.1} µs</title></rect>"#,
                    y + 2.0,
                    row_h - 4.0,
                    sp.stage.colour(),
                    sp.stage.name(),
                    sp.chunk,
                    sp.stream,
                    sp.dur_us,
                    sp.start_us
                ));
                let label = sp.chunk.to_string();
                let lw = text_width(&label, 10.0);
                let cx = x0 + w / 2.0;
                if w > lw + 6.0 && cx - lw / 2.0 > label_end[row] + 2.0 {
                    c.raw(&format!(
                        r#"<text x="{cx:.2}" y="{}" text-anchor="middle" fill="white" font-size="10">{label}</text>"#,
                        y + row_h * 0.65
                    ));
                    label_end[row] = cx + lw / 2.0;
                }
            }
        }
        // Legend, under the axis label.
        let mut lx = left;
        for st in Stage::ALL {
            let ly = axis_y + 52.0;
            c.raw(&format!(
                r#"<rect x="{lx:.1}" y="{ly}" width="14" height="14" fill="{}"/>"#,
                st.colour()
            ));
            c.text(lx + 18.0, ly + 12.0, Anchor::Start, 12.0, false, st.name());
            lx += 18.0 + text_width(st.name(), 12.0) + 24.0;
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Timeline {
        let mut spans = Vec::new();
        for chunk in 0..4 {
            for (i, stage) in Stage::ALL.into_iter().enumerate() {
                spans.push(Span {
                    stream: chunk % 2,
                    chunk,
                    stage,
                    start_us: (chunk + i) as f64 * 100.0,
                    dur_us: 100.0,
                });
            }
        }
        Timeline {
            title: "test <run>".into(),
            streams: 2,
            spans,
        }
    }

    #[test]
    fn chrome_trace_is_valid_json_with_complete_events() {
        let t = sample();
        let v: serde_json::Value = serde_json::from_str(&t.chrome_trace_json()).unwrap();
        let events = v["traceEvents"].as_array().unwrap();
        let complete: Vec<_> = events.iter().filter(|e| e["ph"] == "X").collect();
        // Each span appears once per stream row and once per engine row.
        assert_eq!(complete.len(), 2 * t.spans.len());
        assert!(complete.iter().all(|e| e["dur"].as_f64().unwrap() == 100.0));
        assert_eq!(events.iter().filter(|e| e["ph"] == "M").count(), 2 + 2 + 3);
    }

    #[test]
    fn gantt_has_a_bar_per_span_per_row_and_escapes_text() {
        let t = sample();
        let svg = t.svg_gantt();
        assert!(svg.starts_with("<svg"));
        assert_eq!(svg.matches("<title>").count(), 2 * t.spans.len());
        assert!(svg.contains("test &lt;run&gt;"));
        assert_eq!(t.end_us(), 600.0);
        assert_eq!(t.stage_sums_us(), [400.0; 3]);
        assert!(
            t.gantt().overlaps().is_empty(),
            "{:?}",
            t.gantt().overlaps()
        );
        // A long title widens the chart instead of running into anything.
        let long = Timeline {
            title: "x".repeat(300),
            ..t.clone()
        };
        assert!(long.gantt().overlaps().is_empty());
    }

    #[test]
    fn chrome_trace_reads_back() {
        let t = sample();
        let back = Timeline::from_chrome_trace(&t.chrome_trace_json()).unwrap();
        assert_eq!(back.title, t.title);
        assert_eq!(back.streams, t.streams);
        assert_eq!(back.spans, t.spans);
        assert!(Timeline::from_chrome_trace("[1, 2]").is_none());
    }

    #[test]
    fn nice_steps() {
        assert_eq!(nice_step(0.13), 0.2);
        assert_eq!(nice_step(3.0), 5.0);
        assert_eq!(nice_step(7.0), 10.0);
        assert_eq!(trim_float(2.500), "2.5");
        assert_eq!(trim_float(0.0), "0");
    }
}
