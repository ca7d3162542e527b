use super::*;
use crate::trace::sink::{Assemble, Counting};
use crate::trace::Trace;

/// A table of several kernels with 2-D CTAs, warps and lanes, program counters, barriers,
/// rows of CTAs and threads interleaved; with an `sm` column (issue order) or not, with a
/// `dyn` column or not.
fn rich(seed: u64, with_sm: bool, with_dyn: bool) -> String {
    let mut s = String::from("kernel,cta_x,cta_y,warp,lane,inst,pc,kind,space,address,size");
    if with_dyn {
        s.push_str(",dyn");
    }
    if with_sm {
        s.push_str(",sm");
    }
    s.push('\n');
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for (k, rows) in ["first", "second", "third"].iter().zip([300u64, 40, 500]) {
        for _ in 0..rows {
            let r = next();
            let (cx, cy) = (r % 4, (r >> 3) % 3);
            let (warp, lane) = ((r >> 6) % 3, (r >> 9) % 32);
            let inst = (r >> 15) % 4;
            let kind =
                ["load", "store", "barrier", "atom.add", "ld", "load"][(r >> 18) as usize % 6];
            let space = ["global", "shared", "", "global"][(r >> 22) as usize % 4];
            s.push_str(&format!(
                "{k},{cx},{cy},{warp},{lane},i{inst},{},{kind},{space},0x{:x},{}",
                0x100 + 8 * inst,
                (r >> 24) % 100_000,
                [4, 8, 16][(r >> 40) as usize % 3]
            ));
            if with_dyn {
                s.push_str(&format!(",{}", (r >> 44) % 9));
            }
            if with_sm {
                s.push_str(&format!(",{}", (cx + cy) % 3));
            }
            s.push('\n');
        }
    }
    s
}

/// `text` with each kernel's rows in order of CTA and thread (stably), as a table written
/// CTA by CTA is: read without a sort.
fn grouped(text: &str) -> String {
    let mut lines = text.lines();
    let head = lines.next().unwrap();
    let mut rows: Vec<(usize, [u64; 3], &str)> = Vec::new();
    let mut kernels: Vec<&str> = Vec::new();
    for l in lines {
        let f: Vec<&str> = l.split(',').collect();
        if kernels.last() != Some(&f[0]) {
            kernels.push(f[0]);
        }
        let n = |i: usize| f[i].parse::<u64>().unwrap();
        rows.push((kernels.len(), [n(2), n(1), n(3) * 32 + n(4)], l));
    }
    rows.sort_by_key(|r| (r.0, r.1));
    let body: Vec<&str> = rows.iter().map(|r| r.2).collect();
    format!("{head}\n{}\n", body.join("\n"))
}

fn whole(text: &str) -> Trace {
    let mut t = Trace::default();
    read_csv_chunked(text.as_bytes(), "t.csv", text.len() as u64, 1 << 20, &mut t).unwrap();
    t
}

/// A temporary file holding `text`.
fn file(text: &str) -> tempfile::NamedTempFile {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    std::io::Write::write_all(&mut f, text.as_bytes()).unwrap();
    f
}

/// Streams `first` (as if it were the file at `path`, which the second pass opens) in chunks
/// of `chunk` bytes and a sort of `cap` rows; returns the trace built from the pieces, or the
/// error and how many kernels had been begun or handed on before it.
fn streamed(
    first: &str,
    path: &Path,
    file_bytes: u64,
    chunk: usize,
    cap: usize,
) -> Result<Trace, (TraceError, usize)> {
    let mut t = Trace::default();
    let mut assemble = Assemble::new(&mut t);
    let mut counting = Counting {
        inner: &mut assemble,
        kernels: 0,
    };
    let ctx = crate::trace::testing::file_ctx("t.csv", path, file_bytes);
    let result = stream_csv_sized(first.as_bytes(), &ctx, chunk, cap, &mut counting);
    let handed = counting.kernels;
    match result {
        Ok(()) => Ok(t),
        Err(e) => Err((e, handed)),
    }
}

#[test]
fn streamed_tables_equal_the_whole_read() {
    let mut cases: Vec<String> = [false, true]
        .iter()
        .map(|&sm| super::super::tests::sample(sm))
        .collect();
    for seed in 1..4 {
        for (sm, dy) in [(false, false), (true, false), (false, true), (true, true)] {
            cases.push(rich(seed, sm, dy));
        }
        cases.push(grouped(&rich(seed, false, false)));
        cases.push(grouped(&rich(seed, false, true)));
    }
    for text in &cases {
        let want = whole(text);
        let f = file(text);
        for chunk in [61, 1000, 1 << 20] {
            // A buffer of 1 row spills every row; 50 makes several runs; 2^20 sorts in memory.
            for cap in [1, 50, 1 << 20] {
                let got = streamed(text, f.path(), text.len() as u64, chunk, cap)
                    .map_err(|e| e.0)
                    .unwrap();
                assert_eq!(
                    got, want,
                    "chunks of {chunk} bytes, sort of {cap} rows:\n{text}"
                );
            }
        }
        // A pipe is read whole, with the same result.
        let got = streamed(text, Path::new("/nonexistent"), 0, 1000, 50)
            .map_err(|e| e.0)
            .unwrap();
        assert_eq!(got, want);
    }
}

/// The scan runs ahead of the rows handed on: an error is found before any row of its kernel
/// (or of a later one) is, and only kernels scanned whole before it have been begun.
#[test]
fn an_error_is_found_before_any_row_of_its_kernel_is_handed_on() {
    // Line 9 names a fourth kind of access; a later kernel repeats an earlier one's name.
    let mut text = rich(7, false, false)
        .lines()
        .take(8)
        .collect::<Vec<_>>()
        .join("\n");
    text.push_str("\nfirst,0,0,0,1,i0,256,prefetch,global,0x40,4\n");
    let f = file(&text);
    let (e, handed) = streamed(&text, f.path(), text.len() as u64, 100, 4).unwrap_err();
    assert!(
        e.to_string().contains("t.csv: line 9") && e.to_string().contains("prefetch"),
        "{e}"
    );
    assert_eq!(handed, 0);
    let text = "kernel,address\na,0x0\nb,0x4\na,0x8\n";
    let f = file(text);
    // In one chunk, nothing is handed on; a line a chunk, kernel `a` is, once `b` begins.
    for (chunk, begun) in [(100, 0), (5, 1)] {
        let (e, handed) = streamed(text, f.path(), text.len() as u64, chunk, 4).unwrap_err();
        assert!(
            e.to_string().contains("line 4") && e.to_string().contains("appears again"),
            "{e}"
        );
        assert_eq!(handed, begun, "chunks of {chunk} bytes");
    }
}

#[test]
fn a_file_that_changes_between_the_reads_is_an_error() {
    // The second read opens another table: other instructions, an extra kernel, fewer rows,
    // an `sm` column; and a table in issue order whose CTAs ran on other SMs.
    let (text, issued) = (rich(3, false, false), rich(3, true, false));
    for (first, other) in [
        (&text, text.replace("i1,", "i9,")),
        (
            &text,
            format!("{text}fourth,0,0,0,0,i0,256,load,global,0x40,4\n"),
        ),
        (&text, text.lines().take(200).collect::<Vec<_>>().join("\n")),
        (&text, issued.clone()),
        (&issued, issued.replace(",0\n", ",9\n")),
    ] {
        assert_ne!(&other, first);
        let f = file(&other);
        let (e, _) = streamed(first, f.path(), first.len() as u64, 1000, 50).unwrap_err();
        assert!(
            e.to_string().contains("the file changed while it was read"),
            "{e}"
        );
    }
}

/// A read that fails, as a cancelled job's watch makes them.
struct FailingRead;

impl std::io::Read for FailingRead {
    fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
        Err(std::io::Error::other("cancelled"))
    }
}

#[test]
fn streamed_parquet_equals_the_whole_read_and_tells_the_watch_of_its_bytes() {
    use polars::prelude::*;
    for (sm, dy) in [(false, false), (true, true)] {
        let text = rich(5, sm, dy);
        let mut df = CsvReadOptions::default()
            .with_has_header(true)
            .into_reader_with_file_handle(std::io::Cursor::new(text.as_bytes()))
            .finish()
            .unwrap();
        let f = tempfile::NamedTempFile::new().unwrap();
        ParquetWriter::new(std::fs::File::create(f.path()).unwrap())
            .with_row_group_size(Some(64))
            .finish(&mut df)
            .unwrap();
        // What the watch is told: each read's bytes, as the rows are read.
        let told = std::sync::atomic::AtomicU64::new(0);
        let watch = |s: source::Stream| -> source::Stream {
            let mut n = 0;
            for b in std::io::Read::bytes(s) {
                b.unwrap();
                n += 1;
            }
            told.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
            Box::new(std::io::empty())
        };
        let size = std::fs::metadata(f.path()).unwrap().len();
        let mut want = Trace::default();
        read_parquet(f.path(), "t.parquet", &watch, &mut want).unwrap();
        assert_eq!(want, whole(&text));
        assert_eq!(told.swap(0, std::sync::atomic::Ordering::Relaxed), size);
        let mut got = Trace::default();
        stream_parquet(f.path(), "t.parquet", &watch, &mut Assemble::new(&mut got)).unwrap();
        assert_eq!(got, want);
        // Read twice.
        assert_eq!(told.load(std::sync::atomic::Ordering::Relaxed), 2 * size);
        // A watch that fails (a cancelled job's) stops the read.
        let cancel = |_: source::Stream| -> source::Stream { Box::new(FailingRead) };
        let e = read_parquet(f.path(), "t.parquet", &cancel, &mut Trace::default()).unwrap_err();
        assert!(e.to_string().contains("cancelled"), "{e}");
    }
}

/// Streams `text`, which the file at `path` holds too (the second pass opens it), in chunks
/// of 1000 bytes and a sort of 50 rows, counting into `read` the bytes the first pass reads.
fn stream_counted(
    text: &str,
    path: &Path,
    read: &std::sync::Arc<std::sync::atomic::AtomicU64>,
    out: &mut dyn CtaSink,
) -> Result<(), TraceError> {
    let ahead = std::io::BufReader::with_capacity(
        64,
        crate::trace::testing::CountedReader {
            inner: text.as_bytes(),
            read: read.clone(),
        },
    );
    let ctx = crate::trace::testing::file_ctx("t.csv", path, text.len() as u64);
    stream_csv_sized(ahead, &ctx, 1000, 50, out)
}

/// The first kernel begins once it is scanned, not the whole file: the scan's reader is at
/// most the first kernel and a chunk into the file.
#[test]
fn the_first_kernel_begins_after_its_own_scan() {
    use crate::trace::testing::{FirstBegin, Pieces};
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    for text in [
        rich(5, false, false),
        rich(5, true, false),
        grouped(&rich(5, false, true)),
    ] {
        let f = file(&text);
        let read = Arc::new(AtomicU64::new(0));
        let mut sink = FirstBegin {
            pieces: Pieces::default(),
            read: read.clone(),
            at_first: None,
        };
        stream_counted(&text, f.path(), &read, &mut sink).unwrap();
        assert_eq!(sink.pieces.trace, whole(&text));
        // The first of three kernels is 300 of 840 rows.
        let (at, len) = (sink.at_first.unwrap(), text.len() as u64);
        assert!(at < len / 2, "{at} of {len}");
        assert_eq!(read.load(Ordering::Relaxed), len);
    }
}

/// A Parquet table of many kernels over several chunks of rows: read in lock-step, it gives
/// the whole read's kernels, and the first begins once its own chunks are scanned.
#[test]
fn streamed_parquet_of_many_chunks_equals_the_whole_read_and_starts_early() {
    use crate::trace::testing::{FirstBegin, Pieces};
    use polars::prelude::*;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    // 10 kernels of 80,000 rows: four chunks of 2^18 rows, kernels ending inside them.
    let rows = 800_000u64;
    let kernel: Vec<String> = (0..rows).map(|i| format!("k{}", i / 80_000)).collect();
    let cta: Vec<u64> = (0..rows).map(|i| i % 80_000 / 256).collect();
    let thread: Vec<u64> = (0..rows).map(|i| i % 256).collect();
    let address: Vec<u64> = (0..rows)
        .map(|i| 0x1000 + 4 * (i % 80_000) + i / 80_000)
        .collect();
    let mut df = DataFrame::new_infer_height(vec![
        Column::new("kernel".into(), kernel),
        Column::new("cta_x".into(), cta),
        Column::new("thread_x".into(), thread),
        Column::new("address".into(), address),
    ])
    .unwrap();
    let f = tempfile::NamedTempFile::new().unwrap();
    ParquetWriter::new(std::fs::File::create(f.path()).unwrap())
        .finish(&mut df)
        .unwrap();
    let size = std::fs::metadata(f.path()).unwrap().len();
    let told = Arc::new(AtomicU64::new(0));
    let counted = told.clone();
    let watch = move |s: source::Stream| -> source::Stream {
        let n = std::io::copy(&mut { s }, &mut std::io::sink()).unwrap();
        counted.fetch_add(n, Ordering::Relaxed);
        Box::new(std::io::empty())
    };
    let mut want = Trace::default();
    read_parquet(f.path(), "t.parquet", &|s| s, &mut want).unwrap();
    assert_eq!(want.kernels.len(), 10);
    let mut sink = FirstBegin {
        pieces: Pieces::default(),
        read: told.clone(),
        at_first: None,
    };
    stream_parquet(f.path(), "t.parquet", &watch, &mut sink).unwrap();
    assert_eq!(sink.pieces.trace, want);
    assert_eq!(told.load(Ordering::Relaxed), 2 * size);
    // Scanned whole first, the first kernel would begin at `size`; here after two chunks.
    let at = sink.at_first.unwrap();
    assert!(at * 4 < size * 3, "{at} of {size}");
}

/// Records how many bytes the scan had read when each kernel ended, and passes everything on.
struct Ends {
    pieces: crate::trace::testing::Pieces,
    read: std::sync::Arc<std::sync::atomic::AtomicU64>,
    at: Vec<u64>,
}

impl crate::trace::KernelSink for Ends {
    fn kernel(&mut self, k: crate::trace::Kernel) -> Result<(), TraceError> {
        self.pieces.kernel(k)
    }
}

impl CtaSink for Ends {
    fn begin_kernel(&mut self, header: &crate::trace::Kernel) -> Result<(), TraceError> {
        self.pieces.begin_kernel(header)
    }
    fn cta(&mut self, cta: u32, rows: &Columns) -> Result<(), TraceError> {
        self.pieces.cta(cta, rows)
    }
    fn issued(&mut self, rows: &Columns) -> Result<(), TraceError> {
        self.pieces.issued(rows)
    }
    fn end_kernel(&mut self) -> Result<(), TraceError> {
        self.at
            .push(self.read.load(std::sync::atomic::Ordering::Relaxed));
        self.pieces.end_kernel()
    }
}

/// A kernel ends as soon as the scan meets the next one's first row: its last rows do not
/// wait for the next kernel's scan to end. A small kernel before a large one ends a chunk
/// after its own end, not after the large one's.
#[test]
fn a_kernel_ends_once_its_own_scan_ends() {
    use crate::trace::testing::Pieces;
    use std::sync::atomic::AtomicU64;
    use std::sync::Arc;
    for with_sm in [false, true] {
        let mut text = String::from("kernel,cta_x,thread_x,address");
        text += if with_sm { ",sm\n" } else { "\n" };
        for (k, rows) in [("small", 60u64), ("large", 3000), ("last", 60)] {
            for i in 0..rows {
                text += &format!("{k},{},{},0x{:x}", i / 64 % 4, i % 64, 0x1000 + 4 * i);
                text += &if with_sm {
                    format!(",{}\n", i / 64 % 4 % 2)
                } else {
                    "\n".into()
                };
            }
        }
        let f = file(&text);
        let read = Arc::new(AtomicU64::new(0));
        let mut sink = Ends {
            pieces: Pieces::default(),
            read: read.clone(),
            at: Vec::new(),
        };
        stream_counted(&text, f.path(), &read, &mut sink).unwrap();
        let ctx = crate::trace::testing::file_ctx("t.csv", f.path(), text.len() as u64);
        assert_eq!(sink.pieces.trace, whole(&text));
        let len = text.len() as u64;
        // The small kernel is 60 of 3120 rows: it ends within a few chunks of 1000 bytes.
        assert_eq!(sink.at.len(), 3);
        assert!(sink.at[0] < len / 10, "{:?} of {len}", sink.at);
        assert!(sink.at[1] < len, "{:?} of {len}", sink.at);
        // Line 70, a row of the large kernel in the chunk where the small one ends (held
        // until the large one is planned), is outside the grid at the second read: the
        // error names it.
        let mut lines: Vec<String> = text.lines().map(String::from).collect();
        lines[69] = lines[69].replacen(",0,", ",9,", 1);
        assert!(lines[69].starts_with("large,9,"), "{}", lines[69]);
        std::fs::write(f.path(), lines.join("\n") + "\n").unwrap();
        let e = stream_csv_sized(text.as_bytes(), &ctx, 1000, 50, &mut Pieces::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 70") && e.contains("changed"), "{e}");
    }
}
