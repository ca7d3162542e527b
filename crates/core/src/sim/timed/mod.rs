//! The pipeline in timing mode: every simulated SM through the timing model, once per run
//! (the full model and its comparison runs), then the five miss classes (`report.rs`).

mod job;
mod report;
mod steps;
mod turns;

pub use job::{JobResult, TimedJob};
pub use steps::TimedSteps;

use super::{selected_sms, Observer, Report, RequestEvent, SimError};
use crate::config::{SimConfig, TimingConfig};
use crate::reuse::Histogram;
use crate::timing::{Hooks, KernelRun, Status, StreamsBuilder, TimedRequest, Variant, WarpStreams};
use crate::trace::Kernel;

impl Adapter<'_> {
    /// Tells the observer the rows of every SM of the job as last known; whether to go on.
    fn go_on(&mut self) -> bool {
        let all: u64 = self.sm_rows.iter().sum();
        self.observer.progress(self.rows_before + all, self.total)
    }
}

struct Adapter<'a> {
    observer: &'a mut dyn Observer,
    full: bool,
    sm: u32,
    kernel: u32,
    order: &'a mut u64,
    rows_before: u64,
    /// Rows each SM of the job has issued in this kernel, as last told, and the SM issuing.
    sm_rows: Vec<u64>,
    current: usize,
    total: u64,
    /// Refused attempts (no free MSHR) per (CTA, warp, line), until the request issues.
    refused: rustc_hash::FxHashMap<(u32, u32, u64), u32>,
}

impl Hooks for Adapter<'_> {
    fn progress(&mut self, rows: u64) -> bool {
        if let Some(r) = self.sm_rows.get_mut(self.current) {
            *r = rows;
        }
        self.go_on()
    }
    fn l2(&mut self, event: &crate::l2::L2Event) {
        if self.full {
            self.observer.on_l2(event);
        }
    }
    fn more_instructions(&mut self, added: &[crate::trace::Instruction]) {
        if self.full {
            self.observer.on_instructions(self.kernel, added);
        }
    }
    fn request(&mut self, r: &TimedRequest) {
        if !self.full || !self.observer.wants_requests() {
            return;
        }
        if r.status == Status::Cancelled {
            *self.refused.entry((r.cta, r.warp, r.line)).or_insert(0) += 1;
            return;
        }
        let refused = if self.refused.is_empty() {
            0
        } else {
            self.refused.remove(&(r.cta, r.warp, r.line)).unwrap_or(0)
        };
        self.observer.on_request(&RequestEvent {
            order: *self.order,
            sm: self.sm,
            kernel: self.kernel,
            cta: r.cta,
            warp: r.warp,
            inst: r.inst,
            line: r.line,
            set: r.set,
            write: false,
            hit: r.status == Status::Hit,
            class: None,
            reuse_distance: None,
            time: Some(r.time),
            thread: None,
            in_flight: r.in_flight,
            set_distance: r.distance,
            sectors: 0,
            evicted: None,
            effect_at: Some(r.effect_at),
            refused,
            first: r.starts_instruction,
        });
        *self.order += 1;
    }
}

/// Per-kernel, per-SM results of every run: `runs[v][sm_slot][kernel]`.
type Runs = Vec<Vec<Vec<KernelRun>>>;

/// The timing model's work on a trace: the warps' streams, built once, and one job per run
/// (the full model, then its comparison runs) and simulated SM. Jobs share nothing but the
/// streams, so a shell may run them on several threads (`shell::timed`); [`run`] runs them
/// in order on one. The full model's jobs are the first ones, in SM order: an observer sees
/// their requests, and sees them in the same order whichever way the jobs are run.
pub struct TimedPlan<'a> {
    cfg: &'a SimConfig,
    t: &'a TimingConfig,
    launches: &'a [Kernel],
    sms: Vec<u32>,
    variants: Vec<Variant>,
    streams: Vec<WarpStreams>,
    /// Each kernel's rows (a kernel given by its header only has none of its own).
    rows: Vec<u64>,
    /// Rows of every job together, for progress.
    total: u64,
}

/// A piece of the work of building a plan ([`TimedPlan::new_with`]): the warps' streams of
/// some of a kernel's CTAs.
pub type StreamsWork<'w> = Box<dyn FnOnce() -> Result<WarpStreams, SimError> + Send + 'w>;

/// What runs the pieces of [`TimedPlan::new_with`]: their results, in their order.
pub type Spread<'s> =
    &'s mut dyn for<'w> FnMut(Vec<StreamsWork<'w>>) -> Vec<Result<WarpStreams, SimError>>;

impl<'a> TimedPlan<'a> {
    /// Builds every kernel's warp streams (`cfg.timing` must be set), on this thread.
    pub fn new(cfg: &'a SimConfig, launches: &'a [Kernel]) -> Result<Self, SimError> {
        Self::new_with(cfg, launches, 1, &mut |works| {
            works.into_iter().map(|w| w()).collect()
        })
    }

    /// [`TimedPlan::new`], each kernel's streams built in `pieces` parts (ranges of its
    /// CTAs) that `spread` runs, in any order or side by side, returning their results in
    /// the order given; the plan is the same for any number of parts.
    pub fn new_with(
        cfg: &'a SimConfig,
        launches: &'a [Kernel],
        pieces: u32,
        spread: Spread,
    ) -> Result<Self, SimError> {
        let (t, _, simulated) = Self::setting(cfg)?;
        // What each warp issues does not depend on timing: build the streams once for all runs.
        let simulated = &simulated;
        let pieces = pieces.max(1);
        let mut works: Vec<StreamsWork> = Vec::new();
        for k in launches {
            let n = k.num_ctas();
            for p in 0..pieces {
                let ctas = (n as u64 * p as u64 / pieces as u64) as u32
                    ..(n as u64 * (p as u64 + 1) / pieces as u64) as u32;
                works.push(Box::new(move || build_streams(cfg, t, simulated, k, ctas)));
            }
        }
        let mut built = spread(works).into_iter();
        let mut streams = Vec::with_capacity(launches.len());
        for _ in launches {
            let parts = built
                .by_ref()
                .take(pieces as usize)
                .collect::<Result<Vec<_>, _>>()?;
            let whole = WarpStreams::join(parts).ok_or_else(|| {
                SimError::Config(
                    "the timing model's streams were built in parts that do not fit".into(),
                )
            })?;
            streams.push(whole);
        }
        let rows = launches.iter().map(|k| k.len() as u64).collect();
        let mut plan = Self::read(cfg, launches, rows)?;
        plan.streams = streams;
        Ok(plan)
    }

    /// The plan of kernels given by their headers (`launches`, with their rows counted in
    /// `rows`) whose jobs a shell ran as the trace was read ([`TimedJob`]): for
    /// [`TimedPlan::finish`] only (it has no streams to run jobs on; [`TimedPlan::new_with`]
    /// gives it theirs).
    pub fn read(
        cfg: &'a SimConfig,
        launches: &'a [Kernel],
        rows: Vec<u64>,
    ) -> Result<Self, SimError> {
        let (t, sms, _) = Self::setting(cfg)?;
        if rows.len() != launches.len() {
            return Err(SimError::Config(
                "the timing model needs the rows of every kernel".into(),
            ));
        }
        Ok(TimedPlan {
            cfg,
            t,
            launches,
            sms,
            variants: Variant::all(t),
            streams: Vec::new(),
            total: Self::progress_total(cfg, rows.iter().sum())?,
            rows,
        })
    }

    /// What progress counts to ([`Observer::progress`]) for a trace of `rows` accesses: the
    /// accesses of the simulated SMs' CTAs (about), once a run.
    pub fn progress_total(cfg: &SimConfig, rows: u64) -> Result<u64, SimError> {
        let (t, sms, _) = Self::setting(cfg)?;
        let rows_per_run = rows * sms.len() as u64 / cfg.gpu.sms.max(1) as u64;
        Ok(rows_per_run.max(1) * Variant::all(t).len() as u64)
    }

    /// The warp streams of kernel `k`'s CTAs `ctas` that run on the simulated SMs: a part of
    /// the kernel's streams, which [`WarpStreams::join`] joins (as [`TimedPlan::new_with`]
    /// builds them).
    pub fn kernel_streams(
        cfg: &SimConfig,
        k: &Kernel,
        ctas: std::ops::Range<u32>,
    ) -> Result<WarpStreams, SimError> {
        let (t, _, simulated) = Self::setting(cfg)?;
        build_streams(cfg, t, &simulated, k, ctas)
    }

    /// What builds the streams of kernel `header`'s CTAs from their rows, for the jobs a shell
    /// runs as the trace is read ([`TimedJob`]): it skips the CTAs of the SMs not simulated.
    pub fn builder(cfg: &SimConfig, header: &Kernel) -> Result<StreamsBuilder, SimError> {
        let (t, _, simulated) = Self::setting(cfg)?;
        StreamsBuilder::new(
            header,
            cfg.schedule.warp_size,
            cfg.coalescing,
            &cfg.cache,
            &cfg.gpu,
            &t.rules,
            Some(simulated),
        )
        .map(|b| b.keep_stores(cfg.l2_simulated()))
        .map_err(|e| timing_err(header, e))
    }

    /// The timing section of `cfg` (checked), the simulated SMs, and by SM whether it is.
    fn setting(cfg: &SimConfig) -> Result<(&TimingConfig, Vec<u32>, Vec<bool>), SimError> {
        cfg.validate()?;
        let Some(t) = &cfg.timing else {
            return Err(SimError::Config(
                "the timing model needs a timing section".into(),
            ));
        };
        let sms = selected_sms(cfg);
        let mut simulated = vec![false; cfg.gpu.sms.max(1) as usize];
        for &sm in &sms {
            simulated[sm as usize] = true;
        }
        Ok((t, sms, simulated))
    }

    /// How many jobs there are: runs times simulated SMs.
    pub fn jobs(&self) -> usize {
        self.variants.len() * self.full_jobs()
    }

    /// How many of the first jobs are the full model's: one per simulated SM, or one for
    /// them all with a simulated L2 ([`TimedJob`]).
    pub fn full_jobs(&self) -> usize {
        if self.cfg.l2_simulated() {
            1
        } else {
            self.sms.len()
        }
    }

    /// Rows of every job together (what [`Observer::progress`] counts to).
    pub fn total_rows(&self) -> u64 {
        self.total
    }

    /// Tells the observer of every kernel, once, before any job runs.
    pub fn announce(&self, observer: &mut dyn Observer) {
        for (ki, k) in self.launches.iter().enumerate() {
            observer.on_kernel(ki as u32, k);
        }
    }

    /// Runs job `job`: every kernel of one run on one SM. `observer` sees the requests of a
    /// full model's job and progress counted from `rows_before`.
    pub fn run_job(
        &self,
        job: usize,
        rows_before: u64,
        observer: &mut dyn Observer,
    ) -> Result<JobResult, SimError> {
        let mut run = TimedJob::new(self.cfg, job)?;
        for (ki, k) in self.launches.iter().enumerate() {
            let Some(streams) = self.streams.get(ki) else {
                return Err(SimError::Config(
                    "the timing model's plan has no streams to run on".into(),
                ));
            };
            let total = self.total;
            run.kernel(
                k,
                streams.shape(),
                &mut &*streams,
                observer,
                rows_before,
                total,
            )?;
        }
        Ok(run.finish())
    }

    /// The report from every job's result, in job order.
    pub fn finish(
        self,
        results: Vec<JobResult>,
        observer: &mut dyn Observer,
    ) -> Result<Report, SimError> {
        observer.progress(self.total, self.total);
        let n = self.sms.len();
        let per_run = self.full_jobs();
        let mut results = results;
        for r in &mut results {
            for sm in &mut r.sms {
                for (kr, k) in sm.kernels.iter_mut().zip(self.launches) {
                    kr.take_insts(k.instructions.len());
                }
            }
        }
        if results.len() != self.jobs() {
            return Err(SimError::Config(
                "the timing model's jobs did not all report".into(),
            ));
        }
        let mut runs: Runs = self
            .variants
            .iter()
            .map(|_| Vec::with_capacity(n))
            .collect();
        let mut stats = Vec::with_capacity(n);
        let mut fa_hist = Histogram::default();
        let mut l2 = None;
        for (j, r) in results.into_iter().enumerate() {
            let v = j / per_run.max(1);
            if self.variants[v] == Variant::Full && r.l2.is_some() {
                l2 = r.l2;
            }
            for sm in r.sms {
                match (self.variants[v], sm.stats) {
                    (Variant::Full, Some(s)) => stats.push(s),
                    (Variant::FullyAssociative, Some(s)) => fa_hist.merge(&s.set_hist),
                    _ => {}
                }
                runs[v].push(sm.kernels);
            }
        }
        if runs.iter().any(|r| r.len() != n) {
            return Err(SimError::Config(
                "the timing model's jobs did not report every SM".into(),
            ));
        }
        Ok(report::report(
            &self,
            &runs,
            &stats,
            &fa_hist,
            l2.as_deref(),
        ))
    }
}

/// The warp streams of kernel `k`'s CTAs `ctas` that run on a simulated SM (`simulated`, by
/// SM).
fn build_streams(
    cfg: &SimConfig,
    t: &TimingConfig,
    simulated: &[bool],
    k: &Kernel,
    ctas: std::ops::Range<u32>,
) -> Result<WarpStreams, SimError> {
    let n_sms = cfg.gpu.sms.max(1);
    let b = StreamsBuilder::new(
        k,
        cfg.schedule.warp_size,
        cfg.coalescing,
        &cfg.cache,
        &cfg.gpu,
        &t.rules,
        None,
    )
    .map_err(|e| timing_err(k, e))?
    .keep_stores(cfg.l2_simulated());
    let ctas = ctas.filter(|c| simulated.get((c % n_sms) as usize) == Some(&true));
    Ok(WarpStreams::build_with(b, k, ctas))
}

fn timing_err(k: &Kernel, err: crate::timing::TimingError) -> SimError {
    match err {
        crate::timing::TimingError::Cancelled => SimError::Cancelled,
        other => SimError::Timing {
            kernel: k.name.clone(),
            source: other,
        },
    }
}

/// Runs every job of the timing model in order on this thread.
pub(super) fn run(
    cfg: &SimConfig,
    launches: &[Kernel],
    observer: &mut dyn Observer,
) -> Result<Report, SimError> {
    let plan = TimedPlan::new(cfg, launches)?;
    plan.announce(observer);
    let mut results = Vec::with_capacity(plan.jobs());
    let mut done = 0;
    for j in 0..plan.jobs() {
        let r = plan.run_job(j, done, observer)?;
        done += r.rows();
        results.push(r);
    }
    plan.finish(results, observer)
}
