//! Issue policies: which ready warp of an SM issues next. One file per policy, each with its
//! own state and its entry in the registry of [`IssuePolicy`] (name, aliases, menu label,
//! description), which the configuration parser, `--help`, the app's menus and the docs
//! read. To add a policy: its file (state, [`IssueState`], `ENTRY`), an `IssuePolicy`
//! variant, and its line in `issue_policies!` below (state and entry), which makes both the
//! registry and the enum the scheduler dispatches on.

mod gto;
mod random;
mod round_robin;
mod sequential;
mod two_level;

use crate::config::choice::{Choice, Entry};
use crate::config::IssuePolicy;
use crate::rng::Rng;
use gto::Gto;
use random::Random;
use round_robin::RoundRobin;
use sequential::Sequential;
use two_level::TwoLevel;

/// What every issue policy does with the warps of one SM, in launch (age) order.
pub(super) trait IssueState: Sized {
    /// Whether this is the policy `kind` names.
    fn implements(kind: IssuePolicy) -> bool;
    fn new(kind: IssuePolicy, fetch_group: u32) -> Self;
    /// The warps `gone` says are about to leave `warps` (a finished CTA).
    fn removing(&mut self, warps: &[u32], gone: &dyn Fn(u32) -> bool);
    /// The next warp to issue among `warps` (not empty; `ready_warps` of them are ready),
    /// `ready` saying whether a warp can issue now.
    fn pick(
        &mut self,
        warps: &[u32],
        ready_warps: u32,
        rng: &mut Rng,
        ready: impl Fn(u32) -> bool,
    ) -> Option<u32>;
}

/// A position in the warp list that stays on the same warp when warps before it leave.
#[derive(Clone, Copy, Debug, Default)]
struct Position {
    at: usize,
}

impl Position {
    fn removing(&mut self, warps: &[u32], gone: &dyn Fn(u32) -> bool) {
        let before = warps[..self.at.min(warps.len())]
            .iter()
            .filter(|&&w| gone(w))
            .count();
        self.at -= before;
        let left = warps.len() - warps.iter().filter(|&&w| gone(w)).count();
        if self.at >= left {
            self.at = 0;
        }
    }
}

/// Declares, from one list, the registry of [`IssuePolicy`] and [`Policy`], an SM's
/// issue-policy state: an enum over the policies (static dispatch keeps the scheduler's loop
/// inlined), with every method forwarded.
macro_rules! issue_policies {
    ($($variant:ident($state:ty) [$entry:expr]),+ $(,)?) => {
        impl Choice for IssuePolicy {
            const WHAT: &'static str = "issue policy";
            const ENTRIES: &'static [Entry<IssuePolicy>] = &[$($entry),+];
        }

        #[derive(Clone, Debug)]
        enum Policy {
            $($variant($state)),+
        }

        impl Policy {
            fn new(kind: IssuePolicy, fetch_group: u32) -> Self {
                $(
                    if <$state>::implements(kind) {
                        return Policy::$variant(<$state>::new(kind, fetch_group));
                    }
                )+
                // Every `IssuePolicy` has a state (`every_issue_policy_has_a_state`).
                Policy::RoundRobin(RoundRobin::default())
            }
            fn removing(&mut self, warps: &[u32], gone: &dyn Fn(u32) -> bool) {
                match self {
                    $(Policy::$variant(p) => p.removing(warps, gone)),+
                }
            }
            #[inline]
            fn pick(
                &mut self,
                warps: &[u32],
                ready_warps: u32,
                rng: &mut Rng,
                ready: impl Fn(u32) -> bool,
            ) -> Option<u32> {
                match self {
                    $(Policy::$variant(p) => p.pick(warps, ready_warps, rng, ready)),+
                }
            }
        }

        #[cfg(test)]
        #[test]
        fn every_issue_policy_has_a_state() {
            for e in IssuePolicy::ENTRIES {
                let kind = e.value();
                let serving = [$(<$state>::implements(kind)),+];
                assert_eq!(serving.iter().filter(|&&s| s).count(), 1, "{}", e.name);
            }
        }
    };
}

issue_policies! {
    RoundRobin(RoundRobin) [round_robin::ENTRY],
    Sequential(Sequential) [sequential::ENTRY],
    Random(Random) [random::ENTRY],
    Gto(Gto) [gto::ENTRY],
    TwoLevel(TwoLevel) [two_level::ENTRY],
}

/// What one SM holds: resident CTAs and their warps in launch (age) order.
#[derive(Clone, Debug)]
pub(super) struct SmState {
    pub ctas: Vec<u32>,
    pub warps: Vec<u32>,
    pub threads: u32,
    pub ready: u32,
    policy: Policy,
}

impl SmState {
    pub fn new(policy: IssuePolicy, fetch_group: u32) -> Self {
        SmState {
            ctas: Vec::new(),
            warps: Vec::new(),
            threads: 0,
            ready: 0,
            policy: Policy::new(policy, fetch_group),
        }
    }

    /// Removes warps (a finished CTA), keeping the policy's positions on the same warps.
    pub fn remove_warps(&mut self, gone: impl Fn(u32) -> bool) {
        self.policy.removing(&self.warps, &gone);
        self.warps.retain(|&w| !gone(w));
    }

    /// Picks the next warp to issue; `ready` says whether a warp can issue now.
    #[inline]
    pub fn pick(&mut self, rng: &mut Rng, ready: impl Fn(u32) -> bool) -> Option<u32> {
        if self.warps.is_empty() {
            return None;
        }
        self.policy.pick(&self.warps, self.ready, rng, ready)
    }
}
