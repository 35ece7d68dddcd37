//! What a [`super::Schedule`] answers and is told: the sides of a run, the units, the tasks.

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

    /// 0 for the target, 1 for the candidate.
    pub fn index(self) -> usize {
        match self {
            Side::Target => 0,
            Side::Candidate => 1,
        }
    }
}

/// How a unit's sides share the round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Together {
    /// One after the other, in the unit's order: each side's phase measured on its own.
    InTurn,
    /// At once, in one phase of the engine (`gating.order: duet`): each worker loads both targets at the same
    /// intended instants, the unit's first side as its first lane.
    AtOnce,
}

/// The sides of a unit, in the order they run, and how they share the round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sides {
    pub order: [Option<Side>; 2],
    pub together: Together,
}

impl Sides {
    /// The sides in their order.
    pub fn each(&self) -> impl Iterator<Item = Side> {
        self.order.into_iter().flatten()
    }
}

/// One run of one instance in round `round` (from 1): the plan's phase `phase` on each of `sides`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unit {
    pub phase: usize,
    pub round: u32,
    pub sides: Sides,
}

/// A round of an instance was invalid as a measurement on `sides` and is discarded (both sides: with its pair)
/// and run again, the `nth` of the `allowed` (`gating.rerun_invalid`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discard {
    pub phase: usize,
    pub round: u32,
    pub sides: Vec<Side>,
    pub nth: u32,
    pub allowed: u32,
}

/// An instance's sides all ran in a round (or the run stops): merge its repetitions and judge them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judgement {
    pub phase: usize,
    pub round: u32,
    /// No more rounds of this instance are planned now (its last round, or the run stops): report it as
    /// finished. Sequential mode may still add rounds at the next look.
    pub last: bool,
}

/// What to do next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Task {
    /// Verify the targets before any load (`verify:`): the first task when a phase verifies.
    Verify,
    /// Wait for the shard's synchronised start (the plan is a shard's slice), before the first round.
    Start,
    /// Stop the sessions and start them again before round `round` (`gating.restart: each_round`).
    Restart {
        round: u32,
    },
    Run(Unit),
    /// Run a duet instance's sides alone, in turn, before its first duet round (`gating.order: duet`): each
    /// side's solo round, kept apart from the rounds, measures what loading both at once costs it (the duet
    /// penalty). A budget sets its unit of load aside before it fixes its looks.
    Solo(Unit),
    /// Drop a round's repetitions, both sides', before its instance is judged.
    Discard(Discard),
    /// A budgeted instance's pilot ended (`gating.detect` / `gating.budget`): make the plan for its rounds and
    /// [`super::Schedule::follow`] it, before the instance is judged.
    Plan {
        phase: usize,
    },
    Judge(Judgement),
}

/// What a unit's run showed, as far as the schedule cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ran {
    /// A measurement to keep.
    Valid,
    /// The generator (or the machine) fell short: invalid as a measurement.
    Invalid,
}
