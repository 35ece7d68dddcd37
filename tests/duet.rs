//! Duet rounds (`gating: { order: duet }`) through the real binary: both built-in targets loaded at once by the
//! same workers, judged over paired rounds.

mod common;

use std::path::Path;

use common::{loadgate, text};

/// Writes a duet spec (the target and the candidate given as YAML), runs it, and gives the exit code, the
/// output and results.json.
fn duet(dir: &Path, target: &str, candidate: &str, request: &str) -> (Option<i32>, String, serde_json::Value) {
    let spec = dir.join("duet.yaml");
    std::fs::write(
        &spec,
        format!(
            "version: 1\nname: duet\ntarget: {target}\ncandidate: {candidate}\ngating: {{ repeat: 6, order: duet }}\n\
             scenarios:\n  main:\n    request: {{ path: /{request} }}\n    load: {{ open: {{ rate: 200/s, duration: 500ms, connections: 8 }} }}\n    \
             slo: [p50 <= baseline * 1.10, errors == 0]\n"
        ),
    )
    .unwrap();
    let out = dir.join("out");
    let done = loadgate(&["run", spec.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    let all = format!("{}{}", text(&done.stdout), text(&done.stderr));
    let results = std::fs::read_to_string(out.join("duet/results.json"))
        .map(|s| serde_json::from_str(&s).unwrap())
        .unwrap_or(serde_json::Value::Null);
    (done.status.code(), all, results)
}

fn delay(ms: u32) -> String {
    format!("{{ builtin: {{ kind: delay, delay: {ms}ms }} }}")
}

#[test]
fn duet_fails_a_slower_candidate() {
    let dir = tempfile::tempdir().unwrap();
    let (code, all, results) = duet(dir.path(), &delay(10), &delay(14), "");
    assert_eq!(code, Some(1), "{all}");
    // An A/B result is the candidate's, its baseline beside it.
    let b = &results["scenarios"][0];
    assert_eq!(b["verdicts"][0]["statistics"]["status"], "fail", "{all}");
}

#[test]
fn duet_never_fails_the_same_server() {
    let dir = tempfile::tempdir().unwrap();
    let (code, all, _) = duet(dir.path(), &delay(10), &delay(10), "");
    assert!(matches!(code, Some(0) | Some(5)), "PASS or INCONCLUSIVE, never FAIL: {all}");
}

#[test]
fn duet_results_record_the_design_and_each_side_its_whole_load() {
    let dir = tempfile::tempdir().unwrap();
    let (code, all, results) = duet(dir.path(), &delay(2), &delay(2), "");
    assert!(matches!(code, Some(0) | Some(5)), "{all}");
    assert_eq!(results["gating"]["order"], "duet", "{all}");
    let b = &results["scenarios"][0];
    for s in [b, &b["ab_baseline"]] {
        // Each side got the phase's whole load in each of its 6 rounds: 100 requests a round.
        assert_eq!(s["requests"]["sent"], 600, "{s}");
        assert_eq!(s["requests"]["completed"], 600, "{s}");
    }
    let plan = loadgate(&["plan", dir.path().join("duet.yaml").to_str().unwrap()]);
    let plan = text(&plan.stdout);
    assert!(plan.contains("duet rounds: every gated phase loads both at once"), "{plan}");
    assert!(plan.contains("the generator sends twice it"), "{plan}");
}

#[test]
fn duet_runs_over_https_and_http2_with_checks() {
    let dir = tempfile::tempdir().unwrap();
    let side = "\n  builtin: { kind: plaintext, tls: true }\n  protocol: auto";
    let checks = ", check: [{ status: 200 }]";
    let (code, all, results) = duet(dir.path(), side, side, checks);
    assert!(matches!(code, Some(0) | Some(5)), "{all}");
    let b = &results["scenarios"][0];
    for s in [b, &b["ab_baseline"]] {
        assert_eq!(s["requests"]["completed"], 600, "{s}");
        assert!(s["http2"]["connections"].as_u64().unwrap_or(0) > 0, "HTTP/2 by ALPN on both sides: {s}");
    }
}

#[test]
fn the_plan_says_how_a_duets_targets_share_the_target_cpus() {
    let dir = tempfile::tempdir().unwrap();
    for (cpus, says) in [
        ("0-1", "the targets get CPUs 0 and 1, swapped every round"),
        ("0", "both targets share CPU 0, so CPU-bound servers slow each other"),
    ] {
        let spec = dir.path().join("duet.yaml");
        std::fs::write(
            &spec,
            format!(
                "version: 1\nname: duet\nhardware: {{ target: {{ cpus: \"{cpus}\" }}, on_mismatch: warn }}\n\
                 target: {}\ncandidate: {}\ngating: {{ repeat: 6, order: duet }}\n\
                 scenarios:\n  main:\n    request: {{ path: / }}\n    load: {{ open: {{ rate: 400/s, duration: 1s, connections: 8 }} }}\n    \
                 slo: [p99 <= baseline * 1.05]\n",
                delay(20),
                delay(20)
            ),
        )
        .unwrap();
        let plan = loadgate(&["plan", spec.to_str().unwrap()]);
        let out = text(&plan.stdout);
        assert!(out.contains(says), "{cpus}: {out}{}", text(&plan.stderr));
        assert!(out.contains("6s (1s a pass, gated phases repeated, both sides at once in duet rounds)"), "{out}");
    }
}

#[test]
fn duet_runs_user_sessions_and_ramps_with_the_same_requests_on_each_side() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("users.yaml");
    std::fs::write(
        &spec,
        format!(
            "version: 1\nname: users\ntarget: {}\ncandidate: {}\ngating: {{ repeat: 2, order: duet }}\nscenarios:\n  \
             journey:\n    session:\n      - {{ name: first, path: /a }}\n      - {{ think: 10ms }}\n      - {{ name: second, path: /b }}\n    \
             load: {{ users: {{ per_second: 40, during: 500ms }} }}\n    slo: [p99 <= baseline * 1.5, errors == 0]\n  \
             ramp:\n    request: {{ path: / }}\n    load: {{ ramp: {{ connections: 4, start_rate: 50/s, stages: [{{ to: 150/s, over: 500ms }}] }} }}\n    \
             slo: [p99 <= baseline * 1.5]\n",
            delay(2),
            delay(2)
        ),
    )
    .unwrap();
    let out = dir.path().join("out");
    let done = loadgate(&["run", spec.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    let all = format!("{}{}", text(&done.stdout), text(&done.stderr));
    assert!(matches!(done.status.code(), Some(0) | Some(5)), "{all}");
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("users/results.json")).unwrap()).unwrap();
    for s in results["scenarios"].as_array().unwrap() {
        let (b, a) = (&s["requests"]["sent"], &s["ab_baseline"]["requests"]["sent"]);
        assert!(b.as_u64().unwrap() > 0, "{all}");
        assert_eq!(b, a, "both sides got the same schedule: {}", s["name"]);
    }
}
