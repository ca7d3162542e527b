//! Dinero IV trace input (`din`), so that our cache model can be checked against Dinero.
//!
//! Two line formats are accepted, mixed freely:
//! - traditional: `LABEL ADDRESS [ignored...]` with a hex label (0 read, 1 write, 2 instruction
//!   fetch, 3 misc) and a hex address; like Dinero, the address is word-aligned (`& !3`) and the
//!   size is 4 bytes;
//! - extended: `TYPE ADDRESS SIZE` with TYPE one of `r w i m`, hex address and hex size.
//!
//! Instruction fetches and misc references are reads of a unified cache. Dinero's copy-back
//! and invalidate records (label 4/5, `c`/`v`) have no meaning for a GPU L1 and are rejected.
//! The result is one kernel of one thread in [`Order::Issued`], replayed in file order.

use super::model::{
    Access, AccessKind, Columns, Dim3, Kernel, KernelBuilder, MemSpace, Order, Trace,
};
use super::{Location, TraceError};
use std::io::BufRead;

use crate::config::choice::{Entry, Form};

/// This format in the registry of [`super::Format`] (see `config::choice`).
pub const ENTRY: Entry<super::Format> = Entry {
    name: "din",
    aliases: &[],
    label: "Dinero IV din",
    description: "Dinero IV traditional or extended din text, one reference per line",
    form: Form::Plain(super::Format::Din),
};

/// Reads a Dinero `din` trace.
pub fn read<R: BufRead>(r: R, file: &str) -> Result<Trace, TraceError> {
    read_sized(r, file, 0)
}

/// Reads a Dinero `din` trace whose length in bytes is about `size_hint` (0 if unknown), so
/// that the columns can be reserved once instead of grown.
pub fn read_sized<R: BufRead>(r: R, file: &str, size_hint: u64) -> Result<Trace, TraceError> {
    let mut b = builder().map_err(|e| TraceError::parse(file, Location::Line(0), e))?;
    // A din line is at least 4 bytes ("0 0\n"); typical ones are 10 to 20.
    b.reserve((size_hint / 12).min(1 << 28) as usize);
    let mut reader = Reader::new(r, file);
    let mut chunk = Columns::default();
    while reader.next_chunk(&mut chunk, 1 << 16)? {
        for i in 0..chunk.len() {
            let (kind, space) = super::model_flags(chunk.flags[i]);
            b.push(Access {
                thread: 0,
                inst: chunk.inst[i],
                dyn_inst: chunk.dyn_inst[i],
                addr: chunk.addr[i],
                size: chunk.size[i],
                kind,
                space,
            })
            .map_err(|e| TraceError::parse(file, Location::Line(reader.line_no), e.to_string()))?;
        }
    }
    Ok(Trace {
        kernels: vec![b.finish()],
    })
}

/// The instructions of a din trace's kernel, by label: read, write, instruction fetch, misc.
const INSTRUCTIONS: [&str; 4] = ["read", "write", "ifetch", "misc"];

fn builder() -> Result<KernelBuilder, String> {
    let mut b = KernelBuilder::new("din", Dim3::x(1), Dim3::x(1), Order::Issued)
        .map_err(|e| e.to_string())?;
    for name in INSTRUCTIONS {
        b.instruction(name, None);
    }
    Ok(b)
}

/// The kernel a din trace is, without its rows: one thread in issue order, one instruction
/// per label. A streamed run starts with it ([`crate::sim::Session::begin_stream`]).
pub fn header(file: &str) -> Result<Kernel, TraceError> {
    builder()
        .map(KernelBuilder::finish)
        .map_err(|e| TraceError::parse(file, Location::Line(0), e))
}

/// Reads a din trace a chunk of rows at a time, so that a trace of any length is simulated
/// in bounded memory. Lines are parsed in place in the reader's buffer; only a line split
/// across two buffer fills is copied.
pub struct Reader<R> {
    r: R,
    file: String,
    line_no: u64,
    carry: Vec<u8>,
    /// Each reference is its own dynamic instance, so no two are grouped as one warp
    /// instruction.
    occurrences: [u32; 4],
    bytes: u64,
    done: bool,
}

/// Where a [`Reader`] stands between two chunks: enough to read on from there in a new reader
/// ([`Reader::resumed`]) over the same file opened at `offset`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Resume {
    /// Bytes of the file before the next line.
    pub offset: u64,
    /// Lines before it.
    pub line_no: u64,
    /// References of each label so far (their instance numbers).
    occurrences: [u32; 4],
}

/// A reader of the file at `path` (named `file` in errors) that goes on from `at`, where a
/// reader of it stood; `watch` sees the bytes read from the file (as for
/// [`super::source::open`]). An uncompressed file is read from `at.offset` on; a compressed
/// one is decompressed from its start and the bytes before `at.offset` are skipped, far
/// faster than simulating their references again.
pub fn reader_at(
    path: &std::path::Path,
    file: &str,
    at: Resume,
    watch: &dyn Fn(super::source::Stream) -> super::source::Stream,
) -> Result<Reader<Box<dyn BufRead + Send>>, TraceError> {
    let r = super::source::reopen_at(path, file, at.offset, watch)?;
    Ok(Reader::resumed(r, file, at))
}

impl<R: BufRead> Reader<R> {
    pub fn new(r: R, file: &str) -> Self {
        Reader {
            r,
            file: file.to_string(),
            line_no: 0,
            carry: Vec::new(),
            occurrences: [0; 4],
            bytes: 0,
            done: false,
        }
    }

    /// Bytes of the (decompressed) input consumed so far.
    pub fn bytes_read(&self) -> u64 {
        self.bytes
    }

    /// Where this reader stands: the start of the line it has not finished.
    pub fn resume_point(&self) -> Resume {
        Resume {
            offset: self.bytes - self.carry.len() as u64,
            line_no: self.line_no,
            occurrences: self.occurrences,
        }
    }

    /// A reader that goes on from `at` in `r`, the same input opened at `at.offset`: it gives
    /// the rows, line numbers and errors the reader that stood at `at` would have given.
    pub fn resumed(r: R, file: &str, at: Resume) -> Self {
        Reader {
            line_no: at.line_no,
            occurrences: at.occurrences,
            bytes: at.offset,
            ..Reader::new(r, file)
        }
    }

    /// Replaces `out` with the next rows, at least `max_rows` of them unless the input ends
    /// first (a buffer's last lines may add a few more); returns `false` when there are none.
    /// The rows use the instruction ids of [`header`].
    pub fn next_chunk(&mut self, out: &mut Columns, max_rows: usize) -> Result<bool, TraceError> {
        out.clear();
        while out.len() < max_rows && !self.done {
            self.fill(out, max_rows)?;
        }
        Ok(!out.is_empty())
    }

    /// Parses what one buffer fill holds (or up to `max_rows` rows of it).
    fn fill(&mut self, out: &mut Columns, max_rows: usize) -> Result<(), TraceError> {
        let file = self.file.as_str();
        let buf = self.r.fill_buf().map_err(|e| TraceError::io(file, e))?;
        if buf.is_empty() {
            self.done = true;
            if !self.carry.is_empty() {
                self.line_no += 1;
                let carry = std::mem::take(&mut self.carry);
                line(&mut self.occurrences, out, &carry, file, self.line_no)?;
            }
            return Ok(());
        }
        let mut start = 0;
        if !self.carry.is_empty() {
            match memchr::memchr(b'\n', buf) {
                Some(nl) => {
                    self.carry.extend_from_slice(&buf[..=nl]);
                    self.line_no += 1;
                    line(&mut self.occurrences, out, &self.carry, file, self.line_no)?;
                    self.carry.clear();
                    start = nl + 1;
                }
                None => {
                    self.carry.extend_from_slice(buf);
                    let n = buf.len();
                    self.bytes += n as u64;
                    self.r.consume(n);
                    return Ok(());
                }
            }
        }
        while out.len() < max_rows {
            let rest = &buf[start..];
            // Fast paths: `L ADDRESS\n` and `T ADDRESS SIZE\n`, parsed without searching for
            // the end of the line; anything else takes the general parser below.
            if let Some((label, addr, size, used)) = fast_line(rest) {
                self.line_no += 1;
                push(&mut self.occurrences, out, label, addr, size);
                start += used;
                continue;
            }
            let Some(nl) = memchr::memchr(b'\n', rest) else {
                // The buffer's last line goes on in the next fill.
                self.carry.extend_from_slice(rest);
                start = buf.len();
                break;
            };
            self.line_no += 1;
            line(&mut self.occurrences, out, &rest[..=nl], file, self.line_no)?;
            start += nl + 1;
        }
        self.bytes += start as u64;
        self.r.consume(start);
        Ok(())
    }
}

#[inline]
fn push(occurrences: &mut [u32; 4], out: &mut Columns, label: u8, addr: u64, size: u16) {
    let kind = if label == 1 {
        AccessKind::Store
    } else {
        AccessKind::Load
    };
    let occ = &mut occurrences[label as usize];
    *occ = occ.wrapping_add(1);
    out.push(&Access {
        thread: 0,
        inst: label as u32,
        dyn_inst: *occ,
        addr,
        size,
        kind,
        space: MemSpace::Global,
    });
}

fn line(
    occurrences: &mut [u32; 4],
    out: &mut Columns,
    text: &[u8],
    file: &str,
    line_no: u64,
) -> Result<(), TraceError> {
    match parse_line(text) {
        Ok(None) => Ok(()),
        Ok(Some((label, addr, size))) => {
            push(occurrences, out, label, addr, size);
            Ok(())
        }
        Err(msg) => Err(TraceError::parse(file, Location::Line(line_no), msg)),
    }
}

/// Parses the two common line shapes exactly (single spaces, newline-terminated); returns
/// `(label, address, size, bytes consumed)` or `None` to fall back to [`parse_line`].
#[inline(always)]
fn fast_line(rest: &[u8]) -> Option<(u8, u64, u16, usize)> {
    if rest.len() < 4 || rest[1] != b' ' {
        return None;
    }
    let (addr, after) = hex(&rest[2..])?;
    match rest[0] {
        b'0'..=b'3' if after.first() == Some(&b'\n') => {
            Some((rest[0] - b'0', addr & !3, 4, rest.len() - after.len() + 1))
        }
        b'r' | b'w' | b'i' | b'm' if after.first() == Some(&b' ') => {
            let (size, end) = hex(&after[1..])?;
            if end.first() != Some(&b'\n') || size == 0 || size > u16::MAX as u64 {
                return None;
            }
            let label = match rest[0] {
                b'r' => 0,
                b'w' => 1,
                b'i' => 2,
                _ => 3,
            };
            Some((label, addr, size as u16, rest.len() - end.len() + 1))
        }
        _ => None,
    }
}

/// Parses a hex number at the start of `s` (optional 0x), returning it and the rest;
/// `None` when there is no digit or more than 16 of them.
#[inline(always)]
fn hex(s: &[u8]) -> Option<(u64, &[u8])> {
    let s = if s.len() > 2 && s[0] == b'0' && (s[1] | 0x20) == b'x' {
        &s[2..]
    } else {
        s
    };
    let mut v: u64 = 0;
    let mut i = 0;
    while i < s.len() {
        let d = super::lex::HEX_DIGIT[s[i] as usize];
        if d == 0xff {
            break;
        }
        v = (v << 4) | d as u64;
        i += 1;
    }
    (i > 0 && i <= 16).then_some((v, &s[i..]))
}

#[inline]
fn skip_ws(s: &[u8]) -> &[u8] {
    let n = s.iter().take_while(|&&c| c == b' ' || c == b'\t').count();
    &s[n..]
}

#[inline]
fn at_field_end(s: &[u8]) -> bool {
    matches!(s.first(), None | Some(b' ' | b'\t' | b'\n' | b'\r'))
}

/// Returns `(label, address, size)` or `None` for a blank line.
#[inline]
fn parse_line(line: &[u8]) -> Result<Option<(u8, u64, u16)>, String> {
    // Fast path for the common traditional line `L ADDRESS` (one-digit label, one space).
    if line.len() > 2 && line[1] == b' ' && (b'0'..=b'3').contains(&line[0]) {
        if let Some((addr, rest)) = hex(&line[2..]) {
            if at_field_end(rest) {
                return Ok(Some((line[0] - b'0', addr & !3, 4)));
            }
        }
    }
    parse_line_slow(line)
}

#[inline]
fn parse_line_slow(line: &[u8]) -> Result<Option<(u8, u64, u16)>, String> {
    let s = skip_ws(line);
    let Some(&first) = s.first() else {
        return Ok(None);
    };
    if first == b'\n' || first == b'\r' {
        return Ok(None);
    }
    let ext = match first {
        b'r' => Some(0),
        b'w' => Some(1),
        b'i' => Some(2),
        b'm' => Some(3),
        b'c' | b'v' => return Err(
            "copy-back and invalidate records (`c`, `v`) are not supported: expected r, w, i or m"
                .into(),
        ),
        _ => None,
    };
    if let Some(label) = ext {
        if !at_field_end(&s[1..]) {
            return Err(format!(
                "expected an access type r, w, i or m followed by a space, found `{}`",
                field(s)
            ));
        }
        let (addr, rest) = address(skip_ws(&s[1..]))?;
        let rest = skip_ws(rest);
        let size_field = rest;
        let (size, rest) = hex(rest)
            .ok_or_else(|| format!("expected a hex access size, found `{}`", field(rest)))?;
        if !at_field_end(rest) || size == 0 || size > u16::MAX as u64 {
            // The whole field, as written (not what follows its digits).
            return Err(format!(
                "expected a hex access size of 1 to 0xffff bytes, found `{}`",
                field(size_field)
            ));
        }
        return Ok(Some((label, addr, size as u16)));
    }
    let (label, rest) = hex(s).ok_or_else(|| {
        format!(
            "expected a hex label (0-3) or r/w/i/m, found `{}`",
            field(s)
        )
    })?;
    if !at_field_end(rest) {
        return Err(format!("expected a hex label, found `{}`", field(s)));
    }
    if label > 3 {
        return Err(format!("label {label:x} is not supported: expected 0 (read), 1 (write), 2 (instruction fetch) or 3 (misc)"));
    }
    let rest = skip_ws(rest);
    if matches!(rest.first(), None | Some(b'\n' | b'\r')) {
        return Err("short line: expected a hex address after the label".into());
    }
    let (addr, _) = address(rest)?;
    Ok(Some((label as u8, addr & !3, 4)))
}

/// The hex address field at the start of `s` and what follows it; an error quotes the whole
/// field as written (not what follows its digits).
fn address(s: &[u8]) -> Result<(u64, &[u8]), String> {
    match hex(s) {
        Some((addr, rest)) if at_field_end(rest) => Ok((addr, rest)),
        _ => Err(format!("expected a hex address, found `{}`", field(s))),
    }
}

/// The next whitespace-delimited field, for an error message: at most 40 bytes, with bytes
/// that are not printable ASCII escaped (`\xff`), so a binary file shows as bytes.
fn field(s: &[u8]) -> String {
    let end = s
        .iter()
        .position(|c| c.is_ascii_whitespace())
        .unwrap_or(s.len());
    s[..end.min(40)].escape_ascii().to_string()
}

/// The `din` reader: read whole here; a run streams it through its own reader
/// ([`super::OpenTrace::into_reference_stream`]) and reads on from that reader's places.
pub(crate) struct DinReader;

impl super::reader::TraceReader for DinReader {
    fn read(
        &self,
        r: super::reader::Input,
        cx: &super::Ctx<'_>,
        out: &mut dyn super::KernelSink,
    ) -> Result<(), TraceError> {
        super::sink::hand_on(read_sized(r, cx.file, cx.file_bytes)?, out)
    }
    fn read_on(&self) -> super::reader::ReadOn {
        super::reader::ReadOn::Own
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #[test]
        fn fast_paths_agree_with_the_general_parser(
            lines in proptest::collection::vec((0u8..8, proptest::num::u64::ANY, 1u16..300, proptest::bool::ANY), 1..60),
        ) {
            for (kind, addr, size, prefix) in lines {
                let a = if prefix { format!("0x{addr:x}") } else { format!("{addr:x}") };
                let line = match kind {
                    0..=3 => format!("{kind} {a}\n"),
                    _ => format!("{} {a} {size:x}\n", ["r", "w", "i", "m"][kind as usize - 4]),
                };
                let general = parse_line_slow(line.as_bytes()).unwrap().unwrap();
                let (l, ad, sz, used) = fast_line(line.as_bytes()).unwrap();
                proptest::prop_assert_eq!((l, ad, sz), general);
                proptest::prop_assert_eq!(used, line.len());
            }
        }
    }

    /// Each row of `c` as (address, size, flags, instruction, instance).
    fn rows_of(c: &Columns) -> Vec<(u64, u16, u8, u32, u32)> {
        (0..c.len())
            .map(|i| (c.addr[i], c.size[i], c.flags[i], c.inst[i], c.dyn_inst[i]))
            .collect()
    }

    /// All rows of `r` in chunks of `n`, and where the reader stood after each chunk.
    fn chunks<R: BufRead>(r: &mut Reader<R>, n: usize) -> (Vec<Columns>, Vec<Resume>) {
        let (mut rows, mut at) = (Vec::new(), Vec::new());
        let mut c = Columns::default();
        while r.next_chunk(&mut c, n).unwrap() {
            rows.push(c.clone());
            at.push(r.resume_point());
        }
        (rows, at)
    }

    #[test]
    fn a_reader_resumed_where_another_stood_reads_on_as_it_would() {
        // Fast and general lines, a blank and a commented one, lines cut across buffer fills;
        // a bad line at the end.
        let text = "0 1a2b40\n\n1 40 x\nr 80 8\nw 1000 4\n2 ff\n".repeat(40) + "0 zz\n";
        let ok = &text[..text.len() - 5];
        let mut whole = Reader::new(std::io::BufReader::with_capacity(7, ok.as_bytes()), "a");
        let (rows, at) = chunks(&mut whole, 9);
        let all: Vec<_> = rows.iter().flat_map(rows_of).collect();
        assert_eq!(all.len(), 200);
        let mut before = 0;
        for (k, at) in at.iter().enumerate() {
            before += rows[k].len();
            fn resumed(text: &str, at: Resume) -> Reader<std::io::BufReader<&[u8]>> {
                let tail = &text.as_bytes()[at.offset as usize..];
                Reader::resumed(std::io::BufReader::with_capacity(5, tail), "a", at)
            }
            let (more, _) = chunks(&mut resumed(ok, *at), 4);
            let got: Vec<_> = more.iter().flat_map(rows_of).collect();
            assert_eq!(got, all[before..], "resumed after chunk {k}");
            let mut r = resumed(&text, *at);
            let mut c = Columns::default();
            let e = loop {
                match r.next_chunk(&mut c, 4) {
                    Ok(true) => {}
                    Ok(false) => panic!("the bad line was not found"),
                    Err(e) => break e.to_string(),
                }
            };
            assert!(e.contains("line 241"), "{e}");
        }
    }

    #[test]
    fn lines_split_across_buffer_fills_parse_the_same() {
        let text = "0 1a2b40\n1 40\nr 80 8\n".repeat(50);
        let whole = read(text.as_bytes(), "a").unwrap();
        let small = read(std::io::BufReader::with_capacity(7, text.as_bytes()), "b").unwrap();
        assert_eq!(whole, small);
        assert_eq!(whole.kernels[0].len(), 150);
        let unterminated = read("0 10\n0 20".as_bytes(), "c").unwrap();
        assert_eq!(unterminated.kernels[0].len(), 2);
    }

    #[test]
    fn reads_both_formats() {
        let t = read(
            "0 1a2b41\n1 0x40 comment\n\nr 1a2b40 8\nw 10 1\n2 ff\n".as_bytes(),
            "t.din",
        )
        .unwrap();
        let a: Vec<_> = t.kernels[0].accesses().collect();
        assert_eq!(a.len(), 5);
        assert_eq!(
            (a[0].addr, a[0].size, a[0].kind),
            (0x1a2b40, 4, AccessKind::Load)
        );
        assert_eq!((a[1].addr, a[1].kind), (0x40, AccessKind::Store));
        assert_eq!((a[2].addr, a[2].size), (0x1a2b40, 8));
        assert_eq!((a[3].size, a[3].kind), (1, AccessKind::Store));
        assert_eq!(a[4].kind, AccessKind::Load);
    }

    #[test]
    fn rejects_malformed_lines_with_line_numbers() {
        for (text, want) in [
            ("0 12\n0 zz\n", "line 2: expected a hex address"),
            ("0 12\n7 12\n", "line 2: label 7"),
            ("0\n", "line 1: short line"),
            ("r 12\n", "line 1: expected a hex access size"),
            ("c 12 4\n", "line 1: copy-back"),
            // The whole field is quoted, not what follows its digits.
            ("0 12x\n", "line 1: expected a hex address, found `12x`"),
            ("r 10zz 4\n", "line 1: expected a hex address, found `10zz`"),
            (
                "w 10 4q\n",
                "line 1: expected a hex access size of 1 to 0xffff bytes, found `4q`",
            ),
            (
                "w 10 0 x\n",
                "line 1: expected a hex access size of 1 to 0xffff bytes, found `0`",
            ),
            ("w 10 10000\n", "found `10000`"),
        ] {
            let e = read(text.as_bytes(), "b.din").unwrap_err().to_string();
            assert!(e.contains(want), "{text:?}: {e}");
            assert!(e.starts_with("b.din: "), "{e}");
        }
    }
}
