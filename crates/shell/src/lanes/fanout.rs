//! The source's end of the lanes: a reader or generator writes kernels, CTAs and chunks into
//! a [`Fanout`], which hands them to every lane in batches.

use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender};
use std::sync::Arc;

use super::{Batch, Piece};
use warpscope_core::trace::{
    self, Columns, CtaSink, Instruction, Kernel, KernelSink, SinkHooks, TraceError,
};

/// A batch is sent once its pieces hold this many rows (so a chunk of a reference stream,
/// or a CTA of this many rows, goes alone and at once)...
pub(super) const BATCH_ROWS: usize = 1 << 14;
/// ...or once it holds this many pieces.
pub(super) const BATCH_PIECES: usize = 1 << 10;

/// The source's end of the lanes: sends each piece to every lane, in batches ([`Batch`]). It
/// is what a reader or a generator writes into (`trace::KernelSink`, `trace::CtaSink`). What
/// is still in its batch goes when it is dropped, or at [`Fanout::flush`].
pub struct Fanout {
    lanes: Vec<SyncSender<Batch>>,
    /// The batch being filled, and its rows.
    batch: Batch,
    batch_rows: usize,
    spare: Receiver<Columns>,
    /// Kernels begun so far and chunks of issued rows sent in the current one, when the
    /// file can be read on from any CTA or chunk ([`trace::ResumePoint`]).
    place: Option<(u32, u32)>,
    /// The sessions take instructions found after their kernel began.
    as_found: bool,
    /// Rows between two places to read on from that the reader should give
    /// ([`SinkHooks::read_on_every`]), and the place it gave for the next chunk.
    read_on_every: Option<u64>,
    read_on: Option<trace::ResumePoint>,
}

impl Fanout {
    pub(super) fn new(lanes: Vec<SyncSender<Batch>>, spare: Receiver<Columns>) -> Self {
        Fanout {
            lanes,
            batch: Vec::new(),
            batch_rows: 0,
            spare,
            place: None,
            as_found: false,
            read_on_every: None,
            read_on: None,
        }
    }

    /// Adds `p` to the batch, and sends the batch when it is full.
    pub fn send(&mut self, p: Piece) -> Result<(), TraceError> {
        self.batch_rows += p.rows();
        self.batch.push(Arc::new(p));
        if self.batch_rows >= BATCH_ROWS || self.batch.len() >= BATCH_PIECES {
            self.flush()?;
        }
        Ok(())
    }

    /// Sends what the batch holds.
    pub fn flush(&mut self) -> Result<(), TraceError> {
        self.batch_rows = 0;
        if self.batch.is_empty() {
            return Ok(());
        }
        let batch = std::mem::take(&mut self.batch);
        // The last lane gets the source's own references: once the lanes hold the pieces,
        // the source does not (a lone lane can take their rows out).
        let Some((last, others)) = self.lanes.split_last() else {
            return Ok(());
        };
        let stopped = |_| TraceError::Stopped("the simulation stopped".into());
        for lane in others {
            // A lane stopped (its simulation failed): stop reading.
            lane.send(batch.clone()).map_err(stopped)?;
        }
        last.send(batch).map_err(stopped)
    }

    /// Marks each CTA and chunk of issued rows sent from now on with its place in the file,
    /// `begun` kernels having begun already and `chunks` chunks of issued rows of the last
    /// one sent: the source is a file that can be read on from any CTA or chunk.
    pub fn number_pieces(&mut self, begun: u32, chunks: u32) {
        self.place = Some((begun, chunks));
    }

    /// Lets readers that would read the file twice to learn each kernel's instructions first
    /// read it once, sending instructions as they are found ([`Piece::Instructions`]), so the
    /// first requests come at once. Such a read may stop with
    /// [`TraceError::must_read_again`]; the shell then starts again without this.
    pub fn take_instructions_as_found(&mut self) {
        self.as_found = true;
    }

    /// Asks a reader that can (an NVBit log read in one pass) to give a place to read on
    /// from after a chunk of issued rows, every `rows` rows or so (each place costs a copy
    /// of the reader's tables).
    pub fn take_read_on_points(&mut self, rows: u64) {
        self.read_on_every = Some(rows);
    }

    /// An empty buffer for a piece's rows: one a lane is done with, or a new one.
    pub fn buffer(&self) -> Columns {
        let mut c = self.spare.try_recv().unwrap_or_default();
        c.clear();
        c
    }
}

impl KernelSink for Fanout {
    fn kernel(&mut self, k: Kernel) -> Result<(), TraceError> {
        // A kernel of the file, though no piece of it can be read on from.
        if let Some((begun, chunks)) = &mut self.place {
            *begun += 1;
            *chunks = 0;
        }
        self.send(Piece::Kernel(k))
    }
}

impl Drop for Fanout {
    fn drop(&mut self) {
        // A source that ended without a flush: its last pieces still go (if the lanes have
        // stopped, their error is the one told).
        let _ = self.flush();
    }
}

impl CtaSink for Fanout {
    fn begin_kernel(&mut self, header: &Kernel) -> Result<(), TraceError> {
        if let Some((begun, chunks)) = &mut self.place {
            *begun += 1;
            *chunks = 0;
        }
        self.send(Piece::Begin(header.header()))
    }
    fn cta(&mut self, cta: u32, rows: &Columns) -> Result<(), TraceError> {
        let mut copy = self.buffer();
        copy.extend_from(rows, 0..rows.len());
        let kernel = self.place.map(|(begun, _)| begun.saturating_sub(1));
        self.send(Piece::Cta(cta, Arc::new(copy), kernel))
    }
    fn cta_taken(&mut self, cta: u32, rows: &mut Columns) -> Result<(), TraceError> {
        let taken = std::mem::replace(rows, self.buffer());
        let kernel = self.place.map(|(begun, _)| begun.saturating_sub(1));
        self.send(Piece::Cta(cta, Arc::new(taken), kernel))
    }
    fn issued(&mut self, rows: &Columns) -> Result<(), TraceError> {
        let mut copy = self.buffer();
        copy.extend_from(rows, 0..rows.len());
        let place = self.place.as_mut().map(|(begun, chunks)| {
            *chunks += 1;
            trace::ResumePoint::Issued {
                kernel: begun.saturating_sub(1),
                next_chunk: *chunks,
            }
        });
        let at = self.read_on.take().or(place);
        self.send(Piece::Issued(copy, at))
    }
    fn end_kernel(&mut self) -> Result<(), TraceError> {
        self.send(Piece::End)
    }
    fn hooks(&mut self) -> Option<&mut dyn SinkHooks> {
        Some(self)
    }
}

impl SinkHooks for Fanout {
    fn takes_more_instructions(&self) -> bool {
        self.as_found
    }
    fn more_instructions(&mut self, added: &[Instruction]) -> Result<(), TraceError> {
        self.send(Piece::Instructions(added.to_vec()))
    }
    fn resident(&mut self, cta: u32, rows: &Columns) -> Result<(), TraceError> {
        let mut copy = Columns::default();
        copy.extend_from(rows, 0..rows.len());
        self.send(Piece::Resident(cta, copy))
    }
    fn read_on_every(&self) -> Option<u64> {
        self.read_on_every
    }
    fn read_on_point(&mut self, at: trace::ResumePoint) {
        self.read_on = Some(at);
    }
}

/// Whether `e` (a source's error, or one with it in its chain) is a read that must start
/// again in two passes ([`TraceError::ReadAgain`]: a source of [`super::file_source`] with
/// `as_found` met what only two passes take).
pub fn must_read_again(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<TraceError>()
            .is_some_and(|t| t.must_read_again())
    })
}

/// A source's end with a single lane, for a receiver of the pieces that is not a session
/// (the timing model's streams are built from them: `shell::timed::run_streamed`). Batches
/// of pieces wait in a queue of `depth`. The receiver hands the rows of pieces it is done
/// with back to the source through the sender, which saves the source fresh memory for
/// each piece.
pub fn pipe(depth: usize) -> (Fanout, Receiver<Batch>, Sender<Columns>) {
    let (give_back, spare) = channel::<Columns>();
    let (to, from) = sync_channel::<Batch>(depth.max(1));
    (Fanout::new(vec![to], spare), from, give_back)
}
