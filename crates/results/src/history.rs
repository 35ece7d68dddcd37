//! A metric's series over the runs a history store keeps, with its change points: what `loadgate history show`
//! prints and plots, and what a run judged against its history (`history:` in the spec) carries in
//! `results.json` beside the verdicts, so every report can plot the series behind a verdict.
//!
//! Only the types live here (the results model is what reports read); the store, the series' assembly and the
//! change-point detection are in `loadgate-history`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One metric of one scenario instance over the runs of a branch, oldest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HistorySeries {
    /// The spec's name.
    pub spec: String,
    /// The scenario instance: `plaintext[connections=256]`.
    pub instance: String,
    /// As an SLO names it: `p99`, `throughput`.
    pub metric: String,
    /// `latency` (microseconds), `rate` (per second), `ratio` (fraction) or `count`.
    pub kind: String,
    /// Whether a higher value is better (throughput, capacity); lower is better for latencies and errors.
    pub higher_is_better: bool,
    /// The branch the series was read from; `None`: every branch.
    #[serde(default)]
    pub branch: Option<String>,
    /// The machine fingerprint the series was limited to; `None`: every machine.
    #[serde(default)]
    pub machine: Option<String>,
    /// The runs, oldest first.
    pub points: Vec<HistoryPoint>,
    /// The change points found in `points`, oldest first.
    #[serde(default)]
    pub change_points: Vec<HistoryChangePoint>,
}

/// One run of a series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HistoryPoint {
    /// The store's identity of the run.
    pub run_id: String,
    /// RFC 3339 UTC.
    pub started_at: String,
    /// The git commit, when known.
    #[serde(default)]
    pub commit: Option<String>,
    /// The run's label (`--label`), when given.
    #[serde(default)]
    pub label: Option<String>,
    /// The metric on the merged instance, in its unit.
    pub value: f64,
    /// Whether this point is the run being judged (the last point of a run's own series).
    #[serde(default)]
    pub current: bool,
}

/// A change point of a series: where the metric's level moved, significantly.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HistoryChangePoint {
    /// The first point of the new level (index into `points`).
    pub index: usize,
    /// That run's commit and start.
    #[serde(default)]
    pub commit: Option<String>,
    pub started_at: String,
    /// The mean of the segment before and after (between the neighbouring change points).
    pub mean_before: f64,
    pub mean_after: f64,
    /// `mean_after / mean_before - 1`.
    pub relative_change: f64,
    /// The two-sided t-test's p-value between the two segments.
    pub p_value: f64,
    /// Whether the change made the metric worse (in its direction): a regression, else an improvement.
    pub regression: bool,
}

impl HistoryPoint {
    /// What a reader calls the run: its label, else its short commit, else its date.
    pub fn name(&self) -> String {
        if let Some(l) = &self.label {
            return l.clone();
        }
        if let Some(c) = &self.commit {
            return c.chars().take(7).collect();
        }
        self.started_at.chars().take(10).collect()
    }
}

impl HistoryChangePoint {
    /// `p99 +6.1% at 1a2b3c4 (2026-11-20), p = 0.0001: regression`.
    pub fn describe(&self, metric: &str, points: &[HistoryPoint]) -> String {
        let at = points.get(self.index).map_or_else(|| format!("run {}", self.index + 1), HistoryPoint::name);
        format!(
            "{metric} {:+.1}% at {at} ({}), {}: {}",
            self.relative_change * 100.0,
            self.started_at.chars().take(10).collect::<String>(),
            p_clause(self.p_value),
            if self.regression { "regression" } else { "improvement" }
        )
    }
}

/// A p-value in a sentence: `p = 0.0004`, `p < 1e-12`.
pub fn p_clause(p: f64) -> String {
    if p < 1e-12 {
        "p < 1e-12".to_owned()
    } else {
        format!("p = {}", p_text(p))
    }
}

/// A p-value for people: `0.0004`, `< 1e-12`.
pub fn p_text(p: f64) -> String {
    if p < 1e-12 {
        "< 1e-12".to_owned()
    } else if p < 0.0001 {
        format!("{p:.1e}")
    } else {
        format!("{p:.4}")
    }
}
