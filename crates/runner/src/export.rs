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
    /// The labels of the instance run in progress, and whether its totals are still to be settled.
    current: Option<Labels>,
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
            current: None,
            open: false,
        })
    }

    /// Where `/metrics` is served, when it is.
    pub fn metrics_addr(&self) -> Option<std::net::SocketAddr> {
        self.exporter.as_ref().and_then(Exporter::metrics_addr)
    }

    fn labels(&self, phase: &Phase) -> Labels {
        let cell = phase.matrix.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",");
        Labels::new([
            ("spec", self.spec.clone()),
            ("scenario", phase.scenario.clone()),
            ("cell", cell),
            ("repetition", self.unit.0.map(|r| r.to_string()).unwrap_or_default()),
            ("side", self.unit.1.map(|s| s.letter().to_owned()).unwrap_or_default()),
            ("shard", self.shard.clone()),
            ("run_id", self.run_id.clone()),
        ])
    }

    fn settle(&mut self, result: &ScenarioResult) {
        let (Some(exporter), Some(labels)) = (&self.exporter, &self.current) else { return };
        if !self.open {
            return;
        }
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
        self.open = false;
    }

    fn see(&mut self, event: &Event<'_>) {
        match event {
            Event::RunStarted { plan } => self.spec = plan.name.clone(),
            Event::InstanceStarting { round, side, .. } => self.unit = (*round, *side),
            Event::PhaseStarted { phase } => {
                let labels = self.labels(phase);
                if let Some(e) = &self.exporter {
                    e.update(|a| a.begin(&labels));
                    e.push();
                }
                self.current = Some(labels);
                self.open = true;
            }
            Event::Tick { point, latency, send_lag, errors, status, .. } => {
                let (Some(e), Some(labels)) = (&self.exporter, &self.current) else { return };
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
                e.update(|a| a.interval(labels, &interval));
                e.push();
            }
            Event::RepetitionFinished { result, .. } => self.settle(result),
            // A capacity search's step: the instance's result is not the step's, so its ticks stay.
            Event::CapacityStep { .. } => {
                if let (Some(e), Some(labels)) = (&self.exporter, &self.current) {
                    e.update(|a| a.end(labels));
                    e.push();
                }
                self.open = false;
            }
            Event::PhaseFinished { result, .. } => self.settle(result),
            Event::PhaseFailed { .. } | Event::TargetExited { .. } => {
                if let (Some(e), Some(labels)) = (&self.exporter, &self.current) {
                    e.update(|a| a.end(labels));
                }
                self.open = false;
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
