//! Turns flags into a trace and a [`SimConfig`]. Flags and `sweep --vary` keys share one
//! setter ([`apply`]) so both accept exactly the same names and values.

use super::args::{ConfigArgs, InputArgs};
use anyhow::{bail, Context, Result};
use warpscope::config::{self, choice, ReuseMode, SimConfig, SmSelection, TimingConfig};
use warpscope::trace::{self, Format, Trace};

pub fn format(name: &str) -> Result<Format> {
    choice::parse::<Format>(name).map_err(anyhow::Error::msg)
}

/// Reads a trace file as the input flags say, telling stderr what was detected and, with
/// `--allow-truncated`, what was left out.
pub fn read_trace(
    path: &std::path::Path,
    format: Option<&str>,
    allow_truncated: bool,
) -> Result<Trace> {
    let opts = trace::ReadOptions {
        format: format.map(self::format).transpose()?,
        allow_truncated,
    };
    let loaded = trace::load(path, opts, &super::readahead::wrap)?;
    if loaded.detected {
        say_detected(path, loaded.format, loaded.compression);
    }
    if let Some(e) = &loaded.truncated {
        // The reader's error names the file.
        if loaded.trace.kernels.is_empty() {
            bail!("no complete kernel before the error: {e}");
        }
        eprintln!(
            "warning: {} is incomplete: loaded the {} complete kernel(s) before this error: {e}",
            path.display(),
            loaded.trace.kernels.len()
        );
    }
    Ok(loaded.trace)
}

/// Tells the user which format was detected (on stderr).
pub fn say_detected(
    path: &std::path::Path,
    format: trace::Format,
    compression: trace::source::Compression,
) {
    let compressed = match compression {
        trace::source::Compression::None => String::new(),
        c => format!(" ({} compressed)", c.name()),
    };
    eprintln!(
        "{}: detected format {}{compressed}",
        path.display(),
        format.name()
    );
}

/// The display name of the input: the file, or the kernel with its parameters.
pub fn source_name(a: &InputArgs) -> String {
    if let Some(path) = &a.source {
        let mut label = path.display().to_string();
        for p in &a.params {
            label.push(' ');
            label.push_str(p);
        }
        return label;
    }
    match (&a.trace, &a.kernel) {
        (Some(path), _) => path.display().to_string(),
        (None, Some(name)) => {
            let mut label = format!("kernel {name}");
            for p in &a.params {
                label.push(' ');
                label.push_str(p);
            }
            label
        }
        (None, None) => String::new(),
    }
}

/// Loads the trace named by the input flags; returns it and a display name.
pub fn load_trace(a: &InputArgs) -> Result<(Trace, String)> {
    if let Some(path) = &a.source {
        let (src, file) = read_source(path)?;
        let pairs = warpscope::gen::parse_pairs(&a.params).map_err(anyhow::Error::msg)?;
        let t = warpscope::gen::source::generate(&src, &file, &pairs, None)?;
        return Ok((t, source_name(a)));
    }
    match (&a.trace, &a.kernel) {
        (Some(path), None) => {
            if !a.params.is_empty() {
                bail!(
                    "key=value parameters only apply to --kernel, found `{}`",
                    a.params[0]
                );
            }
            let t = read_trace(path, a.format.as_deref(), a.allow_truncated)?;
            Ok((t, path.display().to_string()))
        }
        (None, Some(name)) => {
            let pairs = warpscope::gen::parse_pairs(&a.params).map_err(anyhow::Error::msg)?;
            let t = warpscope::gen::generate(name, &pairs)?;
            Ok((t, source_name(a)))
        }
        _ => bail!("give a trace (--trace FILE) or a built-in kernel (--kernel NAME)"),
    }
}

/// A kernel-language file's text and the name its errors give it.
pub fn read_source(path: &std::path::Path) -> Result<(String, String)> {
    let src = std::fs::read_to_string(path)
        .with_context(|| format!("reading the kernel source {}", path.display()))?;
    Ok((src, path.display().to_string()))
}

pub use warpscope::config::keys::apply;

/// Builds the configuration: preset (or file, or defaults), then every flag given.
pub fn config(a: &ConfigArgs) -> Result<SimConfig> {
    let mut c = match (&a.preset, &a.config) {
        (Some(_), Some(_)) => bail!("give either --preset or --config, not both"),
        (Some(p), None) => config::preset(p)?,
        // Validated below, once the flags have been applied.
        (None, Some(path)) => config::file::read(path)?,
        (None, None) => SimConfig::default(),
    };
    if let Some(path) = &a.accelsim_config {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading the Accel-Sim configuration {}", path.display()))?;
        for note in config::accelsim::read(&text, &path.display().to_string(), &mut c)? {
            eprintln!("{}: {note}", path.display());
        }
    }
    if a.timing && c.timing.is_none() {
        c.timing = Some(TimingConfig::default());
    }
    if let Some(mode) = &a.compat {
        apply(&mut c, "compat", mode).map_err(|e| anyhow::anyhow!("--compat: {e}"))?;
    }
    let flags: [(&str, &Option<String>); 30] = [
        ("cache-size", &a.cache_size),
        ("line-size", &a.line_size),
        ("ways", &a.ways),
        ("sector-size", &a.sector_size),
        ("replacement", &a.replacement),
        ("write-policy", &a.write_policy),
        ("set-index", &a.set_index),
        ("l1-bypass", &a.l1_bypass),
        ("coalescing", &a.coalescing),
        ("schedule", &a.schedule),
        ("warp-size", &a.warp_size),
        ("fetch-group", &a.fetch_group),
        ("sms", &a.sms),
        ("sm", &a.sm),
        ("sample-sms", &a.sample_sms),
        ("max-ctas", &a.max_ctas),
        ("max-threads", &a.max_threads),
        ("max-warps", &a.max_warps),
        ("thread-limit", &a.thread_limit),
        ("seed", &a.seed),
        ("reuse", &a.reuse),
        ("hit-latency", &a.hit_latency),
        ("miss-latency", &a.miss_latency),
        ("l2-latency", &a.l2_latency),
        ("miss-latency-stddev", &a.miss_latency_stddev),
        ("mshrs", &a.mshrs),
        ("mshrs-per-warp", &a.mshrs_per_warp),
        ("clip", &a.clip),
        ("warp-delay", &a.warp_delay),
        ("classify", &a.classify),
    ];
    for (key, value) in flags {
        if let Some(v) = value {
            apply(&mut c, key, v).map_err(|e| anyhow::anyhow!("--{key}: {e}"))?;
        }
    }
    for r in &a.rule {
        apply(&mut c, "rule", r).map_err(|e| anyhow::anyhow!("--rule: {e}"))?;
    }
    for v in &a.l2 {
        apply(&mut c, "l2", v).map_err(|e| anyhow::anyhow!("--l2: {e}"))?;
    }
    if a.all_sms {
        c.gpu.simulate = SmSelection::All;
    }
    if a.no_reuse {
        c.reuse = ReuseMode::Off;
    }
    c.validate().map_err(|e| match &a.config {
        Some(path) => anyhow::anyhow!(
            "invalid configuration ({} with the flags given): {e}",
            path.display()
        ),
        None => anyhow::anyhow!("invalid configuration: {e}"),
    })?;
    Ok(c)
}
