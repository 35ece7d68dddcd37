//! A wrk-like driver for the engine, for benchmarks until `loadgate run` wires the engine into the CLI.
//!
//! ```text
//! cargo run --release -p loadgate-engine --example drive -- http://127.0.0.1:8080/ \
//!     [-t THREADS] [--cpus 1,2] [-c CONNECTIONS] [-d 10s | -n REQUESTS] [-R RATE] [--pipeline 16]
//!     [--window] [--batch-reads] [--no-keepalive] [--http2] [--streams N] [--timeout 8s] [--json]
//! ```
//!
//! Prints a short summary; with `--json`, the whole `PhaseMeasurement` instead.

use std::net::ToSocketAddrs;
use std::process::ExitCode;

use loadgate_engine::{run_phase, Control, Phase, StopSignal, Target, WorkerPlan};
use loadgate_model::units::{Duration, Rate};
use loadgate_model::Protocol;
use loadgate_plan::PipelineMode;
use loadgate_plan::{Arrival, ConnectionPolicy, LoadPlan, RequestPlan, Share, StopCondition, WorkerShare};

struct Args {
    url: String,
    threads: usize,
    cpus: Vec<u32>,
    connections: u64,
    stop: StopCondition,
    rate: Option<Rate>,
    pipeline: u32,
    window: bool,
    batch_reads: bool,
    keep_alive: bool,
    /// HTTP/2 with prior knowledge (h2c) and its streams per connection.
    http2: bool,
    streams: u32,
    timeout: Duration,
    json: bool,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        url: String::new(),
        threads: 1,
        cpus: Vec::new(),
        connections: 64,
        stop: StopCondition::Duration { duration: Duration::from_secs(10) },
        rate: None,
        pipeline: 1,
        window: false,
        batch_reads: false,
        keep_alive: true,
        http2: false,
        streams: 1,
        timeout: Duration::from_secs(8),
        json: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "-t" => a.threads = value()?.parse().map_err(|e| format!("-t: {e}"))?,
            "--cpus" => {
                a.cpus = value()?
                    .split(',')
                    .map(|c| c.trim().parse().map_err(|e| format!("--cpus: {e}")))
                    .collect::<Result<_, _>>()?
            }
            "-c" => a.connections = value()?.parse().map_err(|e| format!("-c: {e}"))?,
            "-d" => a.stop = StopCondition::Duration { duration: value()?.parse().map_err(|e| format!("-d: {e:?}"))? },
            "-n" => a.stop = StopCondition::Requests { requests: value()?.parse().map_err(|e| format!("-n: {e}"))? },
            "-R" => a.rate = Some(Rate::from_per_sec(value()?.parse().map_err(|e| format!("-R: {e}"))?)),
            "--pipeline" => a.pipeline = value()?.parse().map_err(|e| format!("--pipeline: {e}"))?,
            "--window" => a.window = true,
            "--batch-reads" => a.batch_reads = true,
            "--no-keepalive" => a.keep_alive = false,
            "--http2" => a.http2 = true,
            "--streams" => a.streams = value()?.parse().map_err(|e| format!("--streams: {e}"))?,
            "--timeout" => a.timeout = value()?.parse().map_err(|e| format!("--timeout: {e:?}"))?,
            "--json" => a.json = true,
            url if !url.starts_with('-') => a.url = url.to_owned(),
            other => return Err(format!("unknown flag {other}")),
        }
    }
    if a.url.is_empty() {
        return Err("usage: drive URL [-t N] [--cpus 1,2] [-c N] [-d 10s | -n N] [-R RATE] [--pipeline N] [--window] [--batch-reads] [--no-keepalive] [--timeout 8s] [--json]".into());
    }
    if !a.cpus.is_empty() {
        a.threads = a.cpus.len();
    }
    Ok(a)
}

fn main() -> ExitCode {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let rest = args.url.strip_prefix("http://").unwrap_or(&args.url);
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let Some(addr) = authority.to_socket_addrs().ok().and_then(|mut a| a.next()) else {
        eprintln!("cannot resolve {authority}");
        return ExitCode::from(2);
    };
    let n = args.threads.max(1) as u64;
    let split = |total: u64, i: u64| total / n + u64::from(i < total % n);
    let requests = match args.stop {
        StopCondition::Requests { requests } => Some(requests),
        StopCondition::Duration { .. } => None,
    };
    let phase = Phase {
        index: 0,
        scenario: "drive".into(),
        name: "drive".into(),
        matrix: vec![],
        gate: true,
        repeat: None,
        start_offset: None,
        duration: match args.stop {
            StopCondition::Duration { duration } => Some(duration),
            StopCondition::Requests { .. } => None,
        },
        cooldown: Duration::ZERO,
        request: RequestPlan {
            method: "GET".into(),
            path: path.into(),
            headers: vec![],
            body: None,
            dynamic: None,
            checks: vec![],
            captures: vec![],
        },
        mix: Vec::new(),
        timeout: args.timeout,
        load: LoadPlan {
            arrival: args.rate.map_or(Arrival::Closed, |rate| Arrival::Constant { rate }),
            stop: args.stop.clone(),
            connections: ConnectionPolicy {
                connections: args.connections,
                pipeline: args.pipeline,
                pipeline_mode: if args.window { PipelineMode::Window } else { PipelineMode::Batch },
                pipeline_reads: if args.batch_reads {
                    loadgate_plan::PipelineReads::Batch
                } else {
                    loadgate_plan::PipelineReads::Each
                },
                keep_alive: args.keep_alive,
                streams: args.streams,
                connect_rate: loadgate_plan::ConnectRate::Auto,
            },
        },
        workers: (0..n)
            .map(|i| WorkerShare {
                worker: i as usize,
                connections: split(args.connections, i),
                requests: requests.map(|r| split(r, i)),
                share: Share { numerator: 1, denominator: n },
                stripe: None,
            })
            .collect(),
        slos: vec![],
        session: Vec::new(),
        checks: Default::default(),
        profile: None,
        capacity: None,
        seed: 0,
    };
    let workers: Vec<WorkerPlan> = (0..n as usize)
        .map(|index| WorkerPlan { index, cpu: args.cpus.get(index).copied(), pacing: loadgate_plan::Pacing::Default })
        .collect();
    let target = Target {
        addr,
        host: authority.to_owned(),
        tls: None,
        protocol: if args.http2 { Protocol::Http2 } else { Protocol::Http1 },
    };
    let result = match run_phase(&phase, &workers, &target, &StopSignal::new(), &mut |_| Control::Continue) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(3);
        }
    };
    if args.json {
        match serde_json::to_string_pretty(&result) {
            Ok(s) => println!("{s}"),
            Err(e) => eprintln!("cannot serialize: {e}"),
        }
    } else {
        let r = &result;
        let p = |q: f64| r.latency.percentile(q).unwrap_or(0) as f64 / 1000.0;
        println!(
            "{} requests in {:.2}s, {:.0} req/s, {} read, {} written",
            r.requests.completed, r.duration, r.throughput, r.bytes.read, r.bytes.written
        );
        println!(
            "latency ms: p50 {:.3} p75 {:.3} p90 {:.3} p99 {:.3} p99.9 {:.3} max {:.3}",
            p(50.0),
            p(75.0),
            p(90.0),
            p(99.0),
            p(99.9),
            r.latency.max_us as f64 / 1000.0
        );
        println!(
            "errors: {:?}; non-2xx {}; connections {:?}; incomplete {} unsent {}",
            r.errors,
            r.status.non_2xx(),
            r.connections,
            r.requests.incomplete,
            r.requests.unsent
        );
        if let (Some(t), Some(a)) = (r.load.target_rate, r.load.achieved_rate) {
            println!("rate: target {t:.1}/s achieved {a:.1}/s");
        }
        for w in &r.workers {
            println!(
                "worker {} cpu {:?}: user {:.3}s sys {:.3}s util {:.0}%",
                w.index,
                w.cpu,
                w.user_seconds,
                w.system_seconds,
                w.utilization * 100.0
            );
        }
        if !r.validity.valid || !r.validity.warnings.is_empty() {
            println!("validity: {:?}", r.validity);
        }
    }
    if result.validity.valid {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(4)
    }
}
