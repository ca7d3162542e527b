//! Copies of a streamed run's simulation taken as it goes, so that the detail of a window
//! ("Every request from A to B") reads the file on from the nearest copy before the window
//! instead of from its start: a 10^9-reference trace zoomed near its end re-reads a few
//! percent of it, not all of it.
//!
//! Five kinds of file give copies (`trace::ResumePoint`):
//! - a reference stream (a `din` file, not a pipe): between two of its chunks all the
//!   simulation's state is in the session (`Session::snapshot`) and the file's reader can go
//!   on from a byte offset (`din::Resume`; a compressed file is decompressed again up to it,
//!   without simulating: `din::reader_at`);
//! - a binary file of version 4, not compressed, between two CTAs of a scheduled kernel: the
//!   copy holds the scheduler's state but not the rows of the resident CTAs (they would pin
//!   hundreds of MiB per copy); reading on from it first reads those rows again through the
//!   file's index (`shell::lanes::resumed_source`); or between two chunks of an issued-order
//!   kernel, whose state is all in the session;
//! - a cuda-memtrace file (compressed or not), between two chunks of a kernel (issued order,
//!   all the state in the session): reading on walks over the kernels before without
//!   simulating them, then starts the second read at that kernel (`memtrace::stream_from`; a
//!   compressed file is decompressed again up to it);
//! - an Accel-Sim trace (compressed or not), between two CTAs of a kernel as for a binary
//!   file: reading on does not open the kernel files before the copy's, reads the copy's
//!   again from its start, skimming the blocks of the CTAs done and decoding those of the
//!   resident ones (`accelsim/resume.rs`);
//! - an NVBit log read in one pass (compressed or not), between two chunks of a launch: its
//!   reader gives the place with a copy of its tables (`nvbit::Resume`: the launches met, the
//!   running launch's warp slots), and reading on starts at that line (a compressed log is
//!   decompressed again up to it, without simulating).
//!
//! A copy is taken every `every` accesses simulated (the work it saves); when [`MOST`] are
//! kept, every other one goes and `every` doubles, so they stay spread over the whole run. A
//! copy holds the reuse trackers and the caches' records of the lines seen (they grow with
//! the distinct lines), and the running kernel's per-CTA counters and the report's rows (they
//! grow with the CTAs), so the copies together stay under [`BUDGET_BYTES`]: fewer are kept
//! for a large trace, none when one copy would not fit.

use warpscope_core::sim::Session;
use warpscope_core::trace::ResumePoint;

/// Copies kept at most.
pub const MOST: usize = 16;
/// Bytes all copies may hold together (by `Session::approx_bytes`).
pub const BUDGET_BYTES: u64 = 256 << 20;
/// Accesses simulated between two copies at first (the work a copy saves: a `din` file's
/// accesses are about its requests; a scheduled kernel's warp instruction is one request for
/// up to 32 accesses).
pub const FIRST_EVERY: u64 = 1 << 20;

/// One copy: the session after a chunk or CTA, where the reader stood, and the requests before.
pub struct Checkpoint {
    pub session: Session,
    pub at: ResumePoint,
    pub requests: u64,
}

/// The copies of one run.
pub struct Checkpoints {
    pub kept: Vec<Checkpoint>,
    /// Accesses simulated between two copies.
    pub every: u64,
    /// The count of accesses simulated at which the next copy is due.
    next: u64,
    /// The trace's files when the run began: a detail of the run is refused once they
    /// changed (the readers find some changes, not all: a file rewritten in place with the
    /// same kernels and lengths reads as well as before).
    pub stamp: Option<warpscope_shell::TraceStamp>,
}

impl Default for Checkpoints {
    fn default() -> Self {
        Self::every(FIRST_EVERY)
    }
}

impl Checkpoints {
    /// Copies every `every` accesses simulated at first (tests take them often).
    pub fn every(every: u64) -> Self {
        Checkpoints {
            kept: Vec::new(),
            every: every.max(1),
            next: every.max(1),
            stamp: None,
        }
    }

    /// Whether a copy is due after `accesses` accesses simulated.
    pub fn due(&self, accesses: u64) -> bool {
        accesses >= self.next
    }

    /// Keeps `session`, copied after `requests` requests and `accesses` accesses simulated,
    /// with the reader at `at`.
    pub fn add(&mut self, session: Session, at: ResumePoint, requests: u64, accesses: u64) {
        let bytes = session.approx_bytes() + at.approx_bytes();
        if bytes.saturating_mul(2) > BUDGET_BYTES {
            // Not even two fit: none are taken.
            self.kept.clear();
            self.next = u64::MAX;
            return;
        }
        self.kept.push(Checkpoint {
            session,
            at,
            requests,
        });
        // The copies grow with the run: the latest is the largest.
        let fit = (BUDGET_BYTES / bytes.max(1)) as usize;
        while self.kept.len() >= MOST.min(fit).max(2) {
            let mut i = 0;
            self.kept.retain(|_| {
                i += 1;
                i % 2 == 0
            });
            self.every = self.every.saturating_mul(2);
        }
        self.next = accesses.saturating_add(self.every);
    }

    /// The latest copy taken at or before request `start`.
    pub fn before(&self, start: u64) -> Option<&Checkpoint> {
        self.kept.iter().rev().find(|c| c.requests <= start)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at() -> ResumePoint {
        ResumePoint::Din(warpscope_core::trace::din::Reader::new(&b""[..], "t").resume_point())
    }

    #[test]
    fn copies_stay_few_and_spread_over_the_run() {
        let cfg = warpscope_core::config::SimConfig::default();
        let mut c = Checkpoints::every(10);
        let mut requests = 0;
        for _ in 0..1000 {
            requests += 7;
            if c.due(requests) {
                c.add(Session::new(&cfg, 0).unwrap(), at(), requests, requests);
            }
        }
        let kept: Vec<u64> = c.kept.iter().map(|k| k.requests).collect();
        assert!(kept.len() < MOST && kept.len() >= MOST / 2, "{kept:?}");
        // About evenly spaced, the last near the end.
        assert!(
            kept.windows(2).all(|w| w[1] - w[0] >= c.every / 2),
            "{kept:?}"
        );
        assert!(requests - kept[kept.len() - 1] <= c.every, "{kept:?}");
        assert_eq!(c.before(kept[3] + 1).map(|k| k.requests), Some(kept[3]));
        assert_eq!(c.before(kept[3]).map(|k| k.requests), Some(kept[3]));
        assert!(c.before(kept[0] - 1).is_none());
    }
}
