//! The per-request table: every request of a run written as it happens, in batches, so
//! neither the trace nor the table need fit in memory. An [`Observer`] of the run, so it
//! lives here, above the report's table writers it uses.

use std::path::Path;

use polars::prelude::*;

use super::{Observer, RequestEvent, REQUEST_COLUMNS};
use crate::report::export::{ExportError, PartFile};
use crate::report::tables::{TableFormat, Writer};
use crate::trace::Kernel;

/// Requests buffered before a batch is written.
const BATCH: usize = 1 << 20;

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
        let (part, f) = PartFile::create(path)?;
        let writer = Writer::create(f, &file, format, &request_schema())?;
        Ok(Self {
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
        self.part.complete()?;
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
    fn on_instructions(&mut self, kernel: u32, added: &[crate::trace::Instruction]) {
        self.inner.on_instructions(kernel, added);
        if let Some(names) = self.names.get_mut(kernel as usize) {
            names.extend(added.iter().map(|i| i.name.clone()));
        }
    }
    fn on_l2(&mut self, e: &crate::l2::L2Event) {
        self.inner.on_l2(e);
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
