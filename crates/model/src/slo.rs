//! Service level objectives: `p99 < 100ms`, `throughput >= 100000/s`, `error_rate < 0.1%`,
//! `p99 <= baseline * 1.10`, `p99{request=put} < 60ms`, `connect_p99 < 5ms`, `p99.95 < 250ms`.
//!
//! An SLO is parsed once, at validation time, into a typed value; the text the user wrote is kept for reports.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::units::{trim_float, Duration, Percent, Rate};

/// A measured quantity an SLO can bound.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Metric {
    /// A latency percentile, such as 99.9 for `p99.9`: any number above 0 and at most 100.
    Percentile(f64),
    /// The largest latency.
    Max,
    /// The mean latency.
    Mean,
    /// A percentile of the time to open a connection (`connect_p99`).
    ConnectPercentile(f64),
    /// The longest connect.
    ConnectMax,
    /// The mean connect time.
    ConnectMean,
    /// Completed requests per second.
    Throughput,
    /// Failed requests (errors of any kind, and non-2xx answers) over all requests.
    ErrorRate,
    /// Requests that failed with a connect, read, write, timeout or protocol error.
    Errors,
    /// Answers whose status was not 2xx.
    Non2xx,
    /// Requests that timed out.
    Timeouts,
    /// The highest rate at which a capacity search's steps held their SLOs (`load: capacity` only).
    Capacity,
    /// Check evaluations that held, over all evaluations (k6's `checks` rate); no evaluation never passes.
    Checks,
    /// Check evaluations that failed.
    CheckFailures,
    /// The CPU time the target's process tree spent per completed request, in microseconds, read from the
    /// kernel's per-thread accounting at each round's edges (`profile:` or a started target).
    TargetCpuPerRequest,
    /// A percentile of a replay's schedule error (`schedule_error_p99`): when each request left against when the
    /// log says it started, at the speed (the open loop's send lag; `load: replay` only).
    ScheduleErrorPercentile(f64),
    /// A replay's largest schedule error.
    ScheduleErrorMax,
}

/// The percentiles every summary carries; an SLO may name any other (`p98`, `p99.95`).
pub const PERCENTILES: [f64; 7] = [50.0, 75.0, 90.0, 95.0, 99.0, 99.9, 99.99];
const METRIC_NAMES: [&str; 27] = [
    "p50",
    "p75",
    "p90",
    "p95",
    "p99",
    "p99.9",
    "p99.99",
    "max",
    "mean",
    "connect_p50",
    "connect_p90",
    "connect_p99",
    "connect_p99.9",
    "connect_max",
    "connect_mean",
    "throughput",
    "error_rate",
    "errors",
    "non_2xx",
    "timeouts",
    "capacity",
    "checks",
    "check_failures",
    "target_cpu_per_request",
    "schedule_error_p50",
    "schedule_error_p99",
    "schedule_error_max",
];

/// What kind of threshold a metric takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricKind {
    Latency,
    Rate,
    Ratio,
    Count,
}

impl Metric {
    pub fn kind(self) -> MetricKind {
        match self {
            Metric::Percentile(_)
            | Metric::Max
            | Metric::Mean
            | Metric::ConnectPercentile(_)
            | Metric::ConnectMax
            | Metric::ConnectMean
            | Metric::TargetCpuPerRequest
            | Metric::ScheduleErrorPercentile(_)
            | Metric::ScheduleErrorMax => MetricKind::Latency,
            Metric::Throughput | Metric::Capacity => MetricKind::Rate,
            Metric::ErrorRate | Metric::Checks => MetricKind::Ratio,
            Metric::Errors | Metric::Non2xx | Metric::Timeouts | Metric::CheckFailures => MetricKind::Count,
        }
    }

    /// All metric names, for suggestions and documentation.
    pub fn names() -> &'static [&'static str] {
        &METRIC_NAMES
    }

    /// Metric names as an SLO writes them (`--metric p99,throughput`), each checked; blank ones skipped; the
    /// first unknown one named, with the nearest known name.
    pub fn parse_list(names: &[String]) -> Result<Vec<Metric>, String> {
        names
            .iter()
            .map(|n| n.trim())
            .filter(|n| !n.is_empty())
            .map(|n| {
                Metric::from_str(n).map_err(|()| {
                    let hint = crate::suggest::did_you_mean(n, Metric::names().iter().copied())
                        .map_or_else(String::new, |s| format!(" (did you mean `{s}`?)"));
                    format!("`{n}` is not a metric{hint}: use one an SLO can name ({})", Metric::names().join(", "))
                })
            })
            .collect()
    }

    /// Whether the metric is a replay's schedule error (`load: replay` only).
    pub fn is_schedule_error(self) -> bool {
        matches!(self, Metric::ScheduleErrorPercentile(_) | Metric::ScheduleErrorMax)
    }

    /// Whether the metric reads the connect-time histogram rather than the request latency's.
    pub fn is_connect(self) -> bool {
        matches!(self, Metric::ConnectPercentile(_) | Metric::ConnectMax | Metric::ConnectMean)
    }
}

/// `99.95` from `99.95`: a number above 0 and at most 100, written with digits and at most one point.
fn percentile_of(digits: &str) -> Result<f64, PercentileError> {
    let plain = !digits.is_empty()
        && digits.chars().all(|c| c.is_ascii_digit() || c == '.')
        && digits.matches('.').count() <= 1
        && !digits.starts_with('.')
        && !digits.ends_with('.');
    if !plain {
        return Err(PercentileError::NotANumber);
    }
    let p: f64 = digits.parse().map_err(|_| PercentileError::NotANumber)?;
    if p > 0.0 && p <= 100.0 {
        Ok(p)
    } else {
        Err(PercentileError::OutOfRange)
    }
}

enum PercentileError {
    NotANumber,
    OutOfRange,
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Metric::Percentile(p) => write!(f, "p{}", trim_float(*p)),
            Metric::Max => f.write_str("max"),
            Metric::Mean => f.write_str("mean"),
            Metric::ConnectPercentile(p) => write!(f, "connect_p{}", trim_float(*p)),
            Metric::ConnectMax => f.write_str("connect_max"),
            Metric::ConnectMean => f.write_str("connect_mean"),
            Metric::Throughput => f.write_str("throughput"),
            Metric::ErrorRate => f.write_str("error_rate"),
            Metric::Errors => f.write_str("errors"),
            Metric::Non2xx => f.write_str("non_2xx"),
            Metric::Timeouts => f.write_str("timeouts"),
            Metric::Capacity => f.write_str("capacity"),
            Metric::Checks => f.write_str("checks"),
            Metric::CheckFailures => f.write_str("check_failures"),
            Metric::TargetCpuPerRequest => f.write_str("target_cpu_per_request"),
            Metric::ScheduleErrorPercentile(p) => write!(f, "schedule_error_p{}", trim_float(*p)),
            Metric::ScheduleErrorMax => f.write_str("schedule_error_max"),
        }
    }
}

impl FromStr for Metric {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        Ok(match s {
            "max" => Metric::Max,
            "mean" | "avg" => Metric::Mean,
            "throughput" | "rps" => Metric::Throughput,
            "error_rate" => Metric::ErrorRate,
            "errors" => Metric::Errors,
            "non_2xx" => Metric::Non2xx,
            "timeouts" => Metric::Timeouts,
            "capacity" => Metric::Capacity,
            "checks" => Metric::Checks,
            "check_failures" => Metric::CheckFailures,
            "target_cpu_per_request" => Metric::TargetCpuPerRequest,
            "connect_max" => Metric::ConnectMax,
            "connect_mean" | "connect_avg" => Metric::ConnectMean,
            "schedule_error_max" => Metric::ScheduleErrorMax,
            _ => match (s.strip_prefix("connect_p"), s.strip_prefix("schedule_error_p")) {
                (Some(digits), _) => Metric::ConnectPercentile(percentile_of(digits).map_err(|_| ())?),
                (_, Some(digits)) => Metric::ScheduleErrorPercentile(percentile_of(digits).map_err(|_| ())?),
                _ => Metric::Percentile(percentile_of(s.strip_prefix('p').ok_or(())?).map_err(|_| ())?),
            },
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Comparison {
    #[serde(rename = "<")]
    Lt,
    #[serde(rename = "<=")]
    Le,
    #[serde(rename = ">")]
    Gt,
    #[serde(rename = ">=")]
    Ge,
    #[serde(rename = "==")]
    Eq,
}

impl Comparison {
    pub fn holds(self, observed: f64, threshold: f64) -> bool {
        match self {
            Comparison::Lt => observed < threshold,
            Comparison::Le => observed <= threshold,
            Comparison::Gt => observed > threshold,
            Comparison::Ge => observed >= threshold,
            Comparison::Eq => observed == threshold,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Comparison::Lt => "<",
            Comparison::Le => "<=",
            Comparison::Gt => ">",
            Comparison::Ge => ">=",
            Comparison::Eq => "==",
        }
    }
}

/// The bound an SLO compares its metric against.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Threshold {
    Latency(Duration),
    Rate(Rate),
    Ratio(Percent),
    Count(u64),
    /// The same metric in a baseline result, times a factor: `baseline * 1.10`.
    Baseline {
        factor: f64,
    },
}

impl fmt::Display for Threshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Threshold::Latency(d) => write!(f, "{d}"),
            Threshold::Rate(r) => write!(f, "{r}"),
            Threshold::Ratio(p) => write!(f, "{p}"),
            Threshold::Count(n) => write!(f, "{n}"),
            Threshold::Baseline { factor } if *factor == 1.0 => f.write_str("baseline"),
            Threshold::Baseline { factor } => write!(f, "baseline * {}", trim_float(*factor)),
        }
    }
}

/// A parsed SLO.
#[derive(Debug, Clone, PartialEq)]
pub struct Slo {
    pub metric: Metric,
    /// Restricts the metric to one named request of a mix: `p99{request=put}`.
    pub request: Option<String>,
    /// Restricts a check metric (`checks`, `check_failures`) to checks of one name: `check_failures{check=token}`.
    pub check: Option<String>,
    pub comparison: Comparison,
    pub threshold: Threshold,
    /// Stop the run as soon as this SLO is breached beyond repair (after `delay`).
    pub abort_on_fail: Option<AbortOnFail>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AbortOnFail {
    /// How long into the phase before the SLO may abort it.
    pub delay: Duration,
}

impl fmt::Display for Slo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.metric)?;
        match (&self.request, &self.check) {
            (Some(r), Some(c)) => write!(f, "{{request={r}, check={c}}}")?,
            (Some(r), None) => write!(f, "{{request={r}}}")?,
            (None, Some(c)) => write!(f, "{{check={c}}}")?,
            (None, None) => {}
        }
        write!(f, " {} {}", self.comparison.as_str(), self.threshold)
    }
}

/// Why an SLO expression did not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SloError {
    pub message: String,
    pub expected: String,
    pub help: Option<String>,
}

const SLO_EXPECTED: &str = "an SLO such as `p99 < 100ms`, `throughput >= 1000/s` or `error_rate < 0.1%`";

/// Why an objective's text has no usable comparison.
pub(crate) enum ComparisonError {
    /// No comparison character at all.
    Missing,
    /// A run of comparison characters that is not an operator, with a hint for the likely one.
    Unknown { op: String, hint: &'static str },
}

/// Splits `lhs OP rhs` at the first comparison character at or after byte `from`. The operator is the whole run
/// of comparison characters, so `<>` or `=<` is named as written. `lhs` is trimmed, `rhs` is not.
pub(crate) fn split_comparison(s: &str, from: usize) -> Result<(&str, Comparison, &str), ComparisonError> {
    let op_pos = s[from..].find(['<', '>', '=', '!']).map(|i| i + from).ok_or(ComparisonError::Missing)?;
    let lhs = s[..op_pos].trim();
    let rest = &s[op_pos..];
    let op_len = rest.find(|c: char| !matches!(c, '<' | '>' | '=' | '!')).unwrap_or(rest.len());
    let (op, rhs) = rest.split_at(op_len);
    let comparison = match op {
        "<=" => Comparison::Le,
        ">=" => Comparison::Ge,
        "==" => Comparison::Eq,
        "<" => Comparison::Lt,
        ">" => Comparison::Gt,
        _ => {
            let hint = match op {
                "=<" => " (did you mean `<=`?)",
                "=>" => " (did you mean `>=`?)",
                "=" => " (did you mean `==`?)",
                "<>" | "!=" => " (loadgate has no `not equal`)",
                _ => "",
            };
            return Err(ComparisonError::Unknown { op: op.to_owned(), hint });
        }
    };
    Ok((lhs, comparison, rhs))
}

impl Slo {
    /// Parses the expression part of an SLO (`p99 < 100ms`); `abort_on_fail` is set by the caller.
    pub fn parse(text: &str) -> Result<Slo, SloError> {
        let err = |message: String, help: Option<String>| SloError { message, expected: SLO_EXPECTED.to_owned(), help };
        let s = text.trim();
        // The comparison follows the metric and its optional `{request=...}` filter.
        let search_from = s.find('}').map(|i| i + 1).unwrap_or(0);
        let (lhs, comparison, rhs) = split_comparison(s, search_from).map_err(|e| match e {
            ComparisonError::Missing => err(
                format!("`{s}` has no comparison"),
                Some("write the metric, a comparison (<, <=, >, >=, ==) and a threshold: `p99 < 100ms`".into()),
            ),
            ComparisonError::Unknown { op, hint } => err(
                format!("`{op}` is not a comparison operator"),
                Some(format!("the comparisons are <, <=, >, >= and =={hint}")),
            ),
        })?;
        let rhs = rhs.trim();

        // The metric, with an optional filter: `{request=NAME}`, `{check=NAME}` or both, comma-separated.
        let mut check = None;
        let (name, request) = match lhs.split_once('{') {
            Some((name, filter)) => {
                let filter =
                    filter.strip_suffix('}').ok_or_else(|| err(format!("`{lhs}` has an unclosed `{{`"), None))?;
                let mut request = None;
                for part in filter.split(',') {
                    let bad = || {
                        err(
                            format!("`{{{filter}}}` is not a filter"),
                            Some("the filters are `{request=NAME}`, and on `checks` and `check_failures` also `{check=NAME}` or `{request=NAME, check=NAME}`".into()),
                        )
                    };
                    let (key, value) = part.split_once('=').ok_or_else(bad)?;
                    let value = value.trim().to_owned();
                    if value.is_empty() {
                        return Err(bad());
                    }
                    let slot = match key.trim() {
                        "request" => &mut request,
                        "check" => &mut check,
                        _ => return Err(bad()),
                    };
                    if slot.replace(value).is_some() {
                        return Err(bad());
                    }
                }
                if request.is_none() && check.is_none() {
                    return Err(err(format!("`{{{filter}}}` is not a filter"), Some("write `{request=NAME}`".into())));
                }
                (name.trim(), request)
            }
            None => (lhs, None),
        };
        if name.is_empty() {
            return Err(err(
                format!("`{s}` names no metric"),
                Some(format!("metrics are: {}", METRIC_NAMES.join(", "))),
            ));
        }
        let percentile_digits = name.strip_prefix("connect_p").or_else(|| name.strip_prefix('p'));
        if let Some(Err(PercentileError::OutOfRange)) = percentile_digits.map(percentile_of) {
            return Err(err(
                format!("`{name}` is not a percentile"),
                Some(
                    "a percentile is above 0 and at most 100: `p98`, `p99.95`, `connect_p99`; `max` is the largest"
                        .into(),
                ),
            ));
        }
        let metric: Metric = name.parse().map_err(|()| {
            let help = match crate::suggest::did_you_mean(name, METRIC_NAMES.iter().copied()) {
                Some(best) => format!("did you mean `{best}`? metrics are: {}", METRIC_NAMES.join(", ")),
                None => format!("metrics are: {}", METRIC_NAMES.join(", ")),
            };
            err(format!("unknown metric `{name}`"), Some(help))
        })?;

        if metric.is_connect() && request.is_some() {
            return Err(err(
                format!("`{lhs}` filters a connect time by request"),
                Some(format!("a connection is opened for every request of a mix alike: write `{name}`")),
            ));
        }
        if metric == Metric::Capacity && request.is_some() {
            return Err(err(
                format!("`{lhs}` filters the capacity by request"),
                Some("a capacity search finds one rate for the whole scenario: write `capacity`".into()),
            ));
        }
        if rhs.is_empty() {
            return Err(err(format!("`{s}` has no threshold"), None));
        }
        let threshold = if let Some(b) = rhs.strip_prefix("baseline") {
            let b = b.trim();
            let factor = if b.is_empty() {
                1.0
            } else {
                let f = b.strip_prefix('*').map(str::trim).ok_or_else(|| {
                    err(
                        format!("`{rhs}` is not a baseline threshold"),
                        Some("write `baseline` or `baseline * 1.10`".into()),
                    )
                })?;
                let f: f64 = f
                    .parse()
                    .map_err(|_| err(format!("`{f}` is not a number"), Some("write `baseline * 1.10`".into())))?;
                if !(f.is_finite() && f > 0.0) {
                    return Err(err(format!("the baseline factor must be positive, found `{f}`"), None));
                }
                f
            };
            Threshold::Baseline { factor }
        } else {
            match metric.kind() {
                MetricKind::Latency => Threshold::Latency(rhs.parse::<Duration>().map_err(|e| {
                    let help = if rhs.parse::<f64>().is_ok() {
                        Some(format!("a latency needs a unit: `{name} {} {rhs}ms`", comparison.as_str()))
                    } else {
                        e.help
                    };
                    err(format!("`{rhs}` is not a latency for `{name}`"), help)
                })?),
                MetricKind::Rate => Threshold::Rate(rhs.parse::<Rate>().map_err(|e| {
                    // `5000` or `5k`: a number that is a rate once it has its `/s`.
                    let help = if rhs.parse::<f64>().is_ok() || format!("{rhs}/s").parse::<Rate>().is_ok() {
                        let what = if metric == Metric::Capacity { "a capacity" } else { "a throughput" };
                        Some(format!("{what} needs a unit: `{name} {} {rhs}/s`", comparison.as_str()))
                    } else {
                        e.help
                    };
                    err(format!("`{rhs}` is not a rate for `{name}`"), help)
                })?),
                MetricKind::Ratio => Threshold::Ratio(
                    rhs.parse::<Percent>()
                        .map_err(|e| err(format!("`{rhs}` is not a percentage for `{name}`"), e.help))?,
                ),
                MetricKind::Count => Threshold::Count(rhs.parse::<u64>().map_err(|_| {
                    let help = if rhs.ends_with('%') {
                        Some(format!("`{name}` counts requests; for a share use `error_rate < {rhs}`"))
                    } else {
                        Some(format!("`{name}` takes a whole number, such as `{name} {} 0`", comparison.as_str()))
                    };
                    err(format!("`{rhs}` is not a count for `{name}`"), help)
                })?),
            }
        };
        if check.is_some() && !matches!(metric, Metric::Checks | Metric::CheckFailures) {
            return Err(err(
                format!("`{{check=...}}` filters `checks` and `check_failures` only, not `{metric}`"),
                Some("gate a check with `check_failures{check=NAME} == 0` or `checks{check=NAME} > 99%`".into()),
            ));
        }
        Ok(Slo { metric, request, check, comparison, threshold, abort_on_fail: None })
    }
}

impl Serialize for Slo {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("Slo", 4)?;
        st.serialize_field("slo", &self.to_string())?;
        st.serialize_field("metric", &self.metric.to_string())?;
        st.serialize_field("request", &self.request)?;
        st.serialize_field("comparison", &self.comparison)?;
        st.serialize_field("threshold", &self.threshold.to_string())?;
        st.serialize_field("abort_on_fail", &self.abort_on_fail)?;
        st.end()
    }
}

impl<'de> Deserialize<'de> for Slo {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Raw {
            slo: String,
            #[serde(default)]
            abort_on_fail: Option<AbortOnFail>,
        }
        let raw = Raw::deserialize(d)?;
        let mut slo = Slo::parse(&raw.slo).map_err(|e| serde::de::Error::custom(e.message))?;
        slo.abort_on_fail = raw.abort_on_fail;
        Ok(slo)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_vocabulary() {
        let s = Slo::parse("p99 < 100ms").unwrap();
        assert_eq!(s.metric, Metric::Percentile(99.0));
        assert_eq!(s.threshold, Threshold::Latency(Duration::from_millis(100)));
        assert_eq!(s.to_string(), "p99 < 100ms");
        assert_eq!(Slo::parse("p99.9<=80ms").unwrap().to_string(), "p99.9 <= 80ms");
        assert_eq!(Slo::parse("throughput >= 100000/s").unwrap().to_string(), "throughput >= 100000/s");
        assert_eq!(Slo::parse("error_rate < 0.1%").unwrap().to_string(), "error_rate < 0.1%");
        assert_eq!(Slo::parse("p99 <= baseline * 1.10").unwrap().to_string(), "p99 <= baseline * 1.1");
        assert_eq!(Slo::parse("p99{request=put} < 60ms").unwrap().request.as_deref(), Some("put"));
        assert_eq!(Slo::parse("non_2xx == 0").unwrap().to_string(), "non_2xx == 0");
        assert_eq!(
            Slo::parse("p99 => 5ms").unwrap_err().help.as_deref(),
            Some("the comparisons are <, <=, >, >= and == (did you mean `>=`?)")
        );
    }

    #[test]
    fn a_latency_without_unit_suggests_one() {
        let e = Slo::parse("p99 < 100").unwrap_err();
        assert_eq!(e.help.as_deref(), Some("a latency needs a unit: `p99 < 100ms`"));
        let e = Slo::parse("p99x < 100ms").unwrap_err();
        assert!(e.help.unwrap().starts_with("did you mean `p9"));
    }

    #[test]
    fn capacity_is_a_rate_for_the_whole_scenario() {
        let c = Slo::parse("capacity >= 50k/s").unwrap();
        assert_eq!(c.metric, Metric::Capacity);
        assert_eq!(c.metric.kind(), MetricKind::Rate);
        assert_eq!(c.threshold, Threshold::Rate(Rate::from_per_sec(50_000)));
        assert_eq!(c.to_string(), "capacity >= 50000/s");
        assert_eq!(Slo::parse("capacity >= baseline * 0.9").unwrap().to_string(), "capacity >= baseline * 0.9");
        assert_eq!(
            Slo::parse("capacity >= 500").unwrap_err().help.as_deref(),
            Some("a capacity needs a unit: `capacity >= 500/s`")
        );
        assert_eq!(
            Slo::parse("throughput > 5k").unwrap_err().help.as_deref(),
            Some("a throughput needs a unit: `throughput > 5k/s`")
        );
        assert!(Slo::parse("capacity{request=put} >= 1/s").unwrap_err().message.contains("by request"));
    }

    #[test]
    fn any_percentile_and_connect_times() {
        assert_eq!(Slo::parse("p98 < 10ms").unwrap().metric, Metric::Percentile(98.0));
        assert_eq!(Slo::parse("p99.95 < 10ms").unwrap().to_string(), "p99.95 < 10ms");
        assert_eq!(Slo::parse("p100 < 1s").unwrap().metric, Metric::Percentile(100.0));
        let c = Slo::parse("connect_p99 < 5ms").unwrap();
        assert_eq!(c.metric, Metric::ConnectPercentile(99.0));
        assert_eq!(c.metric.kind(), MetricKind::Latency);
        assert!(c.metric.is_connect());
        assert_eq!(c.to_string(), "connect_p99 < 5ms");
        assert_eq!(Slo::parse("connect_p99.9 <= 20ms").unwrap().to_string(), "connect_p99.9 <= 20ms");
        assert_eq!(Slo::parse("connect_max < 1s").unwrap().metric, Metric::ConnectMax);
        assert_eq!(Slo::parse("connect_mean < 1ms").unwrap().metric, Metric::ConnectMean);
        for bad in ["p0 < 1ms", "p101 < 1ms", "connect_p0 < 1ms", "p100.5 < 1s"] {
            let e = Slo::parse(bad).unwrap_err();
            assert!(e.message.ends_with("is not a percentile"), "{bad}: {e:?}");
        }
        for bad in ["p1e2 < 1ms", "p.5 < 1ms", "p99. < 1ms", "pinf < 1ms", "p-5 < 1ms"] {
            assert!(Slo::parse(bad).is_err(), "{bad}");
        }
        let e = Slo::parse("connect_p99 < 5").unwrap_err();
        assert_eq!(e.help.as_deref(), Some("a latency needs a unit: `connect_p99 < 5ms`"));
    }
}
