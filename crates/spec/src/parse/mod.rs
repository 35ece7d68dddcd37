//! From a located node tree to a validated [`Spec`]: variables resolved, templates rendered, units parsed,
//! matrix cells expanded, every problem reported at once.

mod check;
mod duet;
mod fields;
mod gating;
mod hardware;
mod history;
mod keys;
mod load;
mod options;
mod outputs;
mod profile;
mod replay;
mod request;
mod scenario;
mod secrets;
mod target;
mod vars;

use std::collections::BTreeMap;

use crate::diag::{Diagnostic, Diagnostics};
use crate::limits::MAX_NAME_CHARS;
use crate::node::{Node, NodeKind, Path, Span};
use crate::read::Cx;
use crate::template::Templates;
use loadgate_model::secrets::Redactor;
use loadgate_model::spec::*;

use fields::{key_node, read_choice, valid_scenario_name};
use hardware::read_hardware;
pub(crate) use keys::*;
pub use keys::{DEFAULT_MAX_USER_CONNECTIONS, DEFAULT_TIMEOUT};
pub use options::LoadOptions;
use request::{read_defaults, Defaults};
use scenario::read_scenario;
use target::read_target;
use vars::read_vars;

/// The values given with `--secret`: secret whatever the spec says, even when it names no variable.
pub(crate) fn command_line_secrets(opts: &LoadOptions) -> Redactor {
    let values = opts.sets.iter().filter(|(k, _)| opts.secret_vars.contains(k)).map(|(_, v)| v.clone());
    Redactor::new(values, opts.secret_vars.iter().cloned())
}

/// The names under the spec's `secrets.vars`, as written (read before the spec is valid, for hiding their values in
/// its errors).
fn written_secret_vars(root: &Node) -> Vec<String> {
    match root.get("secrets").and_then(|s| s.get("vars")).map(|v| &v.kind) {
        Some(NodeKind::Seq(items)) => items
            .iter()
            .filter_map(|i| match &i.kind {
                NodeKind::Str(s) => Some(s.clone()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// Reads a spec, and gives with it every secret value met on the way: the spec's own redactor when it is valid,
/// else what its errors must not show (`--secret` values, secret variables' values, whatever a template read from
/// the environment).
pub(crate) fn read_spec(root: &Node, opts: &LoadOptions, diags: &mut Diagnostics) -> (Option<Spec>, Redactor) {
    let path = Path::root();
    if matches!(root.kind, NodeKind::Null) {
        diags.push(
            Diagnostic::error(&path, Some(Span { line: 1, col: 1 }), "the spec is empty")
                .expected("a mapping with `version`, `name`, `target` and `scenarios`")
                .help("start from `loadgate run --url http://127.0.0.1:8080/ -c 64 -d 10s --print-spec`, or see specs/quickstart.yaml"),
        );
        return (None, command_line_secrets(opts));
    }
    // Variables come first: everything else may be templated with them.
    let (vars, var_values, env_read_by_vars) = read_vars(root, opts, diags);
    let data = crate::generate::DataFiles {
        base: opts.base_dir.clone(),
        allow_outside: opts.allow_data_outside_spec_dir,
        max_bytes: opts.max_data_file_bytes,
        read: Default::default(),
    };
    let templates = Templates::new(var_values, opts.env.clone(), data);
    let spec = read_sections(root, opts, diags, vars.clone(), &templates, &env_read_by_vars);
    if let Some(spec) = spec {
        let secrets = spec.secrets.clone();
        return (Some(spec), secrets);
    }
    let names: Vec<String> = written_secret_vars(root).into_iter().chain(opts.secret_vars.iter().cloned()).collect();
    let mut values: Vec<String> = names.iter().filter_map(|n| vars.get(n).map(|v| v.value.clone())).collect();
    values.extend(command_line_secrets(opts).values().iter().cloned());
    values.extend(templates.env_values_read());
    values.extend(env_read_by_vars);
    (None, Redactor::new(values, names))
}

fn read_sections(
    root: &Node,
    opts: &LoadOptions,
    diags: &mut Diagnostics,
    vars: BTreeMap<String, Var>,
    templates: &Templates,
    env_read_by_vars: &[String],
) -> Option<Spec> {
    let path = Path::root();
    let mut cx = Cx { diags, templates, bindings: &[], dynamic: false, vars: &[], vars_only: false };
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
        let chars = s.chars().count();
        if chars > MAX_NAME_CHARS {
            let short: String = s.chars().take(40).collect();
            cx.error(
                Diagnostic::error(&p, n.span, format!("`name` is {chars} characters long"))
                    .expected(format!(
                        "at most {MAX_NAME_CHARS} characters: the name names the output directory, and a file name \
                         holds at most 255 bytes"
                    ))
                    .found(n.describe())
                    .help(format!("shorten it, for example `name: {short}`")),
            );
            return None;
        }
        Some(s)
    });
    let description = top.get("description").and_then(|(n, p)| cx.string(n, &p, "`description`"));
    let secret_names = match top.get("secrets") {
        Some((n, p)) => secrets::read_secrets(&mut cx, n, &p, &vars),
        None => Some(secrets::SecretNames::default()),
    };
    let seed = top.get("seed").and_then(|(n, p)| cx.uint(n, &p, "`seed`", 0));
    let hardware = match top.get("hardware") {
        Some((n, p)) => read_hardware(&mut cx, n, &p),
        None => Some(Hardware::default()),
    };
    let target = match cx.required(&top, "target", "the spec") {
        Some((n, p)) => read_target(&mut cx, n, &p),
        None => None,
    };
    let candidate = match top.get("candidate") {
        Some((n, p)) => read_target(&mut cx, n, &p).map(Some),
        None => Some(None),
    };
    let gating = match top.get("gating") {
        Some((n, p)) => gating::read_gating(&mut cx, n, &p),
        None => Some(crate::Gating::default()),
    };
    let history = match top.get("history") {
        Some((n, p)) => history::read_history(&mut cx, n, &p).map(Some),
        None => Some(None),
    };
    let defaults = match top.get("defaults") {
        Some((n, p)) => read_defaults(&mut cx, n, &p),
        None => Some(Defaults::default()),
    };
    let verify = match top.get("verify") {
        Some((n, p)) => read_verify(&mut cx, n, &p),
        None => Some(loadgate_model::Verify::default()),
    };
    let outputs = match top.get("outputs") {
        Some((n, p)) => outputs::read_outputs(&mut cx, n, &p),
        None => Some(Vec::new()),
    };
    let started = |t: Option<&Target>| matches!(t, Some(Target::Command { .. } | Target::Builtin { .. }));
    let profile_cx = profile::ProfileCx {
        started: started(target.as_ref()) && candidate.as_ref().is_none_or(|c| c.is_none() || started(c.as_ref())),
        ab: candidate.as_ref().is_some_and(Option::is_some),
    };
    let profile = match top.get("profile") {
        Some((n, p)) => profile::read_profile(&mut cx, n, &p, profile_cx).map(Some),
        None => Some(None),
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
                let mut defaults = defaults.clone().unwrap_or_default();
                defaults.heads = heads_of(target.as_ref(), candidate.as_ref().and_then(|c| c.as_ref()));
                defaults.profile = profile.clone().flatten();
                defaults.profile_cx = profile_cx;
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
                    } else if key.name.chars().count() > MAX_NAME_CHARS {
                        cx.error(
                            Diagnostic::error(&sp, key.span, format!("scenario name `{}...` is {} characters long", key.name.chars().take(40).collect::<String>(), key.name.chars().count()))
                                .expected(format!("at most {MAX_NAME_CHARS} characters: the name names the scenario's report files"))
                                .help("shorten it"),
                        );
                        continue;
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
    let (name, hardware, target, secret_names) = (name?, hardware?, target?, secret_names?);
    let (candidate, gating, history, verify) = (candidate?, gating?, history?, verify?);
    let outputs = outputs?;
    if cx.diags.has_errors() {
        return None;
    }
    warn_about_idle_streams(&mut cx, &target, candidate.as_ref(), &scenarios, top.get("scenarios"));
    warn_about_held_reads(&mut cx, &target, candidate.as_ref(), &scenarios, top.get("scenarios"));
    duet::refuse_duet_misuse(
        &mut cx,
        &gating,
        candidate.is_some(),
        &scenarios,
        top.get("gating"),
        top.get("scenarios"),
    );
    if cx.diags.has_errors() {
        return None;
    }
    gating::warn_about_undecidable_checks(
        &mut cx,
        &gating,
        candidate.is_some(),
        &scenarios,
        top.get("gating"),
        top.get("candidate"),
        top.get("scenarios"),
    );
    let mut spec = Spec {
        name,
        description,
        seed,
        vars,
        hardware,
        target,
        candidate,
        gating,
        history,
        verify,
        scenarios,
        outputs,
        warnings: Vec::new(),
        secrets: Default::default(),
        files_read: templates.data.files_read(),
    };
    spec.secrets = secrets::collect(
        &spec,
        &secret_names,
        &opts.secret_vars,
        templates.env_values_read().into_iter().chain(env_read_by_vars.iter().cloned()),
    );
    Some(spec)
}

/// `streams` asks for HTTP/2 streams: over HTTP/1.1 (the default protocol) or on connections that carry one
/// request each (`keep_alive: false`) it has no effect, which a user coming from h2load's `-m` would not see.
fn warn_about_idle_streams(
    cx: &mut Cx<'_>,
    target: &Target,
    candidate: Option<&Target>,
    scenarios: &[Scenario],
    node: Option<(&Node, Path)>,
) {
    let http1 = target.protocol() == loadgate_model::Protocol::Http1
        && candidate.is_none_or(|c| c.protocol() == loadgate_model::Protocol::Http1);
    for s in scenarios {
        let Some(cell) = s.cells.iter().find(|c| c.streams > 1) else { continue };
        let one_request = matches!(cell.load, Load::Closed { keep_alive: false, .. });
        if !http1 && !one_request {
            continue;
        }
        // The location: the scenario's `load.<model>.streams`, else as near to it as the spec goes.
        let (path, span) = match node {
            Some((scenarios_node, ref p)) => {
                let sp = p.key(&s.name);
                match scenarios_node.get(&s.name) {
                    Some(body) => match body.get("load") {
                        Some(load) => streams_node(load, sp.key("load")),
                        None => (sp, body.span),
                    },
                    None => (p.clone(), scenarios_node.span),
                }
            }
            None => (Path::root(), None),
        };
        let streams = cell.streams;
        let diag = if http1 {
            Diagnostic::warning(&path, span, format!("`streams: {streams}` has no effect over HTTP/1.1"))
                .help("HTTP/2 streams need `target.protocol: http2` (`--http2`: h2c over http://, h2 over https://) or `auto` over https (`--protocol auto`); for HTTP/1.1, `pipeline` sends several requests per connection")
        } else {
            Diagnostic::warning(&path, span, format!("`streams: {streams}` has no effect with `keep_alive: false`"))
                .help("each connection carries one request; drop `streams` or keep connections alive")
        };
        cx.error(diag);
    }
}

/// `pipeline_reads: batch` reads plain HTTP/1.1 batches whole: over HTTPS or HTTP/2 each response is read as it
/// arrives, and the scenario is told so (located at its `pipeline_reads`). With a candidate, both sides must be
/// alike: a batch read whole on one side only would compare a batch's latency with each response's.
fn warn_about_held_reads(
    cx: &mut Cx<'_>,
    target: &Target,
    candidate: Option<&Target>,
    scenarios: &[Scenario],
    node: Option<(&Node, Path)>,
) {
    let plain = Target::plain_http1;
    if plain(target) && candidate.is_none_or(plain) {
        return;
    }
    // One side plain, the other not: A/B would compare different quantities.
    let one_sided = candidate.is_some_and(|c| plain(c) != plain(target));
    for s in scenarios {
        let held = |c: &&loadgate_model::Cell| {
            matches!(c.load, Load::Closed { pipeline_reads: loadgate_model::PipelineReads::Batch, pipeline: 2.., .. })
        };
        if !s.cells.iter().any(|c| held(&c)) {
            continue;
        }
        let (path, span) = match node {
            Some((scenarios_node, ref p)) => {
                let sp = p.key(&s.name);
                match scenarios_node.get(&s.name).and_then(|b| b.get("load")) {
                    Some(load) => key_node(load, sp.key("load"), "pipeline_reads"),
                    None => (sp, None),
                }
            }
            None => (Path::root(), None),
        };
        let diag = if one_sided {
            let (plain_side, other) =
                if plain(target) { ("the target", "the candidate") } else { ("the candidate", "the target") };
            Diagnostic::error(&path, span, "`pipeline_reads: batch` would read batches whole on one side of the A/B only")
                .expected("plain HTTP/1.1 (http://) on both sides, or `pipeline_reads: each`")
                .found(format!("{plain_side} over plain HTTP/1.1, {other} over HTTPS or HTTP/2"))
                .help("a batch read whole measures the batch's latency, a response read as it arrives its own: the comparison would be of different things; use `pipeline_reads: each`, or the same scheme and protocol on both sides")
        } else {
            Diagnostic::warning(&path, span, "`pipeline_reads: batch` has no effect over HTTPS or HTTP/2")
                .help("batches are read whole over plain HTTP/1.1 (http://) only; elsewhere each response is read as it arrives, as with `pipeline_reads: each`")
        };
        cx.error(diag);
    }
}

/// Where a scenario's `load` sets `streams`: the key's value (`load.<model>.streams`), else the `load` itself.
fn streams_node(load: &Node, path: Path) -> (Path, Option<Span>) {
    if let NodeKind::Map(models) = &load.kind {
        for (model, body) in models {
            if let Some(n) = body.get("streams") {
                return (path.key(&model.name).key("streams"), n.span);
            }
        }
    }
    (path, load.span)
}

/// Whether the targets' response heads are read as HTTP/1.1: HTTP/2 on either side reads `:status` only.
fn heads_of(target: Option<&Target>, candidate: Option<&Target>) -> check::Heads {
    let one = |t: &Target| match t.protocol() {
        loadgate_model::Protocol::Http2 => check::Heads::Http2,
        loadgate_model::Protocol::Auto if !t.plain_http1() => check::Heads::MaybeHttp2,
        _ => check::Heads::Http1,
    };
    let all: Vec<check::Heads> = target.into_iter().chain(candidate).map(one).collect();
    if all.contains(&check::Heads::Http2) {
        check::Heads::Http2
    } else if all.contains(&check::Heads::MaybeHttp2) {
        check::Heads::MaybeHttp2
    } else {
        check::Heads::Http1
    }
}

/// `verify:`: `auto` (the default), `all`, `off` (or `false`), or `{ scenarios, requests }`.
fn read_verify(cx: &mut Cx<'_>, node: &Node, path: &Path) -> Option<loadgate_model::Verify> {
    use loadgate_model::{Verify, VerifyScenarios};
    const WORDS: &[(&str, VerifyScenarios)] =
        &[("auto", VerifyScenarios::Auto), ("all", VerifyScenarios::All), ("off", VerifyScenarios::Off)];
    let scenarios = |cx: &mut Cx<'_>, n: &Node, p: &Path| match &n.kind {
        NodeKind::Bool(false) => Some(VerifyScenarios::Off),
        NodeKind::Bool(true) => {
            cx.error(
                Diagnostic::error(p, n.span, "`verify: true` does not say which scenarios")
                    .expected("`auto`, `all` or `off`")
                    .found(n.describe())
                    .help(
                        "`auto` (the default) verifies the scenarios whose requests have checks; `all` every scenario",
                    ),
            );
            None
        }
        _ => read_choice(cx, n, p, "`verify`", WORDS),
    };
    let NodeKind::Map(_) = node.kind else {
        return scenarios(cx, node, path).map(|scenarios| Verify { scenarios, ..Verify::default() });
    };
    let f = cx.map(node, path, VERIFY_KEYS, "`verify`")?;
    let mut v = Verify::default();
    let mut ok = f.unknown.is_empty();
    if let Some((n, p)) = f.get("scenarios") {
        match scenarios(cx, n, &p) {
            Some(s) => v.scenarios = s,
            None => ok = false,
        }
    }
    if let Some((n, p)) = f.get("requests") {
        match cx.uint(n, &p, "`verify.requests`", 1) {
            Some(r) if r <= 100 => v.requests = r as u32,
            Some(_) => {
                cx.error(
                    Diagnostic::error(&p, n.span, "`verify.requests` is too large")
                        .expected("at most 100: verification checks the requests, the load measures them")
                        .found(n.describe()),
                );
                ok = false;
            }
            None => ok = false,
        }
    }
    ok.then_some(v)
}
