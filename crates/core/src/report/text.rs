//! The readable report: what the CLI prints without `--json`, and what the app writes for a
//! `.txt` export. Totals, timing, per SM, per instruction, per source line, the L2 (`text_l2.rs`), reuse distances
//! and the miss-rate curve, in fixed-width columns.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::export::{write_whole, ExportError, Exporter};
use super::{short_name, Report};
use crate::cache::Counters;

/// `a` of `b` as a percentage with two decimals (`-` of nothing).
/// `32 KB`, `1 MB`, or `512 B` where it is not a whole number of kilobytes.
pub(crate) fn size_words(n: u64) -> String {
    match n {
        n if n >= 1 << 20 && n % (1 << 20) == 0 => format!("{} MB", n >> 20),
        n if n >= 1024 && n % 1024 == 0 => format!("{} KB", n >> 10),
        n => format!("{n} B"),
    }
}

pub(super) fn pct(a: u64, b: u64) -> String {
    if b == 0 {
        "-".into()
    } else {
        format!("{:.2}%", 100.0 * a as f64 / b as f64)
    }
}

fn counters_block(w: &mut dyn Write, c: &Counters, timing: bool) -> std::io::Result<()> {
    writeln!(w, "  accesses          {:>12}", c.accesses)?;
    writeln!(
        w,
        "  requests          {:>12}   transactions {}",
        c.requests, c.transactions
    )?;
    writeln!(w, "  reads / writes    {:>12} / {}", c.reads, c.writes)?;
    writeln!(w, "  hits              {:>12}", c.hits)?;
    writeln!(
        w,
        "  misses            {:>12}   miss rate {}",
        c.misses,
        pct(c.misses, c.requests)
    )?;
    writeln!(
        w,
        "    read / write    {:>12} / {}",
        c.read_misses, c.write_misses
    )?;
    let m = &c.miss_classes;
    let mut classes = vec![
        ("compulsory", m.compulsory),
        ("capacity", m.capacity),
        ("conflict", m.conflict),
    ];
    if timing {
        classes.extend([("latency", m.latency), ("mshr", m.mshr)]);
    }
    for (name, n) in classes {
        writeln!(w, "    {name:<15} {n:>12}   {}", pct(n, c.misses))?;
    }
    writeln!(w, "  writebacks        {:>12}", c.writebacks)?;
    writeln!(
        w,
        "  bytes from / to memory  {} / {}",
        c.bytes_from_memory, c.bytes_to_memory
    )?;
    if c.flush_writebacks > 0 {
        writeln!(
            w,
            "    of which the final flush of {} dirty lines: {} bytes",
            c.flush_writebacks, c.flush_bytes_to_memory
        )?;
    }
    Ok(())
}

fn limit(v: u32) -> String {
    if v == 0 {
        "unlimited".into()
    } else {
        v.to_string()
    }
}

fn on(b: bool) -> &'static str {
    if b {
        "on"
    } else {
        "off"
    }
}

/// Writes the readable report of a run of the trace named `source`: the configuration and
/// kernels, the totals, the timing model's figures, then per SM, per instruction, per source
/// line, the CTAs and the reuse distances.
pub fn write(w: &mut dyn Write, source: &str, r: &Report) -> std::io::Result<()> {
    configuration(w, source, r)?;
    writeln!(w, "\ntotals")?;
    counters_block(w, &r.totals, r.config.timing.is_some())?;
    timing(w, r)?;
    per_sm(w, r)?;
    per_instruction(w, r)?;
    per_source_line(w, r)?;
    super::text_l2::write(w, r)?;
    writeln!(
        w,
        "\nCTAs with requests on the simulated SM(s): {}",
        r.ctas.len()
    )?;
    reuse(w, r)
}

/// The trace, the cache, the schedule, the kernels and the timing model's settings.
fn configuration(w: &mut dyn Write, source: &str, r: &Report) -> std::io::Result<()> {
    let c = &r.config;
    let ways = if c.cache.ways == 0 {
        "full".to_string()
    } else {
        format!("{}-way", c.cache.ways)
    };
    writeln!(w, "Warpscope: {source}")?;
    writeln!(
        w,
        "cache {} B, {ways}, {} B lines, {} B sectors, {} sets ({}), {}, {}; coalescing {}",
        c.cache.size_bytes,
        c.cache.line_bytes,
        c.cache.sector_bytes,
        c.cache.sets(),
        c.cache.set_index.name(),
        c.cache.replacement.name(),
        c.cache.write_policy.name(),
        c.coalescing.name()
    )?;
    if c.cache.bypass {
        writeln!(
            w,
            "L1 bypassed (l1-bypass on): global loads and stores skip it, every request is a miss that allocates nothing"
        )?;
    }
    let policy = if c.timing.is_some() {
        "FIFO warp queue (timing model)"
    } else {
        c.schedule.policy.name()
    };
    writeln!(
        w,
        "schedule {} (warp size {}), {} SMs, simulated SM(s) {:?}",
        policy, c.schedule.warp_size, c.gpu.sms, r.simulated_sms
    )?;
    for k in &r.kernels {
        writeln!(
            w,
            "kernel {} grid {} block {}: {} rows, {} warp instructions",
            k.name, k.grid, k.block, k.rows, k.warp_instructions
        )?;
    }
    if let Some(t) = &c.timing {
        let l2 = if c.l2_simulated() {
            format!(" (an L2 hit {})", t.l2_latency)
        } else {
            String::new()
        };
        writeln!(
            w,
            "timing: hit latency {}, miss latency {}{l2} + |N(0, {}^2)|, MSHRs {} (per warp {}), clip {}, warp delay {}",
            t.hit_latency,
            t.miss_latency,
            t.miss_latency_stddev,
            limit(t.mshrs),
            limit(t.mshrs_per_warp),
            on(t.clip),
            on(t.warp_delay)
        )?;
    }
    Ok(())
}

/// The timing model's figures, if it ran.
fn timing(w: &mut dyn Write, r: &Report) -> std::io::Result<()> {
    if let Some(t) = &r.timing {
        writeln!(w, "\ntiming")?;
        writeln!(
            w,
            "  time steps        {:>12}   idle {}",
            t.time_steps, t.idle_steps
        )?;
        writeln!(
            w,
            "  MSHR stalls       {:>12}   (cancelled issues)",
            t.mshr_stalls
        )?;
        writeln!(w, "  lines fetched     {:>12}", t.fills)?;
        writeln!(
            w,
            "  duplicate loads   {:>12}   (misses on a line in flight for another warp)",
            t.duplicate_loads
        )?;
        writeln!(w, "  mean latency      {:>12.2}", t.mean_latency)?;
        let busiest = t.mshr_occupancy.iter().map(|s| s.used).max().unwrap_or(0);
        writeln!(w, "  peak MSHRs in use {:>12}", busiest)?;
    }
    Ok(())
}

/// Requests and misses per simulated SM, when there are several.
fn per_sm(w: &mut dyn Write, r: &Report) -> std::io::Result<()> {
    if r.sms.len() > 1 {
        writeln!(w, "\nper SM")?;
        for s in &r.sms {
            writeln!(
                w,
                "  SM {:>3}: {:>10} requests {:>10} misses  {}",
                s.sm,
                s.counters.requests,
                s.counters.misses,
                pct(s.counters.misses, s.counters.requests)
            )?;
        }
    }
    Ok(())
}

/// Requests, misses and miss classes per instruction.
fn per_instruction(w: &mut dyn Write, r: &Report) -> std::io::Result<()> {
    writeln!(w, "\nper instruction")?;
    writeln!(
        w,
        "  {:<16} {:>10} {:>10} {:>9} {:>10} {:>10} {:>10}",
        "instruction", "requests", "misses", "rate", "compuls.", "capacity", "conflict"
    )?;
    for i in &r.instructions {
        let m = &i.counters.miss_classes;
        writeln!(
            w,
            "  {:<16} {:>10} {:>10} {:>9} {:>10} {:>10} {:>10}",
            i.name,
            i.counters.requests,
            i.counters.misses,
            pct(i.counters.misses, i.counters.requests),
            m.compulsory,
            m.capacity,
            m.conflict
        )?;
    }
    Ok(())
}

/// Requests and misses per source line, where the trace has line info.
fn per_source_line(w: &mut dyn Write, r: &Report) -> std::io::Result<()> {
    if !r.source_lines.is_empty() {
        writeln!(w, "\nper source line (the trace's line info)")?;
        writeln!(
            w,
            "  {:<24} {:>6} {:>10} {:>10} {:>9}  instructions",
            "kernel", "line", "requests", "misses", "rate"
        )?;
        for l in &r.source_lines {
            writeln!(
                w,
                "  {:<24} {:>6} {:>10} {:>10} {:>9}  {}",
                short_name(&l.kernel_name, 24),
                l.line,
                l.counters.requests,
                l.counters.misses,
                pct(l.counters.misses, l.counters.requests),
                l.instructions.join(" ")
            )?;
        }
    }
    Ok(())
}

/// The reuse-distance histogram and the miss-rate curve, if measured.
fn reuse(w: &mut dyn Write, r: &Report) -> std::io::Result<()> {
    if let Some(reuse) = &r.reuse {
        writeln!(
            w,
            "\nreuse distance (distinct lines between uses; {} first uses, {} distinct lines)",
            reuse.infinite, reuse.distinct_lines
        )?;
        if reuse.method == super::ReuseMethod::Sampled {
            writeln!(
                w,
                "  sampled (SHARDS): 1 line in {:.0} past the most recent ones, whose distances \
                 are exact; expected error of the miss-rate curve {:.2} points (--reuse exact \
                 for every distance)",
                1.0 / reuse.sampling_rate,
                100.0 * reuse.expected_error
            )?;
        }
        for b in &reuse.histogram {
            writeln!(w, "  [{:>7}, {:>7})  {:>10}", b.lo, b.hi, b.count)?;
        }
        writeln!(w, "miss-rate curve of a fully associative LRU cache")?;
        for p in &reuse.miss_rate_curve {
            writeln!(w, "  {:>8} lines  {:>6.2}%", p.lines, 100.0 * p.miss_rate)?;
        }
    }
    Ok(())
}

/// The `.txt` exporter.
pub struct Text;

impl Exporter for Text {
    fn name(&self) -> &'static str {
        "text"
    }
    fn description(&self) -> &'static str {
        "the readable report, as `sim` prints it"
    }
    fn extensions(&self) -> &'static [&'static str] {
        &["txt"]
    }
    fn export(
        &self,
        report: &Report,
        source: &str,
        path: &Path,
    ) -> Result<Vec<PathBuf>, ExportError> {
        Ok(vec![write_whole(path, |w| write(w, source, report))?])
    }
}
