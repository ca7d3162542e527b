//! A run read on from a copy taken after any CTA hands on what the run handed on after it.

use super::super::tests::synthetic;
use crate::trace::model::{Columns, Dim3, Instruction, Kernel};
use crate::trace::{
    open_trace, CtaSink, Held, KernelSink, ReadOptions, ResumePoint, SinkHooks, TraceError,
};

/// What a source handed on, in order.
#[derive(Clone, Debug, PartialEq)]
enum Event {
    Whole(String),
    Begin(String, Vec<Instruction>),
    Cta(u32, Columns),
    More(Vec<Instruction>),
    Resident(u32, Columns),
    End,
}

#[derive(Default)]
struct Events {
    takes_more: bool,
    got: Vec<Event>,
}

impl KernelSink for Events {
    fn kernel(&mut self, k: Kernel) -> Result<(), TraceError> {
        self.got.push(Event::Whole(k.name));
        Ok(())
    }
}

impl CtaSink for Events {
    fn begin_kernel(&mut self, h: &Kernel) -> Result<(), TraceError> {
        self.got
            .push(Event::Begin(h.name.clone(), h.instructions.clone()));
        Ok(())
    }
    fn cta(&mut self, cta: u32, rows: &Columns) -> Result<(), TraceError> {
        self.got.push(Event::Cta(cta, rows.clone()));
        Ok(())
    }
    fn issued(&mut self, _: &Columns) -> Result<(), TraceError> {
        panic!("Accel-Sim kernels are scheduled")
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
        self.takes_more
    }
    fn more_instructions(&mut self, added: &[Instruction]) -> Result<(), TraceError> {
        self.got.push(Event::More(added.to_vec()));
        Ok(())
    }
    fn resident(&mut self, cta: u32, rows: &Columns) -> Result<(), TraceError> {
        self.got.push(Event::Resident(cta, rows.clone()));
        Ok(())
    }
}

/// A trace folder of three kernels (one in the legacy layout, one with a CTA missing), and
/// its kernel list.
fn trace_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("ws-accel-resume-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let kernels = [
        synthetic(1, Dim3::x(6), 64, &[0, 1, 2, 3, 4, 5], 4),
        synthetic(2, Dim3::new(3, 2, 1), 40, &[0, 1, 3, 4, 5], 2),
        synthetic(3, Dim3::x(5), 96, &[0, 1, 2, 3, 4], 4),
    ];
    let mut list = String::from("MemcpyHtoD,0x10000,4096\n");
    for (i, text) in kernels.iter().enumerate() {
        std::fs::write(dir.join(format!("kernel-{}.traceg", i + 1)), text).unwrap();
        list += &format!("kernel-{}.traceg\n", i + 1);
    }
    std::fs::write(dir.join("kernelslist.g"), list).unwrap();
    dir
}

fn streamed(list: &std::path::Path, takes_more: bool) -> Vec<Event> {
    let open = open_trace(list, ReadOptions::default(), &|s| s, &|s| s).unwrap();
    let mut ev = Events {
        takes_more,
        ..Events::default()
    };
    open.stream(&|s| s, &|s| s, &mut ev).unwrap();
    ev.got
}

fn resumed(
    list: &std::path::Path,
    takes_more: bool,
    at: ResumePoint,
    held: Held<'_>,
) -> Result<Vec<Event>, TraceError> {
    let open = open_trace(list, ReadOptions::default(), &|s| s, &|s| s).unwrap();
    assert!(open.resumable());
    let mut ev = Events {
        takes_more,
        ..Events::default()
    };
    open.stream_from(at, held, &|s| s, &|s| s, &mut ev)?;
    Ok(ev.got)
}

/// For the copy a receiver would take after each CTA of each kernel, with each choice of
/// resident CTAs wanted back: the rows of those CTAs, then every event after that CTA's.
#[test]
fn read_on_from_any_cta_gives_what_the_whole_stream_gives_after_it() {
    let dir = trace_dir("any");
    let list = dir.join("kernelslist.g");
    for takes_more in [true, false] {
        let whole = streamed(&list, takes_more);
        let mut kernel = None::<u32>;
        let mut known: Vec<Instruction> = Vec::new();
        let mut rows_of: Vec<(u32, Columns)> = Vec::new();
        let mut tried = 0;
        for (i, e) in whole.iter().enumerate() {
            match e {
                Event::Begin(_, insts) => {
                    kernel = Some(kernel.map_or(0, |k| k + 1));
                    known = insts.clone();
                    rows_of.clear();
                }
                Event::More(added) => known.extend(added.iter().cloned()),
                Event::Cta(c, rows) => {
                    rows_of.push((*c, rows.clone()));
                    let at = ResumePoint::Cta {
                        kernel: kernel.unwrap(),
                        next_cta: c + 1,
                    };
                    // None, the last, every other one, all.
                    let n = rows_of.len();
                    for pick in [0, 1, 2, 3] {
                        let wanted: Vec<(u32, Columns)> = rows_of
                            .iter()
                            .enumerate()
                            .filter(|(j, _)| match pick {
                                0 => false,
                                1 => *j + 1 == n,
                                2 => j % 2 == 0,
                                _ => true,
                            })
                            .map(|(_, r)| r.clone())
                            .collect();
                        let ctas: Vec<u32> = wanted.iter().map(|(c, _)| *c).collect();
                        let held = Held {
                            instructions: &known,
                            wanted_ctas: &ctas,
                        };
                        let got = resumed(&list, takes_more, at.clone(), held).unwrap();
                        let mut want: Vec<Event> = wanted
                            .into_iter()
                            .map(|(c, r)| Event::Resident(c, r))
                            .collect();
                        want.extend(whole[i + 1..].iter().cloned());
                        assert_eq!(got, want, "from {at:?}, wanting {ctas:?}");
                        tried += 1;
                    }
                }
                Event::End | Event::Whole(_) | Event::Resident(..) => {}
            }
        }
        // Six, five and five CTAs, four choices each.
        assert_eq!(tried, 64);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A trace that no longer holds what the run read is an error saying so, not another run.
#[test]
fn read_on_from_a_trace_that_changed_is_an_error() {
    let dir = trace_dir("changed");
    let list = dir.join("kernelslist.g");
    let whole = streamed(&list, true);
    let Some(Event::Begin(_, first)) = whole.iter().find(|e| matches!(e, Event::Begin(..))) else {
        panic!("no kernel began")
    };
    let mut all: Vec<Instruction> = first.clone();
    for e in &whole {
        if let Event::More(added) = e {
            all.extend(added.iter().cloned());
        }
        if matches!(e, Event::End) {
            break;
        }
    }
    let at = |kernel, next_cta| ResumePoint::Cta { kernel, next_cta };
    let held = |instructions: &'static [Instruction], wanted_ctas: &'static [u32]| Held {
        instructions,
        wanted_ctas,
    };
    let all: &'static [Instruction] = Vec::leak(all);
    let changed = |r: Result<Vec<Event>, TraceError>| {
        let e = r.unwrap_err().to_string();
        assert!(e.contains("changed"), "{e}");
        e
    };
    // A fourth kernel.
    changed(resumed(&list, true, at(3, 1), held(&[], &[])));
    // CTA 2 of the second kernel has no accesses; the first kernel's CTA 9 is past its grid.
    changed(resumed(&list, true, at(1, 4), held(&[], &[2])));
    changed(resumed(&list, true, at(0, 10), held(&[], &[])));
    // Instructions in another order.
    let mut swapped = all.to_vec();
    swapped.swap(0, 1);
    let e = changed(resumed(
        &list,
        true,
        at(0, 6),
        held(Vec::leak(swapped), &[]),
    ));
    assert!(e.contains("instruction 0"), "{e}");
    // From a kernel's start: not a place a copy is taken.
    assert!(resumed(&list, true, at(0, 0), held(all, &[])).is_err());
    // The same places, as the run held them, are fine.
    resumed(&list, true, at(0, 6), held(all, &[0, 5])).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}
