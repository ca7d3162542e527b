//! The shared L2 behind the L1s: slices (memory sub-partitions), each a sectored
//! set-associative cache, fed by every SM's L1 traffic in the order the requests issue.
//!
//! What an L1 request sends down ([`L2Model::below_l1`]): the sectors it fetched (a read miss,
//! or a partial write that allocates), the bytes it writes through (a store under
//! write-through), and the dirty sectors of the line its fill evicted (under write-back). Each
//! goes to the slice its address maps to (`address_map.rs`, GPGPU-Sim's decoder) and is one
//! L2 request of the L1's line; the slice indexes its sets by the address with the slice's
//! bits taken out and tags by the whole line, so lines of different slices never alias. A
//! slice is a [`CacheModel`]: misses fetch the missing sectors from DRAM, dirty lines go back
//! to DRAM when evicted (write-back), writes allocate without fetching and a sector written
//! only in part is fetched when it is first read (GPGPU-Sim's lazy fetch-on-read), and
//! Dinero IV's three Cs classify its misses. The model is simulated only when every SM is (`SimConfig::l2_simulated`): it sees
//! every SM's traffic or none.

mod address_map;
mod event;
mod heat;
mod report;

pub use address_map::AddressMap;
pub use event::{L2Cause, L2Event};
pub use heat::{SliceHeat, MAX_BINS};
pub use report::{L2Counters, L2InstRow, L2KernelRow, L2Report, L2SliceRow};

use crate::cache::{CacheModel, Outcome, Request, SetIndexFn, Written};
use crate::config::{CacheConfig, L2Config, ReuseMode};
use crate::reuse::ReuseMeter;
use crate::rng::Rng;

/// The L2 of one run: its slices, what they counted, and its reuse meter.
#[derive(Clone, Debug)]
pub struct L2Model {
    cfg: L2Config,
    map: AddressMap,
    index: SetIndexFn,
    slices: Vec<CacheModel>,
    /// The L1 writes stores through (else it writes dirty lines back when they leave).
    l1_write_through: bool,
    /// The L1's line and sector sizes, to turn its sectors into the L2's.
    l1_line_bytes: u64,
    l1_sector_bytes: u64,
    l2_line_bytes: u64,
    l2_sector_bytes: u64,
    per_slice: Vec<L2Counters>,
    /// Per kernel, per instruction (kernel `k`'s instruction `i` is `per_inst[k][i]`).
    per_inst: Vec<Vec<L2Counters>>,
    /// The L1s' final write-back of their dirty lines (no instruction's).
    flush: L2Counters,
    bytes_l1_to_l2: u64,
    bytes_l2_to_l1: u64,
    reuse: Option<ReuseMeter>,
    heat: SliceHeat,
    /// The requests made since the last [`L2Model::drain_events`], when kept
    /// ([`L2Model::keep_events`]).
    events: Option<Vec<L2Event>>,
    /// Why the requests being made now are made.
    cause: L2Cause,
}

impl L2Model {
    /// The L2 of `cfg` behind L1s of `l1`, its reuse distances measured as `reuse` says
    /// (resolved, not `auto`); the error is the address map's ([`L2Config::validate`]).
    pub fn new(
        cfg: &L2Config,
        l1: &CacheConfig,
        reuse: ReuseMode,
        seed: u64,
    ) -> Result<L2Model, String> {
        let slice = &cfg.slice;
        let n = cfg.slices() as usize;
        let map = AddressMap::new(cfg)?;
        let sets = slice.sets() as usize;
        Ok(L2Model {
            cfg: cfg.clone(),
            map,
            index: SetIndexFn::new(&slice.set_index, slice.sets(), slice.line_bytes),
            slices: (0..n)
                .map(|i| {
                    CacheModel::new_lazy(slice, Rng::fork(seed, 0x4C32_0000 + i as u64).next_u64())
                })
                .collect(),
            l1_write_through: l1.write_policy != crate::config::WritePolicy::Wbwa || l1.bypass,
            l1_line_bytes: l1.line_bytes.max(1) as u64,
            l1_sector_bytes: l1.sector_bytes.max(1) as u64,
            l2_line_bytes: slice.line_bytes.max(1) as u64,
            l2_sector_bytes: slice.sector_bytes.max(1) as u64,
            per_slice: vec![L2Counters::default(); n],
            per_inst: Vec::new(),
            flush: L2Counters::default(),
            bytes_l1_to_l2: 0,
            bytes_l2_to_l1: 0,
            reuse: ReuseMeter::new(reuse, sets * n, slice.lines() as usize * n),
            heat: SliceHeat::new(n),
            events: None,
            cause: L2Cause::Fetch,
        })
    }

    /// Keeps every request it makes as an [`L2Event`] until [`L2Model::drain_events`] (for an
    /// observer: explain, the app); `false` stops and forgets them.
    #[inline]
    pub fn keep_events(&mut self, keep: bool) {
        match keep {
            true => {
                self.events.get_or_insert_with(Vec::new);
            }
            false => self.events = None,
        }
    }

    /// Hands `f` the requests made since the last call, oldest first (none when not kept).
    #[inline]
    pub fn drain_events(&mut self, mut f: impl FnMut(&L2Event)) {
        if let Some(events) = &mut self.events {
            events.iter().for_each(&mut f);
            events.clear();
        }
    }

    /// Lets go of what only its report needs (each slice's classifier, the reuse meter):
    /// an L2 that gives the timing model's comparison runs their latencies, and is never
    /// reported, holds its slices' arrays only.
    pub fn for_latency_only(&mut self) {
        for s in &mut self.slices {
            drop(s.take_classifier());
        }
        self.reuse = None;
    }

    /// Its reuse meter anew for `mode` (a session made streamed before anything ran).
    pub fn set_reuse(&mut self, mode: ReuseMode) {
        let n = self.slices.len();
        let s = &self.cfg.slice;
        self.reuse = ReuseMeter::new(mode, s.sets() as usize * n, s.lines() as usize * n);
    }

    /// About the bytes it holds: its slices' arrays (a tag, three sector masks and the
    /// replacement state a line), their records of the sectors seen and the reuse meter,
    /// which grow with the lines, and the per-instruction counters.
    pub fn heap_bytes(&self) -> usize {
        let arrays = self.cfg.slice.lines() as usize * self.slices.len() * 32;
        arrays
            + self
                .slices
                .iter()
                .map(CacheModel::heap_bytes)
                .sum::<usize>()
            + self.reuse.as_ref().map_or(0, ReuseMeter::heap_bytes)
            + self
                .per_inst
                .iter()
                .map(|k| k.capacity() * std::mem::size_of::<L2Counters>())
                .sum::<usize>()
    }

    /// What L1 request `r`, with outcome `o`, sends to the L2: kernel `kernel`'s instruction
    /// `inst`'s fetch, write-through and the write-back of the line its fill evicted.
    /// `written`: the bytes of its line a store writes (bit b = byte b), where the coalescer
    /// knows them (lines of at most 128 bytes), so that the L2 learns which of its sectors the
    /// store covers whole.
    #[inline]
    pub fn below_l1(
        &mut self,
        r: &Request,
        o: &Outcome,
        kernel: u32,
        inst: u32,
        written: Option<u128>,
    ) {
        if o.fetched != 0 {
            self.fetch(r.line, o.fetched, kernel, inst);
        }
        // Under write-through a store goes on to the L2; under write-back what leaves is the
        // dirty line its fill evicted.
        if r.write && self.l1_write_through {
            self.write_through(r, kernel, inst, written);
        }
        if let (Some(line), true) = (o.evicted, o.written_back != 0) {
            self.bytes_l1_to_l2 += o.written_back.count_ones() as u64 * self.l1_sector_bytes;
            self.cause = L2Cause::WriteBack;
            self.send_sectors(line, o.written_back, true, false, Some((kernel, inst)));
        }
    }

    /// An L1 fill of L1 line `l1_line`'s `sectors` (L1 sectors) for kernel `kernel`'s
    /// instruction `inst`: whether every L2 request it made hit (the timing model's fill
    /// latency).
    #[inline]
    pub fn fetch(&mut self, l1_line: u64, sectors: u32, kernel: u32, inst: u32) -> bool {
        self.bytes_l2_to_l1 += sectors.count_ones() as u64 * self.l1_sector_bytes;
        self.cause = L2Cause::Fetch;
        self.send_sectors(l1_line, sectors, false, false, Some((kernel, inst)))
    }

    /// A store `r` (an L1 request) written through to the L2 for kernel `kernel`'s
    /// instruction `inst`; `written` as in [`L2Model::below_l1`].
    #[inline]
    pub fn write_through(&mut self, r: &Request, kernel: u32, inst: u32, written: Option<u128>) {
        self.cause = L2Cause::WriteThrough;
        self.pass_on(r, (kernel, inst), written);
    }

    /// A store `r` of the timing model, whose L1 takes loads only ([`L2Cause::Store`]), for
    /// kernel `kernel`'s instruction `inst`; `written` as in [`L2Model::below_l1`].
    pub fn store(&mut self, r: &Request, kernel: u32, inst: u32, written: Option<u128>) {
        self.cause = L2Cause::Store;
        self.pass_on(r, (kernel, inst), written);
    }

    /// Sends store `r`'s bytes on to the L2 (of `at`: kernel, instruction).
    fn pass_on(&mut self, r: &Request, at: (u32, u32), written: Option<u128>) {
        let at = Some(at);
        self.bytes_l1_to_l2 += r.bytes as u64;
        match written {
            Some(mask) if self.l1_line_bytes <= 128 => self.send_bytes(r.line, mask, at),
            _ => {
                let whole = r.bytes as u64 == r.sectors.count_ones() as u64 * self.l1_sector_bytes;
                self.send_sectors(r.line, r.sectors, true, !whole, at);
            }
        }
    }

    /// An L1's dirty line written back at the end of the run (Dinero IV's final copy-back).
    pub fn l1_flush(&mut self, line: u64, sectors: u32) {
        self.bytes_l1_to_l2 += sectors.count_ones() as u64 * self.l1_sector_bytes;
        self.cause = L2Cause::Flush;
        self.send_sectors(line, sectors, true, false, None);
    }

    /// Sends the L1 line `l1_line`'s `sectors` (L1 sectors) to the L2: one request per L2
    /// line they touch, each of the L2 sectors they cover; `partial`: every one of those is
    /// written only in part. Whether every request hit.
    fn send_sectors(
        &mut self,
        l1_line: u64,
        sectors: u32,
        write: bool,
        partial: bool,
        at: Option<(u32, u32)>,
    ) -> bool {
        let base = l1_line * self.l1_line_bytes;
        let (s1, s2) = (self.l1_sector_bytes, self.l2_sector_bytes);
        if self.l1_line_bytes == self.l2_line_bytes && s1 == s2 {
            let p = if partial { sectors } else { 0 };
            return self.request(base, sectors, write, Written::Partial(p), at);
        }
        // Different geometries: gather the L2 sectors per L2 line, in address order. An L1
        // sector smaller than the L2's writes only part of it.
        let part = |s: u32| if partial || s2 > s1 { s } else { 0 };
        let mut current: Option<(u64, u32)> = None;
        let mut all_hit = true;
        let mut m = sectors;
        while m != 0 {
            let start = base + m.trailing_zeros() as u64 * s1;
            m &= m - 1;
            let mut a = start - start % s2;
            while a < start + s1 {
                let line = a / self.l2_line_bytes;
                let bit = 1u32 << ((a % self.l2_line_bytes) / s2);
                match &mut current {
                    Some((l, s)) if *l == line => *s |= bit,
                    _ => {
                        if let Some((l, s)) = current.replace((line, bit)) {
                            let w = Written::Partial(part(s));
                            all_hit &= self.request(l * self.l2_line_bytes, s, write, w, at);
                        }
                    }
                }
                a += s2;
            }
        }
        if let Some((l, s)) = current {
            let w = Written::Partial(part(s));
            all_hit &= self.request(l * self.l2_line_bytes, s, write, w, at);
        }
        all_hit
    }

    /// Sends a store of the bytes `mask` of L1 line `l1_line` (at most 128 bytes) to the L2:
    /// the L2 sectors it touches, with the bytes it writes of each L2 line (where the L2's
    /// lines are of at most 128 bytes; else the sectors it does not cover whole, in part).
    fn send_bytes(&mut self, l1_line: u64, mask: u128, at: Option<(u32, u32)>) {
        let l1 = self.l1_line_bytes;
        let base = l1_line * l1;
        let (s2, l2) = (self.l2_sector_bytes, self.l2_line_bytes);
        let by_bytes = l2 <= 128;
        // The L2 line, its sectors, those written in part, the bytes written of it.
        let mut current: Option<(u64, u32, u32, u128)> = None;
        let mut a = base - base % s2;
        while a < base + l1 {
            let (lo, hi) = (a.max(base), (a + s2).min(base + l1));
            let width = hi - lo;
            let ones = if width >= 128 {
                u128::MAX
            } else {
                (1u128 << width) - 1
            };
            let bits = (mask >> (lo - base)) & ones;
            if bits != 0 {
                let line = a / l2;
                let bit = 1u32 << ((a % l2) / s2);
                let part = if bits == ones && width == s2 { 0 } else { bit };
                let shift = lo - line * l2;
                let bytes = if by_bytes && shift < 128 {
                    bits << shift
                } else {
                    0
                };
                match &mut current {
                    Some((l, s, p, b)) if *l == line => {
                        *s |= bit;
                        *p |= part;
                        *b |= bytes;
                    }
                    _ => {
                        if let Some(prev) = current.replace((line, bit, part, bytes)) {
                            self.send_written(prev, by_bytes, at);
                        }
                    }
                }
            }
            a += s2;
        }
        if let Some(prev) = current {
            self.send_written(prev, by_bytes, at);
        }
    }

    /// One store's request of an L2 line: `(line, sectors, written in part, bytes written)`.
    fn send_written(
        &mut self,
        (line, s, p, b): (u64, u32, u32, u128),
        by_bytes: bool,
        at: Option<(u32, u32)>,
    ) {
        let w = if by_bytes {
            Written::Bytes {
                mask: b,
                sector_bytes: self.l2_sector_bytes as u32,
            }
        } else {
            Written::Partial(p)
        };
        self.request(line * self.l2_line_bytes, s, true, w, at);
    }

    /// One L2 request: the line at byte address `addr`, its `sectors` (L2 sectors);
    /// `written`: what a write covers of them. Whether it hit.
    #[inline]
    fn request(
        &mut self,
        addr: u64,
        sectors: u32,
        write: bool,
        written: Written,
        at: Option<(u32, u32)>,
    ) -> bool {
        let (slice, local) = self.map.slice_of(addr);
        let line = addr / self.l2_line_bytes;
        let set = self.index.set(local / self.l2_line_bytes);
        let r = Request {
            line,
            sectors,
            write,
            bytes: sectors.count_ones() * self.l2_sector_bytes as u32,
        };
        let o = self.slices[slice as usize].access_lazy_in_set(&r, set, written);
        let sets = self.cfg.slice.sets();
        if let Some(m) = &mut self.reuse {
            m.access(line, slice * sets + set);
        }
        self.heat.add(slice, !o.hit);
        if let Some(events) = &mut self.events {
            events.push(L2Event {
                slice,
                line,
                set,
                write,
                hit: o.hit,
                missing: o.missing,
                class: o.class,
                evicted: o.evicted,
                cause: self.cause,
            });
        }
        let add = |c: &mut L2Counters| c.record(&r, &o);
        add(&mut self.per_slice[slice as usize]);
        match at {
            Some((k, i)) => {
                let k = k as usize;
                if self.per_inst.len() <= k {
                    self.per_inst.resize_with(k + 1, Vec::new);
                }
                let row = &mut self.per_inst[k];
                if row.len() <= i as usize {
                    row.resize(i as usize + 1, L2Counters::default());
                }
                add(&mut row[i as usize]);
            }
            None => add(&mut self.flush),
        }
        o.hit
    }

    /// The report: totals, per slice, per kernel (`names[k]` is kernel `k`'s name), per
    /// instruction (`inst_name(k, i)`), and the reuse distances.
    pub fn report(&self, names: &[String], inst_name: impl Fn(u32, u32) -> String) -> L2Report {
        report::build(self, names, inst_name)
    }
}
