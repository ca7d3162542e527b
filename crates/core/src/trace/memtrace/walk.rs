//! The walk over a cuda-memtrace file's bytes, in either layout: it checks the framing,
//! decodes records and tells a [`Records`] visitor of each kernel's begin, records and end.
//! A [`Walker`] goes one kernel at a time and can be left between kernels, so two walkers
//! over the same file can go in lock-step: the streamed read scans a kernel with one, then
//! hands its rows on with the other, and the first kernel starts after its own scan, not
//! the whole file's.

use std::io::BufRead;

use super::{decode, Records, RECORD};
use crate::trace::{Fail, Location, TraceError};

pub(super) struct Reader<'a, R> {
    r: R,
    at: u64,
    file: &'a str,
}

impl<R: BufRead> Reader<'_, R> {
    fn err(&self, at: u64, m: impl Into<String>) -> TraceError {
        TraceError::parse(self.file, Location::Byte(at), m)
    }
    /// Exactly `buf.len()` bytes; `Ok(false)` at a clean end of input before the first byte.
    fn fill(&mut self, buf: &mut [u8], what: &str, eof_ok: bool) -> Result<bool, TraceError> {
        let mut got = 0;
        while got < buf.len() {
            match self.r.read(&mut buf[got..]) {
                Ok(0) if got == 0 && eof_ok => return Ok(false),
                Ok(0) => {
                    return Err(self.err(
                        self.at + got as u64,
                        format!("file ends early: expected {what}"),
                    ))
                }
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(TraceError::io(self.file, e)),
            }
        }
        self.at += buf.len() as u64;
        Ok(true)
    }
    fn line(&mut self, what: &str) -> Result<Option<String>, TraceError> {
        let mut v = Vec::new();
        let start = self.at;
        let n = self
            .r
            .read_until(b'\n', &mut v)
            .map_err(|e| TraceError::io(self.file, e))?;
        if n == 0 {
            return Ok(None);
        }
        self.at += n as u64;
        if v.pop() != Some(b'\n') {
            return Err(self.err(
                self.at,
                format!("file ends early: expected a LF after {what}"),
            ));
        }
        String::from_utf8(v)
            .map(Some)
            .map_err(|_| self.err(start, format!("{what} is not valid UTF-8")))
    }
}

impl<R> Reader<'_, R> {
    /// `f`'s failure, at byte `at` when it is about the file.
    fn at(&self, at: u64, f: Fail) -> TraceError {
        match f {
            Fail::File(m) => TraceError::parse(self.file, Location::Byte(at), m),
            Fail::Out(e) => e,
        }
    }
}

/// Where a walk is between two kernels.
enum Layout {
    /// The later layout; the name of the next kernel and the offset of its tag, where the
    /// walk read it to find the previous kernel's end.
    Later {
        next: Option<(u64, String)>,
    },
    Thesis,
}

/// A walk over one file that goes a kernel at a time ([`Walker::kernel`]).
pub(super) struct Walker<'a, R> {
    rd: Reader<'a, R>,
    layout: Layout,
}

impl<'a, R: BufRead> Walker<'a, R> {
    /// Reads the file's opening (the magic, or the record size and its LF) and tells the
    /// layout.
    pub(super) fn new(r: R, file: &'a str) -> Result<Self, TraceError> {
        let mut rd = Reader { r, at: 0, file };
        let mut first = [0u8; 1];
        rd.fill(&mut first, "the first byte", false)?;
        let layout = match first[0] {
            0x19 | 0x1a => {
                let mut magic = [0u8; 9];
                rd.fill(&mut magic, "the CUDATRACE magic", false)?;
                if &magic != b"CUDATRACE" {
                    return Err(rd.err(1, "expected `CUDATRACE` after the version byte"));
                }
                Layout::Later { next: None }
            }
            n if n as usize == RECORD => {
                let mut lf = [0u8; 1];
                rd.fill(&mut lf, "a LF after the record size", false)?;
                if lf[0] != b'\n' {
                    return Err(rd.err(1, "expected a LF after the record size byte"));
                }
                Layout::Thesis
            }
            b => return Err(rd.err(
                0,
                format!("expected the cuda-memtrace magic (0x19/0x1a + CUDATRACE) or record size 24, found byte {b:#04x}"),
            )),
        };
        Ok(Self { rd, layout })
    }

    /// Walks the next kernel whole (its begin, records and end); false at the file's end.
    pub(super) fn kernel(&mut self, v: &mut dyn Records) -> Result<bool, TraceError> {
        match &mut self.layout {
            Layout::Later { next } => {
                let first = next.take();
                Ok(match later_kernel(&mut self.rd, first, v)? {
                    Walked::None => false,
                    Walked::Last => true,
                    Walked::Before(at, name) => {
                        self.layout = Layout::Later {
                            next: Some((at, name)),
                        };
                        true
                    }
                })
            }
            Layout::Thesis => thesis_kernel(&mut self.rd, v),
        }
    }
}

/// Where a kernel begins in a file: the offset of its tag (later layout) or name line
/// (thesis layout), for a walker opened there ([`Walker::starting_at`]).
#[derive(Clone, Copy)]
pub(super) struct KernelStart {
    pub offset: u64,
    thesis: bool,
}

impl<'a, R: BufRead> Walker<'a, R> {
    /// Where the next kernel begins (the file's end if none follows).
    pub(super) fn next_kernel_at(&self) -> KernelStart {
        match &self.layout {
            Layout::Later {
                next: Some((at, _)),
            } => KernelStart {
                offset: *at,
                thesis: false,
            },
            Layout::Later { next: None } => KernelStart {
                offset: self.rd.at,
                thesis: false,
            },
            Layout::Thesis => KernelStart {
                offset: self.rd.at,
                thesis: true,
            },
        }
    }

    /// A walker over `r`, a reader of the file placed at `start`.
    pub(super) fn starting_at(r: R, file: &'a str, start: KernelStart) -> Self {
        Self {
            rd: Reader {
                r,
                at: start.offset,
                file,
            },
            layout: if start.thesis {
                Layout::Thesis
            } else {
                Layout::Later { next: None }
            },
        }
    }
}

/// Walks a cuda-memtrace file of either layout, checking its framing and decoding records.
pub(super) fn walk<R: BufRead>(r: R, file: &str, v: &mut dyn Records) -> Result<(), TraceError> {
    let mut w = Walker::new(r, file)?;
    while w.kernel(v)? {}
    Ok(())
}

/// The name of a kernel whose tag (`0x00`) at `at` was just read.
fn kernel_name<R: BufRead>(rd: &mut Reader<'_, R>, at: u64) -> Result<String, TraceError> {
    let mut len = [0u8; 2];
    rd.fill(&mut len, "the kernel name length", false)?;
    let mut name = vec![0u8; u16::from_le_bytes(len) as usize];
    rd.fill(&mut name, "the kernel name", false)?;
    String::from_utf8(name).map_err(|_| rd.err(at + 3, "kernel name is not valid UTF-8"))
}

/// What [`later_kernel`] walked.
enum Walked {
    /// No kernel: the file ended.
    None,
    /// The file's last kernel.
    Last,
    /// A kernel, before the one whose tag at this offset and name it read to find its end.
    Before(u64, String),
}

/// One kernel of the later layout, starting at its tag (or the name `first` read before).
fn later_kernel<R: BufRead>(
    rd: &mut Reader<'_, R>,
    first: Option<(u64, String)>,
    v: &mut dyn Records,
) -> Result<Walked, TraceError> {
    let mut rec = [0u8; RECORD];
    let (at, name) = match first {
        Some(n) => n,
        None => {
            let at = rd.at;
            let mut tag = [0u8; 1];
            if !rd.fill(&mut tag, "a record tag", true)? {
                return Ok(Walked::None);
            }
            match tag[0] {
                0x00 => (at, kernel_name(rd, at)?),
                t @ (0xFF | 0xFE) => {
                    // Read as far as the whole record, so a cut file says what it lacks.
                    rd.fill(&mut rec, "a 24-byte record", false)?;
                    if t == 0xFE {
                        rd.fill(&mut [0u8; 2], "the run length", false)?;
                    }
                    return Err(rd.err(
                        at,
                        "a record before any kernel (expected 0x00 + name first)",
                    ));
                }
                b => return Err(bad_tag(rd, at, b)),
            }
        }
    };
    v.begin(name).map_err(|f| rd.at(at, f))?;
    loop {
        if plain_records(rd, v)? {
            continue;
        }
        let at = rd.at;
        let mut tag = [0u8; 1];
        if !rd.fill(&mut tag, "a record tag", true)? {
            v.end().map_err(|f| rd.at(rd.at, f))?;
            return Ok(Walked::Last);
        }
        match tag[0] {
            0x00 => {
                let name = kernel_name(rd, at)?;
                v.end().map_err(|f| rd.at(at, f))?;
                return Ok(Walked::Before(at, name));
            }
            t @ (0xFF | 0xFE) => {
                rd.fill(&mut rec, "a 24-byte record", false)?;
                let count = if t == 0xFE {
                    let mut c = [0u8; 2];
                    rd.fill(&mut c, "the run length", false)?;
                    u16::from_le_bytes(c) as u64
                } else {
                    1
                };
                let r = decode(&rec).map_err(|m| rd.err(at + 1, m))?;
                v.run(r, count).map_err(|f| rd.at(at, f))?;
            }
            b => return Err(bad_tag(rd, at, b)),
        }
    }
}

fn bad_tag<R>(rd: &Reader<'_, R>, at: u64, b: u8) -> TraceError {
    TraceError::parse(
        rd.file,
        Location::Byte(at),
        format!("expected a record tag 0x00 (kernel), 0xFF (access) or 0xFE (run), found {b:#04x}"),
    )
}

/// The common case, fast: the access records (`0xFF` + record) and run records (`0xFE` +
/// record + run length) that lie whole in the reader's buffer, decoded in place. Returns
/// whether it took any; the caller reads what follows (another tag, a record cut by the
/// buffer's end) field by field.
fn plain_records<R: BufRead>(
    rd: &mut Reader<'_, R>,
    v: &mut dyn Records,
) -> Result<bool, TraceError> {
    /// A record's bytes with its tag, and with a run's length.
    const ONE: usize = 1 + RECORD;
    const RUN: usize = ONE + 2;
    let file = rd.file;
    let buf = rd.r.fill_buf().map_err(|e| TraceError::io(file, e))?;
    // The bytes of the record at `used` if it lies whole in the buffer.
    let whole_at = |used: usize| {
        let n = match buf.get(used)? {
            0xFF => ONE,
            0xFE => RUN,
            _ => return None,
        };
        (used + n <= buf.len()).then_some(n)
    };
    let mut used = 0;
    if !v.wants_records() {
        // Stepped over, not decoded (the kernels before a resume point).
        while let Some(n) = whole_at(used) {
            used += n;
        }
        rd.r.consume(used);
        rd.at += used as u64;
        return Ok(used > 0);
    }
    while let Some(n) = whole_at(used) {
        let at = rd.at + used as u64;
        let mut rec = [0u8; RECORD];
        rec.copy_from_slice(&buf[used + 1..used + ONE]);
        let r = decode(&rec).map_err(|m| TraceError::parse(file, Location::Byte(at + 1), m))?;
        let told = match n {
            ONE => v.record(r),
            _ => v.run(
                r,
                u16::from_le_bytes([buf[used + ONE], buf[used + ONE + 1]]) as u64,
            ),
        };
        told.map_err(|f| match f {
            Fail::File(m) => TraceError::parse(file, Location::Byte(at), m),
            Fail::Out(e) => e,
        })?;
        used += n;
    }
    rd.r.consume(used);
    rd.at += used as u64;
    Ok(used > 0)
}

/// One kernel of the thesis layout: its name line, records and all-zero end record; false
/// at the file's end before a name line.
fn thesis_kernel<R: BufRead>(
    rd: &mut Reader<'_, R>,
    v: &mut dyn Records,
) -> Result<bool, TraceError> {
    let Some(name) = rd.line("the kernel name line")? else {
        return Ok(false);
    };
    let start = rd.at;
    v.begin(name).map_err(|f| rd.at(start, f))?;
    let mut rec = [0u8; RECORD];
    loop {
        let at = rd.at;
        rd.fill(
            &mut rec,
            "a 24-byte record or the all-zero end-of-kernel record",
            false,
        )?;
        if rec.iter().all(|&b| b == 0) {
            break;
        }
        let r = decode(&rec).map_err(|m| rd.err(at, m))?;
        v.record(r).map_err(|f| rd.at(at, f))?;
    }
    v.end().map_err(|f| rd.at(rd.at, f))?;
    Ok(true)
}
