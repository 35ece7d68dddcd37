//! Capacity searches (`load: capacity`): how one step is judged, and how the search's outcome reads.
//!
//! A search runs open-loop steps of the scenario at one rate each (the runner orders them, see
//! `loadgate_runner::capacity`). Each step is judged here, from its own result, by [`judge_step`]:
//!
//! - **invalid** when the step is invalid as a measurement: the generator could not send its rate (limited by
//!   the generator, see [`crate::limit`]), or another validity problem (a saturated generator worker,
//!   connections that never opened). Its numbers describe loadgate, not the target; what it sent is the
//!   generator's ceiling here, and the search looks below it (the capacity is then "at least X, the generator's
//!   limit here is Y"). Only a search where no step could be judged is invalid.
//! - **fail** when one of the scenario's SLOs failed (`capacity` SLOs aside: they judge the search), or when the
//!   rate fell short because of the target or the plan's connections: a rate the target cannot be sent is a
//!   rate it does not sustain. A step stopped by an `abort_on_fail` SLO fails too.
//! - **pass** otherwise: every SLO held and at least 99% of the rate was sent.
//!
//! The capacity is the highest rate whose steps passed, confirmed by `confirm` more passing runs; the `capacity`
//! metric of an SLO (`capacity >= 50k/s`, `capacity >= baseline * 0.9`) reads it ([`crate::measure`]). When no
//! rate held the capacity is unknown below `from`, and a `capacity` SLO fails.

use loadgate_model::units::{trim_float, Duration};

use crate::format;
use crate::model::{Capacity, CapacityStage, CapacityStep, CapacityStop, LimitCause, ScenarioResult, StepVerdict};

/// A precision (a fraction) as the spec writes it: `2%`.
pub fn precision_text(fraction: f64) -> String {
    format!("{}%", trim_float(fraction * 100.0))
}

/// Seconds as the spec writes a duration: `10m`, `1m30s`.
fn duration_text(seconds: f64) -> String {
    if seconds.is_finite() && seconds >= 0.0 {
        Duration(std::time::Duration::from_secs_f64(seconds)).to_string()
    } else {
        "n/a".to_owned()
    }
}

/// How one step fared, and why, one sentence per reason (empty for a pass). `result` carries its verdicts on
/// the scenario's SLOs (without the `capacity` ones), evaluated as a gated phase.
pub fn judge_step(result: &ScenarioResult) -> (StepVerdict, Vec<String>) {
    let generator = result.judged.limited_by.as_ref().is_some_and(|l| l.cause == LimitCause::Generator);
    if !result.validity.valid || generator {
        let mut reasons: Vec<String> = result.validity.problems.iter().map(|p| p.message.clone()).collect();
        if reasons.is_empty() {
            reasons.push("the generator did not deliver the step's load".to_owned());
        }
        return (StepVerdict::Invalid, reasons);
    }
    let mut reasons: Vec<String> = result.judged.verdicts.iter().filter(|v| !v.passed).map(|v| v.explain()).collect();
    if let Some(l) = &result.judged.limited_by {
        reasons.push(l.message.clone());
    }
    if let Some(why) = &result.aborted {
        reasons.push(format!("stopped early: {why}"));
    }
    if reasons.is_empty() {
        (StepVerdict::Pass, reasons)
    } else {
        (StepVerdict::Fail, reasons)
    }
}

/// The record of one step for the search's curve.
pub fn step_record(
    step: u32,
    stage: CapacityStage,
    rate: f64,
    result: &ScenarioResult,
    verdict: StepVerdict,
    reasons: Vec<String>,
) -> CapacityStep {
    let h = &result.histograms.latency;
    let percentile = |q: f64| (!h.is_empty()).then(|| crate::value_at_percentile(h, q * 100.0));
    CapacityStep {
        step,
        stage,
        rate,
        achieved_rate: result.load.achieved_rate.unwrap_or(0.0),
        throughput: result.throughput,
        p50_us: percentile(0.5),
        p99_us: percentile(0.99),
        errors: result.errors.total() + result.status.non_2xx(),
        verdict,
        reasons,
        limited_by: result.judged.limited_by.as_ref().map(|l| l.cause),
        started_at_offset: result.started_at_offset,
        duration: result.duration,
    }
}

impl Capacity {
    /// The capacity for people: `4,200/s`, `at least 200,000/s` when the search passed its upper bound,
    /// `below 1,000/s` when no rate held.
    pub fn describe(&self) -> String {
        match (self.capacity, self.stop) {
            (Some(c), CapacityStop::UpperBoundPassed) => format!("at least {}", format::rate(c)),
            (Some(c), CapacityStop::GeneratorLimit) => format!(
                "at least {}, the generator's limit here is {}",
                format::rate(c),
                self.generator_limit.map_or_else(|| "unknown".to_owned(), format::rate)
            ),
            (Some(c), _) => format::rate(c),
            (None, _) => format!("below {}", format::rate(self.from)),
        }
    }

    /// One sentence: the capacity, how it was bracketed and confirmed, and why the search stopped:
    /// `4,200/s (4,284/s failed, 2.0% above; precision 2%, confirmed once); 9 steps in 45.2s, stopped: precision
    /// reached`.
    pub fn summary(&self) -> String {
        let mut bracket = Vec::new();
        if let (Some(c), Some(f)) = (self.capacity, self.failed_at) {
            bracket.push(format!("{} failed, {:.1}% above", format::rate(f), 100.0 * (f / c - 1.0)));
        }
        bracket.push(format!("precision {}", precision_text(self.precision)));
        if self.capacity.is_some() && self.confirm > 0 {
            bracket.push(if self.confirmed {
                match self.confirm {
                    1 => "confirmed once".to_owned(),
                    n => format!("confirmed {n} times"),
                }
            } else {
                "not confirmed".to_owned()
            });
        }
        format!(
            "{} ({}); {} step{} in {}, stopped: {}",
            self.describe(),
            bracket.join(", "),
            self.steps.len(),
            if self.steps.len() == 1 { "" } else { "s" },
            format::seconds(self.elapsed),
            self.stop_reason
        )
    }
}

/// Why a search stopped, for people, from where it stood: the rates bracketed, the budget, the step that was
/// invalid.
pub fn stop_reason(
    stop: CapacityStop,
    capacity: Option<f64>,
    failed_at: Option<f64>,
    generator_limit: Option<f64>,
    precision: f64,
    max_duration: f64,
    invalid: Option<&CapacityStep>,
) -> String {
    let rate = format::rate;
    match stop {
        CapacityStop::PrecisionReached => match (capacity, failed_at) {
            (Some(c), Some(f)) => format!(
                "precision reached: {} held and {} failed, {:.1}% apart (asked {})",
                rate(c),
                rate(f),
                100.0 * (f / c - 1.0),
                precision_text(precision)
            ),
            _ => "precision reached".to_owned(),
        },
        CapacityStop::UpperBoundPassed => format!(
            "upper bound passed: {} (`to`) held, and the search goes no higher; the capacity is at least that",
            capacity.map_or_else(|| "the highest rate".to_owned(), rate)
        ),
        CapacityStop::LowerBoundFailed => format!(
            "lower bound failed: no rate held, down to {} (`from`); the capacity is below it",
            failed_at.map_or_else(|| "the lowest rate".to_owned(), rate)
        ),
        CapacityStop::TimeBudget => {
            let budget = duration_text(max_duration);
            match (capacity, failed_at) {
                (Some(c), Some(f)) if (f / c - 1.0) > precision => format!(
                    "time budget spent ({budget}): the capacity lies between {} (held) and {} (failed), {:.1}% \
                     apart, wider than the precision asked ({})",
                    rate(c),
                    rate(f),
                    100.0 * (f / c - 1.0),
                    precision_text(precision)
                ),
                (Some(c), Some(_)) => {
                    format!("time budget spent ({budget}) before {} was confirmed", rate(c))
                }
                (Some(c), None) => format!(
                    "time budget spent ({budget}) while stepping up: {} held, higher rates were not tried",
                    rate(c)
                ),
                (None, _) => format!("time budget spent ({budget}) before any rate held"),
            }
        }
        CapacityStop::InvalidStep => match invalid {
            Some(s) => format!(
                "step {} at {} is invalid as a measurement ({}), and no step could be judged",
                s.step,
                rate(s.rate),
                s.reasons.join("; "),
            ),
            None => "no step could be judged: the first is invalid as a measurement".to_owned(),
        },
        CapacityStop::GeneratorLimit => {
            let sent = match invalid {
                Some(s) => format!(" (step {} at {} sent {})", s.step, rate(s.rate), rate(s.achieved_rate)),
                None => String::new(),
            };
            format!(
                "the generator's limit: it sends about {} here{sent}, and {} held; the capacity is at least {}, what \
                 lies above needs a generator that sends more (more CPUs, `--shards`)",
                generator_limit.map_or_else(|| "the rate asked".to_owned(), rate),
                capacity.map_or_else(|| "no rate".to_owned(), rate),
                capacity.map_or_else(|| "unknown".to_owned(), rate),
            )
        }
        CapacityStop::Interrupted => "interrupted before the search ended".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture::sample_run;
    use crate::model::{Limited, Problem};

    #[test]
    fn a_step_passes_fails_or_is_invalid_from_its_own_result() {
        let run = sample_run();
        let mut s = run.scenarios.iter().find(|s| s.load.model == "constant").unwrap().clone();
        s.judged.verdicts = crate::evaluate(&[loadgate_model::Slo::parse("p99 < 1h").unwrap()], &s, None);
        s.validity = Default::default();
        s.validity.valid = true;
        s.judged.limited_by = None;
        s.aborted = None;
        assert_eq!(judge_step(&s), (StepVerdict::Pass, vec![]));

        let mut failed = s.clone();
        failed.judged.verdicts = crate::evaluate(&[loadgate_model::Slo::parse("p99 < 1us").unwrap()], &s, None);
        let (v, reasons) = judge_step(&failed);
        assert_eq!(v, StepVerdict::Fail);
        assert!(reasons[0].starts_with("p99 was "), "{reasons:?}");

        let limited = |cause| Limited {
            cause,
            target_rate: 1000.0,
            achieved_rate: 500.0,
            message: format!("the {} limited the rate", cause.as_str()),
            evidence: vec![],
            connections_needed: None,
        };
        let mut target = s.clone();
        target.judged.limited_by = Some(limited(LimitCause::Target));
        assert_eq!(judge_step(&target), (StepVerdict::Fail, vec!["the target limited the rate".to_owned()]));

        let mut generator = s.clone();
        generator.judged.limited_by = Some(limited(LimitCause::Generator));
        generator.validity.valid = false;
        generator.validity.problems =
            vec![Problem { kind: "rate_not_reached".into(), message: "the generator limited the rate".into() }];
        assert_eq!(judge_step(&generator), (StepVerdict::Invalid, vec!["the generator limited the rate".to_owned()]));

        let mut aborted = s.clone();
        aborted.aborted = Some("SLO p99 < 1ms breached".into());
        assert_eq!(judge_step(&aborted).0, StepVerdict::Fail);

        let record = step_record(3, CapacityStage::Bisect, 1500.0, &failed, StepVerdict::Fail, vec!["x".into()]);
        assert_eq!((record.step, record.rate, record.verdict), (3, 1500.0, StepVerdict::Fail));
        assert_eq!(record.p99_us, Some(failed.histograms.latency.value_at_quantile(0.99)));
    }

    #[test]
    fn the_capacity_gates_against_a_value_a_baseline_or_another_cell() {
        let run = crate::fixture::sample_capacity_run();
        let get = &run.scenarios[0];
        let slo = |t: &str| loadgate_model::Slo::parse(t).unwrap();
        let v = crate::evaluate(&[slo("capacity >= 2000/s"), slo("capacity >= 3k/s")], get, None);
        assert!(v[0].passed && !v[1].passed, "{v:#?}");
        assert_eq!(v[1].explain(), "capacity was 2,375/s, threshold >= 3000/s");

        // A stored baseline that found 2,800/s: 2,375/s is 15% below it.
        let mut base = get.clone();
        if let Some(c) = &mut base.capacity {
            c.capacity = Some(2_800.0);
        }
        let v =
            crate::evaluate(&[slo("capacity >= baseline * 0.9"), slo("capacity >= baseline * 0.8")], get, Some(&base));
        assert!(!v[0].passed && v[1].passed, "{v:#?}");
        assert_eq!(v[0].threshold_value, 2_520.0);
        let v = crate::evaluate(&[slo("capacity >= baseline * 0.9")], get, None);
        assert!(v[0].passed && !v[0].evaluated(), "no baseline: not evaluated");

        // No rate held, or past the upper bound: the observed text says so.
        let mut none = get.clone();
        if let Some(c) = &mut none.capacity {
            c.capacity = None;
            c.stop = CapacityStop::LowerBoundFailed;
        }
        let v = &crate::evaluate(&[slo("capacity >= 100/s")], &none, None)[0];
        assert!(!v.passed, "{v:#?}");
        assert_eq!(v.observed_text, "below 500/s");
        let mut above = get.clone();
        if let Some(c) = &mut above.capacity {
            c.stop = CapacityStop::UpperBoundPassed;
        }
        assert_eq!(crate::evaluate(&[slo("capacity >= 100/s")], &above, None)[0].observed_text, "at least 2,375/s");

        // In a matrix, each cell searches, and sweep SLOs compare the cells' capacities.
        let mut run = run.clone();
        let mut cells = Vec::new();
        for (i, (connections, capacity)) in [("16", 2_375.0), ("64", 3_100.0)].into_iter().enumerate() {
            let mut s = get.clone();
            s.index = i;
            s.name = format!("get[connections={connections}]");
            s.matrix = vec![("connections".to_owned(), connections.to_owned())];
            if let Some(c) = &mut s.capacity {
                c.capacity = Some(capacity);
            }
            cells.push(s);
        }
        run.scenarios = cells;
        let names: Vec<String> = run.scenarios.iter().map(|s| s.name.clone()).collect();
        let slos = [
            loadgate_model::SweepSlo::parse("capacity@largest >= 1.2 * capacity@smallest").unwrap(),
            loadgate_model::SweepSlo::parse("capacity@64 >= 1.5 * capacity@16").unwrap(),
        ];
        let o = crate::SweepObjectives { scenario: "get", over: "connections", slos: &slos, cells: &names, gate: true };
        let v = crate::judge_sweep(&run, &o);
        assert!(v[0].passed && !v[1].passed, "{v:#?}");
    }

    #[test]
    fn stop_reasons_name_the_rates() {
        assert_eq!(
            stop_reason(CapacityStop::PrecisionReached, Some(4000.0), Some(4080.0), None, 0.02, 60.0, None),
            "precision reached: 4,000/s held and 4,080/s failed, 2.0% apart (asked 2%)"
        );
        assert_eq!(
            stop_reason(CapacityStop::TimeBudget, Some(4000.0), Some(8000.0), None, 0.02, 60.0, None),
            "time budget spent (1m): the capacity lies between 4,000/s (held) and 8,000/s (failed), 100.0% \
             apart, wider than the precision asked (2%)"
        );
        assert_eq!(
            stop_reason(CapacityStop::LowerBoundFailed, None, Some(1000.0), None, 0.02, 60.0, None),
            "lower bound failed: no rate held, down to 1,000/s (`from`); the capacity is below it"
        );
    }
}
