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
//! - user injection (`load.model == "users"`) instances show users started, finished and active at peak, and
//!   Gatling's response-time buckets ([`loadgate_results::response_time_buckets`]) beside the percentiles, in
//!   the Markdown and the text summary;
//! - [`hgrm()`] (re-exported from `loadgate-results`): the wrk2 percentile spectrum of a histogram, and
//!   [`file_stem`] to name a file per scenario instance.

mod annotations;
pub mod junit;
mod lines;
pub mod markdown;
pub mod text;

pub use annotations::github_annotations;
pub use junit::{junit, junit_many};
pub use loadgate_results::hgrm;
pub use markdown::{markdown, View, DEFAULT_TEMPLATE};
pub use text::{
    summary_table, text_summary, wrk2_latency_spectrum, wrk2_uncorrected_spectrum, wrk_latency_distribution,
};

use std::borrow::Cow;

use loadgate_results::{format, Machine, RunResults, Sweep};

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
}

/// One line describing the machine: `bench-01: AMD Ryzen 9 7950X 16-Core Processor, 32 CPUs, 64.00GiB, Linux 6.8.0`.
pub fn machine_summary(m: &Machine) -> String {
    let mut parts = Vec::new();
    if let Some(cpu) = &m.cpu_model {
        parts.push(cpu.clone());
    }
    if let Some(n) = m.logical_cpus {
        parts.push(format!("{n} CPUs"));
    }
    if let Some(bytes) = m.memory_bytes {
        parts.push(format::bytes(bytes));
    }
    if let Some(k) = &m.kernel {
        parts.push(format!("Linux {k}"));
    }
    if let Some(v) = &m.virtualization {
        parts.push(v.clone());
    }
    let body = if parts.is_empty() { "unknown machine".to_owned() } else { parts.join(", ") };
    match &m.hostname {
        Some(h) => format!("{h}: {body}"),
        None => body,
    }
}

/// A file name for a scenario instance, safe on every file system: `plaintext[connections=256]` becomes
/// `plaintext-connections-256` (for `latency-<stem>.hgrm` and the like). Distinct instance names of one spec stay
/// distinct unless they differ only in punctuation.
pub fn file_stem(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        if c.is_ascii_alphanumeric() || c == '_' || c == '.' {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let trimmed = out.trim_matches(['-', '.']);
    if trimmed.is_empty() {
        "scenario".to_owned()
    } else if trimmed.len() > MAX_STEM_BYTES {
        // A long matrix cell: keep a readable prefix and tell instances apart by a hash of the whole name, so
        // `latency-<stem>.hgrm` stays under the 255 bytes a file name may have.
        let cut = &trimmed[..MAX_STEM_BYTES - 17];
        format!("{}-{:016x}", cut.trim_end_matches(['-', '.']), fnv1a(name))
    } else {
        trimmed.to_owned()
    }
}

/// The longest stem [`file_stem`] returns, in bytes (ASCII): room for a prefix and a suffix such as `.hgrm`,
/// `latency-` or `-spectrum.svg` within the 255 bytes of a file name.
pub const MAX_STEM_BYTES: usize = 160;

/// FNV-1a, 64 bits: a stable hash (the same in every build and on every machine) for names in file names.
fn fnv1a(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// The verdict headline of a run in one line: `tfb-plaintext: SLO failed (exit 1)`.
pub fn headline(r: &RunResults) -> String {
    format!("{}: {} (exit {})", r.spec.name, r.outcome.status.label(), r.outcome.exit_code)
}
