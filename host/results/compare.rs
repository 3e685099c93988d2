//! `rustile compare A.json B.json`: the rows of two result files matched by `key`, each called
//! faster, slower or the same by a threshold that grows with the rows' own noise.
//!
//! r = B.median / A.median; t = max(A.noise_pct, B.noise_pct, [`MIN_THRESHOLD_PCT`]) %;
//! faster if r < 1 − t/100, slower if r > 1 + t/100, else same.

use super::ResultFile;
use serde_json::Value;

/// The smallest difference ever called significant, percent.
pub const MIN_THRESHOLD_PCT: f64 = 2.0;

/// B against A for one row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// B takes less time.
    Faster,
    /// B takes more time.
    Slower,
    /// Within the noise.
    Same,
}

impl Verdict {
    /// `faster`, `slower`, `same`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Faster => "faster",
            Self::Slower => "slower",
            Self::Same => "same",
        }
    }
}

/// One matched row.
#[derive(Clone, Debug, PartialEq)]
pub struct Compared {
    /// The rows' key.
    pub key: String,
    /// A's median, ms.
    pub a_ms: f64,
    /// B's median, ms.
    pub b_ms: f64,
    /// B / A.
    pub ratio: f64,
    /// The threshold used, percent.
    pub threshold_pct: f64,
    /// The call.
    pub verdict: Verdict,
}

/// The comparison of two files.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Comparison {
    /// Rows in both, in A's order.
    pub rows: Vec<Compared>,
    /// Keys only in A.
    pub only_a: Vec<String>,
    /// Keys only in B.
    pub only_b: Vec<String>,
}

/// Calls `b_ms` against `a_ms` with the rows' noise (percent).
pub fn verdict(a_ms: f64, a_noise: f64, b_ms: f64, b_noise: f64) -> (f64, f64, Verdict) {
    let ratio = b_ms / a_ms;
    let t = a_noise.max(b_noise).max(MIN_THRESHOLD_PCT);
    let v = if !ratio.is_finite() {
        Verdict::Same
    } else if ratio < 1.0 - t / 100.0 {
        Verdict::Faster
    } else if ratio > 1.0 + t / 100.0 {
        Verdict::Slower
    } else {
        Verdict::Same
    };
    (ratio, t, v)
}

fn timing(row: &Value) -> Option<(f64, f64)> {
    let t = row.get("time")?;
    Some((t.get("median_ms")?.as_f64()?, t.get("noise_pct")?.as_f64()?))
}

fn key(row: &Value) -> Option<&str> {
    row.get("key")?.as_str()
}

/// Matches `b`'s rows to `a`'s by key (a key seen twice in a file: its first row).
pub fn compare(a: &ResultFile, b: &ResultFile) -> Comparison {
    let mut c = Comparison::default();
    let first =
        |f: &'_ ResultFile, k: &str| f.rows.iter().find(|r| key(r) == Some(k)).and_then(timing);
    let mut seen: Vec<&str> = Vec::new();
    for ra in &a.rows {
        let Some(k) = key(ra) else { continue };
        if seen.contains(&k) {
            continue;
        }
        seen.push(k);
        match (timing(ra), first(b, k)) {
            (Some((am, an)), Some((bm, bn))) => {
                let (ratio, threshold_pct, verdict) = verdict(am, an, bm, bn);
                c.rows.push(Compared {
                    key: k.to_string(),
                    a_ms: am,
                    b_ms: bm,
                    ratio,
                    threshold_pct,
                    verdict,
                });
            }
            _ => c.only_a.push(k.to_string()),
        }
    }
    for rb in &b.rows {
        if let Some(k) = key(rb) {
            if !seen.contains(&k) && !c.only_b.iter().any(|x| x == k) {
                c.only_b.push(k.to_string());
            }
        }
    }
    c
}

impl Comparison {
    /// How many rows got `v`.
    pub fn count(&self, v: Verdict) -> usize {
        self.rows.iter().filter(|r| r.verdict == v).count()
    }

    /// The report: a markdown table and a summary line.
    pub fn render(&self, a: &ResultFile, b: &ResultFile) -> String {
        let who = |f: &ResultFile| {
            format!(
                "{} @ {} on {}",
                f.meta.timestamp_utc,
                f.meta.git_commit.chars().take(12).collect::<String>(),
                f.meta
                    .device
                    .as_ref()
                    .map_or("no device", |d| d.name.as_str())
            )
        };
        let mut s = format!("A: {}\nB: {}\n\n", who(a), who(b));
        s += "| row | A ms | B ms | B/A | threshold | B is |\n| --- | ---: | ---: | ---: | ---: | --- |\n";
        for r in &self.rows {
            s += &format!(
                "| {} | {:.4} | {:.4} | {:.3} | ±{:.1}% | {} |\n",
                r.key,
                r.a_ms,
                r.b_ms,
                r.ratio,
                r.threshold_pct,
                r.verdict.name()
            );
        }
        for k in &self.only_a {
            s += &format!("| {k} | | | | | only in A |\n");
        }
        for k in &self.only_b {
            s += &format!("| {k} | | | | | only in B |\n");
        }
        let logs: Vec<f64> = self
            .rows
            .iter()
            .filter(|r| r.ratio.is_finite() && r.ratio > 0.0)
            .map(|r| r.ratio.ln())
            .collect();
        let geo = (logs.iter().sum::<f64>() / logs.len() as f64).exp();
        s += &format!(
            "\nB against A: {} faster, {} slower, {} same, {} only in A, {} only in B; \
             geometric mean B/A time {geo:.3}\n",
            self.count(Verdict::Faster),
            self.count(Verdict::Slower),
            self.count(Verdict::Same),
            self.only_a.len(),
            self.only_b.len()
        );
        s
    }
}
