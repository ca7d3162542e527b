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

use std::io::BufRead;

use rustc_hash::FxHashMap;

use super::accelsim::classify;
use super::lex::{self, Lines};
use super::model::{Access, KernelBuilder, Order};
use super::{KernelSink, Location, TraceError};

struct Launch {
    builder: KernelBuilder,
    /// (CTA, hardware slot) -> warp index in the CTA.
    slots: FxHashMap<(u32, u32), u32>,
    warps_in_cta: FxHashMap<u32, u32>,
    /// Warp instructions so far: each line is its own dynamic instance.
    lines: u32,
}

/// Reads an NVBit `mem_trace` log; kernels come out in launch order.
pub fn read_into<R: BufRead>(r: R, file: &str, out: &mut dyn KernelSink) -> Result<(), TraceError> {
    let mut lines = Lines::new(r);
    // Launch id -> launch, in launch order.
    let mut order: Vec<u64> = Vec::new();
    let mut launches: FxHashMap<u64, Launch> = FxHashMap::default();
    let mut last_launch: Option<u64> = None;
    let mut saw_any = false;
    while let Some((n, line)) = lines.next_line().map_err(|e| TraceError::io(file, e))? {
        let err = |m: String| TraceError::parse(file, Location::Line(n), m);
        let Some(rest) = line.strip_prefix(b"MEMTRACE: ") else {
            continue;
        };
        saw_any = true;
        let parts: Vec<&[u8]> = split_dash(rest);
        if parts.get(1).is_some_and(|p| *p == b"LAUNCH") {
            let (id, launch) = parse_launch(&parts).map_err(err)?;
            if launches.insert(id, launch).is_some() {
                return Err(err(format!("grid launch id {id} is launched twice")));
            }
            order.push(id);
            last_launch = Some(id);
            continue;
        }
        // CTX .. - grid_launch_id N - CTA x,y,z - warp W - OPCODE - addresses
        let mut i = 1;
        let id = match parts
            .get(i)
            .and_then(|p| p.strip_prefix(b"grid_launch_id "))
        {
            Some(v) => {
                i += 1;
                lex::dec(v).ok_or_else(|| {
                    err(format!(
                        "expected `grid_launch_id N`, found `{}`",
                        lex::show(v)
                    ))
                })?
            }
            // Older mem_trace versions print no launch id: the latest launch.
            None => {
                last_launch.ok_or_else(|| err("an access line before any LAUNCH line".into()))?
            }
        };
        let l = launches.get_mut(&id).ok_or_else(|| {
            err(format!(
                "access for grid launch id {id}, which has no LAUNCH line before it"
            ))
        })?;
        let field = |i: usize, key: &[u8], what: &str| -> Result<&[u8], TraceError> {
            parts
                .get(i)
                .and_then(|p| p.strip_prefix(key))
                .ok_or_else(|| err(format!("expected `{what}` as field {}", i + 1)))
        };
        let cta_s = field(i, b"CTA ", "CTA x,y,z")?;
        let cta = lex::dim3(cta_s)
            .filter(|c| l.builder.grid().contains(*c))
            .ok_or_else(|| {
                err(format!(
                    "CTA `{}` is not an index inside the grid {}",
                    lex::show(cta_s),
                    l.builder.grid()
                ))
            })?;
        let cta = l.builder.grid().linear(cta) as u32;
        let slot_s = field(i + 1, b"warp ", "warp W")?;
        let slot = lex::dec(slot_s)
            .and_then(|v| u32::try_from(v).ok())
            .ok_or_else(|| {
                err(format!(
                    "warp: expected a number, found `{}`",
                    lex::show(slot_s)
                ))
            })?;
        let opcode = *parts
            .get(i + 2)
            .ok_or_else(|| err("expected the opcode after the warp".into()))?;
        let addrs = parts
            .get(i + 3)
            .ok_or_else(|| err("expected the addresses after the opcode".into()))?;
        if parts.len() > i + 4 {
            return Err(err(format!(
                "{} unexpected fields after the addresses",
                parts.len() - i - 4
            )));
        }
        let tpb = l.builder.block().count() as u32;
        let warps_per_cta = tpb.div_ceil(32);
        let next_warp = l.warps_in_cta.entry(cta).or_insert(0);
        let warp = match l.slots.get(&(cta, slot)) {
            Some(&w) => w,
            None => {
                if *next_warp >= warps_per_cta {
                    return Err(err(format!(
                        "CTA {cta} uses more warp slots than its {warps_per_cta} warps"
                    )));
                }
                let w = *next_warp;
                *next_warp += 1;
                l.slots.insert((cta, slot), w);
                w
            }
        };
        let (kind, space) = classify(opcode);
        let size = size_of(opcode);
        let name = String::from_utf8_lossy(opcode);
        let inst = l.builder.instruction(&name, None);
        let dyn_inst = l.lines;
        l.lines = l.lines.wrapping_add(1);
        let mut lanes = 0;
        for (lane, a) in lex::fields(addrs).enumerate() {
            let addr = lex::hex(a).ok_or_else(|| {
                err(format!(
                    "lane {lane}: expected a hex address, found `{}`",
                    lex::show(a)
                ))
            })?;
            lanes += 1;
            if lanes > 32 {
                return Err(err("more than 32 addresses on one line".into()));
            }
            if addr == 0 {
                continue;
            }
            let local = warp * 32 + lane as u32;
            if local >= tpb {
                return Err(err(format!(
                    "lane {lane} of a warp is active but the block has only {tpb} threads"
                )));
            }
            l.builder
                .push(Access {
                    thread: cta * tpb + local,
                    inst,
                    dyn_inst,
                    addr,
                    size,
                    kind,
                    space,
                })
                .map_err(|e| err(e.to_string()))?;
        }
        if lanes != 32 {
            return Err(err(format!(
                "expected 32 addresses (one per lane), found {lanes}"
            )));
        }
    }
    if !saw_any {
        return Err(TraceError::parse(
            file,
            Location::Line(lines.line),
            "no `MEMTRACE: ` lines: not an NVBit mem_trace log",
        ));
    }
    for id in order {
        if let Some(l) = launches.remove(&id) {
            let k = l.builder.finish_checked().map_err(|e| {
                TraceError::parse(file, Location::Line(0), format!("grid launch id {id}: {e}"))
            })?;
            out.kernel(k)?;
        }
    }
    Ok(())
}

fn split_dash(s: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::with_capacity(8);
    let mut start = 0;
    let mut i = 0;
    while i + 3 <= s.len() {
        if &s[i..i + 3] == b" - " {
            out.push(&s[start..i]);
            i += 3;
            start = i;
        } else {
            i += 1;
        }
    }
    out.push(&s[start..]);
    out
}

fn parse_launch(parts: &[&[u8]]) -> Result<(u64, Launch), String> {
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
            builder,
            slots: FxHashMap::default(),
            warps_in_cta: FxHashMap::default(),
            lines: 0,
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
mod tests {
    use super::*;
    use crate::trace::Trace;

    fn addrs(base: u64, step: u64, active: u32) -> String {
        (0..32u64)
            .map(|l| {
                if l < active as u64 {
                    format!("0x{:016x}", base + l * step)
                } else {
                    "0x0000000000000000".into()
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn reads_launches_and_accesses_skipping_application_output() {
        let text = format!(
            "app says hi\nMEMTRACE: CTX 0x1 - LAUNCH - Kernel pc 0x7 - Kernel name k - grid launch id 0 - grid size 2,1,1 - block size 40,1,1 - nregs 20 - shmem 0 - cuda stream id 9\nresult = 5\nMEMTRACE: CTX 0x1 - grid_launch_id 0 - CTA 1,0,0 - warp 26 - LDG.E.64 - {}\nMEMTRACE: CTX 0x1 - grid_launch_id 0 - CTA 1,0,0 - warp 7 - STG.E - {}\n",
            addrs(0x1000, 8, 32),
            addrs(0x2000, 4, 8),
        );
        let mut t = Trace::default();
        read_into(text.as_bytes(), "m.log", &mut t).unwrap();
        let k = &t.kernels[0];
        assert_eq!(k.order, Order::Issued);
        assert_eq!(k.len(), 40);
        let a: Vec<_> = k.accesses().collect();
        // Slot 26 is the CTA's first warp (threads 40..72), slot 7 its second (72..80).
        assert_eq!((a[0].thread, a[0].addr, a[0].size), (40, 0x1000, 8));
        assert_eq!((a[32].thread, a[32].addr, a[32].size), (72, 0x2000, 4));
        assert!(a[32].kind.is_write());
        assert_eq!(k.info.attribute("nregs"), Some("20"));
    }

    #[test]
    fn the_real_excerpt_is_rejected_with_the_line_because_its_launch_is_missing() {
        // Two lines from two different runs: the access's launch id 0 was never launched.
        let file = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../shared/real-traces/nvbit_mem_trace_excerpts.txt"
        );
        let Ok(text) = std::fs::read(file) else {
            return;
        };
        let mut t = Trace::default();
        let e = read_into(text.as_slice(), "x.txt", &mut t)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("line 2") && e.contains("grid launch id 0"),
            "{e}"
        );
    }

    #[test]
    fn malformed_lines_are_errors() {
        let launch = "MEMTRACE: CTX 0x1 - LAUNCH - Kernel pc 0x7 - Kernel name k - grid launch id 0 - grid size 1,1,1 - block size 32,1,1 - nregs 20 - shmem 0 - cuda stream id 9\n";
        for (line, want) in [
            (
                "MEMTRACE: CTX 0x1 - grid_launch_id 0 - CTA 5,0,0 - warp 1 - LDG.E - 0x1",
                "inside the grid",
            ),
            (
                "MEMTRACE: CTX 0x1 - grid_launch_id 0 - CTA 0,0,0 - warp 1 - LDG.E - 0x1 0x2",
                "expected 32 addresses",
            ),
            (
                "MEMTRACE: CTX 0x1 - grid_launch_id 0 - CTA 0,0,0 - warp x - LDG.E - 0x1",
                "warp",
            ),
            (
                "MEMTRACE: CTX 0x1 - grid_launch_id 0 - CTA 0,0,0 - warp 1 - LDG.E - 0xzz",
                "hex address",
            ),
        ] {
            let mut t = Trace::default();
            let e = read_into(format!("{launch}{line}\n").as_bytes(), "f", &mut t)
                .unwrap_err()
                .to_string();
            assert!(
                e.starts_with("f: line 2") && e.contains(want),
                "{line}: {e}"
            );
        }
        assert_eq!(size_of(b"LDG.E.128"), 16);
        assert_eq!(size_of(b"LDG.E.U8"), 1);
        assert_eq!(size_of(b"LDG.E"), 4);
    }
}
