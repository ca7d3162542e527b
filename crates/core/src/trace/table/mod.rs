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
use chunks::{Chunks, CsvChunks, ParquetChunks, CHUNK_BYTES};

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
    r: R,
    file: &str,
    size_hint: u64,
    chunk_bytes: usize,
    out: &mut dyn KernelSink,
) -> Result<(), TraceError> {
    let mut st = State::new(file);
    CsvChunks::new(r, file, size_hint, chunk_bytes)?
        .each(&mut |df, after, at| st.ingest(df, after, at))?;
    st.finish(out)
}

/// Reads a Parquet table (it needs a seekable file, so it is opened here, not streamed).
/// `watch` is told of the file's bytes as its rows are read ([`ParquetChunks`]).
pub(crate) fn read_parquet(
    path: &Path,
    file: &str,
    watch: &dyn Fn(super::source::Stream) -> super::source::Stream,
    out: &mut dyn KernelSink,
) -> Result<(), TraceError> {
    let mut st = State::new(file);
    ParquetChunks::new(path, file, watch)?.each(&mut |df, after, at| st.ingest(df, after, at))?;
    st.finish(out)
}

/// Runs a call into polars' Parquet reader, which can panic on corrupt metadata (found by
/// fuzzing): a panic there is reported as an unreadable file, like its errors.
pub(crate) fn guarded<T>(
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
    /// Rows counted (a first pass keeps none in `b`).
    rows: u64,
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
    /// The CTA and thread of the previous row, and whether every row so far came in order of
    /// CTA and thread (as a grid and block number them: by z, then y, then x).
    last_row: Option<(Dim3, Dim3)>,
    grouped: bool,
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
    /// Keep the rows (a whole read), or count them (a first pass).
    keep: bool,
    current: Option<Pending>,
    done_keys: rustc_hash::FxHashSet<String>,
    kernels: Vec<super::Kernel>,
    plans: Vec<rows::Plan>,
}

mod chunks;
mod columns;
mod decode;
mod rows;
mod stream;

pub(crate) use stream::{stream_csv, stream_parquet};

/// The CSV reader (polars): whole, or read twice and handed on CTA by CTA (sorted on disk,
/// or in issue order with an `sm` column).
pub(crate) struct CsvReader;

impl super::reader::TraceReader for CsvReader {
    fn read(
        &self,
        r: super::reader::Input,
        cx: &super::Ctx<'_>,
        out: &mut dyn KernelSink,
    ) -> Result<(), TraceError> {
        read_csv(r, cx.file, cx.file_bytes, out)
    }
    fn stream(
        &self,
        r: super::reader::Input,
        cx: &super::Ctx<'_>,
        out: &mut dyn super::CtaSink,
    ) -> Result<(), TraceError> {
        stream_csv(r, cx, out)
    }
    fn streamed_reads(&self, _as_found: bool) -> u64 {
        2
    }
    fn sorts_to_stream(&self) -> bool {
        true
    }
}

/// The Parquet reader (polars), from the file itself (it seeks): as the CSV reader.
pub(crate) struct ParquetReader;

impl super::reader::TraceReader for ParquetReader {
    fn read(
        &self,
        _r: super::reader::Input,
        cx: &super::Ctx<'_>,
        out: &mut dyn KernelSink,
    ) -> Result<(), TraceError> {
        read_parquet(cx.path, cx.file, cx.watch, out)
    }
    fn stream(
        &self,
        _r: super::reader::Input,
        cx: &super::Ctx<'_>,
        out: &mut dyn super::CtaSink,
    ) -> Result<(), TraceError> {
        stream_parquet(cx.path, cx.file, cx.watch, out)
    }
    fn streamed_reads(&self, _as_found: bool) -> u64 {
        2
    }
    fn sorts_to_stream(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::Trace;

    /// A table with two kernels, CTAs and threads interleaved, repeated instructions, barriers,
    /// white-space-only lines (one of them CRLF) and no line end after the last row.
    pub(super) fn sample(with_sm: bool) -> String {
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
