//! loadgate's environment around a run: the server under test and the machine it runs on.
//!
//! | module       | what it does                                                                               |
//! |--------------|--------------------------------------------------------------------------------------------|
//! | [`builtin`]  | the built-in reference server behind `loadgate serve` (plaintext, echo, delay)              |
//! | [`launch`]   | start a target pinned, in its own process group, logs to files; probe; watch; stop          |
//! | [`sample`]   | once-a-second CPU and RSS of the target's process tree, CPU of generator worker threads     |
//! | [`hardware`] | online CPUs and SMT siblings, `on_mismatch` applied to the spec's pinning, the fingerprint  |
//! | [`procfs`]   | the small `/proc` readers the others share                                                  |
//!
//! # Wiring (what the CLI does)
//!
//! `loadgate serve --kind plaintext --listen 127.0.0.1:0 [--delay 20ms] [--status 200] [--body-size N]
//! [--chunked] [--threads N]`:
//!
//! ```no_run
//! # fn main() -> Result<(), loadgate_target::TargetError> {
//! use loadgate_target::builtin::{self, ServeConfig};
//! let args: Vec<String> = std::env::args().skip(1).collect(); // or build it from clap's values
//! let cfg = ServeConfig::from_args(&args)?;                   // a leading `serve` is skipped
//! builtin::serve(&cfg, |addr| {
//!     use std::io::Write;
//!     let mut out = std::io::stdout().lock();
//!     let _ = writeln!(out, "{}", builtin::listening_line(addr)); // exactly one line
//!     let _ = out.flush();
//! })?; // returns after SIGTERM or SIGINT
//! # Ok(()) }
//! ```
//!
//! A run:
//!
//! ```no_run
//! # fn main() -> Result<(), loadgate_target::TargetError> {
//! use std::time::Duration;
//! use loadgate_target::{hardware, launch, sample};
//! # let plan: loadgate_plan::ExecutionPlan = unimplemented_plan();
//! # fn unimplemented_plan() -> loadgate_plan::ExecutionPlan { loop {} }
//! let run_start = std::time::Instant::now();
//! // 1. Pinning: fail / skip / run with warnings.
//! let topo = hardware::CpuTopology::read()?;
//! let hw = &plan.hardware;
//! let pinning = match hardware::check_pinning(&topo, hw.generator_cpus.as_ref(), hw.target_cpus.as_ref(), hw.on_mismatch) {
//!     hardware::PinningDecision::Run(p) => p,
//!     hardware::PinningDecision::Fail { message } => { eprintln!("{message}"); std::process::exit(3) }
//!     hardware::PinningDecision::Skip { message } => { eprintln!("{message}"); std::process::exit(0) }
//! };
//! let worker_cpus = hardware::effective_worker_cpus(&hw.workers, pinning.generator.as_ref());
//! // 2. The target (a command here; `Target::start_builtin` for `builtin:`).
//! let mut spec = launch::LaunchSpec::new(vec!["my-server".into()], "loadgate-out/demo");
//! spec.cpus = pinning.target.clone();
//! let target = launch::Target::start(&spec)?;          // dropped => stopped
//! # let probe = launch::builtin_ready_probe(Duration::from_secs(30));
//! target.wait_ready("http://127.0.0.1:8080", &probe)?;   // NotReady / ExitedBeforeReady quote the logs
//! target.on_exit(|exit| if !exit.requested { /* stop the engine: exit 3 */ });
//! // 3. Sampling.
//! let sampler = sample::Sampler::start(sample::SamplerConfig::for_target(Some(target.pid())))
//!     .map_err(|e| loadgate_target::TargetError::Server(e.to_string()))?;
//! // ... workers call `procfs::current_tid()`, the CLI passes them: sampler.set_worker_tids(tids);
//! // ... run the engine ...
//! let samples = sampler.stop();
//! let crashed = target.exited().filter(|e| !e.requested).map(|e| e.to_target_exit(run_start));
//! target.stop()?;
//! let machine = hardware::fingerprint(Some(std::path::Path::new(".")));
//! let pinning_result = pinning.to_results(worker_cpus);
//! # let _ = (samples, crashed, machine, pinning_result);
//! # Ok(()) }
//! ```
//!
//! Every failure is a [`TargetError`] whose `Display` is a sentence for the user.

pub mod builtin;
mod error;
pub mod hardware;
pub mod launch;
pub mod procfs;
pub mod sample;

pub use error::TargetError;
