//! Renders a run's events for people: progress while a phase runs, a summary after it, the verdicts at the end.

use loadgate_runner::{Event, Observer, RunOutcome};

use crate::exit::Exit;
use crate::output::Output;
use crate::progress::Progress;

/// What `loadgate run` was asked to show besides the summaries.
#[derive(Debug, Clone, Copy, Default)]
pub struct Views {
    /// `--latency`: wrk's latency distribution (wrk2's recorded-latency spectrum for open loads).
    pub latency: bool,
    /// `-U`: wrk2's uncorrected-latency spectrum.
    pub u_latency: bool,
    /// `--out -`: no report files are kept.
    pub no_files: bool,
}

/// The terminal (or CI log) view of one run.
pub struct Renderer<'a> {
    views: Views,
    out: &'a Output,
    /// The plan printed with `-v` carries the spec's values: secrets are replaced.
    secrets: &'a loadgate_model::secrets::Redactor,
    color: bool,
    verbose: u8,
    progress: Option<Progress>,
    /// An A/B run: repetitions are named by their side.
    ab: bool,
}

impl<'a> Renderer<'a> {
    pub fn new(
        out: &'a Output,
        color: bool,
        verbose: u8,
        secrets: &'a loadgate_model::secrets::Redactor,
        views: Views,
    ) -> Self {
        crate::output::keep_secret(secrets);
        Renderer { views, out, secrets, color, verbose, progress: None, ab: false }
    }

    fn end_progress(&mut self) {
        if let Some(mut p) = self.progress.take() {
            p.finish();
        }
    }

    /// The exit code of a finished run, after saying how it ended when the events did not.
    pub fn outcome(&mut self, outcome: &RunOutcome) -> Exit {
        if let Some(message) = &outcome.skipped {
            self.out.info(&format!("skipped: {message}"));
        }
        Exit::of(outcome.status())
    }
}

impl Observer for Renderer<'_> {
    fn event(&mut self, event: &Event<'_>) {
        let out = self.out;
        match event {
            Event::RunStarted { plan } => {
                self.ab = plan.candidate.is_some();
                out.info(&plan.headline());
                if self.verbose > 0 {
                    out.info(&self.secrets.scrub(&plan.render_text()));
                }
            }
            Event::Warning(w) => out.error(&format!("warning: {w}")),
            // The whole id: the one results.json carries, whose end names the run in the history's tables.
            Event::Recorded { store, run_id, new } => out.info(&format!(
                "{} the history: {store} (run {run_id})",
                if *new { "recorded in" } else { "already in" }
            )),
            Event::TargetStarting { command } => out.info(&format!("starting the target: {command}")),
            Event::TargetFailed { error } => out.error(&format!("error: {error}")),
            Event::TargetReady { kind, base_url, pid, waited } => {
                if let (Some(waited), Some(pid)) = (waited, pid) {
                    out.info(&format!("the target is ready after {:.1}s (pid {pid})", waited.as_secs_f64()));
                }
                out.info(&format!("target {kind} at {base_url}"));
            }
            Event::Verified { verified } if verified.message.is_none() => {
                out.info(&loadgate_report::verified_line(verified));
            }
            Event::Verified { verified } => {
                let why = verified.message.as_deref().unwrap_or_default();
                out.error(&format!("error: verification failed, no load was sent\n  {}: {why}", verified.name));
            }
            Event::TargetExited { status } => out.error(&format!("error: the target exited during the run: {status}")),
            Event::PhaseStarted { phase } => {
                self.end_progress();
                self.progress = Some(Progress::start(phase, self.color, out));
            }
            Event::Opening { connections, opened, failed, elapsed, done, .. } => {
                if let Some(p) = &mut self.progress {
                    p.opening(*connections, *opened, *failed, *elapsed, *done);
                }
            }
            // A duet round's progress line is its first lane's.
            Event::Tick { duet: Some((_, false)), .. } => {}
            Event::Tick { phase, elapsed, point, .. } => {
                if let Some(p) = &mut self.progress {
                    p.tick(phase, *elapsed, point);
                }
            }
            Event::GatePlanned { phase, plan } => {
                self.end_progress();
                out.info(&format!("{} plan: {}", phase.name, plan.sentence));
            }
            Event::CapacityStep { phase, step } => {
                self.end_progress();
                out.info(&format!("{} {}", phase.name, loadgate_report::capacity_step_line(step)));
            }
            Event::RepetitionFinished { phase, round, side, result } => {
                self.end_progress();
                let side = self.ab.then(|| side.letter());
                out.info(&loadgate_report::round_line(&phase.name, *round, side, result));
            }
            Event::PhaseFinished { result, results, .. } => {
                self.end_progress();
                out.info(&loadgate_report::text_summary(result));
                if let Some(line) = loadgate_results::phase_resources(results, result).line() {
                    out.info(&format!("  Resources: {line}"));
                }
                // wrk prints its distribution for closed loops, wrk2 its HdrHistogram spectrum for a rate.
                if self.views.latency && result.latency.count > 0 {
                    out.data(&if result.load.target_rate.is_some() {
                        loadgate_report::wrk2_latency_spectrum(result)
                    } else {
                        loadgate_report::wrk_latency_distribution(result)
                    });
                }
                if self.views.u_latency && result.service_time.count > 0 {
                    out.data(&loadgate_report::wrk2_uncorrected_spectrum(result));
                }
            }
            Event::PhaseFailed { phase, error } => {
                self.end_progress();
                out.error(&format!("error: {} could not run: {error}", phase.name));
            }
            Event::RunAborted { reason, .. } => out.error(&format!("the run stops: {reason}")),
            Event::ReportNotWritten { failure } => out.error(&format!("error: {failure}")),
            Event::RunFinished { results, dir } => {
                self.end_progress();
                out.data(&loadgate_report::summary_table(results, self.color));
                if self.views.no_files {
                    out.info(if out.one_stream {
                        "reports: the framed shard result went to stdout; no files were kept (--out -)"
                    } else {
                        "reports: results.json went to stdout; no files were kept (--out -)"
                    });
                } else {
                    out.info(&format!("reports: {}", dir.display()));
                }
            }
            _ => {}
        }
    }
}
