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
    First(Box<FirstStage>),
    Second(Box<SecondStage>),
    Over,
}

/// The first pass at launch `l`, and the launch begun with the next row to replay.
struct FirstStage {
    numbers: Numbers,
    first: FirstPass,
    l: usize,
    launch: Option<(Launch, usize)>,
}

/// The second pass at launch `l`, likewise.
struct SecondStage {
    numbers: Numbers,
    found: FirstPassResult,
    pass: StridePass,
    l: usize,
    launch: Option<(StrideLaunch, usize)>,
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
        let r = self.advance(trace, progress);
        if !matches!(r, Ok(None)) {
            self.stage = Stage::Over;
        }
        r
    }

    fn advance(
        &mut self,
        trace: &Trace,
        progress: &mut dyn FnMut(u64, u64) -> bool,
    ) -> Result<Option<CommReport>, CommError> {
        let total = 2 * trace.total_accesses() as u64;
        let (rows, done) = (self.rows, &mut self.done);
        match &mut self.stage {
            Stage::Start => {
                let numbers = Numbers::new(trace)?;
                let first = FirstPass::new(trace, &numbers);
                self.stage = Stage::First(Box::new(FirstStage {
                    numbers,
                    first,
                    l: 0,
                    launch: None,
                }));
            }
            Stage::First(p) => {
                let p = &mut **p;
                let Some(k) = trace.kernels.get(p.l) else {
                    if let Stage::First(p) = std::mem::replace(&mut self.stage, Stage::Over) {
                        let FirstStage { numbers, first, .. } = *p;
                        self.stage = Stage::Second(Box::new(SecondStage {
                            numbers,
                            found: first.finish(),
                            pass: StridePass::default(),
                            l: 0,
                            launch: None,
                        }));
                    }
                    return Ok(None);
                };
                match &mut p.launch {
                    None => p.launch = Some((p.first.begin(p.l, k), 0)),
                    Some((launch, next)) if *next < k.len() => {
                        let to = next.saturating_add(rows).min(k.len());
                        p.first.rows(launch, k, *next..to, done, total, progress)?;
                        *next = to;
                    }
                    Some(_) => {
                        if let Some((launch, _)) = p.launch.take() {
                            p.first.end(launch, k);
                        }
                        p.l += 1;
                    }
                }
            }
            Stage::Second(p) => {
                let p = &mut **p;
                let Some(k) = trace.kernels.get(p.l) else {
                    progress(total, total);
                    if let Stage::Second(p) = std::mem::replace(&mut self.stage, Stage::Over) {
                        let SecondStage {
                            numbers,
                            found,
                            pass,
                            ..
                        } = *p;
                        return Ok(Some(summarize(trace, &numbers, found, pass)));
                    }
                    return Ok(None);
                };
                match &mut p.launch {
                    None => {
                        let at = p.found.retired_at.get(p.l).copied().unwrap_or(0)
                            ..p.found.retired_at.get(p.l + 1).copied().unwrap_or(0);
                        let (numbers, retired) = (&p.numbers, &p.found.retired);
                        match StridePass::begin(numbers, p.l, k, retired, at) {
                            Some(launch) => p.launch = Some((launch, 0)),
                            None => {
                                // Nothing it wrote was communicated: nothing to walk.
                                *done += k.len() as u64;
                                p.l += 1;
                            }
                        }
                    }
                    Some((launch, next)) if *next < k.len() => {
                        let to = next.saturating_add(rows).min(k.len());
                        let retired = &p.found.retired;
                        p.pass
                            .rows(launch, k, retired, *next..to, done, total, progress)?;
                        *next = to;
                    }
                    Some(_) => {
                        p.launch = None;
                        p.l += 1;
                    }
                }
            }
            Stage::Over => {}
        }
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
