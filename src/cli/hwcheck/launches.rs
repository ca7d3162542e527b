//! `warpscope hwcheck --ncu REPORT --trace TRACE`: a user's own kernels, their trace beside
//! Nsight Compute's raw CSV of the same launches, launch by launch (the core's
//! `hwcheck::check_trace`), as a table or one JSON object.

use anyhow::Result;
use std::io::Write;
use std::path::Path;
use warpscope::config::SimConfig;
use warpscope::hwcheck::{self, LaunchCheck, OpCounts};

use super::pair;
use crate::cli::args::HwcheckArgs;

pub fn run(a: &HwcheckArgs, report: &Path, trace: &Path, cfg: &SimConfig) -> Result<()> {
    let measured = read(report)?;
    let t = crate::cli::options::read_trace(trace, a.format.as_deref(), false)?;
    let checks = hwcheck::check_trace(&measured, &t, cfg)?;
    let v = || {
        serde_json::json!({
            "report": report.display().to_string(),
            "trace": trace.display().to_string(),
            "preset": a.config.preset,
            "launches": checks,
            "agree": checks.iter().all(LaunchCheck::counts_agree),
        })
    };
    let differ = checks.iter().filter(|c| !c.counts_agree()).count();
    let counts = (differ, checks.len(), "launches");
    super::print(a.json, v, |out| table(out, &checks), counts)
}

#[cfg(feature = "tables")]
fn read(report: &Path) -> Result<Vec<hwcheck::MeasuredLaunch>> {
    Ok(hwcheck::ncu::read(report)?)
}

#[cfg(not(feature = "tables"))]
fn read(_: &Path) -> Result<Vec<hwcheck::MeasuredLaunch>> {
    anyhow::bail!("this build reads no CSV (the `tables` feature is off)")
}

fn table(out: &mut dyn Write, checks: &[LaunchCheck]) -> Result<()> {
    let rate = |o: &OpCounts| o.hit_rate_pct().map_or("-".into(), |r| format!("{r:.1}"));
    for c in checks {
        let (m, s) = (&c.measured, &c.simulated);
        writeln!(
            out,
            "launch {}: {} (the report's {})",
            c.launch, c.kernel, c.measured_name
        )?;
        writeln!(out, "  {:<28} {:>24}", "", "measured / simulated")?;
        let rows = [
            ("load requests", pair(m.load.requests, s.load.requests)),
            ("load sectors", pair(m.load.sectors, s.load.sectors)),
            ("store requests", pair(m.store.requests, s.store.requests)),
            ("store sectors", pair(m.store.sectors, s.store.sectors)),
            (
                "load sector hit %",
                format!("{} / {}", rate(&m.load), rate(&s.load)),
            ),
            (
                "store sector hit %",
                format!("{} / {}", rate(&m.store), rate(&s.store)),
            ),
            (
                "L1 sectors read from the L2",
                match c.l1_fill_sectors.measured {
                    Some(v) => pair(v, c.l1_fill_sectors.simulated),
                    None => format!("- / {}", c.l1_fill_sectors.simulated),
                },
            ),
        ];
        for (what, v) in rows {
            writeln!(out, "  {what:<28} {v:>24}")?;
        }
        match &c.l2 {
            Some(l2) => {
                let pct = |h: u64, n: u64| {
                    if n == 0 {
                        "-".to_string()
                    } else {
                        format!("{:.1}", 100.0 * h as f64 / n as f64)
                    }
                };
                let sim = l2.simulated;
                let (sectors, hits) = match l2.measured {
                    Some(m) => (
                        pair(m.sectors, sim.sectors),
                        format!(
                            "{} / {}",
                            pct(m.sector_hits, m.sectors),
                            pct(sim.sector_hits, sim.sectors)
                        ),
                    ),
                    None => (
                        format!("- / {}", sim.sectors),
                        format!("- / {}", pct(sim.sector_hits, sim.sectors)),
                    ),
                };
                writeln!(out, "  {:<28} {sectors:>24}", "L2 sectors from the L1s")?;
                writeln!(out, "  {:<28} {hits:>24}", "L2 sector hit %")?;
            }
            None => writeln!(out, "  (no L2 simulated: the configuration has none)")?,
        }
    }
    let agree = checks.iter().filter(|c| c.counts_agree()).count();
    writeln!(
        out,
        "\n{agree} of {} launches have equal requests and sectors",
        checks.len()
    )?;
    if checks
        .iter()
        .any(|c| c.l2.is_some_and(|l| l.measured.is_none()))
    {
        writeln!(
            out,
            "the report has no L2 counters (lts__t_sectors_srcunit_tex, ..._lookup_hit): profile with them to compare the L2"
        )?;
    }
    Ok(())
}
