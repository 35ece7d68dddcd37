//! `gating`: how gated scenario instances are repeated and judged.

use crate::diag::Diagnostic;
use crate::node::{Node, Path};
use crate::read::Cx;
use crate::units::Percent;
use crate::{Gating, OnInconclusive, Restart, RoundOrder};

use super::fields::read_choice;
use super::keys::GATING_KEYS;

/// The most repetitions a spec may ask for: a bound on what a pull request can make a CI runner do.
pub(crate) const MAX_REPEAT: u64 = 1000;

/// Reads `gating: { repeat, max_repeat, restart, confidence, on_inconclusive, order, rerun_invalid, detect,
/// budget }`.
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
            Some(m) => {
                g.max_repeat = m;
                g.max_repeat_given = true;
            }
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
        match read_choice(
            cx,
            n,
            &p,
            "`order`",
            &[("abba", RoundOrder::Abba), ("shuffle", RoundOrder::Shuffle), ("duet", RoundOrder::Duet)],
        ) {
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
    ok &= read_power(cx, &f, &mut g);
    ok.then_some(g)
}

/// The smallest `gating.detect` (0.5%) and the largest (90%): below, no runner tells it; above, a change is no
/// longer small.
const DETECT_RANGE: (f64, f64) = (0.005, 0.90);

/// The longest `gating.budget`: a day of load, a bound on what a pull request can make a CI runner do.
const MAX_BUDGET: std::time::Duration = std::time::Duration::from_secs(86_400);

/// `gating.detect` and `gating.budget`: the change to catch and the load it may cost. `detect` alone gets
/// [`loadgate_model::DEFAULT_BUDGET`]; either without `repeat` gets [`loadgate_model::DEFAULT_PILOT`] pilot
/// rounds; `detect` refuses a written `max_repeat` (the plan chooses the rounds; the budget caps them).
fn read_power(cx: &mut Cx<'_>, f: &crate::read::Fields<'_>, g: &mut Gating) -> bool {
    let mut ok = true;
    if let Some((n, p)) = f.get("detect") {
        match cx.unit::<Percent>(n, &p, "`detect`") {
            Some(d) if (DETECT_RANGE.0..=DETECT_RANGE.1).contains(&d.0) => g.detect = Some(d.0),
            Some(d) => {
                cx.error(
                    Diagnostic::error(&p, n.span, format!("a change of {d} cannot be planned for"))
                        .expected("a percentage from 0.5% to 90%")
                        .help("the smallest change that must not pass: 10% is a common gate for p99"),
                );
                ok = false;
            }
            None => ok = false,
        }
        if let (Some(_), Some((m, mp))) = (g.detect, f.get("max_repeat")) {
            cx.error(
                Diagnostic::error(&mp, m.span, "`max_repeat` fixes the rounds, and `detect` plans them")
                    .expected("either `detect` (with `budget`) or `repeat`/`max_repeat`")
                    .help("`budget` caps the load a planned verdict may take; remove `max_repeat`"),
            );
            ok = false;
        }
    }
    if let Some((n, p)) = f.get("budget") {
        match cx.unit::<crate::units::Duration>(n, &p, "`budget`") {
            Some(b) if b.0.is_zero() || b.0 > MAX_BUDGET => {
                cx.error(
                    Diagnostic::error(&p, n.span, format!("a budget of {b} cannot hold a verdict"))
                        .expected("a duration above 0s, at most 24h")
                        .help("the most load time one gated scenario's verdict may take: 3m is common in CI"),
                );
                ok = false;
            }
            Some(b) => g.budget = Some(b),
            None => ok = false,
        }
    }
    if g.detect.is_some() && g.budget.is_none() && f.get("budget").is_none() {
        g.budget = Some(crate::units::Duration(loadgate_model::DEFAULT_BUDGET));
    }
    if ok && g.budget.is_some() && f.get("repeat").is_none() {
        let pilot = loadgate_model::DEFAULT_PILOT;
        g.repeat = if g.max_repeat_given { pilot.min(g.max_repeat) } else { pilot };
        if !g.max_repeat_given {
            g.max_repeat = g.repeat;
        }
    }
    ok
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

/// A confidence for people: `90%`, `97.5%`, `99.17%`.
fn percent(c: f64) -> String {
    let text = format!("{:.2}", c * 100.0);
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text}%")
}

/// What a gated scenario's rounds can decide, for [`warn_about_undecidable_checks`].
struct Design {
    /// Checks with an absolute limit (judged over repetitions when a look has more than one round).
    absolute: usize,
    /// Checks relative to a baseline: paired rounds in an A/B run, else a stored baseline.
    relative: usize,
    /// The rounds of each look with the confidence it is judged at.
    looks: Vec<(u32, f64)>,
    /// Whether the looks are sequential mode's (`gating.max_repeat`), not the scenario's own `repeat`.
    sequential: bool,
    /// Whether the scenario sets its own `repeat`.
    own_repeat: bool,
}

/// The rounds a look needs to PASS a check and to FAIL one, among the checks it judges; `None` when it judges
/// none over repetitions.
fn needs(d: &Design, rounds: u32, confidence: f64, ab: bool) -> Option<(u32, u32, usize)> {
    use loadgate_model::{fewest_rounds, Sampling};
    let absolute = if rounds > 1 { d.absolute } else { 0 };
    let family = absolute + d.relative;
    if family == 0 {
        return None;
    }
    let mut kinds = Vec::new();
    if absolute > 0 {
        kinds.push(Sampling::OneSetOrPaired);
    }
    if d.relative > 0 {
        // Against a stored baseline the size is the baseline's: assume as many repetitions as this run's.
        kinds.push(if ab { Sampling::OneSetOrPaired } else { Sampling::Unpaired { baseline: None } });
    }
    let side = (1.0 - confidence) / 2.0;
    let most = |alpha: f64| kinds.iter().map(|k| fewest_rounds(*k, alpha).unwrap_or(u32::MAX)).max().unwrap_or(0);
    Some((most(side), most(side / family as f64), family))
}

/// Warns when a gated scenario's design can never decide a check over its repetitions, or when sequential
/// mode's first look can decide none: the intervals are exact and discrete, so with too few rounds every verdict
/// is INCONCLUSIVE however clear the data (`loadgate_model::fewest_rounds`). A PASS is decided per check at
/// the look's confidence; a FAIL shares the false-FAIL budget over the instance's checks (Holm), so it needs more
/// rounds with every check. Located at the scenario's own `repeat`, else at the `gating` block (or `candidate`).
pub(super) fn warn_about_undecidable_checks(
    cx: &mut Cx<'_>,
    g: &Gating,
    ab: bool,
    scenarios: &[loadgate_model::Scenario],
    gating: Option<(&Node, Path)>,
    candidate: Option<(&Node, Path)>,
    scenarios_node: Option<(&Node, Path)>,
) {
    let rounds_of = |s: &loadgate_model::Scenario| {
        let runs = s.repeat.unwrap_or(g.repeat).max(1);
        let most = if s.repeat.is_none() { g.max_repeat.max(runs) } else { runs };
        (runs, most)
    };
    // Verdicts come from statistics only when some instance runs more than once, or on two sides.
    if !ab && !scenarios.iter().any(|s| s.gate && rounds_of(s).1 > 1) {
        return;
    }
    // One warning per message, naming every scenario it applies to.
    let mut found: Vec<Found> = Vec::new();
    for s in scenarios.iter().filter(|s| s.gate) {
        let (runs, _) = rounds_of(s);
        let sequential = s.repeat.is_none() && g.sequential();
        let looks: Vec<(u32, f64)> = if sequential {
            g.looks().into_iter().enumerate().map(|(k, n)| (n, g.look_confidence(k))).collect()
        } else {
            vec![(runs, g.confidence)]
        };
        let count = |c: &loadgate_model::Cell, relative: bool| {
            c.slos
                .iter()
                .filter(|slo| {
                    loadgate_model::judged_over_repetitions(slo)
                        && matches!(slo.threshold, loadgate_model::Threshold::Baseline { .. }) == relative
                })
                .count()
        };
        let Some(design) = s
            .cells
            .iter()
            .map(|c| Design {
                absolute: count(c, false),
                relative: count(c, true),
                looks: looks.clone(),
                sequential,
                own_repeat: s.repeat.is_some(),
            })
            .max_by_key(|d| d.absolute + d.relative)
        else {
            continue;
        };
        let Some(found_one) = undecidable(&design, ab) else { continue };
        let (message, help, key) = found_one;
        // Where: the scenario's own `repeat`, else the gating block's key the message is about, else the block,
        // else `candidate`.
        let own = s.repeat.and_then(|_| {
            let (node, p) = scenarios_node.as_ref()?;
            let body = node.get(&s.name)?;
            let n = body.get("repeat")?;
            Some((p.key(&s.name).key("repeat"), n.span))
        });
        let (path, span) = own
            .or_else(|| {
                let (node, p) = gating.as_ref()?;
                node.get(key).map(|n| (p.key(key), n.span)).or(Some((p.clone(), node.span)))
            })
            .or_else(|| candidate.as_ref().map(|(n, p)| (p.clone(), n.span)))
            .unwrap_or((Path::root(), None));
        match found.iter_mut().find(|f| f.message == message && f.path == path) {
            Some(entry) => entry.names.push(s.name.clone()),
            None => found.push(Found { message, help, path, span, names: vec![s.name.clone()] }),
        }
    }
    for Found { message, help, path, span, names } in found {
        let who = if names.len() == 1 {
            format!("scenario `{}`", names[0])
        } else {
            format!("scenarios {}", names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", "))
        };
        cx.error(Diagnostic::warning(&path, span, format!("{who}: {message}")).help(help));
    }
}

/// One warning about undecidable checks: its message and fix, where it points, and the scenarios it names.
struct Found {
    message: String,
    help: String,
    path: Path,
    span: Option<crate::node::Span>,
    names: Vec<String>,
}

/// What a design cannot decide: the message, its fix, and the `gating` key it is about (`repeat` or
/// `max_repeat`); `None` when its last look can PASS and FAIL a check and its first look can decide one.
fn undecidable(d: &Design, ab: bool) -> Option<(String, String, &'static str)> {
    let &(last, last_confidence) = d.looks.last()?;
    let (pass, fail, family) = needs(d, last, last_confidence, ab)?;
    let rounds = |n: u32| if n == 1 { "1 round".to_owned() } else { format!("{n} rounds") };
    let seq = d.sequential && d.looks.len() > 1;
    let c = percent(last_confidence);
    let (subject, interval, holm, key) = if seq {
        let judged = format!("it is judged at {c} (half the error budget is kept for it)");
        (
            format!("sequential mode's last look, after {}, ", rounds(last)),
            format!("{judged}, where an exact interval needs"),
            format!("{judged}, and Holm's correction shares its false-FAIL budget"),
            "max_repeat",
        )
    } else {
        (
            format!("{} ", rounds(last)),
            format!("an exact interval at {c} confidence needs"),
            format!("Holm's correction shares the false-FAIL budget of {c} confidence"),
            "repeat",
        )
    };
    let raise = |need: u32| match (seq, d.own_repeat) {
        (true, _) => format!("raise `gating.max_repeat` to {need} or more"),
        (false, true) => format!("set this scenario's `repeat: {need}` or more"),
        (false, false) => format!("set `gating.repeat: {need}` or more"),
    };
    if last < pass {
        let checks = if family == 1 { "its check".to_owned() } else { format!("any of its {family} checks") };
        return Some((
            format!(
                "{subject}cannot decide {checks}: {interval} {}, so every verdict over the \
                 repetitions will be INCONCLUSIVE (exit 5), however clear the data",
                rounds(pass)
            ),
            if fail > pass {
                format!("{} ({} to be able to FAIL one of {family} checks)", raise(pass), fail)
            } else {
                raise(pass)
            },
            key,
        ));
    }
    if last < fail {
        let alpha = (1.0 - last_confidence) / 2.0 / family as f64;
        return Some((
            format!(
                "{subject}can PASS its {family} checks but never FAIL one: {holm} over the {family} checks, so a FAIL is judged at a one-sided {} and needs {}; a \
                 check that misses its limit in every round ends INCONCLUSIVE (exit 5)",
                percent(alpha),
                rounds(fail)
            ),
            format!("{}, or gate on fewer latency and throughput SLOs", raise(fail)),
            key,
        ));
    }
    if seq {
        let &(first, first_confidence) = d.looks.first()?;
        let (pass, _, _) = needs(d, first, first_confidence, ab)?;
        let blind: Vec<String> = d.looks.iter().filter(|(n, _)| *n < pass).map(|(n, _)| n.to_string()).collect();
        if !blind.is_empty() {
            return Some((
                format!(
                    "sequential mode's look{} after {} rounds can decide no check: an early look is judged at {} \
                     (its share of the error budget), where an exact interval needs {}; such a look spends budget \
                     and decides nothing",
                    if blind.len() == 1 { "" } else { "s" },
                    blind.join(", "),
                    percent(first_confidence),
                    rounds(pass)
                ),
                format!("start at `gating.repeat: {pass}` or more"),
                "repeat",
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    fn gating(block: &str) -> loadgate_model::Gating {
        let yaml = format!(
            "version: 1\nname: g\ntarget: {{ builtin: plaintext }}\ngating: {block}\nscenarios:\n  main:\n    request: {{ path: / }}\n    load: {{ closed: {{ connections: 1, duration: 1s }} }}\n"
        );
        crate::load_str("g.yaml", &yaml, &crate::LoadOptions::default()).unwrap().gating
    }

    #[test]
    fn detect_alone_gets_the_default_budget_and_pilot() {
        let g = gating("{ detect: 10% }");
        assert_eq!(g.detect, Some(0.10));
        assert_eq!(g.budget.map(|b| b.0), Some(loadgate_model::DEFAULT_BUDGET));
        assert_eq!((g.repeat, g.max_repeat), (loadgate_model::DEFAULT_PILOT, loadgate_model::DEFAULT_PILOT));
        assert!(g.sequential() && g.budgeted());
        let g = gating("{ detect: 5%, budget: 90s, repeat: 6 }");
        assert_eq!((g.repeat, g.budget.map(|b| b.0.as_secs())), (6, Some(90)));
    }

    #[test]
    fn budget_alone_caps_sequential_mode_and_a_written_max_repeat_stays_a_cap() {
        let g = gating("{ budget: 2m }");
        assert_eq!((g.detect, g.repeat), (None, loadgate_model::DEFAULT_PILOT));
        let g = gating("{ budget: 2m, max_repeat: 5 }");
        assert_eq!((g.repeat, g.max_repeat), (5, 5), "the pilot within max_repeat");
        let g = gating("{ budget: 2m, repeat: 6, max_repeat: 30 }");
        assert_eq!((g.repeat, g.max_repeat), (6, 30));
    }
}
