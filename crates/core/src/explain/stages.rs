//! An explanation as a sequence of runs of the pipeline ([`Explaining`]), each done whole or a
//! piece at a time: [`super::explain`] runs them whole (the CLI, the desktop's worker
//! thread); a caller that must not hold its thread long (the web build's page, between
//! frames) asks for one piece of one run at a time. The runs, in order: find request N,
//! follow its line and set up to it, look it up again without the timing model (for its
//! accesses), then the counterfactual runs, each chosen by the answers before it. Whole or in
//! pieces, the runs give the same events up to the request, so the explanation is the same
//! (tested in `tests.rs` on every request of small runs).

use std::collections::VecDeque;

use super::follow::{Find, Follow, Key, Lookup, Names, Relay, Stops};
use super::{
    allocates_writes, l2::L2Follow, words, Access, Counterfactual, ExplainError, Explanation, Why,
};
use crate::config::{choice, SimConfig, WritePolicy};
use crate::sim::{self, RequestEvent, RunSteps, SimError};
use crate::trace::Kernel;

/// One run of the pipeline with an observer that stops it once it has what it needs.
pub(super) struct Running<O> {
    cfg: SimConfig,
    pub observer: O,
    /// `None`: run whole at the first piece.
    steps: Option<RunSteps>,
}

impl<O: Stops> Running<O> {
    pub fn new(cfg: SimConfig, observer: O, pieces: bool) -> Result<Box<Self>, ExplainError> {
        let steps = match pieces {
            true => Some(RunSteps::new(&cfg)?),
            false => None,
        };
        Ok(Box::new(Running {
            cfg,
            observer,
            steps,
        }))
    }

    /// Runs the next piece (or the whole run); `true` once the run is over: it ended, or its
    /// observer has what it needs. `keep_going` is the caller's cancel.
    pub fn piece(
        &mut self,
        kernels: &[Kernel],
        keep_going: &mut dyn FnMut(u64, u64) -> bool,
    ) -> Result<bool, ExplainError> {
        let mut relay = Relay {
            inner: &mut self.observer,
            keep_going,
            cancelled: false,
        };
        let run = match &mut self.steps {
            Some(s) => s.step(&self.cfg, kernels, &mut relay).map(|r| r.is_some()),
            None => sim::run_kernels(&self.cfg, kernels, &mut relay).map(|_| true),
        };
        match run {
            Ok(over) => Ok(over),
            Err(SimError::Cancelled) if relay.cancelled => Err(ExplainError::Cancelled),
            Err(SimError::Cancelled) => Ok(true),
            Err(e) => Err(e.into()),
        }
    }
}

/// The configuration an explanation's runs use, `cfg` checked: without what it does not
/// need (reuse distances; the timing model's own miss classes, which it works out per request).
pub(super) fn runs_config(cfg: &SimConfig) -> Result<SimConfig, ExplainError> {
    cfg.validate().map_err(SimError::from)?;
    let mut cfg = cfg.clone();
    cfg.reuse = crate::config::ReuseMode::Off;
    if let Some(t) = &mut cfg.timing {
        t.classify = false;
    }
    Ok(cfg)
}

/// Request `request` of a configuration being explained, one run (or piece of one) per
/// [`Explaining::step`].
pub struct Explaining {
    cfg: SimConfig,
    request: u64,
    pieces: bool,
    stage: Stage,
}

enum Stage {
    Find(Box<Running<Find>>),
    Follow(Box<Found>, Box<Running<Follow>>),
    /// The timing model's requests carry no accesses: the request looked up without it.
    Lookup(Box<Followed>, Box<Running<Lookup>>),
    Ask(Box<Followed>, Box<Asking>),
    Over,
}

/// Request N, as the first run found it.
struct Found {
    target: RequestEvent,
    names: Names,
    accesses: Vec<Access>,
}

/// Request N, its line and set followed up to it.
struct Followed {
    found: Found,
    follow: Follow,
    key: Key,
}

/// The counterfactual runs: those still to ask, the one running and the answers.
struct Asking {
    /// `None` until the answers so far decide it (the timing model's three runs).
    why: Option<Why>,
    queue: VecDeque<(String, SimConfig)>,
    /// More room: stop at the first configuration under which the request hits.
    stop_at_hit: bool,
    running: Option<(String, Box<Running<Lookup>>)>,
    /// Each asked configuration's request (`None`: not valid, or no such request there).
    answers: Vec<Option<RequestEvent>>,
    counterfactuals: Vec<Counterfactual>,
}

impl Explaining {
    /// The explanation of request `request` (the n-th request the run gives an observer,
    /// from 0) of `cfg`; `pieces`: each run a piece at a time, else whole.
    pub fn new(cfg: &SimConfig, request: u64, pieces: bool) -> Result<Self, ExplainError> {
        let cfg = runs_config(cfg)?;
        let find = Find::new(request, cfg.cache.line_bytes);
        let stage = Stage::Find(Running::new(cfg.clone(), find, pieces)?);
        Ok(Explaining {
            cfg,
            request,
            pieces,
            stage,
        })
    }

    /// Does the next piece; the explanation once everything is known. After it, or an
    /// error, it does nothing more (`Ok(None)`).
    pub fn step(
        &mut self,
        kernels: &[Kernel],
        keep_going: &mut dyn FnMut(u64, u64) -> bool,
    ) -> Result<Option<Explanation>, ExplainError> {
        let stage = std::mem::replace(&mut self.stage, Stage::Over);
        let (next, done) = self.advance(stage, kernels, keep_going)?;
        self.stage = next;
        Ok(done)
    }

    fn advance(
        &self,
        stage: Stage,
        kernels: &[Kernel],
        keep_going: &mut dyn FnMut(u64, u64) -> bool,
    ) -> Result<(Stage, Option<Explanation>), ExplainError> {
        let cfg = &self.cfg;
        Ok(match stage {
            Stage::Find(mut run) => {
                if !run.piece(kernels, keep_going)? {
                    return Ok((Stage::Find(run), None));
                }
                let find = run.observer;
                let Some(target) = find.found else {
                    return Err(ExplainError::NoSuchRequest {
                        request: self.request,
                        requests: find.seen,
                    });
                };
                let l2 = cfg.l2.as_ref().filter(|_| cfg.l2_simulated()).map(|l2| {
                    L2Follow::new(
                        target.line,
                        cfg.cache.line_bytes as u64,
                        l2.slice.line_bytes as u64,
                    )
                });
                let follow = Follow::new(self.request, target, allocates_writes(cfg), l2);
                let found = Found {
                    target,
                    names: find.names,
                    accesses: find.accesses,
                };
                let run = Running::new(cfg.clone(), follow, self.pieces)?;
                (Stage::Follow(Box::new(found), run), None)
            }
            Stage::Follow(found, mut run) => {
                if !run.piece(kernels, keep_going)? {
                    return Ok((Stage::Follow(found, run), None));
                }
                let follow = run.observer;
                let key = Key::of(&found.target, follow.nth);
                let followed = Box::new(Followed {
                    found: *found,
                    follow,
                    key,
                });
                if cfg.timing.is_some() {
                    let mut plain = cfg.clone();
                    plain.timing = None;
                    let look = Lookup::new(key, cfg.cache.line_bytes);
                    let run = Running::new(plain, look, self.pieces)?;
                    (Stage::Lookup(followed, run), None)
                } else {
                    let asking = Box::new(self.asking(&followed));
                    (Stage::Ask(followed, asking), None)
                }
            }
            Stage::Lookup(mut followed, mut run) => {
                if !run.piece(kernels, keep_going)? {
                    return Ok((Stage::Lookup(followed, run), None));
                }
                followed.found.accesses = run.observer.accesses;
                let asking = Box::new(self.asking(&followed));
                (Stage::Ask(followed, asking), None)
            }
            Stage::Ask(followed, mut asking) => {
                let Some(why) = self.ask(&followed, &mut asking, kernels, keep_going)? else {
                    return Ok((Stage::Ask(followed, asking), None));
                };
                let Followed { found, follow, .. } = *followed;
                let mut e = follow.finish(
                    cfg,
                    &found.names,
                    found.accesses,
                    why,
                    asking.counterfactuals,
                );
                e.rule = words::rule(&e);
                e.story = words::story(&e);
                (Stage::Over, Some(e))
            }
            Stage::Over => (Stage::Over, None),
        })
    }
}

impl Explaining {
    /// The counterfactual runs to start with, and the class when it is known already.
    fn asking(&self, f: &Followed) -> Asking {
        let (cfg, target) = (&self.cfg, &f.found.target);
        let mut a = Asking {
            why: None,
            queue: VecDeque::new(),
            stop_at_hit: false,
            running: None,
            answers: Vec::new(),
            counterfactuals: Vec::new(),
        };
        let why = if target.hit {
            Some(Why::Hit)
        } else if cfg.cache.bypass {
            Some(Why::Bypassed)
        } else if cfg.timing.is_some() {
            a.queue.extend(timed_asks(cfg));
            None
        } else {
            Some(match target.class {
                Some(crate::cache::MissClass::Compulsory) | None => Why::Compulsory,
                Some(crate::cache::MissClass::Capacity) => Why::Capacity,
                Some(crate::cache::MissClass::Conflict) => Why::Conflict,
            })
        };
        if let Some(why) = why {
            a.decided(why, cfg, f);
        }
        a
    }

    /// Runs the next piece of the counterfactual runs; the class once they are all done.
    fn ask(
        &self,
        f: &Followed,
        a: &mut Asking,
        kernels: &[Kernel],
        keep_going: &mut dyn FnMut(u64, u64) -> bool,
    ) -> Result<Option<Why>, ExplainError> {
        if let Some((change, mut run)) = a.running.take() {
            if !run.piece(kernels, keep_going)? {
                a.running = Some((change, run));
                return Ok(None);
            }
            let found = run.observer.found;
            a.counterfactuals.push(Counterfactual {
                change,
                hit: found.map(|e| e.hit),
            });
            a.answers.push(found);
            if a.stop_at_hit && found.is_some_and(|e| e.hit) {
                a.queue.clear();
            }
            return Ok(None);
        }
        if let Some((change, changed)) = a.queue.pop_front() {
            // A configuration that is not valid is not asked (and not noted).
            if changed.validate().is_err() {
                a.answers.push(None);
            } else {
                let look = Lookup::new(f.key, changed.cache.line_bytes);
                a.running = Some((change, Running::new(changed, look, self.pieces)?));
            }
            return Ok(None);
        }
        match a.why {
            Some(why) => Ok(Some(why)),
            None => {
                let why = timed_why(&a.answers, &f.found.target);
                a.decided(why, &self.cfg, f);
                Ok(None)
            }
        }
    }
}

impl Asking {
    /// The class is known: the runs that say what would change it.
    fn decided(&mut self, why: Why, cfg: &SimConfig, f: &Followed) {
        self.why = Some(why);
        // A line its previous use, a store, did not bring in (no write-allocate): more room
        // changes nothing, allocating on stores would.
        let not_brought_in = !f.found.target.hit
            && cfg.timing.is_none()
            && !allocates_writes(cfg)
            && f.follow.previous_was_store();
        if why == Why::Bypassed {
            let mut caching = cfg.clone();
            caching.cache.bypass = false;
            let change = "the L1 caching global data (l1-bypass off)".to_string();
            self.queue.push_back((change, caching));
        } else if not_brought_in {
            let mut allocating = cfg.clone();
            allocating.cache.write_policy = WritePolicy::Wbwa;
            let label =
                choice::entry_of(&WritePolicy::Wbwa).map_or("write-back, allocate", |e| e.label);
            self.queue
                .push_back((format!("{label} (stores fill lines)"), allocating));
        } else if matches!(why, Why::Capacity | Why::Conflict) {
            self.queue.extend(more_room(cfg));
            self.stop_at_hit = true;
        }
    }
}

/// The timing model's comparison runs (Nugteren et al. 2014 §6.1, read per request), each
/// changing one thing: no latency, unlimited MSHRs, fully associative.
fn timed_asks(cfg: &SimConfig) -> [(String, SimConfig); 3] {
    let mut zero = cfg.clone();
    let mut unlimited = cfg.clone();
    let mut fa = cfg.clone();
    if let Some(z) = &mut zero.timing {
        z.hit_latency = 0;
        z.miss_latency = 0;
        z.l2_latency = 0;
        z.miss_latency_stddev = 0.0;
    }
    if let Some(u) = &mut unlimited.timing {
        u.mshrs = 0;
        u.mshrs_per_warp = 0;
    }
    fa.cache.ways = 0;
    [
        ("no latency".into(), zero),
        ("unlimited MSHRs".into(), unlimited),
        ("fully associative, same size".into(), fa),
    ]
}

/// Why a miss of the timing model missed, from the answers of [`timed_asks`]' runs.
fn timed_why(answers: &[Option<RequestEvent>], target: &RequestEvent) -> Why {
    let answer = |i: usize| answers.get(i).copied().flatten();
    let (z, u, f) = (answer(0), answer(1), answer(2));
    if z.is_none_or(|z| z.set_distance.is_none()) {
        Why::Compulsory
    } else if target.set_distance.is_none() {
        Why::Latency
    } else if u.is_some_and(|u| u.hit) {
        Why::Mshr
    } else if f.is_some_and(|f| f.hit) {
        Why::Conflict
    } else {
        Why::Capacity
    }
}

/// More ways (and so more capacity), 2, 4 and 8 times, for the misses that more room could
/// turn into hits (asked until the first that hits).
fn more_room(cfg: &SimConfig) -> Vec<(String, SimConfig)> {
    [2u32, 4, 8]
        .into_iter()
        .map(|k| {
            let mut more = cfg.clone();
            more.cache.size_bytes *= k as u64;
            if more.cache.ways != 0 {
                more.cache.ways *= k;
            }
            let change = format!(
                "{} ways ({})",
                more.cache.ways_effective(),
                crate::report::text::size_words(more.cache.size_bytes)
            );
            (change, more)
        })
        .collect()
}
