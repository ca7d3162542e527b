//! Least / most frequently used (Crawford 2014 ch. 6): a use count per line, reset when the line
//! is filled. Ties go to the line filled earliest.

use super::ReplacementPolicy;
use crate::config::choice::{Entry, Form};
use crate::config::Replacement;

/// Least frequently used in the registry of [`Replacement`] (see `config::choice`).
pub const LFU: Entry<Replacement> = Entry {
    name: "lfu",
    aliases: &[],
    label: "LFU",
    description: "least frequently used",
    form: Form::Plain(Replacement::Lfu),
};

/// Most frequently used in the registry of [`Replacement`].
pub const MFU: Entry<Replacement> = Entry {
    name: "mfu",
    aliases: &[],
    label: "MFU",
    description: "most frequently used",
    form: Form::Plain(Replacement::Mfu),
};

#[derive(Clone, Debug)]
pub struct Frequency {
    ways: usize,
    most: bool,
    count: Vec<u64>,
    filled_at: Vec<u64>,
    clock: u64,
}

impl ReplacementPolicy for Frequency {
    fn implements(kind: Replacement) -> bool {
        matches!(kind, Replacement::Lfu | Replacement::Mfu)
    }
    fn new(kind: Replacement, sets: usize, ways: usize, _: u64) -> Self {
        Frequency {
            ways,
            most: kind == Replacement::Mfu,
            count: vec![0; sets * ways],
            filled_at: vec![0; sets * ways],
            clock: 0,
        }
    }
    #[inline]
    fn touch(&mut self, set: usize, way: usize) {
        self.count[set * self.ways + way] += 1;
    }
    #[inline]
    fn insert(&mut self, set: usize, way: usize) {
        let slot = set * self.ways + way;
        self.clock += 1;
        self.count[slot] = 1;
        self.filled_at[slot] = self.clock;
    }
    /// The way's uses since it came in.
    fn state(&self, set: usize, way: usize) -> u64 {
        self.count[set * self.ways + way]
    }
    const STATE: &'static str = "uses since it came in";
    fn victim(&mut self, set: usize) -> usize {
        let base = set * self.ways;
        let mut best = 0;
        for w in 1..self.ways {
            let (c, b) = (self.count[base + w], self.count[base + best]);
            let better = if self.most { c > b } else { c < b };
            if better || (c == b && self.filled_at[base + w] < self.filled_at[base + best]) {
                best = w;
            }
        }
        best
    }
}
