//! The report as JSON: what `sim --json` prints and a `.json` export writes (the schema is in
//! `docs/cli.md`).

use std::io::Write;
use std::path::{Path, PathBuf};

use super::export::{write_whole, ExportError, Exporter};
use super::Report;

/// Writes `report` as pretty-printed JSON and a newline.
pub fn write(w: &mut dyn Write, report: &Report) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut *w, report)?;
    writeln!(w)
}

/// The `.json` exporter.
pub struct Json;

impl Exporter for Json {
    fn name(&self) -> &'static str {
        "json"
    }
    fn description(&self) -> &'static str {
        "the whole report as JSON, as `sim --json` prints it"
    }
    fn extensions(&self) -> &'static [&'static str] {
        &["json"]
    }
    fn export(&self, report: &Report, _: &str, path: &Path) -> Result<Vec<PathBuf>, ExportError> {
        Ok(vec![write_whole(path, |w| write(w, report))?])
    }
}
