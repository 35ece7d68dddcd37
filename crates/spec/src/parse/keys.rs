//! The keys each mapping of the spec accepts, in one table (a test in `schema.rs` compares it with the schema),
//! and the defaults the reader fills in.

use crate::units::Duration;

pub(crate) const TOP_KEYS: &[&str] = &[
    "version",
    "name",
    "description",
    "seed",
    "vars",
    "secrets",
    "hardware",
    "target",
    "candidate",
    "gating",
    "history",
    "defaults",
    "verify",
    "outputs",
    "profile",
    "scenarios",
];
pub(crate) const HISTORY_KEYS: &[&str] = &["branch", "reference", "machine", "drift", "change_points", "detection"];
pub(crate) const REFERENCE_KEYS: &[&str] = &["commit", "label"];
pub(crate) const DETECTION_KEYS: &[&str] = &["p_value", "min_magnitude", "min_segment", "window"];
pub(crate) const GATING_KEYS: &[&str] =
    &["repeat", "max_repeat", "restart", "confidence", "on_inconclusive", "order", "rerun_invalid", "detect", "budget"];
pub(crate) const OUTPUT_KEYS: &[&str] = &["type", "url", "headers"];
pub(crate) const PROFILE_KEYS: &[&str] = &["cpu", "command", "pprof", "required"];
pub(crate) const CPU_PROFILE_KEYS: &[&str] = &["frequency", "unwind", "kernel"];
pub(crate) const COMMAND_PROFILE_KEYS: &[&str] = &["run", "event", "interval"];
pub(crate) const PPROF_KEYS: &[&str] = &["url", "kind"];
pub(crate) const SECRETS_KEYS: &[&str] = &["vars", "headers"];
pub(crate) const HARDWARE_KEYS: &[&str] = &["generator", "target", "on_mismatch", "saturation"];
pub(crate) const GENERATOR_KEYS: &[&str] = &["cpus", "threads", "pacing"];
pub(crate) const TARGET_CPU_KEYS: &[&str] = &["cpus"];
pub(crate) const TARGET_KEYS: &[&str] = &["base_url", "start", "builtin", "tls", "protocol"];
pub(crate) const TLS_KEYS: &[&str] = &["ca", "insecure", "client_cert", "client_key", "resume", "server_name"];
pub(crate) const START_KEYS: &[&str] = &["command", "env", "cwd", "ready", "stop_grace"];
pub(crate) const READY_KEYS: &[&str] = &["http_get", "tcp", "status", "timeout", "interval"];
pub(crate) const BUILTIN_KEYS: &[&str] =
    &["kind", "delay", "status", "body_size", "chunked", "tls", "work", "slow_path"];
pub(crate) const DEFAULTS_KEYS: &[&str] = &["headers", "timeout", "failed_checks", "check_body_limit"];
pub(crate) const SCENARIO_KEYS: &[&str] = &[
    "description",
    "gate",
    "repeat",
    "cooldown",
    "request",
    "requests",
    "session",
    "timeout",
    "matrix",
    "matrix_mode",
    "load",
    "slo",
    "sweep",
    "cookies",
    "verify",
    "failed_checks",
    "profile",
];
pub(crate) const REQUEST_KEYS: &[&str] = &["method", "path", "query", "headers", "body", "check", "capture"];
pub(crate) const MIX_REQUEST_KEYS: &[&str] =
    &["weight", "method", "path", "query", "headers", "body", "check", "capture"];
pub(crate) const SESSION_STEP_KEYS: &[&str] =
    &["name", "think", "method", "path", "query", "headers", "body", "check", "capture"];
pub(crate) const CHECK_KEYS: &[&str] = &[
    "name",
    "status",
    "header",
    "body_contains",
    "body_matches",
    "body_equals",
    "body_size",
    "json",
    "exists",
    "equals",
    "contains",
    "matches",
    "gt",
    "ge",
    "lt",
    "le",
    "type",
];
pub(crate) const BODY_SIZE_KEYS: &[&str] = &["min", "max"];
pub(crate) const CAPTURE_KEYS: &[&str] = &["json", "header", "regex", "cookie", "default", "max_length"];
pub(crate) const VERIFY_KEYS: &[&str] = &["scenarios", "requests"];
pub(crate) const LOAD_KEYS: &[&str] = &["closed", "open", "ramp", "users", "capacity", "replay"];
pub(crate) const REPLAY_KEYS: &[&str] = &[
    "file",
    "format",
    "speed",
    "from",
    "to",
    "methods",
    "paths",
    "statuses",
    "host",
    "secret_query",
    "reorder_window",
    "max_bad_lines",
    "connections",
    "max_connections",
];
pub(crate) const REPLAY_FORMATS: &[&str] = &["combined", "nginx", "common", "apache_combined", "alb", "har", "json"];
pub(crate) const REPLAY_JSON_KEYS: &[&str] = &[
    "time",
    "time_format",
    "time_is",
    "method",
    "path",
    "status",
    "duration",
    "duration_unit",
    "headers",
    "body",
    "client",
];
pub(crate) const CLOSED_KEYS: &[&str] = &[
    "connections",
    "duration",
    "requests",
    "pipeline",
    "pipeline_mode",
    "pipeline_reads",
    "keep_alive",
    "connect_rate",
    "streams",
];
pub(crate) const OPEN_KEYS: &[&str] = &["rate", "duration", "connections", "connect_rate", "streams"];
pub(crate) const CAPACITY_KEYS: &[&str] = &[
    "from",
    "to",
    "precision",
    "step",
    "duration",
    "connections",
    "confirm",
    "max_duration",
    "pause",
    "connect_rate",
    "streams",
];
pub(crate) const RAMP_KEYS: &[&str] = &["connections", "start_rate", "stages", "connect_rate", "streams"];
pub(crate) const STAGE_KEYS: &[&str] = &["to", "over"];
pub(crate) const USERS_KEYS: &[&str] = &["steps", "max_connections"];
pub(crate) const USER_STEP_KEYS: &[&str] =
    &["at_once", "ramp", "over", "per_second", "ramp_per_second", "to", "during", "pause"];
pub(crate) const SLO_KEYS: &[&str] = &["expr", "abort_on_fail"];
pub(crate) const ABORT_KEYS: &[&str] = &["delay"];
pub(crate) const SWEEP_KEYS: &[&str] = &["over", "slo"];

/// A capacity search's defaults: how close it brackets the capacity, its factor from step to step, its
/// confirmations and its time budget.
pub const DEFAULT_CAPACITY_PRECISION: f64 = 0.05;
pub const DEFAULT_CAPACITY_STEP: f64 = 2.0;
pub const DEFAULT_CAPACITY_CONFIRM: u32 = 1;
pub const DEFAULT_CAPACITY_MAX_DURATION: Duration = Duration(std::time::Duration::from_secs(600));

/// The default per-request timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration(std::time::Duration::from_secs(10));
/// The default cap on users active at once.
pub const DEFAULT_MAX_USER_CONNECTIONS: u64 = 10_000;
