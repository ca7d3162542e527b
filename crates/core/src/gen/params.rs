//! `key=value` parameters of the generators, with defaults and errors naming the key.

use crate::trace::{CtaSink, Dim3};
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum GenError {
    #[error("unknown kernel `{0}`: run `warpscope gen --list` for the built-in kernels")]
    UnknownKernel(String),
    #[error("kernel `{kernel}`: unknown parameter `{key}` (expected one of: {expected})")]
    UnknownParam {
        kernel: String,
        key: String,
        expected: String,
    },
    #[error("kernel `{kernel}`: parameter `{key}`: {message}")]
    BadValue {
        kernel: String,
        key: String,
        message: String,
    },
    #[error("kernel `{kernel}`: {message}")]
    Invalid { kernel: String, message: String },
    /// A kernel written in the kernel language is wrong: where, and what was expected.
    #[error("{file}:{line}:{column}: {message}")]
    Source {
        file: String,
        line: usize,
        column: usize,
        message: String,
    },
    /// What the generated CTAs were handed to stopped taking them, and why.
    #[error("kernel `{kernel}`: {reason}")]
    SinkStopped { kernel: String, reason: String },
    /// The caller's control said stop (cancelled, or the trace would be too large).
    #[error("kernel `{kernel}`: generation stopped after {accesses} accesses (about {projected} expected)")]
    Stopped {
        kernel: String,
        accesses: u64,
        projected: u64,
    },
}

/// Where a generator stands, reported after every CTA to the caller's control.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GenProgress {
    /// Launch being generated (0-based).
    pub launch: usize,
    /// CTAs of this launch done, and in all.
    pub ctas_done: u64,
    pub ctas: u64,
    /// Accesses generated so far (every launch).
    pub accesses: u64,
    /// The accesses expected once this launch is done, projected from the CTAs done (later
    /// launches of a multi-launch kernel are not known yet).
    pub projected: u64,
}

/// What a caller passes to watch and stop a generator: `false` stops it.
pub type Control<'a> = &'a mut dyn FnMut(&GenProgress) -> bool;

/// Parsed parameters; each getter records the keys a kernel understands. Also carries the
/// caller's control, asked after every CTA.
pub struct Params<'a> {
    kernel: String,
    values: BTreeMap<String, String>,
    known: Vec<String>,
    control: RefCell<Option<Control<'a>>>,
    /// Where CTAs go as they are built, if not into kernels.
    sink: RefCell<Option<&'a mut dyn CtaSink>>,
    /// Accesses of the launches already built, and how many there were.
    before: Cell<(u64, usize)>,
}

impl<'a> Params<'a> {
    pub fn new(kernel: &str, pairs: &[(String, String)], control: Option<Control<'a>>) -> Self {
        Params {
            kernel: kernel.into(),
            values: pairs.iter().cloned().collect(),
            known: Vec::new(),
            control: RefCell::new(control),
            sink: RefCell::new(None),
            before: Cell::new((0, 0)),
        }
    }
    /// Hands CTAs to `sink` as they are built instead of keeping them in the kernels.
    pub fn send_to(&mut self, sink: &'a mut dyn CtaSink) {
        *self.sink.get_mut() = Some(sink);
    }
    /// Gives `sink`, if there is one, to `f`; `Err` when it says stop.
    pub fn sink(
        &self,
        f: impl FnOnce(&mut dyn CtaSink) -> Result<(), crate::trace::TraceError>,
    ) -> Result<bool, GenError> {
        let mut sink = self.sink.borrow_mut();
        let Some(s) = sink.as_deref_mut() else {
            return Ok(false);
        };
        f(s).map(|()| true).map_err(|e| GenError::SinkStopped {
            kernel: self.kernel.clone(),
            reason: e.to_string(),
        })
    }
    /// Reports progress through a launch (`accesses` of it so far) and says whether to go on.
    pub fn keep_going(&self, ctas_done: u64, ctas: u64, accesses: u64) -> Result<(), GenError> {
        let (before, launch) = self.before.get();
        let projected = before + accesses.saturating_mul(ctas) / ctas_done.max(1);
        let progress = GenProgress {
            launch,
            ctas_done,
            ctas,
            accesses: before + accesses,
            projected,
        };
        let go = match self.control.borrow_mut().as_mut() {
            Some(c) => c(&progress),
            None => true,
        };
        if go {
            Ok(())
        } else {
            Err(GenError::Stopped {
                kernel: self.kernel.clone(),
                accesses: progress.accesses,
                projected,
            })
        }
    }
    /// Records a finished launch of `accesses`.
    pub fn launch_done(&self, accesses: u64) {
        let (before, launch) = self.before.get();
        self.before.set((before + accesses, launch + 1));
    }
    fn bad(&self, key: &str, message: impl Into<String>) -> GenError {
        GenError::BadValue {
            kernel: self.kernel.clone(),
            key: key.into(),
            message: message.into(),
        }
    }
    pub fn invalid(&self, message: impl Into<String>) -> GenError {
        GenError::Invalid {
            kernel: self.kernel.clone(),
            message: message.into(),
        }
    }
    pub fn u64(&mut self, key: &str, default: u64) -> Result<u64, GenError> {
        self.known.push(key.to_string());
        match self.values.get(key) {
            None => Ok(default),
            Some(v) => crate::trace::text::parse_u64(v)
                .ok_or_else(|| self.bad(key, format!("expected a number, found `{v}`"))),
        }
    }
    /// A positive count no larger than `max`.
    pub fn count(&mut self, key: &'static str, default: u64, max: u64) -> Result<u32, GenError> {
        let v = self.u64(key, default)?;
        if v == 0 || v > max {
            return Err(self.bad(key, format!("expected 1 to {max}, found {v}")));
        }
        Ok(v as u32)
    }
    pub fn dim3(&mut self, key: &'static str, default: Dim3) -> Result<Dim3, GenError> {
        self.known.push(key.to_string());
        match self.values.get(key) {
            None => Ok(default),
            Some(v) => crate::trace::text::parse_dim3(v)
                .filter(|d| d.count() > 0 && d.count() <= 1024)
                .ok_or_else(|| {
                    self.bad(
                        key,
                        format!("expected X[,Y[,Z]] with 1 to 1024 threads, found `{v}`"),
                    )
                }),
        }
    }
    /// Element size in bytes (1, 2, 4, 8 or 16).
    pub fn elem(&mut self) -> Result<u64, GenError> {
        let e = self.u64("elem", 4)?;
        if ![1, 2, 4, 8, 16].contains(&e) {
            return Err(self.bad(
                "elem",
                format!("expected 1, 2, 4, 8 or 16 bytes, found {e}"),
            ));
        }
        Ok(e)
    }
    /// Fails on keys no getter asked for.
    pub fn finish(&self) -> Result<(), GenError> {
        for key in self.values.keys() {
            if !self.known.contains(key) {
                let mut expected: Vec<&str> = self.known.iter().map(String::as_str).collect();
                expected.sort_unstable();
                expected.dedup();
                return Err(GenError::UnknownParam {
                    kernel: self.kernel.clone(),
                    key: key.clone(),
                    expected: expected.join(", "),
                });
            }
        }
        Ok(())
    }
}

/// Places buffers one after another from `base`, each aligned to `align` bytes.
pub struct Layout {
    next: u64,
    align: u64,
}

impl Layout {
    pub fn new(p: &mut Params) -> Result<Self, GenError> {
        let base = p.u64("base", 0x1000_0000)?;
        let align = p.u64("align", 256)?;
        if align == 0 || !align.is_power_of_two() {
            return Err(p.invalid(format!("align must be a power of two, found {align}")));
        }
        Ok(Layout { next: base, align })
    }
    /// Reserves `bytes` and returns the buffer's base address.
    pub fn alloc(&mut self, bytes: u64) -> u64 {
        let a = self.next.div_ceil(self.align) * self.align;
        self.next = a + bytes.max(1);
        a
    }
}
