//! A spec's run: one [`Session`] running every phase of the plan once, in order, with the reports rewritten
//! after each phase. The composition that `loadgate run` uses.

use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime};

use loadgate_machine::hardware::{self, AppliedPinning, PinningDecision};
use loadgate_plan::{ExecutionPlan, OnInconclusive, Phase, Restart, RoundOrder, TargetPlan, WorkerPlan};
use loadgate_results::gate::Baseline;
use loadgate_results::{
    DiscardedRound, GatingInfo, Outcome, OutcomeStatus, RunResults, ScenarioResult, SpecInfo, StatisticalStatus,
};

use crate::abort::aborted_by_slo;
use crate::event::{Event, Observer};
use crate::interrupt::Interrupt;
use crate::reports::ReportWriter;
use crate::rounds::{Rounds, Side};
use crate::session::{Session, SessionEnd, SessionOptions};
use crate::target::{BuiltinServer, RunningTarget, TargetOptions};
use crate::RunError;

/// Everything a run needs besides the plan.
#[derive(Debug, Clone)]
pub struct RunRequest {
    /// Reports go to `<out_root>/<plan name>/`.
    pub out_root: PathBuf,
    /// The spec file as the user named it, for the reports (`(command line)` for a spec built from flags).
    pub spec_file: String,
    /// The spec's directory: relative paths in it (a start command's `cwd`) and the git state are read there.
    pub source_dir: Option<PathBuf>,
    /// The spec's validation warnings, kept in the reports.
    pub spec_warnings: Vec<String>,
    /// Earlier results for relative SLOs (`p99 <= baseline * 1.10`).
    pub baseline: Option<RunResults>,
    /// A minijinja template that replaces the built-in Markdown report.
    pub template: Option<String>,
    /// A file the final Markdown report is appended to (GitHub's `GITHUB_STEP_SUMMARY`).
    pub step_summary: Option<PathBuf>,
    /// How a `builtin:` target starts.
    pub builtin: BuiltinServer,
    pub interrupt: Interrupt,
    /// The version written into results.json.
    pub loadgate_version: String,
    /// Values that must not reach a report (the spec's [`loadgate_model::Spec::secrets`]).
    pub secrets: loadgate_model::secrets::Redactor,
    /// This run is one shard of a run on several generators (`--shard I/N`): its start is synchronised and
    /// its results carry a [`loadgate_results::ShardInfo`]. The plan is then the shard's slice.
    pub shard: Option<crate::shards::ShardRun>,
    /// The spec's text and files, embedded in results.json for `loadgate repro` (`None`: not kept).
    pub source: Option<loadgate_results::SpecSource>,
    /// Map the spec's pinned CPUs onto the CPUs this process may use (`run --pin-within-affinity`, for a
    /// container whose CPU ids are not the spec's): see [`decide_pinning`].
    pub pin_within_affinity: bool,
    /// This shard's part of the spec's generator CPUs (`run --shard-cpus`, given by `run --shards N` to each
    /// local shard): the spec's generator CPUs are folded onto it (see [`decide_pinning_on_part`]).
    pub shard_cpus: Option<loadgate_model::units::CpuList>,
    /// Record the run in a history store and judge the plan's `history:` checks against it (see [`crate::memory`]).
    pub history: Option<crate::memory::HistoryRequest>,
}

impl RunRequest {
    /// A request with defaults: reports under `out_root`, the built-in server in this process, no baseline.
    pub fn new(out_root: impl Into<PathBuf>) -> Self {
        RunRequest {
            out_root: out_root.into(),
            spec_file: String::new(),
            source_dir: None,
            spec_warnings: Vec::new(),
            baseline: None,
            template: None,
            step_summary: None,
            builtin: BuiltinServer::InProcess,
            interrupt: Interrupt::new(),
            loadgate_version: env!("CARGO_PKG_VERSION").to_owned(),
            secrets: Default::default(),
            shard: None,
            source: None,
            pin_within_affinity: false,
            shard_cpus: None,
            history: None,
        }
    }
}

/// How a run ended.
#[derive(Debug)]
pub struct RunOutcome {
    /// The reports' directory.
    pub dir: PathBuf,
    /// What was measured and decided (`None` when the spec was skipped on this machine).
    pub results: Option<RunResults>,
    /// `on_mismatch: skip` applied: the spec does not fit this machine and nothing ran.
    pub skipped: Option<String>,
    /// Report files that could not be written (a full disk): the run then could not be carried out.
    pub write_failures: Vec<crate::reports::WriteFailure>,
}

impl RunOutcome {
    /// The run's verdict, with a report that could not be written counted as a run that could not be
    /// carried out.
    pub fn status(&self) -> OutcomeStatus {
        let status = self.results.as_ref().map(|r| r.outcome.status).unwrap_or(OutcomeStatus::Passed);
        if self.write_failures.is_empty() || status == OutcomeStatus::RunFailed {
            status
        } else if status == OutcomeStatus::Incomplete {
            OutcomeStatus::Incomplete
        } else {
            OutcomeStatus::RunFailed
        }
    }
}

/// Runs a compiled plan end to end: pinning, the target, every phase in order, SLOs, reports. Blocks until the
/// run ends; events go to `observer` as they happen.
pub fn run(plan: &ExecutionPlan, request: &RunRequest, observer: &mut dyn Observer) -> Result<RunOutcome, RunError> {
    let origin = Instant::now();
    // A shard keeps its own reports beside its shard result (`shard-2-of-4.json`): `<name>/shard-2-of-4/`.
    let dir = match &request.shard {
        Some(s) => request.out_root.join(&plan.name).join(s.slice.file_name().trim_end_matches(".json")),
        None => request.out_root.join(&plan.name),
    };
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
        observer.event(&Event::Warning(format!(
            "the reports of an earlier run in {} were moved to {}",
            dir.display(),
            previous.display()
        )));
    }
    for w in &pinning.warnings {
        observer.event(&Event::Warning(w.clone()));
    }
    warn_about_file_limit(plan, observer);
    if let Some(baseline) = &request.baseline {
        for w in baseline_warnings(baseline, plan, &results_machine(request)) {
            observer.event(&Event::Warning(w));
        }
    }
    let workers = worker_plans(plan, &pinning);
    let mut results = new_results(plan, request, &pinning, &workers);
    let mut reports = ReportWriter::new(&dir, request.template.clone(), request.secrets.clone());
    let mut failures = Vec::new();

    let target_opts = TargetOptions {
        cpus: pinning.target.as_ref(),
        log_dir: &dir,
        source_dir: request.source_dir.as_deref(),
        builtin: &request.builtin,
    };
    let session_opts =
        SessionOptions { saturation: plan.hardware.saturation, interrupt: request.interrupt.clone(), origin };
    let mut rounds = Rounds::new(plan);
    let sides: Vec<Side> =
        if plan.candidate.is_some() { vec![Side::Target, Side::Candidate] } else { vec![Side::Target] };
    let mut sessions = match start_sessions(plan, &sides, &target_opts, &workers, &session_opts, observer) {
        Ok(s) => s,
        Err(message) => {
            let reason = message;
            results.outcome = Outcome::run_failed(vec![reason.clone()]);
            // Every instance is named as not run, with the reason; the run ended (it was not interrupted).
            results.not_run = not_run(plan, &results, &reason);
            results.finished_at = Some(now_rfc3339());
            settle(&mut results, plan);
            write_reports(&mut reports, &mut results, &mut failures, observer);
            return Ok(finish(results, dir, failures, &reports, request, observer));
        }
    };
    results.target = sessions[0].target().info();
    if rounds.statistical() {
        results.gating = Some(gating_info(plan, sessions.get(1).map(|s| s.target().base_url.as_str())));
    }

    // Every repetition of every instance, per side (0: the target, 1: the candidate), with its round.
    let mut reps: Vec<[Vec<ScenarioResult>; 2]> = plan.phases.iter().map(|_| Default::default()).collect();
    let mut rep_rounds: Vec<Vec<u32>> = plan.phases.iter().map(|_| Vec::new()).collect();
    // The rounds of each instance discarded as invalid measurements and run again.
    let mut discarded: Vec<Vec<DiscardedRound>> = plan.phases.iter().map(|_| Vec::new()).collect();
    let mut run_failed = Vec::new();
    // The target's resource samples of sessions that ended (restarts), before the current one's.
    let mut earlier_samples = Vec::new();
    let mut stop = false;
    // Why the run stopped before its end, for the instances it leaves unrun.
    let mut stop_reason: Option<String> = None;
    let mut round = 1;
    if let Some(shard) = &request.shard {
        match crate::shards::start(shard, &request.interrupt, observer) {
            Ok(info) => results.shard = Some(info),
            Err(message) => {
                run_failed.push(format!("shard {}: {message}", shard.slice));
                stop_reason = Some(format!("shard {} did not start: {message}", shard.slice));
                stop = true;
            }
        }
    }
    while !stop && round <= rounds.last() {
        if round > 1 && plan.gating.restart == Restart::EachRound {
            let ended: Vec<SessionEnd> = sessions.drain(..).map(Session::finish).collect();
            earlier_samples.extend(note_session_ends(&mut results, ended, observer));
            match start_sessions(plan, &sides, &target_opts, &workers, &session_opts, observer) {
                Ok(s) => sessions = s,
                Err(message) => {
                    run_failed.push(format!("the target could not be restarted for round {round}: {message}"));
                    break;
                }
            }
        }
        for phase in rounds.phases(plan, round) {
            for side in rounds.sides(round) {
                let last = sessions.len() - 1;
                let session = &mut sessions[side.index().min(last)];
                if let Some(halt) = session.halted() {
                    stop_reason.get_or_insert_with(|| match halt {
                        crate::session::Halt::Interrupted => "the run was interrupted (Ctrl-C)".to_owned(),
                        crate::session::Halt::TargetDied => "the target exited during the run".to_owned(),
                    });
                    stop = true;
                    break;
                }
                let result = match crate::capacity::run_instance(session, phase, request.baseline.as_ref(), observer) {
                    Ok(r) => r,
                    Err(e) => {
                        observer.event(&Event::PhaseFailed { phase, error: e.to_string() });
                        run_failed.push(format!("{} could not run: {e}", phase.name));
                        stop_reason.get_or_insert_with(|| format!("the run stopped when {} could not run", phase.name));
                        stop = true;
                        break;
                    }
                };
                let aborted = aborted_by_slo(result.aborted.as_deref());
                if rounds.statistical() {
                    observer.event(&Event::RepetitionFinished { phase, round, side, result: &result });
                }
                reps[phase.index][side.index()].push(result);
                if side == Side::Candidate || sides.len() == 1 {
                    rep_rounds[phase.index].push(round);
                }
                if aborted {
                    stop_reason.get_or_insert_with(|| {
                        format!("the run stopped after {} breached an abort_on_fail SLO", phase.name)
                    });
                    stop = true;
                    break;
                }
                if !phase.cooldown.as_std().is_zero() && !request.interrupt.is_interrupted() {
                    std::thread::sleep(phase.cooldown.as_std());
                }
            }
            // A round invalid as a measurement (the generator fell short in it) is discarded with its A/B pair
            // and run again, while `gating.rerun_invalid` allows: one stall of a noisy runner must not decide.
            if !stop && phase.gate && rounds.statistical() {
                if let Some(d) =
                    discard_invalid_round(&mut reps[phase.index], &mut rep_rounds[phase.index], round, &sides, || {
                        rounds.rerun(phase.index)
                    })
                {
                    observer.event(&Event::Warning(format!(
                        "{}: round {round} was invalid as a measurement ({}); it is discarded and run again ({} of {} allowed)",
                        phase.name,
                        d.reasons.join("; "),
                        rounds.discarded(phase.index),
                        rounds.rerun_budget()
                    )));
                    discarded[phase.index].push(d);
                }
            }
            // The instance's result so far: one run as it is, repetitions merged and judged.
            let [a, b] = &reps[phase.index];
            let judged = if rounds.statistical() {
                let (mine, paired) = if sides.len() == 2 { (b, Some(a.as_slice())) } else { (a, None) };
                judge(phase, mine, paired, &rep_rounds[phase.index], plan, request).map(|mut merged| {
                    merged.resources =
                        loadgate_results::PhaseResources::combine(mine.iter().filter_map(|r| r.resources.as_ref()));
                    note_discarded(&mut merged, &discarded[phase.index]);
                    merged
                })
            } else {
                a.last().cloned()
            };
            if let Some(judged) = judged {
                match results.scenarios.iter_mut().find(|s| s.index == phase.index) {
                    Some(slot) => *slot = judged,
                    None => results.scenarios.push(judged),
                }
                results.target.samples = [earlier_samples.clone(), sessions[0].samples().target].concat();
                settle(&mut results, plan);
                let last = rounds.wanted(phase.index) == round;
                if let Some(r) = results.scenarios.iter().find(|s| s.index == phase.index) {
                    if last || stop {
                        observer.event(&Event::PhaseFinished { phase, result: r, results: &results });
                    }
                }
                write_reports(&mut reports, &mut results, &mut failures, observer);
            }
            if stop {
                if let Some(r) = results.scenarios.iter().find(|s| s.index == phase.index) {
                    if aborted_by_slo(r.aborted.as_deref()) {
                        observer.event(&Event::RunAborted {
                            phase,
                            reason: format!("{} breached an abort_on_fail SLO", phase.name),
                        });
                    }
                }
                break;
            }
        }
        // Sequential mode: an instance whose verdict is still inconclusive at a look gets the rounds up to the next.
        if !stop && round >= 1 {
            for s in &results.scenarios {
                let inconclusive = s.gate
                    && s.verdicts
                        .iter()
                        .any(|v| v.statistics.as_ref().is_some_and(|st| st.status == StatisticalStatus::Inconclusive));
                if inconclusive && rounds.wanted(s.index) == round {
                    rounds.extend(s.index);
                }
            }
        }
        round += 1;
    }

    let ended: Vec<SessionEnd> = sessions.drain(..).map(Session::finish).collect();
    earlier_samples.extend(note_session_ends(&mut results, ended, observer));
    results.target.samples = earlier_samples;
    if stop || request.interrupt.is_interrupted() {
        let reason = stop_reason.unwrap_or_else(|| "the run was interrupted (Ctrl-C)".to_owned());
        results.not_run = not_run(plan, &results, &reason);
    }
    let completed_all = (results.scenarios.len() == plan.phases.len() && !stop)
        || results.scenarios.iter().any(|s| aborted_by_slo(s.aborted.as_deref()));
    run_failed.extend(results.scenarios.iter().filter(|s| s.gate).filter_map(loadgate_results::unreachable_over_tls));
    if !run_failed.is_empty() {
        results.outcome = Outcome::run_failed(run_failed.clone());
    }
    if (completed_all || !run_failed.is_empty()) && !request.interrupt.is_interrupted() {
        results.finished_at = Some(now_rfc3339());
    }
    settle(&mut results, plan);
    crate::memory::remember(
        &mut results,
        plan.history.as_ref(),
        request.history.as_ref(),
        request.source_dir.as_deref(),
        observer,
    );
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
    write_reports(&mut reports, &mut results, &mut failures, observer);
    Ok(finish(results, dir, failures, &reports, request, observer))
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

/// If this round's run of an instance was invalid as a measurement on either side and `rerun` grants a
/// replacement, removes the round (both sides) from the instance's repetitions and says why.
fn discard_invalid_round(
    reps: &mut [Vec<ScenarioResult>; 2],
    rounds: &mut Vec<u32>,
    round: u32,
    sides: &[Side],
    rerun: impl FnOnce() -> bool,
) -> Option<DiscardedRound> {
    if rounds.last() != Some(&round) {
        return None;
    }
    let invalid: Vec<(Side, &ScenarioResult)> = sides
        .iter()
        .filter_map(|s| reps[s.index()].last().map(|r| (*s, r)))
        .filter(|(_, r)| !r.validity.valid)
        .collect();
    if invalid.is_empty() || !rerun() {
        return None;
    }
    let ab = sides.len() > 1;
    let d = DiscardedRound {
        round,
        sides: if ab { invalid.iter().map(|(s, _)| s.letter().to_owned()).collect() } else { Vec::new() },
        reasons: invalid
            .iter()
            .flat_map(|(s, r)| {
                r.validity.problems.iter().map(move |p| {
                    if ab {
                        format!("{}: {}", s.letter(), p.message)
                    } else {
                        p.message.clone()
                    }
                })
            })
            .collect(),
    };
    for s in sides {
        reps[s.index()].pop();
    }
    rounds.pop();
    Some(d)
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
fn judge(
    phase: &Phase,
    mine: &[ScenarioResult],
    paired: Option<&[ScenarioResult]>,
    rounds: &[u32],
    plan: &ExecutionPlan,
    request: &RunRequest,
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
    let confidence = if phase.repeat.is_none() && g.sequential() {
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
fn finish(
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

/// The machine this run measures on, for comparing with a baseline's.
fn results_machine(request: &RunRequest) -> loadgate_results::Machine {
    hardware::fingerprint(request.source_dir.as_deref())
}

/// What a reader must know before trusting a comparison with a stored baseline: another plan, or another
/// machine (whose noise and speed differ, so only a limit wider than the two runs' spread means anything).
pub fn baseline_warnings(
    baseline: &RunResults,
    plan: &ExecutionPlan,
    machine: &loadgate_results::Machine,
) -> Vec<String> {
    let mut warnings = Vec::new();
    if baseline.spec.plan_hash != plan.hash {
        warnings.push(format!(
            "the baseline ran plan {} and this run is plan {}: the load differs, so relative SLOs compare different things",
            baseline.spec.plan_hash, plan.hash
        ));
    }
    let b = &baseline.machine;
    if b.hostname != machine.hostname || b.cpu_model != machine.cpu_model || b.logical_cpus != machine.logical_cpus {
        warnings.push(format!(
            "the baseline comes from another machine ({} / {}; this one is {} / {}): its numbers carry that machine's speed and noise, so a relative limit tighter than the spread of both runs cannot be supported (see each check's smallest detectable change); an A/B run in one job (`candidate:`) avoids this",
            b.hostname.as_deref().unwrap_or("?"),
            b.cpu_model.as_deref().unwrap_or("?"),
            machine.hostname.as_deref().unwrap_or("?"),
            machine.cpu_model.as_deref().unwrap_or("?"),
        ));
    }
    if baseline.scenarios.iter().all(|s| s.repetitions.is_empty()) {
        warnings.push(
            "the baseline has no repetitions: relative SLOs compare with one run of it, which cannot show its noise; save baselines from runs with `--repeat`".to_owned(),
        );
    }
    warnings
}

/// A run owns its directory: the files of an earlier run there are moved aside to `<dir>.previous` (replacing
/// an older one), never left beside this run's reports to be mistaken for them. Returns where they went.
pub fn own_output_dir(dir: &std::path::Path) -> Result<Option<PathBuf>, RunError> {
    let fail = |source| RunError::OutputDir { path: dir.to_owned(), source };
    let mut moved = None;
    if std::fs::read_dir(dir).is_ok_and(|mut entries| entries.next().is_some()) {
        let mut previous = dir.as_os_str().to_owned();
        previous.push(".previous");
        let previous = PathBuf::from(previous);
        if previous.is_dir() {
            std::fs::remove_dir_all(&previous).map_err(fail)?;
        } else if previous.exists() {
            std::fs::remove_file(&previous).map_err(fail)?;
        }
        std::fs::rename(dir, &previous).map_err(fail)?;
        moved = Some(previous);
    }
    std::fs::create_dir_all(dir).map_err(fail)?;
    Ok(moved)
}

/// Checks the spec's pinning on this machine: the pinning to apply, or (`on_mismatch: skip`) why the spec is
/// skipped.
///
/// `within_affinity` (`run --pin-within-affinity`) first maps the spec's pinned CPUs onto the CPUs this
/// process may use, the i-th onto the i-th ([`hardware::map_within_affinity`]), and refuses the run (exit 3)
/// when fewer are allowed than the spec pins; results.json's `pinning.cpu_map` records the mapping. The target's
/// CPUs count only for a target loadgate starts (a `base_url` server is never pinned).
pub fn decide_pinning(plan: &ExecutionPlan, within_affinity: bool) -> Result<Result<AppliedPinning, String>, RunError> {
    let topo = hardware::CpuTopology::read().map_err(RunError::Topology)?;
    let hw = &plan.hardware;
    let (generator, target) = (hw.generator_cpus.as_ref(), hw.target_cpus.as_ref());
    let decision = if within_affinity {
        // A server loadgate does not start is never pinned: its CPUs take none of this process's.
        let started = !matches!(plan.target, loadgate_plan::TargetPlan::Url { .. });
        let mut decision =
            hardware::check_pinning_within_affinity(&topo, generator, target.filter(|_| started), hw.on_mismatch);
        if let PinningDecision::Run(p) = &mut decision {
            p.target_requested = target.cloned();
        }
        decision
    } else {
        hardware::check_pinning(&topo, generator, target, hw.on_mismatch)
    };
    match decision {
        PinningDecision::Run(p) => Ok(Ok(p)),
        PinningDecision::Fail { message } => Err(RunError::Pinning(message)),
        PinningDecision::Skip { message } => Ok(Err(message)),
    }
}

/// The pinning of a local shard given `part` of the spec's generator CPUs (`run --shard-cpus`): the spec's
/// generator CPUs folded onto the part round-robin (`hardware::check_pinning_on_part`), the plan unchanged.
pub fn decide_pinning_on_part(
    plan: &ExecutionPlan,
    part: &loadgate_model::units::CpuList,
) -> Result<Result<AppliedPinning, String>, RunError> {
    let topo = hardware::CpuTopology::read().map_err(RunError::Topology)?;
    let hw = &plan.hardware;
    let decision = hardware::check_pinning_on_part(
        &topo,
        hw.generator_cpus.as_ref(),
        hw.target_cpus.as_ref(),
        part,
        hw.on_mismatch,
    );
    match decision {
        PinningDecision::Run(p) => Ok(Ok(p)),
        PinningDecision::Fail { message } => Err(RunError::Pinning(message)),
        PinningDecision::Skip { message } => Ok(Err(message)),
    }
}

/// One worker per planned worker, each on the CPU the pinning gives it.
pub fn worker_plans(plan: &ExecutionPlan, pinning: &AppliedPinning) -> Vec<WorkerPlan> {
    let planned: Vec<Option<u32>> = plan.hardware.workers.iter().map(|w| w.cpu).collect();
    let cpus = pinning.worker_cpus(&planned);
    plan.hardware
        .workers
        .iter()
        .zip(cpus)
        .map(|(w, cpu)| WorkerPlan { index: w.index, cpu, pacing: w.pacing })
        .collect()
}

fn warn_about_file_limit(plan: &ExecutionPlan, observer: &mut dyn Observer) {
    let most = plan.phases.iter().map(|p| p.load.connections.connections).max().unwrap_or(0);
    if let Some(limit) = loadgate_machine::limits::raise_open_file_limit().filter(|l| most.saturating_add(64) > *l) {
        observer.event(&Event::Warning(format!(
            "{} needs up to {most} connections but this process may open only {limit} files; raise the limit \
             (`ulimit -n`) or the phases will report connections that never opened",
            plan.name
        )));
    }
}

fn new_results(
    plan: &ExecutionPlan,
    request: &RunRequest,
    pinning: &AppliedPinning,
    workers: &[WorkerPlan],
) -> RunResults {
    let mut pinning = pinning.to_results(workers.iter().map(|w| w.cpu).collect());
    pinning.warnings.extend(request.spec_warnings.iter().map(|w| format!("spec: {w}")));
    let mut vars = plan.vars.iter().map(|(k, v)| (k.clone(), v.value.clone())).collect();
    request.secrets.redact_vars(&mut vars);
    RunResults::new(
        request.loadgate_version.clone(),
        SpecInfo {
            name: plan.name.clone(),
            description: plan.description.clone(),
            file: request.spec_file.clone(),
            plan_hash: plan.hash.clone(),
            vars,
            seed: plan.seed,
            source: request.source.clone(),
        },
        now_rfc3339(),
        hardware::fingerprint(request.source_dir.as_deref()),
        pinning,
    )
}

/// Now, as `2026-11-23T10:00:00Z`.
pub fn now_rfc3339() -> String {
    crate::shards::rfc3339(SystemTime::now(), false)
}

#[cfg(test)]
mod tests {
    #[test]
    fn dates_are_rfc3339() {
        let d = super::now_rfc3339();
        assert_eq!(d.len(), 20, "{d}");
        assert!(d.ends_with('Z'));
    }
}
