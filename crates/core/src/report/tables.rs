//! The report's per-instruction and per-CTA tables as CSV or Parquet through polars, and the
//! table writer the per-request export (`sim::RequestExporter`) shares.

use std::fs::File;
use std::path::{Path, PathBuf};

use polars::prelude::*;

use super::export::{ExportError, Exporter, PartFile};
use super::{CtaRow, Report};

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

pub(crate) enum Writer {
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

/// Rows of the per-CTA table turned into columns at a time: the table of a kernel of 10^7 CTAs
/// is written batch by batch, never held whole as columns.
const CTA_BATCH_ROWS: usize = 1 << 16;

/// Writes the per-instruction and per-CTA tables of `report` as `format` next to `path`.
fn write_summary(
    format: TableFormat,
    path: &Path,
    report: &Report,
) -> Result<Vec<PathBuf>, ExportError> {
    write_summary_in(format, path, report, CTA_BATCH_ROWS)
}

/// [`write_summary`], the per-CTA table in batches of `batch_rows`.
fn write_summary_in(
    format: TableFormat,
    path: &Path,
    report: &Report,
    batch_rows: usize,
) -> Result<Vec<PathBuf>, ExportError> {
    let ext = format.extension();
    let stem = path.with_extension("");
    let with = |what: &str| {
        let mut p = stem.clone().into_os_string();
        p.push(format!(".{what}.{ext}"));
        PathBuf::from(p)
    };
    let werr = |p: &Path| {
        let file = p.display().to_string();
        move |e: PolarsError| ExportError::Write {
            file: file.clone(),
            message: e.to_string(),
        }
    };
    let insts = with("instructions");
    let mut df = DataFrame::new(report.instructions.len(), instruction_columns(report))
        .map_err(werr(&insts))?;
    let (part, f) = PartFile::create(&insts)?;
    match format {
        TableFormat::Csv => CsvWriter::new(f)
            .include_header(true)
            .finish(&mut df)
            .map_err(werr(&insts))?,
        TableFormat::Parquet => {
            ParquetWriter::new(f)
                .finish(&mut df)
                .map_err(werr(&insts))?;
        }
    }
    drop(df);
    let mut out = vec![part.complete()?];

    let ctas = with("ctas");
    let (part, f) = PartFile::create(&ctas)?;
    let mut file = Some(f);
    let mut rows = report.ctas.iter();
    let mut batch: Vec<CtaRow> = Vec::with_capacity(batch_rows.min(rows.len()).max(1));
    let mut writer = None;
    loop {
        batch.clear();
        batch.extend(rows.by_ref().take(batch_rows.max(1)));
        // A first batch is written even when empty: it gives the file its header or schema.
        if batch.is_empty() && writer.is_some() {
            break;
        }
        let df = DataFrame::new(batch.len(), cta_columns(&batch)).map_err(werr(&ctas))?;
        let w = match &mut writer {
            Some(w) => w,
            None => {
                // Taken once: the writer is made on the first batch only.
                let Some(f) = file.take() else { break };
                writer.insert(Writer::create(
                    f,
                    &ctas.display().to_string(),
                    format,
                    df.schema(),
                )?)
            }
        };
        w.write(&df).map_err(werr(&ctas))?;
    }
    if let Some(w) = &mut writer {
        w.finish().map_err(werr(&ctas))?;
    }
    drop(writer);
    out.push(part.complete()?);
    Ok(out)
}

/// The columns every table's counters take, after its own, and its miss rates last.
fn counter_columns(cols: &mut Vec<Column>, c: &[&crate::cache::Counters], miss_rate: Vec<f64>) {
    macro_rules! col {
        ($name:literal, $f:expr) => {
            cols.push(Column::new(
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
    cols.push(Column::new("miss_rate".into(), miss_rate));
}

/// The per-instruction table's columns.
fn instruction_columns(report: &Report) -> Vec<Column> {
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
    let c: Vec<_> = r.iter().map(|x| &x.counters).collect();
    counter_columns(&mut cols, &c, r.iter().map(|x| x.miss_rate).collect());
    cols
}

/// The per-CTA table's columns for a batch of its rows.
fn cta_columns(r: &[CtaRow]) -> Vec<Column> {
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
    let c: Vec<_> = r.iter().map(|x| &x.counters).collect();
    counter_columns(&mut cols, &c, r.iter().map(|x| x.miss_rate).collect());
    cols
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SimConfig;
    use crate::sim::{NoObserver, Session};

    /// The report of vecadd `n` with CTAs of 32 threads, on 4 SMs.
    fn report(n: &str) -> Report {
        let pairs = [("n", n), ("block", "32")].map(|(a, b)| (a.into(), b.into()));
        let trace = crate::gen::generate("vecadd", &pairs).unwrap();
        let mut cfg = SimConfig::default();
        cfg.gpu.sms = 4;
        cfg.gpu.simulate = crate::config::SmSelection::All;
        let mut s = Session::new(&cfg, 0).unwrap();
        s.kernel(&trace.kernels[0], &mut NoObserver).unwrap();
        s.finish(&mut NoObserver)
    }

    fn read(format: TableFormat, path: &Path) -> DataFrame {
        match format {
            TableFormat::Csv => CsvReadOptions::default()
                .try_into_reader_with_file_path(Some(path.into()))
                .unwrap()
                .finish()
                .unwrap(),
            TableFormat::Parquet => ParquetReader::new(File::open(path).unwrap())
                .finish()
                .unwrap(),
        }
    }

    #[test]
    fn the_cta_table_written_in_batches_holds_every_row_once_in_order() {
        let r = report("8192");
        assert_eq!(r.ctas.len(), 256);
        let dir = tempfile::tempdir().unwrap();
        for format in [TableFormat::Csv, TableFormat::Parquet] {
            let ext = format.extension();
            // 100 rows a batch: two whole batches and a part; then all in one.
            let batched = dir.path().join(format!("b.{ext}"));
            let whole = dir.path().join(format!("w.{ext}"));
            let files = write_summary_in(format, &batched, &r, 100).unwrap();
            write_summary_in(format, &whole, &r, 1 << 20).unwrap();
            assert_eq!(files[1], dir.path().join(format!("b.ctas.{ext}")));
            let df = read(format, &files[1]);
            assert_eq!(df.height(), 256, "{ext}");
            let col = |name: &str| -> Vec<u64> {
                let c = df.column(name).unwrap().cast(&DataType::UInt64).unwrap();
                c.u64().unwrap().into_no_null_iter().collect()
            };
            let want = |f: fn(&CtaRow) -> u64| r.ctas.iter().map(|x| f(&x)).collect::<Vec<u64>>();
            assert_eq!(col("cta_x"), want(|x| x.cta.x as u64), "{ext}");
            assert_eq!(col("sm"), want(|x| x.sm.unwrap() as u64), "{ext}");
            assert_eq!(col("accesses"), want(|x| x.counters.accesses), "{ext}");
            assert_eq!(col("misses"), want(|x| x.counters.misses), "{ext}");
            assert_eq!(
                col("compulsory"),
                want(|x| x.counters.miss_classes.compulsory)
            );
            let in_one = read(format, &dir.path().join(format!("w.ctas.{ext}")));
            assert!(df.equals_missing(&in_one), "{ext}");
            if format == TableFormat::Csv {
                let bytes = |p: &str| std::fs::read(dir.path().join(p)).unwrap();
                assert_eq!(bytes("b.ctas.csv"), bytes("w.ctas.csv"));
            }
        }
    }

    #[test]
    fn an_empty_cta_table_is_written_with_its_header() {
        let mut r = report("64");
        r.ctas = Default::default();
        let dir = tempfile::tempdir().unwrap();
        let files = write_summary_in(TableFormat::Csv, &dir.path().join("e.csv"), &r, 100).unwrap();
        let text = std::fs::read_to_string(&files[1]).unwrap();
        assert!(
            text.starts_with("kernel,cta_x,cta_y,cta_z,sm,accesses,"),
            "{text}"
        );
        assert_eq!(text.lines().count(), 1);
        let files =
            write_summary_in(TableFormat::Parquet, &dir.path().join("e.parquet"), &r, 100).unwrap();
        let df = read(TableFormat::Parquet, &files[1]);
        assert_eq!((df.height(), df.width()), (0, 21));
    }
}
