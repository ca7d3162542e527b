//! The analysis as a sequence of pieces ([`Analyzing`]): the writer numbers, then each
//! launch of the first pass begun, its rows replayed a range at a time and ended, the pass
//! finished, each launch of the second pass likewise, and the report. [`super::analyze`]
//! takes whole launches; a caller that must not hold its thread long (the web build's page,
//! between frames) takes [`PIECE_ROWS`] rows at a time. Same walk, same result (tested in
//! `tests`).

use super::first_pass::{FirstPass, FirstPassResult, Launch};
use super::passes::{StrideLaunch, StridePass};
use super::report::{self, CommError, CommReport};
use super::transfers::{in_order, Numbers};
use crate::trace::{Dim3, Trace};

/// Rows of a launch one piece walks, in pieces: a few milliseconds.
pub const PIECE_ROWS: usize = 1 << 16;

/// The analysis of a trace being done, a piece per [`Analyzing::step`].
pub struct Analyzing {
    rows: usize,
    done: u64,
    stage: Stage,
}

enum Stage {
    Start,
    /// The first pass at launch `l`, and the launch begun with the next row to replay.
    First {
        numbers: Numbers,
        first: Box<FirstPass>,
        l: usize,
        launch: Option<(Box<Launch>, usize)>,
    },
    /// The second pass at launch `l`, likewise.
    Second {
        numbers: Numbers,
        found: Box<FirstPassResult>,
        pass: Box<StridePass>,
        l: usize,
        launch: Option<(Box<StrideLaunch>, usize)>,
    },
    Over,
}

impl Analyzing {
    /// The analysis, `rows_per_piece` rows of a launch at a time at most (`usize::MAX`: whole
    /// launches).
    pub fn new(rows_per_piece: usize) -> Self {
        Analyzing {
            rows: rows_per_piece.max(1),
            done: 0,
            stage: Stage::Start,
        }
    }

    /// Does the next piece of the analysis of `trace` (the same trace each time); the report
    /// after the last. `progress(done, total)` is called every few tens of thousands of
    /// accesses (two passes: `total` is twice the accesses); returning `false` cancels. After
    /// the report, or an error, it does nothing more (`Ok(None)`).
    pub fn step(
        &mut self,
        trace: &Trace,
        progress: &mut dyn FnMut(u64, u64) -> bool,
    ) -> Result<Option<CommReport>, CommError> {
        let total = 2 * trace.total_accesses() as u64;
        let (rows, done) = (self.rows, &mut self.done);
        self.stage = match std::mem::replace(&mut self.stage, Stage::Over) {
            Stage::Start => {
                let numbers = Numbers::new(trace)?;
                let first = Box::new(FirstPass::new(trace, &numbers));
                Stage::First {
                    numbers,
                    first,
                    l: 0,
                    launch: None,
                }
            }
            Stage::First {
                numbers,
                mut first,
                mut l,
                launch,
            } => match (trace.kernels.get(l), launch) {
                (None, _) => Stage::Second {
                    numbers,
                    found: Box::new(first.finish()),
                    pass: Box::default(),
                    l: 0,
                    launch: None,
                },
                (Some(k), None) => {
                    let launch = Some((Box::new(first.begin(l, k)), 0));
                    Stage::First {
                        numbers,
                        first,
                        l,
                        launch,
                    }
                }
                (Some(k), Some((mut launch, next))) => {
                    let launch = if next < k.len() {
                        let to = next.saturating_add(rows).min(k.len());
                        first.rows(&mut launch, k, next..to, done, total, progress)?;
                        Some((launch, to))
                    } else {
                        first.end(*launch, k);
                        l += 1;
                        None
                    };
                    Stage::First {
                        numbers,
                        first,
                        l,
                        launch,
                    }
                }
            },
            Stage::Second {
                numbers,
                found,
                mut pass,
                mut l,
                launch,
            } => match (trace.kernels.get(l), launch) {
                (None, _) => {
                    progress(total, total);
                    return Ok(Some(summarize(trace, &numbers, *found, *pass)));
                }
                (Some(k), None) => {
                    let at = found.retired_at.get(l).copied().unwrap_or(0)
                        ..found.retired_at.get(l + 1).copied().unwrap_or(0);
                    let launch = StridePass::begin(&numbers, l, k, &found.retired, at);
                    let launch = match launch {
                        Some(launch) => Some((Box::new(launch), 0)),
                        None => {
                            // Nothing it wrote was communicated: nothing to walk.
                            *done += k.len() as u64;
                            l += 1;
                            None
                        }
                    };
                    Stage::Second {
                        numbers,
                        found,
                        pass,
                        l,
                        launch,
                    }
                }
                (Some(k), Some((mut launch, next))) => {
                    let launch = if next < k.len() {
                        let to = next.saturating_add(rows).min(k.len());
                        let retired = &found.retired;
                        pass.rows(&mut launch, k, retired, next..to, done, total, progress)?;
                        Some((launch, to))
                    } else {
                        l += 1;
                        None
                    };
                    Stage::Second {
                        numbers,
                        found,
                        pass,
                        l,
                        launch,
                    }
                }
            },
            Stage::Over => Stage::Over,
        };
        Ok(None)
    }
}

/// The report, from what the two passes found.
fn summarize(
    trace: &Trace,
    numbers: &Numbers,
    found: FirstPassResult,
    pass: StridePass,
) -> CommReport {
    let FirstPassResult {
        into,
        into_at,
        per_launch,
        load_strides,
        ..
    } = found;
    let grids: Vec<Dim3> = trace.kernels.iter().map(|k| k.grid).collect();
    report::summarize(
        trace,
        in_order(&into, &into_at, numbers, &grids),
        per_launch,
        load_strides,
        pass.hist,
    )
}
