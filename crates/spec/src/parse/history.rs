//! `history`: checks judged against a history store of earlier runs (`run --history STORE`).

use std::str::FromStr;

use crate::diag::Diagnostic;
use crate::node::{Node, NodeKind, Path};
use crate::read::Cx;
use crate::suggest::did_you_mean;
use crate::units::{Duration, Percent};
use loadgate_model::{Detection, HistoryGate, HistoryLimit, HistoryReference, Metric};

use super::fields::read_choice;
use super::keys::{DETECTION_KEYS, HISTORY_KEYS, REFERENCE_KEYS};

/// The most runs a change-point window may span (`loadgate_history::changepoint::MAX_WINDOW`).
const MAX_WINDOW: u64 = 1000;

/// Reads `history: { branch, reference, machine, drift, change_points, detection }`.
pub(super) fn read_history(cx: &mut Cx<'_>, node: &Node, path: &Path) -> Option<HistoryGate> {
    let f = cx.map(node, path, HISTORY_KEYS, "`history`")?;
    let mut ok = true;
    let mut gate = HistoryGate {
        branch: None,
        reference: HistoryReference::First,
        same_machine: true,
        drift: Vec::new(),
        change_points: Vec::new(),
        detection: Detection::default(),
    };
    if let Some((n, p)) = f.get("branch") {
        match cx.string(n, &p, "`history.branch`") {
            Some(b) if !b.trim().is_empty() && b.len() <= 255 => gate.branch = Some(b),
            Some(_) => {
                cx.error(
                    Diagnostic::error(&p, n.span, "`history.branch` is empty or too long")
                        .expected("a git branch name such as `main`"),
                );
                ok = false;
            }
            None => ok = false,
        }
    }
    if let Some((n, p)) = f.get("reference") {
        match read_reference(cx, n, &p) {
            Some(r) => gate.reference = r,
            None => ok = false,
        }
    }
    if let Some((n, p)) = f.get("machine") {
        match read_choice(cx, n, &p, "`history.machine`", &[("same", true), ("any", false)]) {
            Some(v) => gate.same_machine = v,
            None => ok = false,
        }
    }
    if let Some((n, p)) = f.get("drift") {
        match read_limits(cx, n, &p, "`history.drift`") {
            Some(l) => gate.drift = l,
            None => ok = false,
        }
    }
    if let Some((n, p)) = f.get("change_points") {
        match read_limits(cx, n, &p, "`history.change_points`") {
            Some(l) => gate.change_points = l,
            None => ok = false,
        }
    }
    if let Some((n, p)) = f.get("detection") {
        match read_detection(cx, n, &p) {
            Some(d) => gate.detection = d,
            None => ok = false,
        }
    }
    if ok && gate.drift.is_empty() && gate.change_points.is_empty() {
        cx.error(
            Diagnostic::error(path, node.span, "`history` has no check")
                .expected("`drift` or `change_points` with at least one metric")
                .help("add `drift: { p99: 10% }` (fail when p99 got 10% worse than at the reference)"),
        );
        ok = false;
    }
    ok.then_some(gate)
}

/// `first`, a duration (`30d`: the first run of the last 30 days), `{ commit: SHA }` or `{ label: NAME }`.
fn read_reference(cx: &mut Cx<'_>, node: &Node, path: &Path) -> Option<HistoryReference> {
    match &node.kind {
        NodeKind::Str(s) if s.trim() == "first" => Some(HistoryReference::First),
        NodeKind::Str(text) => {
            let d = match text.parse::<Duration>() {
                Ok(d) => d,
                Err(e) => {
                    cx.error(
                        Diagnostic::error(path, node.span, "`history.reference` is not a reference")
                            .expected("`first`, a duration such as `30d`, `{ commit: SHA }` or `{ label: NAME }`")
                            .found(node.describe())
                            .help_opt(e.help),
                    );
                    return None;
                }
            };
            let seconds = d.0.as_secs();
            if seconds == 0 {
                cx.error(
                    Diagnostic::error(path, node.span, "`history.reference` of 0s holds no run")
                        .expected("`first`, a duration such as `30d`, `{ commit: SHA }` or `{ label: NAME }`"),
                );
                return None;
            }
            Some(HistoryReference::Since { seconds })
        }
        NodeKind::Map(_) => {
            let f = cx.map(node, path, REFERENCE_KEYS, "`history.reference`")?;
            let which = cx.one_of(&f, REFERENCE_KEYS, "`history.reference`")?;
            let (n, p) = f.get(which)?;
            let value = cx.string(n, &p, &format!("`history.reference.{which}`"))?;
            let value = value.trim().to_owned();
            let valid = match which {
                "commit" => value.len() >= 4 && value.len() <= 64 && value.chars().all(|c| c.is_ascii_hexdigit()),
                _ => !value.is_empty() && value.len() <= 255,
            };
            if !valid {
                cx.error(
                    Diagnostic::error(&p, n.span, format!("`history.reference.{which}` is not usable: `{value}`"))
                        .expected(if which == "commit" {
                            "4 to 64 hex digits of a git commit"
                        } else {
                            "a label given to `history add --label` or `run --label`, at most 255 characters"
                        }),
                );
                return None;
            }
            Some(if which == "commit" {
                HistoryReference::Commit { commit: value }
            } else {
                HistoryReference::Label { label: value }
            })
        }
        _ => {
            cx.error(
                Diagnostic::error(path, node.span, "`history.reference` is not a reference")
                    .expected("`first`, a duration such as `30d`, `{ commit: SHA }` or `{ label: NAME }`")
                    .found(node.type_name()),
            );
            None
        }
    }
}

/// `{ p99: 10%, throughput: 5% }`: metrics and how much worse each may get.
fn read_limits(cx: &mut Cx<'_>, node: &Node, path: &Path, what: &str) -> Option<Vec<HistoryLimit>> {
    let NodeKind::Map(entries) = &node.kind else {
        cx.error(
            Diagnostic::error(path, node.span, format!("{what} must be a mapping of metrics to limits"))
                .expected("a mapping such as `{ p99: 10%, throughput: 5% }`")
                .found(node.type_name()),
        );
        return None;
    };
    let mut out = Vec::new();
    let mut ok = true;
    for (key, value) in entries {
        let p = path.key(&key.name);
        let Ok(metric) = Metric::from_str(&key.name) else {
            let d = Diagnostic::error(&p, key.span, format!("`{}` is not a metric", key.name))
                .width(key.name.chars().count())
                .expected("a metric as an SLO names it: `p99`, `throughput`, `error_rate`, ...");
            let d = match did_you_mean(&key.name, Metric::names().iter().copied()) {
                Some(s) => d.help(format!("did you mean `{s}`?")),
                None => d,
            };
            cx.error(d);
            ok = false;
            continue;
        };
        match cx.unit::<Percent>(value, &p, &format!("the limit of `{}`", key.name)) {
            Some(l) => out.push(HistoryLimit { metric, worse_by: l.0 }),
            None => ok = false,
        }
    }
    if out.is_empty() && ok {
        cx.error(
            Diagnostic::error(path, node.span, format!("{what} names no metric"))
                .expected("at least one metric such as `p99: 10%`"),
        );
        ok = false;
    }
    ok.then_some(out)
}

/// `detection: { p_value, min_magnitude, min_segment, window }`.
fn read_detection(cx: &mut Cx<'_>, node: &Node, path: &Path) -> Option<Detection> {
    let f = cx.map(node, path, DETECTION_KEYS, "`history.detection`")?;
    let mut d = Detection::default();
    let mut ok = true;
    if let Some((n, p)) = f.get("p_value") {
        let value = match &n.kind {
            NodeKind::Float(x) => Some(*x),
            NodeKind::Int(i) => Some(*i as f64),
            _ => None,
        };
        match value {
            Some(x) if x > 0.0 && x < 1.0 => d.p_value = x,
            _ => {
                cx.error(
                    Diagnostic::error(&p, n.span, "`history.detection.p_value` is not a significance level")
                        .expected("a number between 0 and 1 (exclusive), such as 0.001")
                        .found(n.describe()),
                );
                ok = false;
            }
        }
    }
    if let Some((n, p)) = f.get("min_magnitude") {
        match cx.unit::<Percent>(n, &p, "`history.detection.min_magnitude`") {
            Some(m) if m.0 >= 0.0 => d.min_magnitude = m.0,
            Some(_) | None => ok = false,
        }
    }
    if let Some((n, p)) = f.get("min_segment") {
        match cx.uint(n, &p, "`history.detection.min_segment`", 1) {
            Some(m) if m <= MAX_WINDOW / 2 => d.min_segment = m as u32,
            Some(m) => {
                cx.error(
                    Diagnostic::error(&p, n.span, format!("a min_segment of {m} needs more runs than a window holds"))
                        .expected(format!("at most {}", MAX_WINDOW / 2)),
                );
                ok = false;
            }
            None => ok = false,
        }
    }
    if let Some((n, p)) = f.get("window") {
        match cx.uint(n, &p, "`history.detection.window`", 2) {
            Some(w) if w <= MAX_WINDOW => d.window = w as u32,
            Some(w) => {
                cx.error(
                    Diagnostic::error(
                        &p,
                        n.span,
                        format!("a window of {w} runs is more than loadgate analyses at once"),
                    )
                    .expected(format!("at most {MAX_WINDOW} runs")),
                );
                ok = false;
            }
            None => ok = false,
        }
    }
    if ok && d.window < 2 * d.min_segment {
        let (n, p) = f.get("window").or_else(|| f.get("min_segment")).map_or((node, path.clone()), |x| x);
        cx.error(
            Diagnostic::error(
                &p,
                n.span,
                format!("a window of {} runs cannot hold two segments of {}", d.window, d.min_segment),
            )
            .expected(format!("`window` at least twice `min_segment` ({})", 2 * d.min_segment)),
        );
        ok = false;
    }
    ok.then_some(d)
}
