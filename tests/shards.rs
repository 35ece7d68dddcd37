//! One run on several generators, through the real binary against a counting server on loopback:
//! `run --shards 2` (every request counted once, `seq()` values unique across shards, random values those of one
//! process), a shard killed mid-run,
//! a foreign shard, a late shard, and shard results read back from framed logs.

use std::collections::BTreeMap;
use std::io::{BufReader, Write as _};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

mod common;
use common::{command, read_request, text};

/// An HTTP/1.1 server on a free loopback port that answers `ok` and counts every request by its path.
struct Counter {
    port: u16,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Counter {
    fn start() -> Counter {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = Arc::clone(&seen);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let record = Arc::clone(&record);
                std::thread::spawn(move || {
                    let mut writer = stream.try_clone().expect("clone");
                    let mut reader = BufReader::new(stream);
                    while let Some((line, _)) = read_request(&mut reader) {
                        let path = line.split_whitespace().nth(1).unwrap_or("").to_owned();
                        record.lock().unwrap().push(path);
                        if writer.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok").is_err() {
                            break;
                        }
                    }
                });
            }
        });
        Counter { port, seen }
    }

    fn paths(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

/// A spec against `port` whose requests carry `seq()` values, with the load `load` (YAML flow mapping).
fn spec(dir: &Path, name: &str, port: u16, load: &str) -> PathBuf {
    let path = dir.join(format!("{name}.yaml"));
    let yaml = format!(
        "version: 1\nname: {name}\nhardware: {{ generator: {{ threads: 2 }} }}\ntarget:\n  base_url: http://127.0.0.1:{port}\n\
         scenarios:\n  s:\n    request: {{ path: \"/x?id={{{{ seq() }}}}\" }}\n    load: {load}\n    slo: [errors == 0]\n"
    );
    std::fs::write(&path, yaml).expect("write spec");
    path
}

fn loadgate(args: &[&str]) -> Output {
    common::loadgate(args)
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
        .expect("JSON")
}

fn describe(o: &Output) -> String {
    format!("exit {:?}\nstdout:\n{}\nstderr:\n{}", o.status.code(), text(&o.stdout), text(&o.stderr))
}

#[test]
fn two_local_shards_send_every_request_once_with_unique_seq_values() {
    let server = Counter::start();
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(dir.path(), "counted", server.port, "{ closed: { connections: 4, requests: 600 } }");
    let out = dir.path().join("out");
    let o = loadgate(&["run", spec.to_str().unwrap(), "--shards", "2", "--out", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));

    // Every request reached the server once, and the merged count is the server's.
    let paths = server.paths();
    assert_eq!(paths.len(), 600, "the server counted {}", paths.len());
    let mut ids: Vec<u64> =
        paths.iter().map(|p| p.trim_start_matches("/x?id=").parse().expect("a seq value")).collect();
    ids.sort_unstable();
    assert_eq!(ids, (0..600).collect::<Vec<_>>(), "seq() values are unique across the shards and cover the plan");
    let merged = json(&out.join("counted/results.json"));
    assert_eq!(merged["scenarios"][0]["requests"]["completed"], 600);
    let shards = merged["shards"].as_array().expect("the merged results list the shards");
    assert_eq!(shards.len(), 2);
    assert!(shards.iter().all(|s| s["late"] == false && s["start_skew_ms"].is_number()), "{shards:?}");
    // Each shard left its own result, and merging them again gives the same numbers.
    let again = dir.path().join("again");
    let files: Vec<String> =
        (1..=2).map(|i| out.join(format!("counted/shard-{i}-of-2.json")).display().to_string()).collect();
    let o = loadgate(&["merge", &files[0], &files[1], "--out", again.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let remerged = json(&again.join("counted/results.json"));
    assert_eq!(remerged["scenarios"][0]["histograms"], merged["scenarios"][0]["histograms"]);
    let md = std::fs::read_to_string(again.join("counted/report.md")).unwrap();
    assert!(md.contains("2 of 2 shards of run"), "report.md states the shards:\n{md}");
    // `--out -`: results.json on stdout, the same numbers, no files.
    let o = loadgate(&["merge", &files[0], &files[1], "--out", "-"]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let printed: serde_json::Value = serde_json::from_slice(&o.stdout).expect("results.json on stdout");
    assert_eq!(printed["scenarios"][0]["histograms"], merged["scenarios"][0]["histograms"]);
    assert!(!Path::new("-").exists(), "`--out -` writes no directory named `-`");
    // `merge -` reads from standard input (`kubectl logs ... | loadgate merge -`), beside files.
    let logs = std::fs::read_to_string(&files[0]).unwrap();
    let mut child = common::command(&["merge", "-", &files[1], "--out", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), logs.as_bytes()).unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let piped: serde_json::Value = serde_json::from_slice(&o.stdout).expect("results.json on stdout");
    assert_eq!(piped["scenarios"][0]["histograms"], merged["scenarios"][0]["histograms"]);
}

/// A run from flags (`run --url URL --shards 2`) has no spec file: its shards run the spec the flags made, from a
/// private file removed with the run, named `(command line)` in the results as the run's own, and its credential
/// header reaches no artifact.
#[test]
fn a_run_from_flags_runs_in_local_shards() {
    let server = Counter::start();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let url = format!("http://127.0.0.1:{}/flags", server.port);
    let o = loadgate(&[
        "run",
        "--url",
        &url,
        "-c",
        "4",
        "-n",
        "400",
        "--shards",
        "2",
        "-H",
        "Authorization: Bearer flag-token-77",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    assert_eq!(server.paths().len(), 400, "every request sent once across the two shards");
    let merged = json(&out.join("adhoc/results.json"));
    assert_eq!(merged["scenarios"][0]["requests"]["completed"], 400);
    assert_eq!(merged["shards"].as_array().map(Vec::len), Some(2));
    assert_eq!(merged["spec"]["file"], "(command line)", "not the shards' temporary spec file");
    assert!(merged["spec"].get("source").is_none_or(serde_json::Value::is_null), "a flag run embeds no spec");
    for entry in common::files_under(&out) {
        let bytes = std::fs::read(&entry).unwrap();
        assert!(!String::from_utf8_lossy(&bytes).contains("flag-token-77"), "{} holds the credential", entry.display());
    }
    assert!(!text(&o.stderr).contains("flag-token-77"), "{}", describe(&o));
}

/// The step summary's sections (`## ...` headings) and their text.
fn step_summary(path: &Path) -> (usize, String) {
    let md = std::fs::read_to_string(path).unwrap_or_default();
    (md.lines().filter(|l| l.starts_with("## ")).count(), md)
}

/// Under GitHub Actions (`GITHUB_STEP_SUMMARY` set), a run of local shards and a merge of shard results each
/// write one section of the job summary: the merged run's (200 requests), never a shard's slice (100).
#[test]
fn on_github_actions_shards_and_their_merge_each_write_one_step_summary_the_merged_runs() {
    let server = Counter::start();
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(dir.path(), "summed", server.port, "{ closed: { connections: 2, requests: 200 } }");
    let out = dir.path().join("out");
    let summary = dir.path().join("run-summary.md");
    let o = command(&["run", spec.to_str().unwrap(), "--shards", "2", "--out", out.to_str().unwrap()])
        .env("GITHUB_STEP_SUMMARY", &summary)
        .output()
        .expect("run loadgate");
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let merged = json(&out.join("summed/results.json"));
    assert_eq!(merged["scenarios"][0]["requests"]["completed"], 200);
    let (sections, md) = step_summary(&summary);
    assert_eq!(sections, 1, "one section, the merged run's:\n{md}");
    assert!(md.contains("summed") && md.contains("| 200 |") && !md.contains("| 100 |"), "the merged totals:\n{md}");
    assert!(md.contains("2 of 2 shards of run"), "the merged run's section:\n{md}");
    // `loadgate merge` of the shard results: one section too, the same totals.
    let files: Vec<String> =
        (1..=2).map(|i| out.join(format!("summed/shard-{i}-of-2.json")).display().to_string()).collect();
    let merge_summary = dir.path().join("merge-summary.md");
    let again = dir.path().join("again");
    let o = command(&["merge", &files[0], &files[1], "--out", again.to_str().unwrap()])
        .env("GITHUB_STEP_SUMMARY", &merge_summary)
        .output()
        .expect("run loadgate");
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let (sections, merged_md) = step_summary(&merge_summary);
    assert_eq!(sections, 1, "one section, the merged run's:\n{merged_md}");
    assert!(merged_md.contains("| 200 |") && !merged_md.contains("| 100 |"), "the merged totals:\n{merged_md}");
}

/// With repetitions, round r of the merge is both shards' round r: the statistics over repetitions are judged
/// once, on the merged rounds (six samples, not twelve, and not one shard's six).
#[test]
fn repetitions_are_merged_round_by_round_and_judged_once() {
    let server = Counter::start();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rounds.yaml");
    let yaml = format!(
        "version: 1\nname: rounds\nhardware: {{ generator: {{ threads: 2 }} }}\ntarget:\n  base_url: http://127.0.0.1:{}\nscenarios:\n  s:\n    request: {{ path: /x }}\n    load: {{ closed: {{ connections: 4, requests: 200 }} }}\n    slo: [p99 < 5s, errors == 0]\n",
        server.port
    );
    std::fs::write(&path, yaml).unwrap();
    let out = dir.path().join("out");
    let o =
        loadgate(&["run", path.to_str().unwrap(), "--shards", "2", "--repeat", "6", "--out", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    assert_eq!(server.paths().len(), 1200, "6 rounds of 200 requests, each sent once");
    let merged = json(&out.join("rounds/results.json"));
    let s = &merged["scenarios"][0];
    let reps = s["repetitions"].as_array().expect("the merge lists its rounds");
    assert_eq!(reps.len(), 6, "{reps:#?}");
    let shard_reps: Vec<serde_json::Value> = (1..=2)
        .map(|i| json(&out.join(format!("rounds/shard-{i}-of-2.json")))["scenarios"][0]["repetitions"].clone())
        .collect();
    for (k, rep) in reps.iter().enumerate() {
        let sum: u64 = shard_reps.iter().map(|r| r[k]["requests"]["completed"].as_u64().unwrap()).sum();
        assert_eq!(rep["requests"]["completed"].as_u64(), Some(sum), "round {} is both shards' round", k + 1);
    }
    assert_eq!(reps.iter().map(|r| r["requests"]["completed"].as_u64().unwrap()).sum::<u64>(), 1200);
    let p99 = s["verdicts"].as_array().unwrap().iter().find(|v| v["slo"] == "p99 < 5s").expect("the p99 verdict");
    assert_eq!(p99["statistics"]["repetitions"], 6, "judged over the 6 merged rounds: {p99:#}");
}

#[test]
fn an_ab_run_in_shards_merges_both_sides_round_by_round_and_fails_a_slower_candidate() {
    // In turn (ABBA) and in duet rounds alike: before, the merge kept one shard's baseline side and judged the
    // relative SLO against nothing, so a 40% slower candidate passed.
    for order in ["abba", "duet"] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ab.yaml");
        let yaml = format!(
            "version: 1\nname: ab\nhardware: {{ generator: {{ threads: 2 }} }}\n\
             target: {{ builtin: {{ kind: delay, delay: 10ms }} }}\ncandidate: {{ builtin: {{ kind: delay, delay: 14ms }} }}\n\
             gating: {{ repeat: 6, order: {order} }}\nscenarios:\n  s:\n    request: {{ path: / }}\n    \
             load: {{ open: {{ rate: 200/s, connections: 8, duration: 500ms }} }}\n    slo: [p50 <= baseline * 1.10]\n"
        );
        std::fs::write(&path, yaml).unwrap();
        let out = dir.path().join("out");
        let o = loadgate(&["run", path.to_str().unwrap(), "--shards", "2", "--out", out.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(1), "{order}: {}", describe(&o));
        let merged = json(&out.join("ab/results.json"));
        let b = &merged["scenarios"][0];
        let a = &b["ab_baseline"];
        assert_eq!(b["verdicts"][0]["statistics"]["status"], "fail", "{order}: {b:#}");
        assert_eq!(b["verdicts"][0]["statistics"]["repetitions"], 6, "{order}");
        for side in [a, b] {
            // Both shards' halves of each round: the whole 100 requests of a 500 ms round at 200/s.
            let reps = side["repetitions"].as_array().expect("rounds");
            assert_eq!(reps.len(), 6, "{order}");
            let sent: u64 = reps.iter().map(|r| r["requests"]["sent"].as_u64().unwrap()).sum();
            assert_eq!(sent, 600, "{order}: every round of both shards");
        }
    }
}

#[test]
fn two_local_shards_send_the_random_values_of_one_process() {
    // The same spec (its seed comes from its name) once as one process and once as `--shards 2`: every request
    // draws its values from (seed, its global index), so the two runs send the same multiset of paths.
    let dir = tempfile::tempdir().unwrap();
    let mut runs = Vec::new();
    for shards in [None, Some("2")] {
        let server = Counter::start();
        let path = dir.path().join(format!("drawn-{}.yaml", runs.len()));
        let yaml = format!(
            "version: 1\nname: drawn\nhardware: {{ generator: {{ threads: 2 }} }}\ntarget:\n  base_url: http://127.0.0.1:{}\n\
             scenarios:\n  s:\n    request: {{ path: \"/x?r={{{{ random_int(0, 1000000000) }}}}&u={{{{ uuid() }}}}\" }}\n    \
             load: {{ closed: {{ connections: 4, requests: 400 }} }}\n",
            server.port
        );
        std::fs::write(&path, yaml).unwrap();
        let out = dir.path().join(format!("out-{}", runs.len()));
        let mut args = vec!["run", path.to_str().unwrap(), "--out", out.to_str().unwrap()];
        if let Some(n) = shards {
            args.extend(["--shards", n]);
        }
        let o = loadgate(&args);
        assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
        let mut paths = server.paths();
        paths.sort();
        assert_eq!(paths.len(), 400);
        runs.push(paths);
    }
    let mut distinct = runs[0].clone();
    distinct.dedup();
    assert!(distinct.len() > 390, "the values vary from request to request: {} distinct", distinct.len());
    assert!(runs[0] == runs[1], "the shards' random values are the one-process run's");
}

#[test]
fn sweep_slos_are_judged_once_on_the_merge() {
    // A matrix of two cells with a sweep SLO that always holds: the merged run carries its verdict, judged on
    // the merged cells, whether the shards ran with `--shards 2` or are merged with `loadgate merge`.
    let server = Counter::start();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("swept.yaml");
    let yaml = format!(
        "version: 1\nname: swept\nhardware: {{ generator: {{ threads: 2 }} }}\ntarget:\n  base_url: http://127.0.0.1:{}\n\
         scenarios:\n  s:\n    request: {{ path: /x }}\n    matrix: {{ connections: [2, 4] }}\n    \
         load: {{ closed: {{ connections: \"{{{{ connections }}}}\", requests: 200 }} }}\n    \
         sweep: {{ slo: [\"p99@largest <= 1000000 * p99@smallest\"] }}\n",
        server.port
    );
    std::fs::write(&path, yaml).unwrap();
    let out = dir.path().join("out");
    let o = loadgate(&["run", path.to_str().unwrap(), "--shards", "2", "--out", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let merged = json(&out.join("swept/results.json"));
    let verdicts = merged["sweeps"][0]["verdicts"].as_array().expect("the merge judged the sweep SLO");
    assert_eq!((verdicts.len(), &verdicts[0]["passed"]), (1, &serde_json::Value::Bool(true)), "{verdicts:?}");
    let files: Vec<String> =
        (1..=2).map(|i| out.join(format!("swept/shard-{i}-of-2.json")).display().to_string()).collect();
    let again = dir.path().join("again");
    let o = loadgate(&["merge", &files[0], &files[1], "--out", again.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let remerged = json(&again.join("swept/results.json"));
    assert_eq!(remerged["sweeps"], merged["sweeps"], "`loadgate merge` rebuilds the plan and judges the same");
}

#[test]
fn local_shards_run_on_disjoint_parts_of_the_pinned_cpus() {
    if std::thread::available_parallelism().map_or(0, |n| n.get()) < 2 {
        eprintln!("skipped: this process may use fewer than 2 CPUs");
        return;
    }
    let server = Counter::start();
    let dir = tempfile::tempdir().unwrap();
    for (cpus, shared) in [("0-1", false), ("0", true)] {
        let path = dir.path().join("pinned.yaml");
        let yaml = format!(
            "version: 1\nname: pinned\nhardware: {{ generator: {{ cpus: \"{cpus}\", threads: 2 }} }}\n\
             target:\n  base_url: http://127.0.0.1:{}\n\
             scenarios:\n  s:\n    request: {{ path: /x }}\n    load: {{ closed: {{ connections: 4, requests: 100 }} }}\n",
            server.port
        );
        std::fs::write(&path, yaml).unwrap();
        let out = dir.path().join(format!("out-{cpus}"));
        let o = loadgate(&["run", path.to_str().unwrap(), "--shards", "2", "--out", out.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
        let merged = json(&out.join("pinned/results.json"));
        let parts: Vec<&str> =
            merged["shards"].as_array().unwrap().iter().map(|s| s["cpus"].as_str().unwrap()).collect();
        let warned = text(&o.stderr).contains("the shards share CPUs");
        if shared {
            assert_eq!(parts, ["0", "0"], "{}", describe(&o));
            assert!(warned, "{}", describe(&o));
        } else {
            assert_eq!(parts, ["0", "1"], "each shard on its own CPU:\n{}", describe(&o));
            assert!(!warned, "{}", describe(&o));
        }
    }
}

#[test]
fn relative_slos_are_judged_on_the_merge_against_the_baseline() {
    let server = Counter::start();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("relative.yaml");
    let yaml = format!(
        "version: 1\nname: relative\nhardware: {{ generator: {{ threads: 2 }} }}\ntarget:\n  base_url: http://127.0.0.1:{}\n\
         scenarios:\n  s:\n    request: {{ path: /x }}\n    load: {{ closed: {{ connections: 4, requests: 200 }} }}\n    \
         slo: [\"p99 <= baseline * 1000\"]\n",
        server.port
    );
    std::fs::write(&path, yaml).unwrap();
    let baseline = dir.path().join("baseline.json");
    let first = dir.path().join("first");
    let o = loadgate(&[
        "run",
        path.to_str().unwrap(),
        "--out",
        first.to_str().unwrap(),
        "--save-baseline",
        baseline.to_str().unwrap(),
    ]);
    assert!(baseline.exists(), "{}", describe(&o));
    let out = dir.path().join("out");
    let b = baseline.to_str().unwrap();
    let o =
        loadgate(&["run", path.to_str().unwrap(), "--shards", "2", "--baseline", b, "--out", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let evaluated = |r: &serde_json::Value| {
        let v = &r["scenarios"][0]["verdicts"][0];
        assert_eq!(v["slo"], "p99 <= baseline * 1000", "{v}");
        v["passed"] == true && !v["note"].as_str().unwrap_or("").contains("not evaluated")
    };
    assert!(evaluated(&json(&out.join("relative/results.json"))), "the merge judged the relative SLO");
    let files: Vec<String> =
        (1..=2).map(|i| out.join(format!("relative/shard-{i}-of-2.json")).display().to_string()).collect();
    let o = loadgate(&["merge", &files[0], &files[1], "--baseline", b, "--out", "-"]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let printed: serde_json::Value = serde_json::from_slice(&o.stdout).expect("results.json on stdout");
    assert!(evaluated(&printed), "`loadgate merge --baseline` judged the relative SLO: {printed}");
}

/// Starts shard `slice` of `spec` at `start_at`, its shard result under `out`.
fn shard(spec: &Path, slice: &str, run_id: &str, start_at: &str, out: &Path) -> Child {
    command(&[
        "run",
        spec.to_str().unwrap(),
        "--shard",
        slice,
        "--run-id",
        run_id,
        "--start-at",
        start_at,
        "--out",
        out.to_str().unwrap(),
    ])
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .expect("start a shard")
}

/// Now plus `secs` (negative: in the past) as RFC 3339 with milliseconds.
fn at(secs: f64) -> String {
    let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs_f64() + secs;
    // Civil time from the epoch, as the shards read it.
    let days = (now / 86_400.0).floor() as i64;
    let rem = now - days as f64 * 86_400.0;
    let (h, m, s) = ((rem / 3600.0) as i64, ((rem % 3600.0) / 60.0) as i64, rem % 60.0);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let mo = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(mo <= 2);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{m:02}:{s:06.3}Z")
}

#[test]
fn a_shard_killed_mid_run_gives_an_invalid_merged_run() {
    let server = Counter::start();
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(dir.path(), "killed", server.port, "{ open: { rate: 200/s, connections: 4, duration: 3s } }");
    let out = dir.path().join("out");
    let start = at(1.0);
    let first = shard(&spec, "1/2", "k", &start, &out);
    let mut second = shard(&spec, "2/2", "k", &start, &out);
    std::thread::sleep(Duration::from_millis(2500));
    second.kill().expect("kill shard 2");
    let _ = second.wait();
    let o = first.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let file = out.join("killed/shard-1-of-2.json");
    assert!(!out.join("killed/shard-2-of-2.json").exists(), "the killed shard wrote no result");
    let merged = dir.path().join("merged");
    let o = loadgate(&["merge", file.to_str().unwrap(), "--out", merged.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(4), "a missing shard is an invalid run:\n{}", describe(&o));
    let results = json(&merged.join("killed/results.json"));
    let reasons = results["outcome"]["reasons"].to_string();
    assert!(reasons.contains("shard 2/2 of run `k` is missing"), "{reasons}");
}

#[test]
fn a_foreign_shard_is_refused_and_frames_are_read_back_from_a_log() {
    let server = Counter::start();
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(dir.path(), "foreign", server.port, "{ closed: { connections: 2, requests: 100 } }");
    let out = dir.path().join("out");
    let run = |slice: &str, run_id: &str, to: &str| {
        loadgate(&["run", spec.to_str().unwrap(), "--shard", slice, "--run-id", run_id, "--out", to])
    };
    let o = run("1/2", "a", out.to_str().unwrap());
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    // Shard 2 of the same run and shard 2 of another run, framed on stdout as `kubectl logs` would keep them.
    let mine = run("2/2", "a", "-");
    assert_eq!(mine.status.code(), Some(0), "{}", describe(&mine));
    let theirs = run("2/2", "b", "-");
    let log = dir.path().join("pods.log");
    std::fs::write(&log, format!("{}some other line\n", text(&mine.stdout))).unwrap();
    let other_log = dir.path().join("other.log");
    std::fs::write(&other_log, text(&theirs.stdout)).unwrap();
    // One stream when stderr is not a terminal (a pod's log): the summaries, then the frame, all on stdout, so a
    // collector reading stdout and stderr apart cannot cut a frame line with a stderr line.
    let stdout = text(&mine.stdout);
    assert!(text(&mine.stderr).is_empty(), "{}", describe(&mine));
    let begin = stdout.find("\n-----BEGIN LOADGATE SHARD 2/2-----\n").expect("a frame on its own line");
    assert!(stdout[..begin].contains("Requests/sec"), "the summary comes before the frame: {}", describe(&mine));
    let end = stdout.find("-----END LOADGATE SHARD 2/2-----\n").expect("the frame's END line");
    assert!(stdout[begin..end].lines().all(|l| l.len() <= 76 || l.starts_with("-----")));
    assert!(stdout[..begin].contains("passed (exit 0)"), "the outcome line, then the frame: {}", describe(&mine));

    let first = out.join("foreign/shard-1-of-2.json");
    let merged = dir.path().join("merged");
    let o = loadgate(&["merge", first.to_str().unwrap(), log.to_str().unwrap(), "--out", merged.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    assert_eq!(json(&merged.join("foreign/results.json"))["scenarios"][0]["requests"]["completed"], 100);

    let o =
        loadgate(&["merge", first.to_str().unwrap(), other_log.to_str().unwrap(), "--out", merged.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(4), "a foreign shard is an invalid run:\n{}", describe(&o));
    let reasons = json(&merged.join("foreign/results.json"))["outcome"]["reasons"].to_string();
    assert!(reasons.contains("is foreign: shard 2/2 of run `b`"), "{reasons}");
    assert!(reasons.contains("shard 2/2 of run `a` is missing"), "{reasons}");
    let counts: BTreeMap<String, usize> = server.paths().into_iter().fold(BTreeMap::new(), |mut m, p| {
        *m.entry(p).or_default() += 1;
        m
    });
    assert!(counts.len() >= 100);
}

#[test]
fn a_late_shard_is_flagged_and_its_merge_is_invalid() {
    let server = Counter::start();
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(dir.path(), "late", server.port, "{ closed: { connections: 1, requests: 20 } }");
    let out = dir.path().join("out");
    // Started 2 s after the planned start.
    let o = shard(&spec, "1/1", "l", &at(-2.0), &out).wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    assert!(text(&o.stderr).contains("late"), "the shard says it is late:\n{}", describe(&o));
    let file = out.join("late/shard-1-of-1.json");
    let shard_info = json(&file)["shard"].clone();
    assert_eq!(shard_info["late"], true, "{shard_info}");
    assert!(shard_info["start_skew_ms"].as_f64().unwrap() >= 2000.0, "{shard_info}");
    let merged = dir.path().join("merged");
    let o = loadgate(&["merge", file.to_str().unwrap(), "--out", merged.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(4), "{}", describe(&o));
}

#[test]
fn shard_flags_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(dir.path(), "flags", 9, "{ closed: { connections: 1, requests: 1 } }");
    let s = spec.to_str().unwrap();
    // --shard-count without JOB_COMPLETION_INDEX.
    let o = loadgate(&["run", s, "--shard-count", "4"]);
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    assert!(text(&o.stderr).contains("JOB_COMPLETION_INDEX"), "{}", describe(&o));
    let o = loadgate(&["run", s, "--shard", "5/4"]);
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    let o = loadgate(&["plan", s, "--shard", "2/3"]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    assert!(text(&o.stdout).contains("shard 2/3"), "{}", describe(&o));
    let o = command(&["run", s, "--shard-count", "4", "--start-at", "not a time"])
        .env("JOB_COMPLETION_INDEX", "1")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    assert!(text(&o.stderr).contains("--start-at"), "{}", describe(&o));
}

fn pid_alive(pid: u32) -> bool {
    // A zombie is dead for our purposes.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| s.rsplit(')').next().is_some_and(|r| !r.trim_start().starts_with('Z')))
        .unwrap_or(false)
}

/// The processes whose parent is `pid`.
fn children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).into_iter().flatten().flatten() {
        let list = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
        out.extend(list.split_whitespace().filter_map(|p| p.parse::<u32>().ok()));
    }
    out
}

#[test]
fn ctrl_c_stops_every_local_shard_and_the_run_is_incomplete() {
    let server = Counter::start();
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(dir.path(), "stopped", server.port, "{ open: { rate: 100/s, connections: 2, duration: 60s } }");
    let out = dir.path().join("out");
    let parent = command(&["run", spec.to_str().unwrap(), "--shards", "2", "--out", out.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for the load to flow, and note the shard processes (the launcher's children and theirs).
    let mut shards = Vec::new();
    for _ in 0..200 {
        std::thread::sleep(Duration::from_millis(50));
        shards = children(parent.id()).into_iter().flat_map(|c| std::iter::once(c).chain(children(c))).collect();
        if server.paths().len() > 50 {
            break;
        }
    }
    assert!(server.paths().len() > 50, "the shards sent load");
    let sent = std::process::Command::new("kill").arg("-INT").arg(parent.id().to_string()).status().unwrap();
    assert!(sent.success());
    let o = parent.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(3), "an interrupted sharded run is incomplete:\n{}", describe(&o));
    std::thread::sleep(Duration::from_millis(300));
    let alive: Vec<u32> = shards.iter().copied().filter(|p| pid_alive(*p)).collect();
    assert!(alive.is_empty(), "processes outlived the run: {alive:?}");
    let results = json(&out.join("stopped/results.json"));
    assert_eq!(results["shards"].as_array().map(Vec::len), Some(2), "each shard wrote what it had");
}
