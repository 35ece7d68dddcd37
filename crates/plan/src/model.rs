//! The execution plan: everything the engine and the target launcher need, fully resolved.
//!
//! A plan is pure data. It holds no template, no YAML and no reference to the machine it was compiled on beyond
//! the CPU ids the spec named, so the same spec and variables give the same plan (and the same hash) anywhere.

use std::collections::BTreeMap;

use loadgate_model::units::{CpuList, Duration, Rate};
pub use loadgate_model::Protocol;
use serde::{Deserialize, Serialize};

/// The version of the plan's JSON form (`loadgate plan --json`).
pub const PLAN_FORMAT_VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExecutionPlan {
    pub format_version: u32,
    /// The spec's `name`.
    pub name: String,
    pub description: Option<String>,
    /// The seed for every random choice in the run (request data), from the spec or derived from its name.
    pub seed: u64,
    /// Every variable with its resolved value and where that value came from.
    pub vars: BTreeMap<String, ResolvedVar>,
    pub hardware: HardwarePlan,
    pub target: TargetPlan,
    /// A second target compared with `target` in the same run (A/B): every gated phase runs on both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub candidate: Option<TargetPlan>,
    /// Repetitions and statistical verdicts (absent: one run of each phase, judged on its own).
    #[serde(default, skip_serializing_if = "Gating::is_default")]
    pub gating: Gating,
    /// Scenario instances in the order they run; a matrix scenario contributes one phase per cell.
    pub phases: Vec<Phase>,
    /// The matrix scenarios with sweep SLOs (`sweep:`), judged once their cells have run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sweeps: Vec<SweepPlan>,
    /// The wall time of one pass over the phases (every phase once, on one side), where every phase is bounded
    /// by time; `None` when some phase stops after a request count instead. [`ExecutionPlan::wall_time`] counts
    /// repetitions and A/B sides.
    pub expected_duration: Option<Duration>,
    /// The spec's `history:` checks, judged against a history store after the run (`run --history STORE`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<loadgate_model::HistoryGate>,
    /// The spec's `verify:` (which phases verify is each phase's `checks.verify`); left out when default.
    #[serde(default, skip_serializing_if = "is_default_verify")]
    pub verify: loadgate_model::Verify,
    /// Hex SHA-256 (first 16 hex digits) of the plan's canonical JSON without this field. A shard's plan
    /// (`shard` set) keeps the hash of the whole plan it is a slice of: the identity its shards share.
    pub hash: String,
    /// Set when this plan is one slice of a plan run on several generators (`--shard I/N`): see
    /// [`crate::shard()`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<Slice>,
}

/// Slice `index` (from 1) of `count`: `--shard 2/4`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Slice {
    pub index: u32,
    pub count: u32,
}

impl std::fmt::Display for Slice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResolvedVar {
    pub value: String,
    pub source: VarSource,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VarSource {
    /// The default in the spec's `vars`.
    Default,
    /// `LOADGATE_VAR_<NAME>` in the environment.
    Environment,
    /// `--set name=value` on the command line.
    CommandLine,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HardwarePlan {
    /// The CPUs the generator's workers are pinned to, one worker per CPU unless `threads` says otherwise;
    /// `None` when the spec does not pin the generator.
    pub generator_cpus: Option<CpuList>,
    /// The CPUs the target is pinned to (only applied when loadgate starts the target).
    pub target_cpus: Option<CpuList>,
    pub on_mismatch: OnMismatch,
    /// Whether a saturated generator worker invalidates a phase.
    pub saturation: SaturationPolicy,
    /// One entry per generator worker thread.
    pub workers: Vec<WorkerPlan>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerPlan {
    pub index: usize,
    /// The CPU the worker thread is pinned to; `None` when unpinned.
    pub cpu: Option<u32>,
    /// How the worker waits for an open load's intended send times.
    #[serde(default, skip_serializing_if = "Pacing::is_default")]
    pub pacing: Pacing,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TargetPlan {
    /// A server that is already running.
    Url {
        base_url: String,
        /// The HTTP version spoken (`target.protocol`).
        #[serde(default, skip_serializing_if = "Protocol::is_http1")]
        protocol: Protocol,
        /// `https://` targets: how to speak TLS.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tls: Option<TlsPlan>,
    },
    /// A server loadgate starts, waits for and stops.
    Command {
        base_url: String,
        #[serde(default, skip_serializing_if = "Protocol::is_http1")]
        protocol: Protocol,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tls: Option<TlsPlan>,
        command: Vec<String>,
        env: BTreeMap<String, String>,
        cwd: Option<String>,
        ready: ReadyProbe,
        stop_grace: Duration,
    },
    /// The built-in reference server (`loadgate serve`), started on an ephemeral loopback port.
    Builtin {
        server: BuiltinServer,
        #[serde(default, skip_serializing_if = "Protocol::is_http1")]
        protocol: Protocol,
        /// Served over HTTPS with a self-signed certificate made at start, which loadgate then trusts.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tls: Option<TlsPlan>,
    },
}

impl TargetPlan {
    /// The HTTP version to speak (`target.protocol`).
    pub fn protocol(&self) -> Protocol {
        match self {
            TargetPlan::Url { protocol, .. }
            | TargetPlan::Command { protocol, .. }
            | TargetPlan::Builtin { protocol, .. } => *protocol,
        }
    }

    /// How to speak TLS to the target (`None`: plain HTTP).
    pub fn tls(&self) -> Option<&TlsPlan> {
        match self {
            TargetPlan::Url { tls, .. } | TargetPlan::Command { tls, .. } | TargetPlan::Builtin { tls, .. } => {
                tls.as_ref()
            }
        }
    }

    /// Spoken to over plain HTTP/1.1: no TLS, and not HTTP/2 (`auto` over http:// is HTTP/1.1), where
    /// `pipeline_reads: batch` reads batches whole.
    pub fn plain_http1(&self) -> bool {
        self.tls().is_none() && self.protocol() != Protocol::Http2
    }
}

/// `target.tls` as the runner applies it. Files are named as the spec wrote them, relative to its directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TlsPlan {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca: Option<String>,
    #[serde(default)]
    pub insecure: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_cert: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_key: Option<String>,
    pub resume: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_name: Option<String>,
}

impl TlsPlan {
    /// The defaults: Mozilla's roots, sessions resumed, the URL's host as the server name.
    pub fn new() -> Self {
        TlsPlan { ca: None, insecure: false, client_cert: None, client_key: None, resume: true, server_name: None }
    }
}

impl Default for TlsPlan {
    fn default() -> Self {
        TlsPlan::new()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BuiltinServer {
    pub kind: BuiltinKind,
    /// For `delay`: how long each response waits.
    pub delay: Option<Duration>,
    /// The status every response carries (200 unless set).
    pub status: u16,
    /// For `plaintext` and `delay`: the response body size; `None` is TechEmpower's 13-byte `Hello, World!`.
    pub body_size: Option<u64>,
    /// Send bodies with `Transfer-Encoding: chunked`.
    pub chunked: bool,
    /// For `cpu`: the CPU time each request costs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work: Option<Duration>,
    /// For `cpu`: CPU time added in a callee of `slow_path`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slow_path: Option<Duration>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ReadyProbe {
    /// HTTP GET of `path` on the base URL until it answers `status`.
    HttpGet { path: String, status: u16, timeout: Duration, interval: Duration },
    /// A TCP connect to the base URL's host and port.
    Tcp { timeout: Duration, interval: Duration },
}

/// A matrix scenario's cells judged together.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepPlan {
    /// The scenario's key.
    pub scenario: String,
    /// `false` when the scenario is not gated: its sweep SLOs are reported, never gated.
    pub gate: bool,
    /// The matrix variable the cells are ordered by.
    pub over: String,
    pub slos: Vec<SweepSlo>,
    /// The names of its phases, in run order.
    pub cells: Vec<String>,
}

/// One scenario instance: a scenario, or one cell of its matrix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Phase {
    /// Position in the run, from 0.
    pub index: usize,
    /// The scenario's key in the spec.
    pub scenario: String,
    /// A readable, unique name: `plaintext` or `plaintext[connections=4096]`.
    pub name: String,
    /// The matrix variables of this cell, in the order the matrix declares them.
    pub matrix: Vec<(String, String)>,
    /// `false` for warmup and primer phases: measured and reported, never gated.
    pub gate: bool,
    /// This phase's repetitions when its scenario overrides `gating.repeat`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<u32>,
    /// When the phase starts, counted from the start of the run, where earlier phases are time-bounded.
    pub start_offset: Option<Duration>,
    /// How long the phase's load runs, where it is bounded by time.
    pub duration: Option<Duration>,
    /// A pause after the phase before the next one starts.
    pub cooldown: Duration,
    pub request: RequestPlan,
    /// A weighted mix of named requests (`requests:` in the spec); empty when the phase sends only `request`.
    /// When set, `request` is the mix's first entry, for display.
    pub mix: Vec<MixEntry>,
    /// The per-request timeout.
    pub timeout: Duration,
    pub load: LoadPlan,
    /// The exact split of this phase's load across the generator's workers.
    pub workers: Vec<WorkerShare>,
    pub slos: Vec<Slo>,
    /// The seed of this phase's per-request data (generated values, mix choices): the plan's `seed` mixed with
    /// the phase's index, so that phases differ and each is reproducible on its own. The engine mixes in each
    /// worker's index.
    #[serde(default)]
    pub seed: u64,
    /// A capacity search (`load: capacity` in the spec): `load` is then its first step (a constant rate of
    /// `from` for the step's duration) and the runner runs the steps, each the same load at another rate, and
    /// `duration` is the search's time budget. `None` for every other load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<CapacitySearch>,
    /// What each user does from connect to close (`session:` in the spec, user injection only): named requests,
    /// each waiting for its response, and think times, in order, on the user's one connection. Empty otherwise;
    /// when set, `request` is the first request step, for display, and results are broken down per request step.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub session: Vec<SessionStep>,
    /// Variables, cookies, how failed checks count, verification (`PhaseChecks`); left out when default.
    #[serde(default, skip_serializing_if = "PhaseChecks::is_default")]
    pub checks: PhaseChecks,
    /// What is recorded inside the target while this phase is measured (`profile:`); `None` without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<loadgate_model::profile::Profile>,
}

/// One step of a user's session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[expect(clippy::large_enum_variant, reason = "a session has a few steps, compiled once per phase")]
pub enum SessionStep {
    /// Send the request and wait for its response; measured under `name`.
    Request { name: String, request: RequestPlan },
    /// Pause the user (its connection stays open).
    Think { duration: Duration },
}

/// One named request of a mix, chosen per arrival with probability `weight / sum of weights`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MixEntry {
    pub name: String,
    pub weight: u32,
    pub request: RequestPlan,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestPlan {
    pub method: String,
    /// Path and query, percent-encoded as sent: `/plaintext`, `/quacker?i=b9ogpt96K0NmkI`.
    pub path: String,
    /// Headers in the order they are sent, after the defaults; `Host` is added from the base URL unless set.
    pub headers: Vec<(String, String)>,
    pub body: Option<String>,
    /// Set when path, query, headers or body generate values per request (`{{ seq() }}`, `{{ uuid() }}`, ...):
    /// the same fields as literal segments and generator slots, filled per request from a source seeded with
    /// the plan's `seed`. `path`, `headers` and `body` above then show the generators as `{seq(0, 1)}`.
    pub dynamic: Option<loadgate_model::DynamicRequest>,
    /// What the response must satisfy (`check:`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<loadgate_model::Check>,
    /// What a session step takes from its response for later steps (`capture:`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub captures: Vec<loadgate_model::Capture>,
}

/// A phase's response checking beyond its requests' checks: the session's variables and cookie jar, how a
/// failed check counts, and whether the phase is verified before the load. The default (no variables, no
/// jar, failed checks as errors, not verified) is left out of the plan's JSON, so plans without checks hash as
/// before.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PhaseChecks {
    /// A per-user cookie jar (`cookies:`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cookies: bool,
    #[serde(default, skip_serializing_if = "is_errors")]
    pub failed_checks: loadgate_model::FailedChecks,
    /// The session's variables, index = slot.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub variables: Vec<loadgate_model::Variable>,
    /// The phase's requests are sent and checked once before any load (`verify:`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub verify: bool,
    /// The most bytes of a body that body regexes read.
    #[serde(default = "default_body_limit", skip_serializing_if = "is_default_body_limit")]
    pub check_body_limit: u64,
}

impl Default for PhaseChecks {
    fn default() -> Self {
        PhaseChecks {
            cookies: false,
            failed_checks: Default::default(),
            variables: Vec::new(),
            verify: false,
            check_body_limit: default_body_limit(),
        }
    }
}

impl PhaseChecks {
    pub fn is_default(&self) -> bool {
        *self == PhaseChecks::default()
    }
}

fn is_default_verify(v: &loadgate_model::Verify) -> bool {
    *v == loadgate_model::Verify::default()
}

fn is_errors(f: &loadgate_model::FailedChecks) -> bool {
    *f == loadgate_model::FailedChecks::Errors
}

fn default_body_limit() -> u64 {
    loadgate_model::DEFAULT_CHECK_BODY_LIMIT
}

fn is_default_body_limit(n: &u64) -> bool {
    *n == default_body_limit()
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadPlan {
    /// When requests are issued.
    pub arrival: Arrival,
    /// When the phase ends.
    pub stop: StopCondition,
    /// How connections are used.
    pub connections: ConnectionPolicy,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Arrival {
    /// Closed loop: each connection sends its next request as soon as a previous one completes (wrk, ab).
    Closed,
    /// Open loop at a constant rate (wrk2 `-R`); latency is measured from each request's intended send time.
    Constant { rate: Rate },
    /// Open loop whose rate moves linearly through stages (k6 ramping-arrival-rate).
    Ramp { start: Rate, stages: Vec<RampStage> },
    /// Gatling-style injection of users; each user opens a connection, runs its requests and closes.
    Users { steps: Vec<UserStep> },
    /// A recorded log or HAR file replayed at its requests' start times (open loop, each request its own); the
    /// plan keeps the file's reference, options and summary, never the schedule.
    Replay(Box<loadgate_model::replay::Replay>),
}

/// The spec's vocabulary that a plan carries unchanged: ramp stages, injection steps, policies, SLOs and the
/// compiled per-request templates. Re-exported so that the stages after the plan (engine, runner, machine,
/// server) read them from the plan and never depend on the spec reader.
pub use loadgate_model::{
    AbortOnFail, BuiltinKind, CapacitySearch, Comparison, ConnectRate, DynamicRequest, Gating, Generator, Metric,
    MetricKind, OnInconclusive, OnMismatch, Pacing, PipelineMode, PipelineReads, RampStage, Restart, RoundOrder,
    SaturationPolicy, Segment, Slo, SweepSlo, Threshold, UserStep,
};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum StopCondition {
    /// Stop issuing requests after this long; requests in flight then are drained for at most the timeout.
    Duration { duration: Duration },
    /// Stop after this many requests in total (ab `-n`).
    Requests { requests: u64 },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConnectionPolicy {
    /// Connections in total (for open loads, the most that may be open at once).
    pub connections: u64,
    /// Requests in flight per connection (HTTP/1.1 pipelining); 1 means no pipelining.
    pub pipeline: u32,
    pub pipeline_mode: PipelineMode,
    /// When a batch's responses are read: each as it arrives, or the batch at once (`pipeline_reads`).
    #[serde(default, skip_serializing_if = "PipelineReads::is_each")]
    pub pipeline_reads: PipelineReads,
    /// `false`: a new connection per request, as ab without `-k`.
    pub keep_alive: bool,
    /// HTTP/2: concurrent streams per connection (h2load's `-m`); 1 without HTTP/2.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub streams: u32,
    /// How fast keep-alive connections open before the phase starts measuring.
    #[serde(default, skip_serializing_if = "ConnectRate::is_auto")]
    pub connect_rate: ConnectRate,
}

fn one() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

/// One worker's part of a phase. Across the workers of a phase, `connections` and `requests` sum exactly to the
/// phase's totals and `rate` (for open loads) to the phase's rate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkerShare {
    pub worker: usize,
    pub connections: u64,
    /// For `StopCondition::Requests`: this worker's quota.
    pub requests: Option<u64>,
    /// This worker's share of the arrival rate, as a fraction `numerator/denominator` of the phase's arrival
    /// schedule; shares of a phase sum to exactly 1. The worker scales every rate in `Arrival` by it.
    pub share: Share,
    /// In a shard's plan: this worker's place among the workers of every shard, so that the shards together
    /// send what one generator would. `None` in a whole plan (the worker's place is then its index among the
    /// phase's workers, after the shares of the workers before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stripe: Option<Stripe>,
}

/// A worker's place among all the workers of every shard of a phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stripe {
    /// Its index among all of them (seeds its random source and its `seq()` values).
    pub stream: u64,
    /// How many there are (the stride of its `seq()` values).
    pub streams: u64,
    /// The sum of the shares of the workers before it, in the order of `stream`.
    pub prefix: Share,
}

/// An exact fraction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Share {
    pub numerator: u64,
    pub denominator: u64,
}

impl Share {
    pub fn as_f64(self) -> f64 {
        if self.denominator == 0 {
            0.0
        } else {
            self.numerator as f64 / self.denominator as f64
        }
    }
}

/// How long a whole run of a plan takes, counting its repetitions: what `loadgate plan` shows and what a
/// scheduler's deadline must allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WallTime {
    /// One pass over the phases: every phase once, on one side.
    pub pass: Duration,
    /// The run as planned: every gated phase `repeat` times (its own or `gating.repeat`), the others once, each
    /// on both sides in an A/B run.
    pub expected: Duration,
    /// The most it can take: sequential gating adding rounds up to `gating.max_repeat` (rounds discarded as
    /// invalid and run again come on top).
    pub most: Duration,
}

impl ExecutionPlan {
    /// How many rounds phase `p` runs, and the most sequential gating can take it to: a gated phase `repeat`
    /// times (its own or `gating.repeat`), up to `gating.max_repeat` when it follows `gating.repeat`; a phase
    /// that is not gated (a warmup) once.
    pub fn rounds_of(&self, p: &Phase) -> (u32, u32) {
        if !p.gate {
            return (1, 1);
        }
        let runs = p.repeat.unwrap_or(self.gating.repeat).max(1);
        if p.repeat.is_none() {
            if let Some(units) = self.budget_units(p) {
                return (runs.min(units), units);
            }
        }
        let max = if p.repeat.is_none() { self.gating.max_repeat.max(runs) } else { runs };
        (runs, max)
    }

    /// A budgeted phase (`gating.budget`, a gated phase that follows `gating.repeat` and is bounded by time):
    /// the load its budget allows, in units of one round of the phase as planned (both sides), after the
    /// warmups' load (every phase that is not gated runs once on each side before it). Capped by a written
    /// `max_repeat`; at least 1. `None` for any other phase.
    pub fn budget_units(&self, p: &Phase) -> Option<u32> {
        let budget = self.gating.budget?.0.as_secs_f64();
        if !p.gate || p.repeat.is_some() || p.capacity.is_some() {
            return None;
        }
        let round = p.duration?.0.as_secs_f64();
        let sides = if self.candidate.is_some() { 2.0 } else { 1.0 };
        let warmups: f64 =
            self.phases.iter().filter(|w| !w.gate).filter_map(|w| w.duration.map(|d| d.0.as_secs_f64())).sum::<f64>()
                * sides;
        if round <= 0.0 {
            return None;
        }
        let units = ((budget - warmups).max(0.0) / (round * sides)).floor() as u32;
        let g = &self.gating;
        let units = if g.max_repeat > g.repeat { units.min(g.max_repeat) } else { units };
        Some(units.max(1))
    }

    /// The generator's pacing (`hardware.generator.pacing`): every worker paces alike.
    pub fn pacing(&self) -> Pacing {
        self.hardware.workers.first().map(|w| w.pacing).unwrap_or_default()
    }

    /// The pacing of the plan's open loads (`None` when it has none: only open loads are paced).
    pub fn open_pacing(&self) -> Option<Pacing> {
        let open = self
            .phases
            .iter()
            .any(|p| matches!(p.load.arrival, Arrival::Constant { .. } | Arrival::Ramp { .. } | Arrival::Replay(_)));
        open.then(|| self.pacing())
    }

    /// The run's wall time where every phase is bounded by time; `None` when a phase stops after a request
    /// count. Cooldowns count after every instance but the run's last. Start-up (the target's, the connections'
    /// opening) is not included. Duet rounds run a gated phase's sides at once.
    pub fn wall_time(&self) -> Option<WallTime> {
        let (mut pass, mut expected, mut most) = (std::time::Duration::ZERO, 0u128, 0u128);
        let mut last_cooldown = std::time::Duration::ZERO;
        for p in &self.phases {
            let duet = p.gate && self.gating.order == RoundOrder::Duet;
            let sides = if self.candidate.is_some() && !duet { 2 } else { 1 };
            let one = p.duration?.0 + p.cooldown.0;
            pass += one;
            let (runs, max) = self.rounds_of(p);
            expected += one.as_nanos() * u128::from(runs * sides);
            most += one.as_nanos() * u128::from(max * sides);
            last_cooldown = p.cooldown.0;
        }
        let span = |nanos: u128| {
            let d = std::time::Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX));
            Duration(d.saturating_sub(last_cooldown))
        };
        Some(WallTime {
            pass: Duration(pass.saturating_sub(last_cooldown)),
            expected: span(expected),
            most: span(most),
        })
    }
}
