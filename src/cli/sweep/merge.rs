//! `sweep merge DIR -o FILE`: reads every shard table of the sweep in DIR (a truncated or
//! damaged one is an error naming it), checks that each point of the plan is there exactly
//! once (naming the missing points, with the shard to run again, and the repeated ones), and
//! writes them as one table in plan order through polars; `--print` also prints the table
//! `sweep` prints.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use polars::prelude::*;
use rustc_hash::FxHashMap;
use warpscope::report::sweep::{self as table, METRICS};

use super::super::args::MergeArgs;
use super::plan::Plan;
use super::Row;

/// At most this many ids are named in an error.
const NAMED: usize = 12;

fn named(ids: &[String]) -> String {
    let mut s = ids
        .iter()
        .take(NAMED)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if ids.len() > NAMED {
        s.push_str(&format!(" and {} more", ids.len() - NAMED));
    }
    s
}

pub fn run(m: &MergeArgs) -> Result<()> {
    let plan = Plan::read(&m.dir)?;
    let shards = m.dir.join("shards");
    let files = shard_files(&shards)?;
    // The shard count, from the files' names, to say which shard a missing point is in.
    let count = files.iter().find_map(|f| {
        let stem = f.file_stem()?.to_str()?;
        stem.rsplit_once("-of-")?.1.parse::<usize>().ok()
    });
    let mut frames = Vec::with_capacity(files.len());
    for f in &files {
        frames.push(table::read(f)?);
    }
    let order: FxHashMap<&str, usize> = plan
        .points
        .iter()
        .enumerate()
        .map(|(i, p)| (p.id.as_str(), i))
        .collect();
    each_point_once(&plan, m, &files, &frames, &order, count)?;
    let merged = table::concat(frames)?;
    let mut merged = in_plan_order(&merged, &order)?;
    table::write(&mut merged, &m.output)?;
    eprintln!(
        "merged {} points from {} shard tables into {}",
        merged.height(),
        files.len(),
        m.output.display()
    );
    if m.print {
        print!("{}", summary(&plan, &merged)?);
    }
    Ok(())
}

/// The shard tables in `shards`, by name; none is an error.
fn shard_files(shards: &Path) -> Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(shards)
        .with_context(|| {
            format!(
                "{}: no shard tables (run the shards first)",
                shards.display()
            )
        })?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "parquet" || e == "csv"))
        .collect();
    files.sort();
    if files.is_empty() {
        bail!(
            "{}: no shard tables (run the shards first)",
            shards.display()
        );
    }
    Ok(files)
}

/// Every point of the plan has exactly one row among the shard tables, and every row is a
/// point of the plan; the error names the points (and, with `count` shards, their shard).
fn each_point_once(
    plan: &Plan,
    m: &MergeArgs,
    files: &[PathBuf],
    frames: &[DataFrame],
    order: &FxHashMap<&str, usize>,
    count: Option<usize>,
) -> Result<()> {
    let shards = m.dir.join("shards");
    let mut seen = vec![0u32; plan.points.len()];
    for (f, df) in files.iter().zip(frames) {
        let ids = df.column("id")?.as_materialized_series().clone();
        for id in ids.str()?.iter().flatten() {
            match order.get(id) {
                Some(&i) => seen[i] += 1,
                None => bail!(
                    "{}: point {id} is not in the plan {}",
                    f.display(),
                    Plan::table_path(&m.dir).display()
                ),
            }
        }
    }
    let repeated: Vec<String> = plan
        .points
        .iter()
        .zip(&seen)
        .filter(|(_, &n)| n > 1)
        .map(|(p, _)| p.id.clone())
        .collect();
    if !repeated.is_empty() {
        bail!(
            "{} points are in more than one shard table (shards of two different counts in {}?): {}",
            repeated.len(),
            shards.display(),
            named(&repeated)
        );
    }
    let missing: Vec<String> = plan
        .points
        .iter()
        .zip(&seen)
        .enumerate()
        .filter(|(_, (_, &n))| n == 0)
        .map(|(i, (p, _))| match count {
            Some(n) => format!("{} (shard {} of {n})", p.id, i % n),
            None => p.id.clone(),
        })
        .collect();
    if !missing.is_empty() {
        bail!(
            "{} of the plan's {} points have no row: {}",
            missing.len(),
            plan.points.len(),
            named(&missing)
        );
    }
    Ok(())
}

/// `merged`'s rows in the plan's order.
fn in_plan_order(merged: &DataFrame, order: &FxHashMap<&str, usize>) -> Result<DataFrame> {
    // Plan order.
    let ids = merged.column("id")?.as_materialized_series().clone();
    let rank: Vec<u32> = ids
        .str()?
        .iter()
        .map(|id| {
            id.and_then(|id| order.get(id))
                .map_or(u32::MAX, |&i| i as u32)
        })
        .collect();
    let mut by_rank: Vec<u32> = (0..rank.len() as u32).collect();
    by_rank.sort_by_key(|&i| rank[i as usize]);
    let idx = IdxCa::from_vec(
        "idx".into(),
        by_rank.into_iter().map(|i| i as IdxSize).collect(),
    );
    Ok(merged.take(&idx)?)
}

/// The table `sweep` prints, from the merged one.
fn summary(plan: &Plan, df: &DataFrame) -> Result<String> {
    let text = |c: &str| -> Result<Vec<String>> {
        let s = df.column(c)?.as_materialized_series().clone();
        Ok(s.str()?
            .iter()
            .map(|v| v.unwrap_or("").to_string())
            .collect())
    };
    let count = |c: &str| -> Result<Vec<u64>> {
        let s = df.column(c)?.as_materialized_series().clone();
        Ok(s.u64()?.iter().map(|v| v.unwrap_or(0)).collect())
    };
    let keys: Vec<Vec<String>> = plan.axes.iter().map(|k| text(k)).collect::<Result<_>>()?;
    let counts: Vec<Vec<u64>> = METRICS
        .iter()
        .filter(|m| **m != "miss_rate")
        .map(|m| count(m))
        .collect::<Result<_>>()?;
    let rate = df.column("miss_rate")?.as_materialized_series().clone();
    let rate: Vec<f64> = rate.f64()?.iter().map(|v| v.unwrap_or(0.0)).collect();
    let l2 = super::l2_cells::l2_cells(df)?;
    let rows: Vec<Row> = (0..df.height())
        .map(|i| {
            let params = plan
                .axes
                .iter()
                .zip(&keys)
                .map(|(k, v)| (k.clone(), v[i].clone()));
            let mut row = Row::from_counts(
                params.collect(),
                std::array::from_fn(|c| counts[c][i]),
                rate[i],
            );
            row.l2 = l2.get(i).copied().flatten();
            row
        })
        .collect();
    let axes: Vec<(String, Vec<String>)> =
        plan.axes.iter().map(|k| (k.clone(), Vec::new())).collect();
    Ok(super::csv(&axes, &rows))
}
