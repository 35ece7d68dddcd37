//! The replay schedule: the log's requests at their start times, in time order, from the first kept request,
//! divided by the speed.
//!
//! - **Times to the second** (`$time_local`, Apache `%t`, epoch seconds) are spread within their second:
//!   a request's offset is uniform in [0, 1 s), drawn from a SplitMix64 hash of (seed, line number). Uniform,
//!   because given that n requests of a Poisson stream fell in one second, their times are n independent uniform
//!   draws: even spacing by order would invent a regularity (no bursts) the log does not show. Keyed by the line,
//!   because it needs no lookahead (how many requests share the second) and no state, so the reorder buffer stays
//!   the only buffer, and a request keeps its time whatever the filters and the window drop around it. Finer
//!   times are kept as they are.
//! - **Out of order starts** (derived from end times; several writers) go through a reorder buffer that holds
//!   requests until the newest start seen is [`ReplayOptions::reorder_window`] later (10 s by default, at least
//!   1 s, so a spread second always fits), and at most [`ReplayOptions::max_reorder`] requests. A request that
//!   starts before one already released is an [`ReplayError::OutOfOrder`] naming its line.
//! - Then, in this order, each request is kept or skipped with the first reason that applies: the window
//!   (`from`, `to`: times, or offsets from the log's first start), the method policy (GET and HEAD unless
//!   `as_logged`), the method filter, the path filter (a regex on the path, without the query), the status
//!   filter.
//! - Pseudo headers (`:authority`) and hop-by-hop headers (`Connection`, `Keep-Alive`, `Transfer-Encoding`,
//!   `TE`, `Trailer`, `Upgrade`, `Proxy-Connection`), and `Content-Length` (the sender computes it), are dropped.
//!   `Host` is the host rewrite when given; else the logged `Host`, else an absolute URL's authority.

use std::time::Duration;

use regex_automata::meta::Regex;

use super::error::ReplayError;
use super::read::{Limits, LogFormat, ParsedLog, Records};
use super::record::{ClientKey, LogRecord, Micros, Resolution, SkipReason, Skips};
use super::secret::{join_target, Header, QueryParam, SecretRules, Value};

/// Which methods are replayed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum MethodPolicy {
    /// GET and HEAD only; the others are skipped and counted (a replayed DELETE mutates data).
    #[default]
    Safe,
    /// Every method as logged.
    AsLogged,
}

/// A window bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowBound {
    /// A time, microseconds since the epoch.
    At(Micros),
    /// An offset from the log's first start.
    Offset(Duration),
}

/// A status filter's entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusPattern {
    /// One status (`200`).
    Code(u16),
    /// A class (`2xx` is `Class(2)`).
    Class(u16),
}

impl StatusPattern {
    /// Reads `200` or `2xx`.
    pub fn parse(s: &str) -> Result<StatusPattern, ReplayError> {
        let bad = || ReplayError::Format(format!("status `{s}` is not a status (`200`) or a class (`2xx`)"));
        if let Some(c) = s.strip_suffix("xx").or_else(|| s.strip_suffix("XX")) {
            return match c.as_bytes() {
                [d @ b'1'..=b'5'] => Ok(StatusPattern::Class(u16::from(d - b'0'))),
                _ => Err(bad()),
            };
        }
        match s.parse::<u16>() {
            Ok(c @ 100..=599) => Ok(StatusPattern::Code(c)),
            _ => Err(bad()),
        }
    }

    fn matches(self, status: u16) -> bool {
        match self {
            StatusPattern::Code(c) => c == status,
            StatusPattern::Class(c) => status / 100 == c,
        }
    }
}

/// Reads a speed: `2x`, `100x`, `0.5x` (or a bare number).
pub fn parse_speed(s: &str) -> Result<f64, ReplayError> {
    let n = s.trim().strip_suffix(['x', 'X']).unwrap_or(s.trim());
    match n.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= 1_000_000.0 => Ok(v),
        _ => Err(ReplayError::Format(format!("speed `{s}` is not a positive factor such as `2x` or `0.5x`"))),
    }
}

/// How a log is turned into a schedule.
#[derive(Debug, Clone)]
pub struct ReplayOptions {
    /// The seed of the spreading within a second.
    pub seed: u64,
    /// How much faster than logged (2.0 for `2x`).
    pub speed: f64,
    /// How far back in time a start may arrive after later ones (default 10 s).
    pub reorder_window: Duration,
    /// Requests the reorder buffer holds at most (default 1,000,000).
    pub max_reorder: usize,
    /// Requests before this are skipped.
    pub from: Option<WindowBound>,
    /// Requests at or after this are skipped.
    pub to: Option<WindowBound>,
    /// GET and HEAD, or every method.
    pub methods: MethodPolicy,
    /// Only these methods (none: all the policy allows), compared without case.
    pub method_filter: Vec<String>,
    /// Only paths that this regex matches (searched anywhere in the path, without the query).
    pub path_filter: Option<String>,
    /// Only these statuses (none: all). A request without a logged status is skipped when this is set.
    pub status_filter: Vec<StatusPattern>,
    /// The `Host` every request gets instead of the logged one.
    pub host: Option<String>,
    /// Which values are secret, and their replacements.
    pub secrets: SecretRules,
}

impl Default for ReplayOptions {
    fn default() -> Self {
        ReplayOptions {
            seed: 0,
            speed: 1.0,
            reorder_window: Duration::from_secs(10),
            max_reorder: 1_000_000,
            from: None,
            to: None,
            methods: MethodPolicy::Safe,
            method_filter: Vec::new(),
            path_filter: None,
            status_filter: Vec::new(),
            host: None,
            secrets: SecretRules::default(),
        }
    }
}

/// One request of the schedule.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayRequest {
    /// When to send it: from the first kept request, after the speed.
    pub at: Duration,
    /// The log's line (HAR: entry) it came from.
    pub line: u64,
    /// The method.
    pub method: String,
    /// The path, without the query.
    pub path: String,
    /// The query's parameters in order, as logged, secret values marked.
    pub query: Vec<QueryParam>,
    /// The headers to send, secret values marked.
    pub headers: Vec<Header>,
    /// The body, when the log kept one.
    pub body: Option<Vec<u8>>,
    /// Who sent it.
    pub client: ClientKey,
    /// The status the log recorded.
    pub logged_status: Option<u16>,
}

impl ReplayRequest {
    /// The path and query to SEND, secrets included: for the request's bytes only.
    pub fn path_and_query(&self) -> String {
        join_target(&self.path, &self.query, Value::expose)
    }

    /// The request as reports, plans and imports may show it: secret values as `***`.
    pub fn redacted(&self) -> RedactedRequest {
        RedactedRequest {
            at: self.at,
            line: self.line,
            method: self.method.clone(),
            path_and_query: join_target(&self.path, &self.query, Value::shown),
            headers: self.headers.iter().map(|h| (h.name.clone(), h.value.shown().to_string())).collect(),
            body_bytes: self.body.as_ref().map(Vec::len),
            client: self.client.to_string(),
        }
    }
}

/// A request as it may be written anywhere: secret values are `***`, the body only its length.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RedactedRequest {
    /// When to send it.
    pub at: Duration,
    /// The log's line.
    pub line: u64,
    /// The method.
    pub method: String,
    /// Path and query, secret values `***`.
    pub path_and_query: String,
    /// Headers, secret values `***`.
    pub headers: Vec<(String, String)>,
    /// The body's length.
    pub body_bytes: Option<usize>,
    /// Who sent it.
    pub client: String,
}

/// A log as a schedule.
#[derive(Debug, Clone, PartialEq)]
pub struct Schedule {
    /// The requests, by `at`.
    pub requests: Vec<ReplayRequest>,
    /// Requests skipped, by reason (the reading's and the schedule's).
    pub skips: Skips,
    /// The first kept request's start, microseconds since the epoch (after spreading, before the speed).
    pub first_start: Option<Micros>,
    /// Lines (entries) read.
    pub lines: u64,
    /// Lines that could not be read (within the allowed share).
    pub bad_lines: u64,
    /// Requests held by the reorder buffer at once, at most.
    pub reorder_peak: usize,
}

/// SplitMix64's output for the state `x` (the one generator, `loadgate_model::splitmix64`).
fn splitmix64(x: u64) -> u64 {
    loadgate_model::splitmix64(&mut { x })
}

/// The offset in [0, 1 s) a second-resolution time of `line` gets, in microseconds.
pub fn spread_offset(seed: u64, line: u64) -> Micros {
    let h = splitmix64(seed ^ splitmix64(line));
    ((u128::from(h) * 1_000_000) >> 64) as Micros
}

struct Held(LogRecord);

impl Held {
    fn key(&self) -> (Micros, u64) {
        (self.0.start, self.0.line)
    }
}
impl PartialEq for Held {
    fn eq(&self, o: &Self) -> bool {
        self.key() == o.key()
    }
}
impl Eq for Held {}
impl PartialOrd for Held {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Held {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        o.key().cmp(&self.key())
    }
}

/// The reorder buffer: records in, records out in start order, once the newest start is a window later.
struct Reorder {
    heap: std::collections::BinaryHeap<Held>,
    window: Micros,
    max: usize,
    newest: Micros,
    released: Option<Micros>,
    peak: usize,
}

impl Reorder {
    fn push(&mut self, r: LogRecord, out: &mut Vec<LogRecord>) -> Result<(), ReplayError> {
        if let Some(last) = self.released {
            if r.start < last {
                return Err(ReplayError::OutOfOrder {
                    line: r.line,
                    behind_ms: (last.saturating_sub(r.start) / 1000) as u64,
                    window_ms: (self.window / 1000) as u64,
                });
            }
        }
        self.newest = self.newest.max(r.start);
        self.heap.push(Held(r));
        self.peak = self.peak.max(self.heap.len());
        while let Some(top) = self.heap.peek() {
            if top.0.start <= self.newest.saturating_sub(self.window) || self.heap.len() > self.max {
                let Some(Held(r)) = self.heap.pop() else { break };
                self.released = Some(r.start);
                out.push(r);
            } else {
                break;
            }
        }
        Ok(())
    }

    fn drain(&mut self, out: &mut Vec<LogRecord>) {
        while let Some(Held(r)) = self.heap.pop() {
            out.push(r);
        }
    }
}

const DROPPED_HEADERS: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "te",
    "trailer",
    "upgrade",
    "content-length",
];

/// Splits an absolute URL into its authority and its path and query; an origin form is returned as it is.
fn split_url(target: &str) -> (Option<&str>, &str) {
    match target.split_once("://") {
        Some((_, rest)) => match rest.find(['/', '?']) {
            Some(i) => (Some(&rest[..i]), &rest[i..]),
            None => (Some(rest), "/"),
        },
        None => (None, target),
    }
}

/// Builds the schedule of a read log. `env` looks up the environment variables of the secrets' replacements.
pub fn build(
    parsed: ParsedLog,
    options: &ReplayOptions,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Schedule, ReplayError> {
    let path_filter = check_options(options)?;
    let mut reorder = new_reorder(options);
    let mut sorted = Vec::with_capacity(parsed.records.len());
    for mut r in parsed.records {
        if r.resolution == Resolution::Second {
            r.start = r.start.saturating_add(spread_offset(options.seed, r.line));
        }
        reorder.push(r, &mut sorted)?;
    }
    reorder.drain(&mut sorted);
    let mut sched = Schedule {
        requests: Vec::with_capacity(sorted.len()),
        skips: parsed.skips,
        first_start: None,
        lines: parsed.lines,
        bad_lines: parsed.bad,
        reorder_peak: reorder.peak,
    };
    let log_start = sorted.first().map(|r| r.start);
    let bound = |b: WindowBound| match b {
        WindowBound::At(t) => t,
        WindowBound::Offset(d) => {
            log_start.unwrap_or(0).saturating_add(i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
        }
    };
    let from = options.from.map(bound);
    let to = options.to.map(bound);
    let filters = Filters { from, to, path: path_filter };
    for r in sorted {
        if let Some(reason) = filters.skip(&r, options) {
            *sched.skips.entry(reason).or_insert(0) += 1;
            continue;
        }
        sched.requests.push(request(r, options, &mut sched.first_start, env)?);
    }
    Ok(sched)
}

/// The window (resolved to times) and the path filter (compiled).
struct Filters {
    from: Option<Micros>,
    to: Option<Micros>,
    path: Option<Regex>,
}

impl Filters {
    /// Why a record is skipped: the first reason that applies, in the documented order.
    fn skip(&self, r: &LogRecord, options: &ReplayOptions) -> Option<SkipReason> {
        let (_, path) = split_url(&r.target);
        let path_only = path.split('?').next().unwrap_or("");
        if self.from.is_some_and(|f| r.start < f) {
            Some(SkipReason::BeforeWindow)
        } else if self.to.is_some_and(|t| r.start >= t) {
            Some(SkipReason::AfterWindow)
        } else if options.methods == MethodPolicy::Safe && r.method != "GET" && r.method != "HEAD" {
            Some(SkipReason::UnsafeMethod)
        } else if !options.method_filter.is_empty()
            && !options.method_filter.iter().any(|m| m.eq_ignore_ascii_case(&r.method))
        {
            Some(SkipReason::MethodFilter)
        } else if self.path.as_ref().is_some_and(|p| !p.is_match(path_only)) {
            Some(SkipReason::PathFilter)
        } else if !options.status_filter.is_empty()
            && !r.status.is_some_and(|s| options.status_filter.iter().any(|p| p.matches(s)))
        {
            Some(SkipReason::StatusFilter)
        } else {
            None
        }
    }
}

fn check_options(options: &ReplayOptions) -> Result<Option<Regex>, ReplayError> {
    if options.reorder_window < Duration::from_secs(1) {
        return Err(ReplayError::Format("`reorder_window` must be at least 1 s (a second's spread must fit)".into()));
    }
    if !(options.speed.is_finite() && options.speed > 0.0) {
        return Err(ReplayError::Format(format!("speed {} is not a positive factor", options.speed)));
    }
    match &options.path_filter {
        None => Ok(None),
        Some(p) => Ok(Some(Regex::new(p).map_err(|e| ReplayError::Format(format!("path filter `{p}`: {e}")))?)),
    }
}

fn new_reorder(options: &ReplayOptions) -> Reorder {
    Reorder {
        heap: std::collections::BinaryHeap::new(),
        window: i64::try_from(options.reorder_window.as_micros()).unwrap_or(i64::MAX / 4),
        max: options.max_reorder.max(1),
        newest: Micros::MIN / 2,
        released: None,
        peak: 0,
    }
}

/// Looks up an environment variable (the secrets' replacements): `Box::new(|v| std::env::var(v).ok())`.
pub type EnvLookup = Box<dyn Fn(&str) -> Option<String> + Send>;

/// A log's schedule one request at a time, in `at` order, in bounded memory: one line (a HAR: the file), the
/// reorder buffer, and the counts. Requests and skips are exactly [`build`]'s over the same log and options.
pub struct Stream<R> {
    records: Records<R>,
    options: ReplayOptions,
    reorder: Reorder,
    filters: Filters,
    /// Records released by the reorder buffer, not yet judged.
    ready: std::collections::VecDeque<LogRecord>,
    released: Vec<LogRecord>,
    log_start: Option<Micros>,
    window_from: Option<WindowBound>,
    window_to: Option<WindowBound>,
    first_start: Option<Micros>,
    skips: Skips,
    drained: bool,
    env: EnvLookup,
}

impl<R: std::io::BufRead> Stream<R> {
    /// Starts streaming `input`: checks the format and the options (a HAR is read here).
    pub fn new(
        input: R,
        format: &LogFormat,
        limits: &Limits,
        options: &ReplayOptions,
        env: EnvLookup,
    ) -> Result<Self, ReplayError> {
        let options = ReplayOptions { max_reorder: options.max_reorder.min(limits.max_reorder), ..options.clone() };
        let path = check_options(&options)?;
        let records = Records::new(input, format, limits)?;
        let skips = records.parsed().skips.clone();
        Ok(Stream {
            records,
            reorder: new_reorder(&options),
            filters: Filters { from: None, to: None, path },
            window_from: options.from,
            window_to: options.to,
            options,
            ready: std::collections::VecDeque::new(),
            released: Vec::new(),
            log_start: None,
            first_start: None,
            skips,
            drained: false,
            env,
        })
    }

    /// The next request of the schedule, `None` at its end (then [`Stream::finish`] gives the counts).
    pub fn next_request(&mut self) -> Result<Option<ReplayRequest>, ReplayError> {
        loop {
            while let Some(r) = self.ready.pop_front() {
                if self.log_start.is_none() {
                    let start = r.start;
                    self.log_start = Some(start);
                    let bound = |b: WindowBound| match b {
                        WindowBound::At(t) => t,
                        WindowBound::Offset(d) => {
                            start.saturating_add(i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
                        }
                    };
                    self.filters.from = self.window_from.map(bound);
                    self.filters.to = self.window_to.map(bound);
                }
                if let Some(reason) = self.filters.skip(&r, &self.options) {
                    *self.skips.entry(reason).or_insert(0) += 1;
                    continue;
                }
                return request(r, &self.options, &mut self.first_start, &*self.env).map(Some);
            }
            if self.drained {
                return Ok(None);
            }
            match self.records.next_record()? {
                Some(mut r) => {
                    if r.resolution == Resolution::Second {
                        r.start = r.start.saturating_add(spread_offset(self.options.seed, r.line));
                    }
                    self.reorder.push(r, &mut self.released)?;
                }
                None => {
                    self.reorder.drain(&mut self.released);
                    self.drained = true;
                }
            }
            self.ready.extend(self.released.drain(..));
        }
    }

    /// The log's first kept start (after spreading), microseconds since the epoch, once a request was given.
    pub fn first_start(&self) -> Option<Micros> {
        self.first_start
    }

    /// The end of the stream: the counts, or why the log is refused (too many bad lines, nothing in it).
    pub fn finish(self) -> Result<StreamEnd, ReplayError> {
        let reorder_peak = self.reorder.peak;
        let parsed = self.records.finish()?;
        Ok(StreamEnd {
            lines: parsed.lines,
            bad_lines: parsed.bad,
            first_bad: parsed.first_bad,
            skips: self.skips,
            origin: parsed.origin,
            reorder_peak,
            first_start: self.first_start,
        })
    }
}

/// What a streamed schedule counted.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamEnd {
    /// Lines (entries) read.
    pub lines: u64,
    /// Lines that could not be read (within the allowed share).
    pub bad_lines: u64,
    /// The first of them.
    pub first_bad: Vec<super::error::LineError>,
    /// Requests skipped, by reason.
    pub skips: Skips,
    /// HAR: the origin kept.
    pub origin: Option<String>,
    /// Requests held by the reorder buffer at once, at most.
    pub reorder_peak: usize,
    /// The first kept request's start.
    pub first_start: Option<Micros>,
}

fn request(
    r: LogRecord,
    options: &ReplayOptions,
    first: &mut Option<Micros>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<ReplayRequest, ReplayError> {
    let first = *first.get_or_insert(r.start);
    let delta = u64::try_from(r.start.saturating_sub(first)).unwrap_or(0);
    let at = Duration::from_nanos(((delta as f64 * 1000.0) / options.speed).round() as u64);
    let (authority, path_and_query) = split_url(&r.target);
    let (path, mut query) = options.secrets.split_target(path_and_query);
    let mut host = options.host.clone();
    let mut headers = Vec::with_capacity(r.headers.len() + 1);
    for (name, value) in r.headers {
        if name.starts_with(':') || DROPPED_HEADERS.iter().any(|d| d.eq_ignore_ascii_case(&name)) {
            continue;
        }
        if name.eq_ignore_ascii_case("host") {
            host.get_or_insert(value);
            continue;
        }
        headers.push(options.secrets.header(name, value));
    }
    if let Some(h) = host.or_else(|| authority.map(|a| a.rsplit_once('@').map_or(a, |(_, h)| h).to_string())) {
        headers.insert(0, Header { name: "Host".into(), value: Value::Plain(h) });
    }
    options.secrets.replace_from_env(&mut headers, &mut query, env)?;
    Ok(ReplayRequest {
        at,
        line: r.line,
        method: r.method,
        path: if path.is_empty() { "/".into() } else { path },
        query,
        headers,
        body: r.body,
        client: r.client,
        logged_status: r.status,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::read::parse_log;
    use crate::replay::record::StartFrom;

    fn rec(line: u64, start_ms: i64, method: &str, target: &str, resolution: Resolution) -> LogRecord {
        LogRecord {
            line,
            start: start_ms * 1000,
            resolution,
            start_from: StartFrom::Arrival,
            method: method.into(),
            target: target.into(),
            status: Some(200),
            headers: vec![],
            body: None,
            client: ClientKey::Unknown,
        }
    }

    fn parsed(records: Vec<LogRecord>) -> ParsedLog {
        ParsedLog { lines: records.len() as u64, records, ..ParsedLog::default() }
    }

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn second_resolution_times_are_spread_uniformly_within_their_second_the_same_way_for_a_seed() {
        let records: Vec<_> = (1..=2000).map(|l| rec(l, 5_000_000, "GET", "/", Resolution::Second)).collect();
        let s = build(parsed(records.clone()), &ReplayOptions::default(), &no_env).unwrap();
        let again = build(parsed(records.clone()), &ReplayOptions::default(), &no_env).unwrap();
        assert_eq!(s, again);
        let span = s.requests.last().unwrap().at;
        assert!(span < Duration::from_secs(1) && span > Duration::from_millis(990), "{span:?}");
        // Uniform: each tenth of the second holds about a tenth of the requests (200 expected; 5 sigma ~ 67).
        let mut tenths = [0u32; 10];
        for r in &s.requests {
            tenths[((s.first_start.unwrap() - 5_000_000_000 + r.at.as_micros() as i64) / 100_000) as usize] += 1;
        }
        assert!(tenths.iter().all(|&n| (133..=267).contains(&n)), "{tenths:?}");
        let other = build(parsed(records), &ReplayOptions { seed: 7, ..ReplayOptions::default() }, &no_env).unwrap();
        assert_ne!(
            s.requests.iter().map(|r| r.line).collect::<Vec<_>>(),
            other.requests.iter().map(|r| r.line).collect::<Vec<_>>()
        );
        assert_eq!(spread_offset(0, 1), spread_offset(0, 1));
    }

    #[test]
    fn fine_times_are_kept_and_divided_by_the_speed() {
        let records = vec![
            rec(1, 1000, "GET", "/a", Resolution::Fine),
            rec(2, 1250, "GET", "/b", Resolution::Fine),
            rec(3, 4000, "GET", "/c", Resolution::Fine),
        ];
        let s = build(
            parsed(records),
            &ReplayOptions { speed: parse_speed("2x").unwrap(), ..ReplayOptions::default() },
            &no_env,
        )
        .unwrap();
        let at: Vec<_> = s.requests.iter().map(|r| r.at).collect();
        assert_eq!(at, vec![Duration::ZERO, Duration::from_millis(125), Duration::from_millis(1500)]);
        assert_eq!(s.first_start, Some(1_000_000));
        assert_eq!(parse_speed("0.5x").unwrap(), 0.5);
        assert_eq!(parse_speed("100X").unwrap(), 100.0);
        for bad in ["0x", "-2x", "fast", "NaNx", "infx"] {
            assert!(parse_speed(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn starts_out_of_order_within_the_window_are_sorted_and_beyond_it_are_a_located_error() {
        // Starts derived from end times: a slow request (line 2) ends after faster later ones.
        let records = vec![
            rec(1, 10_000, "GET", "/1", Resolution::Fine),
            rec(2, 13_000, "GET", "/3", Resolution::Fine),
            rec(3, 11_000, "GET", "/2", Resolution::Fine),
            rec(4, 30_000, "GET", "/4", Resolution::Fine),
        ];
        let s = build(parsed(records.clone()), &ReplayOptions::default(), &no_env).unwrap();
        assert_eq!(s.requests.iter().map(|r| r.path.as_str()).collect::<Vec<_>>(), vec!["/1", "/2", "/3", "/4"]);
        let mut late = records;
        late.push(rec(5, 12_000, "GET", "/late", Resolution::Fine));
        let e = build(parsed(late), &ReplayOptions::default(), &no_env).unwrap_err();
        assert_eq!(
            e.to_string(),
            "line 5: starts 1000 ms before a request already scheduled, beyond the reorder window of 10000 ms (raise `reorder_window`)"
        );
    }

    #[test]
    fn the_reorder_buffer_holds_only_a_window_of_requests() {
        let records: Vec<_> = (0..10_000).map(|i| rec(i + 1, i as i64 * 10, "GET", "/", Resolution::Fine)).collect();
        let s = build(
            parsed(records),
            &ReplayOptions { reorder_window: Duration::from_secs(1), ..ReplayOptions::default() },
            &no_env,
        )
        .unwrap();
        assert_eq!(s.requests.len(), 10_000);
        assert!(s.reorder_peak <= 102, "{}", s.reorder_peak);
    }

    #[test]
    fn unsafe_methods_window_and_filters_skip_and_count_by_reason() {
        let mut records = vec![
            rec(1, 0, "GET", "/api/a", Resolution::Fine),
            rec(2, 1000, "DELETE", "/api/a", Resolution::Fine),
            rec(3, 2000, "GET", "/static/x.css", Resolution::Fine),
            rec(4, 3000, "POST", "/api/b", Resolution::Fine),
            rec(5, 4000, "GET", "/api/c", Resolution::Fine),
            rec(6, 5000, "HEAD", "/api/d", Resolution::Fine),
            rec(7, 9000, "GET", "/api/e", Resolution::Fine),
        ];
        records[4].status = Some(500);
        let o = ReplayOptions {
            from: Some(WindowBound::Offset(Duration::from_millis(500))),
            to: Some(WindowBound::At(9_000_000)),
            path_filter: Some("^/api/".into()),
            status_filter: vec![StatusPattern::parse("2xx").unwrap()],
            ..ReplayOptions::default()
        };
        let s = build(parsed(records.clone()), &o, &no_env).unwrap();
        assert_eq!(s.requests.iter().map(|r| r.line).collect::<Vec<_>>(), vec![6]);
        assert_eq!(s.requests[0].at, Duration::ZERO);
        let count = |s: &Schedule, r| s.skips.get(&r).copied().unwrap_or(0);
        assert_eq!(count(&s, SkipReason::BeforeWindow), 1);
        assert_eq!(count(&s, SkipReason::AfterWindow), 1);
        assert_eq!(count(&s, SkipReason::UnsafeMethod), 2);
        assert_eq!(count(&s, SkipReason::PathFilter), 1);
        assert_eq!(count(&s, SkipReason::StatusFilter), 1);
        let o = ReplayOptions {
            methods: MethodPolicy::AsLogged,
            method_filter: vec!["post".into(), "delete".into()],
            ..ReplayOptions::default()
        };
        let s = build(parsed(records), &o, &no_env).unwrap();
        assert_eq!(s.requests.iter().map(|r| r.method.as_str()).collect::<Vec<_>>(), vec!["DELETE", "POST"]);
        assert_eq!(count(&s, SkipReason::MethodFilter), 5);
        assert!(StatusPattern::parse("6xx").is_err() && StatusPattern::parse("20").is_err());
    }

    #[test]
    fn absolute_urls_become_a_path_and_a_host_and_the_rewrite_wins() {
        let mut r = rec(1, 0, "GET", "https://shop.example:8443/a/b?x=1&token=t0p", Resolution::Fine);
        r.headers = vec![
            (":authority".into(), "shop.example".into()),
            ("Connection".into(), "keep-alive".into()),
            ("Cookie".into(), "sid=abc".into()),
            ("Accept".into(), "text/html".into()),
        ];
        let s = build(parsed(vec![r.clone()]), &ReplayOptions::default(), &no_env).unwrap();
        let q = &s.requests[0];
        assert_eq!(q.path_and_query(), "/a/b?x=1&token=t0p");
        let shown = q.redacted();
        assert_eq!(shown.path_and_query, "/a/b?x=1&token=***");
        assert_eq!(
            shown.headers,
            vec![
                ("Host".into(), "shop.example:8443".into()),
                ("Cookie".into(), "***".into()),
                ("Accept".into(), "text/html".into())
            ]
        );
        let text = format!("{q:?} {}", serde_json::to_string(&shown).unwrap());
        assert!(!text.contains("t0p") && !text.contains("sid=abc"), "{text}");
        let o = ReplayOptions { host: Some("staging.internal".into()), ..ReplayOptions::default() };
        let s = build(parsed(vec![r]), &o, &no_env).unwrap();
        assert_eq!(s.requests[0].redacted().headers[0], ("Host".into(), "staging.internal".into()));
    }

    #[test]
    fn the_stream_gives_exactly_what_build_gives() {
        let mut log = String::new();
        for i in 0..3000u64 {
            // Seconds out of order by up to 2 s, a few unsafe methods and paths the filter drops.
            let sec = 10 + i / 100 - (i % 7 == 0) as u64 * 2;
            let method = if i % 11 == 0 { "POST" } else { "GET" };
            let path = if i % 13 == 0 { "/static/x" } else { "/api/y" };
            log.push_str(&format!(
                "10.0.0.{} - - [28/Nov/2026:10:00:{sec:02} +0000] \"{method} {path}?i={i}&access_token=s3 HTTP/1.1\" 200 1 \"-\" \"ua\"\n",
                i % 5
            ));
        }
        let o = ReplayOptions {
            path_filter: Some("^/api/".into()),
            from: Some(WindowBound::Offset(Duration::from_secs(3))),
            speed: 3.0,
            ..ReplayOptions::default()
        };
        let limits = Limits::default();
        let whole = build(parse_log(log.as_bytes(), &LogFormat::NginxCombined, &limits).unwrap(), &o, &no_env).unwrap();
        let mut s = Stream::new(log.as_bytes(), &LogFormat::NginxCombined, &limits, &o, Box::new(|_| None)).unwrap();
        let mut streamed = Vec::new();
        while let Some(r) = s.next_request().unwrap() {
            streamed.push(r);
        }
        let end = s.finish().unwrap();
        assert!(whole.requests.len() > 1000);
        assert_eq!(streamed, whole.requests);
        assert_eq!(end.skips, whole.skips);
        assert_eq!((end.lines, end.bad_lines, end.first_start), (whole.lines, whole.bad_lines, whole.first_start));
    }

    #[test]
    fn a_reorder_window_under_a_second_and_a_bad_path_regex_are_refused() {
        let o = ReplayOptions { reorder_window: Duration::from_millis(500), ..ReplayOptions::default() };
        assert!(build(parsed(vec![]), &o, &no_env).is_err());
        let o = ReplayOptions { path_filter: Some("(".into()), ..ReplayOptions::default() };
        assert!(
            matches!(build(parsed(vec![]), &o, &no_env), Err(ReplayError::Format(m)) if m.starts_with("path filter `(`"))
        );
    }
}
