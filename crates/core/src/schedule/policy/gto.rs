//! Greedy-then-oldest: keep issuing from one warp until it stalls, then the oldest ready warp.

use super::IssueState;
use crate::config::choice::{Entry, Form};
use crate::config::IssuePolicy;
use crate::rng::Rng;

/// This policy in the registry of [`IssuePolicy`] (see `config::choice`).
pub const ENTRY: Entry<IssuePolicy> = Entry {
    name: "gto",
    aliases: &[],
    label: "greedy-then-oldest",
    description: "keep issuing one warp until it stalls, then the oldest",
    form: Form::Plain(IssuePolicy::Gto),
};

#[derive(Clone, Debug, Default)]
pub struct Gto {
    /// The warp issued greedily.
    current: Option<u32>,
}

impl IssueState for Gto {
    fn implements(kind: IssuePolicy) -> bool {
        kind == IssuePolicy::Gto
    }
    fn new(_: IssuePolicy, _: u32) -> Self {
        Self::default()
    }
    fn removing(&mut self, _: &[u32], gone: &dyn Fn(u32) -> bool) {
        if self.current.is_some_and(gone) {
            self.current = None;
        }
    }
    #[inline]
    fn pick(
        &mut self,
        warps: &[u32],
        _: u32,
        _: &mut Rng,
        ready: impl Fn(u32) -> bool,
    ) -> Option<u32> {
        if let Some(w) = self.current.filter(|&w| ready(w)) {
            return Some(w);
        }
        // The warp list is in launch order: the first ready one is the oldest.
        let w = warps.iter().copied().find(|&w| ready(w))?;
        self.current = Some(w);
        Some(w)
    }
}
