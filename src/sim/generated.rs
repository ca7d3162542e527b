//! A built-in kernel simulated while it is generated: each CTA goes to a [`Session`] as soon as
//! it is built, and the session schedules it as it would the whole kernel
//! ([`Session::begin_kernel`]), so memory holds the resident CTAs, never the trace. The
//! result is [`super::run`]'s on the generated trace (`tests/by_cta.rs`, `tests/cli.rs`).

use super::{Observer, Report, Session, SimError};
use crate::config::SimConfig;
use crate::gen::{Control, CtaSink, GenError};
use crate::trace::{Columns, Kernel};

/// Why a generated run failed.
#[derive(Debug, thiserror::Error)]
pub enum GeneratedError {
    #[error(transparent)]
    Gen(#[from] GenError),
    #[error(transparent)]
    Sim(#[from] SimError),
}

/// Hands generated CTAs to the session; keeps the first error.
struct ToSession<'a> {
    session: &'a mut Session,
    observer: &'a mut dyn Observer,
    error: Option<SimError>,
}

impl ToSession<'_> {
    fn ok(&mut self, r: Result<(), SimError>) -> bool {
        match r {
            Ok(()) => true,
            Err(e) => {
                self.error.get_or_insert(e);
                false
            }
        }
    }
}

impl CtaSink for ToSession<'_> {
    fn begin(&mut self, header: &Kernel) -> bool {
        let r = self.session.begin_kernel(header, self.observer);
        self.ok(r)
    }
    fn cta(&mut self, cta: u32, rows: &Columns) -> bool {
        let r = self.session.cta(cta, rows, self.observer);
        self.ok(r)
    }
    fn end(&mut self) -> bool {
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
    let mut sink = ToSession {
        session: &mut session,
        observer: &mut *observer,
        error: None,
    };
    let generated = crate::gen::generate_by_cta(name, pairs, control, &mut sink);
    if let Some(e) = sink.error.take() {
        return Err(e.into());
    }
    generated?;
    Ok(session.finish(observer))
}
