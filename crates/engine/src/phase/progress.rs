//! What a running phase shows its caller once a second: the [`Tick`], and in it the phase so far
//! ([`Progress`]), which makes a checkpoint's measurement through the same builder as the final one.

use std::time::Duration;

use loadgate_measure::{
    ByteCounts, ConnectionOpening, ConnectionStats, ErrorCounts, Histograms, LoadSummary, PhaseMeasurement,
    RequestCounts, StatusCounts, Validity,
};
use loadgate_plan::Phase;

use crate::schedule::Schedule;

use super::aggregate::{load_model, slice_share, Aggregator};
use super::measurement::{build, Measured};

/// What the engine reports once per second (aggregated over all workers) while a phase runs.
#[derive(Debug)]
pub struct Tick<'a> {
    pub phase: &'a Phase,
    /// Time since the phase started, at the end of this interval.
    pub elapsed: Duration,
    pub point: &'a loadgate_measure::TimelinePoint,
    /// The merged latency histogram of this interval only (for sliding-window SLO checks).
    pub interval_latency: &'a hdrhistogram::Histogram<u64>,
    /// Cumulative since the phase start.
    pub total_latency: &'a hdrhistogram::Histogram<u64>,
    /// This interval's failed requests by kind (their sum is `point.errors`).
    pub interval_errors: &'a loadgate_measure::ErrorCounts,
    /// This interval's complete responses by status class.
    pub interval_status: &'a loadgate_measure::StatusCounts,
    /// This interval's send lags (open loads; empty otherwise).
    pub interval_send_lag: &'a hdrhistogram::Histogram<u64>,
    /// The phase so far, made a measurement on request (a checkpoint).
    pub progress: Progress<'a>,
}
/// A phase in progress, at one of its ticks: [`Progress::measurement`] makes a result of what it measured so
/// far, for a checkpoint of a run that may not live to its end.
pub struct Progress<'a> {
    pub(super) phase: &'a Phase,
    pub(super) elapsed: Duration,
    pub(super) agg: &'a Aggregator,
    pub(super) opening: Option<&'a ConnectionOpening>,
}

impl std::fmt::Debug for Progress<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Progress").field("phase", &self.phase.name).field("elapsed", &self.elapsed).finish()
    }
}

impl Progress<'_> {
    /// The phase so far as a measurement: the workers' counters as of their latest second, the latency and
    /// service time histograms and the timeline of its full seconds, `aborted` saying it was still running.
    /// It has no per-worker CPU, no per-request breakdown and no validity verdict (nothing is judged before the
    /// phase ends).
    pub fn measurement(&self) -> PhaseMeasurement {
        let phase = self.phase;
        let load = &phase.load;
        let mut requests = RequestCounts::default();
        let mut status = StatusCounts::default();
        let mut errors = ErrorCounts::default();
        let mut connections = ConnectionStats { planned: load.connections.connections, ..Default::default() };
        let mut bytes = ByteCounts::default();
        for c in &self.agg.latest {
            requests += &RequestCounts { sent: c.sent, completed: c.completed, incomplete: 0, unsent: 0 };
            status += &c.status;
            errors += &c.errors;
            connections.opened += c.opened;
            connections.failed += c.connect_failed;
            connections.reconnects += c.reconnects;
            bytes.read += c.bytes_read;
            bytes.written += c.bytes_written;
        }
        let points = self.agg.timeline.points();
        connections.peak_open = points.iter().map(|p| p.connections_open).max().unwrap_or(0);
        connections.opening = self.opening.cloned();
        let secs = self.elapsed.as_secs_f64();
        let (model, users) = load_model(&load.arrival);
        let schedule = Schedule::from_arrival(&load.arrival);
        let target_rate =
            schedule.as_ref().filter(|_| secs > 0.0).map(|s| slice_share(phase) * s.count_at(secs) / secs);
        let achieved_rate = schedule.as_ref().map(|_| if secs > 0.0 { requests.sent as f64 / secs } else { 0.0 });
        // A closed keep-alive load records each latency once, as its service time too.
        let service = if self.agg.total_service.is_empty() && schedule.is_none() {
            self.agg.total.clone()
        } else {
            self.agg.total_service.clone()
        };
        let keep_alive = load.connections.keep_alive && !users;
        build(
            phase,
            Measured {
                duration: secs,
                load: LoadSummary {
                    model: model.into(),
                    target_rate,
                    achieved_rate,
                    pipeline: if keep_alive { load.connections.pipeline.max(1) } else { 1 },
                    keep_alive,
                    ..Default::default()
                },
                requests,
                status,
                errors,
                connections,
                bytes,
                histograms: Histograms { latency: self.agg.total.clone(), service_time: service, ..Default::default() },
                tls: None,
                http2: None,
                timeline: points.to_vec(),
                workers: Vec::new(),
                validity: Validity { valid: true, ..Default::default() },
                aborted: Some(format!("still running, {secs:.0} s into the phase")),
                by_request: Vec::new(),
                checked: Default::default(),
                checks: Vec::new(),
            },
        )
    }
}
