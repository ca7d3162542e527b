//! Writing traces in the formats Warpscope writes (its text and binary formats, and Nugteren
//! et al.'s `.trc`), a kernel or a CTA at a time, under a `.part` name until complete.

use super::sink::{append_cta, append_issued, builder_for, finish, CtaSink, KernelSink};
use super::{binary, nugteren, text, Columns, Kernel, KernelBuilder, Trace, TraceError};
use std::io::BufWriter;
use std::path::{Path, PathBuf};

/// The formats Warpscope writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteFormat {
    /// Warpscope text (`.wst`).
    Text,
    /// Warpscope binary (`.wsb`).
    Binary,
    /// Nugteren et al.'s `.trc`, one file per kernel (the input of their released model).
    Nugteren,
}

impl WriteFormat {
    pub fn from_name(s: &str) -> Option<Self> {
        match s {
            "text" => Some(WriteFormat::Text),
            "binary" | "native" => Some(WriteFormat::Binary),
            "nugteren" => Some(WriteFormat::Nugteren),
            _ => None,
        }
    }
    /// The format a file name implies: `.wsb` binary, anything else text.
    pub fn for_path(path: &Path) -> Self {
        if is_binary_path(path) {
            WriteFormat::Binary
        } else {
            WriteFormat::Text
        }
    }
}

/// `.wsb` files are binary.
pub fn is_binary_path(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "wsb")
}

/// Writes a trace in the format implied by the extension (`.wsb` binary, else text).
pub fn write_file(trace: &Trace, path: &Path) -> Result<(), TraceError> {
    write_file_as(trace, path, WriteFormat::for_path(path)).map(|_| ())
}

/// Writes `trace` to `path` in `format`; returns the files written (Nugteren et al.'s format
/// takes one file per kernel when there are several: `STEM_00.trc`, `STEM_01.trc`, ...).
pub fn write_file_as(
    trace: &Trace,
    path: &Path,
    format: WriteFormat,
) -> Result<Vec<PathBuf>, TraceError> {
    let mut w = TraceWriter::create(path, format)?;
    for k in &trace.kernels {
        w.write(k)?;
    }
    w.finish()
}

type File = BufWriter<std::fs::File>;

/// The open file: the binary format's writer keeps its index.
enum Out {
    Plain(File),
    Binary(binary::Writer<File>),
}

/// Writes a trace a kernel at a time (a [`KernelSink`]) or, in the binary format, a CTA at a
/// time (a [`CtaSink`]), so that `convert` and `gen` hold one kernel or one CTA, not the
/// whole trace (the text formats gather a kernel given by CTA before writing it). Files are
/// written under a `.part` name and get their own name in [`TraceWriter::finish`]; a writer
/// dropped unfinished removes them, so a failed conversion leaves no file that looks whole.
pub struct TraceWriter {
    path: PathBuf,
    format: WriteFormat,
    /// The file being written (`.part`) and its final name.
    out: Option<(Out, PathBuf)>,
    /// Files complete but not yet renamed: (part, final).
    done: Vec<(PathBuf, PathBuf)>,
    kernels: u32,
    /// A kernel given by CTA to a text format, gathered until its end.
    gathering: Option<KernelBuilder>,
}

fn part_of(path: &Path) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(".part");
    PathBuf::from(p)
}

impl TraceWriter {
    /// Starts writing `path` in `format`.
    pub fn create(path: &Path, format: WriteFormat) -> Result<Self, TraceError> {
        let mut w = TraceWriter {
            path: path.to_path_buf(),
            format,
            out: None,
            done: Vec::new(),
            kernels: 0,
            gathering: None,
        };
        if format != WriteFormat::Nugteren {
            w.open(path.to_path_buf())?;
        }
        Ok(w)
    }

    fn open(&mut self, final_path: PathBuf) -> Result<(), TraceError> {
        let name = final_path.display().to_string();
        let part = part_of(&final_path);
        let file = std::fs::File::create(&part).map_err(|e| TraceError::io(&name, e))?;
        let file = BufWriter::with_capacity(1 << 20, file);
        let out = match self.format {
            WriteFormat::Binary => {
                Out::Binary(binary::Writer::new(file).map_err(|e| TraceError::io(&name, e))?)
            }
            WriteFormat::Text => {
                let mut file = file;
                text::write_header(&mut file).map_err(|e| TraceError::io(&name, e))?;
                Out::Plain(file)
            }
            WriteFormat::Nugteren => Out::Plain(file),
        };
        self.out = Some((out, final_path));
        Ok(())
    }

    /// Runs `f` on the open file, naming it in an error.
    fn with_out(
        &mut self,
        f: impl FnOnce(&mut Out) -> std::io::Result<()>,
    ) -> Result<(), TraceError> {
        match &mut self.out {
            Some((w, p)) => f(w).map_err(|e| TraceError::io(&p.display().to_string(), e)),
            None => Err(TraceError::io(
                &self.path.display().to_string(),
                std::io::Error::other("no file is open"),
            )),
        }
    }

    /// Completes and closes the open file, keeping it for the rename.
    fn close(&mut self) -> Result<(), TraceError> {
        if let Some((w, p)) = self.out.take() {
            let name = p.display().to_string();
            let io = |e| TraceError::io(&name, e);
            let mut file = match w {
                Out::Plain(f) => f,
                Out::Binary(b) => b.finish().map_err(io)?,
            };
            std::io::Write::flush(&mut file).map_err(io)?;
            // A kernel abandoned may have left bytes past the end record.
            let end = std::io::Seek::stream_position(&mut file).map_err(io)?;
            file.get_ref().set_len(end).map_err(io)?;
            self.done.push((part_of(&p), p));
        }
        Ok(())
    }

    /// Opens the next `.trc` file (Nugteren et al.'s format holds one kernel): with a second
    /// kernel the first becomes `STEM_00.trc`.
    fn next_trc(&mut self) -> Result<(), TraceError> {
        self.close()?;
        let stem = self.path.with_extension("");
        let numbered = |i: u32| PathBuf::from(format!("{}_{i:02}.trc", stem.display()));
        if self.kernels == 1 {
            if let Some(first) = self.done.first_mut() {
                first.1 = numbered(0);
            }
        }
        let p = if self.kernels == 0 {
            self.path.clone()
        } else {
            numbered(self.kernels)
        };
        self.open(p)
    }

    /// Appends one kernel.
    pub fn write(&mut self, k: &Kernel) -> Result<(), TraceError> {
        let format = self.format;
        if format == WriteFormat::Nugteren {
            self.next_trc()?;
        }
        self.with_out(|out| match out {
            Out::Binary(b) => b.kernel(k),
            Out::Plain(f) if format == WriteFormat::Text => text::write_kernel(k, f),
            Out::Plain(f) => nugteren::write(k, f),
        })?;
        self.kernels += 1;
        Ok(())
    }

    /// Drops a kernel begun CTA by CTA and not ended (its source failed), so that the files
    /// hold the complete kernels before it.
    pub fn abandon_kernel(&mut self) -> Result<(), TraceError> {
        if self.gathering.take().is_some() {
            return Ok(());
        }
        self.with_out(|out| match out {
            Out::Binary(b) => b.abandon_kernel(),
            Out::Plain(_) => Ok(()),
        })
    }

    /// Completes the files and gives them their names; returns them.
    pub fn finish(mut self) -> Result<Vec<PathBuf>, TraceError> {
        self.close()?;
        let mut paths = Vec::new();
        for (part, path) in std::mem::take(&mut self.done) {
            std::fs::rename(&part, &path)
                .map_err(|e| TraceError::io(&path.display().to_string(), e))?;
            paths.push(path);
        }
        Ok(paths)
    }

    /// Kernels written so far.
    pub fn kernels(&self) -> u32 {
        self.kernels
    }
}

impl KernelSink for TraceWriter {
    fn kernel(&mut self, k: Kernel) -> Result<(), TraceError> {
        self.write(&k)
    }
}

impl CtaSink for TraceWriter {
    fn begin_kernel(&mut self, header: &Kernel) -> Result<(), TraceError> {
        if self.format != WriteFormat::Binary {
            self.gathering = Some(builder_for(header)?);
            return Ok(());
        }
        self.with_out(|out| match out {
            Out::Binary(b) => b.begin_kernel(header),
            Out::Plain(_) => Ok(()),
        })
    }
    fn cta(&mut self, cta: u32, rows: &Columns) -> Result<(), TraceError> {
        if self.format != WriteFormat::Binary {
            return append_cta(self.gathering.as_mut(), cta, rows);
        }
        self.with_out(|out| match out {
            Out::Binary(b) => b.cta(cta, rows),
            Out::Plain(_) => Ok(()),
        })
    }
    fn issued(&mut self, rows: &Columns) -> Result<(), TraceError> {
        if self.format != WriteFormat::Binary {
            return append_issued(self.gathering.as_mut(), rows);
        }
        self.with_out(|out| match out {
            Out::Binary(b) => b.issued(rows),
            Out::Plain(_) => Ok(()),
        })
    }
    fn end_kernel(&mut self) -> Result<(), TraceError> {
        if self.format != WriteFormat::Binary {
            let k = finish(self.gathering.take())?;
            return self.write(&k);
        }
        self.with_out(|out| match out {
            Out::Binary(b) => b.end_kernel(),
            Out::Plain(_) => Ok(()),
        })?;
        self.kernels += 1;
        Ok(())
    }
}

impl Drop for TraceWriter {
    fn drop(&mut self) {
        // Unfinished: remove what was written.
        if let Some((_, p)) = self.out.take() {
            let _ = std::fs::remove_file(part_of(&p));
        }
        for (part, _) in self.done.drain(..) {
            let _ = std::fs::remove_file(part);
        }
    }
}
