//! What the worker's parts share: the worker's configuration and messages, its counters, and a request in flight
//! with the ways it ends. A leaf: it names none of the other parts of the worker.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use loadgate_measure::{new_histogram, ErrorCounts, StatusCounts};
use loadgate_plan::ConnectRate;

use crate::control::{EngineError, StopSignal};
use crate::opening::{self, OpeningCounts};
use crate::request::{Built, RequestBytes};
use crate::schedule::WorkerSchedule;
use crate::tls::TlsClient;
use crate::transport::TlsFailure;

use super::inspect;
use super::tally;

/// What a worker is asked to do.
#[derive(Debug)]
pub(crate) struct WorkerConfig {
    pub index: usize,
    /// The target this configuration loads, among the phase's (0 but in a duet, where each target is a lane of
    /// the same workers).
    pub lane: usize,
    /// A duet: how the worker orders the two lanes' sends of one instant.
    pub pair: Option<PairKey>,
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
    /// A replay: the worker's requests, serialized (their times are `open`'s schedule).
    pub replay: Option<crate::replay::ReplayPart>,
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
    pub(super) fn opening_plan(&self) -> opening::Plan<'_> {
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

/// A duet's pair order: which lane sends first the request of global index `stream + k streams` (the worker's
/// `k`-th) is a keyed draw, so it depends on neither the worker count nor the shards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PairKey {
    pub seed: u64,
    pub stream: u64,
    pub streams: u64,
}

/// The call site of the pair order's draws (`Rng::keyed`'s stream).
const PAIR_ORDER: u64 = 0x6475_6574; // "duet"

impl PairKey {
    /// Whether the second lane sends first the worker's `k`-th request of the pair.
    pub(crate) fn second_first(&self, k: u64) -> bool {
        let index = self.stream.wrapping_add(k.wrapping_mul(self.streams));
        crate::data::Rng::keyed(self.seed, index, PAIR_ORDER).next_u64() & 1 == 1
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
    /// Lane, what its opening did.
    Ready(usize, Box<OpeningCounts>),
    Failed(EngineError),
    /// Worker, lane, the interval.
    Interval(usize, usize, Box<Snapshot>),
    /// Worker, lane, its totals.
    Done(usize, usize, Box<WorkerFinal>),
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
pub(super) fn error_delta(now: &ErrorCounts, last: &ErrorCounts) -> ErrorCounts {
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
pub(super) fn status_delta(now: &StatusCounts, last: &StatusCounts) -> StatusCounts {
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
    /// A replay: what the worker sent of its part.
    pub replay: Option<crate::replay::ReplayTally>,
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
    pub(super) fn new() -> Self {
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
    pub(super) fn failed(&mut self, f: TlsFailure) {
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
    pub http2: H2Counters,
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
    pub(super) fn non_2xx(&self) -> u64 {
        self.status.non_2xx()
    }
}

/// RST_STREAM and GOAWAY error codes are counted by code up to this one (HTTP_1_1_REQUIRED); others as "other".
pub(crate) const CODES: usize = 14;

/// What one worker's HTTP/2 connections saw.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct H2Counters {
    /// Connections that spoke HTTP/2.
    pub connections: u64,
    /// The fewest concurrent streams a server granted a connection (`min(streams, MAX_CONCURRENT_STREAMS)`),
    /// 0 before any server's SETTINGS.
    pub streams_granted: u64,
    pub goaways: u64,
    /// RST_STREAM frames received, by error code (the last entry: codes above HTTP_1_1_REQUIRED).
    pub rst_streams: [u64; CODES + 1],
    /// Requests sent again: refused by RST_STREAM REFUSED_STREAM or above a GOAWAY's last stream id.
    pub resent: u64,
}

impl H2Counters {
    pub fn add(&mut self, o: &H2Counters) {
        self.connections += o.connections;
        self.streams_granted = match (self.streams_granted, o.streams_granted) {
            (0, g) | (g, 0) => g,
            (a, b) => a.min(b),
        };
        self.goaways += o.goaways;
        for (a, b) in self.rst_streams.iter_mut().zip(o.rst_streams) {
            *a += b;
        }
        self.resent += o.resent;
    }

    pub(super) fn granted(&mut self, g: u64) {
        self.streams_granted = if self.streams_granted == 0 { g } else { self.streams_granted.min(g) };
    }
}

pub(crate) enum End {
    /// The slot has nothing more to do.
    Finished,
    /// Open a new connection; `server_closed`: the server ended the connection (counted as a reconnect).
    Reconnect { server_closed: bool },
    /// A session user's request completed and nothing is in flight: its next step is due.
    Step,
}

pub(crate) enum Failure {
    Read,
    Write,
    Timeout,
    Protocol,
}

/// A request in flight.
#[derive(Debug, Clone, Copy)]
pub(crate) struct InFlight {
    pub(super) intended: Instant,
    pub(super) sent: Instant,
    /// Its mix entry (0 without a mix).
    pub(super) entry: u32,
}

/// Counts `n` requests failed with `kind` (a protocol failure counts once even with nothing in flight).
pub(super) fn count_failure(e: &mut ErrorCounts, kind: &Failure, n: u64) {
    match kind {
        Failure::Read => e.read += n,
        Failure::Write => e.write += n,
        Failure::Timeout => e.timeout += n,
        Failure::Protocol => e.protocol += n.max(1),
    }
}

pub(super) fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn micros_saturates() {
        assert_eq!(micros(Duration::from_millis(2)), 2000);
        assert_eq!(micros(Duration::MAX), u64::MAX);
    }
}
