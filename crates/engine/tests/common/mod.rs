//! Purpose-built HTTP/1.1 servers for the truth tests, and hand-built phases.
//!
//! Each server listens on 127.0.0.1:0, serves every connection on its own thread, understands pipelined
//! requests, and counts the requests it answered.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use loadgate_engine::{run_phase, Control, Phase, StopSignal, Target, WorkerPlan};
use loadgate_measure::PhaseMeasurement;
use loadgate_model::units;
use loadgate_plan::PipelineMode;
use loadgate_plan::{
    Arrival, ConnectionPolicy, LoadPlan, MixEntry, RequestPlan, SessionStep, Share, StopCondition, WorkerShare,
};

/// What the server does with one request.
pub enum Reply {
    /// Write these bytes and keep the connection.
    Bytes(Vec<u8>),
    /// Write these pieces one write each (a head and a body apart, as some servers send them), and keep the
    /// connection.
    Pieces(Vec<Vec<u8>>),
    /// Write these bytes, then close the connection.
    BytesThenClose(Vec<u8>),
    /// Close without answering; the request is not counted.
    Close,
    /// Never answer; keep the connection open.
    Hang,
}

pub struct Request {
    pub method: String,
    /// The request target: path and query, as sent.
    pub target: String,
    /// Header names (lowercase) and values, in order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// The request's position across the whole server, from 0.
    pub seq: u64,
    /// The connection it came on, numbered from 0 in accept order.
    pub conn: u64,
}

/// A request a logging server answered: its connection, its target, when it arrived in full and when the server
/// began writing its response.
#[derive(Debug, Clone)]
pub struct Logged {
    pub conn: u64,
    pub target: String,
    pub arrived: Instant,
    pub answered: Instant,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

pub struct Server {
    pub addr: SocketAddr,
    counts: Arc<Counts>,
    pub connections: Arc<AtomicU64>,
    log: Option<Arc<Mutex<Vec<Logged>>>>,
}

impl Server {
    /// Every answered request, in answer order (servers from [`serve_logged`] only).
    pub fn log(&self) -> Vec<Logged> {
        self.log.as_ref().map(|l| l.lock().unwrap().clone()).unwrap_or_default()
    }

    /// The requests answered, once every request the server received has been handled: a client can read the
    /// last response before the server's thread gets to count it. (Waits at most 10 s for that, so a request
    /// that hangs by design does not hang the test.)
    pub fn answered(&self) -> u64 {
        let give_up = Instant::now() + std::time::Duration::from_secs(10);
        let c = &self.counts;
        while c.settled.load(Ordering::SeqCst) < c.seq.load(Ordering::SeqCst) && Instant::now() < give_up {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        c.answered.load(Ordering::SeqCst)
    }

    pub fn target(&self) -> Target {
        Target { addr: self.addr, host: format!("{}", self.addr), tls: None, protocol: loadgate_model::Protocol::Http1 }
    }
}

pub fn ok_body(body: &[u8]) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out
}

/// Starts a server that answers each request with `handler`.
pub fn serve(handler: impl Fn(&Request) -> Reply + Send + Sync + 'static) -> Server {
    serve_with(handler, None)
}

/// [`serve`], also logging when each request arrived and when its response began ([`Server::log`]).
pub fn serve_logged(handler: impl Fn(&Request) -> Reply + Send + Sync + 'static) -> Server {
    serve_with(handler, Some(Arc::new(Mutex::new(Vec::new()))))
}

fn serve_with(
    handler: impl Fn(&Request) -> Reply + Send + Sync + 'static,
    log: Option<Arc<Mutex<Vec<Logged>>>>,
) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let counts = Arc::new(Counts::default());
    let connections = Arc::new(AtomicU64::new(0));
    let handler = Arc::new(handler);
    {
        let counts = counts.clone();
        let connections = connections.clone();
        let log = log.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let conn = connections.fetch_add(1, Ordering::SeqCst);
                let (counts, handler, log) = (counts.clone(), handler.clone(), log.clone());
                std::thread::spawn(move || serve_connection(stream, conn, &*handler, &counts, log.as_deref()));
            }
        });
    }
    Server { addr, counts, connections, log }
}

/// A server's request counters, shared by its connection threads.
#[derive(Default)]
struct Counts {
    answered: AtomicU64,
    /// Requests received (the next request's `seq`).
    seq: AtomicU64,
    /// Requests whose handling is over (answered, failed or dropped).
    settled: AtomicU64,
}

/// Counts a request as settled when its handling ends, however it ends.
struct Settle<'a>(&'a AtomicU64);

impl Drop for Settle<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn serve_connection(
    mut stream: TcpStream,
    conn: u64,
    handler: &(dyn Fn(&Request) -> Reply + Send + Sync),
    counts: &Counts,
    log: Option<&Mutex<Vec<Logged>>>,
) {
    let _ = stream.set_nodelay(true);
    let mut buf: Vec<u8> = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    loop {
        // Answer every complete request in the buffer, in order.
        while let Some((mut req, used)) = parse_request(&buf) {
            buf.drain(..used);
            req.seq = counts.seq.fetch_add(1, Ordering::SeqCst);
            let _settle = Settle(&counts.settled);
            req.conn = conn;
            let arrived = Instant::now();
            match handler(&req) {
                Reply::Bytes(b) => {
                    // Taken before the write: the client cannot see the response earlier, whereas after the
                    // write this thread may be preempted by the client that has already read it.
                    let writing = Instant::now();
                    if stream.write_all(&b).is_err() {
                        return;
                    }
                    if let Some(log) = log {
                        log.lock().unwrap().push(Logged {
                            conn,
                            target: req.target.clone(),
                            arrived,
                            answered: writing,
                        });
                    }
                    counts.answered.fetch_add(1, Ordering::SeqCst);
                }
                Reply::Pieces(pieces) => {
                    for p in &pieces {
                        if stream.write_all(p).is_err() {
                            return;
                        }
                    }
                    counts.answered.fetch_add(1, Ordering::SeqCst);
                }
                Reply::BytesThenClose(b) => {
                    if stream.write_all(&b).is_ok() {
                        counts.answered.fetch_add(1, Ordering::SeqCst);
                    }
                    let _ = stream.shutdown(std::net::Shutdown::Both);
                    return;
                }
                Reply::Close => {
                    let _ = stream.shutdown(std::net::Shutdown::Both);
                    return;
                }
                Reply::Hang => loop {
                    // Read and drop whatever comes until the client goes away.
                    match stream.read(&mut chunk) {
                        Ok(0) | Err(_) => return,
                        Ok(_) => {}
                    }
                },
            }
        }
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

/// A complete request at the start of `buf` and its length (head plus Content-Length body).
fn parse_request(buf: &[u8]) -> Option<(Request, usize)> {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut req = httparse::Request::new(&mut headers);
    let httparse::Status::Complete(head) = req.parse(buf).ok()? else {
        return None;
    };
    let len = req
        .headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("content-length"))
        .and_then(|h| std::str::from_utf8(h.value).ok()?.trim().parse::<usize>().ok())
        .unwrap_or(0);
    if buf.len() < head + len {
        return None;
    }
    let request = Request {
        method: req.method?.to_owned(),
        target: req.path?.to_owned(),
        headers: req
            .headers
            .iter()
            .map(|h| (h.name.to_ascii_lowercase(), String::from_utf8_lossy(h.value).into_owned()))
            .collect(),
        body: buf[head..head + len].to_vec(),
        seq: 0,
        conn: 0,
    };
    Some((request, head + len))
}

/// An address where nothing listens.
pub fn refused_addr() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    drop(l);
    addr
}

/// Shared state for a server that stalls every connection once.
pub struct Stall {
    until: Mutex<Option<Instant>>,
}

impl Stall {
    pub fn new() -> Arc<Self> {
        Arc::new(Stall { until: Mutex::new(None) })
    }

    /// Starts the stall (once) and waits until it is over.
    pub fn start(&self, d: Duration) {
        let mut u = self.until.lock().unwrap();
        if u.is_none() {
            *u = Some(Instant::now() + d);
        }
    }

    pub fn wait(&self) {
        let until = *self.until.lock().unwrap();
        if let Some(t) = until {
            let now = Instant::now();
            if t > now {
                std::thread::sleep(t - now);
            }
        }
    }
}

/// A phase built by hand.
pub struct PhaseBuilder {
    pub arrival: Arrival,
    pub stop: StopCondition,
    pub connections: u64,
    pub pipeline: u32,
    pub mode: PipelineMode,
    pub reads: loadgate_plan::PipelineReads,
    pub keep_alive: bool,
    /// HTTP/2 streams per connection (1 without HTTP/2).
    pub streams: u32,
    pub connect_rate: loadgate_plan::ConnectRate,
    pub pacing: loadgate_plan::Pacing,
    pub workers: usize,
    pub method: String,
    pub timeout: Duration,
    /// The request to send instead of `GET /truth`.
    pub request: Option<RequestPlan>,
    pub mix: Vec<MixEntry>,
    pub seed: u64,
    pub session: Vec<SessionStep>,
}

impl PhaseBuilder {
    pub fn closed(connections: u64) -> Self {
        PhaseBuilder {
            arrival: Arrival::Closed,
            stop: StopCondition::Duration { duration: units::Duration::from_secs(1) },
            connections,
            pipeline: 1,
            mode: PipelineMode::Batch,
            reads: loadgate_plan::PipelineReads::Each,
            keep_alive: true,
            streams: 1,
            connect_rate: loadgate_plan::ConnectRate::Auto,
            pacing: loadgate_plan::Pacing::Default,
            workers: 1,
            method: "GET".into(),
            timeout: Duration::from_secs(5),
            request: None,
            mix: Vec::new(),
            seed: 1,
            session: Vec::new(),
        }
    }

    pub fn open(rate: u64, connections: u64) -> Self {
        PhaseBuilder {
            arrival: Arrival::Constant { rate: units::Rate::from_per_sec(rate) },
            ..Self::closed(connections)
        }
    }

    pub fn duration(mut self, d: Duration) -> Self {
        self.stop = StopCondition::Duration { duration: units::Duration(d) };
        self
    }

    pub fn requests(mut self, n: u64) -> Self {
        self.stop = StopCondition::Requests { requests: n };
        self
    }

    pub fn pipeline(mut self, depth: u32, mode: PipelineMode) -> Self {
        self.pipeline = depth;
        self.mode = mode;
        self
    }

    /// `pipeline_reads: batch`: each pipelined batch read whole.
    pub fn batch_reads(mut self) -> Self {
        self.reads = loadgate_plan::PipelineReads::Batch;
        self
    }

    pub fn streams(mut self, n: u32) -> Self {
        self.streams = n;
        self
    }

    pub fn workers(mut self, n: usize) -> Self {
        self.workers = n;
        self
    }

    pub fn keep_alive(mut self, on: bool) -> Self {
        self.keep_alive = on;
        self
    }

    pub fn connect_rate(mut self, rate: loadgate_plan::ConnectRate) -> Self {
        self.connect_rate = rate;
        self
    }

    pub fn pacing(mut self, pacing: loadgate_plan::Pacing) -> Self {
        self.pacing = pacing;
        self
    }

    pub fn method(mut self, m: &str) -> Self {
        self.method = m.into();
        self
    }

    pub fn request(mut self, r: RequestPlan) -> Self {
        self.request = Some(r);
        self
    }

    /// A weighted mix of named requests.
    pub fn mix(mut self, entries: &[(&str, u32, RequestPlan)]) -> Self {
        self.mix = entries
            .iter()
            .map(|(name, weight, request)| MixEntry { name: (*name).into(), weight: *weight, request: request.clone() })
            .collect();
        self
    }

    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    pub fn timeout(mut self, d: Duration) -> Self {
        self.timeout = d;
        self
    }

    pub fn build(&self) -> (Phase, Vec<WorkerPlan>) {
        let n = self.workers as u64;
        let total_requests = match self.stop {
            StopCondition::Requests { requests } => Some(requests),
            StopCondition::Duration { .. } => None,
        };
        let split = |total: u64, i: u64| total / n + u64::from(i < total % n);
        let shares = (0..n)
            .map(|i| WorkerShare {
                worker: i as usize,
                connections: split(self.connections, i),
                requests: total_requests.map(|t| split(t, i)),
                share: Share { numerator: 1, denominator: n },
                stripe: None,
            })
            .collect();
        let phase = Phase {
            index: 0,
            scenario: "truth".into(),
            name: "truth".into(),
            matrix: vec![],
            gate: true,
            repeat: None,
            start_offset: None,
            duration: match self.stop {
                StopCondition::Duration { duration } => Some(duration),
                StopCondition::Requests { .. } => None,
            },
            cooldown: units::Duration::ZERO,
            request: self.request.clone().or_else(|| self.mix.first().map(|m| m.request.clone())).unwrap_or(
                RequestPlan {
                    method: self.method.clone(),
                    path: "/truth".into(),
                    headers: vec![("User-Agent".into(), "loadgate-test".into())],
                    body: None,
                    dynamic: None,
                    checks: vec![],
                    captures: vec![],
                },
            ),
            mix: self.mix.clone(),
            timeout: units::Duration(self.timeout),
            load: LoadPlan {
                arrival: self.arrival.clone(),
                stop: self.stop.clone(),
                connections: ConnectionPolicy {
                    connections: self.connections,
                    pipeline: self.pipeline,
                    pipeline_mode: self.mode,
                    pipeline_reads: self.reads,
                    keep_alive: self.keep_alive,
                    streams: self.streams,
                    connect_rate: self.connect_rate,
                },
            },
            workers: shares,
            slos: vec![],
            seed: self.seed,
            session: self.session.clone(),
            checks: Default::default(),
            profile: None,
            capacity: None,
        };
        let workers = (0..self.workers).map(|index| WorkerPlan { index, cpu: None, pacing: self.pacing }).collect();
        (phase, workers)
    }

    pub fn run(&self, target: &Target) -> PhaseMeasurement {
        let (phase, workers) = self.build();
        run_phase(&phase, &workers, target, &StopSignal::new(), &mut |_| Control::Continue).unwrap()
    }
}

/// Prints the interesting numbers when a test fails.
pub fn describe(r: &PhaseMeasurement) -> String {
    format!(
        "requests {:?}\nerrors {:?}\nstatus {:?}\nconnections {:?}\nlatency p50 {:?} p99 {:?}\nservice p50 {:?}\nvalidity {:?}\nload {:?}",
        r.requests,
        r.errors,
        r.status,
        r.connections,
        r.latency.percentiles.get("p50"),
        r.latency.percentiles.get("p99"),
        r.service_time.percentiles.get("p50"),
        r.validity,
        r.load
    )
}

impl PhaseBuilder {
    /// The phase run against each of `targets` at once (a duet's lanes): one measurement per target.
    pub fn run_together(&self, targets: &[&Target]) -> Vec<PhaseMeasurement> {
        let (phase, workers) = self.build();
        loadgate_engine::run_phase_together(&phase, &workers, targets, &StopSignal::new(), &mut |_| {}, &mut |_, _| {
            Control::Continue
        })
        .unwrap()
    }
}
