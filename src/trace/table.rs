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
use super::model::{Access, AccessKind, AtomicOp, Dim3, KernelBuilder, MemSpace, Order, Trace};
use super::{Location, TraceError};

/// Rows handed to polars at a time.
const CHUNK_ROWS: usize = 1 << 18;

/// Reads a CSV table from a stream, a chunk of lines at a time.
pub(crate) fn read_csv<R: BufRead>(
    mut r: R,
    file: &str,
    trace: &mut Trace,
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
    let mut lines_of: Vec<u64> = Vec::with_capacity(CHUNK_ROWS);
    loop {
        // A chunk of non-blank lines after the header, and the file line of each.
        let mut buf = header.clone();
        lines_of.clear();
        while lines_of.len() < CHUNK_ROWS {
            let before = buf.len();
            if r.read_until(b'\n', &mut buf).map_err(io)? == 0 {
                break;
            }
            if buf[before..].iter().all(|c| c.is_ascii_whitespace()) {
                buf.truncate(before);
            } else {
                lines_of.push(next_line);
            }
            next_line += 1;
        }
        let (Some(&line), rows) = (lines_of.first(), lines_of.len()) else {
            break;
        };
        use polars::prelude::SerReader;
        let df = polars::prelude::CsvReadOptions::default()
            .with_has_header(true)
            .into_reader_with_file_handle(std::io::Cursor::new(buf))
            .finish()
            .map_err(|e| {
                TraceError::parse(
                    file,
                    Location::Line(line),
                    format!("in the {rows} lines from here: {e}"),
                )
            })?;
        st.ingest(&df, |i| Location::Line(lines_of[i]))?;
    }
    st.finish(trace)
}

/// Reads a Parquet table (it needs a seekable file, so it is opened here, not streamed).
pub(crate) fn read_parquet(path: &Path, file: &str, trace: &mut Trace) -> Result<(), TraceError> {
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
        st.ingest(&df, |i| Location::Row((start + i) as u64))?;
        start += n;
    }
    st.finish(trace)
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
    /// `thread id << 32 | instruction` -> occurrences so far (without a `dyn` column).
    occurrences: FxHashMap<u64, u32>,
}

/// Thread indices `(x, 0, 0)` below this are looked up in a vector, not a map.
const DENSE_X: u32 = 1024;

impl CtaRows {
    /// The provisional id of thread `t`, which becomes `next` if it is new.
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

/// A column as numbers (integers or decimal/`0x` strings), or `None` when absent.
fn numbers(
    df: &polars::prelude::DataFrame,
    name: &str,
    at: &dyn Fn(usize) -> Location,
    file: &str,
) -> Result<Option<Vec<u64>>, TraceError> {
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
    let s = col.as_materialized_series();
    let perr = |e: PolarsError| TraceError::parse(file, at(0), format!("column `{name}`: {e}"));
    if s.dtype() == &DataType::UInt64 {
        return s
            .u64()
            .map_err(perr)?
            .iter()
            .enumerate()
            .map(|(i, v)| v.ok_or_else(|| bad(i, "")))
            .collect::<Result<Vec<u64>, _>>()
            .map(Some);
    }
    if s.dtype().is_integer() {
        let c = s.cast(&DataType::Int64).map_err(perr)?;
        return c
            .i64()
            .map_err(perr)?
            .iter()
            .enumerate()
            .map(|(i, v)| match v {
                Some(v) => u64::try_from(v).map_err(|_| bad(i, &v.to_string())),
                None => Err(bad(i, "")),
            })
            .collect::<Result<Vec<u64>, _>>()
            .map(Some);
    }
    let c = s
        .cast(&DataType::String)
        .map_err(|e| TraceError::parse(file, at(0), e.to_string()))?;
    let c = c
        .str()
        .map_err(|e| TraceError::parse(file, at(0), e.to_string()))?;
    c.iter()
        .enumerate()
        .map(|(i, v)| {
            let v = v.unwrap_or("").trim();
            let parsed = match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
                Some(h) => lex::hex(h.as_bytes()),
                None => lex::dec(v.as_bytes()),
            };
            parsed.ok_or_else(|| bad(i, v))
        })
        .collect::<Result<Vec<u64>, _>>()
        .map(Some)
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
    let mut last: Option<(&str, u32)> = None;
    let code = c
        .iter()
        .map(|v| {
            let v = v.unwrap_or("").trim();
            // Runs of one value (a kernel name, a space) skip the hash.
            if let Some(l) = last.filter(|l: &(&str, u32)| l.0 == v) {
                return l.1;
            }
            let code = *index.entry(v).or_insert_with(|| {
                values.push(v.to_string());
                values.len() as u32 - 1
            });
            last = Some((v, code));
            code
        })
        .collect();
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

    fn ingest(
        &mut self,
        df: &polars::prelude::DataFrame,
        at: impl Fn(usize) -> Location,
    ) -> Result<(), TraceError> {
        let file = self.file;
        let n = df.height();
        let at: &dyn Fn(usize) -> Location = &at;
        let err = |i: usize, m: String| TraceError::parse(file, at(i), m);
        let num = |name: &str| numbers(df, name, at, file);
        let addr =
            num("address")?.ok_or_else(|| err(0, "the table has no `address` column".into()))?;
        let u32col = |name: &str| -> Result<Option<Vec<u32>>, TraceError> {
            match num(name)? {
                None => Ok(None),
                Some(v) => v
                    .into_iter()
                    .enumerate()
                    .map(|(i, x)| {
                        u32::try_from(x).map_err(|_| {
                            err(i, format!("column `{name}`: {x} does not fit in 32 bits"))
                        })
                    })
                    .collect::<Result<Vec<u32>, _>>()
                    .map(Some),
            }
        };
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
        // The kernel code of the previous row of this chunk (`None` at the start, or without
        // a kernel column: then every row is of the current kernel).
        let mut kernel_code: Option<u32> = None;
        let pick = |c: &Option<Vec<u32>>, i: usize| c.as_ref().map_or(0, |v| v[i]);
        for i in 0..n {
            let code = kernel.as_ref().map(|k| k.code[i]);
            let same = self.current.is_some() && i > 0 && kernel_code == code;
            let key = match (&kernel, code) {
                (Some(k), Some(c)) => k.values[c as usize].as_str(),
                _ => "",
            };
            if !same && self.current.as_ref().is_none_or(|p| p.key != key) {
                let key = key.to_string();
                if self.done_keys.contains(&key) {
                    return Err(err(i, format!("kernel `{key}` appears again after other kernels: a kernel's rows must be contiguous")));
                }
                self.close()?;
                let order = if sm.is_some() {
                    Order::Issued
                } else {
                    Order::PerThread
                };
                // Provisional shape: one CTA row per dense CTA id, threads dense within.
                let b = KernelBuilder::new(
                    if key.is_empty() {
                        "kernel".to_string()
                    } else {
                        key.clone()
                    },
                    Dim3::x(1 << 16),
                    Dim3::x((1 << 16) - 1),
                    order,
                )
                .map_err(|e| err(i, e.to_string()))?;
                self.current = Some(Pending {
                    key: key.clone(),
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
            kernel_code = code;
            let Some(p) = self.current.as_mut() else {
                continue;
            };
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
            if block.iter().any(Option::is_some) {
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
                            format!("block size {bl} differs from {prev} earlier in the kernel"),
                        ))
                    }
                    _ => {}
                }
                if !bl.contains(t) {
                    return Err(err(i, format!("thread {t} is outside the block {bl}")));
                }
            }
            p.max_tid = Dim3::new(
                p.max_tid.x.max(t.x),
                p.max_tid.y.max(t.y),
                p.max_tid.z.max(t.z),
            );
            let ci = match p
                .last_cta
                .filter(|l| l.0 == c)
                .or_else(|| p.ctas.get(&c).map(|&ci| (c, ci)))
            {
                Some((_, ci)) => ci,
                None => {
                    let ci = p.cta_list.len() as u32;
                    if ci >= 1 << 16 {
                        return Err(err(i, "more than 65536 CTAs in one kernel".into()));
                    }
                    p.ctas.insert(c, ci);
                    p.cta_list.push(c);
                    p.cta_rows.push(CtaRows::default());
                    p.cta_sm.push(sm.as_ref().map_or(0, |s| s[i]));
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
            p.last_cta = Some((c, ci));
            let rows = &mut p.cta_rows[ci as usize];
            let thread = rows.thread(t, next);
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
            let (inst_id, dyn_inst, sz) = if k == AccessKind::Barrier {
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
                let d = match &dyn_col {
                    Some(d) => d[i],
                    None => {
                        let occ = p.cta_rows[ci as usize]
                            .occurrences
                            .entry(u64::from(thread) << 32 | u64::from(id))
                            .or_insert(0);
                        *occ += 1;
                        *occ - 1
                    }
                };
                let sz = match &size {
                    Some(s) => u16::try_from(s[i]).ok().filter(|&z| z > 0).ok_or_else(|| {
                        err(
                            i,
                            format!("column `size`: expected 1 to 65535 bytes, found {}", s[i]),
                        )
                    })?,
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

    fn finish(mut self, trace: &mut Trace) -> Result<(), TraceError> {
        self.close()?;
        if self.kernels.is_empty() {
            return Err(TraceError::parse(
                self.file,
                Location::Line(1),
                "the table has no rows",
            ));
        }
        trace.kernels.append(&mut self.kernels);
        Ok(())
    }
}
