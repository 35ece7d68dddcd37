//! Live metrics while a run goes (`--output`, `--metrics-listen`): an observer in front of the caller's that
//! turns the run's events into [`loadgate_export`]'s series and passes every event on. The run itself does not
//! know it is exported: [`crate::Job::run`] puts this observer in front when the job has outputs.
//!
//! Each scenario instance's run is labelled `spec`, `scenario`, `cell` (a matrix cell's `k=v,...`),
//! `repetition` and `side` (runs that repeat or compare), `shard` (`I/N`) and `run_id`; never a URL or
//! anything per request. A run's ticks are replaced by its result's exact totals when it ends, so the series
//! end equal to results.json. At the end the exporter's final flush is bounded in time; what it could not
//! deliver is told as a warning and written to `export.json` beside results.json.

use std::path::Path;

use loadgate_export::series::{Interval, Labels, Totals};
use loadgate_export::{ExportReport, Exporter};

pub use loadgate_export::ExportConfig;
use loadgate_plan::Phase;
use loadgate_results::ScenarioResult;

use crate::event::{Event, Observer};
use crate::schedule::Side;

/// The observer that exports; events go on to `inner` unchanged.
pub struct Exporting<'o> {
    inner: &'o mut dyn Observer,
    exporter: Option<Exporter>,
    spec: String,
    run_id: String,
    shard: String,
    unit: (Option<u32>, Option<Side>),
    /// The sides whose run of an instance is about to start: two before one phase in a duet round.
    starting: Vec<Side>,
    /// The instance runs in progress: one, or a duet round's two (by side), each with its labels and whether its
    /// totals are still to be settled.
    current: Vec<Running>,
}

/// An instance run in progress.
struct Running {
    side: Option<Side>,
    labels: Labels,
    open: bool,
}

impl std::fmt::Debug for Exporting<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Exporting").field("exporter", &self.exporter).finish_non_exhaustive()
    }
}

impl<'o> Exporting<'o> {
    /// Starts the exporter. `run_id` names the run in every series (a shard's is the run's, shared by its
    /// shards); `shard` is `I/N` or empty.
    pub fn start(
        config: ExportConfig,
        run_id: String,
        shard: String,
        inner: &'o mut dyn Observer,
    ) -> Result<Exporting<'o>, loadgate_export::ExportError> {
        let exporter = Exporter::start(config)?;
        Ok(Exporting {
            inner,
            exporter: Some(exporter),
            spec: String::new(),
            run_id,
            shard,
            unit: (None, None),
            starting: Vec::new(),
            current: Vec::new(),
        })
    }

    /// Where `/metrics` is served, when it is.
    pub fn metrics_addr(&self) -> Option<std::net::SocketAddr> {
        self.exporter.as_ref().and_then(Exporter::metrics_addr)
    }

    fn labels(&self, phase: &Phase, side: Option<Side>) -> Labels {
        let cell = phase.matrix.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",");
        Labels::new([
            ("spec", self.spec.clone()),
            ("scenario", phase.scenario.clone()),
            ("cell", cell),
            ("repetition", self.unit.0.map(|r| r.to_string()).unwrap_or_default()),
            ("side", side.map(|s| s.letter().to_owned()).unwrap_or_default()),
            ("shard", self.shard.clone()),
            ("run_id", self.run_id.clone()),
        ])
    }

    fn settle(&mut self, side: Option<Side>, result: &ScenarioResult) {
        let Some(exporter) = self.exporter.as_ref() else { return };
        let Some(running) = running(&mut self.current, side) else { return };
        if !running.open {
            return;
        }
        let labels = &running.labels;
        let h = &result.histograms;
        let totals = Totals {
            sent: result.requests.sent,
            completed: result.requests.completed,
            errors: &result.errors,
            status: &result.status,
            latency: &h.latency,
            send_lag: &h.send_lag,
        };
        exporter.update(|a| a.settle(labels, &totals));
        exporter.push();
        running.open = false;
    }

    fn see(&mut self, event: &Event<'_>) {
        match event {
            Event::RunStarted { plan } => self.spec = plan.name.clone(),
            Event::InstanceStarting { round, side, .. } => {
                self.unit = (*round, *side);
                self.starting.extend(*side);
            }
            Event::PhaseStarted { phase } => {
                // Two sides starting before one phase: a duet round, one series per side.
                let sides: Vec<Option<Side>> = match std::mem::take(&mut self.starting)[..] {
                    [a, b] => vec![Some(a), Some(b)],
                    _ => vec![self.unit.1],
                };
                self.current = sides
                    .into_iter()
                    .map(|side| Running { side, labels: self.labels(phase, side), open: true })
                    .collect();
                if let Some(e) = &self.exporter {
                    for r in &self.current {
                        e.update(|a| a.begin(&r.labels));
                    }
                    e.push();
                }
            }
            Event::Tick { point, latency, send_lag, errors, status, duet, .. } => {
                let side = duet.map(|(s, _)| s);
                let (Some(e), Some(r)) = (&self.exporter, running(&mut self.current, side)) else { return };
                let interval = Interval {
                    sent: point.sent,
                    completed: point.completed,
                    errors,
                    status,
                    in_flight: point.in_flight.or(point.users_active).unwrap_or(0),
                    connections: point.connections_open,
                    latency,
                    send_lag,
                };
                e.update(|a| a.interval(&r.labels, &interval));
                e.push();
            }
            Event::RepetitionFinished { result, side, .. } => self.settle(Some(*side), result),
            // A capacity search's step: the instance's result is not the step's, so its ticks stay.
            Event::CapacityStep { .. } => {
                if let Some(e) = &self.exporter {
                    for r in &self.current {
                        e.update(|a| a.end(&r.labels));
                    }
                    e.push();
                }
                self.current.iter_mut().for_each(|r| r.open = false);
            }
            Event::PhaseFinished { result, .. } => self.settle(None, result),
            Event::PhaseFailed { .. } | Event::TargetExited { .. } => {
                if let Some(e) = &self.exporter {
                    for r in &self.current {
                        e.update(|a| a.end(&r.labels));
                    }
                }
                self.current.iter_mut().for_each(|r| r.open = false);
            }
            _ => {}
        }
    }

    /// Stops the exporter (the final flush, bounded in time), tells what it could not deliver, and writes
    /// `export.json` in `dir` when given. Called at the run's end; again, it does nothing.
    pub fn close(&mut self, dir: Option<&Path>) -> Option<ExportReport> {
        let report = self.exporter.take()?.finish();
        for problem in report.problems() {
            self.inner.event(&Event::Warning(problem));
        }
        if let Some(dir) = dir {
            if let Err(e) = std::fs::write(dir.join("export.json"), report_json(&report)) {
                self.inner.event(&Event::Warning(format!("cannot write export.json: {e}")));
            }
        }
        Some(report)
    }
}

/// The run in progress of `side` among `current` (`None`, or a phase of one side: its one run).
fn running(current: &mut [Running], side: Option<Side>) -> Option<&mut Running> {
    match side {
        Some(s) if current.len() > 1 => current.iter_mut().find(|r| r.side == Some(s)),
        _ => current.first_mut(),
    }
}

/// What the exporter did, as `export.json` holds it: per output its kind, URL (no credentials, no query) and
/// counts; the scrapes `/metrics` answered.
pub fn report_json(report: &ExportReport) -> String {
    let outputs: Vec<serde_json::Value> = report
        .outputs
        .iter()
        .map(|o| {
            serde_json::json!({
                "kind": o.kind.name(),
                "url": o.url,
                "offered": o.stats.offered,
                "sent": o.stats.sent,
                "dropped": o.stats.dropped,
                "failed": o.stats.failed,
                "retries": o.stats.retries,
                "last_error": o.stats.last_error,
            })
        })
        .collect();
    let value = serde_json::json!({ "outputs": outputs, "scrapes": report.scrapes });
    serde_json::to_string_pretty(&value).unwrap_or_default() + "\n"
}

impl Observer for Exporting<'_> {
    fn event(&mut self, event: &Event<'_>) {
        self.see(event);
        if let Event::RunFinished { dir, .. } = event {
            // The final values go out (and the drops are told) before the run's end is shown.
            self.close(Some(dir));
        }
        self.inner.event(event);
    }
}
