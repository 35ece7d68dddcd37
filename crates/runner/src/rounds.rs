//! The order in which repetitions run: rounds interleaved across scenario instances (round 1 runs every
//! instance once, then round 2, ...), and in an A/B run both sides in each round, in ABBA or a seeded shuffled
//! order, so that the noise of a given minute hits both sides alike.

use loadgate_plan::{ExecutionPlan, Phase, RoundOrder};

/// One side of a run: the spec's `target` (A, the baseline) or its `candidate` (B).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    Target,
    Candidate,
}

impl Side {
    /// `A` or `B`, as reports name them.
    pub fn letter(self) -> &'static str {
        match self {
            Side::Target => "A",
            Side::Candidate => "B",
        }
    }

    pub(crate) fn index(self) -> usize {
        match self {
            Side::Target => 0,
            Side::Candidate => 1,
        }
    }
}

/// How often each phase runs and in which order the sides go.
#[derive(Debug, Clone)]
pub struct Rounds {
    /// Rounds wanted per phase (index = phase index); grows in sequential mode.
    wanted: Vec<u32>,
    /// The most rounds per phase.
    max: Vec<u32>,
    /// The rounds after which sequential mode looks at the verdicts.
    looks: Vec<u32>,
    /// Rounds of each phase discarded as invalid measurements (and run again).
    discarded: Vec<u32>,
    /// How many may be, per phase (`gating.rerun_invalid`).
    rerun_budget: u32,
    ab: bool,
    order: RoundOrder,
    seed: u64,
}

impl Rounds {
    /// The plan's rounds: a gated phase runs `repeat` times (its own or `gating.repeat`); a phase that is not
    /// gated (a warmup) runs in the first round only.
    pub fn new(plan: &ExecutionPlan) -> Rounds {
        let g = &plan.gating;
        let (wanted, max): (Vec<u32>, Vec<u32>) = plan.phases.iter().map(|p| plan.rounds_of(p)).unzip();
        Rounds {
            discarded: vec![0; wanted.len()],
            wanted,
            max,
            looks: g.looks(),
            rerun_budget: g.rerun_invalid,
            ab: plan.candidate.is_some(),
            order: g.order,
            seed: plan.seed,
        }
    }

    /// Whether any phase runs more than once or on two sides: verdicts then come from statistics.
    pub fn statistical(&self) -> bool {
        self.ab || self.max.iter().any(|m| *m > 1)
    }

    /// The phases of round `round` (from 1), in plan order.
    pub fn phases<'p>(&self, plan: &'p ExecutionPlan, round: u32) -> Vec<&'p Phase> {
        plan.phases.iter().filter(|p| self.wanted[p.index] >= round).collect()
    }

    /// The sides in round `round`, in the order they run.
    pub fn sides(&self, round: u32) -> Vec<Side> {
        if !self.ab {
            return vec![Side::Target];
        }
        let b_first = match self.order {
            RoundOrder::Abba => round % 2 == 0,
            RoundOrder::Shuffle => splitmix(self.seed ^ u64::from(round)) & 1 == 1,
        };
        if b_first {
            vec![Side::Candidate, Side::Target]
        } else {
            vec![Side::Target, Side::Candidate]
        }
    }

    /// Sequential mode: the rounds for `phase` up to its next look (`gating.looks()`), if it may have more.
    /// Looks count the rounds that were kept: a discarded round's replacement does not bring a look forward.
    /// Returns whether it got any.
    pub fn extend(&mut self, phase: usize) -> bool {
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
    pub fn rerun(&mut self, phase: usize) -> bool {
        if self.discarded[phase] >= self.rerun_budget {
            return false;
        }
        self.discarded[phase] += 1;
        self.wanted[phase] += 1;
        self.max[phase] += 1;
        true
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

    /// The last round any phase wants.
    pub fn last(&self) -> u32 {
        self.wanted.iter().copied().max().unwrap_or(0)
    }
}

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(yaml_gating: &str, candidate: bool) -> ExecutionPlan {
        let yaml = format!(
            "version: 1\nname: r\ntarget: {{ builtin: plaintext }}\n{}{yaml_gating}\nscenarios:\n  warm:\n    gate: false\n    request: {{ path: / }}\n    load: {{ closed: {{ connections: 1, requests: 1 }} }}\n  main:\n    request: {{ path: / }}\n    load: {{ closed: {{ connections: 1, requests: 1 }} }}\n  once:\n    repeat: 1\n    request: {{ path: / }}\n    load: {{ closed: {{ connections: 1, requests: 1 }} }}\n",
            if candidate { "candidate: { builtin: plaintext }\n" } else { "" }
        );
        let spec = loadgate_spec::load_str("r.yaml", &yaml, &loadgate_spec::LoadOptions::default()).unwrap();
        loadgate_plan::compile(&spec)
    }

    #[test]
    fn rounds_interleave_instances_and_warmups_run_once() {
        let p = plan("gating: { repeat: 3, max_repeat: 5 }", false);
        let mut r = Rounds::new(&p);
        let names = |round| r.phases(&p, round).iter().map(|p| p.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(1), ["warm", "main", "once"]);
        assert_eq!(names(2), ["main"]);
        assert_eq!(names(3), ["main"]);
        assert!(names(4).is_empty());
        assert!(r.extend(1), "sequential mode adds rounds");
        assert_eq!(r.wanted(1), 5, "up to the next look (3 x 1.5, folded into max_repeat)");
        assert!(!r.extend(1), "sequential mode stops at max_repeat");
        assert!(!r.extend(2), "a scenario with its own repeat is not extended");
        assert_eq!(r.last(), 5);
        assert_eq!(r.sides(1), [Side::Target]);
    }

    #[test]
    fn an_invalid_round_is_run_again_within_the_budget_and_looks_count_kept_rounds() {
        let p = plan("gating: { repeat: 4, max_repeat: 12, rerun_invalid: 2 }", false);
        let mut r = Rounds::new(&p);
        assert_eq!(p.gating.looks(), [4, 6, 9, 12]);
        assert!(r.rerun(1), "round 2 was invalid: one more round");
        assert_eq!((r.wanted(1), r.discarded(1)), (5, 1));
        assert_eq!(r.last(), 5);
        assert!(r.extend(1));
        assert_eq!(r.wanted(1), 7, "the next look is at 6 kept rounds, 7 with the discarded one");
        assert!(r.rerun(1));
        assert!(!r.rerun(1), "the budget of 2 is spent");
        assert_eq!((r.wanted(1), r.discarded(1)), (8, 2));
        assert!(r.extend(1));
        assert_eq!(r.wanted(1), 11, "9 kept rounds, plus the two discarded");
        assert!(r.extend(1));
        assert_eq!(r.wanted(1), 14, "max_repeat kept rounds, plus the two discarded");
        assert!(!r.extend(1));
    }

    #[test]
    fn ab_rounds_alternate_abba() {
        let p = plan("gating: { repeat: 4 }", true);
        let r = Rounds::new(&p);
        assert!(r.statistical());
        let order: Vec<String> =
            (1..=4).map(|round| r.sides(round).iter().map(|s| s.letter()).collect::<String>()).collect();
        assert_eq!(order, ["AB", "BA", "AB", "BA"]);
    }
}
