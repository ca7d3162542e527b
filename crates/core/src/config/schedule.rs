//! How requests are formed and issued: coalescing, the warp-issue policy, and the GPU's SMs.

use super::*;

/// How a warp instruction's accesses become cache requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Coalescing {
    /// Every access is its own request.
    None,
    /// One request per distinct line.
    #[default]
    Line,
    /// One request per distinct line, carrying a mask of the 32-byte (sector-size) sectors used.
    Sector,
    /// Compute capability 1.2/1.3 rules: per half-warp, 32/64/128-byte segments reduced in size.
    Gt200,
    /// Accesses coalesce when they differ only in address bits `lo..=hi` (Hadidi 2015 §4).
    Bits { lo: u8, hi: u8 },
}

impl Coalescing {
    /// How it is written (`line`, `bits:12-19`), from the registry (`coalesce`).
    pub fn name(&self) -> String {
        super::choice::name_of(self)
    }
}

/// Which resident warp issues next.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum IssuePolicy {
    /// Loose round-robin: each ready warp issues one instruction in turn (Crawford 2014 §5.3.3).
    #[default]
    RoundRobin,
    /// A warp runs until it finishes or reaches a barrier, then the next one in order (Crawford 2014 §5.2.2).
    Sequential,
    /// A random ready warp each time (seeded).
    Random,
    /// Greedy-then-oldest: keep issuing from one warp until it stalls, then the oldest ready warp.
    Gto,
    /// Two-level: round-robin inside a fetch group; move to the next group when all of it stalls.
    TwoLevel,
}

impl IssuePolicy {
    /// Its name in the registry (`schedule::policy`).
    pub fn name(self) -> &'static str {
        super::choice::entry_of(&self).map_or("?", |e| e.name)
    }
}

/// Thread and warp scheduling.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ScheduleConfig {
    pub policy: IssuePolicy,
    /// Threads per warp; 1 gives the per-thread policies of Crawford 2014 §5.2.
    pub warp_size: u32,
    /// Warps per fetch group for [`IssuePolicy::TwoLevel`].
    pub fetch_group: u32,
}

impl Default for ScheduleConfig {
    fn default() -> Self {
        ScheduleConfig {
            policy: IssuePolicy::RoundRobin,
            warp_size: 32,
            fetch_group: 8,
        }
    }
}

/// Which SMs get a simulated L1.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SmSelection {
    /// One chosen SM (as the seeds do).
    One(u32),
    /// A seeded random sample of this many SMs.
    Sample(u32),
    /// Every SM with its own L1.
    All,
}

impl Default for SmSelection {
    fn default() -> Self {
        SmSelection::One(0)
    }
}

/// The GPU around the L1: SM count and per-SM residency limits.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GpuConfig {
    pub sms: u32,
    pub max_ctas_per_sm: u32,
    pub max_threads_per_sm: u32,
    pub max_warps_per_sm: u32,
    pub simulate: SmSelection,
    /// Model only the CTAs whose threads all have linear ids below this (0 = every CTA): the
    /// tracer of Nugteren et al. (2014) records the first 8192 threads of a kernel.
    pub thread_limit: u32,
}

impl Default for GpuConfig {
    fn default() -> Self {
        GpuConfig {
            sms: 1,
            max_ctas_per_sm: 8,
            max_threads_per_sm: 1536,
            max_warps_per_sm: 48,
            simulate: SmSelection::One(0),
            thread_limit: 0,
        }
    }
}

impl GpuConfig {
    /// How many of a kernel's CTAs are modelled under [`GpuConfig::thread_limit`].
    pub fn modelled_ctas(&self, ctas: u32, threads_per_cta: u32) -> u32 {
        if self.thread_limit == 0 {
            ctas
        } else {
            ctas.min(self.thread_limit / threads_per_cta.max(1))
        }
    }
}
