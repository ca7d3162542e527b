//! The timing model's behaviours where our default mode and the released model of Nugteren
//! et al. (2014) differ, each a named rule, so one engine runs both (`--compat
//! gpu-cache-model` sets them all to the released model's; `--rule KEY=VALUE` sets one).
//! `docs/model.md` ("Where we differ from the released model") explains each with a worked
//! example; every rule's first value is our default.

use serde::{Deserialize, Serialize};

/// Defines a rule: an enum of named values whose first is the default.
macro_rules! rule {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $v:ident = $s:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
        pub enum $name {
            #[default]
            $($(#[$vm])* #[serde(rename = $s)] $v),+
        }
        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$v),+];
            pub fn name(self) -> &'static str {
                match self { $($name::$v => $s),+ }
            }
            fn parse(key: &'static str, s: &str) -> Result<Self, super::Unknown> {
                Self::ALL.iter().copied().find(|v| v.name() == s).ok_or_else(|| {
                    super::Unknown::RuleValue {
                        rule: key,
                        found: s.to_string(),
                        expected: Self::ALL.iter().map(|v| v.name()).collect(),
                    }
                })
            }
        }
    };
}

rule!(
    /// When a waiting CTA starts on the SM.
    CtaLaunch {
        /// As soon as a resident CTA finishes (the hardware's block scheduler).
        AsFinished = "as-finished",
        /// In sets of as many CTAs as fit: the next set only when the whole set has finished.
        InSets = "in-sets",
    }
);

rule!(
    /// What one issue of a warp is.
    IssueUnit {
        /// One warp instruction: its coalesced requests, all at once.
        Warp = "warp",
        /// Per-thread program counters, the warp's threads taken in groups by access size
        /// (32 threads for 4-byte accesses, 16 for 8-byte, 8 for 16-byte, ...); a thread makes a
        /// request when no earlier thread of its coalescing group (the warp, half-warp for
        /// 8-byte, quarter-warp for 16-byte) used the same line at the same position of their
        /// load streams. Only the first line of an access is requested; barriers are ignored.
        ThreadPortions = "thread-portions",
    }
);

rule!(
    /// Which lanes of a warp make requests under thread portions (the warp issue unit
    /// coalesces by its own coalescer).
    Merging {
        /// A lane requests its line when no earlier lane of its group (warp, half-warp or
        /// quarter-warp by its access size) loads the same line at that position.
        FirstLane = "first-lane",
        /// The released coalescer's: also the first earlier lane of a lane's group with the same
        /// line at another address requests, even one that had itself merged into an earlier
        /// lane of its own, shorter group (its `width++` turns that access back on).
        WidthBump = "width-bump",
    }
);

rule!(
    /// When a miss cannot be issued for want of an MSHR.
    MshrCheck {
        /// Any miss that needs a new MSHR while all are busy (or the warp's share is used).
        EveryNewLine = "every-new-line",
        /// Only the warp's first request, when the lines with misses outstanding at the start
        /// of the step (arrivals of this step included) are as many as the MSHRs; the others
        /// are issued over the limit.
        FirstThread = "first-thread",
    }
);

rule!(
    /// What a lookup at time `t` sees of the effects due at `t`.
    Arrivals {
        /// Only the arrival of its own line (a miss returning at `t` serves a request at `t`).
        OwnLine = "own-line",
        /// Those of earlier issue groups of this step: effects due at `t` are applied after
        /// each group, and a line arriving at `t` is still missing for the first.
        AfterGroup = "after-group",
    }
);

rule!(
    /// The order of stack updates due at the same time.
    EffectOrder {
        /// Issue order.
        Issue = "issue",
        /// Per set, hits first, then misses, each in issue order.
        HitsFirst = "hits-first",
    }
);

rule!(
    /// When and in what order a warp waiting for its requests rejoins the queue.
    WarpReturn {
        /// At the start of the step its last request takes effect, in the order they issued.
        OnArrival = "on-arrival",
        /// One step later, warps returning together in warp-number order.
        StepAfterByWarpId = "step-after-by-warp-id",
    }
);

rule!(
    /// What a warp with nothing left to issue does.
    FinishedWarps {
        /// Leaves the queue once its last instruction completes.
        Leave = "leave",
        /// Is taken from the queue once more, which costs a step.
        TakeAStep = "take-a-step",
    }
);

rule!(
    /// What stores do in the timing model.
    Stores {
        /// Bypass the L1 (counted in the tables as writes to memory).
        Bypass = "bypass",
        /// Are dropped when the trace is read.
        Dropped = "dropped",
    }
);

rule!(
    /// What the L1 holds when a kernel starts.
    Kernels {
        /// What the previous kernel left there.
        Warm = "warm",
        /// Nothing: each kernel is modelled on its own.
        Cold = "cold",
    }
);

rule!(
    /// Which set-stack distances count as hits in the reported numbers (the simulation itself
    /// always treats a distance of at least the associativity as a miss).
    HitRule {
        /// Distances below the associativity.
        BelowWays = "below-ways",
        /// Distances up to and including the associativity.
        AtMostWays = "at-most-ways",
    }
);

rule!(
    /// How the five miss classes are derived from the four runs.
    Classes {
        /// Differences clamped at 0, summing to the misses ([`crate::timing::classify`]).
        Balanced = "balanced",
        /// The released program's arithmetic, negative intermediate values and all.
        Released = "released",
    }
);

/// Every rule of the timing model.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TimingRules {
    pub cta_launch: CtaLaunch,
    pub issue: IssueUnit,
    pub mshr_check: MshrCheck,
    pub arrivals: Arrivals,
    pub effect_order: EffectOrder,
    pub warp_return: WarpReturn,
    pub finished_warps: FinishedWarps,
    pub stores: Stores,
    pub kernels: Kernels,
    pub hit_rule: HitRule,
    pub classes: Classes,
    pub merging: Merging,
}

impl TimingRules {
    /// The rule keys, as `--rule KEY=VALUE` and `sweep --vary rule.KEY=...` take them.
    pub const KEYS: [&'static str; 12] = [
        "cta-launch",
        "issue",
        "mshr-check",
        "arrivals",
        "effect-order",
        "warp-return",
        "finished-warps",
        "stores",
        "kernels",
        "hit-rule",
        "classes",
        "merging",
    ];

    /// The released model of Nugteren et al. (2014), rule by rule.
    pub fn released() -> Self {
        TimingRules {
            cta_launch: CtaLaunch::InSets,
            issue: IssueUnit::ThreadPortions,
            mshr_check: MshrCheck::FirstThread,
            arrivals: Arrivals::AfterGroup,
            effect_order: EffectOrder::HitsFirst,
            warp_return: WarpReturn::StepAfterByWarpId,
            finished_warps: FinishedWarps::TakeAStep,
            stores: Stores::Dropped,
            kernels: Kernels::Cold,
            hit_rule: HitRule::AtMostWays,
            classes: Classes::Released,
            merging: Merging::WidthBump,
        }
    }

    pub fn set(&mut self, key: &str, v: &str) -> Result<(), super::Unknown> {
        match key {
            "cta-launch" => self.cta_launch = CtaLaunch::parse("cta-launch", v)?,
            "issue" => self.issue = IssueUnit::parse("issue", v)?,
            "mshr-check" => self.mshr_check = MshrCheck::parse("mshr-check", v)?,
            "arrivals" => self.arrivals = Arrivals::parse("arrivals", v)?,
            "effect-order" => self.effect_order = EffectOrder::parse("effect-order", v)?,
            "warp-return" => self.warp_return = WarpReturn::parse("warp-return", v)?,
            "finished-warps" => self.finished_warps = FinishedWarps::parse("finished-warps", v)?,
            "stores" => self.stores = Stores::parse("stores", v)?,
            "kernels" => self.kernels = Kernels::parse("kernels", v)?,
            "hit-rule" => self.hit_rule = HitRule::parse("hit-rule", v)?,
            "classes" => self.classes = Classes::parse("classes", v)?,
            "merging" => self.merging = Merging::parse("merging", v)?,
            _ => {
                return Err(super::Unknown::Rule {
                    found: key.to_string(),
                    expected: Self::KEYS.to_vec(),
                })
            }
        }
        Ok(())
    }

    /// `(key, value)` of every rule, in [`TimingRules::KEYS`] order.
    pub fn values(&self) -> [(&'static str, &'static str); 12] {
        let v = [
            self.cta_launch.name(),
            self.issue.name(),
            self.mshr_check.name(),
            self.arrivals.name(),
            self.effect_order.name(),
            self.warp_return.name(),
            self.finished_warps.name(),
            self.stores.name(),
            self.kernels.name(),
            self.hit_rule.name(),
            self.classes.name(),
            self.merging.name(),
        ];
        std::array::from_fn(|i| (Self::KEYS[i], v[i]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rule_parses_its_own_names_and_explains_a_wrong_one() {
        let released = TimingRules::released();
        let mut r = TimingRules::default();
        for (key, v) in released.values() {
            r.set(key, v).unwrap();
        }
        assert_eq!(r, released);
        for (key, v) in TimingRules::default().values() {
            r.set(key, v).unwrap();
        }
        assert_eq!(r, TimingRules::default());
        let e = r.set("issue", "thread").unwrap_err();
        assert_eq!(
            e,
            super::super::Unknown::RuleValue {
                rule: "issue",
                found: "thread".into(),
                expected: vec!["warp", "thread-portions"],
            }
        );
        assert!(
            e.to_string().contains("expected warp or thread-portions"),
            "{e}"
        );
        let e = r.set("order", "x").unwrap_err();
        assert!(matches!(&e, super::super::Unknown::Rule { found, .. } if found == "order"));
        assert!(e.to_string().contains("cta-launch"), "{e}");
        let json = serde_json::to_string(&released).unwrap();
        assert!(json.contains("\"cta_launch\":\"in-sets\""), "{json}");
        assert_eq!(
            serde_json::from_str::<TimingRules>(&json).unwrap(),
            released
        );
    }
}
