//! `target`: the server under test, by URL, started by a command, or built in.

use std::collections::BTreeMap;

use crate::diag::Diagnostic;
use crate::model::*;
use crate::node::{Node, NodeKind, Path};
use crate::read::Cx;
use crate::units::{ByteSize, Duration};
use crate::BuiltinKind;

use super::{enum_error, read_string_map, BUILTIN_KEYS, READY_KEYS, START_KEYS, TARGET_KEYS};

/// The scheme of a URL-like text and what follows its colon: `htp:/x` -> (`htp`, `/x`). `localhost:8080` has
/// none (a port follows the colon).
fn scheme_of(text: &str) -> Option<(&str, &str)> {
    let (scheme, after) = text.split_once(':')?;
    let is_scheme = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    (is_scheme && !after.is_empty() && !after.starts_with(|c: char| c.is_ascii_digit())).then_some((scheme, after))
}

fn read_base_url(cx: &mut Cx<'_>, node: &Node, path: &Path) -> Option<BaseUrl> {
    let text = cx.string(node, path, "`base_url`")?;
    let fail = |cx: &mut Cx<'_>, msg: &str, help: Option<String>| {
        cx.error(
            Diagnostic::error(path, node.span, msg.to_owned())
                .expected("an http URL such as `http://127.0.0.1:8080`")
                .found(format!("`{text}`"))
                .help_opt(help),
        );
        None
    };
    let rest = if let Some(r) = text.strip_prefix("http://") {
        r
    } else if text.starts_with("https://") {
        return fail(cx, "https targets are not supported by the engine yet", Some("use an http:// URL".to_owned()));
    } else if let Some((scheme, after)) = scheme_of(&text) {
        // `htp:/nowhere`, `ftp://host`, `http:/host`: a scheme that is not `http://`; suggest the host with one.
        let host = after.trim_start_matches('/');
        return fail(
            cx,
            &format!("`base_url` starts with `{scheme}:{}`, not `http://`", &after[..after.len() - host.len()]),
            Some(format!("write `http://{host}`")),
        );
    } else {
        return fail(cx, "`base_url` has no scheme", Some(format!("write `http://{text}`")));
    };
    let (authority, prefix) = match rest.find(['/', '?', '#']) {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    if prefix.contains(['?', '#']) {
        return fail(
            cx,
            "`base_url` cannot carry a query or fragment",
            Some("put the query in each request's `path` or `query`".to_owned()),
        );
    }
    let (host, port) = if let Some(stripped) = authority.strip_prefix('[') {
        match stripped.split_once(']') {
            Some((h, p)) => (format!("[{h}]"), p.strip_prefix(':')),
            None => return fail(cx, "`base_url` has an unclosed IPv6 bracket", None),
        }
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h.to_owned(), Some(p)),
            None => (authority.to_owned(), None),
        }
    };
    if host.is_empty() || host.contains('@') {
        return fail(cx, "`base_url` has no host", None);
    }
    let port = match port {
        None => 80,
        Some(p) => match p.parse::<u16>() {
            Ok(p) if p > 0 => p,
            _ => return fail(cx, &format!("`{p}` is not a port"), Some("ports run from 1 to 65535".to_owned())),
        },
    };
    let prefix = prefix.trim_end_matches('/').to_owned();
    Some(BaseUrl { url: text.clone(), host, port, prefix })
}

pub(super) fn read_target(cx: &mut Cx<'_>, node: &Node, path: &Path) -> Option<Target> {
    // `target: { builtin: plaintext }`, `target: { base_url: ..., start: ... }`, or both: the built-in server
    // stands in (and `start` is not used) whenever `base_url` renders empty, so one variable switches a spec
    // between the two.
    let f = cx.map(node, path, TARGET_KEYS, "`target`")?;
    if f.has("builtin") {
        let url_text = match f.get("base_url") {
            Some((n, p)) => Some(cx.string(n, &p, "`base_url`")?),
            None => None,
        };
        if url_text.as_deref().is_none_or(|u| u.trim().is_empty()) {
            // The built-in server stands in for the whole target, the `start` command included.
            let (n, p) = f.get("builtin")?;
            return read_builtin(cx, n, &p).map(|server| Target::Builtin { server });
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
    let base_url = read_base_url(cx, n, &p);
    let start = f.get("start").map(|(n, p)| read_start(cx, n, &p));
    match (base_url, start) {
        (Some(base_url), None) => Some(Target::Url { base_url }),
        (Some(base_url), Some(Some(start))) => Some(Target::Command { base_url, start }),
        _ => None,
    }
}

fn read_builtin(cx: &mut Cx<'_>, node: &Node, path: &Path) -> Option<Builtin> {
    let kinds = ["plaintext", "echo", "delay"];
    let parse_kind = |cx: &mut Cx<'_>, n: &Node, p: &Path| -> Option<BuiltinKind> {
        match cx.string(n, p, "the built-in server")?.as_str() {
            "plaintext" => Some(BuiltinKind::Plaintext),
            "echo" => Some(BuiltinKind::Echo),
            "delay" => Some(BuiltinKind::Delay),
            other => {
                cx.error(enum_error(p, n, "the built-in server", other, &kinds));
                None
            }
        }
    };
    let mut b = Builtin { kind: BuiltinKind::Plaintext, delay: None, status: 200, body_size: None, chunked: false };
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
        if let Some((n, p)) = f.get("chunked") {
            match cx.boolean(n, &p, "`chunked`") {
                Some(c) => b.chunked = c,
                None => ok = false,
            }
        }
        if let (true, Some((n, p)), false) = (ok, f.get("delay"), b.kind == BuiltinKind::Delay) {
            cx.error(
                Diagnostic::error(&p, n.span, "`delay` applies to the `delay` server only")
                    .expected("`delay` with `kind: delay`")
                    .found(format!("`kind: {}`", if b.kind == BuiltinKind::Echo { "echo" } else { "plaintext" }))
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
