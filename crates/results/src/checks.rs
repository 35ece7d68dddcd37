//! Response checks (`check:`) in results: adding their counts, the warning when they failed and no SLO reads
//! them, and how reports word them.
//!
//! - [`add_checks`] adds the checks of another part (a repetition, a shard) by (request, check), keeping the
//!   first examples up to [`MAX_CHECK_EXAMPLES`] in part order;
//! - [`warn_ungated`] puts a `checks_failed_ungated` warning per failing check on an instance whose SLOs read no
//!   check (no `checks` or `check_failures`, and no `error_rate` under `failed_checks: errors`): `` `login`: 20 of
//!   1,000 responses failed `capture:token`, and no SLO gates checks ``. The merge of parts that carried it
//!   carries it again for the merged counts ([`crate::merge_scenarios`]);
//! - [`held`] and [`example_text`] are the words every report uses.

use loadgate_model::{FailedChecks, Metric, Slo};

use crate::format;
use crate::model::{CheckExample, CheckStats, Problem, ScenarioResult};

pub use loadgate_measure::MAX_CHECK_EXAMPLES;

/// The kind of the warning on checks that failed with no SLO reading them.
pub const UNGATED: &str = "checks_failed_ungated";

/// Adds `other`'s checks into `into`, by (request, check): counts summed, the first examples kept (at most
/// [`MAX_CHECK_EXAMPLES`] per check); a check only `other` has is appended.
pub fn add_checks(into: &mut Vec<CheckStats>, other: &[CheckStats]) {
    for c in other {
        match into.iter_mut().find(|q| q.request == c.request && q.check == c.check) {
            Some(q) => *q += c,
            None => {
                let mut c = c.clone();
                c.examples.truncate(MAX_CHECK_EXAMPLES);
                into.push(c);
            }
        }
    }
}

/// Whether any of these SLOs reads the outcome of checks: a `checks` or `check_failures` SLO, or an
/// `error_rate` SLO when failed checks count as errors.
pub fn gated(slos: &[Slo], failed_checks: FailedChecks) -> bool {
    slos.iter().any(|slo| match slo.metric {
        Metric::Checks | Metric::CheckFailures => true,
        Metric::ErrorRate => failed_checks == FailedChecks::Errors,
        _ => false,
    })
}

/// The `checks_failed_ungated` warnings of an instance whose SLOs read no check: one per check that failed,
/// `` `login`: 20 of 1,000 responses failed `capture:token`, and no SLO gates checks ``.
pub fn ungated_warnings(s: &ScenarioResult) -> Vec<Problem> {
    s.checks
        .iter()
        .filter(|c| c.failed > 0)
        .map(|c| Problem {
            kind: UNGATED.to_owned(),
            message: format!(
                "`{}`: {} of {} responses failed `{}`, and no SLO gates checks",
                c.request,
                format::count(c.failed),
                format::count(c.passed.saturating_add(c.failed)),
                c.check
            ),
        })
        .collect()
}

/// Replaces the instance's `checks_failed_ungated` warnings with those its counts give now, when none of `slos`
/// reads checks ([`gated`]); removes them otherwise. Call it after the SLOs are judged.
pub fn warn_ungated(s: &mut ScenarioResult, slos: &[Slo]) {
    s.validity.warnings.retain(|w| w.kind != UNGATED);
    if !gated(slos, s.failed_checks) {
        let warnings = ungated_warnings(s);
        s.validity.warnings.extend(warnings);
    }
}

/// Evaluations of these checks that held and all evaluations: `(passed, passed + failed)`.
pub fn totals(checks: &[CheckStats]) -> (u64, u64) {
    checks.iter().fold((0, 0), |(p, t), c| (p + c.passed, t + c.passed + c.failed))
}

/// The share of evaluations that held, for people: `99.75%`, cut (never rounded) to two decimals so that a
/// single failure never reads as `100%`; `100%` only when every evaluation held.
pub fn held(passed: u64, evaluated: u64) -> String {
    if evaluated == 0 {
        return "n/a".to_owned();
    }
    if passed >= evaluated {
        return "100%".to_owned();
    }
    let basis_points = u128::from(passed) * 10_000 / u128::from(evaluated);
    format!("{}.{:02}%", basis_points / 100, basis_points % 100)
}

/// A failing response in one line: `200 application/xml, Content-Type was "application/xml"; body starts
/// <?xml …`. The body's start is cut to `body_chars` characters (with `…` when cut).
pub fn example_text(e: &CheckExample, body_chars: usize) -> String {
    let mut text = if e.status == 0 { "not sent".to_owned() } else { e.status.to_string() };
    if !e.content_type.is_empty() {
        text.push(' ');
        text.push_str(&e.content_type);
    }
    if !e.observed.is_empty() {
        text.push_str(", ");
        text.push_str(&e.observed);
    }
    if !e.body_start.is_empty() {
        text.push_str("; body starts ");
        text.push_str(&cut(&e.body_start, body_chars));
    } else if e.body_len > 0 {
        text.push_str(&format!("; body of {}", format::bytes(e.body_len)));
    }
    text
}

/// `text` cut to `chars` characters, ending with `…` when cut (or when it already did).
pub fn cut(text: &str, chars: usize) -> String {
    if text.chars().count() <= chars {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(chars).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(request: &str, check: &str, passed: u64, failed: u64, examples: usize) -> CheckStats {
        CheckStats {
            request: request.to_owned(),
            check: check.to_owned(),
            expects: format!("{check} holds"),
            passed,
            failed,
            examples: (0..examples)
                .map(|i| CheckExample {
                    status: 200 + i as u16,
                    observed: format!("{request} {i}"),
                    ..Default::default()
                })
                .collect(),
        }
    }

    #[test]
    fn checks_add_by_request_and_name_keeping_the_first_examples() {
        let mut into = vec![stats("a", "status", 10, 2, 2), stats("b", "status", 5, 0, 0)];
        add_checks(
            &mut into,
            &[stats("b", "status", 1, 1, 3), stats("a", "status", 3, 4, 3), stats("a", "x", 1, 0, 0)],
        );
        assert_eq!(into.len(), 3);
        assert_eq!((into[0].passed, into[0].failed), (13, 6));
        let statuses: Vec<u16> = into[0].examples.iter().map(|e| e.status).collect();
        assert_eq!(statuses, [200, 201, 200], "the first part's first, then the next part's");
        assert_eq!((into[1].passed, into[1].failed, into[1].examples.len()), (6, 1, 3));
        assert_eq!((into[2].request.as_str(), into[2].check.as_str()), ("a", "x"));
    }

    #[test]
    fn held_never_rounds_a_failure_up_to_all() {
        assert_eq!(held(39_900, 40_000), "99.75%");
        assert_eq!(held(999_999, 1_000_000), "99.99%");
        assert_eq!(held(5, 5), "100%");
        assert_eq!(held(0, 5), "0.00%");
        assert_eq!(held(0, 0), "n/a");
    }

    #[test]
    fn an_example_reads_in_one_line() {
        let e = CheckExample {
            status: 200,
            content_type: "application/xml".to_owned(),
            observed: "Content-Type was \"application/xml\"".to_owned(),
            body_start: "<?xml version='1.0'?>".to_owned(),
            body_len: 522,
        };
        assert_eq!(
            example_text(&e, 5),
            "200 application/xml, Content-Type was \"application/xml\"; body starts <?xml…"
        );
        let unsent = CheckExample { observed: "$.token not found".to_owned(), ..Default::default() };
        assert_eq!(example_text(&unsent, 10), "not sent, $.token not found");
    }
}
