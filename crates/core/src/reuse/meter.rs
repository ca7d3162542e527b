//! What measures one simulated SM's reuse distances: the exact tracker or the sampled one, as
//! the configuration's reuse mode says once `auto` is resolved (`config::ReuseMode`).

use super::{Distances, Histogram, ReuseTracker, SampledTracker};
use crate::config::ReuseMode;

/// One per simulated SM, used on every request: the sizes of the two (a few hundred bytes)
/// matter less than a pointer to follow.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug)]
pub enum ReuseMeter {
    Exact(ReuseTracker),
    Sampled(SampledTracker),
}

/// What a meter measured, for the report.
#[derive(Clone, Debug, PartialEq)]
pub struct ReuseHistograms {
    pub whole: Histogram,
    pub in_set: Histogram,
    /// The whole-cache histograms of two independent halves of a sample, each estimating
    /// `whole`; both equal to it when exact.
    pub halves: [Histogram; 2],
    pub distinct_lines: u64,
}

impl ReuseMeter {
    /// The meter of `mode` (resolved: not `auto`) for a cache of `sets` sets and `lines`
    /// lines; none when off.
    pub fn new(mode: ReuseMode, sets: usize, lines: usize) -> Option<ReuseMeter> {
        match mode {
            ReuseMode::Off => None,
            ReuseMode::Sampled => Some(ReuseMeter::Sampled(SampledTracker::new(sets, lines))),
            ReuseMode::Exact | ReuseMode::Auto => Some(ReuseMeter::Exact(ReuseTracker::new(sets))),
        }
    }

    /// Records a use of `line` in `set`: its distances, where measured (a sampled meter
    /// measures only the lines in its sample).
    #[inline]
    pub fn access(&mut self, line: u64, set: u32) -> Option<Distances> {
        match self {
            ReuseMeter::Exact(t) => Some(t.access(line, set)),
            ReuseMeter::Sampled(s) => s.access(line, set),
        }
    }

    /// The exact tracker, when this meter is one.
    pub fn exact(&mut self) -> Option<&mut ReuseTracker> {
        match self {
            ReuseMeter::Exact(t) => Some(t),
            ReuseMeter::Sampled(_) => None,
        }
    }

    pub fn histograms(&self) -> ReuseHistograms {
        match self {
            ReuseMeter::Exact(t) => ReuseHistograms {
                whole: t.whole_hist.clone(),
                in_set: t.set_hist.clone(),
                halves: [t.whole_hist.clone(), t.whole_hist.clone()],
                distinct_lines: t.distinct_lines(),
            },
            ReuseMeter::Sampled(s) => {
                let (whole, in_set, halves) = s.histograms();
                ReuseHistograms {
                    whole,
                    in_set,
                    halves,
                    distinct_lines: s.distinct_lines(),
                }
            }
        }
    }

    pub fn heap_bytes(&self) -> usize {
        match self {
            ReuseMeter::Exact(t) => t.heap_bytes(),
            ReuseMeter::Sampled(s) => s.heap_bytes(),
        }
    }
}
