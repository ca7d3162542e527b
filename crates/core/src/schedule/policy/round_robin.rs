//! Loose round-robin (Crawford 2014 §5.3.3): each ready warp issues one instruction in turn.

use super::{IssueState, Position};
use crate::config::choice::{Entry, Form};
use crate::config::IssuePolicy;
use crate::rng::Rng;

/// This policy in the registry of [`IssuePolicy`] (see `config::choice`).
pub const ENTRY: Entry<IssuePolicy> = Entry {
    name: "round-robin",
    aliases: &["rr", "lrr"],
    label: "round-robin",
    description: "each ready warp issues one instruction in turn",
    form: Form::Plain(IssuePolicy::RoundRobin),
};

#[derive(Clone, Debug, Default)]
pub struct RoundRobin {
    /// The next index of the warp list to try.
    rr: Position,
}

impl IssueState for RoundRobin {
    fn implements(kind: IssuePolicy) -> bool {
        kind == IssuePolicy::RoundRobin
    }
    fn new(_: IssuePolicy, _: u32) -> Self {
        Self::default()
    }
    fn removing(&mut self, warps: &[u32], gone: &dyn Fn(u32) -> bool) {
        self.rr.removing(warps, gone);
    }
    #[inline]
    fn pick(
        &mut self,
        warps: &[u32],
        _: u32,
        _: &mut Rng,
        ready: impl Fn(u32) -> bool,
    ) -> Option<u32> {
        let n = warps.len();
        let i = (0..n)
            .map(|k| (self.rr.at + k) % n)
            .find(|&i| ready(warps[i]))?;
        self.rr.at = (i + 1) % n;
        Some(warps[i])
    }
}
