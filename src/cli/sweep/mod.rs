//! `warpscope sweep`: the product of `--vary` values, one row per configuration, as CSV or
//! JSON. The trace is read once, as it is simulated, and each piece goes to every
//! configuration's session, the sessions spread over the cores (`lanes`); the timing model
//! and truncated traces load the trace whole and simulate the configurations in parallel
//! (rayon). Beyond one machine (docs/cluster.md): `plan.rs` writes the grid as a table of
//! points with stable ids, `shard.rs` runs one shard of it (restartable), `slurm.rs` writes
//! the job array that runs every shard, and `merge.rs` checks and concatenates the shards.

mod l2_cells;
#[cfg(feature = "tables")]
mod merge;
#[cfg(feature = "tables")]
mod plan;
#[cfg(feature = "tables")]
mod shard;
#[cfg(feature = "tables")]
mod slurm;

#[cfg(feature = "tables")]
use super::args::SweepAction;
use super::args::{InputArgs, SweepArgs};
use super::{options, stream};
use anyhow::{Context, Result};
use l2_cells::L2Cells;
use rayon::prelude::*;
use serde::Serialize;
use warpscope::config::{grid, SimConfig};
use warpscope::report::sweep_columns::{L2_METRICS, METRICS};
use warpscope::shell::lanes;
use warpscope::sim::{self, NoObserver, Report, Session};

#[derive(Serialize)]
struct Row {
    params: Vec<(String, String)>,
    requests: u64,
    hits: u64,
    misses: u64,
    miss_rate: f64,
    compulsory: u64,
    capacity: u64,
    conflict: u64,
    transactions: u64,
    bytes_from_memory: u64,
    bytes_to_memory: u64,
    writebacks: u64,
    /// The L2's counters, where the point simulated one (`L2_METRICS`' columns).
    #[serde(flatten)]
    l2: Option<L2Cells>,
}

pub fn run(a: SweepArgs) -> Result<()> {
    #[cfg(feature = "tables")]
    {
        if let Some(SweepAction::Merge(m)) = &a.action {
            return merge::run(m);
        }
        if a.shard.is_some() {
            return shard::run(&a);
        }
        if a.plan.is_some() || a.slurm.is_some() {
            return plan::write(&a);
        }
    }
    #[cfg(not(feature = "tables"))]
    if a.action.is_some() || a.shard.is_some() || a.plan.is_some() || a.slurm.is_some() {
        anyhow::bail!("plans, shards, Slurm and merge need the `tables` feature (polars); this build has no tables");
    }
    let mut base = options::config(&a.config)?;
    base.reuse = warpscope::config::ReuseMode::Off;
    let axes = axes(&a.vary, &base)?;
    let grid = grid(&axes);
    let configs = configs(&base, &grid)?;
    let describe = |i: usize| describe(&grid[i]);
    let reports = simulate(&a.input, &configs, a.jobs.unwrap_or(0), &describe)?;
    let rows: Vec<Row> = reports
        .into_iter()
        .zip(&grid)
        .map(|(r, params)| Row::new(&r, params))
        .collect();
    let ext = a
        .output
        .as_ref()
        .and_then(|p| p.extension())
        .and_then(|e| e.to_str())
        .map(|e| e.to_ascii_lowercase());
    if ext.as_deref() == Some("parquet") {
        #[cfg(feature = "tables")]
        if let Some(p) = &a.output {
            let mut df = plan::plain_frame(&axes, &rows)?;
            warpscope::report::sweep::write(&mut df, p)?;
            return Ok(());
        }
        #[cfg(not(feature = "tables"))]
        anyhow::bail!(
            "-o FILE.parquet needs the `tables` feature (polars); this build writes .csv or .json"
        );
    }
    let json = ext.as_deref() == Some("json");
    let text = if json {
        serde_json::to_string_pretty(&json_rows(&rows))? + "\n"
    } else {
        csv(&axes, &rows)
    };
    match &a.output {
        Some(p) => std::fs::write(p, text).with_context(|| format!("writing {}", p.display()))?,
        None => print!("{text}"),
    }
    Ok(())
}

impl Row {
    /// The counters other than the miss rate, in the table's order (the miss rate comes
    /// after the first three).
    fn counts(&self) -> [u64; 10] {
        [
            self.requests,
            self.hits,
            self.misses,
            self.compulsory,
            self.capacity,
            self.conflict,
            self.transactions,
            self.bytes_from_memory,
            self.bytes_to_memory,
            self.writebacks,
        ]
    }

    /// A row from [`Row::counts`]' values and the miss rate.
    #[cfg(feature = "tables")]
    fn from_counts(params: Vec<(String, String)>, c: [u64; 10], miss_rate: f64) -> Self {
        Row {
            params,
            requests: c[0],
            hits: c[1],
            misses: c[2],
            miss_rate,
            compulsory: c[3],
            capacity: c[4],
            conflict: c[5],
            transactions: c[6],
            bytes_from_memory: c[7],
            bytes_to_memory: c[8],
            writebacks: c[9],
            l2: None,
        }
    }

    fn new(r: &Report, params: &[(String, String)]) -> Self {
        let t = &r.totals;
        Row {
            params: params.to_vec(),
            requests: t.requests,
            hits: t.hits,
            misses: t.misses,
            miss_rate: r.miss_rate,
            compulsory: t.miss_classes.compulsory,
            capacity: t.miss_classes.capacity,
            conflict: t.miss_classes.conflict,
            transactions: t.transactions,
            bytes_from_memory: t.bytes_from_memory,
            bytes_to_memory: t.bytes_to_memory,
            writebacks: t.writebacks,
            l2: L2Cells::of(r),
        }
    }
}

/// The `--vary KEY=V1,V2,...` axes, each checked against `base` (`config::grid`).
fn axes(vary: &[String], base: &SimConfig) -> Result<Vec<(String, Vec<String>)>> {
    grid::axes(vary, base).map_err(|e| anyhow::anyhow!("--vary {e}"))
}

/// The product of the axes, in order (the last axis varies fastest).
fn grid(axes: &[(String, Vec<String>)]) -> Vec<Vec<(String, String)>> {
    grid::points(axes)
}

/// `base` with each point's keys set.
fn configs(base: &SimConfig, grid: &[Vec<(String, String)>]) -> Result<Vec<SimConfig>> {
    grid::configs(base, grid).map_err(|e| anyhow::anyhow!(e))
}

fn describe(params: &[(String, String)]) -> String {
    grid::describe(params)
}

/// Simulates `input` with every configuration: streamed, or loaded whole where the timing
/// model or a truncated trace needs it.
fn simulate(
    input: &InputArgs,
    configs: &[SimConfig],
    jobs: usize,
    describe: &(dyn Fn(usize) -> String + Sync),
) -> Result<Vec<Report>> {
    let whole = input.allow_truncated || configs.iter().any(|c| c.timing.is_some());
    if whole {
        loaded(input, configs, jobs, describe)
    } else {
        streamed(input, configs, jobs, describe)
    }
}

/// Reads the trace once, as it is simulated, and gives every piece to each configuration's
/// session; the sessions are spread over `jobs` threads (0: one per core), so memory holds
/// what is resident, never the trace. An NVBit log or Accel-Sim trace is read once, its
/// instructions taken as they are found; where that read cannot go on, the sweep starts
/// again reading it in two passes (as `sim` does).
fn streamed(
    a: &InputArgs,
    configs: &[SimConfig],
    jobs: usize,
    describe: &dyn Fn(usize) -> String,
) -> Result<Vec<Report>> {
    warpscope::shell::policy::once_else_twice(
        |as_found| streamed_as(a, configs, jobs, describe, as_found),
        lanes::must_read_again,
        |e| eprintln!("note: {}", e.root_cause()),
    )
}

/// [`streamed`], taking instructions as they are found where `as_found`.
fn streamed_as(
    a: &InputArgs,
    configs: &[SimConfig],
    jobs: usize,
    describe: &dyn Fn(usize) -> String,
    as_found: bool,
) -> Result<Vec<Report>> {
    let sessions = configs
        .iter()
        .enumerate()
        .map(|(i, c)| Session::new(c, 0).with_context(|| describe(i)))
        .collect::<Result<Vec<_>>>()?;
    let name = options::source_name(a);
    let input = stream::input(a, as_found)?;
    let mut progress = input.progress;
    let ran = lanes::run(
        sessions,
        lanes::cores(jobs),
        input.depth,
        &mut progress,
        input.source,
    );
    progress.clear();
    let sessions = ran.map_err(|f| match f {
        lanes::Failure::Session(i, e) => {
            anyhow::Error::from(e).context(format!("{name} with {}", describe(i)))
        }
        lanes::Failure::Other(e) => e.context(format!("simulating {name}")),
    })?;
    Ok(sessions
        .into_iter()
        .map(|s| s.finish(&mut NoObserver))
        .collect())
}

/// Loads the whole trace, then simulates the configurations in parallel (the timing model
/// needs whole kernels; a truncated trace is cut at its last whole kernel).
fn loaded(
    a: &InputArgs,
    configs: &[SimConfig],
    jobs: usize,
    describe: &(dyn Fn(usize) -> String + Sync),
) -> Result<Vec<Report>> {
    let (trace, source) = options::load_trace(a)?;
    let pool = rayon::ThreadPoolBuilder::new().num_threads(jobs).build()?;
    pool.install(|| {
        configs
            .par_iter()
            .enumerate()
            .map(|(i, c)| {
                sim::run(c, &trace, &mut NoObserver)
                    .with_context(|| format!("{source} with {}", describe(i)))
            })
            .collect()
    })
}

fn json_rows(rows: &[Row]) -> Vec<serde_json::Value> {
    rows.iter()
        .map(|r| {
            let mut v = serde_json::to_value(r).unwrap_or_default();
            if let Some(obj) = v.as_object_mut() {
                obj.remove("params");
                for (k, val) in &r.params {
                    obj.insert(k.clone(), serde_json::Value::String(val.clone()));
                }
            }
            v
        })
        .collect()
}

fn csv(axes: &[(String, Vec<String>)], rows: &[Row]) -> String {
    let mut s = String::new();
    for (k, _) in axes {
        s.push_str(k);
        s.push(',');
    }
    s.push_str(&METRICS.join(","));
    let l2 = rows.iter().any(|r| r.l2.is_some());
    if l2 {
        s.push(',');
        s.push_str(&L2_METRICS.join(","));
    }
    s.push('\n');
    for r in rows {
        for (_, v) in &r.params {
            s.push_str(&format!("\"{}\",", v.replace('"', "'")));
        }
        let c = r.counts().map(|v| v.to_string());
        s.push_str(&format!(
            "{},{},{}",
            c[..3].join(","),
            r.miss_rate,
            c[3..].join(",")
        ));
        if l2 {
            // Empty cells for a point that simulated no L2.
            let cells = r.l2.map(|c| c.texts()).unwrap_or_default();
            s.push(',');
            s.push_str(&cells.join(","));
        }
        s.push('\n');
    }
    s
}
