//! The Prometheus text exposition format (version 0.0.4) for `/metrics`. The text format has no native
//! histograms, so a histogram is written as a classic one whose `le` boundaries are its native buckets' own
//! (each populated bucket's lower and upper bound): `histogram_quantile` over them interpolates within the same
//! 2.2% buckets as a native histogram, and only populated buckets are written.

use std::fmt::Write;

use crate::series::{Kind, Labels, NativeHistogram, Series, Value, ZERO_THRESHOLD};

pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

fn labels(l: &Labels, extra: Option<(&str, &str)>) -> String {
    let mut parts: Vec<String> = l.pairs().iter().map(|(k, v)| format!("{k}=\"{}\"", escape(v))).collect();
    if let Some((k, v)) = extra {
        parts.push(format!("{k}=\"{}\"", escape(v)));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!("{{{}}}", parts.join(","))
    }
}

/// The `(le, cumulative count)` pairs of a histogram, without `+Inf`.
pub fn classic_buckets(h: &NativeHistogram) -> Vec<(f64, u64)> {
    let mut out: Vec<(f64, u64)> = Vec::new();
    let mut cumulative = h.zero_count;
    if h.zero_count > 0 {
        out.push((ZERO_THRESHOLD, cumulative));
    }
    let mut previous: Option<i32> = None;
    for (&i, &n) in &h.buckets {
        if previous != Some(i - 1) {
            out.push((NativeHistogram::upper_bound(i - 1), cumulative));
        }
        cumulative += n;
        out.push((NativeHistogram::upper_bound(i), cumulative));
        previous = Some(i);
    }
    out
}

/// Every series in the text format.
pub fn render(series: &[Series]) -> String {
    let mut out = String::new();
    let mut family = "";
    for s in series {
        let name = s.metric.name;
        if name != family {
            family = name;
            let kind = match s.metric.kind {
                Kind::Counter => "counter",
                Kind::Gauge => "gauge",
                Kind::Histogram => "histogram",
            };
            let _ = writeln!(out, "# HELP {name} {}", s.metric.help);
            let _ = writeln!(out, "# TYPE {name} {kind}");
        }
        match &s.value {
            Value::Number(v) => {
                let _ = writeln!(out, "{name}{} {v}", labels(&s.labels, None));
            }
            Value::Histogram(h) => {
                for (le, n) in classic_buckets(h) {
                    let _ = writeln!(out, "{name}_bucket{} {n}", labels(&s.labels, Some(("le", &le.to_string()))));
                }
                let _ = writeln!(out, "{name}_bucket{} {}", labels(&s.labels, Some(("le", "+Inf"))), h.count);
                let _ = writeln!(out, "{name}_sum{} {}", labels(&s.labels, None), h.sum);
                let _ = writeln!(out, "{name}_count{} {}", labels(&s.labels, None), h.count);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::series::{LATENCY, REQUESTS};

    #[test]
    fn histograms_are_classic_at_native_boundaries() {
        let mut h = NativeHistogram::default();
        h.record_micros(1000, 2);
        h.record_micros(1000 * 1000, 1);
        let b = classic_buckets(&h);
        assert_eq!(b.len(), 4, "{b:?}");
        assert_eq!(b[0].1, 0);
        assert_eq!(b[1].1, 2);
        assert_eq!(b[3].1, 3);
        assert!(b.windows(2).all(|w| w[0].0 < w[1].0));
        let l = Labels::new([("scenario", "a\"b".to_owned())]);
        let text = render(&[
            Series { metric: REQUESTS, labels: l.clone(), value: Value::Number(3.0) },
            Series { metric: LATENCY, labels: l, value: Value::Histogram(h) },
        ]);
        assert!(text.contains("loadgate_requests_total{scenario=\"a\\\"b\"} 3\n"), "{text}");
        assert!(text.contains("# TYPE loadgate_latency_seconds histogram"));
        assert!(text.contains("loadgate_latency_seconds_bucket{scenario=\"a\\\"b\",le=\"+Inf\"} 3"));
    }
}
