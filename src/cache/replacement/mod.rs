//! Replacement policies: which valid way of a full set to give up. One file per policy.
//!
//! Every policy sees the same three events: a hit (`touch`), a fill (`insert`) and a request
//! for a victim when the set is full. Empty ways are always filled first (lowest way first)
//! by the cache itself, so policies only choose among valid ways.

mod fifo;
mod frequency;
mod lru;
mod plru;
mod random;

pub use fifo::Fifo;
pub use frequency::Frequency;
pub use lru::Lru;
pub use plru::Plru;
pub use random::RandomRepl;

use crate::config::Replacement;

/// The per-set state of the configured policy (enum dispatch keeps the hot loop inlined).
#[derive(Clone, Debug)]
pub enum Policy {
    Lru(Lru),
    Fifo(Fifo),
    Frequency(Frequency),
    Random(RandomRepl),
    Plru(Plru),
}

impl Policy {
    pub fn new(kind: Replacement, sets: usize, ways: usize, seed: u64) -> Self {
        match kind {
            Replacement::Lru => Policy::Lru(Lru::new(sets, ways)),
            Replacement::Fifo => Policy::Fifo(Fifo::new(sets, ways)),
            Replacement::Lfu => Policy::Frequency(Frequency::new(sets, ways, false)),
            Replacement::Mfu => Policy::Frequency(Frequency::new(sets, ways, true)),
            Replacement::Random => Policy::Random(RandomRepl::new(ways, seed)),
            Replacement::Plru => Policy::Plru(Plru::new(sets, ways)),
        }
    }
    #[inline]
    pub fn touch(&mut self, set: usize, way: usize) {
        match self {
            Policy::Lru(p) => p.touch(set, way),
            Policy::Fifo(_) | Policy::Random(_) => {}
            Policy::Frequency(p) => p.touch(set, way),
            Policy::Plru(p) => p.touch(set, way),
        }
    }
    #[inline]
    pub fn insert(&mut self, set: usize, way: usize) {
        match self {
            Policy::Lru(p) => p.touch(set, way),
            Policy::Fifo(p) => p.insert(set, way),
            Policy::Frequency(p) => p.insert(set, way),
            Policy::Random(_) => {}
            Policy::Plru(p) => p.touch(set, way),
        }
    }
    /// The way to evict from a full set.
    #[inline]
    pub fn victim(&mut self, set: usize) -> usize {
        match self {
            Policy::Lru(p) => p.victim(set),
            Policy::Fifo(p) => p.victim(set),
            Policy::Frequency(p) => p.victim(set),
            Policy::Random(p) => p.victim(),
            Policy::Plru(p) => p.victim(set),
        }
    }
}
