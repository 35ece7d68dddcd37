//! The spec's `history:` section: SLOs judged against the run's history in a store (`run --history STORE`),
//! not against one baseline file. A per-PR gate with a tolerance lets ten PRs of +4% through one by one; these
//! checks see the sum.
//!
//! - `drift`: the metric's level now (the mean of the series' latest segment, between change points) against its
//!   level at the reference (the mean of the segment that holds the reference run); fails when it got worse by
//!   more than the limit.
//! - `change_points`: the newest change point after the reference; fails when it made the metric worse by more
//!   than the limit. An improvement is reported as one, never as an alarm.
//!
//! Both read the series of this spec's instance and metric on `branch` (by default the run's own: the series it
//! is recorded in) and, by default, this machine, with
//! this run appended, and find change points as `detection` says (E-divisive means with a t-test, as Apache
//! Otava). Too short a series cannot tell: the check is INCONCLUSIVE, never a pass. Without a store the checks
//! are not evaluated, as a `baseline * k` SLO is without `--baseline`.

use serde::{Deserialize, Serialize};

use crate::Metric;

/// The `history:` section of a spec.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryGate {
    /// The branch whose series the checks read; `None` (the default): the branch the run itself is recorded on
    /// (its `--branch`, CI's variables or the checked-out branch), and for a run recorded on no branch (outside
    /// git and CI, without `--branch`) the runs recorded on no branch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// Where drift is measured from, and after which change points count.
    pub reference: HistoryReference,
    /// Only runs on a machine with this run's fingerprint (`machine: same`, the default), or any (`any`).
    pub same_machine: bool,
    /// `drift: { p99: 10% }`: fail when the metric's level got worse than at the reference by more than this.
    pub drift: Vec<HistoryLimit>,
    /// `change_points: { p99: 5% }`: fail when the newest change point after the reference made the metric
    /// worse by more than this.
    pub change_points: Vec<HistoryLimit>,
    /// How change points are found.
    pub detection: Detection,
}

/// A metric and how much worse it may get, as a fraction (0.10 for `10%`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryLimit {
    /// Serialized as the metric's name (`p99`), as an SLO writes it.
    #[serde(with = "metric_name")]
    pub metric: Metric,
    pub worse_by: f64,
}

/// A [`Metric`] as its name in the plan's JSON.
mod metric_name {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::Metric;

    pub fn serialize<S: Serializer>(m: &Metric, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&m.to_string())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Metric, D::Error> {
        let name = String::deserialize(d)?;
        name.parse().map_err(|()| serde::de::Error::custom(format!("unknown metric `{name}`")))
    }
}

/// Where a history check starts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HistoryReference {
    /// The first run of the series (`reference: first`).
    First,
    /// The first run of the last this many seconds (`reference: 30d`).
    Since { seconds: u64 },
    /// The newest run of this commit (a prefix of its hash: `reference: { commit: 1a2b3c4 }`).
    Commit { commit: String },
    /// The newest run recorded with this label (`reference: { label: v1.4.0 }`, from `--label`).
    Label { label: String },
}

impl HistoryReference {
    /// `the first run`, `the last 30d`, `commit 1a2b3c4`, `label v1.4.0`.
    pub fn describe(&self) -> String {
        match self {
            HistoryReference::First => "the first run".to_owned(),
            HistoryReference::Since { seconds } if *seconds % 86_400 == 0 => format!("the last {}d", seconds / 86_400),
            HistoryReference::Since { seconds } => format!("the last {}", crate::units::Duration::from_secs(*seconds)),
            HistoryReference::Commit { commit } => format!("commit {commit}"),
            HistoryReference::Label { label } => format!("label {label}"),
        }
    }
}

/// The change-point detector's settings (Apache Otava's names in brackets).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Detection {
    /// The significance a change point needs (`max_pvalue`; 0.001 by default).
    pub p_value: f64,
    /// The smallest relative change that counts (`min_magnitude`; 0 by default).
    pub min_magnitude: f64,
    /// The fewest runs a segment has: a change point needs this many runs on each side (3 by default), so a
    /// single spike is not a change and the newest runs are not judged alone.
    pub min_segment: u32,
    /// The sliding window of the first pass (`window`; 50 by default).
    pub window: u32,
}

impl Default for Detection {
    fn default() -> Self {
        Detection { p_value: 0.001, min_magnitude: 0.0, min_segment: 3, window: 50 }
    }
}

impl HistoryGate {
    /// Every check of the section: `(kind, limit)` with kind `drift` or `change_point`.
    pub fn checks(&self) -> impl Iterator<Item = (HistoryCheckKind, &HistoryLimit)> {
        self.drift
            .iter()
            .map(|l| (HistoryCheckKind::Drift, l))
            .chain(self.change_points.iter().map(|l| (HistoryCheckKind::ChangePoint, l)))
    }
}

/// The two kinds of history check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HistoryCheckKind {
    Drift,
    ChangePoint,
}

impl HistoryCheckKind {
    /// `drift` or `change_point`.
    pub fn name(self) -> &'static str {
        match self {
            HistoryCheckKind::Drift => "drift",
            HistoryCheckKind::ChangePoint => "change_point",
        }
    }
}
