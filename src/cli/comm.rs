//! `warpscope comm`: the communication analysis of a trace, as tables or one JSON object.

use anyhow::{bail, Context, Result};
use serde_json::json;
use std::io::Write;
use warpscope::comm::{self, CommReport};

use super::args::{CommArgs, InputArgs};

pub fn run(a: CommArgs) -> Result<()> {
    let input = match (&a.kernel, a.args.as_slice()) {
        (Some(k), params) => InputArgs {
            trace: None,
            format: None,
            allow_truncated: false,
            kernel: Some(k.clone()),
            source: None,
            params: params.to_vec(),
        },
        (None, [path]) => InputArgs {
            trace: Some(path.into()),
            format: a.format.clone(),
            allow_truncated: a.allow_truncated,
            kernel: None,
            source: None,
            params: Vec::new(),
        },
        (None, []) => bail!("give a trace file or a built-in kernel (--kernel NAME)"),
        (None, [_, extra, ..]) => bail!("one trace at a time; unexpected `{extra}`"),
    };
    let (trace, source) = super::options::load_trace(&input)?;
    let mut progress = super::output::Progress::named(trace.total_accesses() as u64, "analyzing");
    let report = comm::analyze(&trace, &mut |done, total| {
        progress.show(done, total);
        true
    });
    progress.clear();
    let report = report.with_context(|| format!("analyzing {source}"))?;
    let mut out = super::output::stdout();
    if a.json {
        serde_json::to_writer_pretty(&mut out, &to_json(&source, &report))?;
        writeln!(out)?;
    } else {
        table(&mut out, &source, &report, a.top)?;
    }
    out.flush()?;
    Ok(())
}

/// The JSON object (documented in docs/communication.md).
fn to_json(source: &str, r: &CommReport) -> serde_json::Value {
    let dims = ["x", "y", "z"];
    let bisection: serde_json::Map<String, serde_json::Value> = dims
        .iter()
        .zip(&r.bisection)
        .map(|(d, b)| (d.to_string(), serde_json::to_value(b).unwrap_or_default()))
        .collect();
    json!({
        "source": source,
        "launches": r.per_launch.len(),
        "ctas": r.ctas,
        "write_bytes": r.write_bytes,
        "read_bytes": r.read_bytes,
        "communicated_bytes": r.communicated_bytes,
        "communicated_write_bytes": r.communicated_write_bytes,
        "communication_fraction": r.communication_fraction,
        "shared_bytes": r.shared_bytes,
        "pairs": r.pairs,
        "in_degree": r.in_degree,
        "out_degree": r.out_degree,
        "bisection": bisection,
        "distance": r.distance,
        "transfer_cdf": r.transfer_cdf(None),
        "transfers": r.transfers.iter().map(|t| [
            u64::from(t.writer_launch),
            u64::from(t.reader_launch),
            u64::from(t.writer_cta),
            u64::from(t.reader_cta),
            t.bytes,
        ]).collect::<Vec<_>>(),
        "load_strides": r.load_strides,
        "store_strides": r.store_strides,
        "stride_count_error": {"loads": r.stride_count_error[0], "stores": r.stride_count_error[1]},
        "per_launch": r.per_launch,
    })
}

fn pct(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        100.0 * a as f64 / b as f64
    }
}

/// The communication report as text: the summary, the bisection, each launch, the
/// superstep distances and the largest CTA pairs (`top` of them) with degrees and strides.
fn table(out: &mut impl Write, source: &str, r: &CommReport, top: usize) -> Result<()> {
    summary(out, source, r)?;
    bisection(out, r)?;
    launches(out, r)?;
    distances(out, r)?;
    pairs(out, r, top)
}

/// What was read, written and communicated, in all.
fn summary(out: &mut impl Write, source: &str, r: &CommReport) -> Result<()> {
    writeln!(out, "communication of {source}")?;
    writeln!(
        out,
        "  {} launches, up to {} CTAs; loads {} B, stores {} B",
        r.per_launch.len(),
        r.ctas,
        r.read_bytes,
        r.write_bytes
    )?;
    writeln!(
        out,
        "  communicated: {} B read across launches; {} B of the writes ({:.1}%) are read by a later launch",
        r.communicated_bytes,
        r.communicated_write_bytes,
        100.0 * r.communication_fraction
    )?;
    writeln!(
        out,
        "  intra-launch sharing (not reliable communication): {} B",
        r.shared_bytes
    )?;
    if r.per_launch.len() < 2 {
        writeln!(
            out,
            "  (one launch: communication needs a later launch reading what an earlier one wrote)"
        )?;
    }
    writeln!(
        out,
        "  {} transfers between {} CTA pairs",
        r.transfers.len(),
        r.pairs.len()
    )?;
    Ok(())
}

/// The bytes a cut of the CTA grid into halves would carry, along each axis.
fn bisection(out: &mut impl Write, r: &CommReport) -> Result<()> {
    writeln!(out)?;
    writeln!(out, "bisection (cut of the CTA grid into halves)")?;
    for (d, b) in ["x", "y", "z"].iter().zip(&r.bisection) {
        if b.cuttable {
            writeln!(
                out,
                "  {d}: {} B ({:.1}% of communicated)",
                b.bytes,
                100.0 * b.relative
            )?;
        } else {
            writeln!(out, "  {d}: one CTA wide, no cut")?;
        }
    }
    Ok(())
}

/// One row per launch.
fn launches(out: &mut impl Write, r: &CommReport) -> Result<()> {
    writeln!(out)?;
    writeln!(
        out,
        "{:>6} {:<24} {:>10} {:>12} {:>12} {:>12} {:>12} {:>10} {:>12}",
        "launch",
        "kernel",
        "CTAs",
        "loads B",
        "stores B",
        "comm in B",
        "comm out B",
        "shared B",
        "out-degree"
    )?;
    for (i, l) in r.per_launch.iter().enumerate() {
        writeln!(
            out,
            "{:>6} {:<24} {:>10} {:>12} {:>12} {:>12} {:>12} {:>10} {:>6.2}+-{:<5.2}",
            i,
            l.name.chars().take(24).collect::<String>(),
            l.grid.count(),
            l.read_bytes,
            l.write_bytes,
            l.communicated_read_bytes,
            l.communicated_write_bytes,
            l.shared_bytes,
            l.out_degree_mean,
            l.out_degree_std
        )?;
    }
    Ok(())
}

/// The superstep distances of the communicated bytes.
fn distances(out: &mut impl Write, r: &CommReport) -> Result<()> {
    if !r.distance.is_empty() {
        writeln!(out)?;
        writeln!(
            out,
            "superstep distance (launches between write and read, minus one)"
        )?;
        for (d, b) in r.distance.iter().enumerate().filter(|(_, b)| **b > 0) {
            writeln!(
                out,
                "  {d:>4}: {b} B ({:.1}%)",
                pct(*b, r.communicated_bytes)
            )?;
        }
    }
    Ok(())
}

/// The largest CTA pairs, the degrees and the commonest strides.
fn pairs(out: &mut impl Write, r: &CommReport, top: usize) -> Result<()> {
    if !r.pairs.is_empty() {
        let mut pairs = r.pairs.clone();
        pairs.sort_by(|a, b| b.2.cmp(&a.2).then((a.0, a.1).cmp(&(b.0, b.1))));
        writeln!(out)?;
        writeln!(
            out,
            "largest CTA pairs (of {}; all launches)  writer -> reader: bytes",
            pairs.len()
        )?;
        for p in pairs.iter().take(top) {
            writeln!(out, "  {:>8} -> {:<8} {:>12}", p.0, p.1, p.2)?;
        }
        let degree = |v: &[u32]| {
            let max = v.iter().max().copied().unwrap_or(0);
            let mean = v.iter().map(|&d| f64::from(d)).sum::<f64>() / v.len().max(1) as f64;
            format!("mean {mean:.2}, max {max}")
        };
        writeln!(out)?;
        writeln!(
            out,
            "in-degree (writer CTAs per reader): {}",
            degree(&r.in_degree)
        )?;
        writeln!(
            out,
            "out-degree (reader CTAs per writer): {}",
            degree(&r.out_degree)
        )?;
        for (what, s) in [("loads", &r.load_strides), ("stores", &r.store_strides)] {
            let shown: Vec<String> = s
                .iter()
                .take(5)
                .map(|(st, n)| format!("{st} B x{n}"))
                .collect();
            writeln!(out, "commonest {what} strides: {}", shown.join(", "))?;
        }
        if r.stride_count_error != [0, 0] {
            writeln!(
                out,
                "(more than {} distinct strides: counts may be over by up to {} for loads, {} for stores)",
                comm::STRIDE_SLOTS,
                r.stride_count_error[0],
                r.stride_count_error[1]
            )?;
        }
    }
    Ok(())
}
