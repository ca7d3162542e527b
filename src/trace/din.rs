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

use super::model::{Access, AccessKind, Dim3, KernelBuilder, MemSpace, Order, Trace};
use super::{Location, TraceError};
use std::io::BufRead;

/// Reads a Dinero `din` trace.
pub fn read<R: BufRead>(r: R, file: &str) -> Result<Trace, TraceError> {
    read_sized(r, file, 0)
}

/// Reads a Dinero `din` trace whose length in bytes is about `size_hint` (0 if unknown), so
/// that the columns can be reserved once instead of grown.
pub fn read_sized<R: BufRead>(mut r: R, file: &str, size_hint: u64) -> Result<Trace, TraceError> {
    let mut sink = Sink::new(file)?;
    // A din line is at least 4 bytes ("0 0\n"); typical ones are 10 to 20.
    sink.b.reserve((size_hint / 12).min(1 << 28) as usize);
    let mut line_no = 0u64;
    // Lines are parsed in place in the reader's buffer; only a line split across two
    // buffer fills is copied.
    let mut carry: Vec<u8> = Vec::new();
    loop {
        let buf = r.fill_buf().map_err(|e| TraceError::io(file, e))?;
        if buf.is_empty() {
            if !carry.is_empty() {
                line_no += 1;
                sink.line(&carry, line_no)?;
            }
            break;
        }
        let mut start = 0;
        if !carry.is_empty() {
            match memchr::memchr(b'\n', buf) {
                Some(nl) => {
                    carry.extend_from_slice(&buf[..=nl]);
                    line_no += 1;
                    sink.line(&carry, line_no)?;
                    carry.clear();
                    start = nl + 1;
                }
                None => {
                    carry.extend_from_slice(buf);
                    let n = buf.len();
                    r.consume(n);
                    continue;
                }
            }
        }
        loop {
            let rest = &buf[start..];
            // Fast paths: `L ADDRESS\n` and `T ADDRESS SIZE\n`, parsed without searching for
            // the end of the line; anything else takes the general parser below.
            if let Some((label, addr, size, used)) = fast_line(rest) {
                line_no += 1;
                sink.push(label, addr, size, line_no)?;
                start += used;
                continue;
            }
            let Some(nl) = memchr::memchr(b'\n', rest) else {
                break;
            };
            line_no += 1;
            sink.line(&rest[..=nl], line_no)?;
            start += nl + 1;
        }
        carry.extend_from_slice(&buf[start..]);
        let n = buf.len();
        r.consume(n);
    }
    Ok(Trace {
        kernels: vec![sink.b.finish()],
    })
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

/// Collects references into the single kernel of a din trace.
struct Sink<'a> {
    b: KernelBuilder,
    insts: [u32; 4],
    /// Each reference is its own dynamic instance, so no two are grouped as one warp instruction.
    occurrences: [u32; 4],
    file: &'a str,
}

impl<'a> Sink<'a> {
    fn new(file: &'a str) -> Result<Self, TraceError> {
        let mut b = KernelBuilder::new("din", Dim3::x(1), Dim3::x(1), Order::Issued)
            .map_err(|e| TraceError::parse(file, Location::Line(0), e.to_string()))?;
        let insts = [
            b.instruction("read", None),
            b.instruction("write", None),
            b.instruction("ifetch", None),
            b.instruction("misc", None),
        ];
        Ok(Sink {
            b,
            insts,
            occurrences: [0; 4],
            file,
        })
    }

    #[inline]
    fn push(&mut self, label: u8, addr: u64, size: u16, line_no: u64) -> Result<(), TraceError> {
        let kind = if label == 1 {
            AccessKind::Store
        } else {
            AccessKind::Load
        };
        let occ = &mut self.occurrences[label as usize];
        *occ = occ.wrapping_add(1);
        let access = Access {
            thread: 0,
            inst: self.insts[label as usize],
            dyn_inst: *occ,
            addr,
            size,
            kind,
            space: MemSpace::Global,
        };
        self.b
            .push(access)
            .map_err(|e| TraceError::parse(self.file, Location::Line(line_no), e.to_string()))
    }

    fn line(&mut self, line: &[u8], line_no: u64) -> Result<(), TraceError> {
        match parse_line(line) {
            Ok(None) => Ok(()),
            Ok(Some((label, addr, size))) => self.push(label, addr, size, line_no),
            Err(msg) => Err(TraceError::parse(self.file, Location::Line(line_no), msg)),
        }
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
        let rest = skip_ws(&s[1..]);
        let (addr, rest) =
            hex(rest).ok_or_else(|| format!("expected a hex address, found `{}`", field(rest)))?;
        if !at_field_end(rest) {
            return Err(format!("expected a hex address, found `{}`", field(rest)));
        }
        let rest = skip_ws(rest);
        let (size, rest) = hex(rest)
            .ok_or_else(|| format!("expected a hex access size, found `{}`", field(rest)))?;
        if !at_field_end(rest) || size == 0 || size > u16::MAX as u64 {
            return Err(format!(
                "expected a hex access size of 1 to 0xffff bytes, found `{}`",
                field(skip_ws(rest))
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
    let (addr, rest) =
        hex(rest).ok_or_else(|| format!("expected a hex address, found `{}`", field(rest)))?;
    if !at_field_end(rest) {
        return Err(format!("expected a hex address, found `{}`", field(rest)));
    }
    Ok(Some((label as u8, addr & !3, 4)))
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
            ("0 12x\n", "line 1: expected a hex address"),
        ] {
            let e = read(text.as_bytes(), "b.din").unwrap_err().to_string();
            assert!(e.contains(want), "{text:?}: {e}");
            assert!(e.starts_with("b.din: "), "{e}");
        }
    }
}
