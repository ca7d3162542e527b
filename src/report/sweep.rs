//! Sweep result tables, one row per point of a sweep plan (its id, its input, the value of
//! each varied key, then the counters of [`METRICS`]), as CSV or Parquet through polars. A
//! table is read back whole and checked: a truncated or damaged file, or a row with a missing
//! cell, is an error naming the file (and the row), never a shorter table. `warpscope sweep`
//! writes its shards with [`write()`], `sweep merge` concatenates them, and the app reads the
//! merged table to draw it as a heatmap.

use std::path::Path;

use polars::prelude::*;

use super::export::ExportError;
use super::tables::TableFormat;

/// The counters of a sweep row, after its keys, in this order.
pub const METRICS: [&str; 11] = [
    "requests",
    "hits",
    "misses",
    "miss_rate",
    "compulsory",
    "capacity",
    "conflict",
    "transactions",
    "bytes_from_memory",
    "bytes_to_memory",
    "writebacks",
];

/// The columns every sweep row starts with: the point's id and its input.
pub const KEYS: [&str; 2] = ["id", "input"];

fn read_err(path: &Path, message: impl Into<String>) -> ExportError {
    ExportError::Read {
        file: path.display().to_string(),
        message: message.into(),
    }
}

/// Reads a sweep table: every key column as text, the counters as `UInt64` (`miss_rate` as
/// `Float64`). Errors name the file, and the row of a missing or malformed cell.
pub fn read(path: &Path) -> Result<DataFrame, ExportError> {
    let df = match TableFormat::from_path(path)? {
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
    };
    typed(df, path)
}

/// Checks a table's columns and cells and gives each column its type.
fn typed(df: DataFrame, path: &Path) -> Result<DataFrame, ExportError> {
    let names: Vec<String> = df
        .get_column_names()
        .iter()
        .map(|n| n.to_string())
        .collect();
    if names.len() < KEYS.len() + METRICS.len()
        || names[..KEYS.len()] != KEYS
        || names[names.len() - METRICS.len()..] != METRICS
    {
        return Err(read_err(
            path,
            format!(
                "expected the columns {}, the varied keys, then {}; found {}",
                KEYS.join(", "),
                METRICS.join(", "),
                names.join(", ")
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
            "miss_rate" => DataType::Float64,
            n if METRICS.contains(&n) => DataType::UInt64,
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
        if let Some(row) = (0..cast.len()).find(|&i| cast.get(i).is_ok_and(|v| v.is_null())) {
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
