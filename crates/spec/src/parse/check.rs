//! Response checks (`check:`) and captures (`capture:`): what a request expects of its response, and what a
//! session step takes from it for later steps. The design is `docs/design/checks.md`.

use loadgate_model::check::{
    default_name, name_is_filterable, Capture, CaptureSource, Check, CheckKind, Expected, JsonExpected, JsonOp,
    JsonSelector, JsonType, Pattern, StatusSet, TextOp, DEFAULT_CAPTURE_LEN, MAX_CAPTURE_LEN, MAX_CHECKS,
    MAX_REGEX_LEN,
};
use loadgate_model::generate::Segment;

use crate::diag::Diagnostic;
use crate::node::{Node, NodeKind, Path, Span};
use crate::read::{list, Cx, Fields};
use crate::units::ByteSize;
use crate::Comparison;

use super::fields::enum_error;
use super::keys::{BODY_SIZE_KEYS, CAPTURE_KEYS, CHECK_KEYS};

/// The subjects of a check: exactly one per check.
pub(crate) const SUBJECTS: &[&str] =
    &["status", "header", "body_contains", "body_matches", "body_equals", "body_size", "json"];
const HEADER_OPS: &[&str] = &["exists", "equals", "contains", "matches"];
const JSON_OPS: &[&str] = &["exists", "equals", "contains", "matches", "gt", "ge", "lt", "le", "type"];
/// The most bytes a regex compiles to (`regex-automata`'s size limits).
const MAX_REGEX_COMPILED: usize = 1 << 20;

/// Whether responses' heads are read as HTTP/1.1: header checks, header captures and cookies need them (the
/// HTTP/2 driver decodes `:status` only).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) enum Heads {
    #[default]
    Http1,
    /// `protocol: auto` over TLS: the server may pick HTTP/2.
    MaybeHttp2,
    Http2,
}

/// What checks and captures of one request need to know about it.
pub(super) struct RequestInfo<'a> {
    /// `the request` or `` `login` ``: how messages name the request.
    pub who: String,
    pub method: &'a str,
    pub heads: Heads,
    /// The scenario gates checks: a default name must be one an SLO filter can write.
    pub checks_gated: bool,
}

/// `check:`: a list of checks, each one subject with its operators and an optional `name`.
pub(super) fn read_checks(cx: &mut Cx<'_>, node: &Node, path: &Path, info: &RequestInfo<'_>) -> Option<Vec<Check>> {
    let items = cx.list(node, path, "`check`")?;
    if items.len() > MAX_CHECKS {
        cx.error(
            Diagnostic::error(path, node.span, format!("{} has {} checks", info.who, items.len()))
                .expected(format!("at most {MAX_CHECKS} checks per request"))
                .help("check what tells a right response from a wrong one; split the rest into another scenario"),
        );
        return None;
    }
    let mut out: Vec<(Check, Path, Option<Span>, bool)> = Vec::new();
    let mut ok = true;
    for (i, item) in items.iter().enumerate() {
        let p = path.index(i);
        match read_check(cx, item, &p, info) {
            Some(c) => out.push(c),
            None => ok = false,
        }
    }
    // Two checks of one request with one name could not be told apart in results and SLO filters.
    for (i, (c, p, span, named)) in out.iter().enumerate() {
        if out[..i].iter().any(|(o, ..)| o.name == c.name) {
            let d = Diagnostic::error(p, *span, format!("two checks of {} are named `{}`", info.who, c.name))
                .expected("a name no other check of the request has");
            cx.error(if *named {
                d.help("rename one")
            } else {
                d.help(format!("add `name:` to one of them, such as `name: {}-2`", c.name.replace(':', "-")))
            });
            ok = false;
        }
    }
    ok.then(|| out.into_iter().map(|(c, ..)| c).collect())
}

/// One check: the check, where it is (its subject key), and whether its name was given.
fn read_check(
    cx: &mut Cx<'_>,
    node: &Node,
    path: &Path,
    info: &RequestInfo<'_>,
) -> Option<(Check, Path, Option<Span>, bool)> {
    const EXAMPLE: &str = "`{ status: 200 }`, `{ header: Content-Type, matches: json }` or `{ json: $.id, equals: 1 }`";
    if !matches!(node.kind, NodeKind::Map(_)) {
        cx.error(
            Diagnostic::error(path, node.span, "a check must be a mapping")
                .expected(format!("a subject with its operators, such as {EXAMPLE}"))
                .found(node.describe()),
        );
        return None;
    }
    let f = cx.map(node, path, CHECK_KEYS, "a check")?;
    let mut ok = f.unknown.is_empty();
    let subjects: Vec<&str> = SUBJECTS.iter().copied().filter(|s| f.has(s)).collect();
    let subject = match subjects.as_slice() {
        [one] => *one,
        [] => {
            if ok {
                cx.error(
                    Diagnostic::error(path, node.span, "a check names what it checks: found no subject")
                        .expected(format!("one of {}", list(SUBJECTS)))
                        .help(format!("for example {EXAMPLE}")),
                );
            }
            return None;
        }
        [first, second, ..] => {
            cx.error(
                Diagnostic::error(
                    &path.key(second),
                    f.key_span(second),
                    format!("a check names one thing: found `{first}` and `{second}`"),
                )
                .width(second.chars().count())
                .expected(format!("exactly one of {}", list(SUBJECTS)))
                .help(format!("make them two checks: `- {{ {first}: ... }}` and `- {{ {second}: ... }}`")),
            );
            return None;
        }
    };
    let (subject_node, subject_path) = f.get(subject)?;
    let subject_span = f.key_span(subject).or(node.span);
    let allowed: &[&str] = match subject {
        "header" => HEADER_OPS,
        "json" => JSON_OPS,
        _ => &[],
    };
    for op in JSON_OPS.iter().filter(|op| f.has(op) && !allowed.contains(op)) {
        let d =
            Diagnostic::error(&path.key(op), f.key_span(op), format!("`{op}` does not apply to a `{subject}` check"))
                .width(op.chars().count());
        cx.error(match subject {
            "header" => {
                d.expected(format!("one of {}", list(HEADER_OPS))).help("numbers and types are compared on `json` only")
            }
            "status" => d.expected("no operator").help("the statuses are the check: `status: [200, 201]` or `2xx`"),
            _ => d
                .expected("no operator")
                .help(format!("`{subject}` is compared with its own value; operators go with `header` and `json`")),
        });
        ok = false;
    }
    if !ok {
        return None;
    }
    let kind = match subject {
        "status" => read_status(cx, subject_node, &subject_path).map(|set| CheckKind::Status { set }),
        "header" => {
            let name = header_name(cx, subject_node, &subject_path);
            let ops = read_text_ops(cx, &f);
            if info.heads != Heads::Http1 {
                heads_problem(cx, &subject_path, subject_span, info.heads, "a header check");
            }
            Some(CheckKind::Header { name: name?, ops: ops? })
        }
        "body_contains" => non_empty_text(cx, subject_node, &subject_path, "`body_contains`")
            .map(|text| CheckKind::BodyContains { text }),
        "body_matches" => read_regex(cx, subject_node, &subject_path, "`body_matches`")
            .map(|pattern| CheckKind::BodyMatches { pattern }),
        "body_equals" => read_expected(cx, subject_node, &subject_path, "`body_equals`")
            .map(|expected| CheckKind::BodyEquals { expected }),
        "body_size" => read_body_size(cx, subject_node, &subject_path),
        _ => {
            let selector = read_selector(cx, subject_node, &subject_path);
            let ops = read_json_ops(cx, &f);
            Some(CheckKind::Json { selector: selector?, ops: ops? })
        }
    };
    let name = match f.get("name") {
        Some((n, p)) => {
            let name = cx.string(n, &p, "`name`")?;
            if !name_is_filterable(&name) || name.chars().count() > 128 {
                cx.error(
                    Diagnostic::error(&p, n.span, format!("check name `{name}` cannot be written in an SLO filter"))
                        .expected("a name of at most 128 characters without spaces, `{`, `}`, `,` and `=`")
                        .found(n.describe())
                        .help("names are written in SLO filters such as `check_failures{check=NAME} == 0`"),
                );
                return None;
            }
            Some(name)
        }
        None => None,
    };
    let kind = kind?;
    if info.method == "HEAD" && kind.reads_body() {
        cx.error(
            Diagnostic::error(
                &subject_path,
                subject_span,
                format!("`method: HEAD` has no body: a `{subject}` check cannot hold"),
            )
            .width(subject.chars().count())
            .expected("`status` and `header` checks on a `HEAD` request")
            .help("check the body of a `GET`"),
        );
        return None;
    }
    let named = name.is_some();
    let name = name.unwrap_or_else(|| default_name(&kind));
    if !named && info.checks_gated && !name_is_filterable(&name) {
        cx.error(
            Diagnostic::error(
                &subject_path,
                subject_span,
                format!("the check's name `{name}` cannot be written in an SLO filter, and the scenario gates checks"),
            )
            .width(subject.chars().count())
            .expected("a `name:` without spaces, `{`, `}`, `,` and `=`")
            .help("give the check a `name:`, such as `name: my-check`, so that results and filters can name it"),
        );
        return None;
    }
    Some((Check { name, kind }, subject_path, subject_span, named))
}

/// The statuses of a `status` check: `200`, `2xx`, or a list of those.
fn read_status(cx: &mut Cx<'_>, node: &Node, path: &Path) -> Option<StatusSet> {
    let single = [node.clone()];
    let (items, is_list): (&[Node], bool) = match &node.kind {
        NodeKind::Seq(items) => (items, true),
        _ => (&single, false),
    };
    if items.is_empty() {
        cx.error(
            Diagnostic::error(path, node.span, "`status` lists no status")
                .expected("a status such as `200`, a class such as `2xx`, or a list of them"),
        );
        return None;
    }
    let mut set = StatusSet::EMPTY;
    let mut ok = true;
    for (i, item) in items.iter().enumerate() {
        let p = if is_list { path.index(i) } else { path.clone() };
        let Some(rendered) = cx.render(item, &p) else {
            ok = false;
            continue;
        };
        let one = match &rendered.kind {
            NodeKind::Int(_) | NodeKind::Str(_) => rendered.scalar_text().and_then(|t| StatusSet::parse_item(&t)),
            _ => None,
        };
        match one {
            Some(one) => set = set.union(one),
            None => {
                let text = rendered.scalar_text().unwrap_or_else(|| rendered.type_name().to_owned());
                cx.error(
                    Diagnostic::error(&p, item.span, format!("`{text}` is not a status"))
                        .expected("a status from 100 to 599, or a class `1xx` to `5xx`")
                        .found(item.describe()),
                );
                ok = false;
            }
        }
    }
    ok.then_some(set)
}

/// A header name, lower-cased.
fn header_name(cx: &mut Cx<'_>, node: &Node, path: &Path) -> Option<String> {
    let name = cx.string(node, path, "`header`")?;
    let token = !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
    if !token {
        cx.error(
            Diagnostic::error(path, node.span, format!("`{name}` is not a header name"))
                .expected("an HTTP token: letters, digits and `-`, such as `Content-Type`")
                .found(node.describe()),
        );
        return None;
    }
    Some(name.to_ascii_lowercase())
}

pub(super) fn heads_problem(cx: &mut Cx<'_>, path: &Path, span: Option<Span>, heads: Heads, what: &str) {
    match heads {
        Heads::Http1 => {}
        Heads::Http2 => cx.error(
            Diagnostic::error(path, span, format!("{what} reads HTTP/1.1 response heads only, and the target speaks HTTP/2"))
                .expected("`status` and body checks over HTTP/2")
                .help("over HTTP/2 only the status and the body are read; check them, or set `target.protocol: http1`"),
        ),
        Heads::MaybeHttp2 => cx.error(
            Diagnostic::warning(path, span, format!("{what} reads HTTP/1.1 response heads only; `protocol: auto` may speak HTTP/2"))
                .help("if the server picks HTTP/2, the check fails with \"headers are not read over HTTP/2\"; set `target.protocol: http1` to be sure"),
        ),
    }
}

fn non_empty_text(cx: &mut Cx<'_>, node: &Node, path: &Path, what: &str) -> Option<String> {
    let text = cx.string(node, path, what)?;
    if text.is_empty() {
        cx.error(Diagnostic::error(path, node.span, format!("{what} is empty")).expected("some text"));
        return None;
    }
    Some(text)
}

/// Expected text: literal text, variables, and values captured by earlier steps; no generators.
fn read_expected(cx: &mut Cx<'_>, node: &Node, path: &Path, what: &str) -> Option<Expected> {
    let saved = (cx.dynamic, cx.vars_only);
    cx.dynamic = false;
    cx.vars_only = true;
    let text = cx.string(node, path, what);
    (cx.dynamic, cx.vars_only) = saved;
    Some(expected_of(&text?))
}

fn expected_of(text: &str) -> Expected {
    use crate::generate::Part;
    let parts = crate::generate::parse_marks(text).unwrap_or_else(|| vec![Part::Text(text.to_owned())]);
    Expected(
        parts
            .into_iter()
            .filter_map(|p| match p {
                Part::Text(t) => Some(Segment::Text(t)),
                Part::Var(slot) => Some(Segment::Var { slot, encode: false }),
                // Refused while rendering.
                Part::Gen(_) | Part::Later(_) => None,
            })
            .collect(),
    )
}

/// A regex: at most 1 KiB of source, compiled within 1 MiB, so that no spec can make validation (or a run)
/// spend unbounded time or memory on it.
pub(super) fn read_regex(cx: &mut Cx<'_>, node: &Node, path: &Path, what: &str) -> Option<Pattern> {
    let source = cx.string(node, path, what)?;
    match check_regex(&source) {
        Ok(()) => Some(Pattern(source)),
        Err((message, help)) => {
            cx.error(Diagnostic::error(path, node.span, message).found(node.describe()).help_opt(help));
            None
        }
    }
}

/// Whether a regex compiles within the limits; else the message and a fix.
pub(crate) fn check_regex(source: &str) -> Result<(), (String, Option<String>)> {
    if source.len() > MAX_REGEX_LEN {
        return Err((
            format!("the regex is {} bytes long, longer than the {MAX_REGEX_LEN} a regex may be", source.len()),
            Some("match less: a check needs only what tells a right response from a wrong one".into()),
        ));
    }
    let hir = regex_syntax::ParserBuilder::new().nest_limit(64).build().parse(source).map_err(|e| {
        let (kind, offset) = match &e {
            regex_syntax::Error::Parse(e) => (e.kind().to_string(), e.span().start.offset),
            regex_syntax::Error::Translate(e) => (e.kind().to_string(), e.span().start.offset),
            other => (other.to_string(), 0),
        };
        let at = source.get(..offset).map_or(1, |s| s.chars().count() + 1);
        (
            format!("the regex does not compile: `{kind}` at character {at}"),
            Some("regexes use Rust's `regex` syntax (no look-around, no backreferences)".into()),
        )
    })?;
    let config = regex_automata::meta::Config::new()
        .nfa_size_limit(Some(MAX_REGEX_COMPILED))
        .onepass_size_limit(Some(MAX_REGEX_COMPILED))
        .dfa_size_limit(Some(MAX_REGEX_COMPILED))
        .hybrid_cache_capacity(MAX_REGEX_COMPILED);
    regex_automata::meta::Regex::builder().configure(config).build_from_hir(&hir).map_err(|e| {
        if e.size_limit().is_some() {
            (
                "the regex compiles to more than the 1 MiB a regex may take".to_owned(),
                Some(
                    "make it smaller: fewer counted repetitions (`{1000}`) and narrower classes (`\\w` is all of \
                     Unicode's letters; `[A-Za-z0-9_]` is small)"
                        .into(),
                ),
            )
        } else {
            (format!("the regex does not compile: {e}"), None)
        }
    })?;
    Ok(())
}

/// `body_size: 13B`, or `{ min: 1B, max: 64KiB }`.
fn read_body_size(cx: &mut Cx<'_>, node: &Node, path: &Path) -> Option<CheckKind> {
    if let NodeKind::Map(_) = node.kind {
        let f = cx.map(node, path, BODY_SIZE_KEYS, "`body_size`")?;
        let min = match f.get("min") {
            Some((n, p)) => Some(cx.unit::<ByteSize>(n, &p, "`min`")?.0),
            None => None,
        };
        let max = match f.get("max") {
            Some((n, p)) => Some(cx.unit::<ByteSize>(n, &p, "`max`")?.0),
            None => None,
        };
        if !f.unknown.is_empty() {
            return None;
        }
        if min.is_none() && max.is_none() {
            cx.error(
                Diagnostic::error(path, node.span, "`body_size` gives neither `min` nor `max`")
                    .expected("`{ min: 1B }`, `{ max: 64KiB }` or both"),
            );
            return None;
        }
        if let (Some(lo), Some(hi)) = (min, max) {
            if lo > hi {
                cx.error(
                    Diagnostic::error(path, node.span, "`body_size.min` is above `max`")
                        .expected("`min` at most `max`")
                        .found(format!("min {lo} bytes, max {hi} bytes")),
                );
                return None;
            }
        }
        return Some(CheckKind::BodySize { min, max });
    }
    let size = cx.unit::<ByteSize>(node, path, "`body_size`")?.0;
    Some(CheckKind::BodySize { min: Some(size), max: Some(size) })
}

fn read_selector(cx: &mut Cx<'_>, node: &Node, path: &Path) -> Option<JsonSelector> {
    let text = cx.string(node, path, "`json`")?;
    match JsonSelector::parse(&text) {
        Ok(s) => Some(s),
        Err(e) => {
            cx.error(
                Diagnostic::error(path, node.span, e.message)
                    .expected("a selector such as `$.a.b`, `$.items[0].id`, `$['a key']` or `$.items[*].id`")
                    .found(node.describe())
                    .help_opt(e.help),
            );
            None
        }
    }
}

/// `exists` with other operators: `exists: false` contradicts them, `exists: true` adds nothing.
fn exists_conflict(cx: &mut Cx<'_>, f: &Fields<'_>, exists: Option<bool>, others: &[&str]) -> bool {
    if exists == Some(false) {
        if let Some(other) = others.iter().find(|o| f.has(o)) {
            cx.error(
                Diagnostic::error(
                    &f.path.key("exists"),
                    f.key_span("exists"),
                    format!("`exists: false` contradicts `{other}`"),
                )
                .width("exists".len())
                .expected("`exists: false` alone")
                .help(format!("a missing value has nothing to compare: drop `{other}`, or make it two checks")),
            );
            return true;
        }
    }
    false
}

fn read_text_ops(cx: &mut Cx<'_>, f: &Fields<'_>) -> Option<Vec<TextOp>> {
    let mut ops = Vec::new();
    let mut ok = true;
    let exists = match f.get("exists") {
        Some((n, p)) => cx.boolean(n, &p, "`exists`").or_else(|| {
            ok = false;
            None
        }),
        None => None,
    };
    if exists_conflict(cx, f, exists, &["equals", "contains", "matches"]) {
        return None;
    }
    ops.push(TextOp::Exists(exists.unwrap_or(true)));
    if let Some((n, p)) = f.get("equals") {
        match read_expected(cx, n, &p, "`equals`") {
            Some(e) => ops.push(TextOp::Equals(e)),
            None => ok = false,
        }
    }
    if let Some((n, p)) = f.get("contains") {
        match non_empty_text(cx, n, &p, "`contains`") {
            Some(t) => ops.push(TextOp::Contains(t)),
            None => ok = false,
        }
    }
    if let Some((n, p)) = f.get("matches") {
        match read_regex(cx, n, &p, "`matches`") {
            Some(r) => ops.push(TextOp::Matches(r)),
            None => ok = false,
        }
    }
    ok.then_some(ops)
}

fn read_json_ops(cx: &mut Cx<'_>, f: &Fields<'_>) -> Option<Vec<JsonOp>> {
    let mut ops = Vec::new();
    let mut ok = true;
    let exists = match f.get("exists") {
        Some((n, p)) => cx.boolean(n, &p, "`exists`").or_else(|| {
            ok = false;
            None
        }),
        None => None,
    };
    if exists_conflict(cx, f, exists, &JSON_OPS[1..]) {
        return None;
    }
    ops.push(JsonOp::Exists(exists.unwrap_or(true)));
    if let Some((n, p)) = f.get("equals") {
        match read_json_expected(cx, n, &p) {
            Some(e) => ops.push(JsonOp::Equals(e)),
            None => ok = false,
        }
    }
    if let Some((n, p)) = f.get("contains") {
        match non_empty_text(cx, n, &p, "`contains`") {
            Some(t) => ops.push(JsonOp::Contains(t)),
            None => ok = false,
        }
    }
    if let Some((n, p)) = f.get("matches") {
        match read_regex(cx, n, &p, "`matches`") {
            Some(r) => ops.push(JsonOp::Matches(r)),
            None => ok = false,
        }
    }
    for (key, cmp) in [("gt", Comparison::Gt), ("ge", Comparison::Ge), ("lt", Comparison::Lt), ("le", Comparison::Le)] {
        if let Some((n, p)) = f.get(key) {
            match number(cx, n, &p, key) {
                Some(value) => ops.push(JsonOp::Compare { cmp, value }),
                None => ok = false,
            }
        }
    }
    if let Some((n, p)) = f.get("type") {
        match cx.string(n, &p, "`type`") {
            Some(t) => match JsonType::parse(&t) {
                Some(t) => ops.push(JsonOp::Type(t)),
                None => {
                    cx.error(enum_error(&p, n, "`type`", &t, &JsonType::NAMES));
                    ok = false;
                }
            },
            None => ok = false,
        }
    }
    ok.then_some(ops)
}

fn number(cx: &mut Cx<'_>, node: &Node, path: &Path, key: &str) -> Option<f64> {
    let rendered = cx.render(node, path)?;
    let value = match rendered.kind {
        NodeKind::Int(i) => Some(i as f64),
        NodeKind::Float(x) if x.is_finite() => Some(x),
        _ => None,
    };
    if value.is_none() {
        cx.error(
            Diagnostic::error(path, node.span, format!("`{key}` compares numbers"))
                .expected("a number such as `1` or `0.5`")
                .found(node.describe())
                .help("text is compared with `equals`, `contains` or `matches`"),
        );
    }
    value
}

/// A JSON `equals`, typed by the YAML scalar: `1` is a number, `"1"` a string, `true` a boolean, `null` null.
fn read_json_expected(cx: &mut Cx<'_>, node: &Node, path: &Path) -> Option<JsonExpected> {
    let saved = (cx.dynamic, cx.vars_only);
    cx.dynamic = false;
    cx.vars_only = true;
    let rendered = cx.render(node, path);
    (cx.dynamic, cx.vars_only) = saved;
    let rendered = rendered?;
    match &rendered.kind {
        NodeKind::Int(i) => Some(JsonExpected::Number(*i as f64)),
        NodeKind::Float(x) if x.is_finite() => Some(JsonExpected::Number(*x)),
        NodeKind::Bool(b) => Some(JsonExpected::Bool(*b)),
        NodeKind::Null => Some(JsonExpected::Null),
        NodeKind::Str(s) => Some(JsonExpected::Text(expected_of(s))),
        NodeKind::Float(_) => {
            cx.error(
                Diagnostic::error(path, node.span, "`equals` is not a number JSON can hold")
                    .expected("a finite number, text, `true`, `false` or `null`")
                    .found(node.describe()),
            );
            None
        }
        NodeKind::Seq(_) | NodeKind::Map(_) => {
            cx.error(
                Diagnostic::error(path, node.span, "`equals` on `json` compares one value")
                    .expected("a string, number, boolean or null")
                    .found(node.type_name())
                    .help("check the members one by one: `{ json: $.a[0], equals: 1 }`"),
            );
            None
        }
    }
}

/// `capture:` on a session step: variable names to sources. `slots` gives each name its slot (assigned over the
/// whole session before its steps are read).
pub(super) fn read_captures(
    cx: &mut Cx<'_>,
    node: &Node,
    path: &Path,
    info: &RequestInfo<'_>,
    slots: &[(String, u16)],
) -> Option<Vec<Capture>> {
    const EXAMPLE: &str = "`capture: { token: { json: $.token } }`";
    let NodeKind::Map(entries) = &node.kind else {
        cx.error(
            Diagnostic::error(path, node.span, "`capture` must be a mapping of variable names to sources")
                .expected(format!("a mapping such as {EXAMPLE}"))
                .found(node.type_name()),
        );
        return None;
    };
    let mut out = Vec::new();
    let mut ok = true;
    for (k, v) in entries {
        let p = path.key(&k.name);
        // Names were checked, and given slots, when the session's captures were gathered.
        let Some(slot) = slots.iter().find(|(n, _)| *n == k.name).map(|(_, s)| *s) else {
            ok = false;
            continue;
        };
        match read_capture(cx, v, &p, k.span, info) {
            Some((source, default, max_len)) => {
                out.push(Capture { name: k.name.clone(), slot, source, default, max_len })
            }
            None => ok = false,
        }
    }
    ok.then_some(out)
}

type CaptureParts = (CaptureSource, Option<String>, u32);

fn read_capture(
    cx: &mut Cx<'_>,
    node: &Node,
    path: &Path,
    key_span: Option<Span>,
    info: &RequestInfo<'_>,
) -> Option<CaptureParts> {
    const SOURCES: &[&str] = &["json", "header", "regex", "cookie"];
    if !matches!(node.kind, NodeKind::Map(_)) {
        cx.error(
            Diagnostic::error(path, node.span, "a capture must be a mapping")
                .expected(
                    "`{ json: $.token }`, `{ header: Location }`, `{ regex: 'id=(\\d+)' }` or `{ cookie: session }`",
                )
                .found(node.describe()),
        );
        return None;
    }
    let f = cx.map(node, path, CAPTURE_KEYS, "a capture")?;
    if !f.unknown.is_empty() {
        return None;
    }
    let given: Vec<&str> = SOURCES.iter().copied().filter(|s| f.has(s)).collect();
    let combination = match given.as_slice() {
        ["json"] | ["header"] | ["regex"] | ["cookie"] | ["header", "regex"] => true,
        [] => {
            cx.error(
                Diagnostic::error(path, key_span.or(node.span), "a capture names where its value comes from")
                    .expected(format!("one of {}", list(SOURCES)))
                    .help("for example `{ json: $.token }`, or `{ header: Location, regex: '/(\\d+)$' }`"),
            );
            return None;
        }
        _ => false,
    };
    if !combination {
        let second = given[1];
        cx.error(
            Diagnostic::error(
                &path.key(second),
                f.key_span(second),
                format!("a capture reads one thing: found `{}` and `{second}`", given[0]),
            )
            .width(second.chars().count())
            .expected("`json`, `header` (narrowed by an optional `regex`), `regex` (over the body) or `cookie`")
            .help("capture each into a variable of its own"),
        );
        return None;
    }
    let mut ok = true;
    let source = if let Some((n, p)) = f.get("json") {
        read_selector(cx, n, &p).map(|selector| CaptureSource::Json { selector })
    } else if let Some((n, p)) = f.get("header") {
        let name = header_name(cx, n, &p);
        let regex = match f.get("regex") {
            Some((rn, rp)) => read_regex(cx, rn, &rp, "`regex`").map(Some),
            None => Some(None),
        };
        if info.heads != Heads::Http1 {
            heads_problem(cx, &p, f.key_span("header"), info.heads, "a header capture");
        }
        match (name, regex) {
            (Some(name), Some(regex)) => Some(CaptureSource::Header { name, regex }),
            _ => None,
        }
    } else if let Some((n, p)) = f.get("cookie") {
        let name = cx.string(n, &p, "`cookie`");
        if info.heads != Heads::Http1 {
            heads_problem(cx, &p, f.key_span("cookie"), info.heads, "a cookie capture");
        }
        name.map(|name| CaptureSource::Cookie { name })
    } else {
        let (n, p) = f.get("regex")?;
        read_regex(cx, n, &p, "`regex`").map(|pattern| CaptureSource::Regex { pattern })
    };
    let max_len = match f.get("max_length") {
        Some((n, p)) => match cx.unit::<ByteSize>(n, &p, "`max_length`") {
            Some(ByteSize(len)) if (1..=u64::from(MAX_CAPTURE_LEN)).contains(&len) => len as u32,
            Some(_) => {
                cx.error(
                    Diagnostic::error(&p, n.span, "`max_length` is out of range")
                        .expected("from 1B to 64KiB")
                        .found(n.describe()),
                );
                ok = false;
                DEFAULT_CAPTURE_LEN
            }
            None => {
                ok = false;
                DEFAULT_CAPTURE_LEN
            }
        },
        None => DEFAULT_CAPTURE_LEN,
    };
    let default = match f.get("default") {
        Some((n, p)) => match cx.string(n, &p, "`default`") {
            Some(d) if d.len() > max_len as usize => {
                cx.error(
                    Diagnostic::error(&p, n.span, "`default` is longer than the capture's `max_length`")
                        .expected(format!("at most {max_len} bytes"))
                        .found(format!("{} bytes", d.len())),
                );
                ok = false;
                None
            }
            Some(d) if d.contains(['\r', '\n']) => {
                cx.error(
                    Diagnostic::error(&p, n.span, "`default` cannot contain a line break")
                        .found(n.describe())
                        .help("a captured value may go into a header, where a line break would end it"),
                );
                ok = false;
                None
            }
            Some(d) => Some(d),
            None => {
                ok = false;
                None
            }
        },
        None => None,
    };
    let source = source?;
    if info.method == "HEAD" && source.reads_body() {
        let key = if f.has("json") { "json" } else { "regex" };
        cx.error(
            Diagnostic::error(
                &path.key(key),
                f.key_span(key),
                format!("`method: HEAD` has no body: a `{key}` capture finds nothing"),
            )
            .width(key.len())
            .expected("a `header` or `cookie` capture on a `HEAD` request")
            .help("capture from the body of a `GET`"),
        );
        return None;
    }
    ok.then_some((source, default, max_len))
}

#[cfg(test)]
mod tests {
    use super::check_regex;

    #[test]
    fn regexes_are_bounded() {
        assert!(check_regex(r"^application/json(; ?charset=(UTF|utf)-8)?$").is_ok());
        let (m, _) = check_regex("(abc").unwrap_err();
        assert_eq!(m, "the regex does not compile: `unclosed group` at character 1");
        let (m, _) = check_regex("ab[").unwrap_err();
        assert!(m.contains("at character 3"), "{m}");
        let (m, _) = check_regex(&"a".repeat(1025)).unwrap_err();
        assert!(m.contains("1025 bytes"), "{m}");
        let (m, _) = check_regex(r"\w{1000}\w{1000}").unwrap_err();
        assert!(m.contains("more than the 1 MiB"), "{m}");
    }
}
