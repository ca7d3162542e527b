//! A pane's simulation of a trace file too large to hold (`TraceData::streamed`): one thread
//! reads the file while the job's thread simulates, through `shell::lanes` as `warpscope sim`
//! does, and [`Gather`] keeps what the views draw (a sample, exact counts, previews). Also the
//! detail of a window of such a run: the file read again up to the window's end, keeping
//! every request in it. The timing model's runs take each CTA's warp streams as they are built
//! from the file, while it is read ([`run_timed`]).

use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use warpscope_core::config::SimConfig;
use warpscope_core::sim;
use warpscope_core::trace;
use warpscope_shell::{lanes, policy};

use super::data::checkpoints::{Checkpoint, Checkpoints};
use super::data::{Gather, Preview, SimData, TraceData};
use super::job::{Finished, JobError, Progress};
use super::worker::{error_chain, watching, Loaded};

/// Opens a trace file to be streamed: checks that it opens (format, first bytes) and keeps
/// its path; nothing of it is read yet.
pub fn open(path: &Path, format: Option<trace::Format>, size: u64) -> Finished<Loaded> {
    let opts = trace::ReadOptions {
        format,
        allow_truncated: false,
    };
    let open = trace::open_trace(path, opts, &|s| s, &|s| s)
        .map_err(|e| JobError::Failed(e.to_string()))?;
    let label = format!("{} (streamed)", super::file_name(path));
    Ok(Loaded::Trace(Arc::new(TraceData::streamed(
        path.to_path_buf(),
        open.format,
        label,
        size,
    ))))
}

/// Runs the trace through a session into `gather`, from its start or on from the copy `from`
/// of a session ([`Checkpoint`]): the session, or `None` when `gather` stopped the run on
/// purpose (past its window).
///
/// A file whose kernels' instructions are known only at their ends (NVBit, Accel-Sim) is read
/// once, the instructions taken as they are found, so the first requests show at once. Where
/// that read cannot go on (launches that interleave, thread blocks out of CTA order), the run
/// starts again reading the file in two passes.
fn run(
    config: &SimConfig,
    trace: &TraceData,
    progress: &Arc<Progress>,
    gather: &mut Gather,
    from: Option<&Checkpoint>,
) -> Result<Option<sim::Session>, JobError> {
    let ran = policy::once_else_twice(
        |as_found| {
            if !as_found {
                gather.start_again();
                progress.report(0, 0);
            }
            match run_as(config, trace, progress, gather, from, as_found) {
                Ok(Ran::Done(s)) => Ok(s),
                Ok(Ran::ReadAgain) => Err(None),
                Err(e) => Err(Some(e)),
            }
        },
        Option::is_none,
        |_| {},
    );
    ran.map(|s| s.map(|s| *s)).map_err(|e| {
        e.unwrap_or_else(|| {
            JobError::Failed("the file could not be read in two passes either".into())
        })
    })
}

/// A streamed trace's file and its bytes on disk.
fn file_of(trace: &TraceData) -> Result<(&Path, u64), JobError> {
    match (trace.path.as_deref(), trace.streamed) {
        (Some(path), Some(bytes)) => Ok((path, bytes)),
        _ => Err(JobError::Failed("a streamed trace without its file".into())),
    }
}

/// The most accesses whose warps' streams the timing model holds at once on a streamed trace:
/// those of the CTAs in flight (where the requests of several SMs are shown, the later SMs'
/// wait in temporary files, not in memory); past this the trace is refused with the CLI to
/// use.
const TIMED_MAX_ROWS: u64 = 1 << 27;

/// Runs the timing model on the streamed trace into `gather`: one thread reads the file, one
/// builds each CTA's warp streams as its rows come, and the model's runs take them as they
/// are built (the trace is never held whole: `shell::timed::run_streamed`). A trace whose
/// streams held at once would pass `max_rows` accesses is refused as the read passes them.
/// The report, or `None` when `gather` stopped the run on purpose (past its window). The
/// progress counts the bytes read, then the model's accesses.
fn run_timed(
    config: &SimConfig,
    trace: &TraceData,
    progress: &Arc<Progress>,
    gather: &mut Gather,
    max_rows: u64,
) -> Result<Option<sim::Report>, JobError> {
    let (path, bytes) = file_of(trace)?;
    let ran = policy::once_else_twice(
        |as_found| {
            if !as_found {
                gather.start_again();
                progress.report(0, 0);
            }
            let opts = trace::ReadOptions {
                format: trace.format,
                allow_truncated: false,
            };
            let watch = watching(progress);
            let open = trace::open_trace(path, opts, &|s| s, &watch)
                .map_err(|e| Some(JobError::Failed(e.to_string())))?;
            progress.set_total(bytes * open.streamed_reads(as_found));
            let src = lanes::file_source(open, |s| s, watch, as_found);
            let mut reading = Reading(progress);
            let mut counted = Counted {
                gather: &mut *gather,
                progress,
            };
            let run = warpscope_shell::timed::run_streamed(
                config,
                src.source,
                src.depth,
                &mut reading,
                &mut counted,
                0,
                Some(max_rows),
            );
            match run {
                Ok(report) => Ok(Some(report)),
                Err(_) if progress.cancelled() => Err(Some(JobError::Cancelled)),
                Err(_) if gather.past_window => Ok(None),
                Err(lanes::Failure::Other(e)) if as_found && lanes::must_read_again(&e) => {
                    Err(None)
                }
                Err(lanes::Failure::Session(_, e))
                    if e == warpscope_shell::timed::too_many_rows(max_rows) =>
                {
                    Err(Some(JobError::Failed(format!(
                        "{}; use `warpscope sim --timing` on it",
                        error_chain(&e)
                    ))))
                }
                Err(lanes::Failure::Session(_, e)) => Err(Some(JobError::Failed(error_chain(&e)))),
                Err(lanes::Failure::Other(e)) => Err(Some(JobError::Failed(format!("{e:#}")))),
            }
        },
        Option::is_none,
        |_| {},
    );
    ran.map_err(|e| {
        e.unwrap_or_else(|| {
            JobError::Failed("the file could not be read in two passes either".into())
        })
    })
}

/// Progress while the timing model's trace is read: the bytes are counted as they are read
/// (`watching`); this stops the read when the job is cancelled.
struct Reading<'a>(&'a Progress);

impl sim::Observer for Reading<'_> {
    fn wants_requests(&self) -> bool {
        false
    }
    fn progress(&mut self, _done: u64, _total: u64) -> bool {
        !self.0.cancelled()
    }
}

/// [`Gather`], with the progress of the timing model's accesses (a streamed run counts the
/// bytes read instead).
struct Counted<'g, 'a> {
    gather: &'g mut Gather<'a>,
    progress: &'g Progress,
}

impl sim::Observer for Counted<'_, '_> {
    fn on_kernel(&mut self, kernel: u32, header: &trace::Kernel) {
        self.gather.on_kernel(kernel, header);
    }
    fn on_request(&mut self, e: &sim::RequestEvent) {
        self.gather.on_request(e);
    }
    fn wants_requests(&self) -> bool {
        self.gather.wants_requests()
    }
    fn progress(&mut self, done: u64, total: u64) -> bool {
        self.progress.report(done, total);
        self.gather.progress(done, total)
    }
}

/// How a run ended.
enum Ran {
    /// As [`run`] gives it.
    Done(Option<Box<sim::Session>>),
    /// Its read, taking instructions as they were found, must start again.
    ReadAgain,
}

/// [`run`], taking instructions as they are found where `as_found`.
fn run_as(
    config: &SimConfig,
    trace: &TraceData,
    progress: &Arc<Progress>,
    gather: &mut Gather,
    from: Option<&Checkpoint>,
    as_found: bool,
) -> Result<Ran, JobError> {
    let (path, bytes) = file_of(trace)?;
    let path = path.to_path_buf();
    let watch = watching(progress);
    let (session, src) = match from.and_then(|c| Some((c.session.snapshot()?, c))) {
        Some((mut session, c)) => {
            progress.set_total(trace::bytes_to_read_on(&path, bytes, &c.at, as_found));
            gather.requests = c.requests;
            let name = path.display().to_string();
            let src =
                lanes::resumed_source(path, name, c.at.clone(), &mut session, watch, as_found)
                    .map_err(|e| JobError::Failed(format!("{e:#}")))?;
            (session, src)
        }
        None => {
            let session = sim::Session::new(config, 0)
                .map_err(|e| JobError::Failed(error_chain(&e)))?
                .streamed();
            let opts = trace::ReadOptions {
                format: trace.format,
                allow_truncated: false,
            };
            let open = trace::open_trace(&path, opts, &|s| s, &watch)
                .map_err(|e| JobError::Failed(e.to_string()))?;
            progress.set_total(bytes * open.streamed_reads(as_found));
            // The detail of a window keeps no copies.
            let every = match gather.window {
                Some(_) => u64::MAX,
                None => gather.checkpoints.every,
            };
            (
                session,
                lanes::resumable_file_source(open, watch, as_found, every),
            )
        }
    };
    match lanes::run(vec![session], 1, src.depth, gather, src.source) {
        Ok(mut s) => s
            .pop()
            .map(|s| Ran::Done(Some(Box::new(s))))
            .ok_or_else(|| JobError::Failed("the simulation was lost".into())),
        Err(_) if progress.cancelled() => Err(JobError::Cancelled),
        Err(_) if gather.past_window => Ok(Ran::Done(None)),
        Err(lanes::Failure::Other(e)) if lanes::must_read_again(&e) => Ok(Ran::ReadAgain),
        Err(lanes::Failure::Session(_, e)) => Err(JobError::Failed(error_chain(&e))),
        Err(lanes::Failure::Other(e)) => Err(JobError::Failed(format!("{e:#}"))),
    }
}

/// Simulates a streamed trace, leaving previews in `preview` as it goes.
pub fn simulate(
    config: SimConfig,
    trace: &TraceData,
    progress: &Arc<Progress>,
    preview: Option<Preview>,
) -> Finished<Arc<SimData>> {
    simulate_keeping(config, trace, progress, preview, Checkpoints::default())
}

/// [`simulate`], keeping copies of the session to zoom from as `checkpoints` says (tests take
/// them often).
pub fn simulate_keeping(
    config: SimConfig,
    trace: &TraceData,
    progress: &Arc<Progress>,
    preview: Option<Preview>,
    checkpoints: Checkpoints,
) -> Finished<Arc<SimData>> {
    let mut gather = Gather::new(&config, progress);
    gather.checkpoints = checkpoints;
    gather.checkpoints.stamp = trace.path.as_deref().map(warpscope_shell::trace_stamp);
    if let Some(p) = preview {
        gather = gather.with_preview(p);
    }
    let report = if config.timing.is_some() {
        run_timed(&config, trace, progress, &mut gather, TIMED_MAX_ROWS)?
    } else {
        run(&config, trace, progress, &mut gather, None)?.map(|s| s.finish(&mut gather))
    };
    let Some(report) = report else {
        return Err(JobError::Failed("the run stopped early".into()));
    };
    let mut data = SimData::streamed(config, report, &gather, None);
    data.checkpoints = Arc::new(std::mem::take(&mut gather.checkpoints));
    Ok(Arc::new(data))
}

/// The detail of `window` (request numbers) of the streamed run `whole`: the file is read again
/// up to the window's end, from the latest copy of the session taken before the window
/// (`data/checkpoints.rs`) or else from its start, and every request in it is kept (a regular
/// sample of them when they are more than the sample holds). What the whole run counted stays
/// `whole`'s. A trace whose files changed since the run is refused.
pub fn simulate_window(
    trace: &TraceData,
    progress: &Arc<Progress>,
    whole: Arc<SimData>,
    window: Range<u64>,
) -> Finished<Arc<SimData>> {
    if let (Some(path), Some(then)) = (&trace.path, whole.checkpoints.stamp) {
        if warpscope_shell::trace_stamp(path) != then {
            return Err(JobError::Failed(format!(
                "{}: the trace changed since its run was simulated (its size or last change \
                 time differs), so a detail would not match the run: simulate it again",
                path.display()
            )));
        }
    }
    let mut gather = Gather::new(&whole.config, progress);
    let from = whole.checkpoints.before(window.start);
    gather.window = Some(window);
    if whole.config.timing.is_some() {
        // The timing model's run keeps no copies: it runs again up to the window's end.
        run_timed(&whole.config, trace, progress, &mut gather, TIMED_MAX_ROWS)?;
    } else if let Some(session) = run(&whole.config, trace, progress, &mut gather, from)? {
        // The trace ended inside the window: its last warp instruction is simulated at the end.
        session.finish(&mut gather);
    }
    Ok(Arc::new(SimData::window_of(&whole, &gather)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The timing model streams a file, plain or compressed, into the report of the trace
    /// read whole, holding the streams of only the CTAs in flight; a trace whose streams
    /// would pass the cap is refused as the read passes it.
    #[test]
    fn the_timing_model_streams_a_trace_holding_only_the_ctas_in_flight() {
        let dir = tempfile::tempdir().unwrap();
        // 64 CTAs of 16 threads.
        let params = [
            ("n".to_string(), "32".to_string()),
            ("block".to_string(), "4,4".to_string()),
        ];
        let t = warpscope_core::gen::generate("matmul", &params).unwrap();
        let plain = dir.path().join("m.wsb");
        trace::write_file(&t, &plain).unwrap();
        let packed = dir.path().join("m.wsb.zst");
        let bytes = std::fs::read(&plain).unwrap();
        std::fs::write(&packed, zstd::encode_all(&bytes[..], 3).unwrap()).unwrap();
        let packed_bytes = std::fs::metadata(&packed).unwrap().len();
        let ours = warpscope_core::config::preset("gtx470-16k").unwrap();
        let mut released = ours.clone();
        warpscope_core::config::compat(&mut released, "gpu-cache-model").unwrap();
        let timed = |cfg: &SimConfig, path: &Path, size: u64, cap: u64| {
            let streamed =
                TraceData::streamed(path.to_path_buf(), trace::Format::Binary, "t".into(), size);
            let progress = Arc::new(Progress::default());
            let mut gather = Gather::new(cfg, &progress);
            run_timed(cfg, &streamed, &progress, &mut gather, cap)
        };
        let rows = t.total_accesses() as u64;
        for cfg in [&ours, &released] {
            let whole =
                warpscope_shell::timed::simulate(cfg, &t.kernels, &mut sim::NoObserver, 1).unwrap();
            for (path, size) in [(&plain, bytes.len() as u64), (&packed, packed_bytes)] {
                // Half the trace's accesses are room enough: its CTAs come and go.
                let r = timed(cfg, path, size, rows / 2).unwrap().unwrap();
                assert_eq!(r, whole);
                // A cap below one CTA: refused, with the CLI to use.
                let m = match timed(cfg, path, size, 1) {
                    Err(JobError::Failed(m)) => m,
                    other => panic!("{:?}", other.map(|_| ())),
                };
                assert!(
                    m.contains("more than 1 accesses at once") && m.contains("sim --timing"),
                    "{m}"
                );
            }
        }
    }

    /// A streamed timing run with more requests than its sample holds is drawn at its cycles
    /// as well: its sample is every stride-th request, each at the cycle the run keeping
    /// every request gives it (the kernels placed by all their requests, not the sample's);
    /// a window's detail is drawn at the same cycles; the detail of a view of cycles reads
    /// every request drawn in that view on one SM, and no more than the drawn ones' range.
    #[test]
    fn a_streamed_timing_runs_sample_is_drawn_at_its_cycles() {
        use crate::data::XAxis;
        let dir = tempfile::tempdir().unwrap();
        let params = [
            ("n".to_string(), "32".to_string()),
            ("block".to_string(), "4,4".to_string()),
        ];
        let mut t = warpscope_core::gen::generate("matmul", &params).unwrap();
        // Two launches, so that the second kernel's place on the axis counts.
        t.kernels.push(t.kernels[0].clone());
        let path = dir.path().join("m.wsb");
        trace::write_file(&t, &path).unwrap();
        let size = std::fs::metadata(&path).unwrap().len();
        let streamed = TraceData::streamed(path, trace::Format::Binary, "t".into(), size);
        let cfg = warpscope_core::config::preset("gtx470-16k").unwrap();
        assert!(cfg.timing.is_some());
        let progress = Arc::new(Progress::default());
        let gathered = |cap: usize, window: Option<std::ops::Range<u64>>| {
            let mut g = Gather::new(&cfg, &progress);
            g.cap = cap;
            g.window = window;
            let r = run_timed(&cfg, &streamed, &progress, &mut g, u64::MAX).unwrap();
            (r, g.sample(usize::MAX).0.len(), g)
        };
        let (report, _, g) = gathered(usize::MAX, None);
        let report = report.unwrap();
        let every = SimData::streamed(cfg.clone(), report.clone(), &g, None);
        let XAxis::Time {
            x: every_x,
            stride: 1,
            ..
        } = &every.x
        else {
            panic!("every request at its cycle")
        };
        let total = report.totals.requests;
        assert_eq!(every_x.len() as u64, total);
        let (_, kept, g) = gathered(total as usize / 5, None);
        let sample = SimData::streamed(cfg.clone(), report.clone(), &g, None);
        let XAxis::Time { x, stride, end, .. } = &sample.x else {
            panic!("a sample at its cycles")
        };
        assert!(*stride >= 8 && kept as u64 == total.div_ceil(*stride));
        let want: Vec<u64> = every_x.iter().step_by(*stride as usize).copied().collect();
        assert_eq!(x, &want);
        assert!(*end <= every.x_end() as u64);
        assert_eq!(sample.request_number(3), 3 * stride);
        assert!(sample.x_label().contains("sample"));
        // A window's detail, sampled in turn, at the whole run's cycles.
        let window = total / 3..total / 3 + 40;
        let (_, _, g) = gathered(10, Some(window.clone()));
        let detail = SimData::window_of(&sample, &g);
        let XAxis::Time {
            x: dx,
            stride: ds,
            start,
            ..
        } = &detail.x
        else {
            panic!("a detail at its cycles")
        };
        assert_eq!((*start, *ds), (window.start, 4));
        let want: Vec<u64> = every_x[window.start as usize..window.end as usize]
            .iter()
            .step_by(4)
            .copied()
            .collect();
        assert_eq!(dx, &want);
        assert_eq!(detail.x_start(), *want.iter().min().unwrap() as f64);
        // A view of a tenth of the requests drawn: its detail holds every request there.
        let mut sorted = x.clone();
        sorted.sort_unstable();
        let at = |f: f64| sorted[(sorted.len() as f64 * f) as usize] as f64;
        let (x0, x1) = (at(0.4), at(0.5));
        let (lo, hi) = sample.requests_in_view(x0, x1, total).unwrap();
        let inside: Vec<u64> = (0..total)
            .filter(|&r| (x0..=x1).contains(&(every_x[r as usize] as f64)))
            .collect();
        assert!(inside.len() as u64 > 2 * stride);
        assert!(
            lo <= inside[0] && hi > *inside.last().unwrap(),
            "{lo}..{hi}"
        );
        assert!(hi - lo < inside.len() as u64 + 2 * stride);
        assert_eq!(sample.requests_in_view(-5.0, -1.0, total), None);
    }

    /// A detail read on from a place in a plain `din` file reads the file from there; in a
    /// compressed one, the whole file (decompressed again up to the place).
    #[test]
    fn a_detail_read_on_counts_the_bytes_it_reads() {
        let dir = tempfile::tempdir().unwrap();
        let text: String = (0..5000)
            .map(|i| format!("0 {:x}\n", 0x1000 + 8 * i))
            .collect();
        let plain = dir.path().join("t.din");
        let packed = dir.path().join("t.din.zst");
        std::fs::write(&plain, &text).unwrap();
        std::fs::write(&packed, zstd::encode_all(text.as_bytes(), 3).unwrap()).unwrap();
        let mut reader = trace::din::Reader::new(text.as_bytes(), "t.din");
        let mut rows = trace::Columns::default();
        assert!(reader.next_chunk(&mut rows, 1000).unwrap());
        let at = reader.resume_point();
        assert!(at.offset > 0);
        let size = |p: &Path| std::fs::metadata(p).unwrap().len();
        let place = trace::ResumePoint::Din(at);
        assert_eq!(
            trace::bytes_to_read_on(&plain, size(&plain), &place, false),
            size(&plain) - at.offset
        );
        assert_eq!(
            trace::bytes_to_read_on(&packed, size(&packed), &place, false),
            size(&packed)
        );
    }
}
