//! What a reader reports when a trace cannot be read: the file, where in it, and what was
//! expected.

use super::*;

/// Where in an input something went wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    Line(u64),
    Byte(u64),
    /// A row of a table (from 0).
    Row(u64),
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::Line(l) => write!(f, "line {l}"),
            Location::Byte(b) => write!(f, "byte offset {b}"),
            Location::Row(r) => write!(f, "row {r}"),
        }
    }
}

/// An error reading or writing a trace, naming the file and position.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("{file}: {at}: {message}")]
    Parse {
        file: String,
        at: Location,
        message: String,
    },
    /// The io error's text is in the message, so it is not also given as the source (an
    /// error chain would show it twice).
    #[error("{file}: {error}")]
    Io { file: String, error: std::io::Error },
    /// What the trace was read for stopped taking it (a simulation failed or was cancelled),
    /// and why.
    #[error("{0}")]
    Stopped(String),
    /// A read that handed instructions on as it found them ([`SinkHooks::more_instructions`])
    /// met what only a read in two passes takes (launches that interleave, a grid too large
    /// to size before its rows are counted). Its receiver holds part of the trace: the
    /// shell starts again with a receiver that wants whole headers.
    #[error("{file}: {at}: {why}; it is read again, in two passes")]
    ReadAgain {
        file: String,
        at: Location,
        why: String,
    },
}

impl TraceError {
    pub(crate) fn parse(file: &str, at: Location, message: impl Into<String>) -> Self {
        TraceError::Parse {
            file: file.to_string(),
            at,
            message: message.into(),
        }
    }
    pub(crate) fn read_again(file: &str, at: Location, why: impl Into<String>) -> Self {
        TraceError::ReadAgain {
            file: file.to_string(),
            at,
            why: why.into(),
        }
    }
    pub(crate) fn io(file: &str, error: std::io::Error) -> Self {
        TraceError::Io {
            file: file.to_string(),
            error,
        }
    }
    /// Whether the read must start again with a receiver that wants whole headers
    /// ([`TraceError::ReadAgain`]).
    pub fn must_read_again(&self) -> bool {
        matches!(self, TraceError::ReadAgain { .. })
    }
    /// Whether its message begins with the file it is about (every error of a reader but a
    /// stop of what it read for).
    pub fn names_its_file(&self) -> bool {
        !matches!(self, TraceError::Stopped(_))
    }
    /// The file held no kernel at all (not a truncation: there is nothing to keep).
    pub fn is_empty_trace(&self) -> bool {
        matches!(self, TraceError::Parse { message, .. } if message.starts_with(NO_KERNEL))
    }
}
