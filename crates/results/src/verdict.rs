//! SLO evaluation: every SLO of a scenario instance becomes a [`Verdict`].
//!
//! The rules, in one place:
//!
//! - **Latency metrics** (`p50` ... `p99.99`, `max`, `mean`) are read from the full-resolution latency histogram
//!   (`histograms.latency`, measured from the intended send time), never averaged across workers or seconds.
//!   Percentiles are the histogram's value at that quantile (to its 3 significant digits).
//! - **Connect metrics** (`connect_p99`, `connect_max`, `connect_mean`) are read the same way from
//!   `histograms.connect_time`: the time from starting a connect to the socket being writable, per connection
//!   opened (reconnects included). Any percentile above 0 and at most 100 can be asked (`p98`, `p99.95`).
//! - **`throughput`** is [`ScenarioResult::throughput`]: completed requests per second over the phase.
//! - **`error_rate`** is `(errors + non-2xx responses) / (completed responses + errors)`, where `errors` counts
//!   every request that failed without a complete response (connect, read, write, timeout, protocol). Requests
//!   still in flight when the phase ended are in neither term.
//! - **`errors`**, **`non_2xx`** and **`timeouts`** are counts over the phase.
//! - **Baseline thresholds** (`p99 <= baseline * 1.10`) take the same metric from the baseline's scenario instance
//!   of the same name ([`baseline_for`]), times the factor. Without a baseline (no `--baseline`, or the baseline has
//!   no such instance) the SLO is *not evaluated*: its verdict passes with a note, so a first run on a new branch
//!   does not fail the gate for want of something to compare with.
//! - **Per-request SLOs** (`p99{request=put} < 60ms`) take the same metrics from the named request's breakdown
//!   in [`ScenarioResult::by_request`] (its histogram, throughput, counts), and a baseline threshold from the
//!   baseline's breakdown of that name. When the run has no breakdown of that name (no mix was measured) the SLO
//!   is *not evaluated*: its verdict passes with the note [`NOTE_PER_REQUEST`].
//! - A metric that cannot be measured (a latency with no completed request, an error rate with no request at
//!   all) **fails** a gated SLO: a phase that measured nothing has not shown that it meets its objective.
//! - In a **`gate: false`** scenario (warmup, primer), every verdict passes and its note says "not gated" and,
//!   when the threshold was missed, that it would have failed.
//!
//! So `Verdict::passed` is the gate's view: `false` exactly when the verdict fails the run.

use std::str::FromStr;

use loadgate_model::{Metric, MetricKind, Slo, Threshold};

use crate::format;
use crate::model::{ErrorCounts, RequestBreakdown, RequestCounts, RunResults, ScenarioResult, StatusCounts, Verdict};

/// The note on a verdict of a `gate: false` scenario.
pub const NOTE_NOT_GATED: &str = "not gated (gate: false)";
/// The note on a per-request SLO whose request has no measurements in the run.
pub const NOTE_PER_REQUEST: &str = "not evaluated: the run has no results for this request";

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
    if metric == Metric::Capacity {
        return s.capacity.as_ref().and_then(|c| c.capacity);
    }
    measure_parts(
        metric,
        &s.histograms.latency,
        Some(&s.histograms.connect_time),
        s.throughput,
        &s.requests,
        &s.status,
        &s.errors,
    )
}

/// The value of a metric for one named request of a mix, by the same rules as [`measure`]. Connect times
/// belong to connections, not to requests: `None`.
pub fn measure_request(metric: Metric, r: &RequestBreakdown) -> Option<f64> {
    measure_parts(metric, &r.histogram, None, r.throughput, &r.requests, &r.status, &r.errors)
}

fn measure_parts(
    metric: Metric,
    h: &hdrhistogram::Histogram<u64>,
    connect: Option<&hdrhistogram::Histogram<u64>>,
    throughput: f64,
    requests: &RequestCounts,
    status: &StatusCounts,
    errors: &ErrorCounts,
) -> Option<f64> {
    match metric {
        Metric::Percentile(p) => (!h.is_empty()).then(|| crate::value_at_percentile(h, p) as f64),
        Metric::Max => (!h.is_empty()).then(|| h.max() as f64),
        Metric::Mean => (!h.is_empty()).then(|| h.mean()),
        Metric::ConnectPercentile(p) => {
            connect.filter(|c| !c.is_empty()).map(|c| crate::value_at_percentile(c, p) as f64)
        }
        Metric::ConnectMax => connect.filter(|c| !c.is_empty()).map(|c| c.max() as f64),
        Metric::ConnectMean => connect.filter(|c| !c.is_empty()).map(|c| c.mean()),
        Metric::Throughput => throughput.is_finite().then_some(throughput),
        Metric::ErrorRate => rate_of_errors(requests, status, errors),
        Metric::Errors => Some(errors.total() as f64),
        Metric::Non2xx => Some(status.non_2xx() as f64),
        Metric::Timeouts => Some(errors.timeout as f64),
        // A capacity belongs to a search, never to a request or its parts.
        Metric::Capacity => None,
        // Checks are measured from the result's check counts (`checks`), not from these parts.
        Metric::Checks | Metric::CheckFailures => None,
    }
}

/// `(errors + non-2xx) / (completed + errors)`; `None` when no request completed or failed.
pub fn error_rate(s: &ScenarioResult) -> Option<f64> {
    rate_of_errors(&s.requests, &s.status, &s.errors)
}

fn rate_of_errors(requests: &RequestCounts, status: &StatusCounts, errors: &ErrorCounts) -> Option<f64> {
    let errors = errors.total();
    let denominator = requests.completed.saturating_add(errors);
    (denominator > 0).then(|| (errors.saturating_add(status.non_2xx())) as f64 / denominator as f64)
}

/// The named request's breakdown in a result.
fn breakdown<'a>(s: &'a ScenarioResult, name: &str) -> Option<&'a RequestBreakdown> {
    s.by_request.iter().find(|r| r.name == name)
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
    threshold_number(slo.metric, slo.threshold)
}

/// A threshold in its metric's unit (microseconds, requests/s, fraction, count); `None` for a baseline or a
/// threshold of another kind.
pub(crate) fn threshold_number(metric: Metric, threshold: Threshold) -> Option<f64> {
    let kind = metric.kind();
    match (threshold, kind) {
        (Threshold::Latency(d), MetricKind::Latency) => Some(d.as_secs_f64() * 1e6),
        (Threshold::Rate(r), MetricKind::Rate) => Some(r.per_sec()),
        (Threshold::Ratio(p), MetricKind::Ratio) => Some(p.0),
        (Threshold::Count(n), MetricKind::Count) => Some(n as f64),
        _ => None,
    }
}

fn evaluate_one(slo: &Slo, result: &ScenarioResult, baseline: Option<&ScenarioResult>) -> Verdict {
    let kind = slo.metric.kind();
    // A per-request SLO reads the named request's breakdown, here and in the baseline.
    let request = slo.request.as_deref().map(|name| (name, breakdown(result, name)));
    let observed = match request {
        None => measure(slo.metric, result),
        Some((_, Some(r))) => measure_request(slo.metric, r),
        Some((_, None)) => None,
    };
    let measure_baseline = |b: &ScenarioResult| match request {
        None => measure(slo.metric, b),
        Some((name, _)) => breakdown(b, name).and_then(|r| measure_request(slo.metric, r)),
    };
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
        statistics: None,
    };

    let threshold = match slo.threshold {
        Threshold::Baseline { factor } => match baseline {
            None => Err("not evaluated: no baseline to compare with (run with --baseline FILE)".to_owned()),
            Some(b) => match measure_baseline(b) {
                Some(v) => Ok(v * factor),
                None => Err(format!("not evaluated: the baseline measured no {}", slo.metric)),
            },
        },
        _ => threshold_value(slo)
            .ok_or_else(|| format!("the threshold `{}` is not a value for `{}`", slo.threshold, slo.metric)),
    };

    if matches!(request, Some((_, None))) {
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
                        verdict.note = Some(if slo.metric == Metric::Capacity {
                            match &result.capacity {
                                Some(c) => format!("no rate held: {}", c.stop_reason),
                                None => "nothing measured: the scenario ran no capacity search".to_owned(),
                            }
                        } else if slo.metric.is_connect() {
                            format!("nothing measured: {} needs connections that opened", slo.metric)
                        } else {
                            format!("nothing measured: {} needs completed requests", slo.metric)
                        });
                    }
                }
            }
        }
    }

    // A capacity reads as the search found it: `at least 200,000/s` past the upper bound, `below 1,000/s`.
    if let (Metric::Capacity, None, Some(c)) = (slo.metric, &slo.request, &result.capacity) {
        verdict.observed_text = c.describe();
    }
    if !result.gate {
        verdict.ungate();
    }
    verdict
}

impl Verdict {
    /// Makes this a verdict of something not gated (`gate: false`): it passes, and its note says so, whether it
    /// would have failed, and what it said before.
    pub fn ungate(&mut self) {
        let mut note = NOTE_NOT_GATED.to_owned();
        if !self.passed {
            note.push_str("; would have failed");
        }
        if let Some(previous) = self.note.take() {
            note.push_str("; ");
            note.push_str(&previous);
        }
        self.passed = true;
        self.note = Some(note);
    }

    /// Whether the SLO was compared at all (it is not for a request the run did not measure, nor without a
    /// baseline to compare with).
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture::{exponential_histogram, sample_run};
    use crate::model::LatencySummary;

    fn per_request(text: &str, name: &str) -> Slo {
        let mut slo = Slo::parse(text).unwrap();
        slo.request = Some(name.to_owned());
        slo
    }

    fn breakdown(name: &str, count: u64, base_us: f64, errors: u64) -> RequestBreakdown {
        let histogram = exponential_histogram(count, base_us, base_us / 10.0);
        RequestBreakdown {
            name: name.to_owned(),
            requests: RequestCounts { sent: count + errors, completed: count, incomplete: 0, unsent: 0 },
            status: StatusCounts { success: count, ..Default::default() },
            errors: ErrorCounts { timeout: errors, ..Default::default() },
            throughput: count as f64 / 10.0,
            latency: LatencySummary::from_histogram(&histogram),
            histogram,
            checked: Default::default(),
        }
    }

    #[test]
    fn per_request_slos_read_their_breakdown() {
        let run = sample_run();
        let mut s = run.scenarios[4].clone();
        s.by_request = vec![breakdown("put", 1000, 70_000.0, 10), breakdown("get", 9000, 1_000.0, 0)];
        let put = &s.by_request[0];
        let v = evaluate(
            &[
                per_request("p99 < 60ms", "put"),
                per_request("p99 < 60ms", "get"),
                per_request("throughput >= 500/s", "get"),
                per_request("timeouts == 0", "put"),
                per_request("error_rate < 0.1%", "get"),
                per_request("p99 < 60ms", "delete"),
            ],
            &s,
            None,
        );
        assert!(!v[0].passed, "{:#?}", v[0]);
        assert_eq!(v[0].observed, Some(put.histogram.value_at_quantile(0.99) as f64));
        assert!(v[0].note.is_none() && v[0].evaluated());
        assert!(v[0].explain().starts_with("p99{request=put} was "), "{}", v[0].explain());
        assert!(v[1].passed && v[1].observed.is_some_and(|p| p < 60_000.0), "{:#?}", v[1]);
        assert!(v[2].passed && v[2].observed == Some(900.0), "{:#?}", v[2]);
        assert!(!v[3].passed && v[3].observed == Some(10.0), "{:#?}", v[3]);
        assert!(v[4].passed && v[4].observed == Some(0.0), "{:#?}", v[4]);
        // A request the run did not measure stays unevaluated.
        assert!(v[5].passed && v[5].observed.is_none() && !v[5].evaluated());
        assert_eq!(v[5].note.as_deref(), Some(NOTE_PER_REQUEST));

        // Baselines compare the same request of the baseline run.
        let mut base = s.clone();
        base.by_request[0] = breakdown("put", 1000, 50_000.0, 0);
        let slo = per_request("p99 <= baseline * 1.10", "put");
        let v = &evaluate(std::slice::from_ref(&slo), &s, Some(&base))[0];
        let expected = base.by_request[0].histogram.value_at_quantile(0.99) as f64 * 1.1;
        assert!(!v.passed && (v.threshold_value - expected).abs() < 1e-6, "{v:#?}");
        let v = &evaluate(std::slice::from_ref(&slo), &s, Some(&run.scenarios[4]))[0];
        assert!(v.passed && !v.evaluated(), "the baseline has no `put`: {v:#?}");
    }
}
