//! Series from records: one metric of one scenario instance over the runs, oldest first, with its change points
//! ([`crate::changepoint`]) marked as regressions or improvements in the metric's direction.

use std::str::FromStr;

use loadgate_model::{Detection, Metric};
use loadgate_results::compare::{higher_is_better, kind_name};
use loadgate_results::history::{HistoryChangePoint, HistoryPoint, HistorySeries};

use crate::changepoint::{self, ChangePointError, Options};
use crate::record::RunRecord;

/// The metrics a series shows when none are asked for.
pub const DEFAULT_METRICS: [&str; 3] = ["throughput", "p50", "p99"];

/// Which series to make from a set of records.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// Only this spec's runs (`None`: every spec in the records).
    pub spec: Option<String>,
    /// Only these instances (empty: every instance).
    pub instances: Vec<String>,
    /// These metrics, in order (empty: [`DEFAULT_METRICS`]).
    pub metrics: Vec<String>,
    /// Only gated instances (warmups and primers are not what a team tracks).
    pub gated_only: bool,
    /// What the records were read for, kept in each series: the branch (`None` with `unbranched`: the runs on
    /// no branch; else every branch) and the machine.
    pub branch: Option<String>,
    pub unbranched: bool,
    pub machine: Option<String>,
}

/// The change-point detector's options for the spec's `detection:`.
pub fn options(d: &Detection) -> Options {
    Options {
        window: d.window as usize,
        max_pvalue: d.p_value,
        min_magnitude: d.min_magnitude,
        min_segment: d.min_segment as usize,
    }
}

/// The series of `records` (oldest first) that `selection` asks for, grouped by spec, instance (in the order
/// first seen), design (a duet run's sides are measured beside each other's load: never in an in-turn series)
/// and metric (in the order asked). A run that lacks the instance or the metric has no point; a
/// series with no point is left out.
pub fn series(records: &[RunRecord], selection: &Selection) -> Vec<HistorySeries> {
    let metrics: Vec<String> = if selection.metrics.is_empty() {
        DEFAULT_METRICS.iter().map(|m| (*m).to_owned()).collect()
    } else {
        selection.metrics.clone()
    };
    let mut keys: Vec<(String, String, Option<String>)> = Vec::new();
    for r in records {
        if selection.spec.as_ref().is_some_and(|s| s != &r.spec) {
            continue;
        }
        for i in &r.instances {
            if (selection.gated_only && !i.gate)
                || (!selection.instances.is_empty() && !selection.instances.contains(&i.name))
            {
                continue;
            }
            let key = (r.spec.clone(), i.name.clone(), r.design.clone());
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
    }
    let mut out = Vec::new();
    for (spec, instance, design) in &keys {
        for metric in &metrics {
            let points: Vec<HistoryPoint> = records
                .iter()
                .filter(|r| &r.spec == spec && &r.design == design)
                .filter_map(|r| {
                    let i = r.instances.iter().find(|i| &i.name == instance)?;
                    let value = *i.metrics.get(metric)?;
                    value.is_finite().then(|| HistoryPoint {
                        run_id: r.run_id.clone(),
                        started_at: r.started_at.clone(),
                        commit: r.commit.clone(),
                        label: r.label.clone(),
                        value,
                        current: false,
                        profile: i.profile.clone(),
                    })
                })
                .collect();
            if points.is_empty() {
                continue;
            }
            let parsed = Metric::from_str(metric).ok();
            out.push(HistorySeries {
                spec: spec.clone(),
                instance: instance.clone(),
                metric: metric.clone(),
                kind: parsed.map_or("count", |m| kind_name(m.kind())).to_owned(),
                higher_is_better: parsed.is_some_and(higher_is_better),
                branch: selection.branch.clone(),
                unbranched: selection.unbranched,
                machine: selection.machine.clone(),
                design: design.clone(),
                points,
                change_points: Vec::new(),
            });
        }
    }
    out
}

/// Finds the change points of a series and marks each as a regression or an improvement.
pub fn analyse(series: &mut HistorySeries, options: &Options) -> Result<(), ChangePointError> {
    let values: Vec<f64> = series.points.iter().map(|p| p.value).collect();
    let found = changepoint::detect(&values, options)?;
    series.change_points = found
        .into_iter()
        .map(|c| {
            let at = &series.points[c.index];
            let up = c.mean_after > c.mean_before;
            HistoryChangePoint {
                index: c.index,
                commit: at.commit.clone(),
                started_at: at.started_at.clone(),
                mean_before: c.mean_before,
                mean_after: c.mean_after,
                relative_change: c.relative_change,
                p_value: c.p_value,
                regression: up != series.higher_is_better,
            }
        })
        .collect();
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::record::InstanceRecord;
    use std::collections::BTreeMap;

    pub(crate) fn record(i: usize, p99: f64, throughput: f64) -> RunRecord {
        RunRecord {
            record_version: crate::record::RECORD_VERSION,
            run_id: format!("run-{i:03}"),
            spec: "api".to_owned(),
            spec_file: "api.yaml".to_owned(),
            plan_hash: "abc".to_owned(),
            commit: Some(format!("{i:07x}")),
            branch: Some("main".to_owned()),
            label: None,
            started_at: format!("2026-10-{:02}T{:02}:00:00Z", 1 + i / 24, i % 24),
            machine: "m".to_owned(),
            machine_summary: "m".to_owned(),
            loadgate_version: "0.1.0".to_owned(),
            outcome: "passed".to_owned(),
            design: None,
            instances: vec![InstanceRecord {
                index: 0,
                name: "get".to_owned(),
                scenario: "get".to_owned(),
                matrix: Vec::new(),
                gate: true,
                metrics: BTreeMap::from([("p99".to_owned(), p99), ("throughput".to_owned(), throughput)]),
                repetitions: Vec::new(),
                histogram: None,
                profile: None,
            }],
        }
    }

    #[test]
    fn a_duet_run_never_joins_an_in_turn_series() {
        let mut records: Vec<RunRecord> = (0..6).map(|i| record(i, 10.0, 100.0)).collect();
        for r in records.iter_mut().skip(4) {
            r.design = Some("duet".to_owned());
            r.instances[0].metrics.insert("p99".to_owned(), 12.0);
        }
        let selection = Selection { metrics: vec!["p99".to_owned()], ..Selection::default() };
        let found = series(&records, &selection);
        let shapes: Vec<(Option<&str>, Vec<f64>)> =
            found.iter().map(|s| (s.design.as_deref(), s.points.iter().map(|p| p.value).collect())).collect();
        assert_eq!(shapes, [(None, vec![10.0; 4]), (Some("duet"), vec![12.0; 2])]);
    }

    #[test]
    fn a_latency_step_up_is_a_regression_and_a_throughput_step_up_an_improvement() {
        let records: Vec<RunRecord> = (0..30)
            .map(|i| {
                let wiggle = [0.0, 0.4, -0.3, 0.2, -0.1][i % 5];
                let (p, t) = if i < 20 { (100.0 + wiggle, 1000.0 + wiggle) } else { (110.0 + wiggle, 1100.0 + wiggle) };
                record(i, p, t)
            })
            .collect();
        let selection = Selection { metrics: vec!["p99".into(), "throughput".into()], ..Selection::default() };
        let mut all = series(&records, &selection);
        assert_eq!(all.len(), 2);
        for s in &mut all {
            analyse(s, &Options::default()).expect("analyses");
            assert_eq!(s.change_points.len(), 1, "{}: {:?}", s.metric, s.change_points);
            assert_eq!(s.change_points[0].index, 20);
        }
        assert!(all[0].change_points[0].regression, "p99 went up: a regression");
        assert!(!all[1].change_points[0].regression, "throughput went up: an improvement");
        assert_eq!(all[0].kind, "latency");
        assert!(all[1].higher_is_better);
    }
}
