//! The GPU timing model of Nugteren et al. (2014) §4.2-4.7, as a mode of the same simulator.
//!
//! Time advances one step per issued warp instruction. A request issued at time `t` takes
//! effect in its set's LRU stack at `t + latency` (hit latency, or λmin + |N(0, σ²)| for a
//! miss, from the seeded generator). A lookup at `t` sees the effects of earlier steps, plus
//! the arrival of its own line in this very step (Nugteren et al.'s tables 3-5 together fix
//! these two rules). A miss needs an MSHR unless its line is already in flight (then it shares
//! that entry and, with clipping, takes effect when the line arrives); with none free the
//! request is not issued and its warp goes to the back of the queue, to retry the rest of
//! the instruction later. Warps wait in a FIFO; after issuing, a warp rejoins it when its
//! requests' latency has passed (§4.5). CTA barriers hold a warp until its CTA arrives.
//!
//! Each simulated SM runs on its own, with the CTAs `sm, sm + sms, ...` (round-robin over the
//! SMs), as many resident as its limits allow and the next one started when one finishes.
//! Only loads are L1 requests: stores and atomics bypass it (Fermi's L1 caches loads only).
//!
//! Miss classes (§6.1) come from comparing the full run with three runs that each switch one
//! extension off; see [`classify`] and `docs/model.md`.

//!
//! Where the released model of Nugteren et al. behaves differently, a [`TimingRules`] rule
//! chooses; `--compat gpu-cache-model` sets them all to the released model's.

mod build;
mod cta_results;
mod engine;
mod issue;
mod kernel;
mod streams;
mod warps;

pub use build::StreamsBuilder;
pub use cta_results::{CtaResults, CtaTally, Written};
pub use engine::{
    Engine, Hooks, KernelRun, Params, RunCounts, Status, TimedRequest, TimingError, TimingStats,
};
pub use kernel::{KernelState, Turn};
pub use streams::{CtaFeed, CtaStreams, Shape, WarpStreams};

use crate::cache::MissClasses;
use crate::config::{Classes, SimConfig, TimingConfig, TimingRules};
use crate::trace::Kernel;

/// Kernels for the timing model's tests, several CTAs each: naive and tiled matmul `n=32`
/// (loads, stores, and the tiled one's barriers) and the default 2-D stencil (whose edge
/// threads do nothing).
#[cfg(test)]
pub(crate) fn test_kernels() -> Vec<Kernel> {
    let n32 = [("n".to_string(), "32".to_string())];
    let mut kernels = crate::gen::generate("matmul", &n32)
        .expect("matmul")
        .kernels;
    kernels.extend(
        crate::gen::generate("matmul-tiled", &n32)
            .expect("tiled")
            .kernels,
    );
    kernels.extend(
        crate::gen::generate("stencil2d", &[])
            .expect("stencil")
            .kernels,
    );
    kernels
}

/// The four runs: the full model and the three comparisons.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    Full,
    /// One set holding all the cache's lines.
    FullyAssociative,
    /// Hit and miss latency 0.
    ZeroLatency,
    /// No MSHR limits.
    UnlimitedMshrs,
}

impl Variant {
    pub fn params(self, t: &TimingConfig) -> (Params, bool) {
        let mut p = Params::of(t);
        match self {
            Variant::Full => (p, false),
            Variant::FullyAssociative => (p, true),
            Variant::ZeroLatency => {
                p.hit_latency = 0;
                p.miss_latency = 0;
                p.stddev = 0.0;
                (p, false)
            }
            Variant::UnlimitedMshrs => {
                p.mshrs = u32::MAX;
                p.mshrs_per_warp = u32::MAX;
                (p, false)
            }
        }
    }

    /// The runs a configuration asks for.
    pub fn all(t: &TimingConfig) -> Vec<Variant> {
        if t.classify {
            vec![
                Variant::Full,
                Variant::FullyAssociative,
                Variant::ZeroLatency,
                Variant::UnlimitedMshrs,
            ]
        } else {
            vec![Variant::Full]
        }
    }
}

/// Splits the full run's misses into five classes (Nugteren et al. 2014 §6.1, as their released model
/// does, without its off-by-one and with the sum kept equal to the misses):
///
/// - conflict (associativity) = full misses - fully associative misses;
/// - latency = full ∞-distance requests - zero-latency ∞-distance requests;
/// - MSHR = full misses - unlimited-MSHR misses;
/// - compulsory = zero-latency ∞-distance requests (first uses);
/// - capacity = the rest.
///
/// Negative differences count as 0. If compulsory plus the three differences exceed the
/// misses, the excess is taken from MSHR, then latency, then conflict.
pub fn classify(
    full: &RunCounts,
    fa: &RunCounts,
    zero_latency: &RunCounts,
    unlimited: &RunCounts,
) -> MissClasses {
    let m = full.misses;
    let compulsory = zero_latency.infinite.min(m);
    let mut conflict = m.saturating_sub(fa.misses);
    let mut latency = full.infinite.saturating_sub(zero_latency.infinite);
    let mut mshr = m.saturating_sub(unlimited.misses);
    let claimed = compulsory + conflict + latency + mshr;
    let capacity = m.saturating_sub(claimed);
    let mut excess = claimed.saturating_sub(m);
    for part in [&mut mshr, &mut latency, &mut conflict] {
        let take = excess.min(*part);
        *part -= take;
        excess -= take;
    }
    MissClasses {
        compulsory,
        capacity,
        conflict,
        latency,
        mshr,
    }
}

/// The released program's class arithmetic ([`Classes::Released`]), on its counts: misses
/// (by its hit rule) of the full, fully associative, zero-latency and unlimited-MSHR runs,
/// and the ∞-distance requests of the full and zero-latency runs. When the differences
/// over-claim, it *adds* the excess to one class, so the five need not sum to the misses;
/// each is printed clamped at 0.
pub fn classify_released(
    full: &RunCounts,
    fa: &RunCounts,
    zero_latency: &RunCounts,
    unlimited: &RunCounts,
) -> MissClasses {
    let m0 = full.misses as i64;
    let mut associativity = m0 - fa.misses as i64;
    let mut latency = full.infinite as i64 - zero_latency.infinite as i64;
    let mut mshr = m0 - unlimited.misses as i64;
    let compulsory = zero_latency.infinite as i64;
    let rest = m0 - (compulsory + latency.max(0) + associativity.max(0) + mshr.max(0));
    if rest < 0 {
        if mshr > -rest {
            mshr -= rest;
        } else if latency > -rest {
            latency -= rest;
        } else {
            associativity -= rest;
        }
    }
    let c = |v: i64| v.max(0) as u64;
    MissClasses {
        compulsory: c(compulsory),
        capacity: c(rest),
        conflict: c(associativity),
        latency: c(latency),
        mshr: c(mshr),
    }
}

/// The classes by the configured rule.
pub fn classify_by(
    rules: &TimingRules,
    full: &RunCounts,
    fa: &RunCounts,
    zero_latency: &RunCounts,
    unlimited: &RunCounts,
) -> MissClasses {
    match rules.classes {
        Classes::Balanced => classify(full, fa, zero_latency, unlimited),
        Classes::Released => classify_released(full, fa, zero_latency, unlimited),
    }
}

/// Runs the full model on one kernel on SM 0 of `cfg` (which must have timing on) and
/// returns every issue attempt: Nugteren et al.'s tables 3-5 row by row.
pub fn trace_requests(cfg: &SimConfig, k: &Kernel) -> Result<Vec<TimedRequest>, String> {
    cfg.validate().map_err(|e| e.to_string())?;
    let t = cfg
        .timing
        .as_ref()
        .ok_or("the configuration has no timing section")?;
    let (p, fa) = Variant::Full.params(t);
    let mut e = Engine::new(&cfg.cache, p, fa, cfg.seed);
    e.log = Some(Vec::new());
    struct Quiet;
    impl Hooks for Quiet {}
    let streams = WarpStreams::build(
        k,
        (0..k.num_ctas()).step_by(cfg.gpu.sms.max(1) as usize),
        cfg.schedule.warp_size,
        cfg.coalescing,
        &cfg.cache,
        &cfg.gpu,
        &t.rules,
    )
    .map_err(|e| e.to_string())?;
    e.run_kernel(k, streams.shape(), &mut &streams, 0, &cfg.gpu, &mut Quiet)
        .map_err(|e| e.to_string())?;
    Ok(e.log.take().unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rc(misses: u64, infinite: u64) -> RunCounts {
        RunCounts {
            requests: 100,
            misses,
            infinite,
            fills: 0,
        }
    }

    #[test]
    fn classes_add_up_to_the_misses() {
        // 50 misses: 10 first uses (20 ∞ with latency), 5 conflict, 3 MSHR.
        let c = classify(&rc(50, 20), &rc(45, 20), &rc(40, 10), &rc(47, 20));
        assert_eq!(
            c,
            MissClasses {
                compulsory: 10,
                capacity: 22,
                conflict: 5,
                latency: 10,
                mshr: 3
            }
        );
        // Over-claimed: the excess comes off MSHR first, then latency.
        let c = classify(&rc(20, 15), &rc(15, 15), &rc(10, 8), &rc(10, 15));
        assert_eq!(c.total(), 20);
        assert_eq!((c.compulsory, c.capacity, c.conflict), (8, 0, 5));
        assert_eq!((c.latency, c.mshr), (7, 0));
        // Comparison runs with more misses than the full one count as 0.
        let c = classify(&rc(10, 4), &rc(12, 4), &rc(11, 4), &rc(13, 4));
        assert_eq!(c.total(), 10);
        assert_eq!((c.compulsory, c.capacity), (4, 6));
    }
}
