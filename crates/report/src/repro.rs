//! `loadgate repro`'s comparison: a reproduced run beside the CI run it reproduces, per scenario instance.

use std::fmt::Write as _;

use loadgate_results::{format, stats, RunResults, ScenarioResult};

use crate::lines::scenario_verdict;

/// The caveat printed under every comparison: two single runs differ by noise.
pub const NOISE_CAVEAT: &str = "Two runs differ by noise: the same build on the same machine swings 10-30% on a \
shared or virtual runner, more across machines. A difference inside that is not a regression; judge one with \
repetitions (`gating.repeat`, `--repeat 5`) or an A/B run, not from two single runs.";

/// The run `here` beside the CI run `ci` it reproduces: per scenario instance (matched by name) the throughput,
/// p50, p90, p99, errors and verdict of each; when the CI run had repetitions, the median's confidence interval
/// over them and whether this run falls inside; the machines when they differ; the noise caveat.
pub fn repro_comparison(ci: &RunResults, here: &RunResults) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}: this run beside the CI run (plan {}, the same plan)", ci.spec.name, ci.spec.plan_hash);
    let _ = writeln!(out, "CI run:   {} ({})", ci.started_at, crate::headline(ci));
    let _ = writeln!(out, "this run: {} ({})", here.started_at, crate::headline(here));
    let confidence = ci.gating.as_ref().map_or(0.9, |g| g.confidence);
    let mut names: Vec<&str> = ci.scenarios.iter().map(|s| s.name.as_str()).collect();
    names.extend(here.scenarios.iter().map(|s| s.name.as_str()).filter(|n| !ci.scenarios.iter().any(|s| s.name == *n)));
    let rows: [Row; 6] = [
        ("throughput", |s| format::rate(s.throughput)),
        ("p50", |s| percentile(s, "p50")),
        ("p90", |s| percentile(s, "p90")),
        ("p99", |s| percentile(s, "p99")),
        ("errors", |s| format::count(s.errors.total())),
        ("verdict", |s| scenario_verdict(s).0),
    ];
    for name in names {
        let a = ci.scenarios.iter().find(|s| s.name == name);
        let b = here.scenarios.iter().find(|s| s.name == name);
        let _ = writeln!(out, "\n{name}");
        let _ = writeln!(out, "  {:<12} {:>22} {:>22}", "", "CI run", "this run");
        for (label, value) in rows {
            let cell = |s: Option<&ScenarioResult>| s.map_or_else(|| "not run".to_owned(), value);
            let _ = writeln!(out, "  {label:<12} {:>22} {:>22}", cell(a), cell(b));
        }
        if let Some(a) = a.filter(|a| a.repetitions.len() >= 2) {
            let _ = writeln!(
                out,
                "  the CI run's {} repetitions, median and {:.0}% interval:",
                a.repetitions.len(),
                confidence * 100.0
            );
            let throughput: Vec<f64> = a.repetitions.iter().map(|r| r.throughput).collect();
            let p99: Vec<f64> =
                a.repetitions.iter().filter_map(|r| r.latency.percentiles.get("p99").map(|v| *v as f64)).collect();
            let mine = b.map(|b| (b.throughput, b.latency.percentiles.get("p99").map(|v| *v as f64)));
            interval_line(&mut out, "throughput", &throughput, confidence, mine.map(|m| m.0), format::rate);
            interval_line(&mut out, "p99", &p99, confidence, mine.and_then(|m| m.1), format::latency_us);
        }
    }
    let differences = machine_differences(&ci.machine, &here.machine);
    if differences.is_empty() {
        let _ = writeln!(out, "\nmachine: the same fingerprint ({})", crate::machine_summary(&here.machine));
    } else {
        let _ = writeln!(out, "\nmachine: a different fingerprint");
        let _ = writeln!(out, "  {:<18} {:<40} this run", "", "CI run");
        for (label, a, b) in differences {
            let _ = writeln!(out, "  {label:<18} {a:<40} {b}");
        }
    }
    let _ = writeln!(out, "\n{NOISE_CAVEAT}");
    out
}

/// A row of the comparison: its label and how to show an instance's value.
type Row = (&'static str, fn(&ScenarioResult) -> String);

fn percentile(s: &ScenarioResult, p: &str) -> String {
    s.latency.percentiles.get(p).map_or_else(|| "n/a".to_owned(), |v| format::latency(*v))
}

/// `  p99          2.10ms [1.90ms, 2.60ms]; this run's 2.30ms is inside`.
fn interval_line(
    out: &mut String,
    label: &str,
    values: &[f64],
    confidence: f64,
    mine: Option<f64>,
    show: fn(f64) -> String,
) {
    let Ok(est) = stats::median_ci(values, confidence) else { return };
    let (lo, hi) = (est.interval.lo, est.interval.hi);
    let place = match mine {
        Some(v) if v < lo => format!("this run's {} is below it", show(v)),
        Some(v) if v > hi => format!("this run's {} is above it", show(v)),
        Some(v) => format!("this run's {} is inside it", show(v)),
        None => "this run has no value".to_owned(),
    };
    let reached = if est.interval.reached { "" } else { " (too few repetitions to reach the confidence)" };
    let _ = writeln!(out, "    {label:<10} {} [{}, {}]{reached}; {place}", show(est.median), show(lo), show(hi));
}

pub use loadgate_results::compare::machine_differences;

#[cfg(test)]
mod tests {
    use super::*;

    /// The fixture run reproduced on another machine: slower, one instance gone, its CI run repeated.
    fn pair() -> (RunResults, RunResults) {
        let mut ci = loadgate_results::fixture::sample_run();
        ci.started_at = "2026-11-20T10:00:00Z".to_owned();
        let mut here = ci.clone();
        here.started_at = "2026-11-24T21:00:00Z".to_owned();
        here.machine.cpu_model = Some("Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz".to_owned());
        here.machine.kernel = Some("6.1.0-28-cloud-amd64".to_owned());
        here.machine.hostname = Some("laptop".to_owned());
        for s in &mut here.scenarios {
            s.throughput *= 0.9;
            for v in s.latency.percentiles.values_mut() {
                *v = *v * 11 / 10;
            }
        }
        here.scenarios.pop();
        // Five repetitions of the first instance in the CI run, spread around its own numbers.
        let first = &mut ci.scenarios[0];
        let template = loadgate_results::Repetition {
            round: 1,
            started_at_offset: 0.0,
            duration: first.duration,
            throughput: first.throughput,
            requests: first.requests.clone(),
            status: first.status.clone(),
            errors: first.errors.clone(),
            latency: first.latency.clone(),
            valid: true,
            histograms: first.histograms.clone(),
            checked: Default::default(),
            capacity: None,
            target_cpu: None,
        };
        first.repetitions = [0.96, 1.0, 1.03, 0.98, 1.05]
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let mut r = template.clone();
                r.round = i as u32 + 1;
                r.throughput *= f;
                for v in r.latency.percentiles.values_mut() {
                    *v = (*v as f64 / f) as u64;
                }
                r
            })
            .collect();
        (ci, here)
    }

    #[test]
    fn shows_both_columns_the_intervals_and_the_other_machine() {
        let (ci, here) = pair();
        let text = repro_comparison(&ci, &here);
        insta::assert_snapshot!(text.replace(&ci.started_at, "[CI start]").replace(&here.started_at, "[start]"));
        assert!(text.contains("CI run") && text.contains("this run"));
        assert!(text.contains("a different fingerprint"));
        assert!(!text.contains("laptop"), "the host name is no fingerprint difference");
    }

    #[test]
    fn the_same_machine_is_said_once() {
        let ci = loadgate_results::fixture::sample_run();
        let text = repro_comparison(&ci, &ci);
        assert!(text.contains("machine: the same fingerprint"), "{text}");
        assert!(machine_differences(&ci.machine, &ci.machine).is_empty());
    }
}
