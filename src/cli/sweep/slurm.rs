//! `sweep --slurm DIR`: writes the plan and a Slurm job array that runs it, one array task per
//! shard (`DIR/sweep.sbatch`, logs in `DIR/logs/`), and prints the `sbatch` command. Slurm
//! schedules, retries and limits the tasks; nothing here queues or talks to the cluster.

use std::path::Path;

use anyhow::{Context, Result};

use super::super::args::SweepArgs;
use super::plan::Plan;

/// Memory a task asks for: what a shard holds at once is bounded by what is resident (each
/// configuration's cache and scheduler state, the reader's buffers), not by the trace's
/// length, except where the timing model or a truncated trace loads a trace whole (then
/// about 24 bytes per access: the trace file's size, times 4, is the estimate used).
fn memory_mib(plan: &Plan, per_task: usize) -> u64 {
    let resident = 256 + 16 * per_task as u64;
    let whole = plan.base.timing.is_some()
        || plan
            .points
            .iter()
            .any(|p| p.input.iter().any(|w| w == "--allow-truncated"));
    let largest_trace = plan
        .points
        .iter()
        .filter_map(|p| {
            let at = p.input.iter().position(|w| w == "--trace")?;
            std::fs::metadata(p.input.get(at + 1)?)
                .ok()
                .map(|m| m.len())
        })
        .max()
        .unwrap_or(0);
    if whole {
        resident + largest_trace * 4 / (1 << 20)
    } else {
        resident
    }
}

/// Single-quotes `s` for the shell.
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

pub fn write(dir: &Path, plan: &Plan, a: &SweepArgs) -> Result<()> {
    plan.write(dir)?;
    let dir = std::path::absolute(dir)?;
    let logs = dir.join("logs");
    std::fs::create_dir_all(&logs).with_context(|| format!("creating {}", logs.display()))?;
    let c = &a.cluster;
    let shards = c
        .shards
        .unwrap_or(plan.points.len().min(64))
        .clamp(1, plan.points.len());
    let per_task = plan.points.len().div_ceil(shards);
    let cpus = a.jobs.unwrap_or(2).max(1);
    let mem = c.mem.unwrap_or_else(|| memory_mib(plan, per_task));
    let exe = std::env::current_exe().context("finding the warpscope executable")?;
    let mut s = String::new();
    s.push_str("#!/bin/bash\n");
    s.push_str("# Written by `warpscope sweep --slurm`: one array task per shard of the plan in this folder.\n");
    s.push_str(&format!(
        "# Then: warpscope sweep merge {} -o results.parquet\n",
        quote(&dir.display().to_string())
    ));
    s.push_str("#SBATCH --job-name=warpscope-sweep\n");
    s.push_str(&format!(
        "#SBATCH --array=0-{}%{}\n",
        shards - 1,
        c.max_running.max(1)
    ));
    s.push_str(&format!("#SBATCH --cpus-per-task={cpus}\n"));
    s.push_str(&format!("#SBATCH --mem={mem}M\n"));
    s.push_str(&format!(
        "#SBATCH --output={}/shard-%a.out\n",
        logs.display()
    ));
    s.push_str(&format!(
        "#SBATCH --error={}/shard-%a.err\n",
        logs.display()
    ));
    for (flag, v) in [
        ("partition", &c.partition),
        ("time", &c.time),
        ("account", &c.account),
    ] {
        if let Some(v) = v {
            s.push_str(&format!("#SBATCH --{flag}={v}\n"));
        }
    }
    for extra in &c.extra {
        s.push_str(&format!("#SBATCH {extra}\n"));
    }
    s.push_str("set -euo pipefail\n");
    s.push_str(&format!(
        "exec {} sweep --plan {} --shard \"${{SLURM_ARRAY_TASK_ID}}/{shards}\" --jobs {cpus} --shard-format {}\n",
        quote(&exe.display().to_string()),
        quote(&dir.display().to_string()),
        a.shard_format
    ));
    let script = dir.join("sweep.sbatch");
    std::fs::write(&script, s).with_context(|| format!("writing {}", script.display()))?;
    eprintln!(
        "wrote {} points in {shards} shards ({cpus} CPUs, {mem} MiB each) into {}; submit with:",
        plan.points.len(),
        dir.display()
    );
    println!("sbatch {}", quote(&script.display().to_string()));
    Ok(())
}
