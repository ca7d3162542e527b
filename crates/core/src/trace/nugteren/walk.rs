//! Walking a `.trc` file line by line: the header, then every access line checked and handed
//! on in file order. Most lines are four plain decimal numbers split by single spaces, and
//! those are parsed in place in the reader's buffer ([`quick`]); any other line (the header,
//! blank lines, tabs, `\r\n`, a malformed line) goes through the general parser, which gives
//! the same result for a line `quick` takes, and names the line where it is wrong.

use std::io::BufRead;

use super::super::lex;
use super::super::model::Dim3;
use super::super::{Location, TraceError};

/// One access line: flat thread id, store (else load), address, bytes.
pub(super) type Line = (u32, bool, u64, u16);

/// What a walk over the whole file found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Walked {
    pub block: Dim3,
    /// The largest thread id (0 with no access line).
    pub max_tid: u32,
    /// Access lines.
    pub rows: u64,
}

/// Walks a file: checks the header and every line, handing each access to `row` in file
/// order with the block size.
pub(super) fn walk<R: BufRead>(
    mut r: R,
    file: &str,
    mut row: impl FnMut(Dim3, Line) -> Result<(), TraceError>,
) -> Result<Walked, TraceError> {
    let err = |line: u64, msg: String| TraceError::parse(file, Location::Line(line), msg);
    let io = |e| TraceError::io(file, e);
    let mut block: Option<Dim3> = None;
    let mut max_tid = 0u32;
    let mut rows = 0u64;
    let mut n = 0u64;
    let mut slow = Vec::with_capacity(256);
    loop {
        // The lines that lie whole in the buffer and that `quick` takes.
        if let Some(b) = block {
            let buf = r.fill_buf().map_err(io)?;
            let mut at = 0;
            while let Some((line, used)) = quick(&buf[at..]) {
                n += 1;
                rows += 1;
                max_tid = max_tid.max(line.0);
                row(b, line)?;
                at += used;
            }
            r.consume(at);
        }
        // One line the general way (or the end of the input).
        slow.clear();
        if r.read_until(b'\n', &mut slow).map_err(io)? == 0 {
            break;
        }
        n += 1;
        let t = slow.trim_ascii();
        if t.is_empty() {
            continue;
        }
        let Some(b) = block else {
            block = Some(block_size(t).map_err(|m| err(n, m))?);
            continue;
        };
        let line = access_line(t).map_err(|m| err(n, m))?;
        rows += 1;
        max_tid = max_tid.max(line.0);
        row(b, line)?;
    }
    let block = block.ok_or_else(|| err(0, "empty file: expected `blocksize: X Y Z`".into()))?;
    Ok(Walked {
        block,
        max_tid,
        rows,
    })
}

/// The access line at the start of `b` and its length with its `\n`, when it is four
/// decimal numbers split by single spaces, ending in `\n`, whose values [`access_line`]
/// accepts; else `None` (the general parser then reads it).
#[inline]
fn quick(b: &[u8]) -> Option<(Line, usize)> {
    let (tid, at) = number(b, 0, 10, b' ')?;
    let store = match (b.get(at), b.get(at + 1)) {
        (Some(b'0'), Some(b' ')) => false,
        (Some(b'1'), Some(b' ')) => true,
        _ => return None,
    };
    let (addr, at) = number(b, at + 2, 19, b' ')?;
    let (bytes, at) = number(b, at, 5, b'\n')?;
    let tid = u32::try_from(tid).ok()?;
    let bytes = u16::try_from(bytes).ok().filter(|&s| s > 0)?;
    Some(((tid, store, addr, bytes), at))
}

/// The decimal number of 1 to `most` digits at `b[at..]`, ended by `end`, and where the byte
/// after `end` is. `most` is at most 19, so the value cannot overflow.
#[inline(always)]
fn number(b: &[u8], at: usize, most: usize, end: u8) -> Option<(u64, usize)> {
    let mut v = 0u64;
    let mut i = at;
    loop {
        let c = *b.get(i)?;
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            return (c == end && i > at).then_some((v, i + 1));
        }
        if i - at == most {
            return None;
        }
        v = v * 10 + d as u64;
        i += 1;
    }
}

/// The header line `blocksize: X Y Z`, or what is wrong with it.
fn block_size(t: &[u8]) -> Result<Dim3, String> {
    let dims = t
        .strip_prefix(b"blocksize:")
        .ok_or_else(|| format!("expected `blocksize: X Y Z`, found `{}`", lex::show(t)))?;
    let v: Option<Vec<u32>> = lex::fields(dims)
        .map(|x| lex::dec(x).and_then(|v| u32::try_from(v).ok()))
        .collect();
    let v = v.ok_or_else(|| {
        format!(
            "expected three whole numbers after `blocksize:`, found `{}`",
            lex::show(dims)
        )
    })?;
    match v[..] {
        [x, y, z] if x > 0 && y > 0 && z > 0 => Ok(Dim3 { x, y, z }),
        _ => Err(format!(
            "expected three block dimensions of at least 1, found `{}`",
            lex::show(dims)
        )),
    }
}

/// An access line `tid dir addr bytes`, or what is wrong with it.
pub(super) fn access_line(t: &[u8]) -> Result<Line, String> {
    let mut f = lex::fields(t);
    let (Some(tid), Some(dir), Some(addr), Some(bytes), None) =
        (f.next(), f.next(), f.next(), f.next(), f.next())
    else {
        return Err(format!(
            "expected `tid dir addr bytes` (4 decimal fields), found {} fields",
            lex::fields(t).count()
        ));
    };
    let tid = lex::dec(tid)
        .and_then(|v| u32::try_from(v).ok())
        .ok_or_else(|| {
            format!(
                "thread id: expected a whole number, found `{}`",
                lex::show(tid)
            )
        })?;
    let store = match dir {
        b"0" => false,
        b"1" => true,
        d => {
            return Err(format!(
                "direction: expected 0 (load) or 1 (store), found `{}`",
                lex::show(d)
            ))
        }
    };
    let addr = lex::dec(addr).ok_or_else(|| {
        format!(
            "address: expected a decimal number, found `{}`",
            lex::show(addr)
        )
    })?;
    let bytes = lex::dec(bytes)
        .and_then(|v| u16::try_from(v).ok())
        .filter(|&b| b > 0)
        .ok_or_else(|| {
            format!(
                "size: expected 1 to 65535 bytes, found `{}`",
                lex::show(bytes)
            )
        })?;
    Ok((tid, store, addr, bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Every line the general parser is given, as `walk` reads it: through `quick` where it
    /// takes the line, else the general way.
    fn lines(body: &str) -> Result<(Vec<Line>, Walked), String> {
        let text = format!("blocksize: 4 1 1\n{body}");
        let mut got = Vec::new();
        walk(text.as_bytes(), "q.trc", |_, l| {
            got.push(l);
            Ok(())
        })
        .map(|w| (got, w))
        .map_err(|e| e.to_string())
    }

    /// The general parser alone, line by line (what `walk` gave before `quick`).
    fn general(body: &str) -> Result<Vec<Line>, String> {
        let mut out = Vec::new();
        for (i, l) in body.split_inclusive('\n').enumerate() {
            let t = l.as_bytes().trim_ascii();
            if t.is_empty() {
                continue;
            }
            out.push(access_line(t).map_err(|m| {
                TraceError::parse("q.trc", Location::Line(i as u64 + 2), m).to_string()
            })?);
        }
        Ok(out)
    }

    #[test]
    fn quick_takes_plain_lines_and_leaves_the_rest() {
        assert_eq!(quick(b"12 1 4096 8\n"), Some(((12, true, 4096, 8), 12)));
        assert_eq!(quick(b"0 0 0 1\n7"), Some(((0, false, 0, 1), 8)));
        for other in [
            &b"12 1 4096 8"[..],              // no end of line in the buffer
            b"12 1 4096 8\r\n",               // \r\n
            b"12  1 4096 8\n",                // two spaces
            b"12\t1 4096 8\n",                // a tab
            b"12 2 4096 8\n",                 // direction
            b"12 1 4096 0\n",                 // size 0
            b"12 1 4096 65536\n",             // size too large
            b"4294967296 1 4096 8\n",         // thread id too large
            b"12 1 99999999999999999999 8\n", // 20 digits
            b" 12 1 4096 8\n",                // leading space
            b"12 1 4096 8 9\n",               // a fifth field
            b"blocksize: 1 1 1\n",
        ] {
            assert_eq!(quick(other), None, "{}", String::from_utf8_lossy(other));
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        /// Lines of plain numbers, odd spacing, line ends and bad fields give, read with the
        /// quick path, what the general parser gives line by line: the same accesses, or the
        /// same error on the same line.
        #[test]
        fn quick_agrees_with_the_general_parser(
            lines_in in proptest::collection::vec(
                (
                    prop_oneof![Just(0u64), 0u64..5000, Just(u32::MAX as u64), Just(u32::MAX as u64 + 1)],
                    prop_oneof![Just("0"), Just("1"), Just("2"), Just("01")],
                    prop_oneof![0u64..1 << 40, Just(u64::MAX), Just(9_999_999_999_999_999_999)],
                    prop_oneof![1u64..64, Just(0), Just(65535), Just(65536)],
                    prop_oneof![Just(" "), Just("  "), Just("\t")],
                    prop_oneof![Just("\n"), Just("\r\n"), Just("\n\n"), Just(" \n")],
                ),
                0..40,
            ),
        ) {
            let mut body = String::new();
            for (tid, dir, addr, size, sep, end) in &lines_in {
                body.push_str(&format!("{tid}{sep}{dir} {addr}{sep}{size}{end}"));
            }
            let walked = lines(&body);
            match (&walked, general(&body)) {
                (Ok((got, w)), Ok(want)) => {
                    prop_assert_eq!(got, &want);
                    prop_assert_eq!(w.rows, want.len() as u64);
                    prop_assert_eq!(w.max_tid, want.iter().map(|l| l.0).max().unwrap_or(0));
                }
                (Err(a), Err(b)) => prop_assert_eq!(a, &b),
                (a, b) => prop_assert!(false, "walk {:?}, general {:?}", a, b),
            }
        }
    }
}
