//! Accel-Sim tracer output (tracer versions 1.2 to 5): a `kernelslist.g` naming
//! `kernel-N.traceg` files (each possibly `.xz`/`.zst`/`.gz`), or one `.traceg` file.
//!
//! A `.traceg` file is a `-key = value` header (kernel name, grid and block dim, ...), then
//! `#BEGIN_TB` / `thread block = x,y,z` / `warp = w` / `insts = N` blocks of warp instruction
//! lines `[tb_x tb_y tb_z warp] [line] PC mask dest_num dests opcode src_num srcs mem_width
//! [mode addresses] [imm]`; the first four fields only in versions below 3, the line number
//! only with `-enable lineinfo = 1` (kept as the instruction's source line; the tracer writes
//! no file name, and 0 where the binary has no line table). Address modes: 0 one address per active lane, 1 base and
//! stride, 2 base and deltas. The tracer writes popcount - 1 deltas in mode 2 (one per active
//! lane after the first); Accel-Sim's own parser reads popcount, which we do not copy.
//!
//! Memory instructions (`mem_width > 0`) become accesses; the opcode decides load, store or
//! atomic and the space. Every instruction counts towards the warp's instruction count and the
//! opcode mix kept in [`KernelInfo`](super::model::KernelInfo) (header keys with `_` for
//! spaces; instructions are named `OPCODE@PC`). Kernels are [`Order::PerWarp`]: a warp's k-th
//! instruction is dynamic instance k of all its active lanes.
//!
//! `header.rs` reads the header, `parse.rs` the thread blocks; `stream.rs` hands a kernel on
//! CTA by CTA (a scan, then a read, or one read), `resume.rs` from a copy of a session taken
//! after a CTA; this file finds the kernel files and reads them whole.

use std::io::BufRead;
use std::path::{Path, PathBuf};

use super::lex::{self, Lines};
use super::model::{AccessKind, AtomicOp, Columns, Dim3, KernelBuilder, MemSpace, Order};
use super::{source, Ctx, KernelSink, Location, TraceError};

mod header;
mod parse;
mod resume;
mod stream;
/// The Accel-Sim reader: each kernel file scanned, then handed on CTA by CTA (once, for a
/// receiver taking instructions as found); read on from a CTA, the kernel files before the
/// copy's not opened.
pub(crate) struct AccelSimReader;

impl super::reader::TraceReader for AccelSimReader {
    fn read(
        &self,
        r: super::reader::Input,
        cx: &Ctx<'_>,
        out: &mut dyn KernelSink,
    ) -> Result<(), TraceError> {
        read_into(r, cx, out)
    }
    fn stream(
        &self,
        r: super::reader::Input,
        cx: &Ctx<'_>,
        out: &mut dyn super::CtaSink,
    ) -> Result<(), TraceError> {
        stream_into(r, cx, out)
    }
    fn streamed_reads(&self, as_found: bool) -> u64 {
        if as_found {
            1
        } else {
            2
        }
    }
    fn read_on(&self) -> super::reader::ReadOn {
        super::reader::ReadOn::Reader
    }
    fn stream_from(
        &self,
        r: super::reader::Input,
        cx: &Ctx<'_>,
        at: &super::ResumePoint,
        held: super::Held<'_>,
        out: &mut dyn super::CtaSink,
    ) -> Option<Result<(), TraceError>> {
        match *at {
            super::ResumePoint::Cta { kernel, next_cta } => {
                Some(stream_from(r, cx, kernel, next_cta, held, out))
            }
            _ => None,
        }
    }
    fn bytes_before_kernel(
        &self,
        r: super::reader::Input,
        cx: &Ctx<'_>,
        kernel: u32,
    ) -> Result<u64, TraceError> {
        bytes_before(r, cx, kernel)
    }
}

#[cfg(test)]
mod tests;

use parse::{Mode, Parser};

use crate::config::choice::{Entry, Form};

/// This format in the registry of [`super::Format`] (see `config::choice`).
pub const ENTRY: Entry<super::Format> = Entry {
    name: "accelsim",
    aliases: &["accel-sim", "traceg"],
    label: "Accel-Sim",
    description: "Accel-Sim tracer output: kernelslist.g plus kernel-N.traceg, or one .traceg",
    form: Form::Plain(super::Format::AccelSim),
};
pub(crate) use resume::{bytes_before, stream_from};
pub(crate) use stream::stream_into;

const WARP: u32 = 32;

/// True for a line that starts an Accel-Sim kernel list or `.traceg` file.
pub fn looks_like(line: &str) -> bool {
    line.starts_with("-kernel name")
        || line.starts_with("-accelsim tracer version")
        || line.starts_with("#BEGIN_TB")
        || line.starts_with("MemcpyHtoD,")
        || line.starts_with("MemcpyDtoH,")
        || is_kernel_file(line)
}

fn is_kernel_file(line: &str) -> bool {
    let plain = source::strip_compression(Path::new(line));
    plain.extension().is_some_and(|e| e == "traceg")
        && plain
            .file_name()
            .and_then(|f| f.to_str())
            .is_some_and(|f| f.starts_with("kernel-"))
}

/// The `kernelslist.g` of a trace directory.
pub fn list_in_dir(dir: &Path, name: &str) -> Result<PathBuf, TraceError> {
    for f in [
        "kernelslist.g",
        "kernelslist.g.xz",
        "kernelslist.g.zst",
        "kernelslist.g.gz",
    ] {
        let p = dir.join(f);
        if p.is_file() {
            return Ok(p);
        }
    }
    Err(TraceError::io(
        name,
        std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "a directory trace must hold an Accel-Sim kernelslist.g",
        ),
    ))
}

/// Reads a kernel list (opening each kernel file it names) or a single `.traceg` stream.
pub(crate) fn read_into<R: BufRead>(
    r: R,
    ctx: &Ctx<'_>,
    out: &mut dyn KernelSink,
) -> Result<(), TraceError> {
    each_kernel_file(r, ctx, &mut |file| {
        let k = match file {
            KernelFile::Given(r) => read_kernel(r, ctx.file)?,
            KernelFile::Listed(path) => {
                let opened = source::open(&path, ctx.wrap, ctx.watch)?;
                read_kernel(opened.reader, &path.display().to_string())?
            }
        };
        out.kernel(k)
    })
}

/// A kernel's `.traceg`: the stream opened (a `.traceg` given itself), or a file a kernel
/// list names.
enum KernelFile<R> {
    Given(R),
    Listed(PathBuf),
}

/// Calls `each` with every kernel file of `r`, a kernel list or a single `.traceg`.
fn each_kernel_file<R: BufRead>(
    mut r: R,
    ctx: &Ctx<'_>,
    each: &mut dyn FnMut(KernelFile<R>) -> Result<(), TraceError>,
) -> Result<(), TraceError> {
    // A `.traceg` starts with its header or a TB; anything else is a kernel list.
    let head = r.fill_buf().map_err(|e| TraceError::io(ctx.file, e))?;
    let first = String::from_utf8_lossy(head)
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
        .to_string();
    if first.starts_with('-') || first.starts_with('#') {
        return each(KernelFile::Given(r));
    }
    let dir = ctx.path.parent().unwrap_or(Path::new("."));
    let mut lines = Lines::new(r);
    while let Some((n, line)) = lines.next_line().map_err(|e| TraceError::io(ctx.file, e))? {
        let t = String::from_utf8_lossy(line).trim().to_string();
        if t.is_empty() || t.starts_with('#') || t.starts_with("Memcpy") {
            continue;
        }
        if !is_kernel_file(&t) {
            return Err(TraceError::parse(
                ctx.file,
                Location::Line(n),
                format!("expected a `MemcpyHtoD,...` command or a `kernel-N.traceg` file name, found `{}`", lex::show(line)),
            ));
        }
        let path = find_kernel_file(dir, &t).ok_or_else(|| {
            TraceError::parse(
                ctx.file,
                Location::Line(n),
                format!("kernel file `{t}` not found next to the list (also tried .xz, .zst, .gz)"),
            )
        })?;
        each(KernelFile::Listed(path))?;
    }
    Ok(())
}

fn find_kernel_file(dir: &Path, name: &str) -> Option<PathBuf> {
    let base = dir.join(name);
    if base.is_file() {
        return Some(base);
    }
    ["xz", "zst", "gz"].iter().find_map(|ext| {
        let mut p = base.clone().into_os_string();
        p.push(".");
        p.push(ext);
        let p = PathBuf::from(p);
        p.is_file().then_some(p)
    })
}

/// Reads one `.traceg` stream into a kernel.
pub fn read_kernel<R: BufRead>(r: R, file: &str) -> Result<super::Kernel, TraceError> {
    let mut p = Parser::new(r, file, Mode::Read)?;
    let mut rows = Columns::default();
    while p.next_block(&mut rows)?.is_some() {}
    let h = p.header();
    let h = (h.name.clone(), h.grid, h.block, h.end_line);
    let (name, grid, block, end_line) = h;
    let found = p.finish()?;
    let herr = |m: String| TraceError::parse(file, Location::Line(end_line), m);
    let mut b = KernelBuilder::new(name, grid, block, Order::PerWarp)
        .map_err(|e| herr(format!("grid {grid} x block {block}: {e}")))?;
    for inst in &found.instructions {
        let id = b.instruction(&inst.name, inst.pc);
        b.set_line(id, inst.line.unwrap_or(0));
    }
    b.append_rows(|c| std::mem::swap(c, &mut rows))
        .map_err(|(_, e)| herr(e.to_string()))?;
    b.set_info(found.info);
    b.finish_checked().map_err(|e| herr(e.to_string()))
}

/// Load, store or atomic, and the memory space, from a SASS opcode.
pub fn classify(opcode: &[u8]) -> (AccessKind, MemSpace) {
    let base = opcode.split(|&c| c == b'.').next().unwrap_or(opcode);
    let atomic = || {
        let op = opcode
            .split(|&c| c == b'.')
            .skip(1)
            .find_map(|s| match s {
                b"ADD" => Some(AtomicOp::Add),
                b"MIN" => Some(AtomicOp::Min),
                b"MAX" => Some(AtomicOp::Max),
                b"INC" => Some(AtomicOp::Inc),
                b"DEC" => Some(AtomicOp::Dec),
                b"EXCH" => Some(AtomicOp::Exch),
                b"CAS" | b"CAST" => Some(AtomicOp::Cas),
                b"AND" => Some(AtomicOp::And),
                b"OR" => Some(AtomicOp::Or),
                b"XOR" => Some(AtomicOp::Xor),
                _ => None,
            })
            .unwrap_or(AtomicOp::Add);
        AccessKind::Atomic(op)
    };
    match base {
        b"LDL" => (AccessKind::Load, MemSpace::Local),
        b"STL" => (AccessKind::Store, MemSpace::Local),
        b"LDS" | b"LDSM" => (AccessKind::Load, MemSpace::Shared),
        b"STS" => (AccessKind::Store, MemSpace::Shared),
        b"ATOMS" => (atomic(), MemSpace::Shared),
        b"LDC" | b"ULDC" => (AccessKind::Load, MemSpace::Constant),
        b"TEX" | b"TEXS" | b"TLD" | b"TLDS" | b"TLD4" | b"TLD4S" | b"TXD" | b"TMML" => {
            (AccessKind::Load, MemSpace::Texture)
        }
        b"ATOM" | b"ATOMG" | b"RED" | b"REDG" | b"SUATOM" | b"SURED" => {
            (atomic(), MemSpace::Global)
        }
        _ if base.starts_with(b"ST") || base.starts_with(b"SUST") => {
            (AccessKind::Store, MemSpace::Global)
        }
        // LDG, LD (generic), LDGSTS, SULD and anything else that reads memory.
        _ => (AccessKind::Load, MemSpace::Global),
    }
}

/// `key = value` with this key, returning the value.
fn key_value<'a>(t: &'a [u8], key: &[u8]) -> Option<&'a [u8]> {
    let rest = t.strip_prefix(key)?;
    let rest = rest.trim_ascii().strip_prefix(b"=")?;
    Some(rest.trim_ascii())
}

/// `(x,y,z)`.
fn paren_dim3(v: &str) -> Option<Dim3> {
    let inner = v.trim().strip_prefix('(')?.strip_suffix(')')?;
    lex::dim3(inner.as_bytes())
}
