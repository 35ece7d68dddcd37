//! Prometheus remote write 1.0: a protobuf `WriteRequest` (prometheus/prompb's `remote.proto` and `types.proto`,
//! the fields loadgate writes, by hand with prost), block-compressed with snappy. Histograms are native
//! histograms (integer counts, delta-encoded buckets in spans).

use crate::series::{NativeHistogram, Series, Value, SCHEMA, ZERO_THRESHOLD};

/// The headers a remote-write request carries.
pub const HEADERS: [(&str, &str); 3] = [
    ("Content-Encoding", "snappy"),
    ("Content-Type", "application/x-protobuf"),
    ("X-Prometheus-Remote-Write-Version", "0.1.0"),
];

#[derive(Clone, PartialEq, prost::Message)]
pub struct WriteRequest {
    #[prost(message, repeated, tag = "1")]
    pub timeseries: Vec<TimeSeries>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct TimeSeries {
    #[prost(message, repeated, tag = "1")]
    pub labels: Vec<Label>,
    #[prost(message, repeated, tag = "2")]
    pub samples: Vec<Sample>,
    #[prost(message, repeated, tag = "4")]
    pub histograms: Vec<Histogram>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Label {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub value: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Sample {
    #[prost(double, tag = "1")]
    pub value: f64,
    /// Milliseconds since the epoch.
    #[prost(int64, tag = "2")]
    pub timestamp: i64,
}

/// `prometheus.Histogram`; the `count` and `zero_count` oneofs are written as their integer members.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Histogram {
    #[prost(uint64, optional, tag = "1")]
    pub count_int: Option<u64>,
    #[prost(double, tag = "3")]
    pub sum: f64,
    #[prost(sint32, tag = "4")]
    pub schema: i32,
    #[prost(double, tag = "5")]
    pub zero_threshold: f64,
    #[prost(uint64, optional, tag = "6")]
    pub zero_count_int: Option<u64>,
    #[prost(message, repeated, tag = "11")]
    pub positive_spans: Vec<BucketSpan>,
    #[prost(sint64, repeated, tag = "12")]
    pub positive_deltas: Vec<i64>,
    #[prost(int32, tag = "14")]
    pub reset_hint: i32,
    #[prost(int64, tag = "15")]
    pub timestamp: i64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct BucketSpan {
    #[prost(sint32, tag = "1")]
    pub offset: i32,
    #[prost(uint32, tag = "2")]
    pub length: u32,
}

/// A native histogram at `timestamp_ms`.
pub fn histogram(h: &NativeHistogram, timestamp_ms: i64) -> Histogram {
    let mut spans = Vec::new();
    let mut deltas = Vec::new();
    let mut previous_end: Option<i32> = None;
    let mut previous_count = 0i64;
    for (start, counts) in h.runs() {
        let offset = match previous_end {
            None => start,
            Some(end) => start - end,
        };
        spans.push(BucketSpan { offset, length: counts.len() as u32 });
        for n in &counts {
            let n = *n as i64;
            deltas.push(n - previous_count);
            previous_count = n;
        }
        previous_end = Some(start + counts.len() as i32);
    }
    Histogram {
        count_int: Some(h.count),
        sum: h.sum,
        schema: SCHEMA,
        zero_threshold: ZERO_THRESHOLD,
        zero_count_int: Some(h.zero_count),
        positive_spans: spans,
        positive_deltas: deltas,
        reset_hint: 0,
        timestamp: timestamp_ms,
    }
}

/// The series as a `WriteRequest`, each with one sample (or histogram) at `timestamp_ms`.
pub fn write_request(series: &[Series], timestamp_ms: i64) -> WriteRequest {
    let timeseries = series
        .iter()
        .map(|s| {
            let labels = std::iter::once(Label { name: "__name__".into(), value: s.metric.name.into() })
                .chain(s.labels.pairs().iter().map(|(k, v)| Label { name: k.clone(), value: v.clone() }))
                .collect();
            match &s.value {
                Value::Number(v) => TimeSeries {
                    labels,
                    samples: vec![Sample { value: *v, timestamp: timestamp_ms }],
                    histograms: Vec::new(),
                },
                Value::Histogram(h) => {
                    TimeSeries { labels, samples: Vec::new(), histograms: vec![histogram(h, timestamp_ms)] }
                }
            }
        })
        .collect();
    WriteRequest { timeseries }
}

/// The body of a remote-write request: the `WriteRequest`, snappy block-compressed.
pub fn encode(series: &[Series], timestamp_ms: i64) -> Vec<u8> {
    let raw = prost::Message::encode_to_vec(&write_request(series, timestamp_ms));
    snap::raw::Encoder::new().compress_vec(&raw).unwrap_or_default()
}

/// Reads a body back (tests, a receiver).
pub fn decode(body: &[u8]) -> Result<WriteRequest, String> {
    let raw = snap::raw::Decoder::new().decompress_vec(body).map_err(|e| e.to_string())?;
    prost::Message::decode(raw.as_slice()).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::series::{Labels, LATENCY};

    #[test]
    fn buckets_become_spans_and_deltas() {
        let mut h = NativeHistogram::default();
        h.buckets.extend([(3, 2), (4, 5), (7, 1)]);
        h.count = 8;
        let p = histogram(&h, 1);
        assert_eq!(p.positive_spans, vec![BucketSpan { offset: 3, length: 2 }, BucketSpan { offset: 2, length: 1 }]);
        assert_eq!(p.positive_deltas, vec![2, 3, -4]);
    }

    #[test]
    fn a_body_round_trips() {
        let mut h = NativeHistogram::default();
        h.record_micros(1500, 3);
        let s = Series { metric: LATENCY, labels: Labels::new([("spec", "x".to_owned())]), value: Value::Histogram(h) };
        let back = decode(&encode(&[s], 42)).unwrap();
        let ts = &back.timeseries[0];
        assert_eq!(ts.labels[0].value, "loadgate_latency_seconds");
        assert_eq!(ts.histograms[0].count_int, Some(3));
        assert_eq!(ts.histograms[0].timestamp, 42);
    }
}
