//! Named configurations of real GPUs and papers' settings, and the released model's compatibility mode.

use super::*;

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
        description: "Hopper H100 L1, 224 KB (measured at the default carve-out), 128 B lines with 32 B sectors",
    },
];

/// The configuration of a named preset.
pub fn preset(name: &str) -> Result<SimConfig, Unknown> {
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
        "hopper" => sectored(&mut c, 224, 132),
        _ => {
            return Err(Unknown::Preset {
                found: name.to_string(),
                expected: PRESETS.iter().map(|p| p.name).collect(),
            });
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
