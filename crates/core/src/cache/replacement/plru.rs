//! Tree pseudo-LRU: `ways - 1` direction bits per set form a binary tree; an access points
//! every node on its path away from it, and the victim is found by following the bits.

use super::ReplacementPolicy;
use crate::config::choice::{Entry, Form};
use crate::config::Replacement;

/// This policy in the registry of [`Replacement`] (see `config::choice`).
pub const ENTRY: Entry<Replacement> = Entry {
    name: "plru",
    aliases: &[],
    label: "tree-PLRU",
    description: "tree pseudo-LRU (power-of-two ways)",
    form: Form::Plain(Replacement::Plru),
};

#[derive(Clone, Debug)]
pub struct Plru {
    ways: usize,
    /// Node bits per set, heap order (node i has children 2i+1, 2i+2); 1 = victim on the right.
    bits: Vec<u8>,
}

impl Plru {
    /// Tree nodes per set.
    fn nodes(&self) -> usize {
        self.ways.saturating_sub(1).max(1)
    }
}

impl ReplacementPolicy for Plru {
    fn implements(kind: Replacement) -> bool {
        kind == Replacement::Plru
    }
    fn new(_: Replacement, sets: usize, ways: usize, _: u64) -> Self {
        Plru {
            ways,
            bits: vec![0; sets * ways.saturating_sub(1).max(1)],
        }
    }
    #[inline]
    fn touch(&mut self, set: usize, way: usize) {
        if self.ways < 2 {
            return;
        }
        let base = set * self.nodes();
        let (mut node, mut lo, mut span) = (0usize, 0usize, self.ways);
        while span > 1 {
            span /= 2;
            let right = way >= lo + span;
            // Point away from the accessed half.
            self.bits[base + node] = (!right) as u8;
            if right {
                lo += span;
                node = 2 * node + 2;
            } else {
                node = 2 * node + 1;
            }
        }
    }
    /// A fill is a use.
    #[inline]
    fn insert(&mut self, set: usize, way: usize) {
        self.touch(set, way)
    }
    /// 1 for the way the tree's bits lead to (the next victim), 0 for the others.
    fn state(&self, set: usize, way: usize) -> u64 {
        (self.pointed(set) == way) as u64
    }
    const STATE: &'static str = "1 = where the tree's bits point (out next)";
    fn victim(&mut self, set: usize) -> usize {
        self.pointed(set)
    }
}

impl Plru {
    /// The way the tree's bits lead to.
    fn pointed(&self, set: usize) -> usize {
        if self.ways < 2 {
            return 0;
        }
        let base = set * self.nodes();
        let (mut node, mut lo, mut span) = (0usize, 0usize, self.ways);
        while span > 1 {
            span /= 2;
            if self.bits[base + node] == 1 {
                lo += span;
                node = 2 * node + 2;
            } else {
                node = 2 * node + 1;
            }
        }
        lo
    }
}
