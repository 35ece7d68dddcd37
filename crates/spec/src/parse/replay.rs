//! `load: { replay: ... }`: a recorded access log or HAR file replayed at its requests' start times. The file is
//! found where data files are (relative to the spec, inside its tree) and read once through here, streaming, so
//! that a wrong format, an empty HAR or too many unreadable lines are located errors before any load, and the
//! plan knows the schedule's requests, duration and busiest 10 ms.

use loadgate_import::replay as import;
use loadgate_model::replay::{JsonFields, Replay, ReplayBound, ReplayConnections, ReplayFormat, ReplaySummary};
use loadgate_model::spec::Load;

use crate::diag::Diagnostic;
use crate::node::{Node, NodeKind, Path};
use crate::read::Cx;
use crate::units::{Duration, Percent};

use super::fields::{enum_error, positive_duration};
use super::keys::{REPLAY_FORMATS, REPLAY_JSON_KEYS, REPLAY_KEYS};

/// Connections a replay opens at most by default.
const DEFAULT_MAX_CONNECTIONS: u64 = 256;

/// `load.replay`.
pub(super) fn read_replay(cx: &mut Cx<'_>, node: &Node, path: &Path) -> Option<Load> {
    let f = cx.map(node, path, REPLAY_KEYS, "`load.replay`")?;
    let mut ok = true;
    let file = cx.required(&f, "file", "`load.replay`").and_then(|(n, p)| cx.string(n, &p, "`file`"));
    let format = match f.get("format") {
        Some((n, p)) => read_format(cx, n, &p),
        None => Some(ReplayFormat::NginxCombined),
    };
    let speed = match f.get("speed") {
        Some((n, p)) => read_speed(cx, n, &p),
        None => Some(1.0),
    };
    let from = f.get("from").map(|(n, p)| read_bound(cx, n, &p, "`from`"));
    let to = f.get("to").map(|(n, p)| read_bound(cx, n, &p, "`to`"));
    let methods = match f.get("methods") {
        Some((n, p)) => read_methods(cx, n, &p),
        None => Some((false, Vec::new())),
    };
    let path_filter = f.get("paths").and_then(|(n, p)| {
        let s = cx.string(n, &p, "`paths`")?;
        match regex_automata::meta::Regex::new(&s) {
            Ok(_) => Some(s),
            Err(e) => {
                cx.error(
                    Diagnostic::error(&p, n.span, "`paths` is not a regular expression")
                        .expected("a regex searched in each request's path (without the query), such as `^/api/`")
                        .found(n.describe())
                        .help(e.to_string()),
                );
                None
            }
        }
    });
    ok &= f.has("paths") == path_filter.is_some();
    let status_filter = f.get("statuses").and_then(|(n, p)| read_statuses(cx, n, &p));
    ok &= f.has("statuses") == status_filter.is_some();
    let host = f.get("host").and_then(|(n, p)| cx.string(n, &p, "`host`"));
    let secret_query = match f.get("secret_query") {
        Some((n, p)) => string_list(cx, n, &p, "`secret_query`"),
        None => Some(Vec::new()),
    };
    let reorder_window = match f.get("reorder_window") {
        Some((n, p)) => positive_duration(cx, n, &p, "`reorder_window`").and_then(|d| {
            if d.0 < std::time::Duration::from_secs(1) {
                cx.error(
                    Diagnostic::error(&p, n.span, "`reorder_window` must be at least 1s")
                        .expected("a duration of at least `1s` (a second's spread must fit)")
                        .found(n.describe()),
                );
                None
            } else {
                Some(d)
            }
        }),
        None => Some(Duration(std::time::Duration::from_secs(10))),
    };
    let max_bad_share = match f.get("max_bad_lines") {
        Some((n, p)) => cx.unit::<Percent>(n, &p, "`max_bad_lines`").map(|p| p.0),
        None => Some(0.01),
    };
    let connections = match f.get("connections") {
        Some((n, p)) => read_connections(cx, n, &p),
        None => Some(ReplayConnections::Pool),
    };
    let max_connections = match f.get("max_connections") {
        Some((n, p)) => cx.uint(n, &p, "`max_connections`", 1),
        None => Some(DEFAULT_MAX_CONNECTIONS),
    };
    ok &= from.as_ref().is_none_or(Option::is_some) && to.as_ref().is_none_or(Option::is_some);
    ok &= methods.is_some();
    ok &= f.has("host") == host.is_some();
    if !ok {
        return None;
    }
    let (file_node, file_path) = f.get("file")?;
    let name = file?;
    let (as_logged, method_filter) = methods?;
    let mut replay = Replay {
        path: std::path::PathBuf::new(),
        file: name.clone(),
        format: format?,
        speed: speed?,
        from: from.flatten(),
        to: to.flatten(),
        as_logged,
        method_filter,
        path_filter,
        status_filter: status_filter.unwrap_or_default(),
        host,
        secret_query: secret_query?,
        reorder_window: reorder_window?,
        max_bad_share: max_bad_share?,
        connections: connections?,
        max_connections: max_connections?,
        summary: ReplaySummary::default(),
    };
    let path = match crate::generate::resolve_data_file(&cx.templates.data, &name) {
        Ok(p) => p,
        Err((message, help)) => {
            cx.error(
                Diagnostic::error(&file_path, file_node.span, message)
                    .expected("an access log or HAR file inside the spec's directory")
                    .found(file_node.describe())
                    .help(help),
            );
            return None;
        }
    };
    replay.path = path;
    match import::summarize_file(&replay) {
        Ok(summary) if summary.requests == 0 => {
            cx.error(
                Diagnostic::error(&file_path, file_node.span, "the replay has no request to send")
                    .expected("a log with requests the window and filters keep")
                    .found(format!("{} lines: {} unreadable, {}", summary.lines, summary.bad_lines, skipped(&summary)))
                    .help("widen `from`/`to`, `methods`, `paths` or `statuses`, or check `format`"),
            );
            None
        }
        Ok(summary) => {
            replay.summary = summary;
            Some(Load::Replay(Box::new(replay)))
        }
        Err(e) => {
            let (at, span) = match (&e, f.get("format")) {
                (import::ReplayError::Format(_), Some((n, p))) => (p, n.span),
                _ => (file_path, file_node.span),
            };
            cx.error(
                Diagnostic::error(&at, span, format!("`{name}` cannot be replayed as {}", replay.format.name()))
                    .expected(format!("a log in the {} format", replay.format.name()))
                    .found(e.to_string())
                    .help(
                        "check `format` (combined, common, apache_combined, alb, har, or { nginx: \"...\" }, \
                         { apache: \"...\" }, { json: {...} }); `max_bad_lines` allows a share of unreadable lines",
                    ),
            );
            None
        }
    }
}

fn skipped(s: &ReplaySummary) -> String {
    if s.skips.is_empty() {
        return "none skipped".into();
    }
    s.skips.iter().map(|(why, n)| format!("{n} skipped ({why})")).collect::<Vec<_>>().join(", ")
}

fn read_format(cx: &mut Cx<'_>, n: &Node, p: &Path) -> Option<ReplayFormat> {
    if let NodeKind::Map(_) = n.kind {
        let f = cx.map(n, p, &["nginx", "apache", "json", "har"], "`format`")?;
        let kind = cx.one_of(&f, &["nginx", "apache", "json", "har"], "`format`")?;
        let (vn, vp) = f.get(kind)?;
        return match kind {
            "nginx" => {
                let log_format = cx.string(vn, &vp, "`format.nginx`")?;
                check_format(cx, vn, &vp, ReplayFormat::Nginx { log_format })
            }
            "apache" => {
                let log_format = cx.string(vn, &vp, "`format.apache`")?;
                check_format(cx, vn, &vp, ReplayFormat::Apache { log_format })
            }
            "har" => {
                let hf = cx.map(vn, &vp, &["origin"], "`format.har`")?;
                let origin = match hf.get("origin") {
                    Some((on, op)) => Some(cx.string(on, &op, "`origin`")?),
                    None => None,
                };
                Some(ReplayFormat::Har { origin })
            }
            _ => {
                let fields = read_json(cx, vn, &vp)?;
                check_format(cx, vn, &vp, ReplayFormat::Json { fields: Box::new(fields) })
            }
        };
    }
    let word = cx.string(n, p, "`format`")?;
    Some(match word.as_str() {
        "combined" | "nginx" => ReplayFormat::NginxCombined,
        "common" => ReplayFormat::ApacheCommon,
        "apache_combined" => ReplayFormat::ApacheCombined,
        "alb" => ReplayFormat::Alb,
        "har" => ReplayFormat::Har { origin: None },
        "json" => ReplayFormat::Json { fields: Box::default() },
        other => {
            cx.error(enum_error(p, n, "`format`", other, REPLAY_FORMATS).help(
                "or a mapping: `{ nginx: \"<log_format>\" }`, `{ apache: \"<LogFormat>\" }`, `{ json: { time: ts } }`, \
                 `{ har: { origin: https://shop.example } }`",
            ));
            return None;
        }
    })
}

/// A format string or mapping the reader can use.
fn check_format(cx: &mut Cx<'_>, n: &Node, p: &Path, format: ReplayFormat) -> Option<ReplayFormat> {
    match import::log_format(&format).and_then(|f| {
        // A line format is compiled here (a JSON mapping was checked by `log_format`).
        import::Records::new(&b""[..], &f, &import::Limits::default()).map(|_| ())
    }) {
        Ok(()) => Some(format),
        Err(e) => {
            cx.error(
                Diagnostic::error(p, n.span, format!("`format` cannot be read: {e}"))
                    .expected(format!("a valid {}", format.name()))
                    .found(n.describe()),
            );
            None
        }
    }
}

fn read_json(cx: &mut Cx<'_>, n: &Node, p: &Path) -> Option<JsonFields> {
    let f = cx.map(n, p, REPLAY_JSON_KEYS, "`format.json`")?;
    let mut out = JsonFields::default();
    let mut ok = true;
    let text = |cx: &mut Cx<'_>, key: &str| -> Option<Option<String>> {
        match f.get(key) {
            Some((vn, vp)) => cx.string(vn, &vp, &format!("`{key}`")).map(Some),
            None => Some(None),
        }
    };
    for (key, slot) in [
        ("time", &mut out.time),
        ("time_format", &mut out.time_format),
        ("time_is", &mut out.time_is),
        ("method", &mut out.method),
        ("path", &mut out.path),
        ("status", &mut out.status),
    ] {
        match text(cx, key) {
            Some(Some(v)) => *slot = v,
            Some(None) => {}
            None => ok = false,
        }
    }
    for (key, slot) in [("headers", &mut out.headers), ("body", &mut out.body), ("client", &mut out.client)] {
        match text(cx, key) {
            Some(v) => *slot = v,
            None => ok = false,
        }
    }
    let duration = text(cx, "duration");
    let unit = text(cx, "duration_unit");
    match (duration, unit) {
        (Some(Some(d)), Some(u)) => out.duration = Some((d, u.unwrap_or_else(|| "s".into()))),
        (Some(None), Some(Some(_))) => {
            cx.error(
                Diagnostic::error(
                    &p.key("duration_unit"),
                    f.key_span("duration_unit"),
                    "`duration_unit` without `duration`",
                )
                .expected("a `duration` field beside `duration_unit`"),
            );
            ok = false;
        }
        (Some(None), Some(None)) => {}
        _ => ok = false,
    }
    ok.then_some(out)
}

fn read_speed(cx: &mut Cx<'_>, n: &Node, p: &Path) -> Option<f64> {
    let r = cx.render(n, p)?;
    let text = match &r.kind {
        NodeKind::Int(i) => i.to_string(),
        NodeKind::Float(f) => f.to_string(),
        NodeKind::Str(s) => s.clone(),
        _ => String::new(),
    };
    match import::parse_speed(&text) {
        Ok(v) => Some(v),
        Err(_) => {
            cx.error(
                Diagnostic::error(p, n.span, "`speed` is not a speed")
                    .expected("a positive factor such as `1x` (as logged), `3x` or `0.5x`")
                    .found(r.describe()),
            );
            None
        }
    }
}

/// `from`/`to`: an offset from the log's first request (`30s`) or a time (`2026-11-28T10:00:00Z`).
fn read_bound(cx: &mut Cx<'_>, n: &Node, p: &Path, what: &str) -> Option<ReplayBound> {
    let s = cx.string(n, p, what)?;
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s.trim()) {
        return Some(ReplayBound::At(t.timestamp_micros()));
    }
    match s.parse::<Duration>() {
        Ok(d) => Some(ReplayBound::Offset(d)),
        Err(_) => {
            cx.error(
                Diagnostic::error(p, n.span, format!("{what} is neither a duration nor a time"))
                    .expected("an offset from the log's first request such as `30s`, or an RFC 3339 time such as `2026-11-28T10:00:00Z`")
                    .found(n.describe()),
            );
            None
        }
    }
}

/// `methods`: `safe` (GET and HEAD, the default), `as_logged`, or a list (only these, as logged).
fn read_methods(cx: &mut Cx<'_>, n: &Node, p: &Path) -> Option<(bool, Vec<String>)> {
    if let NodeKind::Seq(_) = n.kind {
        let list = string_list(cx, n, p, "`methods`")?;
        let mut out = Vec::new();
        for (i, m) in list.into_iter().enumerate() {
            if m.is_empty() || !m.bytes().all(|b| b.is_ascii_alphabetic()) {
                let item = match &n.kind {
                    NodeKind::Seq(items) => items.get(i).and_then(|it| it.span),
                    _ => n.span,
                };
                cx.error(
                    Diagnostic::error(&p.index(i), item, format!("`{m}` is not an HTTP method"))
                        .expected("a method such as `GET` or `POST`"),
                );
                return None;
            }
            out.push(m.to_ascii_uppercase());
        }
        let unsafe_listed = out.iter().any(|m| m != "GET" && m != "HEAD");
        return Some((unsafe_listed, out));
    }
    let word = cx.string(n, p, "`methods`")?;
    match word.as_str() {
        "safe" => Some((false, Vec::new())),
        "as_logged" => Some((true, Vec::new())),
        other => {
            cx.error(
                enum_error(p, n, "`methods`", other, &["safe", "as_logged"])
                    .help("or a list of methods to replay, such as `[GET, POST]`"),
            );
            None
        }
    }
}

fn read_statuses(cx: &mut Cx<'_>, n: &Node, p: &Path) -> Option<Vec<String>> {
    let items = cx.list(n, p, "`statuses`")?;
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let ip = p.index(i);
        let s = match &item.kind {
            NodeKind::Int(v) => v.to_string(),
            _ => cx.string(item, &ip, "a status")?,
        };
        if import::StatusPattern::parse(&s).is_err() {
            cx.error(
                Diagnostic::error(&ip, item.span, format!("`{s}` is not a status"))
                    .expected("a status such as `200` or a class such as `2xx`")
                    .found(item.describe()),
            );
            return None;
        }
        out.push(s);
    }
    Some(out)
}

fn read_connections(cx: &mut Cx<'_>, n: &Node, p: &Path) -> Option<ReplayConnections> {
    let word = cx.string(n, p, "`connections`")?;
    match word.as_str() {
        "pool" => Some(ReplayConnections::Pool),
        "new" => Some(ReplayConnections::New),
        "per_client" => {
            cx.error(
                Diagnostic::error(p, n.span, "`connections: per_client` is not implemented yet")
                    .expected("`pool` (keep-alive connections shared by every request) or `new` (one per request)")
                    .found(n.describe())
                    .help("one connection per logged client is planned (issue 44); use `pool` meanwhile"),
            );
            None
        }
        other => {
            cx.error(enum_error(p, n, "`connections`", other, &["pool", "new", "per_client"]));
            None
        }
    }
}

fn string_list(cx: &mut Cx<'_>, n: &Node, p: &Path, what: &str) -> Option<Vec<String>> {
    let items = cx.list(n, p, what)?;
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        out.push(cx.string(item, &p.index(i), what)?);
    }
    Some(out)
}
