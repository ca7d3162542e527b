//! Writing traces in the formats Warpscope writes (its text and binary formats, and Nugteren
//! et al.'s `.trc`), a kernel or a CTA at a time, under a `.part` name until complete.

use super::sink::{CtaSink, KernelSink};
use super::{binary, nugteren, text, Columns, Kernel, Trace, TraceError};
use std::io::{BufWriter, Seek, SeekFrom};
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

/// Writes a trace a kernel at a time (a [`KernelSink`]) or a CTA (or a chunk of issued rows) at
/// a time (a [`CtaSink`]), so that `convert` and `gen` hold one kernel or one CTA, not the
/// whole trace: the header comes first in every format, and rows follow as given. Files are
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
    /// A kernel given by CTA to a text format: its header, and where in the file it began (an
    /// abandoned kernel is cut off there).
    writing: Option<(Kernel, u64)>,
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
            writing: None,
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
        let Some((_, start)) = self.writing.take() else {
            return self.with_out(|out| match out {
                Out::Binary(b) => b.abandon_kernel(),
                Out::Plain(_) => Ok(()),
            });
        };
        if self.format == WriteFormat::Nugteren {
            // The kernel had a file of its own: it goes, and the one before keeps its name.
            if let Some((_, p)) = self.out.take() {
                let _ = std::fs::remove_file(part_of(&p));
            }
            if self.kernels == 1 {
                if let Some(first) = self.done.first_mut() {
                    first.1 = self.path.clone();
                }
            }
            return Ok(());
        }
        // Back to where the kernel began: the file is cut there when it is closed.
        self.with_out(|out| match out {
            Out::Plain(f) => f.seek(SeekFrom::Start(start)).map(|_| ()),
            Out::Binary(_) => Ok(()),
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

    /// Writes rows of the kernel begun: by `binary` in our binary format, else as the text
    /// formats write them.
    fn rows(
        &mut self,
        rows: &Columns,
        binary: impl FnOnce(&mut binary::Writer<File>) -> std::io::Result<()>,
    ) -> Result<(), TraceError> {
        let format = self.format;
        let header = self.writing.as_ref().map(|w| &w.0);
        let (out, path) = match (&mut self.out, header) {
            (Some((Out::Binary(b), p)), _) => (binary(b), p),
            (Some((Out::Plain(f), p)), Some(k)) => match format {
                WriteFormat::Text => (text::write_rows(k, rows, f), p),
                _ => (nugteren::write_rows(rows, f), p),
            },
            _ => {
                return Err(TraceError::io(
                    &self.path.display().to_string(),
                    std::io::Error::other("rows came before their kernel began"),
                ))
            }
        };
        out.map_err(|e| TraceError::io(&path.display().to_string(), e))
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
        let format = self.format;
        if format == WriteFormat::Nugteren {
            self.next_trc()?;
        }
        let mut start = 0;
        self.with_out(|out| match out {
            Out::Binary(b) => b.begin_kernel(header),
            Out::Plain(f) => {
                start = f.stream_position()?;
                match format {
                    WriteFormat::Text => text::write_kernel_header(header, f),
                    _ => nugteren::write_header(header, f),
                }
            }
        })?;
        if format != WriteFormat::Binary {
            self.writing = Some((header.clone(), start));
        }
        Ok(())
    }
    fn cta(&mut self, cta: u32, rows: &Columns) -> Result<(), TraceError> {
        self.rows(rows, |b| b.cta(cta, rows))
    }
    fn issued(&mut self, rows: &Columns) -> Result<(), TraceError> {
        self.rows(rows, |b| b.issued(rows))
    }
    fn end_kernel(&mut self) -> Result<(), TraceError> {
        if self.writing.take().is_none() {
            self.with_out(|out| match out {
                Out::Binary(b) => b.end_kernel(),
                Out::Plain(_) => Err(std::io::Error::other("a kernel ended that had not begun")),
            })?;
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Three kernels: per-thread with a barrier and a shared access, issued with its
    /// CTA-to-SM table, per-thread again.
    fn trace() -> Trace {
        let text = "kernel a grid=2 block=2\ninst x pc=0x10\n0 0 x 0 ld 0x100 4\n0 1 bar\n\
                    1 1 x 0 st 0x200 8 shared\n1 0 x 0 ld 0x300 4\n\
                    kernel b grid=2 block=1 order=issued\ncta-sm 1 3\n1 0 y 0 ld 0x10 4\n\
                    0 0 y 0 ld 0x20 4\n1 0 y 1 atom.add 0x30 4\n0 0 z 0 st 0x40 4\n\
                    kernel c grid=3 block=1\n2 0 w 0 ld 0x1 1\n0 0 w 0 ld 0x2 2\n";
        text::read(text.as_bytes(), "t.wst").unwrap()
    }

    /// Writes `t` to `path` a CTA (or two issued rows) at a time; with `abandon`, the last
    /// kernel is begun, given one piece, and abandoned.
    fn by_pieces(t: &Trace, path: &Path, format: WriteFormat, abandon: bool) -> Vec<PathBuf> {
        let mut w = TraceWriter::create(path, format).unwrap();
        for (i, k) in t.kernels.iter().enumerate() {
            w.begin_kernel(&k.header()).unwrap();
            let last = abandon && i + 1 == t.kernels.len();
            let mut rows = Columns::default();
            if k.order == crate::trace::Order::Issued {
                for start in (0..k.len()).step_by(2) {
                    rows.clear();
                    rows.extend_from(k.columns(), start..(start + 2).min(k.len()));
                    w.issued(&rows).unwrap();
                }
            } else {
                for cta in 0..k.num_ctas() {
                    rows.clear();
                    rows.extend_from(k.columns(), k.cta_rows(cta));
                    w.cta(cta, &rows).unwrap();
                    if last {
                        break;
                    }
                }
            }
            if last {
                w.abandon_kernel().unwrap();
            } else {
                w.end_kernel().unwrap();
            }
        }
        w.finish().unwrap()
    }

    #[test]
    fn a_kernel_written_in_pieces_is_the_kernel_written_whole_and_an_abandoned_one_is_gone() {
        let dir = tempfile::tempdir().unwrap();
        let t = trace();
        let keep = |n: usize| Trace {
            kernels: t.kernels[..n].to_vec(),
        };
        let name = |p: &PathBuf| p.file_name().unwrap().to_string_lossy().to_string();
        for (format, ext) in [(WriteFormat::Text, "wst"), (WriteFormat::Nugteren, "trc")] {
            let path = |stem: &str| dir.path().join(format!("{stem}.{ext}"));
            // (written whole, written in pieces): all of it; then the last kernel abandoned, of
            // three and of two (a lone `.trc` file keeps the plain name).
            let cases = [
                (
                    write_file_as(&t, &path("w3"), format).unwrap(),
                    by_pieces(&t, &path("p3"), format, false),
                ),
                (
                    write_file_as(&keep(2), &path("w2"), format).unwrap(),
                    by_pieces(&t, &path("p2"), format, true),
                ),
                (
                    write_file_as(&keep(1), &path("w1"), format).unwrap(),
                    by_pieces(&keep(2), &path("p1"), format, true),
                ),
            ];
            for (a, b) in &cases {
                assert_eq!(a.len(), b.len(), "{a:?} {b:?}");
                for (x, y) in a.iter().zip(b) {
                    // The same name but for the stem's first letter.
                    assert_eq!(name(x)[1..], name(y)[1..]);
                    assert_eq!(
                        std::fs::read(x).unwrap(),
                        std::fs::read(y).unwrap(),
                        "{x:?} {y:?}"
                    );
                }
            }
            // No part files are left.
            let parts = std::fs::read_dir(dir.path())
                .unwrap()
                .filter(|e| {
                    e.as_ref()
                        .unwrap()
                        .path()
                        .to_string_lossy()
                        .ends_with(".part")
                })
                .count();
            assert_eq!(parts, 0);
        }
        // The text written in pieces reads back as the trace.
        let back = crate::trace::read_file(&dir.path().join("p3.wst"), None)
            .unwrap()
            .0;
        assert_eq!(back, t);
    }
}
