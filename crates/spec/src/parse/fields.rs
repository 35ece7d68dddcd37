//! Helpers the sections share: a word of a fixed set, a mapping of strings, a positive duration, a scenario's
//! name, where a load sets a key.

use std::collections::BTreeMap;

use crate::diag::Diagnostic;
use crate::node::{Node, NodeKind, Path, Span};
use crate::read::{list, Cx};
use crate::suggest::did_you_mean;
use crate::units::Duration;

/// Where a scenario's `load` sets `key`: the key's value (`load.<model>.<key>`), else the `load` itself.
pub(super) fn key_node(load: &Node, path: Path, key: &str) -> (Path, Option<Span>) {
    if let NodeKind::Map(models) = &load.kind {
        for (model, body) in models {
            if let Some(n) = body.get(key) {
                return (path.key(&model.name).key(key), n.span);
            }
        }
    }
    (path, load.span)
}

pub(super) fn valid_scenario_name(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
}

/// Reads one of a fixed set of words (`never`, `each_round`) into its value; an unknown word is an error that
/// lists the options and suggests the nearest.
pub(super) fn read_choice<T: Copy>(
    cx: &mut Cx<'_>,
    node: &Node,
    path: &Path,
    what: &str,
    options: &[(&str, T)],
) -> Option<T> {
    let word = cx.string(node, path, what)?;
    match options.iter().find(|(w, _)| *w == word) {
        Some((_, v)) => Some(*v),
        None => {
            let names: Vec<&str> = options.iter().map(|(w, _)| *w).collect();
            cx.error(enum_error(path, node, what, &word, &names));
            None
        }
    }
}

pub(super) fn enum_error(path: &Path, node: &Node, what: &str, found: &str, options: &[&str]) -> Diagnostic {
    let d = Diagnostic::error(path, node.span, format!("{what} has no option `{found}`"))
        .expected(format!("one of {}", list(options)))
        .found(node.describe());
    match did_you_mean(found, options.iter().copied()) {
        Some(s) => d.help(format!("did you mean `{s}`?")),
        None => d,
    }
}

pub(super) fn read_string_map(
    cx: &mut Cx<'_>,
    node: &Node,
    path: &Path,
    what: &str,
    out: &mut BTreeMap<String, String>,
) -> bool {
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

pub(super) fn positive_duration(cx: &mut Cx<'_>, n: &Node, p: &Path, what: &str) -> Option<Duration> {
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
