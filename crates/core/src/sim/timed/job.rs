//! One job of the timing model: one run (the full model or a comparison run) on one SM, or,
//! with a simulated L2, on every SM at once. The SMs then share the L2 and take their turns
//! in the order of their clocks (the SM whose clock is earliest issues next, the lowest
//! numbered first on a tie), so that the L2 sees their fills and stores in the order they
//! issue: a fill the L2 has takes the L2's latency, one it misses the miss (DRAM) latency.
//! Kernels run one after another on the whole GPU: a kernel starts on every SM when the last
//! one has finished the one before.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::{timing_err, Adapter, TimedPlan};
use crate::config::{GpuConfig, ReuseMode, SimConfig};
use crate::l2::L2Model;
use crate::rng::Rng;
use crate::sim::{Observer, SimError};
use crate::timing::{CtaFeed, Engine, KernelRun, KernelState, Shape, TimingStats, Turn, Variant};
use crate::trace::Kernel;

/// What one SM of a job left: its run of every kernel, and its engine's statistics where
/// the report needs them (the full model's, and the fully associative run's histogram).
pub struct SmResult {
    pub(super) kernels: Vec<KernelRun>,
    pub(super) stats: Option<TimingStats>,
}

/// What one job left: each of its SMs' results, in SM order, and the full model's L2.
pub struct JobResult {
    pub(super) sms: Vec<SmResult>,
    pub(super) l2: Option<Box<L2Model>>,
}

impl JobResult {
    /// Rows the job issued.
    pub fn rows(&self) -> u64 {
        self.sms
            .iter()
            .flat_map(|s| &s.kernels)
            .map(|k| k.rows)
            .sum()
    }
}

/// One job of the timing model (one run on one SM, or on every SM with a simulated L2), run
/// kernel by kernel as each kernel's CTAs' streams come ([`TimedJob::kernel`]): what a shell
/// runs when the trace is read while the model runs (`shell::timed`).
/// [`TimedPlan::run_job`] is one over every kernel.
pub struct TimedJob {
    /// The GPU's shape (the SMs' kernel starts).
    pub(super) gpu: GpuConfig,
    pub(super) full: bool,
    keep_stats: bool,
    /// Its SMs, each with its engine and what it has run.
    pub(super) sms: Vec<(u32, Engine, Vec<KernelRun>)>,
    /// The L2 the SMs share, between their turns.
    pub(super) l2: Option<Box<L2Model>>,
    /// Requests told of so far.
    pub(super) order: u64,
    pub(super) rows: u64,
}

impl TimedJob {
    /// How many jobs `cfg` asks for, and how many of them are the full model's (the first
    /// ones): runs times simulated SMs, one per simulated SM in order; with a simulated L2,
    /// one job a run, every SM in it.
    pub fn count(cfg: &SimConfig) -> Result<(usize, usize), SimError> {
        let (t, sms, _) = TimedPlan::setting(cfg)?;
        let per_run = if cfg.l2_simulated() { 1 } else { sms.len() };
        Ok((Variant::all(t).len() * per_run, per_run))
    }

    /// Job number `job` of `cfg`.
    pub fn new(cfg: &SimConfig, job: usize) -> Result<Self, SimError> {
        let (t, sms, _) = TimedPlan::setting(cfg)?;
        let variants = Variant::all(t);
        let (_, per_run) = Self::count(cfg)?;
        let v = variants.get(job / per_run.max(1)).copied();
        let mine: Vec<u32> = if cfg.l2_simulated() {
            sms
        } else {
            sms.get(job % per_run.max(1)).copied().into_iter().collect()
        };
        let (Some(v), false) = (v, mine.is_empty()) else {
            return Err(SimError::Config(format!(
                "the timing model has no job {job}"
            )));
        };
        let (p, fa) = v.params(t);
        let engine = |sm: u32| {
            let seed = Rng::fork(cfg.seed, sm as u64).next_u64();
            (sm, Engine::new(&cfg.cache, p, fa, seed), Vec::new())
        };
        // The zero-latency run needs no L2 (every fill takes no time); only the full
        // model's L2 is reported, so only it measures reuse.
        let l2 = match &cfg.l2 {
            Some(l2) if cfg.l2_simulated() && v != Variant::ZeroLatency => {
                let reuse = match v {
                    Variant::Full => cfg.reuse.resolve(false),
                    _ => ReuseMode::Off,
                };
                let mut model =
                    L2Model::new(l2, &cfg.cache, reuse, cfg.seed).map_err(SimError::Config)?;
                if v != Variant::Full {
                    model.for_latency_only();
                }
                Some(Box::new(model))
            }
            _ => None,
        };
        Ok(TimedJob {
            gpu: cfg.gpu.clone(),
            full: v == Variant::Full,
            keep_stats: matches!(v, Variant::Full | Variant::FullyAssociative),
            sms: mine.into_iter().map(engine).collect(),
            l2,
            order: 0,
            rows: 0,
        })
    }

    /// The (first) SM the job simulates.
    pub fn sm(&self) -> u32 {
        self.sms.first().map_or(0, |s| s.0)
    }

    /// Runs the next kernel (`k`: its header) on CTAs' streams of `shape` from `feed`.
    /// `observer` sees the requests of a full model's job, and progress counted from
    /// `rows_before` of `total`.
    pub fn kernel(
        &mut self,
        k: &Kernel,
        shape: Shape,
        feed: &mut dyn CtaFeed,
        observer: &mut dyn Observer,
        rows_before: u64,
        total: u64,
    ) -> Result<(), SimError> {
        let ki = self.sms.first().map_or(0, |s| s.2.len()) as u32;
        let mut hooks = Adapter {
            observer,
            full: self.full,
            sm: self.sm(),
            kernel: ki,
            order: &mut self.order,
            rows_before: rows_before + self.rows,
            sm_rows: vec![0; self.sms.len()],
            current: 0,
            total,
            refused: Default::default(),
        };
        let gpu = &self.gpu;
        if let Some(l2) = &mut self.l2 {
            l2.keep_events(self.full && hooks.observer.wants_requests());
        }
        // One SM and no L2 runs alone; several, or an L2, take their turns together.
        let runs = match (&mut self.sms[..], self.l2.is_none()) {
            ([(sm, engine, _)], true) => vec![engine
                .run_kernel(k, shape, feed, *sm, gpu, &mut hooks)
                .map_err(|err| timing_err(k, err))?],
            (sms, _) => lockstep(sms, &mut self.l2, (k, shape, feed, gpu), &mut hooks)
                .map_err(|err| timing_err(k, err))?,
        };
        for ((_, _, kernels), kr) in self.sms.iter_mut().zip(runs) {
            self.rows += kr.rows;
            kernels.push(kr);
        }
        Ok(())
    }

    /// What the job left.
    pub fn finish(self) -> JobResult {
        let keep = self.keep_stats;
        JobResult {
            sms: self
                .sms
                .into_iter()
                .map(|(_, engine, kernels)| SmResult {
                    kernels,
                    stats: keep.then_some(engine.stats),
                })
                .collect(),
            l2: self.l2.filter(|_| self.full),
        }
    }
}

/// Runs kernel `k` of `shape` on every SM of `sms` at once, the SMs sharing the L2 `l2`
/// (handed to each SM for its turn): the SM whose clock is earliest takes the next turn.
/// Every SM starts the kernel at the time the last one finished the one before.
fn lockstep(
    sms: &mut [(u32, Engine, Vec<KernelRun>)],
    l2: &mut Option<Box<L2Model>>,
    (k, shape, feed, gpu): (&Kernel, Shape, &mut dyn CtaFeed, &GpuConfig),
    hooks: &mut Adapter,
) -> Result<Vec<KernelRun>, crate::timing::TimingError> {
    let start = sms.iter().map(|s| s.1.now()).max().unwrap_or(0);
    let mut states: Vec<Option<KernelState>> = Vec::with_capacity(sms.len());
    let mut turns = BinaryHeap::with_capacity(sms.len());
    for (i, (sm, engine, _)) in sms.iter_mut().enumerate() {
        engine.wait_until(start);
        states.push(Some(engine.start_kernel(k, shape, *sm, gpu)));
        turns.push(Reverse((engine.now(), i)));
    }
    let mut since_progress = 0u32;
    while let Some(Reverse((_, i))) = turns.pop() {
        since_progress += 1;
        if since_progress >= 4096 {
            // Each SM tells its progress every 4096 of its own turns: with many SMs, that
            // is seldom; tell the rows of them all.
            since_progress = 0;
            for (r, st) in hooks.sm_rows.iter_mut().zip(&states) {
                *r = st.as_ref().map_or(*r, KernelState::rows);
            }
            if !hooks.go_on() {
                return Err(crate::timing::TimingError::Cancelled);
            }
        }
        let (sm, engine, _) = &mut sms[i];
        let Some(st) = states[i].as_mut() else {
            continue;
        };
        hooks.sm = *sm;
        hooks.current = i;
        engine.l2 = l2.take();
        let turn = engine.step(st, feed, hooks);
        *l2 = engine.l2.take();
        if turn? == Turn::More {
            turns.push(Reverse((engine.now(), i)));
        }
    }
    let mut runs = Vec::with_capacity(sms.len());
    for ((_, engine, _), st) in sms.iter_mut().zip(states) {
        if let Some(st) = st {
            runs.push(engine.end_kernel(st, feed));
        }
    }
    Ok(runs)
}
