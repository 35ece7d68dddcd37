//! loadgate's reports, as pure functions of a [`RunResults`]: no engine, no I/O. The caller decides where the
//! text goes (`junit.xml`, `report.md`, `$GITHUB_STEP_SUMMARY`, the terminal).
//!
//! - [`junit()`]`(results) -> Result<String, ReportError>`: JUnit XML written with `quick-junit`, a testsuite per
//!   spec and a testcase per (scenario instance, SLO); [`junit_many`] for several specs. The mapping of
//!   verdicts, invalid measurements and `gate: false` phases to testcases is in [`mod@junit`].
//! - [`markdown()`]`(results, template) -> Result<String, ReportError>`: GitHub-flavoured Markdown rendered by
//!   minijinja from [`DEFAULT_TEMPLATE`] or a user's template; what a template can use is in [`mod@markdown`].
//! - [`text_summary`]`(scenario) -> String`: a wrk-like summary of one scenario instance, printed as each
//!   phase ends and put in JUnit's `system-out`.
//! - [`summary_table`]`(results, color) -> String`: the final table of all instances and the outcome; ANSI
//!   colour only when `color` is true (the caller decides from `--color`, `NO_COLOR` and the TTY).
//! - sweeps name their knee ([`loadgate_results::knee()`]) in the Markdown (a line at the top, a sentence above
//!   the sweep table, the knee row in bold), under the summary table and in JUnit (`system-out` of the sweep's
//!   cells, a `sweep.<scenario>.knee` property); [`run_sweeps`] takes them from `results.sweeps` or derives them;
//! - capacity searches (`load: capacity`) show the capacity, why the search stopped and the curve of every step
//!   (rate, achieved, p50/p99, errors, verdict) in the text summary, under the summary table, in the Markdown (a
//!   line at the top and a section per search) and in `report.html`; JUnit carries the search's time and a
//!   `capacity.<instance>` property ([`capacity_step_line`] is the terminal's line per step);
//! - user injection (`load.model == "users"`) instances show users started, finished and active at peak, and
//!   Gatling's response-time buckets ([`loadgate_results::response_time_buckets`]) beside the percentiles, in
//!   the Markdown and the text summary;
//! - [`hgrm()`] (re-exported from `loadgate-results`): the wrk2 percentile spectrum of a histogram, and
//!   [`file_stem`] (from `loadgate-plot`) to name a file per scenario instance;
//! - [`compare_text`], [`compare_markdown`] and [`compare_html`] render `loadgate compare`'s `Comparison`
//!   (`loadgate_results::compare`): the runs, then per metric a row per instance with each run's value and each
//!   change (seed 003's table);
//! - [`history_text`], [`history_markdown`] and [`history_html`] render `loadgate history show`'s series with
//!   their change points and a trend plot each;
//! - [`where_time_went_html`]`(rows)`: a profile's "where the time went" table (frames by self and total, in %
//!   and CPU microseconds per request) as an HTML fragment for `report.html`;
//! - [`html()`]`(results, plots) -> Result<String, ReportError>`: the self-contained `report.html` (inline CSS,
//!   the SVGs inline, no script, nothing fetched), given the plots drawn by `loadgate-plot`; the Markdown links
//!   the same SVG files ([`plots::plot_links`]) and carries each instance's per-second timeline as a table
//!   ([`plots::timeline_tables`]).

mod annotations;
pub mod compare;
pub mod history;
pub mod html;
pub mod junit;
mod lines;
pub mod live;
pub mod markdown;
pub mod plots;
pub mod profile;
pub mod repro;
pub mod text;

pub use annotations::github_annotations;
pub use compare::{compare_files, compare_html, compare_markdown, compare_text, CompareView};
pub use history::{history_files, history_html, history_markdown, history_text};
pub use html::html;
pub use junit::{junit, junit_many};
pub use lines::capacity_step_line;
pub use live::{history_check_line, merged_line, opening_line, round_line, tick_line};
pub use loadgate_plot::{file_stem, Figure};
pub use loadgate_results::hgrm;
pub use markdown::{markdown, markdown_summary, View, DEFAULT_TEMPLATE};
pub use profile::{where_time_went_html, TimeRow};
pub use repro::repro_comparison;
pub use text::{
    summary_table, text_summary, verified_line, wrk2_latency_spectrum, wrk2_uncorrected_spectrum,
    wrk_latency_distribution,
};

use std::borrow::Cow;

use loadgate_results::{Machine, RunResults, Sweep};

/// The sweeps of a run and their knees: as stored in `results.json`, or derived when the file has none (written
/// before knees existed, or by a caller that did not call [`loadgate_results::sweeps`]).
pub fn run_sweeps(r: &RunResults) -> Cow<'_, [Sweep]> {
    if r.sweeps.is_empty() {
        Cow::Owned(loadgate_results::sweeps(r))
    } else {
        Cow::Borrowed(&r.sweeps)
    }
}

/// Why a report could not be produced.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The Markdown template does not parse or does not render.
    #[error("Markdown template: {0}")]
    Template(String),
    /// The JUnit XML could not be written.
    #[error("JUnit XML: {0}")]
    Junit(String),
    /// The HTML report could not be rendered.
    #[error("HTML report: {0}")]
    Html(String),
}

/// What an INCONCLUSIVE check counts as in a run's outcome (`gating.on_inconclusive`) when it is not its own
/// status (exit 5): a failure or a pass, with the words that say who decided it (`--on-inconclusive fail`, or
/// `gating.on_inconclusive: fail` when the spec did). `None` for the default.
pub(crate) fn inconclusive_counted_as(r: &RunResults) -> Option<(loadgate_results::OutcomeStatus, String)> {
    let word = r.gating.as_ref().map(|g| g.on_inconclusive.as_str())?;
    let status = match word {
        "fail" => loadgate_results::OutcomeStatus::SloFailed,
        "pass" => loadgate_results::OutcomeStatus::Passed,
        _ => return None,
    };
    // A spec's own setting is in its text; the flag is recorded beside it (a run from flags has no spec text).
    let by_flag = r.spec.source.as_ref().is_none_or(|s| s.on_inconclusive.is_some());
    let origin = if by_flag { format!("--on-inconclusive {word}") } else { format!("gating.on_inconclusive: {word}") };
    Some((status, origin))
}

/// One line describing the machine: `bench-01: AMD Ryzen 9 7950X 16-Core Processor, 32 CPUs, 64.00GiB, Linux 6.8.0`.
pub fn machine_summary(m: &Machine) -> String {
    let body = loadgate_results::compare::machine_line(m);
    match &m.hostname {
        Some(h) => format!("{h}: {body}"),
        None => body,
    }
}

/// The verdict headline of a run in one line: `tfb-plaintext: SLO failed (exit 1)`.
pub fn headline(r: &RunResults) -> String {
    format!("{}: {} (exit {})", r.spec.name, r.outcome.status.label(), r.outcome.exit_code)
}
