//! Named configurations of real GPUs and papers' settings, and the released model's compatibility mode.

use super::*;

/// A named configuration: a real GPU's L1 or a paper's setting. A new preset is one entry in
/// [`PRESETS`] (and its row in `docs/model.md`'s preset table, whose sources say more).
#[derive(Clone, Copy, Debug)]
pub struct Preset {
    pub name: &'static str,
    pub description: &'static str,
    /// Where its values come from, in short (`docs/model.md` has them in full).
    pub sources: &'static str,
    /// Its configuration.
    pub config: fn() -> SimConfig,
}

/// Every preset, in the order menus and `--help` list them.
pub const PRESETS: [Preset; 8] = [
    Preset {
        name: "fermi-16k",
        description: "Fermi GTX470/480 L1, 16 KB, 4-way, 128 B lines, XOR set hash; L2 768 KB in 12 slices",
        sources: "Nugteren et al. 2014 §3.2 and §5.1; CUDA programming guide G.1 (limits); Accel-Sim's GTX480 configuration (L2)",
        config: || fermi(false),
    },
    Preset {
        name: "fermi-48k",
        description: "Fermi GTX470/480 L1, 48 KB, 6-way, 128 B lines, XOR set hash; L2 768 KB in 12 slices",
        sources: "Nugteren et al. 2014 §5.1 (48 KB 6-way, 64 sets); Accel-Sim's GTX480 configuration (L2)",
        config: || fermi(true),
    },
    Preset {
        name: "gtx470-16k",
        description: "Nugteren et al. 2014's GTX470 setting: fermi-16k on one SM running every CTA of the first 8192 threads, with the timing model (64 MSHRs, miss latency 100 + |N(0, 5^2)|)",
        sources: "Nugteren et al. 2014 §5-6; the released model's NUM_CORES 1 and 8192-thread tracer",
        config: || gtx470(false),
    },
    Preset {
        name: "gtx470-48k",
        description: "Nugteren et al. 2014's GTX470 setting: fermi-48k on one SM running every CTA of the first 8192 threads, with the timing model (64 MSHRs, miss latency 100 + |N(0, 5^2)|)",
        sources: "Nugteren et al. 2014 §5-6; the released model's NUM_CORES 1 and 8192-thread tracer",
        config: || gtx470(true),
    },
    Preset {
        name: "kepler",
        description: "Kepler GK110 L1, 16 KB, 4-way, 128 B lines; L2 1.5 MB in 24 slices",
        sources: "NVIDIA Kepler GK110 whitepaper; Accel-Sim's TITAN configuration (L2)",
        config: kepler,
    },
    Preset {
        name: "volta",
        description: "Volta V100 L1, 128 KB, 128 B lines with 32 B sectors; L2 6 MB in 64 slices, IPOLY",
        sources: "NVIDIA Tesla V100 whitepaper; Accel-Sim's QV100 configuration (L2)",
        config: || with_l2(sectored(128, 80), volta_l2()),
    },
    Preset {
        name: "ampere",
        description: "Ampere A100 L1, 128 KB, 128 B lines with 32 B sectors; L2 40 MB in 160 slices",
        sources: "NVIDIA A100 whitepaper; Accel-Sim's A100 configuration (L2)",
        config: || with_l2(sectored(128, 108), a100_l2()),
    },
    Preset {
        name: "hopper",
        description: "Hopper H100 L1, 224 KB (measured at the default carve-out), 128 B lines with 32 B sectors, stores allocating, XOR sets; L2 50 MB in 160 slices, IPOLY",
        sources: "measured on an H100 SXM5 (docs/hardware.md: stores allocate, sets not by modulo); H100 whitepaper (132 SMs, 50 MB L2); Accel-Sim's H100 configuration (L2)",
        config: hopper,
    },
];

/// The configuration of a named preset.
pub fn preset(name: &str) -> Result<SimConfig, Unknown> {
    match PRESETS.iter().find(|p| p.name == name) {
        Some(p) => Ok((p.config)()),
        None => Err(Unknown::Preset {
            found: name.to_string(),
            expected: PRESETS.iter().map(|p| p.name).collect(),
        }),
    }
}

/// Fermi's L1 (GTX470/480): 16 KB 4-way or 48 KB 6-way, 128 B lines, the XOR set hash, on
/// 14 SMs of at most 8 CTAs, 1536 threads and 48 warps.
fn fermi(big: bool) -> SimConfig {
    SimConfig {
        cache: CacheConfig {
            size_bytes: if big { 48 * 1024 } else { 16 * 1024 },
            line_bytes: 128,
            ways: if big { 6 } else { 4 },
            sector_bytes: 128,
            set_index: SetIndex::FermiHash,
            replacement: Replacement::Lru,
            write_policy: WritePolicy::Wtna,
            bypass: false,
        },
        coalescing: Coalescing::Line,
        gpu: GpuConfig {
            sms: 14,
            max_ctas_per_sm: 8,
            max_threads_per_sm: 1536,
            max_warps_per_sm: 48,
            simulate: SmSelection::One(0),
            thread_limit: 0,
        },
        l2: Some(L2Config::default()),
        ..SimConfig::default()
    }
}

/// Nugteren et al. 2014 §5-6: Fermi's L1 on one core running every CTA of the first 8192
/// threads; 64 MSHRs, λmin 100, σ 5, hit latency 0; no L2 (the paper models the L1 alone).
fn gtx470(big: bool) -> SimConfig {
    let mut c = fermi(big);
    c.l2 = None;
    c.timing = Some(TimingConfig::default());
    c.gpu.sms = 1;
    c.gpu.thread_limit = 8192;
    c
}

/// Kepler GK110's L1: 16 KB, 4-way, 128 B lines, on 14 SMs of at most 16 CTAs.
fn kepler() -> SimConfig {
    SimConfig {
        cache: CacheConfig {
            size_bytes: 16 * 1024,
            line_bytes: 128,
            ways: 4,
            sector_bytes: 128,
            ..CacheConfig::default()
        },
        coalescing: Coalescing::Line,
        gpu: GpuConfig {
            sms: 14,
            max_ctas_per_sm: 16,
            max_threads_per_sm: 2048,
            max_warps_per_sm: 64,
            simulate: SmSelection::One(0),
            thread_limit: 0,
        },
        l2: Some(L2Config {
            channels: 12,
            slices_per_channel: 2,
            slice_hash: SliceHash::Linear,
            address_map: AMPERE_ADDRESS_MAP.into(),
            slice: slice_cache(32, 16, SetIndex::Ipoly),
        }),
        ..SimConfig::default()
    }
}

/// The H100 as measured (docs/hardware.md): stores allocate and hit on the line's tag
/// (`wtwa`), and the sets are not chosen by the line modulo 4 (a kernel that keeps 512 lines
/// equal modulo 4 in use hits on the GPU as if they fitted): XOR, as GPGPU-Sim's `X`.
fn hopper() -> SimConfig {
    let mut c = with_l2(sectored(224, 132), h100_l2());
    c.cache.set_index = SetIndex::Xor;
    c
}

/// Volta and later: `kb` KB of L1 in 4 sets of 128 B lines with 32 B sectors, sector
/// coalescing, on `sms` SMs of at most 32 CTAs; stores written through and allocating
/// without a fetch (`wtwa`: Accel-Sim's `L:T:m:L:L`, write-through with lazy fetch-on-read).
fn sectored(kb: u64, sms: u32) -> SimConfig {
    SimConfig {
        cache: CacheConfig {
            size_bytes: kb * 1024,
            line_bytes: 128,
            ways: (kb * 1024 / 128 / 4) as u32,
            sector_bytes: 32,
            set_index: SetIndex::Modulo,
            replacement: Replacement::Lru,
            write_policy: WritePolicy::Wtwa,
            bypass: false,
        },
        coalescing: Coalescing::Sector,
        gpu: GpuConfig {
            sms,
            max_ctas_per_sm: 32,
            max_threads_per_sm: 2048,
            max_warps_per_sm: 64,
            simulate: SmSelection::One(0),
            thread_limit: 0,
        },
        ..SimConfig::default()
    }
}

/// `c` with `l2` behind its L1s.
fn with_l2(mut c: SimConfig, l2: L2Config) -> SimConfig {
    c.l2 = Some(l2);
    c
}

/// The address map of Accel-Sim's Kepler TITAN, RTX 3070 and A100 configurations: a DRAM
/// bank bit at bit 7, so the two 128-byte halves of a 256-byte chunk go to different slices.
const AMPERE_ADDRESS_MAP: &str =
    "dramid@8;00000000.00000000.00000000.00000000.0000RRRR.RRRRRRRR.RBBBCCCC.BCCSSSSS";

/// Accel-Sim's QV100 L2: 32 channels of 2 slices of 32 sets x 24 ways (96 KB; 6 MB in all),
/// IPOLY set index and slices.
fn volta_l2() -> L2Config {
    L2Config {
        channels: 32,
        slices_per_channel: 2,
        slice_hash: SliceHash::Ipoly,
        address_map: VOLTA_ADDRESS_MAP.into(),
        slice: slice_cache(32, 24, SetIndex::Ipoly),
    }
}

/// Accel-Sim's A100 L2: 40 channels of 4 slices of 128 sets x 16 ways (256 KB; 40 MB in
/// all), XOR set index, linear slices (40 channels: the channel is a remainder).
fn a100_l2() -> L2Config {
    L2Config {
        channels: 40,
        slices_per_channel: 4,
        slice_hash: SliceHash::Linear,
        address_map: AMPERE_ADDRESS_MAP.into(),
        slice: slice_cache(128, 16, SetIndex::Xor),
    }
}

/// Accel-Sim's H100 L2: 80 channels of 2 slices of 64 sets x 40 ways (320 KB; 50 MB in all),
/// IPOLY set index and slices.
fn h100_l2() -> L2Config {
    L2Config {
        channels: 80,
        slices_per_channel: 2,
        slice_hash: SliceHash::Ipoly,
        address_map: VOLTA_ADDRESS_MAP.into(),
        slice: slice_cache(64, 40, SetIndex::Ipoly),
    }
}

/// The reproduction modes (`--compat NAME`).
pub const COMPAT_MODES: [&str; 1] = ["gpu-cache-model"];

/// Switches `c` to an exact reproduction of another tool. `gpu-cache-model`: the released
/// model of Nugteren et al. (2014) with every rule of [`TimingRules::released`] and its
/// fixed settings (one SM of at most 8 CTAs, 1536 threads and 48 warps, 32-thread warps,
/// the Fermi hash, LRU, hit latency 0, no clipping, no per-warp MSHR limit, every thread).
/// The cache size, line size, associativity, MSHRs and miss latency stay as configured
/// (its `current.conf`); with no timing section yet, they are its `default16.conf`.
pub fn compat(c: &mut SimConfig, name: &str) -> Result<(), Unknown> {
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
        _ => Err(Unknown::Compat {
            found: name.to_string(),
            expected: COMPAT_MODES.to_vec(),
        }),
    }
}
