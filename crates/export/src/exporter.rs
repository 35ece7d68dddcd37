//! The exporter: the aggregate behind a lock (taken once a second by the runner's observer and by each scrape,
//! never by the engine), a sender per output and the `/metrics` endpoint.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use loadgate_model::output::{OutputKind, OutputSpec};

use crate::http::{Endpoint, MetricsServer};
use crate::sender::{SendOptions, SendStats, Sender};
use crate::series::Aggregate;

/// What to export and where.
#[derive(Debug, Clone)]
pub struct ExportConfig {
    pub outputs: Vec<OutputSpec>,
    /// `--metrics-listen`: serve `/metrics` here during the run.
    pub listen: Option<String>,
    /// At the end, how long the `/metrics` endpoint waits for a scrape of the final values.
    pub linger: Duration,
    /// At the end, how long the senders may take to send what is queued.
    pub flush: Duration,
    pub send: SendOptions,
    /// loadgate's version, for OTLP's instrumentation scope.
    pub version: String,
}

impl ExportConfig {
    pub fn new(outputs: Vec<OutputSpec>, listen: Option<String>) -> ExportConfig {
        ExportConfig {
            outputs,
            listen,
            linger: Duration::from_secs(5),
            flush: Duration::from_secs(5),
            send: SendOptions::default(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
        }
    }

    /// Nothing to export.
    pub fn is_empty(&self) -> bool {
        self.outputs.is_empty() && self.listen.is_none()
    }
}

/// An exporter that could not start.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("the output {url}: {message}")]
    Output { url: String, message: String },
    #[error("cannot serve /metrics on {addr}: {source}")]
    Listen {
        addr: String,
        #[source]
        source: std::io::Error,
    },
}

/// What one output did over the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputReport {
    pub kind: OutputKind,
    /// The URL without credentials or query.
    pub url: String,
    pub stats: SendStats,
}

/// What the exporter did over the run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExportReport {
    pub outputs: Vec<OutputReport>,
    /// Scrapes the `/metrics` endpoint answered, when it ran.
    pub scrapes: Option<u64>,
}

impl ExportReport {
    /// A sentence per output that lost payloads (dropped or failed).
    pub fn problems(&self) -> Vec<String> {
        self.outputs
            .iter()
            .filter(|o| o.stats.dropped + o.stats.failed > 0)
            .map(|o| {
                let s = &o.stats;
                let why = s.last_error.as_deref().map(|e| format!(" (last error: {e})")).unwrap_or_default();
                format!(
                    "live export to {} ({}): {} of {} payloads not delivered ({} dropped, {} failed){why}; the run's results are not affected",
                    o.url,
                    o.kind,
                    s.dropped + s.failed,
                    s.offered,
                    s.dropped,
                    s.failed
                )
            })
            .collect()
    }
}

/// A URL for reports: no user, password or query.
pub fn shown_url(url: &str) -> String {
    match ::url::Url::parse(url) {
        Ok(mut u) => {
            let _ = u.set_username("");
            let _ = u.set_password(None);
            u.set_query(None);
            u.to_string()
        }
        Err(_) => "(invalid URL)".to_owned(),
    }
}

/// A running exporter.
pub struct Exporter {
    aggregate: Arc<Mutex<Aggregate>>,
    senders: Vec<(OutputKind, String, Sender)>,
    server: Option<MetricsServer>,
    start_ns: u64,
    linger: Duration,
    flush: Duration,
    version: String,
    /// The last push's time in milliseconds: each push is later (a receiver refuses two different samples
    /// of a series at one timestamp).
    last_ms: Mutex<i64>,
}

impl std::fmt::Debug for Exporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Exporter").field("outputs", &self.senders.len()).field("server", &self.server).finish()
    }
}

fn now_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

impl Exporter {
    /// Starts a sender per output and the `/metrics` endpoint.
    pub fn start(config: ExportConfig) -> Result<Exporter, ExportError> {
        let aggregate = Arc::new(Mutex::new(Aggregate::new()));
        let mut senders = Vec::new();
        for o in &config.outputs {
            let url = shown_url(&o.url);
            let endpoint =
                Endpoint::parse(&o.url).map_err(|message| ExportError::Output { url: url.clone(), message })?;
            let mut headers: Vec<(String, String)> = match o.kind {
                OutputKind::PrometheusRemoteWrite => {
                    crate::remote_write::HEADERS.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
                }
                OutputKind::Otlp => vec![("Content-Type".to_owned(), crate::otlp::CONTENT_TYPE.to_owned())],
            };
            headers.extend(o.headers.iter().cloned());
            let sender = Sender::start(endpoint, headers, config.send.clone())
                .map_err(|e| ExportError::Output { url: url.clone(), message: e.to_string() })?;
            senders.push((o.kind, url, sender));
        }
        let server = match &config.listen {
            Some(addr) => {
                let shared = Arc::clone(&aggregate);
                let render: crate::http::Render = Arc::new(move || {
                    let series = shared.lock().map(|a| a.series()).unwrap_or_default();
                    crate::text::render(&series)
                });
                Some(
                    MetricsServer::start(addr, render)
                        .map_err(|source| ExportError::Listen { addr: addr.clone(), source })?,
                )
            }
            None => None,
        };
        Ok(Exporter {
            aggregate,
            senders,
            server,
            start_ns: now_ns(),
            linger: config.linger,
            flush: config.flush,
            version: config.version,
            last_ms: Mutex::new(0),
        })
    }

    /// Changes the aggregate (a tick, a settle).
    pub fn update(&self, change: impl FnOnce(&mut Aggregate)) {
        if let Ok(mut a) = self.aggregate.lock() {
            change(&mut a);
        }
    }

    /// Offers every output the series as they are now.
    pub fn push(&self) {
        if self.senders.is_empty() {
            return;
        }
        let series = match self.aggregate.lock() {
            Ok(a) => a.series(),
            Err(_) => return,
        };
        let mut now = now_ns();
        if let Ok(mut last) = self.last_ms.lock() {
            let ms = ((now / 1_000_000) as i64).max(*last + 1);
            *last = ms;
            now = now.max(ms as u64 * 1_000_000);
        }
        let ms = (now / 1_000_000) as i64;
        for (kind, _, sender) in &self.senders {
            let body = match kind {
                OutputKind::PrometheusRemoteWrite => crate::remote_write::encode(&series, ms),
                OutputKind::Otlp => crate::otlp::encode(&series, self.start_ns, now, &self.version),
            };
            sender.offer(body);
        }
    }

    /// Where `/metrics` is served.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.server.as_ref().map(MetricsServer::addr)
    }

    /// Pushes the final values, gives a scraper up to `linger` to read them and the senders up to `flush` to
    /// send what is queued, and stops.
    pub fn finish(self) -> ExportReport {
        self.push();
        let scrapes = self.server.as_ref().map(|server| {
            let before = server.served();
            let until = Instant::now() + self.linger;
            while server.served() == before && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(20));
            }
            server.served()
        });
        drop(self.server);
        let until = Instant::now() + self.flush;
        let outputs = self
            .senders
            .into_iter()
            .map(|(kind, url, sender)| {
                let stats = sender.finish(until.saturating_duration_since(Instant::now()));
                OutputReport { kind, url, stats }
            })
            .collect();
        ExportReport { outputs, scrapes }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shown_urls_carry_no_credentials() {
        assert_eq!(shown_url("http://u:p@h:1/w?token=x"), "http://h:1/w");
    }

    #[test]
    fn an_endpoint_that_is_down_drops_and_reports() {
        // A port nothing listens on: bind one and close it.
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let spec = OutputSpec {
            kind: OutputKind::PrometheusRemoteWrite,
            url: format!("http://127.0.0.1:{port}/api/v1/write"),
            headers: Vec::new(),
        };
        let mut config = ExportConfig::new(vec![spec], None);
        config.send.backoff = Duration::from_millis(1);
        config.send.queue = 2;
        let e = Exporter::start(config).unwrap();
        for _ in 0..10 {
            e.push();
        }
        let report = e.finish();
        let s = &report.outputs[0].stats;
        assert_eq!(s.offered, 11);
        assert_eq!(s.sent, 0);
        assert_eq!(s.dropped + s.failed, 11, "{s:?}");
        assert!(report.problems()[0].contains("not delivered"), "{:?}", report.problems());
    }
}
