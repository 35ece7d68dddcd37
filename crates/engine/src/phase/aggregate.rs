//! The workers' measurements put together: their snapshots merged second by second (`Aggregator`), their final
//! counters, histograms, checks and per-request breakdowns summed (`Totals`), and how the load ran (`Ran`).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use loadgate_measure::{
    new_histogram, value_at_percentile, ByteCounts, CheckStats, CheckedResponses, ConnectionStats, ErrorCounts,
    Histograms, LatencySummary, RequestBreakdown, RequestCounts, StatusCounts, TimelinePoint, TlsStats, WorkerStats,
};
use loadgate_plan::{Arrival, Phase, SessionStep, StopCondition, WorkerPlan};

use crate::schedule::Schedule;
use crate::timeline::{merge_by_values, Timeline};
use crate::tls::TlsClient;
use crate::worker::tally::CheckTally;
use crate::worker::{Counters, H2Counters, Snapshot, TlsCounters, WorkerFinal};

/// A worker using this fraction of its CPU or more is saturated.
const SATURATED: f64 = 0.9;

/// Merges the workers' snapshots of each second.
pub(super) struct Aggregator {
    /// The next interval each worker will report; `u64::MAX` once it is done.
    pub(super) next: Vec<u64>,
    pub(super) pending: BTreeMap<u64, Snapshot>,
    pub(super) total: Histogram<u64>,
    /// The service times of the full seconds so far (for checkpoints).
    pub(super) total_service: Histogram<u64>,
    /// Each worker's counters as of its latest snapshot (for checkpoints).
    pub(super) latest: Vec<Counters>,
    pub(super) timeline: Timeline,
}

impl Aggregator {
    pub(super) fn new(workers: usize, timeline: Timeline) -> Self {
        Self {
            next: vec![0; workers],
            pending: BTreeMap::new(),
            total: new_histogram(),
            total_service: new_histogram(),
            latest: vec![Counters::default(); workers],
            timeline,
        }
    }

    pub(super) fn add(&mut self, worker: usize, mut snap: Snapshot) {
        if let Some(n) = self.next.get_mut(worker) {
            *n = (*n).max(snap.interval + 1);
        }
        if let Some(c) = self.latest.get_mut(worker) {
            *c = std::mem::take(&mut snap.totals);
        }
        match self.pending.get_mut(&snap.interval) {
            Some(m) => {
                m.sent += snap.sent;
                m.completed += snap.completed;
                m.errors += snap.errors;
                m.non_2xx += snap.non_2xx;
                m.connections_open += snap.connections_open;
                m.in_flight += snap.in_flight;
                m.full |= snap.full;
                if m.latency.add(&snap.latency).is_err() {
                    merge_by_values(&mut m.latency, &snap.latency);
                }
                if m.service_time.add(&snap.service_time).is_err() {
                    merge_by_values(&mut m.service_time, &snap.service_time);
                }
                if m.send_lag.add(&snap.send_lag).is_err() {
                    merge_by_values(&mut m.send_lag, &snap.send_lag);
                }
                m.error_kinds += &snap.error_kinds;
                m.status += &snap.status;
            }
            None => {
                self.pending.insert(snap.interval, snap);
            }
        }
    }

    pub(super) fn done(&mut self, worker: usize) {
        if let Some(n) = self.next.get_mut(worker) {
            *n = u64::MAX;
        }
    }

    /// The oldest interval that is a full second for the phase: every worker has reported it (or is done) and
    /// some worker was still running through it. Seconds only ending workers took part in are the phase's
    /// partial tail, left for `drain_rest`.
    pub(super) fn next_complete(&mut self) -> Option<(u64, Snapshot)> {
        let (&first, snap) = self.pending.first_key_value()?;
        if snap.full && self.next.iter().all(|&n| n > first) {
            self.pending.pop_first()
        } else {
            None
        }
    }

    pub(super) fn drain_rest(&mut self) -> Vec<(u64, Snapshot)> {
        std::mem::take(&mut self.pending).into_iter().collect()
    }
}

/// The fraction of the phase's arrivals this generator sends: 1, or a shard's part (`--shard I/N`).
pub(super) fn slice_share(phase: &Phase) -> f64 {
    if phase.workers.iter().any(|w| w.stripe.is_some()) {
        phase.workers.iter().map(|w| w.share.as_f64()).sum()
    } else {
        1.0
    }
}

/// The point of the seconds from `first` to `t` (seconds from the phase's start), merged in `s`.
pub(super) fn timeline_point(
    first: u64,
    s: &Snapshot,
    schedule: Option<&Schedule>,
    t: f64,
    phase: &Phase,
) -> TimelinePoint {
    let target_rate = schedule.map(|sch| {
        let t0 = first as f64;
        let width = (t - t0).max(1e-9);
        slice_share(phase) * (sch.count_at(t) - sch.count_at(t0)) / width
    });
    let users = matches!(phase.load.arrival, Arrival::Users { .. });
    let (p50, p99, max) = if s.latency.is_empty() {
        (0, 0, 0)
    } else {
        (value_at_percentile(&s.latency, 50.0), value_at_percentile(&s.latency, 99.0), s.latency.max())
    };
    TimelinePoint {
        t,
        sent: s.sent,
        completed: s.completed,
        errors: s.errors,
        non_2xx: s.non_2xx,
        target_rate,
        p50_us: p50,
        p99_us: p99,
        max_us: max,
        connections_open: s.connections_open,
        users_active: users.then_some(s.in_flight),
        in_flight: (!users).then_some(s.in_flight),
        service_p50_us: (!s.service_time.is_empty()).then(|| value_at_percentile(&s.service_time, 50.0)),
    }
}

/// The workers' final measurements summed over the phase (what a measurement is made of).
pub(super) struct Totals {
    pub(super) requests: RequestCounts,
    pub(super) status: StatusCounts,
    pub(super) errors: ErrorCounts,
    pub(super) connections: ConnectionStats,
    pub(super) bytes: ByteCounts,
    pub(super) hist: Histograms,
    pub(super) slots_connected: u64,
    pub(super) slots_expected: u64,
    pub(super) address_unavailable: u64,
    pub(super) first_connect_error: Option<String>,
    pub(super) tls: TlsStats,
    pub(super) users_started: u64,
    pub(super) users_finished: u64,
    pub(super) users_peak: u64,
    pub(super) batches_held: u64,
    pub(super) batches_forced: u64,
    pub(super) h2: H2Counters,
    pub(super) workers: Vec<WorkerStats>,
}

/// How the load ran, from the plan and the totals: its model, the time it ran and the rates.
pub(super) struct Ran {
    pub(super) model: &'static str,
    pub(super) users: bool,
    pub(super) target_rate: Option<f64>,
    pub(super) achieved_rate: Option<f64>,
    /// Users started and finished; without a session, each request is a user.
    pub(super) users_started: u64,
    pub(super) users_finished: u64,
}

/// Sums the workers' final measurements: counters, TLS, HTTP/2 and histograms, and each worker's CPU.
pub(super) fn sum_workers(
    phase: &Phase,
    workers: &[WorkerPlan],
    start: Instant,
    finals: &[Box<WorkerFinal>],
    target_tls: Option<&TlsClient>,
) -> Totals {
    let mut t = Totals {
        requests: RequestCounts::default(),
        status: StatusCounts::default(),
        errors: ErrorCounts::default(),
        connections: ConnectionStats { planned: phase.load.connections.connections, ..Default::default() },
        bytes: ByteCounts::default(),
        hist: Histograms::default(),
        slots_connected: 0,
        slots_expected: 0,
        address_unavailable: 0,
        first_connect_error: None,
        tls: TlsStats { insecure: target_tls.is_some_and(TlsClient::insecure), ..TlsStats::default() },
        users_started: 0,
        users_finished: 0,
        users_peak: 0,
        batches_held: 0,
        batches_forced: 0,
        h2: H2Counters::default(),
        workers: Vec::new(),
    };
    for (i, f) in finals.iter().enumerate() {
        let c = &f.counters;
        t.requests +=
            &RequestCounts { sent: c.sent, completed: c.completed, incomplete: f.incomplete, unsent: f.unsent };
        t.status += &c.status;
        t.errors += &c.errors;
        t.connections.peak_open += f.peak_open;
        t.connections.opened += c.opened;
        t.connections.failed += c.connect_failed;
        t.connections.reconnects += c.reconnects;
        t.bytes.read += c.bytes_read;
        t.bytes.written += c.bytes_written;
        t.slots_connected += f.slots_connected;
        t.slots_expected += f.slots_expected;
        t.address_unavailable += c.address_unavailable;
        t.users_started += c.users_started;
        t.users_finished += c.users_finished;
        t.users_peak += f.peak_active;
        t.batches_held += c.batches_held;
        t.batches_forced += c.batches_forced;
        if t.first_connect_error.is_none() {
            t.first_connect_error.clone_from(&c.first_connect_error);
        }
        t.h2.add(&c.http2);
        add_tls(&mut t.tls, &f.tls);
        add_histograms(&mut t.hist, f);
        t.workers.push(worker_stats(i, workers.get(i).and_then(|w| w.cpu), start, f));
    }
    t
}

/// Adds a worker's TLS counters to the phase's.
pub(super) fn add_tls(tls: &mut TlsStats, t: &TlsCounters) {
    tls.handshakes += t.handshakes;
    tls.resumed += t.resumed;
    for (version, n) in [("TLSv1_3", t.tls13), ("TLSv1_2", t.tls12)] {
        if n > 0 {
            *tls.versions.entry(version.to_owned()).or_default() += n;
        }
    }
    tls.errors += &t.errors;
    if tls.first_error.is_none() {
        tls.first_error.clone_from(&t.first_error);
    }
}

/// Adds a worker's histograms to the phase's.
pub(super) fn add_histograms(hist: &mut Histograms, f: &WorkerFinal) {
    for (into, from) in [
        (&mut hist.latency, &f.latency),
        (&mut hist.service_time, &f.service_time),
        (&mut hist.send_lag, &f.send_lag),
        (&mut hist.connect_time, &f.connect_time),
        (&mut hist.tls_handshake, &f.tls_handshake),
    ] {
        if into.add(from).is_err() {
            merge_by_values(into, from);
        }
    }
}

/// Worker `index`'s CPU use over its wall time since `start`, and whether it was saturated.
pub(super) fn worker_stats(index: usize, cpu: Option<u32>, start: Instant, f: &WorkerFinal) -> WorkerStats {
    let wall = f.end.saturating_duration_since(start).as_secs_f64();
    // Precise pacing's polling is a cost chosen for accuracy, not a sign of a generator out of CPU.
    let used = (f.user_seconds + f.system_seconds - f.spin_seconds.unwrap_or(0.0)).max(0.0);
    let utilization = if wall > 0.0 { used / wall } else { 0.0 };
    WorkerStats {
        index,
        cpu,
        user_seconds: f.user_seconds,
        system_seconds: f.system_seconds,
        utilization,
        saturated: utilization >= SATURATED,
        spin_seconds: f.spin_seconds,
    }
}

/// The load's model, the time it ran (the planned duration unless it ended early: `measured`, up to the
/// workers' stop) and the rates it was to reach and reached.
pub(super) fn how_it_ran(
    phase: &Phase,
    schedule: Option<&Schedule>,
    t: &Totals,
    measured: Duration,
    aborted: bool,
) -> Ran {
    let load = &phase.load;
    let planned = match load.stop {
        StopCondition::Duration { duration } => Some(duration.as_secs_f64()),
        StopCondition::Requests { .. } => None,
    };
    let load_secs = match planned {
        Some(p) if !aborted => p,
        _ => measured.as_secs_f64(),
    };
    let (model, users) = load_model(&load.arrival);
    let target_rate =
        schedule.filter(|_| load_secs > 0.0).map(|s| slice_share(phase) * s.count_at(load_secs) / load_secs);
    let errors = &t.errors;
    let request_errors = errors.read + errors.write + errors.timeout + errors.protocol;
    // With a session a user sends several requests: users count as users.
    let session = !phase.session.is_empty();
    let (users_started, users_finished) = if session {
        (t.users_started, t.users_finished)
    } else {
        (t.requests.sent + errors.connect, t.requests.completed + request_errors + errors.connect)
    };
    let arrivals = if session { users_started } else { t.requests.sent };
    let achieved_rate = schedule.map(|_| if load_secs > 0.0 { arrivals as f64 / load_secs } else { 0.0 });
    Ran { model, users, target_rate, achieved_rate, users_started, users_finished }
}

/// The load model's name, and whether it injects users.
pub(super) fn load_model(arrival: &Arrival) -> (&'static str, bool) {
    match arrival {
        Arrival::Closed => ("closed", false),
        Arrival::Constant { .. } => ("constant", false),
        Arrival::Ramp { .. } => ("ramp", false),
        Arrival::Users { .. } => ("users", true),
        Arrival::Replay(_) => ("replay", false),
    }
}

/// Each check (then each capture, as the check `capture:<name>`) of each entry with the workers' counts summed,
/// and the responses the checks judged: in total and per entry.
pub(super) fn checks_result(phase: &Phase, finals: &[Box<WorkerFinal>]) -> (Vec<CheckStats>, Vec<CheckedResponses>) {
    let entries = loadgate_plan::verify::entries(phase);
    let tallies: Vec<&CheckTally> = finals.iter().filter_map(|f| f.checks.as_ref()).collect();
    let Some((first, rest)) = tallies.split_first() else {
        return (Vec::new(), Vec::new());
    };
    let mut sum = CheckTally::new(&entries.iter().map(|(_, r)| r.checks.len() + r.captures.len()).collect::<Vec<_>>());
    sum += *first;
    for t in rest {
        sum += *t;
    }
    let mut stats = Vec::new();
    for (e, (name, request)) in entries.iter().enumerate() {
        let described =
            request.checks.iter().map(|c| (c.name.clone(), loadgate_model::check::describe(&c.kind))).chain(
                request
                    .captures
                    .iter()
                    .map(|c| (format!("capture:{}", c.name), loadgate_model::check::describe_capture(&c.source))),
            );
        for ((check, expects), count) in described.zip(sum.entry(e)) {
            stats.push(CheckStats {
                request: (*name).to_owned(),
                check,
                expects,
                passed: count.passed,
                failed: count.failed,
                examples: count.examples.clone(),
            });
        }
    }
    (stats, sum.checked)
}

/// Per mix entry (or session request step): the workers' measurements summed, in the mix's (session's) order.
pub(super) fn by_request(phase: &Phase, finals: &[Box<WorkerFinal>], duration: f64) -> Vec<RequestBreakdown> {
    let names: Vec<&str> = if phase.session.is_empty() {
        phase.mix.iter().map(|m| m.name.as_str()).collect()
    } else {
        phase
            .session
            .iter()
            .filter_map(|s| match s {
                SessionStep::Request { name, .. } => Some(name.as_str()),
                SessionStep::Think { .. } => None,
            })
            .collect()
    };
    names
        .into_iter()
        .enumerate()
        .map(|(i, name)| {
            let mut requests = RequestCounts::default();
            let mut status = StatusCounts::default();
            let mut errors = ErrorCounts::default();
            let mut histogram = new_histogram();
            for e in finals.iter().filter_map(|f| f.by_entry.get(i)) {
                requests += &RequestCounts { sent: e.sent, completed: e.completed, ..RequestCounts::default() };
                status += &e.status;
                errors += &e.errors;
                if histogram.add(&e.latency).is_err() {
                    merge_by_values(&mut histogram, &e.latency);
                }
            }
            // Sent requests that neither completed nor failed were still in flight at the end.
            let failed = errors.read + errors.write + errors.timeout + errors.protocol;
            requests.incomplete = requests.sent.saturating_sub(requests.completed + failed);
            let throughput = if duration > 0.0 { requests.completed as f64 / duration } else { 0.0 };
            RequestBreakdown {
                name: name.to_owned(),
                requests,
                status,
                errors,
                throughput,
                latency: LatencySummary::from_histogram(&histogram),
                histogram,
                checked: Default::default(),
            }
        })
        .collect()
}
