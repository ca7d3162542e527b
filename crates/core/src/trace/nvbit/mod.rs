//! NVBit's `mem_trace` tool output:
//!
//! ```text
//! MEMTRACE: CTX 0x... - LAUNCH - Kernel pc 0x... - Kernel name k - grid launch id 1 - grid size 2,1,1 - block size 64,1,1 - nregs 20 - shmem 0 - cuda stream id 0
//! MEMTRACE: CTX 0x... - grid_launch_id 1 - CTA 0,0,0 - warp 3 - LDG.E.64 - 0x... (32 addresses)
//! ```
//!
//! Lines that do not begin with `MEMTRACE: ` are the application's own output and are skipped.
//! Each access line is one warp instruction; a zero address is an inactive lane. The `warp`
//! number is the hardware warp slot on the SM, not the warp's index in its CTA: the first slot
//! seen in a CTA becomes its warp 0, the next new slot warp 1, and so on (a CTA keeps its slots
//! while it runs). The access size comes from the opcode (`.8`/`.U8`/`.S8` 1, `.16` 2, `.64`
//! 8, `.128` 16, else 4). Lines are in the order the GPU produced them, so kernels are
//! [`Order::Issued`]; the instruction is the opcode (the tool records no PC).
//!
//! [`read_into`] holds every launch until the end of the log (launches may interleave);
//! `stream.rs` reads a file twice instead and hands each launch on in chunks, and
//! `one_pass.rs` reads it once for a receiver that takes instructions as they are found.

use std::io::BufRead;
use std::ops::Range;
use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::accelsim::classify;
use super::lex::{self, Lines};
use super::model::{Access, KernelBuilder, Order};
use super::{KernelSink, Location, TraceError};

use crate::config::choice::{Entry, Form};

/// This format in the registry of [`super::Format`] (see `config::choice`).
pub const ENTRY: Entry<super::Format> = Entry {
    name: "nvbit",
    aliases: &["mem_trace"],
    label: "NVBit mem_trace",
    description: "NVBit's mem_trace tool output (MEMTRACE: lines)",
    form: Form::Plain(super::Format::NvBit),
};

mod one_pass;
mod stream;
pub(crate) use one_pass::stream_from;
pub use one_pass::Resume;
pub(crate) use stream::stream_into;

/// Lanes of a warp: every access line has one address for each.
const LANES: u32 = 32;

/// One kernel launch of the log, as its lines so far declared it.
#[derive(Clone)]
struct Launch {
    /// Position among the log's LAUNCH lines.
    index: usize,
    /// The launch's shape and instructions (and, read whole, its rows).
    builder: KernelBuilder,
    /// Threads per CTA.
    tpb: u32,
    /// (CTA, hardware slot) -> warp index in the CTA.
    slots: FxHashMap<(u32, u32), u32>,
    warps_in_cta: FxHashMap<u32, u32>,
    /// Warp instructions so far: each line is its own dynamic instance.
    lines: u32,
    /// Its lines ended (another launch's began) and its slot tables were dropped.
    retired: bool,
}

impl Launch {
    /// The launch once its lines have ended: its slot tables dropped (not copied first when
    /// a copy of the walk shares them).
    fn retired(&self) -> Launch {
        Launch {
            index: self.index,
            builder: self.builder.clone(),
            tpb: self.tpb,
            slots: FxHashMap::default(),
            warps_in_cta: FxHashMap::default(),
            lines: self.lines,
            retired: true,
        }
    }
}

/// One access line, its lanes not yet decoded.
struct WarpLine<'a> {
    /// Linear CTA index in the grid.
    cta: u32,
    /// Warp index in the CTA.
    warp: u32,
    inst: u32,
    dyn_inst: u32,
    opcode: &'a [u8],
    addrs: &'a [u8],
}

impl WarpLine<'_> {
    /// Decodes the 32 lanes' addresses, calling `active` with each active lane's access (a
    /// zero address is an inactive lane).
    fn lanes(
        &self,
        tpb: u32,
        mut active: impl FnMut(Access) -> Result<(), String>,
    ) -> Result<(), String> {
        let (kind, space) = classify(self.opcode);
        let size = size_of(self.opcode);
        let mut lanes = 0;
        for (lane, a) in lex::fields(self.addrs).enumerate() {
            let addr = lex::hex(a).ok_or_else(|| {
                format!(
                    "lane {lane}: expected a hex address, found `{}`",
                    lex::show(a)
                )
            })?;
            lanes += 1;
            if lanes > LANES {
                return Err("more than 32 addresses on one line".into());
            }
            if addr == 0 {
                continue;
            }
            let local = self.warp * LANES + lane as u32;
            if local >= tpb {
                return Err(format!(
                    "lane {lane} of a warp is active but the block has only {tpb} threads"
                ));
            }
            active(Access {
                thread: self.cta * tpb + local,
                inst: self.inst,
                dyn_inst: self.dyn_inst,
                addr,
                size,
                kind,
                space,
            })?;
        }
        if lanes != LANES {
            return Err(format!(
                "expected 32 addresses (one per lane), found {lanes}"
            ));
        }
        Ok(())
    }
}

/// Counts one more row of a launch read in pieces, refusing its 2^32-th as the whole read's
/// builder does.
fn count_row(rows: &mut u64) -> Result<(), String> {
    if *rows >= u32::MAX as u64 {
        return Err(super::model::BuildError::TooManyRows.to_string());
    }
    *rows += 1;
    Ok(())
}

/// Why a line was refused.
enum Fail {
    /// A message about the line (the walker adds the file and line).
    Line(String),
    /// With `retire` on: a launch's access lines resume after another launch's, or come
    /// before those of a launch launched earlier.
    Interleaved,
    /// The receiver's own error, passed on as it is.
    Out(TraceError),
}

impl From<String> for Fail {
    fn from(m: String) -> Self {
        Fail::Line(m)
    }
}

impl From<TraceError> for Fail {
    fn from(e: TraceError) -> Self {
        Fail::Out(e)
    }
}

/// What a read does with each access line once the walker has checked its fields.
trait Visit {
    fn warp(&mut self, launch: &mut Launch, line: &WarpLine<'_>) -> Result<(), Fail>;
    /// Called at each LAUNCH line, with the launch it declares.
    fn launch(&mut self, _launch: &Launch) {}
    /// Called after each access line (`line`, whose bytes in the input are `bytes`), with
    /// the walk as it stands after it.
    fn line_done(
        &mut self,
        _walked: &Walked,
        _line: &[u8],
        _bytes: Range<u64>,
    ) -> Result<(), Fail> {
        Ok(())
    }
}

/// Where a walk stands: the launches it met, in launch order, and the line it is at. A copy
/// is where a read can go on from (`one_pass::Resume`); the launches are shared with their
/// copies, and one is copied again only when a line changes it after a copy was taken.
#[derive(Clone, Default)]
struct Walked {
    launches: FxHashMap<u64, Arc<Launch>>,
    order: Vec<u64>,
    /// The number of the latest access line (at the end: of the last line).
    lines: u64,
    /// The latest launch declared, and the launch of the latest access line.
    last_launch: Option<u64>,
    running: Option<u64>,
    /// Whether a `MEMTRACE: ` line was met.
    saw_any: bool,
}

/// How a walk ended early.
enum Stopped {
    /// At this line, for this reason.
    Line(u64, Fail),
    /// The file: not a log, or unreadable.
    File(TraceError),
}

/// Walks a log's `MEMTRACE: ` lines, checking every field but the addresses and handing each
/// access line to `v`. With `retire`, a launch's slot tables are dropped when another
/// launch's access lines begin (memory stays that of one launch), and a log whose launches'
/// access lines are not one run each, in launch order, stops with [`Fail::Interleaved`].
fn walk<R: BufRead>(r: R, file: &str, retire: bool, v: &mut dyn Visit) -> Result<Walked, Stopped> {
    walk_on(Lines::new(r), file, retire, v, Walked::default())
}

/// [`walk`] on from `w`, where a walk stood when `lines` had been read.
fn walk_on<R: BufRead>(
    mut lines: Lines<R>,
    file: &str,
    retire: bool,
    v: &mut dyn Visit,
    mut w: Walked,
) -> Result<Walked, Stopped> {
    loop {
        let start = lines.bytes;
        let Some((n, end, line)) = lines
            .next_line_ending()
            .map_err(|e| Stopped::File(TraceError::io(file, e)))?
        else {
            break;
        };
        let Some(rest) = line.strip_prefix(b"MEMTRACE: ") else {
            continue;
        };
        w.saw_any = true;
        let at = |f: Fail| Stopped::Line(n, f);
        let parts: Vec<&[u8]> = split_dash(rest);
        if parts.get(1).is_some_and(|p| *p == b"LAUNCH") {
            let (id, launch) = parse_launch(&parts, w.order.len()).map_err(|m| at(m.into()))?;
            if w.launches.contains_key(&id) {
                return Err(at(format!("grid launch id {id} is launched twice").into()));
            }
            v.launch(&launch);
            w.launches.insert(id, Arc::new(launch));
            w.order.push(id);
            w.last_launch = Some(id);
            continue;
        }
        let id = launch_of(&parts, w.last_launch).map_err(|m| at(m.into()))?;
        if retire && w.running != Some(id) {
            if let Some(prev) = w.running.and_then(|p| w.launches.get_mut(&p)) {
                let prev_index = prev.index;
                *prev = Arc::new(prev.retired());
                if w.launches
                    .get(&id)
                    .is_some_and(|l| l.retired || l.index < prev_index)
                {
                    return Err(at(Fail::Interleaved));
                }
            }
            w.running = Some(id);
        }
        let l = w.launches.get_mut(&id).ok_or_else(|| {
            at(
                format!("access for grid launch id {id}, which has no LAUNCH line before it")
                    .into(),
            )
        })?;
        let l = Arc::make_mut(l);
        let parsed = warp_line(&parts, l).map_err(|m| at(m.into()))?;
        v.warp(l, &parsed).map_err(at)?;
        w.lines = n;
        v.line_done(&w, line, start..end).map_err(at)?;
    }
    if !w.saw_any {
        return Err(Stopped::File(TraceError::parse(
            file,
            Location::Line(lines.line),
            "no `MEMTRACE: ` lines: not an NVBit mem_trace log",
        )));
    }
    w.lines = lines.line;
    Ok(w)
}

/// The launch an access line belongs to: its `grid_launch_id`, or the latest launch in logs
/// of older mem_trace versions, which print none.
fn launch_of(parts: &[&[u8]], last_launch: Option<u64>) -> Result<u64, String> {
    match parts
        .get(1)
        .and_then(|p| p.strip_prefix(b"grid_launch_id "))
    {
        Some(v) => lex::dec(v)
            .ok_or_else(|| format!("expected `grid_launch_id N`, found `{}`", lex::show(v))),
        None => last_launch.ok_or_else(|| "an access line before any LAUNCH line".into()),
    }
}

/// Checks an access line's CTA, warp slot and field count, gives the slot its warp index in
/// the CTA and the opcode its instruction id.
fn warp_line<'a>(parts: &[&'a [u8]], l: &mut Launch) -> Result<WarpLine<'a>, String> {
    // CTX .. - [grid_launch_id N -] CTA x,y,z - warp W - OPCODE - addresses
    let i = if parts
        .get(1)
        .is_some_and(|p| p.starts_with(b"grid_launch_id "))
    {
        2
    } else {
        1
    };
    let field = |i: usize, key: &[u8], what: &str| -> Result<&'a [u8], String> {
        parts
            .get(i)
            .and_then(|p| p.strip_prefix(key))
            .ok_or_else(|| format!("expected `{what}` as field {}", i + 1))
    };
    let grid = l.builder.grid();
    let cta_s = field(i, b"CTA ", "CTA x,y,z")?;
    let cta = lex::dim3(cta_s)
        .filter(|c| grid.contains(*c))
        .ok_or_else(|| {
            format!(
                "CTA `{}` is not an index inside the grid {grid}",
                lex::show(cta_s)
            )
        })?;
    let cta = grid.linear(cta) as u32;
    let slot_s = field(i + 1, b"warp ", "warp W")?;
    let slot = lex::dec(slot_s)
        .and_then(|v| u32::try_from(v).ok())
        .ok_or_else(|| format!("warp: expected a number, found `{}`", lex::show(slot_s)))?;
    let opcode = *parts
        .get(i + 2)
        .ok_or("expected the opcode after the warp")?;
    let addrs = *parts
        .get(i + 3)
        .ok_or("expected the addresses after the opcode")?;
    if parts.len() > i + 4 {
        return Err(format!(
            "{} unexpected fields after the addresses",
            parts.len() - i - 4
        ));
    }
    let warps_per_cta = l.tpb.div_ceil(LANES);
    let next_warp = l.warps_in_cta.entry(cta).or_insert(0);
    let warp = match l.slots.get(&(cta, slot)) {
        Some(&w) => w,
        None => {
            if *next_warp >= warps_per_cta {
                return Err(format!(
                    "CTA {cta} uses more warp slots than its {warps_per_cta} warps"
                ));
            }
            let w = *next_warp;
            *next_warp += 1;
            l.slots.insert((cta, slot), w);
            w
        }
    };
    let inst = l
        .builder
        .instruction(&String::from_utf8_lossy(opcode), None);
    let dyn_inst = l.lines;
    l.lines = l.lines.wrapping_add(1);
    Ok(WarpLine {
        cta,
        warp,
        inst,
        dyn_inst,
        opcode,
        addrs,
    })
}

impl Stopped {
    /// The error as the file's reader gives it.
    fn error(self, file: &str) -> TraceError {
        match self {
            Stopped::Line(n, Fail::Line(m)) => TraceError::parse(file, Location::Line(n), m),
            Stopped::Line(n, Fail::Interleaved) => TraceError::parse(
                file,
                Location::Line(n),
                "launches interleave (this read needs each launch's lines in one run)",
            ),
            Stopped::Line(_, Fail::Out(e)) | Stopped::File(e) => e,
        }
    }
}

/// The whole read: every launch's rows go into its builder.
struct Whole;

impl Visit for Whole {
    fn warp(&mut self, l: &mut Launch, w: &WarpLine<'_>) -> Result<(), Fail> {
        let b = &mut l.builder;
        Ok(w.lanes(l.tpb, |a| b.push(a).map_err(|e| e.to_string()))?)
    }
}

/// Reads an NVBit `mem_trace` log; kernels come out in launch order.
pub fn read_into<R: BufRead>(r: R, file: &str, out: &mut dyn KernelSink) -> Result<(), TraceError> {
    let mut w = walk(r, file, false, &mut Whole).map_err(|s| s.error(file))?;
    for id in w.order {
        if let Some(l) = w.launches.remove(&id) {
            out.kernel(
                Arc::unwrap_or_clone(l)
                    .builder
                    .finish_checked()
                    .map_err(|e| sparse(file, id, e))?,
            )?;
        }
    }
    Ok(())
}

/// A launch refused at the end of the log (too sparse to model).
fn sparse(file: &str, id: u64, e: impl std::fmt::Display) -> TraceError {
    TraceError::parse(file, Location::Line(0), format!("grid launch id {id}: {e}"))
}

/// The fields of a line between ` - ` separators.
fn split_dash(s: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::with_capacity(8);
    let mut start = 0;
    for at in memchr::memmem::find_iter(s, b" - ") {
        // Separators do not overlap: ` - - ` holds one.
        if at >= start {
            out.push(&s[start..at]);
            start = at + 3;
        }
    }
    out.push(&s[start..]);
    out
}

fn parse_launch(parts: &[&[u8]], index: usize) -> Result<(u64, Launch), String> {
    let get = |key: &[u8]| parts.iter().find_map(|p| p.strip_prefix(key));
    let name =
        get(b"Kernel name ").map_or("kernel".into(), |n| String::from_utf8_lossy(n).into_owned());
    let id = get(b"grid launch id ")
        .and_then(lex::dec)
        .ok_or("LAUNCH line: expected `grid launch id N`")?;
    let grid = get(b"grid size ")
        .and_then(lex::dim3)
        .ok_or("LAUNCH line: expected `grid size X,Y,Z`")?;
    let block = get(b"block size ")
        .and_then(lex::dim3)
        .ok_or("LAUNCH line: expected `block size X,Y,Z`")?;
    let builder = KernelBuilder::new(name, grid, block, Order::Issued)
        .map_err(|e| format!("LAUNCH line: grid {grid} x block {block}: {e}"))?;
    let mut builder = builder;
    let info = builder.info_mut();
    for key in ["nregs", "shmem", "cuda stream id", "Kernel pc"] {
        let mut k = key.as_bytes().to_vec();
        k.push(b' ');
        if let Some(v) = get(&k) {
            let name = key.to_ascii_lowercase().replace(' ', "_");
            info.attributes
                .push((name, String::from_utf8_lossy(v).into_owned()));
        }
    }
    info.attributes
        .push(("grid_launch_id".into(), id.to_string()));
    Ok((
        id,
        Launch {
            index,
            tpb: builder.block().count() as u32,
            builder,
            slots: FxHashMap::default(),
            warps_in_cta: FxHashMap::default(),
            lines: 0,
            retired: false,
        },
    ))
}

/// Bytes per lane from the opcode's width suffix.
pub fn size_of(opcode: &[u8]) -> u16 {
    let mut size = 4;
    for part in opcode.split(|&c| c == b'.').skip(1) {
        size = match part {
            b"8" | b"U8" | b"S8" => 1,
            b"16" | b"U16" | b"S16" => 2,
            b"32" | b"U32" | b"S32" => 4,
            b"64" | b"U64" | b"S64" => 8,
            b"128" => 16,
            _ => continue,
        };
    }
    size
}

#[cfg(test)]
mod resume_tests;
/// The NVBit reader: read once for a receiver taking instructions as found, else scanned
/// and read (twice); read on from the places its one-pass reader gives.
pub(crate) struct NvBitReader;

impl super::reader::TraceReader for NvBitReader {
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
    fn gives_places(&self) -> bool {
        true
    }
    fn stream_from(
        &self,
        _r: super::reader::Input,
        cx: &super::Ctx<'_>,
        at: &super::ResumePoint,
        held: super::Held<'_>,
        out: &mut dyn super::CtaSink,
    ) -> Option<Result<(), TraceError>> {
        match at {
            super::ResumePoint::NvBit(r) => Some(stream_from(cx, r, held.instructions, out)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests;
