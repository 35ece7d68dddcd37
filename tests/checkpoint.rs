//! Checkpoints through the real binary: a run killed with SIGKILL (no handler of loadgate's runs) leaves
//! `results.partial.json`, which `loadgate report` renders marked incomplete. Nothing asserts how fast anything
//! is: the test waits for the checkpoint with a generous bound.

mod common;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{command, text};

const SPEC: &str = r#"
version: 1
name: e2e-soak
target: { builtin: plaintext }
scenarios:
  first:
    request: { path: / }
    load: { closed: { connections: 1, requests: 50 } }
  steady:
    request: { path: / }
    load: { open: { rate: 200/s, connections: 4, duration: 10m } }
"#;

fn read_json(path: &Path) -> Option<serde_json::Value> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

fn pid_alive(pid: u64) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| s.rsplit(')').next().is_some_and(|r| !r.trim_start().starts_with('Z')))
        .unwrap_or(false)
}

#[test]
fn a_run_killed_by_sigkill_leaves_a_checkpoint_that_report_renders_as_incomplete() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.yaml");
    std::fs::write(&spec, SPEC).unwrap();
    let out = dir.path().join("out");
    let mut child = command(&["run", spec.to_str().unwrap(), "--out", out.to_str().unwrap(), "--checkpoint", "1s"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let partial = out.join("e2e-soak").join("results.partial.json");
    // A checkpoint of the second instance that has responses in it (the first instance finished before it).
    let seen = |j: &serde_json::Value| {
        j["checkpoint"]["in_progress"] == "steady"
            && j["scenarios"].as_array().is_some_and(|s| s.len() == 2)
            && j["scenarios"][1]["requests"]["completed"].as_u64().is_some_and(|n| n > 0)
            // A whole second measured (a checkpoint taken in the first second has no timeline point yet).
            && j["scenarios"][1]["timeline"].as_array().is_some_and(|t| !t.is_empty())
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut last = None;
    while Instant::now() < deadline {
        last = read_json(&partial);
        if last.as_ref().is_some_and(seen) {
            break;
        }
        assert!(child.try_wait().unwrap().is_none(), "loadgate ended before a checkpoint of `steady` was written");
        std::thread::sleep(Duration::from_millis(100));
    }
    let before = last.filter(seen).unwrap_or_else(|| panic!("no checkpoint of `steady` in {}", partial.display()));
    child.kill().unwrap(); // SIGKILL
    let status = child.wait().unwrap();
    assert_eq!(status.code(), None, "killed by a signal");

    let r = read_json(&partial).expect("the checkpoint survives the kill");
    assert!(
        r["scenarios"][1]["requests"]["completed"].as_u64() >= before["scenarios"][1]["requests"]["completed"].as_u64()
    );
    assert_eq!(r["outcome"]["status"], "incomplete", "{}", r["outcome"]);
    assert!(r["finished_at"].is_null());
    assert!(r["checkpoint"]["run_seconds"].as_f64().unwrap() > 0.0, "{}", r["checkpoint"]);
    assert!(r["outcome"]["reasons"][0].as_str().unwrap().contains("checkpoint"), "{}", r["outcome"]);
    // The first instance as it was judged; the second with what it had measured, still running.
    assert_eq!(r["scenarios"][0]["name"], "first");
    assert_eq!(r["scenarios"][0]["requests"]["completed"], 50);
    assert!(r["scenarios"][0]["aborted"].is_null());
    let s = &r["scenarios"][1];
    assert_eq!(s["name"], "steady");
    assert!(s["aborted"].as_str().unwrap().contains("still running"), "{}", s["aborted"]);
    assert!(s["latency"]["count"].as_u64().unwrap() > 0, "{}", s["latency"]);
    assert!(!s["timeline"].as_array().unwrap().is_empty());
    assert!(s["histograms"]["latency"].as_str().unwrap().starts_with("HISTFAAA"));
    // The target loadgate started died with it.
    let pid = r["target"]["pid"].as_u64().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while pid_alive(pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!pid_alive(pid), "the built-in target {pid} outlived loadgate");

    let rendered = dir.path().join("rendered");
    let report = command(&["report", partial.to_str().unwrap(), "--out", rendered.to_str().unwrap()]).output().unwrap();
    let stdout = text(&report.stdout);
    assert_eq!(report.status.code(), Some(3), "{stdout}{}", text(&report.stderr));
    assert!(stdout.contains("incomplete (exit 3)"), "{stdout}");
    assert!(stdout.contains("checkpoint"), "{stdout}");
    let md = std::fs::read_to_string(rendered.join("report.md")).unwrap();
    assert!(md.contains("The run is incomplete: this is a checkpoint"), "{md}");
    assert!(md.contains("while steady was still running"), "{md}");
    let html = std::fs::read_to_string(rendered.join("report.html")).unwrap();
    assert!(html.contains("The run is incomplete: this is a checkpoint"));
}

#[test]
fn a_run_that_finishes_leaves_no_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.yaml");
    std::fs::write(
        &spec,
        "version: 1\nname: e2e-done\ntarget: { builtin: plaintext }\nscenarios:\n  a:\n    request: { path: / }\n    load: { open: { rate: 100/s, connections: 2, duration: 2500ms } }\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    let run = command(&["run", spec.to_str().unwrap(), "--out", out.to_str().unwrap(), "--checkpoint", "1s"])
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(0), "{}", text(&run.stderr));
    let dir = out.join("e2e-done");
    assert!(dir.join("results.json").exists());
    assert!(!dir.join("results.partial.json").exists(), "the finished run removed its checkpoint");
    let r = read_json(&dir.join("results.json")).unwrap();
    assert!(r.get("checkpoint").is_none(), "{}", r["checkpoint"]);
}
