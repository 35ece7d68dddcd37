//! `gating: { order: duet }` across sections: what a duet round cannot do, refused where the spec says it.
//!
//! A duet round loads both sides at once from the same workers (each with the phase's whole load), so it needs a
//! candidate; a closed loop would couple the sides (a slow side's connections take the other's turns), a capacity
//! search steps one target's rate, and an absolute threshold would judge a side measured beside another's load.

use loadgate_model::spec::{Load, Scenario};
use loadgate_model::{judged_over_repetitions, Gating, RoundOrder, Threshold};

use crate::diag::Diagnostic;
use crate::node::{Node, NodeKind, Path};
use crate::read::Cx;

/// Refuses, each where it is written, a duet without a candidate, and a gated scenario whose load is closed or a
/// capacity search or whose SLO judged over rounds has an absolute threshold.
pub(super) fn refuse_duet_misuse(
    cx: &mut Cx<'_>,
    g: &Gating,
    ab: bool,
    scenarios: &[Scenario],
    gating: Option<(&Node, Path)>,
    scenarios_node: Option<(&Node, Path)>,
) {
    if g.order != RoundOrder::Duet {
        return;
    }
    if !ab {
        let (path, span) = match &gating {
            Some((node, p)) => child(node, p, "order"),
            None => (Path::root(), None),
        };
        cx.error(
            Diagnostic::error(&path, span, "duet rounds need a candidate")
                .expected("a `candidate:` beside `target:`, loaded at the same instants")
                .help("a duet measures both builds at once so that machine-wide noise cancels; remove `order: duet` to repeat one target"),
        );
    }
    for s in scenarios.iter().filter(|s| s.gate) {
        let body = scenarios_node.as_ref().and_then(|(n, p)| Some((n.get(&s.name)?, p.key(&s.name))));
        let at = |key: &str| match &body {
            Some((node, p)) => child(node, p, key),
            None => (Path::root(), None),
        };
        let Some(cell) = s.cells.first() else { continue };
        let refused_load = match cell.load {
            Load::Closed { .. } => Some((
                "a closed loop cannot run in duet rounds",
                "a closed loop couples the sides: a slow side's connections hold the other's turns; use `open` at a rate both carry",
            )),
            Load::Capacity { .. } => Some((
                "a capacity search cannot run in duet rounds",
                "a search steps one target's rate; search each build on its own, or gate an `open` load at the rate found",
            )),
            _ => None,
        };
        if let Some((message, help)) = refused_load {
            // At the load's model (`closed`, `capacity`) when the load is a mapping of one.
            let model = body.as_ref().and_then(|(node, p)| match &node.get("load")?.kind {
                NodeKind::Map(entries) => entries.first().map(|(k, v)| (p.key("load").key(&k.name), v.span.or(k.span))),
                _ => None,
            });
            let (path, span) = model.unwrap_or_else(|| at("load"));
            cx.error(
                Diagnostic::error(&path, span, message)
                    .expected("an open load (`open`, `ramp` or `users`) in a duet")
                    .help(help),
            );
        }
        let slo_items: Option<(&[Node], Path)> = body.as_ref().and_then(|(node, p)| match node.get("slo") {
            Some(Node { kind: NodeKind::Seq(items), .. }) => Some((&items[..], p.key("slo"))),
            _ => None,
        });
        // Every cell's objectives (a matrix may give each its own threshold), each refused once.
        let mut refused: Vec<(usize, String)> = Vec::new();
        for (i, slo) in s.cells.iter().flat_map(|c| c.slos.iter().enumerate()) {
            // Latencies, rates and CPU per request against a fixed number, per request or over rounds: each side
            // is measured beside the other's load. Counts and ratios (`errors == 0`) mean what they say.
            let absolute = matches!(slo.threshold, Threshold::Latency(_) | Threshold::Rate(_))
                || (judged_over_repetitions(slo) && !matches!(slo.threshold, Threshold::Baseline { .. }));
            if !absolute || refused.iter().any(|(j, text)| *j == i && *text == slo.to_string()) {
                continue;
            }
            refused.push((i, slo.to_string()));
            let (path, span) = match &slo_items {
                Some((items, p)) if items.len() == cell.slos.len() => (p.index(i), items[i].span),
                _ => at("slo"),
            };
            cx.error(
                Diagnostic::error(&path, span, format!("`{slo}` has an absolute threshold, which a duet round cannot judge"))
                    .expected(format!(
                        "a threshold relative to the target: `{} {} baseline * {}`",
                        slo.metric,
                        slo.comparison.as_str(),
                        if slo.comparison.as_str().starts_with('<') { "1.05" } else { "0.95" }
                    ))
                    .help("in a duet each side is measured beside the other's load (the generator sends twice the load), so only the ratio B / A means what it says"),
            );
        }
    }
}

/// Where `key` of the mapping `node` (at `path`) is written, else the mapping itself.
fn child(node: &Node, path: &Path, key: &str) -> (Path, Option<crate::node::Span>) {
    match node.get(key) {
        Some(n) => (path.key(key), n.span.or(node.span)),
        None => (path.clone(), node.span),
    }
}
