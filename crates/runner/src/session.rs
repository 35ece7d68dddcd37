//! A session: a target that is up and a generator that is pinned, ready to run phases. The unit every
//! composition of runs builds on: a spec's run is one session running each phase once; repetitions, A/B
//! rounds, shards and search steps run phases on one or more sessions as often as they need and merge the
//! results ([`merge`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use loadgate_engine::{EngineError, StopSignal};
use loadgate_machine::sample::{Sampler, SamplerConfig, Samples};
use loadgate_plan::{Arrival, Phase, SaturationPolicy, WorkerPlan};
use loadgate_results::{Problem, RunResults, ScenarioResult, TargetExit};

use crate::abort::AbortWatch;
use crate::event::{Event, Observer};
use crate::interrupt::Interrupt;
use crate::target::RunningTarget;

/// How a session runs its phases.
#[derive(Debug, Clone)]
pub struct SessionOptions {
    /// The spec's `hardware.saturation`.
    pub saturation: SaturationPolicy,
    /// Ctrl-C: stops the running phase and every phase after it.
    pub interrupt: Interrupt,
    /// Result offsets (`started_at_offset`) and resource samples count seconds from here.
    pub origin: Instant,
}

/// A target and a generator ready to run phases. Dropping it stops what it started.
#[derive(Debug)]
pub struct Session {
    workers: Vec<WorkerPlan>,
    target: RunningTarget,
    opts: SessionOptions,
    /// The running phase's stop signal: the target's death or Ctrl-C stops it.
    current_stop: Arc<Mutex<StopSignal>>,
    target_died: Arc<AtomicBool>,
    watcher_done: Arc<AtomicBool>,
    watcher: Option<JoinHandle<()>>,
    sampler: Option<Sampler>,
    /// The CPUs the target may use (its pinning, or the machine's), for judging its CPU saturated.
    target_cpus: usize,
    /// The run's checkpoints, written at the phases' ticks (`run --checkpoint`).
    checkpoint: Option<Arc<crate::checkpoint::Checkpointer>>,
}

/// Why a session will not run another phase.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Halt {
    Interrupted,
    TargetDied,
}

/// What a session leaves when it ends.
#[derive(Debug, Default)]
pub struct SessionEnd {
    /// The target's and the workers' resource samples.
    pub samples: Samples,
    /// How the target ended, when it exited without being asked to.
    pub target_exit: Option<TargetExit>,
    /// A failure to stop the target.
    pub stop_error: Option<String>,
}

impl Session {
    /// Starts watching the target (for its death) and the interrupt flag, and sampling resources.
    pub fn new(target: RunningTarget, workers: Vec<WorkerPlan>, opts: SessionOptions) -> Session {
        let current_stop = Arc::new(Mutex::new(StopSignal::new()));
        let target_died = Arc::new(AtomicBool::new(false));
        if let Some(p) = &target.process {
            let stop = Arc::clone(&current_stop);
            let died = Arc::clone(&target_died);
            p.on_exit(move |exit| {
                if !exit.requested {
                    died.store(true, Ordering::SeqCst);
                    if let Ok(s) = stop.lock() {
                        s.stop(format!("the target exited: {}", exit.status));
                    }
                }
            });
        }
        let watcher_done = Arc::new(AtomicBool::new(false));
        let watcher = {
            let stop = Arc::clone(&current_stop);
            let interrupt = opts.interrupt.clone();
            let done = Arc::clone(&watcher_done);
            std::thread::Builder::new()
                .name("loadgate-interrupt".to_owned())
                .spawn(move || {
                    while !done.load(Ordering::SeqCst) {
                        if interrupt.is_interrupted() {
                            if let Ok(s) = stop.lock() {
                                s.stop("interrupted (Ctrl-C)");
                            }
                        }
                        std::thread::sleep(Duration::from_millis(50));
                    }
                })
                .ok()
        };
        let sampler = Sampler::start(SamplerConfig {
            interval: Duration::from_secs(1),
            origin: opts.origin,
            target_pid: target.pid(),
            target_pgid: target.process.as_ref().map(|p| p.pgid()),
            worker_tids: Vec::new(),
        })
        .ok();
        let target_cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        Session {
            workers,
            target,
            opts,
            current_stop,
            target_died,
            watcher_done,
            watcher,
            sampler,
            target_cpus,
            checkpoint: None,
        }
    }

    /// Writes the run's checkpoints at the ticks of the phases this session runs.
    pub fn set_checkpoint(&mut self, checkpoint: Arc<crate::checkpoint::Checkpointer>) {
        self.checkpoint = Some(checkpoint);
    }

    /// The CPUs the target is pinned to, when it is (by default the machine's CPUs).
    pub fn set_target_cpus(&mut self, cpus: usize) {
        self.target_cpus = cpus.max(1);
    }

    /// The target's mean CPU over a window of the session (seconds from the origin), when loadgate started it
    /// as a process of its own and sampled it there.
    fn target_cpu(&self, from: f64, to: f64) -> Option<loadgate_results::TargetCpu> {
        self.target.process.as_ref()?;
        let samples = self.samples().target;
        let inside: Vec<f64> = samples.iter().filter(|s| s.t > from && s.t <= to + 0.5).map(|s| s.cpu).collect();
        (!inside.is_empty()).then(|| loadgate_results::TargetCpu {
            mean: inside.iter().sum::<f64>() / inside.len() as f64,
            cpus: self.target_cpus as f64,
        })
    }

    pub fn target(&self) -> &RunningTarget {
        &self.target
    }

    /// Why no further phase should run, if one should not.
    pub fn halted(&self) -> Option<Halt> {
        if self.opts.interrupt.is_interrupted() {
            Some(Halt::Interrupted)
        } else if self.target_died.load(Ordering::SeqCst) {
            Some(Halt::TargetDied)
        } else {
            None
        }
    }

    /// Runs one phase on the engine with fresh connections, checks its `abort_on_fail` SLOs every second,
    /// applies the saturation policy and evaluates its SLOs (against `baseline` where they are relative).
    /// May be called for the same phase as often as a composition needs.
    pub fn run_phase(
        &mut self,
        phase: &Phase,
        baseline: Option<&RunResults>,
        observer: &mut dyn Observer,
    ) -> Result<ScenarioResult, EngineError> {
        let stop = self.next_stop();
        observer.event(&Event::PhaseStarted { phase });
        let mut abort = AbortWatch::new();
        let offset = self.opts.origin.elapsed().as_secs_f64();
        // Both callbacks tell the observer, one at a time on this thread.
        let observer = std::cell::RefCell::new(observer);
        let checkpoint = self.checkpoint.clone();
        let measured = loadgate_engine::run_phase_reporting(
            phase,
            &self.workers,
            &self.target.engine,
            &stop,
            &mut |o| observer.borrow_mut().event(&opening_event(phase, o)),
            &mut |tick| {
                tell_tick(*observer.borrow_mut(), checkpoint.as_deref(), tick, offset, None);
                abort.check(tick)
            },
        )?;
        Ok(self.finish_result(phase, measured, offset, baseline))
    }

    /// A fresh stop signal for the next phase, installed where the target's death and Ctrl-C stop it; a stop
    /// asked for between phases applies to it at once.
    fn next_stop(&mut self) -> StopSignal {
        let stop = StopSignal::new();
        self.install_stop(&stop);
        stop
    }

    fn install_stop(&mut self, stop: &StopSignal) {
        if let Ok(mut s) = self.current_stop.lock() {
            *s = stop.clone();
        }
        if let Some(halt) = self.halted() {
            stop.stop(match halt {
                Halt::Interrupted => "interrupted (Ctrl-C)",
                Halt::TargetDied => "the target exited",
            });
        }
    }

    /// What the engine measured, made this session's result: the phase's resources, the saturation and limit
    /// policies, and its SLOs evaluated (against `baseline` where they are relative).
    fn finish_result(
        &self,
        phase: &Phase,
        measured: loadgate_results::PhaseMeasurement,
        offset: f64,
        baseline: Option<&RunResults>,
    ) -> ScenarioResult {
        let mut result = loadgate_results::ScenarioResult::from(measured);
        result.failed_checks = phase.checks.failed_checks;
        result.started_at_offset = offset;
        // The phase's resource figures, fixed now from the samples taken while it ran: every report shows these.
        let end = self.opts.origin.elapsed().as_secs_f64();
        result.resources =
            Some(loadgate_results::PhaseResources::over(&self.samples().target, offset, end, &result.workers));
        apply_saturation_policy(&mut result, phase, self.opts.saturation);
        let context = loadgate_results::LimitContext {
            timeout_secs: phase.timeout.as_secs_f64(),
            target_cpu: self.target_cpu(offset, offset + result.duration),
        };
        apply_limit_policy(&mut result, &context);
        let baseline = baseline.and_then(|b| loadgate_results::baseline_for(b, &result));
        result.judged.verdicts = loadgate_results::evaluate(&phase.slos, &result, baseline);
        loadgate_results::checks::warn_ungated(&mut result, &phase.slos);
        result
    }

    /// Runs a verification phase (`loadgate_plan::verify::probe`) on the first worker: a few requests whose
    /// responses are checked before any load. Not measured as a phase: no events, SLOs or policies.
    pub fn verify(&mut self, probe: &Phase) -> Result<ScenarioResult, EngineError> {
        let stop = StopSignal::new();
        if let Ok(mut s) = self.current_stop.lock() {
            *s = stop.clone();
        }
        if self.halted().is_some() {
            stop.stop("stopped before the verification");
        }
        let workers = &self.workers[..self.workers.len().min(1)];
        let measured = loadgate_engine::run_phase(probe, workers, &self.target.engine, &stop, &mut |_| {
            loadgate_engine::Control::Continue
        })?;
        Ok(loadgate_results::ScenarioResult::from(measured))
    }

    /// The resource samples so far.
    pub fn samples(&self) -> Samples {
        self.sampler.as_ref().map(Sampler::snapshot).unwrap_or_default()
    }

    /// Stops sampling and watching, and stops the target if loadgate started it.
    pub fn finish(mut self) -> SessionEnd {
        self.watcher_done.store(true, Ordering::SeqCst);
        if let Some(w) = self.watcher.take() {
            let _ = w.join();
        }
        let samples = self.sampler.take().map(Sampler::stop).unwrap_or_default();
        let target_exit = self
            .target
            .process
            .as_ref()
            .and_then(|p| p.exited().filter(|e| !e.requested))
            .map(|e| e.to_target_exit(self.opts.origin));
        let stop_error = self.target.stop().err();
        SessionEnd { samples, target_exit, stop_error }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.watcher_done.store(true, Ordering::SeqCst);
    }
}

/// A duet round: `phase` run on both sessions' targets at once (their `sides`, in lane order), from the first
/// session's workers (each worker loads both targets at the same intended instants:
/// `loadgate_engine::run_phase_together`). One stop signal is installed in both sessions, so Ctrl-C or either
/// target's death stops the phase; each lane's `abort_on_fail` SLOs are watched on its own seconds. The observer
/// hears each lane's seconds with its side; the checkpoint follows the first lane's. Each
/// result is its own session's, as [`Session::run_phase`] makes it.
pub fn run_together(
    sessions: [&mut Session; 2],
    sides: [crate::schedule::Side; 2],
    phase: &Phase,
    baseline: Option<&RunResults>,
    observer: &mut dyn Observer,
) -> Result<[ScenarioResult; 2], EngineError> {
    let [first, second] = sessions;
    let stop = first.next_stop();
    second.install_stop(&stop);
    observer.event(&Event::PhaseStarted { phase });
    let mut aborts = [AbortWatch::new(), AbortWatch::new()];
    // The lane whose `abort_on_fail` SLO stopped the phase: the stop is shared, its reason that lane's.
    let mut aborted_lane = None;
    let offset = first.opts.origin.elapsed().as_secs_f64();
    let observer = std::cell::RefCell::new(observer);
    let checkpoint = first.checkpoint.clone();
    let targets = [&first.target.engine, &second.target.engine];
    let measured = loadgate_engine::run_phase_together(
        phase,
        &first.workers,
        &targets,
        &stop,
        &mut |o| observer.borrow_mut().event(&opening_event(phase, o)),
        &mut |lane, tick| {
            // The checkpoint follows the first lane; the observer hears both, each second with its side.
            let checkpoint = checkpoint.as_deref().filter(|_| lane == 0);
            let duet = sides.get(lane).map(|s| (*s, lane == 0));
            tell_tick(*observer.borrow_mut(), checkpoint, tick, offset, duet);
            let control = aborts.get_mut(lane).map_or(loadgate_engine::Control::Continue, |a| a.check(tick));
            if matches!(control, loadgate_engine::Control::Abort(_)) {
                aborted_lane.get_or_insert(lane);
            }
            control
        },
    )?;
    let mut measured = measured.into_iter();
    let (Some(mut a), Some(mut b)) = (measured.next(), measured.next()) else {
        return Err(EngineError::InvalidPlan("a duet phase measured fewer than two targets".into()));
    };
    // The other side did not breach anything: its result says which side's SLO stopped the round.
    if let Some(lane) = aborted_lane {
        let other = if lane == 0 { &mut b } else { &mut a };
        if let Some(reason) = other.aborted.take() {
            other.aborted = Some(format!("stopped with side {}: {reason}", sides[lane].letter()));
        }
    }
    Ok([first.finish_result(phase, a, offset, baseline), second.finish_result(phase, b, offset, baseline)])
}

/// The observer's event for the opening's progress.
fn opening_event<'a>(phase: &'a Phase, o: &loadgate_engine::OpeningProgress) -> Event<'a> {
    Event::Opening {
        phase,
        connections: o.connections,
        opened: o.opened,
        failed: o.failed,
        elapsed: o.elapsed,
        done: o.done,
    }
}

/// A second of a phase told to the observer, and written to the run's checkpoint (a failure to write it is a
/// warning).
fn tell_tick(
    observer: &mut dyn Observer,
    checkpoint: Option<&crate::checkpoint::Checkpointer>,
    tick: &loadgate_engine::Tick<'_>,
    offset: f64,
    duet: Option<(crate::schedule::Side, bool)>,
) {
    observer.event(&Event::Tick {
        phase: tick.phase,
        elapsed: tick.elapsed,
        point: tick.point,
        latency: tick.interval_latency,
        send_lag: tick.interval_send_lag,
        errors: tick.interval_errors,
        status: tick.interval_status,
        duet,
    });
    if let Some(failed) = checkpoint.and_then(|c| c.tick(tick, offset)) {
        observer.event(&Event::Warning(failed));
    }
}

/// Merges results of the same scenario instance (rounds, repetitions, shards): histograms added, never
/// percentiles averaged; counts summed; the merge valid only if every part was. Verdicts are dropped: evaluate
/// again on the merge.
pub fn merge(parts: &[ScenarioResult]) -> Result<ScenarioResult, loadgate_results::ResultsError> {
    loadgate_results::merge_scenarios(parts)
}

/// Decides who limited an open or ramp load that fell short of its rate ([`loadgate_results::who_limited`]) and
/// applies it to the phase's validity: the engine flags every shortfall (`rate_not_reached`); only a
/// generator-limited one stays a problem (invalid, exit 4), while a plan- or target-limited one becomes a
/// warning, a valid result at the rate achieved that its SLOs judge. The cause is kept in `limited_by`.
pub fn apply_limit_policy(result: &mut ScenarioResult, context: &loadgate_results::LimitContext) {
    let Some(limited) = loadgate_results::who_limited(result, context) else {
        return;
    };
    let generator = limited.cause == loadgate_results::LimitCause::Generator;
    let (shortfalls, rest): (Vec<Problem>, Vec<Problem>) =
        result.validity.problems.drain(..).partition(|p| p.kind == "rate_not_reached");
    result.validity.problems = rest;
    for mut p in shortfalls {
        p.message = format!("{} ({})", limited.message, p.message);
        if generator {
            result.validity.problems.push(p);
        } else {
            result.validity.warnings.push(p);
        }
    }
    result.validity.valid = result.validity.problems.is_empty();
    result.judged.limited_by = Some(limited);
}

/// Applies the spec's saturation policy to a phase's validity: under `invalid` (and `auto` for open loads)
/// a saturated generator makes the measurement invalid instead of a warning.
pub fn apply_saturation_policy(result: &mut ScenarioResult, phase: &Phase, policy: SaturationPolicy) {
    let invalidates = match policy {
        SaturationPolicy::Invalid => true,
        SaturationPolicy::Warn => false,
        SaturationPolicy::Auto => !matches!(phase.load.arrival, Arrival::Closed),
    };
    if !invalidates {
        return;
    }
    let (saturated, rest): (Vec<Problem>, Vec<Problem>) =
        result.validity.warnings.drain(..).partition(|p| p.kind == "generator_saturated");
    result.validity.warnings = rest;
    if !saturated.is_empty() {
        result.validity.valid = false;
        result.validity.problems.extend(saturated);
    }
}
