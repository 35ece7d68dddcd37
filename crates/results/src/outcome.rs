//! The outcome of a run and the exit code of `loadgate run`, defined once.
//!
//! | code | status | when |
//! | --- | --- | --- |
//! | 0 | [`OutcomeStatus::Passed`] | every gated SLO held (a run whose only SLOs were not evaluated passes) |
//! | 1 | [`OutcomeStatus::SloFailed`] | a gated SLO failed, including one that stopped the run (`abort_on_fail`) |
//! | 2 | (none) | the spec or the command line is invalid: nothing ran, so there are no results |
//! | 3 | [`OutcomeStatus::RunFailed`], [`OutcomeStatus::Incomplete`] | the run could not be carried out, or was interrupted (Ctrl-C) |
//! | 4 | [`OutcomeStatus::InvalidMeasurement`] | a gated scenario's generator did not deliver what the plan asked |
//! | 5 | [`OutcomeStatus::Inconclusive`] | no SLO failed, but a check over repetitions could not tell (`gating.on_inconclusive: inconclusive`, the default; `fail` makes it 1, `pass` 0) |
//!
//! Precedence, highest first: **run failed (3) > interrupted (3) > invalid measurement (4) > SLO failed (1) >
//! inconclusive (5) > passed (0)**. An invalid measurement outranks an SLO failure because its numbers describe loadgate, not the
//! target: a p99 over its threshold may be the generator's fault. A run that did not finish outranks both, since
//! the phases that did not run were gated too. An interrupted run exits 3, not 130: CI must not read a Ctrl-C'd
//! run as a verdict on the target.
//!
//! What [`outcome`] reads:
//! - **run failed**: `results.outcome.status == RunFailed`, which the runner records (with its reasons) when it
//!   could not carry the run out: target never ready, pinning impossible with `on_mismatch: fail`. This is the
//!   only status taken from the input; every other is derived. A target that exited during the run
//!   (`target.exited`) is a failed run too.
//! - **interrupted**: `finished_at` is `None`. The runner sets `finished_at` once the last phase has ended,
//!   normally or stopped by an `abort_on_fail` SLO; a Ctrl-C leaves it unset.
//! - **invalid measurement**: a gated scenario with `validity.valid == false`. An invalid `gate: false` phase
//!   (a warmup) is listed in the reasons but does not invalidate the run.
//! - **SLO failed**: a verdict with `passed == false` in a gated scenario, or a failed sweep SLO (`sweeps[].verdicts`,
//!   `passed` is already `true` for an ungated one).
//!
//! `reasons` lists every finding, highest precedence first, so a run both invalid and failing an SLO says both.

use crate::model::{Outcome, OutcomeStatus, RunResults};

/// The process exit codes of `loadgate`.
pub mod exit_codes {
    /// Every gated SLO held.
    pub const PASSED: i32 = 0;
    /// A gated SLO failed.
    pub const SLO_FAILED: i32 = 1;
    /// The spec or the command line is invalid; nothing ran.
    pub const INVALID_INPUT: i32 = 2;
    /// The run could not be carried out, or was interrupted.
    pub const RUN_FAILED: i32 = 3;
    /// The run is invalid as a measurement.
    pub const INVALID_MEASUREMENT: i32 = 4;
    /// No SLO failed, but a check over repetitions could not tell.
    pub const INCONCLUSIVE: i32 = 5;
}

impl OutcomeStatus {
    /// The exit code of this outcome.
    pub fn exit_code(self) -> i32 {
        match self {
            OutcomeStatus::Passed => exit_codes::PASSED,
            OutcomeStatus::SloFailed => exit_codes::SLO_FAILED,
            OutcomeStatus::RunFailed | OutcomeStatus::Incomplete => exit_codes::RUN_FAILED,
            OutcomeStatus::InvalidMeasurement => exit_codes::INVALID_MEASUREMENT,
            OutcomeStatus::Inconclusive => exit_codes::INCONCLUSIVE,
        }
    }

    /// A short label for people: `passed`, `SLO failed`, `run failed`, `invalid measurement`, `incomplete`.
    pub fn label(self) -> &'static str {
        match self {
            OutcomeStatus::Passed => "passed",
            OutcomeStatus::SloFailed => "SLO failed",
            OutcomeStatus::RunFailed => "run failed",
            OutcomeStatus::InvalidMeasurement => "invalid measurement",
            OutcomeStatus::Incomplete => "incomplete",
            OutcomeStatus::Inconclusive => "inconclusive",
        }
    }

    /// Precedence: higher wins.
    fn rank(self) -> u8 {
        match self {
            OutcomeStatus::Passed => 0,
            OutcomeStatus::Inconclusive => 1,
            OutcomeStatus::SloFailed => 2,
            OutcomeStatus::InvalidMeasurement => 3,
            OutcomeStatus::Incomplete => 4,
            OutcomeStatus::RunFailed => 5,
        }
    }
}

impl Outcome {
    /// An outcome with its exit code.
    pub fn new(status: OutcomeStatus, reasons: Vec<String>) -> Self {
        Outcome { status, exit_code: status.exit_code(), reasons }
    }

    /// The outcome to write while the run is still going.
    pub fn in_progress() -> Self {
        Outcome::new(OutcomeStatus::Incomplete, vec!["the run has not finished".to_owned()])
    }

    /// The outcome the runner records when the run could not be carried out.
    pub fn run_failed(reasons: Vec<String>) -> Self {
        Outcome::new(OutcomeStatus::RunFailed, reasons)
    }
}

/// `Some(reason)` when no request of an instance completed because of TLS (no handshake completed, or the server
/// refused the connections with an alert after it): the target could not be talked to, and the run could not be carried out (exit 3), which is not the generator's shortfall. A target
/// given by URL is probed before the load; a target loadgate started (its readiness probe may be `tcp`) is found
/// here, and the runner records the reason as a run failure.
pub fn unreachable_over_tls(s: &crate::model::ScenarioResult) -> Option<String> {
    let tls = s.tls.as_ref()?;
    let e = &tls.errors;
    let failed = e.unknown_ca + e.name_mismatch + e.certificate + e.handshake_timeout + e.alert + e.other;
    // No request completed, and TLS is why: no handshake completed, or the server refused the connections with an
    // alert after it (a TLS 1.3 server that requires a client certificate says so after the handshake).
    (s.requests.completed == 0 && failed > 0 && (tls.handshakes == 0 || e.alert > 0)).then(|| {
        format!(
            "{}: the target could not be talked to over TLS: no request completed, {failed} TLS failure{}{}",
            s.name,
            if failed == 1 { "" } else { "s" },
            tls.first_error.as_deref().map_or_else(String::new, |f| format!(": {f}"))
        )
    })
}

/// Why a checkpoint is incomplete, in words: `these results are a checkpoint written 3000 s into the run, while
/// soak was still running: the run had not finished`.
pub fn checkpoint_reason(c: &crate::model::Checkpoint) -> String {
    format!(
        "these results are a checkpoint written {} into the run{}: the run had not finished",
        crate::format::seconds(c.run_seconds),
        c.in_progress.as_deref().map_or_else(String::new, |p| format!(", while {p} was still running"))
    )
}

/// A merge's problems (one per round or part that had it), each once: the first of those alike (the same kind, the
/// same words with other numbers: each round's figures), with how many more there were like it (results.json keeps
/// every one). What people read of an instance's validity.
pub fn each_kind_once(problems: &[crate::model::Problem]) -> Vec<crate::model::Problem> {
    let mut kinds: Vec<(&crate::model::Problem, String, usize)> = Vec::new();
    for p in problems {
        let shape = without_numbers(&p.message);
        match kinds.iter_mut().find(|(k, s, _)| k.kind == p.kind && *s == shape) {
            Some(k) => k.2 += 1,
            None => kinds.push((p, shape, 1)),
        }
    }
    kinds
        .into_iter()
        .map(|(p, _, n)| match n {
            1 => p.clone(),
            n => crate::model::Problem {
                kind: p.kind.clone(),
                message: format!("{} (and {} more like it: results.json has each)", p.message, n - 1),
            },
        })
        .collect()
}

/// `text` with each number (digits with the `,` and `.` between them) made `#`.
fn without_numbers(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_number = false;
    for c in text.chars() {
        if c.is_ascii_digit() || (in_number && (c == ',' || c == '.')) {
            if !in_number {
                out.push('#');
            }
            in_number = c.is_ascii_digit() || in_number;
        } else {
            in_number = false;
            out.push(c);
        }
    }
    out
}

/// Derives the outcome of a run from its results; see the [module documentation](self) for the rules.
pub fn outcome(results: &RunResults) -> Outcome {
    let mut findings: Vec<(OutcomeStatus, String)> = Vec::new();

    if results.outcome.status == OutcomeStatus::RunFailed {
        if results.outcome.reasons.is_empty() {
            findings.push((OutcomeStatus::RunFailed, "the run could not be carried out".to_owned()));
        }
        findings.extend(results.outcome.reasons.iter().map(|r| (OutcomeStatus::RunFailed, r.clone())));
    }
    if let Some(exit) = &results.target.exited {
        findings.push((
            OutcomeStatus::RunFailed,
            format!("the target exited during the run, {:.1}s after the start: {}", exit.at_seconds, exit.status),
        ));
    }
    if let Some(c) = &results.checkpoint {
        findings.push((OutcomeStatus::Incomplete, checkpoint_reason(c)));
    } else if results.finished_at.is_none() {
        let mut reason = "the run did not finish (interrupted)".to_owned();
        if let Some(s) = results.scenarios.iter().rev().find(|s| s.aborted.is_some()) {
            reason = format!("the run did not finish: {} was stopped ({})", s.name, s.aborted.as_deref().unwrap_or(""));
        }
        findings.push((OutcomeStatus::Incomplete, reason));
    }
    for s in &results.scenarios {
        if !s.validity.valid {
            let problems = if s.validity.problems.is_empty() {
                "the generator did not deliver the plan".to_owned()
            } else {
                let said: Vec<String> = each_kind_once(&s.validity.problems).into_iter().map(|p| p.message).collect();
                said.join("; ")
            };
            if s.gate {
                findings.push((
                    OutcomeStatus::InvalidMeasurement,
                    format!("{} is invalid as a measurement: {problems}", s.name),
                ));
            } else {
                findings.push((
                    OutcomeStatus::Passed,
                    format!("{} (not gated) is invalid as a measurement: {problems}", s.name),
                ));
            }
        }
    }
    // What an inconclusive check makes of the run: its own status, a failure or a pass (`gating.on_inconclusive`).
    let inconclusive_as = match results.gating.as_ref().map(|g| g.on_inconclusive.as_str()) {
        Some("fail") => OutcomeStatus::SloFailed,
        Some("pass") => OutcomeStatus::Passed,
        _ => OutcomeStatus::Inconclusive,
    };
    for s in results.scenarios.iter().filter(|s| s.gate) {
        for v in s.judged.verdicts.iter().filter(|v| !v.passed) {
            let inconclusive =
                v.statistics.as_ref().is_some_and(|st| st.status == crate::model::StatisticalStatus::Inconclusive);
            let status = if inconclusive { inconclusive_as } else { OutcomeStatus::SloFailed };
            let place = crate::frames::verdict_where(s, v).map(|w| format!("; {w}")).unwrap_or_default();
            findings.push((status, format!("{}: {}{place}", s.name, v.explain())));
        }
    }
    for sweep in &results.sweeps {
        for v in sweep.verdicts.iter().filter(|v| !v.passed) {
            findings.push((OutcomeStatus::SloFailed, format!("sweep {}: {}", sweep.scenario, v.explain())));
        }
    }

    let status = findings.iter().map(|(st, _)| *st).max_by_key(|st| st.rank()).unwrap_or(OutcomeStatus::Passed);
    // Highest precedence first; stable within a level, so reasons keep the run's order.
    findings.sort_by_key(|(st, _)| std::cmp::Reverse(st.rank()));
    Outcome::new(status, findings.into_iter().map(|(_, r)| r).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_merge_invalid_in_every_round_says_each_kind_of_problem_once_with_how_many_more() {
        let p = |kind: &str, message: &str| crate::model::Problem { kind: kind.into(), message: message.into() };
        let problems = [
            p("generator_limited", "sent 45,301/s of the 50,000/s asked"),
            p("send_lag", "requests left 56ms late"),
            p("generator_limited", "sent 46,217/s of the 50,000/s asked"),
            p("generator_limited", "sent 42,462/s of the 50,000/s asked"),
            p("generator_limited", "the busiest worker used 98% of its CPU"),
        ];
        let said: Vec<String> = each_kind_once(&problems).into_iter().map(|p| p.message).collect();
        assert_eq!(
            said.join("; "),
            "sent 45,301/s of the 50,000/s asked (and 2 more like it: results.json has each); requests left 56ms late; \
             the busiest worker used 98% of its CPU"
        );
    }

    #[test]
    fn a_target_no_tls_handshake_succeeded_with_could_not_be_talked_to() {
        let mut r = crate::fixture::sample_run();
        let s = &mut r.scenarios[1];
        s.validity.valid = false;
        s.requests.completed = 0;
        let mut tls = crate::model::TlsStats::default();
        tls.errors.unknown_ca = 16;
        tls.first_error = Some("the certificate leads to no trusted CA: pass -k or tls.ca".to_owned());
        s.tls = Some(tls);
        let reason = unreachable_over_tls(&r.scenarios[1]).expect("unreachable");
        assert!(reason.contains("could not be talked to over TLS") && reason.contains("tls.ca"), "{reason}");
        r.outcome = Outcome::run_failed(vec![reason]);
        let o = outcome(&r);
        assert_eq!(o.status, OutcomeStatus::RunFailed, "{:?}", o.reasons);
        assert_eq!(o.status.exit_code(), 3);
        // One handshake that succeeded: the target could be talked to; the shortfall is a measurement's.
        if let Some(t) = r.scenarios[1].tls.as_mut() {
            t.handshakes = 1;
        }
        assert_eq!(unreachable_over_tls(&r.scenarios[1]), None);
    }
}
