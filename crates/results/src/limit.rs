//! Who limited the run: when an open or ramp load fell short of its rate, whether the generator, the plan or
//! the target held it back, read from the measurements.
//!
//! The rules, in order ([`who_limited`]):
//!
//! 1. **generator**, when the busiest generator worker used [`GENERATOR_SATURATED`] (90%) of its CPU or more:
//!    the generator could not send faster, whatever the target did.
//! 2. **plan** or **target**, when the connections were busy: by Little's law, the time requests spent at the
//!    target (completed requests x mean service time, plus timeouts x the request timeout, plus connect times
//!    without keep-alive) filled at least [`CONNECTIONS_BUSY`] (80%) of the connections' time. An open load sends
//!    a request only on a free connection, so with every connection busy the rate cannot exceed connections /
//!    service time. Then:
//!    - **target** when the target got slower or failed as the load went on, queued the requests, or ran out of
//!      CPU: the median service time of the phase's later half more than [`SERVICE_RISE`] (1.5x, and 200 us or
//!      more) that of its first second; or the phase's median service time [`QUEUED`] (4x, and 1 ms or more)
//!      its fastest, the time requests waited in the target's own queue (a target at its capacity fills it
//!      within milliseconds, before the first second's median is taken, and more connections would only
//!      lengthen it); or errors and non-2xx answers above 1% of the later half and more than twice the earlier
//!      half's; or the target's CPU (when loadgate started it) at 90% or more of the CPUs it may use;
//!    - **plan** otherwise: the target kept its service time, the spec's connection count was too small for the
//!      rate. The verdict names the connection count that would carry it: target rate x mean service time
//!      (Little's law), and half again for variation.
//!
//!    The connections also count as busy when they were busy over the phase's later half (each second's
//!    completed requests x its median service time, at least 80% of the connections' time) while the service
//!    time rose as above, or busy [`QUEUED_BUSY`] (50%) of the whole phase while the target queued the
//!    requests: a target whose queue grew within the phase (a rate a little above its capacity) fills the
//!    connections only in the phase's later part, so the whole phase's share stays low; that is the
//!    **target**'s limit. (Service times are measured from the request's write to the kernel's receive time of
//!    its response, so a generator that falls behind does not lengthen them.)
//! 3. **generator** otherwise: connections were free, the target answered in time, and still the requests were
//!    not sent (the generator was descheduled, or lagged): the send lag says by how much.
//!
//! Only a generator-limited phase is invalid as a measurement (its numbers describe loadgate); a plan- or
//! target-limited one is a valid result about the target at the rate it achieved, which its SLOs judge.

use crate::format;
use crate::model::{LimitCause, Limited, ScenarioResult};

/// A worker using this share of its CPU or more limited the generator.
pub const GENERATOR_SATURATED: f64 = 0.9;
/// Connections busy this share of the time or more: the load was bounded by connections / service time.
pub const CONNECTIONS_BUSY: f64 = 0.8;
/// The later half's median service time over the first second's: the target slowed down.
pub const SERVICE_RISE: f64 = 1.5;
/// The phase's median service time over its fastest (and 1 ms or more above it): requests waited in the target's
/// queue.
pub const QUEUED: f64 = 4.0;
/// With the target queueing, connections busy this share of the phase or more count as busy: they filled as its
/// queue grew.
pub const QUEUED_BUSY: f64 = 0.5;
/// An open load that sent less than this share of its target rate fell short.
pub const RATE_TOLERANCE: f64 = 0.99;

/// What [`who_limited`] knows besides the result.
#[derive(Debug, Clone, Copy, Default)]
pub struct LimitContext {
    /// The per-request timeout, in seconds (a timed-out request held its connection that long).
    pub timeout_secs: f64,
    /// The target's CPU during the phase, when loadgate started it.
    pub target_cpu: Option<TargetCpu>,
}

/// The target's CPU use during a phase.
#[derive(Debug, Clone, Copy)]
pub struct TargetCpu {
    /// The mean over the phase's samples, as a share of one CPU (2.0 = two CPUs busy).
    pub mean: f64,
    /// The CPUs the target may use (its pinning, or the machine's).
    pub cpus: f64,
}

/// Why an open or ramp load fell short of its rate; `None` when it did not (or the load is not open or ramp).
/// See the [module documentation](self).
pub fn who_limited(s: &ScenarioResult, cx: &LimitContext) -> Option<Limited> {
    if !matches!(s.load.model.as_str(), "constant" | "ramp") {
        return None;
    }
    let (target, achieved) = (s.load.target_rate?, s.load.achieved_rate?);
    if !(target > 0.0 && achieved < RATE_TOLERANCE * target) {
        return None;
    }
    let mut evidence = Vec::new();
    let shortfall = format!(
        "sent {} of the {} asked ({:.1}%)",
        format::rate(achieved),
        format::rate(target),
        100.0 * achieved / target
    );

    // 1. A saturated generator worker.
    let busiest = s.workers.iter().max_by(|a, b| a.utilization.total_cmp(&b.utilization));
    if let Some(w) = busiest.filter(|w| w.utilization >= GENERATOR_SATURATED) {
        evidence.push(format!(
            "worker {}{} used {:.0}% of its CPU",
            w.index,
            w.cpu.map(|c| format!(" (CPU {c})")).unwrap_or_default(),
            100.0 * w.utilization
        ));
        evidence.push(send_lag(s));
        return Some(limited(LimitCause::Generator, s, target, achieved, &shortfall, evidence, None));
    }

    // 2. Busy connections: the plan's or the target's limit.
    let connections = slots(s).max(1.0);
    let busy = busy_share(s, cx);
    let service_mean_s = s.service_time.mean_us / 1e6;
    let busy_seconds = s.timeline.iter().filter(|p| p.in_flight.is_some_and(|n| n as f64 >= connections)).count();
    let seconds = s.timeline.iter().filter(|p| p.in_flight.is_some()).count();
    let busy_text = |only: &str| {
        format!(
            "the {} connections were busy {only}{:.0}% of the time (completed requests x mean service time {})",
            format::count(s.connections.planned),
            100.0 * busy.min(1.0),
            format::latency_us(s.service_time.mean_us),
        )
    };
    // A target whose queue grew within the phase fills the connections only in its later part: busy there (by
    // Little's law on the later half's seconds), with the service time risen, it is the target's limit even when
    // the whole phase's share is low.
    let rising = service_trend(s)
        .filter(|(first, later)| *later as f64 > SERVICE_RISE * *first as f64 && later.saturating_sub(*first) >= 200);
    let later_busy = later_busy_share(s);
    let queued = queued_at_target(s);
    let filled_as_queue_grew =
        (rising.is_some() && later_busy >= CONNECTIONS_BUSY) || (queued.is_some() && busy >= QUEUED_BUSY);
    if busy < CONNECTIONS_BUSY && !filled_as_queue_grew {
        // The one-second marks are left out here: they count a request in flight from the moment the worker takes
        // it until the worker reads its answer, so a worker that falls behind (building requests, descheduled)
        // shows every connection in flight while the target is long done with them.
        evidence.push(format!(
            "connections were free: {} (below {:.0}%)",
            busy_text("only "),
            100.0 * CONNECTIONS_BUSY
        ));
        if let Some(w) = busiest {
            evidence.push(format!("the busiest worker used {:.0}% of its CPU", 100.0 * w.utilization));
        }
        evidence.push(send_lag(s));
        return Some(limited(LimitCause::Generator, s, target, achieved, &shortfall, evidence, None));
    }
    if busy < CONNECTIONS_BUSY && rising.is_some() && later_busy >= CONNECTIONS_BUSY {
        evidence.push(format!(
            "the {} connections were busy {:.0}% of the phase's later half (its completed requests x their median \
             service time), as the target's queue grew",
            format::count(s.connections.planned),
            100.0 * later_busy.min(1.0)
        ));
    }
    evidence.push(format!(
        "{}{}",
        busy_text(""),
        if seconds > 0 {
            format!(", all of them at {busy_seconds} of {seconds} one-second marks")
        } else {
            String::new()
        }
    ));
    let mut target_evidence = Vec::new();
    if let Some((first, later)) = rising {
        target_evidence.push(format!(
            "the target's median service time rose from {} in the first second to {} in the later half",
            format::latency(first),
            format::latency(later)
        ));
    }
    if let Some((fastest, median)) = queued {
        target_evidence.push(format!(
            "requests waited at the target: its median service time {} is {:.0}x its fastest {} (a target at its \
             capacity queues them, and more connections would only lengthen the wait)",
            format::latency(median),
            median as f64 / fastest.max(1) as f64,
            format::latency(fastest)
        ));
    }
    if let Some(text) = errors_rising(s) {
        target_evidence.push(text);
    }
    if let Some(cpu) = cx.target_cpu.filter(|c| c.cpus > 0.0 && c.mean >= GENERATOR_SATURATED * c.cpus) {
        target_evidence.push(format!(
            "the target's CPU was {:.0}% busy on average ({:.1} of its {} CPUs)",
            100.0 * cpu.mean / cpu.cpus,
            cpu.mean,
            cpu.cpus
        ));
    }
    if !target_evidence.is_empty() {
        evidence.extend(target_evidence);
        return Some(limited(LimitCause::Target, s, target, achieved, &shortfall, evidence, None));
    }
    // The plan: too few connections for the rate at this service time.
    // Over HTTP/2 each connection carries its streams.
    let per_connection = slots(s) / s.connections.planned.max(1) as f64;
    let needed = (target * service_mean_s / per_connection.max(1.0)).ceil().max(1.0) as u64;
    evidence.push(format!(
        "the target kept its service time: {} connections / {} mean service time carry about {}, below the {} asked",
        format::count(s.connections.planned),
        format::latency_us(s.service_time.mean_us),
        format::rate(connections / service_mean_s.max(1e-9)),
        format::rate(target)
    ));
    Some(limited(LimitCause::Plan, s, target, achieved, &shortfall, evidence, Some(needed)))
}

fn limited(
    cause: LimitCause,
    s: &ScenarioResult,
    target: f64,
    achieved: f64,
    shortfall: &str,
    evidence: Vec<String>,
    needed: Option<u64>,
) -> Limited {
    let message = match cause {
        LimitCause::Generator => format!(
            "the generator limited the rate: {shortfall}; {}. The numbers describe loadgate, not the target: give \
             the generator more CPUs (`hardware.generator`) or a quieter machine",
            evidence.join("; ")
        ),
        LimitCause::Target => format!(
            "the target limited the rate: {shortfall}; {}. A valid result: the target carried {} at these \
             latencies",
            evidence.join("; "),
            format::rate(s.throughput)
        ),
        LimitCause::Plan => format!(
            "the plan's connections limited the rate: {shortfall}; {}. A valid result at the rate achieved; to carry \
             {} the load needs at least {} connections (rate x mean service time), about {} with room for \
             variation",
            evidence.join("; "),
            format::rate(target),
            format::count(needed.unwrap_or(0)),
            format::count(needed.map_or(0, |n| n + n.div_ceil(2)))
        ),
    };
    Limited { cause, target_rate: target, achieved_rate: achieved, message, evidence, connections_needed: needed }
}

/// How many requests the connections carry at once: one each, or over HTTP/2 the streams a server granted each
/// (the streams asked when no server said).
fn slots(s: &ScenarioResult) -> f64 {
    let streams =
        s.http2.as_ref().map_or(1, |h| if h.streams_granted > 0 { h.streams_granted } else { h.streams_asked });
    (s.connections.planned * streams.max(1)) as f64
}

/// The share of the connections' time that requests spent at the target.
fn busy_share(s: &ScenarioResult, cx: &LimitContext) -> f64 {
    let capacity = slots(s) * s.duration;
    if capacity <= 0.0 {
        return 0.0;
    }
    let mut busy = s.requests.completed as f64 * s.service_time.mean_us / 1e6;
    busy += s.errors.timeout as f64 * cx.timeout_secs;
    if !s.load.keep_alive {
        busy += s.connect_time.count as f64 * s.connect_time.mean_us / 1e6;
    }
    busy / capacity
}

/// The share of the connections' time that requests spent at the target over the later half of the phase's
/// seconds: each second's completed requests x its median service time.
fn later_busy_share(s: &ScenarioResult) -> f64 {
    // (seconds the interval covered, completed, median service time); the last interval may be the drain's
    // fraction of a second.
    let mut previous = 0.0;
    let points: Vec<(f64, u64, u64)> = s
        .timeline
        .iter()
        .filter_map(|p| {
            let span = p.t - previous;
            previous = p.t;
            p.service_p50_us.map(|service| (span, p.completed, service))
        })
        .collect();
    if points.len() < 2 || s.connections.planned == 0 {
        return 0.0;
    }
    let later = &points[points.len() / 2..];
    let busy: f64 = later.iter().map(|(_, completed, service)| *completed as f64 * *service as f64 / 1e6).sum();
    let seconds: f64 = later.iter().map(|(span, ..)| span).sum();
    if seconds <= 0.0 {
        return 0.0;
    }
    busy / (slots(s) * seconds)
}

/// The phase's fastest and median service times when the median is [`QUEUED`] times the fastest and 1 ms or more
/// above it: requests waited in the target's queue.
fn queued_at_target(s: &ScenarioResult) -> Option<(u64, u64)> {
    let median = *s.service_time.percentiles.get("p50")?;
    let fastest = s.service_time.min_us;
    (s.service_time.count > 0 && median as f64 >= QUEUED * fastest as f64 && median.saturating_sub(fastest) >= 1000)
        .then_some((fastest, median))
}

/// The first full second's median service time and the median of the later half's seconds.
fn service_trend(s: &ScenarioResult) -> Option<(u64, u64)> {
    let points: Vec<u64> = s.timeline.iter().filter_map(|p| p.service_p50_us).collect();
    if points.len() < 3 {
        return None;
    }
    let mut later: Vec<u64> = points[points.len() / 2..].to_vec();
    later.sort_unstable();
    Some((points[0], later[later.len() / 2]))
}

fn errors_rising(s: &ScenarioResult) -> Option<String> {
    let n = s.timeline.len();
    if n < 2 {
        return None;
    }
    let (early, late) = s.timeline.split_at(n / 2);
    let failed = |ps: &[crate::model::TimelinePoint]| ps.iter().map(|p| p.errors + p.non_2xx).sum::<u64>();
    let answered = |ps: &[crate::model::TimelinePoint]| ps.iter().map(|p| p.completed + p.errors).sum::<u64>();
    let (fe, fl) = (failed(early), failed(late));
    let share = fl as f64 / answered(late).max(1) as f64;
    (share > 0.01 && fl > 2 * fe).then(|| {
        format!(
            "errors and non-2xx answers rose from {} in the first half to {} in the later half ({} of its answers)",
            format::count(fe),
            format::count(fl),
            format::ratio(share)
        )
    })
}

fn send_lag(s: &ScenarioResult) -> String {
    match (s.send_lag.percentiles.get("p50"), s.send_lag.percentiles.get("p99")) {
        (Some(p50), Some(p99)) => format!(
            "requests left {} (p50) and {} (p99) after their intended time",
            format::latency(*p50),
            format::latency(*p99)
        ),
        _ => "no send lag was measured".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture::{exponential_histogram, sample_run};
    use crate::model::{LatencySummary, TimelinePoint};

    /// An open load of 10 s asking `target`/s on `connections`, achieving `achieved`/s at this mean service
    /// time, with per-second service medians and in-flight counts.
    fn open(target: f64, achieved: f64, connections: u64, service_ms: f64, utilization: f64) -> ScenarioResult {
        let mut s = sample_run().scenarios[1].clone();
        s.load.model = "constant".to_owned();
        s.load.keep_alive = true;
        s.load.target_rate = Some(target);
        s.load.achieved_rate = Some(achieved);
        s.duration = 10.0;
        s.connections.planned = connections;
        s.requests.completed = (achieved * 10.0) as u64;
        s.throughput = achieved;
        s.errors = Default::default();
        s.service_time =
            LatencySummary::from_histogram(&exponential_histogram(10_000, service_ms * 1000.0, service_ms * 10.0));
        s.workers.truncate(1);
        s.workers[0].utilization = utilization;
        s.timeline = (1..=10)
            .map(|t| TimelinePoint {
                t: t as f64,
                completed: achieved as u64,
                in_flight: Some(connections),
                service_p50_us: Some((service_ms * 1000.0) as u64),
                ..Default::default()
            })
            .collect();
        s
    }

    #[test]
    fn http2_streams_count_as_room_on_each_connection() {
        // 4 connections of 4 streams each at 50 ms: 320/s at most; 79/s sent of 400/s uses a quarter of them.
        let mut s = open(400.0, 79.0, 4, 50.0, 0.05);
        s.http2 = Some(crate::Http2Stats { streams_asked: 4, streams_granted: 4, ..Default::default() });
        let l = who_limited(&s, &LimitContext::default()).expect("fell short");
        assert_ne!(l.cause, LimitCause::Plan, "{l:#?}");
        // Busy streams at 310/s of 400/s: the plan again, needing 6 connections of 4 streams (400/s x ~50ms / 4).
        let mut s = open(400.0, 310.0, 4, 50.0, 0.05);
        s.http2 = Some(crate::Http2Stats { streams_asked: 4, streams_granted: 4, ..Default::default() });
        for p in &mut s.timeline {
            p.in_flight = Some(16);
        }
        let l = who_limited(&s, &LimitContext::default()).expect("fell short");
        assert_eq!(l.cause, LimitCause::Plan, "{l:#?}");
        assert_eq!(l.connections_needed, Some(6), "{l:#?}");
    }

    #[test]
    fn busy_connections_at_a_steady_service_time_are_the_plans_limit() {
        // 4 connections, 50 ms per request: 80/s at most, 400/s asked.
        let s = open(400.0, 79.0, 4, 50.0, 0.05);
        let l = who_limited(&s, &LimitContext::default()).expect("fell short");
        assert_eq!(l.cause, LimitCause::Plan, "{l:#?}");
        // 400/s x ~50.5ms mean service time.
        assert_eq!(l.connections_needed, Some(21), "{l:#?}");
        assert!(
            l.message.starts_with("the plan's connections limited the rate: sent 79.00/s of the 400/s asked"),
            "{}",
            l.message
        );
        assert!(l.message.contains("at least 21 connections"), "{}", l.message);
        assert!(l.message.contains("all of them at 10 of 10 one-second marks"), "{}", l.message);
    }

    #[test]
    fn a_slowing_target_or_its_cpu_is_the_targets_limit() {
        let mut s = open(1000.0, 190.0, 50, 260.0, 0.1);
        for (i, p) in s.timeline.iter_mut().enumerate() {
            p.service_p50_us = Some(if i == 0 { 5_000 } else { 250_000 });
        }
        let l = who_limited(&s, &LimitContext::default()).unwrap();
        assert_eq!(l.cause, LimitCause::Target, "{l:#?}");
        assert!(l.message.contains("rose from 5.00ms in the first second to 250.0ms"), "{}", l.message);

        let s = open(400.0, 79.0, 4, 50.0, 0.05);
        let cx = LimitContext { timeout_secs: 10.0, target_cpu: Some(TargetCpu { mean: 1.96, cpus: 2.0 }) };
        let l = who_limited(&s, &cx).unwrap();
        assert_eq!(l.cause, LimitCause::Target, "{l:#?}");
        assert!(l.message.contains("98% busy on average (2.0 of its 2 CPUs)"), "{}", l.message);
    }

    #[test]
    fn a_queue_that_grows_within_the_phase_is_the_targets_limit() {
        // 280/s asked of a target that serves 250/s on 64 connections for 4 seconds: its queue grows, its service
        // time with it, and the connections fill only in the later seconds.
        let mut s = open(280.0, 271.0, 64, 160.0, 0.07);
        s.duration = 4.0;
        s.requests.completed = 1000;
        s.service_time = LatencySummary::from_histogram(&exponential_histogram(1000, 100_000.0, 10_000.0));
        s.timeline = [(1.0, 30_000), (2.0, 120_000), (3.0, 240_000), (4.0, 256_000)]
            .into_iter()
            .map(|(t, service)| TimelinePoint {
                t,
                completed: 250,
                in_flight: Some(64),
                service_p50_us: Some(service),
                ..Default::default()
            })
            .collect();
        let l = who_limited(&s, &LimitContext::default()).unwrap();
        assert_eq!(l.cause, LimitCause::Target, "{l:#?}");
        assert!(l.message.contains("busy 97% of the phase's later half"), "{}", l.message);
        assert!(l.message.contains("rose from 30.00ms in the first second to 256.0ms"), "{}", l.message);

        // The same shortfall at a steady service time, free connections: the generator's.
        for p in &mut s.timeline {
            p.service_p50_us = Some(30_000);
        }
        assert_eq!(who_limited(&s, &LimitContext::default()).unwrap().cause, LimitCause::Generator);
    }

    #[test]
    fn a_target_that_queues_the_requests_is_the_targets_limit() {
        // A target serving 4 requests at once, 20 ms each (200/s), asked 1,000/s on 64 connections: its queue is
        // full within milliseconds, so every second's median is already high (no rise), and its median service
        // time is 16x its fastest.
        let mut s = open(1000.0, 196.0, 64, 320.0, 0.03);
        s.service_time = LatencySummary::from_histogram(&exponential_histogram(2000, 20_000.0, 430_000.0));
        let l = who_limited(&s, &LimitContext::default()).unwrap();
        assert_eq!(l.cause, LimitCause::Target, "{l:#?}");
        assert!(l.message.contains("requests waited at the target: its median service time"), "{}", l.message);
        assert!(l.message.contains("x its fastest 20."), "{}", l.message);

        // A one-second capacity step at 250/s on 32 connections: they filled as the queue grew (72% busy over the
        // phase), the worker idle. The target's limit, not the generator's.
        let mut s = open(250.0, 200.0, 32, 115.0, 0.03);
        s.duration = 1.0;
        s.requests.completed = 200;
        s.service_time = LatencySummary::from_histogram(&exponential_histogram(1000, 20_000.0, 95_000.0));
        s.timeline.truncate(1);
        assert!(
            (0.5..0.8).contains(&busy_share(&s, &LimitContext::default())),
            "{}",
            busy_share(&s, &LimitContext::default())
        );
        let l = who_limited(&s, &LimitContext::default()).unwrap();
        assert_eq!(l.cause, LimitCause::Target, "{l:#?}");

        // Free connections (a fifth busy) with the same queueing: the requests were not sent, the generator's.
        let mut s = open(1000.0, 40.0, 64, 320.0, 0.03);
        s.service_time = LatencySummary::from_histogram(&exponential_histogram(1000, 20_000.0, 430_000.0));
        s.requests.completed = 400;
        assert_eq!(who_limited(&s, &LimitContext::default()).unwrap().cause, LimitCause::Generator);
    }

    #[test]
    fn free_connections_or_a_saturated_worker_are_the_generators_limit() {
        // 256 connections, 0.2 ms per request, 30,000/s of 1,000,000/s: the connections were almost idle.
        let s = open(1_000_000.0, 30_000.0, 256, 0.2, 0.6);
        let l = who_limited(&s, &LimitContext::default()).unwrap();
        assert_eq!(l.cause, LimitCause::Generator, "{l:#?}");
        assert!(
            l.message.contains("connections were free: the 256 connections were busy only 2% of the time"),
            "{}",
            l.message
        );
        assert!(!l.message.contains("one-second marks"), "{}", l.message);
        assert!(l.message.contains("The numbers describe loadgate"), "{}", l.message);

        // A saturated worker is the generator's limit even with busy connections.
        let s = open(400.0, 79.0, 4, 50.0, 0.97);
        let l = who_limited(&s, &LimitContext::default()).unwrap();
        assert_eq!(l.cause, LimitCause::Generator);
        assert!(l.message.contains("worker 0 (CPU 1) used 97% of its CPU"), "{}", l.message);
    }

    #[test]
    fn a_load_that_kept_its_rate_or_is_closed_has_no_limit() {
        assert!(who_limited(&open(400.0, 399.0, 4, 5.0, 0.1), &LimitContext::default()).is_none());
        let mut s = open(400.0, 79.0, 4, 50.0, 0.05);
        s.load.model = "closed".to_owned();
        assert!(who_limited(&s, &LimitContext::default()).is_none());
    }
}
