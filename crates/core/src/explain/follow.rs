//! The observers behind an explanation: [`Find`] stops at request N, [`Follow`] tracks its
//! line and its set up to it, [`Lookup`] finds the same request in a changed configuration.

use rustc_hash::{FxHashMap, FxHashSet};

use super::l2::L2Follow;
use super::{
    shape, Access, Asked, Counterfactual, Eviction, Explanation, Flight, Resident, Reuse, Why,
};
use crate::cache::SetIndexFn;
use crate::config::SimConfig;
use crate::sim::{Observer, RequestEvent};
use crate::trace::{Columns, Kernel};

/// An observer that knows when it has seen what it needs.
pub(super) trait Stops: Observer {
    fn done(&self) -> bool;
}

/// Relays events to an observer and stops the run when it is done or the caller cancels.
pub(super) struct Relay<'a, O> {
    pub inner: &'a mut O,
    pub keep_going: &'a mut dyn FnMut(u64, u64) -> bool,
    pub cancelled: bool,
}

impl<O: Stops> Observer for Relay<'_, O> {
    fn on_kernel(&mut self, kernel: u32, header: &Kernel) {
        self.inner.on_kernel(kernel, header);
    }
    fn on_instructions(&mut self, kernel: u32, added: &[crate::trace::Instruction]) {
        self.inner.on_instructions(kernel, added);
    }
    fn on_request(&mut self, event: &RequestEvent) {
        self.inner.on_request(event);
    }
    fn on_warp_instruction(&mut self, cols: &Columns, rows: &[u32]) {
        self.inner.on_warp_instruction(cols, rows);
    }
    fn after_request(&mut self, event: &RequestEvent, cache: &crate::cache::CacheModel) {
        self.inner.after_request(event, cache);
    }
    fn on_l2(&mut self, event: &crate::l2::L2Event) {
        self.inner.on_l2(event);
    }
    fn progress(&mut self, done: u64, total: u64) -> bool {
        if !(self.keep_going)(done, total) {
            self.cancelled = true;
            return false;
        }
        !self.inner.done()
    }
}

/// Kernel and instruction names, from each kernel's header as it starts.
#[derive(Default)]
pub(super) struct Names {
    kernels: Vec<(String, Vec<String>)>,
}

impl Names {
    pub(super) fn add(&mut self, kernel: u32, header: &Kernel) {
        let k = kernel as usize;
        if self.kernels.len() <= k {
            self.kernels.resize(k + 1, Default::default());
        }
        self.kernels[k] = (
            header.name.clone(),
            header.instructions.iter().map(|i| i.name.clone()).collect(),
        );
    }
    /// Instructions kernel `kernel` found after it began.
    pub(super) fn more(&mut self, kernel: u32, added: &[crate::trace::Instruction]) {
        if let Some((_, insts)) = self.kernels.get_mut(kernel as usize) {
            insts.extend(added.iter().map(|i| i.name.clone()));
        }
    }
    pub(super) fn kernel(&self, kernel: u32) -> String {
        self.kernels
            .get(kernel as usize)
            .map_or_else(|| format!("kernel {kernel}"), |k| k.0.clone())
    }
    pub(super) fn inst(&self, kernel: u32, inst: u32) -> String {
        self.kernels
            .get(kernel as usize)
            .and_then(|k| k.1.get(inst as usize))
            .cloned()
            .unwrap_or_else(|| format!("#{inst}"))
    }
}

/// The accesses of the last warp instruction: (thread, address, bytes, flags) per row.
#[derive(Default)]
pub(super) struct LastInstruction(Vec<(u32, u64, u16, u8)>);

impl LastInstruction {
    pub(super) fn keep(&mut self, cols: &Columns, rows: &[u32]) {
        self.0.clear();
        self.0.extend(rows.iter().map(|&r| {
            let r = r as usize;
            (cols.thread[r], cols.addr[r], cols.size[r], cols.flags[r])
        }));
    }
    /// As [`Access`]es, marking those that touch `line` (of `line_bytes`).
    pub(super) fn accesses(&self, line: u64, line_bytes: u64) -> Vec<Access> {
        self.0
            .iter()
            .filter(|a| crate::trace::model_flags(a.3).1.reaches_l1())
            .map(|&(thread, address, bytes, flags)| {
                let last = address + (bytes.max(1) as u64) - 1;
                Access {
                    thread,
                    address,
                    bytes: bytes as u32,
                    kind: crate::trace::model_flags(flags).0.token(),
                    in_line: address / line_bytes <= line && line <= last / line_bytes,
                }
            })
            .collect()
    }
}

/// Stops at request `n` and keeps it, with its warp instruction's accesses.
pub(super) struct Find {
    pub n: u64,
    pub seen: u64,
    pub found: Option<RequestEvent>,
    pub names: Names,
    last: LastInstruction,
    pub accesses: Vec<Access>,
    line_bytes: u64,
}

impl Find {
    pub fn new(n: u64, line_bytes: u32) -> Self {
        Find {
            n,
            seen: 0,
            found: None,
            names: Names::default(),
            last: LastInstruction::default(),
            accesses: Vec::new(),
            line_bytes: line_bytes.max(1) as u64,
        }
    }
}

impl Observer for Find {
    fn on_kernel(&mut self, kernel: u32, header: &Kernel) {
        self.names.add(kernel, header);
    }
    fn on_instructions(&mut self, kernel: u32, added: &[crate::trace::Instruction]) {
        self.names.more(kernel, added);
    }
    fn on_warp_instruction(&mut self, cols: &Columns, rows: &[u32]) {
        if self.found.is_none() {
            self.last.keep(cols, rows);
        }
    }
    fn on_request(&mut self, e: &RequestEvent) {
        if self.found.is_none() && self.seen == self.n {
            self.found = Some(*e);
            self.accesses = self.last.accesses(e.line, self.line_bytes);
        }
        self.seen += 1;
    }
}

impl Stops for Find {
    fn done(&self) -> bool {
        self.found.is_some()
    }
}

/// What a request is, whatever the configuration: kernel, CTA, warp, instruction, line,
/// whether it writes, and how many such requests came before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Key {
    kernel: u32,
    cta: u32,
    warp: u32,
    inst: u32,
    line: u64,
    write: bool,
    nth: u64,
}

impl Key {
    pub fn of(e: &RequestEvent, nth: u64) -> Self {
        Key {
            kernel: e.kernel,
            cta: e.cta,
            warp: e.warp,
            inst: e.inst,
            line: e.line,
            write: e.write,
            nth,
        }
    }
    fn matches(&self, e: &RequestEvent) -> bool {
        (e.kernel, e.cta, e.warp, e.inst, e.line, e.write)
            == (
                self.kernel,
                self.cta,
                self.warp,
                self.inst,
                self.line,
                self.write,
            )
    }
}

/// Finds the request a [`Key`] names.
pub(super) struct Lookup {
    key: Key,
    seen: u64,
    pub found: Option<RequestEvent>,
    last: LastInstruction,
    pub accesses: Vec<Access>,
    line_bytes: u64,
}

impl Lookup {
    pub fn new(key: Key, line_bytes: u32) -> Self {
        Lookup {
            key,
            seen: 0,
            found: None,
            last: LastInstruction::default(),
            accesses: Vec::new(),
            line_bytes: line_bytes.max(1) as u64,
        }
    }
}

impl Observer for Lookup {
    fn on_warp_instruction(&mut self, cols: &Columns, rows: &[u32]) {
        if self.found.is_none() {
            self.last.keep(cols, rows);
        }
    }
    fn on_request(&mut self, e: &RequestEvent) {
        if self.found.is_some() || !self.key.matches(e) {
            return;
        }
        if self.seen == self.key.nth {
            self.found = Some(*e);
            self.accesses = self.last.accesses(e.line, self.line_bytes);
        }
        self.seen += 1;
    }
}

impl Stops for Lookup {
    fn done(&self) -> bool {
        self.found.is_some()
    }
}

/// A line of the target's set, as the requests before the target left it.
#[derive(Clone, Copy, Default)]
struct SetLine {
    resident: bool,
    filled_by: u64,
    last_use: u64,
    uses: u64,
}

/// Follows the target's line and set on its SM up to the target.
pub(super) struct Follow {
    n: u64,
    seen: u64,
    target: RequestEvent,
    allocate_writes: bool,
    /// Requests like the target before it.
    pub nth: u64,
    /// Last use of every line of the SM.
    last_use: FxHashMap<u64, u64>,
    set: FxHashMap<u64, SetLine>,
    previous: Option<(u64, RequestEvent)>,
    /// The last eviction of the line since its previous use, with the set's lines then.
    evicted: Option<(u64, RequestEvent, Vec<Resident>)>,
    /// Other lines of the set used since the previous use, in order of first use.
    since: Vec<(u64, RequestEvent)>,
    since_lines: FxHashSet<u64>,
    /// The last request that started a fetch of the line (timing model).
    fetch: Option<(u64, RequestEvent)>,
    /// The request seen last, on any SM (the L2 requests that follow are its).
    current: Option<(u64, RequestEvent)>,
    /// The target's line in the L2, when it is simulated.
    l2: Option<L2Follow>,
}

impl Follow {
    pub fn new(n: u64, target: RequestEvent, allocate_writes: bool, l2: Option<L2Follow>) -> Self {
        Follow {
            n,
            seen: 0,
            target,
            allocate_writes,
            nth: 0,
            last_use: FxHashMap::default(),
            set: FxHashMap::default(),
            previous: None,
            evicted: None,
            since: Vec::new(),
            since_lines: FxHashSet::default(),
            fetch: None,
            current: None,
            l2,
        }
    }

    fn step(&mut self, i: u64, e: &RequestEvent) {
        let t = self.target;
        if Key::of(&t, 0).matches(e) {
            self.nth += 1;
        }
        self.last_use.insert(e.line, i);
        if e.line == t.line {
            self.previous = Some((i, *e));
            self.evicted = None;
            self.since.clear();
            self.since_lines.clear();
            if !e.hit && !e.in_flight && e.time.is_some() {
                self.fetch = Some((i, *e));
            }
        }
        if e.set != t.set {
            return;
        }
        if e.line != t.line && self.since_lines.insert(e.line) {
            self.since.push((i, *e));
        }
        if let Some(victim) = e.evicted {
            if victim == t.line {
                let mut residents: Vec<Resident> = self
                    .set
                    .iter()
                    .filter(|(_, l)| l.resident)
                    .map(|(&line, l)| Resident {
                        line,
                        filled_by: l.filled_by,
                        last_use: l.last_use,
                        uses: l.uses,
                    })
                    .collect();
                residents.sort_by_key(|r| (r.last_use, r.line));
                self.evicted = Some((i, *e, residents));
            }
            if let Some(l) = self.set.get_mut(&victim) {
                l.resident = false;
            }
        }
        let l = self.set.entry(e.line).or_default();
        if l.resident {
            l.uses += 1;
        } else if !e.write || self.allocate_writes {
            *l = SetLine {
                resident: true,
                filled_by: i,
                last_use: i,
                uses: 1,
            };
        }
        l.last_use = i;
    }

    /// The explanation of the followed request.
    /// Whether the line's previous use on the SM was a store.
    pub fn previous_was_store(&self) -> bool {
        self.previous.is_some_and(|(_, e)| e.write)
    }

    pub fn finish(
        self,
        cfg: &SimConfig,
        names: &Names,
        accesses: Vec<Access>,
        why: Why,
        counterfactuals: Vec<Counterfactual>,
    ) -> Explanation {
        let t = self.target;
        let c = &cfg.cache;
        let shape = shape(cfg);
        let sectors = if t.sectors != 0 {
            t.sectors
        } else {
            sectors_of(&accesses, t.line, c.line_bytes, c.sector_bytes)
        };
        let index = SetIndexFn::new(&c.set_index, c.sets(), c.line_bytes);
        let asked = Asked {
            kernel_name: names.kernel(t.kernel),
            accesses,
            line_address: t.line * c.line_bytes as u64,
            sectors: (0..32).filter(|b| sectors >> b & 1 == 1).collect(),
            set_index: index.derivation(t.line, c.line_bytes),
        };
        let reuse = self.previous.map(|(p, _)| {
            let after = |u: u64| u > p;
            Reuse {
                set_lines: self
                    .set
                    .iter()
                    .filter(|(&l, s)| l != t.line && after(s.last_use))
                    .count() as u64,
                lines: self
                    .last_use
                    .iter()
                    .filter(|(&l, &u)| l != t.line && after(u))
                    .count() as u64,
                stack_distance: t.set_distance,
            }
        });
        let present = self.set.get(&t.line).is_some_and(|l| l.resident);
        let eviction = match (&cfg.timing, self.evicted) {
            (None, Some((i, by, residents))) => Some(Eviction {
                by: names.use_of(i, &by),
                reason: super::words::policy_reason(
                    c.replacement,
                    t.line,
                    &residents,
                    shape.ways,
                    c.line_bytes,
                ),
                residents,
            }),
            // The LRU stack pushed the line out when the ways-th other line of its set came.
            (Some(_), _) if !t.hit && t.set_distance.is_some() => self
                .since
                .get(shape.ways as usize - 1)
                .map(|(i, by)| Eviction {
                    by: names.use_of(*i, by),
                    reason: format!(
                        "the set's LRU stack holds {} lines: {} other lines of the set were used after its previous use, and this request's line was the {}th, which pushed it out",
                        shape.ways,
                        self.since.len(),
                        shape.ways
                    ),
                    residents: Vec::new(),
                }),
            _ => None,
        };
        let flight = self.fetch.filter(|_| t.in_flight).and_then(|(i, by)| {
            Some(Flight {
                fetched_by: names.use_of(i, &by),
                arrives_at: by.effect_at?,
            })
        });
        Explanation {
            request: names.use_of(self.n, &t),
            asked,
            cache: shape,
            previous: self.previous.map(|(i, e)| names.use_of(i, &e)),
            reuse,
            eviction,
            sector_miss: !t.hit && present && cfg.timing.is_none(),
            flight,
            refused: t.refused,
            why,
            rule: String::new(),
            counterfactuals,
            l2: self.l2.and_then(|f| f.finish(names)),
            story: Vec::new(),
        }
    }
}

impl Observer for Follow {
    fn on_request(&mut self, e: &RequestEvent) {
        let i = self.seen;
        self.seen += 1;
        if self.l2.is_some() {
            self.current = Some((i, *e));
        }
        if i < self.n && e.sm == self.target.sm {
            self.step(i, e);
        }
    }
    fn on_l2(&mut self, e: &crate::l2::L2Event) {
        if let Some(f) = &mut self.l2 {
            f.step(self.current.as_ref().map(|(i, by)| (*i, by)), self.n, e);
        }
    }
}

impl Stops for Follow {
    fn done(&self) -> bool {
        self.seen > self.n
    }
}

/// The sectors of `line` that `accesses` touch.
fn sectors_of(accesses: &[Access], line: u64, line_bytes: u32, sector_bytes: u32) -> u32 {
    let (lb, sb) = (line_bytes.max(1) as u64, sector_bytes.max(1) as u64);
    let (lo, hi) = (line * lb, (line + 1) * lb);
    let mut bits = 0u32;
    for a in accesses.iter().filter(|a| a.in_line) {
        let first = a.address.max(lo);
        let last = (a.address + a.bytes.max(1) as u64 - 1).min(hi - 1);
        for s in (first - lo) / sb..=(last - lo) / sb {
            bits |= 1 << s.min(31);
        }
    }
    bits
}
