//! The spec's `history:` checks, judged: the drift of a metric's level since a reference, and the newest change
//! point after it, on the series of each gated instance with this run appended (rules in
//! [`loadgate_model::history`]). Pure: the caller reads the store and writes the verdicts.
//!
//! - The level of a stretch of runs is the mean of its segment: the runs between two change points. A drift is
//!   the latest segment's mean against the mean of the segment that holds the reference run, so run-to-run noise
//!   does not fail a drift check, and the creep of many small steps does once the steps add up to a change point.
//! - A series of fewer than `2 * min_segment` runs cannot have a change point: the check is INCONCLUSIVE ("not
//!   enough history"), never a pass; so is a reference that is not in the series, and a run that did not
//!   measure the metric.
//! - The newest `min_segment - 1` runs cannot begin a segment of their own: a regression this run brought is
//!   the per-PR gate's to catch (A/B, `baseline * 1.05`); the history's is the sum of many.

use std::str::FromStr;

use loadgate_model::{HistoryCheckKind, HistoryGate, HistoryLimit, HistoryReference, Metric};
use loadgate_results::history::{HistoryPoint, HistorySeries};
use loadgate_results::model::{StatisticalStatus, Verdict, VerdictStatistics};

use crate::record::RunRecord;
use crate::series::{self, Selection};
use crate::store::{time_key, time_key_before};

/// One history check of one instance, judged, with the series behind it.
#[derive(Debug, Clone, PartialEq)]
pub struct Judged {
    /// The scenario instance the verdict belongs to.
    pub instance: String,
    pub verdict: Verdict,
    /// The series the verdict read (this run last), with its change points.
    pub series: HistorySeries,
    /// Whether the verdict is INCONCLUSIVE for want of runs (fewer than a change point needs).
    pub too_short: bool,
}

/// The branch whose series a run's checks read: the spec's `history.branch` when it names one, else the branch
/// the run itself is recorded on; `None`: the runs recorded on no branch (outside git and CI, without `--branch`).
pub fn series_branch(gate: &HistoryGate, current: &RunRecord) -> Option<String> {
    gate.branch.clone().or_else(|| current.branch.clone())
}

/// A branch as the notes name it: `main`, or `no branch`.
pub fn branch_words(branch: Option<&str>) -> String {
    branch.map_or_else(|| "no branch".to_owned(), |b| format!("`{b}`"))
}

/// Judges every check of `gate` on every gated instance of `current`, against `past` (this spec's runs on the
/// series' branch ([`series_branch`]) and machine, oldest first; `current` itself is left out if it is there).
pub fn judge(gate: &HistoryGate, past: &[RunRecord], current: &RunRecord) -> Vec<Judged> {
    // Only runs of the current one's design: a duet's sides are measured beside each other's load.
    let mut records: Vec<RunRecord> =
        past.iter().filter(|r| r.run_id != current.run_id && r.design == current.design).cloned().collect();
    records.push(current.clone());
    let options = series::options(&gate.detection);
    let branch = series_branch(gate, current);
    let mut out = Vec::new();
    for instance in current.instances.iter().filter(|i| i.gate) {
        for (kind, limit) in gate.checks() {
            let metric = limit.metric.to_string();
            let selection = Selection {
                spec: Some(current.spec.clone()),
                instances: vec![instance.name.clone()],
                metrics: vec![metric.clone()],
                gated_only: false,
                branch: branch.clone(),
                unbranched: branch.is_none(),
                machine: gate.same_machine.then(|| current.machine.clone()),
            };
            let mut found = series::series(&records, &selection);
            let mut series = match found.pop() {
                Some(s) => s,
                None => empty_series(current, &instance.name, limit.metric, &selection),
            };
            if let Some(last) = series.points.last_mut() {
                last.current = last.run_id == current.run_id;
            }
            let too_short = series.points.len() < 2 * gate.detection.min_segment as usize;
            let verdict = match series::analyse(&mut series, &options) {
                Err(e) => inconclusive(gate, kind, limit, format!("the series cannot be analysed: {e}"), &series),
                Ok(()) => check(gate, kind, limit, &series),
            };
            let too_short = too_short && !verdict.passed && verdict.statistics.is_some();
            out.push(Judged { instance: instance.name.clone(), verdict, series, too_short });
        }
    }
    out
}

/// The checks of `gate` on every gated instance of `current` when there is no store to judge them against:
/// not evaluated, as an SLO relative to a baseline is without `--baseline` (they pass, and their note says why).
pub fn unjudged(gate: &HistoryGate, current: &RunRecord, reason: &str) -> Vec<Judged> {
    let mut out = Vec::new();
    for instance in current.instances.iter().filter(|i| i.gate) {
        for (kind, limit) in gate.checks() {
            let selection = Selection { branch: gate.branch.clone(), ..Selection::default() };
            let series = empty_series(current, &instance.name, limit.metric, &selection);
            let mut verdict = verdict(gate, kind, limit);
            verdict.passed = true;
            verdict.note = Some(format!("not evaluated: {reason}"));
            out.push(Judged { instance: instance.name.clone(), verdict, series, too_short: false });
        }
    }
    out
}

fn empty_series(current: &RunRecord, instance: &str, metric: Metric, selection: &Selection) -> HistorySeries {
    HistorySeries {
        spec: current.spec.clone(),
        instance: instance.to_owned(),
        metric: metric.to_string(),
        kind: loadgate_results::compare::kind_name(metric.kind()).to_owned(),
        higher_is_better: loadgate_results::compare::higher_is_better(metric),
        branch: selection.branch.clone(),
        unbranched: selection.unbranched,
        machine: selection.machine.clone(),
        design: current.design.clone(),
        points: Vec::new(),
        change_points: Vec::new(),
    }
}

/// Adds to every check that lacked runs how many runs of the spec sit on no branch, and how to put them on one:
/// a run recorded on a branch does not read them (`unbranched`: their count, from the store).
pub fn note_unbranched(judged: &mut [Judged], unbranched: usize) {
    if unbranched == 0 {
        return;
    }
    for j in judged.iter_mut().filter(|j| j.too_short && j.series.branch.is_some()) {
        let hint = format!(
            "; {unbranched} run{} of `{}` sit{} on no branch (recorded outside git and CI without --branch): give \
             `--branch {}` (or LOADGATE_BRANCH) to the runs that belong to it",
            if unbranched == 1 { "" } else { "s" },
            j.series.spec,
            if unbranched == 1 { "s" } else { "" },
            j.series.branch.as_deref().unwrap_or("main")
        );
        if let Some(n) = &mut j.verdict.note {
            n.push_str(&hint);
        }
        if let Some(s) = &mut j.verdict.statistics {
            s.reason.push_str(&hint);
        }
    }
}

/// The SLO as the reports show it: `drift(p99) <= 10% since the last 30d` (and `on main` when the spec names the
/// branch; else the series is the run's own branch's, which the note names).
fn slo_text(gate: &HistoryGate, kind: HistoryCheckKind, limit: &HistoryLimit) -> String {
    format!(
        "{}({}) <= {} since {}{}",
        kind.name(),
        limit.metric,
        percent(limit.worse_by),
        gate.reference.describe(),
        gate.branch.as_ref().map_or_else(String::new, |b| format!(" on {b}"))
    )
}

fn percent(fraction: f64) -> String {
    let p = fraction * 100.0;
    if (p - p.round()).abs() < 1e-9 {
        format!("{}%", p.round())
    } else {
        format!("{p:.1}%")
    }
}

fn verdict(gate: &HistoryGate, kind: HistoryCheckKind, limit: &HistoryLimit) -> Verdict {
    Verdict {
        slo: slo_text(gate, kind, limit),
        metric: format!("{}({})", kind.name(), limit.metric),
        comparison: "<=".to_owned(),
        threshold: percent(limit.worse_by),
        threshold_value: limit.worse_by,
        observed: None,
        observed_text: "n/a".to_owned(),
        passed: false,
        note: None,
        statistics: None,
    }
}

/// A check the history cannot decide: INCONCLUSIVE (exit 5 unless `on_inconclusive` says otherwise).
fn inconclusive(
    gate: &HistoryGate,
    kind: HistoryCheckKind,
    limit: &HistoryLimit,
    reason: String,
    series: &HistorySeries,
) -> Verdict {
    let mut v = verdict(gate, kind, limit);
    v.note = Some(reason.clone());
    v.statistics = Some(VerdictStatistics {
        status: StatisticalStatus::Inconclusive,
        reason,
        method: "history: E-divisive means with a t-test over the runs".to_owned(),
        estimate: 0.0,
        lower: 0.0,
        upper: 0.0,
        limit: limit.worse_by,
        confidence: 1.0 - gate.detection.p_value,
        repetitions: u32::try_from(series.points.len()).unwrap_or(u32::MAX),
        cv: None,
        baseline_cv: None,
        smallest_detectable: None,
        family_size: 1,
        detect: None,
        tellable: None,
        cause: None,
    });
    v
}

/// The index of the reference run in the series, or why there is none.
fn reference(gate: &HistoryGate, series: &HistorySeries) -> Result<usize, String> {
    let points = &series.points;
    let before_current = points.len().saturating_sub(1);
    let found = match &gate.reference {
        HistoryReference::First => (!points.is_empty()).then_some(0),
        HistoryReference::Since { seconds } => {
            let cutoff = points.last().and_then(|p| time_key_before(&p.started_at, *seconds));
            cutoff.and_then(|cut| points.iter().position(|p| time_key(&p.started_at).is_some_and(|k| k >= cut)))
        }
        HistoryReference::Commit { commit } => {
            let c = commit.to_ascii_lowercase();
            points[..before_current]
                .iter()
                .rposition(|p| p.commit.as_deref().is_some_and(|pc| pc.to_ascii_lowercase().starts_with(&c)))
        }
        HistoryReference::Label { label } => {
            points[..before_current].iter().rposition(|p| p.label.as_deref() == Some(label.as_str()))
        }
    };
    found.ok_or_else(|| {
        format!(
            "no run of {} in the history of `{}` on {}",
            gate.reference.describe(),
            series.instance,
            branch_words(series.branch.as_deref())
        )
    })
}

/// The mean of the segment (between change points) that holds point `i`.
fn segment_mean(series: &HistorySeries, i: usize) -> f64 {
    let start = series.change_points.iter().map(|c| c.index).filter(|&c| c <= i).max().unwrap_or(0);
    let end = series.change_points.iter().map(|c| c.index).filter(|&c| c > i).min().unwrap_or(series.points.len());
    let values: Vec<f64> = series.points[start..end].iter().map(|p| p.value).collect();
    values.iter().sum::<f64>() / values.len().max(1) as f64
}

/// How much worse `now` is than `then`, as a fraction in the metric's direction (negative: better).
fn worse_by(series: &HistorySeries, then: f64, now: f64) -> f64 {
    if then == 0.0 {
        return if now == then {
            0.0
        } else if (now > then) == series.higher_is_better {
            -1.0
        } else {
            f64::INFINITY
        };
    }
    let change = now / then - 1.0;
    if series.higher_is_better {
        -change
    } else {
        change
    }
}

fn format_value(series: &HistorySeries, v: f64) -> String {
    Metric::from_str(&series.metric)
        .map(|m| loadgate_results::verdict::format_value(m.kind(), v))
        .unwrap_or_else(|()| loadgate_results::format::number(v))
}

fn worse_text(w: f64) -> String {
    if w > 0.0 {
        format!("{:.1}% worse", w * 100.0)
    } else if w < 0.0 {
        format!("{:.1}% better", -w * 100.0)
    } else {
        "0.0%".to_owned()
    }
}

fn point_name(points: &[HistoryPoint], i: usize) -> String {
    points.get(i).map_or_else(|| format!("run {}", i + 1), HistoryPoint::name)
}

fn check(gate: &HistoryGate, kind: HistoryCheckKind, limit: &HistoryLimit, series: &HistorySeries) -> Verdict {
    let n = series.points.len();
    if !series.points.last().is_some_and(|p| p.current) {
        return inconclusive(gate, kind, limit, format!("this run did not measure {}", limit.metric), series);
    }
    let needed = 2 * gate.detection.min_segment as usize;
    if n < needed {
        return inconclusive(
            gate,
            kind,
            limit,
            format!(
                "not enough history: {n} run{} of `{}` on {}{}, a change point needs {needed} (min_segment {} on each side)",
                if n == 1 { "" } else { "s" },
                series.instance,
                branch_words(series.branch.as_deref()),
                if series.branch.is_none() { " (runs recorded outside git and CI without --branch)" } else { "" },
                gate.detection.min_segment
            ),
            series,
        );
    }
    let reference = match reference(gate, series) {
        Ok(i) => i,
        Err(reason) => return inconclusive(gate, kind, limit, reason, series),
    };
    let mut v = verdict(gate, kind, limit);
    let last = n - 1;
    let since = series.change_points.iter().filter(|c| c.index > reference).collect::<Vec<_>>();
    match kind {
        HistoryCheckKind::Drift => {
            let (then, now) = (segment_mean(series, reference), segment_mean(series, last));
            let w = if since.is_empty() { 0.0 } else { worse_by(series, then, now) };
            v.observed = Some(w);
            v.observed_text = worse_text(w);
            v.passed = w <= limit.worse_by;
            v.note = Some(if since.is_empty() {
                format!(
                    "no change point in the {} run{} since {} ({}): the level holds at {}",
                    n - reference,
                    if n - reference == 1 { "" } else { "s" },
                    point_name(&series.points, reference),
                    gate.reference.describe(),
                    format_value(series, now)
                )
            } else {
                let points: Vec<String> = since.iter().map(|c| c.describe(&series.metric, &series.points)).collect();
                format!(
                    "level {} at {} -> {} now; change points: {}",
                    format_value(series, then),
                    point_name(&series.points, reference),
                    format_value(series, now),
                    points.join("; ")
                )
            });
        }
        HistoryCheckKind::ChangePoint => match since.last() {
            None => {
                v.observed = Some(0.0);
                v.observed_text = "no change point".to_owned();
                v.passed = true;
                v.note = Some(format!(
                    "no change point in the {} runs since {}",
                    n - reference,
                    point_name(&series.points, reference)
                ));
            }
            Some(c) => {
                let w = worse_by(series, c.mean_before, c.mean_after);
                v.observed = Some(w);
                v.observed_text = worse_text(w);
                v.passed = w <= limit.worse_by;
                v.note = Some(format!(
                    "newest change point: {}; level {} -> {}",
                    c.describe(&series.metric, &series.points),
                    format_value(series, c.mean_before),
                    format_value(series, c.mean_after)
                ));
            }
        },
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::series::tests::record;
    use loadgate_model::Detection;

    fn gate(drift: f64, change: f64) -> HistoryGate {
        HistoryGate {
            branch: Some("main".to_owned()),
            reference: HistoryReference::First,
            same_machine: true,
            drift: vec![HistoryLimit { metric: Metric::Percentile(99.0), worse_by: drift }],
            change_points: vec![HistoryLimit { metric: Metric::Percentile(99.0), worse_by: change }],
            detection: Detection::default(),
        }
    }

    /// 30 runs whose p99 steps from 100 to `after` at run 20, with a fixed small wiggle.
    fn runs(after: f64) -> Vec<RunRecord> {
        (0..30)
            .map(|i| {
                let wiggle = [0.0, 0.6, -0.5, 0.3, -0.2, 0.4][i % 6];
                record(i, if i < 20 { 100.0 + wiggle } else { after + wiggle }, 1000.0)
            })
            .collect()
    }

    #[test]
    fn a_step_fails_drift_and_change_point_checks_beyond_their_limits() {
        let all = runs(105.0);
        let (past, current) = all.split_at(29);
        let judged = judge(&gate(0.03, 0.03), past, &current[0]);
        assert_eq!(judged.len(), 2);
        for j in &judged {
            assert!(!j.verdict.passed, "{:?}", j.verdict);
            assert!(j.verdict.statistics.is_none(), "decided, not inconclusive");
            let w = j.verdict.observed.expect("observed");
            assert!((w - 0.05).abs() < 0.005, "{w}");
            assert_eq!(j.series.change_points.len(), 1);
            assert_eq!(j.series.change_points[0].index, 20);
            assert!(j.series.points.last().is_some_and(|p| p.current));
        }
        let loose = judge(&gate(0.10, 0.10), past, &current[0]);
        assert!(loose.iter().all(|j| j.verdict.passed));
    }

    #[test]
    fn an_improvement_passes_and_says_so() {
        let all = runs(90.0);
        let (past, current) = all.split_at(29);
        let judged = judge(&gate(0.03, 0.03), past, &current[0]);
        assert!(judged.iter().all(|j| j.verdict.passed));
        assert!(
            judged[1].verdict.note.as_deref().is_some_and(|n| n.contains("improvement")),
            "{:?}",
            judged[1].verdict
        );
    }

    #[test]
    fn noise_passes_and_a_short_history_cannot_tell() {
        let all = runs(100.0);
        let (past, current) = all.split_at(29);
        assert!(judge(&gate(0.01, 0.01), past, &current[0]).iter().all(|j| j.verdict.passed));
        let judged = judge(&gate(0.01, 0.01), &past[..3], &current[0]);
        for j in &judged {
            assert!(!j.verdict.passed);
            let st = j.verdict.statistics.as_ref().expect("inconclusive");
            assert_eq!(st.status, StatisticalStatus::Inconclusive);
            assert!(st.reason.contains("not enough history"), "{}", st.reason);
        }
    }

    #[test]
    fn a_reference_that_is_not_there_cannot_tell() {
        let all = runs(105.0);
        let (past, current) = all.split_at(29);
        let mut g = gate(0.03, 0.03);
        g.reference = HistoryReference::Label { label: "v9".to_owned() };
        let judged = judge(&g, past, &current[0]);
        assert!(judged.iter().all(|j| j.verdict.statistics.as_ref().is_some_and(|s| s.reason.contains("label v9"))));
        // After the step: no change point since the reference, nothing drifted.
        g.reference = HistoryReference::Commit { commit: format!("{:07x}", 22) };
        assert!(judge(&g, past, &current[0]).iter().all(|j| j.verdict.passed));
    }
}
