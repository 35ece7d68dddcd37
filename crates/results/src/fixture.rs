//! A realistic, hand-built run for tests, examples and snapshot fixtures: deterministic to the last bucket.
//!
//! [`sample_run`] is a TechEmpower-style suite: a `gate: false` warmup whose SLO would have failed; a pipelined
//! plaintext sweep over 256, 1024 and 4096 connections (the first passes, the second fails `p99 < 100ms`, the
//! third is invalid as a measurement: connections missing and the generator saturated); and a wrk2-style
//! constant-rate PUT scenario with a baseline SLO (no baseline given) and a per-request SLO; and Gatling-style user
//! injection (6,000 users ramped over 30 s, one request each, a slow tail past 800 ms and 1200 ms, some failures).
//! The plaintext sweep's knee is a collapse at 4096 connections (an invalid cell), after a saturation at 1024.
//! Times are fixed.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use loadgate_model::Slo;

use crate::knee::sweeps;
use crate::model::*;
use crate::outcome::outcome;
use crate::verdict::evaluate;
use loadgate_measure::Unjudged;

/// A cell of a `connections` sweep named `sweep[connections=N]`, cut from the sample run's plaintext scenario,
/// with this throughput and a latency distribution of this mean (ms): 90% of the mean as a floor, 10% as the
/// exponential tail, like wrk's tight closed-loop distributions.
pub fn sweep_cell(connections: u32, throughput: f64, mean_ms: f64) -> ScenarioResult {
    let mut s = sample_run().scenarios[1].clone();
    s.name = format!("sweep[connections={connections}]");
    s.scenario = "sweep".to_owned();
    s.matrix = vec![("connections".to_owned(), connections.to_string())];
    s.throughput = throughput;
    s.requests.completed = (throughput * 10.0) as u64;
    s.histograms.latency = exponential_histogram(10_000, mean_ms * 900.0, mean_ms * 100.0);
    s.latency = LatencySummary::from_histogram(&s.histograms.latency);
    s
}

/// The fixed start of the sample run.
pub const STARTED_AT: &str = "2025-01-01T12:00:00Z";
/// The fixed end of the sample run.
pub const FINISHED_AT: &str = "2025-01-01T12:02:05Z";

/// A histogram of `count` latencies following an exponential distribution shifted by `base_us`: the quantile
/// `q` is `base_us + scale_us * -ln(1 - q)`, sampled at 1000 evenly spaced quantiles.
pub fn exponential_histogram(count: u64, base_us: f64, scale_us: f64) -> Histogram<u64> {
    let mut h = new_histogram();
    const POINTS: u64 = 1000;
    if count == 0 {
        return h;
    }
    let per = count / POINTS;
    let extra = count % POINTS;
    for i in 0..POINTS {
        let q = (i as f64 + 0.5) / POINTS as f64;
        let v = (base_us + scale_us * -(1.0 - q).ln()).round().max(1.0) as u64;
        let n = per + u64::from(i < extra);
        if n > 0 {
            let _ = h.record_n(v.min(HISTOGRAM_MAX_US), n);
        }
    }
    h
}

/// The shape of one scenario instance of the sample.
#[derive(Debug, Clone)]
pub struct Shape {
    /// Instance name.
    pub name: &'static str,
    /// Scenario key.
    pub scenario: &'static str,
    /// Matrix cell.
    pub matrix: Vec<(&'static str, &'static str)>,
    /// Gated?
    pub gate: bool,
    /// Seconds.
    pub duration: f64,
    /// Offset from the run's start.
    pub offset: f64,
    /// `closed`, `constant` or `users`.
    pub model: &'static str,
    /// Connections planned.
    pub connections: u64,
    /// Connections opened.
    pub opened: u64,
    /// Pipeline depth.
    pub pipeline: u32,
    /// Target and achieved rate (open loads).
    pub rates: Option<(f64, f64)>,
    /// Completed requests.
    pub completed: u64,
    /// Latency distribution: base and scale in microseconds.
    pub latency: (f64, f64),
    /// Non-2xx (5xx) responses.
    pub server_errors: u64,
    /// Timeouts.
    pub timeouts: u64,
    /// Read errors.
    pub read_errors: u64,
    /// Bytes per response.
    pub response_bytes: u64,
    /// SLOs as written.
    pub slos: Vec<&'static str>,
    /// Validity problems (kind, message).
    pub problems: Vec<(&'static str, &'static str)>,
    /// Validity warnings (kind, message).
    pub warnings: Vec<(&'static str, &'static str)>,
    /// Worker utilization.
    pub utilization: f64,
    /// User injection: users started, finished, and active at the peak (reached in the timeline's last second).
    pub users: Option<(u64, u64, u64)>,
}

/// Builds one scenario instance from its shape, with verdicts evaluated.
pub fn scenario(index: usize, shape: &Shape) -> ScenarioResult {
    let latency = exponential_histogram(shape.completed, shape.latency.0, shape.latency.1);
    let service_time = if shape.rates.is_some() {
        exponential_histogram(shape.completed, shape.latency.0 * 0.8, shape.latency.1 * 0.5)
    } else {
        latency.clone()
    };
    let send_lag =
        if shape.rates.is_some() { exponential_histogram(shape.completed, 20.0, 150.0) } else { new_histogram() };
    let connect_time = exponential_histogram(shape.opened, 40.0, 30.0);
    let errors = ErrorCounts { timeout: shape.timeouts, read: shape.read_errors, ..ErrorCounts::default() };
    let seconds = shape.duration.round() as u64;
    let timeline = (1..=seconds)
        .map(|t| {
            let completed = shape.completed / seconds.max(1);
            TimelinePoint {
                t: t as f64,
                sent: completed,
                completed,
                errors: (shape.timeouts + shape.read_errors) / seconds.max(1),
                non_2xx: shape.server_errors / seconds.max(1),
                target_rate: shape.rates.map(|(target, _)| target),
                p50_us: latency.value_at_quantile(0.5),
                p99_us: latency.value_at_quantile(0.99),
                max_us: latency.max(),
                connections_open: shape.opened.min(shape.connections),
                users_active: shape.users.map(|(_, _, peak)| peak * t / seconds.max(1)),
                in_flight: None,
                service_p50_us: None,
            }
        })
        .collect();
    let workers = vec![WorkerStats {
        spin_seconds: None,
        index: 0,
        cpu: Some(1),
        user_seconds: shape.duration * shape.utilization * 0.4,
        system_seconds: shape.duration * shape.utilization * 0.6,
        utilization: shape.utilization,
        saturated: shape.utilization >= 0.95,
    }];
    let problem = |(kind, message): &(&str, &str)| Problem { kind: (*kind).to_owned(), message: (*message).to_owned() };
    let mut s = ScenarioResult::from(PhaseMeasurement {
        index,
        name: shape.name.to_owned(),
        scenario: shape.scenario.to_owned(),
        matrix: shape.matrix.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
        gate: shape.gate,
        started_at_offset: shape.offset,
        duration: shape.duration,
        load: LoadSummary {
            model: shape.model.to_owned(),
            target_rate: shape.rates.map(|(t, _)| t),
            achieved_rate: shape.rates.map(|(_, a)| a),
            pipeline: shape.pipeline,
            pipeline_reads: None,
            batches_held: None,
            batches_forced: None,
            keep_alive: shape.users.is_none(),
            injection: shape.users.map(|(started, _, _)| format!("ramp {started} over 10s")),
            users_planned: shape.users.map(|(started, _, _)| started),
            users_started: shape.users.map(|(started, _, _)| started),
            users_finished: shape.users.map(|(_, finished, _)| finished),
            users_peak_active: None,
        },
        requests: RequestCounts {
            sent: shape.completed + shape.timeouts + shape.read_errors,
            completed: shape.completed,
            incomplete: 0,
            unsent: 0,
        },
        status: StatusCounts {
            success: shape.completed - shape.server_errors,
            server_error: shape.server_errors,
            ..StatusCounts::default()
        },
        errors,
        connections: ConnectionStats {
            planned: shape.connections,
            peak_open: shape.opened.min(shape.connections),
            opened: shape.opened,
            failed: shape.connections.saturating_sub(shape.opened),
            reconnects: 0,
            opening: None,
        },
        bytes: ByteCounts {
            read: shape.completed * shape.response_bytes,
            written: (shape.completed + shape.timeouts) * 120,
        },
        throughput: shape.completed as f64 / shape.duration,
        latency: LatencySummary::from_histogram(&latency),
        service_time: LatencySummary::from_histogram(&service_time),
        send_lag: LatencySummary::from_histogram(&send_lag),
        connect_time: LatencySummary::from_histogram(&connect_time),
        tls: None,
        http2: None,
        histograms: Histograms { latency, service_time, send_lag, connect_time, tls_handshake: new_histogram() },
        timeline,
        workers,
        validity: Validity {
            valid: shape.problems.is_empty(),
            problems: shape.problems.iter().map(problem).collect(),
            warnings: shape.warnings.iter().map(problem).collect(),
        },
        judged: Unjudged {},
        aborted: None,
        by_request: Vec::new(),
        checked: Default::default(),
        checks: Vec::new(),
        replay: None,
    });
    let slos: Vec<Slo> = shape.slos.iter().filter_map(|t| parse_slo(t)).collect();
    s.judged.verdicts = evaluate(&slos, &s, None);
    s
}

/// Parses an SLO, taking a `{request=NAME}` filter apart by hand so the fixture does not depend on the spec
/// parser's handling of filters.
fn parse_slo(text: &str) -> Option<Slo> {
    match text.split_once("{request=") {
        Some((metric, rest)) => {
            let (name, tail) = rest.split_once('}')?;
            let mut slo = Slo::parse(&format!("{metric}{tail}")).ok()?;
            slo.request = Some(name.to_owned());
            Some(slo)
        }
        None => Slo::parse(text).ok(),
    }
}

/// The shapes of [`sample_run`].
pub fn sample_shapes() -> Vec<Shape> {
    let plaintext = |connections: &'static str, opened: u64, completed: u64, latency: (f64, f64)| Shape {
        name: match connections {
            "256" => "plaintext[connections=256]",
            "1024" => "plaintext[connections=1024]",
            _ => "plaintext[connections=4096]",
        },
        scenario: "plaintext",
        matrix: vec![("connections", connections)],
        gate: true,
        duration: 15.0,
        offset: 0.0,
        model: "closed",
        connections: connections.parse().unwrap_or(0),
        opened,
        pipeline: 16,
        rates: None,
        completed,
        latency,
        server_errors: 0,
        timeouts: 0,
        read_errors: 0,
        response_bytes: 130,
        slos: vec!["p99 < 100ms", "throughput >= 100000/s", "error_rate < 0.1%"],
        problems: vec![],
        warnings: vec![],
        utilization: 0.62,
        users: None,
    };
    let mut shapes = vec![
        Shape {
            name: "warmup",
            scenario: "warmup",
            matrix: vec![],
            gate: false,
            duration: 15.0,
            offset: 0.0,
            model: "closed",
            connections: 512,
            opened: 512,
            pipeline: 1,
            rates: None,
            completed: 1_212_345,
            latency: (1_500.0, 4_000.0),
            server_errors: 0,
            timeouts: 0,
            read_errors: 0,
            response_bytes: 130,
            slos: vec!["p99 < 10ms"],
            problems: vec![],
            warnings: vec![],
            utilization: 0.55,
            users: None,
        },
        plaintext("256", 256, 6_543_210, (1_000.0, 2_000.0)),
        plaintext("1024", 1024, 6_120_000, (5_000.0, 30_000.0)),
        plaintext("4096", 3000, 4_980_000, (9_000.0, 12_000.0)),
        Shape {
            name: "put-constant-rate",
            scenario: "put-constant-rate",
            matrix: vec![],
            gate: true,
            duration: 30.0,
            offset: 0.0,
            model: "constant",
            connections: 16,
            opened: 16,
            pipeline: 1,
            rates: Some((32_000.0, 31_991.33)),
            completed: 959_704,
            latency: (700.0, 3_500.0),
            server_errors: 12,
            timeouts: 3,
            read_errors: 0,
            response_bytes: 67,
            slos: vec![
                "p99 < 60ms",
                "p99.9 < 80ms",
                "p99 <= baseline * 1.10",
                "p99{request=put} < 60ms",
                "error_rate < 0.1%",
            ],
            problems: vec![],
            warnings: vec![("incomplete_requests", "3 requests timed out at the end of the phase")],
            utilization: 0.31,
            users: None,
        },
        Shape {
            name: "browse-users",
            scenario: "browse-users",
            matrix: vec![],
            gate: true,
            duration: 30.0,
            offset: 0.0,
            model: "users",
            connections: 118,
            opened: 6_000,
            pipeline: 1,
            rates: Some((200.0, 200.0)),
            completed: 5_988,
            latency: (150_000.0, 250_000.0),
            server_errors: 40,
            timeouts: 12,
            read_errors: 0,
            response_bytes: 2_048,
            slos: vec!["p99 < 2s", "error_rate < 1%"],
            problems: vec![],
            warnings: vec![],
            utilization: 0.12,
            users: Some((6_000, 6_000, 118)),
        },
    ];
    shapes[3].problems = vec![
        ("connections_missing", "3000 of 4096 connections opened: the target refused 1096"),
        ("generator_saturated", "worker 0 on CPU 1 was 98% busy: the generator, not the target, set the pace"),
    ];
    shapes[3].utilization = 0.98;
    let mut offset = 0.0;
    for s in &mut shapes {
        s.offset = offset;
        offset += s.duration + 1.0;
    }
    shapes
}

/// A complete, realistic run: see the [module documentation](self).
pub fn sample_run() -> RunResults {
    let scenarios: Vec<ScenarioResult> =
        sample_shapes().iter().enumerate().map(|(i, shape)| scenario(i, shape)).collect();
    let mut run = RunResults::new(
        "0.1.0".to_owned(),
        SpecInfo {
            name: "tfb-plaintext".to_owned(),
            description: Some("TechEmpower-style plaintext suite: warmup, then a pipelined concurrency sweep.".to_owned()),
            file: "specs/tfb-plaintext.yaml".to_owned(),
            plan_hash: "sha256:4f1c2b9e7a30d5c8".to_owned(),
            vars: BTreeMap::from([("base_url".to_owned(), "http://127.0.0.1:8080".to_owned())]),
            seed: 42,
            source: None,
        },
        STARTED_AT.to_owned(),
        Machine {
            hostname: Some("bench-01".to_owned()),
            cpu_model: Some("AMD Ryzen 9 7950X 16-Core Processor".to_owned()),
            sockets: Some(1),
            cores_per_socket: Some(16),
            threads_per_core: Some(2),
            online_cpus: Some("0-31".to_owned()),
            logical_cpus: Some(32),
            governor: Some("performance".to_owned()),
            memory_bytes: Some(64 * 1024 * 1024 * 1024),
            kernel: Some("6.8.0-45-generic".to_owned()),
            virtualization: None,
            git_commit: Some("2220db2".to_owned()),
            git_dirty: Some(false),
        },
        Pinning {
            generator_requested: Some("16-31".to_owned()),
            generator_applied: Some("1".to_owned()),
            target_requested: Some("0-15".to_owned()),
            target_applied: Some("0".to_owned()),
            workers: vec![Some(1)],
            warnings: vec!["this machine has 2 CPUs; the generator runs on CPU 1 instead of 16-31, the target on CPU 0 instead of 0-15 (on_mismatch: warn)".to_owned()],
            cpu_map: Vec::new(),
        },
    );
    run.finished_at = Some(FINISHED_AT.to_owned());
    run.target = TargetInfo {
        kind: "command".to_owned(),
        base_url: "http://127.0.0.1:8080".to_owned(),
        pid: Some(4242),
        exited: None,
        samples: vec![ResourceSample { t: 1.0, cpu: 0.97, rss_bytes: 48 * 1024 * 1024 }],
        log_files: vec!["loadgate-out/tfb-plaintext/target.log".to_owned()],
    };
    run.scenarios = scenarios;
    run.outcome = outcome(&run);
    run.sweeps = sweeps(&run);
    run
}

/// [`sample_run`] with its plaintext sweep spoken over h2c: 256 connections granted the 16 streams asked; 1024
/// connections asked 128 streams and were granted 100 (the server's `SETTINGS_MAX_CONCURRENT_STREAMS`), with
/// GOAWAYs, refused and cancelled streams and requests sent again; the 4096 cell had no server SETTINGS.
pub fn sample_http2_run() -> RunResults {
    let mut run = sample_run();
    let http2 = |connections: u64, asked: u64, granted: u64, goaways: u64, resets: &[(&str, u64)], resent: u64| {
        Some(Http2Stats {
            connections,
            streams_asked: asked,
            streams_granted: granted,
            goaways,
            rst_streams: resets.iter().map(|(code, n)| ((*code).to_owned(), *n)).collect(),
            resent,
        })
    };
    for s in &mut run.scenarios {
        s.http2 = match s.name.as_str() {
            "plaintext[connections=256]" => http2(256, 16, 16, 0, &[], 0),
            "plaintext[connections=1024]" => {
                http2(1031, 128, 100, 7, &[("cancel", 2), ("refused_stream", 1_250)], 1_262)
            }
            "plaintext[connections=4096]" => http2(3_112, 16, 0, 0, &[], 0),
            _ => None,
        };
    }
    run
}

/// An A/B run in one job: the scenario `api` at 1,000 requests/s, 6 paired rounds in ABBA order, the candidate
/// (B) about 25% slower in its tail and about 5% in its median. Judged by [`crate::gate::judge`] at 90% confidence:
/// `p99 <= baseline * 1.05` FAILs (the whole interval of the ratio is above 1.05), `p50 <= baseline * 1.05`
/// is INCONCLUSIVE (its interval straddles 1.05) and `error_rate < 0.1%` passes on the merge. Times are fixed.
pub fn sample_ab_run() -> RunResults {
    let side = |round: usize, slow: f64, tail: f64| {
        // The noise of round `round`, shared by both sides of it as on a runner whose neighbours come and go.
        let noise = [1.00, 1.07, 0.96, 1.12, 1.03, 0.98][round];
        let shape = Shape {
            name: "api",
            scenario: "api",
            matrix: vec![],
            gate: true,
            duration: 2.0,
            offset: 2.0 + 4.0 * round as f64 + if slow > 1.0 { 2.0 } else { 0.0 },
            model: "constant",
            connections: 16,
            opened: 16,
            pipeline: 1,
            rates: Some((1_000.0, 999.5)),
            completed: 1_999,
            latency: (2_000.0 * noise * slow, 150.0 * noise * tail),
            server_errors: 0,
            timeouts: 0,
            read_errors: 0,
            response_bytes: 67,
            slos: vec!["p99 <= baseline * 1.05", "p50 <= baseline * 1.05", "error_rate < 0.1%"],
            problems: vec![],
            warnings: vec![],
            utilization: 0.08,
            users: None,
        };
        scenario(0, &shape)
    };
    let slows = [1.00, 1.01, 0.99, 1.00, 1.01, 0.995];
    let a: Vec<ScenarioResult> = (0..6).map(|r| side(r, 1.0, 1.0)).collect();
    let b: Vec<ScenarioResult> = (0..6).map(|r| side(r, slows[r], 2.0)).collect();
    let rounds: Vec<u32> = (1..=6).collect();
    let slos: Vec<Slo> = ["p99 <= baseline * 1.05", "p50 <= baseline * 1.05", "error_rate < 0.1%"]
        .iter()
        .filter_map(|t| parse_slo(t))
        .collect();
    let api = crate::gate::judge(&slos, &b, &rounds, crate::gate::Baseline::Paired(&a), 0.90)
        .expect("the fixture's repetitions merge");
    let mut run = sample_run();
    run.spec.name = "pr-ab".to_owned();
    run.spec.description = Some("The pull request's build against main's, in paired rounds.".to_owned());
    run.spec.file = "specs/pr-ab.yaml".to_owned();
    run.spec.vars = BTreeMap::new();
    run.pinning.warnings.clear();
    run.target.samples.clear();
    run.scenarios = vec![api];
    run.gating = Some(GatingInfo {
        repeat: 6,
        max_repeat: 6,
        looks: vec![6],
        confidence: 0.90,
        on_inconclusive: "inconclusive".to_owned(),
        restart: "never".to_owned(),
        rerun_invalid: 3,
        order: Some("abba".to_owned()),
        candidate: Some("http://127.0.0.1:8081".to_owned()),
        detect: None,
        budget_seconds: None,
    });
    run.outcome = outcome(&run);
    run.sweeps = sweeps(&run);
    run
}

/// A capacity search of a key-value service (`get`, 16 connections, 2 s steps, 5% precision, one confirmation):
/// steps up from 500/s to 4,000/s (which fails, the target holding the rate back), bisects down to 2,375/s (held)
/// and 2,438/s (failed), and confirms 2,375/s. The instance's measurements are the confirmation's; its SLOs are
/// `p99 < 10ms` (each step) and `capacity >= 2000/s` (the search). Times are fixed.
pub fn sample_capacity_run() -> RunResults {
    use crate::model::{CapacityStage::*, StepVerdict::*};
    let shape = Shape {
        name: "get",
        scenario: "get",
        matrix: vec![],
        gate: true,
        duration: 2.0,
        offset: 33.0,
        model: "constant",
        connections: 16,
        opened: 16,
        pipeline: 1,
        rates: Some((2_375.0, 2_374.0)),
        completed: 4_748,
        latency: (1_200.0, 700.0),
        server_errors: 0,
        timeouts: 0,
        read_errors: 0,
        response_bytes: 80,
        slos: vec!["p99 < 10ms", "capacity >= 2000/s"],
        problems: vec![],
        warnings: vec![],
        utilization: 0.21,
        users: None,
    };
    let mut get = scenario(0, &shape);
    let target_limited = "the target limited the rate: sent 2,702/s of the 4,000/s asked (67.5%); the 16 connections \
                          were busy 96% of the time; the target's median service time rose from 2.10ms in the first \
                          second to 5.80ms in the later half. A valid result: the target carried 2,690/s at these \
                          latencies";
    let steps = [
        (StepUp, 500.0, 500.0, 900, 2_100, 0, Pass, vec![]),
        (StepUp, 1_000.0, 1_000.0, 950, 2_400, 0, Pass, vec![]),
        (StepUp, 2_000.0, 1_999.0, 1_100, 4_900, 0, Pass, vec![]),
        (
            StepUp,
            4_000.0,
            2_702.0,
            4_200,
            61_000,
            3,
            Fail,
            vec!["p99 was 61.00ms, threshold < 10ms".to_owned(), target_limited.to_owned()],
        ),
        (Bisect, 3_000.0, 2_988.0, 3_800, 42_000, 0, Fail, vec!["p99 was 42.00ms, threshold < 10ms".to_owned()]),
        (Bisect, 2_500.0, 2_499.0, 2_100, 15_300, 0, Fail, vec!["p99 was 15.30ms, threshold < 10ms".to_owned()]),
        (Bisect, 2_250.0, 2_250.0, 1_200, 6_100, 0, Pass, vec![]),
        (Bisect, 2_375.0, 2_374.0, 1_300, 8_700, 0, Pass, vec![]),
        (Bisect, 2_438.0, 2_437.0, 1_700, 11_900, 0, Fail, vec!["p99 was 11.90ms, threshold < 10ms".to_owned()]),
        (Confirm, 2_375.0, 2_374.0, 1_250, 8_100, 0, Pass, vec![]),
    ];
    let steps: Vec<CapacityStep> = steps
        .into_iter()
        .enumerate()
        .map(|(i, (stage, rate, achieved, p50, p99, errors, verdict, reasons))| CapacityStep {
            step: i as u32 + 1,
            stage,
            rate,
            achieved_rate: achieved,
            throughput: achieved,
            p50_us: Some(p50),
            p99_us: Some(p99),
            errors,
            verdict,
            reasons,
            limited_by: (rate == 4_000.0).then_some(LimitCause::Target),
            started_at_offset: 13.0 + 2.0 * i as f64,
            duration: 2.0,
        })
        .collect();
    get.capacity = Some(Capacity {
        capacity: Some(2_375.0),
        failed_at: Some(2_438.0),
        generator_limit: None,
        confirmed: true,
        stop: CapacityStop::PrecisionReached,
        stop_reason: crate::capacity::stop_reason(
            CapacityStop::PrecisionReached,
            Some(2_375.0),
            Some(2_438.0),
            None,
            0.05,
            600.0,
            None,
        ),
        from: 500.0,
        to: 100_000.0,
        precision: 0.05,
        step_factor: 2.0,
        confirm: 1,
        max_duration: 600.0,
        step_duration: 2.0,
        elapsed: 20.4,
        steps,
    });
    let slos: Vec<Slo> = shape.slos.iter().filter_map(|t| parse_slo(t)).collect();
    get.judged.verdicts = evaluate(&slos, &get, None);
    let mut run = sample_run();
    run.spec.name = "wrk2-entity".to_owned();
    run.spec.description = Some("The GET capacity of a key-value service, found by a search.".to_owned());
    run.spec.file = "specs/wrk2-entity.yaml".to_owned();
    run.spec.vars = BTreeMap::new();
    run.target.samples.clear();
    run.scenarios = vec![get];
    run.outcome = outcome(&run);
    run.sweeps = sweeps(&run);
    run
}

/// A history series for tests of what reads one: `api / get / p99` over 30 runs, 1.00ms for the first 20 and
/// 1.05ms from run 20 on (a regression, p 1e-5), the last run the current one.
pub fn history_series() -> crate::history::HistorySeries {
    use crate::history::{HistoryChangePoint, HistoryPoint, HistorySeries};
    HistorySeries {
        spec: "api".into(),
        instance: "get".into(),
        metric: "p99".into(),
        kind: "latency".into(),
        higher_is_better: false,
        branch: Some("main".into()),
        unbranched: false,
        machine: None,
        design: None,
        points: (0..30)
            .map(|i| HistoryPoint {
                run_id: format!("r{i}"),
                started_at: format!("2026-10-{:02}T00:00:00Z", i + 1),
                commit: Some(format!("{:07x}", 0xabc000 + i)),
                label: None,
                value: if i < 20 { 1000.0 } else { 1050.0 },
                current: i == 29,
                profile: None,
            })
            .collect(),
        change_points: vec![HistoryChangePoint {
            index: 20,
            commit: Some("0abc014".into()),
            started_at: "2026-10-21T00:00:00Z".into(),
            mean_before: 1000.0,
            mean_after: 1050.0,
            relative_change: 0.05,
            p_value: 0.00001,
            regression: true,
        }],
    }
}

/// A run with response checks (`check:`): the scenario `formats` sends a mix of `ok` (`/json`, which holds both
/// its checks) and `bad` (`/xml`, whose `json-type` check fails 100 times in 10,000: the server answered
/// `application/xml`), 99.75% of 40,000 evaluations held, and fails `check_failures{check=json-type} == 0`;
/// `login`, not gated, failed `capture:token` 20 times in 1,000 with no SLO reading checks (the
/// `checks_failed_ungated` warning). Times are fixed.
pub fn sample_checks_run() -> RunResults {
    let mut run = sample_run();
    run.spec.name = "httpbin-checks".to_owned();
    run.spec.file = "specs/httpbin-checks.yaml".to_owned();
    run.spec.description = Some("Response checks against httpbin.".to_owned());
    let base = sample_shapes().into_iter().next().expect("the sample has a warmup");
    let formats = Shape {
        name: "formats",
        scenario: "formats",
        gate: true,
        duration: 10.0,
        connections: 16,
        opened: 16,
        completed: 20_000,
        latency: (800.0, 300.0),
        slos: vec!["check_failures{check=json-type} == 0", "checks > 99.5%", "error_rate < 1%"],
        ..base.clone()
    };
    let login = Shape {
        name: "login",
        scenario: "login",
        gate: false,
        duration: 5.0,
        offset: 10.0,
        connections: 4,
        opened: 4,
        completed: 2_000,
        latency: (1_200.0, 400.0),
        slos: vec!["p99 < 50ms"],
        ..base
    };
    let stats = |request: &str, check: &str, expects: &str, passed: u64, failed: u64| CheckStats {
        request: request.to_owned(),
        check: check.to_owned(),
        expects: expects.to_owned(),
        passed,
        failed,
        examples: Vec::new(),
    };
    let xml = CheckExample {
        status: 200,
        content_type: "application/xml".to_owned(),
        observed: "Content-Type was \"application/xml\"".to_owned(),
        body_start: "<?xml version='1.0' encoding='us-ascii'?>\\n\\n<!--  A SAMPLE set of slides  -->…".to_owned(),
        body_len: 522,
    };
    let mut f = scenario(0, &formats);
    f.checks = vec![
        stats("ok", "status", "status in 200", 10_000, 0),
        stats("ok", "json:$.slideshow.author", "$.slideshow.author equals \"Yours Truly\"", 10_000, 0),
        stats("bad", "status", "status in 200", 10_000, 0),
        CheckStats {
            examples: vec![xml.clone(), xml],
            ..stats("bad", "json-type", "Content-Type matching `^application/json`", 9_900, 100)
        },
    ];
    f.checked = CheckedResponses { responses: 20_000, failed: 100, accepted_non_2xx: 0 };
    let slos: Vec<Slo> = formats.slos.iter().filter_map(|t| parse_slo(t)).collect();
    f.judged.verdicts = evaluate(&slos, &f, None);
    crate::checks::warn_ungated(&mut f, &slos);

    let mut l = scenario(1, &login);
    let unsent = CheckExample {
        status: 0,
        observed: "`token` was not captured: $.json.token not found".to_owned(),
        ..CheckExample::default()
    };
    let captured = CheckExample {
        status: 200,
        content_type: "application/json".to_owned(),
        observed: "$.json.token not found".to_owned(),
        body_start: "{\"args\": {}, \"json\": {\"user\": \"ada\"}}".to_owned(),
        body_len: 38,
    };
    l.checks = vec![
        CheckStats { examples: vec![captured], ..stats("login", "capture:token", "$.json.token exists", 980, 20) },
        CheckStats { examples: vec![unsent], ..stats("me", "status", "status in 200", 980, 20) },
    ];
    l.checked = CheckedResponses { responses: 2_000, failed: 40, accepted_non_2xx: 0 };
    let slos: Vec<Slo> = login.slos.iter().filter_map(|t| parse_slo(t)).collect();
    l.judged.verdicts = evaluate(&slos, &l, None);
    crate::checks::warn_ungated(&mut l, &slos);

    run.scenarios = vec![f, l];
    run.verification = vec![VerifiedScenario { name: "formats".to_owned(), sent: 2, passed: 2, message: None }];
    run.outcome = outcome(&run);
    run.sweeps = sweeps(&run);
    run
}
