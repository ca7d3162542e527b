//! Small byte-level helpers shared by the text importers: line reading without UTF-8
//! validation and number parsing on byte slices (the readers' hot loops).

use std::io::BufRead;

/// Reads lines as bytes, counting them, without the line terminator (`\n` or `\r\n`). A line
/// that lies whole in the reader's buffer is returned from there, without a copy.
pub(crate) struct Lines<R> {
    r: R,
    buf: Vec<u8>,
    /// Bytes of the reader's buffer taken by the line last returned, consumed on the next call.
    pending: usize,
    /// 1-based number of the line last returned.
    pub line: u64,
    /// Bytes of the input up to the end of the line last returned, its terminator included.
    pub bytes: u64,
}

impl<R: BufRead> Lines<R> {
    pub fn new(r: R) -> Self {
        Self {
            r,
            buf: Vec::with_capacity(256),
            pending: 0,
            line: 0,
            bytes: 0,
        }
    }
    /// Lines of `r`, the rest of an input whose first `bytes` bytes held `line` lines.
    pub fn resumed(r: R, line: u64, bytes: u64) -> Self {
        Self {
            line,
            bytes,
            ..Self::new(r)
        }
    }
    /// The next line and its number, or `None` at the end of the input.
    pub fn next_line(&mut self) -> std::io::Result<Option<(u64, &[u8])>> {
        Ok(self.next_line_ending()?.map(|(n, _, line)| (n, line)))
    }

    /// [`Lines::next_line`], with the bytes of the input up to its end ([`Lines::bytes`]).
    pub fn next_line_ending(&mut self) -> std::io::Result<Option<(u64, u64, &[u8])>> {
        if self.pending > 0 {
            self.r.consume(self.pending);
            self.pending = 0;
        }
        let newline = memchr::memchr(b'\n', self.r.fill_buf()?);
        let line = match newline {
            Some(at) => {
                self.pending = at + 1;
                self.bytes += at as u64 + 1;
                &self.r.fill_buf()?[..at]
            }
            None => {
                self.buf.clear();
                let read = self.r.read_until(b'\n', &mut self.buf)?;
                if read == 0 {
                    return Ok(None);
                }
                self.bytes += read as u64;
                &self.buf[..]
            }
        };
        self.line += 1;
        let mut end = line.len();
        while end > 0 && matches!(line[end - 1], b'\n' | b'\r') {
            end -= 1;
        }
        Ok(Some((self.line, self.bytes, &line[..end])))
    }
}

/// The non-empty runs of non-whitespace bytes of a line.
pub(crate) struct Fields<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for Fields<'a> {
    type Item = &'a [u8];
    #[inline]
    fn next(&mut self) -> Option<&'a [u8]> {
        let start = self.rest.iter().position(|b| !b.is_ascii_whitespace())?;
        let s = &self.rest[start..];
        let len = s
            .iter()
            .position(|b| b.is_ascii_whitespace())
            .unwrap_or(s.len());
        self.rest = &s[len..];
        Some(&s[..len])
    }
}

/// Splits on ASCII whitespace.
pub(crate) fn fields(line: &[u8]) -> Fields<'_> {
    Fields { rest: line }
}

/// Value of each byte as a hex digit; 0xff for a byte that is not one.
pub(crate) static HEX_DIGIT: [u8; 256] = {
    let mut t = [0xffu8; 256];
    let mut i = 0;
    while i < 10 {
        t[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        t[b'a' as usize + i] = 10 + i as u8;
        t[b'A' as usize + i] = 10 + i as u8;
        i += 1;
    }
    t
};

/// A hexadecimal number with or without `0x`.
#[inline]
pub(crate) fn hex(s: &[u8]) -> Option<u64> {
    let s = match s {
        [b'0', b'x' | b'X', rest @ ..] => rest,
        _ => s,
    };
    if s.is_empty() || s.len() > 16 {
        return None;
    }
    let mut v = 0u64;
    let mut bad = 0u8;
    for &c in s {
        let d = HEX_DIGIT[c as usize];
        bad |= d;
        v = (v << 4) | (d & 0xf) as u64;
    }
    (bad & 0xf0 == 0).then_some(v)
}

/// A decimal whole number.
#[inline]
pub(crate) fn dec(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    let mut v = 0u64;
    for &c in s {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add((c - b'0') as u64)?;
    }
    Some(v)
}

/// A decimal number with an optional sign.
#[inline]
pub(crate) fn signed(s: &[u8]) -> Option<i64> {
    match s.first() {
        Some(b'-') => dec(&s[1..]).and_then(|v| 0i64.checked_sub_unsigned(v)),
        Some(b'+') => dec(&s[1..]).and_then(|v| i64::try_from(v).ok()),
        _ => dec(s).and_then(|v| i64::try_from(v).ok()),
    }
}

/// Three comma-separated whole numbers `x,y,z` (spaces around them allowed).
pub(crate) fn dim3(s: &[u8]) -> Option<super::Dim3> {
    let mut it = s
        .split(|&c| c == b',')
        .map(|p| dec(p.trim_ascii()).and_then(|v| u32::try_from(v).ok()));
    let d = super::Dim3::new(it.next()??, it.next()??, it.next()??);
    it.next().is_none().then_some(d)
}

/// A field for error messages (lossy, shortened).
pub(crate) fn show(s: &[u8]) -> String {
    let t = String::from_utf8_lossy(s);
    if t.chars().count() > 40 {
        format!("{}...", t.chars().take(40).collect::<String>())
    } else {
        t.into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers() {
        assert_eq!(hex(b"0x7f2b2d500000"), Some(0x7f2b2d500000));
        assert_eq!(hex(b"ffffffff"), Some(0xffff_ffff));
        assert_eq!(hex(b"0x"), None);
        assert_eq!(hex(b"0xABCdef09"), Some(0xabcdef09));
        assert_eq!(hex(b"0x12g4"), None);
        assert_eq!(hex(b"-1"), None);
        assert_eq!(hex(b"0x0x1"), None);
        let f: Vec<&[u8]> = fields(b"  a\tbb  c ").collect();
        assert_eq!(f, [&b"a"[..], b"bb", b"c"]);
        assert_eq!(fields(b"   ").next(), None);
        assert_eq!(hex(b"12345678901234567"), None);
        assert_eq!(dec(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(dec(b"18446744073709551616"), None);
        assert_eq!(signed(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(signed(b"-16"), Some(-16));
        assert_eq!(signed(b"x"), None);
    }

    #[test]
    fn lines_strip_terminators() {
        // In memory (lines borrowed from the input) and through a 3-byte buffer (lines that
        // cross buffer refills are copied).
        let mut small = Lines::new(std::io::BufReader::with_capacity(
            3,
            "a b\r\n\nc".as_bytes(),
        ));
        assert_eq!(small.next_line().unwrap(), Some((1, &b"a b"[..])));
        assert_eq!(small.bytes, 5);
        assert_eq!(small.next_line().unwrap(), Some((2, &b""[..])));
        assert_eq!(small.bytes, 6);
        assert_eq!(small.next_line().unwrap(), Some((3, &b"c"[..])));
        assert_eq!(small.bytes, 7);
        assert_eq!(small.next_line().unwrap(), None);
        assert_eq!(small.bytes, 7);
        let mut l = Lines::new("a b\r\n\nc".as_bytes());
        assert_eq!(l.next_line().unwrap(), Some((1, &b"a b"[..])));
        assert_eq!(l.next_line().unwrap(), Some((2, &b""[..])));
        assert_eq!(l.next_line().unwrap(), Some((3, &b"c"[..])));
        assert_eq!((l.line, l.bytes), (3, 7));
        assert_eq!(l.next_line().unwrap(), None);
        // Resumed after the first line: the same lines, numbers and byte counts.
        let mut r = Lines::resumed(&b"\nc"[..], 1, 5);
        assert_eq!(r.next_line().unwrap(), Some((2, &b""[..])));
        assert_eq!(r.next_line().unwrap(), Some((3, &b"c"[..])));
        assert_eq!((r.line, r.bytes), (3, 7));
    }
}
