//! A replay load's requests (`Arrival::Replay`): the log read through `loadgate_import::replay`'s stream (the
//! file's reorder buffer bounded, a `.gz` decompressed as read), each request serialized once with its own
//! method, path and query, headers and body, and dealt to the workers: request `g` of the schedule (from 0) goes
//! to the worker whose stream is `g % streams` (round-robin, so shards and worker counts split it without
//! overlap). A worker's schedule is then its requests' intended times (`schedule::WorkerSchedule::times`): the
//! pacer is the open loop's, with a time per request instead of a rate function.
//!
//! After the phase, [`fidelity`] compares what the workers sent with the log: rate per 10 ms window, the
//! multiset of (method, path, query), statuses against the logged ones.

use std::collections::HashMap;
use std::time::Duration;

use loadgate_import::replay::{self as import, ReplayRequest};
use loadgate_measure::replay::{
    MultisetFidelity, ReplayFidelity, ReplaySkip, ScheduleError, StatusPair, WindowFidelity,
};
use loadgate_measure::LatencySummary;
use loadgate_model::replay::Replay;

use crate::control::EngineError;

/// Status classes as tallied: 0 none logged (or no response), 1..=5 the class `Nxx`.
pub(crate) const CLASSES: usize = 6;

/// One worker's part of a replay, serialized before the phase.
#[derive(Debug, Default)]
pub(crate) struct ReplayPart {
    /// Intended send times, from the phase start, in order (moved into the worker's schedule).
    pub times: Vec<Duration>,
    /// The requests' bytes, back to back; request `k` ends at `ends[k]`.
    pub bytes: Vec<u8>,
    pub ends: Vec<usize>,
    /// Request `k` is a HEAD (its response has no body).
    pub heads: Vec<bool>,
    /// The status class the log gave request `k` (0: none).
    pub logged: Vec<u8>,
    /// Request `k`'s (method, path, query) among the log's distinct ones.
    pub keys: Vec<u32>,
}

impl ReplayPart {
    /// Request `k`'s bytes.
    pub fn request(&self, k: usize) -> &[u8] {
        let start = if k == 0 { 0 } else { self.ends[k - 1] };
        &self.bytes[start..self.ends[k]]
    }
}

/// What the log says, for the fidelity report.
#[derive(Debug, Default)]
pub(crate) struct ReplayLog {
    pub file: String,
    pub format: String,
    pub speed: f64,
    pub end: Option<import::StreamEnd>,
    /// Requests of this run per 10 ms window of their intended time.
    pub windows: Vec<u32>,
    /// Requests skipped because they cannot be put on the wire (a method or header that is not HTTP).
    pub unsendable: u64,
    /// Distinct (method, path, query) keys.
    pub distinct: u64,
    /// Requests of this run.
    pub scheduled: u64,
}

/// Reads the replay and deals its requests to the workers whose streams are `streams_of` among `streams`.
pub(crate) fn load(
    replay: &Replay,
    streams_of: &[u64],
    streams: u64,
    host: &str,
    keep_alive: bool,
) -> Result<(Vec<ReplayPart>, ReplayLog), EngineError> {
    let invalid = |e: import::ReplayError| EngineError::InvalidPlan(format!("replay of {}: {e}", replay.file));
    let mut stream = import::stream(replay).map_err(invalid)?;
    let mut parts: Vec<ReplayPart> = streams_of.iter().map(|_| ReplayPart::default()).collect();
    let worker_of: HashMap<u64, usize> = streams_of.iter().enumerate().map(|(w, s)| (*s, w)).collect();
    let mut log = ReplayLog {
        file: replay.file.clone(),
        format: replay.format.name().to_owned(),
        speed: replay.speed,
        ..ReplayLog::default()
    };
    let mut keys: HashMap<String, u32> = HashMap::new();
    let mut g = 0u64;
    while let Some(r) = stream.next_request().map_err(invalid)? {
        let here = worker_of.get(&(g % streams.max(1))).copied();
        g += 1;
        let Some(w) = here else { continue };
        let part = &mut parts[w];
        if !serialize(&r, host, keep_alive, &mut part.bytes) {
            log.unsendable += 1;
            continue;
        }
        log.scheduled += 1;
        part.ends.push(part.bytes.len());
        part.times.push(r.at);
        part.heads.push(r.method.eq_ignore_ascii_case("HEAD"));
        part.logged.push(r.logged_status.map_or(0, |s| u8::try_from((s / 100).clamp(1, 5)).unwrap_or(5)));
        let shown = r.redacted();
        let key = format!("{} {}", shown.method, shown.path_and_query);
        let next = u32::try_from(keys.len()).unwrap_or(u32::MAX);
        part.keys.push(*keys.entry(key).or_insert(next));
        let window = usize::try_from(import::window_of(r.at)).unwrap_or(usize::MAX);
        if window >= log.windows.len() {
            log.windows.resize(window.saturating_add(1), 0);
        }
        log.windows[window] += 1;
    }
    log.distinct = keys.len() as u64;
    log.end = Some(stream.finish().map_err(invalid)?);
    if parts.iter().any(|p| p.times.len() > u32::MAX as usize) {
        return Err(EngineError::InvalidPlan(format!(
            "replay of {}: more than {} requests for one worker",
            replay.file,
            u32::MAX
        )));
    }
    Ok((parts, log))
}

/// Writes a request's HTTP/1.1 bytes: the request line with its path and query, `Host` (the request's, else
/// the target's), its headers, `Content-Length` for a body, `Connection: close` without keep-alive. `false`
/// (nothing written) when a part would not be valid HTTP.
fn serialize(r: &ReplayRequest, host: &str, keep_alive: bool, out: &mut Vec<u8>) -> bool {
    let token = |s: &str| !s.is_empty() && s.bytes().all(is_token_byte);
    let value_ok = |s: &str| !s.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0);
    let target = r.path_and_query();
    if !token(&r.method) || target.bytes().any(|b| b <= b' ' || b == 0x7f) {
        return false;
    }
    let mine = r.headers.iter().find(|h| h.name.eq_ignore_ascii_case("host"));
    let host = mine.map_or(host, |h| h.value.expose());
    if !value_ok(host) || !r.headers.iter().all(|h| token(&h.name) && value_ok(h.value.expose())) {
        return false;
    }
    let start = out.len();
    out.extend_from_slice(r.method.as_bytes());
    out.push(b' ');
    out.extend_from_slice(target.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\nHost: ");
    out.extend_from_slice(host.as_bytes());
    out.extend_from_slice(b"\r\n");
    for h in r.headers.iter().filter(|h| !h.name.eq_ignore_ascii_case("host")) {
        if !keep_alive && h.name.eq_ignore_ascii_case("connection") {
            continue;
        }
        out.extend_from_slice(h.name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(h.value.expose().as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    if let Some(body) = &r.body {
        out.extend_from_slice(format!("Content-Length: {}\r\n", body.len()).as_bytes());
    }
    if !keep_alive {
        out.extend_from_slice(b"Connection: close\r\n");
    }
    out.extend_from_slice(b"\r\n");
    if let Some(body) = &r.body {
        out.extend_from_slice(body);
    }
    debug_assert!(out.len() > start);
    true
}

fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// What one worker did with its part: how many of its requests it took (in order: a prefix of its part), its
/// sends per 10 ms window, and its responses by (logged, seen) status class.
#[derive(Debug, Clone, Default)]
pub(crate) struct ReplayTally {
    pub taken: u64,
    pub windows: Vec<u32>,
    /// `statuses[logged][seen]`; `seen` 0 is a request that ended without a response.
    pub statuses: [[u64; CLASSES]; CLASSES],
}

impl ReplayTally {
    pub fn add(&mut self, o: &ReplayTally) {
        self.taken += o.taken;
        if self.windows.len() < o.windows.len() {
            self.windows.resize(o.windows.len(), 0);
        }
        for (a, b) in self.windows.iter_mut().zip(&o.windows) {
            *a += b;
        }
        for (a, b) in self.statuses.iter_mut().zip(&o.statuses) {
            for (x, y) in a.iter_mut().zip(b) {
                *x += y;
            }
        }
    }
}

/// The status class a tally keeps of a status (1..=5; 0 for none).
pub(crate) fn class(status: u16) -> usize {
    usize::from((status / 100).clamp(1, 5))
}

/// The fidelity report: the log's side against the workers' tallies (`keys[w]`: worker `w`'s requests' keys,
/// of which it sent the first `tallies[w].taken`).
pub(crate) fn fidelity(
    log: &ReplayLog,
    keys: &[Vec<u32>],
    tallies: &[ReplayTally],
    send_lag: &LatencySummary,
) -> ReplayFidelity {
    let mut total = ReplayTally::default();
    for t in tallies {
        total.add(t);
    }
    // The multiset: what each worker took is a prefix of its part.
    let mut logged: HashMap<u32, (u64, u64)> = HashMap::new();
    for (part, tally) in keys.iter().zip(tallies) {
        for (k, key) in part.iter().enumerate() {
            let e = logged.entry(*key).or_insert((0, 0));
            e.0 += 1;
            if (k as u64) < tally.taken {
                e.1 += 1;
            }
        }
    }
    let (mut missing, mut extra) = (0, 0);
    for (l, s) in logged.values() {
        missing += l.saturating_sub(*s);
        extra += s.saturating_sub(*l);
    }
    let n = log.windows.len().max(total.windows.len());
    let at = |v: &[u32], i: usize| u64::from(v.get(i).copied().unwrap_or(0));
    let (mut max_diff, mut differing) = (0, 0);
    for i in 0..n {
        let d = at(&log.windows, i).abs_diff(at(&total.windows, i));
        max_diff = max_diff.max(d);
        differing += u64::from(d > 0);
    }
    let class_name = |c: usize| if c == 0 { "-".to_owned() } else { format!("{c}xx") };
    let mut statuses = Vec::new();
    for (l, row) in total.statuses.iter().enumerate() {
        for (s, &count) in row.iter().enumerate() {
            if count > 0 {
                let seen = if s == 0 { "error".to_owned() } else { class_name(s) };
                statuses.push(StatusPair { logged: class_name(l), seen, count });
            }
        }
    }
    let end = log.end.clone().unwrap_or_else(|| import::StreamEnd {
        lines: 0,
        bad_lines: 0,
        first_bad: Vec::new(),
        skips: Default::default(),
        origin: None,
        reorder_peak: 0,
        first_start: None,
    });
    let mut skips: Vec<ReplaySkip> =
        end.skips.iter().map(|(k, v)| ReplaySkip { reason: k.name().to_owned(), count: *v }).collect();
    if log.unsendable > 0 {
        skips.push(ReplaySkip { reason: "not valid HTTP".into(), count: log.unsendable });
    }
    ReplayFidelity {
        file: log.file.clone(),
        format: log.format.clone(),
        speed: log.speed,
        lines: end.lines,
        bad_lines: end.bad_lines,
        first_bad: end.first_bad.iter().map(ToString::to_string).collect(),
        skips,
        scheduled: log.scheduled,
        sent: total.taken,
        schedule_error: ScheduleError::of(&send_lag.percentiles, send_lag.max_us),
        windows: WindowFidelity {
            window_ms: import::WINDOW.as_millis() as u64,
            windows: n as u64,
            max_abs_difference: max_diff,
            differing,
            logged_peak: log.windows.iter().copied().max().map_or(0, u64::from),
            sent_peak: total.windows.iter().copied().max().map_or(0, u64::from),
        },
        requests: MultisetFidelity { equal: missing == 0 && extra == 0, distinct: log.distinct, missing, extra },
        statuses,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadgate_import::replay::{ClientKey, Header, QueryParam, Secret, Value};

    fn req(method: &str, body: Option<&[u8]>) -> ReplayRequest {
        ReplayRequest {
            at: Duration::ZERO,
            line: 1,
            method: method.into(),
            path: "/a".into(),
            query: vec![
                QueryParam { name: "x".into(), value: Some(Value::Plain("1".into())) },
                QueryParam { name: "access_token".into(), value: Some(Value::Secret(Secret::new("t0k"))) },
            ],
            headers: vec![Header { name: "Authorization".into(), value: Value::Secret(Secret::new("Bearer s3")) }],
            body: body.map(<[u8]>::to_vec),
            client: ClientKey::Unknown,
            logged_status: Some(200),
        }
    }

    #[test]
    fn a_request_is_sent_with_its_own_line_headers_and_body_secrets_included() {
        let mut out = Vec::new();
        assert!(serialize(&req("POST", Some(b"{}")), "t:1", true, &mut out));
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "POST /a?x=1&access_token=t0k HTTP/1.1\r\nHost: t:1\r\nAuthorization: Bearer s3\r\nContent-Length: 2\r\n\r\n{}"
        );
        let mut out = Vec::new();
        assert!(serialize(&req("GET", None), "t:1", false, &mut out));
        assert!(out.ends_with(b"Connection: close\r\n\r\n"));
        let mut out = Vec::new();
        assert!(!serialize(&req("G ET", None), "t:1", true, &mut out));
        assert!(out.is_empty());
    }

    #[test]
    fn fidelity_counts_what_was_not_sent_and_the_windows_that_differ() {
        let keys = vec![0, 0];
        let log = ReplayLog { windows: vec![1, 1], distinct: 1, scheduled: 2, ..ReplayLog::default() };
        let mut tally = ReplayTally { taken: 1, windows: vec![1], ..ReplayTally::default() };
        tally.statuses[2][2] = 1;
        let f = fidelity(&log, &[keys], &[tally], &LatencySummary::default());
        assert_eq!(f.requests, MultisetFidelity { equal: false, distinct: 1, missing: 1, extra: 0 });
        assert_eq!((f.windows.max_abs_difference, f.windows.differing, f.windows.windows), (1, 1, 2));
        assert_eq!(f.statuses, vec![StatusPair { logged: "2xx".into(), seen: "2xx".into(), count: 1 }]);
    }
}
