//! What runs next: a pure scheduler of a run's rounds, as [`crate::capacity::Search`] is of a search's steps.
//!
//! Given the plan, a [`Schedule`] answers [`Schedule::next_task`] with the next [`Task`]: verify the targets before
//! any load, wait for a shard's synchronised start, restart the targets before a round (`gating.restart:
//! each_round`), run one instance on its sides in one round ([`Unit`]), discard a round invalid as a measurement
//! with its pair ([`Discard`]), plan a budgeted instance's rounds after its pilot ([`Task::Plan`]), or judge an
//! instance once all its sides ran in the round ([`Judgement`]). The loop that executes the tasks tells it what
//! happened ([`Schedule::ran`], [`Schedule::judged`], [`Schedule::follow`], [`Schedule::stop`]); from that alone it
//! decides when sequential mode looks and adds rounds, when a round is rerun, and when the run ends (it alone
//! knows whether, and why, the run stopped). It opens no socket and reads no clock: every
//! composition (a single run, repetitions, A/B rounds, a shard's slice, a capacity search's instance) is the same
//! schedule of a different plan, tested here without a target.
//!
//! The order: rounds interleaved across scenario instances (round 1 runs every instance once, then round 2, ...),
//! and in an A/B run both sides in each round, in ABBA or a seeded shuffled order, so that the noise of a given
//! minute hits both sides alike. A phase that is not gated (a warmup) runs in the first round only.

use std::collections::VecDeque;

use loadgate_plan::{ExecutionPlan, Restart, RoundOrder};

mod tasks;

pub use tasks::{Discard, Judgement, Ran, Side, Sides, Task, Together, Unit};

/// What the queue of a round holds: a task, or an instance to judge once its sides ran (the judgement, a
/// discard and a plan are decided when it is reached).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Queued {
    Task(Task),
    Judge { phase: usize, round: u32 },
}

/// The rounds of a run: how often each phase runs, in which order the sides go, and when it ends.
#[derive(Debug, Clone)]
pub struct Schedule {
    /// Rounds wanted per phase (index = phase index); grows in sequential mode and with reruns.
    wanted: Vec<u32>,
    /// The most rounds per phase.
    max: Vec<u32>,
    /// Whether each phase is gated (only gated phases' invalid rounds are rerun).
    gate: Vec<bool>,
    /// The rounds after which sequential mode looks at the verdicts.
    looks: Vec<u32>,
    /// Rounds of each phase discarded as invalid measurements (and run again).
    discarded: Vec<u32>,
    /// How many may be, per phase (`gating.rerun_invalid`).
    rerun_budget: u32,
    ab: bool,
    order: RoundOrder,
    seed: u64,
    restart_each_round: bool,
    statistical: bool,
    /// The current round (0 before the first).
    round: u32,
    /// The tasks left in the current round.
    queue: VecDeque<Queued>,
    /// The sides of each phase that ran invalid in the current round.
    invalid: Vec<Vec<Side>>,
    /// The phases judged inconclusive in the current round.
    inconclusive: Vec<bool>,
    /// The phase whose units have started in this round and which is not judged yet.
    in_progress: Option<usize>,
    /// Why the run stopped, once it did (the first reason given).
    stopped: Option<String>,
    /// Per phase: its load budget when `gating.budget` plans its rounds.
    budgets: Vec<Option<Budget>>,
}

/// A budgeted phase's load (`gating.detect` / `gating.budget`), in units of one pilot round on every side: the
/// looks count the units kept, the budget the units run (discarded rounds too), and a round after the plan
/// (`Schedule::follow`) costs `scale` units.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Budget {
    /// The most units the phase may run (`ExecutionPlan::budget_units`).
    cap: u32,
    /// The looks, in units kept: fixed before any round ran, so their shares of the confidence are too.
    looks: Vec<u32>,
    spent: u32,
    kept: u32,
    /// The length of the rounds from now on, in pilot rounds.
    scale: u32,
    /// Whether the plan was made (after the pilot's look).
    planned: bool,
}

impl Schedule {
    /// The plan's rounds: a gated phase runs `repeat` times (its own or `gating.repeat`), up to `max_repeat` in
    /// sequential mode; a phase that is not gated runs in the first round only.
    pub fn new(plan: &ExecutionPlan) -> Schedule {
        let g = &plan.gating;
        let (wanted, max): (Vec<u32>, Vec<u32>) = plan.phases.iter().map(|p| plan.rounds_of(p)).unzip();
        let ab = plan.candidate.is_some();
        let n = wanted.len();
        let budgets = plan
            .phases
            .iter()
            .zip(&wanted)
            .map(|(p, first)| {
                // A duet instance's solo rounds (one unit: each side alone once) come out of its budget before
                // the looks are fixed, so that its last look stays within reach.
                let solo = u32::from(ab && g.order == RoundOrder::Duet && p.gate);
                let cap = plan.budget_units(p)?.saturating_sub(solo).max(1);
                let looks = loadgate_model::looks_between(*first, cap);
                Some(Budget { cap, looks, spent: 0, kept: 0, scale: 1, planned: false })
            })
            .collect();
        // Before any round: the verification, then a shard's synchronised start.
        let verifies = plan.phases.iter().any(|p| p.checks.verify);
        let queue = [(verifies, Task::Verify), (plan.shard.is_some(), Task::Start)]
            .into_iter()
            .filter_map(|(wanted, task)| wanted.then_some(Queued::Task(task)))
            .collect();
        Schedule {
            budgets,
            statistical: ab || max.iter().any(|m| *m > 1),
            gate: plan.phases.iter().map(|p| p.gate).collect(),
            discarded: vec![0; n],
            wanted,
            max,
            looks: g.looks(),
            rerun_budget: g.rerun_invalid,
            ab,
            order: g.order,
            seed: plan.seed,
            restart_each_round: g.restart == Restart::EachRound,
            round: 0,
            queue,
            invalid: vec![Vec::new(); n],
            inconclusive: vec![false; n],
            in_progress: None,
            stopped: None,
        }
    }

    /// Whether any phase runs more than once or on two sides: verdicts then come from statistics.
    pub fn statistical(&self) -> bool {
        self.statistical
    }

    /// Whether `phase` has had its pilot and waits for its plan (`gating.detect` / `gating.budget`).
    fn wants_plan(&self, phase: usize) -> bool {
        self.budgets[phase].as_ref().is_some_and(|b| !b.planned && b.looks.first().is_some_and(|l| b.kept >= *l))
    }

    /// Follows the plan for `phase`: its rounds from now on are `scale` pilot rounds long (1 keeps them), and
    /// its budget at most `cap` units (the pilot's measured load per round may exceed its planned duration: the
    /// drain of the requests in flight at each round's end). The looks stay where they were fixed.
    pub fn follow(&mut self, phase: usize, scale: u32, cap: u32) {
        if let Some(b) = self.budgets[phase].as_mut() {
            b.scale = scale.max(1);
            b.cap = b.cap.min(cap);
            b.planned = true;
        }
    }

    /// How many pilot rounds long `phase`'s rounds are now (1 unless a plan lengthened them).
    pub fn scale(&self, phase: usize) -> u32 {
        self.budgets[phase].as_ref().map_or(1, |b| b.scale)
    }

    /// A budgeted phase's load so far, its cap and its looks, in pilot rounds (units): `(spent, kept, cap)`.
    pub fn units(&self, phase: usize) -> Option<(u32, u32, u32)> {
        self.budgets[phase].as_ref().map(|b| (b.spent, b.kept, b.cap))
    }

    /// The two-sided confidence a budgeted phase is judged at now: its last look reached, at that look's share
    /// of `confidence` (the looks count units, fixed before the run). `None` for a phase without a budget.
    pub fn look_confidence(&self, phase: usize, confidence: f64) -> Option<f64> {
        let b = self.budgets[phase].as_ref()?;
        let look = b.looks.iter().rposition(|l| *l <= b.kept).unwrap_or(0);
        Some(loadgate_model::share_of_confidence(confidence, look, b.looks.len()))
    }

    /// Whether `phase`'s budget cannot take another round: a verdict still undecided stays so for `budget`.
    pub fn out_of_budget(&self, phase: usize) -> bool {
        self.budgets[phase].as_ref().is_some_and(|b| b.spent + b.scale > b.cap)
    }

    /// The sides of the run, target first.
    pub fn all_sides(&self) -> &'static [Side] {
        if self.ab {
            &[Side::Target, Side::Candidate]
        } else {
            &[Side::Target]
        }
    }

    /// The next task, or `None` when the run is over (every planned round ran, or it was stopped).
    pub fn next_task(&mut self) -> Option<Task> {
        if self.queue.is_empty() && self.stopped.is_none() {
            self.end_round();
            self.begin_round();
        }
        match self.queue.pop_front()? {
            Queued::Judge { phase, round } => {
                self.in_progress = None;
                self.judgement(phase, round);
                self.next_task()
            }
            Queued::Task(Task::Run(unit)) => {
                self.in_progress = Some(unit.phase);
                Some(Task::Run(unit))
            }
            Queued::Task(Task::Solo(unit)) => {
                self.in_progress = Some(unit.phase);
                Some(Task::Solo(unit))
            }
            Queued::Task(task) => Some(task),
        }
    }

    /// A side of a unit ran: an invalid one may have its round rerun when the instance is judged.
    pub fn ran(&mut self, phase: usize, side: Side, ran: Ran) {
        if ran == Ran::Invalid {
            self.invalid[phase].push(side);
        }
    }

    /// The instance's verdict after its judgement: an inconclusive one gets the rounds up to the next look
    /// (sequential mode) when the round ends.
    pub fn judged(&mut self, phase: usize, inconclusive: bool) {
        self.inconclusive[phase] = inconclusive;
    }

    /// The run stops (a failure, an abort, a halted session), for `reason` (the first one given is kept): the
    /// instance in progress is still judged, with what it has; nothing else runs.
    pub fn stop(&mut self, reason: impl Into<String>) {
        self.stopped.get_or_insert_with(|| reason.into());
        self.queue.clear();
        if let Some(phase) = self.in_progress {
            self.queue.push_back(Queued::Judge { phase, round: self.round });
        }
    }

    /// Why the run stopped, once [`Schedule::stop`] was called.
    pub fn stopped(&self) -> Option<&str> {
        self.stopped.as_deref()
    }

    /// How many rounds of `phase` were discarded and run again.
    pub fn discarded(&self, phase: usize) -> u32 {
        self.discarded[phase]
    }

    /// The most rounds of a phase that may be discarded (`gating.rerun_invalid`).
    pub fn rerun_budget(&self) -> u32 {
        self.rerun_budget
    }

    /// The rounds planned for a phase so far.
    pub fn wanted(&self, phase: usize) -> u32 {
        self.wanted[phase]
    }

    /// The sides in round `round`, in the order they run.
    pub fn sides(&self, round: u32) -> [Option<Side>; 2] {
        if !self.ab {
            return [Some(Side::Target), None];
        }
        let b_first = match self.order {
            // A duet's order is its lanes': which side is each worker's first.
            RoundOrder::Abba | RoundOrder::Duet => round % 2 == 0,
            RoundOrder::Shuffle => loadgate_model::splitmix64(&mut (self.seed ^ u64::from(round))) & 1 == 1,
        };
        if b_first {
            [Some(Side::Candidate), Some(Side::Target)]
        } else {
            [Some(Side::Target), Some(Side::Candidate)]
        }
    }

    /// Sequential mode at the end of a round: each instance judged inconclusive in it, whose planned rounds end
    /// with it, gets the rounds up to its next look.
    fn end_round(&mut self) {
        for phase in 0..self.wanted.len() {
            if std::mem::take(&mut self.inconclusive[phase]) && self.wanted[phase] == self.round {
                self.extend(phase);
            }
        }
    }

    /// The tasks of the next round, if any phase wants it.
    fn begin_round(&mut self) {
        let round = self.round + 1;
        if round > self.last() {
            return;
        }
        self.round = round;
        if round > 1 && self.restart_each_round {
            self.queue.push_back(Queued::Task(Task::Restart { round }));
        }
        let order = self.sides(round);
        for phase in (0..self.wanted.len()).filter(|p| self.wanted[*p] >= round) {
            // Duet rounds load a gated phase's sides at once; warmups still run in turn.
            let together = if self.ab && self.order == RoundOrder::Duet && self.gate[phase] {
                Together::AtOnce
            } else {
                Together::InTurn
            };
            let sides = Sides { order, together };
            if round == 1 && together == Together::AtOnce {
                let solo = Unit { phase, round, sides: Sides { order, together: Together::InTurn } };
                // Its unit of load was taken out of the budget when the looks were fixed.
                self.queue.push_back(Queued::Task(Task::Solo(solo)));
            }
            self.invalid[phase].clear();
            self.queue.push_back(Queued::Task(Task::Run(Unit { phase, round, sides })));
            self.queue.push_back(Queued::Judge { phase, round });
        }
    }

    /// The judgement of `phase` in `round`, queued first: before it, its round discarded when it was invalid on
    /// a side and the rerun budget allows (a gated instance of a statistical run, not when stopping), then a
    /// budgeted instance's plan when its pilot just ended; `last` as planned after that.
    fn judgement(&mut self, phase: usize, round: u32) {
        let invalid = std::mem::take(&mut self.invalid[phase]);
        let stopped = self.stopped.is_some();
        let discard: Option<Vec<Side>> = (!stopped && self.statistical && self.gate[phase] && !invalid.is_empty())
            .then(|| self.rerun(phase, round))
            .filter(|granted| *granted)
            .map(|_| self.all_sides().iter().copied().filter(|s| invalid.contains(s)).collect());
        if let Some(b) = self.budgets[phase].as_mut() {
            b.spent += b.scale;
            if discard.is_none() {
                b.kept += b.scale;
            }
        }
        let last = stopped || self.wanted[phase] == round;
        self.queue.push_front(Queued::Task(Task::Judge(Judgement { phase, round, last })));
        if self.wants_plan(phase) {
            self.queue.push_front(Queued::Task(Task::Plan { phase }));
        }
        if let Some(sides) = discard {
            let (nth, allowed) = (self.discarded[phase], self.rerun_budget);
            self.queue.push_front(Queued::Task(Task::Discard(Discard { phase, round, sides, nth, allowed })));
        }
    }

    /// Sequential mode: the rounds for `phase` up to its next look (`gating.looks()`), if it may have more.
    /// Looks count the rounds that were kept: a discarded round's replacement does not bring a look forward.
    fn extend(&mut self, phase: usize) -> bool {
        if let Some(b) = &self.budgets[phase] {
            let add = budgeted_rounds(b);
            self.wanted[phase] += add;
            return add > 0;
        }
        if self.wanted[phase] >= self.max[phase] {
            return false;
        }
        let d = self.discarded[phase];
        let kept = self.wanted[phase] - d;
        let next = self.looks.iter().copied().find(|l| *l > kept).map_or(self.max[phase], |l| l + d);
        self.wanted[phase] = next.min(self.max[phase]);
        true
    }

    /// A round of `phase` was invalid as a measurement: if the budget (`gating.rerun_invalid`) allows, it is
    /// discarded and one more round is planned in its place (returns true); else it stays and decides.
    fn rerun(&mut self, phase: usize, round: u32) -> bool {
        if self.discarded[phase] >= self.rerun_budget {
            return false;
        }
        // The round run again must fit the load budget too, after this one and the rounds planned after it.
        let later = self.wanted[phase].saturating_sub(round);
        if self.budgets[phase].as_ref().is_some_and(|b| b.spent + (2 + later) * b.scale > b.cap) {
            return false;
        }
        self.discarded[phase] += 1;
        self.wanted[phase] += 1;
        self.max[phase] += 1;
        true
    }

    /// The last round any phase wants.
    fn last(&self) -> u32 {
        self.wanted.iter().copied().max().unwrap_or(0)
    }
}

/// The rounds a budgeted phase adds up to its next look (counted in units kept), as many as its budget allows.
fn budgeted_rounds(b: &Budget) -> u32 {
    let next = b.looks.iter().copied().find(|l| *l > b.kept).unwrap_or(b.cap);
    let wanted = next.saturating_sub(b.kept).div_ceil(b.scale);
    let fit = b.cap.saturating_sub(b.spent) / b.scale;
    wanted.min(fit)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three instances: `warm` (not gated), `main`, `once` (`repeat: 1`), with the given gating line.
    fn plan(yaml_gating: &str, candidate: bool) -> ExecutionPlan {
        // Duet rounds refuse closed loads: the gated instances then run an open one.
        let gated_load = if yaml_gating.contains("duet") {
            "load: { open: { rate: 10/s, duration: 1s, connections: 1 } }"
        } else {
            "load: { closed: { connections: 1, requests: 1 } }"
        };
        let yaml = format!(
            "version: 1\nname: r\ntarget: {{ builtin: plaintext }}\n{}{yaml_gating}\nscenarios:\n  warm:\n    gate: false\n    request: {{ path: / }}\n    load: {{ closed: {{ connections: 1, requests: 1 }} }}\n  main:\n    request: {{ path: / }}\n    {gated_load}\n  once:\n    repeat: 1\n    request: {{ path: / }}\n    {gated_load}\n",
            if candidate { "candidate: { builtin: plaintext }\n" } else { "" }
        );
        let spec = loadgate_spec::load_str("r.yaml", &yaml, &loadgate_spec::LoadOptions::default()).unwrap();
        loadgate_plan::compile(&spec)
    }

    const NAMES: [&str; 3] = ["warm", "main", "once"];

    /// One side of a unit, as the tests' closures see it.
    struct One {
        phase: usize,
        side: Side,
        round: u32,
    }

    /// Drives `s` to its end the way the run loop does: every side of every unit ran as `ran` says, every
    /// judgement answered with `inconclusive(phase, round)`. Returns the tasks, written `R2` (restart before round
    /// 2), `main@1A` (a side of a unit), `judge main@1` (`+last`, ` discard A` when a discard came before it).
    fn drive(
        s: &mut Schedule,
        mut ran: impl FnMut(&One) -> Ran,
        mut inconclusive: impl FnMut(usize, u32) -> bool,
    ) -> Vec<String> {
        let mut log = Vec::new();
        let mut discard = String::new();
        while let Some(task) = s.next_task() {
            match task {
                Task::Restart { round } => log.push(format!("R{round}")),
                Task::Run(u) => {
                    for side in u.sides.each() {
                        s.ran(u.phase, side, ran(&One { phase: u.phase, side, round: u.round }));
                    }
                    let letters: Vec<&str> = u.sides.each().map(Side::letter).collect();
                    match u.sides.together {
                        Together::InTurn => {
                            log.extend(letters.iter().map(|l| format!("{}@{}{l}", NAMES[u.phase], u.round)));
                        }
                        Together::AtOnce => log.push(format!("{}@{}{}", NAMES[u.phase], u.round, letters.join("+"))),
                    }
                }
                Task::Discard(d) => {
                    discard = format!(" discard {}", d.sides.iter().map(|s| s.letter()).collect::<Vec<_>>().join(""));
                }
                Task::Judge(j) => {
                    s.judged(j.phase, inconclusive(j.phase, j.round));
                    log.push(format!(
                        "judge {}@{}{}{}",
                        NAMES[j.phase],
                        j.round,
                        std::mem::take(&mut discard),
                        if j.last { " last" } else { "" }
                    ));
                }
                Task::Solo(u) => {
                    let letters: Vec<&str> = u.sides.each().map(Side::letter).collect();
                    log.push(format!("solo {}@{}{}", NAMES[u.phase], u.round, letters.join("")));
                }
                Task::Verify | Task::Start | Task::Plan { .. } => log.push(format!("{task:?}")),
            }
        }
        log
    }

    fn units(log: &[String]) -> Vec<&str> {
        log.iter().filter(|l| !l.starts_with("judge")).map(String::as_str).collect()
    }

    #[test]
    fn a_single_run_runs_every_instance_once_and_judges_each() {
        let p = plan("", false);
        let mut s = Schedule::new(&p);
        assert!(!s.statistical(), "one run, one side: no statistics");
        let log = drive(&mut s, |_| Ran::Valid, |_, _| false);
        assert_eq!(
            log,
            ["warm@1A", "judge warm@1 last", "main@1A", "judge main@1 last", "once@1A", "judge once@1 last"]
        );
    }

    #[test]
    fn an_invalid_single_run_is_not_rerun() {
        let p = plan("gating: { rerun_invalid: 3 }", false);
        let mut s = Schedule::new(&p);
        let log = drive(&mut s, |_| Ran::Invalid, |_, _| false);
        assert_eq!(log.len(), 6, "not statistical: an invalid run stays and decides: {log:?}");
    }

    #[test]
    fn rounds_interleave_instances_and_warmups_run_once() {
        let p = plan("gating: { repeat: 3 }", false);
        let mut s = Schedule::new(&p);
        assert!(s.statistical());
        let log = drive(&mut s, |_| Ran::Valid, |_, _| false);
        assert_eq!(units(&log), ["warm@1A", "main@1A", "once@1A", "main@2A", "main@3A"]);
        assert!(log.contains(&"judge main@3 last".to_owned()));
        assert!(log.contains(&"judge main@2".to_owned()), "{log:?}");
    }

    #[test]
    fn sequential_mode_adds_rounds_up_to_each_look_while_inconclusive() {
        let p = plan("gating: { repeat: 3, max_repeat: 5 }", false);
        let mut s = Schedule::new(&p);
        // Inconclusive at every look: 3 rounds, then up to the next look (3 x 1.5 folded into max_repeat = 5).
        let log = drive(&mut s, |_| Ran::Valid, |phase, _| phase == 1);
        let main: Vec<&str> = units(&log).into_iter().filter(|u| u.starts_with("main")).collect();
        assert_eq!(main, ["main@1A", "main@2A", "main@3A", "main@4A", "main@5A"]);
        assert_eq!(s.wanted(1), 5, "never past max_repeat");
        assert_eq!(s.wanted(2), 1, "an instance with its own repeat has one look");
        assert!(log.contains(&"judge main@3 last".to_owned()), "round 3 was the last planned when judged");
    }

    #[test]
    fn sequential_mode_stops_at_the_first_conclusive_look() {
        let p = plan("gating: { repeat: 4, max_repeat: 12 }", false);
        let mut s = Schedule::new(&p);
        assert_eq!(p.gating.looks(), [4, 6, 9, 12]);
        // Inconclusive at the first look (4), decided at the second (6).
        let log = drive(&mut s, |_| Ran::Valid, |phase, round| phase == 1 && round < 6);
        assert_eq!(units(&log).iter().filter(|u| u.starts_with("main")).count(), 6);
        assert_eq!(s.wanted(1), 6);
    }

    #[test]
    fn an_inconclusive_verdict_between_looks_adds_nothing() {
        let p = plan("gating: { repeat: 4, max_repeat: 12 }", false);
        let mut s = Schedule::new(&p);
        // Inconclusive only at round 2, which is not a look: the plan of 4 rounds stands.
        let log = drive(&mut s, |_| Ran::Valid, |phase, round| phase == 1 && round == 2);
        assert_eq!(units(&log).iter().filter(|u| u.starts_with("main")).count(), 4);
    }

    #[test]
    fn an_invalid_round_is_run_again_within_the_budget_and_looks_count_kept_rounds() {
        let p = plan("gating: { repeat: 4, max_repeat: 12, rerun_invalid: 2 }", false);
        let mut s = Schedule::new(&p);
        // Rounds 2 and 3 of `main` invalid (both rerun), round 5 invalid too (the budget of 2 is spent: it stays);
        // inconclusive at every look.
        let log = drive(
            &mut s,
            |u| if u.phase == 1 && [2, 3, 5].contains(&u.round) { Ran::Invalid } else { Ran::Valid },
            |p, _| p == 1,
        );
        assert!(log.contains(&"judge main@2 discard A".to_owned()), "{log:?}");
        assert!(log.contains(&"judge main@3 discard A".to_owned()), "{log:?}");
        assert!(log.contains(&"judge main@5".to_owned()), "the third invalid round is kept: {log:?}");
        assert_eq!(s.discarded(1), 2);
        assert_eq!(s.rerun_budget(), 2);
        // 12 kept rounds (max_repeat) plus the 2 discarded.
        assert_eq!(units(&log).iter().filter(|u| u.starts_with("main")).count(), 14);
        assert_eq!(s.wanted(1), 14);
        assert!(log.last().unwrap().ends_with("main@14 last"), "{log:?}");
    }

    #[test]
    fn a_rerun_does_not_bring_a_look_forward() {
        let p = plan("gating: { repeat: 4, max_repeat: 12, rerun_invalid: 2 }", false);
        let mut s = Schedule::new(&p);
        // Round 2 invalid: 5 rounds for 4 kept; inconclusive at round 5 (the first look, of 4 kept rounds): the
        // next look is at 6 kept rounds, 7 with the discarded one; conclusive there.
        let log = drive(&mut s, |u| if u.round == 2 { Ran::Invalid } else { Ran::Valid }, |p, r| p == 1 && r < 7);
        assert_eq!(units(&log).iter().filter(|u| u.starts_with("main")).count(), 7, "{log:?}");
    }

    #[test]
    fn an_invalid_warmup_is_never_rerun() {
        let p = plan("gating: { repeat: 2, rerun_invalid: 2 }", false);
        let mut s = Schedule::new(&p);
        let log = drive(&mut s, |u| if u.phase == 0 { Ran::Invalid } else { Ran::Valid }, |_, _| false);
        assert!(log.contains(&"judge warm@1 last".to_owned()), "{log:?}");
        assert_eq!(s.discarded(0), 0);
    }

    #[test]
    fn ab_rounds_alternate_abba() {
        let p = plan("gating: { repeat: 4 }", true);
        let mut s = Schedule::new(&p);
        assert!(s.statistical());
        let log = drive(&mut s, |_| Ran::Valid, |_, _| false);
        let main: Vec<&str> = units(&log).into_iter().filter(|u| u.starts_with("main")).collect();
        assert_eq!(main, ["main@1A", "main@1B", "main@2B", "main@2A", "main@3A", "main@3B", "main@4B", "main@4A"]);
        assert_eq!(units(&log)[..2], ["warm@1A", "warm@1B"], "a warmup warms both sides");
    }

    #[test]
    fn duet_rounds_load_both_sides_at_once_alternating_the_first_lane_and_warmups_run_in_turn() {
        let p = plan("gating: { repeat: 4, order: duet }", true);
        let mut s = Schedule::new(&p);
        let log = drive(&mut s, |_| Ran::Valid, |_, _| false);
        let main: Vec<&str> = units(&log).into_iter().filter(|u| u.contains("main")).collect();
        assert_eq!(main, ["solo main@1AB", "main@1A+B", "main@2B+A", "main@3A+B", "main@4B+A"]);
        assert_eq!(units(&log)[..2], ["warm@1A", "warm@1B"], "a warmup is not gated: it runs in turn");
    }

    #[test]
    fn ab_rounds_shuffle_by_the_seed_and_every_round_has_both_sides() {
        let p = plan("gating: { repeat: 16, order: shuffle }", true);
        let mut s = Schedule::new(&p);
        let log = drive(&mut s, |_| Ran::Valid, |_, _| false);
        let orders: Vec<String> = (1..=16)
            .map(|r| {
                units(&log)
                    .iter()
                    .filter(|u| u.starts_with(&format!("main@{r}")) && u.len() == format!("main@{r}A").len())
                    .map(|u| u.chars().last().unwrap())
                    .collect()
            })
            .collect();
        assert!(orders.iter().all(|o| o == "AB" || o == "BA"), "{orders:?}");
        assert!(orders.iter().any(|o| o == "BA") && orders.iter().any(|o| o == "AB"), "{orders:?}");
        let again: Vec<[Option<Side>; 2]> = (1..=16).map(|r| Schedule::new(&p).sides(r)).collect();
        assert_eq!(again, (1..=16).map(|r| s.sides(r)).collect::<Vec<_>>(), "the same seed, the same order");
    }

    #[test]
    fn an_ab_round_invalid_on_one_side_is_discarded_with_its_pair() {
        let p = plan("gating: { repeat: 2, rerun_invalid: 1 }", true);
        let mut s = Schedule::new(&p);
        let log = drive(
            &mut s,
            |u| if u.phase == 1 && u.round == 1 && u.side == Side::Candidate { Ran::Invalid } else { Ran::Valid },
            |_, _| false,
        );
        assert!(log.contains(&"judge main@1 discard B".to_owned()), "{log:?}");
        assert_eq!(units(&log).iter().filter(|u| u.starts_with("main")).count(), 6, "3 rounds of both sides");
    }

    #[test]
    fn restart_each_round_restarts_before_every_round_after_the_first() {
        let p = plan("gating: { repeat: 3, restart: each_round }", false);
        let mut s = Schedule::new(&p);
        let log = drive(&mut s, |_| Ran::Valid, |_, _| false);
        assert_eq!(units(&log), ["warm@1A", "main@1A", "once@1A", "R2", "main@2A", "R3", "main@3A"]);
    }

    #[test]
    fn a_stop_judges_the_instance_in_progress_and_runs_nothing_else() {
        let p = plan("gating: { repeat: 3 }", true);
        let mut s = Schedule::new(&p);
        let mut log = Vec::new();
        while let Some(task) = s.next_task() {
            if let Task::Run(u) = &task {
                if u.phase == 1 && u.round == 2 {
                    // An abort (or a failed phase, a halted session) on the first side of round 2.
                    s.ran(u.phase, u.sides.each().next().unwrap(), Ran::Invalid);
                    s.stop("aborted");
                    s.stop("a later reason");
                }
            }
            log.push(task);
        }
        assert_eq!(s.stopped(), Some("aborted"), "the first reason is kept");
        let last = log.last().unwrap();
        assert_eq!(
            last,
            &Task::Judge(Judgement { phase: 1, round: 2, last: true }),
            "judged with what it has, never discarded while stopping"
        );
        assert!(!log.iter().any(|t| matches!(t, Task::Discard(_))));
        assert!(!log.iter().any(|t| matches!(t, Task::Run(u) if u.phase == 2 && u.round > 1)));
        assert_eq!(s.next_task(), None, "stopped stays stopped");
    }

    #[test]
    fn a_run_that_verifies_verifies_first_and_a_shard_meets_the_others_before_its_first_round() {
        let mut p = plan("", false);
        p.phases[1].checks.verify = true;
        p.shard = Some(loadgate_plan::Slice { index: 1, count: 2 });
        let log = drive(&mut Schedule::new(&p), |_| Ran::Valid, |_, _| false);
        assert_eq!(log[..3], ["Verify", "Start", "warm@1A"]);
        // A failed start stops the run before any round.
        let mut s = Schedule::new(&p);
        assert_eq!(s.next_task(), Some(Task::Verify));
        assert_eq!(s.next_task(), Some(Task::Start));
        s.stop("shard 1/2 did not start");
        assert_eq!(s.next_task(), None);
        // Neither without a verifying phase or a slice.
        assert_eq!(drive(&mut Schedule::new(&plan("", false)), |_| Ran::Valid, |_, _| false)[0], "warm@1A");
    }

    /// A plan whose scenarios run for 1 s: `warm` (not gated) and `main`, with the given gating line.
    fn timed_plan(yaml_gating: &str, candidate: bool) -> ExecutionPlan {
        let yaml = format!(
            "version: 1\nname: r\ntarget: {{ builtin: plaintext }}\n{}{yaml_gating}\nscenarios:\n  warm:\n    gate: false\n    request: {{ path: / }}\n    load: {{ closed: {{ connections: 1, duration: 1s }} }}\n  main:\n    request: {{ path: / }}\n    load: {{ closed: {{ connections: 1, duration: 1s }} }}\n",
            if candidate { "candidate: { builtin: plaintext }\n" } else { "" }
        );
        let spec = loadgate_spec::load_str("r.yaml", &yaml, &loadgate_spec::LoadOptions::default()).unwrap();
        loadgate_plan::compile(&spec)
    }

    /// Drives a budgeted schedule: every round valid unless `invalid(round)`, `main` inconclusive before
    /// `decided_at`, the plan (when wanted) a round length of `scale`. Returns the rounds of `main` run.
    fn drive_budgeted(s: &mut Schedule, scale: u32, decided_at: u32, invalid: impl Fn(u32) -> bool) -> u32 {
        let mut rounds = 0;
        while let Some(task) = s.next_task() {
            match task {
                Task::Run(u) => {
                    for side in u.sides.each() {
                        s.ran(u.phase, side, if u.phase == 1 && invalid(u.round) { Ran::Invalid } else { Ran::Valid });
                    }
                    rounds += u32::from(u.phase == 1);
                }
                Task::Judge(j) => s.judged(j.phase, j.phase == 1 && j.round < decided_at),
                Task::Plan { phase } => s.follow(phase, scale, u32::MAX),
                _ => {}
            }
        }
        rounds
    }

    #[test]
    fn a_budget_caps_the_load_after_the_warmups_and_the_looks_count_units() {
        // 20 s of load, 1 s of warmup: 19 rounds of 1 s of `main`; a pilot of 4.
        let p = timed_plan("gating: { budget: 20s, repeat: 4 }", false);
        assert_eq!(p.rounds_of(&p.phases[1]), (4, 19));
        let mut s = Schedule::new(&p);
        assert_eq!(drive_budgeted(&mut s, 1, u32::MAX, |_| false), 19, "never past the budget");
        assert_eq!(s.units(1), Some((19, 19, 19)));
        assert!(s.out_of_budget(1));
        assert!(!s.out_of_budget(0), "the warmup has no budget of its own");
        let last = s.look_confidence(1, 0.90).unwrap();
        assert!((last - 0.95).abs() < 1e-12, "the last look keeps half the error: {last}");
        // A pilot whose rounds measured longer than planned shrinks the budget's rounds, never the looks.
        let mut s = Schedule::new(&p);
        while let Some(task) = s.next_task() {
            match task {
                Task::Run(u) => u.sides.each().for_each(|side| s.ran(u.phase, side, Ran::Valid)),
                Task::Judge(j) => s.judged(j.phase, j.phase == 1),
                Task::Plan { phase } => s.follow(phase, 1, 15),
                _ => {}
            }
        }
        assert_eq!(s.wanted(1), 15);
        assert_eq!(s.units(1), Some((15, 15, 15)));
        let at = s.look_confidence(1, 0.90).unwrap();
        assert!((at - (1.0 - 0.10 * 0.5 / 4.0)).abs() < 1e-12, "judged at the look of 14 units, its own share: {at}");
    }

    #[test]
    fn a_plan_lengthens_the_rounds_after_the_pilot_and_the_budget_counts_both_sides() {
        // A/B: 40 s, 2 s of warmup on both sides: 19 units of 2 s; looks after 4, 6, 9, 14 and 19 units.
        let p = timed_plan("gating: { detect: 10%, budget: 40s, repeat: 4 }", true);
        assert_eq!(p.budget_units(&p.phases[1]), Some(19));
        let mut s = Schedule::new(&p);
        // Rounds of 3 units after the pilot: to 6 (1 round, 7 kept), 9 (1, 10), 14 (2, 16), 19 (1, 19).
        assert_eq!(drive_budgeted(&mut s, 3, u32::MAX, |_| false), 4 + 1 + 1 + 2 + 1);
        assert_eq!(s.scale(1), 3);
        assert_eq!(s.units(1), Some((19, 19, 19)));
        assert!(s.out_of_budget(1));
    }

    #[test]
    fn a_budgeted_run_stops_at_the_first_conclusive_look() {
        let p = timed_plan("gating: { detect: 10%, budget: 40s, repeat: 4 }", true);
        let mut s = Schedule::new(&p);
        // Inconclusive after the pilot (4 units) and at 7; decided at the third look (round 6: 10 units).
        assert_eq!(drive_budgeted(&mut s, 3, 6, |_| false), 6);
        assert!(!s.out_of_budget(1));
        let at = s.look_confidence(1, 0.90).unwrap();
        assert!(at > 0.95 && at < 1.0, "an early look's share: {at}");
    }

    #[test]
    fn a_pilots_plan_is_asked_once_after_its_last_kept_round_and_before_its_judgement() {
        // A pilot of 4 kept rounds; round 2 invalid and discarded: the plan comes after round 5.
        let p = timed_plan("gating: { budget: 11s, repeat: 4, rerun_invalid: 3 }", false);
        let mut s = Schedule::new(&p);
        let mut log = Vec::new();
        while let Some(task) = s.next_task() {
            match &task {
                Task::Run(u) => {
                    let ran = if u.phase == 1 && u.round == 2 { Ran::Invalid } else { Ran::Valid };
                    u.sides.each().for_each(|side| s.ran(u.phase, side, ran));
                }
                Task::Judge(j) => s.judged(j.phase, j.phase == 1),
                Task::Plan { phase } => s.follow(*phase, 1, u32::MAX),
                _ => {}
            }
            log.push(task);
        }
        let at = |t: &Task| log.iter().position(|l| l == t).unwrap_or_else(|| panic!("{t:?} in {log:?}"));
        let discard = Task::Discard(Discard { phase: 1, round: 2, sides: vec![Side::Target], nth: 1, allowed: 3 });
        assert_eq!(at(&discard) + 1, at(&Task::Judge(Judgement { phase: 1, round: 2, last: false })));
        assert_eq!(log.iter().filter(|t| matches!(t, Task::Plan { .. })).count(), 1, "{log:?}");
        // Round 5 ends the pilot (4 kept rounds) and its planned rounds: the plan then gives the rounds after it.
        assert_eq!(at(&Task::Plan { phase: 1 }) + 1, at(&Task::Judge(Judgement { phase: 1, round: 5, last: true })));
    }

    #[test]
    fn a_round_run_again_must_fit_the_budget() {
        // 10 rounds of budget, a pilot of 4: round 2 invalid, run again (the budget has room); round 10 invalid,
        // kept (its replacement would be the 11th).
        let p = timed_plan("gating: { budget: 11s, repeat: 4, rerun_invalid: 3 }", false);
        let mut s = Schedule::new(&p);
        assert_eq!(drive_budgeted(&mut s, 1, u32::MAX, |r| r == 2 || r == 10), 10);
        assert_eq!(s.discarded(1), 1);
        assert_eq!(s.units(1), Some((10, 9, 10)));
    }

    #[test]
    fn a_stop_before_a_round_ends_the_run_at_once() {
        let p = plan("gating: { repeat: 3, restart: each_round }", false);
        let mut s = Schedule::new(&p);
        let mut tasks = Vec::new();
        while let Some(task) = s.next_task() {
            if task == (Task::Restart { round: 2 }) {
                // The target could not be restarted.
                s.stop("the target could not be restarted for round 2");
            }
            tasks.push(task);
        }
        assert_eq!(tasks.last(), Some(&Task::Restart { round: 2 }));
    }
}
