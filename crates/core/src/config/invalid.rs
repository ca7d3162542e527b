//! Why a configuration cannot be simulated: one variant per rule of
//! [`SimConfig::validate`](super::SimConfig::validate), each saying what is wrong and what is
//! expected, so that the CLI, the app's configuration panel and configuration files report
//! the same thing, and tests can match on the rule rather than on its wording.

/// A configuration the model cannot simulate.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum Invalid {
    #[error("line size {line} must be a power of two of at least 4 bytes")]
    LineSize { line: u32 },
    #[error("sector size {sector} must be a power of two no larger than the line size {line}")]
    SectorSize { sector: u32, line: u32 },
    #[error("at most 32 sectors per line")]
    TooManySectors,
    #[error("cache size {size} must be a multiple of the line size {line}")]
    CacheSize { size: u64, line: u32 },
    #[error("{lines} lines is more than this model supports (2^24)")]
    TooManyLines { lines: u64 },
    #[error("associativity {ways} must divide the number of lines {lines}")]
    Ways { ways: u32, lines: u64 },
    #[error("the Fermi set hash gives at most 64 sets (this cache has {sets}); --set-index modulo indexes any number")]
    FermiHashSets { sets: u64 },
    #[error("the {hash} set index needs a power-of-two number of sets up to 65536 (this cache has {sets}); --set-index modulo indexes any number")]
    HashSets { hash: String, sets: u64 },
    #[error("{bits} set-index bits give {} sets but the cache has {sets}", sets_of(*bits))]
    SetIndexBits { bits: usize, sets: u64 },
    #[error("set-index bit {bit} lies inside the line offset (bits 0-{})", offset_bits - 1)]
    SetIndexBitInOffset { bit: u8, offset_bits: u8 },
    #[error("tree-PLRU needs a power-of-two associativity, not {ways}")]
    PlruWays { ways: u32 },
    #[error("miss latency standard deviation {stddev} must be a finite number >= 0")]
    MissLatencyStddev { stddev: f64 },
    #[error("the timing model is a reuse-distance (LRU stack) model: it needs --replacement lru")]
    TimingNeedsLru,
    #[error("warp size must be at least 1")]
    WarpSize,
    #[error("fetch group size must be at least 1")]
    FetchGroup,
    #[error("SM count and per-SM limits must be at least 1")]
    GpuLimits,
    #[error("SM {sm} does not exist (the GPU has {sms} SMs)")]
    NoSuchSm { sm: u32, sms: u32 },
    #[error("cannot sample {sample} of {sms} SMs")]
    SmSample { sample: u32, sms: u32 },
    #[error("the L2 needs 1 to 1024 memory channels, not {channels}")]
    L2Channels { channels: u32 },
    #[error("the L2's slices per channel must be a power of two up to 64, not {per}")]
    L2SlicesPerChannel { per: u32 },
    #[error("the L2's xor slice hash needs a power-of-two number of channels, not {channels} (linear or ipoly take any)")]
    L2XorChannels { channels: u32 },
    #[error("the L2's address map `{map}`: {why}")]
    L2AddressMap { map: String, why: String },
    #[error("the L2 writes back (write-policy wbwa): its writes allocate without a fetch, as GPU L2s do")]
    L2WriteBack,
    #[error("the L2 caches what reaches it: its slice cannot be bypassed")]
    L2Bypass,
    #[error("the timing model times the L1's hits and misses: it needs an L1 that caches global data (l1-bypass off)")]
    TimingBypass,
    #[error("the L2's slice: {0}")]
    L2Slice(Box<Invalid>),
}

/// `2^bits` written out, or as a power where it does not fit 64 bits.
fn sets_of(bits: usize) -> String {
    match u32::try_from(bits).ok().and_then(|b| 1u64.checked_shl(b)) {
        Some(n) => n.to_string(),
        None => format!("2^{bits}"),
    }
}
