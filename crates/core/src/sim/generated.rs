//! A built-in kernel simulated while it is generated: each CTA goes to a [`Session`] as soon as
//! it is built, and the session schedules it as it would the whole kernel
//! ([`Session::begin_kernel`]), so memory holds the resident CTAs, never the trace. The
//! result is [`super::run`]'s on the generated trace (`tests/model/by_cta.rs`, `tests/cli/commands.rs`).

use super::{Observer, Report, Session, SimError};
use crate::config::SimConfig;
use crate::gen::{Control, GenError};
use crate::trace::{Columns, CtaSink, Kernel, KernelSink, TraceError};

/// Why a generated run failed.
#[derive(Debug, thiserror::Error)]
pub enum GeneratedError {
    #[error(transparent)]
    Gen(#[from] GenError),
    #[error(transparent)]
    Sim(#[from] SimError),
}

/// Hands what a source gives (a generator's or a reader's kernels and CTAs) to a session,
/// on the caller's thread; keeps the first simulation error, which stops the source.
pub struct ToSession<'a> {
    session: &'a mut Session,
    observer: &'a mut dyn Observer,
    error: Option<SimError>,
}

impl<'a> ToSession<'a> {
    pub fn new(session: &'a mut Session, observer: &'a mut dyn Observer) -> Self {
        ToSession {
            session,
            observer,
            error: None,
        }
    }
    /// The simulation error that stopped the source, if one did.
    pub fn take_error(&mut self) -> Option<SimError> {
        self.error.take()
    }
}

impl ToSession<'_> {
    /// Keeps a simulation error and stops the source.
    fn ok(&mut self, r: Result<(), SimError>) -> Result<(), TraceError> {
        r.map_err(|e| {
            let stop = TraceError::Stopped(e.to_string());
            self.error.get_or_insert(e);
            stop
        })
    }
}

impl KernelSink for ToSession<'_> {
    fn kernel(&mut self, k: Kernel) -> Result<(), TraceError> {
        let r = self.session.kernel(&k, self.observer);
        self.ok(r)
    }
}

impl CtaSink for ToSession<'_> {
    fn begin_kernel(&mut self, header: &Kernel) -> Result<(), TraceError> {
        let r = self.session.begin_kernel(header, self.observer);
        self.ok(r)
    }
    fn cta(&mut self, cta: u32, rows: &Columns) -> Result<(), TraceError> {
        let r = self.session.cta(cta, rows, self.observer);
        self.ok(r)
    }
    fn issued(&mut self, rows: &Columns) -> Result<(), TraceError> {
        let r = self.session.issued(rows, self.observer);
        self.ok(r)
    }
    fn end_kernel(&mut self) -> Result<(), TraceError> {
        let r = self.session.end_kernel(self.observer);
        self.ok(r)
    }
}

/// Simulates built-in kernel `name` with `pairs` under `cfg` (not the timing model) as it
/// is generated; `control` sees the generator's progress after every CTA and can stop it.
pub fn run_generated(
    cfg: &SimConfig,
    name: &str,
    pairs: &[(String, String)],
    control: Option<Control<'_>>,
    observer: &mut dyn Observer,
) -> Result<Report, GeneratedError> {
    let mut session = Session::new(cfg, 0)?;
    let mut sink = ToSession::new(&mut session, &mut *observer);
    let generated = crate::gen::generate_by_cta(name, pairs, control, &mut sink);
    if let Some(e) = sink.take_error() {
        return Err(e.into());
    }
    generated?;
    Ok(session.finish(observer))
}
