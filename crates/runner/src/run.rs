//! A spec's run: the plan's [`Schedule`] executed by a `Ledger` (the runner's private executor) on one session
//! per side, with the reports rewritten after each instance. The composition `loadgate run` uses, for a single
//! run, repetitions, A/B rounds, a shard's slice and capacity searches alike: they differ only in what the
//! schedule answers.

use std::time::Instant;

use loadgate_plan::ExecutionPlan;

use crate::event::{Event, Observer};
use crate::ledger::Ledger;
use crate::prepare::{decide_pinning, decide_pinning_on_part, own_output_dir};
use crate::request::{RunOutcome, RunRequest};
use crate::schedule::{Schedule, Task};
use crate::RunError;

/// Runs a compiled plan end to end: pinning, the target, every phase in order, SLOs, reports. Blocks until the
/// run ends; events go to `observer` as they happen.
pub fn run(plan: &ExecutionPlan, request: &RunRequest, observer: &mut dyn Observer) -> Result<RunOutcome, RunError> {
    let origin = Instant::now();
    let dir = request.dir_of(plan);
    let moved = own_output_dir(&dir)?;
    let decided = match &request.shard_cpus {
        Some(part) => decide_pinning_on_part(plan, part)?,
        None => decide_pinning(plan, request.pin_within_affinity)?,
    };
    let pinning = match decided {
        Ok(p) => p,
        Err(skip) => return Ok(RunOutcome { dir, results: None, skipped: Some(skip), write_failures: Vec::new() }),
    };
    observer.event(&Event::RunStarted { plan });
    if let Some(previous) = moved {
        let (dir, previous) = (dir.display(), previous.display());
        observer.event(&Event::Warning(format!("the reports of an earlier run in {dir} were moved to {previous}")));
    }
    for w in &pinning.warnings {
        observer.event(&Event::Warning(w.clone()));
    }
    crate::prepare::warn_about_file_limit(plan, observer);
    if let Some(baseline) = &request.baseline {
        let machine = crate::prepare::results_machine(request);
        for w in crate::prepare::baseline_warnings(baseline, plan, &machine) {
            observer.event(&Event::Warning(w));
        }
    }
    let mut schedule = Schedule::new(plan);
    let mut ledger = match Ledger::start(plan, request, dir, pinning, origin, &schedule, observer) {
        Ok(ledger) => ledger,
        Err(not_started) => return Ok(*not_started),
    };
    ledger.start_shard(&mut schedule, observer);
    while let Some(task) = schedule.next_task() {
        match task {
            Task::Restart { round } => ledger.restart(round, &mut schedule, observer),
            Task::Run(unit) => ledger.run_unit(unit, &mut schedule, observer),
            Task::Judge(judgement) => ledger.judge(&judgement, &mut schedule, observer),
        }
    }
    Ok(ledger.finish(observer))
}
