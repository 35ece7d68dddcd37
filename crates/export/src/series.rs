//! The series a run exports, aggregated from its ticks: pure data, no I/O.
//!
//! Each scenario instance run (a scenario's matrix cell, a repetition, an A/B side, a shard) has its own
//! [`Labels`] and keeps cumulative counters, gauges and histograms. Histograms are exponential (Prometheus
//! native histograms of [`SCHEMA`], OTLP exponential histograms of the same scale): they add across shards and
//! time, unlike percentiles. When a run of an instance ends, [`Aggregate::settle`] replaces what its ticks added
//! with the result's exact totals (the engine's last partial second is never ticked), so the series end equal
//! to results.json.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use loadgate_measure::{ErrorCounts, StatusCounts};

/// The exponential histograms' resolution: bucket boundaries are powers of `2^(2^-SCHEMA)`, 2.2% apart.
pub const SCHEMA: i32 = 5;

/// Label names, values not empty, sorted by name (remote write receivers such as Thanos refuse unsorted labels).
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Labels(Vec<(String, String)>);

impl Labels {
    /// Labels from pairs; empty values are left out (Prometheus treats an empty label as absent).
    pub fn new<'a>(pairs: impl IntoIterator<Item = (&'a str, String)>) -> Labels {
        let mut v: Vec<(String, String)> =
            pairs.into_iter().filter(|(_, v)| !v.is_empty()).map(|(k, v)| (k.to_owned(), v)).collect();
        v.sort();
        v.dedup_by(|a, b| a.0 == b.0);
        Labels(v)
    }

    /// These labels and one more.
    pub fn with(&self, name: &str, value: &str) -> Labels {
        Labels::new(self.0.iter().map(|(k, v)| (k.as_str(), v.clone())).chain([(name, value.to_owned())]))
    }

    pub fn pairs(&self) -> &[(String, String)] {
        &self.0
    }
}

/// A cumulative exponential histogram of seconds: the count per bucket index, where bucket `i` holds the
/// values in `(b^(i-1), b^i]` for `b = 2^(2^-SCHEMA)` (Prometheus' convention; OTLP's index is `i - 1`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NativeHistogram {
    pub count: u64,
    /// The sum of the values, in seconds.
    pub sum: f64,
    /// Values of zero (below a microsecond).
    pub zero_count: u64,
    pub buckets: BTreeMap<i32, u64>,
}

/// Values at or below this go to the zero bucket: below the microsecond the histograms record.
pub const ZERO_THRESHOLD: f64 = 1e-7;

impl NativeHistogram {
    /// The bucket of a value in seconds.
    pub fn index(seconds: f64) -> i32 {
        let scaled = seconds.log2() * f64::from(1u32 << SCHEMA);
        let i = scaled.ceil();
        // A value exactly on a boundary belongs to the bucket it closes; `log2` may land a hair above it.
        let i = if (i - 1.0 - scaled).abs() < 1e-9 { i - 1.0 } else { i };
        i as i32
    }

    /// The upper bound of bucket `index`, in seconds.
    pub fn upper_bound(index: i32) -> f64 {
        (f64::from(index) / f64::from(1u32 << SCHEMA)).exp2()
    }

    /// Adds `n` values of `micros` microseconds.
    pub fn record_micros(&mut self, micros: u64, n: u64) {
        if n == 0 {
            return;
        }
        let s = micros as f64 / 1e6;
        self.count += n;
        self.sum += s * n as f64;
        if s <= ZERO_THRESHOLD {
            self.zero_count += n;
        } else {
            *self.buckets.entry(Self::index(s)).or_default() += n;
        }
    }

    /// Adds an HdrHistogram of microseconds (each recorded value at its bucket's highest equivalent value, as
    /// HdrHistogram reports percentiles).
    pub fn add_hdr(&mut self, h: &Histogram<u64>) {
        for v in h.iter_recorded() {
            self.record_micros(h.highest_equivalent(v.value_iterated_to()), v.count_at_value());
        }
    }

    pub fn add(&mut self, other: &NativeHistogram) {
        self.count += other.count;
        self.sum += other.sum;
        self.zero_count += other.zero_count;
        for (&i, &n) in &other.buckets {
            *self.buckets.entry(i).or_default() += n;
        }
    }

    /// The populated buckets as runs of consecutive indices: `(first index, counts)`.
    pub fn runs(&self) -> Vec<(i32, Vec<u64>)> {
        let mut runs: Vec<(i32, Vec<u64>)> = Vec::new();
        for (&i, &n) in &self.buckets {
            match runs.last_mut() {
                Some((start, counts)) if *start + counts.len() as i32 == i => counts.push(n),
                _ => runs.push((i, vec![n])),
            }
        }
        runs
    }
}

/// What one tick tells about an instance: the interval's counts and histograms, and the gauges at its end.
#[derive(Debug, Clone, Copy)]
pub struct Interval<'a> {
    pub sent: u64,
    pub completed: u64,
    pub errors: &'a ErrorCounts,
    pub status: &'a StatusCounts,
    pub in_flight: u64,
    pub connections: u64,
    /// Microseconds.
    pub latency: &'a Histogram<u64>,
    /// Microseconds (open loads; empty otherwise).
    pub send_lag: &'a Histogram<u64>,
}

/// A finished run of an instance, as its result counts it.
#[derive(Debug, Clone, Copy)]
pub struct Totals<'a> {
    pub sent: u64,
    pub completed: u64,
    pub errors: &'a ErrorCounts,
    pub status: &'a StatusCounts,
    pub latency: &'a Histogram<u64>,
    pub send_lag: &'a Histogram<u64>,
}

/// The error classes a series is labelled with: failed requests by kind, responses by status class (not 2xx).
pub fn error_classes(errors: &ErrorCounts, status: &StatusCounts) -> [(&'static str, u64); 10] {
    [
        ("connect", errors.connect),
        ("read", errors.read),
        ("write", errors.write),
        ("timeout", errors.timeout),
        ("protocol", errors.protocol),
        ("missing_value", errors.missing_value),
        ("status_1xx", status.informational),
        ("status_3xx", status.redirection),
        ("status_4xx", status.client_error),
        ("status_5xx", status.server_error),
    ]
}

/// One instance's cumulative state.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Instance {
    /// Complete responses.
    pub requests: u64,
    pub sent: u64,
    pub errors: BTreeMap<&'static str, u64>,
    pub in_flight: u64,
    pub connections: u64,
    /// A phase of this instance is running.
    pub active: bool,
    pub latency: NativeHistogram,
    pub send_lag: NativeHistogram,
}

impl Instance {
    fn add_counts(&mut self, sent: u64, completed: u64, errors: &ErrorCounts, status: &StatusCounts) {
        self.sent += sent;
        self.requests += completed;
        for (class, n) in error_classes(errors, status) {
            if n > 0 {
                *self.errors.entry(class).or_default() += n;
            }
        }
    }
}

/// A metric's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
    Histogram,
}

/// One metric family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Metric {
    /// The Prometheus name (counters end in `_total`).
    pub name: &'static str,
    pub kind: Kind,
    pub help: &'static str,
    /// The OTLP unit.
    pub unit: &'static str,
}

pub const REQUESTS: Metric = Metric {
    name: "loadgate_requests_total",
    kind: Kind::Counter,
    help: "Requests that got a complete response.",
    unit: "{request}",
};
pub const SENT: Metric = Metric {
    name: "loadgate_requests_sent_total",
    kind: Kind::Counter,
    help: "Requests written to a connection.",
    unit: "{request}",
};
pub const ERRORS: Metric = Metric {
    name: "loadgate_errors_total",
    kind: Kind::Counter,
    help: "Failed requests by kind (connect, read, write, timeout, protocol, missing_value) and responses by status class (status_1xx, status_3xx, status_4xx, status_5xx).",
    unit: "{request}",
};
pub const IN_FLIGHT: Metric = Metric {
    name: "loadgate_in_flight",
    kind: Kind::Gauge,
    help: "The most requests in flight (users active, under user injection) during the last second.",
    unit: "{request}",
};
pub const CONNECTIONS: Metric = Metric {
    name: "loadgate_connections",
    kind: Kind::Gauge,
    help: "The most connections open at once during the last second.",
    unit: "{connection}",
};
pub const ACTIVE: Metric = Metric {
    name: "loadgate_phase_active",
    kind: Kind::Gauge,
    help: "1 while a phase of this scenario instance runs, 0 after.",
    unit: "1",
};
pub const LATENCY: Metric = Metric {
    name: "loadgate_latency_seconds",
    kind: Kind::Histogram,
    help: "Latency from the intended send time (open loads) or the send (closed loads) to the response's last byte.",
    unit: "s",
};
pub const SEND_LAG: Metric = Metric {
    name: "loadgate_send_lag_seconds",
    kind: Kind::Histogram,
    help: "Actual send time minus intended send time (open loads).",
    unit: "s",
};

/// Every metric family, in the order they are written.
pub const METRICS: [Metric; 8] = [REQUESTS, SENT, ERRORS, IN_FLIGHT, CONNECTIONS, ACTIVE, LATENCY, SEND_LAG];

/// A series' value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Number(f64),
    Histogram(NativeHistogram),
}

/// One series at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub metric: Metric,
    pub labels: Labels,
    pub value: Value,
}

/// Every instance's cumulative state.
#[derive(Debug, Clone, Default)]
pub struct Aggregate {
    instances: BTreeMap<Labels, Instance>,
    /// Each instance as it was when its current run began: a settle starts from here.
    bases: BTreeMap<Labels, Instance>,
}

impl Aggregate {
    pub fn new() -> Aggregate {
        Aggregate::default()
    }

    /// A run of an instance begins (a phase, a repetition, a search's step).
    pub fn begin(&mut self, labels: &Labels) {
        let instance = self.instances.entry(labels.clone()).or_default();
        instance.active = true;
        self.bases.insert(labels.clone(), instance.clone());
    }

    /// One second of an instance's run.
    pub fn interval(&mut self, labels: &Labels, i: &Interval<'_>) {
        let instance = self.instances.entry(labels.clone()).or_default();
        instance.add_counts(i.sent, i.completed, i.errors, i.status);
        instance.in_flight = i.in_flight;
        instance.connections = i.connections;
        instance.latency.add_hdr(i.latency);
        instance.send_lag.add_hdr(i.send_lag);
    }

    /// The run of an instance ended with these totals: the instance becomes what it was when the run began
    /// plus the totals (exact where the ticks missed the last partial second). Counters never go down: a
    /// total below what the ticks added keeps the ticks.
    pub fn settle(&mut self, labels: &Labels, t: &Totals<'_>) {
        let mut settled = self.bases.remove(labels).unwrap_or_default();
        settled.add_counts(t.sent, t.completed, t.errors, t.status);
        settled.latency.add_hdr(t.latency);
        settled.send_lag.add_hdr(t.send_lag);
        settled.active = false;
        settled.in_flight = 0;
        let current = self.instances.entry(labels.clone()).or_default();
        settled.connections = current.connections;
        if settled.requests >= current.requests && settled.latency.count >= current.latency.count {
            *current = settled;
        } else {
            current.active = false;
            current.in_flight = 0;
        }
    }

    /// The run of an instance ended without totals to settle on (a capacity search's step): its ticks stay.
    pub fn end(&mut self, labels: &Labels) {
        self.bases.remove(labels);
        if let Some(i) = self.instances.get_mut(labels) {
            i.active = false;
            i.in_flight = 0;
        }
    }

    pub fn instance(&self, labels: &Labels) -> Option<&Instance> {
        self.instances.get(labels)
    }

    /// Every series now, grouped by metric in [`METRICS`] order.
    pub fn series(&self) -> Vec<Series> {
        let mut out = Vec::new();
        for metric in METRICS {
            for (labels, i) in &self.instances {
                let number = |v: u64| Series { metric, labels: labels.clone(), value: Value::Number(v as f64) };
                match metric.name {
                    "loadgate_requests_total" => out.push(number(i.requests)),
                    "loadgate_requests_sent_total" => out.push(number(i.sent)),
                    "loadgate_errors_total" => out.extend(i.errors.iter().map(|(class, &n)| Series {
                        metric,
                        labels: labels.with("class", class),
                        value: Value::Number(n as f64),
                    })),
                    "loadgate_in_flight" => out.push(number(i.in_flight)),
                    "loadgate_connections" => out.push(number(i.connections)),
                    "loadgate_phase_active" => out.push(number(u64::from(i.active))),
                    "loadgate_latency_seconds" => {
                        out.push(Series { metric, labels: labels.clone(), value: Value::Histogram(i.latency.clone()) })
                    }
                    _ => {
                        if i.send_lag.count > 0 {
                            out.push(Series {
                                metric,
                                labels: labels.clone(),
                                value: Value::Histogram(i.send_lag.clone()),
                            });
                        }
                    }
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hist(values: &[u64]) -> Histogram<u64> {
        let mut h = loadgate_measure::new_histogram();
        for &v in values {
            h.record(v).unwrap();
        }
        h
    }

    #[test]
    fn bucket_boundaries_are_exact_powers() {
        assert_eq!(NativeHistogram::index(1.0), 0);
        assert_eq!(NativeHistogram::index(2.0), 32);
        assert_eq!(NativeHistogram::index(0.5), -32);
        assert_eq!(NativeHistogram::index(1.01), 1);
        for i in -700..100 {
            let ub = NativeHistogram::upper_bound(i);
            assert_eq!(NativeHistogram::index(ub), i, "the upper bound of {i} belongs to {i}");
            assert_eq!(NativeHistogram::index(ub * 1.0001), i + 1);
        }
    }

    #[test]
    fn labels_sort_and_drop_empty_values() {
        let l = Labels::new([("spec", "s".to_owned()), ("cell", String::new()), ("scenario", "a".to_owned())]);
        assert_eq!(l.pairs(), &[("scenario".to_owned(), "a".to_owned()), ("spec".to_owned(), "s".to_owned())]);
        assert_eq!(l.with("class", "read").pairs()[0].0, "class");
    }

    #[test]
    fn a_settle_replaces_the_ticks_with_the_exact_totals() {
        let l = Labels::new([("scenario", "a".to_owned())]);
        let mut agg = Aggregate::new();
        let (e, s) = (ErrorCounts { timeout: 1, ..Default::default() }, StatusCounts::default());
        let tick = hist(&[1000, 2000]);
        let none = hist(&[]);
        agg.begin(&l);
        let i = Interval {
            sent: 3,
            completed: 2,
            errors: &e,
            status: &s,
            in_flight: 1,
            connections: 4,
            latency: &tick,
            send_lag: &none,
        };
        agg.interval(&l, &i);
        assert_eq!(agg.instance(&l).unwrap().requests, 2);
        let all = hist(&[1000, 2000, 3000]);
        let e2 = ErrorCounts { timeout: 2, ..Default::default() };
        let s2 = StatusCounts { server_error: 1, ..Default::default() };
        agg.settle(&l, &Totals { sent: 5, completed: 3, errors: &e2, status: &s2, latency: &all, send_lag: &none });
        let got = agg.instance(&l).unwrap();
        assert_eq!((got.requests, got.sent, got.latency.count, got.in_flight, got.active), (3, 5, 3, 0, false));
        assert_eq!(got.errors["timeout"], 2);
        assert_eq!(got.errors["status_5xx"], 1);
        // A second run of the same labels adds to the first.
        agg.begin(&l);
        agg.settle(&l, &Totals { sent: 5, completed: 3, errors: &e2, status: &s2, latency: &all, send_lag: &none });
        assert_eq!(agg.instance(&l).unwrap().requests, 6);
        let series = agg.series();
        assert!(series.iter().any(|s| s.metric.name == "loadgate_errors_total"
            && s.labels.pairs().contains(&("class".to_owned(), "status_5xx".to_owned()))));
        assert!(!series.iter().any(|s| s.metric.name == "loadgate_send_lag_seconds"), "no send lag in a closed load");
    }

    #[test]
    fn histograms_from_hdr_keep_count_and_sum() {
        let mut n = NativeHistogram::default();
        n.add_hdr(&hist(&[100, 100, 5000]));
        assert_eq!(n.count, 3);
        assert!((n.sum - 0.0052).abs() < 1e-5, "{}", n.sum);
        assert_eq!(n.buckets.values().sum::<u64>(), 3);
        assert_eq!(n.runs().len(), 2);
    }
}
