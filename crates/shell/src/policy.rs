//! The one policy both front ends follow to read a trace file: held whole or streamed as it
//! is simulated ([`reading`]), read once with instructions taken as they are found or, where
//! that cannot go on, again in two passes ([`once_else_twice`]), and its bytes counted for
//! progress and cancel ([`counted`]). The CLI's `sim` and `sweep` and the app's panes ask
//! here, so a file is read the same way whichever shell opened it.

use std::io::Read;
use std::path::Path;

use warpscope_core::trace::{self, OpenTrace};

/// How a trace file is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reading {
    /// Held whole in memory, then simulated.
    Whole,
    /// Read as it is simulated, holding what is resident, never the whole trace.
    Streamed,
}

/// What the reading is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purpose {
    /// A report (the CLI's `sim`): streamed, but for the timing model a file that would be
    /// sorted on the way and is at most [`TIMED_WHOLE_UP_TO`] is read whole.
    Report { timing: bool },
    /// The app's views, which draw every request of a trace held whole: files that would
    /// take at most `whole_up_to` bytes held ([`crate::whole_bytes`]) are read whole (0:
    /// none).
    Views { whole_up_to: u64 },
}

/// The largest file the app reads whole for its views (bytes it takes held, a binary file's
/// rows at 23 bytes each: [`crate::whole_bytes`]); a larger one is read by each simulation as
/// it runs, and the views draw what that run gathered. Read whole, a trace takes several
/// times its file's size in memory.
pub const VIEWS_WHOLE_UP_TO: u64 = 256 << 20;

/// Files of at most this many bytes that a stream would sort by CTA on the way are read
/// whole for the timing model. The model's streams take about the memory of the trace
/// itself, so such a file costs little more memory read whole, and the sort's time is saved
/// (the released model's own trace of naive matmul `n=128`, when it went through the sort:
/// 0.44 s read whole, 0.66 s streamed; it no longer does).
pub const TIMED_WHOLE_UP_TO: u64 = 1 << 30;

/// How the trace at `path` (of `format`, else detected) is read for `purpose` (see
/// [`Purpose`]). A file that cannot be opened is streamed: that read says what is wrong.
pub fn reading(path: &Path, format: Option<trace::Format>, purpose: Purpose) -> Reading {
    let sorted_small = |open: OpenTrace| {
        open.sorts_to_stream()
            && open.compression == trace::source::Compression::None
            && open.file_bytes > 0
            && open.file_bytes <= TIMED_WHOLE_UP_TO
    };
    let whole = match purpose {
        Purpose::Report { timing } => {
            let opts = trace::ReadOptions {
                format,
                allow_truncated: false,
            };
            timing && trace::open_trace(path, opts, &|s| s, &|s| s).is_ok_and(sorted_small)
        }
        Purpose::Views { whole_up_to } => {
            whole_up_to > 0 && crate::whole_bytes(path) <= whole_up_to
        }
    };
    if whole {
        Reading::Whole
    } else {
        Reading::Streamed
    }
}

/// Runs `run` reading the file once, its kernels' instructions taken as they are found
/// (`run(true)`); where that read cannot go on (`again` says so of its error: launches that
/// interleave, thread blocks out of CTA order), tells `note` why and runs it again reading
/// the file in two passes (`run(false)`).
pub fn once_else_twice<T, E>(
    mut run: impl FnMut(bool) -> Result<T, E>,
    again: impl Fn(&E) -> bool,
    note: impl FnOnce(&E),
) -> Result<T, E> {
    match run(true) {
        Err(e) if again(&e) => note(&e),
        r => return r,
    }
    run(false)
}

/// A `watch` for a trace's reader: each of its files' bytes, as they are read, are told to
/// `count`; once `cancelled` says so, the next read fails, so the run stops.
pub fn counted(
    count: impl Fn(u64) + Send + Sync + Clone + 'static,
    cancelled: impl Fn() -> bool + Send + Sync + Clone + 'static,
) -> impl Fn(trace::source::Stream) -> trace::source::Stream + Send + Sync + 'static {
    move |inner| {
        Box::new(Counted {
            inner,
            count: Box::new(count.clone()),
            cancelled: Box::new(cancelled.clone()),
        })
    }
}

/// A file's bytes, counted as they are read ([`counted`]).
struct Counted {
    inner: trace::source::Stream,
    count: Box<dyn Fn(u64) + Send>,
    cancelled: Box<dyn Fn() -> bool + Send>,
}

impl Read for Counted {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if (self.cancelled)() {
            return Err(std::io::Error::other("cancelled"));
        }
        let n = self.inner.read(buf)?;
        (self.count)(n as u64);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::Arc;

    #[test]
    fn a_read_that_cannot_go_on_runs_again_in_two_passes_and_says_why() {
        let mut tries = vec![];
        let mut noted = None;
        let r: Result<u32, String> = once_else_twice(
            |as_found| {
                tries.push(as_found);
                if as_found {
                    Err("interleaved".to_string())
                } else {
                    Ok(7)
                }
            },
            |e| e == "interleaved",
            |e| noted = Some(e.clone()),
        );
        assert_eq!(r, Ok(7));
        assert_eq!(tries, [true, false]);
        assert_eq!(noted.as_deref(), Some("interleaved"));
        // Any other error is the answer.
        let r: Result<u32, String> = once_else_twice(|_| Err("bad".into()), |e| e == "x", |_| {});
        assert_eq!(r, Err("bad".to_string()));
    }

    #[test]
    fn counted_reads_count_every_byte_and_stop_once_cancelled() {
        let read = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (r, s) = (read.clone(), stop.clone());
        let watch = counted(
            move |n| {
                r.fetch_add(n, Ordering::Relaxed);
            },
            move || s.load(Ordering::Relaxed),
        );
        let mut stream = watch(Box::new(std::io::Cursor::new(vec![1u8; 1000])));
        let mut buf = [0u8; 300];
        assert_eq!(stream.read(&mut buf).unwrap(), 300);
        assert_eq!(read.load(Ordering::Relaxed), 300);
        stop.store(true, Ordering::Relaxed);
        assert!(stream.read(&mut buf).is_err());
        assert_eq!(read.load(Ordering::Relaxed), 300);
    }

    #[test]
    fn the_views_hold_a_file_whole_up_to_their_limit_and_a_report_streams_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.din");
        std::fs::write(&path, "0 100\n1 200\n").unwrap();
        let views = |whole_up_to| reading(&path, None, Purpose::Views { whole_up_to });
        assert_eq!(views(VIEWS_WHOLE_UP_TO), Reading::Whole);
        assert_eq!(views(4), Reading::Streamed);
        assert_eq!(views(0), Reading::Streamed);
        let report = |p: &Path, timing| reading(p, None, Purpose::Report { timing });
        assert_eq!(report(&path, false), Reading::Streamed);
        assert_eq!(report(&path, true), Reading::Streamed);
        // A text trace is sorted on the way when streamed: the timing model reads it whole.
        let text = dir.path().join("t.wst");
        std::fs::write(
            &text,
            "kernel k grid=1,1,1 block=2,1,1 order=thread\ninst ld\n\
             0,0,0 0,0,0 ld 0 ld 0x100 4\n0,0,0 1,0,0 ld 0 ld 0x104 4\n",
        )
        .unwrap();
        assert_eq!(report(&text, true), Reading::Whole);
        assert_eq!(report(&text, false), Reading::Streamed);
        // A Nugteren et al. file streams without a sort where its CTAs come in order: the
        // timing model streams it too.
        let trc = dir.path().join("t.trc");
        std::fs::write(&trc, "blocksize: 2 1 1\n0 0 256 4\n1 0 260 4\n").unwrap();
        let timed = |f| reading(&trc, f, Purpose::Report { timing: true });
        assert_eq!(timed(None), Reading::Streamed);
        assert_eq!(timed(Some(trace::Format::Nugteren)), Reading::Streamed);
    }
}
