//! Round-keeping: what a run keeps of its rounds, pure (no socket, no clock), as [`crate::schedule`] is of what
//! runs next. Each side's result of a round is kept with its round and what its attachments gave
//! ([`Rounds::keep`]); a round invalid as a measurement is discarded with its pair ([`Rounds::discard`]); a
//! budgeted instance's rounds are planned after its pilot ([`Rounds::plan`], `results::power::plan` through
//! [`crate::power`], followed by the schedule); and an instance is judged at its look ([`Rounds::judge`]: one run
//! as it is, repetitions merged and judged against the other side in an A/B run or the stored baseline, at the
//! look's share of the confidence, with its discarded rounds and its plan).

use loadgate_plan::{ExecutionPlan, Phase};
use loadgate_results::gate::Baseline;
use loadgate_results::{DiscardedRound, PowerPlan, RunResults, ScenarioResult};

use crate::attach::AttachmentOutput;
use crate::event::{Event, Observer};
use crate::schedule::{Discard, Judgement, Schedule, Side};

/// The rounds of every instance of a run.
#[derive(Debug)]
pub struct Rounds {
    sides: &'static [Side],
    statistical: bool,
    instances: Vec<Instance>,
}

/// What is kept of one instance.
#[derive(Debug, Default)]
struct Instance {
    /// Every kept repetition, per side (0: the target, 1: the candidate).
    reps: [Vec<ScenarioResult>; 2],
    /// What the attachments gave for each of them.
    attached: [Vec<Vec<AttachmentOutput>>; 2],
    /// The round of each kept repetition.
    rounds: Vec<u32>,
    /// The rounds discarded as invalid measurements and run again.
    discarded: Vec<DiscardedRound>,
    /// The plan of a budgeted instance, once its pilot ended (`gating.detect` / `gating.budget`).
    plan: Option<PowerPlan>,
    /// Duet rounds: each side's solo round, run alone before them; kept apart from the rounds.
    solo: [Option<ScenarioResult>; 2],
}

impl Rounds {
    /// Nothing kept yet, for the plan's instances on the schedule's sides.
    pub fn new(plan: &ExecutionPlan, schedule: &Schedule) -> Rounds {
        Rounds {
            sides: schedule.all_sides(),
            statistical: schedule.statistical(),
            instances: plan.phases.iter().map(|_| Instance::default()).collect(),
        }
    }

    /// Keeps a side's result of round `round` of instance `phase`, with what its attachments gave.
    pub fn keep(
        &mut self,
        phase: usize,
        round: u32,
        side: Side,
        result: ScenarioResult,
        attached: Vec<AttachmentOutput>,
    ) {
        let i = &mut self.instances[phase];
        i.reps[side.index()].push(result);
        i.attached[side.index()].push(attached);
        if side == Side::Candidate || self.sides.len() == 1 {
            i.rounds.push(round);
        }
    }

    /// Keeps a side's solo round of a duet instance: apart from its rounds, for the duet penalty only.
    pub fn keep_solo(&mut self, phase: usize, side: Side, result: ScenarioResult) {
        self.instances[phase].solo[side.index()] = Some(result);
    }

    /// The kept results of an instance on a side, in order.
    pub fn kept(&self, phase: usize, side: Side) -> &[ScenarioResult] {
        &self.instances[phase].reps[side.index()]
    }

    /// What the attachments gave for each kept result of an instance on a side.
    pub fn attached(&self, phase: usize, side: Side) -> &[Vec<AttachmentOutput>] {
        &self.instances[phase].attached[side.index()]
    }

    /// The rounds discarded of an instance.
    pub fn discarded(&self, phase: usize) -> &[DiscardedRound] {
        &self.instances[phase].discarded
    }

    /// The plan of a budgeted instance, once made.
    pub fn power_plan(&self, phase: usize) -> Option<&PowerPlan> {
        self.instances[phase].plan.as_ref()
    }

    /// Discards the round `d` names with its pair (the last result of every side), saying why it was invalid on
    /// the sides it names; the observer is warned.
    pub fn discard(&mut self, plan: &ExecutionPlan, d: &Discard, observer: &mut dyn Observer) {
        let ab = self.sides.len() > 1;
        let i = &mut self.instances[d.phase];
        let reasons: Vec<String> = d
            .sides
            .iter()
            .filter_map(|s| i.reps[s.index()].last().map(|r| (*s, r)))
            .flat_map(|(s, r)| {
                r.validity.problems.iter().map(move |p| {
                    if ab {
                        format!("{}: {}", s.letter(), p.message)
                    } else {
                        p.message.clone()
                    }
                })
            })
            .collect();
        for s in self.sides {
            i.reps[s.index()].pop();
            i.attached[s.index()].pop();
        }
        i.rounds.pop();
        observer.event(&Event::Warning(format!(
            "{}: round {} was invalid as a measurement ({}); it is discarded and run again ({} of {} allowed)",
            plan.phases[d.phase].name,
            d.round,
            reasons.join("; "),
            d.nth,
            d.allowed
        )));
        let sides = if ab { d.sides.iter().map(|s| s.letter().to_owned()).collect() } else { Vec::new() };
        i.discarded.push(DiscardedRound { round: d.round, sides, reasons });
    }

    /// A budgeted instance's pilot ended: the plan for its rounds from them, told to the observer (up front) and
    /// followed by the schedule. Without a plan (nothing to plan from) the rounds keep their length.
    pub fn plan(&mut self, plan: &ExecutionPlan, phase: usize, schedule: &mut Schedule, observer: &mut dyn Observer) {
        let i = &mut self.instances[phase];
        let [a, b] = &i.reps;
        let (mine, paired) = if self.sides.len() == 2 { (b, Some(a.as_slice())) } else { (a, None) };
        let (spent, kept, cap) = schedule.units(phase).unwrap_or_default();
        let cap = crate::power::measured_cap(&plan.phases[phase], [a.as_slice(), b.as_slice()], cap);
        let made = crate::power::make(plan, &plan.phases[phase], mine, paired, (spent, kept, cap));
        schedule.follow(phase, made.as_ref().map_or(1, |p| p.round_scale), cap);
        if let Some(p) = &made {
            observer.event(&Event::GatePlanned { phase: &plan.phases[phase], plan: p });
        }
        i.plan = made;
    }

    /// The instance's result at judgement `j`: one run as it is; repetitions merged and judged (against the other
    /// side in an A/B run, else against `baseline`), a budgeted instance at its look's share of the confidence,
    /// with its plan, and for `budget` when its last round leaves it out of budget. `None` before any result.
    pub fn judge(
        &self,
        plan: &ExecutionPlan,
        j: &Judgement,
        baseline: Option<&RunResults>,
        schedule: &Schedule,
    ) -> Option<ScenarioResult> {
        let phase = &plan.phases[j.phase];
        let i = &self.instances[j.phase];
        let [a, b] = &i.reps;
        if !self.statistical {
            return a.last().cloned().map(|mut r| {
                crate::profiles::summarize(&mut r, &i.attached, false);
                judge_target_cpu(&phase.slos, &mut r, baseline);
                r
            });
        }
        let look = schedule.look_confidence(j.phase, plan.gating.confidence);
        let out_of_budget = j.last && schedule.out_of_budget(j.phase);
        let (mine, paired) = if self.sides.len() == 2 { (b, Some(a.as_slice())) } else { (a, None) };
        judged_result(phase, mine, paired, &i.rounds, plan, baseline, look).map(|mut merged| {
            merged.resources =
                loadgate_results::PhaseResources::combine(mine.iter().filter_map(|r| r.resources.as_ref()));
            note_discarded(&mut merged, &i.discarded);
            note_duet_penalty(&mut merged, &i.solo);
            crate::profiles::summarize(&mut merged, &i.attached, self.sides.len() == 2);
            if plan.budget_units(phase).is_some() {
                crate::power::annotate(&mut merged, i.plan.as_ref(), plan.gating.detect, out_of_budget);
            }
            merged
        })
    }
}

/// A single run's `target_cpu_per_request` checks, judged again now that its attachment read the target's CPU
/// (the phase's own verdicts were judged before its attachments stopped).
fn judge_target_cpu(slos: &[loadgate_plan::Slo], r: &mut ScenarioResult, baseline: Option<&RunResults>) {
    let metric = loadgate_plan::Metric::TargetCpuPerRequest.to_string();
    if !r.judged.verdicts.iter().any(|v| v.metric == metric) || r.judged.verdicts.len() != slos.len() {
        return;
    }
    let stored = baseline.and_then(|b| loadgate_results::baseline_for(b, r)).cloned();
    let fresh = loadgate_results::evaluate(slos, r, stored.as_ref());
    for (v, f) in r.judged.verdicts.iter_mut().zip(fresh) {
        if v.metric == metric {
            *v = f;
        }
    }
}

/// A duet instance's penalty per side (its duet rounds' p50 against its solo round's), on the candidate's merged
/// result and its baseline's, and a `duet_penalty` warning when a side's exceeds
/// [`loadgate_results::DUET_PENALTY_WARNING`]: the sides slow each other, and the change measured together may
/// differ from the change alone.
fn note_duet_penalty(merged: &mut ScenarioResult, solo: &[Option<ScenarioResult>; 2]) {
    let [Some(solo_a), Some(solo_b)] = solo else { return };
    merged.duet = loadgate_results::DuetPenalty::of(solo_b, merged);
    let a = merged.ab_baseline.as_deref_mut().and_then(|a| {
        a.duet = loadgate_results::DuetPenalty::of(solo_a, a);
        a.duet.clone()
    });
    let over: Vec<String> = [("A", a), ("B", merged.duet.clone())]
        .into_iter()
        .filter_map(|(side, d)| d.filter(|d| d.penalty > loadgate_results::DUET_PENALTY_WARNING).map(|d| (side, d)))
        .map(|(side, d)| format!("{side}'s p50 {:.2}x its solo round's", d.penalty))
        .collect();
    if !over.is_empty() {
        merged.validity.warnings.push(loadgate_results::Problem {
            kind: "duet_penalty".into(),
            message: format!(
                "in duet rounds {}: the sides slow each other (CPU-bound servers sharing CPUs?), so the change \
                 measured together may differ from the change alone; pin the targets to separate CPUs",
                over.join(", ")
            ),
        });
    }
}

/// Lists an instance's discarded rounds in its merged result, and warns about them in its reports.
fn note_discarded(merged: &mut ScenarioResult, discarded: &[DiscardedRound]) {
    merged.discarded_rounds = discarded.to_vec();
    if discarded.is_empty() {
        return;
    }
    let list = discarded
        .iter()
        .map(|d| if d.sides.is_empty() { d.round.to_string() } else { format!("{} ({})", d.round, d.sides.join(", ")) })
        .collect::<Vec<_>>()
        .join(", ");
    merged.validity.warnings.push(loadgate_results::Problem {
        kind: "rounds_rerun".into(),
        message: format!(
            "{} round{} invalid as a measurement, discarded and run again: round {list}",
            discarded.len(),
            if discarded.len() == 1 { " was" } else { "s were" }
        ),
    });
}

/// Merges an instance's repetitions and judges its SLOs over them (against the paired baseline side in an
/// A/B run, or the stored baseline).
fn judged_result(
    phase: &Phase,
    mine: &[ScenarioResult],
    paired: Option<&[ScenarioResult]>,
    rounds: &[u32],
    plan: &ExecutionPlan,
    baseline: Option<&RunResults>,
    look: Option<f64>,
) -> Option<ScenarioResult> {
    if mine.is_empty() {
        return None;
    }
    let stored = baseline.and_then(|b| loadgate_results::baseline_for(b, &mine[0]));
    // Paired rounds: only rounds both sides finished.
    let n = paired.map_or(mine.len(), |a| a.len().min(mine.len()));
    let baseline = match (paired, stored) {
        (Some(a), _) => Baseline::Paired(&a[..n]),
        (None, Some(b)) => Baseline::Stored(b),
        (None, None) => Baseline::None,
    };
    // In sequential mode each look is judged at its share of the confidence, so that the run keeps it over all
    // its looks; an instance with its own `repeat` has one look.
    let g = &plan.gating;
    let confidence = if let Some(c) = look {
        c
    } else if phase.repeat.is_none() && g.sequential() {
        g.look_confidence(g.look_at(u32::try_from(n).unwrap_or(u32::MAX)))
    } else {
        g.confidence
    };
    match loadgate_results::gate::judge(&phase.slos, &mine[..n.max(1).min(mine.len())], rounds, baseline, confidence) {
        Ok(r) => Some(r),
        Err(_) => mine.last().cloned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::{Ran, Task};
    use loadgate_results::{InconclusiveCause, StatisticalStatus};

    /// A plan of one gated scenario `main` (1 s rounds) with this gating line, and a candidate when `ab`.
    fn plan(gating: &str, ab: bool, slo: &str) -> ExecutionPlan {
        let yaml = format!(
            "version: 1\nname: r\ntarget: {{ builtin: plaintext }}\n{}{gating}\nscenarios:\n  main:\n    request: {{ path: / }}\n    load: {{ closed: {{ connections: 1, duration: 1s }} }}\n    slo: [\"{slo}\"]\n",
            if ab { "candidate: { builtin: plaintext }\n" } else { "" }
        );
        let spec = loadgate_spec::load_str("r.yaml", &yaml, &loadgate_spec::LoadOptions::default()).unwrap();
        loadgate_plan::compile(&spec)
    }

    /// A result of `main` whose latencies have this mean (ms), valid unless `problem` says why not.
    fn result(mean_ms: f64, problem: Option<&str>) -> ScenarioResult {
        let mut r = loadgate_results::fixture::sweep_cell(1, 1000.0, mean_ms);
        r.duration = 1.0;
        r.validity.problems.clear();
        r.validity.valid = problem.is_none();
        if let Some(message) = problem {
            r.validity.problems.push(loadgate_results::Problem { kind: "x".into(), message: message.into() });
        }
        r
    }

    fn output(side: Side, round: u32) -> AttachmentOutput {
        AttachmentOutput { name: "probe".into(), data: format!("{}{round}", side.letter()).into_bytes(), completed: 10 }
    }

    /// The events' warnings and plans, as text.
    fn said(log: &mut Vec<String>) -> impl FnMut(&Event<'_>) + '_ {
        move |e: &Event<'_>| match e {
            Event::Warning(w) => log.push(w.clone()),
            Event::GatePlanned { plan, .. } => log.push(format!("planned x{}", plan.round_scale)),
            _ => {}
        }
    }

    #[test]
    fn each_sides_result_is_kept_with_its_round_and_what_its_attachments_gave() {
        let p = plan("gating: { repeat: 3 }", true, "p99 <= baseline * 1.5");
        let mut r = Rounds::new(&p, &Schedule::new(&p));
        for round in 1..=2 {
            for side in [Side::Candidate, Side::Target] {
                r.keep(0, round, side, result(1.0 + f64::from(round), None), vec![output(side, round)]);
            }
        }
        assert_eq!(r.kept(0, Side::Target).len(), 2);
        assert_eq!(r.attached(0, Side::Candidate)[1], vec![output(Side::Candidate, 2)]);
        assert_eq!(r.instances[0].rounds, [1, 2], "a round counts once, with its pair");
    }

    #[test]
    fn solo_rounds_are_kept_apart_and_give_each_sides_duet_penalty() {
        let yaml = "version: 1\nname: r\ntarget: { builtin: plaintext }\ncandidate: { builtin: plaintext }\n\
                    gating: { repeat: 3, order: duet }\nscenarios:\n  main:\n    request: { path: / }\n    \
                    load: { open: { rate: 100/s, duration: 1s, connections: 4 } }\n    slo: [p99 <= baseline * 1.5]\n";
        let spec = loadgate_spec::load_str("r.yaml", yaml, &loadgate_spec::LoadOptions::default()).unwrap();
        let p = loadgate_plan::compile(&spec);
        let mut s = Schedule::new(&p);
        let mut r = Rounds::new(&p, &s);
        // Alone, A's p50 is 2 ms and B's 4 ms; together, A's is 2 ms and B's 5 ms (1.25x: over the warning).
        r.keep_solo(0, Side::Target, result(2.0, None));
        r.keep_solo(0, Side::Candidate, result(4.0, None));
        for round in 1..=3 {
            r.keep(0, round, Side::Target, result(2.0, None), vec![]);
            r.keep(0, round, Side::Candidate, result(5.0, None), vec![]);
        }
        assert_eq!(r.kept(0, Side::Target).len(), 3, "solo rounds are none of the rounds");
        while let Some(task) = s.next_task() {
            if let Task::Run(u) = task {
                assert_eq!(u.sides.together, crate::schedule::Together::AtOnce);
                for side in u.sides.each() {
                    s.ran(0, side, Ran::Valid);
                }
            }
        }
        let j = Judgement { phase: 0, round: 3, last: true };
        let merged = r.judge(&p, &j, None, &s).expect("a result");
        let b = merged.duet.as_ref().expect("B's penalty");
        let a = merged.ab_baseline.as_ref().and_then(|a| a.duet.as_ref()).expect("A's penalty");
        assert!((a.penalty - 1.0).abs() < 0.05, "{a:?}");
        assert!((b.penalty - 1.25).abs() < 0.1, "{b:?}");
        let warning = merged.validity.warnings.iter().find(|w| w.kind == "duet_penalty").expect("a warning");
        assert!(warning.message.contains("B's p50 1.2"), "{}", warning.message);
        assert!(!warning.message.contains("A's"), "A's penalty is under 1.10: {}", warning.message);
    }

    #[test]
    fn a_round_invalid_on_one_side_is_discarded_with_its_pair_and_says_why() {
        let p = plan("gating: { repeat: 3, rerun_invalid: 2 }", true, "p99 <= baseline * 1.5");
        let mut r = Rounds::new(&p, &Schedule::new(&p));
        r.keep(0, 1, Side::Target, result(1.0, None), vec![output(Side::Target, 1)]);
        r.keep(0, 1, Side::Candidate, result(1.0, None), vec![]);
        r.keep(0, 2, Side::Target, result(1.0, None), vec![output(Side::Target, 2)]);
        r.keep(0, 2, Side::Candidate, result(1.0, Some("the generator was saturated")), vec![]);
        let d = Discard { phase: 0, round: 2, sides: vec![Side::Candidate], nth: 1, allowed: 2 };
        let mut log = Vec::new();
        r.discard(&p, &d, &mut said(&mut log));
        assert_eq!(r.kept(0, Side::Target).len(), 1, "the pair goes too");
        assert_eq!(r.kept(0, Side::Candidate).len(), 1);
        assert_eq!(r.attached(0, Side::Target), [vec![output(Side::Target, 1)]]);
        assert_eq!(r.instances[0].rounds, [1]);
        let discarded = r.discarded(0);
        assert_eq!(discarded.len(), 1);
        assert_eq!((discarded[0].round, discarded[0].sides.clone()), (2, vec!["B".to_owned()]));
        assert_eq!(discarded[0].reasons, ["B: the generator was saturated"]);
        assert!(log[0].contains("round 2 was invalid as a measurement (B: the generator was saturated)"), "{log:?}");
        assert!(log[0].ends_with("(1 of 2 allowed)"), "{log:?}");
        // The judged result lists it and warns.
        let j = Judgement { phase: 0, round: 2, last: false };
        let judged = r.judge(&p, &j, None, &Schedule::new(&p)).unwrap();
        assert_eq!(judged.discarded_rounds.len(), 1);
        assert!(judged.validity.warnings.iter().any(|w| w.kind == "rounds_rerun" && w.message.contains("round 2 (B)")));
    }

    #[test]
    fn a_single_run_is_judged_as_it_ran() {
        let p = plan("", false, "p99 < 1s");
        let mut r = Rounds::new(&p, &Schedule::new(&p));
        assert!(r.judge(&p, &Judgement { phase: 0, round: 1, last: true }, None, &Schedule::new(&p)).is_none());
        let one = result(2.0, None);
        r.keep(0, 1, Side::Target, one.clone(), vec![]);
        let judged = r.judge(&p, &Judgement { phase: 0, round: 1, last: true }, None, &Schedule::new(&p)).unwrap();
        assert_eq!(judged.throughput, one.throughput);
        assert!(judged.judged.verdicts.iter().all(|v| v.statistics.is_none()), "no statistics over one run");
    }

    #[test]
    fn repetitions_are_judged_at_their_looks_share_of_the_confidence() {
        let reps: Vec<ScenarioResult> = (1..=6).map(|n| result(1.0 + f64::from(n) / 10.0, None)).collect();
        // The instance's verdicts, and the verdicts the gate gives the same repetitions at `confidence`.
        let judged_and_at = |gating: &str, confidence: &dyn Fn(&loadgate_model::Gating) -> f64| {
            let p = plan(gating, false, "p99 < 1s");
            let s = Schedule::new(&p);
            let mut r = Rounds::new(&p, &s);
            for (round, rep) in (1..).zip(&reps) {
                r.keep(0, round, Side::Target, rep.clone(), vec![]);
            }
            let judged = r.judge(&p, &Judgement { phase: 0, round: 6, last: true }, None, &s).unwrap();
            let rounds: Vec<u32> = (1..=6).collect();
            let c = confidence(&p.gating);
            let direct = loadgate_results::gate::judge(&p.phases[0].slos, &reps, &rounds, Baseline::None, c).unwrap();
            (judged.measured.judged.verdicts, direct.measured.judged.verdicts, c)
        };
        let (judged, direct, c) = judged_and_at("gating: { repeat: 6, confidence: 90% }", &|g| g.confidence);
        assert_eq!(judged, direct, "one look: the whole confidence ({c})");
        assert!(judged[0].statistics.is_some(), "judged over repetitions");
        let (judged, direct, c) = judged_and_at("gating: { repeat: 4, max_repeat: 12, confidence: 90% }", &|g| {
            g.look_confidence(g.look_at(6))
        });
        assert!(c > 0.9, "the second look keeps a share of the error: {c}");
        assert_eq!(judged, direct, "judged at the look of 6 rounds");
    }

    #[test]
    fn a_budgeted_instance_is_planned_after_its_pilot_and_judged_with_its_plan_and_for_budget_at_its_end() {
        // A/B, 20 s of budget, a pilot of 4 rounds; both sides alike with a wide spread: never decided.
        let p = plan("gating: { detect: 10%, budget: 20s, repeat: 4 }", true, "p99 <= baseline * 1.01");
        let mut s = Schedule::new(&p);
        let mut r = Rounds::new(&p, &s);
        let mut log = Vec::new();
        let mut judged = Vec::new();
        while let Some(task) = s.next_task() {
            match task {
                Task::Run(u) => {
                    for side in u.sides.each() {
                        let mean = if (u.round + side.index() as u32) % 2 == 0 { 1.0 } else { 3.0 };
                        s.ran(u.phase, side, Ran::Valid);
                        r.keep(u.phase, u.round, side, result(mean, None), vec![]);
                    }
                }
                Task::Plan { phase } => r.plan(&p, phase, &mut s, &mut said(&mut log)),
                Task::Judge(j) => {
                    let result = r.judge(&p, &j, None, &s).unwrap();
                    let inconclusive =
                        result.judged.verdicts.iter().any(|v| {
                            v.statistics.as_ref().is_some_and(|st| st.status == StatisticalStatus::Inconclusive)
                        });
                    s.judged(j.phase, inconclusive);
                    judged.push((j, result));
                }
                _ => {}
            }
        }
        assert!(s.units(0).is_some_and(|(spent, _, cap)| spent <= cap), "never past the budget");
        let made = r.power_plan(0).expect("a plan from the pilot's spread");
        assert_eq!(log.iter().filter(|l| l.starts_with("planned")).count(), 1, "told once, up front: {log:?}");
        let (pilot, _) = &judged[3];
        assert_eq!(pilot.round, 4, "the pilot's own judgement comes after its plan");
        let (last, end) = judged.last().unwrap();
        assert!(last.last);
        assert_eq!(end.power_plan.as_ref(), Some(made), "the judged result carries its plan");
        let st = end.judged.verdicts[0].statistics.as_ref().unwrap();
        assert_eq!(st.detect, Some(0.10), "each verdict beside the change asked");
        assert_eq!(st.status, StatisticalStatus::Inconclusive);
        assert_eq!(st.cause, Some(InconclusiveCause::Budget), "undecided when the budget ended: {st:?}");
        assert_eq!(st.reason, "budget");
        // Before the end, a verdict is never marked for the budget.
        for (j, result) in &judged[..judged.len() - 1] {
            let cause = result.judged.verdicts[0].statistics.as_ref().and_then(|st| st.cause);
            assert_ne!(cause, Some(InconclusiveCause::Budget), "round {}", j.round);
        }
    }
}
