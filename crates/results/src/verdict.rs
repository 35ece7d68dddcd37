//! SLO evaluation: every SLO of a scenario instance becomes a [`Verdict`].
//!
//! The rules, in one place:
//!
//! - **Latency metrics** (`p50` ... `p99.99`, `max`, `mean`) are read from the full-resolution latency histogram
//!   (`histograms.latency`, measured from the intended send time), never averaged across workers or seconds.
//!   Percentiles are the histogram's value at that quantile (to its 3 significant digits).
//! - **`throughput`** is [`ScenarioResult::throughput`]: completed requests per second over the phase.
//! - **`error_rate`** is `(errors + non-2xx responses) / (completed responses + errors)`, where `errors` counts
//!   every request that failed without a complete response (connect, read, write, timeout, protocol). Requests
//!   still in flight when the phase ended are in neither term.
//! - **`errors`**, **`non_2xx`** and **`timeouts`** are counts over the phase.
//! - **Baseline thresholds** (`p99 <= baseline * 1.10`) take the same metric from the baseline's scenario instance
//!   of the same name ([`baseline_for`]), times the factor. Without a baseline (no `--baseline`, or the baseline has
//!   no such instance) the SLO is *not evaluated*: its verdict passes with a note, so a first run on a new branch
//!   does not fail the gate for want of something to compare with.
//! - **Per-request SLOs** (`p99{request=put} < 60ms`) are *not evaluated* yet: the results model does not measure
//!   requests by name. Their verdicts pass with the note "per-request results are not measured yet", so a spec
//!   that uses them runs today and gates once they are measured.
//! - A metric that cannot be measured (a latency with no completed request, an error rate with no request at
//!   all) **fails** a gated SLO: a phase that measured nothing has not shown that it meets its objective.
//! - In a **`gate: false`** scenario (warmup, primer), every verdict passes and its note says "not gated" and,
//!   when the threshold was missed, that it would have failed.
//!
//! So `Verdict::passed` is the gate's view: `false` exactly when the verdict fails the run.

use std::str::FromStr;

use loadgate_spec::{Metric, MetricKind, Slo, Threshold};

use crate::format;
use crate::model::{RunResults, ScenarioResult, Verdict};

/// The note on a verdict of a `gate: false` scenario.
pub const NOTE_NOT_GATED: &str = "not gated (gate: false)";
/// The note on a per-request SLO.
pub const NOTE_PER_REQUEST: &str = "not evaluated: per-request results are not measured yet";

/// Evaluates the SLOs of one scenario instance.
///
/// `baseline` is the instance of the same name in the baseline run, if there is one ([`baseline_for`]).
pub fn evaluate(slos: &[Slo], result: &ScenarioResult, baseline: Option<&ScenarioResult>) -> Vec<Verdict> {
    slos.iter().map(|slo| evaluate_one(slo, result, baseline)).collect()
}

/// The scenario instance of the baseline run that a result compares with: the one with the same name
/// (`plaintext[connections=256]`).
pub fn baseline_for<'a>(baseline: &'a RunResults, result: &ScenarioResult) -> Option<&'a ScenarioResult> {
    baseline.scenarios.iter().find(|b| b.name == result.name)
}

/// The value of a metric in a scenario, in the metric's unit: microseconds for latencies, requests per second,
/// a fraction for `error_rate`, a count otherwise. `None` when there is nothing to measure it on.
pub fn measure(metric: Metric, s: &ScenarioResult) -> Option<f64> {
    let h = &s.histograms.latency;
    match metric {
        Metric::Percentile(p) => (!h.is_empty()).then(|| h.value_at_quantile(p / 100.0) as f64),
        Metric::Max => (!h.is_empty()).then(|| h.max() as f64),
        Metric::Mean => (!h.is_empty()).then(|| h.mean()),
        Metric::Throughput => s.throughput.is_finite().then_some(s.throughput),
        Metric::ErrorRate => error_rate(s),
        Metric::Errors => Some(s.errors.total() as f64),
        Metric::Non2xx => Some(s.status.non_2xx() as f64),
        Metric::Timeouts => Some(s.errors.timeout as f64),
    }
}

/// `(errors + non-2xx) / (completed + errors)`; `None` when no request completed or failed.
pub fn error_rate(s: &ScenarioResult) -> Option<f64> {
    let errors = s.errors.total();
    let denominator = s.requests.completed.saturating_add(errors);
    (denominator > 0).then(|| (errors.saturating_add(s.status.non_2xx())) as f64 / denominator as f64)
}

/// Formats a value of a metric with its unit: `83.20ms`, `94,737/s`, `0.12%`, `3`.
pub fn format_value(kind: MetricKind, value: f64) -> String {
    match kind {
        MetricKind::Latency => format::latency_us(value),
        MetricKind::Rate => format::rate(value),
        MetricKind::Ratio => format::ratio(value),
        MetricKind::Count => {
            if value.is_finite() && value >= 0.0 {
                format::count(value.round() as u64)
            } else {
                "n/a".to_owned()
            }
        }
    }
}

fn threshold_value(slo: &Slo) -> Option<f64> {
    let kind = slo.metric.kind();
    match (slo.threshold, kind) {
        (Threshold::Latency(d), MetricKind::Latency) => Some(d.as_secs_f64() * 1e6),
        (Threshold::Rate(r), MetricKind::Rate) => Some(r.per_sec()),
        (Threshold::Ratio(p), MetricKind::Ratio) => Some(p.0),
        (Threshold::Count(n), MetricKind::Count) => Some(n as f64),
        _ => None,
    }
}

fn evaluate_one(slo: &Slo, result: &ScenarioResult, baseline: Option<&ScenarioResult>) -> Verdict {
    let kind = slo.metric.kind();
    let observed = measure(slo.metric, result);
    let mut verdict = Verdict {
        slo: slo.to_string(),
        metric: slo.metric.to_string(),
        comparison: slo.comparison.as_str().to_owned(),
        threshold: slo.threshold.to_string(),
        threshold_value: 0.0,
        observed,
        observed_text: observed.map_or_else(|| "n/a".to_owned(), |v| format_value(kind, v)),
        passed: true,
        note: None,
    };

    let threshold = match slo.threshold {
        Threshold::Baseline { factor } => match baseline {
            None => Err("not evaluated: no baseline to compare with (run with --baseline FILE)".to_owned()),
            Some(b) => match measure(slo.metric, b) {
                Some(v) => Ok(v * factor),
                None => Err(format!("not evaluated: the baseline measured no {}", slo.metric)),
            },
        },
        _ => threshold_value(slo)
            .ok_or_else(|| format!("the threshold `{}` is not a value for `{}`", slo.threshold, slo.metric)),
    };

    if slo.request.is_some() {
        verdict.observed = None;
        verdict.observed_text = "n/a".to_owned();
        if let Ok(t) = threshold {
            verdict.threshold_value = t;
        }
        verdict.note = Some(NOTE_PER_REQUEST.to_owned());
    } else {
        match threshold {
            Err(why) if why.starts_with("not evaluated") => verdict.note = Some(why),
            Err(why) => {
                verdict.passed = false;
                verdict.note = Some(why);
            }
            Ok(t) => {
                verdict.threshold_value = t;
                match observed {
                    Some(v) => verdict.passed = slo.comparison.holds(v, t),
                    None => {
                        verdict.passed = false;
                        verdict.note = Some(format!("nothing measured: {} needs completed requests", slo.metric));
                    }
                }
            }
        }
    }

    if !result.gate {
        let would_fail = !verdict.passed;
        verdict.passed = true;
        let mut note = NOTE_NOT_GATED.to_owned();
        if would_fail {
            note.push_str("; would have failed");
        }
        if let Some(previous) = verdict.note.take() {
            note.push_str("; ");
            note.push_str(&previous);
        }
        verdict.note = Some(note);
    }
    verdict
}

impl Verdict {
    /// Whether the SLO was compared at all (it is not for per-request SLOs and missing baselines).
    pub fn evaluated(&self) -> bool {
        !self.note.as_deref().is_some_and(|n| n.contains("not evaluated"))
    }

    /// The metric as the SLO names it, with its filter: `p99`, `p99{request=put}`.
    pub fn metric_label(&self) -> &str {
        self.slo.split_whitespace().next().unwrap_or(&self.metric)
    }

    /// The threshold for people: `< 100ms`, or `<= baseline * 1.1 (= 110.0ms)` for a baseline.
    pub fn threshold_text(&self) -> String {
        if self.threshold.starts_with("baseline") && self.evaluated() && self.threshold_value > 0.0 {
            let resolved = Metric::from_str(&self.metric)
                .map(|m| format_value(m.kind(), self.threshold_value))
                .unwrap_or_else(|()| format::number(self.threshold_value));
            format!("{} {} (= {resolved})", self.comparison, self.threshold)
        } else {
            format!("{} {}", self.comparison, self.threshold)
        }
    }

    /// Observed against threshold, as a failure message: `p99 was 143.2ms, threshold < 100ms`.
    pub fn explain(&self) -> String {
        let mut text =
            format!("{} was {}, threshold {}", self.metric_label(), self.observed_text, self.threshold_text());
        if let Some(note) = &self.note {
            text.push_str(" (");
            text.push_str(note);
            text.push(')');
        }
        text
    }
}
