//! The terminal: a wrk-like summary per scenario instance, and a final table for the whole run.

use std::fmt::Write as _;

use loadgate_results::format;
use loadgate_results::{response_time_buckets, KneeKind, OutcomeStatus, RunResults, ScenarioResult};

use crate::lines::{
    connect_line, errors_line, http2_line, load_line, scenario_verdict, status_line, tls_line, users_line, Tone,
};

/// The percentile columns of the summaries.
const PERCENTILES: [(&str, &str); 5] =
    [("p50", "p50"), ("p75", "p75"), ("p90", "p90"), ("p99", "p99"), ("p99.9", "p99.9")];

/// A wrk-like summary of one scenario instance: load, latency percentiles, requests and bytes, throughput,
/// achieved against target rate for open loads, for user injection the users and Gatling's response-time
/// buckets, status classes, errors by kind, connections, SLO verdicts and validity problems. Plain text, no
/// colour, ending with a newline.
pub fn text_summary(s: &ScenarioResult) -> String {
    let mut out = String::new();
    // An A/B instance's own numbers are the candidate's (the baseline's are in the A/B table): say so.
    let side = if s.ab_baseline.is_some() { " (B candidate)" } else { "" };
    let _ = writeln!(out, "{}{side}: {}", s.name, load_line(s));

    if s.latency.count == 0 {
        let _ = writeln!(out, "  Latency      no completed requests");
    } else {
        let _ = writeln!(
            out,
            "  {}",
            latency_row("Latency", PERCENTILES.iter().map(|(label, _)| (*label).to_owned()), "max".to_owned())
        );
        let _ = writeln!(
            out,
            "  {}",
            latency_row(
                "",
                PERCENTILES.iter().map(|(_, key)| s
                    .latency
                    .percentiles
                    .get(*key)
                    .map_or_else(|| "-".to_owned(), |us| format::latency(*us))),
                format::latency(s.latency.max_us),
            )
        );
        let _ = writeln!(
            out,
            "  Mean {}, stdev {}, min {}",
            format::latency_us(s.latency.mean_us),
            format::latency_us(s.latency.stdev_us),
            format::latency(s.latency.min_us)
        );
    }
    if s.load.model == "users" {
        let b = response_time_buckets(s);
        let _ = writeln!(out, "  Response times (Gatling):");
        for (label, count) in b.rows() {
            let _ = writeln!(out, "    {label:<22} {:>9} ({})", format::count(count), format::ratio(b.share(count)));
        }
    }
    if let Some(users) = users_line(s) {
        let _ = writeln!(out, "  Users: {users}");
    }
    if let Some(profile) = s.load.injection.as_ref().filter(|_| crate::lines::injects_users(s)) {
        let _ = writeln!(out, "  Injection: {profile}");
    }
    if s.load.target_rate.is_some() && s.service_time.count > 0 {
        let p =
            |key: &str| s.service_time.percentiles.get(key).map_or_else(|| "-".to_owned(), |us| format::latency(*us));
        let _ = writeln!(
            out,
            "  Service time (uncorrected): p50 {}, p99 {}, max {}; send lag p99 {}",
            p("p50"),
            p("p99"),
            format::latency(s.service_time.max_us),
            s.send_lag.percentiles.get("p99").map_or_else(|| "-".to_owned(), |us| format::latency(*us)),
        );
    }

    let _ = writeln!(
        out,
        "  {} requests in {}, {} read, {} written",
        format::count(s.requests.completed),
        format::seconds(s.duration),
        format::bytes(s.bytes.read),
        format::bytes(s.bytes.written)
    );
    // As wrk prints it (no thousands separator): scripts that read wrk's output read this line too.
    let _ = writeln!(out, "  Requests/sec: {:.2}", s.throughput);
    // A user load's plan is its injection profile (its mean arrival rate says nothing of an `at_once`).
    if let Some(target) = s.load.target_rate.filter(|_| !crate::lines::injects_users(s)) {
        let achieved = s.load.achieved_rate.unwrap_or(0.0);
        let share = if target > 0.0 { format!(" ({:.2}%)", 100.0 * achieved / target) } else { String::new() };
        let by =
            s.judged.limited_by.as_ref().map(|l| format!(", limited by the {}", l.cause.as_str())).unwrap_or_default();
        let _ =
            writeln!(out, "  Rate: target {}, achieved {}{share}{by}", format::rate(target), format::rate(achieved));
    }
    if s.requests.incomplete > 0 || s.requests.unsent > 0 {
        let _ = writeln!(
            out,
            "  Not completed: {} in flight at the end, {} never sent",
            format::count(s.requests.incomplete),
            format::count(s.requests.unsent)
        );
    }
    let _ = writeln!(out, "  Status: {}", status_line(s));
    let _ = writeln!(out, "  Errors: {}", errors_line(s));
    let _ = writeln!(out, "  Connections: {}", crate::lines::connections_line(s));
    if let Some(opening) = crate::lines::opening_line(s) {
        let _ = writeln!(out, "  Opened before the load: {opening}");
    }
    if let Some(connect) = connect_line(s) {
        let _ = writeln!(out, "  Connect time: {connect}");
    }
    if let Some(tls) = tls_line(s, true) {
        let _ = writeln!(out, "  TLS: {tls}");
    }
    if let Some(h2) = http2_line(s) {
        let _ = writeln!(out, "  HTTP/2: {h2}");
    }

    if let Some(checks) = crate::lines::checks_line(s) {
        let _ = writeln!(out, "  Checks: {checks}");
        for line in crate::lines::failing_check_lines(s) {
            let _ = writeln!(out, "    {line}");
        }
    }
    let replay = crate::lines::replay_lines(s);
    if !replay.is_empty() {
        let _ = writeln!(out, "  Replay:");
        for (what, line) in replay {
            let _ = writeln!(out, "    {what}: {line}");
        }
    }
    if let Some(c) = &s.capacity {
        let _ = writeln!(out, "  Capacity: {}", c.summary());
        let _ = writeln!(
            out,
            "  Measurements above: the last step at the capacity (or the first step, when no rate held)."
        );
        out.push_str(&aligned_table(&crate::lines::CAPACITY_HEADERS, &crate::lines::capacity_rows(c), "    "));
    }
    if let Some(p) = &s.power_plan {
        let _ = writeln!(out, "  Plan: {}", p.sentence);
    }
    if !s.judged.verdicts.is_empty() {
        let _ = writeln!(out, "  SLOs{}:", if s.gate { "" } else { " (not gated)" });
        for v in &s.judged.verdicts {
            let inconclusive =
                v.statistics.as_ref().is_some_and(|st| st.status == loadgate_results::StatisticalStatus::Inconclusive);
            let mark = if inconclusive {
                "INCONCLUSIVE"
            } else if !v.passed {
                "FAIL"
            } else if !s.gate || !v.evaluated() {
                "----"
            } else {
                "PASS"
            };
            let place = loadgate_results::frames::verdict_where(s, v).map(|w| format!("; {w}")).unwrap_or_default();
            let _ = writeln!(out, "    {mark}  {}{place}", v.explain());
            if let Some(st) = &v.statistics {
                let _ = writeln!(
                    out,
                    "          {}, {:.0}% interval{}{}{}",
                    st.method,
                    st.confidence * 100.0,
                    st.cv.map(|cv| format!(", CV {:.1}%", cv * 100.0)).unwrap_or_default(),
                    st.smallest_detectable
                        .map(|m| format!(", detects changes of {:.1}% or more", m * 100.0))
                        .unwrap_or_default(),
                    asked(st)
                );
            }
        }
    }
    if let Some(p) = &s.profile {
        let base = s.ab_baseline.as_deref().and_then(|b| b.profile.as_ref());
        match base {
            Some(b) => {
                let _ = writeln!(out, "  Profile A: {}", loadgate_results::frames::profile_line(b));
                let _ = writeln!(out, "  Profile B: {}", loadgate_results::frames::profile_line(p));
            }
            None => {
                let _ = writeln!(out, "  Profile: {}", loadgate_results::frames::profile_line(p));
            }
        }
        if let Some(w) = loadgate_results::frames::where_text(p, 3) {
            let _ = writeln!(out, "  {w}");
        }
    }
    if !s.validity.valid {
        let _ = writeln!(out, "  INVALID MEASUREMENT: the generator did not deliver what the plan asked");
        for p in &loadgate_results::each_kind_once(&s.validity.problems) {
            let _ = writeln!(out, "    {}: {}", p.kind, p.message);
        }
    }
    for w in &s.validity.warnings {
        let _ = writeln!(out, "  warning: {}: {}", w.kind, w.message);
    }
    if let Some(why) = &s.aborted {
        let _ = writeln!(out, "  stopped early: {why}");
    }
    out
}

/// A plain table with its columns aligned (text left in the first two and the last column, numbers right
/// elsewhere), each line indented.
fn aligned_table<const N: usize>(headers: &[&str; N], rows: &[[String; N]], indent: &str) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    let header: Vec<String> = headers.iter().map(|h| (*h).to_owned()).collect();
    for cells in std::iter::once(header.as_slice()).chain(rows.iter().map(|r| r.as_slice())) {
        let mut line = indent.to_owned();
        for (i, (cell, w)) in cells.iter().zip(&widths).enumerate() {
            if i > 0 {
                line.push_str("  ");
            }
            if i == 1 || i + 1 == N {
                let _ = write!(line, "{cell:<w$}");
            } else {
                let _ = write!(line, "{cell:>w$}");
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn latency_row(label: &str, cells: impl Iterator<Item = String>, max: String) -> String {
    let mut row = format!("{label:<10}");
    for cell in cells.chain(std::iter::once(max)) {
        let _ = write!(row, " {cell:>9}");
    }
    row
}

impl Tone {
    fn paint(self, text: &str, color: bool) -> String {
        let code = match self {
            Tone::Plain => return text.to_owned(),
            Tone::Good => "32",
            Tone::Bad => "1;31",
            Tone::Warn => "33",
            Tone::Dim => "2",
        };
        if color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }
}

pub(crate) fn outcome_tone(status: OutcomeStatus) -> Tone {
    match status {
        OutcomeStatus::Passed => Tone::Good,
        OutcomeStatus::SloFailed | OutcomeStatus::RunFailed => Tone::Bad,
        OutcomeStatus::InvalidMeasurement | OutcomeStatus::Incomplete | OutcomeStatus::Inconclusive => Tone::Warn,
    }
}

/// The final table of a run: a row per scenario instance (requests/s, p50, p99, max, errors, non-2xx, verdict;
/// the knee of a sweep marked `<- knee`), a line per sweep knee, then the outcome, its exit code and its
/// reasons. ANSI colour only when `color` is true.
pub fn summary_table(r: &RunResults, color: bool) -> String {
    let headers = ["scenario", "requests/s", "p50", "p99", "max", "errors", "non-2xx", "verdict"];
    let sweeps = crate::run_sweeps(r);
    let mut rows: Vec<(Vec<String>, Tone)> = Vec::new();
    for s in &r.scenarios {
        let (mut verdict, tone) = scenario_verdict(s);
        if let Some(k) = sweeps.iter().filter_map(|sw| sw.knee.as_ref()).find(|k| k.name == s.name) {
            let kind = match k.kind {
                KneeKind::Collapse => "collapse",
                KneeKind::Saturation => "saturation",
            };
            verdict.push_str(&format!("  <- knee ({kind})"));
        }
        let lat = |s: &ScenarioResult, key: &str| {
            s.latency.percentiles.get(key).map_or_else(|| "-".to_owned(), |us| format::latency(*us))
        };
        // An A/B instance: a row per side, each saying which it is; the verdict is the pair's, on B's row.
        let name = match &s.ab_baseline {
            Some(a) => {
                rows.push((
                    vec![
                        format!("{} (A baseline)", s.name),
                        format::number(a.throughput),
                        lat(a, "p50"),
                        lat(a, "p99"),
                        if a.latency.count > 0 { format::latency(a.latency.max_us) } else { "-".to_owned() },
                        format::count(a.errors.total()),
                        format::count(a.status.non_2xx()),
                        "-".to_owned(),
                    ],
                    Tone::Plain,
                ));
                format!("{} (B candidate)", s.name)
            }
            None => s.name.clone(),
        };
        let lat = |key: &str| lat(s, key);
        rows.push((
            vec![
                name,
                format::number(s.throughput),
                lat("p50"),
                lat("p99"),
                if s.latency.count > 0 { format::latency(s.latency.max_us) } else { "-".to_owned() },
                format::count(s.errors.total()),
                format::count(s.status.non_2xx()),
                verdict,
            ],
            tone,
        ));
    }
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for (cells, _) in &rows {
        for (w, c) in widths.iter_mut().zip(cells) {
            *w = (*w).max(c.chars().count());
        }
    }
    let last = headers.len() - 1;
    let mut out = String::new();
    let line = |cells: &[String], tone: Tone, out: &mut String| {
        let mut text = String::new();
        for (i, (cell, w)) in cells.iter().zip(&widths).enumerate() {
            if i > 0 {
                text.push_str("  ");
            }
            if i == 0 {
                let _ = write!(text, "{cell:<w$}");
            } else if i == last {
                text.push_str(&tone.paint(cell, color));
            } else {
                let _ = write!(text, "{cell:>w$}");
            }
        }
        out.push_str(text.trim_end());
        out.push('\n');
    };
    let header: Vec<String> = headers.iter().map(|h| (*h).to_owned()).collect();
    line(&header, Tone::Plain, &mut out);
    for (cells, tone) in &rows {
        line(cells, *tone, &mut out);
    }
    for s in r.scenarios.iter() {
        if let Some(c) = &s.capacity {
            let tone = if c.capacity.is_some() { Tone::Good } else { Tone::Bad };
            let _ = writeln!(out, "\nCapacity of {}: {}.", s.name, tone.paint(&c.summary(), color));
        }
    }
    for sweep in sweeps.iter() {
        if let Some(k) = &sweep.knee {
            let _ = writeln!(out, "\nKnee of sweep {}: {}.", sweep.scenario, Tone::Warn.paint(&k.explanation, color));
        }
        if !sweep.verdicts.is_empty() {
            let _ = writeln!(out, "\nSweep {} over {}:", sweep.scenario, sweep.over.as_deref().unwrap_or("its cells"));
            for v in &sweep.verdicts {
                let (mark, tone) = if !v.passed {
                    ("FAIL", Tone::Bad)
                } else if !v.evaluated() || v.note.as_deref().is_some_and(|n| n.starts_with("not gated")) {
                    ("----", Tone::Plain)
                } else {
                    ("PASS", Tone::Good)
                };
                let _ = writeln!(out, "  {}  {}", tone.paint(mark, color), v.explain());
            }
        }
    }
    let status = r.outcome.status;
    let _ = writeln!(
        out,
        "\n{} {} (exit {})",
        r.spec.name,
        outcome_tone(status).paint(status.label(), color),
        r.outcome.exit_code
    );
    for reason in &r.outcome.reasons {
        let _ = writeln!(out, "  - {reason}");
    }
    out
}

/// A duration of microseconds as wrk prints it (`format_time_us`): two decimals, `us` up to 850, then `ms`, `s`
/// from one second, `m` from 51 seconds.
fn wrk_time(us: u64) -> String {
    let us = us as f64;
    let (mut amount, mut unit, scale, next) =
        if us >= 1_000_000.0 { (us / 1e6, "s", 60.0, "m") } else { (us, "us", 1000.0, "ms") };
    if amount >= scale * 0.85 {
        amount /= scale;
        unit = next;
    }
    format!("{amount:.2}{unit}")
}

/// wrk's `print_units(n, format_time_us, 10)`: right-aligned so that the units line up.
fn wrk_units(us: u64) -> String {
    let text = wrk_time(us);
    let bytes = text.as_bytes();
    let mut pad = 2usize;
    if bytes.last().is_some_and(u8::is_ascii_alphabetic) {
        pad -= 1;
    }
    if bytes.len() >= 2 && bytes[bytes.len() - 2].is_ascii_alphabetic() {
        pad -= 1;
    }
    format!("{text:>width$}{}", &"  "[..pad], width = 10 - pad)
}

/// wrk's `--latency` block: the 50th, 75th, 90th and 99th percentiles of the latency.
///
/// ```text
///   Latency Distribution
///      50%  635.91us
///      75%  712.00us
///      90%    1.02ms
///      99%    2.31ms
/// ```
pub fn wrk_latency_distribution(s: &ScenarioResult) -> String {
    let mut out = String::from("  Latency Distribution\n");
    for p in [50.0, 75.0, 90.0, 99.0] {
        let v = loadgate_results::value_at_percentile(&s.histograms.latency, p);
        let _ = writeln!(out, "{p:>7.0}%{}", wrk_units(v));
    }
    out
}

/// wrk2's HdrHistogram output (`--latency`, `-U`) of one histogram: its distribution to the 100th percentile,
/// then the detailed percentile spectrum (the `.hgrm` format), closed by wrk2's dashed line.
fn wrk2_block(h: &hdrhistogram::Histogram<u64>, description: &str) -> String {
    let mut out = format!("  Latency Distribution (HdrHistogram - {description})\n");
    for p in [50.0, 75.0, 90.0, 99.0, 99.9, 99.99, 99.999, 100.0] {
        let v = loadgate_results::value_at_percentile(h, p);
        let _ = writeln!(out, "{p:>7.3}%{}", wrk_units(v));
    }
    out.push_str("\n  Detailed Percentile spectrum:\n");
    out.push_str(&loadgate_results::hgrm(h));
    out.push_str("----------------------------------------------------------\n");
    out
}

/// wrk2's `--latency` output: the recorded latency's distribution and detailed percentile spectrum. In an open
/// load the recorded latency counts from each request's intended send time (coordinated omission corrected).
pub fn wrk2_latency_spectrum(s: &ScenarioResult) -> String {
    wrk2_block(&s.histograms.latency, "Recorded Latency")
}

/// wrk2's `-U` output: the same for the uncorrected latency (the service time, from the actual send).
pub fn wrk2_uncorrected_spectrum(s: &ScenarioResult) -> String {
    wrk2_block(&s.histograms.service_time, "Uncorrected Latency (measured without taking delayed starts into account)")
}

/// The terminal's line for a verified scenario: `verified formats: 2 requests, every check held`, or its failure:
/// `verification of formats failed: GET /html returned 200 text/html, ...`.
pub fn verified_line(v: &loadgate_results::VerifiedScenario) -> String {
    match &v.message {
        None => format!(
            "verified {}: {} {}, every check held",
            v.name,
            format::count(v.sent),
            if v.sent == 1 { "request" } else { "requests" }
        ),
        Some(why) => format!("verification of {} failed: {why}", v.name),
    }
}

/// With `gating.detect`: `, could tell a change of 16.6% (asked: 10.0%)`: the change this run's interval could
/// tell, in the asked sense, beside the asked one.
pub(crate) fn asked(st: &loadgate_results::VerdictStatistics) -> String {
    match (st.detect, st.tellable) {
        (Some(d), Some(t)) => format!(", could tell a change of {:.1}% (asked: {:.1}%)", t * 100.0, d * 100.0),
        (Some(d), None) => format!(" (asked: {:.1}%)", d * 100.0),
        _ => String::new(),
    }
}

#[cfg(test)]
mod wrk_tests {
    use super::*;

    #[test]
    fn times_print_as_wrk_prints_them() {
        assert_eq!(wrk_time(635), "635.00us");
        assert_eq!(wrk_time(849), "849.00us");
        assert_eq!(wrk_time(850), "0.85ms");
        assert_eq!(wrk_time(1_320), "1.32ms");
        assert_eq!(wrk_time(1_500_000), "1.50s");
        assert_eq!(wrk_time(55_000_000), "0.92m");
        assert_eq!(wrk_units(635), "  635.00us");
        assert_eq!(wrk_units(1_320), "    1.32ms");
        assert_eq!(wrk_units(1_500_000), "    1.50s ");
    }
}
