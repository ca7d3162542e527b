//! Two-level: round-robin inside a fetch group of warps; move to the next group when all of it
//! stalls.

use super::{IssueState, Position};
use crate::config::choice::{Entry, Form};
use crate::config::IssuePolicy;
use crate::rng::Rng;

/// This policy in the registry of [`IssuePolicy`] (see `config::choice`).
pub const ENTRY: Entry<IssuePolicy> = Entry {
    name: "two-level",
    aliases: &["2lvl"],
    label: "two-level",
    description: "round-robin within a fetch group; next group when it stalls",
    form: Form::Plain(IssuePolicy::TwoLevel),
};

#[derive(Clone, Debug)]
pub struct TwoLevel {
    /// Warps per fetch group (at least 1).
    fetch_group: usize,
    /// The next index of the warp list to try within the active group.
    rr: Position,
    /// The active fetch group.
    group: usize,
}

impl IssueState for TwoLevel {
    fn implements(kind: IssuePolicy) -> bool {
        kind == IssuePolicy::TwoLevel
    }
    fn new(_: IssuePolicy, fetch_group: u32) -> Self {
        TwoLevel {
            fetch_group: fetch_group.max(1) as usize,
            rr: Position::default(),
            group: 0,
        }
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
        let (n, g) = (warps.len(), self.fetch_group);
        let groups = n.div_ceil(g);
        for k in 0..groups {
            let grp = (self.group + k) % groups;
            let lo = grp * g;
            let hi = (lo + g).min(n);
            let len = hi - lo;
            let rr = self.rr.at;
            let start = if k == 0 && rr >= lo && rr < hi {
                rr - lo
            } else {
                0
            };
            if let Some(i) = (0..len)
                .map(|j| lo + (start + j) % len)
                .find(|&i| ready(warps[i]))
            {
                self.group = grp;
                self.rr.at = if i + 1 < hi { i + 1 } else { lo };
                return Some(warps[i]);
            }
        }
        None
    }
}
