//! Sweep SLOs: objectives that judge the cells of a matrix scenario together, ordered by one swept variable.
//!
//! ```yaml
//! matrix: { connections: [8, 16, 32, 64, 128, 256, 512] }
//! sweep:
//!   over: connections               # the swept variable (the only matrix variable when omitted)
//!   slo:
//!     - throughput_drop <= 10%      # throughput never falls more than 10% below the best of the smaller cells
//!     - knee >= 256                 # no knee (plateau or collapse) below connections=256
//!     - collapse == none            # no collapse at all; `plateau` names the other kind
//!     - p99@largest <= 3 * p99@smallest
//!     - throughput@512 >= 0.9 * throughput@256
//! ```
//!
//! The cell metrics after `@` are the per-cell SLO metrics (`p99`, `throughput`, `error_rate`, `connect_p99`,
//! ...); a cell is `smallest`, `largest` or a value of the swept variable. The threshold is a value of the
//! metric (`p99@largest < 50ms`) or a factor of the same metric at another cell.

use std::fmt;

use crate::slo::{Comparison, Metric, MetricKind, SloError, Threshold};
use crate::units::{trim_float, ByteSize, Duration, Percent, Rate};

/// The swept variable and the objectives over its cells (`sweep:` in a scenario).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SweepSpec {
    /// The matrix variable the cells are ordered by.
    pub over: String,
    pub slos: Vec<SweepSlo>,
}

/// One sweep objective.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepSlo {
    pub check: SweepCheck,
    pub comparison: Comparison,
}

/// What a sweep objective measures, with its threshold.
#[derive(Debug, Clone, PartialEq)]
pub enum SweepCheck {
    /// `throughput_drop <= 10%`: the largest fall of a cell's throughput below the best throughput of the cells
    /// with smaller values, as a share of that best.
    ThroughputDrop(Percent),
    /// `knee >= 256`: where the sweep stopped scaling, as a value of the swept variable; `None` is `none`, no
    /// such cell.
    Knee { which: KneeWhich, threshold: Option<AxisValue> },
    /// `p99@largest <= 3 * p99@smallest`, `p99@256 < 50ms`.
    Cell { metric: Metric, at: CellRef, threshold: CellThreshold },
}

/// Which knee a knee objective bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KneeWhich {
    /// The first cell where scaling stopped, a plateau or a collapse.
    Any,
    /// The first plateau (saturation): throughput stopped growing while latency rose.
    Plateau,
    /// The first lasting collapse: throughput fell more than 10% below its best and stayed there.
    Collapse,
}

impl KneeWhich {
    pub fn as_str(self) -> &'static str {
        match self {
            KneeWhich::Any => "knee",
            KneeWhich::Plateau => "plateau",
            KneeWhich::Collapse => "collapse",
        }
    }
}

/// A cell of the sweep.
#[derive(Debug, Clone, PartialEq)]
pub enum CellRef {
    /// The cell with the smallest value of the swept variable.
    Smallest,
    /// The cell with the largest value.
    Largest,
    /// The cell with this value.
    Value(AxisValue),
}

impl fmt::Display for CellRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CellRef::Smallest => f.write_str("smallest"),
            CellRef::Largest => f.write_str("largest"),
            CellRef::Value(v) => f.write_str(&v.text),
        }
    }
}

/// The bound of a cell objective.
#[derive(Debug, Clone, PartialEq)]
pub enum CellThreshold {
    /// A value of the metric: `50ms`.
    Absolute(Threshold),
    /// The same metric at another cell, times a factor: `3 * p99@smallest`.
    Relative { factor: f64, at: CellRef },
}

/// A value of a swept variable, as written and as a number: plain numbers, rates (`1000/s`, per second),
/// durations (`20ms`, in seconds) or sizes (`4KiB`, in bytes).
#[derive(Debug, Clone, PartialEq)]
pub struct AxisValue {
    pub text: String,
    pub value: f64,
    pub unit: AxisUnit,
}

/// The kind of number a swept variable holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AxisUnit {
    Number,
    Rate,
    Duration,
    Size,
}

impl AxisUnit {
    pub fn describe(self) -> &'static str {
        match self {
            AxisUnit::Number => "a number",
            AxisUnit::Rate => "a rate",
            AxisUnit::Duration => "a duration",
            AxisUnit::Size => "a size",
        }
    }
}

impl AxisValue {
    /// Reads a matrix value or a threshold as a number of its kind; `None` when it is none of them.
    pub fn parse(text: &str) -> Option<AxisValue> {
        let t = text.trim();
        let make = |value: f64, unit| value.is_finite().then(|| AxisValue { text: t.to_owned(), value, unit });
        if let Ok(v) = t.parse::<f64>() {
            if t.chars().all(|c| c.is_ascii_digit() || matches!(c, '.' | '-' | '+')) {
                return make(v, AxisUnit::Number);
            }
        }
        if let Ok(r) = t.parse::<Rate>() {
            return make(r.per_sec(), AxisUnit::Rate);
        }
        if let Ok(d) = t.parse::<Duration>() {
            return make(d.as_secs_f64(), AxisUnit::Duration);
        }
        if let Ok(b) = t.parse::<ByteSize>() {
            return make(b.0 as f64, AxisUnit::Size);
        }
        None
    }
}

impl fmt::Display for SweepSlo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = self.comparison.as_str();
        match &self.check {
            SweepCheck::ThroughputDrop(p) => write!(f, "throughput_drop {op} {p}"),
            SweepCheck::Knee { which, threshold } => {
                write!(f, "{} {op} {}", which.as_str(), threshold.as_ref().map_or("none", |v| v.text.as_str()))
            }
            SweepCheck::Cell { metric, at, threshold } => {
                write!(f, "{metric}@{at} {op} ")?;
                match threshold {
                    CellThreshold::Absolute(t) => write!(f, "{t}"),
                    CellThreshold::Relative { factor, at } if *factor == 1.0 => write!(f, "{metric}@{at}"),
                    CellThreshold::Relative { factor, at } => write!(f, "{} * {metric}@{at}", trim_float(*factor)),
                }
            }
        }
    }
}

impl serde::Serialize for SweepSlo {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> serde::Deserialize<'de> for SweepSlo {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        SweepSlo::parse(&text).map_err(|e| serde::de::Error::custom(e.message))
    }
}

const SWEEP_EXPECTED: &str =
    "a sweep SLO such as `throughput_drop <= 10%`, `knee >= 256`, `collapse == none` or `p99@largest <= 3 * p99@smallest`";

/// The names a sweep SLO starts with, for suggestions.
pub const SWEEP_METRICS: [&str; 4] = ["throughput_drop", "knee", "plateau", "collapse"];

impl SweepSlo {
    /// Parses a sweep objective. Whether its values fit the swept variable is checked by the reader, which
    /// knows the matrix.
    pub fn parse(text: &str) -> Result<SweepSlo, SloError> {
        let err =
            |message: String, help: Option<String>| SloError { message, expected: SWEEP_EXPECTED.to_owned(), help };
        let s = text.trim();
        let (lhs, comparison, rhs) = crate::slo::split_comparison(s, 0).map_err(|e| match e {
            crate::slo::ComparisonError::Missing => err(
                format!("`{s}` has no comparison"),
                Some("write a measure, a comparison (<, <=, >, >=, ==) and a threshold: `knee >= 256`".into()),
            ),
            crate::slo::ComparisonError::Unknown { op, hint } => err(
                format!("`{op}` is not a comparison operator"),
                Some(format!("the comparisons are <, <=, >, >= and =={hint}")),
            ),
        })?;
        let rhs = rhs.trim();
        if lhs.is_empty() {
            return Err(err(format!("`{s}` names nothing to measure"), Some(names_help())));
        }
        if rhs.is_empty() {
            return Err(err(format!("`{s}` has no threshold"), None));
        }
        let check = match lhs {
            "throughput_drop" => {
                let p = rhs.parse::<Percent>().map_err(|e| {
                    err(
                        format!("`{rhs}` is not a percentage for `throughput_drop`"),
                        e.help
                            .or_else(|| Some("write a share of the best throughput: `throughput_drop <= 10%`".into())),
                    )
                })?;
                SweepCheck::ThroughputDrop(p)
            }
            "knee" | "plateau" | "collapse" => {
                let which = match lhs {
                    "knee" => KneeWhich::Any,
                    "plateau" => KneeWhich::Plateau,
                    _ => KneeWhich::Collapse,
                };
                let threshold = if rhs == "none" {
                    if comparison != Comparison::Eq {
                        return Err(err(
                            format!("`{lhs} {} none` compares with nothing", comparison.as_str()),
                            Some(format!(
                                "`{lhs} == none` asks for no {lhs} at all; `{lhs} >= 256` for none below 256"
                            )),
                        ));
                    }
                    None
                } else {
                    Some(AxisValue::parse(rhs).ok_or_else(|| {
                        err(
                            format!("`{rhs}` is not a value of a swept variable"),
                            Some(format!(
                                "write a value the sweep reaches, such as `{lhs} >= 256`, or `{lhs} == none`"
                            )),
                        )
                    })?)
                };
                SweepCheck::Knee { which, threshold }
            }
            _ => {
                let Some((metric_text, at_text)) = lhs.split_once('@') else {
                    let help = match crate::suggest::did_you_mean(lhs, SWEEP_METRICS.iter().copied()) {
                        Some(best) => format!("did you mean `{best}`? {}", names_help()),
                        None => names_help(),
                    };
                    return Err(err(format!("`{lhs}` is not a sweep measure"), Some(help)));
                };
                let metric = cell_metric(metric_text.trim()).map_err(|m| err(m, Some(names_help())))?;
                let at = cell_ref(at_text.trim()).map_err(|m| err(m, None))?;
                let threshold = cell_threshold(metric, comparison, rhs).map_err(|(m, h)| err(m, h))?;
                SweepCheck::Cell { metric, at, threshold }
            }
        };
        Ok(SweepSlo { check, comparison })
    }

    /// The measure's name as results show it: `throughput_drop`, `knee`, `p99@largest`.
    pub fn measure_label(&self) -> String {
        match &self.check {
            SweepCheck::ThroughputDrop(_) => "throughput_drop".to_owned(),
            SweepCheck::Knee { which, .. } => which.as_str().to_owned(),
            SweepCheck::Cell { metric, at, .. } => format!("{metric}@{at}"),
        }
    }

    /// The values of the swept variable this objective names (knee thresholds and cells), to check against
    /// the matrix.
    pub fn axis_values(&self) -> Vec<&AxisValue> {
        let mut out = Vec::new();
        match &self.check {
            SweepCheck::ThroughputDrop(_) => {}
            SweepCheck::Knee { threshold, .. } => out.extend(threshold.as_ref()),
            SweepCheck::Cell { at, threshold, .. } => {
                if let CellRef::Value(v) = at {
                    out.push(v);
                }
                if let CellThreshold::Relative { at: CellRef::Value(v), .. } = threshold {
                    out.push(v);
                }
            }
        }
        out
    }
}

fn names_help() -> String {
    "sweep SLOs measure `throughput_drop`, `knee`, `plateau`, `collapse`, or a cell metric at a cell: \
     `p99@largest`, `throughput@256`"
        .to_owned()
}

fn cell_metric(text: &str) -> Result<Metric, String> {
    text.parse::<Metric>()
        .map_err(|()| format!("`{text}` is not a metric of a cell (`p99`, `throughput`, `error_rate`, ...)"))
}

fn cell_ref(text: &str) -> Result<CellRef, String> {
    match text {
        "smallest" | "first" | "min" => Ok(CellRef::Smallest),
        "largest" | "last" | "max" => Ok(CellRef::Largest),
        _ => AxisValue::parse(text).map(CellRef::Value).ok_or_else(|| {
            format!("`@{text}` names no cell: write `@smallest`, `@largest` or a value of the swept variable (`@256`)")
        }),
    }
}

fn cell_threshold(
    metric: Metric,
    comparison: Comparison,
    rhs: &str,
) -> Result<CellThreshold, (String, Option<String>)> {
    if rhs.contains('@') {
        // `3 * p99@smallest`, `p99@smallest * 3` or `p99@smallest`.
        let (factor, other) = match rhs.split_once('*') {
            Some((a, b)) => {
                let (a, b) = (a.trim(), b.trim());
                if a.contains('@') {
                    (b, a)
                } else {
                    (a, b)
                }
            }
            None => ("1", rhs),
        };
        let factor: f64 = factor.parse().ok().filter(|f: &f64| f.is_finite() && *f > 0.0).ok_or_else(|| {
            (format!("`{factor}` is not a positive factor"), Some("write `3 * p99@smallest`".to_owned()))
        })?;
        let (m, at) = other.split_once('@').unwrap_or((other, ""));
        let m = cell_metric(m.trim()).map_err(|e| (e, None))?;
        if m != metric {
            return Err((
                format!("`{rhs}` compares {metric} with {m}"),
                Some(format!("compare the same metric at two cells: `{metric}@largest <= 3 * {metric}@smallest`")),
            ));
        }
        let at = cell_ref(at.trim()).map_err(|e| (e, None))?;
        return Ok(CellThreshold::Relative { factor, at });
    }
    // An absolute threshold reads as the per-cell SLO of the same metric would.
    let probe = format!("{metric} {} {rhs}", comparison.as_str());
    match crate::slo::Slo::parse(&probe) {
        Ok(slo) if !matches!(slo.threshold, Threshold::Baseline { .. }) => Ok(CellThreshold::Absolute(slo.threshold)),
        Ok(_) => Err((
            "a sweep SLO compares cells of this run, not a baseline".to_owned(),
            Some(format!("write `{metric}@largest <= 1.1 * {metric}@smallest`, or a per-cell SLO with `baseline`")),
        )),
        Err(e) => Err((e.message, e.help.or_else(|| unit_help(metric)))),
    }
}

fn unit_help(metric: Metric) -> Option<String> {
    Some(match metric.kind() {
        MetricKind::Latency => "a latency needs a unit: `50ms`".to_owned(),
        MetricKind::Rate => "a throughput needs a unit: `1000/s`".to_owned(),
        MetricKind::Ratio => "a share is a percentage: `1%`".to_owned(),
        MetricKind::Count => "a count is a whole number".to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(text: &str) -> String {
        SweepSlo::parse(text).unwrap_or_else(|e| panic!("{text}: {e:?}")).to_string()
    }

    #[test]
    fn parses_the_sweep_vocabulary() {
        assert_eq!(round_trip("throughput_drop <= 10%"), "throughput_drop <= 10%");
        assert_eq!(round_trip("knee>=256"), "knee >= 256");
        assert_eq!(round_trip("collapse == none"), "collapse == none");
        assert_eq!(round_trip("plateau > 1k/s"), "plateau > 1k/s");
        assert_eq!(round_trip("p99@largest <= 3 * p99@smallest"), "p99@largest <= 3 * p99@smallest");
        assert_eq!(round_trip("p99@last <= p99@first * 2.5"), "p99@largest <= 2.5 * p99@smallest");
        assert_eq!(round_trip("throughput@512 >= 0.9 * throughput@256"), "throughput@512 >= 0.9 * throughput@256");
        assert_eq!(round_trip("p99.9@256 < 50ms"), "p99.9@256 < 50ms");
        assert_eq!(round_trip("error_rate@largest < 1%"), "error_rate@largest < 1%");
        let s = SweepSlo::parse("knee >= 256").unwrap();
        match s.check {
            SweepCheck::Knee { which: KneeWhich::Any, threshold: Some(v) } => {
                assert_eq!((v.value, v.unit), (256.0, AxisUnit::Number))
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(AxisValue::parse("2k/s").map(|v| (v.value, v.unit)), Some((2000.0, AxisUnit::Rate)));
        assert_eq!(AxisValue::parse("20ms").map(|v| (v.value, v.unit)), Some((0.02, AxisUnit::Duration)));
        assert_eq!(AxisValue::parse("4KiB").map(|v| (v.value, v.unit)), Some((4096.0, AxisUnit::Size)));
        assert_eq!(AxisValue::parse("/api"), None);
    }

    #[test]
    fn mistakes_are_named() {
        let e = SweepSlo::parse("knee < none").unwrap_err();
        assert!(e.message.contains("compares with nothing"), "{e:?}");
        let e = SweepSlo::parse("kne >= 256").unwrap_err();
        assert!(e.help.unwrap().starts_with("did you mean `knee`?"));
        let e = SweepSlo::parse("p99@largest <= 3 * p50@smallest").unwrap_err();
        assert!(e.message.contains("compares p99 with p50"), "{e:?}");
        let e = SweepSlo::parse("p99@largest <= 3").unwrap_err();
        assert!(e.help.unwrap().contains("unit"), "a latency needs a unit");
        let e = SweepSlo::parse("p99@middle <= 3 * p99@smallest").unwrap_err();
        assert!(e.message.contains("names no cell"), "{e:?}");
        let e = SweepSlo::parse("throughput_drop <= 10").unwrap_err();
        assert!(e.message.contains("not a percentage"), "{e:?}");
        let e = SweepSlo::parse("p99@largest <= baseline").unwrap_err();
        assert!(e.message.contains("not a baseline"), "{e:?}");
        assert!(SweepSlo::parse("knee 256").is_err());
    }
}
