//! `target`: the server under test, by URL, started by a command, or built in.

use std::collections::BTreeMap;

use crate::diag::Diagnostic;
use crate::node::{Node, NodeKind, Path};
use crate::read::{Cx, Fields};
use crate::units::{ByteSize, Duration};
use crate::{BuiltinKind, Protocol};
use loadgate_model::spec::*;

use super::fields::{enum_error, read_string_map};
use super::keys::{BUILTIN_KEYS, READY_KEYS, START_KEYS, TARGET_KEYS, TLS_KEYS};

fn read_base_url(cx: &mut Cx<'_>, node: &Node, path: &Path) -> Option<BaseUrl> {
    use loadgate_model::url::{HttpUrl, UrlError};
    let text = cx.string(node, path, "`base_url`")?;
    let fail = |cx: &mut Cx<'_>, msg: &str, help: Option<String>| {
        cx.error(
            Diagnostic::error(path, node.span, msg.to_owned())
                .expected("an http or https URL such as `http://127.0.0.1:8080`")
                .found(format!("`{text}`"))
                .help_opt(help),
        );
        None
    };
    // The one URL parser (`loadgate_model::url`), as `--url` and imported command lines use it.
    let url = match HttpUrl::parse(&text) {
        Ok(url) => url,
        Err(UrlError::NoScheme) => {
            return fail(cx, "`base_url` has no scheme", Some(format!("write `http://{text}`")));
        }
        Err(UrlError::NotHttp { scheme, after }) => {
            // `htp:/nowhere`, `ftp://host`, `http:/host`: a scheme that is not `http://` or `https://`; suggest the
            // host with one.
            let host = after.trim_start_matches('/');
            let scheme_fix =
                if scheme.eq_ignore_ascii_case("https") || scheme.starts_with("htps") { "https" } else { "http" };
            return fail(
                cx,
                &format!(
                    "`base_url` starts with `{scheme}:{}`, not `http://` or `https://`",
                    &after[..after.len() - host.len()]
                ),
                Some(format!("write `{scheme_fix}://{host}`")),
            );
        }
        Err(UrlError::Invalid(why)) if why.ends_with("is not a port (1 to 65535)") => {
            return fail(cx, why.trim_end_matches(" (1 to 65535)"), Some("ports run from 1 to 65535".to_owned()));
        }
        Err(UrlError::Invalid(why)) => return fail(cx, &format!("`base_url` is not a URL: {why}"), None),
    };
    if url.userinfo.is_some() {
        return fail(
            cx,
            "`base_url` carries credentials (`user:password@`), which a spec must not hold",
            Some(
                "send them as a header read from the environment: `headers: { Authorization: \"{{ env.AUTH }}\" }`"
                    .to_owned(),
            ),
        );
    }
    if url.has_query || url.fragment.is_some() {
        return fail(
            cx,
            "`base_url` cannot carry a query or fragment",
            Some("put the query in each request's `path` or `query`".to_owned()),
        );
    }
    let prefix = url.path.trim_end_matches('/').to_owned();
    Some(BaseUrl {
        url: text.clone(),
        host: url.host,
        port: url.port,
        prefix,
        protocol: Protocol::Http1,
        tls: url.https.then(TlsOptions::default),
    })
}

/// `target.protocol`: `http1` (the default), `http2` or `auto`.
fn read_protocol(cx: &mut Cx<'_>, f: &Fields<'_>) -> Option<Protocol> {
    let Some((n, p)) = f.get("protocol") else {
        return Some(Protocol::Http1);
    };
    match cx.string(n, &p, "`protocol`")?.as_str() {
        "http1" => Some(Protocol::Http1),
        "http2" => Some(Protocol::Http2),
        "auto" => Some(Protocol::Auto),
        other => {
            cx.error(enum_error(&p, n, "`protocol`", other, &["http1", "http2", "auto"]));
            None
        }
    }
}

pub(super) fn read_target(cx: &mut Cx<'_>, node: &Node, path: &Path) -> Option<Target> {
    let f = cx.map(node, path, TARGET_KEYS, "`target`")?;
    let protocol = read_protocol(cx, &f);
    let mut target = read_target_fields(cx, node, path, &f)?;
    let protocol = protocol?;
    match &mut target {
        Target::Url { base_url } | Target::Command { base_url, .. } => base_url.protocol = protocol,
        Target::Builtin { server } => server.protocol = protocol,
    }
    Some(target)
}

fn read_target_fields(cx: &mut Cx<'_>, node: &Node, path: &Path, f: &Fields<'_>) -> Option<Target> {
    // `target: { builtin: plaintext }`, `target: { base_url: ..., start: ... }`, or both: the built-in server
    // stands in (and `start` is not used) whenever `base_url` renders empty, so one variable switches a spec
    // between the two.
    if f.has("builtin") {
        let url_text = match f.get("base_url") {
            Some((n, p)) => Some(cx.string(n, &p, "`base_url`")?),
            None => None,
        };
        if url_text.as_deref().is_none_or(|u| u.trim().is_empty()) {
            // The built-in server stands in for the whole target, the `start` command included (and the `tls`
            // block, unless it serves HTTPS).
            let (n, p) = f.get("builtin")?;
            let mut server = read_builtin(cx, n, &p)?;
            if server.tls.is_some() {
                if let Some((n, p)) = f.get("tls") {
                    server.tls = Some(read_tls(cx, n, &p)?);
                }
            }
            return Some(Target::Builtin { server });
        }
    }
    let Some((n, p)) = f.get("base_url") else {
        cx.error(
            Diagnostic::error(path, node.span, "`target` needs `base_url` or `builtin`")
                .expected("`base_url: http://host:port` (with an optional `start` command) or `builtin: plaintext`")
                .help("for a quick start use `target: { builtin: plaintext }`"),
        );
        return None;
    };
    let mut base_url = read_base_url(cx, n, &p);
    if let (Some(url), Some((tn, tp))) = (&mut base_url, f.get("tls")) {
        if url.tls.is_some() {
            url.tls = read_tls(cx, tn, &tp);
            if url.tls.is_none() {
                base_url = None;
            }
        } else {
            cx.error(
                Diagnostic::error(&tp, f.key_span("tls"), "`tls` applies to https targets")
                    .expected("`base_url: https://...` with a `tls` block")
                    .found(format!("`base_url: {}`", url.url))
                    .help(format!(
                        "write `base_url: https://{}`, or remove `tls`",
                        url.url.trim_start_matches("http://")
                    )),
            );
            base_url = None;
        }
    }
    let start = f.get("start").map(|(n, p)| read_start(cx, n, &p));
    match (base_url, start) {
        (Some(base_url), None) => Some(Target::Url { base_url }),
        (Some(base_url), Some(Some(start))) => Some(Target::Command { base_url, start }),
        _ => None,
    }
}

/// The most CPU time a `cpu` server request may cost.
const MAX_BUILTIN_WORK: std::time::Duration = std::time::Duration::from_secs(1);

fn read_builtin(cx: &mut Cx<'_>, node: &Node, path: &Path) -> Option<Builtin> {
    let kinds = ["plaintext", "echo", "delay", "cpu"];
    let parse_kind = |cx: &mut Cx<'_>, n: &Node, p: &Path| -> Option<BuiltinKind> {
        match cx.string(n, p, "the built-in server")?.as_str() {
            "plaintext" => Some(BuiltinKind::Plaintext),
            "echo" => Some(BuiltinKind::Echo),
            "delay" => Some(BuiltinKind::Delay),
            "cpu" => Some(BuiltinKind::Cpu),
            other => {
                cx.error(enum_error(p, n, "the built-in server", other, &kinds));
                None
            }
        }
    };
    let mut b = Builtin {
        kind: BuiltinKind::Plaintext,
        delay: None,
        status: 200,
        body_size: None,
        chunked: false,
        work: None,
        slow_path: None,
        protocol: Protocol::Http1,
        tls: None,
    };
    if let NodeKind::Map(_) = node.kind {
        let f = cx.map(node, path, BUILTIN_KEYS, "`target.builtin`")?;
        let mut ok = true;
        match cx.required(&f, "kind", "`target.builtin`") {
            Some((n, p)) => match parse_kind(cx, n, &p) {
                Some(k) => b.kind = k,
                None => ok = false,
            },
            None => ok = false,
        }
        if let Some((n, p)) = f.get("delay") {
            b.delay = cx.unit::<Duration>(n, &p, "`delay`");
            ok &= b.delay.is_some();
        }
        if let Some((n, p)) = f.get("status") {
            match read_status(cx, n, &p) {
                Some(s) => b.status = s,
                None => ok = false,
            }
        }
        if let Some((n, p)) = f.get("body_size") {
            b.body_size = cx.unit::<ByteSize>(n, &p, "`body_size`");
            ok &= b.body_size.is_some();
            if let Some(sz) = b.body_size {
                if sz.0 > 1 << 30 {
                    cx.error(
                        Diagnostic::error(&p, n.span, "`body_size` is too large")
                            .expected("at most 1GiB")
                            .found(n.describe()),
                    );
                    ok = false;
                }
            }
        }
        for (key, slot) in [("work", &mut b.work), ("slow_path", &mut b.slow_path)] {
            if let Some((n, p)) = f.get(key) {
                match cx.unit::<Duration>(n, &p, &format!("`{key}`")) {
                    Some(d) if d.0 <= MAX_BUILTIN_WORK => *slot = Some(d),
                    Some(d) => {
                        cx.error(
                            Diagnostic::error(&p, n.span, format!("`{key}: {d}` of CPU per request is too much"))
                                .expected("at most 1s of CPU per request"),
                        );
                        ok = false;
                    }
                    None => ok = false,
                }
            }
        }
        if ok && b.kind == BuiltinKind::Cpu && b.work.is_none() {
            cx.error(
                Diagnostic::error(path, node.span, "the `cpu` server needs `work`")
                    .expected("the CPU time each request costs, such as `work: 50us`")
                    .help("write `builtin: { kind: cpu, work: 50us }` (add `slow_path: 15us` for a regression in a callee of `slow_path`)"),
            );
            ok = false;
        }
        for key in ["work", "slow_path"] {
            if let (true, Some((n, p)), false) = (ok, f.get(key), b.kind == BuiltinKind::Cpu) {
                cx.error(
                    Diagnostic::error(&p, n.span, format!("`{key}` applies to the `cpu` server only"))
                        .expected(format!("`{key}` with `kind: cpu`")),
                );
                ok = false;
            }
        }
        if let Some((n, p)) = f.get("chunked") {
            match cx.boolean(n, &p, "`chunked`") {
                Some(c) => b.chunked = c,
                None => ok = false,
            }
        }
        if let Some((n, p)) = f.get("tls") {
            match cx.boolean(n, &p, "`tls`") {
                Some(t) => b.tls = t.then(TlsOptions::default),
                None => ok = false,
            }
        }
        if let (true, Some((n, p)), false) = (ok, f.get("delay"), b.kind == BuiltinKind::Delay) {
            cx.error(
                Diagnostic::error(&p, n.span, "`delay` applies to the `delay` server only")
                    .expected("`delay` with `kind: delay`")
                    .found(format!("`kind: {}`", loadgate_model::builtin_kind_name(b.kind)))
                    .help("write `kind: delay` to delay every response, or request the `/delay/{ms}` route, which every kind answers"),
            );
            ok = false;
        }
        if let (true, Some((n, p)), BuiltinKind::Echo) = (ok, f.get("body_size"), b.kind) {
            cx.error(
                Diagnostic::error(&p, n.span, "`body_size` applies to the `plaintext` and `delay` servers")
                    .expected("`body_size` with `kind: plaintext` or `kind: delay`")
                    .found("`kind: echo`, which sends the request's body back")
                    .help("remove `body_size`, or request the `/bytes/{n}` route for an n-byte body"),
            );
            ok = false;
        }
        if ok && b.kind == BuiltinKind::Delay && b.delay.is_none() {
            cx.error(
                Diagnostic::error(path, node.span, "the `delay` server needs a `delay`")
                    .expected("`delay: 20ms`")
                    .help("add `delay: 20ms`"),
            );
            ok = false;
        }
        ok.then_some(b)
    } else {
        b.kind = parse_kind(cx, node, path)?;
        if b.kind == BuiltinKind::Cpu {
            cx.error(
                Diagnostic::error(path, node.span, "the `cpu` server needs `work`")
                    .expected("`builtin: { kind: cpu, work: 50us }`")
                    .help("write `builtin: { kind: cpu, work: 50us }`"),
            );
            return None;
        }
        if b.kind == BuiltinKind::Delay {
            cx.error(
                Diagnostic::error(path, node.span, "the `delay` server needs a `delay`")
                    .expected("`builtin: { kind: delay, delay: 20ms }`")
                    .help("write `builtin: { kind: delay, delay: 20ms }`"),
            );
            return None;
        }
        Some(b)
    }
}

/// `target.tls`: `{ ca, insecure, client_cert, client_key, resume, server_name }`, every file checked now.
fn read_tls(cx: &mut Cx<'_>, node: &Node, path: &Path) -> Option<TlsOptions> {
    let f = cx.map(node, path, TLS_KEYS, "`target.tls`")?;
    let mut ok = true;
    let mut tls = TlsOptions::default();
    if let Some((n, p)) = f.get("insecure") {
        match cx.boolean(n, &p, "`insecure`") {
            Some(v) => tls.insecure = v,
            None => ok = false,
        }
    }
    if let Some((n, p)) = f.get("resume") {
        match cx.boolean(n, &p, "`resume`") {
            Some(v) => tls.resume = v,
            None => ok = false,
        }
    }
    if let Some((n, p)) = f.get("server_name") {
        match cx.string(n, &p, "`server_name`") {
            Some(name) if rustls_pki_types::ServerName::try_from(name.as_str()).is_ok() => tls.server_name = Some(name),
            Some(_) => {
                cx.error(
                    Diagnostic::error(&p, n.span, "`server_name` is not a DNS name or an IP address")
                        .expected("a name the server's certificate holds, such as `api.example.com`")
                        .found(n.describe()),
                );
                ok = false;
            }
            None => ok = false,
        }
    }
    let file = |cx: &mut Cx<'_>, key: &str, what: Pem| -> Option<String> {
        let (n, p) = f.get(key)?;
        let name = cx.string(n, &p, &format!("`{key}`"))?;
        match check_pem_file(&cx.templates.data, &name, what) {
            Ok(()) => Some(name),
            Err((message, help)) => {
                cx.error(
                    Diagnostic::error(&p, n.span, message).expected(what.expected()).found(n.describe()).help(help),
                );
                None
            }
        }
    };
    tls.ca = file(cx, "ca", Pem::Certificates);
    tls.client_cert = file(cx, "client_cert", Pem::Certificates);
    tls.client_key = file(cx, "client_key", Pem::PrivateKey);
    ok &= f.has("ca") == tls.ca.is_some()
        && f.has("client_cert") == tls.client_cert.is_some()
        && f.has("client_key") == tls.client_key.is_some();
    match (f.has("client_cert"), f.has("client_key")) {
        (true, false) => {
            cx.error(
                Diagnostic::error(path, node.span, "`client_cert` needs `client_key`")
                    .expected("both `client_cert` and `client_key` (mTLS), or neither")
                    .help("add `client_key: client.key` (the PEM private key of the certificate)"),
            );
            ok = false;
        }
        (false, true) => {
            cx.error(
                Diagnostic::error(path, node.span, "`client_key` needs `client_cert`")
                    .expected("both `client_cert` and `client_key` (mTLS), or neither")
                    .help("add `client_cert: client.pem` (the PEM certificate of the key)"),
            );
            ok = false;
        }
        _ => {}
    }
    if tls.insecure {
        if let Some((n, p)) = f.get("insecure") {
            cx.error(
                Diagnostic::warning(
                    &p,
                    n.span,
                    "`insecure: true`: the server's certificate is not checked; every report of the run says so",
                )
                .help("for a server with its own CA, give the CA with `ca: ca.pem` instead"),
            );
        }
        if let Some((n, p)) = f.get("ca") {
            cx.error(
                Diagnostic::warning(&p, n.span, "`ca` is not used: `insecure: true` checks no certificate")
                    .help("remove `insecure: true` to check the certificate against this CA"),
            );
        }
    }
    ok.then_some(tls)
}

/// What a `target.tls` file must hold.
#[derive(Debug, Clone, Copy)]
enum Pem {
    Certificates,
    PrivateKey,
}

impl Pem {
    fn expected(self) -> &'static str {
        match self {
            Pem::Certificates => "a PEM file of certificates (`-----BEGIN CERTIFICATE-----`) in the spec's directory",
            Pem::PrivateKey => "a PEM private key (`-----BEGIN PRIVATE KEY-----`) in the spec's directory",
        }
    }
}

/// The largest TLS file read (a CA bundle of every public root is about 250 KiB).
const MAX_PEM_BYTES: u64 = 4 << 20;

/// Checks a `target.tls` file where data files are found (relative to the spec and inside its tree, unless
/// allowed otherwise): a regular file, at most 4 MiB, holding what `what` says.
fn check_pem_file(data: &crate::generate::DataFiles, name: &str, what: Pem) -> Result<(), crate::generate::Refusal> {
    use rustls_pki_types::pem::PemObject;
    use rustls_pki_types::{CertificateDer, PrivateKeyDer};
    use std::io::Read as _;
    let path = crate::generate::resolve_data_file(data, name)?;
    let cannot = |e: std::io::Error| (format!("cannot read `{name}`: {e}"), "check its permissions".to_owned());
    let handle = std::fs::File::open(&path).map_err(cannot)?;
    let meta = handle.metadata().map_err(cannot)?;
    if !meta.is_file() || meta.len() > MAX_PEM_BYTES {
        return Err((
            format!("`{name}` is not a regular file of at most 4 MiB"),
            "name the PEM file itself".to_owned(),
        ));
    }
    let mut bytes = Vec::new();
    handle.take(MAX_PEM_BYTES).read_to_end(&mut bytes).map_err(cannot)?;
    data.note(name, &path, loadgate_model::spec::FileKind::Tls);
    match what {
        Pem::Certificates => match CertificateDer::pem_slice_iter(&bytes).collect::<Result<Vec<_>, _>>() {
            Ok(certs) if !certs.is_empty() => Ok(()),
            Ok(_) => Err((
                format!("`{name}` holds no PEM certificate"),
                "a certificate starts with `-----BEGIN CERTIFICATE-----`; convert a DER file with `openssl x509 -inform der -in FILE -out FILE.pem`"
                    .to_owned(),
            )),
            Err(e) => Err((format!("`{name}` is not a valid PEM file: {e}"), "check the file".to_owned())),
        },
        Pem::PrivateKey => match PrivateKeyDer::from_pem_slice(&bytes) {
            Ok(_) => Ok(()),
            Err(e) => Err((
                format!("`{name}` holds no PEM private key ({e})"),
                "give the key of the client certificate, starting with `-----BEGIN PRIVATE KEY-----` (PKCS#8), `-----BEGIN RSA PRIVATE KEY-----` or `-----BEGIN EC PRIVATE KEY-----`"
                    .to_owned(),
            )),
        },
    }
}

fn read_status(cx: &mut Cx<'_>, node: &Node, path: &Path) -> Option<u16> {
    let s = cx.uint(node, path, "`status`", 100)?;
    if s > 599 {
        cx.error(
            Diagnostic::error(path, node.span, "`status` is not an HTTP status")
                .expected("a status from 100 to 599")
                .found(node.describe()),
        );
        return None;
    }
    Some(s as u16)
}

fn read_start(cx: &mut Cx<'_>, node: &Node, path: &Path) -> Option<StartCommand> {
    let f = cx.map(node, path, START_KEYS, "`target.start`")?;
    let mut ok = true;
    let command = match cx.required(&f, "command", "`target.start`") {
        Some((n, p)) => match &n.kind {
            NodeKind::Seq(items) if !items.is_empty() => {
                let argv: Vec<Option<String>> =
                    items.iter().enumerate().map(|(i, it)| cx.string(it, &p.index(i), "a command argument")).collect();
                if argv.iter().all(Option::is_some) {
                    Some(argv.into_iter().flatten().collect::<Vec<_>>())
                } else {
                    None
                }
            }
            NodeKind::Str(s) => {
                let words: Vec<&str> = s.split_whitespace().collect();
                cx.error(
                    Diagnostic::error(&p, n.span, "`command` must be a list of arguments")
                        .expected("a list such as `[./server, --port, '8080']` (no shell is involved)")
                        .found(n.describe())
                        .help(format!("write `command: [{}]`", words.join(", "))),
                );
                None
            }
            _ => {
                cx.error(
                    Diagnostic::error(&p, n.span, "`command` must be a non-empty list of arguments")
                        .expected("a list such as `[./server, --port, '8080']`")
                        .found(n.type_name()),
                );
                None
            }
        },
        None => None,
    };
    ok &= command.is_some();
    let mut env = BTreeMap::new();
    if let Some((n, p)) = f.get("env") {
        ok &= read_string_map(cx, n, &p, "`env`", &mut env);
    }
    let cwd = f.get("cwd").and_then(|(n, p)| cx.string(n, &p, "`cwd`"));
    let ready = match f.get("ready") {
        Some((n, p)) => read_ready(cx, n, &p),
        None => Some(Ready::Tcp { timeout: Duration::from_secs(30), interval: Duration::from_millis(100) }),
    };
    ok &= ready.is_some();
    let stop_grace = match f.get("stop_grace") {
        Some((n, p)) => cx.unit::<Duration>(n, &p, "`stop_grace`"),
        None => Some(Duration::from_secs(5)),
    };
    ok &= stop_grace.is_some();
    if !ok {
        return None;
    }
    Some(StartCommand { command: command?, env, cwd, ready: ready?, stop_grace: stop_grace? })
}

fn read_ready(cx: &mut Cx<'_>, node: &Node, path: &Path) -> Option<Ready> {
    let f = cx.map(node, path, READY_KEYS, "`ready`")?;
    let kind = cx.one_of(&f, &["http_get", "tcp"], "`ready`")?;
    let timeout = match f.get("timeout") {
        Some((n, p)) => cx.unit::<Duration>(n, &p, "`timeout`")?,
        None => Duration::from_secs(30),
    };
    let interval = match f.get("interval") {
        Some((n, p)) => cx.unit::<Duration>(n, &p, "`interval`")?,
        None => Duration::from_millis(100),
    };
    if kind == "http_get" {
        let (n, p) = f.get("http_get")?;
        let path_text = cx.string(n, &p, "`http_get`")?;
        if !path_text.starts_with('/') {
            cx.error(
                Diagnostic::error(&p, n.span, "`http_get` must be a path")
                    .expected("a path starting with `/`, such as `/health`")
                    .found(n.describe())
                    .help(format!("write `http_get: /{}`", path_text.trim_start_matches('/'))),
            );
            return None;
        }
        let status = match f.get("status") {
            Some((n, p)) => read_status(cx, n, &p)?,
            None => 200,
        };
        Some(Ready::HttpGet { path: path_text, status, timeout, interval })
    } else {
        let (n, p) = f.get("tcp")?;
        if cx.boolean(n, &p, "`tcp`")? {
            if f.has("status") {
                cx.error(
                    Diagnostic::error(&p, f.key_span("status"), "`status` only applies to `http_get` probes")
                        .help("remove `status`"),
                );
                return None;
            }
            Some(Ready::Tcp { timeout, interval })
        } else {
            cx.error(
                Diagnostic::error(&p, n.span, "`tcp: false` probes nothing")
                    .help("use `tcp: true`, or `http_get: /path`"),
            );
            None
        }
    }
}
