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
    let store = dir.path().join("history.db").display().to_string();
    let out = loadgate(&["run", &spec, "--out", &out_dir.display().to_string(), "--history", &store]);
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
    // What got slower: when a frame is named, the first is the slow path (its callee is shared with the others),
    // on the failed verdict's own line too.
    let named = s["profile"]["differential"]["named"].as_array().cloned().unwrap_or_default();
    if let Some(first) = named.first() {
        assert!(first["name"].as_str().unwrap_or_default().contains("slow_path"), "{named:?}");
        assert!(stdout.contains("where: loadgate_server::burn::slow_path"), "{stdout}");
        let verdict = stdout.lines().find(|l| l.contains("FAIL  target_cpu_per_request")).unwrap_or_default();
        assert!(verdict.contains("; where: loadgate_server::burn::slow_path"), "{verdict}");
        let md = std::fs::read_to_string(run.join("report.md")).expect("report.md");
        assert!(md.contains("| **FAIL** | where: loadgate_server::burn::slow_path"), "{md}");
    }
    assert!(html.contains("Where the time went: B (candidate), top frames by total time"), "report.html");
    // The history marks the run as profiled.
    let shown = loadgate(&["history", "show", "--store", &store, "--format", "text"]);
    let shown = text(&shown.stdout);
    assert!(shown.contains("the newest run was profiled (cpu from cpu, "), "{shown}");
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
fn kubernetes_manifests_of_a_profiled_target_are_refused_unless_pprof() {
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = write(
        dir.path(),
        &AB.replace(
            "target: { builtin: { kind: cpu, work: 50us, slow_path: 5us } }",
            "target: { base_url: \"http://127.0.0.1:8080\", start: { command: [./server] } }",
        )
        .replace("candidate: { builtin: { kind: cpu, work: 50us, slow_path: 35us } }\n", "")
        .replace("      - target_cpu_per_request <= baseline * 1.05\n", "      - p99 < 1s\n"),
    );
    let out = loadgate(&["k8s", &spec, "--shards", "2", "--image", "loadgate:test"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("profiles the target's process, which a shard does not own"), "{err}");
    // A Go server's pprof endpoint can be read from any pod.
    let yaml = std::fs::read_to_string(&spec)
        .expect("spec")
        .replace("profile: { cpu: {} }", "profile: { pprof: { url: \"http://127.0.0.1:8080/debug/pprof/profile\" } }");
    let spec = write(dir.path(), &yaml.replace(", start: { command: [./server] }", ""));
    let out = loadgate(&["k8s", &spec, "--shards", "2", "--image", "loadgate:test"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
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

/// One profiled scenario against the built-in `cpu` kind as a process, under a single run (no candidate).
fn single(profile: &str, slo: &str) -> String {
    format!(
        "version: 1\nname: prof-one\ntarget: {{ builtin: {{ kind: cpu, work: 50us }} }}\nprofile: {profile}\nscenarios:\n  main:\n    request: {{ path: / }}\n    load: {{ open: {{ rate: 500/s, connections: 4, duration: 1s }} }}\n    slo: [\"{slo}\"]\n"
    )
}

/// Runs loadgate with a seccomp filter that refuses `perf_event_open` with EPERM, as Docker's default profile does.
fn run_without_perf_events(args: &[&str]) -> std::process::Output {
    let mut cmd = common::command(args);
    loadgate_testkit::refuse_perf_events(&mut cmd).output().expect("run loadgate")
}

#[test]
fn a_sampler_the_kernel_refuses_is_one_warning_and_the_run_goes_on_unprofiled() {
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = write(dir.path(), &single("{ cpu: true }", "target_cpu_per_request < 1s"));
    let out_dir = dir.path().join("out");
    let out = run_without_perf_events(&["run", &spec, "--out", &out_dir.display().to_string()]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    let all = format!("{stdout}\n{stderr}");
    assert!(!all.contains("panicked"), "{all}");
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert_eq!(all.matches("the CPU profile of main cannot be taken").count(), 1, "{all}");
    assert!(all.contains("seccomp") && all.contains("the run goes on without it"), "{all}");
    // Unprofiled, but still measured: the target's CPU per request comes from /proc, not from perf events.
    let results: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out_dir.join("prof-one").join("results.json")).expect("results.json"),
    )
    .expect("json");
    assert!(results["scenarios"][0]["profile"].is_null(), "{}", results["scenarios"][0]["profile"]);
    assert!(results["scenarios"][0]["target_cpu"]["cpu_ns"].as_u64().unwrap_or(0) > 0);
}

#[test]
fn a_required_profile_the_kernel_refuses_stops_the_run_before_any_load() {
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = write(dir.path(), &single("{ cpu: true, required: true }", "target_cpu_per_request < 1s"));
    let out_dir = dir.path().join("out");
    let out = run_without_perf_events(&["run", &spec, "--out", &out_dir.display().to_string()]);
    let all = format!("{}\n{}", text(&out.stdout), text(&out.stderr));
    assert!(!all.contains("panicked"), "{all}");
    assert_eq!(out.status.code(), Some(3), "{all}");
    assert!(all.contains("perf_event_paranoid") && all.contains("no load was sent"), "{all}");
    let results: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out_dir.join("prof-one").join("results.json")).expect("results.json"),
    )
    .expect("json");
    assert_eq!(results["scenarios"].as_array().map_or(0, Vec::len), 0, "{results}");
}

#[test]
fn a_profiler_that_is_not_there_is_named_before_the_load_and_refused_when_required() {
    let dir = tempfile::tempdir().expect("tempdir");
    let profile = r#"{ command: "no-such-profiler-41 -d {seconds} -o {out} {pid}" }"#;
    let spec = write(dir.path(), &single(profile, "throughput > 0/s"));
    let out = loadgate(&["run", &spec, "--out", &dir.path().join("out").display().to_string()]);
    let all = format!("{}\n{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert_eq!(all.matches("the profiler `no-such-profiler-41` of main is not there").count(), 1, "{all}");
    let required = profile.replace(" }", ", required: true }");
    let spec = write(dir.path(), &single(&required, "throughput > 0/s"));
    let out = loadgate(&["run", &spec, "--out", &dir.path().join("out2").display().to_string()]);
    let all = format!("{}\n{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(3), "{all}");
    assert!(all.contains("not found on PATH") && all.contains("no load was sent"), "{all}");
}

#[test]
fn rounds_too_short_for_useful_samples_are_a_warning() {
    if common::perf_events_refused() {
        eprintln!("skipped: perf_event_open is refused here");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = write(dir.path(), &single("{ cpu: { frequency: 49 } }", "throughput > 0/s"));
    let out = loadgate(&["run", &spec, "--out", &dir.path().join("out").display().to_string()]);
    let all = format!("{}\n{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert!(all.contains("gathers at most 49 samples per busy CPU a round"), "{all}");
    assert!(all.contains("rounds with fewer than 50 samples"), "{all}");
}

#[test]
fn a_wrapper_whose_tree_does_no_work_is_said_and_not_profiled() {
    if common::perf_events_refused() {
        eprintln!("skipped: perf_event_open is refused here");
        return;
    }
    let Some(setsid) = common::which("setsid") else {
        eprintln!("skipped: needs setsid");
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    let exe = env!("CARGO_BIN_EXE_loadgate");
    // Like `docker run`: the wrapper hands the server to a process it does not parent (a new session whose parent
    // exits at once), then waits doing nothing.
    let pid_file = dir.path().join("server.pid");
    let script = format!(
        "{setsid} -f sh -c 'echo $$ > {pid}; exec {exe} serve --kind cpu --work 50us --listen 127.0.0.1:{port} >/dev/null 2>&1'; exec sleep 600",
        setsid = setsid.display(),
        pid = pid_file.display()
    );
    let yaml = format!(
        "version: 1\nname: prof-wrapper\ntarget:\n  base_url: http://127.0.0.1:{port}\n  start:\n    command: [sh, -c, {script:?}]\n    ready: {{ tcp: true, timeout: 20s }}\nprofile: {{ cpu: true }}\nscenarios:\n  main:\n    request: {{ path: / }}\n    load: {{ open: {{ rate: 500/s, connections: 4, duration: 1s }} }}\n    slo: [\"target_cpu_per_request < 1s\"]\n"
    );
    let spec = write(dir.path(), &yaml);
    let out = loadgate(&["run", &spec, "--out", &dir.path().join("out").display().to_string()]);
    // The server outside the tree is this test's to stop.
    if let Some(pid) = std::fs::read_to_string(&pid_file).ok().and_then(|p| p.trim().parse::<u32>().ok()) {
        let _ = std::process::Command::new("kill").args(["-KILL", &pid.to_string()]).status();
    }
    let all = format!("{}\n{}", text(&out.stdout), text(&out.stderr));
    assert!(!all.contains("panicked"), "{all}");
    assert!(all.contains("the target's process tree did almost no work while the server answered"), "{all}");
    // A CPU per request that was not measured never passes.
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(all.contains("needs the CPU time of a server loadgate started"), "{all}");
}
