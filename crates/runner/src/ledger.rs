//! The executor of a run's [`Schedule`]: what the run has so far (its sessions, every repetition of every
//! instance per side, the rounds discarded, the failures, the results and their reports) and the one step each
//! [`Task`] takes. [`crate::run()`] is the loop that asks the schedule and hands each task here.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use loadgate_machine::hardware::AppliedPinning;
use loadgate_plan::{ExecutionPlan, OnInconclusive, Phase, Restart, RoundOrder, TargetPlan, WorkerPlan};
use loadgate_results::gate::Baseline;
use loadgate_results::{
    DiscardedRound, GatingInfo, Outcome, ResourceSample, RunResults, ScenarioResult, StatisticalStatus,
};

use crate::abort::aborted_by_slo;
use crate::checkpoint::Checkpointer;
use crate::clock::now_rfc3339;
use crate::event::{Event, Observer};
use crate::reports::{ReportWriter, WriteFailure};
use crate::request::{RunOutcome, RunRequest};
use crate::schedule::{Judgement, Ran, Schedule, Side, Unit};
use crate::session::{Halt, Session, SessionEnd, SessionOptions};
use crate::target::{RunningTarget, TargetOptions};

/// A run in progress.
pub(crate) struct Ledger<'a> {
    plan: &'a ExecutionPlan,
    request: &'a RunRequest,
    dir: PathBuf,
    pinning: AppliedPinning,
    workers: Vec<WorkerPlan>,
    session_opts: SessionOptions,
    sides: &'static [Side],
    statistical: bool,
    sessions: Vec<Session>,
    results: RunResults,
    reports: ReportWriter,
    failures: Vec<WriteFailure>,
    /// Every repetition of every instance, per side (0: the target, 1: the candidate).
    reps: Vec<[Vec<ScenarioResult>; 2]>,
    /// The round of each kept repetition of an instance.
    rep_rounds: Vec<Vec<u32>>,
    /// The rounds of each instance discarded as invalid measurements and run again.
    discarded: Vec<Vec<DiscardedRound>>,
    run_failed: Vec<String>,
    /// The target's resource samples of sessions that ended (restarts), before the current one's.
    earlier_samples: Vec<ResourceSample>,
    /// The run stopped before its end (a failure, an abort, a halted session).
    stopped: bool,
    /// Why, for the instances it leaves unrun.
    stop_reason: Option<String>,
    /// The run's checkpoints (`RunRequest::checkpoint`).
    checkpoint: Option<Arc<Checkpointer>>,
    /// Each budgeted instance's plan, once its pilot ended (`gating.detect` / `gating.budget`).
    power_plans: Vec<Option<loadgate_results::PowerPlan>>,
}

impl<'a> Ledger<'a> {
    /// Starts the sessions (the target, and the candidate of an A/B run) with the results the run starts from.
    /// `Err`: they could not start; the run is over and reported, every instance named as not run.
    pub(crate) fn start(
        plan: &'a ExecutionPlan,
        request: &'a RunRequest,
        dir: PathBuf,
        pinning: AppliedPinning,
        origin: Instant,
        schedule: &Schedule,
        observer: &mut dyn Observer,
    ) -> Result<Ledger<'a>, Box<RunOutcome>> {
        let workers = crate::prepare::worker_plans(plan, &pinning);
        let results = crate::prepare::new_results(plan, request, &pinning, &workers);
        let reports = ReportWriter::new(&dir, request.template.clone(), request.secrets.clone());
        let session_opts =
            SessionOptions { saturation: plan.hardware.saturation, interrupt: request.interrupt.clone(), origin };
        let n = plan.phases.len();
        let checkpoint = request
            .checkpoint
            .filter(|every| !every.is_zero())
            .map(|every| Arc::new(Checkpointer::new(&dir, every, origin, request.secrets.clone())));
        if let Some(c) = &checkpoint {
            c.set_base(&results);
        }
        let mut ledger = Ledger {
            plan,
            request,
            dir,
            pinning,
            workers,
            session_opts,
            sides: schedule.all_sides(),
            statistical: schedule.statistical(),
            sessions: Vec::new(),
            results,
            reports,
            failures: Vec::new(),
            reps: (0..n).map(|_| Default::default()).collect(),
            rep_rounds: vec![Vec::new(); n],
            discarded: vec![Vec::new(); n],
            run_failed: Vec::new(),
            earlier_samples: Vec::new(),
            stopped: false,
            stop_reason: None,
            checkpoint,
            power_plans: vec![None; n],
        };
        match ledger.start_sessions(observer) {
            Ok(sessions) => ledger.sessions = sessions,
            Err(reason) => return Err(Box::new(ledger.not_started(&reason, observer))),
        }
        if let Err(reason) = ledger.verify(observer) {
            return Err(Box::new(ledger.not_started(&reason, observer)));
        }
        ledger.results.target = ledger.sessions[0].target().info();
        if ledger.statistical {
            let candidate = ledger.sessions.get(1).map(|s| s.target().base_url.clone());
            ledger.results.gating = Some(gating_info(plan, candidate.as_deref()));
        }
        Ok(ledger)
    }

    /// The sessions could not start: every instance is named as not run, with the reason; the run ended (it was
    /// not interrupted).
    fn not_started(mut self, reason: &str, observer: &mut dyn Observer) -> RunOutcome {
        self.results.outcome = Outcome::run_failed(vec![reason.to_owned()]);
        self.results.not_run = not_run(self.plan, &self.results, reason);
        self.results.finished_at = Some(now_rfc3339());
        settle(&mut self.results, self.plan);
        write_reports(&mut self.reports, &mut self.results, &mut self.failures, observer);
        wrap_up(self.results, self.dir, self.failures, &self.reports, self.request, observer)
    }

    /// Verification before the load (`verify:`, TechEmpower's verify): each phase that verifies sends its
    /// requests once (`verify.requests` times) on one connection of each side, through the engine and its
    /// checks, before the first phase; the same requests verify once. `Err`: what came back, and the run stops.
    fn verify(&mut self, observer: &mut dyn Observer) -> Result<(), String> {
        let plan = self.plan;
        let mut verified = std::collections::HashSet::new();
        for (side, session) in self.sessions.iter_mut().enumerate() {
            for phase in plan.phases.iter().filter(|p| p.checks.verify) {
                if !verified.insert((side, loadgate_plan::verify::probe_key(phase))) {
                    continue;
                }
                let probe = loadgate_plan::verify::probe(phase, plan.verify.requests);
                let name = if side == 0 { phase.scenario.clone() } else { format!("{} (candidate)", phase.scenario) };
                let result =
                    session.verify(&probe).map_err(|e| format!("the verification of `{name}` could not run: {e}"))?;
                let judged = loadgate_results::verify::judge(&name, &loadgate_plan::verify::entries(&probe), &result);
                observer.event(&Event::Verified { verified: &judged });
                let failed = judged.message.clone();
                self.results.verification.push(judged);
                if let Some(why) = failed {
                    return Err(format!("verification failed, no load was sent: {name}: {why}"));
                }
            }
        }
        Ok(())
    }

    fn start_sessions(&self, observer: &mut dyn Observer) -> Result<Vec<Session>, String> {
        let target_opts = TargetOptions {
            cpus: self.pinning.target.as_ref(),
            log_dir: &self.dir,
            source_dir: self.request.source_dir.as_deref(),
            builtin: &self.request.builtin,
        };
        let mut sessions =
            start_sessions(self.plan, self.sides, &target_opts, &self.workers, &self.session_opts, observer)?;
        if let Some(c) = &self.checkpoint {
            c.set_base(&self.results);
            for s in &mut sessions {
                s.set_checkpoint(Arc::clone(c));
            }
        }
        Ok(sessions)
    }

    /// Stops the run: the instance in progress is still judged with what it has.
    fn stop(&mut self, reason: impl FnOnce() -> String, schedule: &mut Schedule) {
        self.stop_reason.get_or_insert_with(reason);
        self.stopped = true;
        schedule.stop();
    }

    /// A shard waits for the common start before its first phase; a shard that cannot start runs nothing.
    pub(crate) fn start_shard(&mut self, schedule: &mut Schedule, observer: &mut dyn Observer) {
        let Some(shard) = &self.request.shard else { return };
        match crate::shards::start(shard, &self.request.interrupt, observer) {
            Ok(info) => self.results.shard = Some(info),
            Err(message) => {
                self.run_failed.push(format!("shard {}: {message}", shard.slice));
                self.stop(|| format!("shard {} did not start: {message}", shard.slice), schedule);
            }
        }
    }

    /// `gating.restart: each_round`: the sessions end and start again; a target that does not come back ends
    /// the run.
    pub(crate) fn restart(&mut self, round: u32, schedule: &mut Schedule, observer: &mut dyn Observer) {
        let ended: Vec<SessionEnd> = self.sessions.drain(..).map(Session::finish).collect();
        let samples = note_session_ends(&mut self.results, ended, observer);
        self.earlier_samples.extend(samples);
        match self.start_sessions(observer) {
            Ok(s) => self.sessions = s,
            Err(message) => {
                self.run_failed.push(format!("the target could not be restarted for round {round}: {message}"));
                schedule.stop();
            }
        }
    }

    /// Runs one instance on one side (a capacity search's instance runs its whole search) and keeps the result.
    pub(crate) fn run_unit(&mut self, unit: Unit, schedule: &mut Schedule, observer: &mut dyn Observer) {
        let plan = self.plan;
        let phase = &*crate::power::lengthened(&plan.phases[unit.phase], schedule.scale(unit.phase));
        let last = self.sessions.len() - 1;
        let session = &mut self.sessions[unit.side.index().min(last)];
        if let Some(halt) = session.halted() {
            let reason = match halt {
                Halt::Interrupted => "the run was interrupted (Ctrl-C)",
                Halt::TargetDied => "the target exited during the run",
            };
            return self.stop(|| reason.to_owned(), schedule);
        }
        let round = self.statistical.then_some(unit.round);
        let side = (self.sides.len() > 1).then_some(unit.side);
        observer.event(&Event::InstanceStarting { phase, round, side });
        let result = match crate::capacity::run_instance(session, phase, self.request.baseline.as_ref(), observer) {
            Ok(r) => r,
            Err(e) => {
                observer.event(&Event::PhaseFailed { phase, error: e.to_string() });
                self.run_failed.push(format!("{} could not run: {e}", phase.name));
                return self.stop(|| format!("the run stopped when {} could not run", phase.name), schedule);
            }
        };
        let aborted = aborted_by_slo(result.aborted.as_deref());
        if self.statistical {
            observer.event(&Event::RepetitionFinished { phase, round: unit.round, side: unit.side, result: &result });
        }
        schedule.ran(unit, if result.validity.valid { Ran::Valid } else { Ran::Invalid });
        self.reps[unit.phase][unit.side.index()].push(result);
        if unit.side == Side::Candidate || self.sides.len() == 1 {
            self.rep_rounds[unit.phase].push(unit.round);
        }
        if aborted {
            return self
                .stop(|| format!("the run stopped after {} breached an abort_on_fail SLO", phase.name), schedule);
        }
        if !phase.cooldown.as_std().is_zero() && !self.request.interrupt.is_interrupted() {
            std::thread::sleep(phase.cooldown.as_std());
        }
    }

    /// The instance's result so far (one run as it is, repetitions merged and judged) into the results and the
    /// reports, after discarding the round when the schedule says so.
    pub(crate) fn judge(&mut self, j: &Judgement, schedule: &mut Schedule, observer: &mut dyn Observer) {
        let plan = self.plan;
        let phase = &plan.phases[j.phase];
        if let Some(sides) = &j.discard {
            let d = self.discard_round(j.phase, j.round, sides);
            observer.event(&Event::Warning(format!(
                "{}: round {} was invalid as a measurement ({}); it is discarded and run again ({} of {} allowed)",
                phase.name,
                j.round,
                d.reasons.join("; "),
                schedule.discarded(j.phase),
                schedule.rerun_budget()
            )));
            self.discarded[j.phase].push(d);
        }
        if schedule.wants_plan(j.phase) {
            self.plan_rounds(j.phase, schedule, observer);
        }
        let look = schedule.look_confidence(j.phase, plan.gating.confidence);
        let out_of_budget = j.last && schedule.out_of_budget(j.phase);
        if let Some(judged) = self.merged(phase, look, out_of_budget) {
            let results = &mut self.results;
            match results.scenarios.iter_mut().find(|s| s.index == phase.index) {
                Some(slot) => *slot = judged,
                None => results.scenarios.push(judged),
            }
            results.target.samples = [self.earlier_samples.clone(), self.sessions[0].samples().target].concat();
            settle(results, self.plan);
            if j.last {
                if let Some(r) = results.scenarios.iter().find(|s| s.index == phase.index) {
                    observer.event(&Event::PhaseFinished { phase, result: r, results });
                }
            }
            write_reports(&mut self.reports, &mut self.results, &mut self.failures, observer);
            if let Some(c) = &self.checkpoint {
                c.set_base(&self.results);
            }
        }
        let current = self.results.scenarios.iter().find(|s| s.index == phase.index);
        let inconclusive = current.is_some_and(|s| {
            s.gate
                && s.verdicts
                    .iter()
                    .any(|v| v.statistics.as_ref().is_some_and(|st| st.status == StatisticalStatus::Inconclusive))
        });
        schedule.judged(j.phase, inconclusive);
        if self.stopped && current.is_some_and(|r| aborted_by_slo(r.aborted.as_deref())) {
            observer
                .event(&Event::RunAborted { phase, reason: format!("{} breached an abort_on_fail SLO", phase.name) });
        }
    }

    /// A budgeted instance's pilot ended: the plan for its rounds from them, told to the observer (up front)
    /// and followed by the schedule. Without a plan (nothing to plan from) the rounds keep their length.
    fn plan_rounds(&mut self, phase: usize, schedule: &mut Schedule, observer: &mut dyn Observer) {
        let [a, b] = &self.reps[phase];
        let (mine, paired) = if self.sides.len() == 2 { (b, Some(a.as_slice())) } else { (a, None) };
        let (spent, kept, cap) = schedule.units(phase).unwrap_or_default();
        let cap = crate::power::measured_cap(&self.plan.phases[phase], [a.as_slice(), b.as_slice()], cap);
        let made = crate::power::make(self.plan, &self.plan.phases[phase], mine, paired, (spent, kept, cap));
        schedule.follow(phase, made.as_ref().map_or(1, |p| p.round_scale), cap);
        if let Some(p) = &made {
            observer.event(&Event::GatePlanned { phase: &self.plan.phases[phase], plan: p });
        }
        self.power_plans[phase] = made;
    }

    /// Removes round `round` (both sides) from the instance's repetitions, saying why it was invalid on `sides`.
    fn discard_round(&mut self, phase: usize, round: u32, sides: &[Side]) -> DiscardedRound {
        let ab = self.sides.len() > 1;
        let reps = &mut self.reps[phase];
        let reasons = sides
            .iter()
            .filter_map(|s| reps[s.index()].last().map(|r| (*s, r)))
            .flat_map(|(s, r)| {
                r.validity.problems.iter().map(move |p| {
                    if ab {
                        format!("{}: {}", s.letter(), p.message)
                    } else {
                        p.message.clone()
                    }
                })
            })
            .collect();
        for s in self.sides {
            reps[s.index()].pop();
        }
        self.rep_rounds[phase].pop();
        DiscardedRound {
            round,
            sides: if ab { sides.iter().map(|s| s.letter().to_owned()).collect() } else { Vec::new() },
            reasons,
        }
    }

    /// One run as it is; repetitions merged and judged (against the other side in an A/B run), at `look` (a
    /// budgeted instance's share of the confidence) when given; a budgeted one with its plan, and for `budget`
    /// when `out_of_budget`.
    fn merged(&self, phase: &Phase, look: Option<f64>, out_of_budget: bool) -> Option<ScenarioResult> {
        let [a, b] = &self.reps[phase.index];
        if !self.statistical {
            return a.last().cloned();
        }
        let (mine, paired) = if self.sides.len() == 2 { (b, Some(a.as_slice())) } else { (a, None) };
        let rounds = &self.rep_rounds[phase.index];
        judged_result(phase, mine, paired, rounds, self.plan, self.request, look).map(|mut merged| {
            merged.resources =
                loadgate_results::PhaseResources::combine(mine.iter().filter_map(|r| r.resources.as_ref()));
            note_discarded(&mut merged, &self.discarded[phase.index]);
            if self.plan.budget_units(phase).is_some() {
                let plan = self.power_plans[phase.index].as_ref();
                crate::power::annotate(&mut merged, plan, self.plan.gating.detect, out_of_budget);
            }
            merged
        })
    }

    /// The run's end: the sessions stopped, the instances left unrun named, the outcome, the history, the shard's
    /// own record, the last reports.
    pub(crate) fn finish(mut self, observer: &mut dyn Observer) -> RunOutcome {
        let ended: Vec<SessionEnd> = self.sessions.drain(..).map(Session::finish).collect();
        let samples = note_session_ends(&mut self.results, ended, observer);
        self.earlier_samples.extend(samples);
        let (plan, request, results) = (self.plan, self.request, &mut self.results);
        results.target.samples = std::mem::take(&mut self.earlier_samples);
        let interrupted = request.interrupt.is_interrupted();
        if self.stopped || interrupted {
            let reason = self.stop_reason.take().unwrap_or_else(|| "the run was interrupted (Ctrl-C)".to_owned());
            results.not_run = not_run(plan, results, &reason);
        }
        let completed_all = (results.scenarios.len() == plan.phases.len() && !self.stopped)
            || results.scenarios.iter().any(|s| aborted_by_slo(s.aborted.as_deref()));
        let unreachable =
            results.scenarios.iter().filter(|s| s.gate).filter_map(loadgate_results::unreachable_over_tls);
        self.run_failed.extend(unreachable);
        if !self.run_failed.is_empty() {
            results.outcome = Outcome::run_failed(self.run_failed.clone());
        }
        if (completed_all || !self.run_failed.is_empty()) && !interrupted {
            results.finished_at = Some(now_rfc3339());
        }
        settle(results, plan);
        let source_dir = request.source_dir.as_deref();
        crate::memory::remember(results, plan.history.as_ref(), request.history.as_ref(), source_dir, observer);
        if let Some(shard) = &request.shard {
            let info = results.shard.get_or_insert_with(|| loadgate_results::ShardInfo {
                index: shard.slice.index,
                count: shard.slice.count,
                run_id: shard.run_id.clone(),
                host: results.machine.hostname.clone().unwrap_or_default(),
                planned_start: None,
                start_skew_ms: None,
                late: false,
                status: None,
                cpus: None,
            });
            info.status = Some(results.outcome.status);
            info.cpus = results.pinning.generator_applied.clone();
        }
        write_reports(&mut self.reports, &mut self.results, &mut self.failures, observer);
        // The reports hold everything the checkpoint did; it stays only when they could not be written.
        if let Some(c) = self.checkpoint.take().filter(|_| self.failures.is_empty()) {
            c.remove();
        }
        wrap_up(self.results, self.dir, self.failures, &self.reports, request, observer)
    }
}

/// The instances of the plan with no result, each with the reason the run stopped before them.
fn not_run(plan: &ExecutionPlan, results: &RunResults, reason: &str) -> Vec<loadgate_results::NotRun> {
    plan.phases
        .iter()
        .filter(|p| !results.scenarios.iter().any(|s| s.index == p.index))
        .map(|p| loadgate_results::NotRun {
            index: p.index,
            name: p.name.clone(),
            scenario: p.scenario.clone(),
            gate: p.gate,
            reason: reason.to_owned(),
        })
        .collect()
}

/// Starts one session per side (the target, and the candidate of an A/B run).
fn start_sessions(
    plan: &ExecutionPlan,
    sides: &[Side],
    target_opts: &TargetOptions<'_>,
    workers: &[WorkerPlan],
    opts: &SessionOptions,
    observer: &mut dyn Observer,
) -> Result<Vec<Session>, String> {
    let mut sessions = Vec::new();
    for side in sides {
        let target_plan = match side {
            Side::Target => &plan.target,
            Side::Candidate => plan.candidate.as_ref().unwrap_or(&plan.target),
        };
        let target = RunningTarget::start(target_plan, target_opts, observer).map_err(|message| {
            let message =
                if sides.len() > 1 { format!("{} ({}): {message}", side.letter(), side_name(*side)) } else { message };
            // A target given by URL is not started: its messages name it (`the target URL cannot be talked to`).
            let message = match target_plan {
                TargetPlan::Url { .. } => message,
                _ => format!("the target could not be started: {message}"),
            };
            observer.event(&Event::TargetFailed { error: message.clone() });
            message
        })?;
        let mut session = Session::new(target, workers.to_vec(), opts.clone());
        if let Some(cpus) = target_opts.cpus {
            session.set_target_cpus(cpus.len());
        }
        sessions.push(session);
    }
    Ok(sessions)
}

fn side_name(side: Side) -> &'static str {
    match side {
        Side::Target => "the target",
        Side::Candidate => "the candidate",
    }
}

/// Records how the sessions' targets ended (a target that died, a failed stop) and returns the target's (side
/// A's) resource samples.
fn note_session_ends(
    results: &mut RunResults,
    ended: Vec<SessionEnd>,
    observer: &mut dyn Observer,
) -> Vec<loadgate_results::ResourceSample> {
    let mut samples = Vec::new();
    for (i, end) in ended.into_iter().enumerate() {
        if i == 0 {
            samples = end.samples.target;
        }
        if let Some(exit) = end.target_exit {
            observer.event(&Event::TargetExited { status: exit.status.clone() });
            results.target.exited.get_or_insert(exit);
        }
        if let Some(e) = end.stop_error {
            observer.event(&Event::Warning(format!("stopping the target: {e}")));
        }
    }
    samples
}

/// Lists an instance's discarded rounds in its merged result, and warns about them in its reports.
fn note_discarded(merged: &mut ScenarioResult, discarded: &[DiscardedRound]) {
    merged.discarded_rounds = discarded.to_vec();
    if !discarded.is_empty() {
        let list =
            discarded
                .iter()
                .map(|d| {
                    if d.sides.is_empty() {
                        d.round.to_string()
                    } else {
                        format!("{} ({})", d.round, d.sides.join(", "))
                    }
                })
                .collect::<Vec<_>>()
                .join(", ");
        merged.validity.warnings.push(loadgate_results::Problem {
            kind: "rounds_rerun".into(),
            message: format!(
                "{} round{} invalid as a measurement, discarded and run again: round {list}",
                discarded.len(),
                if discarded.len() == 1 { " was" } else { "s were" }
            ),
        });
    }
}

/// Merges an instance's repetitions and judges its SLOs over them (against the paired baseline side in an
/// A/B run, or the stored baseline).
fn judged_result(
    phase: &Phase,
    mine: &[ScenarioResult],
    paired: Option<&[ScenarioResult]>,
    rounds: &[u32],
    plan: &ExecutionPlan,
    request: &RunRequest,
    look: Option<f64>,
) -> Option<ScenarioResult> {
    if mine.is_empty() {
        return None;
    }
    let stored = request.baseline.as_ref().and_then(|b| loadgate_results::baseline_for(b, &mine[0]));
    let baseline = match (paired, stored) {
        (Some(a), _) => Baseline::Paired(a),
        (None, Some(b)) => Baseline::Stored(b),
        (None, None) => Baseline::None,
    };
    // Paired rounds: only rounds both sides finished.
    let n = paired.map_or(mine.len(), |a| a.len().min(mine.len()));
    let baseline = match baseline {
        Baseline::Paired(a) => Baseline::Paired(&a[..n]),
        other => other,
    };
    // In sequential mode each look is judged at its share of the confidence, so that the run keeps it over all
    // its looks; an instance with its own `repeat` has one look.
    let g = &plan.gating;
    let confidence = if let Some(c) = look {
        c
    } else if phase.repeat.is_none() && g.sequential() {
        g.look_confidence(g.look_at(u32::try_from(n).unwrap_or(u32::MAX)))
    } else {
        g.confidence
    };
    match loadgate_results::gate::judge(&phase.slos, &mine[..n.max(1).min(mine.len())], rounds, baseline, confidence) {
        Ok(r) => Some(r),
        Err(_) => mine.last().cloned(),
    }
}

fn gating_info(plan: &ExecutionPlan, candidate: Option<&str>) -> GatingInfo {
    let g = &plan.gating;
    GatingInfo {
        repeat: g.repeat,
        max_repeat: g.max_repeat,
        looks: g.looks(),
        confidence: g.confidence,
        on_inconclusive: match g.on_inconclusive {
            OnInconclusive::Inconclusive => "inconclusive",
            OnInconclusive::Fail => "fail",
            OnInconclusive::Pass => "pass",
        }
        .to_owned(),
        restart: match g.restart {
            Restart::Never => "never",
            Restart::EachRound => "each_round",
        }
        .to_owned(),
        rerun_invalid: g.rerun_invalid,
        order: candidate.map(|_| {
            match g.order {
                RoundOrder::Abba => "abba",
                RoundOrder::Shuffle => "shuffle",
            }
            .to_owned()
        }),
        candidate: candidate.map(str::to_owned),
        detect: g.detect,
        budget_seconds: g.budget.map(|b| b.0.as_secs_f64()),
    }
}

/// Brings the derived parts of the results up to date: the sweeps with their knees and sweep SLOs, then the
/// outcome (which the sweep SLOs take part in).
pub(crate) fn settle(results: &mut RunResults, plan: &ExecutionPlan) {
    let objectives: Vec<loadgate_results::SweepObjectives<'_>> = plan
        .sweeps
        .iter()
        .map(|s| loadgate_results::SweepObjectives {
            scenario: &s.scenario,
            over: &s.over,
            slos: &s.slos,
            cells: &s.cells,
            gate: s.gate,
        })
        .collect();
    results.sweeps = loadgate_results::sweeps_judged(results, &objectives);
    results.outcome = loadgate_results::outcome(results);
}

/// Writes every report, telling the observer of each file that could not be written.
fn write_reports(
    reports: &mut ReportWriter,
    results: &mut RunResults,
    failures: &mut Vec<crate::reports::WriteFailure>,
    observer: &mut dyn Observer,
) {
    for f in reports.write_all(results) {
        observer.event(&Event::ReportNotWritten { failure: &f });
        failures.push(f);
    }
}

/// The last steps of every run that got as far as its results: the step summary, the final event.
pub(crate) fn wrap_up(
    results: RunResults,
    dir: PathBuf,
    mut failures: Vec<crate::reports::WriteFailure>,
    reports: &ReportWriter,
    request: &RunRequest,
    observer: &mut dyn Observer,
) -> RunOutcome {
    failures.dedup();
    scrub_logs(&dir, &request.secrets, observer);
    if let Some(path) = &request.step_summary {
        if let Err(e) = reports.append_markdown(&results, path) {
            observer.event(&Event::Warning(format!("the step summary: {e}")));
        }
    }
    observer.event(&Event::RunFinished { results: &results, dir: &dir });
    RunOutcome { dir, results: Some(results), skipped: None, write_failures: failures }
}

/// The started targets' logs (`*.log` in the run's directory, written by the processes themselves) with the
/// spec's secrets replaced, as in every other file of the run: a server that prints its command line or a request
/// would otherwise carry a secret into the uploaded artifact. Line by line, so a log of any size streams through.
fn scrub_logs(dir: &Path, secrets: &loadgate_model::secrets::Redactor, observer: &mut dyn Observer) {
    use std::io::{BufRead, Write};
    if secrets.is_empty() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for path in entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|e| e == "log")) {
        let tmp = path.with_extension("log.scrubbing");
        let scrubbed = (|| -> std::io::Result<()> {
            let mut input = std::io::BufReader::new(std::fs::File::open(&path)?);
            let mut output = std::io::BufWriter::new(std::fs::File::create(&tmp)?);
            let mut line = Vec::new();
            while input.read_until(b'\n', &mut line)? > 0 {
                match std::str::from_utf8(&line) {
                    Ok(text) => output.write_all(secrets.scrub(text).as_bytes())?,
                    Err(_) => output.write_all(secrets.scrub(&String::from_utf8_lossy(&line)).as_bytes())?,
                }
                line.clear();
            }
            output.flush()?;
            std::fs::rename(&tmp, &path)
        })();
        if let Err(e) = scrubbed {
            let _ = std::fs::remove_file(&tmp);
            // A log that cannot be scrubbed is not left behind with a secret in it.
            let _ = std::fs::remove_file(&path);
            observer.event(&Event::Warning(format!(
                "{}: could not replace the secrets in it ({e}); removed",
                path.display()
            )));
        }
    }
}
