//! Running a phase: configure and start the workers (`configure`), merge their per-second snapshots into the
//! timeline and sum their final reports (`aggregate`), and make the result with its validity verdict
//! (`measurement`, `validity`); `progress` is what the caller sees once a second.

mod aggregate;
mod configure;
mod measurement;
mod progress;
mod validity;

use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use loadgate_measure::PhaseMeasurement;
use loadgate_plan::{Phase, StopCondition, WorkerPlan};

use crate::control::{Control, EngineError, OpeningProgress, StopSignal, Target};
use crate::opening::{LiveOpening, OpeningCounts};
use crate::schedule::Schedule;
use crate::timeline::{add_histogram, Timeline};
use crate::worker::{self, Msg, Snapshot, WorkerFinal};

use aggregate::{timeline_point, Aggregator};
use configure::configure;
use measurement::{assemble, opening_result};
pub use progress::{Progress, Tick};
use validity::opening_warnings;

/// How often the opening's progress is reported while connections open.
const OPENING_REPORT: Duration = Duration::from_secs(1);

pub(crate) fn run(
    phase: &Phase,
    workers: &[WorkerPlan],
    target: &Target,
    stop: &StopSignal,
    on_opening: &mut dyn FnMut(&OpeningProgress),
    on_tick: &mut dyn FnMut(&Tick<'_>) -> Control,
) -> Result<PhaseMeasurement, EngineError> {
    let mut lanes = run_lanes(phase, workers, &[target], stop, on_opening, &mut |_, tick| on_tick(tick))?;
    lanes.pop().ok_or_else(|| EngineError::InvalidPlan("the phase loaded no target".into()))
}

/// Runs the phase against each of `targets` from the same workers (a duet's two lanes; one target is a plain
/// phase): one measurement per target, in order. `on_tick` is told each lane's seconds with the lane's index.
pub(crate) fn run_lanes(
    phase: &Phase,
    workers: &[WorkerPlan],
    targets: &[&Target],
    stop: &StopSignal,
    on_opening: &mut dyn FnMut(&OpeningProgress),
    on_tick: &mut dyn FnMut(usize, &Tick<'_>) -> Control,
) -> Result<Vec<PhaseMeasurement>, EngineError> {
    let live = Arc::new(LiveOpening::default());
    let (configs, books) = configure(phase, workers, targets, stop, &live)?;
    let (n, lanes) = (configs.len(), targets.len());
    let connections: u64 = configs.iter().flatten().filter(|c| c.opens_before_start()).map(|c| c.slots as u64).sum();
    let (tx, rx) = mpsc::channel::<Msg>();
    let mut handles: Vec<JoinHandle<()>> = Vec::with_capacity(n);
    let mut starts = Vec::with_capacity(n);
    let mut failure = None;
    for (index, cfg) in configs.into_iter().enumerate() {
        match worker::spawn(cfg, tx.clone()) {
            Ok((h, s)) => {
                handles.push(h);
                starts.push(s);
            }
            Err(source) => {
                failure = Some(EngineError::Spawn { worker: index, source });
                break;
            }
        }
    }
    drop(tx);
    // Wait until every worker is pinned, has its runtime and has opened its keep-alive connections (each lane's):
    // the phase measures from then on, on every worker at once.
    // While they open, the progress is reported about once a second (from counters the workers add to).
    let opening_began = Instant::now();
    let mut opening: Vec<OpeningCounts> = (0..lanes).map(|_| OpeningCounts::default()).collect();
    let mut ready = 0;
    let mut next_report = opening_began + OPENING_REPORT;
    let mut reported = false;
    while failure.is_none() && ready < n * lanes {
        match rx.recv_timeout(next_report.saturating_duration_since(Instant::now())) {
            Ok(Msg::Ready(lane, counts)) => {
                if let Some(o) = opening.get_mut(lane) {
                    o.add(&counts);
                }
                ready += 1;
            }
            Ok(Msg::Failed(e)) => failure = Some(e),
            Ok(_) => {}
            Err(RecvTimeoutError::Timeout) => {
                let now = Instant::now();
                if connections > 0 {
                    let (opened, failed) = live.read();
                    let elapsed = now.saturating_duration_since(opening_began);
                    on_opening(&OpeningProgress { connections, opened, failed, elapsed, done: false });
                    reported = true;
                }
                next_report = (next_report + OPENING_REPORT).max(now + OPENING_REPORT / 2);
            }
            Err(RecvTimeoutError::Disconnected) => {
                failure = Some(EngineError::WorkerLost { worker: ready / lanes.max(1) })
            }
        }
    }
    if let Some(e) = failure {
        drop(starts);
        for h in handles {
            let _ = h.join();
        }
        return Err(e);
    }

    let start = Instant::now();
    // Each lane's opening (the lanes open one after the other on each worker, within the same wait).
    let opened_in = start.saturating_duration_since(opening_began);
    let opening: Vec<Option<_>> = opening
        .iter()
        .map(|o| (o.slots > 0).then(|| opening_result(&phase.load.connections.connect_rate, o, opened_in)))
        .collect();
    for s in &starts {
        let _ = s.send(start);
    }
    drop(starts);
    if reported {
        // Every worker is ready: the counters are final.
        let (opened, failed) = live.read();
        let elapsed = start.saturating_duration_since(opening_began);
        on_opening(&OpeningProgress { connections, opened, failed, elapsed, done: true });
    }

    let schedule = Schedule::from_arrival(&phase.load.arrival);
    let planned_secs = match phase.load.stop {
        StopCondition::Duration { duration } => Some(duration.as_secs_f64()),
        StopCondition::Requests { .. } => None,
    };
    let mut aggs: Vec<Aggregator> =
        (0..lanes).map(|_| Aggregator::new(n, Timeline::new(planned_secs, crate::timeline::MAX_POINTS))).collect();
    let make_point = |first: u64, s: &Snapshot, t: f64| timeline_point(first, s, schedule.as_ref(), t, phase);
    let mut finals: Vec<Vec<Option<Box<WorkerFinal>>>> = (0..lanes).map(|_| (0..n).map(|_| None).collect()).collect();
    let mut lost = None;
    let mut suspect = None;
    let unfinished = |finals: &[Vec<Option<Box<WorkerFinal>>>], w: usize| finals.iter().any(|l| l[w].is_none());
    while (0..n).any(|w| unfinished(&finals, w)) {
        match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(Msg::Interval(w, lane, snap)) => {
                if let Some(agg) = aggs.get_mut(lane) {
                    agg.add(w, *snap);
                }
            }
            Ok(Msg::Done(w, lane, fin)) => {
                if let (Some(agg), Some(slot)) = (aggs.get_mut(lane), finals.get_mut(lane).and_then(|l| l.get_mut(w))) {
                    agg.done(w);
                    *slot = Some(fin);
                }
            }
            Ok(_) => {}
            Err(RecvTimeoutError::Timeout) => {
                // A worker thread that ended without reporting panicked. It sends its last message before it
                // ends, so a wait that timed out just before that message can find the thread ended with the
                // message still in the channel: it is lost only when the next wait finds nothing either.
                let ended = (0..n).find(|&w| unfinished(&finals, w) && handles[w].is_finished());
                if ended.is_some() && ended == suspect {
                    stop.stop("a worker stopped unexpectedly");
                    lost = ended;
                    break;
                }
                suspect = ended;
            }
            Err(RecvTimeoutError::Disconnected) => {
                lost = (0..n).find(|&w| unfinished(&finals, w));
                break;
            }
        }
        // Ticks for every complete full second, each lane's.
        for (lane, agg) in aggs.iter_mut().enumerate() {
            while let Some((index, merged)) = agg.next_complete() {
                let point = make_point(index, &merged, index as f64 + 1.0);
                add_histogram(&mut agg.total, &merged.latency);
                add_histogram(&mut agg.total_service, &merged.service_time);
                let elapsed = Duration::from_secs(index + 1);
                let tick = Tick {
                    phase,
                    elapsed,
                    point: &point,
                    interval_latency: &merged.latency,
                    total_latency: &agg.total,
                    interval_errors: &merged.error_kinds,
                    interval_status: &merged.status,
                    interval_send_lag: &merged.send_lag,
                    progress: Progress { phase, elapsed, agg, opening: opening[lane].as_ref() },
                };
                if let Control::Abort(reason) = on_tick(lane, &tick) {
                    stop.stop(reason);
                }
                agg.timeline.add(index, merged, &make_point);
            }
        }
    }
    for h in handles {
        let _ = h.join();
    }
    if let Some(worker) = lost {
        return Err(EngineError::WorkerLost { worker });
    }
    let mut results = Vec::with_capacity(lanes);
    for ((((agg, finals), target), opening), book) in aggs.into_iter().zip(finals).zip(targets).zip(opening).zip(books)
    {
        let finals: Vec<Box<WorkerFinal>> = finals.into_iter().flatten().collect();
        let end = finals.iter().map(|f| f.end).max().unwrap_or(start);
        let elapsed = end.saturating_duration_since(start).as_secs_f64();
        // The last, partial second (workers that ended early reported theirs already).
        let mut agg = agg;
        let rest = agg.drain_rest();
        let timeline = agg.timeline.finish(rest, elapsed, &make_point);
        let mut result =
            assemble(phase, workers, stop, schedule.as_ref(), start, &finals, timeline, target.tls.as_ref());
        if let Some(o) = opening {
            opening_warnings(&mut result.validity, &o, phase.load.connections.connections);
            result.connections.opening = Some(o);
        }
        if let Some(book) = book {
            let tallies: Vec<_> = finals.iter().map(|f| f.replay.clone().unwrap_or_default()).collect();
            result.replay = Some(crate::replay::fidelity(&book.log, &book.keys, &tallies, &result.send_lag));
        }
        results.push(result);
    }
    Ok(results)
}
