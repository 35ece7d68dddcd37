//! The server under test's lifecycle: start it, know when it is ready, notice when it dies, stop it.
//!
//! [`launch::Target::start`] runs a command pinned to CPUs in its own process group with its output in log
//! files; [`launch::Target::start_builtin`] runs loadgate's built-in reference server (the `loadgate-server`
//! crate) the same way; [`launch::Target::wait_ready`] probes it; [`launch::Target::on_exit`] reports a death;
//! [`launch::Target::stop`] (or dropping the [`launch::Target`]) stops the whole group.
//!
//! The machine's facts (CPU topology, pinning, sampling) live in `loadgate-machine`; the run that composes
//! both lives in `loadgate-runner`.
//!
//! ```no_run
//! # fn main() -> Result<(), loadgate_target::TargetError> {
//! use std::time::Duration;
//! use loadgate_target::launch;
//! let mut spec = launch::LaunchSpec::new(vec!["my-server".into()], "loadgate-out/demo");
//! spec.cpus = Some("0".parse().expect("a CPU list"));
//! let target = launch::Target::start(&spec)?;          // dropped => stopped
//! target.wait_ready("http://127.0.0.1:8080", &launch::builtin_ready_probe(Duration::from_secs(30)))?;
//! target.on_exit(|exit| if !exit.requested { /* stop the load: the run cannot be carried out */ });
//! // ... run the load ...
//! target.stop()?;
//! # Ok(()) }
//! ```
//!
//! Every failure is a [`TargetError`] whose `Display` is a sentence for the user.

mod error;
mod h2c_probe;
pub mod launch;
mod tls_probe;
pub mod watchdog;

pub use error::TargetError;
pub use h2c_probe::speaks_h2c;
pub use tls_probe::{handshake as tls_handshake, ProbeTls};
