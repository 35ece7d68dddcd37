//! One request as a log tells it, before the schedule: its start time (with the resolution the log gave it), the
//! request line, and who sent it.

use std::fmt;

/// Microseconds since the Unix epoch (UTC).
pub type Micros = i64;

/// How precisely a log gave a request's time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Resolution {
    /// Whole seconds (`$time_local`, Apache `%t`): the schedule spreads such a time within its second.
    Second,
    /// Milliseconds or finer (`$msec`, RFC 3339 with a fraction, ALB, HAR).
    Fine,
}

/// Who sent a request: the schedule's unit of a connection and a cookie jar (`per_client`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ClientKey {
    /// The client's address and user agent (either may be empty when the log lacks it).
    Peer {
        /// The client's address as logged (nginx `$remote_addr`, ALB `client:port` without the port).
        addr: String,
        /// The `User-Agent` as logged.
        user_agent: String,
    },
    /// nginx's `$connection` serial number: one connection of the logged server.
    Connection(u64),
    /// The log names no client (a HAR: one browser).
    Unknown,
}

impl fmt::Display for ClientKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientKey::Peer { addr, user_agent } => write!(f, "{addr} {user_agent:?}"),
            ClientKey::Connection(n) => write!(f, "connection {n}"),
            ClientKey::Unknown => f.write_str("unknown client"),
        }
    }
}

/// Where a record's start time came from, for the schedule's spreading and for reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartFrom {
    /// The log gives the arrival (Apache `%t`, ALB `request_creation_time`, HAR `startedDateTime`).
    Arrival,
    /// The write time less the request's duration (nginx `$msec - $request_time`).
    EndLessDuration,
    /// The write time, the log having no duration (a documented approximation: starts are late by the
    /// request's duration).
    WriteTime,
}

/// One logged request.
#[derive(Debug, Clone, PartialEq)]
pub struct LogRecord {
    /// 1-based line (HAR: entry) number.
    pub line: u64,
    /// When the request started, microseconds since the epoch, before any spreading. With [`Resolution::Second`]
    /// this is the whole second the log gave (less the duration, when the log gives one).
    pub start: Micros,
    /// How precisely the log gave the time the start was derived from.
    pub resolution: Resolution,
    /// Where the start came from.
    pub start_from: StartFrom,
    /// The request method as logged (`GET`).
    pub method: String,
    /// The request target as logged: an origin form (`/a?b=1`) or an absolute URL (ALB, HAR).
    pub target: String,
    /// The response status, when logged.
    pub status: Option<u16>,
    /// Request headers the log kept (HAR; a JSON mapping; nginx `$http_user_agent` as `User-Agent`).
    pub headers: Vec<(String, String)>,
    /// The request body, when the log kept it.
    pub body: Option<Vec<u8>>,
    /// Who sent it.
    pub client: ClientKey,
}

/// Why a logged request is not replayed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SkipReason {
    /// A method other than GET and HEAD without `methods: as_logged` (a replayed DELETE mutates data).
    UnsafeMethod,
    /// Not in the method filter.
    MethodFilter,
    /// The path does not match the path filter.
    PathFilter,
    /// The status is not in the status filter (or the log has none).
    StatusFilter,
    /// Before the window's `from`.
    BeforeWindow,
    /// After the window's `to`.
    AfterWindow,
    /// HAR: another origin than the chosen one.
    OtherOrigin,
    /// HAR: served from the browser's cache.
    Cached,
    /// HAR: a `data:` URL.
    DataUrl,
    /// HAR: a WebSocket.
    WebSocket,
    /// HAR: a scheme other than http and https (`blob:`, `chrome-extension:`).
    OtherScheme,
}

impl SkipReason {
    /// The reason as reports name it.
    pub fn name(self) -> &'static str {
        match self {
            SkipReason::UnsafeMethod => "method not GET or HEAD",
            SkipReason::MethodFilter => "method filter",
            SkipReason::PathFilter => "path filter",
            SkipReason::StatusFilter => "status filter",
            SkipReason::BeforeWindow => "before the window",
            SkipReason::AfterWindow => "after the window",
            SkipReason::OtherOrigin => "other origin",
            SkipReason::Cached => "cached",
            SkipReason::DataUrl => "data: URL",
            SkipReason::WebSocket => "WebSocket",
            SkipReason::OtherScheme => "other scheme",
        }
    }
}

/// Requests skipped, by reason.
pub type Skips = std::collections::BTreeMap<SkipReason, u64>;
