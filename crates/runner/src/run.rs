//! A spec's run: the loop between the plan's [`Schedule`] (what runs next, and when the run stops), the executor
//! (one session per side: it runs each task on them), the round-keeping ([`Rounds`]: what is kept of the rounds)
//! and the ledger (the results document and its reports, rewritten after each judgement). The composition
//! `loadgate run` uses, for a single run, repetitions, A/B rounds, a shard's slice and capacity searches alike:
//! they differ only in what the schedule answers. Only this loop and the round-keeping talk to the schedule.

use std::time::Instant;

use loadgate_plan::ExecutionPlan;

use crate::event::{Event, Observer};
use crate::executor::{Executor, Setup};
use crate::ledger::Ledger;
use crate::prepare::{decide_pinning, decide_pinning_on_part, own_output_dir};
use crate::request::{RunOutcome, RunRequest};
use crate::rounds::Rounds;
use crate::schedule::{Ran, Schedule, Side, Task, Unit};
use crate::target::TargetOptions;
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
    let workers = crate::prepare::worker_plans(plan, &pinning);
    let mut ledger = Ledger::new(plan, request, &dir, &pinning, &workers, origin);
    let targets = TargetOptions {
        cpus: pinning.target.as_ref(),
        log_dir: &dir,
        source_dir: request.source_dir.as_deref(),
        builtin: &request.builtin,
    };
    let session_opts =
        crate::SessionOptions { saturation: plan.hardware.saturation, interrupt: request.interrupt.clone(), origin };
    let (sides, statistical) = (schedule.all_sides(), schedule.statistical());
    let checkpoint = ledger.checkpoint();
    let duet = plan.gating.order == loadgate_plan::RoundOrder::Duet && sides.len() > 1;
    let duet_cpus = pinning.target.as_ref().filter(|_| duet).and_then(|c| c.halves());
    let setup = Setup { plan, targets, workers, opts: session_opts, checkpoint, sides, statistical, duet_cpus };
    if let Err(reason) = crate::attach::prepare(&request.attachments, plan, observer) {
        return Ok(ledger.not_started(&reason, observer));
    }
    let mut executor = match Executor::start(setup, observer) {
        Ok(executor) => executor,
        Err(reason) => return Ok(ledger.not_started(&reason, observer)),
    };
    let candidate = executor.target(Side::Candidate).filter(|_| sides.len() > 1).map(|t| t.base_url.clone());
    if let Some(target) = executor.target(Side::Target) {
        ledger.started(target.info(), candidate.as_deref(), statistical);
    }
    let mut rounds = Rounds::new(plan, &schedule);
    while let Some(task) = schedule.next_task() {
        match task {
            Task::Verify => {
                let (verified, passed) = executor.verify(observer);
                ledger.verified(verified);
                if let Err(reason) = passed {
                    drop(executor);
                    return Ok(ledger.not_started(&reason, observer));
                }
            }
            Task::Start => start_shard(request, &mut ledger, &mut schedule, observer),
            Task::Restart { round } => {
                let (ended, started) = executor.restart(observer);
                ledger.sessions_ended(ended, observer);
                if let Err(message) = started {
                    let failure = format!("the target could not be restarted for round {round}: {message}");
                    ledger.failed(failure.clone());
                    schedule.stop(failure);
                }
            }
            Task::Run(unit) => {
                let phase = crate::power::lengthened(&plan.phases[unit.phase], schedule.scale(unit.phase));
                let attachments = &request.attachments;
                let work = crate::executor::Unit { phase: &phase, round: unit.round, sides: unit.sides, attachments };
                let ran = executor.run(&work, request.baseline.as_ref(), observer);
                keep(unit, ran, &mut schedule, &mut rounds, &mut ledger);
            }
            Task::Solo(unit) => {
                // Solo rounds measure the duet penalty only: no attachments (profiles are of the rounds).
                let phase = &plan.phases[unit.phase];
                // Its events name round 0: a solo round is none of the instance's rounds.
                let work = crate::executor::Unit { phase, round: 0, sides: unit.sides, attachments: &[] };
                let ran = executor.run(&work, request.baseline.as_ref(), observer);
                if ran.stop.is_some() {
                    // A solo round that stops the run (an abort_on_fail SLO, a target that died) is all the
                    // instance has: it is judged as its round.
                    keep(unit, ran, &mut schedule, &mut rounds, &mut ledger);
                } else {
                    for one in ran.sides {
                        rounds.keep_solo(unit.phase, one.side, one.result);
                    }
                }
            }
            Task::Discard(d) => rounds.discard(plan, &d, observer),
            Task::Plan { phase } => rounds.plan(plan, phase, &mut schedule, observer),
            Task::Judge(j) => {
                let judged = rounds.judge(plan, &j, request.baseline.as_ref(), &schedule);
                let stopped = schedule.stopped().is_some();
                let inconclusive = ledger.judged(&j, judged, executor.samples(), stopped, observer);
                schedule.judged(j.phase, inconclusive);
            }
        }
    }
    Ok(ledger.finish(executor.finish(), schedule.stopped(), observer))
}

/// What a unit gave, told to the schedule and kept with its round; a unit that stops the run stops the schedule.
fn keep(
    unit: Unit,
    ran: crate::executor::UnitRun,
    schedule: &mut Schedule,
    rounds: &mut Rounds,
    ledger: &mut Ledger<'_>,
) {
    for one in ran.sides {
        let valid = if one.result.validity.valid { Ran::Valid } else { Ran::Invalid };
        schedule.ran(unit.phase, one.side, valid);
        rounds.keep(unit.phase, unit.round, one.side, one.result, one.attached);
    }
    if let Some(stop) = ran.stop {
        schedule.stop(ledger.stopping(stop));
    }
}

/// A shard waits for the common start before its first round; a shard that cannot start runs nothing.
fn start_shard(request: &RunRequest, ledger: &mut Ledger<'_>, schedule: &mut Schedule, observer: &mut dyn Observer) {
    let Some(shard) = &request.shard else { return };
    match crate::shards::start(shard, &request.interrupt, observer) {
        Ok(info) => ledger.shard_started(info),
        Err(message) => {
            ledger.failed(format!("shard {}: {message}", shard.slice));
            schedule.stop(format!("shard {} did not start: {message}", shard.slice));
        }
    }
}
