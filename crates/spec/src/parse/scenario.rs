//! A scenario: its matrix of cells, each cell's requests, load and timeout, and its `slo` list.

use std::collections::{BTreeSet, HashMap};

use minijinja::Value;

use crate::diag::{Diagnostic, Diagnostics};
use crate::limits::{human_bytes, MAX_CELLS, MAX_EXPANDED_BYTES};
use crate::node::{Node, NodeKind, Path};
use crate::read::{list, Cx, Fields};
use crate::suggest::did_you_mean;
use crate::template::Templates;
use crate::units::Duration;
use crate::{AbortOnFail, Metric, Slo};
use loadgate_model::spec::*;
use loadgate_model::SweepSpec;

use super::fields::enum_error;
use super::keys::{ABORT_KEYS, DEFAULT_TIMEOUT, SCENARIO_KEYS, SLO_KEYS, SWEEP_KEYS};
use super::load::read_load;
use super::request::{read_mix, read_request, read_session, read_timeout, Defaults};
use super::vars::{to_value, valid_var_name};

/// Roughly how many bytes a copy of a subtree takes: its text and a few words per value.
fn node_size(node: &Node) -> u64 {
    let mut size = 0u64;
    let mut pending = vec![node];
    while let Some(n) = pending.pop() {
        size += 64;
        match &n.kind {
            NodeKind::Str(s) => size += s.len() as u64,
            NodeKind::Seq(items) => pending.extend(items),
            NodeKind::Map(entries) => {
                for (k, v) in entries {
                    size += 64 + k.name.len() as u64;
                    pending.push(v);
                }
            }
            _ => {}
        }
    }
    size
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

pub(super) fn read_scenario(
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
    let repeat = match f.get("repeat") {
        Some((n, p)) => super::gating::read_repeat(cx, n, &p, "`repeat`").map(Some),
        None => Some(None),
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
    // A matrix with errors says nothing reliable about its cells: reading them would report its variables as
    // undefined. Its own errors come first.
    if !matrix_ok {
        return None;
    }
    let cell_count: usize = if zip {
        matrix.first().map(|(_, v)| v.len()).unwrap_or(1)
    } else {
        matrix.iter().fold(1usize, |n, (_, v)| n.saturating_mul(v.len().max(1)))
    };
    // Each cell copies the scenario, but not its matrix.
    let matrix_size = f.get("matrix").map_or(0, |(m, _)| node_size(m));
    let expanded = (cell_count as u64).saturating_mul(node_size(node).saturating_sub(matrix_size));
    if cell_count > MAX_CELLS || !cx.templates.meter.expand(cell_count, expanded) {
        let (_, mpath) = f.get("matrix").unwrap_or((node, path.key("matrix")));
        let counts: Vec<String> = matrix.iter().map(|(k, v)| format!("`{k}` {}", v.len())).collect();
        let d = if cell_count > MAX_CELLS {
            Diagnostic::error(&mpath, f.key_span("matrix").or(node.span), format!("the matrix has {cell_count} cells"))
                .expected(format!("at most {MAX_CELLS} cells in the whole spec"))
        } else {
            Diagnostic::error(
                &mpath,
                f.key_span("matrix").or(node.span),
                format!(
                    "scenario `{name}` takes the spec past {MAX_CELLS} scenario instances or {} of expanded copies",
                    human_bytes(MAX_EXPANDED_BYTES)
                ),
            )
            .expected(format!("at most {MAX_CELLS} cells and {} in the whole spec", human_bytes(MAX_EXPANDED_BYTES)))
        };
        cx.error(
            d.found(format!("{cell_count} cells ({})", counts.join(" x ")))
                .help("sweep fewer values, or split the sweep into several specs"),
        );
        return None;
    }

    // Every cell is read with its own bindings, so that every value is checked as it will run. A problem found
    // in some cells but not all names the cells it occurs in.
    let mut cells = Vec::new();
    let mut all_ok = matrix_ok;
    let mut found: Vec<(Diagnostic, Vec<String>)> = Vec::new();
    let mut index: HashMap<Diagnostic, usize> = HashMap::new();
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
        let mut cell_cx = Cx {
            diags: &mut cell_diags,
            templates: cx.templates,
            bindings: &bindings_value,
            dynamic: false,
            vars: &[],
            vars_only: false,
        };
        match read_cell(&mut cell_cx, &f, defaults, prefix) {
            Some(mut cell) => {
                cell.bindings = bindings_text;
                cells.push(cell);
            }
            None => all_ok = false,
        }
        for d in cell_diags.into_items() {
            match index.get(&d) {
                Some(&i) => found[i].1.push(cell_name.clone()),
                None => {
                    index.insert(d.clone(), found.len());
                    found.push((d, vec![cell_name.clone()]));
                }
            }
        }
    }
    for (mut d, in_cells) in found {
        if !matrix.is_empty() && in_cells.len() < cell_count {
            d.cells = in_cells;
        }
        cx.diags.push(d);
    }
    let sweep = match f.get("sweep") {
        Some((n, p)) => read_sweep(cx, name, n, &p, &matrix, f.key_span("sweep")),
        None => Some(None),
    };
    let profile = match f.get("profile") {
        Some((n, p)) => super::profile::read_scenario_profile(cx, n, &p, defaults.profile_cx),
        None => Some(defaults.profile.clone()),
    };
    if let Some(Some(pr)) = &profile {
        let loads: Vec<&Load> = cells.iter().map(|c| &c.load).collect();
        if !super::profile::check_rounds(cx, pr, name, &loads, f.key_span("profile").or(node.span), path) {
            return None;
        }
    }
    if !all_ok {
        return None;
    }
    Some(Scenario {
        name: name.to_owned(),
        description,
        gate: gate?,
        cooldown: cooldown?,
        repeat: repeat?,
        matrix: matrix.into_iter().map(|(k, v)| (k, v.into_iter().map(|(t, _)| t).collect())).collect(),
        cells,
        sweep: sweep?,
        profile: profile?,
    })
}

/// `sweep: { over, slo }`: the swept variable must be a matrix variable with two values or more, all numbers
/// of one kind, and every value an objective names must be of that kind (and a cell it names must exist).
fn read_sweep(
    cx: &mut Cx<'_>,
    scenario: &str,
    node: &Node,
    path: &Path,
    matrix: &[(String, Vec<(String, Value)>)],
    key_span: Option<crate::node::Span>,
) -> Option<Option<SweepSpec>> {
    let f = cx.map(node, path, SWEEP_KEYS, "`sweep`")?;
    if matrix.is_empty() {
        cx.error(
            Diagnostic::error(
                path,
                key_span.or(node.span),
                format!("scenario `{scenario}` has a `sweep` but no matrix"),
            )
            .expected("a `matrix:` whose cells the sweep SLOs judge together")
            .help("add the swept variable to a matrix, such as `matrix: { connections: [8, 64, 512] }`"),
        );
        return None;
    }
    let names: Vec<&str> = matrix.iter().map(|(k, _)| k.as_str()).collect();
    let over = match f.get("over") {
        Some((n, p)) => {
            let over = cx.string(n, &p, "`over`")?;
            if !names.contains(&over.as_str()) {
                let d = Diagnostic::error(
                    &p,
                    n.span,
                    format!("`{over}` is not a matrix variable of scenario `{scenario}`"),
                )
                .expected(format!("one of {}", list(&names)))
                .found(n.describe());
                cx.error(match did_you_mean(&over, names.iter().copied()) {
                    Some(s) => d.help(format!("did you mean `{s}`?")),
                    None => d,
                });
                return None;
            }
            Some((over, p, n.span))
        }
        None if names.len() == 1 => None,
        None => {
            cx.error(
                Diagnostic::error(path, node.span, "`sweep` needs `over` when the matrix has several variables")
                    .expected(format!("`over:` naming one of {}", list(&names)))
                    .help(format!(
                        "`over: {}` orders the cells by it; each combination of the other variables is judged as a \
                         sweep of its own",
                        names[0]
                    )),
            );
            return None;
        }
    };
    let (over, over_path, over_span) = over.unwrap_or_else(|| (names[0].to_owned(), path.clone(), node.span));
    let values = &matrix.iter().find(|(k, _)| *k == over)?.1;
    let axis: Vec<Option<loadgate_model::AxisValue>> =
        values.iter().map(|(t, _)| loadgate_model::AxisValue::parse(t)).collect();
    let unit = axis.first().cloned().flatten().map(|a| a.unit);
    if let Some(bad) = values.iter().zip(&axis).find(|(_, a)| a.as_ref().map(|a| a.unit) != unit || a.is_none()) {
        cx.error(
            Diagnostic::error(
                &over_path,
                over_span,
                format!(
                    "the sweep orders the cells by `{over}`, but its value `{}` is not a number like the others",
                    bad.0 .0
                ),
            )
            .expected("matrix values that are all numbers, or all rates, durations or sizes")
            .help("sweep over a numeric variable (connections, rate, pipeline, body size)"),
        );
        return None;
    }
    let unit = unit?;
    let distinct: Vec<f64> = axis.iter().flatten().map(|a| a.value).fold(Vec::new(), |mut v, x| {
        if !v.contains(&x) {
            v.push(x);
        }
        v
    });
    if distinct.len() < 2 {
        cx.error(
            Diagnostic::error(&over_path, over_span, format!("the sweep over `{over}` has a single value"))
                .expected("two values or more to compare")
                .help(format!("add values to `matrix.{over}`")),
        );
        return None;
    }
    let (slo_node, slo_path) = cx.required(&f, "slo", "`sweep`")?;
    let single = [slo_node.clone()];
    let items: &[Node] = match &slo_node.kind {
        NodeKind::Seq(items) => items,
        NodeKind::Str(_) => &single,
        _ => {
            cx.error(
                Diagnostic::error(&slo_path, slo_node.span, "`sweep.slo` must be a list of objectives")
                    .expected("a list such as `slo: [knee >= 256, throughput_drop <= 10%]`")
                    .found(slo_node.type_name()),
            );
            return None;
        }
    };
    let is_list = matches!(slo_node.kind, NodeKind::Seq(_));
    let mut slos = Vec::new();
    let mut ok = true;
    for (i, item) in items.iter().enumerate() {
        let p = if is_list { slo_path.index(i) } else { slo_path.clone() };
        if matches!(item.kind, NodeKind::Map(_)) {
            cx.error(
                Diagnostic::error(&p, item.span, "a sweep SLO is an expression")
                    .expected("a string such as `knee >= 256`")
                    .found(item.type_name())
                    .help("`abort_on_fail` does not apply: a sweep is judged once its last cell has run"),
            );
            ok = false;
            continue;
        }
        let Some(text) = cx.string(item, &p, "a sweep SLO") else {
            ok = false;
            continue;
        };
        let slo = match loadgate_model::SweepSlo::parse(&text) {
            Ok(slo) => slo,
            Err(e) => {
                cx.error(
                    Diagnostic::error(&p, item.span, format!("invalid sweep SLO: {}", e.message))
                        .expected(e.expected)
                        .found(item.describe())
                        .help_opt(e.help),
                );
                ok = false;
                continue;
            }
        };
        for v in slo.axis_values() {
            if v.unit != unit {
                cx.error(
                    Diagnostic::error(
                        &p,
                        item.span,
                        format!("`{}` is {}, but `{over}` holds {}", v.text, v.unit.describe(), unit.describe()),
                    )
                    .expected(format!("a value of `{over}`, such as `{}`", values[values.len() - 1].0))
                    .found(item.describe()),
                );
                ok = false;
            }
        }
        if let loadgate_model::SweepCheck::Cell { at, threshold, .. } = &slo.check {
            let mut cells = vec![at];
            if let loadgate_model::CellThreshold::Relative { at, .. } = threshold {
                cells.push(at);
            }
            for c in cells {
                if let loadgate_model::CellRef::Value(v) = c {
                    if v.unit == unit && !distinct.contains(&v.value) {
                        let shown: Vec<&str> = values.iter().map(|(t, _)| t.as_str()).collect();
                        cx.error(
                            Diagnostic::error(&p, item.span, format!("no cell has {over}={}", v.text))
                                .expected(format!("a value of `{over}`: {}", shown.join(", ")))
                                .found(item.describe())
                                .help("or `@smallest` / `@largest`"),
                        );
                        ok = false;
                    }
                }
            }
        }
        slos.push(slo);
    }
    ok.then_some(Some(SweepSpec { over, slos }))
}

fn read_cell(cx: &mut Cx<'_>, f: &Fields<'_>, defaults: &Defaults, prefix: &str) -> Option<Cell> {
    // Whether an SLO of the scenario gates checks: then every check's name must be one a filter can write.
    let mut scenario_defaults = defaults.clone();
    scenario_defaults.checks_gated = gates_checks(f);
    let defaults = &scenario_defaults;
    // `request` (one request), `requests` (a weighted mix of named ones) or `session` (named steps per user).
    let mut mix = Vec::new();
    let mut session = Vec::new();
    let mut variables = Vec::new();
    // A replay sends the log's requests: the scenario names none (its cell's request is `GET /`, never sent).
    let replay = f.get("load").is_some_and(|(n, _)| n.get("replay").is_some());
    let request = match replay_request(cx, f, replay) {
        Some(r) => r,
        None => match cx.one_of(f, &["request", "requests", "session"], "the scenario") {
            Some("request") => f.get("request").and_then(|(n, p)| read_request(cx, n, &p, defaults, prefix)),
            Some("requests") => f.get("requests").and_then(|(n, p)| {
                mix = read_mix(cx, n, &p, defaults, prefix)?;
                mix.first().map(|m: &MixRequest| m.request.clone())
            }),
            Some(_) => f.get("session").and_then(|(n, p)| {
                (session, variables) = read_session(cx, n, &p, defaults, prefix)?;
                session.iter().find_map(|s| match s {
                    SessionStep::Request { request, .. } => Some(request.clone()),
                    SessionStep::Think { .. } => None,
                })
            }),
            None => None,
        },
    };
    let timeout = match f.get("timeout") {
        Some((n, p)) => read_timeout(cx, n, &p),
        None => Some(defaults.timeout.unwrap_or(DEFAULT_TIMEOUT)),
    };
    let load = match cx.required(f, "load", "the scenario") {
        Some((n, p)) => read_load(cx, n, &p),
        None => None,
    };
    let (load, streams) = match load {
        Some((l, s)) => (Some(l), s),
        None => (None, 1),
    };
    // A user waits for each response before its next step: one request in flight per connection.
    if let (Some(load), true) = (&load, f.has("session")) {
        let pipeline = match load {
            Load::Closed { pipeline, .. } => *pipeline,
            _ => 1,
        };
        for (key, n) in [("pipeline", pipeline), ("streams", streams)] {
            if n > 1 {
                let (p, span) = match f.get("load") {
                    Some((ln, lp)) => super::fields::key_node(ln, lp, key),
                    None => (f.path.key("load"), None),
                };
                cx.error(
                    Diagnostic::error(&p, span, format!("a session waits for each response: `{key}: {n}` is refused"))
                        .expected(format!("`{key}: 1` (the default) beside a `session`"))
                        .help(format!(
                            "each step of a user's session is sent when the response to the last has come; for \
                             more load, add connections or users instead of `{key}`"
                        )),
                );
                return None;
            }
        }
    }
    let capacity = load.as_ref().map(|l| matches!(l, Load::Capacity { .. }));
    let slos = match f.get("slo") {
        Some((n, p)) => read_slos(cx, n, &p, capacity, replay),
        None => Some(Vec::new()),
    };
    let slos = slos?;
    if capacity == Some(true) && slos.iter().all(|s| s.metric == Metric::Capacity) {
        let (span, p) = match f.get("slo") {
            Some((n, p)) => (f.key_span("slo").or(n.span), p),
            None => (f.key_span("load"), f.path.key("load")),
        };
        cx.error(Diagnostic::warning(&p, span, "the capacity search has no SLO for its steps").help(
            "a step then holds when its rate is sent in full; add the objectives the capacity must keep, \
                     such as `slo: [p99 < 100ms, error_rate < 0.1%]`",
        ));
    }
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
    let request = request?;
    check_slos(cx, f, &slos, &request, &mix, &session)?;
    let cookies = read_cookies(cx, f, !session.is_empty(), defaults.heads)?;
    let verify = match f.get("verify") {
        Some((n, p)) => Some(cx.boolean(n, &p, "`verify`")?),
        None => None,
    };
    let failed_checks = match f.get("failed_checks") {
        Some((n, p)) => super::request::read_failed_checks(cx, n, &p)?,
        None => defaults.failed_checks.unwrap_or_default(),
    };
    Some(Cell {
        bindings: Vec::new(),
        request,
        mix,
        timeout: timeout?,
        load: load?,
        streams,
        slos,
        cookies,
        failed_checks,
        variables,
        verify,
        check_body_limit: defaults.check_body_limit.unwrap_or(loadgate_model::DEFAULT_CHECK_BODY_LIMIT),
        session,
    })
}

/// A replay's scenario: no `request`, `requests` or `session` (the log gives the requests). `None` when the load
/// is not a replay; `Some(None)` when one of them is there anyway (an error).
fn replay_request(cx: &mut Cx<'_>, f: &Fields<'_>, replay: bool) -> Option<Option<Request>> {
    if !replay {
        return None;
    }
    if let Some(key) = ["request", "requests", "session", "verify"].into_iter().find(|k| f.has(k)) {
        cx.error(
            Diagnostic::error(
                &f.path.key(key),
                f.key_span(key),
                format!("a replay sends the log's requests: `{key}` is refused"),
            )
            .width(key.len())
            .expected("a scenario with `load: { replay: ... }` and no `request`, `requests`, `session` or `verify`")
            .help(format!(
                "remove `{key}`; a replay's requests are the file's, with their methods, paths, headers and bodies, \
                 and have no checks to verify"
            )),
        );
        return Some(None);
    }
    Some(Some(Request {
        method: "GET".into(),
        path: "/".into(),
        headers: Vec::new(),
        body: None,
        dynamic: None,
        checks: Vec::new(),
        captures: Vec::new(),
    }))
}

/// Whether the scenario's SLOs (as written) gate `checks` or `check_failures`.
fn gates_checks(f: &Fields<'_>) -> bool {
    let Some((node, _)) = f.get("slo") else { return false };
    let single = [node.clone()];
    let items: &[Node] = match &node.kind {
        NodeKind::Seq(items) => items,
        _ => &single,
    };
    items.iter().any(|item| {
        let expr = match &item.kind {
            NodeKind::Map(_) => item.get("expr"),
            _ => Some(item),
        };
        matches!(expr.map(|e| &e.kind), Some(NodeKind::Str(s))
            if Slo::parse(s).is_ok_and(|slo| matches!(slo.metric, Metric::Checks | Metric::CheckFailures)))
    })
}

/// `cookies:`: on by default with a session, refused without one.
fn read_cookies(cx: &mut Cx<'_>, f: &Fields<'_>, session: bool, heads: super::check::Heads) -> Option<bool> {
    use super::check::Heads;
    let explicit = match f.get("cookies") {
        Some((n, p)) => Some(cx.boolean(n, &p, "`cookies`")?),
        None => None,
    };
    let (path, span) = (f.path.key("cookies"), f.key_span("cookies"));
    if explicit == Some(true) && !session {
        cx.error(
            Diagnostic::error(&path, span, "`cookies: true` needs a `session:`")
                .width("cookies".len())
                .expected("a `session:` beside `cookies`")
                .help(
                    "each user keeps its own cookies from one step of its session to the next; single requests and \
                     mixes have no user to keep them",
                ),
        );
        return None;
    }
    match (explicit, heads) {
        (Some(true), Heads::Http2 | Heads::MaybeHttp2) => {
            super::check::heads_problem(cx, &path, span, heads, "`cookies`");
            Some(heads == Heads::MaybeHttp2)
        }
        (None, Heads::Http2) if session => {
            let (p, s) = (f.path.key("session"), f.key_span("session"));
            cx.error(
                Diagnostic::warning(&p, s, "the session keeps no cookies over HTTP/2")
                    .help("`Set-Cookie` is read from HTTP/1.1 heads only; set `cookies: false` to say so, or `target.protocol: http1` for cookies"),
            );
            Some(false)
        }
        (explicit, _) => Some(explicit.unwrap_or(session)),
    }
}

/// Where the `i`th SLO of the scenario is.
fn slo_at(f: &Fields<'_>, i: usize) -> (Path, Option<crate::node::Span>) {
    match f.get("slo") {
        Some((node, p)) => match &node.kind {
            NodeKind::Seq(items) => (p.index(i), items.get(i).and_then(|n| n.span).or(node.span)),
            _ => (p, node.span),
        },
        None => (f.path.clone(), f.node.span),
    }
}

/// The SLOs on checks: the scenario has checks, each `{check=NAME}` names one (of the request `{request=...}`
/// names), and none aborts the run.
fn check_slos(
    cx: &mut Cx<'_>,
    f: &Fields<'_>,
    slos: &[Slo],
    request: &Request,
    mix: &[MixRequest],
    session: &[SessionStep],
) -> Option<()> {
    // (request name, check name): captures are checks `capture:<name>`.
    let mut checks: Vec<(Option<String>, String)> = Vec::new();
    let mut add = |name: Option<&String>, r: &Request| {
        checks.extend(r.checks.iter().map(|c| (name.cloned(), c.name.clone())));
        checks.extend(r.captures.iter().map(|c| (name.cloned(), format!("capture:{}", c.name))));
    };
    if !mix.is_empty() {
        mix.iter().for_each(|m| add(Some(&m.name), &m.request));
    } else if !session.is_empty() {
        for s in session {
            if let SessionStep::Request { name, request } = s {
                add(Some(name), request);
            }
        }
    } else {
        add(None, request);
    }
    let mut ok = true;
    for (i, slo) in slos.iter().enumerate() {
        if !matches!(slo.metric, Metric::Checks | Metric::CheckFailures) {
            continue;
        }
        let (p, span) = slo_at(f, i);
        if checks.is_empty() {
            cx.error(
                Diagnostic::error(&p, span, format!("`{slo}` but no request of this scenario has a `check:`"))
                    .expected("a `check:` on a request of the scenario")
                    .help("add checks, such as `check: [{ status: 200 }]`, or remove the SLO"),
            );
            ok = false;
            continue;
        }
        if slo.abort_on_fail.is_some() {
            cx.error(
                Diagnostic::error(&p, span, format!("`abort_on_fail` is not supported on `{}`", slo.metric))
                    .expected(format!("`{slo}` without `abort_on_fail`"))
                    .help("check SLOs are judged when the phase ends; `abort_on_fail` on `error_rate` stops a run whose responses fail (failed checks count as errors under `failed_checks: errors`)"),
            );
            ok = false;
        }
        if let Some(name) = &slo.check {
            let of_request: Vec<&str> = checks
                .iter()
                .filter(|(r, _)| slo.request.is_none() || *r == slo.request)
                .map(|(_, c)| c.as_str())
                .fold(Vec::new(), |mut v, c| {
                    if !v.contains(&c) {
                        v.push(c);
                    }
                    v
                });
            if !of_request.contains(&name.as_str()) {
                let whose = match &slo.request {
                    Some(r) => format!("request `{r}`"),
                    None => "this scenario".to_owned(),
                };
                let d = Diagnostic::error(&p, span, format!("`{slo}` names no check of {whose}")).expected(
                    if of_request.is_empty() {
                        format!("a check of {whose}")
                    } else {
                        format!("one of {}", list(&of_request))
                    },
                );
                cx.error(match did_you_mean(name, of_request.iter().copied()) {
                    Some(s) => d.help(format!("did you mean `{s}`?")),
                    None => d.help("a check is named by its `name:`, else by its subject (`status`, `header:content-type`, `json:$.id`); a capture by `capture:<name>`"),
                });
                ok = false;
            }
        }
    }
    ok.then_some(())
}

/// A scenario's `slo` list. `capacity` says whether the scenario's load is a capacity search (`None` when the load
/// could not be read): `capacity` SLOs belong there only, and judge the search, never cut a step short.
fn read_slos(cx: &mut Cx<'_>, node: &Node, path: &Path, capacity: Option<bool>, replay: bool) -> Option<Vec<Slo>> {
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
            Ok(slo) if slo.metric == Metric::Capacity && capacity == Some(false) => {
                cx.error(
                    Diagnostic::error(&expr_path, expr_node.span, "`capacity` is measured by a capacity search only")
                        .expected("`load: { capacity: { from, to, ... } }` beside a `capacity` SLO")
                        .found(expr_node.describe())
                        .help(
                            "a capacity search finds the highest rate at which the scenario's other SLOs hold; for a \
                             rate this load sends, gate `throughput`",
                        ),
                );
                ok = false;
            }
            Ok(slo) if slo.metric.is_schedule_error() && !replay => {
                cx.error(
                    Diagnostic::error(&expr_path, expr_node.span, format!("`{}` is measured by a replay only", slo.metric))
                        .expected("`load: { replay: { file, ... } }` beside a `schedule_error` SLO")
                        .found(expr_node.describe())
                        .help("an open load's send lag is in the reports; `schedule_error` compares a replay's sends with its log"),
                );
                ok = false;
            }
            Ok(slo) if slo.metric.is_schedule_error() && abort.is_some() => {
                cx.error(
                    Diagnostic::error(&p, item.span, format!("`{}` cannot abort the run", slo.metric))
                        .expected(format!("`{}` without `abort_on_fail`", slo.metric))
                        .found(item.describe())
                        .help("a replay's schedule error is judged over the whole phase, after it"),
                );
                ok = false;
            }
            Ok(slo) if slo.metric == Metric::Capacity && abort.is_some() => {
                cx.error(
                    Diagnostic::error(&p, item.span, "`capacity` cannot abort the run")
                        .expected("`capacity >= RATE` without `abort_on_fail`")
                        .found(item.describe())
                        .help("the capacity is known once the search has ended; `abort_on_fail` on a step's SLO (`p99 < 100ms`) ends a failing step early"),
                );
                ok = false;
            }
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
