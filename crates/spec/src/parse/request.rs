//! Requests: one (`request`), a weighted mix (`requests`), a session's steps (`session`), and the `defaults` they
//! inherit.

use std::collections::BTreeMap;

use crate::diag::Diagnostic;
use crate::node::{Node, NodeKind, Path};
use crate::read::{list, Cx, SessionVar};
use crate::units::Duration;
use loadgate_model::spec::*;

use super::check::{read_captures, read_checks, Heads, RequestInfo};
use super::fields::{enum_error, positive_duration, read_choice, read_string_map, valid_scenario_name};
use super::keys::{DEFAULTS_KEYS, MIX_REQUEST_KEYS, REQUEST_KEYS, SESSION_STEP_KEYS};

const HTTP_METHODS: &[&str] = &["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "CONNECT"];

#[derive(Debug, Clone, Default)]
pub(super) struct Defaults {
    pub(super) headers: Vec<(String, String)>,
    pub(super) timeout: Option<Duration>,
    pub(super) failed_checks: Option<loadgate_model::FailedChecks>,
    pub(super) check_body_limit: Option<u64>,
    /// Not a default the spec writes: whether the targets' response heads are read as HTTP/1.1 (header checks,
    /// header captures and cookies need them), from `target.protocol`.
    pub(super) heads: Heads,
    /// Not a default either: whether the scenario being read gates checks (`checks`, `check_failures`), so that
    /// every check's name must be one an SLO filter can write.
    pub(super) checks_gated: bool,
    /// Not a default the spec writes under `defaults`: the spec-wide `profile:`, which a scenario's own replaces.
    pub(super) profile: Option<loadgate_model::profile::Profile>,
    /// What a scenario's own `profile:` needs to know of the targets.
    pub(super) profile_cx: super::profile::ProfileCx,
}

/// The largest `defaults.check_body_limit`: 16 MiB.
const MAX_CHECK_BODY_LIMIT: u64 = 16 << 20;

/// A named request being read (a mix entry or a session step): its name, and for a session step the slots of
/// the session's variables.
pub(super) struct StepCx<'a> {
    pub name: &'a str,
    pub slots: &'a [(String, u16)],
    pub session: bool,
}

pub(super) fn read_headers(cx: &mut Cx<'_>, node: &Node, path: &Path) -> Option<Vec<(String, String)>> {
    let NodeKind::Map(entries) = &node.kind else {
        cx.error(
            Diagnostic::error(path, node.span, "`headers` must be a mapping")
                .expected("a mapping of header names to values, such as `headers: { Accept: text/plain }`")
                .found(node.type_name()),
        );
        return None;
    };
    let mut out = Vec::new();
    let mut ok = true;
    for (k, v) in entries {
        let p = path.key(&k.name);
        let token_ok =
            !k.name.is_empty() && k.name.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
        if !token_ok {
            cx.error(
                Diagnostic::error(&p, k.span, format!("`{}` is not a valid header name", k.name))
                    .width(k.name.chars().count())
                    .expected("an HTTP token: letters, digits and `-`"),
            );
            ok = false;
            continue;
        }
        match cx.string(v, &p, "a header value") {
            Some(s) if s.contains(['\r', '\n']) => {
                cx.error(
                    Diagnostic::error(&p, v.span, "a header value cannot contain a line break").found(v.describe()),
                );
                ok = false;
            }
            Some(s) => out.push((k.name.clone(), s)),
            None => ok = false,
        }
    }
    ok.then_some(out)
}

pub(super) fn read_defaults(cx: &mut Cx<'_>, node: &Node, path: &Path) -> Option<Defaults> {
    let f = cx.map(node, path, DEFAULTS_KEYS, "`defaults`")?;
    let mut d = Defaults::default();
    let mut ok = true;
    if let Some((n, p)) = f.get("headers") {
        match read_headers(cx, n, &p) {
            Some(h) => d.headers = h,
            None => ok = false,
        }
    }
    if let Some((n, p)) = f.get("timeout") {
        d.timeout = read_timeout(cx, n, &p);
        ok &= d.timeout.is_some();
    }
    if let Some((n, p)) = f.get("failed_checks") {
        d.failed_checks = read_failed_checks(cx, n, &p);
        ok &= d.failed_checks.is_some();
    }
    if let Some((n, p)) = f.get("check_body_limit") {
        match cx.unit::<crate::units::ByteSize>(n, &p, "`check_body_limit`") {
            Some(b) if (1..=MAX_CHECK_BODY_LIMIT).contains(&b.0) => d.check_body_limit = Some(b.0),
            Some(_) => {
                cx.error(
                    Diagnostic::error(&p, n.span, "`check_body_limit` is out of range")
                        .expected("from 1B to 16MiB")
                        .found(n.describe())
                        .help("it bounds the memory of every connection whose requests have a body regex"),
                );
                ok = false;
            }
            None => ok = false,
        }
    }
    ok.then_some(d)
}

/// `failed_checks: errors | separate`.
pub(super) fn read_failed_checks(cx: &mut Cx<'_>, n: &Node, p: &Path) -> Option<loadgate_model::FailedChecks> {
    use loadgate_model::FailedChecks;
    read_choice(cx, n, p, "`failed_checks`", &[("errors", FailedChecks::Errors), ("separate", FailedChecks::Separate)])
}

pub(super) fn read_timeout(cx: &mut Cx<'_>, n: &Node, p: &Path) -> Option<Duration> {
    let t = cx.unit::<Duration>(n, p, "`timeout`")?;
    if t == Duration::ZERO {
        cx.error(
            Diagnostic::error(p, n.span, "`timeout` must be longer than zero")
                .expected("a duration such as `8s`")
                .found(n.describe()),
        );
        return None;
    }
    Some(t)
}

/// `session:`: a list of steps, each a named request (`{ name: home, path: / }`) or a think time
/// (`{ think: 500ms }`), starting with a request.
pub(super) fn read_session(
    cx: &mut Cx<'_>,
    node: &Node,
    path: &Path,
    defaults: &Defaults,
    prefix: &str,
) -> Option<(Vec<SessionStep>, Vec<loadgate_model::Variable>)> {
    const EXAMPLE: &str = "`session: [{ name: home, path: / }, { think: 1s }, { name: cart, path: /cart }]`";
    let NodeKind::Seq(items) = &node.kind else {
        cx.error(
            Diagnostic::error(path, node.span, "`session` must be a list of steps")
                .expected(format!("a list such as {EXAMPLE}"))
                .found(node.type_name()),
        );
        return None;
    };
    let (defs, mut ok) = gather_captures(cx, items, path);
    let slots: Vec<(String, u16)> = defs.iter().map(|d| (d.name.clone(), d.slot)).collect();
    let mut out = Vec::new();
    let mut names: Vec<String> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let p = path.index(i);
        let NodeKind::Map(fields) = &item.kind else {
            cx.error(
                Diagnostic::error(&p, item.span, "a session step must be a mapping")
                    .expected("a request such as `{ name: home, path: / }` or a think time such as `{ think: 500ms }`")
                    .found(item.type_name()),
            );
            ok = false;
            continue;
        };
        if let Some((_, tn)) = fields.iter().find(|(k, _)| k.name == "think") {
            let mut step_ok = true;
            for (k, _) in fields.iter().filter(|(k, _)| k.name != "think") {
                let d = Diagnostic::error(
                    &p.key(&k.name),
                    k.span,
                    format!("`{}` does not belong in a `think` step", k.name),
                )
                .width(k.name.chars().count())
                .expected("only `think`");
                cx.error(if SESSION_STEP_KEYS.contains(&k.name.as_str()) {
                    d.help("a step either pauses the user (`{ think: 500ms }`) or sends a request (`{ name: cart, path: /cart }`): make them two steps")
                } else {
                    d
                });
                step_ok = false;
            }
            match positive_duration(cx, tn, &p.key("think"), "`think`") {
                Some(duration) if step_ok => out.push(SessionStep::Think { duration }),
                _ => ok = false,
            }
            continue;
        }
        // A request step: its name sits beside the request's own keys; read it, then the request without it.
        let mut request_node = item.clone();
        let mut name = None;
        if let NodeKind::Map(fields) = &mut request_node.kind {
            if let Some(pos) = fields.iter().position(|(k, _)| k.name == "name") {
                let (_, nn) = fields.remove(pos);
                let np = p.key("name");
                if let Some(s) = cx.string(&nn, &np, "`name`") {
                    if !valid_scenario_name(&s) {
                        cx.error(
                            Diagnostic::error(&np, nn.span, format!("request name `{s}` is not a simple identifier"))
                                .expected("letters, digits, `-` and `_`")
                                .found(nn.describe()),
                        );
                    } else if names.contains(&s) {
                        cx.error(
                            Diagnostic::error(&np, nn.span, format!("the session already has a step named `{s}`"))
                                .expected("a name no other step of the session has")
                                .found(nn.describe())
                                .help(format!(
                                    "each request step is measured under its own name (`p95{{request=NAME}}`): \
                                     rename one, for example `{s}-2`"
                                )),
                        );
                    } else {
                        names.push(s.clone());
                        name = Some(s);
                    }
                }
            } else {
                cx.error(
                    Diagnostic::error(&p, item.span, "a request step of a session is missing `name`")
                        .expected("the `name` key")
                        .help(format!(
                            "add `name: step{}`; results and SLOs (`p95{{request=NAME}}`) name each step",
                            i + 1
                        )),
                );
            }
        }
        // Earlier steps' captures are bound to their markers, later ones' to markers that say so.
        let step_vars: Vec<SessionVar> = defs
            .iter()
            .map(|d| SessionVar {
                name: d.name.clone(),
                slot: d.slot,
                step: d.step.clone(),
                line: d.line,
                here: d.index == i,
            })
            .collect();
        let mut bindings: Vec<(String, minijinja::Value)> = defs
            .iter()
            .map(|d| (d.name.clone(), minijinja::Value::from(crate::generate::var_marker(d.slot, d.index < i))))
            .collect();
        bindings.extend(cx.bindings.iter().cloned());
        let step_name = name.clone().unwrap_or_else(|| format!("step{}", i + 1));
        let step = StepCx { name: &step_name, slots: &slots, session: true };
        let request = {
            let mut scx = Cx {
                diags: &mut *cx.diags,
                templates: cx.templates,
                bindings: &bindings,
                dynamic: false,
                vars: &step_vars,
                vars_only: false,
            };
            read_request_with(&mut scx, &request_node, &p, defaults, prefix, SESSION_STEP_KEYS, Some(&step))
        };
        match (name, request) {
            (Some(name), Some(request)) => out.push(SessionStep::Request { name, request }),
            _ => ok = false,
        }
    }
    if !ok {
        return None;
    }
    match out.first() {
        None => {
            cx.error(
                Diagnostic::error(path, node.span, "`session` is empty")
                    .expected(format!("at least one request step, as in {EXAMPLE}")),
            );
            None
        }
        Some(SessionStep::Think { .. }) => {
            cx.error(
                Diagnostic::error(&path.index(0), items.first().and_then(|n| n.span), "a session starts with a request")
                    .expected("a request step such as `{ name: home, path: / }` first")
                    .help("a user's latency is measured from its arrival: to start users later, add a `pause` step to the injection (`load: { users: [{ pause: 1s }, ...] }`)"),
            );
            None
        }
        Some(_) => {
            // Each variable holds the longest value any of its captures may take.
            let mut variables: Vec<loadgate_model::Variable> =
                defs.iter().map(|d| loadgate_model::Variable { name: d.name.clone(), max_len: 0 }).collect();
            for s in &out {
                if let SessionStep::Request { request, .. } = s {
                    for c in &request.captures {
                        if let Some(v) = variables.get_mut(c.slot as usize) {
                            v.max_len = v.max_len.max(c.max_len);
                        }
                    }
                }
            }
            Some((out, variables))
        }
    }
}

/// A session variable: the first step that captures it gives it its slot.
struct CaptureDef {
    name: String,
    slot: u16,
    /// The step's index and name, and the line of its capture.
    index: usize,
    step: String,
    line: Option<usize>,
}

/// Gives each name the session's steps capture a slot, in order of first capture; refuses names that are not
/// identifiers or that shadow a variable, and more than 64 of them.
fn gather_captures(cx: &mut Cx<'_>, items: &[Node], path: &Path) -> (Vec<CaptureDef>, bool) {
    let mut defs: Vec<CaptureDef> = Vec::new();
    let mut ok = true;
    for (i, item) in items.iter().enumerate() {
        let Some(NodeKind::Map(entries)) = item.get("capture").map(|c| &c.kind) else { continue };
        let step = match item.get("name").map(|n| &n.kind) {
            Some(NodeKind::Str(s)) => s.clone(),
            _ => format!("step{}", i + 1),
        };
        for (k, _) in entries {
            let p = path.index(i).key("capture").key(&k.name);
            let width = k.name.chars().count();
            if !super::vars::valid_var_name(&k.name) {
                cx.error(
                    Diagnostic::error(&p, k.span, format!("capture name `{}` is not an identifier", k.name))
                        .width(width)
                        .expected(
                            "letters, digits and `_`, not starting with a digit: later steps read it as `{{ name }}`",
                        ),
                );
                ok = false;
                continue;
            }
            let matrix = cx.bindings.iter().any(|(b, _)| *b == k.name);
            if matrix || cx.templates.is_defined(&k.name) {
                let what = if matrix {
                    "matrix variable"
                } else if crate::generate::GENERATORS.contains(&k.name.as_str()) || k.name == "range" {
                    "function"
                } else {
                    "spec variable"
                };
                cx.error(
                    Diagnostic::error(
                        &p,
                        k.span,
                        format!("capture `{}` has the name of the {what} `{}`", k.name, k.name),
                    )
                    .width(width)
                    .expected("a name no variable or function of the spec has")
                    .help(format!("`{{{{ {} }}}}` would be ambiguous: name the capture `{}_value`", k.name, k.name)),
                );
                ok = false;
                continue;
            }
            if defs.iter().any(|d| d.name == k.name) {
                continue;
            }
            if defs.len() == loadgate_model::check::MAX_VARIABLES {
                cx.error(
                    Diagnostic::error(&p, k.span, "the session captures more than 64 variables")
                        .width(width)
                        .expected("at most 64 capture names per session"),
                );
                ok = false;
                continue;
            }
            defs.push(CaptureDef {
                name: k.name.clone(),
                slot: defs.len() as u16,
                index: i,
                step: step.clone(),
                line: k.span.map(|s| s.line),
            });
        }
    }
    (defs, ok)
}

pub(super) fn read_mix(
    cx: &mut Cx<'_>,
    node: &Node,
    path: &Path,
    defaults: &Defaults,
    prefix: &str,
) -> Option<Vec<MixRequest>> {
    let NodeKind::Map(entries) = &node.kind else {
        cx.error(
            Diagnostic::error(path, node.span, "`requests` must be a mapping of names to requests")
                .expected("a mapping such as `requests: { get: { weight: 9, path: / }, put: { weight: 1, method: PUT, path: / } }`")
                .found(node.type_name()),
        );
        return None;
    };
    if entries.is_empty() {
        cx.error(Diagnostic::error(path, node.span, "`requests` is empty").expected("at least one named request"));
        return None;
    }
    let mut out = Vec::new();
    let mut ok = true;
    for (k, v) in entries {
        let p = path.key(&k.name);
        if !valid_scenario_name(&k.name) {
            cx.error(
                Diagnostic::error(&p, k.span, format!("request name `{}` is not a simple identifier", k.name))
                    .width(k.name.chars().count())
                    .expected("letters, digits, `-` and `_`"),
            );
            ok = false;
            continue;
        }
        // The weight sits beside the request's own keys; read it, then the request without it.
        let mut weight = 1u32;
        let mut request_node = v.clone();
        if let NodeKind::Map(fields) = &mut request_node.kind {
            if let Some(pos) = fields.iter().position(|(fk, _)| fk.name == "weight") {
                let (_, wn) = fields.remove(pos);
                match cx.uint(&wn, &p.key("weight"), "`weight`", 1) {
                    Some(w) if w <= 1_000_000 => weight = w as u32,
                    Some(_) => {
                        cx.error(
                            Diagnostic::error(&p.key("weight"), wn.span, "`weight` is too large")
                                .expected("at most 1000000"),
                        );
                        ok = false;
                    }
                    None => ok = false,
                }
            }
        }
        let entry = StepCx { name: &k.name, slots: &[], session: false };
        match read_request_with(cx, &request_node, &p, defaults, prefix, MIX_REQUEST_KEYS, Some(&entry)) {
            Some(request) => out.push(MixRequest { name: k.name.clone(), weight, request }),
            None => ok = false,
        }
    }
    ok.then_some(out)
}

fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

pub(super) fn read_request(
    cx: &mut Cx<'_>,
    node: &Node,
    path: &Path,
    defaults: &Defaults,
    prefix: &str,
) -> Option<Request> {
    read_request_with(cx, node, path, defaults, prefix, REQUEST_KEYS, None)
}

fn read_request_with(
    cx: &mut Cx<'_>,
    node: &Node,
    path: &Path,
    defaults: &Defaults,
    prefix: &str,
    keys: &[&str],
    step: Option<&StepCx<'_>>,
) -> Option<Request> {
    let f = cx.map(node, path, keys, "`request`")?;
    // The method stays fixed; path, query, headers and body may generate values per request.
    cx.dynamic = false;
    let mut ok = true;
    let method = match f.get("method") {
        Some((n, p)) => cx.string(n, &p, "`method`").and_then(|m| {
            let upper = m.to_ascii_uppercase();
            if HTTP_METHODS.contains(&m.as_str()) {
                Some(m)
            } else if HTTP_METHODS.contains(&upper.as_str()) {
                cx.error(
                    Diagnostic::error(&p, n.span, format!("method `{m}` must be upper case"))
                        .expected(format!("one of {}", list(HTTP_METHODS)))
                        .help(format!("write `method: {upper}`")),
                );
                None
            } else if !m.is_empty() && m.bytes().all(|b| b.is_ascii_uppercase()) {
                Some(m) // An extension method such as PURGE.
            } else {
                cx.error(enum_error(&p, n, "`method`", &m, HTTP_METHODS));
                None
            }
        }),
        None => Some("GET".to_owned()),
    };
    ok &= method.is_some();
    cx.dynamic = true;
    let req_path = match cx.required(&f, "path", "`request`") {
        Some((n, p)) => cx.string(n, &p, "`path`").and_then(|s| {
            if !s.starts_with('/') {
                cx.error(
                    Diagnostic::error(&p, n.span, "`path` must start with `/`")
                        .expected("a path such as `/plaintext` or `/api/orders?id=1`")
                        .found(n.describe())
                        .help(if s.starts_with("http://") || s.starts_with("https://") {
                            "the host goes in `target.base_url`; `path` holds only the path".to_owned()
                        } else {
                            format!("write `path: /{s}`")
                        }),
                );
                None
            } else if s.contains([' ', '\r', '\n', '\t']) {
                cx.error(
                    Diagnostic::error(&p, n.span, "`path` cannot contain spaces or line breaks")
                        .expected("a percent-encoded path such as `/search?q=a%20b`")
                        .found(n.describe()),
                );
                None
            } else {
                Some(s)
            }
        }),
        None => None,
    };
    ok &= req_path.is_some();
    let mut query = Vec::new();
    if let Some((n, p)) = f.get("query") {
        let mut map = BTreeMap::new();
        // Keep the order the user wrote: read entries directly.
        if let NodeKind::Map(entries) = &n.kind {
            for (k, v) in entries {
                match cx.string(v, &p.key(&k.name), "a query value") {
                    Some(s) => query.push((k.name.clone(), s)),
                    None => ok = false,
                }
            }
        } else {
            ok &= read_string_map(cx, n, &p, "`query`", &mut map);
        }
    }
    let mut headers = defaults.headers.clone();
    if let Some((n, p)) = f.get("headers") {
        match read_headers(cx, n, &p) {
            Some(h) => {
                for (k, v) in h {
                    headers.retain(|(dk, _)| !dk.eq_ignore_ascii_case(&k));
                    headers.push((k, v));
                }
            }
            None => ok = false,
        }
    }
    let body = f.get("body").and_then(|(n, p)| {
        let b = cx.string(n, &p, "`body`");
        ok &= b.is_some();
        b
    });
    cx.dynamic = false;
    let who = step.map_or_else(|| "the request".to_owned(), |s| format!("`{}`", s.name));
    let info = RequestInfo {
        who,
        method: method.as_deref().unwrap_or("GET"),
        heads: defaults.heads,
        checks_gated: defaults.checks_gated,
    };
    let checks = match f.get("check") {
        Some((n, p)) => read_checks(cx, n, &p, &info),
        None => Some(Vec::new()),
    };
    let captures = match (f.get("capture"), step) {
        (None, _) => Some(Vec::new()),
        (Some((n, p)), Some(step)) if step.session => read_captures(cx, n, &p, &info, step.slots),
        (Some((_, p)), _) => {
            let on = if step.is_some() { "a `requests:` entry" } else { "a `request:`" };
            cx.error(
                Diagnostic::error(&p, f.key_span("capture"), format!("`capture` on {on} feeds nothing"))
                    .width("capture".len())
                    .expected("`capture` on a step of a `session:`")
                    .help(
                        "captures feed later steps of a session: make it a `session:` whose later steps use the value",
                    ),
            );
            None
        }
    };
    if !ok {
        return None;
    }
    let mut request = assemble_request(cx, method?, prefix, &req_path?, &query, headers, body)?;
    request.checks = checks?;
    request.captures = captures?;
    Some(request)
}

/// Builds the request: static text where nothing is generated, segments and generators where something is.
fn assemble_request(
    cx: &mut Cx<'_>,
    method: String,
    prefix: &str,
    req_path: &str,
    query: &[(String, String)],
    headers: Vec<(String, String)>,
    body: Option<String>,
) -> Option<Request> {
    use crate::generate::{has_marks, parse_marks, Generator, Part, Segment};
    let mut generators: Vec<Generator> = Vec::new();
    let var_names: Vec<(u16, String)> = cx.vars.iter().map(|v| (v.slot, v.name.clone())).collect();
    // Turns rendered text into segments; `encode` percent-encodes literal text now, generated and captured values
    // later. (Markers that do not read back were refused while rendering.)
    let mut segments = |text: &str, encode: bool| -> Vec<Segment> {
        parse_marks(text)
            .unwrap_or_else(|| vec![Part::Text(text.to_owned())])
            .into_iter()
            .filter_map(|part| match part {
                Part::Text(t) => Some(Segment::Text(if encode { percent_encode(&t) } else { t })),
                Part::Gen(i) => {
                    generators.push(cx.templates.registry.get(i)?);
                    Some(Segment::Gen { index: generators.len() - 1, encode })
                }
                Part::Var(slot) => Some(Segment::Var { slot, encode }),
                Part::Later(_) => None,
            })
            .collect()
    };
    let mut path_segments = vec![Segment::Text(prefix.to_owned())];
    path_segments.extend(segments(req_path, false));
    if !query.is_empty() {
        path_segments.push(Segment::Text(if req_path.contains('?') { "&".into() } else { "?".into() }));
        for (i, (k, v)) in query.iter().enumerate() {
            if i > 0 {
                path_segments.push(Segment::Text("&".into()));
            }
            path_segments.push(Segment::Text(format!("{}=", percent_encode(k))));
            path_segments.extend(segments(v, true));
        }
    }
    let header_segments: Vec<(String, Vec<Segment>)> =
        headers.iter().map(|(k, v)| (k.clone(), segments(v, false))).collect();
    let body_segments = body.as_deref().map(|b| segments(b, false));
    let dynamic = has_marks(req_path)
        || query.iter().any(|(_, v)| has_marks(v))
        || headers.iter().any(|(_, v)| has_marks(v))
        || body.as_deref().is_some_and(has_marks);
    let display = |segs: &[Segment], gens: &[Generator]| -> String {
        segs.iter()
            .map(|s| match s {
                Segment::Text(t) => t.clone(),
                Segment::Gen { index, .. } => {
                    format!("{{{}}}", gens.get(*index).map(describe_generator).unwrap_or_default())
                }
                Segment::Var { slot, .. } => match var_names.iter().find(|(s, _)| s == slot) {
                    Some((_, name)) => format!("{{{{ {name} }}}}"),
                    None => format!("{{var{slot}}}"),
                },
            })
            .collect()
    };
    let path = display(&merge_text(path_segments.clone()), &generators);
    let shown_headers = header_segments.iter().map(|(k, v)| (k.clone(), display(v, &generators))).collect();
    let shown_body = body_segments.as_ref().map(|b| display(b, &generators));
    // Each request carries its own copy of its generators' data (a data file's lines): count the copies.
    let data: u64 = generators
        .iter()
        .map(|g| match g {
            Generator::Pick { values } => values.iter().map(|v| v.len() as u64 + 24).sum(),
            _ => 0,
        })
        .sum();
    if data > 0 && !cx.templates.meter.expand(0, data) {
        cx.error(
            Diagnostic::error(&Path::root(), None, format!(
                "the requests' data take the spec past {} of expanded copies",
                crate::limits::human_bytes(crate::limits::MAX_EXPANDED_BYTES)
            ))
            .help("each matrix cell and each request using `pick_line`/`pick_csv` copies the file's values: use a smaller file or fewer cells"),
        );
        return None;
    }
    let dynamic = dynamic.then(|| loadgate_model::spec::DynamicRequest {
        path: merge_text(path_segments),
        headers: header_segments.into_iter().map(|(k, v)| (k, merge_text(v))).collect(),
        body: body_segments.map(merge_text),
        generators,
    });
    Some(Request {
        method,
        path,
        headers: shown_headers,
        body: shown_body,
        dynamic,
        checks: Vec::new(),
        captures: Vec::new(),
    })
}

/// Joins neighbouring text segments and drops empty ones.
fn merge_text(segments: Vec<crate::generate::Segment>) -> Vec<crate::generate::Segment> {
    use crate::generate::Segment;
    let mut out: Vec<Segment> = Vec::with_capacity(segments.len());
    for s in segments {
        match (out.last_mut(), s) {
            (_, Segment::Text(t)) if t.is_empty() => {}
            (Some(Segment::Text(prev)), Segment::Text(t)) => prev.push_str(&t),
            (_, s) => out.push(s),
        }
    }
    out
}

fn describe_generator(g: &crate::generate::Generator) -> String {
    use crate::generate::Generator;
    match g {
        Generator::Seq { start, step } => format!("seq({start}, {step})"),
        Generator::RandomInt { min, max } => format!("random_int({min}, {max})"),
        Generator::RandomString { len } => format!("random_string({len})"),
        Generator::RandomHex { len } => format!("random_hex({len})"),
        Generator::Uuid => "uuid()".to_owned(),
        Generator::Pick { values } => format!("pick({} values)", values.len()),
    }
}
