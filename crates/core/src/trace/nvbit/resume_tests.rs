//! A read in one pass, gone on from any place it gave ([`super::Resume`]), hands on what
//! the read handed on after that place; a log that changed since is an error.

use crate::trace::model::{Columns, Instruction, Kernel};
use crate::trace::testing::scratch;
use crate::trace::{
    open_trace, CtaSink, Held, KernelSink, ReadOptions, ResumePoint, SinkHooks, TraceError,
};

/// What a source handed on, in order.
#[derive(Clone, Debug, PartialEq)]
enum Event {
    Begin(String, Vec<Instruction>),
    Issued(Columns),
    More(Vec<Instruction>),
    End,
    Point(ResumePoint),
}

#[derive(Default)]
struct Events {
    got: Vec<Event>,
}

impl KernelSink for Events {
    fn kernel(&mut self, k: Kernel) -> Result<(), TraceError> {
        panic!("kernel {} handed on whole", k.name)
    }
}

impl CtaSink for Events {
    fn begin_kernel(&mut self, h: &Kernel) -> Result<(), TraceError> {
        self.got
            .push(Event::Begin(h.name.clone(), h.instructions.clone()));
        Ok(())
    }
    fn cta(&mut self, _: u32, _: &Columns) -> Result<(), TraceError> {
        panic!("NVBit launches are issued")
    }
    fn issued(&mut self, rows: &Columns) -> Result<(), TraceError> {
        self.got.push(Event::Issued(rows.clone()));
        Ok(())
    }
    fn end_kernel(&mut self) -> Result<(), TraceError> {
        self.got.push(Event::End);
        Ok(())
    }
    fn hooks(&mut self) -> Option<&mut dyn SinkHooks> {
        Some(self)
    }
}

impl SinkHooks for Events {
    fn takes_more_instructions(&self) -> bool {
        true
    }
    fn more_instructions(&mut self, added: &[Instruction]) -> Result<(), TraceError> {
        self.got.push(Event::More(added.to_vec()));
        Ok(())
    }
    // A place after every chunk.
    fn read_on_every(&self) -> Option<u64> {
        Some(1)
    }
    fn read_on_point(&mut self, at: ResumePoint) {
        self.got.push(Event::Point(at));
    }
}

/// A launch line and `n` access lines of `ctas` CTAs of 256 threads, every lane active,
/// with opcode `ops[i * ops.len() / n]` at line `i` (so later opcodes are found late).
fn launch(id: u64, ctas: u64, n: u64, ops: &[&str]) -> String {
    let mut s = format!("MEMTRACE: CTX 0x1 - LAUNCH - Kernel pc 0x7 - Kernel name k{id} - grid launch id {id} - grid size {ctas},1,1 - block size 256,1,1 - nregs 20 - shmem 0 - cuda stream id 0\n");
    for i in 0..n {
        let addrs: Vec<String> = (0..32u64)
            .map(|l| format!("0x{:016x}", 0x1000 + 128 * (i % 777) + 4 * l))
            .collect();
        // CTAs in waves of four, their warps in hardware slots 8 apart.
        let cta = i / 32 % ctas;
        s.push_str(&format!(
            "MEMTRACE: CTX 0x1 - grid_launch_id {id} - CTA {cta},0,0 - warp {} - {} - {}\n",
            8 * (cta % 4) + (i + cta) % 8,
            ops[(i * ops.len() as u64 / n) as usize],
            addrs.join(" ")
        ));
        if i % 1000 == 999 {
            s.push_str("application output between the lines\n");
        }
    }
    s
}

/// Three launches with rows (each new opcode found after a chunk) and an empty one.
fn log() -> String {
    let empty = "MEMTRACE: CTX 0x1 - LAUNCH - Kernel pc 0x9 - Kernel name none - grid launch id 1 - grid size 1,1,1 - block size 32,1,1 - nregs 20 - shmem 0 - cuda stream id 0\n";
    format!(
        "application output\n{}{empty}{}{}",
        launch(0, 40, 5000, &["LDG.E", "STG.E.64", "LDG.E.U8"]),
        launch(2, 3, 100, &["LDG.E"]),
        launch(3, 64, 4500, &["LDG.E.128", "ATOMG.E.ADD"]),
    )
}

fn streamed(path: &std::path::Path) -> Vec<Event> {
    let open = open_trace(path, ReadOptions::default(), &|s| s, &|s| s).unwrap();
    assert!(open.resumable());
    let mut ev = Events::default();
    open.stream(&|s| s, &|s| s, &mut ev).unwrap();
    ev.got
}

fn resumed(
    path: &std::path::Path,
    at: ResumePoint,
    instructions: &[Instruction],
) -> Result<Vec<Event>, TraceError> {
    let open = open_trace(path, ReadOptions::default(), &|s| s, &|s| s).unwrap();
    let mut ev = Events::default();
    let held = Held {
        instructions,
        wanted_ctas: &[],
    };
    open.stream_from(at, held, &|s| s, &|s| s, &mut ev)?;
    Ok(ev.got)
}

/// The kinds of `events`, with their rows or instructions (short to show).
fn summary(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .map(|e| match e {
            Event::Begin(name, insts) => format!("begin {name} {}", insts.len()),
            Event::Issued(rows) => format!("{} rows", rows.len()),
            Event::More(insts) => format!("{} more", insts.len()),
            Event::End => "end".into(),
            Event::Point(at) => format!("{at:?}"),
        })
        .collect()
}

/// The places in `events`, each with its index and the instructions of its launch so far.
fn places(events: &[Event]) -> Vec<(usize, ResumePoint, Vec<Instruction>)> {
    let mut known = Vec::new();
    let mut out = Vec::new();
    for (i, e) in events.iter().enumerate() {
        match e {
            Event::Begin(_, insts) => known = insts.clone(),
            Event::More(added) => known.extend(added.iter().cloned()),
            Event::Point(at) => out.push((i, at.clone(), known.clone())),
            _ => {}
        }
    }
    out
}

#[test]
fn read_on_from_any_place_gives_what_the_read_gave_after_it() {
    let text = log();
    let plain = scratch("nvbit-resume", "log.txt", text.as_bytes());
    let packed = scratch(
        "nvbit-resume",
        "log.txt.zst",
        &zstd::encode_all(text.as_bytes(), 3).unwrap(),
    );
    for path in [&plain, &packed] {
        let whole = streamed(path);
        let at = places(&whole);
        // 160,000 rows of launch 0 and 144,000 of launch 3: two places in each, one after
        // every full chunk.
        assert_eq!(at.len(), 4, "{path:?}");
        // The later opcodes of both launches come after a place.
        assert!(whole[at[0].0..].iter().any(|e| matches!(e, Event::More(_))));
        assert!(whole[at[2].0..].iter().any(|e| matches!(e, Event::More(_))));
        for (i, point, known) in at {
            // A place is where the reader stands once the chunk after it is given.
            assert!(matches!(whole[i + 1], Event::Issued(_)));
            let got = resumed(path, point, &known).unwrap();
            let after = &whole[i + 2..];
            assert_eq!(summary(&got), summary(after), "{path:?} from event {i}");
            assert!(got == after, "{path:?} from event {i}");
        }
    }
    std::fs::remove_file(&plain).unwrap();
    std::fs::remove_file(&packed).unwrap();
}

#[test]
fn read_on_from_a_log_that_changed_is_an_error() {
    let text = log();
    let path = scratch("nvbit-resume", "changed.txt", text.as_bytes());
    let whole = streamed(&path);
    let (_, point, known) = places(&whole).swap_remove(1);
    let ResumePoint::NvBit(r) = &point else {
        panic!("{point:?}")
    };
    let offset = r.offset() as usize;
    let error = |path: &std::path::Path, known: &[Instruction]| {
        resumed(path, point.clone(), known).unwrap_err().to_string()
    };
    // Other instructions than the copy holds.
    let e = error(&path, &known[1..]);
    assert!(
        e.contains("other instructions") && e.contains("changed"),
        "{e}"
    );
    // The line that ended the chunk differs.
    let mut other = text.clone().into_bytes();
    let line_start = text[..offset - 1].rfind('\n').unwrap() + 1;
    other[line_start + text[line_start..].find("0x0000").unwrap() + 5] = b'9';
    std::fs::write(&path, &other).unwrap();
    let e = error(&path, &known);
    assert!(e.contains("another line") && e.contains("changed"), "{e}");
    // A line more before it: the place is mid-line.
    std::fs::write(&path, format!("one more line\n{text}")).unwrap();
    let e = error(&path, &known);
    assert!(e.contains("changed"), "{e}");
    // The log ends before the place.
    std::fs::write(&path, &text[..offset / 2]).unwrap();
    let e = error(&path, &known);
    assert!(
        e.contains("ends before byte") && e.contains("changed"),
        "{e}"
    );
    // As it was, it reads on.
    std::fs::write(&path, &text).unwrap();
    assert!(resumed(&path, point.clone(), &known).is_ok());
    std::fs::remove_file(&path).unwrap();
}
