//! The JSON Schema of the spec language, generated from the types below.
//!
//! These types describe the YAML a user writes (templates and unit strings included); they are only used to
//! generate `schemas/loadgate.schema.json` for editors and validators. The reader in `parse/` accepts exactly
//! the keys declared here: a test compares the two so they cannot drift.

use std::collections::BTreeMap;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};

/// A loadgate spec: targets, load profiles and SLOs, committed next to the code it measures.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields, title = "loadgate spec")]
pub struct SpecDoc {
    /// The spec format version. Always `1`.
    #[schemars(range(min = 1, max = 1))]
    pub version: u32,
    /// A file-name-safe name; it names the output directory (`loadgate-out/<name>/`).
    #[schemars(regex(pattern = r"^[A-Za-z0-9._-]+$"))]
    pub name: String,
    pub description: Option<String>,
    /// The seed for random request data; the same seed sends the same data.
    pub seed: Option<u64>,
    /// Variables with their defaults. Overridden by `LOADGATE_VAR_<NAME>` in the environment, then by
    /// `--set name=value`. Templates read them as `{{ name }}`; `{{ env.NAME }}` reads the environment.
    pub vars: Option<BTreeMap<String, ScalarDoc>>,
    pub secrets: Option<SecretsDoc>,
    pub hardware: Option<HardwareDoc>,
    pub target: TargetDoc,
    /// A second target to compare with `target` in the same run (A/B): every gated scenario runs on both, in
    /// alternating rounds, and `baseline` in an SLO (`p99 <= baseline * 1.10`) is the target's measurement of
    /// the same round. The same keys as `target`.
    pub candidate: Option<TargetDoc>,
    pub gating: Option<GatingDoc>,
    pub history: Option<HistoryDoc>,
    pub defaults: Option<DefaultsDoc>,
    /// Which scenarios send their requests and check the responses once before any load is sent: `auto` (the
    /// default: those whose requests have checks), `all` (requests without checks by the 2xx rule), `off` (or
    /// `false`), or `{ scenarios, requests }`. A verification that fails stops the run before the load (exit 3).
    pub verify: Option<VerifyDoc>,
    /// Where the run's live metrics go while it runs (at most 8). `--output` on the command line replaces them
    /// (`--output none`: no export). Never written to the plan or the results.
    #[schemars(length(max = 8))]
    pub outputs: Option<Vec<OutputDoc>>,
    pub profile: Option<ProfileDoc>,
    /// Scenarios by name, run in the order written.
    pub scenarios: BTreeMap<String, ScenarioDoc>,
}

/// One live output.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct OutputDoc {
    /// `prometheus_remote_write` (also `prometheus`): Prometheus remote write 1.0 with native histograms;
    /// `otlp`: OTLP metrics over HTTP/protobuf.
    #[schemars(rename = "type")]
    pub kind: OutputKindDoc,
    /// `http://host:port/path` (`/api/v1/write`, `/v1/metrics`): plain HTTP.
    #[schemars(regex(pattern = r"^http://"))]
    pub url: String,
    /// Request headers sent with every push (`X-Scope-OrgID`, `Authorization: Bearer {{ env.TOKEN }}`); the values
    /// of credential headers are secrets.
    pub headers: Option<BTreeMap<String, ScalarDoc>>,
}

/// An output's protocol.
#[derive(JsonSchema)]
#[schemars(rename_all = "snake_case")]
pub enum OutputKindDoc {
    PrometheusRemoteWrite,
    Prometheus,
    Otlp,
}

/// Values that must never reach an artifact (results.json, junit.xml, report.md, `plan --json`): they are
/// replaced by `***`. Values read with `{{ env.NAME }}` and the values of `Authorization`, `Cookie`,
/// `Proxy-Authorization` and `X-Api-Key` headers are secret without being listed.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct SecretsDoc {
    /// Variables (declared under `vars`) whose values are secret; `--secret NAME=VALUE` adds one.
    pub vars: Option<Vec<String>>,
    /// Further headers whose values are secret.
    pub headers: Option<Vec<String>>,
}

/// A string, number or boolean.
#[derive(JsonSchema)]
#[schemars(untagged)]
pub enum ScalarDoc {
    String(String),
    Integer(i64),
    Number(f64),
    Boolean(bool),
}

/// CPU pinning for the load generator and the target.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct HardwareDoc {
    pub generator: Option<GeneratorDoc>,
    pub target: Option<TargetCpusDoc>,
    /// What to do when this machine cannot honour the pinning.
    pub on_mismatch: Option<OnMismatchDoc>,
    /// Whether a generator worker at 90% CPU or more invalidates a phase (exit 4).
    pub saturation: Option<SaturationDoc>,
}

/// How gated scenario instances are repeated and judged: over repetitions, each SLO is PASS (its whole
/// confidence interval meets the limit), FAIL (the whole interval misses it) or INCONCLUSIVE.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct GatingDoc {
    /// Repetitions (rounds) of every gated scenario instance (1 to 1000; `--repeat N` overrides).
    pub repeat: Option<Count>,
    /// Add rounds while a verdict is inconclusive, up to this many (at least `repeat`).
    pub max_repeat: Option<Count>,
    /// `each_round` starts the target afresh for every round.
    pub restart: Option<RestartDoc>,
    /// The two-sided confidence of every interval, 50% to 99.9% (default 90%).
    pub confidence: Option<String>,
    /// What an inconclusive verdict makes of the run: `inconclusive` (exit 5, the default), `fail` (exit 1),
    /// `pass` (exit 0).
    pub on_inconclusive: Option<OnInconclusiveDoc>,
    /// The order of the two sides in each round of an A/B run.
    pub order: Option<OrderDoc>,
    /// Rounds invalid as a measurement (the generator limited them) that are discarded, with their A/B pair,
    /// and run again per gated instance before it is called invalid: 0 to 100 (default 3).
    pub rerun_invalid: Option<CountOrZero>,
    /// The smallest relative change a gated check must not let pass (`10%`, 0.5% to 90%): the first `repeat`
    /// rounds (8 by default) are a pilot, from whose spread loadgate plans the round length and the rounds to
    /// tell this change within `budget`. Not with `max_repeat`.
    pub detect: Option<String>,
    /// The most load time one gated instance's verdict may take, both sides and warmups counted (`3m`, the
    /// default with `detect`); rounds stop there, and a verdict still undecided is INCONCLUSIVE for `budget`.
    pub budget: Option<String>,
}

/// Checks judged against a history store of earlier runs (`run --history STORE`): the drift of a metric's level
/// since a reference, and the newest change point after it (E-divisive means with a t-test, as Apache Otava).
/// A series too short to tell makes the check INCONCLUSIVE, never a pass.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct HistoryDoc {
    /// The branch whose runs the checks read; by default the branch the run itself is recorded on (`--branch`,
    /// CI's variables or the checked-out branch; a run on no branch reads the runs recorded on no branch).
    pub branch: Option<String>,
    /// Where drift is measured from: `first` (the default), a duration (`30d`: the first run of the last 30
    /// days), `{ commit: SHA }` or `{ label: NAME }` (a run added with `--label`).
    pub reference: Option<ReferenceDoc>,
    /// `same` (the default): only runs on a machine with this run's fingerprint; `any`: every machine.
    pub machine: Option<HistoryMachineDoc>,
    /// Metrics and how much worse their level may be than at the reference: `{ p99: 10%, throughput: 5% }`.
    pub drift: Option<BTreeMap<String, String>>,
    /// Metrics and how much worse the newest change point after the reference may have made them.
    pub change_points: Option<BTreeMap<String, String>>,
    pub detection: Option<DetectionDoc>,
}

/// A history check's reference run.
#[derive(JsonSchema)]
#[schemars(untagged)]
pub enum ReferenceDoc {
    /// `first`, or a duration such as `30d`.
    Word(String),
    Pinned(ReferencePinDoc),
}

/// A reference run by its commit or its label.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ReferencePinDoc {
    /// 4 to 64 hex digits of a git commit: the newest run of it.
    pub commit: Option<String>,
    /// A label given with `--label`: the newest run with it.
    pub label: Option<String>,
}

#[derive(JsonSchema)]
#[schemars(rename_all = "snake_case")]
pub enum HistoryMachineDoc {
    Same,
    Any,
}

/// How change points are found (Apache Otava's settings).
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct DetectionDoc {
    /// The significance a change point needs (default 0.001).
    pub p_value: Option<f64>,
    /// The smallest relative change that counts (default 0%).
    pub min_magnitude: Option<String>,
    /// The fewest runs on each side of a change point (default 3).
    pub min_segment: Option<Count>,
    /// The sliding window of the first pass, in runs (default 50, at most 1000).
    pub window: Option<Count>,
}

#[derive(JsonSchema)]
#[schemars(rename_all = "snake_case")]
pub enum RestartDoc {
    Never,
    EachRound,
}

#[derive(JsonSchema)]
#[schemars(rename_all = "snake_case")]
pub enum OnInconclusiveDoc {
    Inconclusive,
    Fail,
    Pass,
}

#[derive(JsonSchema)]
#[schemars(rename_all = "snake_case")]
pub enum OrderDoc {
    /// A B, B A, A B, ...
    Abba,
    /// A seeded random order per round.
    Shuffle,
    /// Both sides at once in every round of a gated open load, at the same intended instants (the generator
    /// sends twice the load), so noise that hits the machine hits both; the workers' lanes alternate A B, B A.
    Duet,
}

#[derive(JsonSchema)]
#[schemars(rename_all = "snake_case")]
pub enum SaturationDoc {
    /// Invalid for open loads (a late generator inflates their latency), a warning for closed loads.
    Auto,
    /// Always invalid.
    Invalid,
    /// Always a warning.
    Warn,
}

#[derive(JsonSchema)]
#[schemars(rename_all = "snake_case")]
pub enum OnMismatchDoc {
    /// Refuse to run (exit 3).
    Fail,
    /// Run with what the machine has and say so in every report.
    Warn,
    /// Skip the run (exit 0) with a note.
    Skip,
}

#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct GeneratorDoc {
    /// The generator's CPUs in taskset syntax (`16-31`); one worker thread per CPU by default.
    pub cpus: Option<CpuListText>,
    /// Worker threads (default: one per CPU, or 1 when unpinned); workers are pinned round-robin over `cpus`.
    pub threads: Option<Count>,
    /// How open loads wait for a request's intended send time: `default` (sleep; at most one wake-up a
    /// millisecond for it) or `precise` (wake ahead and poll until due, for a pinned, dedicated core).
    pub pacing: Option<PacingDoc>,
}

#[derive(JsonSchema)]
#[schemars(rename_all = "snake_case")]
pub enum PacingDoc {
    Default,
    Precise,
}

#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct TargetCpusDoc {
    /// The target's CPUs in taskset syntax (`0-15`); applied when loadgate starts the target.
    pub cpus: Option<CpuListText>,
}

/// The server under test: `base_url` (with an optional `start` command), `builtin`, or both, in which case the
/// built-in server stands in whenever `base_url` renders empty.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields, extend("anyOf" = [{"required": ["base_url"]}, {"required": ["builtin"]}]))]
pub struct TargetDoc {
    /// `http://host:port[/prefix]` or `https://...`; request paths are appended to it.
    #[schemars(regex(pattern = r"^(https?://.+|.*\{\{.*\}\}.*|)$"))]
    pub base_url: Option<String>,
    /// A command loadgate starts before the run and stops after it.
    pub start: Option<StartDoc>,
    /// loadgate's reference server, started on a free loopback port.
    pub builtin: Option<BuiltinDoc>,
    /// How to speak TLS to an `https://` target (or to a built-in server with `tls: true`).
    pub tls: Option<TlsDoc>,
    /// The HTTP version: `http1` (default), `http2` (h2 over TLS, h2c with prior knowledge over plain TCP) or
    /// `auto` (over TLS, what the server picks by ALPN, `h2` offered first; HTTP/1.1 over plain TCP).
    pub protocol: Option<ProtocolDoc>,
}

#[derive(JsonSchema)]
#[schemars(rename_all = "snake_case")]
pub enum ProtocolDoc {
    Http1,
    Http2,
    Auto,
}

/// TLS 1.2 and 1.3 with ALPN `http/1.1`; Mozilla's root certificates are trusted unless `ca` names others.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct TlsDoc {
    /// A PEM file of CA certificates to trust instead of Mozilla's roots, relative to the spec's directory.
    pub ca: Option<String>,
    /// Accept any server certificate (self-signed test servers); every report says so.
    pub insecure: Option<BoolDoc>,
    /// A PEM certificate chain for mTLS (with `client_key`), relative to the spec's directory.
    pub client_cert: Option<String>,
    /// The PEM private key of `client_cert`, relative to the spec's directory.
    pub client_key: Option<String>,
    /// Resume TLS sessions on new connections, as browsers do (default true); `false` forces full handshakes.
    pub resume: Option<BoolDoc>,
    /// The name sent in SNI and checked against the certificate (default: the URL's host).
    pub server_name: Option<String>,
}

#[derive(JsonSchema)]
#[schemars(untagged)]
pub enum BuiltinDoc {
    Kind(BuiltinKindDoc),
    Detailed(BuiltinDetailDoc),
}

#[derive(JsonSchema)]
#[schemars(rename_all = "snake_case")]
pub enum BuiltinKindDoc {
    /// TechEmpower plaintext: `Hello, World!`.
    Plaintext,
    /// Echoes the request body.
    Echo,
    /// Answers after `delay` (needs the detailed form).
    Delay,
    /// Spends `work` of CPU per request in named functions, plus `slow_path` in a callee of `slow_path` (needs the
    /// detailed form): a server whose profile is known.
    Cpu,
}

#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct BuiltinDetailDoc {
    pub kind: BuiltinKindDoc,
    /// For `delay`: how long each response waits.
    pub delay: Option<DurationText>,
    /// The status of every response (default 200).
    pub status: Option<StatusDoc>,
    /// The response body size (default: the 13-byte plaintext body).
    pub body_size: Option<SizeText>,
    /// Send bodies chunked.
    pub chunked: Option<BoolDoc>,
    /// Serve HTTPS with a self-signed certificate made at start, which loadgate trusts.
    pub tls: Option<BoolDoc>,
    /// For `cpu`: the CPU time each request costs (`50us`), in `parse_request` and `render_response`.
    pub work: Option<DurationText>,
    /// For `cpu`: CPU time added to each request in a callee of `slow_path` (`15us`).
    pub slow_path: Option<DurationText>,
}

#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct StartDoc {
    /// The program and its arguments (no shell).
    #[schemars(length(min = 1))]
    pub command: Vec<String>,
    pub env: Option<BTreeMap<String, ScalarDoc>>,
    pub cwd: Option<String>,
    /// How loadgate knows the target is up (default: a TCP connect, 30 s).
    pub ready: Option<ReadyDoc>,
    /// How long after SIGTERM before SIGKILL (default 5s).
    pub stop_grace: Option<DurationText>,
}

#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ReadyDoc {
    /// A path to GET until it answers `status`.
    pub http_get: Option<String>,
    /// Wait for a TCP connect instead.
    pub tcp: Option<BoolDoc>,
    /// The status `http_get` waits for (default 200).
    pub status: Option<StatusDoc>,
    /// How long to wait (default 30s).
    pub timeout: Option<DurationText>,
    /// Between attempts (default 100ms).
    pub interval: Option<DurationText>,
}

#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct DefaultsDoc {
    /// Headers sent with every request; a scenario's own headers override them by name.
    pub headers: Option<BTreeMap<String, ScalarDoc>>,
    /// The per-request timeout (default 10s).
    pub timeout: Option<DurationText>,
    /// Whether a response that failed a check is a failed response in `error_rate`: `errors` (the default, as
    /// Gatling's KO) or `separate` (failed checks show only in `checks` and `check_failures`, as in k6).
    pub failed_checks: Option<FailedChecksDoc>,
    /// The most bytes of a body that body regexes (`body_matches`, a `regex` capture) read, per connection
    /// (default 64KiB, at most 16MiB); a longer body fails them.
    pub check_body_limit: Option<SizeText>,
}

#[derive(JsonSchema)]
#[schemars(rename_all = "snake_case")]
pub enum FailedChecksDoc {
    Errors,
    Separate,
}

/// `auto`, `all`, `off` (or `false`), or `{ scenarios, requests }`.
#[derive(JsonSchema)]
#[schemars(untagged)]
pub enum VerifyDoc {
    Scenarios(VerifyScenariosDoc),
    Detailed(VerifyDetailDoc),
}

#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct VerifyDetailDoc {
    pub scenarios: Option<VerifyScenariosDoc>,
    /// Requests (sessions, with a session) sent per verified scenario: 1 to 100 (default 1).
    pub requests: Option<Count>,
}

/// Which scenarios are verified: `auto`, `all`, `off` or `false`.
pub struct VerifyScenariosDoc;
impl JsonSchema for VerifyScenariosDoc {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "VerifyScenarios".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "`auto` (scenarios whose requests have checks), `all`, `off` or `false`.",
            "enum": ["auto", "all", "off", false]
        })
    }
}

/// One check of a response: exactly one subject (`status`, `header`, `body_contains`, `body_matches`,
/// `body_equals`, `body_size`, `json`), its operators (all must hold), and an optional `name`.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct CheckDoc {
    /// The check's name in results and SLO filters (`check_failures{check=NAME}`): no whitespace, `{`, `}`, `,`
    /// or `=`. Default: the subject, as `status`, `header:content-type`, `body_contains`, `json:$.a.b`.
    pub name: Option<String>,
    /// The statuses that pass: `200`, a class `2xx`, or a list such as `[200, 201]` or `[2xx, 304]`. With a
    /// `status` check, it alone decides whether the status is a success.
    pub status: Option<StatusCheckDoc>,
    /// A response header, by name (case-insensitive); passes when one field of that name meets every operator
    /// (`exists` by default). HTTP/1.1 only.
    pub header: Option<String>,
    /// The body contains this text.
    pub body_contains: Option<String>,
    /// A regex finds a match in the body (at most `defaults.check_body_limit` bytes are read).
    pub body_matches: Option<String>,
    /// The body is exactly this text (captured values allowed: `"{{ token }}"`).
    pub body_equals: Option<String>,
    /// The body's size: `13B`, or `{ min: 1B, max: 64KiB }`.
    pub body_size: Option<BodySizeDoc>,
    /// A JSON selector (`$.a.b`, `$.items[0].id`, `$['a key']`, `$.items[*].id`): the first value it finds, in
    /// document order, meets every operator (`exists` by default).
    pub json: Option<String>,
    /// `header` and `json`: the value is there (`true`, the default) or not (`false`, alone).
    pub exists: Option<BoolDoc>,
    /// `header`: the value, trimmed, is this text. `json`: the value equals this one, typed by YAML (`1` matches
    /// `1`, `1.0` and `1e0`; `"1"` only the string). Captured values allowed, generators not.
    pub equals: Option<JsonScalarDoc>,
    /// `header` and `json`: the value (a string's decoded content) contains this text.
    pub contains: Option<String>,
    /// `header` and `json`: a regex finds a match in the value.
    pub matches: Option<String>,
    /// `json`: the value is a number above this one.
    pub gt: Option<NumberDoc>,
    /// `json`: a number at least this one.
    pub ge: Option<NumberDoc>,
    /// `json`: a number below this one.
    pub lt: Option<NumberDoc>,
    /// `json`: a number at most this one.
    pub le: Option<NumberDoc>,
    /// `json`: the value's type.
    #[schemars(rename = "type")]
    pub json_type: Option<JsonTypeDoc>,
}

#[derive(JsonSchema)]
#[schemars(rename_all = "snake_case")]
pub enum JsonTypeDoc {
    String,
    Number,
    Boolean,
    Null,
    Object,
    Array,
}

/// A status, a class, or a list of them.
#[derive(JsonSchema)]
#[schemars(untagged)]
pub enum StatusCheckDoc {
    One(StatusItemDoc),
    Many(Vec<StatusItemDoc>),
}

/// A status from 100 to 599, or a class `1xx` to `5xx`.
pub struct StatusItemDoc;
impl JsonSchema for StatusItemDoc {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "StatusItem".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A status from 100 to 599 (`200`), or a class `1xx` to `5xx`.",
            "anyOf": [
                { "type": "integer", "minimum": 100, "maximum": 599 },
                { "type": "string", "pattern": "^\\s*([1-5][0-9][0-9]|[1-5][xX][xX])\\s*$" },
                { "type": "string", "pattern": TEMPLATE }
            ]
        })
    }
}

/// `13B`, or `{ min, max }`.
#[derive(JsonSchema)]
#[schemars(untagged)]
pub enum BodySizeDoc {
    Exact(SizeText),
    Range(BodySizeRangeDoc),
}

#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct BodySizeRangeDoc {
    pub min: Option<SizeText>,
    pub max: Option<SizeText>,
}

/// A string, number, boolean or null.
pub struct JsonScalarDoc;
impl JsonSchema for JsonScalarDoc {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "JsonScalar".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A string, number, boolean or null.",
            "type": ["string", "number", "boolean", "null"]
        })
    }
}

/// A number, or a template.
pub struct NumberDoc;
impl JsonSchema for NumberDoc {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Number".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "anyOf": [ { "type": "number" }, { "type": "string", "pattern": TEMPLATE } ]
        })
    }
}

/// Where a captured value comes from: `json`, `header` (optionally narrowed by `regex`), `regex` over the body,
/// or `cookie`.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct CaptureDoc {
    /// A JSON selector: the first value it finds (a string's decoded content, else the value's text).
    pub json: Option<String>,
    /// A response header's value (HTTP/1.1 only).
    pub header: Option<String>,
    /// A regex: over the header with `header`, else over the body; group 1, or the whole match.
    pub regex: Option<String>,
    /// The value of this response's `Set-Cookie` of that name (HTTP/1.1 only).
    pub cookie: Option<String>,
    /// Used when nothing is found; without it, nothing found fails the check `capture:<name>` and the steps
    /// that use the variable are not sent.
    pub default: Option<String>,
    /// The longest value kept (default 4KiB, at most 64KiB); a longer one is refused like a missing one.
    pub max_length: Option<SizeText>,
}

/// `capture` works on session steps only.
pub struct CaptureRefusedDoc;
impl JsonSchema for CaptureRefusedDoc {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "CaptureOutsideSession".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "Captures feed later steps of a session: `capture` works on `session:` steps only.",
            "not": {}
        })
    }
}

/// One load test: a request (or a weighted mix of named requests, or a session per user), a load model, and the
/// SLOs it must meet. A replay (`load: { replay: ... }`) sends its file's requests and names none.
#[derive(JsonSchema)]
#[schemars(
    deny_unknown_fields,
    extend("oneOf" = [
        {"required": ["request"]},
        {"required": ["requests"]},
        {"required": ["session"]},
        {
            "required": ["load"],
            "properties": {"load": {"required": ["replay"]}},
            "not": {"anyOf": [{"required": ["request"]}, {"required": ["requests"]}, {"required": ["session"]}]}
        }
    ])
)]
pub struct ScenarioDoc {
    pub description: Option<String>,
    /// `false` for warmup and primer phases: measured and reported, never gated.
    pub gate: Option<BoolDoc>,
    /// A pause after the scenario before the next starts.
    pub cooldown: Option<DurationText>,
    /// This scenario's repetitions, overriding `gating.repeat`.
    pub repeat: Option<Count>,
    pub request: Option<RequestDoc>,
    /// A weighted mix of named requests, chosen per request (`p99{request=NAME}` gates one of them).
    pub requests: Option<BTreeMap<String, MixRequestDoc>>,
    /// What each user does from connect to close: named requests, each waiting for its response, and think
    /// times, in order, on one connection. With `users`, each user is a session; with `closed`, each connection
    /// runs the session over and over; with `open`, `ramp` and `capacity`, each arrival is a session. Never with
    /// `pipeline` or `streams` above 1.
    #[schemars(length(min = 1))]
    pub session: Option<Vec<SessionStepDoc>>,
    /// The per-request timeout (wrk `--timeout`).
    pub timeout: Option<DurationText>,
    /// Variables swept over: the scenario runs once per combination (`plaintext[connections=256]`).
    pub matrix: Option<BTreeMap<String, Vec<ScalarDoc>>>,
    /// `product` (default): every combination of the matrix lists; `zip`: the lists walked together.
    pub matrix_mode: Option<MatrixModeDoc>,
    pub load: LoadDoc,
    /// Objectives such as `p99 < 100ms`, `throughput >= 1000/s`, `error_rate < 0.1%`, `p99 <= baseline * 1.10`.
    pub slo: Option<Vec<SloDoc>>,
    /// Objectives over the cells of the matrix together, ordered by one swept variable: `knee >= 256`,
    /// `throughput_drop <= 10%`, `p99@largest <= 3 * p99@smallest`.
    pub sweep: Option<SweepDoc>,
    /// A cookie jar per user, sent and filled across a session's steps: on by default with a `session`, refused
    /// without one. HTTP/1.1 only.
    pub cookies: Option<BoolDoc>,
    /// `false` leaves the scenario out of the verification before the load (`true` verifies it whatever the
    /// spec's `verify:` says).
    pub verify: Option<BoolDoc>,
    /// This scenario's `failed_checks` (see `defaults.failed_checks`).
    pub failed_checks: Option<FailedChecksDoc>,
    /// This scenario's own profile, replacing the spec's; `off` (or `false`) profiles nothing here.
    pub profile: Option<ScenarioProfileDoc>,
}

/// What is recorded inside the target while measured phases run: exactly one of `cpu` (the built-in sampler of
/// the target's process tree), `command` (an external profiler beside each measured phase) or `pprof` (a Go
/// server's endpoint). Each round's stacks give `profile-<instance>[-<side>].folded`, flame graphs in
/// report.html, and in A/B runs the frames that got slower. `cpu` and `command` need a target loadgate starts.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ProfileDoc {
    /// The built-in sampler: `cpu: {}` (or `cpu: true`) for the defaults.
    pub cpu: Option<CpuProfileDoc>,
    /// An external profiler's command line with `{pid}`, `{seconds}` and `{out}`, which writes folded stacks to
    /// `{out}`; or `{ run, event, interval }`.
    pub command: Option<CommandProfileDoc>,
    pub pprof: Option<PprofDoc>,
    /// Exit 3 before any load when the profile cannot be taken (no permission, no process), instead of a
    /// warning and an unprofiled run.
    pub required: Option<BoolDoc>,
}

/// A scenario's profile: a profile, or `off`.
#[derive(JsonSchema)]
#[schemars(untagged)]
pub enum ScenarioProfileDoc {
    Off(ProfileOffDoc),
    Profile(ProfileDoc),
}

/// `off` or `false`.
pub struct ProfileOffDoc;
impl JsonSchema for ProfileOffDoc {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ProfileOff".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "enum": ["off", false] })
    }
}

/// `cpu: {}`, `cpu: true`, or its settings.
pub struct CpuProfileDoc;
impl JsonSchema for CpuProfileDoc {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "CpuProfile".into()
    }
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let detail = generator.subschema_for::<CpuProfileDetailDoc>();
        json_schema!({ "anyOf": [ { "const": true }, { "type": "null" }, detail ] })
    }
}

#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct CpuProfileDetailDoc {
    /// Samples per second of CPU time, per thread: 1 to 10000 (default 999).
    #[schemars(range(min = 1, max = 10000))]
    pub frequency: Option<u32>,
    /// `auto` (default: frame pointers, DWARF unwind tables where the code has no frame pointers),
    /// `frame_pointers` or `dwarf`.
    pub unwind: Option<UnwindDoc>,
    /// `auto` (default: kernel frames where the kernel allows them) or `off` (user frames only).
    pub kernel: Option<KernelStacksDoc>,
}

#[derive(JsonSchema)]
#[schemars(rename_all = "snake_case")]
pub enum UnwindDoc {
    Auto,
    FramePointers,
    Dwarf,
}

#[derive(JsonSchema)]
#[schemars(rename_all = "snake_case")]
pub enum KernelStacksDoc {
    Auto,
    Off,
}

/// The command line alone, or `{ run, event, interval }`.
#[derive(JsonSchema)]
#[schemars(untagged)]
pub enum CommandProfileDoc {
    Run(String),
    Detailed(CommandProfileDetailDoc),
}

#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct CommandProfileDetailDoc {
    /// `asprof -d {seconds} -e cpu -i 10ms -o collapsed -f {out} {pid}`, `py-spy record --pid {pid} --duration
    /// {seconds} --format raw --output {out}`: split into words like a start command, run beside each measured
    /// phase.
    pub run: String,
    /// What the profiler records: `cpu` (default), `wall`, `alloc` or `lock`. It names the files; `cpu` and
    /// `wall` counts are `interval` each.
    pub event: Option<ProfileEventDoc>,
    /// What one count of a `cpu` or `wall` profile stands for (default 10ms: async-profiler's `-i`, py-spy's
    /// `--rate 100`).
    pub interval: Option<DurationText>,
}

#[derive(JsonSchema)]
#[schemars(rename_all = "snake_case")]
pub enum ProfileEventDoc {
    Cpu,
    Wall,
    Alloc,
    Lock,
}

/// A Go server's pprof endpoint, fetched with `?seconds=N` for each measured phase (phases of 1s or more).
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct PprofDoc {
    /// `http://127.0.0.1:6060/debug/pprof/profile` (or `.../allocs`, `heap`, `mutex`, `block`), or a path
    /// (`/debug/pprof/profile`) fetched from each side's base_url (the one form an A/B run takes).
    #[schemars(regex(pattern = r"^(http://|/)"))]
    pub url: String,
    /// `cpu` (`profile`), `allocs`, `heap`, `mutex` or `block`; read from the URL when left out.
    pub kind: Option<PprofKindDoc>,
}

#[derive(JsonSchema)]
#[schemars(rename_all = "snake_case")]
pub enum PprofKindDoc {
    Cpu,
    Profile,
    Allocs,
    Heap,
    Mutex,
    Block,
}

/// The cells of a matrix judged together (`sweep:`).
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct SweepDoc {
    /// The matrix variable the cells are ordered by (default: the matrix's only variable). Its values must be
    /// numbers (or all rates, durations or sizes); each combination of the other variables is a sweep of its own.
    pub over: Option<String>,
    /// `throughput_drop <= 10%` (the largest fall below the best of the smaller cells), `knee >= 256`,
    /// `plateau >= 64`, `collapse == none`, `p99@largest <= 3 * p99@smallest`, `throughput@512 >= 40000/s`.
    #[schemars(length(min = 1))]
    pub slo: Vec<String>,
}

/// Declares a request's mapping: the keys given before `path`, then the request keys every form shares (`method`,
/// `path`, `query`, `headers`, `body`), declared once here for the single request, a mix entry and a session
/// step. `path` is required or not as its type says; `docs` describes the shared keys where they are given.
macro_rules! request_doc {
    (
        $(#[$meta:meta])*
        pub struct $name:ident { $($(#[$field_meta:meta])* pub $field:ident: $field_ty:ty,)* }
        path: $path:ty,
        capture: $capture:ty,
        $(docs: { method: $method:literal, path: $path_doc:literal, query: $query:literal, body: $body:literal, },)?
    ) => {
        $(#[$meta])*
        #[derive(JsonSchema)]
        #[schemars(deny_unknown_fields)]
        pub struct $name {
            $($(#[$field_meta])* pub $field: $field_ty,)*
            $(#[doc = $method])?
            pub method: Option<String>,
            $(#[doc = $path_doc])?
            #[schemars(regex(pattern = r"^(/.*|.*\{\{.*\}\}.*)$"))]
            pub path: $path,
            $(#[doc = $query])?
            pub query: Option<BTreeMap<String, ScalarDoc>>,
            pub headers: Option<BTreeMap<String, ScalarDoc>>,
            $(#[doc = $body])?
            pub body: Option<String>,
            /// What the response must satisfy: a list of checks, each one subject (`status`, `header`,
            /// `body_contains`, `body_matches`, `body_equals`, `body_size`, `json`) with its operators.
            #[schemars(length(max = 32))]
            pub check: Option<Vec<CheckDoc>>,
            /// Values a session step takes from its response for later steps (`{{ name }}`): names to sources.
            pub capture: $capture,
        }
    };
}

request_doc! {
    pub struct RequestDoc {}
    path: String,
    capture: Option<CaptureRefusedDoc>,
    docs: {
        method: "The HTTP method (default GET).",
        path: "The path (and query) after the base URL; must start with `/`.",
        query: "Query parameters, percent-encoded and appended in order.",
        body: "The request body; Content-Length is set from it.",
    },
}

request_doc! {
    /// A named request of a mix: a request with a `weight`.
    pub struct MixRequestDoc {
        /// The share of requests this one gets: `weight / sum of weights` (default 1).
        pub weight: Option<Count>,
    }
    path: String,
    capture: Option<CaptureRefusedDoc>,
}

request_doc! {
    /// A step of a session: a named request (`{ name: home, path: / }`) or a think time (`{ think: 500ms }`).
    pub struct SessionStepDoc {
        /// The request's name, unique in the session: results and SLOs (`p95{request=NAME}`) use it.
        pub name: Option<String>,
        /// A pause of the user before its next step (alone in its step).
        pub think: Option<DurationText>,
    }
    path: Option<String>,
    capture: Option<BTreeMap<String, CaptureDoc>>,
}

#[derive(JsonSchema)]
#[schemars(rename_all = "snake_case")]
pub enum MatrixModeDoc {
    Product,
    Zip,
}

/// The load model: exactly one of `closed`, `open`, `ramp`, `users`, `capacity`, `replay`.
#[derive(JsonSchema)]
#[schemars(rename_all = "snake_case", deny_unknown_fields)]
pub enum LoadDoc {
    /// N connections, each sending its next request as soon as the last completes (wrk, ab).
    Closed(ClosedDoc),
    /// A constant arrival rate, latency from the intended send time (wrk2 `-R`).
    Open(OpenDoc),
    /// An arrival rate that moves linearly through stages (k6 ramping-arrival-rate).
    Ramp(RampDoc),
    /// Gatling-style user injection: each user opens a connection, sends its request (or runs its `session`),
    /// closes.
    Users(UsersDoc),
    /// A capacity search: open-loop steps from `from`, `step` times faster while the scenario's SLOs hold, then
    /// bisection until the highest rate that held and the lowest that failed are `precision` apart, confirmed
    /// `confirm` more times; at most `max_duration` in all. A `capacity >= RATE` SLO gates the rate found.
    Capacity(CapacityDoc),
    /// A recorded access log or HAR file replayed at its requests' start times, each with its own method, path,
    /// headers and body (see Replay in the README). The scenario has no `request`.
    Replay(Box<ReplayDoc>),
}

#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ReplayDoc {
    /// The log or HAR file, relative to the spec (inside its directory); a `.gz` file is read as it is.
    pub file: String,
    /// `combined` (nginx, the default), `common`, `apache_combined`, `alb`, `har`, `json`, or a mapping:
    /// `{ nginx: "<log_format>" }`, `{ apache: "<LogFormat>" }`, `{ json: { time: ts, ... } }`,
    /// `{ har: { origin: https://shop.example } }`.
    pub format: Option<ReplayFormatDoc>,
    /// How much faster than logged: `1x` (default), `3x`, `0.5x`.
    pub speed: Option<ScalarDoc>,
    /// Skip requests before this: an offset from the log's first request (`30s`) or an RFC 3339 time.
    pub from: Option<String>,
    /// Skip requests at or after this: an offset or a time.
    pub to: Option<String>,
    /// `safe` (GET and HEAD, the default), `as_logged`, or a list of methods to replay.
    pub methods: Option<ReplayMethodsDoc>,
    /// Only paths this regex matches (without the query).
    pub paths: Option<String>,
    /// Only these logged statuses: `200`, `2xx`.
    pub statuses: Option<Vec<ScalarDoc>>,
    /// The `Host` every request gets instead of the logged one.
    pub host: Option<String>,
    /// Query parameters whose values are secret, besides `access_token`, `api_key`, `token`, `key`, `signature`.
    pub secret_query: Option<Vec<String>>,
    /// How far back a start may arrive after later ones (default 10s, at least 1s).
    pub reorder_window: Option<DurationText>,
    /// The share of lines that may be unreadable before the log is refused (default 1%).
    pub max_bad_lines: Option<String>,
    /// `pool` (keep-alive connections shared by every request, the default) or `new` (one per request).
    pub connections: Option<ReplayConnectionsDoc>,
    /// The most connections open at once (default 256).
    pub max_connections: Option<Count>,
}

/// A log format: a name or a mapping.
#[derive(JsonSchema)]
#[schemars(untagged)]
pub enum ReplayFormatDoc {
    Name(ReplayFormatNameDoc),
    Detail(Box<ReplayFormatDetailDoc>),
}

#[derive(JsonSchema)]
#[schemars(rename_all = "snake_case")]
pub enum ReplayFormatNameDoc {
    Combined,
    Nginx,
    Common,
    ApacheCombined,
    Alb,
    Har,
    Json,
}

#[derive(JsonSchema)]
#[schemars(rename_all = "snake_case", deny_unknown_fields)]
pub enum ReplayFormatDetailDoc {
    /// An nginx `log_format` string (`$msec` or `$time_local`, `$request`, optionally `$request_time`).
    Nginx(String),
    /// An Apache `LogFormat` string.
    Apache(String),
    /// JSON lines: which field holds what.
    Json(Box<ReplayJsonDoc>),
    /// HAR: the origin to keep (default: the first entry's).
    Har(ReplayHarDoc),
}

#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ReplayHarDoc {
    pub origin: Option<String>,
}

/// Field names (keys or dotted paths) of JSON lines.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ReplayJsonDoc {
    /// The time (default `time`).
    pub time: Option<String>,
    /// `rfc3339` (default), `epoch_seconds`, `epoch_millis`, `common_log`.
    pub time_format: Option<String>,
    /// `start` (default) or `end` (then less `duration`).
    pub time_is: Option<String>,
    pub method: Option<String>,
    pub path: Option<String>,
    pub status: Option<String>,
    pub duration: Option<String>,
    /// `s` (default), `ms`, `us`.
    pub duration_unit: Option<String>,
    pub headers: Option<String>,
    pub body: Option<String>,
    pub client: Option<String>,
}

/// `safe`, `as_logged`, or a list of methods.
#[derive(JsonSchema)]
#[schemars(untagged)]
pub enum ReplayMethodsDoc {
    Policy(ReplayMethodPolicyDoc),
    List(Vec<String>),
}

#[derive(JsonSchema)]
#[schemars(rename_all = "snake_case")]
pub enum ReplayMethodPolicyDoc {
    Safe,
    AsLogged,
}

#[derive(JsonSchema)]
#[schemars(rename_all = "snake_case")]
pub enum ReplayConnectionsDoc {
    Pool,
    New,
}

#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct CapacityDoc {
    /// The first step's rate, the lowest the search tries.
    pub from: RateText,
    /// The highest rate the search tries (above `from`).
    pub to: RateText,
    /// How long each step's load runs.
    pub duration: DurationText,
    /// The connections each step's requests are spread over (wrk2 `-c`).
    pub connections: Count,
    /// How close the highest rate that held and the lowest that failed must be, relative to the former
    /// (default 5%; 0.1% to below 100%).
    pub precision: Option<String>,
    /// The factor from one rate to the next while the steps hold: `2x` (the default), `1.5x`.
    pub step: Option<FactorDoc>,
    /// How many more times the rate found runs; each must hold (default 1, at most 10).
    pub confirm: Option<CountOrZero>,
    /// The most the whole search may take (default 10m): no step starts that could not end within it.
    pub max_duration: Option<DurationText>,
    /// A pause before every step after the first (default 0s).
    pub pause: Option<DurationText>,
    /// HTTP/2: concurrent streams per connection (h2load `-m`; default 1), capped by the server's
    /// `SETTINGS_MAX_CONCURRENT_STREAMS`.
    pub streams: Option<Count>,
    /// How fast the connections open before the load is measured: `auto` (default: 4 connects/ms per worker,
    /// halved when a connect stalls on a full accept queue), a rate such as `2000/s`, or `unlimited`.
    pub connect_rate: Option<ConnectRateDoc>,
}

#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ClosedDoc {
    pub connections: Count,
    /// Run for this long (give `duration` or `requests`).
    pub duration: Option<DurationText>,
    /// Stop after this many requests in total (ab `-n`).
    pub requests: Option<Count>,
    /// Requests in flight per connection (HTTP/1.1 pipelining; default 1).
    pub pipeline: Option<Count>,
    /// `batch` (write N, wait for N, as wrk's pipeline.lua) or `window` (keep N in flight).
    pub pipeline_mode: Option<PipelineModeDoc>,
    /// When a batch's responses are read: `each` (default: as each arrives, each completes at its own arrival) or
    /// `batch` (the batch at once when all of it can be there: one wake-up and one read per batch, a fifth to a
    /// quarter of the generator's CPU, and its responses complete when its last bytes arrived, as wrk records a
    /// pipelined batch). Plain HTTP/1.1 with `pipeline_mode: batch` only.
    pub pipeline_reads: Option<PipelineReadsDoc>,
    /// `false` opens a new connection per request (ab without `-k`).
    pub keep_alive: Option<BoolDoc>,
    /// HTTP/2: concurrent streams per connection (h2load `-m`; default 1), capped by the server's
    /// `SETTINGS_MAX_CONCURRENT_STREAMS`.
    pub streams: Option<Count>,
    /// How fast the connections open before the load is measured: `auto` (default: 4 connects/ms per worker,
    /// halved when a connect stalls on a full accept queue), a rate such as `2000/s`, or `unlimited`.
    pub connect_rate: Option<ConnectRateDoc>,
}

#[derive(JsonSchema)]
#[schemars(rename_all = "snake_case")]
pub enum PipelineModeDoc {
    Batch,
    Window,
}

#[derive(JsonSchema)]
#[schemars(rename_all = "snake_case")]
pub enum PipelineReadsDoc {
    Each,
    Batch,
}

#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct OpenDoc {
    pub rate: RateText,
    pub duration: DurationText,
    /// The connections requests are spread over (wrk2 `-c`).
    pub connections: Count,
    /// HTTP/2: concurrent streams per connection (h2load `-m`; default 1), capped by the server's
    /// `SETTINGS_MAX_CONCURRENT_STREAMS`.
    pub streams: Option<Count>,
    /// How fast the connections open before the load is measured: `auto` (default: 4 connects/ms per worker,
    /// halved when a connect stalls on a full accept queue), a rate such as `2000/s`, or `unlimited`.
    pub connect_rate: Option<ConnectRateDoc>,
}

#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct RampDoc {
    pub connections: Count,
    /// The rate at the start of the first stage (default 0/s).
    pub start_rate: Option<RateText>,
    #[schemars(length(min = 1))]
    pub stages: Vec<RampStageDoc>,
    /// HTTP/2: concurrent streams per connection (h2load `-m`; default 1), capped by the server's
    /// `SETTINGS_MAX_CONCURRENT_STREAMS`.
    pub streams: Option<Count>,
    /// How fast the connections open before the load is measured: `auto` (default: 4 connects/ms per worker,
    /// halved when a connect stalls on a full accept queue), a rate such as `2000/s`, or `unlimited`.
    pub connect_rate: Option<ConnectRateDoc>,
}

#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct RampStageDoc {
    /// The rate at the end of the stage.
    pub to: RateText,
    pub over: DurationText,
}

/// One injection step, a list of steps, or `{ steps, max_connections }`.
#[derive(JsonSchema)]
#[schemars(untagged)]
pub enum UsersDoc {
    Step(UserStepDoc),
    Steps(Vec<UserStepDoc>),
    Detailed(UsersDetailDoc),
}

#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct UsersDetailDoc {
    #[schemars(length(min = 1))]
    pub steps: Vec<UserStepDoc>,
    /// The most users active at once (default 10000).
    pub max_connections: Option<Count>,
}

/// `{at_once: N}`, `{ramp: N, over: T}`, `{per_second: R, during: T}`, `{ramp_per_second: R1, to: R2, during: T}`
/// or `{pause: T}`.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct UserStepDoc {
    /// Gatling `atOnceUsers(N)`.
    pub at_once: Option<Count>,
    /// Gatling `rampUsers(N) during (over)`.
    pub ramp: Option<Count>,
    pub over: Option<DurationText>,
    /// Gatling `constantUsersPerSec(R) during (during)`.
    pub per_second: Option<UserRateDoc>,
    /// Gatling `rampUsersPerSec(R1) to (to) during (during)`.
    pub ramp_per_second: Option<UserRateDoc>,
    pub to: Option<UserRateDoc>,
    pub during: Option<DurationText>,
    /// Gatling `nothingFor(T)`.
    pub pause: Option<DurationText>,
}

/// An SLO expression, or one with options.
#[derive(JsonSchema)]
#[schemars(untagged)]
pub enum SloDoc {
    Expr(String),
    Detailed(SloDetailDoc),
}

#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct SloDetailDoc {
    pub expr: String,
    /// Stop the run as soon as the SLO is breached beyond repair (`true`, or `{ delay: 10s }` to wait first).
    pub abort_on_fail: Option<AbortDoc>,
}

#[derive(JsonSchema)]
#[schemars(untagged)]
pub enum AbortDoc {
    Flag(BoolDoc),
    Delayed(AbortDelayDoc),
}

#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct AbortDelayDoc {
    pub delay: Option<DurationText>,
}

const TEMPLATE: &str = r"\{\{.*\}\}";

fn text_or_template(pattern: &str, description: &str) -> Schema {
    json_schema!({
        "description": description,
        "anyOf": [
            { "type": "string", "pattern": pattern },
            { "type": "string", "pattern": TEMPLATE }
        ]
    })
}

macro_rules! text_schema {
    ($name:ident, $pattern:expr, $desc:expr) => {
        #[doc = $desc]
        pub struct $name;
        impl JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }
            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                text_or_template($pattern, $desc)
            }
        }
    };
}

text_schema!(
    DurationText,
    r"^\s*([0-9]+(\.[0-9]+)?\s*(ns|us|µs|ms|s|m|h|sec|secs|min|mins|hr|hour|hours|second|seconds|minute|minutes)\s*)+$",
    "A duration: `500ms`, `15s`, `5m`, `1m30s`."
);
text_schema!(
    RateText,
    r"^\s*[0-9]+(\.[0-9]+)?\s*[kKM]?\s*/\s*(s|sec|second|ms|m|min|minute|h|hour)\s*$",
    "A rate: `32000/s`, `1.2k/s`, `600/m`."
);
text_schema!(
    SizeText,
    r"^\s*[0-9]+(\.[0-9]+)?\s*(B|b|k|kB|KB|KiB|Ki|M|MB|MiB|Mi|G|GB|GiB|Gi)?\s*$",
    "A size in bytes: `256B`, `4KiB`, `1MB`."
);
text_schema!(
    CpuListText,
    r"^\s*[0-9]+(\s*-\s*[0-9]+(\s*:\s*[0-9]+)?)?(\s*,\s*[0-9]+(\s*-\s*[0-9]+(\s*:\s*[0-9]+)?)?)*\s*$",
    "CPU ids in taskset syntax: `1`, `0-7`, `0-7,16-23`, `0-31:2` (every second CPU of the range)."
);

/// A whole number of at least 1, or a template that renders to one.
pub struct Count;
impl JsonSchema for Count {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Count".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A whole number of at least 1, or a template such as \"{{ connections }}\".",
            "anyOf": [ { "type": "integer", "minimum": 1 }, { "type": "string", "pattern": TEMPLATE } ]
        })
    }
}

/// A whole number, 0 or more, or a template that renders to one.
pub struct CountOrZero;
impl JsonSchema for CountOrZero {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "CountOrZero".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A whole number of at least 0, or a template.",
            "anyOf": [ { "type": "integer", "minimum": 0 }, { "type": "string", "pattern": TEMPLATE } ]
        })
    }
}

/// A factor above 1: `2x`, `1.5x`, or a number.
pub struct FactorDoc;
impl JsonSchema for FactorDoc {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Factor".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A factor above 1: `2x`, `1.5x`, or a number such as 2.",
            "anyOf": [
                { "type": "number", "exclusiveMinimum": 1 },
                { "type": "string", "pattern": r"^\s*[0-9]+(\.[0-9]+)?\s*[x×]\s*$" },
                { "type": "string", "pattern": TEMPLATE }
            ]
        })
    }
}

/// `auto`, `unlimited` or a rate.
pub struct ConnectRateDoc;
impl JsonSchema for ConnectRateDoc {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ConnectRate".into()
    }
    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        let rate = RateText::json_schema(g);
        json_schema!({
            "description": "`auto`, `unlimited`, or a rate such as `2000/s`.",
            "anyOf": [ { "type": "string", "enum": ["auto", "unlimited"] }, rate ]
        })
    }
}

/// Users per second: a number or a rate.
pub struct UserRateDoc;
impl JsonSchema for UserRateDoc {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "UserRate".into()
    }
    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        let rate = RateText::json_schema(g);
        json_schema!({
            "description": "Users per second: a number (`20`) or a rate (`20/s`).",
            "anyOf": [ { "type": "number", "minimum": 0 }, rate ]
        })
    }
}

/// An HTTP status.
pub struct StatusDoc;
impl JsonSchema for StatusDoc {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Status".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "An HTTP status from 100 to 599.",
            "anyOf": [ { "type": "integer", "minimum": 100, "maximum": 599 }, { "type": "string", "pattern": TEMPLATE } ]
        })
    }
}

/// `true` or `false`, or a template.
pub struct BoolDoc;
impl JsonSchema for BoolDoc {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Bool".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "anyOf": [ { "type": "boolean" }, { "type": "string", "pattern": TEMPLATE } ]
        })
    }
}

/// The spec's JSON Schema as pretty JSON with a trailing newline (what `loadgate schema` prints and
/// `schemas/loadgate.schema.json` holds).
pub fn spec_schema_json() -> String {
    let mut schema = schemars::schema_for!(SpecDoc);
    schema.insert("$id".to_owned(), "https://loadgate.dev/schemas/loadgate.schema.json".into());
    let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::*;

    fn props(schema: &serde_json::Value, def: &str) -> Vec<String> {
        let node = if def.is_empty() { schema } else { &schema["$defs"][def] };
        let mut keys: Vec<String> =
            node["properties"].as_object().unwrap_or_else(|| panic!("{def} has properties")).keys().cloned().collect();
        keys.sort();
        keys
    }

    fn sorted(keys: &[&str]) -> Vec<String> {
        let mut v: Vec<String> = keys.iter().map(|s| (*s).to_owned()).collect();
        v.sort();
        v
    }

    #[test]
    fn the_schema_and_the_reader_accept_the_same_keys() {
        let schema: serde_json::Value = serde_json::from_str(&spec_schema_json()).unwrap();
        assert_eq!(props(&schema, ""), sorted(TOP_KEYS));
        assert_eq!(props(&schema, "HardwareDoc"), sorted(HARDWARE_KEYS));
        assert_eq!(props(&schema, "SecretsDoc"), sorted(SECRETS_KEYS));
        assert_eq!(props(&schema, "GeneratorDoc"), sorted(GENERATOR_KEYS));
        assert_eq!(props(&schema, "TargetCpusDoc"), sorted(TARGET_CPU_KEYS));
        assert_eq!(props(&schema, "StartDoc"), sorted(START_KEYS));
        assert_eq!(props(&schema, "ReadyDoc"), sorted(READY_KEYS));
        assert_eq!(props(&schema, "BuiltinDetailDoc"), sorted(BUILTIN_KEYS));
        assert_eq!(props(&schema, "TlsDoc"), sorted(TLS_KEYS));
        assert_eq!(props(&schema, "DefaultsDoc"), sorted(DEFAULTS_KEYS));
        assert_eq!(props(&schema, "ScenarioDoc"), sorted(SCENARIO_KEYS));
        assert_eq!(props(&schema, "GatingDoc"), sorted(GATING_KEYS));
        assert_eq!(props(&schema, "HistoryDoc"), sorted(HISTORY_KEYS));
        assert_eq!(props(&schema, "ReferencePinDoc"), sorted(REFERENCE_KEYS));
        assert_eq!(props(&schema, "DetectionDoc"), sorted(DETECTION_KEYS));
        assert_eq!(props(&schema, "RequestDoc"), sorted(REQUEST_KEYS));
        assert_eq!(props(&schema, "MixRequestDoc"), sorted(MIX_REQUEST_KEYS));
        assert_eq!(props(&schema, "SessionStepDoc"), sorted(SESSION_STEP_KEYS));
        assert_eq!(props(&schema, "ClosedDoc"), sorted(CLOSED_KEYS));
        assert_eq!(props(&schema, "OpenDoc"), sorted(OPEN_KEYS));
        assert_eq!(props(&schema, "RampDoc"), sorted(RAMP_KEYS));
        assert_eq!(props(&schema, "RampStageDoc"), sorted(STAGE_KEYS));
        assert_eq!(props(&schema, "CapacityDoc"), sorted(CAPACITY_KEYS));
        assert_eq!(props(&schema, "ReplayDoc"), sorted(REPLAY_KEYS));
        assert_eq!(props(&schema, "ReplayJsonDoc"), sorted(REPLAY_JSON_KEYS));
        assert_eq!(props(&schema, "UsersDetailDoc"), sorted(USERS_KEYS));
        assert_eq!(props(&schema, "UserStepDoc"), sorted(USER_STEP_KEYS));
        assert_eq!(props(&schema, "SloDetailDoc"), sorted(SLO_KEYS));
        assert_eq!(props(&schema, "AbortDelayDoc"), sorted(ABORT_KEYS));
        assert_eq!(props(&schema, "SweepDoc"), sorted(SWEEP_KEYS));
        assert_eq!(props(&schema, "TargetDoc"), sorted(TARGET_KEYS));
        assert_eq!(props(&schema, "CheckDoc"), sorted(CHECK_KEYS));
        assert_eq!(props(&schema, "CaptureDoc"), sorted(CAPTURE_KEYS));
        assert_eq!(props(&schema, "BodySizeRangeDoc"), sorted(BODY_SIZE_KEYS));
        assert_eq!(props(&schema, "VerifyDetailDoc"), sorted(VERIFY_KEYS));
        assert_eq!(props(&schema, "OutputDoc"), sorted(OUTPUT_KEYS));
        assert_eq!(props(&schema, "ProfileDoc"), sorted(PROFILE_KEYS));
        assert_eq!(props(&schema, "CpuProfileDetailDoc"), sorted(CPU_PROFILE_KEYS));
        assert_eq!(props(&schema, "CommandProfileDetailDoc"), sorted(COMMAND_PROFILE_KEYS));
        assert_eq!(props(&schema, "PprofDoc"), sorted(PPROF_KEYS));
        let load: Vec<String> = schema["$defs"]["LoadDoc"]["oneOf"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|v| v["required"].as_array().unwrap().iter().map(|s| s.as_str().unwrap().to_owned()))
            .collect();
        let mut load = load;
        load.sort();
        assert_eq!(load, sorted(LOAD_KEYS));
    }
}
