//! The lines both the Markdown and the terminal show of a scenario instance: its load, status classes, errors,
//! users and verdict.

use loadgate_results::format;
use loadgate_results::{peak_users_active, ScenarioResult};

/// Whether the instance injected users (Gatling's open model): a connection per user, the users' arrival
/// profile its plan; no request rate or connection count was planned.
pub(crate) fn injects_users(s: &ScenarioResult) -> bool {
    s.load.model == "users"
}

/// `closed load, 256 connections, pipeline 16, 15.00s`; `users load, at_once 10, 10 users, 1.20s`.
pub(crate) fn load_line(s: &ScenarioResult) -> String {
    let mut parts = vec![format!("{} load", if s.load.model.is_empty() { "unknown" } else { &s.load.model })];
    if injects_users(s) {
        if let Some(profile) = &s.load.injection {
            parts.push(profile.clone());
        }
    } else {
        if let Some(target) = s.load.target_rate {
            parts.push(format!("target {}", format::rate(target)));
        }
        let planned = s.connections.planned;
        let most = if s.load.target_rate.is_some() { "up to " } else { "" };
        parts.push(format!("{most}{} connection{}", format::count(planned), if planned == 1 { "" } else { "s" }));
    }
    if s.load.pipeline > 1 {
        let whole = if s.load.pipeline_reads.as_deref() == Some("batch") { " (batches read whole)" } else { "" };
        parts.push(format!("pipeline {}{whole}", s.load.pipeline));
    }
    if !s.load.keep_alive {
        parts.push("no keep-alive".to_owned());
    }
    if let Some(users) = s.load.users_started {
        parts.push(format!("{} users", format::count(users)));
    }
    parts.push(format::seconds(s.duration));
    if !s.gate {
        parts.push("not gated".to_owned());
    }
    parts.join(", ")
}

/// `2xx 959,692, 5xx 12`.
pub(crate) fn status_line(s: &ScenarioResult) -> String {
    let st = &s.status;
    let classes = [
        ("1xx", st.informational),
        ("2xx", st.success),
        ("3xx", st.redirection),
        ("4xx", st.client_error),
        ("5xx", st.server_error),
    ];
    let parts: Vec<String> =
        classes.iter().filter(|(_, n)| *n > 0).map(|(class, n)| format!("{class} {}", format::count(*n))).collect();
    if parts.is_empty() {
        "no responses".to_owned()
    } else {
        parts.join(", ")
    }
}

/// `timeout 3, read 1` or `none`.
pub(crate) fn errors_line(s: &ScenarioResult) -> String {
    let e = &s.errors;
    let kinds = [
        ("connect", e.connect),
        ("read", e.read),
        ("write", e.write),
        ("timeout", e.timeout),
        ("protocol", e.protocol),
    ];
    let parts: Vec<String> =
        kinds.iter().filter(|(_, n)| *n > 0).map(|(kind, n)| format!("{kind} {}", format::count(*n))).collect();
    if parts.is_empty() {
        "none".to_owned()
    } else {
        parts.join(", ")
    }
}

/// `p50 / p99 / max` of a latency summary, `-` when it has no samples.
pub(crate) fn spread_line(l: &loadgate_results::LatencySummary) -> String {
    if l.count == 0 {
        return "-".to_owned();
    }
    let p = |key: &str| l.percentiles.get(key).map_or_else(|| "-".to_owned(), |us| format::latency(*us));
    format!("{} / {} / {}", p("p50"), p("p99"), format::latency(l.max_us))
}

/// `1,000 handshakes (950 resumed; TLSv1_3 1,000), p50 1.1ms, p99 2.3ms, max 4ms; errors: unknown CA 3 (first:
/// ...); INSECURE: certificates not checked`, for HTTPS targets; without the handshake times when `times` is false
/// (a table that has them in a column of their own).
pub(crate) fn tls_line(s: &ScenarioResult, times: bool) -> Option<String> {
    let t = s.tls.as_ref()?;
    let mut out = format!("{} handshakes ({} resumed", format::count(t.handshakes), format::count(t.resumed));
    for (version, n) in &t.versions {
        out.push_str(&format!("; {version} {}", format::count(*n)));
    }
    out.push(')');
    let h = &t.handshake_time;
    if times && h.count > 0 {
        let p = |key: &str| h.percentiles.get(key).map_or_else(|| "-".to_owned(), |us| format::latency(*us));
        out.push_str(&format!(", p50 {}, p99 {}, max {}", p("p50"), p("p99"), format::latency(h.max_us)));
    }
    let errors = t.errors.nonzero();
    if !errors.is_empty() {
        let list: Vec<String> = errors.iter().map(|(k, n)| format!("{k} {}", format::count(*n))).collect();
        out.push_str(&format!("; errors: {}", list.join(", ")));
        if let Some(first) = &t.first_error {
            out.push_str(&format!(" (first: {first})"));
        }
    }
    if t.insecure {
        out.push_str("; INSECURE: certificates not checked");
    }
    Some(out)
}

/// HTTP/2 targets: `64 connections, 100 streams asked, 64 granted (capped by the server); 2 GOAWAYs; RST_STREAM
/// refused_stream 3, cancel 1; 3 resent`. Granted 0 means no server SETTINGS arrived.
pub(crate) fn http2_line(s: &ScenarioResult) -> Option<String> {
    let h = s.http2.as_ref()?;
    let plural = |n: u64| if n == 1 { "" } else { "s" };
    let mut out = format!(
        "{} connection{}, {} stream{} asked, ",
        format::count(h.connections),
        plural(h.connections),
        format::count(h.streams_asked),
        plural(h.streams_asked)
    );
    match h.streams_granted {
        0 => out.push_str("no server SETTINGS"),
        g if g < h.streams_asked => out.push_str(&format!("{} granted (capped by the server)", format::count(g))),
        g => out.push_str(&format!("{} granted", format::count(g))),
    }
    out.push_str(&format!("; {} GOAWAY{}", format::count(h.goaways), plural(h.goaways)));
    let resets: Vec<String> = h
        .rst_streams
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(code, n)| format!("{code} {}", format::count(*n)))
        .collect();
    if resets.is_empty() {
        out.push_str("; no RST_STREAM");
    } else {
        out.push_str(&format!("; RST_STREAM {}", resets.join(", ")));
    }
    out.push_str(&format!("; {} resent", format::count(h.resent)));
    Some(out)
}

/// `6,000 injected of 6,000 planned, 6,000 finished, 118 active at peak`, for user injection: the peak is counted
/// by the engine whenever a user starts; results of an older loadgate only have the timeline's once-a-second
/// value, which says so (and no planned count, which is then left out).
pub(crate) fn users_line(s: &ScenarioResult) -> Option<String> {
    if !injects_users(s) && s.load.users_started.is_none() {
        return None;
    }
    let n = |v: Option<u64>| v.map_or_else(|| "-".to_owned(), format::count);
    Some(format!(
        "{} injected{}, {} finished, {} active at peak{}",
        n(s.load.users_started),
        s.load.users_planned.map(|p| format!(" of {} planned", format::count(p))).unwrap_or_default(),
        n(s.load.users_finished),
        n(peak_users_active(s)),
        if s.load.users_peak_active.is_none() { " (sampled once a second)" } else { "" }
    ))
}

/// `Connections: 256 planned, 256 open at peak, 256 opened, 0 failed, 0 reconnects` as each load model means it:
/// a closed load plans its connections; an open load's are the most it may open; user injection opens one per
/// user (no reconnect), with the most open at once its `max_connections`.
pub(crate) fn connections_line(s: &ScenarioResult) -> String {
    let c = &s.connections;
    if injects_users(s) {
        return format!(
            "{} opened (one per user), {} open at peak, {} failed; at most {} at once",
            format::count(c.opened),
            format::count(c.peak_open),
            format::count(c.failed),
            format::count(c.planned)
        );
    }
    let planned = if s.load.target_rate.is_some() {
        format!("up to {}", format::count(c.planned))
    } else {
        format!("{} planned", format::count(c.planned))
    };
    format!(
        "{planned}, {} open at peak, {} opened, {} failed, {} reconnects",
        format::count(c.peak_open),
        format::count(c.opened),
        format::count(c.failed),
        format::count(c.reconnects)
    )
}

/// How a scenario instance fared, for tables: `PASS 3/3`, `FAIL 1/3`, `INCONCLUSIVE 1/3`, `INVALID`, `not gated`,
/// `ran`, `stopped`.
pub(crate) fn scenario_verdict(s: &ScenarioResult) -> (String, Tone) {
    let failed = s.judged.verdicts.iter().filter(|v| !v.passed).count();
    let evaluated = s.judged.verdicts.iter().filter(|v| v.evaluated()).count();
    if !s.gate {
        return ("not gated".to_owned(), Tone::Dim);
    }
    if !s.validity.valid {
        return ("INVALID".to_owned(), Tone::Warn);
    }
    let inconclusive = s
        .judged
        .verdicts
        .iter()
        .filter(|v| {
            v.statistics.as_ref().is_some_and(|st| st.status == loadgate_results::StatisticalStatus::Inconclusive)
        })
        .count();
    if failed > inconclusive {
        return (format!("FAIL {}/{evaluated}", failed - inconclusive), Tone::Bad);
    }
    if inconclusive > 0 {
        return (format!("INCONCLUSIVE {inconclusive}/{evaluated}"), Tone::Warn);
    }
    if s.aborted.is_some() {
        return ("stopped".to_owned(), Tone::Warn);
    }
    if evaluated == 0 {
        return ("ran".to_owned(), Tone::Plain);
    }
    (format!("PASS {evaluated}/{evaluated}"), Tone::Good)
}

/// The colour of a cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tone {
    Plain,
    Good,
    Bad,
    Warn,
    Dim,
}

/// `p50 41us, p99 180us, max 1.20ms (12 connects)`; `None` when no connection was timed. Read from the summary,
/// or from the histogram in files written before the summary existed.
pub(crate) fn connect_line(s: &ScenarioResult) -> Option<String> {
    let derived;
    let c = if s.connect_time.count > 0 {
        &s.connect_time
    } else if !s.histograms.connect_time.is_empty() {
        derived = loadgate_results::LatencySummary::from_histogram(&s.histograms.connect_time);
        &derived
    } else {
        return None;
    };
    let p = |key: &str| c.percentiles.get(key).map_or_else(|| "-".to_owned(), |us| format::latency(*us));
    Some(format!(
        "p50 {}, p99 {}, max {} ({} connects)",
        p("p50"),
        p("p99"),
        format::latency(c.max_us),
        format::count(c.count)
    ))
}

/// How a keep-alive phase opened its connections before measuring: `16,384 of 16,384 in 4.81s (3,406/s,
/// connect_rate auto), 12 slow connects retried, 2 backoffs`, or `None` without an opening.
pub(crate) fn opening_line(s: &ScenarioResult) -> Option<String> {
    let o = s.connections.opening.as_ref()?;
    let mut line = format!(
        "{} of {} in {} ({}, connect_rate {})",
        format::count(o.opened),
        format::count(s.connections.planned),
        format::seconds(o.duration_s),
        format::rate(o.rate_per_s),
        o.connect_rate
    );
    let failed = o.failed.total();
    if failed > 0 {
        line.push_str(&format!(", {} not opened", format::count(failed)));
    }
    // Over TLS the opening is the TCP connects; each handshake runs when the load starts, and a failed one
    // counts among the phase's failed connections.
    if s.tls.is_some() {
        line.push_str(" (TCP; the TLS handshakes run with the load)");
    }
    if o.slow_connects > 0 {
        line.push_str(&format!(", {} slow connects retried", format::count(o.slow_connects)));
    }
    if o.backoffs > 0 {
        line.push_str(&format!(", {} backoffs", format::count(o.backoffs)));
    }
    Some(line)
}

/// The columns of a capacity search's curve, one row per step: `#`, stage, rate, achieved, p50, p99, errors,
/// verdict (with why it failed).
pub(crate) const CAPACITY_HEADERS: [&str; 8] = ["step", "stage", "rate", "achieved", "p50", "p99", "errors", "verdict"];

/// A capacity search's steps as table rows (see [`CAPACITY_HEADERS`]); the verdict of a step that failed or was
/// invalid carries its reasons.
pub(crate) fn capacity_rows(c: &loadgate_results::Capacity) -> Vec<[String; 8]> {
    c.steps.iter().map(capacity_row).collect()
}

fn capacity_row(s: &loadgate_results::CapacityStep) -> [String; 8] {
    let lat = |us: Option<u64>| us.map_or_else(|| "-".to_owned(), format::latency);
    let mut verdict = s.verdict.as_str().to_owned();
    if !s.reasons.is_empty() {
        verdict.push_str(": ");
        verdict.push_str(&s.reasons.join("; "));
    }
    [
        s.step.to_string(),
        s.stage.as_str().to_owned(),
        format::rate(s.rate),
        format::rate(s.achieved_rate),
        lat(s.p50_us),
        lat(s.p99_us),
        format::count(s.errors),
        verdict,
    ]
}

/// One step of a capacity search on one line, as the terminal shows it while the search runs:
/// `step 3 (bisect) 2,400/s: achieved 2,400/s, p50 1.20ms, p99 4.50ms, 0 errors: PASS`.
pub fn capacity_step_line(s: &loadgate_results::CapacityStep) -> String {
    let [step, stage, rate, achieved, p50, p99, errors, verdict] = capacity_row(s);
    format!("step {step} ({stage}) {rate}: achieved {achieved}, p50 {p50}, p99 {p99}, {errors} errors: {verdict}")
}

/// A replay's fidelity as lines (terminal and Markdown): what was sent against the log; empty for other loads.
pub(crate) fn replay_lines(s: &ScenarioResult) -> Vec<(String, String)> {
    let Some(f) = &s.replay else { return Vec::new() };
    let us = |v: u64| format::latency(v);
    let w = &f.windows;
    let m = &f.requests;
    let mut lines = vec![
        (
            "file".to_owned(),
            format!(
                "{} ({}) at {}x: {} lines, {} unreadable",
                f.file,
                f.format,
                f.speed,
                format::count(f.lines),
                format::count(f.bad_lines)
            ),
        ),
        (
            "schedule error".to_owned(),
            format!(
                "p50 {}, p99 {}, max {} (sent against the log's start at the speed)",
                us(f.schedule_error.p50_us),
                us(f.schedule_error.p99_us),
                us(f.schedule_error.max_us)
            ),
        ),
        (
            "rate".to_owned(),
            format!(
                "per {} ms window: at most {} off the log's ({} of {} windows differ; busiest {} logged, {} sent)",
                w.window_ms, w.max_abs_difference, w.differing, w.windows, w.logged_peak, w.sent_peak
            ),
        ),
        (
            "requests".to_owned(),
            format!(
                "{} of {} sent; the multiset of (method, path, query) {} ({} distinct, {} missing, {} extra)",
                format::count(f.sent),
                format::count(f.scheduled),
                if m.equal { "equals the log's" } else { "differs from the log's" },
                format::count(m.distinct),
                format::count(m.missing),
                format::count(m.extra)
            ),
        ),
    ];
    if !f.skips.is_empty() {
        let skips: Vec<String> = f.skips.iter().map(|k| format!("{} ({})", format::count(k.count), k.reason)).collect();
        lines.push(("skipped".to_owned(), skips.join(", ")));
    }
    if !f.first_bad.is_empty() {
        lines.push(("unreadable".to_owned(), f.first_bad.join("; ")));
    }
    if !f.statuses.is_empty() {
        let st: Vec<String> = f
            .statuses
            .iter()
            .map(|p| format!("{} logged {} seen {}", format::count(p.count), p.logged, p.seen))
            .collect();
        lines.push(("statuses".to_owned(), st.join(", ")));
    }
    lines
}

/// `99.75% of 40,000 evaluations held`; `None` without checks.
pub(crate) fn checks_line(s: &ScenarioResult) -> Option<String> {
    if s.checks.is_empty() {
        return None;
    }
    let (passed, evaluated) = loadgate_results::checks::totals(&s.checks);
    let noun = if evaluated == 1 { "evaluation" } else { "evaluations" };
    Some(format!("{} of {} {noun} held", loadgate_results::checks::held(passed, evaluated), format::count(evaluated)))
}

/// A line per failing check: `bad/json-type 100 failed: 200 application/xml, Content-Type was
/// "application/xml"; body starts <?xml …` (a single request's checks without the request's name).
pub(crate) fn failing_check_lines(s: &ScenarioResult) -> Vec<String> {
    s.checks
        .iter()
        .filter(|c| c.failed > 0)
        .map(|c| {
            let name = if c.request == loadgate_results::verify::SINGLE_REQUEST {
                c.check.clone()
            } else {
                format!("{}/{}", c.request, c.check)
            };
            let example = c
                .examples
                .first()
                .map(|e| format!(": {}", loadgate_results::checks::example_text(e, 40)))
                .unwrap_or_default();
            format!("{name} {} failed{example}", format::count(c.failed))
        })
        .collect()
}

#[cfg(test)]
mod opening_tests {
    use super::opening_line;
    use loadgate_results::{fixture, ConnectionOpening, OpeningFailures};

    #[test]
    fn the_opening_line_says_what_the_opening_met() {
        let mut s = fixture::sweep_cell(16_384, 30_000.0, 2.0);
        assert_eq!(opening_line(&s), None);
        s.connections.planned = 16_384;
        s.connections.opening = Some(ConnectionOpening {
            connect_rate: "auto".into(),
            opened: 16_380,
            failed: OpeningFailures { timed_out: 4, ..OpeningFailures::default() },
            duration_s: 4.8123,
            rate_per_s: 3_403.7,
            slow_connects: 12,
            backoffs: 2,
            first_error: Some("connect timed out".into()),
        });
        assert_eq!(
            opening_line(&s).as_deref(),
            Some(
                "16,380 of 16,384 in 4.81s (3,404/s, connect_rate auto), 4 not opened, 12 slow connects retried, \
                 2 backoffs"
            )
        );
    }
}
