//! `sweep --plan DIR --shard K/N`: runs the points of shard K that have no row yet, grouped by
//! input (each input read once for all its points), writes each point's row as soon as its
//! input is done (`DIR/rows/ID.csv`, whole or not at all), then the shard's table
//! (`DIR/shards/shard-K-of-N.parquet`) from its points' rows. A shard killed and started
//! again runs only what it had not finished; a finished point is never run twice.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use warpscope::report::sweep as table;

use super::super::args::{ConfigArgs, SweepArgs};
use super::plan::{parse_input, row_frame, Plan, Point};
use super::Row;

/// `K/N`, K from 0 to N-1.
fn parse_shard(s: &str) -> Result<(usize, usize)> {
    let bad = || anyhow::anyhow!("--shard: expected K/N with 0 <= K < N, found `{s}`");
    let (k, n) = s.split_once('/').ok_or_else(bad)?;
    let (k, n): (usize, usize) = (
        k.trim().parse().map_err(|_| bad())?,
        n.trim().parse().map_err(|_| bad())?,
    );
    if n == 0 || k >= n {
        return Err(bad());
    }
    Ok((k, n))
}

pub fn row_path(dir: &Path, p: &Point) -> PathBuf {
    dir.join("rows").join(format!("{}.csv", p.id))
}

/// The shard table's name: `shard-K-of-N.EXT`.
pub fn shard_path(dir: &Path, k: usize, n: usize, ext: &str) -> PathBuf {
    dir.join("shards").join(format!("shard-{k}-of-{n}.{ext}"))
}

pub fn run(a: &SweepArgs) -> Result<()> {
    let (Some(dir), Some(spec)) = (&a.plan, &a.shard) else {
        bail!("--shard needs --plan DIR");
    };
    let own_input = a.input.trace.is_some()
        || a.input.kernel.is_some()
        || a.input.source.is_some()
        || !a.input.params.is_empty();
    let configured = format!("{:?}", a.config) != format!("{:?}", ConfigArgs::default());
    if !a.vary.is_empty() || !a.inputs.is_empty() || own_input || configured {
        bail!(
            "--shard runs the plan in --plan DIR as written (its inputs in plan.csv, its configuration in base.json): \
             give no input, configuration flag, --vary or --input with it"
        );
    }
    let ext = match a.shard_format.as_str() {
        "parquet" | "csv" => a.shard_format.as_str(),
        f => bail!("--shard-format: expected parquet or csv, found `{f}`"),
    };
    let (k, n) = parse_shard(spec)?;
    let plan = Plan::read(dir)?;
    // Every row of a plan has the L2's columns where any of its points simulates an L2.
    let all: Vec<Vec<(String, String)>> = plan.points.iter().map(|p| p.params.clone()).collect();
    let l2 = super::configs(&plan.base, &all)?
        .iter()
        .any(|c| c.l2_simulated());
    let mine = plan.shard(k, n);
    let rows = dir.join("rows");
    std::fs::create_dir_all(&rows).with_context(|| format!("creating {}", rows.display()))?;
    std::fs::create_dir_all(dir.join("shards"))?;
    let pending: Vec<&Point> = mine
        .iter()
        .copied()
        .filter(|p| !row_path(dir, p).exists())
        .collect();
    // Each input once, with all its pending points, in plan order.
    let mut groups: Vec<(&[String], Vec<&Point>)> = Vec::new();
    for p in &pending {
        match groups.iter_mut().find(|(i, _)| *i == p.input.as_slice()) {
            Some((_, v)) => v.push(p),
            None => groups.push((&p.input, vec![p])),
        }
    }
    for (input, points) in groups {
        let input = parse_input(input)?;
        let grid: Vec<Vec<(String, String)>> = points.iter().map(|p| p.params.clone()).collect();
        let configs = super::configs(&plan.base, &grid)?;
        let describe = |i: usize| super::describe(&grid[i]);
        let reports = super::simulate(&input, &configs, a.jobs.unwrap_or(0), &describe)?;
        for (p, r) in points.iter().zip(&reports) {
            let mut df = row_frame(p, &Row::new(r, &p.params), l2)?;
            table::write(&mut df, &row_path(dir, p))?;
        }
    }
    // The shard's table, from its points' rows.
    let mut frames = Vec::with_capacity(mine.len());
    for p in &mine {
        frames.push(table::read(&row_path(dir, p))?);
    }
    let out = shard_path(dir, k, n, ext);
    if frames.is_empty() {
        bail!(
            "shard {k} of {n} has no points (the plan has {})",
            plan.points.len()
        );
    }
    let mut df = table::concat(frames)?;
    table::write(&mut df, &out)?;
    eprintln!(
        "shard {k}/{n}: {} points ({} run now, {} done before) -> {}",
        mine.len(),
        pending.len(),
        mine.len() - pending.len(),
        out.display()
    );
    Ok(())
}
