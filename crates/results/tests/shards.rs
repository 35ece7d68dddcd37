//! Merging shard results: exact (histograms added, counts summed), and a missing, duplicate, foreign, late or
//! unfinished shard makes the run invalid.

use loadgate_results::fixture::sample_run;
use loadgate_results::{merge_shards, new_histogram, OutcomeStatus, RunResults, ShardInfo, ShardPart};
use proptest::prelude::*;

/// Shard `index` of `count` of run `run_id`, whose every instance measured `samples` (microseconds).
fn shard(index: u32, count: u32, run_id: &str, samples: &[u64]) -> ShardPart {
    let mut r = sample_run();
    r.shard = Some(ShardInfo {
        index,
        count,
        run_id: run_id.to_owned(),
        host: "h".into(),
        planned_start: None,
        start_skew_ms: Some(1.0),
        late: false,
        status: Some(OutcomeStatus::Passed),
        cpus: None,
    });
    for s in &mut r.scenarios {
        let mut h = new_histogram();
        for v in samples {
            h.record(*v).unwrap();
        }
        s.histograms.latency = h;
        s.requests.completed = samples.len() as u64;
        s.requests.sent = samples.len() as u64;
        s.validity.valid = true;
        s.validity.problems.clear();
    }
    ShardPart { source: format!("shard-{index}-of-{count}.json"), results: r }
}

fn merged(parts: Vec<ShardPart>) -> RunResults {
    merge_shards(parts).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// The merge of N shards' histograms is the histogram of all their samples, recorded in one process.
    #[test]
    fn merge_equals_one_process(samples in proptest::collection::vec(1u64..10_000_000, 1..400), n in 1u32..12) {
        let mut one = new_histogram();
        for v in &samples {
            one.record(*v).unwrap();
        }
        let parts: Vec<ShardPart> = (1..=n)
            .map(|i| {
                let mine: Vec<u64> = samples.iter().enumerate()
                    .filter(|(k, _)| *k as u32 % n == i - 1).map(|(_, v)| *v).collect();
                shard(i, n, "run", &mine)
            })
            .collect();
        let m = merged(parts);
        prop_assert_eq!(m.shards.len(), n as usize);
        for s in &m.scenarios {
            prop_assert_eq!(&s.histograms.latency, &one);
            prop_assert_eq!(s.requests.completed, samples.len() as u64);
            for q in [0.5, 0.9, 0.99, 1.0] {
                prop_assert_eq!(s.histograms.latency.value_at_quantile(q), one.value_at_quantile(q));
            }
        }
    }
}

fn reasons(r: &RunResults) -> String {
    r.outcome.reasons.join("\n")
}

#[test]
fn a_complete_run_merges_valid() {
    let m = merged(vec![shard(2, 2, "r", &[100, 200]), shard(1, 2, "r", &[300])]);
    assert!(m.scenarios.iter().all(|s| s.validity.valid), "{}", reasons(&m));
    assert_eq!(m.shards.iter().map(|s| s.index).collect::<Vec<_>>(), vec![1, 2]);
    assert!(m.shard.is_none());
}

#[test]
fn a_missing_shard_is_an_invalid_run() {
    let m = merged(vec![shard(1, 3, "r", &[100]), shard(3, 3, "r", &[100])]);
    assert_eq!(m.outcome.status, OutcomeStatus::InvalidMeasurement);
    assert!(reasons(&m).contains("shard 2/3 of run `r` is missing"), "{}", reasons(&m));
}

#[test]
fn a_duplicate_shard_is_left_out_and_invalid() {
    let m = merged(vec![shard(1, 2, "r", &[100]), shard(2, 2, "r", &[100]), shard(2, 2, "r", &[100])]);
    assert_eq!(m.outcome.status, OutcomeStatus::InvalidMeasurement);
    assert!(reasons(&m).contains("shard 2/2 is there twice"), "{}", reasons(&m));
    assert_eq!(m.scenarios[0].requests.completed, 2);
}

#[test]
fn a_foreign_shard_is_left_out_and_invalid() {
    let mut other_plan = shard(2, 2, "r", &[100]);
    other_plan.results.spec.plan_hash = "0000000000000000".into();
    let m = merged(vec![shard(1, 2, "r", &[100]), shard(2, 2, "other", &[100]), other_plan]);
    assert_eq!(m.outcome.status, OutcomeStatus::InvalidMeasurement);
    let text = reasons(&m);
    assert!(text.contains("is foreign: shard 2/2 of run `other`"), "{text}");
    assert!(text.contains("(plan 0000000000000000)"), "{text}");
    assert!(text.contains("shard 2/2 of run `r` is missing"), "{text}");
}

#[test]
fn a_late_or_unfinished_shard_is_an_invalid_run() {
    let mut late = shard(2, 2, "r", &[100]);
    if let Some(s) = late.results.shard.as_mut() {
        s.late = true;
        s.start_skew_ms = Some(2000.0);
    }
    let m = merged(vec![shard(1, 2, "r", &[100]), late]);
    assert_eq!(m.outcome.status, OutcomeStatus::InvalidMeasurement);
    assert!(reasons(&m).contains("shard 2/2 started 2000 ms after the planned start"), "{}", reasons(&m));

    let mut killed = shard(2, 2, "r", &[100]);
    killed.results.finished_at = None;
    let m = merged(vec![shard(1, 2, "r", &[100]), killed]);
    assert_eq!(m.outcome.status, OutcomeStatus::InvalidMeasurement);
    assert!(reasons(&m).contains("did not finish"), "{}", reasons(&m));
}

#[test]
fn frames_survive_a_log() {
    let a = shard(1, 2, "r", &[100]);
    let b = shard(2, 2, "r", &[200]);
    let log = format!(
        "some stderr line\n{}interleaved: warning here\n{}trailing\n",
        loadgate_results::shards::frame(&a.results).unwrap(),
        loadgate_results::shards::frame(&b.results).unwrap()
    );
    let parts = loadgate_results::shards::read_shards("shards.log", &log).unwrap();
    assert_eq!(parts.len(), 2);
    assert_eq!(parts[1].results.shard.as_ref().unwrap().index, 2);
    assert!(log.lines().all(|l| l.len() <= 76 || l.starts_with("-----")));
    let cut = log.replace("-----END LOADGATE SHARD 2/2-----", "");
    assert!(loadgate_results::shards::read_shards("shards.log", &cut).is_err());
}
