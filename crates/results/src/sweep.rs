//! Sweep SLOs: a matrix scenario's cells judged together, ordered by the swept variable (`sweep.over`).
//!
//! The cells of a scenario are grouped by the values of the other matrix variables (one group without them),
//! and each group is ordered by the swept variable's value, smallest first (as a number: `8 < 16 < 128`, rates,
//! durations and sizes by their value). Each sweep SLO is judged on every group; it fails when it fails on any
//! group, and then reports the first group it failed on (its values are named: `pipeline=16: ...`).
//!
//! - **`throughput_drop OP X%`**: for each cell, how far its throughput fell below the best throughput of the
//!   cells with smaller values, as a share of that best; the observed value is the largest such fall (0% when
//!   throughput never fell). `throughput_drop <= 10%` says "throughput must not fall by more than 10% as the
//!   swept variable grows".
//! - **`knee OP V`**, **`plateau OP V`**, **`collapse OP V`**: the value of the swept variable at the knee,
//!   found by the rules of [`crate::knee`](mod@crate::knee) on the ordered cells: `plateau` is the first saturation (throughput
//!   grew by less than 5%, or fell, while mean latency rose by more than 20%), `collapse` the first lasting
//!   collapse (throughput more than 10% below the best of the cells before, and no later cell back within 10%
//!   of it), `knee` the sweep's knee as reports name it: the collapse when there is one (it outranks a plateau,
//!   and is labelled `(collapse)`), else the plateau. A group without one has none: it passes `>` and `>=` whatever the
//!   value, and fails `<` and `<=`; `== none` asks for none at all.
//! - **`METRIC@CELL OP THRESHOLD`**: a per-cell metric (`p99`, `throughput`, `error_rate`, `connect_p99`, ...,
//!   measured as [`crate::verdict`] does) at the cell with the smallest or largest value, or a given value;
//!   the threshold is a value of the metric, or `FACTOR * METRIC@CELL`: `p99@largest <= 3 * p99@smallest`.
//!
//! A sweep whose cells have not all run is not judged (its verdicts pass with a note; the run is incomplete
//! anyway). In a `gate: false` scenario the verdicts pass with the note "not gated". A cell metric that
//! cannot be measured (no completed request) fails, as a per-cell SLO does. With repetitions, each cell is the
//! merge of its repetitions.

use loadgate_model::{AxisValue, CellRef, CellThreshold, Comparison, KneeWhich, Metric, SweepCheck, SweepSlo};

use crate::format;
use crate::knee::{collapse_knee, first_collapse, first_saturation, label, saturation_knee};
use crate::model::{RunResults, ScenarioResult, Sweep, Verdict};
use crate::verdict::{format_value, measure, threshold_number};

/// A matrix scenario's sweep SLOs, as the plan gives them.
#[derive(Debug, Clone, Copy)]
pub struct SweepObjectives<'a> {
    /// The scenario's key.
    pub scenario: &'a str,
    /// The swept variable.
    pub over: &'a str,
    pub slos: &'a [SweepSlo],
    /// The names of all the scenario's cells, run or not.
    pub cells: &'a [String],
    /// Whether the scenario is gated.
    pub gate: bool,
}

/// The sweeps of a run ([`crate::sweeps`]) with each scenario's sweep SLOs judged.
pub fn sweeps_judged(results: &RunResults, objectives: &[SweepObjectives<'_>]) -> Vec<Sweep> {
    let mut sweeps = crate::sweeps(results);
    for o in objectives {
        let verdicts = judge_sweep(results, o);
        match sweeps.iter_mut().find(|s| s.scenario == o.scenario) {
            Some(s) => {
                s.over = Some(o.over.to_owned());
                s.verdicts = verdicts;
            }
            None => {
                let cells: Vec<String> =
                    results.scenarios.iter().filter(|s| s.scenario == o.scenario).map(|s| s.name.clone()).collect();
                if cells.is_empty() {
                    continue;
                }
                let variables = results
                    .scenarios
                    .iter()
                    .find(|s| s.scenario == o.scenario)
                    .map(|s| s.matrix.iter().map(|(k, _)| k.clone()).collect())
                    .unwrap_or_default();
                sweeps.push(Sweep {
                    scenario: o.scenario.to_owned(),
                    variables,
                    cells,
                    knee: None,
                    over: Some(o.over.to_owned()),
                    verdicts,
                });
            }
        }
    }
    sweeps
}

/// One group of cells: the other variables' values, and the cells ordered by the swept variable.
struct Group<'a> {
    label: String,
    cells: Vec<(AxisValue, &'a ScenarioResult)>,
}

impl Group<'_> {
    fn results(&self) -> Vec<&ScenarioResult> {
        self.cells.iter().map(|(_, c)| *c).collect()
    }

    fn at(&self, cell: &CellRef) -> Option<&(AxisValue, &ScenarioResult)> {
        match cell {
            CellRef::Smallest => self.cells.first(),
            CellRef::Largest => self.cells.last(),
            CellRef::Value(v) => self.cells.iter().find(|(a, _)| a.value == v.value),
        }
    }
}

fn groups<'a>(results: &'a RunResults, scenario: &str, over: &str) -> Vec<Group<'a>> {
    // (the other variables' values, the cells with their swept value)
    type Cells<'a> = Vec<(AxisValue, &'a ScenarioResult)>;
    let mut groups: Vec<(Vec<(String, String)>, Cells<'a>)> = Vec::new();
    for s in results.scenarios.iter().filter(|s| s.scenario == scenario) {
        let Some(value) = s.matrix.iter().find(|(k, _)| k == over).and_then(|(_, v)| AxisValue::parse(v)) else {
            continue;
        };
        let others: Vec<(String, String)> = s.matrix.iter().filter(|(k, _)| k != over).cloned().collect();
        match groups.iter_mut().find(|(k, _)| *k == others) {
            Some((_, cells)) => cells.push((value, s)),
            None => groups.push((others, vec![(value, s)])),
        }
    }
    groups
        .into_iter()
        .map(|(others, mut cells)| {
            cells.sort_by(|a, b| a.0.value.total_cmp(&b.0.value));
            let label = others.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(", ");
            Group { label, cells }
        })
        .collect()
}

/// What one SLO found on one group.
struct Found {
    passed: bool,
    observed: Option<f64>,
    observed_text: String,
    threshold_value: f64,
    note: Option<String>,
}

/// Judges a scenario's sweep SLOs; one verdict per SLO, in order. See the [module documentation](self).
pub fn judge_sweep(results: &RunResults, o: &SweepObjectives<'_>) -> Vec<Verdict> {
    let ran = results.scenarios.iter().filter(|s| s.scenario == o.scenario).count();
    let groups = groups(results, o.scenario, o.over);
    o.slos
        .iter()
        .map(|slo| {
            let (comparison, threshold) = split_slo(slo);
            let mut v = Verdict {
                slo: slo.to_string(),
                metric: slo.measure_label(),
                comparison: comparison.to_owned(),
                threshold,
                threshold_value: 0.0,
                observed: None,
                observed_text: "n/a".to_owned(),
                passed: true,
                note: None,
                statistics: None,
            };
            if ran < o.cells.len() || groups.is_empty() {
                v.note = Some(format!("not evaluated: {ran} of the sweep's {} cells ran", o.cells.len()));
                return v;
            }
            let found: Vec<(&Group<'_>, Found)> = groups.iter().map(|g| (g, judge_group(slo, g, o.over))).collect();
            let (group, f) = found.iter().find(|(_, f)| !f.passed).unwrap_or(&found[0]);
            let prefix = if group.label.is_empty() { String::new() } else { format!("{}: ", group.label) };
            v.passed = f.passed;
            v.observed = f.observed;
            v.observed_text = format!("{prefix}{}", f.observed_text);
            v.threshold_value = f.threshold_value;
            v.note = f.note.clone();
            if found.len() > 1 {
                let failed = found.iter().filter(|(_, f)| !f.passed).count();
                let tail = format!("{failed} of {} sweeps over {} failed", found.len(), o.over);
                v.note = Some(match v.note.take() {
                    Some(n) => format!("{n}; {tail}"),
                    None => tail,
                });
            }
            if !o.gate {
                v.ungate();
            }
            v
        })
        .collect()
}

/// `(">=", "256")` from `knee >= 256`.
fn split_slo(slo: &SweepSlo) -> (&'static str, String) {
    let text = slo.to_string();
    let op = slo.comparison.as_str();
    let threshold = text.split_once(&format!(" {op} ")).map_or_else(String::new, |(_, t)| t.to_owned());
    (op, threshold)
}

fn judge_group(slo: &SweepSlo, g: &Group<'_>, over: &str) -> Found {
    match &slo.check {
        SweepCheck::ThroughputDrop(limit) => throughput_drop(g, slo.comparison, limit.0),
        SweepCheck::Knee { which, threshold } => knee_check(g, *which, slo.comparison, threshold.as_ref(), over),
        SweepCheck::Cell { metric, at, threshold } => cell_check(g, *metric, at, threshold, slo.comparison, over),
    }
}

fn throughput_drop(g: &Group<'_>, comparison: Comparison, limit: f64) -> Found {
    let cells = g.results();
    // The largest fall: (fraction, cell, best cell before it).
    let mut worst: Option<(f64, usize, usize)> = None;
    let mut best = 0;
    for i in 1..cells.len() {
        if cells[i - 1].throughput > cells[best].throughput {
            best = i - 1;
        }
        let top = cells[best].throughput;
        if top > 0.0 {
            let drop = ((top - cells[i].throughput) / top).max(0.0);
            if worst.is_none_or(|(w, _, _)| drop > w) {
                worst = Some((drop, i, best));
            }
        }
    }
    let (drop, text, note) = match worst {
        Some((drop, i, b)) if drop > 0.0 => (
            drop,
            format!("{} at {}", format::ratio(drop), label(cells[i])),
            Some(format!(
                "{} at {} against the best before it, {} at {}",
                format::rate(cells[i].throughput),
                label(cells[i]),
                format::rate(cells[b].throughput),
                label(cells[b])
            )),
        ),
        _ => (0.0, format::ratio(0.0), Some("throughput never fell as the sweep grew".to_owned())),
    };
    Found {
        passed: comparison.holds(drop, limit),
        observed: Some(drop),
        observed_text: text,
        threshold_value: limit,
        note,
    }
}

fn knee_check(
    g: &Group<'_>,
    which: KneeWhich,
    comparison: Comparison,
    threshold: Option<&AxisValue>,
    over: &str,
) -> Found {
    let cells = g.results();
    let saturation = first_saturation(&cells);
    let collapse = first_collapse(&cells);
    let at = match which {
        KneeWhich::Plateau => saturation.map(|i| (i, "plateau")),
        KneeWhich::Collapse => collapse.map(|(i, _)| (i, "collapse")),
        // The sweep's knee as reports name it ([`crate::knee::knee`]): a collapse outranks a plateau.
        KneeWhich::Any => match (saturation, collapse) {
            (_, Some((c, _))) => Some((c, "collapse")),
            (Some(s), None) => Some((s, "plateau")),
            (None, None) => None,
        },
    };
    let threshold_value = threshold.map_or(0.0, |t| t.value);
    match at {
        None => {
            let passed = match threshold {
                None => true,
                Some(_) => matches!(comparison, Comparison::Gt | Comparison::Ge),
            };
            let what = match which {
                KneeWhich::Any => "no knee: throughput kept growing",
                KneeWhich::Plateau => "no plateau",
                KneeWhich::Collapse => "no collapse",
            };
            Found {
                passed,
                observed: None,
                observed_text: "none".to_owned(),
                threshold_value,
                note: Some(what.to_owned()),
            }
        }
        Some((i, kind)) => {
            let value = &g.cells[i].0;
            let passed = match threshold {
                None => false,
                Some(t) => comparison.holds(value.value, t.value),
            };
            let explanation = if kind == "collapse" {
                let (c, best) = collapse.unwrap_or((i, 0));
                let before = saturation.filter(|s| *s < c);
                collapse_knee(&cells, c, best, before).explanation
            } else {
                saturation_knee(&cells, i).explanation
            };
            Found {
                passed,
                observed: Some(value.value),
                observed_text: format!("{over}={} ({kind})", value.text),
                threshold_value,
                note: Some(explanation),
            }
        }
    }
}

fn cell_check(
    g: &Group<'_>,
    metric: Metric,
    at: &CellRef,
    threshold: &CellThreshold,
    comparison: Comparison,
    over: &str,
) -> Found {
    let kind = metric.kind();
    let missing = |what: String| Found {
        passed: false,
        observed: None,
        observed_text: "n/a".to_owned(),
        threshold_value: 0.0,
        note: Some(what),
    };
    let Some((value, cell)) = g.at(at) else {
        return missing(format!("the sweep has no cell {over}={at}"));
    };
    let Some(observed) = measure(metric, cell) else {
        return missing(format!("nothing measured: {metric} at {over}={} needs completed requests", value.text));
    };
    let (limit, note) = match threshold {
        CellThreshold::Absolute(t) => match threshold_number(metric, *t) {
            Some(limit) => (limit, None),
            None => return missing(format!("the threshold `{t}` is not a value for `{metric}`")),
        },
        CellThreshold::Relative { factor, at: other } => {
            let Some((other_value, other_cell)) = g.at(other) else {
                return missing(format!("the sweep has no cell {over}={other}"));
            };
            let Some(reference) = measure(metric, other_cell) else {
                return missing(format!(
                    "nothing measured: {metric} at {over}={} needs completed requests",
                    other_value.text
                ));
            };
            let limit = factor * reference;
            (
                limit,
                Some(format!(
                    "{metric} at {over}={} was {}; {} x that is {}",
                    other_value.text,
                    format_value(kind, reference),
                    loadgate_model::units::trim_float(*factor),
                    format_value(kind, limit)
                )),
            )
        }
    };
    Found {
        passed: comparison.holds(observed, limit),
        observed: Some(observed),
        observed_text: format!("{} at {over}={}", format_value(kind, observed), value.text),
        threshold_value: limit,
        note,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture::{sample_run, sweep_cell};

    /// A run with one `sweep` scenario of these cells: (connections, throughput, mean latency ms).
    fn run(points: &[(u32, f64, f64)]) -> RunResults {
        let mut r = sample_run();
        r.scenarios = points
            .iter()
            .enumerate()
            .map(|(i, &(c, t, mean_ms))| {
                let mut s = sweep_cell(c, t, mean_ms);
                s.index = i;
                s.gate = true;
                s
            })
            .collect();
        r
    }

    fn judge(r: &RunResults, slos: &[&str]) -> Vec<Verdict> {
        let slos: Vec<SweepSlo> = slos.iter().map(|s| SweepSlo::parse(s).unwrap()).collect();
        let cells: Vec<String> = r.scenarios.iter().map(|s| s.name.clone()).collect();
        judge_sweep(
            r,
            &SweepObjectives { scenario: "sweep", over: "connections", slos: &slos, cells: &cells, gate: true },
        )
    }

    /// Seed 000: a collapse between 31 and 32 connections, listed out of order (the sweep sorts by value).
    fn seed_000() -> RunResults {
        run(&[
            (16, 1327.12, 12.05),
            (8, 1468.84, 5.44),
            (31, 1342.77, 11.90),
            (48, 422.99, 112.79),
            (32, 820.76, 38.91),
        ])
    }

    #[test]
    fn seed_000_fails_collapse_and_drop_checks() {
        let r = seed_000();
        let v = judge(
            &r,
            &[
                "collapse >= 256",
                "collapse == none",
                "throughput_drop <= 10%",
                "knee >= 8",
                "plateau >= 64",
                "knee < 1000",
            ],
        );
        assert!(!v[0].passed, "{v:#?}");
        assert_eq!(v[0].observed, Some(32.0));
        assert_eq!(v[0].observed_text, "connections=32 (collapse)");
        assert!(v[0].note.as_deref().unwrap().starts_with("throughput collapsed at connections=32"), "{v:#?}");
        assert!(
            v[0].explain().starts_with("collapse was connections=32 (collapse), threshold >= 256"),
            "{}",
            v[0].explain()
        );
        assert!(!v[1].passed);
        // The largest fall: 48 connections, 423/s against the best before it, 1,469/s at 8.
        assert!(!v[2].passed);
        assert!((v[2].observed.unwrap() - (1.0 - 422.99 / 1468.84)).abs() < 1e-9, "{v:#?}");
        assert!(v[2].observed_text.ends_with("at connections=48"), "{}", v[2].observed_text);
        // The knee is the collapse at 32, as the sweep's knee is (the plateau at 16 came first, and its own check
        // names it): labelled and explained as the collapse.
        assert!(
            v[3].passed && v[3].observed == Some(32.0) && v[3].observed_text == "connections=32 (collapse)",
            "{v:#?}"
        );
        assert!(v[3].note.as_deref().unwrap().starts_with("throughput collapsed at connections=32"), "{v:#?}");
        assert!(!v[4].passed && v[4].observed == Some(16.0));
        assert!(v[5].passed);
    }

    #[test]
    fn a_sweep_that_scales_passes_and_has_no_knee() {
        let r = run(&[(8, 10_000.0, 0.80), (16, 19_800.0, 0.81), (32, 39_000.0, 0.83), (64, 76_000.0, 0.85)]);
        let v = judge(&r, &["knee >= 256", "collapse == none", "throughput_drop < 1%", "knee <= 64", "knee == none"]);
        assert!(v[0].passed && v[0].observed.is_none() && v[0].observed_text == "none", "{v:#?}");
        assert!(v[1].passed && v[2].passed && v[4].passed);
        assert_eq!(v[2].observed, Some(0.0));
        assert!(!v[3].passed, "no knee at all is not a knee at 64 or below");
    }

    #[test]
    fn cell_checks_compare_cells() {
        let r = run(&[(8, 10_000.0, 1.0), (64, 30_000.0, 2.0), (512, 31_000.0, 9.0)]);
        let v = judge(
            &r,
            &[
                "p99@largest <= 3 * p99@smallest",
                "mean@largest <= 10 * mean@8",
                "throughput@512 >= 30000/s",
                "p99@64 < 1ms",
            ],
        );
        assert!(!v[0].passed, "{v:#?}");
        let p99 = |i: usize| crate::value_at_percentile(&r.scenarios[i].histograms.latency, 99.0) as f64;
        assert_eq!(v[0].observed, Some(p99(2)));
        assert!((v[0].threshold_value - 3.0 * p99(0)).abs() < 1e-9);
        assert!(v[0].note.as_deref().unwrap().starts_with("p99 at connections=8 was"), "{v:#?}");
        assert!(v[1].passed, "{v:#?}");
        assert!(v[2].passed && v[2].observed == Some(31_000.0));
        assert!(!v[3].passed);
    }

    #[test]
    fn other_variables_make_groups_and_unfinished_sweeps_wait() {
        let mut r = run(&[(8, 10_000.0, 1.0), (64, 30_000.0, 2.0), (8, 10_000.0, 1.0), (64, 5_000.0, 40.0)]);
        for (i, s) in r.scenarios.iter_mut().enumerate() {
            let pipeline = if i < 2 { "1" } else { "16" };
            s.matrix.push(("pipeline".to_owned(), pipeline.to_owned()));
            s.name = format!("sweep[connections={},pipeline={pipeline}]", s.matrix[0].1);
        }
        let v = judge(&r, &["collapse == none"]);
        assert!(!v[0].passed);
        assert_eq!(v[0].observed_text, "pipeline=16: connections=64 (collapse)");
        assert!(v[0].note.as_deref().unwrap().ends_with("1 of 2 sweeps over connections failed"), "{v:#?}");

        let slos = [SweepSlo::parse("knee >= 256").unwrap()];
        let mut cells: Vec<String> = r.scenarios.iter().map(|s| s.name.clone()).collect();
        cells.push("sweep[connections=512,pipeline=16]".to_owned());
        let o = SweepObjectives { scenario: "sweep", over: "connections", slos: &slos, cells: &cells, gate: true };
        let v = judge_sweep(&r, &o);
        assert!(v[0].passed && !v[0].evaluated(), "{v:#?}");

        // Ungated scenarios report, never fail.
        let cells: Vec<String> = r.scenarios.iter().map(|s| s.name.clone()).collect();
        let o = SweepObjectives { scenario: "sweep", over: "connections", slos: &slos, cells: &cells, gate: false };
        let v = judge_sweep(&r, &o);
        assert!(v[0].passed && v[0].note.as_deref().unwrap().starts_with("not gated (gate: false); would have failed"));
    }

    #[test]
    fn sweeps_judged_fill_the_sweep_and_fail_the_outcome() {
        let mut r = seed_000();
        r.finished_at = Some("2026-01-01T00:00:00Z".to_owned());
        let slos = [SweepSlo::parse("collapse >= 256").unwrap()];
        let cells: Vec<String> = r.scenarios.iter().map(|s| s.name.clone()).collect();
        let o = SweepObjectives { scenario: "sweep", over: "connections", slos: &slos, cells: &cells, gate: true };
        r.sweeps = sweeps_judged(&r, &[o]);
        assert_eq!(r.sweeps.len(), 1);
        assert_eq!(r.sweeps[0].over.as_deref(), Some("connections"));
        assert_eq!(r.sweeps[0].verdicts.len(), 1);
        for s in &mut r.scenarios {
            s.judged.verdicts.clear();
            s.validity.valid = true;
        }
        let out = crate::outcome(&r);
        assert_eq!(out.status, crate::OutcomeStatus::SloFailed, "{out:#?}");
        assert!(out.reasons[0].starts_with("sweep sweep: collapse was connections=32 (collapse)"), "{out:#?}");
        let json = crate::to_json(&r).unwrap();
        let back = crate::from_json(&json).unwrap();
        assert_eq!(back.sweeps, r.sweeps);
    }
}
