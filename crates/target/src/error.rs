//! The crate's error type, every variant of which renders as a sentence a user can act on, and a readiness
//! probe attempt's failure ([`Failed`]), shared by the probes.

use std::path::PathBuf;

/// Everything that can go wrong while launching, probing, watching or stopping a target.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    /// The built-in server's configuration does not make a command line.
    #[error(transparent)]
    Server(#[from] loadgate_server::ServerError),

    /// The launch description is unusable (empty command, bad URL).
    #[error("cannot launch the target: {0}")]
    InvalidLaunch(String),

    /// The log directory or a log file could not be created.
    #[error("cannot create the target's log file {path}: {source}")]
    LogFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// The operating system refused to start the target.
    #[error("cannot start the target `{program}`: {source}")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },

    /// The target did not become ready in time.
    #[error("the target did not become ready within {waited:.1}s ({last}); last lines of its log:\n{log_tail}")]
    NotReady { waited: f64, last: String, log_tail: String },

    /// The readiness probe reached the target and got an answer no wait can change: a certificate the load
    /// refuses (an unknown CA, another name).
    #[error("the target's readiness probe cannot succeed: {reason}")]
    ProbeRefused { reason: String },

    /// The target exited before it became ready.
    #[error("the target exited before it became ready ({status}); last lines of its log:\n{log_tail}")]
    ExitedBeforeReady { status: String, log_tail: String },

    /// The built-in server child never printed its `listening on` line.
    #[error("the built-in server did not report its address ({reason}); last lines of its log:\n{log_tail}")]
    NoListenLine { reason: String, log_tail: String },

    /// Signalling or reaping the target failed.
    #[error("cannot stop the target (process group {pgid}): {reason}")]
    Stop { pgid: u32, reason: String },

    /// Pinning the target or reading its processes failed.
    #[error(transparent)]
    Machine(#[from] loadgate_machine::MachineError),
}

/// Why a probe attempt failed, and whether another attempt could succeed.
#[derive(Debug)]
pub(crate) struct Failed {
    pub message: String,
    /// The server answered the handshake with a certificate the load refuses: retrying cannot help.
    pub fatal: bool,
}

impl Failed {
    pub(crate) fn retry(message: String) -> Failed {
        Failed { message, fatal: false }
    }
}
