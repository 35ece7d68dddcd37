//! One run from the shard results of several generators (`loadgate merge`, `loadgate run --shards N`).
//!
//! The rules, in one place:
//!
//! - Every slice `1..=N` must be there exactly once, with the same plan hash and the same run id. A missing,
//!   duplicate or foreign shard (another run, another plan, another shard count) makes the merged run invalid as
//!   a measurement (exit 4), with one sentence per problem; foreign and duplicate shards are left out of the
//!   numbers, never added.
//! - A shard that did not finish (killed, interrupted) or that misses a scenario instance the others ran makes
//!   every instance it lacks invalid: the merged numbers would silently miss its load.
//! - A shard whose first phase started more than [`LATE_AFTER_MS`] after the planned common start is *late*
//!   ([`ShardInfo::late`]): its load did not overlap the others' as planned, so the merged run is invalid as a
//!   measurement, never quietly merged.
//! - Each instance is merged with [`crate::merge::merge_concurrent`] (histograms added, counts and rates summed,
//!   timelines aligned by second), its SLOs judged again on the merge ([`crate::evaluate`]), and the outcome
//!   derived as for any run ([`crate::outcome()`]).
//! - With repetitions, round `r` of the merge is every shard's round `r` (they ran at once): the rounds every
//!   shard kept are merged with `merge_concurrent`, round by round, and the statistics over repetitions are
//!   judged once on the merged rounds ([`crate::gate::judge`]): the repetition stays the sample, never the shard.

use std::collections::BTreeMap;

use loadgate_model::Slo;

use crate::json::ResultsError;
use crate::model::{Outcome, OutcomeStatus, Problem, RunResults, ScenarioResult, ShardInfo};

/// A shard that starts its first phase more than this many milliseconds after the planned start is late.
/// 100 ms is 1% of a 10-second phase: the shards' loads overlap for at least 99% of it.
pub const LATE_AFTER_MS: f64 = 100.0;

/// Whether a start skew makes a shard late.
pub fn is_late(skew_ms: f64) -> bool {
    skew_ms > LATE_AFTER_MS
}

/// A shard result with where it came from, for messages (`shards/shard-2-of-4.json`, `shards.log frame 3`).
#[derive(Debug, Clone)]
pub struct ShardPart {
    pub source: String,
    pub results: RunResults,
}

/// Checks and merges the shard results of one run (see the [module documentation](self)).
pub fn merge_shards(parts: Vec<ShardPart>) -> Result<RunResults, ResultsError> {
    merge_shards_against(parts, None)
}

/// [`merge_shards`], with relative SLOs (`p99 <= baseline * 1.1`) judged on the merge against `baseline`'s
/// instance of the same name, as a run judges them ([`crate::baseline_for`], [`crate::evaluate`]).
pub fn merge_shards_against(parts: Vec<ShardPart>, baseline: Option<&RunResults>) -> Result<RunResults, ResultsError> {
    let mut problems: Vec<String> = Vec::new();
    let mut shards: Vec<(ShardInfo, ShardPart)> = Vec::new();
    for part in parts {
        match part.results.shard.clone() {
            Some(info) => shards.push((info, part)),
            None => problems.push(format!("{} is not a shard result (it has no `shard` section)", part.source)),
        }
    }
    let Some((first, _)) = shards.first() else {
        return Err(ResultsError::Merge(format!("no shard results to merge: {}", problems.join("; "))));
    };
    // The run is the one the first shard names; shards of another run, plan or count are foreign.
    let (run_id, count) = (first.run_id.clone(), first.count);
    let plan_hash = shards[0].1.results.spec.plan_hash.clone();
    let mut kept: BTreeMap<u32, (ShardInfo, ShardPart)> = BTreeMap::new();
    for (info, part) in shards {
        let hash = &part.results.spec.plan_hash;
        if info.run_id != run_id || info.count != count || *hash != plan_hash {
            problems.push(format!(
                "{} is foreign: shard {}/{} of run `{}` (plan {hash}), not of run `{run_id}` (plan {plan_hash}, {count} shards); left out",
                part.source, info.index, info.count, info.run_id
            ));
        } else if let Some((_, earlier)) = kept.get(&info.index) {
            problems.push(format!(
                "shard {}/{count} is there twice ({} and {}); the second is left out",
                info.index, earlier.source, part.source
            ));
        } else {
            kept.insert(info.index, (info, part));
        }
    }
    let missing: Vec<String> = (1..=count).filter(|i| !kept.contains_key(i)).map(|i| format!("{i}/{count}")).collect();
    if !missing.is_empty() {
        problems.push(format!(
            "shard{} {} of run `{run_id}` {} missing: the merged numbers lack {} load",
            if missing.len() == 1 { "" } else { "s" },
            missing.join(", "),
            if missing.len() == 1 { "is" } else { "are" },
            if missing.len() == 1 { "its" } else { "their" }
        ));
    }
    for (info, part) in kept.values() {
        if part.results.finished_at.is_none() {
            problems.push(format!(
                "shard {}/{count} ({}) did not finish ({}): the merged numbers lack the rest of its load",
                info.index,
                part.source,
                part.results.outcome.reasons.first().map_or("interrupted", String::as_str)
            ));
        }
        if info.late {
            problems.push(format!(
                "shard {}/{count} started {:.0} ms after the planned start (late beyond {LATE_AFTER_MS:.0} ms): its load did not overlap the others'",
                info.index,
                info.start_skew_ms.unwrap_or(0.0)
            ));
        }
    }

    let mut iter = kept.into_values();
    let Some((_, base)) = iter.next() else {
        return Err(ResultsError::Merge(problems.join("; ")));
    };
    let rest: Vec<(ShardInfo, ShardPart)> = iter.collect();
    let mut merged = base.results.clone();
    let mut infos: Vec<ShardInfo> = std::iter::once(base.results.shard.clone())
        .chain(rest.iter().map(|(i, _)| Some(i.clone())))
        .flatten()
        .collect();
    infos.sort_by_key(|i| i.index);
    let all: Vec<&RunResults> = std::iter::once(&base.results).chain(rest.iter().map(|(_, p)| &p.results)).collect();

    // Every instance any shard ran, in plan order.
    let mut indexes: Vec<usize> = all.iter().flat_map(|r| r.scenarios.iter().map(|s| s.index)).collect();
    indexes.sort_unstable();
    indexes.dedup();
    let mut scenarios = Vec::new();
    for index in indexes {
        let parts: Vec<ScenarioResult> =
            all.iter().filter_map(|r| r.scenarios.iter().find(|s| s.index == index).cloned()).collect();
        let lacking: Vec<u32> = all
            .iter()
            .filter(|r| !r.scenarios.iter().any(|s| s.index == index))
            .filter_map(|r| r.shard.as_ref().map(|s| s.index))
            .collect();
        let slos: Vec<Slo> = parts[0].judged.verdicts.iter().filter_map(|v| Slo::parse(&v.slo).ok()).collect();
        let mut one = crate::merge::merge_concurrent(&parts)?;
        one.judged.verdicts = crate::evaluate(&slos, &one, baseline.and_then(|b| crate::baseline_for(b, &one)));
        let confidence = merged.gating.as_ref().map(|g| g.confidence);
        if let Some(judged) = judge_merged_rounds(&slos, &parts, baseline, confidence)? {
            one.judged.verdicts = judged.measured.judged.verdicts;
            one.repetitions = judged.repetitions;
            // An A/B comparison: the baseline side merged the same way, round by round.
            if judged.ab_baseline.is_some() {
                one.ab_baseline = judged.ab_baseline;
            }
        }
        if !lacking.is_empty() {
            let list: Vec<String> = lacking.iter().map(|i| format!("{i}/{count}")).collect();
            one.validity.problems.push(Problem {
                kind: "shard_missing".into(),
                message: format!("shard {} has no result for it", list.join(", ")),
            });
        }
        for p in &problems {
            one.validity.problems.push(Problem { kind: "shards".into(), message: p.clone() });
        }
        one.validity.valid = one.validity.problems.is_empty();
        scenarios.push(one);
    }
    merged.scenarios = scenarios;
    merged.shard = None;
    merged.id = crate::identity::merged(all.iter().map(|r| r.id.as_deref()));
    merged.shards = infos;
    merged.started_at = all.iter().map(|r| r.started_at.clone()).min().unwrap_or_default();
    merged.finished_at = all.iter().filter_map(|r| r.finished_at.clone()).max();
    merged.not_run.retain(|n| !merged.scenarios.iter().any(|s| s.index == n.index));
    merged.sweeps = Vec::new();
    // A shard whose target died or that could not run says so; the others' problems are the instances'.
    let mut run_failed: Vec<String> = Vec::new();
    for r in &all {
        if r.outcome.status == OutcomeStatus::RunFailed {
            let index = r.shard.as_ref().map_or(0, |s| s.index);
            run_failed.extend(r.outcome.reasons.iter().map(|m| format!("shard {index}/{count}: {m}")));
        }
    }
    merged.outcome = if run_failed.is_empty() { Outcome::in_progress() } else { Outcome::run_failed(run_failed) };
    if merged.finished_at.is_none() {
        merged.finished_at = Some(merged.started_at.clone());
    }
    if merged.scenarios.is_empty() && !problems.is_empty() {
        merged.outcome = Outcome::new(OutcomeStatus::InvalidMeasurement, problems.clone());
        return Ok(merged);
    }
    merged.sweeps = crate::sweeps(&merged);
    merged.outcome = crate::outcome(&merged);
    if merged.outcome.status == OutcomeStatus::Passed && !problems.is_empty() {
        // Problems with no instance to carry them (none ran) still invalidate the run.
        merged.outcome = Outcome::new(OutcomeStatus::InvalidMeasurement, problems);
    }
    Ok(merged)
}

/// With repetitions: the statistics over them judged once, on rounds merged across the shards (round `r` of
/// every shard ran at once, so their merge is round `r` of the one run); in an A/B comparison both sides' rounds
/// are merged so, and the candidate's are judged paired with the baseline's. `None` when the instance has no
/// repetitions to judge (a single run, a capacity search), whose SLOs stay judged on the merge by
/// [`crate::evaluate`].
fn judge_merged_rounds(
    slos: &[Slo],
    parts: &[ScenarioResult],
    baseline: Option<&RunResults>,
    confidence: Option<f64>,
) -> Result<Option<ScenarioResult>, ResultsError> {
    let Some(confidence) = confidence else { return Ok(None) };
    let Some(first) = parts.first() else { return Ok(None) };
    if parts.iter().any(|p| p.repetitions.is_empty() || p.capacity.is_some()) {
        return Ok(None);
    }
    // Each shard's baseline side, in an A/B comparison (every shard's, or the merge cannot pair them).
    let a_parts: Vec<&ScenarioResult> = parts.iter().filter_map(|p| p.ab_baseline.as_deref()).collect();
    let ab = !a_parts.is_empty();
    if ab && a_parts.len() != parts.len() {
        return Err(ResultsError::Merge("some shards compared against a baseline side and some did not".into()));
    }
    // The rounds every shard kept on every side (a round one shard discarded and ran again is not the same round
    // elsewhere).
    let kept = |p: &ScenarioResult, round: u32| p.repetitions.iter().any(|x| x.round == round);
    let rounds: Vec<u32> = first
        .repetitions
        .iter()
        .map(|r| r.round)
        .filter(|round| parts.iter().all(|p| kept(p, *round)) && a_parts.iter().all(|a| kept(a, *round)))
        .collect();
    if rounds.is_empty() {
        return Ok(None);
    }
    let merged_rounds = merge_rounds(parts.iter(), &rounds)?;
    if ab {
        let a_rounds = merge_rounds(a_parts.into_iter(), &rounds)?;
        return crate::gate::judge(slos, &merged_rounds, &rounds, crate::gate::Baseline::Paired(&a_rounds), confidence)
            .map(Some);
    }
    let stored = baseline.and_then(|b| crate::baseline_for(b, first));
    let against = stored.map_or(crate::gate::Baseline::None, crate::gate::Baseline::Stored);
    crate::gate::judge(slos, &merged_rounds, &rounds, against, confidence).map(Some)
}

/// Each of `rounds` merged across the shards' results `parts` (round `r` of every shard ran at once).
fn merge_rounds<'a>(
    parts: impl Iterator<Item = &'a ScenarioResult> + Clone,
    rounds: &[u32],
) -> Result<Vec<ScenarioResult>, ResultsError> {
    let mut merged = Vec::with_capacity(rounds.len());
    for round in rounds {
        let at_once: Vec<ScenarioResult> = parts
            .clone()
            .filter_map(|p| p.repetitions.iter().find(|x| x.round == *round).map(|rep| round_of(p, rep)))
            .collect();
        merged.push(crate::merge::merge_concurrent(&at_once)?);
    }
    Ok(merged)
}

/// One shard's repetition as a scenario result of its own: the instance's description with the round's numbers.
fn round_of(instance: &ScenarioResult, rep: &crate::model::Repetition) -> ScenarioResult {
    let mut one = instance.clone();
    one.started_at_offset = rep.started_at_offset;
    one.duration = rep.duration;
    one.throughput = rep.throughput;
    one.requests = rep.requests.clone();
    one.status = rep.status.clone();
    one.errors = rep.errors.clone();
    one.latency = rep.latency.clone();
    one.histograms = rep.histograms.clone();
    one.validity.valid = rep.valid;
    one.target_cpu = rep.target_cpu;
    one.repetitions = Vec::new();
    one.timeline = Vec::new();
    one.by_request = Vec::new();
    one.judged.verdicts = Vec::new();
    one
}

/// The first line of a framed shard result: `-----BEGIN LOADGATE SHARD 2/4-----`.
const BEGIN: &str = "-----BEGIN LOADGATE SHARD ";
const END: &str = "-----END LOADGATE SHARD ";
const DASHES: &str = "-----";

/// A shard result framed for a log (`--out -`): a BEGIN line, the JSON as base64 in lines of 76 characters, an
/// END line. It survives `kubectl logs`, which interleaves stderr and splits very long lines.
pub fn frame(results: &RunResults) -> Result<String, ResultsError> {
    use base64::Engine as _;
    let json = crate::to_json(results)?;
    let slice = results.shard.as_ref().map_or_else(|| "1/1".to_owned(), |s| format!("{}/{}", s.index, s.count));
    let encoded = base64::engine::general_purpose::STANDARD.encode(json.as_bytes());
    let mut out = format!("{BEGIN}{slice}{DASHES}\n");
    for chunk in encoded.as_bytes().chunks(76) {
        out.push_str(&String::from_utf8_lossy(chunk));
        out.push('\n');
    }
    out.push_str(&format!("{END}{slice}{DASHES}\n"));
    Ok(out)
}

/// The shard results in `text`: the whole text when it is a JSON document, else every frame in it (lines
/// outside the frames are ignored). Each with `source` and, for frames, its number (`shards.log frame 2`).
pub fn read_shards(source: &str, text: &str) -> Result<Vec<ShardPart>, ResultsError> {
    use base64::Engine as _;
    if text.trim_start().starts_with('{') {
        return Ok(vec![ShardPart { source: source.to_owned(), results: crate::from_json(text)? }]);
    }
    let mut parts = Vec::new();
    let mut open: Option<(String, String)> = None;
    for line in text.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix(BEGIN) {
            open = Some((rest.trim_end_matches('-').to_owned(), String::new()));
        } else if let Some(rest) = line.strip_prefix(END) {
            let Some((slice, body)) = open.take() else {
                return Err(ResultsError::Merge(format!("{source}: an END line for shard {rest} without its BEGIN")));
            };
            let n = parts.len() + 1;
            let label = format!("{source} frame {n} (shard {slice})");
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(body.as_bytes())
                .map_err(|e| ResultsError::Merge(format!("{label}: not base64 ({e}); was the log cut?")))?;
            let json = String::from_utf8(bytes).map_err(|_| ResultsError::Merge(format!("{label}: not UTF-8")))?;
            let results = crate::from_json(&json)
                .map_err(|e| ResultsError::Merge(format!("{label}: not a shard result: {e}")))?;
            parts.push(ShardPart { source: label, results });
        } else if let Some((_, body)) = open.as_mut() {
            // Only base64 lines belong to the frame: anything interleaved (stderr) is skipped.
            if !line.is_empty()
                && line.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/' || b == b'=')
            {
                body.push_str(line);
            }
        }
    }
    if let Some((slice, _)) = open {
        return Err(ResultsError::Merge(format!(
            "{source}: the frame of shard {slice} has no END line (the log was cut)"
        )));
    }
    if parts.is_empty() {
        return Err(ResultsError::Merge(format!(
            "{source}: no shard result (neither JSON nor a LOADGATE SHARD frame)"
        )));
    }
    Ok(parts)
}
