//! Simulation configuration: cache geometry and policies, coalescing, scheduling, GPU shape,
//! and the named presets of real L1 caches (sources in `docs/model.md`, "Presets"), and the reproduction
//! modes of other tools (`compat`).

mod rules;

pub use rules::{
    Arrivals, Classes, CtaLaunch, EffectOrder, FinishedWarps, HitRule, IssueUnit, Kernels,
    MshrCheck, Stores, TimingRules, WarpReturn,
};
use serde::{Deserialize, Serialize};

/// How addresses map to sets.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum SetIndex {
    /// `line_address % sets`.
    #[default]
    Modulo,
    /// Fermi's XOR hash (Nugteren et al. 2014, §5.1, fig. 6): with 128-byte lines, bits 7-11
    /// XOR bits 13,14,15,17,19, and bit 12 on top for 64 sets; the same bits of the line
    /// address for other line sizes, modulo the sets (at most 64).
    FermiHash,
    /// Set index bit `i` is byte-address bit `bits[i]`.
    Bits(Vec<u8>),
}

impl SetIndex {
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "modulo" => Ok(SetIndex::Modulo),
            "fermi-hash" | "fermi" => Ok(SetIndex::FermiHash),
            _ => {
                let list = s.strip_prefix("bits:").ok_or_else(|| {
                    format!(
                        "unknown set index `{s}`: expected modulo, fermi-hash or bits:B0,B1,..."
                    )
                })?;
                let bits = list
                    .split(',')
                    .map(|b| b.trim().parse::<u8>().ok().filter(|&b| b < 64))
                    .collect::<Option<Vec<u8>>>()
                    .ok_or_else(|| format!("expected address bit numbers 0-63 in `{s}`"))?;
                Ok(SetIndex::Bits(bits))
            }
        }
    }
    pub fn name(&self) -> String {
        match self {
            SetIndex::Modulo => "modulo".into(),
            SetIndex::FermiHash => "fermi-hash".into(),
            SetIndex::Bits(b) => format!(
                "bits:{}",
                b.iter()
                    .map(|b| b.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            ),
        }
    }
}

/// Which line a full set gives up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Replacement {
    #[default]
    Lru,
    Fifo,
    Lfu,
    Mfu,
    Random,
    Plru,
}

impl Replacement {
    pub const ALL: [Replacement; 6] = [
        Replacement::Lru,
        Replacement::Fifo,
        Replacement::Lfu,
        Replacement::Mfu,
        Replacement::Random,
        Replacement::Plru,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Replacement::Lru => "lru",
            Replacement::Fifo => "fifo",
            Replacement::Lfu => "lfu",
            Replacement::Mfu => "mfu",
            Replacement::Random => "random",
            Replacement::Plru => "plru",
        }
    }
    pub fn parse(s: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|r| r.name() == s)
            .ok_or_else(|| {
                format!("unknown replacement `{s}`: expected lru, fifo, lfu, mfu, random or plru")
            })
    }
}

/// What stores do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum WritePolicy {
    /// Write-through, no write-allocate: stores go to memory and never fill a line (GPU L1 default).
    #[default]
    Wtna,
    /// Write-back with write-allocate: stores fill lines and mark them dirty.
    Wbwa,
}

impl WritePolicy {
    pub fn name(self) -> &'static str {
        match self {
            WritePolicy::Wtna => "wtna",
            WritePolicy::Wbwa => "wbwa",
        }
    }
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "wtna" => Ok(WritePolicy::Wtna),
            "wbwa" => Ok(WritePolicy::Wbwa),
            _ => Err(format!("unknown write policy `{s}`: expected wtna or wbwa")),
        }
    }
}

/// The L1 cache.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct CacheConfig {
    pub size_bytes: u64,
    pub line_bytes: u32,
    /// Ways per set; 0 means fully associative.
    pub ways: u32,
    /// Sector size; equal to `line_bytes` for an unsectored cache.
    pub sector_bytes: u32,
    pub set_index: SetIndex,
    pub replacement: Replacement,
    pub write_policy: WritePolicy,
}

impl Default for CacheConfig {
    fn default() -> Self {
        CacheConfig {
            size_bytes: 16 * 1024,
            line_bytes: 128,
            ways: 4,
            sector_bytes: 128,
            set_index: SetIndex::Modulo,
            replacement: Replacement::Lru,
            write_policy: WritePolicy::Wtna,
        }
    }
}

impl CacheConfig {
    pub fn lines(&self) -> u64 {
        self.size_bytes / self.line_bytes.max(1) as u64
    }
    pub fn ways_effective(&self) -> u32 {
        if self.ways == 0 {
            self.lines() as u32
        } else {
            self.ways
        }
    }
    pub fn sets(&self) -> u32 {
        (self.lines() / self.ways_effective().max(1) as u64) as u32
    }
    /// Checks the geometry; the message says what is wrong and what is expected.
    pub fn validate(&self) -> Result<(), String> {
        let pow2 = |v: u64| v != 0 && v.is_power_of_two();
        if !pow2(self.line_bytes as u64) || self.line_bytes < 4 {
            return Err(format!(
                "line size {} must be a power of two of at least 4 bytes",
                self.line_bytes
            ));
        }
        if !pow2(self.sector_bytes as u64) || self.sector_bytes > self.line_bytes {
            return Err(format!(
                "sector size {} must be a power of two no larger than the line size {}",
                self.sector_bytes, self.line_bytes
            ));
        }
        if self.line_bytes / self.sector_bytes > 32 {
            return Err("at most 32 sectors per line".into());
        }
        if self.size_bytes < self.line_bytes as u64 || self.size_bytes % self.line_bytes as u64 != 0
        {
            return Err(format!(
                "cache size {} must be a multiple of the line size {}",
                self.size_bytes, self.line_bytes
            ));
        }
        let lines = self.lines();
        if lines > 1 << 24 {
            return Err(format!(
                "{lines} lines is more than this model supports (2^24)"
            ));
        }
        let ways = self.ways_effective() as u64;
        if ways > lines || lines % ways != 0 {
            return Err(format!(
                "associativity {} must divide the number of lines {lines}",
                self.ways
            ));
        }
        let sets = self.sets() as u64;
        match &self.set_index {
            SetIndex::Modulo => {}
            SetIndex::FermiHash => {
                if sets > 64 {
                    return Err(format!(
                        "the Fermi set hash gives at most 64 sets (this cache has {sets})"
                    ));
                }
            }
            SetIndex::Bits(bits) => {
                if 1u64 << bits.len() != sets {
                    return Err(format!(
                        "{} set-index bits give {} sets but the cache has {sets}",
                        bits.len(),
                        1u64 << bits.len()
                    ));
                }
                let offset_bits = self.line_bytes.trailing_zeros() as u8;
                if let Some(b) = bits.iter().find(|&&b| b < offset_bits) {
                    return Err(format!(
                        "set-index bit {b} lies inside the line offset (bits 0-{})",
                        offset_bits - 1
                    ));
                }
            }
        }
        if self.replacement == Replacement::Plru && !ways.is_power_of_two() {
            return Err(format!(
                "tree-PLRU needs a power-of-two associativity, not {ways}"
            ));
        }
        Ok(())
    }
}

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
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "none" => Ok(Coalescing::None),
            "line" => Ok(Coalescing::Line),
            "sector" => Ok(Coalescing::Sector),
            "gt200" => Ok(Coalescing::Gt200),
            _ => {
                let range = s.strip_prefix("bits:").ok_or_else(|| {
                    format!("unknown coalescing `{s}`: expected none, line, sector, gt200 or bits:LO-HI")
                })?;
                let (lo, hi) = range
                    .split_once('-')
                    .and_then(|(a, b)| Some((a.parse::<u8>().ok()?, b.parse::<u8>().ok()?)))
                    .filter(|(lo, hi)| lo <= hi && *hi < 64)
                    .ok_or_else(|| {
                        format!("expected bits:LO-HI with 0 <= LO <= HI < 64, found `{s}`")
                    })?;
                Ok(Coalescing::Bits { lo, hi })
            }
        }
    }
    pub fn name(&self) -> String {
        match self {
            Coalescing::None => "none".into(),
            Coalescing::Line => "line".into(),
            Coalescing::Sector => "sector".into(),
            Coalescing::Gt200 => "gt200".into(),
            Coalescing::Bits { lo, hi } => format!("bits:{lo}-{hi}"),
        }
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
    pub fn name(self) -> &'static str {
        match self {
            IssuePolicy::RoundRobin => "round-robin",
            IssuePolicy::Sequential => "sequential",
            IssuePolicy::Random => "random",
            IssuePolicy::Gto => "gto",
            IssuePolicy::TwoLevel => "two-level",
        }
    }
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "round-robin" | "rr" | "lrr" => Ok(IssuePolicy::RoundRobin),
            "sequential" | "seq" => Ok(IssuePolicy::Sequential),
            "random" => Ok(IssuePolicy::Random),
            "gto" => Ok(IssuePolicy::Gto),
            "two-level" | "2lvl" => Ok(IssuePolicy::TwoLevel),
            _ => Err(format!("unknown issue policy `{s}`: expected round-robin, sequential, random, gto or two-level")),
        }
    }
}

/// Thread and warp scheduling.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
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
#[serde(default)]
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

/// The GPU timing model of Nugteren et al. 2014 §4.2-4.7 (see `docs/model.md`, "Timing mode").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TimingConfig {
    /// Time steps from issue to effect for a hit (the pipeline latency).
    pub hit_latency: u32,
    /// Minimum miss latency λmin.
    pub miss_latency: u32,
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
    pub fn validate(&self) -> Result<(), String> {
        if !(self.miss_latency_stddev.is_finite() && self.miss_latency_stddev >= 0.0) {
            return Err(format!(
                "miss latency standard deviation {} must be a finite number >= 0",
                self.miss_latency_stddev
            ));
        }
        Ok(())
    }
}

/// Everything one simulation needs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SimConfig {
    pub cache: CacheConfig,
    pub coalescing: Coalescing,
    pub schedule: ScheduleConfig,
    pub gpu: GpuConfig,
    /// Seed for every random choice (random scheduling, random replacement, SM sampling).
    pub seed: u64,
    /// Compute exact reuse distances and miss-rate curves (costs some speed).
    pub reuse: bool,
    /// The timing model (`None`: requests take effect in issue order, no latencies).
    pub timing: Option<TimingConfig>,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            cache: CacheConfig::default(),
            coalescing: Coalescing::Line,
            schedule: ScheduleConfig::default(),
            gpu: GpuConfig::default(),
            seed: 1,
            reuse: true,
            timing: None,
        }
    }
}

impl SimConfig {
    pub fn validate(&self) -> Result<(), String> {
        self.cache.validate()?;
        if let Some(t) = &self.timing {
            t.validate()?;
            if self.cache.replacement != Replacement::Lru {
                return Err("the timing model is a reuse-distance (LRU stack) model: it needs --replacement lru".into());
            }
        }
        if self.schedule.warp_size == 0 {
            return Err("warp size must be at least 1".into());
        }
        if self.schedule.fetch_group == 0 {
            return Err("fetch group size must be at least 1".into());
        }
        let g = &self.gpu;
        if g.sms == 0
            || g.max_ctas_per_sm == 0
            || g.max_threads_per_sm == 0
            || g.max_warps_per_sm == 0
        {
            return Err("SM count and per-SM limits must be at least 1".into());
        }
        match g.simulate {
            SmSelection::One(s) if s >= g.sms => {
                Err(format!("SM {s} does not exist (the GPU has {} SMs)", g.sms))
            }
            SmSelection::Sample(n) if n == 0 || n > g.sms => {
                Err(format!("cannot sample {n} of {} SMs", g.sms))
            }
            _ => Ok(()),
        }
    }
}

/// A named real-GPU configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Preset {
    pub name: &'static str,
    pub description: &'static str,
}

pub const PRESETS: [Preset; 8] = [
    Preset {
        name: "fermi-16k",
        description: "Fermi GTX470/480 L1, 16 KB, 4-way, 128 B lines, XOR set hash",
    },
    Preset {
        name: "fermi-48k",
        description: "Fermi GTX470/480 L1, 48 KB, 6-way, 128 B lines, XOR set hash",
    },
    Preset {
        name: "gtx470-16k",
        description: "Nugteren et al. 2014's GTX470 setting: fermi-16k on one SM running every CTA of the first 8192 threads, with the timing model (64 MSHRs, miss latency 100 + |N(0, 5^2)|)",
    },
    Preset {
        name: "gtx470-48k",
        description: "Nugteren et al. 2014's GTX470 setting: fermi-48k on one SM running every CTA of the first 8192 threads, with the timing model (64 MSHRs, miss latency 100 + |N(0, 5^2)|)",
    },
    Preset {
        name: "kepler",
        description: "Kepler GK110 L1, 16 KB, 4-way, 128 B lines",
    },
    Preset {
        name: "volta",
        description: "Volta V100 L1, 128 KB, 128 B lines with 32 B sectors",
    },
    Preset {
        name: "ampere",
        description: "Ampere A100 L1, 128 KB, 128 B lines with 32 B sectors",
    },
    Preset {
        name: "hopper",
        description: "Hopper H100 L1, 256 KB, 128 B lines with 32 B sectors",
    },
];

/// The configuration of a named preset.
pub fn preset(name: &str) -> Result<SimConfig, String> {
    let mut c = SimConfig::default();
    let sectored = |c: &mut SimConfig, kb: u64, sms: u32| {
        c.cache = CacheConfig {
            size_bytes: kb * 1024,
            line_bytes: 128,
            ways: (kb * 1024 / 128 / 4) as u32,
            sector_bytes: 32,
            set_index: SetIndex::Modulo,
            replacement: Replacement::Lru,
            write_policy: WritePolicy::Wtna,
        };
        c.coalescing = Coalescing::Sector;
        c.gpu = GpuConfig {
            sms,
            max_ctas_per_sm: 32,
            max_threads_per_sm: 2048,
            max_warps_per_sm: 64,
            simulate: SmSelection::One(0),
            thread_limit: 0,
        };
    };
    match name {
        "fermi-16k" | "fermi-48k" | "gtx470-16k" | "gtx470-48k" => {
            let big = name.ends_with("48k");
            c.cache = CacheConfig {
                size_bytes: if big { 48 * 1024 } else { 16 * 1024 },
                line_bytes: 128,
                ways: if big { 6 } else { 4 },
                sector_bytes: 128,
                set_index: SetIndex::FermiHash,
                replacement: Replacement::Lru,
                write_policy: WritePolicy::Wtna,
            };
            c.coalescing = Coalescing::Line;
            c.gpu = GpuConfig {
                sms: 14,
                max_ctas_per_sm: 8,
                max_threads_per_sm: 1536,
                max_warps_per_sm: 48,
                simulate: SmSelection::One(0),
                thread_limit: 0,
            };
            if name.starts_with("gtx470") {
                // Nugteren et al. 2014 §5-6: one core running every CTA of the first 8192
                // threads; 64 MSHRs, λmin 100, σ 5, hit latency 0.
                c.timing = Some(TimingConfig::default());
                c.gpu.sms = 1;
                c.gpu.thread_limit = 8192;
            }
        }
        "kepler" => {
            c.cache = CacheConfig {
                size_bytes: 16 * 1024,
                line_bytes: 128,
                ways: 4,
                sector_bytes: 128,
                ..CacheConfig::default()
            };
            c.coalescing = Coalescing::Line;
            c.gpu = GpuConfig {
                sms: 14,
                max_ctas_per_sm: 16,
                max_threads_per_sm: 2048,
                max_warps_per_sm: 64,
                simulate: SmSelection::One(0),
                thread_limit: 0,
            };
        }
        "volta" => sectored(&mut c, 128, 80),
        "ampere" => sectored(&mut c, 128, 108),
        "hopper" => sectored(&mut c, 256, 132),
        _ => {
            let names: Vec<&str> = PRESETS.iter().map(|p| p.name).collect();
            return Err(format!(
                "unknown preset `{name}`: expected one of {}",
                names.join(", ")
            ));
        }
    }
    Ok(c)
}

/// The reproduction modes (`--compat NAME`).
pub const COMPAT_MODES: [&str; 1] = ["gpu-cache-model"];

/// Switches `c` to an exact reproduction of another tool. `gpu-cache-model`: the released
/// model of Nugteren et al. (2014) with every rule of [`TimingRules::released`] and its
/// fixed settings (one SM of at most 8 CTAs, 1536 threads and 48 warps, 32-thread warps,
/// the Fermi hash, LRU, hit latency 0, no clipping, no per-warp MSHR limit, every thread).
/// The cache size, line size, associativity, MSHRs and miss latency stay as configured
/// (its `current.conf`); with no timing section yet, they are its `default16.conf`.
pub fn compat(c: &mut SimConfig, name: &str) -> Result<(), String> {
    match name {
        "gpu-cache-model" => {
            let t = c.timing.get_or_insert_with(TimingConfig::default);
            t.hit_latency = 0;
            t.mshrs_per_warp = 0;
            t.clip = false;
            t.warp_delay = true;
            t.classify = true;
            t.rules = TimingRules::released();
            c.cache.set_index = SetIndex::FermiHash;
            c.cache.replacement = Replacement::Lru;
            c.cache.sector_bytes = c.cache.line_bytes;
            c.coalescing = Coalescing::Line;
            c.schedule.warp_size = 32;
            // One core, 8 CTAs and 1536 threads at a time. It has no warp limit: 64 never
            // binds (8 CTAs of at most 192 threads, or fewer larger ones: at most 56 warps).
            c.gpu = GpuConfig {
                max_warps_per_sm: 64,
                ..GpuConfig::default()
            };
            Ok(())
        }
        _ => Err(format!(
            "unknown compatibility mode `{name}`: expected {}",
            COMPAT_MODES.join(", ")
        )),
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
    fn parses_flags() {
        assert_eq!(
            SetIndex::parse("bits:7,8").unwrap(),
            SetIndex::Bits(vec![7, 8])
        );
        assert_eq!(
            Coalescing::parse("bits:12-19").unwrap(),
            Coalescing::Bits { lo: 12, hi: 19 }
        );
        assert!(Coalescing::parse("bits:9-3").is_err());
        assert!(Replacement::parse("xyz")
            .unwrap_err()
            .contains("expected lru"));
    }
    #[test]
    fn validation_explains() {
        let mut c = CacheConfig {
            ways: 3,
            ..CacheConfig::default()
        };
        assert!(c.validate().unwrap_err().contains("associativity"));
        c.ways = 4;
        c.set_index = SetIndex::Bits(vec![7, 8]);
        assert!(c.validate().unwrap_err().contains("sets"));
        c.set_index = SetIndex::Modulo;
        c.replacement = Replacement::Plru;
        c.validate().unwrap();
    }
}
