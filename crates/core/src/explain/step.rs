//! The step-through view's state at step N: the request just simulated, its warp instruction
//! and how its threads coalesced into lines, the set it went to as the request left it (each
//! way's line, valid and dirty sectors and the replacement policy's state), the requests just
//! before it on its SM (which warps issued), and in the timing model the lines in flight and
//! the MSHRs they hold. Like an explanation, it runs the pipeline again and stops after
//! request N, so a step backwards is a run to an earlier N (cheap for teaching-size kernels).

use std::collections::VecDeque;

use rustc_hash::FxHashMap;
use serde::Serialize;

use super::follow::{Find, Stops};
use super::stages::{runs_config, Running};
use super::{Access, ExplainError, Use};
use crate::cache::CacheModel;
use crate::config::SimConfig;
use crate::sim::{Observer, RequestEvent};
use crate::trace::{Columns, Kernel};

/// Requests kept before the current one.
const RECENT: usize = 12;

/// One way of the request's set.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Way {
    /// The first byte of the line it holds (`None`: empty).
    pub line_address: Option<u64>,
    pub valid_sectors: u32,
    pub dirty_sectors: u32,
    /// The replacement policy's state of the way ([`Snapshot::policy_meaning`]); in the
    /// timing model, the line's place in the set's LRU stack (0 = most recent).
    pub policy: u64,
    /// The current request's line.
    pub current: bool,
}

/// The lines a warp instruction's threads coalesced into.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LineGroup {
    pub line_address: u64,
    pub threads: Vec<u32>,
}

/// Everything the step-through view shows at one step.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Snapshot {
    /// The request just simulated.
    pub request: Use,
    /// Its warp instruction's accesses.
    pub accesses: Vec<Access>,
    /// How those accesses coalesced: one group per line, in address order.
    pub lines: Vec<LineGroup>,
    /// The set the request went to, as it left it (in the timing model: as it found it).
    pub set: u32,
    pub ways: Vec<Way>,
    pub policy_meaning: String,
    /// The line the request's fill evicted.
    pub evicted: Option<u64>,
    /// The requests on its SM just before it, oldest first.
    pub recent: Vec<Use>,
    /// Timing model: lines on their way at the request's issue (first byte, arrival cycle).
    pub in_flight: Vec<(u64, u64)>,
    /// Timing model: MSHRs held at its issue, and how many there are (`None`: unlimited).
    pub mshrs: Option<(u32, Option<u32>)>,
}

/// [`Find`] (request `n` and its warp instruction), plus the requests before it and
/// (without the timing model) its set as it left it.
struct Step {
    find: Find,
    recent: VecDeque<(u64, RequestEvent)>,
    set: Option<(Vec<crate::cache::WayState>, &'static str)>,
}

impl Observer for Step {
    fn on_kernel(&mut self, kernel: u32, header: &Kernel) {
        self.find.on_kernel(kernel, header);
    }
    fn on_instructions(&mut self, kernel: u32, added: &[crate::trace::Instruction]) {
        self.find.on_instructions(kernel, added);
    }
    fn on_warp_instruction(&mut self, cols: &Columns, rows: &[u32]) {
        self.find.on_warp_instruction(cols, rows);
    }
    fn on_request(&mut self, e: &RequestEvent) {
        if self.find.found.is_none() && self.find.seen != self.find.n {
            if self.recent.len() == RECENT * 8 {
                self.recent.pop_front();
            }
            self.recent.push_back((self.find.seen, *e));
        }
        self.find.on_request(e);
    }
    fn after_request(&mut self, e: &RequestEvent, cache: &CacheModel) {
        // Right after the request itself (the observer has counted it).
        if self.set.is_none() && self.find.found.is_some() && self.find.seen == self.find.n + 1 {
            self.set = Some(cache.set_state(e.set));
        }
    }
}

impl Stops for Step {
    fn done(&self) -> bool {
        self.find.found.is_some()
    }
}

/// The timing model's set and MSHRs, rebuilt from the requests of one SM before the target:
/// a line is in its set's stack from its first effect on, ordered by its latest effect; a
/// fetch holds an MSHR until its line arrives. (The engine's own stacks are not exposed; the
/// tests check this against the distances it reports.)
struct TimedSet {
    n: u64,
    seen: u64,
    target: RequestEvent,
    /// Per line of the set: its latest effect (kernel, cycle, issue order) not after the
    /// target's issue.
    latest: FxHashMap<u64, (u32, u64, u64)>,
    /// Fetches of the target's kernel: line -> arrival.
    fetches: FxHashMap<u64, u64>,
}

impl Observer for TimedSet {
    fn on_request(&mut self, e: &RequestEvent) {
        let i = self.seen;
        self.seen += 1;
        let t = self.target;
        if i >= self.n || e.sm != t.sm {
            return;
        }
        let now = (t.kernel, t.time.unwrap_or(0));
        let effect = (e.kernel, e.effect_at.unwrap_or(0));
        // A lookup sees the effects of earlier steps, and its own line arriving in its step
        // (Nugteren et al. 2014, tables 3-5).
        let seen = effect < now || (effect == now && e.line == t.line);
        if e.set == t.set && seen {
            let l = self.latest.entry(e.line).or_insert((0, 0, 0));
            *l = (*l).max((effect.0, effect.1, i));
        }
        if e.kernel == t.kernel && !e.hit && !e.in_flight && effect > now {
            self.fetches.insert(e.line, effect.1);
        }
    }
}

impl Stops for TimedSet {
    fn done(&self) -> bool {
        self.seen > self.n
    }
}

/// The state at request `n` of `cfg` on `kernels` (numbered as [`super::explain`] numbers
/// them). `keep_going(done, total)` is asked now and then; `false` cancels. The runs behind
/// it are run whole; [`Stepping`] runs them a piece at a time.
pub fn snapshot(
    cfg: &SimConfig,
    kernels: &[Kernel],
    n: u64,
    keep_going: &mut dyn FnMut(u64, u64) -> bool,
) -> Result<Snapshot, ExplainError> {
    let mut stepping = Stepping::new(cfg, n, false)?;
    loop {
        if let Some(s) = stepping.step(kernels, keep_going)? {
            return Ok(s);
        }
    }
}

/// The state at request `n` being found, one run (or piece of one) per [`Stepping::step`]:
/// the run to request `n`, then in the timing model a run that rebuilds its set.
pub struct Stepping {
    cfg: SimConfig,
    n: u64,
    pieces: bool,
    stage: Stage,
}

enum Stage {
    Step(Box<Running<Step>>),
    Set(Box<Step>, RequestEvent, Box<Running<TimedSet>>),
    Over,
}

impl Stepping {
    /// The state at request `n` of `cfg`; `pieces`: each run a piece at a time, else whole.
    pub fn new(cfg: &SimConfig, n: u64, pieces: bool) -> Result<Self, ExplainError> {
        let cfg = runs_config(cfg)?;
        let step = Step {
            find: Find::new(n, cfg.cache.line_bytes),
            recent: VecDeque::new(),
            set: None,
        };
        let stage = Stage::Step(Running::new(cfg.clone(), step, pieces)?);
        Ok(Stepping {
            cfg,
            n,
            pieces,
            stage,
        })
    }

    /// Does the next piece; the state once it is known. After it, or an error, it does
    /// nothing more (`Ok(None)`).
    pub fn step(
        &mut self,
        kernels: &[Kernel],
        keep_going: &mut dyn FnMut(u64, u64) -> bool,
    ) -> Result<Option<Snapshot>, ExplainError> {
        let (cfg, n) = (&self.cfg, self.n);
        match std::mem::replace(&mut self.stage, Stage::Over) {
            Stage::Step(mut run) => {
                if !run.piece(kernels, keep_going)? {
                    self.stage = Stage::Step(run);
                    return Ok(None);
                }
                let step = run.observer;
                let Some(target) = step.find.found else {
                    return Err(ExplainError::NoSuchRequest {
                        request: n,
                        requests: step.find.seen,
                    });
                };
                if cfg.timing.is_none() {
                    return Ok(Some(assemble(cfg, n, target, step, None)));
                }
                let set = TimedSet {
                    n,
                    seen: 0,
                    target,
                    latest: FxHashMap::default(),
                    fetches: FxHashMap::default(),
                };
                let run = Running::new(cfg.clone(), set, self.pieces)?;
                self.stage = Stage::Set(Box::new(step), target, run);
                Ok(None)
            }
            Stage::Set(step, target, mut run) => {
                if !run.piece(kernels, keep_going)? {
                    self.stage = Stage::Set(step, target, run);
                    return Ok(None);
                }
                Ok(Some(assemble(cfg, n, target, *step, Some(run.observer))))
            }
            Stage::Over => Ok(None),
        }
    }
}

/// The state from the run to request `n` (which found it) and, in the timing model, the run
/// that rebuilt its set.
fn assemble(
    cfg: &SimConfig,
    n: u64,
    e: RequestEvent,
    mut step: Step,
    timed: Option<TimedSet>,
) -> Snapshot {
    let line_bytes = cfg.cache.line_bytes as u64;
    let accesses = std::mem::take(&mut step.find.accesses);
    let names = &step.find.names;
    let lines = line_groups(&accesses, line_bytes);
    let recent: Vec<Use> = {
        let mine: Vec<&(u64, RequestEvent)> =
            step.recent.iter().filter(|(_, r)| r.sm == e.sm).collect();
        mine[mine.len().saturating_sub(RECENT)..]
            .iter()
            .map(|(i, r)| names.use_of(*i, r))
            .collect()
    };
    let SetState {
        ways,
        policy_meaning,
        in_flight,
        mshrs,
    } = match (&cfg.timing, timed) {
        (Some(t), Some(set)) => timed_set(
            set,
            cfg.cache.ways_effective() as usize,
            line_bytes,
            t.mshrs,
        ),
        _ => untimed_set(step.set.take().unwrap_or_default(), &e, line_bytes),
    };
    Snapshot {
        request: names.use_of(n, &e),
        accesses,
        lines,
        set: e.set,
        ways,
        policy_meaning,
        evicted: e.evicted.map(|l| l * line_bytes),
        recent,
        in_flight,
        mshrs,
    }
}

/// The request's set as the step shows it: its ways, what their policy number means, the
/// lines in flight and the MSHRs held (of how many) in the timing model.
struct SetState {
    ways: Vec<Way>,
    policy_meaning: String,
    in_flight: Vec<(u64, u64)>,
    mshrs: Option<(u32, Option<u32>)>,
}

/// The accesses grouped by line, in address order.
fn line_groups(accesses: &[Access], line_bytes: u64) -> Vec<LineGroup> {
    let mut lines: Vec<LineGroup> = Vec::new();
    for a in accesses {
        let at = a.address / line_bytes.max(1) * line_bytes;
        match lines.iter_mut().find(|g| g.line_address == at) {
            Some(g) => g.threads.push(a.thread),
            None => lines.push(LineGroup {
                line_address: at,
                threads: vec![a.thread],
            }),
        }
    }
    lines.sort_by_key(|g| g.line_address);
    lines
}

/// The set of the cache model after request `e`: its ways as the model keeps them.
fn untimed_set(
    (ways, meaning): (Vec<crate::cache::WayState>, &'static str),
    e: &RequestEvent,
    line_bytes: u64,
) -> SetState {
    let ways = ways
        .into_iter()
        .map(|w| Way {
            line_address: w.line.map(|l| l * line_bytes),
            valid_sectors: w.valid,
            dirty_sectors: w.dirty,
            policy: w.policy,
            current: w.line == Some(e.line),
        })
        .collect();
    SetState {
        ways,
        policy_meaning: meaning.to_string(),
        in_flight: Vec::new(),
        mshrs: None,
    }
}

/// The set of the timing model at the request: its LRU stack (the `ways` latest lines), the
/// lines in flight and the MSHRs they hold (of `mshrs`, 0 = unlimited).
fn timed_set(set: TimedSet, ways: usize, line_bytes: u64, mshrs: u32) -> SetState {
    let line = set.target.line;
    let mut stack: Vec<(u64, (u32, u64, u64))> = set.latest.into_iter().collect();
    stack.sort_by_key(|s| std::cmp::Reverse(s.1));
    let ways = stack
        .iter()
        .take(ways)
        .enumerate()
        .map(|(age, (l, _))| Way {
            line_address: Some(l * line_bytes),
            valid_sectors: 0,
            dirty_sectors: 0,
            policy: age as u64,
            current: *l == line,
        })
        .collect();
    let mut flying: Vec<(u64, u64)> = set
        .fetches
        .iter()
        .map(|(&l, &at)| (l * line_bytes, at))
        .collect();
    flying.sort_by_key(|f| (f.1, f.0));
    let held = flying.len() as u32;
    SetState {
        ways,
        policy_meaning: "place in the set's LRU stack (0 = most recent effect)".to_string(),
        in_flight: flying,
        mshrs: Some((held, (mshrs > 0).then_some(mshrs))),
    }
}
