//! Warpscope's binary trace format (`.wsb`): versioned, little-endian, checksummed, and laid
//! out so that a reader can stream it CTA by CTA or seek to a kernel or CTA.
//!
//! Version 4 (written; full specification in `docs/trace-format.md`), all integers
//! little-endian, `str` a u32 byte length and UTF-8 bytes:
//! ```text
//! "WSTRACE\0"  u32 version (=4)  u32 flags (=0)
//! per kernel:  u8 'K'  str name  3 x u32 grid  3 x u32 block  u8 order  u64 rows
//!              u32 n_inst, per inst: str name, u8 has_pc, u64 pc, u32 source line
//!              kernel info (as version 2)  u32 CRC-32 of the record after its tag
//!   per chunk: u8 'C'  u32 cta (0xFFFFFFFF: issued-order rows)  u32 n_rows
//!              n_rows records of 23 bytes  u32 CRC-32 of the record after its tag
//! index:       u8 'X'  u32 n_kernels, per kernel: u64 offset of 'K', u64 rows,
//!              u32 n_chunks, per chunk: u32 cta, u32 rows, u64 offset of 'C';  u32 CRC-32
//! end:         u8 'E'  u32 n_kernels  u64 offset of 'X'
//! ```
//! A grouped kernel's chunks are its CTAs in increasing linear id, rows grouped by thread
//! (a CTA larger than a chunk takes several in a row). Versions 1 to 3 (one record per
//! kernel, rows inline, no checksums or index; `legacy.rs`) are still read. A file without
//! its end record is truncated and rejected.
//!
//! `chunked.rs` reads (streaming, to a [`CtaSink`]) and writes ([`Writer`]) version 4;
//! `index.rs` reads the index and seeks to one kernel or a window of its rows.

mod chunked;
mod index;
mod legacy;
mod packed;
mod walk;
mod write;

pub use super::Place;
pub use index::{Index, IndexedChunk, IndexedKernel};
pub use walk::stream_from_start;
pub use write::Writer;

use super::model::{AccessKind, Dim3, Kernel, KernelInfo, Order, Trace, WarpInstructions};
use super::sink::{Assemble, CtaSink, KernelSink};
use super::{Location, TraceError};
use std::io::{BufRead, Read, Write};

use crate::config::choice::{Entry, Form};

/// This format in the registry of [`super::Format`] (see `config::choice`).
pub const ENTRY: Entry<super::Format> = Entry {
    name: "native",
    aliases: &["binary", "wsb"],
    label: "Warpscope binary (.wsb)",
    description: "Warpscope's binary format (.wsb): chunks grouped by CTA, checksums, an index",
    form: Form::Plain(super::Format::Binary),
};

pub const MAGIC: &[u8; 8] = b"WSTRACE\0";
/// The version written.
pub const VERSION: u32 = 5;
/// The first version of chunks and an index (`chunked.rs`); from version 5 the chunks' rows
/// are packed (`packed.rs`).
const CHUNKED: u32 = 4;
const ROW_BYTES: usize = 23;
const KERNEL_TAG: u8 = b'K';
const CHUNK_TAG: u8 = b'C';
const INDEX_TAG: u8 = b'X';
const END_TAG: u8 = b'E';
const MAX_NAME: u32 = 1 << 20;
/// The CTA field of a chunk of an issued-order kernel (rows in issue order, any CTA).
const ISSUED_CHUNK: u32 = u32::MAX;

/// Reads fields, counting the byte offset for errors and a CRC-32 of what it read since
/// [`Reader::begin_record`].
struct Reader<'a, R> {
    r: R,
    offset: u64,
    file: &'a str,
    crc: crc32fast::Hasher,
    /// The most bytes the file can hold (its size, or a bound for compressed input).
    max_bytes: u64,
    /// The file's format version (from its header; the version written until it is read).
    version: u32,
}

impl<'a, R: Read> Reader<'a, R> {
    fn new(r: R, file: &'a str, max_bytes: u64) -> Self {
        Reader {
            r,
            offset: 0,
            file,
            crc: crc32fast::Hasher::new(),
            max_bytes,
            version: VERSION,
        }
    }
    /// The reader of a file of format version `version` (read from its header before).
    fn at_version(mut self, version: u32) -> Self {
        self.version = version;
        self
    }
    fn bytes<const N: usize>(&mut self, what: &str) -> Result<[u8; N], TraceError> {
        let mut buf = [0u8; N];
        self.fill(&mut buf, || format!("file ends early: expected {what}"))?;
        Ok(buf)
    }
    /// Fills `buf`; at the end of the file, the error is `early()`, at the offset where the
    /// file ended.
    fn fill(&mut self, buf: &mut [u8], early: impl FnOnce() -> String) -> Result<(), TraceError> {
        match self.read_fully(buf)? {
            None => Ok(()),
            Some(got) => Err(self.err(self.offset + got as u64, early())),
        }
    }
    /// Fills `buf` (`None`), or says how many bytes there were before the file ended.
    fn read_fully(&mut self, buf: &mut [u8]) -> Result<Option<usize>, TraceError> {
        let mut got = 0;
        while got < buf.len() {
            match self.r.read(&mut buf[got..]) {
                Ok(0) => return Ok(Some(got)),
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(TraceError::io(self.file, e)),
            }
        }
        self.crc.update(buf);
        self.offset += buf.len() as u64;
        Ok(None)
    }
    /// Steps over `n` bytes (`what`), which the checksum does not see.
    fn skip(&mut self, n: u64, what: &str) -> Result<(), TraceError> {
        let got = std::io::copy(&mut (&mut self.r).take(n), &mut std::io::sink())
            .map_err(|e| TraceError::io(self.file, e))?;
        if got != n {
            return Err(self.err(
                self.offset + got,
                format!("file ends early: expected {what}"),
            ));
        }
        self.offset += n;
        Ok(())
    }
    fn u8(&mut self, what: &str) -> Result<u8, TraceError> {
        Ok(self.bytes::<1>(what)?[0])
    }
    fn u32(&mut self, what: &str) -> Result<u32, TraceError> {
        Ok(u32::from_le_bytes(self.bytes(what)?))
    }
    fn u64(&mut self, what: &str) -> Result<u64, TraceError> {
        Ok(u64::from_le_bytes(self.bytes(what)?))
    }
    fn dim3(&mut self, what: &str) -> Result<Dim3, TraceError> {
        Ok(Dim3::new(self.u32(what)?, self.u32(what)?, self.u32(what)?))
    }
    fn string(&mut self, what: &str) -> Result<String, TraceError> {
        let at = self.offset;
        let len = self.u32(what)?;
        if len > MAX_NAME {
            return Err(self.err(
                at,
                format!("{what}: length {len} is larger than the limit of {MAX_NAME} bytes"),
            ));
        }
        let mut buf = vec![0u8; len as usize];
        self.fill(&mut buf, || format!("file ends early: expected {what}"))?;
        String::from_utf8(buf).map_err(|_| self.err(at, format!("{what} is not valid UTF-8")))
    }
    /// A count of list entries, refused above `limit`.
    fn count(&mut self, what: &str, limit: u32) -> Result<u32, TraceError> {
        let at = self.offset;
        let n = self.u32(what)?;
        if n > limit {
            return Err(self.err(
                at,
                format!("{what}: {n} is larger than the limit of {limit}"),
            ));
        }
        Ok(n)
    }
    fn err(&self, at: u64, msg: impl Into<String>) -> TraceError {
        TraceError::parse(self.file, Location::Byte(at), msg)
    }
    /// Starts the checksum of a record (after its tag).
    fn begin_record(&mut self) {
        self.crc = crc32fast::Hasher::new();
    }
    /// Reads a record's stored CRC-32 and compares it with what was read since
    /// [`Reader::begin_record`].
    fn check_crc(&mut self, what: &str) -> Result<(), TraceError> {
        let want = self.crc.clone().finalize();
        let at = self.offset;
        let got = self.u32(&format!("the checksum of {what}"))?;
        if got != want {
            return Err(self.err(
                at,
                format!(
                    "the checksum of {what} is {got:#010x} but its contents give {want:#010x}: \
                     the file is damaged"
                ),
            ));
        }
        Ok(())
    }
    /// Fails unless the file ends here.
    fn expect_end(&mut self) -> Result<(), TraceError> {
        let mut extra = [0u8; 1];
        loop {
            match self.r.read(&mut extra) {
                Ok(0) => return Ok(()),
                Ok(_) => return Err(self.err(self.offset, "unexpected bytes after the end record")),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(TraceError::io(self.file, e)),
            }
        }
    }
}

/// Reads a binary trace.
pub fn read<R: BufRead>(r: R, file: &str) -> Result<Trace, TraceError> {
    let mut trace = Trace::default();
    read_into(r, file, &mut trace)?;
    Ok(trace)
}

/// Reads a binary trace, appending each kernel to `out` as soon as it is complete (so a
/// caller that allows truncated input keeps the kernels before an error).
pub fn read_into<R: BufRead>(r: R, file: &str, out: &mut dyn KernelSink) -> Result<(), TraceError> {
    read_into_sized(r, file, u64::MAX, out)
}

/// [`read_into`] for a file of at most `max_bytes` bytes (as [`stream_sized`]). A version 4
/// or 5 file's kernels are gathered as their chunks are read, each kernel's rows checked
/// once and copied nowhere.
pub fn read_into_sized<R: BufRead>(
    r: R,
    file: &str,
    max_bytes: u64,
    out: &mut dyn KernelSink,
) -> Result<(), TraceError> {
    let mut rd = Reader::new(r, file, max_bytes);
    let version = read_file_header(&mut rd)?;
    if version >= CHUNKED {
        chunked::read(&mut rd, &mut chunked::Whole(out), true)
    } else {
        legacy::read(&mut rd, version, &mut Assemble::new(out))
    }
}

/// Reads a binary trace into `out`: a version 4 file's grouped kernels CTA by CTA, as its
/// chunks come (memory holds one CTA), older versions' kernels and issued-order kernels whole.
pub fn stream<R: BufRead>(r: R, file: &str, out: &mut dyn CtaSink) -> Result<(), TraceError> {
    stream_sized(r, file, u64::MAX, out)
}

/// [`stream`] for a file of at most `max_bytes` bytes (its size; for compressed input, a
/// bound on what it can expand to): a kernel record declaring more rows than that is refused
/// before a receiver sizes anything by its shape.
pub fn stream_sized<R: BufRead>(
    r: R,
    file: &str,
    max_bytes: u64,
    out: &mut dyn CtaSink,
) -> Result<(), TraceError> {
    let mut rd = Reader::new(r, file, max_bytes);
    let version = read_file_header(&mut rd)?;
    if version >= CHUNKED {
        chunked::read(&mut rd, out, false)
    } else {
        legacy::read(&mut rd, version, out)
    }
}

/// The version of the binary trace `r` (named `file` in errors), read from its header.
pub fn version_of<R: Read>(r: R, file: &str) -> Result<u32, TraceError> {
    read_file_header(&mut Reader::new(r, file, u64::MAX))
}

/// Reads the magic, version and flags; returns the version.
fn read_file_header<R: Read>(rd: &mut Reader<'_, R>) -> Result<u32, TraceError> {
    let magic = rd.bytes::<8>("the WSTRACE magic")?;
    if &magic != MAGIC {
        return Err(rd.err(
            0,
            "not a Warpscope binary trace: expected the magic bytes \"WSTRACE\\0\"",
        ));
    }
    let version = rd.u32("the format version")?;
    if !(1..=VERSION).contains(&version) {
        return Err(rd.err(
            8,
            format!(
                "unsupported format version {version} (this build reads versions 1 to {VERSION})"
            ),
        ));
    }
    let _flags = rd.u32("the header flags")?;
    rd.version = version;
    Ok(version)
}

/// A kernel record's fields before its row count and instructions.
struct Shape {
    name: String,
    grid: Dim3,
    block: Dim3,
    order: Order,
    /// Byte offset of the grid, for errors about the shape.
    at: u64,
}

fn read_shape<R: Read>(rd: &mut Reader<'_, R>, version: u32) -> Result<Shape, TraceError> {
    let name = rd.string("the kernel name")?;
    let at = rd.offset;
    let grid = rd.dim3("the grid dimensions")?;
    let block = rd.dim3("the block dimensions")?;
    let order = match rd.u8("the kernel order")? {
        0 => Order::PerThread,
        1 => Order::Issued,
        2 if version >= 2 => Order::PerWarp,
        o => {
            return Err(rd.err(
                rd.offset - 1,
                format!(
                    "expected kernel order 0 (per thread), 1 (issued) or 2 (per warp), found {o}"
                ),
            ))
        }
    };
    Ok(Shape {
        name,
        grid,
        block,
        order,
        at,
    })
}

/// Declares the instructions of a kernel record in `b`.
fn read_instructions<R: Read>(
    rd: &mut Reader<'_, R>,
    version: u32,
    b: &mut super::KernelBuilder,
) -> Result<(), TraceError> {
    let n_inst = rd.u32("the instruction count")?;
    for _ in 0..n_inst {
        let at = rd.offset;
        let name = rd.string("an instruction name")?;
        let has_pc = rd.u8("the has-pc flag")?;
        let pc = rd.u64("the instruction pc")?;
        let line = if version >= 3 {
            rd.u32("the instruction's source line")?
        } else {
            0
        };
        let before = b.instruction_count();
        let id = b.instruction(&name, (has_pc != 0).then_some(pc));
        if b.instruction_count() == before {
            return Err(rd.err(at, format!("instruction `{name}` is declared twice")));
        }
        b.set_line(id, line);
    }
    Ok(())
}

/// Entries of one info list; a corrupt count fails at the end of the file, not in `reserve`.
const MAX_INFO: u32 = 1 << 28;

fn read_info<R: Read>(rd: &mut Reader<'_, R>) -> Result<KernelInfo, TraceError> {
    let mut info = KernelInfo::default();
    for _ in 0..rd.count("the attribute count", MAX_INFO)? {
        let k = rd.string("an attribute name")?;
        let v = rd.string("an attribute value")?;
        if !info.read_special_attribute(&k, &v) {
            info.attributes.push((k, v));
        }
    }
    for _ in 0..rd.count("the CTA-to-SM count", MAX_INFO)? {
        info.cta_sm.push(rd.u32("the SM of a CTA")?);
    }
    for _ in 0..rd.count("the warp instruction count", MAX_INFO)? {
        info.warp_instructions.push(WarpInstructions {
            cta: rd.u32("a warp's CTA")?,
            warp: rd.u32("a warp's index")?,
            count: rd.u64("a warp's instruction count")?,
        });
    }
    for _ in 0..rd.count("the opcode count", MAX_INFO)? {
        let op = rd.string("an opcode")?;
        info.opcodes.push((op, rd.u64("an opcode's count")?));
    }
    Ok(info)
}

/// The field of a 23-byte record at byte `within` of it, and where that field starts.
fn row_field(within: usize) -> (usize, &'static str) {
    const FIELDS: [(usize, &str); 6] = [
        (0, "thread"),
        (4, "instruction"),
        (8, "dynamic instance"),
        (12, "address"),
        (20, "size"),
        (22, "flags"),
    ];
    FIELDS
        .iter()
        .rev()
        .find(|(o, _)| *o <= within)
        .copied()
        .unwrap_or((0, "thread"))
}

/// Appends 23-byte records to the columns, one column at a time (barrier rows get instruction
/// 0, as the writer stores them). Validation happens in [`super::KernelBuilder::append_rows`].
pub(crate) fn decode_rows(chunk: &[u8], cols: &mut super::Columns) {
    let recs = chunk.chunks_exact(ROW_BYTES);
    let u32_at = |r: &[u8], o: usize| u32::from_le_bytes([r[o], r[o + 1], r[o + 2], r[o + 3]]);
    cols.thread.extend(recs.clone().map(|r| u32_at(r, 0)));
    cols.inst.extend(recs.clone().map(|r| {
        if r[22] & 0x1f == AccessKind::Barrier.code() {
            0
        } else {
            u32_at(r, 4)
        }
    }));
    cols.dyn_inst.extend(recs.clone().map(|r| u32_at(r, 8)));
    cols.addr.extend(recs.clone().map(|r| {
        let mut a = [0u8; 8];
        a.copy_from_slice(&r[12..20]);
        u64::from_le_bytes(a)
    }));
    cols.size
        .extend(recs.clone().map(|r| u16::from_le_bytes([r[20], r[21]])));
    cols.flags.extend(recs.map(|r| r[22]));
}

/// Encodes rows `range` of `c` as 23-byte records appended to `out`.
pub(crate) fn encode_rows(c: &super::Columns, range: std::ops::Range<usize>, out: &mut Vec<u8>) {
    out.reserve(range.len() * ROW_BYTES);
    for i in range {
        out.extend_from_slice(&c.thread[i].to_le_bytes());
        out.extend_from_slice(&c.inst[i].to_le_bytes());
        out.extend_from_slice(&c.dyn_inst[i].to_le_bytes());
        out.extend_from_slice(&c.addr[i].to_le_bytes());
        out.extend_from_slice(&c.size[i].to_le_bytes());
        out.push(c.flags[i]);
    }
}

/// Writes a trace in the binary format (version 5).
pub fn write<W: Write>(trace: &Trace, w: W) -> std::io::Result<()> {
    let mut out = Writer::new(w)?;
    for k in &trace.kernels {
        out.kernel(k)?;
    }
    out.finish().map(drop)
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

fn order_code(o: Order) -> u8 {
    match o {
        Order::PerThread => 0,
        Order::Issued => 1,
        Order::PerWarp => 2,
    }
}

/// A kernel's instructions and info as versions 3 and 4 store them.
fn put_instructions_and_info(out: &mut Vec<u8>, k: &Kernel) {
    out.extend_from_slice(&(k.instructions.len() as u32).to_le_bytes());
    for inst in &k.instructions {
        put_str(out, &inst.name);
        out.push(inst.pc.is_some() as u8);
        out.extend_from_slice(&inst.pc.unwrap_or(0).to_le_bytes());
        out.extend_from_slice(&inst.line.unwrap_or(0).to_le_bytes());
    }
    put_info(out, &k.info);
}

fn put_info(out: &mut Vec<u8>, info: &KernelInfo) {
    let n = |out: &mut Vec<u8>, n: usize| out.extend_from_slice(&(n as u32).to_le_bytes());
    let attributes = info.attributes_to_write();
    n(out, attributes.len());
    for (k, v) in &attributes {
        put_str(out, k);
        put_str(out, v);
    }
    n(out, info.cta_sm.len());
    for sm in &info.cta_sm {
        out.extend_from_slice(&sm.to_le_bytes());
    }
    n(out, info.warp_instructions.len());
    for c in &info.warp_instructions {
        out.extend_from_slice(&c.cta.to_le_bytes());
        out.extend_from_slice(&c.warp.to_le_bytes());
        out.extend_from_slice(&c.count.to_le_bytes());
    }
    n(out, info.opcodes.len());
    for (op, c) in &info.opcodes {
        put_str(out, op);
        out.extend_from_slice(&c.to_le_bytes());
    }
}

/// Our binary format's reader: CTA by CTA or in issued chunks as written; read on through
/// its index (or, compressed, by walking it from its start).
pub(crate) struct BinaryReader;

impl super::reader::TraceReader for BinaryReader {
    fn read(
        &self,
        r: super::reader::Input,
        cx: &super::Ctx<'_>,
        out: &mut dyn KernelSink,
    ) -> Result<(), TraceError> {
        read_into_sized(r, cx.file, cx.bound, out)
    }
    fn stream(
        &self,
        r: super::reader::Input,
        cx: &super::Ctx<'_>,
        out: &mut dyn super::CtaSink,
    ) -> Result<(), TraceError> {
        stream_sized(r, cx.file, cx.bound, out)
    }
    fn read_on(&self) -> super::reader::ReadOn {
        super::reader::ReadOn::Index
    }
}

#[cfg(test)]
mod tests;
