//! JUnit XML, written with `quick-junit`.
//!
//! One `<testsuite>` per spec (named after it), and per scenario instance:
//!
//! - one testcase per SLO, named `plaintext[connections=256]: p99 < 100ms`, classname the spec's name, the
//!   wrk-like summary of the instance in `<system-out>`; the instance's first testcase carries the time its load
//!   ran, the others 0 (checking an SLO takes no time), so the testcases add up to the time the load ran:
//!   - a failed SLO is a `<failure type="slo">` whose message is observed against threshold
//!     (`p99 was 143.2ms, threshold < 100ms`);
//!   - an SLO that was not evaluated (no baseline, a per-request SLO) is `<skipped>` with the reason;
//!   - every SLO of a `gate: false` phase (warmup, primer) is `<skipped>`: it was measured and reported but
//!     never gated, and the message still carries observed against threshold so the numbers show in CI;
//!   - an INCONCLUSIVE check (over repetitions or A/B) is `<skipped>` with its reason; with `on_inconclusive:
//!     fail` (`--on-inconclusive fail`) it is a `<failure type="inconclusive">` that says it was counted as one,
//!     with `pass` it stays `<skipped>` and says it was counted as a pass;
//! - when the instance is invalid as a measurement, a testcase `<name>: valid measurement` that fails
//!   (`type="invalid_measurement"`) naming the problems (skipped in a `gate: false` phase);
//! - when the instance has no SLO, a testcase `<name>: ran`, so every instance shows up in CI; it fails when
//!   a gated instance was stopped early (skipped when not gated).
//!
//! - every instance the run never reached (it stopped on an `abort_on_fail` SLO, Ctrl-C or the target's death)
//!   is a skipped testcase `<name>: not run` whose message says why, so CI tells it from an instance that does
//!   not exist.
//! - a run that exits 3 gets an error testcase `<spec>: run` whose message is the outcome's reasons:
//!   `type="run"` when it could not be carried out (the target never became ready, pinning impossible, the
//!   target exited), `type="incomplete"` when it did not finish (Ctrl-C), so that neither reads as a green suite
//!   from the instances that did pass;
//! - per sweep with sweep SLOs, one testcase per SLO, named `sweep <scenario> over <variable>: <slo>`, failing
//!   (`type="slo"`) with observed against threshold and the knee's explanation; its time is 0 (the time of the
//!   load is on the cells' own testcases).
//!
//! - an instance with checks (`check:`) lists every check's counts in its first testcase's `system-out`, and a
//!   failed `checks` or `check_failures` SLO's failure lists the failing checks it selects, each with its count
//!   and first failing response.
//!
//! The testsuite's properties carry the plan hash, the loadgate version, the machine, the pinning, the outcome,
//! the knee of each sweep (`sweep.<scenario>.knee`) and the capacity each search found (`capacity.<instance>`).
//! A capacity search's testcases carry the time of all its steps, and its `system-out` the curve of every step. The `system-out` of every cell of a sweep with a knee
//! ends with the knee, so it shows next to whichever of its testcases a CI system displays.

use std::time::Duration;

use loadgate_results::{format, OutcomeStatus, RunResults, ScenarioResult, Verdict};
use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};

use crate::text::text_summary;
use crate::ReportError;
use loadgate_results::StatisticalStatus;

/// The JUnit XML of one run.
pub fn junit(results: &RunResults) -> Result<String, ReportError> {
    junit_many(std::slice::from_ref(results))
}

/// The JUnit XML of several runs (one spec each): one testsuite per spec, in order.
pub fn junit_many(runs: &[RunResults]) -> Result<String, ReportError> {
    let mut report = Report::new("loadgate");
    let mut total = Duration::ZERO;
    for run in runs {
        let suite = suite(run);
        total += suite.time.unwrap_or_default();
        report.add_test_suite(suite);
    }
    report.set_time(total);
    report.to_string().map_err(|e| ReportError::Junit(e.to_string()))
}

fn seconds(s: f64) -> Duration {
    Duration::try_from_secs_f64(s).unwrap_or_default()
}

fn suite(run: &RunResults) -> TestSuite {
    let mut suite = TestSuite::new(run.spec.name.as_str());
    let mut time = Duration::ZERO;
    for property in properties(run) {
        suite.add_property(property);
    }
    let sweeps = crate::run_sweeps(run);
    let inconclusive = crate::inconclusive_counted_as(run);
    for s in &run.scenarios {
        // A capacity search ran its load for all its steps, not only the one its measurements come from.
        let ran = s.capacity.as_ref().map_or(s.duration, |c| c.steps.iter().map(|st| st.duration).sum());
        time += seconds(ran);
        let mut summary = text_summary(s);
        for sweep in sweeps.iter().filter(|sw| sw.cells.contains(&s.name)) {
            if let Some(k) = &sweep.knee {
                let which = if k.name == s.name { " (this cell)" } else { "" };
                summary.push_str(&format!("  Knee of sweep {}{which}: {}.\n", sweep.scenario, k.explanation));
            }
        }
        let first_out = format!("{summary}{}", check_counts(s));
        for (i, mut case) in cases(s, inconclusive.as_ref()).into_iter().enumerate() {
            case.set_classname(run.spec.name.as_str());
            case.set_time(if i == 0 { seconds(ran) } else { Duration::ZERO });
            case.set_system_out(if i == 0 { first_out.as_str() } else { summary.as_str() });
            suite.add_test_case(case);
        }
    }
    // A run that could not be carried out or was interrupted (exit 3) is an error of its own, so that a JUnit
    // reader never shows it as a green suite (with every instance skipped, passing on the phases that ran, or
    // none at all).
    if let Some(case) = run_case(run) {
        suite.add_test_case(case);
    }
    for n in &run.not_run {
        let mut case = TestCase::new(format!("{}: not run", n.name), skipped(&format!("not run: {}", n.reason)));
        case.set_classname(run.spec.name.as_str());
        case.set_time(Duration::ZERO);
        suite.add_test_case(case);
    }
    for sweep in sweeps.iter() {
        for mut case in sweep_cases(sweep) {
            case.set_classname(run.spec.name.as_str());
            case.set_time(Duration::ZERO);
            suite.add_test_case(case);
        }
    }
    suite.set_time(time);
    suite
}

/// The error testcase `<spec>: run` of a run that exits 3: `type="run"` when it could not be carried out,
/// `type="incomplete"` when it did not finish (interrupted by Ctrl-C), its message the outcome's reasons.
fn run_case(run: &RunResults) -> Option<TestCase> {
    let (kind, fallback) = match run.outcome.status {
        OutcomeStatus::RunFailed => ("run", "the run could not be carried out"),
        OutcomeStatus::Incomplete => ("incomplete", "the run did not finish (interrupted)"),
        _ => return None,
    };
    let reasons = run.outcome.reasons.join("; ");
    let message = if reasons.is_empty() { fallback.to_owned() } else { reasons };
    let mut description = message.clone();
    if run.outcome.status == OutcomeStatus::Incomplete {
        description.push_str(&format!(
            "\nthe run did not finish (exit {}): the results cover the phases that ran{}",
            run.outcome.exit_code,
            match run.not_run.len() {
                0 => String::new(),
                1 => "; 1 scenario instance was not run".to_owned(),
                n => format!("; {n} scenario instances were not run"),
            }
        ));
    }
    let mut case = TestCase::new(
        format!("{}: run", run.spec.name),
        non_success(NonSuccessKind::Error, kind, &message, &description),
    );
    case.set_classname(run.spec.name.as_str());
    case.set_time(Duration::ZERO);
    Some(case)
}

/// One testcase per sweep SLO: `sweep connection-sweep over connections: collapse >= 256`.
fn sweep_cases(sweep: &loadgate_results::Sweep) -> Vec<TestCase> {
    let over = sweep.over.as_deref().unwrap_or("its cells");
    sweep
        .verdicts
        .iter()
        .map(|v| {
            let status = if !v.passed {
                let mut description =
                    format!("sweep SLO `{}` failed on {} over {over}: {}", v.slo, sweep.scenario, v.explain());
                if let Some(k) = &sweep.knee {
                    description.push_str(&format!("\nknee: {}", k.explanation));
                }
                failure("slo", &v.explain(), &description)
            } else if v.note.as_deref().is_some_and(|n| n.starts_with(loadgate_results::verdict::NOTE_NOT_GATED))
                || !v.evaluated()
            {
                skipped(&v.explain())
            } else {
                TestCaseStatus::success()
            };
            let mut case = TestCase::new(format!("sweep {} over {over}: {}", sweep.scenario, v.slo), status);
            case.set_system_out(v.explain());
            case
        })
        .collect()
}

fn properties(run: &RunResults) -> Vec<Property> {
    let m = &run.machine;
    let mut props = vec![
        Property::new("loadgate.version", run.loadgate_version.as_str()),
        Property::new("plan.hash", run.spec.plan_hash.as_str()),
        Property::new("spec.file", run.spec.file.as_str()),
        Property::new("spec.seed", run.spec.seed.to_string()),
        Property::new("machine", crate::machine_summary(m)),
        Property::new("outcome", run.outcome.status.label()),
        Property::new("exit_code", run.outcome.exit_code.to_string()),
        Property::new("started_at", run.started_at.as_str()),
    ];
    let optional = [
        ("machine.hostname", m.hostname.clone()),
        ("machine.cpu_model", m.cpu_model.clone()),
        ("machine.logical_cpus", m.logical_cpus.map(|n| n.to_string())),
        ("machine.kernel", m.kernel.clone()),
        ("machine.governor", m.governor.clone()),
        ("machine.git_commit", m.git_commit.clone()),
        ("pinning.generator", run.pinning.generator_applied.clone()),
        ("pinning.target", run.pinning.target_applied.clone()),
        ("finished_at", run.finished_at.clone()),
    ];
    props.extend(optional.into_iter().filter_map(|(k, v)| v.map(|v| Property::new(k, v))));
    props.extend(run.spec.vars.iter().map(|(k, v)| Property::new(format!("var.{k}"), v.as_str())));
    props.extend(
        run.scenarios
            .iter()
            .filter_map(|s| s.capacity.as_ref().map(|c| Property::new(format!("capacity.{}", s.name), c.summary()))),
    );
    props.extend(crate::run_sweeps(run).iter().filter_map(|sweep| {
        sweep.knee.as_ref().map(|k| Property::new(format!("sweep.{}.knee", sweep.scenario), k.explanation.as_str()))
    }));
    props
}

fn skipped(message: &str) -> TestCaseStatus {
    let mut status = TestCaseStatus::skipped();
    status.set_message(message);
    status
}

fn failure(kind: &str, message: &str, description: &str) -> TestCaseStatus {
    non_success(NonSuccessKind::Failure, kind, message, description)
}

/// A failure (an SLO missed) or an error (the run could not be carried out), with its type and text.
fn non_success(outcome: NonSuccessKind, kind: &str, message: &str, description: &str) -> TestCaseStatus {
    let mut status = TestCaseStatus::non_success(outcome);
    status.set_type(kind).set_message(message).set_description(description);
    status
}

/// What an INCONCLUSIVE check counts as when `gating.on_inconclusive` is not the default, and who said so.
type CountedAs<'a> = Option<&'a (OutcomeStatus, String)>;

fn cases(s: &ScenarioResult, inconclusive: CountedAs<'_>) -> Vec<TestCase> {
    let mut cases = Vec::new();
    for v in &s.judged.verdicts {
        cases.push(TestCase::new(format!("{}: {}", s.name, v.slo), verdict_status(s, v, inconclusive)));
    }
    if !s.validity.valid {
        let problems: Vec<String> = loadgate_results::each_kind_once(&s.validity.problems)
            .iter()
            .map(|p| format!("{}: {}", p.kind, p.message))
            .collect();
        let message = if problems.is_empty() {
            "invalid as a measurement: the generator did not deliver what the plan asked".to_owned()
        } else {
            format!("invalid as a measurement: {}", problems.join("; "))
        };
        let status = if s.gate {
            failure(
                "invalid_measurement",
                &message,
                "the generator did not deliver what the plan asked, so these numbers describe loadgate, not the target",
            )
        } else {
            skipped(&format!("not gated (gate: false); {message}"))
        };
        cases.push(TestCase::new(format!("{}: valid measurement", s.name), status));
    }
    if s.judged.verdicts.is_empty() {
        let status = match (&s.aborted, s.gate) {
            (Some(why), true) => failure("aborted", &format!("stopped early: {why}"), why),
            (Some(why), false) => skipped(&format!("not gated (gate: false); stopped early: {why}")),
            (None, _) => TestCaseStatus::success(),
        };
        cases.push(TestCase::new(format!("{}: ran", s.name), status));
    }
    cases
}

/// Every check of an instance with its counts, for the `system-out` of its first testcase: `  login/status:
/// 1,000 passed, 0 failed (status in 200)`; empty without checks.
fn check_counts(s: &ScenarioResult) -> String {
    let mut out = String::new();
    if s.checks.is_empty() {
        return out;
    }
    out.push_str("  Check counts:\n");
    for c in &s.checks {
        out.push_str(&format!(
            "    {}/{}: {} passed, {} failed ({})\n",
            c.request,
            c.check,
            format::count(c.passed),
            format::count(c.failed),
            c.expects
        ));
    }
    out
}

/// For a failed `checks` or `check_failures` SLO: the failing checks it selects, each with its count and first
/// failing response, one a line (each starting with a line break); empty for other SLOs.
fn failing_checks(s: &ScenarioResult, v: &Verdict) -> String {
    let Ok(slo) = loadgate_model::Slo::parse(&v.slo) else { return String::new() };
    if !loadgate_results::verdict::is_check_metric(slo.metric) {
        return String::new();
    }
    let mut out = String::new();
    for c in s.checks.iter().filter(|c| {
        c.failed > 0
            && slo.request.as_deref().is_none_or(|r| r == c.request)
            && slo.check.as_deref().is_none_or(|n| n == c.check)
    }) {
        out.push_str(&format!(
            "\n{}/{}: {} of {} failed, expected {}",
            c.request,
            c.check,
            format::count(c.failed),
            format::count(c.passed + c.failed),
            c.expects
        ));
        if let Some(e) = c.examples.first() {
            out.push_str(&format!("; first: {}", loadgate_results::checks::example_text(e, 160)));
        }
    }
    out
}

fn verdict_status(s: &ScenarioResult, v: &Verdict, inconclusive: CountedAs<'_>) -> TestCaseStatus {
    // INCONCLUSIVE is neither a pass nor a failure: a skipped testcase whose message says why, unless
    // `on_inconclusive` counts it as a failure (then it fails, as the exit code does) or as a pass (it stays
    // skipped, and says that it was counted as one).
    if let Some(st) = v.statistics.as_ref().filter(|st| st.status == StatisticalStatus::Inconclusive) {
        let message = format!("INCONCLUSIVE ({}): {}", st.reason, v.explain());
        return match inconclusive.filter(|_| s.gate) {
            Some((OutcomeStatus::SloFailed, origin)) => {
                let message = format!("{message}; counted as a failure by {origin}");
                let description = format!(
                    "SLO `{}` on {} is INCONCLUSIVE ({}), and {origin} counts that as a failure: {}",
                    v.slo,
                    s.name,
                    st.reason,
                    v.explain()
                );
                failure("inconclusive", &message, &description)
            }
            Some((_, origin)) => skipped(&format!("{message}; counted as a pass by {origin}")),
            None => skipped(&message),
        };
    }
    if !v.passed {
        let mut description = format!("SLO `{}` failed on {}: {}", v.slo, s.name, v.explain());
        description.push_str(&failing_checks(s, v));
        if let Some(w) = s.profile.as_ref().and_then(|p| loadgate_results::frames::where_text(p, 5)) {
            description.push_str(&format!("\n{w}"));
        }
        if let Some(why) = &s.aborted {
            description.push_str(&format!("\nthe phase was stopped early: {why}"));
        }
        let message = match loadgate_results::frames::verdict_where(s, v) {
            Some(w) => format!("{}; {w}", v.explain()),
            None => v.explain(),
        };
        return failure("slo", &message, &description);
    }
    if !s.gate || !v.evaluated() {
        return skipped(&v.explain());
    }
    TestCaseStatus::success()
}
