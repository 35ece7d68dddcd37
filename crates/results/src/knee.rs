//! Knee detection: where a matrix sweep stopped scaling.
//!
//! [`knee`] reads the cells of one scenario in run order (the cells of a one-variable numeric matrix such as
//! `connections: [8, 16, 31, 32, 48]`) and names at most one cell:
//!
//! - **collapse**: the first cell whose throughput is more than [`COLLAPSE_MIN_DROP`] (10%) below the best
//!   throughput of the cells before it, and stays there: no later cell gets back within 10% of that best (a
//!   single dip that recovers is noise, a GC pause, not a collapse). Seed 000's drop from 1,343 to 820
//!   requests/s between 31 and 32 connections is one.
//! - **saturation**: the first cell whose throughput grew by less than [`SATURATION_MAX_GAIN`] (5%, or fell)
//!   over the cell before it while its mean latency rose by more than [`SATURATION_MIN_LATENCY_RISE`] (20%):
//!   more load only queues. Mean latency, not p99, decides: one slow request moves a p99, not a mean. It lasts
//!   as a collapse does: no later cell grows more than 5% above the best up to it, and a dip (more than 10%
//!   below the best before it) that a later cell recovers from (back within 10%) is noise, not a plateau.
//!
//! A collapse outranks a saturation: when a sweep has both, the knee is the collapse (the cliff is what a
//! reader must not miss), and its explanation says where throughput had stopped growing before. Without a
//! collapse the knee is the first saturation; a sweep that kept scaling, or a single cell, has none.
//!
//! A knee cell that is invalid as a measurement is still named, with a note that the drop may be the
//! generator's. Throughput is completed responses per second, whatever their status.
//!
//! [`sweeps`] groups a run's instances into sweeps (one per matrix scenario with two cells or more) and looks
//! for the knee of each sweep whose cells differ in exactly one variable with numeric values; the CLI stores
//! the result in [`RunResults::sweeps`].

use crate::format;
use crate::model::{Knee, KneeKind, RunResults, ScenarioResult, Sweep};

/// Saturation: throughput grew by less than this fraction over the previous cell (or fell)...
pub const SATURATION_MAX_GAIN: f64 = 0.05;
/// ... while mean latency rose by more than this fraction.
pub const SATURATION_MIN_LATENCY_RISE: f64 = 0.20;
/// Collapse: throughput fell by more than this fraction below the best of the cells before, for good.
pub const COLLAPSE_MIN_DROP: f64 = 0.10;

/// The knee of a sweep whose cells are given in run order; `None` for fewer than two cells or a sweep that
/// kept scaling. See the [module documentation](self) for the rules.
pub fn knee(cells: &[&ScenarioResult]) -> Option<Knee> {
    if cells.len() < 2 {
        return None;
    }
    let saturation = first_saturation(cells);
    match first_collapse(cells) {
        Some((at, best)) => Some(collapse_knee(cells, at, best, saturation.filter(|s| *s < at))),
        None => saturation.map(|at| saturation_knee(cells, at)),
    }
}

/// The sweeps of a run: one per matrix scenario with two cells or more, in order of first appearance, each
/// with its [`knee`] when exactly one variable varies across its cells and that variable's values are numbers.
pub fn sweeps(results: &RunResults) -> Vec<Sweep> {
    let mut keys: Vec<&str> = Vec::new();
    for s in &results.scenarios {
        if !s.matrix.is_empty() && !keys.contains(&s.scenario.as_str()) {
            keys.push(&s.scenario);
        }
    }
    keys.into_iter()
        .filter_map(|key| {
            let cells: Vec<&ScenarioResult> = results.scenarios.iter().filter(|s| s.scenario == key).collect();
            if cells.len() < 2 {
                return None;
            }
            let mut variables: Vec<String> = Vec::new();
            for c in &cells {
                for (k, _) in &c.matrix {
                    if !variables.contains(k) {
                        variables.push(k.clone());
                    }
                }
            }
            let varying: Vec<&String> = variables
                .iter()
                .filter(|v| {
                    let first = value_of(cells[0], v);
                    cells.iter().any(|c| value_of(c, v) != first)
                })
                .collect();
            let one_numeric_axis = varying.len() == 1
                && cells
                    .iter()
                    .all(|c| value_of(c, varying[0]).is_some_and(|v| v.starts_with(|ch: char| ch.is_ascii_digit())));
            Some(Sweep {
                scenario: key.to_owned(),
                variables,
                cells: cells.iter().map(|c| c.name.clone()).collect(),
                knee: if one_numeric_axis { knee(&cells) } else { None },
                over: None,
                verdicts: Vec::new(),
            })
        })
        .collect()
}

fn value_of<'a>(s: &'a ScenarioResult, variable: &str) -> Option<&'a str> {
    s.matrix.iter().find(|(k, _)| k == variable).map(|(_, v)| v.as_str())
}

/// `connections=32`, or the instance name outside a matrix.
pub(crate) fn label(s: &ScenarioResult) -> String {
    if s.matrix.is_empty() {
        return s.name.clone();
    }
    s.matrix.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(", ")
}

/// `b / a - 1`, infinite growth from zero, none from zero to zero.
fn growth(a: f64, b: f64) -> f64 {
    if a > 0.0 {
        b / a - 1.0
    } else if b > 0.0 {
        f64::INFINITY
    } else {
        0.0
    }
}

fn latency_rise(a: &ScenarioResult, b: &ScenarioResult) -> Option<f64> {
    (a.latency.count > 0 && b.latency.count > 0).then(|| growth(a.latency.mean_us, b.latency.mean_us))
}

pub(crate) fn first_saturation(cells: &[&ScenarioResult]) -> Option<usize> {
    (1..cells.len()).find(|&i| {
        let (prev, cur) = (cells[i - 1], cells[i]);
        growth(prev.throughput, cur.throughput) < SATURATION_MAX_GAIN
            && latency_rise(prev, cur).is_some_and(|rise| rise > SATURATION_MIN_LATENCY_RISE)
            && lasting_saturation(cells, i)
    })
}

/// A saturation lasts as a collapse does: throughput never grows again by more than [`SATURATION_MAX_GAIN`] over
/// the best of the cells up to it, and a cell that is a dip (more than [`COLLAPSE_MIN_DROP`] below the best
/// before it) is not one when a later cell gets back within that of the best: one slow cell is noise.
fn lasting_saturation(cells: &[&ScenarioResult], at: usize) -> bool {
    let best = cells[..at].iter().map(|c| c.throughput).fold(0.0, f64::max);
    let later = &cells[at + 1..];
    let grows_again = later.iter().any(|c| c.throughput > best.max(cells[at].throughput) * (1.0 + SATURATION_MAX_GAIN));
    let floor = best * (1.0 - COLLAPSE_MIN_DROP);
    let dip_that_recovers = cells[at].throughput < floor && later.iter().any(|c| c.throughput >= floor);
    !grows_again && !dip_that_recovers
}

/// The first lasting collapse: its position and the position of the best cell before it.
pub(crate) fn first_collapse(cells: &[&ScenarioResult]) -> Option<(usize, usize)> {
    let mut best = 0;
    for i in 1..cells.len() {
        let floor = cells[best].throughput * (1.0 - COLLAPSE_MIN_DROP);
        let lasting = cells[i..].iter().all(|c| c.throughput < floor);
        if cells[best].throughput > 0.0 && lasting {
            return Some((i, best));
        }
        if cells[i].throughput > cells[best].throughput {
            best = i;
        }
    }
    None
}

/// `39%` from 10% up, `9.6%` below.
fn percent(fraction: f64) -> String {
    let pct = (fraction * 100.0).abs();
    if !pct.is_finite() {
        "n/a".to_owned()
    } else if pct >= 10.0 {
        format!("{pct:.0}%")
    } else {
        format!("{pct:.1}%")
    }
}

fn signed_percent(fraction: f64) -> String {
    if fraction < 0.0 {
        format!("-{}", percent(fraction))
    } else {
        format!("+{}", percent(fraction))
    }
}

fn invalid_note(s: &ScenarioResult) -> String {
    if s.validity.valid {
        return String::new();
    }
    let kinds: Vec<&str> = s.validity.problems.iter().map(|p| p.kind.as_str()).collect();
    let kinds = if kinds.is_empty() { String::new() } else { format!(" ({})", kinds.join(", ")) };
    format!(". That cell is invalid as a measurement{kinds}: the drop may be the generator's, not the target's")
}

fn saturation_sentence(cells: &[&ScenarioResult], at: usize) -> String {
    let (prev, cur) = (cells[at - 1], cells[at]);
    let rise = latency_rise(prev, cur).unwrap_or(0.0);
    format!(
        "{} ({} against {} at {}, {}) while mean latency rose {} ({} to {})",
        label(cur),
        format::rate(cur.throughput),
        format::rate(prev.throughput),
        label(prev),
        signed_percent(growth(prev.throughput, cur.throughput)),
        percent(rise),
        format::latency_us(prev.latency.mean_us),
        format::latency_us(cur.latency.mean_us),
    )
}

pub(crate) fn saturation_knee(cells: &[&ScenarioResult], at: usize) -> Knee {
    let (prev, cur) = (cells[at - 1], cells[at]);
    Knee {
        index: at,
        name: cur.name.clone(),
        cell: label(cur),
        kind: KneeKind::Saturation,
        throughput: cur.throughput,
        reference_cell: label(prev),
        reference_throughput: prev.throughput,
        explanation: format!(
            "throughput stopped growing at {}{}",
            saturation_sentence(cells, at),
            invalid_note(cur).replace("the drop", "the plateau")
        ),
    }
}

pub(crate) fn collapse_knee(cells: &[&ScenarioResult], at: usize, best: usize, saturated: Option<usize>) -> Knee {
    let (prev, cur) = (cells[at - 1], cells[at]);
    let mut explanation = format!(
        "throughput collapsed at {}: {}, down {} from {} at {}",
        label(cur),
        format::rate(cur.throughput),
        percent(growth(prev.throughput, cur.throughput)),
        format::rate(prev.throughput),
        label(prev),
    );
    if best != at - 1 {
        explanation.push_str(&format!(
            " and {} below the best, {} at {}",
            percent(growth(cells[best].throughput, cur.throughput)),
            format::rate(cells[best].throughput),
            label(cells[best]),
        ));
    }
    if let Some(s) = saturated {
        explanation.push_str(&format!("; throughput had already stopped growing at {}", saturation_sentence(cells, s)));
    }
    explanation.push_str(&invalid_note(cur));
    Knee {
        index: at,
        name: cur.name.clone(),
        cell: label(cur),
        kind: KneeKind::Collapse,
        throughput: cur.throughput,
        reference_cell: label(prev),
        reference_throughput: prev.throughput,
        explanation,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture::{sample_run, sweep_cell};

    fn sweep(points: &[(u32, f64, f64)]) -> Vec<ScenarioResult> {
        points.iter().map(|&(c, t, m)| sweep_cell(c, t, m)).collect()
    }

    fn knee_of(cells: &[ScenarioResult]) -> Option<Knee> {
        knee(&cells.iter().collect::<Vec<_>>())
    }

    #[test]
    fn seed_000_names_the_collapse_between_31_and_32_connections() {
        // wrk -t16 against the seed's server: connections, Requests/sec, Latency avg (ms).
        let cells = sweep(&[
            (8, 1468.84, 5.44),
            (16, 1327.12, 12.05),
            (31, 1342.77, 11.90),
            (32, 820.76, 38.91),
            (48, 422.99, 112.79),
        ]);
        let k = knee_of(&cells).expect("seed 000 has a knee");
        assert_eq!(k.kind, KneeKind::Collapse);
        assert_eq!(k.index, 3);
        assert_eq!(k.name, "sweep[connections=32]");
        assert_eq!(k.cell, "connections=32");
        assert_eq!(k.reference_cell, "connections=31");
        assert_eq!(k.throughput, 820.76);
        assert!(
            k.explanation
                .starts_with("throughput collapsed at connections=32: 821/s, down 39% from 1,343/s at connections=31"),
            "{}",
            k.explanation
        );
        // The best cell and the earlier plateau are named too.
        assert!(k.explanation.contains("44% below the best, 1,469/s at connections=8"), "{}", k.explanation);
        assert!(k.explanation.contains("had already stopped growing at connections=16"), "{}", k.explanation);
    }

    #[test]
    fn a_clean_plateau_is_a_saturation_at_its_first_cell() {
        let cells = sweep(&[
            (8, 10_000.0, 0.8),
            (16, 19_500.0, 0.82),
            (32, 37_000.0, 0.86),
            (64, 38_100.0, 1.68),
            (128, 38_300.0, 3.34),
            (256, 38_200.0, 6.70),
        ]);
        let k = knee_of(&cells).unwrap();
        assert_eq!(k.kind, KneeKind::Saturation);
        assert_eq!(k.index, 3);
        assert_eq!(k.name, "sweep[connections=64]");
        assert_eq!(k.reference_cell, "connections=32");
        assert!(
            k.explanation.starts_with("throughput stopped growing at connections=64 (38,100/s against 37,000/s at connections=32, +3.0%) while mean latency rose"),
            "{}",
            k.explanation
        );
    }

    #[test]
    fn a_sweep_that_keeps_scaling_has_no_knee() {
        let cells = sweep(&[(8, 10_000.0, 0.80), (16, 19_800.0, 0.81), (32, 39_000.0, 0.83), (64, 76_000.0, 0.85)]);
        assert_eq!(knee_of(&cells), None);
        // Throughput flat but latency flat too (a sweep over something that does not matter): no knee.
        let flat = sweep(&[(8, 10_000.0, 0.8), (16, 10_100.0, 0.81), (32, 9_950.0, 0.8)]);
        assert_eq!(knee_of(&flat), None);
    }

    #[test]
    fn one_cell_or_none_has_no_knee() {
        assert_eq!(knee_of(&sweep(&[(8, 1468.84, 5.44)])), None);
        assert_eq!(knee(&[]), None);
    }

    #[test]
    fn noisy_plateaus_are_no_collapse() {
        // ±3% around 40,000/s once saturated, latency doubling with the connections.
        let cells = sweep(&[
            (8, 20_000.0, 0.4),
            (16, 39_000.0, 0.41),
            (32, 40_600.0, 0.79),
            (64, 39_400.0, 1.62),
            (128, 41_100.0, 3.11),
            (256, 38_900.0, 6.58),
            (512, 40_200.0, 12.7),
        ]);
        let k = knee_of(&cells).unwrap();
        assert_eq!(k.kind, KneeKind::Saturation, "{}", k.explanation);
        assert_eq!(k.index, 2);
    }

    #[test]
    fn a_dip_that_recovers_is_not_a_collapse() {
        let cells = sweep(&[
            (8, 10_000.0, 0.8),
            (16, 19_500.0, 0.82),
            (32, 16_000.0, 0.9),
            (64, 38_000.0, 0.95),
            (128, 75_000.0, 0.97),
        ]);
        assert_eq!(knee_of(&cells), None);
        // A -70% dip with latency tripled, then back: neither a collapse nor a saturation.
        let cells = sweep(&[
            (8, 10_000.0, 0.8),
            (16, 19_500.0, 0.82),
            (32, 5_850.0, 2.6),
            (64, 38_000.0, 0.95),
            (128, 75_000.0, 0.97),
        ]);
        assert_eq!(knee_of(&cells), None);
        let cells = sweep(&[(8, 10_000.0, 0.8), (16, 19_500.0, 0.82), (32, 5_850.0, 2.6), (64, 19_400.0, 0.83)]);
        assert_eq!(knee_of(&cells), None);
        // A fall that stays down is one, even at the last cell.
        let cells = sweep(&[(8, 10_000.0, 0.8), (16, 19_500.0, 0.82), (32, 12_000.0, 2.6)]);
        let k = knee_of(&cells).unwrap();
        assert_eq!((k.kind, k.index), (KneeKind::Collapse, 2));
    }

    #[test]
    fn sweeps_group_cells_and_look_for_knees_on_one_numeric_axis() {
        let mut run = sample_run();
        let found = sweeps(&run);
        assert_eq!(found.len(), 1);
        let s = &found[0];
        assert_eq!(s.scenario, "plaintext");
        assert_eq!(s.variables, vec!["connections"]);
        assert_eq!(s.cells.len(), 3);
        let k = s.knee.as_ref().unwrap();
        assert_eq!((k.kind, k.index), (KneeKind::Collapse, 2));
        assert!(k.explanation.contains("invalid as a measurement (connections_missing, generator_saturated)"));
        assert_eq!(run.sweeps, found, "the fixture carries its sweeps");

        // Two varying variables: a sweep, but no knee.
        for (i, s) in run.scenarios.iter_mut().filter(|s| s.scenario == "plaintext").enumerate() {
            s.matrix.push(("pipeline".to_owned(), (1 << i).to_string()));
        }
        let found = sweeps(&run);
        assert_eq!(found[0].variables, vec!["connections", "pipeline"]);
        assert_eq!(found[0].knee, None);

        // A non-numeric axis: no knee.
        for s in run.scenarios.iter_mut().filter(|s| s.scenario == "plaintext") {
            s.matrix = vec![("path".to_owned(), format!("/{}", s.index))];
        }
        assert_eq!(sweeps(&run)[0].knee, None);
    }
}
