//! One side's stacks of one round as its attachment output carries them (what the sources write and
//! [`super::summarize`] reads), and the output of a round whose profile failed.

use loadgate_results::stacks::Stacks;
use serde::{Deserialize, Serialize};

use crate::attach::{AttachmentOutput, PhaseOutcome};

/// The name of a profile's attachment output.
pub const PROFILE: &str = "profile";

/// One side's stacks of one round, as its attachment output carries them.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct RoundStacks {
    /// `cpu`, `command` or `pprof`.
    pub(crate) source: String,
    /// What a sample counts (`cpu`, `alloc`, `contentions`, ...).
    pub(crate) sample_type: String,
    /// CPU nanoseconds a sample stands for; `None` when samples are not time.
    pub(crate) ns_per_sample: Option<f64>,
    pub(crate) stacks: Stacks,
    pub(crate) notes: Vec<String>,
}

/// A round whose profile could not be taken, and why.
pub(crate) fn failed(source: &str, note: String) -> RoundStacks {
    RoundStacks {
        source: source.into(),
        sample_type: source.into(),
        ns_per_sample: None,
        stacks: Stacks::new(),
        notes: vec![note],
    }
}

/// The attachment output that carries a round's stacks.
pub(crate) fn output(round: RoundStacks, outcome: &PhaseOutcome) -> AttachmentOutput {
    AttachmentOutput {
        name: PROFILE.into(),
        data: serde_json::to_vec(&round).unwrap_or_default(),
        completed: outcome.completed,
    }
}
