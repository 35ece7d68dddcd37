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
    /// The branch the series was read from; `None`: every branch (or, with `unbranched`, none).
    #[serde(default)]
    pub branch: Option<String>,
    /// The series is of the runs recorded on no branch (outside git and CI, without `--branch`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unbranched: bool,
    /// The machine fingerprint the series was limited to; `None`: every machine.
    #[serde(default)]
    pub machine: Option<String>,
    /// The A/B design of its runs when it changes what a side's numbers mean (`duet`); a series never mixes
    /// designs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub design: Option<String>,
    /// The runs, oldest first.
    pub points: Vec<HistoryPoint>,
    /// The change points found in `points`, oldest first.
    #[serde(default)]
    pub change_points: Vec<HistoryChangePoint>,
}

/// One run of a series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HistoryPoint {
    /// The store's identity of the run: results.json's `id`, or one derived for a file without.
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
    /// When the run was profiled: what the profile held and, in an A/B run, the frames it named as changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
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

impl HistorySeries {
    /// Which runs the series holds, for a sentence: ` on main`, ` on no branch`, ` on every branch`.
    pub fn on_branch(&self) -> String {
        match (&self.branch, self.unbranched) {
            (Some(b), _) => format!(" on {b}"),
            (None, true) => " on no branch".to_owned(),
            (None, false) => " on every branch".to_owned(),
        }
    }
}

impl HistoryPoint {
    /// What a reader calls the run, stable as runs are added or pruned: its start to the second, the end of its
    /// id ([`crate::identity::short`]), and its commit and label when known:
    /// `2026-11-28 18:37:56 (run 3f2a9c01, commit 1a2b3c4, nightly)`.
    pub fn name(&self) -> String {
        let mut inside = vec![format!("run {}", crate::identity::short(&self.run_id))];
        if let Some(c) = &self.commit {
            inside.push(format!("commit {}", c.chars().take(7).collect::<String>()));
        }
        if let Some(l) = &self.label {
            inside.push(l.clone());
        }
        format!("{} ({})", time_text(&self.started_at), inside.join(", "))
    }

    /// A name short enough for a plot's axis: the label, else the short commit, else the end of the id.
    pub fn short_name(&self) -> String {
        if let Some(l) = &self.label {
            return l.clone();
        }
        if let Some(c) = &self.commit {
            return c.chars().take(7).collect();
        }
        crate::identity::short(&self.run_id)
    }
}

/// An RFC 3339 time to the second, for people: `2026-11-28T18:37:56.123Z` is `2026-11-28 18:37:56`.
pub fn time_text(rfc3339: &str) -> String {
    rfc3339.chars().take(19).map(|c| if c == 'T' { ' ' } else { c }).collect()
}

impl HistoryChangePoint {
    /// `p99 +6.1% at 2026-11-28 18:37:56 (run 3f2a9c01, commit 1a2b3c4), p = 0.0001: regression`.
    pub fn describe(&self, metric: &str, points: &[HistoryPoint]) -> String {
        let at = points.get(self.index).map_or_else(
            || format!("{} (run {} of the series)", time_text(&self.started_at), self.index + 1),
            HistoryPoint::name,
        );
        format!(
            "{metric} {:+.1}% at {at}, {}: {}",
            self.relative_change * 100.0,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn point(commit: Option<&str>, label: Option<&str>) -> HistoryPoint {
        HistoryPoint {
            run_id: "0193a1b2-c3d4-7e5f-8a6b-1c2d3f2a9c01".into(),
            started_at: "2026-11-28T18:37:56.412Z".into(),
            commit: commit.map(Into::into),
            label: label.map(Into::into),
            value: 1.0,
            current: false,
            profile: None,
        }
    }

    #[test]
    fn a_run_is_named_by_its_second_its_id_and_its_commit_and_label() {
        assert_eq!(point(None, None).name(), "2026-11-28 18:37:56 (run 3f2a9c01)");
        assert_eq!(
            point(Some("1a2b3c4d5e6f"), Some("nightly")).name(),
            "2026-11-28 18:37:56 (run 3f2a9c01, commit 1a2b3c4, nightly)"
        );
        assert_eq!(point(None, Some("v1.4")).short_name(), "v1.4");
        assert_eq!(point(Some("1a2b3c4d5e6f"), None).short_name(), "1a2b3c4");
        assert_eq!(point(None, None).short_name(), "3f2a9c01");
    }

    #[test]
    fn a_change_point_names_its_run() {
        let c = HistoryChangePoint {
            index: 0,
            commit: None,
            started_at: "2026-11-28T18:37:56Z".into(),
            mean_before: 1.0,
            mean_after: 1.1,
            relative_change: 0.1,
            p_value: 0.0004,
            regression: true,
        };
        assert_eq!(
            c.describe("p99", &[point(None, None)]),
            "p99 +10.0% at 2026-11-28 18:37:56 (run 3f2a9c01), p = 0.0004: regression"
        );
    }
}
