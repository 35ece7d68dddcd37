//! The lifecycle of a loadgate run, as a library: no argument parsing, no printing, no process exit.
//!
//! A run request and a compiled plan go in, [`Event`]s go out to an [`Observer`] while the run goes, and a
//! typed [`RunOutcome`] comes back. The runner owns every step between the plan and the reports:
//!
//! | step | where |
//! | --- | --- |
//! | pinning decision (`on_mismatch`), worker CPUs | [`run::decide_pinning`], [`run::worker_plans`] |
//! | target start, readiness, crash detection, stop | [`RunningTarget`], [`Session`] |
//! | the phases in order on the engine, `abort_on_fail`, saturation policy, SLO evaluation | [`Session::run_phase`] |
//! | reports rewritten atomically after every phase, the step summary | [`reports::ReportWriter`] |
//! | interruption (Ctrl-C, SIGTERM, a library caller) | [`Interrupt`] |
//! | capacity searches (`load: capacity`): the steps' order, the time budget, the instance's result | [`capacity`] |
//! | the spec's `history:` checks judged against a history store, the run recorded in it (`--history`) | [`memory`] |
//!
//! # Composing runs
//!
//! A [`Session`] is a target that is up and a generator that is pinned. [`run()`] is the composition
//! `loadgate run` uses: one session, each phase once. Other compositions (repetitions, A/B rounds, shards,
//! capacity-search steps) run phases on sessions as often as they need and merge the results with [`merge`]
//! (histograms added, counts summed, never percentiles averaged):
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let plan: loadgate_plan::ExecutionPlan = unimplemented_plan();
//! # fn unimplemented_plan() -> loadgate_plan::ExecutionPlan { loop {} }
//! use loadgate_runner::{BuiltinServer, Interrupt, RunningTarget, Session, SessionOptions, Silent, TargetOptions};
//! let pinning = loadgate_runner::run::decide_pinning(&plan, false)?.map_err(|skip| skip)?;
//! let dir = std::path::Path::new("loadgate-out/demo");
//! let opts = TargetOptions { cpus: pinning.target.as_ref(), log_dir: dir, source_dir: None, builtin: &BuiltinServer::InProcess };
//! let target = RunningTarget::start(&plan.target, &opts, &mut Silent)?;
//! let workers = loadgate_runner::run::worker_plans(&plan, &pinning);
//! let session_opts = SessionOptions { saturation: plan.hardware.saturation, interrupt: Interrupt::new(), origin: std::time::Instant::now() };
//! let mut session = Session::new(target, workers, session_opts);
//! let (rounds, merged) = loadgate_runner::run_rounds(&mut session, &plan.phases[0], 3, &mut Silent)?;
//! # let _ = (rounds, merged);
//! session.finish();
//! # Ok(()) }
//! ```

pub mod abort;
pub mod capacity;
mod error;
mod event;
pub mod interrupt;
pub mod memory;
pub mod reports;
pub mod rounds;
pub mod run;
mod session;
pub mod shards;
mod target;

pub use error::RunError;
pub use event::{Event, Observer, Silent};
pub use interrupt::Interrupt;
pub use run::{run, RunOutcome, RunRequest};
pub use session::{
    apply_limit_policy, apply_saturation_policy, merge, run_rounds, Halt, Session, SessionEnd, SessionOptions,
};
pub use target::{resolve, BuiltinServer, RunningTarget, TargetOptions};

/// A composition of runs that could not be completed: a phase the engine could not run, or results that do
/// not merge.
#[derive(Debug, thiserror::Error)]
pub enum ComposeError {
    #[error(transparent)]
    Engine(#[from] loadgate_engine::EngineError),
    #[error(transparent)]
    Results(#[from] loadgate_results::ResultsError),
}
