//! Random: a ready warp drawn with the configuration's seed.

use super::IssueState;
use crate::config::choice::{Entry, Form};
use crate::config::IssuePolicy;
use crate::rng::Rng;

/// This policy in the registry of [`IssuePolicy`] (see `config::choice`).
pub const ENTRY: Entry<IssuePolicy> = Entry {
    name: "random",
    aliases: &[],
    label: "random",
    description: "a seeded random ready warp",
    form: Form::Plain(IssuePolicy::Random),
};

#[derive(Clone, Debug, Default)]
pub struct Random {
    /// The ready warps, when drawing among them (reused).
    scratch: Vec<u32>,
}

impl IssueState for Random {
    fn implements(kind: IssuePolicy) -> bool {
        kind == IssuePolicy::Random
    }
    fn new(_: IssuePolicy, _: u32) -> Self {
        Self::default()
    }
    fn removing(&mut self, _: &[u32], _: &dyn Fn(u32) -> bool) {}
    #[inline]
    fn pick(
        &mut self,
        warps: &[u32],
        ready_warps: u32,
        rng: &mut Rng,
        ready: impl Fn(u32) -> bool,
    ) -> Option<u32> {
        let n = warps.len();
        // With many ready, a few draws from all warps find one without listing them.
        if (ready_warps as usize) * 4 >= n {
            for _ in 0..64 {
                let w = warps[rng.below(n as u64) as usize];
                if ready(w) {
                    return Some(w);
                }
            }
        }
        self.scratch.clear();
        self.scratch
            .extend(warps.iter().copied().filter(|&w| ready(w)));
        if self.scratch.is_empty() {
            return None;
        }
        Some(self.scratch[rng.below(self.scratch.len() as u64) as usize])
    }
}
