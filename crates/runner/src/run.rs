//! A spec's run: one [`Session`] running every phase of the plan once, in order, with the reports rewritten
//! after each phase. The composition that `loadgate run` uses.

use std::path::PathBuf;
use std::time::{Instant, SystemTime};

use loadgate_machine::hardware::{self, AppliedPinning, PinningDecision};
use loadgate_plan::{ExecutionPlan, WorkerPlan};
use loadgate_results::{Outcome, OutcomeStatus, RunResults, SpecInfo, TargetInfo, RESULTS_SCHEMA_VERSION};

use crate::abort::aborted_by_slo;
use crate::event::{Event, Observer};
use crate::interrupt::Interrupt;
use crate::reports::ReportWriter;
use crate::session::{Session, SessionOptions};
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
    let dir = request.out_root.join(&plan.name);
    let moved = own_output_dir(&dir)?;
    let pinning = match decide_pinning(plan)? {
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
    let target = match RunningTarget::start(&plan.target, &target_opts, observer) {
        Ok(t) => t,
        Err(message) => {
            observer.event(&Event::TargetFailed { error: message.clone() });
            results.outcome = Outcome::run_failed(vec![format!("the target could not be started: {message}")]);
            results.outcome = loadgate_results::outcome(&results);
            write_reports(&mut reports, &mut results, &mut failures, observer);
            return Ok(finish(results, dir, failures, &reports, request, observer));
        }
    };
    results.target = target.info();
    let opts = SessionOptions { saturation: plan.hardware.saturation, interrupt: request.interrupt.clone(), origin };
    let mut session = Session::new(target, workers, opts);

    let mut run_failed = Vec::new();
    for phase in &plan.phases {
        if session.halted().is_some() {
            break;
        }
        match session.run_phase(phase, request.baseline.as_ref(), observer) {
            Ok(result) => {
                let aborted = aborted_by_slo(result.aborted.as_deref());
                results.scenarios.push(result);
                results.target.samples = session.samples().target;
                results.outcome = loadgate_results::outcome(&results);
                if let Some(last) = results.scenarios.last() {
                    observer.event(&Event::PhaseFinished { phase, result: last, results: &results });
                }
                write_reports(&mut reports, &mut results, &mut failures, observer);
                if aborted {
                    observer.event(&Event::RunAborted {
                        phase,
                        reason: format!("{} breached an abort_on_fail SLO", phase.name),
                    });
                    break;
                }
            }
            Err(e) => {
                observer.event(&Event::PhaseFailed { phase, error: e.to_string() });
                run_failed.push(format!("{} could not run: {e}", phase.name));
                break;
            }
        }
        if !phase.cooldown.as_std().is_zero() && !request.interrupt.is_interrupted() {
            std::thread::sleep(phase.cooldown.as_std());
        }
    }

    let end = session.finish();
    results.target.samples = end.samples.target;
    if let Some(exit) = end.target_exit {
        observer.event(&Event::TargetExited { status: exit.status.clone() });
        results.target.exited = Some(exit);
    }
    if let Some(e) = end.stop_error {
        observer.event(&Event::Warning(format!("stopping the target: {e}")));
    }
    let completed_all = results.scenarios.len() == plan.phases.len()
        || results.scenarios.last().is_some_and(|s| aborted_by_slo(s.aborted.as_deref()));
    if !run_failed.is_empty() {
        results.outcome = Outcome::run_failed(run_failed.clone());
    }
    if (completed_all || !run_failed.is_empty()) && !request.interrupt.is_interrupted() {
        results.finished_at = Some(now_rfc3339());
    }
    results.outcome = loadgate_results::outcome(&results);
    write_reports(&mut reports, &mut results, &mut failures, observer);
    Ok(finish(results, dir, failures, &reports, request, observer))
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
    if let Some(path) = &request.step_summary {
        if let Err(e) = reports.append_markdown(&results, path) {
            observer.event(&Event::Warning(format!("the step summary: {e}")));
        }
    }
    observer.event(&Event::RunFinished { results: &results, dir: &dir });
    RunOutcome { dir, results: Some(results), skipped: None, write_failures: failures }
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
pub fn decide_pinning(plan: &ExecutionPlan) -> Result<Result<AppliedPinning, String>, RunError> {
    let topo = hardware::CpuTopology::read().map_err(RunError::Topology)?;
    let hw = &plan.hardware;
    match hardware::check_pinning(&topo, hw.generator_cpus.as_ref(), hw.target_cpus.as_ref(), hw.on_mismatch) {
        PinningDecision::Run(p) => Ok(Ok(p)),
        PinningDecision::Fail { message } => Err(RunError::Pinning(message)),
        PinningDecision::Skip { message } => Ok(Err(message)),
    }
}

/// One worker per planned worker, each on the CPU the pinning gives it.
pub fn worker_plans(plan: &ExecutionPlan, pinning: &AppliedPinning) -> Vec<WorkerPlan> {
    let cpus = hardware::effective_worker_cpus(&plan.hardware.workers, pinning.generator.as_ref());
    plan.hardware.workers.iter().zip(cpus).map(|(w, cpu)| WorkerPlan { index: w.index, cpu }).collect()
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
    RunResults {
        schema_version: RESULTS_SCHEMA_VERSION,
        loadgate_version: request.loadgate_version.clone(),
        spec: SpecInfo {
            name: plan.name.clone(),
            description: plan.description.clone(),
            file: request.spec_file.clone(),
            plan_hash: plan.hash.clone(),
            vars,
            seed: plan.seed,
        },
        started_at: now_rfc3339(),
        finished_at: None,
        machine: hardware::fingerprint(request.source_dir.as_deref()),
        pinning,
        target: TargetInfo::default(),
        scenarios: Vec::new(),
        outcome: Outcome::in_progress(),
        sweeps: Vec::new(),
    }
}

/// Now, as `2026-11-23T10:00:00Z`.
pub fn now_rfc3339() -> String {
    let secs = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let days = secs / 86_400;
    let rem = secs % 86_400;
    let (h, m, s) = (rem / 3600, (rem % 3600) / 60, rem % 60);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let mo = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if mo <= 2 { y + 1 } else { y };
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{m:02}:{s:02}Z")
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
