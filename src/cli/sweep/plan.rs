//! A sweep's plan: its points (an input and the value of each varied key), each with a
//! stable id, written as a table (`plan.csv`) beside the configuration the keys change
//! (`base.json`). Shard K of N takes every N-th point from the K-th, so shards stay the same
//! whenever the plan is read.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Parser;
use polars::prelude::*;
use warpscope::config::SimConfig;
use warpscope::report::sweep::{KEYS, METRICS};

use super::super::args::{InputArgs, SweepArgs};
use super::super::options;
use super::Row;

/// One point of the plan.
pub struct Point {
    /// A hash of its input and keys: the same point has the same id in every plan.
    pub id: String,
    /// Its input as sweep's own flags (`--kernel matmul n=64`, `--trace /abs/run.din`).
    pub input: Vec<String>,
    pub params: Vec<(String, String)>,
}

pub struct Plan {
    /// The varied keys, in order.
    pub axes: Vec<String>,
    pub points: Vec<Point>,
    pub base: SimConfig,
}

/// FNV-1a, 64 bits: a short stable id (not a security hash).
fn id_of(input: &[String], params: &[(String, String)]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |s: &str| {
        for b in s.bytes().chain([0u8]) {
            h ^= b as u64;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    for w in input {
        eat(w);
    }
    eat("\u{1}");
    for (k, v) in params {
        eat(k);
        eat(v);
    }
    format!("{h:016x}")
}

/// The input flags alone, to read a point's input back.
#[derive(Parser)]
struct InputOnly {
    #[command(flatten)]
    input: InputArgs,
}

/// A point's input flags parsed as `sweep` parses them.
pub fn parse_input(words: &[String]) -> Result<InputArgs> {
    InputOnly::try_parse_from(std::iter::once("input".to_string()).chain(words.iter().cloned()))
        .map(|o| o.input)
        .map_err(|e| anyhow::anyhow!("input `{}`: {e}", words.join(" ")))
}

fn absolute(p: &Path) -> Result<String> {
    let abs = std::path::absolute(p).with_context(|| format!("{}", p.display()))?;
    Ok(abs.display().to_string())
}

/// `a`'s own input as flags, with absolute paths (the tasks may start elsewhere).
fn own_input(a: &InputArgs) -> Result<Option<Vec<String>>> {
    let mut w = Vec::new();
    if let Some(t) = &a.trace {
        w.extend(["--trace".to_string(), absolute(t)?]);
        if let Some(f) = &a.format {
            w.extend(["--format".to_string(), f.clone()]);
        }
        if a.allow_truncated {
            w.push("--allow-truncated".into());
        }
    } else if let Some(k) = &a.kernel {
        w.extend(["--kernel".to_string(), k.clone()]);
    } else if let Some(s) = &a.source {
        w.extend(["--source".to_string(), absolute(s)?]);
    } else {
        return Ok(None);
    }
    w.extend(a.params.iter().cloned());
    Ok(Some(w))
}

impl Plan {
    /// The plan of `a`'s inputs times its `--vary` grid.
    pub fn build(a: &SweepArgs) -> Result<Plan> {
        let mut base = options::config(&a.config)?;
        base.reuse = warpscope::config::ReuseMode::Off;
        let axes = super::axes(&a.vary, &base)?;
        let grid = super::grid(&axes);
        let mut inputs: Vec<Vec<String>> = own_input(&a.input)?.into_iter().collect();
        for extra in &a.inputs {
            let words: Vec<String> = extra.split_whitespace().map(str::to_string).collect();
            // Checked now, and its paths made absolute like the own input's.
            let parsed = parse_input(&words)?;
            inputs.push(own_input(&parsed)?.with_context(|| {
                format!("--input `{extra}`: give --trace, --kernel or --source")
            })?);
        }
        if inputs.is_empty() {
            bail!("give an input: --trace, --kernel, --source or --input");
        }
        let mut points = Vec::new();
        for input in &inputs {
            for params in &grid {
                points.push(Point {
                    id: id_of(input, params),
                    input: input.clone(),
                    params: params.clone(),
                });
            }
        }
        let mut ids: Vec<&str> = points.iter().map(|p| p.id.as_str()).collect();
        ids.sort_unstable();
        if let Some(w) = ids.windows(2).find(|w| w[0] == w[1]) {
            bail!(
                "the plan has the same point twice (id {}): an input given twice?",
                w[0]
            );
        }
        Ok(Plan {
            axes: axes.into_iter().map(|(k, _)| k).collect(),
            points,
            base,
        })
    }

    pub fn table_path(dir: &Path) -> PathBuf {
        dir.join("plan.csv")
    }

    /// Writes `plan.csv` and `base.json` into `dir`.
    pub fn write(&self, dir: &Path) -> Result<()> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let mut cols: Vec<Column> = vec![
            Column::new(
                "id".into(),
                self.points.iter().map(|p| p.id.clone()).collect::<Vec<_>>(),
            ),
            Column::new(
                "input".into(),
                self.points
                    .iter()
                    .map(|p| serde_json::to_string(&p.input).unwrap_or_default())
                    .collect::<Vec<_>>(),
            ),
        ];
        for (i, k) in self.axes.iter().enumerate() {
            let v: Vec<String> = self.points.iter().map(|p| p.params[i].1.clone()).collect();
            cols.push(Column::new(k.as_str().into(), v));
        }
        let mut df = DataFrame::new(self.points.len(), cols)?;
        let path = Self::table_path(dir);
        let file = std::fs::File::create(&path).with_context(|| format!("{}", path.display()))?;
        CsvWriter::new(file).include_header(true).finish(&mut df)?;
        let base = dir.join("base.json");
        std::fs::write(&base, serde_json::to_string_pretty(&self.base)? + "\n")
            .with_context(|| format!("writing {}", base.display()))?;
        Ok(())
    }

    /// Reads the plan `write` wrote into `dir`.
    pub fn read(dir: &Path) -> Result<Plan> {
        let path = Self::table_path(dir);
        let name = path.display().to_string();
        let df = CsvReadOptions::default()
            .with_has_header(true)
            .with_infer_schema_length(Some(0))
            .try_into_reader_with_file_path(Some(path.clone()))
            .and_then(|r| r.finish())
            .map_err(|e| {
                anyhow::anyhow!(
                    "{name}: not a readable plan (write one with --plan or --slurm): {e}"
                )
            })?;
        let names: Vec<String> = df
            .get_column_names()
            .iter()
            .map(|n| n.to_string())
            .collect();
        if names.len() < 3 || names[..2] != KEYS {
            bail!("{name}: expected the columns id, input and the varied keys");
        }
        let text = |c: &str| -> Result<Vec<String>> {
            let s = df.column(c)?.as_materialized_series().clone();
            let s = s.str()?;
            s.iter()
                .enumerate()
                .map(|(i, v)| {
                    v.map(str::to_string)
                        .with_context(|| format!("{name}: row {} has no `{c}`", i + 1))
                })
                .collect()
        };
        let ids = text("id")?;
        let inputs = text("input")?;
        let axes = names[2..].to_vec();
        let values: Vec<Vec<String>> = axes.iter().map(|k| text(k)).collect::<Result<_>>()?;
        let mut points = Vec::with_capacity(ids.len());
        for (i, (id, input)) in ids.into_iter().zip(inputs).enumerate() {
            let input: Vec<String> = serde_json::from_str(&input).with_context(|| {
                format!("{name}: row {}: `input` is not a list of flags", i + 1)
            })?;
            let params = axes
                .iter()
                .zip(&values)
                .map(|(k, v)| (k.clone(), v[i].clone()))
                .collect();
            points.push(Point { id, input, params });
        }
        let base = warpscope::config::file::read(&dir.join("base.json"))
            .with_context(|| format!("the plan's base configuration in {}", dir.display()))?;
        Ok(Plan { axes, points, base })
    }

    /// The points of shard `k` of `n`, in plan order.
    pub fn shard(&self, k: usize, n: usize) -> Vec<&Point> {
        self.points.iter().skip(k).step_by(n.max(1)).collect()
    }
}

/// One point's row as a one-row table: id, input, the keys, the counters, and with `l2`
/// (the plan simulates an L2 somewhere) the L2's, empty where this point has none.
pub fn row_frame(p: &Point, r: &Row, l2: bool) -> Result<DataFrame> {
    let mut cols = vec![
        Column::new("id".into(), [p.id.clone()]),
        Column::new("input".into(), [p.input.join(" ")]),
    ];
    for (k, v) in &p.params {
        cols.push(Column::new(k.as_str().into(), [v.clone()]));
    }
    let mut counts = r.counts().into_iter();
    for name in METRICS {
        cols.push(if name == "miss_rate" {
            Column::new(name.into(), [r.miss_rate])
        } else {
            Column::new(name.into(), [counts.next().unwrap_or(0)])
        });
    }
    if l2 {
        cols.extend(super::l2_cells::l2_columns(std::slice::from_ref(r)));
    }
    Ok(DataFrame::new(1, cols)?)
}

/// A plain sweep's table (`sweep -o FILE.parquet`): the varied keys, then the counters, as
/// the CSV it writes has them.
pub fn plain_frame(axes: &[(String, Vec<String>)], rows: &[Row]) -> Result<DataFrame> {
    let mut cols = Vec::with_capacity(axes.len() + METRICS.len());
    for (k, (name, _)) in axes.iter().enumerate() {
        let cells: Vec<String> = rows
            .iter()
            .map(|r| r.params.get(k).map(|(_, v)| v.clone()).unwrap_or_default())
            .collect();
        cols.push(Column::new(name.as_str().into(), cells));
    }
    let counts: Vec<[u64; 10]> = rows.iter().map(Row::counts).collect();
    let mut c = 0;
    for name in METRICS {
        cols.push(if name == "miss_rate" {
            let v: Vec<f64> = rows.iter().map(|r| r.miss_rate).collect();
            Column::new(name.into(), v)
        } else {
            let v: Vec<u64> = counts.iter().map(|x| x[c]).collect();
            c += 1;
            Column::new(name.into(), v)
        });
    }
    if rows.iter().any(|r| r.l2.is_some()) {
        cols.extend(super::l2_cells::l2_columns(rows));
    }
    Ok(DataFrame::new(rows.len(), cols)?)
}

/// `--plan DIR` or `--slurm DIR`: writes the plan (and the job array).
pub fn write(a: &SweepArgs) -> Result<()> {
    let plan = Plan::build(a)?;
    if let Some(dir) = &a.slurm {
        return super::slurm::write(dir, &plan, a);
    }
    let Some(dir) = &a.plan else {
        bail!("give --plan DIR or --slurm DIR");
    };
    plan.write(dir)?;
    eprintln!(
        "wrote the plan of {} points into {} (run a shard with --plan {} --shard K/N)",
        plan.points.len(),
        dir.display(),
        dir.display()
    );
    Ok(())
}
