//! Running a phase: configure and start the workers, merge their per-second snapshots into the timeline,
//! and assemble the result with its validity verdict.

use std::collections::BTreeMap;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use loadgate_measure::{
    new_histogram, value_at_percentile, ByteCounts, ConnectionStats, ErrorCounts, Histograms, Http2Stats,
    LatencySummary, LoadSummary, PhaseMeasurement, Problem, RequestBreakdown, RequestCounts, StatusCounts,
    TimelinePoint, TlsStats, Validity, WorkerStats,
};
use loadgate_model::Protocol;
use loadgate_plan::PipelineMode;
use loadgate_plan::{Arrival, Phase, SessionStep, StopCondition, WorkerPlan};

use crate::opening::{LiveOpening, OpeningCounts};
use crate::tls::TlsClient;
use loadgate_measure::{ConnectionOpening, OpeningFailures};
use loadgate_plan::ConnectRate;

use crate::request::{self, Built, RequestBytes, Template};
use crate::schedule::{Schedule, WorkerSchedule};
use crate::worker::{self, H2Counters, Msg, SessionOp, Snapshot, WorkerConfig, WorkerFinal};
use crate::{Control, EngineError, OpeningProgress, StopSignal, Target, Tick};

/// The longest drain after a duration-bound phase's deadline (bounded further by the request timeout).
const MAX_DRAIN: Duration = Duration::from_secs(2);
/// Concurrent users per worker when a user-injection phase gives no connection limit.
const DEFAULT_USERS_IN_FLIGHT: u64 = 1024;
/// A worker using this fraction of its CPU or more is saturated.
const SATURATED: f64 = 0.9;
/// An open load that sent less than this fraction of its target rate is invalid.
const RATE_TOLERANCE: f64 = 0.99;
/// How often the opening's progress is reported while connections open.
const OPENING_REPORT: Duration = Duration::from_secs(1);

pub(crate) fn run(
    phase: &Phase,
    workers: &[WorkerPlan],
    target: &Target,
    stop: &StopSignal,
    on_opening: &mut dyn FnMut(&OpeningProgress),
    on_tick: &mut dyn FnMut(&Tick<'_>) -> Control,
) -> Result<PhaseMeasurement, EngineError> {
    let live = Arc::new(LiveOpening::default());
    let configs = configure(phase, workers, target, stop, &live)?;
    let n = configs.len();
    let connections: u64 = configs.iter().filter(|c| c.opens_before_start()).map(|c| c.slots as u64).sum();
    let (tx, rx) = mpsc::channel::<Msg>();
    let mut handles: Vec<JoinHandle<()>> = Vec::with_capacity(n);
    let mut starts = Vec::with_capacity(n);
    let mut failure = None;
    for cfg in configs {
        let index = cfg.index;
        match worker::spawn(cfg, tx.clone()) {
            Ok((h, s)) => {
                handles.push(h);
                starts.push(s);
            }
            Err(source) => {
                failure = Some(EngineError::Spawn { worker: index, source });
                break;
            }
        }
    }
    drop(tx);
    // Wait until every worker is pinned, has its runtime and has opened its keep-alive connections: the phase
    // measures from then on, on every worker at once.
    // While they open, the progress is reported about once a second (from counters the workers add to).
    let opening_began = Instant::now();
    let mut opening = OpeningCounts::default();
    let mut ready = 0;
    let mut next_report = opening_began + OPENING_REPORT;
    let mut reported = false;
    while failure.is_none() && ready < n {
        match rx.recv_timeout(next_report.saturating_duration_since(Instant::now())) {
            Ok(Msg::Ready(counts)) => {
                opening.add(&counts);
                ready += 1;
            }
            Ok(Msg::Failed(e)) => failure = Some(e),
            Ok(_) => {}
            Err(RecvTimeoutError::Timeout) => {
                let now = Instant::now();
                if connections > 0 {
                    let (opened, failed) = live.read();
                    let elapsed = now.saturating_duration_since(opening_began);
                    on_opening(&OpeningProgress { connections, opened, failed, elapsed, done: false });
                    reported = true;
                }
                next_report = (next_report + OPENING_REPORT).max(now + OPENING_REPORT / 2);
            }
            Err(RecvTimeoutError::Disconnected) => failure = Some(EngineError::WorkerLost { worker: ready }),
        }
    }
    if let Some(e) = failure {
        drop(starts);
        for h in handles {
            let _ = h.join();
        }
        return Err(e);
    }

    let start = Instant::now();
    let opening = (opening.slots > 0).then(|| {
        opening_result(&phase.load.connections.connect_rate, &opening, start.saturating_duration_since(opening_began))
    });
    for s in &starts {
        let _ = s.send(start);
    }
    drop(starts);
    if reported {
        // Every worker is ready: the counters are final.
        let (opened, failed) = live.read();
        let elapsed = start.saturating_duration_since(opening_began);
        on_opening(&OpeningProgress { connections, opened, failed, elapsed, done: true });
    }

    let schedule = Schedule::from_arrival(&phase.load.arrival);
    let mut agg = Aggregator::new(n);
    let mut finals: Vec<Option<Box<WorkerFinal>>> = (0..n).map(|_| None).collect();
    let mut lost = None;
    let mut suspect = None;
    while finals.iter().any(Option::is_none) {
        match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(Msg::Interval(w, snap)) => agg.add(w, *snap),
            Ok(Msg::Done(w, fin)) => {
                agg.done(w);
                if let Some(slot) = finals.get_mut(w) {
                    *slot = Some(fin);
                }
            }
            Ok(_) => {}
            Err(RecvTimeoutError::Timeout) => {
                // A worker thread that ended without reporting panicked. It sends its last message before it
                // ends, so a wait that timed out just before that message can find the thread ended with the
                // message still in the channel: it is lost only when the next wait finds nothing either.
                let ended = (0..n).find(|&w| finals[w].is_none() && handles[w].is_finished());
                if ended.is_some() && ended == suspect {
                    stop.stop("a worker stopped unexpectedly");
                    lost = ended;
                    break;
                }
                suspect = ended;
            }
            Err(RecvTimeoutError::Disconnected) => {
                lost = (0..n).find(|&w| finals[w].is_none());
                break;
            }
        }
        // Ticks for every complete full second.
        while let Some((index, merged)) = agg.next_complete() {
            let point = timeline_point(index, &merged, schedule.as_ref(), index as f64 + 1.0, phase);
            agg.total.add(&merged.latency).unwrap_or_else(|_| merge_by_values(&mut agg.total, &merged.latency));
            let tick = Tick {
                phase,
                elapsed: Duration::from_secs(index + 1),
                point: &point,
                interval_latency: &merged.latency,
                total_latency: &agg.total,
            };
            if let Control::Abort(reason) = on_tick(&tick) {
                stop.stop(reason);
            }
            agg.timeline.push(point);
        }
    }
    for h in handles {
        let _ = h.join();
    }
    if let Some(worker) = lost {
        return Err(EngineError::WorkerLost { worker });
    }
    let finals: Vec<Box<WorkerFinal>> = finals.into_iter().flatten().collect();
    let end = finals.iter().map(|f| f.end).max().unwrap_or(start);
    let elapsed = end.saturating_duration_since(start).as_secs_f64();
    // The last, partial second (workers that ended early reported theirs already).
    for (index, merged) in agg.drain_rest() {
        let t = (index as f64 + 1.0).min(elapsed.max(index as f64));
        agg.timeline.push(timeline_point(index, &merged, schedule.as_ref(), t, phase));
    }
    let mut result =
        assemble(phase, workers, stop, schedule.as_ref(), start, &finals, agg.timeline, target.tls.as_ref());
    if let Some(o) = opening {
        opening_warnings(&mut result.validity, &o, phase.load.connections.connections);
        result.connections.opening = Some(o);
    }
    Ok(result)
}

fn configure(
    phase: &Phase,
    workers: &[WorkerPlan],
    target: &Target,
    stop: &StopSignal,
    live: &Arc<LiveOpening>,
) -> Result<Vec<WorkerConfig>, EngineError> {
    if workers.len() != phase.workers.len() {
        return Err(EngineError::WorkerMismatch { planned: phase.workers.len(), given: workers.len() });
    }
    let load = &phase.load;
    let users = matches!(load.arrival, Arrival::Users { .. });
    let keep_alive = load.connections.keep_alive && !users;
    let pipeline = if keep_alive { usize::try_from(load.connections.pipeline.max(1)).unwrap_or(1) } else { 1 };
    let invalid = |e: request::InvalidRequest| EngineError::InvalidRequest(e.0);
    let session = !phase.session.is_empty();
    if session && !users {
        return Err(EngineError::InvalidPlan("a session needs user injection (`load: users`)".into()));
    }
    // A session's request steps are built one at a time, like a mix's entries (in step order), and keep the
    // connection open: the user closes it after its last step.
    let steps: Vec<(&str, &loadgate_plan::RequestPlan)> = phase
        .session
        .iter()
        .filter_map(|s| match s {
            SessionStep::Request { name, request } => Some((name.as_str(), request)),
            SessionStep::Think { .. } => None,
        })
        .collect();
    if session && steps.is_empty() {
        return Err(EngineError::InvalidPlan("the session has no request step".into()));
    }
    let mut entry = 0u32;
    let ops: Vec<SessionOp> = phase
        .session
        .iter()
        .map(|s| match s {
            SessionStep::Request { .. } => {
                entry += 1;
                SessionOp::Request(entry - 1)
            }
            SessionStep::Think { duration } => SessionOp::Think(duration.as_std()),
        })
        .collect();
    // One static request is serialized once and repeated; a mix or generated values are built per request.
    let (bytes, templates) = if session {
        let templates = steps
            .iter()
            .map(|(_, r)| Template::new(r, &target.host, true).map(Arc::new))
            .collect::<Result<Vec<_>, _>>()
            .map_err(invalid)?;
        (None, templates)
    } else if phase.mix.is_empty() && phase.request.dynamic.is_none() {
        let one = request::serialize(&phase.request, &target.host, keep_alive).map_err(invalid)?;
        let head = phase.request.method.trim().eq_ignore_ascii_case("HEAD");
        (Some(Arc::new(RequestBytes::new(one, pipeline, head))), Vec::new())
    } else {
        let requests: Vec<&loadgate_plan::RequestPlan> =
            if phase.mix.is_empty() { vec![&phase.request] } else { phase.mix.iter().map(|m| &m.request).collect() };
        let templates = requests
            .into_iter()
            .map(|r| Template::new(r, &target.host, keep_alive).map(Arc::new))
            .collect::<Result<Vec<_>, _>>()
            .map_err(invalid)?;
        (None, templates)
    };
    let weights: Vec<u32> = if session { vec![1; steps.len()] } else { phase.mix.iter().map(|m| m.weight).collect() };
    let schedule = Schedule::from_arrival(&load.arrival);
    let duration = match load.stop {
        StopCondition::Duration { duration } => Some(duration.as_std()),
        StopCondition::Requests { .. } => None,
    };
    let timeout = phase.timeout.as_std();
    let timeout = if timeout.is_zero() { Duration::from_secs(3600) } else { timeout };
    let mut drain = timeout.min(MAX_DRAIN);
    if session {
        // A user injected just before the deadline still runs its whole session: each request step gets the
        // drain a single request would, plus the think times.
        let think: Duration = ops.iter().map(|o| if let SessionOp::Think(d) = o { *d } else { Duration::ZERO }).sum();
        drain = drain.saturating_mul(u32::try_from(steps.len()).unwrap_or(u32::MAX)).saturating_add(think);
    }
    let by_count = matches!(load.stop, StopCondition::Requests { .. });

    let mut prefix = 0.0;
    let total_connections: u64 = phase.workers.iter().map(|w| w.connections).sum();
    let mut configs = Vec::with_capacity(workers.len());
    for (i, (wp, share)) in workers.iter().zip(&phase.workers).enumerate() {
        let mut slots = share.connections;
        if users && slots == 0 {
            slots = DEFAULT_USERS_IN_FLIGHT;
        }
        let slots = usize::try_from(slots)
            .map_err(|_| EngineError::InvalidPlan(format!("worker {i} has too many connections")))?;
        let quota = if by_count {
            Some(share.requests.ok_or_else(|| {
                EngineError::InvalidPlan(format!("worker {i} of a request-count phase has no request quota"))
            })?)
        } else {
            None
        };
        let s = share.share.as_f64();
        // A shard's worker knows its place among the workers of every shard (`--shard I/N`).
        let (stream, streams, place) = match share.stripe {
            Some(st) => (
                usize::try_from(st.stream).unwrap_or(usize::MAX),
                usize::try_from(st.streams).unwrap_or(usize::MAX),
                st.prefix.as_f64(),
            ),
            None => (i, workers.len(), prefix),
        };
        let open = schedule.clone().map(|sched| (WorkerSchedule::new(sched, s, place), quota));
        prefix += s;
        let slot_quotas = match (&open, quota) {
            (None, Some(q)) => Some(split_exactly(q, slots)),
            _ => None,
        };
        let built = if bytes.is_none() {
            Some(Built::new(&templates, &weights, phase.seed, stream, streams).map_err(invalid)?)
        } else {
            None
        };
        configs.push(WorkerConfig {
            index: i,
            cpu: wp.cpu,
            addr: target.addr,
            tls: match target.protocol {
                Protocol::Http1 => target.tls.clone(),
                p => target.tls.as_ref().map(|t| t.for_protocol(p)),
            },
            http2: target.protocol == Protocol::Http2,
            streams: usize::try_from(load.connections.streams.max(1)).unwrap_or(1),
            request: bytes.clone(),
            built,
            mix_entries: if session { steps.len() } else { phase.mix.len() },
            session: ops.clone(),
            pipeline,
            window: load.connections.pipeline_mode == PipelineMode::Window,
            batch_reads: load.connections.pipeline_reads == loadgate_plan::PipelineReads::Batch,
            keep_alive,
            slots,
            slot_quotas,
            open,
            timeout,
            drain,
            connect_rate: load.connections.connect_rate,
            precise: wp.pacing == loadgate_plan::Pacing::Precise,
            connect_share: if total_connections > 0 {
                share.connections as f64 / total_connections as f64
            } else {
                0.0
            },
            duration,
            stop: stop.clone(),
            live_opening: live.clone(),
        });
    }
    Ok(configs)
}

/// What the workers' openings did together, over `took` (from the spawn of the workers to the start).
fn opening_result(rate: &ConnectRate, c: &OpeningCounts, took: Duration) -> ConnectionOpening {
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

/// Warnings about the opening. The connections still missing when the load ran are judged by
/// `connections_missing` (the slots keep trying during the load); these say what the opening met.
fn opening_warnings(validity: &mut Validity, o: &ConnectionOpening, planned: u64) {
    let failed = o.failed.total();
    if failed > 0 {
        let f = &o.failed;
        let causes: Vec<String> = [
            ("refused", f.refused),
            ("timed out", f.timed_out),
            ("no local port", f.address_unavailable),
            ("other", f.other),
        ]
        .into_iter()
        .filter(|&(_, n)| n > 0)
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
        validity.warnings.push(Problem {
            kind: "connections_not_opened".into(),
            message: format!(
                "opened {} of {planned} connections before the load ({}){}; the rest were tried again during it",
                o.opened,
                causes.join(", "),
                o.first_error.as_ref().map(|e| format!(", first: {e}")).unwrap_or_default()
            ),
        });
    }
    if o.slow_connects > 0 {
        validity.warnings.push(Problem {
            kind: "slow_connects".into(),
            message: format!(
                "{} connects stalled while opening (a SYN the target's full accept queue dropped, most likely) and \
                 were tried again{}; the opening took {:.2} s at {:.0} connections/s (`connect_rate: {}`)",
                o.slow_connects,
                if o.backoffs > 0 { format!(", slowing the pace {} times", o.backoffs) } else { String::new() },
                o.duration_s,
                o.rate_per_s,
                o.connect_rate
            ),
        });
    }
}

/// `total` split over `parts` so that the parts differ by at most one and sum to `total`.
fn split_exactly(total: u64, parts: usize) -> Vec<u64> {
    if parts == 0 {
        return Vec::new();
    }
    let p = parts as u64;
    (0..p).map(|i| total / p + u64::from(i < total % p)).collect()
}

/// Merges the workers' snapshots of each second.
struct Aggregator {
    /// The next interval each worker will report; `u64::MAX` once it is done.
    next: Vec<u64>,
    pending: BTreeMap<u64, Snapshot>,
    total: Histogram<u64>,
    timeline: Vec<TimelinePoint>,
}

impl Aggregator {
    fn new(workers: usize) -> Self {
        Self { next: vec![0; workers], pending: BTreeMap::new(), total: new_histogram(), timeline: Vec::new() }
    }

    fn add(&mut self, worker: usize, snap: Snapshot) {
        if let Some(n) = self.next.get_mut(worker) {
            *n = (*n).max(snap.interval + 1);
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
            }
            None => {
                self.pending.insert(snap.interval, snap);
            }
        }
    }

    fn done(&mut self, worker: usize) {
        if let Some(n) = self.next.get_mut(worker) {
            *n = u64::MAX;
        }
    }

    /// The oldest interval that is a full second for the phase: every worker has reported it (or is done) and
    /// some worker was still running through it. Seconds only ending workers took part in are the phase's
    /// partial tail, left for `drain_rest`.
    fn next_complete(&mut self) -> Option<(u64, Snapshot)> {
        let (&first, snap) = self.pending.first_key_value()?;
        if snap.full && self.next.iter().all(|&n| n > first) {
            self.pending.pop_first()
        } else {
            None
        }
    }

    fn drain_rest(&mut self) -> Vec<(u64, Snapshot)> {
        std::mem::take(&mut self.pending).into_iter().collect()
    }
}

fn merge_by_values(into: &mut Histogram<u64>, from: &Histogram<u64>) {
    for v in from.iter_recorded() {
        let _ = into.record_n(v.value_iterated_to().min(into.high()), v.count_at_value());
    }
}

/// The fraction of the phase's arrivals this generator sends: 1, or a shard's part (`--shard I/N`).
fn slice_share(phase: &Phase) -> f64 {
    if phase.workers.iter().any(|w| w.stripe.is_some()) {
        phase.workers.iter().map(|w| w.share.as_f64()).sum()
    } else {
        1.0
    }
}

fn timeline_point(index: u64, s: &Snapshot, schedule: Option<&Schedule>, t: f64, phase: &Phase) -> TimelinePoint {
    let target_rate = schedule.map(|sch| {
        let t0 = index as f64;
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

#[expect(clippy::too_many_arguments, reason = "the parts of one result, each used once")]
fn assemble(
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

    let mut requests = RequestCounts::default();
    let mut status = StatusCounts::default();
    let mut errors = ErrorCounts::default();
    let mut connections = ConnectionStats { planned: load.connections.connections, ..Default::default() };
    let mut bytes = ByteCounts::default();
    let mut hist = Histograms::default();
    let mut slots_connected = 0;
    let mut slots_expected = 0;
    let mut address_unavailable = 0;
    let mut first_connect_error = None;
    let mut tls = TlsStats { insecure: target_tls.is_some_and(TlsClient::insecure), ..TlsStats::default() };
    let (mut users_started, mut users_finished, mut users_peak) = (0u64, 0u64, 0u64);
    let (mut batches_held, mut batches_forced) = (0u64, 0u64);
    let mut h2 = H2Counters::default();
    let mut worker_stats = Vec::new();
    for (i, f) in finals.iter().enumerate() {
        let c = &f.counters;
        requests += &RequestCounts { sent: c.sent, completed: c.completed, incomplete: f.incomplete, unsent: f.unsent };
        status += &c.status;
        errors += &c.errors;
        connections.peak_open += f.peak_open;
        connections.opened += c.opened;
        connections.failed += c.connect_failed;
        connections.reconnects += c.reconnects;
        bytes.read += c.bytes_read;
        bytes.written += c.bytes_written;
        slots_connected += f.slots_connected;
        slots_expected += f.slots_expected;
        address_unavailable += c.address_unavailable;
        users_started += c.users_started;
        users_finished += c.users_finished;
        users_peak += f.peak_active;
        batches_held += c.batches_held;
        batches_forced += c.batches_forced;
        if first_connect_error.is_none() {
            first_connect_error.clone_from(&c.first_connect_error);
        }
        h2.add(&c.http2);
        let t = &f.tls;
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
        let wall = f.end.saturating_duration_since(start).as_secs_f64();
        // Precise pacing's polling is a cost chosen for accuracy, not a sign of a generator out of CPU.
        let used = (f.user_seconds + f.system_seconds - f.spin_seconds.unwrap_or(0.0)).max(0.0);
        let utilization = if wall > 0.0 { used / wall } else { 0.0 };
        worker_stats.push(WorkerStats {
            index: i,
            cpu: workers.get(i).and_then(|w| w.cpu),
            user_seconds: f.user_seconds,
            system_seconds: f.system_seconds,
            utilization,
            saturated: utilization >= SATURATED,
            spin_seconds: f.spin_seconds,
        });
    }

    // The time the load ran: the planned duration unless the phase ended early.
    let planned = match load.stop {
        StopCondition::Duration { duration } => Some(duration.as_secs_f64()),
        StopCondition::Requests { .. } => None,
    };
    let measured = stop_at.saturating_duration_since(start).as_secs_f64();
    let load_secs = match planned {
        Some(p) if aborted.is_none() => p,
        _ => measured,
    };
    let (model, users) = match load.arrival {
        Arrival::Closed => ("closed", false),
        Arrival::Constant { .. } => ("constant", false),
        Arrival::Ramp { .. } => ("ramp", false),
        Arrival::Users { .. } => ("users", true),
    };
    let target_rate =
        schedule.filter(|_| load_secs > 0.0).map(|s| slice_share(phase) * s.count_at(load_secs) / load_secs);
    let request_errors = errors.read + errors.write + errors.timeout + errors.protocol;
    // With a session a user sends several requests: users count as users.
    let session = !phase.session.is_empty();
    let (users_started, users_finished) = if session {
        (users_started, users_finished)
    } else {
        (requests.sent + errors.connect, requests.completed + request_errors + errors.connect)
    };
    let arrivals = if session { users_started } else { requests.sent };
    let achieved_rate = schedule.map(|_| if load_secs > 0.0 { arrivals as f64 / load_secs } else { 0.0 });

    let mut validity = Validity { valid: true, problems: Vec::new(), warnings: Vec::new() };
    if let (Some(target), Some(achieved)) = (target_rate, achieved_rate) {
        // In a request-count run the schedule may simply have ended: judge the requests that were due.
        if target > 0.0 && achieved < RATE_TOLERANCE * target {
            validity.problems.push(Problem {
                kind: "rate_not_reached".into(),
                message: format!(
                    "sent {} requests/s of the {} requests/s target ({:.1}%); {} requests that were due were never sent",
                    fmt_rate(achieved),
                    fmt_rate(target),
                    100.0 * achieved / target,
                    requests.unsent
                ),
            });
        }
    }
    if !users && slots_connected < slots_expected {
        validity.problems.push(Problem {
            kind: "connections_missing".into(),
            message: format!(
                "opened {slots_connected} of {slots_expected} planned connections; {} connect attempts failed{}",
                errors.connect,
                first_connect_error.map(|e| format!(" (first: {e})")).unwrap_or_default()
            ),
        });
    }
    for w in &worker_stats {
        if w.saturated {
            validity.warnings.push(Problem {
                kind: "generator_saturated".into(),
                message: format!(
                    "worker {}{} used {:.0}% of its CPU: the generator may limit the measurement",
                    w.index,
                    w.cpu.map(|c| format!(" (CPU {c})")).unwrap_or_default(),
                    100.0 * w.utilization
                ),
            });
        }
    }
    if requests.incomplete > 0 {
        validity.warnings.push(Problem {
            kind: "incomplete_requests".into(),
            message: format!(
                "{} requests were still in flight when the phase ended and the drain ran out",
                requests.incomplete
            ),
        });
    }
    // A batch read by force waited 10-200 ms for a mark it could not reach: a measurable share of them held the
    // load back (the target answered, the generator wrote the next batch late).
    if batches_forced > 0 && batches_forced.saturating_mul(100) >= batches_held {
        validity.warnings.push(Problem {
            kind: "pipeline_batches_forced".into(),
            message: format!(
                "{batches_forced} of {batches_held} pipelined batches never reached their low-water mark (a response \
                 shorter than any before) and were read after waiting 10-200 ms, so their connections wrote their \
                 next batch late and the throughput is lower than the target's; `pipeline_reads: each` reads each \
                 response as it arrives"
            ),
        });
    }
    if address_unavailable > 0 {
        validity.warnings.push(Problem {
            kind: "ephemeral_ports_exhausted".into(),
            message: format!(
                "{address_unavailable} connects failed because no local port was free (EADDRNOTAVAIL): the machine ran \
                 out of ephemeral ports, usually to sockets in TIME_WAIT. Use keep-alive or fewer connections, widen \
                 net.ipv4.ip_local_port_range, or enable net.ipv4.tcp_tw_reuse"
            ),
        });
    }
    if tls.insecure {
        validity.warnings.push(Problem {
            kind: "tls_insecure".into(),
            message: "INSECURE: the server's TLS certificate was not checked (`tls.insecure: true`, `-k`): the \
                      traffic is encrypted, but to a server nobody verified"
                .into(),
        });
    }
    if tls.errors.total() > 0 {
        let classes: Vec<String> = tls.errors.nonzero().iter().map(|(k, n)| format!("{k} {n}")).collect();
        validity.warnings.push(Problem {
            kind: "tls_errors".into(),
            message: format!(
                "{} TLS failures ({}); first: {}",
                tls.errors.total(),
                classes.join(", "),
                tls.first_error.as_deref().unwrap_or("-")
            ),
        });
    }
    let http2 = (h2.connections > 0).then(|| Http2Stats {
        connections: h2.connections,
        streams_asked: u64::from(load.connections.streams.max(1)),
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
    });
    if let Some(h) = http2.as_ref().filter(|h| h.streams_granted > 0 && h.streams_granted < h.streams_asked) {
        validity.warnings.push(Problem {
            kind: "http2_streams_capped".into(),
            message: format!(
                "the server granted {} concurrent streams per connection (SETTINGS_MAX_CONCURRENT_STREAMS), fewer \
                 than the {} asked: each connection carried at most {}",
                h.streams_granted, h.streams_asked, h.streams_granted
            ),
        });
    }
    validity.valid = validity.problems.is_empty();

    let throughput = if duration > 0.0 { requests.completed as f64 / duration } else { 0.0 };
    PhaseMeasurement {
        index: phase.index,
        name: phase.name.clone(),
        scenario: phase.scenario.clone(),
        matrix: phase.matrix.clone(),
        gate: phase.gate,
        started_at_offset: phase.start_offset.map_or(0.0, |d| d.as_secs_f64()),
        duration,
        load: LoadSummary {
            model: model.into(),
            target_rate,
            achieved_rate,
            pipeline: if load.connections.keep_alive && !users { load.connections.pipeline.max(1) } else { 1 },
            pipeline_reads: finals.iter().any(|f| f.batches_read_whole).then(|| "batch".to_owned()),
            batches_held: (batches_held > 0).then_some(batches_held),
            batches_forced: (batches_held > 0).then_some(batches_forced),
            keep_alive: load.connections.keep_alive && !users,
            users_started: users.then_some(users_started),
            users_finished: users.then_some(users_finished),
            users_peak_active: users.then_some(users_peak),
        },
        requests,
        status,
        errors,
        connections,
        bytes,
        throughput,
        latency: LatencySummary::from_histogram(&hist.latency),
        service_time: LatencySummary::from_histogram(&hist.service_time),
        send_lag: LatencySummary::from_histogram(&hist.send_lag),
        connect_time: LatencySummary::from_histogram(&hist.connect_time),
        tls: target_tls
            .is_some()
            .then(|| TlsStats { handshake_time: LatencySummary::from_histogram(&hist.tls_handshake), ..tls }),
        http2,
        histograms: hist,
        timeline,
        workers: worker_stats,
        validity,
        aborted,
        by_request: by_request(phase, finals, duration),
    }
}

/// Per mix entry (or session request step): the workers' measurements summed, in the mix's (session's) order.
fn by_request(phase: &Phase, finals: &[Box<WorkerFinal>], duration: f64) -> Vec<RequestBreakdown> {
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
            }
        })
        .collect()
}

fn fmt_rate(r: f64) -> String {
    if r >= 100.0 {
        format!("{r:.0}")
    } else {
        format!("{r:.1}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_sum_exactly() {
        assert_eq!(split_exactly(10, 3), vec![4, 3, 3]);
        assert_eq!(split_exactly(2, 4), vec![1, 1, 0, 0]);
        assert_eq!(split_exactly(5, 0), Vec::<u64>::new());
    }
}
