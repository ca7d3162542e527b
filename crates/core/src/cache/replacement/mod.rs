//! Replacement policies: which valid way of a full set to give up. One file per policy.
//!
//! Every policy sees the same three events: a hit (`touch`), a fill (`insert`) and a request
//! for a victim when the set is full. Empty ways are always filled first (lowest way first)
//! by the cache itself, so policies only choose among valid ways.
//!
//! Each policy's file also declares its entry in the registry of [`Replacement`] (name,
//! aliases, menu label, description), which the configuration parser, `--help`, the app's
//! menus and the docs read. To add a policy: its file (the state, `touch`/`insert`/`victim`
//! and its `ENTRY`, implementing [`ReplacementPolicy`]), a `Replacement` variant, and its
//! line in `policies!` below (type and entries), which makes both the registry and the enum
//! the hot loop dispatches on.

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

use crate::config::choice::{Choice, Entry};
use crate::config::Replacement;

/// What every policy does, on (set, way) of a set-associative array.
pub trait ReplacementPolicy: Sized {
    /// Whether this policy is the one `kind` names (one type may serve several, as LFU/MFU).
    fn implements(kind: Replacement) -> bool;
    fn new(kind: Replacement, sets: usize, ways: usize, seed: u64) -> Self;
    /// A hit on `way`.
    #[inline]
    fn touch(&mut self, _set: usize, _way: usize) {}
    /// A fill of `way`.
    #[inline]
    fn insert(&mut self, _set: usize, _way: usize) {}
    /// The way to evict from a full set.
    fn victim(&mut self, set: usize) -> usize;
    /// What the policy keeps of `way` of `set`, as one number for the step-through view
    /// (its meaning is [`ReplacementPolicy::STATE`]).
    fn state(&self, _set: usize, _way: usize) -> u64 {
        0
    }
    /// What [`ReplacementPolicy::state`] means (empty: the policy keeps nothing per way).
    const STATE: &'static str = "";
}

/// Declares, from one list, the registry of [`Replacement`] (each policy's entries, in menu
/// order) and [`Policy`], the configured policy's per-set state: an enum over the policies
/// (static dispatch keeps the hot loop inlined), with every method forwarded.
macro_rules! policies {
    ($($variant:ident($policy:ty) [$($entry:expr),+]),+ $(,)?) => {
        impl Choice for Replacement {
            const WHAT: &'static str = "replacement";
            const ENTRIES: &'static [Entry<Replacement>] = &[$($($entry),+),+];
        }

        /// The per-set state of the configured policy.
        #[derive(Clone, Debug)]
        pub enum Policy {
            $($variant($policy)),+
        }

        impl Policy {
            pub fn new(kind: Replacement, sets: usize, ways: usize, seed: u64) -> Self {
                $(
                    if <$policy>::implements(kind) {
                        return Policy::$variant(<$policy>::new(kind, sets, ways, seed));
                    }
                )+
                // Every `Replacement` has a policy (`every_replacement_has_a_policy`).
                Policy::Lru(Lru::new(Replacement::Lru, sets, ways, seed))
            }
            #[inline]
            pub fn touch(&mut self, set: usize, way: usize) {
                match self {
                    $(Policy::$variant(p) => p.touch(set, way)),+
                }
            }
            #[inline]
            pub fn insert(&mut self, set: usize, way: usize) {
                match self {
                    $(Policy::$variant(p) => p.insert(set, way)),+
                }
            }
            /// The way to evict from a full set.
            #[inline]
            pub fn victim(&mut self, set: usize) -> usize {
                match self {
                    $(Policy::$variant(p) => p.victim(set)),+
                }
            }
            /// What the policy keeps of one way ([`Policy::state_meaning`]).
            pub fn state(&self, set: usize, way: usize) -> u64 {
                match self {
                    $(Policy::$variant(p) => p.state(set, way)),+
                }
            }
            /// What [`Policy::state`] means.
            pub fn state_meaning(&self) -> &'static str {
                match self {
                    $(Policy::$variant(_) => <$policy>::STATE),+
                }
            }
        }

        #[cfg(test)]
        #[test]
        fn every_replacement_has_a_policy() {
            for e in Replacement::ENTRIES {
                let kind = e.value();
                let serving = [$(<$policy>::implements(kind)),+];
                assert_eq!(serving.iter().filter(|&&s| s).count(), 1, "{}", e.name);
            }
        }
    };
}

policies! {
    Lru(Lru) [lru::ENTRY],
    Fifo(Fifo) [fifo::ENTRY],
    Frequency(Frequency) [frequency::LFU, frequency::MFU],
    Random(RandomRepl) [random::ENTRY],
    Plru(Plru) [plru::ENTRY],
}
