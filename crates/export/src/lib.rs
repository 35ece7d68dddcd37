//! Live metrics of a run, while it runs (issue 33): the runner's per-second ticks aggregated into series
//! ([`series`], pure), encoded for Prometheus remote write ([`remote_write`], native histograms), OTLP metrics over
//! HTTP ([`otlp`], exponential histograms) and the Prometheus text exposition ([`text`], classic buckets at the
//! native histogram's boundaries), sent by a thread per output from a bounded queue ([`sender`]) and served on
//! `/metrics` ([`http`]). [`Exporter`] puts them together; the runner drives it from its events.
//!
//! Nothing here is on the engine's path: the runner's observer calls it once a second, and a queue that is
//! full drops the payload (counted) instead of waiting.

mod exporter;
pub mod http;
pub mod otlp;
pub mod remote_write;
pub mod sender;
pub mod series;
pub mod text;

pub use exporter::{ExportConfig, ExportError, ExportReport, Exporter, OutputReport};
