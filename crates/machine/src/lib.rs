//! Facts about the machine a run uses, apart from the server under test.
//!
//! | module       | what it does                                                                               |
//! |--------------|--------------------------------------------------------------------------------------------|
//! | [`hardware`] | online CPUs and SMT siblings, affinity masks, `on_mismatch` applied to the spec's pinning, the fingerprint |
//! | [`sample`]   | once-a-second CPU and RSS of a process tree (the target), CPU of generator worker threads   |
//! | [`procfs`]   | the small `/proc` readers the others share                                                  |
//! | [`limits`]   | the open-file limit a run with many connections needs                                      |
//!
//! Pinning in a run (what the runner does):
//!
//! ```no_run
//! # fn main() -> Result<(), loadgate_machine::MachineError> {
//! use loadgate_machine::hardware::{self, PinningDecision};
//! use loadgate_model::{units::CpuList, OnMismatch};
//! // The plan's `hardware`: the CPUs it pins, each worker's planned CPU, `on_mismatch`.
//! let (generator_cpus, target_cpus): (Option<CpuList>, Option<CpuList>) = (None, None);
//! let planned: Vec<Option<u32>> = vec![None, None];
//! let topo = hardware::CpuTopology::read()?;
//! match hardware::check_pinning(&topo, generator_cpus.as_ref(), target_cpus.as_ref(), OnMismatch::Warn) {
//!     PinningDecision::Run(p) => { let _cpus = hardware::effective_worker_cpus(&planned, p.generator.as_ref()); }
//!     PinningDecision::Fail { message } | PinningDecision::Skip { message } => eprintln!("{message}"),
//! }
//! # Ok(()) }
//! ```

pub mod hardware;
pub mod limits;
pub mod procfs;
pub mod sample;

use std::path::PathBuf;

/// Reading `/proc` or `/sys`, or setting an affinity, failed.
#[derive(Debug, thiserror::Error)]
pub enum MachineError {
    /// Reading /proc or /sys failed where the value is required.
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// A /proc or /sys file whose content did not parse.
    #[error("unexpected content in {path}: {detail}")]
    Parse { path: PathBuf, detail: String },

    /// A thread or process affinity call failed.
    #[error("cannot pin to CPUs {cpus}: {source}")]
    Affinity {
        cpus: String,
        #[source]
        source: std::io::Error,
    },
}
