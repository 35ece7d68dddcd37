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
use loadgate_plan::{Arrival, Phase, SessionStep, StopCondition, UserStep, WorkerPlan, WorkerShare};

use crate::opening::{LiveOpening, OpeningCounts};
use crate::tls::TlsClient;
use loadgate_measure::{CheckStats, CheckedResponses, ConnectionOpening, OpeningFailures};
use loadgate_plan::ConnectRate;

use crate::request::{self, Built, RequestBytes, Template};
use crate::schedule::{Schedule, WorkerSchedule};
use crate::timeline::{add_histogram, merge_by_values, Timeline};
use crate::worker::inspect::CheckPlan;
use crate::worker::tally::CheckTally;
use crate::worker::{self, Counters, H2Counters, Msg, SessionOp, Snapshot, TlsCounters, WorkerConfig, WorkerFinal};
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
    let planned_secs = match phase.load.stop {
        StopCondition::Duration { duration } => Some(duration.as_secs_f64()),
        StopCondition::Requests { .. } => None,
    };
    let mut agg = Aggregator::new(n, Timeline::new(planned_secs, crate::timeline::MAX_POINTS));
    let make_point = |first: u64, s: &Snapshot, t: f64| timeline_point(first, s, schedule.as_ref(), t, phase);
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
            let point = make_point(index, &merged, index as f64 + 1.0);
            add_histogram(&mut agg.total, &merged.latency);
            add_histogram(&mut agg.total_service, &merged.service_time);
            let elapsed = Duration::from_secs(index + 1);
            let tick = Tick {
                phase,
                elapsed,
                point: &point,
                interval_latency: &merged.latency,
                total_latency: &agg.total,
                interval_errors: &merged.error_kinds,
                interval_status: &merged.status,
                interval_send_lag: &merged.send_lag,
                progress: Progress { phase, elapsed, agg: &agg, opening: opening.as_ref() },
            };
            if let Control::Abort(reason) = on_tick(&tick) {
                stop.stop(reason);
            }
            agg.timeline.add(index, merged, &make_point);
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
    let rest = agg.drain_rest();
    let timeline = agg.timeline.finish(rest, elapsed, &make_point);
    let mut result = assemble(phase, workers, stop, schedule.as_ref(), start, &finals, timeline, target.tls.as_ref());
    if let Some(o) = opening {
        opening_warnings(&mut result.validity, &o, phase.load.connections.connections);
        result.connections.opening = Some(o);
    }
    Ok(result)
}

/// A phase in progress, at one of its ticks: [`Progress::measurement`] makes a result of what it measured so
/// far, for a checkpoint of a run that may not live to its end.
pub struct Progress<'a> {
    phase: &'a Phase,
    elapsed: Duration,
    agg: &'a Aggregator,
    opening: Option<&'a ConnectionOpening>,
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
        PhaseMeasurement {
            index: phase.index,
            name: phase.name.clone(),
            scenario: phase.scenario.clone(),
            matrix: phase.matrix.clone(),
            gate: phase.gate,
            started_at_offset: phase.start_offset.map_or(0.0, |d| d.as_secs_f64()),
            duration: secs,
            load: LoadSummary {
                model: model.into(),
                target_rate,
                achieved_rate,
                pipeline: if load.connections.keep_alive && !users { load.connections.pipeline.max(1) } else { 1 },
                keep_alive: load.connections.keep_alive && !users,
                ..Default::default()
            },
            throughput: if secs > 0.0 { requests.completed as f64 / secs } else { 0.0 },
            requests,
            status,
            errors,
            connections,
            bytes,
            latency: LatencySummary::from_histogram(&self.agg.total),
            service_time: LatencySummary::from_histogram(&service),
            send_lag: LatencySummary::default(),
            connect_time: LatencySummary::default(),
            tls: None,
            http2: None,
            histograms: Histograms { latency: self.agg.total.clone(), service_time: service, ..Default::default() },
            timeline: points.to_vec(),
            workers: Vec::new(),
            validity: Validity { valid: true, ..Default::default() },
            aborted: Some(format!("still running, {secs:.0} s into the phase")),
            by_request: Vec::new(),
            checked: Default::default(),
            checks: Vec::new(),
        }
    }
}

/// What every worker of a phase shares: the load's settings, the requests, the session, the target and the
/// phase's stop signal and opening counters.
struct Common<'a> {
    phase: &'a Phase,
    target: &'a Target,
    stop: &'a StopSignal,
    live: &'a Arc<LiveOpening>,
    /// The connections of every worker of the phase (each worker opens its share of them).
    total_connections: u64,
    users: bool,
    keep_alive: bool,
    pipeline: usize,
    /// The session's steps as the worker runs them (empty without a session).
    ops: Vec<SessionOp>,
    mix_entries: usize,
    /// The one static request, serialized once; `None` when requests are built from `templates`.
    bytes: Option<Arc<RequestBytes>>,
    templates: Vec<Arc<Template>>,
    weights: Vec<u32>,
    schedule: Option<Schedule>,
    duration: Option<Duration>,
    timeout: Duration,
    drain: Duration,
    by_count: bool,
    /// Response checks, captures and cookies, compiled once for every worker.
    checks: Option<Arc<CheckPlan>>,
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
    let common = Common::new(phase, target, stop, live)?;
    let mut prefix = 0.0;
    let mut configs = Vec::with_capacity(workers.len());
    for (i, (wp, share)) in workers.iter().zip(&phase.workers).enumerate() {
        configs.push(common.worker(i, workers.len(), wp, share, prefix)?);
        prefix += share.share.as_f64();
    }
    Ok(configs)
}

impl<'a> Common<'a> {
    /// The phase's shared settings, its requests serialized (or made templates) for `target`.
    fn new(
        phase: &'a Phase,
        target: &'a Target,
        stop: &'a StopSignal,
        live: &'a Arc<LiveOpening>,
    ) -> Result<Common<'a>, EngineError> {
        let load = &phase.load;
        let users = matches!(load.arrival, Arrival::Users { .. });
        let session = !phase.session.is_empty();
        // A session is a user with its own connection from its first step to its last (Gatling's model), in
        // every load: user injection, a closed load (each connection slot runs sessions one after another) and
        // an open one (each arrival is a session).
        let keep_alive = load.connections.keep_alive && !users && !session;
        let pipeline = if keep_alive { usize::try_from(load.connections.pipeline.max(1)).unwrap_or(1) } else { 1 };
        let (steps, ops) = session_steps(phase);
        if session && steps.is_empty() {
            return Err(EngineError::InvalidPlan("the session has no request step".into()));
        }
        let (bytes, templates) = requests(phase, target, session.then_some(&steps[..]), keep_alive, pipeline)?;
        let weights: Vec<u32> =
            if session { vec![1; steps.len()] } else { phase.mix.iter().map(|m| m.weight).collect() };
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
            let think: Duration =
                ops.iter().map(|o| if let SessionOp::Think(d) = o { *d } else { Duration::ZERO }).sum();
            drain = drain.saturating_mul(u32::try_from(steps.len()).unwrap_or(u32::MAX)).saturating_add(think);
        }
        Ok(Common {
            phase,
            target,
            stop,
            live,
            total_connections: phase.workers.iter().map(|w| w.connections).sum(),
            users,
            keep_alive,
            pipeline,
            ops,
            mix_entries: if session { steps.len() } else { phase.mix.len() },
            bytes,
            templates,
            weights,
            schedule: Schedule::from_arrival(&load.arrival),
            duration,
            timeout,
            drain,
            by_count: matches!(load.stop, StopCondition::Requests { .. }),
            checks: CheckPlan::new(
                &entries(phase).into_iter().map(|(_, r)| r).collect::<Vec<_>>(),
                phase.checks.check_body_limit,
                session && phase.checks.cookies,
            )
            .map_err(EngineError::InvalidPlan)?
            .map(Arc::new),
        })
    }

    /// Worker `i`'s (of `count`) configuration: its slots, quotas, schedule and request builder. A worker that is
    /// not a shard's starts its schedule at `prefix`, the shares of the workers before it.
    fn worker(
        &self,
        i: usize,
        count: usize,
        wp: &WorkerPlan,
        share: &WorkerShare,
        prefix: f64,
    ) -> Result<WorkerConfig, EngineError> {
        let (phase, target) = (self.phase, self.target);
        let load = &phase.load;
        let mut slots = share.connections;
        if self.users && slots == 0 {
            slots = DEFAULT_USERS_IN_FLIGHT;
        }
        let slots = usize::try_from(slots)
            .map_err(|_| EngineError::InvalidPlan(format!("worker {i} has too many connections")))?;
        let quota = if self.by_count {
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
            None => (i, count, prefix),
        };
        let open = self.schedule.clone().map(|sched| (WorkerSchedule::new(sched, s, place), quota));
        let slot_quotas = match (&open, quota) {
            (None, Some(q)) => Some(split_exactly(q, slots)),
            _ => None,
        };
        let built = if self.bytes.is_none() {
            Some(Built::new(&self.templates, &self.weights, phase.seed, stream, streams).map_err(invalid)?)
        } else {
            None
        };
        Ok(WorkerConfig {
            index: i,
            cpu: wp.cpu,
            addr: target.addr,
            tls: match target.protocol {
                Protocol::Http1 => target.tls.clone(),
                p => target.tls.as_ref().map(|t| t.for_protocol(p)),
            },
            http2: target.protocol == Protocol::Http2,
            streams: usize::try_from(load.connections.streams.max(1)).unwrap_or(1),
            request: self.bytes.clone(),
            built,
            mix_entries: self.mix_entries,
            session: self.ops.clone(),
            variables: phase.checks.variables.len(),
            checks: self.checks.clone(),
            pipeline: self.pipeline,
            window: load.connections.pipeline_mode == PipelineMode::Window,
            batch_reads: load.connections.pipeline_reads == loadgate_plan::PipelineReads::Batch,
            keep_alive: self.keep_alive,
            slots,
            slot_quotas,
            open,
            timeout: self.timeout,
            drain: self.drain,
            connect_rate: load.connections.connect_rate,
            precise: wp.pacing == loadgate_plan::Pacing::Precise,
            connect_share: if self.total_connections > 0 {
                share.connections as f64 / self.total_connections as f64
            } else {
                0.0
            },
            duration: self.duration,
            stop: self.stop.clone(),
            live_opening: self.live.clone(),
        })
    }
}

/// A phase's requests: the one static request serialized once, or (`None`) the templates each request is built
/// from.
type Requests = (Option<Arc<RequestBytes>>, Vec<Arc<Template>>);

/// An invalid request as the engine's error.
fn invalid(e: request::InvalidRequest) -> EngineError {
    EngineError::InvalidRequest(e.0)
}

/// A session's request steps (name and request, in step order) and all its steps as the worker runs them (a
/// request step by its index among the request steps).
fn session_steps(phase: &Phase) -> (Vec<(&str, &loadgate_plan::RequestPlan)>, Vec<SessionOp>) {
    let steps = phase
        .session
        .iter()
        .filter_map(|s| match s {
            SessionStep::Request { name, request } => Some((name.as_str(), request)),
            SessionStep::Think { .. } => None,
        })
        .collect();
    let mut entry = 0u32;
    let ops = phase
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
    (steps, ops)
}

/// The phase's requests: one static request serialized once and repeated, or templates built per request (a mix,
/// generated values, or a session's request `steps`, which keep the connection open: the user closes it after its
/// last step).
fn requests(
    phase: &Phase,
    target: &Target,
    steps: Option<&[(&str, &loadgate_plan::RequestPlan)]>,
    keep_alive: bool,
    pipeline: usize,
) -> Result<Requests, EngineError> {
    if steps.is_none() && phase.mix.is_empty() && phase.request.dynamic.is_none() {
        let one = request::serialize(&phase.request, &target.host, keep_alive).map_err(invalid)?;
        let head = phase.request.method.trim().eq_ignore_ascii_case("HEAD");
        return Ok((Some(Arc::new(RequestBytes::new(one, pipeline, head))), Vec::new()));
    }
    let (requests, keep_alive): (Vec<&loadgate_plan::RequestPlan>, bool) = match steps {
        Some(steps) => (steps.iter().map(|(_, r)| *r).collect(), true),
        None if phase.mix.is_empty() => (vec![&phase.request], keep_alive),
        None => (phase.mix.iter().map(|m| &m.request).collect(), keep_alive),
    };
    // A session's steps send the user's cookies (`cookies:`, on by default with a session).
    let cookies = steps.is_some() && phase.checks.cookies;
    let templates = requests
        .into_iter()
        .map(|r| Template::with_cookies(r, &target.host, keep_alive, cookies).map(Arc::new))
        .collect::<Result<Vec<_>, _>>()
        .map_err(invalid)?;
    Ok((None, templates))
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
pub(crate) struct Aggregator {
    /// The next interval each worker will report; `u64::MAX` once it is done.
    next: Vec<u64>,
    pending: BTreeMap<u64, Snapshot>,
    total: Histogram<u64>,
    /// The service times of the full seconds so far (for checkpoints).
    total_service: Histogram<u64>,
    /// Each worker's counters as of its latest snapshot (for checkpoints).
    latest: Vec<Counters>,
    timeline: Timeline,
}

impl Aggregator {
    fn new(workers: usize, timeline: Timeline) -> Self {
        Self {
            next: vec![0; workers],
            pending: BTreeMap::new(),
            total: new_histogram(),
            total_service: new_histogram(),
            latest: vec![Counters::default(); workers],
            timeline,
        }
    }

    fn add(&mut self, worker: usize, mut snap: Snapshot) {
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

/// The fraction of the phase's arrivals this generator sends: 1, or a shard's part (`--shard I/N`).
fn slice_share(phase: &Phase) -> f64 {
    if phase.workers.iter().any(|w| w.stripe.is_some()) {
        phase.workers.iter().map(|w| w.share.as_f64()).sum()
    } else {
        1.0
    }
}

/// The point of the seconds from `first` to `t` (seconds from the phase's start), merged in `s`.
fn timeline_point(first: u64, s: &Snapshot, schedule: Option<&Schedule>, t: f64, phase: &Phase) -> TimelinePoint {
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

/// The workers' final measurements summed over the phase (what [`assemble`] reads them into).
struct Totals {
    requests: RequestCounts,
    status: StatusCounts,
    errors: ErrorCounts,
    connections: ConnectionStats,
    bytes: ByteCounts,
    hist: Histograms,
    slots_connected: u64,
    slots_expected: u64,
    address_unavailable: u64,
    first_connect_error: Option<String>,
    tls: TlsStats,
    users_started: u64,
    users_finished: u64,
    users_peak: u64,
    batches_held: u64,
    batches_forced: u64,
    h2: H2Counters,
    workers: Vec<WorkerStats>,
}

/// How the load ran, from the plan and the totals: its model, the time it ran and the rates.
struct Ran {
    model: &'static str,
    users: bool,
    target_rate: Option<f64>,
    achieved_rate: Option<f64>,
    /// Users started and finished; without a session, each request is a user.
    users_started: u64,
    users_finished: u64,
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
    let t = sum_workers(phase, workers, start, finals, target_tls);
    let ran = how_it_ran(phase, schedule, &t, stop_at.saturating_duration_since(start), aborted.is_some());
    let http2 = http2_stats(&t.h2, load.connections.streams);
    let validity = judge(&t, &ran, http2.as_ref());
    let throughput = if duration > 0.0 { t.requests.completed as f64 / duration } else { 0.0 };
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
    PhaseMeasurement {
        index: phase.index,
        name: phase.name.clone(),
        scenario: phase.scenario.clone(),
        matrix: phase.matrix.clone(),
        gate: phase.gate,
        started_at_offset: phase.start_offset.map_or(0.0, |d| d.as_secs_f64()),
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
            users_planned: injection_steps(&load.arrival)
                .map(|steps| (steps.iter().map(UserStep::users).sum::<f64>() * slice_share(phase)).round() as u64),
            users_started: users.then_some(ran.users_started),
            users_finished: users.then_some(ran.users_finished),
            users_peak_active: users.then_some(t.users_peak),
        },
        requests: t.requests,
        status: t.status,
        errors: t.errors,
        connections: t.connections,
        bytes: t.bytes,
        throughput,
        latency: LatencySummary::from_histogram(&t.hist.latency),
        service_time: LatencySummary::from_histogram(&t.hist.service_time),
        send_lag: LatencySummary::from_histogram(&t.hist.send_lag),
        connect_time: LatencySummary::from_histogram(&t.hist.connect_time),
        tls: target_tls
            .is_some()
            .then(|| TlsStats { handshake_time: LatencySummary::from_histogram(&t.hist.tls_handshake), ..t.tls }),
        http2,
        histograms: t.hist,
        timeline,
        workers: t.workers,
        validity,
        aborted,
        by_request,
        checked,
        checks,
    }
}

/// Sums the workers' final measurements: counters, TLS, HTTP/2 and histograms, and each worker's CPU.
fn sum_workers(
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
fn add_tls(tls: &mut TlsStats, t: &TlsCounters) {
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
fn add_histograms(hist: &mut Histograms, f: &WorkerFinal) {
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
fn worker_stats(index: usize, cpu: Option<u32>, start: Instant, f: &WorkerFinal) -> WorkerStats {
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
fn how_it_ran(phase: &Phase, schedule: Option<&Schedule>, t: &Totals, measured: Duration, aborted: bool) -> Ran {
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
/// The injection profile of a user load.
fn injection_steps(arrival: &Arrival) -> Option<&[UserStep]> {
    match arrival {
        Arrival::Users { steps } => Some(steps),
        _ => None,
    }
}

fn load_model(arrival: &Arrival) -> (&'static str, bool) {
    match arrival {
        Arrival::Closed => ("closed", false),
        Arrival::Constant { .. } => ("constant", false),
        Arrival::Ramp { .. } => ("ramp", false),
        Arrival::Users { .. } => ("users", true),
    }
}

/// The phase's HTTP/2 statistics, when a connection spoke HTTP/2 (`streams`: the concurrent streams asked for).
fn http2_stats(h2: &H2Counters, streams: u32) -> Option<Http2Stats> {
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

/// The validity verdict: the problems that invalidate the measurement, then the warnings beside it.
fn judge(t: &Totals, ran: &Ran, http2: Option<&Http2Stats>) -> Validity {
    let mut validity = Validity { valid: true, problems: Vec::new(), warnings: Vec::new() };
    if let (Some(target), Some(achieved)) = (ran.target_rate, ran.achieved_rate) {
        // In a request-count run the schedule may simply have ended: judge the requests that were due.
        if target > 0.0 && achieved < RATE_TOLERANCE * target {
            validity.problems.push(Problem {
                kind: "rate_not_reached".into(),
                message: format!(
                    "sent {} requests/s of the {} requests/s target ({:.1}%); {} requests that were due were never sent",
                    fmt_rate(achieved),
                    fmt_rate(target),
                    100.0 * achieved / target,
                    t.requests.unsent
                ),
            });
        }
    }
    if !ran.users && t.slots_connected < t.slots_expected {
        validity.problems.push(Problem {
            kind: "connections_missing".into(),
            message: format!(
                "opened {} of {} planned connections; {} connect attempts failed{}",
                t.slots_connected,
                t.slots_expected,
                t.errors.connect,
                t.first_connect_error.as_ref().map(|e| format!(" (first: {e})")).unwrap_or_default()
            ),
        });
    }
    generator_warnings(&mut validity.warnings, t);
    tls_warnings(&mut validity.warnings, &t.tls);
    if let Some(h) = http2.filter(|h| h.streams_granted > 0 && h.streams_granted < h.streams_asked) {
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
    validity
}

/// Warnings about the generator: saturated workers, requests the drain cut off, pipelined batches read by force,
/// ephemeral ports run out.
fn generator_warnings(warnings: &mut Vec<Problem>, t: &Totals) {
    for w in &t.workers {
        if w.saturated {
            warnings.push(Problem {
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
    if t.requests.incomplete > 0 {
        warnings.push(Problem {
            kind: "incomplete_requests".into(),
            message: format!(
                "{} requests were still in flight when the phase ended and the drain ran out",
                t.requests.incomplete
            ),
        });
    }
    // A batch read by force waited 10-200 ms for a mark it could not reach: a measurable share of them held the
    // load back (the target answered, the generator wrote the next batch late).
    let (batches_forced, batches_held) = (t.batches_forced, t.batches_held);
    if batches_forced > 0 && batches_forced.saturating_mul(100) >= batches_held {
        warnings.push(Problem {
            kind: "pipeline_batches_forced".into(),
            message: format!(
                "{batches_forced} of {batches_held} pipelined batches never reached their low-water mark (a response \
                 shorter than any before) and were read after waiting 10-200 ms, so their connections wrote their \
                 next batch late and the throughput is lower than the target's; `pipeline_reads: each` reads each \
                 response as it arrives"
            ),
        });
    }
    let address_unavailable = t.address_unavailable;
    if address_unavailable > 0 {
        warnings.push(Problem {
            kind: "ephemeral_ports_exhausted".into(),
            message: format!(
                "{address_unavailable} connects failed because no local port was free (EADDRNOTAVAIL): the machine ran \
                 out of ephemeral ports, usually to sockets in TIME_WAIT. Use keep-alive or fewer connections, widen \
                 net.ipv4.ip_local_port_range, or enable net.ipv4.tcp_tw_reuse"
            ),
        });
    }
}

/// Warnings about TLS: an unchecked certificate, failed handshakes or records.
fn tls_warnings(warnings: &mut Vec<Problem>, tls: &TlsStats) {
    if tls.insecure {
        warnings.push(Problem {
            kind: "tls_insecure".into(),
            message: "INSECURE: the server's TLS certificate was not checked (`tls.insecure: true`, `-k`): the \
                      traffic is encrypted, but to a server nobody verified"
                .into(),
        });
    }
    if tls.errors.total() > 0 {
        let classes: Vec<String> = tls.errors.nonzero().iter().map(|(k, n)| format!("{k} {n}")).collect();
        warnings.push(Problem {
            kind: "tls_errors".into(),
            message: format!(
                "{} TLS failures ({}); first: {}",
                tls.errors.total(),
                classes.join(", "),
                tls.first_error.as_deref().unwrap_or("-")
            ),
        });
    }
}

/// The requests a phase's workers tell apart (see `loadgate_plan::verify::entries`).
pub(crate) fn entries(phase: &Phase) -> Vec<(&str, &loadgate_plan::RequestPlan)> {
    loadgate_plan::verify::entries(phase)
}

/// Each check (then each capture, as the check `capture:<name>`) of each entry with the workers' counts summed,
/// and the responses the checks judged: in total and per entry.
fn checks_result(phase: &Phase, finals: &[Box<WorkerFinal>]) -> (Vec<CheckStats>, Vec<CheckedResponses>) {
    let entries = entries(phase);
    let tallies: Vec<&CheckTally> = finals.iter().filter_map(|f| f.checks.as_ref()).collect();
    let Some((first, rest)) = tallies.split_first() else {
        return (Vec::new(), Vec::new());
    };
    let mut sum = CheckTally::new(&entries.iter().map(|(_, r)| r.checks.len() + r.captures.len()).collect::<Vec<_>>());
    sum.add(first);
    for t in rest {
        sum.add(t);
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
                checked: Default::default(),
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
