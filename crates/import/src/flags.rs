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
    /// `--pipeline-reads each|batch`: the load's `pipeline_reads`.
    pub pipeline_reads: Option<String>,
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
    render_flags(f, false).map(|(yaml, _)| yaml)
}

/// [`spec_from_flags`] for printing (`--print-spec`): a spec the user may keep, whose credential headers read
/// their values from the environment ([`crate::credential::credential_reference`]) rather than hold them. Returns the spec and
/// the headers written so.
pub fn printable_spec_from_flags(f: &FlagRun) -> Result<(String, Vec<String>), String> {
    render_flags(f, true)
}

fn render_flags(f: &FlagRun, references: bool) -> Result<(String, Vec<String>), String> {
    let mut referenced = Vec::new();
    let url = f.url.as_deref().ok_or("--url is required without a spec")?;
    let shown = without_userinfo(url);
    let target = crate::values::parse_url(url).map_err(|reason| format!("`{shown}` is not a URL to load: {reason}"))?;
    let scheme = if target.https { "https" } else { "http" };
    if f.insecure && scheme == "http" {
        return Err(format!("`--insecure` applies to https:// URLs, and `{shown}` is plain http"));
    }
    let (base, path) = (target.base.clone(), target.path.clone());
    let headers = headers_of(f, &target)?;
    let connections = f.connections.unwrap_or(10);
    let mut y = String::new();
    let _ = writeln!(y, "# yaml-language-server: $schema=https://loadgate.dev/schemas/loadgate.schema.json");
    let _ = writeln!(y, "# from: loadgate run --url {shown} ...");
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
    if !headers.is_empty() {
        let _ = writeln!(y, "      headers:");
        for (k, v) in &headers {
            if references && loadgate_model::secrets::is_credential_header(k, &[]) {
                let env = crate::credential::credential_env_name(k);
                let _ = writeln!(
                    y,
                    "        {}: {}  # export {env}",
                    quote(k),
                    quote(&crate::credential::credential_reference(k))
                );
                referenced.push(k.clone());
            } else {
                let _ = writeln!(y, "        {}: {}", quote(k), quote(v));
            }
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
            if f.requests.is_some() || f.pipeline.is_some() || f.pipeline_reads.is_some() || f.no_keepalive {
                return Err(
                    "-R (an open loop) cannot be combined with -n, --pipeline, --pipeline-reads or --no-keepalive"
                        .into(),
                );
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
            if let Some(r) = &f.pipeline_reads {
                let _ = writeln!(y, "        pipeline_reads: {}", quote(r));
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
    let _ = writeln!(y, "    slo:");
    if f.slos.is_empty() {
        // As `loadgate import` writes for the same flags: a run whose requests fail does not pass.
        let _ = writeln!(y, "      # the default of a run from flags (`--slo` replaces it): errors fail the run");
        let _ = writeln!(y, "      - error_rate < 1%");
    }
    for s in &f.slos {
        let _ = writeln!(y, "      - {}", quote(s));
    }
    Ok((y, referenced))
}

/// The headers a flag run sends: `-H` lines by name (HTTP names ignore case), in order; a name given again adds its
/// value to the first (`a, b`; cookies `a; b`), the one field line HTTP makes of repeated ones, as wrk and curl
/// send them. A URL's `user:password@` is a Basic `Authorization` header, as curl sends it, unless `-H` gives one.
fn headers_of(f: &FlagRun, target: &crate::values::TargetUrl) -> Result<Vec<(String, String)>, String> {
    let mut headers: Vec<(String, String)> = Vec::new();
    let authorization =
        |h: &String| h.split_once(':').is_some_and(|(k, _)| k.trim().eq_ignore_ascii_case("authorization"));
    if let Some(user) = target.userinfo.as_ref().filter(|_| !f.headers.iter().any(authorization)) {
        headers.push(("Authorization".to_owned(), basic_auth(&percent_decode(user))));
    }
    for h in &f.headers {
        let (k, v) = h.split_once(':').ok_or_else(|| format!("-H `{h}` is not `Name: value`"))?;
        let (k, v) = (k.trim(), v.trim());
        match headers.iter_mut().find(|(name, _)| name.eq_ignore_ascii_case(k)) {
            Some((_, value)) => {
                value.push_str(if k.eq_ignore_ascii_case("cookie") { "; " } else { ", " });
                value.push_str(v);
            }
            None => headers.push((k.to_owned(), v.to_owned())),
        }
    }
    Ok(headers)
}

/// The values of the credential headers a flag run sends (`Authorization`, `Cookie`, ..., given with `-H` or made
/// of the URL's `user:password@`), and the URL's user information itself: what must never be shown of it.
pub fn flag_credentials(f: &FlagRun) -> Vec<String> {
    let Some(target) = f.url.as_deref().and_then(|u| crate::values::parse_url(u).ok()) else { return Vec::new() };
    let mut secret: Vec<String> = headers_of(f, &target)
        .unwrap_or_default()
        .into_iter()
        .filter(|(k, _)| loadgate_model::secrets::is_credential_header(k, &[]))
        .map(|(_, v)| v)
        .collect();
    secret.extend(target.userinfo);
    secret
}

/// A URL as it may be shown: its `user:password@` (a credential) written `***@`.
pub fn without_userinfo(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_owned() };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{scheme}://***{}", &rest[at..]),
        None => url.to_owned(),
    }
}

/// `Basic base64(user:password)`.
pub(crate) fn basic_auth(user_pass: &str) -> String {
    use base64::Engine as _;
    format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(user_pass))
}

/// A URL's user information as sent: `%40` is `@`, `%3A` is `:` (a byte sequence that is not UTF-8 is kept as
/// written).
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1).copied().and_then(hex), bytes.get(i + 2).copied().and_then(hex)) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (b, ..) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| text.to_owned())
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
    fn a_urls_credentials_become_a_basic_header_and_never_reach_the_spec_text() {
        let f = FlagRun { url: Some("http://alice:Pass%40word99@127.0.0.1:8080/x".into()), ..FlagRun::default() };
        let yaml = spec_from_flags(&f).unwrap();
        assert!(!yaml.contains("Pass"), "{yaml}");
        assert!(yaml.contains("# from: loadgate run --url http://***@127.0.0.1:8080/x"), "{yaml}");
        let spec = loadgate_spec::load_str("flags", &yaml, &loadgate_spec::LoadOptions::default()).unwrap();
        let loadgate_spec::Target::Url { base_url } = &spec.target else { panic!("{:?}", spec.target) };
        assert_eq!((base_url.host.as_str(), base_url.port), ("127.0.0.1", 8080));
        let cell = &spec.scenarios[0].cells[0];
        // base64("alice:Pass@word99")
        assert_eq!(
            cell.request.headers,
            vec![("Authorization".to_owned(), "Basic YWxpY2U6UGFzc0B3b3JkOTk=".to_owned())]
        );
        // A -H Authorization given too wins.
        let f = FlagRun {
            url: Some("http://alice:pw@127.0.0.1:8080/".into()),
            headers: vec!["authorization: Bearer t".into()],
            ..FlagRun::default()
        };
        let spec = loadgate_spec::load_str("flags", &spec_from_flags(&f).unwrap(), &Default::default()).unwrap();
        assert_eq!(
            spec.scenarios[0].cells[0].request.headers,
            vec![("authorization".to_owned(), "Bearer t".to_owned())]
        );
        let e = spec_from_flags(&FlagRun { url: Some("http://alice:pw@/x".into()), ..FlagRun::default() }).unwrap_err();
        assert!(e.contains("http://***@/x") && !e.contains("pw"), "{e}");
    }

    #[test]
    fn a_header_given_twice_is_sent_once_with_both_values() {
        let f = FlagRun {
            url: Some("http://127.0.0.1:8080/".into()),
            headers: vec!["X-A: 1".into(), "x-a: 2".into(), "Cookie: a=1".into(), "cookie: b=2".into()],
            ..FlagRun::default()
        };
        let spec = loadgate_spec::load_str("flags", &spec_from_flags(&f).unwrap(), &Default::default()).unwrap();
        assert_eq!(
            spec.scenarios[0].cells[0].request.headers,
            vec![("X-A".to_owned(), "1, 2".to_owned()), ("Cookie".to_owned(), "a=1; b=2".to_owned())]
        );
    }

    #[test]
    fn a_run_from_flags_fails_on_errors_unless_slos_are_given() {
        let f = FlagRun { url: Some("http://127.0.0.1:8080/".into()), ..FlagRun::default() };
        let spec = loadgate_spec::load_str("flags", &spec_from_flags(&f).unwrap(), &Default::default()).unwrap();
        let slos: Vec<String> = spec.scenarios[0].cells[0].slos.iter().map(|s| s.to_string()).collect();
        assert_eq!(slos, ["error_rate < 1%"]);
        let f = FlagRun { slos: vec!["p99 < 1s".into()], ..f };
        let spec = loadgate_spec::load_str("flags", &spec_from_flags(&f).unwrap(), &Default::default()).unwrap();
        let slos: Vec<String> = spec.scenarios[0].cells[0].slos.iter().map(|s| s.to_string()).collect();
        assert_eq!(slos, ["p99 < 1s"]);
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
