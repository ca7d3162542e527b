//! Warpscope's binary trace format (`.wsb`): versioned, little-endian and streamable.
//!
//! Layout (all integers little-endian; full specification in `docs/trace-format.md`):
//! ```text
//! "WSTRACE\0"  u32 version (=3; 1 and 2 are still read)  u32 flags (=0)
//! per kernel:  u8 'K'  str name  3 x u32 grid  3 x u32 block  u8 order
//!              u32 n_inst, per inst: str name, u8 has_pc, u64 pc,
//!              (version 3) u32 source line (0 = unknown)
//!              u64 n_rows, then n_rows records of 23 bytes:
//!              u32 thread, u32 inst, u32 dyn, u64 addr, u16 size, u8 flags
//!              (version 2) kernel info: u32 n, n x (str key, str value);
//!              u32 n, n x u32 SM of CTA; u32 n, n x (u32 cta, u32 warp, u64 count);
//!              u32 n, n x (str opcode, u64 count)
//! end:         u8 'E'  u32 n_kernels
//! ```
//! `str` is a u32 byte length followed by UTF-8 bytes. A file without the end record is
//! truncated and rejected.

use super::model::{
    AccessKind, Dim3, Kernel, KernelBuilder, KernelInfo, Order, Trace, WarpInstructions,
};
use super::{KernelSink, Location, TraceError};
use std::io::{BufRead, Read, Write};

pub const MAGIC: &[u8; 8] = b"WSTRACE\0";
pub const VERSION: u32 = 3;
/// Rows decoded per read call (about 1.5 MB).
const CHUNK_ROWS: usize = 1 << 16;
const ROW_BYTES: usize = 23;
const KERNEL_TAG: u8 = b'K';
const END_TAG: u8 = b'E';
const MAX_NAME: u32 = 1 << 20;

struct Reader<'a, R> {
    r: R,
    offset: u64,
    file: &'a str,
}

impl<R: Read> Reader<'_, R> {
    fn bytes<const N: usize>(&mut self, what: &str) -> Result<[u8; N], TraceError> {
        let mut buf = [0u8; N];
        self.r.read_exact(&mut buf).map_err(|e| {
            if e.kind() == std::io::ErrorKind::UnexpectedEof {
                TraceError::parse(
                    self.file,
                    Location::Byte(self.offset),
                    format!("file ends early: expected {what}"),
                )
            } else {
                TraceError::io(self.file, e)
            }
        })?;
        self.offset += N as u64;
        Ok(buf)
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
        self.r
            .read_exact(&mut buf)
            .map_err(|_| self.err(self.offset, format!("file ends early: expected {what}")))?;
        self.offset += len as u64;
        String::from_utf8(buf).map_err(|_| self.err(at, format!("{what} is not valid UTF-8")))
    }
    fn err(&self, at: u64, msg: impl Into<String>) -> TraceError {
        TraceError::parse(self.file, Location::Byte(at), msg)
    }
}

/// Reads a binary trace.
pub fn read<R: BufRead>(r: R, file: &str) -> Result<Trace, TraceError> {
    let mut trace = Trace::default();
    read_into(r, file, &mut trace)?;
    Ok(trace)
}

/// Reads a binary trace, appending each kernel to `trace` as soon as it is complete (so a
/// caller that allows truncated input keeps the kernels before an error).
pub fn read_into<R: BufRead>(r: R, file: &str, out: &mut dyn KernelSink) -> Result<(), TraceError> {
    let mut rd = Reader { r, offset: 0, file };
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
    let mut kernels = 0usize;
    loop {
        let at = rd.offset;
        match rd.u8("a kernel record ('K') or the end record ('E')")? {
            KERNEL_TAG => {
                out.kernel(read_kernel(&mut rd, version)?)?;
                kernels += 1;
            }
            END_TAG => {
                let n = rd.u32("the kernel count of the end record")?;
                if n as usize != kernels {
                    return Err(rd.err(at, format!("end record says {n} kernels but {kernels} were read")));
                }
                let mut extra = [0u8; 1];
                if rd.r.read(&mut extra).map_err(|e| TraceError::io(file, e))? != 0 {
                    return Err(rd.err(rd.offset, "unexpected bytes after the end record"));
                }
                return Ok(());
            }
            other => return Err(rd.err(at, format!("expected a kernel record ('K') or the end record ('E'), found byte {other:#04x}"))),
        }
    }
}

fn read_kernel<R: BufRead>(
    rd: &mut Reader<'_, R>,
    version: u32,
) -> Result<super::Kernel, TraceError> {
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
    let mut b =
        KernelBuilder::new(name, grid, block, order).map_err(|e| rd.err(at, e.to_string()))?;
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
    let rows = rd.u64("the row count")?;
    // Reserve only what a well-formed file could hold so a corrupt count cannot exhaust memory.
    b.reserve(rows.min(1 << 24) as usize);
    // Only needed when the reader's buffer cannot hold a whole chunk.
    let mut buf = Vec::new();
    let mut row = 0u64;
    while row < rows {
        let n = CHUNK_ROWS.min((rows - row) as usize);
        let start = rd.offset;
        if b.spare_capacity() < n {
            // Grow geometrically, never past the declared count (exact when it is honest).
            b.reserve(((rows - row) as usize).min(b.len().max(1 << 24)));
        }
        // Decode straight from the reader's buffer when it holds the whole chunk (input in
        // memory); otherwise copy the chunk out first.
        let buffered = rd.r.fill_buf().map_err(|e| TraceError::io(rd.file, e))?;
        let direct = buffered.len() >= n * ROW_BYTES;
        let chunk = if direct {
            &buffered[..n * ROW_BYTES]
        } else {
            if buf.len() < n * ROW_BYTES {
                buf.resize(n * ROW_BYTES, 0);
            }
            let chunk = &mut buf[..n * ROW_BYTES];
            read_full(rd, chunk, start, row)?;
            &*chunk
        };
        let appended = b.append_rows(|cols| decode_rows(chunk, cols));
        if direct {
            rd.r.consume(n * ROW_BYTES);
        }
        appended.map_err(|(i, e)| {
            let at = start + (i * ROW_BYTES) as u64;
            let at = if matches!(e, super::BuildError::BadFlags { .. }) {
                at + 22
            } else {
                at
            };
            rd.err(at, format!("record {}: {e}", row + i as u64))
        })?;
        rd.offset += (n * ROW_BYTES) as u64;
        row += n as u64;
    }
    if version >= 2 {
        b.set_info(read_info(rd)?);
    }
    b.finish_checked().map_err(|e| rd.err(at, e.to_string()))
}

/// Fills `chunk`, or reports where the file ended and which field of which record was cut.
fn read_full<R: Read>(
    rd: &mut Reader<'_, R>,
    chunk: &mut [u8],
    start: u64,
    first_row: u64,
) -> Result<(), TraceError> {
    let mut got = 0;
    while got < chunk.len() {
        match rd.r.read(&mut chunk[got..]) {
            Ok(0) => {
                const FIELDS: [(usize, &str); 6] = [
                    (0, "thread"),
                    (4, "instruction"),
                    (8, "dynamic instance"),
                    (12, "address"),
                    (20, "size"),
                    (22, "flags"),
                ];
                let within = got % ROW_BYTES;
                let (field_at, field) = FIELDS
                    .iter()
                    .rev()
                    .find(|(o, _)| *o <= within)
                    .copied()
                    .unwrap_or((0, "thread"));
                let row = first_row + (got / ROW_BYTES) as u64;
                let at = start + (got - within + field_at) as u64;
                return Err(rd.err(
                    at,
                    format!("file ends early: expected record {row}'s {field}"),
                ));
            }
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(TraceError::io(rd.file, e)),
        }
    }
    Ok(())
}

/// Appends 23-byte records to the columns, one column at a time (barrier rows get instruction
/// 0, as the writer stores them). Validation happens in [`KernelBuilder::append_rows`].
fn decode_rows(chunk: &[u8], cols: &mut super::Columns) {
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

/// Entries of one info list; a corrupt count fails at the end of the file, not in `reserve`.
const MAX_INFO: u32 = 1 << 28;

fn read_info<R: Read>(rd: &mut Reader<'_, R>) -> Result<KernelInfo, TraceError> {
    let mut info = KernelInfo::default();
    let count = |rd: &mut Reader<'_, R>, what: &str| -> Result<u32, TraceError> {
        let at = rd.offset;
        let n = rd.u32(what)?;
        if n > MAX_INFO {
            return Err(rd.err(
                at,
                format!("{what}: {n} is larger than the limit of {MAX_INFO}"),
            ));
        }
        Ok(n)
    };
    for _ in 0..count(rd, "the attribute count")? {
        let k = rd.string("an attribute name")?;
        let v = rd.string("an attribute value")?;
        info.attributes.push((k, v));
    }
    for _ in 0..count(rd, "the CTA-to-SM count")? {
        info.cta_sm.push(rd.u32("the SM of a CTA")?);
    }
    for _ in 0..count(rd, "the warp instruction count")? {
        info.warp_instructions.push(WarpInstructions {
            cta: rd.u32("a warp's CTA")?,
            warp: rd.u32("a warp's index")?,
            count: rd.u64("a warp's instruction count")?,
        });
    }
    for _ in 0..count(rd, "the opcode count")? {
        let op = rd.string("an opcode")?;
        info.opcodes.push((op, rd.u64("an opcode's count")?));
    }
    Ok(info)
}

/// Writes a trace in the binary format.
pub fn write<W: Write>(trace: &Trace, w: &mut W) -> std::io::Result<()> {
    write_header(w)?;
    for k in &trace.kernels {
        write_kernel(k, w)?;
    }
    write_end(trace.kernels.len() as u32, w)
}

/// Writes the file header (magic, version, flags); kernels follow ([`write_kernel`]).
pub fn write_header<W: Write>(w: &mut W) -> std::io::Result<()> {
    w.write_all(MAGIC)?;
    w.write_all(&VERSION.to_le_bytes())?;
    w.write_all(&0u32.to_le_bytes())
}

/// Writes the end tag and the number of kernels written, without which a reader takes the
/// file for truncated.
pub fn write_end<W: Write>(kernels: u32, w: &mut W) -> std::io::Result<()> {
    w.write_all(&[END_TAG])?;
    w.write_all(&kernels.to_le_bytes())
}

/// Writes one kernel record.
pub fn write_kernel<W: Write>(k: &Kernel, w: &mut W) -> std::io::Result<()> {
    w.write_all(&[KERNEL_TAG])?;
    write_str(w, &k.name)?;
    for d in [k.grid, k.block] {
        for v in [d.x, d.y, d.z] {
            w.write_all(&v.to_le_bytes())?;
        }
    }
    w.write_all(&[match k.order {
        Order::PerThread => 0,
        Order::Issued => 1,
        Order::PerWarp => 2,
    }])?;
    w.write_all(&(k.instructions.len() as u32).to_le_bytes())?;
    for inst in &k.instructions {
        write_str(w, &inst.name)?;
        w.write_all(&[inst.pc.is_some() as u8])?;
        w.write_all(&inst.pc.unwrap_or(0).to_le_bytes())?;
        w.write_all(&inst.line.unwrap_or(0).to_le_bytes())?;
    }
    w.write_all(&(k.len() as u64).to_le_bytes())?;
    let c = k.columns();
    let mut rec = [0u8; 23];
    for i in 0..k.len() {
        rec[0..4].copy_from_slice(&c.thread[i].to_le_bytes());
        rec[4..8].copy_from_slice(&c.inst[i].to_le_bytes());
        rec[8..12].copy_from_slice(&c.dyn_inst[i].to_le_bytes());
        rec[12..20].copy_from_slice(&c.addr[i].to_le_bytes());
        rec[20..22].copy_from_slice(&c.size[i].to_le_bytes());
        rec[22] = c.flags[i];
        w.write_all(&rec)?;
    }
    write_info(w, &k.info)?;
    Ok(())
}

fn write_info<W: Write>(w: &mut W, info: &KernelInfo) -> std::io::Result<()> {
    let n = |w: &mut W, n: usize| w.write_all(&(n as u32).to_le_bytes());
    n(w, info.attributes.len())?;
    for (k, v) in &info.attributes {
        write_str(w, k)?;
        write_str(w, v)?;
    }
    n(w, info.cta_sm.len())?;
    for sm in &info.cta_sm {
        w.write_all(&sm.to_le_bytes())?;
    }
    n(w, info.warp_instructions.len())?;
    for c in &info.warp_instructions {
        w.write_all(&c.cta.to_le_bytes())?;
        w.write_all(&c.warp.to_le_bytes())?;
        w.write_all(&c.count.to_le_bytes())?;
    }
    n(w, info.opcodes.len())?;
    for (op, c) in &info.opcodes {
        write_str(w, op)?;
        w.write_all(&c.to_le_bytes())?;
    }
    Ok(())
}

fn write_str<W: Write>(w: &mut W, s: &str) -> std::io::Result<()> {
    w.write_all(&(s.len() as u32).to_le_bytes())?;
    w.write_all(s.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Trace {
        let text = "kernel k grid=2,1,1 block=2,1,1\ninst a pc=0x10\n1,0,0 1,0,0 a 3 atom.add 0x40 4\n0,0,0 0,0,0 bar\n0,0,0 1,0,0 b 0 st 0x80 8 shared\n";
        super::super::text::read(text.as_bytes(), "s").unwrap()
    }

    #[test]
    fn round_trips() {
        let t = sample();
        let mut out = Vec::new();
        write(&t, &mut out).unwrap();
        assert_eq!(read(out.as_slice(), "x.wsb").unwrap(), t);
    }

    #[test]
    fn every_truncation_is_an_error_with_an_offset() {
        let mut out = Vec::new();
        write(&sample(), &mut out).unwrap();
        for cut in 0..out.len() {
            let e = read(&out[..cut], "t.wsb").unwrap_err().to_string();
            assert!(e.starts_with("t.wsb: byte offset"), "cut {cut}: {e}");
        }
    }

    #[test]
    fn corrupt_flags_and_counts_are_rejected() {
        let mut out = Vec::new();
        write(&sample(), &mut out).unwrap();
        let mut bad = out.clone();
        // End record (5 bytes) and the four empty info lists (16 bytes) follow the last flags.
        let last_flags = bad.len() - 6 - 16;
        bad[last_flags] = 0x1f;
        assert!(read(bad.as_slice(), "f")
            .unwrap_err()
            .to_string()
            .contains("flags"));
        let mut bad = out;
        let n = bad.len();
        bad[n - 4] = 7;
        assert!(read(bad.as_slice(), "f")
            .unwrap_err()
            .to_string()
            .contains("end record"));
    }
}
