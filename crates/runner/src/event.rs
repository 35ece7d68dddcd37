//! What a run tells its observer while it goes: the CLI renders these, a library user may log or ignore them.

use std::path::Path;
use std::time::Duration;

use loadgate_plan::{ExecutionPlan, Phase};
use loadgate_results::{RunResults, ScenarioResult, TimelinePoint};

/// One thing that happened during a run, in the order it happened.
#[derive(Debug)]
#[non_exhaustive]
pub enum Event<'a> {
    /// The run begins: the plan is about to be applied.
    RunStarted { plan: &'a ExecutionPlan },
    /// Something a reader should know that does not stop the run (pinning adjusted, a low file limit, a target
    /// given by URL that cannot be pinned, a report that could not be written).
    Warning(String),
    /// loadgate is starting the target's command.
    TargetStarting { command: String },
    /// The run was recorded in a history store (`--history`); `new` is false when it was there already.
    Recorded { store: String, run_id: String, new: bool },
    /// The target could not be started or never became ready: the run cannot be carried out.
    /// `error` is a sentence: `the target could not be started: ...`, or what a target given by URL did not do.
    TargetFailed { error: String },
    /// The target accepts requests; `waited` is the time from start to ready, for a command loadgate started.
    TargetReady { kind: &'a str, base_url: &'a str, pid: Option<u32>, waited: Option<Duration> },
    /// The target exited while the load ran: the current phase stops, and the run cannot be carried out.
    TargetExited { status: String },
    /// A scenario's requests were sent once and checked before any load (`verify:`); its `message` says what
    /// came back when a check failed (the run then stops, exit 3).
    Verified { verified: &'a loadgate_results::VerifiedScenario },
    /// A phase begins.
    PhaseStarted { phase: &'a Phase },
    /// While a phase's keep-alive connections open, before it measures: about once a second when the opening
    /// lasts that long, and once more (`done`) when every connection has been tried.
    Opening { phase: &'a Phase, connections: u64, opened: u64, failed: u64, elapsed: Duration, done: bool },
    /// One run of a scenario instance is about to start on a side: `round` is the repetition (runs that
    /// repeat or compare), `side` the A/B side (A/B runs). Its phases' events follow.
    InstanceStarting { phase: &'a Phase, round: Option<u32>, side: Option<crate::schedule::Side> },
    /// Once a second while a phase runs: the interval's counts and latencies, with the interval's histograms
    /// (microseconds) and its failed requests and responses by class.
    Tick {
        phase: &'a Phase,
        elapsed: Duration,
        point: &'a TimelinePoint,
        latency: &'a hdrhistogram::Histogram<u64>,
        send_lag: &'a hdrhistogram::Histogram<u64>,
        errors: &'a loadgate_results::ErrorCounts,
        status: &'a loadgate_results::StatusCounts,
        /// In a duet round (both sides in one phase): the side this second is of, and whether it is the
        /// workers' first lane (a terminal shows one lane's progress). `None` for a phase of one side.
        duet: Option<(crate::schedule::Side, bool)>,
    },
    /// One repetition of a phase ended (runs with repetitions or an A/B comparison): `side` is the target (A)
    /// or the candidate (B). Round 0 is a duet instance's solo round (`gating.order: duet`), run alone before its
    /// rounds for the duet penalty.
    RepetitionFinished { phase: &'a Phase, round: u32, side: crate::schedule::Side, result: &'a ScenarioResult },
    /// A budgeted instance's pilot ended (`gating.detect` / `gating.budget`): the plan for its rounds, made
    /// before they run: the round length, the rounds the change needs and what the budget allows.
    GatePlanned { phase: &'a Phase, plan: &'a loadgate_results::PowerPlan },
    /// One step of a capacity search ended (`phase` is the scenario instance searched): its rate, what it
    /// measured and its verdict.
    CapacityStep { phase: &'a Phase, step: &'a loadgate_results::CapacityStep },
    /// A phase ended with a result (its SLOs evaluated); `results` is the run so far, with this phase in it.
    PhaseFinished { phase: &'a Phase, result: &'a ScenarioResult, results: &'a RunResults },
    /// The engine could not run a phase at all; the run stops.
    PhaseFailed { phase: &'a Phase, error: String },
    /// An `abort_on_fail` SLO stopped the run after this phase.
    RunAborted { phase: &'a Phase, reason: String },
    /// A report file could not be written (a full disk); the others are written all the same.
    ReportNotWritten { failure: &'a crate::reports::WriteFailure },
    /// The run ended; the reports in `dir` are final.
    RunFinished { results: &'a RunResults, dir: &'a Path },
}

/// Receives a run's [`Event`]s, on the thread that called the runner. Any `FnMut(&Event)` is one.
pub trait Observer {
    fn event(&mut self, event: &Event<'_>);
}

impl<F: FnMut(&Event<'_>)> Observer for F {
    fn event(&mut self, event: &Event<'_>) {
        self(event)
    }
}

/// An observer that ignores everything.
#[derive(Debug, Default, Clone, Copy)]
pub struct Silent;

impl Observer for Silent {
    fn event(&mut self, _: &Event<'_>) {}
}
