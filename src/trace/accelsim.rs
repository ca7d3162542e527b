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
//! opcode mix kept in [`KernelInfo`] (header keys with `_` for spaces; instructions are named
//! `OPCODE@PC`). Kernels are [`Order::PerWarp`]: a warp's k-th
//! instruction is dynamic instance k of all its active lanes.

use std::io::BufRead;
use std::path::{Path, PathBuf};

use rustc_hash::FxHashMap;

use super::lex::{self, Lines};
use super::model::{
    AccessKind, AtomicOp, Dim3, KernelBuilder, KernelInfo, MemSpace, Order, WarpInstructions,
};
use super::{source, Ctx, KernelSink, Location, TraceError};

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
    mut r: R,
    ctx: &Ctx<'_>,
    out: &mut dyn KernelSink,
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
        out.kernel(read_kernel(r, ctx.file)?)?;
        return Ok(());
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
        let opened = source::open(&path, ctx.wrap, ctx.watch)?;
        out.kernel(read_kernel(opened.reader, &path.display().to_string())?)?;
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

/// Per-warp bookkeeping while reading.
#[derive(Default)]
struct WarpCount {
    executed: u64,
    /// The `insts = N` the file announced, with the line it was on.
    announced: Option<(u64, u64)>,
}

struct Header {
    name: String,
    grid: Option<Dim3>,
    block: Option<Dim3>,
    version_major: u32,
    lineinfo: bool,
    attributes: Vec<(String, String)>,
}

/// Reads one `.traceg` stream into a kernel.
pub fn read_kernel<R: BufRead>(r: R, file: &str) -> Result<super::Kernel, TraceError> {
    let mut lines = Lines::new(r);
    let io = |e| TraceError::io(file, e);
    let mut h = Header {
        name: "kernel".into(),
        grid: None,
        block: None,
        version_major: 0,
        lineinfo: false,
        attributes: Vec::new(),
    };
    // Header up to the first TB.
    let mut saw_tb = false;
    while let Some((n, line)) = lines.next_line().map_err(io)? {
        let err = |m: String| TraceError::parse(file, Location::Line(n), m);
        let t = line.trim_ascii();
        if t.starts_with(b"#BEGIN_TB") {
            saw_tb = true;
            break;
        }
        if t.is_empty() || t.starts_with(b"#") {
            continue;
        }
        let t = std::str::from_utf8(t).map_err(|_| err("header line is not valid UTF-8".into()))?;
        let (k, v) = t
            .strip_prefix('-')
            .and_then(|kv| kv.split_once('='))
            .ok_or_else(|| {
                err(format!(
                    "expected a `-key = value` header line or #BEGIN_TB, found `{t}`"
                ))
            })?;
        let (k, v) = (k.trim(), v.trim());
        match k {
            "kernel name" => h.name = v.to_string(),
            "grid dim" => {
                h.grid =
                    Some(paren_dim3(v).ok_or_else(|| {
                        err(format!("expected `-grid dim = (X,Y,Z)`, found `{v}`"))
                    })?)
            }
            "block dim" => {
                h.block =
                    Some(paren_dim3(v).ok_or_else(|| {
                        err(format!("expected `-block dim = (X,Y,Z)`, found `{v}`"))
                    })?)
            }
            "accelsim tracer version" => {
                h.version_major = v
                    .split('.')
                    .next()
                    .and_then(|m| m.parse().ok())
                    .ok_or_else(|| {
                        err(format!(
                            "expected a tracer version like 4 or 1.2, found `{v}`"
                        ))
                    })?
            }
            "enable lineinfo" => h.lineinfo = v != "0",
            _ => {}
        }
        h.attributes.push((k.replace(' ', "_"), v.to_string()));
    }
    let at_header_end = lines.line;
    let herr = |m: &str| TraceError::parse(file, Location::Line(at_header_end), m.to_string());
    let grid = h
        .grid
        .ok_or_else(|| herr("the header has no `-grid dim = (X,Y,Z)`"))?;
    let block = h
        .block
        .ok_or_else(|| herr("the header has no `-block dim = (X,Y,Z)`"))?;
    let mut b = KernelBuilder::new(h.name.clone(), grid, block, Order::PerWarp)
        .map_err(|e| herr(&format!("grid {grid} x block {block}: {e}")))?;
    let tpb = block.count() as u32;
    let warps_per_cta = tpb.div_ceil(WARP);
    let legacy = h.version_major < 3;

    let mut warps: FxHashMap<(u32, u32), WarpCount> = FxHashMap::default();
    let mut opcodes: FxHashMap<Vec<u8>, u64> = FxHashMap::default();
    let mut pcs: FxHashMap<u64, u32> = FxHashMap::default();
    let mut in_tb = saw_tb;
    let mut cta: Option<u32> = None;
    let mut warp: Option<u32> = None;
    let mut tb_warps: Vec<u32> = Vec::new();
    let mut addrs = [0u64; WARP as usize];
    while let Some((n, line)) = lines.next_line().map_err(io)? {
        let err = |m: String| TraceError::parse(file, Location::Line(n), m);
        let t = line.trim_ascii();
        if t.is_empty() {
            continue;
        }
        if t[0] == b'#' {
            if t.starts_with(b"#BEGIN_TB") {
                if in_tb {
                    return Err(err(
                        "#BEGIN_TB inside a thread block (expected #END_TB first)".into(),
                    ));
                }
                in_tb = true;
                cta = None;
                warp = None;
            } else if t.starts_with(b"#END_TB") {
                if !in_tb {
                    return Err(err("#END_TB without #BEGIN_TB".into()));
                }
                in_tb = false;
                if let Some(c) = cta {
                    for w in tb_warps.drain(..) {
                        check_count(&warps, (c, w), file, n)?;
                    }
                }
            }
            continue;
        }
        if !in_tb {
            return Err(err(format!("expected #BEGIN_TB, found `{}`", lex::show(t))));
        }
        // Instruction lines start with a hex digit (the PC, or the line or block index); the
        // other lines start with a key. Lines starting with a decimal digit skip the key
        // checks.
        let keyed = !t[0].is_ascii_digit();
        if keyed {
            if let Some(v) = key_value(t, b"thread block") {
                let idx = lex::dim3(v).filter(|i| grid.contains(*i)).ok_or_else(|| {
                    err(format!(
                        "expected `thread block = x,y,z` inside the grid {grid}, found `{}`",
                        lex::show(t)
                    ))
                })?;
                cta = Some(grid.linear(idx) as u32);
                continue;
            }
            if let Some(v) = key_value(t, b"warp") {
                let w = lex::dec(v)
                    .filter(|&w| w < warps_per_cta as u64)
                    .ok_or_else(|| {
                        err(format!(
                            "expected `warp = W` with W below {warps_per_cta}, found `{}`",
                            lex::show(t)
                        ))
                    })? as u32;
                warp = Some(w);
                if let Some(c) = cta {
                    warps.entry((c, w)).or_default();
                    tb_warps.push(w);
                }
                continue;
            }
            if let Some(v) = key_value(t, b"insts") {
                let count = lex::dec(v).ok_or_else(|| {
                    err(format!("expected `insts = N`, found `{}`", lex::show(t)))
                })?;
                let (Some(c), Some(w)) = (cta, warp) else {
                    return Err(err("`insts =` before `thread block =` and `warp =`".into()));
                };
                warps.entry((c, w)).or_default().announced = Some((count, n));
                continue;
            }
            if t.contains(&b'=') {
                // Lines of later tracer versions that carry nothing for the cache (e.g. cluster ids).
                continue;
            }
        }
        // An instruction line.
        let mut f = lex::fields(t);
        let mut next = |what: &str| {
            f.next()
                .ok_or_else(|| err(format!("instruction line ends early: expected {what}")))
        };
        if legacy {
            let mut idx = [0u32; 3];
            for (i, v) in idx.iter_mut().enumerate() {
                let s = next("the thread block index")?;
                *v = lex::dec(s)
                    .and_then(|x| u32::try_from(x).ok())
                    .ok_or_else(|| {
                        err(format!(
                            "thread block index {i}: expected a number, found `{}`",
                            lex::show(s)
                        ))
                    })?;
            }
            let idx = Dim3::new(idx[0], idx[1], idx[2]);
            if !grid.contains(idx) {
                return Err(err(format!(
                    "thread block {idx} is outside the grid {grid}"
                )));
            }
            let s = next("the warp id")?;
            let w = lex::dec(s)
                .filter(|&w| w < warps_per_cta as u64)
                .ok_or_else(|| {
                    err(format!(
                        "warp id: expected a number below {warps_per_cta}, found `{}`",
                        lex::show(s)
                    ))
                })? as u32;
            cta = Some(grid.linear(idx) as u32);
            warp = Some(w);
        }
        let (Some(c), Some(w)) = (cta, warp) else {
            return Err(err(
                "instruction before `thread block =` and `warp =`".into()
            ));
        };
        let src_line = if h.lineinfo {
            let s = next("the source line number")?;
            lex::dec(s)
                .and_then(|l| u32::try_from(l).ok())
                .ok_or_else(|| {
                    err(format!(
                        "source line number (the file says `-enable lineinfo = 1`): expected a number, found `{}`",
                        lex::show(s)
                    ))
                })?
        } else {
            0
        };
        let s = next("the PC")?;
        let pc = lex::hex(s)
            .ok_or_else(|| err(format!("PC: expected hex, found `{}`", lex::show(s))))?;
        let s = next("the active mask")?;
        let mask = lex::hex(s)
            .and_then(|m| u32::try_from(m).ok())
            .ok_or_else(|| {
                err(format!(
                    "active mask: expected 32-bit hex, found `{}`",
                    lex::show(s)
                ))
            })?;
        let s = next("the destination count")?;
        let dsts = lex::dec(s).filter(|&d| d <= 16).ok_or_else(|| {
            err(format!(
                "destination count: expected 0 to 16, found `{}`",
                lex::show(s)
            ))
        })?;
        for _ in 0..dsts {
            next("a destination register")?;
        }
        let opcode = next("the opcode")?;
        let s = next("the source count")?;
        let srcs = lex::dec(s).filter(|&d| d <= 16).ok_or_else(|| {
            err(format!(
                "source count: expected 0 to 16, found `{}`",
                lex::show(s)
            ))
        })?;
        for _ in 0..srcs {
            next("a source register")?;
        }
        let s = next("the memory width")?;
        let width = lex::dec(s)
            .filter(|&w| w <= u16::MAX as u64)
            .ok_or_else(|| {
                err(format!(
                    "memory width: expected 0 to 65535 bytes, found `{}`",
                    lex::show(s)
                ))
            })? as u16;
        let wc = warps.entry((c, w)).or_default();
        let dyn_inst = wc.executed;
        wc.executed += 1;
        match opcodes.get_mut(opcode) {
            Some(v) => *v += 1,
            None => {
                opcodes.insert(opcode.to_vec(), 1);
            }
        }
        if width > 0 {
            let lanes = mask.count_ones() as usize;
            let s = next("the address mode")?;
            match lex::dec(s) {
                Some(0) => {
                    for a in addrs.iter_mut().take(lanes) {
                        let s = next("an address (one per active lane)")?;
                        *a = lex::hex(s).ok_or_else(|| err(format!("address: expected hex, found `{}`", lex::show(s))))?;
                    }
                }
                Some(m @ (1 | 2)) => {
                    let s = next("the base address")?;
                    let base = lex::hex(s).ok_or_else(|| err(format!("base address: expected hex, found `{}`", lex::show(s))))?;
                    let stride = if m == 1 {
                        let s = next("the stride")?;
                        Some(lex::signed(s).ok_or_else(|| err(format!("stride: expected a signed number, found `{}`", lex::show(s))))?)
                    } else {
                        None
                    };
                    let mut last = base;
                    for (i, a) in addrs.iter_mut().take(lanes).enumerate() {
                        if i > 0 {
                            let d = match stride {
                                Some(d) => d,
                                None => {
                                    let s = next("a delta (one per active lane after the first)")?;
                                    lex::signed(s).ok_or_else(|| err(format!("delta: expected a signed number, found `{}`", lex::show(s))))?
                                }
                            };
                            last = last.wrapping_add(d as u64);
                        }
                        *a = last;
                    }
                }
                _ => {
                    return Err(err(format!(
                        "address mode: expected 0 (list), 1 (base+stride) or 2 (base+deltas), found `{}`",
                        lex::show(s)
                    )))
                }
            }
            let (kind, space) = classify(opcode);
            let inst = *pcs.entry(pc).or_insert_with(|| {
                let name = format!("{}@{pc:04x}", String::from_utf8_lossy(opcode));
                let id = b.instruction(&name, Some(pc));
                b.set_line(id, src_line);
                id
            });
            // The active lanes' threads, then one append of all their rows.
            let mut threads = [0u32; WARP as usize];
            let mut k = 0;
            for lane in 0..WARP {
                if mask & (1 << lane) == 0 {
                    continue;
                }
                let local = w * WARP + lane;
                if local >= tpb {
                    return Err(err(format!(
                        "lane {lane} of warp {w} is active but the block has only {tpb} threads"
                    )));
                }
                threads[k] = c * tpb + local;
                k += 1;
            }
            let flags = super::model::pack_flags(kind, space);
            b.append_rows(|cols| {
                cols.thread.extend_from_slice(&threads[..k]);
                cols.inst.extend(std::iter::repeat_n(inst, k));
                cols.dyn_inst
                    .extend(std::iter::repeat_n(dyn_inst as u32, k));
                cols.addr.extend_from_slice(&addrs[..k]);
                cols.size.extend(std::iter::repeat_n(width, k));
                cols.flags.extend(std::iter::repeat_n(flags, k));
            })
            .map_err(|(_, e)| err(e.to_string()))?;
        }
        // One optional immediate may follow.
        let rest = f.count();
        if rest > 1 {
            return Err(err(format!(
                "{rest} unexpected fields at the end of the instruction line"
            )));
        }
    }
    if in_tb {
        return Err(TraceError::parse(
            file,
            Location::Line(lines.line),
            "file ends inside a thread block: expected #END_TB",
        ));
    }
    for (&key, wc) in &warps {
        if let Some((_, at)) = wc.announced {
            check_count(&warps, key, file, at)?;
        }
    }
    let mut warp_instructions: Vec<WarpInstructions> = warps
        .iter()
        .map(|(&(cta, warp), wc)| WarpInstructions {
            cta,
            warp,
            count: wc.executed,
        })
        .collect();
    warp_instructions.sort_by_key(|w| (w.cta, w.warp));
    let mut opcodes: Vec<(String, u64)> = opcodes
        .into_iter()
        .map(|(k, v)| (String::from_utf8_lossy(&k).into_owned(), v))
        .collect();
    opcodes.sort();
    b.set_info(KernelInfo {
        attributes: h.attributes,
        cta_sm: Vec::new(),
        warp_instructions,
        opcodes,
    });
    b.finish_checked()
        .map_err(|e| TraceError::parse(file, Location::Line(at_header_end), e.to_string()))
}

fn check_count(
    warps: &FxHashMap<(u32, u32), WarpCount>,
    key: (u32, u32),
    file: &str,
    line: u64,
) -> Result<(), TraceError> {
    if let Some(wc) = warps.get(&key) {
        if let Some((want, at)) = wc.announced {
            if want != wc.executed {
                return Err(TraceError::parse(
                    file,
                    Location::Line(line),
                    format!(
                        "warp {} of CTA {} announced `insts = {want}` (line {at}) but has {} instruction lines",
                        key.1, key.0, wc.executed
                    ),
                ));
            }
        }
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = "-kernel name = k\n-grid dim = (2,1,1)\n-block dim = (64,1,1)\n-accelsim tracer version = 4\n\n#BEGIN_TB\nthread block = 1,0,0\nwarp = 1\n";

    fn one(body: &str) -> Result<super::super::Kernel, TraceError> {
        read_kernel(format!("{HEADER}{body}").as_bytes(), "k.traceg")
    }

    #[test]
    fn address_modes_decode_per_active_lane() {
        // Lanes 0, 1 and 3 active: list, base+stride and base+deltas (popcount-1 deltas).
        let k = one("insts = 4\n0010 0000000b 1 R1 LDG.E 1 R2 4 0 0x100 0x104 0x10c\n0018 0000000b 1 R1 LDG.E.64 1 R2 8 1 0x200 8\n0020 0000000b 0 STG.E 2 R2 R3 4 2 0x300 -4 16\n0028 ffffffff 0 EXIT 0 0\n#END_TB\n").unwrap();
        let rows: Vec<_> = k
            .accesses()
            .map(|a| (a.thread, a.dyn_inst, a.addr, a.size, a.kind))
            .collect();
        let t0 = 64 + 32; // CTA 1, warp 1
        assert_eq!(
            rows,
            vec![
                (t0, 0, 0x100, 4, AccessKind::Load),
                (t0, 1, 0x200, 8, AccessKind::Load),
                (t0, 2, 0x300, 4, AccessKind::Store),
                (t0 + 1, 0, 0x104, 4, AccessKind::Load),
                (t0 + 1, 1, 0x208, 8, AccessKind::Load),
                (t0 + 1, 2, 0x2fc, 4, AccessKind::Store),
                (t0 + 3, 0, 0x10c, 4, AccessKind::Load),
                (t0 + 3, 1, 0x210, 8, AccessKind::Load),
                (t0 + 3, 2, 0x30c, 4, AccessKind::Store),
            ]
        );
        assert_eq!(k.order, Order::PerWarp);
        assert_eq!(
            k.info.warp_instructions,
            vec![WarpInstructions {
                cta: 1,
                warp: 1,
                count: 4
            }]
        );
        assert_eq!(k.info.attribute("accelsim_tracer_version"), Some("4"));
        assert_eq!(k.instructions[0].pc, Some(0x10));
    }

    #[test]
    fn reading_popcount_deltas_like_accel_sim_is_an_error() {
        // Two active lanes: one delta. Two deltas leave a stray field.
        let e = one("insts = 1\n0010 00000003 0 STG.E 2 R2 R3 4 2 0x300 4 4 4\n#END_TB\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("line 10") && e.contains("unexpected fields"),
            "{e}"
        );
    }

    #[test]
    fn malformed_input_names_the_line_and_what_was_expected() {
        for (body, want) in [
            (
                "insts = 2\n0010 ffffffff 0 NOP 0 0\n#END_TB\n",
                "announced `insts = 2`",
            ),
            (
                "insts = 1\n0010 ffffffff 0 LDG.E 1 R2 4 0 0x1\n#END_TB\n",
                "expected an address",
            ),
            (
                "insts = 1\n0010 ffffffff 0 LDG.E 1 R2 4 7 0x1\n#END_TB\n",
                "address mode",
            ),
            ("insts = 1\n0010 zz 0 NOP 0 0\n#END_TB\n", "active mask"),
            ("insts = 1\n0010 ffffffff 0 NOP 0 0\n", "expected #END_TB"),
        ] {
            let e = one(body).unwrap_err().to_string();
            assert!(
                e.starts_with("k.traceg: line ") && e.contains(want),
                "{body}: {e}"
            );
        }
        // Lanes beyond the block's threads.
        let e = read_kernel(
            "-grid dim = (1,1,1)\n-block dim = (40,1,1)\n-accelsim tracer version = 4\n#BEGIN_TB\nthread block = 0,0,0\nwarp = 1\ninsts = 1\n0010 000001ff 0 LDG.E 1 R2 4 1 0x0 4\n#END_TB\n".as_bytes(),
            "b",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("only 40 threads"), "{e}");
    }

    #[test]
    fn legacy_versions_carry_the_block_and_warp_on_each_line() {
        let k = read_kernel(
            "-grid dim = (2,1,1)\n-block dim = (32,1,1)\n-accelsim tracer version = 2\nenable lineinfo = 0\n#BEGIN_TB\nthread block = 1,0,0\n1 0 0 0 0010 00000001 0 LDG.E 1 R2 4 0 0x40\n#END_TB\n"
                .replace("enable lineinfo = 0\n", "")
                .as_bytes(),
            "old",
        )
        .unwrap();
        assert_eq!(k.access(0).thread, 32);
        assert_eq!(k.access(0).addr, 0x40);
    }

    #[test]
    fn lineinfo_traces_keep_each_instructions_source_line() {
        let head = "-grid dim = (1,1,1)\n-block dim = (32,1,1)\n-accelsim tracer version = 4\n-enable lineinfo = 1\n#BEGIN_TB\nthread block = 0,0,0\nwarp = 0\ninsts = 4\n";
        let k = read_kernel(
            format!("{head}3 0000 ffffffff 1 R1 MOV 0 0\n7 0010 ffffffff 1 R2 LDG.E 1 R4 4 1 0x100 4\n7 0020 ffffffff 1 R3 LDG.E 1 R6 4 1 0x200 4\n0 0030 ffffffff 0 STG.E 2 R8 R3 4 1 0x300 4\n#END_TB\n").as_bytes(),
            "k.traceg",
        )
        .unwrap();
        let lines: Vec<(&str, Option<u32>)> = k
            .instructions
            .iter()
            .map(|i| (i.name.as_str(), i.line))
            .collect();
        assert_eq!(
            lines,
            [
                ("LDG.E@0010", Some(7)),
                ("LDG.E@0020", Some(7)),
                ("STG.E@0030", None)
            ]
        );
        // Without the header key the first field is the PC, and no line is invented.
        let plain = read_kernel(
            format!(
                "{}0010 ffffffff 1 R2 LDG.E 1 R4 4 1 0x100 4\n#END_TB\n",
                head.replace("-enable lineinfo = 1\n", "")
                    .replace("insts = 4", "insts = 1")
            )
            .as_bytes(),
            "k.traceg",
        )
        .unwrap();
        assert_eq!(plain.instructions[0].line, None);
        assert_eq!(plain.instructions[0].pc, Some(0x10));
        let e = read_kernel(
            format!("{head}x7 0010 ffffffff 1 R2 LDG.E 1 R4 4 1 0x100 4\n#END_TB\n").as_bytes(),
            "k.traceg",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("line 9") && e.contains("source line number"),
            "{e}"
        );
    }

    #[test]
    fn opcodes_map_to_kind_and_space() {
        assert_eq!(classify(b"LDG.E.CG"), (AccessKind::Load, MemSpace::Global));
        assert_eq!(classify(b"LDS.U.128"), (AccessKind::Load, MemSpace::Shared));
        assert_eq!(classify(b"STL.64"), (AccessKind::Store, MemSpace::Local));
        assert_eq!(
            classify(b"ATOM.E.CAS"),
            (AccessKind::Atomic(AtomicOp::Cas), MemSpace::Global)
        );
        assert_eq!(
            classify(b"RED.E.ADD.F32.FTZ.RN"),
            (AccessKind::Atomic(AtomicOp::Add), MemSpace::Global)
        );
        assert_eq!(
            classify(b"ATOMS.EXCH"),
            (AccessKind::Atomic(AtomicOp::Exch), MemSpace::Shared)
        );
    }
}
