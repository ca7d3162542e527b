//! The requests of a job whose observer wants them after another job's: written to a
//! temporary file as the job runs on a thread of its own, and told to the observer once the
//! jobs before it have told theirs ([`Spool::replay`]). So the full model's jobs on several
//! SMs run side by side, each taking its CTAs as they are built, while the observer still
//! sees their requests one SM after another, as one thread gives them; memory holds the
//! CTAs in flight, and the file the requests (95 bytes each).

use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};

use warpscope_core::cache::MissClass;
use warpscope_core::sim::{Observer, RequestEvent, SimError};

/// Bytes of one request in the file ([`encode`]).
const RECORD: usize = 95;

/// Requests told to the observer between two chances to cancel while replaying.
const REPLAY_STEP: u64 = 1 << 14;

/// A job's requests, kept in a temporary file (deleted when dropped).
pub(super) struct Spool {
    file: BufWriter<std::fs::File>,
    requests: u64,
    /// The first write that failed: the job stops, and its error is this one.
    failed: Option<std::io::Error>,
}

impl Spool {
    pub fn new() -> Result<Self, SimError> {
        let file = tempfile::tempfile().map_err(|e| spool_error("create", &e))?;
        Ok(Spool {
            file: BufWriter::with_capacity(1 << 20, file),
            requests: 0,
            failed: None,
        })
    }

    /// Keeps one request.
    pub fn keep(&mut self, event: &RequestEvent) {
        if self.failed.is_some() {
            return;
        }
        match self.file.write_all(&encode(event)) {
            Ok(()) => self.requests += 1,
            Err(e) => self.failed = Some(e),
        }
    }

    /// Whether a write failed (the job should stop).
    pub fn failed(&self) -> bool {
        self.failed.is_some()
    }

    /// Tells `observer` every request kept, in order; asks `go_on` every few thousand
    /// whether to go on (`false` cancels).
    pub fn replay(
        self,
        observer: &mut dyn Observer,
        mut go_on: impl FnMut(&mut dyn Observer) -> bool,
    ) -> Result<(), SimError> {
        if let Some(e) = self.failed {
            return Err(spool_error("write", &e));
        }
        let mut file = self
            .file
            .into_inner()
            .map_err(|e| spool_error("write", e.error()))?;
        file.seek(SeekFrom::Start(0))
            .map_err(|e| spool_error("read", &e))?;
        let mut r = BufReader::with_capacity(1 << 20, file);
        let mut rec = [0u8; RECORD];
        for i in 0..self.requests {
            r.read_exact(&mut rec)
                .map_err(|e| spool_error("read", &e))?;
            observer.on_request(&decode(&rec));
            if i % REPLAY_STEP == REPLAY_STEP - 1 && !go_on(observer) {
                return Err(SimError::Cancelled);
            }
        }
        Ok(())
    }
}

fn spool_error(what: &str, e: &std::io::Error) -> SimError {
    SimError::Config(format!(
        "could not {what} the temporary file holding a simulated SM's requests: {e}"
    ))
}

/// A job's observer that keeps its requests in a [`Spool`]; `go_on` says whether the run
/// goes on.
pub(super) struct Spooling<'s, F: Fn() -> bool> {
    pub spool: &'s mut Spool,
    pub go_on: F,
}

impl<F: Fn() -> bool> Observer for Spooling<'_, F> {
    fn on_request(&mut self, event: &RequestEvent) {
        self.spool.keep(event);
    }
    fn wants_requests(&self) -> bool {
        true
    }
    fn progress(&mut self, _done: u64, _total: u64) -> bool {
        !self.spool.failed() && (self.go_on)()
    }
}

/// One request as [`RECORD`] bytes, little-endian; an absent value is 0 with its bit clear
/// in the presence byte.
fn encode(e: &RequestEvent) -> [u8; RECORD] {
    let mut b = [0u8; RECORD];
    let mut at = 0;
    let mut put = |bytes: &[u8]| {
        b[at..at + bytes.len()].copy_from_slice(bytes);
        at += bytes.len();
    };
    put(&e.order.to_le_bytes());
    for v in [e.sm, e.kernel, e.cta, e.warp, e.inst] {
        put(&v.to_le_bytes());
    }
    put(&e.line.to_le_bytes());
    put(&e.set.to_le_bytes());
    let flags =
        e.write as u8 | (e.hit as u8) << 1 | (e.in_flight as u8) << 2 | (e.first as u8) << 3;
    let class = match e.class {
        None => 0u8,
        Some(MissClass::Compulsory) => 1,
        Some(MissClass::Capacity) => 2,
        Some(MissClass::Conflict) => 3,
    };
    let longs = [
        e.reuse_distance,
        e.time,
        e.set_distance,
        e.evicted,
        e.effect_at,
    ];
    let mut present = e.thread.is_some() as u8;
    for (i, v) in longs.iter().enumerate() {
        present |= (v.is_some() as u8) << (i + 1);
    }
    put(&[flags, class, present]);
    for v in longs {
        put(&v.unwrap_or(0).to_le_bytes());
    }
    put(&e.thread.unwrap_or(0).to_le_bytes());
    put(&e.sectors.to_le_bytes());
    put(&e.refused.to_le_bytes());
    b
}

/// The request [`encode`] wrote.
fn decode(b: &[u8; RECORD]) -> RequestEvent {
    let mut at = 0;
    let mut take = |n: usize| {
        let s = &b[at..at + n];
        at += n;
        s
    };
    let u64_of = |s: &[u8]| u64::from_le_bytes(s.try_into().unwrap_or([0; 8]));
    let u32_of = |s: &[u8]| u32::from_le_bytes(s.try_into().unwrap_or([0; 4]));
    let order = u64_of(take(8));
    let [sm, kernel, cta, warp, inst] = [(); 5].map(|()| u32_of(take(4)));
    let line = u64_of(take(8));
    let set = u32_of(take(4));
    let (flags, class, present) = (take(1)[0], take(1)[0], take(1)[0]);
    let longs: [Option<u64>; 5] = std::array::from_fn(|i| {
        let v = u64_of(take(8));
        (present >> (i + 1) & 1 != 0).then_some(v)
    });
    let thread = u32_of(take(4));
    let sectors = u32_of(take(4));
    let refused = u32_of(take(4));
    RequestEvent {
        order,
        sm,
        kernel,
        cta,
        warp,
        inst,
        line,
        set,
        write: flags & 1 != 0,
        hit: flags & 2 != 0,
        class: match class {
            1 => Some(MissClass::Compulsory),
            2 => Some(MissClass::Capacity),
            3 => Some(MissClass::Conflict),
            _ => None,
        },
        reuse_distance: longs[0],
        time: longs[1],
        thread: (present & 1 != 0).then_some(thread),
        in_flight: flags & 4 != 0,
        set_distance: longs[2],
        sectors,
        evicted: longs[3],
        effect_at: longs[4],
        refused,
        first: flags & 8 != 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn event() -> impl Strategy<Value = RequestEvent> {
        let ids = (any::<u64>(), any::<[u32; 5]>(), any::<u64>(), any::<u32>());
        let flags = (any::<[bool; 4]>(), 0u8..4, any::<u32>(), any::<u32>());
        let options = (any::<[Option<u64>; 5]>(), any::<Option<u32>>());
        (ids, flags, options).prop_map(
            |(
                (order, [sm, kernel, cta, warp, inst], line, set),
                (b, class, sectors, refused),
                (l, thread),
            )| {
                RequestEvent {
                    order,
                    sm,
                    kernel,
                    cta,
                    warp,
                    inst,
                    line,
                    set,
                    write: b[0],
                    hit: b[1],
                    class: [
                        None,
                        Some(MissClass::Compulsory),
                        Some(MissClass::Capacity),
                        Some(MissClass::Conflict),
                    ][class as usize],
                    reuse_distance: l[0],
                    time: l[1],
                    thread,
                    in_flight: b[2],
                    set_distance: l[2],
                    sectors,
                    evicted: l[3],
                    effect_at: l[4],
                    refused,
                    first: b[3],
                }
            },
        )
    }

    proptest! {
        /// Every field of a request comes back from the file as it went in, in order.
        #[test]
        fn requests_come_back_from_the_spool_as_kept(events in prop::collection::vec(event(), 0..50)) {
            let mut spool = Spool::new().expect("spool");
            for e in &events {
                spool.keep(e);
            }
            struct Gather(Vec<RequestEvent>);
            impl Observer for Gather {
                fn on_request(&mut self, e: &RequestEvent) {
                    self.0.push(*e);
                }
            }
            let mut got = Gather(Vec::new());
            spool.replay(&mut got, |_| true).expect("replay");
            prop_assert_eq!(got.0, events);
        }
    }
}
