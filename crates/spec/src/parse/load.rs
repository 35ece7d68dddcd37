//! `load`: the load models, `closed`, `open`, `ramp` and `users`.

use crate::diag::Diagnostic;
use crate::node::{Node, NodeKind, Path};
use crate::read::{list, Cx};
use crate::units::{Duration, Percent, Rate};
use crate::{ConnectRate, PipelineMode, PipelineReads};
use loadgate_model::spec::*;

use super::fields::{enum_error, positive_duration};
use super::keys::{
    CAPACITY_KEYS, CLOSED_KEYS, DEFAULT_CAPACITY_CONFIRM, DEFAULT_CAPACITY_MAX_DURATION, DEFAULT_CAPACITY_PRECISION,
    DEFAULT_CAPACITY_STEP, DEFAULT_MAX_USER_CONNECTIONS, LOAD_KEYS, OPEN_KEYS, RAMP_KEYS, STAGE_KEYS, USERS_KEYS,
    USER_STEP_KEYS,
};

/// The most HTTP/2 streams per connection a load may ask for (servers grant 100 to 256, the protocol 2^31).
const MAX_STREAMS: u64 = 65_536;

/// A load model and its HTTP/2 streams per connection (`streams`, 1 when absent).
pub(super) fn read_load(cx: &mut Cx<'_>, node: &Node, path: &Path) -> Option<(Load, u32)> {
    let f = cx.map(node, path, LOAD_KEYS, "`load`")?;
    let model = cx.one_of(&f, LOAD_KEYS, "`load`")?;
    let (n, p) = f.get(model)?;
    let load = match model {
        "closed" => read_closed(cx, n, &p),
        "open" => read_open(cx, n, &p),
        "ramp" => read_ramp(cx, n, &p),
        "capacity" => read_capacity(cx, n, &p),
        "replay" => return super::replay::read_replay(cx, n, &p).map(|load| (load, 1)),
        _ => return read_users_refusing_streams(cx, n, &p).map(|load| (load, 1)),
    };
    // `streams` sits beside the model's other keys (each model's key list allows it but `users`).
    let streams = match n.get("streams") {
        Some(sn) => {
            let sp = p.key("streams");
            let v = cx.uint(sn, &sp, "`streams`", 1)?;
            if v > MAX_STREAMS {
                cx.error(
                    Diagnostic::error(&sp, sn.span, "`streams` is too large")
                        .expected(format!("at most {MAX_STREAMS}"))
                        .found(sn.describe())
                        .help("servers grant 100 to 256 concurrent streams per connection; open more connections"),
                );
                return None;
            }
            u32::try_from(v).ok()?
        }
        None => 1,
    };
    Some((load?, streams))
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

/// `connect_rate`: `auto` (the default), `unlimited`, or a rate.
fn connect_rate(cx: &mut Cx<'_>, f: &crate::read::Fields<'_>) -> Option<ConnectRate> {
    match f.get("connect_rate") {
        None => Some(ConnectRate::Auto),
        Some((n, p)) => match cx.unit::<ConnectRate>(n, &p, "`connect_rate`")? {
            ConnectRate::Rate(r) if r.millis_per_sec == 0 => {
                cx.error(
                    Diagnostic::error(&p, n.span, "`connect_rate` must be above zero")
                        .expected("`auto`, `unlimited`, or a rate such as `2000/s`")
                        .found(n.describe()),
                );
                None
            }
            rate => Some(rate),
        },
    }
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
    let pipeline_reads = match f.get("pipeline_reads") {
        Some((n, p)) => super::fields::read_choice(
            cx,
            n,
            &p,
            "`pipeline_reads`",
            &[("each", PipelineReads::Each), ("batch", PipelineReads::Batch)],
        ),
        None => Some(PipelineReads::Each),
    };
    let keep_alive = match f.get("keep_alive") {
        Some((n, p)) => cx.boolean(n, &p, "`keep_alive`"),
        None => Some(true),
    };
    let connect_rate = connect_rate(cx, &f);
    let (conns, stop, pipeline, pipeline_mode, pipeline_reads, keep_alive) =
        (conns?, stop?, pipeline?, pipeline_mode?, pipeline_reads?, keep_alive?);
    let connect_rate = connect_rate?;
    // Every problem of the load is reported at once.
    let mut refused = false;
    if pipeline_reads == PipelineReads::Batch {
        let at = (path.key("pipeline_reads"), f.key_span("pipeline_reads"));
        if pipeline_mode == PipelineMode::Window {
            cx.error(
                Diagnostic::error(&at.0, at.1, "`pipeline_reads: batch` reads batches, and a window has none")
                    .expected("`pipeline_mode: batch` (write N, wait for N) with `pipeline_reads: batch`")
                    .found("`pipeline_mode: window`")
                    .help("a window sends a request as each response arrives, so each is read as it comes: drop `pipeline_reads`, or use `pipeline_mode: batch`"),
            );
            refused = true;
        } else if pipeline == 1 {
            let help = if keep_alive {
                "set `pipeline: N` (N > 1) to write N requests at a time, or drop `pipeline_reads`"
            } else {
                "pipelining needs keep-alive, and `keep_alive: false` sends one request per connection: drop `pipeline_reads`"
            };
            cx.error(
                Diagnostic::warning(&at.0, at.1, "`pipeline_reads: batch` has no effect without pipelining").help(help),
            );
        }
    }
    if !keep_alive && pipeline > 1 {
        cx.error(
            Diagnostic::error(&path.key("pipeline"), f.key_span("pipeline"), "pipelining needs keep-alive")
                .expected("`pipeline: 1` when `keep_alive: false`")
                .help("remove `keep_alive: false`, or set `pipeline: 1`"),
        );
        refused = true;
    }
    if refused {
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
    Some(Load::Closed { connections: conns, stop, pipeline, pipeline_mode, pipeline_reads, keep_alive, connect_rate })
}

fn read_open(cx: &mut Cx<'_>, node: &Node, path: &Path) -> Option<Load> {
    let f = cx.map(node, path, OPEN_KEYS, "`load.open`")?;
    let rate = cx.required(&f, "rate", "`load.open`").and_then(|(n, p)| positive_rate(cx, n, &p, "`rate`"));
    let duration =
        cx.required(&f, "duration", "`load.open`").and_then(|(n, p)| positive_duration(cx, n, &p, "`duration`"));
    let conns = cx.required(&f, "connections", "`load.open`").and_then(|(n, p)| connections(cx, n, &p));
    let connect_rate = connect_rate(cx, &f);
    Some(Load::Open { rate: rate?, duration: duration?, connections: conns?, connect_rate: connect_rate? })
}

/// The most confirmations a capacity search runs.
const MAX_CONFIRM: u64 = 10;
/// The smallest precision a capacity search may ask: finer than the noise of any one step.
const MIN_PRECISION: f64 = 0.001;
/// The smallest factor between two steps up.
const MIN_STEP: f64 = 1.05;
/// The largest factor between two steps up.
const MAX_STEP: f64 = 100.0;

/// `step: 2x`, `step: 1.5x` or `step: 2`: the factor from one rate to the next.
fn step_factor(cx: &mut Cx<'_>, n: &Node, p: &Path) -> Option<f64> {
    let r = cx.render(n, p)?;
    let value = match &r.kind {
        NodeKind::Int(i) => Some(*i as f64),
        NodeKind::Float(f) => Some(*f),
        NodeKind::Str(s) => s.trim().strip_suffix(['x', '×']).and_then(|d| d.trim().parse::<f64>().ok()),
        _ => None,
    };
    match value {
        Some(v) if v.is_finite() && (MIN_STEP..=MAX_STEP).contains(&v) => Some(v),
        Some(v) if v.is_finite() && v <= 1.0 => {
            cx.error(
                Diagnostic::error(p, n.span, "`step` must grow the rate")
                    .expected(format!("a factor above 1, such as `2x` (at least {MIN_STEP}x)"))
                    .found(r.describe())
                    .help("the search steps up by this factor until a step fails, then bisects"),
            );
            None
        }
        Some(_) => {
            cx.error(
                Diagnostic::error(p, n.span, "`step` is out of range")
                    .expected(format!("a factor from {MIN_STEP}x to {MAX_STEP}x, such as `2x`"))
                    .found(r.describe()),
            );
            None
        }
        None => {
            cx.error(
                Diagnostic::error(p, n.span, "`step` is not a factor")
                    .expected("a factor such as `2x` or `1.5x`")
                    .found(r.describe())
                    .help("write the factor the rate grows by from step to step, followed by `x`"),
            );
            None
        }
    }
}

fn read_capacity(cx: &mut Cx<'_>, node: &Node, path: &Path) -> Option<Load> {
    let f = cx.map(node, path, CAPACITY_KEYS, "`load.capacity`")?;
    let from = cx.required(&f, "from", "`load.capacity`").and_then(|(n, p)| positive_rate(cx, n, &p, "`from`"));
    let to = cx.required(&f, "to", "`load.capacity`").and_then(|(n, p)| positive_rate(cx, n, &p, "`to`"));
    let duration =
        cx.required(&f, "duration", "`load.capacity`").and_then(|(n, p)| positive_duration(cx, n, &p, "`duration`"));
    let conns = cx.required(&f, "connections", "`load.capacity`").and_then(|(n, p)| connections(cx, n, &p));
    let connect_rate = connect_rate(cx, &f);
    let precision = match f.get("precision") {
        Some((n, p)) => cx.unit::<Percent>(n, &p, "`precision`").and_then(|v| {
            if v.0 < MIN_PRECISION || v.0 >= 1.0 {
                cx.error(
                    Diagnostic::error(&p, n.span, "`precision` is out of range")
                        .expected(format!("a percentage from {}% to below 100%, such as `2%`", MIN_PRECISION * 100.0))
                        .found(n.describe())
                        .help("the search stops when the highest rate that held and the lowest that failed are this close"),
                );
                None
            } else {
                Some(v)
            }
        }),
        None => Some(Percent(DEFAULT_CAPACITY_PRECISION)),
    };
    let step = match f.get("step") {
        Some((n, p)) => step_factor(cx, n, &p),
        None => Some(DEFAULT_CAPACITY_STEP),
    };
    let confirm = match f.get("confirm") {
        Some((n, p)) => cx.uint(n, &p, "`confirm`", 0).and_then(|c| {
            if c > MAX_CONFIRM {
                cx.error(
                    Diagnostic::error(&p, n.span, "`confirm` asks too many repeats")
                        .expected(format!("at most {MAX_CONFIRM} confirmations"))
                        .found(n.describe())
                        .help("to judge the capacity over repetitions, use `gating.repeat`"),
                );
                None
            } else {
                Some(c as u32)
            }
        }),
        None => Some(DEFAULT_CAPACITY_CONFIRM),
    };
    let max_duration = match f.get("max_duration") {
        Some((n, p)) => positive_duration(cx, n, &p, "`max_duration`"),
        None => Some(DEFAULT_CAPACITY_MAX_DURATION),
    };
    let pause = match f.get("pause") {
        Some((n, p)) => cx.unit::<Duration>(n, &p, "`pause`"),
        None => Some(Duration::ZERO),
    };
    let (from, to, duration, conns, connect_rate) = (from?, to?, duration?, conns?, connect_rate?);
    let (precision, step, confirm, max_duration, pause) = (precision?, step?, confirm?, max_duration?, pause?);
    if to.millis_per_sec <= from.millis_per_sec {
        cx.error(
            Diagnostic::error(&path.key("to"), f.key_span("to"), "`to` must be above `from`")
                .expected(format!("a rate above {from}"))
                .found(to.to_string())
                .help("the search runs from `from` up to `to`: `from` is the lowest rate it tries, `to` the highest"),
        );
        return None;
    }
    if max_duration < duration {
        cx.error(
            Diagnostic::error(
                &path.key("max_duration"),
                f.key_span("max_duration"),
                "`max_duration` cannot hold one step",
            )
            .expected(format!("at least the step's `duration` ({duration})"))
            .found(max_duration.to_string())
            .help("the budget bounds the whole search; give it room for several steps"),
        );
        return None;
    }
    let search = CapacitySearch { from, to, precision, step, duration, confirm, max_duration, pause };
    let worst = search.worst_case_duration();
    if worst > max_duration {
        let (span, p) = match f.get("max_duration") {
            Some(_) => (f.key_span("max_duration"), path.key("max_duration")),
            None => (node.span, path.clone()),
        };
        cx.error(
            Diagnostic::warning(
                &p,
                span,
                format!(
                    "the search may need {} steps ({worst}), more than `max_duration` ({max_duration})",
                    search.worst_case_steps()
                ),
            )
            .help("when the time runs out the search stops and reports the rates it bracketed; raise `max_duration`, shorten `duration`, narrow `from`..`to` or widen `precision`"),
        );
    }
    Some(Load::Capacity { search, connections: conns, connect_rate })
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
    let connect_rate = connect_rate(cx, &f);
    let (conns, start_rate, connect_rate) = (conns?, start_rate?, connect_rate?);
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
    Some(Load::Ramp { connections: conns, start_rate, stages, connect_rate })
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

/// `users` with `streams`: refused with its own error (a user sends its requests one after another, so it never
/// has two in flight to put on streams), then the rest of `users` is read as if `streams` were absent, so its
/// other errors are reported too.
fn read_users_refusing_streams(cx: &mut Cx<'_>, node: &Node, path: &Path) -> Option<Load> {
    let NodeKind::Map(entries) = &node.kind else {
        return read_users(cx, node, path);
    };
    let Some((key, _)) = entries.iter().find(|(k, _)| k.name == "streams") else {
        return read_users(cx, node, path);
    };
    cx.error(
        Diagnostic::error(&path.key("streams"), key.span, "`streams` does not apply to `users`")
            .width(key.name.chars().count())
            .expected("`streams` under `closed`, `open`, `ramp` or `capacity`")
            .found("`streams` under `users`")
            .help(
                "a user sends its requests one after another on its connection, so it never has two in flight; \
                 remove `streams`, or use an `open` or `closed` load with `streams` for concurrent HTTP/2 streams",
            ),
    );
    let rest = Node {
        kind: NodeKind::Map(entries.iter().filter(|(k, _)| k.name != "streams").cloned().collect()),
        ..node.clone()
    };
    read_users(cx, &rest, path);
    None
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

#[cfg(test)]
mod tests {
    use crate::{load_str, Load, LoadOptions};

    fn capacity(load: &str, slo: &str) -> Result<crate::Spec, crate::SpecError> {
        let yaml = format!(
            "version: 1\nname: c\nvars: {{ step: 3 }}\ntarget: {{ builtin: plaintext }}\nscenarios:\n  s:\n    request: {{ path: / }}\n    load: {{ capacity: {load} }}\n    slo: {slo}\n"
        );
        load_str("c.yaml", &yaml, &LoadOptions::default())
    }

    #[test]
    fn a_capacity_search_reads_with_its_defaults() {
        let spec = capacity("{ from: 1k/s, to: 64k/s, duration: 5s, connections: 16 }", "[p99 < 10ms]").unwrap();
        let Load::Capacity { search, connections, .. } = spec.scenarios[0].cells[0].load else {
            panic!("a capacity load")
        };
        assert_eq!(connections, 16);
        assert_eq!((search.from.per_sec(), search.to.per_sec()), (1000.0, 64000.0));
        assert_eq!((search.step, search.precision.0, search.confirm), (2.0, 0.05, 1));
        assert_eq!((search.max_duration.to_string(), search.pause.to_string()), ("10m".to_owned(), "0s".to_owned()));
        // 1k, 2k, ..., 64k: 7 steps up; halving 100% down to 5%: 5 more; 1 confirmation.
        assert_eq!(search.worst_case_steps(), 13);
        assert_eq!(search.worst_case_duration().to_string(), "1m5s");
        assert!(spec.warnings.is_empty(), "{:?}", spec.warnings);
        assert_eq!(spec.scenarios[0].cells[0].load.duration().map(|d| d.to_string()).as_deref(), Some("10m"));
    }

    #[test]
    fn connect_rate_is_auto_unlimited_or_a_rate_on_every_keep_alive_load() {
        let read = |load: &str| {
            let yaml = format!(
                "version: 1\nname: c\ntarget: {{ builtin: plaintext }}\nscenarios:\n  s:\n    request: {{ path: / }}\n    load: {load}\n"
            );
            load_str("c.yaml", &yaml, &LoadOptions::default()).map(|s| s.scenarios[0].cells[0].load.clone())
        };
        let rate = |load: Load| match load {
            Load::Closed { connect_rate, .. }
            | Load::Open { connect_rate, .. }
            | Load::Ramp { connect_rate, .. }
            | Load::Capacity { connect_rate, .. } => connect_rate.to_string(),
            Load::Users { .. } | Load::Replay(_) => panic!("users and replays have no connect_rate"),
        };
        assert_eq!(rate(read("{ closed: { connections: 2, duration: 1s } }").unwrap()), "auto");
        assert_eq!(rate(read("{ closed: { connections: 2, duration: 1s, connect_rate: 2k/s } }").unwrap()), "2000/s");
        assert_eq!(
            rate(read("{ open: { rate: 1k/s, duration: 1s, connections: 2, connect_rate: unlimited } }").unwrap()),
            "unlimited"
        );
        assert_eq!(
            rate(read("{ ramp: { connections: 2, stages: [{ to: 1k/s, over: 1s }], connect_rate: auto } }").unwrap()),
            "auto"
        );
        assert_eq!(
            rate(
                read("{ capacity: { from: 1k/s, to: 2k/s, duration: 1s, connections: 2, connect_rate: 500/s } }")
                    .unwrap()
            ),
            "500/s"
        );
        for bad in ["fast", "0/s"] {
            let e =
                read(&format!("{{ closed: {{ connections: 2, duration: 1s, connect_rate: {bad} }} }}")).unwrap_err();
            assert!(format!("{e:?}").contains("connect_rate"), "{bad}: {e:?}");
        }
    }

    #[test]
    fn factors_are_written_with_or_without_x_and_may_be_templated() {
        for (step, factor) in [("1.5x", 1.5), ("2", 2.0), ("\"{{ step }}x\"", 3.0), ("\"{{ step }}\"", 3.0)] {
            let spec = capacity(
                &format!("{{ from: 1k/s, to: 9k/s, step: {step}, duration: 1s, connections: 1 }}"),
                "[p99 < 1s]",
            )
            .unwrap_or_else(|e| panic!("{step}: {e:?}"));
            let Load::Capacity { search, .. } = spec.scenarios[0].cells[0].load else { panic!() };
            assert_eq!(search.step, factor, "{step}");
        }
    }

    #[test]
    fn a_search_longer_than_its_budget_or_without_step_slos_warns() {
        let spec =
            capacity("{ from: 1k/s, to: 1000k/s, step: 1.1x, duration: 30s, connections: 8 }", "[capacity >= 5k/s]")
                .unwrap();
        let warnings: Vec<&str> = spec.warnings.iter().map(|w| w.message.as_str()).collect();
        assert!(warnings[0].starts_with("the search may need "), "{warnings:?}");
        assert!(warnings[0].ends_with("more than `max_duration` (10m)"), "{warnings:?}");
        assert_eq!(warnings[1], "the capacity search has no SLO for its steps");
    }
}
