//! The validated spec: every template rendered, every unit parsed, every matrix cell expanded.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::diag::Diagnostic;
use crate::units::{ByteSize, CpuList, Duration, Percent, Rate};
use crate::{BuiltinKind, ConnectRate, OnMismatch, PipelineMode, PipelineReads, SaturationPolicy, Slo};

fn is_one(n: &u32) -> bool {
    *n == 1
}

/// The only spec format version this loadgate reads.
pub const SPEC_VERSION: u64 = 1;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Spec {
    pub name: String,
    pub description: Option<String>,
    pub seed: Option<u64>,
    pub vars: BTreeMap<String, Var>,
    pub hardware: Hardware,
    pub target: Target,
    /// A second target to compare with `target` (A/B in one run): every gated scenario runs on both.
    pub candidate: Option<Target>,
    /// Repetitions and statistical verdicts.
    pub gating: crate::Gating,
    /// Checks judged against a history store of earlier runs (`history:`).
    pub history: Option<crate::HistoryGate>,
    /// Which scenarios send their requests once and check them before any load (`verify:`).
    pub verify: crate::Verify,
    pub scenarios: Vec<Scenario>,
    /// Where the run's live metrics go (`outputs:`): never in the plan or the results (headers may be
    /// credentials); `--output` on the command line replaces them.
    #[serde(skip)]
    pub outputs: Vec<crate::output::OutputSpec>,
    /// Warnings found while validating (errors never reach a `Spec`).
    #[serde(skip)]
    pub warnings: Vec<Diagnostic>,
    /// What must never reach an artifact: values read from the environment, secret variables' values,
    /// credential headers' values (see [`crate::secrets`]).
    #[serde(skip)]
    pub secrets: crate::secrets::Redactor,
    /// The files the spec read besides itself (data files, TLS files), in the order first read: what a run
    /// embeds in results.json so that `loadgate repro` can rebuild the plan.
    #[serde(skip)]
    pub files_read: Vec<FileRead>,
}

/// A file a spec read while it was validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRead {
    /// The name as the spec gives it (relative to the spec's directory).
    pub name: String,
    /// Where it was found.
    pub path: std::path::PathBuf,
    pub kind: FileKind,
}

/// What a file a spec read is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// Values of `pick_line` or `pick_csv`.
    Data,
    /// A `target.tls` certificate or key.
    Tls,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Var {
    /// The resolved value, as text.
    pub value: String,
    pub source: VarSource,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum VarSource {
    Default,
    Environment,
    CommandLine,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Hardware {
    pub generator_cpus: Option<CpuList>,
    /// Worker threads; defaults to one per generator CPU, or 1 when the generator is not pinned.
    pub threads: Option<u32>,
    /// How open loads wait for their requests' intended send times.
    pub pacing: crate::Pacing,
    pub target_cpus: Option<CpuList>,
    pub on_mismatch: OnMismatch,
    pub saturation: SaturationPolicy,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Target {
    Url { base_url: BaseUrl },
    Command { base_url: BaseUrl, start: StartCommand },
    Builtin { server: Builtin },
}

impl Target {
    /// The HTTP version to speak (`target.protocol`).
    pub fn protocol(&self) -> crate::Protocol {
        match self {
            Target::Url { base_url } | Target::Command { base_url, .. } => base_url.protocol,
            Target::Builtin { server } => server.protocol,
        }
    }

    /// Spoken to over plain HTTP/1.1: no TLS, and not HTTP/2 (`auto` over http:// is HTTP/1.1), where
    /// `pipeline_reads: batch` reads batches whole.
    pub fn plain_http1(&self) -> bool {
        let tls = match self {
            Target::Url { base_url } | Target::Command { base_url, .. } => &base_url.tls,
            Target::Builtin { server } => &server.tls,
        };
        tls.is_none() && self.protocol() != crate::Protocol::Http2
    }
}

/// An `http://host:port[/prefix]` or `https://...` URL, split for the engine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BaseUrl {
    pub url: String,
    pub host: String,
    pub port: u16,
    /// A path prefix (no trailing slash), prepended to every request path.
    pub prefix: String,
    /// `target.protocol`: HTTP/1.1, HTTP/2 (h2 by ALPN over TLS, h2c with prior knowledge), or `auto` (ALPN).
    #[serde(skip_serializing_if = "crate::Protocol::is_http1")]
    pub protocol: crate::Protocol,
    /// `https://`: how to speak TLS (the `target.tls` block, or its defaults). `None` for `http://`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsOptions>,
}

/// `target.tls`: how loadgate speaks TLS to an HTTPS target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TlsOptions {
    /// A PEM file of CA certificates to trust instead of Mozilla's roots, relative to the spec's directory.
    pub ca: Option<String>,
    /// Accept any server certificate (self-signed test servers); loudly reported.
    pub insecure: bool,
    /// PEM files of a client certificate chain and its private key (mTLS), relative to the spec's directory.
    pub client_cert: Option<String>,
    pub client_key: Option<String>,
    /// Resume TLS sessions on new connections (default true).
    pub resume: bool,
    /// The name sent in SNI and checked against the certificate (default: the URL's host).
    pub server_name: Option<String>,
}

impl Default for TlsOptions {
    fn default() -> Self {
        TlsOptions { ca: None, insecure: false, client_cert: None, client_key: None, resume: true, server_name: None }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StartCommand {
    pub command: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub cwd: Option<String>,
    pub ready: Ready,
    pub stop_grace: Duration,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Ready {
    HttpGet { path: String, status: u16, timeout: Duration, interval: Duration },
    Tcp { timeout: Duration, interval: Duration },
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Builtin {
    pub kind: BuiltinKind,
    pub delay: Option<Duration>,
    pub status: u16,
    pub body_size: Option<ByteSize>,
    pub chunked: bool,
    /// For `cpu`: the CPU time each request costs (`work: 50us`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub work: Option<Duration>,
    /// For `cpu`: CPU time added to each request in the slow path (`slow_path: 15us`), spent in a callee of the
    /// server's `slow_path` function.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slow_path: Option<Duration>,
    /// `target.protocol`: how loadgate speaks to the server (which answers HTTP/1.1, h2c and h2 alike).
    #[serde(skip_serializing_if = "crate::Protocol::is_http1")]
    pub protocol: crate::Protocol,
    /// Serve HTTPS with a self-signed certificate made at start (`builtin: { kind: plaintext, tls: true }`);
    /// the options are the spec's `target.tls` (only `resume` matters: loadgate trusts the certificate it made).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsOptions>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Scenario {
    pub name: String,
    pub description: Option<String>,
    pub gate: bool,
    pub cooldown: Duration,
    /// This scenario's repetitions, overriding `gating.repeat`.
    pub repeat: Option<u32>,
    /// The matrix variables in declaration order with their values; empty without a matrix.
    pub matrix: Vec<(String, Vec<String>)>,
    /// One cell per matrix combination (one cell without a matrix).
    pub cells: Vec<Cell>,
    /// Objectives over all the cells together (`sweep:`), for a matrix scenario.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sweep: Option<crate::SweepSpec>,
    /// What is recorded inside the target while the scenario's measured phases run (`profile:`, the spec's or
    /// the scenario's own).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<crate::profile::Profile>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cell {
    /// This cell's matrix values.
    pub bindings: Vec<(String, String)>,
    /// The request; for a mix, the mix's first request.
    pub request: Request,
    /// A weighted mix of named requests (`requests:`); empty for a single `request`.
    pub mix: Vec<MixRequest>,
    pub timeout: Duration,
    pub load: Load,
    /// HTTP/2: concurrent streams per connection (`load.<model>.streams`, h2load's `-m`); 1 by default.
    #[serde(skip_serializing_if = "is_one")]
    pub streams: u32,
    pub slos: Vec<Slo>,
    /// What each user does from connect to close (`session:`, user injection only): named requests and think
    /// times, in order; empty otherwise. `request` is then the first request step.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub session: Vec<SessionStep>,
    /// A per-user cookie jar (`cookies:`; on by default with a session).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub cookies: bool,
    /// Whether a failed check fails the response in `error_rate` (`failed_checks:`).
    #[serde(skip_serializing_if = "is_default")]
    pub failed_checks: crate::FailedChecks,
    /// The session's variables (captured values), index = slot.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub variables: Vec<crate::Variable>,
    /// The scenario's own `verify:` (`Some(false)` opts out); `None` follows the spec's `verify:`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verify: Option<bool>,
    /// The most bytes of a body that body regexes read (`defaults.check_body_limit`).
    pub check_body_limit: u64,
}

/// `check_body_limit`'s default: 64 KiB.
pub const DEFAULT_CHECK_BODY_LIMIT: u64 = 64 * 1024;

fn is_default<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

/// One step of a user's session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[expect(clippy::large_enum_variant, reason = "a session has a few steps, read once per spec")]
pub enum SessionStep {
    /// Send the request and wait for its response.
    Request { name: String, request: Request },
    /// Pause the user.
    Think { duration: Duration },
}

/// One named request of a mix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MixRequest {
    pub name: String,
    pub weight: u32,
    pub request: Request,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Request {
    pub method: String,
    /// The path with the base URL's prefix and the encoded query: `/api/orders?i=1`. Generated parts show as
    /// `{seq(0, 1)}`.
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<String>,
    /// Set when some part is generated per request (`{{ seq() }}`, ...): the same fields as segments.
    pub dynamic: Option<DynamicRequest>,
    /// What the response must satisfy (`check:`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<crate::Check>,
    /// What a session step takes from its response for later steps (`capture:`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub captures: Vec<crate::Capture>,
}

/// A request with per-request values, compiled into literal segments and generator slots.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct DynamicRequest {
    pub path: Vec<crate::generate::Segment>,
    pub headers: Vec<(String, Vec<crate::generate::Segment>)>,
    pub body: Option<Vec<crate::generate::Segment>>,
    pub generators: Vec<crate::generate::Generator>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "model", rename_all = "snake_case")]
pub enum Load {
    Closed {
        connections: u64,
        stop: Stop,
        pipeline: u32,
        pipeline_mode: PipelineMode,
        pipeline_reads: PipelineReads,
        keep_alive: bool,
        connect_rate: ConnectRate,
    },
    Open {
        rate: Rate,
        duration: Duration,
        connections: u64,
        connect_rate: ConnectRate,
    },
    Ramp {
        connections: u64,
        start_rate: Rate,
        stages: Vec<RampStage>,
        connect_rate: ConnectRate,
    },
    Users {
        steps: Vec<UserStep>,
        /// The most users (connections) active at once.
        max_connections: u64,
    },
    /// A capacity search: open-loop steps at rising rates, then bisection, for the highest rate at which the
    /// scenario's SLOs hold.
    Capacity {
        search: CapacitySearch,
        connections: u64,
        connect_rate: ConnectRate,
    },
    /// A recorded log or HAR file replayed at its requests' start times (open loop).
    Replay(Box<crate::replay::Replay>),
}

/// How a capacity search steps (`load: { capacity: ... }`): each step is an open-loop run of `duration` at one
/// rate; the rate grows `step` times from `from` until a step fails (or `to` passes), then the search halves the
/// interval between the highest rate that held and the lowest that failed until they are `precision` apart, and
/// runs the rate found `confirm` more times. No step starts that could not end within `max_duration`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize)]
pub struct CapacitySearch {
    /// The first step's rate.
    pub from: Rate,
    /// The highest rate the search asks.
    pub to: Rate,
    /// How close the highest rate that held and the lowest that failed must be, relative to the former.
    pub precision: Percent,
    /// The factor from one rate to the next while every step holds (above 1).
    pub step: f64,
    /// How long each step's load runs.
    pub duration: Duration,
    /// How many more times the rate found runs, each of which must hold.
    pub confirm: u32,
    /// The most the whole search may take.
    pub max_duration: Duration,
    /// A pause before every step after the first.
    pub pause: Duration,
}

impl CapacitySearch {
    /// The most steps the search can take when no confirmation fails: every step up from `from` to `to`, the
    /// bisection of the widest interval a step up leaves down to the precision, and the confirmations.
    pub fn worst_case_steps(&self) -> u32 {
        let (from, to) = (self.from.per_sec().max(1e-3), self.to.per_sec());
        let ups = if to > from { (to / from).ln() / self.step.ln() } else { 0.0 };
        let ups = ups.ceil().max(0.0) as u32 + 1;
        let width = (self.step - 1.0).max(0.0);
        let halvings = if self.precision.0 > 0.0 && width > self.precision.0 {
            (width / self.precision.0).log2().ceil() as u32
        } else {
            0
        };
        ups + halvings + self.confirm
    }

    /// How long the worst-case search takes: its steps, with a pause before each after the first.
    pub fn worst_case_duration(&self) -> Duration {
        let n = self.worst_case_steps();
        Duration(self.duration.0 * n + self.pause.0 * n.saturating_sub(1))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stop {
    Duration(Duration),
    Requests(u64),
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize)]
pub struct RampStage {
    pub to: Rate,
    pub over: Duration,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum UserStep {
    AtOnce { users: u64 },
    Ramp { users: u64, over: Duration },
    PerSecond { rate: Rate, during: Duration },
    RampPerSecond { from: Rate, to: Rate, during: Duration },
    Pause { during: Duration },
}

impl UserStep {
    /// The users the step injects: `at_once` and `ramp` their count, `per_second` its rate times its time, a
    /// `ramp_per_second` the mean of its two rates times its time, a pause none.
    pub fn users(&self) -> f64 {
        match self {
            UserStep::AtOnce { users } | UserStep::Ramp { users, .. } => *users as f64,
            UserStep::PerSecond { rate, during } => rate.per_sec() * during.as_secs_f64(),
            UserStep::RampPerSecond { from, to, during } => {
                (from.per_sec() + to.per_sec()) / 2.0 * during.as_secs_f64()
            }
            UserStep::Pause { .. } => 0.0,
        }
    }

    /// The step in the spec's words: `at_once 10`, `ramp 100 over 1m`, `per_second 5/s during 30s`,
    /// `ramp_per_second 1/s to 10/s during 1m`, `pause 10s`.
    pub fn describe(&self) -> String {
        match self {
            UserStep::AtOnce { users } => format!("at_once {users}"),
            UserStep::Ramp { users, over } => format!("ramp {users} over {over}"),
            UserStep::PerSecond { rate, during } => format!("per_second {rate} during {during}"),
            UserStep::RampPerSecond { from, to, during } => format!("ramp_per_second {from} to {to} during {during}"),
            UserStep::Pause { during } => format!("pause {during}"),
        }
    }

    /// An injection profile in the spec's words, its steps in order: `at_once 10, then ramp 100 over 1m`.
    pub fn profile(steps: &[UserStep]) -> String {
        steps.iter().map(UserStep::describe).collect::<Vec<_>>().join(", then ")
    }

    pub fn duration(&self) -> Duration {
        match self {
            UserStep::AtOnce { .. } => Duration::ZERO,
            UserStep::Ramp { over, .. } => *over,
            UserStep::PerSecond { during, .. }
            | UserStep::RampPerSecond { during, .. }
            | UserStep::Pause { during } => *during,
        }
    }
}

impl Load {
    /// Sets how fast the load's keep-alive connections open (`--connect-rate`); user injection opens a
    /// connection per user and has none.
    pub fn set_connect_rate(&mut self, rate: ConnectRate) {
        match self {
            Load::Closed { connect_rate, .. }
            | Load::Open { connect_rate, .. }
            | Load::Ramp { connect_rate, .. }
            | Load::Capacity { connect_rate, .. } => *connect_rate = rate,
            Load::Users { .. } | Load::Replay(_) => {}
        }
    }

    /// How long the load runs, where it is bounded by time.
    pub fn duration(&self) -> Option<Duration> {
        match self {
            Load::Closed { stop: Stop::Duration(d), .. } | Load::Open { duration: d, .. } => Some(*d),
            Load::Closed { stop: Stop::Requests(_), .. } => None,
            Load::Ramp { stages, .. } => Some(Duration(stages.iter().map(|s| s.over.0).sum())),
            Load::Users { steps, .. } => Some(Duration(steps.iter().map(|s| s.duration().0).sum())),
            Load::Capacity { search, .. } => Some(search.max_duration),
            Load::Replay(r) => Some(r.summary.duration),
        }
    }
}
