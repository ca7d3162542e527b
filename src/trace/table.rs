//! Traces as tables (CSV or Parquet), for traces made by users' own scripts. Read through polars
//! in chunks of rows, so a large table is never held whole. Columns (names in lowercase; all
//! but `address` optional):
//!
//! | column | meaning | default |
//! |---|---|---|
//! | `kernel` | launch name or number; a run of equal values is one kernel | one kernel |
//! | `cta_x`, `cta_y`, `cta_z` | CTA index | 0 |
//! | `thread_x`, `thread_y`, `thread_z` | thread index in the CTA | 0 |
//! | `warp`, `lane` | instead of `thread_*`: thread `warp * 32 + lane` (1-D) | |
//! | `block_x`, `block_y`, `block_z` | CTA size | the largest thread index + 1 |
//! | `sm` | SM the CTA ran on; with it the rows are in issue order (replayed as they are) | |
//! | `inst` | instruction name or number (first use order is program order) | `access` |
//! | `pc` | the instruction's address | |
//! | `dyn` | dynamic instance | the thread's occurrence count of `inst` |
//! | `kind` | `load`/`ld`, `store`/`st`, `atomic`/`atom.OP`, `barrier`/`bar` | `load` |
//! | `space` | `global`, `local`, `shared`, `const`, `tex` | `global` |
//! | `address` | number or `0x` hex | required |
//! | `size` | bytes | 4 |
//!
//! Without `sm` only the order within each thread is meaningful. The grid is the smallest
//! that holds every CTA index. Errors name the file and line (CSV, counting the header as line
//! 1) or row (Parquet, from 0).

use std::io::BufRead;
use std::path::Path;

use rustc_hash::FxHashMap;

use super::lex;
use super::model::{Access, AccessKind, AtomicOp, Dim3, KernelBuilder, MemSpace, Order};
use super::{KernelSink, Location, TraceError};

/// Rows handed to polars at a time (Parquet).
const CHUNK_ROWS: usize = 1 << 18;

/// Bytes of CSV lines handed to polars at a time (then on to the end of the line).
const CHUNK_BYTES: usize = 16 << 20;

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

/// Reads a CSV table from a stream, a chunk of lines at a time. `size_hint` is about the
/// stream's length in bytes (0 if unknown), from which the rows still to come are estimated
/// so that the kernel's columns are reserved once instead of grown.
pub(crate) fn read_csv<R: BufRead>(
    r: R,
    file: &str,
    size_hint: u64,
    out: &mut dyn KernelSink,
) -> Result<(), TraceError> {
    read_csv_chunked(r, file, size_hint, CHUNK_BYTES, out)
}

/// [`read_csv`] with chunks of `chunk_bytes` (tests use small ones).
fn read_csv_chunked<R: BufRead>(
    mut r: R,
    file: &str,
    size_hint: u64,
    chunk_bytes: usize,
    out: &mut dyn KernelSink,
) -> Result<(), TraceError> {
    let io = |e| TraceError::io(file, e);
    let mut header = Vec::new();
    if r.read_until(b'\n', &mut header).map_err(io)? == 0 {
        return Err(TraceError::parse(
            file,
            Location::Line(1),
            "empty file: expected a header line naming the columns",
        ));
    }
    if !header.ends_with(b"\n") {
        header.push(b'\n');
    }
    let mut st = State::new(file);
    let mut next_line = 2u64; // the first data line
                              // The chunk handed to polars: the header, then whole lines. `carry` is what was read past
                              // the last line end of the previous chunk.
    let mut chunk: Vec<u8> = Vec::new();
    let mut carry: Vec<u8> = Vec::new();
    let mut kept_lines: Vec<u8> = Vec::new();
    let body = header.len();
    let mut eof = false;
    // Bytes and rows handed on so far (for the estimate of rows to come).
    let (mut bytes_seen, mut rows_seen) = (body as u64, 0u64);
    while !(eof && carry.is_empty()) {
        chunk.clear();
        chunk.extend_from_slice(&header);
        chunk.extend_from_slice(&carry);
        carry.clear();
        // Read on to `chunk_bytes` and then to a line end (or the end of the file).
        let mut scanned = body;
        let cut = loop {
            if chunk.len() - body >= chunk_bytes || eof {
                if eof {
                    break chunk.len();
                }
                if let Some(nl) = memchr::memrchr(b'\n', &chunk[scanned..]) {
                    break scanned + nl + 1;
                }
                scanned = chunk.len();
            }
            let have = chunk.len();
            let want = (body + chunk_bytes).saturating_sub(have).clamp(1, 1 << 20);
            chunk.resize(have + want, 0);
            let got = loop {
                match r.read(&mut chunk[have..]) {
                    Ok(n) => break n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(io(e)),
                }
            };
            chunk.truncate(have + got);
            eof = got == 0;
        };
        carry.extend_from_slice(&chunk[cut..]);
        chunk.truncate(cut);
        // The chunk's rows: its lines but blank ones, and the file line of each row.
        let lines = &chunk[body..];
        let first = next_line;
        let mut start = 0;
        let mut rows = 0usize;
        let mut kept: Option<Vec<u64>> = None;
        while start < lines.len() {
            let end = memchr::memchr(b'\n', &lines[start..]).map_or(lines.len(), |p| start + p + 1);
            let line = &lines[start..end];
            // A line is blank only if it starts with white space: most are settled by their
            // first byte.
            let blank = line[0].is_ascii_whitespace() && line.iter().all(u8::is_ascii_whitespace);
            if blank && kept.is_none() {
                // The first blank line: from here on, lines are copied one by one.
                kept_lines.clear();
                kept_lines.extend_from_slice(&chunk[..body + start]);
                kept = Some((first..next_line).collect());
            }
            match (&mut kept, blank) {
                (Some(_), true) => {}
                (Some(k), false) => {
                    kept_lines.extend_from_slice(line);
                    k.push(next_line);
                    rows += 1;
                }
                (None, _) => rows += 1,
            }
            next_line += 1;
            start = end;
        }
        let (row_lines, text) = match kept {
            Some(k) => (RowLines::Each(k), kept_lines.as_slice()),
            None => (RowLines::From(first), chunk.as_slice()),
        };
        if rows == 0 {
            continue;
        }
        bytes_seen += lines.len() as u64;
        rows_seen += rows as u64;
        let rows_after = (u128::from(size_hint.saturating_sub(bytes_seen)) * u128::from(rows_seen)
            / u128::from(bytes_seen)) as usize;
        let line = row_lines.line(0);
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
        st.ingest(&df, rows_after, |i| Location::Line(row_lines.line(i)))?;
    }
    st.finish(out)
}

/// Reads a Parquet table (it needs a seekable file, so it is opened here, not streamed).
pub(crate) fn read_parquet(
    path: &Path,
    file: &str,
    out: &mut dyn KernelSink,
) -> Result<(), TraceError> {
    use polars::prelude::SerReader;
    let open = || std::fs::File::open(path).map_err(|e| TraceError::io(file, e));
    let perr = |e: polars::prelude::PolarsError| {
        TraceError::parse(
            file,
            Location::Byte(0),
            format!("not a readable Parquet file: {e}"),
        )
    };
    super::parquet_check::check(open()?).map_err(|b| {
        TraceError::parse(
            file,
            Location::Byte(b.offset),
            format!("not a readable Parquet file: {}", b.what),
        )
    })?;
    let f = open()?;
    let total = guarded("metadata", || {
        polars::prelude::ParquetReader::new(f).num_rows()
    })
    .map_err(perr)?;
    let mut st = State::new(file);
    let mut start = 0usize;
    while start < total {
        let n = CHUNK_ROWS.min(total - start);
        let f = open()?;
        let df = guarded("data", || {
            polars::prelude::ParquetReader::new(f)
                .with_slice(Some((start, n)))
                .finish()
        })
        .map_err(perr)?;
        st.ingest(&df, total - start - n, |i| {
            Location::Row((start + i) as u64)
        })?;
        start += n;
    }
    st.finish(out)
}

/// Runs a call into polars' Parquet reader, which can panic on corrupt metadata (found by
/// fuzzing): a panic there is reported as an unreadable file, like its errors.
fn guarded<T>(
    what: &str,
    f: impl FnOnce() -> polars::prelude::PolarsResult<T>,
) -> polars::prelude::PolarsResult<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|_| {
        Err(polars::prelude::PolarsError::ComputeError(
            format!("the Parquet reader failed on malformed {what}").into(),
        ))
    })
}

/// One kernel being built: provisional dense CTA and thread ids until the shape is known.
struct Pending {
    key: String,
    b: KernelBuilder,
    block: Option<Dim3>,
    ctas: FxHashMap<Dim3, u32>,
    cta_list: Vec<Dim3>,
    cta_sm: Vec<u32>,
    /// Per provisional CTA: its threads and their instruction counts.
    cta_rows: Vec<CtaRows>,
    thread_list: Vec<(u32, Dim3)>,
    max_tid: Dim3,
    /// The CTA of the previous row and its provisional id.
    last_cta: Option<(Dim3, u32)>,
}

/// The rows of one CTA of a kernel being built, kept per CTA so that the maps stay small and
/// cache-resident while a CTA's rows are together.
#[derive(Default)]
struct CtaRows {
    /// Provisional thread id of thread `(x, 0, 0)` for x below [`DENSE_X`] (u32::MAX: none).
    by_x: Vec<u32>,
    /// Provisional thread ids of the other thread indices.
    other: FxHashMap<Dim3, u32>,
}

/// Thread indices `(x, 0, 0)` below this are looked up in a vector, not a map.
const DENSE_X: u32 = 1024;

impl CtaRows {
    /// Empty, with room for as many threads as `other` has.
    fn alike(other: &CtaRows) -> CtaRows {
        CtaRows {
            by_x: Vec::with_capacity(other.by_x.len()),
            other: FxHashMap::with_capacity_and_hasher(other.other.len(), Default::default()),
        }
    }

    /// The provisional id of thread `t`, which becomes `next` if it is new.
    #[inline]
    fn thread(&mut self, t: Dim3, next: u32) -> u32 {
        if t.y == 0 && t.z == 0 && t.x < DENSE_X {
            let x = t.x as usize;
            if self.by_x.len() <= x {
                self.by_x.resize(x + 1, u32::MAX);
            }
            if self.by_x[x] == u32::MAX {
                self.by_x[x] = next;
            }
            return self.by_x[x];
        }
        *self.other.entry(t).or_insert(next)
    }
}

struct State<'a> {
    file: &'a str,
    current: Option<Pending>,
    done_keys: rustc_hash::FxHashSet<String>,
    kernels: Vec<super::Kernel>,
}

/// A column as whole numbers of type `T` (from integers or decimal/`0x` strings), or `None`
/// when absent.
fn numbers<T: TryFrom<u64>>(
    df: &polars::prelude::DataFrame,
    name: &str,
    at: &dyn Fn(usize) -> Location,
    file: &str,
) -> Result<Option<Vec<T>>, TraceError> {
    use polars::prelude::*;
    let Ok(col) = df.column(name) else {
        return Ok(None);
    };
    let bad = |i: usize, v: &str| {
        TraceError::parse(
            file,
            at(i),
            format!("column `{name}`: expected a whole number (decimal or 0x hex), found `{v}`"),
        )
    };
    let narrow = |i: usize, x: u64| {
        T::try_from(x).map_err(|_| {
            TraceError::parse(
                file,
                at(i),
                format!(
                    "column `{name}`: {x} does not fit in {} bits",
                    8 * std::mem::size_of::<T>()
                ),
            )
        })
    };
    let s = col.as_materialized_series();
    let perr = |e: PolarsError| TraceError::parse(file, at(0), format!("column `{name}`: {e}"));
    let mut out: Vec<T> = Vec::with_capacity(s.len());
    if s.dtype() == &DataType::UInt64 {
        for arr in s.u64().map_err(perr)?.downcast_iter() {
            for v in arr.iter() {
                let i = out.len();
                let v = v.copied().ok_or_else(|| bad(i, ""))?;
                out.push(narrow(i, v)?);
            }
        }
    } else if s.dtype().is_integer() {
        let c = s.cast(&DataType::Int64).map_err(perr)?;
        for arr in c.i64().map_err(perr)?.downcast_iter() {
            for v in arr.iter() {
                let i = out.len();
                let v = v.copied().ok_or_else(|| bad(i, ""))?;
                let v = u64::try_from(v).map_err(|_| bad(i, &v.to_string()))?;
                out.push(narrow(i, v)?);
            }
        }
    } else {
        let c = s
            .cast(&DataType::String)
            .map_err(|e| TraceError::parse(file, at(0), e.to_string()))?;
        let c = c
            .str()
            .map_err(|e| TraceError::parse(file, at(0), e.to_string()))?;
        for arr in c.downcast_iter() {
            for v in arr.iter() {
                let i = out.len();
                let v = trimmed(v.unwrap_or(""));
                let parsed = match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
                    Some(h) => lex::hex(h.as_bytes()),
                    None => lex::dec(v.as_bytes()),
                };
                out.push(narrow(i, parsed.ok_or_else(|| bad(i, v))?)?);
            }
        }
    }
    Ok(Some(out))
}

/// `s` without surrounding white space (most values have none, which is checked first).
fn trimmed(s: &str) -> &str {
    match (s.as_bytes().first(), s.as_bytes().last()) {
        (Some(a), Some(b)) if a.is_ascii_graphic() && b.is_ascii_graphic() => s,
        _ => s.trim(),
    }
}

/// A text column as one code per row and its distinct (trimmed) values, so that work per
/// value (parsing a kind, looking up an instruction) is done once per distinct value.
struct Codes {
    code: Vec<u32>,
    values: Vec<String>,
}

/// A column as codes of its text, or `None` when absent.
fn codes(df: &polars::prelude::DataFrame, name: &str) -> Option<Codes> {
    use polars::prelude::*;
    let s = df
        .column(name)
        .ok()?
        .as_materialized_series()
        .cast(&DataType::String)
        .ok()?;
    let c = s.str().ok()?;
    let mut index: FxHashMap<&str, u32> = FxHashMap::default();
    let mut values = Vec::new();
    let mut code_of = |v| -> u32 {
        let v = trimmed(v);
        *index.entry(v).or_insert_with(|| {
            values.push(v.to_string());
            values.len() as u32 - 1
        })
    };
    // Values of up to 12 bytes are held whole in their 16-byte view (zero-padded), so equal
    // views are equal values: such rows are coded by their view, without hashing text. The
    // previous row's view is tried first (runs of a kernel name or a space).
    let mut by_view: FxHashMap<u128, u32> = FxHashMap::default();
    let mut last: Option<(u128, u32)> = None;
    let mut code = Vec::with_capacity(c.len());
    for arr in c.downcast_iter() {
        for (view, v) in arr.views().iter().zip(arr.iter()) {
            let Some(v) = v.filter(|_| view.is_inline()) else {
                code.push(code_of(v.unwrap_or("")));
                continue;
            };
            let key = view.as_u128();
            let c = match last {
                Some((l, c)) if l == key => c,
                _ => *by_view.entry(key).or_insert_with(|| code_of(v)),
            };
            last = Some((key, c));
            code.push(c);
        }
    }
    Some(Codes { code, values })
}

impl Codes {
    /// The codes with `parse` applied once to each distinct value.
    fn parsed<T>(self, parse: impl Fn(&str) -> Option<T>) -> (Codes, Vec<Option<T>>) {
        let parsed = self.values.iter().map(|v| parse(v)).collect();
        (self, parsed)
    }
}

fn kind_of(s: &str) -> Option<AccessKind> {
    match s.to_ascii_lowercase().as_str() {
        "" | "load" | "ld" | "read" | "r" => Some(AccessKind::Load),
        "store" | "st" | "write" | "w" => Some(AccessKind::Store),
        "atomic" | "atom" => Some(AccessKind::Atomic(AtomicOp::Add)),
        "barrier" | "bar" => Some(AccessKind::Barrier),
        other => other
            .strip_prefix("atom.")
            .and_then(AtomicOp::from_name)
            .map(AccessKind::Atomic),
    }
}

impl<'a> State<'a> {
    fn new(file: &'a str) -> Self {
        Self {
            file,
            current: None,
            done_keys: Default::default(),
            kernels: Vec::new(),
        }
    }

    /// Adds a chunk of rows; about `rows_after` more rows follow in the input.
    fn ingest(
        &mut self,
        df: &polars::prelude::DataFrame,
        rows_after: usize,
        at: impl Fn(usize) -> Location,
    ) -> Result<(), TraceError> {
        let file = self.file;
        let n = df.height();
        let at: &dyn Fn(usize) -> Location = &at;
        let err = |i: usize, m: String| TraceError::parse(file, at(i), m);
        let num = |name: &str| numbers::<u64>(df, name, at, file);
        let addr =
            num("address")?.ok_or_else(|| err(0, "the table has no `address` column".into()))?;
        let u32col = |name: &str| numbers::<u32>(df, name, at, file);
        let cta: Vec<Option<Vec<u32>>> = vec![u32col("cta_x")?, u32col("cta_y")?, u32col("cta_z")?];
        let tid: Vec<Option<Vec<u32>>> = vec![
            u32col("thread_x")?,
            u32col("thread_y")?,
            u32col("thread_z")?,
        ];
        let (warp, lane) = (u32col("warp")?, u32col("lane")?);
        if warp.is_some() != lane.is_some() {
            return Err(err(0, "columns `warp` and `lane` go together".into()));
        }
        if warp.is_some() && tid.iter().any(Option::is_some) {
            return Err(err(
                0,
                "give either `thread_x/y/z` or `warp` and `lane`, not both".into(),
            ));
        }
        let block: Vec<Option<Vec<u32>>> =
            vec![u32col("block_x")?, u32col("block_y")?, u32col("block_z")?];
        let sm = u32col("sm")?;
        let size = num("size")?;
        let dyn_col = u32col("dyn")?;
        let pc = num("pc")?;
        let kernel = codes(df, "kernel");
        let inst = codes(df, "inst");
        // Kinds and spaces parsed once per distinct value (`None`: not a kind or space).
        let kind = codes(df, "kind").map(|c| c.parsed(kind_of));
        let space = codes(df, "space").map(|c| {
            c.parsed(|v| {
                if v.is_empty() {
                    Some(MemSpace::Global)
                } else {
                    MemSpace::from_name(v)
                }
            })
        });
        // Instruction id of each distinct `inst` value in the current kernel (u32::MAX: not
        // looked up yet); cleared when a kernel starts.
        let mut inst_ids: Vec<u32> = vec![u32::MAX; inst.as_ref().map_or(0, |c| c.values.len())];
        let pick = |c: &Option<Vec<u32>>, i: usize| c.as_ref().map_or(0, |v| v[i]);
        let has_block = block.iter().any(Option::is_some);
        let order = if sm.is_some() {
            Order::Issued
        } else {
            Order::PerThread
        };
        // The rows in runs of one kernel value (one run without a kernel column).
        let mut start = 0;
        while start < n {
            let (key, end) = match &kernel {
                Some(k) => {
                    let code = k.code[start];
                    let len = k.code[start..].iter().take_while(|&&c| c == code).count();
                    (k.values[code as usize].as_str(), start + len)
                }
                None => ("", n),
            };
            if self.current.as_ref().is_none_or(|p| p.key != key) {
                if self.done_keys.contains(key) {
                    return Err(err(start, format!("kernel `{key}` appears again after other kernels: a kernel's rows must be contiguous")));
                }
                self.close()?;
                // Provisional shape: one CTA row per dense CTA id, threads dense within.
                let mut b = KernelBuilder::new(
                    if key.is_empty() { "kernel" } else { key },
                    Dim3::x(1 << 16),
                    Dim3::x((1 << 16) - 1),
                    order,
                )
                .map_err(|e| err(start, e.to_string()))?;
                if dyn_col.is_none() {
                    b.number_instances();
                }
                self.current = Some(Pending {
                    key: key.to_string(),
                    b,
                    block: None,
                    ctas: Default::default(),
                    cta_list: Vec::new(),
                    cta_sm: Vec::new(),
                    cta_rows: Vec::new(),
                    thread_list: Vec::new(),
                    max_tid: Dim3::new(0, 0, 0),
                    last_cta: None,
                });
                inst_ids.fill(u32::MAX);
            }
            let Some(p) = self.current.as_mut() else {
                break;
            };
            // Room for this run, and for the rest of the input if it might belong to this
            // kernel too (any excess is given back when the kernel is finished).
            if p.b.spare_capacity() < end - start {
                let guess = (n - start + rows_after).max(p.b.len()).min(1 << 28);
                p.b.reserve(guess.max(end - start));
            }
            // Kept in locals while the run lasts (written back after it).
            let mut max_tid = p.max_tid;
            let mut last_cta = p.last_cta;
            for i in start..end {
                let c = Dim3::new(pick(&cta[0], i), pick(&cta[1], i), pick(&cta[2], i));
                let t = match (&warp, &lane) {
                    (Some(w), Some(l)) => {
                        if l[i] >= 32 {
                            return Err(err(i, format!("lane {} is not below 32", l[i])));
                        }
                        let x = w[i]
                            .checked_mul(32)
                            .and_then(|x| x.checked_add(l[i]))
                            .ok_or_else(|| err(i, "warp * 32 + lane overflows".into()))?;
                        Dim3::new(x, 0, 0)
                    }
                    _ => Dim3::new(pick(&tid[0], i), pick(&tid[1], i), pick(&tid[2], i)),
                };
                if has_block {
                    let bl = Dim3::new(
                        block[0].as_ref().map_or(1, |v| v[i]),
                        block[1].as_ref().map_or(1, |v| v[i]),
                        block[2].as_ref().map_or(1, |v| v[i]),
                    );
                    match p.block {
                        None => p.block = Some(bl),
                        Some(prev) if prev != bl => {
                            return Err(err(
                                i,
                                format!(
                                    "block size {bl} differs from {prev} earlier in the kernel"
                                ),
                            ))
                        }
                        _ => {}
                    }
                    if !bl.contains(t) {
                        return Err(err(i, format!("thread {t} is outside the block {bl}")));
                    }
                }
                max_tid = Dim3::new(max_tid.x.max(t.x), max_tid.y.max(t.y), max_tid.z.max(t.z));
                let ci = match last_cta {
                    Some((lc, ci)) if lc == c => ci,
                    _ => {
                        let ci = match p.ctas.get(&c) {
                            Some(&ci) => ci,
                            None => {
                                let ci = p.cta_list.len() as u32;
                                if ci >= 1 << 16 {
                                    return Err(err(
                                        i,
                                        "more than 65536 CTAs in one kernel".into(),
                                    ));
                                }
                                p.ctas.insert(c, ci);
                                p.cta_list.push(c);
                                // CTAs tend to be alike: sized like the previous one, the maps
                                // need not grow row by row.
                                let rows = p
                                    .cta_rows
                                    .last()
                                    .map_or_else(CtaRows::default, CtaRows::alike);
                                p.cta_rows.push(rows);
                                p.cta_sm.push(sm.as_ref().map_or(0, |s| s[i]));
                                ci
                            }
                        };
                        last_cta = Some((c, ci));
                        ci
                    }
                };
                if let Some(s) = &sm {
                    if p.cta_sm[ci as usize] != s[i] {
                        return Err(err(
                            i,
                            format!(
                                "CTA {c} ran on SM {} and on SM {}",
                                p.cta_sm[ci as usize], s[i]
                            ),
                        ));
                    }
                }
                let next = p.thread_list.len() as u32;
                let thread = p.cta_rows[ci as usize].thread(t, next);
                if thread == next {
                    if next as u64 >= p.b.threads() {
                        return Err(err(i, "too many threads in one kernel".into()));
                    }
                    p.thread_list.push((ci, t));
                }
                let k = match &kind {
                    Some((c, parsed)) => {
                        let v = c.code[i] as usize;
                        parsed[v].ok_or_else(|| err(i, format!("column `kind`: expected load, store, atomic, atom.OP or barrier, found `{}`", c.values[v])))?
                    }
                    None => AccessKind::Load,
                };
                let sp = match &space {
                    Some((c, parsed)) => {
                        let v = c.code[i] as usize;
                        parsed[v].ok_or_else(|| err(i, format!("column `space`: expected global, local, shared, const or tex, found `{}`", c.values[v])))?
                    }
                    None => MemSpace::Global,
                };
                let (inst_id, dyn_inst, sz) =
                    if k == AccessKind::Barrier {
                        (0, 0, 0)
                    } else {
                        let id = match &inst {
                            Some(c) => {
                                let v = c.code[i] as usize;
                                if inst_ids[v] == u32::MAX {
                                    let name = c.values[v].as_str();
                                    let name = if name.is_empty() { "access" } else { name };
                                    inst_ids[v] = p.b.instruction(name, pc.as_ref().map(|x| x[i]));
                                }
                                inst_ids[v]
                            }
                            None => p.b.instruction("access", pc.as_ref().map(|x| x[i])),
                        };
                        // Without a `dyn` column the builder numbers instances when finished.
                        let d = dyn_col.as_ref().map_or(0, |d| d[i]);
                        let sz =
                            match &size {
                                Some(s) => u16::try_from(s[i]).ok().filter(|&z| z > 0).ok_or_else(
                                    || {
                                        err(
                                i,
                                format!("column `size`: expected 1 to 65535 bytes, found {}", s[i]),
                            )
                                    },
                                )?,
                                None => 4,
                            };
                        (id, d, sz)
                    };
                p.b.push(Access {
                    thread,
                    inst: inst_id,
                    dyn_inst,
                    addr: if k == AccessKind::Barrier { 0 } else { addr[i] },
                    size: sz,
                    kind: k,
                    space: sp,
                })
                .map_err(|e| err(i, e.to_string()))?;
            }
            p.max_tid = max_tid;
            p.last_cta = last_cta;
            start = end;
        }
        Ok(())
    }

    /// Fixes the shape of the current kernel and keeps it.
    fn close(&mut self) -> Result<(), TraceError> {
        let Some(mut p) = self.current.take() else {
            return Ok(());
        };
        let file = self.file;
        let e = |m: String| TraceError::parse(file, Location::Line(0), m);
        let block = p
            .block
            .or_else(|| Dim3::holding(p.max_tid))
            .ok_or_else(|| {
                e(format!(
                    "kernel `{}`: thread index {} is too large",
                    p.key, p.max_tid
                ))
            })?;
        let mut max = Dim3::new(0, 0, 0);
        for c in &p.cta_list {
            max = Dim3::new(max.x.max(c.x), max.y.max(c.y), max.z.max(c.z));
        }
        let grid = Dim3::holding(max)
            .ok_or_else(|| e(format!("kernel `{}`: CTA index {max} is too large", p.key)))?;
        if grid.count().saturating_mul(block.count()) > u32::MAX as u64 {
            return Err(e(format!(
                "kernel `{}`: grid {grid} x block {block} holds more than 2^32 threads",
                p.key
            )));
        }
        super::check_density(grid, block, p.b.len(), p.b.order())
            .map_err(|x| e(format!("kernel `{}`: {x}", p.key)))?;
        let map: Vec<u32> = p
            .thread_list
            .iter()
            .map(|&(ci, t)| {
                (grid.linear(p.cta_list[ci as usize]) * block.count() + block.linear(t)) as u32
            })
            .collect();
        let mut b = p.b;
        b.reshape(grid, block, &map)
            .map_err(|x| e(format!("kernel `{}`: {x}", p.key)))?;
        if b.order() == Order::Issued {
            let mut cta_sm = vec![0u32; grid.count() as usize];
            for (ci, c) in p.cta_list.iter().enumerate() {
                cta_sm[grid.linear(*c) as usize] = p.cta_sm[ci];
            }
            b.info_mut().cta_sm = cta_sm;
        }
        p.cta_sm.clear();
        self.kernels.push(
            b.finish_checked()
                .map_err(|x| e(format!("kernel `{}`: {x}", p.key)))?,
        );
        self.done_keys.insert(p.key);
        Ok(())
    }

    fn finish(mut self, out: &mut dyn KernelSink) -> Result<(), TraceError> {
        self.close()?;
        if self.kernels.is_empty() {
            return Err(TraceError::parse(
                self.file,
                Location::Line(1),
                "the table has no rows",
            ));
        }
        for k in self.kernels.drain(..) {
            out.kernel(k)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::Trace;

    /// A table with two kernels, CTAs and threads interleaved, repeated instructions, barriers,
    /// white-space-only lines (one of them CRLF) and no line end after the last row.
    fn sample(with_sm: bool) -> String {
        let mut s = String::from(if with_sm {
            "kernel,cta_x,thread_x,inst,kind,address,size,space,sm\n"
        } else {
            "kernel,cta_x,thread_x,inst,kind,address,size,space\n"
        });
        let mut x = 12345u64;
        for i in 0..400u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let r = x >> 33;
            let kernel = if i < 250 { "first" } else { "second" };
            let cta = r % 3;
            let thread = (r >> 4) % 5;
            let kind = match (r >> 8) % 7 {
                0 => "barrier",
                1 | 2 => "store",
                _ => "load",
            };
            let inst = format!("i{}", (r >> 12) % 3);
            s.push_str(&format!(
                "{kernel},{cta},{thread},{inst},{kind},0x{:x},4,global",
                64 * i
            ));
            if with_sm {
                s.push_str(&format!(",{}", cta % 2));
            }
            if i + 1 < 400 {
                s.push('\n');
            }
            if i % 37 == 5 {
                s.push_str("\n   \n");
            }
            if i % 91 == 7 {
                s.push_str("\t\r\n");
            }
        }
        s
    }

    fn read(text: &str, chunk: usize) -> Result<Trace, TraceError> {
        let mut t = Trace::default();
        read_csv_chunked(text.as_bytes(), "t.csv", text.len() as u64, chunk, &mut t)?;
        Ok(t)
    }

    /// (CTA, thread, instruction name, instance, address) of one access.
    type Row = (u64, u64, String, u32, u64);

    /// Per kernel: every access, sorted, from a plain reading of the table's lines (instances
    /// counted per thread and instruction).
    fn expected(text: &str) -> Vec<Vec<Row>> {
        let mut kernels: Vec<(String, Vec<Row>)> = Vec::new();
        let mut seen: std::collections::HashMap<(String, u64, u64, String), u32> =
            Default::default();
        for line in text.lines().skip(1).filter(|l| !l.trim().is_empty()) {
            let f: Vec<&str> = line.trim().split(',').collect();
            if kernels.last().is_none_or(|k| k.0 != f[0]) {
                kernels.push((f[0].to_string(), Vec::new()));
            }
            if f[4] == "barrier" {
                continue;
            }
            let (cta, thread) = (f[1].parse().unwrap(), f[2].parse().unwrap());
            let n = seen
                .entry((f[0].to_string(), cta, thread, f[3].to_string()))
                .or_insert(0);
            let addr = u64::from_str_radix(&f[5][2..], 16).unwrap();
            kernels
                .last_mut()
                .unwrap()
                .1
                .push((cta, thread, f[3].to_string(), *n, addr));
            *n += 1;
        }
        kernels
            .into_iter()
            .map(|(_, mut v)| {
                v.sort();
                v
            })
            .collect()
    }

    fn accesses(t: &Trace) -> Vec<Vec<Row>> {
        t.kernels
            .iter()
            .map(|k| {
                let tpb = k.block.count();
                let mut v: Vec<_> = k
                    .accesses()
                    .filter(|a| a.kind != AccessKind::Barrier)
                    .map(|a| {
                        let t = a.thread as u64;
                        let name = k.instructions[a.inst as usize].name.clone();
                        (t / tpb, t % tpb, name, a.dyn_inst, a.addr)
                    })
                    .collect();
                v.sort();
                v
            })
            .collect()
    }

    #[test]
    fn chunk_boundaries_do_not_change_what_is_read() {
        for with_sm in [false, true] {
            let text = sample(with_sm);
            let whole = read(&text, 1 << 20).unwrap();
            assert_eq!(accesses(&whole), expected(&text), "sm column: {with_sm}");
            assert_eq!(whole.kernels.len(), 2);
            for chunk in [1, 2, 37, 64, 500, 4096] {
                assert_eq!(
                    read(&text, chunk).unwrap(),
                    whole,
                    "chunks of {chunk} bytes"
                );
            }
        }
    }

    #[test]
    fn errors_name_the_file_line_across_chunks() {
        let mut text = sample(false);
        // A bad size on a line after several chunks and blank lines.
        let bad_line = text.lines().count() + 1;
        text.push_str("\nsecond,0,0,i0,load,0x40,0,global\n\n");
        for chunk in [1, 37, 500, 1 << 20] {
            let e = read(&text, chunk).unwrap_err().to_string();
            assert!(
                e.contains(&format!("t.csv: line {bad_line}")) && e.contains("size"),
                "chunks of {chunk}: {e}"
            );
        }
    }

    #[test]
    fn instances_are_numbered_in_sparse_issued_kernels() {
        // Few rows, a large block, and an `sm` column: issue order, numbered by sorting.
        let text = "cta_x,thread_x,inst,address,sm\n0,4000,a,0x0,0\n0,3,a,0x4,0\n0,4000,a,0x8,0\n0,3,b,0xc,0\n0,4000,a,0x10,0\n";
        let t = read(text, 1 << 20).unwrap();
        let k = &t.kernels[0];
        assert_eq!(k.order, Order::Issued);
        let got: Vec<(u32, u32)> = k.accesses().map(|a| (a.thread, a.dyn_inst)).collect();
        assert_eq!(got, vec![(4000, 0), (3, 0), (4000, 1), (3, 0), (4000, 2)]);
    }
}
