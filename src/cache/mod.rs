//! The L1 cache model: a set-associative array plus Dinero IV's three-C miss classification.
//!
//! [`CacheModel::access`] takes one coalesced request and returns whether it hit, its miss
//! class and the memory traffic it caused. Classification follows Dinero IV's `-ccc` exactly:
//! a miss that hits in a fully associative cache of the same capacity, replacement policy and
//! write-allocate behaviour is a *conflict* miss; otherwise it is *compulsory* when some
//! requested sector was never referenced before, else *capacity*. Where that shadow is an
//! LRU stack (LRU, write-allocate, unsectored lines) it is an [`LruStack`], which keeps the
//! lines it holds and the lines ever seen in one map; otherwise a one-set [`CacheArray`] and a
//! map of the sectors seen.

mod array;
mod lru_stack;
pub mod replacement;
pub mod set_index;
mod stats;

pub use array::{ArrayOutcome, CacheArray, WayState};
pub use lru_stack::{LruStack, StackOutcome};
pub use set_index::SetIndexFn;
pub use stats::{Counters, MissClass, MissClasses};

use crate::config::{CacheConfig, WritePolicy};
use crate::linemap::LineMap;

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
}

/// The fully associative shadow of a cache, with the record of what it ever saw.
#[derive(Clone, Debug)]
enum Shadow {
    /// Where the shadow is an LRU stack ([`CacheModel::shadow_is_a_stack`]): lines held and
    /// lines seen in one map.
    Stack(LruStack),
    /// Any replacement policy and write policy, sectored lines: an array of one set, and the
    /// sectors ever seen of each line.
    Array {
        lines: CacheArray,
        seen: LineMap<u32>,
    },
}

/// A cache with its fully associative shadow and the record of every sector ever seen.
#[derive(Clone, Debug)]
pub struct CacheModel {
    index: SetIndexFn,
    main: CacheArray,
    shadow: Shadow,
    write_allocate: bool,
    sector_bytes: u64,
    /// Lines the shadow holds.
    shadow_lines: u64,
}

impl CacheModel {
    /// Builds the model; the configuration must be valid ([`CacheConfig::validate`]).
    pub fn new(cfg: &CacheConfig, seed: u64) -> Self {
        let sets = cfg.sets() as usize;
        let ways = cfg.ways_effective() as usize;
        let shadow_is_a_stack = cfg.replacement == crate::config::Replacement::Lru
            && cfg.write_policy == WritePolicy::Wbwa
            && cfg.sector_bytes >= cfg.line_bytes;
        CacheModel {
            index: SetIndexFn::new(&cfg.set_index, sets as u32, cfg.line_bytes),
            main: CacheArray::new(sets, ways, cfg.replacement, seed),
            shadow: if shadow_is_a_stack {
                Shadow::Stack(LruStack::new((sets * ways) as u32))
            } else {
                Shadow::Array {
                    lines: CacheArray::new(1, sets * ways, cfg.replacement, seed ^ 0xFA),
                    seen: LineMap::default(),
                }
            },
            write_allocate: cfg.write_policy == WritePolicy::Wbwa,
            sector_bytes: cfg.sector_bytes as u64,
            shadow_lines: (sets * ways) as u64,
        }
    }

    /// About the bytes it holds beyond the two arrays' own size: the record of every line
    /// seen (for compulsory misses), which grows with the distinct lines.
    pub fn heap_bytes(&self) -> usize {
        match &self.shadow {
            Shadow::Stack(s) => s.heap_bytes(),
            Shadow::Array { seen, .. } => seen.heap_bytes(),
        }
    }

    /// Whether [`CacheModel::access_at_distance`] may stand for [`CacheModel::access`]: LRU,
    /// write-allocate, unsectored lines. The shadow is then a fully associative LRU cache that
    /// every request allocates in, with one sector per line: it hits exactly when the line's
    /// whole-cache reuse distance is below its capacity, and a line is new exactly when it has
    /// no distance.
    pub fn shadow_is_a_stack(&self) -> bool {
        matches!(self.shadow, Shadow::Stack(_))
    }

    /// Writes back every dirty line, as Dinero IV does when a trace ends; the counters get the
    /// lines and bytes in `flush_writebacks` and `flush_bytes_to_memory`, and the bytes in
    /// `bytes_to_memory` too (so that it matches Dinero's "Bytes To Memory").
    pub fn flush(&mut self, into: &mut Counters) {
        let (lines, sectors) = self.main.flush();
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
        let set = self.index.set(r.line);
        self.access_in(r, set, None)
    }

    /// Simulates one request in `set` (its [`CacheModel::set_of`]) whose line's whole-cache
    /// reuse distance is `distance` (`None`: its first use), which classifies its miss without
    /// the fully associative shadow: the same outcome as [`CacheModel::access`] when
    /// [`CacheModel::shadow_is_a_stack`] (`tests/properties.rs` compares them), as a fully
    /// associative LRU cache of `n` lines hits exactly when the distance is below `n`.
    #[inline]
    pub fn access_at_distance(&mut self, r: &Request, set: u32, distance: Option<u64>) -> Outcome {
        debug_assert!(self.shadow_is_a_stack());
        self.access_in(r, set, Some(distance))
    }

    #[inline]
    fn access_in(&mut self, r: &Request, set: u32, distance: Option<Option<u64>>) -> Outcome {
        let allocate = !r.write || self.write_allocate;
        let dirty = r.write && self.write_allocate;
        let m = self
            .main
            .access(set as usize, r.line, r.sectors, allocate, dirty);
        let class = match distance {
            Some(d) => (!m.hit).then_some(match d {
                Some(d) if d < self.shadow_lines => MissClass::Conflict,
                Some(_) => MissClass::Capacity,
                None => MissClass::Compulsory,
            }),
            // The shadow sees every request, hit or miss.
            None => match &mut self.shadow {
                // Every request allocates here (write-allocate), and a line is one sector.
                Shadow::Stack(s) => {
                    let f = s.access(r.line);
                    (!m.hit).then_some(match f {
                        StackOutcome::Hit => MissClass::Conflict,
                        StackOutcome::Seen => MissClass::Capacity,
                        StackOutcome::New => MissClass::Compulsory,
                    })
                }
                Shadow::Array { lines, seen } => {
                    let f = lines.access(0, r.line, r.sectors, allocate, false);
                    if m.hit {
                        None
                    } else if f.hit {
                        Some(MissClass::Conflict)
                    } else {
                        let seen = seen.entry(r.line);
                        let new = *seen & r.sectors != r.sectors;
                        *seen |= r.sectors;
                        Some(if new {
                            MissClass::Compulsory
                        } else {
                            MissClass::Capacity
                        })
                    }
                }
            },
        };
        // Only the sectors that were not there are fetched: a request that finds some of its
        // sectors counts them as hits on an H100 (docs/hardware.md).
        let fetch_bytes = m.missing_sectors as u64 * self.sector_bytes;
        let request_bytes = r.sectors.count_ones() as u64 * self.sector_bytes;
        let mut from = 0;
        let mut to = m.writeback_sectors as u64 * self.sector_bytes;
        if r.write {
            if self.write_allocate {
                // A write that covers its sectors whole needs nothing from memory.
                if !m.hit && r.bytes as u64 != request_bytes {
                    from = fetch_bytes;
                }
            } else {
                to += r.bytes as u64;
            }
        } else if !m.hit {
            from = fetch_bytes;
        }
        Outcome {
            set,
            hit: m.hit,
            class,
            bytes_from_memory: from,
            bytes_to_memory: to,
            writeback: m.writeback_sectors > 0,
            evicted: m.evicted,
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
