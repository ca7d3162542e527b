//! `warpscope hwcheck CSV`: the counters measured on a GPU beside the simulation of the same
//! kernels (the core's `hwcheck`), as a table or one JSON object; with `--ncu REPORT --trace
//! TRACE`, a user's own kernels (`launches.rs`). Fails when a case's requests or sectors
//! differ.

use anyhow::{bail, Result};
use std::io::Write;
use warpscope::hwcheck::{self, CaseCheck, OpCounts};

use super::args::HwcheckArgs;

pub fn run(mut a: HwcheckArgs) -> Result<()> {
    if a.config.preset.is_none() && a.config.config.is_none() {
        a.config.preset = Some("hopper".into());
    }
    let cfg = hwcheck::for_check(super::options::config(&a.config)?);
    if let (Some(report), Some(trace)) = (&a.ncu, &a.trace) {
        return launches::run(&a, report, trace, &cfg);
    }
    let checks = check(&a, &cfg)?;
    let v = || {
        serde_json::json!({
            "csv": a.csv.as_ref().map(|p| p.display().to_string()),
            "preset": a.config.preset,
            "cases": checks,
            "agree": checks.iter().all(CaseCheck::counts_agree),
        })
    };
    let differ = checks.iter().filter(|c| !c.counts_agree()).count();
    let counts = (differ, checks.len(), "cases");
    print(a.json, v, |out| table(out, &checks), counts)
}

/// Prints the JSON of `v` (with `--json`) or the table, then fails when `differ` of `all`
/// cases or launches (`what`) differ in requests or sectors.
fn print(
    json: bool,
    v: impl FnOnce() -> serde_json::Value,
    table: impl FnOnce(&mut dyn Write) -> Result<()>,
    (differ, all, what): (usize, usize, &str),
) -> Result<()> {
    let mut out = super::output::stdout();
    if json {
        serde_json::to_writer_pretty(&mut out, &v())?;
        writeln!(out)?;
    } else {
        table(&mut out)?;
    }
    out.flush()?;
    if differ > 0 {
        bail!("{differ} of {all} {what} differ in requests or sectors");
    }
    Ok(())
}

#[cfg(feature = "tables")]
fn check(a: &HwcheckArgs, cfg: &warpscope::config::SimConfig) -> Result<Vec<CaseCheck>> {
    let Some(csv) = &a.csv else {
        bail!("give hw/run.sh's counters.csv, or --ncu REPORT --trace TRACE");
    };
    let measured = hwcheck::counters::read(csv)?;
    Ok(hwcheck::check(&measured, cfg)?)
}

#[cfg(not(feature = "tables"))]
fn check(_: &HwcheckArgs, _: &warpscope::config::SimConfig) -> Result<Vec<CaseCheck>> {
    bail!("this build reads no CSV (the `tables` feature is off)")
}

mod launches;

/// `m = s` or `m ≠ s`.
fn pair(m: u64, s: u64) -> String {
    if m == s {
        format!("{m} = {s}")
    } else {
        format!("{m} ≠ {s}")
    }
}

fn table(out: &mut dyn Write, checks: &[CaseCheck]) -> Result<()> {
    writeln!(
        out,
        "{:<44} {:>17} {:>19} {:>15} {:>17} {:>22} {:>22}",
        "case",
        "load requests",
        "load sectors",
        "store requests",
        "store sectors",
        "load hit % (diff)",
        "store hit % (diff)"
    )?;
    writeln!(
        out,
        "{:<44} {:>17} {:>19} {:>15} {:>17} {:>22} {:>22}",
        "",
        "measured / sim",
        "measured / sim",
        "measured / sim",
        "measured / sim",
        "measured / sim",
        "measured / sim"
    )?;
    let rate = |o: &OpCounts| o.hit_rate_pct().map_or("-".into(), |r| format!("{r:.1}"));
    for c in checks {
        let (m, s) = (&c.measured, &c.simulated);
        let diff = |d: Option<f64>| d.map_or(String::new(), |d| format!(" ({d:+.1})"));
        writeln!(
            out,
            "{:<44} {:>17} {:>19} {:>15} {:>17} {:>22} {:>22}",
            c.case,
            pair(m.load.requests, s.load.requests),
            pair(m.load.sectors, s.load.sectors),
            pair(m.store.requests, s.store.requests),
            pair(m.store.sectors, s.store.sectors),
            format!(
                "{} / {}{}",
                rate(&m.load),
                rate(&s.load),
                diff(c.load_hit_rate_difference())
            ),
            format!(
                "{} / {}{}",
                rate(&m.store),
                rate(&s.store),
                diff(c.store_hit_rate_difference())
            ),
        )?;
    }
    let agree = checks.iter().filter(|c| c.counts_agree()).count();
    let diffs: Vec<f64> = checks
        .iter()
        .filter_map(CaseCheck::load_hit_rate_difference)
        .collect();
    let mean_abs = diffs.iter().map(|d| d.abs()).sum::<f64>() / diffs.len().max(1) as f64;
    let stores: Vec<f64> = checks
        .iter()
        .filter_map(CaseCheck::store_hit_rate_difference)
        .collect();
    let stores_abs = stores.iter().map(|d| d.abs()).sum::<f64>() / stores.len().max(1) as f64;
    writeln!(
        out,
        "\n{agree} of {} cases have equal requests and sectors; sector hit rate, mean |sim - measured|: loads {mean_abs:.1} points, stores {stores_abs:.1} points",
        checks.len()
    )?;
    Ok(())
}
