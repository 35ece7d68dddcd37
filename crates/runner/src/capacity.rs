//! Capacity searches (`load: capacity`): a composition of open-loop phases on one [`Session`], as
//! repetitions are. Each step is the scenario's phase at another rate, run by [`Session::run_phase`] (the
//! engine, `abort_on_fail`, the saturation and limit policies, the SLOs) and judged by
//! [`loadgate_results::capacity::judge_step`]; this module only decides which rate comes next and when to stop.
//!
//! The search ([`Search`], pure):
//!
//! 1. **Step up**: run `from`, then `step` times the last rate (never above `to`) while the steps hold.
//! 2. **Bisect**: once a step fails, run halfway between the highest rate that held and the lowest that failed,
//!    until the two are within `precision` of the former.
//! 3. **Confirm**: run the highest rate that held `confirm` more times. A failed confirmation refutes it: it
//!    becomes the lowest rate that failed, the highest rate below it that held becomes the candidate, and the
//!    search bisects again (or stops when no rate below it held).
//!
//! A step the generator could not send (invalid as a measurement) is a measurement of the generator: what it sent
//! is its ceiling here, and no rate above it can be judged. The search then bisects between the highest rate that
//! held and that ceiling (the lowest of the ceilings seen, or the lowest rate that failed if lower), as it bisects
//! below a rate that failed, and reports the capacity as "at least X, the generator's limit here is Y".
//!
//! It stops when the precision is reached and confirmed, when `to` held and was confirmed (the capacity is at
//! least `to`), when `from` failed (the capacity is below it), when the highest rate that held is within the
//! precision of the generator's ceiling (the capacity is at least that rate), when no step could be judged (the
//! first step was invalid as a measurement), when the next step could not end within `max_duration` ([`drive`]
//! checks before every step after the first), or when the run is interrupted.

use std::time::{Duration, Instant};

use loadgate_engine::EngineError;
use loadgate_model::units::Rate;
use loadgate_plan::{Arrival, CapacitySearch, Metric, Phase, Slo};
use loadgate_results::capacity::{judge_step, step_record, stop_reason};
use loadgate_results::{
    Capacity, CapacityStage, CapacityStep, CapacityStop, Problem, RunResults, ScenarioResult, StepVerdict,
};

use crate::event::{Event, Observer};
use crate::session::Session;

/// A search's rates and precision, per second and as a fraction.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SearchParams {
    pub from: f64,
    pub to: f64,
    /// How close the highest rate that held and the lowest that failed must be, relative to the former.
    pub precision: f64,
    /// The factor between two steps up.
    pub step: f64,
    /// Runs of the rate found, each of which must hold.
    pub confirm: u32,
}

impl SearchParams {
    pub fn of(c: &CapacitySearch) -> SearchParams {
        SearchParams {
            from: c.from.per_sec(),
            to: c.to.per_sec(),
            precision: c.precision.0,
            step: c.step,
            confirm: c.confirm,
        }
    }
}

/// What a search does next.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Next {
    /// Run a step at this rate (requests per second).
    Run { rate: f64, stage: CapacityStage },
    /// The search is over.
    Stop(CapacityStop),
}

/// The state of a capacity search: the rates that held and the lowest that failed. Pure: it never runs
/// anything, [`drive`] asks it for the next rate and tells it how the step fared.
#[derive(Debug, Clone)]
pub struct Search {
    params: SearchParams,
    /// The rates that held and were not refuted by a failed confirmation, ascending.
    held: Vec<f64>,
    failed_at: Option<f64>,
    /// The least rate the generator sent at a step it could not send (invalid as a measurement): no rate above it
    /// can be judged here.
    generator_limit: Option<f64>,
    /// Confirmations the highest rate that held has passed.
    confirmations: u32,
    stopped: Option<CapacityStop>,
}

impl Search {
    pub fn new(params: SearchParams) -> Search {
        Search { params, held: Vec::new(), failed_at: None, generator_limit: None, confirmations: 0, stopped: None }
    }

    /// The generator's ceiling: the least rate it sent at a step it could not send.
    pub fn generator_limit(&self) -> Option<f64> {
        self.generator_limit
    }

    /// The highest rate that held (and was not refuted).
    pub fn capacity(&self) -> Option<f64> {
        self.held.last().copied()
    }

    /// The lowest rate that failed.
    pub fn failed_at(&self) -> Option<f64> {
        self.failed_at
    }

    /// Whether the capacity passed every confirmation asked.
    pub fn confirmed(&self) -> bool {
        self.capacity().is_some() && self.confirmations >= self.params.confirm
    }

    /// The next step, or why the search is over.
    pub fn next(&self) -> Next {
        if let Some(stop) = self.stopped {
            return Next::Stop(stop);
        }
        let p = &self.params;
        // The rates above this cannot hold (one failed) or cannot be judged (the generator could not send them).
        let (upper, by_generator) = match (self.failed_at, self.generator_limit) {
            (Some(f), Some(g)) if g < f => (Some(g), true),
            (Some(f), _) => (Some(f), false),
            (None, g) => (g, g.is_some()),
        };
        match (self.capacity(), upper) {
            (None, None) => Next::Run { rate: p.from, stage: CapacityStage::StepUp },
            (None, Some(_)) if by_generator => Next::Stop(CapacityStop::InvalidStep),
            (None, Some(_)) => Next::Stop(CapacityStop::LowerBoundFailed),
            (Some(c), None) if c >= p.to => self.confirm_or(c, CapacityStop::UpperBoundPassed),
            (Some(c), None) => Next::Run { rate: step_up(c, p.step).min(p.to), stage: CapacityStage::StepUp },
            (Some(c), Some(u)) => match midpoint(c, u) {
                Some(mid) if u > c * (1.0 + p.precision) => Next::Run { rate: mid, stage: CapacityStage::Bisect },
                _ if by_generator => self.confirm_or(c, CapacityStop::GeneratorLimit),
                _ => self.confirm_or(c, CapacityStop::PrecisionReached),
            },
        }
    }

    fn confirm_or(&self, rate: f64, stop: CapacityStop) -> Next {
        if self.confirmations < self.params.confirm {
            Next::Run { rate, stage: CapacityStage::Confirm }
        } else {
            Next::Stop(stop)
        }
    }

    /// How the step at `rate` fared, the generator having sent `sent` requests per second.
    pub fn record(&mut self, rate: f64, stage: CapacityStage, verdict: StepVerdict, sent: f64) {
        match verdict {
            StepVerdict::Invalid => {
                // What it sent, and never below a rate it sent before (a noisy generator sends a little less at
                // a higher rate): the bisection's upper end.
                let ceiling = sent.min(rate).max(self.capacity().unwrap_or(0.0));
                self.generator_limit = Some(self.generator_limit.map_or(ceiling, |g| g.min(ceiling)));
                // The generator cannot send again a rate that held: nothing more can be judged here.
                if stage == CapacityStage::Confirm {
                    self.stopped = Some(CapacityStop::GeneratorLimit);
                }
            }
            StepVerdict::Pass if stage == CapacityStage::Confirm => self.confirmations += 1,
            StepVerdict::Pass => {
                if self.capacity().is_none_or(|c| rate > c) {
                    self.confirmations = 0;
                }
                let at = self.held.partition_point(|h| *h < rate);
                if self.held.get(at) != Some(&rate) {
                    self.held.insert(at, rate);
                }
            }
            StepVerdict::Fail => {
                // A rate that held once and failed now did not hold: it and every rate above it are out.
                if stage == CapacityStage::Confirm || self.held.contains(&rate) {
                    self.held.retain(|h| *h < rate);
                    self.confirmations = 0;
                }
                self.failed_at = Some(self.failed_at.map_or(rate, |f| f.min(rate)));
            }
        }
    }

    /// Ends the search early (the time budget, an interruption).
    pub fn stop(&mut self, why: CapacityStop) {
        self.stopped.get_or_insert(why);
    }

    /// Why the search stopped; `None` while it goes on.
    pub fn stopped(&self) -> Option<CapacityStop> {
        match self.next() {
            Next::Stop(s) => Some(s),
            Next::Run { .. } => None,
        }
    }
}

/// The next rate up: `step` times `rate`, in whole requests per second from 10/s up (`1.5x` from 1,000/s gives
/// 1,500, 2,250, 3,375, 5,063, ...).
fn step_up(rate: f64, step: f64) -> f64 {
    let next = rate * step;
    if next >= 10.0 {
        next.round().max(rate.floor() + 1.0)
    } else {
        next
    }
}

/// Halfway between two rates, in whole requests per second when that lies strictly between them (in
/// thousandths otherwise); `None` when nothing lies between them.
fn midpoint(lo: f64, hi: f64) -> Option<f64> {
    let mid = (lo + hi) / 2.0;
    [mid.round(), (mid * 1000.0).round() / 1000.0].into_iter().find(|m| *m > lo && *m < hi)
}

/// A search's time: the most it may take, each step's load and the pause before every step after the first,
/// in seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Budget {
    pub max: f64,
    pub step: f64,
    pub pause: f64,
}

/// Runs a search to its end. `run` runs one step and says how it fared and the rate the generator sent (`None`:
/// the run was interrupted, the search stops); `elapsed` is the time since the search started. The first step always runs; a later one
/// only when it can end (its pause and its load) within the budget.
pub fn drive(
    params: SearchParams,
    budget: Budget,
    mut elapsed: impl FnMut() -> f64,
    mut run: impl FnMut(f64, CapacityStage) -> Option<(StepVerdict, f64)>,
) -> Search {
    let mut search = Search::new(params);
    let mut first = true;
    while let Next::Run { rate, stage } = search.next() {
        if !first && elapsed() + budget.pause + budget.step > budget.max {
            search.stop(CapacityStop::TimeBudget);
            break;
        }
        first = false;
        match run(rate, stage) {
            Some((verdict, sent)) => search.record(rate, stage, verdict, sent),
            None => search.stop(CapacityStop::Interrupted),
        }
    }
    search
}

/// Runs one scenario instance on a session: its phase, or for `load: capacity` its search.
pub fn run_instance(
    session: &mut Session,
    phase: &Phase,
    baseline: Option<&RunResults>,
    observer: &mut dyn Observer,
) -> Result<ScenarioResult, EngineError> {
    match &phase.capacity {
        Some(c) => search(session, phase, c, baseline, observer),
        None => session.run_phase(phase, baseline, observer),
    }
}

/// A capacity search on a session: every step an ordinary open-loop phase of the scenario, the result the step
/// that decided the capacity with the search in [`ScenarioResult::capacity`], judged on all the scenario's SLOs
/// (`capacity` ones included).
pub fn search(
    session: &mut Session,
    phase: &Phase,
    c: &CapacitySearch,
    baseline: Option<&RunResults>,
    observer: &mut dyn Observer,
) -> Result<ScenarioResult, EngineError> {
    let start = Instant::now();
    let step_slos: Vec<Slo> = phase.slos.iter().filter(|s| s.metric != Metric::Capacity).cloned().collect();
    let mut runs: Vec<(CapacityStep, ScenarioResult)> = Vec::new();
    let mut error = None;
    let budget =
        Budget { max: c.max_duration.as_secs_f64(), step: c.duration.as_secs_f64(), pause: c.pause.as_secs_f64() };
    let search = drive(
        SearchParams::of(c),
        budget,
        || start.elapsed().as_secs_f64(),
        |rate, stage| {
            if !runs.is_empty() && !pause(session, c.pause.as_std()) {
                return None;
            }
            let number = runs.len() as u32 + 1;
            let step = step_phase(phase, &step_slos, rate, number);
            let mut r = match session.run_phase(&step, baseline, observer) {
                Ok(r) => r,
                Err(e) => {
                    error = Some(e);
                    return None;
                }
            };
            // The step ran under its own name (for the progress); its result is the instance's.
            r.name.clone_from(&phase.name);
            r.judged.verdicts = loadgate_results::evaluate(
                &step_slos,
                &r,
                baseline.and_then(|b| loadgate_results::baseline_for(b, &r)),
            );
            let (verdict, reasons) = judge_step(&r);
            let record = step_record(number, stage, rate, &r, verdict, reasons);
            observer.event(&Event::CapacityStep { phase, step: &record });
            let halted = session.halted().is_some();
            let sent = record.achieved_rate;
            runs.push((record, r));
            (!halted).then_some((verdict, sent))
        },
    );
    if let Some(e) = error {
        return Err(e);
    }
    assemble(phase, c, &search, runs, start.elapsed().as_secs_f64(), baseline)
        .ok_or_else(|| EngineError::InvalidPlan(format!("the capacity search of {} ran no step", phase.name)))
}

/// Waits `pause` before a step, unless the session halts; returns whether to go on.
fn pause(session: &Session, pause: Duration) -> bool {
    let end = Instant::now() + pause;
    while Instant::now() < end {
        if session.halted().is_some() {
            return false;
        }
        std::thread::sleep((end - Instant::now()).min(Duration::from_millis(50)));
    }
    session.halted().is_none()
}

/// The scenario's phase at one rate: gated (a step is judged whatever the scenario's `gate`), without the
/// `capacity` SLOs, named for the progress it shows.
fn step_phase(phase: &Phase, slos: &[Slo], rate: f64, number: u32) -> Phase {
    let mut step = phase.clone();
    step.name = format!("{} step {number} at {}", phase.name, loadgate_results::format::rate(rate));
    step.gate = true;
    step.capacity = None;
    step.slos = slos.to_vec();
    step.load.arrival = Arrival::Constant { rate: Rate { millis_per_sec: (rate * 1000.0).round() as u64 } };
    step.duration = phase.capacity.map(|c| c.duration).or(step.duration);
    step
}

/// The instance's result: the step that decided the capacity (the last passing run at the rate found, or the
/// first step when no rate held), with the search beside it and every SLO of the scenario judged on it.
fn assemble(
    phase: &Phase,
    c: &CapacitySearch,
    search: &Search,
    mut runs: Vec<(CapacityStep, ScenarioResult)>,
    elapsed: f64,
    baseline: Option<&RunResults>,
) -> Option<ScenarioResult> {
    let capacity = search.capacity();
    let stop = search.stopped().unwrap_or(CapacityStop::Interrupted);
    let decided = capacity
        .and_then(|rate| runs.iter().rposition(|(s, _)| s.verdict == StepVerdict::Pass && s.rate == rate))
        .unwrap_or(0);
    let steps: Vec<CapacityStep> = runs.iter().map(|(s, _)| s.clone()).collect();
    // The step that showed the generator's ceiling: the invalid one that sent least.
    let invalid = steps
        .iter()
        .filter(|s| s.verdict == StepVerdict::Invalid)
        .min_by(|a, b| a.achieved_rate.total_cmp(&b.achieved_rate));
    let reason = stop_reason(
        stop,
        capacity,
        search.failed_at(),
        search.generator_limit(),
        c.precision.0,
        c.max_duration.as_secs_f64(),
        invalid,
    );
    if decided >= runs.len() {
        return None;
    }
    // What stopped the last step (Ctrl-C, the target's death), for an interrupted search.
    let last_stop = runs.last().and_then(|(_, r)| r.aborted.clone());
    let mut result = runs.swap_remove(decided).1;
    result.name.clone_from(&phase.name);
    result.gate = phase.gate;
    // An `abort_on_fail` SLO ends a failing step, not the run; only an interruption stops the run here.
    result.aborted = match stop {
        CapacityStop::Interrupted => Some(format!(
            "the capacity search stopped after {} step{}: {}",
            steps.len(),
            if steps.len() == 1 { "" } else { "s" },
            last_stop.unwrap_or_else(|| "interrupted".to_owned())
        )),
        _ => None,
    };
    match stop {
        CapacityStop::InvalidStep => {
            result.validity.valid = false;
            result.validity.problems.push(Problem { kind: "capacity_step_invalid".into(), message: reason.clone() });
        }
        CapacityStop::TimeBudget => {
            result.validity.warnings.push(Problem { kind: "capacity_time_budget".into(), message: reason.clone() });
        }
        _ => {}
    }
    // Steps the generator could not send are said, whatever stopped the search; they stop nothing being judged.
    if search.generator_limit().is_some() && stop != CapacityStop::InvalidStep {
        result.validity.warnings.push(Problem { kind: "capacity_generator_limit".into(), message: reason.clone() });
    }
    result.capacity = Some(Capacity {
        capacity,
        failed_at: search.failed_at(),
        generator_limit: search.generator_limit(),
        confirmed: search.confirmed(),
        stop,
        stop_reason: reason,
        from: c.from.per_sec(),
        to: c.to.per_sec(),
        precision: c.precision.0,
        step_factor: c.step,
        confirm: c.confirm,
        max_duration: c.max_duration.as_secs_f64(),
        step_duration: c.duration.as_secs_f64(),
        elapsed,
        steps,
    });
    let base = baseline.and_then(|b| loadgate_results::baseline_for(b, &result));
    result.judged.verdicts = loadgate_results::evaluate(&phase.slos, &result, base);
    Some(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(from: f64, to: f64, precision: f64, confirm: u32) -> SearchParams {
        SearchParams { from, to, precision, step: 2.0, confirm }
    }

    /// Runs a search against a target that holds every rate up to `capacity` (a fake step function), one second
    /// a step and no time limit to speak of; returns the search and the rates it ran, with their stages.
    fn against(p: SearchParams, holds: impl Fn(f64, usize) -> StepVerdict) -> (Search, Vec<(f64, CapacityStage)>) {
        let mut ran = Vec::new();
        let clock = std::cell::Cell::new(0.0);
        let search = drive(
            p,
            Budget { max: 1e9, step: 1.0, pause: 0.0 },
            || clock.get(),
            |rate, stage| {
                clock.set(clock.get() + 1.0);
                ran.push((rate, stage));
                let verdict = holds(rate, ran.len());
                Some((verdict, rate))
            },
        );
        (search, ran)
    }

    fn limit(capacity: f64) -> impl Fn(f64, usize) -> StepVerdict {
        move |rate, _| if rate <= capacity { StepVerdict::Pass } else { StepVerdict::Fail }
    }

    #[test]
    fn steps_up_then_bisects_to_the_precision_and_confirms() {
        let (s, ran) = against(params(100.0, 100_000.0, 0.02, 1), limit(3_000.0));
        assert_eq!(s.stopped(), Some(CapacityStop::PrecisionReached));
        let (c, f) = (s.capacity().unwrap(), s.failed_at().unwrap());
        assert!(c <= 3_000.0 && f > 3_000.0 && f <= c * 1.02, "{c} {f}");
        assert!(s.confirmed());
        let ups: Vec<f64> = ran.iter().filter(|(_, st)| *st == CapacityStage::StepUp).map(|(r, _)| *r).collect();
        assert_eq!(ups, [100.0, 200.0, 400.0, 800.0, 1600.0, 3200.0]);
        assert_eq!(ran.first().map(|r| r.1), Some(CapacityStage::StepUp));
        assert_eq!(ran.last(), Some(&(c, CapacityStage::Confirm)));
        // Bisection halves the interval each time: from 1,600..3,200 down to 2% in at most 6 steps (2,400, 2,800,
        // 3,000 held; 3,100, 3,050 failed).
        let bisect: Vec<f64> = ran.iter().filter(|(_, st)| *st == CapacityStage::Bisect).map(|(r, _)| *r).collect();
        assert_eq!(bisect, [2400.0, 2800.0, 3000.0, 3100.0, 3050.0]);
        assert_eq!((c, f), (3000.0, 3050.0));
        for (rate, stage) in &ran {
            if *stage == CapacityStage::Bisect {
                assert!(*rate > 1600.0 && *rate < 3200.0 && rate.fract() == 0.0, "{rate}");
            }
        }
    }

    #[test]
    fn the_bounds_end_the_search() {
        let (s, ran) = against(params(100.0, 1_000.0, 0.05, 2), limit(1e9));
        assert_eq!(s.stopped(), Some(CapacityStop::UpperBoundPassed));
        assert_eq!(s.capacity(), Some(1_000.0));
        let rates: Vec<f64> = ran.iter().map(|r| r.0).collect();
        assert_eq!(rates, [100.0, 200.0, 400.0, 800.0, 1000.0, 1000.0, 1000.0], "capped at `to`, confirmed twice");
        assert!(s.confirmed() && s.failed_at().is_none());

        let (s, ran) = against(params(100.0, 1_000.0, 0.05, 1), limit(50.0));
        assert_eq!(s.stopped(), Some(CapacityStop::LowerBoundFailed));
        assert_eq!((s.capacity(), s.failed_at(), ran.len()), (None, Some(100.0), 1));
        assert!(!s.confirmed());
    }

    #[test]
    fn a_failed_confirmation_refutes_the_rate_and_the_search_goes_on_below_it() {
        // The target holds 2,000/s; above, up to 3,000/s, it holds the first rate it is asked and nothing after.
        let lucky = std::cell::Cell::new(true);
        let (s, ran) = against(params(1_000.0, 100_000.0, 0.05, 1), |rate, _| {
            if rate <= 2_000.0 || (rate <= 3_000.0 && lucky.replace(false)) {
                StepVerdict::Pass
            } else {
                StepVerdict::Fail
            }
        });
        use CapacityStage::*;
        assert_eq!(
            ran,
            [
                (1000.0, StepUp),
                (2000.0, StepUp),
                (4000.0, StepUp),
                (3000.0, Bisect),
                (3500.0, Bisect),
                (3250.0, Bisect),
                (3125.0, Bisect),
                (3000.0, Confirm),
                (2500.0, Bisect),
                (2250.0, Bisect),
                (2125.0, Bisect),
                (2063.0, Bisect),
                (2000.0, Confirm),
            ]
        );
        assert_eq!(s.stopped(), Some(CapacityStop::PrecisionReached));
        assert_eq!((s.capacity(), s.failed_at()), (Some(2000.0), Some(2063.0)));
        assert!(s.confirmed());
    }

    /// A search against a target that holds every rate up to `capacity` and a generator that sends at most
    /// `ceiling`: a step above it is invalid as a measurement, having sent `ceiling`.
    fn against_generator(p: SearchParams, capacity: f64, ceiling: f64) -> (Search, Vec<(f64, CapacityStage)>) {
        let mut ran = Vec::new();
        let search = drive(
            p,
            Budget { max: 1e9, step: 1.0, pause: 0.0 },
            || 0.0,
            |rate, stage| {
                ran.push((rate, stage));
                Some(if rate > ceiling {
                    (StepVerdict::Invalid, ceiling)
                } else if rate <= capacity {
                    (StepVerdict::Pass, rate)
                } else {
                    (StepVerdict::Fail, rate)
                })
            },
        );
        (search, ran)
    }

    #[test]
    fn a_step_the_generator_could_not_send_bisects_up_to_its_ceiling() {
        // Issue 34: 10k, 20k, 40k held, 80k was limited by the generator (51.6k sent): the search bisects between
        // 40k and 51.6k, and the capacity is at least the highest rate that held there.
        let (s, ran) = against_generator(params(10_000.0, 1e6, 0.02, 1), 1e9, 51_600.0);
        use CapacityStage::*;
        assert_eq!(&ran[..4], [(10_000.0, StepUp), (20_000.0, StepUp), (40_000.0, StepUp), (80_000.0, StepUp)]);
        assert_eq!(ran[4], (45_800.0, Bisect), "halfway between 40,000 and what the generator sent");
        assert!(ran[4..ran.len() - 1].iter().all(|(r, st)| *st == Bisect && *r > 40_000.0 && *r < 51_600.0), "{ran:?}");
        assert_eq!(s.stopped(), Some(CapacityStop::GeneratorLimit));
        assert_eq!(s.generator_limit(), Some(51_600.0));
        let c = s.capacity().unwrap();
        assert!(c > 40_000.0 && c < 51_600.0 && 51_600.0 <= c * 1.02, "{c}");
        assert_eq!(s.failed_at(), None);
        assert!(s.confirmed());
        assert_eq!(ran.last(), Some(&(c, Confirm)));
    }

    #[test]
    fn a_target_limit_below_the_generators_ceiling_is_found_as_ever() {
        let (s, _) = against_generator(params(10_000.0, 1e6, 0.02, 1), 45_000.0, 51_600.0);
        assert_eq!(s.stopped(), Some(CapacityStop::PrecisionReached));
        let (c, f) = (s.capacity().unwrap(), s.failed_at().unwrap());
        assert!(c <= 45_000.0 && f > 45_000.0 && f <= c * 1.02, "{c} {f}");
        assert_eq!(s.generator_limit(), Some(51_600.0));
    }

    #[test]
    fn only_a_search_where_no_step_could_be_judged_is_invalid() {
        let (s, ran) = against_generator(params(100_000.0, 1e6, 0.02, 1), 1e9, 51_600.0);
        assert_eq!(s.stopped(), Some(CapacityStop::InvalidStep));
        assert_eq!((s.capacity(), s.failed_at(), ran.len()), (None, None, 1));
        // A confirmation the generator could not send ends the search at the rate that held, unconfirmed.
        let mut n = 0;
        let s = drive(
            params(1_000.0, 1e6, 0.02, 1),
            Budget { max: 1e9, step: 1.0, pause: 0.0 },
            || 0.0,
            |rate, stage| {
                n += 1;
                Some(match stage {
                    CapacityStage::Confirm => (StepVerdict::Invalid, rate * 0.9),
                    _ if rate <= 2_000.0 => (StepVerdict::Pass, rate),
                    _ => (StepVerdict::Fail, rate),
                })
            },
        );
        assert_eq!(s.stopped(), Some(CapacityStop::GeneratorLimit));
        assert!(!s.confirmed() && s.capacity().is_some() && n < 20);
    }

    #[test]
    fn the_time_budget_is_respected_and_reported() {
        let mut ran = 0;
        let clock = std::cell::Cell::new(0.0);
        let s = drive(
            params(100.0, 100_000.0, 0.01, 1),
            Budget { max: 10.0, step: 2.0, pause: 0.5 },
            || clock.get(),
            |rate, _| {
                clock.set(clock.get() + if ran == 0 { 2.0 } else { 2.5 });
                ran += 1;
                Some((if rate <= 3_000.0 { StepVerdict::Pass } else { StepVerdict::Fail }, rate))
            },
        );
        assert_eq!(s.stopped(), Some(CapacityStop::TimeBudget));
        // 2s, then 2.5s a step: 2 + 3 x 2.5 = 9.5s; a fifth would end at 12s.
        assert_eq!(ran, 4);
        assert!(clock.get() <= 10.0);
        assert_eq!((s.capacity(), s.failed_at()), (Some(800.0), None));
        assert!(!s.confirmed());
    }

    #[test]
    fn an_interruption_stops_the_search() {
        let mut n = 0;
        let s = drive(
            params(100.0, 100_000.0, 0.02, 1),
            Budget { max: 1e9, step: 1.0, pause: 0.0 },
            || 0.0,
            |_, _| {
                n += 1;
                (n < 3).then_some((StepVerdict::Pass, 100.0))
            },
        );
        assert_eq!(s.stopped(), Some(CapacityStop::Interrupted));
        assert_eq!(s.capacity(), Some(200.0));
    }

    #[test]
    fn steps_up_are_whole_rates_from_ten_a_second() {
        let p = SearchParams { from: 1000.0, to: 1e6, precision: 0.05, step: 1.5, confirm: 0 };
        let (_, ran) = against(p, limit(6_000.0));
        let ups: Vec<f64> = ran.iter().filter(|(_, st)| *st == CapacityStage::StepUp).map(|(r, _)| *r).collect();
        assert_eq!(ups, [1000.0, 1500.0, 2250.0, 3375.0, 5063.0, 7595.0]);
        assert_eq!(step_up(2.0, 1.5), 3.0);
        assert_eq!((step_up(9.6, 1.05), step_up(10.0, 1.05)), (10.0, 11.0));
    }

    #[test]
    fn midpoints_are_whole_rates_when_they_can_be() {
        assert_eq!(midpoint(1600.0, 3200.0), Some(2400.0));
        assert_eq!(midpoint(10.0, 11.0), Some(10.5));
        assert_eq!(midpoint(1.0, 1.001), None);
    }
}
