//! Why a run could not start at all. Everything after the start (a target that never became ready, a phase
//! the engine could not run, Ctrl-C) is part of the outcome instead, with the reports written so far.

use std::path::PathBuf;

/// A run that could not begin: nothing was measured and no report was written.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The output directory could not be created (`--out` under a file, no permission), or an earlier run's
    /// files in it could not be moved aside.
    #[error("cannot create the output directory {path}: {source}")]
    OutputDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// This machine's CPUs could not be read, so the spec's pinning cannot be checked.
    #[error("cannot read this machine's CPUs: {0}")]
    Topology(#[source] loadgate_machine::MachineError),

    /// `on_mismatch: fail` and the spec's CPUs are not all here.
    #[error("{0}")]
    Pinning(String),

    /// Shard results that cannot be merged at all (none is a shard result), or local shards that could not
    /// start.
    #[error("{0}")]
    Shards(String),

    /// The live export could not start (`--metrics-listen` on an address in use).
    #[error("{0}")]
    Export(#[source] loadgate_export::ExportError),
}

/// A job that cannot be built: the message says what to change. Nothing ran.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// An option, a shard or a file the user gave does not fit (exit 2).
    #[error("{0}")]
    Invalid(String),
    /// A spec that does not load: its diagnostic, already rendered with its location (`error: ...`), exit 2.
    #[error("{0}")]
    Diagnostic(String),
    /// This machine could not give what the job needs (a temporary directory, a file for the shards).
    #[error("{0}")]
    Machine(String),
}
