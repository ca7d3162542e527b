//! Warpscope's human-readable trace format (`.wst`), for teaching and tests.
//!
//! ```text
//! # comments start with '#', anywhere on a line
//! kernel vecadd grid=2,1,1 block=64,1,1 order=thread
//! inst ld_a                     # optional: declares instruction ids in program order
//! inst st_c pc=0x118 line=12     # pc and source line optional
//! 0,0,0 5,0,0 ld_a 0 ld 0x1000 4          # CTA thread instruction dynamic kind address size [space]
//! 0,0,0 5,0,0 bar                          # a CTA barrier in thread 5's stream
//! ```
//! The full specification is in `docs/trace-format.md`.

use super::model::{
    Access, AccessKind, Columns, Dim3, Kernel, KernelBuilder, MemSpace, Order, Trace,
};
use super::{Fail, KernelSink, Location, TraceError};
use std::io::{BufRead, Write};

use crate::config::choice::{Entry, Form};

mod stream;

pub(crate) use stream::stream_into;

/// This format in the registry of [`super::Format`] (see `config::choice`).
pub const ENTRY: Entry<super::Format> = Entry {
    name: "text",
    aliases: &["wst"],
    label: "Warpscope text (.wst)",
    description: "Warpscope's text format (.wst): kernel headers, then one access per line",
    form: Form::Plain(super::Format::Text),
};

/// Reads a text trace.
pub fn read<R: BufRead>(r: R, file: &str) -> Result<Trace, TraceError> {
    let mut trace = Trace::default();
    read_into(r, file, &mut trace)?;
    Ok(trace)
}

/// Reads a text trace, appending each kernel to `trace` once the next one starts or the file
/// ends (a caller that allows truncated input keeps the kernels before an error).
pub fn read_into<R: BufRead>(r: R, file: &str, out: &mut dyn KernelSink) -> Result<(), TraceError> {
    walk(r, file, &mut Whole { out })
}

/// What a read does with each kernel's rows: keeps them in its builder ([`Whole`]), or hands
/// them on in pieces (`stream.rs`).
trait Rows {
    /// One access or barrier of the kernel `b` is building.
    fn row(&mut self, b: &mut KernelBuilder, a: Access) -> Result<(), String>;
    /// The kernel `b` built is complete (the next begins, or the file ends).
    fn end(&mut self, b: KernelBuilder) -> Result<(), Fail>;
}

/// A whole read: each kernel built with its rows, then handed on.
struct Whole<'a> {
    out: &'a mut dyn KernelSink,
}

impl Rows for Whole<'_> {
    fn row(&mut self, b: &mut KernelBuilder, a: Access) -> Result<(), String> {
        b.push(a).map_err(|e| e.to_string())
    }
    fn end(&mut self, b: KernelBuilder) -> Result<(), Fail> {
        let k = b.finish_checked().map_err(|e| e.to_string())?;
        Ok(self.out.kernel(k)?)
    }
}

/// Reads the file's lines: headers, instructions and kernel info go to each kernel's builder,
/// its rows and its end to `rows`. Errors name the line.
fn walk<R: BufRead>(mut r: R, file: &str, rows: &mut dyn Rows) -> Result<(), TraceError> {
    let mut current: Option<KernelBuilder> = None;
    let mut line = String::new();
    let mut line_no = 0u64;
    let at = |line_no: u64, f: Fail| match f {
        Fail::File(m) => TraceError::parse(file, Location::Line(line_no), m),
        Fail::Out(e) => e,
    };
    loop {
        line.clear();
        let n = r
            .read_line(&mut line)
            .map_err(|e| TraceError::io(file, e))?;
        if n == 0 {
            break;
        }
        line_no += 1;
        let err = |msg: String| TraceError::parse(file, Location::Line(line_no), msg);
        let content = line.split('#').next().unwrap_or("").trim();
        if content.is_empty() {
            continue;
        }
        let mut tokens = content.split_whitespace();
        let first = tokens.next().unwrap_or("");
        match first {
            "kernel" => {
                if let Some(b) = current.take() {
                    rows.end(b).map_err(|f| at(line_no, f))?;
                }
                current = Some(parse_header(tokens).map_err(err)?);
            }
            "inst" => {
                let b = current
                    .as_mut()
                    .ok_or_else(|| err("`inst` before any `kernel` line".into()))?;
                let name = tokens
                    .next()
                    .ok_or_else(|| err("expected an instruction name after `inst`".into()))?;
                let mut pc = None;
                let mut src_line = 0;
                for t in tokens {
                    if let Some(v) = t.strip_prefix("line=") {
                        src_line = v.parse::<u32>().ok().filter(|&l| l > 0).ok_or_else(|| {
                            err(format!("expected a source line number from 1, found `{v}`"))
                        })?;
                        continue;
                    }
                    let v = t.strip_prefix("pc=").ok_or_else(|| {
                        err(format!("expected `pc=ADDRESS` or `line=N`, found `{t}`"))
                    })?;
                    pc = Some(
                        parse_u64(v)
                            .ok_or_else(|| err(format!("expected a pc address, found `{v}`")))?,
                    );
                }
                let id = b.instruction(name, pc);
                b.set_line(id, src_line);
            }
            "attr" | "cta-sm" | "warp-insts" | "opcode" => {
                let b = current
                    .as_mut()
                    .ok_or_else(|| err(format!("`{first}` before any `kernel` line")))?;
                let rest = content[first.len()..].trim();
                parse_info(b, first, rest).map_err(err)?;
            }
            _ => {
                let b = current.as_mut().ok_or_else(|| {
                    err("expected a `kernel NAME grid=X,Y,Z block=X,Y,Z` line first".into())
                })?;
                let access = parse_access(b, first, tokens).map_err(&err)?;
                rows.row(b, access).map_err(err)?;
            }
        }
    }
    if let Some(b) = current.take() {
        rows.end(b).map_err(|f| at(line_no, f))?;
    }
    Ok(())
}

/// The kernel info directives: `attr KEY VALUE...`, `cta-sm CTA SM`,
/// `warp-insts CTA WARP COUNT`, `opcode NAME COUNT`.
fn parse_info(b: &mut KernelBuilder, what: &str, rest: &str) -> Result<(), String> {
    let f: Vec<&str> = rest.split_whitespace().collect();
    let num = |s: &str| -> Result<u64, String> {
        s.parse()
            .map_err(|_| format!("`{what}`: expected a whole number, found `{s}`"))
    };
    let grid = b.grid();
    let cta = |s: &str| -> Result<u32, String> {
        let c = parse_index(s)
            .filter(|c| grid.contains(*c))
            .ok_or_else(|| {
                format!("`{what}`: expected a CTA index inside the grid, found `{s}`")
            })?;
        Ok(grid.linear(c) as u32)
    };
    let info = b.info_mut();
    match (what, f.as_slice()) {
        ("attr", [key, ..]) => {
            let value = rest[key.len()..].trim();
            if !info.read_special_attribute(key, value) {
                info.attributes.push((key.to_string(), value.to_string()));
            }
        }
        ("cta-sm", [c, sm]) => {
            let c = cta(c)? as usize;
            if info.cta_sm.len() <= c {
                info.cta_sm.resize(c + 1, u32::MAX);
            }
            info.cta_sm[c] = u32::try_from(num(sm)?).map_err(|e| e.to_string())?;
        }
        ("warp-insts", [c, w, n]) => info.warp_instructions.push(super::WarpInstructions {
            cta: cta(c)?,
            warp: u32::try_from(num(w)?).map_err(|e| e.to_string())?,
            count: num(n)?,
        }),
        ("opcode", [op, n]) => info.opcodes.push((op.to_string(), num(n)?)),
        _ => {
            return Err(match what {
                "attr" => "expected `attr KEY VALUE`".into(),
                "cta-sm" => "expected `cta-sm CTA SM`".into(),
                "warp-insts" => "expected `warp-insts CTA WARP COUNT`".into(),
                _ => "expected `opcode NAME COUNT`".into(),
            })
        }
    }
    Ok(())
}

fn parse_header<'a>(tokens: impl Iterator<Item = &'a str>) -> Result<KernelBuilder, String> {
    let mut tokens = tokens.peekable();
    let name = tokens
        .next()
        .ok_or("expected a kernel name after `kernel`")?;
    let (mut grid, mut block, mut order) = (None, None, Order::PerThread);
    for t in tokens {
        let (k, v) = t
            .split_once('=')
            .ok_or_else(|| format!("expected key=value, found `{t}`"))?;
        match k {
            "grid" => {
                grid =
                    Some(parse_dim3(v).ok_or_else(|| format!("expected grid=X,Y,Z, found `{t}`"))?)
            }
            "block" => {
                block = Some(
                    parse_dim3(v).ok_or_else(|| format!("expected block=X,Y,Z, found `{t}`"))?,
                )
            }
            "order" => {
                order = Order::from_name(v).ok_or_else(|| {
                    format!("expected order=thread, order=warp or order=issued, found `{t}`")
                })?
            }
            _ => {
                return Err(format!(
                    "unknown kernel attribute `{k}` (expected grid, block or order)"
                ))
            }
        }
    }
    let grid = grid.ok_or("expected grid=X,Y,Z on the kernel line")?;
    let block = block.ok_or("expected block=X,Y,Z on the kernel line")?;
    KernelBuilder::new(name, grid, block, order).map_err(|e| e.to_string())
}

fn parse_access<'a>(
    b: &mut KernelBuilder,
    cta_tok: &str,
    mut tokens: impl Iterator<Item = &'a str>,
) -> Result<Access, String> {
    let cta = parse_index(cta_tok)
        .ok_or_else(|| format!("expected a CTA index X,Y,Z, found `{cta_tok}`"))?;
    let tid_tok = tokens
        .next()
        .ok_or("expected a thread index X,Y,Z after the CTA index")?;
    let tid = parse_index(tid_tok)
        .ok_or_else(|| format!("expected a thread index X,Y,Z, found `{tid_tok}`"))?;
    if !b.grid().contains(cta) {
        return Err(format!("CTA {cta} is outside the grid {}", b.grid()));
    }
    if !b.block().contains(tid) {
        return Err(format!("thread {tid} is outside the block {}", b.block()));
    }
    let thread = (b.grid().linear(cta) * b.block().count() + b.block().linear(tid)) as u32;
    let third = tokens
        .next()
        .ok_or("expected an instruction name or `bar`")?;
    if third == "bar" {
        if let Some(extra) = tokens.next() {
            return Err(format!("unexpected `{extra}` after `bar`"));
        }
        return Ok(Access::barrier(thread));
    }
    let inst = b.instruction(third, None);
    let dyn_tok = tokens.next().ok_or("expected a dynamic instance number")?;
    let dyn_inst = dyn_tok
        .parse::<u32>()
        .map_err(|_| format!("expected a dynamic instance number, found `{dyn_tok}`"))?;
    let kind_tok = tokens
        .next()
        .ok_or("expected an access kind (ld, st, atom.OP)")?;
    let kind = AccessKind::from_token(kind_tok)
        .filter(|k| *k != AccessKind::Barrier)
        .ok_or_else(|| {
            format!("expected an access kind (ld, st, atom.add, ...), found `{kind_tok}`")
        })?;
    let addr_tok = tokens.next().ok_or("expected an address")?;
    let addr = parse_u64(addr_tok)
        .ok_or_else(|| format!("expected an address (0x... or decimal), found `{addr_tok}`"))?;
    let size_tok = tokens.next().ok_or("expected an access size in bytes")?;
    let size = size_tok
        .parse::<u16>()
        .ok()
        .filter(|&s| s > 0)
        .ok_or_else(|| {
            format!("expected an access size of 1 to 65535 bytes, found `{size_tok}`")
        })?;
    let space = match tokens.next() {
        None => MemSpace::Global,
        Some(t) => MemSpace::from_name(t).ok_or_else(|| {
            format!("expected a memory space (global, local, shared, const, tex), found `{t}`")
        })?,
    };
    if let Some(extra) = tokens.next() {
        return Err(format!("unexpected `{extra}` at the end of the line"));
    }
    Ok(Access {
        thread,
        inst,
        dyn_inst,
        addr,
        size,
        kind,
        space,
    })
}

/// An extent `X[,Y[,Z]]`; missing components are 1.
pub(crate) fn parse_dim3(s: &str) -> Option<Dim3> {
    parse_dim3_or(s, 1)
}

/// An index `X[,Y[,Z]]`; missing components are 0.
fn parse_index(s: &str) -> Option<Dim3> {
    parse_dim3_or(s, 0)
}

fn parse_dim3_or(s: &str, missing: u32) -> Option<Dim3> {
    let mut it = s.split(',');
    let x = it.next()?.parse().ok()?;
    let y = it.next().map_or(Some(missing), |v| v.parse().ok())?;
    let z = it.next().map_or(Some(missing), |v| v.parse().ok())?;
    if it.next().is_some() {
        return None;
    }
    Some(Dim3::new(x, y, z))
}

pub(crate) fn parse_u64(s: &str) -> Option<u64> {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

/// Writes a trace in the text format.
pub fn write<W: Write>(trace: &Trace, w: &mut W) -> std::io::Result<()> {
    write_header(w)?;
    for k in &trace.kernels {
        write_kernel(k, w)?;
    }
    Ok(())
}

/// Writes the file's first line; kernels follow ([`write_kernel`]).
pub fn write_header<W: Write>(w: &mut W) -> std::io::Result<()> {
    writeln!(w, "# warpscope text trace v1")
}

/// Writes one kernel: its header, info, instructions and accesses.
pub fn write_kernel<W: Write>(k: &Kernel, w: &mut W) -> std::io::Result<()> {
    write_kernel_header(k, w)?;
    write_rows(k, k.columns(), w)
}

/// Writes a kernel's `kernel` line, its info and its instructions: all that comes before its
/// rows (`k` may have none).
pub fn write_kernel_header<W: Write>(k: &Kernel, w: &mut W) -> std::io::Result<()> {
    writeln!(
        w,
        "kernel {} grid={} block={} order={}",
        token(&k.name),
        k.grid,
        k.block,
        k.order.name()
    )?;
    for (key, v) in &k.info.attributes_to_write() {
        writeln!(w, "attr {} {}", token(key), v.replace(['\n', '#'], " "))?;
    }
    for (c, sm) in k.info.cta_sm.iter().enumerate() {
        writeln!(w, "cta-sm {} {sm}", k.grid.from_linear(c as u64))?;
    }
    for c in &k.info.warp_instructions {
        let cta = k.grid.from_linear(c.cta as u64);
        writeln!(w, "warp-insts {cta} {} {}", c.warp, c.count)?;
    }
    for (op, n) in &k.info.opcodes {
        writeln!(w, "opcode {} {n}", token(op))?;
    }
    for inst in &k.instructions {
        write!(w, "inst {}", token(&inst.name))?;
        if let Some(pc) = inst.pc {
            write!(w, " pc={pc:#x}")?;
        }
        if let Some(l) = inst.line {
            write!(w, " line={l}")?;
        }
        writeln!(w)?;
    }
    Ok(())
}

/// Writes rows of kernel `k` (its header: shape and instructions) after
/// [`write_kernel_header`].
pub fn write_rows<W: Write>(k: &Kernel, cols: &Columns, w: &mut W) -> std::io::Result<()> {
    for i in 0..cols.len() {
        let (cta, tid) = k.split_thread(cols.thread[i]);
        let (kind, space) = super::model_flags(cols.flags[i]);
        if kind == AccessKind::Barrier {
            writeln!(w, "{cta} {tid} bar")?;
            continue;
        }
        let name = k
            .instructions
            .get(cols.inst[i] as usize)
            .map_or("?", |i| i.name.as_str());
        write!(
            w,
            "{cta} {tid} {} {} {} {:#x} {}",
            token(name),
            cols.dyn_inst[i],
            kind.token(),
            cols.addr[i],
            cols.size[i]
        )?;
        if space != MemSpace::Global {
            write!(w, " {}", space.name())?;
        }
        writeln!(w)?;
    }
    Ok(())
}

/// Names are single tokens in this format.
fn token(name: &str) -> String {
    let t: String = name
        .chars()
        .map(|c| {
            if c.is_whitespace() || c == '#' {
                '_'
            } else {
                c
            }
        })
        .collect();
    if t.is_empty() || t == "bar" {
        format!("_{t}")
    } else {
        t
    }
}

/// Our text format's reader: whole, or kernel by kernel through the external sort (or in
/// file order for an issued-order kernel, `stream.rs`).
pub(crate) struct TextReader;

impl super::reader::TraceReader for TextReader {
    fn read(
        &self,
        r: super::reader::Input,
        cx: &super::Ctx<'_>,
        out: &mut dyn KernelSink,
    ) -> Result<(), TraceError> {
        read_into(r, cx.file, out)
    }
    fn stream(
        &self,
        r: super::reader::Input,
        cx: &super::Ctx<'_>,
        out: &mut dyn super::CtaSink,
    ) -> Result<(), TraceError> {
        stream_into(r, cx.file, super::spill::DEFAULT_CAP, out)
    }
    fn sorts_to_stream(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "# two threads\nkernel k grid=1,1,1 block=2,1,1\ninst a\n0,0,0 1,0,0 a 0 ld 0x80 4\n0,0,0 0,0,0 a 0 ld 0x0 4\n0,0,0 0,0,0 bar\n0,0,0 0,0,0 st_b 1 st 256 8 local # trailing comment\n";

    #[test]
    fn reads_and_round_trips() {
        let t = read(SAMPLE.as_bytes(), "s.wst").unwrap();
        assert_eq!(t.kernels.len(), 1);
        let k = &t.kernels[0];
        assert_eq!(k.len(), 4);
        let a: Vec<_> = k.accesses().collect();
        assert_eq!(a[0].addr, 0);
        assert_eq!(a[1].kind, AccessKind::Barrier);
        assert_eq!(a[2].space, MemSpace::Local);
        assert_eq!(a[3].thread, 1);
        let mut out = Vec::new();
        write(&t, &mut out).unwrap();
        let again = read(out.as_slice(), "o.wst").unwrap();
        assert_eq!(again, t);
    }

    #[test]
    fn errors_name_file_line_and_expectation() {
        let bad = "kernel k grid=1,1,1 block=2,1,1\n0,0,0 0,0,0 a 0 ld 0xZZ 4\n";
        let e = read(bad.as_bytes(), "bad.wst").unwrap_err().to_string();
        assert!(e.contains("bad.wst: line 2: expected an address"), "{e}");
        let e = read("0,0,0 0,0,0 a 0 ld 0 4\n".as_bytes(), "x.wst")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 1") && e.contains("kernel"), "{e}");
        let e = read(
            "kernel k grid=1,1,1 block=2,1,1\n0,0,0 2,0,0 a 0 ld 0 4\n".as_bytes(),
            "y",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("outside the block"), "{e}");
        // Indices may leave out trailing components (they are 0).
        let t = read(
            "kernel k grid=2 block=4,2\n1 3,1 a 0 ld 0 4\n".as_bytes(),
            "z",
        )
        .unwrap();
        assert_eq!(t.kernels[0].access(0).thread, 8 + (3 + 4));
    }
}
