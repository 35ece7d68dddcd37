//! What can be wrong with a log: a line that does not parse (located), or the input as a whole.

use thiserror::Error;

/// One line (or HAR entry) that could not be read: where and what.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("line {line}: {message}")]
pub struct LineError {
    /// 1-based line number in the file (for HAR: the 1-based index of the entry).
    pub line: u64,
    /// What is wrong, naming the field and what was expected.
    pub message: String,
}

impl LineError {
    /// An error at `line`.
    pub fn new(line: u64, message: impl Into<String>) -> Self {
        LineError { line, message: message.into() }
    }
}

/// Why a log cannot be replayed at all.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum ReplayError {
    /// A format string (nginx `log_format`, Apache `LogFormat`) or a field mapping that cannot be used.
    #[error("format: {0}")]
    Format(String),
    /// The input is larger than the stated limits (lines, bytes, one line's bytes, the reorder buffer).
    #[error("{0}")]
    TooLarge(String),
    /// More lines failed than the allowed share; the first few are named.
    #[error(
        "{failed} of {read} lines could not be read (more than {max_share_percent}% allowed); first: {}",
        first.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
    )]
    TooManyBadLines {
        /// Lines that failed.
        failed: u64,
        /// Lines read.
        read: u64,
        /// The allowed share, in percent.
        max_share_percent: f64,
        /// The first failures, in file order.
        first: Vec<LineError>,
    },
    /// A request starts earlier than the reorder window allows (it was written too late after later ones).
    #[error("line {line}: starts {behind_ms} ms before a request already scheduled, beyond the reorder window of {window_ms} ms (raise `reorder_window`)")]
    OutOfOrder {
        /// The line of the late request.
        line: u64,
        /// How far behind the last request released it starts, in milliseconds.
        behind_ms: u64,
        /// The window, in milliseconds.
        window_ms: u64,
    },
    /// The input holds nothing to replay (a HAR without entries, an empty log, or everything skipped).
    #[error("{0}")]
    Empty(String),
    /// A whole-file format (HAR) that is not what was declared.
    #[error("{0}")]
    Invalid(String),
    /// A secret's replacement names an environment variable that is not set.
    #[error("secret `{name}` is to be read from the environment variable `{var}`, which is not set")]
    MissingSecret {
        /// The header or query parameter.
        name: String,
        /// The environment variable.
        var: String,
    },
    /// Reading the input failed.
    #[error("reading the log: {0}")]
    Io(String),
}
