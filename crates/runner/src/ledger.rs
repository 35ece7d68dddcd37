//! The results document of a run: what it measured and decided so far (the results, the failures, the target's
//! samples of sessions that ended), settled and written to its reports after every judgement, fed to the
//! checkpoint, and its end (`Ledger::finish`: the outcome, the history, the shard's own record, the last reports;
//! then [`wrap_up`], which every run and every merge ends with: logs scrubbed, the step summary, the final event).
//! It runs nothing: the executor ([`crate::executor`]) does, and the round-keeping ([`crate::rounds`]) keeps the
//! rounds.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use loadgate_machine::hardware::AppliedPinning;
use loadgate_plan::{ExecutionPlan, OnInconclusive, Restart, WorkerPlan};
use loadgate_results::{
    GatingInfo, Outcome, ResourceSample, RunResults, ScenarioResult, ShardInfo, StatisticalStatus, VerifiedScenario,
};

use crate::abort::aborted_by_slo;
use crate::checkpoint::Checkpointer;
use crate::clock::now_rfc3339;
use crate::event::{Event, Observer};
use crate::executor::Stopping;
use crate::reports::{ReportWriter, WriteFailure};
use crate::request::{RunOutcome, RunRequest};
use crate::schedule::Judgement;
use crate::session::SessionEnd;

/// The results document of a run in progress.
pub(crate) struct Ledger<'a> {
    plan: &'a ExecutionPlan,
    request: &'a RunRequest,
    results: RunResults,
    /// The reports, in the run's directory.
    reports: ReportWriter,
    failures: Vec<WriteFailure>,
    /// Why the run could not be carried out, when it could not.
    run_failed: Vec<String>,
    /// The target's resource samples of sessions that ended (restarts), before the current one's.
    earlier_samples: Vec<ResourceSample>,
    /// The run's checkpoints (`RunRequest::checkpoint`).
    checkpoint: Option<Arc<Checkpointer>>,
}

impl<'a> Ledger<'a> {
    /// The results the run starts from, its reports in `dir`, and its checkpoints.
    pub(crate) fn new(
        plan: &'a ExecutionPlan,
        request: &'a RunRequest,
        dir: &Path,
        pinning: &AppliedPinning,
        workers: &[WorkerPlan],
        origin: Instant,
    ) -> Ledger<'a> {
        let results = crate::prepare::new_results(plan, request, pinning, workers);
        let reports = ReportWriter::new(dir, request.template.clone(), request.secrets.clone());
        let checkpoint = request
            .checkpoint
            .filter(|every| !every.is_zero())
            .map(|every| Arc::new(Checkpointer::new(dir, every, origin, request.secrets.clone())));
        if let Some(c) = &checkpoint {
            c.set_base(&results);
        }
        let (failures, run_failed, earlier_samples) = (Vec::new(), Vec::new(), Vec::new());
        Ledger { plan, request, results, reports, failures, run_failed, earlier_samples, checkpoint }
    }

    /// The checkpoints the sessions write at their phases' ticks.
    pub(crate) fn checkpoint(&self) -> Option<Arc<Checkpointer>> {
        self.checkpoint.clone()
    }

    /// The sessions could not start, or their verification failed: every instance is named as not run, with the
    /// reason; the run ended (it was not interrupted).
    pub(crate) fn not_started(mut self, reason: &str, observer: &mut dyn Observer) -> RunOutcome {
        self.results.outcome = Outcome::run_failed(vec![reason.to_owned()]);
        self.results.not_run = not_run(self.plan, &self.results, reason);
        self.results.finished_at = Some(now_rfc3339());
        settle(&mut self.results, self.plan);
        write_reports(&mut self.reports, &mut self.results, &mut self.failures, observer);
        wrap_up(self.results, self.failures, &self.reports, self.request, observer)
    }

    /// What was verified before the load.
    pub(crate) fn verified(&mut self, verified: Vec<VerifiedScenario>) {
        self.results.verification.extend(verified);
    }

    /// The sessions are up (and verified): the target they load, and the gating of a run that repeats or
    /// compares (`candidate`: the candidate's URL in an A/B run).
    pub(crate) fn started(&mut self, target: loadgate_results::TargetInfo, candidate: Option<&str>, statistical: bool) {
        self.results.target = target;
        if statistical {
            self.results.gating = Some(gating_info(self.plan, candidate));
        }
    }

    /// The shard met the others at its synchronised start.
    pub(crate) fn shard_started(&mut self, info: ShardInfo) {
        self.results.shard = Some(info);
    }

    /// The run cannot be carried out: `failure` says why.
    pub(crate) fn failed(&mut self, failure: String) {
        self.run_failed.push(failure);
    }

    /// A unit stops the run: its failure noted; the reason for the schedule.
    pub(crate) fn stopping(&mut self, stop: Stopping) -> String {
        self.run_failed.extend(stop.failure);
        stop.reason
    }

    /// The sessions ended (a restart): how their targets ended, and the target's samples kept.
    pub(crate) fn sessions_ended(&mut self, ended: Vec<SessionEnd>, observer: &mut dyn Observer) {
        let samples = note_session_ends(&mut self.results, ended, observer);
        self.earlier_samples.extend(samples);
        if let Some(c) = &self.checkpoint {
            c.set_base(&self.results);
        }
    }

    /// The instance's result at judgement `j` (`None`: nothing to judge yet) into the results and the reports,
    /// with the target's samples of the current session; whether it is a gated instance judged inconclusive.
    /// `stopped`: the run stops after it.
    pub(crate) fn judged(
        &mut self,
        j: &Judgement,
        judged: Option<ScenarioResult>,
        samples: Vec<ResourceSample>,
        stopped: bool,
        observer: &mut dyn Observer,
    ) -> bool {
        let phase = &self.plan.phases[j.phase];
        if let Some(judged) = judged {
            let results = &mut self.results;
            match results.scenarios.iter_mut().find(|s| s.index == phase.index) {
                Some(slot) => *slot = judged,
                None => results.scenarios.push(judged),
            }
            results.target.samples = [self.earlier_samples.clone(), samples].concat();
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
        if stopped && current.is_some_and(|r| aborted_by_slo(r.aborted.as_deref())) {
            observer
                .event(&Event::RunAborted { phase, reason: format!("{} breached an abort_on_fail SLO", phase.name) });
        }
        current.is_some_and(|s| {
            s.gate
                && s.judged
                    .verdicts
                    .iter()
                    .any(|v| v.statistics.as_ref().is_some_and(|st| st.status == StatisticalStatus::Inconclusive))
        })
    }

    /// The run's end, with how its sessions ended and why it `stopped` (the schedule's word, `None` when it ran to
    /// its end): the instances left unrun named, the outcome, the history, the shard's own record, the last
    /// reports.
    pub(crate) fn finish(
        mut self,
        ended: Vec<SessionEnd>,
        stopped: Option<&str>,
        observer: &mut dyn Observer,
    ) -> RunOutcome {
        let samples = note_session_ends(&mut self.results, ended, observer);
        self.earlier_samples.extend(samples);
        let (plan, request, results) = (self.plan, self.request, &mut self.results);
        results.target.samples = std::mem::take(&mut self.earlier_samples);
        let interrupted = request.interrupt.is_interrupted();
        if stopped.is_some() || interrupted {
            let reason = stopped.unwrap_or("the run was interrupted (Ctrl-C)");
            results.not_run = not_run(plan, results, reason);
        }
        let completed_all = (results.scenarios.len() == plan.phases.len() && stopped.is_none())
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
            let info = results.shard.get_or_insert_with(|| ShardInfo {
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
        wrap_up(self.results, self.failures, &self.reports, request, observer)
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
        order: candidate.map(|_| g.order.name().to_owned()),
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
pub(crate) fn write_reports(
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

/// The last steps of every run that got as far as its results, and of every merge of shards: the logs scrubbed,
/// the step summary (`request.step_summary`, GitHub's `GITHUB_STEP_SUMMARY`: one section per run), the final
/// event.
pub(crate) fn wrap_up(
    results: RunResults,
    mut failures: Vec<crate::reports::WriteFailure>,
    reports: &ReportWriter,
    request: &RunRequest,
    observer: &mut dyn Observer,
) -> RunOutcome {
    let dir: PathBuf = reports.dir().to_path_buf();
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
