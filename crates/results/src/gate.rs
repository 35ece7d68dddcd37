//! Judging a scenario instance over its repetitions: the composition of [`crate::merge_scenarios`] (the merged
//! numbers people read) and [`crate::stats`] (the verdicts CI trusts).
//!
//! - Latency and throughput SLOs are judged on one value per repetition (each repetition's p99, read from its
//!   own histogram): an absolute limit by the median's order-statistic interval, a relative limit
//!   (`p99 <= baseline * 1.10`) by the Hodges-Lehmann ratio candidate / baseline, paired per round in an A/B
//!   run, unpaired against a stored baseline. The checks of one instance form a family: Holm keeps their
//!   joint rate of false FAILs at the confidence asked; a PASS is decided per check.
//! - A check over repetitions never passes for want of values: a round that measured nothing (no completed
//!   request for a latency, no rate held for a capacity) on either side, a candidate round of 0/s against a `>=`
//!   relative limit (no ratio exists, and 0 misses any positive limit), or anything else the statistics refuse
//!   fails the check, with a note naming the round.
//! - Count and rate SLOs (`errors == 0`, `error_rate < 1%`, `non_2xx`, `timeouts`, `checks`,
//!   `check_failures`), `==` comparisons and
//!   per-request SLOs are judged on the merge, as in a single run: an error is an error in any repetition.

use crate::json::ResultsError;
use crate::model::{InconclusiveCause, Repetition, ScenarioResult, StatisticalStatus, Verdict, VerdictStatistics};
use crate::stats::{self, Check, CheckVerdict, Design, Goal, Lean, Method, Sample, StatsError, Verdict3};
use loadgate_model::{Metric, Slo, Threshold};

/// Where a relative SLO's baseline comes from.
#[derive(Debug, Clone, Copy)]
pub enum Baseline<'a> {
    /// No baseline: relative SLOs are not evaluated.
    None,
    /// The same instance on the baseline target in this run, one result per round (A/B, paired).
    Paired(&'a [ScenarioResult]),
    /// A stored baseline (`--baseline FILE`): its repetitions, or its one result.
    Stored(&'a ScenarioResult),
}

/// Merges the repetitions of one instance and judges its SLOs over them. `repetitions` are this instance's
/// results in round order (the candidate's, in A/B); `rounds` numbers them.
pub fn judge(
    slos: &[Slo],
    repetitions: &[ScenarioResult],
    rounds: &[u32],
    baseline: Baseline<'_>,
    confidence: f64,
) -> Result<ScenarioResult, ResultsError> {
    let mut merged = merged_with_repetitions(repetitions, rounds)?;
    let paired_merge = match baseline {
        Baseline::Paired(a) if !a.is_empty() => Some(merged_with_repetitions(a, rounds)?),
        _ => None,
    };
    let stored = match baseline {
        Baseline::Stored(b) => Some(b),
        _ => None,
    };
    // The classic evaluation of every SLO on the merge: the verdict of counts and rates, and the text fields
    // of all.
    let mut verdicts = crate::evaluate(slos, &merged, paired_merge.as_ref().or(stored));
    if merged.gate {
        let values = |m: Metric, parts: &[ScenarioResult]| -> Vec<Option<f64>> {
            parts.iter().map(|p| crate::measure(m, p)).collect()
        };
        let stored_values: Option<Vec<ScenarioResult>> = stored.map(repetition_parts);
        // The rounds that numbered each side's values: the candidate's and a paired baseline's are `rounds`, a
        // stored baseline's are its own.
        let stored_rounds: Vec<u32> = match stored {
            Some(b) if !b.repetitions.is_empty() => b.repetitions.iter().map(|r| r.round).collect(),
            _ => vec![1],
        };
        let round_of = |i: usize| rounds.get(i).copied().unwrap_or(i as u32 + 1);
        let mut checks: Vec<Planned> = Vec::new();
        // Checks that cannot be judged over the repetitions, and why: each fails (see `unjudgeable`).
        let mut failed: Vec<(usize, String)> = Vec::new();
        for (i, slo) in slos.iter().enumerate() {
            if !loadgate_model::judged_over_repetitions(slo) {
                continue;
            }
            let Some(goal) = Goal::from_comparison(slo.comparison) else { continue };
            let candidate = values(slo.metric, repetitions);
            match slo.threshold {
                Threshold::Baseline { factor } => {
                    let (base, design, base_rounds): (Vec<Option<f64>>, Design, Vec<u32>) =
                        match (baseline, &stored_values) {
                            (Baseline::Paired(a), _) => {
                                (values(slo.metric, a), Design::Paired, (0..a.len()).map(round_of).collect())
                            }
                            (Baseline::Stored(_), Some(parts)) => {
                                (values(slo.metric, parts), Design::Unpaired, stored_rounds.clone())
                            }
                            _ => continue,
                        };
                    let side = if matches!(baseline, Baseline::Paired(_)) {
                        "the baseline's"
                    } else {
                        "the stored baseline's"
                    };
                    let base_round = |j: usize| base_rounds.get(j).copied().unwrap_or(j as u32 + 1);
                    let nothing = unmeasured(&candidate, slo.metric, "", &round_of)
                        .or_else(|| unmeasured(&base, slo.metric, side, &base_round));
                    if let Some(why) = nothing {
                        failed.push((i, why));
                        continue;
                    }
                    let candidate: Vec<f64> = candidate.into_iter().flatten().collect();
                    let base: Vec<f64> = base.into_iter().flatten().collect();
                    checks.push((i, candidate, Some(base), design, goal, factor));
                }
                _ if repetitions.len() > 1 => {
                    if let Some(why) = unmeasured(&candidate, slo.metric, "", &round_of) {
                        failed.push((i, why));
                        continue;
                    }
                    if let Some(limit) = verdicts[i].observed.map(|_| verdicts[i].threshold_value) {
                        checks.push((
                            i,
                            candidate.into_iter().flatten().collect(),
                            None,
                            Design::Unpaired,
                            goal,
                            limit,
                        ));
                    }
                }
                _ => {}
            }
        }
        for (i, why) in failed {
            let v = &mut verdicts[i];
            v.passed = false;
            v.note = Some(why);
        }
        let family: Vec<Check<'_>> = checks
            .iter()
            .map(|(_, cand, base, design, goal, limit)| match base {
                Some(b) => {
                    Check::Relative { baseline: b, candidate: cand, design: *design, goal: *goal, limit: *limit }
                }
                None => Check::Absolute { values: cand, goal: *goal, limit: *limit },
            })
            .collect();
        // Holm keeps the family's false FAILs (false alarms, what makes a team switch a gate off) at the
        // confidence asked; a PASS is decided per check at that confidence, so that one passing check does not
        // need more repetitions because the scenario has others.
        let family_verdicts = stats::verdicts(&family, confidence);
        for (((i, ..), decided), check) in checks.iter().zip(family_verdicts).zip(&family) {
            let v = &mut verdicts[*i];
            let decided = match decided {
                Ok(cv) if cv.verdict != Verdict3::Fail => match stats::verdict(check, confidence) {
                    Ok(single) if single.verdict == Verdict3::Pass => Ok(single),
                    _ => Ok(cv),
                },
                other => other,
            };
            match decided {
                Ok(cv) => apply(v, slos[*i].metric, &cv),
                // A check the statistics cannot take never passes for it: a value that misses the limit by
                // itself fails, anything else fails as not judged.
                Err(e) => {
                    v.passed = false;
                    let base_round = |j: usize| match baseline {
                        Baseline::Stored(_) => stored_rounds.get(j).copied().unwrap_or(j as u32 + 1),
                        _ => round_of(j),
                    };
                    v.note = Some(unjudgeable(&slos[*i], check, &e, &round_of, &base_round));
                }
            }
        }
    }
    merged.judged.verdicts = verdicts;
    crate::checks::warn_ungated(&mut merged, slos);
    merged.ab_baseline = paired_merge.map(Box::new);
    Ok(merged)
}

/// The first round of one side that measured nothing for `metric` (no completed request for a latency, no rate
/// held for a capacity), as the note of the check it fails: a round that measured nothing has not shown that it
/// meets the limit, and no interval can be formed without it. `side` is empty for the candidate (or the values
/// of an absolute check), else `the baseline's`.
fn unmeasured(values: &[Option<f64>], metric: Metric, side: &str, round: &dyn Fn(usize) -> u32) -> Option<String> {
    let i = values.iter().position(Option::is_none)?;
    let what = if metric == Metric::Capacity { "held no rate" } else { "completed no request" };
    let whose = if side.is_empty() { String::new() } else { format!("{side} ") };
    Some(format!(
        "{whose}round {} measured no {metric} (it {what}): a round that measured nothing has not shown that it meets \
         the limit",
        round(i)
    ))
}

/// Why a check the statistics refused fails: a candidate value of 0 on the bad side of a `>=` or `>` limit
/// (a round that completed nothing: `0 >= 0.9 x baseline` is false whatever the other rounds say), or the error.
fn unjudgeable(
    slo: &Slo,
    check: &Check<'_>,
    e: &StatsError,
    round: &dyn Fn(usize) -> u32,
    base_round: &dyn Fn(usize) -> u32,
) -> String {
    let show = |x: f64| crate::verdict::format_value(slo.metric.kind(), x);
    match (e, check) {
        (
            StatsError::NotPositive { sample: Sample::Candidate, index, value },
            Check::Relative { goal: Goal::Above | Goal::AtLeast, .. },
        ) => {
            let nothing = if slo.metric == Metric::Throughput { " (it completed no request)" } else { "" };
            format!(
                "round {} measured {} {}{nothing}, which misses `{slo}` whatever the other rounds measured",
                round(*index),
                slo.metric,
                if *value == 0.0 { "0".to_owned() } else { show(*value) }
            )
        }
        (StatsError::NotPositive { sample: Sample::Baseline, index, value }, Check::Relative { design, .. }) => {
            let whose = if *design == Design::Paired { "the baseline's" } else { "the stored baseline's" };
            format!(
                "{whose} round {} measured {} {}: a ratio to it means nothing, so the check cannot pass",
                base_round(*index),
                slo.metric,
                show(*value)
            )
        }
        _ => format!("not judged over the repetitions ({e}), so it cannot pass"),
    }
}

/// A check to make: the SLO's index, the candidate's values, the baseline's (for a relative check), the design,
/// the goal and the limit.
type Planned = (usize, Vec<f64>, Option<Vec<f64>>, Design, Goal, f64);

/// An instance's repetitions as results to measure (each with its own histograms, counts and rate), or the
/// instance itself when it has none: what a check over repetitions (and `loadgate compare`) reads one value from.
pub fn repetition_parts(b: &ScenarioResult) -> Vec<ScenarioResult> {
    if b.repetitions.is_empty() {
        return vec![b.clone()];
    }
    b.repetitions.iter().map(|r| repetition_result(b, r)).collect()
}

/// One repetition as a result to measure: `template` (its instance) with the repetition's histograms, counts,
/// rate, duration and capacity, and no repetitions of its own.
pub fn repetition_result(template: &ScenarioResult, r: &Repetition) -> ScenarioResult {
    let mut s = template.clone();
    s.repetitions.clear();
    s.histograms = r.histograms.clone();
    s.throughput = r.throughput;
    s.requests = r.requests.clone();
    s.status = r.status.clone();
    s.errors = r.errors.clone();
    s.checked = r.checked;
    s.duration = r.duration;
    if let Some(c) = &mut s.capacity {
        c.capacity = r.capacity;
    }
    s.target_cpu = r.target_cpu;
    s
}

fn merged_with_repetitions(parts: &[ScenarioResult], rounds: &[u32]) -> Result<ScenarioResult, ResultsError> {
    let mut merged = crate::merge_scenarios(parts)?;
    merged.started_at_offset = parts.first().map_or(0.0, |p| p.started_at_offset);
    merged.aborted = parts.iter().find_map(|p| p.aborted.clone());
    merged.repetitions = parts
        .iter()
        .enumerate()
        .map(|(i, p)| Repetition {
            round: rounds.get(i).copied().unwrap_or(i as u32 + 1),
            started_at_offset: p.started_at_offset,
            duration: p.duration,
            throughput: p.throughput,
            requests: p.requests.clone(),
            status: p.status.clone(),
            errors: p.errors.clone(),
            latency: p.latency.clone(),
            valid: p.validity.valid,
            histograms: p.histograms.clone(),
            checked: p.checked,
            target_cpu: p.target_cpu,
            capacity: p.capacity.as_ref().and_then(|c| c.capacity),
        })
        .collect();
    Ok(merged)
}

/// An INCONCLUSIVE verdict that leans neither way is "at the limit" rather than "too noisy to tell" when the run
/// could tell apart changes this small (relative).
const AT_LIMIT: f64 = 0.02;

/// Writes a statistical verdict into the SLO's verdict.
fn apply(v: &mut Verdict, metric: Metric, cv: &CheckVerdict) {
    let relative = cv.method != Method::Median;
    let format = |x: f64| {
        if relative {
            format!("{x:.3}x")
        } else {
            crate::verdict::format_value(metric.kind(), x)
        }
    };
    let cause = match cv.verdict {
        Verdict3::Pass | Verdict3::Fail => None,
        Verdict3::Inconclusive { leaning: Some(Lean::Fail) } => Some(InconclusiveCause::LeansFail),
        Verdict3::Inconclusive { leaning: Some(Lean::Pass) } => Some(InconclusiveCause::LeansPass),
        Verdict3::Inconclusive { leaning: None } if cv.min_detectable_change.is_some_and(|m| m <= AT_LIMIT) => {
            Some(InconclusiveCause::AtTheLimit)
        }
        Verdict3::Inconclusive { leaning: None } => Some(InconclusiveCause::TooNoisy),
    };
    let (status, reason) = match cv.verdict {
        Verdict3::Pass => (StatisticalStatus::Pass, "the whole interval meets the limit".to_owned()),
        Verdict3::Fail => (StatisticalStatus::Fail, "the whole interval misses the limit".to_owned()),
        Verdict3::Inconclusive { leaning: Some(Lean::Fail) } => {
            (StatisticalStatus::Inconclusive, if relative { "leans regression" } else { "leans fail" }.to_owned())
        }
        Verdict3::Inconclusive { leaning: Some(Lean::Pass) } => {
            (StatisticalStatus::Inconclusive, "leans pass".to_owned())
        }
        // The central interval holds the limit. With a precise run (it tells apart changes of 2% or less) that
        // is not noise: the change is about as large as the limit.
        Verdict3::Inconclusive { leaning: None } if cv.min_detectable_change.is_some_and(|m| m <= AT_LIMIT) => {
            (StatisticalStatus::Inconclusive, "at the limit".to_owned())
        }
        Verdict3::Inconclusive { leaning: None } => (StatisticalStatus::Inconclusive, "too noisy to tell".to_owned()),
    };
    let method = match cv.method {
        Method::Median => format!("median of {} repetitions, order-statistic interval", cv.sample.n),
        Method::Paired => format!("Hodges-Lehmann ratio of {} paired rounds, Wilcoxon signed-rank", cv.sample.n),
        Method::Unpaired => format!(
            "Hodges-Lehmann ratio of {} vs {} repetitions, Mann-Whitney",
            cv.sample.n,
            cv.baseline.map_or(0, |b| b.n)
        ),
    };
    v.observed = Some(cv.estimate);
    v.observed_text = format!("{} [{}, {}]", format(cv.estimate), format(cv.interval.lo), format(cv.interval.hi));
    // In the metric's unit: for a relative check, the limit times the baseline's median.
    v.threshold_value = match (relative, cv.baseline) {
        (true, Some(b)) => cv.limit * b.median,
        (true, None) => 0.0,
        (false, _) => cv.limit,
    };
    v.passed = status == StatisticalStatus::Pass;
    v.note = match status {
        // Too few repetitions for any interval at the confidence asked: the one shown is the widest, [min, max],
        // at the confidence it reaches, and it may lie wholly on one side of the limit.
        StatisticalStatus::Inconclusive if !cv.interval.reached => {
            let (lo, hi) = (cv.interval.lo, cv.interval.hi);
            Some(format!(
                "INCONCLUSIVE, {reason}: {} repetitions are too few for a {:.0}% interval; the widest one, from the \
                 lowest to the highest repetition, is a {:.0}% interval and {} the limit",
                cv.sample.n,
                cv.interval.requested * 100.0,
                cv.interval.confidence * 100.0,
                if lo <= cv.limit && cv.limit <= hi { "straddles" } else { "clears" }
            ))
        }
        StatisticalStatus::Inconclusive => Some(format!(
            "INCONCLUSIVE, {reason}: the {:.0}% interval straddles the limit{}",
            cv.interval.confidence * 100.0,
            cv.min_detectable_change
                .map(|m| format!("; this run could tell apart a change of {:.1}% or more", m * 100.0))
                .unwrap_or_default()
        )),
        _ => None,
    };
    v.statistics = Some(VerdictStatistics {
        status,
        reason,
        method,
        estimate: cv.estimate,
        lower: cv.interval.lo,
        upper: cv.interval.hi,
        limit: cv.limit,
        confidence: cv.interval.confidence,
        repetitions: cv.sample.n as u32,
        cv: cv.sample.cv,
        baseline_cv: cv.baseline.and_then(|b| b.cv),
        smallest_detectable: cv.min_detectable_change,
        family_size: cv.family_size as u32,
        detect: None,
        tellable: None,
        cause,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture::{scenario, Shape};

    /// One round of `api`: `completed` requests in one second, latencies around `latency_us`.
    fn round(completed: u64, latency_us: f64) -> ScenarioResult {
        scenario(
            0,
            &Shape {
                name: "api",
                scenario: "api",
                matrix: vec![],
                gate: true,
                duration: 1.0,
                offset: 0.0,
                model: "closed",
                connections: 2,
                opened: 2,
                pipeline: 1,
                rates: None,
                completed,
                latency: (latency_us, latency_us / 10.0),
                server_errors: 0,
                timeouts: 0,
                read_errors: 0,
                response_bytes: 60,
                slos: vec![],
                problems: vec![],
                warnings: vec![],
                utilization: 0.1,
                users: None,
            },
        )
    }

    fn slos(texts: &[&str]) -> Vec<Slo> {
        texts.iter().map(|t| Slo::parse(t).unwrap()).collect()
    }

    fn rounds(n: u32) -> Vec<u32> {
        (1..=n).collect()
    }

    /// Issue: a candidate that completed nothing made a relative throughput gate pass ("not evaluated: candidate
    /// value at index 0 is 0"). 0/s misses `>= baseline * 0.9` whatever the statistics: a FAIL, in an A/B run and
    /// against a stored baseline.
    #[test]
    fn a_candidate_that_completed_nothing_fails_a_relative_throughput_check() {
        let a: Vec<ScenarioResult> = (0..5).map(|_| round(40_000, 50.0)).collect();
        let dead: Vec<ScenarioResult> = (0..5).map(|_| round(0, 50.0)).collect();
        let slo = slos(&["throughput >= baseline * 0.9"]);
        let judged = judge(&slo, &dead, &rounds(5), Baseline::Paired(&a), 0.9).unwrap();
        let v = &judged.judged.verdicts[0];
        assert!(!v.passed, "{v:#?}");
        assert!(v.evaluated(), "{v:#?}");
        let note = v.note.as_deref().unwrap();
        assert!(note.contains("round 1 measured throughput 0 (it completed no request), which misses"), "{note}");

        let mut stored = round(40_000, 50.0);
        stored.repetitions = judge(&[], &a, &rounds(5), Baseline::None, 0.9).unwrap().repetitions;
        let judged = judge(&slo, &dead, &rounds(5), Baseline::Stored(&stored), 0.9).unwrap();
        assert!(!judged.judged.verdicts[0].passed, "{:#?}", judged.judged.verdicts[0]);

        // One dead round of five is not a pass either.
        let mut one_dead: Vec<ScenarioResult> = (0..5).map(|_| round(40_000, 50.0)).collect();
        one_dead[2] = round(0, 50.0);
        let judged = judge(&slo, &one_dead, &rounds(5), Baseline::Paired(&a), 0.9).unwrap();
        let v = &judged.judged.verdicts[0];
        assert!(!v.passed && v.note.as_deref().unwrap().contains("round 3 measured throughput 0 ("), "{v:#?}");
    }

    /// A round that completed no request has no p99: the check fails naming the round (it used to fall back to
    /// the merge silently), on either side.
    #[test]
    fn a_round_that_measured_nothing_fails_its_checks() {
        let a: Vec<ScenarioResult> = (0..5).map(|_| round(1_000, 2_000.0)).collect();
        let mut b = a.clone();
        b[1] = round(0, 2_000.0);
        let slo = slos(&["p99 <= baseline * 1.10", "p99 < 1s"]);
        let judged = judge(&slo, &b, &rounds(5), Baseline::Paired(&a), 0.9).unwrap();
        for v in &judged.judged.verdicts {
            assert!(!v.passed, "{v:#?}");
            assert!(v.note.as_deref().unwrap().contains("round 2 measured no p99 (it completed no request)"), "{v:#?}");
        }
        let judged = judge(&slo[..1], &a, &rounds(5), Baseline::Paired(&b), 0.9).unwrap();
        let note = judged.judged.verdicts[0].note.clone().unwrap();
        assert!(
            !judged.judged.verdicts[0].passed && note.starts_with("the baseline's round 2 measured no p99"),
            "{note}"
        );
    }
}
