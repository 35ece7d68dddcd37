//! `loadgate run --url ... -c ... -d ...`: wrk/wrk2-style flags turned into a spec, so that a flag run and a
//! spec run are the same thing (`--print-spec` shows it).

use std::fmt::Write as _;

use loadgate_model::yaml::quote;

/// A one-scenario run described by the flags people type from memory (wrk, wrk2, ab); the values are the
/// flags' text as given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FlagRun {
    /// `http://host:port/path?query`.
    pub url: Option<String>,
    /// `-c`: connections to keep open (default 10).
    pub connections: Option<u64>,
    /// `-d`: how long to run; a bare number is seconds, as in wrk (default 10s).
    pub duration: Option<String>,
    /// `-n`: stop after this many requests (ab).
    pub requests: Option<u64>,
    /// `-t`: worker threads.
    pub threads: Option<u32>,
    /// `-R`: an open loop at this rate; a bare number is requests per second, as in wrk2.
    pub rate: Option<String>,
    /// `--timeout`: per request; a bare number is seconds.
    pub timeout: Option<String>,
    /// `-H 'Name: value'`.
    pub headers: Vec<String>,
    /// `-m`.
    pub method: Option<String>,
    /// `--body`.
    pub body: Option<String>,
    /// `--pipeline N`.
    pub pipeline: Option<u32>,
    /// `--no-keepalive`: a new connection per request (ab without `-k`).
    pub no_keepalive: bool,
    /// `--slo EXPR`.
    pub slos: Vec<String>,
    /// `-k`/`--insecure`: an `https://` URL's certificate is not checked (curl, oha).
    pub insecure: bool,
    /// `--protocol http1|http2|auto` (`--http2` is `http2`): `target.protocol`.
    pub protocol: Option<String>,
    /// `--streams N`: HTTP/2 streams per connection (h2load `-m`).
    pub streams: Option<u32>,
    /// `--pacing default|precise`: `hardware.generator.pacing`.
    pub pacing: Option<String>,
    /// `--connect-rate auto|unlimited|RATE`: the load's `connect_rate`.
    pub connect_rate: Option<String>,
}

/// A bare number means seconds, as in wrk (`-d 30`, `--timeout 8`).
fn seconds_default(text: &str) -> String {
    let t = text.trim();
    if !t.is_empty() && t.chars().all(|c| c.is_ascii_digit()) {
        format!("{t}s")
    } else {
        t.to_owned()
    }
}

/// A bare number means requests per second, as in wrk2 (`-R 20000`).
fn rate_default(text: &str) -> String {
    let t = text.trim();
    if t.parse::<f64>().is_ok() {
        format!("{t}/s")
    } else {
        t.to_owned()
    }
}

/// Builds the YAML spec a flag run stands for. Values are passed through as written; the spec loader then
/// checks them like any other spec, so a bad flag gets the same located, explained error.
pub fn spec_from_flags(f: &FlagRun) -> Result<String, String> {
    let url = f.url.as_deref().ok_or("--url is required without a spec")?;
    let (scheme, rest) = match (url.strip_prefix("http://"), url.strip_prefix("https://")) {
        (Some(rest), _) => ("http", rest),
        (None, Some(rest)) => ("https", rest),
        (None, None) => return Err(format!("`{url}` is not an http:// or https:// URL")),
    };
    let (base, path) = match rest.find('/') {
        Some(i) => (format!("{scheme}://{}", &rest[..i]), rest[i..].to_owned()),
        None => (url.to_owned(), "/".to_owned()),
    };
    if f.insecure && scheme == "http" {
        return Err(format!("`--insecure` applies to https:// URLs, and `{url}` is plain http"));
    }
    let connections = f.connections.unwrap_or(10);
    let mut y = String::new();
    let _ = writeln!(y, "# yaml-language-server: $schema=https://loadgate.dev/schemas/loadgate.schema.json");
    let _ = writeln!(y, "# from: loadgate run --url {url} ...");
    let _ = writeln!(y, "version: 1");
    let _ = writeln!(y, "name: adhoc");
    let mut generator = Vec::new();
    if let Some(t) = f.threads {
        generator.push(format!("threads: {t}"));
    }
    if let Some(p) = &f.pacing {
        generator.push(format!("pacing: {}", quote(p)));
    }
    if !generator.is_empty() {
        let _ = writeln!(y, "hardware:\n  generator: {{ {} }}", generator.join(", "));
    }
    let _ = writeln!(y, "target:\n  base_url: {}", quote(&base));
    if f.insecure {
        let _ = writeln!(y, "  tls: {{ insecure: true }}");
    }
    if let Some(p) = &f.protocol {
        let _ = writeln!(y, "  protocol: {}", quote(p));
    }
    let _ = writeln!(y, "scenarios:\n  main:");
    let _ = writeln!(y, "    request:");
    if let Some(m) = &f.method {
        let _ = writeln!(y, "      method: {}", quote(m));
    }
    let _ = writeln!(y, "      path: {}", quote(&path));
    if !f.headers.is_empty() {
        let _ = writeln!(y, "      headers:");
        for h in &f.headers {
            let (k, v) = h.split_once(':').ok_or_else(|| format!("-H `{h}` is not `Name: value`"))?;
            let _ = writeln!(y, "        {}: {}", quote(k.trim()), quote(v.trim()));
        }
    }
    if let Some(b) = &f.body {
        let _ = writeln!(y, "      body: {}", quote(b));
    }
    if let Some(t) = &f.timeout {
        let _ = writeln!(y, "    timeout: {}", quote(&seconds_default(t)));
    }
    let duration = quote(&seconds_default(f.duration.as_deref().unwrap_or("10s")));
    let _ = writeln!(y, "    load:");
    match &f.rate {
        Some(rate) => {
            let _ = writeln!(y, "      open:");
            let _ = writeln!(y, "        rate: {}", quote(&rate_default(rate)));
            let _ = writeln!(y, "        connections: {connections}");
            let _ = writeln!(y, "        duration: {duration}");
            if let Some(s) = f.streams {
                let _ = writeln!(y, "        streams: {s}");
            }
            if f.requests.is_some() || f.pipeline.is_some() || f.no_keepalive {
                return Err("-R (an open loop) cannot be combined with -n, --pipeline or --no-keepalive".into());
            }
        }
        None => {
            let _ = writeln!(y, "      closed:");
            let _ = writeln!(y, "        connections: {connections}");
            match f.requests {
                Some(n) => {
                    let _ = writeln!(y, "        requests: {n}");
                }
                None => {
                    let _ = writeln!(y, "        duration: {duration}");
                }
            }
            if let Some(p) = f.pipeline {
                let _ = writeln!(y, "        pipeline: {p}");
            }
            if f.no_keepalive {
                let _ = writeln!(y, "        keep_alive: false");
            }
            if let Some(s) = f.streams {
                let _ = writeln!(y, "        streams: {s}");
            }
        }
    }
    if let Some(r) = &f.connect_rate {
        let _ = writeln!(y, "        connect_rate: {}", quote(r));
    }
    if !f.slos.is_empty() {
        let _ = writeln!(y, "    slo:");
        for s in &f.slos {
            let _ = writeln!(y, "      - {}", quote(s));
        }
    }
    Ok(y)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrk2_flags_become_an_open_spec() {
        let f = FlagRun {
            url: Some("http://127.0.0.1:8080/v0/entity?id=1".into()),
            connections: Some(16),
            duration: Some("30".into()),
            rate: Some("32000".into()),
            threads: Some(4),
            headers: vec!["Accept: text/plain".into()],
            ..FlagRun::default()
        };
        let yaml = spec_from_flags(&f).unwrap();
        let spec = loadgate_spec::load_str("flags", &yaml, &loadgate_spec::LoadOptions::default()).unwrap();
        let cell = &spec.scenarios[0].cells[0];
        assert_eq!(cell.request.path, "/v0/entity?id=1");
        assert_eq!(cell.request.headers, vec![("Accept".to_owned(), "text/plain".to_owned())]);
        assert!(matches!(cell.load, loadgate_spec::Load::Open { connections: 16, .. }));
        assert_eq!(spec.hardware.threads, Some(4));
    }

    #[test]
    fn ab_flags_become_a_request_count() {
        let f = FlagRun {
            url: Some("http://localhost:8080".into()),
            connections: Some(100),
            requests: Some(300000),
            no_keepalive: true,
            ..FlagRun::default()
        };
        let yaml = spec_from_flags(&f).unwrap();
        let spec = loadgate_spec::load_str("flags", &yaml, &loadgate_spec::LoadOptions::default()).unwrap();
        assert!(matches!(
            spec.scenarios[0].cells[0].load,
            loadgate_spec::Load::Closed {
                connections: 100,
                stop: loadgate_spec::Stop::Requests(300000),
                keep_alive: false,
                ..
            }
        ));
    }
}
