//! The L1 cache model: a set-associative array plus Dinero IV's three-C miss classification.
//!
//! [`CacheModel::access`] takes one coalesced request and returns whether it hit, its miss
//! class and the memory traffic it caused. Classification follows Dinero IV's `-ccc` exactly
//! ([`Classifier`], `classes.rs`): a fully associative shadow of the same capacity, an
//! [`LruStack`] where that shadow is one and otherwise a one-set [`CacheArray`], and the
//! record of the sectors ever referenced ([`Seen`], a bit per sector), asked only for a
//! request that missed both the cache and the shadow. The classifier may also run apart from
//! the cache and hand it a [`Tag`] per request ([`CacheModel::access_tagged`]).

mod array;
mod classes;
mod lru_stack;
pub mod replacement;
mod seen;
pub mod set_index;
mod stats;
mod way_index;

pub use array::{ArrayOutcome, CacheArray, WayState, Written};
pub use classes::{Classifier, Tag};
pub use lru_stack::LruStack;
pub use seen::Seen;
pub use set_index::SetIndexFn;
pub use stats::{Counters, MissClass, MissClasses};
pub use way_index::WayIndex;

use crate::config::{CacheConfig, WritePolicy};

/// One request to the cache: a line, the sectors it needs, and whether it writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    /// Line address (byte address >> log2(line size)).
    pub line: u64,
    /// Bit i set = sector i of the line is referenced.
    pub sectors: u32,
    pub write: bool,
    /// Bytes of the line the request touches (write-through traffic, partial-write fetches).
    pub bytes: u32,
}

/// The result of one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outcome {
    pub set: u32,
    pub hit: bool,
    pub class: Option<MissClass>,
    pub bytes_from_memory: u64,
    pub bytes_to_memory: u64,
    pub writeback: bool,
    /// The line this request's fill evicted from the cache.
    pub evicted: Option<u64>,
    /// The requested sectors that were not in the cache (bit i = sector i).
    pub missing: u32,
    /// The sectors fetched from the level below (`missing` where the request fetched them:
    /// a read, or a partial write with allocation; else 0).
    pub fetched: u32,
    /// The dirty sectors of `evicted` written back to the level below (0 if none).
    pub written_back: u32,
}

/// A cache with its classifier (its fully associative shadow and the record of every sector
/// ever seen).
#[derive(Clone, Debug)]
pub struct CacheModel {
    index: SetIndexFn,
    main: CacheArray,
    /// Away while another thread runs it ([`CacheModel::take_classifier`]).
    classes: Option<Classifier>,
    shadow_is_a_stack: bool,
    write_allocate: bool,
    /// It caches nothing ([`CacheConfig::bypass`]).
    bypass: bool,
    /// Stores allocate without fetching and go through (`wtwa`, the H100's L1).
    lazy_writes: bool,
    line_bytes: u64,
    sector_bytes: u64,
}

/// Where a request's miss class comes from.
#[derive(Clone, Copy)]
enum ClassFrom {
    /// The cache's own classifier.
    Classifier,
    /// The line's whole-cache reuse distance (where the shadow is an LRU stack).
    Distance(Option<u64>),
    /// A classifier run elsewhere.
    Tag(Tag),
}

impl CacheModel {
    /// Builds the model; the configuration must be valid ([`CacheConfig::validate`]).
    pub fn new(cfg: &CacheConfig, seed: u64) -> Self {
        let sets = cfg.sets() as usize;
        let ways = cfg.ways_effective() as usize;
        let classes = Classifier::new(cfg, seed);
        CacheModel {
            index: SetIndexFn::new(&cfg.set_index, sets as u32, cfg.line_bytes),
            main: CacheArray::new(sets, ways, cfg.replacement, seed),
            shadow_is_a_stack: classes.shadow_is_a_stack(),
            classes: Some(classes),
            write_allocate: cfg.write_policy == WritePolicy::Wbwa && !cfg.bypass,
            bypass: cfg.bypass,
            lazy_writes: cfg.write_policy == WritePolicy::Wtwa && !cfg.bypass,
            line_bytes: cfg.line_bytes as u64,
            sector_bytes: cfg.sector_bytes as u64,
        }
    }

    /// Builds the model of a cache accessed under lazy fetch-on-read
    /// ([`CacheModel::access_lazy_in_set`]: an L2 slice), its classifier's shadow lazy too.
    pub fn new_lazy(cfg: &CacheConfig, seed: u64) -> Self {
        let mut c = CacheModel::new(cfg, seed);
        c.classes = Some(Classifier::new_lazy(cfg, seed));
        c.shadow_is_a_stack = false;
        c
    }

    /// About the bytes it holds beyond the two arrays' own size: the record of every sector
    /// seen (for compulsory misses), which grows with the lines the trace touches (a bit per
    /// sector where they lie close together).
    pub fn heap_bytes(&self) -> usize {
        self.classes.as_ref().map_or(0, Classifier::heap_bytes)
    }

    /// Whether [`CacheModel::access_at_distance`] may stand for [`CacheModel::access`]: LRU,
    /// write-allocate, unsectored lines ([`Classifier::shadow_is_a_stack`]).
    pub fn shadow_is_a_stack(&self) -> bool {
        self.shadow_is_a_stack
    }

    /// Takes the classifier out, to run apart ([`CacheModel::access_tagged`]); give it back
    /// before the next [`CacheModel::access`].
    pub fn take_classifier(&mut self) -> Option<Classifier> {
        self.classes.take()
    }

    /// Gives back the classifier [`CacheModel::take_classifier`] took.
    pub fn put_classifier(&mut self, classes: Classifier) {
        self.classes = Some(classes);
    }

    /// Writes back every dirty line, as Dinero IV does when a trace ends; the counters get the
    /// lines and bytes in `flush_writebacks` and `flush_bytes_to_memory`, and the bytes in
    /// `bytes_to_memory` too (so that it matches Dinero's "Bytes To Memory").
    pub fn flush(&mut self, into: &mut Counters) {
        self.flush_each(into, |_, _| {});
    }

    /// [`CacheModel::flush`], telling `f` each dirty line written back and its sectors (for
    /// the level below).
    pub fn flush_each(&mut self, into: &mut Counters, f: impl FnMut(u64, u32)) {
        let (lines, sectors) = self.main.flush_each(f);
        let bytes = sectors * self.sector_bytes;
        into.flush_writebacks += lines;
        into.flush_bytes_to_memory += bytes;
        into.bytes_to_memory += bytes;
    }

    /// The ways of `set` as they are now, and what their policy state means.
    pub fn set_state(&self, set: u32) -> (Vec<WayState>, &'static str) {
        (
            self.main.set_state(set as usize),
            self.main.policy_state_meaning(),
        )
    }

    #[inline]
    pub fn set_of(&self, line: u64) -> u32 {
        self.index.set(line)
    }

    /// The set index function ([`CacheModel::set_of`]).
    pub fn set_index(&self) -> &SetIndexFn {
        &self.index
    }

    /// Simulates one request.
    #[inline]
    pub fn access(&mut self, r: &Request) -> Outcome {
        self.access_written(r, None)
    }

    /// Simulates one request; a store's `written` bytes of its line (bit b = byte b, where the
    /// coalescer knows them: lines of at most 128 bytes) tell a `wtwa` cache which sectors it
    /// covers whole (without them, a store that writes fewer bytes than its sectors hold
    /// covers none whole).
    #[inline]
    pub fn access_written(&mut self, r: &Request, written: Option<u128>) -> Outcome {
        let set = self.index.set(r.line);
        if self.lazy_writes {
            return self.access_through_lazily(r, set, written);
        }
        self.access_in(r, set, ClassFrom::Classifier)
    }

    /// Whether a store's bytes change what it does ([`CacheModel::access_written`]: `wtwa`).
    #[inline]
    pub fn wants_written(&self) -> bool {
        self.lazy_writes
    }

    /// Whether the classifier may run apart ([`CacheModel::access_tagged`]): not for `wtwa`,
    /// whose shadow needs the bytes each store writes.
    pub fn classifies_apart(&self) -> bool {
        !self.lazy_writes
    }

    /// `wtwa`: a store looks its line up by tag (a hit when the line is there, whatever its
    /// sectors), allocates it on a miss without fetching, and goes through whole to the level
    /// below; a sector it covers only in part is fetched by the first load that needs it
    /// (GPGPU-Sim's `T` with `L`, lazy fetch-on-read, the sectors made whole by the bytes
    /// written since the line came in). A load is as under any policy.
    #[inline]
    fn access_through_lazily(&mut self, r: &Request, set: u32, written: Option<u128>) -> Outcome {
        let sb = self.sector_bytes;
        let w = match written {
            Some(mask) if self.line_bytes <= 128 => Written::Bytes {
                mask,
                sector_bytes: sb as u32,
            },
            _ if r.bytes as u64 == r.sectors.count_ones() as u64 * sb => Written::Partial(0),
            _ => Written::Partial(r.sectors),
        };
        let m = self
            .main
            .access_lazy(set as usize, r.line, r.sectors, r.write, w, false);
        let hit = if r.write { m.line_hit } else { m.hit };
        let class = match &mut self.classes {
            Some(c) => c.classify_lazy(r, w, hit),
            None => None,
        };
        let fetched = if r.write { 0 } else { m.missing_sectors };
        Outcome {
            set,
            hit,
            class,
            bytes_from_memory: fetched.count_ones() as u64 * sb,
            bytes_to_memory: if r.write { r.bytes as u64 } else { 0 },
            writeback: false,
            evicted: m.evicted,
            missing: m.missing_sectors,
            fetched,
            written_back: 0,
        }
    }

    /// Simulates one request in `set`, which the caller computed (an L2 slice indexes its sets
    /// by the address within the slice), under lazy fetch-on-read ([`CacheArray::access_lazy`],
    /// GPGPU-Sim's L2): a write fetches nothing, and the sectors it does not cover whole
    /// (`w`: in part, or by the bytes written since the line came in) are fetched by the first
    /// read that needs them. For a write-back cache built by
    /// [`CacheModel::new_lazy`].
    #[inline]
    pub fn access_lazy_in_set(&mut self, r: &Request, set: u32, w: Written) -> Outcome {
        let m = self
            .main
            .access_lazy(set as usize, r.line, r.sectors, r.write, w, true);
        let class = match &mut self.classes {
            Some(c) => c.classify_lazy(r, w, m.hit),
            None => None,
        };
        let fetched = if r.write { 0 } else { m.missing_sectors };
        Outcome {
            set,
            hit: m.hit,
            class,
            bytes_from_memory: fetched.count_ones() as u64 * self.sector_bytes,
            bytes_to_memory: m.writeback_sectors.count_ones() as u64 * self.sector_bytes,
            writeback: m.writeback_sectors > 0,
            evicted: m.evicted,
            missing: m.missing_sectors,
            fetched,
            written_back: m.writeback_sectors,
        }
    }

    /// Bytes of dirty sectors in the cache now.
    pub fn dirty_bytes(&self) -> u64 {
        self.main.dirty_sectors() * self.sector_bytes
    }

    /// Simulates one request whose tag a classifier running apart gave (the same classifier
    /// as the cache's, fed the same requests: [`CacheModel::take_classifier`]).
    #[inline]
    pub fn access_tagged(&mut self, r: &Request, tag: Tag) -> Outcome {
        let set = self.index.set(r.line);
        self.access_in(r, set, ClassFrom::Tag(tag))
    }

    /// Simulates one request in `set` (its [`CacheModel::set_of`]) whose line's whole-cache
    /// reuse distance is `distance` (`None`: its first use), which classifies its miss without
    /// the fully associative shadow: the same outcome as [`CacheModel::access`] when
    /// [`CacheModel::shadow_is_a_stack`] (`tests/model/properties.rs` compares them), as a fully
    /// associative LRU cache of `n` lines hits exactly when the distance is below `n`.
    #[inline]
    pub fn access_at_distance(&mut self, r: &Request, set: u32, distance: Option<u64>) -> Outcome {
        debug_assert!(self.shadow_is_a_stack());
        self.access_in(r, set, ClassFrom::Distance(distance))
    }

    #[inline]
    fn access_in(&mut self, r: &Request, set: u32, from: ClassFrom) -> Outcome {
        let allocate = !r.write || self.write_allocate;
        let dirty = r.write && self.write_allocate;
        let m = if self.bypass {
            // Nothing is held: every sector is missing, nothing is allocated or evicted.
            ArrayOutcome {
                missing_sectors: r.sectors,
                ..ArrayOutcome::default()
            }
        } else {
            self.main
                .access(set as usize, r.line, r.sectors, allocate, dirty)
        };
        let class = match (from, &mut self.classes) {
            (ClassFrom::Classifier, Some(c)) => c.classify(r, m.hit),
            (ClassFrom::Distance(d), Some(c)) => (!m.hit).then(|| c.tag_at_distance(d).class()),
            (ClassFrom::Tag(t), _) => (!m.hit).then(|| t.class()),
            // The classifier is away: nothing classifies (the session refuses such requests).
            (_, None) => None,
        };
        // Only the sectors that were not there are fetched: a request that finds some of its
        // sectors counts them as hits on an H100 (docs/hardware.md).
        // A read that misses fetches them; a write with allocation only when it does not
        // cover its sectors whole; a write without allocation goes to memory. (As
        // arithmetic on 0 and 1, with no branch on the request: reads and writes, hits and
        // misses follow no pattern the processor could predict on a trace of many misses.)
        let fetch_bytes = m.missing_sectors.count_ones() as u64 * self.sector_bytes;
        let request_bytes = r.sectors.count_ones() as u64 * self.sector_bytes;
        let (write, allocate) = (r.write as u64, self.write_allocate as u64);
        let partial = (r.bytes as u64 != request_bytes) as u64;
        let fetches = (1 - write) + write * allocate * partial;
        let from = fetch_bytes * fetches;
        let to = m.writeback_sectors.count_ones() as u64 * self.sector_bytes
            + write * (1 - allocate) * r.bytes as u64;
        Outcome {
            set,
            hit: m.hit,
            class,
            bytes_from_memory: from,
            bytes_to_memory: to,
            writeback: m.writeback_sectors > 0,
            evicted: m.evicted,
            missing: m.missing_sectors,
            fetched: m.missing_sectors * fetches as u32,
            written_back: m.writeback_sectors,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Replacement, SetIndex};

    fn cfg(lines: u64, ways: u32) -> CacheConfig {
        CacheConfig {
            size_bytes: lines * 4,
            line_bytes: 4,
            ways,
            sector_bytes: 4,
            set_index: SetIndex::Modulo,
            replacement: Replacement::Lru,
            write_policy: WritePolicy::Wtna,
            bypass: false,
        }
    }
    fn read(line: u64) -> Request {
        Request {
            line,
            sectors: 1,
            write: false,
            bytes: 4,
        }
    }

    #[test]
    fn seed001_table1_two_line_cache() {
        // Lines 0 1 0 2 0 0 1 in a 2-line fully associative LRU cache: 3 compulsory, 1 capacity.
        let mut c = CacheModel::new(&cfg(2, 0), 1);
        let classes: Vec<_> = [0, 1, 0, 2, 0, 0, 1]
            .iter()
            .map(|&l| c.access(&read(l)).class)
            .collect();
        use MissClass::*;
        assert_eq!(
            classes,
            vec![
                Some(Compulsory),
                Some(Compulsory),
                None,
                Some(Compulsory),
                None,
                None,
                Some(Capacity)
            ]
        );
    }

    #[test]
    fn wtwa_stores_allocate_without_a_fetch_and_hit_on_the_tag() {
        // Two lines of 32 bytes in four 8-byte sectors, in one set.
        let cfg = CacheConfig {
            size_bytes: 64,
            line_bytes: 32,
            ways: 2,
            sector_bytes: 8,
            write_policy: WritePolicy::Wtwa,
            ..CacheConfig::default()
        };
        let mut c = CacheModel::new(&cfg, 1);
        let store = |sector: u32, bytes: u32| Request {
            line: 0,
            sectors: 1 << sector,
            write: true,
            bytes,
        };
        let load = |sectors: u32| Request {
            line: 0,
            sectors,
            write: false,
            bytes: 8 * sectors.count_ones(),
        };
        // A 4-byte store to sector 0: a miss that allocates the line, fetches nothing and
        // goes through whole.
        let o = c.access_written(&store(0, 4), Some(0xF));
        assert_eq!(
            (o.hit, o.fetched, o.bytes_from_memory, o.bytes_to_memory),
            (false, 0, 0, 4)
        );
        // A store to another sector of the line hits on the tag.
        let o = c.access_written(&store(1, 8), Some(0xFF << 8));
        assert!(o.hit, "a store hits on its line's tag");
        assert_eq!(o.missing, 0b10, "its sector was not there");
        // Sector 1 was written whole: a load of it hits. Sector 0 only in part: fetched.
        assert!(c.access(&load(0b10)).hit);
        let o = c.access(&load(0b01));
        assert_eq!((o.hit, o.fetched), (false, 0b01));
        assert!(c.access(&load(0b01)).hit, "fetched once, then readable");
        // Two 4-byte stores make sector 2 whole between them (the bytes written since the
        // line came in): a load of it hits without a fetch.
        c.access_written(&store(2, 4), Some(0xF << 16));
        c.access_written(&store(2, 4), Some(0xF << 20));
        let o = c.access(&load(0b100));
        assert_eq!((o.hit, o.fetched), (true, 0));
        // Nothing is ever dirty: the stores went through.
        let mut flushed = Counters::default();
        c.flush(&mut flushed);
        assert_eq!(flushed.flush_writebacks, 0);
    }

    #[test]
    fn a_bypassed_cache_holds_nothing() {
        // l1-bypass: every request misses, the first use of a line is compulsory and every
        // later one capacity (a cache of no lines), reads fetch, stores go through whole.
        let mut c = CacheModel::new(
            &CacheConfig {
                bypass: true,
                write_policy: WritePolicy::Wbwa,
                ..cfg(2, 0)
            },
            1,
        );
        use MissClass::*;
        let got: Vec<_> = [read(0), read(0), read(1), read(0)]
            .iter()
            .map(|r| {
                let o = c.access(r);
                (o.hit, o.class, o.fetched, o.bytes_from_memory, o.evicted)
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (false, Some(Compulsory), 1, 4, None),
                (false, Some(Capacity), 1, 4, None),
                (false, Some(Compulsory), 1, 4, None),
                (false, Some(Capacity), 1, 4, None),
            ]
        );
        let store = Request {
            write: true,
            bytes: 2,
            ..read(0)
        };
        let o = c.access(&store);
        assert_eq!((o.hit, o.fetched, o.bytes_to_memory), (false, 0, 2));
        let mut flushed = Counters::default();
        c.flush(&mut flushed);
        assert_eq!(
            flushed.flush_writebacks, 0,
            "nothing was held, so nothing is dirty"
        );
    }

    #[test]
    fn conflict_misses_in_a_direct_mapped_cache() {
        // Lines 0 and 2 share set 0 of a 2-set direct-mapped cache; a 2-line FA cache holds both.
        let mut c = CacheModel::new(&cfg(2, 1), 1);
        let classes: Vec<_> = [0, 2, 0, 2]
            .iter()
            .map(|&l| c.access(&read(l)).class)
            .collect();
        use MissClass::*;
        assert_eq!(
            classes,
            vec![
                Some(Compulsory),
                Some(Compulsory),
                Some(Conflict),
                Some(Conflict)
            ]
        );
    }

    #[test]
    fn write_policies_and_traffic() {
        let mut wt = CacheModel::new(&cfg(2, 0), 1);
        let w = Request {
            line: 5,
            sectors: 1,
            write: true,
            bytes: 4,
        };
        let o = wt.access(&w);
        assert!(!o.hit && o.bytes_to_memory == 4 && o.bytes_from_memory == 0);
        // Not allocated: the read misses too, and is capacity (seen before) like Dinero.
        assert_eq!(wt.access(&read(5)).class, Some(MissClass::Capacity));

        let mut wb = CacheModel::new(
            &CacheConfig {
                write_policy: WritePolicy::Wbwa,
                ..cfg(1, 0)
            },
            1,
        );
        let o = wb.access(&w);
        assert!(
            !o.hit && o.bytes_to_memory == 0 && o.bytes_from_memory == 0,
            "full-line write needs no fetch"
        );
        assert!(wb.access(&read(5)).hit);
        let o = wb.access(&read(6));
        assert!(o.writeback && o.bytes_to_memory == 4 && o.bytes_from_memory == 4);
        let partial = Request {
            line: 7,
            sectors: 1,
            write: true,
            bytes: 2,
        };
        assert_eq!(wb.access(&partial).bytes_from_memory, 4);
    }

    #[test]
    fn sectors_miss_separately() {
        let c = CacheConfig {
            size_bytes: 256,
            line_bytes: 128,
            ways: 2,
            sector_bytes: 32,
            ..CacheConfig::default()
        };
        let mut m = CacheModel::new(&c, 1);
        let r = |sectors| Request {
            line: 3,
            sectors,
            write: false,
            bytes: 32,
        };
        let o = m.access(&r(0b0001));
        assert_eq!(
            (o.hit, o.bytes_from_memory, o.class),
            (false, 32, Some(MissClass::Compulsory))
        );
        assert!(m.access(&r(0b0001)).hit);
        // Sector 0 is there: only sector 1 is fetched.
        let o = m.access(&r(0b0011));
        assert_eq!(
            (o.hit, o.bytes_from_memory, o.class),
            (false, 32, Some(MissClass::Compulsory))
        );
        assert!(m.access(&r(0b0011)).hit);
    }
}
