//! Sequential (Crawford 2014 §5.2.2): a warp runs until it finishes or reaches a barrier, then
//! the next one in launch order.

use super::{IssueState, Position};
use crate::config::choice::{Entry, Form};
use crate::config::IssuePolicy;
use crate::rng::Rng;

/// This policy in the registry of [`IssuePolicy`] (see `config::choice`).
pub const ENTRY: Entry<IssuePolicy> = Entry {
    name: "sequential",
    aliases: &["seq"],
    label: "sequential",
    description: "a warp runs until it finishes or reaches a barrier",
    form: Form::Plain(IssuePolicy::Sequential),
};

#[derive(Clone, Debug, Default)]
pub struct Sequential {
    /// Where the search starts when there is no current warp.
    rr: Position,
    /// The warp that runs.
    current: Option<u32>,
}

impl IssueState for Sequential {
    fn implements(kind: IssuePolicy) -> bool {
        kind == IssuePolicy::Sequential
    }
    fn new(_: IssuePolicy, _: u32) -> Self {
        Self::default()
    }
    fn removing(&mut self, warps: &[u32], gone: &dyn Fn(u32) -> bool) {
        self.rr.removing(warps, gone);
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
        let n = warps.len();
        // Continue with the next warp after the current one (in launch order).
        let start = match self.current {
            Some(cur) => warps.iter().position(|&w| w > cur).unwrap_or(0),
            None => self.rr.at.min(n - 1),
        };
        let i = (0..n).map(|k| (start + k) % n).find(|&i| ready(warps[i]))?;
        self.current = Some(warps[i]);
        self.rr.at = i;
        Some(warps[i])
    }
}
