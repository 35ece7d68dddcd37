//! The lifecycle of a loadgate run, as a library: no argument parsing, no printing, no process exit.
//!
//! A run request and a compiled plan go in, [`Event`]s go out to an [`Observer`] while the run goes, and a
//! typed [`RunOutcome`] comes back. The runner owns every step between the plan and the reports:
//!
//! | step | where |
//! | --- | --- |
//! | pinning decision (`on_mismatch`), worker CPUs | [`prepare::decide_pinning`], [`prepare::worker_plans`] |
//! | target start, readiness, crash detection, stop | [`RunningTarget`], [`Session`] |
//! | the phases in order on the engine, `abort_on_fail`, saturation policy, SLO evaluation | [`Session::run_phase`] |
//! | reports rewritten atomically after every phase, the step summary | [`reports::ReportWriter`] |
//! | interruption (Ctrl-C, SIGTERM, a library caller) | [`Interrupt`] |
//! | the results so far written every interval while the run goes (`results.partial.json`) | [`checkpoint`] |
//! | what the user gave (spec files, flags, a results.json to reproduce, shard results) read and checked | [`source`] |
//! | what the user gave turned into what runs, and into a sharded run's Kubernetes manifests | [`Job`], [`k8s`] |
//! | what runs next: verification, a shard's start, rounds, A/B sides, sequential looks, reruns of invalid rounds, budget plans, the end (pure) | [`schedule::Schedule`] |
//! | what is kept of the rounds: kept, discarded with their pair, judged at a look, power plans (pure) | [`rounds::Rounds`] |
//! | the schedule's tasks executed on the sessions (the executor), the results document and its reports (the ledger) | [`run()`] |
//! | what runs around each side's measured phase (a per-round profile of the target) | [`attach`] |
//! | capacity searches (`load: capacity`): the steps' order, the time budget, the instance's result | [`capacity`] |
//! | one run of several shards: the shard flags' distribution, the synchronised start, the merge, local shards | [`placement`], [`shards`], [`shard_merge`] |
//! | live metrics while the run goes (`--output`, `--metrics-listen`): an observer that feeds [`loadgate_export`] | [`export`] |
//! | the spec's `history:` checks judged against a history store, the run recorded in it (`--history`) | [`memory`] |
//!
//! # Composing runs
//!
//! A [`Session`] is a target that is up and a generator that is pinned. [`run()`] is the composition
//! `loadgate run` uses: one session per side executing the plan's [`schedule::Schedule`], which is the same loop
//! for a single run, repetitions, A/B rounds, a shard's slice and capacity searches. A library caller can run
//! phases on a session as often as it needs and merge the results with [`merge`] (histograms added, counts
//! summed, never percentiles averaged):
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let plan: loadgate_plan::ExecutionPlan = unimplemented_plan();
//! # fn unimplemented_plan() -> loadgate_plan::ExecutionPlan { loop {} }
//! use loadgate_runner::{BuiltinServer, Interrupt, RunningTarget, Session, SessionOptions, Silent, TargetOptions};
//! let pinning = loadgate_runner::prepare::decide_pinning(&plan, false)?.map_err(|skip| skip)?;
//! let dir = std::path::Path::new("loadgate-out/demo");
//! let opts = TargetOptions { cpus: pinning.target.as_ref(), log_dir: dir, source_dir: None, builtin: &BuiltinServer::InProcess };
//! let target = RunningTarget::start(&plan.target, &opts, &mut Silent)?;
//! let workers = loadgate_runner::prepare::worker_plans(&plan, &pinning);
//! let session_opts = SessionOptions { saturation: plan.hardware.saturation, interrupt: Interrupt::new(), origin: std::time::Instant::now() };
//! let mut session = Session::new(target, workers, session_opts);
//! let rounds = (0..3).map(|_| session.run_phase(&plan.phases[0], None, &mut Silent)).collect::<Result<Vec<_>, _>>()?;
//! let merged = loadgate_runner::merge(&rounds)?;
//! # let _ = merged;
//! session.finish();
//! # Ok(()) }
//! ```

pub mod abort;
pub mod attach;
pub mod capacity;
pub mod checkpoint;
pub mod clock;
pub mod compare;
mod error;
mod event;
mod executor;
pub mod export;
pub mod interrupt;
pub mod job;
pub mod k8s;
mod ledger;
pub mod memory;
pub mod options;
pub mod placement;
pub mod power;
pub mod prepare;
pub mod profiles;
pub mod reports;
pub mod request;
pub mod rounds;
pub mod run;
pub mod schedule;
mod scratch;
pub mod serve;
mod session;
pub mod shard_merge;
pub mod shards;
pub mod source;
mod target;
pub mod traffic;

pub use error::{JobError, RunError};
pub use event::{Event, Observer, Silent};
pub use interrupt::Interrupt;
pub use job::Job;
pub use request::{RunOutcome, RunRequest};
pub use run::run;
pub use session::{apply_limit_policy, apply_saturation_policy, merge, Halt, Session, SessionEnd, SessionOptions};
pub use target::{resolve, BuiltinServer, RunningTarget, TargetOptions};
