//! Combining measurements: histograms added bucket by bucket, never percentiles averaged.

use crate::json::ResultsError;
use crate::model::{LatencySummary, RequestBreakdown, ScenarioResult, TimelinePoint, Validity};

/// Merges repetitions of one scenario instance (the same name, from several runs) as if they had run back to
/// back: counts and durations summed, histograms added and the summaries recomputed from them, throughput
/// recomputed as completed requests over the summed duration, rates weighted by duration, timelines
/// concatenated (each shifted by the durations before it), the measurement valid only if every part was; checks
/// added by (request, check), keeping the first examples.
/// Verdicts are dropped: evaluate the SLOs again on the merged result ([`crate::evaluate`]).
pub fn merge_scenarios(parts: &[ScenarioResult]) -> Result<ScenarioResult, ResultsError> {
    merge_parts(parts, Together::BackToBack)
}

/// Merges the shards of one scenario instance (the same name, run at the same time by several generators):
/// histograms added and the summaries recomputed from them, counts summed, rates and connections summed, the
/// duration the longest shard's, throughput recomputed as completed requests over it, timelines aligned by
/// their scheduled second (counts and rates summed; a second's p50, p99 and max are the highest of the
/// shards', an upper bound: exact percentiles are in the histograms), the measurement valid only if every
/// shard's was. Verdicts are dropped: evaluate the SLOs again on the merged result ([`crate::evaluate`]).
pub fn merge_concurrent(parts: &[ScenarioResult]) -> Result<ScenarioResult, ResultsError> {
    merge_parts(parts, Together::AtOnce)
}

/// How the parts of a merge ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Together {
    /// One after the other (repetitions).
    BackToBack,
    /// At the same time on several generators (shards).
    AtOnce,
}

fn merge_parts(parts: &[ScenarioResult], together: Together) -> Result<ScenarioResult, ResultsError> {
    let at_once = together == Together::AtOnce;
    let Some((first, rest)) = parts.split_first() else {
        return Err(ResultsError::Merge("no scenario results to merge".to_owned()));
    };
    let mut merged = first.clone();
    merged.judged.verdicts.clear();
    let weighted = |rate: Option<f64>, duration: f64| rate.map(|r| r * duration);
    let mut target_weighted = weighted(first.load.target_rate, first.duration);
    let mut achieved_weighted = weighted(first.load.achieved_rate, first.duration);
    for part in rest {
        if part.name != merged.name {
            return Err(ResultsError::Merge(format!(
                "`{}` and `{}` are different scenario instances",
                merged.name, part.name
            )));
        }
        merged.histograms.add(&part.histograms).map_err(|e| ResultsError::Merge(e.0))?;
        if at_once {
            align_timelines(&mut merged.timeline, &part.timeline);
            merged.duration = merged.duration.max(part.duration);
            // Rates add up: each shard's over its own duration (the same, within the start skew).
            let sum = |a: Option<f64>, b: Option<f64>| a.zip(b).map(|(a, b)| a + b);
            merged.load.target_rate = sum(merged.load.target_rate, part.load.target_rate);
            merged.load.achieved_rate = sum(merged.load.achieved_rate, part.load.achieved_rate);
        } else {
            let offset = merged.duration;
            merged.timeline.extend(part.timeline.iter().cloned().map(|mut p| {
                p.t += offset;
                p
            }));
            merged.duration += part.duration;
            target_weighted = target_weighted.zip(weighted(part.load.target_rate, part.duration)).map(|(a, b)| a + b);
            achieved_weighted =
                achieved_weighted.zip(weighted(part.load.achieved_rate, part.duration)).map(|(a, b)| a + b);
        }
        merged.load.users_started = merged.load.users_started.zip(part.load.users_started).map(|(a, b)| a + b);
        // The target's CPU adds up only where every part read it.
        merged.target_cpu = merged.target_cpu.zip(part.target_cpu).map(|(a, b)| a.and(b));
        merged.load.users_planned = merged.load.users_planned.zip(part.load.users_planned).map(|(a, b)| a + b);
        // Batches read whole in any part: the merge says so, and counts the batches of all.
        if merged.load.pipeline_reads.is_none() {
            merged.load.pipeline_reads.clone_from(&part.load.pipeline_reads);
        }
        let add = |a: Option<u64>, b: Option<u64>| a.zip(b).map(|(a, b)| a + b).or(a).or(b);
        merged.load.batches_held = add(merged.load.batches_held, part.load.batches_held);
        merged.load.batches_forced = add(merged.load.batches_forced, part.load.batches_forced);
        merged.load.users_finished = merged.load.users_finished.zip(part.load.users_finished).map(|(a, b)| a + b);
        // Parts that ran one after the other peak at the highest of theirs; at once, at most at their sum.
        merged.load.users_peak_active =
            merged
                .load
                .users_peak_active
                .zip(part.load.users_peak_active)
                .map(|(a, b)| if at_once { a + b } else { a.max(b) });

        merged.requests += &part.requests;
        merged.status += &part.status;
        merged.errors += &part.errors;
        let c = &mut merged.connections;
        if at_once {
            c.planned += part.connections.planned;
            c.peak_open += part.connections.peak_open;
        } else {
            c.planned = c.planned.max(part.connections.planned);
            c.peak_open = c.peak_open.max(part.connections.peak_open);
        }
        c.opened += part.connections.opened;
        c.failed += part.connections.failed;
        c.reconnects += part.connections.reconnects;
        match (&mut merged.http2, &part.http2) {
            (Some(h2), Some(other)) => h2.add(other),
            (None, Some(other)) => merged.http2 = Some(other.clone()),
            _ => {}
        }
        match (&mut merged.tls, &part.tls) {
            (Some(tls), Some(other)) => tls.add(other),
            (None, Some(other)) => merged.tls = Some(other.clone()),
            _ => {}
        }
        merged.bytes.read += part.bytes.read;
        merged.bytes.written += part.bytes.written;
        add_breakdowns(&mut merged.by_request, &part.by_request)?;
        merged.checked += &part.checked;
        crate::checks::add_checks(&mut merged.checks, &part.checks);
        merged.workers.extend(part.workers.iter().cloned());
        match (&mut merged.replay, &part.replay) {
            (Some(f), Some(o)) => f.add(o, at_once),
            (None, Some(o)) => merged.replay = Some(o.clone()),
            _ => {}
        }
        merged.validity =
            Validity {
                valid: merged.validity.valid && part.validity.valid,
                problems: merged.validity.problems.iter().chain(&part.validity.problems).cloned().collect(),
                // A warning each part gives (the same every round) is said once.
                warnings: merged
                    .validity
                    .warnings
                    .iter()
                    .chain(part.validity.warnings.iter().filter(|w| {
                        !merged.validity.warnings.iter().any(|m| m.kind == w.kind && m.message == w.message)
                    }))
                    .cloned()
                    .collect(),
            };
        if merged.aborted.is_none() {
            merged.aborted.clone_from(&part.aborted);
        }
        // A generator-limited part speaks for the merge (it is what makes it invalid); otherwise the first
        // part that fell short.
        let generator = |l: &Option<crate::model::Limited>| {
            l.as_ref().is_some_and(|l| l.cause == crate::model::LimitCause::Generator)
        };
        if merged.judged.limited_by.is_none()
            || (generator(&part.judged.limited_by) && !generator(&merged.judged.limited_by))
        {
            merged.judged.limited_by.clone_from(&part.judged.limited_by);
        }
    }
    let duration = merged.duration;
    for r in &mut merged.by_request {
        r.latency = LatencySummary::from_histogram(&r.histogram);
        r.throughput = if duration > 0.0 { r.requests.completed as f64 / duration } else { 0.0 };
    }
    if merged.duration > 0.0 {
        merged.throughput = merged.requests.completed as f64 / merged.duration;
        if !at_once {
            merged.load.target_rate = target_weighted.map(|w| w / merged.duration);
            merged.load.achieved_rate = achieved_weighted.map(|w| w / merged.duration);
        }
    }
    // Repeated capacity searches: the merge reads as the median search (the lower one of an even count), whose
    // capacity is the repetitions' median.
    if parts.iter().any(|p| p.capacity.is_some()) {
        let mut searches: Vec<&crate::model::Capacity> = parts.iter().filter_map(|p| p.capacity.as_ref()).collect();
        searches.sort_by(|a, b| a.capacity.unwrap_or(-1.0).total_cmp(&b.capacity.unwrap_or(-1.0)));
        merged.capacity = searches.get((searches.len() - 1) / 2).map(|c| (*c).clone());
    }
    // The parts were judged by the same SLOs: a part that warned that no SLO gates its failed checks speaks for
    // the merge, whose warnings are written again from the merged counts.
    if parts.iter().any(|p| p.validity.warnings.iter().any(|w| w.kind == crate::checks::UNGATED)) {
        merged.validity.warnings.retain(|w| w.kind != crate::checks::UNGATED);
        let warnings = crate::checks::ungated_warnings(&merged);
        merged.validity.warnings.extend(warnings);
    }
    merged.latency = LatencySummary::from_histogram(&merged.histograms.latency);
    merged.service_time = LatencySummary::from_histogram(&merged.histograms.service_time);
    merged.send_lag = LatencySummary::from_histogram(&merged.histograms.send_lag);
    let schedule_error =
        loadgate_measure::replay::ScheduleError::of(&merged.send_lag.percentiles, merged.send_lag.max_us);
    if let Some(f) = &mut merged.replay {
        f.schedule_error = schedule_error;
    }
    merged.connect_time = LatencySummary::from_histogram(&merged.histograms.connect_time);
    let measured = &mut merged.measured;
    if let Some(tls) = &mut measured.tls {
        tls.handshake_time = LatencySummary::from_histogram(&measured.histograms.tls_handshake);
    }
    Ok(merged)
}

/// Adds `other`'s per-request breakdowns (a mix's or a session's named requests) into `into`, name by name:
/// counts summed, histograms added (a name only one part has is kept as it is). Latency summaries and
/// throughputs are derived again once every part is in.
fn add_breakdowns(into: &mut Vec<RequestBreakdown>, other: &[RequestBreakdown]) -> Result<(), ResultsError> {
    for r in other {
        match into.iter_mut().find(|q| q.name == r.name) {
            Some(q) => {
                q.requests += &r.requests;
                q.status += &r.status;
                q.errors += &r.errors;
                q.checked += &r.checked;
                q.histogram.add(&r.histogram).map_err(|e| {
                    ResultsError::Merge(format!("the latency histograms of request `{}` do not add: {e}", r.name))
                })?;
            }
            None => into.push(r.clone()),
        }
    }
    Ok(())
}

/// Adds `other`'s per-second points into `into`, point by point: both count seconds from their phase's start.
fn align_timelines(into: &mut Vec<TimelinePoint>, other: &[TimelinePoint]) {
    for (i, p) in other.iter().enumerate() {
        match into.get_mut(i) {
            Some(q) => {
                q.t = q.t.max(p.t);
                q.sent += p.sent;
                q.completed += p.completed;
                q.errors += p.errors;
                q.non_2xx += p.non_2xx;
                q.target_rate = q.target_rate.zip(p.target_rate).map(|(a, b)| a + b);
                q.p50_us = q.p50_us.max(p.p50_us);
                q.p99_us = q.p99_us.max(p.p99_us);
                q.max_us = q.max_us.max(p.max_us);
                q.connections_open += p.connections_open;
            }
            None => into.push(p.clone()),
        }
    }
}
