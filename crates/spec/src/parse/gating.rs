//! `gating`: how gated scenario instances are repeated and judged.

use crate::diag::Diagnostic;
use crate::node::{Node, Path};
use crate::read::Cx;
use crate::units::Percent;
use crate::{Gating, OnInconclusive, Restart, RoundOrder};

use super::{read_choice, GATING_KEYS};

/// The most repetitions a spec may ask for: a bound on what a pull request can make a CI runner do.
pub(crate) const MAX_REPEAT: u64 = 1000;

/// Reads `gating: { repeat, max_repeat, restart, confidence, on_inconclusive, order, rerun_invalid }`.
pub(super) fn read_gating(cx: &mut Cx<'_>, node: &Node, path: &Path) -> Option<Gating> {
    let f = cx.map(node, path, GATING_KEYS, "`gating`")?;
    let mut g = Gating::default();
    let mut ok = true;
    if let Some((n, p)) = f.get("repeat") {
        match read_repeat(cx, n, &p, "`gating.repeat`") {
            Some(r) => g.repeat = r,
            None => ok = false,
        }
    }
    g.max_repeat = g.repeat;
    if let Some((n, p)) = f.get("max_repeat") {
        match read_repeat(cx, n, &p, "`gating.max_repeat`") {
            Some(m) if m < g.repeat => {
                cx.error(
                    Diagnostic::error(&p, n.span, format!("`max_repeat` ({m}) is below `repeat` ({})", g.repeat))
                        .expected("at least as many rounds as `repeat`")
                        .help("`max_repeat` is where adding rounds to an inconclusive verdict stops"),
                );
                ok = false;
            }
            Some(m) => g.max_repeat = m,
            None => ok = false,
        }
    }
    if let Some((n, p)) = f.get("restart") {
        match read_choice(cx, n, &p, "`restart`", &[("never", Restart::Never), ("each_round", Restart::EachRound)]) {
            Some(v) => g.restart = v,
            None => ok = false,
        }
    }
    if let Some((n, p)) = f.get("confidence") {
        match cx.unit::<Percent>(n, &p, "`confidence`") {
            Some(c) if (0.5..1.0).contains(&c.0) => g.confidence = c.0,
            Some(c) => {
                cx.error(
                    Diagnostic::error(&p, n.span, format!("a confidence of {c} cannot make an interval"))
                        .expected("a percentage from 50% up to (not including) 100%")
                        .help("90% (the default) decides with 5 repetitions; 95% needs 6, 99% needs 8"),
                );
                ok = false;
            }
            None => ok = false,
        }
    }
    if let Some((n, p)) = f.get("on_inconclusive") {
        match read_choice(
            cx,
            n,
            &p,
            "`on_inconclusive`",
            &[
                ("inconclusive", OnInconclusive::Inconclusive),
                ("fail", OnInconclusive::Fail),
                ("pass", OnInconclusive::Pass),
            ],
        ) {
            Some(v) => g.on_inconclusive = v,
            None => ok = false,
        }
    }
    if let Some((n, p)) = f.get("order") {
        match read_choice(cx, n, &p, "`order`", &[("abba", RoundOrder::Abba), ("shuffle", RoundOrder::Shuffle)]) {
            Some(v) => g.order = v,
            None => ok = false,
        }
    }
    if let Some((n, p)) = f.get("rerun_invalid") {
        match cx.uint(n, &p, "`gating.rerun_invalid`", 0) {
            Some(r) if r > MAX_RERUN_INVALID => {
                cx.error(
                    Diagnostic::error(&p, n.span, format!("`rerun_invalid` of {r} would hide a generator that cannot carry the load"))
                        .expected(format!("at most {MAX_RERUN_INVALID} rounds run again"))
                        .help("a few (the default is 3) cover a noisy runner's stalls; give the generator more CPUs when rounds are invalid often"),
                );
                ok = false;
            }
            Some(r) => g.rerun_invalid = u32::try_from(r).unwrap_or(u32::MAX),
            None => ok = false,
        }
    }
    ok.then_some(g)
}

/// The most rounds invalid as a measurement that a spec may have run again per instance.
pub(crate) const MAX_RERUN_INVALID: u64 = 100;

/// A repetition count: 1 to [`MAX_REPEAT`].
pub(super) fn read_repeat(cx: &mut Cx<'_>, node: &Node, path: &Path, what: &str) -> Option<u32> {
    let n = cx.uint(node, path, what, 1)?;
    if n > MAX_REPEAT {
        cx.error(
            Diagnostic::error(path, node.span, format!("{what} of {n} is more than loadgate runs"))
                .expected(format!("at most {MAX_REPEAT} repetitions"))
                .help("5 to 10 repetitions usually tell a 10% change apart on a noisy runner"),
        );
        return None;
    }
    u32::try_from(n).ok()
}
