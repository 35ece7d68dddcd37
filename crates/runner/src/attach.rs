//! What runs beside a side's measured phase: an [`Attachment`] is started just before a side of a unit runs its
//! phase and stopped just after it, told which process the side's target is and what the phase measured; what it
//! gives back ([`AttachmentOutput`]) comes with that side's result for the round (a per-round profile of the target
//! is one). The executor runs every attachment of a unit around every side alike: a new kind is a new
//! implementation of the trait, never a branch of the executor. The run's attachments are
//! [`crate::RunRequest::attachments`].

use std::time::Duration;

use std::sync::Arc;

use loadgate_plan::{ExecutionPlan, Phase};
use loadgate_results::ScenarioResult;

use crate::event::{Event, Observer};
use crate::schedule::Side;

/// The side an attachment is started for.
#[derive(Debug, Clone)]
pub struct SideContext<'a> {
    /// The phase as it runs (a budget's plan may have lengthened it).
    pub phase: &'a Phase,
    pub round: u32,
    pub side: Side,
    /// The side's target process, when loadgate started one (a command, a built-in server as a process); `None`
    /// for a target given by URL or a built-in server on this process's threads.
    pub target_pid: Option<u32>,
    /// Every process of that target's tree when the side starts (the pid first); empty without a process.
    pub target_pids: Vec<u32>,
    /// Where the side's target answers (a pprof path is fetched from it).
    pub base_url: &'a str,
}

/// What a side's phase measured, told to its attachments when they stop.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PhaseOutcome {
    /// The phase's measured duration (zero when it could not run).
    pub duration: Duration,
    /// The requests it completed.
    pub completed: u64,
}

impl PhaseOutcome {
    pub fn of(result: &ScenarioResult) -> PhaseOutcome {
        PhaseOutcome {
            duration: Duration::try_from_secs_f64(result.duration).unwrap_or_default(),
            completed: result.requests.completed,
        }
    }
}

/// What an attachment gave for one side of one round.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttachmentOutput {
    /// The attachment's name (`profile`, ...).
    pub name: String,
    /// Its data, opaque to the runner.
    pub data: Vec<u8>,
    /// The requests the side's phase completed while it ran.
    pub completed: u64,
}

/// Something started around each side's measured phase.
pub trait Attachment: Send + Sync + std::fmt::Debug {
    /// Checks once, before the run sends any load, what it can do for `plan` on this machine (the privileges it
    /// needs, the programs it runs) and decides what it does in this run. `Ok`: warnings to say once before the
    /// load (what it leaves out, and why); `Err`: it cannot do what the plan requires of it, and the run stops
    /// before the load (exit 3).
    fn prepare(&self, _plan: &ExecutionPlan) -> Result<Vec<String>, String> {
        Ok(Vec::new())
    }

    /// Starts for `side`, just before its phase. `Err`: why it could not (a warning; the side runs without it).
    fn start(&self, side: &SideContext<'_>) -> Result<Box<dyn Running>, String>;
}

/// A started attachment.
pub trait Running {
    /// Stops it just after the side's phase, which measured `outcome`; `result` is the side's result of the
    /// round (`None` when the phase could not run), which the attachment may annotate (the target's CPU time).
    fn stop(self: Box<Self>, outcome: &PhaseOutcome, result: Option<&mut ScenarioResult>) -> AttachmentOutput;
}

/// Prepares a run's attachments before its load: each one's warnings told once; `Err` with the first refusal.
pub(crate) fn prepare(
    attachments: &[Arc<dyn Attachment>],
    plan: &ExecutionPlan,
    observer: &mut dyn Observer,
) -> Result<(), String> {
    for a in attachments {
        for w in a.prepare(plan)? {
            observer.event(&Event::Warning(w));
        }
    }
    Ok(())
}
