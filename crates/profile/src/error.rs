//! The crate's error type.

use std::io;

/// Why sampling could not start or ended badly.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// The kernel refused the event; `advice` names the sysctl or capability to change.
    #[error("cannot sample process {pid}: {advice}")]
    Denied { pid: u32, errno: i32, advice: String },
    /// The root process is not running (or has no thread left to attach to).
    #[error("cannot sample process {pid}: it is not running")]
    NoProcess { pid: u32 },
    /// A system call failed.
    #[error("cannot sample process {pid}: {what}: {source}")]
    Io { pid: u32, what: &'static str, source: io::Error },
    /// The sampler's thread panicked (a bug; the samples are lost).
    #[error("the sampler's thread of process {pid} stopped abnormally")]
    Thread { pid: u32 },
}
