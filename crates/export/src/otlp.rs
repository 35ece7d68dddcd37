//! OTLP metrics over HTTP/protobuf (`POST /v1/metrics`): an `ExportMetricsServiceRequest`
//! (opentelemetry-proto's `metrics/v1`, the fields loadgate writes, by hand with prost). Counters are
//! cumulative monotonic sums, gauges gauges, histograms exponential histograms of scale [`SCHEMA`].
//! Oneof members are written as the optional fields they are on the wire.

use crate::series::{Kind, NativeHistogram, Series, Value, SCHEMA, ZERO_THRESHOLD};

pub const CONTENT_TYPE: &str = "application/x-protobuf";
/// `AGGREGATION_TEMPORALITY_CUMULATIVE`.
pub const CUMULATIVE: i32 = 2;

#[derive(Clone, PartialEq, prost::Message)]
pub struct ExportMetricsServiceRequest {
    #[prost(message, repeated, tag = "1")]
    pub resource_metrics: Vec<ResourceMetrics>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ResourceMetrics {
    #[prost(message, optional, tag = "1")]
    pub resource: Option<Resource>,
    #[prost(message, repeated, tag = "2")]
    pub scope_metrics: Vec<ScopeMetrics>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Resource {
    #[prost(message, repeated, tag = "1")]
    pub attributes: Vec<KeyValue>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ScopeMetrics {
    #[prost(message, optional, tag = "1")]
    pub scope: Option<InstrumentationScope>,
    #[prost(message, repeated, tag = "2")]
    pub metrics: Vec<Metric>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct InstrumentationScope {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub version: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Metric {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub description: String,
    #[prost(string, tag = "3")]
    pub unit: String,
    #[prost(message, optional, tag = "5")]
    pub gauge: Option<Gauge>,
    #[prost(message, optional, tag = "7")]
    pub sum: Option<Sum>,
    #[prost(message, optional, tag = "10")]
    pub exponential_histogram: Option<ExponentialHistogram>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Gauge {
    #[prost(message, repeated, tag = "1")]
    pub data_points: Vec<NumberDataPoint>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Sum {
    #[prost(message, repeated, tag = "1")]
    pub data_points: Vec<NumberDataPoint>,
    #[prost(int32, tag = "2")]
    pub aggregation_temporality: i32,
    #[prost(bool, tag = "3")]
    pub is_monotonic: bool,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ExponentialHistogram {
    #[prost(message, repeated, tag = "1")]
    pub data_points: Vec<ExponentialHistogramDataPoint>,
    #[prost(int32, tag = "2")]
    pub aggregation_temporality: i32,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct NumberDataPoint {
    #[prost(fixed64, tag = "2")]
    pub start_time_unix_nano: u64,
    #[prost(fixed64, tag = "3")]
    pub time_unix_nano: u64,
    #[prost(double, optional, tag = "4")]
    pub as_double: Option<f64>,
    #[prost(sfixed64, optional, tag = "6")]
    pub as_int: Option<i64>,
    #[prost(message, repeated, tag = "7")]
    pub attributes: Vec<KeyValue>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ExponentialHistogramDataPoint {
    #[prost(message, repeated, tag = "1")]
    pub attributes: Vec<KeyValue>,
    #[prost(fixed64, tag = "2")]
    pub start_time_unix_nano: u64,
    #[prost(fixed64, tag = "3")]
    pub time_unix_nano: u64,
    #[prost(fixed64, tag = "4")]
    pub count: u64,
    #[prost(double, optional, tag = "5")]
    pub sum: Option<f64>,
    #[prost(sint32, tag = "6")]
    pub scale: i32,
    #[prost(fixed64, tag = "7")]
    pub zero_count: u64,
    #[prost(message, optional, tag = "8")]
    pub positive: Option<Buckets>,
    #[prost(double, tag = "14")]
    pub zero_threshold: f64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Buckets {
    #[prost(sint32, tag = "1")]
    pub offset: i32,
    #[prost(uint64, repeated, tag = "2")]
    pub bucket_counts: Vec<u64>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct KeyValue {
    #[prost(string, tag = "1")]
    pub key: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<AnyValue>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct AnyValue {
    #[prost(string, optional, tag = "1")]
    pub string_value: Option<String>,
}

fn attributes(s: &Series) -> Vec<KeyValue> {
    s.labels
        .pairs()
        .iter()
        .map(|(k, v)| KeyValue { key: k.clone(), value: Some(AnyValue { string_value: Some(v.clone()) }) })
        .collect()
}

/// OTLP's buckets: index `i` holds `(b^i, b^(i+1)]`, one below Prometheus' index of the same bucket; the
/// counts run without gaps from the offset.
pub fn buckets(h: &NativeHistogram) -> Option<Buckets> {
    let (&first, _) = h.buckets.first_key_value()?;
    let (&last, _) = h.buckets.last_key_value()?;
    let counts = (first..=last).map(|i| h.buckets.get(&i).copied().unwrap_or(0)).collect();
    Some(Buckets { offset: first - 1, bucket_counts: counts })
}

/// The series as one request: a metric per family, a data point per series. `start_ns` is when the counters
/// began (the exporter's start), `now_ns` the points' time.
pub fn request(series: &[Series], start_ns: u64, now_ns: u64, version: &str) -> ExportMetricsServiceRequest {
    let mut metrics: Vec<Metric> = Vec::new();
    for s in series {
        let name = s.metric.name.trim_end_matches("_total");
        if metrics.last().is_none_or(|m| m.name != name) {
            let mut m = Metric {
                name: name.to_owned(),
                description: s.metric.help.to_owned(),
                unit: s.metric.unit.to_owned(),
                gauge: None,
                sum: None,
                exponential_histogram: None,
            };
            match s.metric.kind {
                Kind::Counter => {
                    m.sum =
                        Some(Sum { data_points: Vec::new(), aggregation_temporality: CUMULATIVE, is_monotonic: true })
                }
                Kind::Gauge => m.gauge = Some(Gauge { data_points: Vec::new() }),
                Kind::Histogram => {
                    m.exponential_histogram =
                        Some(ExponentialHistogram { data_points: Vec::new(), aggregation_temporality: CUMULATIVE })
                }
            }
            metrics.push(m);
        }
        let Some(m) = metrics.last_mut() else { continue };
        match &s.value {
            Value::Number(v) => {
                let point = NumberDataPoint {
                    start_time_unix_nano: start_ns,
                    time_unix_nano: now_ns,
                    as_double: None,
                    as_int: Some(*v as i64),
                    attributes: attributes(s),
                };
                if let Some(sum) = &mut m.sum {
                    sum.data_points.push(point);
                } else if let Some(g) = &mut m.gauge {
                    g.data_points.push(point);
                }
            }
            Value::Histogram(h) => {
                if let Some(e) = &mut m.exponential_histogram {
                    e.data_points.push(ExponentialHistogramDataPoint {
                        attributes: attributes(s),
                        start_time_unix_nano: start_ns,
                        time_unix_nano: now_ns,
                        count: h.count,
                        sum: Some(h.sum),
                        scale: SCHEMA,
                        zero_count: h.zero_count,
                        positive: buckets(h),
                        zero_threshold: ZERO_THRESHOLD,
                    });
                }
            }
        }
    }
    let scope = InstrumentationScope { name: "loadgate".to_owned(), version: version.to_owned() };
    let service = KeyValue {
        key: "service.name".to_owned(),
        value: Some(AnyValue { string_value: Some("loadgate".to_owned()) }),
    };
    ExportMetricsServiceRequest {
        resource_metrics: vec![ResourceMetrics {
            resource: Some(Resource { attributes: vec![service] }),
            scope_metrics: vec![ScopeMetrics { scope: Some(scope), metrics }],
        }],
    }
}

/// The body of an OTLP/HTTP request.
pub fn encode(series: &[Series], start_ns: u64, now_ns: u64, version: &str) -> Vec<u8> {
    prost::Message::encode_to_vec(&request(series, start_ns, now_ns, version))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::series::{Labels, LATENCY, REQUESTS};

    #[test]
    fn a_request_round_trips_with_otlp_bucket_indices() {
        let mut h = NativeHistogram::default();
        h.record_micros(1000, 2);
        h.record_micros(4000, 1);
        let first = *h.buckets.keys().next().unwrap();
        let labels = Labels::new([("scenario", "a".to_owned())]);
        let series = [
            Series { metric: REQUESTS, labels: labels.clone(), value: Value::Number(3.0) },
            Series { metric: LATENCY, labels, value: Value::Histogram(h) },
        ];
        let body = encode(&series, 1, 2, "0.1.0");
        let back: ExportMetricsServiceRequest = prost::Message::decode(body.as_slice()).unwrap();
        let metrics = &back.resource_metrics[0].scope_metrics[0].metrics;
        assert_eq!(metrics[0].name, "loadgate_requests");
        assert_eq!(metrics[0].sum.as_ref().unwrap().data_points[0].as_int, Some(3));
        let p = &metrics[1].exponential_histogram.as_ref().unwrap().data_points[0];
        assert_eq!((p.count, p.scale), (3, SCHEMA));
        let b = p.positive.as_ref().unwrap();
        assert_eq!(b.offset, first - 1);
        assert_eq!(b.bucket_counts.iter().sum::<u64>(), 3);
    }
}
