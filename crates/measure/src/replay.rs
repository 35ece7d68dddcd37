//! How faithfully a replay load (`load: { replay: ... }`) sent its log: the schedule error, the rate per 10 ms
//! window, the multiset of requests, the skips and the statuses, against what the log says. Plain data the engine
//! fills; nothing here judges.

use serde::{Deserialize, Serialize};

use schemars::JsonSchema;

/// A replay's fidelity.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReplayFidelity {
    /// The file as the spec names it.
    pub file: String,
    /// Its format.
    pub format: String,
    /// How much faster than logged.
    pub speed: f64,
    /// Lines (HAR: entries) read.
    pub lines: u64,
    /// Lines that could not be read (within the allowed share), and the first of them (`line N: what`).
    pub bad_lines: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub first_bad: Vec<String>,
    /// Logged requests not replayed, by reason (window, methods, filters, HAR origin, ...).
    pub skips: Vec<ReplaySkip>,
    /// Requests the schedule holds after the filters (this run's share of them, with shards).
    pub scheduled: u64,
    /// Requests sent.
    pub sent: u64,
    /// When each request left against when the log says it started (after the speed), in microseconds, over the
    /// requests completed: the open loop's send lag.
    pub schedule_error: ScheduleError,
    /// Requests sent per 10 ms window against the log's.
    pub windows: WindowFidelity,
    /// The multiset of (method, path, query) sent against the log's after the filters.
    pub requests: MultisetFidelity,
    /// Responses by (logged status, status seen), status classes (`2xx`; `-` when the log has none, `error` when
    /// no response came).
    pub statuses: Vec<StatusPair>,
}

/// A skip reason and its count.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReplaySkip {
    pub reason: String,
    pub count: u64,
}

/// The schedule error's percentiles.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ScheduleError {
    pub p50_us: u64,
    pub p99_us: u64,
    pub max_us: u64,
}

/// Requests per window sent against the log's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WindowFidelity {
    /// The windows' width in milliseconds (10).
    pub window_ms: u64,
    /// Windows compared (from the phase start to the log's last request).
    pub windows: u64,
    /// The largest |sent - logged| of one window.
    pub max_abs_difference: u64,
    /// Windows whose counts differ.
    pub differing: u64,
    /// The log's busiest window.
    pub logged_peak: u64,
    /// The busiest window sent.
    pub sent_peak: u64,
}

/// The multiset of requests sent against the log's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct MultisetFidelity {
    /// Every logged request was sent as often as logged.
    pub equal: bool,
    /// Distinct (method, path, query) in the log.
    pub distinct: u64,
    /// Logged requests never sent.
    pub missing: u64,
    /// Requests sent more often than logged.
    pub extra: u64,
}

/// Responses of one (logged, seen) pair of status classes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct StatusPair {
    pub logged: String,
    pub seen: String,
    pub count: u64,
}
