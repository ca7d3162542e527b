//! A table's rows a chunk at a time, pulled one chunk per call ([`Chunks::next`]): CSV lines
//! handed to polars [`CHUNK_BYTES`] at a time, Parquet rows [`CHUNK_ROWS`] at a time. Pulled,
//! not pushed, so that two readers of one file can go in lock-step (the streamed read's scan
//! runs ahead of the read that hands rows on by a kernel, not by the whole file).

use std::io::BufRead;
use std::path::Path;

use super::guarded;
use crate::trace::source;
use crate::trace::{Location, TraceError};

/// Rows handed to polars at a time (Parquet).
pub(super) const CHUNK_ROWS: usize = 1 << 18;

/// Bytes of CSV lines handed to polars at a time (then on to the end of the line).
pub(super) const CHUNK_BYTES: usize = 16 << 20;

/// What is done with each chunk of a table: its rows, about how many rows follow, and where
/// in the file each row is.
pub(super) type EachChunk<'e> = dyn FnMut(&polars::prelude::DataFrame, usize, &dyn Fn(usize) -> Location) -> Result<(), TraceError>
    + 'e;

/// A table read a chunk at a time.
pub(super) trait Chunks {
    /// Hands the next chunk of rows to `each`; false at the end of the table.
    fn next(&mut self, each: &mut EachChunk<'_>) -> Result<bool, TraceError>;

    /// Hands every chunk left to `each`.
    fn each(&mut self, each: &mut EachChunk<'_>) -> Result<(), TraceError> {
        while self.next(each)? {}
        Ok(())
    }
}

/// The file line of each row of a CSV chunk.
enum RowLines {
    /// No blank lines in the chunk: row `i` is line `first + i`.
    From(u64),
    /// Blank lines were left out: the line of each row.
    Each(Vec<u64>),
}

impl RowLines {
    fn line(&self, row: usize) -> u64 {
        match self {
            RowLines::From(first) => first + row as u64,
            RowLines::Each(lines) => lines.get(row).copied().unwrap_or(0),
        }
    }
}

/// A CSV table read from a stream, `chunk_bytes` of lines at a time. `size_hint` is about
/// the stream's length in bytes (0 if unknown), from which the rows still to come are
/// estimated.
pub(super) struct CsvChunks<'a, R> {
    r: R,
    file: &'a str,
    size_hint: u64,
    chunk_bytes: usize,
    /// The header line, ending in a LF.
    header: Vec<u8>,
    /// The file line of the next line read.
    next_line: u64,
    /// The chunk handed to polars: the header, then whole lines.
    chunk: Vec<u8>,
    /// What was read past the last line end of the previous chunk.
    carry: Vec<u8>,
    /// The chunk's lines but blank ones, once it has one.
    kept_lines: Vec<u8>,
    eof: bool,
    /// Bytes and rows handed on so far (for the estimate of rows to come).
    bytes_seen: u64,
    rows_seen: u64,
}

impl<'a, R: BufRead> CsvChunks<'a, R> {
    /// Reads the header line.
    pub(super) fn new(
        mut r: R,
        file: &'a str,
        size_hint: u64,
        chunk_bytes: usize,
    ) -> Result<Self, TraceError> {
        let mut header = Vec::new();
        if r.read_until(b'\n', &mut header)
            .map_err(|e| TraceError::io(file, e))?
            == 0
        {
            return Err(TraceError::parse(
                file,
                Location::Line(1),
                "empty file: expected a header line naming the columns",
            ));
        }
        if !header.ends_with(b"\n") {
            header.push(b'\n');
        }
        Ok(Self {
            r,
            file,
            size_hint,
            chunk_bytes,
            bytes_seen: header.len() as u64,
            header,
            next_line: 2, // the first data line
            chunk: Vec::new(),
            carry: Vec::new(),
            kept_lines: Vec::new(),
            eof: false,
            rows_seen: 0,
        })
    }

    /// Reads on to `chunk_bytes` of lines and then to a line end (or the end of the file):
    /// the chunk is the header and those lines, the rest is carried to the next chunk.
    fn fill(&mut self) -> Result<(), TraceError> {
        let body = self.header.len();
        let chunk = &mut self.chunk;
        chunk.clear();
        chunk.extend_from_slice(&self.header);
        chunk.extend_from_slice(&self.carry);
        self.carry.clear();
        let mut scanned = body;
        let cut = loop {
            if chunk.len() - body >= self.chunk_bytes || self.eof {
                if self.eof {
                    break chunk.len();
                }
                if let Some(nl) = memchr::memrchr(b'\n', &chunk[scanned..]) {
                    break scanned + nl + 1;
                }
                scanned = chunk.len();
            }
            let have = chunk.len();
            let want = (body + self.chunk_bytes)
                .saturating_sub(have)
                .clamp(1, 1 << 20);
            chunk.resize(have + want, 0);
            let got = loop {
                match self.r.read(&mut chunk[have..]) {
                    Ok(n) => break n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(TraceError::io(self.file, e)),
                }
            };
            chunk.truncate(have + got);
            self.eof = got == 0;
        };
        self.carry.extend_from_slice(&chunk[cut..]);
        chunk.truncate(cut);
        Ok(())
    }
}

impl<R: BufRead> Chunks for CsvChunks<'_, R> {
    fn next(&mut self, each: &mut EachChunk<'_>) -> Result<bool, TraceError> {
        let body = self.header.len();
        while !(self.eof && self.carry.is_empty()) {
            self.fill()?;
            // The chunk's rows: its lines but blank ones, and the file line of each row.
            let lines = &self.chunk[body..];
            let first = self.next_line;
            let mut start = 0;
            let mut rows = 0usize;
            let mut kept: Option<Vec<u64>> = None;
            while start < lines.len() {
                let end =
                    memchr::memchr(b'\n', &lines[start..]).map_or(lines.len(), |p| start + p + 1);
                let line = &lines[start..end];
                // A line is blank only if it starts with white space: most are settled by
                // their first byte.
                let blank =
                    line[0].is_ascii_whitespace() && line.iter().all(u8::is_ascii_whitespace);
                if blank && kept.is_none() {
                    // The first blank line: from here on, lines are copied one by one.
                    self.kept_lines.clear();
                    self.kept_lines
                        .extend_from_slice(&self.chunk[..body + start]);
                    kept = Some((first..self.next_line).collect());
                }
                match (&mut kept, blank) {
                    (Some(_), true) => {}
                    (Some(k), false) => {
                        self.kept_lines.extend_from_slice(line);
                        k.push(self.next_line);
                        rows += 1;
                    }
                    (None, _) => rows += 1,
                }
                self.next_line += 1;
                start = end;
            }
            if rows == 0 {
                continue;
            }
            let (row_lines, text) = match kept {
                Some(k) => (RowLines::Each(k), self.kept_lines.as_slice()),
                None => (RowLines::From(first), self.chunk.as_slice()),
            };
            self.bytes_seen += lines.len() as u64;
            self.rows_seen += rows as u64;
            let rows_after = (u128::from(self.size_hint.saturating_sub(self.bytes_seen))
                * u128::from(self.rows_seen)
                / u128::from(self.bytes_seen)) as usize;
            let line = row_lines.line(0);
            let file = self.file;
            use polars::prelude::SerReader;
            let df = polars::prelude::CsvReadOptions::default()
                .with_has_header(true)
                .with_rechunk(false)
                .into_reader_with_file_handle(std::io::Cursor::new(text))
                .finish()
                .map_err(|e| {
                    TraceError::parse(
                        file,
                        Location::Line(line),
                        format!("in the {rows} lines from here: {e}"),
                    )
                })?;
            each(&df, rows_after, &|i| Location::Line(row_lines.line(i)))?;
            return Ok(true);
        }
        Ok(false)
    }
}

/// A Parquet table read [`CHUNK_ROWS`] rows at a time.
///
/// Polars reads the file itself (it seeks), so the bytes do not pass through a stream that
/// `watch` wraps, as other formats' do. After each chunk, `watch` is given a stream of as many
/// bytes as the rows read so far are of the file, and it is drained: the shells' progress
/// counts them, and a cancelled job's watch fails the read, which stops this one.
pub(super) struct ParquetChunks<'a> {
    path: &'a Path,
    file: &'a str,
    watch: &'a dyn Fn(source::Stream) -> source::Stream,
    /// The file's size, its rows, the rows read and the bytes told to `watch`.
    size: u64,
    total: usize,
    start: usize,
    told: u64,
}

impl<'a> ParquetChunks<'a> {
    /// Checks the file's framing and reads its row count.
    pub(super) fn new(
        path: &'a Path,
        file: &'a str,
        watch: &'a dyn Fn(source::Stream) -> source::Stream,
    ) -> Result<Self, TraceError> {
        crate::trace::parquet_check::check(open(path, file)?).map_err(|b| {
            TraceError::parse(
                file,
                Location::Byte(b.offset),
                format!("not a readable Parquet file: {}", b.what),
            )
        })?;
        let f = open(path, file)?;
        use polars::prelude::SerReader;
        let total = guarded("metadata", || {
            polars::prelude::ParquetReader::new(f).num_rows()
        })
        .map_err(|e| unreadable(file, e))?;
        Ok(Self {
            path,
            file,
            watch,
            size: std::fs::metadata(path).map_or(0, |m| m.len()),
            total,
            start: 0,
            told: 0,
        })
    }
}

fn open(path: &Path, file: &str) -> Result<std::fs::File, TraceError> {
    std::fs::File::open(path).map_err(|e| TraceError::io(file, e))
}

fn unreadable(file: &str, e: polars::prelude::PolarsError) -> TraceError {
    TraceError::parse(
        file,
        Location::Byte(0),
        format!("not a readable Parquet file: {e}"),
    )
}

impl Chunks for ParquetChunks<'_> {
    fn next(&mut self, each: &mut EachChunk<'_>) -> Result<bool, TraceError> {
        use polars::prelude::SerReader;
        use std::io::Read;
        let (start, total) = (self.start, self.total);
        if start >= total {
            return Ok(false);
        }
        let n = CHUNK_ROWS.min(total - start);
        let f = open(self.path, self.file)?;
        let df = guarded("data", || {
            polars::prelude::ParquetReader::new(f)
                .with_slice(Some((start, n)))
                .finish()
        })
        .map_err(|e| unreadable(self.file, e))?;
        each(&df, total - start - n, &|i| {
            Location::Row((start + i) as u64)
        })?;
        self.start += n;
        let read = (u128::from(self.size) * self.start as u128 / total as u128) as u64;
        let mut bytes = (self.watch)(Box::new(std::io::repeat(0).take(read - self.told)));
        std::io::copy(&mut bytes, &mut std::io::sink())
            .map_err(|e| TraceError::io(self.file, e))?;
        self.told = read;
        Ok(true)
    }
}
