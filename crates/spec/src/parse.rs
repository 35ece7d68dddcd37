//! From a located node tree to a validated [`Spec`]: variables resolved, templates rendered, units parsed,
//! matrix cells expanded, every problem reported at once.

use std::collections::{BTreeMap, BTreeSet};

use minijinja::Value;

use crate::diag::{Diagnostic, Diagnostics};
use crate::model::*;
use crate::node::{Node, NodeKind, Path, Span};
use crate::read::{list, Cx, Fields};
use crate::suggest::did_you_mean;
use crate::template::Templates;
use crate::units::{ByteSize, CpuList, Duration, Rate};
use crate::{AbortOnFail, BuiltinKind, OnMismatch, PipelineMode, SaturationPolicy, Slo};

pub(crate) const TOP_KEYS: &[&str] =
    &["version", "name", "description", "seed", "vars", "hardware", "target", "defaults", "scenarios"];
pub(crate) const HARDWARE_KEYS: &[&str] = &["generator", "target", "on_mismatch", "saturation"];
pub(crate) const GENERATOR_KEYS: &[&str] = &["cpus", "threads"];
pub(crate) const TARGET_CPU_KEYS: &[&str] = &["cpus"];
pub(crate) const TARGET_KEYS: &[&str] = &["base_url", "start", "builtin"];
pub(crate) const START_KEYS: &[&str] = &["command", "env", "cwd", "ready", "stop_grace"];
pub(crate) const READY_KEYS: &[&str] = &["http_get", "tcp", "status", "timeout", "interval"];
pub(crate) const BUILTIN_KEYS: &[&str] = &["kind", "delay", "status", "body_size", "chunked"];
pub(crate) const DEFAULTS_KEYS: &[&str] = &["headers", "timeout"];
pub(crate) const SCENARIO_KEYS: &[&str] = &[
    "description",
    "gate",
    "cooldown",
    "request",
    "requests",
    "session",
    "timeout",
    "matrix",
    "matrix_mode",
    "load",
    "slo",
];
pub(crate) const REQUEST_KEYS: &[&str] = &["method", "path", "query", "headers", "body"];
pub(crate) const MIX_REQUEST_KEYS: &[&str] = &["weight", "method", "path", "query", "headers", "body"];
pub(crate) const SESSION_STEP_KEYS: &[&str] = &["name", "think", "method", "path", "query", "headers", "body"];
pub(crate) const LOAD_KEYS: &[&str] = &["closed", "open", "ramp", "users"];
pub(crate) const CLOSED_KEYS: &[&str] =
    &["connections", "duration", "requests", "pipeline", "pipeline_mode", "keep_alive"];
pub(crate) const OPEN_KEYS: &[&str] = &["rate", "duration", "connections"];
pub(crate) const RAMP_KEYS: &[&str] = &["connections", "start_rate", "stages"];
pub(crate) const STAGE_KEYS: &[&str] = &["to", "over"];
pub(crate) const USERS_KEYS: &[&str] = &["steps", "max_connections"];
pub(crate) const USER_STEP_KEYS: &[&str] =
    &["at_once", "ramp", "over", "per_second", "ramp_per_second", "to", "during", "pause"];
pub(crate) const SLO_KEYS: &[&str] = &["expr", "abort_on_fail"];
pub(crate) const ABORT_KEYS: &[&str] = &["delay"];

/// The default per-request timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration(std::time::Duration::from_secs(10));
/// The default cap on users active at once.
pub const DEFAULT_MAX_USER_CONNECTIONS: u64 = 10_000;
const HTTP_METHODS: &[&str] = &["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "CONNECT"];

/// What the command line and the environment add to a spec.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// `--set name=value`, in order; later ones win.
    pub sets: Vec<(String, String)>,
    /// The process environment (for `{{ env.X }}` and `LOADGATE_VAR_<NAME>`).
    pub env: BTreeMap<String, String>,
    /// Where data files named by `pick_line` and `pick_csv` are found (the spec's directory).
    pub base_dir: Option<std::path::PathBuf>,
}

impl LoadOptions {
    pub fn from_process_env(sets: Vec<(String, String)>) -> Self {
        LoadOptions { sets, env: std::env::vars().collect(), base_dir: None }
    }
}

pub(crate) fn read_spec(root: &Node, opts: &LoadOptions, diags: &mut Diagnostics) -> Option<Spec> {
    let path = Path::root();
    if matches!(root.kind, NodeKind::Null) {
        diags.push(
            Diagnostic::error(&path, Some(Span { line: 1, col: 1 }), "the spec is empty")
                .expected("a mapping with `version`, `name`, `target` and `scenarios`")
                .help("start from `loadgate run --url http://127.0.0.1:8080/ -c 64 -d 10s --print-spec`, or see specs/quickstart.yaml"),
        );
        return None;
    }
    // Variables come first: everything else may be templated with them.
    let (vars, var_values) = read_vars(root, opts, diags);
    let templates = Templates::new(var_values, opts.env.clone(), opts.base_dir.clone());
    let mut cx = Cx { diags, templates: &templates, bindings: &[], dynamic: false };
    let top = cx.map(root, &path, TOP_KEYS, "the spec")?;

    if let Some((node, p)) = cx.required(&top, "version", "the spec") {
        {
            if let Some(v) = cx.uint(node, &p, "`version`", 0) {
                if v != SPEC_VERSION {
                    cx.error(
                        Diagnostic::error(&p, node.span, format!("spec version {v} is not supported"))
                            .expected(format!("`version: {SPEC_VERSION}`"))
                            .found(node.describe())
                            .help(format!("this loadgate reads version {SPEC_VERSION}")),
                    );
                }
            }
        }
    }
    let name = cx.required(&top, "name", "the spec").and_then(|(n, p)| {
        let s = cx.string(n, &p, "`name`")?;
        let ok = !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !ok {
            let fixed: String = s
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') { c } else { '-' })
                .collect();
            cx.error(
                Diagnostic::error(&p, n.span, "`name` must be a file-name-safe identifier")
                    .expected("letters, digits, `-`, `_` and `.` (it names the output directory)")
                    .found(n.describe())
                    .help(format!("write `name: {}`", if fixed.is_empty() { "my-benchmark" } else { &fixed })),
            );
            return None;
        }
        Some(s)
    });
    let description = top.get("description").and_then(|(n, p)| cx.string(n, &p, "`description`"));
    let seed = top.get("seed").and_then(|(n, p)| cx.uint(n, &p, "`seed`", 0));
    let hardware = match top.get("hardware") {
        Some((n, p)) => read_hardware(&mut cx, n, &p),
        None => Some(Hardware::default()),
    };
    let target = match cx.required(&top, "target", "the spec") {
        Some((n, p)) => read_target(&mut cx, n, &p),
        None => None,
    };
    let defaults = match top.get("defaults") {
        Some((n, p)) => read_defaults(&mut cx, n, &p),
        None => Some(Defaults::default()),
    };
    let mut scenarios = Vec::new();
    if let Some((node, p)) = cx.required(&top, "scenarios", "the spec") {
        match &node.kind {
            NodeKind::Map(entries) if entries.is_empty() => cx.error(
                Diagnostic::error(&p, node.span, "`scenarios` is empty").expected("at least one scenario").help(
                    "add a scenario: `scenarios: { main: { request: { path: / }, load: { closed: { connections: 64, duration: 10s } } } }`",
                ),
            ),
            NodeKind::Map(entries) => {
                let defaults = defaults.clone().unwrap_or_default();
                let prefix = match &target {
                    Some(Target::Url { base_url } | Target::Command { base_url, .. }) => base_url.prefix.clone(),
                    _ => String::new(),
                };
                for (key, body) in entries {
                    let sp = p.key(&key.name);
                    if !valid_scenario_name(&key.name) {
                        cx.error(
                            Diagnostic::error(&sp, key.span, format!("scenario name `{}` is not a simple identifier", key.name))
                                .width(key.name.chars().count())
                                .expected("letters, digits, `-` and `_`"),
                        );
                    }
                    if let Some(s) = read_scenario(&mut cx, &key.name, body, &sp, &defaults, &prefix) {
                        scenarios.push(s);
                    }
                }
            }
            _ => cx.error(
                Diagnostic::error(&p, node.span, "`scenarios` must be a mapping of scenario names to scenarios")
                    .expected("a mapping such as `scenarios: { main: { ... } }`")
                    .found(node.type_name()),
            ),
        }
    }
    // Checks across sections.
    if let Some(hw) = &hardware {
        if let (Some(g), Some(t)) = (&hw.generator_cpus, &hw.target_cpus) {
            let shared = g.intersection(t);
            if !shared.is_empty() {
                let (n, p) = top.get("hardware").map(|(n, p)| (n.span, p)).unwrap_or((None, Path::root()));
                cx.error(Diagnostic::warning(&p, n, format!("the generator and the target share CPUs {shared}")).help(
                    "they will compete for those CPUs and the numbers will mix both; give each side its own CPUs",
                ));
            }
        }
    }
    let (name, hardware, target) = (name?, hardware?, target?);
    if cx.diags.has_errors() {
        return None;
    }
    Some(Spec { name, description, seed, vars, hardware, target, scenarios, warnings: Vec::new() })
}

fn valid_scenario_name(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
}

fn valid_var_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn to_value(kind: &NodeKind) -> Value {
    match kind {
        NodeKind::Bool(b) => Value::from(*b),
        NodeKind::Int(i) => Value::from(*i),
        NodeKind::Float(f) => Value::from(*f),
        NodeKind::Str(s) => Value::from(s.clone()),
        _ => Value::from(()),
    }
}

/// Resolves `vars`: the spec's defaults, then `LOADGATE_VAR_<NAME>`, then `--set` (the last wins).
fn read_vars(
    root: &Node,
    opts: &LoadOptions,
    diags: &mut Diagnostics,
) -> (BTreeMap<String, Var>, BTreeMap<String, Value>) {
    let mut vars = BTreeMap::new();
    let mut values = BTreeMap::new();
    let NodeKind::Map(top) = &root.kind else { return (vars, values) };
    let vars_entry = top.iter().find(|(k, _)| k.name == "vars");
    let env_only = Templates::new(BTreeMap::new(), opts.env.clone(), None);
    let mut cx = Cx { diags, templates: &env_only, bindings: &[], dynamic: false };
    let mut declared: Vec<(String, Option<Span>)> = Vec::new();
    if let Some((key, node)) = vars_entry {
        let path = Path::root().key("vars");
        match &node.kind {
            NodeKind::Map(entries) => {
                for (k, v) in entries {
                    let p = path.key(&k.name);
                    if !valid_var_name(&k.name) {
                        cx.error(
                            Diagnostic::error(&p, k.span, format!("variable name `{}` is not an identifier", k.name))
                                .width(k.name.chars().count())
                                .expected("letters, digits and `_`, starting with a letter or `_`")
                                .help(format!(
                                    "templates could not name it; try `{}`",
                                    k.name.replace(|c: char| !c.is_ascii_alphanumeric(), "_")
                                )),
                        );
                        continue;
                    }
                    if k.name == "env" {
                        cx.error(
                            Diagnostic::error(&p, k.span, "`env` is reserved")
                                .width(3)
                                .help("`{{ env.NAME }}` reads the environment; pick another name"),
                        );
                        continue;
                    }
                    let Some(rendered) = cx.render(v, &p) else { continue };
                    if matches!(rendered.kind, NodeKind::Seq(_) | NodeKind::Map(_) | NodeKind::Null) {
                        cx.error(
                            Diagnostic::error(&p, v.span, format!("variable `{}` must have a single value", k.name))
                                .expected("a string, number or boolean")
                                .found(rendered.type_name())
                                .help("to sweep over several values, use a scenario's `matrix`"),
                        );
                        continue;
                    }
                    declared.push((k.name.clone(), k.span));
                    vars.insert(
                        k.name.clone(),
                        Var { value: rendered.scalar_text().unwrap_or_default(), source: VarSource::Default },
                    );
                    values.insert(k.name.clone(), to_value(&rendered.kind));
                }
            }
            NodeKind::Null => {}
            _ => cx.error(
                Diagnostic::error(&path, node.span.or(key.span), "`vars` must be a mapping of names to default values")
                    .expected("a mapping such as `vars: { base_url: http://127.0.0.1:8080 }`")
                    .found(node.type_name()),
            ),
        }
    }
    for (name, var) in vars.iter_mut() {
        let env_name = format!("LOADGATE_VAR_{name}");
        let upper = format!("LOADGATE_VAR_{}", name.to_ascii_uppercase());
        if let Some(v) = opts.env.get(&env_name).or_else(|| opts.env.get(&upper)) {
            *var = Var { value: v.clone(), source: VarSource::Environment };
            values.insert(name.clone(), to_value(&crate::loader::parse_scalar(v)));
        }
    }
    let vars_span = vars_entry.and_then(|(k, _)| k.span);
    for (name, value) in &opts.sets {
        let p = Path::root().key("vars").key(name);
        if let Some(var) = vars.get_mut(name) {
            *var = Var { value: value.clone(), source: VarSource::CommandLine };
            values.insert(name.clone(), to_value(&crate::loader::parse_scalar(value)));
        } else {
            let names: Vec<&str> = declared.iter().map(|(n, _)| n.as_str()).collect();
            let help = match did_you_mean(name, names.iter().copied()) {
                Some(s) => format!("did you mean `--set {s}={value}`?"),
                None if names.is_empty() => "the spec declares no variables; add them under `vars:`".to_owned(),
                None => format!("the spec declares: {}", names.join(", ")),
            };
            cx.error(
                Diagnostic::error(
                    &p,
                    vars_span.or(Some(Span { line: 1, col: 1 })),
                    format!("`--set {name}={value}` names no variable of this spec"),
                )
                .expected(format!(
                    "one of the variables under `vars:` ({})",
                    if names.is_empty() { "none".to_owned() } else { names.join(", ") }
                ))
                .help(help),
            );
        }
    }
    (vars, values)
}

fn read_hardware(cx: &mut Cx<'_>, node: &Node, path: &Path) -> Option<Hardware> {
    let f = cx.map(node, path, HARDWARE_KEYS, "`hardware`")?;
    let mut hw = Hardware::default();
    let mut ok = true;
    if let Some((n, p)) = f.get("generator") {
        if let Some(g) = cx.map(n, &p, GENERATOR_KEYS, "`hardware.generator`") {
            if let Some((n, p)) = g.get("cpus") {
                hw.generator_cpus = cx.unit::<CpuList>(n, &p, "`cpus`");
                ok &= hw.generator_cpus.is_some();
            }
            if let Some((n, p)) = g.get("threads") {
                let t = cx.uint(n, &p, "`threads`", 1);
                ok &= t.is_some();
                if let Some(t) = t {
                    if t > 4096 {
                        cx.error(
                            Diagnostic::error(&p, n.span, "`threads` is too large")
                                .expected("at most 4096 worker threads")
                                .found(n.describe()),
                        );
                        ok = false;
                    }
                    hw.threads = u32::try_from(t).ok();
                }
            }
        } else {
            ok = false;
        }
    }
    if let Some((n, p)) = f.get("target") {
        if let Some(t) = cx.map(n, &p, TARGET_CPU_KEYS, "`hardware.target`") {
            if let Some((n, p)) = t.get("cpus") {
                hw.target_cpus = cx.unit::<CpuList>(n, &p, "`cpus`");
                ok &= hw.target_cpus.is_some();
            }
        } else {
            ok = false;
        }
    }
    if let Some((n, p)) = f.get("saturation") {
        match cx.string(n, &p, "`saturation`").as_deref() {
            Some("auto") => hw.saturation = SaturationPolicy::Auto,
            Some("invalid") => hw.saturation = SaturationPolicy::Invalid,
            Some("warn") => hw.saturation = SaturationPolicy::Warn,
            Some(other) => {
                cx.error(enum_error(&p, n, "`saturation`", other, &["auto", "invalid", "warn"]));
                ok = false;
            }
            None => ok = false,
        }
    }
    if let Some((n, p)) = f.get("on_mismatch") {
        match cx.string(n, &p, "`on_mismatch`").as_deref() {
            Some("fail") => hw.on_mismatch = OnMismatch::Fail,
            Some("warn") => hw.on_mismatch = OnMismatch::Warn,
            Some("skip") => hw.on_mismatch = OnMismatch::Skip,
            Some(other) => {
                cx.error(enum_error(&p, n, "`on_mismatch`", other, &["fail", "warn", "skip"]));
                ok = false;
            }
            None => ok = false,
        }
    }
    ok.then_some(hw)
}

fn enum_error(path: &Path, node: &Node, what: &str, found: &str, options: &[&str]) -> Diagnostic {
    let d = Diagnostic::error(path, node.span, format!("{what} has no option `{found}`"))
        .expected(format!("one of {}", list(options)))
        .found(node.describe());
    match did_you_mean(found, options.iter().copied()) {
        Some(s) => d.help(format!("did you mean `{s}`?")),
        None => d,
    }
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
    } else if text.contains("://") {
        return fail(cx, "`base_url` must use http://", None);
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

fn read_target(cx: &mut Cx<'_>, node: &Node, path: &Path) -> Option<Target> {
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

fn read_string_map(cx: &mut Cx<'_>, node: &Node, path: &Path, what: &str, out: &mut BTreeMap<String, String>) -> bool {
    let NodeKind::Map(entries) = &node.kind else {
        cx.error(
            Diagnostic::error(path, node.span, format!("{what} must be a mapping"))
                .expected("a mapping of names to values")
                .found(node.type_name()),
        );
        return false;
    };
    let mut ok = true;
    for (k, v) in entries {
        match cx.string(v, &path.key(&k.name), "a value") {
            Some(s) => {
                out.insert(k.name.clone(), s);
            }
            None => ok = false,
        }
    }
    ok
}

#[derive(Debug, Clone, Default)]
struct Defaults {
    headers: Vec<(String, String)>,
    timeout: Option<Duration>,
}

fn read_headers(cx: &mut Cx<'_>, node: &Node, path: &Path) -> Option<Vec<(String, String)>> {
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

fn read_defaults(cx: &mut Cx<'_>, node: &Node, path: &Path) -> Option<Defaults> {
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
    ok.then_some(d)
}

fn read_timeout(cx: &mut Cx<'_>, n: &Node, p: &Path) -> Option<Duration> {
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

/// Every string in a subtree, for finding which variables its templates use.
fn collect_strings<'n>(node: &'n Node, out: &mut Vec<&'n str>) {
    match &node.kind {
        NodeKind::Str(s) => out.push(s),
        NodeKind::Seq(items) => items.iter().for_each(|i| collect_strings(i, out)),
        NodeKind::Map(entries) => entries.iter().for_each(|(_, v)| collect_strings(v, out)),
        _ => {}
    }
}

fn read_scenario(
    cx: &mut Cx<'_>,
    name: &str,
    node: &Node,
    path: &Path,
    defaults: &Defaults,
    prefix: &str,
) -> Option<Scenario> {
    let f = cx.map(node, path, SCENARIO_KEYS, &format!("scenario `{name}`"))?;
    let description = f.get("description").and_then(|(n, p)| cx.string(n, &p, "`description`"));
    let gate = match f.get("gate") {
        Some((n, p)) => cx.boolean(n, &p, "`gate`"),
        None => Some(true),
    };
    let cooldown = match f.get("cooldown") {
        Some((n, p)) => cx.unit::<Duration>(n, &p, "`cooldown`"),
        None => Some(Duration::ZERO),
    };

    // The matrix: variables and their values, in declaration order.
    let mut matrix: Vec<(String, Vec<(String, Value)>)> = Vec::new();
    let mut matrix_ok = true;
    if let Some((mnode, mpath)) = f.get("matrix") {
        match &mnode.kind {
            NodeKind::Map(entries) if !entries.is_empty() => {
                // Which names the scenario's templates read (outside the matrix itself).
                let mut strings = Vec::new();
                for (k, v) in f.entries {
                    if k.name != "matrix" {
                        collect_strings(v, &mut strings);
                    }
                }
                let used: BTreeSet<String> = strings
                    .iter()
                    .filter(|s| Templates::is_template(s))
                    .flat_map(|s| cx.templates.names_used(s))
                    .collect();
                for (k, v) in entries {
                    let p = mpath.key(&k.name);
                    if !valid_var_name(&k.name) {
                        cx.error(
                            Diagnostic::error(&p, k.span, format!("matrix variable `{}` is not an identifier", k.name))
                                .width(k.name.chars().count())
                                .expected("letters, digits and `_`"),
                        );
                        matrix_ok = false;
                        continue;
                    }
                    if !used.contains(&k.name) {
                        let unused_candidates: Vec<&str> = used
                            .iter()
                            .map(String::as_str)
                            .filter(|u| *u != "env" && !entries.iter().any(|(k2, _)| k2.name == *u))
                            .collect();
                        let help = match did_you_mean(&k.name, unused_candidates.iter().copied()) {
                            Some(s) => format!("did you mean `{s}`? the scenario's templates read `{s}`"),
                            None => {
                                format!("use it in the scenario, for example `connections: \"{{{{ {} }}}}\"`", k.name)
                            }
                        };
                        cx.error(
                            Diagnostic::error(
                                &p,
                                k.span,
                                format!(
                                    "matrix variable `{}` is not used by any template of scenario `{name}`",
                                    k.name
                                ),
                            )
                            .width(k.name.chars().count())
                            .expected(format!("a variable the scenario reads as `{{{{ {} }}}}`", k.name))
                            .help(help),
                        );
                        matrix_ok = false;
                        continue;
                    }
                    let Some(items) = cx.list(v, &p, &format!("matrix variable `{}`", k.name)) else {
                        matrix_ok = false;
                        continue;
                    };
                    if items.is_empty() {
                        cx.error(
                            Diagnostic::error(&p, v.span, format!("matrix variable `{}` has no values", k.name))
                                .expected("a non-empty list"),
                        );
                        matrix_ok = false;
                        continue;
                    }
                    let mut values = Vec::new();
                    for (i, item) in items.iter().enumerate() {
                        let ip = p.index(i);
                        match cx.render(item, &ip) {
                            Some(r)
                                if matches!(
                                    r.kind,
                                    NodeKind::Bool(_) | NodeKind::Int(_) | NodeKind::Float(_) | NodeKind::Str(_)
                                ) =>
                            {
                                values.push((r.scalar_text().unwrap_or_default(), to_value(&r.kind)));
                            }
                            Some(r) => {
                                cx.error(
                                    Diagnostic::error(&ip, item.span, "a matrix value must be a single value")
                                        .expected("a string, number or boolean")
                                        .found(r.type_name()),
                                );
                                matrix_ok = false;
                            }
                            None => matrix_ok = false,
                        }
                    }
                    matrix.push((k.name.clone(), values));
                }
            }
            NodeKind::Map(_) => {
                cx.error(
                    Diagnostic::error(&mpath, mnode.span, "`matrix` is empty")
                        .expected("variables with lists of values, such as `matrix: { connections: [64, 256] }`"),
                );
                matrix_ok = false;
            }
            _ => {
                cx.error(
                    Diagnostic::error(&mpath, mnode.span, "`matrix` must be a mapping of variables to lists of values")
                        .expected("a mapping such as `matrix: { connections: [64, 256] }`")
                        .found(mnode.type_name()),
                );
                matrix_ok = false;
            }
        }
    }
    // `matrix_mode: product` (the default) runs every combination; `zip` walks the lists together.
    let zip = match f.get("matrix_mode") {
        None => false,
        Some((n, p)) => match cx.string(n, &p, "`matrix_mode`").as_deref() {
            Some("product") => false,
            Some("zip") => true,
            Some(other) => {
                cx.error(enum_error(&p, n, "`matrix_mode`", other, &["product", "zip"]));
                matrix_ok = false;
                false
            }
            None => {
                matrix_ok = false;
                false
            }
        },
    };
    if zip {
        let lengths: Vec<usize> = matrix.iter().map(|(_, v)| v.len()).collect();
        if lengths.windows(2).any(|w| w[0] != w[1]) {
            let described: Vec<String> = matrix.iter().map(|(k, v)| format!("`{k}` has {}", v.len())).collect();
            let (mn, mp) = f.get("matrix").map(|(n, p)| (n.span, p)).unwrap_or((None, path.key("matrix")));
            cx.error(
                Diagnostic::error(&mp, mn, "`matrix_mode: zip` walks the lists together, so they must be equally long")
                    .found(described.join(", "))
                    .help("give every matrix variable the same number of values, or use `matrix_mode: product`"),
            );
            return None;
        }
    }
    let cell_count: usize = if zip {
        matrix.first().map(|(_, v)| v.len()).unwrap_or(1)
    } else {
        matrix.iter().map(|(_, v)| v.len().max(1)).product()
    };
    if cell_count > 10_000 {
        let (_, mpath) = f.get("matrix")?;
        cx.error(
            Diagnostic::error(&mpath, f.key_span("matrix"), format!("the matrix has {cell_count} cells"))
                .expected("at most 10000 cells"),
        );
        return None;
    }

    // Every cell is read with its own bindings, so that every value is checked as it will run. A problem found
    // in some cells but not all names the cells it occurs in.
    let mut cells = Vec::new();
    let mut all_ok = matrix_ok;
    let mut found: Vec<(Diagnostic, Vec<String>)> = Vec::new();
    for idx in 0..cell_count {
        let mut rem = idx;
        let mut bindings_text = Vec::new();
        let mut bindings_value = Vec::new();
        for (var, values) in matrix.iter().rev() {
            let (t, v) = if zip { &values[idx] } else { &values[rem % values.len()] };
            if !zip {
                rem /= values.len();
            }
            bindings_text.push((var.clone(), t.clone()));
            bindings_value.push((var.clone(), v.clone()));
        }
        bindings_text.reverse();
        bindings_value.reverse();
        let cell_name =
            format!("{name}[{}]", bindings_text.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(","));
        let mut cell_diags = Diagnostics::default();
        let mut cell_cx =
            Cx { diags: &mut cell_diags, templates: cx.templates, bindings: &bindings_value, dynamic: false };
        match read_cell(&mut cell_cx, &f, defaults, prefix) {
            Some(mut cell) => {
                cell.bindings = bindings_text;
                cells.push(cell);
            }
            None => all_ok = false,
        }
        for d in cell_diags.into_items() {
            match found.iter_mut().find(|(known, _)| *known == d) {
                Some((_, in_cells)) => in_cells.push(cell_name.clone()),
                None => found.push((d, vec![cell_name.clone()])),
            }
        }
    }
    for (mut d, in_cells) in found {
        if !matrix.is_empty() && in_cells.len() < cell_count {
            d.cells = in_cells;
        }
        cx.diags.push(d);
    }
    if !all_ok {
        return None;
    }
    Some(Scenario {
        name: name.to_owned(),
        description,
        gate: gate?,
        cooldown: cooldown?,
        matrix: matrix.into_iter().map(|(k, v)| (k, v.into_iter().map(|(t, _)| t).collect())).collect(),
        cells,
    })
}

fn read_cell(cx: &mut Cx<'_>, f: &Fields<'_>, defaults: &Defaults, prefix: &str) -> Option<Cell> {
    // `request` (one request), `requests` (a weighted mix of named ones) or `session` (named steps per user).
    let mut mix = Vec::new();
    let mut session = Vec::new();
    let request = match cx.one_of(f, &["request", "requests", "session"], "the scenario") {
        Some("request") => f.get("request").and_then(|(n, p)| read_request(cx, n, &p, defaults, prefix)),
        Some("requests") => f.get("requests").and_then(|(n, p)| {
            mix = read_mix(cx, n, &p, defaults, prefix)?;
            mix.first().map(|m: &MixRequest| m.request.clone())
        }),
        Some(_) => f.get("session").and_then(|(n, p)| {
            session = read_session(cx, n, &p, defaults, prefix)?;
            session.iter().find_map(|s| match s {
                SessionStep::Request { request, .. } => Some(request.clone()),
                SessionStep::Think { .. } => None,
            })
        }),
        None => None,
    };
    let timeout = match f.get("timeout") {
        Some((n, p)) => read_timeout(cx, n, &p),
        None => Some(defaults.timeout.unwrap_or(DEFAULT_TIMEOUT)),
    };
    let load = match cx.required(f, "load", "the scenario") {
        Some((n, p)) => read_load(cx, n, &p),
        None => None,
    };
    if let (Some(load), Some((n, p))) = (&load, f.get("session")) {
        if !matches!(load, Load::Users { .. }) {
            cx.error(
                Diagnostic::error(&p, f.key_span("session").or(n.span), "`session` needs the `users` load model")
                    .expected("`load: { users: ... }` beside a `session`")
                    .help(
                        "a session is what one user does from connect to close; closed and open loads send single \
                         requests: use `request` or `requests`, or inject users with \
                         `load: { users: { ramp: 100, over: 10s } }`",
                    ),
            );
            return None;
        }
    }
    let slos = match f.get("slo") {
        Some((n, p)) => read_slos(cx, n, &p),
        None => Some(Vec::new()),
    };
    let slos = slos?;
    let names: Vec<&str> = mix
        .iter()
        .map(|m| m.name.as_str())
        .chain(session.iter().filter_map(|s| match s {
            SessionStep::Request { name, .. } => Some(name.as_str()),
            SessionStep::Think { .. } => None,
        }))
        .collect();
    // (When the requests could not be read, their names are unknown: nothing more to say.)
    for slo in slos.iter().filter(|_| request.is_some()) {
        if let Some(name) = &slo.request {
            if !names.contains(&name.as_str()) {
                let (n, p) = f.get("slo")?;
                let d = Diagnostic::error(&p, n.span, format!("`{slo}` names no request of this scenario")).expected(
                    if names.is_empty() {
                        "a `requests:` mix or a `session:` that names the request".to_owned()
                    } else {
                        format!("one of {}", list(&names))
                    },
                );
                cx.error(match did_you_mean(name, names.iter().copied()) {
                    Some(s) => d.help(format!("did you mean `{{request={s}}}`?")),
                    None => d,
                });
                return None;
            }
        }
    }
    Some(Cell { bindings: Vec::new(), request: request?, mix, timeout: timeout?, load: load?, slos, session })
}

/// `session:`: a list of steps, each a named request (`{ name: home, path: / }`) or a think time
/// (`{ think: 500ms }`), starting with a request.
fn read_session(
    cx: &mut Cx<'_>,
    node: &Node,
    path: &Path,
    defaults: &Defaults,
    prefix: &str,
) -> Option<Vec<SessionStep>> {
    const EXAMPLE: &str = "`session: [{ name: home, path: / }, { think: 1s }, { name: cart, path: /cart }]`";
    let NodeKind::Seq(items) = &node.kind else {
        cx.error(
            Diagnostic::error(path, node.span, "`session` must be a list of steps")
                .expected(format!("a list such as {EXAMPLE}"))
                .found(node.type_name()),
        );
        return None;
    };
    let mut out = Vec::new();
    let mut ok = true;
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
        let request = read_request_with(cx, &request_node, &p, defaults, prefix, SESSION_STEP_KEYS);
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
        Some(_) => Some(out),
    }
}

fn read_mix(cx: &mut Cx<'_>, node: &Node, path: &Path, defaults: &Defaults, prefix: &str) -> Option<Vec<MixRequest>> {
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
        match read_request_with(cx, &request_node, &p, defaults, prefix, MIX_REQUEST_KEYS) {
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

fn read_request(cx: &mut Cx<'_>, node: &Node, path: &Path, defaults: &Defaults, prefix: &str) -> Option<Request> {
    read_request_with(cx, node, path, defaults, prefix, REQUEST_KEYS)
}

fn read_request_with(
    cx: &mut Cx<'_>,
    node: &Node,
    path: &Path,
    defaults: &Defaults,
    prefix: &str,
    keys: &[&str],
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
    if !ok {
        return None;
    }
    assemble_request(cx, method?, prefix, &req_path?, &query, headers, body)
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
    use crate::generate::{has_marks, split_marks, Generator, Segment};
    let mut generators: Vec<Generator> = Vec::new();
    // Turns rendered text into segments; `encode` percent-encodes literal text now and generated values later.
    let mut segments = |text: &str, encode: bool| -> Vec<Segment> {
        split_marks(text)
            .into_iter()
            .filter_map(|(is_mark, part)| {
                if !is_mark {
                    return Some(Segment::Text(if encode { percent_encode(&part) } else { part }));
                }
                let g = part.parse::<usize>().ok().and_then(|i| cx.templates.registry.get(i))?;
                generators.push(g);
                Some(Segment::Gen { index: generators.len() - 1, encode })
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
            })
            .collect()
    };
    let path = display(&merge_text(path_segments.clone()), &generators);
    let shown_headers = header_segments.iter().map(|(k, v)| (k.clone(), display(v, &generators))).collect();
    let shown_body = body_segments.as_ref().map(|b| display(b, &generators));
    let dynamic = dynamic.then(|| crate::model::DynamicRequest {
        path: merge_text(path_segments),
        headers: header_segments.into_iter().map(|(k, v)| (k, merge_text(v))).collect(),
        body: body_segments.map(merge_text),
        generators,
    });
    Some(Request { method, path, headers: shown_headers, body: shown_body, dynamic })
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

fn read_load(cx: &mut Cx<'_>, node: &Node, path: &Path) -> Option<Load> {
    let f = cx.map(node, path, LOAD_KEYS, "`load`")?;
    let model = cx.one_of(&f, LOAD_KEYS, "`load`")?;
    let (n, p) = f.get(model)?;
    match model {
        "closed" => read_closed(cx, n, &p),
        "open" => read_open(cx, n, &p),
        "ramp" => read_ramp(cx, n, &p),
        _ => read_users(cx, n, &p),
    }
}

fn positive_duration(cx: &mut Cx<'_>, n: &Node, p: &Path, what: &str) -> Option<Duration> {
    let d = cx.unit::<Duration>(n, p, what)?;
    if d == Duration::ZERO {
        cx.error(
            Diagnostic::error(p, n.span, format!("{what} must be longer than zero"))
                .expected("a duration such as `10s`")
                .found(n.describe()),
        );
        return None;
    }
    Some(d)
}

fn positive_rate(cx: &mut Cx<'_>, n: &Node, p: &Path, what: &str) -> Option<Rate> {
    let r = cx.unit::<Rate>(n, p, what)?;
    if r.millis_per_sec == 0 {
        cx.error(
            Diagnostic::error(p, n.span, format!("{what} must be above zero"))
                .expected("a rate such as `1000/s`")
                .found(n.describe()),
        );
        return None;
    }
    Some(r)
}

const MAX_CONNECTIONS: u64 = 1_000_000;

fn connections(cx: &mut Cx<'_>, n: &Node, p: &Path) -> Option<u64> {
    let c = cx.uint(n, p, "`connections`", 1)?;
    if c > MAX_CONNECTIONS {
        cx.error(
            Diagnostic::error(p, n.span, "`connections` is too large")
                .expected(format!("at most {MAX_CONNECTIONS}"))
                .found(n.describe())
                .help("one machine cannot open more sockets than its file descriptor and port limits allow"),
        );
        return None;
    }
    Some(c)
}

fn read_closed(cx: &mut Cx<'_>, node: &Node, path: &Path) -> Option<Load> {
    let f = cx.map(node, path, CLOSED_KEYS, "`load.closed`")?;
    let conns = cx.required(&f, "connections", "`load.closed`").and_then(|(n, p)| connections(cx, n, &p));
    let stop = match cx.one_of(&f, &["duration", "requests"], "`load.closed`") {
        Some("duration") => {
            f.get("duration").and_then(|(n, p)| positive_duration(cx, n, &p, "`duration`")).map(Stop::Duration)
        }
        Some(_) => f.get("requests").and_then(|(n, p)| cx.uint(n, &p, "`requests`", 1)).map(Stop::Requests),
        None => None,
    };
    let pipeline = match f.get("pipeline") {
        Some((n, p)) => cx.uint(n, &p, "`pipeline`", 1).and_then(|v| {
            if v > 1024 {
                cx.error(
                    Diagnostic::error(&p, n.span, "`pipeline` is too deep")
                        .expected("at most 1024 requests in flight per connection")
                        .found(n.describe()),
                );
                None
            } else {
                Some(v as u32)
            }
        }),
        None => Some(1),
    };
    let pipeline_mode = match f.get("pipeline_mode") {
        Some((n, p)) => match cx.string(n, &p, "`pipeline_mode`").as_deref() {
            Some("batch") => Some(PipelineMode::Batch),
            Some("window") => Some(PipelineMode::Window),
            Some(other) => {
                cx.error(enum_error(&p, n, "`pipeline_mode`", other, &["batch", "window"]));
                None
            }
            None => None,
        },
        None => Some(PipelineMode::Batch),
    };
    let keep_alive = match f.get("keep_alive") {
        Some((n, p)) => cx.boolean(n, &p, "`keep_alive`"),
        None => Some(true),
    };
    let (conns, stop, pipeline, pipeline_mode, keep_alive) = (conns?, stop?, pipeline?, pipeline_mode?, keep_alive?);
    if !keep_alive && pipeline > 1 {
        cx.error(
            Diagnostic::error(&path.key("pipeline"), f.key_span("pipeline"), "pipelining needs keep-alive")
                .expected("`pipeline: 1` when `keep_alive: false`")
                .help("remove `keep_alive: false`, or set `pipeline: 1`"),
        );
        return None;
    }
    if let Stop::Requests(r) = stop {
        if r < conns {
            cx.error(
                Diagnostic::warning(
                    &path.key("requests"),
                    f.key_span("requests"),
                    format!("{r} requests over {conns} connections leaves connections idle"),
                )
                .help("only as many connections as requests will send anything"),
            );
        }
    }
    Some(Load::Closed { connections: conns, stop, pipeline, pipeline_mode, keep_alive })
}

fn read_open(cx: &mut Cx<'_>, node: &Node, path: &Path) -> Option<Load> {
    let f = cx.map(node, path, OPEN_KEYS, "`load.open`")?;
    let rate = cx.required(&f, "rate", "`load.open`").and_then(|(n, p)| positive_rate(cx, n, &p, "`rate`"));
    let duration =
        cx.required(&f, "duration", "`load.open`").and_then(|(n, p)| positive_duration(cx, n, &p, "`duration`"));
    let conns = cx.required(&f, "connections", "`load.open`").and_then(|(n, p)| connections(cx, n, &p));
    Some(Load::Open { rate: rate?, duration: duration?, connections: conns? })
}

fn read_ramp(cx: &mut Cx<'_>, node: &Node, path: &Path) -> Option<Load> {
    let f = cx.map(node, path, RAMP_KEYS, "`load.ramp`")?;
    let conns = cx.required(&f, "connections", "`load.ramp`").and_then(|(n, p)| connections(cx, n, &p));
    let start_rate = match f.get("start_rate") {
        Some((n, p)) => cx.unit::<Rate>(n, &p, "`start_rate`"),
        None => Some(Rate::default()),
    };
    let mut stages = Vec::new();
    let mut ok = true;
    if let Some((n, p)) = cx.required(&f, "stages", "`load.ramp`") {
        match cx.list(n, &p, "`stages`") {
            Some([]) => {
                cx.error(
                    Diagnostic::error(&p, n.span, "`stages` is empty")
                        .expected("at least one stage such as `{ to: 1000/s, over: 30s }`"),
                );
                ok = false;
            }
            Some(items) => {
                for (i, item) in items.iter().enumerate() {
                    let sp = p.index(i);
                    let Some(sf) = cx.map(item, &sp, STAGE_KEYS, "a ramp stage") else {
                        ok = false;
                        continue;
                    };
                    let to = cx.required(&sf, "to", "a ramp stage").and_then(|(n, p)| cx.unit::<Rate>(n, &p, "`to`"));
                    let over = cx
                        .required(&sf, "over", "a ramp stage")
                        .and_then(|(n, p)| positive_duration(cx, n, &p, "`over`"));
                    match (to, over) {
                        (Some(to), Some(over)) => stages.push(RampStage { to, over }),
                        _ => ok = false,
                    }
                }
            }
            None => ok = false,
        }
    } else {
        ok = false;
    }
    let (conns, start_rate) = (conns?, start_rate?);
    if !ok {
        return None;
    }
    if start_rate.millis_per_sec == 0 && stages.iter().all(|s| s.to.millis_per_sec == 0) {
        cx.error(
            Diagnostic::error(path, node.span, "the ramp never sends anything")
                .expected("a stage with a rate above zero"),
        );
        return None;
    }
    Some(Load::Ramp { connections: conns, start_rate, stages })
}

fn user_rate(cx: &mut Cx<'_>, n: &Node, p: &Path, what: &str) -> Option<Rate> {
    // Users per second: a bare number (`20`) or a rate (`20/s`).
    let r = cx.render(n, p)?;
    match &r.kind {
        NodeKind::Int(i) if *i >= 0 => Some(Rate::from_per_sec(*i as u64)),
        NodeKind::Float(f) if *f >= 0.0 && f.is_finite() && *f < 1e9 => {
            Some(Rate { millis_per_sec: (f * 1000.0).round() as u64 })
        }
        _ => cx.unit::<Rate>(&r, p, what),
    }
}

fn read_users(cx: &mut Cx<'_>, node: &Node, path: &Path) -> Option<Load> {
    // `users: { ramp: 100, over: 1m }` (one step), `users: [ {at_once: 10}, {ramp: 100, over: 1m} ]`, or
    // `users: { steps: [...], max_connections: 5000 }`.
    let (steps_node, steps_path, max_conns) = match &node.kind {
        NodeKind::Map(entries) if entries.iter().any(|(k, _)| k.name == "steps" || k.name == "max_connections") => {
            let f = cx.map(node, path, USERS_KEYS, "`load.users`")?;
            let max = match f.get("max_connections") {
                Some((n, p)) => connections(cx, n, &p)?,
                None => DEFAULT_MAX_USER_CONNECTIONS,
            };
            let (n, p) = cx.required(&f, "steps", "`load.users`")?;
            (n, p, max)
        }
        _ => (node, path.clone(), DEFAULT_MAX_USER_CONNECTIONS),
    };
    let single = [steps_node.clone()];
    let (items, item_path): (&[Node], Box<dyn Fn(usize) -> Path>) = match &steps_node.kind {
        NodeKind::Seq(items) => {
            let sp = steps_path.clone();
            (items.as_slice(), Box::new(move |i| sp.index(i)))
        }
        _ => {
            let sp = steps_path.clone();
            (&single[..], Box::new(move |_| sp.clone()))
        }
    };
    if items.is_empty() {
        cx.error(
            Diagnostic::error(&steps_path, steps_node.span, "no injection steps")
                .expected("at least one step such as `{ ramp: 100, over: 1m }`"),
        );
        return None;
    }
    let mut steps = Vec::new();
    let mut ok = true;
    for (i, item) in items.iter().enumerate() {
        let p = item_path(i);
        let Some(f) = cx.map(item, &p, USER_STEP_KEYS, "an injection step") else {
            ok = false;
            continue;
        };
        let Some(kind) =
            cx.one_of(&f, &["at_once", "ramp", "per_second", "ramp_per_second", "pause"], "an injection step")
        else {
            ok = false;
            continue;
        };
        let allowed: &[&str] = match kind {
            "at_once" => &["at_once"],
            "ramp" => &["ramp", "over"],
            "per_second" => &["per_second", "during"],
            "ramp_per_second" => &["ramp_per_second", "to", "during"],
            _ => &["pause"],
        };
        for (k, _) in f.entries {
            if !allowed.contains(&k.name.as_str()) && USER_STEP_KEYS.contains(&k.name.as_str()) {
                cx.error(
                    Diagnostic::error(
                        &p.key(&k.name),
                        k.span,
                        format!("`{}` does not belong in a `{kind}` step", k.name),
                    )
                    .width(k.name.chars().count())
                    .expected(format!("only {}", list(allowed))),
                );
                ok = false;
            }
        }
        let step = match kind {
            "at_once" => f
                .get("at_once")
                .and_then(|(n, p)| cx.uint(n, &p, "`at_once`", 1))
                .map(|users| UserStep::AtOnce { users }),
            "ramp" => {
                let users = f.get("ramp").and_then(|(n, p)| cx.uint(n, &p, "`ramp`", 1));
                let over =
                    cx.required(&f, "over", "a `ramp` step").and_then(|(n, p)| positive_duration(cx, n, &p, "`over`"));
                users.zip(over).map(|(users, over)| UserStep::Ramp { users, over })
            }
            "per_second" => {
                let rate = f.get("per_second").and_then(|(n, p)| user_rate(cx, n, &p, "`per_second`"));
                let during = cx
                    .required(&f, "during", "a `per_second` step")
                    .and_then(|(n, p)| positive_duration(cx, n, &p, "`during`"));
                rate.zip(during).map(|(rate, during)| UserStep::PerSecond { rate, during })
            }
            "ramp_per_second" => {
                let from = f.get("ramp_per_second").and_then(|(n, p)| user_rate(cx, n, &p, "`ramp_per_second`"));
                let to =
                    cx.required(&f, "to", "a `ramp_per_second` step").and_then(|(n, p)| user_rate(cx, n, &p, "`to`"));
                let during = cx
                    .required(&f, "during", "a `ramp_per_second` step")
                    .and_then(|(n, p)| positive_duration(cx, n, &p, "`during`"));
                match (from, to, during) {
                    (Some(from), Some(to), Some(during)) => Some(UserStep::RampPerSecond { from, to, during }),
                    _ => None,
                }
            }
            _ => f
                .get("pause")
                .and_then(|(n, p)| positive_duration(cx, n, &p, "`pause`"))
                .map(|during| UserStep::Pause { during }),
        };
        match step {
            Some(s) => steps.push(s),
            None => ok = false,
        }
    }
    if !ok {
        return None;
    }
    if steps.iter().all(|s| matches!(s, UserStep::Pause { .. })) {
        cx.error(
            Diagnostic::error(&steps_path, steps_node.span, "the injection never starts a user")
                .expected("a step that injects users"),
        );
        return None;
    }
    Some(Load::Users { steps, max_connections: max_conns })
}

fn read_slos(cx: &mut Cx<'_>, node: &Node, path: &Path) -> Option<Vec<Slo>> {
    let single = [node.clone()];
    let items: &[Node] = match &node.kind {
        NodeKind::Seq(items) => items,
        NodeKind::Str(_) => &single,
        _ => {
            cx.error(
                Diagnostic::error(path, node.span, "`slo` must be a list of objectives")
                    .expected("a list such as `slo: [p99 < 100ms, error_rate < 0.1%]`")
                    .found(node.type_name()),
            );
            return None;
        }
    };
    let is_list = matches!(node.kind, NodeKind::Seq(_));
    let mut out = Vec::new();
    let mut ok = true;
    for (i, item) in items.iter().enumerate() {
        let p = if is_list { path.index(i) } else { path.clone() };
        let (expr_node, expr_path, abort) = match &item.kind {
            NodeKind::Map(_) => {
                let Some(f) = cx.map(item, &p, SLO_KEYS, "an SLO") else {
                    ok = false;
                    continue;
                };
                let abort = match f.get("abort_on_fail") {
                    None => Some(None),
                    Some((n, ap)) => match &n.kind {
                        NodeKind::Map(_) => cx
                            .map(n, &ap, ABORT_KEYS, "`abort_on_fail`")
                            .and_then(|af| match af.get("delay") {
                                Some((dn, dp)) => cx.unit::<Duration>(dn, &dp, "`delay`"),
                                None => Some(Duration::ZERO),
                            })
                            .map(|delay| Some(AbortOnFail { delay })),
                        _ => cx
                            .boolean(n, &ap, "`abort_on_fail`")
                            .map(|b| b.then_some(AbortOnFail { delay: Duration::ZERO })),
                    },
                };
                let Some((en, ep)) = cx.required(&f, "expr", "an SLO") else {
                    ok = false;
                    continue;
                };
                (en.clone(), ep, abort)
            }
            _ => (item.clone(), p.clone(), Some(None)),
        };
        let Some(abort) = abort else {
            ok = false;
            continue;
        };
        let Some(text) = cx.string(&expr_node, &expr_path, "an SLO") else {
            ok = false;
            continue;
        };
        match Slo::parse(&text) {
            Ok(mut slo) => {
                slo.abort_on_fail = abort;
                out.push(slo);
            }
            Err(e) => {
                cx.error(
                    Diagnostic::error(&expr_path, expr_node.span, format!("invalid SLO: {}", e.message))
                        .expected(e.expected)
                        .found(expr_node.describe())
                        .help_opt(e.help),
                );
                ok = false;
            }
        }
    }
    ok.then_some(out)
}
