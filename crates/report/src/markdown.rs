//! Markdown, rendered by minijinja from a template shipped in the binary ([`DEFAULT_TEMPLATE`]) or given by the
//! user (`--template`).
//!
//! A template sees:
//!
//! - `results`: the whole [`RunResults`] as in `results.json` (raw numbers, microseconds);
//! - `report`: the same run prepared for people ([`View`]): numbers formatted (`1.25ms`, `94,737/s`), a headline,
//!   a row per scenario instance, the SLO verdicts, one sweep per matrix scenario with its knee, each capacity
//!   search with the curve of its steps, the user
//!   injection instances with Gatling's response-time buckets, the plots (SVG files beside the report), each
//!   instance's per-second timeline, the warnings, the machine and the pinning;
//! - filters that make any text safe where it goes, so that a name, a matrix value or a description shows as
//!   written and never adds markup: `text` (alias `cell`) for Markdown text and GFM table cells (`&`, `<`, `>` as
//!   HTML entities; a backslash before `\`, `|`, `` ` ``, `*`, `~`, a `_` that could emphasize and the `(` of a
//!   `](`; lines joined), `html` inside a raw HTML block such as `<summary>` (entities only), and `code` /
//!   `code_cell` for a code span outside / inside a table (a fence longer than any run of backticks inside).

use loadgate_model::{Gating, GatingReader, OnInconclusive, Restart, RoundOrder};
use loadgate_results::{
    checks, format, response_time_buckets, KneeKind, OutcomeStatus, RunResults, ScenarioResult, Verdict,
};
use minijinja::{Environment, UndefinedBehavior, Value};
use serde::Serialize;

use crate::lines::{
    connect_line, errors_line, http2_line, load_line, scenario_verdict, spread_line, status_line, tls_line, users_line,
};
use crate::ReportError;

/// The built-in Markdown template.
pub const DEFAULT_TEMPLATE: &str = include_str!("../templates/report.md.j2");

/// Renders the Markdown report of a run with the built-in template, or with `template` (the text of a minijinja
/// template) when given.
pub fn markdown(results: &RunResults, template: Option<&str>) -> Result<String, ReportError> {
    render(results, template, true)
}

/// [`markdown`] for a page that has no files beside it (GitHub's job summary, `$GITHUB_STEP_SUMMARY`): without
/// the links to the SVG plots, which would point at nothing there.
pub fn markdown_summary(results: &RunResults, template: Option<&str>) -> Result<String, ReportError> {
    render(results, template, false)
}

fn render(results: &RunResults, template: Option<&str>, plots: bool) -> Result<String, ReportError> {
    let mut env = Environment::new();
    env.set_trim_blocks(true);
    env.set_lstrip_blocks(true);
    env.set_keep_trailing_newline(true);
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.add_filter("cell", |v: Value| escape_text(&v.to_string()));
    env.add_filter("text", |v: Value| escape_text(&v.to_string()));
    env.add_filter("html", |v: Value| escape_html(&v.to_string()));
    env.add_filter("code", |v: Value| code_span(&v.to_string(), false));
    env.add_filter("code_cell", |v: Value| code_span(&v.to_string(), true));
    let source = template.unwrap_or(DEFAULT_TEMPLATE);
    let error = |e| template_error(e, source);
    env.add_template("report.md", source).map_err(error)?;
    let tmpl = env.get_template("report.md").map_err(error)?;
    let mut view = View::new(results);
    if !plots {
        view.plots.clear();
    }
    let ctx = minijinja::context! {
        results => Value::from_serialize(results),
        report => Value::from_serialize(&view),
    };
    tmpl.render(ctx).map_err(error)
}

/// A template's error with the text it points at, and for an undefined value the names a template can read.
fn template_error(e: minijinja::Error, source: &str) -> ReportError {
    let mut message = e.to_string();
    if let Some(snippet) = e.range().and_then(|r| source.get(r)).filter(|s| !s.trim().is_empty()) {
        let snippet: String = snippet.chars().take(80).collect();
        message.push_str(&format!(": `{}`", snippet.trim()));
    }
    if let Some(detail) = e.display_debug_info().to_string().lines().find(|l| l.contains("-->")) {
        message = format!("{message} ({})", detail.trim());
    }
    if e.kind() == minijinja::ErrorKind::UndefinedError {
        message.push_str(
            "; a template reads `results` (results.json, as `loadgate schema --results` describes it) and `report` \
             (the built-in report's prepared rows)",
        );
    }
    ReportError::Template(message)
}

/// Makes text show as written in Markdown text or a GFM table cell: HTML's `&`, `<` and `>` as entities (no
/// tag, comment or entity of the text reaches the page: GitHub would drop a tag, and a comment would hide the
/// rest of the report), a backslash before what would start Markdown (`\`, a table's `|`, a code span's
/// `` ` ``, emphasis' `*` and a `_` that is not inside a word, strikethrough's `~`, the `(` that makes `](` a
/// link), line breaks as spaces.
fn escape_text(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let word = |i: Option<usize>| i.and_then(|i| chars.get(i)).is_some_and(|c| c.is_alphanumeric());
    for (i, &c) in chars.iter().enumerate() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\r' if chars.get(i + 1) == Some(&'\n') => {}
            '\r' | '\n' => out.push(' '),
            '_' if word(i.checked_sub(1)) && word(Some(i + 1)) => out.push(c),
            '\\' | '|' | '`' | '*' | '~' | '_' => {
                out.push('\\');
                out.push(c);
            }
            '(' if i > 0 && chars[i - 1] == ']' => out.push_str("\\("),
            _ => out.push(c),
        }
    }
    out
}

/// Makes text show as written inside a raw HTML block (`<details><summary>...</summary>`), where Markdown is
/// not read: `&`, `<`, `>`, `"` and `'` as entities, line breaks as spaces (a blank line would end the block).
fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\r' | '\n' => out.push(' '),
            _ => out.push(c),
        }
    }
    out
}

/// A code span that shows `text` as written: fenced with one backtick more than the longest run inside, padded
/// with a space when it starts or ends with a backtick or a space (CommonMark strips one from each side). In a
/// table (`in_table`) a `|` is escaped, which GFM undoes before it reads the span.
fn code_span(text: &str, in_table: bool) -> String {
    let text = text.replace("\r\n", " ").replace(['\r', '\n'], " ");
    if text.is_empty() {
        return String::new();
    }
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let pad = text.starts_with(['`', ' ']) || text.ends_with(['`', ' ']);
    let pad = if pad { " " } else { "" };
    let text = if in_table { text.replace('|', "\\|") } else { text };
    format!("{fence}{pad}{text}{pad}{fence}")
}

/// A run prepared for people: every number formatted, every table row ready.
#[derive(Debug, Serialize)]
pub struct View {
    /// The spec's name.
    pub name: String,
    /// The spec's description.
    pub description: Option<String>,
    /// `passed`, `slo_failed`, ...
    pub status: OutcomeStatus,
    /// `passed`, `SLO failed`, ...
    pub status_label: &'static str,
    /// ✅, ❌ or ⚠️.
    pub icon: &'static str,
    /// One sentence: what happened.
    pub headline: String,
    /// The exit code.
    pub exit_code: i32,
    /// Why the run failed or is invalid.
    pub reasons: Vec<String>,
    /// A row per scenario instance.
    pub scenarios: Vec<ScenarioRow>,
    /// The instances the run never reached (it stopped before them), with the reason.
    pub not_run: Vec<loadgate_results::NotRun>,
    /// A row per SLO verdict.
    pub slos: Vec<SloRow>,
    /// One entry per instance that ran more than once: the spread of its repetitions.
    pub spreads: Vec<SpreadView>,
    /// One entry per instance of an A/B run: the two sides side by side.
    pub comparisons: Vec<ComparisonView>,
    /// `5 repetitions per instance, 95% confidence (Holm), inconclusive exits 5`, for runs with repetitions.
    pub gating: Option<String>,
    /// One sweep per matrix scenario with more than one cell.
    pub sweeps: Vec<Sweep>,
    /// One sentence per sweep that has a knee: `Sweep plaintext: throughput collapsed at connections=32: ...`.
    pub knees: Vec<String>,
    /// One entry per capacity search (`load: capacity`): the capacity, why the search stopped, every step.
    pub capacities: Vec<CapacityView>,
    /// One entry per user injection instance (`load.model == "users"`).
    pub users: Vec<UsersView>,
    /// TLS handshakes and their times, per scenario instance of an HTTPS target.
    pub tls: Vec<TlsRow>,
    /// HTTP/2 figures, per scenario instance that spoke HTTP/2.
    pub http2: Vec<Http2Row>,
    /// One entry per instance that sent a mix of named requests.
    pub mixes: Vec<MixView>,
    /// One entry per instance whose requests had checks (`check:`): a row per check.
    pub checks: Vec<ChecksView>,
    /// One entry per replay instance: its fidelity, a row per measure.
    pub replays: Vec<ReplayView>,
    /// The plots written beside the report (SVG files), in order.
    pub plots: Vec<crate::plots::PlotLink>,
    /// Per scenario instance: its per-second timeline as a compact table.
    pub timelines: Vec<crate::plots::TimelineTable>,
    /// Everything a reader must see before trusting the numbers: Markdown with the names and messages as
    /// written (report.html shows these).
    pub warnings: Vec<String>,
    /// The same with every name and message escaped for Markdown (report.md shows these).
    pub warnings_markdown: Vec<String>,
    /// Per profiled instance: what its profile holds, where the time went, and in an A/B run what got slower,
    /// each line escaped for Markdown.
    pub profiles: Vec<ProfileView>,
    /// Per scenario instance: generator and target CPU, target memory.
    pub resources: Vec<ResourceRow>,
    /// The machine, as key/value rows.
    pub machine: Vec<(String, String)>,
    /// The pinning: `(what, requested, applied)`.
    pub pinning: Vec<(String, String, String)>,
    /// The CPU of each generator worker (`unpinned` when none).
    pub workers: String,
    /// The plan hash.
    pub plan_hash: String,
    /// The loadgate version.
    pub loadgate_version: String,
    /// The spec file.
    pub file: String,
    /// Start and end, RFC 3339.
    pub started_at: String,
    /// `None` when the run did not finish.
    pub finished_at: Option<String>,
    /// A run merged from shards: how many, the run id, each shard's start skew and which were late.
    pub shards: Option<String>,
}

/// A profiled instance in report.md: its lines (what the profile holds on each side, what got slower) and the
/// top frames by total time.
#[derive(Debug, Serialize)]
pub struct ProfileView {
    pub scenario: String,
    pub lines: Vec<String>,
    /// `(frame, total %, self %, total per request)`, the widest first.
    pub top: Vec<(String, String, String, String)>,
}

fn profile_view(s: &ScenarioResult) -> Option<ProfileView> {
    use loadgate_results::frames::{profile_line, where_text};
    let p = s.profile.as_ref()?;
    let mut lines = Vec::new();
    match s.ab_baseline.as_deref().and_then(|b| b.profile.as_ref()) {
        Some(b) => {
            lines.push(format!("A: {}", escape_text(&profile_line(b))));
            lines.push(format!("B: {}", escape_text(&profile_line(p))));
        }
        None => lines.push(escape_text(&profile_line(p))),
    }
    if let Some(w) = where_text(p, 5) {
        lines.push(format!("**{}**", escape_text(&w)));
    }
    let top = p
        .table
        .by_total
        .iter()
        .take(8)
        .map(|f| {
            (
                escape_text(&f.name),
                format!("{:.1}%", f.total_pct),
                format!("{:.1}%", f.self_pct),
                f.total_us_per_request.map_or_else(|| "-".to_owned(), |us| format!("{us:.1} us")),
            )
        })
        .collect();
    Some(ProfileView { scenario: escape_text(&s.name), lines, top })
}

/// One scenario instance in a table.
#[derive(Debug, Serialize)]
pub struct ScenarioRow {
    /// `plaintext[connections=256]`, with ` (B candidate)` in an A/B run.
    pub name: String,
    /// The instance's own name, which its figures are filed under.
    pub instance: String,
    /// `closed load, 256 connections, pipeline 16, 15.00s`.
    pub load: String,
    /// Whether it was gated.
    pub gate: bool,
    /// Completed requests.
    pub requests: String,
    /// Requests per second.
    pub throughput: String,
    /// Target rate, open loads.
    pub target_rate: Option<String>,
    /// Achieved rate, open loads, with who limited it when it fell short: `193/s (limited by the plan)`.
    pub achieved_rate: Option<String>,
    /// Latency percentiles.
    pub p50: String,
    /// p90.
    pub p90: String,
    /// p99.
    pub p99: String,
    /// p99.9.
    pub p999: String,
    /// max.
    pub max: String,
    /// Failed requests, total.
    pub errors: String,
    /// `timeout 3` or `none`.
    pub errors_by_kind: String,
    /// Connect time: `p50 41us, p99 180us, max 1.20ms`, or `-` when no connection was timed.
    pub connect: String,
    /// Non-2xx responses.
    pub non_2xx: String,
    /// `2xx 959,692, 5xx 12`.
    pub status: String,
    /// `PASS 3/3`, `FAIL 1/3`, `INVALID`, `not gated`, `ran`.
    pub verdict: String,
    /// User injection: `6,000 started, 6,000 finished, 118 active at peak`.
    pub users: Option<String>,
    /// HTTPS targets: `1,000 handshakes (950 resumed; TLSv1_3 1,000), p50 1.1ms, p99 2.3ms, max 4ms`, TLS errors
    /// and INSECURE when certificates were not checked.
    pub tls: Option<String>,
    /// HTTP/2 targets: connections, streams asked and granted, GOAWAYs, RST_STREAMs by code, requests resent.
    pub http2: Option<String>,
}

/// An HTTP/2 scenario instance's connections, streams, GOAWAYs and resets.
#[derive(Debug, Serialize)]
pub struct Http2Row {
    pub name: String,
    /// `64 connections, 100 streams asked, 64 granted (capped by the server); 2 GOAWAYs; ...`.
    pub http2: String,
}

/// An HTTPS scenario instance's TLS handshakes.
#[derive(Debug, Serialize)]
pub struct TlsRow {
    pub name: String,
    /// TLS handshake `p50 / p99 / max`.
    pub handshake: String,
    /// Handshakes, resumption, versions, TLS errors, INSECURE.
    pub tls: String,
}

/// A scenario instance's named requests, one row each.
#[derive(Debug, Serialize)]
pub struct MixView {
    pub name: String,
    pub rows: Vec<MixRow>,
}

#[derive(Debug, Serialize)]
pub struct MixRow {
    pub request: String,
    pub requests: String,
    pub throughput: String,
    pub p50: String,
    pub p90: String,
    pub p99: String,
    pub max: String,
    pub errors: String,
    pub non_2xx: String,
}

/// A replay instance's fidelity: a row per measure (schedule error, rate, requests, skips, statuses).
#[derive(Debug, Serialize)]
pub struct ReplayView {
    pub name: String,
    pub rows: Vec<(String, String)>,
}

/// A scenario instance's checks: how many evaluations held, and a row per check.
#[derive(Debug, Serialize)]
pub struct ChecksView {
    pub name: String,
    /// `99.75% of 40,000 evaluations held`.
    pub summary: String,
    pub rows: Vec<CheckRow>,
}

/// One check of one request.
#[derive(Debug, Serialize)]
pub struct CheckRow {
    pub request: String,
    pub check: String,
    pub expects: String,
    pub passed: String,
    pub failed: String,
    /// The first failing response in one line (`200 application/xml, Content-Type was "application/xml"; body
    /// starts <?xml …`); empty when the check never failed.
    pub first_failure: String,
    /// The first failing response's status, Content-Type, what the check saw and its body's start, as
    /// `(label, value)` rows (report.html shows them in a `<details>`); empty when the check never failed.
    pub example: Vec<(String, String)>,
}

/// What one scenario instance consumed.
#[derive(Debug, Serialize)]
pub struct ResourceRow {
    pub scenario: String,
    /// The busiest generator worker's CPU: `96%`.
    pub generator_cpu: String,
    pub target_cpu_mean: String,
    pub target_cpu_peak: String,
    pub target_rss_peak: String,
}

/// A capacity search: what it found and the curve of its steps.
#[derive(Debug, Serialize)]
pub struct CapacityView {
    /// The scenario instance.
    pub name: String,
    /// `3,000/s (3,050/s failed, 1.7% above, precision 2%, confirmed once); 11 steps in 11.20s, stopped: ...`.
    pub summary: String,
    /// Whether a rate held.
    pub found: bool,
    /// A row per step.
    pub rows: Vec<CapacityRow>,
}

/// One step of a capacity search.
#[derive(Debug, Serialize)]
pub struct CapacityRow {
    /// Step, stage, rate, achieved, p50, p99, errors, verdict (with why it failed).
    pub cells: [String; 8],
    /// Whether the step held (a step that did not stands out).
    pub held: bool,
}

/// A user injection instance: its users and Gatling's response-time distribution.
#[derive(Debug, Serialize)]
pub struct UsersView {
    /// The scenario instance.
    pub name: String,
    /// `6,000 started, 6,000 finished, 118 active at peak`.
    pub users: String,
    /// `p50 312.3ms, p95 998.4ms, p99 1.30s, max 2.87s`.
    pub percentiles: String,
    /// Gatling's buckets: `t < 800 ms`, `800 ms <= t < 1200 ms`, `t >= 1200 ms`, `failed`.
    pub buckets: Vec<BucketRow>,
}

/// One of Gatling's response-time buckets.
#[derive(Debug, Serialize)]
pub struct BucketRow {
    /// `t < 800 ms`.
    pub label: &'static str,
    /// `5,412`.
    pub count: String,
    /// `90.2%`.
    pub share: String,
}

/// One SLO verdict in a table.
#[derive(Debug, Serialize)]
pub struct SloRow {
    /// The scenario instance.
    pub scenario: String,
    /// `p99 < 100ms`.
    pub slo: String,
    /// `83.20ms`.
    pub observed: String,
    /// `< 100ms`.
    pub threshold: String,
    /// `pass`, `FAIL`, `not gated`, `not evaluated`.
    pub result: String,
    /// Why it was not gated or evaluated; for a check over repetitions, how it was judged.
    pub note: String,
    /// The check could not tell (its interval straddles the limit).
    pub inconclusive: bool,
}

/// The spread of one instance's repetitions, a row per metric.
#[derive(Debug, Serialize)]
pub struct SpreadView {
    pub name: String,
    pub repetitions: usize,
    pub rows: Vec<SpreadRow>,
}

/// One metric over repetitions: median, min-max, coefficient of variation.
#[derive(Debug, Serialize)]
pub struct SpreadRow {
    pub metric: String,
    pub median: String,
    pub min: String,
    pub max: String,
    /// `3.2%`, `-` below two repetitions.
    pub cv: String,
}

/// One instance of an A/B run: the baseline (A) and the candidate (B) side by side.
#[derive(Debug, Serialize)]
pub struct ComparisonView {
    pub name: String,
    pub rounds: usize,
    /// A row per metric: A's median, B's median, B / A.
    pub rows: Vec<(String, String, String, String)>,
}

/// A matrix scenario: a row per cell against its variables.
#[derive(Debug, Serialize)]
pub struct Sweep {
    /// The scenario key.
    pub scenario: String,
    /// The matrix variables.
    pub vars: Vec<String>,
    /// A row per cell.
    pub rows: Vec<SweepRow>,
    /// Why the knee is where it is: `throughput collapsed at connections=32: 821/s, down 39% ...`.
    pub knee: Option<String>,
}

/// One cell of a sweep.
#[derive(Debug, Serialize)]
pub struct SweepRow {
    /// The values of the matrix variables, in `vars` order.
    pub values: Vec<String>,
    /// Requests per second.
    pub throughput: String,
    /// p50.
    pub p50: String,
    /// p99.
    pub p99: String,
    /// Failed requests plus non-2xx responses.
    pub errors: String,
    /// The cell's verdict.
    pub verdict: String,
    /// `collapse` or `saturation` on the knee row.
    pub knee: Option<&'static str>,
}

fn percentile(s: &ScenarioResult, key: &str) -> String {
    s.latency.percentiles.get(key).map_or_else(|| "-".to_owned(), |us| format::latency(*us))
}

impl View {
    /// Prepares a run for people.
    pub fn new(r: &RunResults) -> View {
        let status = r.outcome.status;
        let (icon, headline) = headline(r);
        View {
            name: r.spec.name.clone(),
            description: r.spec.description.clone(),
            status,
            status_label: status.label(),
            icon,
            headline,
            exit_code: r.outcome.exit_code,
            reasons: r.outcome.reasons.clone(),
            scenarios: r.scenarios.iter().map(scenario_row).collect(),
            slos: slo_rows(r),
            spreads: r.scenarios.iter().filter(|s| s.repetitions.len() > 1).map(spread_view).collect(),
            comparisons: r
                .scenarios
                .iter()
                .filter_map(|s| s.ab_baseline.as_ref().map(|a| comparison_view(a, s)))
                .collect(),
            gating: gating_sentence(r),
            sweeps: sweeps(r),
            knees: crate::run_sweeps(r)
                .iter()
                .filter_map(|s| s.knee.as_ref().map(|k| format!("Sweep {}: {}", s.scenario, k.explanation)))
                .collect(),
            capacities: r.scenarios.iter().filter_map(capacity_view).collect(),
            users: r.scenarios.iter().filter(|s| s.load.model == "users").map(users_view).collect(),
            tls: r.scenarios.iter().filter_map(tls_row).collect(),
            http2: r
                .scenarios
                .iter()
                .filter_map(|s| Some(Http2Row { name: s.name.clone(), http2: http2_line(s)? }))
                .collect(),
            mixes: r.scenarios.iter().filter(|s| !s.by_request.is_empty()).map(mix_view).collect(),
            checks: r.scenarios.iter().filter(|s| !s.checks.is_empty()).map(checks_view).collect(),
            replays: r
                .scenarios
                .iter()
                .filter(|s| s.replay.is_some())
                .map(|s| ReplayView { name: s.name.clone(), rows: crate::lines::replay_lines(s) })
                .collect(),
            not_run: r.not_run.clone(),
            plots: crate::plots::plot_links(r),
            timelines: crate::plots::timeline_tables(r),
            warnings: warnings(r, false),
            warnings_markdown: warnings(r, true),
            profiles: r.scenarios.iter().filter_map(profile_view).collect(),
            resources: r.scenarios.iter().map(|s| resource_row(r, s)).collect(),
            machine: machine_rows(r),
            pinning: pinning_rows(r),
            workers: workers_text(r),
            plan_hash: r.spec.plan_hash.clone(),
            loadgate_version: r.loadgate_version.clone(),
            file: r.spec.file.clone(),
            started_at: r.started_at.clone(),
            finished_at: r.finished_at.clone(),
            shards: shards_line(r),
        }
    }
}

/// A scenario instance's row: its load, counts, rates, percentiles, errors and verdict.
fn scenario_row(s: &ScenarioResult) -> ScenarioRow {
    ScenarioRow {
        // An A/B instance's numbers are the candidate's; the A/B table has both sides.
        name: if s.ab_baseline.is_some() { format!("{} (B candidate)", s.name) } else { s.name.clone() },
        instance: s.name.clone(),
        load: load_line(s),
        gate: s.gate,
        requests: format::count(s.requests.completed),
        throughput: format::rate(s.throughput),
        // A user load's plan is its injection profile (in `load`), not a mean rate.
        target_rate: s.load.target_rate.filter(|_| !crate::lines::injects_users(s)).map(format::rate),
        achieved_rate: s.load.achieved_rate.filter(|_| !crate::lines::injects_users(s)).map(|a| {
            match &s.judged.limited_by {
                Some(l) => format!("{} (limited by the {})", format::rate(a), l.cause.as_str()),
                None => format::rate(a),
            }
        }),
        p50: percentile(s, "p50"),
        p90: percentile(s, "p90"),
        p99: percentile(s, "p99"),
        p999: percentile(s, "p99.9"),
        max: if s.latency.count > 0 { format::latency(s.latency.max_us) } else { "-".to_owned() },
        errors: format::count(s.errors.total()),
        errors_by_kind: errors_line(s),
        connect: match (connect_line(s), crate::lines::opening_line(s)) {
            (Some(c), Some(o)) => format!("{c}; opened {o}"),
            (c, _) => c.unwrap_or_else(|| "-".to_owned()),
        },
        non_2xx: format::count(s.status.non_2xx()),
        status: status_line(s),
        verdict: scenario_verdict(s).0,
        users: users_line(s),
        tls: tls_line(s, true),
        http2: http2_line(s),
    }
}

/// A row per SLO verdict: every instance's, then every sweep's.
fn slo_rows(r: &RunResults) -> Vec<SloRow> {
    let counted_as = crate::inconclusive_counted_as(r);
    let counted_as = &counted_as;
    r.scenarios
        .iter()
        .flat_map(|s| s.judged.verdicts.iter().map(move |v| instance_slo_row(s, v, counted_as.as_ref())))
        .chain(crate::run_sweeps(r).iter().flat_map(sweep_slo_rows))
        .collect()
}

/// The row of an instance's verdict `v`; `counted_as`: what the run counts an inconclusive verdict as, and why.
fn instance_slo_row(s: &ScenarioResult, v: &Verdict, counted_as: Option<&(OutcomeStatus, String)>) -> SloRow {
    let mut row = verdict_row(s, v, counted_as);
    // A failed verdict of an A/B instance whose profile named what got slower says where, first.
    if let Some(w) = loadgate_results::frames::verdict_where(s, v) {
        row.note = if row.note.is_empty() { w } else { format!("{w}; {}", row.note) };
    }
    row
}

fn verdict_row(s: &ScenarioResult, v: &Verdict, counted_as: Option<&(OutcomeStatus, String)>) -> SloRow {
    SloRow {
        scenario: s.name.clone(),
        slo: v.slo.clone(),
        observed: v.observed_text.clone(),
        threshold: v.threshold_text(),
        result: if let Some(st) = &v.statistics {
            match st.status {
                loadgate_results::StatisticalStatus::Pass => "pass".to_owned(),
                loadgate_results::StatisticalStatus::Fail => "FAIL".to_owned(),
                loadgate_results::StatisticalStatus::Inconclusive => {
                    let counted = match counted_as.filter(|_| s.gate) {
                        Some((OutcomeStatus::SloFailed, origin)) => format!(", counted as a failure by {origin}"),
                        Some((_, origin)) => format!(", counted as a pass by {origin}"),
                        None => String::new(),
                    };
                    format!("INCONCLUSIVE ({}){counted}", st.reason)
                }
            }
        } else if !v.passed {
            "FAIL".to_owned()
        } else if !s.gate {
            "not gated".to_owned()
        } else if !v.evaluated() {
            "not evaluated".to_owned()
        } else {
            "pass".to_owned()
        },
        inconclusive: v
            .statistics
            .as_ref()
            .is_some_and(|st| st.status == loadgate_results::StatisticalStatus::Inconclusive),
        note: match (&v.statistics, &v.note) {
            (Some(st), note) => {
                let mut text = format!(
                    "{}; {:.0}% interval{}",
                    st.method,
                    st.confidence * 100.0,
                    st.cv.map(|cv| format!("; CV {:.1}%", cv * 100.0)).unwrap_or_default()
                );
                if let Some(m) = st.smallest_detectable {
                    text.push_str(&format!("; detects changes of {:.1}%+", m * 100.0));
                }
                text.push_str(&crate::text::asked(st).replacen(", ", "; ", 1));
                if let Some(n) = note {
                    text = format!("{n}; {text}");
                }
                text
            }
            (None, note) => note.clone().unwrap_or_default(),
        },
    }
}

/// The rows of a sweep's verdicts (judged over its cells together).
fn sweep_slo_rows(sweep: &loadgate_results::Sweep) -> impl Iterator<Item = SloRow> + '_ {
    let over = sweep.over.clone().unwrap_or_default();
    let scenario = format!("sweep {} over {over}", sweep.scenario);
    sweep.verdicts.iter().map(move |v| SloRow {
        scenario: scenario.clone(),
        slo: v.slo.clone(),
        observed: v.observed_text.clone(),
        threshold: v.threshold_text(),
        result: if !v.passed {
            "FAIL".to_owned()
        } else if v.note.as_deref().is_some_and(|n| n.starts_with("not gated")) {
            "not gated".to_owned()
        } else if !v.evaluated() {
            "not evaluated".to_owned()
        } else {
            "pass".to_owned()
        },
        inconclusive: false,
        note: v.note.clone().unwrap_or_default(),
    })
}

/// A capacity search's view (`load: capacity`): the capacity, why it stopped, a row per step.
fn capacity_view(s: &ScenarioResult) -> Option<CapacityView> {
    let c = s.capacity.as_ref()?;
    Some(CapacityView {
        name: s.name.clone(),
        summary: c.summary(),
        found: c.capacity.is_some(),
        rows: crate::lines::capacity_rows(c)
            .into_iter()
            .zip(&c.steps)
            .map(|(cells, step)| CapacityRow { cells, held: step.verdict == loadgate_results::StepVerdict::Pass })
            .collect(),
    })
}

/// An HTTPS instance's handshakes and their times.
fn tls_row(s: &ScenarioResult) -> Option<TlsRow> {
    Some(TlsRow {
        name: s.name.clone(),
        handshake: spread_line(&s.tls.as_ref()?.handshake_time),
        tls: tls_line(s, false)?,
    })
}

/// A mix's view: a row per named request.
fn mix_view(s: &ScenarioResult) -> MixView {
    MixView {
        name: s.name.clone(),
        rows: s
            .by_request
            .iter()
            .map(|b| {
                let p =
                    |k: &str| b.latency.percentiles.get(k).map_or_else(|| "-".to_owned(), |us| format::latency(*us));
                MixRow {
                    request: b.name.clone(),
                    requests: format::count(b.requests.completed),
                    throughput: format::rate(b.throughput),
                    p50: p("p50"),
                    p90: p("p90"),
                    p99: p("p99"),
                    max: if b.latency.count > 0 { format::latency(b.latency.max_us) } else { "-".to_owned() },
                    errors: format::count(b.errors.total()),
                    non_2xx: format::count(b.status.non_2xx()),
                }
            })
            .collect(),
    }
}

/// An instance's checks: the share that held and a row per check.
fn checks_view(s: &ScenarioResult) -> ChecksView {
    ChecksView {
        name: s.name.clone(),
        summary: crate::lines::checks_line(s).unwrap_or_default(),
        rows: s
            .checks
            .iter()
            .map(|c| {
                let first = c.examples.first();
                CheckRow {
                    request: c.request.clone(),
                    check: c.check.clone(),
                    expects: c.expects.clone(),
                    passed: format::count(c.passed),
                    failed: format::count(c.failed),
                    first_failure: first.map(|e| checks::example_text(e, 60)).unwrap_or_default(),
                    example: first.map(example_rows).unwrap_or_default(),
                }
            })
            .collect(),
    }
}

/// A failing response as label/value rows: status, Content-Type, what the check saw, the body's start.
fn example_rows(e: &loadgate_results::CheckExample) -> Vec<(String, String)> {
    let mut rows =
        vec![("status".to_owned(), if e.status == 0 { "not sent".to_owned() } else { e.status.to_string() })];
    if !e.content_type.is_empty() {
        rows.push(("Content-Type".to_owned(), e.content_type.clone()));
    }
    if !e.observed.is_empty() {
        rows.push(("observed".to_owned(), e.observed.clone()));
    }
    if e.status != 0 {
        rows.push(("body".to_owned(), format::bytes(e.body_len)));
    }
    if !e.body_start.is_empty() {
        rows.push(("body starts".to_owned(), e.body_start.clone()));
    }
    rows
}

/// An instance's generator and target CPU and the target's memory.
fn resource_row(r: &RunResults, s: &ScenarioResult) -> ResourceRow {
    let p = loadgate_results::phase_resources(r, s);
    let pct = |f: Option<f64>| f.map(|f| format!("{:.0}%", f * 100.0)).unwrap_or_else(|| "-".to_owned());
    ResourceRow {
        scenario: s.name.clone(),
        generator_cpu: pct(p.generator_peak),
        target_cpu_mean: pct(p.target_cpu_mean),
        target_cpu_peak: pct(p.target_cpu_peak),
        target_rss_peak: p.target_rss_peak.map(format::bytes).unwrap_or_else(|| "-".to_owned()),
    }
}

/// The pinning of the generator and the target: `(what, requested, applied)`.
fn pinning_rows(r: &RunResults) -> Vec<(String, String, String)> {
    vec![
        (
            "generator".to_owned(),
            r.pinning.generator_requested.clone().unwrap_or_else(|| "any".to_owned()),
            r.pinning.generator_applied.clone().unwrap_or_else(|| "unpinned".to_owned()),
        ),
        (
            "target".to_owned(),
            r.pinning.target_requested.clone().unwrap_or_else(|| "any".to_owned()),
            r.pinning.target_applied.clone().unwrap_or_else(|| "unpinned".to_owned()),
        ),
    ]
}

/// The CPU of each generator worker: `worker 0: CPU 2, worker 1: unpinned`.
fn workers_text(r: &RunResults) -> String {
    if r.pinning.workers.is_empty() {
        return "none recorded".to_owned();
    }
    r.pinning
        .workers
        .iter()
        .enumerate()
        .map(|(i, cpu)| format!("worker {i}: {}", cpu.map_or_else(|| "unpinned".to_owned(), |c| format!("CPU {c}"))))
        .collect::<Vec<_>>()
        .join(", ")
}

/// How the run was gated, for runs with repetitions: `5 repetitions per gated instance, 95% confidence ...`
/// ([`Gating::sentence`], the plan's words for it).
fn gating_sentence(r: &RunResults) -> Option<String> {
    let g = r.gating.as_ref()?;
    let gating = Gating {
        repeat: g.repeat,
        max_repeat: g.max_repeat,
        confidence: g.confidence,
        on_inconclusive: match g.on_inconclusive.as_str() {
            "fail" => OnInconclusive::Fail,
            "pass" => OnInconclusive::Pass,
            _ => OnInconclusive::Inconclusive,
        },
        restart: if g.restart == "each_round" { Restart::EachRound } else { Restart::Never },
        order: match g.order.as_deref() {
            Some("shuffle") => RoundOrder::Shuffle,
            Some("duet") => RoundOrder::Duet,
            _ => RoundOrder::Abba,
        },
        rerun_invalid: g.rerun_invalid,
        detect: g.detect,
        budget: g.budget_seconds.map(|s| loadgate_model::units::Duration(std::time::Duration::from_secs_f64(s))),
        ..Gating::default()
    };
    let mut text = gating.sentence(&g.looks, g.candidate.as_deref(), GatingReader::Report);
    for s in &r.scenarios {
        if let Some(p) = &s.power_plan {
            text.push_str(&format!("; the plan for {}: {}", s.name, p.sentence));
        }
    }
    Some(text)
}

/// `n thing` or `n things`.
fn plural(n: usize, thing: &str) -> String {
    format!("{n} {thing}{}", if n == 1 { "" } else { "s" })
}

/// `was` or `were`.
fn were(n: usize) -> &'static str {
    if n == 1 {
        "was"
    } else {
        "were"
    }
}

/// The report's icon and its one-sentence headline, from the outcome and the gated SLOs (a gated instance's and
/// the sweeps' that gate). It never says more held than were evaluated, says when nothing was, and says what
/// `on_inconclusive` counted an INCONCLUSIVE check as.
fn headline(r: &RunResults) -> (&'static str, String) {
    let status = r.outcome.status;
    let icon = match status {
        OutcomeStatus::Passed => "✅",
        OutcomeStatus::SloFailed | OutcomeStatus::RunFailed => "❌",
        OutcomeStatus::InvalidMeasurement | OutcomeStatus::Incomplete => "⚠️",
        OutcomeStatus::Inconclusive => "❔",
    };
    let gated: Vec<&ScenarioResult> = r.scenarios.iter().filter(|s| s.gate).collect();
    let run_sweeps = crate::run_sweeps(r);
    let not_gated = |v: &&loadgate_results::Verdict| {
        v.note.as_deref().is_some_and(|n| n.starts_with(loadgate_results::verdict::NOTE_NOT_GATED))
    };
    let verdicts: Vec<&loadgate_results::Verdict> = gated
        .iter()
        .flat_map(|s| &s.judged.verdicts)
        .chain(run_sweeps.iter().flat_map(|s| s.verdicts.iter().filter(|v| !not_gated(v))))
        .collect();
    let is_inconclusive = |v: &&loadgate_results::Verdict| {
        v.statistics.as_ref().is_some_and(|st| st.status == loadgate_results::StatisticalStatus::Inconclusive)
    };
    let failed = verdicts.iter().filter(|v| !v.passed && !is_inconclusive(v)).count();
    let undecided = verdicts.iter().filter(|v| is_inconclusive(v)).count();
    let evaluated = verdicts.iter().filter(|v| v.evaluated()).count();
    let not_evaluated = verdicts.len() - evaluated;
    let invalid = gated.iter().filter(|s| !s.validity.valid).count();
    let counted_as = crate::inconclusive_counted_as(r);
    let instances = plural(r.scenarios.len(), "scenario instance");
    // `; 1 more was not evaluated (see its note)`.
    let unevaluated = match not_evaluated {
        0 => String::new(),
        n => format!("; {n} more {} not evaluated (see the notes)", were(n)),
    };
    let headline = match status {
        OutcomeStatus::Passed if evaluated == 0 && not_evaluated == 0 => {
            format!("No SLO was evaluated: the run has no gated SLO ({instances} ran).")
        }
        OutcomeStatus::Passed if evaluated == 0 => {
            let text = format!(
                "No SLO was evaluated: {} could not be (see the notes), so nothing was checked ({instances} ran).",
                if not_evaluated == 1 { "the 1 gated SLO".to_owned() } else { format!("all {not_evaluated} gated SLOs") }
            );
            return ("⚠️", text);
        }
        OutcomeStatus::Passed if undecided > 0 => format!(
            "{undecided} of {} {} INCONCLUSIVE, counted as passing by {}{}{unevaluated}.",
            plural(evaluated, "gated SLO"),
            were(undecided),
            counted_as.map_or("on_inconclusive".to_owned(), |(_, origin)| origin),
            match evaluated - undecided {
                0 => String::new(),
                held => format!("; the other {held} held"),
            }
        ),
        OutcomeStatus::Passed => format!(
            "{} held across {instances}{unevaluated}.",
            if evaluated == 1 { "The 1 gated SLO".to_owned() } else { format!("All {evaluated} gated SLOs") }
        ),
        OutcomeStatus::SloFailed => {
            let counted_fail = counted_as.filter(|(st, _)| *st == OutcomeStatus::SloFailed).map(|(_, origin)| origin);
            match (failed, undecided, counted_fail) {
                (_, 0, _) => format!("{failed} of {} failed.", plural(evaluated, "gated SLO")),
                (0, n, Some(origin)) => format!(
                    "{n} of {} {} INCONCLUSIVE, counted as {} by {origin}; none failed outright.",
                    plural(evaluated, "gated SLO"),
                    were(n),
                    if n == 1 { "a failure" } else { "failures" }
                ),
                (_, n, Some(origin)) => format!(
                    "{failed} of {} failed; {n} more {} INCONCLUSIVE, counted as {} by {origin}.",
                    plural(evaluated, "gated SLO"),
                    were(n),
                    if n == 1 { "a failure" } else { "failures" }
                ),
                (_, n, None) => {
                    format!("{failed} of {} failed. {n} more could not tell (INCONCLUSIVE).", plural(evaluated, "gated SLO"))
                }
            }
        }
        OutcomeStatus::InvalidMeasurement => format!(
            "{invalid} scenario instance{} invalid as a measurement: the generator did not deliver what the plan asked, so those numbers describe loadgate, not the target.{}",
            if invalid == 1 { " is" } else { "s are" },
            if failed > 0 { format!(" {failed} of {} failed as well.", plural(evaluated, "gated SLO")) } else { String::new() }
        ),
        OutcomeStatus::RunFailed => "The run could not be carried out.".to_owned(),
        OutcomeStatus::Incomplete if r.checkpoint.is_some() => format!(
            "The run is incomplete: this is a checkpoint, written {} into the run{}; it had not finished, and nothing was judged after it{}.",
            format::seconds(r.checkpoint.as_ref().map_or(0.0, |c| c.run_seconds)),
            r.checkpoint.as_ref().and_then(|c| c.in_progress.as_deref()).map_or_else(String::new, |p| format!(" while {p} was still running")),
            match r.not_run.len() {
                0 => String::new(),
                n => format!("; {} {} not run", plural(n, "scenario instance"), were(n)),
            }
        ),
        OutcomeStatus::Incomplete => format!(
            "The run is incomplete: it did not finish (interrupted), so the results cover only the phases that ran{}.",
            match r.not_run.len() {
                0 => String::new(),
                n => format!("; {} {} not run", plural(n, "scenario instance"), were(n)),
            }
        ),
        OutcomeStatus::Inconclusive => format!(
            "No gated SLO failed, but {undecided} of {evaluated} checks could not tell (INCONCLUSIVE): more repetitions, or a quieter machine, would decide."
        ),
    };
    (icon, headline)
}

/// `2 shards of run `abc` (merged exactly); start skew: shard 1 0.1 ms, shard 2 2012.0 ms (late)`.
fn shards_line(r: &RunResults) -> Option<String> {
    let first = r.shards.first()?;
    let skews: Vec<String> = r
        .shards
        .iter()
        .map(|s| {
            let skew = s.start_skew_ms.map_or_else(|| "no planned start".to_owned(), |ms| format!("{ms:.1} ms"));
            format!("shard {} {skew}{}", s.index, if s.late { " (late)" } else { "" })
        })
        .collect();
    Some(format!(
        "{} of {} shards of run {} merged (histograms added); start skew: {}",
        r.shards.len(),
        first.count,
        code_span(&first.run_id, false),
        skews.join(", ")
    ))
}

fn sweeps(r: &RunResults) -> Vec<Sweep> {
    crate::run_sweeps(r)
        .iter()
        .map(|sweep| {
            let cells = sweep.cells.iter().filter_map(|name| r.scenarios.iter().find(|s| &s.name == name));
            let rows = cells
                .enumerate()
                .map(|(i, c)| SweepRow {
                    values: sweep
                        .variables
                        .iter()
                        .map(|v| {
                            c.matrix.iter().find(|(k, _)| k == v).map_or_else(|| "-".to_owned(), |(_, val)| val.clone())
                        })
                        .collect(),
                    throughput: format::rate(c.throughput),
                    p50: percentile(c, "p50"),
                    p99: percentile(c, "p99"),
                    errors: format::count(c.errors.total() + c.status.non_2xx()),
                    verdict: scenario_verdict(c).0,
                    knee: sweep.knee.as_ref().filter(|k| k.index == i && k.name == c.name).map(|k| match k.kind {
                        KneeKind::Collapse => "collapse",
                        KneeKind::Saturation => "saturation",
                    }),
                })
                .collect();
            Sweep {
                scenario: sweep.scenario.clone(),
                vars: sweep.variables.clone(),
                rows,
                knee: sweep.knee.as_ref().map(|k| k.explanation.clone()),
            }
        })
        .collect()
}

fn users_view(s: &ScenarioResult) -> UsersView {
    let b = response_time_buckets(s);
    let percentiles = if s.latency.count == 0 {
        "no completed requests".to_owned()
    } else {
        format!(
            "p50 {}, p95 {}, p99 {}, max {}",
            percentile(s, "p50"),
            percentile(s, "p95"),
            percentile(s, "p99"),
            format::latency(s.latency.max_us)
        )
    };
    UsersView {
        name: s.name.clone(),
        users: users_line(s).unwrap_or_default(),
        percentiles,
        buckets: b
            .rows()
            .iter()
            .map(|(label, count)| BucketRow {
                label,
                count: format::count(*count),
                share: format::ratio(b.share(*count)),
            })
            .collect(),
    }
}

/// Everything a reader must see before trusting the numbers, as Markdown (instance names in bold, kinds as
/// code); with `markdown` every name and message is escaped for Markdown ([`escape_text`]), without it they are
/// as written (for report.html, which escapes them itself, and for templates that want the raw text).
fn warnings(r: &RunResults, markdown: bool) -> Vec<String> {
    let t = |text: &str| if markdown { escape_text(text) } else { text.to_owned() };
    let code = |text: &str| if markdown { code_span(text, false) } else { format!("`{text}`") };
    let mut out = Vec::new();
    if let Some(exit) = &r.target.exited {
        out.push(format!("The target exited {:.1}s into the run: {}.", exit.at_seconds, t(&exit.status)));
    }
    for s in &r.scenarios {
        let gated = if s.gate { "" } else { " (not gated)" };
        let name = t(&s.name);
        for p in &loadgate_results::each_kind_once(&s.validity.problems) {
            out.push(format!("**{name}**{gated} is invalid as a measurement: {} ({})", t(&p.message), code(&p.kind)));
        }
        for w in &s.validity.warnings {
            out.push(format!("**{name}**{gated}: {} ({})", t(&w.message), code(&w.kind)));
        }
        if let Some(why) = &s.aborted {
            out.push(format!("**{name}** was stopped early: {}", t(why)));
        }
    }
    out.extend(r.pinning.warnings.iter().map(|w| format!("Pinning: {}", t(w))));
    out
}

fn machine_rows(r: &RunResults) -> Vec<(String, String)> {
    let m = &r.machine;
    let topology = match (m.sockets, m.cores_per_socket, m.threads_per_core) {
        (Some(s), Some(c), Some(t)) => Some(format!("{s} socket(s) × {c} cores × {t} threads")),
        _ => None,
    };
    let rows = [
        ("host", m.hostname.clone()),
        ("CPU", m.cpu_model.clone()),
        ("topology", topology),
        ("logical CPUs", m.logical_cpus.map(|n| n.to_string())),
        ("online CPUs", m.online_cpus.clone()),
        ("governor", m.governor.clone()),
        ("memory", m.memory_bytes.map(format::bytes)),
        ("kernel", m.kernel.clone()),
        ("virtualization", m.virtualization.clone()),
        (
            "git commit",
            m.git_commit.clone().map(|c| if m.git_dirty == Some(true) { format!("{c} (dirty)") } else { c }),
        ),
    ];
    rows.into_iter().filter_map(|(k, v)| v.map(|v| (k.to_owned(), v))).collect()
}

/// A metric of a repetition: its name, how to read it, whether it is a latency.
type RepetitionMetric = (&'static str, fn(&loadgate_results::Repetition) -> Option<f64>, bool);

/// The metrics a spread or a comparison shows: throughput and the usual percentiles.
fn metrics() -> [RepetitionMetric; 4] {
    [
        ("requests/s", |r| Some(r.throughput), false),
        ("p50", |r| r.latency.percentiles.get("p50").map(|v| *v as f64), true),
        ("p99", |r| r.latency.percentiles.get("p99").map(|v| *v as f64), true),
        ("max", |r| Some(r.latency.max_us as f64), true),
    ]
}

fn show(value: f64, latency: bool) -> String {
    if latency {
        format::latency(value.round() as u64)
    } else {
        format::rate(value)
    }
}

fn spread_view(s: &ScenarioResult) -> SpreadView {
    let rows = metrics()
        .into_iter()
        .filter_map(|(metric, get, latency)| {
            let values: Vec<f64> = s.repetitions.iter().filter_map(get).collect();
            let sum = loadgate_results::stats::summary(&values).ok()?;
            Some(SpreadRow {
                metric: metric.to_owned(),
                median: show(sum.median, latency),
                min: show(sum.min, latency),
                max: show(sum.max, latency),
                cv: sum.cv.map_or_else(|| "-".to_owned(), |cv| format!("{:.1}%", cv * 100.0)),
            })
        })
        .collect();
    SpreadView { name: s.name.clone(), repetitions: s.repetitions.len(), rows }
}

fn comparison_view(a: &ScenarioResult, b: &ScenarioResult) -> ComparisonView {
    let rows = metrics()
        .into_iter()
        .filter_map(|(metric, get, latency)| {
            let av: Vec<f64> = a.repetitions.iter().filter_map(get).collect();
            let bv: Vec<f64> = b.repetitions.iter().filter_map(get).collect();
            let am = loadgate_results::stats::median(&av).ok()?;
            let bm = loadgate_results::stats::median(&bv).ok()?;
            let ratio = if am > 0.0 { format!("{:.3}x", bm / am) } else { "-".to_owned() };
            Some((metric.to_owned(), show(am, latency), show(bm, latency), ratio))
        })
        .collect();
    ComparisonView { name: b.name.clone(), rounds: b.repetitions.len(), rows }
}
