//! Tables out of a simulation, as CSV or Parquet through polars: the per-request table (written
//! in batches while the simulation runs, so its size is not bounded by memory) and the
//! per-instruction and per-CTA summaries of a [`Report`].

use std::fs::File;
use std::path::Path;

use polars::prelude::*;

use crate::sim::{Observer, Report, RequestEvent};
use crate::trace::Kernel;

/// Requests buffered before a batch is written.
const BATCH: usize = 1 << 20;

#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("{file}: expected a .csv or .parquet file name")]
    Extension { file: String },
    #[error("{file}: {source}")]
    Io {
        file: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{file}: {message}")]
    Write { file: String, message: String },
}

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
            }),
        }
    }
}

enum Writer {
    Csv(polars::io::csv::write::BatchedWriter<File>),
    Parquet(Box<polars::io::parquet::write::BatchedWriter<File>>),
}

impl Writer {
    /// A writer of a `format` table into `file` (named `name` in errors).
    fn create(
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
    fn write(&mut self, df: &DataFrame) -> PolarsResult<()> {
        match self {
            Writer::Csv(w) => w.write_batch(df),
            Writer::Parquet(w) => w.write_batch(df),
        }
    }
    fn finish(&mut self) -> PolarsResult<()> {
        match self {
            Writer::Csv(w) => w.finish(),
            Writer::Parquet(w) => w.finish().map(|_| ()),
        }
    }
}

/// The columns of the per-request table, in order.
pub const REQUEST_COLUMNS: [&str; 13] = [
    "order",
    "sm",
    "kernel",
    "cta",
    "warp",
    "inst",
    "inst_name",
    "line_address",
    "set",
    "write",
    "hit",
    "miss_class",
    "reuse_distance",
];

#[derive(Default)]
struct RequestColumns {
    order: Vec<u64>,
    sm: Vec<u32>,
    kernel: Vec<u32>,
    cta: Vec<u32>,
    warp: Vec<u32>,
    inst: Vec<u32>,
    line: Vec<u64>,
    set: Vec<u32>,
    write: Vec<bool>,
    hit: Vec<bool>,
    class: Vec<Option<&'static str>>,
    reuse: Vec<Option<u64>>,
}

/// An [`Observer`] that writes every request to a table as the simulation runs, in batches,
/// so neither the trace nor the table need fit in memory. Instruction names come from each
/// kernel's header as it starts ([`Observer::on_kernel`]). The table is written to
/// `<path>.part` and renamed to `path` by [`RequestExporter::finish`]; dropped unfinished
/// (an error, a cancelled run) it is removed, so a table on disk is always whole. Errors
/// stop the simulation (through `progress`) and are returned by `finish`.
pub struct RequestExporter<O> {
    path: std::path::PathBuf,
    part: PartFile,
    file: String,
    writer: Writer,
    cols: RequestColumns,
    /// Instruction names of each kernel announced so far.
    names: Vec<Vec<String>>,
    rows: u64,
    error: Option<ExportError>,
    /// Another observer that also sees everything (progress display).
    pub inner: O,
}

/// A table being written under a temporary name, removed unless it was completed.
struct PartFile {
    path: std::path::PathBuf,
    done: bool,
}

impl Drop for PartFile {
    fn drop(&mut self) {
        if !self.done {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

fn request_schema() -> Schema {
    let mut s = Schema::default();
    for (name, dt) in REQUEST_COLUMNS.iter().zip([
        DataType::UInt64,
        DataType::UInt32,
        DataType::UInt32,
        DataType::UInt32,
        DataType::UInt32,
        DataType::UInt32,
        DataType::String,
        DataType::UInt64,
        DataType::UInt32,
        DataType::Boolean,
        DataType::Boolean,
        DataType::String,
        DataType::UInt64,
    ]) {
        s.with_column((*name).into(), dt);
    }
    s
}

impl<O: Observer> RequestExporter<O> {
    pub fn create(path: &Path, inner: O) -> Result<Self, ExportError> {
        let format = TableFormat::from_path(path)?;
        let file = path.display().to_string();
        let mut part = path.as_os_str().to_owned();
        part.push(".part");
        let part = PartFile {
            path: part.into(),
            done: false,
        };
        let f = File::create(&part.path).map_err(|source| ExportError::Io {
            file: file.clone(),
            source,
        })?;
        let writer = Writer::create(f, &file, format, &request_schema())?;
        Ok(Self {
            path: path.to_path_buf(),
            part,
            file,
            writer,
            cols: RequestColumns::default(),
            names: Vec::new(),
            rows: 0,
            error: None,
            inner,
        })
    }

    fn flush(&mut self) {
        if self.cols.order.is_empty() || self.error.is_some() {
            return;
        }
        let c = std::mem::take(&mut self.cols);
        let names: Vec<&str> = c
            .kernel
            .iter()
            .zip(&c.inst)
            .map(|(&k, &i)| {
                self.names
                    .get(k as usize)
                    .and_then(|k| k.get(i as usize))
                    .map_or("", |n| n.as_str())
            })
            .collect();
        let height = c.order.len();
        let columns = vec![
            Column::new("order".into(), c.order),
            Column::new("sm".into(), c.sm),
            Column::new("kernel".into(), c.kernel),
            Column::new("cta".into(), c.cta),
            Column::new("warp".into(), c.warp),
            Column::new("inst".into(), c.inst),
            Column::new("inst_name".into(), names),
            Column::new("line_address".into(), c.line),
            Column::new("set".into(), c.set),
            Column::new("write".into(), c.write),
            Column::new("hit".into(), c.hit),
            Column::new("miss_class".into(), c.class),
            Column::new("reuse_distance".into(), c.reuse),
        ];
        let result = DataFrame::new(height, columns).and_then(|df| self.writer.write(&df));
        match result {
            Ok(()) => self.rows += height as u64,
            Err(e) => {
                self.error = Some(ExportError::Write {
                    file: self.file.clone(),
                    message: e.to_string(),
                })
            }
        }
    }

    /// Writes what is left, closes the file and gives it its name; returns the number of
    /// rows written.
    pub fn finish(mut self) -> Result<(u64, O), ExportError> {
        self.flush();
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        let werr = |e: PolarsError| ExportError::Write {
            file: self.file.clone(),
            message: e.to_string(),
        };
        self.writer.finish().map_err(werr)?;
        std::fs::rename(&self.part.path, &self.path).map_err(|source| ExportError::Io {
            file: self.file.clone(),
            source,
        })?;
        self.part.done = true;
        Ok((self.rows, self.inner))
    }

    /// The error that stopped the export, if any.
    pub fn error(&self) -> Option<&ExportError> {
        self.error.as_ref()
    }
}

impl<O: Observer> Observer for RequestExporter<O> {
    fn on_kernel(&mut self, kernel: u32, header: &Kernel) {
        self.inner.on_kernel(kernel, header);
        let k = kernel as usize;
        if self.names.len() <= k {
            self.names.resize(k + 1, Vec::new());
        }
        self.names[k] = header.instructions.iter().map(|i| i.name.clone()).collect();
    }
    fn on_request(&mut self, e: &RequestEvent) {
        self.inner.on_request(e);
        let c = &mut self.cols;
        c.order.push(e.order);
        c.sm.push(e.sm);
        c.kernel.push(e.kernel);
        c.cta.push(e.cta);
        c.warp.push(e.warp);
        c.inst.push(e.inst);
        c.line.push(e.line);
        c.set.push(e.set);
        c.write.push(e.write);
        c.hit.push(e.hit);
        c.class.push(e.class.map(|m| m.name()));
        c.reuse.push(e.reuse_distance);
        if c.order.len() >= BATCH {
            self.flush();
        }
    }
    fn progress(&mut self, done: u64, total: u64) -> bool {
        self.inner.progress(done, total) && self.error.is_none()
    }
}

/// Writes the per-instruction and per-CTA tables of a report to `<stem>.instructions.<ext>`
/// and `<stem>.ctas.<ext>` next to `path`; returns the two paths.
pub fn write_summary(path: &Path, report: &Report) -> Result<[std::path::PathBuf; 2], ExportError> {
    let format = TableFormat::from_path(path)?;
    let ext = match format {
        TableFormat::Csv => "csv",
        TableFormat::Parquet => "parquet",
    };
    let stem = path.with_extension("");
    let with = |what: &str| {
        let mut p = stem.clone().into_os_string();
        p.push(format!(".{what}.{ext}"));
        std::path::PathBuf::from(p)
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
        counters(&mut cols, r.iter().map(|x| &x.counters).collect());
        cols.push(Column::new(
            "miss_rate".into(),
            r.iter().map(|x| x.miss_rate).collect::<Vec<f64>>(),
        ));
        (r.len(), cols)
    };
    let out = [with("instructions"), with("ctas")];
    for (p, (height, cols)) in out.iter().zip([inst, cta]) {
        let file = p.display().to_string();
        let werr = |e: PolarsError| ExportError::Write {
            file: file.clone(),
            message: e.to_string(),
        };
        let mut df = DataFrame::new(height, cols).map_err(werr)?;
        let f = File::create(p).map_err(|source| ExportError::Io {
            file: file.clone(),
            source,
        })?;
        match format {
            TableFormat::Csv => CsvWriter::new(f)
                .include_header(true)
                .finish(&mut df)
                .map_err(werr)?,
            TableFormat::Parquet => {
                ParquetWriter::new(f).finish(&mut df).map_err(werr)?;
            }
        }
    }
    Ok(out)
}
