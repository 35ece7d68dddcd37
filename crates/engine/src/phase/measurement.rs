//! The one builder of a [`PhaseMeasurement`] ([`build`]), for the checkpoint of a phase in progress and for the
//! final measurement of a phase that ended ([`assemble`], from the workers' final reports), and the parts of the
//! final one: the opening's figures and the HTTP/2 statistics.

use std::time::{Duration, Instant};

use loadgate_measure::{
    ByteCounts, CheckStats, CheckedResponses, ConnectionOpening, ConnectionStats, ErrorCounts, Histograms, Http2Stats,
    LatencySummary, LoadSummary, OpeningFailures, PhaseMeasurement, RequestBreakdown, RequestCounts, StatusCounts,
    TimelinePoint, TlsStats, Unjudged, Validity, WorkerStats,
};
use loadgate_plan::{Arrival, ConnectRate, Phase, UserStep, WorkerPlan};

use crate::control::StopSignal;
use crate::opening::OpeningCounts;
use crate::schedule::Schedule;
use crate::tls::TlsClient;
use crate::worker::{H2Counters, WorkerFinal};

use super::aggregate::{by_request, checks_result, how_it_ran, sum_workers};
use super::validity::judge;

/// What a phase measured: everything of a [`PhaseMeasurement`] that the plan does not say. The summaries of the
/// histograms and the throughput are made from it by [`build`].
pub(super) struct Measured {
    pub(super) duration: f64,
    pub(super) load: LoadSummary,
    pub(super) requests: RequestCounts,
    pub(super) status: StatusCounts,
    pub(super) errors: ErrorCounts,
    pub(super) connections: ConnectionStats,
    pub(super) bytes: ByteCounts,
    pub(super) histograms: Histograms,
    /// HTTPS: the TLS figures (their handshake time is the summary of `histograms.tls_handshake`).
    pub(super) tls: Option<TlsStats>,
    pub(super) http2: Option<Http2Stats>,
    pub(super) timeline: Vec<TimelinePoint>,
    pub(super) workers: Vec<WorkerStats>,
    pub(super) validity: Validity,
    pub(super) aborted: Option<String>,
    pub(super) by_request: Vec<RequestBreakdown>,
    pub(super) checked: CheckedResponses,
    pub(super) checks: Vec<CheckStats>,
}

/// The phase's measurement: what the plan says of the phase (its index, names, gate and start offset) and what
/// was measured, with the histograms summarized and the throughput over the measured duration.
pub(super) fn build(phase: &Phase, m: Measured) -> PhaseMeasurement {
    let h = &m.histograms;
    PhaseMeasurement {
        index: phase.index,
        name: phase.name.clone(),
        scenario: phase.scenario.clone(),
        matrix: phase.matrix.clone(),
        gate: phase.gate,
        started_at_offset: phase.start_offset.map_or(0.0, |d| d.as_secs_f64()),
        duration: m.duration,
        load: m.load,
        throughput: if m.duration > 0.0 { m.requests.completed as f64 / m.duration } else { 0.0 },
        requests: m.requests,
        status: m.status,
        errors: m.errors,
        connections: m.connections,
        bytes: m.bytes,
        latency: LatencySummary::from_histogram(&h.latency),
        service_time: LatencySummary::from_histogram(&h.service_time),
        send_lag: LatencySummary::from_histogram(&h.send_lag),
        connect_time: LatencySummary::from_histogram(&h.connect_time),
        tls: m.tls.map(|tls| TlsStats { handshake_time: LatencySummary::from_histogram(&h.tls_handshake), ..tls }),
        http2: m.http2,
        histograms: m.histograms,
        timeline: m.timeline,
        workers: m.workers,
        validity: m.validity,
        judged: Unjudged {},
        aborted: m.aborted,
        by_request: m.by_request,
        checked: m.checked,
        checks: m.checks,
        replay: None,
    }
}

/// The measurement of a phase that ended, from its workers' final reports.
#[expect(clippy::too_many_arguments, reason = "the parts of one result, each used once")]
pub(super) fn assemble(
    phase: &Phase,
    workers: &[WorkerPlan],
    stop: &StopSignal,
    schedule: Option<&Schedule>,
    start: Instant,
    finals: &[Box<WorkerFinal>],
    timeline: Vec<TimelinePoint>,
    target_tls: Option<&TlsClient>,
) -> PhaseMeasurement {
    let load = &phase.load;
    let end = finals.iter().map(|f| f.end).max().unwrap_or(start);
    let duration = end.saturating_duration_since(start).as_secs_f64();
    let stop_at = finals.iter().map(|f| f.stop_at).max().unwrap_or(start);
    let aborted = stop.reason().or_else(|| stop.is_stopped().then(|| "stopped".to_owned()));
    let t = sum_workers(phase, workers, start, finals, target_tls);
    let ran = how_it_ran(phase, schedule, &t, stop_at.saturating_duration_since(start), aborted.is_some());
    let http2 = http2_stats(&t.h2, load.connections.streams);
    let validity = judge(&t, &ran, http2.as_ref());
    let (checks, checked_by_entry) = checks_result(phase, finals);
    let mut by_request = by_request(phase, finals, duration);
    let mut checked = CheckedResponses::default();
    for (i, c) in checked_by_entry.iter().enumerate() {
        checked += c;
        // Entries are the breakdown's requests (a mix or a session), or the single request (no breakdown).
        if let Some(b) = by_request.get_mut(i) {
            b.checked = *c;
        }
    }
    // Sessions count users in every load (each session is a user), as user injection does.
    let users = ran.users || !phase.session.is_empty();
    let keep_alive = load.connections.keep_alive && !users;
    build(
        phase,
        Measured {
            duration,
            load: LoadSummary {
                model: ran.model.into(),
                target_rate: ran.target_rate,
                achieved_rate: ran.achieved_rate,
                pipeline: if keep_alive { load.connections.pipeline.max(1) } else { 1 },
                pipeline_reads: finals.iter().any(|f| f.batches_read_whole).then(|| "batch".to_owned()),
                batches_held: (t.batches_held > 0).then_some(t.batches_held),
                batches_forced: (t.batches_held > 0).then_some(t.batches_forced),
                keep_alive,
                injection: injection_steps(&load.arrival).map(UserStep::profile),
                users_planned: injection_steps(&load.arrival).map(|steps| {
                    (steps.iter().map(UserStep::users).sum::<f64>() * super::aggregate::slice_share(phase)).round()
                        as u64
                }),
                users_started: users.then_some(ran.users_started),
                users_finished: users.then_some(ran.users_finished),
                users_peak_active: users.then_some(t.users_peak),
            },
            requests: t.requests,
            status: t.status,
            errors: t.errors,
            connections: t.connections,
            bytes: t.bytes,
            histograms: t.hist,
            tls: target_tls.is_some().then_some(t.tls),
            http2,
            timeline,
            workers: t.workers,
            validity,
            aborted,
            by_request,
            checked,
            checks,
        },
    )
}

/// What the workers' openings did together, over `took` (from the spawn of the workers to the start).
pub(super) fn opening_result(rate: &ConnectRate, c: &OpeningCounts, took: Duration) -> ConnectionOpening {
    let secs = took.as_secs_f64();
    ConnectionOpening {
        connect_rate: rate.to_string(),
        opened: c.opened,
        failed: OpeningFailures {
            refused: c.refused,
            timed_out: c.timed_out,
            address_unavailable: c.address_unavailable,
            other: c.other,
        },
        duration_s: secs,
        rate_per_s: if secs > 0.0 { c.opened as f64 / secs } else { 0.0 },
        slow_connects: c.slow,
        backoffs: c.backoffs,
        first_error: c.first_error.clone(),
    }
}

/// The phase's HTTP/2 statistics, when a connection spoke HTTP/2 (`streams`: the concurrent streams asked for).
pub(super) fn http2_stats(h2: &H2Counters, streams: u32) -> Option<Http2Stats> {
    (h2.connections > 0).then(|| Http2Stats {
        connections: h2.connections,
        streams_asked: u64::from(streams.max(1)),
        streams_granted: h2.streams_granted,
        goaways: h2.goaways,
        rst_streams: h2
            .rst_streams
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(code, n)| (Http2Stats::code_name(code).to_owned(), *n))
            .collect(),
        resent: h2.resent,
    })
}

/// The injection profile of a user load.
fn injection_steps(arrival: &Arrival) -> Option<&[UserStep]> {
    match arrival {
        Arrival::Users { steps } => Some(steps),
        _ => None,
    }
}
