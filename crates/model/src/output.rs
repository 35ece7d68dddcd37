//! Where a run's live metrics go while it runs (`outputs:` in a spec, `--output` on the command line): a
//! Prometheus remote-write endpoint or an OTLP/HTTP metrics endpoint. Nothing here is measured or judged, and
//! nothing here reaches the plan or the results: an output's headers may carry credentials.

use std::fmt;

/// The protocol an output speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputKind {
    /// Prometheus remote write 1.0 (protobuf `WriteRequest`, snappy), native histograms.
    PrometheusRemoteWrite,
    /// OTLP metrics over HTTP/protobuf (`/v1/metrics`), exponential histograms.
    Otlp,
}

impl OutputKind {
    /// The name used in specs and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            OutputKind::PrometheusRemoteWrite => "prometheus_remote_write",
            OutputKind::Otlp => "otlp",
        }
    }

    /// Reads a name: `prometheus_remote_write` (or `prometheus`, `prw`) and `otlp`.
    pub fn parse(name: &str) -> Option<OutputKind> {
        match name {
            "prometheus_remote_write" | "prometheus" | "prw" => Some(OutputKind::PrometheusRemoteWrite),
            "otlp" => Some(OutputKind::Otlp),
            _ => None,
        }
    }
}

impl fmt::Display for OutputKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One live output.
#[derive(Clone, PartialEq, Eq)]
pub struct OutputSpec {
    pub kind: OutputKind,
    /// `http://host:port/path`.
    pub url: String,
    /// Extra request headers (`Authorization`, a tenant id): sent to the endpoint, never written anywhere.
    pub headers: Vec<(String, String)>,
}

/// Headers are left out: they may be credentials.
impl fmt::Debug for OutputSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OutputSpec")
            .field("kind", &self.kind)
            .field("url", &self.url)
            .field("headers", &self.headers.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>())
            .finish()
    }
}

impl OutputSpec {
    /// Reads `KIND=URL` (`prometheus=http://localhost:9090/api/v1/write`, `otlp=http://localhost:4318/v1/metrics`).
    pub fn parse_flag(text: &str) -> Result<OutputSpec, String> {
        let (kind, url) = text.split_once('=').ok_or_else(|| {
            format!("`{text}` is not KIND=URL (for example prometheus=http://localhost:9090/api/v1/write)")
        })?;
        let kind = OutputKind::parse(kind.trim())
            .ok_or_else(|| format!("`{kind}` is not an output kind: use prometheus or otlp"))?;
        let url = url.trim().to_owned();
        check_url(&url)?;
        Ok(OutputSpec { kind, url, headers: Vec::new() })
    }
}

/// An output's URL: `http://host[:port][/path]` (plain HTTP; TLS endpoints need a local agent or proxy).
pub fn check_url(url: &str) -> Result<(), String> {
    let parsed = ::url::Url::parse(url).map_err(|e| format!("`{url}` is not a URL: {e}"))?;
    if parsed.scheme() != "http" {
        return Err(format!(
            "`{url}`: outputs speak plain http:// (put a local agent or proxy in front of an https:// endpoint)"
        ));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(format!("`{url}` has no host"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_read_kind_and_url() {
        let o = OutputSpec::parse_flag("prometheus=http://127.0.0.1:9090/api/v1/write").unwrap();
        assert_eq!(o.kind, OutputKind::PrometheusRemoteWrite);
        assert_eq!(o.url, "http://127.0.0.1:9090/api/v1/write");
        assert_eq!(OutputSpec::parse_flag("otlp=http://h:4318/v1/metrics").unwrap().kind, OutputKind::Otlp);
        assert!(OutputSpec::parse_flag("influx=http://h").unwrap_err().contains("not an output kind"));
        assert!(OutputSpec::parse_flag("otlp=https://h/v1/metrics").unwrap_err().contains("plain http"));
        assert!(OutputSpec::parse_flag("http://h").is_err());
    }

    #[test]
    fn debug_leaves_header_values_out() {
        let o = OutputSpec {
            kind: OutputKind::Otlp,
            url: "http://h/v1/metrics".into(),
            headers: vec![("Authorization".into(), "Bearer s3cret".into())],
        };
        let text = format!("{o:?}");
        assert!(text.contains("Authorization") && !text.contains("s3cret"), "{text}");
    }
}
