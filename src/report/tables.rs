//! The report's per-instruction and per-CTA tables as CSV or Parquet through polars, and the
//! table writer the per-request export ([`super::requests`]) shares.

use std::fs::File;
use std::path::{Path, PathBuf};

use polars::prelude::*;

use super::export::{ExportError, Exporter, PartFile};
use super::Report;

/// Table file formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableFormat {
    Csv,
    Parquet,
}

impl TableFormat {
    pub fn from_path(path: &Path) -> Result<Self, ExportError> {
        match path.extension().and_then(|e| e.to_str()) {
            Some(e) if e.eq_ignore_ascii_case("csv") => Ok(TableFormat::Csv),
            Some(e) if e.eq_ignore_ascii_case("parquet") => Ok(TableFormat::Parquet),
            _ => Err(ExportError::Extension {
                file: path.display().to_string(),
                expected: ".csv or .parquet".into(),
            }),
        }
    }

    pub fn extension(self) -> &'static str {
        match self {
            TableFormat::Csv => "csv",
            TableFormat::Parquet => "parquet",
        }
    }
}

pub(super) enum Writer {
    Csv(polars::io::csv::write::BatchedWriter<File>),
    Parquet(Box<polars::io::parquet::write::BatchedWriter<File>>),
}

impl Writer {
    /// A writer of a `format` table into `file` (named `name` in errors).
    pub fn create(
        file: File,
        name: &str,
        format: TableFormat,
        schema: &Schema,
    ) -> Result<Self, ExportError> {
        let werr = |e: PolarsError| ExportError::Write {
            file: name.to_string(),
            message: e.to_string(),
        };
        Ok(match format {
            TableFormat::Csv => Writer::Csv(
                CsvWriter::new(file)
                    .include_header(true)
                    .batched(schema)
                    .map_err(werr)?,
            ),
            TableFormat::Parquet => Writer::Parquet(Box::new(
                ParquetWriter::new(file).batched(schema).map_err(werr)?,
            )),
        })
    }
    pub fn write(&mut self, df: &DataFrame) -> PolarsResult<()> {
        match self {
            Writer::Csv(w) => w.write_batch(df),
            Writer::Parquet(w) => w.write_batch(df),
        }
    }
    pub fn finish(&mut self) -> PolarsResult<()> {
        match self {
            Writer::Csv(w) => w.finish(),
            Writer::Parquet(w) => w.finish().map(|_| ()),
        }
    }
}

/// The per-instruction and per-CTA tables of a report, as CSV or Parquet: written to
/// `<stem>.instructions.<ext>` and `<stem>.ctas.<ext>` next to the path given.
pub struct SummaryTables(TableFormat);

impl SummaryTables {
    pub const CSV: SummaryTables = SummaryTables(TableFormat::Csv);
    pub const PARQUET: SummaryTables = SummaryTables(TableFormat::Parquet);
}

impl Exporter for SummaryTables {
    fn name(&self) -> &'static str {
        self.0.extension()
    }
    fn description(&self) -> &'static str {
        match self.0 {
            TableFormat::Csv => "the per-instruction and per-CTA tables as CSV (STEM.instructions.csv, STEM.ctas.csv)",
            TableFormat::Parquet => "the per-instruction and per-CTA tables as Parquet (STEM.instructions.parquet, STEM.ctas.parquet)",
        }
    }
    fn extensions(&self) -> &'static [&'static str] {
        match self.0 {
            TableFormat::Csv => &["csv"],
            TableFormat::Parquet => &["parquet"],
        }
    }
    fn export(&self, report: &Report, _: &str, path: &Path) -> Result<Vec<PathBuf>, ExportError> {
        write_summary(self.0, path, report)
    }
}

/// Writes the per-instruction and per-CTA tables of `report` as `format` next to `path`.
fn write_summary(
    format: TableFormat,
    path: &Path,
    report: &Report,
) -> Result<Vec<PathBuf>, ExportError> {
    let ext = format.extension();
    let stem = path.with_extension("");
    let with = |what: &str| {
        let mut p = stem.clone().into_os_string();
        p.push(format!(".{what}.{ext}"));
        PathBuf::from(p)
    };
    let counters = |rows: &mut Vec<Column>, c: Vec<&crate::cache::Counters>| {
        macro_rules! col {
            ($name:literal, $f:expr) => {
                rows.push(Column::new(
                    $name.into(),
                    c.iter().map($f).collect::<Vec<u64>>(),
                ));
            };
        }
        col!("accesses", |c| c.accesses);
        col!("requests", |c| c.requests);
        col!("reads", |c| c.reads);
        col!("writes", |c| c.writes);
        col!("hits", |c| c.hits);
        col!("misses", |c| c.misses);
        col!("read_misses", |c| c.read_misses);
        col!("write_misses", |c| c.write_misses);
        col!("compulsory", |c| c.miss_classes.compulsory);
        col!("capacity", |c| c.miss_classes.capacity);
        col!("conflict", |c| c.miss_classes.conflict);
        col!("latency", |c| c.miss_classes.latency);
        col!("mshr", |c| c.miss_classes.mshr);
        col!("bytes_from_memory", |c| c.bytes_from_memory);
        col!("bytes_to_memory", |c| c.bytes_to_memory);
    };
    let inst = {
        let r = &report.instructions;
        let mut cols = vec![
            Column::new(
                "kernel".into(),
                r.iter().map(|x| x.kernel).collect::<Vec<u32>>(),
            ),
            Column::new(
                "inst".into(),
                r.iter().map(|x| x.inst).collect::<Vec<u32>>(),
            ),
            Column::new(
                "name".into(),
                r.iter().map(|x| x.name.as_str()).collect::<Vec<&str>>(),
            ),
        ];
        if r.iter().any(|x| x.line.is_some()) {
            cols.push(Column::new(
                "line".into(),
                r.iter().map(|x| x.line).collect::<Vec<Option<u32>>>(),
            ));
        }
        counters(&mut cols, r.iter().map(|x| &x.counters).collect());
        cols.push(Column::new(
            "miss_rate".into(),
            r.iter().map(|x| x.miss_rate).collect::<Vec<f64>>(),
        ));
        (r.len(), cols)
    };
    let cta = {
        let r = &report.ctas;
        let mut cols = vec![
            Column::new(
                "kernel".into(),
                r.iter().map(|x| x.kernel).collect::<Vec<u32>>(),
            ),
            Column::new(
                "cta_x".into(),
                r.iter().map(|x| x.cta.x).collect::<Vec<u32>>(),
            ),
            Column::new(
                "cta_y".into(),
                r.iter().map(|x| x.cta.y).collect::<Vec<u32>>(),
            ),
            Column::new(
                "cta_z".into(),
                r.iter().map(|x| x.cta.z).collect::<Vec<u32>>(),
            ),
            Column::new(
                "sm".into(),
                r.iter().map(|x| x.sm).collect::<Vec<Option<u32>>>(),
            ),
        ];
        let each: Vec<crate::cache::Counters> = r.iter().map(|x| x.counters).collect();
        counters(&mut cols, each.iter().collect());
        cols.push(Column::new(
            "miss_rate".into(),
            r.iter().map(|x| x.miss_rate).collect::<Vec<f64>>(),
        ));
        (r.len(), cols)
    };
    let mut out = Vec::new();
    for (p, (height, cols)) in [with("instructions"), with("ctas")].iter().zip([inst, cta]) {
        let file = p.display().to_string();
        let werr = |e: PolarsError| ExportError::Write {
            file: file.clone(),
            message: e.to_string(),
        };
        let mut df = DataFrame::new(height, cols).map_err(werr)?;
        let (part, f) = PartFile::create(p)?;
        match format {
            TableFormat::Csv => CsvWriter::new(f)
                .include_header(true)
                .finish(&mut df)
                .map_err(werr)?,
            TableFormat::Parquet => {
                ParquetWriter::new(f).finish(&mut df).map_err(werr)?;
            }
        }
        out.push(part.complete()?);
    }
    Ok(out)
}
