//! First in, first out: the oldest filled way goes. Lines are never invalidated, so the
//! fill order within a set is cyclic and a per-set pointer is exact.

use super::ReplacementPolicy;
use crate::config::choice::{Entry, Form};
use crate::config::Replacement;

/// This policy in the registry of [`Replacement`] (see `config::choice`).
pub const ENTRY: Entry<Replacement> = Entry {
    name: "fifo",
    aliases: &[],
    label: "FIFO",
    description: "first in, first out",
    form: Form::Plain(Replacement::Fifo),
};

#[derive(Clone, Debug)]
pub struct Fifo {
    ways: usize,
    next: Vec<u32>,
}

impl ReplacementPolicy for Fifo {
    fn implements(kind: Replacement) -> bool {
        kind == Replacement::Fifo
    }
    fn new(_: Replacement, sets: usize, ways: usize, _: u64) -> Self {
        Fifo {
            ways,
            next: vec![0; sets],
        }
    }
    #[inline]
    fn victim(&mut self, set: usize) -> usize {
        let v = self.next[set] as usize;
        self.next[set] = ((v + 1) % self.ways) as u32;
        v
    }
    /// The way's place in the queue: 0 goes out next.
    fn state(&self, set: usize, way: usize) -> u64 {
        ((way + self.ways - self.next[set] as usize) % self.ways) as u64
    }
    const STATE: &'static str = "place in the queue (0 = out next)";
}
