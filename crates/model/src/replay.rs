//! The `load: { replay: ... }` section: a recorded log or HAR file replayed at its requests' start times
//! (issue 44). Plain data: the spec reader fills it (and reads the file once, streaming, for its summary); the
//! engine reads the file again through `loadgate_import::replay` when the phase runs.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::units::Duration;

/// A replay load.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Replay {
    /// The file as the spec names it (relative to the spec's directory).
    pub file: String,
    /// The file found, inside the spec's tree (unless allowed otherwise). Machine-specific: never in a plan's JSON.
    #[serde(skip)]
    pub path: PathBuf,
    /// Its format.
    pub format: ReplayFormat,
    /// How much faster than logged (`3x` is 3.0).
    pub speed: f64,
    /// Requests before this are skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<ReplayBound>,
    /// Requests at or after this are skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<ReplayBound>,
    /// Every method as logged (`methods: as_logged`), or GET and HEAD only.
    pub as_logged: bool,
    /// Only these methods (none: all the policy allows).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub method_filter: Vec<String>,
    /// Only paths this regex matches (without the query).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_filter: Option<String>,
    /// Only these logged statuses (`200`, `2xx`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub status_filter: Vec<String>,
    /// The `Host` every request gets instead of the logged one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// Query parameters secret besides the defaults.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub secret_query: Vec<String>,
    /// How far back a start may arrive after later ones.
    pub reorder_window: Duration,
    /// The share of lines that may fail to parse before the log is refused (0.01: 1%).
    pub max_bad_share: f64,
    /// How requests use connections.
    pub connections: ReplayConnections,
    /// The most connections open at once.
    pub max_connections: u64,
    /// What the reader found in the file (after the filters, at the speed).
    pub summary: ReplaySummary,
}

/// A window bound: a time (RFC 3339) or an offset from the log's first start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplayBound {
    /// Microseconds since the Unix epoch.
    At(i64),
    /// From the log's first start.
    Offset(Duration),
}

/// A log's format.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ReplayFormat {
    /// nginx `combined`.
    NginxCombined,
    /// An nginx `log_format` string.
    Nginx { log_format: String },
    /// Apache common.
    ApacheCommon,
    /// Apache combined.
    ApacheCombined,
    /// An Apache `LogFormat` string.
    Apache { log_format: String },
    /// JSON lines through a field mapping.
    Json { fields: Box<JsonFields> },
    /// AWS ALB access logs.
    Alb,
    /// HAR 1.2, one origin kept (default: the first entry's).
    Har {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        origin: Option<String>,
    },
}

impl ReplayFormat {
    /// The format's name as the spec writes it.
    pub fn name(&self) -> &'static str {
        match self {
            ReplayFormat::NginxCombined => "nginx combined",
            ReplayFormat::Nginx { .. } => "nginx log_format",
            ReplayFormat::ApacheCommon => "apache common",
            ReplayFormat::ApacheCombined => "apache combined",
            ReplayFormat::Apache { .. } => "apache LogFormat",
            ReplayFormat::Json { .. } => "JSON lines",
            ReplayFormat::Alb => "AWS ALB",
            ReplayFormat::Har { .. } => "HAR",
        }
    }
}

/// JSON lines: which field holds what (each a key or a dotted path).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JsonFields {
    pub time: String,
    /// `rfc3339`, `epoch_seconds`, `epoch_millis` or `common_log`.
    pub time_format: String,
    /// `start` or `end`.
    pub time_is: String,
    pub method: String,
    pub path: String,
    pub status: String,
    /// The duration field and its unit (`s`, `ms`, `us`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<(String, String)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
}

impl Default for JsonFields {
    fn default() -> Self {
        JsonFields {
            time: "time".into(),
            time_format: "rfc3339".into(),
            time_is: "start".into(),
            method: "method".into(),
            path: "path".into(),
            status: "status".into(),
            duration: None,
            headers: None,
            body: None,
            client: None,
        }
    }
}

/// How replayed requests use connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplayConnections {
    /// Keep-alive connections shared by every request (round-robin over the workers).
    #[default]
    Pool,
    /// A new connection for each request.
    New,
}

/// What the spec reader found in a replay's file, read once through: the schedule's requests after the
/// filters and the window, its duration at the speed, its busiest 10 ms, and the lines skipped or unreadable.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReplaySummary {
    /// Lines (HAR: entries) read.
    pub lines: u64,
    /// Requests to send.
    pub requests: u64,
    /// From the first request to the last, at the speed, in whole milliseconds rounded up.
    pub duration: Duration,
    /// The most requests in one 10 ms window (windows from the first request, at the speed).
    pub peak_per_10ms: u64,
    /// Lines that could not be read (within the allowed share).
    pub bad_lines: u64,
    /// The first unreadable lines: `line N: what`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub first_bad: Vec<String>,
    /// Requests skipped, by reason.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skips: Vec<(String, u64)>,
}
