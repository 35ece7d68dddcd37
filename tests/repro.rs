//! `loadgate repro`: a run reproduced from its results.json, through the real binary.

use std::path::Path;
use std::process::Output;

mod common;
use common::{loadgate, text};

/// A run that was carried out and wrote its results: on a busy machine the quickstart's open scenario can be
/// limited by the generator (exit 4); the verdict is the machine's, what is tested here is the reproduction.
fn ran(out: &Output) {
    assert!(
        matches!(out.status.code(), Some(0 | 1 | 4 | 5)),
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        text(&out.stdout),
        text(&out.stderr)
    );
}

fn results(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Issue 14's "done when": `loadgate repro` of the quickstart's results.json runs and prints both columns.
#[test]
fn the_quickstart_reproduced_from_its_results_prints_both_columns() {
    let dir = tempfile::tempdir().unwrap();
    let ci = dir.path().join("ci");
    ran(&loadgate(&["-q", "run", "specs/quickstart.yaml", "--set", "scale=0.2", "--out", ci.to_str().unwrap()]));
    let artifact = ci.join("quickstart/results.json");
    let embedded = results(&artifact);
    assert!(embedded["spec"]["source"]["text"].as_str().unwrap().contains("name: quickstart"));

    let here = dir.path().join("here");
    let out = loadgate(&["-q", "repro", artifact.to_str().unwrap(), "--out", here.to_str().unwrap()]);
    ran(&out);
    let stdout = text(&out.stdout);
    let hash = embedded["spec"]["plan_hash"].as_str().unwrap();
    assert!(
        stdout.contains(&format!("quickstart: this run beside the CI run (plan {hash}, the same plan)")),
        "{stdout}"
    );
    for scenario in ["warmup", "closed", "open"] {
        assert!(stdout.contains(&format!("\n{scenario}\n")), "{stdout}");
    }
    for row in ["throughput", "p50", "p90", "p99", "errors", "verdict"] {
        assert_eq!(stdout.matches(&format!("\n  {row} ")).count(), 3, "{row} once per instance:\n{stdout}");
    }
    assert!(stdout.contains("Two runs differ by noise"), "{stdout}");
    // This run's results are a run of the same plan, and can be reproduced in turn.
    let again = results(&here.join("quickstart/results.json"));
    assert_eq!(again["spec"]["plan_hash"], embedded["spec"]["plan_hash"]);
    assert_eq!(again["spec"]["file"], "specs/quickstart.yaml");
    assert_eq!(again["spec"]["source"], embedded["spec"]["source"]);
}

#[test]
fn run_of_a_results_file_says_to_use_repro() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.json");
    std::fs::write(&path, "{\n  \"schema_version\": 1,\n  \"loadgate_version\": \"0.1.0\"\n}\n").unwrap();
    let out = loadgate(&["run", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("is a results.json, not a spec: `loadgate repro "), "{stderr}");
}

const SECRET_SPEC: &str = r#"
version: 1
name: repro-secret
vars:
  token: ""
secrets:
  vars: [token]
target:
  builtin: plaintext
scenarios:
  s:
    request:
      path: "/plaintext?user={{ pick_line('data/users.txt') }}"
      headers: { X-Token: "{{ token }}" }
    load: { closed: { connections: 1, duration: 200ms } }
"#;

/// A spec with a data file and a secret, run in one directory and reproduced from another: the data file
/// travels in results.json, the secret's value never does and is asked for; a changed plan is refused.
#[test]
fn a_secret_is_asked_for_and_a_different_plan_is_refused_with_the_reason() {
    let ci_dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(ci_dir.path().join("data")).unwrap();
    std::fs::write(ci_dir.path().join("data/users.txt"), "ann\nbob\n").unwrap();
    let spec = ci_dir.path().join("spec.yaml");
    std::fs::write(&spec, SECRET_SPEC).unwrap();
    let out_dir = ci_dir.path().join("out");
    let spec_arg = spec.to_str().unwrap();
    ran(&loadgate(&["-q", "run", spec_arg, "--secret", "token=hunter22", "--out", out_dir.to_str().unwrap()]));
    let artifact = out_dir.join("repro-secret/results.json");
    let json = std::fs::read_to_string(&artifact).unwrap();
    assert!(!json.contains("hunter22"), "a secret's value reached results.json");
    // Elsewhere: the spec's directory is gone.
    let elsewhere = tempfile::tempdir().unwrap();
    let moved = elsewhere.path().join("results.json");
    std::fs::copy(&artifact, &moved).unwrap();
    drop(ci_dir);
    let moved_arg = moved.to_str().unwrap();
    let here = elsewhere.path().join("here");
    let here_arg = here.to_str().unwrap();

    let out = loadgate(&["repro", moved_arg, "--out", here_arg]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("give `--secret token=VALUE`"), "{}", text(&out.stderr));

    let out = loadgate(&["repro", moved_arg, "--out", here_arg, "--secret", "token=wrong"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("the plan cannot be rebuilt identically"), "{stderr}");
    assert!(stderr.contains("check the values given for `token`"), "{stderr}");
    assert!(!here.exists(), "nothing ran");

    let out = loadgate(&["-q", "repro", moved_arg, "--out", here_arg, "--secret", "token=hunter22"]);
    ran(&out);
    assert!(text(&out.stdout).contains("this run beside the CI run"));
    let again = std::fs::read_to_string(here.join("repro-secret/results.json")).unwrap();
    assert!(!again.contains("hunter22"));
}

#[test]
fn results_without_an_embedded_spec_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.json");
    // A results.json of an older loadgate: no embedded spec.
    let json = loadgate_results::to_json(&loadgate_results::fixture::sample_run()).unwrap();
    std::fs::write(&path, json).unwrap();
    let out = loadgate(&["repro", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("holds no spec to rebuild"), "{stderr}");
}

/// A run from flags (as a CI job may write `loadgate run --url URL -c 4 -n 300`) embeds the spec its flags made,
/// and is reproduced from it; one with a credential header embeds nothing (results.json could keep it only
/// scrubbed) and is refused with what to do.
#[test]
fn a_run_from_flags_is_reproduced_unless_it_carries_a_credential() {
    let (port, _) = common::recording_server();
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://127.0.0.1:{port}/flags");
    let ci = dir.path().join("ci");
    ran(&loadgate(&["-q", "run", "--url", &url, "-c", "4", "-n", "300", "--out", ci.to_str().unwrap()]));
    let artifact = ci.join("adhoc/results.json");
    assert_eq!(results(&artifact)["spec"]["file"], "(command line)");
    let here = dir.path().join("here");
    let out = loadgate(&["repro", artifact.to_str().unwrap(), "--out", here.to_str().unwrap()]);
    ran(&out);
    let said = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(said.contains("rebuilt identically"), "{said}");
    assert_eq!(results(&here.join("adhoc/results.json"))["scenarios"][0]["requests"]["completed"], 300);

    let secret = dir.path().join("secret");
    ran(&loadgate(&[
        "-q",
        "run",
        "--url",
        &url,
        "-c",
        "2",
        "-n",
        "50",
        "-H",
        "Authorization: Bearer repro-token-91",
        "--out",
        secret.to_str().unwrap(),
    ]));
    let artifact = secret.join("adhoc/results.json");
    let json = std::fs::read_to_string(&artifact).unwrap();
    assert!(!json.contains("repro-token-91"), "the credential reached results.json");
    assert!(results(&artifact)["spec"].get("source").is_none_or(serde_json::Value::is_null), "{json}");
    let out = loadgate(&["repro", artifact.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("a credential header") && stderr.contains("run that command line again"), "{stderr}");
}

/// `--repeat` and `--on-inconclusive` change the plan: the artifact keeps them and the reproduction applies them
/// again; the CI run's repetitions give intervals this run is placed in.
#[test]
fn a_repeated_run_is_reproduced_with_its_repetitions_and_their_intervals() {
    let dir = tempfile::tempdir().unwrap();
    let ci = dir.path().join("ci");
    let ci_arg = ci.to_str().unwrap();
    let out = loadgate(&[
        "-q",
        "run",
        "specs/quickstart.yaml",
        "--set",
        "scale=0.1",
        "--repeat",
        "2",
        "--on-inconclusive",
        "pass",
        "--out",
        ci_arg,
    ]);
    ran(&out);
    let artifact = ci.join("quickstart/results.json");
    let source = &results(&artifact)["spec"]["source"];
    assert_eq!(source["repeat"], 2);
    assert_eq!(source["on_inconclusive"], "pass");
    let here = dir.path().join("here");
    let out = loadgate(&["-q", "repro", artifact.to_str().unwrap(), "--out", here.to_str().unwrap()]);
    ran(&out);
    let stdout = text(&out.stdout);
    assert!(stdout.contains("the CI run's 2 repetitions, median and 90% interval:"), "{stdout}");
    assert!(stdout.contains("this run's "), "{stdout}");
}

/// A pod's run (`run --pin-within-affinity`, which `loadgate k8s` renders) reproduced in a container whose CPU
/// ids are not the spec's: `repro --pin-within-affinity` maps them as the pod did; without it the spec's
/// `on_mismatch: fail` refuses the CPUs this machine lacks.
#[test]
fn a_run_pinned_within_its_affinity_is_reproduced_with_the_same_mapping() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("pod.yaml");
    std::fs::write(
        &spec,
        "version: 1\nname: pod\nhardware: { generator: { cpus: \"4000\" }, on_mismatch: fail }\ntarget: { builtin: plaintext }\nscenarios:\n  s:\n    request: { path: /plaintext }\n    load: { closed: { connections: 1, requests: 50 } }\n",
    )
    .unwrap();
    let ci = dir.path().join("ci");
    ran(&loadgate(&["-q", "run", spec.to_str().unwrap(), "--pin-within-affinity", "--out", ci.to_str().unwrap()]));
    let artifact = ci.join("pod/results.json");
    assert_eq!(results(&artifact)["pinning"]["cpu_map"][0]["spec"], 4000);

    let here = dir.path().join("here");
    let (a, h) = (artifact.to_str().unwrap(), here.to_str().unwrap());
    let out = loadgate(&["-q", "repro", a, "--out", h]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let out = loadgate(&["-q", "repro", a, "--out", h, "--pin-within-affinity"]);
    ran(&out);
    assert_eq!(results(&here.join("pod/results.json"))["pinning"]["cpu_map"][0]["spec"], 4000);
}
