//! The first pass: the trace replayed launch by launch against the last-writer map. Each
//! counted read finds the writers of its bytes: pieces written in an earlier launch are
//! communication, pieces another CTA wrote in this launch are sharing. At the end of a
//! launch its pieces are drained into rows (writer, reader CTA, distinct bytes) and
//! in-degrees; writes that a later launch read are retired as ranges for the second pass.

use super::passes::{counted_table, each_access, CtaOf};
use super::pieces::{Piece, Pieces};
use super::report::{CommError, LaunchComm};
use super::sort::stable_sorted;
use super::strides::{stride, StrideCounts};
use super::transfers::{by_writer, LaunchOf, Numbers, Row};
use super::writers::{Retired, Writers};
use crate::trace::{memory, Kernel, Trace};

/// What the first pass carries from launch to launch.
pub(super) struct FirstPass {
    numbers: Numbers,
    launch_of: LaunchOf,
    /// [`counted_table`].
    classes: [u8; 256],
    writers: Writers,
    /// The current launch's read pieces from earlier launches (communication) and from this
    /// launch (sharing).
    comm: Pieces,
    shared: Pieces,
    load_strides: StrideCounts,
    /// Communicated write ranges, as they are overwritten or at the end.
    retired: Vec<Retired>,
    /// Per reader launch, its rows sorted by writer, then reader, launch after launch:
    /// launch `l`'s are `into[into_at[l]..into_at[l + 1]]`.
    into: Vec<Row>,
    into_at: Vec<usize>,
    /// One launch's rows in reader order, reused.
    rows: Vec<Row>,
    per_launch: Vec<LaunchComm>,
    /// Stamps per writer CTA id, for counting the distinct writers of each reader.
    seen: Vec<u64>,
    stamp: u64,
}

/// What the first pass found.
pub(super) struct FirstPassResult {
    pub into: Vec<Row>,
    pub into_at: Vec<usize>,
    /// Without out-degrees yet (the pairs give them).
    pub per_launch: Vec<LaunchComm>,
    /// Communicated write ranges sorted by writer (so by launch, then CTA), then address;
    /// launch `l`'s are `retired[retired_at[l]..retired_at[l + 1]]`.
    pub retired: Vec<Retired>,
    pub retired_at: Vec<usize>,
    pub load_strides: StrideCounts,
}

/// The current launch, as its accesses are walked.
pub(super) struct Launch {
    /// The writer number of CTA 0.
    base: u32,
    ctas: u32,
    cta_of: CtaOf,
    /// Per CTA, the address of its latest communicated load (`u64::MAX`: none yet).
    last_load: Vec<u64>,
    read_bytes: u64,
    write_bytes: u64,
}

impl FirstPass {
    pub fn new(trace: &Trace, numbers: &Numbers) -> Self {
        let most_ctas = trace.kernels.iter().map(|k| k.num_ctas()).max();
        FirstPass {
            numbers: numbers.clone(),
            launch_of: LaunchOf::new(&numbers.0),
            classes: counted_table(),
            writers: Writers::default(),
            comm: Pieces::default(),
            shared: Pieces::default(),
            load_strides: StrideCounts::default(),
            retired: Vec::new(),
            into: Vec::new(),
            into_at: vec![0],
            rows: Vec::new(),
            per_launch: Vec::with_capacity(trace.kernels.len()),
            seen: vec![0; most_ctas.unwrap_or(0) as usize],
            stamp: 0,
        }
    }

    /// Begins the replay of launch number `l`, `k`.
    pub fn begin(&self, l: usize, k: &Kernel) -> Launch {
        let ctas = k.num_ctas();
        Launch {
            base: self.numbers.0[l],
            ctas,
            cta_of: CtaOf::new(k),
            last_load: vec![u64::MAX; ctas as usize],
            read_bytes: 0,
            write_bytes: 0,
        }
    }

    /// Replays rows `rows` of the launch begun, `k`; `done` counts the accesses walked.
    pub fn rows(
        &mut self,
        launch: &mut Launch,
        k: &Kernel,
        rows: std::ops::Range<usize>,
        done: &mut u64,
        total: u64,
        progress: &mut dyn FnMut(u64, u64) -> bool,
    ) -> Result<(), CommError> {
        let n = rows.len() as u64;
        each_access(
            k.columns(),
            rows,
            *done,
            total,
            progress,
            |flag, addr, thread, size| self.access(launch, flag, addr, u64::from(size), thread),
        )?;
        *done += n;
        Ok(())
    }

    /// Ends the replay of the launch begun, `k`, all its rows replayed.
    pub fn end(&mut self, launch: Launch, k: &Kernel) {
        let ctas = launch.ctas;
        let (communicated_read_bytes, in_degree) = self.drain_communication(ctas);
        let mut shared_bytes = 0;
        self.shared.drain(|_, _, bytes| shared_bytes += bytes);
        self.per_launch.push(LaunchComm {
            name: k.name.clone(),
            grid: k.grid,
            read_bytes: launch.read_bytes,
            write_bytes: launch.write_bytes,
            communicated_read_bytes,
            communicated_write_bytes: 0,
            shared_bytes,
            in_degree_mean: 0.0,
            in_degree_std: 0.0,
            out_degree_mean: 0.0,
            out_degree_std: 0.0,
            in_degree,
            out_degree: vec![0; ctas as usize],
        });
    }

    /// One access of the current launch, of `size` bytes at `addr` by `thread`.
    #[inline(always)]
    fn access(&mut self, launch: &mut Launch, flag: u8, addr: u64, size: u64, thread: u32) {
        let class = self.classes[flag as usize];
        if class == 0 {
            return;
        }
        let cta = launch.cta_of.of(thread);
        if cta >= launch.ctas {
            return;
        }
        let (base, me) = (launch.base, launch.base + cta);
        if class & 1 != 0 {
            launch.read_bytes += size;
            let mut from_earlier = false;
            let (comm, shared) = (&mut self.comm, &mut self.shared);
            self.writers
                .read(base, me, addr, size, |start, end, writer| {
                    let to = if writer < base {
                        from_earlier = true;
                        &mut *comm
                    } else {
                        &mut *shared
                    };
                    to.push(cta, Piece::new(writer, start, end));
                });
            if from_earlier {
                if let Some(last) = launch.last_load.get_mut(cta as usize) {
                    if *last != u64::MAX {
                        self.load_strides.add(stride(*last, addr));
                    }
                    *last = addr;
                }
            }
        }
        if class & 2 != 0 {
            launch.write_bytes += size;
            let retired = &mut self.retired;
            self.writers
                .write(me, addr, size, |r| memory::push(retired, r));
        }
    }

    /// Drains the launch's communication pieces into rows sorted by writer (appended to
    /// `into`); returns the communicated bytes and each reader's in-degree (distinct writer
    /// CTA ids over all earlier launches).
    fn drain_communication(&mut self, ctas: u32) -> (u64, Vec<u32>) {
        let mut communicated = 0;
        let mut in_degree = vec![0; ctas as usize];
        let (rows, seen, stamp) = (&mut self.rows, &mut self.seen, &mut self.stamp);
        let (numbers, launch_of) = (&self.numbers, &self.launch_of);
        rows.clear();
        let mut reader_at = None;
        self.comm.drain(|reader, writer, bytes| {
            communicated += bytes;
            rows.push(Row {
                writer,
                reader,
                bytes,
            });
            if reader_at != Some(reader) {
                reader_at = Some(reader);
                *stamp += 1;
            }
            // A writer CTA id is counted when its stamp is not yet the reader's.
            let wc = writer - numbers.0[launch_of.of(writer)];
            if let (Some(s), Some(d)) = (
                seen.get_mut(wc as usize),
                in_degree.get_mut(reader as usize),
            ) {
                // Added, not branched on, as in `Pairs::add`.
                *d += u32::from(*s != *stamp);
                *s = *stamp;
            }
        });
        by_writer(rows, &mut self.into);
        self.into_at.push(self.into.len());
        (communicated, in_degree)
    }

    /// Ends the pass: the ranges still communicated are retired, sorted, and summed per
    /// launch.
    pub fn finish(mut self) -> FirstPassResult {
        let mut unsorted = std::mem::take(&mut self.retired);
        self.writers.finish(|r| memory::push(&mut unsorted, r));
        // Those of one writer never overlap: a byte is retired once per write, and a
        // launch's writes are all before any later read.
        let mut retired = stable_sorted(&unsorted, |r| r.writer);
        drop(unsorted);
        for group in retired.chunk_by_mut(|a, b| a.writer == b.writer) {
            group.sort_unstable_by_key(|r| r.start);
        }
        let mut retired_at = vec![0];
        for (l, pl) in self.per_launch.iter_mut().enumerate() {
            let from = retired_at[l];
            let n = retired[from..].partition_point(|r| r.writer < self.numbers.0[l + 1]);
            let mine = &retired[from..from + n];
            pl.communicated_write_bytes = mine.iter().map(|r| u64::from(r.len)).sum();
            retired_at.push(from + n);
        }
        FirstPassResult {
            into: self.into,
            into_at: self.into_at,
            per_launch: self.per_launch,
            retired,
            retired_at,
            load_strides: self.load_strides,
        }
    }
}
