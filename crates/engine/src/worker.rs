//! One worker: an OS thread pinned to its CPU, running its own event loop (the `rt` module) with its own
//! connection slots, counters and histograms.
//!
//! Everything per request stays on the worker thread in plain `Cell`/`RefCell` state: no locks, atomics or
//! channels. The worker talks to the aggregating thread once per second (a snapshot of the interval) and once
//! at the end (its totals and full histograms).
//!
//! # The engine loop
//!
//! A worker runs `slots` connection slots and one ticker task. Every slot runs the same loop, whatever the load
//! model: take requests from the worker's request source, write them (all of a batch in one write), read
//! responses (as much as the socket has, into the worker's shared scratch buffer), record, repeat. What varies
//! is data:
//!
//! - the source: closed (a request is always available, up to the slot's quota) or open (requests become due
//!   at the intended times of the worker's arrival schedule, and wait in order when every slot is busy);
//! - how many requests a slot may have in flight (`pipeline`), and when it may add more (window: whenever one
//!   completes; batch: only when all completed);
//! - whether a connection carries many requests (keep-alive) or one (keep-alive off, and user injection where
//!   every user is a new connection with its request);
//! - where the bytes come from: the phase's one static request repeated, or requests built one at a time (a mix,
//!   generated values) into the connection's own reusable buffer as they are taken.
//!
//! The ticker wakes at least every millisecond in open loads (every 10 ms in closed ones): it checks the stop
//! signal and the deadline, wakes idle slots when requests are due, and sends the per-second snapshot. In an
//! open load it also wakes at the intended send time of the next request when a connection is free for it and
//! it is due a millisecond or more after the request taken last: up to 1,000 requests/s per worker every request
//! leaves on time (within the timer's microsecond slack and the wake-up), above it the requests due in each
//! millisecond go together, without more wake-ups than the plain tick would make (a wake-up costs tens of
//! microseconds of CPU in a VM, more than a request). What a request waits for is its send lag, part of its latency.
//! At an open load's deadline the requests due before it still go out (the last millisecond's, handed out at the
//! tick after the deadline) while a connection is free for them; only what then still waits is never sent. In an
//! open keep-alive load without pipelining whose due requests all found a free connection, the ticker also
//! lets the event loop defer socket I/O to its next wake: responses are then read in one pass instead of
//! waking the thread for each, and their completion time is the kernel's receive timestamp, so latency is as
//! exact as before (a read's timestamp is that of its last bytes, hence one response per connection at a
//! time). As soon as requests wait for a connection (or a connect is in progress, a read came without a
//! timestamp, or the load stops), every response is handled as it arrives again.
//!
//! Per-request timeouts use one lazy timer per connection, armed at the oldest in-flight request's deadline
//! and moved only when it fires, so a busy connection touches its timer about once per timeout period.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::{poll_fn, Future};
use std::net::SocketAddr;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::mpsc::{Receiver, Sender};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use loadgate_measure::{new_histogram, ErrorCounts, StatusCounts};

use loadgate_plan::ConnectRate;

use crate::check::cookie::Jar;
use crate::check::Inspector;
use crate::codec::{Completed, Eof, ResponseParser};
use crate::opening::{self, Opened, OpeningCounts};
use crate::request::{Blocked, Built, RequestBytes, UserValues};
use crate::rt::{self, Rt, Task};
use crate::schedule::WorkerSchedule;
use crate::tls::{self, TlsClient, TlsConn, WorkerTls};
use crate::transport::{self, ConnectError, Stream, TcpConn, TlsFailure};
use crate::vars::Vars;
use crate::{EngineError, StopSignal};

mod batch;
mod http2;
pub(crate) mod inspect;
pub(crate) mod tally;

use batch::{Batching, Stall};
pub(crate) use http2::H2Counters;

/// How long past an open load's deadline its last requests (due before the deadline) may still be handed out.
const LAST_SENDS: Duration = Duration::from_millis(5);

/// The shared read buffer of a worker: one read takes as much as the socket holds, up to this.
const SCRATCH_BYTES: usize = 64 * 1024;
const BACKOFF_MIN: Duration = Duration::from_millis(1);
const BACKOFF_MAX: Duration = Duration::from_millis(100);
const SNAPSHOT_EVERY: Duration = Duration::from_secs(1);
/// `pacing: precise`: how long before a timer the worker stops sleeping and polls its sockets until it is due
/// (this VM's wake-ups come tens of microseconds late, sometimes more).
const PRECISE_AHEAD: Duration = Duration::from_micros(200);
/// Closed keep-alive loads over TLS: the most the event loop polls its sockets before it blocks.
const TLS_POLL_MAX: Duration = Duration::from_micros(20);

/// What a worker is asked to do.
#[derive(Debug)]
pub(crate) struct WorkerConfig {
    pub index: usize,
    pub cpu: Option<u32>,
    pub addr: SocketAddr,
    /// HTTPS: the TLS client every connection of the worker uses (the worker takes its own copy).
    pub tls: Option<TlsClient>,
    /// The phase's one static request, repeated; `None` when requests are built one at a time (`built`).
    pub request: Option<Arc<RequestBytes>>,
    /// A mix or generated values: every request is serialized on its own into its connection's buffer.
    pub built: Option<Built>,
    /// The number of mix entries (or session request steps) to measure separately (0 without either).
    pub mix_entries: usize,
    /// User injection with a session: what each user does on its connection, in order (empty otherwise).
    pub session: Vec<SessionOp>,
    /// The session's variables (captured values), by slot: how many.
    pub variables: usize,
    /// Response checks, captures and cookies (`None`: the connections run the plain parser).
    pub checks: Option<Arc<inspect::CheckPlan>>,
    /// Requests in flight per connection (1 without pipelining).
    pub pipeline: usize,
    /// Window mode: add a request as each completes; batch mode: only when all completed.
    pub window: bool,
    /// `pipeline_reads: batch`: a batch is read whole when all of it can have arrived (`worker/batch.rs`).
    pub batch_reads: bool,
    /// `false`: one request per connection.
    pub keep_alive: bool,
    /// HTTP/2 over plain TCP (h2c with prior knowledge); over TLS, HTTP/2 is what ALPN chose (`http2` forces it).
    pub http2: bool,
    /// HTTP/2: concurrent streams per connection asked for (the server's `MAX_CONCURRENT_STREAMS` caps it).
    pub streams: usize,
    pub slots: usize,
    /// Closed loads stopped by a request count: each slot's exact quota.
    pub slot_quotas: Option<Vec<u64>>,
    /// Open loads: the worker's arrival schedule and, when stopped by a request count, its quota.
    pub open: Option<(WorkerSchedule, Option<u64>)>,
    pub timeout: Duration,
    /// How long requests in flight at the stop may still complete.
    pub drain: Duration,
    /// How fast the keep-alive connections open before the start, and this worker's share of that rate.
    pub connect_rate: ConnectRate,
    pub connect_share: f64,
    /// `pacing: precise`: wake ahead of every intended send time and poll until it is due.
    pub precise: bool,
    /// Stop issuing requests this long after the start.
    pub duration: Option<Duration>,
    pub stop: StopSignal,
    /// The opening's progress, shared by every worker of the phase.
    pub live_opening: Arc<opening::LiveOpening>,
}

impl WorkerConfig {
    /// Whether the worker opens its connections before the start (keep-alive slots, no user sessions).
    pub(crate) fn opens_before_start(&self) -> bool {
        self.keep_alive && self.slots > 0 && self.session.is_empty()
    }

    /// What the opening of the worker's connections needs of this configuration.
    fn opening_plan(&self) -> opening::Plan<'_> {
        opening::Plan {
            addr: self.addr,
            slots: self.slots,
            timeout: self.timeout,
            stop: &self.stop,
            live: &self.live_opening,
            rate: self.connect_rate,
            share: self.connect_share,
        }
    }
}

/// A step of a user's session, as the worker runs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SessionOp {
    /// Send a request of this entry of `built` and wait for its response.
    Request(u32),
    /// Pause the user.
    Think(Duration),
}

/// Worker -> aggregator messages.
#[derive(Debug)]
pub(crate) enum Msg {
    /// Pinned, with its runtime, its connections opened (what the opening did).
    Ready(Box<OpeningCounts>),
    Failed(EngineError),
    Interval(usize, Box<Snapshot>),
    Done(usize, Box<WorkerFinal>),
}

/// One interval of one worker (deltas), or the partial interval at its end.
#[derive(Debug)]
pub(crate) struct Snapshot {
    pub interval: u64,
    pub sent: u64,
    pub completed: u64,
    pub errors: u64,
    pub non_2xx: u64,
    pub latency: Histogram<u64>,
    /// Service times of the interval's completions (open loads; empty otherwise).
    pub service_time: Histogram<u64>,
    pub connections_open: u64,
    /// The most requests in flight (or users active: in flight, waiting for their connection or thinking) at any
    /// moment of the interval, counted at each change, not sampled.
    pub in_flight: u64,
    /// A whole second (the worker ran through it), not the worker's final partial one.
    pub full: bool,
    /// The interval's failed requests by kind and complete responses by status class (for live export).
    pub error_kinds: ErrorCounts,
    pub status: StatusCounts,
    /// The interval's send lags (open loads; empty otherwise).
    pub send_lag: Histogram<u64>,
    /// The worker's counters since the phase's start (for checkpoints of a phase in progress).
    pub totals: Counters,
}

/// The failed requests counted since `last`, by kind.
fn error_delta(now: &ErrorCounts, last: &ErrorCounts) -> ErrorCounts {
    ErrorCounts {
        connect: now.connect.saturating_sub(last.connect),
        read: now.read.saturating_sub(last.read),
        write: now.write.saturating_sub(last.write),
        timeout: now.timeout.saturating_sub(last.timeout),
        protocol: now.protocol.saturating_sub(last.protocol),
        missing_value: now.missing_value.saturating_sub(last.missing_value),
    }
}

/// The complete responses counted since `last`, by status class.
fn status_delta(now: &StatusCounts, last: &StatusCounts) -> StatusCounts {
    StatusCounts {
        informational: now.informational.saturating_sub(last.informational),
        success: now.success.saturating_sub(last.success),
        redirection: now.redirection.saturating_sub(last.redirection),
        client_error: now.client_error.saturating_sub(last.client_error),
        server_error: now.server_error.saturating_sub(last.server_error),
    }
}

/// Everything a worker measured.
#[derive(Debug)]
pub(crate) struct WorkerFinal {
    pub counters: Counters,
    pub latency: Histogram<u64>,
    pub service_time: Histogram<u64>,
    pub send_lag: Histogram<u64>,
    pub connect_time: Histogram<u64>,
    pub tls_handshake: Histogram<u64>,
    pub tls: TlsCounters,
    pub peak_open: u64,
    /// The most users active at once on this worker (in flight, waiting for their connection or thinking).
    pub peak_active: u64,
    /// Slots that opened a connection at least once.
    pub slots_connected: u64,
    /// Slots that had anything to do.
    pub slots_expected: u64,
    pub incomplete: u64,
    pub unsent: u64,
    /// When issuing stopped (deadline, stop signal, or the work ran out).
    pub stop_at: Instant,
    pub end: Instant,
    pub user_seconds: f64,
    pub system_seconds: f64,
    /// `pacing: precise`: the time spent polling for the next due time.
    pub spin_seconds: Option<f64>,
    /// Per mix entry, in the mix's order (empty without a mix).
    pub by_entry: Vec<EntryStats>,
    /// A connection read a pipelined batch whole (`pipeline_reads: batch` took effect).
    pub batches_read_whole: bool,
    /// Response checks' counts (phases with checks or captures).
    pub checks: Option<tally::CheckTally>,
}

/// The measurements of one mix entry on one worker.
#[derive(Debug)]
pub(crate) struct EntryStats {
    pub sent: u64,
    pub completed: u64,
    pub status: StatusCounts,
    pub errors: ErrorCounts,
    pub latency: Histogram<u64>,
}

impl EntryStats {
    fn new() -> Self {
        EntryStats {
            sent: 0,
            completed: 0,
            status: StatusCounts::default(),
            errors: ErrorCounts::default(),
            latency: new_histogram(),
        }
    }
}

/// TLS handshakes and failures of one worker.
#[derive(Debug, Default, Clone)]
pub(crate) struct TlsCounters {
    pub handshakes: u64,
    pub resumed: u64,
    pub tls13: u64,
    pub tls12: u64,
    pub errors: loadgate_measure::TlsErrorCounts,
    pub first_error: Option<String>,
}

impl TlsCounters {
    fn failed(&mut self, f: TlsFailure) {
        self.errors.count(f.kind);
        if self.first_error.is_none() {
            self.first_error = Some(f.message);
        }
    }
}

#[derive(Debug, Default, Clone)]
pub(crate) struct Counters {
    pub sent: u64,
    pub completed: u64,
    pub status: StatusCounts,
    pub errors: ErrorCounts,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub opened: u64,
    /// Connections that failed: the connect failed, or the server closed or reset the connection before
    /// answering anything on it.
    pub connect_failed: u64,
    pub reconnects: u64,
    pub address_unavailable: u64,
    /// The first connect error, in words.
    pub first_connect_error: Option<String>,
    /// HTTP/2 connections, streams and what the servers said.
    pub http2: http2::H2Counters,
    /// Sessions only: users that started (took their first request) and users whose session ended (its last
    /// step done, a request failed, or the connection closed).
    pub users_started: u64,
    pub users_finished: u64,
    /// `pipeline_reads: batch`: batches written with their reads held back for the whole batch, and those of them
    /// that never reached their mark and were read by force.
    pub batches_held: u64,
    pub batches_forced: u64,
}

impl Counters {
    fn non_2xx(&self) -> u64 {
        self.status.non_2xx()
    }
}

/// Starts a worker thread. It pins itself, builds its runtime, reports `Ready`, then waits for the start instant.
pub(crate) fn spawn(
    cfg: WorkerConfig,
    tx: Sender<Msg>,
) -> std::io::Result<(std::thread::JoinHandle<()>, Sender<Instant>)> {
    let (start_tx, start_rx) = std::sync::mpsc::channel();
    let handle = std::thread::Builder::new()
        .name(format!("loadgate-worker-{}", cfg.index))
        .spawn(move || worker_thread(cfg, tx, start_rx))?;
    Ok((handle, start_tx))
}

fn worker_thread(cfg: WorkerConfig, tx: Sender<Msg>, start_rx: Receiver<Instant>) {
    let index = cfg.index;
    if let Some(cpu) = cfg.cpu {
        if let Err(source) = crate::sys::pin_current_thread(cpu) {
            let _ = tx.send(Msg::Failed(EngineError::Pin { worker: index, cpu, source }));
            return;
        }
    }
    // The pacer's timers fire within a microsecond of the intended send time (the kernel's default slack is 50).
    crate::sys::set_timer_slack(1_000);
    let rt = match Rt::new(cfg.slots + 1) {
        Ok(rt) => rt,
        Err(source) => {
            let _ = tx.send(Msg::Failed(EngineError::Runtime { worker: index, source }));
            return;
        }
    };
    // Keep-alive connections open before the start, paced, and measured apart from the load.
    let opened = cfg.opens_before_start().then(|| opening::open_all(&rt, cfg.opening_plan()));
    let counts = opened.as_ref().map(|o| o.counts.clone()).unwrap_or_default();
    if tx.send(Msg::Ready(Box::new(counts))).is_err() {
        return;
    }
    let Ok(start) = start_rx.recv() else { return };
    if cfg.precise {
        rt.spin_ahead(PRECISE_AHEAD);
    }
    // A closed keep-alive load over TLS against a server that is the bottleneck: a generator that sleeps
    // between responses must be woken by an interrupt from the server's CPU for each, which in a VM costs that
    // CPU (and the generator's) more than polling for a few microseconds (`docs/benchmarks.md`, issue 13).
    // Measured no better for plain HTTP and worse for pipelining and HTTP/2, whose responses come in batches.
    if cfg.open.is_none() && cfg.keep_alive && cfg.tls.is_some() && !cfg.http2 && cfg.pipeline == 1 {
        rt.poll_before_block(TLS_POLL_MAX);
    }
    let (user0, sys0) = crate::sys::thread_cpu_seconds();
    let ctx = Rc::new(Ctx::new(cfg, start, rt, opened));
    // Task 0 is the ticker; task `1 + i` is slot `i`.
    let quotas = ctx.cfg.slot_quotas.clone();
    ctx.live_slots.set(ctx.cfg.slots);
    if ctx.cfg.slots == 0 {
        ctx.stop_at.set(Some(Instant::now()));
    }
    let mut tasks: Vec<Task<'_>> = Vec::with_capacity(ctx.cfg.slots + 1);
    tasks.push(Box::pin(run(ctx.clone(), tx.clone())));
    for slot in 0..ctx.cfg.slots {
        let quota = quotas.as_ref().map(|q| q.get(slot).copied().unwrap_or(0));
        tasks.push(Box::pin(slot_main(ctx.clone(), slot, quota)));
    }
    ctx.rt.run(tasks);
    let mut fin = ctx.finish();
    drop(ctx);
    let (user1, sys1) = crate::sys::thread_cpu_seconds();
    fin.user_seconds = (user1 - user0).max(0.0);
    fin.system_seconds = (sys1 - sys0).max(0.0);
    let _ = tx.send(Msg::Done(index, Box::new(fin)));
}

/// The worker's shared state, owned by its thread.
struct Ctx {
    rt: Rt,
    cfg: WorkerConfig,
    start: Instant,
    deadline: Option<Instant>,
    stopping: Cell<bool>,
    stop_at: Cell<Option<Instant>>,
    live_slots: Cell<usize>,
    main_waker: RefCell<Option<Waker>>,
    stats: RefCell<Stats>,
    scratch: RefCell<Box<[u8]>>,
    open: Option<RefCell<OpenSource>>,
    /// Slots waiting for an open-loop request to become due, in the order they started waiting.
    idle: RefCell<VecDeque<(usize, Waker)>>,
    idle_flag: RefCell<Vec<bool>>,
    open_loop: bool,
    /// Requests built one at a time (taken from the config).
    built: Option<RefCell<Built>>,
    /// Per mix entry of `built`: the method is HEAD.
    heads: Box<[bool]>,
    /// HTTPS: the worker's TLS client (its own session cache).
    tls: Option<WorkerTls>,
    /// Per slot: the connection opened before the start, taken by the slot's first connect.
    pre_opened: RefCell<Vec<Option<TcpConn>>>,
    /// Connections read their batches whole (`pipeline_reads: batch`, `worker/batch.rs`): a closed keep-alive
    /// HTTP/1.1 load pipelined in batches.
    batching: bool,
    /// Per slot: when its batch, held back by a low-water mark, is read by force, or that it was.
    stall: Box<[Cell<Stall>]>,
    /// A connection held its reads back for a whole batch.
    held: Cell<bool>,
    /// Phases with checks: the worker's regex caches, per entry.
    caches: RefCell<Option<inspect::WorkerCaches>>,
}

struct Stats {
    c: Counters,
    latency: Histogram<u64>,
    service_time: Histogram<u64>,
    send_lag: Histogram<u64>,
    connect_time: Histogram<u64>,
    tls_handshake: Histogram<u64>,
    tls: TlsCounters,
    interval: Histogram<u64>,
    /// The interval's service times (open loads), for the timeline.
    interval_service: Histogram<u64>,
    /// The interval's send lags (open loads), added to `send_lag` at each snapshot.
    interval_send_lag: Histogram<u64>,
    /// Requests written whose outcome is not known yet.
    in_flight: u64,
    /// Requests taken from the source that wait for their connection (keep-alive off).
    acquired_unsent: u64,
    /// Session users in a think time (active users with nothing in flight).
    thinking: u64,
    conns_open: u64,
    peak_open: u64,
    /// The most connections open at once during the current snapshot interval.
    interval_peak_open: u64,
    /// The most users active at once (in flight + waiting for a connection + thinking): over the phase, and over
    /// the current snapshot interval. Active users only grow when one is acquired, so that is where they count.
    peak_active: u64,
    interval_peak_active: u64,
    slots_connected: u64,
    /// Per mix entry (empty without a mix).
    by_entry: Vec<EntryStats>,
    /// Response checks' counts (phases with checks or captures).
    checks: Option<tally::CheckTally>,
}

impl Stats {
    fn active(&self) -> u64 {
        self.in_flight + self.acquired_unsent + self.thinking
    }

    /// A user (or a request of a connection-per-request load) was taken: the active count may peak here.
    fn note_active(&mut self) {
        let active = self.active();
        self.peak_active = self.peak_active.max(active);
        self.interval_peak_active = self.interval_peak_active.max(active);
    }

    /// The entry's measurements, when the phase has a mix.
    fn entry(&mut self, entry: u32) -> Option<&mut EntryStats> {
        self.by_entry.get_mut(entry as usize)
    }
}

struct OpenSource {
    sched: WorkerSchedule,
    next_j: u64,
    next_at: Option<Instant>,
    quota: Option<u64>,
    /// Requests given back by a connection the server closed before answering them, with their intended times.
    retry: VecDeque<Instant>,
    start: Instant,
    /// The intended time of the request last taken from the schedule.
    last_taken: Option<Instant>,
}

impl OpenSource {
    fn new(sched: WorkerSchedule, quota: Option<u64>, start: Instant) -> Self {
        let mut s =
            OpenSource { sched, next_j: 0, next_at: None, quota, retry: VecDeque::new(), start, last_taken: None };
        s.advance();
        s
    }

    fn advance(&mut self) {
        self.next_at = self
            .sched
            .time_of(self.next_j)
            .and_then(|secs| Duration::try_from_secs_f64(secs).ok())
            .and_then(|d| self.start.checked_add(d));
    }

    fn take(&mut self, now: Instant, deadline: Option<Instant>) -> Option<Instant> {
        if let Some(t) = self.retry.pop_front() {
            return Some(t);
        }
        let t = self.next_at?;
        if t > now || deadline.is_some_and(|d| t >= d) || self.quota == Some(0) {
            return None;
        }
        if let Some(q) = &mut self.quota {
            *q -= 1;
        }
        self.next_j += 1;
        self.advance();
        self.last_taken = Some(t);
        Some(t)
    }

    /// The next request's intended time, when it is due `gap` or more after the request taken last (and no
    /// request given back waits, which the tick takes at once).
    fn paced(&self, gap: Duration) -> Option<Instant> {
        if !self.retry.is_empty() {
            return None;
        }
        self.next_at.filter(|&t| self.last_taken.is_none_or(|last| t >= last + gap))
    }

    /// Nothing more will ever become due.
    fn exhausted(&self, deadline: Option<Instant>) -> bool {
        self.retry.is_empty()
            && (self.quota == Some(0) || self.next_at.is_none_or(|t| deadline.is_some_and(|d| t >= d)))
    }

    /// Requests due now (at most `cap`).
    fn due_count(&self, now: Instant, deadline: Option<Instant>, cap: usize) -> usize {
        let mut n = self.retry.len() as u64;
        if self.quota != Some(0) {
            let until = deadline.map_or(now, |d| now.min(d));
            let secs = until.saturating_duration_since(self.start).as_secs_f64();
            let mut due = self.sched.due_before(secs).saturating_sub(self.next_j);
            if due == 0 && self.next_at.is_some_and(|t| t <= now && deadline.is_none_or(|d| t < d)) {
                due = 1;
            }
            n += self.quota.map_or(due, |q| due.min(q));
        }
        usize::try_from(n).unwrap_or(usize::MAX).min(cap)
    }

    /// Requests the schedule wanted sent before `until` that were never taken.
    fn backlog(&self, until: Instant) -> u64 {
        if self.quota == Some(0) {
            return self.retry.len() as u64;
        }
        let secs = until.saturating_duration_since(self.start).as_secs_f64();
        let due = self.sched.due_before(secs).saturating_sub(self.next_j);
        self.retry.len() as u64 + self.quota.map_or(due, |q| due.min(q))
    }

    /// A request-count run lost a request to a failed connect: use it up so that the run still ends.
    fn forfeit(&mut self) {
        if let Some(q) = &mut self.quota {
            if *q > 0 {
                *q -= 1;
                self.next_j += 1;
                self.advance();
            }
        }
    }
}

enum Acquired {
    Got(usize),
    /// Nothing due yet.
    Wait,
    /// Nothing more for this slot.
    Done,
}

impl Ctx {
    fn new(mut cfg: WorkerConfig, start: Instant, rt: Rt, opened: Option<Opened>) -> Self {
        let (pre_opened, opening_connects) = match opened {
            Some(o) => (o.conns, o.connect_time),
            None => (Vec::new(), new_histogram()),
        };
        let deadline = cfg.duration.and_then(|d| start.checked_add(d));
        let open = cfg.open.clone().map(|(sched, quota)| RefCell::new(OpenSource::new(sched, quota, start)));
        let stats = Stats {
            c: Counters::default(),
            latency: new_histogram(),
            service_time: new_histogram(),
            send_lag: new_histogram(),
            connect_time: opening_connects,
            tls_handshake: new_histogram(),
            tls: TlsCounters::default(),
            interval: new_histogram(),
            interval_service: new_histogram(),
            interval_send_lag: new_histogram(),
            in_flight: 0,
            acquired_unsent: 0,
            thinking: 0,
            conns_open: 0,
            interval_peak_open: 0,
            peak_open: 0,
            peak_active: 0,
            interval_peak_active: 0,
            slots_connected: 0,
            by_entry: (0..cfg.mix_entries).map(|_| EntryStats::new()).collect(),
            checks: cfg.checks.as_ref().map(|p| tally::CheckTally::new(&p.counts())),
        };
        let built = cfg.built.take();
        let heads = built.as_ref().map(Built::heads).unwrap_or_default().into_boxed_slice();
        let slots = cfg.slots;
        let tls = cfg.tls.as_ref().map(TlsClient::for_worker);
        let batching = cfg.batch_reads
            && open.is_none()
            && cfg.keep_alive
            && cfg.pipeline > 1
            && !cfg.window
            && cfg.session.is_empty()
            && !cfg.http2;
        Ctx {
            tls,
            pre_opened: RefCell::new(pre_opened),
            batching,
            stall: (0..slots).map(|_| Cell::new(Stall::None)).collect(),
            held: Cell::new(false),
            caches: RefCell::new(cfg.checks.as_ref().map(|p| p.caches())),
            rt,
            deadline,
            start,
            stopping: Cell::new(false),
            stop_at: Cell::new(None),
            live_slots: Cell::new(0),
            main_waker: RefCell::new(None),
            stats: RefCell::new(stats),
            scratch: RefCell::new(vec![0u8; SCRATCH_BYTES].into_boxed_slice()),
            open_loop: open.is_some(),
            open,
            idle: RefCell::new(VecDeque::new()),
            idle_flag: RefCell::new(vec![false; slots]),
            built: built.map(RefCell::new),
            heads,
            cfg,
        }
    }

    fn begin_stop(&self, at: Instant) {
        if self.stopping.replace(true) {
            return;
        }
        self.stop_at.set(Some(at));
        let idle = std::mem::take(&mut *self.idle.borrow_mut());
        self.idle_flag.borrow_mut().fill(false);
        for (_, waker) in idle {
            waker.wake();
        }
    }

    /// Reads by force the batches held back by a low-water mark past their time (`None`: every one): their
    /// slots find their sockets readable. Whether any was.
    fn force_stalled(&self, now: Option<Instant>) -> bool {
        let mut any = false;
        for (i, stall) in self.stall.iter().enumerate() {
            if matches!(stall.get(), Stall::At(t) if now.is_none_or(|now| now >= t)) {
                stall.set(Stall::Forced);
                self.rt.force_readable(1 + i as rt::TaskId);
                any = true;
            }
        }
        any
    }

    /// Takes up to `room` requests for a slot, calling `push(intended)` for each.
    fn acquire(&self, quota: &mut Option<u64>, room: usize, now: Instant, mut push: impl FnMut(Instant)) -> Acquired {
        if self.stopping.get() {
            return Acquired::Done;
        }
        // A closed load stops issuing at the deadline; an open one still sends what was due before it (below).
        if let Some(d) = self.deadline.filter(|d| now >= *d && self.open.is_none()) {
            self.begin_stop(d);
            return Acquired::Done;
        }
        match &self.open {
            None => {
                let n = quota.map_or(room, |q| room.min(usize::try_from(q).unwrap_or(usize::MAX)));
                if n == 0 {
                    return Acquired::Done;
                }
                if let Some(q) = quota {
                    *q -= n as u64;
                }
                for _ in 0..n {
                    push(now);
                }
                Acquired::Got(n)
            }
            Some(src) => {
                let mut src = src.borrow_mut();
                let mut n = 0;
                while n < room {
                    let Some(t) = src.take(now, self.deadline) else {
                        break;
                    };
                    push(t);
                    n += 1;
                }
                if n > 0 {
                    Acquired::Got(n)
                } else if let Some(d) = self.deadline.filter(|d| now >= *d) {
                    drop(src);
                    self.begin_stop(d);
                    Acquired::Done
                } else if src.exhausted(self.deadline) {
                    Acquired::Done
                } else {
                    Acquired::Wait
                }
            }
        }
    }

    /// Whether a slot has anything left to do (without taking it).
    fn has_more(&self, quota: &Option<u64>) -> bool {
        if self.stopping.get() || *quota == Some(0) {
            return false;
        }
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            return false;
        }
        self.open.as_ref().is_none_or(|src| !src.borrow().exhausted(self.deadline))
    }

    /// Serializes the next built request into `out`; returns its mix entry.
    fn build(&self, out: &mut Vec<u8>) -> u32 {
        self.built.as_ref().map_or(0, |b| b.borrow_mut().next(out))
    }

    /// Serializes the request of `entry` (a session step) into `out`, with the user's variables.
    fn build_entry(&self, entry: u32, user: UserValues<'_>, out: &mut Vec<u8>) {
        if let Some(b) = &self.built {
            b.borrow_mut().next_of(entry, user, out);
        }
    }

    /// Whether a session step cannot be sent with the user's variables.
    fn blocked(&self, entry: u32, vars: Option<&Vars>) -> Option<Blocked> {
        let (b, vars) = (self.built.as_ref()?, vars?);
        b.borrow().blocked(entry, vars)
    }

    /// The session's request step after step `after` (or its first with `None`), and the think time before it.
    /// `None` for the step when the session has no more requests (the think time then ends it).
    fn next_step(&self, after: Option<usize>) -> (Option<(usize, u32)>, Duration) {
        let from = after.map_or(0, |a| a + 1);
        let mut think = Duration::ZERO;
        for (i, op) in self.cfg.session.iter().enumerate().skip(from) {
            match *op {
                SessionOp::Think(d) => think += d,
                SessionOp::Request(entry) => return (Some((i, entry)), think),
            }
        }
        (None, think)
    }

    /// Whether the response to a request of `entry` has no body (the request was HEAD).
    fn is_head(&self, entry: Option<u32>) -> bool {
        match &self.cfg.request {
            Some(bytes) => bytes.head,
            None => entry.and_then(|e| self.heads.get(e as usize).copied()).unwrap_or(false),
        }
    }

    /// The intended send time of an open load's next request, when an idle connection waits for it and the
    /// request taken last was intended at least `gap` earlier: the pacer then wakes at that moment rather than
    /// at its next tick. (Where requests are due more often, the tick takes them together.)
    fn pace_at(&self, gap: Duration) -> Option<Instant> {
        if self.stopping.get() || self.idle.borrow().is_empty() {
            return None;
        }
        self.open.as_ref()?.borrow().paced(gap)
    }

    fn wait_for_work(&self, slot: usize, cx: &Context<'_>) {
        let mut flags = self.idle_flag.borrow_mut();
        if let Some(flag) = flags.get_mut(slot) {
            if !*flag {
                *flag = true;
                let mut idle = self.idle.borrow_mut();
                idle.push_back((slot, cx.waker().clone()));
                // The pacer sleeps to its tick while no connection is free: with one free now, it wakes to
                // compute the next request's send time.
                if idle.len() == 1 && self.open.is_some() {
                    if let Some(w) = self.main_waker.borrow().as_ref() {
                        w.wake_by_ref();
                    }
                }
            }
        }
    }

    fn wake_idle(&self, n: usize) {
        for _ in 0..n {
            let Some((slot, waker)) = self.idle.borrow_mut().pop_front() else {
                break;
            };
            if let Some(flag) = self.idle_flag.borrow_mut().get_mut(slot) {
                *flag = false;
            }
            waker.wake();
        }
    }

    fn slot_ended(&self) {
        let live = self.live_slots.get().saturating_sub(1);
        self.live_slots.set(live);
        if live == 0 {
            if self.stop_at.get().is_none() {
                self.stop_at.set(Some(Instant::now()));
            }
            if let Some(w) = self.main_waker.borrow_mut().take() {
                w.wake();
            }
        }
    }

    /// The interval's measurements; its latencies and service times join the phase's totals here (a response is
    /// recorded once, in its interval, and the intervals are added once a second: histograms merge by adding).
    fn snapshot(&self, interval: u64, full: bool, last: &mut Counters) -> Snapshot {
        let mut guard = self.stats.borrow_mut();
        let stats = &mut *guard;
        let c = stats.c.clone();
        add_into(&mut stats.latency, &stats.interval);
        let latency = std::mem::replace(&mut stats.interval, new_histogram());
        let service_time = if stats.interval_service.is_empty() {
            new_histogram()
        } else {
            add_into(&mut stats.service_time, &stats.interval_service);
            std::mem::replace(&mut stats.interval_service, new_histogram())
        };
        let send_lag = if stats.interval_send_lag.is_empty() {
            new_histogram()
        } else {
            add_into(&mut stats.send_lag, &stats.interval_send_lag);
            std::mem::replace(&mut stats.interval_send_lag, new_histogram())
        };
        let snap = Snapshot {
            interval,
            service_time,
            sent: c.sent.saturating_sub(last.sent),
            completed: c.completed - last.completed,
            errors: c.errors.total() - last.errors.total(),
            non_2xx: c.non_2xx() - last.non_2xx(),
            latency,
            // The most open at once in the interval: at its end, the last second's connections are closing.
            connections_open: stats.interval_peak_open.max(stats.conns_open),
            in_flight: stats.interval_peak_active.max(stats.active()),
            full,
            error_kinds: error_delta(&c.errors, &last.errors),
            status: status_delta(&c.status, &last.status),
            send_lag,
            totals: c.clone(),
        };
        stats.interval_peak_active = stats.active();
        stats.interval_peak_open = stats.conns_open;
        *last = c;
        snap
    }

    /// A closed keep-alive load sends each request when its connection takes it: its latency is its service
    /// time, recorded once.
    fn service_is_latency(&self) -> bool {
        !self.open_loop && self.cfg.keep_alive
    }

    fn finish(&self) -> WorkerFinal {
        let stop_at = self.stop_at.get().unwrap_or_else(Instant::now);
        let unsent_backlog = self.open.as_ref().map_or(0, |src| src.borrow().backlog(stop_at));
        let mut stats = self.stats.borrow_mut();
        let slots_expected = match &self.cfg.slot_quotas {
            Some(q) => q.iter().filter(|&&n| n > 0).count() as u64,
            None => self.cfg.slots as u64,
        };
        let latency = std::mem::replace(&mut stats.latency, new_histogram());
        let service_time = if self.service_is_latency() {
            latency.clone()
        } else {
            std::mem::replace(&mut stats.service_time, new_histogram())
        };
        WorkerFinal {
            counters: stats.c.clone(),
            latency,
            service_time,
            send_lag: std::mem::replace(&mut stats.send_lag, new_histogram()),
            connect_time: std::mem::replace(&mut stats.connect_time, new_histogram()),
            tls_handshake: std::mem::replace(&mut stats.tls_handshake, new_histogram()),
            tls: std::mem::take(&mut stats.tls),
            peak_open: stats.peak_open,
            peak_active: stats.peak_active,
            slots_connected: stats.slots_connected,
            slots_expected,
            incomplete: stats.in_flight,
            unsent: stats.acquired_unsent + unsent_backlog,
            stop_at,
            end: Instant::now(),
            user_seconds: 0.0,
            system_seconds: 0.0,
            spin_seconds: self.cfg.precise.then(|| self.rt.spun().as_secs_f64()),
            by_entry: std::mem::take(&mut stats.by_entry),
            batches_read_whole: self.held.get(),
            checks: stats.checks.take(),
        }
    }
}

/// The worker's main future: spawns the slots and runs the ticker until the work is done or the drain ends.
async fn run(ctx: Rc<Ctx>, tx: Sender<Msg>) {
    let tick = if ctx.open_loop { Duration::from_millis(1) } else { Duration::from_millis(10) };
    let mut next_tick = ctx.start + tick;
    // I/O may wait for the pacer only in open keep-alive loads of single requests without pipelining (see the
    // module docs): a read's timestamp is that of its last bytes, so a deferred read must hold one response.
    let may_defer = ctx.open_loop
        && ctx.cfg.keep_alive
        && ctx.cfg.pipeline == 1
        && ctx.cfg.streams == 1
        && ctx.cfg.session.is_empty()
        && !ctx.cfg.precise;
    // Precise pacing wakes for every request a connection waits for; the default at most once a tick for that.
    let gap = if ctx.cfg.precise { Duration::ZERO } else { tick };
    let mut next_snapshot = ctx.start + SNAPSHOT_EVERY;
    let mut interval = 0u64;
    let mut last = Counters::default();
    let drain = ctx.cfg.drain;
    // The intended time the pacer last woke idle slots for: once they ran, the next wake is computed from the
    // request after it (a slot woken for a due request takes it only when the pacer yields).
    let mut handed: Option<Instant> = None;
    loop {
        let paced = match handed.take() {
            Some(due) => {
                yield_now().await;
                // A request still untaken after the slots ran (they found the load stopping) waits for the tick.
                ctx.pace_at(gap).filter(|&t| t != due)
            }
            None => ctx.pace_at(gap),
        };
        let paced = paced.filter(|&t| t < next_tick);
        let mut sleep = ctx.rt.sleep_until(paced.unwrap_or(next_tick));
        poll_fn(|cx| {
            if ctx.live_slots.get() == 0 {
                return Poll::Ready(());
            }
            let mut w = ctx.main_waker.borrow_mut();
            if !w.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                *w = Some(cx.waker().clone());
            }
            Pin::new(&mut sleep).poll(cx)
        })
        .await;
        let now = Instant::now();
        if ctx.live_slots.get() == 0 {
            break;
        }
        // Ticks keep their grid whatever wakes between them; missed ticks are skipped, not caught up.
        if now >= next_tick {
            next_tick += tick;
            if next_tick <= now {
                let behind = now.saturating_duration_since(next_tick).as_nanos() / tick.as_nanos();
                next_tick += tick * (u32::try_from(behind).unwrap_or(u32::MAX - 1) + 1);
            }
        }
        if !ctx.stopping.get() {
            if ctx.cfg.stop.is_stopped() {
                ctx.begin_stop(now);
            } else if let Some(d) = ctx.deadline.filter(|&d| now >= d) {
                // The requests of the last tick's interval that were due before the deadline still go out (the
                // default pacing hands each millisecond's requests out at the tick after them) when a connection
                // is free for them, for a few ticks at most; what then still waits is counted as never sent.
                let hand_out = now < d + LAST_SENDS
                    && !ctx.idle.borrow().is_empty()
                    && ctx.open.as_ref().is_some_and(|src| src.borrow().due_count(now, Some(d), 1) > 0);
                if !hand_out {
                    ctx.begin_stop(d);
                }
            }
        }
        if ctx.stopping.get() && ctx.stop_at.get().is_some_and(|at| now >= at + drain) {
            // What arrived of batches held back by a low-water mark is read before the worker ends.
            if ctx.batching && ctx.force_stalled(None) {
                yield_now().await;
            }
            break;
        }
        if ctx.batching {
            ctx.force_stalled(Some(now));
        }
        let mut defer = false;
        if !ctx.stopping.get() {
            if let Some(src) = &ctx.open {
                let idle = ctx.idle.borrow().len();
                let src_ref = src.borrow();
                let due = src_ref.due_count(now, ctx.deadline, usize::MAX);
                if idle > 0 {
                    // Once the schedule has nothing more (the last user step is over), the waiting slots end
                    // instead of waiting for the deadline.
                    let wake = if src_ref.exhausted(ctx.deadline) { idle } else { due.min(idle) };
                    drop(src_ref);
                    ctx.wake_idle(wake);
                    if wake > 0 {
                        handed = ctx.open.as_ref().and_then(|src| src.borrow().next_at);
                    }
                }
                // Every due request has a free connection: nothing waits for a response to be read.
                defer = may_defer && due <= idle;
            }
        }
        ctx.rt.set_defer_io(defer);
        while now >= next_snapshot {
            let snap = ctx.snapshot(interval, true, &mut last);
            let _ = tx.send(Msg::Interval(ctx.cfg.index, Box::new(snap)));
            interval += 1;
            next_snapshot += SNAPSHOT_EVERY;
        }
    }
    // The final, partial interval travels with the worker's totals.
    let snap = ctx.snapshot(interval, false, &mut last);
    let _ = tx.send(Msg::Interval(ctx.cfg.index, Box::new(snap)));
}

/// Lets every task woken so far run before this one continues.
async fn yield_now() {
    let mut yielded = false;
    poll_fn(|cx| {
        if yielded {
            Poll::Ready(())
        } else {
            yielded = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    })
    .await;
}

/// A connection ready for requests. A TLS connection (a kilobyte and more of rustls state) is boxed until
/// it moves into the boxed future that serves it: every slot's future holds a `Conn`, and plain TCP must not
/// pay for TLS (no indirection per read either way: the served future holds the connection inline).
enum Conn {
    Plain(TcpConn),
    Tls(Box<TlsConn>),
}

/// Opens a connection: the TCP connect (timed as `connect_time`) unless the opening made it already (`pre`),
/// then for HTTPS the TLS handshake (timed as `tls_handshake`). Returns the connection and the moment it could
/// carry a request.
async fn open(ctx: &Ctx, began: Instant, pre: Option<TcpConn>) -> Result<(Conn, Instant), ConnectError> {
    let tcp = match pre {
        Some(tcp) => tcp,
        None => {
            let tcp = transport::connect(&ctx.rt, ctx.cfg.addr, ctx.cfg.timeout).await?;
            let took = began.elapsed();
            ctx.stats.borrow_mut().connect_time.saturating_record(micros(took));
            tcp
        }
    };
    let connected = Instant::now();
    let Some(client) = &ctx.tls else {
        return Ok((Conn::Plain(tcp), connected));
    };
    // The handshake's state lives on the heap while it runs: the slot's own future stays small.
    match Box::pin(tls::handshake(&ctx.rt, tcp, client, ctx.cfg.timeout)).await {
        Ok((conn, hs)) => {
            let done = Instant::now();
            let mut s = ctx.stats.borrow_mut();
            s.tls_handshake.saturating_record(micros(done.saturating_duration_since(connected)));
            s.tls.handshakes += 1;
            s.tls.resumed += u64::from(hs.resumed);
            match hs.version {
                Some(rustls::ProtocolVersion::TLSv1_3) => s.tls.tls13 += 1,
                Some(rustls::ProtocolVersion::TLSv1_2) => s.tls.tls12 += 1,
                _ => {}
            }
            Ok((Conn::Tls(Box::new(conn)), done))
        }
        Err(failure) => {
            let message = failure.message.clone();
            ctx.stats.borrow_mut().tls.failed(failure);
            Err(ConnectError::Tls(message))
        }
    }
}

/// How requests go over a connection: HTTP/1.1 ([`Http1`]) or HTTP/2 ([`http2::H2`]), each generic over the
/// transport. `drive` makes all the progress it can and says how the connection ends, if it does.
trait Driver {
    fn drive(&mut self, cx: &mut Context<'_>, ctx: &Ctx, io: &mut SlotIo, quota: &mut Option<u64>) -> Poll<End>;
}

/// HTTP/1.1 over a transport: the slot's own loop ([`SlotIo::drive`]).
struct Http1<S>(S);

impl<S: Stream> Driver for Http1<S> {
    #[inline(always)]
    fn drive(&mut self, cx: &mut Context<'_>, ctx: &Ctx, io: &mut SlotIo, quota: &mut Option<u64>) -> Poll<End> {
        io.drive(cx, ctx, &mut self.0, quota)
    }
}

/// Drives requests over one open connection until it must be replaced or the slot is done (a session user's
/// steps included). Generic over the driver and its transport, so each gets its own compiled copy of the loop.
async fn serve<D: Driver>(ctx: &Ctx, io: &mut SlotIo, mut driver: D, quota: &mut Option<u64>) -> End {
    let cfg = &ctx.cfg;
    loop {
        let end = poll_fn(|cx| driver.drive(cx, ctx, io, quota)).await;
        if !matches!(end, End::Step) {
            return end;
        }
        // A session's request completed: the user thinks, then sends its next request on the same connection,
        // or closes once its session is done.
        let (next, think) = ctx.next_step(Some(io.step));
        if !think.is_zero() {
            ctx.stats.borrow_mut().thinking += 1;
            ctx.rt.sleep(think).await;
            ctx.stats.borrow_mut().thinking -= 1;
        }
        let Some((step, entry)) = next.filter(|_| !cfg.stop.is_stopped()) else {
            return End::Reconnect { server_closed: false };
        };
        if ctx.blocked(entry, io.vars.as_deref()).is_some() {
            // A value the step uses was never captured (or would break the request): the step is not sent, and
            // the user's session ends, as it does when a request fails.
            let mut s = ctx.stats.borrow_mut();
            s.c.errors.missing_value += 1;
            if let Some(e) = s.entry(entry) {
                e.errors.missing_value += 1;
            }
            return End::Reconnect { server_closed: false };
        }
        io.step = step;
        ctx.build_entry(entry, user_values(&io.vars, &io.jar), &mut io.out);
        io.remember_path();
        let now = Instant::now();
        let mut s = ctx.stats.borrow_mut();
        s.c.sent += 1;
        s.in_flight += 1;
        if let Some(e) = s.entry(entry) {
            e.sent += 1;
        }
        io.push(now, now, entry, 0);
    }
}

/// One connection slot: connect, drive requests over the connection, reconnect when needed, until done.
async fn slot_main(ctx: Rc<Ctx>, id: usize, mut quota: Option<u64>) {
    let mut io = SlotIo::new(id, &ctx.cfg);
    let mut backoff = BACKOFF_MIN;
    let mut ever_connected = false;
    let cfg = &ctx.cfg;
    loop {
        let mut pre = None;
        if !cfg.keep_alive {
            let got = poll_fn(|cx| {
                let mut got = None;
                match ctx.acquire(&mut quota, 1, Instant::now(), |t| got = Some(t)) {
                    Acquired::Got(_) => {
                        let mut s = ctx.stats.borrow_mut();
                        s.acquired_unsent += 1;
                        s.note_active();
                        Poll::Ready(got)
                    }
                    Acquired::Wait => {
                        ctx.wait_for_work(id, cx);
                        Poll::Pending
                    }
                    Acquired::Done => Poll::Ready(None),
                }
            })
            .await;
            match got {
                // A request built one at a time goes into the connection's buffer now.
                Some(t) if !cfg.session.is_empty() => {
                    // A new user: its session starts with its first request step.
                    let (first, _) = ctx.next_step(None);
                    let (step, entry) = first.unwrap_or((0, 0));
                    io.step = step;
                    if let Some(vars) = io.vars.as_deref_mut() {
                        vars.clear();
                    }
                    if let Some(jar) = io.jar.as_deref_mut() {
                        jar.clear();
                    }
                    ctx.build_entry(entry, user_values(&io.vars, &io.jar), &mut io.out);
                    io.remember_path();
                    ctx.stats.borrow_mut().c.users_started += 1;
                    pre = Some((t, entry));
                }
                Some(t) => pre = Some((t, ctx.build(&mut io.out))),
                None => break,
            }
        } else if !ctx.has_more(&quota) {
            break;
        }

        let began = Instant::now();
        let opened = ctx.pre_opened.borrow_mut().get_mut(id).and_then(Option::take);
        match open(&ctx, began, opened).await {
            Ok((conn, connected)) => {
                // A new connection: nothing answered on it yet (a failure mid-way resets the buffers, not these).
                io.answered = false;
                io.peer_closed = false;
                {
                    let mut s = ctx.stats.borrow_mut();
                    s.c.opened += 1;
                    s.conns_open += 1;
                    s.peak_open = s.peak_open.max(s.conns_open);
                    s.interval_peak_open = s.interval_peak_open.max(s.conns_open);
                    if !ever_connected {
                        s.slots_connected += 1;
                    }
                    if let Some((intended, entry)) = pre {
                        s.acquired_unsent -= 1;
                        s.c.sent += 1;
                        s.in_flight += 1;
                        if let Some(e) = s.entry(entry) {
                            e.sent += 1;
                        }
                        io.push(intended, connected, entry, cfg.request.as_ref().map_or(0, |r| r.len()));
                    }
                }
                ever_connected = true;
                backoff = BACKOFF_MIN;
                // One engine loop, monomorphized per transport: the plain path never looks at TLS.
                // Plain HTTP/1.1 is served inline; TLS and HTTP/2, whose state is kilobytes, from a future boxed
                // per connection, so that a slot's own future (every slot has one) stays the size plain HTTP/1.1
                // needs.
                let end = match conn {
                    Conn::Plain(stream) if cfg.http2 => {
                        Box::pin(serve(&ctx, &mut io, http2::H2::new(stream, false), &mut quota)).await
                    }
                    Conn::Plain(stream) => serve(&ctx, &mut io, Http1(stream), &mut quota).await,
                    Conn::Tls(stream) if cfg.http2 || stream.is_h2() => {
                        // ALPN chose HTTP/2 (`protocol: auto`): polling before blocking is for HTTP/1.1 only.
                        ctx.rt.poll_before_block(Duration::ZERO);
                        Box::pin(serve(&ctx, &mut io, http2::H2::new(*stream, true), &mut quota)).await
                    }
                    Conn::Tls(stream) => Box::pin(serve(&ctx, &mut io, Http1(*stream), &mut quota)).await,
                };
                let refused = io.peer_closed && !io.answered;
                io.reset();
                ctx.stall[id].set(Stall::None);
                let mut s = ctx.stats.borrow_mut();
                s.conns_open -= 1;
                if refused {
                    // Accepted and then closed or reset without a single response: a failed connection.
                    s.c.connect_failed += 1;
                }
                if !cfg.session.is_empty() {
                    s.c.users_finished += 1;
                }
                match end {
                    End::Finished => break,
                    End::Step => {}
                    End::Reconnect { server_closed } => {
                        if server_closed {
                            s.c.reconnects += 1;
                        }
                    }
                }
            }
            Err(e) => {
                {
                    let mut s = ctx.stats.borrow_mut();
                    s.c.errors.connect += 1;
                    s.c.connect_failed += 1;
                    if matches!(e, ConnectError::AddressUnavailable) {
                        s.c.address_unavailable += 1;
                    }
                    if s.c.first_connect_error.is_none() {
                        s.c.first_connect_error = Some(e.to_string());
                    }
                    if let Some((_, entry)) = pre {
                        // The request this connection was for fails with it (and a session user with it).
                        s.acquired_unsent -= 1;
                        if !cfg.session.is_empty() {
                            s.c.users_finished += 1;
                        }
                        if let Some(e) = s.entry(entry) {
                            e.errors.connect += 1;
                        }
                        io.out.clear();
                    }
                }
                if pre.is_none() {
                    // In a request-count run every failed attempt uses up a request, so that the run ends even
                    // when the target is gone.
                    match &ctx.open {
                        None => {
                            if let Some(q) = &mut quota {
                                *q = q.saturating_sub(1);
                            }
                        }
                        Some(src) => src.borrow_mut().forfeit(),
                    }
                }
                ctx.rt.sleep(backoff).await;
                backoff = (backoff * 2).min(BACKOFF_MAX);
            }
        }
    }
    ctx.slot_ended();
}

enum End {
    /// The slot has nothing more to do.
    Finished,
    /// Open a new connection; `server_closed`: the server ended the connection (counted as a reconnect).
    Reconnect { server_closed: bool },
    /// A session user's request completed and nothing is in flight: its next step is due.
    Step,
}

enum Failure {
    Read,
    Write,
    Timeout,
    Protocol,
}

/// A request in flight.
#[derive(Debug, Clone, Copy)]
struct InFlight {
    intended: Instant,
    sent: Instant,
    /// Its mix entry (0 without a mix).
    entry: u32,
}

/// A connection slot's per-connection state.
struct SlotIo {
    id: usize,
    /// Sessions: the step of the user's request in flight.
    step: usize,
    /// Requests in flight, oldest first.
    in_flight: VecDeque<InFlight>,
    /// The static request: bytes of requests not yet written.
    unwritten: usize,
    /// The static request: offset into a request where the next write starts.
    write_off: usize,
    /// Built requests: their bytes, reused from request to request, and how much of them is written.
    out: Vec<u8>,
    out_pos: usize,
    parser: ResponseParser,
    /// The lazy timeout timer: when it fires (if armed).
    timer_at: Instant,
    armed: bool,
    /// A response completed on the current connection.
    answered: bool,
    /// The server closed or reset the current connection (EOF, a failed read or write).
    peer_closed: bool,
    /// Batched reads of the current connection (pipelined batches only).
    batch: Batching,
    /// Sessions with variables: the user's captured values (allocated once per slot, reused by its users).
    vars: Option<Box<Vars>>,
    /// Sessions with cookies: the user's jar.
    jar: Option<Box<Jar>>,
    /// Sessions with cookies: the path of the user's request in flight (a cookie without `Path` belongs to it).
    path: Vec<u8>,
    /// Phases with checks: what the response being read is found to be (made at the first checked response).
    inspector: Option<Box<Inspector>>,
}

impl SlotIo {
    fn new(id: usize, cfg: &WorkerConfig) -> Self {
        let variables = cfg.variables;
        let cookies = cfg.checks.as_ref().is_some_and(|c| c.cookies);
        SlotIo {
            vars: (variables > 0).then(|| Box::new(Vars::new(variables))),
            jar: cookies.then(|| Box::new(Jar::new())),
            path: Vec::new(),
            inspector: None,
            id,
            step: 0,
            in_flight: VecDeque::new(),
            unwritten: 0,
            write_off: 0,
            out: Vec::new(),
            out_pos: 0,
            parser: ResponseParser::new(),
            timer_at: Instant::now(),
            armed: false,
            answered: false,
            peer_closed: false,
            batch: Batching::new(),
        }
    }

    /// Sessions with cookies: keeps the path of the request just built (in `out`), for its response's cookies.
    fn remember_path(&mut self) {
        if self.jar.is_some() {
            self.path.clear();
            self.path.extend_from_slice(inspect::request_path(&self.out));
        }
    }

    /// A request is on its way: `len` bytes of the static request, or already in `out` when built.
    fn push(&mut self, intended: Instant, sent: Instant, entry: u32, len: usize) {
        self.in_flight.push_back(InFlight { intended, sent, entry });
        self.unwritten += len;
    }

    fn reset(&mut self) {
        self.in_flight.clear();
        self.unwritten = 0;
        self.write_off = 0;
        self.out.clear();
        self.out_pos = 0;
        self.parser.reset();
        self.batch.reset();
    }

    /// The stream broke: every request in flight fails with `kind`, and a TLS failure is counted by its class.
    #[cold]
    fn fail_stream<S: Stream>(&mut self, ctx: &Ctx, stream: &mut S, kind: Failure) {
        let mut stats = ctx.stats.borrow_mut();
        if let Some(f) = stream.take_tls_failure() {
            stats.tls.failed(f);
        }
        self.fail_all(&mut stats, kind);
    }

    /// Every request in flight fails with `kind` (each counted once).
    fn fail_all(&mut self, stats: &mut Stats, kind: Failure) {
        let n = self.in_flight.len() as u64;
        count_failure(&mut stats.c.errors, &kind, n);
        if !stats.by_entry.is_empty() {
            for f in &self.in_flight {
                if let Some(e) = stats.entry(f.entry) {
                    count_failure(&mut e.errors, &kind, 1);
                }
            }
        }
        stats.in_flight -= n;
        self.reset();
    }

    /// Drives the connection until it must be replaced or the slot is done. Each call makes all the progress it
    /// can: takes due requests, writes them in one write, reads everything available and parses it.
    fn drive<S: Stream>(
        &mut self,
        cx: &mut Context<'_>,
        ctx: &Ctx,
        stream: &mut S,
        quota: &mut Option<u64>,
    ) -> Poll<End> {
        let cfg = &ctx.cfg;
        let req_len = cfg.request.as_ref().map_or(0, |r| r.len());
        let mut now = Instant::now();
        // A batched connection's read owed before a timeout is called (once per call).
        let mut forced = false;
        loop {
            let mut progress = false;
            // 1. Take new requests.
            if cfg.keep_alive {
                let room = if cfg.window {
                    cfg.pipeline.saturating_sub(self.in_flight.len())
                } else if self.in_flight.is_empty() {
                    cfg.pipeline
                } else {
                    0
                };
                if room > 0 {
                    let in_flight = &mut self.in_flight;
                    let acquired = if cfg.request.is_some() {
                        ctx.acquire(quota, room, now, |t| {
                            in_flight.push_back(InFlight { intended: t, sent: now, entry: 0 })
                        })
                    } else {
                        // Built one at a time, into this connection's buffer.
                        let out = &mut self.out;
                        let mut stats = ctx.stats.borrow_mut();
                        ctx.acquire(quota, room, now, |t| {
                            let entry = ctx.build(out);
                            if let Some(e) = stats.entry(entry) {
                                e.sent += 1;
                            }
                            in_flight.push_back(InFlight { intended: t, sent: now, entry });
                        })
                    };
                    match acquired {
                        Acquired::Got(n) => {
                            self.unwritten += n * req_len;
                            {
                                let mut s = ctx.stats.borrow_mut();
                                s.c.sent += n as u64;
                                s.in_flight += n as u64;
                            }
                            if ctx.batching {
                                // The batch's mark is set before it is written: no response arrives under the old.
                                self.batch.sent(now);
                                self.mark_batch(ctx, stream);
                                if self.batch.holding() {
                                    ctx.stats.borrow_mut().c.batches_held += 1;
                                }
                            }
                        }
                        Acquired::Wait => ctx.wait_for_work(self.id, cx),
                        Acquired::Done => {
                            if self.in_flight.is_empty() {
                                return Poll::Ready(End::Finished);
                            }
                        }
                    }
                }
            } else if self.in_flight.is_empty() {
                // One request per connection, or the next step of a session.
                let end = if cfg.session.is_empty() { End::Reconnect { server_closed: false } } else { End::Step };
                return Poll::Ready(end);
            }

            // 2. Write everything unwritten (and what the stream itself still holds).
            if stream.try_flush(&ctx.rt).is_err() {
                self.fail_stream(ctx, stream, Failure::Write);
                return Poll::Ready(End::Reconnect { server_closed: false });
            }
            loop {
                let buf = match &cfg.request {
                    Some(bytes) if self.unwritten > 0 => bytes.slice(self.write_off, self.unwritten),
                    None if self.out_pos < self.out.len() => &self.out[self.out_pos..],
                    _ => break,
                };
                match stream.try_write(&ctx.rt, buf) {
                    Ok(Some(n)) if n > 0 => {
                        if cfg.request.is_some() {
                            self.unwritten -= n;
                            self.write_off = (self.write_off + n) % req_len.max(1);
                        } else {
                            self.out_pos += n;
                            if self.out_pos >= self.out.len() {
                                self.out.clear();
                                self.out_pos = 0;
                            }
                        }
                        ctx.stats.borrow_mut().c.bytes_written += n as u64;
                    }
                    Ok(None) => break,
                    Ok(Some(_)) | Err(_) => {
                        self.peer_closed = true;
                        self.fail_stream(ctx, stream, Failure::Write);
                        return Poll::Ready(End::Reconnect { server_closed: false });
                    }
                }
            }

            // 3. Read whatever has arrived.
            let mut scratch = ctx.scratch.borrow_mut();
            match stream.try_read(&ctx.rt, &mut scratch[..]) {
                Ok(None) => {}
                Err(_) => {
                    drop(scratch);
                    self.peer_closed = true;
                    self.fail_stream(ctx, stream, Failure::Read);
                    return Poll::Ready(End::Reconnect { server_closed: false });
                }
                Ok(Some(read)) => {
                    let n = read.len;
                    let mut stats = ctx.stats.borrow_mut();
                    if n == 0 {
                        return Poll::Ready(self.on_eof(ctx, &mut stats, quota));
                    }
                    now = Instant::now();
                    // The bytes' arrival (the kernel's timestamp), never later than now.
                    let arrived = read.arrived.map_or(now, |t| t.min(now));
                    stats.c.bytes_read += n as u64;
                    if let Some(end) = self.consume(ctx, &mut stats, quota, &scratch[..n], arrived) {
                        return Poll::Ready(end);
                    }
                    progress = true;
                }
            }
            drop(scratch);
            if ctx.batching {
                self.tend_batch(ctx, stream, now);
            }

            // 4. The lazy per-connection timeout.
            if !self.in_flight.is_empty() && !self.armed {
                let oldest = self.in_flight[0].sent;
                if let Some(at) = oldest.checked_add(cfg.timeout) {
                    self.timer_at = at;
                    self.armed = true;
                    ctx.rt.add_timer(at, ctx.rt.current());
                }
            }
            if self.armed && now >= self.timer_at {
                self.armed = false;
                if let Some(&InFlight { sent, .. }) = self.in_flight.front() {
                    now = Instant::now();
                    if now >= sent + cfg.timeout {
                        if self.batch.holding() && !forced {
                            // What arrived of a batch held back by its low-water mark is read before the rest
                            // times out.
                            forced = true;
                            ctx.rt.mark_readable(ctx.rt.current());
                        } else {
                            self.fail_all(&mut ctx.stats.borrow_mut(), Failure::Timeout);
                            return Poll::Ready(End::Reconnect { server_closed: false });
                        }
                    }
                    progress = true;
                }
            }
            if !progress {
                return Poll::Pending;
            }
        }
    }

    /// Parses the bytes of one read (or one message of a split read), which arrived at `arrived`, completing the
    /// responses they end; returns how the connection ends if it does.
    #[inline]
    fn consume(
        &mut self,
        ctx: &Ctx,
        stats: &mut Stats,
        quota: &mut Option<u64>,
        data: &[u8],
        arrived: Instant,
    ) -> Option<End> {
        let n = data.len();
        let mut off = 0;
        while off < n {
            let entry = self.in_flight.front().map(|f| f.entry);
            let head = ctx.is_head(entry);
            let checks = match (&ctx.cfg.checks, entry) {
                (Some(plan), Some(e)) if plan.inspects(e) => plan.entry(e),
                _ => None,
            };
            let fed = match (checks, ctx.cfg.checks.as_ref()) {
                (Some(checks), Some(plan)) => {
                    let inspector = self.inspector.get_or_insert_with(|| Box::new(plan.inspector()));
                    let mut caches = ctx.caches.borrow_mut();
                    let caches = caches.as_mut().and_then(|c| c.entry(entry.unwrap_or(0)));
                    match caches {
                        Some(caches) => {
                            let vars = self.vars.as_deref();
                            let mut seeing = inspect::Inspecting { inspector, checks, caches, vars };
                            self.parser.feed_with(&data[off..], head, &mut seeing)
                        }
                        None => self.parser.feed(&data[off..], head),
                    }
                }
                _ => self.parser.feed(&data[off..], head),
            };
            match fed {
                Err(_) => {
                    self.fail_all(stats, Failure::Protocol);
                    return Some(End::Reconnect { server_closed: false });
                }
                Ok((used, done)) => {
                    off += used;
                    if ctx.batching {
                        self.batch.bytes(used);
                    }
                    if let Some(done) = done {
                        if ctx.batching {
                            self.batch.response();
                        }
                        if let Some(end) = self.complete(ctx, stats, quota, done, arrived) {
                            return Some(end);
                        }
                    }
                }
            }
        }
        None
    }

    /// After a read: the socket's low-water mark follows the responses still outstanding, and a batch it holds back
    /// gets a time to be read by force.
    fn tend_batch<S: Stream>(&mut self, ctx: &Ctx, stream: &mut S, now: Instant) {
        let stall = &ctx.stall[self.id];
        // A read by force that completed the batch: the batch could never reach its mark. One that left responses
        // outstanding met a slow server.
        if stall.get() == Stall::Forced {
            stall.set(Stall::None);
            if self.in_flight.is_empty() {
                self.batch.forced();
                ctx.stats.borrow_mut().c.batches_forced += 1;
            }
        }
        if self.in_flight.is_empty() {
            self.batch.done(now);
            stall.set(Stall::None);
        }
        self.mark_batch(ctx, stream);
        if self.batch.holding() && !self.in_flight.is_empty() && stall.get() == Stall::None {
            stall.set(Stall::At(now + self.batch.stall_bound()));
        }
    }

    /// Sets the socket's low-water mark to what the responses outstanding need, when that changed.
    fn mark_batch<S: Stream>(&mut self, ctx: &Ctx, stream: &mut S) {
        if !stream.holds_reads() {
            return;
        }
        if let Some(bytes) = self.batch.low_water_for(self.in_flight.len(), ctx.rt.reads_stamped()) {
            if stream.set_read_low_water(bytes).is_ok() {
                self.batch.set_low_water(bytes);
                if bytes > 1 {
                    ctx.held.set(true);
                }
            } else {
                self.batch.refused();
            }
        }
    }

    /// A response completed; returns how the connection ends if it does.
    fn complete(
        &mut self,
        ctx: &Ctx,
        stats: &mut Stats,
        quota: &mut Option<u64>,
        done: Completed,
        now: Instant,
    ) -> Option<End> {
        let Some(request) = self.in_flight.pop_front() else {
            // A response nobody asked for.
            self.fail_all(stats, Failure::Protocol);
            return Some(End::Reconnect { server_closed: false });
        };
        let entry = request.entry;
        self.record(ctx, stats, request, done.status, now);
        if let (Some(plan), Some(inspector), Some(tally)) =
            (&ctx.cfg.checks, self.inspector.as_deref_mut(), stats.checks.as_mut())
        {
            let mut caches = ctx.caches.borrow_mut();
            let caches = caches.as_mut().and_then(|c| c.entry(entry));
            if let (Some(checks), Some(caches)) = (plan.entry(entry).filter(|_| plan.inspects(entry)), caches) {
                let user = inspect::UserSide {
                    vars: self.vars.as_deref_mut(),
                    jar: self.jar.as_deref_mut(),
                    request_path: &self.path,
                };
                inspect::judge(inspector, checks, caches, entry, user, tally);
            }
        }
        if done.close {
            self.close_after_response(ctx, stats, quota);
            return Some(End::Reconnect { server_closed: ctx.cfg.keep_alive });
        }
        None
    }

    /// Records a completed request: its latency, service time, send lag and status.
    fn record(&mut self, ctx: &Ctx, stats: &mut Stats, request: InFlight, status: u16, now: Instant) {
        let InFlight { intended, sent, entry } = request;
        // A kernel timestamp can precede the actual send only by clock noise: never count that.
        let now = now.max(sent);
        let latency = micros(now.saturating_duration_since(intended));
        // Recorded once, in the interval's histograms; each snapshot adds them to the phase's totals.
        stats.interval.saturating_record(latency);
        if ctx.open_loop {
            stats.interval_service.saturating_record(micros(now.saturating_duration_since(sent)));
            stats.interval_send_lag.saturating_record(micros(sent.saturating_duration_since(intended)));
        } else if !ctx.service_is_latency() {
            stats.service_time.saturating_record(micros(now.saturating_duration_since(sent)));
        }
        stats.c.completed += 1;
        stats.in_flight -= 1;
        self.answered = true;
        count_status(&mut stats.c.status, status);
        if let Some(e) = stats.entry(entry) {
            e.completed += 1;
            e.latency.saturating_record(latency);
            count_status(&mut e.status, status);
        }
    }

    /// The server said it closes: requests pipelined behind the last response were never read by it.
    fn close_after_response(&mut self, ctx: &Ctx, stats: &mut Stats, quota: &mut Option<u64>) {
        if !self.in_flight.is_empty() {
            let back: Vec<Instant> = self.in_flight.iter().map(|f| f.intended).collect();
            for f in self.in_flight.drain(..) {
                if let Some(e) = stats.by_entry.get_mut(f.entry as usize) {
                    e.sent -= 1;
                }
            }
            let n = back.len() as u64;
            stats.c.sent -= n;
            stats.in_flight -= n;
            match &ctx.open {
                None => {
                    if let Some(q) = quota {
                        *q += n;
                    }
                }
                Some(src) => {
                    let mut src = src.borrow_mut();
                    for t in back.into_iter().rev() {
                        src.retry.push_front(t);
                    }
                }
            }
        }
        self.reset();
    }

    fn on_eof(&mut self, ctx: &Ctx, stats: &mut Stats, quota: &mut Option<u64>) -> End {
        self.peer_closed = true;
        match self.parser.eof() {
            Eof::Completed(done) => {
                let now = Instant::now();
                if self.complete(ctx, stats, quota, done, now).is_none() {
                    self.close_after_response(ctx, stats, quota);
                }
            }
            Eof::MidResponse => self.fail_all(stats, Failure::Read),
            Eof::Clean => self.fail_all(stats, Failure::Read),
        }
        End::Reconnect { server_closed: ctx.cfg.keep_alive }
    }
}

/// What a user's next request is filled with: its variables and cookies.
fn user_values<'a>(vars: &'a Option<Box<Vars>>, jar: &'a Option<Box<Jar>>) -> UserValues<'a> {
    UserValues { vars: vars.as_deref(), cookies: jar.as_deref().map(|j| j as &dyn crate::request::CookieHeader) }
}

/// Counts `n` requests failed with `kind` (a protocol failure counts once even with nothing in flight).
fn count_failure(e: &mut ErrorCounts, kind: &Failure, n: u64) {
    match kind {
        Failure::Read => e.read += n,
        Failure::Write => e.write += n,
        Failure::Timeout => e.timeout += n,
        Failure::Protocol => e.protocol += n.max(1),
    }
}

fn count_status(status: &mut StatusCounts, code: u16) {
    match code {
        100..=199 => status.informational += 1,
        200..=299 => status.success += 1,
        300..=399 => status.redirection += 1,
        400..=499 => status.client_error += 1,
        _ => status.server_error += 1,
    }
}

/// Adds `from` into `into` (both from `new_histogram`, so every value fits).
fn add_into(into: &mut Histogram<u64>, from: &Histogram<u64>) {
    if !from.is_empty() {
        // Same bounds on both sides: adding cannot fail.
        let _ = into.add(from);
    }
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The size of the futures an async fn returns, from the fn itself (no arguments needed).
    fn future_size<A, B, C, F: Future>(_: impl Fn(A, B, C) -> F) -> usize {
        std::mem::size_of::<F>()
    }

    #[test]
    fn a_connection_slot_costs_little_memory() {
        let slot = future_size(slot_main);
        eprintln!(
            "slot future {slot} B; SlotIo {} B; Conn {} B; TcpConn {} B; TlsConn {} B; H2<TcpConn> {} B",
            std::mem::size_of::<SlotIo>(),
            std::mem::size_of::<Conn>(),
            std::mem::size_of::<TcpConn>(),
            std::mem::size_of::<crate::tls::TlsConn>(),
            std::mem::size_of::<http2::H2<TcpConn>>(),
        );
    }

    fn source(rate: u64) -> (OpenSource, Instant) {
        let arrival = loadgate_plan::Arrival::Constant { rate: loadgate_model::units::Rate::from_per_sec(rate) };
        let schedule = crate::schedule::Schedule::from_arrival(&arrival).unwrap();
        let start = Instant::now();
        (OpenSource::new(WorkerSchedule::new(schedule, 1.0, 0.0), None, start), start)
    }

    /// Take every request due by `now`; returns their intended times.
    fn take_due(src: &mut OpenSource, now: Instant) -> Vec<Instant> {
        std::iter::from_fn(|| src.take(now, None)).collect()
    }

    #[test]
    fn the_pacer_wakes_for_each_request_a_millisecond_or_more_apart() {
        let ms = Duration::from_millis(1);
        // 500/s: every request is 2 ms after the one before, so the pacer wakes at each intended time.
        let (mut src, start) = source(500);
        let first = src.paced(ms).expect("the first request");
        assert_eq!(take_due(&mut src, first), vec![first]);
        let second = src.paced(ms).expect("2 ms later");
        assert_eq!(second.duration_since(first), Duration::from_millis(2));
        assert!(first >= start);

        // 4,000/s: the next request is 250 us after the one taken: the tick takes it with the others.
        let (mut src, _) = source(4000);
        let first = src.paced(ms).expect("the first request");
        assert_eq!(take_due(&mut src, first).len(), 1);
        assert_eq!(src.paced(ms), None);
        // A millisecond on, four are due; after them, the next is again too close.
        assert_eq!(take_due(&mut src, first + ms).len(), 4);
        assert_eq!(src.paced(ms), None);

        // A request given back waits for the tick, which takes it at once.
        let (mut src, _) = source(500);
        let t = src.paced(ms).unwrap();
        src.retry.push_back(t);
        assert_eq!(src.paced(ms), None);
    }

    #[test]
    fn micros_saturates() {
        assert_eq!(micros(Duration::from_millis(2)), 2000);
        assert_eq!(micros(Duration::MAX), u64::MAX);
    }
}
