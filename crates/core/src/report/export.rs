//! One trait for every way a finished report is written to a file, and the list of them
//! that the CLI (`sim --export-summary`), the app (File > Export report) and the docs read:
//! the file name's extension picks the exporter. Files are written under a `.part` name and
//! renamed when complete, so a file on disk is always whole.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use super::Report;

/// Why a report or table could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("{file}: expected a file name ending in {expected}")]
    Extension { file: String, expected: String },
    /// The io error's text is in the message, not also its source (see `TraceError::Io`).
    #[error("{file}: {error}")]
    Io { file: String, error: std::io::Error },
    #[error("{file}: {message}")]
    Write { file: String, message: String },
    #[error("{file}: {message}")]
    Read { file: String, message: String },
}

impl ExportError {
    pub(crate) fn io(path: &Path, error: std::io::Error) -> Self {
        ExportError::Io {
            file: path.display().to_string(),
            error,
        }
    }
}

/// A way to write a finished report.
pub trait Exporter: Sync {
    /// Its name, as `--help`, the app's menus and the docs list it.
    fn name(&self) -> &'static str;
    /// One line saying what it writes.
    fn description(&self) -> &'static str;
    /// The file name extensions it is chosen by (lower case, without the dot).
    fn extensions(&self) -> &'static [&'static str];
    /// Writes `report`, of a run of the trace named `source`, for `path`; returns the files
    /// written.
    fn export(
        &self,
        report: &Report,
        source: &str,
        path: &Path,
    ) -> Result<Vec<PathBuf>, ExportError>;
}

/// Every exporter this build has, in the order menus list them.
pub fn exporters() -> Vec<&'static dyn Exporter> {
    #[allow(unused_mut)]
    let mut all: Vec<&'static dyn Exporter> = vec![&super::text::Text, &super::json::Json];
    #[cfg(feature = "tables")]
    all.extend([
        &super::tables::SummaryTables::CSV as &dyn Exporter,
        &super::tables::SummaryTables::PARQUET,
    ]);
    all
}

/// Every extension an exporter is chosen by, for file dialogs.
pub fn export_extensions() -> Vec<&'static str> {
    exporters()
        .iter()
        .flat_map(|e| e.extensions())
        .copied()
        .collect()
}

/// The exporter `path`'s extension picks.
pub fn exporter_for(path: &Path) -> Result<&'static dyn Exporter, ExportError> {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    exporters()
        .into_iter()
        .find(|e| e.extensions().iter().any(|x| x.eq_ignore_ascii_case(ext)))
        .ok_or_else(|| ExportError::Extension {
            file: path.display().to_string(),
            expected: export_extensions()
                .iter()
                .map(|e| format!(".{e}"))
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// Writes `report` with the exporter `path`'s extension picks; returns the files written.
pub fn export(report: &Report, source: &str, path: &Path) -> Result<Vec<PathBuf>, ExportError> {
    exporter_for(path)?.export(report, source, path)
}

/// A file being written under `<path>.part`, removed unless [`PartFile::complete`] renames it
/// to `path`.
pub(crate) struct PartFile {
    path: PathBuf,
    part: PathBuf,
    done: bool,
}

impl PartFile {
    pub fn create(path: &Path) -> Result<(Self, File), ExportError> {
        let mut part = path.as_os_str().to_owned();
        part.push(".part");
        let part = PathBuf::from(part);
        let file = File::create(&part).map_err(|e| ExportError::io(path, e))?;
        let me = PartFile {
            path: path.to_path_buf(),
            part,
            done: false,
        };
        Ok((me, file))
    }

    /// Gives the finished file its name.
    pub fn complete(mut self) -> Result<PathBuf, ExportError> {
        std::fs::rename(&self.part, &self.path).map_err(|e| ExportError::io(&self.path, e))?;
        self.done = true;
        Ok(self.path.clone())
    }
}

impl Drop for PartFile {
    fn drop(&mut self) {
        if !self.done {
            let _ = std::fs::remove_file(&self.part);
        }
    }
}

/// Writes one text file at `path` through `write`, whole or not at all.
pub(crate) fn write_whole(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<PathBuf, ExportError> {
    let (part, file) = PartFile::create(path)?;
    let mut w = BufWriter::new(file);
    write(&mut w)
        .and_then(|()| w.flush())
        .map_err(|e| ExportError::io(path, e))?;
    drop(w);
    part.complete()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The exporters as the table of `docs/cli.md` lists them.
    fn docs_table() -> String {
        let mut t = String::from("| exporter | extension | writes |\n|---|---|---|\n");
        for e in exporters() {
            let exts: Vec<String> = e.extensions().iter().map(|x| format!("`.{x}`")).collect();
            t.push_str(&format!(
                "| {} | {} | {} |\n",
                e.name(),
                exts.join(", "),
                e.description()
            ));
        }
        t
    }

    #[test]
    fn the_docs_list_every_exporter() {
        let docs = include_str!("../../../../docs/cli.md");
        let table = docs_table();
        #[cfg(feature = "tables")]
        assert!(docs.contains(&table), "docs/cli.md should list:\n{table}");
        // Without the tables feature the docs list more than this build has.
        #[cfg(not(feature = "tables"))]
        assert!(docs.contains(table.trim_end()), "{table}");
    }

    #[test]
    fn the_extension_picks_the_exporter_and_unknown_ones_list_the_choices() {
        assert_eq!(exporter_for(Path::new("r.JSON")).unwrap().name(), "json");
        assert_eq!(exporter_for(Path::new("a/r.txt")).unwrap().name(), "text");
        let Err(e) = exporter_for(Path::new("r.png")) else {
            panic!("no exporter writes .png")
        };
        let e = e.to_string();
        assert!(
            e.starts_with("r.png: expected a file name ending in .txt, .json"),
            "{e}"
        );
        let all = export_extensions();
        let mut distinct = all.clone();
        distinct.dedup();
        assert_eq!(all, distinct, "each extension picks one exporter");
    }

    #[test]
    fn a_failed_write_leaves_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.txt");
        let r = write_whole(&path, |w| {
            w.write_all(b"half")?;
            Err(std::io::Error::other("disk full"))
        });
        assert!(r.unwrap_err().to_string().contains("disk full"));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        write_whole(&path, |w| w.write_all(b"whole")).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "whole");
    }
}
