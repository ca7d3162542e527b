//! Configuration keys as `key=value` (the CLI's flag names without `--`): one place that
//! sets a key, shared by the CLI's flags and `sweep --vary`, and the lessons' settings.

use super::{choice, SimConfig, SmSelection, TimingConfig};
use crate::config;

/// Parses `16K`, `48k`, `1M` or a plain number of bytes.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, mult) = match t.chars().last() {
        Some('k' | 'K') => (&t[..t.len() - 1], 1024),
        Some('m' | 'M') => (&t[..t.len() - 1], 1024 * 1024),
        _ => (t, 1),
    };
    num.parse::<u64>()
        .map(|v| v * mult)
        .map_err(|_| format!("expected a size like 16K or 4096, found `{s}`"))
}

fn number(key: &str, v: &str) -> Result<u32, String> {
    v.parse::<u32>()
        .map_err(|_| format!("{key}: expected a whole number, found `{v}`"))
}

fn on_off(key: &str, v: &str) -> Result<bool, String> {
    match v {
        "on" | "true" | "yes" => Ok(true),
        "off" | "false" | "no" => Ok(false),
        _ => Err(format!("{key}: expected on or off, found `{v}`")),
    }
}

/// The timing section, switched on with its defaults if it was off.
fn timing(c: &mut SimConfig) -> &mut TimingConfig {
    c.timing.get_or_insert_with(TimingConfig::default)
}

/// Sets one configuration key (flag name without `--`).
pub fn apply(c: &mut SimConfig, key: &str, v: &str) -> Result<(), String> {
    match key {
        "cache-size" => c.cache.size_bytes = parse_size(v)?,
        "line-size" => {
            let old = c.cache.line_bytes;
            c.cache.line_bytes = parse_size(v)? as u32;
            // An unsectored cache stays unsectored when the line size changes.
            if c.cache.sector_bytes == old || c.cache.sector_bytes > c.cache.line_bytes {
                c.cache.sector_bytes = c.cache.line_bytes;
            }
        }
        "ways" => c.cache.ways = if v == "full" { 0 } else { number(key, v)? },
        "sector-size" => c.cache.sector_bytes = parse_size(v)? as u32,
        "replacement" => c.cache.replacement = choice::parse(v)?,
        "write-policy" => c.cache.write_policy = choice::parse(v)?,
        "set-index" => c.cache.set_index = choice::parse(v)?,
        "l1-bypass" => c.cache.bypass = on_off(key, v)?,
        "coalescing" => c.coalescing = choice::parse(v)?,
        "schedule" => c.schedule.policy = choice::parse(v)?,
        "reuse" => c.reuse = choice::parse(v)?,
        "warp-size" => c.schedule.warp_size = number(key, v)?,
        "fetch-group" => c.schedule.fetch_group = number(key, v)?,
        "sms" => c.gpu.sms = number(key, v)?,
        "sm" => c.gpu.simulate = SmSelection::One(number(key, v)?),
        "sample-sms" => c.gpu.simulate = SmSelection::Sample(number(key, v)?),
        "max-ctas" => c.gpu.max_ctas_per_sm = number(key, v)?,
        "max-threads" => c.gpu.max_threads_per_sm = number(key, v)?,
        "max-warps" => c.gpu.max_warps_per_sm = number(key, v)?,
        "thread-limit" => c.gpu.thread_limit = number(key, v)?,
        "compat" => config::compat(c, v)?,
        "seed" => {
            c.seed = v
                .parse()
                .map_err(|_| format!("seed: expected a number, found `{v}`"))?
        }
        "preset" => *c = config::preset(v)?,
        "timing" => c.timing = on_off(key, v)?.then(TimingConfig::default),
        "hit-latency" => timing(c).hit_latency = number(key, v)?,
        "miss-latency" => timing(c).miss_latency = number(key, v)?,
        "l2-latency" => timing(c).l2_latency = number(key, v)?,
        "miss-latency-stddev" => {
            timing(c).miss_latency_stddev = v
                .parse::<f64>()
                .ok()
                .filter(|s| s.is_finite() && *s >= 0.0)
                .ok_or_else(|| format!("{key}: expected a number >= 0, found `{v}`"))?
        }
        "mshrs" => timing(c).mshrs = number(key, v)?,
        "mshrs-per-warp" => timing(c).mshrs_per_warp = number(key, v)?,
        "clip" => timing(c).clip = on_off(key, v)?,
        "warp-delay" => timing(c).warp_delay = on_off(key, v)?,
        "classify" => timing(c).classify = on_off(key, v)?,
        "rule" => {
            let (k, v) = v
                .split_once('=')
                .ok_or_else(|| format!("rule: expected KEY=VALUE, found `{v}`"))?;
            timing(c).rules.set(k, v)?
        }
        "l2" => match v {
            "off" | "none" => c.l2 = None,
            "on" => {
                c.l2.get_or_insert_with(config::L2Config::default);
            }
            _ => {
                let (k, v) = v
                    .split_once('=')
                    .ok_or_else(|| format!("l2: expected on, off or KEY=VALUE, found `{v}`"))?;
                c.l2.get_or_insert_with(config::L2Config::default)
                    .set(k, v)?
            }
        },
        _ => match (key.strip_prefix("rule."), key.strip_prefix("l2.")) {
            (Some(rule), _) => timing(c).rules.set(rule, v)?,
            (_, Some(k)) => {
                c.l2.get_or_insert_with(config::L2Config::default)
                    .set(k, v)?
            }
            _ => return Err(format!("unknown parameter `{key}`")),
        },
    }
    Ok(())
}
