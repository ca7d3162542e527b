//! The timing model on several threads. Its runs (the full model and the three comparison
//! runs that classify misses) and its simulated SMs share nothing but the warps' streams, so
//! the core splits the work into jobs ([`TimedPlan`]) and this shell runs them side by side.
//! For a trace held whole ([`run`]) the warps' streams, built once for every job, are built
//! in parts side by side too; the calling thread runs the full model's jobs, in order, with
//! the caller's observer (it sees their requests as the one-thread run gives them), then
//! helps with the rest; the report is built from the results in job order, so it is the same
//! for any thread count. For a trace read from its source, the jobs run while it is read,
//! each CTA's streams built as its rows come and let go once every job has run it
//! ([`run_streamed`], `streamed.rs`).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

use warpscope_core::config::SimConfig;
use warpscope_core::sim::{JobResult, Observer, Report, SimError, StreamsWork, TimedPlan};
use warpscope_core::timing::WarpStreams;
use warpscope_core::trace::Kernel;

mod spool;
mod streamed;
pub use streamed::run_streamed;

/// Runs the timing model on `launches` with up to `threads` threads (0: one per core): the
/// same report and the same requests, in the same order, as [`warpscope_core::sim::run_kernels`].
pub fn run(
    cfg: &SimConfig,
    launches: &[Kernel],
    observer: &mut dyn Observer,
    threads: usize,
) -> Result<Report, SimError> {
    let cores = super::lanes::cores(threads).max(1);
    let plan = TimedPlan::new_with(cfg, launches, cores as u32, &mut |works| {
        spread(works, cores)
    })?;
    run_plan(plan, observer, cores)
}

/// The error of a trace refused by [`run_streamed`] because the warps' streams it would
/// hold at once pass `max` accesses.
pub fn too_many_rows(max: u64) -> SimError {
    SimError::Config(format!(
        "the timing model's streams of this trace would take too much memory here: it would \
         hold more than {max} accesses at once"
    ))
}

/// Runs `plan`'s jobs on up to `cores` threads.
fn run_plan(
    plan: TimedPlan,
    observer: &mut dyn Observer,
    cores: usize,
) -> Result<Report, SimError> {
    plan.announce(observer);
    let jobs = plan.jobs();
    let threads = cores.min(jobs.max(1));
    let shared = Shared {
        next: AtomicUsize::new(plan.full_jobs()),
        rows: AtomicU64::new(0),
        stop: AtomicBool::new(false),
        results: Mutex::new((0..jobs).map(|_| None).collect()),
    };
    std::thread::scope(|s| {
        for _ in 1..threads {
            s.spawn(|| shared.help(&plan, None));
        }
        for j in 0..plan.full_jobs() {
            if shared.stop.load(Ordering::Relaxed) {
                break;
            }
            shared.run(&plan, j, Some(&mut *observer));
        }
        shared.help(&plan, Some(observer));
    });
    let results = shared
        .results
        .into_inner()
        .map_err(|_| SimError::Config("a thread of the timing model failed".into()))?;
    let (done, cancelled) = gather_results(results)?;
    if cancelled {
        return Err(SimError::Cancelled);
    }
    plan.finish(done, observer)
}

/// The jobs' results in job order, and whether any stopped (or never reported); the first
/// failure other than a stop, if any: a job stopped because another failed reports the
/// failure, not the stop.
fn gather_results(
    results: Vec<Option<Result<JobResult, SimError>>>,
) -> Result<(Vec<JobResult>, bool), SimError> {
    let mut done = Vec::with_capacity(results.len());
    let mut cancelled = false;
    for r in results {
        match r {
            Some(Ok(r)) => done.push(r),
            Some(Err(SimError::Cancelled)) | None => cancelled = true,
            Some(Err(e)) => return Err(e),
        }
    }
    Ok((done, cancelled))
}

/// Runs `works` on up to `threads` threads; their results in order.
fn spread(works: Vec<StreamsWork>, threads: usize) -> Vec<Result<WarpStreams, SimError>> {
    let n = works.len();
    let works: Vec<Mutex<Option<StreamsWork>>> =
        works.into_iter().map(|w| Mutex::new(Some(w))).collect();
    let results: Vec<Mutex<Option<Result<WarpStreams, SimError>>>> =
        (0..n).map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    let work = || loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        let Some(slot) = works.get(i) else { break };
        let w = slot.lock().ok().and_then(|mut w| w.take());
        if let (Some(w), Ok(mut r)) = (w, results[i].lock()) {
            *r = Some(w());
        }
    };
    std::thread::scope(|s| {
        for _ in 1..threads.min(n) {
            s.spawn(work);
        }
        work();
    });
    results
        .into_iter()
        .map(|r| {
            r.into_inner().ok().flatten().unwrap_or_else(|| {
                Err(SimError::Config(
                    "a thread of the timing model failed".into(),
                ))
            })
        })
        .collect()
}

/// What the threads share: the next job not taken (the full model's are the caller's), rows
/// done by every job, whether to stop, and the results by job.
struct Shared {
    next: AtomicUsize,
    rows: AtomicU64,
    stop: AtomicBool,
    results: Mutex<Vec<Option<Result<JobResult, SimError>>>>,
}

impl Shared {
    /// Takes jobs until none is left or the run stops; `caller`: the caller's observer, on
    /// the calling thread.
    fn help(&self, plan: &TimedPlan, mut caller: Option<&mut (dyn Observer + '_)>) {
        while !self.stop.load(Ordering::Relaxed) {
            let j = self.next.fetch_add(1, Ordering::Relaxed);
            if j >= plan.jobs() {
                break;
            }
            self.run(plan, j, caller.as_deref_mut());
        }
    }

    fn run(&self, plan: &TimedPlan, j: usize, caller: Option<&mut (dyn Observer + '_)>) {
        let mut counted = Counted {
            caller,
            shared: self,
            reported: 0,
        };
        let r = plan.run_job(j, 0, &mut counted);
        if let Ok(done) = &r {
            self.add(done.rows() - counted.reported.min(done.rows()));
        } else {
            self.stop.store(true, Ordering::Relaxed);
        }
        if let Ok(mut results) = self.results.lock() {
            results[j] = Some(r);
        }
    }

    fn add(&self, rows: u64) -> u64 {
        self.rows.fetch_add(rows, Ordering::Relaxed) + rows
    }
}

/// One job's observer: its rows go to the shared count, which is what progress shows. On
/// the calling thread it passes the requests (a full model's job) and the progress of every
/// job on to the caller's observer, whose `false` stops every thread.
struct Counted<'a, 'o> {
    caller: Option<&'a mut (dyn Observer + 'o)>,
    shared: &'a Shared,
    /// Rows of this job already added.
    reported: u64,
}

impl Observer for Counted<'_, '_> {
    fn on_request(&mut self, event: &warpscope_core::sim::RequestEvent) {
        if let Some(o) = self.caller.as_deref_mut() {
            o.on_request(event);
        }
    }
    fn on_l2(&mut self, event: &warpscope_core::l2::L2Event) {
        if let Some(o) = self.caller.as_deref_mut() {
            o.on_l2(event);
        }
    }
    fn wants_requests(&self) -> bool {
        self.caller.as_deref().is_some_and(|o| o.wants_requests())
    }
    fn progress(&mut self, rows: u64, total: u64) -> bool {
        let all = self.shared.add(rows.saturating_sub(self.reported));
        self.reported = self.reported.max(rows);
        if let Some(o) = self.caller.as_deref_mut() {
            if !o.progress(all, total) {
                self.shared.stop.store(true, Ordering::Relaxed);
            }
        }
        !self.shared.stop.load(Ordering::Relaxed)
    }
}

/// [`warpscope_core::sim::run_kernels`], with the timing model's jobs spread over `threads` threads
/// (0: one per core) when `cfg` asks for the timing model.
pub fn simulate(
    cfg: &SimConfig,
    launches: &[Kernel],
    observer: &mut dyn Observer,
    threads: usize,
) -> Result<Report, SimError> {
    if cfg.timing.is_some() {
        run(cfg, launches, observer, threads)
    } else {
        warpscope_core::sim::run_kernels(cfg, launches, observer)
    }
}

#[cfg(test)]
mod tests {
    use super::super::lanes;
    use super::*;
    use warpscope_core::config::{preset, SmSelection};
    use warpscope_core::sim::{NoObserver, RequestEvent};
    use warpscope_core::trace::Kernel;

    /// The timing model's own test kernels (the core's are private to its tests): the plain
    /// and the tiled 32x32 matmul, and the default 2-D stencil.
    fn test_kernels() -> Vec<Kernel> {
        let n32 = vec![("n".to_string(), "32".to_string())];
        [
            ("matmul", n32.clone()),
            ("matmul-tiled", n32),
            ("stencil2d", vec![]),
        ]
        .iter()
        .flat_map(|(name, params)| {
            warpscope_core::gen::generate(name, params)
                .expect(name)
                .kernels
        })
        .collect()
    }

    /// Every request an observer is told of, in order, and the progress it saw.
    #[derive(Default)]
    struct Seen {
        requests: Vec<RequestEvent>,
        /// The L2's requests, each after the number of L1 requests seen before it.
        l2: Vec<(usize, warpscope_core::l2::L2Event)>,
        kernels: Vec<u32>,
        last_progress: (u64, u64),
        /// Cancel at this progress call.
        cancel_at: Option<u32>,
        calls: u32,
    }

    impl Observer for Seen {
        fn on_kernel(&mut self, kernel: u32, _header: &Kernel) {
            self.kernels.push(kernel);
        }
        fn on_request(&mut self, event: &RequestEvent) {
            self.requests.push(*event);
        }
        fn on_l2(&mut self, event: &warpscope_core::l2::L2Event) {
            self.l2.push((self.requests.len(), *event));
        }
        fn progress(&mut self, done: u64, total: u64) -> bool {
            assert!(done <= total, "progress {done} of {total}");
            self.last_progress = (done, total);
            self.calls += 1;
            self.cancel_at.is_none_or(|c| self.calls < c)
        }
    }

    fn configs() -> Vec<SimConfig> {
        let mut all_sms = preset("gtx470-16k").expect("preset");
        all_sms.gpu.sms = 3;
        all_sms.gpu.simulate = SmSelection::All;
        let mut released = preset("gtx470-16k").expect("preset");
        warpscope_core::config::compat(&mut released, "gpu-cache-model").expect("compat");
        let mut random = released.clone();
        if let Some(t) = random.timing.as_mut() {
            t.miss_latency_stddev = 7.0;
            t.mshrs = 4;
        }
        random.gpu.sms = 2;
        random.gpu.simulate = SmSelection::All;
        // Every SM at once behind a shared L2: one job a run.
        let mut l2 = all_sms.clone();
        l2.l2 = Some(warpscope_core::config::L2Config::default());
        if let Some(t) = l2.timing.as_mut() {
            t.miss_latency_stddev = 7.0;
        }
        let mut released_l2 = random.clone();
        released_l2.l2 = l2.l2.clone();
        vec![all_sms, released, random, l2, released_l2]
    }

    fn json(r: &Report) -> serde_json::Value {
        serde_json::to_value(r).expect("json")
    }

    #[test]
    fn any_thread_count_gives_the_one_thread_runs_report_and_requests_in_its_order() {
        let kernels = test_kernels();
        for cfg in configs() {
            let mut one = Seen::default();
            let want = warpscope_core::sim::run_kernels(&cfg, &kernels, &mut one).expect("run");
            assert!(!one.requests.is_empty());
            assert!(want.timing.is_some());
            for threads in [1, 2, 3, 7] {
                let mut seen = Seen::default();
                let got = run(&cfg, &kernels, &mut seen, threads).expect("run");
                assert_eq!(json(&got), json(&want), "{threads} threads");
                assert_eq!(seen.kernels, one.kernels);
                assert_eq!(seen.requests.len(), one.requests.len(), "{threads} threads");
                assert!(seen.requests == one.requests, "{threads} threads: order");
                assert!(seen.l2 == one.l2, "{threads} threads: L2 requests");
                assert_eq!(seen.last_progress, one.last_progress);
            }
        }
    }

    #[test]
    fn the_run_in_pieces_gives_the_whole_runs_report_and_requests_in_its_order() {
        let mut kernels = test_kernels();
        // A kernel of 81 CTAs, whose streams take several pieces.
        let n144 = vec![("n".to_string(), "144".to_string())];
        kernels.extend(
            warpscope_core::gen::generate("matmul", &n144)
                .expect("matmul")
                .kernels,
        );
        for cfg in configs() {
            let mut one = Seen::default();
            let want = warpscope_core::sim::run_kernels(&cfg, &kernels, &mut one).expect("run");
            let mut seen = Seen::default();
            let mut steps = warpscope_core::sim::TimedSteps::new();
            let mut pieces = 0;
            let got = loop {
                pieces += 1;
                if let Some(r) = steps.step(&cfg, &kernels, &mut seen).expect("step") {
                    break r;
                }
            };
            // Pieces for each kernel's streams (more than one for the kernel of 81 CTAs), then
            // for each kernel of each job a piece to begin and some of turns, then the report.
            let (jobs, _) = warpscope_core::sim::TimedJob::count(&cfg).expect("jobs");
            assert!(
                pieces > kernels.len() * (1 + jobs * 2) + 1,
                "{pieces} pieces"
            );
            assert_eq!(json(&got), json(&want));
            assert_eq!(seen.kernels, one.kernels);
            assert!(seen.requests == one.requests, "the requests or their order");
            assert!(seen.l2 == one.l2, "the L2's requests");
            assert_eq!(seen.last_progress, one.last_progress);
        }
        // Cancelled in a piece, the run stops there, as the whole run does.
        let kernels = warpscope_core::gen::generate("matmul", &[("n".into(), "64".into())])
            .expect("matmul")
            .kernels;
        let cfg = configs().remove(0);
        let cancelled = || Seen {
            cancel_at: Some(2),
            ..Seen::default()
        };
        let whole = warpscope_core::sim::run_kernels(&cfg, &kernels, &mut cancelled());
        assert_eq!(whole.err(), Some(SimError::Cancelled));
        let mut seen = cancelled();
        let mut steps = warpscope_core::sim::TimedSteps::new();
        let err = loop {
            match steps.step(&cfg, &kernels, &mut seen) {
                Ok(None) => continue,
                Ok(Some(_)) => panic!("a cancelled run ended"),
                Err(e) => break e,
            }
        };
        assert_eq!(err, SimError::Cancelled);
    }

    /// A source that sends `kernels` CTA by CTA (every other one whole), as a reader of a
    /// file grouped by CTA does; the CTAs in `order` where given.
    fn by_cta(kernels: Vec<Kernel>, order: Option<Vec<u32>>) -> lanes::Source {
        use warpscope_core::trace::{CtaSink, KernelSink};
        Box::new(move |to| {
            for (i, k) in kernels.into_iter().enumerate() {
                if i % 2 == 1 {
                    to.kernel(k)?;
                    continue;
                }
                to.begin_kernel(&k.header())?;
                let ctas = order.clone().unwrap_or_else(|| (0..k.num_ctas()).collect());
                for c in ctas {
                    let mut rows = warpscope_core::trace::Columns::default();
                    rows.extend_from(k.columns(), k.cta_rows(c));
                    to.cta(c, &rows)?;
                }
                to.end_kernel()?;
            }
            Ok(())
        })
    }

    #[test]
    fn a_trace_streamed_cta_by_cta_gives_the_whole_reads_report_and_requests() {
        let kernels = test_kernels();
        for cfg in configs() {
            let mut one = Seen::default();
            let want = warpscope_core::sim::run_kernels(&cfg, &kernels, &mut one).expect("run");
            for threads in [1, 2] {
                let (mut seen, mut reading) = (Seen::default(), Seen::default());
                let source = by_cta(kernels.clone(), None);
                let got = run_streamed(&cfg, source, 1, &mut reading, &mut seen, threads, None)
                    .map_err(anyhow::Error::from)
                    .expect("run");
                assert_eq!(json(&got), json(&want), "{threads} threads");
                assert!(seen.requests == one.requests, "{threads} threads: requests");
                assert!(seen.l2 == one.l2, "{threads} threads: L2 requests");
                assert_eq!(seen.kernels, one.kernels);
                assert_eq!(seen.last_progress, one.last_progress);
                // Every piece was told of while the trace was read.
                assert!(reading.calls as usize > kernels.len());
            }
        }
    }

    /// Streamed, the model holds the streams of only the CTAs in flight: a cap of a third of
    /// the trace's accesses is room enough, whatever the threads, and the report is the whole
    /// read's. Where the observer wants the requests (of several SMs under some settings),
    /// the later SMs' requests wait in temporary files: the same cap is passed, and the
    /// observer sees every request in the one-thread order.
    #[test]
    fn a_streamed_trace_holds_the_streams_of_only_the_ctas_in_flight() {
        // 256 CTAs of 4 threads; the second kernel is sent whole.
        let params = [("n".into(), "32".into()), ("block".into(), "2,2".into())];
        let k = warpscope_core::gen::generate("matmul", &params)
            .expect("matmul")
            .kernels;
        let kernels = vec![k[0].clone(), k[0].clone()];
        let rows: u64 = kernels.iter().map(|k| k.len() as u64).sum();
        let cap = Some(rows / 3);
        let mut several = 0;
        for (ci, cfg) in configs().into_iter().enumerate() {
            let mut one = Seen::default();
            let want = warpscope_core::sim::run_kernels(&cfg, &kernels, &mut one).expect("run");
            several += (warpscope_core::sim::selected_sms(&cfg).len() > 1) as usize;
            for threads in [1, 2, 3] {
                let source = by_cta(kernels.clone(), None);
                let got = run_streamed(
                    &cfg,
                    source,
                    1,
                    &mut NoObserver,
                    &mut NoObserver,
                    threads,
                    cap,
                )
                .map_err(anyhow::Error::from)
                .unwrap_or_else(|e| panic!("config {ci}, {threads} threads, no requests: {e}"));
                assert_eq!(json(&got), json(&want), "{threads} threads");
                let mut seen = Seen::default();
                let source = by_cta(kernels.clone(), None);
                let got = run_streamed(&cfg, source, 1, &mut NoObserver, &mut seen, threads, cap)
                    .map_err(anyhow::Error::from)
                    .unwrap_or_else(|e| panic!("config {ci}, {threads} threads: {e}"));
                assert_eq!(json(&got), json(&want), "{threads} threads, requests");
                assert!(seen.requests == one.requests, "{threads} threads: requests");
                assert_eq!(seen.last_progress, one.last_progress);
            }
        }
        assert!(several > 0, "a setting simulates several SMs");
    }

    /// With a shared L2 one job runs every SM, taking their CTAs in the order of their clocks:
    /// where one SM's CTAs are long and the others' short, the others need CTAs far past
    /// those the slow SM has yet to take. The run must not wait for ever on the board, and
    /// gives the whole read's report.
    #[test]
    fn a_streamed_trace_whose_sms_go_at_different_speeds_behind_an_l2_runs_to_its_end() {
        let mut src = String::from("kernel skew grid=240 block=4\n");
        for c in 0..240u64 {
            let loads = if c % 3 == 0 { 40 } else { 1 };
            for t in 0..4u64 {
                for i in 0..loads {
                    let addr = (c * 4 + t) * 4096 + i * 128;
                    src += &format!("{c} {t} ld_a 0 ld {addr} 4\n");
                }
            }
        }
        let k = warpscope_core::trace::text::read(src.as_bytes(), "skew.wst")
            .expect("kernel")
            .kernels;
        let cfg = &configs()[3];
        assert!(cfg.l2_simulated());
        let want = warpscope_core::sim::run_kernels(cfg, &k, &mut NoObserver).expect("run");
        for threads in [1, 2, 4] {
            let got = run_streamed(
                cfg,
                by_cta(k.clone(), None),
                1,
                &mut NoObserver,
                &mut NoObserver,
                threads,
                None,
            )
            .map_err(anyhow::Error::from)
            .expect("run");
            assert_eq!(json(&got), json(&want), "{threads} threads");
        }
    }

    #[test]
    fn a_streamed_trace_that_is_not_whole_or_in_order_or_per_thread_is_an_error() {
        let cfg = &configs()[1];
        let kernels = test_kernels();
        let run = |source: lanes::Source, reading: &mut Seen| {
            run_streamed(cfg, source, 1, reading, &mut NoObserver, 2, None)
                .map_err(anyhow::Error::from)
                .map(|_| ())
                .map_err(|e| format!("{e:#}"))
        };
        // CTAs out of order.
        let k = vec![kernels[0].clone()];
        let e = run(by_cta(k.clone(), Some(vec![0, 2, 1])), &mut Seen::default());
        assert!(
            e.as_ref()
                .is_err_and(|e| e.contains("CTA 1 came after CTA 2")),
            "{e:?}"
        );
        // A CTA given the rows of another.
        let bad: lanes::Source = Box::new(move |to| {
            use warpscope_core::trace::CtaSink;
            let k = &k[0];
            to.begin_kernel(&k.header())?;
            let mut rows = warpscope_core::trace::Columns::default();
            rows.extend_from(k.columns(), k.cta_rows(1));
            to.cta(0, &rows)?;
            to.end_kernel()?;
            Ok(())
        });
        let e = run(bad, &mut Seen::default());
        assert!(
            e.as_ref()
                .is_err_and(|e| e.contains("of CTA 0's rows is of thread")),
            "{e:?}"
        );
        // A recorded issue order.
        let mut issued = kernels[0].clone();
        issued.order = warpscope_core::trace::Order::Issued;
        let e = run(by_cta(vec![issued], Some(vec![])), &mut Seen::default());
        assert!(
            e.as_ref()
                .is_err_and(|e| e.contains("recorded issue order")),
            "{e:?}"
        );
        // The reader's error, not a report of what was read before it.
        let k = kernels[0].clone();
        let failing: lanes::Source = Box::new(move |to| {
            use warpscope_core::trace::CtaSink;
            to.begin_kernel(&k.header())?;
            anyhow::bail!("line 7: expected an address")
        });
        let e = run(failing, &mut Seen::default());
        assert!(e.as_ref().is_err_and(|e| e.contains("line 7")), "{e:?}");
        // Cancelled while reading.
        let mut reading = Seen {
            cancel_at: Some(3),
            ..Default::default()
        };
        let e = run(by_cta(kernels.clone(), None), &mut reading);
        assert!(e.as_ref().is_err_and(|e| e.contains("cancelled")), "{e:?}");
    }

    #[test]
    fn a_cancel_from_the_callers_observer_stops_every_thread() {
        let kernels = warpscope_core::gen::generate("matmul", &[("n".into(), "64".into())])
            .expect("matmul")
            .kernels;
        let cfg = &configs()[0];
        for threads in [1, 2] {
            let mut seen = Seen {
                cancel_at: Some(2),
                ..Default::default()
            };
            let r = run(cfg, &kernels, &mut seen, threads);
            assert_eq!(r.err(), Some(SimError::Cancelled), "{threads} threads");
            assert!(seen.last_progress.0 < seen.last_progress.1);
            // Streamed, the caller's observer is told of the model's progress once the trace
            // is read (the reading observer before), and stops every thread too.
            let mut seen = Seen {
                cancel_at: Some(1),
                ..Default::default()
            };
            let source = by_cta(kernels.clone(), None);
            let r = run_streamed(cfg, source, 1, &mut NoObserver, &mut seen, threads, None);
            let e = r.map(|_| ()).map_err(anyhow::Error::from);
            assert!(
                e.as_ref()
                    .is_err_and(|e| format!("{e:#}").contains("cancelled")),
                "{threads} threads: {e:?}"
            );
            // At the latest where the run ended.
            assert!(seen.last_progress.0 <= seen.last_progress.1);
        }
        // Without a timing section it is the plain pipeline.
        let mut plain = cfg.clone();
        plain.timing = None;
        let r = simulate(&plain, &kernels, &mut NoObserver, 2).expect("run");
        assert!(r.timing.is_none());
    }
}
