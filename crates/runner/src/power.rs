//! `gating.detect` / `gating.budget` in a run: after a budgeted instance's pilot (its first look), the plan made
//! from its rounds by the pure `results::power::plan`, which the schedule then follows
//! ([`crate::schedule::Schedule::follow`]): the rounds after it as long as planned ([`lengthened`]), as many as
//! its looks need, never past the budget. No loop of its own: the run's one loop runs the longer rounds.

use loadgate_plan::{Arrival, ExecutionPlan, Phase, StopCondition};
use loadgate_results::power::{pilots, Asked, Cost};
use loadgate_results::{InconclusiveCause, PowerPlan, ScenarioResult, StatisticalStatus, Verdict};

/// The plan for `phase` from its pilot: `mine` (the candidate's rounds in A/B), `paired` (the baseline's);
/// `units` the schedule's `(spent, kept, cap)`. `None` when nothing can be planned (no check over
/// repetitions, no spread).
pub(crate) fn make(
    plan: &ExecutionPlan,
    phase: &Phase,
    mine: &[ScenarioResult],
    paired: Option<&[ScenarioResult]>,
    units: (u32, u32, u32),
) -> Option<PowerPlan> {
    let g = &plan.gating;
    let (spent, kept, cap) = units;
    let looks = loadgate_model::looks_between(kept, cap);
    let last = loadgate_model::share_of_confidence(g.confidence, looks.len() - 1, looks.len());
    let cost = Cost {
        round_seconds: phase.duration?.0.as_secs_f64(),
        sides: if plan.candidate.is_some() { 2 } else { 1 },
        pilot: kept,
        // Rounds discarded in the pilot spent budget without adding to it.
        budget_units: cap.saturating_sub(spent - kept),
        scalable: paired.is_some() && lengthenable(phase),
        budget_seconds: g.budget.map_or(0.0, |b| b.0.as_secs_f64()),
        overhead_seconds: overhead(phase, [mine, paired.unwrap_or_default()], Overhead::Mean),
    };
    let asked = Asked { detect: g.detect, last_look_confidence: last, power: loadgate_model::DEFAULT_POWER };
    loadgate_results::power::plan(&pilots(&phase.slos, mine, paired), asked, cost)
}

/// The budget's units once the pilot's load is measured: the longest pilot round's measured duration (the drain
/// of the requests in flight at its end included) over its planned one, at least 1, shrinks the units `cap`
/// allows, so that the load measured stays within the budget. `sides` are the pilot's results per side.
pub(crate) fn measured_cap(phase: &Phase, sides: [&[ScenarioResult]; 2], cap: u32) -> u32 {
    let Some(planned) = phase.duration.map(|d| d.0.as_secs_f64()).filter(|d| *d > 0.0) else { return cap };
    let factor = (planned + overhead(phase, sides, Overhead::Most)) / planned;
    ((f64::from(cap) / factor).floor() as u32).max(1)
}

/// Which overhead of the pilot's rounds: the mean (what the plan expects) or the most (what the budget allows for).
#[derive(Clone, Copy)]
enum Overhead {
    Mean,
    Most,
}

/// What the pilot's rounds measured beyond their planned duration per round and side (at least 0).
fn overhead(phase: &Phase, sides: [&[ScenarioResult]; 2], which: Overhead) -> f64 {
    let Some(planned) = phase.duration.map(|d| d.0.as_secs_f64()) else { return 0.0 };
    let rounds: Vec<f64> = sides.iter().flat_map(|s| s.iter().map(|r| r.duration)).collect();
    if rounds.is_empty() {
        return 0.0;
    }
    let measured = match which {
        Overhead::Mean => rounds.iter().sum::<f64>() / rounds.len() as f64,
        Overhead::Most => rounds.iter().copied().fold(0.0, f64::max),
    };
    (measured - planned).max(0.0)
}

/// Whether a phase's rounds can be made longer: a closed or constant-rate load that stops after a time.
pub fn lengthenable(phase: &Phase) -> bool {
    phase.capacity.is_none()
        && matches!(phase.load.arrival, Arrival::Closed | Arrival::Constant { .. })
        && matches!(phase.load.stop, StopCondition::Duration { .. })
}

/// The phase `scale` times as long (its load's duration); itself when `scale` is 1 or it cannot be.
pub fn lengthened(phase: &Phase, scale: u32) -> std::borrow::Cow<'_, Phase> {
    if scale <= 1 || !lengthenable(phase) {
        return std::borrow::Cow::Borrowed(phase);
    }
    let mut longer = phase.clone();
    if let StopCondition::Duration { duration } = &mut longer.load.stop {
        duration.0 *= scale;
    }
    longer.duration = longer.duration.map(|d| loadgate_model::units::Duration(d.0 * scale));
    std::borrow::Cow::Owned(longer)
}

/// A budgeted instance's judged result: its plan beside it, the change asked beside each verdict's detectable
/// one, and, when the budget ended its rounds (`out_of_budget`), every verdict still INCONCLUSIVE that is not
/// "at the limit" INCONCLUSIVE for `budget`.
pub(crate) fn annotate(
    result: &mut ScenarioResult,
    plan: Option<&PowerPlan>,
    detect: Option<f64>,
    out_of_budget: bool,
) {
    result.power_plan = plan.cloned();
    for v in result.judged.verdicts.iter_mut() {
        let told = tellable(v);
        let Some(st) = v.statistics.as_mut() else { continue };
        st.detect = detect;
        st.tellable = detect.and(told);
        let undecided = st.status == StatisticalStatus::Inconclusive && st.cause != Some(InconclusiveCause::AtTheLimit);
        if out_of_budget && undecided {
            st.cause = Some(InconclusiveCause::Budget);
            st.reason = "budget".to_owned();
        }
    }
    if out_of_budget {
        for v in result.judged.verdicts.iter_mut() {
            let Some(st) = &v.statistics else { continue };
            if st.cause == Some(InconclusiveCause::Budget) {
                v.note = v.note.take().map(|n| budget_note(&n));
            }
        }
    }
}

/// The change a verdict's interval could tell, in `gating.detect`'s sense (`VerdictStatistics::tellable`).
fn tellable(v: &Verdict) -> Option<f64> {
    let st = v.statistics.as_ref()?;
    let m = st.smallest_detectable?;
    let lower_is_better = v.comparison.starts_with('<');
    Some(match (v.threshold.contains("baseline"), lower_is_better) {
        (true, true) => st.limit * (1.0 + m) - 1.0,
        (true, false) => 1.0 - st.limit / (1.0 + m),
        (false, _) => m,
    })
}

/// `INCONCLUSIVE, leans regression: ...` -> `INCONCLUSIVE, budget (the rounds it allowed ended; leans
/// regression): ...`.
fn budget_note(note: &str) -> String {
    match note.strip_prefix("INCONCLUSIVE, ").and_then(|rest| rest.split_once(": ")) {
        Some((was, rest)) => format!("INCONCLUSIVE, budget (the rounds it allowed ended; {was}): {rest}"),
        None => format!("budget: the rounds it allowed ended; {note}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phase(duration: &str) -> Phase {
        let yaml = format!(
            "version: 1\nname: p\ntarget: {{ builtin: plaintext }}\ncandidate: {{ builtin: plaintext }}\ngating: {{ detect: 10%, budget: 1m }}\nscenarios:\n  main:\n    request: {{ path: / }}\n    load: {{ closed: {{ connections: 1, duration: {duration} }} }}\n"
        );
        let spec = loadgate_spec::load_str("p.yaml", &yaml, &loadgate_spec::LoadOptions::default()).unwrap();
        loadgate_plan::compile(&spec).phases.remove(0)
    }

    fn rounds(durations: &[f64]) -> Vec<ScenarioResult> {
        durations
            .iter()
            .map(|d| {
                let mut r = loadgate_results::fixture::sweep_cell(1, 100.0, 1.0);
                r.duration = *d;
                r
            })
            .collect()
    }

    #[test]
    fn the_pilots_longest_round_shrinks_the_budget_and_a_longer_round_is_lengthened() {
        let p = phase("500ms");
        assert_eq!(p.repeat, None);
        let (a, b) = (rounds(&[0.5, 0.5]), rounds(&[0.5, 0.625]));
        // The longest round took 25% more than planned: 60 units allow 48.
        assert_eq!(measured_cap(&p, [a.as_slice(), b.as_slice()], 60), 48);
        assert_eq!(measured_cap(&p, [a.as_slice(), a.as_slice()], 60), 60);
        assert!((overhead(&p, [a.as_slice(), b.as_slice()], Overhead::Mean) - 0.03125).abs() < 1e-12);
        let longer = lengthened(&p, 3);
        assert_eq!(longer.duration.map(|d| d.0), Some(std::time::Duration::from_millis(1500)));
        assert!(matches!(longer.load.stop, StopCondition::Duration { duration } if duration.0.as_millis() == 1500));
        assert!(matches!(lengthened(&p, 1), std::borrow::Cow::Borrowed(_)));
    }

    #[test]
    fn a_note_says_the_budget_ended_and_what_the_verdict_leaned_to() {
        assert_eq!(
            budget_note("INCONCLUSIVE, leans regression: the 95% interval straddles the limit"),
            "INCONCLUSIVE, budget (the rounds it allowed ended; leans regression): the 95% interval straddles the limit"
        );
    }
}
