//! The results model against its consumers: JSON round trips, the committed schema, SLO rules, the outcome.

use std::path::PathBuf;

use loadgate_model::Slo;
use loadgate_results::fixture::{sample_run, sample_shapes, scenario};
use loadgate_results::*;

fn schema_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../schemas/results.schema.json")
}

#[test]
fn committed_schema_is_up_to_date() {
    let generated = json_schema();
    let path = schema_path();
    if std::env::var_os("UPDATE_SCHEMAS").is_some() {
        std::fs::write(&path, &generated).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "schemas/results.schema.json is stale: regenerate it with `UPDATE_SCHEMAS=1 cargo test -p loadgate-results` and commit it"
    );
}

#[test]
fn results_round_trip_and_validate_against_the_schema() {
    let run = sample_run();
    let text = to_json(&run).unwrap();
    let back = from_json(&text).unwrap();
    let again = to_json(&back).unwrap();
    if again != text {
        let diff: Vec<(usize, &str, &str)> = text
            .lines()
            .zip(again.lines())
            .enumerate()
            .filter(|(_, (a, b))| a != b)
            .map(|(i, (a, b))| (i + 1, a, b))
            .take(3)
            .collect();
        panic!("a round trip changed the JSON: {diff:#?}");
    }

    let schema: serde_json::Value = serde_json::from_str(&json_schema()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let instance: serde_json::Value = serde_json::from_str(&text).unwrap();
    let errors: Vec<String> =
        validator.iter_errors(&instance).map(|e| format!("{} at {}", e, e.instance_path)).collect();
    assert!(errors.is_empty(), "{errors:#?}");

    // A histogram that is not HISTFAAA fails the schema.
    let mut bad = instance.clone();
    bad["scenarios"][0]["histograms"]["latency"] = serde_json::json!("AAAA");
    assert!(!validator.is_valid(&bad));
}

#[test]
fn histograms_are_histfaaa_and_decode_to_the_same_counts() {
    let run = sample_run();
    let value: serde_json::Value = serde_json::from_str(&to_json(&run).unwrap()).unwrap();
    for (s, json) in run.scenarios.iter().zip(value["scenarios"].as_array().unwrap()) {
        for key in ["latency", "service_time", "send_lag", "connect_time"] {
            let text = json["histograms"][key].as_str().unwrap();
            assert!(text.starts_with("HISTFAAA"), "{key}: {}", &text[..12.min(text.len())]);
            histogram_serde::decode(text).unwrap();
        }
        let latency = histogram_serde::decode(json["histograms"]["latency"].as_str().unwrap()).unwrap();
        assert_eq!(latency.len(), s.requests.completed);
        assert_eq!(latency.value_at_quantile(0.99), s.latency.percentiles["p99"]);
    }
}

#[test]
fn unknown_schema_versions_are_refused_by_name() {
    let mut value: serde_json::Value = serde_json::from_str(&to_json(&sample_run()).unwrap()).unwrap();
    value["schema_version"] = serde_json::json!(2);
    value["loadgate_version"] = serde_json::json!("9.0.0");
    let err = from_json(&value.to_string()).unwrap_err().to_string();
    assert_eq!(
        err,
        format!(
            "results have schema_version 2 (written by loadgate 9.0.0); this loadgate ({}) reads schema_version 1",
            env!("CARGO_PKG_VERSION")
        )
    );
    let err = from_json(r#"{"name": "x"}"#).unwrap_err().to_string();
    assert_eq!(err, "not a loadgate results file: it has no `schema_version`");
    assert!(from_json("[1, 2]").unwrap_err().to_string().contains("not an object"));
    assert!(from_json("{").unwrap_err().to_string().starts_with("cannot read results:"));
}

fn slos(texts: &[&str]) -> Vec<Slo> {
    texts.iter().map(|t| Slo::parse(t).unwrap()).collect()
}

#[test]
fn percentiles_come_from_the_histogram_and_failures_explain_themselves() {
    let run = sample_run();
    let failing = &run.scenarios[2];
    assert_eq!(failing.name, "plaintext[connections=1024]");
    let v = &failing.judged.verdicts[0];
    assert!(!v.passed);
    assert_eq!(v.observed, Some(failing.histograms.latency.value_at_quantile(0.99) as f64));
    assert_eq!(v.threshold_value, 100_000.0);
    assert_eq!(v.explain(), "p99 was 141.7ms, threshold < 100ms");
    assert!(failing.judged.verdicts[1].passed && failing.judged.verdicts[2].passed);
}

#[test]
fn error_rate_counts_errors_and_non_2xx_over_completed_and_failed() {
    let run = sample_run();
    let put = &run.scenarios[4];
    // 12 responses were 5xx and 3 requests timed out, out of 959,704 completed and 3 failed.
    let expected = 15.0 / 959_707.0;
    assert_eq!(error_rate(put), Some(expected));
    let v = put.judged.verdicts.iter().find(|v| v.metric == "error_rate").unwrap();
    assert!(v.passed);
    assert_eq!(v.observed_text, "0.0016%");

    let mut nothing = put.clone();
    nothing.requests.completed = 0;
    nothing.errors = ErrorCounts::default();
    nothing.histograms.latency = new_histogram();
    let vs = evaluate(&slos(&["error_rate < 1%", "p99 < 1s", "errors <= 0"]), &nothing, None);
    assert!(!vs[0].passed && !vs[1].passed, "nothing measured fails a gated SLO: {vs:#?}");
    assert!(vs[2].passed);
}

#[test]
fn baselines_compare_the_same_metric_and_missing_ones_do_not_gate() {
    let run = sample_run();
    let put = &run.scenarios[4];
    let no_baseline = put.judged.verdicts.iter().find(|v| v.threshold.starts_with("baseline")).unwrap();
    assert!(no_baseline.passed && !no_baseline.evaluated(), "{no_baseline:#?}");
    assert!(no_baseline.note.as_deref().unwrap().contains("no baseline"));

    // A baseline 20% faster: p99 <= baseline * 1.10 fails.
    let mut faster_shape = sample_shapes().remove(4);
    faster_shape.latency = (faster_shape.latency.0 * 0.8, faster_shape.latency.1 * 0.8);
    let faster = scenario(4, &faster_shape);
    let v = &evaluate(&slos(&["p99 <= baseline * 1.10"]), put, Some(&faster))[0];
    assert!(!v.passed, "{v:#?}");
    let expected = faster.histograms.latency.value_at_quantile(0.99) as f64 * 1.1;
    assert!((v.threshold_value - expected).abs() < 1e-6);
    assert!(v.explain().starts_with("p99 was 16.66ms"), "{}", v.explain());
    assert!(v.explain().contains("threshold <= baseline * 1.1 (= "), "{}", v.explain());

    // Against itself it holds.
    let v = &evaluate(&slos(&["p99 <= baseline * 1.10", "throughput >= baseline * 0.9"]), put, Some(put));
    assert!(v.iter().all(|v| v.passed && v.note.is_none()), "{v:#?}");

    let mut baseline_run = run.clone();
    baseline_run.scenarios.truncate(2);
    assert_eq!(
        baseline_for(&baseline_run, &run.scenarios[1]).map(|s| s.name.as_str()),
        Some("plaintext[connections=256]")
    );
    assert!(baseline_for(&baseline_run, put).is_none());
}

#[test]
fn per_request_slos_and_ungated_phases_never_fail() {
    let run = sample_run();
    let put = &run.scenarios[4];
    let per_request = put.judged.verdicts.iter().find(|v| v.slo.contains("{request=put}")).unwrap();
    assert!(per_request.passed && per_request.observed.is_none());
    assert_eq!(per_request.note.as_deref(), Some(verdict::NOTE_PER_REQUEST));

    let warmup = &run.scenarios[0];
    assert!(!warmup.gate);
    let v = &warmup.judged.verdicts[0];
    assert!(v.passed, "not gated: never fails");
    assert_eq!(v.note.as_deref(), Some("not gated (gate: false); would have failed"));
}

#[test]
fn outcome_precedence_run_failed_over_interrupted_over_invalid_over_slo() {
    let run = sample_run();
    // The sample has both an invalid measurement and an SLO failure: invalid wins, both are reasons.
    assert_eq!(run.outcome.status, OutcomeStatus::InvalidMeasurement);
    assert_eq!(run.outcome.exit_code, 4);
    assert!(run.outcome.reasons[0].starts_with("plaintext[connections=4096] is invalid as a measurement"));
    assert!(run.outcome.reasons.iter().any(|r| r == "plaintext[connections=1024]: p99 was 141.7ms, threshold < 100ms"));

    let mut slo_only = run.clone();
    slo_only.scenarios.remove(3);
    let o = outcome(&slo_only);
    assert_eq!((o.status, o.exit_code), (OutcomeStatus::SloFailed, 1));

    let mut passing = slo_only.clone();
    passing.scenarios.remove(2);
    let o = outcome(&passing);
    assert_eq!((o.status, o.exit_code, o.reasons.len()), (OutcomeStatus::Passed, 0, 0));

    // An invalid warmup is a reason, not a failure.
    let mut invalid_warmup = passing.clone();
    invalid_warmup.scenarios[0].validity.valid = false;
    let o = outcome(&invalid_warmup);
    assert_eq!(o.status, OutcomeStatus::Passed);
    assert_eq!(o.reasons.len(), 1);

    let mut interrupted = run.clone();
    interrupted.finished_at = None;
    interrupted.scenarios[4].aborted = Some("interrupted (Ctrl-C)".to_owned());
    let o = outcome(&interrupted);
    assert_eq!((o.status, o.exit_code), (OutcomeStatus::Incomplete, 3));
    assert_eq!(o.reasons[0], "the run did not finish: put-constant-rate was stopped (interrupted (Ctrl-C))");

    let mut died = interrupted.clone();
    died.target.exited = Some(TargetExit { at_seconds: 12.5, status: "signal 9 (SIGKILL)".to_owned() });
    let o = outcome(&died);
    assert_eq!((o.status, o.exit_code), (OutcomeStatus::RunFailed, 3));
    assert_eq!(o.reasons[0], "the target exited during the run, 12.5s after the start: signal 9 (SIGKILL)");

    let mut never_ready = passing.clone();
    never_ready.outcome =
        Outcome::run_failed(vec!["the target never became ready: GET /plaintext refused for 30s".to_owned()]);
    let o = outcome(&never_ready);
    assert_eq!((o.status, o.exit_code), (OutcomeStatus::RunFailed, 3));
    assert_eq!(o.reasons, ["the target never became ready: GET /plaintext refused for 30s"]);

    assert_eq!(exit_codes::INVALID_INPUT, 2);
}

#[test]
fn merged_repetitions_add_histograms() {
    let run = sample_run();
    let s = &run.scenarios[1];
    let merged = merge_scenarios(&[s.clone(), s.clone()]).unwrap();
    assert_eq!(merged.requests.completed, 2 * s.requests.completed);
    assert_eq!(merged.histograms.latency.len(), 2 * s.histograms.latency.len());
    assert_eq!(merged.latency.percentiles["p99"], s.latency.percentiles["p99"]);
    assert!((merged.throughput - s.throughput).abs() < 1e-6);
    assert_eq!(merged.timeline.len(), 2 * s.timeline.len());
    assert!(merged.judged.verdicts.is_empty());
    assert!(merge_scenarios(&[s.clone(), run.scenarios[2].clone()]).is_err());
    assert!(merge_scenarios(&[]).is_err());
}

#[test]
fn merged_parts_add_their_per_request_breakdowns_name_by_name() {
    let run = sample_run();
    let mut s = run.scenarios[1].clone();
    let named = |name: &str, completed: u64, us: u64| {
        let mut histogram = new_histogram();
        histogram.record_n(us, completed).unwrap();
        RequestBreakdown {
            name: name.to_owned(),
            requests: RequestCounts { sent: completed, completed, incomplete: 0, unsent: 0 },
            status: StatusCounts { success: completed, ..Default::default() },
            errors: ErrorCounts::default(),
            throughput: 0.0,
            latency: LatencySummary::from_histogram(&histogram),
            histogram,
            checked: Default::default(),
        }
    };
    s.by_request = vec![named("get", 900, 1_000), named("put", 100, 50_000)];
    let mut other = s.clone();
    // The second repetition's puts are slow, and it has a request the first lacks.
    other.by_request = vec![named("put", 100, 90_000), named("delete", 10, 2_000)];
    for merged in [merge_scenarios(&[s.clone(), other.clone()]).unwrap(), merge_concurrent(&[s, other]).unwrap()] {
        let by = |name: &str| merged.by_request.iter().find(|r| r.name == name).unwrap();
        assert_eq!(by("get").requests.completed, 900);
        assert_eq!(by("put").requests.completed, 200, "both parts' puts");
        assert_eq!(by("put").status.success, 200);
        assert_eq!(by("put").histogram.len(), 200);
        assert!(by("put").latency.percentiles["p99"] >= 89_000, "the slow repetition's puts are in the p99");
        assert_eq!(by("delete").requests.completed, 10);
        let expected = 200.0 / merged.duration;
        assert!((by("put").throughput - expected).abs() < 1e-9, "per the merged duration");
    }
}

#[test]
fn a_profile_section_round_trips_and_validates_against_the_schema() {
    use loadgate_results::frames::{differential, time_table, FrameOptions, PairedRound, RoundProfile};
    use loadgate_results::stacks::Stacks;

    let side = |slow: u64, i: u64| RoundProfile {
        stacks: [
            (vec!["main", "handler", "parse"], 200 + (i * 7) % 11),
            (vec!["main", "handler", "slow_path"], slow),
            (vec!["main", "handler", "respond"], 100 + (i * 5) % 13),
        ]
        .into_iter()
        .collect(),
        ns_per_sample: 250_000.0,
        requests: 4_000,
    };
    let rounds: Vec<PairedRound> = (0..10)
        .map(|i| PairedRound { baseline: side(20 + i % 3, i), candidate: side(260 + (i * 3) % 7, i + 1) })
        .collect();
    let analysis = differential(&rounds, &FrameOptions::default()).unwrap();
    assert_eq!(analysis.named[0].name, "slow_path");
    let mut merged = Stacks::new();
    for r in &rounds {
        merged.merge(&r.candidate.stacks);
    }
    let shape = merged.shape();
    let profile = ScenarioProfile {
        source: "cpu".into(),
        sample_type: "cpu".into(),
        samples: shape.samples,
        ns_per_sample: Some(250_000.0),
        requests: 40_000,
        distinct_stacks: shape.distinct_stacks,
        overflow_samples: shape.overflow,
        unknown_share: shape.unknown_leaf as f64 / shape.samples as f64,
        depth_p50: shape.depth_p50,
        depth_p90: shape.depth_p90,
        depth_max: shape.depth_max,
        folded_file: Some("profile-plaintext-candidate.folded".into()),
        table: time_table(&merged, Some(250_000.0), 40_000, 20),
        differential: Some(analysis),
        notes: Vec::new(),
        stacks: None,
    };
    let mut run = sample_run();
    run.scenarios[0].profile = Some(profile.clone());
    let text = to_json(&run).unwrap();
    let back = from_json(&text).unwrap();
    assert_eq!(back.scenarios[0].profile.as_ref(), Some(&profile));
    let schema: serde_json::Value = serde_json::from_str(&json_schema()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let instance: serde_json::Value = serde_json::from_str(&text).unwrap();
    let errors: Vec<String> =
        validator.iter_errors(&instance).map(|e| format!("{} at {}", e, e.instance_path)).collect();
    assert!(errors.is_empty(), "{errors:#?}");
}

#[test]
fn results_written_before_the_one_record_of_a_phase_read_and_write_back_byte_for_byte() {
    // Written by the binary at bafc702, when `ScenarioResult` still repeated the engine's 29 fields: a plain run
    // (examples/service.yaml), an A/B run with checks, repetitions and the baseline's side, and an open load over
    // h2 and TLS whose rate the target limited (`limited_by` between `validity` and `verdicts`, `tls`, `http2`).
    for name in ["results-plain-bafc702.json", "results-ab-bafc702.json", "results-tls-h2-limited-bafc702.json"] {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name);
        let text = std::fs::read_to_string(&path).unwrap();
        let again = to_json(&from_json(&text).unwrap()).unwrap();
        let first_change = text.lines().zip(again.lines()).position(|(a, b)| a != b);
        assert!(again == text, "{name}: the JSON changed (first at line {first_change:?})");
    }
}
