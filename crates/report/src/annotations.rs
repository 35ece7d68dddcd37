//! GitHub Actions annotations: the workflow commands (`::error title=...::message`) that make a failed SLO show
//! on the run's summary page and in the pull request, printed by `loadgate run` on GitHub Actions.
//!
//! One `::error` per failed SLO of a gated instance, per gated instance that is invalid as a measurement, per
//! reason a run could not be carried out, and one for a run that did not finish (interrupted); one `::warning`
//! per INCONCLUSIVE check (an `::error` when `on_inconclusive: fail` counts it as a failure, and each says when
//! `on_inconclusive` counted it as a failure or a pass). Each names the spec file (`file=`) when the spec came from one, so GitHub attaches it
//! to that file.

use loadgate_results::{OutcomeStatus, RunResults, StatisticalStatus};

/// The workflow commands for one run, one line each, without a trailing newline.
pub fn github_annotations(results: &RunResults) -> Vec<String> {
    let spec = &results.spec.name;
    let file = Some(results.spec.file.as_str()).filter(|f| !f.is_empty() && !f.starts_with('('));
    let command = |level: &str, title: String, message: String| {
        let mut properties = Vec::new();
        if let Some(f) = file {
            properties.push(format!("file={}", escape_property(f)));
        }
        properties.push(format!("title={}", escape_property(&title)));
        format!("::{level} {}::{}", properties.join(","), escape_data(&message))
    };
    let counted_as = crate::inconclusive_counted_as(results);
    let mut lines = Vec::new();
    for s in results.scenarios.iter().filter(|s| s.gate) {
        for v in &s.judged.verdicts {
            let inconclusive = v.statistics.as_ref().filter(|st| st.status == StatisticalStatus::Inconclusive);
            if let Some(st) = inconclusive {
                let (level, counted) = match &counted_as {
                    Some((OutcomeStatus::SloFailed, origin)) => {
                        ("error", format!(", counted as a failure by {origin}"))
                    }
                    Some((_, origin)) => ("warning", format!(", counted as a pass by {origin}")),
                    None => ("warning", String::new()),
                };
                lines.push(command(
                    level,
                    format!("loadgate {spec}: {}: {} is INCONCLUSIVE{counted}", s.name, v.slo),
                    format!("{} ({}){counted}", v.explain(), st.reason),
                ));
            } else if !v.passed {
                let mut message = v.explain();
                if let Some(w) = loadgate_results::frames::verdict_where(s, v) {
                    message.push_str(&format!("; {w}"));
                }
                if let Some(why) = &s.aborted {
                    message.push_str(&format!("; the phase was stopped early: {why}"));
                }
                lines.push(command("error", format!("loadgate {spec}: {}: SLO {} failed", s.name, v.slo), message));
            }
        }
        if !s.validity.valid {
            let problems: Vec<String> =
                loadgate_results::each_kind_once(&s.validity.problems).into_iter().map(|p| p.message).collect();
            lines.push(command(
                "error",
                format!("loadgate {spec}: {}: invalid measurement", s.name),
                format!(
                    "the generator did not deliver what the plan asked, so these numbers describe loadgate, not the target: {}",
                    if problems.is_empty() { "see the report".to_owned() } else { problems.join("; ") }
                ),
            ));
        }
    }
    match results.outcome.status {
        OutcomeStatus::RunFailed => {
            for reason in &results.outcome.reasons {
                lines.push(command(
                    "error",
                    format!("loadgate {spec}: the run could not be carried out"),
                    reason.clone(),
                ));
            }
        }
        // The reasons are ordered by precedence, so an incomplete run's first one is why it did not finish.
        OutcomeStatus::Incomplete => lines.push(command(
            "error",
            format!("loadgate {spec}: the run did not finish (interrupted)"),
            format!(
                "{}; the results cover the phases that ran, and the run exits {}",
                results.outcome.reasons.first().map_or("the run did not finish", String::as_str),
                results.outcome.exit_code
            ),
        )),
        _ => {}
    }
    lines
}

/// A workflow command's message: `%`, CR and LF escaped.
fn escape_data(text: &str) -> String {
    text.replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A")
}

/// A workflow command's property value: also `:` and `,`.
fn escape_property(text: &str) -> String {
    escape_data(text).replace(':', "%3A").replace(',', "%2C")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_slos_become_errors_with_escaped_properties() {
        let mut r = loadgate_results::fixture::sample_run();
        r.spec.file = "specs/a,b.yaml".to_owned();
        let s = &mut r.scenarios[0];
        s.gate = true;
        s.name = "plaintext[connections=256]".to_owned();
        s.judged.verdicts[0].passed = false;
        s.judged.verdicts[0].statistics = None;
        let lines = github_annotations(&r);
        let line = lines.iter().find(|l| l.starts_with("::error ")).expect("an error line");
        assert!(line.starts_with("::error file=specs/a%2Cb.yaml,title=loadgate "), "{line}");
        assert!(line.contains("plaintext[connections=256]%3A SLO "), "{line}");
        assert!(line.contains(&format!("::{}", escape_data(&r.scenarios[0].judged.verdicts[0].explain()))), "{line}");
        assert!(lines.iter().all(|l| !l.contains('\n')));
        assert_eq!(escape_data("50%\nnext"), "50%25%0Anext");
    }

    #[test]
    fn a_passing_run_has_no_annotations() {
        let mut r = loadgate_results::fixture::sample_run();
        for s in &mut r.scenarios {
            s.validity.valid = true;
            for v in &mut s.judged.verdicts {
                v.passed = true;
                v.statistics = None;
            }
        }
        r.outcome.status = OutcomeStatus::Passed;
        assert!(github_annotations(&r).is_empty());
    }
}
