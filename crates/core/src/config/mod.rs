//! Simulation configuration: cache geometry and policies, coalescing, scheduling, GPU shape,
//! and the named presets of real L1 caches (sources in `docs/model.md`, "Presets"), and the reproduction
//! modes of other tools (`compat`).

pub mod accelsim;
mod cache;
pub mod choice;
pub mod file;
pub mod grid;
mod invalid;
pub mod keys;
mod l2;
mod presets;
mod reuse;
mod rules;
mod schedule;
mod unknown;

pub use cache::{CacheConfig, Replacement, SetIndex, WritePolicy};
pub use file::{ConfigFileError, ConfigFormat};
pub use invalid::Invalid;
pub use l2::{slice_cache, L2Config, SliceHash, VOLTA_ADDRESS_MAP};
pub use presets::{compat, preset, Preset, COMPAT_MODES, PRESETS};
pub use reuse::ReuseMode;
pub use schedule::{Coalescing, GpuConfig, IssuePolicy, ScheduleConfig, SmSelection};
pub use unknown::Unknown;

pub use rules::{
    Arrivals, Classes, CtaLaunch, EffectOrder, FinishedWarps, HitRule, IssueUnit, Kernels, Merging,
    MshrCheck, Stores, TimingRules, WarpReturn,
};
use serde::{Deserialize, Serialize};

/// The GPU timing model of Nugteren et al. 2014 §4.2-4.7 (see `docs/model.md`, "Timing mode").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TimingConfig {
    /// Time steps from issue to effect for a hit (the pipeline latency).
    pub hit_latency: u32,
    /// Minimum miss latency λmin: with a simulated L2, that of a fill the L2 misses (DRAM).
    pub miss_latency: u32,
    /// Minimum latency of a fill the simulated L2 hits (with no L2, unused).
    pub l2_latency: u32,
    /// σ of the half-normal part of the miss latency: λmin + |N(0, σ²)|, rounded.
    pub miss_latency_stddev: f64,
    /// MSHRs per SM (lines in flight); 0 = unlimited.
    pub mshrs: u32,
    /// MSHRs one warp may hold; 0 = no per-warp limit.
    pub mshrs_per_warp: u32,
    /// A request for a line in flight takes effect when that line arrives (§4.2 clipping).
    pub clip: bool,
    /// A warp re-enters the queue only when its requests' latency has passed (§4.5); off,
    /// it goes straight to the back of the queue (plain round-robin, as in tables 3-5).
    pub warp_delay: bool,
    /// Also run the comparison models (fully associative, zero latency, unlimited MSHRs)
    /// that split the misses into five classes.
    pub classify: bool,
    /// The behaviours where the released model of Nugteren et al. (2014) differs from ours.
    pub rules: TimingRules,
}

impl Default for TimingConfig {
    fn default() -> Self {
        TimingConfig {
            hit_latency: 0,
            miss_latency: 100,
            l2_latency: 55,
            miss_latency_stddev: 5.0,
            mshrs: 64,
            mshrs_per_warp: 0,
            clip: true,
            warp_delay: true,
            classify: true,
            rules: TimingRules::default(),
        }
    }
}

impl TimingConfig {
    pub fn validate(&self) -> Result<(), Invalid> {
        let stddev = self.miss_latency_stddev;
        if !(stddev.is_finite() && stddev >= 0.0) {
            return Err(Invalid::MissLatencyStddev { stddev });
        }
        Ok(())
    }
}

/// Everything one simulation needs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SimConfig {
    pub cache: CacheConfig,
    pub coalescing: Coalescing,
    pub schedule: ScheduleConfig,
    pub gpu: GpuConfig,
    /// Seed for every random choice (random scheduling, random replacement, SM sampling).
    pub seed: u64,
    /// How reuse distances and miss-rate curves are measured (`auto`: exact for a trace held
    /// whole, sampled when streamed; `off` is faster).
    pub reuse: ReuseMode,
    /// The timing model (`None`: requests take effect in issue order, no latencies).
    pub timing: Option<TimingConfig>,
    /// The shared L2 behind the L1s, simulated when every SM is (`None`: misses go to
    /// memory).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub l2: Option<L2Config>,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            cache: CacheConfig::default(),
            coalescing: Coalescing::Line,
            schedule: ScheduleConfig::default(),
            gpu: GpuConfig::default(),
            seed: 1,
            reuse: ReuseMode::Auto,
            timing: None,
            l2: None,
        }
    }
}

impl SimConfig {
    /// Whether the L2 is simulated: configured, and every SM simulated (it sees every SM's
    /// traffic or none).
    pub fn l2_simulated(&self) -> bool {
        self.l2.is_some() && self.gpu.simulate == SmSelection::All
    }

    /// Checks that the model can simulate this configuration.
    pub fn validate(&self) -> Result<(), Invalid> {
        self.cache.validate()?;
        if let Some(t) = &self.timing {
            t.validate()?;
            if self.cache.replacement != Replacement::Lru {
                return Err(Invalid::TimingNeedsLru);
            }
            if self.cache.bypass {
                return Err(Invalid::TimingBypass);
            }
        }
        if let Some(l2) = &self.l2 {
            l2.validate()?;
        }
        if self.schedule.warp_size == 0 {
            return Err(Invalid::WarpSize);
        }
        if self.schedule.fetch_group == 0 {
            return Err(Invalid::FetchGroup);
        }
        let g = &self.gpu;
        if g.sms == 0
            || g.max_ctas_per_sm == 0
            || g.max_threads_per_sm == 0
            || g.max_warps_per_sm == 0
        {
            return Err(Invalid::GpuLimits);
        }
        match g.simulate {
            SmSelection::One(sm) if sm >= g.sms => Err(Invalid::NoSuchSm { sm, sms: g.sms }),
            SmSelection::Sample(sample) if sample == 0 || sample > g.sms => {
                Err(Invalid::SmSample { sample, sms: g.sms })
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn presets_are_valid() {
        for p in PRESETS {
            let c = preset(p.name).unwrap();
            c.validate().unwrap();
        }
        assert_eq!(preset("fermi-16k").unwrap().cache.sets(), 32);
        assert_eq!(preset("fermi-48k").unwrap().cache.sets(), 64);
    }
    #[test]
    fn every_preset_has_its_row_and_sources_in_the_docs() {
        let docs = include_str!("../../../../docs/model.md");
        for p in PRESETS {
            assert!(
                docs.contains(&format!("| `{}`", p.name))
                    || docs.contains(&format!(", `{}` |", p.name)),
                "docs/model.md's preset table should have a row for {}",
                p.name
            );
            assert!(!p.sources.is_empty(), "{} names no sources", p.name);
        }
    }
    #[test]
    fn parses_flags() {
        assert_eq!(
            choice::parse::<Coalescing>("bits:12-19").unwrap(),
            Coalescing::Bits { lo: 12, hi: 19 }
        );
        assert_eq!(
            choice::parse::<Replacement>("xyz").unwrap_err().to_string(),
            "unknown replacement `xyz`: expected lru, fifo, lfu, mfu, random or plru"
        );
        assert_eq!(
            choice::parse::<SetIndex>("bits:7,x")
                .unwrap_err()
                .to_string(),
            "expected address bit numbers 0-63 in `bits:7,x`"
        );
    }
    #[test]
    fn validation_explains() {
        let mut c = CacheConfig {
            ways: 3,
            ..CacheConfig::default()
        };
        assert_eq!(
            c.validate(),
            Err(Invalid::Ways {
                ways: 3,
                lines: 128
            })
        );
        assert!(c
            .validate()
            .unwrap_err()
            .to_string()
            .contains("associativity"));
        c.ways = 4;
        c.set_index = SetIndex::Bits(vec![7, 8]);
        assert_eq!(
            c.validate(),
            Err(Invalid::SetIndexBits { bits: 2, sets: 32 })
        );
        assert!(c.validate().unwrap_err().to_string().contains("sets"));
        // More set-index bits than an address has: refused, not an overflow.
        c.set_index = SetIndex::Bits(vec![7; 70]);
        assert_eq!(
            c.validate().unwrap_err().to_string(),
            "70 set-index bits give 2^70 sets but the cache has 32"
        );
        c.set_index = SetIndex::Modulo;
        c.replacement = Replacement::Plru;
        c.validate().unwrap();
    }
}
