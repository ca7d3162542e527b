//! What crosses between a page and its worker (`page.rs`): the request ([`request`]: the
//! [`Source`] as JSON, a file's bytes beside it as they are), and the answer ([`Answer`], the
//! result without its rows) with each kernel's columns beside it, which the page takes as
//! typed arrays (a copy of memory, not a parse). Both ends are this code; the page still
//! checks what comes back (`Kernel::from_parts`), so a broken answer is an error, not a
//! trace that panics later.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use warpscope_core::trace::{Columns, Format, Kernel, KernelHeader, KernelParts, Trace};

use crate::data::{Segments, TraceData};
use crate::job::{Finished, JobError};
use crate::worker::{Loaded, Source};

/// The request for `source` (JSON, a file's bytes left out) and the bytes that go beside
/// it; `None` for a file named by its path (a page has none).
pub fn request(source: &Source) -> Option<(String, Option<Arc<[u8]>>)> {
    let bytes = match source {
        Source::File { .. } => return None,
        Source::Bytes { bytes, .. } => Some(bytes.clone()),
        _ => None,
    };
    Some((serde_json::to_string(source).ok()?, bytes))
}

/// The source a request names, with the file's bytes that came beside it.
pub fn source(request: &str, bytes: Option<Vec<u8>>) -> Result<Source, String> {
    let source: Source =
        serde_json::from_str(request).map_err(|e| format!("a broken request: {e}"))?;
    Ok(match source {
        Source::Bytes { name, .. } => Source::Bytes {
            bytes: bytes
                .ok_or_else(|| format!("{name}: the file's bytes did not come"))?
                .into(),
            name,
        },
        other => other,
    })
}

/// A worker's answer without the kernels' rows, which come beside it ([`Rows`]), one entry a
/// kernel in order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Answer {
    Trace {
        label: String,
        /// [`Format::name`].
        format: Option<String>,
        segments: Segments,
        accesses: u64,
        truncated: Option<String>,
        kernels: Vec<KernelHeader>,
    },
    TooLarge {
        projected: u64,
    },
    Truncated {
        error: String,
    },
    Failed(String),
    Cancelled,
}

/// A kernel's rows as they cross: its columns and its CTAs' first rows.
pub type Rows = (Columns, Vec<u32>);

/// The answer for a load's result, and the rows that go beside it (the trace's, moved).
pub fn answer(result: Finished<Loaded>) -> (Answer, Vec<Rows>) {
    let loaded = match result {
        Ok(l) => l,
        Err(JobError::Failed(e)) => return (Answer::Failed(e), Vec::new()),
        Err(JobError::Cancelled) => return (Answer::Cancelled, Vec::new()),
    };
    let data = match loaded {
        Loaded::Trace(t) => t,
        Loaded::TooLarge { projected } => return (Answer::TooLarge { projected }, Vec::new()),
        Loaded::Truncated { error } => return (Answer::Truncated { error }, Vec::new()),
    };
    // The worker holds the only handle: the trace moves out without a copy.
    let data = Arc::try_unwrap(data).unwrap_or_else(|shared| TraceData {
        trace: shared.trace.clone(),
        label: shared.label.clone(),
        path: shared.path.clone(),
        format: shared.format,
        segments: shared.segments.clone(),
        accesses: shared.accesses,
        truncated: shared.truncated.clone(),
        streamed: shared.streamed,
    });
    let (headers, rows) = data
        .trace
        .kernels
        .into_iter()
        .map(|k| {
            let p = k.into_parts();
            (p.header, (p.columns, p.cta_starts))
        })
        .unzip();
    let head = Answer::Trace {
        label: data.label,
        format: data.format.map(|f| f.name().to_string()),
        segments: data.segments,
        accesses: data.accesses,
        truncated: data.truncated,
        kernels: headers,
    };
    (head, rows)
}

/// The load's result from a worker's answer and the rows that came beside it; with
/// `rows_checked`, every row has been checked already (`KernelParts::check_rows`, a piece at a
/// time between frames), and the rest is checked here.
pub fn result(answer: Answer, rows: Vec<Rows>, rows_checked: bool) -> Finished<Loaded> {
    let (label, format, segments, accesses, truncated, headers) = match answer {
        Answer::Trace {
            label,
            format,
            segments,
            accesses,
            truncated,
            kernels,
        } => (label, format, segments, accesses, truncated, kernels),
        Answer::TooLarge { projected } => return Ok(Loaded::TooLarge { projected }),
        Answer::Truncated { error } => return Ok(Loaded::Truncated { error }),
        Answer::Failed(e) => return Err(JobError::Failed(e)),
        Answer::Cancelled => return Err(JobError::Cancelled),
    };
    if headers.len() != rows.len() {
        return Err(broken(format!(
            "{} kernels came with the rows of {}",
            headers.len(),
            rows.len()
        )));
    }
    let mut trace = Trace::default();
    for (i, (header, (columns, cta_starts))) in headers.into_iter().zip(rows).enumerate() {
        let parts = KernelParts {
            header,
            columns,
            cta_starts,
        };
        let k = match rows_checked {
            true => Kernel::from_parts_rows_checked(parts),
            false => Kernel::from_parts(parts),
        };
        let k = k.map_err(|e| broken(format!("kernel {i}: {e}")))?;
        trace.kernels.push(k);
    }
    let format = match format {
        Some(name) => Some(
            Format::from_name(&name).ok_or_else(|| broken(format!("unknown format `{name}`")))?,
        ),
        None => None,
    };
    Ok(Loaded::Trace(Arc::new(TraceData {
        trace,
        label,
        path: None,
        format,
        segments,
        accesses,
        truncated,
        streamed: None,
    })))
}

/// An answer that does not fit its rows (not expected: both ends are this code).
fn broken(what: String) -> JobError {
    JobError::Failed(format!("the page's worker gave a broken trace: {what}"))
}

#[cfg(test)]
#[path = "wire_tests.rs"]
mod tests;
