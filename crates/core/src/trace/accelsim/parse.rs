//! The `.traceg` parser, thread block by thread block: its header first, then each
//! `#BEGIN_TB` ... `#END_TB` block's accesses appended to a buffer the caller owns. Reading a
//! kernel whole ([`super::read_kernel`]) gives it one buffer for every block; streaming it
//! CTA by CTA ([`super::stream`]) gives it one block's buffer at a time, after a first pass
//! that only scans ([`Mode::Scan`]) has found every instruction, so that the kernel's header
//! is complete before its first CTA is handed on.

use std::io::BufRead;

use rustc_hash::{FxHashMap, FxHashSet};

use super::super::lex::{self, Lines};
use super::super::model::{Columns, Dim3, Instruction, KernelInfo, LoadGroups, WarpInstructions};
use super::super::{AccessKind, MemSpace};
use super::super::{Location, TraceError};
use super::header::{read_header, Header};
use super::{classify, key_value, WARP};

/// What a pass over the file does with its instruction lines.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Mode {
    /// Decodes every access into rows, declaring instructions as they are first seen.
    Read,
    /// Finds the instructions, the counts and the CTA of each block; decodes no address.
    Scan,
    /// Decodes every access into rows with the instructions a scan found; an instruction the
    /// scan did not see is an error (the file changed between the passes).
    Reread,
}

/// Per-warp bookkeeping while reading.
#[derive(Default)]
struct WarpCount {
    executed: u64,
    /// The `insts = N` the file announced, with the line it was on.
    announced: Option<(u64, u64)>,
    /// Registers R0-R255 written by the global loads of the current group.
    pending: [u64; 4],
    /// Global loads in the current group: loads issued since an instruction last read a
    /// register one of them wrote (a group's loads can be in flight together).
    group: u64,
}

/// One thread block read by [`Parser::next_block`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Block {
    /// The line of its `#BEGIN_TB`.
    pub line: u64,
    /// The CTA (linear id) every access of the block belongs to; `None` when it has no
    /// access, or when its accesses belong to more than one CTA ([`Block::mixed`]).
    pub cta: Option<u32>,
    pub mixed: bool,
    /// Its accesses (rows).
    pub rows: u64,
}

/// What a whole pass found besides the rows: the kernel's instructions, in the order first
/// seen, and its source facts.
pub(super) struct Found {
    pub instructions: Vec<Instruction>,
    pub info: KernelInfo,
}

/// Reads one `.traceg` stream.
pub(super) struct Parser<'f, R> {
    lines: Lines<R>,
    /// True when the header ended at a `#BEGIN_TB` (the first block has begun).
    begun: bool,
    fx: Fixed<'f>,
    tb: Tables,
}

/// What does not change during a pass.
struct Fixed<'f> {
    file: &'f str,
    mode: Mode,
    header: Header,
    tpb: u32,
    warps_per_cta: u32,
}

/// What a pass accumulates.
struct Tables {
    warps: FxHashMap<(u32, u32), WarpCount>,
    opcodes: FxHashMap<Vec<u8>, u64>,
    pcs: FxHashMap<u64, u32>,
    instructions: Vec<Instruction>,
    addrs: [u64; WARP as usize],
    /// Global loads and closed groups of them (see [`WarpCount::group`]).
    load_groups: LoadGroups,
    /// Set for a read that steps over lines of CTAs it does not decode ([`Parser::skim`]).
    skim: Option<Skim>,
}

/// What lets a read that only numbers instructions step over a line after its PC and mask.
/// A line can name a new instruction only at a PC not numbered yet. Lines at PCs numbered
/// already are stepped over (one access per active lane). So are lines at PCs seen only at
/// lines that are not memory instructions, unless `held` has them: then a memory
/// instruction at that PC was numbered by the run, which must be found again. (The counts
/// the lines stepped over would add to the opcodes and load groups are not kept: a read that
/// skims gives the kernel's facts to no one.)
struct Skim {
    /// The PCs of the instructions a copy of a session holds.
    held: FxHashSet<u64>,
    /// PCs seen at lines that are not memory instructions.
    plain: FxHashSet<u64>,
}

impl<'f, R: BufRead> Parser<'f, R> {
    /// Reads the header (up to the first `#BEGIN_TB`).
    pub fn new(r: R, file: &'f str, mode: Mode) -> Result<Self, TraceError> {
        let mut lines = Lines::new(r);
        let (header, begun) = read_header(&mut lines, file)?;
        let tpb = header.block.count() as u32;
        Ok(Parser {
            lines,
            begun,
            fx: Fixed {
                file,
                mode,
                tpb,
                warps_per_cta: tpb.div_ceil(WARP),
                header,
            },
            tb: Tables {
                warps: FxHashMap::default(),
                opcodes: FxHashMap::default(),
                pcs: FxHashMap::default(),
                instructions: Vec::new(),
                addrs: [0; WARP as usize],
                load_groups: LoadGroups::default(),
                skim: None,
            },
        })
    }

    /// The kernel file's header.
    pub fn header(&self) -> &Header {
        &self.fx.header
    }

    /// For [`Mode::Reread`]: the instructions the scan found, in its ids.
    pub fn known_instructions(&mut self, instructions: &[Instruction]) {
        self.tb.instructions = instructions.to_vec();
        self.tb.pcs = instructions
            .iter()
            .enumerate()
            .filter_map(|(i, inst)| Some((inst.pc?, i as u32)))
            .collect();
    }

    /// For [`Mode::Read`] on from a copy of a session that holds the instructions `held`:
    /// the lines of the CTAs [`Parser::next_block_for`] does not decode are read only as far
    /// as numbering the instructions needs (see [`Skim`]); [`Parser::finish`]'s counts then
    /// leave them out.
    pub fn skim(&mut self, held: &[Instruction]) {
        self.tb.skim = Some(Skim {
            held: held.iter().filter_map(|i| i.pc).collect(),
            plain: FxHashSet::default(),
        });
    }

    /// The instructions declared so far, in id order (in [`Mode::Read`], as first seen).
    pub fn instructions(&self) -> &[Instruction] {
        &self.tb.instructions
    }

    /// The number of the last line read.
    pub fn line(&self) -> u64 {
        self.lines.line
    }

    /// Threads per CTA.
    pub fn threads_per_cta(&self) -> u32 {
        self.fx.tpb
    }

    fn err(&self, line: u64, m: impl Into<String>) -> TraceError {
        TraceError::parse(self.fx.file, Location::Line(line), m)
    }

    /// Reads the next thread block, appending its accesses to `rows` (not in [`Mode::Scan`]);
    /// `None` at the end of the file.
    pub fn next_block(&mut self, rows: &mut Columns) -> Result<Option<Block>, TraceError> {
        self.next_block_for(rows, &|_| true)
    }

    /// [`Parser::next_block`], decoding only the accesses of the CTAs `decode` names (the
    /// others are counted and their instructions numbered, as in [`Mode::Scan`], and
    /// skimmed after [`Parser::skim`]).
    pub fn next_block_for(
        &mut self,
        rows: &mut Columns,
        decode: &dyn Fn(u32) -> bool,
    ) -> Result<Option<Block>, TraceError> {
        let io = |e| TraceError::io(self.fx.file, e);
        let Some(start) = self.begin_block()? else {
            return Ok(None);
        };
        let mut block = Block {
            line: start,
            cta: None,
            mixed: false,
            rows: 0,
        };
        let mut at = WarpAt::default();
        let mut tb_warps: Vec<u32> = Vec::new();
        loop {
            let Some((n, line)) = self.lines.next_line().map_err(io)? else {
                return Err(self.err(
                    self.lines.line,
                    "file ends inside a thread block: expected #END_TB",
                ));
            };
            let t = line.trim_ascii();
            if t.is_empty() {
                continue;
            }
            if t[0] == b'#' {
                if t.starts_with(b"#BEGIN_TB") {
                    return Err(TraceError::parse(
                        self.fx.file,
                        Location::Line(n),
                        "#BEGIN_TB inside a thread block (expected #END_TB first)",
                    ));
                }
                if t.starts_with(b"#END_TB") {
                    if let Some(c) = at.cta {
                        for w in tb_warps.drain(..) {
                            check_count(&self.tb.warps, (c, w), self.fx.file, n)?;
                        }
                    }
                    return Ok(Some(block));
                }
                continue;
            }
            // Instruction lines start with a hex digit (the PC, or the line or block index);
            // the other lines start with a key. Lines starting with a decimal digit skip the
            // key checks.
            if !t[0].is_ascii_digit()
                && key_line(&self.fx, &mut self.tb, t, n, &mut at, &mut tb_warps)?
            {
                continue;
            }
            let added = instruction(&self.fx, &mut self.tb, t, n, &mut at, rows, decode)?;
            if let (Some(c), true) = (at.cta, added > 0) {
                block.rows += added;
                match block.cta {
                    None if !block.mixed => block.cta = Some(c),
                    Some(b) if b != c => {
                        block.cta = None;
                        block.mixed = true;
                    }
                    _ => {}
                }
            }
        }
    }

    /// Reads up to the next block's `#BEGIN_TB` (already read if [`Parser::skim`] stopped
    /// there) and gives its line; `None` at the end of the file.
    fn begin_block(&mut self) -> Result<Option<u64>, TraceError> {
        if std::mem::take(&mut self.begun) {
            return Ok(Some(self.lines.line));
        }
        let io = |e| TraceError::io(self.fx.file, e);
        loop {
            let Some((n, line)) = self.lines.next_line().map_err(io)? else {
                return Ok(None);
            };
            let t = line.trim_ascii();
            if t.starts_with(b"#BEGIN_TB") {
                return Ok(Some(n));
            }
            if t.starts_with(b"#END_TB") {
                return Err(self.err(n, "#END_TB without #BEGIN_TB"));
            }
            if t.is_empty() || t[0] == b'#' {
                continue;
            }
            let m = format!("expected #BEGIN_TB, found `{}`", lex::show(t));
            return Err(self.err(n, m));
        }
    }

    /// Ends the pass: every warp's announced count is checked, and the instructions and
    /// source facts are returned.
    pub fn finish(self) -> Result<Found, TraceError> {
        for (&key, wc) in &self.tb.warps {
            if let Some((_, at)) = wc.announced {
                check_count(&self.tb.warps, key, self.fx.file, at)?;
            }
        }
        let mut warp_instructions: Vec<WarpInstructions> = self
            .tb
            .warps
            .iter()
            .map(|(&(cta, warp), wc)| WarpInstructions {
                cta,
                warp,
                count: wc.executed,
            })
            .collect();
        warp_instructions.sort_by_key(|w| (w.cta, w.warp));
        let mut opcodes: Vec<(String, u64)> = self
            .tb
            .opcodes
            .into_iter()
            .map(|(k, v)| (String::from_utf8_lossy(&k).into_owned(), v))
            .collect();
        opcodes.sort();
        let mut load_groups = self.tb.load_groups;
        load_groups.groups += self.tb.warps.values().filter(|w| w.group > 0).count() as u64;
        Ok(Found {
            instructions: self.tb.instructions,
            info: KernelInfo {
                attributes: self.fx.header.attributes,
                cta_sm: Vec::new(),
                warp_instructions,
                opcodes,
                load_groups,
            },
        })
    }
}

/// The thread block (its linear id) and warp that the instruction lines that follow belong
/// to, as the lines before them said.
#[derive(Clone, Copy, Default)]
struct WarpAt {
    cta: Option<u32>,
    warp: Option<u32>,
}

/// An instruction line's fields, taken in order, and its errors (which name the file and the
/// line).
struct Line<'t, 'f> {
    fields: lex::Fields<'t>,
    file: &'f str,
    n: u64,
}

impl<'t> Line<'t, '_> {
    fn err(&self, m: String) -> TraceError {
        TraceError::parse(self.file, Location::Line(self.n), m)
    }
    fn next(&mut self, what: &str) -> Result<&'t [u8], TraceError> {
        match self.fields.next() {
            Some(s) => Ok(s),
            None => Err(self.err(format!("instruction line ends early: expected {what}"))),
        }
    }
    /// A number below `limit`, or an error saying what was `expected` (made only then).
    fn number(
        &mut self,
        what: &str,
        limit: u64,
        expected: impl FnOnce() -> String,
    ) -> Result<u64, TraceError> {
        let s = self.next(what)?;
        lex::dec(s)
            .filter(|&v| v < limit)
            .ok_or_else(|| self.err(format!("{}, found `{}`", expected(), lex::show(s))))
    }
    /// The end of the line: one optional immediate may follow.
    fn end(&mut self) -> Result<(), TraceError> {
        match self.fields.by_ref().count() {
            rest @ 2.. => Err(self.err(format!(
                "{rest} unexpected fields at the end of the instruction line"
            ))),
            _ => Ok(()),
        }
    }
}

/// Takes line `t` (line `n`) if it is a `key = value` line inside a block (`thread block`,
/// `warp`, `insts`, or one later tracers add that carries nothing for the cache), noting
/// where the warp lines that follow belong; `false` for an instruction line.
fn key_line(
    fx: &Fixed<'_>,
    tb: &mut Tables,
    t: &[u8],
    n: u64,
    at: &mut WarpAt,
    tb_warps: &mut Vec<u32>,
) -> Result<bool, TraceError> {
    let (grid, file) = (fx.header.grid, fx.file);
    let err = |m: String| TraceError::parse(file, Location::Line(n), m);
    if let Some(v) = key_value(t, b"thread block") {
        let idx = lex::dim3(v).filter(|i| grid.contains(*i)).ok_or_else(|| {
            err(format!(
                "expected `thread block = x,y,z` inside the grid {grid}, found `{}`",
                lex::show(t)
            ))
        })?;
        at.cta = Some(grid.linear(idx) as u32);
        return Ok(true);
    }
    if let Some(v) = key_value(t, b"warp") {
        let w = lex::dec(v)
            .filter(|&w| w < fx.warps_per_cta as u64)
            .ok_or_else(|| {
                err(format!(
                    "expected `warp = W` with W below {}, found `{}`",
                    fx.warps_per_cta,
                    lex::show(t)
                ))
            })? as u32;
        at.warp = Some(w);
        if let Some(c) = at.cta {
            tb.warps.entry((c, w)).or_default();
            tb_warps.push(w);
        }
        return Ok(true);
    }
    if let Some(v) = key_value(t, b"insts") {
        let count = lex::dec(v)
            .ok_or_else(|| err(format!("expected `insts = N`, found `{}`", lex::show(t))))?;
        let (Some(c), Some(w)) = (at.cta, at.warp) else {
            return Err(err("`insts =` before `thread block =` and `warp =`".into()));
        };
        tb.warps.entry((c, w)).or_default().announced = Some((count, n));
        return Ok(true);
    }
    // Lines of later tracer versions that carry nothing for the cache (e.g. cluster ids).
    Ok(t.contains(&b'='))
}

/// An instruction line's PC and active mask.
#[inline]
fn pc_and_mask(line: &mut Line) -> Result<(u64, u32), TraceError> {
    let s = line.next("the PC")?;
    let pc = lex::hex(s)
        .ok_or_else(|| line.err(format!("PC: expected hex, found `{}`", lex::show(s))))?;
    let s = line.next("the active mask")?;
    let mask = lex::hex(s)
        .and_then(|m| u32::try_from(m).ok())
        .ok_or_else(|| {
            line.err(format!(
                "active mask: expected 32-bit hex, found `{}`",
                lex::show(s)
            ))
        })?;
    Ok((pc, mask))
}

/// The id of a PC met for the first time: a new instruction, named by its opcode and PC (a
/// second read of the file must not meet one).
fn new_instruction(
    fx: &Fixed<'_>,
    tb: &mut Tables,
    line: &Line,
    pc: u64,
    opcode: &[u8],
    src_line: u32,
) -> Result<u32, TraceError> {
    if fx.mode == Mode::Reread {
        return Err(line.err(format!(
            "instruction at PC {pc:#x} was not in the file when it was first read: \
             the file changed while it was read"
        )));
    }
    let id = tb.instructions.len() as u32;
    tb.instructions.push(Instruction {
        name: format!("{}@{pc:04x}", String::from_utf8_lossy(opcode)),
        pc: Some(pc),
        line: (src_line != 0).then_some(src_line),
    });
    tb.pcs.insert(pc, id);
    Ok(id)
}

/// One instruction line (line `n`); returns the accesses it made (appended to `rows`
/// unless scanning, or unless `decode` leaves out its CTA). Legacy lines set the block and
/// warp.
fn instruction(
    fx: &Fixed<'_>,
    tb: &mut Tables,
    t: &[u8],
    n: u64,
    at: &mut WarpAt,
    rows: &mut Columns,
    decode: &dyn Fn(u32) -> bool,
) -> Result<u64, TraceError> {
    let mut line = Line {
        fields: lex::fields(t),
        file: fx.file,
        n,
    };
    if fx.header.legacy {
        let (c, w) = legacy_place(fx, &mut line)?;
        *at = WarpAt {
            cta: Some(c),
            warp: Some(w),
        };
    }
    let (Some(c), Some(w)) = (at.cta, at.warp) else {
        return Err(line.err("instruction before `thread block =` and `warp =`".into()));
    };
    let src_line = if fx.header.lineinfo {
        let expected = || {
            "source line number (the file says `-enable lineinfo = 1`): expected a number".into()
        };
        line.number("the source line number", 1 << 32, expected)? as u32
    } else {
        0
    };
    let (pc, mask) = pc_and_mask(&mut line)?;
    // A CTA read only to number the instructions, by a read that skims (`Skim`): a line at
    // a PC that cannot name a new instruction is counted and stepped over.
    let decoded = fx.mode != Mode::Scan && decode(c);
    let skimming = fx.mode == Mode::Read && !decoded;
    if let (true, Some(sk)) = (skimming, &tb.skim) {
        let lanes = if tb.pcs.contains_key(&pc) {
            Some(mask.count_ones().into())
        } else {
            (sk.plain.contains(&pc) && !sk.held.contains(&pc)).then_some(0)
        };
        if let Some(lanes) = lanes {
            tb.warps.entry((c, w)).or_default().executed += 1;
            return Ok(lanes);
        }
    }
    let dst = registers(&mut line, DESTINATIONS)?;
    let opcode = line.next("the opcode")?;
    let src = registers(&mut line, SOURCES)?;
    let width = line.number("the memory width", u16::MAX as u64 + 1, || {
        "memory width: expected 0 to 65535 bytes".into()
    })? as u16;
    if let (true, Some(sk), 0) = (skimming, &mut tb.skim, width) {
        sk.plain.insert(pc);
    }
    let wc = tb.warps.entry((c, w)).or_default();
    let dyn_inst = wc.executed;
    wc.executed += 1;
    // `classify` names memory instructions only: ask it about those alone.
    let global_load = width > 0 && classify(opcode) == (AccessKind::Load, MemSpace::Global);
    group_loads(wc, &mut tb.load_groups, global_load, &dst, &src);
    match tb.opcodes.get_mut(opcode) {
        Some(v) => *v += 1,
        None => {
            tb.opcodes.insert(opcode.to_vec(), 1);
        }
    }
    if width == 0 {
        return line.end().map(|()| 0);
    }
    let (threads, lanes) = active_threads(fx, &line, c, w, mask)?;
    let inst = match tb.pcs.get(&pc) {
        Some(&id) => id,
        None => new_instruction(fx, tb, &line, pc, opcode, src_line)?,
    };
    if !decoded {
        // The addresses are decoded (and checked) by the pass that reads them.
        return Ok(lanes as u64);
    }
    let addrs = &mut tb.addrs;
    addresses(&mut line, &mut addrs[..lanes])?;
    line.end()?;
    if rows.len() + lanes >= u32::MAX as usize {
        return Err(line.err("more than 2^32 accesses in one kernel".into()));
    }
    let (kind, space) = classify(opcode);
    let flags = super::super::model::pack_flags(kind, space);
    rows.thread.extend_from_slice(&threads[..lanes]);
    rows.inst.extend(std::iter::repeat_n(inst, lanes));
    rows.dyn_inst
        .extend(std::iter::repeat_n(dyn_inst as u32, lanes));
    rows.addr.extend_from_slice(&addrs[..lanes]);
    rows.size.extend(std::iter::repeat_n(width, lanes));
    rows.flags.extend(std::iter::repeat_n(flags, lanes));
    Ok(lanes as u64)
}

/// A legacy line's thread block index and warp id (CTA, warp), checked against the grid.
fn legacy_place(fx: &Fixed<'_>, line: &mut Line<'_, '_>) -> Result<(u32, u32), TraceError> {
    let grid = fx.header.grid;
    let mut idx = [0u32; 3];
    for (i, v) in idx.iter_mut().enumerate() {
        let s = line.next("the thread block index")?;
        *v = lex::dec(s)
            .and_then(|x| u32::try_from(x).ok())
            .ok_or_else(|| {
                line.err(format!(
                    "thread block index {i}: expected a number, found `{}`",
                    lex::show(s)
                ))
            })?;
    }
    let idx = Dim3::new(idx[0], idx[1], idx[2]);
    if !grid.contains(idx) {
        return Err(line.err(format!("thread block {idx} is outside the grid {grid}")));
    }
    let below = fx.warps_per_cta;
    let expected = || format!("warp id: expected a number below {below}");
    let w = line.number("the warp id", below as u64, expected)? as u32;
    Ok((grid.linear(idx) as u32, w))
}

/// The words of a register list's errors: its count, a register, what its count must be.
struct RegisterWords {
    count: &'static str,
    one: &'static str,
    expected: &'static str,
}
const DESTINATIONS: RegisterWords = RegisterWords {
    count: "the destination count",
    one: "a destination register",
    expected: "destination count: expected 0 to 16",
};
const SOURCES: RegisterWords = RegisterWords {
    count: "the source count",
    one: "a source register",
    expected: "source count: expected 0 to 16",
};

/// A count (0 to 16) of registers, then the registers.
fn registers(
    line: &mut Line<'_, '_>,
    words: RegisterWords,
) -> Result<[Option<u8>; 16], TraceError> {
    let count = line.number(words.count, 17, || words.expected.into())?;
    let mut regs = [None; 16];
    for r in regs.iter_mut().take(count as usize) {
        *r = register(line.next(words.one)?);
    }
    Ok(regs)
}

/// The threads of the active lanes of warp `w` of CTA `c` (and how many).
fn active_threads(
    fx: &Fixed<'_>,
    line: &Line<'_, '_>,
    c: u32,
    w: u32,
    mask: u32,
) -> Result<([u32; WARP as usize], usize), TraceError> {
    let mut threads = [0u32; WARP as usize];
    let mut k = 0;
    for lane in 0..WARP {
        if mask & (1 << lane) == 0 {
            continue;
        }
        let local = w * WARP + lane;
        if local >= fx.tpb {
            return Err(line.err(format!(
                "lane {lane} of warp {w} is active but the block has only {} threads",
                fx.tpb
            )));
        }
        threads[k] = c * fx.tpb + local;
        k += 1;
    }
    Ok((threads, k))
}

/// The addresses of the active lanes, in one of the three address modes: a list, base and
/// stride, or base and deltas.
fn addresses(line: &mut Line<'_, '_>, addrs: &mut [u64]) -> Result<(), TraceError> {
    let s = line.next("the address mode")?;
    match lex::dec(s) {
        Some(0) => {
            for a in addrs.iter_mut() {
                let s = line.next("an address (one per active lane)")?;
                *a = lex::hex(s).ok_or_else(|| {
                    line.err(format!("address: expected hex, found `{}`", lex::show(s)))
                })?;
            }
        }
        Some(m @ (1 | 2)) => {
            let s = line.next("the base address")?;
            let base = lex::hex(s).ok_or_else(|| {
                line.err(format!(
                    "base address: expected hex, found `{}`",
                    lex::show(s)
                ))
            })?;
            let signed = |line: &mut Line<'_, '_>, what: &str, name: &str| {
                let s = line.next(what)?;
                lex::signed(s).ok_or_else(|| {
                    line.err(format!(
                        "{name}: expected a signed number, found `{}`",
                        lex::show(s)
                    ))
                })
            };
            let stride = if m == 1 {
                Some(signed(line, "the stride", "stride")?)
            } else {
                None
            };
            let mut last = base;
            for (i, a) in addrs.iter_mut().enumerate() {
                if i > 0 {
                    let d = match stride {
                        Some(d) => d,
                        None => signed(
                            line,
                            "a delta (one per active lane after the first)",
                            "delta",
                        )?,
                    };
                    last = last.wrapping_add(d as u64);
                }
                *a = last;
            }
        }
        _ => {
            return Err(line.err(format!(
                "address mode: expected 0 (list), 1 (base+stride) or 2 (base+deltas), found `{}`",
                lex::show(s)
            )))
        }
    }
    Ok(())
}

/// The register number of an `R<n>` operand (`RZ` and other files are not tracked).
fn register(token: &[u8]) -> Option<u8> {
    let digits = token.strip_prefix(b"R")?;
    std::str::from_utf8(digits)
        .ok()?
        .parse::<u8>()
        .ok()
        .filter(|&r| r < 255)
}

/// Independent loads (Dasgupta 2011 §3.2.1.3): a warp's global loads form groups that can be
/// in flight together; a group ends when an instruction reads a register a load of the group
/// wrote (the warp must wait for it). Registers a later instruction overwrites leave the group.
fn group_loads(
    wc: &mut WarpCount,
    lg: &mut LoadGroups,
    load: bool,
    dst: &[Option<u8>],
    src: &[Option<u8>],
) {
    let has = |p: &[u64; 4], r: u8| p[r as usize / 64] >> (r % 64) & 1 == 1;
    if src.iter().flatten().any(|&r| has(&wc.pending, r)) {
        if wc.group > 0 {
            lg.groups += 1;
        }
        wc.group = 0;
        wc.pending = [0; 4];
    }
    for &r in dst.iter().flatten() {
        let (word, bit) = (r as usize / 64, 1u64 << (r % 64));
        if load {
            wc.pending[word] |= bit;
        } else {
            wc.pending[word] &= !bit;
        }
    }
    if load {
        wc.group += 1;
        lg.loads += 1;
    }
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
