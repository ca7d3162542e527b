//! The whole pipeline ([`super::run_kernels`]) run a piece at a time, for a caller that cannot
//! run it whole at once: the web build runs its simulations, explanations and measurements
//! between frames, where a whole run of a large trace would hold the page. Each
//! [`RunSteps::step`] does one piece and the last gives the report:
//! - without the timing model, the kernels go to a [`Session`] held whole, without a copy of
//!   their rows: a kernel the scheduler runs a bounded number of warp instructions at a time
//!   (`Session::begin_whole`, as [`Session::kernel`] runs it), a reference stream in chunks of
//!   rows;
//! - with it, the timing model's own pieces ([`TimedSteps`]).
//!
//! The core promises a kernel given in pieces the whole kernel's result, so the report and
//! every event the observer sees, in their order, are the ones [`super::run_kernels`] gives
//! (tested below on every kind of kernel and in the timing model).

use super::{Observer, Report, Session, SimError, TimedSteps, WholeKernel};
use crate::config::SimConfig;
use crate::trace::Kernel;

/// Warp instructions issued in one piece of a kernel the scheduler runs.
const WARP_INSTRUCTIONS: u64 = 2048;
/// Rows of a reference stream given in one piece.
const CHUNK_ROWS: usize = 1 << 15;

/// Where a run in pieces stands. Each step is given the configuration and the kernels: the
/// same ones every time.
pub struct RunSteps {
    inner: Inner,
}

enum Inner {
    Plain(Box<Plain>),
    Timed(Box<TimedSteps>),
    /// The report was given (or the run failed): nothing more to do.
    Over,
}

/// A run without the timing model: the session (made at the first step), the kernel being
/// given and how far.
struct Plain {
    session: Option<Session>,
    kernel: usize,
    at: At,
}

/// Where the kernel being given stands.
enum At {
    /// Not begun.
    Start,
    /// A kernel the scheduler runs, held whole: its state between pieces.
    Whole(Box<WholeKernel>),
    /// A reference stream: its rows before `next` given.
    Rows { next: usize },
}

impl RunSteps {
    /// The run of `cfg` (checked here), not started.
    pub fn new(cfg: &SimConfig) -> Result<Self, SimError> {
        cfg.validate()?;
        let inner = match cfg.timing {
            Some(_) => Inner::Timed(Box::default()),
            None => Inner::Plain(Box::new(Plain {
                session: None,
                kernel: 0,
                at: At::Start,
            })),
        };
        Ok(RunSteps { inner })
    }

    /// Does the next piece of the run of `kernels` under `cfg`; the report once the last
    /// piece is done. After the report, or an error, it does nothing more (`Ok(None)`).
    pub fn step(
        &mut self,
        cfg: &SimConfig,
        kernels: &[Kernel],
        observer: &mut dyn Observer,
    ) -> Result<Option<Report>, SimError> {
        let result = match &mut self.inner {
            Inner::Plain(p) => p.step(cfg, kernels, observer),
            Inner::Timed(t) => t.step(cfg, kernels, observer),
            Inner::Over => return Ok(None),
        };
        if !matches!(result, Ok(None)) {
            self.inner = Inner::Over;
        }
        result
    }

    /// Accesses simulated so far, where the run counts them as it goes (without the timing
    /// model): a session reports its progress to the observer only now and then.
    pub fn accesses_done(&self) -> Option<u64> {
        match &self.inner {
            Inner::Plain(p) => p.session.as_ref().map(Session::accesses_done),
            _ => None,
        }
    }
}

impl Plain {
    fn step(
        &mut self,
        cfg: &SimConfig,
        kernels: &[Kernel],
        observer: &mut dyn Observer,
    ) -> Result<Option<Report>, SimError> {
        let session = match &mut self.session {
            Some(s) => s,
            None => {
                let total = kernels.iter().map(|k| k.len() as u64).sum();
                self.session.insert(Session::new(cfg, total)?)
            }
        };
        let Some(k) = kernels.get(self.kernel) else {
            return match self.session.take() {
                Some(s) => Ok(Some(s.finish(observer))),
                None => Ok(None),
            };
        };
        self.at = match std::mem::replace(&mut self.at, At::Start) {
            At::Start if k.is_reference_stream() => {
                session.begin_kernel(k, observer)?;
                At::Rows { next: 0 }
            }
            At::Start => At::Whole(Box::new(session.begin_whole(k, observer)?)),
            At::Whole(mut w) => {
                if session.whole_go_on(&mut w, k, WARP_INSTRUCTIONS, observer)? {
                    session.end_whole(*w, k);
                    self.kernel += 1;
                    At::Start
                } else {
                    At::Whole(w)
                }
            }
            At::Rows { next } if next < k.len() => {
                let end = (next + CHUNK_ROWS).min(k.len());
                if !session.feed_range(k.columns(), next..end, observer) {
                    return Err(SimError::Cancelled);
                }
                At::Rows { next: end }
            }
            At::Rows { .. } => {
                session.end_kernel(observer)?;
                self.kernel += 1;
                At::Start
            }
        };
        Ok(None)
    }
}

#[cfg(test)]
#[path = "steps_tests.rs"]
mod tests;
