//! The long sweeps' status line: `[  12/80] what … 1m05s elapsed, ETA 4m30s` on stderr,
//! rewritten in place, when stderr is a terminal; nothing otherwise (logs and pipes stay clean).

use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// Progress through a sweep of a known (or, with 0, unknown) number of cases.
#[derive(Debug)]
pub struct Progress {
    total: usize,
    done: usize,
    start: Instant,
    tty: bool,
}

impl Progress {
    /// A sweep of `total` cases (0: unknown), drawn only if stderr is a terminal.
    pub fn new(total: usize) -> Self {
        Self::with_output(total, std::io::stderr().is_terminal())
    }

    /// As [`Progress::new`], drawn only if `tty`.
    pub fn with_output(total: usize, tty: bool) -> Self {
        Self {
            total,
            done: 0,
            start: Instant::now(),
            tty,
        }
    }

    /// The next case starts (`what` names it): the line is redrawn.
    pub fn step(&mut self, what: &str) {
        let line = self.line(what, self.start.elapsed());
        self.done += 1;
        if self.tty {
            eprint!("\r\x1b[2K{line}");
        }
    }

    /// The line for the case starting now, after `elapsed` ([`status_line`]).
    pub fn line(&self, what: &str, elapsed: Duration) -> String {
        status_line(self.done, self.total, what, elapsed)
    }

    /// The sweep is over: the line is cleared.
    pub fn finish(&mut self) {
        if self.tty {
            eprint!("\r\x1b[2K");
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

/// The line for case `done + 1` of `total` (0: unknown) after `elapsed`: the ETA is the mean
/// time per finished case times the cases left (none before the first case has finished).
pub fn status_line(done: usize, total: usize, what: &str, elapsed: Duration) -> String {
    let count = if total > 0 {
        format!("[{:>4}/{total}]", done + 1)
    } else {
        format!("[{:>4}]", done + 1)
    };
    let mut s = format!("{count} {what} · {} elapsed", hms(elapsed));
    if total > 0 && done > 0 {
        let left = total.saturating_sub(done);
        s += &format!(", ETA {}", hms(elapsed.mul_f64(left as f64 / done as f64)));
    }
    s
}

/// `1h02m03s`, `4m05s`, `6s`.
pub fn hms(d: Duration) -> String {
    let s = d.as_secs();
    match (s / 3600, s % 3600 / 60, s % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, s) => format!("{m}m{s:02}s"),
        (h, m, s) => format!("{h}h{m:02}m{s:02}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_counts_and_estimates() {
        let mut p = Progress::with_output(4, false);
        assert_eq!(
            p.line("a", Duration::from_secs(0)),
            "[   1/4] a · 0s elapsed"
        );
        p.step("a");
        p.step("b");
        // Two cases done in 60 s: two left take 60 s more.
        assert_eq!(
            p.line("c", Duration::from_secs(60)),
            "[   3/4] c · 1m00s elapsed, ETA 1m00s"
        );
        let mut u = Progress::with_output(0, false);
        u.step("x");
        assert_eq!(
            u.line("y", Duration::from_secs(3725)),
            "[   2] y · 1h02m05s elapsed"
        );
    }
}
