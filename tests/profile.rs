//! Profiles end to end (issue 41): the real binary profiles the built-in `cpu` server (a set CPU time per request
//! in named functions, the candidate's extra work in a callee of `slow_path`), writes folded stacks and flame
//! graphs, gates `target_cpu_per_request`, and refuses what it cannot profile. Sampling reads CPU time, which a
//! loaded machine does not change per request; no assertion is on a duration.

use std::path::Path;

mod common;
use common::{loadgate, text};

fn write(dir: &Path, yaml: &str) -> String {
    let path = dir.join("spec.yaml");
    std::fs::write(&path, yaml).expect("write spec");
    path.display().to_string()
}

const AB: &str = r#"version: 1
name: prof-ab
target: { builtin: { kind: cpu, work: 50us, slow_path: 5us } }
candidate: { builtin: { kind: cpu, work: 50us, slow_path: 35us } }
gating: { repeat: 10 }
profile: { cpu: {} }
scenarios:
  main:
    request: { path: / }
    load: { open: { rate: 500/s, connections: 4, duration: 1s } }
    slo:
      - target_cpu_per_request <= baseline * 1.05
"#;

/// The folded format: every line `frame;frame;... count`, the count after the last space.
fn assert_folded(path: &Path) -> u64 {
    let body = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut total = 0;
    for line in body.lines() {
        let (stack, count) = line.rsplit_once(' ').unwrap_or_else(|| panic!("not folded: {line:?}"));
        assert!(!stack.is_empty() && !stack.contains('\n'), "{line:?}");
        total += count.parse::<u64>().unwrap_or_else(|_| panic!("not a count: {line:?}"));
    }
    total
}

#[test]
fn an_ab_run_profiles_both_sides_and_gates_the_targets_cpu_per_request() {
    if common::perf_events_refused() {
        eprintln!("skipped: perf_event_open is refused here");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = write(dir.path(), AB);
    let out_dir = dir.path().join("out");
    let out = loadgate(&["run", &spec, "--out", &out_dir.display().to_string()]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(!stderr.contains("panicked"), "{stderr}");
    // 30 us of extra CPU per request on a handler of about 50: the candidate costs more, beyond 5%.
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stdout.contains("FAIL  target_cpu_per_request"), "{stdout}");
    assert!(stdout.contains("Profile A:") && stdout.contains("Profile B:"), "{stdout}");
    let run = out_dir.join("prof-ab");
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("results.json")).expect("results.json")).expect("json");
    let s = &results["scenarios"][0];
    for side in [&s["profile"], &s["ab_baseline"]["profile"]] {
        assert!(side["samples"].as_u64().unwrap_or(0) > 0, "{side}");
        assert!(side["table"]["by_total"].as_array().is_some_and(|t| !t.is_empty()), "{side}");
    }
    assert!(s["repetitions"][0]["target_cpu"]["cpu_ns"].as_u64().unwrap_or(0) > 0, "{s}");
    // The folded files that flamegraph.pl, inferno and speedscope read, and the flame graphs.
    for f in ["profile-main-baseline.folded", "profile-main-candidate.folded"] {
        assert!(assert_folded(&run.join(f)) > 0, "{f}");
    }
    for f in ["flame-main-baseline.svg", "flame-main-candidate.svg", "flame-diff-main.svg"] {
        let svg = std::fs::read_to_string(run.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
        roxmltree::Document::parse(&svg).unwrap_or_else(|e| panic!("{f} is not XML: {e}"));
    }
    let html = std::fs::read_to_string(run.join("report.html")).expect("report.html");
    assert!(
        html.contains("flame-diff-main.svg") && html.contains("flame-main-candidate.svg"),
        "report.html has no flame graph"
    );
    // What got slower: when a frame is named, the first is the slow path (its callee is shared with the others).
    let named = s["profile"]["differential"]["named"].as_array().cloned().unwrap_or_default();
    if let Some(first) = named.first() {
        assert!(first["name"].as_str().unwrap_or_default().contains("slow_path"), "{named:?}");
        assert!(stdout.contains("where: loadgate_server::burn::slow_path"), "{stdout}");
    }
}

#[test]
fn a_sharded_run_of_a_profiled_target_is_refused_before_any_load() {
    let dir = tempfile::tempdir().expect("tempdir");
    let spec =
        write(dir.path(), &AB.replace("candidate: { builtin: { kind: cpu, work: 50us, slow_path: 35us } }\n", ""));
    let out = loadgate(&["run", &spec, "--shards", "2", "--out", &dir.path().join("out").display().to_string()]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("profiles the target's process, which a shard does not own"), "{err}");
}

#[test]
fn plan_tells_the_samples_a_round_gathers_and_the_change_they_resolve() {
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = write(dir.path(), AB);
    let out = loadgate(&["plan", &spec]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(stdout.contains("profile  cpu-clock sampling of the target's process tree at 999 Hz"), "{stdout}");
    assert!(
        stdout.contains("samples per busy CPU per round") && stdout.contains("us/request over 10 paired rounds"),
        "{stdout}"
    );
}

#[test]
fn the_sampler_runs_with_privileges_dropped() {
    // As a user without privileges (nobody) at perf_event_paranoid 2, loadgate samples its own child's user stacks.
    let (Some(setpriv), true) = (common::which("setpriv"), common::is_root()) else {
        eprintln!("skipped: needs root and setpriv to drop privileges");
        return;
    };
    if common::perf_events_refused() {
        eprintln!("skipped: perf_event_open is refused here");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let yaml = AB
        .replace("candidate: { builtin: { kind: cpu, work: 50us, slow_path: 35us } }\n", "")
        .replace("      - target_cpu_per_request <= baseline * 1.05\n", "      - target_cpu_per_request < 1s\n");
    let spec = write(dir.path(), &yaml.replace("repeat: 10", "repeat: 1"));
    let out_dir = dir.path().join("out");
    std::fs::create_dir_all(&out_dir).expect("out");
    // nobody must be able to enter the temporary directory and write its output.
    for p in [dir.path(), out_dir.as_path()] {
        std::fs::set_permissions(p, std::os::unix::fs::PermissionsExt::from_mode(0o777)).expect("chmod");
    }
    std::fs::set_permissions(&spec, std::os::unix::fs::PermissionsExt::from_mode(0o644)).expect("chmod");
    let exe = env!("CARGO_BIN_EXE_loadgate");
    let out = std::process::Command::new(setpriv)
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", exe, "run", &spec, "--out"])
        .arg(&out_dir)
        .env("HOME", dir.path())
        .output()
        .expect("setpriv");
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(!stderr.contains("panicked"), "{stderr}");
    if stderr.contains("Permission denied") && !out_dir.join("prof-ab").exists() {
        eprintln!("skipped: nobody cannot run the test binary from here: {stderr}");
        return;
    }
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("Profile:"), "{stdout}");
    let folded = out_dir.join("prof-ab").join("profile-main.folded");
    assert!(assert_folded(&folded) > 0);
}
