//! `loadgate history` and `run --history` through the real binary, the same suite on a SQLite file and on a real
//! PostgreSQL server (Debian's, started on a free port in a temporary directory, stopped at the end).
//!
//! The series: 30 recorded runs of one spec (a real run's results.json, its throughput set per run) whose
//! run-to-run noise is 3% and which lose 5% of their throughput at run 20. The change point is found at 20 +/- 2
//! and the drift check fails; 30 runs of the same noise alone have no change point and pass. The same series
//! go through Apache Otava when `LOADGATE_OTAVA_PYTHON` names a Python with `apache-otava` (as `.ci/run` sets
//! it).

mod common;

#[path = "../crates/history/tests/support/postgres.rs"]
mod postgres;

use std::path::{Path, PathBuf};
use std::process::Stdio;

use common::{command, loadgate, root, text};
use serde_json::Value;

use loadgate_testkit::Noise;

/// 30 throughputs around 10,000/s with 3% noise, 5% lower from run 20 on when `step`.
fn series(seed: u64, step: bool) -> Vec<f64> {
    let mut noise = Noise(seed);
    (0..30).map(|i| 10_000.0 * (1.0 + 0.03 * noise.gaussian()) * if step && i >= 20 { 0.95 } else { 1.0 }).collect()
}

const SPEC: &str = "version: 1\nname: memory\ntarget: { builtin: plaintext }\n\
history:\n  drift: { throughput: 3% }\n  change_points: { throughput: 3% }\n\
scenarios:\n  get:\n    request: { path: / }\n    load: { closed: { connections: 2, duration: 200ms } }\n    slo: [error_rate < 1%]\n";

/// The spec and one real run of it (the template of the recorded runs).
fn real_run(dir: &Path) -> (PathBuf, Value) {
    let spec = dir.join("memory.yaml");
    std::fs::write(&spec, SPEC).expect("write the spec");
    let out = dir.join("template");
    let done = loadgate(&["run", spec.to_str().expect("utf-8"), "--out", out.to_str().expect("utf-8"), "-q"]);
    // No store: the history checks are not evaluated (as a baseline SLO without --baseline), and say why.
    assert_eq!(done.status.code(), Some(0), "{}", text(&done.stderr));
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("memory/results.json")).expect("results"))
            .expect("json");
    let notes = results["scenarios"][0]["verdicts"].to_string();
    assert!(notes.contains("not evaluated: no history store"), "{notes}");
    (spec, results)
}

/// Writes one results.json per value: the template's run, started an hour after the one before, of its own
/// commit, with that throughput.
fn write_runs(dir: &Path, template: &Value, values: &[f64], tag: &str) -> Vec<PathBuf> {
    values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let mut r = template.clone();
            // Each tag's runs start at their own minute: two series are different runs.
            let minute = tag.bytes().map(u32::from).sum::<u32>() % 60;
            r["started_at"] = Value::from(format!("2026-10-{:02}T{:02}:{minute:02}:00Z", 1 + i / 24, i % 24));
            r["machine"]["git_commit"] = Value::from(format!("{tag}{i:038x}"));
            // A run of its own: its own id (the template's is one run's).
            r["id"] = Value::from(format!("00000000-0000-7000-8000-{:04x}{i:08x}", u32::from(tag.as_bytes()[0])));
            r["scenarios"][0]["throughput"] = Value::from(*v);
            // The runs passed: they are what a history keeps.
            r["outcome"] = serde_json::json!({"status": "passed", "exit_code": 0, "reasons": []});
            r["scenarios"][0]["verdicts"] = Value::Array(Vec::new());
            let path = dir.join(format!("{tag}-{i:02}.json"));
            std::fs::write(&path, serde_json::to_string(&r).expect("json")).expect("write");
            path
        })
        .collect()
}

fn history(args: &[&str]) -> std::process::Output {
    let mut all = vec!["history"];
    all.extend_from_slice(args);
    loadgate(&all)
}

fn add(store: &str, files: &[PathBuf]) {
    let mut args = vec!["add", "--store", store, "--branch", "main"];
    let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    args.extend(names.iter().map(String::as_str));
    let done = history(&args);
    assert_eq!(done.status.code(), Some(0), "history add: {}", text(&done.stderr));
}

/// The change points of the throughput series, as `history show --format json` gives them.
fn change_points(store: &str) -> (Vec<f64>, Vec<Value>) {
    let done = history(&["show", "--store", store, "--spec", "memory", "--metric", "throughput", "--format", "json"]);
    assert_eq!(done.status.code(), Some(0), "history show: {}", text(&done.stderr));
    let all: Value = serde_json::from_str(&text(&done.stdout)).expect("json");
    let s = &all[0];
    assert_eq!(s["instance"], "get");
    let values = s["points"].as_array().expect("points").iter().map(|p| p["value"].as_f64().expect("value")).collect();
    (values, s["change_points"].as_array().expect("change points").clone())
}

/// The whole suite on one store.
fn suite(store: &str, noise_store: &str, big_store: &str, dir: &Path) {
    let (spec, template) = real_run(dir);
    let spec = spec.to_str().expect("utf-8");

    // A step of -5% at run 20 under 3% noise.
    let stepped = series(7, true);
    add(store, &write_runs(dir, &template, &stepped, "a"));
    let (values, points) = change_points(store);
    assert_eq!(values, stepped, "the store gives back the recorded values, oldest first");
    assert_eq!(points.len(), 1, "one change point: {points:?}");
    let at = points[0]["index"].as_u64().expect("index");
    assert!((18..=22).contains(&at), "found at run {at}, the step is at 20");
    assert_eq!(points[0]["regression"], true, "less throughput is a regression");
    let p = points[0]["p_value"].as_f64().expect("p");
    assert!(p < 0.001, "significant: p = {p}");
    otava_agrees(&stepped, at);

    // The drift and change-point checks on the newest run: worse by about 5%, more than 3%: FAIL, exit 1.
    let done = history(&["check", spec, "--store", store]);
    let out = text(&done.stdout);
    assert_eq!(done.status.code(), Some(1), "{out}{}", text(&done.stderr));
    assert!(out.contains("FAIL") && out.contains("drift(throughput)"), "{out}");
    assert!(out.contains("change_point(throughput)") && out.contains("regression"), "{out}");
    // The change point's run is named so a person can find it: its second, the end of its id, its commit.
    let shown = history(&["show", "--store", store, "--spec", "memory", "--metric", "throughput"]);
    let shown = text(&shown.stdout);
    let run = format!("(run {at:08x}, commit a000000)");
    assert!(shown.contains(&format!("change point at 2026-10-01 {at:02}:")), "{shown}");
    assert!(shown.contains(&run), "{run} in:\n{shown}");

    // 30 runs of the noise alone: no change point, the checks pass.
    let quiet = series(11, false);
    add(noise_store, &write_runs(dir, &template, &quiet, "b"));
    let (_, points) = change_points(noise_store);
    assert!(points.is_empty(), "no change point in pure noise: {points:?}");
    let done = history(&["check", spec, "--store", noise_store]);
    assert_eq!(done.status.code(), Some(0), "{}{}", text(&done.stdout), text(&done.stderr));

    // Export and import: the runs move to another store unchanged.
    let exported = dir.join("runs.jsonl");
    let done = history(&["export", "--store", store, "--out", exported.to_str().expect("utf-8")]);
    assert_eq!(done.status.code(), Some(0), "{}", text(&done.stderr));
    let lines = std::fs::read_to_string(&exported).expect("export").lines().count();
    assert_eq!(lines, 30, "the 30 recorded runs");
    let moved = dir.join("moved.db");
    let done = history(&["import", exported.to_str().expect("utf-8"), "--store", moved.to_str().expect("utf-8")]);
    assert_eq!(done.status.code(), Some(0), "{}", text(&done.stderr));
    let again = dir.join("again.jsonl");
    let done = history(&["export", "--store", moved.to_str().expect("utf-8"), "--out", again.to_str().expect("utf-8")]);
    assert_eq!(done.status.code(), Some(0));
    assert_eq!(std::fs::read(&exported).expect("a"), std::fs::read(&again).expect("b"), "round trip");

    // A real run judged against a history that lost half its throughput at run 20 (values around this machine's
    // own): its drift check fails like any SLO (exit 1, a JUnit failure, the Markdown, the series in
    // results.json), and the run is recorded. (A real run is not judged against the pure noise here: this
    // machine's own throughput, far from the synthetic values and noisier, would be an outlier there.)
    let t0 = template["scenarios"][0]["throughput"].as_f64().expect("throughput");
    let halved: Vec<f64> =
        series(13, false).iter().enumerate().map(|(i, v)| v / 10_000.0 * t0 * if i < 20 { 2.0 } else { 1.0 }).collect();
    add(big_store, &write_runs(dir, &template, &halved, "e"));
    let run_out = dir.join("judged");
    let done =
        loadgate(&["run", spec, "--history", big_store, "--branch", "main", "--out", run_out.to_str().expect("utf-8")]);
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(run_out.join("memory/results.json")).expect("results"))
            .expect("json");
    let verdicts = results["scenarios"][0]["verdicts"].as_array().expect("verdicts");
    let drift = verdicts.iter().find(|v| v["metric"] == "drift(throughput)").expect("a drift verdict");
    assert_eq!(drift["passed"], false, "{drift}");
    assert_eq!(done.status.code(), Some(1), "{}", text(&done.stderr));
    assert_eq!(results["history"][0]["points"].as_array().map(Vec::len), Some(31), "the series with this run last");
    assert_eq!(results["history"][0]["points"][30]["current"], true);
    let junit = std::fs::read_to_string(run_out.join("memory/junit.xml")).expect("junit");
    assert!(junit.contains("drift(throughput)") && junit.contains("<failure"), "{junit}");
    let md = std::fs::read_to_string(run_out.join("memory/report.md")).expect("report.md");
    assert!(md.contains("drift(throughput)"), "the Markdown reports the check");
    assert!(text(&done.stdout).contains("recorded in the history"), "{}", text(&done.stdout));
    let done = history(&["export", "--store", big_store]);
    assert_eq!(text(&done.stdout).lines().count(), 31, "the judged run was recorded");

    // The trend in Markdown and HTML, with its plot.
    let shown = dir.join("shown");
    let done = history(&["show", "--store", store, "--metric", "throughput", "--out", shown.to_str().expect("utf-8")]);
    assert_eq!(done.status.code(), Some(0), "{}", text(&done.stderr));
    let md = std::fs::read_to_string(shown.join("history.md")).expect("history.md");
    assert!(md.contains("**regression**") && md.contains("trend-memory-get-throughput.svg"), "{md}");
    let svg = std::fs::read_to_string(shown.join("trend-memory-get-throughput.svg")).expect("the trend plot");
    let doc = roxmltree::Document::parse(&svg).expect("well-formed SVG");
    assert!(doc.descendants().filter_map(|n| n.text()).any(|t| t.contains("regression")), "the change point is marked");
}

/// The same series through Apache Otava at the same settings (window 50, p 0.001): the same change point.
fn otava_agrees(series: &[f64], at: u64) {
    let Some(python) = std::env::var_os("LOADGATE_OTAVA_PYTHON").filter(|p| !p.is_empty()) else {
        eprintln!("SKIPPED: LOADGATE_OTAVA_PYTHON is not set: the series was not checked against Apache Otava");
        return;
    };
    let script = root().join("crates/history/tests/otava_compare.py");
    let input = serde_json::json!({"cases": [{"name": "step", "series": series, "window": 50, "max_pvalue": 0.001, "min_magnitude": 0.0}]});
    let mut child = std::process::Command::new(python)
        .arg(&script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run python");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin");
        stdin.write_all(input.to_string().as_bytes()).expect("write");
    }
    let done = child.wait_with_output().expect("python");
    assert!(done.status.success(), "otava: {}", text(&done.stderr));
    let out: Value = serde_json::from_slice(&done.stdout).expect("json");
    let theirs: Vec<u64> = out["cases"][0]["otava"]
        .as_array()
        .expect("points")
        .iter()
        .map(|p| p["index"].as_u64().expect("index"))
        .collect();
    assert_eq!(theirs, vec![at], "Apache Otava finds the same change point");
}

#[test]
fn a_sqlite_history_finds_the_step_fails_the_drift_and_passes_pure_noise() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = dir.path().join("history.db");
    let noise = dir.path().join("noise.db");
    let big = dir.path().join("big.db");
    suite(store.to_str().expect("utf-8"), noise.to_str().expect("utf-8"), big.to_str().expect("utf-8"), dir.path());
}

#[test]
fn a_postgresql_history_does_the_same() {
    let server = match postgres::PgServer::start() {
        Ok(s) => s,
        Err(why) => {
            eprintln!("SKIPPED: {why}");
            return;
        }
    };
    let store = server.create_database("history").expect("database");
    let noise = server.create_database("noise").expect("database");
    let big = server.create_database("big").expect("database");
    let dir = tempfile::tempdir().expect("tempdir");
    suite(&store, &noise, &big, dir.path());
}

/// Two `history add` at once (parallel CI jobs) lose nothing, on both stores.
#[test]
fn concurrent_adds_lose_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_, template) = real_run(dir.path());
    let a = write_runs(dir.path(), &template, &series(3, false), "c");
    let b = write_runs(dir.path(), &template, &series(5, false), "d");
    let server = postgres::PgServer::start().map_err(|why| eprintln!("SKIPPED (PostgreSQL): {why}")).ok();
    let mut stores = vec![dir.path().join("concurrent.db").display().to_string()];
    if let Some(s) = &server {
        stores.push(s.create_database("concurrent").expect("database"));
    }
    for store in &stores {
        let spawn = |files: &[PathBuf]| {
            let mut cmd = command(&["history", "add", "--store", store, "--branch", "main"]);
            cmd.args(files);
            cmd.stdout(Stdio::null()).stderr(Stdio::piped()).spawn().expect("spawn")
        };
        let (one, two) = (spawn(&a), spawn(&b));
        for child in [one, two] {
            let done = child.wait_with_output().expect("wait");
            assert!(done.status.success(), "{}", text(&done.stderr));
        }
        let exported = history(&["export", "--store", store]);
        assert_eq!(text(&exported.stdout).lines().count(), 60, "{store}: both writers' 30 runs");
    }
}

#[test]
fn hostile_stores_and_files_are_refused_with_the_reason() {
    let dir = tempfile::tempdir().expect("tempdir");
    let garbage = dir.path().join("garbage.db");
    std::fs::write(&garbage, b"this is not a database, it is a text file of some length ..................")
        .expect("write");
    let done = history(&["show", "--store", garbage.to_str().expect("utf-8")]);
    assert_eq!(done.status.code(), Some(3), "{}", text(&done.stderr));
    assert!(text(&done.stderr).contains("garbage.db"), "{}", text(&done.stderr));
    // A bad line in an import names its line and imports nothing.
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(&bad, "{\"not\": \"a record\"}\n").expect("write");
    let store = dir.path().join("s.db");
    let done = history(&["import", bad.to_str().expect("utf-8"), "--store", store.to_str().expect("utf-8")]);
    assert_eq!(done.status.code(), Some(2), "{}", text(&done.stderr));
    assert!(text(&done.stderr).contains("line 1"), "{}", text(&done.stderr));
    // A password in a PostgreSQL URL is never printed, whatever fails.
    let done = history(&["show", "--store", "postgres://me:hunter2@127.0.0.1:1/db"]);
    assert_eq!(done.status.code(), Some(3));
    assert!(!text(&done.stderr).contains("hunter2"), "{}", text(&done.stderr));
    // A spec whose history section is wrong is refused by validate, located.
    let spec = dir.path().join("bad.yaml");
    std::fs::write(&spec, "version: 1\nname: x\ntarget: { builtin: plaintext }\nhistory:\n  drift: { p99x: 10% }\nscenarios:\n  a:\n    request: { path: / }\n    load: { closed: { connections: 1, duration: 1s } }\n").expect("write");
    let done = loadgate(&["validate", spec.to_str().expect("utf-8")]);
    assert_eq!(done.status.code(), Some(2));
    assert!(text(&done.stderr).contains("bad.yaml:5:"), "{}", text(&done.stderr));
}

/// A spec without history checks: a short closed load on the built-in target.
const PLAIN: &str = "version: 1\nname: twins\ntarget: { builtin: plaintext }\n\
scenarios:\n  get:\n    request: { path: / }\n    load: { closed: { connections: 1, duration: 200ms } }\n";

/// The runs a store holds, as `history export` gives them (one JSON record per line).
fn exported(store: &str) -> Vec<Value> {
    let done = history(&["export", "--store", store]);
    assert_eq!(done.status.code(), Some(0), "{}", text(&done.stderr));
    text(&done.stdout).lines().map(|l| serde_json::from_str(l).expect("a record")).collect()
}

/// Issue 45, item 1: runs of one spec on one host started together (an `xargs -P`, a CI matrix) are each kept,
/// each under the id its results.json carries; adding their files again adds nothing; a merge of shards is one
/// run however often it is merged. On SQLite and on PostgreSQL.
#[test]
fn runs_started_together_are_each_kept_and_adding_them_again_adds_none() {
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = dir.path().join("twins.yaml");
    std::fs::write(&spec, PLAIN).expect("write the spec");
    let spec = spec.to_str().expect("utf-8");
    let server = postgres::PgServer::start().map_err(|why| eprintln!("SKIPPED (PostgreSQL): {why}")).ok();
    let mut stores = vec![dir.path().join("twins.db").display().to_string()];
    if let Some(s) = &server {
        stores.push(s.create_database("twins").expect("database"));
    }
    const N: usize = 4;
    for (k, store) in stores.iter().enumerate() {
        let outs: Vec<PathBuf> = (0..N).map(|i| dir.path().join(format!("out-{k}-{i}"))).collect();
        let children: Vec<_> = outs
            .iter()
            .map(|out| {
                command(&[
                    "run",
                    spec,
                    "--history",
                    store,
                    "--branch",
                    "main",
                    "--out",
                    out.to_str().expect("utf-8"),
                    "-q",
                ])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn")
            })
            .collect();
        for child in children {
            let done = child.wait_with_output().expect("wait");
            assert_eq!(done.status.code(), Some(0), "{}{}", text(&done.stdout), text(&done.stderr));
        }
        let files: Vec<PathBuf> = outs.iter().map(|o| o.join("twins/results.json")).collect();
        let ids: Vec<String> = files
            .iter()
            .map(|f| {
                let r: Value = serde_json::from_str(&std::fs::read_to_string(f).expect("results")).expect("json");
                let id = r["id"].as_str().expect("results.json carries the run's id").to_owned();
                assert_eq!(id.len(), 36, "a UUID: {id}");
                assert_eq!(&id[14..15], "7", "a UUIDv7: {id}");
                id
            })
            .collect();
        let runs = exported(store);
        assert_eq!(runs.len(), N, "{store}: every run kept");
        let mut stored: Vec<String> = runs.iter().map(|r| r["run_id"].as_str().expect("id").to_owned()).collect();
        let mut expected = ids.clone();
        stored.sort();
        expected.sort();
        assert_eq!(stored, expected, "each run under its results.json's id");

        // `history add` of the same files: each found there, none added.
        let mut args = vec!["add", "--store", store.as_str(), "--branch", "main"];
        let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
        args.extend(names.iter().map(String::as_str));
        let done = history(&args);
        assert_eq!(done.status.code(), Some(0), "{}", text(&done.stderr));
        assert_eq!(
            text(&done.stdout).matches("already there").count() + text(&done.stderr).matches("already there").count(),
            N
        );
        assert_eq!(exported(store).len(), N, "{store}: still {N}");

        // Copies of one file that differ only in their id are runs of their own (same plan, second and host);
        // copies without an id (a file of an older loadgate) keep the derived identity: one run.
        let template: Value = serde_json::from_str(&std::fs::read_to_string(&files[0]).expect("r")).expect("json");
        let mut copies = Vec::new();
        for (i, id) in
            [Some("0193a1b2-c3d4-7e5f-8a6b-000000000001"), Some("0193a1b2-c3d4-7e5f-8a6b-000000000002"), None, None]
                .iter()
                .enumerate()
        {
            let mut r = template.clone();
            match id {
                Some(id) => r["id"] = Value::from(*id),
                None => {
                    r.as_object_mut().expect("object").remove("id");
                }
            }
            let path = dir.path().join(format!("copy-{k}-{i}.json"));
            std::fs::write(&path, serde_json::to_string(&r).expect("json")).expect("write");
            copies.push(path.display().to_string());
        }
        let mut args = vec!["add", "--store", store.as_str(), "--branch", "main"];
        args.extend(copies.iter().map(String::as_str));
        let done = history(&args);
        assert_eq!(done.status.code(), Some(0), "{}", text(&done.stderr));
        assert_eq!(exported(store).len(), N + 3, "{store}: two ids, and one run for the two files without");
    }

    // A run on two shards is recorded once; merging its shards again (in either order) finds the same run.
    let store = &stores[0];
    let before = exported(store).len();
    let out = dir.path().join("sharded");
    let done = loadgate(&[
        "run",
        spec,
        "--shards",
        "2",
        "--history",
        store,
        "--branch",
        "main",
        "--out",
        out.to_str().expect("utf-8"),
    ]);
    assert_eq!(done.status.code(), Some(0), "{}{}", text(&done.stdout), text(&done.stderr));
    assert_eq!(exported(store).len(), before + 1, "the merge is recorded, not its shards");
    let merged: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("twins/results.json")).expect("r")).expect("json");
    let shard = |i: u32| out.join(format!("twins/shard-{i}-of-2.json")).display().to_string();
    for (n, order) in [[shard(2), shard(1)], [shard(1), shard(2)]].iter().enumerate() {
        let again = dir.path().join(format!("again-{n}"));
        let done = loadgate(&[
            "merge",
            &order[0],
            &order[1],
            "--history",
            store,
            "--branch",
            "main",
            "--out",
            again.to_str().expect("utf-8"),
        ]);
        assert_eq!(done.status.code(), Some(0), "{}{}", text(&done.stdout), text(&done.stderr));
        let remerged: Value =
            serde_json::from_str(&std::fs::read_to_string(again.join("twins/results.json")).expect("r")).expect("json");
        assert_eq!(remerged["id"], merged["id"], "the merge's id is its shards' ids'");
        assert_eq!(exported(store).len(), before + 1, "merged again: the same run");
    }
}

/// A command of the binary that knows no branch: no CI variable, no `LOADGATE_BRANCH`, run outside git.
fn branchless(args: &[&str], dir: &Path) -> std::process::Output {
    let mut cmd = command(args);
    for var in ["GITHUB_HEAD_REF", "GITHUB_REF_NAME", "CI_COMMIT_REF_NAME", "LOADGATE_BRANCH"] {
        cmd.env_remove(var);
    }
    cmd.current_dir(dir).env("GIT_CEILING_DIRECTORIES", dir.parent().unwrap_or(dir)).output().expect("run loadgate")
}

/// Issue 45, item 3: twelve runs whose latency creeps 6% a run, made with `--history` outside git and CI and
/// without `--branch`, are judged on the series they are recorded in (the runs on no branch), not on `main`'s:
/// too few runs first (INCONCLUSIVE, saying so of no branch), then the drift check FAILs. A run on a branch
/// that lacks history says how many runs sit on no branch and how to name one.
#[test]
fn a_creep_recorded_outside_git_fails_its_drift_check_on_its_own_series() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = dir.path().join("creep.db").display().to_string();
    let mut codes = Vec::new();
    let mut last = Value::Null;
    for i in 0..12 {
        let delay_us = (2000.0 * 1.06f64.powi(i)).round() as u64;
        let spec = dir.path().join(format!("creep-{i}.yaml"));
        std::fs::write(
            &spec,
            format!(
                "version: 1\nname: creep\ntarget: {{ builtin: {{ kind: delay, delay: {delay_us}us }} }}\n\
                 history:\n  drift: {{ p50: 10% }}\n  detection: {{ p_value: 0.01 }}\n\
                 scenarios:\n  get:\n    request: {{ path: / }}\n    load: {{ closed: {{ connections: 2, duration: 300ms }} }}\n"
            ),
        )
        .expect("write the spec");
        let out = dir.path().join(format!("out-{i}"));
        let done = branchless(
            &["run", spec.to_str().expect("utf-8"), "--history", &store, "--out", out.to_str().expect("utf-8"), "-q"],
            dir.path(),
        );
        let results: Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("creep/results.json")).expect("results"))
                .expect("json");
        let verdict = results["scenarios"][0]["verdicts"]
            .as_array()
            .expect("verdicts")
            .iter()
            .find(|v| v["metric"] == "drift(p50)")
            .expect("a drift verdict")
            .clone();
        let note = verdict["note"].as_str().unwrap_or_default().to_owned();
        assert!(!note.contains("main"), "run {}: the series is not main's: {note}", i + 1);
        if i < 5 {
            assert_eq!(done.status.code(), Some(5), "run {}: {note}", i + 1);
            assert!(
                note.contains(&format!("not enough history: {} run", i + 1)) && note.contains("on no branch"),
                "{note}"
            );
        }
        codes.push(done.status.code());
        last = verdict;
    }
    // The series of the runs on no branch holds all twelve: from the sixth run on the checks decide (no run is
    // INCONCLUSIVE for want of history), and the creep (6% a run, 90% over twelve) fails the drift.
    assert!(codes[5..].iter().all(|c| *c != Some(5)), "exit codes of the twelve runs: {codes:?}");
    assert_eq!(codes.last(), Some(&Some(1)), "exit codes of the twelve runs: {codes:?}; last verdict {last}");
    assert_eq!(last["passed"], false, "{last}");
    let runs = exported(&store);
    assert_eq!(runs.len(), 12);
    assert!(runs.iter().all(|r| r["branch"].is_null()), "recorded on no branch");

    // A run on `main` has one run there: it cannot tell, and says where the others are and how to name theirs.
    let spec = dir.path().join("creep-0.yaml");
    let out = dir.path().join("on-main");
    let done = branchless(
        &[
            "run",
            spec.to_str().expect("utf-8"),
            "--history",
            &store,
            "--branch",
            "main",
            "--out",
            out.to_str().expect("utf-8"),
        ],
        dir.path(),
    );
    assert_eq!(done.status.code(), Some(5), "{}", text(&done.stderr));
    let said = text(&done.stdout);
    assert!(said.contains("12 runs of `creep` sit on no branch") && said.contains("--branch main"), "{said}");
}
