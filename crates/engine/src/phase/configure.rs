//! A phase's workers configured: the settings every worker shares (the load, the requests serialized once or made
//! templates, the session, the checks compiled once) and each worker's own (its slots, quotas and schedule).

use std::sync::Arc;
use std::time::Duration;

use loadgate_model::Protocol;
use loadgate_plan::{split_even, Arrival, Phase, PipelineMode, SessionStep, StopCondition, WorkerPlan, WorkerShare};

use crate::control::{EngineError, StopSignal, Target};
use crate::opening::LiveOpening;
use crate::replay::{self, ReplayPart};
use crate::request::{self, Built, RequestBytes, Template};
use crate::schedule::{Schedule, WorkerSchedule};
use crate::worker::inspect::CheckPlan;
use crate::worker::{PairKey, SessionOp, WorkerConfig};

/// The longest drain after a duration-bound phase's deadline (bounded further by the request timeout).
const MAX_DRAIN: Duration = Duration::from_secs(2);
/// Concurrent users per worker when a user-injection phase gives no connection limit.
const DEFAULT_USERS_IN_FLIGHT: u64 = 1024;

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

/// Each worker's configuration per lane, and per lane a replay's log side.
pub(super) type Configured = (Vec<Vec<WorkerConfig>>, Vec<Option<ReplayBook>>);

/// Each worker's configuration for each target (lane) the phase loads: `configs[w][l]` is worker `w`'s lane `l`.
/// Every lane of a worker gets the phase's whole load (its slots, rate and schedule from the same place, hence
/// the same intended instants) against its own target.
pub(super) fn configure(
    phase: &Phase,
    workers: &[WorkerPlan],
    targets: &[&Target],
    stop: &StopSignal,
    live: &Arc<LiveOpening>,
) -> Result<Configured, EngineError> {
    if workers.len() != phase.workers.len() {
        return Err(EngineError::WorkerMismatch { planned: phase.workers.len(), given: workers.len() });
    }
    let mut configs: Vec<Vec<WorkerConfig>> = workers.iter().map(|_| Vec::with_capacity(targets.len())).collect();
    let mut books = Vec::with_capacity(targets.len());
    for (lane, target) in targets.iter().enumerate() {
        let common = Common::new(phase, target, stop, live)?;
        let mut parts = replay_parts(phase, target, common.keep_alive, &mut books)?;
        let mut prefix = 0.0;
        for (i, ((wp, share), lanes)) in workers.iter().zip(&phase.workers).zip(&mut configs).enumerate() {
            let mut cfg = common.worker(i, workers.len(), wp, share, prefix)?;
            cfg.lane = lane;
            if targets.len() < 2 {
                cfg.pair = None;
            }
            if let Some(mut part) = parts.get_mut(i).map(std::mem::take) {
                cfg.open = Some((WorkerSchedule::times(std::mem::take(&mut part.times).into()), None));
                cfg.replay = Some(part);
            }
            lanes.push(cfg);
            prefix += share.share.as_f64();
        }
    }
    Ok((configs, books))
}

/// A replay's parts for the phase's workers (none for other loads), its log's side noted in `books` (one per
/// lane). A worker's stream among all (shards included) picks its requests.
fn replay_parts(
    phase: &Phase,
    target: &Target,
    keep_alive: bool,
    books: &mut Vec<Option<ReplayBook>>,
) -> Result<Vec<ReplayPart>, EngineError> {
    let Arrival::Replay(r) = &phase.load.arrival else {
        books.push(None);
        return Ok(Vec::new());
    };
    let count = phase.workers.len() as u64;
    let streams_of: Vec<u64> =
        phase.workers.iter().enumerate().map(|(i, w)| w.stripe.map_or(i as u64, |s| s.stream)).collect();
    let streams = phase.workers.first().and_then(|w| w.stripe).map_or(count, |s| s.streams);
    let (mut parts, log) = replay::load(r, &streams_of, streams, &target.host, keep_alive)?;
    let keys = parts.iter_mut().map(|p| std::mem::take(&mut p.keys)).collect();
    books.push(Some(ReplayBook { log, keys }));
    Ok(parts)
}

/// A replay's log side and each worker's requests' keys, kept by the phase for the fidelity report.
pub(super) struct ReplayBook {
    pub log: replay::ReplayLog,
    pub keys: Vec<Vec<u32>>,
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
        let replay = matches!(load.arrival, Arrival::Replay(_));
        let (bytes, templates) = if replay {
            (None, Vec::new())
        } else {
            requests(phase, target, session.then_some(&steps[..]), keep_alive, pipeline)?
        };
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
                &loadgate_plan::verify::entries(phase).into_iter().map(|(_, r)| r).collect::<Vec<_>>(),
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
            (None, Some(q)) => Some(split_even(q, slots)),
            _ => None,
        };
        let built = if self.bytes.is_none() && !self.templates.is_empty() {
            Some(Built::new(&self.templates, &self.weights, phase.seed, stream, streams).map_err(invalid)?)
        } else {
            None
        };
        Ok(WorkerConfig {
            index: i,
            lane: 0,
            pair: Some(PairKey { seed: phase.seed, stream: stream as u64, streams: streams as u64 }),
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
            replay: None,
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
pub(super) type Requests = (Option<Arc<RequestBytes>>, Vec<Arc<Template>>);

/// An invalid request as the engine's error.
pub(super) fn invalid(e: request::InvalidRequest) -> EngineError {
    EngineError::InvalidRequest(e.0)
}

/// A session's request steps (name and request, in step order) and all its steps as the worker runs them (a
/// request step by its index among the request steps).
pub(super) fn session_steps(phase: &Phase) -> (Vec<(&str, &loadgate_plan::RequestPlan)>, Vec<SessionOp>) {
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
pub(super) fn requests(
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
