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
//! - **`throughput`** is the result's [`throughput`](crate::model::PhaseMeasurement::throughput): completed requests
//!   per second over the phase.
//! - **`error_rate`** is `(errors + non-2xx responses) / (completed responses + errors)`, where `errors` counts
//!   every request that failed without a complete response (connect, read, write, timeout, protocol). Requests
//!   still in flight when the phase ended are in neither term.
//!   With checks (`check:`), a non-2xx response a `status` check accepted is not failed, and under
//!   `failed_checks: errors` (the default) a response that failed a check is: the numerator is `errors +
//!   non-2xx - accepted non-2xx + failed checks` (per request too, from the request's own counts).
//! - **`errors`**, **`non_2xx`** and **`timeouts`** are counts over the phase.
//! - **`checks`** is the check evaluations that held over all evaluations, and **`check_failures`** the ones that
//!   failed, over the checks the filter selects (`{request=NAME}`: the request's checks, a single request's
//!   being `request`; `{check=NAME}`: every check of that name). With no evaluation selected the value is
//!   `None`, and a gated SLO **fails** ("nothing measured: no response was checked by `NAME`"): no samples never
//!   pass (k6#4283).
//! - **Baseline thresholds** (`p99 <= baseline * 1.10`) take the same metric from the baseline's scenario instance
//!   of the same name ([`baseline_for`]), times the factor. Without a baseline (no `--baseline`, or the baseline has
//!   no such instance) the SLO is *not evaluated*: its verdict passes with a note, so a first run on a new branch
//!   does not fail the gate for want of something to compare with.
//! - **Per-request SLOs** (`p99{request=put} < 60ms`) take the same metrics from the named request's breakdown
//!   in [`by_request`](crate::model::PhaseMeasurement::by_request) (its histogram, throughput, counts), and a
//!   baseline threshold from the baseline's breakdown of that name. When the run has no breakdown of that name (no mix was measured) the SLO
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
use crate::model::{
    CheckStats, CheckedResponses, ErrorCounts, FailedChecks, RequestBreakdown, RequestCounts, RunResults,
    ScenarioResult, StatusCounts, Verdict,
};

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
    match metric {
        Metric::Capacity => s.capacity.as_ref().and_then(|c| c.capacity),
        Metric::Checks | Metric::CheckFailures => measure_checks(metric, &s.checks, None, None),
        Metric::TargetCpuPerRequest => s.target_cpu.as_ref().and_then(|c| c.per_request_us()),
        // A replay's schedule error is its send lag (the intended time is the log's start at the speed).
        Metric::ScheduleErrorPercentile(p) => {
            let h = s.replay.as_ref().map(|_| &s.histograms.send_lag).filter(|h| !h.is_empty());
            h.map(|h| crate::value_at_percentile(h, p) as f64)
        }
        Metric::ScheduleErrorMax => {
            s.replay.as_ref().map(|_| &s.histograms.send_lag).filter(|h| !h.is_empty()).map(|h| h.max() as f64)
        }
        _ => measure_parts(
            metric,
            &s.histograms.latency,
            Some(&s.histograms.connect_time),
            s.throughput,
            Counts { requests: &s.requests, status: &s.status, errors: &s.errors, checked: &s.checked },
            s.failed_checks,
        ),
    }
}

/// The value of a metric for one named request of a mix, by the same rules as [`measure`]. Connect times
/// belong to connections, not to requests: `None`. `failed_checks` is the instance's.
pub fn measure_request(metric: Metric, r: &RequestBreakdown, failed_checks: FailedChecks) -> Option<f64> {
    measure_parts(
        metric,
        &r.histogram,
        None,
        r.throughput,
        Counts { requests: &r.requests, status: &r.status, errors: &r.errors, checked: &r.checked },
        failed_checks,
    )
}

/// `checks` (evaluations that held over all) or `check_failures` (evaluations that failed) over the checks that
/// `request` and `check` select (every one when `None`); `None` when the selection evaluated nothing.
pub fn measure_checks(
    metric: Metric,
    checks: &[CheckStats],
    request: Option<&str>,
    check: Option<&str>,
) -> Option<f64> {
    let (passed, failed) = checks
        .iter()
        .filter(|c| request.is_none_or(|r| c.request == r) && check.is_none_or(|n| c.check == n))
        .fold((0u64, 0u64), |(p, f), c| (p.saturating_add(c.passed), f.saturating_add(c.failed)));
    let evaluated = passed.saturating_add(failed);
    if evaluated == 0 {
        return None;
    }
    match metric {
        Metric::Checks => Some(passed as f64 / evaluated as f64),
        Metric::CheckFailures => Some(failed as f64),
        _ => None,
    }
}

/// The counts a request's or an instance's error rate is made of.
struct Counts<'a> {
    requests: &'a RequestCounts,
    status: &'a StatusCounts,
    errors: &'a ErrorCounts,
    checked: &'a CheckedResponses,
}

fn measure_parts(
    metric: Metric,
    h: &hdrhistogram::Histogram<u64>,
    connect: Option<&hdrhistogram::Histogram<u64>>,
    throughput: f64,
    counts: Counts<'_>,
    failed_checks: FailedChecks,
) -> Option<f64> {
    let Counts { requests, status, errors, checked } = counts;
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
        Metric::ErrorRate => rate_of_errors(requests, status, errors, checked, failed_checks),
        Metric::Errors => Some(errors.total() as f64),
        Metric::Non2xx => Some(status.non_2xx() as f64),
        Metric::Timeouts => Some(errors.timeout as f64),
        // A capacity belongs to a search, never to a request or its parts.
        Metric::Capacity => None,
        // Checks are measured from the result's check counts (`checks`), not from these parts.
        Metric::Checks | Metric::CheckFailures => None,
        // The target's CPU belongs to the whole instance: a request of a mix has no share of its own.
        Metric::TargetCpuPerRequest => None,
        // A replay's schedule error belongs to the whole instance (a replay has no named requests).
        Metric::ScheduleErrorPercentile(_) | Metric::ScheduleErrorMax => None,
    }
}

/// `(errors + non-2xx - non-2xx accepted by a status check + responses that failed a check, under
/// failed_checks: errors) / (completed + errors)`; `None` when no request completed or failed.
pub fn error_rate(s: &ScenarioResult) -> Option<f64> {
    rate_of_errors(&s.requests, &s.status, &s.errors, &s.checked, s.failed_checks)
}

fn rate_of_errors(
    requests: &RequestCounts,
    status: &StatusCounts,
    errors: &ErrorCounts,
    checked: &CheckedResponses,
    failed_checks: FailedChecks,
) -> Option<f64> {
    let errors = errors.total();
    let denominator = requests.completed.saturating_add(errors);
    let failed_checks = match failed_checks {
        FailedChecks::Errors => checked.failed,
        FailedChecks::Separate => 0,
    };
    let failed =
        errors.saturating_add(status.non_2xx().saturating_sub(checked.accepted_non_2xx)).saturating_add(failed_checks);
    (denominator > 0).then(|| failed as f64 / denominator as f64)
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
    let on_checks = is_check_metric(slo.metric);
    // A per-request SLO reads the named request's breakdown, here and in the baseline; a check metric reads the
    // checks its filter selects instead (a single request has no breakdown, and its checks are `request`'s).
    let request = slo.request.as_deref().filter(|_| !on_checks).map(|name| (name, breakdown(result, name)));
    let measure_in =
        |s: &ScenarioResult| measure_checks(slo.metric, &s.checks, slo.request.as_deref(), slo.check.as_deref());
    let observed = match request {
        _ if on_checks => measure_in(result),
        None => measure(slo.metric, result),
        Some((_, Some(r))) => measure_request(slo.metric, r, result.failed_checks),
        Some((_, None)) => None,
    };
    let measure_baseline = |b: &ScenarioResult| match request {
        _ if on_checks => measure_in(b),
        None => measure(slo.metric, b),
        Some((name, _)) => breakdown(b, name).and_then(|r| measure_request(slo.metric, r, b.failed_checks)),
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
                        } else if on_checks {
                            nothing_checked(slo)
                        } else if slo.metric == Metric::TargetCpuPerRequest {
                            "nothing measured: target_cpu_per_request needs the CPU time of a server loadgate \
                             started (a target process whose own tree answers the requests)"
                                .to_owned()
                        } else if slo.metric.is_schedule_error() {
                            format!("nothing measured: {} needs a replay load that sent requests", slo.metric)
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

/// Whether a metric reads the check counts (`checks`, `check_failures`).
pub fn is_check_metric(metric: Metric) -> bool {
    matches!(metric, Metric::Checks | Metric::CheckFailures)
}

/// The note of a check SLO whose filter selected no evaluation: `nothing measured: no response was checked by
/// `token``.
fn nothing_checked(slo: &Slo) -> String {
    match (slo.request.as_deref(), slo.check.as_deref()) {
        (None, Some(c)) => format!("nothing measured: no response was checked by `{c}`"),
        (Some(r), Some(c)) => format!("nothing measured: no response of `{r}` was checked by `{c}`"),
        (Some(r), None) => format!("nothing measured: no response of `{r}` was checked"),
        (None, None) => "nothing measured: no response was checked".to_owned(),
    }
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

    /// What this verdict alone makes of a run: passed, an SLO failed, or inconclusive (a check over repetitions
    /// whose interval straddles the limit).
    pub fn outcome(&self) -> crate::model::OutcomeStatus {
        use crate::model::OutcomeStatus;
        let inconclusive =
            self.statistics.as_ref().is_some_and(|s| s.status == crate::model::StatisticalStatus::Inconclusive);
        match (self.passed, inconclusive) {
            (true, _) => OutcomeStatus::Passed,
            (false, true) => OutcomeStatus::Inconclusive,
            (false, false) => OutcomeStatus::SloFailed,
        }
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
    use crate::model::{CheckStats, CheckedResponses, LatencySummary};

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

    fn with_checks(failed_checks: FailedChecks) -> ScenarioResult {
        let mut s = sample_run().scenarios[1].clone();
        s.requests = RequestCounts { sent: 1000, completed: 1000, incomplete: 0, unsent: 0 };
        s.status = StatusCounts { success: 990, client_error: 10, ..Default::default() };
        s.errors = ErrorCounts::default();
        s.failed_checks = failed_checks;
        // 10 404s a status check accepted, 20 2xx responses that failed a check.
        s.checked = CheckedResponses { responses: 1000, failed: 20, accepted_non_2xx: 10 };
        let stats = |request: &str, check: &str, passed: u64, failed: u64| CheckStats {
            request: request.to_owned(),
            check: check.to_owned(),
            expects: String::new(),
            passed,
            failed,
            examples: Vec::new(),
        };
        s.checks = vec![
            stats("login", "status", 500, 0),
            stats("login", "capture:token", 480, 20),
            stats("me", "status", 500, 0),
        ];
        s
    }

    fn slo(text: &str) -> Slo {
        Slo::parse(text).unwrap()
    }

    #[test]
    fn failed_checks_count_in_error_rate_unless_separate() {
        let s = with_checks(FailedChecks::Errors);
        assert_eq!(error_rate(&s), Some(0.02), "10 accepted 404s are not failed, 20 failed checks are");
        let s = with_checks(FailedChecks::Separate);
        assert_eq!(error_rate(&s), Some(0.0));
        // Without checks, today's rule.
        let mut s = with_checks(FailedChecks::Errors);
        s.checked = CheckedResponses::default();
        assert_eq!(error_rate(&s), Some(0.01));
        // Per request, from the request's own counts.
        let mut s = with_checks(FailedChecks::Errors);
        let mut b = breakdown("login", 100, 1_000.0, 0);
        b.checked = CheckedResponses { responses: 100, failed: 5, accepted_non_2xx: 0 };
        s.by_request = vec![b];
        let v = evaluate(&[per_request("error_rate < 1%", "login")], &s, None);
        assert_eq!(v[0].observed, Some(0.05));
        s.failed_checks = FailedChecks::Separate;
        let v = evaluate(&[per_request("error_rate < 1%", "login")], &s, None);
        assert_eq!(v[0].observed, Some(0.0));
    }

    #[test]
    fn check_slos_read_the_checks_their_filter_selects() {
        let s = with_checks(FailedChecks::Errors);
        let v = evaluate(
            &[
                slo("checks > 98%"),
                slo("check_failures == 0"),
                slo("check_failures{check=status} == 0"),
                slo("checks{request=login} >= 98%"),
                slo("checks{request=login, check=capture:token} == 100%"),
                slo("checks{request=me} == 100%"),
            ],
            &s,
            None,
        );
        assert_eq!(v[0].observed, Some(1480.0 / 1500.0));
        assert!(v[0].passed, "{:#?}", v[0]);
        assert!(!v[1].passed && v[1].observed == Some(20.0), "{:#?}", v[1]);
        assert!(v[2].passed && v[2].observed == Some(0.0), "{:#?}", v[2]);
        assert!(v[3].passed && v[3].observed == Some(0.98), "{:#?}", v[3]);
        assert!(!v[4].passed && v[4].observed == Some(0.96), "{:#?}", v[4]);
        assert!(v[5].passed && v[5].observed == Some(1.0), "{:#?}", v[5]);
        assert_eq!(measure(Metric::Checks, &s), Some(1480.0 / 1500.0));
    }

    /// grafana/k6#4283: a check SLO with nothing to judge never passes.
    #[test]
    fn no_evaluation_never_passes_a_check_slo() {
        let s = with_checks(FailedChecks::Errors);
        let v = evaluate(
            &[slo("check_failures{check=token} == 0"), slo("checks{request=logout} == 100%"), slo("checks == 100%")],
            &s,
            None,
        );
        assert!(!v[0].passed && v[0].observed.is_none(), "{:#?}", v[0]);
        assert_eq!(v[0].note.as_deref(), Some("nothing measured: no response was checked by `token`"));
        assert!(v[0].evaluated());
        assert_eq!(v[1].note.as_deref(), Some("nothing measured: no response of `logout` was checked"));
        let mut none = s.clone();
        none.checks.clear();
        let v = evaluate(&[slo("checks == 100%")], &none, None);
        assert!(!v[0].passed && v[0].note.as_deref() == Some("nothing measured: no response was checked"));
        // The same over repetitions: judged on the merge.
        assert!(!loadgate_model::judged_over_repetitions(&slo("checks > 99%")));
        assert!(!loadgate_model::judged_over_repetitions(&slo("check_failures < 10")));
        let merged = crate::gate::judge(
            &[slo("check_failures{check=token} == 0")],
            &[none.clone(), none],
            &[1, 2],
            crate::gate::Baseline::None,
            0.95,
        )
        .unwrap();
        assert!(!merged.judged.verdicts[0].passed, "{:#?}", merged.judged.verdicts[0]);
    }

    #[test]
    fn failed_checks_no_slo_reads_are_a_warning() {
        let mut s = with_checks(FailedChecks::Errors);
        crate::checks::warn_ungated(&mut s, &[slo("p99 < 10ms")]);
        let w: Vec<&str> = s
            .validity
            .warnings
            .iter()
            .filter(|w| w.kind == "checks_failed_ungated")
            .map(|w| w.message.as_str())
            .collect();
        assert_eq!(w, ["`login`: 20 of 500 responses failed `capture:token`, and no SLO gates checks"]);
        // Again: replaced, not added.
        crate::checks::warn_ungated(&mut s, &[slo("p99 < 10ms")]);
        assert_eq!(s.validity.warnings.iter().filter(|w| w.kind == "checks_failed_ungated").count(), 1);
        // Merged repetitions carry it with the merged counts.
        let merged = crate::merge_scenarios(&[s.clone(), s.clone()]).unwrap();
        let w: Vec<&str> = merged
            .validity
            .warnings
            .iter()
            .filter(|w| w.kind == "checks_failed_ungated")
            .map(|w| w.message.as_str())
            .collect();
        assert_eq!(w, ["`login`: 40 of 1,000 responses failed `capture:token`, and no SLO gates checks"]);
        assert_eq!(merged.checked.failed, 40);
        assert_eq!((merged.checks[1].passed, merged.checks[1].failed), (960, 40));
        let mut part = s.clone();
        let mut b = breakdown("login", 100, 1_000.0, 0);
        b.checked = CheckedResponses { responses: 100, failed: 5, accepted_non_2xx: 1 };
        part.by_request = vec![b];
        let merged = crate::merge_concurrent(&[part.clone(), part]).unwrap();
        assert_eq!(merged.by_request[0].checked, CheckedResponses { responses: 200, failed: 10, accepted_non_2xx: 2 });
        // An error_rate SLO gates them under `errors`, not under `separate`.
        crate::checks::warn_ungated(&mut s, &[slo("error_rate < 1%")]);
        assert!(s.validity.warnings.iter().all(|w| w.kind != "checks_failed_ungated"));
        s.failed_checks = FailedChecks::Separate;
        crate::checks::warn_ungated(&mut s, &[slo("error_rate < 1%")]);
        assert!(s.validity.warnings.iter().any(|w| w.kind == "checks_failed_ungated"));
        crate::checks::warn_ungated(&mut s, &[slo("check_failures == 0")]);
        assert!(s.validity.warnings.iter().all(|w| w.kind != "checks_failed_ungated"));
    }
}
