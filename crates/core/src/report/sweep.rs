//! Sweep result tables, one row per point of a sweep plan (its id, its input, the value of
//! each varied key, then the counters of [`METRICS`], and those of [`L2_METRICS`] where the
//! sweep simulates an L2), as CSV or Parquet through polars. A
//! table is read back whole and checked: a truncated or damaged file, or a row with a missing
//! cell, is an error naming the file (and the row), never a shorter table. `warpscope sweep`
//! writes its shards with [`write()`], `sweep merge` concatenates them, and the app reads
//! any of these tables, or the one a plain `sweep -o` writes (no id or input column; CSV,
//! Parquet or JSON), with [`read_any`] to draw it as a heatmap.

use std::path::Path;

use polars::prelude::*;

use super::export::ExportError;
use super::tables::TableFormat;

pub use super::sweep_columns::{is_metric, KEYS, L2_METRICS, METRICS};

fn read_err(path: &Path, message: impl Into<String>) -> ExportError {
    ExportError::Read {
        file: path.display().to_string(),
        message: message.into(),
    }
}

/// Reads a sweep table: every key column as text, the counters as `UInt64` (the miss rates
/// as `Float64`; the L2's may be empty). Errors name the file, and the row of a missing or
/// malformed cell.
pub fn read(path: &Path) -> Result<DataFrame, ExportError> {
    typed(raw(path)?, path, Shape::Plan)
}

/// Reads any table a sweep writes: a plan's (shards, `sweep merge`), or a plain `sweep -o`
/// table, whose rows have the varied keys and the counters only, as CSV, Parquet or JSON.
/// The keys come first, then the counters, as in [`read`].
pub fn read_any(path: &Path) -> Result<DataFrame, ExportError> {
    let is_json = path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("json"));
    let df = if is_json {
        from_json(path)?
    } else {
        raw(path)?
    };
    typed(df, path, Shape::Any)
}

/// The rows of a plain `sweep -o FILE.json`: an array of objects, each key's value a string
/// and each counter a number. Every cell as text, for [`typed`] to check.
fn from_json(path: &Path) -> Result<DataFrame, ExportError> {
    let text = std::fs::read_to_string(path).map_err(|e| ExportError::io(path, e))?;
    let rows: Vec<serde_json::Map<String, serde_json::Value>> = serde_json::from_str(&text)
        .map_err(|e| {
            read_err(
                path,
                format!(
                    "line {}: expected a JSON array of sweep rows: {e}",
                    e.line()
                ),
            )
        })?;
    let Some(first) = rows.first() else {
        return Err(read_err(path, "the table has no rows"));
    };
    // The varied keys (in the file's order), then the counters in the table's order.
    let mut names: Vec<String> = first.keys().filter(|k| !is_metric(k)).cloned().collect();
    names.extend(METRICS.iter().map(|m| m.to_string()));
    if rows.iter().any(|r| r.contains_key(L2_METRICS[0])) {
        names.extend(L2_METRICS.iter().map(|m| m.to_string()));
    }
    let mut columns = Vec::with_capacity(names.len());
    for name in &names {
        let mut cells: Vec<Option<String>> = Vec::with_capacity(rows.len());
        for r in &rows {
            cells.push(match r.get(name) {
                Some(serde_json::Value::String(s)) => Some(s.clone()),
                Some(serde_json::Value::Null) | None => None,
                Some(v) => Some(v.to_string()),
            });
        }
        columns.push(Column::new(name.as_str().into(), cells));
    }
    DataFrame::new(rows.len(), columns).map_err(|e| read_err(path, e.to_string()))
}

/// Which tables [`typed`] accepts.
#[derive(Clone, Copy, PartialEq)]
enum Shape {
    /// A plan's: `id`, `input`, the keys, the counters.
    Plan,
    /// A plan's, or a plain sweep's: the keys, the counters.
    Any,
}

/// A CSV or Parquet table as it is in the file, every CSV cell as text.
fn raw(path: &Path) -> Result<DataFrame, ExportError> {
    Ok(match TableFormat::from_path(path)? {
        TableFormat::Csv => CsvReadOptions::default()
            .with_has_header(true)
            // Every column as text: the counters are checked and converted below.
            .with_infer_schema_length(Some(0))
            .try_into_reader_with_file_path(Some(path.to_path_buf()))
            .and_then(|r| r.finish())
            .map_err(|e| read_err(path, format!("not a readable CSV table: {e}")))?,
        TableFormat::Parquet => {
            let open = || std::fs::File::open(path).map_err(|e| ExportError::io(path, e));
            crate::trace::parquet_check::check(open()?).map_err(|b| {
                read_err(
                    path,
                    format!(
                        "not a readable Parquet file (cut short?): byte {}: {}",
                        b.offset, b.what
                    ),
                )
            })?;
            let f = open()?;
            crate::trace::table::guarded("data", || ParquetReader::new(f).finish())
                .map_err(|e| read_err(path, format!("not a readable Parquet file: {e}")))?
        }
    })
}

/// Checks a table's columns and cells and gives each column its type.
fn typed(df: DataFrame, path: &Path, shape: Shape) -> Result<DataFrame, ExportError> {
    let names: Vec<String> = df
        .get_column_names()
        .iter()
        .map(|n| n.to_string())
        .collect();
    let planned = names.len() >= KEYS.len() && names[..KEYS.len()] == KEYS;
    let l2 = names.ends_with(&L2_METRICS.map(String::from));
    let counters = names.len() - if l2 { L2_METRICS.len() } else { 0 };
    let keys = counters.saturating_sub(METRICS.len());
    if counters < METRICS.len()
        || names[keys..counters] != METRICS
        || !(planned || shape == Shape::Any && keys > 0)
    {
        let expected = match shape {
            Shape::Plan => format!("{}, the varied keys", KEYS.join(", ")),
            Shape::Any => "the varied keys (after id and input in a plan's table)".to_string(),
        };
        let found: Vec<&str> = names
            .iter()
            .take(KEYS.len() + 3)
            .map(|n| n.as_str())
            .collect();
        let more = names.len().saturating_sub(found.len());
        return Err(read_err(
            path,
            format!(
                "not a sweep table: expected the columns {expected}, then the counters {} (and l2_* with an L2); found {}{}",
                METRICS.join(", "),
                found.join(", "),
                if more > 0 { format!(" and {more} more") } else { String::new() }
            ),
        ));
    }
    let mut columns = Vec::with_capacity(names.len());
    for name in &names {
        let c = df
            .column(name)
            .map_err(|e| read_err(path, e.to_string()))?
            .as_materialized_series()
            .clone();
        let target = match name.as_str() {
            "miss_rate" | "l2_miss_rate" => DataType::Float64,
            n if is_metric(n) => DataType::UInt64,
            _ => DataType::String,
        };
        let cast = if target == DataType::String {
            c.cast(&DataType::String)
        } else {
            c.strict_cast(&target)
        };
        let cast = cast.map_err(|_| {
            read_err(
                path,
                format!("column `{name}`: expected {target} values in every row"),
            )
        })?;
        // The L2's cells are empty for a point that simulates no L2.
        let may_be_empty = L2_METRICS.contains(&name.as_str());
        let empty = |i: usize| cast.get(i).is_ok_and(|v| v.is_null());
        if let Some(row) = (0..cast.len()).find(|&i| !may_be_empty && empty(i)) {
            return Err(read_err(
                path,
                format!(
                    "row {} has no `{name}` (a shard cut short by a crash?)",
                    row + 1
                ),
            ));
        }
        columns.push(cast.into_column());
    }
    DataFrame::new(df.height(), columns).map_err(|e| read_err(path, e.to_string()))
}

/// Writes `df` as CSV or Parquet (by `path`'s extension), whole or not at all: into a
/// temporary file beside it, then renamed.
pub fn write(df: &mut DataFrame, path: &Path) -> Result<(), ExportError> {
    let format = TableFormat::from_path(path)?;
    let tmp = path.with_extension(format!("{}.part", format.extension()));
    let werr = |e: PolarsError| ExportError::Write {
        file: path.display().to_string(),
        message: e.to_string(),
    };
    let mut file = std::fs::File::create(&tmp).map_err(|e| ExportError::io(&tmp, e))?;
    match format {
        TableFormat::Csv => CsvWriter::new(&mut file)
            .include_header(true)
            .finish(df)
            .map_err(werr)?,
        TableFormat::Parquet => {
            ParquetWriter::new(&mut file).finish(df).map_err(werr)?;
        }
    }
    file.sync_all().map_err(|e| ExportError::io(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| ExportError::io(path, e))
}

/// The rows of `frames`, one table after another (they must have the same columns).
pub fn concat(frames: Vec<DataFrame>) -> PolarsResult<DataFrame> {
    let mut frames = frames.into_iter();
    let mut out = frames.next().unwrap_or_default();
    for f in frames {
        out.vstack_mut(&f)?;
    }
    out.rechunk_mut();
    Ok(out)
}
