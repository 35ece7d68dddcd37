//! The executor of a run, as nextest's: it runs sessions and keeps no books. It starts one session per side (the
//! target, and the candidate of an A/B run), verifies them, restarts them, runs a [`Unit`] (an instance's phase
//! on these sides, in turn, with attachments around each side's measured phase) and finishes them, and hands
//! back what each step gave: the results, the verification, how the sessions ended. What the run keeps of it is
//! the round-keeping's ([`crate::rounds`]) and the ledger's; what runs next and whether the run stopped is the
//! schedule's ([`crate::schedule`]).

use std::collections::HashSet;
use std::sync::Arc;

use loadgate_model::units::CpuList;
use loadgate_plan::{ExecutionPlan, Phase, TargetPlan, WorkerPlan};
use loadgate_results::{ResourceSample, RunResults, ScenarioResult, VerifiedScenario};

use crate::abort::aborted_by_slo;
use crate::attach::{Attachment, AttachmentOutput, PhaseOutcome, Running, SideContext};
use crate::checkpoint::Checkpointer;
use crate::event::{Event, Observer};
use crate::schedule::{Side, Sides, Together};
use crate::session::{Halt, Session, SessionEnd, SessionOptions};
use crate::target::{RunningTarget, TargetOptions};

/// What the executor runs: an instance's phase as it runs (a budget's plan may lengthen it) in round `round`, on
/// each of `sides` as they share the round, with `attachments` started and stopped around each side's phase.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Unit<'a> {
    pub phase: &'a Phase,
    pub round: u32,
    pub sides: Sides,
    pub attachments: &'a [Arc<dyn Attachment>],
}

/// One side's run of a unit: its result and what its attachments gave.
#[derive(Debug)]
pub(crate) struct SideRun {
    pub side: Side,
    pub result: ScenarioResult,
    pub attached: Vec<AttachmentOutput>,
}

/// What a unit gave: the sides that ran, in order, and why the run must stop after them, if it must.
#[derive(Debug, Default)]
pub(crate) struct UnitRun {
    pub sides: Vec<SideRun>,
    pub stop: Option<Stopping>,
}

/// Why a unit stops the run: `reason` names what stopped it for the instances left unrun; `failure`, when the run
/// could not be carried out, says what failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stopping {
    pub reason: String,
    pub failure: Option<String>,
}

/// How the executor starts and runs its sessions: the same for the whole run.
#[derive(Debug)]
pub(crate) struct Setup<'a> {
    pub plan: &'a ExecutionPlan,
    pub targets: TargetOptions<'a>,
    pub workers: Vec<WorkerPlan>,
    pub opts: SessionOptions,
    pub checkpoint: Option<Arc<Checkpointer>>,
    /// The sides of the run, target first.
    pub sides: &'static [Side],
    /// Whether the run repeats or compares: its events then name rounds.
    pub statistical: bool,
    /// Duet rounds on two or more target CPUs: the halves the targets get (the first side of a unit the first
    /// half, so they swap with the sides' order between rounds). `None`: they share the target CPUs.
    pub duet_cpus: Option<[CpuList; 2]>,
}

/// One session per side, and how to start them again.
#[derive(Debug)]
pub(crate) struct Executor<'a> {
    setup: Setup<'a>,
    sessions: Vec<Session>,
}

impl<'a> Executor<'a> {
    /// Starts one session per side. `Err`: why they could not start (the observer was told).
    pub(crate) fn start(setup: Setup<'a>, observer: &mut dyn Observer) -> Result<Executor<'a>, String> {
        let sessions = start_sessions(&setup, observer)?;
        Ok(Executor { setup, sessions })
    }

    /// The target of `side` (the target's when the run has one side).
    pub(crate) fn target(&self, side: Side) -> Option<&RunningTarget> {
        self.sessions.get(side.index()).or(self.sessions.first()).map(Session::target)
    }

    /// The target's (side A's) resource samples in the current session.
    pub(crate) fn samples(&self) -> Vec<ResourceSample> {
        self.sessions.first().map(|s| s.samples().target).unwrap_or_default()
    }

    /// Verification before the load (`verify:`, TechEmpower's verify): each phase that verifies sends its requests
    /// once (`verify.requests` times) on one connection of each side, through the engine and its checks; the same
    /// requests verify once. Every scenario verified, and `Err` with what came back at the first that failed.
    pub(crate) fn verify(&mut self, observer: &mut dyn Observer) -> (Vec<VerifiedScenario>, Result<(), String>) {
        let plan = self.setup.plan;
        let mut verified = Vec::new();
        let mut seen = HashSet::new();
        for (side, session) in self.sessions.iter_mut().enumerate() {
            for phase in plan.phases.iter().filter(|p| p.checks.verify) {
                if !seen.insert((side, loadgate_plan::verify::probe_key(phase))) {
                    continue;
                }
                let probe = loadgate_plan::verify::probe(phase, plan.verify.requests);
                let name = if side == 0 { phase.scenario.clone() } else { format!("{} (candidate)", phase.scenario) };
                let result = match session.verify(&probe) {
                    Ok(r) => r,
                    Err(e) => return (verified, Err(format!("the verification of `{name}` could not run: {e}"))),
                };
                let judged = loadgate_results::verify::judge(&name, &loadgate_plan::verify::entries(&probe), &result);
                observer.event(&Event::Verified { verified: &judged });
                let failed = judged.message.clone();
                verified.push(judged);
                if let Some(why) = failed {
                    return (verified, Err(format!("verification failed, no load was sent: {name}: {why}")));
                }
            }
        }
        (verified, Ok(()))
    }

    /// `gating.restart: each_round`: the sessions end and start again. How they ended, and `Err` when they could
    /// not start again.
    pub(crate) fn restart(&mut self, observer: &mut dyn Observer) -> (Vec<SessionEnd>, Result<(), String>) {
        let ended = self.sessions.drain(..).map(Session::finish).collect();
        match start_sessions(&self.setup, observer) {
            Ok(s) => {
                self.sessions = s;
                (ended, Ok(()))
            }
            Err(message) => (ended, Err(message)),
        }
    }

    /// Runs a unit: its phase (a capacity search's whole search) on each of its sides, judged against `baseline`
    /// where its SLOs are relative. Stops at the first side that must stop the run (its session halted, its phase
    /// could not run, an `abort_on_fail` SLO).
    pub(crate) fn run(
        &mut self,
        unit: &Unit<'_>,
        baseline: Option<&RunResults>,
        observer: &mut dyn Observer,
    ) -> UnitRun {
        match unit.sides.together {
            Together::InTurn => self.in_turn(unit, baseline, observer),
            Together::AtOnce => self.at_once(unit, baseline, observer),
        }
    }

    /// The sides at once, in one phase of the engine (a duet round): the unit's first side is each worker's first
    /// lane. Each side's attachments start and stop around the one phase with that side's target.
    fn at_once(&mut self, unit: &Unit<'_>, baseline: Option<&RunResults>, observer: &mut dyn Observer) -> UnitRun {
        let [Some(first), Some(second)] = unit.sides.order else {
            return self.in_turn(unit, baseline, observer);
        };
        let (i, j) = (first.index(), second.index());
        if i == j || i.max(j) >= self.sessions.len() {
            let failure = "a duet round needs both targets running".to_owned();
            let stop = Stopping { reason: format!("the run stopped: {failure}"), failure: Some(failure) };
            return UnitRun { sides: Vec::new(), stop: Some(stop) };
        }
        if let Some(stop) = self.sessions.iter().find_map(halted) {
            return UnitRun { sides: Vec::new(), stop: Some(stop) };
        }
        let phase = unit.phase;
        // Each target on its half of the target CPUs, the unit's first side on the first: what fixed asymmetry
        // the CPUs carry alternates with the sides' order.
        if let Some(halves) = &self.setup.duet_cpus {
            for (side, cpus) in [first, second].into_iter().zip(halves) {
                if let Err(e) = self.sessions[side.index()].target().set_cpus(cpus) {
                    observer.event(&Event::Warning(format!(
                        "{}: {} could not move to CPUs {cpus}: {e}",
                        phase.name,
                        side.letter()
                    )));
                }
            }
        }
        let mut running = Vec::with_capacity(2);
        for side in [first, second] {
            observer.event(&Event::InstanceStarting {
                phase,
                round: self.setup.statistical.then_some(unit.round),
                side: Some(side),
            });
            running.push(start_attachments(unit, side, self.sessions[side.index()].target(), observer));
        }
        let (low, high) = self.sessions.split_at_mut(1);
        let pair = match (&mut low[0], &mut high[0]) {
            (a, b) if i == 0 => [a, b],
            (a, b) => [b, a],
        };
        let results = crate::session::run_together(pair, [first, second], phase, baseline, observer);
        let mut ran = UnitRun::default();
        match results {
            Ok(results) => {
                for ((side, mut result), running) in [first, second].into_iter().zip(results).zip(running) {
                    let outcome = PhaseOutcome::of(&result);
                    let attached = running.into_iter().map(|r| r.stop(&outcome, Some(&mut result))).collect();
                    if self.setup.statistical {
                        observer.event(&Event::RepetitionFinished { phase, round: unit.round, side, result: &result });
                    }
                    if aborted_by_slo(result.aborted.as_deref()) {
                        let reason = format!("the run stopped after {} breached an abort_on_fail SLO", phase.name);
                        ran.stop = Some(Stopping { reason, failure: None });
                    }
                    ran.sides.push(SideRun { side, result, attached });
                }
            }
            Err(e) => {
                for r in running.into_iter().flatten() {
                    r.stop(&PhaseOutcome::default(), None);
                }
                observer.event(&Event::PhaseFailed { phase, error: e.to_string() });
                ran.stop = Some(Stopping {
                    reason: format!("the run stopped when {} could not run", phase.name),
                    failure: Some(format!("{} could not run: {e}", phase.name)),
                });
            }
        }
        let cooldown = phase.cooldown.as_std();
        if ran.stop.is_none() && !cooldown.is_zero() && !self.setup.opts.interrupt.is_interrupted() {
            std::thread::sleep(cooldown);
        }
        ran
    }

    /// The sides one after the other, each after the phase's cooldown of the one before.
    fn in_turn(&mut self, unit: &Unit<'_>, baseline: Option<&RunResults>, observer: &mut dyn Observer) -> UnitRun {
        let mut ran = UnitRun::default();
        for side in unit.sides.each() {
            match self.run_side(unit, side, baseline, observer) {
                Ok(one) => {
                    let aborted = aborted_by_slo(one.result.aborted.as_deref());
                    ran.sides.push(one);
                    if aborted {
                        let reason = format!("the run stopped after {} breached an abort_on_fail SLO", unit.phase.name);
                        ran.stop = Some(Stopping { reason, failure: None });
                        break;
                    }
                }
                Err(stop) => {
                    ran.stop = Some(stop);
                    break;
                }
            }
            let cooldown = unit.phase.cooldown.as_std();
            if !cooldown.is_zero() && !self.setup.opts.interrupt.is_interrupted() {
                std::thread::sleep(cooldown);
            }
        }
        ran
    }

    /// One side of a unit: its attachments started, its phase run, its attachments stopped.
    fn run_side(
        &mut self,
        unit: &Unit<'_>,
        side: Side,
        baseline: Option<&RunResults>,
        observer: &mut dyn Observer,
    ) -> Result<SideRun, Stopping> {
        let (phase, statistical, ab) = (unit.phase, self.setup.statistical, self.setup.sides.len() > 1);
        let last = self.sessions.len().saturating_sub(1);
        let Some(session) = self.sessions.get_mut(side.index().min(last)) else {
            let failure = "the target is not running".to_owned();
            return Err(Stopping { reason: format!("the run stopped: {failure}"), failure: Some(failure) });
        };
        if let Some(stop) = halted(session) {
            return Err(stop);
        }
        observer.event(&Event::InstanceStarting {
            phase,
            round: statistical.then_some(unit.round),
            side: ab.then_some(side),
        });
        let running = start_attachments(unit, side, session.target(), observer);
        let mut result = crate::capacity::run_instance(session, phase, baseline, observer);
        let outcome = result.as_ref().map_or_else(|_| PhaseOutcome::default(), PhaseOutcome::of);
        let attached = running.into_iter().map(|r| r.stop(&outcome, result.as_mut().ok())).collect();
        let result = result.map_err(|e| {
            observer.event(&Event::PhaseFailed { phase, error: e.to_string() });
            Stopping {
                reason: format!("the run stopped when {} could not run", phase.name),
                failure: Some(format!("{} could not run: {e}", phase.name)),
            }
        })?;
        if statistical {
            observer.event(&Event::RepetitionFinished { phase, round: unit.round, side, result: &result });
        }
        Ok(SideRun { side, result, attached })
    }

    /// Stops the sessions: how each ended, target first.
    pub(crate) fn finish(self) -> Vec<SessionEnd> {
        self.sessions.into_iter().map(Session::finish).collect()
    }
}

/// Why a unit cannot run on `session`, when it cannot.
fn halted(session: &Session) -> Option<Stopping> {
    let reason = match session.halted()? {
        Halt::Interrupted => "the run was interrupted (Ctrl-C)",
        Halt::TargetDied => "the target exited during the run",
    };
    Some(Stopping { reason: reason.to_owned(), failure: None })
}

/// Starts a unit's attachments for `side`, whose target is `target`; one that cannot start is a warning.
fn start_attachments(
    unit: &Unit<'_>,
    side: Side,
    target: &RunningTarget,
    observer: &mut dyn Observer,
) -> Vec<Box<dyn Running>> {
    if unit.attachments.is_empty() {
        return Vec::new();
    }
    let context = SideContext {
        phase: unit.phase,
        round: unit.round,
        side,
        target_pid: target.pid(),
        target_pids: target.pids(),
        base_url: &target.base_url,
    };
    let mut running = Vec::new();
    for a in unit.attachments {
        match a.start(&context) {
            Ok(r) => running.push(r),
            Err(e) => observer.event(&Event::Warning(format!("{}: {e}", unit.phase.name))),
        }
    }
    running
}

/// Starts one session per side (the target, and the candidate of an A/B run).
fn start_sessions(setup: &Setup<'_>, observer: &mut dyn Observer) -> Result<Vec<Session>, String> {
    let (plan, sides) = (setup.plan, setup.sides);
    let mut sessions = Vec::new();
    for side in sides {
        // A duet's targets start on their own halves of the target CPUs.
        let mut options = setup.targets.clone();
        if let Some(halves) = &setup.duet_cpus {
            options.cpus = Some(&halves[side.index()]);
        }
        let target_plan = match side {
            Side::Target => &plan.target,
            Side::Candidate => plan.candidate.as_ref().unwrap_or(&plan.target),
        };
        let target = RunningTarget::start(target_plan, &options, observer).map_err(|message| {
            let message =
                if sides.len() > 1 { format!("{} ({}): {message}", side.letter(), side_name(*side)) } else { message };
            // A target given by URL is not started: its messages name it (`the target URL cannot be talked to`).
            let message = match target_plan {
                TargetPlan::Url { .. } => message,
                _ => format!("the target could not be started: {message}"),
            };
            observer.event(&Event::TargetFailed { error: message.clone() });
            message
        })?;
        let mut session = Session::new(target, setup.workers.clone(), setup.opts.clone());
        if let Some(cpus) = options.cpus {
            session.set_target_cpus(cpus.len());
        }
        if let Some(c) = &setup.checkpoint {
            session.set_checkpoint(Arc::clone(c));
        }
        sessions.push(session);
    }
    Ok(sessions)
}

fn side_name(side: Side) -> &'static str {
    match side {
        Side::Target => "the target",
        Side::Candidate => "the candidate",
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::target::BuiltinServer;

    /// Writes `start B 1234` and `stop B 20` (the requests completed) into the shared log.
    #[derive(Debug)]
    struct Recorder(Arc<Mutex<Vec<String>>>);

    struct Recording(Arc<Mutex<Vec<String>>>, Side, Option<u32>);

    impl Attachment for Recorder {
        fn start(&self, side: &SideContext<'_>) -> Result<Box<dyn Running>, String> {
            assert_eq!(side.target_pids.first().copied(), side.target_pid, "the pid first");
            self.0.lock().unwrap().push(format!("start {} {:?}", side.side.letter(), side.target_pid));
            Ok(Box::new(Recording(Arc::clone(&self.0), side.side, side.target_pid)))
        }
    }

    impl Running for Recording {
        fn stop(self: Box<Self>, outcome: &PhaseOutcome, _: Option<&mut ScenarioResult>) -> AttachmentOutput {
            assert!(!outcome.duration.is_zero());
            self.0.lock().unwrap().push(format!("stop {} {}", self.1.letter(), outcome.completed));
            let data = self.2.map(|pid| pid.to_string().into_bytes()).unwrap_or_default();
            AttachmentOutput { name: "recorder".into(), data, completed: outcome.completed }
        }
    }

    #[test]
    fn an_attachment_is_started_and_stopped_around_each_sides_phase_with_that_sides_target_pid() {
        // Both sides' targets are processes loadgate starts (`sleep`), in front of one server on this process.
        let mut cfg = loadgate_server::ServeConfig::new(loadgate_server::ServerBehaviour::default());
        cfg.threads = 1;
        let server = loadgate_server::spawn_in_process(&cfg).unwrap();
        let target = format!(
            "{{ base_url: \"{}\", start: {{ command: [sleep, \"600\"], ready: {{ tcp: true, timeout: 10s }} }} }}",
            server.base_url()
        );
        let yaml = format!(
            "version: 1\nname: e\ntarget: {target}\ncandidate: {target}\ngating: {{ repeat: 2 }}\nscenarios:\n  main:\n    request: {{ path: / }}\n    load: {{ closed: {{ connections: 1, requests: 20 }} }}\n"
        );
        let spec = loadgate_spec::load_str("e.yaml", &yaml, &loadgate_spec::LoadOptions::default()).unwrap();
        let plan = loadgate_plan::compile(&spec);
        let pinning = crate::prepare::decide_pinning(&plan, false).unwrap().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let opts = SessionOptions {
            saturation: plan.hardware.saturation,
            interrupt: crate::Interrupt::new(),
            origin: std::time::Instant::now(),
        };
        let setup = Setup {
            plan: &plan,
            targets: TargetOptions {
                cpus: None,
                log_dir: dir.path(),
                source_dir: None,
                builtin: &BuiltinServer::InProcess,
            },
            workers: crate::prepare::worker_plans(&plan, &pinning),
            opts,
            checkpoint: None,
            sides: &[Side::Target, Side::Candidate],
            statistical: true,
            duet_cpus: None,
        };
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut observer = |e: &Event<'_>| {
            if let Event::PhaseStarted { .. } = e {
                log.lock().unwrap().push("phase".to_owned());
            }
        };
        let mut executor = Executor::start(setup, &mut observer).unwrap();
        let pid = |side| executor.target(side).and_then(RunningTarget::pid).expect("a started target");
        let (a, b) = (pid(Side::Target), pid(Side::Candidate));
        assert_ne!(a, b);
        let attachments: Vec<Arc<dyn Attachment>> = vec![Arc::new(Recorder(Arc::clone(&log)))];
        let unit = Unit {
            phase: &plan.phases[0],
            round: 2,
            sides: Sides { order: [Some(Side::Candidate), Some(Side::Target)], together: Together::InTurn },
            attachments: &attachments,
        };
        let ran = executor.run(&unit, None, &mut observer);
        assert_eq!(ran.stop, None);
        assert_eq!(
            *log.lock().unwrap(),
            [
                format!("start B Some({b})"),
                "phase".to_owned(),
                "stop B 20".to_owned(),
                format!("start A Some({a})"),
                "phase".to_owned(),
                "stop A 20".to_owned()
            ]
        );
        let sides: Vec<Side> = ran.sides.iter().map(|s| s.side).collect();
        assert_eq!(sides, [Side::Candidate, Side::Target], "in the unit's order");
        for (one, pid) in ran.sides.iter().zip([b, a]) {
            assert_eq!(one.attached.len(), 1, "its side's output comes with its result");
            assert_eq!(one.attached[0].data, pid.to_string().into_bytes());
            assert_eq!(one.attached[0].completed, one.result.requests.completed);
        }
        // Without attachments nothing is started.
        log.lock().unwrap().clear();
        let bare = Unit { attachments: &[], ..unit };
        assert_eq!(executor.run(&bare, None, &mut observer).sides.len(), 2);
        assert_eq!(*log.lock().unwrap(), ["phase", "phase"]);
        let ended = executor.finish();
        assert!(ended.iter().all(|e| e.stop_error.is_none() && e.target_exit.is_none()), "{ended:?}");
        server.shutdown();
    }
}
