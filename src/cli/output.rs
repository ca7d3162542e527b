//! Progress on stderr (the report itself is written by `warpscope::report`).

use std::io::{BufWriter, IsTerminal, StdoutLock};
use std::time::{Duration, Instant};
use warpscope::sim::Observer;

/// Standard output through one buffer (flush it before returning, to see its errors). Rust's
/// standard output flushes at every newline, so a report of many lines written to it directly
/// (a per-CTA table of 10^6 CTAs: 2x10^7 lines) cost a system call a line.
pub fn stdout() -> BufWriter<StdoutLock<'static>> {
    BufWriter::with_capacity(1 << 16, std::io::stdout().lock())
}

/// Progress on stderr for long runs (throttled; nothing for short ones).
pub struct Progress {
    start: Instant,
    last: Instant,
    shown: bool,
    total: u64,
    /// What is being done, e.g. `simulating`.
    what: &'static str,
    /// What `total` counts, e.g. `accesses`.
    unit: &'static str,
}

impl Progress {
    /// Progress of a simulation of `total` accesses.
    pub fn new(total: u64) -> Self {
        Self::named(total, "simulating")
    }
    /// Progress of `what` over `total` accesses.
    pub fn named(total: u64, what: &'static str) -> Self {
        let now = Instant::now();
        Progress {
            start: now,
            last: now,
            shown: false,
            total,
            what,
            unit: "accesses",
        }
    }
    /// Progress of a simulation that reads a file of `total` bytes as it goes.
    pub fn bytes(total: u64) -> Self {
        Progress {
            unit: "bytes read",
            ..Self::new(total)
        }
    }
    /// Changes what the total is (a projection that improves as the work goes).
    pub fn set_total(&mut self, total: u64) {
        self.total = total;
    }
    /// Shows the fraction `done / of` (at most twice a second, after the first second).
    pub fn show(&mut self, done: u64, of: u64) {
        let now = Instant::now();
        if self.total > 0
            && now - self.start > Duration::from_secs(1)
            && now - self.last > Duration::from_millis(500)
        {
            self.last = now;
            self.shown = true;
            let pct = 100.0 * done as f64 / of.max(1) as f64;
            // The total the caller gives now (it may have learnt it since it began).
            let (what, total, unit) = (self.what, of, self.unit);
            if std::io::stderr().is_terminal() {
                eprint!("\r{what}: {pct:5.1}% of {total} {unit}");
            } else {
                eprintln!("{what}: {pct:5.1}% of {total} {unit}");
            }
        }
    }
    pub fn clear(&self) {
        if self.shown && std::io::stderr().is_terminal() {
            eprint!("\r{:60}\r", "");
        }
    }
}

impl Observer for Progress {
    fn wants_requests(&self) -> bool {
        false
    }
    fn progress(&mut self, done: u64, total: u64) -> bool {
        self.show(done, total);
        true
    }
}
