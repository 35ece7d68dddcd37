//! loadgate's measurement records: what the engine counts and summarises while a phase runs (requests, status
//! and error counts, connections and their opening, bytes, TLS and HTTP/2 figures, latency histograms and their
//! summaries, the per-second timeline, workers, validity problems), and the machine's records (the fingerprint,
//! the pinning, the target's resource samples).
//!
//! Plain data with its serde and the small methods it needs (adding counts, nearest-rank percentiles), and no
//! judging: verdicts, statistics over repetitions and the run's outcome are `loadgate_results`', which embeds
//! these records in `results.json` and re-exports them at their old paths. Latencies are in microseconds;
//! histograms are serialized as base64 of the compressed V2 encoding (`HISTFAAA...`, see [`histogram_serde`]).

use std::collections::BTreeMap;
use std::ops::AddAssign;

use hdrhistogram::Histogram;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub mod replay;

/// Serde for histograms as base64 of the compressed V2 encoding, the `HISTFAAA...` form of HdrHistogram
/// interval logs that other HdrHistogram libraries decode.
pub mod histogram_serde {
    use base64::Engine as _;
    use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
    use hdrhistogram::Histogram;

    /// Encodes a histogram as base64 of its compressed V2 encoding.
    pub fn encode(h: &Histogram<u64>) -> Result<String, String> {
        let mut buf = Vec::new();
        V2DeflateSerializer::new().serialize(h, &mut buf).map_err(|e| format!("cannot encode histogram: {e:?}"))?;
        Ok(base64::engine::general_purpose::STANDARD.encode(buf))
    }

    /// Decodes base64 of a V2 encoding, compressed or not.
    pub fn decode(text: &str) -> Result<Histogram<u64>, String> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text.trim())
            .map_err(|e| format!("histogram is not base64: {e}"))?;
        Deserializer::new().deserialize(&mut &bytes[..]).map_err(|e| format!("cannot decode histogram: {e:?}"))
    }

    /// Serde `serialize_with`.
    pub fn serialize<S: serde::Serializer>(h: &Histogram<u64>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&encode(h).map_err(serde::ser::Error::custom)?)
    }

    /// Serde `deserialize_with`.
    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Histogram<u64>, D::Error> {
        let text = <String as serde::Deserialize>::deserialize(d)?;
        decode(&text).map_err(serde::de::Error::custom)
    }
}

/// Histograms record microseconds from 1 us to one hour with 3 significant digits, as wrk2 does.
pub const HISTOGRAM_MAX_US: u64 = 3_600_000_000;
pub const HISTOGRAM_SIGFIG: u8 = 3;

/// A fresh latency histogram with loadgate's range and precision.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, HISTOGRAM_MAX_US, HISTOGRAM_SIGFIG).expect("static histogram bounds are valid")
}

/// The machine fingerprint: what the seeds paste from `lscpu` by hand.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct Machine {
    /// The host name.
    pub hostname: Option<String>,
    /// The CPU model name, as `lscpu` prints it.
    pub cpu_model: Option<String>,
    /// CPU sockets.
    pub sockets: Option<u32>,
    /// Physical cores per socket.
    pub cores_per_socket: Option<u32>,
    /// Hardware threads per core (2 with SMT).
    pub threads_per_core: Option<u32>,
    /// Online CPUs in taskset syntax.
    pub online_cpus: Option<String>,
    /// Logical CPUs online.
    pub logical_cpus: Option<u32>,
    /// The CPU frequency governor (`performance`, `powersave`, ...).
    pub governor: Option<String>,
    /// Physical memory in bytes.
    pub memory_bytes: Option<u64>,
    /// The kernel release (`uname -r`).
    pub kernel: Option<String>,
    /// The hypervisor or container, when detected.
    pub virtualization: Option<String>,
    /// The git commit of the working directory, when it is a repository.
    pub git_commit: Option<String>,
    /// Whether that working tree had uncommitted changes.
    pub git_dirty: Option<bool>,
}

/// CPU pinning, in taskset syntax (`0-7,16-23`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct Pinning {
    /// The generator CPUs the spec asked for.
    pub generator_requested: Option<String>,
    /// The generator CPUs applied (`None`: unpinned).
    pub generator_applied: Option<String>,
    /// The target CPUs the spec asked for.
    pub target_requested: Option<String>,
    /// The target CPUs applied (`None`: unpinned).
    pub target_applied: Option<String>,
    /// The CPU each worker thread ran on (`None`: unpinned).
    pub workers: Vec<Option<u32>>,
    /// Why the pinning differs from the spec (`on_mismatch: warn`), or overlaps between generator and target.
    pub warnings: Vec<String>,
    /// `run --pin-within-affinity`: each CPU the spec pins and the CPU of this process's affinity it ran on
    /// instead (the i-th pinned CPU on the i-th allowed one). Empty: the spec's CPU ids were used as they are.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpu_map: Vec<CpuMapping>,
}

/// One CPU of the spec's pinning and the CPU it was mapped onto (`run --pin-within-affinity`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CpuMapping {
    /// The CPU id the spec names.
    pub spec: u32,
    /// The CPU id used.
    pub cpu: u32,
}

/// The target process ended during the run.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct TargetExit {
    /// Seconds from the start of the run.
    pub at_seconds: f64,
    /// The exit status or signal, as text.
    pub status: String,
}

/// One sample of the target's resource use.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ResourceSample {
    /// Seconds from the start of the run.
    pub t: f64,
    /// CPU use as a fraction of one CPU (1.0 = one core busy).
    pub cpu: f64,
    /// Resident memory of the process tree.
    pub rss_bytes: u64,
}

/// One named request of a mix.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct RequestBreakdown {
    /// The request's name in the spec's `requests:`.
    pub name: String,
    pub requests: RequestCounts,
    pub status: StatusCounts,
    pub errors: ErrorCounts,
    /// Completed requests of this name per second over the phase.
    pub throughput: f64,
    pub latency: LatencySummary,
    /// The full latency histogram of this request (`HISTFAAA...`).
    #[serde(with = "crate::histogram_serde")]
    #[schemars(with = "String", pattern(r"^HISTFAAA"))]
    pub histogram: Histogram<u64>,
    /// Responses of this request whose checks ran.
    #[serde(default, skip_serializing_if = "CheckedResponses::is_empty")]
    pub checked: CheckedResponses,
}

/// Responses judged by checks (requests with `check:`): what `error_rate` needs besides the status classes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CheckedResponses {
    /// Responses whose checks ran.
    pub responses: u64,
    /// Responses that failed a check although their status was 2xx or accepted by a `status` check: failed
    /// responses in `error_rate` under `failed_checks: errors` (the default), not under `separate`.
    pub failed: u64,
    /// Non-2xx responses a `status` check accepted: successful responses, not counted in `error_rate`.
    pub accepted_non_2xx: u64,
}

impl CheckedResponses {
    pub fn is_empty(&self) -> bool {
        *self == CheckedResponses::default()
    }
}

impl AddAssign<&CheckedResponses> for CheckedResponses {
    fn add_assign(&mut self, other: &CheckedResponses) {
        self.responses += other.responses;
        self.failed += other.failed;
        self.accepted_non_2xx += other.accepted_non_2xx;
    }
}

/// One check of one request over a phase: how often it held and failed, with the first failures kept.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CheckStats {
    /// The request's name: the mix entry or session step, `request` for a single request.
    pub request: String,
    /// The check's name (`status`, `header:content-type`, `json:$.id`, a `name:`, or `capture:<variable>`).
    pub check: String,
    /// What it expects, as the spec said it: `status in 200, 201`, `$.id exists`.
    pub expects: String,
    pub passed: u64,
    pub failed: u64,
    /// The first failures (at most [`MAX_CHECK_EXAMPLES`] per check), secrets masked.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<CheckExample>,
}

/// The most failing examples kept per check.
pub const MAX_CHECK_EXAMPLES: usize = 3;

/// A response that failed a check, as much as a reader needs to see why.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CheckExample {
    /// The response's status (0 when the step was not sent).
    pub status: u16,
    /// Its `Content-Type`, when it had one.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub content_type: String,
    /// What the check saw: `Content-Type was "application/xml"`, `$.token not found`, `body is 0 bytes`.
    pub observed: String,
    /// The body's first bytes (at most 160, lossily UTF-8), or its length only when bodies are secret.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub body_start: String,
    /// The body's length in bytes.
    #[serde(default)]
    pub body_len: u64,
}

/// Adds the counts of the same check, keeping the first examples up to the bound.
impl AddAssign<&CheckStats> for CheckStats {
    fn add_assign(&mut self, other: &CheckStats) {
        self.passed += other.passed;
        self.failed += other.failed;
        for e in &other.examples {
            if self.examples.len() >= MAX_CHECK_EXAMPLES {
                break;
            }
            self.examples.push(e.clone());
        }
    }
}

/// The load a phase applied.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct LoadSummary {
    /// `closed`, `constant`, `ramp` or `users`.
    pub model: String,
    /// The arrival rate the plan asked for, averaged over the phase (open loads).
    pub target_rate: Option<f64>,
    /// The rate at which requests were actually sent (open loads).
    pub achieved_rate: Option<f64>,
    /// Requests pipelined per connection (1: no pipelining).
    pub pipeline: u32,
    /// `batch` when pipelined batches were read whole (`pipeline_reads: batch` took effect: plain HTTP/1.1 with
    /// receive timestamps): each response of such a batch completed when the batch's last bytes arrived, as wrk
    /// records a pipelined batch. Absent when each response was read as it arrived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pipeline_reads: Option<String>,
    /// `pipeline_reads: batch`: the batches written with their reads held back until the whole batch could be
    /// there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batches_held: Option<u64>,
    /// Of those, the batches that never reached their mark (a response shorter than any before) and were read
    /// after waiting (10-200 ms): their connections wrote their next batch that much later.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batches_forced: Option<u64>,
    /// Whether connections were kept alive between requests.
    pub keep_alive: bool,
    /// User injection: the profile in the spec's words (`at_once 10, then ramp 100 over 1m`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub injection: Option<String>,
    /// User injection: the users the profile injects (this generator's share of them, for a shard).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub users_planned: Option<u64>,
    /// Users started and finished (user injection).
    pub users_started: Option<u64>,
    /// Users that finished their requests (user injection).
    pub users_finished: Option<u64>,
    /// The most users active at once (user injection): counted by each worker whenever a user starts (never
    /// sampled), and added over the workers, whose users start at the same planned times.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub users_peak_active: Option<u64>,
}

/// What became of the requests of a phase.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct RequestCounts {
    /// Requests written to a connection.
    pub sent: u64,
    /// Requests that got a complete response.
    pub completed: u64,
    /// Requests still in flight when the phase ended and the drain ran out.
    pub incomplete: u64,
    /// Requests the schedule wanted sent but that never were (open loads ended with a backlog).
    pub unsent: u64,
}

/// Adds another count to this one (merging workers, requests of a mix, or repeated runs).
impl AddAssign<&RequestCounts> for RequestCounts {
    fn add_assign(&mut self, other: &RequestCounts) {
        self.sent += other.sent;
        self.completed += other.completed;
        self.incomplete += other.incomplete;
        self.unsent += other.unsent;
    }
}

/// Complete responses by status class.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct StatusCounts {
    /// 1xx.
    pub informational: u64,
    /// 2xx.
    pub success: u64,
    /// 3xx.
    pub redirection: u64,
    /// 4xx.
    pub client_error: u64,
    /// 5xx.
    pub server_error: u64,
}

/// Adds another count to this one (merging workers, requests of a mix, or repeated runs).
impl AddAssign<&StatusCounts> for StatusCounts {
    fn add_assign(&mut self, other: &StatusCounts) {
        self.informational += other.informational;
        self.success += other.success;
        self.redirection += other.redirection;
        self.client_error += other.client_error;
        self.server_error += other.server_error;
    }
}

impl StatusCounts {
    /// Responses whose status was not 2xx.
    pub fn non_2xx(&self) -> u64 {
        self.informational + self.redirection + self.client_error + self.server_error
    }
}

/// Requests that failed without a complete response, by kind.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct ErrorCounts {
    /// The connection could not be opened.
    pub connect: u64,
    /// Reading the response failed (reset, EOF before a complete response).
    pub read: u64,
    /// Writing the request failed.
    pub write: u64,
    /// No complete response within the request timeout.
    pub timeout: u64,
    /// The response was not valid HTTP/1.1.
    pub protocol: u64,
    /// Session steps not sent because a value they use was never captured (or would break the request).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub missing_value: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Adds another count to this one.
impl AddAssign<&ErrorCounts> for ErrorCounts {
    fn add_assign(&mut self, other: &ErrorCounts) {
        self.connect += other.connect;
        self.read += other.read;
        self.write += other.write;
        self.timeout += other.timeout;
        self.protocol += other.protocol;
        self.missing_value += other.missing_value;
    }
}

impl ErrorCounts {
    /// Failed requests of every kind.
    pub fn total(&self) -> u64 {
        self.connect + self.read + self.write + self.timeout + self.protocol + self.missing_value
    }
}

/// HTTP/2 over a phase's connections.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Http2Stats {
    /// Connections that spoke HTTP/2.
    pub connections: u64,
    /// Concurrent streams per connection the load asked for (`streams`).
    pub streams_asked: u64,
    /// The fewest concurrent streams a server granted a connection: `streams` capped by the server's
    /// `SETTINGS_MAX_CONCURRENT_STREAMS` (0: no server SETTINGS arrived).
    pub streams_granted: u64,
    /// GOAWAY frames received (the server ends the connection; streams above its last stream id are sent again).
    pub goaways: u64,
    /// RST_STREAM frames received, by error code name (`refused_stream`, `cancel`, `internal_error`...). A
    /// `refused_stream` request is sent again; any other fails as a `read` error.
    pub rst_streams: BTreeMap<String, u64>,
    /// Requests sent again: refused by the server (RST_STREAM REFUSED_STREAM) or above a GOAWAY's last stream id.
    pub resent: u64,
}

impl Http2Stats {
    /// Adds another phase's (or worker's) HTTP/2 figures.
    pub fn add(&mut self, other: &Http2Stats) {
        self.connections += other.connections;
        self.streams_asked = self.streams_asked.max(other.streams_asked);
        self.streams_granted = match (self.streams_granted, other.streams_granted) {
            (0, g) | (g, 0) => g,
            (a, b) => a.min(b),
        };
        self.goaways += other.goaways;
        for (code, n) in &other.rst_streams {
            *self.rst_streams.entry(code.clone()).or_default() += n;
        }
        self.resent += other.resent;
    }

    /// The name of an HTTP/2 error code (RFC 9113 section 7).
    pub fn code_name(code: usize) -> &'static str {
        const NAMES: [&str; 14] = [
            "no_error",
            "protocol_error",
            "internal_error",
            "flow_control_error",
            "settings_timeout",
            "stream_closed",
            "frame_size_error",
            "refused_stream",
            "cancel",
            "compression_error",
            "connect_error",
            "enhance_your_calm",
            "inadequate_security",
            "http_1_1_required",
        ];
        NAMES.get(code).copied().unwrap_or("other")
    }
}

/// TLS over a phase's connections.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct TlsStats {
    /// Handshakes that completed.
    pub handshakes: u64,
    /// Of those, the ones that resumed an earlier session (no certificate exchange).
    pub resumed: u64,
    /// Completed handshakes by protocol version: `TLSv1_3`, `TLSv1_2`.
    pub versions: BTreeMap<String, u64>,
    /// The time from the TCP connect to the end of the handshake, in microseconds.
    pub handshake_time: LatencySummary,
    /// TLS failures by class. A failed handshake also counts as a `connect` error; a TLS error after the
    /// handshake (an alert on a request, such as a missing client certificate under TLS 1.3) fails the requests
    /// in flight as `read` errors.
    pub errors: TlsErrorCounts,
    /// The first TLS failure, in words, with what to do about it.
    pub first_error: Option<String>,
    /// Certificates were not checked (`tls.insecure`, `-k`): the run says so wherever it reports.
    pub insecure: bool,
}

impl TlsStats {
    /// Adds another phase's (or worker's) TLS figures; `handshake_time` is recomputed from the histograms by the
    /// caller.
    pub fn add(&mut self, other: &TlsStats) {
        self.handshakes += other.handshakes;
        self.resumed += other.resumed;
        for (v, n) in &other.versions {
            *self.versions.entry(v.clone()).or_default() += n;
        }
        self.errors += &other.errors;
        if self.first_error.is_none() {
            self.first_error.clone_from(&other.first_error);
        }
        self.insecure |= other.insecure;
    }
}

/// The class of a TLS failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsErrorKind {
    /// The certificate chain leads to no trusted CA.
    UnknownCa,
    /// The certificate does not name the server.
    NameMismatch,
    /// Another certificate problem: expired, not yet valid, revoked, badly signed.
    Certificate,
    /// No complete handshake within the request timeout.
    HandshakeTimeout,
    /// The server sent a fatal alert (a client certificate it requires or refuses, no common cipher).
    Alert,
    /// Anything else: a malformed message, a connection closed mid-handshake.
    Other,
}

/// TLS failures by class.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct TlsErrorCounts {
    /// The server's certificate is not signed by a trusted CA.
    pub unknown_ca: u64,
    /// The server's certificate is not valid for the name asked for (SNI, `tls.server_name`).
    pub name_mismatch: u64,
    /// Another certificate problem (expired, not yet valid, revoked, bad signature).
    pub certificate: u64,
    /// No complete handshake within the request timeout.
    pub handshake_timeout: u64,
    /// A fatal alert from the server.
    pub alert: u64,
    /// Any other TLS failure.
    pub other: u64,
}

/// Adds another count to this one.
impl AddAssign<&TlsErrorCounts> for TlsErrorCounts {
    fn add_assign(&mut self, other: &TlsErrorCounts) {
        self.unknown_ca += other.unknown_ca;
        self.name_mismatch += other.name_mismatch;
        self.certificate += other.certificate;
        self.handshake_timeout += other.handshake_timeout;
        self.alert += other.alert;
        self.other += other.other;
    }
}

impl TlsErrorCounts {
    pub fn count(&mut self, kind: TlsErrorKind) {
        match kind {
            TlsErrorKind::UnknownCa => self.unknown_ca += 1,
            TlsErrorKind::NameMismatch => self.name_mismatch += 1,
            TlsErrorKind::Certificate => self.certificate += 1,
            TlsErrorKind::HandshakeTimeout => self.handshake_timeout += 1,
            TlsErrorKind::Alert => self.alert += 1,
            TlsErrorKind::Other => self.other += 1,
        }
    }

    pub fn total(&self) -> u64 {
        self.unknown_ca + self.name_mismatch + self.certificate + self.handshake_timeout + self.alert + self.other
    }

    /// The non-zero classes as `(name, count)`, in a fixed order.
    pub fn nonzero(&self) -> Vec<(&'static str, u64)> {
        [
            ("unknown CA", self.unknown_ca),
            ("name mismatch", self.name_mismatch),
            ("certificate", self.certificate),
            ("handshake timeout", self.handshake_timeout),
            ("alert", self.alert),
            ("other", self.other),
        ]
        .into_iter()
        .filter(|&(_, n)| n > 0)
        .collect()
    }
}

/// Connections of a phase.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct ConnectionStats {
    /// Connections the plan asked for (at once).
    pub planned: u64,
    /// The most connections open at once.
    pub peak_open: u64,
    /// Connections opened in total, reconnects included.
    pub opened: u64,
    /// Connections that failed: connect attempts that failed, and connections the server closed or reset before
    /// answering anything on them.
    pub failed: u64,
    /// Reconnects after the server closed (`Connection: close` or EOF).
    pub reconnects: u64,
    /// Keep-alive loads: how the connections were opened before the phase started measuring (absent for
    /// connection-per-request loads and user injection).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opening: Option<ConnectionOpening>,
}

/// The opening of a keep-alive phase's connections, paced by `connect_rate` and measured apart from the load:
/// the phase's duration, counts and latencies start once every connection has been tried.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct ConnectionOpening {
    /// `auto`, a rate such as `2000/s`, or `unlimited`.
    pub connect_rate: String,
    /// Connections opened.
    pub opened: u64,
    /// Connections that could not be opened, by cause (each slot tried until refused or its timeout passed).
    pub failed: OpeningFailures,
    /// From the first connect to the last slot's outcome, seconds.
    pub duration_s: f64,
    /// Connections opened per second of the opening.
    pub rate_per_s: f64,
    /// Connects abandoned as stalled (8x the usual connect time, at least 5 ms: a SYN dropped by a full accept
    /// queue) and tried again at once instead of waiting for the kernel's retransmit.
    pub slow_connects: u64,
    /// Times `auto` halved its connect rate after a stalled connect.
    pub backoffs: u64,
    /// The first failure, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_error: Option<String>,
}

/// Connections an opening could not open, by cause.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct OpeningFailures {
    /// The target refused (`ECONNREFUSED`).
    pub refused: u64,
    /// Still not connected when the phase's timeout passed.
    pub timed_out: u64,
    /// No local port was free (`EADDRNOTAVAIL`).
    pub address_unavailable: u64,
    /// Anything else.
    pub other: u64,
}

impl OpeningFailures {
    pub fn total(&self) -> u64 {
        self.refused + self.timed_out + self.address_unavailable + self.other
    }
}

/// Bytes on the wire, headers included.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct ByteCounts {
    /// Bytes received.
    pub read: u64,
    /// Bytes sent.
    pub written: u64,
}

/// The `p`-th percentile (0-100) of a histogram, nearest-rank: the value of rank `ceil(p/100 * N)` (at least 1), the
/// highest value of its bucket. The rank is computed so that a product the decimal percentile makes whole (99.9% of
/// 1,000 values is rank 999) stays whole: `99.9 / 100` is `0.9990000000000001` in binary, and HdrHistogram's
/// `value_at_quantile(0.999)` would take rank 1,000, the maximum. (Java's HdrHistogram steps the percentile down by
/// one unit in the last place for the same reason.)
pub fn value_at_percentile(h: &Histogram<u64>, p: f64) -> u64 {
    let n = h.len();
    if n == 0 {
        return 0;
    }
    h.value_at_quantile(quantile_of_rank(nearest_rank(p, n), n))
}

/// The nearest rank (1..=n) of the `p`-th percentile (0-100) of `n` values: `ceil(p/100 * n)`, a product within a
/// few units in the last place of a whole number taken as that number.
pub fn nearest_rank(p: f64, n: u64) -> u64 {
    let x = p.clamp(0.0, 100.0) / 100.0 * n as f64;
    let whole = x.round();
    let rank = if (x - whole).abs() <= 1e-9 * whole.max(1.0) { whole } else { x.ceil() };
    (rank as u64).clamp(1, n.max(1))
}

/// The quantile HdrHistogram's `value_at_quantile` turns back into exactly `rank` of `n` (half a rank below it, so
/// no rounding of the product moves it across a whole number).
fn quantile_of_rank(rank: u64, n: u64) -> f64 {
    ((rank as f64 - 0.5) / n as f64).clamp(0.0, 1.0)
}

/// Summary statistics of a histogram, in microseconds. Percentiles are nearest-rank: the p-th of N values is the
/// value of rank `ceil(p/100 * N)` (at least 1) in sorted order, reported as the highest value of its histogram
/// bucket (3 significant digits), as HdrHistogram's Rust and Java libraries and wrk2 compute them (Python's
/// `hdrhistogram` rounds the rank instead and can differ by one rank on small counts).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct LatencySummary {
    /// Samples recorded.
    pub count: u64,
    /// The smallest sample.
    pub min_us: u64,
    /// The mean of the samples.
    pub mean_us: f64,
    /// The standard deviation of the samples.
    pub stdev_us: f64,
    /// The largest sample (to the histogram's precision).
    pub max_us: u64,
    /// `p50`, `p75`, `p90`, `p95`, `p99`, `p99.9`, `p99.99` to microseconds, nearest-rank (rank `ceil(p/100 * N)`).
    pub percentiles: BTreeMap<String, u64>,
}

/// The full-resolution histograms, serialized as base64 of the compressed V2 encoding (`HISTFAAA...`).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Histograms {
    /// Latency from the intended send time, in microseconds (coordinated-omission corrected in open loads).
    #[serde(with = "crate::histogram_serde")]
    #[schemars(with = "String", pattern(r"^HISTFAAA"))]
    pub latency: Histogram<u64>,
    /// Actual send to completion, in microseconds (uncorrected).
    #[serde(with = "crate::histogram_serde")]
    #[schemars(with = "String", pattern(r"^HISTFAAA"))]
    pub service_time: Histogram<u64>,
    /// Actual send minus intended send, in microseconds (open loads).
    #[serde(with = "crate::histogram_serde")]
    #[schemars(with = "String", pattern(r"^HISTFAAA"))]
    pub send_lag: Histogram<u64>,
    /// Time to open a TCP connection, in microseconds.
    #[serde(with = "crate::histogram_serde")]
    #[schemars(with = "String", pattern(r"^HISTFAAA"))]
    pub connect_time: Histogram<u64>,
    /// Time from the TCP connect to the end of the TLS handshake, in microseconds (HTTPS; empty otherwise).
    #[serde(with = "crate::histogram_serde", default = "crate::new_histogram")]
    #[schemars(with = "String", pattern(r"^HISTFAAA"))]
    pub tls_handshake: Histogram<u64>,
}

impl Default for Histograms {
    fn default() -> Self {
        Self {
            latency: new_histogram(),
            service_time: new_histogram(),
            send_lag: new_histogram(),
            connect_time: new_histogram(),
            tls_handshake: new_histogram(),
        }
    }
}

impl Histograms {
    /// Adds every histogram of `other` into this one.
    pub fn add(&mut self, other: &Histograms) -> Result<(), HistogramsAddError> {
        let add = |into: &mut Histogram<u64>, from: &Histogram<u64>, what: &str| {
            into.add(from).map_err(|e| HistogramsAddError(format!("{what} histograms do not add up: {e:?}")))
        };
        add(&mut self.latency, &other.latency, "latency")?;
        add(&mut self.service_time, &other.service_time, "service time")?;
        add(&mut self.send_lag, &other.send_lag, "send lag")?;
        add(&mut self.connect_time, &other.connect_time, "connect time")?;
        add(&mut self.tls_handshake, &other.tls_handshake, "TLS handshake")
    }
}

/// Two histograms that do not add up (a value of one outside the other's range), with which one, in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistogramsAddError(pub String);

impl std::fmt::Display for HistogramsAddError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for HistogramsAddError {}

/// One second of a phase.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct TimelinePoint {
    /// Seconds from the phase's start (end of the interval).
    pub t: f64,
    /// Requests sent in this interval.
    pub sent: u64,
    /// Responses completed in this interval.
    pub completed: u64,
    /// Requests failed in this interval.
    pub errors: u64,
    /// Non-2xx responses in this interval.
    pub non_2xx: u64,
    /// The arrival rate the schedule asked for in this interval (open loads).
    pub target_rate: Option<f64>,
    /// The median latency of the responses completed in this interval.
    pub p50_us: u64,
    /// The 99th percentile latency of this interval.
    pub p99_us: u64,
    /// The largest latency of this interval.
    pub max_us: u64,
    /// The most connections open at once during the interval (at the end of the last one they are closing).
    pub connections_open: u64,
    /// The most users active at any moment of the interval (user injection), counted at each change, not sampled.
    pub users_active: Option<u64>,
    /// Requests sent and not yet answered at the end of the interval, with those taken from the schedule but
    /// waiting for their connection (closed and open loads): at the connection count, every connection was busy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_flight: Option<u64>,
    /// The median service time of the responses completed in this interval (open loads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_p50_us: Option<u64>,
}

/// One generator worker thread during a phase.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct WorkerStats {
    /// The worker's number, from 0.
    pub index: usize,
    /// The CPU it was pinned to (`None`: unpinned).
    pub cpu: Option<u32>,
    /// CPU seconds in user mode during the phase.
    pub user_seconds: f64,
    /// CPU seconds in the kernel during the phase.
    pub system_seconds: f64,
    /// (user + system) / wall time of the phase: 1.0 is a saturated core. With `pacing: precise`, the time
    /// spent polling for the next send time is left out (it is `spin_seconds`).
    pub utilization: f64,
    /// Whether the worker's CPU was saturated, so the generator may have been the bottleneck.
    pub saturated: bool,
    /// `pacing: precise`: the CPU seconds the worker spent polling until its requests were due (part of
    /// `user_seconds + system_seconds`, the cost of precise pacing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spin_seconds: Option<f64>,
}

/// Whether a phase's numbers describe the target or the generator.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct Validity {
    /// `false` when the generator did not deliver what the plan asked: the numbers describe loadgate, not the
    /// target.
    pub valid: bool,
    /// Why the measurement is invalid.
    pub problems: Vec<Problem>,
    /// Problems that did not invalidate the run but that a reader must see.
    pub warnings: Vec<Problem>,
}

/// A problem with a measurement.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Problem {
    /// `rate_not_reached` (a problem when the generator limited the rate, a warning when the plan or the target
    /// did), `connections_missing`, `generator_saturated`, `ephemeral_ports_exhausted`,
    /// `incomplete_requests`, ...
    pub kind: String,
    /// A sentence for people, with the numbers.
    pub message: String,
}

/// The percentiles every summary carries.
pub const SUMMARY_PERCENTILES: [(&str, f64); 7] =
    [("p50", 50.0), ("p75", 75.0), ("p90", 90.0), ("p95", 95.0), ("p99", 99.0), ("p99.9", 99.9), ("p99.99", 99.99)];

impl LatencySummary {
    /// Summarizes a histogram of microseconds. Percentiles come from the histogram itself, never from averages.
    pub fn from_histogram(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return LatencySummary::default();
        }
        LatencySummary {
            count: h.len(),
            min_us: h.min(),
            mean_us: h.mean(),
            stdev_us: h.stdev(),
            max_us: h.max(),
            percentiles: SUMMARY_PERCENTILES
                .iter()
                .map(|(name, q)| ((*name).to_owned(), value_at_percentile(h, *q)))
                .collect(),
        }
    }

    /// The value of a percentile such as 99.9, if the summary carries it.
    pub fn percentile(&self, p: f64) -> Option<u64> {
        SUMMARY_PERCENTILES.iter().find(|(_, q)| *q == p).and_then(|(name, _)| self.percentiles.get(*name).copied())
    }
}

/// What was measured in one phase (a scenario instance): the one record of a phase's measurements, which the
/// engine fills and `loadgate_results::ScenarioResult` carries with what is judged after the phase. `judged` is
/// that judgement, in its place among the measurements (results.json's order of keys): nothing in the engine's
/// record ([`Unjudged`]), the verdicts and who limited the load in a result's. `started_at_offset` is the plan's
/// (`phase.start_offset`, or 0): the caller knows the run's real start and may overwrite it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct PhaseMeasurement<J = Unjudged> {
    /// The position of the instance in the plan, from 0.
    pub index: usize,
    /// `plaintext[connections=256]`.
    pub name: String,
    /// The scenario key, shared by all cells of a matrix.
    pub scenario: String,
    /// The matrix variables of this cell, as `[name, value]` pairs in the spec's order (empty outside a matrix).
    pub matrix: Vec<(String, String)>,
    /// `false` for warmup and primer phases: reported, never gated.
    pub gate: bool,
    /// Seconds from the run's start to this phase's start.
    pub started_at_offset: f64,
    /// Seconds the load ran (first request to the stop condition, plus the drain).
    pub duration: f64,
    /// The load model and the rate asked for and achieved.
    pub load: LoadSummary,
    /// Requests sent, completed, left in flight and never sent.
    pub requests: RequestCounts,
    /// Responses by status class.
    pub status: StatusCounts,
    /// Failed requests by kind.
    pub errors: ErrorCounts,
    /// Connections planned, opened and failed.
    pub connections: ConnectionStats,
    /// Bytes on the wire.
    pub bytes: ByteCounts,
    /// Completed requests per second over `duration`.
    pub throughput: f64,
    /// Latency measured from the intended send time (coordinated-omission corrected in open loads; equal to
    /// the service time in closed loads).
    pub latency: LatencySummary,
    /// Actual send to completion.
    pub service_time: LatencySummary,
    /// Actual send minus intended send (open loads).
    pub send_lag: LatencySummary,
    /// Time to open a TCP connection, per connection opened (reconnects included): from starting the connect to
    /// the socket being writable; the TLS handshake that may follow is in `tls`. Empty in files written before
    /// it was summarised.
    #[serde(default)]
    pub connect_time: LatencySummary,
    /// HTTPS targets: handshakes, resumption, handshake time and TLS errors by class. Absent for plain HTTP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsStats>,
    /// HTTP/2 targets (`target.protocol: http2`, or `auto` where ALPN chose h2): connections, streams asked and
    /// granted, GOAWAYs and RST_STREAMs. Absent for HTTP/1.1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http2: Option<Http2Stats>,
    /// The full-resolution histograms behind the summaries.
    pub histograms: Histograms,
    /// One point per second of the phase.
    pub timeline: Vec<TimelinePoint>,
    /// Per generator worker thread: where it ran and how busy it was.
    pub workers: Vec<WorkerStats>,
    /// Whether the generator delivered what the plan asked.
    pub validity: Validity,
    /// What is judged of the phase after it ran (nothing in the engine's record).
    #[serde(flatten)]
    pub judged: J,
    /// Set when the phase was cut short: by an `abort_on_fail` SLO, Ctrl-C, or the target dying.
    pub aborted: Option<String>,
    /// For a request mix: the same measurements per named request, in the mix's order. Empty otherwise.
    #[serde(default)]
    pub by_request: Vec<RequestBreakdown>,
    /// Responses whose checks ran (`check:`), over all requests: what `error_rate` needs besides the status
    /// classes. Empty without checks.
    #[serde(default, skip_serializing_if = "CheckedResponses::is_empty")]
    pub checked: CheckedResponses,
    /// Each check of each request, in the plan's order: how often it held and failed, with the first failures.
    /// Empty without checks. The `checks` and `check_failures` SLOs read it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<CheckStats>,
    /// A replay load (`load: { replay: ... }`): how faithfully it sent its log (schedule error, rate per 10 ms,
    /// the multiset of requests, skips, statuses against the logged ones).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<replay::ReplayFidelity>,
}

impl PhaseMeasurement<Unjudged> {
    /// The same measurements with their judgement in its slot: how a result is made from the engine's record.
    pub fn judged<J>(self, judged: J) -> PhaseMeasurement<J> {
        // Rust has no struct update across type parameters (RFC 2528): every field moves, each named once here (a
        // field added to the record and not here fails to compile: the pattern has no `..`).
        macro_rules! moved {
            ($($field:ident),*) => {{
                let PhaseMeasurement { $($field,)* judged: Unjudged {} } = self;
                PhaseMeasurement { $($field,)* judged }
            }};
        }
        moved!(
            index,
            name,
            scenario,
            matrix,
            gate,
            started_at_offset,
            duration,
            load,
            requests,
            status,
            errors,
            connections,
            bytes,
            throughput,
            latency,
            service_time,
            send_lag,
            connect_time,
            tls,
            http2,
            histograms,
            timeline,
            workers,
            validity,
            aborted,
            by_request,
            checked,
            checks,
            replay
        )
    }
}

/// The judgement slot of the engine's [`PhaseMeasurement`]: nothing is judged before the phase ends.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Unjudged {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histograms_round_trip_through_histfaaa() {
        let mut h = new_histogram();
        for v in [1u64, 250, 999, 20_000, 900_000] {
            h.record(v).unwrap();
        }
        let text = histogram_serde::encode(&h).unwrap();
        assert!(text.starts_with("HISTFAAA"), "{text}");
        let back = histogram_serde::decode(&text).unwrap();
        assert_eq!(back.len(), 5);
        assert_eq!(back.max(), h.max());
    }

    #[test]
    fn percentiles_take_the_nearest_rank_exactly() {
        // 1..=1000 us: p99.9 is the 999th value, not the maximum (99.9 / 100 * 1000 is 999.0000000000001 in f64).
        let mut h = new_histogram();
        for v in 1..=1000u64 {
            h.record(v).unwrap();
        }
        assert_eq!(value_at_percentile(&h, 99.9), 999);
        assert_eq!(value_at_percentile(&h, 99.0), 990);
        assert_eq!(value_at_percentile(&h, 50.0), 500);
        assert_eq!(value_at_percentile(&h, 99.95), 1000, "rank ceil(999.5) = 1000");
        assert_eq!(value_at_percentile(&h, 0.0), 1, "rank at least 1");
        assert_eq!(value_at_percentile(&h, 100.0), 1000);
        let s = LatencySummary::from_histogram(&h);
        assert_eq!(s.percentiles["p99.9"], 999);
        for (p, n, rank) in
            [(99.9, 4000, 3996), (99.99, 10_000, 9999), (99.9, 10_000, 9990), (50.0, 3, 2), (99.0, 7, 7)]
        {
            assert_eq!(nearest_rank(p, n), rank, "p{p} of {n}");
        }
        // Every percentile with up to two decimals, over counts up to 2,000: the rank is ceil(p * n / 100) computed in
        // integers.
        for hundredths in 0..=10_000u64 {
            for n in (1..=2000u64).step_by(37) {
                let exact = (hundredths * n).div_ceil(10_000).max(1);
                assert_eq!(nearest_rank(hundredths as f64 / 100.0, n), exact, "p{} of {n}", hundredths as f64 / 100.0);
            }
        }
        assert_eq!(value_at_percentile(&new_histogram(), 99.0), 0);
    }
}
