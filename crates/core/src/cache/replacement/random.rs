//! Random replacement from the configuration's seed.

use super::ReplacementPolicy;
use crate::config::choice::{Entry, Form};
use crate::config::Replacement;
use crate::rng::Rng;

/// This policy in the registry of [`Replacement`] (see `config::choice`).
pub const ENTRY: Entry<Replacement> = Entry {
    name: "random",
    aliases: &[],
    label: "random",
    description: "a seeded random way",
    form: Form::Plain(Replacement::Random),
};

#[derive(Clone, Debug)]
pub struct RandomRepl {
    ways: u64,
    rng: Rng,
}

impl ReplacementPolicy for RandomRepl {
    fn implements(kind: Replacement) -> bool {
        kind == Replacement::Random
    }
    fn new(_: Replacement, _: usize, ways: usize, seed: u64) -> Self {
        RandomRepl {
            ways: ways as u64,
            rng: Rng::fork(seed, 0x5EED_CAC4E),
        }
    }
    #[inline]
    fn victim(&mut self, _: usize) -> usize {
        self.rng.below(self.ways) as usize
    }
}
